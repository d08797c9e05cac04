"""The seam between a tree step and where its sweeps run: the :class:`Sweeper` every backend is (``CPUSweeper`` in
:mod:`.cpu`, ``GPUSweeper`` in :mod:`.gpu`), what a sweeper may read of its step (:class:`SweptStep`) and what one
draw gives back (:class:`Draw`).

The step chooses its sweeper once, when it is built, and keeps everything PyMC sees: the stats of a draw are made by
the step from the :class:`Draw`, and whether its value is still its trees' is the step's to know (a sweeper's
:meth:`~Sweeper.restore` and :meth:`~Sweeper.arrived` say when the chain started again). As
:class:`~pymc_treesamplers.routes.likelihood.WorkingModel` is what a step sees of a likelihood, this is what it sees
of a backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..engine import SplitData, TreePrior
from ..model.binning import SplitColumns
from .output import Output, OutputDraw


@dataclass
class Draw:
    """One sweep of every output of the variable: each output's :class:`~.output.OutputDraw`, in order, and their
    forests in the stored format (one per output, comma-separated). The step's value ``f`` holds the new fit."""

    outputs: list[OutputDraw]
    forest: str


class SweptStep(Protocol):
    """What a sweeper reads of its step: the variable's outputs and value, the chain's generator, the options, the
    split data and the stored format's tables, and the sampler's hooks."""

    outputs: list[Output]
    f: np.ndarray  # the BART value at the training rows, (1, n) or (k, n) or a basis's (d, n) coefficients
    rng: np.random.Generator
    threads: int
    var_name: str
    m: int
    p: int
    k: int
    columns: SplitColumns
    thr_table: np.ndarray
    split_weights: Any  # the Dirichlet split weights' state, or None
    lines: np.ndarray | None
    scale: Any  # the noise scale updated between the trees (steps/scale_in_sweep.py), or None

    @property
    def data(self) -> SplitData: ...

    @property
    def prior(self) -> TreePrior: ...

    def output_values(self) -> list[tuple[Output, np.ndarray]]: ...

    def new_scratch(self, codes: np.ndarray, m: int) -> Any: ...

    def sampler_stats(self, scratch: Any) -> dict: ...


class Sweeper(Protocol):
    """Where a step's sweeps run (module docstring).

    ``compile(step)``: compile (or load) what the first draw runs; ``start(step)``: a new chain, its single-leaf
    trees' fit in ``step.f``; ``arrived(step)``: the step was unpickled in a new process, True when its chain
    started again there; ``trees(step)``: the forests a sampling state holds (None: not kept, or none swept);
    ``restore(step, forests)``: continue from a sampling state's forests (None: start again), True when the chain
    started again; ``draw(step, warm)``: one sweep of every output (``warm``: grow-from-root), the new fit in
    ``step.f``.
    """

    def compile(self, step: SweptStep) -> None: ...

    def start(self, step: SweptStep) -> None: ...

    def arrived(self, step: SweptStep) -> bool: ...

    def trees(self, step: SweptStep) -> list | None: ...

    def restore(self, step: SweptStep, forests: list | None) -> bool: ...

    def draw(self, step: SweptStep, warm: bool) -> Draw: ...
