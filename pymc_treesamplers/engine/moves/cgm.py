"""Change and swap moves (Chipman, George & McCulloch 1998).

Both re-partition the rows of the changed subtree, so the tree prior of every node below the
change is recomputed (available weights, rule probabilities, leaf split factors). A proposal that
leaves a split with an empty side has prior probability zero and is rejected. On rejection the
tree's node rows and the subtree's row order are restored from a backup.

``mb`` arguments are :class:`MoveBuffers`: the scratch every rule-changing move needs.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..nodes import CUT, END, FALSE, LEFT, NODE_INT, PARENT, RIGHT, START, TRUE, VAR
from ..prior import draw_split_rule
from ..records import Backup, new_backup
from ..tree import (
    INTERNAL,
    INTERNAL_CHILD,
    backup,
    random_node,
    refresh_subtree_prior,
    repartition_subtree,
    restore,
    subtree_log_post,
)


class MoveBuffers(NamedTuple):
    """Scratch of the rule-changing moves: per-variable weights, a walk buffer, a tree backup."""

    scratch_p: np.ndarray
    order: np.ndarray
    bk: Backup


def new_move_buffers(p: int, n: int) -> MoveBuffers:
    """:class:`MoveBuffers` for trees of up to ``2n + 1`` nodes on ``n`` rows and ``p`` covariates."""
    return MoveBuffers(np.empty(p), np.empty(2 * n + 1, dtype=NODE_INT), new_backup(2 * n + 1, n))


@numba.njit(cache=True, nogil=True)
def _settle(rng, t, data, prior, ps, k, mb, old, top_rule):
    """Finish a change/swap whose new rules are written at and below ``k``: re-split the rows,
    refresh the prior terms, accept with probability ``exp(new - old)``, otherwise restore."""
    if repartition_subtree(t, data, k, mb.order):
        refresh_subtree_prior(t, data, k, mb.order)
        new = subtree_log_post(t, prior, ps, k, mb.order, top_rule=top_rule, split_probs=FALSE)
        if math.log(rng.random()) < new - old:
            return True
    restore(t, k, mb.bk, t.nn[0])
    return False


@numba.njit(cache=True, nogil=True)
def change_move(rng, t, data, prior, ps, mb):
    """Redraw the rule of a uniformly chosen internal node from the rule prior; MH accept.

    The proposal probability of the new rule equals its prior, so the ratio keeps only the
    prior and likelihood of the nodes below.
    """
    k = random_node(rng, t, INTERNAL)
    if k < 0:
        return False
    ti = t.ints
    v, c, _ = draw_split_rule(rng, data, t.perm, ti[k, START], ti[k, END], mb.scratch_p)
    if v == ti[k, VAR] and c == ti[k, CUT]:
        return False  # proposal equals the current tree: nothing changes (not counted as accepted)
    old = subtree_log_post(t, prior, ps, k, mb.order, top_rule=FALSE, split_probs=FALSE)
    backup(t, k, mb.bk)
    ti[k, VAR] = v
    ti[k, CUT] = c
    return _settle(rng, t, data, prior, ps, k, mb, old, FALSE)


@numba.njit(cache=True, nogil=True)
def swap_move(rng, t, data, prior, ps, mb):
    """Swap the rules of a uniformly chosen (internal parent, internal child) pair; MH accept.

    When both children carry the same rule, the parent's rule is swapped with both (the only
    swap that can give a valid tree there). The proposal is symmetric.
    """
    ch = random_node(rng, t, INTERNAL_CHILD)
    if ch < 0:
        return False
    ti = t.ints
    k = ti[ch, PARENT]
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    old = subtree_log_post(t, prior, ps, k, mb.order, top_rule=TRUE, split_probs=FALSE)
    backup(t, k, mb.bk)
    pv = ti[k, VAR]
    pc = ti[k, CUT]
    ti[k, VAR] = ti[ch, VAR]
    ti[k, CUT] = ti[ch, CUT]
    both = ti[a, LEFT] >= 0 and ti[b, LEFT] >= 0 and ti[a, VAR] == ti[b, VAR] and ti[a, CUT] == ti[b, CUT]
    if both:
        ti[a, VAR] = pv
        ti[a, CUT] = pc
        ti[b, VAR] = pv
        ti[b, CUT] = pc
    else:
        ti[ch, VAR] = pv
        ti[ch, CUT] = pc
    return _settle(rng, t, data, prior, ps, k, mb, old, TRUE)
