"""Observation models that are not Gaussian in the BART value, and the likelihood record that keeps
every tree update exact under them (docs/design.md section 1).

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

For tree ``j`` the working model is the second-order expansion of the log-likelihood at the fit
*without* tree ``j`` plus the constant that fits best there (``f - g_j + c``, :func:`_centred_rows`), with a
positive working curvature (the observed one for the log-concave
families, the Fisher information for Student-t, whose observed curvature turns negative in the
tails, for the Normal log-sd, whose observed curvature vanishes with the residual, and for the
asymmetric Laplace, whose log-likelihood is piecewise linear: ``b^2``, the variance of its score
``b kappa`` above the location and ``-b / kappa`` below, taken with probabilities ``1 / (1 +
kappa^2)`` and ``kappa^2 / (1 + kappa^2)``): ``z_i ~
N(g_j(x_i), 1 / w_i)``. It does not depend on tree ``j``, and every kernel's structure move is
reversible with respect to the tree posterior under it (leaves integrated out). The leaves of the
proposed structure ``T'`` are then drawn from ``q(mu' | T')``: per leaf, a Student-t (4 degrees of
freedom) at one Newton step of the leaf's *true* conditional from its working posterior mean
(:func:`_propose_leaves`; the working conditional alone is off by about ``delta^2 / 2`` on a log
link when the expansion is ``delta`` away, many posterior sds when counts are large). With
``m_w(T)`` the working marginal likelihood of ``T`` (the product of its leaves' Gaussian marginals),
``(T', mu')`` is accepted with probability ``min(1, exp(A(T', mu') - A(T, mu)))``, ``A(T, mu) = log
p(mu | T) + l(f_{-j} + g) - log m_w(T) - log q(mu | T)`` (:func:`_accept`): the Metropolis-Hastings
ratio of the joint proposal, in which the structure move's proposal ratio is ``m_w(T) / m_w(T')`` by
its reversibility and the tree prior cancels. The tree update is exact for the real likelihood.

>>> import math
>>> l, dl, h = row_terms(POISSON_LOG, 3.0, 0.0, 0.0, 0.0)
>>> l, dl, h
(-1.0, 2.0, 1.0)
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..engine.driver import register_likelihood
from ..engine.gaussian import leaf_loglik
from ..engine.loglink import leaf_laplace_at, leaf_mode
from ..engine.nodes import END, LEFT, START, VALUE
from ..engine.records import Pseudo
from ..engine.tree import add_tree, draw_leaves

LOGIT2, PROBIT2, POISSON_LOG, GAMMA_LOGSCALE, NORMAL_LOGSD, STUDENT_T, ASYM_LAPLACE = (np.int64(k) for k in range(7))

_LOG_HALF = math.log(0.5)
_SQRT1_2 = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# degrees of freedom of the refined leaf proposal and its log normalising constant
_Q_DF = 4.0
_Q_LOG_NORM = math.lgamma(0.5 * (_Q_DF + 1.0)) - math.lgamma(0.5 * _Q_DF) - 0.5 * math.log(_Q_DF * math.pi)
# on the log-link route q sits at the exact conditional mode with its curvature: 10 degrees of freedom
# keep tails heavier than the conditional's (a Gaussian q froze a chain started 2 prior sds off: its
# light tail made the far start all but impossible to leave), and accept more than 4 near the mode
# (one tree, 7 rows, Poisson: 0.82-0.89 against 0.75-0.79)
_L_DF = 10.0
_L_LOG_NORM = math.lgamma(0.5 * (_L_DF + 1.0)) - math.lgamma(0.5 * _L_DF) - 0.5 * math.log(_L_DF * math.pi)


class FamilyLik(NamedTuple):
    """Likelihood record of a family in :func:`row_terms` (see the module docstring).

    ``u, v, s``: per-row family data; ``a, b``: ``eta = a + b f``; ``mu0``, ``s2``: the leaf prior
    (``mu0`` is also where the search for a tree's expansion centre starts); ``f``: the BART value and
    ``lrow`` each row's log-likelihood there, kept current as proposals are accepted (``lnew``: at the
    proposal); ``g``: the fit of the tree being updated, ``gnew`` the proposal's (read from its leaves);
    ``z, r, w``: its working response, residual and weights;
    ``refine``: whether leaves are proposed from the Newton-refined ``q`` (else from the working
    conditional); ``acc``: ``A`` of the current tree and the leaf part of the proposal's; ``counts``:
    (proposals, accepted) since the record was built.

    ``slope``: the common ``b`` of every row when the family is on a log or logit link (Poisson,
    ``LOGIT2``) and ``b`` is the same in every row, else NaN. Then ``e = exp(eta)`` is kept per row at
    ``f``, and ``exp`` anywhere else is ``e`` times a factor per leaf (:func:`_exp_shift`): ``em`` at
    the fit without tree ``j``, ``enew`` at the proposal. ``lrow`` and ``lnew`` are scratch on that
    route (the accept step sums the rows' log-likelihood differences).

    ``leaf_exp``: 0 on the expansion route; on the log-link route (:func:`family_lik`) the slope ``c``
    of the leaves' ``exp(c mu)`` (the tree prior's ``leaf_exp``, :mod:`pymc_treesamplers.engine.loglink`).
    There ``slope`` is ``c`` and ``e = exp(rho eta)`` (``rho`` of :func:`loglink_row`).
    """

    kind: np.int64
    u: np.ndarray
    v: np.ndarray
    s: np.ndarray
    a: np.ndarray
    b: np.ndarray
    mu0: float
    s2: float
    f: np.ndarray
    lrow: np.ndarray
    lnew: np.ndarray
    g: np.ndarray
    z: np.ndarray
    r: np.ndarray
    w: np.ndarray
    refine: bool
    acc: np.ndarray
    counts: np.ndarray
    slope: float
    e: np.ndarray
    em: np.ndarray
    enew: np.ndarray
    leaf_exp: float
    gnew: np.ndarray


# the log-link families: a row's log-likelihood is ``s rho eta - k exp(rho eta)`` (loglink_row)
_LOGLINK_RHO = {int(POISSON_LOG): 1.0, int(GAMMA_LOGSCALE): -1.0, int(NORMAL_LOGSD): -2.0}


def family_lik(kind, u, v, s, a, b, mu0, s2, f, refine=True, laplace=None) -> FamilyLik:
    """A :class:`FamilyLik` over ``n`` rows (arrays are copied to float64; ``f``: the current BART value).

    ``laplace``: take the log-link route (leaves integrated by :mod:`pymc_treesamplers.engine.loglink`, exact
    sums, no expansion point) where it applies, a log-link family with one slope ``b`` in every row
    (None: wherever it applies; False: the expansion route, as for the other families). The step
    gives its tree prior the record's ``leaf_exp``.

    >>> lik = family_lik(POISSON_LOG, [1.0, 2.0], 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, [0.0, 0.0])
    >>> lik.u.tolist(), lik.b.tolist()
    ([1.0, 2.0], [1.0, 1.0])
    """
    f = np.array(f, dtype=np.float64)
    n = f.shape[0]

    def col(x):
        return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=np.float64), (n,))).copy()

    a, b = col(a), col(b)
    common = n > 0 and np.isfinite(b[0]) and b[0] != 0.0 and np.all(b == b[0])
    if laplace is None:
        laplace = common and int(kind) in _LOGLINK_RHO
    elif laplace and not (common and int(kind) in _LOGLINK_RHO):
        raise ValueError("the log-link route needs a log-link family (Poisson, Gamma, Normal log sd) with one "
                         "nonzero slope in every row")
    slope, rho, leaf_exp = np.nan, 1.0, 0.0
    if laplace:
        rho = _LOGLINK_RHO[int(kind)]
        slope = leaf_exp = rho * float(b[0])
    elif kind in (LOGIT2, POISSON_LOG) and common:
        slope = float(b[0])
    with np.errstate(over="ignore", under="ignore"):
        e = np.exp(rho * (a + b * f)) if np.isfinite(slope) else np.zeros(0)
    lik = FamilyLik(np.int64(kind), col(u), col(v), col(s), a, b, float(mu0), float(s2), f, np.zeros(n),
                    np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), bool(refine), np.zeros(2),
                    np.zeros(2, dtype=np.int64), slope, e, np.zeros(e.shape[0]), np.zeros(e.shape[0]),
                    float(leaf_exp), np.zeros(n))
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
_E_LO, _E_HI = 1e-300, 1e300
# the working rows from exp(eta) take (1 + x)^3 and a product with it: a narrower range
_X_LO, _X_HI = 1e-60, 1e60


@numba.njit(cache=True, nogil=True, inline="always")
def _derivs_from_exp(kind, u, v, e):
    """:func:`row_derivs` of the log-link (Poisson) or logit (``LOGIT2``) family from ``e = exp(eta)``:
    no transcendental."""
    if kind == POISSON_LOG:
        return u - e, e
    t = 1.0 / (1.0 + e)  # 1 - p, with p = e t
    return u * t - v * e * t, (u + v) * e * t * t


@numba.njit(cache=True, nogil=True, inline="always")
def _shifted_derivs(lik, i, x, ex):
    """Row ``i``'s ``(dl/deta, h)`` at the fit without the tree being updated plus ``x``
    (``ex = exp(slope * x)`` on the kept-exp route, unused otherwise)."""
    if lik.e.shape[0] > 0:
        e = lik.em[i] * ex
        if _E_LO < e < _E_HI:
            return _derivs_from_exp(lik.kind, lik.u[i], lik.v[i], e)
    return row_derivs(lik.kind, lik.u[i], lik.v[i], lik.s[i], lik.a[i] + lik.b[i] * (lik.f[i] - lik.g[i] + x))


@numba.njit(cache=True, nogil=True, inline="always")
def _exp_shift(lik, x):
    """``exp(slope * x)``, the factor that moves a kept ``exp(eta)`` by ``x`` in ``f`` (1 off that route)."""
    return math.exp(lik.slope * x) if lik.e.shape[0] > 0 else 1.0


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
    """Tree ``j``'s working pseudo-data (module docstring); saves its fit in ``lik.g`` and its ``A``."""
    if lik.leaf_exp != 0.0:
        _loglink_pseudo(lik, tree)
        return Pseudo(lik.r, lik.w, 1)
    # expand at the fit without tree j plus the constant that fits best there (a function of the other
    # trees only, so every kernel stays reversible under the working model)
    kept = lik.e.shape[0] > 0
    if kept:
        _scatter_leaves(tree, lik.g, lik.em, -lik.slope)
        for i in range(lik.g.shape[0]):
            lik.em[i] *= lik.e[i]  # exp(eta) at the fit without tree j
    else:
        lik.g[:] = 0.0
        add_tree(tree, lik.g, 1.0)
    total = _centred_rows(lik, kept)
    if lik.refine:
        ti = tree.ints
        for k in range(tree.nn[0]):
            if ti[k, LEFT] < 0:
                total += _leaf_part(lik, tree.perm, ti[k, START], ti[k, END], tree.floats[k, VALUE], None)[0]
    lik.acc[0] = total
    return Pseudo(lik.r, lik.w, 1)


