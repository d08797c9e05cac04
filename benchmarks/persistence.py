"""Trace size, peak memory and prediction time of stored forests, against pymc-bart (issue 5).

    python -m benchmarks.persistence [--n 10000] [--m 200] [--tune 1000] [--draws 1000]
        [--new-rows 100000] [--predict-draws 100] [--arms pymc-treesamplers,pymc-bart] [--quick]
        [--out docs/reports/persistence.md] [--json PATH] [--timeout-min 40]
    python -m benchmarks.persistence --render-only [--quick | --json PATH]

Fits Friedman #1 (``pymc_treesamplers.datasets.friedman1_train_test``) with 2 chains on 2 cores,
once with ``pmt.CGMStep`` and once with pymc-bart's default step, each arm in its own process
whose whole process tree is polled for peak memory (PSS). Then, in that process: the bytes of the
stored forests (the ``mu_forest`` sample stat: the base64 text, and the Python ``str`` objects
holding it) against the bytes of the posterior of ``mu`` itself; the netCDF file size of the
InferenceData; whether predictions can be made after a netCDF round trip; and the time to predict
``--new-rows`` new rows with ``--predict-draws`` posterior draws (evenly thinned), reported per
draw and extrapolated to all draws. An arm that is not rerun keeps its saved numbers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.instrument import stat

MODULE = "benchmarks.persistence"
ARMS = ("pymc-treesamplers", "pymc-bart")


# =========================================================================== worker


def _fit(arm: str, spec: dict):
    import pymc as pm

    from pymc_treesamplers.datasets import friedman1_train_test

    if arm == "pymc-bart":
        import pymc_bart as pkg
    else:
        import pymc_treesamplers as pkg
    X, y, _, _, _ = friedman1_train_test(spec["n"], spec["seed"])
    with pm.Model():
        mu = pkg.BART("mu", X, y, m=spec["m"])
        sigma = pm.HalfNormal("sigma", float(y.std()))
        pm.Normal("y", mu, sigma, observed=y)
        step = [pkg.CGMStep([mu])] if arm == "pymc-treesamplers" else None
        t = time.perf_counter()
        idata = pm.sample(
            tune=spec["tune"],
            draws=spec["draws"],
            chains=2,
            cores=2,
            random_seed=spec["seed"],
            step=step,
            progressbar=False,
            compute_convergence_checks=False,
        )
        wall = time.perf_counter() - t
    return pkg, mu, idata, wall, X


def _predict_timing(arm: str, pkg, mu, idata, spec: dict) -> dict:
    """Seconds to predict ``new_rows`` rows with ``predict_draws`` draws (evenly thinned)."""
    X_new = np.random.default_rng(7).uniform(size=(spec["new_rows"], 10))
    n_draws = idata.posterior.sizes["draw"]
    keep = np.linspace(0, n_draws - 1, max(1, spec["predict_draws"] // 2)).round().astype(int)  # per chain
    if arm == "pymc-treesamplers":
        sub = idata.isel(draw=keep)
        pkg.predict(sub, X_new[:10], "mu")  # compile / load the numba cache outside the timing
        t = time.perf_counter()
        out = pkg.predict(sub, X_new, "mu")
        secs = time.perf_counter() - t
    else:
        # pymc-bart keeps one tree history per chain on the Op (Rust objects); its public route
        # (sample_posterior_predictive) picks random draws, so time its per-chain sampler directly
        from pymc_bart.utils import _get_posterior_sampler

        samplers = list(_get_posterior_sampler(mu.owner.op)._chain_samplers)
        Xc = np.ascontiguousarray(X_new, dtype=np.float64)
        samplers[0].sample_posterior(Xc[:10], keep[:1].tolist(), None)
        t = time.perf_counter()
        out = np.stack([np.asarray(sm.sample_posterior(Xc, keep.tolist(), None))[:, 0, :] for sm in samplers])
        secs = time.perf_counter() - t
    used = int(np.prod(out.shape[:-1])) if out.ndim > 1 else 1
    return {
        "predict_s": secs,
        "predict_draws_used": used,
        "predict_s_per_draw": secs / used,
        "predict_s_all_draws_extrapolated": secs / used * 2 * n_draws,
    }


def worker_body(spec: dict) -> dict:
    arm = spec["arm"]
    pkg, mu, idata, wall, X = _fit(arm, spec)
    post_mu = idata.posterior["mu"].values
    out = {"wall_s": wall, "mu_posterior_bytes": int(post_mu.nbytes)}
    if arm == "pymc-treesamplers":
        enc = idata.sample_stats["mu_forest"].values.reshape(-1)
        out["forest_text_bytes"] = int(sum(len(s) for s in enc))
        out["forest_str_objects_bytes"] = int(sum(sys.getsizeof(s) for s in enc))
        out["mean_leaves_per_tree"] = float(stat(idata.sample_stats, "n_leaves").mean())
        out["bytes_per_tree"] = out["forest_text_bytes"] / (enc.size * spec["m"])
    else:
        out["stored_histories"] = len(mu.owner.op.all_trees)  # per chain, in process memory only
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fit.nc"
        idata.to_netcdf(path)
        out["netcdf_bytes"] = path.stat().st_size
        if arm == "pymc-treesamplers":
            import arviz as az

            again = az.from_netcdf(path)
            out["predict_after_reload_reproduces_draws"] = bool(np.array_equal(pkg.predict(again, X, "mu"), post_mu))
        else:
            out["predict_after_reload_reproduces_draws"] = False  # the trees live on the Op, not in the file
    out.update(_predict_timing(arm, pkg, mu, idata, spec))
    return out


# =========================================================================== report


def _mb(x) -> str:
    return "—" if x is None else f"{x / 1e6:.1f}"


def _threads(res: dict, meta: dict) -> str:
    """numba threads of the prediction: as pinned by the harness, else numba's default (all CPUs)."""
    n = int((res.get("threads") or {}).get("NUMBA_NUM_THREADS") or meta["machine"]["nproc"])
    return f"{n} thread{'s' if n != 1 else ''}"


