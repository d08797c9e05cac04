"""Continuous-time birth-death dynamics for one tree (horizon mode).

The tree moves as a continuous-time Markov jump process on tree space. Every birth (a leaf split
by a valid ``(v, c)``) and every death (an internal node whose two children are leaves becomes a
leaf) happens at rate ``q(T -> T') = min(1, pi(T') / pi(T))``, where ``pi`` is the tree prior
(split probabilities and the split-rule prior) times the leaf-integrated likelihood. A birth and
the death that undoes it are each other's reverse, so ``pi(T) q(T -> T') = min(pi(T), pi(T'))``
is symmetric: detailed balance, and the state at any fixed time ``horizon`` is an exact draw
given an exact start. That is what lets it run inside a Gibbs sweep with sigma and other trees.

All birth rates of a leaf come from one pass over its rows per variable: per-code sums of the
weights and weighted residuals give both children's likelihoods for every cut by prefix sums,
and a representative row per code tells, for every cut at once, whether each child could split
again (the tree prior treats unsplittable leaves differently). After a jump only
the touched nodes' rates are recomputed: the two new leaves and the split node after a birth, the
new leaf and its parent after a death.
"""

import math

import numba
import numpy as np

from ..forest import add_tree, collapse, refresh_subtree_prior, repartition_subtree, split_leaf
from ..gaussian import leaf_loglik, leaf_suff
from ..layout import CUT, DEPTH, END, LEFT, LWAVAIL, PARENT, RIGHT, RULELP, START, VAR
from ..prior import NEG_INF, code_range, leaf_log_prior, log1m_psplit, log_psplit
from .cgm import change_move
from .growprune import is_nog, random_node
from .pivot import pivot_move
from .relabel import relabel_gibbs
from .rotate import rotate_move
from .sweep import draw_leaves

RATES_SUM, RATES, LOG_RATIOS = range(3)


@numba.njit(cache=True, nogil=True)
def _rows_differ(codes, wsplit, i1, i2):
    """True when rows ``i1`` and ``i2`` differ in some variable of positive split weight."""
    for u in range(codes.shape[0]):
        if wsplit[u] > 0.0 and codes[u, i1] != codes[u, i2]:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def leaf_births(ti, tf, pj, k, codes, wsplit, logw, prm, resid, w, sc, R, out):
    """Total birth rate of leaf ``k``; ``out`` = ``RATES_SUM`` (that only), ``RATES`` (also
    ``R[v, c]`` = rate of each birth) or ``LOG_RATIOS`` (``R[v, c] = log pi(T + (v, c)) - log pi(T)``
    for every valid split; returns their maximum). The last is used on a node whose children are
    leaves too: up to a constant, the log posterior of each rule it could carry.

    ``sc = (hw, hs, rep, mixed)`` is per-code scratch sized by the largest code. A child can split
    again iff its rows are not all identical in the variables of positive weight; for the left
    child (codes ``<= c``) that holds from some cut on, for the right child up to some cut, so
    both thresholds come from one scan over the codes with a representative row per code.
    """
    hw, hs, rep, mixed = sc
    alpha, beta, mu0, s2 = prm[0], prm[1], prm[2], prm[3]
    lwk = tf[k, LWAVAIL]
    if lwk == NEG_INF:
        return 0.0
    s = ti[k, START]
    e = ti[k, END]
    d = ti[k, DEPTH]
    W, S = leaf_suff(resid, w, pj, s, e)
    base = log_psplit(d, alpha, beta) - log1m_psplit(d, alpha, beta) - leaf_loglik(W, S, mu0, s2)
    leaf_split = log1m_psplit(d + 1, alpha, beta)  # prior factor of a child that could split
    total = 0.0 if out != LOG_RATIOS else NEG_INF
    for v in range(codes.shape[0]):
        if wsplit[v] <= 0.0:
            continue
        mn, mx = code_range(codes[v], pj, s, e)
        if mx == mn:
            continue
        for c in range(mn, mx + 1):
            hw[c] = 0.0
            hs[c] = 0.0
            rep[c] = -1
            mixed[c] = False
        for t in range(s, e):
            i = pj[t]
            c = codes[v, i]
            hw[c] += w[i]
            hs[c] += w[i] * resid[i]
            if rep[c] < 0:
                rep[c] = i
            elif not mixed[c] and _rows_differ(codes, wsplit, rep[c], i):
                mixed[c] = True
        c_left = mx  # left child splittable for cuts c >= c_left
        r0 = -1
        for c in range(mn, mx):
            if rep[c] >= 0:
                if mixed[c] or (r0 >= 0 and _rows_differ(codes, wsplit, r0, rep[c])):
                    c_left = c
                    break
                if r0 < 0:
                    r0 = rep[c]
        c_right = mn - 1  # right child splittable for cuts c <= c_right
        r1 = -1
        for c2 in range(mx, mn, -1):
            if rep[c2] >= 0:
                if mixed[c2] or (r1 >= 0 and _rows_differ(codes, wsplit, r1, rep[c2])):
                    c_right = c2 - 1
                    break
                if r1 < 0:
                    r1 = rep[c2]
        rule = logw[v] - lwk - math.log(mx - mn)
        WL = 0.0
        SL = 0.0
        delta = 0.0
        r = 0.0
        for c in range(mn, mx):
            # a cut just above a code holding no rows splits the rows as the cut below it does, and
            # both splittability thresholds sit on codes holding rows: same delta, skip the logs
            if c == mn or rep[c] >= 0:
                WL += hw[c]
                SL += hs[c]
                delta = base + rule + leaf_loglik(WL, SL, mu0, s2) + leaf_loglik(W - WL, S - SL, mu0, s2)
                if c >= c_left:
                    delta += leaf_split
                if c <= c_right:
                    delta += leaf_split
                if out != LOG_RATIOS:
                    r = 1.0 if delta >= 0.0 else math.exp(delta)
            if out == LOG_RATIOS:
                R[v, c] = delta
                total = max(total, delta)
                continue
            total += r
            if out == RATES:
                R[v, c] = r
    return total


