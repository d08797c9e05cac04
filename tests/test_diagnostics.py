"""pmt.diagnostics: hand-computed values on tiny traces, and every function on a real fit after a
netCDF round trip (no model needed)."""

import arviz as az
import numpy as np
import pandas as pd
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers import diagnostics as dg
from tests.helpers.fits import fit_friedman


def _tiny():
    counts = np.array([[[3, 1, 0], [1, 1, 0]], [[2, 2, 0], [2, 2, 0]]])
    mu = np.arange(2 * 2 * 4, dtype=float).reshape(2, 2, 4)
    stats = {"mu_split_counts": counts, "mu_accept": np.array([[0.5, 0.7], [0.1, 0.3]]),
             "mu_mh_accept": np.array([[1.0, 0.0], [1.0, 1.0]]), "mu_n_leaves": np.array([[2.0, 3.0], [4.0, 5.0]]),
             "mu_tree_depth": np.array([[1.0, 1.0], [2.0, 2.0]]), "mu_forest": np.full((2, 2), "")}
    return az.from_dict({"posterior": {"mu": mu}, "sample_stats": stats})


def test_inclusion_by_hand():
    inc = pmt.get_variable_inclusion(_tiny(), labels=["a", "b", "c"])
    # chain 0: 4, 2, 0 splits; chain 1: 4, 4, 0; together 8, 6, 0 of 14
    assert list(inc.index) == ["a", "b", "c"]
    np.testing.assert_allclose(inc["inclusion"], [8 / 14, 6 / 14, 0.0])
    np.testing.assert_allclose(inc["chain_0"], [4 / 6, 2 / 6, 0.0])
    np.testing.assert_allclose(inc["chain_1"], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(inc["sd_chains"], [np.std([4 / 6, 0.5]), np.std([2 / 6, 0.5]), 0.0])
    X = pd.DataFrame(np.zeros((2, 3)), columns=["u", "v", "w"])
    assert list(pmt.get_variable_inclusion(_tiny(), "mu", X=X).index) == ["u", "v", "w"]
    with pytest.raises(ValueError, match="labels has 2 names"):
        pmt.get_variable_inclusion(_tiny(), labels=["a", "b"])


def test_sampler_stats_and_tree_sizes_by_hand():
    table = dg.sampler_stats(_tiny())
    assert list(table.index) == ["chain 0", "chain 1", "all"]
    np.testing.assert_allclose(table["accept"], [0.6, 0.2, 0.4])
    np.testing.assert_allclose(table["mh_accept"], [0.5, 1.0, 0.75])
    np.testing.assert_allclose(table["n_leaves"], [2.5, 4.5, 3.5])
    assert "split_counts" not in table and "forest" not in table
    sizes = dg.tree_size_trace(_tiny())
    np.testing.assert_array_equal(sizes["tree_depth"].values, [[1, 1], [2, 2]])


def test_f_convergence_by_hand():
    table = dg.f_convergence(_tiny(), rows=[1, 3])
    mu = _tiny()["posterior"]["mu"].values
    np.testing.assert_allclose(table["mean"], mu[..., [1, 3]].mean(axis=(0, 1)))
    np.testing.assert_allclose(table["sd"], mu[..., [1, 3]].std(axis=(0, 1)))
    rng = np.random.default_rng(0)
    apart = rng.normal(size=(4, 300, 2)) + np.array([0.0, 0.0, 3.0, 3.0])[:, None, None]
    assert (dg.f_convergence(az.from_dict({"posterior": {"mu": apart}}))["r_hat"] > 1.5).all()
    with pytest.raises(ValueError, match=r"rows must lie in \[0, 4\)"):
        dg.f_convergence(_tiny(), rows=[4])


def test_missing_variable_is_named():
    with pytest.raises(ValueError, match="no 'nu_split_counts'.*'mu'"):
        pmt.get_variable_inclusion(_tiny(), "nu")


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    _, X, idata = fit_friedman(pmt.CGMStep, draws=40, tune=40)
    path = tmp_path_factory.mktemp("diag") / "fit.nc"
    idata.to_netcdf(path)
    return X, idata, az.from_netcdf(path)


def test_every_diagnostic_on_a_reloaded_fit(fitted):
    X, idata, again = fitted
    inc = pmt.get_variable_inclusion(again)
    assert inc["inclusion"].sum() == pytest.approx(1.0)
    assert set(inc.index[:2]) & {"x0", "x1", "x3"}  # Friedman #1's strong covariates lead
    table = dg.sampler_stats(again)
    assert 0.0 < table.loc["all", "accept"] <= 1.0
    assert dg.tree_size_trace(again)["n_leaves"].shape == (2, 40)
    at_new = dg.f_convergence(again, X=X[:5], rows=range(5))
    np.testing.assert_allclose(at_new["mean"], pmt.predict(again, X[:5], "mu").mean(axis=(0, 1)))
    in_sample = dg.f_convergence(again, rows=range(5))
    np.testing.assert_allclose(in_sample["mean"], at_new["mean"])
    both = dg.compare_samplers({"cgm": idata, "cgm again": again})
    assert list(both.columns) == ["sampling_s", "ess_f", "max_r_hat_f", "ess_f_per_s", "ess_sigma",
                                  "ess_sigma_per_s", "r_hat_sigma"]
    assert (both["ess_f_per_s"] > 0).all() and both.iloc[0]["ess_sigma"] == both.iloc[1]["ess_sigma"]


def test_variable_importance_is_draw_matched(fitted):
    X, _, again = fitted
    vi = pmt.compute_variable_importance(again, X, samples=20, random_seed=1)
    order = list(pmt.get_variable_inclusion(again).index)
    assert list(vi["labels"]) == [order[0]] + [f"+ {name}" for name in order[1:]]  # pymc-bart's labels
    assert vi["names"] == order
    full = pmt.predict(again, X, "mu").reshape(-1, len(X))[vi["draws"]]
    np.testing.assert_array_equal(vi["preds_all"], full)
    np.testing.assert_allclose(vi["r2_mean"][-1], 1.0)  # all covariates: the full model itself
    assert vi["r2_hdi"].shape == (5, 2) and (vi["r2_hdi"][:, 0] <= vi["r2_mean"] + 1e-12).all()
    assert vi["r2_mean"][0] < 0.9  # one covariate of Friedman #1 does not explain the fit
    back = pmt.compute_variable_importance(again, X, method="backward", samples=20, random_seed=1)
    assert sorted(back["indices"]) == list(range(5)) and back["r2_mean"][-1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="fixed"):
        pmt.compute_variable_importance(again, X, method="backward_VI", fixed=5)
    with pytest.raises(ValueError, match="method"):
        pmt.compute_variable_importance(again, X, method="forward")
