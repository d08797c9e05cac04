"""Monotone constraints (``BART(monotone=...)``) against the same model without them and LightGBM's, held out; and
what a constrained sweep costs.

    python -m benchmarks.monotone [--quick] [--cases heldout,speed] [--methods constrained,free,lightgbm]
                                  [--json PATH] [--out PATH]
    python -m benchmarks.monotone --render-only [--json PATH]

``heldout``: three methods on two simulations and one public data set.

* ``constrained``: ours, ``y ~ N(BART(X, monotone=...), sigma)``, ``sigma ~ HalfNormal(sd(y))``, 50 trees, 2
  chains x (``tune`` + ``draws``) in two processes, ``pm.sample``'s step assignment (CGMStep for the trees);
* ``free``: the same model without ``monotone=`` (the unconstrained default);
* ``lightgbm``: LightGBM's ``LGBMRegressor`` with ``monotone_constraints`` in the same directions and its
  defaults otherwise; its 90% interval from two more fits, ``objective="quantile"``, ``alpha`` 0.05 and 0.95,
  without the constraints (LightGBM refuses ``monotone_constraints`` with the quantile objective).

Data (x ~ U(0, 1) iid in the simulations; n = 500 training rows and 500 fresh held-out rows of known f per seed):

* ``s1``: p = 5, ``f = 3 expit(8 (x0 - 0.5)) + 2 x1^2 - x2 + 0.8 sin(2 pi x3)``, noise sd 0.5, constraints
  ``[1, 1, -1, 0, 0]`` (x3 enters non-monotonely and is left free, x4 is noise);
* ``s2``: a dose-response surface, p = 4, ``f = log(1 + 5 x0) (1 + x1) - 1.5 x2``, noise sd 0.3, constraints
  ``[1, 1, -1, 0]`` (f rises in the dose x0 and in x1 everywhere, since ``1 + x1 > 0`` and ``log(1 + 5 x0) >= 0``,
  and falls in x2; x3 is noise);
* ``boston``: Boston housing (``pymc_treesamplers.datasets.load_boston``, shipped with the package: 506 x 13,
  ``medv`` in $1000s), split 70/30 at random (``benchmarks.data.split``). Constrained only where the direction
  is textbook (Harrison & Rubinfeld 1978): ``rm`` (rooms per dwelling) +1 and ``lstat`` (% lower-status
  population) -1, given to ours as a dict keyed by the DataFrame's column names; the other 11 columns free.

Scores at the held-out rows: RMSE of the posterior mean (LightGBM: its point fit) against y and, for the
simulations, against the true f; coverage and mean width of the 90% interval for y (ours: the posterior
predictive interval, each draw's BART value plus Normal noise of that draw's sigma; LightGBM: the 5% and 95%
quantile fits) and, for the simulations, of ours' 90% credible interval of f; the share of wrong-way steps of the
point fit along each constrained column (50 held-out rows, each moved over 21 quantiles of that column's training
values, every other covariate held); wall time of the fit (LightGBM: its three fits).

``speed``: seconds per sweep of CGMStep and GrowPruneStep with and without constraints on Friedman #1
(``pymc_treesamplers.datasets.friedman1``, n = 10,000, p = 10, seed 1234, m = 200), constrained in its
monotone columns x3 and x4 (0-based; ``10 x3 + 5 x4`` in f) at +1, the same model (``sigma ~ HalfNormal(sd(y))``,
NUTS for sigma). Each configuration in its own child process: an untimed ``pm.sample`` compiles (or loads) the
kernels, then every call of the tree step is timed (``benchmarks.instrument.StepRecorder``) and the median
over the draws after tuning kept. Configurations alternate free and constrained, ``speed_repeats`` times each.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.monotone"
CASES = ("heldout", "speed")
METHODS = ("constrained", "free", "lightgbm")
DATASETS = ("s1", "s2", "boston")
SIMULATED = ("s1", "s2")
SAMPLERS = ("CGMStep", "GrowPruneStep")
BOSTON_MONOTONE = {"rm": 1, "lstat": -1}
FRIEDMAN_MONOTONE = (0, 0, 0, 1, 1, 0, 0, 0, 0, 0)
SPEED_SEED = 1234
GRID, PATH_ROWS = 21, 50
FULL = {"sim_seeds": 5, "real_seeds": 5, "n": 500, "tune": 300, "draws": 300, "chains": 2, "m": 50,
        "speed_n": 10_000, "speed_m": 200, "speed_tune": 100, "speed_draws": 300, "speed_repeats": 2}
QUICK = {"sim_seeds": 1, "real_seeds": 1, "n": 500, "tune": 100, "draws": 100, "chains": 2, "m": 50,
         "speed_n": 2_000, "speed_m": 50, "speed_tune": 20, "speed_draws": 30, "speed_repeats": 1}


# =========================================================================== data


def simulate(name: str, n: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, f)`` of simulation ``s1`` or ``s2`` (module docstring).

    >>> X, y, f = simulate("s2", 200, np.random.default_rng(0))
    >>> X.shape, bool(np.all(np.diff(simulate_f("s2", np.c_[np.linspace(0, 1, 9), np.full((9, 3), 0.5)])) > 0))
    ((200, 4), True)
    """
    p = 5 if name == "s1" else 4
    X = rng.uniform(0.0, 1.0, size=(n, p))
    f = simulate_f(name, X)
    noise = 0.5 if name == "s1" else 0.3
    return X, f + noise * rng.standard_normal(n), f


