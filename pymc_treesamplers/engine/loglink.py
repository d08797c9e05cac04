"""Leaves whose rows enter through ``exp``: the Laplace approximation of their marginal likelihood.

Under a log-link family (Poisson's log of the mean, Gamma's log of the scale, the Normal's log sd; a
negative binomial once its Poisson-gamma latents are drawn) with one slope in every row, the rows of a
leaf with value ``mu`` contribute ``S c mu - W exp(c mu)`` to the log-likelihood, up to terms free of
``mu``: ``S = sum_i s_i`` and ``W = sum_i w_i`` are sums over the leaf's rows, as for Gaussian
pseudo-data (``w_i = k_i exp(rho eta_{-j, i})`` at the other trees' fit, ``s_i`` the family's count
term, ``c = rho b``; :mod:`pymc_treesamplers.routes.family_record`). So the same prefix sums that serve the
Gaussian kernels give every candidate leaf its exact likelihood, wherever it sits: a working model
expanded at one point (the leaf prior mean) was many posterior sds wrong for leaves far from it, and
the chains froze (docs/likelihoods.md).

With the leaf prior ``N(mu0, s2)`` the log posterior ``h(mu) = S c mu - W exp(c mu) - (mu - mu0)^2 / (2 s2)``
is strictly concave. Its mode ``m`` has a closed form in Lambert's ``W`` (:func:`leaf_mode`), and
the leaf's log marginal likelihood is its Laplace approximation ``h(m) - log(s2 H) / 2`` with
``H = -h''(m) = c^2 W exp(c m) + 1 / s2`` (:func:`leaf_laplace`): zero for an empty leaf, a deterministic
function of ``(W, S)``. The tree kernels target the tree posterior under it exactly, and the likelihood
record's Metropolis-Hastings correction makes the update exact for the true likelihood.

>>> m, H = leaf_mode(1.0, 3.0, 6.0, 0.0, 1.0)   # c = 1, W = 3, S = 6, mu0 = 0, s2 = 1
>>> round(m, 6), round(H, 6)
(0.589693, 6.410307)
>>> leaf_laplace(1.0, 0.0, 0.0, 0.5, 2.0)   # no rows: the prior integrates to one
0.0
"""

import math

import numba


@numba.njit(cache=True, nogil=True)
def _lambert_exp(L):
    """``w > 0`` with ``w + log w = L``, i.e. Lambert's ``W(exp(L))``, without forming ``exp(L)``: Newton's
    iteration ``w <- w (1 + L - log w) / (1 + w)`` from a start within a few percent (quadratic convergence)."""
    if L < 1.0:
        e = math.exp(L)
        w = e / (1.0 + e)
    else:
        w = L - math.log(L)
    for _ in range(20):
        nxt = w * (1.0 + L - math.log(w)) / (1.0 + w)
        if abs(nxt - w) <= 4e-16 * nxt:
            return nxt
        w = nxt
    return w


@numba.njit(cache=True, nogil=True)
def leaf_mode(c, W, S, mu0, s2):
    """Mode ``m`` of ``h`` (module docstring) and the curvature ``H = -h''(m)`` there, in closed form.

    ``h'(m) = 0`` is ``c s2 W exp(c m) + m = B`` with ``B = c s2 S + mu0``; with ``m = B - y`` it becomes
    ``(c y) exp(c y) = c^2 s2 W exp(c B)``, so ``c y = w``, Lambert's ``W`` of the right-hand side
    (:func:`_lambert_exp` of its log ``L``). Then ``W exp(c m) = w / (c^2 s2)``, ``H = (1 + w) / s2`` and
    ``m = (log w - log(c^2 s2 W)) / c``, which keeps its digits when ``B`` is large (``m = B - w / c`` when
    ``w`` is below ``exp(-36)``, where ``w = exp(L)`` to the last digit and may underflow)."""
    B = c * s2 * S + mu0
    if not W > 0.0:
        return B, 1.0 / s2
    log_a = math.log(c * c * s2 * W)
    L = log_a + c * B
    if L < -36.0:  # w = exp(L - w) = exp(L) to the last digit (it may underflow: then m = B exactly)
        w = math.exp(L)
        return B - w / c, (1.0 + w) / s2
    w = _lambert_exp(L)
    return (math.log(w) - log_a) / c, (1.0 + w) / s2


@numba.njit(cache=True, nogil=True)
def leaf_laplace(c, W, S, mu0, s2):
    """Laplace approximation of ``log int exp(S c mu - W exp(c mu)) N(mu; mu0, s2) dmu``."""
    if W <= 0.0 and S == 0.0:
        return 0.0
    m, H = leaf_mode(c, W, S, mu0, s2)
    return leaf_laplace_at(c, W, S, mu0, s2, m, H)


@numba.njit(cache=True, nogil=True)
def leaf_laplace_at(c, W, S, mu0, s2, m, H):
    """:func:`leaf_laplace` from the mode and curvature :func:`leaf_mode` returned."""
    d = m - mu0
    x = math.exp(math.log(W) + c * m) if W > 0.0 else 0.0
    return S * c * m - x - 0.5 * d * d / s2 - 0.5 * math.log(s2 * H)
