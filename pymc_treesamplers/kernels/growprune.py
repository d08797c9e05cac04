"""Grow and prune Metropolis-Hastings moves with exact proposal ratios.

Move-type probabilities are fixed (``log_pgrow``, ``log_pprune``) except that a root-only tree
always proposes a grow, the only move it has. A chosen move with no candidate leaves the tree
unchanged, which keeps the chain reversible without counting feasible move types.

The rule prior ``w_v / W_avail / n_cuts`` of a grown or pruned split cancels against the
proposal (grow draws the rule from that very prior), so it appears in neither ratio.
"""

import math

import numba

from ..forest import collapse, partition_rows, set_leaf
from ..gaussian import leaf_loglik, leaf_suff
from ..layout import CUT, DEPTH, END, LEFT, LWAVAIL, PARENT, RIGHT, RULELP, START, VAR
from ..prior import (
    NEG_INF,
    draw_split_rule,
    leaf_log_prior,
    log1m_psplit,
    log_psplit,
    node_log_avail,
    rule_log_prob,
)


@numba.njit(cache=True, nogil=True)
def count_growable(ti, tf, nn):
    """Number of leaves with at least one valid cut."""
    g = 0
    for k in range(nn[0]):
        if ti[k, LEFT] < 0 and tf[k, LWAVAIL] > NEG_INF:
            g += 1
    return g


@numba.njit(cache=True, nogil=True)
def is_nog(ti, k):
    """Internal node whose two children are leaves (the nodes prune may remove)."""
    return ti[k, LEFT] >= 0 and ti[ti[k, LEFT], LEFT] < 0 and ti[ti[k, RIGHT], LEFT] < 0


@numba.njit(cache=True, nogil=True)
def count_nog(ti, nn):
    c = 0
    for k in range(nn[0]):
        if is_nog(ti, k):
            c += 1
    return c


@numba.njit(cache=True, nogil=True)
def _nth(ti, tf, nn, idx, want_nog):
    """The ``idx``-th growable leaf (or nog node), in slot order."""
    c = 0
    for k in range(nn[0]):
        if want_nog:
            hit = is_nog(ti, k)
        else:
            hit = ti[k, LEFT] < 0 and tf[k, LWAVAIL] > NEG_INF
        if hit:
            if c == idx:
                return k
            c += 1
    return -1


@numba.njit(cache=True, nogil=True)
def random_node(rng, ti, tf, nn, nog_only):
    """A uniformly chosen internal node (with ``nog_only``: one whose children are leaves), or -1.

    Draws nothing when there is none.
    """
    if nog_only:
        count = count_nog(ti, nn)
        return _nth(ti, tf, nn, rng.integers(0, count), True) if count > 0 else -1
    count = 0
    for u in range(nn[0]):
        if ti[u, LEFT] >= 0:
            count += 1
    if count == 0:
        return -1
    idx = rng.integers(0, count)
    for u in range(nn[0]):
        if ti[u, LEFT] >= 0:
            if idx == 0:
                return u
            idx -= 1
    return -1


@numba.njit(cache=True, nogil=True)
def grow_move(rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, scratch_p, log_pgrow_t, log_pprune):
    """Propose splitting a growable leaf; accept with the MH ratio. Returns True if accepted.

    ``prm = [alpha, beta, mu0, s2]``. ``log_pgrow_t`` is the log probability that this tree chose
    a grow; ``log_pprune`` the (fixed) probability of choosing a prune from the grown tree.
    """
    alpha, beta, mu0, s2 = prm[0], prm[1], prm[2], prm[3]
    g = count_growable(ti, tf, nn)
    if g == 0:
        return False
    k = _nth(ti, tf, nn, rng.integers(0, g), False)
    s = ti[k, START]
    e = ti[k, END]
    d = ti[k, DEPTH]
    v, c, n_cuts = draw_split_rule(rng, codes, wsplit, pj, s, e, scratch_p)
    # slots a, b are scratch until the move is accepted
    mid = s + partition_rows(pj, s, e, codes[v], c)
    a = nn[0]
    b = a + 1
    set_leaf(ti, tf, a, k, d + 1, s, mid, node_log_avail(codes, wsplit, pj, s, mid))
    set_leaf(ti, tf, b, k, d + 1, mid, e, node_log_avail(codes, wsplit, pj, mid, e))
    wl, sl = leaf_suff(resid, w, pj, s, mid)
    wr, sr = leaf_suff(resid, w, pj, mid, e)
    dlik = leaf_loglik(wl, sl, mu0, s2) + leaf_loglik(wr, sr, mu0, s2) - leaf_loglik(wl + wr, sl + sr, mu0, s2)
    dprior = (
        log_psplit(d, alpha, beta)
        + leaf_log_prior(d + 1, tf[a, LWAVAIL], alpha, beta)
        + leaf_log_prior(d + 1, tf[b, LWAVAIL], alpha, beta)
        - log1m_psplit(d, alpha, beta)
    )
    # nog nodes after the grow: k joins; k's parent leaves the set if k's sibling is a leaf
    nog_new = count_nog(ti, nn) + 1
    par = ti[k, PARENT]
    if par >= 0 and ti[ti[par, LEFT], LEFT] < 0 and ti[ti[par, RIGHT], LEFT] < 0:
        nog_new -= 1
    log_r = dprior + dlik + (log_pprune - math.log(nog_new)) - (log_pgrow_t - math.log(g))
    if math.log(rng.random()) < log_r:
        ti[k, VAR] = v
        ti[k, CUT] = c
        ti[k, LEFT] = a
        ti[k, RIGHT] = b
        tf[k, RULELP] = rule_log_prob(logw[v], tf[k, LWAVAIL], n_cuts)
        nn[0] += 2
        return True
    return False


@numba.njit(cache=True, nogil=True)
def prune_move(rng, ti, tf, pj, nn, prm, resid, w, log_pgrow, log_pprune):
    """Propose collapsing a nog node into a leaf; accept with the MH ratio."""
    alpha, beta, mu0, s2 = prm[0], prm[1], prm[2], prm[3]
    nog = count_nog(ti, nn)
    if nog == 0:
        return False
    k = _nth(ti, tf, nn, rng.integers(0, nog), True)
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    d = ti[k, DEPTH]
    wa, sa = leaf_suff(resid, w, pj, ti[a, START], ti[a, END])
    wb, sb = leaf_suff(resid, w, pj, ti[b, START], ti[b, END])
    dlik = leaf_loglik(wa + wb, sa + sb, mu0, s2) - leaf_loglik(wa, sa, mu0, s2) - leaf_loglik(wb, sb, mu0, s2)
    dprior = (
        log1m_psplit(d, alpha, beta)
        - log_psplit(d, alpha, beta)
        - leaf_log_prior(d + 1, tf[a, LWAVAIL], alpha, beta)
        - leaf_log_prior(d + 1, tf[b, LWAVAIL], alpha, beta)
    )
    g_new = count_growable(ti, tf, nn) + 1
    if tf[a, LWAVAIL] > NEG_INF:
        g_new -= 1
    if tf[b, LWAVAIL] > NEG_INF:
        g_new -= 1
    # the reverse grow starts from the pruned tree; a root-only tree grows with probability 1
    log_pgrow_new = 0.0 if k == 0 else log_pgrow
    log_r = dprior + dlik + (log_pgrow_new - math.log(g_new)) - (log_pprune - math.log(nog))
    if math.log(rng.random()) < log_r:
        collapse(ti, tf, nn, k)
        return True
    return False
