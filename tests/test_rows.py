"""Passes over rows on several threads (pymc_treesamplers/rows.py): the same numbers whatever the thread count.

* the block sums of a long range are bitwise the same with 1 and 2 threads, and equal a plain sum up
  to rounding; a short range keeps the plain loop;
* a tree's fit added on 2 threads equals the serial add bit for bit, on every row;
* whole chains: every sampler with ``threads=2`` gives bitwise the draws (values, forests, stats) of
  ``threads=1`` on data long enough that the sweeps take the parallel paths; a deliberately
  thread-dependent summation (blocks of ``n / threads`` rows) is caught by the same comparison;
* ``threads`` is checked before sampling, and a process that loaded the parallel kernels can still
  fork PyMC's chain workers (the reason for numba's TBB or workqueue layer, not OpenMP);
* a long partition (split_leaf) is stable and the same on any thread count; a long code range by blocks;
  a root's code ranges read from the data record;
* a proposed split scored in place (split_suff, side_log_avail) gives the numbers of the split it stands for,
  and so does a change of rules two levels deep (split2_suff);
  a long collapse merges by blocks along a merge path: the sorted merge, the same on any thread count.
"""

import multiprocessing
import os

import numba
import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers.datasets import friedman1
from pymc_treesamplers.engine.nodes import DEPTH, END, LEFT, RIGHT, START, VALUE
from pymc_treesamplers.engine.records import Tree
from pymc_treesamplers.engine.rows import (
    BLOCK,
    PAR_MIN,
    add_tree,
    check_threads,
    numba_threads,
    range_suff,
    ranges_suff,
)

TWO = numba.config.NUMBA_NUM_THREADS >= 2
needs_two = pytest.mark.skipif(not TWO, reason="numba has a single thread on this machine")


def _long_pseudo_data(seed):
    """Pseudo-data ``r``, weights ``w`` and a shuffled row order over a few blocks' worth of rows."""
    rng = np.random.default_rng(seed)
    n = 3 * PAR_MIN + 123
    return n, rng.normal(size=n) * 1e3, rng.uniform(0.5, 2.0, size=n), rng.permutation(n).astype(np.int32)


@needs_two
def test_block_sums_do_not_depend_on_threads():
    n, r, w, pj = _long_pseudo_data(0)
    one = range_suff(r, w, pj, 7, n, 1)
    with numba_threads(2):
        two = range_suff(r, w, pj, 7, n, 2)
    assert one == two  # bitwise: same blocks, block sums added in block order
    np.testing.assert_allclose(one, (w[pj[7:]].sum(), (w * r)[pj[7:]].sum()), rtol=1e-12)
    short = range_suff(r, w, pj, 0, PAR_MIN - 1, 2)
    W = S = 0.0
    for i in pj[: PAR_MIN - 1]:  # the plain loop, unchanged for short ranges
        W += w[i]
        S += w[i] * r[i]
    assert short == (W, S)


