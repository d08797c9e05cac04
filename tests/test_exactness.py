"""The MH move mixtures and tree priors beyond the registry's defaults against exact enumeration
(docs/design.md section 7; GrowPruneStep and CGMStep at their defaults are in tests/test_matrix.py).

Each chain is thinned so that kept states are close to independent, and the total-variation
distance to the exact partition distribution must fall below the 99.9% quantile of the TV of
iid multinomial samples of the same size. Grow/prune alone runs under a weaker likelihood
(sigma = 1): at sigma = 0.5 the tiny data's root-only tree has posterior mass 2e-8, so a chain
that never changes a split in place cannot move its root between x0 and x1 (a mixing trap that
CGM's change/swap moves avoid), and a finite run cannot show its invariance there. Thinning is
set per move mix from how fast it mixes (grow/prune/change without swap needs 100: at 20 its TV
sat at the threshold for one seed and fell to noise level, 0.011-0.015, at 100 and 400).
"""

import numpy as np
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

GROWPRUNE = (0.5, 0.5, 0.0, 0.0)
CGM = (0.25, 0.25, 0.40, 0.10)
N_DRAWS = 20_000


def partition_draws(codes, r, w, probs, n_draws, thin, seed, **kw):
    """A CGMStep chain with these move probabilities (grow/prune only when change and swap are 0)."""
    return chain_draws(pmt.CGMStep, {"move_probs": probs}, codes, r, w, n_draws, thin, seed, **kw)


def _check(exact, keys):
    tv = tv_distance(exact, empirical(keys))
    threshold = tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"
    return tv


@pytest.mark.parametrize(
    ("probs", "weight", "thin"),
    [(CGM, 1.0, 20), ((0.3, 0.3, 0.4, 0.0), 4.0, 100), ((0.3, 0.3, 0.0, 0.4), 4.0, 40)],
    ids=["cgm-sigma1", "grow-prune-change", "grow-prune-swap"],
)
def test_posterior_matches_enumeration(probs, weight, thin):
    codes, r, w = tiny_data(0)
    w = np.full_like(w, weight)
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    _check(exact, partition_draws(codes, r, w, probs, N_DRAWS, thin, seed=11))


@pytest.mark.parametrize("probs", [GROWPRUNE, CGM], ids=["growprune", "cgm"])
@pytest.mark.parametrize(
    ("alpha", "beta", "split_weights"),
    [(0.5, 0.5, None), (0.9, 1.0, (1.0, 3.0, 0.0))],
    ids=["bushy", "weighted"],
)
def test_prior_recovered_under_flat_likelihood(probs, alpha, beta, split_weights):
    codes, r, _ = tiny_data(0)
    if split_weights is not None:  # a third column that must never be used (weight 0)
        codes = np.column_stack([codes, (np.arange(codes.shape[0]) % 3)])
    w = np.zeros(codes.shape[0])
    exact = exact_partition_prior(codes, alpha, beta, split_weights)
    keys = partition_draws(codes, r, w, probs, N_DRAWS, 10, seed=5, alpha=alpha, beta=beta,
                           split_weights=split_weights)
    _check(exact, keys)


def test_wrong_target_is_detected():
    """The same check fails when the sampler targets another prior (the test can fail)."""
    codes, r, _ = tiny_data(0)
    w = np.zeros(codes.shape[0])
    keys = partition_draws(codes, r, w, CGM, N_DRAWS, 10, seed=5, alpha=0.8, beta=2.0)
    exact = exact_partition_prior(codes, 0.95, 2.0)
    assert tv_distance(exact, empirical(keys)) > tv_threshold(exact, N_DRAWS)


def test_larger_tree_space_cgm():
    """Nine rows, three columns, a bushier prior: many more partitions than the 7-row case."""
    rng = np.random.default_rng(3)
    codes = np.column_stack([rng.integers(0, 3, 9), rng.integers(0, 2, 9), rng.integers(0, 3, 9)])
    r = 1.5 * (codes[:, 0] > 0) - 1.0 * codes[:, 2] + rng.normal(0, 0.5, 9)
    w = np.full(9, 1.0)
    exact = exact_partition_posterior(codes, r, w, 0.95, 1.0, 0.0, 1.0)
    assert len(exact) == 78  # support size of this data set (vs 34 for the 7-row one)
    keys = partition_draws(codes, r, w, CGM, N_DRAWS, 20, seed=2, beta=1.0)
    _check(exact, keys)
