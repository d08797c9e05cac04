"""Monotone trees: the leaves' boxes, which leaves must be ordered, and the truncated-normal algebra of a leaf.

A tree is monotone in the directions ``dirs`` (one per split column: +1 increasing, -1 decreasing, 0 free) when
its value can only rise (fall) as a covariate with direction +1 (-1) rises and every other covariate stays put.
A leaf covers a box of split codes, one interval ``[lo, hi]`` per column (a left child ``code <= c`` ends at
``c``, a right child starts at ``c + 1``; a root's box is every code). Two leaves must be ordered exactly when
their boxes touch across a cut on a constrained column (``hi_a + 1 == lo_b`` there) and overlap on every other
column: any segment along a constrained column crosses a chain of such pairs, so these pairwise orders make the
tree monotone at every ``x``, including codes no training row holds, and are each needed.

The leaves no longer integrate out independently, so the monotone update (:mod:`.updates.monotone`) carries
their values: a new leaf is drawn from its Gaussian conditional truncated to the interval its ordered neighbours
leave (:func:`leaf_bounds`, :func:`truncated_draw`), and the log mass of that interval (:func:`log_mass`) enters
the move's ratio.

>>> round(float(np.exp(log_mass(0.0, 1.0, 0.0, np.inf))), 12)
0.5
"""

import math

import numba
import numpy as np

from .nodes import CUT, LEFT, NODE_INT, PARENT, VALUE, VAR
from .prior import BIG_CODE, sample_prior_tree
from .rows import leaf_ranges, ranges_suff

