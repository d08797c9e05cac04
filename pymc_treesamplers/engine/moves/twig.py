"""Twig moves: attach a whole subtree drawn from the tree prior at a leaf, or detach the whole subtree below a
node; each the other's reverse (Kim & Ročková, arXiv 2306.00126: on data a tree must cut several times to fit,
grow/prune needs exponentially many steps through trees the prior penalises, moves of whole twigs polynomially
many).

**Attach** at a uniformly chosen leaf ``k`` with a valid cut (``G(T)`` of them): ``k`` splits by a rule drawn from
the prior, and each new node below it splits or not by the tree prior, with rules from the prior: the twig ``S``
is drawn from the tree prior given that ``k`` splits. **Detach** at a uniformly chosen internal node other than the
root (``C(T)`` of them): its whole subtree goes, and it becomes a leaf. The root is never detached: the move
kernels let a single leaf propose only a grow (:mod:`..updates.mh`), so no attach could reverse it.

With ``P(S | k splits)`` the prior probability of the twig given that ``k`` splits (its rules, its nodes'
split or stop factors) and ``p(d)`` the split probability at ``k``'s depth, the tree prior of ``T'`` (twig
attached) over ``T`` is ``p(d) P(S | k splits) / (1 - p(d))``, and the proposal draws ``S`` with probability
``P(S | k splits)``, so it cancels::

    attach:  p(d) / (1 - p(d)) * L(T') / L(T) * [p_detach / C(T')] / [p_attach / G(T)]
    detach:  (1 - p(d)) / p(d) * L(T') / L(T) * [p_attach / G(T')] / [p_detach / C(T)]

``L`` is the leaf-integrated likelihood, which changes only in ``k``'s rows. A detach is scored with no row moved
(``k``'s rows, merged, are the range it already owns); an attach grows the twig, and a rejected one is restored
from the backup. docs/mh.md derives the ratio.
"""

import math

import numba

from ..basisleaf import parent_var
from ..leaves import range_loglik
from ..nodes import DEPTH, END, LEFT, LWAVAIL, START
from ..prior import NEG_INF, log1m_psplit, log_psplit
from ..tree import (
    GROWABLE,
    INTERNAL_CHILD,
    backup,
    collapse_subtree,
    count_nodes,
    grow_from_prior,
    nth_node,
    restore,
    subtree_nodes,
)


@numba.njit(cache=True, nogil=True)
def _twig_sums(t, prior, pseudo, k, order):
    """``(leaves' log marginal likelihood, internal nodes, growable leaves)`` of ``k``'s subtree."""
    ti = t.ints
    lik = 0.0
    internal = 0
    growable = 0
    for q in range(subtree_nodes(ti, k, order)):
        u = order[q]
        if ti[u, LEFT] >= 0:
            internal += 1
        else:
            lik += range_loglik(prior, pseudo, t.perm, ti[u, START], ti[u, END], parent_var(ti, u))
            if t.floats[u, LWAVAIL] > NEG_INF:
                growable += 1
    return lik, internal, growable


@numba.njit(cache=True, nogil=True)
def attach_move(rng, t, data, prior, pseudo, mb, log_p_attach, log_p_detach):
    """Attach a twig drawn from the tree prior at a uniformly chosen growable leaf; MH accept. Returns True if
    accepted. ``mb``: :class:`~.cgm.MoveBuffers`; ``log_p_attach``, ``log_p_detach``: the log probabilities of
    choosing each move in a tree that is not a single leaf."""
    g = count_nodes(t, GROWABLE)
    if g == 0:
        return False
    k = nth_node(t, rng.integers(0, g), GROWABLE)
    ti = t.ints
    d = ti[k, DEPTH]
    old = range_loglik(prior, pseudo, t.perm, ti[k, START], ti[k, END], parent_var(ti, k))
    n_old = t.nn[0]
    c_old = count_nodes(t, INTERNAL_CHILD)
    backup(t, k, mb.bk)
    grow_from_prior(rng, t, data, prior, k, mb.scratch_p, split_first=True)
    new, internal, _ = _twig_sums(t, prior, pseudo, k, mb.order)
    # k is not the root (a single leaf proposes only a grow), so every internal node of the twig is a detach site
    log_r = (log_psplit(prior, d) - log1m_psplit(prior, d) + new - old
             + (log_p_detach - math.log(c_old + internal)) - (log_p_attach - math.log(g)))
    if math.log(rng.random()) < log_r:
        return True
    restore(t, k, mb.bk, n_old)
    return False


@numba.njit(cache=True, nogil=True)
def detach_move(rng, t, prior, pseudo, mb, log_p_attach, log_p_detach):
    """Detach the whole subtree below a uniformly chosen internal node other than the root; MH accept. Returns
    True if accepted. Arguments as for :func:`attach_move`."""
    c = count_nodes(t, INTERNAL_CHILD)
    if c == 0:
        return False
    k = nth_node(t, rng.integers(0, c), INTERNAL_CHILD)
    ti = t.ints
    d = ti[k, DEPTH]
    old, _, growable = _twig_sums(t, prior, pseudo, k, mb.order)
    new = range_loglik(prior, pseudo, t.perm, ti[k, START], ti[k, END], parent_var(ti, k))
    # k, split before, has a valid cut: it joins the growable leaves as the twig's leaves leave them
    g_new = count_nodes(t, GROWABLE) - growable + 1
    log_r = (log1m_psplit(prior, d) - log_psplit(prior, d) + new - old
             + (log_p_attach - math.log(g_new)) - (log_p_detach - math.log(c)))
    if math.log(rng.random()) < log_r:
        collapse_subtree(t, k, pseudo.threads)
        return True
    return False
