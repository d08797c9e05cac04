"""Time to agreement on real data: how soon do 4 independent chains agree, in wall time?

    python -m benchmarks.mixing [--quick] [--cases friedman,california,boston] [--samplers cgm,cgm-warm,...]
        [--budget 45] [--out docs/reports/mixing.md] [--json PATH]
    python -m benchmarks.mixing --render-only [--quick | --json PATH]

Every arm of a data set runs in its own child process (``benchmarks.harness``), one after the other, the
numba and PyTensor caches warm (a small fit of the same arm first, untimed; the cold start is
docs/reports/coldstart.md). Each arm: 4 chains x (100 tuning sweeps + kept draws), seed 1234; sigma ~ HalfNormal(sd(y)),
y ~ Normal(BART, sigma). A user holds their time fixed, so every arm gets the same wall time (``--budget``
seconds, 4 chains two at a time): its kept draws per chain are set from its own sweep time, measured on one
untimed chain of 60 sweeps on the same data first (which also loads the numba caches and compiles PyTensor's
functions), between 200 and 20000.

* ``cgm``, ``reshape``: this package's steps from single-leaf trees; ``cgm-warm``, ``reshape-warm``,
  ``growprune-warm``: the same with ``warm_start=10`` (each chain's first 10 tuning sweeps grow every tree
  from its root, XBART's sweep; its own seed per chain), the other 90 tuning sweeps the exact step's;
* ``pymc-bart``: its default step (PGBART), tune 100;
* ``stochtree``: its default warm start (``num_gfr=10``, one GFR run whose last forests start the 4 chains),
  then 90 burn-in and the kept sweeps of its grow/prune MCMC; ``stochtree-mcmc``: no GFR, 100 burn-in;
* ``gfr-only``: :class:`pymc_treesamplers.GFRRegressor` (40 sweeps, the last 25 averaged) against
  ``stochtree-xbart``, stochtree's XBART-only mode (``num_gfr=40``, ``num_mcmc=0``, the same last 25
  averaged): not MCMC, so only test RMSE and wall time.

Time to agreement. From the first ``k`` kept draws of the 4 chains, for ``k`` on a grid: the largest
rank-normalised R-hat of f over 25 fixed test rows and the R-hat of sigma; the first ``k`` at which both
are below 1.1 (and 1.05), and the wall time it takes to get there: ``set-up + (sum over the 4 chains of
the seconds each took up to that draw, warm start and tuning included) / 2``, i.e. 4 chains run two at a
time on the 2 cores. Chains are timed one by one (each one thread; PyMC arms: a callback's clock at every
draw). stochtree runs its chains in one call: its GFR run is timed alone and its sweeps are taken as
equally long. Also at that ``k``: test RMSE of the posterior mean (against f for Friedman #1, against y
otherwise) and coverage of the 90% intervals (of f where f is known, else the predictive intervals of y).

Data: Friedman #1 (n = 1000, m = 200, ``datasets.friedman1_train_test``), California housing (2000
training rows, ``benchmarks.california`` training set 1, m = 200, y in $100k), Boston housing (the
``make demo`` split: 405 training rows, m = 50).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import friedman, harness
from benchmarks.harness import fmt, md_table
from benchmarks.metrics import rank_rhat

MODULE = "benchmarks.mixing"
CASES = {"friedman": 200, "california": 200, "boston": 50}
OURS = ["cgm", "cgm-warm", "reshape", "reshape-warm", "growprune-warm"]
DEFAULT_OURS = ["cgm", "cgm-warm", "reshape", "reshape-warm"]
PEERS = ["pymc-bart", "stochtree", "stochtree-mcmc"]
GFR_ONLY = ["gfr-only", "stochtree-xbart"]
SAMPLERS = OURS + PEERS + GFR_ONLY
LABELS = {"cgm": "pmt CGM", "cgm-warm": "pmt CGM + GFR warm start", "reshape": "pmt Reshape",
          "reshape-warm": "pmt Reshape + GFR warm start", "growprune-warm": "pmt GrowPrune + GFR warm start",
          "pymc-bart": "pymc-bart (PGBART)", "stochtree": "stochtree (GFR warm start, its default)",
          "stochtree-mcmc": "stochtree (MCMC only)", "gfr-only": "pmt GFRRegressor (GFR only)",
          "stochtree-xbart": "stochtree XBART only (GFR only)"}
SEED = 1234
N_POINTS = friedman.N_ESS
TUNE, WARM, CHAINS = 100, 10, 4
GFR_SWEEPS, GFR_BURN = 40, 15
THRESHOLDS = (1.1, 1.05)
GRID = (25, 50, 75, 100, 150, 200, 300, 400, 500, 600, 800, 1000, 1200, 1500, 2000, 2500, 3000, 4000, 5000, 6000,
        8000, 10000, 12000, 15000, 20000)
MIN_DRAWS, MAX_DRAWS = 200, 20_000
N_THIN = 1000  # draws per chain, evenly spaced, at which every test row is predicted (RMSE, coverage)


def figure_name(saved: dict) -> str:
    """The report's figure, relative to its page: ``img/<report>-agreement.png``."""
    return f"img/{Path(saved['meta'].get('out') or 'mixing.md').stem}-agreement.png"


