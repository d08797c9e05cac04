"""One chain of a sum of trees: the one way into the engine.

A :class:`Chain` holds what a backfitting chain is made of: the coded split data, the tree prior, the forest,
and (in its :class:`Workspace`) the driver's scratch tree, the sampler's scratch record and the compiled entry
points. Everything that runs the engine (the PyMC steps, :class:`~pymc_treesamplers.GFRRegressor`, the
single-tree SMC estimators, the benchmarks) makes one here and asks it to sweep, sum its trees, summarise and
encode them; nothing else builds a forest, a prior or the driver's buffers (tests/test_layout.py checks it).

A step with several outputs holds one chain per output, on the same data and sharing one workspace (they
sweep in turn): :meth:`Chain.sibling`. Several states of one output (tempered replicas, say) are several
chains in the same way. A chain whose leaves hold a coefficient vector on a basis (``Chain.new(...,
basis=B)``, :mod:`pymc_treesamplers.engine.basisleaf`) takes the same Gaussian pseudo-data of the term
``B_i . beta``, and its :meth:`Chain.fit` is that term.

>>> import numpy as np
>>> from pymc_treesamplers.engine.records import Pseudo
>>> from pymc_treesamplers.engine.updates.mh import new_mh_scratch
>>> codes = np.array([[0, 1, 2, 3, 4, 5]], dtype=np.uint16)
>>> y = np.array([0.0, 0.1, 0.0, 2.0, 2.1, 1.9])
>>> chain = Chain.new(codes, m=2, alpha=0.95, beta=2.0, mu0=0.0, s2=1.0,
...                   new_scratch=lambda: new_mh_scratch(np.array([0.5, 0.5, 0.0, 0.0]), 1, 6, 2))
>>> f = np.empty(6); chain.fit(f); r = y - f    # the residual the driver keeps, tree by tree
>>> chain.sweep(np.random.default_rng(0), Pseudo(r, np.ones(1), 1))
-1
>>> chain.fit(f); bool(np.allclose(y - f, r))
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .basisleaf import forest_basis_sum, forest_coefficients
from .binding import Bound
from .driver import basis_record, new_scratch_tree, run_sweep, sweep
from .encoding import encode_forest
from .forest import Forest, forest_sum, forest_summary, init_roots
from .nodes import COEF, N_FLOAT_FIELDS, VALUE
from .pool import start as start_pool
from .records import BasisPseudo, Pseudo, SplitData, TreePrior, basis_pseudo, split_data
from .rows import kernel_threads, numba_threads
from .updates.gfr import new_gfr_scratch


class Workspace:
    """The driver's scratch tree, a sampler's scratch record, the grow-from-root scratch and the compiled entry
    points, for chains on ``n`` rows: each made at first use and never pickled (they are sized by the data, up
    to about 100 bytes per row and particle, and a worker process makes its own).

    ``new_scratch``: makes the sampler's scratch record (None: a chain that only runs grow-from-root sweeps);
    ``coefs``: the coefficients a leaf holds on a basis (0: constant leaves), and ``width`` the width of a leaf's
    statistics (:func:`~pymc_treesamplers.engine.leaves.n_stats`).
    """

    def __init__(self, n: int, new_scratch: Callable[[], Any] | None = None, coefs: int = 0, width: int = 2):
        self.n = n
        self.new_scratch = new_scratch
        self.coefs, self.width = coefs, width
        self._clear()

    def _clear(self) -> None:
        self._tree = self._scratch = self._gfr = None
        self.kernels: dict[str, Bound] = {}

    def __getstate__(self):
        return {"n": self.n, "new_scratch": self.new_scratch, "coefs": self.coefs, "width": self.width}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._clear()

    @property
    def tree(self):
        """The driver's scratch tree (:func:`~pymc_treesamplers.engine.driver.new_scratch_tree`)."""
        if self._tree is None:
            self._tree = new_scratch_tree(self.n, self.coefs)
        return self._tree

    def scratch(self, codes: np.ndarray, warm: bool = False):
        """The sampler's scratch record, or the grow-from-root sweep's (``warm``)."""
        if warm:
            if self._gfr is None:
                self._gfr = new_gfr_scratch(codes, self.width)
            return self._gfr
        if self._scratch is None:
            if self.new_scratch is None:
                raise ValueError("this chain runs grow-from-root sweeps only: it was made without new_scratch")
            self._scratch = self.new_scratch()
        return self._scratch

    def kernel(self, dispatcher) -> Bound:
        """``dispatcher`` bound to its argument types (:class:`~pymc_treesamplers.engine.binding.Bound`)."""
        bound = self.kernels.get(dispatcher.__name__)
        if bound is None:
            bound = self.kernels[dispatcher.__name__] = Bound(dispatcher)
        return bound



