"""BART in a bambi formula (pymc_treesamplers.bambi): the same posterior as the model written by hand, predictions
from the stored forests, the refusals, the plots of bmb.interpret, the families.

The same-model tests compare posterior means by their Monte Carlo standard errors (4 of them, combined), and show
that a level off by a third of the response's sd fails that comparison.
"""

import warnings

import arviz as az
import bambi as bmb
import matplotlib
import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_treesamplers as pmt
import pymc_treesamplers.bambi as pmb
from pymc_treesamplers.model.callers import UnsupportedMethodError

matplotlib.use("Agg")

N = 60
FIT = dict(draws=600, tune=300, chains=2, random_seed=3, progressbar=False)


def frame(n=N, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x1": rng.uniform(size=n), "x2": rng.uniform(size=n), "z": rng.normal(size=n) + 2,
                       "g": rng.choice(list("abc"), n)})
    eta = np.sin(5 * df.x1) + 0.6 * df.z - 1.2
    df["y"] = eta + rng.normal(scale=0.4, size=n)
    df["yb"] = rng.binomial(1, 1 / (1 + np.exp(-eta))).astype(int)
    df["yp"] = rng.poisson(np.exp(0.5 * eta))
    return df


@pytest.fixture(scope="module")
def gaussian():
    df = frame()
    model = pmb.Model("y ~ bart(x1, x2, m=20) + z", df)
    return df, model, model.fit(**FIT)


def summaries(idata, forest):
    post = idata.posterior
    rows = post[forest].dims[-1]
    return {"level": post[forest].mean(rows), "row0": post[forest].isel({rows: 0}), "z": post["z"]}


def agree(a: dict, b: dict, names) -> list[str]:
    """The names whose posterior means differ by more than 4 combined Monte Carlo standard errors."""
    bad = []
    for name in names:
        gap = float(a[name].mean() - b[name].mean())
        se = np.hypot(float(az.mcse(a[name])), float(az.mcse(b[name])))
        if abs(gap) > 4 * se:
            bad.append(f"{name}: {gap:.3g} vs se {se:.3g}")
    return bad


def by_hand(df, family):
    X, z = df[["x1", "x2"]], df["z"].to_numpy()
    y = df["y" if family == "gaussian" else "yb"].to_numpy()
    model = pmb.Model(f"{'y' if family == 'gaussian' else 'yb'} ~ bart(x1, x2, m=20) + z", df, family=family)
    zprior = model.parameters[model.family.likelihood.parent].terms["z"].prior.args
    with pm.Model():
        f = pmt.BART("f", X, y, m=20)
        b = pm.Normal("z", **zprior)
        eta = f + b * (z - z.mean())
        if family == "gaussian":
            pm.Normal("y", eta, pm.HalfStudentT("sigma", **model.parameters["sigma"].prior.args), observed=y)
        else:
            pm.Bernoulli("y", p=pm.math.sigmoid(eta), observed=y)
        idata = pm.sample(**FIT)
    return model, idata


@pytest.mark.parametrize("family", ["gaussian", "bernoulli"])
def test_same_posterior_as_by_hand(family, gaussian):
    df = frame()
    model, hand = by_hand(df, family)
    formula = gaussian[2] if family == "gaussian" else model.fit(**FIT)
    names = ["level", "row0", "z"]
    a, b = summaries(formula, model.forest.name), summaries(hand, "f")
    if family == "gaussian":
        a["sigma"], b["sigma"] = formula.posterior["sigma"], hand.posterior["sigma"]
        names.append("sigma")
    assert agree(a, b, names) == []
    # the intercept is the forest's mean, un-centred by the common term's share
    zbar = df["z"].mean()
    assert np.allclose(formula.posterior["Intercept"], a["level"] - formula.posterior["z"] * zbar)
    # a deliberately wrong target: the level off by a third of the response's sd
    wrong = dict(b, level=b["level"] + df["y"].std() / 3)
    assert any(bad.startswith("level") for bad in agree(a, wrong, names))


