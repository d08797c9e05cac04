"""The noise scale of a Normal likelihood whose mean holds a BART variable, updated inside the compound step.

Given everything else, a Normal likelihood depends on its scale only through the residual sum of
squares ``RSS = sum (y - mean)^2`` and the number of rows: ``-n log sigma - RSS / (2 sigma^2)``. One
O(n) pass gives ``RSS``; the update itself is then O(1):

* ``sigma^2 ~ InverseGamma(a, b)`` with ``sigma = sqrt(sigma^2)`` in the likelihood (the Chipman et al.
  default of :func:`pymc_treesamplers.chipman_sigma2_prior`): the exact conjugate draw
  ``InverseGamma(a + n/2, b + RSS/2)``;
* any other prior on the scale (HalfNormal, HalfCauchy, Exponential on sigma, ...): a univariate slice
  sampler (Neal 2003, stepping out with the expansion budget split at random, then shrinkage) on the
  variable's unconstrained value, whose log density is the prior's (with the transform's Jacobian)
  plus the likelihood from ``RSS``.

NUTS evaluates the whole model's gradient for the same move (each leapfrog step O(n)); see
docs/likelihoods.md for the measured comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.blocking import RaveledVars
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random import basic as rvs

from ..model.bart import BARTRV

__all__ = ["NormalScaleGibbs", "slice_update"]


@dataclass_state
class NormalScaleState(StepMethodState):
    width: float
    n_tuned: int
    tune: bool


def _scale_spec(model: pm.Model, rv):
    """``(observed Normal, its mean, its sigma)`` as graphs of value variables, if ``rv`` is the scale
    (or a function of the scale) of exactly one Normal likelihood and of nothing else; else ValueError."""
    if rv not in model.free_RVs or rv.type.ndim != 0:
        raise ValueError(f"{rv.name!r} is not a scalar free variable")
    dependents = [o for o in model.observed_RVs if rv in set(ancestors([o]))]
    latent = [v for v in model.free_RVs if v is not rv and rv in set(ancestors([v]))]
    if latent:
        raise ValueError(f"{rv.name!r} is also a parameter of {[v.name for v in latent]}")
    value = model.rvs_to_values[rv]
    potentials = [p for p in model.potentials if value in set(ancestors([p])) or rv in set(ancestors([p]))]
    if potentials:  # a term of the posterior the update would not see
        raise ValueError(f"{rv.name!r} enters the potentials {[p.name for p in potentials]}")
    if len(dependents) != 1 or not isinstance(dependents[0].owner.op, rvs.NormalRV):
        raise ValueError(f"{rv.name!r} must enter exactly one Normal likelihood, not {[o.name for o in dependents]}")
    obs = dependents[0]
    mean, sigma = model.replace_rvs_by_values(list(obs.owner.op.dist_params(obs.owner)))
    if value in set(ancestors([mean])):
        raise ValueError(f"{rv.name!r} enters the mean of {obs.name!r}, not only its scale")
    return obs, mean, sigma


def _has_bart_mean(model: pm.Model, obs) -> bool:
    mean = obs.owner.op.dist_params(obs.owner)[0]
    return any(isinstance(getattr(v.owner, "op", None), BARTRV) for v in ancestors([mean]))


class NormalScaleGibbs(ArrayStepShared):
    """Update the noise scale of a Normal likelihood from its residual sum of squares (module docstring).

    Exact conjugate draw for an InverseGamma prior on ``sigma^2``; exact slice update otherwise. PyMC
    assigns it automatically when the Normal's mean contains a BART variable, the scale is one for every
    row and its prior has no random parents (:meth:`competence`).

    Parameters
    ----------
    vars : list of one scalar variable
        ``sigma`` (or ``sigma2`` with ``sigma = sqrt(sigma2)`` in the likelihood).
    width : float, default 1.0
        Initial slice width on the unconstrained scale (adapted during tuning; not used by the
        conjugate draw).
    model, initial_point, compile_kwargs, blocked, rng
        As for PyMC's own step methods.

    Examples
    --------
    >>> # a, b = pmt.chipman_sigma2_prior(X, y)
    >>> # sigma2 = pm.InverseGamma("sigma2", a, b)
    >>> # pm.Normal("y", mu, pm.math.sqrt(sigma2), observed=y)
    >>> # idata = pm.sample(step=[pmt.CGMStep([mu]), pmt.NormalScaleGibbs([sigma2])])
    """

    name = "normal_scale"
    default_blocked = False
    _state_class = NormalScaleState

    def __init__(self, vars=None, *, width: float = 1.0, model=None, initial_point=None, compile_kwargs=None,
                 blocked=False, rng=None):
        model = pm.modelcontext(model)
        value_vars = pm.util.get_value_vars_from_user_vars(vars, model) if vars is not None else []
        if len(value_vars) != 1:
            raise ValueError(f"NormalScaleGibbs updates one scalar variable per instance, got {len(value_vars)}")
        if not (np.isfinite(width) and width > 0):
            raise ValueError(f"width must be finite and > 0, got {width}")
        value = value_vars[0]
        rv = model.values_to_rvs[value]
        try:
            obs, mean, sigma = _scale_spec(model, rv)
        except ValueError as err:
            raise ValueError(f"NormalScaleGibbs cannot update {rv.name!r}: {err}") from None
        if initial_point is None:
            initial_point = model.initial_point()
        shared = pm.pytensorf.make_shared_replacements(initial_point, [value], model)
        y = model.rvs_to_values[obs]
        kw = compile_kwargs or {}
        rss = pt.sum(pt.square(pt.broadcast_to(y - mean, y.shape)))
        self._rss = pm.pytensorf.compile([], graph_replace([rss, pt.as_tensor(y).size], shared, strict=False), **kw)
        # a scale with broadcastable dimensions is one value for every row: read it once, not broadcast to n
        # rows at every slice evaluation (an O(n) pass each, ~10 per draw at 10^6 rows)
        if all(sigma.type.broadcastable):
            sig = pt.as_tensor(sigma).ravel()[:1]
        else:
            sig = pt.broadcast_to(sigma, y.shape).ravel()
        prior = model.logp(vars=[rv], jacobian=True, sum=True)
        # one call per slice evaluation: the prior's log density, the scale (as min and max over rows)
        self._terms = pm.pytensorf.compile(
            [value], graph_replace([prior, pt.min(sig), pt.max(sig)], shared, strict=False), **kw
        )
        transform = model.rvs_to_transforms.get(rv)
        s = pt.scalar("s", dtype=value.dtype)
        inputs = rv.owner.op.dist_params(rv.owner)
        # a transform takes the variable's whole node inputs (rng, size, parameters), as PyMC calls it
        fwd = s if transform is None else transform.forward(s, *rv.owner.inputs)
        bwd = value if transform is None else transform.backward(value, *rv.owner.inputs)
        fwd = model.replace_rvs_by_values([fwd])[0]
        self._forward = pm.pytensorf.compile([s], graph_replace(fwd, shared, strict=False), **kw)
        self._backward = pm.pytensorf.compile([value], graph_replace(model.replace_rvs_by_values([bwd])[0], shared,
                                                                     strict=False), **kw)
        self._graphs = (value, prior, sig, fwd, s, shared, kw)  # for the independence update, compiled on first use
        self._log_variance_prior = None
        self.var_name = rv.name
        self.observed_name = obs.name
        self._dtype = value.dtype
        # identities of the scale's graph (sigma = sqrt(variable), sigma ** power = variable) checked to rounding
        self._identity_rtol = 1e-10 if np.dtype(value.dtype).itemsize >= 8 else 1e-5
        x0 = np.asarray(initial_point[value.name], dtype=value.dtype)
        self._check_scalar_sigma(x0)
        self.conjugate = isinstance(rv.owner.op, rvs.InvGammaRV) and self._sigma_is_sqrt(x0)
        if self.conjugate:
            a, b = model.replace_rvs_by_values(list(inputs))
            self._ab = pm.pytensorf.compile([], graph_replace([a, b], shared, strict=False), **kw)
        self.width = float(width)
        self.n_tuned = 0
        self.tune = True
        self.stats_dtypes_shapes = {}
        super().__init__([value], shared, blocked=blocked, rng=rng)

    def _check_scalar_sigma(self, x0):
        for x in (x0, x0 + 0.5):
            _, lo, hi = self._terms(np.asarray(x, dtype=x0.dtype))
            if not np.isclose(lo, hi, rtol=1e-12, atol=0.0):
                raise ValueError(f"NormalScaleGibbs needs one scale for every row of the likelihood; "
                                 f"{self.var_name!r} gives scales from {lo} to {hi}")

    def _sigma_is_sqrt(self, x0) -> bool:
        for x in (x0, x0 + 0.7):
            x = np.asarray(x, dtype=x0.dtype)
            if not np.isclose(self._terms(x)[1], np.sqrt(self._backward(x)), rtol=self._identity_rtol, atol=0.0):
                return False
        return True

    @staticmethod
    def competence(var, has_grad):
        """IDEAL for the scale of a Normal likelihood whose mean holds a BART variable, under any prior PyMC
        can evaluate (the conjugate draw for ``sigma2 ~ InverseGamma`` as ``sqrt(sigma2)``, the slice update
        otherwise), when the scale is one for every row and its prior has no random parents: each update
        costs one pass over the rows, where NUTS takes an O(n) gradient per leapfrog step
        (docs/reports/likelihood-cost.md). A scale whose prior has random parents (a hierarchy) stays with NUTS,
        which moves it jointly with them."""
        try:
            model = pm.modelcontext(None)
            rv = model.values_to_rvs.get(var, var)
            obs, _, sigma = _scale_spec(model, rv)
        except (TypeError, ValueError, KeyError):
            return Competence.INCOMPATIBLE
        parents = set(ancestors(rv.owner.op.dist_params(rv.owner))) & set(model.free_RVs)
        one_scale = all(sigma.type.broadcastable)
        if parents or not one_scale or not _has_bart_mean(model, obs):
            return Competence.INCOMPATIBLE
        return Competence.IDEAL

    def _log_target(self, x, n, rss):
        prior, sigma, _ = self._terms(np.asarray(x, dtype=self._dtype))
        return float(prior) - n * np.log(sigma) - 0.5 * rss / sigma**2

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, list[dict[str, Any]]]:
        rss, n = self.residual_sum_of_squares()
        self._dtype = q0.data.dtype
        x = self.update(self.rng, float(q0.data[0]), n, rss)
        return RaveledVars(np.array([x], dtype=self._dtype), q0.point_map_info), [{}]

    def update(self, rng: np.random.Generator, x0: float, n: int, rss: float) -> float:
        """The variable's new unconstrained value from ``x0`` given the residual sum of squares ``rss`` over the
        likelihood's ``n`` rows: what :meth:`astep` does with them, and what a tree step that updates the scale
        between its trees (``sigma_every``) calls."""
        if self.conjugate:
            a, b = (float(v) for v in self._ab())
            s2 = 1.0 / rng.gamma(a + 0.5 * n, 1.0 / (b + 0.5 * rss))
            return float(self._forward(np.asarray(s2, dtype=self._dtype)))
        x, width = slice_update(rng, x0, lambda x: self._log_target(x, n, rss), self.width)
        if self.tune:  # running mean of the stepped-out interval, as PyMC's Slice tunes its width
            self.n_tuned += 1
            self.width += (width - self.width) / self.n_tuned
        return x

    def independence_update(self, rng: np.random.Generator, x0: float, h0: float, sigma0: float, n: int,
                            rss: float) -> tuple[float, float, float]:
        """An independence Metropolis-Hastings update of the variable from ``x0`` given ``rss`` over ``n`` rows,
        for a caller that updates the scale many times a sweep (``sigma_every``) and so cannot afford the slice's
        ~8 evaluations: ``sigma^2`` proposed from ``InverseGamma(n/2, rss/2)``, the likelihood's own shape in
        ``sigma^2``, so the likelihood cancels from the ratio and what is left is the prior density of
        ``log sigma^2``, ``h``, at the two points (docs/mh.md, "sigma inside the sweep"). ``h0`` and ``sigma0``:
        :meth:`log_variance_prior` and the scale at ``x0``. Returns the new value, its ``h`` and its sigma (one
        compiled call).

        Exact for any prior: the proposal is independent of ``x0`` and the ratio is
        ``pi(x') q(x) / (pi(x) q(x'))``; uniformly ergodic where ``h`` is bounded above (HalfNormal, HalfCauchy,
        Exponential, Uniform on sigma; InverseGamma on sigma^2). A scale variable that is neither sigma nor
        sigma^2 (a precision, say), or a zero ``rss``, takes :meth:`update` instead.
        """
        terms = self._log_variance_terms()
        if terms is None or not rss > 0.0:
            x = self.update(rng, x0, n, rss)
            return x, self.log_variance_prior(x), self.scale_of(x)
        from_variance, power = terms[1], terms[2]
        s2 = 1.0 / rng.gamma(0.5 * n, 2.0 / rss)
        x, h = (float(v) for v in from_variance(np.asarray(s2 ** (0.5 * power), dtype=self._dtype)))
        if np.isfinite(h) and rng.standard_exponential() > h0 - h:  # log u < h - h0
            return x, h, float(np.sqrt(s2))
        return x0, h0, sigma0

    def log_variance_prior(self, x: float) -> float:
        """The prior's log density of ``log sigma^2`` at the variable's unconstrained value ``x`` (its log density
        with the transform's Jacobian, less ``log |d log sigma^2 / dx|``)."""
        terms = self._log_variance_terms()
        return float("nan") if terms is None else float(terms[0](np.asarray(x, dtype=self._dtype)))

    def _log_variance_terms(self):
        """``(h of x, (x, h) of the variable's value, power)`` with the variable ``sigma ** power`` (1 or 2), compiled
        once; None when the variable is neither."""
        if self._log_variance_prior is None:
            self._log_variance_prior = self._compile_log_variance_terms() or ()
        return self._log_variance_prior or None

    def _compile_log_variance_terms(self):
        value, prior, sig, fwd, s, shared, kw = self._graphs
        x0 = np.zeros((), dtype=self._dtype)
        for power in (1, 2):
            if all(np.isclose(self._terms(x)[1] ** power, self._backward(x), rtol=self._identity_rtol, atol=0.0)
                   for x in (x0 - 0.3, x0 + 0.7)):
                break
        else:
            return None
        sigma = sig[0]
        h = prior - pt.log(pt.abs(2.0 * pt.grad(sigma, value) / sigma))
        h = graph_replace(h, shared, strict=False)
        of_x = pm.pytensorf.compile([value], h, **kw)
        x_of_v = graph_replace(fwd, shared, strict=False)
        from_variance = pm.pytensorf.compile([s], [x_of_v, graph_replace(h, {value: x_of_v}, strict=False)], **kw)
        return of_x, from_variance, power

    def residual_sum_of_squares(self) -> tuple[float, int]:
        """The likelihood's residual sum of squares at the current point, and its number of rows."""
        rss, n = self._rss()
        return float(rss), int(n)

    def scale_of(self, x: float) -> float:
        """The likelihood's scale sigma at the variable's unconstrained value ``x``."""
        return float(self._terms(np.asarray(x, dtype=self._dtype))[1])


def slice_update(rng: np.random.Generator, x0: float, log_density: Callable[[float], float], width: float,
                 max_steps: int = 50) -> tuple[float, float]:
    """One univariate slice-sampling update from ``x0`` (Neal 2003): stepping out by ``width`` with the budget of
    ``max_steps`` split at random between the two sides, then shrinkage. Returns the new point and the width of
    the stepped-out interval (what a tuner averages).

    >>> rng = np.random.default_rng(0)
    >>> x, draws = 0.0, []
    >>> for _ in range(4000):
    ...     x, _ = slice_update(rng, x, lambda v: -0.5 * v * v, 1.0)
    ...     draws.append(x)
    >>> round(float(np.mean(draws)), 1), round(float(np.std(draws)), 1)
    (0.0, 1.0)
    """
    level = log_density(x0) - rng.standard_exponential()
    left = x0 - rng.uniform() * width
    right = left + width
    steps_left = int(rng.integers(max_steps))
    steps_right = max_steps - 1 - steps_left
    while steps_left > 0 and log_density(left) > level:
        left -= width
        steps_left -= 1
    while steps_right > 0 and log_density(right) > level:
        right += width
        steps_right -= 1
    stepped = right - left
    while True:
        x = rng.uniform(left, right)
        if log_density(x) > level:
            return x, stepped
        if x < x0:
            left = x
        else:
            right = x