# Newton steps of the expansion centre: at most CENTER_STEPS, each at most CENTER_MAX prior sds, until one
# would move it less than CENTER_TOL prior sds (the working model needs a point near the leaves, not the mode;
# m = 50, 2 chains: acceptance at 0.5 as at 0.1 within 0.02 on ionosphere, biopsy (probit) and the bike counts
# (negative binomial), with 1-2 passes per tree instead of 2-3; 1 sd lost 0.07 on the bikes)
CENTER_STEPS, CENTER_MAX, CENTER_TOL = 6, 2.0, 0.5


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _centred_rows(lik, kept):
    """The working rows of tree ``j`` expanded at ``f_{-j} + c``, where ``c`` maximises ``sum_i l(a_i + b_i
    (f_{-j, i} + c)) + log N(c; mu0, s2)``: damped Newton from ``mu0``, each step read off the working rows
    at the current ``c`` (``sum w (z - c)`` is the score, ``sum w`` the information), so a centre that is
    already good costs one pass. ``c`` depends on the other trees only. At the leaf prior mean instead, one
    tree on small counts with ``mu0`` off the data froze every sampler (acceptance 0.002-0.04). Returns the
    rows' part of ``A`` (see :func:`family_pseudo`)."""
    prec0 = 1.0 / lik.s2
    sd = math.sqrt(lik.s2)
    c = lik.mu0
    total = 0.0
    for it in range(CENTER_STEPS):
        if kept:
            total = _pseudo_kept_exp(lik, c)
        else:
            total = _pseudo_rows(lik, c)
        score, info = score_info(lik.w, lik.z, c)
        step = (score - (c - lik.mu0) * prec0) / (info + prec0)
        if not (abs(step) >= CENTER_TOL * sd) or it == CENTER_STEPS - 1:  # also NaN: keep these rows
            break
        c += max(-CENTER_MAX * sd, min(CENTER_MAX * sd, step))
    return total


