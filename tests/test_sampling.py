"""The step methods inside ``pm.sample``: exactness end to end, seeds, chains, composition."""

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from exact import (
    empirical,
    exact_partition_posterior,
    exact_partition_prior,
    partition_key,
    tiny_data,
    tv_distance,
    tv_threshold,
)

import pymc_treesamplers as pmt

STEPS = [pmt.GrowPruneStep, pmt.CGMStep]


def _keys_from_draws(mu_draws):
    """Row partition of each draw: rows share a leaf iff they share the (continuous) value."""
    return [partition_key(np.unique(row, return_inverse=True)[1]) for row in mu_draws]


@pytest.mark.parametrize(
    ("step_cls", "sigma", "thin"),
    [(pmt.GrowPruneStep, 2.0, 15), (pmt.CGMStep, 1.0, 4)],
    ids=["GrowPruneStep", "CGMStep"],
)
def test_pm_sample_matches_enumeration(step_cls, sigma, thin):
    """m = 1, sigma fixed: the partition histogram of pm.sample's draws matches enumeration.

    2000 kept draws; thinning chosen from the kernel-level autocorrelation of each sampler
    (grow/prune mixes slowly, hence a weaker likelihood and more thinning for it).
    """
    codes, r, _ = tiny_data(0)
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), r, m=1, mu0=0.0, sigma_mu=1.0)
        pm.Normal("y", mu, sigma, observed=r)
        idata = pm.sample(tune=200, draws=2000 * thin, chains=1, cores=1, random_seed=3, progressbar=False,
                          step=[step_cls([mu])], compute_convergence_checks=False)
    draws = idata.posterior["mu"].values[0][::thin]
    exact = exact_partition_posterior(codes, r, np.full(len(r), 1 / sigma**2), 0.95, 2.0, 0.0, 1.0)
    keys = _keys_from_draws(draws)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


def test_pm_sample_without_likelihood_recovers_prior():
    codes, r, _ = tiny_data(0)
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), r, m=1, mu0=0.0, sigma_mu=1.0)
        idata = pm.sample(tune=100, draws=6000, chains=1, random_seed=4, progressbar=False,
                          step=[pmt.CGMStep([mu])], compute_convergence_checks=False)
    keys = _keys_from_draws(idata.posterior["mu"].values[0][::3])
    exact = exact_partition_prior(codes, 0.95, 2.0)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


def _friedman(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 5))
    f = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4]
    return X, f, f + rng.normal(size=n)


def _fit(step_cls=None, seed=1, chains=2, cores=1, draws=50, tune=50, n=100, m=10):
    X, _, y = _friedman(n)
    with pm.Model() as model:
        mu = pmt.BART("mu", X, y, m=m)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu, sigma, observed=y)
        step = None if step_cls is None else [step_cls([mu])]
        idata = pm.sample(tune=tune, draws=draws, chains=chains, cores=cores, random_seed=seed, step=step,
                          progressbar=False, compute_convergence_checks=False)
    return model, idata


@pytest.mark.parametrize("step_cls", STEPS, ids=lambda c: c.__name__)
def test_same_seed_same_draws_and_chains_differ(step_cls):
    _, a = _fit(step_cls, seed=7)
    _, b = _fit(step_cls, seed=7)
    _, c = _fit(step_cls, seed=8)
    mu_a = a.posterior["mu"].values
    np.testing.assert_array_equal(mu_a, b.posterior["mu"].values)
    np.testing.assert_array_equal(a.posterior["sigma"].values, b.posterior["sigma"].values)
    assert not np.array_equal(mu_a[0], mu_a[1])
    assert not np.array_equal(mu_a, c.posterior["mu"].values)


def test_automatic_assignment_stats_and_parallel_chains():
    model, idata = _fit(None, cores=2)
    stats = idata.sample_stats
    for name in ("tree_depth", "n_leaves", "accept"):  # "tune" is consumed by PyMC itself
        assert stats[name].shape == (2, 50)
    assert stats["split_counts"].shape == (2, 50, 5)
    assert (stats["split_counts"].values.sum(-1) > 0).any()
    assert stats["mu_forest"].shape[:2] == (2, 50)
    assert np.isfinite(idata.posterior["mu"].values).all()
    assert not np.array_equal(idata.posterior["mu"].values[0], idata.posterior["mu"].values[1])


