"""The GPU grow/prune sweep (pymc_treesamplers/gpu) is exact, proven without a GPU (issue 32, item 3).

Two links, each a test:

1. The sweep's decisions (``gpu/decisions.py``, compiled by numba) with the CPU twin of the device's row pass
   (``gpu/twin.py``), against enumeration: m = 1 (partitions of the 7-row tiny data, sigma fixed at 1), the
   tree prior under a flat likelihood, and m = 2 (pairs of partitions of 5 rows: the backfitting). Sizes,
   thinning and seeds are the GrowPrune entry's of tests/samplers.py; the threshold is the 99.9% quantile of
   the TV distance of iid multinomial samples of the same size (tests/exact.py), as for every CPU sampler.
   Deliberately wrong decisions (``testing.GPU_WRONG``: the prune's proposal ratio left out; a leaf that
   cannot split given the factor 1 - p_split as if it could, i.e. the valid-cut convention broken; CGM's
   rule terms) fail the same test.
2. The device kernels (``gpu/kernels.py``, run by numba-cuda's simulator, NUMBA_ENABLE_CUDASIM=1, in a child
   process) give the twin's draws: the same trees and leaf values (to rounding) sweep after sweep from the
   same seed, m = 1 and m = 2, sigma^2 fixed and drawn, several device threads and blocks (the reductions),
   both drivers (one launch per sweep with grid barriers, atomics' or cooperative groups'; per-tree
   launches). The decisions are one source compiled for both (``decisions.build``), with the same
   xoroshiro128+ stream, so the twin *is* the device's chain.
   The simulator runs a Python thread per device thread (~50 ms a launch), so it cannot produce enumeration-
   sized samples itself; with link 1 this proves the device chain exact.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pymc_treesamplers.gpu import layout, tables, twin
from pymc_treesamplers.testing import wrong_gpu_sweeps
from tests.helpers.exact import (
    empirical,
    exact_pair_posterior,
    exact_partition_posterior,
    exact_partition_prior,
    partition_key,
    tiny_data,
    tv_distance,
    tv_threshold,
)

ROOT = Path(__file__).resolve().parent.parent


def _twin_keys(codes, r, sigma2, m, n_draws, thin, seed, wrong=None, alpha=0.95, beta=2.0, split_weights=None,
               move_probs=(0.5, 0.5, 0.0, 0.0), subtree_cap=layout.SUBMAX):
    """Partition keys of a twin chain: tree 0's (m = 1) or both trees' (m = 2) row partitions per kept draw."""
    from pymc_treesamplers.gpu.device_chain import DeviceChain

    g = DeviceChain(codes.T, r, m=m, alpha=alpha, beta=beta, mu0=0.0, sigma_mu=1.0, fixed_sigma2=sigma2,
                     rng=seed, dtype=np.float64, backend="cpu", split_weights=split_weights,
                     move_probs=move_probs, subtree_cap=subtree_cap)
    sweeps = twin.sweeps if wrong is None else wrong_gpu_sweeps(wrong)
    sig = np.zeros(thin)
    leaves = np.empty(codes.shape[0], dtype=np.int64)
    keys = []
    for _ in range(n_draws):
        done = sweeps(g.rs, thin, g.codes, g.leaf, g.r, *g.state, g.params, g.wsplit, g.words, g.floats, g.prop,
                      g.tick, sig)
        assert done == thin
        key = []
        for j in range(m):
            tables.row_leaves(g.state[0], j, g.codes, leaves)
            key.append(partition_key(leaves.tolist()))
        keys.append(key[0] if m == 1 else tuple(key))
    return keys


def _tv(exact, keys):
    return tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))


def _posterior_case():
    codes, r, _ = tiny_data(0)
    return codes, r, exact_partition_posterior(codes, r, np.ones(len(r)), 0.95, 2.0, 0.0, 1.0)


def test_twin_matches_enumeration_m1():
    codes, r, exact = _posterior_case()
    tv, threshold = _tv(exact, _twin_keys(codes, r, 1.0, 1, 20_000, 50, 11))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_twin_recovers_the_tree_prior():
    codes, r, _ = tiny_data(0)
    exact = exact_partition_prior(codes, 0.95, 2.0)
    tv, threshold = _tv(exact, _twin_keys(codes, r, np.inf, 1, 20_000, 10, 5))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


@pytest.mark.parametrize("weights", [(3.0, 1.0), (1.0, 0.0)], ids=["3-1", "1-0"])
def test_twin_matches_enumeration_with_split_weights(weights):
    """Unequal split weights reach the GPU step whenever X has missing values (1/2 on each of a covariate's
    two split columns) or categories (1/L per level): the variable choice in proportion to them, among the
    variables with a valid cut, against enumeration with the same weights."""
    codes, r, _ = tiny_data(0)
    exact = exact_partition_posterior(codes, r, np.ones(len(r)), 0.95, 2.0, 0.0, 1.0, split_weights=list(weights))
    tv, threshold = _tv(exact, _twin_keys(codes, r, 1.0, 1, 20_000, 50, 13, split_weights=np.array(weights)))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_split_weights_ignored_fail_the_same_test():
    """The check above can fail: a chain that chooses the variable uniformly (weights ignored) is far from
    the weighted posterior."""
    codes, r, _ = tiny_data(0)
    exact = exact_partition_posterior(codes, r, np.ones(len(r)), 0.95, 2.0, 0.0, 1.0, split_weights=[3.0, 1.0])
    tv, threshold = _tv(exact, _twin_keys(codes, r, 1.0, 1, 20_000, 50, 13))
    assert tv > threshold, f"uniform choice passed the weighted test: TV {tv:.4f} < threshold {threshold:.4f}"


PAIR_ROWS = 5
GP, CGM, HEAVY = (0.5, 0.5, 0.0, 0.0), (0.25, 0.25, 0.4, 0.1), (0.15, 0.15, 0.4, 0.3)


def test_twin_matches_pair_enumeration_m2():
    codes, r, _ = tiny_data(0)
    codes, r = codes[:PAIR_ROWS], r[:PAIR_ROWS]
    exact = exact_pair_posterior(codes, r, np.ones(PAIR_ROWS), 0.95, 2.0, 0.0, 1.0)
    tv, threshold = _tv(exact, _twin_keys(codes, r, 1.0, 2, 10_000, 50, 1))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


@pytest.mark.parametrize("probs", [CGM, HEAVY], ids=["cgm", "change-swap-heavy"])
def test_twin_cgm_matches_enumeration_m1(probs):
    """The CGM move set on the GPU sweep (grow, prune, change, swap; ``move_probs``): the same enumeration."""
    codes, r, exact = _posterior_case()
    tv, threshold = _tv(exact, _twin_keys(codes, r, 1.0, 1, 20_000, 50, 11, move_probs=probs))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_twin_cgm_recovers_the_tree_prior():
    codes, r, _ = tiny_data(0)
    exact = exact_partition_prior(codes, 0.95, 2.0)
    tv, threshold = _tv(exact, _twin_keys(codes, r, np.inf, 1, 20_000, 30, 5, move_probs=HEAVY))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_twin_cgm_matches_pair_enumeration_m2():
    codes, r, _ = tiny_data(0)
    codes, r = codes[:PAIR_ROWS], r[:PAIR_ROWS]
    exact = exact_pair_posterior(codes, r, np.ones(PAIR_ROWS), 0.95, 2.0, 0.0, 1.0)
    tv, threshold = _tv(exact, _twin_keys(codes, r, 1.0, 2, 10_000, 50, 1, move_probs=CGM))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_twin_cgm_with_a_subtree_cap_is_exact():
    """A change or swap above a subtree of more than ``subtree_cap`` nodes leaves the tree as it is (the GPU
    pass scores at most ``layout.SUBMAX`` nodes); the moves keep a tree's shape, so the restriction is symmetric.
    At cap 3 only nodes whose children are leaves change, and the chain still matches enumeration."""
    codes, r, exact = _posterior_case()
    tv, threshold = _tv(exact, _twin_keys(codes, r, 1.0, 1, 20_000, 50, 11, move_probs=HEAVY, subtree_cap=3))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


@pytest.mark.parametrize("wrong", ["change-counts-its-drawn-rule", "swap-drops-the-top-rule"])
def test_wrong_cgm_variants_fail_the_same_test(wrong):
    """The CGM tests can fail: a change that scores the rule it drew from its prior (the proposal does not
    cancel it then), or a swap that leaves out the top node's rule probability, is off the posterior."""
    codes, r, exact = _posterior_case()
    tv, threshold = _tv(exact, _twin_keys(codes, r, 1.0, 1, 20_000, 50, 11, move_probs=HEAVY, wrong=wrong))
    assert tv > threshold, f"wrong variant passed: TV {tv:.4f} < threshold {threshold:.4f}"


