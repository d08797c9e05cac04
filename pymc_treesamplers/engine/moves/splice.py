"""Splice moves: delete an internal node keeping one of its subtrees, or insert a node above any
node with a fresh subtree from the prior on its other side; each the other's reverse.

Delete at ``u`` keeping child ``A``: ``A`` takes ``u``'s place and the rows of ``u``'s other
subtree ``B`` run down ``A``'s rules. It removes a split anywhere in the tree in one step, with
everything below it, which grow/prune/change/swap cannot do without passing through trees of lower
posterior. The case it is made for: an early split that only cut the fringe off some clusters of
rows (a "wasteful" split whose two subtrees then both separate the same clusters); deleting it
sends the fringe rows back into their clusters' leaves.

Insert above ``k``: a rule drawn from the prior at ``k``'s rows, ``k``'s subtree on one side (a
fair coin), and on the other side a subtree grown from the tree prior on the rows that go there.

A delete that would leave a single leaf is not proposed: kernels using these moves let a single
leaf propose only a grow, so no insert could reverse it.

Ratios (``I``: internal nodes, ``N``: all nodes, ``prior_rule`` the rule's prior given its node,
``prior(B)`` the prior probability of subtree ``B`` on its rows at its depth; move types and sides
are chosen with probability 1/2 each, which cancels)::

    delete:  pi(T') / pi(T) * [prior_rule(u) prior(B) / N(T')] / [1 / I(T)]
    insert:  pi(T') / pi(T) * [1 / I(T')] / [prior_rule(r) prior(B) / N(T)]

``pi`` is the tree prior times the leaf-integrated likelihood; ``prior_rule`` and ``prior(B)``
are the proposal's own draws, so they cancel against the same factors of ``pi`` and only the
deleted or inserted node's split probability, the re-based subtree ``A`` and the likelihood count.
A proposal whose re-based ``A`` leaves a side of some split empty has prior probability zero and is
rejected.
"""

import math

import numba

from ..nodes import END, LEFT, RIGHT, ROOT, RULELP, START, TRUE
from ..prior import NEG_INF, draw_split_rule
from ..tree import (
    INTERNAL,
    count_nodes,
    grow_from_prior,
    random_node,
    subtree_log_post,
    subtree_log_prior,
    subtree_nodes,
)
from .preorder import copy_span, encode_with_spans, keep_or_restore, propose_rebuild, put_rule


@numba.njit(cache=True, nogil=True)
def _index_of(order, L, slot):
    for q in range(L):
        if order[q] == slot:
            return q
    return -1


@numba.njit(cache=True, nogil=True)
def delete_move(rng, t, data, prior, pseudo, seq, bk):
    """Delete a uniformly chosen internal node, keeping one child's subtree (a fair coin); MH accept.
    Returns True if the tree changed."""
    n_int = count_nodes(t, INTERNAL)
    if n_int == 0:
        return False
    u = random_node(rng, t, INTERNAL)
    keep_left = rng.random() < 0.5
    ti = t.ints
    gone = ti[u, RIGHT] if keep_left else ti[u, LEFT]
    kept = ti[u, LEFT] if keep_left else ti[u, RIGHT]
    if u == ROOT and ti[kept, LEFT] < 0:
        # a single leaf would remain, and a single leaf only ever proposes a grow (the convention
        # of the kernels that use these moves), never the insert that would reverse this
        return False
    log_q_rev = t.floats[u, RULELP] + subtree_log_prior(t, prior, gone, seq.order)
    old = subtree_log_post(t, prior, pseudo, ROOT, seq.order, top_rule=TRUE, split_probs=TRUE)
    V, C, end, V2, C2 = seq.V, seq.C, seq.end, seq.V2, seq.C2
    L = encode_with_spans(t, seq)
    iu = _index_of(seq.order, L, u)
    a = iu + 1
    o = copy_span(V, C, 0, iu, V2, C2, 0)
    o = copy_span(V, C, a, end[a], V2, C2, o) if keep_left else copy_span(V, C, end[a], end[iu], V2, C2, o)
    L2 = copy_span(V, C, end[iu], L, V2, C2, o)
    n_old = t.nn[0]
    new = propose_rebuild(t, data, prior, pseudo, seq, bk, L2)
    log_ratio = new - old + log_q_rev - math.log(t.nn[0]) + math.log(n_int)
    return keep_or_restore(rng, t, bk, n_old, log_ratio)


@numba.njit(cache=True, nogil=True)
def insert_move(rng, t, data, prior, pseudo, seq, bk, scratch_p):
    """Insert a node with a prior rule above a uniformly chosen node, that node's subtree on one
    side (a fair coin) and a subtree grown from the prior on the other; MH accept. Returns True if
    the tree changed."""
    n_all = t.nn[0]
    k = rng.integers(0, n_all)
    ti = t.ints
    v, c, _ = draw_split_rule(rng, data, t.perm, ti[k, START], ti[k, END], scratch_p)
    if v < 0:
        return False
    a_left = rng.random() < 0.5
    old = subtree_log_post(t, prior, pseudo, ROOT, seq.order, top_rule=TRUE, split_probs=TRUE)
    V, C, end, V2, C2 = seq.V, seq.C, seq.end, seq.V2, seq.C2
    L = encode_with_spans(t, seq)
    ik = _index_of(seq.order, L, k)
    o = copy_span(V, C, 0, ik, V2, C2, 0)
    o = put_rule(V2, C2, o, v, c)
    if a_left:
        o = copy_span(V, C, ik, end[ik], V2, C2, o)
        o = put_rule(V2, C2, o, -1, -1)
    else:
        o = put_rule(V2, C2, o, -1, -1)
        o = copy_span(V, C, ik, end[ik], V2, C2, o)
    L2 = copy_span(V, C, end[ik], L, V2, C2, o)
    if L2 > 2 * t.perm.shape[0] - 1:
        return False
    new = propose_rebuild(t, data, prior, pseudo, seq, bk, L2)
    if new == NEG_INF:
        return keep_or_restore(rng, t, bk, n_all, NEG_INF)
    # the new node sits at preorder index ik; grow its fresh side from the tree prior
    subtree_nodes(ti, ROOT, seq.order)
    w = seq.order[ik]
    b = ti[w, RIGHT] if a_left else ti[w, LEFT]
    log_q = t.floats[w, RULELP] + grow_from_prior(rng, t, data, prior, b, scratch_p)
    new = subtree_log_post(t, prior, pseudo, ROOT, seq.order, top_rule=TRUE, split_probs=TRUE)
    log_ratio = new - old - math.log(count_nodes(t, INTERNAL)) - log_q + math.log(n_all)
    return keep_or_restore(rng, t, bk, n_all, log_ratio)
