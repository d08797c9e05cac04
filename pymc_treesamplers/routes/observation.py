"""The row maths of the non-Gaussian observation families: each row's log-likelihood in the linear predictor
and its first two derivatives, one family per ``kind`` (pure functions of one row, shared by every
route that corrects for a family: the family record, augmentation, the log-link leaves).

The BART value ``f`` enters one parameter of an elementwise observation model through a link:
``eta_i = a_i + b_i f_i`` (``a``: the other terms of the model, ``b``: a slope, both fixed while the
trees move). Row ``i`` contributes ``l(eta_i)`` (:func:`row_terms`, one family per ``kind``, up to a
term free of ``eta``):

=================  ==========================================  ===================================
kind               ``l(eta)``                                  used for
=================  ==========================================  ===================================
``LOGIT2``         ``-u softplus(-eta) - v softplus(eta)``     Bernoulli/Binomial (``u = y``,
                                                               ``v = N - y``), NegativeBinomial
                                                               (``u = n``, ``v = y``), logit of p
``PROBIT2``        ``u log Phi(eta) + v log Phi(-eta)``        Bernoulli/Binomial, probit of p
``POISSON_LOG``    ``u eta - exp(eta)``                        Poisson, log of the mean
``GAMMA_LOGSCALE`` ``-v eta - u exp(-eta)``                    Gamma (``u = y``, ``v`` = shape),
                                                               log of the scale
``NORMAL_LOGSD``   ``-eta - u exp(-2 eta) / 2``                Normal (``u = (y - mu)^2``), log sd
``STUDENT_T``      ``-(v + 1)/2 log(1 + (u - eta)^2/(v s^2))`` Student-t (``u = y``, ``v = nu``,
                                                               ``s = sigma``), the location
``ASYM_LAPLACE``   ``-v s (u - eta)`` if ``u >= eta``, else    AsymmetricLaplace (``u = y``,
                   ``-v (eta - u) / s``                        ``v = b``, ``s = kappa``), the
                                                               location (quantile regression)
=================  ==========================================  ===================================

>>> l, dl, h = row_terms(POISSON_LOG, 3.0, 0.0, 0.0, 0.0)
>>> l, dl, h
(-1.0, 2.0, 1.0)
"""

import math

import numba
import numpy as np

LOGIT2, PROBIT2, POISSON_LOG, GAMMA_LOGSCALE, NORMAL_LOGSD, STUDENT_T, ASYM_LAPLACE = (np.int64(k) for k in range(7))


def column(x, n: int) -> np.ndarray:
    """A family parameter as its own contiguous float64 copy, one value per row (a scalar broadcast to ``n``).

    >>> column(2, 3).tolist(), column([1, 2], 2).tolist()
    ([2.0, 2.0, 2.0], [1.0, 2.0])
    """
    x = np.asarray(x, dtype=np.float64)
    # the common case first: broadcast_to costs more than the copy at the row counts of a draw
    return x.copy(order="C") if x.shape == (n,) else np.ascontiguousarray(np.broadcast_to(x, (n,))).copy()


_LOG_HALF = math.log(0.5)


_SQRT1_2 = math.sqrt(0.5)


# the log-link families: a row's log-likelihood is ``s rho eta - k exp(rho eta)`` (loglink_row)
LOGLINK_RHO = {int(POISSON_LOG): 1.0, int(GAMMA_LOGSCALE): -1.0, int(NORMAL_LOGSD): -2.0}


@numba.njit(cache=True, nogil=True)
def log_ndtr(x):
    """``log Phi(x)``, accurate in both tails (asymptotic series below -20, where erfc underflows
    towards the subnormals)."""
    if x > -20.0:
        return math.log(0.5 * math.erfc(-x * _SQRT1_2))
    x2 = x * x
    series = 1.0 - 1.0 / x2 + 3.0 / (x2 * x2) - 15.0 / (x2 * x2 * x2)
    return -0.5 * x2 - LOG_SQRT_2PI - math.log(-x) + math.log(series)


@numba.njit(cache=True, nogil=True)
def _probit_side(x):
    """``(log Phi(x), d/dx, -d2/dx2)``: the inverse Mills ratio ``lam = phi/Phi`` and ``lam (x + lam)``."""
    lp = log_ndtr(x)
    lam = math.exp(-0.5 * x * x - LOG_SQRT_2PI - lp)
    return lp, lam, lam * (x + lam)


