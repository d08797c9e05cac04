"""Grow-from-root (GFR, XBART: He & Hahn 2021): regrow a tree from its root, every split drawn in
proportion to its local posterior. A warm start, not an MCMC kernel: it leaves no posterior invariant.

At a node at depth ``d`` with prior split probability ``p_d = alpha (1 + d)^-beta`` and the summed weight
``W_avail`` of its splittable variables, the choices and their weights are

* stop: ``(1 - p_d) L(node)``;
* split on ``x_v <= c`` for each valid cut ``c`` of each variable ``v``:
  ``p_d w_v / (W_avail n_cuts_v) L(left) L(right)``,

with ``L`` a leaf's marginal likelihood. That is the exact posterior over "stop here" and "split once,
children stay leaves", the tree prior's own rule probabilities included; with equal weights and equal cut
counts it is XBART's weighting (the no-split option scaled by the number of cuts and the prior odds).
Every child is then grown the same way.

That law is the SMC core's one-step optimal proposal (:mod:`pymc_treesamplers.engine.smc`), so a GFR draw is
an unconditional run of that core with one particle and the optimal proposal: binned codes make each
variable's cuts one pass over the node's rows, and all cuts between two adjacent codes present in the node
share one likelihood. The sweep runs through the one backfitting driver like any tree update
(registered for :class:`GFRScratch`); the driver then draws the new tree's leaves from their conditional.

>>> sampler = new_gfr_scratch(np.array([[0, 3, 1]], dtype=np.uint16))
>>> sampler.opts.n_particles, sampler.opts.proposal == PROPOSAL_OPTIMAL
(1, True)
"""

from typing import NamedTuple

import numba
import numpy as np

from ..driver import register_update
from ..nodes import FALSE
from ..smc import (
    EXPANSION_NODE,
    PROPOSAL_OPTIMAL,
    RESAMPLE_MULTINOMIAL,
    Particles,
    ProposalScratch,
    SMCOptions,
    adopt_particle,
    new_particles,
    new_proposal_scratch,
    smc_init,
    smc_run,
)

GFR_FAILED = -1


class GFRScratch(NamedTuple):
    """One particle, the optimal proposal's buffers and the run's options (a stage per node, so the
    stage limit is the largest tree on the rows)."""

    opts: SMCOptions
    particles: Particles
    proposals: ProposalScratch


def new_gfr_scratch(codes: np.ndarray, width: int = 2) -> GFRScratch:
    """Scratch for :func:`gfr_update` on the split codes ``codes`` (p, n), for leaf statistics of ``width``
    values (:func:`~pymc_treesamplers.engine.leaves.n_stats`: 2 for constant leaves)."""
    n = codes.shape[1]
    # one particle: nothing to resample (threshold 0)
    opts = SMCOptions(1, PROPOSAL_OPTIMAL, RESAMPLE_MULTINOMIAL, 0.0, 2 * n + 1, EXPANSION_NODE)
    return GFRScratch(opts, new_particles(1, n, width), new_proposal_scratch(codes, width))


@register_update(GFRScratch)
@numba.njit(cache=True, nogil=True, inline="always")  # one call site: the driver
def gfr_update(rng, j, t, data, prior, pseudo, sampler):
    """Replace tree ``j`` by one grown from its root (module docstring); returns 1 (the tree is new)."""
    P = sampler.particles
    smc_init(P, 1, t, prior, pseudo)
    stages, _ = smc_run(rng, sampler.opts, FALSE, t, P, data, prior, pseudo, sampler.proposals)
    if stages < 0:
        return GFR_FAILED
    adopt_particle(P, 0, t)
    return 1
