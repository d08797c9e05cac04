"""One held-out fit of a non-Gaussian BART (ours or pymc-bart) or of a peer, and its scores: the core of
benchmarks/glm.py (against the peers) and benchmarks/defaults.py (the choice of the defaults).

A spec names a data set of benchmarks/data.py, a split seed, a likelihood (``logit``, ``probit``, ``poisson``,
``negbinomial``, ``gamma``), a method (``ours``, ``pymc-bart``, ``stochtree``, ``random-forest``,
``gradient-boosting``) and the MCMC sizes (chains run two at a time); ``bart`` holds keyword arguments for
``BART`` beyond ``m``; ``route`` (ours only) fits with ``CGMStep([mu], route=...)`` instead of ``pm.sample``'s
own step assignment (which is ``CGMStep`` with ``route="auto"``).

The PyMC models, the same for both packages:

* ``logit``: ``y ~ Bernoulli(logit_p = mu)``; ``probit``: ``y ~ Bernoulli(p = invprobit(mu))``;
* ``poisson``: ``y ~ Poisson(exp(mu))``; ``negbinomial``: ``y ~ NegativeBinomial(exp(mu), alpha)``,
  ``alpha ~ Exponential(1)``;
* ``gamma``: ``y ~ Gamma(alpha = shape, beta = shape / exp(mu))`` (mean ``exp(mu)``), ``shape ~ HalfNormal(10)``.

pymc-bart's ``Y`` (its leaf prior's scale and starting value) is what its documentation passes: the labels for
a binary response (which gives its binary rule, leaf sd ``3 / sqrt(m)``), ``log(y + 1)`` for counts (its
examples take ``log(y)``, which zeros rule out) and ``log(y)`` for a positive response. Ours takes ``y``; under
these likelihoods it sets its leaf prior on the link scale by itself. pymc-bart predicts at the test rows with
its own route (forests drawn at random from its stored trees, ``pymc_bart.utils._sample_posterior``, what its
``rng_fn`` does); ``pm.set_data`` + ``pm.sample_posterior_predictive`` returned values at the training rows
under PyMC 6 here. Its draws at new rows are not matched to its other variables' draws, so ``alpha`` and
``shape`` are paired with them at random.

Scores: the held-out log score (mean over test rows of the log posterior predictive probability or density),
accuracy and Brier score for a binary response, RMSE of the predictive mean otherwise; for MCMC fits, the
median bulk ESS per second of f over 25 training rows, the largest R-hat there, and the acceptance rates.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.data import load, split

BINARY_LIKELIHOODS = ("logit", "probit")
N_ESS_ROWS = 25


def _copies(f_rows: np.ndarray) -> bool:
    """Whether every chain of (chain, draw, rows) draws repeats the first one."""
    return f_rows.shape[0] > 1 and all(np.array_equal(f_rows[0], c) for c in f_rows[1:])


def mixing(f_rows: np.ndarray, wall: float) -> dict:
    """Median bulk ESS per second and largest rank R-hat over the rows of f draws (chain, draw, rows);
    chains that are copies of each other (pymc-bart's sampler ignores the seed) count once, R-hat undefined."""
    from benchmarks.metrics import bulk_ess, rank_rhat

    f_rows = f_rows[:, :, :N_ESS_ROWS]
    copies = _copies(f_rows)
    if copies:
        f_rows = f_rows[:1]
    out = {"ess_f_per_s": float(np.median(bulk_ess(f_rows))) / wall, "chains_identical": copies}
    out["rhat_f"] = None if f_rows.shape[0] < 2 else float(np.max(rank_rhat(f_rows)))
    return out


def _build(pkg, pm, name, X, Y, likelihood, y_obs, bart):
    mu = pkg.BART(name, X, Y, **bart)
    if likelihood == "logit":
        pm.Bernoulli("y", logit_p=mu, observed=y_obs)
    elif likelihood == "probit":
        pm.Bernoulli("y", p=pm.math.invprobit(mu), observed=y_obs)
    elif likelihood == "poisson":
        pm.Poisson("y", mu=pm.math.exp(mu), observed=y_obs)
    elif likelihood == "negbinomial":
        pm.NegativeBinomial("y", mu=pm.math.exp(mu), alpha=pm.Exponential("alpha", 1.0), observed=y_obs)
    elif likelihood == "gamma":
        shape = pm.HalfNormal("shape", 10.0)
        pm.Gamma("y", alpha=shape, beta=shape / pm.math.exp(mu), observed=y_obs)
    else:
        raise ValueError(f"unknown likelihood {likelihood!r}")
    return mu


def _pymc_y(likelihood, y):
    if likelihood in BINARY_LIKELIHOODS:
        return y
    return np.log(y + 1.0) if likelihood in ("poisson", "negbinomial") else np.log(y)


def fit_pymc(spec: dict, Xtr, ytr, Xte) -> dict:
    """Our BART or pymc-bart's in the spec's PyMC model: f at the test rows (draws, n_test), the other
    parameter's draws (or None), f at 25 training rows (chain, draw, 25), wall time, stats."""
    import pymc as pm

    ours = spec["method"] == "ours"
    if ours:
        import pymc_treesamplers as pkg
    else:
        import pymc_bart as pkg
    lik = spec["likelihood"]
    bart = {"m": spec["m"], **spec.get("bart", {})}
    Y = ytr if ours else _pymc_y(lik, ytr)
    run = {"random_seed": spec["seed"], "progressbar": False, "compute_convergence_checks": False}
    def step_for(mu):
        # ``route``: our default step (CGM) with that likelihood route; else pm.sample's own assignment
        return [pkg.CGMStep([mu], route=spec["route"])] if ours and "route" in spec else None

    with pm.Model():  # untimed warm-up: numba compile or cache load, PyTensor compile
        warm = _build(pkg, pm, "warmup", Xtr, Y, lik, ytr, bart)  # another name: pymc-bart keeps trees by name
        pm.sample(tune=2, draws=2, chains=1, cores=1, step=step_for(warm), **run)
    t0 = time.perf_counter()
    with pm.Model():
        mu = _build(pkg, pm, "mu", Xtr, Y, lik, ytr, bart)
        idata = pm.sample(tune=spec["tune"], draws=spec["draws"], chains=spec["chains"], cores=min(spec["chains"], 2),
                          step=step_for(mu), **run)
    wall = time.perf_counter() - t0
    post = idata.posterior
    other = next((v for v in ("alpha", "shape") if v in post), None)
    par = np.asarray(post[other].values).reshape(-1) if other else None
    if ours:
        f_test = np.asarray(pkg.predict(idata, Xte, "mu")).reshape(-1, len(Xte))
    else:
        from pymc_bart.utils import _get_posterior_sampler, _sample_posterior

        rng = np.random.default_rng(spec["seed"])
        f_test = np.asarray(_sample_posterior(_get_posterior_sampler(mu.owner.op), Xte, rng,
                                              size=spec["chains"] * spec["draws"])).reshape(-1, len(Xte))
        if par is not None:
            par = rng.permutation(par)
    stats = {"wall_s": wall, **mixing(np.asarray(post["mu"].values), wall)}
    ss = idata.sample_stats
    for key, name in (("mu_mh_accept", "mh_accept"), ("mu_accept", "tree_accept")):
        if key in ss:
            stats[name] = float(ss[key].mean())
    return {"f_test": f_test, "param": par, **stats}


def fit_other(spec: dict, Xtr, ytr, Xte) -> dict:
    """stochtree's BART with its defaults (binary: its probit model), or a scikit-learn forest: the
    predictive probabilities (binary) or f draws at the test rows."""
    from scipy import stats as st

    method = spec["method"]
    t0 = time.perf_counter()
    if method == "stochtree":
        from stochtree import BARTModel, OutcomeModel

        model = BARTModel()
        general = {"random_seed": spec["seed"]}
        if spec["likelihood"] in BINARY_LIKELIHOODS:
            general["outcome_model"] = OutcomeModel(outcome="binary", link="probit")
        model.sample(X_train=Xtr, y_train=ytr, general_params=general)
        lin = np.asarray(model.predict(Xte, terms="y_hat", type="posterior"))  # (n_test, draws)
        out = {"p_test": st.norm.cdf(lin).mean(axis=1)}
    else:
        from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

        clf = (RandomForestClassifier(n_estimators=500, random_state=spec["seed"]) if method == "random-forest"
               else GradientBoostingClassifier(random_state=spec["seed"]))
        clf.fit(Xtr, ytr)
        out = {"p_test": clf.predict_proba(Xte)[:, 1]}
    return {**out, "wall_s": time.perf_counter() - t0}


def scores(likelihood: str, yte: np.ndarray, fit: dict) -> dict:
    """Held-out log score and the response's other scores (module docstring)."""
    from scipy import special, stats

    if likelihood in BINARY_LIKELIHOODS:
        if "p_test" in fit:
            p = fit["p_test"]
        else:
            inv = special.expit if likelihood == "logit" else special.ndtr
            p = inv(fit["f_test"]).mean(axis=0)
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return {"log_score": float(np.mean(np.where(yte > 0.5, np.log(p), np.log1p(-p)))),
                "accuracy": float(np.mean((p > 0.5) == (yte > 0.5))), "brier": float(np.mean((p - yte) ** 2))}
    f = fit["f_test"]
    mean = np.exp(f)
    par = None if fit["param"] is None else fit["param"][:, None]
    if likelihood == "poisson":
        logp = stats.poisson.logpmf(yte, mean)
    elif likelihood == "negbinomial":
        logp = stats.nbinom.logpmf(yte, par, par / (par + mean))
    else:  # gamma with mean exp(f)
        logp = stats.gamma.logpdf(yte, par, scale=mean / par)
    log_score = special.logsumexp(logp, axis=0) - np.log(logp.shape[0])
    return {"log_score": float(np.mean(log_score)), "rmse": float(np.sqrt(np.mean((mean.mean(axis=0) - yte) ** 2)))}


def run(spec: dict) -> dict:
    """A worker body: load, split, fit, score (module docstring)."""
    X, y = load(spec["data"])
    tr, te = split(y, spec["seed"], binary=spec["likelihood"] in BINARY_LIKELIHOODS)
    if spec["method"] in ("ours", "pymc-bart"):
        fit = fit_pymc(spec, X[tr], y[tr], X[te])
    else:
        fit = fit_other(spec, X[tr], y[tr], X[te])
    extra = {k: v for k, v in fit.items() if k not in ("f_test", "param", "p_test")}
    return {**scores(spec["likelihood"], y[te], fit), **extra, "n_train": len(tr), "n_test": len(te)}
