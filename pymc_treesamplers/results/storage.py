"""The stored forest format: per-draw forest encoding, and validated decoding of a trace.

A draw's forest is one ASCII string (base64 of a little-endian blob, format 3). The blob holds a
16-byte header ``[magic, version, m, p]`` (int32; magic is the bytes ``PMTF``, version 3), the node
count of each tree (int32), zero padding to a multiple of 8, then every node of every tree in
preorder: first all values (float64: the split threshold on the original scale of X, or the leaf
value), then all split variables (int32, ``-1`` for a leaf), then zero padding to a multiple of 24
bytes. So a tree with L leaves costs ``4 + 12 (2L - 1)`` bytes, x 4/3 in base64, plus at most 40
bytes per draw (header and padding). Thresholds make prediction independent of the training
binning: ``code <= c`` on training data is ``x <= thresholds[c]``. A split variable ``v`` in ``[p, 2p)``
is a split on ``-x`` of covariate ``v - p``, the second split column of a covariate with missing values
(binning.py), and ``v`` in ``[2p, 3p)`` the split "category or not" of the unordered categorical
covariate ``v - 2p``, its value the category's code (rows of another category go left): prediction reads
the trees on ``[X, -X, X]``, where NaN goes right at every split (``NaN <= t`` is false) and a category
unseen in training goes left at every category split. Format 2 (only ``[0, p)``) is read too; format 1 (no header
marker, int16 split variables, so a split on column 32,768 or beyond read back as a leaf) is refused.

Why the padding: every blob starts 8-byte aligned and encodes to base64 without ``=``, so the
strings of all draws concatenate into one valid base64 text; decoding a whole trace is one
``b64decode`` and one typed view, and prediction walks all draws in one compiled loop.

Decoding is a trust boundary (a saved InferenceData may be corrupted or crafted), so every blob is
checked in one compiled pass over the raw bytes before any kernel walks it: the header (marker,
version, ``m >= 1``, ``p >= 1``, the same ``p`` in every draw), node counts ``>= 1``, the blob size
equal to the one the counts imply, zero padding, each tree's preorder variables forming one full
binary tree of exactly its node count, split variables in ``[0, 3p)`` (format 2: ``[0, p)``; ``-1``
marks a leaf, nothing else is negative), and every value finite: thresholds and leaf values alike (the samplers never
produce a non-finite leaf, so one means corruption). A blob that fails is a
:class:`ForestFormatError` (a ``ValueError``) naming the draw, never a crash.
"""

from __future__ import annotations

import base64

import numba
import numpy as np

# the writing half is the engine's (a chain encodes its own draws); encode_* are this module's names too
from ..engine import (  # noqa: F401
    ALIGN,
    HEADER,
    MAGIC,
    NODE_BYTES,
    OLDEST,
    VERSION,
    blob_layout,
    encode_forest,
    encode_preorder,
    start_pool,
)

# what _check_blob found (detail holds its particulars)
(_OK, _E_SHORT, _E_MAGIC, _E_VERSION, _E_M, _E_P, _E_COUNT, _E_FIT, _E_SIZE, _E_PAD, _E_VAR, _E_EARLY, _E_OPEN,
 _E_VALUE) = range(14)


class ForestFormatError(ValueError):
    """A stored forest that is not a valid encoding: ``index`` is its position in the flattened input."""

    def __init__(self, reason: str, index: int, where: str | None = None):
        super().__init__(f"{where or f'forest {index}'}: {reason}")
        self.reason = reason
        self.index = index