def simulate_f(name: str, X: np.ndarray) -> np.ndarray:
    """The true mean of simulation ``s1`` or ``s2`` at the rows of ``X``."""
    if name == "s1":
        expit = 1.0 / (1.0 + np.exp(-8.0 * (X[:, 0] - 0.5)))
        return 3.0 * expit + 2.0 * X[:, 1] ** 2 - X[:, 2] + 0.8 * np.sin(2.0 * np.pi * X[:, 3])
    if name == "s2":
        return np.log1p(5.0 * X[:, 0]) * (1.0 + X[:, 1]) - 1.5 * X[:, 2]
    raise ValueError(f"unknown simulation {name!r}")


def data(name: str, seed: int, n: int = 500):
    """``(X, y, X_te, y_te, f_te, monotone)`` of a data set: ``monotone`` as BART takes it (one value per column,
    or Boston's dict keyed by column name), ``f_te`` None for real data."""
    if name in SIMULATED:
        X, y, _ = simulate(name, n, np.random.default_rng([seed, 1]))
        X_te, y_te, f_te = simulate(name, n, np.random.default_rng([seed, 2]))
        mono = [1, 1, -1, 0, 0] if name == "s1" else [1, 1, -1, 0]
        return X, y, X_te, y_te, f_te, mono
    if name == "boston":
        from benchmarks.data import split
        from pymc_treesamplers.datasets import load_boston

        X, y = load_boston()
        X = X.astype(float)
        tr, te = split(y, seed, binary=False)
        return (X.iloc[tr].reset_index(drop=True), y[tr], X.iloc[te].reset_index(drop=True), y[te], None,
                dict(BOSTON_MONOTONE))
    raise ValueError(f"unknown data set {name!r}; known: {DATASETS}")


def directions(mono, X) -> list[int]:
    """One direction per column of ``X`` (LightGBM's ``monotone_constraints``) from BART's ``monotone=``."""
    if isinstance(mono, dict):
        return [int(mono.get(c, 0)) for c in X.columns]
    return [int(d) for d in mono]


def paths(X, X_te, dirs: list[int]):
    """The rows at which the wrong-way steps are counted: the first ``PATH_ROWS`` held-out rows, each moved over
    ``GRID`` quantiles of one constrained column's training values. Returns ``(rows, [(column, direction)])``,
    ``rows`` stacked column by column, path by path (``GRID`` rows each)."""
    A, T = np.asarray(X, dtype=float), np.asarray(X_te, dtype=float)[:PATH_ROWS]
    blocks, cols = [], []
    for j, d in enumerate(dirs):
        if d == 0:
            continue
        grid = np.quantile(A[:, j], np.linspace(0.0, 1.0, GRID))
        rows = np.repeat(T, GRID, axis=0)
        rows[:, j] = np.tile(grid, len(T))
        blocks.append(rows)
        cols.append((j, d))
    rows = np.concatenate(blocks)
    if hasattr(X, "columns"):
        import pandas as pd

        rows = pd.DataFrame(rows, columns=X.columns)
    return rows, cols


