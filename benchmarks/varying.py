"""Varying coefficients: leaves with a basis against constant leaves and stochtree's ``leaf_basis``, held out.

    python -m benchmarks.varying [--quick] [--json PATH] [--out PATH]
    python -m benchmarks.varying --render-only [--json PATH]

Data (:func:`varying_data`): ``X ~ U(0, 1)^5`` and a sixth covariate ``x ~ N(0, 1)``; the truth is linear in ``x``
within regions of X: ``f = a(X) + b(X) x`` with ``a = 2 [x1 > 0.5] - 1 + sin(2 pi x3)`` and
``b = 3 [x2 > 0.5] - 1.5 + [x4 > 0.7]``; ``y = f + N(0, 0.5^2)``; n = 500 to fit, 500 held out; 5 seeds
(``--quick``: 1). Every method splits on the same six covariates ``[X, x]``.

* ``constant``: ours, ``y ~ N(BART([X, x]), sigma)``, 200 trees;
* ``basis``: ours, the composition of docs/basis.md, ``y ~ N(a + b, sigma)`` with ``a = BART([X, x])`` and
  ``b = BART([X, x], leaf_basis=x)``, 100 trees each (200 in all), so one forest per basis column ``[1, x]``;
* ``vector``: ours, one forest whose leaves hold a coefficient vector on ``[1, x]`` (shared partitions, as
  stochtree's ``leaf_basis``), ``y ~ N(BART([X, x], leaf_basis=[1, x]), sigma)``, 200 trees, the coefficients'
  default prior (model/basis.py);
* both: ``sigma ~ HalfNormal(sd(y))``, ``pm.sample``'s step assignment, 2 chains x (500 + 500);
* ``stochtree-basis``: stochtree's ``BARTModel`` with ``leaf_basis = [1, x]`` (a coefficient vector per leaf,
  shared partitions), every other setting its default (200 trees, 5 grow-from-root sweeps, 100 MCMC draws);
* ``stochtree``: the same with constant leaves.

Scores: RMSE of the posterior mean at the held-out rows against the true ``f`` and against ``y``; wall time.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.varying"
METHODS = ("constant", "basis", "vector", "stochtree-basis", "stochtree")
FULL = {"seeds": 5, "tune": 500, "draws": 500, "chains": 2, "n": 500}
QUICK = {"seeds": 1, "tune": 100, "draws": 100, "chains": 2, "n": 500}


def varying_data(seed: int, n: int):
    """Two draws of ``(X, x, f, y)`` (to fit, held out) of the design in the module docstring."""
    rng = np.random.default_rng([seed, 46, 2])

    def draw():
        X = rng.uniform(size=(n, 5))
        x = rng.standard_normal(n)
        a = 2.0 * (X[:, 0] > 0.5) - 1.0 + np.sin(2 * np.pi * X[:, 2])
        b = 3.0 * (X[:, 1] > 0.5) - 1.5 + 1.0 * (X[:, 3] > 0.7)
        f = a + b * x
        return np.column_stack([X, x]), x, f, f + 0.5 * rng.standard_normal(n)

    return draw(), draw()


def worker_body(spec: dict) -> dict:
    (X, x, _, y), (X_te, x_te, f_te, y_te) = varying_data(spec["seed"], spec["n"])
    t0 = time.perf_counter()
    if spec["method"] in ("constant", "basis", "vector"):
        import pymc as pm

        import pymc_treesamplers as pmt

        with pm.Model():
            if spec["method"] == "constant":
                pmt.BART("f", X, y, m=200)
                names = ("f",)
                mean = pm.modelcontext(None)["f"]
            elif spec["method"] == "vector":
                mean = pmt.BART("f", X, y, m=200, leaf_basis=np.column_stack([np.ones_like(x), x]))
                names = ("f",)
            else:
                a = pmt.BART("a", X, y, m=100)
                mean = a + pmt.BART("b", X, y, m=100, leaf_basis=x)
                names = ("a", "b")
            sigma = pm.HalfNormal("sigma", float(np.std(y)))
            pm.Normal("y", mean, sigma, observed=y)
            idata = pm.sample(tune=spec["tune"], draws=spec["draws"], chains=spec["chains"], cores=1,
                              random_seed=spec["seed"] + 1, progressbar=False, compute_convergence_checks=False)
        if spec["method"] == "vector":  # the coefficients (chain, draw, 2, n) on the held-out rows' basis
            coef = pmt.predict(idata, X_te, "f")
            pred = (coef[..., 0, :] + x_te * coef[..., 1, :]).reshape(-1, len(y_te))
        else:
            pred = pmt.predict(idata, X_te, names[0]).reshape(-1, len(y_te))
        if spec["method"] == "basis":
            pred = pred + x_te * pmt.predict(idata, X_te, "b").reshape(-1, len(y_te))
    else:
        from stochtree import BARTModel

        model = BARTModel()
        basis = spec["method"] == "stochtree-basis"
        W, W_te = (np.column_stack([np.ones_like(x), x]), np.column_stack([np.ones_like(x_te), x_te])) if basis \
            else (None, None)
        model.sample(X_train=X, y_train=y, leaf_basis_train=W, general_params={"random_seed": spec["seed"] + 1})
        pred = np.asarray(model.predict(X=X_te, leaf_basis=W_te, terms="y_hat")).T
    wall = time.perf_counter() - t0
    fit = pred.mean(axis=0)
    return {"wall_s": wall, "rmse_f": float(np.sqrt(np.mean((fit - f_te) ** 2))),
            "rmse_y": float(np.sqrt(np.mean((fit - y_te) ** 2)))}


def render(saved: dict) -> str:
    st, results = saved["settings"], saved["results"]
    ok = [r for r in results if r.get("status") == "ok"]
    lines = harness.header_lines("Varying coefficients: leaves with a basis, held out", saved["meta"])
    lines += [f"* {st['seeds']} seeds, n = {st['n']} to fit and {st['n']} held out; ours: {st['chains']} chains x "
              f"({st['tune']} + {st['draws']}); stochtree: its defaults. Design and models: `benchmarks/varying.py`.",
              ""]
    rows, per_seed = [], []
    for method in METHODS:
        rs = [r for r in ok if r["spec"]["method"] == method]
        if rs:
            rows.append([method, str(len(rs)), fmt(np.mean([r["rmse_f"] for r in rs])),
                         fmt(np.mean([r["rmse_y"] for r in rs])), fmt(np.median([r["wall_s"] for r in rs]))])
    for seed in range(st["seeds"]):
        by = {r["spec"]["method"]: r for r in ok if r["spec"]["seed"] == seed}
        per_seed.append([str(seed), *[fmt(by[m]["rmse_f"]) if m in by else "—" for m in METHODS]])
    lines += ["## Held-out RMSE", "", "RMSE of the posterior mean at the held-out rows against the true f (and "
              "against y); means over seeds; wall: the median fit's seconds (ours: the first fit of a process "
              "compiles).", "", md_table(["method", "fits", "RMSE vs f", "RMSE vs y", "wall s"], rows), "",
              "## Per seed (RMSE vs f)", "", md_table(["seed", *METHODS], per_seed), ""]
    lines += harness.run_notes(results, lambda sp: f"{sp['method']} seed {sp['seed']}")
    return "\n".join(lines + harness.report_footer(saved))


def parse_args(argv: list[str]):
    return harness.parse_case_args(argv, MODULE, __doc__, METHODS, "varying", "smoke run: 1 seed, 100 + 100",
                                   timeout_min=20.0)


def _describe(res: dict) -> str:
    return f"RMSE vs f {res['rmse_f']:.3g}, wall {res['wall_s']:.3g} s"


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    """Every chosen method, one run per seed."""
    st = harness.chosen_settings(args, QUICK, FULL, methods=args.cases)
    mcmc = {k: st[k] for k in ("tune", "draws", "chains", "n")}
    runs = [(f"{method} {seed}", {"method": method, "seed": seed, **mcmc})
            for seed in range(st["seeds"]) for method in args.cases]
    return st, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, _describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
