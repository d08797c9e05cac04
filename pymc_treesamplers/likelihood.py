"""Build the weighted Gaussian pseudo-data ``(z, w)`` that the tree kernels see (DESIGN.md section 1).

The observed log-likelihood terms that depend on the BART value ``f`` are compiled once with
their gradient ``g`` and negative Hessian diagonal ``h`` in ``f`` (all other model values enter as
shared variables, set by PyMC before each step). At model build the Hessian is checked to be
diagonal (rows not coupled: ``H v = h * v`` for random ``v`` at two points) and constant with an
exact second-order expansion (a Normal likelihood whose mean is affine in the BART value); then the
working model ``z_i ~ N(f_i, 1/w_i)`` with ``w = h`` and ``z = f + g / h`` is exact.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors


class GaussianWorkingModel:
    """Pseudo-data of one BART variable under a likelihood that is Gaussian in it.

    ``__call__(f)`` returns ``(z, w)`` with ``w >= 0``; rows with ``w = 0`` carry no information.
    """

    def __init__(self, model: pm.Model, bart_rv, value_var, shared: dict, point: dict, compile_kwargs=None):
        observed = [rv for rv in model.observed_RVs if bart_rv in set(ancestors([rv]))]
        free_dependents = [rv for rv in model.free_RVs if rv is not bart_rv and bart_rv in set(ancestors([rv]))]
        if free_dependents:
            names = [rv.name for rv in free_dependents]
            raise NotImplementedError(
                f"the BART variable {bart_rv.name!r} is a parameter of the unobserved variable(s) {names}; "
                "only observed likelihood terms may depend on a BART variable for now"
            )
        self.observed_names = [rv.name for rv in observed]
        for rv in observed:
            if rv.owner.op.ndim_supp != 0:
                raise NotImplementedError(
                    f"the likelihood {rv.name!r} is multivariate; the BART step needs an elementwise likelihood"
                )
        self.flat = not observed
        if self.flat:
            return
        loglik = model.logp(vars=observed, sum=True, jacobian=False)
        grad = pytensor.grad(loglik, value_var)
        # H 1 (row sums of the negative Hessian) and H v: H 1 is H's diagonal exactly when H is
        # diagonal, which _check_elementwise verifies with H v = (H 1) * v for random v
        hess_1 = -pytensor.grad(pt.sum(grad), value_var)
        v = pt.vector("v", dtype=value_var.dtype)
        hess_v = -pytensor.grad(pt.sum(grad * v), value_var)
        outs = graph_replace([loglik, grad, hess_1], shared, strict=False)
        self._fn = pm.pytensorf.compile([value_var], outs, **(compile_kwargs or {}))
        self._fn.trust_input = True
        hv_fn = pm.pytensorf.compile([value_var, v], graph_replace(hess_v, shared, strict=False),
                                     **(compile_kwargs or {}))
        self._dtype = value_var.dtype
        f0 = np.asarray(point[value_var.name], dtype=float)
        rng = np.random.default_rng(0)
        f1 = f0 + rng.normal(size=f0.shape) * (1.0 + np.abs(f0).mean())
        self._check_elementwise(hv_fn, (f0, f1), rng)
        self._check_quadratic(f0, f1)

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

    def _check_quadratic(self, f0: np.ndarray, f1: np.ndarray) -> None:
        """Refuse likelihoods that are not Gaussian in the BART value (constant curvature, exact
        second-order expansion between two points)."""
        ll0, g0, h0 = self._fn(f0.astype(self._dtype))
        ll1, g1, h1 = self._fn(f1.astype(self._dtype))
        step = f1 - f0
        quad = ll0 + g0 @ step - 0.5 * (h0 * step) @ step
        scale = 1.0 + abs(ll0) + abs(ll1)
        if not (np.allclose(h0, h1, rtol=1e-6, atol=1e-12) and abs(ll1 - quad) < 1e-6 * scale):
            raise NotImplementedError(
                f"the likelihood {self.observed_names} is not Gaussian in the BART value. This release "
                "samples BART under Normal likelihoods whose mean is affine in the BART variable "
                "(e.g. pm.Normal('y', mu + other_terms, sigma, observed=y)); other likelihoods are planned"
            )

    def __call__(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.flat:
            return f.copy(), np.zeros_like(f)
        _, g, h = self._fn(f.astype(self._dtype))
        w = np.where(h > 0.0, h, 0.0)
        z = f + np.divide(g, w, out=np.zeros_like(g), where=w > 0.0)
        return z, w
