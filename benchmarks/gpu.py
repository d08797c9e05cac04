"""GPU sweep benchmark (issue 32): our numba-cuda grow/prune sweep, bartz (JAX), and this package's CPU sweep on
1..16 threads, Friedman #1 (p = 10), m = 200, seconds per sweep.

    python benchmarks/gpu.py --out DIR [--quick] [--sections gpu,bartz,rows,cpu,stochtree,pmsample] [--bartz-from FILE]
    python benchmarks/gpu.py --out DIR --render GPU_JSON --bartz-from FILE   # re-render only, no runs

``--bartz-from FILE``: bartz's figures from an earlier run's gpu.json (for a gpu-only rerun), used where this
run has no bartz section; the ratio ours / bartz is given for every n in gpu.json (``ratios``) and gpu.md.

Runs without PyMC (the GPU machine has numpy, numba, numba-cuda, JAX): the package is imported as a namespace
(its ``__init__`` imports PyMC), only ``gpu/`` and ``engine/`` modules are loaded. Every measurement runs in
its own child process with a time limit (a crash, an out-of-memory or a hang costs only that cell; JAX and
numba-cuda do not share a process). Results are written to DIR/gpu.json and DIR/gpu.md after every cell.

* ``gpu``: ``pymc_treesamplers.gpu.DeviceChain`` (float32 residual, sigma^2 conjugate), median seconds per
  sweep over KEEP sweeps after WARM sweeps; its driver (``coop``: one cooperative launch per sweep, or
  ``launch``: per-tree launches, with the reason); GPU memory: used memory (total - free) after the sweeps
  minus before the state was allocated, and the state's own bytes; the training RMSE from the device's
  residual.
* ``bartz``: ``bartz.BART.gbart`` with numcut=255 (our 256 bins), printevery=None; seconds per sweep as the
  difference of two fits (``nskip=WARM``, ``ndpost=KEEP`` and ``ndpost=KEEP + EXTRA``) over EXTRA, each fit
  run twice and the faster kept (jit compile is in both); peak memory from ``device.memory_stats()``.
  Note bartz caps trees at depth 6 (maxdepth) where our prior has no cap.
* ``cpu``: the package's CPU GrowPrune sweep (``engine.driver.sweep`` with the MH update at (0.5, 0.5, 0, 0),
  sigma^2 by its conjugate draw) on 1, 2, 4, 8, 16 threads at 10^6 rows and on 1 and 16 at 10^7 (2 warm-up and 3
  kept sweeps there); numba's threading layer reported.
* ``rows``: the CPU sweep's row passes alone (``ranges_suff``, ``add_ranges``, ``split_suff`` on a tree of 3
  leaves) on the same threads as ``cpu``: whether the passes themselves or what runs between them limit the
  sweep's speed-up on many threads.
* ``stochtree``: stochtree's grow/prune MCMC on the same threads (10^6 rows; 16 threads at 10^7), seconds per
  sweep as the difference of two fits; the table puts it next to ours. It always fits the scale benchmark's
  m = 200 (the full run's m; ``--quick``'s ratios are not comparable).

* ``pmsample`` (only when PyMC imports; else the cells say "skipped"): a whole
  ``pm.sample(tune=20, draws=20, chains=1, cores=1)`` at n = PM_N, m = 200 on the same Friedman data, with
  ``pmt.GrowPruneStep([mu], backend="cuda")``, with ``pmt.CGMStep([mu], backend="cuda")`` (the default step's
  move set, backend ``cgm-cuda`` in the table) and with ``pmt.GrowPruneStep([mu], threads=16)`` (the CPU
  kernels), sigma by ``pmt.NormalScaleGibbs`` in both. The package is imported for real (PyMC and all) from
  this checkout. Wall time of building the step and of ``pm.sample`` (transfers included), after a warm-up
  ``pm.sample`` on 1000 rows in the same process (kernels compiled, its time reported apart), and each draw's
  time in the BART step (``astep``: the device sweep plus fit, node tables and stats back).

``--quick``: tiny sizes, m = 10, numba-cuda's simulator when no GPU is visible: checks the script end to end
in seconds on a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

FULL = {"gpu": [10**5, 10**6, 10**7], "bartz": [10**5, 10**6, 10**7],
        # the cells issue 32's targets need first (1 and 16 threads), then the rest of the thread table, so a
        # section cut short by its time limit still answers the targets
        "cpu": [(10**6, 1), (10**6, 16), (10**7, 16), (10**7, 1), (10**6, 2), (10**6, 4), (10**6, 8)],
        "stochtree": [(10**6, 16), (10**7, 16), (10**6, 1), (10**6, 2), (10**6, 4), (10**6, 8)], "big_n": 10**7,
        "rows": [(10**6, 1), (10**6, 16), (10**7, 1), (10**7, 16), (10**6, 2), (10**6, 4), (10**6, 8)],
        "m": 200,
        "warm": 5, "keep": 5, "extra": 10,
        "pmsample": [(10**6, "cuda"), (10**6, "cgm-cuda"), (10**6, "cpu")], "pm_tune": 20, "pm_draws": 20,
        "pm_threads": 16,
        "limit_s": {"gpu": 140, "bartz": 140, "cpu": 300, "stochtree": 300, "pmsample": 345, "rows": 100},
        "cell_s": 110,
        # run 7 (H100 machine, 16 vCPUs): the first CPU cell compiles (51 s), a 1-thread sweep at 10^7 rows takes
        # ~20 s, stochtree's two fits at 10^6 rows on 16 threads took over 110 s
        "cpu_cell_s": 150, "stochtree_cell_s": 240, "pmsample_cell_s": 115}
QUICK = {"gpu": [300], "bartz": [1000], "cpu": [(3000, 1), (3000, 2), (40000, 1), (40000, 2)],
         "stochtree": [(3000, 1), (3000, 2)], "rows": [(40000, 1), (40000, 2)], "big_n": 40000, "m": 10,
         "warm": 1, "keep": 2,
         "extra": 2, "pmsample": [(200, "cuda"), (200, "cgm-cuda"), (200, "cpu")], "pm_tune": 2, "pm_draws": 2,
         "pm_threads": 2,
         "limit_s": {"gpu": 200, "bartz": 60, "cpu": 90, "stochtree": 90, "pmsample": 240, "rows": 60},
         "cell_s": 60,
         # the simulator runs a size's sweeps, variants and twin checks in about 80 s
         "gpu_cell_s": 190, "pmsample_cell_s": 120}
P, SEED = 10, 1234
CHECK_N = 2000
CGM_PROBS = (0.25, 0.25, 0.4, 0.1)  # CGMStep's default move set (grow, prune, change, swap)


# ------------------------------------------------------------------------------------------- helpers
def _namespace_package():
    """Import ``pymc_treesamplers`` submodules without running its ``__init__`` (which imports PyMC)."""
    if "pymc_treesamplers" not in sys.modules:
        pkg = types.ModuleType("pymc_treesamplers")
        pkg.__path__ = [str(ROOT / "pymc_treesamplers")]
        sys.modules["pymc_treesamplers"] = pkg


def friedman1(n, seed=SEED):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, P))
    f = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4]
    return X, f + rng.normal(size=n)


def sigma2_prior(y, nu=3.0, q=0.9):
    """Chipman's (a, b) with sigma_hat = sd(y) (no least squares: a fixed, cheap reference for all arms)."""
    try:
        from scipy.stats import chi2

        lam = np.var(y) * chi2.ppf(1.0 - q, nu) / nu
    except ImportError:
        lam = np.var(y) * 0.584 / nu  # chi2.ppf(0.1, 3)
    return nu / 2.0, nu * lam / 2.0