@numba.njit(cache=True, nogil=True)
def death_rate(ti, tf, pj, k, prm, resid, w):
    """Rate of turning node ``k`` (both children leaves) back into a leaf."""
    alpha, beta, mu0, s2 = prm[0], prm[1], prm[2], prm[3]
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    d = ti[k, DEPTH]
    wa, sa = leaf_suff(resid, w, pj, ti[a, START], ti[a, END])
    wb, sb = leaf_suff(resid, w, pj, ti[b, START], ti[b, END])
    delta = (
        leaf_loglik(wa + wb, sa + sb, mu0, s2)
        - leaf_loglik(wa, sa, mu0, s2)
        - leaf_loglik(wb, sb, mu0, s2)
        + log1m_psplit(d, alpha, beta)
        - log_psplit(d, alpha, beta)
        - tf[k, RULELP]
        - leaf_log_prior(d + 1, tf[a, LWAVAIL], alpha, beta)
        - leaf_log_prior(d + 1, tf[b, LWAVAIL], alpha, beta)
    )
    return 1.0 if delta >= 0.0 else math.exp(delta)


@numba.njit(cache=True, nogil=True)
def _pick_rule(rng, codes, wsplit, pj, s, e, R, total):
    """``(v, c, n_cuts)`` drawn in proportion to the weights ``R[v, c]`` (summing to ``total``) of
    the valid rules of the rows ``pj[s:e]``."""
    target = rng.random() * total
    v_pick = -1
    c_pick = -1
    n_cuts = 0
    for v in range(codes.shape[0]):
        if wsplit[v] <= 0.0:
            continue
        mn, mx = code_range(codes[v], pj, s, e)
        for c in range(mn, mx):
            v_pick = v  # the last valid rule absorbs rounding at the top end
            c_pick = c
            n_cuts = mx - mn
            target -= R[v, c]
            if target < 0.0:
                return v_pick, c_pick, n_cuts
    return v_pick, c_pick, n_cuts


@numba.njit(cache=True, nogil=True)
def _birth(rng, ti, tf, pj, nn, k, codes, wsplit, logw, prm, resid, w, sc, R):
    """Split leaf ``k`` by a ``(v, c)`` drawn in proportion to its birth rate."""
    s = ti[k, START]
    e = ti[k, END]
    total = leaf_births(ti, tf, pj, k, codes, wsplit, logw, prm, resid, w, sc, R, RATES)
    v, c, n_cuts = _pick_rule(rng, codes, wsplit, pj, s, e, R, total)
    split_leaf(ti, tf, pj, nn, k, v, c, n_cuts, codes, wsplit, logw)


@numba.njit(cache=True, nogil=True)
def nog_rule_gibbs(rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, sc, R, stack):
    """Redraw the rule of a uniformly chosen node whose children are leaves from its full conditional.

    Every valid ``(v, c)`` of the node is weighted by the posterior of the tree carrying it (rule
    prior, the children's split factors and leaf-integrated likelihoods), all from one pass over
    the node's rows. An exact Gibbs update; the set of such nodes does not depend on their rules,
    so choosing one uniformly keeps it exact. Returns True if the rule changed.
    """
    k = random_node(rng, ti, tf, nn, True)
    if k < 0:
        return False
    s = ti[k, START]
    e = ti[k, END]
    top = leaf_births(ti, tf, pj, k, codes, wsplit, logw, prm, resid, w, sc, R, LOG_RATIOS)
    total = 0.0
    for v in range(codes.shape[0]):
        if wsplit[v] > 0.0:
            mn, mx = code_range(codes[v], pj, s, e)
            for c in range(mn, mx):
                R[v, c] = math.exp(R[v, c] - top)
                total += R[v, c]
    v_pick, c_pick, _ = _pick_rule(rng, codes, wsplit, pj, s, e, R, total)
    if v_pick == ti[k, VAR] and c_pick == ti[k, CUT]:
        return False
    ti[k, VAR] = v_pick
    ti[k, CUT] = c_pick
    repartition_subtree(ti, pj, codes, k, stack)
    refresh_subtree_prior(ti, tf, pj, codes, wsplit, logw, k, stack, False)
    return True


