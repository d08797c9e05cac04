"""Restructure moves: a new tree with the same leaves (Wu, Tjelmeland & West 2007, "radical
restructure"), proposed from the tree prior and accepted by Metropolis-Hastings.

The leaves of a tree split the rows into groups, and the likelihood (leaf values integrated out)
depends on those groups alone. Many trees give the same groups: the same splits in another order,
a split on another variable that separates the groups alike, another cut in the same gap. Local
moves travel between such trees only through trees of lower posterior, so on sharp likelihoods they
do not travel at all; a restructure jumps between them directly.

Proposal. From the root down, a node holding two or more groups takes a rule that keeps every group
whole (no group has rows on both sides of the cut), drawn with probability proportional to its
prior probability among those rules; a node holding one group is a leaf. Every valid first split
can be completed (the current tree, restricted to either side, realises that side's groups), so the
construction never stalls. With ``N(u)`` the summed prior probability of the group-keeping rules at
node ``u``, the proposal probability of a tree is ``prod_u prior_rule(u) / N(u)``, so

    pi(T) / q(T) = L(groups) * prod_{internal u} p_split(d_u) N(u) * prod_{leaves l} leaf_prior(l)

and the move is accepted with probability ``min(1, R(T') / R(T))``, ``R`` the product above: the
likelihood cancels, only depths and rule masses count. The move is its own reverse (the current
tree is a possible proposal from the same groups), so it is reversible, as the likelihood
correction of non-Gaussian models needs.

Rule masses. For variable ``v`` a node's prior gives every cut in ``[mn, mx)`` (its rows' code
range) probability ``w_v / W / (mx - mn)``; a cut keeps every group whole unless it lies in some
group's own range ``[min_g, max_g)``, so the group-keeping cuts are ``[mn, mx)`` minus the union of
the groups' ranges, counted by sorting the ranges.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..leaves import col_dependent
from ..nodes import DEPTH, END, LEFT, LWAVAIL, NO_NODE, NODE_INT, RIGHT, ROOT, START
from ..prior import leaf_log_prior, log_psplit
from ..records import Tree, empty_nodes
from ..tree import copy_nodes, copy_perm, leaves_loglik, set_leaf, split_leaf, subtree_nodes


class RestructureScratch(NamedTuple):
    """Buffers of :func:`restructure_move` for trees on ``n`` rows and ``p`` covariates: per group
    (leaf) and variable the code range ``[gmin, gmax]``; the group order and each node's segment
    ``[seg_lo, seg_hi)`` of it; sort buffers; per-variable masses; the proposed tree; a walk buffer."""

    gmin: np.ndarray
    gmax: np.ndarray
    gorder: np.ndarray
    seg_lo: np.ndarray
    seg_hi: np.ndarray
    slo: np.ndarray
    shi: np.ndarray
    mass: np.ndarray
    cover: np.ndarray
    prop: Tree
    order: np.ndarray


def new_restructure_scratch(p: int, n: int) -> RestructureScratch:
    """:class:`RestructureScratch` for trees of up to ``2n + 1`` nodes on ``n`` rows and ``p`` covariates."""
    cap = 2 * n + 1
    ints, floats = empty_nodes(cap)
    prop = Tree(ints, floats, np.empty(n, dtype=np.int32), np.zeros(1, dtype=NODE_INT))
    return RestructureScratch(np.empty((n, p), dtype=np.int64), np.empty((n, p), dtype=np.int64),
                              np.empty(n, dtype=np.int64), np.empty(cap, dtype=np.int64),
                              np.empty(cap, dtype=np.int64), np.empty(n, dtype=np.int64),
                              np.empty(n, dtype=np.int64), np.empty(p), np.empty(p, dtype=np.int64),
                              prop, np.empty(cap, dtype=NODE_INT))


@numba.njit(cache=True, nogil=True)
def _group_ranges(t, data, sampler):
    """Number the leaves of ``t`` in preorder as groups ``0..L-1`` (``sampler.gorder[g]`` is group ``g``)
    with their code ranges; each node's groups are the segment ``[seg_lo, seg_hi)``. Returns L."""
    ti = t.ints
    nn = subtree_nodes(ti, ROOT, sampler.order)
    p = data.codes.shape[0]
    g = 0
    for q in range(nn):
        u = sampler.order[q]
        if ti[u, LEFT] >= 0:
            continue
        for v in range(p):
            code_v = data.codes[v]
            mn = code_v[t.perm[ti[u, START]]]
            mx = mn
            for r in range(ti[u, START] + 1, ti[u, END]):
                c = code_v[t.perm[r]]
                if c < mn:
                    mn = c
                elif c > mx:
                    mx = c
            sampler.gmin[g, v] = mn
            sampler.gmax[g, v] = mx
        sampler.gorder[g] = g
        sampler.seg_lo[u] = g
        sampler.seg_hi[u] = g + 1
        g += 1
    for q in range(nn - 1, -1, -1):  # reverse preorder: children before parents
        u = sampler.order[q]
        if ti[u, LEFT] >= 0:
            sampler.seg_lo[u] = sampler.seg_lo[ti[u, LEFT]]
            sampler.seg_hi[u] = sampler.seg_hi[ti[u, RIGHT]]
    return g


