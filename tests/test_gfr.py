"""Grow-from-root (XBART) sweeps: the kernel's split law, the warm start of every step (kept draws still
exact, m = 1 and m = 2, and none of them from the warm start), and the stand-alone GFRRegressor.

Thresholds: the 99.9% quantile of the TV distance of iid multinomial samples of the same size
(tests/helpers/exact.py), never widened.
"""

import functools

import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers.engine.updates.gfr import new_gfr_scratch
from pymc_treesamplers.results.storage import decode_forest
from tests.helpers.exact import (
    empirical,
    exact_pair_posterior,
    exact_partition_posterior,
    partition_keys_from_values,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.fits import forest_partition_keys
from tests.helpers.kernel_chain import chain_draws
from tests.helpers.samplers import MAIN


class _GFROnly(pmt.CGMStep):
    """A step whose kernel chain is the grow-from-root sweep itself (its scratch record is GFR's)."""

    def new_scratch(self, codes, m):
        return new_gfr_scratch(codes)


class _LeakyWarmStart(pmt.CGMStep):
    """Deliberately wrong: the warm start never ends, so every kept draw is a grow-from-root sweep."""

    def _warming(self) -> bool:
        return True


def _tv_check(exact, keys):
    return tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))


# ------------------------------------------------------------------------------------------ kernel


@functools.cache
def _gfr_draws():
    codes, r, w = tiny_data(0)
    # m = 1 and fixed pseudo-data: each sweep regrows the tree from nothing, so the draws are independent
    return chain_draws(_GFROnly, {}, codes, r, w, 20_000, 1, 3, beta=BETA_ONE_SPLIT)


BETA_ONE_SPLIT = 60.0  # p_split at depth 1 is 0.95 * 2^-60: the children stay leaves


def test_gfr_split_law_is_the_exact_one_split_posterior():
    """With the children held leaves by the prior, a grow-from-root draw is the exact posterior over
    "root alone" and "one split" (its construction: every cut weighed by prior rule probability times the
    children's marginal likelihoods, stopping by the prior stop probability times the node's)."""
    codes, r, w = tiny_data(0)
    exact = exact_partition_posterior(codes, r, w, 0.95, BETA_ONE_SPLIT, 0.0, 1.0)
    tv, threshold = _tv_check(exact, _gfr_draws())
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_gfr_split_law_test_can_fail():
    """The same draws against a leaf prior 1.5x wider, and against the deeper trees of beta = 2 (where GFR is
    a greedy approximation, not the posterior): both must fail the threshold."""
    codes, r, w = tiny_data(0)
    keys = _gfr_draws()
    for wrong in (exact_partition_posterior(codes, r, w, 0.95, BETA_ONE_SPLIT, 0.0, 1.5),
                  exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)):
        tv, threshold = _tv_check(wrong, keys)
        assert tv > threshold


def test_gfr_finds_a_strong_split_at_the_root():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(400, 3))
    y = np.where(X[:, 1] > 0.3, 2.0, -2.0) + rng.normal(0, 0.1, 400)
    reg = pmt.GFRRegressor(m=1, sweeps=5, burn=4, random_state=1).fit(X, y)
    _, counts, var, val = decode_forest(reg.forests_[0])
    assert var[0] == 1 and abs(val[0] - 0.3) < 0.02


# ---------------------------------------------------------------------------------- warm start


WARM, TUNE = 50, 100


@pytest.mark.parametrize("s", [pytest.param(s, id=s.name) for s in MAIN])
def test_warm_start_kept_draws_match_enumeration(s):
    """m = 1, sigma fixed, ``warm_start`` on: pm.sample's kept draws match enumeration."""
    sigma, n_kept, thin, seed, options = s.pm_sample
    codes, r, _ = tiny_data(0)
    keys = partition_keys_from_values(_sample(s.step, s.options | options | {"warm_start": WARM}, codes, r, sigma,
                                              1, n_kept * thin, seed).posterior["mu"].values[0][::thin])
    exact = exact_partition_posterior(codes, r, np.full(len(r), 1 / sigma**2), 0.95, 2.0, 0.0, 1.0)
    tv, threshold = _tv_check(exact, keys)
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


PAIR_ROWS, PAIR_KEPT, PAIR_THIN = 5, 3000, 20


@pytest.mark.parametrize("s", [pytest.param(s, id=s.name) for s in MAIN])
def test_warm_start_kept_pairs_match_enumeration(s):
    """m = 2 (the backfitting), sigma = 1, ``warm_start`` on: the pair of row partitions of pm.sample's kept
    draws, read from the stored forests, follows the joint posterior of the sum of two trees."""
    codes, r, _ = tiny_data(0)
    codes, r = codes[:PAIR_ROWS], r[:PAIR_ROWS]
    options = s.options | s.pm_sample[4] | {"warm_start": WARM}
    idata = _sample(s.step, options, codes, r, 1.0, 2, PAIR_KEPT * PAIR_THIN, 1)
    exact = exact_pair_posterior(codes, r, np.ones(PAIR_ROWS), 0.95, 2.0, 0.0, 1.0)
    tv, threshold = _tv_check(exact, forest_partition_keys(idata, "mu", codes, PAIR_THIN))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_a_warm_start_that_leaks_into_the_kept_draws_fails():
    """The enumeration test catches a warm start that goes on after tuning: its kept draws are
    grow-from-root trees, which are not the posterior."""
    sigma, n_kept, thin, seed, _ = next(s for s in MAIN if s.name == "cgm").pm_sample
    codes, r, _ = tiny_data(0)
    keys = partition_keys_from_values(_sample(_LeakyWarmStart, {"warm_start": WARM}, codes, r, sigma, 1,
                                              n_kept * thin, seed).posterior["mu"].values[0][::thin])
    exact = exact_partition_posterior(codes, r, np.full(len(r), 1 / sigma**2), 0.95, 2.0, 0.0, 1.0)
    tv, threshold = _tv_check(exact, keys)
    assert tv > threshold