@needs_two
def test_all_leaves_sums_by_windows_do_not_depend_on_threads():
    # a tree's leaves summed in one pass by windows: bitwise the same on 1 and 2 threads, the sums of
    # each range; below PAR_MIN rows in all, each range's plain loop, as range_suff
    n, r, w, pj = _long_pseudo_data(4)
    cuts = np.array([0, 5, 5 + BLOCK // 3, 2 * PAR_MIN, n])  # a range shorter than the window count, an empty one
    cuts = np.insert(cuts, 2, 5)
    starts, ends = cuts[:-1].astype(np.int64), cuts[1:].astype(np.int64)
    one, two = np.empty((starts.size, 2)), np.empty((starts.size, 2))
    ranges_suff(r, w, pj, starts, ends, n, 1, one)
    with numba_threads(2):
        ranges_suff(r, w, pj, starts, ends, n, 2, two)
    np.testing.assert_array_equal(one, two)
    expected = [(w[pj[a:b]].sum(), (w * r)[pj[a:b]].sum()) for a, b in zip(starts, ends, strict=True)]
    np.testing.assert_allclose(one, expected, rtol=1e-12, atol=1e-9)
    from pymc_treesamplers.engine.rows import _ranges_suff_par

    for nb in (1, 3, 1000):  # any window count (SUM_WINDOWS caps it on huge data): the same sums
        parts = np.empty((nb, starts.size, 2))
        with numba_threads(2):
            _ranges_suff_par(r, w, pj, starts, ends, parts)
        np.testing.assert_allclose(parts.sum(axis=0), expected, rtol=1e-12, atol=1e-9)
    short = np.empty((2, 2))
    s2, e2 = np.array([0, 100]), np.array([100, PAR_MIN - 1])
    ranges_suff(r, w, pj, s2, e2, PAR_MIN - 1, 2, short)
    assert [tuple(x) for x in short] == [range_suff(r, w, pj, a, b, 1) for a, b in zip(s2, e2, strict=True)]


def _three_leaf_tree(n):
    ints = np.full((5, 8), -1, dtype=np.int32)
    floats = np.zeros((5, 3))
    cuts = (0, n // 3 + 5, n // 3 + 5 + BLOCK // 2, n)  # leaf boundaries inside blocks
    ints[0, [LEFT, RIGHT, START, END]] = 1, 2, 0, n
    ints[2, [LEFT, RIGHT, START, END]] = 3, 4, cuts[1], n
    for k, (s, e) in zip((1, 3, 4), zip(cuts[:-1], cuts[1:], strict=True), strict=True):
        ints[k, START], ints[k, END] = s, e
        floats[k, VALUE] = 0.1 * k + 1.0 / 3.0
    perm = np.random.default_rng(1).permutation(n).astype(np.int32)
    return Tree(ints, floats, perm, np.array([5], dtype=np.int32)), cuts


@needs_two
def test_parallel_add_equals_serial_add():
    n = 4 * PAR_MIN + 17  # windows in parallel, each cutting the two long leaves and the short middle one
    t, cuts = _three_leaf_tree(n)
    base = np.random.default_rng(2).normal(size=n)
    one, two = base.copy(), base.copy()
    add_tree(t, one, -1.0, 1)
    with numba_threads(2):
        add_tree(t, two, -1.0, 2)
    np.testing.assert_array_equal(one, two)
    expected = base.copy()
    for k, (s, e) in zip((1, 3, 4), zip(cuts[:-1], cuts[1:], strict=True), strict=True):
        expected[t.perm[s:e]] -= t.floats[k, VALUE]
    np.testing.assert_array_equal(one, expected)


def _chain(step_cls, threads, n=3 * PAR_MIN, draws=3, seed=5):
    X, y, _ = friedman1(n, p=5, rng=3)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=4)
        sigma2 = pm.InverseGamma("sigma2", 3.0, 3.0)
        pm.Normal("y", mu, pm.math.sqrt(sigma2), observed=y)
        step = step_cls([mu], threads=threads)
        idata = pm.sample(tune=0, draws=draws, chains=1, cores=1, random_seed=seed, step=[step],
                          progressbar=False, compute_convergence_checks=False)
    return idata


@needs_two
@pytest.mark.parametrize("step_cls", [pmt.GrowPruneStep, pmt.CGMStep, pmt.PGBARTStep, pmt.CTBirthDeathStep,
                                      pmt.ReshapeStep])
def test_same_draws_with_one_and_two_threads(step_cls):
    one, two = _chain(step_cls, 1), _chain(step_cls, 2)
    np.testing.assert_array_equal(one.posterior["mu"].values, two.posterior["mu"].values)
    np.testing.assert_array_equal(one.posterior["sigma2"].values, two.posterior["sigma2"].values)
    assert (one.sample_stats["mu_forest"].values == two.sample_stats["mu_forest"].values).all()
    # the trees moved: the comparison saw more than single-leaf forests
    assert float(one.sample_stats["mu_n_leaves"].values.max()) > 1.0


@numba.njit(cache=True, parallel=True)
def _sums_by_thread(r, w, pj, s, e, threads):
    # a reduction that is NOT thread-count independent: one block per thread
    size = (e - s + threads - 1) // threads
    parts = np.zeros((threads, 2))
    for c in numba.prange(threads):
        for q in range(s + c * size, min(s + (c + 1) * size, e)):
            parts[c, 0] += w[pj[q]]
            parts[c, 1] += w[pj[q]] * r[pj[q]]
    return parts[:, 0].sum(), parts[:, 1].sum()


@needs_two
def test_a_thread_dependent_sum_is_caught():
    # the same check as above on a reduction that splits by thread: it differs in the last bits, which
    # is what makes a chain's draws depend on the thread count
    rng = np.random.default_rng(4)
    n = 3 * PAR_MIN
    r, w = rng.normal(size=n) * 1e3, rng.uniform(0.5, 2.0, size=n)
    pj = rng.permutation(n).astype(np.int32)
    assert _sums_by_thread(r, w, pj, 0, n, 1) != _sums_by_thread(r, w, pj, 0, n, 2)
    assert range_suff(r, w, pj, 0, n, 1) == range_suff(r, w, pj, 0, n, 2)


@pytest.mark.parametrize("bad, err", [(0, ValueError), (10**6, ValueError), ("2", TypeError), (True, TypeError),
                                      (2.0, TypeError)])
def test_threads_checked_before_sampling(bad, err):
    X, y, _ = friedman1(30, p=5, rng=0)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=2)
        pm.Normal("y", mu, 1.0, observed=y)
        with pytest.raises(err, match="threads"):
            pmt.CGMStep([mu], threads=bad)
    assert check_threads(np.int64(1)) == 1


def _child_sweep(q):
    X, y, _ = friedman1(PAR_MIN + 1, p=5, rng=0)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=2)
        pm.Normal("y", mu, 1.0, observed=y)
        step = pmt.GrowPruneStep([mu], threads=2)  # the child launches parallel loops
        pm.sample(tune=0, draws=2, chains=1, cores=1, step=[step], progressbar=False, compute_convergence_checks=False)
    q.put("ok")