_SQRT2 = math.sqrt(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


# ------------------------------------------------------------------------------- boxes and orders


@numba.njit(cache=True, nogil=True)
def node_box(ti, k, lo, hi):
    """Write node ``k``'s box into ``lo``, ``hi`` (p,), from the rules on its path to the root."""
    for j in range(lo.shape[0]):
        lo[j] = 0
        hi[j] = BIG_CODE
    c = k
    par = ti[c, PARENT]
    while par >= 0:
        v = ti[par, VAR]
        if ti[par, LEFT] == c:
            hi[v] = min(hi[v], ti[par, CUT])
        else:
            lo[v] = max(lo[v], ti[par, CUT] + 1)
        c = par
        par = ti[c, PARENT]


@numba.njit(cache=True, nogil=True)
def used_columns(ti, nn, extra):
    """The split columns the tree's rules use, and ``extra`` (>= 0) too: the only columns on which two boxes can
    fail to overlap."""
    buf = np.empty(nn + 1, dtype=NODE_INT)
    count = 0 if extra < 0 else _add_new(buf, 0, extra)
    for u in range(nn):
        if ti[u, LEFT] >= 0:
            count = _add_new(buf, count, ti[u, VAR])
    return buf[:count].copy()


@numba.njit(cache=True, nogil=True)
def _add_new(buf, count, v):
    # append v to buf[:count] unless it is there; the new count
    for q in range(count):
        if buf[q] == v:
            return count
    buf[count] = v
    return count + 1


@numba.njit(cache=True, nogil=True)
def leaf_boxes(t, p):
    """``(leaves, lo, hi)``: the leaf slots of ``t`` in slot order and their boxes (L, p)."""
    ti = t.ints
    L = 0
    for u in range(t.nn[0]):
        if ti[u, LEFT] < 0:
            L += 1
    leaves = np.empty(L, dtype=NODE_INT)
    lo = np.empty((L, p), dtype=np.int64)
    hi = np.empty((L, p), dtype=np.int64)
    i = 0
    for u in range(t.nn[0]):
        if ti[u, LEFT] < 0:
            leaves[i] = u
            node_box(ti, u, lo[i], hi[i])
            i += 1
    return leaves, lo, hi


@numba.njit(cache=True, nogil=True)
def leaf_values(t, leaves):
    """The values of the leaves ``leaves`` (slots) of ``t``."""
    values = np.empty(leaves.shape[0])
    for i in range(leaves.shape[0]):
        values[i] = t.floats[leaves[i], VALUE]
    return values


@numba.njit(cache=True, nogil=True)
def relation(lo_a, hi_a, lo_b, hi_b, cols, dirs):
    """+1 when box a's value must be at most box b's, -1 when at least, 0 when they need no order (``cols``: the
    columns on which either box is not the whole range)."""
    sign = 0
    across = False
    for q in range(cols.shape[0]):
        j = cols[q]
        if max(lo_a[j], lo_b[j]) <= min(hi_a[j], hi_b[j]):
            continue
        # disjoint on j: they touch across j only if nothing else separates them and j is constrained
        if across or dirs[j] == 0:
            return 0
        across = True
        if hi_a[j] + 1 == lo_b[j]:
            sign = dirs[j]
        elif hi_b[j] + 1 == lo_a[j]:
            sign = -dirs[j]
        else:
            return 0
    return sign


@numba.njit(cache=True, nogil=True)
def ordered_pairs(lo, hi, cols, dirs):
    """Every pair ``(a, b)`` of leaves (indices into the boxes) whose values must satisfy ``value_a <= value_b``,
    as an (E, 2) array."""
    L = lo.shape[0]
    pairs = np.empty((L * (L - 1) // 2, 2), dtype=NODE_INT)
    E = 0
    for a in range(L):
        for b in range(a + 1, L):
            s = relation(lo[a], hi[a], lo[b], hi[b], cols, dirs)
            if s > 0:
                pairs[E, 0] = a
                pairs[E, 1] = b
                E += 1
            elif s < 0:
                pairs[E, 0] = b
                pairs[E, 1] = a
                E += 1
    return pairs[:E]


@numba.njit(cache=True, nogil=True)
def leaf_bounds(i, skip, pairs, values):
    """``(lo, hi)``: the interval the ordered neighbours of leaf ``i`` (all but leaf ``skip``; -1: none) leave its
    value."""
    lo = -math.inf
    hi = math.inf
    for q in range(pairs.shape[0]):
        a = pairs[q, 0]
        b = pairs[q, 1]
        if b == i and a != skip:
            lo = max(lo, values[a])
        elif a == i and b != skip:
            hi = min(hi, values[b])
    return lo, hi


@numba.njit(cache=True, nogil=True)
def box_bounds(blo, bhi, lo, hi, skip_a, skip_b, cols, dirs, values):
    """``(lo, hi)``: the interval the leaves (boxes ``lo``, ``hi``, values ``values``), but ``skip_a`` and
    ``skip_b``, leave the value of a leaf with box ``blo``, ``bhi``."""
    low = -math.inf
    high = math.inf
    for o in range(lo.shape[0]):
        if o == skip_a or o == skip_b:
            continue
        s = relation(blo, bhi, lo[o], hi[o], cols, dirs)
        if s > 0:
            high = min(high, values[o])
        elif s < 0:
            low = max(low, values[o])
    return low, high


@numba.njit(cache=True, nogil=True)
def is_monotone(t, dirs):
    """Whether every ordered pair of ``t``'s leaves holds its order (ties allowed)."""
    leaves, lo, hi = leaf_boxes(t, dirs.shape[0])
    pairs = ordered_pairs(lo, hi, used_columns(t.ints, t.nn[0], -1), dirs)
    for q in range(pairs.shape[0]):
        if t.floats[leaves[pairs[q, 0]], VALUE] > t.floats[leaves[pairs[q, 1]], VALUE]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def in_order(lo, hi, dirs, values):
    """Whether leaves with boxes ``lo``, ``hi`` (L, p) and ``values`` (L,) keep every order ``dirs`` asks."""
    cols = np.arange(dirs.shape[0])
    pairs = ordered_pairs(lo, hi, cols, dirs)
    for q in range(pairs.shape[0]):
        if values[pairs[q, 0]] > values[pairs[q, 1]]:
            return False
    return True


def sample_monotone_tree(codes, wsplit, alpha, beta, mu0, sd, dirs, rng):
    """One tree and its leaves from the prior restricted to monotone trees (Python; prior predictive draws): a
    tree and ``N(mu0, sd^2)`` leaves from BART's prior, drawn again until the leaves are in order, which is the
    restricted prior exactly (it is the joint prior times the indicator, normalised). Returns the leaf index of
    every row and the leaves' values.

    >>> leaf, values = sample_monotone_tree(np.array([[0, 1, 2, 3]], dtype=np.uint16), np.ones(1), 0.95, 2.0,
    ...                                     0.0, 1.0, np.array([1]), np.random.default_rng(0))
    >>> bool(np.all(np.diff(values[leaf]) >= 0))   # one covariate, its codes in row order: rising along the rows
    True
    """
    dirs = np.asarray(dirs, dtype=np.int64)
    while True:
        leaf, lo, hi = sample_prior_tree(codes, wsplit, alpha, beta, rng, boxes=True)
        values = rng.normal(mu0, sd, size=lo.shape[0])
        if in_order(lo, hi, dirs, values):
            return leaf, values


# ------------------------------------------------------------------------------ truncated normals


@numba.njit(cache=True, nogil=True)
def log_upper(x):
    """``log P(Z > x)`` for a standard normal ``Z``, accurate far in the tail (x >= 0)."""
    if x < 35.0:
        return math.log(0.5 * math.erfc(x / _SQRT2))
    x2 = x * x
    return -0.5 * x2 - math.log(x) - _HALF_LOG_2PI + math.log1p(-1.0 / x2 + 3.0 / (x2 * x2))


@numba.njit(cache=True, nogil=True)
def log_std_mass(a, b):
    """``log P(a < Z < b)`` for a standard normal ``Z`` (``a < b``; -inf when the interval is empty)."""
    if not a < b:
        return -math.inf
    h = b - a
    mid = 0.5 * (a + b)
    if h < 1e-3 and h * abs(mid) < 1e-3:
        # a narrow interval (neighbours that nearly tie): the midpoint rule with its h^2 term, relative error
        # O(h^4 (1 + mid^4)) < 1e-11, where a difference of two tail masses would cancel
        return math.log(h) - 0.5 * mid * mid - _HALF_LOG_2PI + math.log1p((mid * mid - 1.0) * h * h / 24.0)
    if a >= 0.0:
        la = log_upper(a)
        if b == math.inf:
            return la
        return la + math.log(-math.expm1(log_upper(b) - la))
    if b <= 0.0:
        return log_std_mass(-b, -a)
    tails = (0.0 if b == math.inf else math.exp(log_upper(b))) + (0.0 if a == -math.inf else math.exp(log_upper(-a)))
    return math.log1p(-tails)


@numba.njit(cache=True, nogil=True)
def log_mass(mean, sd, lo, hi):
    """``log P(lo < X < hi)`` for ``X ~ N(mean, sd^2)``.

    >>> round(float(np.exp(log_mass(1.0, 2.0, -math.inf, 1.0))), 12)
    0.5
    """
    return log_std_mass((lo - mean) / sd, (hi - mean) / sd)


@numba.njit(cache=True, nogil=True)
def _std_tail(rng, a, b):
    # Z | a < Z < b for 0 <= a < b (Robert 1995): uniform proposals on a short interval, else a shifted
    # exponential of the optimal rate, each accepted with its exact ratio
    root = math.sqrt(a * a + 4.0)
    if b - a < 2.0 * math.sqrt(math.e) / (a + root) * math.exp(0.25 * (a * a - a * root)):
        while True:
            z = a + (b - a) * rng.random()
            if rng.random() < math.exp(0.5 * (a - z) * (a + z)):  # factored: no cancellation at large a
                return z
    lam = 0.5 * (a + root)
    while True:
        z = a + rng.exponential() / lam
        if z < b and rng.random() < math.exp(-0.5 * (z - lam) * (z - lam)):
            return z


@numba.njit(cache=True, nogil=True)
def std_truncated(rng, a, b):
    """A draw of ``Z ~ N(0, 1)`` given ``a < Z < b`` (``a < b``), by exact rejection."""
    if a >= 0.0:
        return _std_tail(rng, a, b)
    if b <= 0.0:
        return -_std_tail(rng, -b, -a)
    if b - a > 2.5:
        while True:
            z = rng.standard_normal()
            if a < z < b:
                return z
    while True:
        z = a + (b - a) * rng.random()
        if rng.random() < math.exp(-0.5 * z * z):
            return z


@numba.njit(cache=True, nogil=True)
def truncated_draw(rng, mean, sd, lo, hi):
    """A draw of ``N(mean, sd^2)`` given ``lo < X < hi`` (an interval of positive mass)."""
    return mean + sd * std_truncated(rng, (lo - mean) / sd, (hi - mean) / sd)


@numba.njit(cache=True, nogil=True)
def leaf_posterior(prior, W, S):
    """``(mean, sd)`` of a Gaussian leaf's conditional given its rows' sums ``W``, ``S``."""
    prec = W + 1.0 / prior.s2
    return (S + prior.mu0 / prior.s2) / prec, 1.0 / math.sqrt(prec)


# ------------------------------------------------------------------------------- the leaves' step


@numba.njit(cache=True, nogil=True)
def gibbs_leaves(rng, t, prior, pseudo, dirs):
    """Exact Gibbs on a monotone tree's leaves: each in slot order from its conditional truncated by its ordered
    neighbours, then a shift of every leaf by one amount drawn from its conditional (the shift keeps every order,
    so it moves the tree's level where the truncations pin single leaves down). The tree's fit is not touched.
    """
    nodes, starts, ends, total = leaf_ranges(t)
    L = nodes.shape[0]
    sums = np.empty((L, 2))
    ranges_suff(pseudo.r, pseudo.w, t.perm, starts, ends, total, pseudo.threads, sums)
    values = leaf_values(t, nodes)
    leaves, lo, hi = leaf_boxes(t, dirs.shape[0])  # the same slot order as leaf_ranges
    pairs = ordered_pairs(lo, hi, used_columns(t.ints, t.nn[0], -1), dirs)
    precs = np.empty(L)
    means = np.empty(L)
    for i in range(L):
        mean, sd = leaf_posterior(prior, sums[i, 0], sums[i, 1])
        means[i] = mean
        precs[i] = 1.0 / (sd * sd)
        if pairs.shape[0] == 0:
            values[i] = mean + sd * rng.standard_normal()
        else:
            low, high = leaf_bounds(i, -1, pairs, values)
            if low < high:
                values[i] = truncated_draw(rng, mean, sd, low, high)
            else:  # neighbours that tie (probability zero) leave it one value
                values[i] = low
    if pairs.shape[0] > 0:
        # the shift delta | leaves ~ N(sum P (m - mu) / sum P, 1 / sum P): translations are a group whose
        # invariant measure is Lebesgue's, so a draw from the target along the orbit leaves it invariant
        total_prec = 0.0
        pull = 0.0
        for i in range(L):
            total_prec += precs[i]
            pull += precs[i] * (means[i] - values[i])
        delta = pull / total_prec + rng.standard_normal() / math.sqrt(total_prec)
        for i in range(L):
            values[i] += delta
    for i in range(L):
        t.floats[nodes[i], VALUE] = values[i]
