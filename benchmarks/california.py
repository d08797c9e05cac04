"""CaliforniaHouses benchmark of the tree samplers (PG-BART paper, section 4.2, Tables 4-5).

    python -m benchmarks.california [--samplers pg,cgm,growprune] [--iters 2000] [--burn 1000]
        [--train-seeds 0,1,2] [--m 200] [--particles 10] [--one-hot] [--data PATH]
        [--out docs/pg-california.md] [--quick] [--timeout-min 30]

Data: ``california_housing.csv`` (1990 census block groups, 20640 rows), read from
``../shared/data/`` relative to the repository root (1.4 MB, not copied into the repository;
``--data`` points elsewhere).  Rows with missing ``total_bedrooms`` are dropped (207), the
categorical ``ocean_proximity`` is dropped (``--one-hot``: one-hot encoded instead), leaving the
8 numeric covariates; the response ``median_house_value`` is used in units of $100,000.  A test
set of 2000 rows is drawn once (seed 2015); each training set is 2000 rows drawn from the
remaining rows with its own seed (default 0, 1, 2), as the paper's three training sets of 2000.

Model: m = 200 trees with the default BART prior (alpha = 0.95, beta = 2, k = 2); sigma^2 ~
InverseGamma from ``pmt.chipman_sigma2_prior(X, y)`` (nu = 3, q = 0.9), sigma = sqrt(sigma^2),
sampled by NUTS.  One chain per training set: ``pm.sample(tune=burn, draws=iters - burn,
chains=1, cores=1)``.  Default 1000 burn-in + 1000 kept draws, the paper's protocol of section
4.1 (section 4.2 does not give its chain length): measured on the 2-core machine with another
process busy on one core, GrowPrune ~3 ms, CGM ~4 ms, PG (10 particles) ~50 ms per iteration,
i.e. about 6-7 minutes for three samplers x three training sets, well inside a 15-minute budget.
If PG becomes much slower, ``--iters 1000 --burn 300`` halves the run; the report prints an
estimate of the default run's wall time from the measured time per iteration.

Reported per sampler, averaged over the training sets: ESS and ESS/s of the training
log-likelihood trace (bulk ESS and an R-coda-style AR-spectral ESS), time per iteration, test
RMSE of the posterior mean, mean leaves per tree, and for PG the mean ``kept_old`` / ``stages``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common import dump_json, fmt, md_table
from benchmarks.pg_common import (
    ALL_SAMPLERS,
    LABELS,
    RESULTS_DIR,
    ROOT,
    across_chain_rhat,
    contention_note,
    fit_bart,
    header_lines,
    int_list,
    mean_of,
    print_env,
    range_of,
    run_config,
    sampler_list,
    summarise_chain,
    warmup,
    worker_entry,
)

MODULE = "benchmarks.california"
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "california_housing.csv"
TARGET = "median_house_value"
Y_SCALE = 1e5
DEFAULT_ITERS = 2000
DEFAULT_BURN = 1000
N_TRAIN = 2000
N_TEST = 2000
TEST_SEED = 2015
# Paper, Tables 4 and 5 (CaliforniaHouses row; ESS/s given there in units of 1e-3).
PAPER_ESS = {"cgm": 18.956, "growprune": 34.849, "pg": 76.819}
PAPER_ESS_PER_S = {"cgm": 1.967e-3, "growprune": 48.799e-3, "pg": 16.743e-3}


# =========================================================================== data


def load_california(path: Path | str = DEFAULT_DATA, one_hot: bool = False):
    """(X, y, column names) of the whole data set, rows with missing values dropped, y in $100k."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"California housing data not found at {path} (expected ../shared/data/california_housing.csv "
            "relative to the repository root; pass --data PATH). The benchmark does not download it."
        )
    df = pd.read_csv(path)
    df = df.dropna(subset=["total_bedrooms"]).reset_index(drop=True)
    if df.isna().any().any():
        raise ValueError(f"unexpected missing values in {path}: {df.isna().sum()[df.isna().sum() > 0].to_dict()}")
    y = df.pop(TARGET).to_numpy(dtype=float) / Y_SCALE
    cat = df.pop("ocean_proximity")
    if one_hot:
        df = pd.concat([df, pd.get_dummies(cat, prefix="ocean", dtype=float)], axis=1)
    return df.to_numpy(dtype=float), y, list(df.columns)


