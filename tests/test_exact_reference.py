"""Tests of the exact reference in ``tests/helpers/exact.py`` (not of the sampler).

They check the enumeration against hand calculations, against direct
simulation of the prior, and against an independent Gaussian marginal
likelihood, and that the TV machinery flags deliberately wrong samplers.
"""

import doctest
import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from tests.helpers import exact
from tests.helpers.exact import (
    _gaussian_logpdf,
    empirical,
    exact_log_evidence,
    exact_pair_posterior,
    exact_partition_posterior,
    exact_partition_prior,
    leaf_loglik,
    partition_key,
    partition_keys_from_values,
    sample_prior_partitions,
    summarize,
    tiny_data,
    tv_distance,
    tv_threshold,
)


def assert_dist_equal(got: dict, want: dict, tol: float = 1e-12) -> None:
    """Two partition distributions agree key by key (absent key = 0)."""
    for key in got.keys() | want.keys():
        assert got.get(key, 0.0) == pytest.approx(want.get(key, 0.0), abs=tol), key


def test_doctests():
    assert doctest.testmod(exact).failed == 0


def test_partition_key_and_tv_helpers():
    assert partition_key([5, 5, 2, 9, 2]) == (0, 0, 1, 2, 1)
    assert partition_key(np.array([3, 1, 3])) == (0, 1, 0)
    assert partition_key(["b", "a", "b", "a"]) == (0, 1, 0, 1)
    assert empirical([(0, 0), (0, 1), (0, 1), (0, 1)]) == {(0, 0): 0.25, (0, 1): 0.75}
    assert tv_distance({"a": 0.2, "b": 0.8}, {"b": 0.5, "c": 0.5}) == pytest.approx(0.5)
    assert tv_distance({"a": 1.0}, {"a": 1.0}) == 0.0
    assert summarize({(0, 0, 0): 0.1, (0, 1, 1): 0.2, (0, 0, 1): 0.7}, max) == {
        0: pytest.approx(0.1),
        1: pytest.approx(0.9),
    }


@pytest.mark.parametrize("alpha", [0.3, 0.95])
def test_two_rows_by_hand(alpha):
    # Root splits with prob alpha; the one-row children cannot split.
    prior = exact_partition_prior([[0], [1]], alpha=alpha, beta=2.0)
    assert_dist_equal(prior, {(0, 0): 1 - alpha, (0, 1): alpha})


@pytest.mark.parametrize(("alpha", "beta"), [(0.95, 2.0), (0.6, 0.5)])
def test_three_rows_by_hand(alpha, beta):
    # Root cut 0 -> {0}|{1,2}, cut 1 -> {0,1}|{2}, each with prob alpha/2; the
    # two-row child (depth 1) splits with prob q = alpha * 2**-beta.
    q = alpha * 2.0**-beta
    prior = exact_partition_prior([[0], [1], [2]], alpha=alpha, beta=beta)
    want = {
        (0, 0, 0): 1 - alpha,
        (0, 1, 1): alpha / 2 * (1 - q),
        (0, 0, 1): alpha / 2 * (1 - q),
        (0, 1, 2): alpha * q,
    }
    assert_dist_equal(prior, want)


def test_unobserved_codes_are_valid_cuts():
    # Codes [0, 2, 3]: valid cuts 0, 1, 2; cuts 0 and 1 give the same split.
    alpha, beta = 0.9, 1.0
    q = alpha * 2.0**-beta
    prior = exact_partition_prior([[0], [2], [3]], alpha=alpha, beta=beta)
    want = {
        (0, 0, 0): 1 - alpha,
        (0, 1, 1): alpha * 2 / 3 * (1 - q),
        (0, 0, 1): alpha * 1 / 3 * (1 - q),
        (0, 1, 2): alpha * q,
    }
    assert_dist_equal(prior, want)


def test_split_weights_by_hand():
    # Variable 0 separates row 0, variable 1 separates row 2.
    codes = [[0, 0], [1, 0], [1, 1]]
    alpha, beta = 0.8, 1.0
    q = alpha * 2.0**-beta
    prior = exact_partition_prior(codes, alpha, beta, split_weights=[1.0, 3.0])
    want = {
        (0, 0, 0): 1 - alpha,
        (0, 1, 1): alpha / 4 * (1 - q),
        (0, 0, 1): alpha * 3 / 4 * (1 - q),
        (0, 1, 2): alpha * q,
    }
    assert_dist_equal(prior, want)
    # Zero weight: variable 0 is never available, so the child {0, 1} (which
    # only variable 0 could split) is an unsplittable leaf.
    prior = exact_partition_prior(codes, alpha, beta, split_weights=[0.0, 1.0])
    assert_dist_equal(prior, {(0, 0, 0): 1 - alpha, (0, 0, 1): alpha})


