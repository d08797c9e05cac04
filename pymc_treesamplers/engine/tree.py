"""Operations on one tree, shared by every kernel: build, cut back, walk, pick, score, save, fit.

A tree is a :class:`~pymc_treesamplers.engine.records.Tree` (node rows, row order, node count; see
:mod:`pymc_treesamplers.engine.nodes`). Every node owns the contiguous range ``perm[start:end]`` of its
rows, so a change touches only the rows of the nodes it changes. Node slots are kept compact: a
freed slot is refilled by the last node, so no free list is needed.

* building: :func:`set_leaf`, :func:`split_leaf`, :func:`collapse`, :func:`collapse_subtree`,
  :func:`partition_rows`, :func:`grow_from_prior`;
* rules changed in place: :func:`repartition_subtree`, :func:`refresh_subtree_prior`;
* walking: :func:`subtree_nodes` (the one depth-first walk: preorder, left child first);
* picking: :func:`count_nodes`, :func:`nth_node`, :func:`random_node` over the node kinds
  ``GROWABLE`` (a leaf with a valid cut), ``NOG`` (an internal node whose children are leaves),
  ``INTERNAL`` and ``INTERNAL_CHILD`` (an internal node that is not the root);
* scoring: :func:`subtree_log_post` (log tree prior times leaf-integrated likelihood),
  :func:`rule_change_bound` (its bound for rules rewritten in place, rows unmoved),
  :func:`subtree_log_prior` (its prior part),
  :func:`split_log_ratio` (one split against no split);
* saving and copying: :func:`backup`, :func:`restore`, :func:`copy_nodes`, :func:`copy_perm`;
* fitting: :func:`add_tree`, :func:`draw_leaves`.
"""

import math

import numba
import numpy as np
from numba.extending import overload

from .basisleaf import basis_two_level_bound, parent_var
from .gaussian import leaf_draw, leaf_loglik
from .leaves import children_logliks, range_loglik, split_logliks
from .nodes import (
    CUT,
    DEPTH,
    END,
    LEFT,
    LWAVAIL,
    NO_NODE,
    NODE_INT,
    PARENT,
    RIGHT,
    ROOT,
    RULELP,
    START,
    VALUE,
    VAR,
)
from .prior import (
    NEG_INF,
    code_range,
    draw_split_rule,
    leaf_log_prior,
    log1m_psplit,
    log_psplit,
    node_log_avail,
    rule_log_prob,
)
from .records import BasisPseudo
from .rows import (
    PAR_MIN,
    add_ranges,
    add_tree,  # noqa: F401  re-exported: a tree's fit is part of this module's API (see the docstring)
    leaf_ranges,
    merge_rows,
    partition_blocks,
    ranges_suff,
    split2_suff,
)

GROWABLE, NOG, INTERNAL, INTERNAL_CHILD = (np.int64(kind) for kind in range(4))

ALL_CODES = np.int64(1 << 16)
"""A cut above every (uint16) code: a rule with it sends every row to its left side."""


# ----------------------------------------------------------------------------------- building


@numba.njit(cache=True, nogil=True)
def partition_rows(perm, s, e, code_v, c, threads=None):
    """Reorder ``perm[s:e]`` so rows with ``code_v <= c`` come first; return how many do.

    A long range (``rows.PAR_MIN`` rows or more) takes the stable partition by blocks of
    :func:`~pymc_treesamplers.engine.rows.partition_blocks` (on ``threads`` threads); a short one swaps in place.
    """
    if e - s >= PAR_MIN:
        return partition_blocks(perm, s, e, code_v, c, threads)
    lo = s
    hi = e - 1
    while True:
        while lo <= hi and code_v[perm[lo]] <= c:
            lo += 1
        while lo <= hi and code_v[perm[hi]] > c:
            hi -= 1
        if lo >= hi:
            break
        tmp = perm[lo]
        perm[lo] = perm[hi]
        perm[hi] = tmp
        lo += 1
        hi -= 1
    return lo - s