def california_split(X, y, train_seed: int, n_train: int = N_TRAIN, n_test: int = N_TEST):
    """Test rows: a fixed random draw of n_test (seed TEST_SEED); training rows: n_train of the others."""
    perm = np.random.default_rng(TEST_SEED).permutation(X.shape[0])
    test_idx, pool = perm[:n_test], perm[n_test:]
    train_idx = np.sort(np.random.default_rng([train_seed, 1]).choice(pool, size=n_train, replace=False))
    return X[train_idx], y[train_idx], X[test_idx], y[test_idx]


def baselines(X, y, X_test, y_test) -> dict:
    """Test RMSE of the training mean and of least squares, for scale."""
    design = np.column_stack([np.ones(len(y)), X])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    pred = np.column_stack([np.ones(len(y_test)), X_test]) @ coef
    return {
        "rmse_mean": float(np.sqrt(np.mean((y_test - y.mean()) ** 2))),
        "rmse_ols": float(np.sqrt(np.mean((y_test - pred) ** 2))),
    }


# =========================================================================== worker


def worker_body(spec: dict) -> dict:
    Xall, yall, cols = load_california(spec["data"], spec["one_hot"])
    kw = {"sampler": spec["sampler"], "m": spec["m"], "alpha": 0.95, "beta": 2.0, "particles": spec["particles"]}
    out = {"n_rows": int(Xall.shape[0]), "columns": cols}
    X0, y0, Xt0, _ = california_split(Xall, yall, spec["train_seeds"][0])
    out["warmup_s"] = warmup(X0, y0, Xt0, **kw)
    chains = []
    for ts in spec["train_seeds"]:
        X, y, X_test, y_test = california_split(Xall, yall, ts)
        # chain seed = training-set seed (+1000 so that it is not 0)
        fit = fit_bart(X, y, X_test, burn=spec["burn"], draws=spec["iters"] - spec["burn"], seed=1000 + ts, **kw)
        ch = summarise_chain(fit, y_test)
        ch["train_seed"] = ts
        ch.update(baselines(X, y, X_test, y_test))
        chains.append(ch)
        print(
            f"  training set {ts}: ESS bulk {ch['ess_bulk_loglik']:.1f}, coda {ch['ess_coda_loglik']:.1f}, "
            f"{ch['ms_per_iter']:.1f} ms/iter, test RMSE {ch['test_rmse']:.4f}",
            flush=True,
        )
    out["chains"] = chains
    return out


# =========================================================================== report


def _describe(res: dict) -> str:
    x = row_numbers(res)
    msg = (
        f"ESS bulk {x['ess_bulk']:.1f}, coda {x['ess_coda']:.1f}, {x['ms_per_iter']:.1f} ms/iter, "
        f"test RMSE {x['rmse']:.4f}, leaves {x['leaves']:.2f}"
    )
    if x["kept_old"] is not None:
        msg += f", kept_old {x['kept_old']:.3f}, stages {x['stages']:.1f}"
    return msg


