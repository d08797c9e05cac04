"""pymc-bart 0.13.1's own test suite (tests/test_bart.py, tests/test_utils.py: 31 cases), re-expressed
through this package with pymc-bart's calls and unchanged assertions: ``import pymc_treesamplers as pmb``
in place of ``import pymc_bart as pmb``. Written from pymc-bart's docs and a reading of its tests.

``response="linear"`` (4 cases) runs as an exact model here: a leaf whose parent splits on covariate ``v`` holds a
line in ``v`` with a prior, sampled with the trees (docs/basis.md); pymc-bart fits that line by least squares. Its 4
cases pass with their assertions unchanged.

Where a case cannot map it is refused by name, and the test checks the refusal:
* pymc-bart internals: its base64 variable-inclusion stat and its ``_encode_vi``/``_decode_vi`` (cases 1
  and 31: here the stat is ``<var>_split_counts``, read through ``get_variable_inclusion``), the trees on the
  Op (``op.all_trees``, case 13: here they are in the InferenceData), ``utils._sample_posterior`` (case 16:
  here ``pmt.predict``). Each of those cases checks the same property through the public equivalent.
* pymc-bart's PGBART lives in its Rust backend (``from bartrs import PGBART``); here it is ``pmb.PGBART``.

Sampling settings are pymc-bart's, with ``cores=1`` (the machine has 2 cores) and no progress bar.
"""

import matplotlib
import numpy as np
import pandas as pd
import pymc as pm
import pytest
from pymc.initial_point import make_initial_point_fn
from pymc.logprob.basic import transformed_conditional_logp

import pymc_treesamplers as pmb

matplotlib.use("Agg")

QUIET = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}


@pytest.fixture(autouse=True)
def _seeded_numpy():
    """pymc-bart's tests draw their data from numpy's global generator: seeded here, so each run is the same."""
    np.random.seed(3415)


def assert_moment_is_expected(model, expected, check_finite_logp=True):
    fn = make_initial_point_fn(model=model, return_transformed=False, default_strategy="support_point")
    moment = fn(0)["x"]
    expected = np.asarray(expected)
    try:
        random_draw = model["x"].eval()
    except NotImplementedError:
        random_draw = moment
    assert moment.shape == expected.shape
    assert expected.shape == random_draw.shape
    assert np.allclose(moment, expected)
    if check_finite_logp:
        logp_moment = transformed_conditional_logp((model["x"],), rvs_to_values={model["x"]: pm.math.constant(moment)},
                                                   rvs_to_transforms={}, rvs_to_total_sizes={})[0].sum()
        assert np.isfinite(logp_moment.eval())


# ------------------------------------------------------------------------------------------- test_bart.py


RESPONSES = pytest.mark.parametrize("response", ["constant", "linear"], ids=["constant", "linear-response"])


@RESPONSES
def test_bart_vi(response):
    """Cases 1 and 2: the informative covariate has the largest share of splits (pymc-bart decodes its own stat;
    here the shares per covariate come from get_variable_inclusion, in covariate order).

    The linear case runs pymc-bart's own settings (1000 + 1000 draws, the constant case a shortened 200 + 200). A
    line needs its parent's split on covariate 0, and one such split fits this Y, so a draw holds about 1.3 leaves
    per tree and its few other splits go where the tree prior sends them: over 200 + 200 draws the shares were
    0.49, 0.50 and 0.02 (one noise covariate kept by a sticky chain), over 1000 + 1000 0.78-0.97 for covariate 0
    over three seeds."""
    X = np.random.normal(0, 1, size=(250, 3))
    Y = np.random.normal(0, 1, size=250)
    X[:, 0] = np.random.normal(Y, 0.1)
    with pm.Model():
        mu = pmb.BART("mu", X, Y, m=10, response=response)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu, sigma, observed=Y)
        idata = pm.sample(**({"tune": 200, "draws": 200} if response == "constant" else {}), random_seed=3415,
                          **QUIET)
    shares, labels = pmb.get_variable_inclusion(idata, X)
    vi = shares[np.argsort([int(label) for label in labels])]
    assert vi[0] > vi[1] + vi[2]
    np.testing.assert_almost_equal(vi.sum(), 1)


def test_an_unknown_response_is_refused_by_name():
    with pm.Model(), pytest.raises(ValueError, match=r"response must be one of \['constant', 'linear', 'mix'\]"):
        pmb.BART("mu", np.zeros((10, 2)), np.zeros(10), m=2, response="motr")


