"""Data-parallel backfitting over MPI ranks: a **prototype** of OpenBT's design (docs/distributed-rows.md).

The rows are split over the ranks of an MPI communicator and never move. Every rank holds the same
``m`` trees, the same leaf values, the same noise scale and the same random generator (same seed), so
every random choice of a sweep (move type, node, split rule, acceptance, leaf values, sigma) is made
identically on every rank without being sent. What a decision reads from the rows is all-reduced:

* the split-rule prior of a node reads its rows only through the smallest and largest code of each
  variable (which variables have a valid cut, how many cuts): ``(-min, max)`` of every variable travel
  in one ``MAX`` all-reduce (a grow needs two: the node, then its two children). With those the
  package's own :func:`~pymc_treesamplers.engine.prior.draw_split_rule` and
  :func:`~pymc_treesamplers.engine.prior.node_log_avail` run on two *summary rows* (a node's minimum and
  maximum codes), which give them exactly what the node's rows give them;
* the Gaussian leaf algebra reads ``(W, S) = (sum w, sum w r)`` per leaf: one ``SUM`` all-reduce per tree
  update holds the sums of every leaf of the larger of the trees before and after the move plus the
  node the move is about, which covers the acceptance ratio and the leaf draws whichever way the
  decision goes;
* the noise variance, drawn from its conjugate inverse gamma after each sweep (or fixed: ``sigma=``),
  reads the residual sum of squares: one ``SUM`` of one float per sweep;
* a digest of the replicated state is compared across ranks after each sweep (one ``MAX``), so ranks
  that diverged stop together with an error instead of returning draws or waiting for each other.

Each rank keeps the residual of its own rows and applies every tree change to its rows only.

The update is the package's grow/prune Metropolis-Hastings step (:class:`~pymc_treesamplers.GrowPruneStep`:
:mod:`~pymc_treesamplers.engine.moves.growprune` and :mod:`~pymc_treesamplers.engine.updates.mh`), with the same
random numbers in the same order, so one process (``comm=None``) reproduces that step's chain tree for
tree (``tests/test_mpi.py``): bit for bit below ``rows.PAR_MIN`` rows, and up to the rounding of the leaf
sums above (the step sums all of a tree's leaves by windows of the rows, this prototype each leaf by
blocks). The control flow is Python calling the package's numba pieces; only the
loops over a rank's rows are compiled here. What a production version needs is in the docs page.

Limits of the prototype: Gaussian likelihood, grow/prune only, numeric covariates without missing values,
uniform split weights, binning from the whole columns (each column's distinct values and counts are
all-gathered once: exact, but O(distinct values) per rank).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(size=(60, 2)); y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=60)
>>> out = fit(X, y, m=3, n_sweeps=4, seed=1)         # one process; under mpirun pass comm=MPI.COMM_WORLD
>>> len(out.forests), out.sigma.shape
(4, (4,))

Run it over ranks: ``mpirun -n 2 python -m prototypes.mpi --friedman 2000 --m 20 --sweeps 50``
(``--help`` lists the options).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numba
import numpy as np

from pymc_treesamplers.engine.chain import Chain
from pymc_treesamplers.engine.forest import Forest
from pymc_treesamplers.engine.gaussian import leaf_draw, leaf_suff
from pymc_treesamplers.engine.nodes import CUT, DEPTH, END, LEFT, LWAVAIL, RIGHT, ROW_INT, RULELP, START, VALUE, VAR
from pymc_treesamplers.engine.prior import (
    NEG_INF,
    code_range,
    draw_split_rule,
    node_log_avail,
    rule_log_prob,
)
from pymc_treesamplers.engine.records import Pseudo, SplitData, Tree, TreePrior
from pymc_treesamplers.engine.tree import (
    GROWABLE,
    NOG,
    add_tree,
    collapse,
    count_nodes,
    nth_node,
    partition_rows,
    random_node,
    set_leaf,
    split_log_ratio_sums,
)
from pymc_treesamplers.model.binning import bin_columns
from pymc_treesamplers.model.sigma_prior import chipman_sigma2_prior
from pymc_treesamplers.results.predictive import predict_preorder
from pymc_treesamplers.results.storage import decode_forest

if TYPE_CHECKING:
    from mpi4py import MPI

__all__ = ["Fit", "Reducer", "bin_rows", "compare_fits", "fit", "measure_allreduce"]

# GrowPruneStep's move probabilities (its move_probs (0.5, 0.5, 0, 0))
P_GROW = 0.5
P_PRUNE = 0.5
_NO_ROWS = 65536  # a "minimum code" above every uint16 code: this rank holds none of the node's rows
_PAIR = np.array([0, 1], dtype=ROW_INT)  # the two summary rows of a node


# --------------------------------------------------------------------------- reductions


class Reducer:
    """All-reductions over the ranks of ``comm`` (``None``: one process, each reduction is the identity).

    Counts the calls and bytes of the reductions, in one process too, so the cost of a run over ranks can
    be read from a single-process run of the same chain; ``seconds`` is the time spent in them (waiting
    for the slowest rank included).

    >>> r = Reducer(None)
    >>> r.sums(np.array([1.0, 2.0])).tolist(), r.calls, r.bytes
    ([1.0, 2.0], 1, 16)
    """

    def __init__(self, comm: MPI.Comm | None = None):
        self.comm = comm
        self.calls = 0
        self.bytes = 0
        self.seconds = 0.0
        if comm is not None:
            from mpi4py import MPI

            self._sum, self._max = MPI.SUM, MPI.MAX

    def _reduce(self, local: np.ndarray, which: str) -> np.ndarray:
        self.calls += 1
        self.bytes += local.nbytes
        if self.comm is None:
            return local
        out = np.empty_like(local)
        t0 = time.perf_counter()
        self.comm.Allreduce(local, out, op=self._sum if which == "sum" else self._max)
        self.seconds += time.perf_counter() - t0
        return out

    def sums(self, local: np.ndarray) -> np.ndarray:
        """Element-wise sum over ranks."""
        return self._reduce(np.ascontiguousarray(local), "sum")

    def maxima(self, local: np.ndarray) -> np.ndarray:
        """Element-wise maximum over ranks (minima travel negated, so one call serves both)."""
        return self._reduce(np.ascontiguousarray(local), "max")

    def gather(self, obj) -> list:
        """Every rank's ``obj`` (setup only: pickled, not counted in the per-sweep cost)."""
        return [obj] if self.comm is None else self.comm.allgather(obj)


