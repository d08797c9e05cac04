"""The log-link route of the family record (Poisson, Gamma log scale, Normal log sd with one slope in every
row): its pseudo-data, leaf proposal and Metropolis-Hastings correction, which the family record's
functions (:mod:`.family_record`) call when its ``leaf_exp`` is set.

Rows enter a leaf as ``s c mu - k exp(rho eta_{-j}) exp(c mu)`` (c = rho b): the kernels see
``w = k exp(rho eta_{-j})`` and ``z = s / w``, so a leaf's sums (W, S) are the exact sufficient
statistics of its likelihood and its marginal is the Laplace approximation of engine/loglink.py
(the tree prior's leaf_exp = c makes every kernel use it). The proposal's leaves come from a
Student-t at each leaf's exact conditional mode with the curvature there; the correction then
only has the Laplace error and the proposal's shape to undo. The proposal's fit is read from
its leaves, not from z - r: z is large where w is small, and z - r would lose the fit's digits.

>>> round(float(L_LOG_NORM), 6)
-0.943897
"""

import math

import numba

from ..engine import END, LEFT, START, VALUE, leaf_laplace_at, leaf_mode
from .correction import commit_exp_rows, metropolis, scatter_leaves, unordered_sum, working_sums
from .observation import E_HI, E_LO, LOG_SQRT_2PI, loglink_row

# on the log-link route q sits at the exact conditional mode with its curvature: 10 degrees of freedom
# keep tails heavier than the conditional's (a Gaussian q froze a chain started 2 prior sds off: its
# light tail made the far start all but impossible to leave), and accept more than 4 near the mode
# (one tree, 7 rows, Poisson: 0.82-0.89 against 0.75-0.79)
L_DF = 10.0


L_LOG_NORM = math.lgamma(0.5 * (L_DF + 1.0)) - math.lgamma(0.5 * L_DF) - 0.5 * math.log(L_DF * math.pi)


_W_TINY = 1e-290


@numba.njit(cache=True, nogil=True, error_model="numpy")
def loglink_pseudo(lik, tree):
    scatter_leaves(tree, lik.g, lik.em, -lik.slope)
    rho = lik.slope / lik.b[0]
    for i in range(lik.g.shape[0]):
        e = lik.e[i]
        if E_LO < e < E_HI:
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
            total += loglink_leaf_part(lik, tree.perm, ti[k, START], ti[k, END], tree.floats[k, VALUE], None)[0]
    lik.acc[0] = total


@numba.njit(cache=True, nogil=True)
def loglink_leaf_part(lik, perm, s, e, value, rng):
    """As :func:`_leaf_part` on the log-link route: ``q`` a Student-t at the leaf's exact conditional
    mode, with the conditional's curvature there."""
    W, S = working_sums(lik, perm, s, e)
    c = lik.leaf_exp
    m, H = leaf_mode(c, W, S, lik.mu0, lik.s2)
    if rng is not None:
        value = m + rng.standard_normal() / math.sqrt(H * rng.standard_gamma(0.5 * L_DF) * 2.0 / L_DF)
    prec0 = 1.0 / lik.s2
    d0 = value - lik.mu0
    d1 = value - m
    log_prior = -0.5 * d0 * d0 * prec0 + 0.5 * math.log(prec0) - LOG_SQRT_2PI
    log_q = L_LOG_NORM + 0.5 * math.log(H) - 0.5 * (L_DF + 1.0) * math.log1p(d1 * d1 * H / L_DF)
    return log_prior - log_q - leaf_laplace_at(c, W, S, lik.mu0, lik.s2, m, H), value


@numba.njit(cache=True, nogil=True, error_model="numpy")
def loglink_accept(rng, lik, new):
    # the proposal's leaf value per row (gnew) and exp(c value) (enew), from its leaves
    scatter_leaves(new, lik.gnew, lik.enew, lik.slope)
    c = lik.slope
    rho = c / lik.b[0]
    bad = 0
    for i in range(lik.f.shape[0]):
        s, k = loglink_row(lik.kind, lik.u[i], lik.v[i])
        e0 = lik.e[i]
        e1 = lik.em[i] * lik.enew[i]
        lik.enew[i] = e1
        ok = E_LO < e0 < E_HI and E_LO < e1 < E_HI
        bad += not ok
        lik.lrow[i] = s * c * (lik.gnew[i] - lik.g[i]) - k * (e1 - e0) if ok else 0.0
    log_ratio = lik.acc[1] + unordered_sum(lik.lrow) - lik.acc[0]
    if bad > 0:  # rows whose exp under- or overflowed: the per-row formula from eta
        for i in range(lik.f.shape[0]):
            if not (E_LO < lik.e[i] < E_HI and E_LO < lik.enew[i] < E_HI):
                eta0 = rho * (lik.a[i] + lik.b[i] * lik.f[i])
                eta1 = eta0 + c * (lik.gnew[i] - lik.g[i])
                s, k = loglink_row(lik.kind, lik.u[i], lik.v[i])
                log_ratio += s * (eta1 - eta0) - k * (math.exp(eta1) - math.exp(eta0))
                lik.enew[i] = math.exp(eta1)
    if not metropolis(rng, lik.counts, log_ratio):
        return False
    commit_exp_rows(lik)
    return True
