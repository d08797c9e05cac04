"""The BART random variable: inputs, defaults, errors, model integration."""

import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers.model.bart import bart_spec
from pymc_treesamplers.model.binning import bin_columns

X = np.random.default_rng(0).uniform(size=(40, 3))
Y = X[:, 0] * 4 + 1


def test_chipman_defaults_and_overrides():
    _, _, kw = bart_spec(X, Y, m=50, k=2.0)
    assert kw["mu0"] == pytest.approx(Y.mean() / 50)
    assert kw["sigma_mu"] == pytest.approx((Y.max() - Y.min()) / (2 * 2.0 * np.sqrt(50)))
    _, _, kw = bart_spec(X, Y, mu0=0.0, sigma_mu=0.3)
    assert (kw["mu0"], kw["sigma_mu"]) == (0.0, 0.3)


def test_model_logp_finite_and_support_point():
    with pm.Model(coords={"obs": np.arange(40)}) as model:
        mu = pmt.BART("mu", pd.DataFrame(X, columns=list("abc")), Y, m=5, dims="obs")
        pm.Normal("y", mu, 1.0, observed=Y, dims="obs")
    ip = model.initial_point()
    np.testing.assert_allclose(ip["mu"], Y.mean())
    assert np.isfinite(model.compile_logp()(ip))
    assert pm.draw(mu, random_seed=1).shape == (40,)


def test_pm_data_covariates():
    with pm.Model():
        Xd = pm.Data("X", X)
        mu = pmt.BART("mu", Xd, Y, m=4)
        pm.Normal("y", mu, 1.0, observed=Y)
        idata = pm.sample(tune=5, draws=5, chains=1, random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    assert idata.posterior["mu"].shape == (1, 5, 40)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(Y=np.r_[Y[:-1], np.nan]), ValueError, "Y contains NaN or inf"),
        (dict(X=np.r_[X[:-1], [[np.inf, 0, 0]]]), ValueError, "X contains inf"),
        (dict(X=np.c_[X[:, :2], np.full(len(X), np.nan)]), ValueError, r"X column\(s\) \[2\] are entirely missing"),
        (dict(X=X[:30]), ValueError, "rows"),
        (dict(m=0), ValueError, "m \\(number of trees\\)"),
        (dict(m=2.5), ValueError, "m \\(number of trees\\)"),
        (dict(alpha=1.0), ValueError, "alpha"),
        (dict(alpha=0.0), ValueError, "alpha"),
        (dict(beta=-1.0), ValueError, "beta"),
        (dict(split_prior=[1.0, 1.0]), ValueError, "split_prior"),
        (dict(split_prior=[1.0, -1.0, 1.0]), ValueError, "split_prior"),
        (dict(X=pd.DataFrame({"a": ["x"] * 40, "b": np.ones(40)})), ValueError,
         "categorical column\\(s\\) \\['a'\\] have a single category"),
        (dict(X=pd.DataFrame({"a": pd.to_datetime(["2020-01-01"] * 40), "b": np.ones(40)})), TypeError,
         "column 'a' has dtype datetime64"),
        (dict(sigma_mu=0.0), ValueError, "sigma_mu"),
        (dict(k=0.0), ValueError, "k must be a number > 0"),
        (dict(k="2"), ValueError, "k must be a number > 0"),
        (dict(max_bins=1), ValueError, "max_bins"),
    ],
)
def test_bad_input_is_refused(kwargs, error, match):
    args = dict(X=X, Y=Y) | kwargs
    with pm.Model() as model:
        with pytest.raises(error, match=match):
            pmt.BART("mu", **args)
    assert "mu" not in model.named_vars  # nothing half-registered


