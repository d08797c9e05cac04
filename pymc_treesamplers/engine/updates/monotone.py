"""The monotone tree update: grow, prune, change and swap carrying the leaves' values, then exact Gibbs on them.

Under monotone constraints (:mod:`..monotone`) the target of a tree is ``p(T) p(mu | T) 1[mu monotone in T]``
times the likelihood: the leaves no longer integrate out one by one, so every move carries them.

* **grow** (leaf ``l`` split into ``L``, ``R``): the rule is drawn from its prior, ``mu_L`` from its Gaussian
  conditional truncated to the interval its ordered neighbours (but ``R``) leave it, then ``mu_R`` truncated by
  its neighbours and ``mu_L``. The reverse prune draws ``mu_l`` truncated by ``l``'s neighbours. With ``Z`` the
  leaves' marginal likelihoods and ``P`` the truncated intervals' conditional masses, the ratio is that of the
  collapsed grow (:mod:`..moves.growprune`) times ``P_L P_R(mu_L) / P_l``: each drawn value's density cancels
  against its target factor, leaving its interval's mass.
* **prune**: the reverse, the inverse ratio.
* **change**, **swap**: the rules are redrawn as in :mod:`..moves.cgm` and every leaf keeps its value; the ratio
  is the tree prior and the likelihood at those values (``sum S mu - W mu^2 / 2`` per leaf), zero when the new
  boxes break an order.

After the move the leaves are redrawn by :func:`..monotone.gibbs_leaves`. The update carries its leaves, so the
driver takes the tree's fit off the residual itself instead of drawing leaves (:func:`..driver.register_update`).
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..driver import register_update
from ..gaussian import leaf_loglik
from ..monotone import (
    box_bounds,
    gibbs_leaves,
    is_monotone,
    leaf_bounds,
    leaf_boxes,
    leaf_posterior,
    leaf_values,
    log_mass,
    node_box,
    ordered_pairs,
    truncated_draw,
    used_columns,
)
from ..moves.cgm import MoveBuffers, _swap_rules, new_move_buffers
from ..moves.growprune import grow_choice_logs, pick_grow, prune_choice_logs
from ..nodes import CUT, DEPTH, END, FALSE, LEFT, LWAVAIL, PARENT, RIGHT, RULELP, START, TRUE, VALUE, VAR
from ..prior import draw_split_rule, leaf_log_prior, side_log_avail
from ..rows import range_suff, split_suff
from ..tree import (
    INTERNAL,
    INTERNAL_CHILD,
    NOG,
    backup,
    collapse,
    count_nodes,
    random_node,
    refresh_subtree_prior,
    repartition_subtree,
    restore,
    split_leaf,
    split_log_prior_ratio,
    subtree_nodes,
)
from .mh import MOVE_CHANGE, MOVE_GROW, MOVE_PRUNE, MOVE_SWAP


class MonotoneScratch(NamedTuple):
    """``probs`` (grow, prune, change, swap), the rule-changing moves' buffers, each tree's last move, the
    direction of every split column (+1, -1, 0)."""

    probs: np.ndarray
    mb: MoveBuffers
    moves: np.ndarray
    dirs: np.ndarray


def new_monotone_scratch(probs, dirs, n: int, m: int) -> MonotoneScratch:
    """Scratch for :func:`monotone_update` on ``m`` trees over ``n`` rows; ``probs`` the four CGM move
    probabilities, ``dirs`` one direction per split column.

    >>> new_monotone_scratch([0.5, 0.5, 0.0, 0.0], [1, 0], 10, 2).dirs.tolist()
    [1, 0]
    """
    dirs = np.asarray(dirs, dtype=np.int64)
    return MonotoneScratch(np.asarray(probs, dtype=np.float64), new_move_buffers(dirs.shape[0], n),
                           np.zeros(m, dtype=np.int64), dirs)


@numba.njit(cache=True, nogil=True)
def _leaf_index(leaves, k):
    for i in range(leaves.shape[0]):
        if leaves[i] == k:
            return i
    return -1


# The two pieces of the ratio that a value drawn inside its interval cannot reveal, as functions of their own:
# tests/test_monotone.py rebuilds the moves with each replaced by a wrong one, which its enumeration tests catch.
@numba.njit(cache=True, nogil=True)
def masses_ratio(log_p_left, log_p_right, log_p_parent):
    """The log of a grow's ``P_L P_R(mu_L) / P_l`` (a prune's is its negative)."""
    return log_p_left + log_p_right - log_p_parent


@numba.njit(cache=True, nogil=True)
def reverse_box(parent_lo, parent_hi, left_lo, left_hi):
    """The box whose neighbours bound a grow's reverse draw, the merged leaf's: the parent's."""
    return parent_lo, parent_hi