@numba.njit(cache=True, nogil=True)
def _death(ti, tf, nn, k, B, Dr):
    """Collapse node ``k``; moves the rate caches with the slots. Returns ``k``'s new slot."""
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    idx = k
    count = nn[0]
    for slot in (max(a, b), min(a, b)):
        last = count - 1
        if slot != last:
            B[slot] = B[last]
            Dr[slot] = Dr[last]
            if last == idx:
                idx = slot
        count -= 1
    collapse(ti, tf, nn, k)
    return idx


@numba.njit(cache=True, nogil=True)
def _init_rates(ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, B, Dr, sc, R):
    for k in range(nn[0]):
        B[k] = 0.0
        Dr[k] = 0.0
        if ti[k, LEFT] < 0:
            B[k] = leaf_births(ti, tf, pj, k, codes, wsplit, logw, prm, resid, w, sc, R, RATES_SUM)
        elif is_nog(ti, k):
            Dr[k] = death_rate(ti, tf, pj, k, prm, resid, w)


@numba.njit(cache=True, nogil=True)
def _total_rate(nn, B, Dr):
    lam = 0.0
    for k in range(nn[0]):
        lam += B[k] + Dr[k]
    return lam


@numba.njit(cache=True, nogil=True)
def _jump(rng, lam, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, B, Dr, sc, R):
    """Make one jump, chosen in proportion to its rate (``lam`` = total); keeps the caches right."""
    target = rng.random() * lam
    k_pick = -1
    is_birth = True
    for k in range(nn[0]):
        if B[k] > 0.0:
            k_pick = k
            is_birth = True
            target -= B[k]
            if target < 0.0:
                break
        if Dr[k] > 0.0:
            k_pick = k
            is_birth = False
            target -= Dr[k]
            if target < 0.0:
                break
    if is_birth:
        _birth(rng, ti, tf, pj, nn, k_pick, codes, wsplit, logw, prm, resid, w, sc, R)
        a = ti[k_pick, LEFT]
        b = ti[k_pick, RIGHT]
        B[k_pick] = 0.0
        Dr[k_pick] = death_rate(ti, tf, pj, k_pick, prm, resid, w)
        B[a] = leaf_births(ti, tf, pj, a, codes, wsplit, logw, prm, resid, w, sc, R, RATES_SUM)
        B[b] = leaf_births(ti, tf, pj, b, codes, wsplit, logw, prm, resid, w, sc, R, RATES_SUM)
        Dr[a] = 0.0
        Dr[b] = 0.0
        par = ti[k_pick, PARENT]
        if par >= 0:
            Dr[par] = 0.0
    else:
        k = _death(ti, tf, nn, k_pick, B, Dr)
        B[k] = leaf_births(ti, tf, pj, k, codes, wsplit, logw, prm, resid, w, sc, R, RATES_SUM)
        Dr[k] = 0.0
        par = ti[k, PARENT]
        if par >= 0 and is_nog(ti, par):
            Dr[par] = death_rate(ti, tf, pj, par, prm, resid, w)


@numba.njit(cache=True, nogil=True)
def ct_update(rng, horizon, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, B, Dr, sc, R):
    """Run the birth-death process for time ``horizon``; returns ``(jumps, total rate at start)``.

    ``horizon < 0`` is jump mode: exactly one jump (none if no move is possible), and the second
    value is the total rate of the state *after* it, whose inverse is that state's expected
    holding time (the Rao-Blackwellised weight of the draw).
    """
    _init_rates(ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, B, Dr, sc, R)
    lam = _total_rate(nn, B, Dr)
    if horizon < 0.0:
        if lam <= 0.0:
            return 0, 0.0
        _jump(rng, lam, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, B, Dr, sc, R)
        return 1, _total_rate(nn, B, Dr)
    rate0 = lam
    t = 0.0
    jumps = 0
    while lam > 0.0:
        t += -math.log(1.0 - rng.random()) / lam
        if t > horizon:
            break
        _jump(rng, lam, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, B, Dr, sc, R)
        jumps += 1
        lam = _total_rate(nn, B, Dr)
    return jumps, rate0