def measure_allreduce(comm: MPI.Comm, n_doubles: int, repeats: int = 10_000) -> float:
    """Seconds per ``Allreduce`` (sum) of ``n_doubles`` float64 on ``comm``, after a warm-up."""
    from mpi4py import MPI

    buf = np.ones(n_doubles)
    out = np.empty_like(buf)
    for _ in range(min(repeats, 200)):
        comm.Allreduce(buf, out, op=MPI.SUM)
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(repeats):
        comm.Allreduce(buf, out, op=MPI.SUM)
    return (time.perf_counter() - t0) / repeats


# ----------------------------------------------------------------- this rank's rows (numba)


@numba.njit(cache=True, nogil=True)
def local_ranges(codes, perm, s, e, out):
    """``-min`` and ``max`` code of every variable over this rank's rows ``perm[s:e]`` into ``out[0]``,
    ``out[1]``; a rank without rows in the node gives ``(-65536, -1)``, which loses every ``MAX``."""
    for v in range(codes.shape[0]):
        if e > s:
            mn, mx = code_range(codes[v], perm, s, e)
        else:
            mn, mx = np.int64(_NO_ROWS), np.int64(-1)
        out[0, v] = -mn
        out[1, v] = mx


@numba.njit(cache=True, nogil=True)
def local_sums(ps, perm, starts, ends, out):
    """``out[2q], out[2q + 1]`` = ``(W, S)`` of this rank's rows ``perm[starts[q]:ends[q]]``, each summed as
    :func:`~pymc_treesamplers.engine.gaussian.leaf_suff` sums a range (on fewer than ``rows.PAR_MIN`` rows, as
    :func:`~pymc_treesamplers.engine.tree.draw_leaves` sums a leaf too)."""
    for q in range(starts.shape[0]):
        W, S = leaf_suff(ps, perm, starts[q], ends[q])
        out[2 * q] = W
        out[2 * q + 1] = S


@numba.njit(cache=True, nogil=True)
def split_local_rows(t, k, v, c, codes):
    """:func:`~pymc_treesamplers.engine.tree.split_leaf` without the children's availability and the rule's
    probability, which need the reduced code ranges: split this rank's rows of leaf ``k`` by
    ``code_v <= c`` into new leaves at slots ``nn`` and ``nn + 1``."""
    ti = t.ints
    s = ti[k, START]
    e = ti[k, END]
    mid = s + partition_rows(t.perm, s, e, codes[v], c)
    a = t.nn[0]
    d = ti[k, DEPTH]
    set_leaf(t, a, k, d + 1, s, mid, NEG_INF)
    set_leaf(t, a + 1, k, d + 1, mid, e, NEG_INF)
    ti[k, VAR] = v
    ti[k, CUT] = c
    ti[k, LEFT] = a
    ti[k, RIGHT] = a + 1
    t.nn[0] += 2


