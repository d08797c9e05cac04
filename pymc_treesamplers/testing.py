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
from .records import Pseudo

__all__ = ["LazyGaussian"]


class LazyGaussian(NamedTuple):
    """Gaussian pseudo-data ``(r, w)`` whose tree proposals are kept with probability ``keep``."""

    r: np.ndarray
    w: np.ndarray
    keep: float


@numba.njit(cache=True, nogil=True)
def _pseudo(lik, j):
    return Pseudo(lik.r, lik.w)


@numba.njit(cache=True, nogil=True)
def _accept(rng, lik, j, old, new, ps):
    return rng.random() < lik.keep


register_likelihood(LazyGaussian, _pseudo, _accept)