@numba.njit(cache=True, nogil=True, fastmath={"reassoc"})
def score_info(w, z, c):
    """``(sum w (z - c), sum w)`` in any order (vectorised): a change of rounding only."""
    score = 0.0
    info = 0.0
    for i in range(w.shape[0]):
        score += w[i] * (z[i] - c)
        info += w[i]
    return score, info


@numba.njit(cache=True, nogil=True)
def _pseudo_rows(lik, c):
    """:func:`family_pseudo`'s rows expanded at ``f_{-j} + c`` by the per-row formula; returns the rows' part of
    ``A`` (their log-likelihood, and minus their working log-likelihood with working leaves)."""
    total = 0.0
    g = lik.g
    for i in range(g.shape[0]):
        b = lik.b[i]
        dl, h = row_derivs(lik.kind, lik.u[i], lik.v[i], lik.s[i], lik.a[i] + b * (lik.f[i] - g[i] + c))
        set_working_row(lik, i, c, b * dl, b * b * h)
        total += lik.lrow[i]
        if not lik.refine:  # A = l - l_w: minus the working log-likelihood of the current tree
            total += 0.5 * lik.w[i] * lik.r[i] * lik.r[i]
    return total


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _pseudo_kept_exp(lik, c):
    """:func:`family_pseudo`'s rows on the kept-exp route, expanded at ``c``: ``exp`` at the fit without the
    tree (``em``, set by the caller) times one factor. Returns the rows' part of ``A`` without the
    log-likelihood (the accept step adds the rows' differences)."""
    # everything in row order, which streams, with one division per row, no call and no loop-carried sum
    # (rows do not wait for each other)
    ec = _exp_shift(lik, c)
    slope = lik.slope
    poisson = lik.kind == POISSON_LOG
    bad = 0
    for i in range(lik.g.shape[0]):
        em = lik.em[i]
        x = em * ec  # exp(eta) at the expansion point
        u = lik.u[i]
        if poisson:  # score u - x, curvature x (in eta)
            a = slope * x
            w = slope * a
            step = (u - x) / a
        else:  # score (u - v x) / (1 + x), curvature (u + v) x / (1 + x)^2, from one reciprocal
            v = lik.v[i]
            b1 = 1.0 + x
            a = slope * (u + v) * x
            rec = 1.0 / (a * b1 * b1)
            w = slope * a * a * rec
            step = (u - v * x) * b1 * b1 * b1 * rec
        ok = _X_LO < x < _X_HI
        bad += not ok
        if not (ok and w > 0.0 and w < np.inf):  # as set_working_row: no working information
            w = 0.0
            step = 0.0
        lik.w[i] = w
        lik.z[i] = c + step
        lik.r[i] = lik.z[i] - lik.g[i]
    if bad > 0:  # rows where the kept exp is out of range: the per-row formula
        for i in range(lik.g.shape[0]):
            if not (_X_LO < lik.em[i] * ec < _X_HI):
                dl, h = row_derivs(lik.kind, lik.u[i], lik.v[i], lik.s[i], lik.a[i] + slope * (lik.f[i] - lik.g[i] + c))
                set_working_row(lik, i, c, slope * dl, slope * slope * h)
    return 0.0 if lik.refine else _half_wrr(lik.w, lik.r)


