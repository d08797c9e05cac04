"""Leaves with a basis (``pmt.BART(..., leaf_basis=w)``, model/basis.py): each leaf holds a coefficient on ``w``.

Exactness end to end (``pm.sample`` from a PyMC model, every step class): m = 1 and m = 2 under a Normal
likelihood against enumeration with the basis written into the leaves' joint Gaussian (not through the
route's division by ``w``), and m = 1 under a Bernoulli-logit likelihood on the corrected route against
enumeration x quadrature; m = 1 with a random scale on the term (the effect prior of docs/basis.md) against
enumeration x quadrature over the scale. The basis has a zero, a negative and non-unit values. The same checks
fail when the basis (or the scale) is ignored; an all-ones basis gives the draws of constant leaves.
Thresholds: the 99.9% quantile of the TV distance of iid multinomial samples of the same size
(tests/helpers/exact.py), never widened.
"""

import functools

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import special, stats

import pymc_treesamplers as pmt
from tests.helpers.exact import (
    basis_leaf_term,
    empirical,
    exact_log_evidence,
    exact_pair_posterior,
    exact_partition_posterior,
    partition_keys_from_values,
    quadrature_leaf_term,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.fits import forest_partition_keys
from tests.helpers.samplers import MAIN

BASIS = np.array([1.0, 0.5, 2.0, 0.0, -1.5, 1.0, 0.8])
PAIR_ROWS, PAIR_KEPT, PAIR_THIN = 5, 3000, 20


def _entries():
    return [pytest.param(s, id=s.name) for s in MAIN]


def _sample(s, codes, y, likelihood, m, draws, seed, basis=BASIS, route=None, chains=1, **bart):
    """pm.sample of ``likelihood(term, y)`` with ``term = BART(..., leaf_basis=basis)`` and the step of ``s``."""
    options = s.options | s.pm_sample[4] | ({} if route is None else {"route": route})
    with pm.Model():
        term = pmt.BART("mu", codes.astype(float), y, m=m, leaf_basis=basis,
                        **({"mu0": 0.0, "sigma_mu": 1.0} | bart))
        likelihood(term, y)
        return pm.sample(tune=100, draws=draws, chains=chains, cores=1, random_seed=seed, progressbar=False,
                         step=[s.step([term], **options)], compute_convergence_checks=False)


@functools.cache
def _gaussian_keys(name):
    s = next(s for s in MAIN if s.name == name)
    sigma, n_kept, thin, seed, _ = s.pm_sample
    codes, r, _ = tiny_data(0)
    idata = _sample(s, codes, r, lambda t, y: pm.Normal("y", t, sigma, observed=y), 1, n_kept * thin, seed)
    return partition_keys_from_values(idata.posterior["mu"].values[0][::thin])


def _gaussian_exact(sigma, basis=BASIS):
    """Partition posterior of ``r ~ N(basis * F, sigma^2)`` on the tiny data, m = 1."""
    codes, r, _ = tiny_data(0)
    w = np.full(len(r), 1 / sigma**2)
    return exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0, leaf_term=basis_leaf_term(r, w, basis, 0.0, 1.0))


def _sigma(name):
    return next(s for s in MAIN if s.name == name).pm_sample[0]


@pytest.mark.parametrize("s", _entries())
def test_gaussian_basis_matches_enumeration(s):
    """m = 1, sigma fixed: the partitions of the coefficient's draws (the model's variable) match enumeration."""
    keys = _gaussian_keys(s.name)
    exact = _gaussian_exact(_sigma(s.name))
    tv, threshold = tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_ignoring_the_basis_is_detected():
    """The same check fails against the posterior of constant leaves (the basis ignored), and against a basis
    with its zero moved to another row (it can fail)."""
    keys = _gaussian_keys("cgm")
    codes, r, _ = tiny_data(0)
    sigma = _sigma("cgm")
    ignored = exact_partition_posterior(codes, r, np.full(len(r), 1 / sigma**2), 0.95, 2.0, 0.0, 1.0)
    moved = _gaussian_exact(sigma, BASIS[[3, 1, 2, 0, 4, 5, 6]])
    for wrong in (ignored, moved):
        assert tv_distance(wrong, empirical(keys)) > tv_threshold(wrong, len(keys))


