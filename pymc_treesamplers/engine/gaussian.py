"""Weighted Normal-Normal algebra for one leaf (sufficient statistics ``W = sum w``, ``S = sum w r``).

Working model in a leaf: ``r_i ~ N(mu, 1 / w_i)``, ``mu ~ N(mu0, s2)`` (``prior`` is a
:class:`~pymc_treesamplers.engine.records.TreePrior`, ``pseudo`` a :class:`~pymc_treesamplers.engine.records.Pseudo`).
"""

import math

import numba

from .loglink import leaf_laplace, leaf_mode
from .rows import range_suff


@numba.njit(cache=True, nogil=True)
def leaf_suff(pseudo, perm, s, e):
    """``(W, S)`` over the rows ``perm[s:e]`` (by blocks on long ranges:
    :func:`~pymc_treesamplers.engine.rows.range_suff`)."""
    return range_suff(pseudo.r, pseudo.w, perm, s, e, pseudo.threads)


@numba.njit(cache=True, nogil=True)
def leaf_loglik(prior, W, S):
    """Log marginal likelihood of a leaf, up to a term that does not depend on the partition.

    ``-0.5 log(1 + s2 W) + 0.5 (S + mu0/s2)^2 / (W + 1/s2) - 0.5 mu0^2 / s2``; zero when W = 0. With the
    prior's ``leaf_exp`` nonzero, the leaf's rows are those of a log-link family and the marginal is
    :func:`~pymc_treesamplers.engine.loglink.leaf_laplace` (``S`` stands for the rows' count term).

    >>> from pymc_treesamplers.engine.records import TreePrior
    >>> leaf_loglik(TreePrior(0.95, 2.0, 0.3, 2.0), 0.0, 0.0)
    0.0
    """
    mu0 = prior.mu0
    s2 = prior.s2
    if prior.leaf_exp != 0.0:
        return leaf_laplace(prior.leaf_exp, W, S, mu0, s2)
    b = S + mu0 / s2
    return -0.5 * math.log1p(s2 * W) + 0.5 * b * b / (W + 1.0 / s2) - 0.5 * mu0 * mu0 / s2


@numba.njit(cache=True, nogil=True)
def leaf_draw(rng, prior, W, S):
    """Draw a leaf value from its Gaussian full conditional (its Laplace approximation for log-link rows)."""
    if prior.leaf_exp != 0.0:
        m, H = leaf_mode(prior.leaf_exp, W, S, prior.mu0, prior.s2)
        return m + rng.standard_normal() / math.sqrt(H)
    prec = W + 1.0 / prior.s2
    mean = (S + prior.mu0 / prior.s2) / prec
    return mean + rng.standard_normal() / math.sqrt(prec)