@RESPONSES
def test_missing_data(response):
    """Cases 3 and 4: NaN in X samples."""
    X = np.random.normal(0, 1, size=(50, 2))
    Y = np.random.normal(0, 1, size=50)
    X[10:20, 0] = np.nan
    with pm.Model():
        mu = pmb.BART("mu", X, Y, m=10, response=response)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu, sigma, observed=Y)
        pm.sample(tune=100, draws=100, chains=1, random_seed=3415, **QUIET)


@RESPONSES
def test_shared_variable(response):
    """Cases 5 and 6: predictions at new covariates after pm.set_data (pmb.sample_posterior_predictive: pymc-bart's
    plain PyMC call with sample_vars would draw the trees from the prior here, and says so)."""
    X = np.random.normal(0, 1, size=(50, 2))
    Y = np.random.normal(0, 1, size=50)
    with pm.Model():
        data_X = pm.Data("data_X", X)
        mu = pmb.BART("mu", data_X, Y, m=2, response=response)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu, sigma, observed=Y, shape=mu.shape)
        idata = pm.sample(tune=100, draws=100, chains=2, random_seed=3415, **QUIET)
        ppc = pm.sample_posterior_predictive(idata, progressbar=False)
        pm.set_data({"data_X": X[:3]})
        with pytest.raises(ValueError, match="sample_posterior_predictive"):  # pymc-bart's call: trees redrawn
            pm.sample_posterior_predictive(idata, sample_vars=["mu", "y"], progressbar=False)
        ppc2 = pmb.sample_posterior_predictive(idata, var_names=["mu", "y"], progressbar=False)
    assert ppc.posterior_predictive["y"].shape == (2, 100, 50)
    assert ppc2.posterior_predictive["y"].shape == (2, 100, 3)


@RESPONSES
def test_shape(response):
    """Cases 7 and 8: two outputs, shape=(2, n)."""
    X = np.random.normal(0, 1, size=(250, 3))
    Y = np.random.normal(0, 1, size=250)
    with pm.Model() as model:
        w = pmb.BART("w", X, Y, m=2, response=response, shape=(2, 250))
        pm.Normal("y", w[0], pm.math.abs(w[1]), observed=Y)
        idata = pm.sample(tune=50, draws=10, random_seed=3415, **QUIET)
    assert model.initial_point()["w"].shape == (2, 250)
    assert idata.posterior.coords["w_dim_0"].data.size == 2
    assert idata.posterior.coords["w_dim_1"].data.size == 250


def test_bart_moment():
    """Case 9: the support point is Y's mean, a prior draw has its shape, the logp there is finite."""
    with pm.Model() as model:
        pmb.BART("x", X=np.zeros((50, 2)), Y=np.zeros(50), size=None)
    assert_moment_is_expected(model, np.zeros(50))


@pytest.mark.parametrize("rule", ["ContinuousSplit", "OneHotSplit", pmb.ContinuousSplitRule, pmb.OneHotSplitRule()],
                         ids=["continuous", "one-hot", "continuous-class", "one-hot-instance"])
def test_categorical_model(rule):
    """Cases 10-12 (pymc-bart writes its rules as strings; 0.12 wrote instances of its classes: both work)."""
    Y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    X = np.concatenate([Y[:, None], np.random.default_rng(12345).integers(0, 6, size=(9, 4))], axis=1)
    with pm.Model():
        lo = pmb.BART("logodds", X, Y, m=2, shape=(3, 9), split_rules=[rule] * 5)
        pm.Categorical("y", p=pm.math.softmax(lo.T, axis=-1), observed=Y)
        idata = pm.sample(tune=600, draws=600, random_seed=3415, **QUIET)
        idata = pm.sample_posterior_predictive(idata, predictions=True, extend_inferencedata=True,
                                               random_seed=3415, progressbar=False)
    assert (idata.predictions.y.median(["chain", "draw"]) == Y).all()
    assert pmb.compute_variable_importance(idata, bartrv=lo, X=X)["preds"].shape == (5, 50, 9, 3)


