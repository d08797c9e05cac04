"""The exact Gaussian route: :class:`GaussianWorkingModel`, the pseudo-data of a likelihood that is Gaussian in
the BART value (a Normal whose mean is affine in it), and :func:`residuals`, the record the exact kernels sweep on.
It also serves the other routes: its compiled log-likelihood and derivatives are what they correct against.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors

from ..engine import Pseudo
from .native import working_curvature
from .reading import SUPPORTED, OutputView


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
            value_var, f0 = view.var, view.value_of(f0)
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
        curv[:] = h
        working_curvature(curv)

    corrected = False

    def leaf_prior(self, op, m: int) -> tuple[float, float]:
        """``(mu0, sigma_mu^2)`` of the leaves: the BART variable's, on the scale of Y."""
        mu0, sigma_mu = op.leaf_prior()
        return mu0, sigma_mu**2

    def sweep_input(self, f: np.ndarray, rng: np.random.Generator, threads: int = 1) -> Pseudo:
        """The exact pseudo-data at ``f`` as the residual record the kernels take (``rng`` unused: nothing
        is drawn)."""
        return residuals(*self(f), f, threads)

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


def residuals(z: np.ndarray, w: np.ndarray, f: np.ndarray, threads: int) -> Pseudo:
    """Gaussian pseudo-data ``(z, w)`` at the BART value ``f`` as the kernels' record: the residual
    ``z - f`` (each tree's fit is added back to it in turn) and the weights, as one weight when every row
    has the same (one sigma): the passes over rows then read no weights, which at 10^7 rows makes a leaf's
    sums about a third faster."""
    w = np.asarray(w, dtype=np.float64)
    if w.size > 1 and w.min() == w.max():
        w = w[:1]
    return Pseudo(np.asarray(z, dtype=np.float64) - f, w, threads)
