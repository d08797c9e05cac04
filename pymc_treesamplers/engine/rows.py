"""The O(n) passes over a node's rows, in blocks, on one thread or several: sums, adds, splits, a tree's fit.

On large data a tree update is dominated by a few passes over rows: the weighted sums of a node's
pseudo-data (:func:`range_suff`), adding a tree's fit to the residual or taking it off
(:func:`add_tree`), and the forest's fit at the training rows (``forest_sum``). Each pass here cuts
its range ``perm[s:e]`` into blocks of :data:`BLOCK` rows, a fixed unit that does not depend on the
thread count:

* a sum is taken per block and the block sums are added in block order, so the result (and every
  draw that follows from it) is bitwise the same with 1 thread or 8; a range shorter than
  :data:`PAR_MIN` rows is summed in one plain loop, and so are the leaves of a tree of fewer than
  :data:`PAR_MIN` rows in all (small data keep exactly the arithmetic they had before blocks existed);
* a tree's fit is added, and all its leaves' sums taken, by windows of the rows (window c of nb is the
  c-th nb-th of every leaf's range: :func:`add_tree`, :func:`ranges_suff`), so each part of the residual
  is visited once per pass, not once per leaf; an add touches each row once, so any split of the work
  gives the same result, and a leaf's sum is its windows' sums in window order;
* a proposed split is scored by one read-only pass (:func:`split_suff`: both sides' count and sums),
  and so is a proposed change of rules two levels deep (:func:`split2_suff`);
  a node's split (:func:`partition_blocks`) counts each block's left rows, then scatters every block
  to offsets fixed by those counts: a stable partition, the same on any thread count; the smallest
  and largest code of a long range (:func:`code_range_blocks`) are taken per block; a long node's
  collapse merges its children's rows back in row order (:func:`merge_rows`, by blocks along a
  merge path), so a long node's rows stay in increasing order and the passes over them read memory
  forward.

``threads > 1`` runs the blocks of ranges of at least :data:`PAR_MIN` rows on numba's thread pool
(``prange``; the count is numba's ``set_num_threads``, which the steps set around each sweep);
``threads == 1`` never enters the pool, so a default sampler launches no parallel region and a
process that forks later (PyMC's ``cores > 1``) is not affected. ``threads=None`` is one thread as the
engine's records carry it (:func:`kernel_threads`): numba drops a branch on ``threads is not None`` when the
argument is None, so a kernel compiled for one thread does not compile the parallel loops at all (a cold
compile's work for every ``prange`` variant, issue 60).

>>> import numpy as np
>>> r, w = np.arange(5.0), np.ones(5)
>>> perm = np.arange(5, dtype=np.int32)
>>> range_suff(r, w, perm, 1, 4, 1)
(3.0, 6.0)
"""

import contextlib
import os
from collections.abc import Iterator

import numba
import numpy as np

from .nodes import END, LEFT, START, VALUE
from .pool import start as start_pool

BLOCK = int(os.environ.get("PMT_ROWS_BLOCK", 1 << 13))
"""Rows per block: the unit of parallel work and of the summation order of long ranges. The
exactness tests set ``PMT_ROWS_BLOCK`` to a few rows so that the block paths run on enumerable data
(numba compiles it in: such a process needs its own ``NUMBA_CACHE_DIR``)."""

PAR_MIN = 2 * BLOCK
"""Ranges of at least this many rows are summed by blocks (and in parallel with ``threads > 1``)."""

SUM_WINDOWS = 4096
"""At most this many windows for the leaves' sums of one tree (:func:`ranges_suff`), so their partial
sums stay small (``(windows, leaves, 2)`` floats) however many rows; a constant, not the thread count."""


@numba.njit(cache=True, nogil=True, inline="always")
def row_weight(w, i):
    """Row ``i``'s weight in the pseudo-data's ``w``: ``w[i]``, or ``w[0]`` when ``w`` has length 1 (one weight
    for every row, :class:`~pymc_treesamplers.engine.records.Pseudo`).

    >>> row_weight(np.array([0.5, 2.0]), 1), row_weight(np.array([0.5]), 1)
    (2.0, 0.5)
    """
    return w[i] if w.shape[0] > 1 else w[0]


@numba.njit(cache=True, nogil=True, inline="always")
def _unit_weight(w, i):
    # the weight a row pass accumulates: w[i], or 1.0 when every row has the weight w[0], which the pass then
    # multiplies in once (_scale); so a pass over one shared weight reads no weights (8 of its 20 bytes a row)
    return w[i] if w.shape[0] > 1 else 1.0


