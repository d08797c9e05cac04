"""What the host reads from and writes to the GPU sweep's node tables and rows, for the CPU twin and the device
driver alike: a new chain's tables, the leaf every row reaches, the fit summed from the leaf slots, the trees
in preorder (the stored forest's format), and the residual's moves.

>>> import numpy as np
>>> z = np.array([1.0, 2.0]); moved_by(z, np.array([1.0, 1.5]))
(0.5, 1.5)
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .layout import CUT, DEPTH, LEFT, MAXN, N_INTS, NEG_INF, RIGHT, VAR


@numba.njit(cache=True)
def init_state(ints, lohi, cnt, val, log_avail, used, top, root_lo, root_hi, n, value, wsplit):
    """Every tree a single leaf over all ``n`` rows with leaf ``value``."""
    m = ints.shape[0]
    total = 0.0
    for v in range(root_lo.shape[0]):
        if wsplit[v] > 0.0 and root_hi[v] > root_lo[v]:
            total += wsplit[v]
    lw = math.log(total) if total > 0.0 else NEG_INF
    for j in range(m):
        for k in range(ints.shape[1]):
            used[j, k] = 0
            for f in range(N_INTS):
                ints[j, k, f] = -1
        used[j, 0] = 1
        top[j] = 1
        ints[j, 0, DEPTH] = 0
        for v in range(root_lo.shape[0]):
            lohi[j, 0, 0, v] = root_lo[v]
            lohi[j, 0, 1, v] = root_hi[v]
        cnt[j, 0] = n
        val[j, 0] = value
        log_avail[j, 0] = lw



def row_leaves(ints, j, codes, out):
    """``out[i]``: the leaf slot of tree ``j`` that row ``i`` reaches (the node table read on the codes)."""
    for i in range(codes.shape[1]):
        k = 0
        while ints[j, k, LEFT] >= 0:
            k = ints[j, k, LEFT] if codes[ints[j, k, VAR], i] <= ints[j, k, CUT] else ints[j, k, RIGHT]
        out[i] = k


@numba.njit(cache=True)
def preorder(ints, val, thr, counts, var, vals):
    """Trees in preorder (left first), as the stored forest format holds them: node counts, split variables
    (``-1`` leaf) and values (the threshold ``thr[v, c]`` of a split, the leaf value). Returns nodes written."""
    m = ints.shape[0]
    stack = np.empty(MAXN + 1, dtype=np.int64)
    pos = 0
    for j in range(m):
        top = 0
        stack[0] = 0
        start = pos
        while top >= 0:
            k = stack[top]
            top -= 1
            if ints[j, k, LEFT] < 0:
                var[pos] = -1
                vals[pos] = val[j, k]
            else:
                var[pos] = ints[j, k, VAR]
                vals[pos] = thr[ints[j, k, VAR], ints[j, k, CUT]]
                top += 1
                stack[top] = ints[j, k, RIGHT]
                top += 1
                stack[top] = ints[j, k, LEFT]
            pos += 1
        counts[j] = pos - start
    return pos


@numba.njit(cache=True)
def fit_from_slots(leaf, val, out):
    """``out[i]``: the forest's fit at row ``i``, the sum over trees ``j = 0 .. m-1`` (in that order, from 0.0,
    as ``pmt.predict`` adds them) of ``val[j, leaf[j, i]]``; the leaf slots must be current (after a flush)."""
    m = leaf.shape[0]
    for i in range(leaf.shape[1]):
        s = 0.0
        for j in range(m):
            s += val[j, np.int64(leaf[j, i])]
        out[i] = s


@numba.njit(cache=True)
def moved_by(z, z_old):
    """``(max |z - z_old|, max |z_old|)`` in one pass (the step's test of whether the pseudo-data moved, at
    10^6 rows a few milliseconds less per draw than numpy's four passes and two temporaries)."""
    d = 0.0
    a = 0.0
    for i in range(z.shape[0]):
        e = abs(z[i] - z_old[i])
        if e > d:
            d = e
        e = abs(z_old[i])
        if e > a:
            a = e
    return d, a


@numba.njit(cache=True)
def shift_residual(r, dz):
    """``r += dz`` (the pseudo-data moved by ``dz``: the residual moves with it)."""
    for i in range(r.shape[0]):
        r[i] = r[i] + dz[i]
