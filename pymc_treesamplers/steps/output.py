"""One output of a tree step's BART variable: its working model and engine chain, and its own sweep.

A BART vector has one output; ``shape=(k, n)`` has k, each updated given the others' current values; a BART on a
basis of several columns has one, whose value rows are its coefficients. :meth:`Output.sweep` is one sweep of
that output's trees, and :class:`OutputDraw` what it gives back to the step, which makes the draw's stats of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine import Chain, TreePrior
from ..routes.likelihood import OutputView, WorkingModel
from ..routes.reading import BasisView
from .scale_in_sweep import ScaleInSweep


class SweepFailed(RuntimeError):
    """The update of tree ``tree`` could not finish (Particle Gibbs past its ``max_stages``): the step says why
    in its own words."""

    def __init__(self, tree: int):
        super().__init__(f"the update of tree {tree} failed")
        self.tree = tree


@dataclass
class OutputDraw:
    """What one sweep of one output gives back: which of its trees changed (m,), their mean depth and number of
    leaves, the splits per split column, the likelihood correction's ``(proposals, acceptances)`` (None on the
    exact Gaussian route) and the sampler's own stats of the sweep (empty for a warm start)."""

    changed: np.ndarray
    depth: float
    leaves: float
    split_counts: np.ndarray
    mh_counts: np.ndarray | None = None
    sampler: dict | None = None


@dataclass
class Output:
    """What a step knows of one output of its BART variable: the working model of the likelihood in that output
    (given the others), its chain (tree prior with the leaf prior on the output's scale, forest) and, for a
    variable with several outputs, the view that feeds the others' current values to the working model."""

    working: WorkingModel
    chain: Chain
    view: OutputView | BasisView | None
    # a BART on a basis of several columns: its term (n,), what the working model reads; the step's value rows
    # are then its coefficients (d, n)
    term: np.ndarray | None = None

    def refresh(self, value: np.ndarray, threads: int = 1) -> None:
        """After a start or a sweep: this output's rows of the step's value (``value``) from its chain, the fit
        of its trees or, on a basis, their coefficients (and the term)."""
        if self.term is None:
            self.chain.fit(value, threads)
        else:
            self.chain.fit(self.term)
            self.chain.coefficients(value)

    def working_value(self, value: np.ndarray) -> np.ndarray:
        """What the working model reads at this output's rows ``value``: those rows, or a basis's term."""
        return value if self.term is None else self.term

    def sweep(self, rng: np.random.Generator, value: np.ndarray, whole: np.ndarray, threads: int, warm: bool,
              sampler_stats: Callable[[Any], dict], scale: ScaleInSweep | None = None) -> OutputDraw:
        """One sweep of this output's trees at its rows ``value`` of the step's whole value ``whole`` (which the
        view reads the other outputs from), by the sampler's update or, ``warm``, grow-from-root; ``value`` is
        then the new fit. ``sampler_stats`` reads the sampler's scratch record right after the sweep (the
        outputs share one). ``scale``: the noise scale, updated after each of its groups of trees. Raises
        :class:`SweepFailed` when a tree's update failed."""
        if self.view is not None:
            self.view.set_others(whole)
        pseudo = self.working.sweep_input(self.working_value(value), rng, threads)
        if scale is not None:  # its weights follow the scale's updates, in an array of this sweep's own
            pseudo = pseudo._replace(w=np.array(pseudo.w, dtype=np.float64))
        for trees in [None] if scale is None else scale.groups:
            failed = self.chain.sweep(rng, pseudo, warm=warm, threads=threads, trees=trees)
            if failed >= 0:
                raise SweepFailed(failed)
            if scale is not None:
                scale.after(rng, pseudo)
        self.refresh(value, threads)
        counts = np.zeros(self.chain.data.codes.shape[0], dtype=np.int64)
        depth, leaves = self.chain.summary(counts)
        return OutputDraw(self.chain.changed.copy(), depth, leaves, counts,
                          np.array(pseudo.counts, dtype=np.int64) if self.corrected else None,
                          {} if warm else sampler_stats(self.chain.workspace.scratch(self.chain.data.codes)))

    @property
    def prior(self) -> TreePrior:
        return self.chain.prior

    @property
    def corrected(self) -> bool:
        """Whether the tree updates need the Metropolis-Hastings correction (not the exact Gaussian
        pseudo-data of a Gaussian likelihood or of an augmentation)."""
        return self.working.corrected
