"""The protocol of the Particle Gibbs benchmarks (``benchmarks.hypercube``, ``benchmarks.california``).

Reproduces the experiments of Lakshminarayanan, Roy & Teh (2015), "Particle Gibbs for Bayesian
additive regression trees" (sections 4.1 and 4.2): every sampler (PG, CGM, GrowPrune) runs one
chain per seed, sigma^2 by NUTS under Chipman's inverse gamma prior; the mixing measure is the
effective sample size of the trace of the training log-likelihood ``sum_i log N(y_i | mu_i,
sigma)``, computed from the posterior draws of ``mu`` (sum of trees at the training rows) and
``sigma``. Worker side (:func:`fit_bart`, :func:`summarise_chain`) and the per-row numbers both
reports show (:func:`row_numbers`). The chains' per-draw traces leave the report's JSON for an ignored
raw file, after the numbers the reports show from them are stored (:func:`move_traces`).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt
from benchmarks.instrument import StepRecorder
from benchmarks.metrics import bulk_ess, coda_ess, gaussian_loglik, rank_rhat, single_chain_bulk_ess

SAMPLERS = ["pg", "pg-opt", "pg-pimh", "cgm", "growprune", "ct", "reshape"]
RUN_ORDER = ["growprune", "cgm", "ct", "pg", "pg-opt", "pg-pimh", "reshape"]
LABELS = {"pg": "PG", "pg-opt": "PG-opt", "pg-pimh": "PG+PIMH", "cgm": "CGM",
          "growprune": "GrowPrune", "ct": "CT", "reshape": "Reshape"}
STEP_CLASSES = {"pg": "PGBARTStep", "pg-opt": "PGBARTStep", "pg-pimh": "PGBARTStep",
                "cgm": "CGMStep", "growprune": "GrowPruneStep", "ct": "CTBirthDeathStep", "reshape": "ReshapeStep"}
# PG-opt: one-step optimal proposal and no resampling (conditional importance sampling); on deep
# trees the paper's every-stage resampling lets copies of a poor reference take over (docs/pg.md)
PG_OPT_KW = {"proposal": "optimal", "ess_threshold": 0.0}
# PG+PIMH: after each conditional run one fresh unconditional run, accepted by the ratio of the
# evidence estimates (issue 15); 50 particles keep it under 5 ms per iteration at D = 4
PG_PIMH_KW = {"num_particles": 50, "pimh": 1}
# per-draw stats of the BART step averaged over the kept draws (those the step reports)
STEP_STATS = ("n_leaves", "tree_depth", "accept", "kept_old", "stages", "pimh_accept", "moves_accept")
WARMUP_ITERS = (3, 3)  # (tune, draws) of the untimed warm-up run (numba JIT / cache load)
# per-draw traces of a chain (kept draws): the across-chain R-hat and ESS come from them
TRACES = ("loglik_trace", "n_leaves_trace")


def make_step(pmt, sampler: str, mu, particles: int):
    cls = getattr(pmt, STEP_CLASSES[sampler])
    if sampler == "pg":
        return cls([mu], num_particles=particles)
    if sampler == "pg-opt":
        return cls([mu], num_particles=particles, **PG_OPT_KW)
    if sampler == "pg-pimh":
        return cls([mu], **PG_PIMH_KW)
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
    """One chain of BART (the given tree step) + NUTS for sigma^2 ~ Chipman's inverse gamma prior.

    Returns timing (whole sampling, and inside the BART step), the training log-likelihood trace
    of the kept draws, sigma draws, the posterior mean of f at X_test and the kept draws of the
    BART step's own stats.
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
        rec = StepRecorder(step, STEP_STATS)
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
    if len(rec.seconds) != iters:
        raise RuntimeError(f"BART step ran {len(rec.seconds)} times, expected {iters}")
    post = idata.posterior
    mu_draws = np.asarray(post["mu"].values, dtype=float)[0]  # (draws, n)
    sig = np.asarray(post["sigma"].values, dtype=float)[0]  # (draws,)
    t2 = time.perf_counter()
    f_test = np.asarray(pmt.predict(idata, X_test, "mu"), dtype=float)[0]  # (draws, n_test)
    predict_s = time.perf_counter() - t2
    sampling_s = post.attrs.get("sampling_time")
    sampling_s = float(sampling_s) if sampling_s is not None else t1 - t0
    kept = rec.stats[burn:]
    bart_step_s = float(sum(rec.seconds))
    return {
        "seed": seed,
        "burn": burn,
        "draws": draws,
        "sigma2_prior": [float(a), float(b)],
        "build_s": t0 - t_build,
        "sample_call_s": t1 - t0,
        "sampling_s": sampling_s,
        "bart_step_s": bart_step_s,
        "predict_s": predict_s,
        "ms_per_iter": sampling_s / iters * 1e3,
        "bart_step_ms_per_iter": bart_step_s / iters * 1e3,
        "bart_step_ms_median": float(np.median(rec.seconds)) * 1e3,
        "loglik": gaussian_loglik(y, mu_draws, sig),
        "sigma": sig,
        "f_test_mean": f_test.mean(axis=0),
        "stats": {k: np.array([s[k] for s in kept]) for k in STEP_STATS if kept and k in kept[0]},
    }


