"""How the defaults of a non-Gaussian BART were chosen: held-out log score over a grid of leaf prior scales,
numbers of trees and split points, on tuning data sets only (benchmarks/data.py).

    python -m benchmarks.defaults [--quick] [--cases binary,counts,positive,scale] [--json PATH] [--out PATH]
    python -m benchmarks.defaults --render-only [--json PATH]

Under a likelihood that is not Gaussian in the BART value the leaf prior sd is ``sigma_mu = 3 / (k sqrt(m))`` on
the link scale (the sum of the trees then has prior sd ``3 / k`` at every row). The grid, for our BART with
CGM (the default step), 2 chains x (500 + 500), the PyMC models of benchmarks/heldout.py, 3 random 70/30 splits
(stratified for a binary response) of each tuning data set:

* ``binary`` (``breast-cancer``, ``pima``, ``biopsy``): logit with ``k`` in 0.5, 0.75, 1, 1.5, 2 at ``m = 50``;
  ``k`` = 0.5, 1 and 2 at ``m = 200``; ``split_points="range"`` at ``k = 1``, ``m = 50``; probit with ``k`` = 1,
  2 and 3 at ``m = 50``;
* ``counts`` (``biochemists``, ``medpar``): Poisson and negative binomial with ``k`` in 1, 2, 3, 4 at ``m = 50``;
* ``positive`` (``diamond``, ``housing``): Gamma with ``k`` in 1, 2, 3, 4 at ``m = 50``;
* ``scale`` (``engel``, ``bwages``): a variance forest, ``y ~ N(mean, exp(logsd))`` with a mean BART (its
  defaults) and a log-sd BART with ``k`` in 1, 2, 3, 4, 6 at ``m = 50`` (:func:`benchmarks.glm.fit_hetero`, a
  CGMStep for each); then, at the log sd's ``k = 3``, the mean BART's ``k`` (a Normal leaf's, default 2) at 3
  and 4: a mean BART's default leaf scale comes from Y's range, which heteroskedastic noise widens.

The data sets the defaults are then checked on (ionosphere, participation, birthwt, bikes, docvis; mcycle and a
simulation for the log sd) are not here: benchmarks/glm.py and benchmarks/variance.py compare the chosen
defaults with pymc-bart and stochtree on them.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from benchmarks import glm, harness, heldout
from benchmarks.data import HETERO_TUNING, load, split
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.defaults"
CASES = ("binary", "counts", "positive", "scale")
TUNING = {"binary": ("breast-cancer", "pima", "biopsy"), "counts": ("biochemists", "medpar"),
          "positive": ("diamond", "housing"), "scale": HETERO_TUNING}
FULL = {"tune": 500, "draws": 500, "chains": 2, "splits": 3}
QUICK = {"tune": 60, "draws": 60, "chains": 2, "splits": 1}


def _settings(case: str) -> list[tuple[str, int, dict, dict]]:
    """(likelihood, m, BART keywords, the mean BART's keywords for ``scale``) of the grid of one case (module
    docstring)."""
    if case == "binary":
        grid = [("logit", 50, {"k": k}, {}) for k in (0.5, 0.75, 1.0, 1.5, 2.0)]
        grid += [("logit", 200, {"k": k}, {}) for k in (0.5, 1.0, 2.0)]
        grid += [("logit", 50, {"k": 1.0, "split_points": "range"}, {})]
        return grid + [("probit", 50, {"k": k}, {}) for k in (1.0, 2.0, 3.0)]
    if case == "scale":
        grid = [("logsd", 50, {"k": k}, {}) for k in (1.0, 2.0, 3.0, 4.0, 6.0)]
        return grid + [("logsd", 50, {"k": 3.0}, {"k": k}) for k in (3.0, 4.0)]
    liks = ("poisson", "negbinomial") if case == "counts" else ("gamma",)
    return [(lik, 50, {"k": k}, {}) for lik in liks for k in (1.0, 2.0, 3.0, 4.0)]


def _label(spec: dict) -> str:
    extra = "".join(f", {k}={v}" for k, v in spec["bart"].items() if k != "k")
    mean = "".join(f", mean {k} = {v:g}" for k, v in spec.get("mean", {}).items())
    return f"{spec['likelihood']}, m = {spec['m']}, k = {spec['bart']['k']:g}{extra}{mean}"


def render(saved: dict) -> str:
    st, results = saved["settings"], saved["results"]
    ok = [r for r in results if r.get("status") == "ok"]
    lines = harness.header_lines("Choosing the defaults of a non-Gaussian BART (tuning data sets only)", saved["meta"])
    lines += [f"* Our BART with CGM (the default step), {st['chains']} chains x ({st['tune']} + {st['draws']}), "
              f"{st['splits']} random 70/30 splits per data set; held-out log score (mean log predictive probability "
              "or density of the test rows; higher is better), mean over the splits. `k`: the leaf prior sd on the "
              "link scale is 3 / (k sqrt(m)).", ""]
    for case in st["cases"]:
        rows = [r for r in ok if r["spec"]["case"] == case]
        if not rows:
            continue
        datasets = TUNING[case]
        labels = list(dict.fromkeys(_label(r["spec"]) for r in rows))
        table = []
        for label in labels:
            cells, means = [], []
            for d in datasets:
                vals = [r["log_score"] for r in rows if _label(r["spec"]) == label and r["spec"]["data"] == d]
                cells.append(fmt(float(np.mean(vals))) if vals else "—")
                if vals:
                    means.append(float(np.mean(vals)))
            acc = [r["mh_accept"] for r in rows if _label(r["spec"]) == label and "mh_accept" in r]
            table.append([label, *cells, fmt(float(np.mean(means))) if len(means) == len(datasets) else "—",
                          fmt(float(np.mean(acc))) if acc else "—"])
        lines += [f"## {case}", "", md_table(["setting", *datasets, "mean over data sets", "MH acceptance"], table),
                  ""]
    # only failures: no timing is read here, so contention does not matter
    lines += harness.run_notes([r for r in results if r.get("status") != "ok"],
                               lambda sp: f"{sp['data']} {_label(sp)} seed {sp['seed']}")
    return "\n".join(lines + harness.report_footer(saved))


def _variance_forest(spec: dict) -> dict:
    """A ``scale`` case's fit: the held-out log density of a mean and a log-sd BART (the grid's ``k`` on the log sd,
    its mean keywords on the mean)."""
    X, y = load(spec["data"])
    tr, te = split(y, spec["seed"], binary=False)
    fit = {"method": "ours-cgm", "logsd": spec["bart"], "mean": spec.get("mean", {}),
           **{k: spec[k] for k in ("m", "seed", "tune", "draws", "chains")}}
    m_draws, s_draws, wall, extra = glm.fit_hetero(fit, X[tr], y[tr], X[te])
    return {"wall_s": wall, "log_score": glm.hetero_log_score(y[te], m_draws, s_draws), **extra}


def worker_body(spec: dict) -> dict:
    return _variance_forest(spec) if spec["case"] == "scale" else heldout.run(spec)


def parse_args(argv: list[str]):
    return harness.parse_case_args(argv, MODULE, __doc__, CASES, "defaults",
                                   "smoke run: one split each, 60 + 60 draws", timeout_min=20.0)


def _describe(res: dict) -> str:
    return f"log score {res['log_score']:.4g}"


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    """Each chosen case's grid of defaults on each of its tuning data sets, one run per split."""
    st = harness.chosen_settings(args, QUICK, FULL, cases=args.cases)
    runs = []
    for case in args.cases:
        for lik, m, bart, mean in _settings(case):
            for data in TUNING[case]:
                for seed in range(st["splits"]):
                    spec = {"case": case, "data": data, "likelihood": lik, "method": "ours", "m": m, "bart": bart,
                            "seed": seed, "tune": st["tune"], "draws": st["draws"], "chains": st["chains"],
                            **({"mean": mean} if mean else {})}
                    runs.append((f"{case} {data} {_label(spec)} {seed}".replace(" ", "_").replace(",", ""), spec))
    return st, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, _describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
