"""Particle Gibbs for one tree: the conditional SMC of :mod:`.smc` clamped to the old tree
(Lakshminarayanan, Roy & Teh 2015, Algorithm 2), then a particle drawn from the final weights."""

from typing import NamedTuple

import numba
import numpy as np

from ..layout import TRUE
from ..tree import copy_nodes, copy_perm
from .driver import register_update
from .smc import (
    Particles,
    ProposalScratch,
    SMCOptions,
    new_particles,
    new_proposal_scratch,
    particle,
    pick_particle,
    smc_init,
    smc_run,
)

PG_FAILED_MAX_STAGES = -1


class PGScratch(NamedTuple):
    """SMC options and buffers, and per tree whether the old tree was kept and the stages run."""

    opts: SMCOptions
    particles: Particles
    proposals: ProposalScratch
    kept: np.ndarray
    stages: np.ndarray


def new_pg_scratch(opts: SMCOptions, codes: np.ndarray, m: int) -> PGScratch:
    """Scratch for :func:`pg_update` on ``m`` trees over the rows of ``codes`` (p, n)."""
    return PGScratch(opts, new_particles(opts.n_particles, codes.shape[1]), new_proposal_scratch(codes),
                     np.zeros(m, dtype=np.bool_), np.zeros(m, dtype=np.int64))


@register_update(PGScratch)
@numba.njit(cache=True, nogil=True, inline="always")  # one call site: the driver
def pg_update(rng, j, t, data, prior, ps, sk):
    """Redraw tree ``j`` whole: conditional SMC with ``t`` as the reference, then a particle drawn
    from the weights replaces ``t`` (nodes and row order). Returns 1 unless the old tree (particle 0)
    was drawn, or ``PG_FAILED_MAX_STAGES`` if the SMC needed more than ``opts.max_stages`` stages."""
    P = sk.particles
    smc_init(P, sk.opts.n_particles, t, prior, ps)
    stages, _ = smc_run(rng, sk.opts, TRUE, t, P, data, prior, ps, sk.proposals)
    if stages < 0:
        return PG_FAILED_MAX_STAGES
    chosen = pick_particle(rng, P)
    src = particle(P, chosen)
    copy_nodes(src, t)
    copy_perm(src, t)
    sk.kept[j] = chosen == 0
    sk.stages[j] = stages
    return int(chosen != 0)
