"""The stored-forest format (pymc_treesamplers/results/storage.py): round trip, wide X, and decoding as a trust
boundary.

A saved InferenceData may be corrupted or crafted. Every decoded forest is validated before a compiled
kernel walks it, so a bad one is a ValueError naming its (chain, draw), never a crash. The fuzz test runs
in a subprocess so that a segfault is reported as a failure instead of killing pytest; the same file run as
a script (``python tests/test_trace.py FIRST STOP``) runs fuzz tries FIRST..STOP-1 and prints a summary.
"""

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import pymc_treesamplers as pmt
from pymc_treesamplers.engine.nodes import CUT, LEFT, RIGHT, VALUE, VAR
from pymc_treesamplers.engine.records import split_data, tree_of
from pymc_treesamplers.engine.tree import split_leaf
from pymc_treesamplers.results.storage import decode_forest, decode_trace, encode_forest
from tests.helpers.trees import empty_forest, random_forest

pytestmark = pytest.mark.boundscheck

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
    forests = [random_forest(codes, rng, 4, 6) for _ in range(n_draws)]
    return thr, X, forests, [encode_forest(f, thr) for f in forests]


# --- format 2 written by hand from its description (independent of storage.py's layout code) -------


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
    data = split_data(codes, np.ones(p))
    fr = empty_forest(codes, 2, cap=16)
    t0, t1 = tree_of(fr.arrays(), 0), tree_of(fr.arrays(), 1)
    split_leaf(t0, 0, 39_999, 0, 1, data)
    split_leaf(t1, 0, 32_767, 0, 1, data)
    split_leaf(t1, 2, 32_768, 0, 1, data)
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


@pytest.mark.parametrize(
    "text, message",
    [
        (_text(np.random.default_rng(0).integers(0, 256, 96, dtype=np.uint8).tobytes()),
         "not a pymc_treesamplers forest encoding .*older version"),
        (_text(bytes(48)), "no PMTF format marker"),
        ("hello", "length 5 is not a multiple of 32"),
        ("", "0 bytes is shorter than a forest"),
        ("!" * 32, "not well-formed base64"),
        (_text(_blob(**GOOD))[:-4] + "AA==", "not well-formed base64"),
        (_text(_blob(**GOOD))[:-1] + "\u00e9", "not well-formed base64"),
        (b"\xff" * 32, "not well-formed base64"),
        (float("nan"), "a float, not a string"),
    ],
    ids=["random bytes", "zeros", "short", "empty", "not base64", "padding", "non-ascii", "bad bytes", "nan"],
)
def test_what_is_not_a_forest_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        decode_forest(text)
    with pytest.raises(ValueError, match=r"mu_forest of draw \(chain 1, draw 0\): .*" + message):
        pmt.predict(_idata([_text(_blob(**GOOD))] * 2 + [text, _text(_blob(**GOOD))], 2), np.zeros((2, 3)), "mu")


def _crafted(**change):
    return _text(_blob(**{**GOOD, **change}))


