"""Friedman #1 benchmark: pymc-treesamplers vs pymc-bart vs stochtree.

    python -m benchmarks.friedman [--quick] [--out docs/reports/benchmarks.md] [--json PATH]
        [--samplers growprune,cgm,pymc-bart,stochtree] [--sizes 1000,10000]  (also: pg, ct-h0.25/0.5/1/2)
        [--trees 50,200] [--tune 1000] [--draws 1000] [--chains 2] [--cores 2] [--stochtree-threads 1]
        [--seed 1234] [--reuse [--rerun-contended]] [--no-saved-refs] [--results-dir DIR] [--timeout-min 90]
    python -m benchmarks.friedman --render-only [--quick | --out docs/reports/ct-horizon-sweep.md | --json PATH]

Typical use (reference rows reused from benchmarks/results/ instead of rerun):

    python -m benchmarks.friedman --reuse
    python -m benchmarks.friedman --samplers growprune --sizes 10000 --trees 200 --out /tmp/gp.md

Problem: ``pymc_treesamplers.datasets.friedman1_train_test``: y = 10 sin(pi x1 x2) + 20 (x3 -
0.5)^2 + 10 x4 + 5 x5 + N(0, 1) with 10 iid U(0, 1) covariates (x6..x10 are noise); test set:
1000 fresh rows (noise-free f), the first 25 of them the fixed points for the ESS of f.

Every (sampler, n, m) runs in its own child process (``benchmarks.harness``); its numbers are
saved as ``<results-dir>/<key>.json``, which ``--reuse`` loads instead of rerunning; its draws go
to ``<results-dir>/raw/<key>.npz``, kept out of git (the JSON records the file's sha256 and the
command that regenerates it: ``python -m benchmarks.harness --verify-raw`` checks them). The rows
of a report are saved together in ``benchmarks/results/<report>.json``, from which
``--render-only`` rebuilds the report.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt
from benchmarks.metrics import bulk_ess, rank_rhat, split_summary

MODULE = "benchmarks.friedman"
ALL_SAMPLERS = ["growprune", "cgm", "reshape", "pg", "ct-h0.25", "ct-h0.5", "ct-h1", "ct-h2", "pymc-bart", "stochtree"]
DEFAULT_SAMPLERS = ["growprune", "cgm", "pymc-bart", "stochtree"]
REFERENCES = ["pymc-bart", "stochtree"]
LABELS = {
    "growprune": "pmt GrowPrune",
    "cgm": "pmt CGM",
    "reshape": "pmt Reshape",
    "pg": "pmt PG (10 particles)",
    **{f"ct-h{h}": f"pmt CTBirthDeath (horizon {h})" for h in ("0.25", "0.5", "1", "2")},
    "pymc-bart": "pymc-bart (PGBART)",
    "stochtree": "stochtree (GP MCMC)",
}
N_TEST = 1000
N_ESS = 25
DEFAULT_SEED = 1234


# =========================================================================== worker


def fit_metrics(sigma: np.ndarray, f_test: np.ndarray, f_test_true: np.ndarray, wall_s: float) -> dict:
    """Numbers reported for one fit: sigma draws (chain, draw), draw-matched f draws (chain, draw, n_test)."""
    sigma = np.asarray(sigma, dtype=float)
    f_test = np.asarray(f_test, dtype=float)
    ess_f = bulk_ess(f_test[:, :, :N_ESS])
    ess_sigma = float(bulk_ess(sigma))
    return {
        "rmse_test": float(np.sqrt(np.mean((f_test.mean(axis=(0, 1)) - f_test_true) ** 2))),
        "sigma_mean": float(sigma.mean()),
        "sigma_sd": float(sigma.std()),
        "sigma_mean_per_chain": [float(v) for v in sigma.mean(axis=1)],
        "ess_bulk_sigma": ess_sigma,
        "ess_bulk_f_min": float(np.min(ess_f)),
        "ess_bulk_f_median": float(np.median(ess_f)),
        "rhat_sigma": float(rank_rhat(sigma)),
        "rhat_f_max": float(np.max(rank_rhat(f_test[:, :, :N_ESS]))),
        # correlation of the chains' sigma traces: ~0 for independent chains
        "sigma_chain_corr": float(np.corrcoef(sigma[0], sigma[1])[0, 1]) if sigma.shape[0] >= 2 else None,
        "ess_per_s_sigma": ess_sigma / wall_s,
        "min_ess_per_s_f": float(np.min(ess_f)) / wall_s,
    }


def _pymc_bart_f_draws(mu_rv, idata, X_train, X_test, allow_unmatched: bool = False,
                       draws=None) -> tuple[np.ndarray, dict]:
    """Draw-matched pymc-bart predictions at X_test, shape (chain, draw, n_test).

    pymc-bart 0.13's public prediction route (pm.set_data + sample_posterior_predictive) picks
    *random* posterior draws, so the draws are not in chain order and ESS cannot be computed from
    them. We use the per-chain tree histories it keeps on the op instead (``op.all_trees`` ->
    ``pymc_bart.utils._get_posterior_sampler`` -> ``sample_posterior(X, draw_indices, excluded)``).
    ``op.all_trees`` is appended by each chain process when it finishes, i.e. in completion
    order: every history is matched to its chain by its in-sample predictions against the
    posterior ``mu``. ``draws``: the draw indices to predict (default: all).
    """
    from pymc_bart.utils import _get_posterior_sampler

    samplers = list(_get_posterior_sampler(mu_rv.owner.op)._chain_samplers)
    post_mu = np.asarray(idata.posterior["mu"].values)  # (chain, draw, n_train)
    C, D = post_mu.shape[:2]
    if len(samplers) != C:
        raise RuntimeError(f"pymc-bart kept {len(samplers)} tree histories for {C} chains")
    k_rows = min(200, X_train.shape[0])
    Xc = np.ascontiguousarray(X_train[:k_rows], dtype=np.float64)
    chk = sorted({0, D // 2, D - 1})
    chain_of = {}
    match_err = []
    margin = []
    for k, s in enumerate(samplers):
        if s.n_draws != D:
            raise RuntimeError(f"tree history {k} has {s.n_draws} draws, posterior has {D}")
        p = np.asarray(s.sample_posterior(Xc, chk, None))[:, 0, :]
        # share of (draw, row) values where the history's prediction differs from a chain's posterior mu:
        # not 0 for the right chain on columns with tied values, where pymc-bart's own prediction can
        # differ from its in-sample value at rows that sit on a split value (seen on Boston housing:
        # about half the rows), but far below the other chains' (every row differs)
        errs = [float(np.mean(np.abs(p - post_mu[c, chk, :k_rows]) > 1e-9)) for c in range(C)]
        order = np.argsort(errs)
        chain_of[int(order[0])] = k
        match_err.append(errs[order[0]])
        margin.append(errs[order[1]] if C > 1 else 1.0)
    unmatched = sorted(chain_of) != list(range(C)) or any(e > 0.8 * m for e, m in zip(match_err, margin, strict=True))
    if unmatched and allow_unmatched:
        # the posterior mean over all chains does not need the chain order; per-chain numbers do
        chain_of = {c: c for c in range(C)}
    elif unmatched:
        raise RuntimeError(f"could not match pymc-bart tree histories to chains: {chain_of}, mismatch shares "
                           f"{match_err} (next best {margin})")
    Xt = np.ascontiguousarray(X_test, dtype=np.float64)
    f = np.stack(
        [np.asarray(samplers[chain_of[c]].sample_posterior(Xt, list(range(D)) if draws is None else list(draws),
                                                           None))[:, 0, :] for c in range(C)]
    )
    return f, {"history_order_for_chains": [chain_of[c] for c in range(C)], "chains_matched": not unmatched,
               "chain_match_mismatch_share": max(match_err), "chain_match_next_best_share": min(margin)}


def _fit_pymc(spec: dict, X, y, X_test) -> tuple[dict, np.ndarray, np.ndarray]:
    import pymc as pm

    sampler = spec["sampler"]
    if sampler == "pymc-bart":
        import pymc_bart as pkg
    else:
        import pymc_treesamplers as pkg
    t0 = time.perf_counter()
    with pm.Model():
        mu = pkg.BART("mu", X, y, m=spec["m"], **({"split_prior": spec["split_prior"]} if spec.get("split_prior")
                                                 else {}))
        # same sigma prior for all PyMC arms; pm.sample assigns NUTS to sigma
        sigma = pm.HalfNormal("sigma", float(y.std()))
        pm.Normal("y", mu, sigma, observed=y)
        if sampler == "pymc-bart":
            step = None  # pymc-bart's default: PGBART for mu
        elif sampler.startswith("ct-h"):
            step = [pkg.CTBirthDeathStep([mu], horizon=float(sampler[4:]))]
        else:
            step = [{"growprune": pkg.GrowPruneStep, "cgm": pkg.CGMStep, "pg": pkg.PGBARTStep,
                     "reshape": pkg.ReshapeStep}[sampler]([mu])]
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
    t1 = time.perf_counter()
    extra = {}
    if sampler == "pymc-bart":
        f_test, extra = _pymc_bart_f_draws(mu, idata, X, X_test, spec.get("pymc_bart_unmatched_ok", False))
    else:
        f_test = np.asarray(pkg.predict(idata, X_test, "mu"))
    predict_s = time.perf_counter() - t1
    if spec.get("relevant"):  # variable selection: per-draw split counts
        if sampler == "pymc-bart":
            from pymc_bart.utils import _decode_vi

            counts = [_decode_vi(v, X.shape[1]) for v in idata.sample_stats["variable_inclusion"].values.ravel()]
        else:
            counts = idata.sample_stats["mu_split_counts"].values.tolist()
        extra.update(split_summary(np.array(counts, dtype=float).reshape(-1, X.shape[1]), spec["relevant"]))
    if "time" in idata.sample_stats:  # per-step wall time, recorded by pymc-bart's step
        extra["step_time_ms_median"] = float(np.median(idata.sample_stats["time"].values) * 1e3)
        extra["step_time_ms_mean"] = float(np.mean(idata.sample_stats["time"].values) * 1e3)
    sampling_time = idata.posterior.attrs.get("sampling_time")
    info = {
        "wall_s": wall,
        "sampling_s": float(sampling_time) if sampling_time is not None else None,
        "predict_s": predict_s,
        "parallel_chains": spec["cores"] > 1 and spec["chains"] > 1,
        **extra,
    }
    return info, np.asarray(idata.posterior["sigma"].values), f_test


def _fit_stochtree(spec: dict, X, y, X_test) -> tuple[dict, np.ndarray, np.ndarray]:
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
    # num_chains > 1: samples of all chains are stored consecutively (chain 1 first)
    f_test = pred.reshape(X_test.shape[0], chains, draws).transpose(1, 2, 0)
    sigma = np.sqrt(np.asarray(model.global_var_samples)).reshape(chains, draws)
    extra = {}
    if spec.get("relevant"):
        fc = model.forest_container_mean
        counts = [fc.get_forest_split_counts(d, X.shape[1]) for d in range(fc.num_samples())]
        extra = split_summary(np.array(counts), spec["relevant"])
    info = {
        **extra,
        "wall_s": wall,
        "sampling_s": wall,
        "predict_s": predict_s,
        "parallel_chains": False,
        "stochtree_params": {"general_params": general, "mean_forest_params": forest, "num_gfr": 0},
        "stochtree_sample_sigma2_leaf": bool(getattr(model, "sample_sigma2_leaf", False)),
    }
    return info, sigma, f_test


def worker_body(spec: dict) -> dict:
    """Fit one configuration; its draws go to spec['out_npz'] (recorded under "raw"), its numbers are returned."""
    from pymc_treesamplers.datasets import friedman1_train_test

    X, y, _, X_test, f_test_true = friedman1_train_test(spec["n"], spec["seed"], n_test=N_TEST)
    out = {"data_check": {"y_mean": float(y.mean()), "y_sd": float(y.std()), "f_test_sd": float(f_test_true.std())}}
    fit = _fit_stochtree if spec["sampler"] == "stochtree" else _fit_pymc
    info, sigma, f_test = fit(spec, X, y, X_test)
    expected = (spec["chains"], spec["draws"], X_test.shape[0])
    if f_test.shape != expected:
        raise RuntimeError(f"predictions have shape {f_test.shape}, expected {expected}")
    out.update(info)
    out.update(fit_metrics(sigma, f_test, f_test_true, info["wall_s"]))
    out["raw"] = harness.save_raw(
        Path(spec["out_npz"]),
        {
            "sigma": sigma,
            "f_ess_points": f_test[:, :, :N_ESS],
            "post_mean_f_test": f_test.mean(axis=(0, 1)),
            "ess_bulk_f": bulk_ess(f_test[:, :, :N_ESS]),
        },
    )
    return out


# =========================================================================== parent


def config_key(sampler: str, n: int, m: int, args) -> str:
    par = f"threads{args.stochtree_threads}" if sampler == "stochtree" else f"cores{args.cores}"
    return f"{sampler}_n{n}_m{m}_c{args.chains}_t{args.tune}_d{args.draws}_{par}_seed{args.seed}"


def regenerate_command(spec: dict, results_base: str, quick: bool) -> str:
    """The command that measures one configuration again (its JSON and raw draws in ``results_base``),
    without touching the docs."""
    key = spec.get("key") or "config"
    argv = ["--samplers", spec["sampler"], "--sizes", spec["n"], "--trees", spec["m"], "--tune", spec["tune"],
            "--draws", spec["draws"], "--chains", spec["chains"], "--cores", spec["cores"],
            "--stochtree-threads", spec["threads"], "--seed", spec["seed"], "--no-saved-refs",
            "--results-dir", results_base, *(["--quick"] if quick else []),
            "--out", f"/tmp/{key}.md", "--json", f"/tmp/{key}.json"]
    return harness.command_line(MODULE, [str(a) for a in argv])


def results_dir(args) -> Path:
    return args.results_dir / "quick" if args.quick else args.results_dir


def run_config(sampler: str, n: int, m: int, args) -> dict:
    """Measure one configuration (or, with --reuse, load its saved result) and save it under its key."""
    key = config_key(sampler, n, m, args)
    saved = results_dir(args) / f"{key}.json"
    if args.reuse and saved.exists():
        res = harness.load_json(saved)
        contended = (res.get("other_load_cores") or 0.0) > harness.CONTENTION_WARN_CORES
        if not (args.rerun_contended and contended):
            print(f"  reusing {harness.rel(saved)}", file=sys.stderr)
            return dict(res, source="reused")
        print("  saved result was measured on a busy machine: rerunning", file=sys.stderr)
    spec = {
        "sampler": sampler,
        "n": n,
        "m": m,
        "tune": args.tune,
        "draws": args.draws,
        "chains": args.chains,
        "cores": args.cores,
        "threads": args.stochtree_threads,
        "seed": args.seed,
        "out_npz": str(results_dir(args) / "raw" / f"{key}.npz"),
    }
    res = harness.run_worker(MODULE, spec, results_dir(args) / "logs" / f"{key}.log", args.timeout_min * 60)
    res["key"] = key
    res.update(harness.environment())  # saved results outlive this run: each keeps its own environment
    if res.get("status") == "ok":
        if "raw" in res:
            base = harness.rel(args.results_dir)
            res["raw"]["regenerate"] = regenerate_command(dict(spec, key=key), base, args.quick)
        harness.save_json(res, saved)
    else:
        Path(spec["out_npz"]).unlink(missing_ok=True)
    return dict(res, source="run")


def load_saved(sampler: str, n: int, m: int, args) -> dict | None:
    p = results_dir(args) / f"{config_key(sampler, n, m, args)}.json"
    return dict(harness.load_json(p), source="saved") if p.exists() else None


def describe(res: dict) -> str:
    return f"wall {res['wall_s']:.1f} s, RMSE {res['rmse_test']:.3f}, sigma {res['sigma_mean']:.3f}"


# =========================================================================== report


def ms_per_sweep(res: dict) -> tuple[float, str]:
    """Wall time per sweep (per chain when the chains ran in parallel) and the mode, 'par' or 'seq'."""
    spec = res["spec"]
    it = spec["tune"] + spec["draws"]
    if res.get("parallel_chains"):
        rounds = math.ceil(spec["chains"] / max(1, spec.get("cores", 1)))
        return res["wall_s"] / (rounds * it) * 1e3, "par"
    return res["wall_s"] / (spec["chains"] * it) * 1e3, "seq"


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def _label(r: dict) -> str:
    return LABELS.get(r["spec"]["sampler"], r["spec"]["sampler"])


def _notes(r: dict) -> str:
    if r.get("status") != "ok":
        return f"**{r.get('status')}**: {(r.get('error') or r.get('status') or 'failed').splitlines()[0]}"
    notes = {
        "reused": f"reused saved result ({r.get('measured_at', '?')})",
        "saved": f"saved result, not rerun ({r.get('measured_at', '?')})",
    }
    return "; ".join(n for n in (notes.get(r.get("source")), harness.contention_note(r)) if n)


def _main_table(results: list[dict]) -> str:
    refs = {
        (r["spec"]["sampler"], r["spec"]["n"], r["spec"]["m"]): r
        for r in results
        if r.get("status") == "ok" and r["spec"]["sampler"] in REFERENCES
    }

    def vs(ref: str, key: str):
        """This row's ``key`` divided by the reference's at the same (n, m); 1 in the reference's own row."""

        def cell(r):
            if r["spec"]["sampler"] == ref:
                return "1"
            other = refs.get((ref, r["spec"]["n"], r["spec"]["m"]), {})
            return fmt(_ratio(r[key], other.get(key)))

        return harness.if_ok(cell)

    def sweep(r):
        ms, mode = ms_per_sweep(r)
        return f"{fmt(ms)} ({mode})"

    ok = harness.if_ok
    columns = [
        ("sampler", _label),
        ("n", lambda r: r["spec"]["n"]),
        ("m", lambda r: r["spec"]["m"]),
        ("iterations run", lambda r: f"{r['spec']['chains']}×({r['spec']['tune']}+{r['spec']['draws']})"),
        ("wall s", ok(lambda r: fmt(r["wall_s"]))),
        ("ms / sweep", ok(sweep)),
        ("ESS/s σ", ok(lambda r: fmt(r["ess_per_s_sigma"]))),
        ("min ESS/s f", ok(lambda r: fmt(r["min_ess_per_s_f"]))),
        ("test RMSE", ok(lambda r: fmt(r["rmse_test"]))),
        ("mean σ", ok(lambda r: fmt(r["sigma_mean"]))),
        ("peak mem MB", ok(lambda r: fmt(r.get("peak_pss_sum_mb")))),
        ("wall ÷ pymc-bart", vs("pymc-bart", "wall_s")),
        ("wall ÷ stochtree", vs("stochtree", "wall_s")),
        ("RMSE ÷ pymc-bart", vs("pymc-bart", "rmse_test")),
        ("RMSE ÷ stochtree", vs("stochtree", "rmse_test")),
        ("notes", _notes),
    ]
    return harness.column_table(columns, results)


