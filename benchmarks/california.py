"""CaliforniaHouses benchmark of the tree samplers (PG-BART paper, section 4.2, Tables 4-5).

    python -m benchmarks.california [--samplers pg,cgm,growprune] [--iters 2000] [--burn 1000]
        [--train-seeds 0,1,2] [--m 200] [--particles 10] [--one-hot] [--data PATH]
        [--quick] [--out docs/reports/pg-california.md] [--json PATH] [--timeout-min 30]
    python -m benchmarks.california --render-only [--quick | --json PATH]

Data: ``california_housing.csv`` (1990 census block groups, 20640 rows), read from
``../shared/data/`` relative to the repository root (1.4 MB, not copied into the repository;
``--data`` points elsewhere). Rows with missing ``total_bedrooms`` are dropped (207), the
categorical ``ocean_proximity`` is dropped (``--one-hot``: one-hot encoded instead), leaving the
8 numeric covariates; the response ``median_house_value`` is used in units of $100,000. A test
set of 2000 rows is drawn once (seed 2015); each training set is 2000 rows drawn from the
remaining rows with its own seed (default 0, 1, 2), as the paper's three training sets of 2000.

Model: m = 200 trees with the default BART prior (alpha = 0.95, beta = 2, k = 2); the protocol of
``benchmarks.pg_paper`` (one chain per training set, sigma^2 by NUTS). Default 1000 burn-in +
1000 kept draws, the paper's protocol of section 4.1 (section 4.2 does not give its chain
length); about 6 minutes for the three samplers on the 2-core machine (the report estimates the
default run's wall time from any run's time per iteration).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from benchmarks import harness, pg_paper
from benchmarks.harness import fmt
from benchmarks.pg_paper import LABELS

MODULE = "benchmarks.california"
DEFAULT_DATA = harness.ROOT.parent / "shared" / "data" / "california_housing.csv"
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


def load_california(path: Path | str = DEFAULT_DATA, one_hot: bool = False) -> tuple[np.ndarray, np.ndarray, list]:
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
    out["warmup_s"] = pg_paper.warmup(X0, y0, Xt0, **kw)
    chains = []
    for ts in spec["train_seeds"]:
        X, y, X_test, y_test = california_split(Xall, yall, ts)
        # chain seed = training-set seed + 1000 (so that it is not 0)
        fit = pg_paper.fit_bart(
            X, y, X_test, burn=spec["burn"], draws=spec["iters"] - spec["burn"], seed=1000 + ts, **kw
        )
        ch = pg_paper.summarise_chain(fit, y_test)
        ch["train_seed"] = ts
        ch.update(baselines(X, y, X_test, y_test))
        chains.append(ch)
        print(f"  training set {ts}: {pg_paper.describe({'chains': [ch]})}", flush=True)
    out["chains"] = chains
    return out


# =========================================================================== report


def render(saved: dict) -> str:
    """The markdown report of a saved run."""
    st, results = saved["settings"], pg_paper.with_numbers(saved["results"])
    title = harness.smoke_title("CaliforniaHouses: PG vs CGM vs GrowPrune (PG-BART paper §4.2)", st)
    lines = harness.header_lines(title, saved["meta"])
    draws = st["iters"] - st["burn"]
    ok = [r for r in results if r.get("status") == "ok"]
    ncols = len(ok[0]["columns"]) if ok else "?"
    x_any = ok[0]["x"] if ok else {}
    processes_s = sum(r.get("elapsed_s") or 0.0 for r in results)
    lines += [
        f"* Data: `{st['data']}`, rows with missing total_bedrooms dropped, ocean_proximity "
        f"{'one-hot encoded' if st['one_hot'] else 'dropped'} ({ncols} covariates; the paper's version has 6), "
        f"y = median_house_value / 100,000. Test set: {N_TEST} rows (seed {TEST_SEED}); training sets: {N_TRAIN} "
        f"of the other rows each, seeds {st['train_seeds']}.",
        f"* Model: m = {st['m']}, α = 0.95, β = 2, k = 2 (default BART prior); σ² ~ InverseGamma("
        "`pmt.chipman_sigma2_prior(X, y)`, ν = 3, q = 0.9), σ = √σ², σ² sampled by NUTS; PG with "
        f"{st['particles']} particles (other PGBARTStep defaults).",
        f"* Chains: one per training set, `pm.sample(tune={st['burn']}, draws={draws}, chains=1, cores=1, "
        "random_seed=1000 + training seed)`; each sampler runs in its own process after an untimed 3 + 3 "
        f"iteration warm-up. The samplers' processes took {processes_s / 60:.1f} min in all.",
        "",
        f"Columns: **ESS** of the training log-likelihood Σᵢ log N(yᵢ | μᵢ, σ) over the {draws} kept draws, mean "
        "over training sets [min–max]; *bulk* = rank-normalised split-chain bulk ESS of the single chain "
        "(`benchmarks.metrics.bulk_ess`), *coda* = R-coda `effectiveSize` reimplemented (AR spectral density at 0, "
        "the paper's estimator). **ESS/s** = ESS ÷ sampling time of the whole chain (burn-in + kept draws, "
        f"`pm.sample`'s `sampling_time`). **ms/iter** = sampling time ÷ {st['iters']} (BART step + NUTS step for "
        "σ²); **BART ms/iter** = inside the BART step only. **test RMSE** of the posterior mean, in $100k "
        f"(training-mean predictor: {fmt(x_any.get('rmse_mean'))}, least squares: {fmt(x_any.get('rmse_ols'))}). "
        "**leaves** = mean leaves per tree. Paper figures (2015 pure-Python implementation, their machine, unknown "
        "chain length): compare as ratios between samplers.",
        "",
    ]
    lines += [_main_table(results), ""]
    if st["quick"]:
        lines += ["*--quick run: chains far too short for ESS to mean anything; it only exercises the code.*", ""]
    lines += ["## Details", "", _details(ok), ""]
    if ok:
        lines += [
            f"Estimated wall time of the default run (3 training sets × {DEFAULT_ITERS} iterations) for the "
            "samplers above, "
            f"from this run's ms/iter and process overheads: {_default_run_s(ok) / 60:.1f} min.",
            "",
        ]
    lines += [f"Results: `{saved['meta']['json']}` (summaries; the per-draw log-likelihood and leaf-count traces "
              "are regenerated into `raw/` beside it, outside git, with their sha256 recorded there).", ""]
    for r in results:
        if r.get("status") == "error":
            lines += [f"Error in {r['spec']['sampler']}:", "", "```", (r.get("error") or "")[-3000:], "```", ""]
    return "\n".join(lines + harness.report_footer(saved))


def _default_run_s(ok: list[dict]) -> float:
    """Wall time of a default run, from each sampler's measured ms/iter and process overhead."""
    est = 0.0
    for r in ok:
        overhead = (r.get("elapsed_s") or 0.0) - sum(c["sampling_s"] for c in r["chains"])
        est += overhead + 3 * r["x"]["ms_per_iter"] * 1e-3 * DEFAULT_ITERS
    return est


