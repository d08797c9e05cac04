"""One island of the single-tree SMC estimator: an unconditional run of the SMC core of
:mod:`.smc` under a conjugate leaf model, and its particles read out in preorder.

An island is one independent particle filter over the rows of the training data (Lakshminarayanan,
Roy & Teh 2013, section 4.1.3): it returns the particles' final log weights and the log of its
marginal-likelihood estimate relative to the single-leaf tree. The caller
(:mod:`pymc_treesamplers.estimators.smctree`) runs several, in threads when asked (the kernels release the GIL).
"""

from typing import NamedTuple

import numba
import numpy as np

from ..forest import Forest, init_roots
from ..nodes import CUT, FALSE, ROOT, VAR
from ..records import tree_of
from ..smc import (
    Particles,
    ProposalScratch,
    SMCOptions,
    new_particles,
    new_proposal_scratch,
    smc_init,
    smc_run,
)
from ..tree import subtree_nodes


class IslandBuffers(NamedTuple):
    """Particles and proposal scratch of one island, and the root tree they start from."""

    particles: Particles
    proposals: ProposalScratch
    root: Forest


def new_island(opts: SMCOptions, data, width: int) -> IslandBuffers:
    """Buffers for one island over the split data ``data`` with leaf statistics of ``width`` values."""
    n = data.codes.shape[1]
    root = Forest.empty(1, n, 0.0)
    init_roots(root.arrays(), data, 0.0)
    return IslandBuffers(new_particles(opts.n_particles, n, width), new_proposal_scratch(data.codes, width), root)


@numba.njit(cache=True, nogil=True)
def run_island(rng, opts, root, P, data, prior, lm, sc):
    """Grow ``opts.n_particles`` trees top-down from the single leaf ``root``; returns
    ``(stages, log_z)`` as :func:`.smc.smc_run` (``stages = -1``: the stage limit stopped the run)."""
    smc_init(P, opts.n_particles, root, prior, lm)
    return smc_run(rng, opts, FALSE, root, P, data, prior, lm, sc)


@numba.njit(cache=True, nogil=True)
def read_particles(P):
    """Every particle in preorder: ``(counts, var, cut, stats)`` with the node count of each
    particle, then per node its split variable (``-1``: leaf), split code and leaf statistics row
    (log marginal likelihood, then the sufficient statistics)."""
    C = P.nn.shape[0]
    total = 0
    for c in range(C):
        total += P.nn[c]
    counts = np.empty(C, dtype=np.int64)
    var = np.empty(total, dtype=np.int64)
    cut = np.empty(total, dtype=np.int64)
    stats = np.empty((total, P.stats.shape[2]))
    order = np.empty(P.ints.shape[1], dtype=np.int64)
    pos = 0
    for c in range(C):
        counts[c] = P.nn[c]
        for q in range(subtree_nodes(P.ints[c], ROOT, order)):
            u = order[q]
            var[pos] = P.ints[c, u, VAR]
            cut[pos] = P.ints[c, u, CUT]
            stats[pos] = P.stats[c, u]
            pos += 1
    return counts, var, cut, stats


def root_tree(buffers: IslandBuffers):
    """The island's starting tree (a :class:`~pymc_treesamplers.engine.records.Tree` of views)."""
    return tree_of(buffers.root.arrays(), 0)
