"""Array-based forests: allocation, node bookkeeping, row partitions, sums of leaf values.

See :mod:`pymc_treesamplers.layout` for the meaning of every array. All kernels here are numba
functions over one tree's views (``ti = ints[j]``, ``tf = floats[j]``, ``pj = perm[j]``,
``nn = n_nodes[j:j+1]``) so a move touches only its own tree.
"""

from dataclasses import dataclass

import numba
import numpy as np

from .layout import (
    CUT,
    DEPTH,
    END,
    LEFT,
    LWAVAIL,
    N_FLOAT_FIELDS,
    N_INT_FIELDS,
    PARENT,
    RIGHT,
    RULELP,
    START,
    VALUE,
    VAR,
)
from .prior import code_range, node_log_avail, rule_log_prob


@dataclass
class Forest:
    """The state of ``m`` trees on ``n`` training rows (plain arrays, picklable).

    >>> f = Forest.empty(m=3, n=5, value0=0.1)
    >>> f.n_nodes.tolist()
    [1, 1, 1]
    """

    ints: np.ndarray
    floats: np.ndarray
    perm: np.ndarray
    n_nodes: np.ndarray

    @classmethod
    def empty(cls, m: int, n: int, value0: float, cap: int = 16) -> "Forest":
        ints = np.full((m, cap, N_INT_FIELDS), -1, dtype=np.int32)
        floats = np.zeros((m, cap, N_FLOAT_FIELDS))
        ints[:, 0, DEPTH] = 0
        ints[:, 0, START] = 0
        ints[:, 0, END] = n
        floats[:, 0, VALUE] = value0
        perm = np.tile(np.arange(n, dtype=np.int32), (m, 1))
        return cls(ints, floats, perm, np.ones(m, dtype=np.int32))

    @property
    def m(self) -> int:
        return self.ints.shape[0]

    @property
    def capacity(self) -> int:
        return self.ints.shape[1]

    def grow_capacity(self) -> None:
        """Double the node capacity of every tree (rare: trees outgrow the current size)."""
        m, cap, _ = self.ints.shape
        ints = np.full((m, 2 * cap, N_INT_FIELDS), -1, dtype=np.int32)
        floats = np.zeros((m, 2 * cap, N_FLOAT_FIELDS))
        ints[:, :cap] = self.ints
        floats[:, :cap] = self.floats
        self.ints, self.floats = ints, floats

    def copy(self) -> "Forest":
        return Forest(self.ints.copy(), self.floats.copy(), self.perm.copy(), self.n_nodes.copy())


@numba.njit(cache=True, nogil=True)
def init_root_availability(codes, wsplit, floats, perm):
    """Set every root's log available weight (roots hold all rows)."""
    n = perm.shape[1]
    for j in range(floats.shape[0]):
        floats[j, 0, LWAVAIL] = node_log_avail(codes, wsplit, perm[j], 0, n)


@numba.njit(cache=True, nogil=True)
def partition_rows(pj, s, e, code_v, c):
    """Reorder ``pj[s:e]`` so rows with ``code_v <= c`` come first; return how many do."""
    lo = s
    hi = e - 1
    while True:
        while lo <= hi and code_v[pj[lo]] <= c:
            lo += 1
        while lo <= hi and code_v[pj[hi]] > c:
            hi -= 1
        if lo >= hi:
            break
        tmp = pj[lo]
        pj[lo] = pj[hi]
        pj[hi] = tmp
        lo += 1
        hi -= 1
    return lo - s


@numba.njit(cache=True, nogil=True)
def is_leaf(ti, k):
    return ti[k, LEFT] < 0


