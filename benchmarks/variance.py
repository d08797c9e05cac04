"""Variance forests: a mean BART and a log-sd BART against stochtree's heteroskedastic BART, held out.

    python -m benchmarks.variance [--quick] [--json PATH] [--out PATH]
    python -m benchmarks.variance --render-only [--json PATH]

Cases (the fits of :func:`benchmarks.glm.fit_hetero`, 50 trees in each forest):

* ``mcycle``: MASS's motorcycle crash data (133 rows, acceleration against time, visibly heteroskedastic),
  5 random 70/30 splits (``--quick``: 1);
* ``sim``: the heteroskedastic simulation of benchmarks/glm.py (n = 500 to fit, 500 held out), 5 seeds
  (``--quick``: 1; glm.py runs 3 of them).

Methods: ``ours-cgm``, ``y ~ N(mean, exp(logsd))`` with two BARTs and their default priors (the log sd's leaves
Normal on the log scale), CGMStep for each, 2 chains x (500 + 500); ``ours-cgm-k3``, the same with the mean BART's
``k = 3`` (docs/basis.md's recipe for a variance forest, chosen on the tuning sets of ``make bench-defaults-scale``);
``stochtree``, its ``BARTModel`` with a mean
forest and a variance forest of 50 trees each (an inverse-gamma prior on each leaf's multiplicative variance),
500 burn-in and 500 MCMC draws in each of 2 chains. Score: the held-out log predictive density (mean over test
rows of the log of the posterior predictive density, a Normal at each draw); for ``sim`` also the RMSE of the
mean and log-sd functions against the truth.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from benchmarks import glm, harness
from benchmarks.data import load, split
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.variance"
CASES = ("mcycle", "sim")
METHODS = ("ours-cgm", "ours-cgm-k3", "stochtree")
# the arms that are our model with other keywords: (the fit's method, its keywords)
ARMS = {"ours-cgm-k3": ("ours-cgm", {"mean": {"k": 3.0}})}
FULL = {"tune": 500, "draws": 500, "chains": 2, "splits": 5, "m": 50}
QUICK = {"tune": 100, "draws": 100, "chains": 2, "splits": 1, "m": 50}


def worker_body(spec: dict) -> dict:
    if spec["case"] == "sim":
        (Xtr, _, _, ytr), (Xte, fte, ste, yte) = glm.hetero_data(spec["seed"])
    else:
        X, y = load(spec["case"])
        tr, te = split(y, spec["seed"], binary=False)
        Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
    method, extra = ARMS.get(spec["method"], (spec["method"], {}))
    m_draws, s_draws, wall, _ = glm.fit_hetero({**spec, "method": method, **extra}, Xtr, ytr, Xte)
    out = {"wall_s": wall, "log_score": glm.hetero_log_score(yte, m_draws, s_draws)}
    if spec["case"] == "sim":
        out["rmse_mean"] = float(np.sqrt(np.mean((m_draws.mean(axis=0) - fte) ** 2)))
        out["rmse_log_sd"] = float(np.sqrt(np.mean((s_draws.mean(axis=0) - ste) ** 2)))
    return out


def render(saved: dict) -> str:
    st, results = saved["settings"], saved["results"]
    ok = [r for r in results if r.get("status") == "ok"]
    lines = harness.header_lines("Variance forests against stochtree's heteroskedastic BART, held out", saved["meta"])
    lines += [f"* {st['splits']} splits (mcycle) or seeds (sim); {st['m']} trees per forest; {st['chains']} chains x "
              f"({st['tune']} + {st['draws']}) for both. Design: `benchmarks/variance.py`.", ""]
    for case in st["cases"]:
        rows = []
        for method in METHODS:
            rs = [r for r in ok if r["spec"]["case"] == case and r["spec"]["method"] == method]
            if rs:
                row = [method, str(len(rs)), fmt(np.mean([r["log_score"] for r in rs])),
                       " ".join(fmt(r["log_score"]) for r in sorted(rs, key=lambda r: r["spec"]["seed"]))]
                if case == "sim":
                    row += [fmt(np.mean([r["rmse_mean"] for r in rs])), fmt(np.mean([r["rmse_log_sd"] for r in rs]))]
                rows.append(row + [fmt(np.median([r["wall_s"] for r in rs]))])
        head = ["method", "fits", "log score (mean)", "per split"]
        head += ["RMSE of the mean", "RMSE of the log sd"] if case == "sim" else []
        title = ("mcycle (MASS), random 70/30 splits" if case == "mcycle"
                 else "Simulation of benchmarks/glm.py, n = 500 / 500")
        lines += [f"## {title}", "", "Held-out log predictive density per row (higher is better).", "",
                  md_table(head + ["wall s (median)"], rows), ""]
    lines += harness.run_notes(results, lambda sp: f"{sp['case']} {sp['method']} seed {sp['seed']}")
    return "\n".join(lines + harness.report_footer(saved))


def parse_args(argv: list[str]):
    return harness.parse_case_args(argv, MODULE, __doc__, CASES, "variance", "smoke run: one split each, 100 + 100",
                                   timeout_min=20.0)


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    """Every method on each chosen case, one run per split."""
    st = harness.chosen_settings(args, QUICK, FULL, cases=args.cases)
    mcmc = {k: st[k] for k in ("tune", "draws", "chains", "m")}
    runs = [(f"{case} {method} {seed}", {"case": case, "method": method, "seed": seed, **mcmc})
            for case in args.cases for seed in range(st["splits"]) for method in METHODS]
    return st, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, glm.describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
