"""The reshape tree update: many Metropolis-Hastings proposals per tree and sweep, each drawn from a
mixture of local moves (grow, prune, change, swap; Chipman, George & McCulloch 1998) and moves that
reshape the tree: restructure (:mod:`.restructure`), splice (:mod:`.splice`), reroute (:mod:`.reroute`).

Every move is reversible with respect to the tree's conditional posterior, so the mixture is, and so
is a fixed number of its steps: the update composes ``n_moves`` draws of one reversible kernel, as
the likelihood correction of non-Gaussian models needs. A single-leaf tree proposes a grow with
probability 1 (the convention of :mod:`.mh`, whose prune ratio relies on it); no other move leads
to a single leaf.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..driver import register_update
from ..moves.cgm import MoveBuffers, change_move, new_move_buffers, swap_move
from ..moves.growprune import grow_move, prune_move
from ..moves.preorder import SeqScratch, new_seq_scratch
from ..moves.reroute import RerouteScratch, new_reroute_scratch, reroute_move
from ..moves.restructure import RestructureScratch, new_restructure_scratch, restructure_move
from ..moves.splice import delete_move, insert_move
from ..nodes import LEFT

N_KINDS = 7
GROW, PRUNE, CHANGE, SWAP, RESTRUCTURE, SPLICE, REROUTE = range(N_KINDS)
KIND_NAMES = ("grow", "prune", "change", "swap", "restructure", "splice", "reroute")


class ReshapeScratch(NamedTuple):
    """Move probabilities (:data:`KIND_NAMES` order), proposals per tree, the moves' buffers, and
    per move kind the proposals and acceptances of the last sweep."""

    probs: np.ndarray
    n_moves: int
    mb: MoveBuffers
    rs: RestructureScratch
    seq: SeqScratch
    rr: RerouteScratch
    proposed: np.ndarray
    accepted: np.ndarray


def new_reshape_scratch(probs, n_moves: int, p: int, n: int) -> ReshapeScratch:
    """Scratch for :func:`reshape_update` over ``n`` rows and ``p`` covariates."""
    return ReshapeScratch(np.asarray(probs, dtype=np.float64), n_moves, new_move_buffers(p, n),
                          new_restructure_scratch(p, n), new_seq_scratch(n), new_reroute_scratch(n),
                          np.zeros(N_KINDS, dtype=np.int64), np.zeros(N_KINDS, dtype=np.int64))


@register_update(ReshapeScratch)
@numba.njit(cache=True, nogil=True, inline="always")  # one call site: the driver
def reshape_update(rng, j, t, data, prior, pseudo, sampler):
    """``sampler.n_moves`` proposals for tree ``j``, each of a kind drawn from ``sampler.probs``; returns 1 if
    any was accepted. The caller zeroes ``sampler.proposed`` and ``sampler.accepted`` per sweep."""
    any_accepted = False
    for _ in range(sampler.n_moves):
        kind = _draw_kind(rng, sampler.probs) if t.ints[0, LEFT] >= 0 else GROW
        ok = _move(rng, kind, t, data, prior, pseudo, sampler)
        sampler.proposed[kind] += 1
        if ok:
            sampler.accepted[kind] += 1
            any_accepted = True
    return int(any_accepted)


@numba.njit(cache=True, nogil=True)
def _draw_kind(rng, probs):
    u = rng.random()
    for k in range(N_KINDS - 1):
        if u < probs[k]:
            return k
        u -= probs[k]
    return N_KINDS - 1


@numba.njit(cache=True, nogil=True)
def _move(rng, kind, t, data, prior, pseudo, sampler):
    probs = sampler.probs
    if kind == GROW:
        log_pgrow = 0.0 if t.ints[0, LEFT] < 0 else math.log(probs[GROW])
        return grow_move(rng, t, data, prior, pseudo, sampler.mb.scratch_p, log_pgrow, math.log(probs[PRUNE]))
    if kind == PRUNE:
        return prune_move(rng, t, prior, pseudo, math.log(probs[GROW]), math.log(probs[PRUNE]))
    if kind == CHANGE:
        return change_move(rng, t, data, prior, pseudo, sampler.mb)
    if kind == SWAP:
        return swap_move(rng, t, data, prior, pseudo, sampler.mb)
    if kind == RESTRUCTURE:
        return restructure_move(rng, t, data, prior, pseudo, sampler.rs)
    if kind == SPLICE:
        if rng.random() < 0.5:
            return delete_move(rng, t, data, prior, pseudo, sampler.seq, sampler.mb.bk)
        return insert_move(rng, t, data, prior, pseudo, sampler.seq, sampler.mb.bk, sampler.mb.scratch_p)
    return reroute_move(rng, t, data, prior, pseudo, sampler.seq, sampler.rr, sampler.mb.scratch_p)