def test_predictions_reproduce_the_trace_and_the_forests(gaussian):
    df, model, idata = gaussian
    name = model.forest.name
    post = idata.posterior
    fit = post[name].transpose("chain", "draw", "__bart_obs__").values
    z = df["z"].to_numpy()
    expected = fit + post["z"].values[..., None] * (z - z.mean())
    same = model.predict(idata, inplace=False)
    assert np.allclose(same.posterior["mu"].transpose("chain", "draw", "__obs__").values, expected)
    # the stored forests give the trace's values at the training rows
    assert np.allclose(pmt.predict(idata, df[["x1", "x2"]], name), fit)
    new = frame(9, seed=5)
    at_new = model.predict(idata, data=new, inplace=False).posterior["mu"].transpose("chain", "draw", "__obs__")
    forest_new = pmt.predict(idata, new[["x1", "x2"]], name)
    linear = post["Intercept"].values[..., None] + post["z"].values[..., None] * new["z"].to_numpy()
    assert np.allclose(at_new.values, linear + forest_new - fit.mean(axis=2, keepdims=True))
    response = model.predict(idata, data=new, kind="response", inplace=False)
    assert response.posterior_predictive["y"].shape == (2, 600, 9)
    # in place at new rows: the trace keeps the forest's own values, and in-sample predictions still reproduce it
    copy = idata.copy()
    model.predict(copy, data=new)
    assert np.array_equal(copy.posterior[name].values, post[name].values)
    model.predict(copy)
    assert np.allclose(copy.posterior["mu"].transpose("chain", "draw", "__obs__").values, expected)


def test_prediction_needs_the_forest_columns(gaussian):
    df, model, idata = gaussian
    with pytest.raises(ValueError, match=r"x2"):
        model.predict(idata, data=df.drop(columns="x2").iloc[:3], inplace=False)


def test_interpret_plots(gaussian):
    df, model, idata = gaussian
    warnings.filterwarnings("ignore", category=bmb.PlottingFutureWarning)
    bmb.interpret.plot_predictions(model, idata, "x1")
    bmb.interpret.plot_comparisons(model, idata, contrast="z", conditional="x1")
    summary = bmb.interpret.predictions(model, idata, "x1").summary
    # the forest's shape in x1 (sin(5 x1) in the simulation), the other covariates at their means
    assert np.corrcoef(summary["estimate"], np.sin(5 * summary["x1"]))[0, 1] > 0.8


@pytest.mark.parametrize("method", ["nutpie", "numpyro", "blackjax", "vi", "laplace"])
def test_methods_that_cannot_sample_trees_refuse_by_name(method):
    model = pmb.Model("y ~ bart(x1, x2, m=20) + z", frame())
    with pytest.raises(UnsupportedMethodError, match=r"bart\(x1, x2, m=20\).*BART"):
        model.fit(inference_method=method)


@pytest.mark.parametrize("formula, match", [
    ("y ~ bart(x1):z", "interaction"), ("y ~ z*bart(x1)", "interaction"), ("y ~ (bart(x1)|g)", "group-specific"),
    ("y ~ np.log(bart(x1))", "another call"), ("y ~ bart(x1) + bart(x2)", "2 bart"),
    ("y ~ bart(np.log(x1))", "names of data columns"), ("y ~ bart(w)", "no column"), ("y ~ z", "no bart"),
    ("y ~ bart(x1, dims='a')", "sets"),
])
def test_misplaced_or_malformed_bart_refused(formula, match):
    with pytest.raises(ValueError, match=match):
        pmb.Model(formula, frame())


def test_other_refusals():
    df = frame()
    with pytest.raises(ValueError, match="Intercept"):
        pmb.Model("y ~ bart(x1) + z", df, priors={"Intercept": bmb.Prior("Normal", mu=0, sigma=1)})
    with pytest.raises(ValueError, match="another 'bart'"):
        pmb.Model("y ~ bart(x1) + z", df, extra_namespace={"bart": lambda x: x})
    with pytest.raises(ValueError, match="auxiliary"):
        pmb.Model(bmb.Formula("y ~ bart(x1)", "sigma ~ bart(x2)"), df)
    with pytest.raises(ValueError, match="one linear predictor"):
        pmb.Model("g ~ bart(x1)", df, family="categorical")
    # bambi's own Model, given our bart, would make it a linear term: it raises, naming the right route
    with pytest.raises(TypeError, match="pymc_treesamplers.bambi.Model"):
        bmb.Model("y ~ bart(x1) + z", df, extra_namespace={"bart": pmb.bart})