def test_bart_takes_pymc_barts_positional_order():
    """pymc-bart's BART(name, X, Y, m, alpha, beta, response, split_rules, split_prior)."""
    X = np.random.default_rng(0).integers(0, 3, size=(20, 2)).astype(float)
    with pm.Model():
        mu = pmb.BART("mu", X, X[:, 0], 5, 0.9, 2.0, "constant", ["OneHotSplit", "ContinuousSplit"], [2.0, 1.0])
    op = mu.owner.op
    assert (op.m, op.alpha, op.number_categories, op.split_prior) == (5, 0.9, (0,), (2.0, 1.0))


def test_subset_split_is_refused_by_name():
    with pm.Model(), pytest.raises(ValueError, match="SubsetSplit"):
        pmb.BART("mu", np.zeros((10, 2)), np.zeros(10), m=2, split_rules=["ContinuousSplit", "SubsetSplit"])


def test_multiple_bart_variables():
    """Case 13 (pymc-bart also checks that the two Ops keep separate tree lists: here each variable's trees
    are its own stats in the InferenceData, checked by the shapes below)."""
    X1 = np.random.normal(0, 1, size=(50, 2))
    X2 = np.random.normal(0, 1, size=(50, 3))
    Y = np.random.normal(0, 1, size=50)
    Y1 = X1[:, 0] + np.random.normal(0, 0.1, size=50)
    Y2 = X2[:, 0] + X2[:, 1] + np.random.normal(0, 0.1, size=50)
    with pm.Model() as model:
        mu1 = pmb.BART("mu1", X1, Y1, m=5)
        mu2 = pmb.BART("mu2", X2, Y2, m=5)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu1 + mu2, sigma, observed=Y)
        idata = pm.sample(tune=50, draws=50, chains=1, random_seed=3415, **QUIET)
    assert {"mu1_forest", "mu2_forest"} <= set(idata.sample_stats.data_vars)
    assert idata.posterior["mu1"].shape == (1, 50, 50)
    assert idata.posterior["mu2"].shape == (1, 50, 50)
    vi_results = pmb.compute_variable_importance(idata, mu1, X1, model=model)
    assert vi_results["labels"].shape == (2,)
    assert vi_results["preds"].shape == (2, 50, 50)
    assert vi_results["preds_all"].shape == (50, 50)
    vi_tuple = pmb.get_variable_inclusion(idata, X1, model=model, bart_var_name="mu1")
    assert vi_tuple[0].shape == (2,)
    assert len(vi_tuple[1]) == 2
    assert isinstance(vi_tuple[1][0], str)


def test_multiple_bart_variables_manual_step():
    """Case 14, with pymc-bart's step class by its name (``from bartrs import PGBART`` there)."""
    X1 = np.random.normal(0, 1, size=(30, 2))
    X2 = np.random.normal(0, 1, size=(30, 2))
    Y = np.random.normal(0, 1, size=30)
    with pm.Model():
        mu1 = pmb.BART("mu1", X1, X1[:, 0] + np.random.normal(0, 0.1, size=30), m=3)
        mu2 = pmb.BART("mu2", X2, X2[:, 1] + np.random.normal(0, 0.1, size=30), m=3)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu1 + mu2, sigma, observed=Y)
        step1 = pmb.PGBART([mu1], num_particles=5)
        step2 = pmb.PGBART([mu2], num_particles=5)
        idata = pm.sample(tune=20, draws=20, chains=1, step=[step1, step2], random_seed=3415, **QUIET)
    assert "mu1" in idata.posterior
    assert "mu2" in idata.posterior
    assert idata.posterior["mu1"].shape == (1, 20, 30)
    assert idata.posterior["mu2"].shape == (1, 20, 30)


def test_pgbart_batch_is_accepted_and_said_to_have_no_effect():
    X = np.random.normal(0, 1, size=(30, 2))
    with pm.Model():
        mu = pmb.BART("mu", X, X[:, 0], m=3)
        pm.Normal("y", mu, 1.0, observed=X[:, 0])
        with pytest.warns(UserWarning, match="batch has no effect"):
            pmb.PGBART([mu], num_particles=5, batch=(0.1, 0.1))


def test_mutable_named_dim():
    """Case 15: pm.Data with named dims."""
    rng = np.random.default_rng(0)
    N = 50
    X = rng.normal(size=(N, 2))
    Y = rng.normal(size=N)
    with pm.Model(coords={"obs": np.arange(N), "feature": ["a", "b"]}):
        x = pm.Data("x", X, dims=("obs", "feature"))
        mu = pmb.BART("mu", X=x, Y=Y, m=10, dims="obs")
        pm.Normal("y", mu, 1.0, observed=Y, dims="obs")
        pm.sample(tune=20, draws=20, chains=1, **QUIET)