def render(saved: dict) -> str:
    """The markdown report of a saved run."""
    st, results, meta = saved["settings"], saved["results"], saved["meta"]
    ours, theirs = results.get("pymc-treesamplers", {}), results.get("pymc-bart", {})

    def row(label, key, fmt):
        cells = [fmt(r[key]) if r.get(key) is not None else "—" for r in (ours, theirs)]
        return f"| {label} | {cells[0]} | {cells[1]} |"

    lines = harness.header_lines(
        "Stored forests: trace size, memory, prediction time (issue 5)", meta, harness.CORE_PACKAGES + ("pymc-bart",)
    )
    lines += [
        f"* Fit: Friedman #1, n = {st['n']}, p = 10, m = {st['m']}, 2 chains x ({st['tune']} tune + {st['draws']} "
        "draws), cores = 2, sigma ~ HalfNormal(sd(y)); pymc-treesamplers with `CGMStep`, pymc-bart with its default "
        "step. Each arm runs in its own process; peak memory is the peak of the summed PSS of its process tree "
        "(chain workers included), polled every 0.25 s.",
        f"* Prediction: {st['new_rows']:,} new rows (uniform), {st['predict_draws']} posterior draws evenly thinned "
        f"from the 2 chains; pymc-treesamplers via `pmt.predict` (draw-matched, {_threads(ours, meta)}), pymc-bart "
        "via the per-chain `PosteriorSampler.sample_posterior` of its in-memory trees, same draw indices (private "
        "API; its public route, `pm.sample_posterior_predictive`, picks random draws). Per-draw seconds extrapolated "
        "linearly to all draws. Each arm's numbers come from its own latest run (`measured` row).",
        "",
        "| | pymc-treesamplers | pymc-bart |",
        "|---|---|---|",
        row("status", "status", str),
        row("measured (UTC)", "measured_at", str),
        row("sampling wall time (s)", "wall_s", "{:.1f}".format),
        row("peak memory, PSS of the process tree (MB)", "peak_pss_sum_mb", "{:.0f}".format),
        row("posterior of `mu` (MB)", "mu_posterior_bytes", _mb),
        f"| stored forests (MB) | {_mb(ours.get('forest_text_bytes'))} text, "
        f"{_mb(ours.get('forest_str_objects_bytes'))} as Python str | "
        "in process memory (Rust objects on the Op), not in the trace |",
        row("netCDF file of the InferenceData (MB)", "netcdf_bytes", _mb),
        row("predict after netCDF reload reproduces the posterior draws", "predict_after_reload_reproduces_draws", str),
        row(f"predict {st['new_rows']:,} rows: s per draw", "predict_s_per_draw", "{:.3f}".format),
        row(
            f"predict {st['new_rows']:,} rows, all {2 * st['draws']} draws (extrapolated, s)",
            "predict_s_all_draws_extrapolated",
            "{:.0f}".format,
        ),
        "",
    ]
    notes = [f"* {name}: {note}" for name, r in results.items() if (note := harness.contention_note(r))]
    if notes:
        lines += notes + [""]
    if ours.get("status") == "ok":
        ratio = ours["forest_str_objects_bytes"] / ours["mu_posterior_bytes"]
        lines += [
            f"Bytes per stored tree: {ours['bytes_per_tree']:.1f} (mean {ours['mean_leaves_per_tree']:.2f} leaves per "
            "tree; the encoding costs `(4 + 10 (2L - 1)) x 4/3` bytes per tree with L leaves, plus at most 42 per "
            "draw).",
            "",
            f"Target: stored forests no larger than the posterior of `mu`: {ratio:.3f}x "
            f"({'met' if ratio <= 1 else 'NOT met'}; Python str objects included).",
            "",
        ]
    for name, r in results.items():
        if r.get("status") != "ok":
            lines += [f"**{name} failed:** `{(r.get('error') or '')[-400:]}`", ""]
    return "\n".join(lines + [harness.source_line(meta), ""])