@needs_two
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork start method only")
def test_forked_process_after_parallel_kernels_were_loaded():
    # PyMC's chain workers with threads > 1: under numba's OpenMP layer the child aborts ("fork() called
    # from a process already using GNU OpenMP"; NUMBA_THREADING_LAYER=omp makes this test fail)
    n = PAR_MIN + 1
    r, w = np.ones(n), np.ones(n)
    with numba_threads(2):
        range_suff(r, w, np.arange(n, dtype=np.int32), 0, n, 2)  # the parent uses the pool
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_sweep, args=(q,))
    p.start()
    p.join(120)
    assert p.exitcode == 0, f"forked child exited with {p.exitcode}"
    assert q.get(timeout=5) == "ok"


@needs_two
def test_long_partition_is_stable_and_thread_independent():
    # split_leaf's partition of a long range: the left rows then the right rows, each in its old order
    # (the in-place swap of short ranges is not stable), the same permutation on 1 and 2 threads
    from pymc_treesamplers.engine.rows import partition_blocks

    rng = np.random.default_rng(6)
    n = 3 * PAR_MIN + 77
    code = rng.integers(0, 50, size=n).astype(np.uint16)
    base = rng.permutation(n).astype(np.int32)
    s, e = 11, n - 5
    seg = base[s:e]
    expected = np.concatenate([seg[code[seg] <= 20], seg[code[seg] > 20]])
    for threads in (1, 2):
        pj = base.copy()
        with numba_threads(threads):
            n_left = partition_blocks(pj, s, e, code, 20, threads)
        assert n_left == int((code[seg] <= 20).sum())
        np.testing.assert_array_equal(pj[s:e], expected)
        np.testing.assert_array_equal(pj[:s], base[:s])  # nothing outside the range moves
        np.testing.assert_array_equal(pj[e:], base[e:])


@needs_two
def test_long_code_range_by_blocks():
    from pymc_treesamplers.engine.prior import code_range

    rng = np.random.default_rng(7)
    n = 2 * PAR_MIN + 3
    code = rng.integers(3, 900, size=n).astype(np.uint16)
    pj = rng.permutation(n).astype(np.int32)
    sub = code[pj[5:n]]
    for threads in (1, 2):
        with numba_threads(threads):
            assert code_range(code, pj, 5, n, threads) == (sub.min(), sub.max())


def test_collapse_of_a_long_node_puts_its_rows_back_in_order():
    # a long node split stably and collapsed (a pruned node): its rows are then in increasing order
    # again (before, each collapse left two interleaved runs and a leaf's passes became random
    # gathers); a merge of unsorted runs is still a permutation of the node's rows
    from pymc_treesamplers.engine.records import split_data
    from pymc_treesamplers.engine.rows import merge_rows
    from pymc_treesamplers.engine.tree import collapse, split_leaf

    n = 2 * PAR_MIN + 9
    rng = np.random.default_rng(8)
    codes = rng.integers(0, 40, size=(2, n)).astype(np.uint16)
    data = split_data(codes, np.ones(2))
    ints = np.full((3, 8), -1, dtype=np.int32)
    ints[0, [START, END]] = 0, n
    ints[0, DEPTH] = 0
    t = Tree(ints, np.zeros((3, 3)), np.arange(n, dtype=np.int32), np.array([1], dtype=np.int32))
    split_leaf(t, 0, 1, 17, 39, data)
    left = t.perm[: t.ints[t.ints[0, LEFT], END]]
    assert (codes[1, left] <= 17).all() and (np.diff(left) > 0).all()  # a stable split of ordered rows
    assert not (np.diff(t.perm) > 0).all()
    collapse(t, 0)
    np.testing.assert_array_equal(t.perm, np.arange(n))
    pj = rng.permutation(n).astype(np.int32)
    before = pj.copy()
    merge_rows(pj, 3, 100, n - 1)
    np.testing.assert_array_equal(np.sort(pj[3 : n - 1]), np.sort(before[3 : n - 1]))
    np.testing.assert_array_equal(pj[:3], before[:3])
    assert pj[n - 1] == before[n - 1]


