"""Per-draw forest encoding, decoding and draw-matched prediction from the trace alone.

A draw's forest is one ASCII string (base64) holding, tree after tree, its nodes in preorder:
the split variable as int16 (``-1`` for a leaf) and one float64 (the split threshold on the
original scale of X, or the leaf value). A tree with L leaves costs ``10 (2L - 1) + 4`` bytes
(4 for its node count) before base64, x 4/3 after; each draw adds an 8-byte header. Thresholds
make prediction independent of the training binning:
``code <= c`` on training data is ``x <= thresholds[c]``.
"""

from __future__ import annotations

import base64

import numba
import numpy as np

from .binning import numeric_array
from .layout import CUT, LEFT, RIGHT, VALUE, VAR

_HEADER = np.dtype("<i4")


@numba.njit(cache=True, nogil=True)
def _preorder(ints, floats, n_nodes, thr_table, counts, var_out, val_out):
    pos = 0
    stack = np.empty(ints.shape[1] + 2, dtype=np.int64)
    for j in range(ints.shape[0]):
        counts[j] = n_nodes[j]
        top = 1
        stack[0] = 0
        while top > 0:
            top -= 1
            k = stack[top]
            if ints[j, k, LEFT] < 0:
                var_out[pos] = -1
                val_out[pos] = floats[j, k, VALUE]
            else:
                v = ints[j, k, VAR]
                var_out[pos] = v
                val_out[pos] = thr_table[v, ints[j, k, CUT]]
                stack[top] = ints[j, k, RIGHT]
                stack[top + 1] = ints[j, k, LEFT]
                top += 2
            pos += 1


def encode_forest(forest, thr_table: np.ndarray) -> str:
    """Encode a :class:`~pymc_treesamplers.forest.Forest` as a compact ASCII string."""
    total = int(forest.n_nodes.sum())
    counts = np.empty(forest.m, dtype=np.int32)
    var = np.empty(total, dtype=np.int16)
    val = np.empty(total, dtype=np.float64)
    _preorder(forest.ints, forest.floats, forest.n_nodes, thr_table, counts, var, val)
    header = np.array([forest.m, thr_table.shape[0]], dtype=np.int32)
    blob = header.tobytes() + counts.tobytes() + var.tobytes() + val.tobytes()
    return base64.b64encode(blob).decode("ascii")


def decode_forest(text: str) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`encode_forest`: ``(p, counts, var, val)`` (nodes in preorder).

    ``p`` is the number of covariates the forest was fit on.
    """
    blob = base64.b64decode(text)
    m, p = (int(x) for x in np.frombuffer(blob, dtype="<i4", count=2))
    counts = np.frombuffer(blob, dtype="<i4", count=m, offset=8)
    total = int(counts.sum())
    var = np.frombuffer(blob, dtype="<i2", count=total, offset=8 + 4 * m)
    val = np.frombuffer(blob, dtype="<f8", count=total, offset=8 + 4 * m + 2 * total)
    return p, counts, var, val


@numba.njit(cache=True, nogil=True)
def predict_preorder(counts, var, val, X, out):
    """Sum of the encoded trees at the rows of ``X`` (trees added in order, as in training)."""
    n = X.shape[0]
    out[:] = 0.0
    size = np.empty(var.shape[0], dtype=np.int64)
    start = 0
    for j in range(counts.shape[0]):
        end = start + counts[j]
        for k in range(end - 1, start - 1, -1):
            if var[k] < 0:
                size[k] = 1
            else:
                size[k] = 1 + size[k + 1] + size[k + 1 + size[k + 1]]
        for i in range(n):
            k = start
            while var[k] >= 0:
                if X[i, var[k]] <= val[k]:
                    k = k + 1
                else:
                    k = k + 1 + size[k + 1]
            out[i] += val[k]
        start = end


def check_new_X(X_new, p: int | None) -> np.ndarray:
    """Validate covariates for prediction: numeric, 2-D, right number of columns, finite."""
    X = numeric_array(X_new, "X_new")
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"X_new must be a 2-D matrix, got {X.ndim} dimensions")
    if p is not None and X.shape[1] != p:
        raise ValueError(f"X_new has {X.shape[1]} columns but the model was fit with {p}")
    if np.isnan(X).any():
        raise ValueError("X_new contains NaN: missing values are not supported yet")
    if not np.isfinite(X).all():
        raise ValueError("X_new contains inf: every covariate value must be finite")
    return np.ascontiguousarray(X)


def predict(idata, X_new, var_name: str = "mu") -> np.ndarray:
    """Draw-matched values of a BART variable at new covariates, from the trace alone.

    Returns an array of shape (chain, draw, n_new): draw d of chain c uses exactly the forest
    that produced posterior draw (c, d). Works after ``to_netcdf``/``from_netcdf``.

    >>> # f_new = pmt.predict(idata, X_test, "mu"); f_new.mean(axis=(0, 1))
    """
    stats = idata["sample_stats"] if "sample_stats" in idata.children else None
    key = f"{var_name}_forest"
    if stats is None or key not in stats:
        raise ValueError(f"no encoded forest {key!r} in idata.sample_stats: was {var_name!r} sampled by a pmt step?")
    enc = np.asarray(stats[key].values)
    enc = enc.reshape(enc.shape[0], enc.shape[1])
    p = decode_forest(str(enc[0, 0]))[0]
    X = check_new_X(X_new, p)
    out = np.empty((enc.shape[0], enc.shape[1], X.shape[0]))
    for c in range(enc.shape[0]):
        for d in range(enc.shape[1]):
            _, counts, var, val = decode_forest(str(enc[c, d]))
            predict_preorder(counts, var, val, X, out[c, d])
    return out