@numba.njit(cache=True, nogil=True)
def set_leaf(t, k, parent, depth, s, e, lwavail):
    """Write a fresh leaf into slot ``k``."""
    ti = t.ints
    tf = t.floats
    ti[k, VAR] = -1
    ti[k, CUT] = -1
    ti[k, LEFT] = -1
    ti[k, RIGHT] = -1
    ti[k, PARENT] = parent
    ti[k, DEPTH] = depth
    ti[k, START] = s
    ti[k, END] = e
    tf[k, VALUE] = 0.0
    tf[k, LWAVAIL] = lwavail
    tf[k, RULELP] = 0.0


@numba.njit(cache=True, nogil=True)
def init_root(t, data, value):
    """Make ``t`` a single leaf holding all its rows (in their current order) with ``value``."""
    n = NODE_INT(t.perm.shape[0])
    set_leaf(t, ROOT, NO_NODE, ROOT, ROOT, n, node_log_avail(data, t.perm, ROOT, n))
    t.floats[0, VALUE] = value
    t.nn[0] = 1


@numba.njit(cache=True, nogil=True)
def split_leaf(t, k, v, c, n_cuts, data):
    """Split leaf ``k`` by ``code_v <= c`` into two new leaves in slots ``nn``, ``nn + 1``.

    Partitions the leaf's rows, writes the children (with their availability) and the rule with its
    log prior probability (``n_cuts`` valid cuts of ``v`` in ``k``); returns the split point in ``perm``.
    """
    ti = t.ints
    perm = t.perm
    s = ti[k, START]
    e = ti[k, END]
    mid = s + partition_rows(perm, s, e, data.codes[v], c, data.threads)
    a = t.nn[0]
    d = ti[k, DEPTH]
    set_leaf(t, a, k, d + 1, s, mid, node_log_avail(data, perm, s, mid))
    set_leaf(t, a + 1, k, d + 1, mid, e, node_log_avail(data, perm, mid, e))
    ti[k, VAR] = v
    ti[k, CUT] = c
    ti[k, LEFT] = a
    ti[k, RIGHT] = a + 1
    t.floats[k, RULELP] = rule_log_prob(data.logw[v], t.floats[k, LWAVAIL], n_cuts)
    t.nn[0] += 2
    return mid


@numba.njit(cache=True, nogil=True)
def _move_node(ti, tf, src, dst):
    for f in range(ti.shape[1]):
        ti[dst, f] = ti[src, f]
    for f in range(tf.shape[1]):
        tf[dst, f] = tf[src, f]
    par = ti[dst, PARENT]
    if par >= 0:
        if ti[par, LEFT] == src:
            ti[par, LEFT] = dst
        else:
            ti[par, RIGHT] = dst
    if ti[dst, LEFT] >= 0:
        ti[ti[dst, LEFT], PARENT] = dst
        ti[ti[dst, RIGHT], PARENT] = dst


@numba.njit(cache=True, nogil=True)
def collapse(t, k, threads=None):
    """Turn internal node ``k`` whose children are leaves into a leaf, freeing both slots.

    The last nodes are moved into the freed slots so the tree stays compact. A long node's rows are
    merged back in row order (:func:`~pymc_treesamplers.engine.rows.merge_rows`, on ``threads`` threads).
    """
    ti = t.ints
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    if ti[k, END] - ti[k, START] >= PAR_MIN:
        first = a if ti[a, START] == ti[k, START] else b  # the child whose rows come first
        merge_rows(t.perm, ti[k, START], ti[first, END], ti[k, END], threads)
    ti[k, VAR] = -1
    ti[k, CUT] = -1
    ti[k, LEFT] = -1
    ti[k, RIGHT] = -1
    t.floats[k, RULELP] = 0.0
    for slot in (max(a, b), min(a, b)):
        last = t.nn[0] - 1
        if slot != last:
            _move_node(ti, t.floats, last, slot)
        t.nn[0] -= 1