def _paper(table: dict):
    return lambda r: fmt(table.get(r["spec"]["sampler"]))


def _main_table(results: list[dict]) -> str:
    num = pg_paper.num
    columns = [
        ("sampler", lambda r: LABELS[r["spec"]["sampler"]]),
        ("ESS bulk", pg_paper.ess_cell),
        ("ESS coda", num("ess_coda")),
        ("paper ESS", _paper(PAPER_ESS)),
        ("ESS/s bulk", num("ess_bulk_per_s")),
        ("ESS/s coda", num("ess_coda_per_s")),
        ("paper ESS/s", _paper(PAPER_ESS_PER_S)),
        ("ms/iter", num("ms_per_iter")),
        ("BART ms/iter", num("bart_ms_per_iter")),
        ("test RMSE", num("rmse")),
        ("leaves", num("leaves")),
        ("kept old", num("kept_old")),
        ("stages", num("stages")),
        ("R-hat", num("rhat")),
        ("notes", pg_paper.notes_cell),
    ]
    return harness.column_table(columns, results)


def _details(ok: list[dict]) -> str:
    num = pg_paper.num

    def per_chain(key):
        return lambda r: ", ".join(fmt(c[key]) for c in r["chains"])

    columns = [
        ("sampler", lambda r: LABELS[r["spec"]["sampler"]]),
        ("measured", lambda r: r.get("measured_at", "?")),
        ("per training set: ESS bulk / coda", pg_paper.per_chain_ess),
        ("per training set: test RMSE", per_chain("test_rmse")),
        ("per training set: sampling s", per_chain("sampling_s")),
        ("mean depth", num("depth")),
        ("accept (MH)", num("accept")),
        ("mean σ ($100k)", num("sigma")),
        ("mean log-lik", num("loglik")),
        ("warm-up s", lambda r: fmt(r.get("warmup_s"))),
        ("child wall s", lambda r: fmt(r.get("elapsed_s"))),
        ("other load (cores)", lambda r: fmt(r.get("other_load_cores"))),
        ("peak PSS MB", lambda r: fmt(r.get("peak_pss_sum_mb"))),
    ]
    return harness.column_table(columns, ok) if ok else "(no successful runs)"