def row_numbers(res: dict) -> dict:
    ch = res["chains"]
    return {
        "ess_bulk": mean_of(ch, "ess_bulk_loglik"),
        "ess_bulk_range": range_of(ch, "ess_bulk_loglik"),
        "ess_coda": mean_of(ch, "ess_coda_loglik"),
        "ess_bulk_per_s": mean_of(ch, "ess_bulk_per_s"),
        "ess_coda_per_s": mean_of(ch, "ess_coda_per_s"),
        "ms_per_iter": mean_of(ch, "ms_per_iter"),
        "bart_ms_per_iter": mean_of(ch, "bart_step_ms_per_iter"),
        "sampling_s": mean_of(ch, "sampling_s"),
        "rmse": mean_of(ch, "test_rmse"),
        "leaves": mean_of(ch, "n_leaves_mean"),
        "depth": mean_of(ch, "tree_depth_mean"),
        "kept_old": mean_of(ch, "kept_old_mean"),
        "stages": mean_of(ch, "stages_mean"),
        "accept": mean_of(ch, "accept_mean"),
        "sigma": mean_of(ch, "sigma_mean"),
        "loglik": mean_of(ch, "loglik_mean"),
        "rmse_mean": mean_of(ch, "rmse_mean"),
        "rmse_ols": mean_of(ch, "rmse_ols"),
    }


def _range_txt(v, r):
    if v is None:
        return "—"
    if r[0] is None or r[0] == r[1]:
        return fmt(v)
    return f"{fmt(v)} [{fmt(r[0])}–{fmt(r[1])}]"


