"""Forests of ``m`` trees in plain arrays: the picklable container, and kernels over all trees.

See :mod:`pymc_treesamplers.engine.nodes` for the meaning of every array and
:mod:`pymc_treesamplers.engine.tree` for the operations on one tree.
"""

from dataclasses import dataclass

import numba
import numpy as np

from .nodes import (
    DEPTH,
    END,
    LEFT,
    N_FLOAT_FIELDS,
    N_INT_FIELDS,
    NODE_INT,
    ROW_INT,
    START,
    VALUE,
    VAR,
)
from .records import ForestArrays, tree_of
from .tree import add_tree, init_root


@dataclass
class Forest:
    """The state of ``m`` trees on ``n`` training rows (plain arrays, picklable).

    >>> f = Forest.empty(m=3, n=5, value0=0.1)
    >>> f.n_nodes.tolist(), f.capacity
    ([1, 1, 1], 16)
    """

    ints: np.ndarray
    floats: np.ndarray
    perm: np.ndarray
    n_nodes: np.ndarray

    @classmethod
    def empty(cls, m: int, n: int, value0: float = 0.0, cap: int = 16, perm: np.ndarray | None = None,
              coefs: int = 0) -> "Forest":
        """``m`` single-leaf trees of value ``value0`` with room for ``cap`` nodes each; with ``coefs`` > 0 the
        leaves hold that many coefficients on a basis instead (all 0; :mod:`pymc_treesamplers.engine.nodes`).

        The roots' available split weight is set by :func:`init_roots` (it needs the data). ``perm``:
        an ``(m, n)`` row-index buffer to reuse (refilled in order): the rows' order per tree is the
        largest array of a chain (4 bytes per row and tree), so a chain's restart does not hold two.
        """
        ints = np.full((m, cap, N_INT_FIELDS), -1, dtype=NODE_INT)
        floats = np.zeros((m, cap, N_FLOAT_FIELDS + coefs))
        ints[:, 0, DEPTH] = 0
        ints[:, 0, START] = 0
        ints[:, 0, END] = n
        floats[:, 0, VALUE] = value0
        if perm is None or perm.shape != (m, n) or perm.dtype != ROW_INT:
            perm = np.empty((m, n), dtype=ROW_INT)
        perm[:] = np.arange(n, dtype=ROW_INT)
        return cls(ints, floats, perm, np.ones(m, dtype=NODE_INT))

    @property
    def m(self) -> int:
        return self.ints.shape[0]

    @property
    def capacity(self) -> int:
        return self.ints.shape[1]

    def arrays(self) -> ForestArrays:
        """The arrays as the record the kernels take (views: kernels change the forest in place)."""
        return ForestArrays(self.ints, self.floats, self.perm, self.n_nodes)

    def leaves(self) -> np.ndarray:
        """``(m, capacity)`` mask of the node slots that are leaves in use."""
        used = np.arange(self.capacity)[None, :] < self.n_nodes[:, None]
        return used & (self.ints[:, :, VAR] == -1)

    def grow_capacity(self, at_least: int) -> None:
        """Double the node capacity of every tree until it holds ``at_least`` nodes."""
        m, cap, _ = self.ints.shape
        new = cap
        while new < at_least:
            new *= 2
        if new == cap:
            return
        ints = np.full((m, new, N_INT_FIELDS), -1, dtype=NODE_INT)
        floats = np.zeros((m, new, self.floats.shape[2]))
        ints[:, :cap] = self.ints
        floats[:, :cap] = self.floats
        self.ints, self.floats = ints, floats

    def copy(self) -> "Forest":
        return Forest(self.ints.copy(), self.floats.copy(), self.perm.copy(), self.n_nodes.copy())


@numba.njit(cache=True, nogil=True)
def init_roots(forest, data, value):
    """Make every tree a single leaf with ``value`` holding all rows."""
    for j in range(forest.ints.shape[0]):
        init_root(tree_of(forest, j), data, value)


@numba.njit(cache=True, nogil=True)
def forest_sum(forest, out, threads=None):
    """Sum of all trees at the training rows, trees added in order 0..m-1 for every row (each tree's
    rows in parallel blocks with ``threads > 1`` on long data: the order per row stays the same).

    The same order as prediction on new data, so both give bitwise-identical results.
    """
    for i in range(out.shape[0]):
        out[i] = 0.0
    for j in range(forest.ints.shape[0]):
        add_tree(tree_of(forest, j), out, 1.0, threads)


@numba.njit(cache=True, nogil=True)
def forest_summary(forest, split_counts):
    """Mean tree depth and mean number of leaves; per-variable split counts into ``split_counts``."""
    ints = forest.ints
    for v in range(split_counts.shape[0]):
        split_counts[v] = 0
    depth_total = 0.0
    leaves_total = 0.0
    m = ints.shape[0]
    for j in range(m):
        dmax = 0
        for k in range(forest.n_nodes[j]):
            if ints[j, k, LEFT] < 0:
                leaves_total += 1.0
                if ints[j, k, DEPTH] > dmax:
                    dmax = ints[j, k, DEPTH]
            else:
                split_counts[ints[j, k, VAR]] += 1
        depth_total += dmax
    return depth_total / m, leaves_total / m
