"""Change and swap moves (Chipman, George & McCulloch 1998).

Both re-partition the rows of the changed subtree, so the tree prior of every node below the
change is recomputed (available weights, rule probabilities, leaf split factors). A proposal that
leaves a split with an empty side has prior probability zero and is rejected.

Both accept in two stages (delayed acceptance, Christen & Fox 2005): first by the ratio of the
subtree's leaf marginal likelihoods, from leaf sums of the rows routed through the new rules where
they lie (:func:`_routed_loglik`: one read of the subtree's rows, nothing moved); only a proposal that
passes is re-partitioned, its prior terms refreshed and accepted by the ratio of the priors. With
``rho = rho_1 rho_2`` the full Metropolis-Hastings ratio, accepting with ``min(1, rho_1) min(1, rho_2)``
satisfies detailed balance for the same target, so the move stays exact; the rows of a rejected
proposal (most of them) are never moved, backed up or restored: at 10^6 rows a change at the root
cost as much as the rest of the sweep's moves together.

``mb`` arguments are :class:`MoveBuffers`: the scratch every rule-changing move needs.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..gaussian import leaf_loglik
from ..layout import CUT, END, FALSE, LEFT, NODE_INT, PARENT, RIGHT, RULELP, START, TRUE, VAR
from ..prior import NEG_INF, draw_split_rule
from ..records import Backup, new_backup
from ..tree import (
    INTERNAL,
    INTERNAL_CHILD,
    backup,
    random_node,
    refresh_subtree_prior,
    repartition_subtree,
    restore,
    subtree_log_prior,
    subtree_nodes,
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
def _routed_loglik(t, data, prior, ps, k, mb):
    """Sums of the leaf marginal likelihoods of ``k``'s subtree as its rows lie now and under the rules
    written in ``t`` now, in one read of the rows: each row is added to its current leaf's sums and routed
    through the rules to its new leaf's (held in ``mb.bk.floats`` meanwhile). The second is ``-inf`` when a
    leaf would be empty (prior probability zero)."""
    ti = t.ints
    acc = mb.bk.floats
    order = mb.order
    L = subtree_nodes(ti, k, order)
    for q in range(L):
        u = order[q]
        acc[u, 0] = 0.0
        acc[u, 1] = 0.0
        acc[u, 2] = 0.0
    codes = data.codes
    old = 0.0
    for q in range(L):
        leaf = order[q]
        if ti[leaf, LEFT] >= 0:
            continue
        W = 0.0
        S = 0.0
        for p in range(ti[leaf, START], ti[leaf, END]):  # the current leaf's rows
            i = t.perm[p]
            w = ps.w[i]
            wr = w * ps.r[i]
            W += w
            S += wr
            u = k
            while ti[u, LEFT] >= 0:
                u = ti[u, LEFT] if codes[ti[u, VAR], i] <= ti[u, CUT] else ti[u, RIGHT]
            acc[u, 0] += w
            acc[u, 1] += wr
            acc[u, 2] += 1.0
        old += leaf_loglik(prior, W, S)
    new = 0.0
    for q in range(L):
        u = order[q]
        if ti[u, LEFT] < 0:
            if acc[u, 2] == 0.0:
                return old, NEG_INF
            new += leaf_loglik(prior, acc[u, 0], acc[u, 1])
    return old, new


@numba.njit(cache=True, nogil=True)
def _prior_terms(t, prior, k, order, top_rule):
    """Log prior of ``k``'s subtree as :func:`~pymc_treesamplers.tree.subtree_log_prior` gives it, without
    ``k``'s own rule unless ``top_rule`` (a change draws that rule from its prior, which cancels)."""
    total = subtree_log_prior(t, prior, k, order)
    return total if top_rule else total - t.floats[k, RULELP]


@numba.njit(cache=True, nogil=True)
def _second_stage(rng, t, data, prior, k, mb, old_prior, top_rule):
    """The proposal (new rules at and below ``k``, old rules saved in ``mb.bk``) passed the likelihood
    stage: re-split the rows, refresh the prior terms, accept by the prior ratio, else restore."""
    if repartition_subtree(t, data, k, mb.order):
        refresh_subtree_prior(t, data, k, mb.order)
        if math.log(rng.random()) < _prior_terms(t, prior, k, mb.order, top_rule) - old_prior:
            return True
    restore(t, k, mb.bk, t.nn[0])
    return False


@numba.njit(cache=True, nogil=True)
def change_move(rng, t, data, prior, ps, mb):
    """Redraw the rule of a uniformly chosen internal node from the rule prior; accept in two stages
    (module docstring).

    The proposal probability of the new rule equals its prior, so the ratio keeps only the
    prior and likelihood of the nodes below.
    """
    k = random_node(rng, t, INTERNAL)
    if k < 0:
        return False
    ti = t.ints
    v, c, _ = draw_split_rule(rng, data, t.perm, ti[k, START], ti[k, END], mb.scratch_p)
    pv = ti[k, VAR]
    pc = ti[k, CUT]
    if v == pv and c == pc:
        return False  # proposal equals the current tree: nothing changes (not counted as accepted)
    ti[k, VAR] = v
    ti[k, CUT] = c
    old_lik, new_lik = _routed_loglik(t, data, prior, ps, k, mb)
    ti[k, VAR] = pv
    ti[k, CUT] = pc
    if not math.log(rng.random()) < new_lik - old_lik:
        return False
    old_prior = _prior_terms(t, prior, k, mb.order, FALSE)
    backup(t, k, mb.bk)
    ti[k, VAR] = v
    ti[k, CUT] = c
    return _second_stage(rng, t, data, prior, k, mb, old_prior, FALSE)


@numba.njit(cache=True, nogil=True)
def _swap_rules(ti, k, ch, both):
    """Swap the rule of ``k`` with its child ``ch``'s (with both children's when ``both``): its own inverse."""
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    pv = ti[k, VAR]
    pc = ti[k, CUT]
    ti[k, VAR] = ti[ch, VAR]
    ti[k, CUT] = ti[ch, CUT]
    if both:
        ti[a, VAR] = pv
        ti[a, CUT] = pc
        ti[b, VAR] = pv
        ti[b, CUT] = pc
    else:
        ti[ch, VAR] = pv
        ti[ch, CUT] = pc


@numba.njit(cache=True, nogil=True)
def swap_move(rng, t, data, prior, ps, mb):
    """Swap the rules of a uniformly chosen (internal parent, internal child) pair; accept in two stages
    (module docstring).

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
    both = ti[a, LEFT] >= 0 and ti[b, LEFT] >= 0 and ti[a, VAR] == ti[b, VAR] and ti[a, CUT] == ti[b, CUT]
    _swap_rules(ti, k, ch, both)
    old_lik, new_lik = _routed_loglik(t, data, prior, ps, k, mb)
    # undo the swap: the same swap again (with both children, they carry the parent's old rule now)
    _swap_rules(ti, k, ch if not both else a, both)
    if not math.log(rng.random()) < new_lik - old_lik:
        return False
    old_prior = _prior_terms(t, prior, k, mb.order, TRUE)
    backup(t, k, mb.bk)
    _swap_rules(ti, k, ch, both)
    return _second_stage(rng, t, data, prior, k, mb, old_prior, TRUE)
