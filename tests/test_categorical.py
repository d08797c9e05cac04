"""Categorical covariates (docs/categorical.md): every sampler against the exact posterior under the stated prior.

The prior, written here independently of binning.py: an unordered categorical covariate with K
categories splits as "category k or another", k one of the categories with rows on both sides in the
node, each such rule with ``1 / K`` of the covariate's weight (one-vs-rest: a 0/1 column per category);
numeric covariates split as before. The enumeration of tests/helpers/exact.py over those columns is the exact
answer; each sampler runs its own step's split columns. Reading the categories as ordered numbers must
fail.
"""

import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from tests.helpers.exact import tiny_data
from tests.helpers.kernel_chain import assert_same_split_columns, coding_tv, step_split_columns
from tests.helpers.samplers import SAMPLERS

LABELS = np.array(["north", "south", "east"])


def categorical_data():
    codes, r, _ = tiny_data(0)
    X = pd.DataFrame({"region": pd.Categorical(LABELS[codes[:, 0]]), "x": codes[:, 1] * 2.0 + 1.0})
    return X, r


def stated_coding(X):
    """Codes (n, q) and weights (q,) of the stated prior."""
    cols, ws = [], []
    for name in X.columns:
        col = X[name]
        if isinstance(col.dtype, pd.CategoricalDtype) and not col.dtype.ordered:
            levels = sorted(set(col))
            for level in levels:
                cols.append((col == level).to_numpy().astype(int))
                ws.append(1.0 / len(levels))
        else:
            cols.append(np.searchsorted(np.unique(col), col))
            ws.append(1.0)
    return np.array(cols).T, np.array(ws)


def test_step_codes_are_the_stated_coding():
    X, r = categorical_data()
    assert_same_split_columns(*step_split_columns(X, r, pmt.CGMStep), *stated_coding(X))


def _posterior_tv(s, codes=None, weights=None):
    X, r = categorical_data()
    return coding_tv(s, X, r, *stated_coding(X), codes=codes, weights=weights)


@pytest.mark.parametrize("s", [s for s in SAMPLERS if s.posterior is not None], ids=str)
def test_posterior_with_a_categorical_covariate_matches_enumeration(s):
    tv, threshold = _posterior_tv(s)
    assert tv < threshold, f"TV {tv:.4f} >= {threshold:.4f}"


def test_categories_read_as_ordered_numbers_fail():
    cgm = next(s for s in SAMPLERS if s.name == "cgm")
    codes, _, _ = tiny_data(0)
    tv, threshold = _posterior_tv(cgm, codes=codes, weights=np.ones(2))
    assert tv > threshold, f"the ordinal coding passed: TV {tv:.4f} < {threshold:.4f}"


def _fit(X, y, seed=5, draws=30):
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=8)
        pm.Normal("y", mu, 0.3, observed=y)
        return pm.sample(draws, tune=30, chains=1, step=[pmt.CGMStep([mu])], random_seed=seed, progressbar=False,
                         compute_convergence_checks=False)


def _table(n=150, seed=0):
    rng = np.random.default_rng(seed)
    city = rng.choice(["Lyon", "Oslo", "Lima", "Pune"], size=n)
    x = rng.uniform(size=n)
    y = np.where(city == "Oslo", 2.0, 0.0) + x + rng.normal(0.0, 0.3, size=n)
    return pd.DataFrame({"city": city, "x": x}), y


def test_predictions_with_categories_unseen_ones_and_wrong_types():
    X, y = _table()
    idata = _fit(X, y)
    np.testing.assert_allclose(pmt.predict(idata, X, "mu"), idata.posterior["mu"].values, rtol=0, atol=1e-12)
    # a category string column predicts from a pandas category column and back
    as_cat = X.assign(city=pd.Categorical(X["city"]))
    np.testing.assert_array_equal(pmt.predict(idata, as_cat, "mu"), pmt.predict(idata, X, "mu"))
    # unseen categories take the "another category" side of every category split: all alike
    a = pmt.predict(idata, X.assign(city="Quito")[:5], "mu")
    b = pmt.predict(idata, X.assign(city="Baku")[:5], "mu")
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match=r"column\(s\) \[0\] hold numbers, but the model split them as categories"):
        pmt.predict(idata, X.assign(city=1.0), "mu")
    assert list(pmt.get_variable_inclusion(idata, "mu", X=X).index) in (["city", "x"], ["x", "city"])
    # PyMC's predictive route through the model's own covariates keeps them too
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=8)
        pm.Normal("y", mu, 0.3, observed=y)
        pred = pmt.sample_posterior_predictive(idata, var_names=["mu"], progressbar=False)
    np.testing.assert_allclose(pred.posterior_predictive["mu"].values, idata.posterior["mu"].values, atol=1e-12)
    # the tools that edit the covariates keep the categories
    vi = pmt.compute_variable_importance(idata, X, "mu", samples=10)
    assert len(vi["r2_mean"]) == 2
    pmt.plots.plot_pdp(idata, X, "mu", var_idx=[0, 1], samples=10)
    pmt.plots.plot_ice(idata, X, "mu", var_idx=[0], samples=10, instances=5)


def test_ordered_categories_split_like_their_positions():
    X, y = _table(seed=1)
    order = ["Lima", "Lyon", "Oslo", "Pune"]
    ordered = X.assign(city=pd.Categorical(X["city"], categories=order, ordered=True))
    numbers = X.assign(city=pd.Categorical(X["city"], categories=order).codes.astype(float))
    a, b = _fit(ordered, y), _fit(numbers, y)
    np.testing.assert_array_equal(a.posterior["mu"].values, b.posterior["mu"].values)
    np.testing.assert_array_equal(pmt.predict(a, ordered, "mu"), pmt.predict(b, numbers, "mu"))


def test_missing_categories_and_input_checks():
    X, y = _table(seed=2)
    X.loc[:9, "city"] = None  # a missing category is a category of its own
    idata = _fit(X, y, draws=5)
    assert np.isfinite(pmt.predict(idata, X, "mu")).all()
    with pm.Model(), pytest.raises(ValueError, match=r"categorical column\(s\) \['one'\] have a single category"):
        pmt.BART("mu", X.assign(one="same"), y)