@numba.njit(cache=True, nogil=True)
def grow_from_prior(rng, t, data, prior, b, scratch_p, split_first=False):
    """Grow the leaf ``b`` into a subtree drawn from the tree prior on its rows; returns the
    subtree's log prior probability.

    ``split_first``: draw it from the prior given that ``b`` splits (``b`` must have a valid cut; the
    returned log probability still counts ``b``'s split probability)."""
    ti = t.ints
    first = t.nn[0]
    total = 0.0
    u = b
    while True:
        d = ti[u, DEPTH]
        if t.floats[u, LWAVAIL] == NEG_INF:
            pass  # cannot split: a leaf with probability 1
        elif (split_first and u == b) or rng.random() < math.exp(log_psplit(prior, d)):
            v, c, n_cuts = draw_split_rule(rng, data, t.perm, ti[u, START], ti[u, END], scratch_p)
            split_leaf(t, u, v, c, n_cuts, data)
            total += log_psplit(prior, d) + t.floats[u, RULELP]
        else:
            total += leaf_log_prior(prior, d, t.floats[u, LWAVAIL])
        # next: the nodes this growth created, in creation order
        u = first if u == b else u + 1
        if u >= t.nn[0]:
            break
    return total


@numba.njit(cache=True, nogil=True)
def collapse_subtree(t, k, threads=None):
    """Turn internal node ``k`` into a leaf, removing every node below it; returns ``k``'s slot afterwards.

    The deepest splits go first, so each step is a :func:`collapse` of two leaves (a long node's rows merged back
    in row order). Collapsing moves nodes between slots; ``k`` is found again by its row range, which no other
    node has (every split leaves both sides non-empty).
    """
    ti = t.ints
    s = ti[k, START]
    e = ti[k, END]
    while ti[k, LEFT] >= 0:
        u = k
        while not is_nog(ti, u):
            a = ti[u, LEFT]
            u = a if ti[a, LEFT] >= 0 else ti[u, RIGHT]
        collapse(t, u, threads)
        if u != k:
            for q in range(t.nn[0]):
                if ti[q, START] == s and ti[q, END] == e:
                    k = q
                    break
    return k


# ------------------------------------------------------------------------------------ walking


@numba.njit(cache=True, nogil=True)
def subtree_nodes(ti, k, order):
    """Write the slots of ``k``'s subtree in preorder (left child first) into ``order``; return
    how many. ``order`` needs room for the subtree plus one (it doubles as the walk's stack)."""
    # the unvisited stack grows from the top of ``order`` down while visited nodes fill it from the
    # bottom up; there are never more of both together than nodes in the subtree + 1
    top = order.shape[0] - 1
    order[top] = k
    L = 0
    while top < order.shape[0]:
        u = order[top]
        top += 1
        order[L] = u
        L += 1
        if ti[u, LEFT] >= 0:
            top -= 2
            order[top] = ti[u, LEFT]
            order[top + 1] = ti[u, RIGHT]
    return L


@numba.njit(cache=True, nogil=True)
def repartition_subtree(t, data, k, order):
    """Re-split the rows of ``k``'s subtree by the current rules; False if a split is invalid.

    A split that leaves a side empty has prior probability zero under the tree prior, so the
    caller rejects such a proposal. ``order``: int scratch longer than the number of nodes.
    """
    ti = t.ints
    L = subtree_nodes(ti, k, order)
    for q in range(L):  # preorder: a node's range is set before its children are split
        u = order[q]
        if ti[u, LEFT] < 0:
            continue
        s = ti[u, START]
        e = ti[u, END]
        nl = partition_rows(t.perm, s, e, data.codes[ti[u, VAR]], ti[u, CUT], data.threads)
        if nl == 0 or nl == e - s:
            return False
        a = ti[u, LEFT]
        b = ti[u, RIGHT]
        ti[a, START] = s
        ti[a, END] = s + nl
        ti[b, START] = s + nl
        ti[b, END] = e
    return True