def wrong_way(values: np.ndarray, cols, scale: float) -> np.ndarray:
    """For each leading index of ``values`` (..., rows of :func:`paths`): the share of the grid steps that move
    against their column's direction (by more than ``1e-9 * scale``)."""
    v = values.reshape(*values.shape[:-1], len(cols), -1, GRID)
    d = np.diff(v, axis=-1) * np.asarray([c[1] for c in cols])[:, None, None]
    return (d < -1e-9 * scale).mean(axis=(-3, -2, -1))


# =========================================================================== workers


def _coverage(lo, hi, target) -> tuple[float, float]:
    return float(np.mean((target >= lo) & (target <= hi))), float(np.mean(hi - lo))


def _lightgbm(spec: dict, X, y, X_te, y_te, f_te, dirs) -> dict:
    import lightgbm
    from lightgbm import LGBMRegressor

    t0 = time.perf_counter()
    kw = {"random_state": spec["seed"], "verbose": -1}
    point = LGBMRegressor(monotone_constraints=dirs, **kw).fit(X, y)
    # LightGBM refuses monotone_constraints with the quantile objective (LightGBMError "Cannot use
    # monotone_constraints in quantile objective"): its interval comes from unconstrained quantile fits
    lo_fit = LGBMRegressor(objective="quantile", alpha=0.05, **kw).fit(X, y)
    hi_fit = LGBMRegressor(objective="quantile", alpha=0.95, **kw).fit(X, y)
    wall = time.perf_counter() - t0
    fit, lo, hi = point.predict(X_te), lo_fit.predict(X_te), hi_fit.predict(X_te)
    cover_y, width_y = _coverage(lo, hi, y_te)
    rows, cols = paths(X, X_te, dirs)
    out = {"wall_s": wall, "rmse_y": float(np.sqrt(np.mean((fit - y_te) ** 2))), "cover_y": cover_y,
           "width_y": width_y, "crossed": float(np.mean(lo > hi)),
           "wrong_way_fit": float(wrong_way(point.predict(rows), cols, float(np.std(y)))),
           "lightgbm": lightgbm.__version__}
    if f_te is not None:
        out["rmse_f"] = float(np.sqrt(np.mean((fit - f_te) ** 2)))
    return out


def _heldout(spec: dict) -> dict:
    X, y, X_te, y_te, f_te, mono = data(spec["dataset"], spec["seed"], spec["n"])
    dirs = directions(mono, X)
    if spec["method"] == "lightgbm":
        return _lightgbm(spec, X, y, X_te, y_te, f_te, dirs)
    import pymc as pm

    import pymc_treesamplers as pmt

    t0 = time.perf_counter()
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=spec["m"], monotone=mono if spec["method"] == "constrained" else None)
        sigma = pm.HalfNormal("sigma", float(np.std(y)))
        pm.Normal("y", mu, sigma, observed=y)
        idata = pm.sample(tune=spec["tune"], draws=spec["draws"], chains=spec["chains"], cores=spec["chains"],
                          random_seed=spec["seed"] + 1, progressbar=False, compute_convergence_checks=False)
    wall = time.perf_counter() - t0
    F = np.asarray(pmt.predict(idata, X_te, "mu")).reshape(-1, len(y_te))
    sig = idata.posterior["sigma"].values.reshape(-1)
    Y = F + sig[:, None] * np.random.default_rng([spec["seed"], 90]).standard_normal(F.shape)
    fit = F.mean(axis=0)
    cover_y, width_y = _coverage(*np.quantile(Y, [0.05, 0.95], axis=0), y_te)
    rows, cols = paths(X, X_te, dirs)
    G = np.asarray(pmt.predict(idata, rows, "mu")).reshape(F.shape[0], -1)
    scale = float(np.std(y))
    out = {"wall_s": wall, "rmse_y": float(np.sqrt(np.mean((fit - y_te) ** 2))), "cover_y": cover_y,
           "width_y": width_y, "sigma": float(sig.mean()),
           "wrong_way_fit": float(wrong_way(G.mean(axis=0), cols, scale)),
           "wrong_way_draws": float(np.mean(wrong_way(G, cols, scale) > 0)),
           "n_leaves": float(idata.sample_stats["mu_n_leaves"].mean()) if "mu_n_leaves" in idata.sample_stats
           else None}
    if f_te is not None:
        out["rmse_f"] = float(np.sqrt(np.mean((fit - f_te) ** 2)))
        out["cover_f"], out["width_f"] = _coverage(*np.quantile(F, [0.05, 0.95], axis=0), f_te)
    return out