def test_zero_weight_column_is_ignored():
    codes, _, _ = tiny_data()
    extra = np.column_stack([codes, codes[::-1, 0]])
    with_extra = exact_partition_prior(extra, 0.9, 1.5, split_weights=[1, 3, 0])
    without = exact_partition_prior(codes, 0.9, 1.5, split_weights=[1, 3])
    assert_dist_equal(with_extra, without)


@pytest.mark.parametrize(
    ("alpha", "beta", "split_weights"),
    [(0.95, 2.0, None), (0.5, 0.5, None), (0.8, 1.0, [1.0, 3.0, 0.0])],
)
def test_prior_matches_simulation(alpha, beta, split_weights):
    codes, _, _ = tiny_data()
    if split_weights is not None:  # add a third column, never to be used
        codes = np.column_stack([codes, codes[::-1, 0]])
    prior = exact_partition_prior(codes, alpha, beta, split_weights)
    assert sum(prior.values()) == pytest.approx(1.0, abs=1e-12)
    assert len(prior) == 34
    n_draws = 40_000
    rng = np.random.default_rng(1234)
    keys = sample_prior_partitions(codes, alpha, beta, n_draws, rng, split_weights)
    assert set(keys) <= prior.keys()
    assert tv_distance(prior, empirical(keys)) < tv_threshold(prior, n_draws)
    # Number of leaves is a coarser check with a visible, interpretable scale.
    leaves_exact = summarize(prior, lambda k: max(k) + 1)
    leaves_emp = summarize(empirical(keys), lambda k: max(k) + 1)
    assert tv_distance(leaves_exact, leaves_emp) < tv_threshold(leaves_exact, n_draws)


def test_prior_leaf_count_is_one_minus_alpha_at_root():
    codes, _, _ = tiny_data()
    prior = exact_partition_prior(codes, alpha=0.95, beta=2.0)
    assert prior[(0,) * 7] == pytest.approx(0.05)


def test_posterior_with_zero_weights_is_prior():
    codes, r, _ = tiny_data()
    prior = exact_partition_prior(codes, 0.95, 2.0)
    post = exact_partition_posterior(
        codes, r, np.zeros(7), 0.95, 2.0, mu0=0.7, sigma_mu=0.3
    )
    assert_dist_equal(post, prior)


def test_posterior_is_prior_times_partition_likelihood():
    # The likelihood depends on the tree only through its partition.
    codes, r, w = tiny_data(seed=3)
    mu0, sigma_mu = 0.2, 1.5
    prior = exact_partition_prior(codes, 0.95, 2.0)
    post = exact_partition_posterior(codes, r, w, 0.95, 2.0, mu0, sigma_mu)
    assert sum(post.values()) == pytest.approx(1.0, abs=1e-12)
    unnorm = {}
    for key, p in prior.items():
        labels = np.array(key)
        loglik = sum(
            leaf_loglik(w[labels == b].sum(), (w * r)[labels == b].sum(), mu0, sigma_mu)
            for b in range(max(key) + 1)
        )
        unnorm[key] = p * math.exp(loglik)
    z = sum(unnorm.values())
    assert_dist_equal(post, {k: v / z for k, v in unnorm.items()})
    assert tv_distance(post, prior) > 0.3  # the data really move the posterior


def test_two_row_posterior_ratio_by_hand():
    alpha, beta, mu0, sigma_mu = 0.7, 2.0, 0.3, 1.2
    r = np.array([-0.4, 1.9])
    w = np.array([4.0, 2.5])
    post = exact_partition_posterior([[0], [1]], r, w, alpha, beta, mu0, sigma_mu)
    s2 = sigma_mu**2

    def L(W, S):
        return (
            -0.5 * np.log(1 + s2 * W)
            + 0.5 * (S + mu0 / s2) ** 2 / (W + 1 / s2)
            - 0.5 * mu0**2 / s2
        )

    log_lr = L(w[0], w[0] * r[0]) + L(w[1], w[1] * r[1]) - L(w.sum(), (w * r).sum())
    want = alpha / (1 - alpha) * np.exp(log_lr)
    assert post[(0, 1)] / post[(0, 0)] == pytest.approx(want, rel=1e-12)
    # Independently: ratio of Gaussian marginals of r with mu_leaf integrated
    # out (one shared leaf mean vs two independent ones).
    noise = np.diag(1 / w)
    mean = np.full(2, mu0)
    shared = multivariate_normal(mean, noise + s2 * np.ones((2, 2))).pdf(r)
    separate = multivariate_normal(mean, noise + s2 * np.eye(2)).pdf(r)
    assert post[(0, 1)] / post[(0, 0)] == pytest.approx(
        alpha / (1 - alpha) * separate / shared, rel=1e-10
    )


