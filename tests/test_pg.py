"""Particle Gibbs against exact enumeration, for every proposal, resampling scheme and C.

Conditional SMC that resamples at every stage keeps the old tree (or a copy of its partial tree)
often, so draws are thinned by C: C = 2 keeps 5000 draws one every 100 sweeps, C = 5 and 10 keep
10000 one every 20 (measured: at these settings the TV sits at the level of iid noise; C = 2 at
thinning 20-50 did not). Thresholds are the 99.9% quantile of the TV of iid multinomial samples
of the same size (tests/helpers/exact.py), never widened.
"""

import numba
import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers.engine.driver import register_update
from pymc_treesamplers.engine.nodes import FALSE, TRUE
from pymc_treesamplers.engine.smc import particle, pick_particle, smc_init, smc_run
from pymc_treesamplers.engine.tree import copy_nodes, copy_perm
from pymc_treesamplers.engine.updates.pg import PGScratch, new_pg_scratch
from tests.helpers.exact import (
    empirical,
    exact_partition_posterior,
    exact_partition_prior,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.kernel_chain import chain_draws

PROPOSALS = ("prior", "empirical", "optimal")
RESAMPLING = ("multinomial", "systematic")
SIZES = {2: (5000, 100), 5: (10000, 20), 10: (10000, 20)}
# under a flat likelihood all weights are equal and particle paths coalesce onto the reference
# faster; at thinning 20 one C = 10 seed of four sat at the iid threshold, at 60 all four sat at
# iid noise level
PRIOR_SIZES = {2: (5000, 100), 5: (5000, 60), 10: (5000, 60)}
CASES = [(c, p, s) for c in SIZES for p in PROPOSALS for s in RESAMPLING]
IDS = [f"C{c}-{p}-{s}" for c, p, s in CASES]


def partition_draws(codes, r, w, n_draws, thin, seed, C, proposal, resampling, ess):
    options = {"num_particles": C, "proposal": proposal, "resampling": resampling, "ess_threshold": ess}
    return chain_draws(pmt.PGBARTStep, options, codes, r, w, n_draws, thin, seed)


@pytest.mark.parametrize(("C", "proposal", "resampling"), CASES, ids=IDS)
def test_pg_posterior_matches_enumeration(C, proposal, resampling):
    codes, r, _ = tiny_data(0)
    w = np.ones(len(r))
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    n_draws, thin = SIZES[C]
    keys = partition_draws(codes, r, w, n_draws, thin, C, C, proposal, resampling, 1.0)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, n_draws)


@pytest.mark.parametrize(("C", "proposal", "resampling"), CASES, ids=IDS)
def test_pg_prior_recovered_under_flat_likelihood(C, proposal, resampling):
    codes, r, _ = tiny_data(0)
    exact = exact_partition_prior(codes, 0.95, 2.0)
    n_draws, thin = PRIOR_SIZES[C]
    keys = partition_draws(codes, r, np.zeros(len(r)), n_draws, thin, 100 + C, C, proposal, resampling, 1.0)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, n_draws)


@pytest.mark.parametrize(
    ("resampling", "proposal", "ess", "thin"),
    [("multinomial", "prior", 0.5, 20), ("systematic", "prior", 0.5, 20), ("multinomial", "prior", 0.0, 20),
     ("multinomial", "optimal", 0.0, 100)],
)
def test_pg_adaptive_resampling(resampling, proposal, ess, thin):
    """ess_threshold < 1: resampling only at some stages (0.5) or never (0.0: conditional importance
    sampling, the benchmarks' PG-opt arm), still exact (sigma = 0.5 here). The optimal proposal
    keeps the old tree more often at this sigma: at thinning 20 its TV was 0.035-0.039 (with or
    without resampling) against a threshold of 0.027, at 100 it is 0.016 (iid noise level)."""
    codes, r, _ = tiny_data(0)
    w = np.full(len(r), 4.0)
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    keys = partition_draws(codes, r, w, 10000, thin, 7, 10, proposal, resampling, ess)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, 10000)