# =========================================================================== CLI


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__)
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--m", type=int, default=200)
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--new-rows", type=int, default=100_000)
    p.add_argument("--predict-draws", type=int, default=100)
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma list from {list(ARMS)}")
    p.add_argument("--quick", action="store_true", help="n = 1000, m = 50, 100 + 100 draws, 10^4 new rows")
    args = harness.parse_report_args(p, argv, "persistence", timeout_min=40.0)
    if not harness.measuring(args):
        return args
    if args.quick:
        args.n, args.m, args.tune, args.draws, args.new_rows, args.predict_draws = 1000, 50, 100, 100, 10_000, 20
    args.arms = harness.choice_list(args.arms, ARMS, p, "arm(s)")
    return args


def main(argv: list[str] | None = None) -> int:
    argv, args, code = harness.start(argv, parse_args, worker_body)
    if code is not None:
        return code
    settings = {k: getattr(args, k) for k in ("quick", "n", "m", "tune", "draws", "seed", "new_rows", "predict_draws")}
    # arms not rerun keep their saved numbers (from a run with the same settings)
    previous = harness.load_json(args.json) if args.json.exists() else {}
    results = previous.get("results", {}) if previous.get("settings") == settings else {}
    runs = [(arm, {"arm": arm, **{k: settings[k] for k in settings if k != "quick"}}) for arm in args.arms]
    done = harness.run_specs(MODULE, args, runs, lambda r: f"wall {r['wall_s']:.1f} s")
    results.update({arm: res for (arm, _), res in zip(runs, done, strict=True)})
    return harness.finish(MODULE, argv, args, settings, results, render)


if __name__ == "__main__":
    sys.exit(main())