def decode_forest(text: str) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`encode_forest`: ``(p, counts, var, val)`` (nodes in preorder).

    ``p`` is the number of covariates the forest was fit on. The blob is validated as in
    :func:`decode_trace`; a bad one raises :class:`ForestFormatError`.

    >>> try:
    ...     decode_forest("AAAA" * 8)
    ... except ValueError as err:
    ...     print(str(err)[:49])
    forest 0: not a pymc_treesamplers forest encoding
    """
    p, raw, _ = decode_trace([text])
    i32 = raw.view("<i4")
    m = int(i32[2])
    counts = i32[4 : 4 + m]
    total = int(counts.sum())
    off_val, off_var, _ = (int(x) for x in blob_layout(m, total))
    val = raw[off_val:off_var].view("<f8")
    var = raw[off_var : off_var + 4 * total].view("<i4")
    return p, counts, var, val


@numba.njit(cache=True, nogil=True)
def _check_blob(raw, b, size, detail):
    """``_OK`` if ``raw[b : b + size]`` is a valid forest, else what is wrong (particulars in ``detail``).

    Reads nothing outside the blob, whatever its bytes say; ``b`` is a multiple of 24.
    """
    if size < HEADER + 8:
        detail[0] = size
        return _E_SHORT
    i32 = raw.view(np.int32)
    f64 = raw.view(np.float64)
    w = b // 4
    if i32[w] != MAGIC:
        return _E_MAGIC
    version = i32[w + 1]
    if version < OLDEST or version > VERSION:
        detail[0] = version
        return _E_VERSION
    m = np.int64(i32[w + 2])
    p = i32[w + 3]
    if m < 1 or HEADER + 4 * m > size:
        detail[0] = m
        detail[1] = size
        return _E_M
    if p < 1:
        detail[0] = p
        return _E_P
    total = np.int64(0)
    for j in range(m):
        c = i32[w + 4 + j]
        if c < 1:
            detail[0] = j
            detail[1] = c
            return _E_COUNT
        total += c
        # a running bound: it also keeps the layout arithmetic far from overflow whatever the counts say
        if total * NODE_BYTES > size:
            detail[0] = j
            detail[1] = total
            detail[2] = size
            return _E_FIT
    off_val, off_var, need = blob_layout(m, total)
    if need != size:
        detail[0] = total
        detail[1] = need
        detail[2] = size
        return _E_SIZE
    # zero padding: a flipped padding byte is harmless to read, but it is a corrupted blob all the same
    for q in range(HEADER + 4 * m, off_val):
        if raw[b + q] != 0:
            detail[0] = q
            return _E_PAD
    for q in range(off_var + 4 * total, size):
        if raw[b + q] != 0:
            detail[0] = q
            return _E_PAD
    v0 = (b + off_val) // 8
    k0 = (b + off_var) // 4
    k = 0
    for j in range(m):
        end = k + i32[w + 4 + j]
        open_slots = 1  # subtrees still owed by the splits read so far
        first = k
        while k < end:
            if open_slots == 0:
                detail[0] = j
                detail[1] = k - first
                detail[2] = end - first
                return _E_EARLY
            v = i32[k0 + k]
            if v >= (3 * p if version == 3 else p) or v < -1:
                detail[0] = j
                detail[1] = k - first
                detail[2] = v
                return _E_VAR
            open_slots += 1 if v >= 0 else -1
            if not np.isfinite(f64[v0 + k]):
                detail[0] = j
                detail[1] = k - first
                detail[2] = v
                return _E_VALUE
            k += 1
        if open_slots != 0:
            detail[0] = j
            detail[1] = end - first
            return _E_OPEN
    return _OK


@numba.njit(cache=True, nogil=True)
def _check_trace(raw, starts, err, detail):
    """Check every blob of the concatenated trace: ``err[k]`` is blob k's verdict.

    Serial on purpose: a few ms for 1000 draws of 200 trees, less than a parallel launch costs on a busy machine.
    """
    for k in range(starts.shape[0] - 1):
        err[k] = _check_blob(raw, starts[k], starts[k + 1] - starts[k], detail[k])


def _looks_like_format_1(blob: np.ndarray) -> bool:
    """Whether ``blob`` parses as the int16 layout written before the format marker existed."""
    if blob.size < 8:
        return False
    m, p = (int(x) for x in blob[:8].view("<i4"))
    if m < 1 or p < 1 or 8 + 4 * m > blob.size:
        return False
    total = int(blob[8 : 8 + 4 * m].view("<i4").astype(np.int64).sum())
    off_var = (8 + 4 * m + 7) // 8 * 8 + 8 * total
    return (off_var + 2 * total + ALIGN - 1) // ALIGN * ALIGN == blob.size


def _explain(code: int, detail: np.ndarray, blob: np.ndarray) -> str:
    """The message for a blob that ``_check_blob`` refused."""
    d0, d1, d2 = (int(x) for x in detail)
    if code == _E_MAGIC:
        if _looks_like_format_1(blob):
            return ("not a pymc_treesamplers forest encoding of format 2: this is the int16 layout (format 1) "
                    "written by an older version of pymc_treesamplers, which misread split variables beyond "
                    "column 32,767; re-run the sampler with this version")
        return ("not a pymc_treesamplers forest encoding (no PMTF format marker): corrupted, not a forest, or "
                "written by an older version of pymc_treesamplers; re-run the sampler")
    if code == _E_VERSION:
        age = "a newer" if d0 > VERSION else "an older"
        return (f"not a pymc_treesamplers forest encoding this version reads: format {d0} (written by {age} "
                f"version of pymc_treesamplers), this version reads formats {OLDEST} to {VERSION}")
    if code == _E_M and d0 >= 1:
        reason = f"the header says m = {d0} trees, whose node counts alone overflow a blob of {d1} bytes"
    elif code == _E_VALUE:
        reason = f"tree {d0} node {d1} has a non-finite {'split threshold' if d2 >= 0 else 'leaf value'}"
    else:
        reason = _DEFECTS.get(code, "unknown defect {code}").format(d0, d1, d2, code=code)
    return "corrupted pymc_treesamplers forest: " + reason


# what each defect code of _check_blob means, given its details (d0, d1, d2)
_DEFECTS = {
    _E_SHORT: "{0} bytes is shorter than a forest",
    _E_M: "the header says m = {0} trees (m >= 1)",
    _E_P: "the header says p = {0} covariates (p >= 1)",
    _E_COUNT: "tree {0} has node count {1} (counts are >= 1)",
    _E_FIT: "tree {0} brings the node count to {1}, more than a blob of {2} bytes holds",
    _E_SIZE: "the node counts add up to {0} nodes, a blob of {1} bytes, but it has {2}",
    _E_PAD: "non-zero padding byte at offset {0}",
    _E_VAR: "tree {0} node {1} has split variable {2}, outside [0, 3p) ([0, p) in format 2; -1 is a leaf)",
    _E_EARLY: "tree {0} is a complete binary tree after {1} of its {2} nodes (nodes beyond the tree)",
    _E_OPEN: "tree {0} ends inside a split: a split lacks a subtree within its {1} nodes",
}


def as_text(t) -> str:
    if isinstance(t, bytes):  # np.bytes_ included
        return t.decode("ascii", errors="replace")
    if isinstance(t, str):
        return str(t)
    raise TypeError(type(t).__name__)


def _b64_error(text: str) -> str | None:
    """Why ``text`` is not whole base64 quanta with no ``=`` (None if it is)."""
    try:
        n = len(base64.b64decode(text, validate=True))
    except ValueError as err:  # binascii.Error, or non-ASCII characters
        return f"not well-formed base64 ({err})"
    if n != len(text) // 4 * 3:
        return "not well-formed base64 (padding inside a forest)"
    return None


def decode_trace(texts) -> tuple[int, np.ndarray, np.ndarray]:
    """All forests of a trace at once, validated: ``(p, raw, starts)``.

    ``raw`` is the concatenated blobs (uint8, 8-byte aligned); blob k starts at byte
    ``starts[k]`` (``starts[-1]`` is the total). One base64 decode and one compiled check pass
    for the whole trace; a bad forest raises :class:`ForestFormatError` (a ``ValueError``) whose
    ``index`` is its position in ``texts``.

    >>> from pymc_treesamplers.engine.forest import Forest
    >>> t = encode_forest(Forest.empty(2, 4, 1.0), np.zeros((3, 1)))
    >>> p, raw, starts = decode_trace([t, t])
    >>> p, starts.tolist()
    (3, [0, 48, 96])
    """
    start_pool()  # every prediction decodes first, then runs parallel loops (engine/pool.py)
    texts = list(texts)
    for k, t in enumerate(texts):
        try:
            texts[k] = as_text(t)
        except TypeError:
            raise ForestFormatError(f"not a pymc_treesamplers forest encoding (a {type(t).__name__}, not a string)",
                                    k) from None
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    bad = np.flatnonzero(lengths % 32)
    if bad.size:
        k = int(bad[0])
        raise ForestFormatError(f"not a pymc_treesamplers forest encoding (length {lengths[k]} is not a multiple "
                                "of 32 characters: truncated?); re-run the sampler", k)
    joined = "".join(texts)
    try:
        data = base64.b64decode(joined, validate=True)
    except ValueError:  # binascii.Error, or non-ASCII characters: find the culprit below
        data = b""
    if len(data) != len(joined) // 4 * 3:
        for k, t in enumerate(texts):
            why = _b64_error(t)
            if why is not None:
                raise ForestFormatError(why, k)
        raise AssertionError("the concatenated forests are not base64 although each forest is")
    raw = np.frombuffer(data, dtype=np.uint8)
    if raw.ctypes.data % 8:  # the kernels view raw as int32/float64
        raw = raw.copy()
    starts = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths // 4 * 3, out=starts[1:])
    err = np.zeros(len(texts), dtype=np.int64)
    detail = np.zeros((len(texts), 3), dtype=np.int64)
    _check_trace(raw, starts, err, detail)
    bad = np.flatnonzero(err)
    if bad.size:
        k = int(bad[0])
        raise ForestFormatError(_explain(int(err[k]), detail[k], raw[starts[k] : starts[k + 1]]), k)
    if not len(texts):
        return 0, raw, starts
    pseudo = raw.view("<i4")[starts[:-1] // 4 + 3]
    values, first, n_with = np.unique(pseudo, return_index=True, return_counts=True)
    if values.size > 1:
        # the odd one out is the likelier corruption: blame a draw whose p differs from the most common one
        ref = values[np.lexsort((first, -n_with))[0]]
        k = int(np.flatnonzero(pseudo != ref)[0])
        raise ForestFormatError(f"corrupted pymc_treesamplers forest: fit on p = {pseudo[k]} covariates, but "
                                f"{(pseudo == ref).sum()} of the {pseudo.size} forests on p = {ref}", k)
    return int(pseudo[0]), raw, starts


@numba.njit(cache=True, nogil=True)
def blob_trees(raw, b):
    """The trees of the validated blob starting at byte ``b``: ``(counts, var, val)`` views."""
    i32 = raw.view(np.int32)
    f64 = raw.view(np.float64)
    m = i32[b // 4 + 2]
    counts = i32[b // 4 + 4 : b // 4 + 4 + m]
    total = 0
    for j in range(m):
        total += counts[j]
    off_val, off_var, _ = blob_layout(m, total)
    return counts, i32[(b + off_var) // 4 : (b + off_var) // 4 + total], f64[(b + off_val) // 8 : (b + off_var) // 8]