@numba.njit(cache=True, nogil=True)
def _free_cuts(sampler, a, b, v):
    """For the groups ``gorder[a:b]`` and variable ``v``: ``(count, mn, mx)``, the number of cuts in
    ``[mn, mx)`` that no group's range ``[gmin, gmax)`` contains; the merged, sorted ranges are left
    in ``slo[:k], shi[:k]`` (``k`` returned in ``cover[v]``)."""
    k = 0
    for q in range(a, b):
        g = sampler.gorder[q]
        lo = sampler.gmin[g, v]
        hi = sampler.gmax[g, v]
        # insertion by lower end
        r = k
        while r > 0 and sampler.slo[r - 1] > lo:
            sampler.slo[r] = sampler.slo[r - 1]
            sampler.shi[r] = sampler.shi[r - 1]
            r -= 1
        sampler.slo[r] = lo
        sampler.shi[r] = hi
        k += 1
    mn = sampler.slo[0]
    mx = sampler.shi[0]
    # merge overlapping ranges in place; covered cuts are [lo, hi) of each merged range
    m = 0
    for r in range(1, k):
        if sampler.shi[r] > mx:
            mx = sampler.shi[r]
        if sampler.slo[r] < sampler.shi[m]:
            if sampler.shi[r] > sampler.shi[m]:
                sampler.shi[m] = sampler.shi[r]
        else:
            m += 1
            sampler.slo[m] = sampler.slo[r]
            sampler.shi[m] = sampler.shi[r]
    covered = 0
    for r in range(m + 1):
        covered += sampler.shi[r] - sampler.slo[r]
    sampler.cover[v] = m + 1
    return (mx - mn) - covered, mn, mx


@numba.njit(cache=True, nogil=True)
def _log_mass(sampler, data, a, b):
    """Log of the summed prior probability of the group-keeping rules of a node holding the groups
    ``gorder[a:b]`` (two or more); ``sampler.mass[v]`` gets each variable's share."""
    p = data.codes.shape[0]
    total_w = 0.0
    total = 0.0
    for v in range(p):
        sampler.mass[v] = 0.0
        if data.wsplit[v] <= 0.0:
            continue
        free, mn, mx = _free_cuts(sampler, a, b, v)
        if mx > mn:
            total_w += data.wsplit[v]
            if free > 0:
                sampler.mass[v] = data.wsplit[v] * free / (mx - mn)
                total += sampler.mass[v]
    return math.log(total / total_w)


@numba.njit(cache=True, nogil=True)
def _tree_log_r(t, data, prior, sampler):
    """``log R(t)`` of the module docstring, for a tree whose groups :func:`_group_ranges` numbered."""
    ti = t.ints
    out = 0.0
    for u in range(t.nn[0]):
        d = ti[u, DEPTH]
        if ti[u, LEFT] < 0:
            out += leaf_log_prior(prior, d, t.floats[u, LWAVAIL])
        else:
            out += log_psplit(prior, d) + _log_mass(sampler, data, sampler.seg_lo[u], sampler.seg_hi[u])
    return out


