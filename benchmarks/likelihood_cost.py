"""Cost of non-Gaussian likelihoods and of the noise-scale step, on Friedman #1.

    python -m benchmarks.likelihood_cost [--quick] [--cases sweep,sigma] [--json PATH] [--out PATH]
    python -m benchmarks.likelihood_cost --render-only [--json PATH]

Cases (Friedman #1, ``friedman1_train_test`` seed 1234, p = 10):

* ``sweep``: seconds per BART sweep (median over the kept draws, inside the step) of GrowPruneStep and
  CGMStep, n = 10,000, m = 200, under a Normal likelihood with sigma fixed (exact pseudo-data, no
  correction), a Bernoulli-logit likelihood (``y > median(y)``) and a Poisson-log likelihood
  (``y ~ Poisson(exp(f / 10))``); the MH-correction acceptance rate of the non-Gaussian ones. The
  target of issue 12: a non-Gaussian sweep at most 3x the Gaussian sweep.
* ``sigma``: the noise scale of ``pm.Normal("y", mu, sigma, observed=y)`` (n = 10,000, m = 200,
  GrowPruneStep, 2 chains run one after the other, 100 tune + 200 draws each) updated by NUTS, by
  ``NormalScaleGibbs`` as a conjugate draw (``sigma^2 ~ InverseGamma`` from
  ``chipman_sigma2_prior``) and as a slice update (``sigma ~ HalfNormal(5)``). Reported: total
  sampling time, bulk ESS of sigma over both chains, ESS per second, and the time inside the scale's
  step.

* ``scale-step``: the scale's update alone at n = 10^6 (the BART value held at the true f, Friedman #1
  y): seconds per update and ESS per second of sigma over 200 updates, for NUTS, the conjugate draw
  and the slice update (the same three models). Where the trees are cheap relative to n (few trees,
  large n) this is the difference the scale's step makes.

Every configuration runs in its own process (benchmarks.harness) after an untimed warm-up.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt, md_table
from benchmarks.instrument import StepRecorder

MODULE = "benchmarks.likelihood_cost"
CASES = ("sweep", "sigma", "scale-step")
FULL = {"n": 10_000, "m": 200, "tune": 10, "draws": 30, "sigma_tune": 100, "sigma_draws": 200,
        "scale_n": 1_000_000, "scale_updates": 200}
QUICK = {"n": 1000, "m": 50, "tune": 5, "draws": 10, "sigma_tune": 30, "sigma_draws": 60,
         "scale_n": 10_000, "scale_updates": 50}
SEED = 1234
SWEEP_RUNS = [(s, lik) for s in ("GrowPruneStep", "CGMStep") for lik in ("normal", "bernoulli-logit", "poisson-log")]
SIGMA_RUNS = ("nuts", "conjugate", "slice")


def _data(n: int):
    from pymc_treesamplers.datasets import friedman1_train_test

    X, y, f, _, _ = friedman1_train_test(n, SEED)
    return X, y, f


def _likelihood(pm, lik: str, mu, y, f, rng):
    if lik == "normal":
        return pm.Normal("y", mu, 1.0, observed=y)
    if lik == "bernoulli-logit":
        return pm.Bernoulli("y", logit_p=mu, observed=(y > np.median(y)).astype(float))
    return pm.Poisson("y", mu=pm.math.exp(mu), observed=rng.poisson(np.exp(f / 10.0)).astype(float))


def _sweep(spec: dict) -> dict:
    import pymc as pm

    import pymc_treesamplers as pmt

    X, y, f = _data(spec["n"])
    cls = getattr(pmt, spec["sampler"])
    run = {"chains": 1, "cores": 1, "random_seed": SEED, "progressbar": False, "compute_convergence_checks": False}
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=spec["m"])
        _likelihood(pm, spec["likelihood"], mu, y, f, np.random.default_rng(0))
        pm.sample(tune=1, draws=1, step=[cls([mu])], **run)  # untimed: numba compile / cache load
        step = cls([mu])
        rec = StepRecorder(step)
        idata = pm.sample(tune=spec["tune"], draws=spec["draws"], step=[step], **run)
    secs = np.asarray(rec.seconds[spec["tune"]:])
    stats = idata.sample_stats
    accept = float(stats["mu_mh_accept"].mean()) if "mu_mh_accept" in stats else None
    return {"s_per_sweep_median": float(np.median(secs)), "s_per_sweep": float(secs.mean()), "mh_accept": accept,
            "mean_leaves": float(stats["mu_n_leaves"].mean())}


def _sigma(spec: dict) -> dict:
    import pymc as pm

    from benchmarks.metrics import bulk_ess

    X, y, _ = _data(spec["n"])
    run = {"chains": 2, "cores": 1, "random_seed": SEED, "progressbar": False, "compute_convergence_checks": False}
    mdl, mu, scale = _scale_model(spec["method"], X, y, spec["m"])
    with mdl:
        pm.sample(tune=2, draws=2, step=list(_scale_steps(spec["method"], mu, scale)), **{**run, "chains": 1})
        tree, other = _scale_steps(spec["method"], mu, scale)
        rec = StepRecorder(other)
        t = time.perf_counter()
        idata = pm.sample(tune=spec["tune"], draws=spec["draws"], step=[tree, other], **run)
        wall = time.perf_counter() - t
    draws = idata.posterior["sigma"].values
    ess = float(bulk_ess(draws))
    return {"sampling_s": wall, "ess": ess, "ess_per_s": ess / wall, "scale_step_s": float(np.sum(rec.seconds)),
            "sigma_mean": float(draws.mean())}


def _scale_model(method: str, X, y, m: int):
    """BART mean, Normal likelihood, and the scale: sigma2 ~ Chipman's InverseGamma for ``conjugate``,
    sigma ~ HalfNormal(5) otherwise. Returns ``(model, mu, the scale's variable)``."""
    import pymc as pm

    import pymc_treesamplers as pmt

    mdl = pm.Model()
    with mdl:
        mu = pmt.BART("mu", X, y, m=m)
        if method == "conjugate":
            s2 = pm.InverseGamma("sigma2", *pmt.chipman_sigma2_prior(X, y))
            sigma = pm.Deterministic("sigma", pm.math.sqrt(s2))
            scale = s2
        else:
            sigma = scale = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu, sigma, observed=y)
    return mdl, mu, scale