# =========================================================================== CLI


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__, quick_help="smoke run: training set 0 only, 100 iterations (50 burn-in)")
    p.add_argument("--samplers", default="pg,cgm,growprune", help=f"comma list from {pg_paper.SAMPLERS}")
    p.add_argument(
        "--iters", type=int, default=None, help=f"iterations per chain incl. burn-in (default {DEFAULT_ITERS})"
    )
    p.add_argument("--burn", type=int, default=None, help=f"burn-in iterations, discarded (default {DEFAULT_BURN})")
    p.add_argument("--train-seeds", default=None, help="training-set seeds, one chain each (default 0,1,2)")
    p.add_argument("--m", type=int, default=200, help="number of trees (default 200)")
    p.add_argument("--particles", type=int, default=10, help="PG: number of particles (default 10)")
    p.add_argument("--one-hot", action="store_true", help="one-hot encode ocean_proximity instead of dropping it")
    p.add_argument("--data", default=str(DEFAULT_DATA), help="path of california_housing.csv")
    args = harness.parse_report_args(p, argv, "pg-california", timeout_min=30.0)
    if not harness.measuring(args):
        return args
    args.samplers = harness.choice_list(args.samplers.lower(), pg_paper.SAMPLERS, p, "sampler(s)")
    if args.iters is None:
        args.iters = 100 if args.quick else DEFAULT_ITERS
    if args.burn is None:
        args.burn = args.iters // 2 if args.quick or args.iters != DEFAULT_ITERS else DEFAULT_BURN
    if not 0 <= args.burn < args.iters:
        p.error("need 0 <= burn < iters")
    args.train_seeds = harness.int_list(args.train_seeds) if args.train_seeds else ([0] if args.quick else [0, 1, 2])
    args.data = Path(args.data).resolve()
    if not args.data.exists():
        p.error(
            f"data file {args.data} not found: this benchmark reads ../shared/data/california_housing.csv "
            "relative to the repository root (no download); pass --data PATH"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    argv, args, code = harness.start(argv, parse_args, worker_body)
    if code is not None:
        return code
    per_run = ("m", "iters", "burn", "train_seeds", "particles", "one_hot")
    settings = {k: getattr(args, k) for k in ("quick", "samplers", *per_run)}
    settings["data"] = harness.rel(args.data)
    print(f"training sets {args.train_seeds}, {args.iters} iters ({args.burn} burn-in) per sampler", file=sys.stderr)
    runs = [(s, {"sampler": s, **{k: settings[k] for k in per_run}, "data": str(args.data)})
            for s in pg_paper.RUN_ORDER if s in args.samplers]
    results = harness.run_specs(MODULE, args, runs, pg_paper.describe)
    raw = pg_paper.move_traces(results, args.json, harness.command_line(MODULE, argv))
    return harness.finish(MODULE, argv, args, settings, results, render, raw=raw)


if __name__ == "__main__":
    sys.exit(main())
