"""Reroute moves: change the rule of an internal node and let the rows below follow, removing the
splits the new rule leaves one-sided (collapse) or, the reverse, inserting splits that the old rule
would leave one-sided (expand). Each is the other's reverse.

Why: a change move rejects any rule under which some split below would send all its rows one way
(prior probability zero). But that is exactly the change a tree needs when an early split cut
through clusters of rows and both of its subtrees grew a copy of the same structure: moving the cut
into the gap between the clusters leaves the copies' splits on the clusters' fringe one-sided. A
collapse removes them (each keeps its non-empty side) and lands on the clean tree in one step,
however deep the stale structure is.

Collapse at ``u`` with a rule ``r'`` drawn from the prior at ``u``'s rows: the tree is rebuilt top
down from its preorder rules with ``r'`` at ``u``; a split below ``u`` whose rows all fall on one
side is removed and its place taken by that side's subtree (the other side's subtree ``B_k`` is
dropped).

Expand at ``u`` with ``r'`` from the prior: rebuilt top down likewise, and at every node of ``u``'s
subtree (``u`` excepted), as the build reaches it and while its place's rows can be split, a split
is inserted above it with probability ``RHO``: a rule from the prior at those rows, the existing
node on a side drawn with probability 1/2, a subtree grown from the tree prior on the other side;
then the decision is taken again at the existing node's new place (a chain of insertions). A split
of the rebuilt tree with an empty side makes the proposal impossible (prior zero), and so does an
inserted split that the collapse back would not remove: under the old rule at ``u`` it must send
all the rows its place had to the existing node's side.

Ratios, ``u`` uniform over the internal nodes (``I``), the move type by a fair coin::

    pi(T') I(T) prior_rule(r | u) Q(expand: T' -> T)  /  (pi(T) I(T') prior_rule(r' | u))      collapse
    pi(T') I(T) prior_rule(r | u)                     /  (pi(T) I(T') prior_rule(r' | u) Q(T -> T'))  expand

with ``Q`` the probability of the expand's insertion decisions and draws: per insertion ``RHO``, the
rule's prior at its place, 1/2 and the fresh subtree's prior; per final decision at a node whose
place can split, ``1 - RHO``. ``pi`` is the tree prior times the leaf-integrated likelihood.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..nodes import (
    CUT,
    END,
    LEFT,
    LWAVAIL,
    NO_NODE,
    NODE_INT,
    RIGHT,
    ROOT,
    RULELP,
    START,
    TRUE,
    VAR,
)
from ..prior import NEG_INF, code_range, draw_split_rule
from ..records import Tree, empty_nodes
from ..tree import (
    INTERNAL,
    copy_nodes,
    copy_perm,
    count_nodes,
    grow_from_prior,
    random_node,
    set_leaf,
    split_leaf,
    subtree_log_post,
    subtree_log_prior,
)
from .preorder import encode_with_spans

RHO = 0.1


class RerouteScratch(NamedTuple):
    """The proposed tree; the build's stack of ``(preorder index, slot)``; per preorder index of the
    current tree its fate (0 kept, 1 dropped keeping its left side, 2 dropped keeping its right) and
    whether it lies in a dropped span; the inserted splits ``(slot, index, existing node on the left)``;
    a walk buffer."""

    prop: Tree
    st_i: np.ndarray
    st_slot: np.ndarray
    mark: np.ndarray
    gone: np.ndarray
    ins_slot: np.ndarray
    ins_i: np.ndarray
    ins_left: np.ndarray
    order: np.ndarray


def new_reroute_scratch(n: int) -> RerouteScratch:
    """:class:`RerouteScratch` for trees on ``n`` rows."""
    cap = 4 * n + 4
    ints, floats = empty_nodes(2 * n + 1)
    prop = Tree(ints, floats, np.empty(n, dtype=np.int32), np.zeros(1, dtype=NODE_INT))
    return RerouteScratch(prop, np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64),
                          np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.bool_),
                          np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.bool_),
                          np.empty(cap, dtype=np.int64))


@numba.njit(cache=True, nogil=True)
def _push(rs, top, i, slot):
    rs.st_i[top] = i
    rs.st_slot[top] = slot
    return top + 1


@numba.njit(cache=True, nogil=True)
def _build(rng, t, data, prior, seq, rs, iu, v_new, c_new, expand, scratch_p):
    """Rebuild ``t`` (preorder in ``seq``) into ``rs.prop`` with ``(v_new, c_new)`` at index ``iu``,
    collapsing or expanding below it (module docstring). Returns ``(ok, log_q, u_slot, n_ins)``:
    ``log_q`` the log probability of an expand's decisions and draws, ``u_slot`` the slot of ``u`` in
    the proposal, ``n_ins`` the number of inserted splits."""
    V, C, end = seq.V, seq.C, seq.end
    prop = rs.prop
    pi = prop.ints
    copy_perm(t, prop)
    set_leaf(prop, ROOT, NO_NODE, ROOT, ROOT, NODE_INT(t.perm.shape[0]), t.floats[ROOT, LWAVAIL])
    prop.nn[0] = 1
    for i in range(end[0]):
        rs.mark[i] = 0
    top = _push(rs, 0, 0, 0)
    log_q = 0.0
    u_slot = -1
    n_ins = 0
    while top > 0:
        top -= 1
        i = rs.st_i[top]
        slot = rs.st_slot[top]
        inside = iu < i < end[iu]
        if expand and inside and prop.floats[slot, LWAVAIL] > NEG_INF:
            if rng.random() < RHO:
                v, c, n_cuts = draw_split_rule(rng, data, prop.perm, pi[slot, START], pi[slot, END], scratch_p)
                split_leaf(prop, slot, v, c, n_cuts, data)
                on_left = rng.random() < 0.5
                here = pi[slot, LEFT] if on_left else pi[slot, RIGHT]
                fresh = pi[slot, RIGHT] if on_left else pi[slot, LEFT]
                log_q += math.log(RHO) + prop.floats[slot, RULELP] - math.log(2.0)
                log_q += grow_from_prior(rng, prop, data, prior, fresh, scratch_p)
                rs.ins_slot[n_ins] = slot
                rs.ins_i[n_ins] = i
                rs.ins_left[n_ins] = on_left
                n_ins += 1
                top = _push(rs, top, i, here)  # decide again at the existing node's new place
                continue
            log_q += math.log(1.0 - RHO)
        if i == iu:
            u_slot = slot
        if V[i] < 0:
            continue
        v = v_new if i == iu else V[i]
        c = c_new if i == iu else C[i]
        mn, mx = code_range(data.codes[v], prop.perm, pi[slot, START], pi[slot, END])
        left = i + 1
        right = end[left]
        if c < mn or c >= mx:
            if expand or not inside:
                return False, 0.0, u_slot, n_ins
            keep_left = c >= mx
            rs.mark[i] = 1 if keep_left else 2
            top = _push(rs, top, left if keep_left else right, slot)
            continue
        split_leaf(prop, slot, v, c, mx - mn, data)
        top = _push(rs, top, right, pi[slot, RIGHT])
        top = _push(rs, top, left, pi[slot, LEFT])
    return True, log_q, u_slot, n_ins


@numba.njit(cache=True, nogil=True)
def _reverse_expand_log_q(t, prior, seq, rs, iu):
    """Log probability that an expand from the collapsed tree re-inserts exactly the splits the
    collapse dropped (``rs.mark``): per dropped split its insertion at the rows of its place in
    ``t``, per surviving node of ``u``'s subtree the final no-insertion decision at its place's rows."""
    end, order = seq.end, seq.order
    ti = t.ints
    log_q = 0.0
    for i in range(iu + 1, end[iu]):
        rs.gone[i] = False
    for i in range(iu + 1, end[iu]):
        if rs.gone[i]:
            continue
        k = order[i]
        if rs.mark[i] > 0:
            left = i + 1
            right = end[left]
            lo, hi = (right, end[i]) if rs.mark[i] == 1 else (left, right)
            for q in range(lo, hi):
                rs.gone[q] = True
            fresh = ti[k, RIGHT] if rs.mark[i] == 1 else ti[k, LEFT]
            log_q += math.log(RHO) + t.floats[k, RULELP] - math.log(2.0) + subtree_log_prior(t, prior, fresh, rs.order)
        elif t.floats[k, LWAVAIL] > NEG_INF:
            log_q += math.log(1.0 - RHO)
    return log_q


@numba.njit(cache=True, nogil=True)
def _collapse_back_removes_insertions(t, data, seq, rs, n_ins):
    """Whether the collapse with the old rule at ``u`` removes exactly the inserted splits, keeping
    the existing node's side: each must send all the rows its place has in ``t`` that way."""
    prop = rs.prop
    for q in range(n_ins):
        slot = rs.ins_slot[q]
        k = seq.order[rs.ins_i[q]]
        v = prop.ints[slot, VAR]
        c = prop.ints[slot, CUT]
        mn, mx = code_range(data.codes[v], t.perm, t.ints[k, START], t.ints[k, END])
        if rs.ins_left[q] and mx > c:
            return False
        if not rs.ins_left[q] and mn <= c:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def reroute_move(rng, t, data, prior, pseudo, seq, rs, scratch_p):
    """One collapse or expand (a fair coin) at a uniformly chosen internal node; MH accept. Returns
    True if the tree changed. ``seq``: a :class:`.preorder.SeqScratch`."""
    n_int = count_nodes(t, INTERNAL)
    if n_int == 0:
        return False
    expand = rng.random() < 0.5
    u = random_node(rng, t, INTERNAL)
    v, c, _ = draw_split_rule(rng, data, t.perm, t.ints[u, START], t.ints[u, END], scratch_p)
    if v == t.ints[u, VAR] and c == t.ints[u, CUT]:
        return False
    encode_with_spans(t, seq)
    iu = 0
    while seq.order[iu] != u:
        iu += 1
    ok, log_q, u_slot, n_ins = _build(rng, t, data, prior, seq, rs, iu, v, c, expand, scratch_p)
    if not ok:
        return False
    prop = rs.prop
    if expand:
        if not _collapse_back_removes_insertions(t, data, seq, rs, n_ins):
            return False
        log_q = -log_q
    else:
        log_q = _reverse_expand_log_q(t, prior, seq, rs, iu)
    log_ratio = (
        subtree_log_post(prop, prior, pseudo, ROOT, rs.order, TRUE, TRUE)
        - subtree_log_post(t, prior, pseudo, ROOT, rs.order, TRUE, TRUE)
        + math.log(n_int)
        - math.log(count_nodes(prop, INTERNAL))
        + t.floats[u, RULELP]
        - prop.floats[u_slot, RULELP]
        + log_q
    )
    if math.log(rng.random()) < log_ratio:
        copy_nodes(prop, t)
        copy_perm(prop, t)
        return True
    return False
