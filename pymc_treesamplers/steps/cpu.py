"""``backend="cpu"``, every tree step's default sweeper: the engine's chains, one per output, swept on this
machine's cores. The GPU's sweeper (:class:`~.gpu.DeviceSweep`) has the same methods."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..engine.splitprior import update_split_weights
from .compiling import compile_sweeps

if TYPE_CHECKING:
    from .base import BaseTreeStep


class CPUSweeper:
    """``backend="cpu"``: the engine's chains, one per output, swept on this machine's cores."""

    def compile(self, step: BaseTreeStep) -> None:
        """Compile (or load from numba's cache) the step's sweeps before its first draw."""
        compile_sweeps(step)

    def start(self, step: BaseTreeStep) -> None:
        """Single-leaf trees for every output (in the row buffers the chains already have) and their fit."""
        for out, f in step.output_values():
            out.chain.start()
            out.refresh(f)

    def arrived(self, step: BaseTreeStep) -> None:
        """Nothing to do in a new process: each chain pickles its forest, or starts again if it had not swept."""

    def trees(self, step: BaseTreeStep) -> list | None:
        chains = [out.chain for out in step.outputs]
        return None if all(c.unswept for c in chains) else [c.forest for c in chains]

    def restore(self, step: BaseTreeStep, forests: list | None) -> None:
        if forests is None:
            step._use_split_weights()
            self.start(step)
            step.f_is_current = False
        else:
            for out, forest in zip(step.outputs, forests, strict=True):
                out.chain.restore(forest)
                if out.term is not None:  # a basis's term, which the restored value (the coefficients) implies
                    out.chain.fit(out.term)

    def draw(self, step: BaseTreeStep, warm: bool) -> tuple[dict, np.ndarray, np.ndarray]:
        """One sweep of every output in turn: the draw's stats, which trees changed, the likelihood correction's
        (proposals, acceptances)."""
        if step.split_weights is not None:
            step._use_split_weights()  # cheap (p numbers); a restored state brings its own
        per_output, accepted, mh_counts = [], [], np.zeros(2, dtype=np.int64)
        depth = leaves = 0.0
        split_counts = np.zeros(step.data.codes.shape[0], dtype=np.int64)
        counts = np.zeros_like(split_counts)
        for out, f in step.output_values():
            chain = out.chain
            if out.view is not None:
                out.view.set_others(step.f)
            pseudo = out.working.sweep_input(out.working_value(f), step.rng, step.threads)
            failed = chain.sweep(step.rng, pseudo, warm=warm, threads=step.threads)
            if failed >= 0:
                raise RuntimeError(step._failure(failed))
            if out.corrected:
                accepted.append(pseudo.counts[1] / max(pseudo.counts[0], 1))
                mh_counts += pseudo.counts
            out.refresh(f, step.threads)
            d, nl = chain.summary(counts)
            depth, leaves = depth + d / step.k, leaves + nl / step.k
            split_counts += counts
            # a warm-start sweep ran no sampler update: its own stats are NaN for that draw
            per_output.append({k: np.nan for k in step._extra_stats} if warm else step._sampler_stats())
        chains = [out.chain for out in step.outputs]
        if step.split_weights is not None:
            update_split_weights(step.rng, step.split_weights, step.data, [c.forest.arrays() for c in chains],
                                 split_counts, chains[0].workspace.tree.order)
        changed = np.concatenate([c.changed for c in chains])
        values = {
            "tree_depth": depth,
            "n_leaves": leaves,
            "accept": float(changed.mean()),
            # per covariate (a covariate's two split columns, with missing values, count together)
            "split_counts": np.bincount(step.columns.source, split_counts, minlength=step.p).astype(np.int64),
            # one encoded forest per output, comma-separated (not in the base64 alphabet)
            "forest": ",".join(c.encode(step.thr_table, step.columns.trace_var, step.p) for c in chains),
            "warm": warm,
            **{name: float(np.mean([s[name] for s in per_output])) for name in per_output[0]},
            **({"mh_accept": float(np.mean(accepted))} if accepted else {}),
            **(_split_weight_stats(step.split_weights) if step.split_weights is not None else {}),
            **({"lines": step.lines} if step.lines is not None else {}),
        }
        return values, changed, mh_counts


def _split_weight_stats(sw) -> dict:
    return {"split_weights": np.exp(sw.logs), "split_concentration": float(sw.conc[0])}