def _codes(X):
    _namespace_package()
    from pymc_treesamplers.model.binning import bin_columns

    b = bin_columns(X, max_bins=256)
    return b.codes, b.thresholds


def _threading_layer():
    """numba's threading layer in this process, or "none started" when no parallel loop ran."""
    import numba

    try:
        return numba.threading_layer()
    except ValueError:
        return "none started"


# ------------------------------------------------------------------------------------------- children
def child_gpu(n, cfg):
    _namespace_package()
    if not hasattr(np, "row_stack"):
        # numba-cuda as installed on the GPU machine registers np.row_stack, which numpy 2.5 removed
        np.row_stack = np.vstack
    from numba import cuda

    from pymc_treesamplers.gpu.device_chain import DeviceChain

    X, y = friedman1(n)
    codes, thr = _codes(X)
    simulator = bool(os.environ.get("NUMBA_ENABLE_CUDASIM"))
    ctx = cuda.current_context()
    free0, total = ctx.get_memory_info()
    t0 = time.perf_counter()
    g = DeviceChain(codes, y, m=cfg["m"], sigma2_prior=sigma2_prior(y), rng=SEED, dtype=np.float32,
                     thresholds=thr)
    setup = time.perf_counter() - t0
    times = []
    for _s in range(cfg["warm"] + cfg["keep"]):
        t = time.perf_counter()
        sigma2 = g.sweep()
        times.append(time.perf_counter() - t)
    free1, _ = ctx.get_memory_info()
    text = g.encode()
    leaves = int(((g.state[5] != 0) & (g.state[0][..., 2] < 0)).sum())  # used slots that are leaves
    rmse = float(np.sqrt(np.mean(g.residual() ** 2)))  # y - fit, from the device (no n x m host walk)
    kept = times[cfg["warm"]:]
    checks = _device_checks(g, y, codes, cfg) if n == cfg["gpu"][0] else {}
    out = {"n": n, "s_per_sweep": float(np.median(kept)), "us_per_tree": 1e6 * float(np.median(kept)) / cfg["m"],
            "mode": g.mode, "kernel": g.kernel, "mode_note": g.mode_note, "blocks": g.blocks,
            "threads_per_block": g.tpb,
            "sweeps_s": times, "setup_s": setup,
            "gpu_mem_used_mb": (free0 - free1) / 2**20, "state_mb": g.device_bytes() / 2**20,
            "total_mem_mb": total / 2**20, "sigma": float(np.sqrt(sigma2)), "train_rmse": rmse,
            "mean_leaves_per_tree": leaves / cfg["m"], "forest_chars": len(text), "simulator": simulator,
            "device": "simulator" if simulator else str(cuda.get_current_device().name), "checks": checks}
    del g  # the variants need the device memory (n = 10^7: 2 GB of leaf slots each)
    out["variants"] = _variants(codes, y, cfg, simulator)
    return out


