"""Pivot moves: binary-tree rotations that keep every leaf's rows, as an exact MH move.

With ``u = [Ru](s, c)`` or ``[Ru](c, s)`` (``c`` on side ``k`` of ``u``, ``s`` its sibling) and
``c = [Rc](c0, c1)``, when every row of ``s`` falls on side ``t`` of ``Rc`` the pivot lifts ``c``
above ``u``: ``Rc`` takes ``u``'s place, its side ``1 - t`` child stays ``c_{1-t}``, and its
side ``t`` child becomes a node with ``Ru`` holding ``c_t`` on side ``k`` and ``s`` on the other.
Every leaf keeps its rows, so only the tree prior changes (depths and rule priors).

It is the case Pratola's rotate (:mod:`.rotate`) cannot make: there ``s`` would be copied to
both sides of ``Rc`` and one copy would be empty. On the Wu et al. (2007) data that case is what
turns ``[x3 <= 0.2](L, [x1 <= 0.47](S, F))``, a root cut short of the gap, into
``[x1 <= 0.47](S, [x3 <= 0.2](L, F))``, after which a death merges ``L`` and ``F``.

The pivot at the new top node with its side ``t`` child undoes it (there ``c_{1-t}`` is the
sibling and lies on side ``k`` of ``Ru``), so (tree, move) pairs map one to one, and drawing the
move uniformly from the ``|M(T)|`` valid pivots gives the acceptance
``min(1, pi(T') |M(T)| / (pi(T) |M(T')|))``.

``S`` arguments hold the node slots of the preorder sequence (``order`` of :func:`.preorder.encode_preorder`).
"""

import math

import numba

from ..nodes import END, ROOT, START, TRUE
from ..prior import code_range
from ..tree import subtree_log_post
from .preorder import (
    copy_span,
    encode_preorder,
    encode_with_spans,
    keep_or_restore,
    propose_rebuild,
    put_rule,
    span_ends,
)


@numba.njit(cache=True, nogil=True)
def _pivot_side(t, data, V, C, S, end, q, k):
    """Side of the child's rule holding all rows of its sibling for the pivot at preorder ``q``
    with child on side ``k``; -1 when that pivot is not available."""
    if V[q] < 0:
        return -1
    a = q + 1
    b = end[a]
    c, s = (a, b) if k == 0 else (b, a)
    if V[c] < 0:
        return -1
    mn, mx = code_range(data.codes[V[c]], t.perm, t.ints[S[s], START], t.ints[S[s], END])
    if mx <= C[c]:
        return 0
    return 1 if mn > C[c] else -1


@numba.njit(cache=True, nogil=True)
def count_pivots(t, data, V, C, S, L, end):
    """Number of available pivots of the tree (preorder ``V, C`` with node slots ``S``)."""
    n = 0
    for q in range(L):
        for k in range(2):
            if _pivot_side(t, data, V, C, S, end, q, k) >= 0:
                n += 1
    return n


@numba.njit(cache=True, nogil=True)
def apply_pivot(t, data, V, C, S, L, end, idx, V2, C2):
    """Write the sequence after the ``idx``-th pivot (order of :func:`count_pivots`); returns its length."""
    for q in range(L):
        for k in range(2):
            side = _pivot_side(t, data, V, C, S, end, q, k)
            if side < 0:
                continue
            if idx > 0:
                idx -= 1
                continue
            a = q + 1
            b = end[a]
            c, s = (a, b) if k == 0 else (b, a)
            c0 = c + 1
            c1 = end[c0]
            keep, moved = (c1, c0) if side == 0 else (c0, c1)  # c_{1-t} stays, c_t goes under Ru
            o = copy_span(V, C, 0, q, V2, C2, 0)
            o = put_rule(V2, C2, o, V[c], C[c])
            if side == 1:
                o = copy_span(V, C, keep, end[keep], V2, C2, o)
            o = put_rule(V2, C2, o, V[q], C[q])
            first, second = (moved, s) if k == 0 else (s, moved)
            o = copy_span(V, C, first, end[first], V2, C2, o)
            o = copy_span(V, C, second, end[second], V2, C2, o)
            if side == 0:
                o = copy_span(V, C, keep, end[keep], V2, C2, o)
            return copy_span(V, C, end[q], L, V2, C2, o)
    return -1


@numba.njit(cache=True, nogil=True)
def pivot_move(rng, t, data, prior, pseudo, seq, bk):
    """One pivot Metropolis-Hastings step; returns True if the tree changed.

    ``seq``: a :class:`.preorder.SeqScratch`; ``bk``: a :class:`~pymc_treesamplers.engine.records.Backup`.
    """
    V, C, end, V2, C2, end2, order = seq
    L = encode_with_spans(t, seq)
    n_moves = count_pivots(t, data, V, C, order, L, end)
    if n_moves == 0:
        return False
    L2 = apply_pivot(t, data, V, C, order, L, end, rng.integers(0, n_moves), V2, C2)
    log_ratio = math.log(n_moves) - subtree_log_post(t, prior, pseudo, ROOT, order, top_rule=TRUE, split_probs=TRUE)
    n_old = t.nn[0]
    log_ratio += propose_rebuild(t, data, prior, pseudo, seq, bk, L2)  # finite: a pivot empties no side
    L3 = encode_preorder(t, V, C, order)
    span_ends(V, L3, end2)
    log_ratio -= math.log(count_pivots(t, data, V, C, order, L3, end2))
    return keep_or_restore(rng, t, bk, n_old, log_ratio)
