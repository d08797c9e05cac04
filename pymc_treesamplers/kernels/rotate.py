"""Rotate moves (Pratola 2016): exact Metropolis-Hastings moves that lift a split above its parent.

A tree is handled as its preorder rule sequence (``(v, c)`` for an internal node, ``(-1, -1)``
for a leaf); a node's subtree is a contiguous span of it. With ``p = [Rp](c, C)`` and
``c = [Rc](A, B)`` (``c`` the left child; the right case mirrors it), *up* at ``c`` gives

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

from ..forest import split_leaf
from ..gaussian import leaf_loglik, leaf_suff
from ..layout import CUT, DEPTH, END, LEFT, LWAVAIL, RIGHT, RULELP, START, VAR
from ..prior import code_range, leaf_log_prior, log_psplit
from .cgm import _backup, _restore


@numba.njit(cache=True, nogil=True)
def encode_preorder(ti, V, C, stack, S):
    """Write the tree's rules in preorder into ``V``/``C`` and the nodes' slots into ``S``;
    returns the sequence length."""
    top = 0
    stack[top] = 0
    top += 1
    L = 0
    while top > 0:
        top -= 1
        u = stack[top]
        V[L] = ti[u, VAR]
        C[L] = ti[u, CUT]
        S[L] = u
        L += 1
        if ti[u, LEFT] >= 0:
            stack[top] = ti[u, RIGHT]
            stack[top + 1] = ti[u, LEFT]
            top += 2
    return L


@numba.njit(cache=True, nogil=True)
def span_ends(V, L, end):
    """``end[i]``: one past the last index of the subtree starting at preorder index ``i``."""
    # right to left: a leaf ends at i + 1; an internal node ends where its right child ends
    for i in range(L - 1, -1, -1):
        end[i] = i + 1 if V[i] < 0 else end[end[i + 1]]


@numba.njit(cache=True, nogil=True)
def _same_span(V, C, a, b, end):
    la = end[a] - a
    if end[b] - b != la:
        return False
    for t in range(la):
        if V[a + t] != V[b + t] or C[a + t] != C[b + t]:
            return False
    return True


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
        return _same_span(V, C, a + 1, b + 1, end)
    return _same_span(V, C, end[a + 1], end[b + 1], end)


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
def _copy(V, C, s, e, V2, C2, o):
    for t in range(s, e):
        V2[o] = V[t]
        C2[o] = C[t]
        o += 1
    return o


@numba.njit(cache=True, nogil=True)
def _put(V2, C2, o, v, c):
    V2[o] = v
    C2[o] = c
    return o + 1


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
    o = _copy(V, C, 0, p, V2, C2, 0)
    o = _put(V2, C2, o, V[c], C[c])
    if c_left:
        s_c, e_c = end[c], end[p]  # C is p's right subtree
        for x in (a, b):
            o = _put(V2, C2, o, V[p], C[p])
            o = _copy(V, C, x, end[x], V2, C2, o)
            o = _copy(V, C, s_c, e_c, V2, C2, o)
    else:
        s_c, e_c = p + 1, c  # C is p's left subtree
        for x in (a, b):
            o = _put(V2, C2, o, V[p], C[p])
            o = _copy(V, C, s_c, e_c, V2, C2, o)
            o = _copy(V, C, x, end[x], V2, C2, o)
    return _copy(V, C, end[p], L, V2, C2, o)


@numba.njit(cache=True, nogil=True)
def _down(V, C, L, end, q, side, V2, C2):
    a = q + 1
    b = end[a]
    o = _copy(V, C, 0, q, V2, C2, 0)
    o = _put(V2, C2, o, V[a], C[a])
    if side == 1:  # [Rq]([R'](X1, Y), [R'](X2, Y)) -> [R']([Rq](X1, X2), Y)
        o = _put(V2, C2, o, V[q], C[q])
        o = _copy(V, C, a + 1, end[a + 1], V2, C2, o)
        o = _copy(V, C, b + 1, end[b + 1], V2, C2, o)
        o = _copy(V, C, end[a + 1], end[a], V2, C2, o)
    else:  # [Rq]([R'](Y, X1), [R'](Y, X2)) -> [R'](Y, [Rq](X1, X2))
        o = _copy(V, C, a + 1, end[a + 1], V2, C2, o)
        o = _put(V2, C2, o, V[q], C[q])
        o = _copy(V, C, end[a + 1], end[a], V2, C2, o)
        o = _copy(V, C, end[b + 1], end[b], V2, C2, o)
    return _copy(V, C, end[q], L, V2, C2, o)


@numba.njit(cache=True, nogil=True)
def rebuild(ti, tf, pj, nn, V, C, L, codes, wsplit, logw, stack):
    """Replace the tree by the one with preorder rules ``V``/``C`` on the same rows.

    Returns False (tree half built; the caller restores it) when a split leaves a side empty.
    """
    # slots past nn are never read, and split_leaf writes each new node whole
    ti[0, VAR] = -1
    ti[0, CUT] = -1
    ti[0, LEFT] = -1
    ti[0, RIGHT] = -1
    tf[0, RULELP] = 0.0
    nn[0] = 1
    top = 0
    stack[top] = 0
    top += 1
    for i in range(L):
        u = stack[top - 1]
        top -= 1
        v = V[i]
        if v < 0:
            continue
        c = C[i]
        mn, mx = code_range(codes[v], pj, ti[u, START], ti[u, END])
        if c < mn or c >= mx:
            return False
        split_leaf(ti, tf, pj, nn, u, v, c, mx - mn, codes, wsplit, logw)
        stack[top] = ti[u, RIGHT]
        stack[top + 1] = ti[u, LEFT]
        top += 2
    return True


@numba.njit(cache=True, nogil=True)
def tree_log_post(ti, tf, pj, nn, prm, resid, w):
    """Log tree prior times leaf-integrated likelihood, up to a constant."""
    alpha, beta, mu0, s2 = prm[0], prm[1], prm[2], prm[3]
    total = 0.0
    for k in range(nn[0]):
        d = ti[k, DEPTH]
        if ti[k, LEFT] < 0:
            W, S = leaf_suff(resid, w, pj, ti[k, START], ti[k, END])
            total += leaf_loglik(W, S, mu0, s2) + leaf_log_prior(d, tf[k, LWAVAIL], alpha, beta)
        else:
            total += log_psplit(d, alpha, beta) + tf[k, RULELP]
    return total


@numba.njit(cache=True, nogil=True)
def rotate_move(rng, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, rs, bk_i, bk_f, bk_p):
    """One rotate Metropolis-Hastings step; returns True if the tree changed.

    ``rs = (V, C, end, V2, C2, end2, stack, S)``: int scratch, the sequences of length ``>= 4n + 4``.
    """
    V, C, end, V2, C2, end2, stack, S = rs
    L = encode_preorder(ti, V, C, stack, S)
    span_ends(V, L, end)
    n_moves = count_moves(V, C, L, end)
    if n_moves == 0:
        return False
    L2 = apply_move(V, C, L, end, rng.integers(0, n_moves), V2, C2)
    if L2 > 2 * pj.shape[0] - 1:  # more leaves than rows: some leaf would be empty
        return False
    span_ends(V2, L2, end2)
    log_ratio = (
        math.log(n_moves) - math.log(count_moves(V2, C2, L2, end2)) - tree_log_post(ti, tf, pj, nn, prm, resid, w)
    )
    _backup(ti, tf, pj, nn, 0, bk_i, bk_f, bk_p)
    n_old = nn[0]
    if rebuild(ti, tf, pj, nn, V2, C2, L2, codes, wsplit, logw, stack):
        log_ratio += tree_log_post(ti, tf, pj, nn, prm, resid, w)
        if math.log(rng.random()) < log_ratio:
            return True
    nn[0] = n_old
    _restore(ti, tf, pj, nn, 0, bk_i, bk_f, bk_p)
    return False
