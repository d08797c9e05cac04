"""Writing the stored forest format: a forest's trees in preorder, as one ASCII string per draw.

The format itself (header, node counts, values, split variables, padding) is described in
:mod:`pymc_treesamplers.results.storage`, which reads it back and validates it; the engine writes it, so that a
:class:`~pymc_treesamplers.engine.chain.Chain` can hand a sampler's draw to the trace without the engine
importing the package above it.
"""

from __future__ import annotations

import base64

import numba
import numpy as np

from .nodes import CUT, NODE_INT, ROOT, VALUE, VAR
from .pool import start as start_pool
from .tree import subtree_nodes

ALIGN = 24  # lcm(3, 8): base64 without padding, 8-byte aligned blobs
MAGIC_BYTES = b"PMTF"
MAGIC = int(np.frombuffer(MAGIC_BYTES, dtype="<i4")[0])
VERSION = 3
OLDEST = 2  # format 2: no splits on -x
HEADER = 16  # magic, version, m, p
NODE_BYTES = 12  # float64 value + int32 variable


@numba.njit(cache=True, nogil=True)
def blob_layout(m, total):
    """Byte offsets of the values and of the variables, and the padded blob size."""
    off_val = (HEADER + 4 * m + 7) // 8 * 8
    off_var = off_val + 8 * total
    size = (off_var + 4 * total + ALIGN - 1) // ALIGN * ALIGN
    return off_val, off_var, size


@numba.njit(cache=True, nogil=True)
def _preorder(ints, floats, n_nodes, thr_table, counts, var_out, val_out):
    order = np.empty(ints.shape[1], dtype=NODE_INT)
    pos = 0
    for j in range(ints.shape[0]):
        counts[j] = n_nodes[j]
        for q in range(subtree_nodes(ints[j], ROOT, order)):
            k = order[q]
            v = ints[j, k, VAR]
            var_out[pos] = v
            val_out[pos] = floats[j, k, VALUE] if v < 0 else thr_table[v, ints[j, k, CUT]]
            pos += 1


def encode_forest(forest, thr_table: np.ndarray, trace_var: np.ndarray | None = None, p: int | None = None) -> str:
    """Encode a :class:`~pymc_treesamplers.engine.forest.Forest` as a compact ASCII string.

    ``thr_table``: thresholds per split column of the kernels; ``trace_var``: the variable each split
    column is stored as (``SplitColumns.trace_var``, default: itself), ``p``: the number of covariates
    (default: the number of split columns).

    >>> from pymc_treesamplers.engine.forest import Forest
    >>> text = encode_forest(Forest.empty(3, 5, 0.25), np.zeros((2, 1)))
    >>> text[:6]  # base64 of the format marker
    'UE1URg'
    >>> from pymc_treesamplers.results.storage import decode_forest
    >>> p, counts, var, val = decode_forest(text)
    >>> p, counts.tolist(), var.tolist(), val.tolist()
    (2, [1, 1, 1], [-1, -1, -1], [0.25, 0.25, 0.25])
    """
    start_pool()
    total = int(forest.n_nodes.sum())
    counts = np.empty(forest.m, dtype=np.int32)
    var = np.empty(total, dtype=np.int32)
    val = np.empty(total)
    _preorder(forest.ints, forest.floats, forest.n_nodes, thr_table, counts, var, val)
    if trace_var is not None:
        var[var >= 0] = np.asarray(trace_var, dtype=np.int32)[var[var >= 0]]
    return encode_preorder(counts, var, val, thr_table.shape[0] if p is None else p)


def encode_preorder(counts, var, val, p: int) -> str:
    """Encode trees given in preorder, as :func:`decode_forest` returns them: node counts per tree,
    split variables (``-1``: leaf) and values (thresholds on the scale of X, leaf values), fit on
    ``p`` covariates.

    >>> from pymc_treesamplers.results.storage import decode_forest
    >>> text = encode_preorder([3], [0, -1, -1], [0.5, -1.0, 1.0], p=2)
    >>> decode_forest(text)[2].tolist()
    [0, -1, -1]
    """
    counts = np.asarray(counts)
    m = counts.shape[0]
    total = int(counts.sum())
    off_val, off_var, size = (int(x) for x in blob_layout(m, total))
    blob = np.zeros(size, dtype=np.uint8)
    blob[:HEADER].view("<i4")[:] = (MAGIC, VERSION, m, p)
    blob[HEADER : HEADER + 4 * m].view("<i4")[:] = counts
    blob[off_val:off_var].view("<f8")[:] = val
    blob[off_var : off_var + 4 * total].view("<i4")[:] = var
    return base64.b64encode(blob.tobytes()).decode("ascii")