@numba.njit(cache=True, nogil=True)
def refresh_subtree_prior(t, data, k, order):
    """Recompute available weights and rule probabilities below node ``k`` and ``k``'s rule probability.

    Used after a change of rules re-partitioned the subtree; ``k``'s own rows (so its available
    weight) do not change.
    """
    ti = t.ints
    tf = t.floats
    L = subtree_nodes(ti, k, order)
    for q in range(L):
        u = order[q]
        s = ti[u, START]
        e = ti[u, END]
        if u != k:
            tf[u, LWAVAIL] = node_log_avail(data, t.perm, s, e)
        if ti[u, LEFT] >= 0:
            v = ti[u, VAR]
            mn, mx = code_range(data.codes[v], t.perm, s, e, data.threads)
            tf[u, RULELP] = rule_log_prob(data.logw[v], tf[u, LWAVAIL], mx - mn)


# ------------------------------------------------------------------------------------ picking


@numba.njit(cache=True, nogil=True)
def is_nog(ti, k):
    """Internal node whose two children are leaves (the nodes prune may remove)."""
    return ti[k, LEFT] >= 0 and ti[ti[k, LEFT], LEFT] < 0 and ti[ti[k, RIGHT], LEFT] < 0


@numba.njit(cache=True, nogil=True)
def node_is(t, k, kind):
    """Whether node ``k`` is of ``kind`` (``GROWABLE``, ``NOG``, ``INTERNAL``, ``INTERNAL_CHILD``)."""
    ti = t.ints
    if kind == GROWABLE:
        return ti[k, LEFT] < 0 and t.floats[k, LWAVAIL] > NEG_INF
    if kind == NOG:
        return is_nog(ti, k)
    if kind == INTERNAL:
        return ti[k, LEFT] >= 0
    return ti[k, LEFT] >= 0 and ti[k, PARENT] >= 0


@numba.njit(cache=True, nogil=True)
def count_nodes(t, kind):
    """Number of nodes of ``kind``."""
    c = 0
    for k in range(t.nn[0]):
        if node_is(t, k, kind):
            c += 1
    return c


@numba.njit(cache=True, nogil=True)
def nth_node(t, idx, kind):
    """The ``idx``-th node of ``kind`` in slot order, or -1."""
    c = 0
    for k in range(t.nn[0]):
        if node_is(t, k, kind):
            if c == idx:
                return k
            c += 1
    return -1


@numba.njit(cache=True, nogil=True)
def random_node(rng, t, kind):
    """A uniformly chosen node of ``kind``, or -1 (drawing nothing) when there is none."""
    count = count_nodes(t, kind)
    if count == 0:
        return -1
    return nth_node(t, rng.integers(0, count), kind)


# ------------------------------------------------------------------------------------ scoring


@numba.njit(cache=True, nogil=True)
def subtree_log_post(t, prior, pseudo, k, order, top_rule, split_probs):
    """Log tree prior times leaf-integrated likelihood of ``k``'s subtree, up to a constant.

    Leaves contribute their marginal likelihood and split factor, internal nodes their rule
    probability (``k``'s own only if ``top_rule``) and, if ``split_probs``, their ``p_split``. Moves
    that keep every internal node's depth (change, swap) leave ``p_split`` out; the whole tree's log
    posterior is ``subtree_log_post(t, prior, pseudo, ROOT, order, top_rule=TRUE, split_probs=TRUE)``.
    """
    ti = t.ints
    tf = t.floats
    total = 0.0
    L = subtree_nodes(ti, k, order)
    for q in range(L):
        u = order[q]
        d = ti[u, DEPTH]
        if ti[u, LEFT] < 0:
            total += range_loglik(prior, pseudo, t.perm, ti[u, START], ti[u, END], parent_var(ti, u)) + leaf_log_prior(
                prior, d, tf[u, LWAVAIL])
        else:
            if u != k or top_rule:
                total += tf[u, RULELP]
            if split_probs:
                total += log_psplit(prior, d)
    return total