def _details(results: list[dict]) -> str:
    columns = [
        ("sampler", _label),
        ("n", lambda r: r["spec"]["n"]),
        ("m", lambda r: r["spec"]["m"]),
        ("measured", lambda r: r.get("measured_at", "?")),
        ("wall s (as run)", lambda r: fmt(r["wall_s"])),
        ("sampling s", lambda r: fmt(r.get("sampling_s"))),
        ("predict s", lambda r: fmt(r.get("predict_s"))),
        ("BART step ms (sampler stat `time`, median)", lambda r: fmt(r.get("step_time_ms_median"))),
        ("bulk ESS σ", lambda r: fmt(r["ess_bulk_sigma"])),
        ("min / median bulk ESS f", lambda r: f"{fmt(r['ess_bulk_f_min'])} / {fmt(r['ess_bulk_f_median'])}"),
        ("R-hat σ / max R-hat f", lambda r: f"{fmt(r.get('rhat_sigma'))} / {fmt(r.get('rhat_f_max'))}"),
        ("σ mean per chain", lambda r: ", ".join(fmt(v) for v in r["sigma_mean_per_chain"])),
        ("corr of chains' σ traces", lambda r: fmt(r.get("sigma_chain_corr"))),
        ("peak PSS / RSS sum MB", lambda r: f"{fmt(r.get('peak_pss_sum_mb'))} / {fmt(r.get('peak_rss_sum_mb'))}"),
        ("max RSS one proc MB", lambda r: fmt(max(r.get("maxrss_self_mb", 0), r.get("maxrss_children_mb", 0)))),
        ("other procs' load (cores)", lambda r: fmt(r.get("other_load_cores"))),
    ]
    ok = [r for r in results if r.get("status") == "ok"]
    return harness.column_table(columns, ok) if ok else "(no successful runs)"


