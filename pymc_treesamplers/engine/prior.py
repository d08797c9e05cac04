"""The tree prior of docs/design.md section 2: split probabilities, valid cuts, rule probabilities.

A node at depth ``d`` with at least one valid cut on a variable of positive weight splits with
probability ``alpha * (1 + d) ** -beta``. The variable is drawn among those with a valid cut in
proportion to its weight, the cut uniformly among that variable's valid cuts
``[min_code, max_code - 1]`` over the node's rows.

``prior`` arguments are :class:`~pymc_treesamplers.engine.records.TreePrior` records, ``data``
arguments :class:`~pymc_treesamplers.engine.records.SplitData` records.
"""

import math

import numba
import numpy as np

from .nodes import ROW_INT
from .pool import start as start_pool
from .records import split_data
from .rows import PAR_MIN, block_range, code_range_blocks

NEG_INF = -np.inf
BIG_CODE = np.int64(1 << 30)
"""The top of a root's box of codes: above every split code (codes are uint16; :mod:`.monotone`)."""


@numba.njit(cache=True, nogil=True)
def log_psplit(prior, d):
    """Log probability that a splittable node at depth ``d`` splits.

    >>> from pymc_treesamplers.engine.records import TreePrior
    >>> round(float(np.exp(log_psplit(TreePrior(0.95, 2.0, 0.0, 1.0), 1))), 4)
    0.2375
    """
    return math.log(prior.alpha) - prior.beta * math.log(1.0 + d)


@numba.njit(cache=True, nogil=True)
def log1m_psplit(prior, d):
    """Log probability that a splittable node at depth ``d`` stays a leaf."""
    return math.log1p(-prior.alpha * (1.0 + d) ** (-prior.beta))


@numba.njit(cache=True, nogil=True)
def leaf_log_prior(prior, d, lwavail):
    """Log prior factor of a leaf: ``log(1 - p_split(d))`` if it could split, else 0."""
    if lwavail == NEG_INF:
        return 0.0
    return log1m_psplit(prior, d)


@numba.njit(cache=True, nogil=True)
def var_has_valid_cut(code_v, perm, s, e):
    """True when the rows ``perm[s:e]`` carry at least two distinct codes of one variable.

    Exits at the first differing code, so continuous covariates cost O(1) in practice.
    """
    first = code_v[perm[s]]
    for t in range(s + 1, e):
        if code_v[perm[t]] != first:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def code_range(code_v, perm, s, e, threads=None):
    """Smallest and largest code of one variable over the rows ``perm[s:e]`` (by blocks on a long range)."""
    if e - s >= PAR_MIN:
        return code_range_blocks(code_v, perm, s, e, threads)
    mn, mx = block_range(code_v, perm, s, e)
    return np.int64(mn), np.int64(mx)


@numba.njit(cache=True, nogil=True)
def node_log_avail(data, perm, s, e):
    """Log of the summed weights of the variables with a valid cut in a node (``-inf``: none)."""
    total = 0.0
    for v in range(data.codes.shape[0]):
        if data.wsplit[v] > 0.0 and var_has_valid_cut(data.codes[v], perm, s, e):
            total += data.wsplit[v]
    if total > 0.0:
        return math.log(total)
    return NEG_INF


@numba.njit(cache=True, nogil=True)
def side_log_avail(data, perm, s, e, code_split, c, left, n_side):
    """:func:`node_log_avail` of the ``n_side`` rows of ``perm[s:e]`` on one side of ``code_split <= c``
    (``left``: the side at or below ``c``), read in place: a proposed split's children without moving rows.

    The same variables are found valid as on the split node's rows, and their weights are added in the
    same order, so the value is the one :func:`~pymc_treesamplers.engine.tree.split_leaf` writes. Each
    variable's scan stops at the side's first code that differs from its first row's.
    """
    if n_side < 2:
        return NEG_INF
    q0 = s
    while (code_split[perm[q0]] <= c) != left:
        q0 += 1
    first = perm[q0]
    total = 0.0
    for v in range(data.codes.shape[0]):
        if data.wsplit[v] > 0.0:
            code_v = data.codes[v]
            f = code_v[first]
            for q in range(q0 + 1, e):
                i = perm[q]
                if code_v[i] != f and (code_split[i] <= c) == left:
                    total += data.wsplit[v]
                    break
    if total > 0.0:
        return math.log(total)
    return NEG_INF


