"""Observation models that are not Gaussian in the BART value, and the likelihood record that keeps
every tree update exact under them (DESIGN.md section 1).

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
=================  ==========================================  ===================================

For tree ``j`` the working model is the second-order expansion of the log-likelihood at the fit
*without* tree ``j`` plus the prior mean of a leaf (``f - g_j + mu0``: where ``f`` is expected to be
before tree ``j`` is seen), with a positive working curvature (the observed one for the log-concave
families, the Fisher information for Student-t, whose observed curvature turns negative in the
tails): ``z_i ~ N(g_j(x_i), 1 / w_i)``. It does not depend on tree
``j``, every kernel is reversible with respect to the tree posterior under it, and the proposal
``(T', mu')`` (structure move, then leaves from their working conditional) is accepted with
probability ``min(1, exp{[l(f') - l(f)] - [l_w(g') - l_w(g)]})`` (:func:`_accept`): the priors
cancel, and the tree update is exact for the real likelihood.

>>> import math
>>> l, dl, h = row_terms(POISSON_LOG, 3.0, 0.0, 0.0, 0.0)
>>> l, dl, h
(-1.0, 2.0, 1.0)
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..records import Pseudo
from ..tree import add_tree
from .driver import register_likelihood

LOGIT2, PROBIT2, POISSON_LOG, GAMMA_LOGSCALE, NORMAL_LOGSD, STUDENT_T = (np.int64(k) for k in range(6))

_LOG_HALF = math.log(0.5)
_SQRT1_2 = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class FamilyLik(NamedTuple):
    """Likelihood record of a family in :func:`row_terms` (see the module docstring).

    ``u, v, s``: per-row family data; ``a, b``: ``eta = a + b f``; ``center``: the leaf prior mean,
    where a tree's expansion is centred; ``f``: the BART value and ``lrow`` each row's log-likelihood
    there, kept current as proposals are accepted (``lnew``: at the proposal); ``g``: the fit of the
    tree being updated; ``z, r, w``: its working response, residual and weights; ``counts``:
    (proposals, accepted) since the record was built.
    """

    kind: np.int64
    u: np.ndarray
    v: np.ndarray
    s: np.ndarray
    a: np.ndarray
    b: np.ndarray
    center: float
    f: np.ndarray
    lrow: np.ndarray
    lnew: np.ndarray
    g: np.ndarray
    z: np.ndarray
    r: np.ndarray
    w: np.ndarray
    counts: np.ndarray


def family_lik(kind, u, v, s, a, b, center, f) -> FamilyLik:
    """A :class:`FamilyLik` over ``n`` rows (arrays are copied to float64; ``f``: the current BART value).

    >>> lik = family_lik(POISSON_LOG, [1.0, 2.0], 0.0, 0.0, 0.0, 1.0, 0.0, [0.0, 0.0])
    >>> lik.u.tolist(), lik.b.tolist()
    ([1.0, 2.0], [1.0, 1.0])
    """
    f = np.array(f, dtype=np.float64)
    n = f.shape[0]

    def col(x):
        return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=np.float64), (n,))).copy()

    lik = FamilyLik(np.int64(kind), col(u), col(v), col(s), col(a), col(b), float(center), f, np.zeros(n),
                    np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(2, dtype=np.int64))
    _row_logliks(lik, f, lik.lrow)
    return lik


@numba.njit(cache=True, nogil=True)
def log_ndtr(x):
    """``log Phi(x)``, accurate in both tails (asymptotic series below -20, where erfc underflows
    towards the subnormals)."""
    if x > -20.0:
        return math.log(0.5 * math.erfc(-x * _SQRT1_2))
    x2 = x * x
    series = 1.0 - 1.0 / x2 + 3.0 / (x2 * x2) - 15.0 / (x2 * x2 * x2)
    return -0.5 * x2 - _LOG_SQRT_2PI - math.log(-x) + math.log(series)


@numba.njit(cache=True, nogil=True)
def _probit_side(x):
    """``(log Phi(x), d/dx, -d2/dx2)``: the inverse Mills ratio ``lam = phi/Phi`` and ``lam (x + lam)``."""
    lp = log_ndtr(x)
    lam = math.exp(-0.5 * x * x - _LOG_SQRT_2PI - lp)
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
        return t - 1.0, 2.0 * t
    res = u - eta  # STUDENT_T
    vs2 = v * s * s
    return (v + 1.0) * res / (vs2 + res * res), (v + 1.0) / ((v + 3.0) * s * s)


@numba.njit(cache=True, nogil=True)
def row_terms(kind, u, v, s, eta):
    """``(l, dl/deta, h)`` of one row: :func:`row_loglik` and :func:`row_derivs` together."""
    dl, h = row_derivs(kind, u, v, s, eta)
    return row_loglik(kind, u, v, s, eta), dl, h


@numba.njit(cache=True, nogil=True)
def _row_logliks(lik, f, out):
    for i in range(f.shape[0]):
        out[i] = row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i], lik.a[i] + lik.b[i] * f[i])


def family_loglik(lik, f) -> float:
    """``sum_i l(a_i + b_i f_i)`` under the record's family (up to an f-free term)."""
    out = np.empty(len(f))
    _row_logliks(lik, np.asarray(f, dtype=np.float64), out)
    return float(out.sum())


