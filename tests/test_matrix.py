"""Every sampler configuration of the registry (tests/helpers/samplers.py) against exact answers, end to end.

For each entry: its kernel chain against enumeration of every tree on tiny data (m = 1), the tree
prior under a flat likelihood, the sum of two trees against enumeration of every pair of
partitions (m = 2: the backfitting itself), and, for one configuration per step class,
``pm.sample`` against enumeration, same-seed reproducibility and independent chains.
Thresholds: the 99.9% quantile of the TV distance of iid multinomial samples of the same size
(tests/helpers/exact.py), never widened. The tests marked boundscheck run again in `make test`'s checked pass,
with bounds checks and blocks of 2 rows, so the long-range row paths face enumeration too (tests/test_rows.py).
"""

import functools

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from tests.helpers.exact import (
    empirical,
    exact_pair_posterior,
    exact_partition_posterior,
    exact_partition_prior,
    partition_keys_from_values,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.fits import fit_friedman
from tests.helpers.kernel_chain import chain_draws
from tests.helpers.samplers import MAIN, SAMPLERS


def _assert_close(exact, keys):
    tv = tv_distance(exact, empirical(keys))
    threshold = tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def _entries(axis):
    return [pytest.param(s, id=s.name) for s in SAMPLERS if getattr(s, axis) is not None]


@pytest.mark.boundscheck
@pytest.mark.parametrize("s", _entries("posterior"))
def test_posterior_matches_enumeration(s):
    weight, n_draws, thin, seed = s.posterior
    codes, r, _ = tiny_data(0)
    w = np.full(len(r), weight)
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    _assert_close(exact, chain_draws(s.step, s.options, codes, r, w, n_draws, thin, seed))


@pytest.mark.boundscheck
@pytest.mark.parametrize("s", _entries("prior"))
def test_prior_recovered_under_flat_likelihood(s):
    n_draws, thin, seed = s.prior
    codes, r, _ = tiny_data(0)
    exact = exact_partition_prior(codes, 0.95, 2.0)
    _assert_close(exact, chain_draws(s.step, s.options, codes, r, np.zeros(len(r)), n_draws, thin, seed))


@pytest.mark.boundscheck
@pytest.mark.parametrize("s", [pytest.param(s, id=s.name) for s in SAMPLERS])
def test_one_shared_weight_is_the_same_chain_as_a_weight_per_row(s):
    # the steps pass one sigma's pseudo-data as a single weight (the row passes then read none); with w = 4,
    # a power of two, both forms give the same sums bit for bit, so the chains must agree draw for draw, and the
    # enumeration tests above (run on the shared form) hold for the per-row form too
    codes, r, _ = tiny_data(0)
    run = functools.partial(chain_draws, s.step, s.options, codes, r, n_draws=300, thin=2, seed=7)
    shared = run(w=np.full(len(r), 4.0))
    assert shared == run(w=np.full(len(r), 4.0), shared_weight=False)
    assert shared != run(w=np.full(len(r), 1.0), shared_weight=False)  # the comparison can fail


PAIR_ROWS = 5  # 18 partitions of the first five rows of the tiny data: 324 pairs


@functools.cache
def _pair_case():
    codes, r, _ = tiny_data(0)
    codes, r, w = codes[:PAIR_ROWS], r[:PAIR_ROWS], np.ones(PAIR_ROWS)
    return codes, r, w, exact_pair_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)


@functools.cache
def _pair_draws(name):
    s = next(s for s in SAMPLERS if s.name == name)
    n_draws, thin, seed = s.pair
    codes, r, w, _ = _pair_case()
    return chain_draws(s.step, s.options, codes, r, w, n_draws, thin, seed, m=2)


@pytest.mark.boundscheck
@pytest.mark.parametrize("s", _entries("pair"))
def test_two_trees_match_pair_enumeration(s):
    """m = 2: each tree is updated given the other's fit (Bayesian backfitting), so the pair of
    partitions must follow the joint posterior of the sum, not each tree's own."""
    _assert_close(_pair_case()[3], _pair_draws(s.name))


@pytest.mark.boundscheck
def test_two_trees_wrong_targets_are_detected():
    """The m = 2 check can fail: CGM's pair draws against the product of the two trees' posteriors
    as if each tree saw the data alone, and against the pair posterior under a leaf prior 1.5x wider."""
    codes, r, w, exact = _pair_case()
    keys = _pair_draws("cgm")
    threshold = tv_threshold(exact, len(keys))
    alone = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    product = {(a, b): pa * pb for a, pa in alone.items() for b, pb in alone.items()}
    wider = exact_pair_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.5)
    for wrong in (product, wider):
        assert tv_distance(wrong, empirical(keys)) > threshold


@pytest.mark.boundscheck
@pytest.mark.parametrize("s", [pytest.param(s, id=s.name) for s in MAIN])
def test_pm_sample_matches_enumeration(s):
    """m = 1, sigma fixed: the partition histogram of pm.sample's own draws matches enumeration."""
    sigma, n_kept, thin, seed, options = s.pm_sample
    codes, r, _ = tiny_data(0)
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), r, m=1, mu0=0.0, sigma_mu=1.0)
        pm.Normal("y", mu, sigma, observed=r)
        idata = pm.sample(tune=100, draws=n_kept * thin, chains=1, cores=1, random_seed=seed, progressbar=False,
                          step=[s.step([mu], **(s.options | options))], compute_convergence_checks=False)
    keys = partition_keys_from_values(idata.posterior["mu"].values[0][::thin])
    exact = exact_partition_posterior(codes, r, np.full(len(r), 1 / sigma**2), 0.95, 2.0, 0.0, 1.0)
    _assert_close(exact, keys)


@pytest.mark.boundscheck
@pytest.mark.parametrize("s", [pytest.param(s, id=s.name) for s in MAIN])
def test_same_seed_same_draws_and_chains_differ(s):
    _, _, a = fit_friedman(s.step, s.options, seed=7)
    _, _, b = fit_friedman(s.step, s.options, seed=7)
    _, _, c = fit_friedman(s.step, s.options, seed=8)
    mu_a = a.posterior["mu"].values
    np.testing.assert_array_equal(mu_a, b.posterior["mu"].values)
    np.testing.assert_array_equal(a.posterior["sigma"].values, b.posterior["sigma"].values)
    assert not np.array_equal(mu_a[0], mu_a[1])
    assert not np.array_equal(mu_a, c.posterior["mu"].values)


@pytest.mark.parametrize("s", [pytest.param(s, id=s.name) for s in MAIN])
def test_stats_are_named_per_variable_and_survive_netcdf(s, tmp_path):
    """Every stat is ``mu_<stat>`` (none collides with NUTS's ``tree_depth``); the forest stat
    reproduces the draws after a netCDF round trip."""
    _, X, idata = fit_friedman(s.step, s.options, draws=20, tune=20)
    stats = idata.sample_stats
    declared = set(s.stats) | {"tree_depth", "n_leaves", "accept", "split_counts", "forest"}
    assert {f"mu_{name}" for name in declared} <= set(stats.data_vars)
    for name, plausible in s.stats.items():
        assert plausible(float(stats[f"mu_{name}"].mean())), name
    assert float(stats["tree_depth"].max()) >= 1  # NUTS's own stat, untouched
    assert float(stats["mu_accept"].mean()) > 0  # trees do move
    assert stats["mu_split_counts"].shape == (2, 20, 5)
    path = tmp_path / "fit.nc"
    idata.to_netcdf(path)
    again = az.from_netcdf(path)
    np.testing.assert_array_equal(pmt.predict(again, X, "mu"), idata.posterior["mu"].values)