@numba.njit(cache=True, nogil=True)
def grow_carried(rng, t, data, prior, pseudo, sk, log_pgrow_t, log_pprune):
    """Split a growable leaf, drawing both children's values (module docstring); True if accepted."""
    g, k, v, c, n_cuts = pick_grow(rng, t, data, sk.mb.scratch_p)
    if g == 0:
        return False
    ti = t.ints
    s = ti[k, START]
    e = ti[k, END]
    code_v = data.codes[v]
    n_left, WL, SL, WR, SR = split_suff(pseudo.r, pseudo.w, t.perm, s, e, code_v, c, pseudo.threads)
    lwa = side_log_avail(data, t.perm, s, e, code_v, c, True, n_left)
    lwb = side_log_avail(data, t.perm, s, e, code_v, c, False, e - s - n_left)
    back, forth = grow_choice_logs(t, k, g, log_pgrow_t, log_pprune)
    dlik = leaf_loglik(prior, WL, SL) + leaf_loglik(prior, WR, SR) - leaf_loglik(prior, WL + WR, SL + SR)
    log_r = split_log_prior_ratio(prior, ti[k, DEPTH], lwa, lwb) + dlik + back - forth
    dirs = sk.dirs
    leaves, lo, hi = leaf_boxes(t, dirs.shape[0])
    cols = used_columns(ti, t.nn[0], v)
    values = leaf_values(t, leaves)
    i = _leaf_index(leaves, k)
    lo_l = lo[i].copy()
    hi_l = hi[i].copy()
    hi_l[v] = min(hi_l[v], c)
    lo_r = lo[i].copy()
    hi_r = hi[i].copy()
    lo_r[v] = max(lo_r[v], c + 1)
    # the parent's interval, for the reverse prune's draw
    rlo, rhi = reverse_box(lo[i], hi[i], lo_l, hi_l)
    pl, ph = box_bounds(rlo, rhi, lo, hi, i, -1, cols, dirs, values)
    mean, sd = leaf_posterior(prior, WL + WR, SL + SR)
    log_p_parent = log_mass(mean, sd, pl, ph)
    a_lo, a_hi = box_bounds(lo_l, hi_l, lo, hi, i, -1, cols, dirs, values)
    mean, sd = leaf_posterior(prior, WL, SL)
    log_p_left = log_mass(mean, sd, a_lo, a_hi)
    if log_p_left == -math.inf:
        return False
    mu_left = truncated_draw(rng, mean, sd, a_lo, a_hi)
    b_lo, b_hi = box_bounds(lo_r, hi_r, lo, hi, i, -1, cols, dirs, values)
    if dirs[v] > 0:
        b_lo = max(b_lo, mu_left)
    elif dirs[v] < 0:
        b_hi = min(b_hi, mu_left)
    mean, sd = leaf_posterior(prior, WR, SR)
    log_p_right = log_mass(mean, sd, b_lo, b_hi)
    if log_p_right == -math.inf:
        return False
    mu_right = truncated_draw(rng, mean, sd, b_lo, b_hi)
    log_r += masses_ratio(log_p_left, log_p_right, log_p_parent)
    if math.log(rng.random()) < log_r:
        split_leaf(t, k, v, c, n_cuts, data)
        t.floats[ti[k, LEFT], VALUE] = mu_left
        t.floats[ti[k, RIGHT], VALUE] = mu_right
        return True
    return False


