"""The O(n) passes over a node's rows, in blocks, on one thread or several: sums, adds, a tree's fit.

On large data a tree update is dominated by a few passes over rows: the weighted sums of a node's
pseudo-data (:func:`range_suff`), adding a tree's fit to the residual or taking it off
(:func:`add_tree`), and the forest's fit at the training rows (``forest_sum``). Each pass here cuts
its range ``perm[s:e]`` into blocks of :data:`BLOCK` rows, a fixed unit that does not depend on the
thread count:

* a sum is taken per block and the block sums are added in block order, so the result (and every
  draw that follows from it) is bitwise the same with 1 thread or 8; a range shorter than
  :data:`PAR_MIN` rows is summed in one plain loop (small data keep exactly the arithmetic they had
  before blocks existed);
* an add touches each row once, so any split of the work gives the same result.

``threads > 1`` runs the blocks of ranges of at least :data:`PAR_MIN` rows on numba's thread pool
(``prange``; the count is numba's ``set_num_threads``, which the steps set around each sweep);
``threads == 1`` never enters the pool, so a default sampler launches no parallel region and a
process that forks later (PyMC's ``cores > 1``) is not affected.

>>> import numpy as np
>>> r, w = np.arange(5.0), np.ones(5)
>>> pj = np.arange(5, dtype=np.int32)
>>> range_suff(r, w, pj, 1, 4, 1)
(3.0, 6.0)
"""

import contextlib
import os
from collections.abc import Iterator

import numba
import numpy as np

from .layout import END, LEFT, START, VALUE

# numba's OpenMP layer aborts any process forked after it was loaded ("fork() called from a process
# already using GNU OpenMP"), and loading a kernel with a parallel loop loads it: PyMC forks its chain
# processes on Linux. The workqueue layer is fork-safe; it does not allow two threads of one process to
# launch parallel loops at once, which the kernels only do with ``threads > 1``. A layer the user chose
# (environment or numba.config) is left alone.
if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
    numba.config.THREADING_LAYER = "workqueue"

BLOCK = 1 << 14
"""Rows per block: the unit of parallel work and of the summation order of long ranges."""

PAR_MIN = 4 * BLOCK
"""Ranges of at least this many rows are summed by blocks (and in parallel with ``threads > 1``)."""


@numba.njit(cache=True, nogil=True, inline="always")
def _block_suff(r, w, pj, a, b):
    W = 0.0
    S = 0.0
    for t in range(a, b):
        i = pj[t]
        W += w[i]
        S += w[i] * r[i]
    return W, S


@numba.njit(cache=True, nogil=True, parallel=True)
def _suff_par(r, w, pj, s, e, parts):
    for c in numba.prange(parts.shape[0]):
        a = s + c * BLOCK
        parts[c, 0], parts[c, 1] = _block_suff(r, w, pj, a, min(a + BLOCK, e))


@numba.njit(cache=True, nogil=True)
def range_suff(r, w, pj, s, e, threads):
    """``(W, S) = (sum w_i, sum w_i r_i)`` over the rows ``pj[s:e]``; by blocks when the range is long."""
    if e - s < PAR_MIN:
        return _block_suff(r, w, pj, s, e)
    nb = (e - s + BLOCK - 1) // BLOCK
    parts = np.empty((nb, 2))
    if threads > 1:
        _suff_par(r, w, pj, s, e, parts)
    else:
        for c in range(nb):
            a = s + c * BLOCK
            parts[c, 0], parts[c, 1] = _block_suff(r, w, pj, a, min(a + BLOCK, e))
    W = 0.0
    S = 0.0
    for c in range(nb):
        W += parts[c, 0]
        S += parts[c, 1]
    return W, S


@numba.njit(cache=True, nogil=True, inline="always")
def _block_add(out, pj, a, b, starts, ends, vals, k):
    # leaves sorted by start; ``k`` is the leaf holding position ``a``
    for q in range(a, b):
        while q >= ends[k]:
            k += 1
        out[pj[q]] += vals[k]


@numba.njit(cache=True, nogil=True)
def _first_leaf(starts, ends, q):
    lo = 0
    hi = starts.shape[0] - 1
    while lo < hi:  # the last leaf whose start is <= q
        mid = (lo + hi + 1) // 2
        if starts[mid] <= q:
            lo = mid
        else:
            hi = mid - 1
    return lo


@numba.njit(cache=True, nogil=True, parallel=True)
def _add_par(out, pj, s, e, starts, ends, vals):
    nb = (e - s + BLOCK - 1) // BLOCK
    for c in numba.prange(nb):
        a = s + c * BLOCK
        _block_add(out, pj, a, min(a + BLOCK, e), starts, ends, vals, _first_leaf(starts, ends, a))


@numba.njit(cache=True, nogil=True)
def add_tree(t, out, sign, threads=1):
    """``out[i] += sign * value(leaf of i)`` for every row of the tree ``t`` (a :class:`Tree`).

    Leaves own contiguous ranges of ``t.perm`` that together cover it, so one pass in position order
    (leaves sorted by their start) reaches every row once; with ``threads > 1`` and a long ``perm``
    the positions are cut into blocks run in parallel.
    """
    ti = t.ints
    n_leaves = 0
    for k in range(t.nn[0]):
        if ti[k, LEFT] < 0:
            n_leaves += 1
    starts = np.empty(n_leaves, dtype=np.int64)
    ends = np.empty(n_leaves, dtype=np.int64)
    vals = np.empty(n_leaves)
    j = 0
    for k in range(t.nn[0]):
        if ti[k, LEFT] < 0:
            # insertion into place by start: few leaves
            q = j
            while q > 0 and starts[q - 1] > ti[k, START]:
                starts[q] = starts[q - 1]
                ends[q] = ends[q - 1]
                vals[q] = vals[q - 1]
                q -= 1
            starts[q] = ti[k, START]
            ends[q] = ti[k, END]
            vals[q] = sign * t.floats[k, VALUE]
            j += 1
    e = ends[n_leaves - 1]
    s = starts[0]
    if threads > 1 and e - s >= PAR_MIN:
        _add_par(out, t.perm, s, e, starts, ends, vals)
    else:
        _block_add(out, t.perm, s, e, starts, ends, vals, 0)


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
    if threads == 1:  # the kernels do not enter the pool: leave numba untouched
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield
    finally:
        numba.set_num_threads(before)