@numba.njit(cache=True, nogil=True, fastmath={"reassoc"})
def _half_wrr(w, r):
    """``sum(w r^2) / 2`` in any order (vectorised): a change of rounding only."""
    total = 0.0
    for i in range(w.shape[0]):
        total += w[i] * r[i] * r[i]
    return 0.5 * total


@numba.njit(cache=True, nogil=True)
def _scatter_leaves(tree, value, factor, scale):
    """Each row's leaf value in ``value`` (unless it is empty) and ``exp(scale * value)`` in ``factor``:
    one ``exp`` per leaf."""
    ti = tree.ints
    perm = tree.perm
    for k in range(tree.nn[0]):
        if ti[k, LEFT] < 0:
            val = tree.floats[k, VALUE]
            fac = math.exp(scale * val)
            if value.shape[0] > 0:
                for q in range(ti[k, START], ti[k, END]):
                    value[perm[q]] = val
                    factor[perm[q]] = fac
            else:
                for q in range(ti[k, START], ti[k, END]):
                    factor[perm[q]] = fac


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


@numba.njit(cache=True, nogil=True, inline="always")
def metropolis(rng, counts, log_ratio):
    """Count a proposal in ``counts[0]`` and accept it with probability ``min(1, exp(log_ratio))`` (counted in
    ``counts[1]``); written so that a NaN ratio rejects. The one Metropolis-Hastings decision of every corrected
    likelihood record."""
    counts[0] += 1
    if not (log_ratio >= 0.0 or rng.random() < math.exp(log_ratio)):
        return False
    counts[1] += 1
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def commit_exp_rows(lik):
    """An accepted proposal's fit and per-row ``exp`` terms become the record's: ``f += gnew - g``, ``e = enew``."""
    for i in range(lik.f.shape[0]):
        lik.f[i] += lik.gnew[i] - lik.g[i]
        lik.e[i] = lik.enew[i]


