"""Continuous-time birth-death (horizon and jump modes) against exact enumeration and the tree prior.

Births and deaths only, like grow/prune: a chain cannot move its root split from x0 to x1 without
passing through the root-only tree, which has posterior mass 2e-8 on the tiny data at sigma = 0.5
(measured: TV 0.50 there, the chain never leaves its first root). So the posterior tests use
sigma = 1, where that tree is reachable; thinning is set so that about 100 time units separate
kept states (at 25 one seed of six sat above the iid threshold, at 100 all were at 0.013-0.019
against 0.027). Thresholds are the 99.9% quantile of the TV of iid multinomial samples.
"""

import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from tests.helpers.exact import (
    empirical,
    exact_partition_posterior,
    exact_partition_prior,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.kernel_chain import chain_draws
from tests.test_split_points import _range_data


def ct_partition_draws(codes, r, w, horizon, n_draws, thin, seed, change=False, rotate=False, return_rates=False,
                       **prior):
    """A CTBirthDeathStep chain; ``horizon < 0`` runs jump mode."""
    options = {"mode": "jump"} if horizon < 0 else {"horizon": horizon, "change": change, "rotate": rotate}
    return chain_draws(pmt.CTBirthDeathStep, options, codes, r, w, n_draws, thin, seed, return_rates=return_rates,
                       **prior)


@pytest.mark.parametrize(("horizon", "thin"), [(5.0, 20)])
def test_ct_posterior_matches_enumeration(horizon, thin):
    codes, r, _ = tiny_data(0)
    w = np.ones(len(r))
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    keys = ct_partition_draws(codes, r, w, horizon, 10000, thin, seed=3)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


def test_ct_with_change_moves_escapes_the_root_trap():
    """sigma = 0.5, where births and deaths alone stay on their first root (TV 0.50): one change
    move per draw (the CT-C arm) brings the chain to the exact posterior (TV 0.014-0.019 over
    three seeds at thinning 20, against 0.027; at thinning 5 one seed of three was above)."""
    codes, r, _ = tiny_data(0)
    w = np.full(len(r), 4.0)
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    keys = ct_partition_draws(codes, r, w, 1.0, 10000, 20, seed=1, change=True)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


def test_ct_change_moves_switch_mirrored_equivalent_roots():
    """A third column that mirrors column 0 (``x2 <= c`` is ``x0 > c'``): the same root partition
    has two rules with the children swapped, which only the relabel Gibbs move connects at
    sigma = 0.5. With ``change=True`` TV 0.014-0.015 over two seeds against 0.025; births and
    deaths alone stay on one orientation (TV 0.42), which the second assertion keeps honest."""
    codes, r, _ = tiny_data(0)
    mirrored = np.column_stack([codes, codes[:, 0].max() - codes[:, 0]])
    w = np.full(len(r), 4.0)
    exact = exact_partition_posterior(mirrored, r, w, 0.95, 2.0, 0.0, 1.0)
    threshold = tv_threshold(exact, 10000)
    keys = ct_partition_draws(mirrored, r, w, 1.0, 10000, 20, seed=1, change=True)
    assert tv_distance(exact, empirical(keys)) < threshold
    stuck = ct_partition_draws(mirrored, r, w, 1.0, 10000, 20, seed=1)
    assert tv_distance(exact, empirical(stuck)) > 3 * threshold


def test_ct_rotate_dominated_chain_matches_enumeration():
    """Five rotate proposals per sweep against 0.2 time units of births and deaths (TV 0.013
    against 0.027); the move-by-move pairing of rotate is checked in tests/test_rotate.py."""
    codes, r, _ = tiny_data(0)
    w = np.ones(len(r))
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    keys = ct_partition_draws(codes, r, w, 0.2, 10000, 50, seed=11, rotate=5)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


def test_ct_larger_tree_space_and_range_codes():
    """Codes with holes (split_points="range"): a cut between distant values has several codes."""
    _, grid, r, _ = _range_data()
    w = np.ones(len(r))
    exact = exact_partition_posterior(grid, r, w, 0.95, 2.0, 0.0, 1.0)
    keys = ct_partition_draws(grid, r, w, 1.0, 10000, 100, seed=4)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


@pytest.mark.parametrize(
    ("alpha", "beta", "split_weights", "moves"),
    [(0.9, 1.0, (1.0, 3.0, 0.0), {}), (0.95, 2.0, None, {"rotate": 3, "change": 1})],
)
def test_ct_prior_recovered_under_flat_likelihood(alpha, beta, split_weights, moves):
    codes, r, _ = tiny_data(0)
    if split_weights is not None:
        codes = np.column_stack([codes, (np.arange(codes.shape[0]) % 3)])
    exact = exact_partition_prior(codes, alpha, beta, split_weights)
    keys = ct_partition_draws(codes, r, np.zeros(codes.shape[0]), 1.0, 10000, 10, seed=5, alpha=alpha, beta=beta,
                              split_weights=split_weights, **moves)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


def _wu_roots(kw, seed):
    """Root variable of each kept draw of one chain on the Wu et al. data at noise sd 0.1."""
    from pymc_treesamplers.datasets import wu_tjelmeland_west
    from pymc_treesamplers.results.storage import decode_forest

    X, y, _ = wu_tjelmeland_west(300, 0.1, seed)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=1, split_points="range", max_bins=100)
        pm.Normal("y", mu, 0.1, observed=y)
        idata = pm.sample(tune=300, draws=2000, chains=1, random_seed=seed, progressbar=False,
                          step=[pmt.CTBirthDeathStep([mu], **kw)], compute_convergence_checks=False)
    enc = idata.sample_stats["mu_forest"].values.reshape(-1)
    roots = np.array([decode_forest(str(text))[2][0] for text in enc])
    return roots[(roots == 0) | (roots == 2)]


