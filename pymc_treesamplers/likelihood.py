"""Build the weighted Gaussian pseudo-data ``(z, w)`` that the tree kernels see (DESIGN.md section 1).

The observed log-likelihood terms that depend on the BART value ``f`` are compiled once with
their gradient ``g`` and negative Hessian diagonal ``h`` in ``f`` (all other model values enter as
shared variables, set by PyMC before each step). When the log-likelihood is quadratic in ``f`` and
separable over rows (a Normal likelihood whose mean is affine in the BART value), the working
model ``z_i ~ N(f_i, 1/w_i)`` with ``w = h`` and ``z = f + g / h`` is exact.
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
        hess = -pytensor.grad(pt.sum(grad), value_var)  # diagonal, because rows are separable
        outs = graph_replace([loglik, grad, hess], shared, strict=False)
        self._fn = pm.pytensorf.compile([value_var], outs, **(compile_kwargs or {}))
        self._fn.trust_input = True
        self._dtype = value_var.dtype
        self._check_quadratic(np.asarray(point[value_var.name], dtype=float))

    def _check_quadratic(self, f0: np.ndarray) -> None:
        """Refuse likelihoods that are not Gaussian in the BART value (probed at two points)."""
        ll0, g0, h0 = self._fn(f0.astype(self._dtype))
        step = np.random.default_rng(0).normal(size=f0.shape) * (1.0 + np.abs(f0).mean())
        ll1, g1, h1 = self._fn((f0 + step).astype(self._dtype))
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