def test_pandas_series_and_frames_are_accepted():
    """``df[["a"]]`` and ``df["y"]`` as X and Y, and a Series as new X, as users write them."""
    df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": Y})
    with pm.Model():
        mu = pmt.BART("mu", df[["a"]], df["y"], m=3)
        nu = pmt.BART("nu", df["b"], df["y"], m=3)
        pm.Normal("y", mu + nu, 1.0, observed=df["y"])
        idata = pm.sample(tune=5, draws=5, chains=1, random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    np.testing.assert_array_equal(pmt.predict(idata, df["a"], "mu"), idata.posterior["mu"].values)
    np.testing.assert_array_equal(pmt.predict(idata, df[["b"]], "nu"), idata.posterior["nu"].values)
    assert pmt.chipman_sigma2_prior(df[["a", "b"]], df["y"])[0] == 1.5


def test_shape_must_match_rows():
    with pm.Model():
        for i, shape in enumerate([(41,), (40, 3), (2, 3, 40)]):
            with pytest.raises(ValueError, match="shape"):
                pmt.BART(f"mu{i}", X, Y, shape=shape)


def test_binning_codes_and_thresholds_agree():
    rng = np.random.default_rng(1)
    Z = np.column_stack([rng.integers(0, 5, 500), rng.normal(size=500)])
    b = bin_columns(Z, max_bins=16)
    assert b.codes[0].max() == 4 and b.codes[1].max() <= 15
    for v in range(2):
        thr = b.thresholds[v]
        for c in range(len(thr)):
            np.testing.assert_array_equal(b.codes[v] <= c, Z[:, v] <= thr[c])


def test_chipman_sigma_prior_quantile():
    """P(sigma < sigma_hat) = q under the returned inverse-gamma prior of sigma^2."""
    from scipy import stats

    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(200, 3))
    Ys = Xs @ np.array([1.0, -2.0, 0.5]) + rng.normal(0, 1.5, 200)
    a, b = pmt.chipman_sigma2_prior(Xs, Ys, nu=3, q=0.9)
    resid = Ys - np.column_stack([np.ones(200), Xs]) @ np.linalg.lstsq(np.column_stack([np.ones(200), Xs]), Ys,
                                                                        rcond=None)[0]
    sigma_hat2 = resid @ resid / (200 - 4)
    assert stats.invgamma(a, scale=b).cdf(sigma_hat2) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="q"):
        pmt.chipman_sigma2_prior(Xs, Ys, q=1.5)


def test_pymc_bart_keywords_meaning_the_same_are_accepted_others_refused():
    class ContinuousSplitRule:  # pymc-bart's class, by name
        pass

    class OneHotSplitRule:
        pass

    with pm.Model():
        pmt.BART("a", X, Y, m=5, response="constant", split_rules=[ContinuousSplitRule] * X.shape[1])
        pmt.BART("b", X, Y, m=5, split_rules=[ContinuousSplitRule()] * X.shape[1])
        pmt.BART("c", X, Y, m=5, response="linear")  # lines in the leaves (tests/test_split_leaves.py)
        with pytest.raises(ValueError, match="response must be one of"):
            pmt.BART("c2", X, Y, response="motr")
        # a one-hot rule reads the column's numbers as category labels (tests/test_pymc_bart_api.py); subset
        # splits are not available
        rules = [ContinuousSplitRule, OneHotSplitRule] + [ContinuousSplitRule] * (X.shape[1] - 2)
        pmt.BART("d", X, Y, m=5, split_rules=rules)
        with pytest.raises(ValueError, match=r"split_rules\[1\] is a SubsetSplit"):
            pmt.BART("e", X, Y, split_rules=["ContinuousSplit", "SubsetSplit"] + ["ContinuousSplit"] * (X.shape[1] - 2))
        with pytest.raises(ValueError, match=r"split_rules\[0\]: unknown split rule"):
            pmt.BART("f", X, Y, split_rules=["Linear"] * X.shape[1])


def test_a_step_created_before_the_likelihood_warns_it_samples_the_prior():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(30, 2))
    y = (X[:, 0] > 0.5).astype(int)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=1)
        with pytest.warns(UserWarning, match="create it after the likelihood"):
            pmt.CGMStep([mu])
        pm.Bernoulli("y", logit_p=mu, observed=y)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pmt.CGMStep([mu])
    assert not [w for w in caught if "samples the tree prior" in str(w.message)]
