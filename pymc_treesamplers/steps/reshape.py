"""The reshape tree step: many proposals per tree and sweep from a mixture of local and reshaping moves."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..engine import KIND_NAMES, new_reshape_scratch
from .base import BaseTreeStep
from .options import tree_step

DEFAULT_PROBS = (0.2, 0.2, 0.25, 0.1, 0.05, 0.1, 0.1)
# n_moves=None: about this many proposals per sweep in all, at least one per tree (1 for m >= 200)
MOVES_PER_SWEEP = 100


@tree_step
class ReshapeStep(BaseTreeStep):
    """Metropolis-Hastings with moves that reshape a tree, several proposals per tree and sweep.

    Each proposal is drawn from a mixture of CGM's local moves (grow, prune, change, swap) and
    three moves that change a tree's shape where local moves cannot without passing through trees
    of far lower posterior:

    * **restructure** proposes a new tree with the same leaves (the same splits in another order,
      another variable or cut that separates the leaves alike; Wu, Tjelmeland & West 2007);
    * **splice** deletes an internal node keeping one of its subtrees (the other side's rows run
      down the kept subtree), or inserts a node above any node with a fresh subtree from the prior;
    * **reroute** changes a rule and lets the rows below follow, removing the splits the new rule
      leaves one-sided, or (its reverse) inserting one-sided splits.

    Every move is exact (reversible with respect to the tree's conditional posterior), so the
    step is exact for any ``move_probs`` and ``n_moves``.

    Parameters
    ----------
    vars : list of one BART variable, optional
        Defaults to the model's BART variable.
    n_moves : int, optional
        Proposals per tree and sweep; by default ``max(1, round(100 / m))`` (100 for a single
        tree, 2 for ``m = 50``, 1 from ``m = 200``): a single deep tree needs many moves per sweep
        to cross between its modes, while a sum of many small trees gains little from more moves
        per tree per sweep (docs/reshape.md).
    move_probs : sequence of 7 floats, default (0.2, 0.2, 0.25, 0.1, 0.05, 0.1, 0.1)
        Probabilities of grow, prune, change, swap, restructure, splice and reroute proposals;
        grow and prune must be positive, the seven must sum to 1. A single-leaf tree always
        proposes a grow.
    threads, route, warm_start, sigma_every, model, initial_point, compile_kwargs, blocked, rng : keyword options
        The options every tree step shares (:class:`~pymc_treesamplers.steps.options.TreeStepOptions`).

    Notes
    -----
    Extra per-draw stat: ``<var>_moves_accept``, the share of proposals accepted in the sweep.

    Examples
    --------
    >>> # idata = pm.sample(step=[pmt.ReshapeStep([mu])])
    """

    name = "reshape"
    _extra_stats = {"moves_accept": np.float64}

    def __init__(
        self,
        vars=None,
        *,
        n_moves: int | None = None,
        move_probs: Sequence[float] = DEFAULT_PROBS,
        **shared,
    ):
        if n_moves is not None and (isinstance(n_moves, bool) or not isinstance(n_moves, (int, np.integer))
                                    or n_moves < 1):
            raise ValueError(f"n_moves must be an integer >= 1 or None, got {n_moves!r}")
        try:
            probs = np.asarray(move_probs, dtype=float)
        except (TypeError, ValueError) as err:
            raise TypeError(f"move_probs must be {len(KIND_NAMES)} numbers, got {move_probs!r}") from err
        if probs.shape != (len(KIND_NAMES),) or not np.isfinite(probs).all() or (probs < 0).any():
            raise ValueError(f"move_probs must be {len(KIND_NAMES)} non-negative numbers ({', '.join(KIND_NAMES)}), "
                             f"got {move_probs!r}")
        if probs[0] <= 0 or probs[1] <= 0:
            raise ValueError("move_probs: grow and prune probabilities must both be > 0")
        if abs(probs.sum() - 1.0) > 1e-9:
            raise ValueError(f"move_probs must sum to 1, got {probs.sum()}")
        self.move_probs = probs
        self._n_moves = n_moves
        super().__init__(vars, **shared)

    @property
    def n_moves(self) -> int:
        """Proposals per tree and sweep (the ``n_moves`` option, or its default for this ``m``)."""
        if self._n_moves is not None:
            return int(self._n_moves)
        return max(1, round(MOVES_PER_SWEEP / self.m))

    def new_scratch(self, codes, m):
        return new_reshape_scratch(self.move_probs, self.n_moves, codes.shape[0], codes.shape[1])

    def sampler_stats(self, sampler) -> dict:
        proposed = int(sampler.proposed.sum())
        out = {"moves_accept": float(sampler.accepted.sum()) / max(proposed, 1)}
        sampler.proposed[:] = 0
        sampler.accepted[:] = 0
        return out
