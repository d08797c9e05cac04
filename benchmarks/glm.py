"""BART under non-Gaussian likelihoods against what users would pick instead, held-out, side by side.

    python -m benchmarks.glm [--quick] [--cases binary,counts,hetero] [--json PATH] [--out PATH]
    python -m benchmarks.glm --render-only [--json PATH]

Cases (every fit in its own process, benchmarks.harness; the fits and scores of benchmarks/heldout.py, the data
of benchmarks/data.py):

* ``binary``: every binary data set (ionosphere, 5 stratified 70/30 splits; the others, 3), Bernoulli-logit
  BART with each package's defaults and 2 chains x (500 + 500): ours with its default number of trees (m = 200)
  and with m = 50 (pymc-bart's default, and the README's), pymc-bart (m = 50); stochtree's probit BART with its
  defaults (200 trees, 5 grow-from-root sweeps then 100 MCMC draws); scikit-learn's random forest (500 trees) and
  gradient boosting (defaults). Held-out log score, accuracy, Brier score; wall time, ESS/s of f and the
  acceptance rates for the MCMC fits.
* ``counts``: bikes, docvis and biochemists, 3 random 70/30 splits, Poisson and negative binomial
  (``alpha ~ Exponential(1)``) with ``mu = exp(BART)``, ours and pymc-bart at m = 50 and m = 200,
  2 x (500 + 500). Held-out log score, RMSE of the predictive mean, acceptance rates, ESS/s of f.
* ``hetero`` (simulated, 3 seeds): ``y ~ N(f(x), exp(s(x))^2)`` with known ``f`` and ``s`` (n = 500
  train, 500 test, p = 5); two BARTs (mean and log sd, m = 50 each, CGMStep), and the gallery's form, one
  BART with two outputs (``shape=(2, n)``), ours and pymc-bart's (its default, trees shared by the
  outputs), against stochtree's heteroskedastic BART (mean and variance forests). Held-out log score
  and RMSE of the estimated sd function against the truth.

The defaults themselves were chosen on other data (benchmarks/defaults.py: breast-cancer, pima and biopsy for a
binary response, biochemists and medpar for counts); ionosphere, participation, birthwt, bikes and docvis are
held out from that choice.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness, heldout
from benchmarks.data import BINARY
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.glm"
CASES = ("binary", "counts", "hetero")
FULL = {"tune": 500, "draws": 500, "chains": 2, "ion_splits": 5, "splits": 3, "hetero_seeds": 3, "hetero_m": 50}
QUICK = {"tune": 60, "draws": 60, "chains": 2, "ion_splits": 1, "splits": 1, "hetero_seeds": 1, "hetero_m": 20}
# (label, method, m): the binary arms
BINARY_ARMS = (("ours", "ours", 200), ("ours, m = 50", "ours", 50), ("pymc-bart", "pymc-bart", 50),
               ("stochtree (probit)", "stochtree", None), ("random forest", "random-forest", None),
               ("gradient boosting", "gradient-boosting", None))
COUNT_DATA = ("bikes", "docvis", "biochemists")
HETERO_METHODS = ("ours-cgm", "ours-cgm-outputs", "pymc-bart", "stochtree")
HELD_OUT = ("ionosphere", "participation", "birthwt", "bikes", "docvis")


def hetero_data(seed: int, n: int = 500, p: int = 5):
    """``X ~ U(0,1)^p``, ``f = 10 sin(pi x1 x2) + 5 x3``, ``s = log sd = 0.5 + 1.5 (x4 - 0.5) + sin(2 pi x5) / 2``."""
    rng = np.random.default_rng([seed, 12])

    def draw(k):
        X = rng.uniform(size=(k, p))
        f = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 5 * X[:, 2]
        s = 0.5 + 1.5 * (X[:, 3] - 0.5) + 0.5 * np.sin(2 * np.pi * X[:, 4])
        return X, f, s, f + np.exp(s) * rng.standard_normal(k)

    return draw(n), draw(n)


def fit_hetero(spec: dict, Xtr: np.ndarray, ytr: np.ndarray, Xte: np.ndarray) -> tuple:
    """A mean and a log-sd function fitted by ``spec["method"]`` (one of :data:`HETERO_METHODS`; ``m`` trees in each,
    the MCMC sizes and seed of ``spec``; ``spec["logsd"]`` and ``spec["mean"]``, if there, the log-sd and the mean
    BART's keywords for ``ours-cgm``):
    draws (draws, rows) of both at ``Xte``, the wall time and extra stats."""
    if spec["method"] == "ours-cgm":
        import pymc as pm

        import pymc_treesamplers as pmt

        t0 = time.perf_counter()
        with pm.Model():
            mean = pmt.BART("mean", Xtr, ytr, m=spec["m"], **spec.get("mean", {}))
            logsd = pmt.BART("logsd", Xtr, ytr, m=spec["m"], **spec.get("logsd", {}))
            pm.Normal("y", mean, pm.math.exp(logsd), observed=ytr)
            idata = pm.sample(tune=spec["tune"], draws=spec["draws"], chains=spec["chains"], cores=1,
                              random_seed=spec["seed"], step=[pmt.CGMStep([mean]), pmt.CGMStep([logsd])],
                              progressbar=False, compute_convergence_checks=False)
        wall = time.perf_counter() - t0
        m_draws = np.asarray(pmt.predict(idata, Xte, "mean")).reshape(-1, len(Xte))
        s_draws = np.asarray(pmt.predict(idata, Xte, "logsd")).reshape(-1, len(Xte))
        extra = {"mh_accept": float(idata.sample_stats["logsd_mh_accept"].mean())}
    elif spec["method"] in ("ours-cgm-outputs", "pymc-bart"):
        # the gallery's form: one BART with two outputs, mean and log sd; pymc-bart fitted transductively
        # as in the other cases (test rows in X, likelihood on the training rows only)
        import pymc as pm

        ours = spec["method"] == "ours-cgm-outputs"
        if ours:
            import pymc_treesamplers as pkg
        else:
            import pymc_bart as pkg
        k, n_te = len(ytr), len(Xte)
        X_fit = Xtr if ours else np.vstack([Xtr, Xte])
        Y_fit = ytr if ours else np.concatenate([ytr, np.full(n_te, ytr.mean())])
        run = {"random_seed": spec["seed"], "progressbar": False, "compute_convergence_checks": False}
        t0 = time.perf_counter()
        with pm.Model():
            w = pkg.BART("w", X_fit, Y_fit, m=spec["m"], shape=(2, len(Y_fit)))
            pm.Normal("y", w[0][:k], pm.math.exp(w[1][:k]), observed=ytr)
            idata = pm.sample(tune=spec["tune"], draws=spec["draws"], chains=spec["chains"], cores=1,
                              step=[pkg.CGMStep([w])] if ours else None, **run)
        wall = time.perf_counter() - t0
        both = np.asarray(pkg.predict(idata, Xte, "w")) if ours else np.asarray(idata.posterior["w"].values)[..., k:]
        m_draws = both[:, :, 0].reshape(-1, n_te)
        s_draws = both[:, :, 1].reshape(-1, n_te)
        extra = {"mh_accept": float(idata.sample_stats["w_mh_accept"].mean())} if ours else {}
    else:
        from stochtree import BARTModel

        t0 = time.perf_counter()
        model = BARTModel()
        model.sample(X_train=Xtr, y_train=ytr, num_gfr=0, num_burnin=spec["tune"], num_mcmc=spec["draws"],
                     general_params={"num_chains": spec["chains"], "random_seed": spec["seed"]},
                     mean_forest_params={"num_trees": spec["m"]}, variance_forest_params={"num_trees": spec["m"]})
        wall = time.perf_counter() - t0
        pred = model.predict(Xte, terms="all", type="posterior")
        m_draws = np.asarray(pred["y_hat"]).T
        # the variance forest's prediction is the variance per row and draw
        s_draws = 0.5 * np.log(np.asarray(pred["variance_forest_predictions"]).T)
        extra = {}
    return m_draws, s_draws, wall, extra


def hetero_log_score(yte: np.ndarray, m_draws: np.ndarray, s_draws: np.ndarray) -> float:
    """Mean over held-out rows of the log posterior predictive density of a Normal with these mean and log-sd
    draws (draws, rows)."""
    from scipy import special, stats

    logp = stats.norm.logpdf(yte, m_draws, np.exp(s_draws))
    return float(np.mean(special.logsumexp(logp, axis=0) - np.log(logp.shape[0])))


def _hetero(spec: dict) -> dict:
    (Xtr, _, _, ytr), (Xte, fte, ste, yte) = hetero_data(spec["seed"])
    m_draws, s_draws, wall, extra = fit_hetero(spec, Xtr, ytr, Xte)
    return {"wall_s": wall, "log_score": hetero_log_score(yte, m_draws, s_draws),
            "rmse_mean": float(np.sqrt(np.mean((m_draws.mean(axis=0) - fte) ** 2))),
            "rmse_log_sd": float(np.sqrt(np.mean((s_draws.mean(axis=0) - ste) ** 2))), **extra}


def worker_body(spec: dict) -> dict:
    return _hetero(spec) if spec["case"] == "hetero" else heldout.run(spec)


def _mean(rs: list[dict], key: str):
    vals = [r[key] for r in rs if r.get(key) is not None]
    return float(np.mean(vals)) if vals else None


def _binary_tables(ok: list[dict], st: dict) -> list[str]:
    lines = []
    summary = []
    for data in BINARY:
        rows = [r for r in ok if r["spec"]["case"] == "binary" and r["spec"]["data"] == data]
        if not rows:
            continue
        n_splits = st["ion_splits"] if data == "ionosphere" else st["splits"]
        table = []
        for label, _, _ in BINARY_ARMS:
            rs = [r for r in rows if r["spec"]["label"] == label]
            if not rs:
                continue
            table.append([label, str(len(rs)), fmt(-_mean(rs, "log_score")), fmt(_mean(rs, "accuracy")),
                          fmt(_mean(rs, "brier")), fmt(_mean(rs, "wall_s")), fmt(_mean(rs, "ess_f_per_s")),
                          fmt(_mean(rs, "rhat_f")), fmt(_mean(rs, "tree_accept"))])
        held = " (held out from the choice of defaults)" if data in HELD_OUT else " (tuning data of the defaults)"
        lines += [f"### {data}, {n_splits} stratified 70/30 splits{held}", "",
                  md_table(["method", "fits", "log loss", "accuracy", "Brier", "wall s", "ESS/s of f",
                            "max R-hat of f", "trees changed"], table), ""]
        ours = {label: [r for r in rows if r["spec"]["label"] == label] for label in ("ours", "ours, m = 50")}
        peer = [r for r in rows if r["spec"]["label"] == "pymc-bart"]
        if peer and all(ours.values()):
            pl, pa = -_mean(peer, "log_score"), _mean(peer, "accuracy")
            summary.append([data + ("" if data in HELD_OUT else " (tuning)"), fmt(pl),
                            *[f"{fmt(-_mean(rs, 'log_score'))} ({-_mean(rs, 'log_score') / pl:.2f}x)"
                              for rs in ours.values()], fmt(pa),
                            *[f"{fmt(_mean(rs, 'accuracy'))} ({100 * (_mean(rs, 'accuracy') - pa):+.1f} pts)"
                              for rs in ours.values()]])
    if summary:
        lines = ["## Binary: ours against pymc-bart, each with its defaults", "",
                 "Mean held-out log loss (lower is better; ratio to pymc-bart's) and accuracy (difference in points).",
                 "", md_table(["data", "pymc-bart log loss", "ours (m = 200)", "ours (m = 50)", "pymc-bart accuracy",
                               "ours (m = 200)", "ours (m = 50)"], summary), "", "## Binary, per data set", ""] + lines
    return lines


def _count_tables(ok: list[dict], st: dict) -> list[str]:
    rows = []
    for data in COUNT_DATA:
        for lik in ("poisson", "negbinomial"):
            for m in (50, 200):
                for method in ("ours", "pymc-bart"):
                    rs = [r for r in ok if r["spec"]["case"] == "counts" and r["spec"]["data"] == data
                          and r["spec"]["likelihood"] == lik and r["spec"]["m"] == m and r["spec"]["method"] == method]
                    if rs:
                        rows.append([data, lik, str(m), method, str(len(rs)), fmt(_mean(rs, "log_score")),
                                     fmt(_mean(rs, "rmse")), fmt(_mean(rs, "mh_accept")),
                                     fmt(_mean(rs, "tree_accept")), fmt(_mean(rs, "ess_f_per_s")),
                                     fmt(_mean(rs, "rhat_f")), fmt(_mean(rs, "wall_s"))])
    if not rows:
        return []
    return [f"## Counts, {st['splits']} random 70/30 splits", "",
            "Log score: mean held-out log predictive probability of a test count (higher is better). MH acceptance: "
            "the share of tree proposals the likelihood correction kept (ours); trees changed: the share of tree "
            "updates that changed a tree.", "",
            md_table(["data", "likelihood", "m", "method", "fits", "log score", "RMSE", "MH acceptance",
                      "trees changed", "ESS/s of f", "max R-hat of f", "wall s"], rows), ""]


def render(saved: dict) -> str:
    st, results = saved["settings"], saved["results"]
    ok = [r for r in results if r.get("status") == "ok"]
    lines = harness.header_lines("Non-Gaussian BART against the alternatives, held out", saved["meta"])
    lines += [f"* MCMC arms: {st['chains']} chains x ({st['tune']} + {st['draws']}); every fit in its own process; "
              "means over splits. Protocol and data: `benchmarks/glm.py`, `benchmarks/heldout.py`, "
              "`benchmarks/data.py`.", ""]
    lines += _binary_tables(ok, st) + _count_tables(ok, st)
    het = [r for r in ok if r["spec"]["case"] == "hetero"]
    if het:
        by = {m: [r for r in het if r["spec"]["method"] == m] for m in HETERO_METHODS}
        table = [[m, str(len(rs)), fmt(_mean(rs, "log_score")), fmt(_mean(rs, "rmse_mean")),
                  fmt(_mean(rs, "rmse_log_sd")), fmt(_mean(rs, "wall_s")), fmt(_mean(rs, "mh_accept"))]
                 for m, rs in by.items() if rs]
        lines += [f"## Heteroskedastic simulation, {st['hetero_seeds']} seeds, n = 500 train / 500 test", "",
                  md_table(["method", "fits", "log score", "RMSE of f", "RMSE of log sd", "wall s",
                            "MH acceptance (log sd)"], table), ""]
    same = [r for r in ok if r.get("chains_identical")]
    if same:
        lines += [f"* In {len(same)} pymc-bart fits the two chains were identical draw for draw: pymc-bart 0.13's "
                  "tree sampler takes no seed, so where nothing else in the model is random every chain repeats one "
                  "stream. Its ESS/s then counts one chain and its R-hat is undefined (—).", ""]
    lines += harness.run_notes(results, lambda sp: f"{sp['case']} {sp.get('data', '')} "
                                                   f"{sp.get('label') or sp['method']} {sp.get('likelihood', '')} "
                                                   f"m={sp.get('m')} seed {sp['seed']}")
    return "\n".join(lines + harness.report_footer(saved))


def parse_args(argv: list[str]):
    return harness.parse_case_args(argv, MODULE, __doc__, CASES, "glm", "smoke run: one split each, 60 + 60 draws",
                                   timeout_min=40.0)


def describe(res: dict) -> str:
    """A fit's status line: its held-out log score and wall time (also benchmarks/variance.py's)."""
    return f"log score {res['log_score']:.4g}, wall {res['wall_s']:.3g} s"


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    """The chosen cases' fits, one run per data set, split and arm (per seed and method for ``hetero``)."""
    st = harness.chosen_settings(args, QUICK, FULL, cases=args.cases)
    mcmc = {k: st[k] for k in ("tune", "draws", "chains")}
    runs = []
    if "binary" in args.cases:
        for data in BINARY:
            for seed in range(st["ion_splits"] if data == "ionosphere" else st["splits"]):
                for label, method, m in BINARY_ARMS:
                    spec = {"case": "binary", "data": data, "likelihood": "logit", "method": method, "label": label,
                            "m": m, "seed": seed, **mcmc}
                    runs.append((f"{data} {label} {seed}".replace(",", "").replace(" ", "_"), spec))
    if "counts" in args.cases:
        for data in COUNT_DATA:
            for seed in range(st["splits"]):
                for lik in ("poisson", "negbinomial"):
                    for m in (50, 200):
                        for method in ("ours", "pymc-bart"):
                            spec = {"case": "counts", "data": data, "likelihood": lik, "method": method, "m": m,
                                    "seed": seed, **mcmc}
                            runs.append((f"{data} {lik} m{m} {method} {seed}".replace(" ", "_"), spec))
    if "hetero" in args.cases:
        runs += [(f"hetero {m} {s}", {"case": "hetero", "method": m, "seed": s, "m": st["hetero_m"], **mcmc})
                 for s in range(st["hetero_seeds"]) for m in HETERO_METHODS]
    return st, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