@numba.njit(cache=True, nogil=True, inline="always")
def _working_sums(lik, perm, s, e):
    """``(sum w, sum w z)`` of the working pseudo-data over a leaf's rows ``perm[s:e]``, in row order."""
    W = 0.0
    S = 0.0
    for t in range(s, e):
        i = perm[t]
        W += lik.w[i]
        S += lik.w[i] * lik.z[i]
    return W, S


@numba.njit(cache=True, nogil=True)
def _leaf_part(lik, perm, s, e, value, rng):
    """A leaf's part of ``A`` (``log p(value) - log(working marginal) - log q(value)``) and its value:
    ``value`` given, or drawn from ``q`` when ``rng`` is given. ``q``: one Newton (Fisher-scoring)
    step of the leaf's true conditional from its working posterior mean, a function of the leaf's
    rows and the other trees only."""
    W, S = _working_sums(lik, perm, s, e)
    prec0 = 1.0 / lik.s2
    m = (S + lik.mu0 * prec0) / (W + prec0)
    score = -(m - lik.mu0) * prec0
    prec = prec0
    em = _exp_shift(lik, m)
    for t in range(s, e):
        i = perm[t]
        b = lik.b[i]
        dl, h = _shifted_derivs(lik, i, m, em)
        score += b * dl
        prec += b * b * h
    m1 = m + score / prec
    # q is a Student-t, not a Gaussian: a precision read at one point can be far too high where the
    # current leaf sits (the Normal log-sd's curvature grows like exp(-2 value)); light tails there
    # would make the current state all but impossible to propose back and freeze the chain
    if rng is not None:
        value = m1 + rng.standard_normal() / math.sqrt(prec * rng.standard_gamma(0.5 * _Q_DF) * 2.0 / _Q_DF)
    d0 = value - lik.mu0
    d1 = value - m1
    log_prior = -0.5 * d0 * d0 * prec0 + 0.5 * math.log(prec0) - _LOG_SQRT_2PI
    log_q = _Q_LOG_NORM + 0.5 * math.log(prec) - 0.5 * (_Q_DF + 1.0) * math.log1p(d1 * d1 * prec / _Q_DF)
    return log_prior - log_q - leaf_loglik(lik, W, S), value


