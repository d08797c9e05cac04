"""BART under non-Gaussian likelihoods against what users would pick instead, held-out, side by side.

    python -m benchmarks.glm [--quick] [--cases ionosphere,bikes,hetero] [--json PATH] [--out PATH]
    python -m benchmarks.glm --render-only [--json PATH]

Cases (every fit in its own process, benchmarks.harness):

* ``ionosphere`` (shipped ``load_ionosphere``; 5 random 70/30 splits, seeds 0-4): Bernoulli-logit BART
  with m = 50, 2 x (500 + 500) (two chains in parallel processes, after an untimed warm-up), by
  ``CGMStep`` (ours) and by pymc-bart (its PGBART, the same PyMC model); stochtree's probit BART (m =
  50, 2 chains, 500 + 500, no grow-from-root warm start); scikit-learn's random forest (500 trees) and
  gradient boosting (defaults). Reported per split and as means: held-out log score (mean log predictive
  probability of the test labels; higher is better), accuracy, Brier score, wall time, and for the MCMC
  arms the ESS per second of f at 25 training rows (median over the rows of the bulk ESS across both chains,
  over the fit's wall time).
* ``bikes`` (shipped ``load_bikes``; 3 random 70/30 splits): the gallery's count models, Poisson and
  negative binomial (``alpha ~ Exponential(1)``) with ``mu = exp(BART)``, m = 50, 2 x (500 + 500), ours
  (CGMStep) against pymc-bart. Held-out log score (mean log posterior predictive pmf), RMSE of the
  posterior mean count, wall time, ESS/s of f at 25 training rows (pymc-bart's public prediction route
  draws test-row predictions from randomly chosen trees, so only in-sample draws keep chain order).
* ``hetero`` (simulated, 3 seeds): ``y ~ N(f(x), exp(s(x))^2)`` with known ``f`` and ``s`` (n = 500
  train, 500 test, p = 5); two BARTs (mean and log sd, m = 50 each, CGMStep), and the gallery's form, one
  BART with two outputs (``shape=(2, n)``), ours and pymc-bart's (its default, trees shared by the
  outputs), against stochtree's heteroskedastic BART (mean and variance forests). Held-out log score
  and RMSE of the estimated sd function against the truth.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.glm"
CASES = ("ionosphere", "bikes", "hetero")
FULL = {"m": 50, "tune": 500, "draws": 500, "chains": 2, "ion_splits": 5, "bike_splits": 3, "hetero_seeds": 3}
QUICK = {"m": 20, "tune": 60, "draws": 60, "chains": 2, "ion_splits": 1, "bike_splits": 1, "hetero_seeds": 1}
ION_METHODS = ("ours-cgm", "pymc-bart", "stochtree-probit", "random-forest", "gradient-boosting")
BIKE_METHODS = ("ours-cgm", "pymc-bart")
HETERO_METHODS = ("ours-cgm", "ours-cgm-outputs", "pymc-bart", "stochtree")
N_ESS_ROWS = 25


def _split(n: int, seed: int, frac: float = 0.7):
    idx = np.random.default_rng(seed).permutation(n)
    k = int(round(frac * n))
    return idx[:k], idx[k:]


def _copies(f_rows: np.ndarray) -> bool:
    """Whether every chain of (chain, draw, rows) draws repeats the first one."""
    return f_rows.shape[0] > 1 and all(np.array_equal(f_rows[0], c) for c in f_rows[1:])


def _ess_per_s(f_rows: np.ndarray, wall: float) -> float:
    """Median bulk ESS over the first 25 rows of f draws (chain, draw, rows), per second of wall time.
    Chains that are copies of each other (pymc-bart: its sampler ignores the seed) count once."""
    from benchmarks.metrics import bulk_ess

    f_rows = f_rows[:, :, :N_ESS_ROWS]
    if _copies(f_rows):
        f_rows = f_rows[:1]
    ess = bulk_ess(f_rows)
    return float(np.median(ess)) / wall


def _max_rhat(f_rows: np.ndarray) -> float | None:
    """Largest rank R-hat over the first 25 rows of f (None when the chains are copies of each other)."""
    from benchmarks.metrics import rank_rhat

    f_rows = f_rows[:, :, :N_ESS_ROWS]
    if f_rows.shape[0] < 2 or _copies(f_rows):
        return None
    return float(np.max(rank_rhat(f_rows)))


def _pymc_fit(spec, build, X_test, y_train):
    """Fit a PyMC model with our BART or pymc-bart's; returns (idata, f at X_test (chain, draw, n),
    f at the first 25 training rows (chain, draw, 25), wall time, notes).

    ``build(pkg, pm, name, X, Y, fit)`` adds the BART variable on covariates ``X`` (``Y`` for its prior
    defaults) and the likelihood of the training rows on ``fit`` (a function of the BART variable),
    and returns the variable. Ours is fitted on the training rows and predicts from the stored forests
    (``pmt.predict``, draw-matched). pymc-bart 0.13 has no draw-matched route under PyMC 6 here
    (``pm.set_data`` does not resize its variable, whose length follows ``Y``; its stored tree histories
    did not reproduce its posterior under a Bernoulli likelihood), so it is fitted on the training and
    test rows together with the likelihood on the training rows only: its posterior at the test rows
    is its prediction (its split points then see the test rows' X, and ``Y`` for its defaults is the
    training response padded with its mean).
    """
    import pymc as pm

    if spec["method"] == "pymc-bart":
        import pymc_bart as pkg
    else:
        import pymc_treesamplers as pkg
    ours = spec["method"] != "pymc-bart"
    k = len(y_train)
    X_fit = spec["X_train"] if ours else np.vstack([spec["X_train"], X_test])
    Y_fit = y_train if ours else np.concatenate([y_train, np.full(len(X_test), y_train.mean())])

    def fit(mu):
        return mu if ours else mu[:k]

    run = {"random_seed": spec["seed"], "progressbar": False, "compute_convergence_checks": False}
    with pm.Model():  # untimed warm-up: numba compile or cache load, PyTensor compile
        # another name: pymc-bart keeps every fitted variable's trees by name
        mu = build(pkg, pm, "warmup", X_fit, Y_fit, fit)
        pm.sample(tune=2, draws=2, chains=1, cores=1, step=[pkg.CGMStep([mu])] if ours else None, **run)
    t0 = time.perf_counter()
    with pm.Model():
        mu = build(pkg, pm, "mu", X_fit, Y_fit, fit)
        # chains in parallel processes for every PyMC arm
        idata = pm.sample(tune=spec["tune"], draws=spec["draws"], chains=spec["chains"], cores=spec["chains"],
                          step=[pkg.CGMStep([mu])] if ours else None, **run)
    wall = time.perf_counter() - t0
    post = np.asarray(idata.posterior["mu"].values)
    f_test = np.asarray(pkg.predict(idata, X_test, "mu")) if ours else post[:, :, k:]
    notes = {"chains_identical": bool(np.array_equal(post[0], post[-1]))} if post.shape[0] > 1 else {}
    return idata, f_test, post[:, :, :N_ESS_ROWS], wall, notes


def _binary_scores(p: np.ndarray, y: np.ndarray) -> dict:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return {"log_score": float(np.mean(np.where(y > 0.5, np.log(p), np.log1p(-p)))),
            "accuracy": float(np.mean((p > 0.5) == (y > 0.5))), "brier": float(np.mean((p - y) ** 2))}


def _ionosphere(spec: dict) -> dict:
    from scipy import special, stats

    from pymc_treesamplers.datasets import load_ionosphere

    X, y = load_ionosphere()
    X = X.to_numpy(dtype=float)
    tr, te = _split(len(y), spec["seed"])
    Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
    method = spec["method"]
    out = {}
    if method in ("ours-cgm", "pymc-bart"):
        spec = {**spec, "X_train": Xtr}

        def build(pkg, pm, name, X, Y, fit):
            mu = pkg.BART(name, X, Y, m=spec["m"])
            pm.Bernoulli("y", logit_p=fit(mu), observed=ytr)
            return mu

        idata, f_test, f_train, wall, notes = _pymc_fit(spec, build, Xte, ytr)
        out.update(notes)
        p = special.expit(f_test).mean(axis=(0, 1))
        out["ess_f_per_s"] = _ess_per_s(f_train, wall)
        out["rhat_f"] = _max_rhat(f_train)
        if "mu_mh_accept" in idata.sample_stats:
            out["mh_accept"] = float(idata.sample_stats["mu_mh_accept"].mean())
    elif method == "stochtree-probit":
        from stochtree import BARTModel, OutcomeModel

        t0 = time.perf_counter()
        model = BARTModel()
        model.sample(X_train=Xtr, y_train=ytr, num_gfr=0, num_burnin=spec["tune"], num_mcmc=spec["draws"],
                     general_params={"num_chains": spec["chains"], "random_seed": spec["seed"],
                                     "outcome_model": OutcomeModel(outcome="binary", link="probit")},
                     mean_forest_params={"num_trees": spec["m"]})
        wall = time.perf_counter() - t0
        def draws_at(rows):  # (rows, chains * draws), chain 1's draws first
            lin = np.asarray(model.predict(rows, terms="y_hat", type="posterior"))
            return lin.reshape(len(rows), spec["chains"], spec["draws"]).transpose(1, 2, 0)

        p = stats.norm.cdf(draws_at(Xte)).mean(axis=(0, 1))
        out["ess_f_per_s"] = _ess_per_s(draws_at(Xtr[:N_ESS_ROWS]), wall)
        out["rhat_f"] = _max_rhat(draws_at(Xtr[:N_ESS_ROWS]))
    else:
        from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

        clf = (RandomForestClassifier(n_estimators=500, random_state=spec["seed"]) if method == "random-forest"
               else GradientBoostingClassifier(random_state=spec["seed"]))
        t0 = time.perf_counter()
        clf.fit(Xtr, ytr)
        wall = time.perf_counter() - t0
        p = clf.predict_proba(Xte)[:, 1]
    return {"wall_s": wall, **_binary_scores(p, yte), **out}


def _bikes(spec: dict) -> dict:
    from scipy import special, stats

    from pymc_treesamplers.datasets import load_bikes

    X, y = load_bikes()
    X = X.to_numpy(dtype=float)
    tr, te = _split(len(y), spec["seed"])
    Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
    nb = spec["likelihood"] == "negbinomial"
    spec = {**spec, "X_train": Xtr}

    def build(pkg, pm, name, X, Y, fit):
        mu = pkg.BART(name, X, Y, m=spec["m"])
        if nb:
            alpha = pm.Exponential("alpha", 1.0)
            pm.NegativeBinomial("y", mu=pm.math.exp(fit(mu)), alpha=alpha, observed=ytr)
        else:
            pm.Poisson("y", mu=pm.math.exp(fit(mu)), observed=ytr)
        return mu

    idata, f_test, f_train, wall, notes = _pymc_fit(spec, build, Xte, np.log(ytr))
    lam = np.exp(f_test)  # (chain, draw, n_test)
    if nb:
        alpha = idata.posterior["alpha"].values[..., None]
        logp = stats.nbinom.logpmf(yte, alpha, alpha / (alpha + lam))
    else:
        logp = stats.poisson.logpmf(yte, lam)
    n_draws = logp[..., 0].size
    log_score = float(np.mean(special.logsumexp(logp.reshape(-1, len(yte)), axis=0) - np.log(n_draws)))
    rmse = float(np.sqrt(np.mean((lam.mean(axis=(0, 1)) - yte) ** 2)))
    out = {**notes, "wall_s": wall, "log_score": log_score, "rmse": rmse, "ess_f_per_s": _ess_per_s(f_train, wall),
           "rhat_f": _max_rhat(f_train)}
    if "mu_mh_accept" in idata.sample_stats:
        out["mh_accept"] = float(idata.sample_stats["mu_mh_accept"].mean())
    return out


def hetero_data(seed: int, n: int = 500, p: int = 5):
    """``X ~ U(0,1)^p``, ``f = 10 sin(pi x1 x2) + 5 x3``, ``s = log sd = 0.5 + 1.5 (x4 - 0.5) + sin(2 pi x5) / 2``."""
    rng = np.random.default_rng([seed, 12])

    def draw(k):
        X = rng.uniform(size=(k, p))
        f = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 5 * X[:, 2]
        s = 0.5 + 1.5 * (X[:, 3] - 0.5) + 0.5 * np.sin(2 * np.pi * X[:, 4])
        return X, f, s, f + np.exp(s) * rng.standard_normal(k)

    return draw(n), draw(n)


def _hetero(spec: dict) -> dict:
    from scipy import special, stats

    (Xtr, _, _, ytr), (Xte, fte, ste, yte) = hetero_data(spec["seed"])
    if spec["method"] == "ours-cgm":
        import pymc as pm

        import pymc_treesamplers as pmt

        t0 = time.perf_counter()
        with pm.Model():
            mean = pmt.BART("mean", Xtr, ytr, m=spec["m"])
            logsd = pmt.BART("logsd", Xtr, ytr, m=spec["m"])
            pm.Normal("y", mean, pm.math.exp(logsd), observed=ytr)
            idata = pm.sample(tune=spec["tune"], draws=spec["draws"], chains=spec["chains"], cores=1,
                              random_seed=spec["seed"], step=[pmt.CGMStep([mean]), pmt.CGMStep([logsd])],
                              progressbar=False, compute_convergence_checks=False)
        wall = time.perf_counter() - t0
        m_draws = np.asarray(pmt.predict(idata, Xte, "mean")).reshape(-1, len(yte))
        s_draws = np.asarray(pmt.predict(idata, Xte, "logsd")).reshape(-1, len(yte))
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
        k = len(ytr)
        X_fit = Xtr if ours else np.vstack([Xtr, Xte])
        Y_fit = ytr if ours else np.concatenate([ytr, np.full(len(Xte), ytr.mean())])
        run = {"random_seed": spec["seed"], "progressbar": False, "compute_convergence_checks": False}
        t0 = time.perf_counter()
        with pm.Model():
            w = pkg.BART("w", X_fit, Y_fit, m=spec["m"], shape=(2, len(Y_fit)))
            pm.Normal("y", w[0][:k], pm.math.exp(w[1][:k]), observed=ytr)
            idata = pm.sample(tune=spec["tune"], draws=spec["draws"], chains=spec["chains"], cores=1,
                              step=[pkg.CGMStep([w])] if ours else None, **run)
        wall = time.perf_counter() - t0
        both = np.asarray(pkg.predict(idata, Xte, "w")) if ours else np.asarray(idata.posterior["w"].values)[..., k:]
        m_draws = both[:, :, 0].reshape(-1, len(yte))
        s_draws = both[:, :, 1].reshape(-1, len(yte))
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
    logp = stats.norm.logpdf(yte, m_draws, np.exp(s_draws))
    log_score = float(np.mean(special.logsumexp(logp, axis=0) - np.log(logp.shape[0])))
    return {"wall_s": wall, "log_score": log_score,
            "rmse_mean": float(np.sqrt(np.mean((m_draws.mean(axis=0) - fte) ** 2))),
            "rmse_log_sd": float(np.sqrt(np.mean((s_draws.mean(axis=0) - ste) ** 2))), **extra}


def worker_body(spec: dict) -> dict:
    return {"ionosphere": _ionosphere, "bikes": _bikes, "hetero": _hetero}[spec["case"]](spec)


def _mean_table(rows_of: dict, metrics: list[tuple[str, str]]) -> str:
    rows = []
    for label, rs in rows_of.items():
        cells = []
        for _, key in metrics:
            vals = [r[key] for r in rs if r.get(key) is not None]
            cells.append(fmt(float(np.mean(vals))) if vals else "—")
        rows.append([label, str(len(rs)), *cells])
    return md_table(["method", "fits", *[h for h, _ in metrics]], rows)


def render(saved: dict) -> str:
    st, results = saved["settings"], saved["results"]
    ok = [r for r in results if r.get("status") == "ok"]
    lines = harness.header_lines("Non-Gaussian BART against the alternatives, held out", saved["meta"])
    lines += [f"* m = {st['m']} trees, {st['chains']} chains x ({st['tune']} + {st['draws']}) for every MCMC arm; "
              "every fit in its own process; means over splits (seeds).", ""]
    ion = [r for r in ok if r["spec"]["case"] == "ionosphere"]
    if ion:
        by = {m: [r for r in ion if r["spec"]["method"] == m] for m in ION_METHODS}
        lines += [f"## Ionosphere, Bernoulli, {st['ion_splits']} random 70/30 splits", "",
                  _mean_table({k: v for k, v in by.items() if v},
                              [("log score", "log_score"), ("accuracy", "accuracy"), ("Brier", "brier"),
                               ("wall s", "wall_s"), ("ESS/s of f", "ess_f_per_s"), ("max R-hat of f", "rhat_f"),
                               ("MH acceptance", "mh_accept")]),
                  ""]
    bikes = [r for r in ok if r["spec"]["case"] == "bikes"]
    if bikes:
        by = {f"{m}, {lk}": [r for r in bikes if r["spec"]["method"] == m and r["spec"]["likelihood"] == lk]
              for lk in ("poisson", "negbinomial") for m in BIKE_METHODS}
        lines += [f"## Bikes, counts, {st['bike_splits']} random 70/30 splits", "",
                  _mean_table({k: v for k, v in by.items() if v},
                              [("log score", "log_score"), ("RMSE", "rmse"), ("wall s", "wall_s"),
                               ("ESS/s of f", "ess_f_per_s"), ("max R-hat of f", "rhat_f"),
                               ("MH acceptance", "mh_accept")]), ""]
    het = [r for r in ok if r["spec"]["case"] == "hetero"]
    if het:
        by = {m: [r for r in het if r["spec"]["method"] == m] for m in HETERO_METHODS}
        lines += [f"## Heteroskedastic simulation, {st['hetero_seeds']} seeds, n = 500 train / 500 test", "",
                  _mean_table({k: v for k, v in by.items() if v},
                              [("log score", "log_score"), ("RMSE of f", "rmse_mean"),
                               ("RMSE of log sd", "rmse_log_sd"), ("wall s", "wall_s"),
                               ("MH acceptance (log sd)", "mh_accept")]), ""]
    same = [r for r in ok if r.get("chains_identical")]
    if same:
        which = sorted({f"{r['spec']['case']} {r['spec']['method']} {r['spec'].get('likelihood') or ''}".strip()
                        for r in same})
        lines += [f"* In {len(same)} fits the two chains were identical draw for draw ({', '.join(which)}): "
                  "pymc-bart 0.13's tree sampler (bartrs) takes no seed, so where nothing else in the model is "
                  "random (no NUTS variable) every chain of every run repeats one stream (checked: "
                  "`random_seed=1` and `2` give the same draws). Their ESS/s counts one chain (the copies add "
                  "nothing) and their R-hat is undefined (—): one chain cannot show that it has not converged.",
                  ""]
    unconverged = sorted({(r["spec"]["case"], r["spec"].get("likelihood") or "") for r in ok
                          if r["spec"]["method"] == "ours-cgm" and (r.get("rhat_f") or 0.0) > 1.1})
    for case, lik in unconverged:
        rh = [r["rhat_f"] for r in ok if r["spec"]["method"] == "ours-cgm" and r["spec"]["case"] == case
              and (r["spec"].get("likelihood") or "") == lik]
        lines += [f"* {case} {lik}: our chains have not converged in {st['chains']} x ({st['tune']} + {st['draws']}) "
                  f"(max R-hat of f {fmt(min(rh))}-{fmt(max(rh))} over the splits; where the likelihood is "
                  "informative the tree posterior is as hard to cross as a Gaussian one with a small noise, issue "
                  "15): the ESS/s there do not measure mixing, for either package.", ""]
    lines += harness.run_notes(results, lambda sp: f"{sp['case']} {sp['method']} seed {sp['seed']}")
    return "\n".join(lines + [harness.source_line(saved["meta"]), ""])


def parse_args(argv: list[str]) -> argparse.Namespace:
    return harness.parse_case_args(argv, MODULE, __doc__, CASES, "glm",
                                   "smoke run: one split each, m = 20, 60 + 60 draws")


def _describe(res: dict) -> str:
    return f"log score {res['log_score']:.4g}, wall {res['wall_s']:.3g} s"


def main(argv: list[str] | None = None) -> int:
    argv, args, code = harness.start(argv, parse_args, worker_body)
    if code is not None:
        return code
    st = dict(QUICK if args.quick else FULL, quick=args.quick, cases=args.cases)
    base = {k: st[k] for k in ("m", "tune", "draws", "chains")}
    runs = []
    if "ionosphere" in args.cases:
        runs += [(f"ionosphere {m} {s}", {"case": "ionosphere", "method": m, "seed": s, **base})
                 for s in range(st["ion_splits"]) for m in ION_METHODS]
    if "bikes" in args.cases:
        runs += [(f"bikes {lk} {m} {s}", {"case": "bikes", "method": m, "likelihood": lk, "seed": s, **base})
                 for s in range(st["bike_splits"]) for lk in ("poisson", "negbinomial") for m in BIKE_METHODS]
    if "hetero" in args.cases:
        runs += [(f"hetero {m} {s}", {"case": "hetero", "method": m, "seed": s, **base})
                 for s in range(st["hetero_seeds"]) for m in HETERO_METHODS]
    results = harness.run_specs(MODULE, args, runs, _describe)
    return harness.finish(MODULE, argv, args, st, results, render)


if __name__ == "__main__":
    sys.exit(main())