@numba.njit(cache=True, nogil=True)
def draw_leaf_values(rng, prior, sums, out):
    """One :func:`~pymc_treesamplers.engine.gaussian.leaf_draw` per leaf, in the order of ``sums`` (slot order)."""
    for q in range(out.shape[0]):
        out[q] = leaf_draw(rng, prior, sums[2 * q], sums[2 * q + 1])


# ------------------------------------------------------------------------------ binning


def bin_rows(X_local: np.ndarray, reducer: Reducer, max_bins: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Codes ``(p, n_local)`` of this rank's rows and the threshold table, both exactly as
    :func:`~pymc_treesamplers.model.binning.bin_columns` codes the whole matrix.

    A column's thresholds depend only on the multiset of its values, so each rank sends its distinct
    values and their counts and every rank bins the merged column. Prototype only: that is O(distinct
    values) per rank; a production version would merge a quantile sketch instead.

    >>> X = np.array([[0.3], [0.1], [0.3], [0.2]])
    >>> codes, thr = bin_rows(X, Reducer(None))
    >>> codes.tolist(), thr.tolist()
    ([[2, 0, 2, 1]], [[0.1, 0.2]])
    """
    X_local = np.asarray(X_local, dtype=np.float64)
    if not np.isfinite(X_local).all():
        raise ValueError("the MPI prototype takes finite numeric covariates only (no missing values)")
    p = reducer.gather(X_local.shape[1])
    if len(set(p)) != 1:
        raise ValueError(f"ranks disagree on the number of covariates: {p}")
    codes = np.empty((X_local.shape[1], X_local.shape[0]), dtype=np.uint16)
    thresholds = []
    for v in range(X_local.shape[1]):
        parts = reducer.gather(np.unique(X_local[:, v], return_counts=True))
        values, inverse = np.unique(np.concatenate([u for u, _ in parts]), return_inverse=True)
        counts = np.bincount(inverse, np.concatenate([c for _, c in parts]).astype(np.float64)).astype(np.int64)
        whole = np.repeat(values, counts)  # the whole column, sorted
        thr = bin_columns(whole[:, None], max_bins).thresholds[0]
        codes[v] = np.searchsorted(thr, X_local[:, v], side="left")
        thresholds.append(thr)
    width = max(1, max(len(t) for t in thresholds))
    table = np.full((len(thresholds), width), np.inf)
    for v, t in enumerate(thresholds):
        table[v, : len(t)] = t
    return codes, table


# ------------------------------------------------------------------------------- the fit


@dataclass
class Fit:
    """Draws of :func:`fit`, one per sweep.

    ``forests[s]``: the forest after sweep ``s`` in the package's trace encoding (what a tree step reports
    as its ``<var>_forest`` stat; :func:`~pymc_treesamplers.results.storage.decode_forest` reads it); ``sigma``: the
    noise scale after each sweep; ``n_leaves``: mean leaves per tree; ``accept``: share of trees whose move
    was accepted; ``calls``, ``bytes``: all-reductions of each sweep (identical on every rank); ``seconds``:
    wall time of each sweep on this rank (the first includes loading or compiling the kernels), of which
    ``comm_seconds`` in all-reductions.
    """

    forests: list[str]
    sigma: np.ndarray
    n_leaves: np.ndarray
    accept: np.ndarray
    calls: np.ndarray
    bytes: np.ndarray
    seconds: np.ndarray
    comm_seconds: np.ndarray

    def predict(self, X: np.ndarray, sweep: int = -1) -> np.ndarray:
        """Sum of the trees of one sweep's forest at the rows of ``X`` (numeric, as in training)."""
        _, counts, var, val = decode_forest(self.forests[sweep])
        X = np.ascontiguousarray(X, dtype=np.float64)
        out = np.empty(X.shape[0])
        predict_preorder(counts, var, val, X, out, 2 * X.shape[1])
        return out

    def save(self, path) -> None:
        np.savez(path, forests=np.array(self.forests), sigma=self.sigma, n_leaves=self.n_leaves,
                 accept=self.accept, calls=self.calls, bytes=self.bytes, seconds=self.seconds,
                 comm_seconds=self.comm_seconds)

    @classmethod
    def load(cls, path) -> Fit:
        with np.load(path) as z:
            return cls([str(s) for s in z["forests"]], z["sigma"], z["n_leaves"], z["accept"], z["calls"],
                       z["bytes"], z["seconds"],
                       z["comm_seconds"])


