"""Every plot renders to a PNG from a real fit (reloaded from netCDF: no model needed). The PNGs are
written under ``PMT_PLOT_DIR`` when that is set, so a person can look at them."""

import os

import arviz as az
import numpy as np
import pymc as pm
import pytest
from matplotlib.figure import Figure

import pymc_treesamplers as pmt
from pymc_treesamplers import diagnostics, plots
from tests.helpers.fits import fit_friedman


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    _, X, idata = fit_friedman(pmt.CGMStep, draws=60, tune=60, n=150, m=20)
    path = tmp_path_factory.mktemp("plots") / "fit.nc"
    idata.to_netcdf(path)
    return X, idata, az.from_netcdf(path)


@pytest.fixture
def save(tmp_path):
    out = os.environ.get("PMT_PLOT_DIR") or str(tmp_path)

    def write(fig, name):
        assert isinstance(fig, Figure)
        path = os.path.join(out, f"{name}.png")
        fig.savefig(path, dpi=80)
        assert os.path.getsize(path) > 5000  # more than an empty canvas
        return fig

    return write


def test_inclusion_importance_and_submodels(fitted, save):
    X, _, idata = fitted
    fig = save(plots.plot_variable_inclusion(idata, labels=["a", "b", "c", "d", "e"]), "inclusion")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()][0] in "abcde"
    vi = pmt.compute_variable_importance(idata, X, samples=20, random_seed=0)
    axis = plots.plot_variable_importance(vi)  # pymc-bart's return: the Axes
    save(axis.figure, "importance")
    assert axis.get_ylabel().startswith("R²")
    axes = plots.plot_scatter_submodels(vi, submodels=[0, 2, 4])  # pymc-bart's: an array of Axes
    save(axes[0].figure, "submodels")
    assert len(axes) == 3


def test_tree_size_and_predicted_observed(fitted, save):
    X, _, idata = fitted
    fig = save(plots.plot_tree_size(idata), "tree_size")
    assert len(fig.axes[0].get_lines()) == 2  # one line per chain
    y = idata["observed_data"]["y"].values if "observed_data" in idata.children else None
    fig = save(plots.plot_predicted_observed(idata, y), "predicted_observed")
    assert fig.axes[0].get_xlabel() == "observed"


def test_pdp_ice_and_the_2d_surface(fitted, save):
    X, _, idata = fitted
    fig = save(plots.plot_pdp(idata, X, var_idx=[0, 3, (0, 1)], grid_points=10, samples=30, random_seed=1), "pdp")
    # the 1-D panels carry a band (PolyCollection) and a mean line; Friedman's x3 enters as 10 x3: rising
    band_axis = fig.axes[1]
    assert band_axis.collections and band_axis.get_lines()
    curve = band_axis.get_lines()[0].get_ydata()
    assert curve[-1] - curve[0] > 3.0
    fig = save(plots.plot_ice(idata, X, var_idx=[0, 3], grid_points=8, instances=15, samples=20, random_seed=1),
               "ice")
    assert len(fig.axes[0].get_lines()) == 16  # 15 instances and their mean


def test_pdp_of_two_outputs_and_the_sampler_comparison(fitted, save):
    X, idata, again = fitted
    rng = np.random.default_rng(0)
    Xs = rng.uniform(size=(80, 2))
    with pm.Model():
        b = pmt.BART("b", Xs, Xs[:, 0], m=10, shape=(2, 80))
        pm.Normal("y", b[0], pm.math.exp(b[1]), observed=np.sin(4 * Xs[:, 0]) + rng.normal(0, 0.2, 80))
        two = pm.sample(tune=40, draws=40, chains=1, random_seed=2, progressbar=False,
                        compute_convergence_checks=False)
    fig = save(plots.plot_pdp(two, Xs, "b", var_idx=[0], grid_points=8, samples=20), "pdp_outputs")
    assert len(fig.axes[0].get_legend().get_texts()) == 2
    table = diagnostics.compare_samplers({"first": idata, "reloaded": again})
    fig = save(plots.plot_compare_samplers(table), "compare")
    assert len(fig.axes) == 2


def test_backend_other_than_matplotlib_is_refused(fitted):
    _, _, idata = fitted
    plots.plot_tree_size(idata, backend="matplotlib")
    with pytest.raises(ValueError, match="matplotlib only"):
        plots.plot_tree_size(idata, backend="bokeh")


def test_bad_arguments_are_named(fitted):
    X, _, idata = fitted
    with pytest.raises(ValueError, match=r"var_idx .* \[0, 5\)"):
        plots.plot_pdp(idata, X, var_idx=[5])
    with pytest.raises(ValueError, match="var_idx"):
        plots.plot_ice(idata, X, var_idx=[(0, 7)])
    with pytest.raises(ValueError, match="hdi_prob"):
        plots.plot_pdp(idata, X, var_idx=[0], grid_points=3, samples=2, hdi_prob=1.5)
    with pytest.raises(ValueError, match="samples"):
        plots.plot_pdp(idata, X, var_idx=[0], samples=0)
