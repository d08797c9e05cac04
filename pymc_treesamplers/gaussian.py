"""Weighted Normal-Normal algebra for one leaf (sufficient statistics ``W = sum w``, ``S = sum w r``).

Working model in a leaf: ``r_i ~ N(mu, 1 / w_i)``, ``mu ~ N(mu0, s2)``.
"""

import math

import numba


@numba.njit(cache=True, nogil=True)
def leaf_suff(resid, w, perm_j, s, e):
    """``(W, S)`` over the rows ``perm_j[s:e]``."""
    W = 0.0
    S = 0.0
    for t in range(s, e):
        i = perm_j[t]
        W += w[i]
        S += w[i] * resid[i]
    return W, S


@numba.njit(cache=True, nogil=True)
def leaf_loglik(W, S, mu0, s2):
    """Log marginal likelihood of a leaf, up to a term that does not depend on the partition.

    ``-0.5 log(1 + s2 W) + 0.5 (S + mu0/s2)^2 / (W + 1/s2) - 0.5 mu0^2 / s2``; zero when W = 0.

    >>> leaf_loglik(0.0, 0.0, 0.3, 2.0)
    0.0
    """
    b = S + mu0 / s2
    return -0.5 * math.log1p(s2 * W) + 0.5 * b * b / (W + 1.0 / s2) - 0.5 * mu0 * mu0 / s2


@numba.njit(cache=True, nogil=True)
def leaf_draw(rng, W, S, mu0, s2):
    """Draw a leaf value from its Gaussian full conditional."""
    prec = W + 1.0 / s2
    mean = (S + mu0 / s2) / prec
    return mean + rng.standard_normal() / math.sqrt(prec)
