"""The stored-forest format (pymc_treesamplers/trace.py): round trip, wide X, refusal of the old layout."""

import base64

import numpy as np
import pytest
import xarray as xr

import pymc_treesamplers as pmt
from pymc_treesamplers.forest import Forest, init_root_availability, split_leaf
from pymc_treesamplers.layout import CUT, END, LEFT, RIGHT, START, VALUE, VAR
from pymc_treesamplers.prior import code_range
from pymc_treesamplers.trace import decode_forest, decode_trace, encode_forest


def _random_forest(codes, rng, m, max_splits):
    """m trees grown by random valid splits of random leaves (as tests/test_rotate.py), random leaf values."""
    p, n = codes.shape
    wsplit = np.ones(p)
    fr = Forest.empty(m, n, 0.0, cap=4 * n)
    init_root_availability(codes, wsplit, fr.floats, fr.perm)
    for j in range(m):
        ti, tf, pj, nn = fr.ints[j], fr.floats[j], fr.perm[j], fr.n_nodes[j : j + 1]
        for _ in range(int(rng.integers(0, max_splits + 1))):
            leaves = [k for k in range(nn[0]) if ti[k, LEFT] < 0]
            k = leaves[rng.integers(len(leaves))]
            rules = []
            for v in range(p):
                mn, mx = code_range(codes[v], pj, ti[k, START], ti[k, END])
                rules += [(v, c, mx - mn) for c in range(mn, mx)]
            if rules:
                v, c, n_cuts = rules[rng.integers(len(rules))]
                split_leaf(ti, tf, pj, nn, k, v, c, n_cuts, codes, wsplit, np.zeros(p))
        for k in range(nn[0]):
            if ti[k, LEFT] < 0:
                tf[k, VALUE] = rng.normal()
    return fr


def _reference_predict(fr, thr, X):
    """Sum of the trees at the rows of X, walking the node arrays (not the encoding)."""
    out = np.zeros(X.shape[0])
    for j in range(fr.m):
        ti, tf = fr.ints[j], fr.floats[j]
        for i in range(X.shape[0]):
            k = 0
            while ti[k, LEFT] >= 0:
                k = ti[k, LEFT] if X[i, ti[k, VAR]] <= thr[ti[k, VAR], ti[k, CUT]] else ti[k, RIGHT]
            out[i] += tf[k, VALUE]
    return out


def _idata(texts, n_chain):
    """An InferenceData holding only the ``mu_forest`` stat, shaped (chain, draw) as the samplers store it."""
    arr = np.empty(len(texts), dtype=object)
    arr[:] = list(texts)
    arr = arr.reshape(n_chain, -1)
    stats = xr.Dataset(
        {"mu_forest": (("chain", "draw"), arr)},
        coords={"chain": np.arange(n_chain), "draw": np.arange(arr.shape[1])},
    )
    return xr.DataTree.from_dict({"sample_stats": stats})


def _setting(seed=0, n_draws=6):
    """Codes, thresholds, covariates on both sides of every threshold, and encoded random forests."""
    rng = np.random.default_rng(seed)
    p, n, n_codes = 3, 40, 8
    codes = np.ascontiguousarray(rng.integers(0, n_codes, size=(p, n)).astype(np.uint16))
    thr = np.sort(rng.normal(size=(p, n_codes)), axis=1)
    X = rng.normal(size=(25, p)) * 1.5
    forests = [_random_forest(codes, rng, 4, 6) for _ in range(n_draws)]
    return thr, X, forests, [encode_forest(f, thr) for f in forests]


# --- format 2 written by hand from its description (independent of trace.py's layout code) -------


def _blob(counts, var, val, p, m=None, magic=b"PMTF", version=2, extra=b""):
    counts = np.asarray(counts, "<i4")
    head = magic + np.array([version, len(counts) if m is None else m, p], "<i4").tobytes() + counts.tobytes()
    head += bytes(-len(head) % 8)
    body = head + np.asarray(val, "<f8").tobytes() + np.asarray(var, "<i4").tobytes()
    return body + bytes(-len(body) % 24) + extra


def _format1_blob(counts, var, val, p):
    """The int16 layout written before the format marker: ``[m, p]``, counts, values, int16 variables."""
    head = np.array([len(counts), p, *counts], "<i4").tobytes()
    head += bytes(-len(head) % 8)
    body = head + np.asarray(val, "<f8").tobytes() + np.asarray(var, "<i2").tobytes()
    return body + bytes(-len(body) % 24)


def _text(blob):
    return base64.b64encode(blob).decode("ascii")


# a forest of two trees, p = 3: x0 <= 0.5 ? (x2 <= -1 ? 1 : 2) : 3, and a single leaf 10
GOOD = dict(counts=[5, 1], var=[0, 2, -1, -1, -1, -1], val=[0.5, -1.0, 1.0, 2.0, 3.0, 10.0], p=3)


