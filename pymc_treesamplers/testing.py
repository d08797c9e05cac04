"""Test utilities for samplers and likelihood records (as ``numpy.testing`` is for numpy).

:class:`LazyGaussian` is exact Gaussian pseudo-data whose proposals the driver keeps only with
probability ``keep``. A lazy version of an exact kernel is exact, so a sampler run with it must still
match the exact posterior, and with ``keep = 0`` every tree must stay as it was: it exercises the
reject path of :func:`pymc_treesamplers.kernels.driver.sweep` that the exact Gaussian working model
never takes. It lives in the package, not in a test file, because numba's on-disk cache of the
driver records the record types it was compiled for and must be able to import them again.

>>> import numpy as np
>>> LazyGaussian(np.zeros(3), np.ones(3), 0.5).keep
0.5
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from .kernels.driver import register_likelihood
from .kernels.families import FamilyLik, family_pseudo, row_loglik
from .records import Pseudo

__all__ = ["LazyGaussian", "UncorrectedFamily"]


class LazyGaussian(NamedTuple):
    """Gaussian pseudo-data ``(r, w)`` whose tree proposals are kept with probability ``keep``."""

    r: np.ndarray
    w: np.ndarray
    keep: float


@numba.njit(cache=True, nogil=True)
def _pseudo(lik, j, tree):
    return Pseudo(lik.r, lik.w, 1)


@numba.njit(cache=True, nogil=True)
def _accept(rng, lik, j, old, new, ps):
    return rng.random() < lik.keep


register_likelihood(LazyGaussian, _pseudo, _accept)


# FamilyLik's fields under another type, so the driver dispatches to the deliberately wrong accept
UncorrectedFamily = NamedTuple("UncorrectedFamily", list(FamilyLik.__annotations__.items()))
UncorrectedFamily.__doc__ = """:class:`~pymc_treesamplers.kernels.families.FamilyLik` whose accept step
drops the working likelihood from the ratio: a deliberately wrong correction, which exactness tests
must detect."""


@numba.njit(cache=True, nogil=True)
def _uncorrected_accept(rng, lik, j, old, new, ps):
    log_ratio = 0.0
    for i in range(lik.f.shape[0]):
        g_new = lik.z[i] - lik.r[i]
        base = lik.a[i] + lik.b[i] * (lik.f[i] - lik.g[i])
        log_ratio += row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i], base + lik.b[i] * g_new)
        log_ratio -= row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i], base + lik.b[i] * lik.g[i])
    lik.counts[0] += 1
    if not (log_ratio >= 0.0 or rng.random() < np.exp(log_ratio)):
        return False
    lik.counts[1] += 1
    for i in range(lik.f.shape[0]):
        lik.f[i] += lik.z[i] - lik.r[i] - lik.g[i]
    for i in range(lik.e.shape[0]):  # exp(eta) kept per row (log and logit links with one slope)
        lik.e[i] = np.exp(lik.a[i] + lik.b[i] * lik.f[i])
    return True


register_likelihood(UncorrectedFamily, family_pseudo, _uncorrected_accept)
