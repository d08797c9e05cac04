"""Change and swap moves (Chipman, George & McCulloch 1998) and the CGM move mixture.

Both re-partition the rows of the changed subtree, so the tree prior of every node below the
change is recomputed (available weights, rule probabilities, leaf split factors). A proposal that
leaves a split with an empty side has prior probability zero and is rejected. On rejection the
tree's node rows and the subtree's row order are restored from a backup.
"""

import math

import numba

from ..forest import refresh_subtree_prior, repartition_subtree
from ..gaussian import leaf_loglik, leaf_suff
from ..layout import CUT, DEPTH, END, LEFT, LWAVAIL, PARENT, RIGHT, RULELP, START, VAR
from ..prior import draw_split_rule, leaf_log_prior
from .growprune import grow_move, prune_move, random_node

MOVE_NONE, MOVE_GROW, MOVE_PRUNE, MOVE_CHANGE, MOVE_SWAP = range(5)


@numba.njit(cache=True, nogil=True)
def subtree_score(ti, tf, pj, prm, resid, w, k, stack, include_root_rule):
    """Log prior terms that depend on rows below ``k`` plus the leaves' log marginal likelihoods.

    Counts rule probabilities of internal nodes (``k``'s own only if asked) and the leaf split
    factors; the ``p_split`` of internal nodes is unchanged by change/swap and left out.
    """
    alpha, beta, mu0, s2 = prm[0], prm[1], prm[2], prm[3]
    total = 0.0
    top = 0
    stack[top] = k
    top += 1
    while top > 0:
        top -= 1
        u = stack[top]
        if ti[u, LEFT] < 0:
            wu, su = leaf_suff(resid, w, pj, ti[u, START], ti[u, END])
            total += leaf_loglik(wu, su, mu0, s2) + leaf_log_prior(ti[u, DEPTH], tf[u, LWAVAIL], alpha, beta)
        else:
            if u != k or include_root_rule:
                total += tf[u, RULELP]
            stack[top] = ti[u, LEFT]
            stack[top + 1] = ti[u, RIGHT]
            top += 2
    return total


@numba.njit(cache=True, nogil=True)
def _backup(ti, tf, pj, nn, k, bk_i, bk_f, bk_p):
    for u in range(nn[0]):
        for f in range(ti.shape[1]):
            bk_i[u, f] = ti[u, f]
        for f in range(tf.shape[1]):
            bk_f[u, f] = tf[u, f]
    for t in range(ti[k, START], ti[k, END]):
        bk_p[t] = pj[t]


@numba.njit(cache=True, nogil=True)
def _restore(ti, tf, pj, nn, k, bk_i, bk_f, bk_p):
    for u in range(nn[0]):
        for f in range(ti.shape[1]):
            ti[u, f] = bk_i[u, f]
        for f in range(tf.shape[1]):
            tf[u, f] = bk_f[u, f]
    for t in range(ti[k, START], ti[k, END]):
        pj[t] = bk_p[t]


@numba.njit(cache=True, nogil=True)
def _settle(rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, k, stack, bk_i, bk_f, bk_p, old, with_root_rule):
    """Finish a change/swap whose new rules are written at and below ``k``: re-split the rows,
    refresh the prior terms, accept with probability ``exp(new - old)``, otherwise restore."""
    if repartition_subtree(ti, pj, codes, k, stack):
        refresh_subtree_prior(ti, tf, pj, codes, wsplit, logw, k, stack, False)
        new = subtree_score(ti, tf, pj, prm, resid, w, k, stack, with_root_rule)
        if math.log(rng.random()) < new - old:
            return True
    _restore(ti, tf, pj, nn, k, bk_i, bk_f, bk_p)
    return False


@numba.njit(cache=True, nogil=True)
def change_move(rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, scratch_p, stack, bk_i, bk_f, bk_p):
    """Redraw the rule of a uniformly chosen internal node from the rule prior; MH accept.

    The proposal probability of the new rule equals its prior, so the ratio keeps only the
    prior and likelihood of the nodes below.
    """
    k = random_node(rng, ti, tf, nn, False)
    if k < 0:
        return False
    v, c, _ = draw_split_rule(rng, codes, wsplit, pj, ti[k, START], ti[k, END], scratch_p)
    if v == ti[k, VAR] and c == ti[k, CUT]:
        return False  # proposal equals the current tree: nothing changes (not counted as accepted)
    old = subtree_score(ti, tf, pj, prm, resid, w, k, stack, False)
    _backup(ti, tf, pj, nn, k, bk_i, bk_f, bk_p)
    ti[k, VAR] = v
    ti[k, CUT] = c
    return _settle(rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, k, stack, bk_i, bk_f, bk_p, old, False)


@numba.njit(cache=True, nogil=True)
def swap_move(rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, stack, bk_i, bk_f, bk_p):
    """Swap the rules of a uniformly chosen (internal parent, internal child) pair; MH accept.

    When both children carry the same rule, the parent's rule is swapped with both (the only
    swap that can give a valid tree there). The proposal is symmetric.
    """
    n_pairs = 0
    for u in range(nn[0]):
        if ti[u, LEFT] >= 0 and ti[u, PARENT] >= 0:
            n_pairs += 1
    if n_pairs == 0:
        return False
    idx = rng.integers(0, n_pairs)
    ch = -1
    for u in range(nn[0]):
        if ti[u, LEFT] >= 0 and ti[u, PARENT] >= 0:
            if idx == 0:
                ch = u
                break
            idx -= 1
    k = ti[ch, PARENT]
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    old = subtree_score(ti, tf, pj, prm, resid, w, k, stack, True)
    _backup(ti, tf, pj, nn, k, bk_i, bk_f, bk_p)
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
    return _settle(rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, k, stack, bk_i, bk_f, bk_p, old, True)


@numba.njit(cache=True, nogil=True)
def mh_update(rng, probs, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, scratch_p, stack, bk_i, bk_f, bk_p):
    """One MH proposal for one tree. ``probs = [grow, prune, change, swap]`` (sums to 1).

    Returns ``(move, accepted)``. A root-only tree proposes a grow with probability 1; every other
    tree draws the move type from ``probs``.
    """
    if ti[0, LEFT] < 0:
        return MOVE_GROW, grow_move(
            rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, scratch_p, 0.0, math.log(probs[1])
        )
    u = rng.random()
    if u < probs[0]:
        return MOVE_GROW, grow_move(
            rng,
            ti,
            tf,
            pj,
            nn,
            codes,
            wsplit,
            logw,
            prm,
            resid,
            w,
            scratch_p,
            math.log(probs[0]),
            math.log(probs[1]),
        )
    u -= probs[0]
    if u < probs[1]:
        return MOVE_PRUNE, prune_move(rng, ti, tf, pj, nn, prm, resid, w, math.log(probs[0]), math.log(probs[1]))
    u -= probs[1]
    if u < probs[2]:
        return MOVE_CHANGE, change_move(
            rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, scratch_p, stack, bk_i, bk_f, bk_p
        )
    return MOVE_SWAP, swap_move(rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, stack, bk_i, bk_f, bk_p)