@numba.njit(cache=True, nogil=True)
def _propose_leaves(rng, lik, t, prior, ps):
    loglink = lik.leaf_exp != 0.0
    if not (loglink or lik.refine):
        draw_leaves(rng, t, prior, ps)
        return
    # ps.r holds the working response z here (the driver added the old tree back)
    ti = t.ints
    part = 0.0
    for k in range(t.nn[0]):
        if ti[k, LEFT] < 0:
            s = ti[k, START]
            e = ti[k, END]
            if loglink:
                terms, val = _loglink_leaf_part(lik, t.perm, s, e, 0.0, rng)
            else:
                terms, val = _leaf_part(lik, t.perm, s, e, 0.0, rng)
            t.floats[k, VALUE] = val
            part += terms
            for q in range(s, e):
                ps.r[t.perm[q]] -= val
    lik.acc[1] = part


@numba.njit(cache=True, nogil=True)
def _accept(rng, lik, j, old, new, ps):
    # the proposal's fit is read from its leaves (gnew), not from z - r: z can be large where the working
    # weight is small, and z - r would lose the fit's digits; old fit g saved by family_pseudo; the rows'
    # log-likelihood at the current f is kept in lrow (or its differences summed, below)
    if lik.leaf_exp != 0.0:
        return _loglink_accept(rng, lik, new)
    total = lik.acc[1] if lik.refine else 0.0
    if lik.e.shape[0] > 0:
        total += _delta_kept_exp(lik, new)
    else:
        lik.gnew[:] = 0.0
        add_tree(new, lik.gnew, 1.0)
        for i in range(lik.f.shape[0]):
            b = lik.b[i]
            l_new = row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i],
                               lik.a[i] + b * (lik.f[i] - lik.g[i] + lik.gnew[i]))
            lik.lnew[i] = l_new
            total += l_new
            if not lik.refine:  # minus the proposal's working log-likelihood (r: the working residual)
                total += 0.5 * lik.w[i] * lik.r[i] * lik.r[i]
    log_ratio = total - lik.acc[0]
    if not metropolis(rng, lik.counts, log_ratio):
        return False
    if lik.e.shape[0] > 0:
        commit_exp_rows(lik)
    else:
        for i in range(lik.f.shape[0]):
            lik.f[i] += lik.gnew[i] - lik.g[i]
            lik.lrow[i] = lik.lnew[i]
    return True


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _delta_kept_exp(lik, new):
    """On the kept-exp route: the log-likelihood of the proposal ``new`` minus the current one, summed
    over the rows (``exp`` at the proposal is ``em`` times the factor of the row's leaf in ``new``,
    saved in ``enew``), plus minus the proposal's working log-likelihood with working leaves.

    Poisson needs no transcendental per row. Logit needs ``log((1 + e_new) / (1 + e))`` per row, times
    ``u + v``: with ``u + v = 1`` (Bernoulli) the ratios of 8 rows are multiplied and one log taken.
    Each row's term goes to ``lnew`` (the ratios to ``lrow``), then one sum: no row waits for the
    previous row's addition."""
    _scatter_leaves(new, lik.gnew, lik.enew, lik.slope)
    slope = lik.slope
    poisson = lik.kind == POISSON_LOG
    n = lik.f.shape[0]
    bad = 0
    for i in range(n):
        u = lik.u[i]
        d_eta = slope * (lik.gnew[i] - lik.g[i])
        e0 = lik.e[i]
        e1 = lik.em[i] * lik.enew[i]
        lik.enew[i] = e1
        term = 0.5 * lik.w[i] * lik.r[i] * lik.r[i] if not lik.refine else 0.0
        # a ratio of at most exp(40) keeps a product of 8 within the doubles
        if _E_LO < e1 < _E_HI and _E_LO < e0 < _E_HI and abs(d_eta) < 40.0:
            if poisson:
                term += u * d_eta - (e1 - e0)
            else:
                term += u * d_eta
                lik.lrow[i] = (1.0 + e1) / (1.0 + e0)
        else:
            bad += 1
            lik.lrow[i] = 1.0
        lik.lnew[i] = term
    delta = _sum(lik.lnew)
    if not poisson:
        delta -= _log_ratios(lik.lrow, lik.u, lik.v)
    if bad > 0:  # the stable per-row formula where the kept exp over- or underflows
        for i in range(n):
            d_eta = slope * (lik.gnew[i] - lik.g[i])
            e0 = lik.e[i]
            e1 = lik.enew[i]
            if not (_E_LO < e1 < _E_HI and _E_LO < e0 < _E_HI and abs(d_eta) < 40.0):
                eta0 = lik.a[i] + slope * lik.f[i]
                delta += row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i], eta0 + d_eta)
                delta -= row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i], eta0)
                lik.enew[i] = math.exp(eta0 + d_eta)
    return delta


