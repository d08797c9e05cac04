"""Metropolis-Hastings tree steps: grow/prune only, and the full CGM move set."""

from __future__ import annotations

import numpy as np

from ..kernels.sweep import KIND_MH
from .base import BaseTreeStep


class GrowPruneStep(BaseTreeStep):
    """Grow/prune Metropolis-Hastings on every tree per draw (the move set of BART, dbarts, stochtree).

    Exact, but it cannot change a split without first pruning it away, which can take
    exponentially long when the data support the split (prefer :class:`CGMStep`).

    >>> # idata = pm.sample(step=[pmt.GrowPruneStep([mu])])
    """

    name = "growprune"
    _kind = KIND_MH

    def _configure(self, kwargs: dict) -> None:
        self._probs = np.array([0.5, 0.5, 0.0, 0.0])


class CGMStep(BaseTreeStep):
    """Chipman-George-McCulloch Metropolis-Hastings: grow, prune, change and swap moves.

    ``move_probs=(grow, prune, change, swap)`` defaults to (0.25, 0.25, 0.40, 0.10); grow and
    prune must be positive (they are each other's reverse), and the four must sum to 1.

    >>> # idata = pm.sample(step=[pmt.CGMStep([mu], move_probs=(0.3, 0.3, 0.3, 0.1))])
    """

    name = "cgm"
    _kind = KIND_MH

    def _configure(self, kwargs: dict) -> None:
        probs = kwargs.pop("move_probs", (0.25, 0.25, 0.40, 0.10))
        try:
            probs = np.asarray(probs, dtype=float)
        except (TypeError, ValueError) as err:
            raise TypeError(f"move_probs must be four numbers, got {probs!r}") from err
        if probs.shape != (4,) or not np.isfinite(probs).all() or (probs < 0).any():
            raise ValueError(f"move_probs must be four non-negative numbers (grow, prune, change, swap), got {probs}")
        if probs[0] <= 0 or probs[1] <= 0:
            raise ValueError("move_probs: grow and prune probabilities must both be > 0")
        if abs(probs.sum() - 1.0) > 1e-9:
            raise ValueError(f"move_probs must sum to 1, got {probs.sum()}")
        self._probs = probs