def test_hand_written_format_2_decodes_and_predicts():
    text = _text(_blob(**GOOD))
    p, counts, var, val = decode_forest(text)
    assert (p, counts.tolist(), var.tolist(), val.tolist()) == (3, GOOD["counts"], GOOD["var"], GOOD["val"])
    X = np.array([[0.0, 9.0, -2.0], [0.0, 9.0, 0.0], [1.0, 9.0, 0.0]])
    np.testing.assert_array_equal(pmt.predict(_idata([text], 1), X, "mu")[0, 0], [11.0, 12.0, 13.0])


def test_round_trip_reproduces_every_tree_and_prediction():
    thr, X, forests, texts = _setting(seed=1)
    for fr, text in zip(forests, texts, strict=True):
        p, counts, var, val = decode_forest(text)
        assert p == 3 and counts.tolist() == fr.n_nodes.tolist() and var.dtype == np.int32
        want_var, want_val = [], []
        for j in range(fr.m):
            stack = [0]
            while stack:
                k = stack.pop()
                leaf = fr.ints[j, k, LEFT] < 0
                want_var.append(-1 if leaf else int(fr.ints[j, k, VAR]))
                want_val.append(fr.floats[j, k, VALUE] if leaf else thr[fr.ints[j, k, VAR], fr.ints[j, k, CUT]])
                if not leaf:
                    stack += [fr.ints[j, k, RIGHT], fr.ints[j, k, LEFT]]
        assert var.tolist() == want_var and val.tolist() == want_val
    pred = pmt.predict(_idata(texts, 2), X, "mu")
    assert pred.shape == (2, 3, 25)
    expected = np.array([_reference_predict(fr, thr, X) for fr in forests]).reshape(2, 3, 25)
    np.testing.assert_array_equal(pred, expected)  # trees are added in the same order: bit for bit
    assert (np.diff(pred.reshape(6, -1), axis=0) != 0).any()  # the draws do differ


def test_split_variables_beyond_int16_are_read_back():
    """Root splits on column 39,999, and column 32,768 (one past int16) below a split on 32,767.

    Format 1 stored split variables as int16: these came back negative, i.e. as leaves, and predicted
    a threshold instead of a leaf value for every row.
    """
    p, n = 40_000, 6
    codes = np.zeros((p, n), dtype=np.uint16)
    codes[39_999] = [0, 0, 0, 1, 1, 1]
    codes[32_767] = [0, 1, 0, 1, 0, 1]
    codes[32_768] = [0, 0, 1, 1, 0, 0]
    wsplit = np.ones(p)
    fr = Forest.empty(2, n, 0.0)
    init_root_availability(codes, wsplit, fr.floats, fr.perm)
    nn0, nn1 = fr.n_nodes[0:1], fr.n_nodes[1:2]
    split_leaf(fr.ints[0], fr.floats[0], fr.perm[0], nn0, 0, 39_999, 0, 1, codes, wsplit, np.zeros(p))
    split_leaf(fr.ints[1], fr.floats[1], fr.perm[1], nn1, 0, 32_767, 0, 1, codes, wsplit, np.zeros(p))
    split_leaf(fr.ints[1], fr.floats[1], fr.perm[1], nn1, 2, 32_768, 0, 1, codes, wsplit, np.zeros(p))
    fr.floats[0, 1:3, VALUE] = (-1.0, 2.0)
    fr.floats[1, [1, 3, 4], VALUE] = (10.0, 20.0, 30.0)
    thr = np.full((p, 1), np.inf)
    thr[[39_999, 32_767, 32_768], 0] = 0.5
    text = encode_forest(fr, thr)

    got_p, counts, var, val = decode_forest(text)
    assert got_p == p and counts.tolist() == [3, 5]
    assert var.tolist() == [39_999, -1, -1, 32_767, -1, 32_768, -1, -1]
    X = codes.T.astype(float)
    expected = _reference_predict(fr, thr, X)
    np.testing.assert_array_equal(expected, [9.0, 19.0, 9.0, 32.0, 12.0, 22.0])
    np.testing.assert_array_equal(pmt.predict(_idata([text, text], 2), X, "mu")[:, 0], [expected, expected])


def test_old_int16_layout_is_refused_clearly():
    old = _text(_format1_blob(**GOOD))
    with pytest.raises(ValueError, match="not a pymc_treesamplers forest encoding of format 2.*older version"):
        decode_forest(old)
    with pytest.raises(ValueError, match=r"mu_forest of draw \(chain 0, draw 1\): .*older version"):
        pmt.predict(_idata([_text(_blob(**GOOD)), old], 1), np.zeros((2, 3)), "mu")


def test_decode_trace_offsets_and_p():
    thr, X, forests, texts = _setting(seed=3, n_draws=3)
    p, raw, starts = decode_trace(texts)
    assert p == 3 and starts[0] == 0 and starts[-1] == raw.size
    assert (starts % 24 == 0).all() and raw.ctypes.data % 8 == 0
    assert [raw[s : s + 4].tobytes() for s in starts[:-1]] == [b"PMTF"] * 3
    assert decode_trace([])[0] == 0