def compare_fits(a: Fit, b: Fit, rtol: float = 1e-9) -> list[str]:
    """Where two fits differ (empty: the same chain): tree structures and split thresholds exactly,
    leaf values and sigma up to ``rtol`` (sums over rows added in another order differ in the last bits).

    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(40, 2)); y = X[:, 0] + 0.1 * rng.normal(size=40)
    >>> compare_fits(fit(X, y, m=2, n_sweeps=3, seed=5), fit(X, y, m=2, n_sweeps=3, seed=5))
    []
    """
    out = []
    if len(a.forests) != len(b.forests):
        return [f"{len(a.forests)} sweeps against {len(b.forests)}"]
    for s, (fa, fb) in enumerate(zip(a.forests, b.forests, strict=True)):
        _, ca, va, xa = decode_forest(fa)
        _, cb, vb, xb = decode_forest(fb)
        if not (np.array_equal(ca, cb) and np.array_equal(va, vb)):
            diff = np.flatnonzero(ca != cb) if ca.shape == cb.shape else []
            out.append(f"sweep {s}: tree structures differ (trees {list(diff)[:5]} ...)")
            continue
        inner = va >= 0
        if not np.array_equal(xa[inner], xb[inner]):
            out.append(f"sweep {s}: split thresholds differ")
        if not np.allclose(xa[~inner], xb[~inner], rtol=rtol, atol=0.0):
            worst = np.max(np.abs(xa[~inner] - xb[~inner]) / np.maximum(np.abs(xb[~inner]), 1e-300))
            out.append(f"sweep {s}: leaf values differ (largest relative difference {worst:.3g})")
    if not np.allclose(a.sigma, b.sigma, rtol=rtol, atol=0.0):
        out.append(f"sigma differs (largest relative difference {np.max(np.abs(a.sigma / b.sigma - 1)):.3g})")
    return out


