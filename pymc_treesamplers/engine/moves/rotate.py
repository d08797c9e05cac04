"""Rotate moves (Pratola 2016): exact Metropolis-Hastings moves that lift a split above its parent.

A tree is handled as its preorder rule sequence (:mod:`.preorder`); a node's subtree is a
contiguous span of it. With ``p = [Rp](c, C)`` and ``c = [Rc](A, B)`` (``c`` the left child; the
right case mirrors it), *up* at ``c`` gives

    [Rc]( [Rp](A, C1), [Rp](B, C2) )          (C1, C2: copies of C's rules; rows split by Rc)

so ``A`` and ``B`` keep their rows and ``C`` is cut in two by ``Rc``. Its inverse, *down* at a
node whose two children carry the same rule and whose grandchildren on one side have identical
rule sequences, merges those two copies back. Up at ``c`` and down at the lifted node on ``C``'s
side undo each other, so (tree, move) pairs map one to one and the acceptance probability is
``min(1, pi(T') |M(T)| / (pi(T) |M(T')|))`` with the move drawn uniformly from the ``|M(T)|``
available ups and downs (leaves integrated out, depth-dependent split probabilities and rule
priors recomputed on the rebuilt tree). A proposal with an empty side anywhere has prior
probability zero and is rejected.

On the Wu et al. (2007) data this is the move that turns a root split on x1 into the same
partition split on x3: up lifts the x2 split to the root, a rule redraw at the two copies
swaps x1 for x3, down merges them again.
"""

import math

import numba

from ..nodes import ROOT, TRUE
from ..tree import subtree_log_post
from .preorder import (
    copy_span,
    encode_with_spans,
    keep_or_restore,
    propose_rebuild,
    put_rule,
    same_span,
    span_ends,
)


@numba.njit(cache=True, nogil=True)
def _down_ok(V, C, q, side, end):
    """Down at ``q`` on ``side`` (0: left grandchildren merge, 1: right) is available."""
    if V[q] < 0:
        return False
    a = q + 1
    b = end[a]
    if V[a] < 0 or V[b] < 0 or V[a] != V[b] or C[a] != C[b]:
        return False
    if side == 0:
        return same_span(V, C, a + 1, b + 1, end)
    return same_span(V, C, end[a + 1], end[b + 1], end)


@numba.njit(cache=True, nogil=True)
def count_moves(V, C, L, end):
    """Number of rotate moves of a tree: an up at every internal non-root node, plus the downs."""
    n = 0
    for i in range(L):
        if V[i] >= 0:
            if i > 0:
                n += 1
            for side in range(2):
                if _down_ok(V, C, i, side, end):
                    n += 1
    return n


@numba.njit(cache=True, nogil=True)
def apply_move(V, C, L, end, idx, V2, C2):
    """Write the sequence after the ``idx``-th move (order of :func:`count_moves`); returns its length."""
    for i in range(L):
        if V[i] < 0:
            continue
        if i > 0:
            if idx == 0:
                return _up(V, C, L, end, i, V2, C2)
            idx -= 1
        for side in range(2):
            if _down_ok(V, C, i, side, end):
                if idx == 0:
                    return _down(V, C, L, end, i, side, V2, C2)
                idx -= 1
    return -1


@numba.njit(cache=True, nogil=True)
def _parent(V, end, c):
    """Preorder index of the parent of ``c`` (> 0) and whether ``c`` is its left child."""
    for p in range(c - 1, -1, -1):
        if V[p] >= 0 and end[p] > c:
            return p, p + 1 == c
    return -1, False


@numba.njit(cache=True, nogil=True)
def _up(V, C, L, end, c, V2, C2):
    p, c_left = _parent(V, end, c)
    a = c + 1  # A
    b = end[a]  # B
    o = copy_span(V, C, 0, p, V2, C2, 0)
    o = put_rule(V2, C2, o, V[c], C[c])
    if c_left:
        s_c, e_c = end[c], end[p]  # C is p's right subtree
        for x in (a, b):
            o = put_rule(V2, C2, o, V[p], C[p])
            o = copy_span(V, C, x, end[x], V2, C2, o)
            o = copy_span(V, C, s_c, e_c, V2, C2, o)
    else:
        s_c, e_c = p + 1, c  # C is p's left subtree
        for x in (a, b):
            o = put_rule(V2, C2, o, V[p], C[p])
            o = copy_span(V, C, s_c, e_c, V2, C2, o)
            o = copy_span(V, C, x, end[x], V2, C2, o)
    return copy_span(V, C, end[p], L, V2, C2, o)


@numba.njit(cache=True, nogil=True)
def _down(V, C, L, end, q, side, V2, C2):
    a = q + 1
    b = end[a]
    o = copy_span(V, C, 0, q, V2, C2, 0)
    o = put_rule(V2, C2, o, V[a], C[a])
    if side == 1:  # [Rq]([R'](X1, Y), [R'](X2, Y)) -> [R']([Rq](X1, X2), Y)
        o = put_rule(V2, C2, o, V[q], C[q])
        o = copy_span(V, C, a + 1, end[a + 1], V2, C2, o)
        o = copy_span(V, C, b + 1, end[b + 1], V2, C2, o)
        o = copy_span(V, C, end[a + 1], end[a], V2, C2, o)
    else:  # [Rq]([R'](Y, X1), [R'](Y, X2)) -> [R'](Y, [Rq](X1, X2))
        o = copy_span(V, C, a + 1, end[a + 1], V2, C2, o)
        o = put_rule(V2, C2, o, V[q], C[q])
        o = copy_span(V, C, end[a + 1], end[a], V2, C2, o)
        o = copy_span(V, C, end[b + 1], end[b], V2, C2, o)
    return copy_span(V, C, end[q], L, V2, C2, o)


@numba.njit(cache=True, nogil=True)
def rotate_move(rng, t, data, prior, pseudo, seq, bk):
    """One rotate Metropolis-Hastings step; returns True if the tree changed.

    ``seq``: a :class:`.preorder.SeqScratch`; ``bk``: a :class:`~pymc_treesamplers.engine.records.Backup`.
    """
    V, C, end, V2, C2, end2, order = seq
    L = encode_with_spans(t, seq)
    n_moves = count_moves(V, C, L, end)
    if n_moves == 0:
        return False
    L2 = apply_move(V, C, L, end, rng.integers(0, n_moves), V2, C2)
    if L2 > 2 * t.perm.shape[0] - 1:  # more leaves than rows: some leaf would be empty
        return False
    span_ends(V2, L2, end2)
    log_ratio = (
        math.log(n_moves)
        - math.log(count_moves(V2, C2, L2, end2))
        - subtree_log_post(t, prior, pseudo, ROOT, order, top_rule=TRUE, split_probs=TRUE)
    )
    n_old = t.nn[0]
    return keep_or_restore(rng, t, bk, n_old, log_ratio + propose_rebuild(t, data, prior, pseudo, seq, bk, L2))
