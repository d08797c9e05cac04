"""What the tree kernels see of a PyMC model: the likelihood of one BART variable (docs/design.md section 1).

:func:`working_model` is the one place a route is chosen (the steps call it once per output) and returns
one of three, which the steps then use through the same three methods: ``leaf_prior(op, m)`` (the leaf
prior on the route's scale), ``sweep_input(f, rng, threads)`` (the record one sweep runs on at the BART
value ``f``) and ``compile_record()`` (a small record of that type, to compile the sweep before sampling):

* :class:`GaussianWorkingModel` when the likelihood is Gaussian in the BART value ``f``. The observed
  log-likelihood terms that depend on ``f`` are compiled once with their gradient ``g`` and negative
  Hessian diagonal ``h`` in ``f`` (all other model values enter as shared variables, set by PyMC
  before each step). At model build the Hessian is checked to be diagonal (rows not coupled:
  ``H v = h * v`` for random ``v`` at two points) and constant with an exact second-order expansion
  (a Normal likelihood whose mean is affine in ``f``); then the pseudo-data ``z_i ~ N(f_i, 1/w_i)``
  with ``w = h`` and ``z = f + g / h`` are exact.
* :class:`FamilyWorkingModel` when the likelihood is one of the families of
  :mod:`pymc_treesamplers.routes.families` with ``f`` in one parameter through a link,
  ``link(param) = a + b f``. Each step reads ``a``, ``b`` and the family's data from the model and
  hands the kernels a :class:`~pymc_treesamplers.routes.families.FamilyLik`, whose working model
  and Metropolis-Hastings correction keep every tree update exact.
* :class:`GraphWorkingModel` for any other elementwise likelihood: the same correction with the
  log-likelihood evaluated by its compiled PyTensor graph (:mod:`pymc_treesamplers.routes.graph`).
"""

from __future__ import annotations

import warnings
from typing import Any, Protocol

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.distributions.continuous import AsymmetricLaplaceRV
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.scalar import Erfc, Exp, Sigmoid
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.random import basic as rvs

from ..engine.records import Pseudo
from . import families as fam
from .augment import augment_pseudo, augmented, can_augment
from .graph import GraphLik, graph_lik, register_host


class WorkingModel(Protocol):
    """What a step sees of one output's likelihood (module docstring): every route's working model has these.

    ``corrected``: whether the tree updates need the Metropolis-Hastings correction (every record but exact
    Gaussian pseudo-data); ``leaf_prior(op, m)``: the leaf prior ``(mu0, s2)`` on the route's scale;
    ``sweep_input(f, rng, threads)``: the record one sweep runs on at the BART value ``f``;
    ``compile_record()``: a small record of that type, to compile the sweep before sampling.
    """

    @property
    def corrected(self) -> bool: ...

    def leaf_prior(self, op, m: int) -> tuple[float, float]: ...

    def sweep_input(self, f: np.ndarray, rng: np.random.Generator, threads: int = 1) -> Any: ...

    def compile_record(self) -> Any: ...


class OutputView:
    """One output of a BART variable of shape ``(k, n)`` as a working model sees it: a vector ``var``
    stands for row ``index`` of the value, and the other rows are read from ``base``, a shared variable
    the step keeps equal to the variable's current value (:meth:`set_others`). Each output's forest is
    then updated given the others, under its own working model, exactly as a BART vector is.

    >>> import pytensor.tensor as pt
    >>> view = OutputView(pt.matrix("mu"), 1, np.zeros((2, 3)))
    >>> view.var.name, view.base.get_value().shape
    ('mu[1]', (2, 3))
    """

    def __init__(self, value_var, index: int, value: np.ndarray):
        self.index = int(index)
        self.base = pytensor.shared(np.array(value, dtype=value_var.dtype), name=f"{value_var.name}_others")
        self.var = pt.vector(f"{value_var.name}[{index}]", dtype=value_var.dtype)
        self.replacement = {value_var: pt.set_subtensor(self.base[self.index], self.var)}
        self.shape = tuple(np.shape(value))

    def set_others(self, value: np.ndarray) -> None:
        """Make the other outputs' current values ``value`` (shape ``(k, n)``; row ``index`` is ignored)."""
        self.base.set_value(np.asarray(value, dtype=self.base.dtype))

    def row(self, x: np.ndarray, n: int) -> np.ndarray | None:
        """This output's row of a per-observation array ``x`` that is shaped like the whole variable
        (``(k, n)``) or like one output (``(n,)``); None if it is neither."""
        shape = np.shape(x)
        if shape == (n,):
            return np.asarray(x)
        if len(shape) == 2 and shape[1] == n and shape[0] == self.shape[0]:
            return np.asarray(x)[self.index]
        return None