def render(saved: dict) -> str:
    """The markdown report of a saved run."""
    st, results = saved["settings"], saved["results"]
    sizes = sorted({r["spec"]["n"] for r in results})
    title = "Friedman #1 benchmark" + (" (--quick smoke test)" if st["quick"] else "")
    lines = harness.header_lines(title, saved["meta"], harness.CORE_PACKAGES + harness.PEER_PACKAGES, runs=results)
    lines += [
        f"* Data: y = 10 sin(π x1 x2) + 20 (x3 − 0.5)² + 10 x4 + 5 x5 + N(0, 1), 10 covariates iid U(0, 1) "
        f"(x6..x10 noise), n ∈ {sizes}; training data seeded by (seed={st['seed']}, n), so all samplers and both m "
        f"see the same data. Test set: {N_TEST} fresh rows (seed {st['seed']}, shared across n), noise-free f. "
        f"ESS of f is computed at the first {N_ESS} test rows.",
        f"* Chains: {st['chains']}. PyMC arms (pmt, pymc-bart): `pm.sample(tune, draws, chains={st['chains']}, "
        f"cores={st['cores']}, random_seed={st['seed']}, compute_convergence_checks=False)`, σ ~ HalfNormal(sd(y)), "
        "y ~ Normal(mu, σ), σ sampled by NUTS; BART with default α=0.95, β=2 (pmt: k=2); pymc-bart uses its "
        "default PGBART step (10 particles, 10% of trees per step). stochtree: `BARTModel.sample(num_gfr=0, "
        f"num_burnin=tune, num_mcmc=draws, general_params={{num_chains: {st['chains']}, random_seed: {st['seed']}, "
        f"num_threads: {st['stochtree_threads']}}}, mean_forest_params={{num_trees: m}})`, all other stochtree "
        "defaults (standardised y, IG(0, 0) prior on σ², leaf-scale sampling on, cutpoint grid 100, "
        "min 5 obs per leaf, max depth 10); chains run one after the other in one process.",
        "",
        "Columns: **wall s** = whole fit (PyMC: model build + `pm.sample` incl. compilation and chain processes; "
        "stochtree: `BARTModel().sample(...)`), excluding data generation, imports, test-set prediction and ESS. "
        "**ms / sweep** = wall ÷ (tune + draws) when the chains run in parallel (`par`, per-chain figure: "
        f"{st['chains']} chains on {st['cores']} cores), wall ÷ (chains × (tune + draws)) when they run one after the "
        "other (`seq`); a sweep updates every tree once (pymc-bart's PGBART only updates 10% of the trees per step). "
        "**ESS/s σ** = bulk ESS of σ over all chains ÷ wall s; **min ESS/s f** = min over the 25 test points of the "
        "bulk ESS of f(x) ÷ wall s (bulk ESS = rank-normalised split-chain ESS, `arviz_stats.base.array_stats.ess("
        "method='bulk')`). **test RMSE** = RMSE of the posterior mean of f against the true f on the 1000 test "
        "rows. **mean σ**: truth 1.0. **peak mem MB** = peak over time of the summed PSS of the run's process "
        "tree (child + chain workers + pymc-bart's Manager process), polled every 0.25 s with psutil; PSS splits "
        "pages shared by forked chain workers, the details table also gives the summed RSS and the largest "
        "single process (getrusage). Ratios < 1 mean smaller (faster / more accurate) than the reference. "
        f"Runs during which other processes on the machine used more than {harness.CONTENTION_WARN_CORES} cores on "
        "average (machine-wide busy CPU time minus the run's own CPU time) are flagged ⚠.",
        "",
        _main_table(results),
        "",
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
        _details(results),
        "",
        f"Per-run JSON in `{st['results_dir']}/`; the draws behind it (σ, f at the 25 ESS points, the posterior "
        f"mean of f) are regenerated into `{st['results_dir']}/raw/` (outside git; each JSON records the file's "
        "sha256 and the command that remakes it).",
        "",
    ]
    for r in results:
        if r.get("status") not in ("ok", None):
            lines += [f"Error in {r.get('key', r['spec'])}:", "", "```", (r.get("error") or "")[-3000:], "```", ""]
    return "\n".join(lines + harness.report_footer(saved))


