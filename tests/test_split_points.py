"""``split_points="range"``: cuts on an equal-width grid, so codes have holes between data values.

The kernels draw a cut uniformly over ``[min_code, max_code)`` of a node, holes included; these
tests prove that the samplers stay exact on such codes (enumeration in tests/helpers/exact.py counts every
integer cut too) and that ``pmt.BART(..., split_points="range")`` really changes the prior.
"""

import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers.model.binning import bin_columns
from tests.helpers.exact import (
    empirical,
    exact_partition_posterior,
    exact_partition_prior,
    partition_keys_from_values,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.kernel_chain import chain_draws

# tiny_data's codes {0,1,2} x {0,1} mapped to uneven values: the gap 0.3 -> 1.0 is 3.5x wider
X_VALUES = (np.array([0.0, 0.3, 1.0]), np.array([0.0, 1.0]))
MAX_BINS = 5


def _range_data(seed=0):
    codes, r, w = tiny_data(seed)
    X = np.column_stack([X_VALUES[0][codes[:, 0]], X_VALUES[1][codes[:, 1]]])
    grid = bin_columns(X, MAX_BINS, "range").codes.T.astype(np.int64)
    return X, grid, r, w


def test_range_grid_codes_and_thresholds():
    X, grid, _, _ = _range_data()
    b = bin_columns(X, MAX_BINS, "range")
    assert sorted(set(grid[:, 0])) == [0, 1, 4] and sorted(set(grid[:, 1])) == [0, 4]
    np.testing.assert_allclose(b.thresholds[0], [0.2, 0.4, 0.6, 0.8])
    for v in range(2):  # the split code <= c is x <= thresholds[c], for every cut
        for c, t in enumerate(b.thresholds[v]):
            np.testing.assert_array_equal(grid[:, v] <= c, X[:, v] <= t)
    const = bin_columns(np.ones((4, 1)), 8, "range")
    assert const.thresholds[0].size == 0 and not const.codes.any()


def test_range_prior_differs_from_data_prior():
    """The wide gap gets 3/4 of the root's column-0 cut mass instead of 1/2: detectably different."""
    _, grid, _, _ = _range_data()
    codes, _, _ = tiny_data(0)
    exact_range = exact_partition_prior(grid, 0.95, 2.0)
    exact_data = exact_partition_prior(codes, 0.95, 2.0)
    assert tv_distance(exact_range, exact_data) > 3 * tv_threshold(exact_range, 6000)


@pytest.mark.parametrize(
    ("step_cls", "options", "thin"),
    [(pmt.CGMStep, {}, 20), (pmt.GrowPruneStep, {}, 200),
     (pmt.PGBARTStep, {"num_particles": 5}, 20),
     (pmt.PGBARTStep, {"num_particles": 5, "proposal": "optimal", "resampling": "systematic"}, 20)],
    ids=["cgm", "growprune", "pg-prior", "pg-optimal-systematic"],
)
def test_kernels_exact_on_range_codes(step_cls, options, thin):
    """Grow/prune needs thinning 200 here (at 50 its TV sat at the iid threshold; at 200 it is
    0.012-0.018 against 0.026 over three seeds): a cut moved across the wide gap only by prune+grow."""
    _, grid, r, _ = _range_data()
    w = np.ones(len(r))
    exact = exact_partition_posterior(grid, r, w, 0.95, 2.0, 0.0, 1.0)
    keys = chain_draws(step_cls, options, grid, r, w, 10000, thin, seed=21)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


def test_pm_sample_uses_range_split_points():
    """No likelihood: the draws recover the range prior (which test_range_prior_differs_from_data_prior
    shows is far from the default prior at this sample size)."""
    X, grid, r, _ = _range_data()
    with pm.Model():
        mu = pmt.BART("mu", X, r, m=1, mu0=0.0, sigma_mu=1.0, max_bins=MAX_BINS, split_points="range")
        idata = pm.sample(tune=100, draws=24000, chains=1, random_seed=6, progressbar=False,
                          step=[pmt.CGMStep([mu])], compute_convergence_checks=False)
    keys = partition_keys_from_values(idata.posterior["mu"].values[0][::6])
    exact = exact_partition_prior(grid, 0.95, 2.0)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


def test_split_points_is_checked():
    X, _, r, _ = _range_data()
    with pm.Model(), pytest.raises(ValueError, match="split_points"):
        pmt.BART("mu", X, r, split_points="quantile")
