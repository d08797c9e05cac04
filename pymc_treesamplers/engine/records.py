"""Named records that the numba kernels share, so a signature reads as a sentence.

Every record is a :class:`typing.NamedTuple` of arrays and scalars: numba compiles attribute access
on it to a field load, and a kernel specialises once per record type, not per argument list.

* :class:`SplitData`: the split covariates (integer codes) and the split-variable weights.
* :class:`TreePrior`: ``alpha``, ``beta`` of the tree prior and the leaf prior ``N(mu0, s2)``.
* :class:`Pseudo`: the weighted Gaussian pseudo-data one tree sees (docs/design.md section 1).
* :class:`BasisPseudo`: the same, for a tree whose leaves hold a coefficient vector on a basis.
* :class:`Tree`: one tree's node arrays and row order (views into a forest, a particle or a
  scratch tree; see :mod:`pymc_treesamplers.engine.nodes`).
* :class:`ForestArrays`: the node arrays of all ``m`` trees of a forest.
* :class:`Backup`: room to save a tree's nodes and rows before a move that may be rejected.

>>> import numpy as np
>>> prior = TreePrior(alpha=0.95, beta=2.0, mu0=0.0, s2=1.0)
>>> prior.alpha, prior.s2
(0.95, 1.0)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from .nodes import N_FLOAT_FIELDS, N_INT_FIELDS, NODE_INT, ROW_INT
from .rows import kernel_threads


class SplitData(NamedTuple):
    """Split covariates: ``codes`` (p, n) uint16, weights ``wsplit`` (p,) and their logs ``logw``;
    ``threads`` for the passes over long row ranges (:mod:`pymc_treesamplers.engine.rows`; None: one thread, as
    :func:`split_data` stores it, so the kernels compiled for it leave out the parallel loops); each
    variable's smallest and largest code over all rows, ``code_min`` and ``code_max`` (p,): a root's code
    ranges, read instead of passing over every row (:func:`split_data` sets them)."""

    codes: np.ndarray
    wsplit: np.ndarray
    logw: np.ndarray
    threads: int | None
    code_min: np.ndarray
    code_max: np.ndarray


class TreePrior(NamedTuple):
    """Tree prior ``p_split(d) = alpha (1 + d)^-beta`` and leaf prior ``N(mu0, s2)``.

    ``leaf_exp``: how a leaf's rows enter its marginal likelihood. 0: Gaussian pseudo-data (exact
    conjugate algebra, :mod:`pymc_treesamplers.engine.gaussian`); ``c != 0``: rows of a log-link family, each
    ``s_i c mu - w_i exp(c mu)`` with ``S = sum w r`` standing for ``sum s`` (the Laplace approximation
    of :mod:`pymc_treesamplers.engine.loglink`).
    """

    alpha: float
    beta: float
    mu0: float
    s2: float
    leaf_exp: float = 0.0


class Pseudo(NamedTuple):
    """Pseudo-data of one tree: ``r_i ~ N(g(x_i), 1 / w_i)``; ``r`` is the running residual.

    ``w``: one weight per row, or a single weight for every row (length 1; a Normal likelihood with one sigma),
    whose passes over the rows then read no weights (:func:`~pymc_treesamplers.engine.rows.row_weight`).
    ``threads``: how many threads the passes over long row ranges may use (:mod:`pymc_treesamplers.engine.rows`);
    a chain's sweep hands the kernels None for one thread (:func:`~pymc_treesamplers.engine.rows.kernel_threads`).
    """

    r: np.ndarray
    w: np.ndarray
    threads: int | None


class BasisPseudo(NamedTuple):
    """Pseudo-data of one tree whose leaves hold a coefficient vector on a basis (:mod:`.basisleaf`):
    ``r_i ~ N(basis_i . beta_leaf, 1 / weight_i)`` with ``beta_leaf ~ N(mu0, diag(s2))`` independently per leaf.

    ``basis`` (n, d); ``weight`` as :class:`Pseudo`'s ``w`` (one per row, or length 1); the leaf prior ``mu0`` and
    ``s2`` (d,), which the record carries as the single-tree leaf models carry theirs (:mod:`.leaves`), so the
    scalar :class:`TreePrior`'s leaf fields are unused; ``chol`` (d, d), ``vec`` (d,) and ``stats`` (4, d + d^2):
    the leaf algebra's scratch (one leaf, one split's two sides and their union, or the four cells of a subtree two
    levels deep, at a time). The weights are
    called ``weight``, not ``w``, on purpose: a kernel written for constant leaves reads ``pseudo.w`` and so fails
    to compile on this record instead of ignoring the basis.

    ``by_split``: the basis depends on the tree. Then ``basis`` is ``(n, 1 + p)``, ones and then one column per
    covariate, and a leaf whose parent splits on covariate ``v`` has the basis ``[1, basis[:, 1 + v]]`` (``[1, 0]``
    at the root): a line in the covariate its parent chose (:mod:`.basisleaf`, ``d = 2``). ``log_slab`` and
    ``log_spike``: the log prior probabilities that a leaf's coefficients after the first are free or zero (a
    spike and slab over the leaf's type; ``0`` and ``-inf``: always free).
    """

    r: np.ndarray
    weight: np.ndarray
    basis: np.ndarray
    mu0: np.ndarray
    s2: np.ndarray
    threads: int | None
    chol: np.ndarray
    vec: np.ndarray
    stats: np.ndarray
    by_split: bool
    log_slab: float
    log_spike: float


def basis_pseudo(r, weight, basis, mu0, s2, threads: int = 1, by_split: bool = False,
                 slab: float = 1.0) -> BasisPseudo:
    """A :class:`BasisPseudo` from the residual, the weights, the basis (n, d) and the leaf prior (scalars or (d,)).
    With ``by_split``, ``basis`` is ``(n, 1 + p)`` (ones, then a column per covariate), each leaf's basis is the ones
    and its parent's covariate, and ``slab`` is the prior probability that a leaf's slope is free (else 0).

    >>> bp = basis_pseudo(np.zeros(3), np.ones(1), np.ones((3, 2)), 0.0, 1.0)
    >>> bp.mu0.tolist(), bp.chol.shape
    ([0.0, 0.0], (2, 2))
    >>> basis_pseudo(np.zeros(3), np.ones(1), np.ones((3, 4)), 0.0, 1.0, by_split=True, slab=0.5).stats.shape
    (4, 6)
    """
    basis = np.ascontiguousarray(basis, dtype=np.float64)
    d = 2 if by_split else basis.shape[1]
    if not 0.0 < slab <= 1.0:
        raise ValueError(f"slab must be in (0, 1], got {slab}")
    mu0 = np.ascontiguousarray(np.broadcast_to(np.asarray(mu0, dtype=np.float64), (d,)))
    s2 = np.ascontiguousarray(np.broadcast_to(np.asarray(s2, dtype=np.float64), (d,)))
    log_spike = math.log1p(-slab) if slab < 1.0 else -math.inf
    return BasisPseudo(r, np.ascontiguousarray(weight, dtype=np.float64), basis, mu0, s2, kernel_threads(threads),
                       np.zeros((d, d)), np.zeros(d), np.zeros((4, d + d * d)), bool(by_split), math.log(slab),
                       log_spike)


class Tree(NamedTuple):
    """One tree: node rows ``ints`` (cap, 8), ``floats`` (cap, 3), row order ``perm`` (n,), and
    ``nn`` (1,), the number of nodes in use (a length-1 view, so kernels can change it)."""

    ints: np.ndarray
    floats: np.ndarray
    perm: np.ndarray
    nn: np.ndarray


class ForestArrays(NamedTuple):
    """All trees: ``ints`` (m, cap, 8), ``floats`` (m, cap, 3), ``perm`` (m, n), ``n_nodes`` (m,)."""

    ints: np.ndarray
    floats: np.ndarray
    perm: np.ndarray
    n_nodes: np.ndarray


class Backup(NamedTuple):
    """Saved node rows and row order of one tree (see :func:`pymc_treesamplers.engine.tree.backup`)."""

    ints: np.ndarray
    floats: np.ndarray
    perm: np.ndarray


@numba.njit(cache=True, nogil=True)
def tree_of(forest, j):
    """Tree ``j`` of a :class:`ForestArrays` as a :class:`Tree` of views."""
    return Tree(forest.ints[j], forest.floats[j], forest.perm[j], forest.n_nodes[j : j + 1])


def empty_nodes(cap: int, coefs: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Uninitialised node arrays for a tree of up to ``cap`` nodes, with ``coefs`` more float columns for a basis
    leaf's coefficients (:mod:`.nodes`).

    ``np.empty``, so untouched pages of a large scratch tree cost no memory; kernels write every
    node they create in full.
    """
    return np.empty((cap, N_INT_FIELDS), dtype=NODE_INT), np.empty((cap, N_FLOAT_FIELDS + coefs))


def new_backup(cap: int, n: int) -> Backup:
    """A :class:`Backup` for trees of up to ``cap`` nodes on ``n`` rows."""
    ints, floats = empty_nodes(cap)
    return Backup(ints, floats, np.empty(n, dtype=ROW_INT))


def split_data(codes: np.ndarray, wsplit: np.ndarray, threads: int = 1) -> SplitData:
    """:class:`SplitData` from codes (p, n) and non-negative weights (zero weight: never split on).

    >>> split_data(np.zeros((2, 3), np.uint16), np.array([1.0, 0.0])).logw.tolist()
    [0.0, -inf]
    """
    wsplit = np.ascontiguousarray(wsplit, dtype=np.float64)
    with np.errstate(divide="ignore"):
        logw = np.log(wsplit)
    codes = np.ascontiguousarray(codes, dtype=np.uint16)
    if codes.shape[1]:
        lo, hi = codes.min(axis=1).astype(np.int64), codes.max(axis=1).astype(np.int64)
    else:
        lo = hi = np.zeros(codes.shape[0], dtype=np.int64)
    return SplitData(codes, wsplit, logw, kernel_threads(threads), lo, hi)
