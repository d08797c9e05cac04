"""What every corrected likelihood record shares (the family record, its log-link leaves, the graph route,
and the deliberately wrong records of :mod:`pymc_treesamplers.testing`): the one Metropolis-Hastings decision,
the working rows of an expansion and its centre's Newton steps, and the per-leaf passes over a tree's rows.

>>> import numpy as np
>>> unordered_sum(np.array([1.0, 2.0, 3.0]))
6.0
"""

import math

import numba

from ..engine import END, LEFT, START, VALUE

# Newton steps of the expansion centre: at most CENTER_STEPS, each at most CENTER_MAX prior sds, until one
# would move it less than CENTER_TOL prior sds (the working model needs a point near the leaves, not the mode;
# m = 50, 2 chains: acceptance at 0.5 as at 0.1 within 0.02 on ionosphere, biopsy (probit) and the bike counts
# (negative binomial), with 1-2 passes per tree instead of 2-3; 1 sd lost 0.07 on the bikes)
CENTER_STEPS, CENTER_MAX, CENTER_TOL = 6, 2.0, 0.5


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
def scatter_leaves(tree, value, factor, scale):
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
def working_sums(lik, perm, s, e):
    """``(sum w, sum w z)`` of the working pseudo-data over a leaf's rows ``perm[s:e]``, in row order."""
    W = 0.0
    S = 0.0
    for t in range(s, e):
        i = perm[t]
        W += lik.w[i]
        S += lik.w[i] * lik.z[i]
    return W, S


@numba.njit(cache=True, nogil=True, fastmath={"reassoc"})
def unordered_sum(x):
    """``sum(x)`` in any order (vectorised): a change of rounding only."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    return total
