"""Column indices of the per-tree node arrays shared by every kernel.

A forest is held in plain arrays so numba kernels can work on it without Python objects:

* ``ints[j, k, :]`` (int64) for node ``k`` of tree ``j``: split variable (``-1`` for a leaf),
  cut code, left child, right child, parent, depth, and the half-open range
  ``[start, end)`` of the node's rows in ``perm[j]``.
* ``floats[j, k, :]`` (float64): leaf value, log of the summed split weights of the variables
  with a valid cut in the node (``-inf`` when the node cannot split), and the log prior
  probability of the node's split rule given the node (internal nodes only). A forest whose
  leaves hold a coefficient vector on a basis of ``d`` columns (:mod:`pymc_treesamplers.engine.basisleaf`)
  has ``d`` more columns: a leaf's coefficients in ``COEF .. COEF + d - 1``, its ``VALUE`` unused (0).
* ``perm[j]`` orders the training rows so that every node owns a contiguous range; a node's
  range contains its descendants' ranges. Moves therefore touch only the rows of the nodes
  they change.
* ``n_nodes[j]``: nodes ``0 .. n_nodes[j]-1`` are in use; node 0 is the root. Node slots are
  kept compact (a pruned slot is refilled by the last node), so no free list is needed.
"""

import numpy as np

VAR, CUT, LEFT, RIGHT, PARENT, DEPTH, START, END = range(8)
N_INT_FIELDS = 8

VALUE, LWAVAIL, RULELP = range(3)
N_FLOAT_FIELDS = 3
COEF = N_FLOAT_FIELDS  # the first coefficient of a basis leaf (node arrays widened by the basis's columns)

# One integer type for node fields, node counts and node-slot buffers, and typed constants for the
# values passed as arguments: numba compiles a function once per distinct argument types, and an
# int32 read or a Python int constant (typed Literal[int](value)) next to an int64 doubles that.
# Row orders (m x n, the big arrays) stay int32.
NODE_INT = np.int64
ROW_INT = np.int32
ROOT = np.int64(0)
NO_NODE = np.int64(-1)
TRUE, FALSE = np.bool_(True), np.bool_(False)  # a Python bool argument is typed Literal[bool] likewise