def _speed(spec: dict) -> dict:
    import pymc as pm

    import pymc_treesamplers as pmt
    from benchmarks.instrument import StepRecorder
    from pymc_treesamplers.datasets import friedman1

    X, y, _ = friedman1(spec["n"], rng=SPEED_SEED)
    cls = getattr(pmt, spec["sampler"])
    run = {"chains": 1, "cores": 1, "random_seed": SPEED_SEED, "progressbar": False,
           "compute_convergence_checks": False}
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=spec["m"], monotone=list(FRIEDMAN_MONOTONE) if spec["constrained"] else None)
        sigma = pm.HalfNormal("sigma", float(np.std(y)))
        pm.Normal("y", mu, sigma, observed=y)
        t = time.perf_counter()
        pm.sample(tune=1, draws=1, step=[cls([mu])], **run)  # untimed: numba compile / cache load, pytensor
        warmup = time.perf_counter() - t
        step, nuts = cls([mu]), pm.NUTS([sigma])
        rec, rec_sigma = StepRecorder(step, names=("n_leaves", "accept")), StepRecorder(nuts)
        t = time.perf_counter()
        pm.sample(tune=spec["tune"], draws=spec["draws"], step=[step, nuts], **run)
        wall = time.perf_counter() - t
    secs = np.asarray(rec.seconds[spec["tune"]:])
    draw_secs = secs + np.asarray(rec_sigma.seconds[spec["tune"]:])
    kept = rec.stats[spec["tune"]:]

    def mean_stat(name):
        vals = [s[name] for s in kept if name in s]
        return float(np.mean(vals)) if vals else None

    return {"s_per_sweep_median": float(np.median(secs)), "s_per_sweep": float(secs.mean()),
            "s_per_draw_median": float(np.median(draw_secs)), "sampling_s": wall, "warmup_s": warmup,
            "n_leaves": mean_stat("n_leaves"), "accept": mean_stat("accept")}


def worker_body(spec: dict) -> dict:
    return {"heldout": _heldout, "speed": _speed}[spec["case"]](spec)


# =========================================================================== report


def _mean_sd(vals, digits: int = 3) -> str:
    vals = [v for v in vals if v is not None]
    if not vals:
        return "—"
    if len(vals) == 1:
        return fmt(vals[0], digits)
    return f"{fmt(float(np.mean(vals)), digits)} ± {fmt(float(np.std(vals, ddof=1)), digits)}"


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.0f}%" if x >= 0.1 or x == 0 else f"{100 * x:.1f}%"


def _label(sp: dict) -> str:
    if sp["case"] == "speed":
        return f"speed {sp['sampler']} {'constrained' if sp['constrained'] else 'free'} #{sp['repeat']}"
    return f"{sp['method']} {sp['dataset']} seed {sp['seed']}"