@numba.njit(cache=True, nogil=True, inline="always")
def _scale(w):
    return w[0] if w.shape[0] == 1 else 1.0


@numba.njit(cache=True, nogil=True, inline="always")
def _block_suff(r, w, perm, a, b):
    W = 0.0
    S = 0.0
    for t in range(a, b):
        i = perm[t]
        wi = _unit_weight(w, i)
        W += wi
        S += wi * r[i]
    g = _scale(w)
    return g * W, g * S


@numba.njit(cache=True, nogil=True, parallel=True)
def _suff_par(r, w, perm, s, e, parts):
    for c in numba.prange(parts.shape[0]):
        a = s + c * BLOCK
        parts[c, 0], parts[c, 1] = _block_suff(r, w, perm, a, min(a + BLOCK, e))


@numba.njit(cache=True, nogil=True)
def range_suff(r, w, perm, s, e, threads):
    """``(W, S) = (sum w_i, sum w_i r_i)`` over the rows ``perm[s:e]``; by blocks when the range is long."""
    if e - s < PAR_MIN:
        return _block_suff(r, w, perm, s, e)
    nb = (e - s + BLOCK - 1) // BLOCK
    parts = np.empty((nb, 2))
    if threads is not None and threads > 1:
        _suff_par(r, w, perm, s, e, parts)
    else:
        for c in range(nb):
            a = s + c * BLOCK
            parts[c, 0], parts[c, 1] = _block_suff(r, w, perm, a, min(a + BLOCK, e))
    W = 0.0
    S = 0.0
    for c in range(nb):
        W += parts[c, 0]
        S += parts[c, 1]
    return W, S


@numba.njit(cache=True, nogil=True, inline="always")
def _block_split_suff(r, w, perm, a, b, code_v, c):
    # branch-free: a random split mispredicts half its branches; adding w * 0.0 leaves a sum unchanged
    nl = 0
    WL = 0.0
    SL = 0.0
    WR = 0.0
    SR = 0.0
    for t in range(a, b):
        i = perm[t]
        left = code_v[i] <= c
        f = 1.0 if left else 0.0
        wi = _unit_weight(w, i)
        wr = wi * r[i]
        nl += left
        WL += f * wi
        SL += f * wr
        WR += (1.0 - f) * wi
        SR += (1.0 - f) * wr
    g = _scale(w)
    return nl, g * WL, g * SL, g * WR, g * SR


@numba.njit(cache=True, nogil=True, parallel=True)
def _split_suff_par(r, w, perm, s, e, code_v, c, counts, parts):
    for k in numba.prange(parts.shape[0]):
        a = s + k * BLOCK
        counts[k], parts[k, 0], parts[k, 1], parts[k, 2], parts[k, 3] = _block_split_suff(
            r, w, perm, a, min(a + BLOCK, e), code_v, c
        )


@numba.njit(cache=True, nogil=True)
def split_suff(r, w, perm, s, e, code_v, c, threads):
    """``(n_left, W_left, S_left, W_right, S_right)`` of the rows ``perm[s:e]`` split by ``code_v <= c``,
    without moving them: what a proposed split needs, in one pass (by blocks on a long range).

    A grow is mostly rejected once a chain has found the data; scoring it without the partition (and
    the merge that undid it) leaves one read-only pass per proposal, and no serial step.

    >>> import numpy as np
    >>> r, w = np.arange(4.0), np.ones(4)
    >>> split_suff(r, w, np.arange(4, dtype=np.int32), 0, 4, np.array([0, 1, 0, 1], dtype=np.uint16), 0, 1)
    (2, 2.0, 2.0, 2.0, 4.0)
    """
    if e - s < PAR_MIN:
        return _block_split_suff(r, w, perm, s, e, code_v, c)
    nb = (e - s + BLOCK - 1) // BLOCK
    counts = np.empty(nb, dtype=np.int64)
    parts = np.empty((nb, 4))
    if threads is not None and threads > 1:
        _split_suff_par(r, w, perm, s, e, code_v, c, counts, parts)
    else:
        for k in range(nb):
            a = s + k * BLOCK
            counts[k], parts[k, 0], parts[k, 1], parts[k, 2], parts[k, 3] = _block_split_suff(
                r, w, perm, a, min(a + BLOCK, e), code_v, c
            )
    nl = 0
    WL = 0.0
    SL = 0.0
    WR = 0.0
    SR = 0.0
    for k in range(nb):
        nl += counts[k]
        WL += parts[k, 0]
        SL += parts[k, 1]
        WR += parts[k, 2]
        SR += parts[k, 3]
    return nl, WL, SL, WR, SR