@numba.njit(cache=True, nogil=True, fastmath={"reassoc"})
def _sum(x):
    """``sum(x)`` in any order (vectorised): a change of rounding only."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    return total


@numba.njit(cache=True, nogil=True)
def _log_ratios(ratio, u, v):
    """``sum_i (u_i + v_i) log(ratio_i)``: one log per 8 rows where ``u + v = 1`` (ratios within
    ``exp(+-40)``), else one per row."""
    n = ratio.shape[0]
    total = 0.0
    for b in range(0, n, 8):
        end = min(b + 8, n)
        unit = True
        prod = 1.0
        for i in range(b, end):
            prod *= ratio[i]
            unit = unit and u[i] + v[i] == 1.0
        if unit:
            total += math.log(prod)
        else:
            for i in range(b, end):
                total += (u[i] + v[i]) * math.log(ratio[i])
    return total


# ----------------------------------------------------------------------- the log-link route
# Rows enter a leaf as ``s c mu - k exp(rho eta_{-j}) exp(c mu)`` (c = rho b): the kernels see
# ``w = k exp(rho eta_{-j})`` and ``z = s / w``, so a leaf's sums (W, S) are the exact sufficient
# statistics of its likelihood and its marginal is the Laplace approximation of loglink.py
# (the tree prior's leaf_exp = c makes every kernel use it). The proposal's leaves come from a
# Student-t at each leaf's exact conditional mode with the curvature there; the correction then
# only has the Laplace error and the proposal's shape to undo. The proposal's fit is read from
# its leaves, not from z - r: z is large where w is small, and z - r would lose the fit's digits.

_W_TINY = 1e-290


@numba.njit(cache=True, nogil=True, inline="always")
def loglink_row(kind, u, v):
    """``(s, k)`` of a log-link row: its log-likelihood is ``s rho eta - k exp(rho eta)`` (Poisson:
    ``(u, 1)``, rho 1; Gamma log scale: ``(v, u)``, rho -1; Normal log sd: ``(1/2, u/2)``, rho -2)."""
    if kind == POISSON_LOG:
        return u, 1.0
    if kind == GAMMA_LOGSCALE:
        return v, u
    return 0.5, 0.5 * u


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _loglink_pseudo(lik, tree):
    _scatter_leaves(tree, lik.g, lik.em, -lik.slope)
    rho = lik.slope / lik.b[0]
    for i in range(lik.g.shape[0]):
        e = lik.e[i]
        if _E_LO < e < _E_HI:
            em = lik.em[i] * e  # exp(rho eta) without tree j
        else:  # the kept exp under- or overflowed: from eta itself
            em = math.exp(rho * (lik.a[i] + lik.b[i] * (lik.f[i] - lik.g[i])))
        lik.em[i] = em
        s, k = loglink_row(lik.kind, lik.u[i], lik.v[i])
        w = k * em
        if not w > _W_TINY:  # also NaN: the row still counts s in its leaf's sums
            w = _W_TINY
        lik.w[i] = w
        lik.z[i] = s / w
        lik.r[i] = lik.z[i] - lik.g[i]
    total = 0.0
    ti = tree.ints
    for k in range(tree.nn[0]):
        if ti[k, LEFT] < 0:
            total += _loglink_leaf_part(lik, tree.perm, ti[k, START], ti[k, END], tree.floats[k, VALUE], None)[0]
    lik.acc[0] = total


@numba.njit(cache=True, nogil=True)
def _loglink_leaf_part(lik, perm, s, e, value, rng):
    """As :func:`_leaf_part` on the log-link route: ``q`` a Student-t at the leaf's exact conditional
    mode, with the conditional's curvature there."""
    W, S = _working_sums(lik, perm, s, e)
    c = lik.leaf_exp
    m, H = leaf_mode(c, W, S, lik.mu0, lik.s2)
    if rng is not None:
        value = m + rng.standard_normal() / math.sqrt(H * rng.standard_gamma(0.5 * _L_DF) * 2.0 / _L_DF)
    prec0 = 1.0 / lik.s2
    d0 = value - lik.mu0
    d1 = value - m
    log_prior = -0.5 * d0 * d0 * prec0 + 0.5 * math.log(prec0) - _LOG_SQRT_2PI
    log_q = _L_LOG_NORM + 0.5 * math.log(H) - 0.5 * (_L_DF + 1.0) * math.log1p(d1 * d1 * H / _L_DF)
    return log_prior - log_q - leaf_laplace_at(c, W, S, lik.mu0, lik.s2, m, H), value


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _loglink_accept(rng, lik, new):
    # the proposal's leaf value per row (gnew) and exp(c value) (enew), from its leaves
    _scatter_leaves(new, lik.gnew, lik.enew, lik.slope)
    c = lik.slope
    rho = c / lik.b[0]
    bad = 0
    for i in range(lik.f.shape[0]):
        s, k = loglink_row(lik.kind, lik.u[i], lik.v[i])
        e0 = lik.e[i]
        e1 = lik.em[i] * lik.enew[i]
        lik.enew[i] = e1
        ok = _E_LO < e0 < _E_HI and _E_LO < e1 < _E_HI
        bad += not ok
        lik.lrow[i] = s * c * (lik.gnew[i] - lik.g[i]) - k * (e1 - e0) if ok else 0.0
    log_ratio = lik.acc[1] + _sum(lik.lrow) - lik.acc[0]
    if bad > 0:  # rows whose exp under- or overflowed: the per-row formula from eta
        for i in range(lik.f.shape[0]):
            if not (_E_LO < lik.e[i] < _E_HI and _E_LO < lik.enew[i] < _E_HI):
                eta0 = rho * (lik.a[i] + lik.b[i] * lik.f[i])
                eta1 = eta0 + c * (lik.gnew[i] - lik.g[i])
                s, k = loglink_row(lik.kind, lik.u[i], lik.v[i])
                log_ratio += s * (eta1 - eta0) - k * (math.exp(eta1) - math.exp(eta0))
                lik.enew[i] = math.exp(eta1)
    if not metropolis(rng, lik.counts, log_ratio):
        return False
    commit_exp_rows(lik)
    return True


register_likelihood(FamilyLik, family_pseudo, _accept, _propose_leaves)


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