@functools.cache
def _pair_case(name):
    s = next(s for s in MAIN if s.name == name)
    codes, r, _ = tiny_data(0)
    codes, r, basis = codes[:PAIR_ROWS], r[:PAIR_ROWS], BASIS[:PAIR_ROWS]
    idata = _sample(s, codes, r, lambda t, y: pm.Normal("y", t, 1.0, observed=y), 2, PAIR_KEPT * PAIR_THIN, 1,
                    basis=basis)
    return codes, r, basis, forest_partition_keys(idata, "mu", codes, PAIR_THIN)


@pytest.mark.parametrize("s", _entries())
def test_gaussian_basis_pairs_match_enumeration(s):
    """m = 2, sigma = 1 (the backfitting with a basis): the pair of row partitions, read from the stored forests,
    follows the joint posterior of the sum of two trees whose leaves multiply the basis."""
    codes, r, basis, keys = _pair_case(s.name)
    exact = exact_pair_posterior(codes, r, np.ones(PAIR_ROWS), 0.95, 2.0, 0.0, 1.0, basis=basis)
    tv, threshold = tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


LOGIT_THIN = 10


@functools.cache
def _logit_keys(name):
    s = next(s for s in MAIN if s.name == name)
    codes, r, _ = tiny_data(0)
    y = (r > 0.25).astype(float)
    idata = _sample(s, codes, y, lambda t, y: pm.Bernoulli("y", logit_p=t, observed=y), 1, 2000 * LOGIT_THIN, 3,
                    route="expand")
    return partition_keys_from_values(idata.posterior["mu"].values[0][::LOGIT_THIN])


def _logit_exact(basis):
    codes, r, _ = tiny_data(0)
    y = (r > 0.25).astype(float)

    def loglik(rows, mu):
        return sum(special.log_expit(basis[i] * mu if y[i] else -basis[i] * mu) for i in rows)

    return exact_partition_posterior(codes, r, np.ones(7), 0.95, 2.0, 0.0, 1.0,
                                     leaf_term=quadrature_leaf_term(loglik, 0.0, 1.0))


@pytest.mark.parametrize("s", _entries())
def test_logit_basis_matches_enumeration(s):
    """m = 1, Bernoulli-logit on the corrected route (expansion and Metropolis-Hastings: the correction must
    read the basis too) against enumeration x quadrature over the coefficient."""
    keys = _logit_keys(s.name)
    exact = _logit_exact(BASIS)
    tv, threshold = tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_ignoring_the_basis_is_detected_with_two_trees_and_a_link():
    """The m = 2 and logit checks fail too when the basis is ignored (the constant leaves' posterior)."""
    codes, r, _, keys = _pair_case("cgm")
    ignored = exact_pair_posterior(codes, r, np.ones(PAIR_ROWS), 0.95, 2.0, 0.0, 1.0)
    assert tv_distance(ignored, empirical(keys)) > tv_threshold(ignored, len(keys))
    keys = _logit_keys("cgm")
    ignored = _logit_exact(np.ones(7))
    assert tv_distance(ignored, empirical(keys)) > tv_threshold(ignored, len(keys))


SCALE_SD, SCALE_THIN = 0.2, 10  # ESS of the partition about 1 in 6 draws (NUTS on s beside CGM)


def _scaled_exact(scale_sd):
    """Partition posterior of ``y ~ N(s * basis * F, 1)``, ``s ~ HalfNormal(scale_sd)`` (``None``: s = 1, the
    scale ignored): enumeration at each node of a Gauss-Legendre rule over s, weighted by prior x evidence."""
    codes, r, _ = tiny_data(0)
    w = np.ones(len(r))
    if scale_sd is None:
        return _gaussian_exact(1.0)
    x, q = np.polynomial.legendre.leggauss(40)
    mix, logs = [], []
    for lo, hi in ((0.0, 2 * scale_sd), (2 * scale_sd, 12 * scale_sd)):
        for node, weight in zip(lo + (x + 1) * (hi - lo) / 2, q * (hi - lo) / 2, strict=True):
            term = basis_leaf_term(r, w, node * BASIS, 0.0, 1.0)
            logs.append(np.log(weight) + stats.halfnorm.logpdf(node, scale=scale_sd)
                        + exact_log_evidence(codes, r, w, 0.95, 2.0, 0.0, 1.0, leaf_term=term))
            mix.append(_gaussian_exact(1.0, node * BASIS))
    weights = np.exp(np.array(logs) - special.logsumexp(logs))
    out = {}
    for wt, post in zip(weights, mix, strict=True):
        for k, v in post.items():
            out[k] = out.get(k, 0.0) + wt * v
    return out