class GaussianWorkingModel:
    """Pseudo-data of one BART variable under a likelihood that is Gaussian in it.

    ``__call__(f)`` returns ``(z, w)`` with ``w >= 0``; rows with ``w = 0`` carry no information.
    ``view``: for one output of a BART variable with several (:class:`OutputView`), ``f`` is that
    output's row.
    """

    def __init__(self, model: pm.Model, bart_rv, value_var, shared: dict, point: dict, compile_kwargs=None,
                 require_quadratic=True, view: OutputView | None = None):
        observed = [rv for rv in model.observed_RVs if bart_rv in set(ancestors([rv]))]
        potentials = [p for p in model.potentials if bart_rv in set(ancestors([p]))]
        free_dependents = [rv for rv in model.free_RVs if rv is not bart_rv and bart_rv in set(ancestors([rv]))]
        if free_dependents:
            names = [rv.name for rv in free_dependents]
            raise NotImplementedError(
                f"the BART variable {bart_rv.name!r} is a parameter of the unobserved variable(s) {names}; "
                "only observed likelihood terms may depend on a BART variable for now"
            )
        self.observed_names = [rv.name for rv in observed] + [p.name or "a pm.Potential" for p in potentials]
        self.n_potentials = len(potentials)
        for rv in observed:
            if rv.owner.op.ndim_supp != 0:
                raise NotImplementedError(
                    f"the likelihood {rv.name!r} is multivariate; the BART step needs an elementwise likelihood"
                )
        self.flat = not observed and not potentials
        if self.flat:
            # legitimate (the prior by MCMC), but far more often a step created before the likelihood
            # was added: it would sample the prior silently
            warnings.warn(f"no likelihood term of the model depends on the BART variable {bart_rv.name!r}: its tree "
                          "step samples the tree prior. A step reads the model when it is created: create it after "
                          "the likelihood.", UserWarning, stacklevel=2)
            return
        loglik = model.logp(vars=observed + potentials, sum=True, jacobian=False)
        f0 = np.asarray(point[value_var.name], dtype=float)
        if view is not None:
            loglik = graph_replace(loglik, view.replacement, strict=False)
            value_var, f0 = view.var, f0[view.index]
        grad = pytensor.grad(loglik, value_var)
        # H 1 (row sums of the negative Hessian) and H v: H 1 is H's diagonal exactly when H is
        # diagonal, which _check_elementwise verifies with H v = (H 1) * v for random v
        hess_1 = -pytensor.grad(pt.sum(grad), value_var)
        v = pt.vector("v", dtype=value_var.dtype)
        hess_v = -pytensor.grad(pt.sum(grad * v), value_var)
        outs = graph_replace([loglik, grad, hess_1], shared, strict=False)
        self._graph = ([value_var], outs)
        self.compile({**(compile_kwargs or {})})
        hv_fn = pm.pytensorf.compile([value_var, v], graph_replace(hess_v, shared, strict=False),
                                     **(compile_kwargs or {}))
        self._dtype = value_var.dtype
        self.n = f0.shape[0]
        rng = np.random.default_rng(0)
        # coupling and curvature are structural: look for them at moderate values, where no likelihood
        # saturates or overflows (the initial point is on the scale of Y, which can be extreme on a link
        # scale: p(1 - p) of a logit at 14 is 6e-7, below the rounding of some of PyTensor's rewrites of it;
        # a Gamma's mean exp(5000) is inf)
        self._check_elementwise(hv_fn, (rng.normal(size=f0.shape), 2.0 * rng.normal(size=f0.shape)), rng)
        self.quadratic = self._is_quadratic(0.5 * rng.normal(size=f0.shape), rng.normal(size=f0.shape))
        if require_quadratic and not self.quadratic:
            raise NotImplementedError(
                f"the likelihood {self.observed_names} is not Gaussian in the BART value and not one of the "
                f"families the tree steps know ({SUPPORTED})"
            )

    def compile(self, compile_kwargs: dict) -> None:
        """(Re)compile the log-likelihood, gradient and curvature in the BART value with these PyTensor
        compile options (the graph route asks for another backend than the model's default)."""
        self._fn = pm.pytensorf.compile(*self._graph, **compile_kwargs)
        self._fn.trust_input = True

    def _check_elementwise(self, hv_fn, points, rng) -> None:
        """Refuse likelihoods whose Hessian in the BART value is not diagonal (rows coupled)."""
        for f in points:
            f = f.astype(self._dtype)
            h = self._fn(f)[2]
            for _ in range(2):
                v = rng.choice([-1.0, 1.0], size=f.shape).astype(self._dtype)
                hv = hv_fn(f, v)
                # exactly diagonal H gives H v = h * v up to rounding (v is +-1)
                tol = 1e-12 * (np.abs(h).max() + 1e-300)
                if not np.all(np.abs(hv - h * v) <= tol):
                    raise NotImplementedError(
                        f"the likelihood {self.observed_names} couples different rows of the BART variable "
                        "(its log-density is not a sum of one term per row of BART value, e.g. mu[::-1], mu.sum() "
                        "or a multivariate likelihood); the tree steps need each observation to depend on its "
                        "own row's BART value"
                    )

    def _is_quadratic(self, f0: np.ndarray, f1: np.ndarray) -> bool:
        """Whether the likelihood is Gaussian in the BART value (constant curvature, exact
        second-order expansion between two points)."""
        ll0, g0, h0 = self._fn(f0.astype(self._dtype))
        ll1, g1, h1 = self._fn(f1.astype(self._dtype))
        step = f1 - f0
        quad = ll0 + g0 @ step - 0.5 * (h0 * step) @ step
        scale = 1.0 + abs(ll0) + abs(ll1)
        return bool(np.allclose(h0, h1, rtol=1e-6, atol=1e-12) and abs(ll1 - quad) < 1e-6 * scale)

    def loglik(self, f: np.ndarray) -> float:
        """The observed log-likelihood terms that depend on the BART value, at ``f``."""
        return float(self._fn(f.astype(self._dtype))[0])

    def derivs(self, f: np.ndarray, grad: np.ndarray, curv: np.ndarray) -> None:
        """Gradient and working curvature at ``f`` (the :mod:`~pymc_treesamplers.routes.graph` host
        interface): the observed curvature where positive; elsewhere the median positive curvature
        over the rows (0 if there is none), a safe weight the correction makes exact."""
        _, g, h = self._fn(f.astype(self._dtype))
        grad[:] = g
        positive = h > 0.0
        fill = float(np.median(h[positive])) if positive.any() else 0.0
        curv[:] = np.where(positive, h, fill)

    corrected = False

    def leaf_prior(self, op, m: int) -> tuple[float, float]:
        """``(mu0, sigma_mu^2)`` of the leaves: the BART variable's, on the scale of Y."""
        mu0, sigma_mu = op.leaf_prior()
        return mu0, sigma_mu**2

    def sweep_input(self, f: np.ndarray, rng: np.random.Generator, threads: int = 1) -> Pseudo:
        """The exact pseudo-data at ``f`` as the residual record the kernels take (``rng`` unused: nothing
        is drawn)."""
        return _residuals(*self(f), f, threads)

    @staticmethod
    def compile_record() -> Pseudo:
        """A small record of the type :meth:`sweep_input` returns, to compile the sweep for it."""
        return Pseudo(np.zeros(4), np.ones(4), 1)

    def __call__(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.flat:
            return f.copy(), np.zeros_like(f)
        _, g, h = self._fn(f.astype(self._dtype))
        w = np.where(h > 0.0, h, 0.0)
        z = f + np.divide(g, w, out=np.zeros_like(g), where=w > 0.0)
        return z, w


SUPPORTED = ("Normal (mean affine in the BART value: exact, no correction; log of sigma), Bernoulli and "
             "Binomial (logit or probit of p), Poisson (log of mu), NegativeBinomial (log of mu), Gamma "
             "(log of the mean with alpha fixed), StudentT (mu), AsymmetricLaplace (mu)")


def _probit_input(node):
    # pm.math.invprobit(x) is 0.5 * erfc(-x / sqrt(2)): return x
    consts, erfc = [], None
    for x in node.inputs:
        if x.owner is not None and isinstance(x.owner.op, Elemwise) and isinstance(x.owner.op.scalar_op, Erfc):
            erfc = x.owner.inputs[0]
        else:
            try:
                consts.append(float(pt.get_underlying_scalar_constant_value(x)))
            except Exception:
                return None
    if erfc is None or len(node.inputs) != 2 or consts != [0.5]:
        return None
    return -np.sqrt(2.0) * erfc


def _link_scale(theta, link: str):
    """``link(theta)`` as a graph; exact (no round trip through theta) when theta is the link's inverse
    applied to something, e.g. ``sigmoid(x)`` under the logit link gives ``x``."""
    node = theta.owner
    if node is not None and isinstance(node.op, Elemwise):
        op = node.op.scalar_op
        if link == "logit" and isinstance(op, Sigmoid):
            return node.inputs[0]
        if link == "log" and isinstance(op, Exp):
            return node.inputs[0]
        if link == "probit" and (x := _probit_input(node)) is not None:
            return x
    if link == "logit":
        return pt.log(theta) - pt.log1p(-theta)
    if link == "log":
        return pt.log(theta)
    if link == "probit":
        return np.sqrt(2.0) * pt.erfinv(2.0 * theta - 1.0)
    return theta


def _is_probit(theta) -> bool:
    node = theta.owner
    return node is not None and isinstance(node.op, Elemwise) and _probit_input(node) is not None


# observation op -> {index of the parameter that holds the BART value: (kind, link, family data)}.
# Family data: (u, v, s) from the observed value y and the parameters (see routes/families.py).
_FAMILIES = {
    rvs.BernoulliRV: {0: ("binary", lambda y, p: (y, 1.0 - y, 0.0))},
    rvs.BinomialRV: {1: ("binary", lambda y, p: (y, p[0] - y, 0.0))},
    rvs.NegBinomialRV: {1: ((fam.LOGIT2, "logit"), lambda y, p: (p[0], y, 0.0))},
    rvs.PoissonRV: {0: ((fam.POISSON_LOG, "log"), lambda y, p: (y, 0.0, 0.0))},
    rvs.GammaRV: {1: ((fam.GAMMA_LOGSCALE, "log"), lambda y, p: (y, p[0], 0.0))},
    rvs.NormalRV: {1: ((fam.NORMAL_LOGSD, "log"), lambda y, p: ((y - p[0]) ** 2, 0.0, 0.0))},
    rvs.StudentTRV: {1: ((fam.STUDENT_T, "identity"), lambda y, p: (y, p[0], p[1]))},
    # a SymbolicRandomVariable with params (b, kappa, mu) (pm.AsymmetricLaplace(q=...) gives kappa)
    AsymmetricLaplaceRV: {2: ((fam.ASYM_LAPLACE, "identity"), lambda y, p: (y, p[0], p[1]))},
}


# Binomial rows with more trials than this on average take the expansion route: an augmentation
# draws one latent per trial, and with many trials a row's likelihood is close to Gaussian anyway
MAX_MEAN_TRIALS = 50

ROUTES = ("auto", "expand")


class FamilyWorkingModel:
    """The likelihood record of a BART variable under an observation family (module docstring).

    ``sweep_input(f, rng, threads)`` reads the other model values (set by PyMC before each step) and returns what
    one sweep of the trees runs on at the BART value ``f``, by the family's route (``self.route``):

    * ``"augment"`` (Bernoulli/Binomial logit or probit, Student-t): latents drawn given ``f``
      (:mod:`pymc_treesamplers.routes.augment`), then Gaussian pseudo-data (the residual record of the
      exact kernels), no correction;
    * ``"loglink"`` (Poisson, Gamma, Normal log sd): a
      :class:`~pymc_treesamplers.routes.families.FamilyLik` on the log-link route (exact leaf sums, Laplace
      leaves, Metropolis-Hastings corrected);
    * ``"expand"`` (negative binomial, asymmetric Laplace, a Binomial with more than ``MAX_MEAN_TRIALS``
      trials per row on average, or any family with ``route="expand"``): a ``FamilyLik`` expanded at the
      other trees' fit plus the constant that fits best there, corrected.

    ``record(f)`` is the expansion route's record (which also serves the constant fit).
    """

    def __init__(self, model: pm.Model, bart_rv, value_var, shared: dict, point: dict, gaussian: GaussianWorkingModel,
                 center: float, compile_kwargs=None, view: OutputView | None = None, route: str = "auto"):
        names = gaussian.observed_names
        observed = [model[name] for name in names]
        if len(observed) != 1:
            raise NotImplementedError(f"the BART variable {bart_rv.name!r} enters several likelihood terms {names}; "
                                      "the tree steps handle one non-Gaussian likelihood term per BART variable")
        obs = observed[0]
        op = obs.owner.op
        params = model.replace_rvs_by_values(list(op.dist_params(obs.owner)))
        f0 = np.asarray(point[value_var.name], dtype=float)
        if view is not None:
            params = graph_replace(params, view.replacement, strict=False)
            value_var, f0 = view.var, f0[view.index]
        # the checks below run at moderate values (GaussianWorkingModel explains why)
        f0 = 0.5 * np.random.default_rng(3).normal(size=f0.shape)
        self._view = view
        dependent = [k for k, p in enumerate(params) if value_var in set(ancestors([p]))]
        if view is not None and dependent:
            # every row of the whole variable is an ancestor of mu[0]; keep the parameters whose values
            # move with this output (the check against PyMC's log-likelihood below backs this up)
            fn = pm.pytensorf.compile([value_var], graph_replace([params[k] for k in dependent], shared, strict=False),
                                      on_unused_input="ignore", **(compile_kwargs or {}))
            rng = np.random.default_rng(2)
            at0 = fn(f0.astype(value_var.dtype))
            at1 = fn((f0 + rng.normal(size=f0.shape)).astype(value_var.dtype))
            dependent = [k for k, a, b in zip(dependent, at0, at1, strict=True) if not np.array_equal(a, b)]
        spec = _FAMILIES.get(type(op), {})
        if len(dependent) != 1 or dependent[0] not in spec:
            where = [op.dist_params(obs.owner)[k].name or f"parameter {k}" for k in dependent]
            raise NotImplementedError(
                f"the likelihood {obs.name!r} ({type(op).__name__}) depends on the BART value through {where}; "
                f"the tree steps sample BART under: {SUPPORTED}"
            )
        k = dependent[0]
        (kind_link, self._data) = spec[k]
        if kind_link == "binary":
            kind_link = (fam.PROBIT2, "probit") if _is_probit(params[k]) else (fam.LOGIT2, "logit")
        self.kind, self.link = kind_link
        # an augmentation draws one latent per trial: a Binomial's trials must be data, not a variable
        trials_are_data = not (isinstance(op, rvs.BinomialRV) and set(model.value_vars) & set(ancestors([params[0]])))
        eta = _link_scale(params[k], self.link)
        others = [p for j, p in enumerate(params) if j != k]
        y = model.rvs_to_values[obs]
        outs = graph_replace([eta, y, *others], shared, strict=False)
        self._fn = pm.pytensorf.compile([value_var], outs, on_unused_input="ignore", **(compile_kwargs or {}))
        self.name = obs.name
        self.family = f"{type(op).__name__.removesuffix('RV')} ({self.link} link)"
        self.mu0, self.s2 = float(center), 1.0  # the leaf prior; set by the step
        self.refine = True
        self._dtype = value_var.dtype
        self.n = f0.shape[0]
        lik0 = self.record(f0)
        f1 = f0 + np.random.default_rng(1).normal(size=f0.shape)
        self.record(f1)  # affine check at a second point
        # the family's log-likelihood must move with f exactly as PyMC's does (catches any mis-mapping)
        ours = fam.family_loglik(lik0, f1) - fam.family_loglik(lik0, f0)
        theirs = gaussian.loglik(f1) - gaussian.loglik(f0)
        if not abs(ours - theirs) <= 1e-6 * (1.0 + abs(theirs)):
            raise RuntimeError(f"internal check failed: the {self.family} likelihood of {obs.name!r} differs from "
                               f"PyMC's ({ours} vs {theirs} between two points); please report this model")
        self._negative_binomial = isinstance(op, rvs.NegBinomialRV)
        self.route = self._choose_route(route, op, lik0, trials_are_data)

    def _choose_route(self, route: str, op, lik: fam.FamilyLik, trials_are_data: bool) -> str:
        if route not in ROUTES:
            raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
        if route == "expand":
            return "expand"
        if self.kind in (fam.POISSON_LOG, fam.GAMMA_LOGSCALE, fam.NORMAL_LOGSD):
            return "loglink"
        if self.kind == fam.STUDENT_T:
            return "augment"
        binary = isinstance(op, (rvs.BernoulliRV, rvs.BinomialRV))
        if (binary and trials_are_data and can_augment(self.kind, lik.u, lik.v)
                and np.mean(lik.u + lik.v) <= MAX_MEAN_TRIALS):
            return "augment"
        return "expand"  # negative binomial, asymmetric Laplace, Binomial with many trials

    @property
    def corrected(self) -> bool:
        """Whether the tree updates are Metropolis-Hastings corrected (every route but ``"augment"``)."""
        return self.route != "augment"

    @property
    def leaf_scale(self) -> str:
        """The scale the BART value lives on, for its default leaf prior (:meth:`BARTRV.leaf_prior`): the
        log of a count's mean (``"count"``; a negative binomial's too, whose link is written on its ``p``) or
        of a positive response's (``"positive"``), of a Normal's sd (``"log"``), the logit or probit of a
        probability, or the scale of Y (``"identity"``: Student-t, asymmetric Laplace)."""
        if self.kind in (fam.STUDENT_T, fam.ASYM_LAPLACE):
            return "identity"
        if self.kind == fam.POISSON_LOG or self._negative_binomial:
            return "count"
        if self.kind == fam.GAMMA_LOGSCALE:
            return "positive"
        if self.kind == fam.NORMAL_LOGSD:
            return "log"
        return self.link

    def _eval(self, f):
        eta, y, *others = self._fn(np.asarray(f, dtype=self._dtype))
        shape = np.shape(eta)
        if self._view is not None:
            # an observation shaped like the whole variable (k, n): this output's row of everything
            full = np.broadcast_shapes(shape, np.shape(y), *(np.shape(p) for p in others))
            eta, y, *others = (np.broadcast_to(x, full) for x in (eta, y, *others))
            rows = [self._view.row(x, self.n) for x in (eta, y, *others)]
            if any(r is None for r in rows):
                raise NotImplementedError(f"the likelihood {self.name!r} has shape {full}; the tree steps need "
                                          f"one observation per row of the BART output ({self.n},) or per value of "
                                          f"the BART variable {self._view.shape}")
            eta, y, *others = rows
        elif shape != (self.n,):
            raise NotImplementedError(f"the likelihood {self.name!r} has shape {shape}; the tree steps need one "
                                      f"observation per row of the BART variable ({self.n},)")
        return np.asarray(eta, dtype=float), np.asarray(y, dtype=float), [np.asarray(p, dtype=float) for p in others]

    def _parts(self, f: np.ndarray):
        """``(u, v, s, a, b)`` at the other variables' current values (checks that the link scale is affine
        in the BART value)."""
        eta0, y, others = self._eval(np.zeros(self.n))
        eta1 = self._eval(np.ones(self.n))[0]
        a, b = eta0, eta1 - eta0
        eta = self._eval(f)[0]
        with np.errstate(invalid="ignore"):  # a link that is infinite at 0 or 1 (log |w|) is not affine: said below
            affine = np.allclose(eta, a + b * f, rtol=1e-8, atol=1e-8)
        if not affine:
            raise NotImplementedError(
                f"the {self.link} of the parameter of {self.name!r} is not affine in the BART value (each row's "
                f"{self.link}(parameter) must be a + b * bart[row]); the tree steps need that form"
            )
        return (*self._data(y, others), a, b)

    def record(self, f: np.ndarray) -> fam.FamilyLik:
        """The expansion route's likelihood record at the BART value ``f``."""
        u, v, s, a, b = self._parts(f)
        return fam.family_lik(self.kind, u, v, s, a, b, self.mu0, self.s2, f, self.refine, laplace=False)

    def leaf_prior(self, op, m: int) -> tuple[float, float]:
        """``(mu0, sigma_mu^2)`` of the leaves, set on the record too: defaulted values on the link scale,
        centred where the likelihood puts a BART that has not split (prior predictive draws keep the values
        BART resolved on the scale of Y, and say so); on the expansion routes it also chooses the leaf
        proposal (:meth:`choose_leaf_proposal`)."""
        mu0, sigma_mu = op.leaf_prior(self.constant_fit(), self.leaf_scale)
        self.mu0, self.s2 = mu0, sigma_mu**2
        if self.route != "augment":
            self.choose_leaf_proposal(m)
        return self.mu0, self.s2

    def compile_record(self) -> fam.FamilyLik | Pseudo:
        """A small record of the type :meth:`sweep_input` returns, to compile the sweep for it (the record
        type sets the compiled code, not the family)."""
        if not self.corrected:
            return GaussianWorkingModel.compile_record()
        return fam.family_lik(fam.POISSON_LOG, np.ones(4), 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, np.zeros(4))

    def sweep_input(self, f: np.ndarray, rng: np.random.Generator, threads: int = 1) -> fam.FamilyLik | Pseudo:
        """What one sweep runs on at the BART value ``f`` (class docstring): Gaussian pseudo-data (a
        residual record) on the augmentation route, else a likelihood record."""
        u, v, s, a, b = self._parts(f)
        f = np.asarray(f, dtype=np.float64)
        if self.route == "augment":
            z, w = np.empty(self.n), np.empty(self.n)
            augment_pseudo(rng, augmented(self.kind, u, v, s, a, b, self.n), f, z, w)
            return _residuals(z, w, f, threads)
        return fam.family_lik(self.kind, u, v, s, a, b, self.mu0, self.s2, f, self.refine,
                              laplace=None if self.route == "loglink" else False)

    def constant_fit(self) -> float:
        """The BART value ``c`` (the same in every row) that maximises the likelihood at the current other
        values: where a BART that has not split yet should sit."""
        lik = self.record(np.zeros(self.n))
        return _score_root(lambda c: fam.constant_score(lik, c))

    def choose_leaf_proposal(self, m: int) -> bool:
        """Whether to propose leaves from the Newton-refined ``q`` (routes/families.py), set on
        ``self.refine`` (the expansion route's choice; the log-link route always proposes from the
        leaves' exact conditional modes). Both are exact; refining costs two more passes over the rows
        per tree and pays when a working mean ``delta^2 / 2`` off (``delta`` ~ the leaf prior sd) is more
        than a leaf's posterior sd: ``s2 / 2 * sqrt(rows per leaf * curvature per row) > 1``, with
        ``n / 2`` rows per leaf and the curvature at the constant fit ``m * mu0``; and always for the
        asymmetric Laplace."""
        lik = self.record(np.zeros(self.n))
        info = fam.constant_score(lik, m * self.mu0)[1]
        # the asymmetric Laplace's working curvature (its Fisher information) says nothing of where a leaf's
        # conditional sits, whatever the prior: always refined (m = 20, q = 0.8: acceptance 0.50 against 0.29)
        self.refine = bool(self.kind == fam.ASYM_LAPLACE or 0.5 * self.s2 * np.sqrt(0.5 * info) > 1.0)
        return self.refine


def _score_root(score_info, tol: float = 1e-10) -> float:
    """The root of a decreasing score (a concave 1-D log-likelihood's maximiser) by bracketing from 0
    and bisection; an overflowing score counts as past the root. Newton from 0 overshoots badly when
    the root is far away (log of a mean count of 200)."""

    def sign(c):
        score = score_info(c)[0]
        return 1.0 if np.isfinite(score) and score > 0 else (-1.0 if not np.isfinite(score) or score < 0 else 0.0)

    direction = sign(0.0)
    if direction == 0.0:
        return 0.0
    lo, step = 0.0, 1.0
    for _ in range(60):
        hi = lo + direction * step
        if sign(hi) != direction:
            break
        lo, step = hi, 2.0 * step
    else:
        return float(lo)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if sign(mid) == direction:
            lo = mid
        else:
            hi = mid
        if abs(hi - lo) < tol * (1.0 + abs(mid)):
            break
    return float(0.5 * (lo + hi))


class GraphWorkingModel:
    """The likelihood record of a BART variable under any elementwise likelihood, evaluated by the
    compiled PyTensor graph of its log-likelihood (module docstring)."""

    def __init__(self, gaussian: GaussianWorkingModel, center: float, reason: str):
        self.gaussian = gaussian
        self.mu0, self.s2 = float(center), 1.0
        self.family = f"PyTensor graph of {gaussian.observed_names}"
        self.reason = reason
        self._key = None

    def __getstate__(self):
        # host keys are per process: a worker registers its own copy
        return {**self.__dict__, "_key": None}

    def constant_fit(self) -> float:
        """As :meth:`FamilyWorkingModel.constant_fit`, from the graph's derivatives."""
        n = self.gaussian.n
        grad, curv = np.empty(n), np.empty(n)

        def score_info(c):
            self.gaussian.derivs(np.full(n, c), grad, curv)
            return grad.sum(), curv.sum()

        return _score_root(score_info)

    corrected = True
    leaf_scale = None  # unknown: the leaf prior keeps its k

    def leaf_prior(self, op, m: int) -> tuple[float, float]:
        """As :meth:`FamilyWorkingModel.leaf_prior` (no leaf proposal to choose)."""
        mu0, sigma_mu = op.leaf_prior(self.constant_fit(), self.leaf_scale)
        self.mu0, self.s2 = mu0, sigma_mu**2
        return self.mu0, self.s2

    @staticmethod
    def compile_record() -> GraphLik:
        """A small record of the type :meth:`sweep_input` returns, to compile the sweep for it."""
        return graph_lik(register_host(_FlatHost(), key=0), 0.0, np.zeros(4))

    def record(self, f: np.ndarray) -> GraphLik:
        """The likelihood record at the BART value ``f``."""
        if self._key is None:
            self._key = register_host(self.gaussian)
        return graph_lik(self._key, self.mu0, f, self.s2)

    def sweep_input(self, f: np.ndarray, rng: np.random.Generator, threads: int = 1) -> GraphLik:
        """:meth:`record` (``rng`` and ``threads`` unused)."""
        return self.record(f)


class _FlatHost:
    """A likelihood host without information, for compiling the graph record's code."""

    def derivs(self, f, grad, curv):
        grad[:] = 0.0
        curv[:] = 0.0

    def loglik(self, f):
        return 0.0


def _residuals(z: np.ndarray, w: np.ndarray, f: np.ndarray, threads: int) -> Pseudo:
    """Gaussian pseudo-data ``(z, w)`` at the BART value ``f`` as the kernels' record: the residual
    ``z - f`` (each tree's fit is added back to it in turn) and the weights, as one weight when every row
    has the same (one sigma): the passes over rows then read no weights, which at 10^7 rows makes a leaf's
    sums about a third faster."""
    w = np.asarray(w, dtype=np.float64)
    if w.size > 1 and w.min() == w.max():
        w = w[:1]
    return Pseudo(np.asarray(z, dtype=np.float64) - f, w, threads)


def working_model(model: pm.Model, bart_rv, value_var, shared: dict, point: dict, center: float,
                  compile_kwargs=None, view: OutputView | None = None, route: str = "auto") -> WorkingModel:
    """The working model of ``bart_rv``'s likelihood (module docstring); ``center``: the leaf prior mean;
    ``view``: one output of a BART variable with several, given the others; ``route``: a family's route
    (:class:`FamilyWorkingModel`).

    The exact Gaussian pseudo-data when they apply, else a family of ``routes/families.py`` when the
    graph matches one, else the PyTensor graph.
    """
    # a piecewise-linear likelihood (AsymmetricLaplace) has a Hessian that PyTensor simplifies to zeros,
    # leaving the direction of the Hessian-vector product out of the graph
    gaussian_kwargs = {"on_unused_input": "ignore", **(compile_kwargs or {})}
    gaussian = GaussianWorkingModel(model, bart_rv, value_var, shared, point, gaussian_kwargs, require_quadratic=False,
                                    view=view)
    if gaussian.flat or gaussian.quadratic:
        return gaussian
    if gaussian.n_potentials == 0:
        try:
            return FamilyWorkingModel(model, bart_rv, value_var, shared, point, gaussian, center, compile_kwargs,
                                      view=view, route=route)
        except NotImplementedError as err:
            reason = str(err)
    else:
        reason = "a pm.Potential depends on the BART value"
    if "mode" not in gaussian_kwargs and pytensor.config.cxx:
        # the graph is evaluated twice per tree: PyTensor's default numba backend runs ops it cannot
        # compile (polygamma in a Gamma likelihood's Hessian) element by element in Python, 40x slower
        # than its C backend on the gallery's Gamma model; use C when a compiler is there
        gaussian.compile({**gaussian_kwargs, "mode": "CVM"})
    return GraphWorkingModel(gaussian, center, reason)