@numba.njit(cache=True, nogil=True)
def ct_scratch(codes, n):
    """Scratch for :func:`ct_update`: ``(B, Dr, sc, R)`` sized for trees of up to ``2n + 1`` nodes."""
    p = codes.shape[0]
    max_code = 0
    for v in range(p):
        for i in range(codes.shape[1]):
            if codes[v, i] > max_code:
                max_code = codes[v, i]
    size = max_code + 2
    sc = (np.empty(size), np.empty(size), np.empty(size, dtype=np.int64), np.zeros(size, dtype=np.bool_))
    cap = 2 * n + 1
    return np.zeros(cap), np.zeros(cap), sc, np.zeros((p, size))


@numba.njit(cache=True, nogil=True)
def sweep_ct(rng, j0, resume, horizon, n_change, n_rotate, codes, wsplit, logw, prm, ints, floats, perm, n_nodes,
             resid, w, Ti, Tf, Tperm, Tnn, jumps_out, rate_out):
    """Birth-death for time ``horizon`` on trees ``j0 .. m-1`` (counterpart of ``sweep``), each
    followed by ``n_rotate`` rotate moves (:mod:`.rotate`), each with a pivot move
    (:mod:`.pivot`, the rotation rotate cannot make because a copy would be empty), and
    ``n_change`` rounds of rule moves (one CGM change move, an exact MH redraw of any node's
    rule; an exact Gibbs redraw of the rule of a node whose children are leaves,
    :func:`nog_rule_gibbs`; an exact Gibbs redraw of a node's rule among those that cut its rows
    the same way, :func:`.relabel.relabel_gibbs`).

    Each tree runs in the scratch tree ``(Ti, Tf, Tperm, Tnn)`` (room for ``2n + 1`` nodes) and
    is copied back. Returns -1 when done, or ``j`` when tree ``j``'s result does not fit its node
    arrays: the result stays in the scratch tree; the caller grows the forest and calls again
    with ``j0 = j, resume = 1``.
    """
    m = ints.shape[0]
    cap = ints.shape[1]
    n = resid.shape[0]
    B, Dr, sc, R = ct_scratch(codes, n)
    big = Ti.shape[0]
    scratch_p = np.empty(codes.shape[0])
    stack = np.empty(big + 2, dtype=np.int32)
    bk_i = np.empty((big, Ti.shape[1]), dtype=Ti.dtype)
    bk_f = np.empty((big, Tf.shape[1]))
    bk_p = np.empty(n, dtype=Tperm.dtype)
    L = 4 * n + 4
    rs = (np.empty(L, dtype=np.int32), np.empty(L, dtype=np.int32), np.empty(L, dtype=np.int64),
          np.empty(L, dtype=np.int32), np.empty(L, dtype=np.int32), np.empty(L, dtype=np.int64),
          np.empty(L, dtype=np.int32), np.empty(L, dtype=np.int32))
    mu0 = prm[2]
    s2 = prm[3]
    for j in range(j0, m):
        ti = ints[j]
        tf = floats[j]
        pj = perm[j]
        nn = n_nodes[j : j + 1]
        if not (resume == 1 and j == j0):
            add_tree(ti, tf, pj, nn, resid, 1.0)
            k = nn[0]
            Ti[:k] = ti[:k]
            Tf[:k] = tf[:k]
            Tperm[:] = pj
            Tnn[0] = k
            jumps, rate = ct_update(rng, horizon, Ti, Tf, Tperm, Tnn, codes, wsplit, logw, prm, resid, w, B, Dr,
                                    sc, R)
            for _ in range(n_rotate):
                rotate_move(rng, Ti, Tf, Tperm, Tnn, codes, wsplit, logw, prm, resid, w, rs, bk_i, bk_f, bk_p)
                pivot_move(rng, Ti, Tf, Tperm, Tnn, codes, wsplit, logw, prm, resid, w, rs, bk_i, bk_f, bk_p)
            for _ in range(n_change):
                change_move(rng, Ti, Tf, Tperm, Tnn, codes, wsplit, logw, prm, resid, w, scratch_p, stack, bk_i,
                            bk_f, bk_p)
                nog_rule_gibbs(rng, Ti, Tf, Tperm, Tnn, codes, wsplit, logw, prm, resid, w, sc, R, stack)
                relabel_gibbs(rng, Ti, Tf, Tperm, Tnn, codes, wsplit, logw, stack)
            jumps_out[j] = jumps
            rate_out[j] = rate
            if Tnn[0] > cap:
                return j
        k = Tnn[0]
        ti[:k] = Ti[:k]
        tf[:k] = Tf[:k]
        pj[:] = Tperm
        nn[0] = k
        draw_leaves(rng, ti, tf, pj, nn, resid, w, mu0, s2)
    return -1