@numba.njit(cache=True, nogil=True)
def prune_carried(rng, t, data, prior, pseudo, sk, log_pgrow, log_pprune):
    """Collapse a node whose children are leaves, drawing the new leaf's value (module docstring); True if
    accepted."""
    nog = count_nodes(t, NOG)
    k = random_node(rng, t, NOG)
    if k < 0:
        return False
    ti = t.ints
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    back, forth = prune_choice_logs(t, k, nog, log_pgrow, log_pprune)
    WL, SL = range_suff(pseudo.r, pseudo.w, t.perm, ti[a, START], ti[a, END], pseudo.threads)
    WR, SR = range_suff(pseudo.r, pseudo.w, t.perm, ti[b, START], ti[b, END], pseudo.threads)
    dlik = leaf_loglik(prior, WL, SL) + leaf_loglik(prior, WR, SR) - leaf_loglik(prior, WL + WR, SL + SR)
    grow_ratio = split_log_prior_ratio(prior, ti[k, DEPTH], t.floats[a, LWAVAIL], t.floats[b, LWAVAIL]) + dlik
    log_r = -grow_ratio + back - forth
    dirs = sk.dirs
    leaves, lo, hi = leaf_boxes(t, dirs.shape[0])
    cols = used_columns(ti, t.nn[0], -1)
    values = leaf_values(t, leaves)
    ia = _leaf_index(leaves, a)
    ib = _leaf_index(leaves, b)
    pairs = ordered_pairs(lo, hi, cols, dirs)
    # the reverse grow's draws: the left child without the right, then the right given everything
    mean, sd = leaf_posterior(prior, WL, SL)
    low, high = leaf_bounds(ia, ib, pairs, values)
    log_p_left = log_mass(mean, sd, low, high)
    mean, sd = leaf_posterior(prior, WR, SR)
    low, high = leaf_bounds(ib, -1, pairs, values)
    log_p_right = log_mass(mean, sd, low, high)
    box_lo = np.empty(dirs.shape[0], dtype=np.int64)
    box_hi = np.empty(dirs.shape[0], dtype=np.int64)
    node_box(ti, k, box_lo, box_hi)
    low, high = box_bounds(box_lo, box_hi, lo, hi, ia, ib, cols, dirs, values)
    mean, sd = leaf_posterior(prior, WL + WR, SL + SR)
    log_p_parent = log_mass(mean, sd, low, high)
    if log_p_parent == -math.inf:
        return False
    mu = truncated_draw(rng, mean, sd, low, high)
    log_r -= masses_ratio(log_p_left, log_p_right, log_p_parent)
    if math.log(rng.random()) < log_r:
        t.floats[k, VALUE] = mu  # before the collapse, which may move k's slot with its row
        collapse(t, k, pseudo.threads)
        return True
    return False


@numba.njit(cache=True, nogil=True)
def _carried_log_post(t, prior, pseudo, k, order, top_rule):
    """The log target of ``k``'s subtree at its leaves' values, up to what a change or swap keeps: the leaves'
    likelihood ``S mu - W mu^2 / 2`` and prior factors, the rules below ``k`` (``k``'s own if ``top_rule``)."""
    ti = t.ints
    tf = t.floats
    total = 0.0
    for q in range(subtree_nodes(ti, k, order)):
        u = order[q]
        if ti[u, LEFT] < 0:
            W, S = range_suff(pseudo.r, pseudo.w, t.perm, ti[u, START], ti[u, END], pseudo.threads)
            mu = tf[u, VALUE]
            total += S * mu - 0.5 * W * mu * mu + leaf_log_prior(prior, ti[u, DEPTH], tf[u, LWAVAIL])
        elif u != k or top_rule:
            total += tf[u, RULELP]
    return total