def _kernel_record(lik):
    """``lik`` as the sweep's kernels take it: a record's thread count of 1 as None
    (:func:`~pymc_treesamplers.engine.rows.kernel_threads`), so a one-thread sweep compiles no parallel loop
    whichever way its record was made."""
    threads = getattr(lik, "threads", None)
    return lik._replace(threads=None) if threads is not None and kernel_threads(threads) is None else lik

class Chain:
    """The state of one chain of ``m`` trees on coded data: its split data, tree prior and forest.

    The forest is made by :meth:`start` (single-leaf trees), not by the constructor: a chain whose trees live
    elsewhere (the GPU sweep) never holds the ``4 m n`` bytes of their row orders. ``unswept``: no sweep since
    :meth:`start`, so the trees are the single leaves a new chain starts from (a pickled fresh chain carries
    no forest and starts again where it is unpickled).
    """

    def __init__(self, data: SplitData, prior: TreePrior, m: int, workspace: Workspace,
                 basis: BasisPseudo | None = None):
        start_pool()  # numba's threading layer and pool, before this chain's first kernel (engine/pool.py)
        self.data, self.prior, self.m, self.workspace = data, prior, m, workspace
        # the basis and its coefficients' prior, as a record whose residual and weights each sweep's take
        self.basis = basis
        self.forest: Forest | None = None
        self.changed = np.zeros(m, dtype=np.bool_)
        self.unswept = True

    @classmethod
    def new(cls, codes: np.ndarray, m: int, *, alpha: float, beta: float, mu0, s2,
            split_weights: np.ndarray | None = None, threads: int = 1,
            new_scratch: Callable[[], Any] | None = None, start: bool = True, basis: np.ndarray | None = None,
            by_split: bool = False, slab: float = 1.0) -> Chain:
        """A chain on split codes ``codes`` (p, n) under the tree prior ``alpha``, ``beta`` and the leaf prior
        ``N(mu0, s2)``, the split variables weighted by ``split_weights`` (default: all 1); ``threads`` for the
        passes over long row ranges; ``new_scratch`` makes the sampler's scratch record (with a basis, one for
        leaf statistics of :attr:`Workspace.width`); ``start``: make the single-leaf trees now (:meth:`start`).
        ``basis`` (n, d): every leaf holds ``beta ~ N(mu0, diag(s2))`` (``mu0``, ``s2`` scalars or (d,)) and a
        tree contributes ``basis_i . beta`` at row ``i``. With ``by_split``, ``basis`` is ``(n, 1 + p)`` (ones, then
        one column per covariate) and a leaf's basis is the ones and the covariate its parent splits on (``d = 2``),
        its slope free with prior probability ``slab`` and otherwise zero
        (:class:`~pymc_treesamplers.engine.records.BasisPseudo`)."""
        codes = np.asarray(codes)
        weights = np.ones(codes.shape[0]) if split_weights is None else split_weights
        data = split_data(codes, weights, threads)
        if basis is None:
            chain = cls(data, TreePrior(alpha, beta, mu0, s2), m, Workspace(codes.shape[1], new_scratch))
        else:
            record = basis_pseudo(np.zeros(0), np.ones(1), basis, mu0, s2, threads, by_split, slab)
            d = record.mu0.shape[0]
            # the scalar leaf fields are unused: the record carries the coefficients' prior
            chain = cls(data, TreePrior(alpha, beta, 0.0, 1.0), m,
                        Workspace(codes.shape[1], new_scratch, coefs=d, width=d + d * d), record)
        if start:
            chain.start()
        return chain

    def sibling(self, mu0: float, s2: float, start: bool = True) -> Chain:
        """Another chain on the same data and workspace, with the leaf prior ``N(mu0, s2)`` (another output of
        the same BART variable)."""
        if self.basis is not None:
            raise ValueError("a chain on a leaf basis has no sibling: a basis BART has one output")
        chain = Chain(self.data, self.prior._replace(mu0=mu0, s2=s2), self.m, self.workspace)
        if start:
            chain.start()
        return chain

    @property
    def n(self) -> int:
        return self.data.codes.shape[1]

    def start(self) -> None:
        """Every tree a single leaf of value ``mu0`` holding all rows (reusing the row-order buffer: the largest
        array of a chain, 4 bytes per row and tree, so a chain's restart does not hold two). The split weights
        in ``data`` must be current: a root caches its available weight."""
        perm = None if self.forest is None else self.forest.perm
        if self.basis is None:
            self.forest = Forest.empty(self.m, self.n, self.prior.mu0, perm=perm)
        else:
            self.forest = Forest.empty(self.m, self.n, 0.0, perm=perm, coefs=self.basis.mu0.shape[0])
            self.forest.floats[:, 0, COEF:] = self.basis.mu0  # every root at its coefficients' prior mean
        init_roots(self.forest.arrays(), self.data, self.prior.mu0)
        self.changed[:] = False
        self.unswept = True

    def restore(self, forest: Forest) -> None:
        """Continue from ``forest`` (a sampling state's)."""
        self.forest, self.unswept = forest, False

    def sweep(self, rng: np.random.Generator, lik, *, warm: bool = False, threads: int = 1,
              trees: tuple[int, int] | None = None) -> int:
        """One backfitting sweep over every tree, or over the range ``trees = (start, stop)`` of them
        (:func:`~pymc_treesamplers.engine.driver.run_sweep`), under the likelihood record ``lik`` (its residual
        updated in place), by the sampler's update or, ``warm``, by grow-from-root. ``changed[j]``: whether
        tree ``j`` changed. Returns -1, or the tree whose update failed."""
        ws = self.workspace
        lik = self._with_basis(_kernel_record(lik))
        # a record on the log-link route integrates its leaves by Laplace: the kernels must as well
        prior = self.prior._replace(leaf_exp=getattr(lik, "leaf_exp", 0.0))
        self.unswept = False
        return run_sweep(rng, self.data, prior, self.forest, lik, ws.tree, ws.scratch(self.data.codes, warm),
                         self.changed, threads, ws.kernel(sweep), trees)

    def sweep_cached(self, lik, *, warm: bool = False) -> bool:
        """Whether this chain's sweep under ``lik`` is compiled (in memory or numba's on-disk cache)."""
        ws = self.workspace
        return ws.kernel(sweep).cached(np.random.default_rng(0), 0, 0, False, self.data, self.prior,
                                       self.forest.arrays(), self._with_basis(_kernel_record(lik)), ws.tree,
                                       ws.scratch(self.data.codes, warm), self.changed)

    def _with_basis(self, lik):
        """The record a sweep runs on: ``lik`` itself, or, on a basis chain, the basis record with ``lik``'s
        residual (the same array: the sweep updates it in place) and weights, or another likelihood's record
        for basis leaves (:func:`~pymc_treesamplers.engine.driver.register_basis_record`)."""
        if self.basis is None:
            return lik
        if type(lik) is Pseudo:
            return self.basis._replace(r=lik.r, weight=lik.w, threads=lik.threads)
        record = basis_record(lik, self.basis)
        if record is None:
            raise NotImplementedError(
                "leaves with a coefficient vector on a basis of several columns take Gaussian pseudo-data or a "
                f"record registered for them (driver.register_basis_record), not a {type(lik).__name__}")
        return record

    def fit(self, out: np.ndarray, threads: int = 1) -> None:
        """The sum of the trees at the training rows into ``out`` (n,) (the order of prediction's sums); on a
        basis chain, the sum of the trees' terms ``basis_i . beta``."""
        if self.basis is not None:
            self.workspace.kernel(forest_basis_sum)(self.forest.arrays(), self.basis, out)
            return
        with numba_threads(threads):
            self.workspace.kernel(forest_sum)(self.forest.arrays(), out, kernel_threads(threads))

    def level(self) -> tuple[int, float]:
        """``(L, S)``: the number of leaves over all trees and the sum of their values less the leaf prior's mean,
        what the leaves' prior ``N(mu0, s2)`` says of a shift of the forest's level (steps/level.py)."""
        self._constant_leaves("level")
        leaves = self.forest.leaves()
        return int(leaves.sum()), float((self.forest.floats[:, :, VALUE][leaves] - self.prior.mu0).sum())

    def shift_level(self, d: float) -> None:
        """Add ``d / m`` to every leaf of every tree, so that the fit moves by ``d`` at every row."""
        self._constant_leaves("shift_level")
        leaves = self.forest.leaves()
        self.forest.floats[:, :, VALUE][leaves] += d / self.m

    def _constant_leaves(self, what: str) -> None:
        if self.basis is not None:
            raise ValueError(f"Chain.{what}: this chain's leaves hold coefficients on a basis, not one value")

    def coefficients(self, out: np.ndarray) -> None:
        """A basis chain's coefficients at the training rows into ``out`` (d, n): the sum over the trees of each
        row's leaf's coefficient vector (so :meth:`fit` is ``sum_j basis[:, j] * out[j]``, up to rounding, for a fixed
        basis; a basis chosen by the tree has no such per-row reading)."""
        if self.basis is None:
            raise ValueError("this chain's leaves are constants: it has no coefficients on a basis")
        self.workspace.kernel(forest_coefficients)(self.forest.arrays(), out)

    def summary(self, split_counts: np.ndarray) -> tuple[float, float]:
        """Mean tree depth and mean number of leaves; the splits per split column into ``split_counts``."""
        return self.workspace.kernel(forest_summary)(self.forest.arrays(), split_counts)

    def encode(self, thr_table: np.ndarray, trace_var: np.ndarray | None = None, p: int | None = None) -> str:
        """The forest in the stored format (:func:`~pymc_treesamplers.engine.encoding.encode_forest`). A basis
        chain's forest is stored as ``d`` forests of the same trees, the ``j``-th with each leaf's ``j``-th
        coefficient, comma-separated as a BART's outputs are: the format holds one value per leaf, and
        predictions from the trace are then the coefficients (d, n_new)."""
        if self.basis is not None:
            pieces = []
            for j in range(self.basis.mu0.shape[0]):
                floats = self.forest.floats[..., :N_FLOAT_FIELDS].copy()
                floats[..., VALUE] = self.forest.floats[..., COEF + j]
                one = Forest(self.forest.ints, floats, self.forest.perm, self.forest.n_nodes)
                pieces.append(encode_forest(one, thr_table, trace_var, p))
            return ",".join(pieces)
        return encode_forest(self.forest, thr_table, trace_var, p)

    def __getstate__(self):
        state = self.__dict__.copy()
        if self.unswept and self.forest is not None:
            state["forest"] = "start"  # single leaves: made again where the chain is unpickled
        return state

    def __setstate__(self, state: dict) -> None:
        # a chain arriving in a worker process (PyMC's chains, dask tasks) is not made by __init__ there
        start_pool()
        self.__dict__.update(state)
        if isinstance(self.forest, str):
            self.forest = None
            self.start()
