"""The likelihood record of a non-Gaussian observation family (the row maths are :mod:`.observation`'s),
which keeps every tree update exact under it (docs/design.md section 1).

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

Trees whose leaves hold coefficient vectors on a basis (:mod:`pymc_treesamplers.engine.basisleaf`) take the same
expansion, in the term they add, through :class:`BasisFamilyLik`: the working pseudo-data are the term's, and the
proposal's fit is read from its coefficients and the rows' basis. Its leaves are drawn from their working
conditional (``q`` is that conditional, so ``A`` has no leaf part) or, when the record's ``refine`` is set, from
the vector twin of the refined ``q`` (:func:`_basis_leaf_part`: a multivariate Student-t at one Newton step of the
leaf's true conditional). A spike and slab over the leaves' type (``response="mix"``) keeps the working
conditional, and the record is made without the kept ``exp``, which is written for one value per leaf.

>>> lik = family_lik(POISSON_LOG, [1.0, 2.0], 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, [0.0, 0.0])
>>> lik.leaf_exp
1.0
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..engine import (
    COEF,
    END,
    LEFT,
    START,
    VALUE,
    BasisPseudo,
    Pseudo,
    add_basis_fit,
    add_tree,
    basis_at,
    basis_dim,
    basis_posterior_mean,
    basis_rows,
    cholesky_lower,
    draw_basis_leaves,
    draw_leaves,
    leaf_loglik,
    parent_var,
    register_basis_record,
    register_likelihood,
    solve_lower,
    solve_upper,
)
from .correction import (
    CENTER_MAX,
    CENTER_STEPS,
    CENTER_TOL,
    commit_exp_rows,
    metropolis,
    scatter_leaves,
    score_info,
    set_working_row,
    unordered_sum,
    working_sums,
)
from .logleaves import loglink_accept, loglink_leaf_part, loglink_pseudo
from .observation import (
    E_HI,
    E_LO,
    LOG_SQRT_2PI,
    LOGIT2,
    LOGLINK_RHO,
    POISSON_LOG,
    X_HI,
    X_LO,
    column,
    derivs_from_exp,
    row_derivs,
    row_loglik,
)

# degrees of freedom of the refined leaf proposal and its log normalising constant
_Q_DF = 4.0


_Q_LOG_NORM = math.lgamma(0.5 * (_Q_DF + 1.0)) - math.lgamma(0.5 * _Q_DF) - 0.5 * math.log(_Q_DF * math.pi)


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


def family_lik(kind, u, v, s, a, b, mu0, s2, f, refine=True, laplace=None, kept_exp=True) -> FamilyLik:
    """A :class:`FamilyLik` over ``n`` rows (arrays are copied to float64; ``f``: the current BART value).

    ``laplace``: take the log-link route (leaves integrated by :mod:`pymc_treesamplers.engine.loglink`, exact
    sums, no expansion point) where it applies, a log-link family with one slope ``b`` in every row
    (None: wherever it applies; False: the expansion route, as for the other families). The step
    gives its tree prior the record's ``leaf_exp``. ``kept_exp``: keep ``exp(eta)`` per row where it applies
    (False for trees on a basis, :class:`BasisFamilyLik`).

    >>> lik = family_lik(POISSON_LOG, [1.0, 2.0], 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, [0.0, 0.0])
    >>> lik.u.tolist(), lik.b.tolist()
    ([1.0, 2.0], [1.0, 1.0])
    """
    f = np.array(f, dtype=np.float64)
    n = f.shape[0]

    a, b = column(a, n), column(b, n)
    common = n > 0 and np.isfinite(b[0]) and b[0] != 0.0 and np.all(b == b[0])
    if laplace is None:
        laplace = common and int(kind) in LOGLINK_RHO
    elif laplace and not (common and int(kind) in LOGLINK_RHO):
        raise ValueError("the log-link route needs a log-link family (Poisson, Gamma, Normal log sd) with one "
                         "nonzero slope in every row")
    slope, rho, leaf_exp = np.nan, 1.0, 0.0
    if laplace:
        rho = LOGLINK_RHO[int(kind)]
        slope = leaf_exp = rho * float(b[0])
    elif kept_exp and kind in (LOGIT2, POISSON_LOG) and common:
        slope = float(b[0])
    with np.errstate(over="ignore", under="ignore"):
        e = np.exp(rho * (a + b * f)) if np.isfinite(slope) else np.zeros(0)
    lik = FamilyLik(np.int64(kind), column(u, n), column(v, n), column(s, n), a, b, float(mu0), float(s2), f,
                    np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), bool(refine),
                    np.zeros(2), np.zeros(2, dtype=np.int64), slope, e, np.zeros(e.shape[0]), np.zeros(e.shape[0]),
                    float(leaf_exp), np.zeros(n))
    _row_logliks(lik, f, lik.lrow)
    return lik


@numba.njit(cache=True, nogil=True, inline="always")
def _shifted_derivs(lik, i, x, ex):
    """Row ``i``'s ``(dl/deta, h)`` at the fit without the tree being updated plus ``x``
    (``ex = exp(slope * x)`` on the kept-exp route, unused otherwise)."""
    if lik.e.shape[0] > 0:
        e = lik.em[i] * ex
        if E_LO < e < E_HI:
            return derivs_from_exp(lik.kind, lik.u[i], lik.v[i], e)
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
        loglink_pseudo(lik, tree)
        return Pseudo(lik.r, lik.w, None)
    # expand at the fit without tree j plus the constant that fits best there (a function of the other
    # trees only, so every kernel stays reversible under the working model)
    kept = lik.e.shape[0] > 0
    if kept:
        scatter_leaves(tree, lik.g, lik.em, -lik.slope)
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
    return Pseudo(lik.r, lik.w, None)


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
        ok = X_LO < x < X_HI
        bad += not ok
        if not (ok and w > 0.0 and w < np.inf):  # as set_working_row: no working information
            w = 0.0
            step = 0.0
        lik.w[i] = w
        lik.z[i] = c + step
        lik.r[i] = lik.z[i] - lik.g[i]
    if bad > 0:  # rows where the kept exp is out of range: the per-row formula
        for i in range(lik.g.shape[0]):
            if not (X_LO < lik.em[i] * ec < X_HI):
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
def _leaf_part(lik, perm, s, e, value, rng):
    """A leaf's part of ``A`` (``log p(value) - log(working marginal) - log q(value)``) and its value:
    ``value`` given, or drawn from ``q`` when ``rng`` is given. ``q``: one Newton (Fisher-scoring)
    step of the leaf's true conditional from its working posterior mean, a function of the leaf's
    rows and the other trees only."""
    W, S = working_sums(lik, perm, s, e)
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
    log_prior = -0.5 * d0 * d0 * prec0 + 0.5 * math.log(prec0) - LOG_SQRT_2PI
    log_q = _Q_LOG_NORM + 0.5 * math.log(prec) - 0.5 * (_Q_DF + 1.0) * math.log1p(d1 * d1 * prec / _Q_DF)
    return log_prior - log_q - leaf_loglik(lik, W, S), value


@numba.njit(cache=True, nogil=True)
def _propose_leaves(rng, lik, t, prior, pseudo):
    loglink = lik.leaf_exp != 0.0
    if not (loglink or lik.refine):
        draw_leaves(rng, t, prior, pseudo)
        return
    # pseudo.r holds the working response z here (the driver added the old tree back)
    ti = t.ints
    part = 0.0
    for k in range(t.nn[0]):
        if ti[k, LEFT] < 0:
            s = ti[k, START]
            e = ti[k, END]
            if loglink:
                terms, val = loglink_leaf_part(lik, t.perm, s, e, 0.0, rng)
            else:
                terms, val = _leaf_part(lik, t.perm, s, e, 0.0, rng)
            t.floats[k, VALUE] = val
            part += terms
            for q in range(s, e):
                pseudo.r[t.perm[q]] -= val
    lik.acc[1] = part


@numba.njit(cache=True, nogil=True)
def _accept(rng, lik, j, old, new, pseudo):
    # the proposal's fit is read from its leaves (gnew), not from z - r: z can be large where the working
    # weight is small, and z - r would lose the fit's digits; old fit g saved by family_pseudo; the rows'
    # log-likelihood at the current f is kept in lrow (or its differences summed, below)
    if lik.leaf_exp != 0.0:
        return loglink_accept(rng, lik, new)
    if lik.e.shape[0] == 0:
        lik.gnew[:] = 0.0
        add_tree(new, lik.gnew, 1.0)
    return _accept_fit(rng, lik, new)


@numba.njit(cache=True, nogil=True)
def _accept_fit(rng, lik, new):
    """:func:`_accept` once the proposal's fit is in ``lik.gnew`` (on the kept-exp route, read from ``new``)."""
    total = lik.acc[1] if lik.refine else 0.0
    if lik.e.shape[0] > 0:
        total += _delta_kept_exp(lik, new)
    else:
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
    scatter_leaves(new, lik.gnew, lik.enew, lik.slope)
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
        if E_LO < e1 < E_HI and E_LO < e0 < E_HI and abs(d_eta) < 40.0:
            if poisson:
                term += u * d_eta - (e1 - e0)
            else:
                term += u * d_eta
                lik.lrow[i] = (1.0 + e1) / (1.0 + e0)
        else:
            bad += 1
            lik.lrow[i] = 1.0
        lik.lnew[i] = term
    delta = unordered_sum(lik.lnew)
    if not poisson:
        delta -= _log_ratios(lik.lrow, lik.u, lik.v)
    if bad > 0:  # the stable per-row formula where the kept exp over- or underflows
        for i in range(n):
            d_eta = slope * (lik.gnew[i] - lik.g[i])
            e0 = lik.e[i]
            e1 = lik.enew[i]
            if not (E_LO < e1 < E_HI and E_LO < e0 < E_HI and abs(d_eta) < 40.0):
                eta0 = lik.a[i] + slope * lik.f[i]
                delta += row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i], eta0 + d_eta)
                delta -= row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i], eta0)
                lik.enew[i] = math.exp(eta0 + d_eta)
    return delta


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


