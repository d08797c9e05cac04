"""Change and swap moves (Chipman, George & McCulloch 1998).

Both re-partition the rows of the changed subtree, so the tree prior of every node below the
change is recomputed (available weights, rule probabilities, leaf split factors). A proposal that
leaves a split with an empty side has prior probability zero and is rejected. On rejection the
tree's node rows and the subtree's row order are restored from a backup.

Most proposals are rejected once a chain has found the data, so a subtree of up to two levels is first
screened with its rows unmoved: one read-only pass sums its rows under the new rules, which finds an
empty side and bounds the new posterior from above; the uniform is drawn then, and only a proposal it
does not reject against the bound is re-partitioned and scored exactly. The accept event is unchanged,
and so is every draw (the bound carries a margin for sums added in another order).

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
    rule_change_bound,
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
def _screen(rng, t, data, prior, pseudo, k, top_rule, old):
    """Score the rules now written at and below ``k`` with the rows unmoved against ``old``, the subtree's
    :func:`subtree_log_post` under its old rules (taken before they were rewritten: on a basis chosen by the tree a
    leaf's marginal reads its parent's rule); returns ``(go, lu)``.

    ``go`` is False when a split is left with an empty side (prior zero: rejected, no uniform drawn) or when
    the uniform ``lu`` (log) already rejects against the bound of :func:`rule_change_bound`: the draws and
    decisions are those :func:`_settle` would have made, without moving a row. ``lu`` is NaN for a subtree
    the bound does not cover: :func:`_settle` draws it, after the validity check, as it always did.
    """
    ok, bound = rule_change_bound(t, data, prior, pseudo, k, top_rule)
    if not ok:
        return False, 0.0
    if bound == math.inf:
        return True, math.nan
    lu = math.log(rng.random())
    # the margin covers the bound's sums being added in another order than the exact ones (rounding of order
    # 1e-16 relative); a wider margin only sends a few more proposals down the exact path
    return lu < bound - old + 1e-7 * (1.0 + abs(bound) + abs(old)), lu


@numba.njit(cache=True, nogil=True)
def _settle(rng, t, data, prior, pseudo, k, mb, old, top_rule, lu):
    """Finish a change/swap whose new rules are written at and below ``k`` (saved in ``mb.bk``): re-split
    the rows, refresh the prior terms, accept if ``lu < new - old`` (``lu`` drawn here when NaN), otherwise
    restore."""
    if repartition_subtree(t, data, k, mb.order):
        refresh_subtree_prior(t, data, k, mb.order)
        new = subtree_log_post(t, prior, pseudo, k, mb.order, top_rule=top_rule, split_probs=FALSE)
        if math.isnan(lu):
            lu = math.log(rng.random())
        if lu < new - old:
            return True
    restore(t, k, mb.bk, t.nn[0])
    return False


@numba.njit(cache=True, nogil=True)
def change_move(rng, t, data, prior, pseudo, mb):
    """Redraw the rule of a uniformly chosen internal node from the rule prior; MH accept.

    The proposal probability of the new rule equals its prior, so the ratio keeps only the
    prior and likelihood of the nodes below. The proposal is screened with the rows unmoved
    (:func:`_screen`); only one the uniform does not reject outright is re-partitioned.
    """
    k = random_node(rng, t, INTERNAL)
    if k < 0:
        return False
    ti = t.ints
    v, c, _ = draw_split_rule(rng, data, t.perm, ti[k, START], ti[k, END], mb.scratch_p)
    if v == ti[k, VAR] and c == ti[k, CUT]:
        return False  # proposal equals the current tree: nothing changes (not counted as accepted)
    pv = ti[k, VAR]
    pc = ti[k, CUT]
    old = subtree_log_post(t, prior, pseudo, k, mb.order, top_rule=FALSE, split_probs=FALSE)
    ti[k, VAR] = v
    ti[k, CUT] = c
    go, lu = _screen(rng, t, data, prior, pseudo, k, FALSE, old)
    ti[k, VAR] = pv
    ti[k, CUT] = pc
    if not go:
        return False
    backup(t, k, mb.bk)
    ti[k, VAR] = v
    ti[k, CUT] = c
    return _settle(rng, t, data, prior, pseudo, k, mb, old, FALSE, lu)


@numba.njit(cache=True, nogil=True)
def _swap_rules(ti, k, ch):
    """Swap the rules of ``k`` and its internal child ``ch`` (of ``k`` and both children when these carry the
    same rule: the only swap that gives a valid tree there)."""
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    pv = ti[k, VAR]
    pc = ti[k, CUT]
    ti[k, VAR] = ti[ch, VAR]
    ti[k, CUT] = ti[ch, CUT]
    if ti[a, LEFT] >= 0 and ti[b, LEFT] >= 0 and ti[a, VAR] == ti[b, VAR] and ti[a, CUT] == ti[b, CUT]:
        ti[a, VAR] = pv
        ti[a, CUT] = pc
        ti[b, VAR] = pv
        ti[b, CUT] = pc
    else:
        ti[ch, VAR] = pv
        ti[ch, CUT] = pc


@numba.njit(cache=True, nogil=True)
def swap_move(rng, t, data, prior, pseudo, mb):
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
    saved = (ti[k, VAR], ti[k, CUT], ti[a, VAR], ti[a, CUT], ti[b, VAR], ti[b, CUT])
    old = subtree_log_post(t, prior, pseudo, k, mb.order, top_rule=TRUE, split_probs=FALSE)
    _swap_rules(ti, k, ch)
    go, lu = _screen(rng, t, data, prior, pseudo, k, TRUE, old)
    ti[k, VAR], ti[k, CUT], ti[a, VAR], ti[a, CUT], ti[b, VAR], ti[b, CUT] = saved
    if not go:
        return False
    backup(t, k, mb.bk)
    _swap_rules(ti, k, ch)
    return _settle(rng, t, data, prior, pseudo, k, mb, old, TRUE, lu)