@pytest.mark.parametrize("wrong", ["prune-ratio", "leaf-prior"])
def test_wrong_variants_fail_the_same_test(wrong):
    codes, r, exact = _posterior_case()
    tv, threshold = _tv(exact, _twin_keys(codes, r, 1.0, 1, 20_000, 50, 11, wrong=wrong))
    assert tv > threshold, f"wrong variant passed: TV {tv:.4f} < threshold {threshold:.4f}"


def test_decisions_mirror_the_engines_tree_prior():
    """The decisions write the tree prior and the leaf marginal again over their parameter vector (the device
    cannot call the engine's functions); each function ``decisions.ENGINE_MIRRORS`` lists equals the engine's
    on random inputs."""
    import importlib
    import math

    from pymc_treesamplers.engine.records import TreePrior
    from pymc_treesamplers.gpu.decisions import ENGINE_MIRRORS

    engine = {name: getattr(importlib.import_module(path.rpartition(".")[0]), path.rpartition(".")[2])
              for name, path in ENGINE_MIRRORS.items()}
    mirror = {name: getattr(twin.HOST, name) for name in ENGINE_MIRRORS}
    rng = np.random.default_rng(0)
    for _ in range(300):
        alpha, beta, mu0, s2 = rng.uniform(0.05, 0.99), rng.uniform(0.0, 4.0), rng.normal(), rng.uniform(0.01, 5.0)
        prior = TreePrior(alpha, beta, mu0, s2)
        params = np.zeros(layout.N_PARAMS)
        params[[layout.P_ALPHA, layout.P_BETA, layout.P_MU0, layout.P_S2MU]] = alpha, beta, mu0, s2
        d = int(rng.integers(0, 12))
        lw = -np.inf if rng.random() < 0.3 else rng.normal()
        W, S = rng.uniform(0.0, 50.0), rng.normal(0.0, 20.0)
        wv, avail, n_cuts = rng.uniform(0.1, 1.0), rng.uniform(1.0, 5.0), int(rng.integers(1, 40))
        pairs = [(mirror["log_psplit"](params, d), engine["log_psplit"](prior, d)),
                 (mirror["log1m_psplit"](params, d), engine["log1m_psplit"](prior, d)),
                 (mirror["leaf_log_prior"](params, d, lw), engine["leaf_log_prior"](prior, d, lw)),
                 (mirror["leaf_loglik"](params, W, S), engine["leaf_loglik"](prior, W, S)),
                 (mirror["rule_log_prior"](wv, avail, n_cuts),
                  engine["rule_log_prior"](math.log(wv), math.log(avail), n_cuts))]
        for ours, theirs in pairs:
            assert ours == pytest.approx(theirs, rel=1e-13, abs=1e-13)


