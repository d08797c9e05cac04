"""pymc-bart's gallery models with only the import changed (``import pymc_treesamplers as pmb``), at
small size, on the shipped data: they build, sample with PyMC's automatic step assignment and fit.
The hawks data of the gallery's categorical model are not shipped: scikit-learn's bundled iris
stands in for them.
"""

import logging

import numpy as np
import pymc as pm
import pytest
from scipy import special

import pymc_treesamplers as pmb
from pymc_treesamplers.datasets import load_bikes, load_ionosphere, load_marketing

RUN = {"tune": 150, "draws": 150, "chains": 1, "random_seed": 1, "progressbar": False,
       "compute_convergence_checks": False}


@pytest.fixture(autouse=True)
def _no_frozen_chain_warning(caplog):
    """The warning of a tree step whose chain cannot move (PyMC logs it as it logs divergences) stays
    silent on every gallery model."""
    caplog.set_level(logging.WARNING, logger="pymc")
    yield
    frozen = [r.getMessage() for r in caplog.records if "The tree step of" in r.getMessage()]
    assert not frozen, frozen


def test_bikes_negative_binomial():
    X, Y = load_bikes()
    with pm.Model():
        α = pm.Exponential("α", 1)
        μ = pmb.BART("μ", X, np.log(Y), m=50)
        pm.NegativeBinomial("y", mu=pm.math.exp(μ), alpha=α, observed=Y)
        idata = pm.sample(**RUN)
    mean = np.exp(idata.posterior["μ"]).mean(("chain", "draw")).values
    assert np.corrcoef(mean, Y)[0, 1] > 0.8
    assert 0.3 < float(idata.sample_stats["μ_mh_accept"].mean()) <= 1.0


def test_bikes_poisson():
    X, Y = load_bikes()
    with pm.Model():
        μ = pmb.BART("μ", X, np.log(Y), m=50)
        pm.Poisson("y", mu=pm.math.exp(μ), observed=Y)
        idata = pm.sample(**RUN)
    mean = np.exp(idata.posterior["μ"]).mean(("chain", "draw")).values
    assert np.corrcoef(mean, Y)[0, 1] > 0.9
    # the gallery's utilities, as it calls them
    axes = pmb.plot_pdp(μ, X=X, Y=Y, grid=(2, 2), func=np.exp, var_discrete=[3])
    assert [ax.get_xlabel() for ax in axes] == list(X.columns)
    assert len(pmb.plot_ice(μ, X=X, Y=Y, grid=(2, 2), func=np.exp)) == X.shape[1]
    vi_results = pmb.compute_variable_importance(idata, μ, X)
    pmb.plot_variable_importance(vi_results)
    pmb.plot_scatter_submodels(vi_results, grid=(2, 2))
    assert vi_results["preds"].shape == (X.shape[1], 50, len(Y))


def test_ionosphere_bernoulli():
    X, Y = load_ionosphere()
    with pm.Model():
        μ = pmb.BART("μ", X, Y, m=50)
        θ = pm.Deterministic("θ", pm.math.sigmoid(μ))
        pm.Bernoulli("y", p=θ, observed=Y)
        idata = pm.sample(**RUN)
    p = special.expit(idata.posterior["μ"]).mean(("chain", "draw")).values
    assert ((p > 0.5) == (Y > 0.5)).mean() > 0.9


def test_marketing_gamma_with_bart_in_mean_and_scale():
    X, Y = load_marketing()
    X = X[["youtube"]].to_numpy()
    n_obs = len(Y)
    with pm.Model():
        w = pmb.BART("w", X=X, Y=np.log(Y), m=50, shape=(2, n_obs))
        pm.Gamma("y", mu=pm.math.exp(w[0]), sigma=pm.math.exp(w[1]), observed=Y)
        idata = pm.sample(**RUN)
    w_mean = idata.posterior["w"].mean(("chain", "draw")).values
    assert np.corrcoef(np.exp(w_mean[0]), Y)[0, 1] > 0.75
    # the gallery's finding: the spread of sales grows with the budget
    assert np.corrcoef(w_mean[1], X[:, 0])[0, 1] > 0.5
    assert len(pmb.plot_pdp(w, X=X, Y=Y, func=np.exp)) == 2  # one panel per output
    assert pmb.compute_variable_importance(idata, w, X, samples=20)["preds"].shape == (1, 20, n_obs, 2)


def test_iris_categorical_softmax():
    from sklearn.datasets import load_iris

    iris = load_iris(as_frame=True)
    x_0, y_0 = iris.data, iris.target.to_numpy()
    coords = {"n_obs": np.arange(len(x_0)), "species": iris.target_names}
    with pm.Model(coords=coords):
        μ = pmb.BART("μ", x_0, y_0, m=50, dims=["species", "n_obs"])
        θ = pm.Deterministic("θ", pm.math.softmax(μ, axis=0))
        pm.Categorical("y", p=θ.T, observed=y_0)
        idata = pm.sample(**RUN)
    assert idata.posterior["μ"].dims[2:] == ("species", "n_obs")
    p = idata.posterior["θ"].mean(("chain", "draw")).values
    assert (p.argmax(axis=0) == y_0).mean() > 0.9


def test_quantile_regression_three_quantiles_in_one_bart():
    """The gallery's quantile model on simulated data (its BMI data are not shipped): three quantiles,
    one output each, under an AsymmetricLaplace with observations stacked per quantile."""
    rng = np.random.default_rng(3)
    n = 300
    X = rng.uniform(0, 10, size=(n, 1))
    y = np.sin(X[:, 0] / 2) + rng.normal(0, 0.2 + 0.08 * X[:, 0])
    y_stack = np.stack([y] * 3)
    quantiles = np.array([[0.1, 0.5, 0.9]]).T
    with pm.Model():
        μ = pmb.BART("μ", X, y, m=30, shape=(3, n))
        σ = pm.HalfNormal("σ", 5)
        pm.AsymmetricLaplace("obs", mu=μ, b=σ, q=quantiles, observed=y_stack)
        idata = pm.sample(**RUN)
    fit = idata.posterior["μ"].mean(("chain", "draw")).values
    below = (y[None, :] <= fit).mean(axis=1)
    np.testing.assert_allclose(below, quantiles[:, 0], atol=0.07)
    assert ((fit[0] < fit[1]) & (fit[1] < fit[2])).mean() > 0.95
