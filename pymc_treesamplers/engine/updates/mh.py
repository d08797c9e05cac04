"""Metropolis-Hastings tree update: one proposal per tree from a mixture of grow, prune, change
and swap (Chipman, George & McCulloch 1998) and the twig moves, attach and detach (:mod:`..moves.twig`); with
change and swap at zero, grow/prune only."""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..driver import register_update
from ..moves.cgm import MoveBuffers, change_move, new_move_buffers, swap_move
from ..moves.growprune import grow_move, prune_move
from ..moves.twig import aimed_attach_move, aimed_detach_move, attach_move, detach_move
from ..nodes import LEFT

MOVE_GROW, MOVE_PRUNE, MOVE_CHANGE, MOVE_SWAP, MOVE_ATTACH, MOVE_DETACH, MOVE_AIMED_ATTACH, MOVE_AIMED_DETACH = range(8)
N_MOVES = 8
AIMED_RHO = 0.5
"""The probability that an aimed twig's path goes on splitting (:func:`~..moves.twig.aimed_attach_move`)."""


class MHScratch(NamedTuple):
    """``probs`` (grow, prune, change, swap, attach, detach, aimed attach, aimed detach), move buffers, and the move
    each tree last proposed."""

    probs: np.ndarray
    mb: MoveBuffers
    moves: np.ndarray


def new_mh_scratch(probs, p: int, n: int, m: int) -> MHScratch:
    """Scratch for :func:`mh_update` on ``m`` trees over ``n`` rows and ``p`` covariates; ``probs``: the four
    CGM move probabilities, or eight with the twig moves' last (attach, detach, aimed attach, aimed detach)."""
    probs = np.asarray(probs, dtype=np.float64)
    probs = np.pad(probs, (0, N_MOVES - len(probs)))
    return MHScratch(probs, new_move_buffers(p, n), np.zeros(m, dtype=np.int64))


@register_update(MHScratch)
@numba.njit(cache=True, nogil=True, inline="always")  # one call site: the driver
def mh_update(rng, j, t, data, prior, pseudo, sampler):
    """One MH proposal for tree ``j``; returns 1 if accepted. A root-only tree proposes a grow with
    probability 1; every other tree draws the move type from ``sampler.probs``."""
    probs = sampler.probs
    if t.ints[0, LEFT] < 0:
        sampler.moves[j] = MOVE_GROW
        return int(grow_move(rng, t, data, prior, pseudo, sampler.mb.scratch_p, 0.0, math.log(probs[1])))
    u = rng.random()
    if u < probs[0]:
        sampler.moves[j] = MOVE_GROW
        return int(grow_move(rng, t, data, prior, pseudo, sampler.mb.scratch_p, math.log(probs[0]), math.log(probs[1])))
    u -= probs[0]
    if u < probs[1]:
        sampler.moves[j] = MOVE_PRUNE
        return int(prune_move(rng, t, prior, pseudo, math.log(probs[0]), math.log(probs[1])))
    u -= probs[1]
    if u < probs[2]:
        sampler.moves[j] = MOVE_CHANGE
        return int(change_move(rng, t, data, prior, pseudo, sampler.mb))
    u -= probs[2]
    # u >= 0 here (rounded subtractions of smaller numbers), so zero twig probabilities leave the draws as they were
    if u < probs[4]:
        sampler.moves[j] = MOVE_ATTACH
        return int(attach_move(rng, t, data, prior, pseudo, sampler.mb, math.log(probs[4]), math.log(probs[5])))
    u -= probs[4]
    if u < probs[5]:
        sampler.moves[j] = MOVE_DETACH
        return int(detach_move(rng, t, prior, pseudo, sampler.mb, math.log(probs[4]), math.log(probs[5])))
    u -= probs[5]
    if u < probs[6]:
        sampler.moves[j] = MOVE_AIMED_ATTACH
        return int(aimed_attach_move(rng, t, data, prior, pseudo, sampler.mb, AIMED_RHO, math.log(probs[6]),
                                     math.log(probs[7])))
    u -= probs[6]
    if u < probs[7]:
        sampler.moves[j] = MOVE_AIMED_DETACH
        return int(aimed_detach_move(rng, t, data, prior, pseudo, sampler.mb, AIMED_RHO, math.log(probs[6]),
                                     math.log(probs[7])))
    sampler.moves[j] = MOVE_SWAP
    return int(swap_move(rng, t, data, prior, pseudo, sampler.mb))