SIM_SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings
    warnings.filterwarnings("ignore")  # numpy's uint64 wrap-around warnings of the simulated generator
    import numpy as np
    from tests.helpers.exact import tiny_data
    from pymc_treesamplers.gpu.device_chain import DeviceChain

    codes, r, _ = tiny_data(0)
    out = {{}}
    for name, m, fixed, sweeps, dtype, mode, blocks, barrier, probs in {cases!r}:
        kw = dict(m=m, mu0=0.0, sigma_mu=1.0, fixed_sigma2=fixed, sigma2_prior=(1.5, 0.3), rng=7,
                  threads_per_block=4, dtype=np.dtype(dtype), move_probs=probs)
        dev = DeviceChain(codes.T, r, backend="cuda", mode=mode, blocks=blocks, barrier=barrier, **kw)
        assert dev.mode == mode and (mode != "coop" or dev.kernel == barrier), (dev.mode, dev.kernel, dev.mode_note)
        twin = DeviceChain(codes.T, r, backend="cpu", **kw)
        first_diff, max_dv, max_ds, rule_moves = -1, 0.0, 0.0, 0
        for s in range(sweeps):
            before = twin.trees()
            s2d = dev.sweep()
            s2t = twin.sweep()
            after = twin.trees()
            # a tree whose shape stayed and whose rules moved: an accepted change or swap
            rule_moves += int(sum(np.array_equal(before[3][t], after[3][t])
                                  and not np.array_equal(before[0][t], after[0][t]) for t in range(m)))
            same = np.array_equal(dev.row_leaves(), twin.row_leaves()) and np.array_equal(dev.state[5], twin.state[5])
            max_dv = max(max_dv, float(np.abs(dev.state[3] - twin.state[3]).max()))
            max_ds = max(max_ds, abs(s2d - s2t))
            if not same and first_diff < 0:
                first_diff = s
        res = dev.residual()
        out[name] = dict(first_diff=first_diff, max_dv=max_dv, max_ds=max_ds, rule_moves=rule_moves,
                         resid_err=float(np.abs(res - (r - dev.fit())).max()),
                         leaves=int(dev.state[5].sum()))
    print("RESULT" + json.dumps(out))
    """
)


def _simulate(cases, timeout=600):
    # the child imports tests.helpers from the repository root
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    script = SIM_SCRIPT.format(cases=cases)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    return json.loads(line[len("RESULT"):])


def test_device_kernel_gives_the_twins_draws_in_the_simulator():
    """Same seed, same draws: trees equal every sweep, leaf values and sigma^2 to rounding (float64), and the
    device residual equals y minus the forest's fit."""
    cases = [("m1-fixed-soft", 1, 1.0, 40, "float64", "coop", None, "soft", GP),
             ("m2-drawn-soft", 2, None, 25, "float64", "coop", None, "soft", GP),
             ("m2-drawn-cg", 2, None, 10, "float64", "coop", None, "cg", GP),
             ("m2-drawn-launch", 2, None, 10, "float64", "launch", 3, "soft", GP),
             ("cgm-m1-fixed-soft", 1, 1.0, 40, "float64", "coop", None, "soft", HEAVY),
             ("cgm-m3-drawn-soft", 3, None, 25, "float64", "coop", None, "soft", HEAVY),
             ("cgm-m2-drawn-cg", 2, None, 10, "float64", "coop", None, "cg", CGM),
             ("cgm-m2-drawn-launch", 2, None, 10, "float64", "launch", 3, "soft", HEAVY)]
    out = _simulate(cases)
    for name, res in out.items():
        assert res["first_diff"] == -1, (name, res)
        assert (res["rule_moves"] > 0) == name.startswith("cgm"), (name, res)  # the device ran change/swap
        assert res["max_dv"] < 1e-9 and res["max_ds"] < 1e-9, (name, res)
        assert res["resid_err"] < 1e-9, (name, res)