@numba.njit(cache=True, nogil=True)
def set_leaf(ti, tf, k, parent, depth, s, e, lwavail):
    """Write a fresh leaf into slot ``k``."""
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
def split_leaf(ti, tf, pj, nn, k, v, c, n_cuts, codes, wsplit, logw):
    """Split leaf ``k`` by ``code_v <= c`` into two new leaves in slots ``nn[0]``, ``nn[0] + 1``.

    Partitions the leaf's rows, writes the children (with their availability) and the rule with its
    log prior probability (``n_cuts`` valid cuts of ``v`` in ``k``); returns the split point in ``pj``.
    """
    s = ti[k, START]
    e = ti[k, END]
    mid = s + partition_rows(pj, s, e, codes[v], c)
    a = nn[0]
    d = ti[k, DEPTH]
    set_leaf(ti, tf, a, k, d + 1, s, mid, node_log_avail(codes, wsplit, pj, s, mid))
    set_leaf(ti, tf, a + 1, k, d + 1, mid, e, node_log_avail(codes, wsplit, pj, mid, e))
    ti[k, VAR] = v
    ti[k, CUT] = c
    ti[k, LEFT] = a
    ti[k, RIGHT] = a + 1
    tf[k, RULELP] = rule_log_prob(logw[v], tf[k, LWAVAIL], n_cuts)
    nn[0] += 2
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
def collapse(ti, tf, nn, k):
    """Turn internal node ``k`` whose children are leaves into a leaf, freeing both slots.

    The last nodes are moved into the freed slots so the tree stays compact.
    """
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    ti[k, VAR] = -1
    ti[k, CUT] = -1
    ti[k, LEFT] = -1
    ti[k, RIGHT] = -1
    tf[k, RULELP] = 0.0
    hi = max(a, b)
    lo = min(a, b)
    for slot in (hi, lo):
        last = nn[0] - 1
        if slot != last:
            _move_node(ti, tf, last, slot)
        nn[0] -= 1


@numba.njit(cache=True, nogil=True)
def repartition_subtree(ti, pj, codes, k, stack):
    """Re-split the rows of ``k``'s subtree by the current rules; False if a split is invalid.

    A split that leaves a side empty has prior probability zero under the tree prior, so the
    caller rejects such a proposal. ``stack`` is scratch of length >= number of nodes.
    """
    top = 0
    stack[top] = k
    top += 1
    while top > 0:
        top -= 1
        u = stack[top]
        if ti[u, LEFT] < 0:
            continue
        s = ti[u, START]
        e = ti[u, END]
        nl = partition_rows(pj, s, e, codes[ti[u, VAR]], ti[u, CUT])
        if nl == 0 or nl == e - s:
            return False
        a = ti[u, LEFT]
        b = ti[u, RIGHT]
        ti[a, START] = s
        ti[a, END] = s + nl
        ti[b, START] = s + nl
        ti[b, END] = e
        stack[top] = a
        stack[top + 1] = b
        top += 2
    return True


@numba.njit(cache=True, nogil=True)
def refresh_subtree_prior(ti, tf, pj, codes, wsplit, logw, k, stack, include_root_avail):
    """Recompute available weights and rule probabilities below (and at) node ``k``.

    Used after a change of rules re-partitioned the subtree. ``k``'s own rows do not change, so
    its available weight is refreshed only if asked.
    """
    top = 0
    stack[top] = k
    top += 1
    while top > 0:
        top -= 1
        u = stack[top]
        s = ti[u, START]
        e = ti[u, END]
        if u != k or include_root_avail:
            tf[u, LWAVAIL] = node_log_avail(codes, wsplit, pj, s, e)
        if ti[u, LEFT] >= 0:
            v = ti[u, VAR]
            mn, mx = code_range(codes[v], pj, s, e)
            tf[u, RULELP] = rule_log_prob(logw[v], tf[u, LWAVAIL], mx - mn)
            stack[top] = ti[u, LEFT]
            stack[top + 1] = ti[u, RIGHT]
            top += 2


@numba.njit(cache=True, nogil=True)
def add_tree(ti, tf, pj, nn, out, sign):
    """``out[i] += sign * value(leaf of i)`` for every row: adds or removes one tree's fit."""
    for k in range(nn[0]):
        if ti[k, LEFT] < 0:
            val = sign * tf[k, VALUE]
            for t in range(ti[k, START], ti[k, END]):
                out[pj[t]] += val


@numba.njit(cache=True, nogil=True)
def forest_sum(ints, floats, perm, n_nodes, out):
    """Sum of all trees at the training rows, trees added in order 0..m-1 for every row.

    The same order as prediction on new data, so both give bitwise-identical results.
    """
    out[:] = 0.0
    for j in range(ints.shape[0]):
        add_tree(ints[j], floats[j], perm[j], n_nodes[j : j + 1], out, 1.0)


@numba.njit(cache=True, nogil=True)
def forest_summary(ints, n_nodes, split_counts):
    """Mean tree depth and mean number of leaves; per-variable split counts into ``split_counts``."""
    split_counts[:] = 0
    depth_total = 0.0
    leaves_total = 0.0
    m = ints.shape[0]
    for j in range(m):
        dmax = 0
        for k in range(n_nodes[j]):
            if ints[j, k, LEFT] < 0:
                leaves_total += 1.0
                if ints[j, k, DEPTH] > dmax:
                    dmax = ints[j, k, DEPTH]
            else:
                split_counts[ints[j, k, VAR]] += 1
        depth_total += dmax
    return depth_total / m, leaves_total / m
