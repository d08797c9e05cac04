"""A BART variable with several outputs (``shape=(k, n)`` or two dims): one forest per output, each
updated given the others' current values.

Exactness, end to end through ``pm.sample``:

* two outputs of one tree each whose sum is the mean of a Normal likelihood are the m = 2 BART of
  tests/test_matrix.py in another form, so the pair of partitions must follow the enumeration of
  every pair (and not the product of each tree's posterior alone: the check fails on it);
* outputs under separate likelihoods (a Bernoulli-logit one, corrected by Metropolis-Hastings, and a
  Normal one, exact) must each follow their own single-tree posterior by enumeration x quadrature.

Thresholds: the 99.9% quantile of the TV distance of iid multinomial samples of the same size.
"""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special

import pymc_treesamplers as pmt
from tests.helpers.exact import (
    empirical,
    exact_pair_posterior,
    exact_partition_posterior,
    partition_keys_from_values,
    quadrature_leaf_term,
    tiny_data,
    tv_distance,
    tv_threshold,
)

CODES, R, _ = tiny_data(0)


def _sample(model_fn, step_cls, draws, seed, **options):
    with pm.Model() as model:
        b = model_fn()
        idata = pm.sample(tune=100, draws=draws, chains=1, cores=1, random_seed=seed, progressbar=False,
                          step=[step_cls([b], **options)], compute_convergence_checks=False)
    return model, idata


@pytest.mark.parametrize("step_cls, thin", [(pmt.CGMStep, 10), (pmt.PGBARTStep, 20)], ids=["cgm", "pg"])
def test_outputs_summed_in_a_mean_match_pair_enumeration(step_cls, thin):
    """Each output's tree is updated given the other's current value: the pair of partitions must
    follow the joint posterior of the sum (thinning: the m = 2 registry entries' 10-20)."""
    codes, r = CODES[:5], R[:5]
    n_kept = 3000

    def build():
        b = pmt.BART("b", codes.astype(float), r, m=1, mu0=0.0, sigma_mu=1.0, shape=(2, 5))
        pm.Normal("y", b[0] + b[1], 1.0, observed=r)
        return b

    _, idata = _sample(build, step_cls, n_kept * thin, seed=3)
    values = idata.posterior["b"].values[0, ::thin]
    keys = list(zip(partition_keys_from_values(values[:, 0]), partition_keys_from_values(values[:, 1]),
                    strict=True))
    exact = exact_pair_posterior(codes, r, np.ones(5), 0.95, 2.0, 0.0, 1.0)
    tv, threshold = tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"
    # the check can fail: each output as if it saw the data alone
    alone = exact_partition_posterior(codes, r, np.ones(5), 0.95, 2.0, 0.0, 1.0)
    product = {(a, c): pa * pc for a, pa in alone.items() for c, pc in alone.items()}
    assert tv_distance(product, empirical(keys)) > threshold


def test_outputs_under_their_own_likelihoods_match_enumeration():
    """Output 0 under a Bernoulli-logit likelihood (Metropolis-Hastings corrected working model),
    output 1 under a Normal one (exact pseudo-data): each output's partitions follow its own
    single-tree posterior (thinning: tests/test_families.py's 2 x CGM's registry thinning for the logit)."""
    y_bin = (R > 0.25).astype(float)
    n_kept, thin = 4000, 40

    def build():
        b = pmt.BART("b", CODES.astype(float), R, m=1, mu0=0.0, sigma_mu=1.0, shape=(2, 7))
        pm.Bernoulli("y0", logit_p=b[0], observed=y_bin)
        pm.Normal("y1", b[1], 0.5, observed=R)
        return b

    model, idata = _sample(build, pmt.CGMStep, n_kept * thin, seed=5)
    values = idata.posterior["b"].values[0, ::thin]
    logit = quadrature_leaf_term(lambda rows, mu: sum(special.log_expit(mu if y_bin[i] else -mu) for i in rows),
                                 0.0, 1.0)
    exact = [exact_partition_posterior(CODES, R, np.ones(7), 0.95, 2.0, 0.0, 1.0, leaf_term=logit),
             exact_partition_posterior(CODES, R, np.full(7, 4.0), 0.95, 2.0, 0.0, 1.0)]
    for out in range(2):
        dist = empirical(partition_keys_from_values(values[:, out]))
        tv, threshold = tv_distance(exact[out], dist), tv_threshold(exact[out], n_kept)
        assert tv < threshold, f"output {out}: TV {tv:.4f} >= threshold {threshold:.4f}"
    # the outputs' posteriors differ enough that swapping them is detected
    swapped = empirical(partition_keys_from_values(values[:, 1]))
    assert tv_distance(exact[0], swapped) > tv_threshold(exact[0], n_kept)
    accept = float(idata.sample_stats["b_mh_accept"].mean())
    assert 0.5 < accept < 1.0  # only output 0 is corrected; output 1 always keeps its proposal