def _variants(codes, y, cfg, simulator):
    """A/B on the same device in the same process (the kernel already compiled): the default's alternatives,
    each from the same seed, 2 warm-up and 3 timed sweeps (median): ``cgm`` (CGMStep's move set: grow, prune,
    change, swap with probabilities 0.25, 0.25, 0.4, 0.1), two ablations that say where a sweep's time goes
    (``ablate:no-rows``: no block takes rows, so barriers, decisions and each block's set-up and reductions are
    left; ``ablate:barriers-only``: a sweep's 2 m grid barriers alone), ``blocks=1x512`` at n <= 10^5 only (one
    block: the barrier is one block's, the rows one multiprocessor's), ``blocks=SMs`` (fewer blocks: a cheaper
    grid barrier, more rows per thread), ``barrier=cg`` (cooperative groups' grid barrier instead of the
    atomics'), ``spin=200ns`` and ``spin=1us`` (the atomics' barrier polls less often). Run 5 measured the L1
    prefetch (no gain) and half the multiprocessors' blocks (a loss at 10^7): not repeated."""
    from numba import cuda

    from pymc_treesamplers.gpu.device_chain import DeviceChain

    sms = 2 if simulator else int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
    out = []
    for name, kw in (("cgm", {"move_probs": CGM_PROBS}), ("blocks=SMs", {"blocks": sms}),
                     ("blocks=1x512", {"blocks": 1, "threads_per_block": 512}),
                     ("barrier=cg", {"barrier": "cg"}), ("spin=200ns", {"spin_ns": 200}),
                     ("spin=1us", {"spin_ns": 1000}),
                     ("ablate:no-rows", {}), ("ablate:barriers-only", {})):
        if name == "blocks=1x512" and len(y) > 10**5:
            continue  # one multiprocessor's bandwidth: only small n can gain from no grid barrier at all
        try:
            g = DeviceChain(codes, y, m=cfg["m"], sigma2_prior=sigma2_prior(y), rng=SEED, dtype=np.float32, **kw)
            if name == "ablate:no-rows":
                # no block takes rows: what is left of a sweep is its fixed cost per tree (barriers, decisions,
                # each block's set-up and reductions); its draws mean nothing, its time says where time goes
                g.first = g.blocks
            times = []
            for _s in range(5):
                t = time.perf_counter()
                if name == "ablate:barriers-only" and g.mode == "coop":
                    g._k_sweep(*g._sweep_args(0, 0, probe=2 * cfg["m"]))  # a sweep's grid barriers alone
                    g.stream.synchronize()
                else:
                    g.sweep()
                times.append(time.perf_counter() - t)
            out.append({"variant": name, "blocks": g.blocks, "kernel": g.kernel,
                        "s_per_sweep": float(np.median(times[2:])), "sweeps_s": times})
            del g
        except Exception as e:  # noqa: BLE001
            out.append({"variant": name, "error": repr(e)[-300:]})
    return out


def _device_checks(g, y, codes, cfg):
    """On the real device, after the timing (the first size only): (a) the device residual equals y minus the
    forest's fit read from the node tables; (b) the device chain equals the CPU twin's, sweep by sweep, from
    the same seed (float64 residual, the first CHECK_N rows, m = 20), grow/prune and CGM's move set (keys
    ``cgm_...``): the simulator tests' check on hardware."""
    from pymc_treesamplers.gpu.device_chain import DeviceChain

    out = {}
    t = time.perf_counter()
    try:
        out["resid_vs_fit_max_abs"] = float(np.abs(g.residual() - (y - g.fit())).max())
    except Exception as e:  # noqa: BLE001
        out["resid_vs_fit_error"] = repr(e)[-300:]
    for pre, probs in (("", (0.5, 0.5, 0.0, 0.0)), ("cgm_", CGM_PROBS)):
        try:
            # the simulator (--quick without a GPU) runs a Python thread per device thread: a few sweeps there
            nc, m = min(CHECK_N, len(y)), min(20, cfg["m"])
            sweeps = 4 if os.environ.get("NUMBA_ENABLE_CUDASIM") else 30
            kw = dict(m=m, sigma2_prior=sigma2_prior(y[:nc]), rng=7, dtype=np.float64, move_probs=probs)
            dev = DeviceChain(codes[:, :nc], y[:nc], backend="cuda", **kw)
            twin = DeviceChain(codes[:, :nc], y[:nc], backend="cpu", **kw)
            first_diff, max_dv = -1, 0.0
            for s in range(sweeps):
                dev.sweep()
                twin.sweep()
                if first_diff < 0:
                    if not (np.array_equal(dev.state[0], twin.state[0])
                            and np.array_equal(dev.state[5], twin.state[5])):
                        first_diff = s
                    else:
                        max_dv = max(max_dv, float(np.abs(dev.state[3] - twin.state[3]).max()))
            out.update({pre + "twin_mode": dev.mode, pre + "twin_sweeps": sweeps,
                        pre + "twin_first_diff_sweep": first_diff, pre + "twin_max_leaf_diff": max_dv,
                        pre + "twin_resid_vs_fit": float(np.abs(dev.residual() - (y[:nc] - dev.fit())).max())})
        except Exception as e:  # noqa: BLE001
            out[pre + "twin_error"] = repr(e)[-300:]
    out["checks_s"] = time.perf_counter() - t
    return out