# ------------------------------------------------------------------------------------------ test_utils.py


@pytest.fixture(scope="module")
def fitted():
    """pymc-bart's TestUtils fixture: X with two normal columns and a binary one, m = 10."""
    rng = np.random.default_rng(3415)
    X = np.hstack([rng.normal(size=(50, 2)), rng.binomial(n=1, p=0.5, size=(50, 1))])
    Y = rng.normal(size=50)
    with pm.Model():
        mu = pmb.BART("mu", X, Y, m=10)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu, sigma, observed=Y)
        idata = pm.sample(tune=200, draws=200, random_seed=3415, **QUIET)
    return {"X": X, "Y": Y, "mu": mu, "idata": idata}


def test_sample_posterior(fitted):
    """Case 16 (pymc-bart's private _sample_posterior): a draw's prediction is row by row, and a draw's
    values at the first rows are those it gives at all rows; here through pmb.predict."""
    X, idata = fitted["X"], fitted["idata"]
    draws = pmb.diagnostics.choose_draws(idata, "mu", samples=2, random_seed=3)
    pred_all = pmb.predict(idata, X, "mu", draws=draws)
    pred_first = pmb.predict(idata, X[:10], "mu", draws=draws[:1])
    np.testing.assert_almost_equal(pred_first[0], pred_all[0, :10], decimal=4)
    assert pred_all.shape == (2, 50)
    assert pred_first.shape == (1, 10)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"samples": 2, "var_discrete": [3]},
        {"instances": 2},
        {"var_idx": [0], "smooth": False, "color": "k"},
        {"grid": (1, 2), "sharey": "none", "alpha": 1},
        {"var_discrete": [0]},
    ],
)
def test_ice(fitted, kwargs):
    """Cases 17-22."""
    pmb.plot_ice(fitted["mu"], X=fitted["X"], Y=fitted["Y"], **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"samples": 2, "xs_interval": "quantiles", "xs_values": [0.25, 0.5, 0.75], "var_discrete": [3]},
        {"var_idx": [0], "smooth": False, "color": "k"},
        {"grid": (1, 2), "sharey": "none", "alpha": 1},
        {"var_discrete": [0]},
    ],
)
def test_pdp(fitted, kwargs):
    """Cases 23-27."""
    pmb.plot_pdp(fitted["mu"], X=fitted["X"], Y=fitted["Y"], **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"samples": 50},
        {"labels": ["A", "B", "C"], "samples": 2, "figsize": (6, 6)},
    ],
)
def test_vi(fitted, kwargs):
    """Cases 28-29."""
    samples = kwargs.pop("samples")
    vi_results = pmb.compute_variable_importance(fitted["idata"], bartrv=fitted["mu"], X=fitted["X"],
                                                 samples=samples)
    pmb.plot_variable_importance(vi_results, **kwargs)
    pmb.plot_scatter_submodels(vi_results, **kwargs)
    user_terms = pmb.vi_to_kulprit(vi_results)
    assert len(user_terms) == 3
    assert all("+" not in term for term in user_terms[1:])


@pytest.mark.parametrize("kind", ["pdp", "ice"])
def test_plot_dependence_the_older_name(fitted, kind):
    axes = pmb.plot_dependence(fitted["mu"], fitted["X"], fitted["Y"], kind=kind, var_idx=[0, 2], samples=5)
    assert len(axes) == 2
    with pytest.raises(ValueError, match="kind"):
        pmb.plot_dependence(fitted["mu"], fitted["X"], kind="surface")


def test_pdp_pandas_labels(fitted):
    """Case 30: DataFrame columns label the panels, a named Series the y axis."""
    X_names = ["norm1", "norm2", "binom"]
    X_pd = pd.DataFrame(fitted["X"], columns=X_names)
    Y_pd = pd.Series(fitted["Y"], name="response")
    axes = pmb.plot_pdp(fitted["mu"], X=X_pd, Y=Y_pd)
    figure = axes[0].figure
    assert figure.texts[0].get_text() == "Partial response"
    assert [ax.get_xlabel() for ax in axes] == X_names


# ------------------------------------------------------------------------------ beyond pymc-bart's tests


