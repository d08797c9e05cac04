"""Friedman #1 benchmark: pymc-treesamplers vs pymc-bart vs stochtree.

    python -m benchmarks.friedman [--quick] [--out docs/benchmarks.md]
        [--samplers growprune,cgm,pymc-bart,stochtree] [--sizes 1000,10000]  (also: pg, ct-h0.25/0.5/1/2)
        [--trees 50,200] [--reuse [--rerun-contended]] [--cores 2] [--seed 1234]
        [--shorten SAMPLER:N:M:TUNE:DRAWS] [--no-reduce] [--timeout-min 90]

Typical use once pymc_treesamplers works (reference rows are reused from
benchmarks/results/ instead of rerun):

    python -m benchmarks.friedman --reuse
    python -m benchmarks.friedman --samplers growprune --sizes 10000 --trees 200 --out /tmp/gp.md

Problem: y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 + N(0, 1) with 10
iid U(0, 1) covariates (x6..x10 are noise).  Test set: 1000 fresh rows (noise-free
f); the first 25 of them are the fixed points used for the ESS of f.

Every (sampler, n, m) configuration runs in its own child process
(``python -m benchmarks.friedman --worker SPEC``) which writes its numbers as
JSON; the parent polls the memory of the child's process tree (psutil), collects
the JSON, saves it under ``benchmarks/results/`` and writes a markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from benchmarks.common import (
    dump_json,
    fit_metrics,
    fmt,
    friedman1_data,
    git_state,
    machine_info,
    md_table,
    own_cpu_s,
    package_versions,
    run_child,
    tail,
    utc_now,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"

ALL_SAMPLERS = ["growprune", "cgm", "pg", "ct-h0.25", "ct-h0.5", "ct-h1", "ct-h2", "pymc-bart", "stochtree"]
DEFAULT_SAMPLERS = ["growprune", "cgm", "pymc-bart", "stochtree"]
PYMC_ARMS = set(ALL_SAMPLERS) - {"stochtree"}
REFERENCES = ["pymc-bart", "stochtree"]
LABELS = {
    "growprune": "pmt GrowPrune",
    "cgm": "pmt CGM",
    "pg": "pmt PG (10 particles)",
    **{f"ct-h{h}": f"pmt CTBirthDeath (horizon {h})" for h in ("0.25", "0.5", "1", "2")},
    "pymc-bart": "pymc-bart (PGBART)",
    "stochtree": "stochtree (GP MCMC)",
}

CONTENTION_WARN_CORES = 0.3
N_TEST = 1000
N_ESS = 25
DEFAULT_SEED = 1234

# Full-length runs that would take far longer than ~25 min can be run shorter
# and extrapolated (clearly marked in the table).  Key: (sampler, n, m) ->
# (tune, draws) actually run.  Only applied to the default full-length settings
# (1000 + 1000, not --quick); add entries with --shorten, disable with --no-reduce.
# Empty by default: measured on the 2-core reference machine, pymc-bart 0.13.1
# (Rust backend) needs ~100 ms per iteration per chain at n=10000, m=200, i.e.
# ~3.5 min for 2x(1000+1000) with parallel chains, well inside the budget.
REDUCED_RUNS: dict[tuple[str, int, int], tuple[int, int]] = {}


# =========================================================================== worker side


def _sample_stats_timing(idata) -> dict:
    """Per-step wall time recorded by a step method as a ``time`` sampler stat (pymc-bart does)."""
    out = {}
    try:
        ss = idata.sample_stats
        if "time" in ss:
            t = np.asarray(ss["time"].values, dtype=float)
            out["step_time_ms_median"] = float(np.median(t) * 1e3)
            out["step_time_ms_mean"] = float(np.mean(t) * 1e3)
    except Exception:  # pragma: no cover - optional information
        pass
    return out


def _pymc_bart_f_draws(mu_rv, idata, X_train, X_test):
    """Draw-matched pymc-bart predictions at X_test, shape (chain, draw, n_test).

    pymc-bart 0.13's public prediction route (pm.set_data + sample_posterior_predictive,
    i.e. BARTRV.rng_fn -> utils._sample_posterior) picks *random* posterior draws
    (rng.integers), so the draws are not in chain order and ESS cannot be computed
    from them.  We use the per-chain tree histories it keeps on the op instead
    (``op.all_trees`` -> ``pymc_bart.utils._get_posterior_sampler`` ->
    ``PosteriorSampler.sample_posterior(X, draw_indices, excluded)``) with
    draw_indices = 0..D-1.  ``op.all_trees`` is a multiprocessing.Manager list
    appended by each chain process when it finishes, i.e. in completion order, not
    chain order; we match every history to its chain by comparing its in-sample
    predictions with the stored posterior ``mu`` (sum of trees at the training X).
    """
    from pymc_bart.utils import _get_posterior_sampler

    op = mu_rv.owner.op
    multi = _get_posterior_sampler(op)
    samplers = list(multi._chain_samplers)
    post_mu = np.asarray(idata.posterior["mu"].values)  # (chain, draw, n_train)
    C, D = post_mu.shape[:2]
    if len(samplers) != C:
        raise RuntimeError(f"pymc-bart kept {len(samplers)} tree histories for {C} chains")
    k_rows = min(200, X_train.shape[0])
    Xc = np.ascontiguousarray(X_train[:k_rows], dtype=np.float64)
    chk = sorted({0, D // 2, D - 1})
    chain_of = {}
    match_err = []
    for k, s in enumerate(samplers):
        if s.n_draws != D:
            raise RuntimeError(f"tree history {k} has {s.n_draws} draws, posterior has {D}")
        p = np.asarray(s.sample_posterior(Xc, chk, None))[:, 0, :]
        errs = [float(np.max(np.abs(p - post_mu[c, chk, :k_rows]))) for c in range(C)]
        c = int(np.argmin(errs))
        chain_of[c] = k
        match_err.append(errs[c])
    if sorted(chain_of) != list(range(C)) or max(match_err) > 1e-6 * max(1.0, np.abs(post_mu).max()):
        raise RuntimeError(f"could not match pymc-bart tree histories to chains: {chain_of}, errors {match_err}")
    Xt = np.ascontiguousarray(X_test, dtype=np.float64)
    f = np.stack(
        [np.asarray(samplers[chain_of[c]].sample_posterior(Xt, list(range(D)), None))[:, 0, :] for c in range(C)]
    )
    info = {"history_order_for_chains": [chain_of[c] for c in range(C)], "chain_match_max_abs_err": max(match_err)}
    return f, info


def _run_pymc_arm(spec, X, y, X_test):
    import pymc as pm

    sampler = spec["sampler"]
    if sampler == "pymc-bart":
        import pymc_bart as bart_pkg
    else:
        try:
            import pymc_treesamplers as bart_pkg
        except Exception as exc:  # ImportError, or the package is half written
            return {
                "status": "import-error",
                "error": f"`import pymc_treesamplers` failed: {type(exc).__name__}: {exc}",
            }
        missing = [a for a in ("BART", "GrowPruneStep", "CGMStep", "predict") if not hasattr(bart_pkg, a)]
        if missing:
            return {
                "status": "import-error",
                "error": f"pymc_treesamplers imports but has no {', '.join(missing)} yet (package unfinished?)",
            }

    t0 = time.perf_counter()
    with pm.Model():
        mu = bart_pkg.BART("mu", X, y, m=spec["m"])
        # Same sigma prior for all PyMC arms; NUTS is assigned to sigma by pm.sample.
        sigma = pm.HalfNormal("sigma", float(y.std()))
        pm.Normal("y", mu, sigma, observed=y)
        if sampler == "pymc-bart":
            step = None  # pymc-bart's default: PGBART for mu (registered by bartrs)
        elif sampler == "growprune":
            step = [bart_pkg.GrowPruneStep([mu])]
        elif sampler == "cgm":
            step = [bart_pkg.CGMStep([mu])]
        elif sampler == "pg":
            step = [bart_pkg.PGBARTStep([mu])]
        elif sampler.startswith("ct-h"):
            step = [bart_pkg.CTBirthDeathStep([mu], horizon=float(sampler[4:]))]
        else:  # pragma: no cover
            raise ValueError(sampler)
        idata = pm.sample(
            tune=spec["tune"],
            draws=spec["draws"],
            chains=spec["chains"],
            cores=spec["cores"],
            random_seed=spec["seed"],
            step=step,
            progressbar=False,
            compute_convergence_checks=False,
        )
    wall = time.perf_counter() - t0

    sigma = np.asarray(idata.posterior["sigma"].values)
    t1 = time.perf_counter()
    extra = {}
    if sampler == "pymc-bart":
        f_test, extra = _pymc_bart_f_draws(mu, idata, X, X_test)
    else:
        f_test = np.asarray(bart_pkg.predict(idata, X_test, "mu"))
    predict_s = time.perf_counter() - t1
    expected = (spec["chains"], spec["draws"], X_test.shape[0])
    if f_test.shape != expected:
        raise RuntimeError(f"predictions have shape {f_test.shape}, expected {expected}")
    sampling_time = idata.posterior.attrs.get("sampling_time")
    out = {
        "status": "ok",
        "wall_s": wall,
        "sampling_s": float(sampling_time) if sampling_time is not None else None,
        "predict_s": predict_s,
        "parallel_chains": spec["cores"] > 1 and spec["chains"] > 1,
        **_sample_stats_timing(idata),
        **extra,
    }
    return out, sigma, f_test


def _run_stochtree(spec, X, y, X_test):
    from stochtree import BARTModel

    chains, tune, draws = spec["chains"], spec["tune"], spec["draws"]
    general = {"num_chains": chains, "random_seed": spec["seed"], "num_threads": spec["threads"]}
    forest = {"num_trees": spec["m"]}
    t0 = time.perf_counter()
    model = BARTModel()
    model.sample(
        X_train=X,
        y_train=y,
        num_gfr=0,  # no grow-from-root warm start: grow/prune MCMC from root only
        num_burnin=tune,
        num_mcmc=draws,
        general_params=general,
        mean_forest_params=forest,
    )
    wall = time.perf_counter() - t0
    t1 = time.perf_counter()
    pred = np.asarray(model.predict(X_test, terms="y_hat", type="posterior"))  # (n_test, chains*draws)
    predict_s = time.perf_counter() - t1
    # num_chains > 1: samples of all chains are stored consecutively (chain 1 first).
    f_test = pred.reshape(X_test.shape[0], chains, draws).transpose(1, 2, 0)
    sigma = np.sqrt(np.asarray(model.global_var_samples)).reshape(chains, draws)
    out = {
        "status": "ok",
        "wall_s": wall,
        "sampling_s": wall,
        "predict_s": predict_s,
        "parallel_chains": False,
        "stochtree_params": {"general_params": general, "mean_forest_params": forest, "num_gfr": 0},
        "stochtree_sample_sigma2_leaf": bool(getattr(model, "sample_sigma2_leaf", False)),
    }
    return out, sigma, f_test


def worker_main(spec_json: str) -> int:
    """Child process: fit one configuration, write its numbers to spec['out_json']."""
    import resource

    spec = json.loads(spec_json)
    out_json = Path(spec["out_json"])
    result = {"spec": {k: v for k, v in spec.items() if not k.startswith("out_")}}
    try:
        X, y, _, X_test, f_test_true = friedman1_data(spec["n"], spec["seed"], n_test=N_TEST)
        result["data_check"] = {
            "y_mean": float(y.mean()),
            "y_sd": float(y.std()),
            "f_test_sd": float(f_test_true.std()),
        }
        if spec["sampler"] == "stochtree":
            res = _run_stochtree(spec, X, y, X_test)
        else:
            res = _run_pymc_arm(spec, X, y, X_test)
        if isinstance(res, dict):  # import error of our package
            result.update(res)
        else:
            info, sigma, f_test = res
            result.update(info)
            metrics = fit_metrics(sigma, f_test, f_test_true, np.arange(N_ESS), info["wall_s"])
            post_mean_f = metrics.pop("_post_mean_f")
            ess_f = metrics.pop("_ess_f")
            result.update(metrics)
            if spec.get("out_npz"):
                Path(spec["out_npz"]).parent.mkdir(parents=True, exist_ok=True)
                np.savez_compressed(
                    spec["out_npz"],
                    sigma=sigma,
                    f_ess_points=f_test[:, :, :N_ESS],
                    post_mean_f_test=post_mean_f,
                    ess_bulk_f=ess_f,
                )
    except Exception as exc:
        result.update({"status": "error", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        traceback.print_exc()
    ru_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB on Linux
    ru_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    result["maxrss_self_mb"] = ru_self
    result["maxrss_children_mb"] = ru_children  # largest single (waited-for) child, e.g. one chain process
    result["own_cpu_s"] = own_cpu_s()  # whole worker incl. imports, prediction and ESS
    dump_json(result, out_json)
    print(f"worker done: status={result.get('status')}", flush=True)
    return 0


# =========================================================================== parent side


def plan_iters(sampler: str, n: int, m: int, args) -> tuple[int, int, bool]:
    """(tune, draws, reduced) actually run for this configuration."""
    if (
        not args.quick
        and not args.no_reduce
        and args.tune == 1000
        and args.draws == 1000
        and (sampler, n, m) in REDUCED_RUNS
    ):
        t, d = REDUCED_RUNS[(sampler, n, m)]
        return t, d, True
    return args.tune, args.draws, False


def config_key(sampler, n, m, tune, draws, args) -> str:
    par = f"cores{args.cores}" if sampler in PYMC_ARMS else f"threads{args.stochtree_threads}"
    return f"{sampler}_n{n}_m{m}_c{args.chains}_t{tune}_d{draws}_{par}_seed{args.seed}"


def results_dir(args) -> Path:
    d = Path(args.results_dir)
    return d / "quick" if args.quick else d


def run_config(sampler, n, m, args) -> dict:
    tune, draws, reduced = plan_iters(sampler, n, m, args)
    key = config_key(sampler, n, m, tune, draws, args)
    rdir = results_dir(args)
    saved = rdir / f"{key}.json"
    if args.reuse and saved.exists():
        res = json.loads(saved.read_text())
        contended = (res.get("other_load_cores") or 0.0) > CONTENTION_WARN_CORES
        if not (args.rerun_contended and contended):
            res["_source"] = "reused"
            print(f"  reusing {saved.relative_to(ROOT) if saved.is_relative_to(ROOT) else saved}", file=sys.stderr)
            return res
        print("  saved result was measured on a busy machine: rerunning", file=sys.stderr)

    spec = {
        "sampler": sampler,
        "n": n,
        "m": m,
        "tune": tune,
        "draws": draws,
        "chains": args.chains,
        "cores": args.cores,
        "threads": args.stochtree_threads,
        "seed": args.seed,
        "reduced_from": [args.tune, args.draws] if reduced else None,
    }
    with tempfile.TemporaryDirectory(prefix="friedman_") as tmp:
        spec["out_json"] = str(Path(tmp) / "result.json")
        spec["out_npz"] = str(rdir / f"{key}.npz")
        cmd = [sys.executable, "-m", "benchmarks.friedman", "--worker", json.dumps(spec)]
        env = dict(os.environ)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(var, "1")  # no BLAS oversubscription on top of the chain processes
        log = rdir / "logs" / f"{key}.log"
        mon = run_child(cmd, log, timeout_s=args.timeout_min * 60, env=env, cwd=ROOT)
        out_json = Path(spec["out_json"])
        if out_json.exists():
            res = json.loads(out_json.read_text())
        else:
            res = {"spec": {k: v for k, v in spec.items() if not k.startswith("out_")}, "status": "error"}
            why = "timed out" if mon["timed_out"] else f"child exited with code {mon['returncode']}"
            res["error"] = f"{why}; log tail:\n{tail(log)}"
    res.update(mon)
    # average number of cores used by *other* processes while this configuration ran
    ours = max(res.get("own_cpu_s") or 0.0, mon["tree_cpu_s_polled"]) + mon["parent_cpu_s"]
    res["other_load_cores"] = max(0.0, (mon["machine_busy_cpu_s"] - ours) / mon["elapsed_s"])
    res["key"] = key
    res["measured_at"] = utc_now()
    res["machine"] = machine_info()
    res["versions"] = package_versions()
    res["git"] = git_state(ROOT)
    res["log"] = str(log)
    res["_source"] = "run"
    if res.get("status") == "ok":
        tosave = {k: v for k, v in res.items() if not k.startswith("_")}
        dump_json(tosave, saved)
    else:
        npz = Path(spec["out_npz"])
        if npz.exists():
            npz.unlink()
    return res


def load_saved(sampler, n, m, args) -> dict | None:
    tune, draws, _ = plan_iters(sampler, n, m, args)
    p = results_dir(args) / f"{config_key(sampler, n, m, tune, draws, args)}.json"
    if p.exists():
        res = json.loads(p.read_text())
        res["_source"] = "saved"
        return res
    return None


# --------------------------------------------------------------------------- derived numbers


def derived(res: dict, args) -> dict:
    """Table numbers for one result, incl. extrapolation of reduced runs."""
    spec = res["spec"]
    it = spec["tune"] + spec["draws"]
    chains = spec["chains"]
    parallel = bool(res.get("parallel_chains"))
    wall = res["wall_s"]
    d = {"wall_s": wall, "mode": "par" if parallel else "seq", "extrapolated": False}
    rf = spec.get("reduced_from")
    if rf:  # shortened run: extrapolate the wall time to the full length
        full_it = rf[0] + rf[1]
        samp = res.get("sampling_s") or wall
        setup = max(0.0, wall - samp)
        d["wall_s"] = setup + samp * full_it / it
        d["extrapolated"] = True
        d["measured_wall_s"] = wall
        d["measured_setup_s"] = setup
        d["measured_sampling_s"] = samp
        it = full_it
    if parallel:
        rounds = math.ceil(chains / max(1, spec.get("cores", 1)))
        d["ms_per_sweep"] = d["wall_s"] / (rounds * it) * 1e3
    else:
        d["ms_per_sweep"] = d["wall_s"] / (chains * it) * 1e3
    return d


def markdown_report(results: list[dict], args, argv: list[str]) -> str:
    refs = {}
    for r in results:
        if r.get("status") == "ok" and r["spec"]["sampler"] in REFERENCES:
            refs[(r["spec"]["sampler"], r["spec"]["n"], r["spec"]["m"])] = derived(r, args)["wall_s"], r["rmse_test"]

    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b

    headers = [
        "sampler",
        "n",
        "m",
        "iterations run",
        "wall s",
        "ms / sweep",
        "ESS/s σ",
        "min ESS/s f",
        "test RMSE",
        "mean σ",
        "peak mem MB",
        "wall ÷ pymc-bart",
        "wall ÷ stochtree",
        "RMSE ÷ pymc-bart",
        "RMSE ÷ stochtree",
        "notes",
    ]
    rows = []
    footnotes = []
    for r in results:
        spec = r["spec"]
        s, n, m = spec["sampler"], spec["n"], spec["m"]
        label = LABELS.get(s, s)
        iters = f"{spec['chains']}×({spec['tune']}+{spec['draws']})"
        notes = []
        if r.get("_source") == "reused":
            notes.append(f"reused saved result ({r.get('measured_at', '?')})")
        elif r.get("_source") == "saved":
            notes.append(f"saved result, not rerun ({r.get('measured_at', '?')})")
        if r.get("status") != "ok":
            err = (r.get("error") or r.get("status") or "failed").splitlines()[0]
            rows.append([label, n, m, iters] + ["—"] * 11 + [f"**{r.get('status')}**: {err}"])
            continue
        d = derived(r, args)
        wall_cell = fmt(d["wall_s"])
        if d["extrapolated"]:
            mark = "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(ch)] for ch in str(len(footnotes) + 1))
            wall_cell = f"≈{wall_cell} (est.){mark}"
            footnotes.append(
                f"{mark} {label}, n={n}, m={m}: the full {spec['chains']}×({spec['reduced_from'][0]}+"
                f"{spec['reduced_from'][1]}) run would exceed the time budget, so {iters} was run: "
                f"{fmt(d['measured_wall_s'])} s wall ({fmt(d['measured_setup_s'])} s model build/compile + "
                f"{fmt(d['measured_sampling_s'])} s sampling). Wall time (and ms/sweep from it) is extrapolated as "
                f"build + sampling × {sum(spec['reduced_from'])}/{spec['tune'] + spec['draws']}; ESS/s (ESS of the "
                f"{spec['chains']}×{spec['draws']} draws ÷ measured wall), RMSE and σ are measured on the shorter run."
            )
            notes.append(f"shortened run{mark}")
        other = r.get("other_load_cores")
        if other is not None and other > CONTENTION_WARN_CORES:
            notes.append(f"⚠ other processes used {other:.1f} cores on average during this run: timings inflated")
        rp = refs.get(("pymc-bart", n, m), (None, None))
        rs = refs.get(("stochtree", n, m), (None, None))
        mem = r.get("peak_pss_sum_mb")
        rows.append(
            [
                label,
                n,
                m,
                iters,
                wall_cell,
                f"{fmt(d['ms_per_sweep'])} ({d['mode']})",
                fmt(r["ess_per_s_sigma"]),
                fmt(r["min_ess_per_s_f"]),
                fmt(r["rmse_test"]),
                fmt(r["sigma_mean"]),
                fmt(mem),
                fmt(ratio(d["wall_s"], rp[0])) if s != "pymc-bart" else "1",
                fmt(ratio(d["wall_s"], rs[0])) if s != "stochtree" else "1",
                fmt(ratio(r["rmse_test"], rp[1])) if s != "pymc-bart" else "1",
                fmt(ratio(r["rmse_test"], rs[1])) if s != "stochtree" else "1",
                "; ".join(notes),
            ]
        )

    dheaders = [
        "sampler",
        "n",
        "m",
        "measured",
        "wall s (as run)",
        "sampling s",
        "predict s",
        "BART step ms (sampler stat `time`, median)",
        "bulk ESS σ",
        "min / median bulk ESS f",
        "R-hat σ / max R-hat f",
        "σ mean per chain",
        "corr of chains' σ traces",
        "peak PSS / RSS sum MB",
        "max RSS one proc MB",
        "other procs' load (cores)",
    ]
    drows = []
    for r in results:
        if r.get("status") != "ok":
            continue
        spec = r["spec"]
        drows.append(
            [
                LABELS.get(spec["sampler"], spec["sampler"]),
                spec["n"],
                spec["m"],
                r.get("measured_at", "?"),
                fmt(r["wall_s"]),
                fmt(r.get("sampling_s")),
                fmt(r.get("predict_s")),
                fmt(r.get("step_time_ms_median")),
                fmt(r["ess_bulk_sigma"]),
                f"{fmt(r['ess_bulk_f_min'])} / {fmt(r['ess_bulk_f_median'])}",
                f"{fmt(r.get('rhat_sigma'))} / {fmt(r.get('rhat_f_max'))}",
                ", ".join(fmt(v) for v in r["sigma_mean_per_chain"]),
                fmt(r.get("sigma_chain_corr")),
                f"{fmt(r.get('peak_pss_sum_mb'))} / {fmt(r.get('peak_rss_sum_mb'))}",
                fmt(max(r.get("maxrss_self_mb", 0), r.get("maxrss_children_mb", 0))),
                fmt(r.get("other_load_cores")),
            ]
        )

    mi = machine_info()
    vers = package_versions()
    vtxt = ", ".join(f"{k} {v}" for k, v in vers.items() if v) or "?"
    missing = [k for k, v in vers.items() if not v]
    sizes = sorted({r["spec"]["n"] for r in results})
    title = "Friedman #1 benchmark" + (" (--quick smoke test)" if args.quick else "")
    lines = [
        f"# {title}",
        "",
        f"Generated {utc_now()} by `python -m benchmarks.friedman {' '.join(shlex.quote(a) for a in argv)}`.",
        "",
        f"* Machine: {mi['nproc']} CPUs ({mi['cpu_model']}), {mi['ram_gb']} GB RAM, "
        f"Python {mi['python']}, {mi['platform']}.",
        f"* Versions: {vtxt}." + (f" Not installed: {', '.join(missing)}." if missing else ""),
        f"* Data: y = 10 sin(π x1 x2) + 20 (x3 − 0.5)² + 10 x4 + 5 x5 + N(0, 1), 10 covariates iid U(0, 1) "
        f"(x6..x10 noise), n ∈ {sizes}; training data seeded by (seed={args.seed}, n), so all samplers and both m "
        f"see the same data. Test set: {N_TEST} fresh rows (seed {args.seed}, shared across n), noise-free f. "
        f"ESS of f is computed at the first {N_ESS} test rows.",
        f"* Chains: {args.chains}. PyMC arms (pmt, pymc-bart): `pm.sample(tune, draws, chains={args.chains}, "
        f"cores={args.cores}, random_seed={args.seed}, compute_convergence_checks=False)`, σ ~ HalfNormal(sd(y)), "
        "y ~ Normal(mu, σ), σ sampled by NUTS; BART with default α=0.95, β=2 (pmt: k=2); pymc-bart uses its "
        "default PGBART step (10 particles, 10% of trees per step). stochtree: `BARTModel.sample(num_gfr=0, "
        f"num_burnin=tune, num_mcmc=draws, general_params={{num_chains: {args.chains}, random_seed: {args.seed}, "
        f"num_threads: {args.stochtree_threads}}}, mean_forest_params={{num_trees: m}})`, all other stochtree "
        "defaults (standardised y, IG(0, 0) prior on σ², leaf-scale sampling on, cutpoint grid 100, "
        "min 5 obs per leaf, max depth 10); chains run one after the other in one process.",
        "",
        "Columns: **wall s** = whole fit (PyMC: model build + `pm.sample` incl. compilation and chain processes; "
        "stochtree: `BARTModel().sample(...)`), excluding data generation, imports, test-set prediction and ESS. "
        "**ms / sweep** = wall ÷ (tune + draws) when the chains run in parallel (`par`, per-chain figure: "
        f"{args.chains} chains on {args.cores} cores), wall ÷ (chains × (tune + draws)) when they run one after the "
        "other (`seq`); a sweep updates every tree once (pymc-bart's PGBART only updates 10% of the trees per step). "
        "**ESS/s σ** = bulk ESS of σ over all chains ÷ wall s; **min ESS/s f** = min over the 25 test points of the "
        "bulk ESS of f(x) ÷ wall s (bulk ESS = rank-normalised split-chain ESS, `arviz_stats.base.array_stats.ess("
        "method='bulk')`). **test RMSE** = RMSE of the posterior mean of f against the true f on the 1000 test "
        "rows. **mean σ**: truth 1.0. **peak mem MB** = peak over time of the summed PSS of the run's process "
        "tree (child + chain workers + pymc-bart's Manager process), polled every 0.25 s with psutil; PSS splits "
        "pages shared by forked chain workers, the details table also gives the summed RSS and the largest "
        "single process (getrusage). Ratios < 1 mean smaller (faster / more accurate) than the reference. "
        f"Runs during which other processes on the machine used more than {CONTENTION_WARN_CORES} cores on average "
        "(machine-wide busy CPU time minus the run's own CPU time) are flagged ⚠.",
        "",
        md_table(headers, rows),
        "",
    ]
    if footnotes:
        lines += footnotes + [""]
    lines += [
        "Notes:",
        "",
        "* pymc-bart 0.13.1 (Rust backend `bartrs` 0.4.0) ignores `random_seed` for the trees: PGBART draws "
        "from a Rust RNG with a fixed built-in seed, the same stream in every chain and every run (checked: "
        "with σ fixed, both chains and runs with different seeds give identical trees). Its runs are therefore "
        "reproducible, but its chains differ only through σ's (seeded) NUTS draws; they are not independently "
        "initialised random streams: their σ traces are visibly correlated (details table; ≈0 for independent "
        "chains), which makes multi-chain diagnostics (ESS, R-hat) optimistic.",
        "* pymc-bart test-set predictions come from its per-chain tree histories "
        "(`pymc_bart.utils._get_posterior_sampler`, private API), matched to chains via the in-sample `mu` draws; "
        "its public `pm.sample_posterior_predictive` route samples random draws and cannot give ESS.",
        "",
        "## Details",
        "",
        md_table(dheaders, drows) if drows else "(no successful runs)",
        "",
        f"Raw per-run JSON (+ .npz with σ draws, f draws at the 25 ESS points and the posterior mean of f) in "
        f"`{results_dir(args).relative_to(ROOT) if results_dir(args).is_relative_to(ROOT) else results_dir(args)}/`.",
        "",
    ]
    errs = [r for r in results if r.get("status") not in ("ok", None) and r.get("status") != "import-error"]
    for r in errs:
        lines += [f"Error in {r.get('key', r['spec'])}:", "", "```", (r.get("error") or "")[-3000:], "```", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI


def _int_list(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x.strip()]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks.friedman", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test: n=300, m=20, 100 tune + 100 draws")
    p.add_argument(
        "--out", default=None, help="markdown output (default docs/benchmarks.md, --quick: docs/benchmarks-quick.md)"
    )
    p.add_argument("--samplers", default=",".join(DEFAULT_SAMPLERS), help=f"comma list from {ALL_SAMPLERS}")
    p.add_argument("--sizes", default=None, help="comma list of n (default 1000,10000; --quick: 300)")
    p.add_argument("--trees", default=None, help="comma list of m (default 50,200; --quick: 20)")
    p.add_argument(
        "--tune", type=int, default=None, help="tuning / burn-in iterations per chain (default 1000; --quick 100)"
    )
    p.add_argument("--draws", type=int, default=None, help="kept draws per chain (default 1000; --quick 100)")
    p.add_argument("--chains", type=int, default=2)
    p.add_argument(
        "--cores", type=int, default=2, help="cores for pm.sample (PyMC arms); 1 = chains one after the other"
    )
    p.add_argument("--stochtree-threads", type=int, default=1, help="stochtree num_threads (default 1)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument(
        "--reuse", action="store_true", help="load saved JSON for configurations already measured instead of rerunning"
    )
    p.add_argument(
        "--rerun-contended",
        action="store_true",
        help="with --reuse: rerun saved configurations flagged as measured while other processes were busy",
    )
    p.add_argument(
        "--shorten",
        action="append",
        default=[],
        metavar="SAMPLER:N:M:TUNE:DRAWS",
        help="run this configuration with TUNE+DRAWS instead of 1000+1000 and extrapolate its wall time "
        "(marked in the table); repeatable, e.g. --shorten pymc-bart:10000:200:200:200",
    )
    p.add_argument("--no-reduce", action="store_true", help="ignore --shorten / built-in shortened runs")
    p.add_argument(
        "--no-saved-refs",
        action="store_true",
        help="do not add saved pymc-bart/stochtree results for references not selected",
    )
    p.add_argument("--results-dir", default=str(RESULTS_DIR))
    p.add_argument("--timeout-min", type=float, default=90.0, help="kill a configuration after this many minutes")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker is None:
        args.samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
        bad = [s for s in args.samplers if s not in ALL_SAMPLERS]
        if bad:
            p.error(f"unknown sampler(s) {bad}; choose from {ALL_SAMPLERS}")
        args.sizes = _int_list(args.sizes) if args.sizes else ([300] if args.quick else [1000, 10000])
        args.trees = _int_list(args.trees) if args.trees else ([20] if args.quick else [50, 200])
        if args.tune is None:
            args.tune = 100 if args.quick else 1000
        if args.draws is None:
            args.draws = 100 if args.quick else 1000
        for item in args.shorten:
            try:
                s, n, m, t, d = item.split(":")
                if s not in ALL_SAMPLERS:
                    raise ValueError(s)
                REDUCED_RUNS[(s, int(n), int(m))] = (int(t), int(d))
            except ValueError:
                p.error(f"--shorten expects SAMPLER:N:M:TUNE:DRAWS, got {item!r}")
        if args.out is None:
            args.out = "docs/benchmarks-quick.md" if args.quick else "docs/benchmarks.md"
    return args


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.worker is not None:
        return worker_main(args.worker)

    configs = [(s, n, m) for n in args.sizes for m in args.trees for s in args.samplers]
    results = []
    t_all = time.perf_counter()
    for i, (s, n, m) in enumerate(configs, 1):
        tune, draws, reduced = plan_iters(s, n, m, args)
        print(
            f"[{i}/{len(configs)}] {s} n={n} m={m} {args.chains}x({tune}+{draws})"
            + (" (shortened)" if reduced else "")
            + " ...",
            file=sys.stderr,
            flush=True,
        )
        t0 = time.perf_counter()
        res = run_config(s, n, m, args)
        msg = res.get("status")
        if msg == "ok":
            msg += f", wall {res['wall_s']:.1f} s, RMSE {res['rmse_test']:.3f}, sigma {res['sigma_mean']:.3f}"
        else:
            if res.get("error"):
                msg += ": " + res["error"].splitlines()[0]
        print(f"    {msg} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        results.append(res)

    if not args.no_saved_refs:  # make the ratio columns available without rerunning the references
        for n in args.sizes:
            for m in args.trees:
                # saved rows of the references and of the slower pmt arms measured at selected sizes only
                extra = [s for s in ALL_SAMPLERS if s not in DEFAULT_SAMPLERS]
                for ref in REFERENCES + extra:
                    if ref not in args.samplers:
                        saved = load_saved(ref, n, m, args)
                        if saved is not None:
                            results.append(saved)
    order = {s: i for i, s in enumerate(ALL_SAMPLERS)}
    results.sort(key=lambda r: (r["spec"]["n"], r["spec"]["m"], order.get(r["spec"]["sampler"], 99)))

    report = markdown_report(results, args, argv)
    out = Path(args.out)
    if not out.is_absolute():
        out = ROOT / out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    print(report)
    print(f"wrote {out} ({time.perf_counter() - t_all:.0f} s total)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
