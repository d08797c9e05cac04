"""The SMC core unconditionally (engine/smc.py): the evidence estimate and the weighted particles.

Particle Gibbs (its conditional use) is tested against enumeration in tests/test_pg.py and
tests/test_matrix.py. Run unconditionally, the mean final weight of a top-down SMC is an unbiased
estimate of the marginal likelihood relative to the single-leaf tree, so over many independent
runs its average must match enumeration within its standard error; and a particle drawn from each
run's weights, weighted by that run's estimate, is an exact (importance) draw from the posterior.
"""

import numba
import numpy as np
import pytest

from pymc_treesamplers.engine import smc
from pymc_treesamplers.engine.forest import Forest, init_roots
from pymc_treesamplers.engine.nodes import END, FALSE, LEFT, START
from pymc_treesamplers.engine.records import Pseudo, TreePrior, split_data, tree_of
from tests.helpers.exact import (
    exact_log_evidence,
    exact_partition_posterior,
    leaf_loglik,
    partition_key,
    tiny_data,
    tv_distance,
)
from tests.helpers.exact import tv_threshold as iid_tv_threshold

pytestmark = pytest.mark.boundscheck

@numba.njit(cache=True)
def _runs(rng, n_runs, opts, root, P, data, prior, ps, sc, log_z, labels):
    for k in range(n_runs):
        smc.smc_init(P, opts.n_particles, root, prior, ps)
        stages, log_z[k] = smc.smc_run(rng, opts, FALSE, root, P, data, prior, ps, sc)
        if stages < 0:
            raise RuntimeError("max_stages")
        t = smc.particle(P, smc.pick_particle(rng, P))
        for u in range(t.nn[0]):
            if t.ints[u, LEFT] < 0:
                for q in range(t.ints[u, START], t.ints[u, END]):
                    labels[k, t.perm[q]] = u


def _smc(codes_np, r, w, n_runs, C, proposal, resampling, ess, seed):
    codes = np.asarray(codes_np).T
    data = split_data(codes, np.ones(codes.shape[0]))
    n = codes.shape[1]
    forest = Forest.empty(1, n, 0.0)
    init_roots(forest.arrays(), data, 0.0)
    log_z = np.empty(n_runs)
    labels = np.empty((n_runs, n), dtype=np.int64)
    _runs(np.random.default_rng(seed), n_runs, smc.SMCOptions(C, proposal, resampling, ess, 1000),
          tree_of(forest.arrays(), 0), smc.new_particles(C, n), data, TreePrior(0.95, 2.0, 0.0, 1.0),
          Pseudo(np.asarray(r, float), np.asarray(w, float), 1), smc.new_proposal_scratch(data.codes), log_z, labels)
    return log_z, [partition_key(row) for row in labels]


CASES = [(smc.PROPOSAL_PRIOR, smc.RESAMPLE_MULTINOMIAL, 1.0), (smc.PROPOSAL_PRIOR, smc.RESAMPLE_SYSTEMATIC, 0.5),
         (smc.PROPOSAL_EMPIRICAL, smc.RESAMPLE_SYSTEMATIC, 1.0), (smc.PROPOSAL_OPTIMAL, smc.RESAMPLE_MULTINOMIAL, 1.0),
         (smc.PROPOSAL_OPTIMAL, smc.RESAMPLE_MULTINOMIAL, 0.0)]
IDS = ["prior-multinomial", "prior-systematic-ess0.5", "empirical-systematic", "optimal-multinomial",
       "optimal-no-resampling"]


def _relative_evidence(codes, r, w, alpha=0.95):
    """Exact marginal likelihood over that of the single-leaf tree (what the SMC estimates)."""
    root = leaf_loglik(w.sum(), (w * r).sum(), 0.0, 1.0)
    return np.exp(exact_log_evidence(codes, r, w, alpha, 2.0, 0.0, 1.0) - root)


@pytest.mark.parametrize(("proposal", "resampling", "ess"), CASES, ids=IDS)
def test_unconditional_smc_evidence_is_unbiased(proposal, resampling, ess):
    codes, r, _ = tiny_data(0)
    w = np.ones(len(r))
    log_z, _ = _smc(codes, r, w, 4000, 5, proposal, resampling, ess, seed=proposal * 10 + resampling)
    z = np.exp(log_z)
    se = z.std(ddof=1) / np.sqrt(len(z))
    assert abs(z.mean() - _relative_evidence(codes, r, w)) < 4 * se
    # the check can fail: the evidence under another tree prior is far outside the band
    assert abs(z.mean() - _relative_evidence(codes, r, w, alpha=0.8)) > 4 * se


@pytest.mark.parametrize(("proposal", "resampling", "ess"), CASES[:1] + CASES[3:4], ids=[IDS[0], IDS[3]])
def test_unconditional_smc_weighted_particles_match_enumeration(proposal, resampling, ess):
    """One particle per run drawn from the run's weights, weighted by the run's evidence estimate.
    The threshold is the iid one at the effective sample size of those weights."""
    codes, r, _ = tiny_data(0)
    w = np.ones(len(r))
    log_z, keys = _smc(codes, r, w, 20_000, 5, proposal, resampling, ess, seed=3)
    wt = np.exp(log_z - log_z.max())
    est = {}
    for key, x in zip(keys, wt, strict=True):
        est[key] = est.get(key, 0.0) + x
    total = wt.sum()
    est = {k: v / total for k, v in est.items()}
    ess_runs = int(total**2 / (wt**2).sum())
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    assert tv_distance(exact, est) < iid_tv_threshold(exact, ess_runs)
