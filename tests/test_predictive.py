"""``pm.set_data`` + ``pmt.sample_posterior_predictive``: BART values draw-matched at the new X."""

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(80, 2))
    y = 3 * X[:, 0] + rng.normal(0, 0.3, 80)
    with pm.Model(coords={"obs": np.arange(80)}) as model:
        Xd = pm.Data("X", X, dims=("obs", "col"))
        mu = pmt.BART("mu", Xd, y, m=10, dims="obs")
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=y, dims="obs")
        idata = pm.sample(
            tune=50,
            draws=60,
            chains=2,
            cores=1,
            random_seed=4,
            progressbar=False,
            step=[pmt.CGMStep([mu])],
            compute_convergence_checks=False,
        )
    path = tmp_path_factory.mktemp("fit") / "fit.nc"
    idata.to_netcdf(path)
    return model, X, az.from_netcdf(path)


def test_new_X_predictions_are_draw_matched(fitted):
    model, _, idata = fitted
    X_new = np.random.default_rng(1).uniform(size=(500, 2))
    with model:
        pm.set_data({"X": X_new}, coords={"obs": np.arange(1000, 1500)})
        pp = pmt.sample_posterior_predictive(
            idata, var_names=["mu", "y"], predictions=True, random_seed=2, progressbar=False
        )
    mu_new = pp.predictions["mu"].values
    np.testing.assert_array_equal(mu_new, pmt.predict(idata, X_new, "mu"))
    assert pp.predictions["y"].shape == (2, 60, 500)
    assert list(pp.predictions["y"].coords["obs"].values[:2]) == [1000, 1001]
    # y is drawn around the same draw's mu with the same draw's sigma
    z = (pp.predictions["y"].values - mu_new) / idata.posterior["sigma"].values[..., None]
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1.0) < 0.03


def test_in_sample_reproduces_posterior(fitted):
    model, X, idata = fitted
    with model:
        pm.set_data({"X": X}, coords={"obs": np.arange(80)})
        pp = pmt.sample_posterior_predictive(idata, var_names=["mu"], progressbar=False)
    np.testing.assert_array_equal(pp.posterior_predictive["mu"].values, idata.posterior["mu"].values)


def test_bart_in_sample_vars_is_refused(fitted):
    model, _, idata = fitted
    with model, pytest.raises(ValueError, match="BART variables"):
        pmt.sample_posterior_predictive(idata, sample_vars=["mu"])


def test_missing_forest_is_a_clear_error(fitted):
    model, _, idata = fitted
    bare = idata.copy()
    bare["sample_stats"] = bare["sample_stats"].to_dataset().drop_vars("mu_forest")
    with model, pytest.raises(ValueError, match="mu_forest"):
        pmt.sample_posterior_predictive(bare)


def test_plain_pymc_redraw_of_bart_is_refused_with_the_right_route(fitted):
    """pymc-bart's route (``sample_vars=["mu"]`` after ``pm.set_data``) would draw trees from the prior."""
    model, _, idata = fitted
    X_new = np.random.default_rng(1).uniform(size=(80, 2))
    with model:
        pm.set_data({"X": X_new}, coords={"obs": np.arange(80)})
        with pytest.raises(ValueError, match=r"pmt\.sample_posterior_predictive.*pmt\.predict"):
            pm.sample_posterior_predictive(idata, var_names=["mu"], sample_vars=["mu"], progressbar=False)


def test_prior_predictive_still_draws_from_the_tree_prior(fitted):
    model, X, _ = fitted
    with model:
        pm.set_data({"X": X}, coords={"obs": np.arange(80)})
        prior = pm.sample_prior_predictive(draws=20, var_names=["mu"], random_seed=3)
    mu = prior.prior["mu"].values
    assert mu.shape == (1, 20, 80) and np.isfinite(mu).all()
    assert mu.std(axis=1).mean() > 0  # fresh trees per draw