def warmup(X, y, X_test, **kw) -> float:
    """Untimed short run, so that numba compilation / cache loading is not billed to the first chain."""
    t = time.perf_counter()
    fit_bart(X, y, X_test, **dict(kw, burn=WARMUP_ITERS[0], draws=WARMUP_ITERS[1], seed=987654321))
    return time.perf_counter() - t


def summarise_chain(fit: dict, test_target: np.ndarray) -> dict:
    """JSON-able numbers of one chain from :func:`fit_bart`; test error against ``test_target`` (f or y)."""
    ll = fit["loglik"]
    ess_b = single_chain_bulk_ess(ll)
    ess_c = coda_ess(ll)
    s = fit["sampling_s"]
    keep = (
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
    out = {k: fit[k] for k in keep}
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
        out["n_leaves_trace"] = [float(v) for v in fit["stats"]["n_leaves"]]
    err = fit["f_test_mean"] - test_target
    out["test_mse"] = float(np.mean(err**2))
    out["test_rmse"] = float(np.sqrt(out["test_mse"]))
    return out


# =========================================================================== report side


def mean_of(chains: list[dict], key: str) -> float | None:
    vals = [c[key] for c in chains if c.get(key) is not None]
    return float(np.mean(vals)) if vals else None


def range_of(chains: list[dict], key: str) -> tuple[float | None, float | None]:
    vals = [c[key] for c in chains if c.get(key) is not None]
    return (float(np.min(vals)), float(np.max(vals))) if vals else (None, None)


def _stacked(chains: list[dict], key: str) -> np.ndarray | None:
    traces = [c.get(key) for c in chains]
    if len(traces) < 2 or any(t is None for t in traces) or len({len(t) for t in traces}) != 1:
        return None
    arr = np.asarray(traces, dtype=float)
    return None if np.ptp(arr) == 0 else arr


def across_chain_rhat(chains: list[dict], key: str = "loglik_trace") -> float | str | None:
    """Rank-normalised split R-hat of a trace (default the training log-likelihood) over the
    independent chains (seeds); ``"∞"`` when each chain is constant but the chains differ (no
    within-chain variance: the estimate is a division by zero)."""
    arr = _stacked(chains, key)
    if arr is None:
        return None
    if np.all(np.ptp(arr, axis=1) == 0):
        return "∞"
    return float(rank_rhat(arr))


def across_chain_ess(chains: list[dict], key: str = "loglik_trace") -> float | None:
    """Multi-chain bulk ESS of a trace over the independent chains: what the chains together are
    worth when they disagree (a chain that sits on its own tree adds about one draw)."""
    arr = _stacked(chains, key)
    return None if arr is None else float(bulk_ess(arr))


def across_chain_numbers(chains: list[dict]) -> dict:
    """What the reports show from the chains' traces: R-hat and multi-chain ESS of the log-likelihood and
    of the number of leaves."""
    return {
        "rhat": across_chain_rhat(chains),
        "rhat_leaves": across_chain_rhat(chains, "n_leaves_trace"),
        "ess_multi": across_chain_ess(chains),
        "ess_multi_leaves": across_chain_ess(chains, "n_leaves_trace"),
    }


def move_traces(results: list[dict], json_path: Path, regenerate: str) -> list[dict]:
    """Take the per-draw traces out of ``results`` (in place) before they are saved: each successful
    result keeps :func:`across_chain_numbers` under ``"across_chains"``, and the traces go to
    ``raw/<report>.npz`` next to the report's JSON (ignored by git), as arrays ``r<i>_c<j>_<trace>``
    (result i of ``results``, chain j). Returns the file's record (:func:`harness.save_raw`), or [] when
    there was no trace."""
    arrays = {}
    for i, r in enumerate(results):
        if r.get("status") == "ok" and "chains" in r:
            r["across_chains"] = across_chain_numbers(r["chains"])
        for j, c in enumerate(r.get("chains", [])):
            for key in TRACES:
                if key in c:
                    arrays[f"r{i}_c{j}_{key}"] = np.asarray(c.pop(key), dtype=float)
    if not arrays:
        return []
    json_path = Path(json_path)
    rec = harness.save_raw(json_path.parent / "raw" / f"{json_path.stem}.npz", arrays, regenerate)
    rec["contents"] = "r<i>_c<j>_<trace>: per-draw trace of chain j of results[i], " + ", ".join(TRACES)
    return [rec]


def row_numbers(res: dict) -> dict:
    """Means over a configuration's chains of everything the PG reports show."""
    ch = res["chains"]
    mean = {
        key: mean_of(ch, field)
        for key, field in (
            ("ess_bulk", "ess_bulk_loglik"),
            ("ess_coda", "ess_coda_loglik"),
            ("ess_bulk_per_s", "ess_bulk_per_s"),
            ("ess_coda_per_s", "ess_coda_per_s"),
            ("ms_per_iter", "ms_per_iter"),
            ("bart_ms_per_iter", "bart_step_ms_per_iter"),
            ("sampling_s", "sampling_s"),
            ("leaves", "n_leaves_mean"),
            ("depth", "tree_depth_mean"),
            ("test_mse", "test_mse"),
            ("rmse", "test_rmse"),
            ("kept_old", "kept_old_mean"),
            ("stages", "stages_mean"),
            ("accept", "accept_mean"),
            ("sigma", "sigma_mean"),
            ("loglik", "loglik_mean"),
            ("ess_leaves", "ess_bulk_n_leaves"),
            ("rmse_mean", "rmse_mean"),
            ("rmse_ols", "rmse_ols"),
        )
    }
    # saved results keep the across-chain numbers, not the traces (move_traces); a fresh result has the traces
    across = res["across_chains"] if "across_chains" in res else across_chain_numbers(ch)
    return dict(mean, ess_bulk_range=range_of(ch, "ess_bulk_loglik"), **across,
                pimh_accept=mean_of(ch, "pimh_accept_mean"))


def with_numbers(results: list[dict]) -> list[dict]:
    """The results, each successful one with its :func:`row_numbers` under ``"x"`` (computed once)."""
    return [dict(r, x=row_numbers(r)) if r.get("status") == "ok" else r for r in results]


def range_txt(v, r) -> str:
    """``mean [min–max]`` (just the mean when all chains agree or there is one)."""
    if v is None:
        return "—"
    if r[0] is None or r[0] == r[1]:
        return fmt(v)
    return f"{fmt(v)} [{fmt(r[0])}–{fmt(r[1])}]"


def num(key: str):
    """Table cell: the row number ``key`` (see :func:`with_numbers`), '—' for a failed configuration."""
    return harness.if_ok(lambda r: fmt(r["x"][key]))


def ess_cell(r: dict) -> str:
    """Table cell: mean bulk ESS over the chains [min–max]."""
    return range_txt(r["x"]["ess_bulk"], r["x"]["ess_bulk_range"]) if "x" in r else "—"


def notes_cell(r: dict) -> str:
    """Table cell: the error of a failed configuration, else the contention warning if any."""
    if r.get("status") != "ok":
        return f"**{r['status']}**: {(r.get('error') or r.get('status') or 'failed').splitlines()[0]}"
    return harness.contention_note(r) or ""


def per_chain_ess(res: dict) -> str:
    """Bulk / coda ESS of every chain, for the details tables."""
    return ", ".join(f"{fmt(c['ess_bulk_loglik'])} / {fmt(c['ess_coda_loglik'])}" for c in res["chains"])


def describe(res: dict) -> str:
    """One-line summary of a configuration for the progress output."""
    x = row_numbers(res)
    msg = (
        f"ESS bulk {x['ess_bulk']:.1f}, coda {x['ess_coda']:.1f}, {x['ms_per_iter']:.3f} ms/iter, "
        f"leaves {x['leaves']:.2f}, test RMSE {x['rmse']:.4g}"
    )
    if x["kept_old"] is not None:
        msg += f", kept_old {x['kept_old']:.3f}, stages {x['stages']:.1f}"
    return msg