def test_ct_c_switches_equivalent_roots_on_wu_data():
    """The issue's target on the benchmark's setting (sd 0.1, 99 equally spaced cuts): with rotate
    (Pratola's rotate plus pivots) and rule moves one chain puts its root on x1 in 0.3-0.7 of the
    draws and switches often (seeds 1-11 at 20,000 draws: 0.49-0.52, ~5000 switches); birth-death
    alone never switches: its only way from one root to the other runs through the root-only tree.
    Without pivots, 6 of 8 seeds stayed on one root (greedy first cuts, then no move to undo them)."""
    roots = _wu_roots({"rotate": True, "change": True}, 11)
    assert roots.size > 1900
    assert 0.3 <= np.mean(roots == 0) <= 0.7
    assert np.sum(roots[1:] != roots[:-1]) > 100
    plain = _wu_roots({}, 11)
    assert np.sum(plain[1:] != plain[:-1]) == 0


def test_ct_options_are_checked():
    X = np.random.default_rng(0).uniform(size=(30, 2))
    with pm.Model():
        mu = pmt.BART("mu", X, X[:, 0], m=3)
        pm.Normal("y", mu, 1.0, observed=X[:, 0])
        for bad in (0.0, -1.0, float("inf")):
            with pytest.raises(ValueError, match="horizon"):
                pmt.CTBirthDeathStep([mu], horizon=bad)
        with pytest.raises(TypeError, match="horizon"):
            pmt.CTBirthDeathStep([mu], horizon="1")
        for flag in ("change", "rotate"):
            with pytest.raises(TypeError, match=flag):
                pmt.CTBirthDeathStep([mu], **{flag: "yes"})
            with pytest.raises(TypeError, match=flag):
                pmt.CTBirthDeathStep([mu], **{flag: 1.5})
            with pytest.raises(ValueError, match=flag):
                pmt.CTBirthDeathStep([mu], **{flag: -1})
        step = pmt.CTBirthDeathStep([mu], rotate=True, change=3)
        assert (step.rotate, step.change) == (1, 3)
        with pytest.raises(TypeError, match="swap"):
            pmt.CTBirthDeathStep([mu], swap=True)  # unknown options are refused


def test_jump_mode_weighted_histogram_matches_enumeration():
    """Jump mode: the embedded jump chain weighted by expected holding times 1 / Lambda(T).

    200,000 jumps are counted as 2,000 independent draws for the threshold (one in 100; the
    horizon tests needed about 100 time units between draws). Weighted TV 0.008-0.010 over two
    seeds; the unweighted histogram is at 0.23, so the weights are what make it exact.
    """
    codes, r, _ = tiny_data(0)
    w = np.ones(len(r))
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    keys, rates = ct_partition_draws(codes, r, w, -1.0, 200_000, 1, seed=0, return_rates=True)
    weighted = {}
    for k, x in zip(keys, 1.0 / rates, strict=True):
        weighted[k] = weighted.get(k, 0.0) + x
    total = sum(weighted.values())
    weighted = {k: v / total for k, v in weighted.items()}
    threshold = tv_threshold(exact, 2000)
    assert tv_distance(exact, weighted) < threshold
    assert tv_distance(exact, empirical(keys)) > 3 * threshold


def test_jump_mode_through_pm_sample_and_helpers():
    codes, r, _ = tiny_data(0)
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), r, m=1, mu0=0.0, sigma_mu=1.0)
        pm.Normal("y", mu, 1.0, observed=r)
        idata = pm.sample(tune=10, draws=300, chains=2, cores=1, random_seed=8, progressbar=False,
                          step=[pmt.CTBirthDeathStep([mu], mode="jump")], compute_convergence_checks=False)
    wt = idata.sample_stats["mu_waiting_time"].values
    assert wt.shape == (2, 300) and np.isfinite(wt).all() and (wt > 0).all()
    w = pmt.jump_weights(idata)
    np.testing.assert_allclose(w.sum(1), 1.0)
    mean = pmt.weighted_mean(idata, "mu")
    np.testing.assert_allclose(mean, np.einsum("cd,cdn->cn", w, idata.posterior["mu"].values))
    res = pmt.resample_jump_chain(idata, n_draws=500, random_seed=1)
    assert res.posterior["mu"].shape == (2, 500, len(r))
    # resampled draws keep their own trees: predict still reproduces them
    np.testing.assert_array_equal(pmt.predict(res, codes.astype(float), "mu"), res.posterior["mu"].values)


def test_jump_mode_refuses_other_moving_variables():
    codes, r, _ = tiny_data(0)
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), r, m=1)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=r)
        with pytest.raises(ValueError, match="mode='jump'"):
            pmt.CTBirthDeathStep([mu], mode="jump")
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), r, m=2)
        pm.Normal("y", mu, 1.0, observed=r)
        with pytest.raises(ValueError, match="m=2"):
            pmt.CTBirthDeathStep([mu], mode="jump")
        for flag in ("change", "rotate"):
            with pytest.raises(ValueError, match=flag):
                pmt.CTBirthDeathStep([mu], mode="jump", **{flag: True})
        with pytest.raises(ValueError, match="mode"):
            pmt.CTBirthDeathStep([mu], mode="jumps")