@numba.njit(cache=True, nogil=True)
def leaves_loglik(t, prior, pseudo):
    """The sum of every leaf's log marginal likelihood: what a move that keeps the partition changes when the
    leaves' basis is the tree's (:func:`~pymc_treesamplers.engine.leaves.col_dependent`)."""
    ti = t.ints
    total = 0.0
    for u in range(t.nn[0]):
        if ti[u, LEFT] < 0:
            total += range_loglik(prior, pseudo, t.perm, ti[u, START], ti[u, END], parent_var(ti, u))
    return total


@numba.njit(cache=True, nogil=True)
def rule_change_bound(t, data, prior, pseudo, k, top_rule):
    """Whether the rules now written at and below ``k`` split every node of its subtree into two non-empty
    sides, and an upper bound of the :func:`subtree_log_post` (``split_probs`` off) that the subtree would
    have once re-partitioned, from one read-only pass; ``(True, inf)`` for a subtree deeper than two levels.

    The leaves' likelihoods are exact (up to the order of their sums: the caller allows a margin). Each
    leaf factor ``log(1 - p_split)`` is bounded above by 0, each rule's ``-log(n_cuts)`` by 0 and, below
    ``k``, each rule's ``log(w_v / W_avail)`` by 0 (its own variable is available). A change or swap is
    mostly rejected once a chain has found the data, by a likelihood drop far larger than these slacks;
    this rejects it before any row moves. Two levels cover the small trees of a large forest
    (:func:`two_level_bound`); deeper subtrees, whose rows are few in practice, are left to the exact path.
    """
    ti = t.ints
    tf = t.floats
    s = ti[k, START]
    e = ti[k, END]
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    v = ti[k, VAR]
    bound = data.logw[v] - tf[k, LWAVAIL] if top_rule else 0.0  # k's rows, so its availability, do not change
    if ti[a, LEFT] < 0 and ti[b, LEFT] < 0:
        n_left, left, right, _ = split_logliks(prior, pseudo, t.perm, s, e, data.codes[v], ti[k, CUT], v,
                                               parent_var(ti, k))
        if n_left == 0 or n_left == e - s:
            return False, 0.0
        return True, bound + left + right
    for u in (a, b):
        if ti[u, LEFT] >= 0 and (ti[ti[u, LEFT], LEFT] >= 0 or ti[ti[u, RIGHT], LEFT] >= 0):
            return True, math.inf
    return two_level_bound(t, data, prior, pseudo, k, bound)


def two_level_bound(t, data, prior, pseudo, k, bound):
    """:func:`rule_change_bound` of a subtree two levels deep (compiled dispatch): from one pass over its rows,
    for constant leaves here, for basis leaves by
    :func:`~pymc_treesamplers.engine.basisleaf.basis_two_level_bound`."""
    raise NotImplementedError("two_level_bound only runs inside numba kernels")


@overload(two_level_bound, inline="always", jit_options={"nogil": True})
def _two_level_bound(t, data, prior, pseudo, k, bound):
    if getattr(pseudo, "instance_class", None) is BasisPseudo:
        return lambda t, data, prior, pseudo, k, bound: basis_two_level_bound(t, data, prior, pseudo, k, bound)
    return lambda t, data, prior, pseudo, k, bound: _constant_two_level_bound(t, data, prior, pseudo, k, bound)