def test_both_forms_of_every_shared_name(fitted):
    """This package's own forms keep working beside pymc-bart's: X second where a function takes data."""
    X, idata, mu = fitted["X"], fitted["idata"], fitted["mu"]
    table = pmb.get_variable_inclusion(idata, "mu")
    shares, labels = pmb.get_variable_inclusion(idata, X)
    np.testing.assert_allclose(table["inclusion"].to_numpy(), shares)
    assert [f"x{label}" for label in labels] == list(table.index)
    kulprit = pmb.get_variable_inclusion(idata, X, to_kulprit=True)
    assert kulprit == [labels[:i] for i in range(len(labels) + 1)]
    ours = pmb.compute_variable_importance(idata, X, "mu", samples=10, random_seed=0)
    theirs = pmb.compute_variable_importance(idata, mu, X, samples=10, random_seed=0)
    np.testing.assert_allclose(ours["r2_mean"], theirs["r2_mean"])
    np.testing.assert_array_equal(ours["indices"], theirs["indices"])
    assert list(theirs["labels"]) == [labels[0]] + [f"+ {v}" for v in labels[1:]]
    assert pmb.plot_pdp(idata, X, "mu", var_idx=[0], samples=5).axes  # ours: the Figure
    assert len(pmb.plot_pdp(mu, X, var_idx=[0], samples=5)) == 1  # theirs: the axes
    with pytest.raises(TypeError, match="var_name must be a str"):
        pmb.plot_pdp(idata, X, fitted["Y"])


def test_backward_vi_drops_the_least_included_first(fitted):
    """pymc-bart's method="backward_VI" (its 0.13.1 raises UnboundLocalError on it)."""
    vi = pmb.compute_variable_importance(fitted["idata"], fitted["mu"], fitted["X"], method="backward_VI", fixed=1,
                                         samples=10, random_seed=0)
    shares, labels = pmb.get_variable_inclusion(fitted["idata"], fitted["X"])
    assert int(vi["indices"][-1]) == int(labels[-1])  # the least included is the last one added back
    assert vi["r2_mean"][-1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="fixed"):
        pmb.compute_variable_importance(fitted["idata"], fitted["mu"], fitted["X"], method="backward_VI")


def test_one_hot_columns_predict_as_a_category_column_would():
    """A numeric column given "OneHotSplit" splits as "this value or another" and predicts like the same
    column given as a pandas category; new numeric rows need the variable (pymc-bart's form) or that column
    as a category, and say so otherwise."""
    rng = np.random.default_rng(7)
    g = rng.integers(0, 4, size=120)
    X = np.column_stack([g, rng.normal(size=120)]).astype(float)
    Y = np.where(g == 2, 3.0, 0.0) + 0.1 * rng.normal(size=120)
    with pm.Model():
        mu = pmb.BART("mu", X, Y, m=10, split_rules=["OneHotSplit", "ContinuousSplit"])
        pm.Normal("y", mu, 0.2, observed=Y)
        idata = pm.sample(tune=100, draws=50, chains=1, random_seed=1, **QUIET)
    frame = pd.DataFrame({"g": pd.Categorical(g), "x": X[:, 1]})
    f_frame = pmb.predict(idata, frame, "mu").mean(axis=(0, 1))
    np.testing.assert_allclose(f_frame, idata.posterior["mu"].mean(("chain", "draw")).values, atol=1e-9)
    assert abs(f_frame[g == 2].mean() - 3.0) < 0.3
    floats = pd.DataFrame({"g": pd.Categorical(g.astype(float)), "x": X[:, 1]})  # labels 1.0 and 1 are one
    np.testing.assert_array_equal(pmb.predict(idata, floats, "mu"), pmb.predict(idata, frame, "mu"))
    with pytest.raises(TypeError, match="OneHotSplit"):
        pmb.predict(idata, X, "mu")
    vi = pmb.compute_variable_importance(idata, mu, X, samples=5)
    assert vi["names"][0] == "0"
    numbers = pd.DataFrame(X, columns=["g", "x"])  # pymc-bart's calls with the numbers in a DataFrame
    assert pmb.compute_variable_importance(idata, mu, numbers, samples=5)["names"][0] == "g"
    assert [ax.get_xlabel() for ax in pmb.plot_pdp(mu, numbers, samples=5)] == ["g", "x"]