@numba.njit(cache=True, nogil=True)
def family_pseudo(lik, j, tree):
    """Tree ``j``'s working pseudo-data (module docstring); saves its fit in ``lik.g``."""
    # expand at the fit without tree j (plus the leaf prior mean): independent of tree j
    g = lik.g
    g[:] = 0.0
    add_tree(tree, g, 1.0)
    c = lik.center
    for i in range(g.shape[0]):
        b = lik.b[i]
        dl, h = row_derivs(lik.kind, lik.u[i], lik.v[i], lik.s[i], lik.a[i] + b * (lik.f[i] - g[i] + c))
        set_working_row(lik, i, c, b * dl, b * b * h)
    return Pseudo(lik.r, lik.w)


@numba.njit(cache=True, nogil=True, inline="always")
def set_working_row(lik, i, c, score, curv):
    """Row ``i``'s working response and weight from the expansion at ``c`` (score and curvature in the
    tree's value there), and its residual given the tree's fit ``lik.g``."""
    if curv > 0.0 and math.isfinite(curv):
        lik.w[i] = curv
        lik.z[i] = c + score / curv
    else:  # the row does not move with f here: it carries no working information
        lik.w[i] = 0.0
        lik.z[i] = c
    lik.r[i] = lik.z[i] - lik.g[i]


@numba.njit(cache=True, nogil=True)
def _accept(rng, lik, j, old, new, ps):
    # new fit g' = z - r (the driver took it off the residual); old fit g saved by family_pseudo;
    # the rows' log-likelihood at the current f is kept in lrow
    log_ratio = 0.0
    for i in range(lik.f.shape[0]):
        b = lik.b[i]
        g_new = lik.z[i] - lik.r[i]
        g_old = lik.g[i]
        l_new = row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i], lik.a[i] + b * (lik.f[i] - g_old + g_new))
        lik.lnew[i] = l_new
        d_old = lik.z[i] - g_old
        log_ratio += l_new - lik.lrow[i] + 0.5 * lik.w[i] * (lik.r[i] * lik.r[i] - d_old * d_old)
    lik.counts[0] += 1
    # written so that a NaN ratio rejects
    if not (log_ratio >= 0.0 or rng.random() < math.exp(log_ratio)):
        return False
    lik.counts[1] += 1
    for i in range(lik.f.shape[0]):
        lik.f[i] += lik.z[i] - lik.r[i] - lik.g[i]
        lik.lrow[i] = lik.lnew[i]
    return True


register_likelihood(FamilyLik, family_pseudo, _accept)


@numba.njit(cache=True, nogil=True)
def constant_score(lik, c):
    """Score and working information in ``c`` of ``sum_i l(a_i + b_i c)``: one Fisher-scoring step."""
    score = 0.0
    info = 0.0
    for i in range(lik.f.shape[0]):
        b = lik.b[i]
        dl, h = row_derivs(lik.kind, lik.u[i], lik.v[i], lik.s[i], lik.a[i] + b * c)
        score += b * dl
        info += b * b * h
    return score, info