def child_bartz(n, cfg):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    from bartz.BART import gbart

    X, y = friedman1(n)
    xt = np.ascontiguousarray(X, dtype=np.float32)  # gbart takes (n, p), as R's BART
    yt = y.astype(np.float32)

    def fit(ndpost):
        t = time.perf_counter()
        # gbart: one chain
        out = gbart(xt, yt, ntree=cfg["m"], nskip=cfg["warm"], ndpost=ndpost, numcut=255, printevery=None, seed=0)
        jax.block_until_ready(jax.tree_util.tree_leaves(out))
        return time.perf_counter() - t

    t_short = min(fit(cfg["keep"]), fit(cfg["keep"]))
    t_long = min(fit(cfg["keep"] + cfg["extra"]), fit(cfg["keep"] + cfg["extra"]))
    dev = jax.devices()[0]
    peak = None
    try:
        peak = dev.memory_stats()["peak_bytes_in_use"] / 2**20
    except Exception:
        pass
    import bartz

    return {"n": n, "s_per_sweep": (t_long - t_short) / cfg["extra"], "fit_short_s": t_short, "fit_long_s": t_long,
            "peak_mem_mb": peak, "device": str(dev), "bartz": getattr(bartz, "__version__", "?")}


def child_cpu(n, threads, cfg):
    _namespace_package()
    import numba

    from pymc_treesamplers.engine.chain import Chain
    from pymc_treesamplers.engine.records import Pseudo
    from pymc_treesamplers.engine.updates.mh import new_mh_scratch

    X, y = friedman1(n)
    codes, _ = _codes(X)
    m = cfg["m"]
    a0, b0 = sigma2_prior(y)
    mu0 = float(y.mean()) / m
    sigma_mu = float(y.max() - y.min()) / (2 * 2.0 * np.sqrt(m))
    chain = Chain.new(codes, m, alpha=0.95, beta=2.0, mu0=mu0, s2=sigma_mu**2, threads=threads,
                      new_scratch=lambda: new_mh_scratch((0.5, 0.5, 0.0, 0.0), P, n, m))
    r = y - m * mu0
    w = np.full(1, 1.0 / np.var(y))  # one sigma: one weight for every row, as the steps pass it (records.Pseudo)
    rng = np.random.default_rng(SEED)
    warm, keep = (2, 3) if n >= cfg["big_n"] else (cfg["warm"], cfg["keep"])
    times = []
    for _s in range(warm + keep):
        t = time.perf_counter()
        # the chain sizes numba's pool to its threads (as the steps do): without it a cell of 2, 4 or 8 threads
        # ran its parallel loops on all NUMBA_NUM_THREADS (16) threads, as run 2's did
        if chain.sweep(rng, Pseudo(r, w, threads), threads=threads) >= 0:
            raise RuntimeError("CPU sweep failed")
        # not r @ r: OpenBLAS's threads spin ~0.1 s after a dot, on the cores the next sweep's threads need
        # (measured on 2 cores, n = 1e6, 2 threads: 0.49-0.50 s per sweep with r @ r, 0.43-0.44 s without)
        sigma2 = (b0 + 0.5 * float(np.square(r).sum())) / rng.gamma(a0 + 0.5 * n)
        w[:] = 1.0 / sigma2
        times.append(time.perf_counter() - t)
    layer = _threading_layer()
    kept = times[warm:]
    return {"n": n, "threads": threads, "s_per_sweep": float(np.median(kept)), "sweeps_s": times,
            "threading_layer": layer, "sigma": float(np.sqrt(sigma2)),
            "numba_num_threads": numba.config.NUMBA_NUM_THREADS}