# =========================================================================== CLI


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__, quick_help="smoke test: n=300, m=20, 100 tune + 100 draws")
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
    p.add_argument("--reuse", action="store_true", help="load saved results of configurations already measured")
    p.add_argument(
        "--rerun-contended",
        action="store_true",
        help="with --reuse: rerun saved configurations flagged as measured while other processes were busy",
    )
    p.add_argument(
        "--no-saved-refs",
        action="store_true",
        help="do not add saved results of samplers not selected (references, slower pmt arms)",
    )
    p.add_argument("--results-dir", default=str(harness.RESULTS_DIR), help="where per-configuration results are kept")
    args = harness.parse_report_args(p, argv, "benchmarks", timeout_min=90.0)
    if not harness.measuring(args):
        return args
    args.samplers = harness.choice_list(args.samplers, ALL_SAMPLERS, p, "sampler(s)")
    args.sizes = harness.int_list(args.sizes) if args.sizes else ([300] if args.quick else [1000, 10000])
    args.trees = harness.int_list(args.trees) if args.trees else ([20] if args.quick else [50, 200])
    args.tune = args.tune if args.tune is not None else (100 if args.quick else 1000)
    args.draws = args.draws if args.draws is not None else (100 if args.quick else 1000)
    rd = Path(args.results_dir)
    args.results_dir = rd if rd.is_absolute() else harness.ROOT / rd
    return args