register_likelihood(FamilyLik, family_pseudo, _accept, _propose_leaves)


class BasisFamilyLik(NamedTuple):
    """A :class:`FamilyLik` (expansion route, working leaves, no kept ``exp``) for a tree whose leaves hold
    coefficient vectors on a basis (module docstring): ``family`` and the chain's ``leaves`` record (the basis
    and the coefficients' prior), whose residual and weights are the family's working ones."""

    family: FamilyLik
    leaves: BasisPseudo


@numba.njit(cache=True, nogil=True)
def _basis_working(fam, b):
    """The chain's basis record on the family's working response and weights (a leaf's working statistics)."""
    return BasisPseudo(fam.z, fam.w, b.basis, b.mu0, b.s2, b.threads, b.chol, b.vec, b.stats, b.by_split, b.log_slab,
                       b.log_spike)


@numba.njit(cache=True, nogil=True)
def _basis_leaf_part(fam, lm, t, k, rng):
    """A basis leaf's part of ``A`` (``log p(beta) - log(working marginal) - log q(beta)``), for the coefficients
    in node ``k``'s columns ``COEF ..``: given, or drawn there from ``q`` when ``rng`` is given (the vector twin
    of :func:`_leaf_part`). ``lm``: the basis record on the working response (:func:`_basis_working`). ``q``: a
    multivariate Student-t (:data:`_Q_DF` degrees of freedom) at one Newton (Fisher-scoring) step of the leaf's
    true conditional from its working posterior mean, with that step's precision; a function of the leaf's rows
    and the other trees only."""
    d = basis_dim(lm)
    ti = t.ints
    s, e, col = ti[k, START], ti[k, END], parent_var(ti, k)
    st = np.empty(d + d * d)  # not the record's scratch rows: a kernel may hold a split's statistics there
    basis_rows(lm, t.perm, s, e, st, col)
    m = np.empty(d)
    log_marginal = basis_posterior_mean(lm, st, m)
    score = np.empty(d)
    prec = np.zeros((d, d))
    for j in range(d):
        score[j] = -(m[j] - lm.mu0[j]) / lm.s2[j]
        prec[j, j] = 1.0 / lm.s2[j]
    for q in range(s, e):
        i = t.perm[q]
        x = 0.0
        for j in range(d):
            x += basis_at(lm, i, j, col) * m[j]
        b = fam.b[i]
        dl, h = row_derivs(fam.kind, fam.u[i], fam.v[i], fam.s[i], fam.a[i] + b * (fam.f[i] - fam.g[i] + x))
        for j in range(d):
            bj = basis_at(lm, i, j, col)
            score[j] += b * dl * bj
            for u in range(j + 1):
                prec[j, u] += b * b * h * bj * basis_at(lm, i, u, col)
    half_logdet = cholesky_lower(prec, d)
    m1 = np.empty(d)
    solve_lower(prec, score, d)
    solve_upper(prec, score, m1, d)
    for j in range(d):
        m1[j] += m[j]
    value = t.floats[k, COEF : COEF + d]
    if rng is not None:  # as _leaf_part's: a Student-t, so the current state can be proposed back
        z = np.empty(d)
        for j in range(d):
            z[j] = rng.standard_normal()
        scale = 1.0 / math.sqrt(rng.standard_gamma(0.5 * _Q_DF) * 2.0 / _Q_DF)
        solve_upper(prec, z, value, d)
        for j in range(d):
            value[j] = m1[j] + value[j] * scale
    quad = 0.0  # (value - m1)^T prec (value - m1) = |L^T (value - m1)|^2
    for j in range(d):
        v = 0.0
        for u in range(j, d):
            v += prec[u, j] * (value[u] - m1[u])
        quad += v * v
    log_prior = 0.0
    for j in range(d):
        d0 = value[j] - lm.mu0[j]
        log_prior += -0.5 * d0 * d0 / lm.s2[j] - 0.5 * math.log(lm.s2[j]) - LOG_SQRT_2PI
    log_q = (math.lgamma(0.5 * (_Q_DF + d)) - math.lgamma(0.5 * _Q_DF) - 0.5 * d * math.log(_Q_DF * math.pi)
             + half_logdet - 0.5 * (_Q_DF + d) * math.log1p(quad / _Q_DF))
    return log_prior - log_q - log_marginal