def test_device_float32_residual_in_the_simulator():
    """float32 residuals on the device (the benchmark's setting): the run works and the device residual
    tracks y minus the fit to float32 rounding."""
    out = _simulate([("m2-f32", 2, None, 10, "float32", "coop", None, "soft", CGM)])
    assert out["m2-f32"]["resid_err"] < 1e-4, out


def test_float32_residual_is_resynchronised():
    """A float32 residual carries every tree's rounding from sweep to sweep; ``resync`` recomputes it as y - fit
    (float64) every so many sweeps. Over the same 150 sweeps (m = 20) the drift without it is many times the
    float32 rounding that is left right after a resynchronisation, and the trees are the same draws either way
    up to the chain's first rounding-driven difference (none here: the decisions do not sit on the edge)."""
    from pymc_treesamplers.gpu.device_chain import DeviceChain

    rng = np.random.default_rng(4)
    X = rng.uniform(size=(400, 3))
    y = 100.0 + 3 * (X[:, 0] > 0.5) + X[:, 1] + rng.normal(0, 0.3, 400)
    codes = np.floor(X * 32).astype(np.int64).T
    err = {}
    for resync in (0, 150):
        g = DeviceChain(codes, y, m=20, rng=3, dtype=np.float32, backend="cpu", resync=resync,
                         sigma2_prior=(1.5, 0.05))
        for _ in range(150):
            g.sweep()
        err[resync] = float(np.abs(g.residual() - (y - g.fit())).max())
    ulp = float(np.spacing(np.float32(np.abs(y - g.fit()).max())))
    assert err[150] <= ulp, err
    assert err[0] > 20 * err[150], err  # the drift the resynchronisation removes
    assert DeviceChain(codes, y, m=2, backend="cpu").resync == 50
    assert DeviceChain(codes, y, m=2, backend="cpu", dtype=np.float64).resync == 0


