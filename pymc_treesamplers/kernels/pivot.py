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
"""

import math

import numba

from ..layout import END, START
from ..prior import code_range
from .cgm import _backup, _restore
from .rotate import _copy, _put, encode_preorder, rebuild, span_ends, tree_log_post


@numba.njit(cache=True, nogil=True)
def _pivot_side(ti, pj, codes, V, C, S, end, q, k):
    """Side of the child's rule holding all rows of its sibling for the pivot at preorder ``q``
    with child on side ``k``; -1 when that pivot is not available."""
    if V[q] < 0:
        return -1
    a = q + 1
    b = end[a]
    c, s = (a, b) if k == 0 else (b, a)
    if V[c] < 0:
        return -1
    mn, mx = code_range(codes[V[c]], pj, ti[S[s], START], ti[S[s], END])
    if mx <= C[c]:
        return 0
    return 1 if mn > C[c] else -1


@numba.njit(cache=True, nogil=True)
def count_pivots(ti, pj, codes, V, C, S, L, end):
    """Number of available pivots of the tree (preorder ``V, C`` with node slots ``S``)."""
    n = 0
    for q in range(L):
        for k in range(2):
            if _pivot_side(ti, pj, codes, V, C, S, end, q, k) >= 0:
                n += 1
    return n


@numba.njit(cache=True, nogil=True)
def apply_pivot(ti, pj, codes, V, C, S, L, end, idx, V2, C2):
    """Write the sequence after the ``idx``-th pivot (order of :func:`count_pivots`); returns its length."""
    for q in range(L):
        for k in range(2):
            t = _pivot_side(ti, pj, codes, V, C, S, end, q, k)
            if t < 0:
                continue
            if idx > 0:
                idx -= 1
                continue
            a = q + 1
            b = end[a]
            c, s = (a, b) if k == 0 else (b, a)
            c0 = c + 1
            c1 = end[c0]
            keep, moved = (c1, c0) if t == 0 else (c0, c1)  # c_{1-t} stays, c_t goes under Ru
            o = _copy(V, C, 0, q, V2, C2, 0)
            o = _put(V2, C2, o, V[c], C[c])
            if t == 1:
                o = _copy(V, C, keep, end[keep], V2, C2, o)
            o = _put(V2, C2, o, V[q], C[q])
            first, second = (moved, s) if k == 0 else (s, moved)
            o = _copy(V, C, first, end[first], V2, C2, o)
            o = _copy(V, C, second, end[second], V2, C2, o)
            if t == 0:
                o = _copy(V, C, keep, end[keep], V2, C2, o)
            return _copy(V, C, end[q], L, V2, C2, o)
    return -1


@numba.njit(cache=True, nogil=True)
def pivot_move(rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, rs, bk_i, bk_f, bk_p):
    """One pivot Metropolis-Hastings step; returns True if the tree changed.

    ``rs = (V, C, end, V2, C2, end2, stack, S)``: int scratch of length ``>= 4n + 4`` (as for
    :func:`.rotate.rotate_move`, plus the node slots ``S``).
    """
    V, C, end, V2, C2, end2, stack, S = rs
    L = encode_preorder(ti, V, C, stack, S)
    span_ends(V, L, end)
    n_moves = count_pivots(ti, pj, codes, V, C, S, L, end)
    if n_moves == 0:
        return False
    L2 = apply_pivot(ti, pj, codes, V, C, S, L, end, rng.integers(0, n_moves), V2, C2)
    log_ratio = math.log(n_moves) - tree_log_post(ti, tf, pj, nn, prm, resid, w)
    _backup(ti, tf, pj, nn, 0, bk_i, bk_f, bk_p)
    n_old = nn[0]
    if rebuild(ti, tf, pj, nn, V2, C2, L2, codes, wsplit, logw, stack):  # always: no side is empty
        L3 = encode_preorder(ti, V, C, stack, S)
        span_ends(V, L3, end2)
        log_ratio += tree_log_post(ti, tf, pj, nn, prm, resid, w)
        log_ratio -= math.log(count_pivots(ti, pj, codes, V, C, S, L3, end2))
        if math.log(rng.random()) < log_ratio:
            return True
    nn[0] = n_old
    _restore(ti, tf, pj, nn, 0, bk_i, bk_f, bk_p)
    return False
