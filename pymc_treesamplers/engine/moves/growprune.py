"""Grow and prune Metropolis-Hastings moves with exact proposal ratios.

Move-type probabilities are fixed (``log_pgrow``, ``log_pprune``) except that a root-only tree
always proposes a grow, the only move it has. A chosen move with no candidate leaves the tree
unchanged, which keeps the chain reversible without counting feasible move types.

The rule prior ``w_v / W_avail / n_cuts`` of a grown or pruned split cancels against the
proposal (grow draws the rule from that very prior), so it appears in neither ratio.
"""

import math

import numba

from ..basisleaf import parent_var
from ..leaves import split_logliks
from ..nodes import DEPTH, END, LEFT, LWAVAIL, PARENT, RIGHT, START
from ..prior import NEG_INF, draw_split_rule, side_log_avail
from ..tree import (
    GROWABLE,
    NOG,
    collapse,
    count_nodes,
    is_nog,
    nth_node,
    random_node,
    split_leaf,
    split_log_prior_ratio,
    split_log_ratio,
)


@numba.njit(cache=True, nogil=True)
def pick_grow(rng, t, data, scratch_p):
    """A grow's proposal: ``(g, k, v, c, n_cuts)``, the number of growable leaves, the one drawn uniformly and the
    rule drawn from its prior there (``g = 0``: none, nothing drawn)."""
    g = count_nodes(t, GROWABLE)
    if g == 0:
        return g, -1, -1, -1, 0
    k = nth_node(t, rng.integers(0, g), GROWABLE)
    v, c, n_cuts = draw_split_rule(rng, data, t.perm, t.ints[k, START], t.ints[k, END], scratch_p)
    return g, k, v, c, n_cuts


@numba.njit(cache=True, nogil=True)
def grow_choice_logs(t, k, g, log_pgrow_t, log_pprune):
    """The move choices of a grow at leaf ``k`` (of ``g`` growable ones): ``(log of choosing the prune of k in the
    grown tree, log of choosing this grow)``."""
    ti = t.ints
    # prunable nodes of the grown tree: k joins them; its parent, if it was one, no longer is
    parent = ti[k, PARENT]
    nog = count_nodes(t, NOG) + 1 - (1 if parent >= 0 and is_nog(ti, parent) else 0)
    return log_pprune - math.log(nog), log_pgrow_t - math.log(g)


@numba.njit(cache=True, nogil=True)
def prune_choice_logs(t, k, nog, log_pgrow, log_pprune):
    """The move choices of a prune of ``k`` (of ``nog`` prunable nodes): ``(log of choosing the grow of k back in
    the pruned tree, log of choosing this prune)``."""
    ti = t.ints
    g_new = count_nodes(t, GROWABLE) + 1
    for child in (ti[k, LEFT], ti[k, RIGHT]):
        if t.floats[child, LWAVAIL] > NEG_INF:
            g_new -= 1
    # the reverse grow starts from the pruned tree; a root-only tree grows with probability 1
    log_pgrow_new = 0.0 if k == 0 else log_pgrow
    return log_pgrow_new - math.log(g_new), log_pprune - math.log(nog)


@numba.njit(cache=True, nogil=True)
def grow_move(rng, t, data, prior, pseudo, scratch_p, log_pgrow_t, log_pprune):
    """Propose splitting a growable leaf; accept with the MH ratio. Returns True if accepted.

    ``log_pgrow_t`` is the log probability that this tree chose a grow; ``log_pprune`` the (fixed)
    probability of choosing a prune from the grown tree. The proposal is scored in place (the children's
    sums and availabilities read without moving rows); only an accepted grow splits the leaf.
    """
    g, k, v, c, n_cuts = pick_grow(rng, t, data, scratch_p)
    if g == 0:
        return False
    ti = t.ints
    s = ti[k, START]
    e = ti[k, END]
    code_v = data.codes[v]
    n_left, left, right, both = split_logliks(prior, pseudo, t.perm, s, e, code_v, c, v, parent_var(ti, k))
    lwa = side_log_avail(data, t.perm, s, e, code_v, c, True, n_left)
    lwb = side_log_avail(data, t.perm, s, e, code_v, c, False, e - s - n_left)
    back, forth = grow_choice_logs(t, k, g, log_pgrow_t, log_pprune)
    dlik = left + right - both
    log_r = split_log_prior_ratio(prior, ti[k, DEPTH], lwa, lwb) + dlik + back - forth
    if math.log(rng.random()) < log_r:
        split_leaf(t, k, v, c, n_cuts, data)
        return True
    return False


@numba.njit(cache=True, nogil=True)
def prune_move(rng, t, prior, pseudo, log_pgrow, log_pprune):
    """Propose collapsing a node whose children are leaves into a leaf; accept with the MH ratio."""
    nog = count_nodes(t, NOG)
    k = random_node(rng, t, NOG)
    if k < 0:
        return False
    back, forth = prune_choice_logs(t, k, nog, log_pgrow, log_pprune)
    log_r = -split_log_ratio(t, prior, pseudo, k) + back - forth
    if math.log(rng.random()) < log_r:
        collapse(t, k, pseudo.threads)
        return True
    return False
