"""``sigma_every``: the noise scale updated by the tree step between its trees, against the exact joint posterior.

Exact answer for m = 2 on five rows of the tiny data: every pair of row partitions (tests/helpers/exact.py gives
each partition's prior) and, for each pair, the marginal likelihood with both trees' leaves integrated out
(``y ~ N(0, sigma^2 I + sigma_mu^2 (A1 + A2))``) integrated over the scale by quadrature. With ``sigma_every=1``
the scale is updated between the two trees and after the second, so each tree's update sees the scale the other
tree's update left. The chain must match the pair distribution (TV below the iid multinomial 99.9% quantile, at a
thinning where the draws are close to independent) and the posterior mean of the scale (within 4 Monte Carlo
standard errors). A scan that leaves the weights at the sweep's first scale fails the same check.
"""

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_treesamplers as pmt
from pymc_treesamplers.steps import scale_in_sweep
from pymc_treesamplers.steps.scale import NormalScaleGibbs
from tests.helpers.exact import empirical, exact_partition_prior, tiny_data, tv_distance, tv_threshold
from tests.helpers.fits import forest_partition_keys

ROWS = 5
CODES, Y, _ = tiny_data(0)
CODES, Y = CODES[:ROWS], Y[:ROWS]
A, B = 3.0, 0.5  # InverseGamma prior of sigma^2
KEPT, THIN = 3000, 20


def _exact(log_prior_scale, to_s2):
    """Posterior of the partition pairs and the posterior mean of the scale variable, by enumeration x quadrature
    on the grid ``t`` (the log of the scale variable; ``log_prior_scale`` includes the Jacobian)."""
    grid = np.linspace(-7.0, 4.0, 2201)
    log_prior, s2 = log_prior_scale(grid), to_s2(grid)
    prior = exact_partition_prior(CODES, 0.95, 2.0)
    same = {k: np.equal.outer(np.array(k), np.array(k)).astype(float) for k in prior}
    log_post, mean = {}, {}
    for k1, p1 in prior.items():
        for k2, p2 in prior.items():
            lam, vec = np.linalg.eigh(same[k1] + same[k2])  # sigma_mu = 1
            proj = (vec.T @ Y) ** 2
            var = s2[:, None] + lam[None, :]
            vals = log_prior - 0.5 * np.log(2 * np.pi * var).sum(1) - 0.5 * (proj / var).sum(1)
            top = vals.max()
            wts = np.exp(vals - top)
            log_post[(k1, k2)] = math.log(p1) + math.log(p2) + top + math.log(wts.sum())
            mean[(k1, k2)] = float((wts * np.exp(grid)).sum() / wts.sum())
    top = max(log_post.values())
    z = sum(math.exp(v - top) for v in log_post.values())
    probs = {k: math.exp(v - top) / z for k, v in log_post.items()}
    return probs, sum(probs[k] * mean[k] for k in probs)


def _halfnormal():
    s = pm.HalfNormal("sigma", 1.0)
    return s, s


def _inverse_gamma():
    s2 = pm.InverseGamma("sigma2", A, B)
    return s2, pm.math.sqrt(s2)


def _uniform():  # an interval transform: the independence ratio's Jacobian is not the log transform's
    s = pm.Uniform("sigma_u", 0.0, U)
    return s, s


def _exponential_variance():  # the variable is sigma^2 but the prior is not conjugate
    s2 = pm.Exponential("sigma2_e", 1.0)
    return s2, pm.math.sqrt(s2)


U = 2.0
EXACT = {"sigma": lambda: _exact(lambda t: stats.halfnorm.logpdf(np.exp(t)) + t, lambda t: np.exp(2 * t)),
         "sigma2": lambda: _exact(lambda t: stats.invgamma.logpdf(np.exp(t), A, scale=B) + t, np.exp),
         "sigma_u": lambda: _exact(lambda t: np.where(np.exp(t) < U, t - np.log(U), -np.inf),
                                   lambda t: np.exp(2 * t)),
         "sigma2_e": lambda: _exact(lambda t: stats.expon.logpdf(np.exp(t)) + t, np.exp)}


def _run(make_scale, var, seed, sampler=pmt.CGMStep, every=1, **options):
    with pm.Model():
        mu = pmt.BART("mu", CODES.astype(float), Y, m=2, mu0=0.0, sigma_mu=1.0)
        _, sigma = make_scale()
        pm.Normal("y", mu, sigma, observed=Y)
        step = sampler([mu], sigma_every=every, **options)
        idata = pm.sample(tune=500, draws=KEPT * THIN, chains=1, step=[step], random_seed=seed, progressbar=False,
                          compute_convergence_checks=False)
    return step, forest_partition_keys(idata, "mu", CODES, THIN), idata.posterior[var]


def _check(probs, exact_mean, keys, draws):
    tv = tv_distance(probs, empirical(keys))
    assert tv < tv_threshold(probs, len(keys)), tv
    mcse = float(az.mcse(draws))
    assert abs(float(draws.mean()) - exact_mean) < 4 * mcse, (float(draws.mean()), exact_mean, mcse)


@pytest.mark.parametrize(("make_scale", "var"), [(_halfnormal, "sigma"), (_inverse_gamma, "sigma2"),
                                                 (_uniform, "sigma_u"), (_exponential_variance, "sigma2_e")],
                         ids=["independence-halfnormal", "conjugate-inverse-gamma", "independence-uniform",
                              "independence-exponential-variance"])