def test_a_random_scale_on_the_term_is_exact():
    """The effect prior of docs/basis.md, ``s * term`` with ``s ~ HalfNormal`` sampled by NUTS beside the tree
    step (the route reads the term's coefficient ``s * w`` at the current point): m = 1 partitions against
    enumeration x quadrature over s. The same check fails with the scale ignored (s = 1)."""
    codes, r, _ = tiny_data(0)
    s = next(s for s in MAIN if s.name == "cgm")
    with pm.Model():
        term = pmt.BART("mu", codes.astype(float), r, m=1, leaf_basis=BASIS, mu0=0.0, sigma_mu=1.0)
        scale = pm.HalfNormal("s", SCALE_SD)
        pm.Normal("y", scale * term, 1.0, observed=r)
        idata = pm.sample(tune=200, draws=2000 * SCALE_THIN, chains=1, cores=1, random_seed=3, progressbar=False,
                          step=[s.step([term])], compute_convergence_checks=False)
    keys = partition_keys_from_values(idata.posterior["mu"].values[0][::SCALE_THIN])
    exact, ignored = _scaled_exact(SCALE_SD), _scaled_exact(None)
    tv, threshold = tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"
    assert tv_distance(ignored, empirical(keys)) > tv_threshold(ignored, len(keys))


def test_an_all_ones_basis_is_constant_leaves():
    """Same seed, same draws: ``leaf_basis=1`` under the constant leaves' prior (the defaults as well)."""
    codes, r, _ = tiny_data(0)
    s = next(s for s in MAIN if s.name == "cgm")
    runs = [_sample(s, codes, r, lambda t, y: pm.Normal("y", t, 0.5, observed=y), 3, 50, 5, basis=b, chains=2,
                    mu0=None, sigma_mu=None) for b in (None, np.ones(len(r)))]
    np.testing.assert_allclose(runs[0].posterior["mu"].values, runs[1].posterior["mu"].values, rtol=1e-12)
    assert np.array_equal(runs[0].sample_stats["mu_forest"].values, runs[1].sample_stats["mu_forest"].values)


def test_the_leaf_prior_defaults_are_the_coefficients():
    """sigma_mu over the basis's root mean square; mu0 over a constant basis, 0 for one that varies; on a link
    scale the same division (model/basis.py)."""
    X, y = np.arange(8.0)[:, None], np.arange(8.0)
    with pm.Model() as model:
        pmt.BART("plain", X, y, m=4)
        pmt.BART("treat", X, y, m=4, leaf_basis=np.tile([0.0, 1.0], 4))
        pmt.BART("half", X, y, m=4, leaf_basis=np.full(8, 0.5))
    plain_op, treat_op, half_op = (model[name].owner.op for name in ("plain", "treat", "half"))
    start = model.initial_point()  # each coefficient starts where its leaves centre it
    assert (start["treat"] == 0.0).all() and np.allclose(start["half"], 2.0 * y.mean())
    assert np.allclose(start["plain"], y.mean())
    assert treat_op.sigma_mu == pytest.approx(plain_op.sigma_mu * np.sqrt(2.0))
    assert treat_op.mu0 == 0.0
    assert half_op.mu0 == pytest.approx(2.0 * plain_op.mu0) and half_op.sigma_mu == pytest.approx(2 * plain_op.sigma_mu)
    mu0, sd = treat_op.leaf_prior(1.5, "logit")
    assert mu0 == 0.0 and sd == pytest.approx(3.0 / (0.75 * 2.0) * np.sqrt(2.0))
    assert half_op.leaf_prior(1.5, "logit")[0] == pytest.approx(1.5 / 4)


