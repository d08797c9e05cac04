"""Shared code of the Particle Gibbs benchmarks (``benchmarks.hypercube``, ``benchmarks.california``).

Reproduces the experiments of Lakshminarayanan, Roy & Teh (2015), "Particle Gibbs for Bayesian
additive regression trees" (sections 4.1 and 4.2): every sampler (PG, CGM, GrowPrune) runs one
chain per seed; the mixing measure is the effective sample size (ESS) of the trace of the
training log-likelihood ``sum_i log N(y_i | mu_i, sigma)``, computed from the posterior draws of
``mu`` (sum of trees at the training rows) and ``sigma``.

Like ``benchmarks.common`` this module does not import pymc at import time: the parent process
only orchestrates; every measured configuration runs in its own child process (``python -m
benchmarks.<script> --worker SPEC``) that writes its numbers as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from benchmarks.common import (
    bulk_ess,
    dump_json,
    git_state,
    machine_info,
    own_cpu_s,
    package_versions,
    rank_rhat,
    run_child,
    tail,
    utc_now,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"

ALL_SAMPLERS = ["pg", "pg-opt", "cgm", "growprune"]
LABELS = {"pg": "PG", "pg-opt": "PG-opt", "cgm": "CGM", "growprune": "GrowPrune"}
STEP_CLASSES = {"pg": "PGBARTStep", "pg-opt": "PGBARTStep", "cgm": "CGMStep", "growprune": "GrowPruneStep"}
# PG-opt: one-step optimal proposal and no resampling (conditional importance sampling); on deep
# trees the paper's every-stage resampling lets copies of a poor reference take over (docs/pg.md)
PG_OPT_KW = {"proposal": "optimal", "ess_threshold": 0.0}
# per-draw sample stats of the BART step that we average over the kept draws (if the step has them)
STEP_STATS = ["n_leaves", "tree_depth", "accept", "kept_old", "stages"]
CONTENTION_WARN_CORES = 0.3
WARMUP_ITERS = (3, 3)  # (tune, draws) of the untimed warm-up run (numba JIT / cache load)


class SamplerUnavailable(RuntimeError):
    """The requested step class is not (yet) part of pymc_treesamplers."""


# =========================================================================== diagnostics


def coda_ess(x: np.ndarray) -> float:
    """ESS of a 1-d trace the way R-coda's ``effectiveSize`` computes it.

    coda: ``n * var(x) / spectrum0.ar(x)$spec``, where ``spectrum0.ar`` fits an autoregressive
    model by Yule-Walker with the order chosen by AIC (R's ``ar(x, aic=TRUE)``, ``order.max =
    floor(10 log10(n))``) and returns its spectral density at frequency 0,
    ``var.pred / (1 - sum(ar))^2``.  Reimplemented here (same formulas as R's ``ar.yw``) so that
    no R is needed.  Returns 0 for a constant trace, like coda.
    """
    x = np.asarray(x, dtype=float).ravel()
    n = x.size
    xc = x - x.mean()
    c0 = float(np.dot(xc, xc) / n)
    if n < 3 or not c0 > 0:
        return 0.0
    order_max = int(min(n - 1, np.floor(10 * np.log10(n))))
    acov = np.array([np.dot(xc[: n - k], xc[k:]) / n for k in range(order_max + 1)])
    # Levinson-Durbin recursion: AR coefficients and innovation variance for every order
    best = (n * np.log(c0), 0, np.zeros(0), c0)  # (AIC, order, coefficients, innovation variance)
    phi = np.zeros(0)
    v = c0
    for k in range(1, order_max + 1):
        kappa = (acov[k] - np.dot(phi, acov[k - 1 : 0 : -1])) / v
        phi = np.concatenate([phi - kappa * phi[::-1], [kappa]])
        v = v * (1.0 - kappa**2)
        if not v > 0:
            break
        aic = n * np.log(v) + 2 * k
        if aic < best[0]:
            best = (aic, k, phi.copy(), v)
    _, order, coef, v = best
    var_pred = v * n / (n - (order + 1))
    spec0 = var_pred / (1.0 - coef.sum()) ** 2
    return float(n * np.var(x, ddof=1) / spec0) if spec0 > 0 else 0.0


def single_chain_bulk_ess(x: np.ndarray) -> float:
    """Bulk ESS (rank-normalised split-R-hat ESS, Vehtari et al. 2021) of one chain's 1-d trace."""
    x = np.asarray(x, dtype=float).ravel()
    if np.ptp(x) == 0:
        return 0.0
    return float(bulk_ess(x[None, :]))


def gaussian_loglik(y: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """``sum_i log N(y_i | mu[..., i], sigma[...])`` for draws mu (..., n) and sigma (...)."""
    mu = np.asarray(mu, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    r = np.asarray(y, dtype=float) - mu
    n = r.shape[-1]
    return -0.5 * np.sum(r**2, axis=-1) / sigma**2 - n * np.log(sigma) - 0.5 * n * np.log(2 * np.pi)


# =========================================================================== worker side


def pmt_all() -> list[str]:
    import pymc_treesamplers as pmt

    return list(getattr(pmt, "__all__", []))


def make_step(pmt, sampler: str, mu, particles: int):
    cls_name = STEP_CLASSES[sampler]
    if cls_name not in getattr(pmt, "__all__", []) or not hasattr(pmt, cls_name):
        raise SamplerUnavailable(
            f"pymc_treesamplers has no {cls_name} yet (pmt.__all__ = {sorted(getattr(pmt, '__all__', []))}): "
            f"{LABELS[sampler]} arm skipped"
        )
    cls = getattr(pmt, cls_name)
    if sampler == "pg":
        return cls([mu], num_particles=particles)
    if sampler == "pg-opt":
        return cls([mu], num_particles=particles, **PG_OPT_KW)
    return cls([mu])


def fit_bart(
    X: np.ndarray,
    y: np.ndarray,
    X_test: np.ndarray,
    *,
    sampler: str,
    m: int,
    alpha: float,
    beta: float,
    burn: int,
    draws: int,
    seed: int,
    particles: int = 10,
    max_bins: int | None = None,
    split_points: str | None = None,
) -> dict:
    """One chain of BART (given tree step) + NUTS for sigma^2 ~ Chipman's inverse gamma prior.

    Returns timing, the training log-likelihood trace of the kept draws, sigma draws, the
    posterior mean of f at X_test and the kept draws of the BART step's own sample stats.
    The BART step's ``step`` method is wrapped to time it and to record its stats (PyMC merges
    stats of equal names of different steps, e.g. NUTS also reports ``tree_depth``).
    """
    import pymc as pm

    import pymc_treesamplers as pmt

    a, b = pmt.chipman_sigma2_prior(X, y)
    t_build = time.perf_counter()
    with pm.Model():
        bart_kw = {k: v for k, v in (("max_bins", max_bins), ("split_points", split_points)) if v is not None}
        mu = pmt.BART("mu", X, y, m=m, alpha=alpha, beta=beta, **bart_kw)
        sigma2 = pm.InverseGamma("sigma2", a, b)
        sigma = pm.Deterministic("sigma", pm.math.sqrt(sigma2))
        pm.Normal("y", mu, sigma, observed=y)
        step = make_step(pmt, sampler, mu, particles)

        step_time = [0.0]
        step_stats: list[dict] = []
        inner = step.step

        def timed_step(point):
            t = time.perf_counter()
            out = inner(point)
            step_time[0] += time.perf_counter() - t
            st = out[1][0] if out[1] else {}
            step_stats.append({k: float(st[k]) for k in STEP_STATS if k in st})
            return out

        step.step = timed_step
        t0 = time.perf_counter()
        idata = pm.sample(
            tune=burn,
            draws=draws,
            chains=1,
            cores=1,
            step=[step],
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
        t1 = time.perf_counter()
    iters = burn + draws
    if len(step_stats) != iters:
        raise RuntimeError(f"BART step ran {len(step_stats)} times, expected {iters}")
    post = idata.posterior
    mu_draws = np.asarray(post["mu"].values, dtype=float)[0]  # (draws, n)
    sig = np.asarray(post["sigma"].values, dtype=float)[0]  # (draws,)
    ll = gaussian_loglik(y, mu_draws, sig)
    t2 = time.perf_counter()
    f_test = np.asarray(pmt.predict(idata, X_test, "mu"), dtype=float)[0]  # (draws, n_test)
    predict_s = time.perf_counter() - t2
    sampling_s = post.attrs.get("sampling_time")
    sampling_s = float(sampling_s) if sampling_s is not None else t1 - t0
    kept = step_stats[burn:]
    stats = {k: np.array([s[k] for s in kept]) for k in STEP_STATS if kept and k in kept[0]}
    return {
        "seed": seed,
        "burn": burn,
        "draws": draws,
        "sigma2_prior": [float(a), float(b)],
        "build_s": t0 - t_build,
        "sample_call_s": t1 - t0,
        "sampling_s": sampling_s,
        "bart_step_s": step_time[0],
        "predict_s": predict_s,
        "ms_per_iter": sampling_s / iters * 1e3,
        "bart_step_ms_per_iter": step_time[0] / iters * 1e3,
        "loglik": ll,
        "sigma": sig,
        "f_test_mean": f_test.mean(axis=0),
        "mu_train_mean": mu_draws.mean(axis=0),
        "stats": stats,
    }


def warmup(X, y, X_test, **kw) -> float:
    """Untimed short run so that numba compilation / cache loading is not billed to the first chain."""
    t = time.perf_counter()
    kw = dict(kw, burn=WARMUP_ITERS[0], draws=WARMUP_ITERS[1], seed=987654321)
    fit_bart(X, y, X_test, **kw)
    return time.perf_counter() - t


def summarise_chain(fit: dict, y_test_true: np.ndarray | None = None) -> dict:
    """Numbers of one chain (JSON-able); ``fit`` from :func:`fit_bart`."""
    ll = fit["loglik"]
    ess_b = single_chain_bulk_ess(ll)
    ess_c = coda_ess(ll)
    s = fit["sampling_s"]
    out = {
        k: fit[k]
        for k in (
            "seed",
            "burn",
            "draws",
            "sigma2_prior",
            "build_s",
            "sample_call_s",
            "sampling_s",
            "bart_step_s",
            "predict_s",
            "ms_per_iter",
            "bart_step_ms_per_iter",
        )
    }
    out.update(
        {
            "ess_bulk_loglik": ess_b,
            "ess_coda_loglik": ess_c,
            "ess_bulk_per_s": ess_b / s,
            "ess_coda_per_s": ess_c / s,
            "loglik_mean": float(ll.mean()),
            "loglik_sd": float(ll.std()),
            "sigma_mean": float(fit["sigma"].mean()),
            "loglik_trace": [float(v) for v in ll],
        }
    )
    for k, v in fit["stats"].items():
        out[f"{k}_mean"] = float(v.mean())
    if "n_leaves" in fit["stats"]:
        out["ess_bulk_n_leaves"] = single_chain_bulk_ess(fit["stats"]["n_leaves"])
    if y_test_true is not None:
        err = fit["f_test_mean"] - y_test_true
        out["test_mse"] = float(np.mean(err**2))
        out["test_rmse"] = float(np.sqrt(out["test_mse"]))
    return out


def worker_entry(spec_json: str, body) -> int:
    """Child process: run ``body(spec) -> dict`` and write the result JSON to spec['out_json']."""
    import resource

    spec = json.loads(spec_json)
    result: dict = {"spec": {k: v for k, v in spec.items() if not k.startswith("out_")}}
    try:
        result.update(body(spec))
        result.setdefault("status", "ok")
    except SamplerUnavailable as exc:
        result.update({"status": "unavailable", "error": str(exc)})
    except Exception as exc:
        result.update({"status": "error", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        traceback.print_exc()
    result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["own_cpu_s"] = own_cpu_s()
    dump_json(result, Path(spec["out_json"]))
    print(f"worker done: status={result.get('status')}", flush=True)
    return 0


# =========================================================================== parent side


def run_in_child(module: str, spec: dict, log_path: Path, timeout_s: float) -> dict:
    """Run ``python -m module --worker SPEC`` with memory/contention monitoring; return its result."""
    with tempfile.TemporaryDirectory(prefix="pgbench_") as tmp:
        spec = dict(spec, out_json=str(Path(tmp) / "result.json"))
        cmd = [sys.executable, "-m", module, "--worker", json.dumps(spec)]
        env = dict(os.environ)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
            env.setdefault(var, "1")
        mon = run_child(cmd, log_path, timeout_s=timeout_s, env=env, cwd=ROOT)
        out_json = Path(spec["out_json"])
        if out_json.exists():
            res = json.loads(out_json.read_text())
        else:
            res = {"spec": {k: v for k, v in spec.items() if not k.startswith("out_")}, "status": "error"}
            why = "timed out" if mon["timed_out"] else f"child exited with code {mon['returncode']}"
            res["error"] = f"{why}; log tail:\n{tail(log_path)}"
    res.update(mon)
    ours = max(res.get("own_cpu_s") or 0.0, mon["tree_cpu_s_polled"]) + mon["parent_cpu_s"]
    res["other_load_cores"] = max(0.0, (mon["machine_busy_cpu_s"] - ours) / mon["elapsed_s"])
    res["measured_at"] = utc_now()
    res["log"] = str(log_path)
    return res


def header_lines(title: str, argv: list[str], module: str) -> list[str]:
    mi = machine_info()
    vers = package_versions()
    vtxt = ", ".join(f"{k} {v}" for k, v in vers.items() if v and k not in ("pymc-bart", "bartrs", "stochtree"))
    return [
        f"# {title}",
        "",
        f"Generated {utc_now()} by `python -m {module} {' '.join(argv)}` (git {git_state(ROOT) or '?'}).",
        "",
        f"* Machine: {mi['nproc']} CPUs ({mi['cpu_model']}), {mi['ram_gb']} GB RAM, "
        f"Python {mi['python']}, {mi['platform']}.",
        f"* Versions: {vtxt}.",
    ]


def print_env() -> None:
    print(f"machine: {json.dumps(machine_info())}", file=sys.stderr)
    print(f"versions: {json.dumps(package_versions())}", file=sys.stderr)


def contention_note(res: dict) -> str | None:
    other = res.get("other_load_cores")
    if other is not None and other > CONTENTION_WARN_CORES:
        return f"⚠ other processes used {other:.1f} cores on average during this run: timings inflated"
    return None


def mean_of(chains: list[dict], key: str):
    vals = [c[key] for c in chains if c.get(key) is not None]
    return float(np.mean(vals)) if vals else None


def range_of(chains: list[dict], key: str):
    vals = [c[key] for c in chains if c.get(key) is not None]
    return (float(np.min(vals)), float(np.max(vals))) if vals else (None, None)


def across_chain_rhat(chains: list[dict]) -> float | None:
    """Rank-normalised split R-hat of the training log-likelihood over the independent chains (seeds)."""
    traces = [c["loglik_trace"] for c in chains]
    if len(traces) < 2 or len({len(t) for t in traces}) != 1:
        return None
    arr = np.asarray(traces, dtype=float)
    if np.ptp(arr) == 0:
        return None
    return float(rank_rhat(arr))


def int_list(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x.strip()]


def sampler_list(s: str, parser) -> list[str]:
    out = [x.strip().lower() for x in s.split(",") if x.strip()]
    bad = [x for x in out if x not in ALL_SAMPLERS]
    if bad:
        parser.error(f"unknown sampler(s) {bad}; choose from {ALL_SAMPLERS}")
    return out


def run_config(module: str, spec: dict, log, timeout_s: float, describe, unavailable: dict, name: str):
    """Run one configuration in a child process and print one status line.

    ``describe(res)`` summarises a successful result. Returns the result, or None when the sampler
    is unavailable (recorded in ``unavailable[name]``).
    """
    t0 = time.perf_counter()
    res = run_in_child(module, spec, log, timeout_s)
    if res.get("status") == "unavailable":
        unavailable[name] = res["error"]
        print(f"    SKIPPED: {res['error']}", file=sys.stderr, flush=True)
        return None
    msg = res.get("status")
    if msg == "ok":
        msg += ": " + describe(res)
        cn = contention_note(res)
        if cn:
            msg += f" [{cn}]"
    elif res.get("error"):
        msg += ": " + res["error"].splitlines()[0]
    print(f"    {msg} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return res