@pytest.mark.boundscheck
def test_the_checked_pass_runs_the_block_paths_on_enumerable_data():
    """The long-range paths (block sums, stable split, block code range, the merge on collapse) run only from
    rows.PAR_MIN rows on, far beyond what can be enumerated. `make test`'s checked pass compiles the kernels with
    blocks of 2 rows (PMT_ROWS_BLOCK=2) as well as bounds checks, so every test marked boundscheck, every
    sampler's enumeration tests among them (tests/test_matrix.py: m = 1 and m = 2, the prior under a flat
    likelihood, the wrong targets that must fail, pm.sample against enumeration), runs them on the 7-row data.
    In that pass this checks the setting reached the kernels; in the first, that the setting does."""
    import subprocess
    import sys

    import numba

    if numba.config.BOUNDSCHECK:
        assert os.environ.get("PMT_ROWS_BLOCK") == "2" and PAR_MIN == 4, "run the checked pass as the Makefile does"
        return
    env = dict(os.environ, PMT_ROWS_BLOCK="2")
    probe = subprocess.run([sys.executable, "-c", "from pymc_treesamplers.engine import rows; print(rows.PAR_MIN)"],
                           env=env, capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "4"


@needs_two
@pytest.mark.parametrize("n", [PAR_MIN - 3, 3 * PAR_MIN + 41])
def test_split_suff_is_the_sums_of_the_split_on_any_thread_count(n):
    # grow scores its proposal without moving rows: one pass gives both sides' count and sums, the
    # same bits on 1 and 2 threads, and the sums of the rows the split would put on each side
    from pymc_treesamplers.engine.rows import split_suff

    rng = np.random.default_rng(11)
    r, w = rng.normal(size=n) * 1e2, rng.uniform(0.5, 2.0, size=n)
    code = rng.integers(0, 60, size=n).astype(np.uint16)
    pj = rng.permutation(n).astype(np.int32)
    s, e, c = 5, n - 2, 23
    got = [split_suff(r, w, pj, s, e, code, c, 1)]
    with numba_threads(2):
        got.append(split_suff(r, w, pj, s, e, code, c, 2))
    assert got[0] == got[1]
    rows = pj[s:e]
    left, right = rows[code[rows] <= c], rows[code[rows] > c]
    assert got[0][0] == left.size
    np.testing.assert_allclose(got[0][1:], (w[left].sum(), (w * r)[left].sum(), w[right].sum(), (w * r)[right].sum()),
                               rtol=1e-12)
    # a wrong side (the cut taken as '<') is not what the split puts left
    assert split_suff(r, w, pj, s, e, code, c - 1, 1)[0] != left.size


def test_side_availability_read_in_place_is_the_childs():
    # the availability of a proposed split's children, read without moving rows, is exactly the value
    # split_leaf writes for them: few-valued, constant, two-valued and continuous columns, a zero weight,
    # sides with 0, 1 and many rows
    from pymc_treesamplers.engine.prior import node_log_avail, side_log_avail
    from pymc_treesamplers.engine.records import split_data
    from pymc_treesamplers.engine.tree import partition_rows

    rng = np.random.default_rng(12)
    n = 300
    codes = np.stack([rng.integers(0, 3, n), np.zeros(n, dtype=int), rng.integers(0, 2, n), rng.integers(0, 250, n),
                      rng.integers(0, 250, n)]).astype(np.uint16)
    codes[:, :40] = np.array([[0], [0], [1], [0], [7]])  # 40 equal rows, the only ones with code 0 in column 3
    codes[3, 40:] = rng.integers(1, 250, n - 40)
    data = split_data(codes, np.array([1.0, 2.0, 0.5, 0.25, 0.0]))
    seen = set()
    for trial in range(400):
        v, c = (3, 0) if trial % 4 == 0 else (int(rng.integers(0, 5)), int(rng.integers(0, 250)))
        pj = rng.permutation(n).astype(np.int32)
        s = int(rng.integers(0, 5))
        e = int(rng.integers(s + 1, n + 1)) if trial % 3 else s + int(rng.integers(1, 4))
        rows = pj[s:e]
        n_left = int((codes[v, rows] <= c).sum())
        got = (side_log_avail(data, pj, s, e, codes[v], c, True, n_left),
               side_log_avail(data, pj, s, e, codes[v], c, False, e - s - n_left))
        mid = s + partition_rows(pj, s, e, codes[v], c)
        assert mid - s == n_left
        assert got == (node_log_avail(data, pj, s, mid) if mid - s else -np.inf,
                       node_log_avail(data, pj, mid, e) if e - mid else -np.inf)
        seen.add((min(n_left, 2), min(e - s - n_left, 2), got[0] == -np.inf))
    assert {(0, 2, True), (1, 2, True), (2, 0, False), (2, 2, False), (2, 2, True)} <= seen


@needs_two
def test_long_merge_by_blocks_is_the_sorted_merge_on_any_thread_count():
    from pymc_treesamplers.engine.rows import merge_rows

    rng = np.random.default_rng(13)
    n = 4 * PAR_MIN + 17
    rows = np.sort(rng.choice(10 * n, size=n, replace=False)).astype(np.int32)
    side = rng.random(n) < 0.3
    for runs in ("sorted", "unsorted"):
        a, b = rows[side], rows[~side]
        if runs == "unsorted":  # a short node's in-place split leaves unsorted runs inside a long node
            a = a.copy()
            a[: BLOCK // 3] = a[: BLOCK // 3][::-1]
        base = np.concatenate([[-7, -8], a, b, [-9]]).astype(np.int32)
        out = []
        for threads in (1, 2):
            pj = base.copy()
            with numba_threads(threads):
                merge_rows(pj, 2, 2 + a.size, 2 + n, threads)
            out.append(pj)
        np.testing.assert_array_equal(out[0], out[1])
        np.testing.assert_array_equal(np.sort(out[0][2 : 2 + n]), rows)  # a permutation of the node's rows
        np.testing.assert_array_equal(out[0][[0, 1, -1]], [-7, -8, -9])
        if runs == "sorted":
            np.testing.assert_array_equal(out[0][2 : 2 + n], rows)


def test_tbb_is_looked_up_where_its_distribution_put_it():
    # pip --prefix or --user puts the tbb wheel's library outside sys.prefix; the distribution's record finds it
    from importlib.metadata import PackageNotFoundError, distribution

    from pymc_treesamplers.engine import pool

    try:
        dist = distribution("tbb")
    except PackageNotFoundError:
        pytest.skip("the tbb wheel is not installed here")
    recorded = [f for f in dist.files or [] if f.name == pool._TBB_NAMES.get(__import__("sys").platform)]
    first = pool._tbb_candidates()[0]
    assert recorded and os.path.exists(first) and os.path.samefile(first, recorded[0].locate())
    assert pool.start() in ("tbb", None)  # found and chosen (None: a layer set by the environment)


@needs_two
@pytest.mark.parametrize("n", [PAR_MIN - 3, 3 * PAR_MIN + 41])
def test_split2_suff_is_the_sums_of_the_cells_on_any_thread_count(n):
    # a change or swap scores its subtree two levels down without moving rows: one pass gives the counts and
    # the four cells' sums, the same bits on 1 and 2 threads, and the sums of the rows each cell would hold
    from pymc_treesamplers.engine.rows import split2_suff

    rng = np.random.default_rng(13)
    r, w = rng.normal(size=n) * 1e2, rng.uniform(0.5, 2.0, size=n)
    codes = rng.integers(0, 60, size=(3, n)).astype(np.uint16)
    pj = rng.permutation(n).astype(np.int32)
    s, e = 5, n - 2
    args = (codes[0], 23, codes[1], 40, codes[2], 9)
    got = [split2_suff(r, w, pj, s, e, *args, 1)]
    with numba_threads(2):
        got.append(split2_suff(r, w, pj, s, e, *args, 2))
    assert got[0][0] == got[1][0]
    np.testing.assert_array_equal(got[0][1], got[1][1])
    rows = pj[s:e]
    g0, gl, gr = codes[0, rows] <= 23, codes[1, rows] <= 40, codes[2, rows] <= 9
    cells = [rows[g0 & gl], rows[g0 & ~gl], rows[~g0 & gr], rows[~g0 & ~gr]]
    assert got[0][0] == (g0.sum(), (g0 & gl).sum(), (~g0 & gr).sum())
    want = np.ravel([(w[c].sum(), (w * r)[c].sum()) for c in cells])
    np.testing.assert_allclose(got[0][1], want, rtol=1e-12)
    # the cells swapped at the second level (the left side routed by the right rule) are not these
    wrong = split2_suff(r, w, pj, s, e, codes[0], 23, codes[2], 9, codes[1], 40, 1)
    assert not np.allclose(wrong[1], want, rtol=1e-6)


def test_a_root_reads_its_code_ranges_from_the_data():
    # a node holding every row takes each variable's range from split_data's code_min/code_max instead of a
    # pass over n rows: the same rule and cut count as the pass gives, and the stored ranges are what it reads
    from pymc_treesamplers.engine.prior import code_range, draw_split_rule
    from pymc_treesamplers.engine.records import split_data

    rng = np.random.default_rng(14)
    n = 500
    codes = np.stack([rng.integers(3, 40, n), np.full(n, 5), rng.integers(0, 2, n)]).astype(np.uint16)
    data = split_data(codes, np.array([1.0, 1.0, 2.0]))
    assert data.code_min.tolist() == [codes[0].min(), 5, 0] and data.code_max.tolist() == [codes[0].max(), 5, 1]
    pj = rng.permutation(n).astype(np.int32)
    scratch = np.empty(3)
    for seed in range(50):
        v, c, n_cuts = draw_split_rule(np.random.default_rng(seed), data, pj, 0, n, scratch)
        mn, mx = code_range(codes[v], pj, 0, n)
        assert v != 1 and n_cuts == mx - mn and mn <= c < mx
    # a wrong stored range changes the draw at the root only
    bad = data._replace(code_max=data.code_max + 7)
    assert any(draw_split_rule(np.random.default_rng(s), bad, pj, 0, n, scratch)
               != draw_split_rule(np.random.default_rng(s), data, pj, 0, n, scratch) for s in range(20))
    assert all(draw_split_rule(np.random.default_rng(s), bad, pj, 1, n, scratch)
               == draw_split_rule(np.random.default_rng(s), data, pj, 1, n, scratch) for s in range(20))


@needs_two
@pytest.mark.parametrize("n", [PAR_MIN - 3, 3 * PAR_MIN + 41])
def test_one_weight_for_every_row_gives_the_sums_of_a_weight_per_row(n):
    # one sigma's pseudo-data go to the kernels as a single weight (a length-1 w: the passes read no weights);
    # every pass gives the sums the same weight on every row gives, to rounding, and the same bits on 1 and 2
    # threads; a weight it did not multiply in (w = 1 where the rows' is 0.3) would be caught
    from pymc_treesamplers.engine.rows import row_weight, split2_suff, split_suff

    rng = np.random.default_rng(17)
    r, w0 = rng.normal(size=n) * 1e2, 0.3
    per_row, one = np.full(n, w0), np.array([w0])
    code = rng.integers(0, 60, size=(3, n)).astype(np.uint16)
    pj = rng.permutation(n).astype(np.int32)
    s, e = 5, n - 2
    starts, ends = np.array([s, (s + e) // 2]), np.array([(s + e) // 2, e])
    args2 = (code[0], 23, code[1], 40, code[2], 9)

    def passes(w, threads):
        both = np.empty((2, 2))
        ranges_suff(r, w, pj, starts, ends, e - s, threads, both)
        cells = split2_suff(r, w, pj, s, e, *args2, threads)
        return (range_suff(r, w, pj, s, e, threads), split_suff(r, w, pj, s, e, code[0], 23, threads), both,
                cells[0], cells[1])

    def flat(out):
        return np.concatenate([np.ravel(np.asarray(x, dtype=float)) for x in out])

    base = passes(per_row, 1)
    want = flat(base)
    got = passes(one, 1)
    np.testing.assert_allclose(flat(got), want, rtol=1e-12)
    assert got[1][0] == base[1][0] and got[3] == base[3]  # the counts, exactly
    with numba_threads(2):
        np.testing.assert_array_equal(flat(passes(one, 2)), flat(got))
    assert not np.allclose(flat(passes(np.array([1.0]), 1)), want, rtol=1e-6)
    assert row_weight(one, n - 1) == w0 and row_weight(per_row, n - 1) == w0