def test_encoded_forest_predicts_the_sweeps_fit():
    """The stored forest format (storage.encode_preorder): decoded and walked by the predict kernel on X, it
    gives the sweep's own fit at the training rows (so ``pmt.predict`` reads a GPU draw)."""
    from pymc_treesamplers.gpu.device_chain import DeviceChain
    from pymc_treesamplers.model.binning import bin_columns
    from pymc_treesamplers.results.predictive import _extended, predict_preorder
    from pymc_treesamplers.results.storage import decode_forest

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 3))
    y = 3 * (X[:, 0] > 0.5) + X[:, 1] + rng.normal(0, 0.3, 300)
    b = bin_columns(X)
    g = DeviceChain(b.codes, y, m=5, rng=1, dtype=np.float64, backend="cpu", thresholds=b.thresholds,
                     sigma2_prior=(1.5, 0.1))
    for _ in range(20):
        g.sweep()
    p, counts, var, val = decode_forest(g.encode())
    out = np.empty(300)
    predict_preorder(counts, var, val, _extended(X), out, 2 * p)
    assert (var >= 0).any()
    np.testing.assert_allclose(out, g.fit(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g.residual(), y - g.fit(), atol=1e-9)


def test_rng_draws_have_their_distributions():
    """The chain's own generator (xoroshiro128+, ``decisions.build``): uniforms, normals and the sigma^2 draw's
    gammas have their distributions (Kolmogorov-Smirnov, 20 000 draws each; the enumeration tests cover
    the uniforms and normals inside the chain, this covers the gamma they do not use)."""
    from scipy import stats

    rs = layout.seed_state(np.random.default_rng(3))[0]
    H = twin.HOST
    u = np.array([H.rng_uniform(rs) for _ in range(20_000)])
    z = np.array([H.rng_normal(rs) for _ in range(20_000)])
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    assert stats.kstest(z, "norm").pvalue > 1e-3
    for a in (0.7, 3.0, 5000.5):
        x = np.array([H.rng_gamma(rs, a) for _ in range(20_000)])
        assert stats.kstest(x, stats.gamma(a).cdf).pvalue > 1e-3, a


KERNELS = ["pass-float32", "pass-float64", "sweep-soft", "sweep-cg", "decide", "flush", "fit", "shift-float32",
           "shift-float64"]


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_compiles_for_a_real_gpu(kernel, monkeypatch):
    """The simulator does not type-check like the CUDA target: compile every kernel (the decisions compiled
    for the device included) to PTX for sm_90 (needs NVVM, not a GPU; skipped where numba cannot find it)."""
    import types as pytypes

    import numba.cuda.dispatcher as dispatcher
    from numba import cuda
    from numba import types as t

    from pymc_treesamplers.gpu import kernels as d

    # device functions ask the current device for its compute capability: none here, name sm_90's
    monkeypatch.setattr(dispatcher, "get_current_device", lambda: pytypes.SimpleNamespace(compute_capability=(9, 0)))

    def a(ty, nd):
        return t.Array(ty, nd, "C")

    state = (a(t.int64, 3), a(t.int64, 4), a(t.int64, 2), a(t.float64, 2), a(t.float64, 2), a(t.uint8, 2),
             a(t.int64, 1))
    small = (a(t.float64, 1), a(t.float64, 1), a(t.int32, 2), a(t.float64, 2), a(t.float64, 2), a(t.uint64, 2))
    rows32 = (a(t.uint8, 2), a(t.uint8, 2), a(t.float32, 1))
    rows64 = (a(t.uint16, 2), a(t.uint8, 2), a(t.float64, 1))
    ibfb = (a(t.int32, 2), a(t.float64, 2))
    i64 = t.int64
    fn, sig = {"pass-float32": (d.k_pass, rows32 + ibfb + (i64, i64, i64)),
               "pass-float64": (d.k_pass, rows64 + ibfb + (i64, i64, i64)),
               "sweep-soft": (d.k_sweep_soft, rows32 + state + small + (i64, i64, i64, i64, a(t.int32, 1), i64, i64)),
               "sweep-cg": (d.k_sweep_cg, rows32 + state + small + (i64, i64, i64, i64, a(t.int32, 1), i64, i64)),
               "decide": (d.k_decide, state + small + (i64, i64, i64, i64)),
               "flush": (d.k_flush, ibfb + (i64, i64)),
               "fit": (d.k_fit, (a(t.uint8, 2), a(t.float64, 2), a(t.float64, 1))),
               "shift-float32": (d.k_shift, (a(t.float32, 1), a(t.float64, 1))),
               "shift-float64": (d.k_shift, (a(t.float64, 1), a(t.float64, 1)))}[kernel]
    try:
        ptx, _ = cuda.compile_ptx(fn.py_func, sig, cc=(9, 0))
    except Exception as e:  # noqa: BLE001
        if "NVVM" in str(e) or "nvvm" in str(e) or "libNVVM" in repr(e):
            pytest.skip(f"no NVVM here: {e}")
        raise
    assert ".entry" in ptx
    # only the cooperative-groups kernel needs a cooperative launch (and libcudadevrt)
    assert ("cudaCGGetIntrinsicHandle" in ptx) == (kernel == "sweep-cg")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"m": 0}, "m \\(number of trees\\)"), ({"m": 2.5}, "m \\(number of trees\\)"), ({"alpha": 1.0}, "alpha"),
    ({"beta": -1.0}, "beta"), ({"sigma_mu": 0.0}, "sigma_mu"), ({"fixed_sigma2": -1.0}, "fixed_sigma2"),
    ({"split_weights": [1.0, 1.0]}, "split_weights"), ({"split_weights": [0.0]}, "split_weights"),
    ({"backend": "gpu"}, "backend"), ({"dtype": np.int32}, "dtype"), ({"resync": -1}, "resync"),
    ({"resync": 2.5}, "resync"), ({"move_probs": (0.5, 0.5, 0.5, 0.0)}, "move_probs"),
    ({"move_probs": (0.0, 0.5, 0.5, 0.0)}, "move_probs"), ({"move_probs": (0.5, 0.5)}, "move_probs"),
    ({"subtree_cap": 2}, "subtree_cap"), ({"subtree_cap": layout.SUBMAX + 1}, "subtree_cap"),
    ({"spin_ns": -1}, "spin_ns"), ({"spin_ns": 0.5}, "spin_ns"),
])
def test_bad_options_are_refused_by_name(kwargs, match):
    from pymc_treesamplers.gpu.device_chain import DeviceChain

    with pytest.raises(ValueError, match=match):
        DeviceChain(np.array([[0, 1, 2, 2]]), np.array([0.0, 0.1, 1.0, 1.1]), **{"backend": "cpu", **kwargs})


def test_a_tree_past_the_node_slots_stops_with_the_way_out():
    """A tree that needs more than MAXN node slots (a single tree on a wiggly signal, tiny noise, a prior that
    favours deep trees) stops the sweep with an error that names the limit and the routes around it."""
    from pymc_treesamplers.gpu.device_chain import DeviceChain

    x = np.arange(600)
    g = DeviceChain((x * 256 // 600)[None, :], 10 * np.sin(x / 10.0), m=1, alpha=0.99, beta=0.0, fixed_sigma2=1e-4,
                     rng=0, backend="cpu", dtype=np.float64)
    with pytest.raises(RuntimeError, match=f"more than {layout.MAXN} nodes.*backend='cpu'.*more trees"):
        for _ in range(3000):
            g.sweep()