CRAFTED = {
    # preorder stores no child links: a link out of range is a split whose subtrees run past its tree
    "children beyond the tree": (_crafted(counts=[1, 5]), "tree 0 ends inside a split"),
    "children beyond the blob": (_crafted(counts=[5, 1], var=[0, 2, -1, -1, -1, 0]), "tree 1 ends inside a split"),
    "nodes beyond the tree": (_crafted(counts=[3, 3], var=[1, -1, -1, -1, -1, -1]),
                              "tree 1 is a complete binary tree after 1 of its 3 nodes"),
    "var >= p": (_crafted(var=[0, 3, -1, -1, -1, -1]), "tree 0 node 1 has split variable 3, outside"),
    "var < -1": (_crafted(var=[0, 2, -1, -1, -5, -1]), "tree 0 node 4 has split variable -5"),
    "count 0": (_crafted(counts=[6, 0]), "tree 1 has node count 0"),
    "negative count": (_crafted(counts=[-1, 7]), "tree 0 has node count -1"),
    "huge count": (_crafted(counts=[5, 2**31 - 1]), "tree 1 brings the node count to 2147483652, more than"),
    "counts too small": (_crafted(counts=[1, 1]), "counts add up to 2 nodes, a blob of 48 bytes, but it has 96"),
    "huge m": (_crafted(m=2**31 - 1), "m = 2147483647 trees"),
    "m = 0": (_crafted(m=0), "m = 0 trees"),
    "m too large": (_crafted(m=3), "m = 3 trees|tree 2 has node count"),
    "p = 0": (_crafted(p=0), "p = 0 covariates"),
    "p < 0": (_crafted(p=-3), "p = -3 covariates"),
    "NaN leaf": (_crafted(val=[0.5, -1.0, 1.0, np.nan, 3.0, 10.0]), "tree 0 node 3 has a non-finite leaf value"),
    "inf leaf": (_crafted(val=[0.5, -1.0, 1.0, 2.0, 3.0, -np.inf]), "tree 1 node 0 has a non-finite leaf value"),
    "inf threshold": (_crafted(val=[0.5, np.inf, 1.0, 2.0, 3.0, 10.0]), "tree 0 node 1 has a non-finite split thr"),
    "newer version": (_crafted(version=4), "format 4 \\(written by a newer version"),
    "-x split in format 2": (_crafted(var=[0, 3, -1, -1, -1, -1]), "tree 0 node 1 has split variable 3, outside"),
    "beyond the category block in format 3": (_crafted(var=[0, 9, -1, -1, -1, -1], version=3),
                                              "tree 0 node 1 has split variable 9, outside"),
    "trailing bytes": (_crafted(extra=bytes(24)), "counts add up to 6 nodes, a blob of 96 bytes, but it has 120"),
    "cut short": (_text(_blob(**GOOD)[:72]), "counts add up to 6 nodes, a blob of 96 bytes, but it has 72"),
    "cut shorter": (_text(_blob(**GOOD)[:48]), "tree 0 brings the node count to 5, more than a blob of 48 bytes"),
}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_crafted_blobs_are_refused_with_a_clear_message(name):
    text, message = CRAFTED[name]
    with pytest.raises(ValueError, match=message):
        decode_forest(text)
    good = _text(_blob(**GOOD))
    with pytest.raises(ValueError, match=r"mu_forest of draw \(chain 1, draw 1\): .*" + message):
        pmt.predict(_idata([good, good, good, text], 2), np.zeros((2, 3)), "mu")


def test_non_zero_padding_is_refused():
    blob = bytearray(_blob(counts=[1], var=[-1], val=[1.0], p=2))  # header 16, count 4, pad 4, 8 + 4, pad 12
    blob[20] = 1
    with pytest.raises(ValueError, match="non-zero padding byte at offset 20"):
        decode_forest(_text(bytes(blob)))
    blob[20] = 0
    blob[40] = 1
    with pytest.raises(ValueError, match="non-zero padding byte at offset 40"):
        decode_forest(_text(bytes(blob)))


def test_draws_must_share_p():
    a, b = _text(_blob(**GOOD)), _crafted(p=4)
    message = r"draw \(chain 0, draw 0\): .*p = 4 covariates, but 2 of the 3 forests on p = 3"
    with pytest.raises(ValueError, match=message):
        pmt.predict(_idata([b, a, a], 1), np.zeros((2, 3)), "mu")


def test_a_corrupted_forest_in_a_saved_idata_names_its_draw(tmp_path):
    import arviz as az

    thr, X, forests, texts = _setting(seed=2)
    clean = pmt.predict(_idata(texts, 2), X, "mu")
    blob = bytearray(base64.b64decode(texts[5]))
    p, counts, var, val = decode_forest(texts[5])
    root = 16 + 4 * len(counts) + 4 * (len(counts) % 2) + 8 * len(var)  # the first split variable
    blob[root : root + 4] = np.array([30_000], "<i4").tobytes()
    bad = texts[:5] + [_text(bytes(blob))]
    _idata(bad, 2).to_netcdf(tmp_path / "fit.nc")
    again = az.from_netcdf(tmp_path / "fit.nc")
    with pytest.raises(ValueError, match=r"mu_forest of draw \(chain 1, draw 2\): .*split variable 30000"):
        pmt.predict(again, X, "mu")
    _idata(texts, 2).to_netcdf(tmp_path / "clean.nc")
    np.testing.assert_array_equal(pmt.predict(az.from_netcdf(tmp_path / "clean.nc"), X, "mu"), clean)