def test_scale_between_the_trees_matches_pair_enumeration(make_scale, var):
    probs, mean = EXACT[var]()
    step, keys, draws = _run(make_scale, var, seed=3)
    assert step.scale.groups == [(0, 1), (1, 2)]
    assert step.scale.updater.conjugate == (var == "sigma2")
    if var != "sigma2":  # the independence update ran, not the slice it falls back to (sigma, or sigma^2)
        assert step.scale.updater._log_variance_terms()[2] == (2 if var == "sigma2_e" else 1)
    _check(probs, mean, keys, draws)


def test_with_the_other_samplers_matches_pair_enumeration():
    """Grow/prune with the twig moves: the scan lives in the driver, so every sampler's sweep takes it."""
    probs, mean = EXACT["sigma"]()
    _, keys, draws = _run(_halfnormal, "sigma", seed=4, sampler=pmt.GrowPruneStep, twigs=0.2, aimed_twigs=0.2)
    _check(probs, mean, keys, draws)


def test_independence_update_without_the_prior_ratio_fails(monkeypatch):
    """The deliberately wrong ratio: every proposal from the likelihood's shape accepted, so the prior of log
    sigma^2 drops out (a flat prior in its place)."""
    probs, mean = EXACT["sigma"]()
    monkeypatch.setattr(NormalScaleGibbs, "log_variance_prior", lambda self, x: 0.0)
    real = NormalScaleGibbs._compile_log_variance_terms

    def flat(self):
        of_x, from_variance, power = real(self)
        return of_x, lambda v: (from_variance(v)[0], 0.0), power

    monkeypatch.setattr(NormalScaleGibbs, "_compile_log_variance_terms", flat)
    _, keys, draws = _run(_halfnormal, "sigma", seed=3)
    with pytest.raises(AssertionError):
        _check(probs, mean, keys, draws)


def test_weights_left_at_the_first_scale_fail(monkeypatch):
    """The deliberately wrong scan: sigma is drawn between the trees but the second tree's update still weighs the
    rows by the sigma the sweep started with."""
    probs, mean = EXACT["sigma"]()

    def stale(self, rng, pseudo):
        rss = self.sigma**2 * self._weighted_sum(pseudo) * (self.x_start_sigma / self.sigma) ** 2
        x = self.updater.update(rng, self.x, self.n, rss)
        self.x, self.sigma = x, self.updater.scale_of(x)

    def start(self, x, tune):
        self.x, self.sigma = x, self.updater.scale_of(x)
        self.x_start_sigma = self.sigma
        self.updater.tune = tune

    monkeypatch.setattr(scale_in_sweep.ScaleInSweep, "after", stale)
    monkeypatch.setattr(scale_in_sweep.ScaleInSweep, "start", start)
    _, keys, draws = _run(_halfnormal, "sigma", seed=3, every=1)
    with pytest.raises(AssertionError):
        _check(probs, mean, keys, draws)


def test_the_step_owns_the_scale_and_refuses_what_it_cannot_update():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 2)), rng.normal(size=30)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=10)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=y)
        step = pmt.CGMStep([mu], sigma_every=4)
        assert [v.name for v in step.vars] == ["mu", "sigma_log__"]
        assert step.scale.groups == [(0, 4), (4, 8), (8, 10)]
        assert pmt.CGMStep([mu]).scale is None  # off by default
        with pytest.raises(TypeError, match="sigma_every must be an integer"):
            pmt.CGMStep([mu], sigma_every=2.5)
        with pytest.raises(ValueError, match="sigma_every must be >= 0"):
            pmt.CGMStep([mu], sigma_every=-1)
    with pm.Model():
        mu = pmt.BART("mu", X, (y > 0).astype(float), m=10)
        pm.Bernoulli("y", logit_p=mu, observed=(y > 0).astype(float))
        with pytest.raises(ValueError, match="sigma_every=2: the likelihood is not Gaussian"):
            pmt.CGMStep([mu], sigma_every=2)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=10)
        tau = pm.HalfNormal("tau", 1.0)
        sigma = pm.HalfNormal("sigma", tau)
        pm.Normal("y", mu, sigma, observed=y)
        with pytest.raises(ValueError, match="random parents"):
            pmt.CGMStep([mu], sigma_every=2)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=10)
        pm.Normal("y", mu, 1.0, observed=y)
        with pytest.raises(ValueError, match="not on one free variable"):
            pmt.CGMStep([mu], sigma_every=2)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=10, shape=(2, 30))
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=np.stack([y, y]))
        with pytest.raises(ValueError, match="one output and constant leaves"):
            pmt.CGMStep([mu], sigma_every=2)


def test_a_sampled_fit_moves_the_scale_in_the_trace():
    """pm.sample with the step alone: no other step is assigned to the scale, which the trace holds."""
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(80, 2))
    y = 2 * X[:, 0] + rng.normal(0, 0.3, 80)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=10)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=y)
        idata = pm.sample(tune=100, draws=200, chains=2, cores=1, step=[pmt.CGMStep([mu], sigma_every=3)],
                          random_seed=2, progressbar=False, compute_convergence_checks=False)
    draws = idata.posterior["sigma"].values
    assert np.unique(draws).size > 100
    assert 0.2 < float(draws[:, 100:].mean()) < 0.5
