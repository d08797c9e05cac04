"""Per-draw forest encoding, decoding and draw-matched prediction from the trace alone.

A draw's forest is one ASCII string (base64 of a little-endian blob). The blob holds an 8-byte
header ``[m, p]`` (int32), the node count of each tree (int32), zero padding to a multiple of 8,
then every node of every tree in preorder: first all values (float64: the split threshold on the
original scale of X, or the leaf value), then all split variables (int16, ``-1`` for a leaf), then
zero padding to a multiple of 24 bytes. So a tree with L leaves costs ``4 + 10 (2L - 1)`` bytes,
x 4/3 in base64, plus at most 31 bytes per draw. Thresholds make prediction independent of the
training binning: ``code <= c`` on training data is ``x <= thresholds[c]``.

Why the padding: every blob starts 8-byte aligned and encodes to base64 without ``=``, so the
strings of all draws concatenate into one valid base64 text; decoding a whole trace is one
``b64decode`` and one typed view, and prediction walks all draws in one compiled loop.
"""

from __future__ import annotations

import base64

import numba
import numpy as np

from .binning import numeric_array
from .layout import CUT, LEFT, RIGHT, VALUE, VAR

_ALIGN = 24  # lcm(3, 8): base64 without padding, 8-byte aligned blobs


@numba.njit(cache=True, nogil=True)
def _blob_layout(m, total):
    """Byte offsets of the values and of the variables, and the padded blob size."""
    off_val = (8 + 4 * m + 7) // 8 * 8
    off_var = off_val + 8 * total
    size = (off_var + 2 * total + _ALIGN - 1) // _ALIGN * _ALIGN
    return off_val, off_var, size


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
    """Encode a :class:`~pymc_treesamplers.forest.Forest` as a compact ASCII string.

    >>> from pymc_treesamplers.forest import Forest
    >>> text = encode_forest(Forest.empty(3, 5, 0.25), np.zeros((2, 1)))
    >>> p, counts, var, val = decode_forest(text)
    >>> p, counts.tolist(), var.tolist(), val.tolist()
    (2, [1, 1, 1], [-1, -1, -1], [0.25, 0.25, 0.25])
    """
    m = forest.m
    total = int(forest.n_nodes.sum())
    off_val, off_var, size = (int(x) for x in _blob_layout(m, total))
    blob = np.zeros(size, dtype=np.uint8)
    blob[:8].view("<i4")[:] = (m, thr_table.shape[0])
    counts = blob[8 : 8 + 4 * m].view("<i4")
    val = blob[off_val:off_var].view("<f8")
    var = blob[off_var : off_var + 2 * total].view("<i2")
    _preorder(forest.ints, forest.floats, forest.n_nodes, thr_table, counts, var, val)
    return base64.b64encode(blob.tobytes()).decode("ascii")


def decode_forest(text: str) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`encode_forest`: ``(p, counts, var, val)`` (nodes in preorder).

    ``p`` is the number of covariates the forest was fit on.
    """
    blob = base64.b64decode(text)
    m, p = (int(x) for x in np.frombuffer(blob, dtype="<i4", count=2))
    counts = np.frombuffer(blob, dtype="<i4", count=m, offset=8)
    total = int(counts.sum())
    off_val, off_var, _ = (int(x) for x in _blob_layout(m, total))
    val = np.frombuffer(blob, dtype="<f8", count=total, offset=off_val)
    var = np.frombuffer(blob, dtype="<i2", count=total, offset=off_var)
    return p, counts, var, val


def decode_trace(texts) -> tuple[int, np.ndarray, np.ndarray]:
    """All forests of a trace at once: ``(p, raw, starts)``.

    ``raw`` is the concatenated blobs (uint8, 8-byte aligned); blob k starts at byte
    ``starts[k]`` (``starts[-1]`` is the total). One base64 decode for the whole trace.

    >>> from pymc_treesamplers.forest import Forest
    >>> t = encode_forest(Forest.empty(2, 4, 1.0), np.zeros((3, 1)))
    >>> p, raw, starts = decode_trace([t, t])
    >>> p, starts.tolist()
    (3, [0, 48, 96])
    """
    texts = [str(t) for t in texts]
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    if (lengths % 32).any():
        raise ValueError("not a pymc_treesamplers forest encoding (wrong length); re-run the sampler")
    raw = np.frombuffer(base64.b64decode("".join(texts)), dtype=np.uint8)
    starts = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths // 4 * 3, out=starts[1:])
    p = int(raw[4:8].view("<i4")[0]) if len(texts) else 0
    return p, raw, starts


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


@numba.njit(cache=True, nogil=True, parallel=True)
def _predict_trace(raw, starts, X, out):
    """``out[k] =`` forest k of the concatenated blobs at the rows of X, for every draw k."""
    i32 = raw.view(np.int32)
    f64 = raw.view(np.float64)
    i16 = raw.view(np.int16)
    for k in numba.prange(starts.shape[0] - 1):
        b = starts[k]
        m = i32[b // 4]
        counts = i32[b // 4 + 2 : b // 4 + 2 + m]
        total = 0
        for j in range(m):
            total += counts[j]
        off_val, off_var, _ = _blob_layout(m, total)
        val = f64[(b + off_val) // 8 : (b + off_var) // 8]
        var = i16[(b + off_var) // 2 : (b + off_var) // 2 + total]
        predict_preorder(counts, var, val, X, out[k])


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
    n_chain, n_draw = enc.shape[0], enc.shape[1]
    p, raw, starts = decode_trace(enc.reshape(-1))
    X = check_new_X(X_new, p)
    out = np.empty((n_chain * n_draw, X.shape[0]))
    _predict_trace(raw, starts, X, out)
    return out.reshape(n_chain, n_draw, X.shape[0])