def test_decode_trace_offsets_and_p():
    thr, X, forests, texts = _setting(seed=3, n_draws=3)
    p, raw, starts = decode_trace(texts)
    assert p == 3 and starts[0] == 0 and starts[-1] == raw.size
    assert (starts % 24 == 0).all() and raw.ctypes.data % 8 == 0
    assert [raw[s : s + 4].tobytes() for s in starts[:-1]] == [b"PMTF"] * 3
    assert decode_trace([])[0] == 0


# --- fuzzing: flips and truncations of stored forests ---------------------------------------------


def _check_structure(p, counts, var, val):
    """A decoded forest is p >= 1, counts >= 1, and full binary trees in preorder with finite values."""
    assert p >= 1 and len(counts) >= 1 and (counts >= 1).all() and counts.sum() == len(var) == len(val)
    assert ((var == -1) | ((var >= 0) & (var < p))).all() and np.isfinite(val).all()
    start = 0
    for c in counts:
        owed = 1
        for v in var[start : start + c]:
            assert owed > 0, "node beyond its tree"
            owed += 1 if v >= 0 else -1
        assert owed == 0, "split without its subtrees"
        start += c


def _corrupt(text, rng, mode):
    """One corruption of a base64 forest: byte flips in the blob or the text, truncations, extensions."""
    if mode == 3:  # characters of the stored text, from the alphabet or not
        chars = list(text)
        junk = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=!\n\u00e9 "
        for i in rng.choice(len(chars), size=min(len(chars), int(rng.integers(1, 41))), replace=False):
            chars[i] = junk[rng.integers(len(junk))]
        return "".join(chars)
    if mode == 4:  # the text cut anywhere
        return text[: int(rng.integers(0, len(text)))]
    blob = bytearray(base64.b64decode(text))
    if mode == 0:  # one byte
        blob[rng.integers(len(blob))] ^= int(rng.integers(1, 256))
    elif mode == 1:  # 1 to 40 bytes
        for i in rng.choice(len(blob), size=min(len(blob), int(rng.integers(1, 41))), replace=False):
            blob[i] ^= int(rng.integers(1, 256))
    elif mode == 2:  # cut or extended by whole base64 quanta, so only the structure can tell
        blob = blob[: 24 * int(rng.integers(0, len(blob) // 24))] if rng.random() < 0.7 else \
            blob + rng.integers(0, 256, 24 * int(rng.integers(1, 4)), dtype=np.uint8).tobytes()
    else:  # the header and the node counts
        for _ in range(int(rng.integers(1, 5))):
            blob[rng.integers(min(len(blob), 40))] ^= int(rng.integers(1, 256))
    return base64.b64encode(bytes(blob)).decode("ascii")


def fuzz(first, stop):
    """Tries ``first..stop-1``: corrupt one draw of a 2 x 3 trace and predict. Returns the tally."""
    thr, X, forests, texts = _setting(seed=0)
    clean = pmt.predict(_idata(texts, 2), X, "mu").reshape(6, -1)
    tally = {"raised": 0, "accepted": 0, "bad": []}
    for t in range(first, stop):
        rng = np.random.default_rng(1000 + t)
        k = int(rng.integers(6))
        bad = list(texts)
        bad[k] = _corrupt(texts[k], rng, t % 6)
        print(t, flush=True, file=sys.stderr)
        try:
            out = pmt.predict(_idata(bad, 2), X, "mu").reshape(6, -1)
        except ValueError as err:
            tally["raised"] += 1
            if bad[k] == texts[k] or f"(chain {k // 3}, draw {k % 3})" not in str(err):
                tally["bad"].append((t, f"wrong error: {err}"))
            continue
        tally["accepted"] += 1
        try:
            _check_structure(*decode_forest(bad[k]))
            assert np.isfinite(out).all(), "non-finite prediction"
            assert np.array_equal(np.delete(out, k, 0), np.delete(clean, k, 0)), "other draws changed"
        except (AssertionError, ValueError) as err:
            tally["bad"].append((t, f"accepted but {type(err).__name__}: {err}"))
    return tally


def test_fuzzed_forests_raise_or_decode_to_valid_forests():
    """600 seeded corruptions: each is a ValueError naming its draw, or a valid forest predicting finite values."""
    env = dict(os.environ, PYTHONPATH=str(Path(pmt.__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, __file__, "0", "600"], capture_output=True, text=True, env=env,
                          timeout=600)
    last = proc.stderr.strip().splitlines()[-1:] if proc.stderr else []
    died = f"fuzz process died (return code {proc.returncode}) at try {last}"
    assert proc.returncode == 0, f"{died}: {proc.stderr[-900:]}"
    tally = json.loads(proc.stdout.strip().splitlines()[-1])
    assert tally["bad"] == []
    assert tally["raised"] > 300 and tally["accepted"] > 20  # both outcomes happen: the test can tell them apart


if __name__ == "__main__":
    print(json.dumps(fuzz(int(sys.argv[1]), int(sys.argv[2]))))


def _reach(var, val, X_train, k, rows, out):
    """Training rows reaching node ``k`` and below (preorder), into ``out``; returns the next subtree."""
    out[k] = len(rows)
    if var[k] < 0:
        return k + 1
    go_left = X_train[rows, var[k]] <= val[k]
    right = _reach(var, val, X_train, k + 1, rows[go_left], out)
    return _reach(var, val, X_train, right, rows[~go_left], out)


def _value(var, val, reach, excluded, k, x):
    """The subtree at ``k`` at the point ``x``, excluded covariates averaged by training rows."""
    if var[k] < 0:
        return val[k], k + 1
    left_value, right = _value(var, val, reach, excluded, k + 1, x)
    right_value, end = _value(var, val, reach, excluded, right, x)
    if excluded[var[k]]:
        n_left, n_right = reach[k + 1], reach[right]
        return (n_left * left_value + n_right * right_value) / (n_left + n_right), end
    return (left_value if x[var[k]] <= val[k] else right_value), end


def _marginal_reference(text, X_train, X, excluded):
    """Marginalised prediction written directly from the definition, tree by tree, by recursion."""
    _, counts, var, val = decode_forest(text)
    out = np.zeros(len(X))
    start = 0
    for c in counts:
        tree_var, tree_val, reach = var[start:start + c], val[start:start + c], {}
        _reach(tree_var, tree_val, X_train, 0, np.arange(len(X_train)), reach)
        out += [_value(tree_var, tree_val, reach, excluded, 0, x)[0] for x in X]
        start += c
    return out


def test_marginalised_prediction_matches_its_definition():
    thr, X, forests, texts = _setting(seed=4)
    rng = np.random.default_rng(5)
    X_train = rng.normal(size=(60, 3)) * 1.5
    idata = _idata(texts, 2)
    plain = pmt.predict(idata, X, "mu")
    np.testing.assert_array_equal(pmt.predict(idata, X, "mu", exclude=[], X_train=X_train), plain)
    for exclude in ([0], [1, 2], [0, 1, 2]):
        mask = np.isin(np.arange(3), exclude)
        got = pmt.predict(idata, X, "mu", exclude=exclude, X_train=X_train)
        want = np.array([_marginal_reference(t, X_train, X, mask) for t in texts]).reshape(got.shape)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # all covariates out: every row gets the same value, each tree's training-weighted mean
    flat = pmt.predict(idata, X, "mu", exclude=[0, 1, 2], X_train=X_train)
    assert np.ptp(flat, axis=-1).max() < 1e-12
    some = pmt.predict(idata, X, "mu", draws=[4, 1])
    np.testing.assert_array_equal(some, plain.reshape(-1, len(X))[[4, 1]])
    with pytest.raises(ValueError, match="X_train"):
        pmt.predict(idata, X, "mu", exclude=[0])
