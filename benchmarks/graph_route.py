"""Likelihoods outside the hand-written families: wall time and ESS per second against pymc-bart (issue 45).

    python -m benchmarks.graph_route [--quick] [--cases categorical,ordinal,zip,censored,beta,weibull]
        [--arms native,python,pymc-bart] [--out docs/reports/graph-route.md] [--json PATH]
    python -m benchmarks.graph_route --render-only [--quick | --json PATH]

Each case is a PyMC model whose likelihood is none of the package's families, so our BART takes the graph route
(``routes/graph.py``), as a new user would write it: n = 300 simulated rows, p = 3, m = 20, 2 chains x (300 + 300)
on one core, ``pm.sample()`` with the default steps of each package (ours: ``CGMStep``, the other variables on
NUTS), seed 45. The model is sampled twice in the same process and the **second** ``pm.sample`` is timed, so no
compiling is counted (the first fit's time is reported apart). The arms:

* ``native``: the default, the graph lowered to native code (``routes/native.py``);
* ``python``: the same model with the graph evaluated in Python at every tree update (the route before the
  lowering, and the fallback for graphs that cannot be lowered), by making the lowering decline;
* ``pymc-bart``: pymc-bart's BART and its default PGBART step.

Reported: the timed wall seconds; the bulk ESS of a quantity each model identifies, across both chains, median
over 20 fixed rows, and that per second. The quantities: ``categorical``, the probability of class 0;
``ordinal``, P(y >= 1); ``zip``, the mean of y; ``censored`` (log-normal, right-censored), the median exp(f);
``beta``, the mean logistic(f); ``weibull``, the scale exp(f).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.graph_route"
CASES = ("categorical", "ordinal", "zip", "censored", "beta", "weibull")
ARMS = ("native", "python", "pymc-bart")
N, P, M, SEED, ROWS = 300, 3, 20, 45, 20
FULL = {"tune": 300, "draws": 300, "chains": 2}
QUICK = {"tune": 30, "draws": 30, "chains": 2}


# =========================================================================== worker


def _data(case: str):
    rng = np.random.default_rng(SEED)
    X = rng.uniform(size=(N, P))
    f = 1.5 * np.sin(np.pi * X[:, 0]) + X[:, 1] - 1.0
    if case == "categorical":
        logits = np.stack([f, -f, 0.5 * X[:, 2]])
        p = np.exp(logits - logits.max(0))
        p /= p.sum(0)
        y = np.array([rng.choice(3, p=p[:, i]) for i in range(N)])
    elif case == "ordinal":
        y = np.searchsorted(np.array([-0.5, 0.5]), f + rng.logistic(size=N))
    elif case == "zip":
        y = np.where(rng.random(N) < 0.3, 0, rng.poisson(np.exp(f + 1.0)))
    elif case == "censored":
        y = np.minimum(np.exp(f + 0.5 * rng.normal(size=N)), 2.0)
    elif case == "beta":
        mean = 1.0 / (1.0 + np.exp(-f))
        y = np.clip(rng.beta(mean * 20.0, (1.0 - mean) * 20.0), 1e-6, 1 - 1e-6)
    else:
        y = np.exp(f) * rng.weibull(2.0, size=N)
    return X, y


def _model(case: str, pkg, X, y):
    """The PyMC model of a case; returns the model and a function of the posterior giving the quantity
    (chain, draw, row)."""
    import pymc as pm
    import pytensor.tensor as pt

    with pm.Model() as model:
        if case == "categorical":
            mu = pkg.BART("mu", X, y, m=M, shape=(3, N))
            pm.Categorical("y", p=pt.special.softmax(mu, axis=0).T, observed=y)

            def quantity(post):
                v = post["mu"].values
                e = np.exp(v - v.max(axis=2, keepdims=True))
                return e[:, :, 0] / e.sum(axis=2)
        elif case == "ordinal":
            mu = pkg.BART("mu", X, y.astype(float), m=M)
            cut = pm.Normal("cut", 0.0, 2.0, shape=2, transform=pm.distributions.transforms.ordered,
                            initval=np.array([-0.5, 0.5]))
            pm.OrderedLogistic("y", eta=mu, cutpoints=cut, observed=y)

            def quantity(post):
                c0 = post["cut"].values[..., :1]
                return 1.0 / (1.0 + np.exp(c0 - post["mu"].values))
        elif case == "zip":
            mu = pkg.BART("mu", X, np.log1p(y), m=M)
            psi = pm.Beta("psi", 2.0, 2.0)
            pm.ZeroInflatedPoisson("y", psi, pm.math.exp(mu), observed=y)

            def quantity(post):
                return post["psi"].values[..., None] * np.exp(post["mu"].values)
        elif case == "censored":
            mu = pkg.BART("mu", X, np.log(y), m=M)
            sigma = pm.HalfNormal("sigma", 1.0)
            pm.Censored("y", pm.LogNormal.dist(mu, sigma), lower=None, upper=2.0, observed=y)

            def quantity(post):
                return np.exp(post["mu"].values)
        elif case == "beta":
            mu = pkg.BART("mu", X, np.log(y / (1 - y)), m=M)
            nu = pm.Gamma("nu", 2.0, 0.1)
            pm.Beta("y", mu=pm.math.invlogit(mu), nu=nu, observed=y)

            def quantity(post):
                return 1.0 / (1.0 + np.exp(-post["mu"].values))
        else:
            mu = pkg.BART("mu", X, np.log(y), m=M)
            k = pm.Gamma("k", 2.0, 1.0)
            pm.Weibull("y", alpha=k, beta=pm.math.exp(mu), observed=y)

            def quantity(post):
                return np.exp(post["mu"].values)
    return model, quantity


def worker_body(spec: dict) -> dict:
    import arviz as az
    import pymc as pm

    if spec["arm"] == "pymc-bart":
        import pymc_bart as pkg
    else:
        import pymc_treesamplers as pkg
        import pymc_treesamplers.routes.graph as graph

        if spec["arm"] == "python":
            # the lowering declines, as it does for a graph PyTensor cannot compile to numba
            graph.lower = lambda *a: "the benchmark's python arm"
    X, y = _data(spec["case"])
    model, quantity = _model(spec["case"], pkg, X, y)
    kw = {"tune": spec["tune"], "draws": spec["draws"], "chains": spec["chains"], "cores": 1,
          "random_seed": SEED, "progressbar": False, "compute_convergence_checks": False}
    with model:
        t0 = time.perf_counter()
        pm.sample(**{**kw, "tune": 10, "draws": 10, "chains": 1})
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        idata = pm.sample(**kw)
        wall = time.perf_counter() - t0
    q = quantity(idata.posterior)
    rows = np.linspace(0, N - 1, ROWS).round().astype(int)
    ess = [float(az.ess(q[:, :, i])) for i in rows]
    route = None
    if spec["arm"] != "pymc-bart":
        with model:
            step = pkg.CGMStep([model["mu"]])
        route = "native" if getattr(step.working, "native", None) is not None else "python"
    return {"wall_s": wall, "first_fit_s": first, "ess_median": float(np.median(ess)),
            "ess_per_s": float(np.median(ess)) / wall, "route": route}


def describe(res: dict) -> str:
    return f"{res['wall_s']:.1f} s, ESS {res['ess_median']:.0f}, {res['ess_per_s']:.1f}/s"


# =========================================================================== report


def render(saved: dict) -> str:
    st = saved["settings"]
    title = harness.smoke_title("Likelihoods outside the families: the graph route against pymc-bart", st)
    lines = harness.header_lines(title, saved["meta"], harness.CORE_PACKAGES + ("pymc-bart",), runs=saved["results"])
    lines += [f"* n = {N}, p = {P}, m = {M}, {st['chains']} chains x ({st['tune']} + {st['draws']}), one core, the "
              "second `pm.sample` in the process timed; ESS: bulk, across chains, median over "
              f"{ROWS} rows of the case's quantity. Protocol: `benchmarks/graph_route.py` docstring.", ""]
    by = {(r["spec"]["case"], r["spec"]["arm"]): r for r in saved["results"]}
    rows = []
    for case in st["cases"]:
        cells = [case]
        peer = by.get((case, "pymc-bart"), {})
        for arm in st["arms"]:
            r = by.get((case, arm), {})
            cells += [fmt(r.get("wall_s")), fmt(r.get("ess_per_s"))] if r.get("status") == "ok" else ["—", "—"]
        nat = by.get((case, "native"), {})
        ok = nat.get("status") == "ok" and peer.get("status") == "ok"
        cells += [fmt(nat["wall_s"] / peer["wall_s"]) if ok else "—",
                  fmt(nat["ess_per_s"] / peer["ess_per_s"]) if ok else "—"]
        rows.append(cells)
    head = ["case"] + [h for arm in st["arms"] for h in (f"{arm} s", f"{arm} ESS/s")]
    lines += [md_table(head + ["native / pymc-bart, time", "native / pymc-bart, ESS/s"], rows), ""]
    firsts = [[r["spec"]["case"], r["spec"]["arm"], fmt(r["first_fit_s"]), r.get("route") or "—"]
              for r in saved["results"] if r.get("status") == "ok"]
    lines += ["The first (compiling) fit of each process, 1 chain x (10 + 10), and the route our step took:", "",
              md_table(["case", "arm", "first fit s", "route"], firsts), ""]
    return "\n".join(lines + harness.report_footer(saved, lambda sp: f"{sp['case']} {sp['arm']}"))


# =========================================================================== CLI


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__, quick_help="smoke run: ZIP only, 2 chains x (30 + 30)")
    harness.add_cases_option(p, CASES)
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma list from {list(ARMS)}")
    args = harness.parse_report_args(p, argv, "graph-route", timeout_min=20.0)
    if not harness.measuring(args):
        return args
    args.cases = harness.chosen_cases(args, p, CASES, quick="zip")
    args.arms = harness.choice_list(args.arms, ARMS, p, "arm(s)")
    return args


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    size = QUICK if args.quick else FULL
    settings = {"quick": args.quick, "cases": args.cases, "arms": args.arms, **size}
    runs = [(f"{case} {arm}", {"case": case, "arm": arm, **size}) for case in args.cases for arm in args.arms]
    return settings, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