class _Chain:
    """The replicated state of one chain and this rank's share of the rows."""

    def __init__(self, data: SplitData, prior: TreePrior, forest: Forest, y: np.ndarray, w: np.ndarray,
                 reducer: Reducer, rng: np.random.Generator, unreduced: str | None):
        self.data, self.prior, self.forest = data, prior, forest
        self.reducer, self.rng, self.unreduced = reducer, rng, unreduced
        self.ps = Pseudo(np.empty_like(y), w, 1)
        self.f = np.empty_like(y)
        self.scratch_p = np.empty(data.codes.shape[0])
        self.range_buf = np.empty((2, 2, data.codes.shape[0]), dtype=np.int64)

    def tree(self, j: int) -> Tree:
        fo = self.forest
        return Tree(fo.ints[j], fo.floats[j], fo.perm[j], fo.n_nodes[j : j + 1])

    def summary(self, reduced: np.ndarray) -> SplitData:
        """The node as two rows carrying its minimum and maximum codes (``reduced``: (-min, max))."""
        codes = np.empty((reduced.shape[1], 2), dtype=np.uint16)
        codes[:, 0] = -reduced[0]
        codes[:, 1] = reduced[1]
        # the chain's split data with the node's two summary rows in place of the rows
        return self.data._replace(codes=codes, code_min=codes.min(axis=1).astype(np.int64),
                                  code_max=codes.max(axis=1).astype(np.int64))

    def node_ranges(self, t: Tree, nodes: list[int]) -> np.ndarray:
        """The reduced ``(-min, max)`` codes of each of ``nodes``: one ``MAX`` all-reduce."""
        buf = self.range_buf[: len(nodes)]
        for q, k in enumerate(nodes):
            local_ranges(self.data.codes, t.perm, t.ints[k, START], t.ints[k, END], buf[q])
        if self.unreduced == "ranges":
            self.reducer.calls += 1  # deliberately wrong (tests): the codes of this rank's rows only
            return buf.copy()
        return self.reducer.maxima(buf)

    def leaf_sums(self, t: Tree, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(W, S)`` of every leaf of ``t`` and of node ``k``'s rows: one ``SUM`` all-reduce.

        Returns the leaves' slots and the reduced and local sums (leaves in slot order, then ``k``)."""
        ti = t.ints
        nn = t.nn[0]
        slots = np.flatnonzero(ti[:nn, LEFT] < 0)
        nodes = slots if k < 0 else np.append(slots, k)
        local = np.empty(2 * len(nodes))
        local_sums(self.ps, t.perm, ti[nodes, START].copy(), ti[nodes, END].copy(), local)
        return slots, self.reducer.sums(local), local

    def update(self, j: int) -> bool:
        """One grow/prune proposal for tree ``j`` and its leaves: the package's update
        (:func:`~pymc_treesamplers.engine.updates.mh.mh_update`, then its leaf draws), random numbers in its order."""
        t = self.tree(j)
        add_tree(t, self.ps.r, 1.0)
        if t.ints[0, LEFT] < 0:
            move = self.grow(j, 0.0)
        elif self.rng.random() < P_GROW:
            move = self.grow(j, math.log(P_GROW))
        else:
            move = self.prune(j)
        self.draw_leaves(self.tree(j), move)
        return move.accepted

    def grow(self, j: int, log_pgrow_t: float) -> _Move:
        """:func:`~pymc_treesamplers.engine.moves.growprune.grow_move` over the ranks."""
        t = self.tree(j)
        rng = self.rng
        g = count_nodes(t, GROWABLE)
        if g == 0:
            return _Move(*self.leaf_sums(t, -1))
        k = nth_node(t, rng.integers(0, g), GROWABLE)
        if t.nn[0] + 2 > self.forest.capacity:
            self.forest.grow_capacity(t.nn[0] + 2)
            t = self.tree(j)
        node = self.summary(self.node_ranges(t, [k])[0])
        v, c, n_cuts = draw_split_rule(rng, node, _PAIR, 0, 2, self.scratch_p)
        split_local_rows(t, k, v, c, self.data.codes)
        a, b = int(t.ints[k, LEFT]), int(t.ints[k, RIGHT])
        children = self.node_ranges(t, [a, b])
        tf = t.floats
        tf[a, LWAVAIL] = node_log_avail(self.summary(children[0]), _PAIR, 0, 2)
        tf[b, LWAVAIL] = node_log_avail(self.summary(children[1]), _PAIR, 0, 2)
        tf[k, RULELP] = rule_log_prob(self.data.logw[v], tf[k, LWAVAIL], n_cuts)
        move = _Move(*self.leaf_sums(t, k), k=k, a=a, b=b, nn=int(t.nn[0]))
        ratio = self.split_ratio(t, move)
        log_r = ratio + (math.log(P_PRUNE) - math.log(count_nodes(t, NOG))) - (log_pgrow_t - math.log(g))
        if _log_uniform(rng) < log_r:
            move.accepted = True
        else:
            collapse(t, k)
            move.collapsed = True
        return move

    def prune(self, j: int) -> _Move:
        """:func:`~pymc_treesamplers.engine.moves.growprune.prune_move` over the ranks."""
        t = self.tree(j)
        rng = self.rng
        nog = count_nodes(t, NOG)
        k = random_node(rng, t, NOG)
        if k < 0:
            return _Move(*self.leaf_sums(t, -1))
        ti, tf = t.ints, t.floats
        a, b = int(ti[k, LEFT]), int(ti[k, RIGHT])
        g_new = count_nodes(t, GROWABLE) + 1 - int(tf[a, LWAVAIL] > NEG_INF) - int(tf[b, LWAVAIL] > NEG_INF)
        move = _Move(*self.leaf_sums(t, k), k=k, a=a, b=b, nn=int(t.nn[0]))
        ratio = self.split_ratio(t, move)
        log_pgrow_new = 0.0 if k == 0 else math.log(P_GROW)
        log_r = -ratio + (log_pgrow_new - math.log(g_new)) - (math.log(P_PRUNE) - math.log(nog))
        if _log_uniform(rng) < log_r:
            collapse(t, k)
            move.accepted = move.collapsed = True
        return move

    def split_ratio(self, t: Tree, move: _Move) -> float:
        """Log posterior of node ``move.k`` split into its children over it as a leaf (no rule prior)."""
        ia, ib = np.searchsorted(move.slots, move.a), np.searchsorted(move.slots, move.b)
        red = move.sums
        return split_log_ratio_sums(self.prior, t.ints[move.k, DEPTH], t.floats[move.a, LWAVAIL],
                                    t.floats[move.b, LWAVAIL], red[2 * ia], red[2 * ia + 1], red[2 * ib],
                                    red[2 * ib + 1])

    def draw_leaves(self, t: Tree, move: _Move) -> None:
        """Draw the leaves of the tree the move left, in slot order, from the sums reduced before the
        decision, and take the tree's fit off this rank's residual."""
        sums = move.local if self.unreduced == "leaves" else move.sums  # "leaves": deliberately wrong (tests)
        index = {int(s): q for q, s in enumerate(move.slots)}
        origin = np.arange(move.nn if move.collapsed else t.nn[0])
        if move.collapsed:
            # collapse(t, k) refilled the freed slots from the end: follow each node to its new slot
            n = move.nn
            for slot in (max(move.a, move.b), min(move.a, move.b)):
                if slot != n - 1:
                    origin[slot] = origin[n - 1]
                n -= 1
        leaves = np.flatnonzero(t.ints[: t.nn[0], LEFT] < 0)
        # node k, a leaf again after a collapse, has the sums of its own rows (the last entry)
        pick = np.array([len(move.slots) if move.collapsed and origin[s] == move.k else index[int(origin[s])]
                         for s in leaves])
        own = np.empty(2 * len(leaves))
        own[0::2] = sums[2 * pick]
        own[1::2] = sums[2 * pick + 1]
        values = np.empty(len(leaves))
        draw_leaf_values(self.rng, self.prior, own, values)
        t.floats[leaves, VALUE] = values
        add_tree(t, self.ps.r, -1.0)


@dataclass
class _Move:
    """What a move leaves for the leaf draws: the larger tree's leaf slots, the reduced and local sums
    (those leaves, then node ``k``), the node moved and its children, the larger tree's node count."""

    slots: np.ndarray
    sums: np.ndarray
    local: np.ndarray
    k: int = -1
    a: int = -1
    b: int = -1
    nn: int = 0
    accepted: bool = False
    collapsed: bool = False


def _log_uniform(rng: np.random.Generator) -> float:
    # numba's log(0) is -inf where Python's raises; the kernels compare log(u) with the ratio
    u = rng.random()
    return math.log(u) if u > 0.0 else -math.inf


def fit(
    X_local: np.ndarray,
    y_local: np.ndarray,
    *,
    m: int = 200,
    n_sweeps: int = 100,
    seed: int | None = None,
    comm: MPI.Comm | None = None,
    sigma: float | None = None,
    sigma2_prior: tuple[float, float] | None = None,
    alpha: float = 0.95,
    beta: float = 2.0,
    k: float = 2.0,
    mu0: float | None = None,
    sigma_mu: float | None = None,
    max_bins: int = 256,
    check: bool = True,
    _unreduced: str | None = None,  # tests only: a deliberately wrong reduction, "leaves" or "ranges"
) -> Fit:
    """Fit ``y ~ N(sum of m trees, sigma^2)`` by grow/prune backfitting, rows split over the ranks of ``comm``.

    Every rank calls ``fit`` with its own rows and the same options and seed; every rank returns the same
    :class:`Fit`. ``comm=None`` runs in one process on the rows given.

    Parameters
    ----------
    X_local, y_local : arrays (n_local, p) and (n_local,)
        This rank's rows (finite numbers; a rank may hold none).
    m, n_sweeps, seed
        Trees, sweeps (one draw each), and the seed of the generator every rank replicates (``None``:
        fresh entropy from rank 0, sent to the others).
    sigma : float, optional
        A fixed noise scale; ``None`` (default) draws ``sigma^2`` after each sweep from its conjugate
        inverse gamma given the all-reduced residual sum of squares.
    sigma2_prior : (a, b), optional
        Inverse-gamma prior of ``sigma^2``; default :func:`~pymc_treesamplers.chipman_sigma2_prior` with
        ``sigma_hat`` the sd of y (all-reduced; the package's helper uses a least-squares residual sd).
        The chain starts at ``sigma_hat``.
    alpha, beta, k, mu0, sigma_mu, max_bins
        The tree prior, leaf prior and binning of :class:`~pymc_treesamplers.BART` (defaults from the
        all-reduced mean and range of y, as BART computes them).
    check : bool, default True
        After each sweep, all-reduce a digest of the replicated state (trees, leaf values, sigma,
        generator) and raise on every rank if the ranks disagree.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> X = rng.uniform(size=(50, 3)); y = 2.0 * (X[:, 1] > 0.5) + 0.1 * rng.normal(size=50)
    >>> out = fit(X, y, m=2, n_sweeps=20, seed=3, sigma=0.1)
    >>> float(np.abs(out.predict(X) - y).mean()) < 0.5
    True
    >>> # under MPI:  from mpi4py import MPI; fit(X[rows], y[rows], ..., comm=MPI.COMM_WORLD)
    """
    if _unreduced not in (None, "leaves", "ranges"):
        raise ValueError(f"_unreduced must be None, 'leaves' or 'ranges', got {_unreduced!r}")
    X_local = np.asarray(X_local, dtype=np.float64)
    y = np.ascontiguousarray(y_local, dtype=np.float64)
    if X_local.ndim != 2 or y.shape != (X_local.shape[0],):
        raise ValueError(f"X_local must be (n_local, p) and y_local (n_local,), got {X_local.shape} and {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError("y_local must be finite")
    reducer = Reducer(comm)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy) if comm is None else comm.bcast(
            int(np.random.SeedSequence().entropy) if comm.rank == 0 else None, root=0)
    codes, thr_table = bin_rows(X_local, reducer, max_bins)
    n, y_sum, y_sq = reducer.sums(np.array([y.size, np.sum(y), np.sum(y * y)], dtype=np.float64))
    y_max, y_negmin = reducer.maxima(np.array([y.max(), -y.min()]) if y.size else np.full(2, -np.inf))
    n = int(n)
    if n == 0:
        raise ValueError("no rows on any rank")
    mean = y_sum / n
    if mu0 is None:
        mu0 = float(mean) / m
    if sigma_mu is None:
        spread = y_max + y_negmin
        sigma_mu = spread / (2.0 * k * np.sqrt(m)) if spread > 0 else 1.0 / np.sqrt(m)
    if sigma is None:
        sigma_hat = math.sqrt(max(y_sq / n - mean * mean, 0.0))
        a, b = sigma2_prior if sigma2_prior is not None else chipman_sigma2_prior(None, None, sigma_hat=sigma_hat)
        s2 = sigma_hat**2
    else:
        s2 = float(sigma) ** 2

    # the package's chain gives the data, prior and forest (single leaves; each root's availability is set
    # below from every rank's rows, not this rank's alone)
    start = Chain.new(codes, m, alpha=float(alpha), beta=float(beta), mu0=float(mu0), s2=float(sigma_mu) ** 2)
    data, prior, forest = start.data, start.prior, start.forest
    chain = _Chain(data, prior, forest, y, np.full(y.size, 1.0 / s2), reducer, np.random.default_rng(seed),
                   _unreduced)
    # every root holds all rows: their availability, once
    root = chain.node_ranges(chain.tree(0), [0])[0]
    forest.floats[:, 0, LWAVAIL] = node_log_avail(chain.summary(root), _PAIR, 0, 2)

    forests, sigmas, leaves, accept, calls, nbytes, seconds, comm_seconds = [], [], [], [], [], [], [], []
    split_counts = np.zeros(codes.shape[0], dtype=np.int64)
    start.fit(chain.f)
    for _ in range(n_sweeps):
        c0, b0, w0, t0 = reducer.calls, reducer.bytes, reducer.seconds, time.perf_counter()
        # each sweep starts from the residual of the forest's fit, as the tree step's does (not from the
        # running residual of the last sweep, which differs from it in the last bits)
        np.subtract(y, chain.f, out=chain.ps.r)
        accepted = sum(chain.update(j) for j in range(m))
        start.fit(chain.f)
        if sigma is None:
            rss = reducer.sums(np.array([np.sum((y - chain.f) ** 2)]))[0]
            # NormalScaleGibbs's conjugate draw, from the generator every rank shares
            s2 = 1.0 / chain.rng.gamma(a + 0.5 * n, 1.0 / (b + 0.5 * rss))
            chain.ps.w[:] = 1.0 / s2
        if check:
            digest = reducer.maxima(_digest(forest, s2, chain.rng))
            if digest[0] != -digest[1]:
                raise RuntimeError(f"sweep {len(forests)}: the ranks' replicated states differ (trees, leaf values, "
                                   "sigma or generator): a reduction did not give every rank the same numbers")
        forests.append(start.encode(thr_table))
        sigmas.append(math.sqrt(s2))
        leaves.append(start.summary(split_counts)[1])
        accept.append(accepted / m)
        calls.append(reducer.calls - c0)
        nbytes.append(reducer.bytes - b0)
        seconds.append(time.perf_counter() - t0)
        comm_seconds.append(reducer.seconds - w0)
    return Fit(forests, np.array(sigmas), np.array(leaves), np.array(accept), np.array(calls), np.array(nbytes),
               np.array(seconds), np.array(comm_seconds))


def _digest(forest: Forest, s2: float, rng: np.random.Generator) -> np.ndarray:
    """``(h, -h)`` for a 62-bit hash ``h`` of the replicated state: a ``MAX`` all-reduce gives ``(max h,
    -min h)``, equal up to sign exactly when every rank holds the same state."""
    h = hashlib.blake2b(digest_size=8)
    for j in range(forest.m):
        nn = forest.n_nodes[j]
        h.update(np.ascontiguousarray(forest.ints[j, :nn][:, [VAR, CUT, LEFT, RIGHT]]).tobytes())
        h.update(np.ascontiguousarray(forest.floats[j, :nn, VALUE]).tobytes())
    h.update(np.float64(s2).tobytes())
    h.update(repr(rng.bit_generator.state).encode())
    x = int.from_bytes(h.digest(), "little") >> 2
    return np.array([x, -x], dtype=np.int64)


# ------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m prototypes.mpi",
        description="Data-parallel grow/prune BART over MPI ranks (prototype). Run under mpirun: each rank "
                    "takes a contiguous block of the rows; rank 0 prints a summary and writes --out.")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="an .npz file with arrays X (n, p) and y (n,)")
    src.add_argument("--friedman", type=int, metavar="N", help="Friedman #1 data with N rows (seed --data-seed)")
    src.add_argument("--latency", type=int, metavar="P",
                     help="only time 10^4 Allreduce calls of 2P+4 doubles (a grow's node ranges are 2P numbers)")
    ap.add_argument("--p", type=int, default=10, help="covariates of --friedman (default 10)")
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--m", type=int, default=20, help="trees (default 20)")
    ap.add_argument("--sweeps", type=int, default=20, help="sweeps, one draw each (default 20)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the generator every rank replicates")
    ap.add_argument("--sigma", type=float, default=None, help="fixed noise scale (default: Gibbs draws)")
    ap.add_argument("--no-check", action="store_true", help="skip the per-sweep check that the ranks agree")
    ap.add_argument("--out", help="write the draws (Fit.save) to this .npz file (rank 0)")
    # a deliberately wrong reduction, so tests can show that the equality test fails
    ap.add_argument("--unreduced", choices=["leaves", "ranges"], help=argparse.SUPPRESS)
    return ap


