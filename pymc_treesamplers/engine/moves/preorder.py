"""Trees as preorder rule sequences, for moves that rebuild a tree (rotate, pivot).

A tree is written as the sequence of its nodes in preorder (left child first): ``(v, c)`` for an
internal node, ``(-1, -1)`` for a leaf. A node's subtree is a contiguous span of the sequence, so
a rotation is a few span copies; :func:`rebuild` turns a sequence back into a tree on the same rows,
and :func:`propose_rebuild` / :func:`keep_or_restore` make that a Metropolis-Hastings proposal.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..nodes import CUT, END, LEFT, NODE_INT, RIGHT, ROOT, RULELP, START, TRUE, VAR
from ..prior import NEG_INF, code_range
from ..tree import backup, restore, split_leaf, subtree_log_post, subtree_nodes


class SeqScratch(NamedTuple):
    """Two rule sequences (``V, C``, span ends ``end``) and a node-slot buffer ``order`` (the
    slots of the encoded tree in preorder, reused as the stack of :func:`rebuild`)."""

    V: np.ndarray
    C: np.ndarray
    end: np.ndarray
    V2: np.ndarray
    C2: np.ndarray
    end2: np.ndarray
    order: np.ndarray


def new_seq_scratch(n: int) -> SeqScratch:
    """:class:`SeqScratch` for trees on ``n`` rows (a rotation's output can be longer than its input)."""
    size = 4 * n + 4
    return SeqScratch(*(np.empty(size, dtype=NODE_INT) for _ in range(7)))


@numba.njit(cache=True, nogil=True)
def encode_preorder(t, V, C, order):
    """Write the tree's rules in preorder into ``V``/``C`` and the nodes' slots into ``order``;
    returns the sequence length."""
    ti = t.ints
    L = subtree_nodes(ti, ROOT, order)
    for q in range(L):
        V[q] = ti[order[q], VAR]
        C[q] = ti[order[q], CUT]
    return L


@numba.njit(cache=True, nogil=True)
def span_ends(V, L, end):
    """``end[i]``: one past the last index of the subtree starting at preorder index ``i``."""
    # right to left: a leaf ends at i + 1; an internal node ends where its right child ends
    for i in range(L - 1, -1, -1):
        end[i] = i + 1 if V[i] < 0 else end[end[i + 1]]


@numba.njit(cache=True, nogil=True)
def encode_with_spans(t, seq):
    """:func:`encode_preorder` into ``seq.V, seq.C, seq.order`` and :func:`span_ends` into ``seq.end``;
    returns the sequence length."""
    L = encode_preorder(t, seq.V, seq.C, seq.order)
    span_ends(seq.V, L, seq.end)
    return L


@numba.njit(cache=True, nogil=True)
def same_span(V, C, a, b, end):
    """Whether the subtrees starting at ``a`` and ``b`` carry the same rules."""
    la = end[a] - a
    if end[b] - b != la:
        return False
    for q in range(la):
        if V[a + q] != V[b + q] or C[a + q] != C[b + q]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def copy_span(V, C, s, e, V2, C2, o):
    """Append ``V[s:e]``, ``C[s:e]`` to ``V2``, ``C2`` at ``o``; returns the new end."""
    for q in range(s, e):
        V2[o] = V[q]
        C2[o] = C[q]
        o += 1
    return o


@numba.njit(cache=True, nogil=True)
def put_rule(V2, C2, o, v, c):
    """Append one rule (or ``(-1, -1)``, a leaf) at ``o``; returns the new end."""
    V2[o] = v
    C2[o] = c
    return o + 1


@numba.njit(cache=True, nogil=True)
def rebuild(t, data, V, C, L, stack):
    """Replace the tree by the one with preorder rules ``V``/``C`` on the same rows.

    Returns False (tree half built; the caller restores it) when a split leaves a side empty.
    """
    ti = t.ints
    # slots past nn are never read, and split_leaf writes each new node whole
    ti[0, VAR] = -1
    ti[0, CUT] = -1
    ti[0, LEFT] = -1
    ti[0, RIGHT] = -1
    t.floats[0, RULELP] = 0.0
    t.nn[0] = 1
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
        mn, mx = code_range(data.codes[v], t.perm, ti[u, START], ti[u, END])
        if c < mn or c >= mx:
            return False
        split_leaf(t, u, v, c, mx - mn, data)
        stack[top] = ti[u, RIGHT]
        stack[top + 1] = ti[u, LEFT]
        top += 2
    return True


@numba.njit(cache=True, nogil=True)
def propose_rebuild(t, data, prior, pseudo, seq, bk, L2):
    """Back the tree up and rebuild it from the sequence ``seq.V2, seq.C2`` of length ``L2``.

    Returns the new tree's log posterior (:func:`~pymc_treesamplers.engine.tree.subtree_log_post`), or
    ``-inf`` when a split of the new tree would leave a side empty (prior probability zero).
    """
    backup(t, ROOT, bk)
    if not rebuild(t, data, seq.V2, seq.C2, L2, seq.order):
        return NEG_INF
    return subtree_log_post(t, prior, pseudo, ROOT, seq.order, top_rule=TRUE, split_probs=TRUE)


@numba.njit(cache=True, nogil=True)
def keep_or_restore(rng, t, bk, n_old, log_ratio):
    """Keep the rebuilt tree with probability ``min(1, exp(log_ratio))``, otherwise restore the
    backup of :func:`propose_rebuild` (``n_old``: the node count before). Returns whether kept."""
    if log_ratio > NEG_INF and math.log(rng.random()) < log_ratio:
        return True
    restore(t, ROOT, bk, n_old)
    return False