def test_a_user_object_named_bart_is_refused():
    bart = "not the forest"  # noqa: F841 (read from this frame by the model)
    with pytest.raises(ValueError, match="calling scope defines another 'bart'"):
        pmb.Model("y ~ bart(x1) + z", frame())


def test_missing_values_are_barts():
    df = frame(40)
    df.loc[[1, 5, 9], "x1"] = np.nan
    model = pmb.Model("y ~ bart(x1, x2, m=10) + z + (1|g)", df, dropna=True)
    assert model.forest.X["x1"].isna().sum() == 3 and model.data["x1"].isna().sum() == 3
    idata = model.fit(draws=50, tune=50, chains=1, random_seed=1, progressbar=False)
    new = frame(5, seed=7)
    new.loc[0, "x1"] = np.nan
    mu = model.predict(idata, data=new, inplace=False).posterior["mu"]
    assert np.isfinite(mu.values).all()


def test_group_term_and_tree_step_option():
    df = frame(40)
    model = pmb.Model("y ~ bart(x1, x2, m=10) + z + (1|g)", df)
    idata = model.fit(draws=40, tune=40, chains=1, random_seed=1, progressbar=False, tree_step=pmt.GrowPruneStep)
    assert "1|g" in idata.posterior and f"{model.forest.name}_forest" in idata.sample_stats
    assert "Forest" in str(model)


@pytest.mark.parametrize("family", ["poisson", "negativebinomial"])
def test_count_families(family):
    df = frame(50)
    model = pmb.Model("yp ~ bart(x1, x2, m=10) + z", df, family=family)
    idata = model.fit(draws=60, tune=60, chains=1, random_seed=2, progressbar=False)
    out = model.predict(idata, data=frame(4, seed=9), kind="response", inplace=False)
    assert out.posterior_predictive["yp"].shape == (1, 60, 4)
    assert float(out.posterior["mu"].min()) > 0


def test_group_intercepts_and_the_forest_agree():
    """With (1|g) the tree step carries the level shift, and the intercept (the forest's mean) mixes across chains
    instead of trading places with the group intercepts' mean (docs/bambi.md)."""
    df = frame(120, seed=2)
    df["y"] += df["g"].map({"a": -0.5, "b": 0.7, "c": 0.0})
    model = pmb.Model("y ~ bart(x1, x2, m=20) + z + (1|g)", df)
    idata = model.fit(draws=400, tune=300, chains=3, random_seed=4, progressbar=False)
    post = idata.posterior
    assert float(az.rhat(post["Intercept"])) < 1.05 and float(az.ess(post["Intercept"])) > 300
    assert float(az.ess(post["1|g"].sel({"g__factor_dim": "a"}))) > 300
    # the stored forests are the shifted ones: the trace's forest values and its predictions agree
    assert np.allclose(pmt.predict(idata, df[["x1", "x2"]], model.forest.name),
                       post[model.forest.name].transpose("chain", "draw", "__bart_obs__").values)


def test_level_shift_option():
    df = frame(40)
    with pytest.raises(ValueError, match="no group intercepts"):
        pmb.Model("y ~ bart(x1, m=10) + z", df).fit(draws=5, tune=5, chains=1, level_shift=True)
    # a tree step it cannot move (line leaves): a warning by default, an error when asked for
    model = pmb.Model("y ~ bart(x1, m=10, response='linear') + (1|g)", df)
    with pytest.raises(ValueError, match="level_shift=True: .*line leaves"):
        model.fit(draws=5, tune=5, chains=1, level_shift=True)
    with pytest.warns(UserWarning, match="no level shift"):
        model.fit(draws=5, tune=5, chains=1, progressbar=False)