def child_rows(n, threads, cfg):
    """The sweep's row passes alone, on ``threads`` threads: a tree of 3 leaves whose rows are random thirds of
    the ``n`` rows, each in increasing order (the layout of a sweep's long leaves): every leaf's sums in one pass
    (``ranges_suff``, a tree's leaf update), the tree's fit added to the residual (``add_ranges``) and one
    leaf's split sums (``split_suff``, a grow's score). Median seconds per call. Set against the whole sweep's
    speed-up, it says whether the row passes themselves (the memory system, the blocks' share per thread) or
    what runs between them limits a sweep on many threads. ``add_ranges_forest``: the same add for each of
    ``m`` trees (at most 2e8 / n) in turn, each with rows of its own (seconds per tree): as a sweep reads
    them, from memory rather than from the caches that hold one tree's rows between repeats.

    On this package's own 2-core machine without a GPU (issue 60), ``python benchmarks/gpu.py --child
    '["rows", 1000000, 1]'`` and ``2``, each under ``NUMBA_NUM_THREADS`` at its count, print one cell."""
    _namespace_package()

    from pymc_treesamplers.engine.rows import add_ranges, numba_threads, ranges_suff, split_suff

    rng = np.random.default_rng(SEED)
    r = rng.normal(size=n)
    w = np.full(1, 0.5)  # one sigma: one weight for every row, as the steps pass it (records.Pseudo)
    code = rng.integers(0, 256, n).astype(np.uint16)
    labels = rng.integers(0, 3, n)  # each row's leaf
    pj = np.argsort(labels, kind="stable").astype(np.int32)  # the leaves' rows, each leaf's in increasing order
    ends = np.cumsum(np.bincount(labels, minlength=3))
    starts = ends - np.bincount(labels, minlength=3)
    vals = np.array([0.1, -0.2, 0.3])
    out = np.empty((3, 2))
    fit = np.zeros(n)
    reps = 5 if n >= cfg["big_n"] else 20
    trees = []  # each tree its own leaves (random thirds, each in increasing order), as a sweep's trees have
    for _ in range(max(1, min(cfg["m"], int(2e8) // n))):
        lab = rng.integers(0, 3, n)
        e = np.cumsum(np.bincount(lab, minlength=3))
        trees.append((np.argsort(lab, kind="stable").astype(np.int32), e - np.bincount(lab, minlength=3), e))

    def add_forest():
        for perm, s, e in trees:
            add_ranges(fit, perm, s, e, vals, n, threads)

    res = {}
    with numba_threads(threads):
        for name, call in (("ranges_suff", lambda: ranges_suff(r, w, pj, starts, ends, n, threads, out)),
                           ("add_ranges", lambda: add_ranges(fit, pj, starts, ends, vals, n, threads)),
                           ("add_ranges_forest", add_forest),
                           ("split_suff", lambda: split_suff(r, w, pj, starts[0], ends[0], code, 127, threads))):
            call()  # compiles
            ts = []
            for _ in range(reps):
                t = time.perf_counter()
                call()
                ts.append(time.perf_counter() - t)
            res[name] = float(np.median(ts)) / (len(trees) if name == "add_ranges_forest" else 1)
    return {"n": n, "threads": threads, "s_per_call": res, "trees": len(trees), "threading_layer": _threading_layer()}


def child_stochtree(n, threads, cfg):
    """stochtree's grow/prune MCMC (``BARTModel.sample``, no GFR) on ``threads`` threads: seconds per sweep as the
    difference of two fits (the scale benchmark's ``_stochtree_wall``) over the extra sweeps."""
    if str(ROOT) not in sys.path:  # run as a script: its folder, not the repository, is on the path
        sys.path.insert(0, str(ROOT))
    from benchmarks.scale import _stochtree_wall

    X, y = friedman1(n)
    warm, keep = (2, 3) if n >= cfg["big_n"] else (cfg["warm"], cfg["keep"])
    short = _stochtree_wall(X, y, warm, threads)
    long = _stochtree_wall(X, y, warm + keep, threads)
    import stochtree

    return {"n": n, "threads": threads, "s_per_sweep": (long - short) / keep, "short_s": short, "long_s": long,
            "version": getattr(stochtree, "__version__", "?")}


def _real_package():
    """The package imported for real (its ``__init__``, PyMC and all) from this checkout: ``(pm, pmt, notes)``, or
    ``(None, None, reason)`` when PyMC does not import. matplotlib (only the plots need it) is stubbed when
    missing, and said so in ``notes``."""
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack  # as in child_gpu: numba-cuda on the GPU machine registers np.row_stack
    sys.path.insert(0, str(ROOT))
    try:
        import pymc as pm
    except Exception as e:  # noqa: BLE001
        return None, None, f"pymc not importable: {e!r}"[:300]
    notes = []
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError:
        mpl, fig = types.ModuleType("matplotlib"), types.ModuleType("matplotlib.figure")
        fig.Figure = type("Figure", (), {})
        mpl.figure = fig
        sys.modules.update({"matplotlib": mpl, "matplotlib.figure": fig})
        notes.append("matplotlib missing: stubbed (plots unused)")
    import pymc_treesamplers as pmt

    return pm, pmt, "; ".join(notes)


def _pm_fit(pm, pmt, X, y, m, backend, threads, tune, draws, seed):
    """Build the model and the steps, run ``pm.sample``; wall times and the BART step's per-draw times."""
    t0 = time.perf_counter()
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=m)
        sigma = pm.HalfNormal("sigma", float(np.std(y)))
        pm.Normal("y", mu, sigma, observed=y)
        t1 = time.perf_counter()
        if backend == "cgm-cuda":
            tree = pmt.CGMStep([mu], backend="cuda")
        elif backend == "cuda":
            tree = pmt.GrowPruneStep([mu], backend="cuda")
        else:
            tree = pmt.GrowPruneStep([mu], threads=threads)
        t2 = time.perf_counter()
        per_draw = []
        astep = tree.astep

        def timed(q0):
            t = time.perf_counter()
            out = astep(q0)
            per_draw.append(time.perf_counter() - t)
            return out

        tree.astep = timed
        idata = pm.sample(tune=tune, draws=draws, chains=1, cores=1, random_seed=seed, progressbar=False,
                          compute_convergence_checks=False, step=[tree, pmt.NormalScaleGibbs([sigma])])
        t3 = time.perf_counter()
    return idata, {"model_s": t1 - t0, "step_s": t2 - t1, "sample_s": t3 - t2, "total_s": t3 - t0,
                   "astep_s": per_draw}


def child_pmsample(n, backend, cfg):
    pm, pmt, notes = _real_package()
    if pm is None:
        return {"n": n, "backend": backend, "skipped": notes}
    X, y = friedman1(n)
    m, tune, draws = cfg["m"], cfg["pm_tune"], cfg["pm_draws"]
    threads = cfg["pm_threads"]
    t = time.perf_counter()
    Xw, yw = friedman1(min(1000, n), seed=SEED + 1)
    _pm_fit(pm, pmt, Xw, yw, m, backend, threads, 1, 1, SEED)  # compiles the kernels (not timed below)
    warm = time.perf_counter() - t
    idata, times = _pm_fit(pm, pmt, X, y, m, backend, threads, tune, draws, SEED)
    steps = times.pop("astep_s")
    post = idata.posterior
    rmse = float(np.sqrt(np.mean((post["mu"].values[0].mean(axis=0) - y) ** 2)))
    pred = pmt.predict(idata, X[:1000], "mu", draws=[draws - 1])[0]  # the last draw's stored forest, reread
    out = {"n": n, "backend": backend, "m": m, "tune": tune, "draws": draws,
           "threads": threads if backend == "cpu" else None, "warmup_s": warm, **times,
           "s_per_draw_median": float(np.median(steps[1:])) if len(steps) > 1 else None,
           "first_draw_s": steps[0] if steps else None, "astep_s": steps,
           "sigma_mean": float(post["sigma"].mean()), "train_rmse_of_mean": rmse,
           "mean_leaves_per_tree": float(idata.sample_stats["mu_n_leaves"].values.mean()),
           "predict_vs_trace": float(np.abs(pred - post["mu"].values[0, -1, :1000]).max()),
           "pymc": pm.__version__, "notes": notes}
    if backend.endswith("cuda"):
        from numba import cuda

        simulator = bool(os.environ.get("NUMBA_ENABLE_CUDASIM"))
        out["device"] = "simulator" if simulator else str(cuda.get_current_device().name)
    else:
        out["threading_layer"] = _threading_layer()
    return out


# ------------------------------------------------------------------------------------------- parent
def _run_child(args, cfg, quick, timeout, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(args)] + (["--quick"] if quick else [])
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s", "args": args}
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        return {"error": (proc.stderr or proc.stdout)[-1500:], "args": args, "rc": proc.returncode}
    out = json.loads(line[7:])
    out["wall_s"] = time.perf_counter() - t
    return out


def _attach_bartz(res, path):
    if not path:
        return
    try:
        prev = json.loads(Path(path).read_text())
        res["bartz_from"] = {"file": str(path), "when": prev.get("meta", {}).get("when"),
                             "bartz": prev.get("bartz", [])}
    except Exception as e:  # noqa: BLE001
        res["bartz_from"] = {"file": str(path), "error": repr(e), "bartz": []}


def _bartz_by_n(res):
    """bartz's cells by n: this run's, else those of ``--bartz-from``."""
    own = {r.get("n"): r for r in res.get("bartz", []) if "error" not in r}
    if own:
        return own, "this run"
    prev = {r.get("n"): r for r in res.get("bartz_from", {}).get("bartz", []) if "error" not in r}
    return prev, res.get("bartz_from", {}).get("file", "")


def _ratios(res):
    bz, _ = _bartz_by_n(res)
    out = {}
    for r in res.get("gpu", []):
        b = bz.get(r.get("n"), {})
        if "error" not in r and b.get("s_per_sweep"):
            out[str(r["n"])] = r["s_per_sweep"] / b["s_per_sweep"]
    return out


def _markdown(res):
    bz, source = _bartz_by_n(res)
    lines = [f"# GPU sweep benchmark ({res['meta']['when']}, {'quick' if res['meta']['quick'] else 'full'})", "",
             f"Friedman #1, p = {P}, m = {res['meta']['m']}, {res['meta']['warm']} warm-up + {res['meta']['keep']} "
             "kept sweeps, median s per sweep." + (f" bartz figures from {source}." if bz else ""), "",
             "| n | ours (GPU) s/sweep | us/tree | driver | ours GPU MB (used / state) | bartz s/sweep | bartz peak MB "
             "| ours / bartz |",
             "|---|---|---|---|---|---|---|---|"]
    for r in res.get("gpu", []):
        if "error" in r:
            lines.append(f"| {r['args'][1]} | error | | | | | | |")
            continue
        b = bz.get(r["n"], {})
        ratio = f"{r['s_per_sweep'] / b['s_per_sweep']:.2f}x" if b.get("s_per_sweep") else "n/a"
        bs = f"{b['s_per_sweep']:.4f}" if b else "n/a"
        bm = f"{b['peak_mem_mb']:.0f}" if b.get("peak_mem_mb") else "n/a"
        drv = f"{r.get('mode', '?')} {r.get('kernel', '')} ({r.get('blocks', '?')}x{r.get('threads_per_block', '?')})"
        lines.append(f"| {r['n']:.0e} | {r['s_per_sweep']:.4f} | {r.get('us_per_tree', float('nan')):.1f} | {drv} | "
                     f"{r['gpu_mem_used_mb']:.0f} / {r['state_mb']:.0f} | {bs} | {bm} | {ratio} |")
    notes = sorted({r.get("mode_note") for r in res.get("gpu", []) if r.get("mode_note")})
    lines += [f"\nDriver note: {x}" for x in notes]
    var = [(r["n"], v) for r in res.get("gpu", []) if "s_per_sweep" in r for v in r.get("variants", [])]
    if var:
        lines += ["", "Variants (same device, same process; 2 warm-up, 3 timed sweeps):", "",
                  "| n | variant | blocks | s/sweep |", "|---|---|---|---|"]
        lines += [f"| {n:.0e} | {v['variant']} | {v.get('blocks', '')} | "
                  + (f"{v['s_per_sweep']:.4f}" if "s_per_sweep" in v else f"error {v.get('error', '')[-80:]!r}") + " |"
                  for n, v in var]
    cpu = [r for r in res.get("cpu", []) if "error" not in r]
    st = {(r["n"], r["threads"]): r["s_per_sweep"] for r in res.get("stochtree", []) if "error" not in r}
    if cpu:
        layer = cpu[-1]["threading_layer"]
        lines += ["", f"CPU sweep (this package, GrowPrune; threading layer {layer}) and stochtree's grow/prune "
                  "sweep on the same threads:", "",
                  "| n | threads | s/sweep | speed-up over 1 thread | stochtree s/sweep | ours / stochtree |",
                  "|---|---|---|---|---|---|"]
        for r in sorted(cpu, key=lambda q: (q["n"], q["threads"])):
            one = next((q["s_per_sweep"] for q in cpu if q["n"] == r["n"] and q["threads"] == 1), None)
            sp = f"{one / r['s_per_sweep']:.2f}" if one else "n/a"
            b = st.get((r["n"], r["threads"]))
            lines.append(f"| {r['n']:.0e} | {r['threads']} | {r['s_per_sweep']:.4g} | {sp} | "
                         + (f"{b:.4g} | {r['s_per_sweep'] / b:.2f} |" if b else "n/a | n/a |"))
    rows = [r for r in res.get("rows", []) if "error" not in r]
    if rows:
        names = ("ranges_suff", "add_ranges", "split_suff")
        if all("add_ranges_forest" in r["s_per_call"] for r in rows):  # runs since issue 60: a tree each in turn
            names = (*names, "add_ranges_forest")
        lines += ["", "The sweep's row passes alone (a tree of 3 leaves of random thirds of the rows; "
                  "add_ranges_forest: per tree, each of many trees in turn), median s per call, and the speed-up "
                  "over 1 thread:", "",
                  "| n | threads | " + " | ".join(names) + " | speed-ups |", "|---" * (len(names) + 3) + "|"]
        for r in sorted(rows, key=lambda q: (q["n"], q["threads"])):
            one = next((q["s_per_call"] for q in rows if q["n"] == r["n"] and q["threads"] == 1), None)
            sp = " / ".join(f"{one[k] / r['s_per_call'][k]:.2f}" for k in names) if one else "n/a"
            lines.append(f"| {r['n']:.0e} | {r['threads']} | "
                         + " | ".join(f"{r['s_per_call'][k]:.3g}" for k in names) + f" | {sp} |")
    pms = res.get("pmsample", [])
    if pms:
        lines += ["", "Whole pm.sample (chains=1, cores=1; tune + draws; sigma by NormalScaleGibbs); seconds, after a "
                  "warm-up fit in the same process:", "",
                  "| n | backend | build step s | pm.sample s | median s per draw (BART step) | first draw s "
                  "| warm-up s | predict vs trace |", "|---|---|---|---|---|---|---|---|"]
        for r in pms:
            if "error" in r or "skipped" in r:
                lines.append(f"| {r.get('n', r.get('args', ['', '?'])[1])} | {r.get('backend', '')} | "
                             f"{'skipped: ' + r['skipped'] if 'skipped' in r else 'error'} | | | | | |")
                continue
            be = r["backend"] + (f" ({r['device']})" if r.get("device") else f" ({r['threads']} threads)")
            lines.append(f"| {r['n']:.0e} | {be} | {r['step_s']:.2f} | {r['sample_s']:.2f} | "
                         f"{r['s_per_draw_median']:.4f} | {r['first_draw_s']:.2f} | {r['warmup_s']:.1f} | "
                         f"{r['predict_vs_trace']:.1e} |")
    errs = [r for sec in ("gpu", "bartz", "rows", "cpu", "stochtree", "pmsample") for r in res.get(sec, [])
            if "error" in r]
    if errs:
        lines += ["", "Errors:", ""] + [f"* {e['args']}: {e['error'][-300:]!r}" for e in errs]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sections", default="gpu,bartz,cpu")
    ap.add_argument("--bartz-from", default=None, help="an earlier gpu.json whose bartz figures to compare with")
    ap.add_argument("--render", default=None, help="only re-render an earlier gpu.json (with --bartz-from) into --out")
    ap.add_argument("--limit", default="", help="section time limits in seconds, e.g. cpu=240,stochtree=150")
    ap.add_argument("--pm-backends", default="", help="only these pmsample cells, e.g. cuda,cgm-cuda")
    ap.add_argument("--child")
    a = ap.parse_args()
    cfg = dict(QUICK if a.quick else FULL)
    cfg["limit_s"] = dict(cfg["limit_s"])
    for item in filter(None, a.limit.split(",")):
        name, secs = item.split("=")
        cfg["limit_s"][name] = float(secs)
    if a.pm_backends:
        cfg["pmsample"] = [c for c in cfg["pmsample"] if c[1] in a.pm_backends.split(",")]
    if a.child:
        args = json.loads(a.child)
        kind = args[0]
        out = {"gpu": lambda: child_gpu(args[1], cfg), "bartz": lambda: child_bartz(args[1], cfg),
               "cpu": lambda: child_cpu(args[1], args[2], cfg),
               "stochtree": lambda: child_stochtree(args[1], args[2], cfg),
               "rows": lambda: child_rows(args[1], args[2], cfg),
               "pmsample": lambda: child_pmsample(args[1], args[2], cfg)}[kind]()
        print("RESULT " + json.dumps(out), flush=True)
        return
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if a.render:
        res = json.loads(Path(a.render).read_text())
        _attach_bartz(res, a.bartz_from)
        res["ratios"] = _ratios(res)
        (out_dir / "gpu.json").write_text(json.dumps(res, indent=1))
        (out_dir / "gpu.md").write_text(_markdown(res))
        print(_markdown(res))
        return
    # one numba cache for all children (compiled once, loaded by the later ones), outside --out
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "pmt-gpu-bench-numba"))
    res = {"meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "quick": a.quick, "m": cfg["m"], "warm": cfg["warm"],
                    "keep": cfg["keep"], "python": sys.version.split()[0], "cpus": os.cpu_count()}}
    gpu_env = {}
    if a.quick:
        try:
            from numba import cuda

            if not cuda.is_available():
                gpu_env = {"NUMBA_ENABLE_CUDASIM": "1"}
        except Exception:
            gpu_env = {"NUMBA_ENABLE_CUDASIM": "1"}
    res["meta"]["gpu_env"] = gpu_env
    _attach_bartz(res, a.bartz_from)

    def save():
        res["ratios"] = _ratios(res)
        (out_dir / "gpu.json").write_text(json.dumps(res, indent=1))
        (out_dir / "gpu.md").write_text(_markdown(res))

    for section in a.sections.split(","):
        start = time.perf_counter()
        res[section] = []
        try:
            cells = ([(section, *c) for c in cfg[section]] if section in ("cpu", "stochtree", "pmsample", "rows")
                     else [(section, n) for n in cfg[section]])
            for args in cells:
                left = cfg["limit_s"][section] - (time.perf_counter() - start)
                if left < 5:
                    res[section].append({"error": "section time budget spent", "args": list(args)})
                    continue
                env = gpu_env if section == "gpu" or (section == "pmsample" and args[2].endswith("cuda")) else None
                r = _run_child(list(args), cfg, a.quick, min(cfg.get(f"{section}_cell_s", cfg["cell_s"]), left), env)
                res[section].append(r)
                print(section, args, {k: v for k, v in r.items() if k not in ("sweeps_s",)}, flush=True)
                save()
        except Exception as e:  # noqa: BLE001 - a section never stops the others
            res[section].append({"error": repr(e), "args": [section]})
        save()
    print(_markdown(res))


if __name__ == "__main__":
    main()