@numba.njit(cache=True, nogil=True)
def _constant_two_level_bound(t, data, prior, pseudo, k, bound):
    ti = t.ints
    s, e, a, b = ti[k, START], ti[k, END], ti[k, LEFT], ti[k, RIGHT]
    code0 = data.codes[ti[k, VAR]]
    # a leaf child: a cut above every code sends all its rows to its first cell
    code_l, c_l = (data.codes[ti[a, VAR]], ti[a, CUT]) if ti[a, LEFT] >= 0 else (code0, ALL_CODES)
    code_r, c_r = (data.codes[ti[b, VAR]], ti[b, CUT]) if ti[b, LEFT] >= 0 else (code0, ALL_CODES)
    (n_left, n_ll, n_rl), cells = split2_suff(pseudo.r, pseudo.w, t.perm, s, e, code0, ti[k, CUT], code_l, c_l, code_r,
                                              c_r, pseudo.threads)
    n_right = e - s - n_left
    if n_left == 0 or n_right == 0:
        return False, 0.0
    if ti[a, LEFT] >= 0 and (n_ll == 0 or n_ll == n_left):
        return False, 0.0
    if ti[b, LEFT] >= 0 and (n_rl == 0 or n_rl == n_right):
        return False, 0.0
    # a leaf child's second cell is empty by construction: left out, not added as a (rounded) zero
    bound += leaf_loglik(prior, cells[0], cells[1]) + leaf_loglik(prior, cells[4], cells[5])
    if ti[a, LEFT] >= 0:
        bound += leaf_loglik(prior, cells[2], cells[3])
    if ti[b, LEFT] >= 0:
        bound += leaf_loglik(prior, cells[6], cells[7])
    return True, bound


@numba.njit(cache=True, nogil=True)
def subtree_log_prior(t, prior, k, order):
    """Log tree prior of ``k``'s subtree on its rows at its depth: split probabilities and rule
    probabilities of its internal nodes, leaf factors of its leaves."""
    ti = t.ints
    total = 0.0
    for q in range(subtree_nodes(ti, k, order)):
        u = order[q]
        if ti[u, LEFT] < 0:
            total += leaf_log_prior(prior, ti[u, DEPTH], t.floats[u, LWAVAIL])
        else:
            total += log_psplit(prior, ti[u, DEPTH]) + t.floats[u, RULELP]
    return total


@numba.njit(cache=True, nogil=True)
def split_log_ratio_sums(prior, d, lwa, lwb, wa, sa, wb, sb):
    """Log posterior of a node at depth ``d`` split in two over it as a leaf, without the rule's prior, from
    the children's availabilities (``lwa``, ``lwb``) and sums (``wa, sa``, ``wb, sb``).

    >>> from pymc_treesamplers.engine.records import TreePrior
    >>> pr = TreePrior(0.95, 2.0, 0.0, 1.0)
    >>> # children without rows or cuts: only the root's split probability against staying a leaf
    >>> bool(abs(split_log_ratio_sums(pr, 0, NEG_INF, NEG_INF, 0.0, 0.0, 0.0, 0.0) - math.log(0.95 / 0.05)) < 1e-12)
    True
    """
    dlik = leaf_loglik(prior, wa, sa) + leaf_loglik(prior, wb, sb) - leaf_loglik(prior, wa + wb, sa + sb)
    return split_log_prior_ratio(prior, d, lwa, lwb) + dlik


@numba.njit(cache=True, nogil=True)
def split_log_prior_ratio(prior, d, lwa, lwb):
    """The tree prior's part of :func:`split_log_ratio_sums`: split probability and the children's leaf factors
    against the node's leaf factor."""
    return (
        log_psplit(prior, d)
        + leaf_log_prior(prior, d + 1, lwa)
        + leaf_log_prior(prior, d + 1, lwb)
        - log1m_psplit(prior, d)
    )


