"""Sparse variable selection: the Dirichlet split prior (DART) on Friedman #1 with many noise covariates.

    python -m benchmarks.sparsity [--quick] [--covariates 10,100,1000]
        [--samplers uniform,dirichlet,pymc-bart,stochtree] [--out docs/reports/sparsity-benchmark.md] [--json PATH]
    python -m benchmarks.sparsity --render-only [--quick | --json PATH]

Issue 16's protocol: Friedman #1 (``datasets.friedman1_train_test``, seed 1234, n = 1000 training rows,
1000 noise-free test rows) with p = 10, 100 and 1000 covariates, of which x1..x5 are the relevant ones;
m = 200 trees, 2 chains x (1000 tune + 1000 draws), sigma ~ HalfNormal(sd(y)) for the PyMC arms,
every arm of one p in one run, each in its own child process (``benchmarks.harness``):

* uniform: ``pmt.CGMStep`` with equal split weights (the default prior);
* dirichlet: ``pmt.CGMStep`` with ``split_prior="dirichlet"`` (Linero 2018's defaults);
* pymc-bart: its default PGBART step and uniform split prior (it has no Dirichlet prior);
* stochtree: grow/prune MCMC, no warm start, its default (uniform) variable weights.

Reported: test RMSE of the posterior mean of f, the share of all splits (over trees and kept draws) on
x1..x5, the posterior inclusion probability (share of draws splitting on the covariate at least once)
of the least included of x1..x5 and the mean and largest over the noise covariates, and wall time.
"""

from __future__ import annotations

import argparse
import time

from benchmarks import friedman, harness
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.sparsity"
SAMPLERS = ["uniform", "dirichlet", "pymc-bart", "stochtree"]
LABELS = {"uniform": "pmt CGM, uniform weights", "dirichlet": "pmt CGM, Dirichlet (DART)",
          "pymc-bart": "pymc-bart (PGBART)", "stochtree": "stochtree (GP MCMC)"}
COVARIATES = [10, 100, 1000]
SEED, N, M, RELEVANT = 1234, 1000, 200, 5
TARGET_P, TARGET_SHARE = 100, 0.8


def worker_body(spec: dict) -> dict:
    from pymc_treesamplers.datasets import friedman1_train_test

    X, y, _, X_test, f_test = friedman1_train_test(N, SEED, n_test=friedman.N_TEST, p=spec["p"])
    sampler = spec["sampler"]
    fspec = {"sampler": "cgm" if sampler in ("uniform", "dirichlet") else sampler, "m": M, "tune": spec["tune"],
             "draws": spec["draws"], "chains": spec["chains"], "cores": 2, "seed": SEED, "threads": 1,
             "relevant": RELEVANT, "split_prior": "dirichlet" if sampler == "dirichlet" else None}
    fit = friedman._fit_stochtree if sampler == "stochtree" else friedman._fit_pymc
    t0 = time.perf_counter()
    info, sigma, f_draws = fit(fspec, X, y, X_test)
    out = {"fit_s": time.perf_counter() - t0, **info}
    out.update(friedman.fit_metrics(sigma, f_draws, f_test, info["wall_s"]))
    return out


def describe(res: dict) -> str:
    return (f"RMSE {res['rmse_test']:.3f}, x1..x5 share {res['split_share_relevant']:.2f}, "
            f"mean PIP noise {fmt(res['pip_noise_mean'])}, {res['wall_s']:.0f} s")


def render(saved: dict) -> str:
    st = saved["settings"]
    title = harness.smoke_title("Sparse variable selection: Friedman #1 with noise covariates", st)
    lines = harness.header_lines(title, saved["meta"], runs=saved["results"])
    lines += [
        f"* Friedman #1, n = {N} training rows, 1000 noise-free test rows, seed {SEED}; x1..x5 relevant, the other "
        f"p - 5 covariates U(0, 1) noise; m = {M}, {st['chains']} chains x ({st['tune']} tune + {st['draws']} "
        "draws) per arm. Protocol: `benchmarks/sparsity.py` docstring.",
        "* **share x1..x5**: splits on x1..x5 over all splits of all trees and kept draws; **PIP**: share of kept "
        "draws whose forest splits on the covariate at least once (Linero 2018 selects PIP > 0.5); **noise "
        "selected**: noise covariates with PIP > 0.5.",
        "",
    ]
    rows, by = [], {}
    for r in saved["results"]:
        sp = r["spec"]
        by[(sp["p"], sp["sampler"])] = r
        if r.get("status") != "ok":
            rows.append([sp["p"], LABELS[sp["sampler"]], f"**{r.get('status')}**", "", "", "", "", "", ""])
            continue
        rows.append([sp["p"], LABELS[sp["sampler"]], fmt(r["rmse_test"]), fmt(r["split_share_relevant"]),
                     fmt(r["pip_relevant_min"]), fmt(r["pip_noise_mean"]), fmt(r["pip_noise_max"]),
                     r["n_noise_selected"], fmt(r["wall_s"])])
    lines += [md_table(["p", "arm", "test RMSE", "share x1..x5", "min PIP x1..x5", "mean PIP noise",
                        "max PIP noise", "noise selected", "wall s"], rows), ""]
    new, base = by.get((TARGET_P, "dirichlet")), by.get((TARGET_P, "uniform"))
    if new and base and new.get("status") == "ok" and base.get("status") == "ok":
        lines += ["## Targets (issue 16)", ""]
        lines += [md_table(["target", "measured", "verdict"], [
            [f"p = {TARGET_P}: at least {TARGET_SHARE:.0%} of splits on x1..x5", fmt(new["split_share_relevant"]),
             "✅ met" if new["split_share_relevant"] >= TARGET_SHARE else "❌ not met"],
            [f"p = {TARGET_P}: test RMSE no worse than the uniform prior's",
             f"{fmt(new['rmse_test'])} vs {fmt(base['rmse_test'])}",
             "✅ met" if new["rmse_test"] <= base["rmse_test"] else "❌ not met"],
        ]), ""]
    return "\n".join(lines + harness.report_footer(saved, lambda sp: f"p = {sp['p']} {sp['sampler']}"))


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__, quick_help="smoke run: 2 chains x (50 + 50), p = 100 only")
    p.add_argument("--covariates", default=None, help="comma list of p (default 10,100,1000)")
    p.add_argument("--samplers", default=",".join(SAMPLERS), help=f"comma list from {SAMPLERS}")
    args = harness.parse_report_args(p, argv, "sparsity-benchmark", timeout_min=60.0)
    if not harness.measuring(args):
        return args
    args.covariates = harness.int_list(args.covariates or ("100" if args.quick else ",".join(map(str, COVARIATES))))
    args.samplers = harness.choice_list(args.samplers, SAMPLERS, p, "sampler(s)")
    return args


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    n = (2, 50, 50) if args.quick else (2, 1000, 1000)
    settings = {"quick": args.quick, "covariates": args.covariates, "samplers": args.samplers,
                "chains": n[0], "tune": n[1], "draws": n[2]}
    return settings, [(f"p={p} {s}", {"p": p, "sampler": s, "chains": n[0], "tune": n[1], "draws": n[2]})
                      for p in args.covariates for s in args.samplers]


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, describe, render, plan)


if __name__ == "__main__":
    raise SystemExit(main())