def main(argv: list[str] | None = None) -> None:
    """The command line (``--help``); any error on a rank aborts every rank rather than leaving them waiting."""
    args = _parser().parse_args(argv)
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    try:
        _run(args, comm)
    except Exception:
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(1)


def _run(args, comm) -> None:
    if args.latency is not None:
        sec = measure_allreduce(comm, 2 * args.latency + 4)
        if comm.rank == 0:
            print(f"{comm.size} ranks: Allreduce of {2 * args.latency + 4} doubles: {sec * 1e6:.2f} us per call")
        return
    if args.data:
        with np.load(args.data) as z:
            X, y = z["X"], z["y"]
    else:
        from pymc_treesamplers.datasets import friedman1

        X, y, _ = friedman1(args.friedman, p=args.p, rng=args.data_seed)
    rows = np.array_split(np.arange(X.shape[0]), comm.size)[comm.rank]
    t0 = time.perf_counter()
    out = fit(X[rows], y[rows], m=args.m, n_sweeps=args.sweeps, seed=args.seed, comm=comm, sigma=args.sigma,
              check=not args.no_check, _unreduced=args.unreduced)
    elapsed = time.perf_counter() - t0
    if comm.rank == 0:
        if args.out:
            out.save(args.out)
        later = slice(1, None) if len(out.seconds) > 1 else slice(None)
        sweep, wait = np.median(out.seconds[later]), np.median(out.comm_seconds[later])
        calls, size = out.calls.mean(), out.bytes.mean() / out.calls.mean()
        print(f"{comm.size} ranks, n = {X.shape[0]}, p = {X.shape[1]}, m = {args.m}: {args.sweeps} sweeps in "
              f"{elapsed:.2f} s (binning and compilation included), {sweep:.4f} s per sweep after the first, "
              f"{wait:.4f} s of it in all-reduces; per sweep {calls:.1f} all-reduces of {size:.0f} bytes on "
              f"average; mean leaves per tree {out.n_leaves[-1]:.2f}, sigma {out.sigma[-1]:.4g}")


if __name__ == "__main__":
    main()