@numba.njit(cache=True, nogil=True)
def split_log_ratio(t, prior, pseudo, k):
    """Log posterior of ``k`` split into its two leaf children over ``k`` as a leaf, without the
    rule's prior (grow draws the rule from it; a death's rate adds it back)."""
    ti = t.ints
    tf = t.floats
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    left, right, both = children_logliks(prior, pseudo, t.perm, ti[a, START], ti[a, END], ti[b, START], ti[b, END],
                                         ti[k, VAR], parent_var(ti, k))
    return split_log_prior_ratio(prior, ti[k, DEPTH], tf[a, LWAVAIL], tf[b, LWAVAIL]) + (left + right - both)


# ------------------------------------------------------------------------------------- saving


@numba.njit(cache=True, nogil=True)
def _copy_node_rows(src_ints, src_floats, dst_ints, dst_floats, k):
    # element loops, not slice assignment: same speed, a fraction of the compile time. The float columns the
    # two have in common: a basis leaf's coefficients (engine/nodes.py) travel between the forest and the
    # driver's scratch tree, both as wide; the narrower buffers of the moves and particles (backups, proposal
    # trees) leave them stale, and the driver draws every leaf of an updated tree afresh
    nf = min(src_floats.shape[1], dst_floats.shape[1])
    for u in range(k):
        for f in range(src_ints.shape[1]):
            dst_ints[u, f] = src_ints[u, f]
        for f in range(nf):
            dst_floats[u, f] = src_floats[u, f]


@numba.njit(cache=True, nogil=True)
def backup(t, k, bk):
    """Save every node row and the row order of ``k``'s range into the :class:`Backup` ``bk``."""
    _copy_node_rows(t.ints, t.floats, bk.ints, bk.floats, t.nn[0])
    for q in range(t.ints[k, START], t.ints[k, END]):
        bk.perm[q] = t.perm[q]


@numba.njit(cache=True, nogil=True)
def restore(t, k, bk, nn):
    """Undo the changes since :func:`backup` (``nn``: the node count at backup time)."""
    t.nn[0] = nn
    _copy_node_rows(bk.ints, bk.floats, t.ints, t.floats, nn)
    for q in range(t.ints[k, START], t.ints[k, END]):
        t.perm[q] = bk.perm[q]


@numba.njit(cache=True, nogil=True)
def copy_nodes(src, dst):
    """Copy the node rows and node count of ``src`` into ``dst`` (not the row order)."""
    _copy_node_rows(src.ints, src.floats, dst.ints, dst.floats, src.nn[0])
    dst.nn[0] = src.nn[0]


@numba.njit(cache=True, nogil=True)
def copy_perm(src, dst):
    """Copy the row order of ``src`` into ``dst`` (one thread: a copy is memory-bound, and on 2 threads
    it measured 6x slower at 10^6 rows)."""
    for q in range(src.perm.shape[0]):
        dst.perm[q] = src.perm[q]


# ------------------------------------------------------------------------------------ fitting


@numba.njit(cache=True, nogil=True)
def draw_leaves(rng, t, prior, pseudo):
    """Draw every leaf of ``t`` from its conditional and subtract the tree from ``pseudo.r``.

    The leaves' sums come from one pass over the tree's rows (:func:`~pymc_treesamplers.engine.rows.ranges_suff`),
    then the draws in slot order."""
    nodes, starts, ends, total = leaf_ranges(t)
    sums = np.empty((nodes.shape[0], 2))
    ranges_suff(pseudo.r, pseudo.w, t.perm, starts, ends, total, pseudo.threads, sums)
    minus = np.empty(nodes.shape[0])
    for j in range(nodes.shape[0]):
        t.floats[nodes[j], VALUE] = leaf_draw(rng, prior, sums[j, 0], sums[j, 1])
        minus[j] = -1.0 * t.floats[nodes[j], VALUE]  # add_tree's sign * value, with sign -1
    # after every draw: leaves own disjoint rows, so no leaf's sums see another's subtraction
    add_ranges(pseudo.r, t.perm, starts, ends, minus, total, pseudo.threads)