@numba.njit(cache=True, nogil=True)
def _basis_family_pseudo(lik, j, tree):
    fam = lik.family
    fam.g[:] = 0.0
    add_basis_fit(tree, lik.leaves, fam.g, 1.0)
    total = _centred_rows(fam, False)
    if fam.refine:
        lm = _basis_working(fam, lik.leaves)
        ti = tree.ints
        for k in range(tree.nn[0]):
            if ti[k, LEFT] < 0:
                total += _basis_leaf_part(fam, lm, tree, k, None)
    fam.acc[0] = total
    b = lik.leaves
    return BasisPseudo(fam.r, fam.w, b.basis, b.mu0, b.s2, b.threads, b.chol, b.vec, b.stats, b.by_split, b.log_slab,
                       b.log_spike)


@numba.njit(cache=True, nogil=True)
def _basis_family_accept(rng, lik, j, old, new, pseudo):
    fam = lik.family
    fam.gnew[:] = 0.0
    add_basis_fit(new, lik.leaves, fam.gnew, 1.0)
    return _accept_fit(rng, fam, new)


@numba.njit(cache=True, nogil=True)
def _basis_family_leaves(rng, lik, t, prior, pseudo):
    fam = lik.family
    if not fam.refine:
        draw_basis_leaves(rng, t, prior, pseudo)
        return
    lm = _basis_working(fam, lik.leaves)
    ti = t.ints
    part = 0.0
    for k in range(t.nn[0]):
        if ti[k, LEFT] < 0:
            part += _basis_leaf_part(fam, lm, t, k, rng)
    fam.acc[1] = part
    add_basis_fit(t, pseudo, pseudo.r, -1.0)  # as draw_basis_leaves leaves the record: the proposal's residual


def _basis_family_record(lik: FamilyLik, leaves: BasisPseudo) -> BasisFamilyLik:
    if lik.leaf_exp != 0.0 or lik.e.shape[0] > 0:
        raise ValueError("a FamilyLik for basis leaves must be on the expansion route with no kept exp "
                         "(family_lik(..., laplace=False, kept_exp=False))")
    if leaves.log_spike != -math.inf:  # the refined q is written for free coefficients, not a spike and slab
        lik = lik._replace(refine=False)
    return BasisFamilyLik(lik, leaves)


register_likelihood(BasisFamilyLik, _basis_family_pseudo, _basis_family_accept, _basis_family_leaves)
register_basis_record(FamilyLik, _basis_family_record)


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