def test_tv_threshold_scales_like_inverse_sqrt_n():
    prior = exact_partition_prior(tiny_data()[0], 0.95, 2.0)
    t10k, t40k = tv_threshold(prior, 10_000), tv_threshold(prior, 40_000)
    assert 0.0 < t40k < t10k
    assert t10k / t40k == pytest.approx(2.0, rel=0.25)


def test_wrong_samplers_are_detected():
    codes, _, _ = tiny_data()
    n_draws = 10_000
    prior = exact_partition_prior(codes, 0.95, 2.0)
    threshold = tv_threshold(prior, n_draws)
    rng = np.random.default_rng(7)

    # Wrong alpha.
    keys = sample_prior_partitions(codes, 0.5, 2.0, n_draws, rng)
    assert tv_distance(prior, empirical(keys)) > threshold

    # Root always split: exact prior conditioned on the root not being a leaf.
    forced = {k: p / 0.95 for k, p in prior.items() if max(k) > 0}
    support = list(forced)
    idx = rng.choice(len(support), size=n_draws, p=list(forced.values()))
    keys = [support[i] for i in idx]
    assert tv_distance(prior, empirical(keys)) > threshold

    # Split weights ignored (uniform variable choice instead of 1:3).
    weighted = exact_partition_prior(codes, 0.95, 2.0, split_weights=[1.0, 3.0])
    keys = sample_prior_partitions(codes, 0.95, 2.0, n_draws, rng)
    assert tv_distance(weighted, empirical(keys)) > tv_threshold(weighted, n_draws)


def test_partition_keys_from_values():
    assert partition_keys_from_values(np.array([[2.5, -1.0, 2.5, 7.0]])) == [(0, 1, 0, 2)]


def test_evidence_normalises_the_posterior():
    codes, r, w = tiny_data(seed=2)
    log_z = exact_log_evidence(codes, r, w, 0.95, 2.0, 0.1, 0.8)
    prior = exact_partition_prior(codes, 0.95, 2.0)
    post = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.1, 0.8)
    for key, p in prior.items():
        labels = np.array(key)
        loglik = sum(leaf_loglik(w[labels == b].sum(), (w * r)[labels == b].sum(), 0.1, 0.8)
                     for b in range(max(key) + 1))
        assert post[key] == pytest.approx(p * math.exp(loglik - log_z), rel=1e-10)


def _single_tree_by_gaussian_marginal(codes, r, w, mu0, sigma_mu):
    """One tree's partition posterior through the full Gaussian marginal of r, the route
    exact_pair_posterior takes for two trees (leaf terms are not used)."""
    prior = exact_partition_prior(codes, 0.95, 2.0)
    logp = {}
    for key, p in prior.items():
        same = np.equal.outer(np.array(key), np.array(key)).astype(float)
        logp[key] = math.log(p) + _gaussian_logpdf(r, mu0, np.diag(1 / w) + sigma_mu**2 * same)
    top = max(logp.values())
    z = sum(math.exp(v - top) for v in logp.values())
    return {k: math.exp(v - top) / z for k, v in logp.items()}


def test_gaussian_marginal_route_agrees_with_leaf_terms():
    codes, r, w = tiny_data(seed=4)
    assert_dist_equal(_single_tree_by_gaussian_marginal(codes, r, w, 0.3, 1.1),
                      exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.3, 1.1), tol=1e-10)


def test_pair_posterior_properties():
    codes, r, w = tiny_data(seed=1)
    codes, r, w = codes[:5], r[:5], w[:5]
    post = exact_pair_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    prior = exact_partition_prior(codes, 0.95, 2.0)
    assert len(post) == len(prior) ** 2 and sum(post.values()) == pytest.approx(1.0, abs=1e-12)
    for (a, b), p in post.items():  # the two trees are exchangeable
        assert post[(b, a)] == pytest.approx(p, rel=1e-9)
    # a vanishing likelihood leaves the product of the priors
    flat = exact_pair_posterior(codes, r, np.full(5, 1e-12), 0.95, 2.0, 0.0, 1.0)
    assert_dist_equal(flat, {(a, b): pa * pb for a, pa in prior.items() for b, pb in prior.items()}, tol=1e-9)
    # with a second tree the first fits less of the data: its marginal is not its one-tree posterior
    first = summarize(post, lambda k: k[0])
    alone = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    assert tv_distance(first, alone) > 0.05
