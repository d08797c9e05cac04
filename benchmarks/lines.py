"""Lines in the leaves (``response="linear"``, ``"mix"``) against constant leaves and pymc-bart's own, held out.

    python -m benchmarks.lines [--quick] [--json PATH] [--out PATH]
    python -m benchmarks.lines --render-only [--json PATH]

Data: five public regression sets (benchmarks/data.py; none was used to choose a default of this package), a
response on the log scale where it is a price or a wage, and two simulations:

* ``housing`` (546 x 11, log price), ``diamond`` (308 x 4, log price), ``bwages`` (1472 x 2, log hourly wage),
  ``engel`` (235 x 1, log food expenditure against income), ``mcycle`` (133 x 1, acceleration against time);
* ``varying``: benchmarks/varying.py's design (n = 500; ``f = a(X) + b(X) x``, linear in ``x`` within regions);
* ``friedman``: Friedman #1 (n = 500, 10 covariates, 5 of them noise).

Each set is split 70/30 at random (3 seeds; the simulations draw 500 fresh held-out rows). Every method fits
``y ~ N(BART(X), sigma)``, ``sigma ~ HalfNormal(sd(y))``, 50 trees (pymc-bart's default), 2 chains x
(``tune`` + ``draws``) in two processes, ``pm.sample``'s step assignment:

* ``constant``, ``linear``, ``mix``: ours with ``response=`` that (docs/basis.md, "Lines in the leaves");
* ``pymc-bart``, ``pymc-bart-linear``: pymc-bart with ``response="constant"`` and ``"linear"`` (its least-squares
  lines), predicted at the held-out rows from its tree histories (benchmarks/friedman.py).

Scores: RMSE of the posterior mean at the held-out rows against the held-out ``y`` (and against the true ``f`` for
the simulations); wall time of the fit.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.lines"
METHODS = ("constant", "linear", "mix", "pymc-bart", "pymc-bart-linear")
DATASETS = ("housing", "diamond", "bwages", "engel", "mcycle", "varying", "friedman")
LOG_Y = ("housing", "diamond", "bwages", "engel")
FULL = {"seeds": 3, "tune": 300, "draws": 300, "chains": 2, "m": 50}
QUICK = {"seeds": 1, "tune": 100, "draws": 100, "chains": 2, "m": 50}


def data(name: str, seed: int):
    """``(X, y, X_te, y_te, f_te)`` of a data set of the module docstring (``f_te`` None for real data)."""
    if name == "varying":
        from benchmarks.varying import varying_data

        (X, _, _, y), (X_te, _, f_te, y_te) = varying_data(seed, 500)
        return X, y, X_te, y_te, f_te
    if name == "friedman":
        from pymc_treesamplers.datasets import friedman1

        X, y, _ = friedman1(500, rng=seed)
        X_te, y_te, f_te = friedman1(500, rng=1000 + seed)
        return X, y, X_te, y_te, f_te
    from benchmarks.data import load, split

    X, y = load(name)
    if name in LOG_Y:
        y = np.log(y)
    tr, te = split(y, seed, binary=False)
    return X[tr], y[tr], X[te], y[te], None


def worker_body(spec: dict) -> dict:
    import pymc as pm

    X, y, X_te, y_te, f_te = data(spec["dataset"], spec["seed"])
    method = spec["method"]
    pymc_bart = method.startswith("pymc-bart")
    if pymc_bart:
        import pymc_bart as pkg
    else:
        import pymc_treesamplers as pkg
    response = "linear" if method in ("linear", "pymc-bart-linear") else "mix" if method == "mix" else "constant"
    t0 = time.perf_counter()
    with pm.Model():
        mu = pkg.BART("mu", X, y, m=spec["m"], response=response)
        sigma = pm.HalfNormal("sigma", float(np.std(y)))
        pm.Normal("y", mu, sigma, observed=y)
        # chains in parallel processes: pymc-bart keeps one tree history per process (sequential chains share one)
        idata = pm.sample(tune=spec["tune"], draws=spec["draws"], chains=spec["chains"], cores=spec["chains"],
                          random_seed=spec["seed"] + 1, progressbar=False, compute_convergence_checks=False)
    wall = time.perf_counter() - t0
    if pymc_bart:
        from benchmarks.friedman import _pymc_bart_f_draws

        pred, _ = _pymc_bart_f_draws(mu, idata, X, X_te, allow_unmatched=True)
    else:
        pred = pkg.predict(idata, X_te, "mu")
    fit = np.asarray(pred).reshape(-1, len(y_te)).mean(axis=0)
    out = {"wall_s": wall, "rmse_y": float(np.sqrt(np.mean((fit - y_te) ** 2))),
           "sigma": float(idata.posterior["sigma"].mean())}
    if f_te is not None:
        out["rmse_f"] = float(np.sqrt(np.mean((fit - f_te) ** 2)))
    return out


def render(saved: dict) -> str:
    st, results = saved["settings"], saved["results"]
    ok = [r for r in results if r.get("status") == "ok"]
    methods = [m for m in METHODS if m in st["methods"]]
    lines = harness.header_lines("Lines in the leaves, held out", saved["meta"])
    lines += [f"* {st['seeds']} splits per data set; every method {st['m']} trees, {st['chains']} chains x "
              f"({st['tune']} + {st['draws']}). Data and models: `benchmarks/lines.py`.", ""]
    rows, walls, wins = [], [], {m: 0 for m in methods}
    for name in DATASETS:
        cell = {}
        for m in methods:
            rs = [r for r in ok if r["spec"]["dataset"] == name and r["spec"]["method"] == m]
            if rs:
                key = "rmse_f" if "rmse_f" in rs[0] else "rmse_y"
                cell[m] = float(np.mean([r[key] for r in rs]))
        if not cell:
            continue
        best = min(cell.values())
        for m, v in cell.items():
            wins[m] += v <= best * 1.0000001
        rows.append([name + (" (vs f)" if name in ("varying", "friedman") else ""),
                     *[fmt(cell[m]) if m in cell else "—" for m in methods]])
    for m in methods:
        rs = [r for r in ok if r["spec"]["method"] == m]
        if rs:
            walls.append([m, fmt(np.median([r["wall_s"] for r in rs]))])
    lines += ["## Held-out RMSE", "", "Mean over splits of the RMSE of the posterior mean at the held-out rows, "
              "against y (real data) or the true f (simulations); lower is better.", "",
              md_table(["data", *methods], rows), "",
              "Data sets where each method is best: " + ", ".join(f"{m} {wins[m]}" for m in methods) + ".", "",
              "## Wall time", "", "Median seconds per fit (a child process per fit: ours includes loading its "
              "compiled kernels from numba's cache, pymc-bart its Rust extension).", "",
              md_table(["method", "median wall s"], walls), ""]
    lines += harness.run_notes(results, lambda sp: f"{sp['method']} {sp['dataset']} seed {sp['seed']}")
    return "\n".join(lines + harness.report_footer(saved))


def parse_args(argv: list[str]):
    return harness.parse_case_args(argv, MODULE, __doc__, METHODS, "lines", "smoke run: 1 split, 100 + 100",
                                   timeout_min=20.0)


def _describe(res: dict) -> str:
    return f"RMSE {res.get('rmse_f', res['rmse_y']):.3g}, wall {res['wall_s']:.3g} s"


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    """Every chosen method on every data set, one run per seed."""
    st = harness.chosen_settings(args, QUICK, FULL, methods=args.cases)
    mcmc = {k: st[k] for k in ("tune", "draws", "chains", "m")}
    runs = [(f"{method} {name} {seed}", {"method": method, "dataset": name, "seed": seed, **mcmc})
            for name in DATASETS for seed in range(st["seeds"]) for method in args.cases]
    return st, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, _describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
