"""The noise scale updated between a sweep's trees (a tree step's ``sigma_every``): :class:`ScaleInSweep`.

On real data at m = 200 the noise scale σ and whether the forest fits a few outlying rows form one slow ridge
(docs/reports/mechanisms.md): once a sweep, σ is drawn given all m trees, and each tree is updated given a σ that
the other m - 1 trees have already settled. Updating σ after every k trees is another exact Gibbs scan over the
same blocks (each tree given σ and the other trees, σ given all trees), with σ closer to where the trees are.

Both updates run on the Gaussian pseudo-data ``r_i ~ N(g(x_i), 1 / w_i)`` the sweep already holds. Under a Normal
likelihood ``y_i ~ N(a_i + c_i f_i, sigma)``, ``w_i = c_i^2 / sigma^2``, so the likelihood's residual sum of squares
is ``sigma^2 sum_i w_i r_i^2`` (one O(n) pass) and a new σ rescales every weight by ``(sigma_old / sigma_new)^2``.
σ's update is the conjugate draw of :class:`~pymc_treesamplers.NormalScaleGibbs` under an InverseGamma prior on σ²,
else an independence Metropolis-Hastings step whose proposal is the likelihood's own shape in σ² (one compiled call,
where the slice update of the once-a-sweep step takes ~8, measured at 140 µs an update: at m / k = 40 updates a
sweep that was 8x the sweep). The step checks both identities numerically on the model when it is built: a
likelihood that holds other terms of the BART value, or whose weights are not proportional to ``1 / sigma^2``, is
refused by name.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random import basic as rvs

from ..engine import Pseudo
from .scale import NormalScaleGibbs

__all__ = ["ScaleInSweep"]


class ScaleInSweep:
    """σ's updates inside one tree step's sweep, after every ``every`` of its ``m`` trees (module docstring).

    ``updater``: the :class:`~pymc_treesamplers.NormalScaleGibbs` of the scale variable (its update given a
    residual sum of squares, its tuned slice width); ``value_var``: that variable's value variable, which the tree
    step then owns; ``n``: the likelihood's rows.

    >>> ScaleInSweep.groups_of(5, 2)
    [(0, 2), (2, 4), (4, 5)]
    """

    def __init__(self, updater: NormalScaleGibbs, value_var, every: int, m: int, n: int):
        self.updater, self.value_var, self.every, self.n = updater, value_var, every, n
        self.groups = self.groups_of(m, every)
        self.x = self.sigma = self.h = float("nan")

    @staticmethod
    def groups_of(m: int, every: int) -> list[tuple[int, int]]:
        """The ranges ``(start, stop)`` of trees swept between two of σ's updates."""
        return [(a, min(a + every, m)) for a in range(0, m, every)]

    @classmethod
    def for_step(cls, model: pm.Model, working, shared: dict, initial_point: dict, bart_value, every: int, m: int,
                 compile_kwargs=None) -> ScaleInSweep:
        """The scale variable of the one Normal likelihood of the BART value behind ``working`` (the step's
        Gaussian working model), checked as the module docstring says; a ``ValueError`` naming ``sigma_every``
        and what stands in the way otherwise."""
        def refuse(why: str) -> ValueError:
            return ValueError(f"sigma_every={every}: {why}; use sigma_every=0 (the default), which leaves the scale "
                              "to its own step")

        names = getattr(working, "observed_names", None)
        if getattr(working, "corrected", True) or not getattr(working, "quadratic", False) or names is None:
            raise refuse("the likelihood is not Gaussian in the BART value, so it has no noise scale to update here")
        if len(names) != 1 or working.n_potentials:
            raise refuse(f"the BART value enters {names}, not one Normal likelihood")
        obs = next(rv for rv in model.observed_RVs if rv.name == names[0])
        if not isinstance(obs.owner.op, rvs.NormalRV):
            raise refuse(f"the likelihood {obs.name!r} is not a Normal")
        scale_graph = obs.owner.op.dist_params(obs.owner)[1]
        free = [rv for rv in model.free_RVs if rv in set(ancestors([scale_graph]))]
        # the scale's own variable, not the parents of its prior (a hierarchy, refused below by name)
        free = [rv for rv in free if not any(rv in set(ancestors(o.owner.op.dist_params(o.owner))) for o in free)]
        if len(free) != 1:
            raise refuse(f"the scale of {obs.name!r} depends on {[rv.name for rv in free]}, not on one free variable")
        rv = free[0]
        parents = set(ancestors(rv.owner.op.dist_params(rv.owner))) & set(model.free_RVs)
        if parents:
            raise refuse(f"the prior of {rv.name!r} has random parents {sorted(v.name for v in parents)}")
        try:
            updater = NormalScaleGibbs([rv], model=model, initial_point=initial_point, compile_kwargs=compile_kwargs)
        except ValueError as err:
            raise refuse(str(err)) from None
        value_var = model.rvs_to_values[rv]
        scale = cls(updater, value_var, every, m, 0)
        scale._check(working, shared, initial_point, bart_value)
        return scale

    def _check(self, working, shared: dict, initial_point: dict, bart_value) -> None:
        """The pseudo-data's residual sum of squares is the likelihood's, and its weights scale as ``1/sigma^2``:
        at the initial point and at another value of the scale variable."""
        f0 = np.asarray(initial_point[bart_value.name], dtype=float)
        rss, n = self.updater.residual_sum_of_squares()
        self.n = n
        x0 = np.asarray(initial_point[self.value_var.name])
        store = shared[self.value_var]
        weighted = []
        try:
            for x in (x0, x0 + 0.5):
                store.set_value(np.asarray(x, dtype=x0.dtype))
                pseudo = working.sweep_input(f0, np.random.default_rng(0))
                sigma = self.updater.scale_of(float(x))
                weighted.append((pseudo, sigma))
        finally:
            store.set_value(x0)
        (p0, s0), (p1, s1) = weighted
        if p0.r.size != n or not np.isclose(s0**2 * self._weighted_sum(p0), rss, rtol=1e-8, atol=1e-12 * (1 + rss)):
            raise ValueError(f"sigma_every={self.every}: the residual sum of squares of {self.updater.observed_name!r} "
                             "is not the one of the BART value's pseudo-data (other terms of the likelihood depend "
                             "on it); use sigma_every=0")
        if not np.allclose(np.broadcast_to(p0.w, p0.r.shape) * s0**2, np.broadcast_to(p1.w, p1.r.shape) * s1**2,
                           rtol=1e-8):
            raise ValueError(f"sigma_every={self.every}: the weights of the BART value's pseudo-data are not "
                             f"proportional to 1 / sigma^2 of {self.updater.observed_name!r}; use sigma_every=0")

    @staticmethod
    def _weighted_sum(pseudo: Pseudo) -> float:
        r = pseudo.r
        return float(pseudo.w[0] * (r @ r)) if pseudo.w.size == 1 else float(pseudo.w @ (r * r))

    def start(self, x: float, tune: bool) -> None:
        """A sweep starts with the scale variable at ``x`` (its unconstrained value in the point)."""
        self.x, self.sigma = x, self.updater.scale_of(x)
        self.h = float("nan") if self.updater.conjugate else self.updater.log_variance_prior(x)
        self.updater.tune = tune

    def after(self, rng: np.random.Generator, pseudo: Pseudo) -> None:
        """σ's update given the trees so far (the residual ``pseudo.r``), then the weights rescaled in place to
        the new σ."""
        rss = self.sigma**2 * self._weighted_sum(pseudo)
        if self.updater.conjugate:
            x = self.updater.update(rng, self.x, self.n, rss)
            h, sigma = self.h, self.updater.scale_of(x)
        else:
            x, h, sigma = self.updater.independence_update(rng, self.x, self.h, self.sigma, self.n, rss)
        if sigma != self.sigma:
            pseudo.w[:] *= (self.sigma / sigma) ** 2
        self.x, self.sigma, self.h = x, sigma, h

    @property
    def tuning(self) -> tuple[float, int]:
        """The slice width and the tuning draws behind it (the tree step's sampling state)."""
        return self.updater.width, self.updater.n_tuned

    @tuning.setter
    def tuning(self, value: tuple[float, int]) -> None:
        self.updater.width, self.updater.n_tuned = float(value[0]), int(value[1])
