"""One island of the single-tree SMC estimator: an unconditional run of the SMC core of
:mod:`.smc` under a conjugate leaf model, and its particles read out in preorder.

An island is one independent particle filter over the rows of the training data (Lakshminarayanan,
Roy & Teh 2013, section 4.1.3): it returns the particles' final log weights and the log of its
marginal-likelihood estimate relative to the single-leaf tree. :class:`Islands` is the estimator's way in: the
coded data and tree prior its islands share, and one island's run; the caller
(:mod:`pymc_treesamplers.estimators.smctree`) runs several, in threads when asked (the kernels release the GIL).
"""

from typing import NamedTuple

import numba
import numpy as np

from ..forest import Forest, init_roots
from ..nodes import CUT, FALSE, ROOT, VAR
from ..pool import start as start_pool
from ..records import TreePrior, split_data, tree_of
from ..smc import (
    L_,
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


class Islands:
    """The single-tree SMC's way into the engine: split codes ``codes`` (p, n) under the tree prior ``alpha``,
    ``beta`` (every column weighted alike; a leaf's own prior is its leaf model's), the SMC options ``opts`` and
    leaf statistics of ``width`` values. Each :meth:`run` is one independent island.

    >>> from pymc_treesamplers.engine import PROPOSAL_PRIOR, RESAMPLE_SYSTEMATIC, SMCOptions, normal_gamma, n_stats
    >>> lm = normal_gamma(np.array([0.0, 0.1, 2.0, 2.1]), 0.0, 1.0, 2.0, 1.0)
    >>> opts = SMCOptions(5, PROPOSAL_PRIOR, RESAMPLE_SYSTEMATIC, 1.0, 100)
    >>> stages, log_ev, logw, (counts, var, cut, stats) = Islands(
    ...     np.array([[0, 1, 2, 3]], dtype=np.uint16), 0.95, 2.0, opts, n_stats(lm)).run(np.random.default_rng(0), lm)
    >>> stages > 0, counts.shape
    (True, (5,))
    """

    def __init__(self, codes: np.ndarray, alpha: float, beta: float, opts: SMCOptions, width: int):
        start_pool()  # numba's threading layer and pool, before the first kernel (engine/pool.py)
        self.data = split_data(codes, np.ones(codes.shape[0]), 1)
        self.prior = TreePrior(alpha, beta, 0.0, 1.0)
        self.opts, self.width = opts, width

    def run(self, rng: np.random.Generator, lm) -> tuple[int, float, np.ndarray, tuple]:
        """One island under the leaf model ``lm``: ``(stages, log evidence, log weights, particles)``, the log of
        the island's estimate of the marginal likelihood and its particles as :func:`read_particles` gives them
        (``stages = -1``: the stage limit stopped the run)."""
        buf = new_island(self.opts, self.data, self.width)
        stages, log_z = run_island(rng, self.opts, root_tree(buf), buf.particles, self.data, self.prior, lm,
                                   buf.proposals)
        particles = read_particles(buf.particles)
        # log_z is relative to the single leaf: times that leaf's likelihood (the root is every particle's first)
        return stages, log_z + particles[3][0, L_], buf.particles.logw.copy(), particles