def markdown_report(results: list[dict], args, argv: list[str], unavailable: dict[str, str], total_s: float) -> str:
    title = "CaliforniaHouses: PG vs CGM vs GrowPrune (PG-BART paper §4.2)" + (
        " — --quick smoke run" if args.quick else ""
    )
    lines = header_lines(title, [shlex.quote(a) for a in argv], MODULE)
    draws = args.iters - args.burn
    ok = [r for r in results if r.get("status") == "ok"]
    ncols = len(ok[0]["columns"]) if ok else "?"
    x_any = row_numbers(ok[0]) if ok else {}
    lines += [
        f"* Data: `{_rel(args.data)}`, rows with missing total_bedrooms dropped, ocean_proximity "
        f"{'one-hot encoded' if args.one_hot else 'dropped'} ({ncols} covariates; the paper's version has 6), "
        f"y = median_house_value / 100,000. Test set: {N_TEST} rows (seed {TEST_SEED}); training sets: {N_TRAIN} "
        f"of the other rows each, seeds {args.train_seeds}.",
        f"* Model: m = {args.m}, α = 0.95, β = 2, k = 2 (default BART prior); σ² ~ InverseGamma("
        "`pmt.chipman_sigma2_prior(X, y)`, ν = 3, q = 0.9), σ = √σ², σ² sampled by NUTS; PG with "
        f"{args.particles} particles (other PGBARTStep defaults).",
        f"* Chains: one per training set, `pm.sample(tune={args.burn}, draws={draws}, chains=1, cores=1, "
        "random_seed=1000 + training seed)`; each sampler runs in its own process after an untimed 3 + 3 "
        f"iteration warm-up. Whole run: {total_s / 60:.1f} min.",
        "",
        f"Columns: **ESS** of the training log-likelihood Σᵢ log N(yᵢ | μᵢ, σ) over the {draws} kept draws, mean "
        "over training sets [min–max]; *bulk* = rank-normalised split-chain bulk ESS of the single chain "
        "(`benchmarks.common.bulk_ess`), *coda* = R-coda `effectiveSize` reimplemented (AR spectral density at 0, "
        "the paper's estimator). **ESS/s** = ESS ÷ sampling time of the whole chain (burn-in + kept draws, "
        f"`pm.sample`'s `sampling_time`). **ms/iter** = sampling time ÷ {args.iters} (BART step + NUTS step for σ²); "
        "**BART ms/iter** = inside the BART step only. **test RMSE** of the posterior mean, in $100k "
        f"(training-mean predictor: {fmt(x_any.get('rmse_mean'))}, least squares: {fmt(x_any.get('rmse_ols'))}). "
        "**leaves** = mean leaves per tree. Paper figures "
        "(2015 pure-Python implementation, their machine, unknown chain length): compare as ratios between "
        "samplers.",
        "",
    ]
    for s, msg in unavailable.items():
        lines += [f"**{LABELS[s]} not run:** {msg}", ""]
    headers = [
        "sampler",
        "ESS bulk",
        "ESS coda",
        "paper ESS",
        "ESS/s bulk",
        "ESS/s coda",
        "paper ESS/s",
        "ms/iter",
        "BART ms/iter",
        "test RMSE",
        "leaves",
        "kept old",
        "stages",
        "R-hat",
        "notes",
    ]
    rows = []
    for r in results:
        s = r["spec"]["sampler"]
        pe, pr = PAPER_ESS.get(s), PAPER_ESS_PER_S.get(s)
        if r.get("status") != "ok":
            err = (r.get("error") or r.get("status") or "failed").splitlines()[0]
            rows.append([LABELS[s], "—", "—", fmt(pe), "—", "—", fmt(pr)] + ["—"] * 7 + [f"**{r['status']}**: {err}"])
            continue
        x = row_numbers(r)
        notes = [n for n in [contention_note(r)] if n]
        rows.append(
            [
                LABELS[s],
                _range_txt(x["ess_bulk"], x["ess_bulk_range"]),
                fmt(x["ess_coda"]),
                fmt(pe),
                fmt(x["ess_bulk_per_s"]),
                fmt(x["ess_coda_per_s"]),
                fmt(pr),
                fmt(x["ms_per_iter"]),
                fmt(x["bart_ms_per_iter"]),
                fmt(x["rmse"]),
                fmt(x["leaves"]),
                fmt(x["kept_old"]),
                fmt(x["stages"]),
                fmt(across_chain_rhat(r["chains"])),
                "; ".join(notes),
            ]
        )
    lines += [md_table(headers, rows), ""]
    if args.quick:
        lines += ["*--quick run: chains far too short for ESS to mean anything; it only exercises the code.*", ""]

    dh = [
        "sampler",
        "measured",
        "per training set: ESS bulk / coda",
        "per training set: test RMSE",
        "per training set: sampling s",
        "mean depth",
        "accept (MH)",
        "mean σ ($100k)",
        "mean log-lik",
        "warm-up s",
        "child wall s",
        "other load (cores)",
        "peak PSS MB",
    ]
    drows = []
    for r in ok:
        x = row_numbers(r)
        drows.append(
            [
                LABELS[r["spec"]["sampler"]],
                r.get("measured_at", "?"),
                ", ".join(f"{fmt(c['ess_bulk_loglik'])} / {fmt(c['ess_coda_loglik'])}" for c in r["chains"]),
                ", ".join(fmt(c["test_rmse"]) for c in r["chains"]),
                ", ".join(fmt(c["sampling_s"]) for c in r["chains"]),
                fmt(x["depth"]),
                fmt(x["accept"]),
                fmt(x["sigma"]),
                fmt(x["loglik"]),
                fmt(r.get("warmup_s")),
                fmt(r.get("elapsed_s")),
                fmt(r.get("other_load_cores")),
                fmt(r.get("peak_pss_sum_mb")),
            ]
        )
    lines += ["## Details", "", md_table(dh, drows) if drows else "(no successful runs)", ""]
    if ok:
        # time budget of a full default run, extrapolated from this run's time per iteration
        est = 0.0
        for r in ok:
            x = row_numbers(r)
            per_chain_overhead = (r.get("elapsed_s") or 0.0) - sum(c["sampling_s"] for c in r["chains"])
            est += per_chain_overhead + 3 * x["ms_per_iter"] * 1e-3 * DEFAULT_ITERS
        lines += [
            f"Estimated wall time of the default run (3 training sets × {DEFAULT_ITERS} iterations) for the "
            "samplers above, "
            f"from this run's ms/iter and process overheads: {est / 60:.1f} min.",
            "",
        ]
    lines += [f"Raw results (incl. the log-likelihood traces): `{_rel(args.json)}`.", ""]
    for r in results:
        if r.get("status") == "error":
            lines += [f"Error in {r['spec']['sampler']}:", "", "```", (r.get("error") or "")[-3000:], "```", ""]
    return "\n".join(lines)


def _rel(p) -> str:
    p = Path(p).resolve()
    for base in (ROOT, ROOT.parent):
        if p.is_relative_to(base):
            rel = p.relative_to(base)
            return str(rel) if base == ROOT else f"../{rel}"
    return str(p)