def _scale_steps(method: str, mu, scale):
    import pymc as pm

    import pymc_treesamplers as pmt

    other = pm.NUTS([scale]) if method == "nuts" else pmt.NormalScaleGibbs([scale])
    return pmt.GrowPruneStep([mu]), other


def _scale_step(spec: dict) -> dict:
    """The scale's update alone, BART value held at the true f (ESS of its unconstrained value)."""
    from benchmarks.metrics import bulk_ess

    X, y, f = _data(spec["n"])
    mdl, mu, scale = _scale_model(spec["method"], X, y, 1)
    with mdl:
        point = mdl.initial_point()
        point["mu"] = f
        _, step = _scale_steps(spec["method"], mu, scale)
        step.setup_chain(np.random.default_rng(SEED), tune=spec["updates"], draws=spec["updates"])
        name = mdl.rvs_to_values[scale].name
        values, secs = [], []
        for i in range(2 * spec["updates"]):  # tuning (NUTS's step size, the slice width), then timed
            if i == spec["updates"]:
                step.stop_tuning()
            t = time.perf_counter()
            point, _ = step.step(point)
            secs.append(time.perf_counter() - t)
            values.append(float(point[name]))
    values, secs = np.asarray(values[spec["updates"]:]), np.asarray(secs[spec["updates"]:])
    ess = float(bulk_ess(values[None, :]))
    return {"s_per_update": float(np.median(secs)), "ess": ess, "ess_per_s": ess / float(secs.sum())}


def worker_body(spec: dict) -> dict:
    return {"sweep": _sweep, "sigma": _sigma, "scale-step": _scale_step}[spec["case"]](spec)