@numba.njit(cache=True, nogil=True, inline="always")
def _block_split2_suff(r, w, perm, a, b, code0, c0, code_l, c_l, code_r, c_r, counts, parts):
    # branch-free, as _block_split_suff: each row's weight in the four cells is a product of 0/1 factors
    n0 = 0
    n_ll = 0
    n_rl = 0
    W0 = W1 = W2 = W3 = 0.0
    S0 = S1 = S2 = S3 = 0.0
    for t in range(a, b):
        i = perm[t]
        g0 = code0[i] <= c0
        gl = code_l[i] <= c_l
        gr = code_r[i] <= c_r
        f0 = 1.0 if g0 else 0.0
        fl = 1.0 if gl else 0.0
        fr = 1.0 if gr else 0.0
        wi = _unit_weight(w, i)
        wr = wi * r[i]
        ll = f0 * fl
        lr = f0 - ll
        rl = (1.0 - f0) * fr
        rr = (1.0 - f0) - rl
        n0 += g0
        n_ll += g0 & gl
        n_rl += (not g0) & gr
        W0 += ll * wi
        S0 += ll * wr
        W1 += lr * wi
        S1 += lr * wr
        W2 += rl * wi
        S2 += rl * wr
        W3 += rr * wi
        S3 += rr * wr
    counts[0] = n0
    counts[1] = n_ll
    counts[2] = n_rl
    g = _scale(w)
    parts[0] = g * W0
    parts[1] = g * S0
    parts[2] = g * W1
    parts[3] = g * S1
    parts[4] = g * W2
    parts[5] = g * S2
    parts[6] = g * W3
    parts[7] = g * S3


@numba.njit(cache=True, nogil=True, parallel=True)
def _split2_suff_par(r, w, perm, s, e, code0, c0, code_l, c_l, code_r, c_r, counts, parts):
    for k in numba.prange(parts.shape[0]):
        a = s + k * BLOCK
        _block_split2_suff(r, w, perm, a, min(a + BLOCK, e), code0, c0, code_l, c_l, code_r, c_r, counts[k], parts[k])


@numba.njit(cache=True, nogil=True)
def split2_suff(r, w, perm, s, e, code0, c0, code_l, c_l, code_r, c_r, threads):
    """:func:`split_suff` two levels down, without moving rows: the rows ``perm[s:e]`` split by ``code0 <= c0``,
    then the left side by ``code_l <= c_l`` and the right side by ``code_r <= c_r``. Returns the counts
    ``(n_left, n_left_left, n_right_left)`` and the ``(W, S)`` sums of the four cells, left-left, left-right,
    right-left, right-right, as an array of 8 (by blocks on a long range).

    A change or swap of a node whose children are leaves or split into leaves (most nodes of the small
    trees of a large forest) is scored from these in one read-only pass. A child that is a leaf is given
    a cut above every code: all its rows land in its left cell.

    >>> import numpy as np
    >>> code = np.array([0, 1, 2, 3], dtype=np.uint16)
    >>> counts, sums = split2_suff(np.arange(4.0), np.ones(4), np.arange(4, dtype=np.int32), 0, 4,
    ...                            code, 1, code, 0, code, 99, 1)
    >>> counts, sums.tolist()
    ((2, 1, 2), [1.0, 0.0, 1.0, 1.0, 2.0, 5.0, 0.0, 0.0])
    """
    nb = 1 if e - s < PAR_MIN else (e - s + BLOCK - 1) // BLOCK
    counts = np.empty((nb, 3), dtype=np.int64)
    parts = np.empty((nb, 8))
    if nb == 1:
        _block_split2_suff(r, w, perm, s, e, code0, c0, code_l, c_l, code_r, c_r, counts[0], parts[0])
    elif threads is not None and threads > 1:
        _split2_suff_par(r, w, perm, s, e, code0, c0, code_l, c_l, code_r, c_r, counts, parts)
    else:
        for k in range(nb):
            a = s + k * BLOCK
            _block_split2_suff(r, w, perm, a, min(a + BLOCK, e), code0, c0, code_l, c_l, code_r, c_r, counts[k],
                               parts[k])
    for k in range(1, nb):  # in block order: the same sums on any thread count
        for j in range(3):
            counts[0, j] += counts[k, j]
        for j in range(8):
            parts[0, j] += parts[k, j]
    return (counts[0, 0], counts[0, 1], counts[0, 2]), parts[0]