def main(argv: list[str] | None = None) -> int:
    argv, args, code = harness.start(argv, parse_args, worker_body)
    if code is not None:
        return code
    configs = [(s, n, m) for n in args.sizes for m in args.trees for s in args.samplers]
    results = []
    for i, (s, n, m) in enumerate(configs, 1):
        print(f"[{i}/{len(configs)}] {s} n={n} m={m} {args.chains}x({args.tune}+{args.draws}) ...", file=sys.stderr)
        t0 = time.perf_counter()
        results.append(run_config(s, n, m, args))
        harness.print_status(results[-1], describe, t0)
    if not args.no_saved_refs:  # the ratio columns and the slower arms without rerunning them
        for n in args.sizes:
            for m in args.trees:
                for s in ALL_SAMPLERS:
                    if s not in args.samplers and (s in REFERENCES or s not in DEFAULT_SAMPLERS):
                        saved = load_saved(s, n, m, args)
                        if saved is not None:
                            results.append(saved)
    order = {s: i for i, s in enumerate(ALL_SAMPLERS)}
    results.sort(key=lambda r: (r["spec"]["n"], r["spec"]["m"], order.get(r["spec"]["sampler"], 99)))
    settings = {k: getattr(args, k) for k in ("quick", "samplers", "sizes", "trees", "tune", "draws", "chains")}
    settings.update(
        cores=args.cores,
        stochtree_threads=args.stochtree_threads,
        seed=args.seed,
        results_dir=harness.rel(results_dir(args)),
    )
    return harness.finish(MODULE, argv, args, settings, results, render)


if __name__ == "__main__":
    sys.exit(main())