@numba.njit(cache=True, nogil=True)
def _draw_rule(rng, sampler, data, a, b):
    """A group-keeping rule ``(v, cut, n_cuts)`` for the groups ``gorder[a:b]`` with probability
    proportional to its prior (``sampler.mass`` from :func:`_log_mass`)."""
    p = data.codes.shape[0]
    total = 0.0
    for v in range(p):
        total += sampler.mass[v]
    x = rng.random() * total
    v = -1
    for w in range(p):
        if sampler.mass[w] > 0.0:
            v = w  # the last variable with mass takes what rounding leaves over
            if x < sampler.mass[w]:
                break
            x -= sampler.mass[w]
    free, mn, mx = _free_cuts(sampler, a, b, v)
    k = rng.integers(0, free)
    # the k-th cut of [mn, mx) outside the merged ranges slo/shi (sorted, disjoint)
    c = mn
    for r in range(sampler.cover[v]):
        gap = sampler.slo[r] - c
        if k < gap:
            return v, c + k, mx - mn
        k -= gap
        c = sampler.shi[r]
    return v, c + k, mx - mn


@numba.njit(cache=True, nogil=True)
def _propose(rng, t, data, prior, sampler, L):
    """Build the proposal in ``sampler.prop`` from the groups of ``t``; returns its ``log R``."""
    new = sampler.prop
    copy_perm(t, new)
    set_leaf(new, ROOT, NO_NODE, ROOT, ROOT, NODE_INT(t.perm.shape[0]), t.floats[ROOT, LWAVAIL])
    new.nn[0] = 1
    sampler.seg_lo[0] = 0
    sampler.seg_hi[0] = L
    ni = new.ints
    out = 0.0
    u = 0
    while u < new.nn[0]:
        a = sampler.seg_lo[u]
        b = sampler.seg_hi[u]
        d = ni[u, DEPTH]
        if b - a == 1:
            out += leaf_log_prior(prior, d, new.floats[u, LWAVAIL])
        else:
            out += log_psplit(prior, d) + _log_mass(sampler, data, a, b)
            v, cut, n_cuts = _draw_rule(rng, sampler, data, a, b)
            split_leaf(new, u, v, cut, n_cuts, data)
            # groups below the cut first, in place
            lo = a
            hi = b - 1
            while lo <= hi:
                if sampler.gmax[sampler.gorder[lo], v] <= cut:
                    lo += 1
                else:
                    tmp = sampler.gorder[lo]
                    sampler.gorder[lo] = sampler.gorder[hi]
                    sampler.gorder[hi] = tmp
                    hi -= 1
            left = ni[u, LEFT]
            right = ni[u, RIGHT]
            sampler.seg_lo[left] = a
            sampler.seg_hi[left] = lo
            sampler.seg_lo[right] = lo
            sampler.seg_hi[right] = b
        u += 1
    return out


@numba.njit(cache=True, nogil=True)
def restructure_move(rng, t, data, prior, pseudo, sampler):
    """One restructure proposal for tree ``t`` (module docstring); True if accepted (``t`` then
    holds the new tree, nodes and row order). Leaves on a basis chosen by the tree
    (:func:`~pymc_treesamplers.engine.leaves.col_dependent`) read their parents' rules, which a restructure
    redraws: their likelihood ratio joins the acceptance then (the same partition otherwise cancels it)."""
    L = _group_ranges(t, data, sampler)
    if L < 2:
        return False
    old = _tree_log_r(t, data, prior, sampler)
    new = _propose(rng, t, data, prior, sampler, L)
    if col_dependent(pseudo):
        new += leaves_loglik(sampler.prop, prior, pseudo) - leaves_loglik(t, prior, pseudo)
    if math.log(rng.random()) < new - old:
        copy_nodes(sampler.prop, t)
        copy_perm(sampler.prop, t)
        return True
    return False