def test_vi_to_kulprit_terms_project_with_kulprit():
    """pymc-bart's documented route to kulprit: the submodels of variable importance as user terms of a
    projection of a bambi model (kulprit is the optional extra ``kulprit``; the test extra installs it)."""
    bmb = pytest.importorskip("bambi")
    kpt = pytest.importorskip("kulprit")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    y = 2 * X["a"] - X["c"] + rng.normal(0, 0.5, size=80)
    with pm.Model():
        mu = pmb.BART("mu", X, y.to_numpy(), m=20)
        pm.Normal("y", mu, pm.HalfNormal("sigma", 1), observed=y.to_numpy())
        idata = pm.sample(tune=200, draws=200, chains=2, random_seed=1, **QUIET)
    terms = pmb.vi_to_kulprit(pmb.compute_variable_importance(idata, mu, X, samples=20, random_seed=0))
    assert terms == [[], ["a"], ["a", "c"]]
    model = bmb.Model("y ~ a + b + c", X.assign(y=y))
    idata_b = model.fit(draws=200, tune=200, chains=2, cores=1, idata_kwargs={"log_likelihood": True},
                        progressbar=False, random_seed=1)
    ppi = kpt.ProjectionPredictive(model, idata_b)
    ppi.project(user_terms=terms)
    assert "['a', 'c']" in str(ppi)


def test_a_list_of_barts_is_one_model_with_several_outputs():
    """pymc-bart's utilities take a list of one-output BARTs on the same X as the outputs of one model."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    with pm.Model():
        mu1 = pmb.BART("mu1", X, X[:, 0], m=5)
        mu2 = pmb.BART("mu2", X, X[:, 1], m=5)
        pm.Normal("y1", mu1, 0.3, observed=X[:, 0] + 0.3 * rng.normal(size=40))
        pm.Normal("y2", mu2, 0.3, observed=X[:, 1] + 0.3 * rng.normal(size=40))
        idata = pm.sample(tune=50, draws=30, chains=1, random_seed=2, **QUIET)
    vi = pmb.compute_variable_importance(idata, [mu1, mu2], X, samples=10)
    assert vi["preds"].shape == (3, 10, 40, 2) and vi["preds_all"].shape == (10, 40, 2)
    assert set(vi["indices"][:2]) == {0, 1}  # the two covariates the outputs use come first
    assert len(pmb.plot_scatter_submodels(vi)) == 6  # a panel per submodel and output
    assert len(pmb.plot_pdp([mu1, mu2], X, var_idx=[0], samples=5)) == 2
    with pytest.raises(ValueError, match="one-output"):
        with pm.Model():
            w = pmb.BART("w", X, X[:, 0], m=2, shape=(2, 40))
            pmb.compute_variable_importance(idata, [w], X)


def test_pymc_barts_call_forms_positional_and_keyword(fitted):
    """The review's cases: pymc-bart's positional orders, X by keyword, plots that pyplot can show, and a
    variable-first plot that will not guess between two fits of one name."""
    import matplotlib.pyplot as plt

    X, idata, mu = fitted["X"], fitted["idata"], fitted["mu"]
    with pm.Model() as model:
        pass
    shares, labels = pmb.get_variable_inclusion(idata, X, model)
    assert isinstance(labels, list) and shares.shape == (3,)
    keyword = pmb.get_variable_inclusion(idata, X=X)  # pymc-bart's call with X by keyword: its tuple
    np.testing.assert_array_equal(keyword[0], shares)
    a = pmb.compute_variable_importance(idata, mu, X, model, samples=5, random_seed=0)
    b = pmb.compute_variable_importance(idata, mu, X=X, samples=5, random_seed=0)
    np.testing.assert_array_equal(a["r2_mean"], b["r2_mean"])
    with pytest.raises(TypeError, match="model must be a PyMC model"):
        pmb.compute_variable_importance(idata, mu, X, "VI")
    assert pmb.compute_variable_importance(idata, mu, X, samples=1000)["preds"].shape[1] == 1000  # > stored draws
    plt.close("all")
    pmb.plot_pdp(mu, X, fitted["Y"], var_idx=[0], samples=5)
    assert plt.get_fignums()  # on pyplot: plt.show() and notebooks find it
    with pytest.raises(TypeError, match="by keyword"):
        pmb.plot_pdp(mu, X, fitted["Y"], "linear")
    other = idata.copy()
    with pytest.raises(ValueError, match="2 InferenceData objects"):
        pmb.plot_ice(mu, X, var_idx=[0], samples=5)
    del other
    assert len(pmb.plot_ice(mu, X, var_idx=[0], samples=5)) == 1