@pytest.fixture(scope="module")
def two_outputs(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 120
    X = rng.uniform(size=(n, 2))
    f = np.stack([np.sin(4 * X[:, 0]), -1.0 + X[:, 1]])
    y = rng.normal(f[0], np.exp(f[1]))
    with pm.Model(coords={"part": ["mean", "log_sd"], "obs": np.arange(n)}) as model:
        Xd = pm.Data("X", X, dims=("obs", "col"))
        b = pmt.BART("b", Xd, y, m=20, dims=("part", "obs"))
        pm.Normal("y", b[0], pm.math.exp(b[1]), observed=y, dims="obs")
        idata = pm.sample(tune=150, draws=100, chains=2, cores=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    path = tmp_path_factory.mktemp("outputs") / "fit.nc"
    idata.to_netcdf(path)
    return model, X, f, az.from_netcdf(path)


def test_each_output_gets_its_working_model_and_recovers_its_function(two_outputs):
    model, X, f, idata = two_outputs
    post = idata.posterior["b"]
    assert post.dims == ("chain", "draw", "part", "obs") and post.shape == (2, 100, 2, 120)
    mean = post.mean(("chain", "draw")).values
    assert np.corrcoef(mean[0], f[0])[0, 1] > 0.85
    assert np.corrcoef(mean[1], f[1])[0, 1] > 0.5  # a log sd from 120 rows
    with model:
        step = pmt.CGMStep([model["b"]])
    # the mean is Gaussian given the log sd: exact pseudo-data; the log sd is the Normal log-sd family
    assert [type(out.working).__name__ for out in step.outputs] == ["GaussianWorkingModel", "FamilyWorkingModel"]
    assert step.outputs[1].working.family == "Normal (log link)"
    assert step.outputs[0].prior != step.outputs[1].prior  # a leaf prior per output, on its own scale


def test_predict_returns_every_output_draw_matched_after_netcdf(two_outputs):
    model, X, _, idata = two_outputs
    np.testing.assert_array_equal(pmt.predict(idata, X, "b"), idata.posterior["b"].values)
    X_new = np.random.default_rng(3).uniform(size=(30, 2))
    assert pmt.predict(idata, X_new, "b").shape == (2, 100, 2, 30)
    with model:
        pm.set_data({"X": X_new}, coords={"obs": np.arange(500, 530)})
        pp = pmt.sample_posterior_predictive(idata, var_names=["b", "y"], predictions=True, random_seed=1,
                                             progressbar=False)
    assert pp.predictions["b"].dims == ("chain", "draw", "part", "obs")
    np.testing.assert_array_equal(pp.predictions["b"].values, pmt.predict(idata, X_new, "b"))
    assert pp.predictions["y"].shape == (2, 100, 30)


def test_a_corrupted_output_names_its_draw(two_outputs):
    _, X, _, idata = two_outputs
    bad = idata.copy()
    stats = bad["sample_stats"].to_dataset()
    forests = stats["b_forest"].values.copy()  # (chain, draw, 1): a string stat after netCDF
    forests[1, 7, 0] = str(forests[1, 7, 0]).split(",")[0]  # one output missing in one draw
    bad["sample_stats"] = stats.assign(b_forest=(stats["b_forest"].dims, forests))
    with pytest.raises(ValueError, match=r"chain 1, draw 7"):
        pmt.predict(bad, X, "b")


def test_prior_draws_have_one_forest_per_output():
    X = np.random.default_rng(0).uniform(size=(40, 2))
    with pm.Model():
        b = pmt.BART("b", X, X[:, 0], m=5, shape=(3, 40))
        draws = pm.draw(b, draws=4, random_seed=1)
    assert draws.shape == (4, 3, 40)
    assert not np.allclose(draws[:, 0], draws[:, 1])


def test_bad_shapes_and_pymc_bart_keywords_are_clear_errors():
    X = np.random.default_rng(0).uniform(size=(10, 2))
    y = X[:, 0]
    with pm.Model():
        with pytest.raises(ValueError, match=r"shape must be \(10,\).*or \(k, 10\)"):
            pmt.BART("a", X, y, shape=(2, 11))
        with pytest.raises(ValueError, match=r"shape must be"):
            pmt.BART("b", X, y, shape=(2, 2, 10))
        with pytest.raises(ValueError, match="one forest per output"):
            pmt.BART("c", X, y, shape=(2, 10), separate_trees=False)
        d = pmt.BART("d", X, y, shape=(2, 10), separate_trees=True)
        assert d.type.shape == (2, 10)