@numba.njit(cache=True, nogil=True)
def leaf_ranges(t):
    """The leaves of the tree ``t`` (node slots, in slot order) and their ranges of ``t.perm``:
    ``(nodes, starts, ends)``, and the rows they hold in all.

    >>> from pymc_treesamplers.engine.forest import Forest, tree_of
    >>> nodes, starts, ends, total = leaf_ranges(tree_of(Forest.empty(m=1, n=5).arrays(), 0))
    >>> nodes.tolist(), starts.tolist(), ends.tolist(), total
    ([0], [0], [5], 5)
    """
    ti = t.ints
    n_leaves = 0
    for k in range(t.nn[0]):
        if ti[k, LEFT] < 0:
            n_leaves += 1
    nodes = np.empty(n_leaves, dtype=np.int64)
    starts = np.empty(n_leaves, dtype=np.int64)
    ends = np.empty(n_leaves, dtype=np.int64)
    j = 0
    total = 0
    for k in range(t.nn[0]):
        if ti[k, LEFT] < 0:
            nodes[j] = k
            starts[j] = ti[k, START]
            ends[j] = ti[k, END]
            total += ends[j] - starts[j]
            j += 1
    return nodes, starts, ends, total


@numba.njit(cache=True, nogil=True, inline="always")
def _window(s, e, c, nb):
    # window c of nb of the range [s, e): its c-th nb-th (the windows partition it, empty ones included).
    # Leaves' rows are spread over all rows and (long ones) in increasing order, so the window c of every
    # leaf of a tree falls in about the c-th nb-th of the rows
    length = e - s
    return s + (length * c) // nb, s + (length * (c + 1)) // nb


@numba.njit(cache=True, nogil=True, inline="always")
def _window_suff(r, w, perm, starts, ends, c, nb, parts):
    # window c of every range, summed into parts[c, k]
    for k in range(starts.shape[0]):
        a, b = _window(starts[k], ends[k], c, nb)
        parts[c, k, 0], parts[c, k, 1] = _block_suff(r, w, perm, a, b)


@numba.njit(cache=True, nogil=True, parallel=True)
def _ranges_suff_par(r, w, perm, starts, ends, parts):
    nb = parts.shape[0]
    for c in numba.prange(nb):
        _window_suff(r, w, perm, starts, ends, c, nb, parts)


