"""``backend="cpu"``, every tree step's default :class:`~.sweeper.Sweeper`: the engine's chains, one per output, swept
on this machine's cores, and the Dirichlet split weights' update between draws."""

from __future__ import annotations

import numpy as np

from ..engine import update_split_weights
from .compiling import compile_sweeps
from .sweeper import Draw, SweptStep


class CPUSweeper:
    """``backend="cpu"``: the engine's chains, one per output, swept on this machine's cores."""

    def compile(self, step: SweptStep) -> None:
        """Compile (or load from numba's cache) the step's sweeps before its first draw."""
        compile_sweeps(step)

    def start(self, step: SweptStep) -> None:
        """Single-leaf trees for every output (in the row buffers the chains already have) and their fit."""
        for out, f in step.output_values():
            out.chain.start()
            out.refresh(f)

    def arrived(self, step: SweptStep) -> bool:
        """Nothing to do in a new process: each chain pickles its forest, or starts again if it had not swept."""
        return False

    def trees(self, step: SweptStep) -> list | None:
        chains = [out.chain for out in step.outputs]
        return None if all(c.unswept for c in chains) else [c.forest for c in chains]

    def restore(self, step: SweptStep, forests: list | None) -> bool:
        if forests is None:
            self.start(step)
            return True
        for out, forest in zip(step.outputs, forests, strict=True):
            out.chain.restore(forest)
            if out.term is not None:  # a basis's term, which the restored value (the coefficients) implies
                out.chain.fit(out.term)
        return False

    def draw(self, step: SweptStep, warm: bool) -> Draw:
        """One sweep of every output in turn, each given the others' current values; then, with a Dirichlet
        split prior, the split weights given the new trees."""
        outputs = [out.sweep(step.rng, f, step.f, step.threads, warm, step.sampler_stats, step.scale)
                   for out, f in step.output_values()]
        chains = [out.chain for out in step.outputs]
        if step.split_weights is not None:
            split_counts = np.zeros(step.data.codes.shape[0], dtype=np.int64)
            for one in outputs:
                split_counts += one.split_counts
            update_split_weights(step.rng, step.split_weights, step.data, [c.forest.arrays() for c in chains],
                                 split_counts, chains[0].workspace.tree.order)
        return Draw(outputs, self.encode(step))

    @staticmethod
    def encode(step: SweptStep) -> str:
        """The step's forests in the stored format, its outputs' comma-separated."""
        return ",".join(out.chain.encode(step.thr_table, step.columns.trace_var, step.p) for out in step.outputs)