@numba.njit(cache=True, nogil=True)
def _settle_carried(rng, t, data, prior, pseudo, k, mb, dirs, old, top_rule):
    """Finish a change or swap whose new rules are written at and below ``k`` (the tree saved in ``mb.bk``)."""
    if repartition_subtree(t, data, k, mb.order):
        refresh_subtree_prior(t, data, k, mb.order)
        if is_monotone(t, dirs):
            new = _carried_log_post(t, prior, pseudo, k, mb.order, top_rule)
            if math.log(rng.random()) < new - old:
                return True
    restore(t, k, mb.bk, t.nn[0])
    return False


@numba.njit(cache=True, nogil=True)
def change_carried(rng, t, data, prior, pseudo, sk):
    """Redraw the rule of a uniformly chosen internal node from its prior, every leaf keeping its value."""
    k = random_node(rng, t, INTERNAL)
    if k < 0:
        return False
    ti = t.ints
    mb = sk.mb
    v, c, _ = draw_split_rule(rng, data, t.perm, ti[k, START], ti[k, END], mb.scratch_p)
    if v == ti[k, VAR] and c == ti[k, CUT]:
        return False
    old = _carried_log_post(t, prior, pseudo, k, mb.order, FALSE)
    backup(t, k, mb.bk)
    ti[k, VAR] = v
    ti[k, CUT] = c
    return _settle_carried(rng, t, data, prior, pseudo, k, mb, sk.dirs, old, FALSE)


@numba.njit(cache=True, nogil=True)
def swap_carried(rng, t, data, prior, pseudo, sk):
    """Swap the rules of a uniformly chosen (internal parent, internal child) pair, every leaf keeping its value."""
    ch = random_node(rng, t, INTERNAL_CHILD)
    if ch < 0:
        return False
    k = t.ints[ch, PARENT]
    mb = sk.mb
    old = _carried_log_post(t, prior, pseudo, k, mb.order, TRUE)
    backup(t, k, mb.bk)
    _swap_rules(t.ints, k, ch)
    return _settle_carried(rng, t, data, prior, pseudo, k, mb, sk.dirs, old, TRUE)


@register_update(MonotoneScratch, carries_leaves=True)
@numba.njit(cache=True, nogil=True, inline="always")  # one call site: the driver
def monotone_update(rng, j, t, data, prior, pseudo, sampler):
    """One move of the mixture ``sampler.probs`` for tree ``j`` (a root-only tree grows), then the leaves' Gibbs
    step; returns 1 if the move was accepted."""
    probs = sampler.probs
    u = rng.random()
    if t.ints[0, LEFT] < 0:
        sampler.moves[j] = MOVE_GROW
        accepted = grow_carried(rng, t, data, prior, pseudo, sampler, 0.0, math.log(probs[1]))
    elif u < probs[0]:
        sampler.moves[j] = MOVE_GROW
        accepted = grow_carried(rng, t, data, prior, pseudo, sampler, math.log(probs[0]), math.log(probs[1]))
    elif u < probs[0] + probs[1]:
        sampler.moves[j] = MOVE_PRUNE
        accepted = prune_carried(rng, t, data, prior, pseudo, sampler, math.log(probs[0]), math.log(probs[1]))
    elif u < probs[0] + probs[1] + probs[2]:
        sampler.moves[j] = MOVE_CHANGE
        accepted = change_carried(rng, t, data, prior, pseudo, sampler)
    else:
        sampler.moves[j] = MOVE_SWAP
        accepted = swap_carried(rng, t, data, prior, pseudo, sampler)
    gibbs_leaves(rng, t, prior, pseudo, sampler.dirs)
    return int(accepted)