def test_pg_options_are_checked():
    X = np.random.default_rng(0).uniform(size=(30, 2))
    y = X[:, 0]
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=2)
        pm.Normal("y", mu, 1.0, observed=y)
        with pytest.raises(ValueError, match="num_particles"):
            pmt.PGBARTStep([mu], num_particles=1)
        with pytest.raises(ValueError, match="resampling"):
            pmt.PGBARTStep([mu], resampling="stratified")
        with pytest.raises(ValueError, match="proposal"):
            pmt.PGBARTStep([mu], proposal="greedy")
        with pytest.raises(ValueError, match="ess_threshold"):
            pmt.PGBARTStep([mu], ess_threshold=1.5)
        with pytest.raises(ValueError, match="max_stages"):
            pmt.PGBARTStep([mu], max_stages=0)
        with pytest.raises(ValueError, match="expansion"):
            pmt.PGBARTStep([mu], expansion="depth")
        with pytest.raises(TypeError, match="move_probs"):
            pmt.PGBARTStep([mu], move_probs=(0.5, 0.5, 0, 0))


def test_pg_max_stages_refuses_to_truncate():
    X = np.random.default_rng(0).uniform(size=(200, 2))
    y = 5 * np.sin(6 * X[:, 0]) + X[:, 1]
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=1, beta=0.1)
        pm.Normal("y", mu, 0.1, observed=y)
        with pytest.raises(RuntimeError, match="max_stages"):
            pm.sample(tune=5, draws=5, chains=1, random_seed=1, progressbar=False,
                      step=[pmt.PGBARTStep([mu], max_stages=2)], compute_convergence_checks=False)


# ------------------------------------------------------------------ particle independent MH


class WrongPIMH(pmt.PGBARTStep):
    """PG followed by a fresh unconditional SMC whose tree is always taken: ``min(1, Z'/Z)`` dropped."""

    def new_scratch(self, codes, m):
        return _AlwaysAccept(*new_pg_scratch(self.opts, codes, m, self.pimh))


class _AlwaysAccept(PGScratch):
    pass


@numba.njit(cache=True)
def _always_accept_update(rng, j, t, data, prior, ps, sk):
    P = sk.particles
    smc_init(P, sk.opts.n_particles, t, prior, ps)
    smc_run(rng, sk.opts, TRUE, t, P, data, prior, ps, sk.proposals)
    src = particle(P, pick_particle(rng, P))
    copy_nodes(src, t)
    copy_perm(src, t)
    smc_init(P, sk.opts.n_particles, t, prior, ps)
    smc_run(rng, sk.opts, FALSE, t, P, data, prior, ps, sk.proposals)
    src = particle(P, pick_particle(rng, P))
    copy_nodes(src, t)
    copy_perm(src, t)
    return 1


register_update(_AlwaysAccept)(_always_accept_update)


def test_pimh_without_its_acceptance_ratio_fails_the_enumeration_test():
    """The matrix entry ``pg-pimh`` passes the enumeration test; the same chain taking every fresh
    run's tree (a plain SMC draw: biased at C = 5) must not."""
    codes, r, _ = tiny_data(0)
    w = np.ones(len(r))
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    options = {"num_particles": 5, "pimh": 1}
    right = chain_draws(pmt.PGBARTStep, options, codes, r, w, 10_000, 10, 1)
    wrong = chain_draws(WrongPIMH, options, codes, r, w, 10_000, 10, 1)
    threshold = tv_threshold(exact, 10_000)
    assert tv_distance(exact, empirical(right)) < threshold
    assert tv_distance(exact, empirical(wrong)) > threshold


def test_pimh_moves_are_taken_and_reported():
    """On the tiny data a fresh run is often as good as the conditional one: moves are accepted,
    and the share is a per-draw stat of the variable; 0 PIMH moves add no stat."""
    codes, r, _ = tiny_data(0)
    X = np.asarray(codes, dtype=float)
    with pm.Model():
        mu = pmt.BART("mu", X, r, m=1)
        pm.Normal("y", mu, 1.0, observed=r)
        idata = pm.sample(tune=20, draws=50, chains=1, step=[pmt.PGBARTStep([mu], num_particles=5, pimh=2)],
                          random_seed=3, progressbar=False, compute_convergence_checks=False)
        plain = pmt.PGBARTStep([mu])
    acc = idata.sample_stats["mu_pimh_accept"].values
    assert 0.0 < acc.mean() <= 1.0
    assert "pimh_accept" not in plain._extra_stats


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_pimh_option_is_checked(bad):
    with pm.Model():
        mu = pmt.BART("mu", np.arange(10.0)[:, None], np.zeros(10), m=1)
        pm.Normal("y", mu, 1.0, observed=np.zeros(10))
        with pytest.raises(ValueError, match="pimh must be an integer >= 0"):
            pmt.PGBARTStep([mu], pimh=bad)