def test_predict_reproduces_draws_after_netcdf(tmp_path):
    _, idata = _fit(pmt.CGMStep, cores=2)
    X, _, _ = _friedman(100)
    path = tmp_path / "fit.nc"
    idata.to_netcdf(path)
    import arviz as az

    again = az.from_netcdf(path)
    pred = pmt.predict(again, X, "mu")
    np.testing.assert_array_equal(pred, idata.posterior["mu"].values)
    new = pmt.predict(again, np.random.default_rng(9).uniform(size=(17, 5)), "mu")
    assert new.shape == (2, 50, 17) and np.isfinite(new).all()


def test_predict_rejects_bad_input():
    _, idata = _fit(pmt.GrowPruneStep, chains=1, draws=5, tune=5)
    with pytest.raises(ValueError, match="columns"):
        pmt.predict(idata, np.zeros((3, 4)), "mu")
    with pytest.raises(ValueError, match="inf"):
        pmt.predict(idata, np.full((3, 5), np.inf), "mu")
    with pytest.raises(ValueError, match="NaN"):
        pmt.predict(idata, np.full((3, 5), np.nan), "mu")
    with pytest.raises(TypeError, match="numeric"):
        pmt.predict(idata, np.array([["a"] * 5]), "mu")
    with pytest.raises(ValueError, match="no encoded forest"):
        pmt.predict(idata, np.zeros((3, 5)), "nu")


def test_other_terms_enter_the_residual():
    """y = f(X) + 3 z: NUTS moves the coefficient, the BART sees y - 3 z (and sigma)."""
    X, f, _ = _friedman(300, seed=2)
    rng = np.random.default_rng(5)
    z = rng.normal(size=300)
    y = f + 3.0 * z + rng.normal(0, 0.5, size=300)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=30)
        coef = pm.Normal("coef", 0, 10)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu + coef * z, sigma, observed=y)
        idata = pm.sample(tune=300, draws=300, chains=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    assert abs(idata.posterior["coef"].mean().item() - 3.0) < 0.15
    assert idata.posterior["sigma"].mean().item() < 1.2


def test_two_barts_in_one_model():
    X, f, y = _friedman(120, seed=3)
    with pm.Model():
        a = pmt.BART("a", X[:, :2], y, m=5)
        b = pmt.BART("b", X[:, 2:], y, m=5)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", a + b, sigma, observed=y)
        idata = pm.sample(tune=30, draws=30, chains=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    assert "a_forest" in idata.sample_stats and "b_forest" in idata.sample_stats
    pred = pmt.predict(idata, X[:, :2], "a") + pmt.predict(idata, X[:, 2:], "b")
    np.testing.assert_allclose(pred, idata.posterior["a"].values + idata.posterior["b"].values)


def test_step_is_picklable_and_rejects_unknown_kwargs():
    X, _, y = _friedman(50)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=3)
        pm.Normal("y", mu, 1.0, observed=y)
        step = pmt.CGMStep([mu])
        clone = cloudpickle.loads(cloudpickle.dumps(step))  # how PyMC ships steps to workers
        assert clone.m == 3 and clone.var_name == "mu"
        with pytest.raises(TypeError, match="num_particles"):
            pmt.GrowPruneStep([mu], num_particles=3)
        with pytest.raises(ValueError, match="sum to 1"):
            pmt.CGMStep([mu], move_probs=(0.5, 0.5, 0.5, 0.0))
        with pytest.raises(ValueError, match="grow and prune"):
            pmt.CGMStep([mu], move_probs=(0.0, 0.5, 0.5, 0.0))


def test_non_gaussian_likelihood_is_refused_before_sampling():
    X, _, y = _friedman(50)
    with pm.Model():
        mu = pmt.BART("mu", X, (y > y.mean()).astype(float), m=3)
        pm.Bernoulli("y", logit_p=mu, observed=(y > y.mean()).astype(int))
        with pytest.raises(NotImplementedError, match="not Gaussian"):
            pmt.CGMStep([mu])


def test_step_refuses_non_bart_variables():
    with pm.Model():
        s = pm.HalfNormal("s", 1.0)
        with pytest.raises(TypeError, match="BART"):
            pmt.CGMStep([s])
