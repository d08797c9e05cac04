"""What a pymc-bart user does first, with this package: the scenarios of pymc-bart's own test suite
(variable inclusion, pm.Data covariates and predictions, several outputs, the support point, a
categorical softmax model with pymc-bart's keywords), written for pmt's API where the names differ
(docs/migrating.md). Missing values in X are refused for now (issue 16)."""

import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt

RUN = {"tune": 100, "draws": 100, "chains": 2, "cores": 1, "random_seed": 3415, "progressbar": False,
       "compute_convergence_checks": False}


class ContinuousSplitRule:  # pymc-bart's rule class, recognised by its name
    pass


def test_the_informative_covariate_has_the_largest_inclusion():
    rng = np.random.default_rng(0)
    X = rng.normal(0, 1, size=(250, 3))
    Y = rng.normal(0, 1, size=250)
    X[:, 0] = rng.normal(Y, 0.1)
    with pm.Model():
        mu = pmt.BART("mu", X, Y, m=10, response="constant")
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu, sigma, observed=Y)
        idata = pm.sample(**RUN)
    inclusion = pmt.get_variable_inclusion(idata, "mu")["inclusion"]
    assert inclusion["x0"] > inclusion[["x1", "x2"]].sum()
    assert inclusion.sum() == pytest.approx(1.0)


def test_missing_values_fit_and_predict():
    """pymc-bart takes NaN in X; here too (PyMC's pm.Data refuses NaN, so X is an array and new rows go
    through pmt.predict)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 2))
    Y = X[:, 0] + rng.normal(0, 0.1, size=50)
    X[10:20, 0] = np.nan
    with pm.Model():
        mu = pmt.BART("mu", X, Y, m=10)
        pm.Normal("y", mu, 0.5, observed=Y, shape=mu.shape)
        idata = pm.sample(**RUN)
    new = rng.normal(size=(7, 2))
    new[:3, 1] = np.nan
    assert np.isfinite(pmt.predict(idata, new, "mu")).all()


def test_pm_data_covariates_and_new_rows():
    rng = np.random.default_rng(2)
    X = rng.normal(0, 1, size=(50, 2))
    Y = rng.normal(0, 1, size=50)
    with pm.Model():
        data_X = pm.Data("data_X", X)
        mu = pmt.BART("mu", data_X, Y, m=2)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu, sigma, observed=Y, shape=mu.shape)
        idata = pm.sample(**RUN)
        ppc = pm.sample_posterior_predictive(idata, progressbar=False)
        pm.set_data({"data_X": X[:3]})
        ppc2 = pmt.sample_posterior_predictive(idata, progressbar=False)
    assert ppc.posterior_predictive["y"].shape == (2, 100, 50)
    assert ppc2.posterior_predictive["y"].shape == (2, 100, 3)


def test_two_outputs_with_shape():
    rng = np.random.default_rng(3)
    X = rng.normal(0, 1, size=(250, 3))
    Y = rng.normal(0, 1, size=250)
    with pm.Model() as model:
        w = pmt.BART("w", X, Y, m=2, response="constant", shape=(2, 250))
        pm.Normal("y", w[0], pm.math.abs(w[1]), observed=Y)
        idata = pm.sample(**RUN)
    assert model.initial_point()["w"].shape == (2, 250)
    assert idata.posterior.coords["w_dim_0"].size == 2
    assert idata.posterior.coords["w_dim_1"].size == 250


def test_support_point_is_the_mean_of_y():
    with pm.Model() as model:
        pmt.BART("x", np.zeros((50, 2)), np.zeros(50))
    np.testing.assert_array_equal(model.initial_point()["x"], np.zeros(50))


def test_categorical_softmax_with_pymc_bart_keywords():
    rng = np.random.default_rng(4)
    Y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    X = np.concatenate([Y[:, None], rng.integers(0, 6, size=(9, 4))], axis=1)
    with pm.Model():
        lo = pmt.BART("logodds", X, Y, m=2, shape=(3, 9), split_rules=[ContinuousSplitRule] * 5,
                      separate_trees=True)
        pm.Categorical("y", p=pm.math.softmax(lo.T, axis=-1), observed=Y)
        idata = pm.sample(**(RUN | {"tune": 300, "draws": 300}))
        idata = pm.sample_posterior_predictive(idata, predictions=True, extend_inferencedata=True,
                                               progressbar=False)
    # the right category is the most frequent predicted one for every row
    pred = idata.predictions["y"].values.reshape(-1, 9)
    mode = np.array([np.bincount(col, minlength=3).argmax() for col in pred.T])
    np.testing.assert_array_equal(mode, Y)
