"""What a tree step carries from draw to draw besides its trees: PyMC's sampling state of a tree step
(:class:`TreeStepState`) and the counts behind the warning of a chain whose trees cannot move (:class:`Watch`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pymc.stats.convergence import SamplerWarning, WarningType
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state

from ..results.diagnostics import frozen_message


@dataclass_state
class TreeStepState(StepMethodState):
    """Sampling state of a tree step: the fits of the outputs at the training rows (``(k, n)``),
    whether those are the variable's current value (False right after a chain starts), the tuning
    flag, the split weights when they have a Dirichlet prior (else None), and the forest of each output
    (None at a chain's start, before any sweep: the single-leaf trees, rebuilt when the state is set).

    PyMC takes a deep copy of this state before its chains and sets it again at each chain's start:
    a forest holds its rows' order per tree (``4 m n`` bytes: 8 GB at 10^7 rows and 200 trees), which
    a fresh chain does not need copied. ``forests`` comes after ``split_weights``: single-leaf roots
    cache their available split weight, so the weights are restored first. ``watch``: the counts behind
    the warning of a chain that cannot move (:class:`Watch`). ``scale_tuning``: the slice width of the noise
    scale the step updates between its trees (``sigma_every``; else None)."""

    f: np.ndarray
    f_is_current: bool
    tune: bool
    split_weights: Any = None
    trees: list | None = None
    watch: Any = None
    scale_tuning: Any = None
    var_name: str = field(metadata={"frozen": True})


@dataclass
class Watch:
    """A chain's counts for the warning of trees that cannot move: draws so far, draws in the chain (0: not
    known yet), and after tuning the tree updates, the trees they changed, and the likelihood correction's
    proposals and acceptances.

    >>> w = Watch(length=2)
    >>> w.count("mu", "CGMStep", tune=False, changed=np.zeros(10, bool), mh_counts=np.zeros(2, np.int64))
    >>> w.count("mu", "CGMStep", tune=False, changed=np.zeros(10, bool), mh_counts=np.zeros(2, np.int64)).kind.name
    'BAD_ACCEPTANCE'
    """

    length: int = 0
    draw: int = 0
    updates: int = 0
    changed: int = 0
    mh_proposed: int = 0
    mh_accepted: int = 0

    def count(self, var_name: str, step_name: str, tune: bool, changed: np.ndarray,
              mh_counts: np.ndarray) -> SamplerWarning | None:
        """Count one draw's tree updates (``changed``: which trees changed) after tuning; at the chain's last
        draw, a warning if its trees could not move
        (:func:`pymc_treesamplers.results.diagnostics.frozen_message`), which PyMC logs as it logs divergences."""
        if not tune:
            self.updates += changed.size
            self.changed += int(changed.sum())
            self.mh_proposed += int(mh_counts[0])
            self.mh_accepted += int(mh_counts[1])
        self.draw += 1
        if self.length == 0 or self.draw != self.length or self.updates == 0:
            return None
        mh = self.mh_accepted / self.mh_proposed if self.mh_proposed > 0 else None
        message = frozen_message(var_name, step_name, self.changed / self.updates, mh)
        return None if message is None else SamplerWarning(WarningType.BAD_ACCEPTANCE, message, "warn")