def _heldout_lines(st: dict, ok: list[dict]) -> list[str]:
    held = [r for r in ok if r["spec"]["case"] == "heldout"]
    if not held:
        return []
    methods = [m for m in METHODS if m in st["methods"]]
    by = {(r["spec"]["dataset"], r["spec"]["seed"], r["spec"]["method"]): r for r in held}
    names = [d for d in DATASETS if any(k[0] == d for k in by)]

    def get(d, m, key):
        return [by[k].get(key) for k in sorted(by) if k[0] == d and k[2] == m]

    lines = ["## Held out", "",
             f"Seeds per simulation: {st['sim_seeds']} (n = {st['n']} training rows, {st['n']} fresh held-out "
             f"rows); random 70/30 splits of Boston: {st['real_seeds']}; ours {st['m']} trees, {st['chains']} chains x "
             f"({st['tune']} + {st['draws']}). Mean ± sd over seeds. *RMSE f*: against the true f (simulations); "
             "*cover y*, *width y*: the 90% interval for y (ours posterior predictive, LightGBM quantile fits); "
             "*cover f*: ours' 90% credible interval of f; *wrong way*: share of the point fit's grid steps along "
             "the constrained columns that move against the constraint; wall: median seconds per fit.", ""]
    rows = []
    for d in names:
        for m in methods:
            if not get(d, m, "rmse_y"):
                continue
            rows.append([d, m, _mean_sd(get(d, m, "rmse_y")), _mean_sd(get(d, m, "rmse_f")),
                         _mean_sd(get(d, m, "cover_y"), 2), _mean_sd(get(d, m, "width_y")),
                         _mean_sd(get(d, m, "cover_f"), 2), _mean_sd(get(d, m, "width_f")),
                         _pct(float(np.mean(get(d, m, "wrong_way_fit")))),
                         fmt(float(np.median(get(d, m, "wall_s"))))])
    lines += [md_table(["data", "method", "RMSE y", "RMSE f", "cover y", "width y", "cover f", "width f",
                        "wrong way", "wall s"], rows), ""]
    ratio_rows = []
    for d in names:
        key = "rmse_f" if d in SIMULATED else "rmse_y"
        row = [d + (" (vs f)" if d in SIMULATED else " (vs y)")]
        for other in ("free", "lightgbm"):
            pairs = [(by[(d, s, "constrained")][key], by[(d, s, other)][key]) for (dd, s, m) in by
                     if dd == d and m == "constrained" and (d, s, other) in by]
            if not pairs:
                row += ["—", "—"]
                continue
            r = np.asarray([a / b for a, b in pairs])
            row += [f"{fmt(float(r.mean()))} [{fmt(float(r.min()))}, {fmt(float(r.max()))}]",
                    f"{int(np.sum(r < 1))} of {len(r)}"]
        ratio_rows.append(row)
    lines += ["### RMSE ratios", "",
              "Per-seed ratio of the constrained fit's RMSE (against f for the simulations, y for Boston) to the "
              "other method's: mean [min, max] over seeds, and the seeds where the constrained fit is better "
              "(ratio < 1).", "",
              md_table(["data", "constrained / free", "constrained better", "constrained / lightgbm",
                        "constrained better"], ratio_rows), ""]
    seed_rows = [[d, s, m, fmt(r["rmse_y"]), fmt(r.get("rmse_f")), fmt(r["cover_y"]), fmt(r["width_y"]),
                  fmt(r.get("cover_f")), fmt(r.get("width_f")), _pct(r["wrong_way_fit"]),
                  _pct(r.get("wrong_way_draws")), fmt(r.get("sigma")), fmt(r.get("n_leaves")), fmt(r["wall_s"])]
                 for (d, s, m), r in ((k, by[k]) for k in sorted(by, key=lambda k: (DATASETS.index(k[0]), k[1],
                                                                                    METHODS.index(k[2]))))]
    lines += ["### Every seed", "",
              "*wrong-way draws*: share of ours' posterior draws with at least one wrong-way step; *leaves*: mean "
              "leaves per tree.", "",
              md_table(["data", "seed", "method", "RMSE y", "RMSE f", "cover y", "width y", "cover f", "width f",
                        "wrong way", "wrong-way draws", "sigma", "leaves", "wall s"], seed_rows), ""]
    return lines