@numba.njit(cache=True, nogil=True)
def ranges_suff(r, w, perm, starts, ends, total, threads, out):
    """``out[k] = (W, S)`` of the rows ``perm[starts[k]:ends[k]]`` for every k (disjoint ranges holding
    ``total`` rows): every leaf of a tree in one pass.

    Below :data:`PAR_MIN` rows in all, one plain loop per range (as :func:`range_suff`). Otherwise by the
    windows of :func:`add_tree` (at most :data:`SUM_WINDOWS`): each window reads about one nb-th of ``r``
    and ``w`` once, where one pass per leaf reads all of them once per leaf; a range's sum is its windows'
    sums added in window order, the same on any thread count.

    >>> r, w, out = np.arange(6.0), np.ones(6), np.empty((2, 2))
    >>> ranges_suff(r, w, np.arange(6, dtype=np.int32), np.array([0, 2]), np.array([2, 6]), 6, 1, out)
    >>> out.tolist()
    [[2.0, 1.0], [4.0, 14.0]]
    """
    L = starts.shape[0]
    if total < PAR_MIN:
        for k in range(L):
            out[k, 0], out[k, 1] = _block_suff(r, w, perm, starts[k], ends[k])
        return
    nb = min((total + BLOCK - 1) // BLOCK, SUM_WINDOWS)
    parts = np.empty((nb, L, 2))
    if threads is not None and threads > 1:
        _ranges_suff_par(r, w, perm, starts, ends, parts)
    else:
        for c in range(nb):
            _window_suff(r, w, perm, starts, ends, c, nb, parts)
    for k in range(L):
        W = 0.0
        S = 0.0
        for c in range(nb):
            W += parts[c, k, 0]
            S += parts[c, k, 1]
        out[k, 0] = W
        out[k, 1] = S


@numba.njit(cache=True, nogil=True, inline="always")
def _add_window(out, perm, starts, ends, vals, c, nb):
    # window c of every range: out[row] += vals[k]
    for k in range(starts.shape[0]):
        a, b = _window(starts[k], ends[k], c, nb)
        v = vals[k]
        for q in range(a, b):
            out[perm[q]] += v


@numba.njit(cache=True, nogil=True, parallel=True)
def _add_par(out, perm, starts, ends, vals, nb):
    for c in numba.prange(nb):
        _add_window(out, perm, starts, ends, vals, c, nb)


@numba.njit(cache=True, nogil=True)
def add_tree(t, out, sign, threads=None):
    """``out[i] += sign * value(leaf of i)`` for every row of the tree ``t`` (a :class:`Tree`).

    By windows of the rows, not leaf by leaf: window ``c`` of ``nb`` takes the ``c``-th ``nb``-th of every
    leaf's range of ``t.perm``. A leaf's rows are spread over all of ``out`` (a split follows a covariate,
    not the row index) and a long leaf's rows are in increasing order, so a window writes about one
    ``nb``-th of ``out``, and each part of ``out`` is read and written once while it is in cache, not once
    per leaf (6 leaves of random rows out of 10^7, one thread: 16.7 ms leaf by leaf, 9.7 ms by windows).
    With ``threads > 1`` the windows run in parallel and the threads write apart. (The loop this replaced
    cut the tree's row order, leaf after leaf, into blocks: each thread took a leaf and walked ``out`` in
    step with the others, writing the same cache lines, and on 2 threads a sweep was slower than on one.)
    Each row gets exactly one add, so the result is the same on any thread count and any window count.
    """
    nodes, starts, ends, total = leaf_ranges(t)
    vals = np.empty(nodes.shape[0])
    for j in range(nodes.shape[0]):
        vals[j] = sign * t.floats[nodes[j], VALUE]
    add_ranges(out, t.perm, starts, ends, vals, total, threads)


@numba.njit(cache=True, nogil=True)
def add_ranges(out, perm, starts, ends, vals, total, threads):
    """``out[perm[q]] += vals[k]`` for every position ``q`` of every range ``starts[k]:ends[k]`` (disjoint
    ranges holding ``total`` rows), by the windows of :func:`add_tree`: its pass, for a caller that has
    the leaves' ranges already (:func:`~pymc_treesamplers.engine.tree.draw_leaves`).

    >>> out = np.zeros(4)
    >>> add_ranges(out, np.array([3, 0, 1, 2], dtype=np.int32), np.array([0, 1]), np.array([1, 4]),
    ...            np.array([5.0, -1.0]), 4, 1)
    >>> out.tolist()
    [-1.0, -1.0, -1.0, 5.0]
    """
    nb = (total + BLOCK - 1) // BLOCK
    if threads is not None and threads > 1 and total >= PAR_MIN:
        _add_par(out, perm, starts, ends, vals, nb)
    else:
        for c in range(nb):
            _add_window(out, perm, starts, ends, vals, c, nb)


def kernel_threads(threads: int | None) -> int | None:
    """``threads`` as the engine's records hand it to the kernels: None for one thread, so that the kernels
    compiled for it leave out the parallel loops; else the count.

    >>> kernel_threads(1) is None, kernel_threads(2)
    (True, 2)
    """
    return None if threads is None or threads == 1 else int(threads)


def check_threads(threads: int) -> int:
    """``threads`` as an int in ``1 .. numba.config.NUMBA_NUM_THREADS``, else a ValueError/TypeError naming it.

    >>> check_threads(1)
    1
    """
    if isinstance(threads, bool) or not isinstance(threads, int | np.integer):
        raise TypeError(f"threads must be an int, got {type(threads).__name__}")
    most = numba.config.NUMBA_NUM_THREADS
    if not 1 <= threads <= most:
        raise ValueError(
            f"threads must be between 1 and {most} (numba's NUMBA_NUM_THREADS, this machine's cores by default), "
            f"got {threads}"
        )
    return int(threads)


@contextlib.contextmanager
def numba_threads(threads: int) -> Iterator[None]:
    """Run the block with numba's thread count (thread-local) at ``threads``, then restore it.

    >>> with numba_threads(1):
    ...     pass
    """
    start_pool()  # before any kernel: a cached one that links parallel loops needs the pool started
    if threads == 1:  # the kernels do not enter the pool: leave numba's thread count untouched
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield
    finally:
        numba.set_num_threads(before)


# ------------------------------------------------------------------ partition and code range


@numba.njit(cache=True, nogil=True, inline="always")
def _block_count(perm, a, b, code_v, c):
    k = 0
    for q in range(a, b):
        if code_v[perm[q]] <= c:
            k += 1
    return k


@numba.njit(cache=True, nogil=True, inline="always")
def _block_scatter(perm, a, b, code_v, c, tmp, lo, hi):
    for q in range(a, b):  # branch-free (see _block_split_suff)
        row = perm[q]
        left = code_v[row] <= c
        tmp[lo if left else hi] = row
        lo += left
        hi += 1 - left


@numba.njit(cache=True, nogil=True, parallel=True)
def _count_par(perm, s, e, code_v, c, counts):
    for k in numba.prange(counts.shape[0]):
        a = s + k * BLOCK
        counts[k] = _block_count(perm, a, min(a + BLOCK, e), code_v, c)


@numba.njit(cache=True, nogil=True, parallel=True)
def _scatter_par(perm, s, e, code_v, c, tmp, lo, hi):
    for k in numba.prange(lo.shape[0]):
        a = s + k * BLOCK
        _block_scatter(perm, a, min(a + BLOCK, e), code_v, c, tmp, lo[k], hi[k])


@numba.njit(cache=True, nogil=True, parallel=True)
def _copy_par(tmp, perm, s):
    nb = (tmp.shape[0] + BLOCK - 1) // BLOCK
    for k in numba.prange(nb):
        for q in range(k * BLOCK, min((k + 1) * BLOCK, tmp.shape[0])):
            perm[s + q] = tmp[q]


@numba.njit(cache=True, nogil=True)
def partition_blocks(perm, s, e, code_v, c, threads):
    """Stable partition of ``perm[s:e]``: rows with ``code_v <= c`` first, each side in its old order;
    returns how many go left.

    By blocks (count per block, offsets, scatter into a buffer, copy back), so the result is the same
    on any number of threads. Stable, unlike the in-place partition of short ranges: rows that start in
    increasing order stay so within every node, which keeps the passes over a node's rows close to
    sequential in memory.
    """
    nb = (e - s + BLOCK - 1) // BLOCK
    counts = np.empty(nb, dtype=np.int64)
    if threads is not None and threads > 1:
        _count_par(perm, s, e, code_v, c, counts)
    else:
        for k in range(nb):
            a = s + k * BLOCK
            counts[k] = _block_count(perm, a, min(a + BLOCK, e), code_v, c)
    lo = np.empty(nb, dtype=np.int64)
    hi = np.empty(nb, dtype=np.int64)
    n_left = 0
    for k in range(nb):
        lo[k] = n_left
        n_left += counts[k]
    for k in range(nb):  # right side: after every left row, in block order
        hi[k] = n_left + k * BLOCK - lo[k]
    tmp = np.empty(e - s, dtype=perm.dtype)
    if threads is not None and threads > 1:
        _scatter_par(perm, s, e, code_v, c, tmp, lo, hi)
        _copy_par(tmp, perm, s)
    else:
        for k in range(nb):
            a = s + k * BLOCK
            _block_scatter(perm, a, min(a + BLOCK, e), code_v, c, tmp, lo[k], hi[k])
        for q in range(e - s):
            perm[s + q] = tmp[q]
    return n_left


@numba.njit(cache=True, nogil=True, inline="always")
def block_range(code_v, perm, a, b):
    """Smallest and largest code over ``perm[a:b]`` in one plain loop (a block, or a short range)."""
    mn = code_v[perm[a]]
    mx = mn
    for q in range(a + 1, b):
        v = code_v[perm[q]]
        if v < mn:
            mn = v
        elif v > mx:
            mx = v
    return mn, mx


@numba.njit(cache=True, nogil=True, parallel=True)
def _range_par(code_v, perm, s, e, parts):
    for k in numba.prange(parts.shape[0]):
        a = s + k * BLOCK
        parts[k, 0], parts[k, 1] = block_range(code_v, perm, a, min(a + BLOCK, e))


@numba.njit(cache=True, nogil=True)
def code_range_blocks(code_v, perm, s, e, threads):
    """Smallest and largest code over ``perm[s:e]`` by blocks (in parallel with ``threads > 1``)."""
    nb = (e - s + BLOCK - 1) // BLOCK
    parts = np.empty((nb, 2), dtype=np.int64)
    if threads is not None and threads > 1:
        _range_par(code_v, perm, s, e, parts)
    else:
        for k in range(nb):
            a = s + k * BLOCK
            parts[k, 0], parts[k, 1] = block_range(code_v, perm, a, min(a + BLOCK, e))
    mn = parts[0, 0]
    mx = parts[0, 1]
    for k in range(1, nb):
        mn = min(mn, parts[k, 0])
        mx = max(mx, parts[k, 1])
    return mn, mx


@numba.njit(cache=True, nogil=True, inline="always")
def _merge_into(perm, i, ie, j, je, tmp, q, qe):
    # the smaller row index first (row indices are distinct): fills tmp[q:qe]; branch-free selects,
    # since two interleaved runs mispredict a branch on every other row
    big = np.iinfo(perm.dtype).max
    while q < qe:
        a = perm[i] if i < ie else big
        b = perm[j] if j < je else big
        take_a = a < b
        tmp[q] = a if take_a else b
        i += take_a
        j += 1 - take_a
        q += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _merge_split(perm, s, mid, e, d):
    # how many of the first d merged rows come from perm[s:mid] (binary search along the diagonal)
    lo = max(0, d - (e - mid))
    hi = min(d, mid - s)
    while lo < hi:
        h = (lo + hi) // 2
        if perm[s + h] < perm[mid + d - h - 1]:
            lo = h + 1
        else:
            hi = h
    return lo


@numba.njit(cache=True, nogil=True)
def _merge_splits(perm, s, mid, e):
    # where each block of the output starts in both runs; clamped so consecutive blocks take
    # consecutive, disjoint pieces of each run even if a run is not sorted (rows a short node's
    # in-place split left unordered): the blocks then always make a permutation of the node's rows
    nb = (e - s + BLOCK - 1) // BLOCK
    at = np.empty(nb + 1, dtype=np.int64)
    at[0] = 0
    for k in range(1, nb + 1):
        d = min(k * BLOCK, e - s)
        raw = _merge_split(perm, s, mid, e, d)
        at[k] = min(max(raw, at[k - 1]), at[k - 1] + d - (k - 1) * BLOCK)
    return at


@numba.njit(cache=True, nogil=True, inline="always")
def _merge_block(perm, s, mid, e, at, tmp, k):
    # output block k: its pieces of both runs start where _merge_splits put them
    d0 = k * BLOCK
    d1 = min(d0 + BLOCK, e - s)
    _merge_into(perm, s + at[k], s + at[k + 1], mid + d0 - at[k], mid + d1 - at[k + 1], tmp, d0, d1)


@numba.njit(cache=True, nogil=True, parallel=True)
def _merge_par(perm, s, mid, e, at, tmp):
    for k in numba.prange(at.shape[0] - 1):
        _merge_block(perm, s, mid, e, at, tmp, k)


@numba.njit(cache=True, nogil=True)
def merge_rows(perm, s, mid, e, threads=None):
    """Merge the runs ``perm[s:mid]`` and ``perm[mid:e]`` by row index, in place (a node's collapse).

    Stable splits keep a node's rows in increasing order when they were; merging on a collapse puts
    them back in order (any merge is still a permutation of the node's rows, so this is about memory
    access, never about which rows a node holds). Without it every collapse left two interleaved runs
    behind, and after a few sweeps the passes over a leaf's rows were random gathers. A long range is
    merged by blocks of the output, each block's start found in both runs by binary search (a merge
    path), on ``threads`` threads: the same result on any thread count.
    """
    tmp = np.empty(e - s, dtype=perm.dtype)
    if e - s < PAR_MIN:
        _merge_into(perm, s, mid, mid, e, tmp, 0, e - s)
    else:
        at = _merge_splits(perm, s, mid, e)
        if threads is not None and threads > 1:
            _merge_par(perm, s, mid, e, at, tmp)
            _copy_par(tmp, perm, s)
            return
        for k in range(at.shape[0] - 1):
            _merge_block(perm, s, mid, e, at, tmp, k)
    for q in range(e - s):
        perm[s + q] = tmp[q]