@numba.njit(cache=True, nogil=True, inline="always")
def row_loglik(kind, u, v, s, eta):
    """One row's log-likelihood at ``eta``, up to a term free of ``eta``."""
    if kind == LOGIT2:
        return u * eta - (u + v) * (math.log1p(math.exp(-abs(eta))) + max(eta, 0.0))
    if kind == PROBIT2:
        return u * log_ndtr(eta) + v * log_ndtr(-eta)
    if kind == POISSON_LOG:
        return u * eta - math.exp(eta)
    if kind == GAMMA_LOGSCALE:
        return -v * eta - u * math.exp(-eta)
    if kind == NORMAL_LOGSD:
        return -eta - 0.5 * u * math.exp(-2.0 * eta)
    if kind == ASYM_LAPLACE:
        res = u - eta
        return -res * v * s if res >= 0.0 else res * v / s
    res = u - eta  # STUDENT_T
    return -0.5 * (v + 1.0) * math.log1p(res * res / (v * s * s))


@numba.njit(cache=True, nogil=True, inline="always")
def row_derivs(kind, u, v, s, eta):
    """``(dl/deta, h)`` of one row at ``eta``: the score and a positive working curvature (module
    docstring). Separate from :func:`row_loglik` so that building pseudo-data costs one exp per row."""
    if kind == LOGIT2:
        e = math.exp(-abs(eta))
        p = 1.0 / (1.0 + e) if eta >= 0.0 else e / (1.0 + e)
        return u * (1.0 - p) - v * p, (u + v) * p * (1.0 - p)
    if kind == PROBIT2:
        _, d1, h1 = _probit_side(eta)
        _, d0, h0 = _probit_side(-eta)
        return u * d1 - v * d0, u * h1 + v * h0
    if kind == POISSON_LOG:
        mean = math.exp(eta)
        return u - mean, mean
    if kind == GAMMA_LOGSCALE:
        t = u * math.exp(-eta)
        return t - v, t
    if kind == NORMAL_LOGSD:
        t = u * math.exp(-2.0 * eta)
        return t - 1.0, 2.0
    if kind == ASYM_LAPLACE:
        # the score jumps at the kink (any value there keeps the update exact: the working model
        # only has to be a function of the other trees); the curvature is the Fisher information
        if u > eta:
            return v * s, v * v
        if u < eta:
            return -v / s, v * v
        return 0.5 * v * (s - 1.0 / s), v * v
    res = u - eta  # STUDENT_T
    vs2 = v * s * s
    return (v + 1.0) * res / (vs2 + res * res), (v + 1.0) / ((v + 3.0) * s * s)


@numba.njit(cache=True, nogil=True)
def row_terms(kind, u, v, s, eta):
    """``(l, dl/deta, h)`` of one row: :func:`row_loglik` and :func:`row_derivs` together."""
    dl, h = row_derivs(kind, u, v, s, eta)
    return row_loglik(kind, u, v, s, eta), dl, h


# exp(eta) from a kept exp times a leaf's factor only inside this range: there the product is as
# accurate as exp itself; an overflow, underflow or NaN anywhere falls back to the per-row formula
E_LO, E_HI = 1e-300, 1e300


# the working rows from exp(eta) take (1 + x)^3 and a product with it: a narrower range
X_LO, X_HI = 1e-60, 1e60


@numba.njit(cache=True, nogil=True, inline="always")
def derivs_from_exp(kind, u, v, e):
    """:func:`row_derivs` of the log-link (Poisson) or logit (``LOGIT2``) family from ``e = exp(eta)``:
    no transcendental."""
    if kind == POISSON_LOG:
        return u - e, e
    t = 1.0 / (1.0 + e)  # 1 - p, with p = e t
    return u * t - v * e * t, (u + v) * e * t * t


@numba.njit(cache=True, nogil=True, inline="always")
def loglink_row(kind, u, v):
    """``(s, k)`` of a log-link row: its log-likelihood is ``s rho eta - k exp(rho eta)`` (Poisson:
    ``(u, 1)``, rho 1; Gamma log scale: ``(v, u)``, rho -1; Normal log sd: ``(1/2, u/2)``, rho -2)."""
    if kind == POISSON_LOG:
        return u, 1.0
    if kind == GAMMA_LOGSCALE:
        return v, u
    return 0.5, 0.5 * u


LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