def test_the_model_variable_is_the_coefficient_and_predictions_take_the_new_basis():
    """The trace and pmt.predict hold the coefficient; pm.set_data on X and a pm.Data basis moves the term."""
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(60, 2))
    z = rng.integers(0, 2, 60).astype(float)
    y = np.sin(3 * X[:, 0]) + z * (1.0 + X[:, 1]) + rng.normal(0, 0.1, 60)
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        zd = pm.Data("z", z)
        mu = pmt.BART("mu", Xd, y, m=10)
        term = pmt.BART("tau", Xd, y, m=10, leaf_basis=zd)
        pm.Normal("y", mu + term, 0.1, observed=y, shape=Xd.shape[0])
        idata = pm.sample(tune=30, draws=20, chains=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    tau = idata.posterior["tau"].values
    np.testing.assert_allclose(pmt.predict(idata, X, "tau"), tau)
    X_new = rng.uniform(size=(5, 2))
    with model:
        pm.set_data({"X": X_new, "z": np.array([0.0, 1.0, 2.0, 1.0, 0.0])})
        pp = pmt.sample_posterior_predictive(idata, var_names=["y"], random_seed=3)
    coef = pmt.predict(idata, X_new, "tau")
    mean = pmt.predict(idata, X_new, "mu") + np.array([0.0, 1.0, 2.0, 1.0, 0.0]) * coef
    resid = pp.posterior_predictive["y"].values - mean
    assert resid.shape == (1, 20, 5) and abs(resid.std() - 0.1) < 0.03


@pytest.mark.parametrize(("basis", "error", "match"), [
    (np.ones(6), ValueError, r"one row per row of X, shape \(7,\)"),
    (np.array([1.0, np.nan, 1, 1, 1, 1, 1]), ValueError, "NaN or inf"),
    (np.zeros(7), ValueError, "zero in every row"),
    (np.array(list("abcdefg")), TypeError, "leaf_basis must be numeric"),
    (pt.vector("w"), TypeError, "not a symbolic tensor"),
])
def test_a_bad_basis_is_refused_by_name(basis, error, match):
    codes, r, _ = tiny_data(0)
    with pm.Model(), pytest.raises(error, match=match):
        pmt.BART("mu", codes.astype(float), r, m=1, leaf_basis=basis)


def test_the_warm_start_and_prior_predictive_take_the_basis():
    """A grow-from-root warm start sweeps the coefficient's pseudo-data too; prior predictive draws of the term are
    the basis times the coefficient's prior draws."""
    codes, r, _ = tiny_data(0)
    with pm.Model():
        term = pmt.BART("mu", codes.astype(float), r, m=3, leaf_basis=BASIS)
        pm.Deterministic("term", term)
        prior = pm.sample_prior_predictive(draws=5, random_seed=1).prior
    np.testing.assert_allclose(prior["term"].values, BASIS * prior["mu"].values)
    with pm.Model():
        term = pmt.BART("mu", codes.astype(float), r, m=3, leaf_basis=BASIS)
        pm.Normal("y", term, 0.5, observed=r)
        step = pmt.CGMStep([term], warm_start=5)
        idata = pm.sample(tune=10, draws=5, chains=1, step=[step], random_seed=2, progressbar=False,
                          compute_convergence_checks=False, discard_tuned_samples=False)
    assert idata.warmup_sample_stats["mu_warm"].values[0, :5].all()
    assert np.isfinite(idata.posterior["mu"].values).all()


def test_the_term_stands_for_its_coefficient_in_steps_and_pymc_bart_calls():
    """What BART returns with a basis (the term w * F) is accepted wherever a BART variable is: a step's vars,
    pymc-bart's call forms of the plots and diagnostics (which then read the coefficient's forests)."""
    import matplotlib

    matplotlib.use("Agg")
    codes, r, _ = tiny_data(0)
    X = codes.astype(float)
    # a name no other test's fit holds: pymc-bart's call forms find the fit among the session's InferenceData by
    # the variable's name and rows, and refuse to choose when other tests' fits of "mu" on these rows are alive
    with pm.Model():
        term = pmt.BART("effect", X, r, m=3, leaf_basis=BASIS)
        pm.Normal("y", term, 0.5, observed=r)
        step = pmt.CGMStep([term])
        assert step.var_name == "effect"
        idata = pm.sample(tune=5, draws=5, chains=1, step=[step], random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    shares, _ = pmt.get_variable_inclusion(idata, X)
    vi = pmt.compute_variable_importance(idata, term, X, samples=3)
    assert np.isclose(shares.sum(), 1.0) and vi["r2_mean"].shape == (2,)
    pmt.plot_pdp(term, X, r)