# =========================================================================== CLI


def parse_args(argv):
    p = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: training set 0 only, 100 iterations (50 burn-in), well under a minute",
    )
    p.add_argument("--samplers", default="pg,cgm,growprune", help=f"comma list from {ALL_SAMPLERS}")
    p.add_argument(
        "--iters", type=int, default=None, help=f"iterations per chain incl. burn-in (default {DEFAULT_ITERS})"
    )
    p.add_argument(
        "--burn", type=int, default=None, help=f"burn-in (tuning) iterations, discarded (default {DEFAULT_BURN})"
    )
    p.add_argument("--train-seeds", default=None, help="training-set seeds, one chain each (default 0,1,2)")
    p.add_argument("--m", type=int, default=200, help="number of trees (default 200)")
    p.add_argument("--particles", type=int, default=10, help="PG: number of particles (default 10)")
    p.add_argument("--one-hot", action="store_true", help="one-hot encode ocean_proximity instead of dropping it")
    p.add_argument("--data", default=str(DEFAULT_DATA), help="path of california_housing.csv")
    p.add_argument("--out", default=None, help="markdown (default docs/pg-california.md; --quick: ...-quick.md)")
    p.add_argument("--json", default=None, help="raw results (default benchmarks/results/pg-california[-quick].json)")
    p.add_argument("--timeout-min", type=float, default=30.0, help="kill one sampler's process after this long")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker is not None:
        return args
    args.samplers = sampler_list(args.samplers, p)
    if args.iters is None:
        args.iters = 100 if args.quick else DEFAULT_ITERS
    if args.burn is None:
        args.burn = args.iters // 2 if args.quick or args.iters != DEFAULT_ITERS else DEFAULT_BURN
    if not 0 <= args.burn < args.iters:
        p.error("need 0 <= burn < iters")
    args.train_seeds = int_list(args.train_seeds) if args.train_seeds else ([0] if args.quick else [0, 1, 2])
    args.data = Path(args.data)
    if not args.data.exists():
        p.error(
            f"data file {args.data} not found: this benchmark reads ../shared/data/california_housing.csv "
            "relative to the repository root (no download); pass --data PATH"
        )
    suffix = "-quick" if args.quick else ""
    args.out = Path(args.out or f"docs/pg-california{suffix}.md")
    args.json = Path(args.json or RESULTS_DIR / f"pg-california{suffix}.json")
    args.out = args.out if args.out.is_absolute() else ROOT / args.out
    args.json = args.json if args.json.is_absolute() else ROOT / args.json
    return args


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.worker is not None:
        return worker_entry(args.worker, worker_body)

    print_env()
    order = [s for s in ("growprune", "cgm", "pg", "pg-opt") if s in args.samplers]
    results: list[dict] = []
    unavailable: dict[str, str] = {}
    t_all = time.perf_counter()
    for i, s in enumerate(order, 1):
        print(
            f"[{i}/{len(order)}] {s}: training sets {args.train_seeds}, {args.iters} iters ({args.burn} burn-in) ...",
            file=sys.stderr,
            flush=True,
        )
        spec = {
            "sampler": s,
            "m": args.m,
            "iters": args.iters,
            "burn": args.burn,
            "train_seeds": args.train_seeds,
            "particles": args.particles,
            "one_hot": args.one_hot,
            "data": str(args.data),
        }
        log = args.json.parent / "logs" / f"{args.json.stem}_{s}.log"
        res = run_config(MODULE, spec, log, args.timeout_min * 60, _describe, unavailable, s)
        if res is not None:
            results.append(res)

    total = time.perf_counter() - t_all
    dump_json({"argv": argv, "results": results, "unavailable": unavailable}, args.json)
    report = markdown_report(results, args, argv, unavailable, total)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)
    print(report)
    print(f"wrote {_rel(args.out)} and {_rel(args.json)} ({total:.0f} s total)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