@numba.njit(cache=True, nogil=True)
def draw_split_rule(rng, data, perm, s, e, scratch_p):
    """Draw ``(v, c, n_cuts)`` for a splittable node from the split-rule prior.

    ``scratch_p`` (length p) is overwritten. Returns ``v = -1`` if no variable can split.
    """
    codes = data.codes
    wsplit = data.wsplit
    every_row = e - s == codes.shape[1]  # a node holding all n (distinct) rows: the ranges are known
    total = 0.0
    for v in range(codes.shape[0]):
        if wsplit[v] > 0.0 and (
            data.code_min[v] < data.code_max[v] if every_row else var_has_valid_cut(codes[v], perm, s, e)
        ):
            scratch_p[v] = wsplit[v]
            total += wsplit[v]
        else:
            scratch_p[v] = 0.0
    if total <= 0.0:
        return -1, -1, 0
    u = rng.random() * total
    v = 0
    acc = scratch_p[0]
    while acc <= u and v < codes.shape[0] - 1:
        v += 1
        acc += scratch_p[v]
    while scratch_p[v] == 0.0:  # guard against rounding landing on a zero-weight variable
        v -= 1
    if every_row:
        mn, mx = data.code_min[v], data.code_max[v]
    else:
        mn, mx = code_range(codes[v], perm, s, e, data.threads)
    c = mn + rng.integers(0, mx - mn)
    return v, c, mx - mn


@numba.njit(cache=True, nogil=True)
def rule_log_prob(logw_v, lwavail, n_cuts):
    """Log prior probability of a split rule given its node: ``w_v / W_avail / n_cuts``."""
    return logw_v - lwavail - math.log(n_cuts)


def sample_prior_tree(codes, wsplit, alpha, beta, rng, parents: bool = False, boxes: bool = False):
    """Draw one tree from the prior on training codes (Python; used for prior predictive draws).

    Returns the leaf index of every row, as an int array; with ``parents``, also the split column of each leaf's
    parent (``-1`` for the root), by leaf index; with ``boxes``, instead, each leaf's box of codes ``(lo, hi)``,
    two (leaves, p) arrays (:mod:`.monotone`).

    >>> codes = np.array([[0, 1, 2, 3]], dtype=np.uint16)
    >>> sample_prior_tree(codes, np.ones(1), 0.95, 2.0, np.random.default_rng(0)).shape
    (4,)
    """
    start_pool()  # the kernels below come from the cache and link the parallel row passes
    data = split_data(codes, wsplit)
    n = codes.shape[1]
    leaf = np.zeros(n, dtype=np.int64)
    perm = np.arange(n, dtype=ROW_INT)
    scratch = np.zeros(codes.shape[0])
    p = codes.shape[0]
    stack = [(0, n, 0, -1, np.zeros(p, dtype=np.int64), np.full(p, BIG_CODE, dtype=np.int64))]
    n_leaves = 0
    parent, leaf_lo, leaf_hi = [], [], []
    while stack:
        s, e, d, up, lo, hi = stack.pop()
        lw = node_log_avail(data, perm, s, e)
        if lw > NEG_INF and rng.random() < alpha * (1.0 + d) ** (-beta):
            v, c, _ = draw_split_rule(rng, data, perm, s, e, scratch)
            seg = perm[s:e]
            left = codes[v, seg] <= c
            perm[s:e] = np.concatenate([seg[left], seg[~left]])
            nl = int(left.sum())
            lhi, rlo = hi.copy(), lo.copy()
            lhi[v], rlo[v] = min(hi[v], c), max(lo[v], c + 1)
            stack.append((s + nl, e, d + 1, v, rlo, hi))
            stack.append((s, s + nl, d + 1, v, lo, lhi))
        else:
            leaf[perm[s:e]] = n_leaves
            parent.append(up)
            leaf_lo.append(lo)
            leaf_hi.append(hi)
            n_leaves += 1
    if boxes:
        return leaf, np.array(leaf_lo), np.array(leaf_hi)
    return (leaf, np.array(parent, dtype=np.int64)) if parents else leaf