@pytest.mark.parametrize(("tune", "warm"), [(3, 5), (10, 4), (10, 0)])
def test_warm_sweeps_are_the_first_tuning_draws_only(tune, warm):
    """The ``mu_warm`` stat: the first ``min(warm_start, tune)`` tuning draws of every chain, never a kept draw."""
    codes, r, _ = tiny_data(0)
    idata = _sample(pmt.CGMStep, {"warm_start": warm}, codes, r, 1.0, 1, 6, 2, tune=tune, chains=2,
                    discard_tuned_samples=False)
    flags = idata.warmup_sample_stats["mu_warm"].values
    expected = np.arange(tune) < min(warm, tune)
    assert (flags == expected).all()
    assert not idata.sample_stats["mu_warm"].values.any()


def test_warm_start_sampler_stats_are_nan_on_warm_draws():
    codes, r, _ = tiny_data(0)
    idata = _sample(pmt.ReshapeStep, {"warm_start": 2}, codes, r, 1.0, 1, 3, 2, tune=4, discard_tuned_samples=False)
    acc = idata.warmup_sample_stats["mu_moves_accept"].values[0]
    assert np.isnan(acc[:2]).all() and not np.isnan(acc[2:]).any()


@pytest.mark.parametrize(("value", "error"), [(-1, ValueError), (2.5, TypeError), ("3", TypeError), (True, TypeError)])
def test_warm_start_is_checked_by_name(value, error):
    codes, r, _ = tiny_data(0)
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), r, m=1)
        with pytest.raises(error, match="warm_start"):
            pmt.CGMStep([mu], warm_start=value)


def test_warm_start_refused_on_the_gpu_backend():
    codes, r, _ = tiny_data(0)
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), r, m=1)
        pm.Normal("y", mu, 1.0, observed=r)
        with pytest.raises(ValueError, match="warm_start is not available with backend='cuda-twin'"):
            pmt.GrowPruneStep([mu], backend="cuda-twin", warm_start=5)


def _sample(step_cls, options, codes, r, sigma, m, draws, seed, tune=TUNE, chains=1, **kwargs):
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), r, m=m, mu0=0.0, sigma_mu=1.0)
        pm.Normal("y", mu, sigma, observed=r)
        return pm.sample(tune=tune, draws=draws, chains=chains, cores=1, random_seed=seed, progressbar=False,
                         step=[step_cls([mu], **options)], compute_convergence_checks=False, **kwargs)


# ------------------------------------------------------------------------------------ GFRRegressor


def test_gfr_regressor_is_reproducible_and_keeps_the_sweeps_after_burn():
    from pymc_treesamplers.datasets import friedman1

    X, y, _ = friedman1(200, p=5, rng=0)
    a = pmt.GFRRegressor(m=20, sweeps=6, burn=2, random_state=3).fit(X, y)
    b = pmt.GFRRegressor(m=20, sweeps=6, burn=2, random_state=3).fit(X, y)
    assert len(a.forests_) == 4 and a.sigma_.shape == (6,)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert a.score(X, y) > 0.8


def test_gfr_regressor_takes_missing_values():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(300, 2))
    y = np.where(X[:, 0] > 0.5, 2.0, 0.0) + rng.normal(0, 0.1, 300)
    X[::7, 0] = np.nan
    reg = pmt.GFRRegressor(m=10, sweeps=6, burn=2, random_state=0).fit(X, y)
    assert np.isfinite(reg.predict(X)).all()


@pytest.mark.parametrize(("kw", "error", "name"), [({"sweeps": 0}, ValueError, "sweeps"),
                                                   ({"burn": 5, "sweeps": 5}, ValueError, "burn"),
                                                   ({"burn": 1.5}, TypeError, "burn"), ({"m": 0}, ValueError, "m"),
                                                   ({"threads": 0}, ValueError, "threads")])
def test_gfr_regressor_checks_its_options_by_name(kw, error, name):
    X = np.random.default_rng(0).uniform(size=(20, 2))
    with pytest.raises(error, match=name):
        pmt.GFRRegressor(**kw).fit(X, X[:, 0])


def test_gfr_regressor_refuses_a_constant_y():
    X = np.random.default_rng(0).uniform(size=(20, 2))
    X[0, 0] = np.nan  # the missing-value path too, where the noise prior's scale is sd(y)
    with pytest.raises(ValueError, match="y is constant"):
        pmt.GFRRegressor(m=5, sweeps=2, burn=1).fit(X, np.ones(20))


def test_gfr_regressor_predict_checks_columns():
    X = np.random.default_rng(0).uniform(size=(50, 2))
    reg = pmt.GFRRegressor(m=5, sweeps=3, burn=1, random_state=0).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="columns"):
        reg.predict(X[:, :1])
