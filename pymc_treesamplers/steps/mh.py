"""Metropolis-Hastings tree steps: grow/prune only, and the full CGM move set."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..engine.updates.mh import new_mh_scratch
from .base import BaseTreeStep


class _MHStep(BaseTreeStep):
    move_probs: np.ndarray

    def _new_scratch(self, codes, m):
        return new_mh_scratch(self.move_probs, codes.shape[0], codes.shape[1], m)


class GrowPruneStep(_MHStep):
    """Grow/prune Metropolis-Hastings on every tree per draw (the move set of BART, dbarts, stochtree).

    Exact, but it cannot change a split without first pruning it away, which can take
    exponentially long when the data support the split (prefer :class:`CGMStep`).

    Parameters
    ----------
    vars : list of one BART variable, optional
        Defaults to the model's BART variable.
    threads : int, default 1
        Threads for the passes over rows of a long data set (docs/scale.md); draws are the same for
        any value. Keep ``threads`` x chains run in parallel within the machine's cores.
    route : {"auto", "expand"}, default "auto"
        How a likelihood that is not Gaussian in the BART value is handled (docs/likelihoods.md).
        ``"auto"``: exact data augmentation for Bernoulli/Binomial (logit: Polya-Gamma, probit: Albert-Chib)
        and Student-t, exact leaf sums with Laplace leaves for Poisson, negative binomial, Gamma and a log
        sd; ``"expand"``: a Gaussian expansion at the other trees' fit, Metropolis-Hastings corrected, for
        every family. Both are exact.
    model, initial_point, compile_kwargs, blocked, rng
        As for PyMC's own step methods.

    Examples
    --------
    >>> # idata = pm.sample(step=[pmt.GrowPruneStep([mu])])
    """

    name = "growprune"

    def __init__(self, vars=None, *, threads: int = 1, route: str = "auto", model=None, initial_point=None,
                 compile_kwargs=None, blocked=False, rng=None):
        self.move_probs = np.array([0.5, 0.5, 0.0, 0.0])
        super().__init__(vars, threads=threads, route=route, model=model, initial_point=initial_point,
                         compile_kwargs=compile_kwargs, blocked=blocked, rng=rng)


class CGMStep(_MHStep):
    """Chipman-George-McCulloch Metropolis-Hastings: grow, prune, change and swap moves.

    The default step of a BART variable in ``pm.sample``.

    Parameters
    ----------
    vars : list of one BART variable, optional
        Defaults to the model's BART variable.
    move_probs : sequence of 4 floats, default (0.25, 0.25, 0.40, 0.10)
        Probabilities of proposing a grow, prune, change and swap. Grow and prune must be
        positive (they are each other's reverse); the four must sum to 1.
    threads : int, default 1
        Threads for the passes over rows of a long data set (docs/scale.md); draws are the same for
        any value. Keep ``threads`` x chains run in parallel within the machine's cores.
    route : {"auto", "expand"}, default "auto"
        How a likelihood that is not Gaussian in the BART value is handled (docs/likelihoods.md).
        ``"auto"``: exact data augmentation for Bernoulli/Binomial (logit: Polya-Gamma, probit: Albert-Chib)
        and Student-t, exact leaf sums with Laplace leaves for Poisson, negative binomial, Gamma and a log
        sd; ``"expand"``: a Gaussian expansion at the other trees' fit, Metropolis-Hastings corrected, for
        every family. Both are exact.
    model, initial_point, compile_kwargs, blocked, rng
        As for PyMC's own step methods.

    Examples
    --------
    >>> # idata = pm.sample(step=[pmt.CGMStep([mu], move_probs=(0.3, 0.3, 0.3, 0.1))])
    """

    name = "cgm"

    def __init__(
        self,
        vars=None,
        *,
        move_probs: Sequence[float] = (0.25, 0.25, 0.40, 0.10),
        model=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
        rng=None,
        threads: int = 1,
        route: str = "auto",
    ):
        try:
            probs = np.asarray(move_probs, dtype=float)
        except (TypeError, ValueError) as err:
            raise TypeError(f"move_probs must be four numbers, got {move_probs!r}") from err
        if probs.shape != (4,) or not np.isfinite(probs).all() or (probs < 0).any():
            raise ValueError(f"move_probs must be four non-negative numbers (grow, prune, change, swap), got {probs}")
        if probs[0] <= 0 or probs[1] <= 0:
            raise ValueError("move_probs: grow and prune probabilities must both be > 0")
        if abs(probs.sum() - 1.0) > 1e-9:
            raise ValueError(f"move_probs must sum to 1, got {probs.sum()}")
        self.move_probs = probs
        super().__init__(vars, threads=threads, route=route, model=model, initial_point=initial_point,
                         compile_kwargs=compile_kwargs, blocked=blocked, rng=rng)