def load_case(case: str):
    """``(X, y, X_test, target_test)``: the test target is f where known (Friedman), else y (Boston: the demo's
    split; California: 2,000 training rows; marketing: a fixed 80/20 split)."""
    if case == "friedman":
        from pymc_treesamplers.datasets import friedman1_train_test

        X, y, _, X_test, f_test = friedman1_train_test(1000, SEED, n_test=friedman.N_TEST)
        return X, y, X_test, f_test
    if case == "california":
        from benchmarks.california import california_split, load_california

        Xall, yall, _ = load_california()
        return california_split(Xall, yall, 1)
    if case == "marketing":
        from pymc_treesamplers.datasets import load_marketing

        X, y = load_marketing()
        X = X.to_numpy(dtype=float)
        test = np.sort(np.random.default_rng(SEED).permutation(len(y))[: len(y) // 5])
        train = np.setdiff1d(np.arange(len(y)), test)
        return X[train], y[train], X[test], y[test]
    from examples.demo import train_test_rows

    X, y, X_test, y_test = train_test_rows()
    return X.to_numpy(dtype=float), y, X_test.to_numpy(dtype=float), y_test


# =========================================================================== worker


def _model(pkg, X, y, m):
    import pymc as pm

    model = pm.Model()
    with model:
        mu = pkg.BART("mu", X, y, m=m)
        sigma = pm.HalfNormal("sigma", float(y.std()))
        pm.Normal("y", mu, sigma, observed=y)
    return model, mu


def _steps(sampler: str, mu):
    import pymc_treesamplers as pmt

    if sampler == "pymc-bart":
        return None  # its default: PGBART for mu
    name, _, warm = sampler.partition("-")
    cls = {"cgm": pmt.CGMStep, "reshape": pmt.ReshapeStep, "growprune": pmt.GrowPruneStep}[name]
    return [cls([mu], warm_start=WARM if warm else 0)]


def _run_pymc(sampler: str, X, y, m: int, draws: int, seed: int, chains: int = CHAINS, tune: int = TUNE):
    """One PyMC fit: chains in sequence in this process, the clock read at every draw."""
    import pymc as pm

    clock = []

    def callback(trace, draw):
        clock.append((draw.chain, draw.draw_idx, time.perf_counter()))

    import pymc_bart

    import pymc_treesamplers

    pkg = pymc_bart if sampler == "pymc-bart" else pymc_treesamplers
    t0 = time.perf_counter()
    model, mu = _model(pkg, X, y, m)
    with model:
        # pymc-bart keeps the trees of a chain per chain process (its prediction route needs them): two processes
        cores = 2 if sampler == "pymc-bart" and chains > 1 else 1
        idata = pm.sample(tune=tune, draws=draws, chains=chains, cores=cores, random_seed=seed,
                          step=_steps(sampler, mu),
                          progressbar=False, compute_convergence_checks=False, callback=callback)
    return model, mu, idata, t0, clock


def _chain_seconds(clock, t0: float, draws: int) -> tuple[float, np.ndarray]:
    """``(set-up, seconds)``: the time before the first chain's first sweep, and ``seconds[c, i]`` that chain ``c``
    had run at the end of its sweep ``i`` (tuning included). A chain's first sweep is taken as long as its
    second (chains in sequence or in processes of their own alike)."""
    n = TUNE + draws
    stamps = np.full((CHAINS, n), np.nan)
    for c, i, t in clock:
        stamps[c, i] = t
    if np.isnan(stamps).any():
        raise RuntimeError("the callback missed draws")
    start = stamps[:, 0] - (stamps[:, 1] - stamps[:, 0])
    return float(start.min() - t0), stamps - start[:, None]


def draws_for(budget_s: float, sweep_s: float, tune: int = TUNE) -> int:
    """Kept draws per chain that fill ``budget_s`` of wall time with 4 chains, two at a time, at ``sweep_s``
    seconds per sweep (within ``MIN_DRAWS`` and ``MAX_DRAWS``).

    >>> draws_for(10.0, 0.001)
    4900
    """
    return int(np.clip(round(2.0 * budget_s / (CHAINS * sweep_s)) - tune, MIN_DRAWS, MAX_DRAWS))


def _fit_pymc(spec: dict, X, y, X_test):
    sampler, m = spec["sampler"], CASES[spec["case"]]
    # untimed: load the numba caches, compile PyTensor's functions for this model, and time its sweeps
    _, _, _, _, clock = _run_pymc(sampler, X, y, m, 40, 0, chains=1, tune=20)
    stamps = np.array([t for _, i, t in clock if i >= 20])
    draws = draws_for(spec["budget_s"], float(np.mean(np.diff(stamps))))
    model, mu, idata, t0, clock = _run_pymc(sampler, X, y, m, draws, SEED)
    setup, seconds = _chain_seconds(clock, t0, draws)
    thin = np.unique(np.linspace(0, draws - 1, min(N_THIN, draws)).round().astype(np.int64))
    if sampler == "pymc-bart":
        f_points, extra = friedman._pymc_bart_f_draws(mu, idata, X, X_test[:N_POINTS], allow_unmatched=True)
        f_thin, _ = friedman._pymc_bart_f_draws(mu, idata, X, X_test, allow_unmatched=True, draws=thin)
    else:
        import pymc_treesamplers as pmt

        f_points, extra = np.asarray(pmt.predict(idata, X_test[:N_POINTS], "mu")), {}
        flat = (np.arange(CHAINS)[:, None] * draws + thin).ravel()
        f_thin = np.asarray(pmt.predict(idata, X_test, "mu", draws=flat)).reshape(CHAINS, thin.size, -1)
    sigma = np.asarray(idata.posterior["sigma"].values)
    # wall(k) for 4 chains two at a time: set-up + the chains' summed time to kept draw k, over 2 cores
    wall = setup + seconds[:, TUNE:].sum(axis=0) / 2.0
    info = {"draws": draws, "setup_s": setup, "chain_s": [float(s) for s in seconds[:, -1]], **extra}
    return info, sigma, (f_points, f_thin, thin), wall


def _stochtree(X, y, X_test, num_gfr: int, num_burnin: int, num_mcmc: int, chains: int, m: int):
    from stochtree import BARTModel

    model = BARTModel()
    t0 = time.perf_counter()
    model.sample(X_train=X, y_train=y, num_gfr=num_gfr, num_burnin=num_burnin, num_mcmc=num_mcmc,
                 general_params={"num_chains": chains, "random_seed": SEED, "num_threads": 1},
                 mean_forest_params={"num_trees": m})
    elapsed = time.perf_counter() - t0
    return model, elapsed


def _fit_stochtree(spec: dict, X, y, X_test):
    m = CASES[spec["case"]]
    gfr = WARM if spec["sampler"] == "stochtree" else 0
    # untimed, as the PyMC arms' first fit: its sweeps timed
    sweep_s = _stochtree(X, y, X_test, 0, 0, 50, 1, m)[1] / 50
    draws = draws_for(spec["budget_s"], sweep_s)
    gfr_s = _stochtree(X, y, X_test, gfr, 0, 0, 1, m)[1] if gfr else 0.0
    model, total = _stochtree(X, y, X_test, gfr, TUNE - gfr, draws, CHAINS, m)
    pred = np.asarray(model.predict(X_test, terms="y_hat", type="posterior"))  # (n_test, chains * draws)
    f_test = pred.reshape(X_test.shape[0], CHAINS, draws).transpose(1, 2, 0)
    thin = np.unique(np.linspace(0, draws - 1, min(N_THIN, draws)).round().astype(np.int64))
    sigma = np.sqrt(np.asarray(model.global_var_samples)).reshape(CHAINS, draws)
    # its sweeps taken as equally long: the chains' sweeps are the run less its GFR part, two chains at a time
    per_sweep = (total - gfr_s) / (CHAINS * (TUNE - gfr + draws))
    wall = gfr_s + CHAINS * per_sweep * (TUNE - gfr + np.arange(1, draws + 1)) / 2.0
    info = {"draws": draws, "setup_s": gfr_s, "total_s": total, "stochtree_gfr_s": gfr_s}
    return info, sigma, (f_test[:, :, :N_POINTS], f_test[:, thin], thin), wall


def _interval_hits(f_test, sigma, target, noise_free: bool, rng) -> float:
    """Coverage of the central 90% intervals: of f's draws (noise_free), else of y's predictive draws."""
    draws = f_test.reshape(-1, f_test.shape[-1])
    if not noise_free:
        draws = draws + sigma.reshape(-1, 1) * rng.standard_normal(draws.shape)
    lo, hi = np.quantile(draws, [0.05, 0.95], axis=0)
    return float(np.mean((target >= lo) & (target <= hi)))


def agreement_curve(sigma, f_points, f_thin, thin, target, wall, noise_free: bool, grid=GRID) -> list[dict]:
    """At every ``k`` of the grid (up to the draws there are, and the last draw): the R-hats from the first ``k``
    kept draws of every chain (``f_points``: f at the fixed test rows, every draw), the wall time to get there,
    test RMSE of the posterior mean and coverage (``f_thin``: f at every test row at the draws ``thin``)."""
    rng = np.random.default_rng(0)
    n = sigma.shape[1]
    out = []
    for k in sorted({k for k in grid if k <= n} | {n}):
        use = thin < k
        f_k = f_thin[:, use]
        out.append({"k": k, "wall_s": float(wall[k - 1]),
                    "rhat_f_max": float(np.max(rank_rhat(f_points[:, :k]))),
                    "rhat_sigma": float(rank_rhat(sigma[:, :k])),
                    "rmse": float(np.sqrt(np.mean((f_k.mean(axis=(0, 1)) - target) ** 2))),
                    "coverage90": _interval_hits(f_k, sigma[:, thin[use]], target, noise_free, rng)})
    return out


def first_agreement(curve: list[dict], threshold: float) -> dict | None:
    """The first grid point from which both R-hats stay below ``threshold`` at every later checkpoint to the end
    of the run (None: not within the run). A chain pair that meets once and drifts apart again has not agreed:
    R-hat from a prefix of draws can dip below a threshold by chance, and the user reads the end."""
    below = [pt["rhat_f_max"] < threshold and pt["rhat_sigma"] < threshold for pt in curve]
    first = None
    for pt, ok in zip(curve, below, strict=True):
        if not ok:
            first = None
        elif first is None:
            first = pt
    return first


def _gfr_only(spec: dict, X, y, X_test, target):
    m = CASES[spec["case"]]
    if spec["sampler"] == "gfr-only":
        import pymc_treesamplers as pmt

        pmt.GFRRegressor(m=5, sweeps=2, burn=1, random_state=0).fit(X[:60], y[:60])  # untimed: numba caches
        t0 = time.perf_counter()
        reg = pmt.GFRRegressor(m=m, sweeps=GFR_SWEEPS, burn=GFR_BURN, random_state=SEED).fit(X, y)
        fit_s = time.perf_counter() - t0
        pred = reg.predict(X_test)
    else:
        _stochtree(X[:60], y[:60], X_test[:5], 2, 0, 0, 1, 5)
        model, fit_s = _stochtree(X, y, X_test, GFR_SWEEPS, 0, 0, 1, m)
        draws = np.asarray(model.predict(X_test, terms="y_hat", type="posterior"))  # (n_test, GFR_SWEEPS)
        pred = draws[:, GFR_BURN:].mean(axis=1)
    return {"fit_s": fit_s, "rmse": float(np.sqrt(np.mean((pred - target) ** 2)))}


def worker_body(spec: dict) -> dict:
    X, y, X_test, target = load_case(spec["case"])
    out = {"n": int(X.shape[0]), "p": int(X.shape[1])}
    if spec["sampler"] in GFR_ONLY:
        return {**out, **_gfr_only(spec, X, y, X_test, target)}
    fit = _fit_stochtree if spec["sampler"].startswith("stochtree") else _fit_pymc
    info, sigma, (f_points, f_thin, thin), wall = fit(spec, X, y, X_test)
    if f_points.shape != (CHAINS, info["draws"], N_POINTS) or f_thin.shape != (CHAINS, thin.size, X_test.shape[0]):
        raise RuntimeError(f"predictions have shapes {f_points.shape} and {f_thin.shape}")
    curve = agreement_curve(sigma, f_points, f_thin, thin, target, wall, spec["case"] == "friedman")
    return {**out, **info, "curve": curve, "wall_s": float(wall[-1]), "sigma_mean": float(sigma.mean()),
            "sigma_chain_means": [float(v) for v in sigma.mean(axis=1)]}


def describe(res: dict) -> str:
    if "curve" not in res:
        return f"RMSE {res['rmse']:.3f} in {res['fit_s']:.2f} s"
    end = res["curve"][-1]
    hit = first_agreement(res["curve"], THRESHOLDS[0])
    when = f"R-hat < 1.1 at k = {hit['k']} ({hit['wall_s']:.1f} s)" if hit else "R-hat never < 1.1"
    return (f"{when}; at the end max R-hat f {end['rhat_f_max']:.2f}, sigma {end['rhat_sigma']:.2f}, "
            f"RMSE {end['rmse']:.3f}, wall {res['wall_s']:.1f} s")


# =========================================================================== report


def _ok(saved: dict, case: str) -> dict[str, dict]:
    return {r["spec"]["sampler"]: r for r in saved["results"]
            if r["spec"]["case"] == case and r.get("status") == "ok"}


def _hit_cells(res: dict, threshold: float) -> list[str]:
    hit = first_agreement(res["curve"], threshold)
    if hit is None:
        return [f"never (run: {fmt(res['wall_s'])} s)", "", "", ""]
    return [fmt(hit["wall_s"]), str(hit["k"]), fmt(hit["rmse"]), fmt(hit["coverage90"])]


def _best(arms: dict, names: list[str], threshold: float) -> tuple[str | None, float]:
    """The arm among ``names`` that agrees first, and its time (inf: none does)."""
    best, t = None, float("inf")
    for name in names:
        hit = arms.get(name) and first_agreement(arms[name]["curve"], threshold)
        if hit and hit["wall_s"] < t:
            best, t = name, hit["wall_s"]
    return best, t


def render(saved: dict) -> str:
    st = saved["settings"]
    title = harness.smoke_title("Time to agreement: how soon independent chains agree, in wall time", st)
    lines = harness.header_lines(title, saved["meta"], runs=saved["results"])
    lines += [
        f"* {CHAINS} chains x ({TUNE} tuning sweeps + the kept draws that fill about {fmt(st['budget_s'])} s of wall "
        f"time at the arm's measured speed, {MIN_DRAWS} to {MAX_DRAWS}) per arm, seed {SEED}, caches warm; the "
        f"warm-start arms grow every tree from its root in each chain's first {WARM} tuning sweeps. Protocol: "
        "`benchmarks/mixing.py` docstring.",
        "* **wall s**: 4 chains run two at a time on the 2 cores (set-up + the chains' summed seconds / 2) until "
        "the largest rank-normalised R-hat of f over 25 fixed test rows and the R-hat of σ, both from the first "
        "**k** kept draws of every chain, are below the threshold at k and at every later checkpoint of the run "
        "(agreement that holds: an R-hat that dips below and rises again does not count); **RMSE** and **cov 90** "
        "(coverage of the 90% intervals: of f for Friedman #1, predictive of y otherwise) from those k draws.",
        "",
        *([f"* Note: {saved['meta']['note']}"] if saved["meta"].get("note") else []),
        "",
        f"![R-hat against wall time]({figure_name(saved)})",
        "",
    ]
    for case in st["cases"]:
        arms = _ok(saved, case)
        rows = []
        for name in [s for s in st["samplers"] if s not in GFR_ONLY]:
            res = arms.get(name)
            if res is None:
                rows.append([LABELS[name], "**failed**"] + [""] * 11)
                continue
            end = res["curve"][-1]
            rows.append([LABELS[name], *_hit_cells(res, THRESHOLDS[0]), *_hit_cells(res, THRESHOLDS[1])[:2],
                         str(res["draws"]), fmt(end["rhat_f_max"]), fmt(end["rhat_sigma"]), fmt(end["rmse"]),
                         fmt(end["coverage90"])])
        lines += [f"## {case}", "",
                  md_table(["arm", "wall s to 1.1", "k", "RMSE", "cov 90", "wall s to 1.05", "k", "draws",
                            "end: R-hat f", "end: R-hat σ", "end: RMSE", "end: cov 90"], rows),
                  ""]
    lines += ["## Targets (issue 31)", ""]
    trows = []
    for case in st["cases"]:
        arms = _ok(saved, case)
        ours, t_ours = _best(arms, [s for s in OURS if s in st["samplers"]], THRESHOLDS[0])
        peer, t_peer = _best(arms, [s for s in PEERS if s in st["samplers"]], THRESHOLDS[0])
        # a peer that never agrees took longer than its whole run: only that lower bound is known
        runs = [arms[s]["wall_s"] for s in PEERS if s in arms]
        peer_text = (f"best peer {LABELS[peer]} {fmt(t_peer)} s" if peer else
                     f"no peer agrees within its run (the shortest lasted {fmt(min(runs))} s)" if runs else "no peer")
        bound = t_peer if peer else (min(runs) if runs else float("inf"))
        if ours is None:
            verdict = "❌ not met (no arm of this package agrees within the run)"
        elif t_ours <= 0.5 * bound:
            verdict = "✅ met"
        elif peer is None:
            verdict = "❔ not shown (the peers' time is only known to exceed their runs)"
        else:
            verdict = "❌ not met"
        trows.append([f"{case}: wall time to R-hat < 1.1 ≤ half the best peer's",
                      f"{LABELS[ours] + ' ' + fmt(t_ours) + ' s' if ours else 'no arm of this package agrees'}; "
                      + peer_text, verdict])
        for cold, warm in (("cgm", "cgm-warm"), ("reshape", "reshape-warm")):
            if cold in arms and warm in arms:
                a, b = arms[cold]["curve"][-1], arms[warm]["curve"][-1]
                ok = b["rmse"] <= 1.02 * a["rmse"] and b["coverage90"] >= a["coverage90"] - 0.02
                trows.append([f"{case}: {LABELS[warm]}: RMSE and coverage no worse than without (end of run; "
                              "within 2% / 0.02)", f"RMSE {fmt(b['rmse'])} vs {fmt(a['rmse'])}, coverage "
                              f"{fmt(b['coverage90'])} vs {fmt(a['coverage90'])}", "✅ met" if ok else "❌ not met"])
    lines += [md_table(["target", "measured", "verdict"], trows), ""]
    grows = []
    for case in st["cases"]:
        arms = _ok(saved, case)
        if all(g in arms for g in GFR_ONLY):
            a, b = arms["gfr-only"], arms["stochtree-xbart"]
            grows.append([case, fmt(a["rmse"]), fmt(a["fit_s"]), fmt(b["rmse"]), fmt(b["fit_s"]),
                          fmt(b["fit_s"] / a["fit_s"])])
    if grows:
        lines += ["## Grow-from-root alone (not MCMC)", "",
                  f"{GFR_SWEEPS} sweeps, the last {GFR_SWEEPS - GFR_BURN} averaged, one thread; test RMSE as above.",
                  "",
                  md_table(["data", "pmt GFRRegressor RMSE", "fit s", "stochtree XBART-only RMSE", "fit s",
                            "time ratio (stochtree / pmt)"], grows), ""]
    lines += _reading(saved)
    return "\n".join(lines + harness.report_footer(saved, lambda sp: f"{sp['case']} {sp['sampler']}"))


def _agreed(saved: dict, case: str, names: list[str]) -> str:
    """Which of ``names`` agree (R-hat < 1.1) on ``case``, and when."""
    arms = _ok(saved, case)
    hits = sorted((first_agreement(arms[n]["curve"], THRESHOLDS[0])["wall_s"], n) for n in names
                  if n in arms and "curve" in arms[n] and first_agreement(arms[n]["curve"], THRESHOLDS[0]))
    return ", ".join(f"{LABELS[n]} at {fmt(t)} s" for t, n in hits) or "none"


def _reading(saved: dict) -> list[str]:
    """What the tables say, and what a user should take from them (numbers read from the JSON)."""
    st = saved["settings"]
    ours = [s for s in OURS if s in st["samplers"]]
    peers = [s for s in PEERS if s in st["samplers"]]
    lines = ["## Reading", ""]
    for case in st["cases"]:
        lines.append(f"* **{case}**: chains that agree within their run: ours {_agreed(saved, case, ours)}; "
                     f"peers {_agreed(saved, case, peers)}.")
    changes = []
    for case in st["cases"]:
        arms = _ok(saved, case)
        for cold in ("cgm", "reshape"):
            if cold in arms and f"{cold}-warm" in arms:
                a, b = arms[cold]["curve"][-1], arms[f"{cold}-warm"]["curve"][-1]
                changes.append(f"{case} {LABELS[cold]} {fmt(a['rhat_f_max'])} → {fmt(b['rhat_f_max'])}")
    if changes:
        lines.append("* The warm start, alone, does not make chains agree: the end-of-run R-hat of f without → with "
                     "it: " + "; ".join(changes) + ". A chain that starts near the data still has to mix, and with "
                     "many small trees what stays slow is the trees' moves, not the start. It costs little (each "
                     f"chain's {WARM} grow-from-root sweeps) and never leaves a kept draw (tests/test_gfr.py).")
    lines += [
        "* stochtree starts its chains from consecutive forests of one GFR run (its `num_gfr - 1 - chain` "
        "forest), so its chains are not independent at the start; ours each run their own GFR sweeps with their "
        "own seed. stochtree warns that its GFR has trouble with covariates with many tied values (California's "
        "and Boston's have them): binned codes make ties cost nothing here.",
        f"* The budget caps kept draws at {MAX_DRAWS}: on Boston the fast arms (m = 50) reach it before "
        f"{fmt(st['budget_s'])} s, so their runs are shorter than the budget.",
        "",
        "## Choosing a sampler",
        "",
        "* Judge agreement with 4 chains, by R-hat of f at the rows you will report and of σ: on these data no "
        "sampler, here or in the peers, agrees in the first few hundred draws, and one chain's ESS hides it.",
        "* When agreement matters, run `pmt.ReshapeStep([mu], warm_start=10)` and long chains: thousands of draws "
        "cost seconds here. In this run, where any arm agreed it agreed first, and its end-of-run R-hat of f was "
        "the lowest of all arms or within 0.01 of it on every data set.",
        "* `pmt.CGMStep` (the default) stays the cheapest per sweep among the moves that change a split in place "
        "(grow/prune cannot); the warm start is an option for it too, not a fix.",
    ]
    ratios = [arms["gfr-only"]["fit_s"] / arms["stochtree-xbart"]["fit_s"] for arms in
              (_ok(saved, case) for case in st["cases"]) if all(g in arms for g in GFR_ONLY)]
    if ratios:
        lines.append("* For a point fit in seconds, `pmt.GFRRegressor` (test RMSE in the last table, against "
                     f"stochtree's XBART-only fit, at {fmt(min(ratios))}-{fmt(max(ratios))}x its time); its spread is "
                     "not a posterior.")
    return lines + [""]


def figure(saved: dict, path: Path) -> None:
    """R-hat (the larger of f's and σ's) against wall time, one panel per data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = saved["settings"]["cases"]
    fig, axes = plt.subplots(1, len(cases), figsize=(5 * len(cases), 4), squeeze=False)
    for ax, case in zip(axes[0], cases, strict=True):
        for name, res in _ok(saved, case).items():
            if "curve" not in res:
                continue
            x = [pt["wall_s"] for pt in res["curve"]]
            y = [max(pt["rhat_f_max"], pt["rhat_sigma"]) for pt in res["curve"]]
            ax.plot(x, y, marker="o", ms=3, ls="--" if name in PEERS else "-", label=LABELS[name])
        for t in THRESHOLDS:
            ax.axhline(t, color="grey", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_ylim(1.0, 2.0)
        ax.set_title(case)
        ax.set_xlabel("wall seconds (4 chains, 2 cores)")
        ax.set_ylabel("max R-hat of f (25 rows) and σ")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__, quick_help="smoke run: Boston only, a 3 s budget")
    harness.add_cases_option(p, CASES)
    p.add_argument("--samplers", default=",".join(DEFAULT_OURS + PEERS + GFR_ONLY), help=f"comma list from {SAMPLERS}")
    p.add_argument("--budget", type=float, default=None,
                   help="wall seconds each arm's kept draws should fill (default 45; --quick: 3)")
    args = harness.parse_report_args(p, argv, "mixing", timeout_min=60.0)
    if not harness.measuring(args):
        return args
    args.cases = harness.chosen_cases(args, p, CASES, quick="boston")
    args.samplers = harness.choice_list(args.samplers, SAMPLERS, p, "sampler(s)")
    args.budget = args.budget or (3.0 if args.quick else 45.0)
    return args


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    settings = {"quick": args.quick, "cases": args.cases, "samplers": args.samplers, "budget_s": args.budget}
    return settings, [(f"{c} {s}", {"case": c, "sampler": s, "budget_s": args.budget})
                      for c in args.cases for s in args.samplers]


def main(argv: list[str] | None = None) -> int:
    code = harness.grid_main(MODULE, argv, parse_args, worker_body, describe, render, plan)
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    if code == 0 and args.worker is None and args.json.exists():
        saved = harness.load_json(args.json)
        out = args.out or (harness.ROOT / saved["meta"]["out"] if saved["meta"].get("out") else None)
        if out is not None:  # the report's figure, from the same JSON, next to it
            figure(saved, Path(out).parent / figure_name(saved))
    return code


if __name__ == "__main__":
    sys.exit(main())
