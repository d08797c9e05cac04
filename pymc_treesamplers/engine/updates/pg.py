"""Particle Gibbs for one tree: the conditional SMC of :mod:`.smc` clamped to the old tree
(Lakshminarayanan, Roy & Teh 2015, Algorithm 2), then a particle drawn from the final weights;
optionally followed by particle independent Metropolis-Hastings moves (Andrieu, Doucet & Holenstein
2010, section 2.4.1): fresh unconditional SMC runs, each accepted with probability
``min(1, Z'/Z)`` of the two systems' marginal-likelihood estimates.

Why this is exact, and why the conditional run comes first: on the extended space of a whole
particle system ``S`` and a selected index ``k``, the PIMH target is
``q(S) w_k(S) Z(S) / Z``, with ``q`` the law of an unconditional run, ``w_k`` the normalised final
weights and ``Z(S)`` the run's estimate. Its conditional of ``S`` given the selected tree is the
conditional SMC, so the conditional run *refreshes* the system around the current tree under the
current pseudo-data (a Gibbs step: the estimate kept from an earlier sweep would be stale once sigma
or the other trees moved), and drawing the tree from its weights is a second Gibbs step. A PIMH
move then proposes ``S' ~ q`` and accepts with ``min(1, Z(S')/Z(S))``. The tree kernel this
defines is reversible: ``pi(x) K(x, x')`` integrates ``q(S) q(S') w_x(S) w_x'(S') min(Z(S), Z(S'))``
(accepted) or ``q(S) Z(S) w_x(S) w_x'(S) (1 - a(S))`` (rejected), both symmetric, which is what the
Metropolis-Hastings correction of a non-Gaussian likelihood needs.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..driver import register_update
from ..nodes import FALSE, TRUE
from ..smc import (
    Particles,
    ProposalScratch,
    SMCOptions,
    adopt_particle,
    new_particles,
    new_proposal_scratch,
    pick_particle,
    smc_init,
    smc_run,
)

PG_FAILED_MAX_STAGES = -1


class PGScratch(NamedTuple):
    """SMC options and buffers, the number of independent (PIMH) proposals per tree, and per tree
    whether the old tree was kept, the stages of the conditional run and the PIMH moves accepted."""

    opts: SMCOptions
    independent: int
    particles: Particles
    proposals: ProposalScratch
    kept: np.ndarray
    stages: np.ndarray
    accepted: np.ndarray


def new_pg_scratch(opts: SMCOptions, codes: np.ndarray, m: int, independent: int = 0, width: int = 2) -> PGScratch:
    """Scratch for :func:`pg_update` on ``m`` trees over the rows of ``codes`` (p, n), with
    ``independent`` PIMH proposals after each conditional run, for leaf statistics of ``width`` values
    (:func:`~pymc_treesamplers.engine.leaves.n_stats`: 2 for constant leaves)."""
    return PGScratch(opts, independent, new_particles(opts.n_particles, codes.shape[1], width),
                     new_proposal_scratch(codes, width),
                     np.zeros(m, dtype=np.bool_), np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64))


@register_update(PGScratch)
@numba.njit(cache=True, nogil=True, inline="always")  # one call site: the driver
def pg_update(rng, j, t, data, prior, pseudo, sampler):
    """Redraw tree ``j`` whole: conditional SMC with ``t`` as the reference, then a particle drawn
    from the weights replaces ``t`` (nodes and row order); then ``sampler.independent`` PIMH moves.
    Returns 1 unless the old tree (particle 0) was drawn and no PIMH move was accepted, or
    ``PG_FAILED_MAX_STAGES`` if an SMC needed more than ``opts.max_stages`` stages."""
    P = sampler.particles
    smc_init(P, sampler.opts.n_particles, t, prior, pseudo)
    stages, log_z = smc_run(rng, sampler.opts, TRUE, t, P, data, prior, pseudo, sampler.proposals)
    if stages < 0:
        return PG_FAILED_MAX_STAGES
    chosen = pick_particle(rng, P)
    sampler.kept[j] = chosen == 0
    sampler.stages[j] = stages
    adopt_particle(P, chosen, t)
    accepted = 0
    for _ in range(sampler.independent):
        smc_init(P, sampler.opts.n_particles, t, prior, pseudo)
        stages, log_z_new = smc_run(rng, sampler.opts, FALSE, t, P, data, prior, pseudo, sampler.proposals)
        if stages < 0:
            return PG_FAILED_MAX_STAGES
        if math.log(rng.random()) < log_z_new - log_z:
            adopt_particle(P, pick_particle(rng, P), t)
            log_z = log_z_new
            accepted += 1
    sampler.accepted[j] = accepted
    return int(chosen != 0 or accepted > 0)