def _speed_lines(st: dict, ok: list[dict]) -> list[str]:
    sp = [r for r in ok if r["spec"]["case"] == "speed"]
    if not sp:
        return []
    rows = []
    for sampler in SAMPLERS:
        med = {}
        for c in (False, True):
            rs = [r for r in sp if r["spec"]["sampler"] == sampler and r["spec"]["constrained"] == c]
            if not rs:
                continue
            med[c] = float(np.median([r["s_per_sweep_median"] for r in rs]))
            rows.append([sampler, "x3, x4 at +1" if c else "none",
                         ", ".join(fmt(1e3 * r["s_per_sweep_median"]) for r in rs),
                         fmt(1e3 * float(np.median([r["s_per_draw_median"] for r in rs]))),
                         fmt(float(np.mean([r["n_leaves"] for r in rs if r.get("n_leaves") is not None]))
                             if any(r.get("n_leaves") is not None for r in rs) else None),
                         fmt(float(np.mean([r["accept"] for r in rs if r.get("accept") is not None]))
                             if any(r.get("accept") is not None for r in rs) else None),
                         fmt(med[c] / med[False]) if c and False in med else "—"])
    return [f"## Cost of a sweep, Friedman #1 n = {st['speed_n']:,}, m = {st['speed_m']}", "",
            f"Each row its own process: one untimed `pm.sample` (compile or cache load), then {st['speed_tune']} + "
            f"{st['speed_draws']} draws with every tree-step call timed; *ms / sweep*: median over the "
            f"{st['speed_draws']} draws after tuning, one value per process ({st['speed_repeats']} per row, free "
            "and constrained alternating); *ms / draw*: the tree step and NUTS on sigma together, median over the "
            "draws, then over processes; *trees changed*: the share of trees a sweep changed; *÷ free*: the "
            "median sweep against the same sampler's unconstrained one (target: at most 2).", "",
            md_table(["sampler", "constraints", "ms / sweep", "ms / draw", "leaves / tree", "trees changed",
                      "÷ free"], rows), ""]


def render(saved: dict) -> str:
    st, results = saved["settings"], saved["results"]
    ok = [r for r in results if r.get("status") == "ok"]
    lines = harness.header_lines(harness.smoke_title("Monotone constraints", st), saved["meta"])
    lgbm = sorted({r["lightgbm"] for r in ok if r.get("lightgbm")})
    lines += ["* Data, models and scores: `benchmarks/monotone.py`."
              + (f" LightGBM {', '.join(lgbm)}: its defaults, with `monotone_constraints`." if lgbm else ""), ""]
    lines += _heldout_lines(st, ok) + _speed_lines(st, ok)
    return "\n".join(lines + harness.report_footer(saved, _label, results))


# =========================================================================== command line


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__, "smoke run: 1 seed per data set, 100 + 100; sweeps at n = 2000, "
                                               "m = 50")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma list from {list(CASES)}")
    p.add_argument("--methods", default=",".join(METHODS), help=f"comma list from {list(METHODS)}")
    args = harness.parse_report_args(p, argv, "monotone", timeout_min=20.0)
    if harness.measuring(args):
        args.cases = harness.choice_list(args.cases, CASES, p, "case(s)")
        args.methods = harness.choice_list(args.methods, METHODS, p, "method(s)")
    return args


def _describe(res: dict) -> str:
    if res["spec"]["case"] == "speed":
        return f"{1e3 * res['s_per_sweep_median']:.3g} ms/sweep, {res['n_leaves']:.3g} leaves/tree"
    return (f"RMSE {res.get('rmse_f', res['rmse_y']):.3g}, cover y {res['cover_y']:.2f}, wrong way "
            f"{res['wrong_way_fit']:.3f}, wall {res['wall_s']:.3g} s")


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    """Every chosen method on every data set, one run per seed; then the sweeps, free and constrained
    alternating."""
    st = harness.chosen_settings(args, QUICK, FULL, cases=args.cases, methods=args.methods)
    runs = []
    if "heldout" in args.cases:
        mcmc = {k: st[k] for k in ("n", "tune", "draws", "chains", "m")}
        for name in DATASETS:
            for seed in range(st["sim_seeds"] if name in SIMULATED else st["real_seeds"]):
                for method in args.methods:
                    runs.append((f"{method} {name} {seed}",
                                 {"case": "heldout", "method": method, "dataset": name, "seed": seed, **mcmc}))
    if "speed" in args.cases:
        for sampler in SAMPLERS:
            for repeat in range(st["speed_repeats"]):
                for constrained in (False, True):
                    runs.append((f"speed {sampler} {'constrained' if constrained else 'free'} {repeat}",
                                 {"case": "speed", "sampler": sampler, "constrained": constrained, "repeat": repeat,
                                  "n": st["speed_n"], "m": st["speed_m"], "tune": st["speed_tune"],
                                  "draws": st["speed_draws"]}))
    return st, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, _describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