def render(saved: dict) -> str:
    st, results = saved["settings"], saved["results"]
    ok = [r for r in results if r.get("status") == "ok"]
    lines = harness.header_lines("Non-Gaussian likelihoods and the noise-scale step: cost", saved["meta"])
    sweeps = [r for r in ok if r["spec"]["case"] == "sweep"]
    if sweeps:
        base = {r["spec"]["sampler"]: r["s_per_sweep_median"] for r in sweeps if r["spec"]["likelihood"] == "normal"}
        rows = [[r["spec"]["sampler"], r["spec"]["likelihood"], fmt(r["s_per_sweep_median"]),
                 fmt(r["s_per_sweep_median"] / base[r["spec"]["sampler"]]) if r["spec"]["sampler"] in base else "—",
                 "—" if r["mh_accept"] is None else fmt(r["mh_accept"]), fmt(r["mean_leaves"])] for r in sweeps]
        lines += [f"## BART sweep, Friedman #1 n = {st['n']:,}, m = {st['m']}, {st['draws']} timed sweeps", "",
                  md_table(["sampler", "likelihood", "s / sweep (median)", "÷ Normal", "MH acceptance",
                            "leaves / tree"], rows), ""]
    sig = [r for r in ok if r["spec"]["case"] == "sigma"]
    if sig:
        nuts = next((r["ess_per_s"] for r in sig if r["spec"]["method"] == "nuts"), None)
        rows = [[r["spec"]["method"], fmt(r["sampling_s"]), fmt(r["scale_step_s"]), fmt(r["ess"]), fmt(r["ess_per_s"]),
                 fmt(r["ess_per_s"] / nuts) if nuts else "—", fmt(r["sigma_mean"])] for r in sig]
        lines += [f"## Noise scale, Friedman #1 n = {st['n']:,}, m = {st['m']}, GrowPruneStep, 2 chains x "
                  f"({st['sigma_tune']} + {st['sigma_draws']})", "",
                  md_table(["sigma by", "sampling s", "s in the scale step", "ESS(sigma)", "ESS / s", "÷ NUTS",
                            "mean sigma"], rows), ""]
    steps = [r for r in ok if r["spec"]["case"] == "scale-step"]
    if steps:
        nuts = next((r["ess_per_s"] for r in steps if r["spec"]["method"] == "nuts"), None)
        rows = [[r["spec"]["method"], fmt(r["s_per_update"] * 1e3), fmt(r["ess"]), fmt(r["ess_per_s"]),
                 fmt(r["ess_per_s"] / nuts) if nuts else "—"] for r in steps]
        lines += [f"## The scale's update alone, n = {st['scale_n']:,} (BART value at the true f), "
                  f"{st['scale_updates']} updates", "",
                  md_table(["sigma by", "ms / update (median)", "ESS(sigma)", "ESS / s", "÷ NUTS"], rows), ""]
    return "\n".join(lines + harness.report_footer(saved, lambda sp: " ".join(str(v) for v in sp.values()), results))


def parse_args(argv: list[str]) -> argparse.Namespace:
    return harness.parse_case_args(argv, MODULE, __doc__, CASES, "likelihood-cost",
                                   "smoke run: n = 1000, m = 50, few sweeps")


def _describe(res: dict) -> str:
    if res["spec"]["case"] == "sweep":
        return f"s/sweep {res['s_per_sweep_median']:.4g}"
    if res["spec"]["case"] == "scale-step":
        return f"ms/update {1e3 * res['s_per_update']:.4g}, ESS/s {res['ess_per_s']:.4g}"
    return f"ESS/s {res['ess_per_s']:.4g}"


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    """The chosen cases' runs: sweeps per sampler and likelihood, sigma's updates and scale steps per method."""
    st = harness.chosen_settings(args, QUICK, FULL, cases=args.cases)
    runs = []
    if "sweep" in args.cases:
        for sampler, lik in SWEEP_RUNS:
            runs.append((f"sweep {sampler} {lik}", {"case": "sweep", "sampler": sampler, "likelihood": lik,
                                                    "n": st["n"], "m": st["m"], "tune": st["tune"],
                                                    "draws": st["draws"]}))
    if "sigma" in args.cases:
        for method in SIGMA_RUNS:
            runs.append((f"sigma {method}", {"case": "sigma", "method": method, "n": st["n"], "m": st["m"],
                                             "tune": st["sigma_tune"], "draws": st["sigma_draws"]}))
    if "scale-step" in args.cases:
        for method in SIGMA_RUNS:
            runs.append((f"scale-step {method}", {"case": "scale-step", "method": method, "n": st["scale_n"],
                                                  "updates": st["scale_updates"]}))
    return st, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, _describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
