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

**Aimed at a misfit row** (:func:`aimed_attach_move`, :func:`aimed_detach_move`): a row ``i`` is drawn with
probability ``omega_i`` proportional to its weighted squared deviation from the mean of the tree's pseudo-data,
which the other trees alone determine, so the same ``omega`` serves the move and its reverse and cancels (the row
is an auxiliary variable of the proposal, drawn again by the reverse move). The attach grows at ``i``'s leaf ``k``
a *caterpillar* along ``i``: ``k`` splits by a rule from the rule prior, then the child that holds ``i`` splits again
with probability ``rho`` (if it can), and so on; every other child stays a leaf. The detach draws ``i``, then
detaches at a node chosen uniformly among the ``A(i, T)`` non-root ancestors of ``i``'s leaf whose subtree is a
caterpillar along ``i``. The rules' prior probabilities cancel against their draws, which leaves::

    aimed attach:  prior_S / (1 - p(d_k)) * L(T') / L(T) * [p_ad / A(i, T')] / [p_aa * q_S]

``prior_S`` the twig's split probabilities and leaf factors (not its rules), ``q_S`` the continuation draws
(``rho`` per split below ``k``, ``1 - rho`` for a last leaf that could split); the aimed detach's ratio is its
inverse.
"""

import math

import numba
import numpy as np
from numba.extending import overload

from ..basisleaf import parent_var
from ..leaves import range_loglik
from ..nodes import CUT, DEPTH, END, LEFT, LWAVAIL, PARENT, RIGHT, START, VAR
from ..prior import NEG_INF, draw_split_rule, leaf_log_prior, log1m_psplit, log_psplit
from ..records import BasisPseudo
from ..rows import row_weight
from ..tree import (
    GROWABLE,
    INTERNAL_CHILD,
    backup,
    collapse_subtree,
    count_nodes,
    grow_from_prior,
    nth_node,
    restore,
    split_leaf,
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


# ------------------------------------------------------------------------------ aimed at a misfit row


def pseudo_weights(pseudo):
    """The pseudo-data's row weights: ``w`` of constant leaves, ``weight`` of basis leaves (compiled dispatch)."""
    raise NotImplementedError("pseudo_weights only runs inside numba kernels")


@overload(pseudo_weights, inline="always", jit_options={"nogil": True})
def _pseudo_weights(pseudo):
    if getattr(pseudo, "instance_class", None) is BasisPseudo:
        return lambda pseudo: pseudo.weight
    return lambda pseudo: pseudo.w


@numba.njit(cache=True, nogil=True)
def misfit_row(rng, pseudo):
    """A row drawn with probability proportional to ``w_i (r_i - mean)^2``, the weighted mean of the pseudo-data
    ``r`` taken out; -1 when every row sits at the mean. The pseudo-data of a tree are what the other trees leave,
    so the draw does not depend on the tree being updated."""
    r = pseudo.r
    w = pseudo_weights(pseudo)
    n = r.shape[0]
    sw = 0.0
    swr = 0.0
    for i in range(n):
        wi = row_weight(w, i)
        sw += wi
        swr += wi * r[i]
    mean = swr / sw if sw > 0.0 else 0.0
    cum = np.empty(n)
    total = 0.0
    for i in range(n):
        d = r[i] - mean
        total += row_weight(w, i) * d * d
        cum[i] = total
    if not total > 0.0:
        return -1
    u = rng.random() * total
    lo = 0
    hi = n - 1
    while lo < hi:  # the first row whose cumulative weight passes u
        mid = (lo + hi) // 2
        if cum[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(cache=True, nogil=True)
def leaf_of_row(t, data, i):
    """The leaf that holds row ``i``: the tree's rules read from the root."""
    ti = t.ints
    u = 0
    while ti[u, LEFT] >= 0:
        u = ti[u, LEFT] if data.codes[ti[u, VAR], i] <= ti[u, CUT] else ti[u, RIGHT]
    return u


@numba.njit(cache=True, nogil=True)
def _caterpillar_sites(t, leaf):
    """``A``: how many non-root ancestors of ``leaf`` have a subtree that is a caterpillar along it (every child off
    the path down to ``leaf`` a leaf); they are the lowest ``A`` ancestors, from ``leaf``'s parent up."""
    ti = t.ints
    on = leaf
    u = ti[leaf, PARENT]
    count = 0
    while u > 0:  # the root (slot 0) is never a site
        off = ti[u, RIGHT] if ti[u, LEFT] == on else ti[u, LEFT]
        if ti[off, LEFT] >= 0:
            break
        count += 1
        on = u
        u = ti[u, PARENT]
    return count


@numba.njit(cache=True, nogil=True)
def aimed_attach_move(rng, t, data, prior, pseudo, mb, rho, log_p_attach, log_p_detach):
    """Grow a caterpillar along a misfit row at its leaf (module docstring); MH accept. Returns True if accepted.
    ``rho``: the probability that the path goes on splitting; ``log_p_attach``, ``log_p_detach``: the log
    probabilities of choosing the aimed attach and detach in a tree that is not a single leaf."""
    i = misfit_row(rng, pseudo)
    if i < 0:
        return False
    k = leaf_of_row(t, data, i)
    ti = t.ints
    tf = t.floats
    if tf[k, LWAVAIL] == NEG_INF:
        return False
    old = range_loglik(prior, pseudo, t.perm, ti[k, START], ti[k, END], parent_var(ti, k))
    n_old = t.nn[0]
    backup(t, k, mb.bk)
    log_prior = -log1m_psplit(prior, ti[k, DEPTH])
    log_q = 0.0
    u = k
    while True:
        v, c, n_cuts = draw_split_rule(rng, data, t.perm, ti[u, START], ti[u, END], mb.scratch_p)
        split_leaf(t, u, v, c, n_cuts, data)
        log_prior += log_psplit(prior, ti[u, DEPTH])  # the rule's prior cancels against its draw
        on, off = (ti[u, LEFT], ti[u, RIGHT]) if data.codes[v, i] <= c else (ti[u, RIGHT], ti[u, LEFT])
        log_prior += leaf_log_prior(prior, ti[off, DEPTH], tf[off, LWAVAIL])
        if tf[on, LWAVAIL] > NEG_INF:
            if rng.random() < rho:
                log_q += math.log(rho)
                u = on
                continue
            log_q += math.log1p(-rho)
        log_prior += leaf_log_prior(prior, ti[on, DEPTH], tf[on, LWAVAIL])
        break
    new, _, _ = _twig_sums(t, prior, pseudo, k, mb.order)
    log_r = (log_prior + new - old + (log_p_detach - math.log(_caterpillar_sites(t, on)))
             - (log_p_attach + log_q))
    if math.log(rng.random()) < log_r:
        return True
    restore(t, k, mb.bk, n_old)
    return False


@numba.njit(cache=True, nogil=True)
def aimed_detach_move(rng, t, data, prior, pseudo, mb, rho, log_p_attach, log_p_detach):
    """Detach a caterpillar along a misfit row, at a node chosen uniformly among its sites (module docstring); MH
    accept. Returns True if accepted. Arguments as for :func:`aimed_attach_move`."""
    i = misfit_row(rng, pseudo)
    if i < 0:
        return False
    leaf = leaf_of_row(t, data, i)
    n_sites = _caterpillar_sites(t, leaf)
    if n_sites == 0:
        return False
    ti = t.ints
    tf = t.floats
    k = ti[leaf, PARENT]
    for _ in range(rng.integers(0, n_sites)):
        k = ti[k, PARENT]
    # the twig's prior without its rules, and the continuation draws of the attach that would grow it
    log_prior = leaf_log_prior(prior, ti[leaf, DEPTH], tf[leaf, LWAVAIL])
    log_q = math.log1p(-rho) if tf[leaf, LWAVAIL] > NEG_INF else 0.0
    on = leaf
    u = ti[leaf, PARENT]
    while True:
        off = ti[u, RIGHT] if ti[u, LEFT] == on else ti[u, LEFT]
        log_prior += log_psplit(prior, ti[u, DEPTH]) + leaf_log_prior(prior, ti[off, DEPTH], tf[off, LWAVAIL])
        if u == k:
            break
        log_q += math.log(rho)
        on = u
        u = ti[u, PARENT]
    old, _, _ = _twig_sums(t, prior, pseudo, k, mb.order)
    new = range_loglik(prior, pseudo, t.perm, ti[k, START], ti[k, END], parent_var(ti, k))
    log_r = (log1m_psplit(prior, ti[k, DEPTH]) - log_prior + new - old + (log_p_attach + log_q)
             - (log_p_detach - math.log(n_sites)))
    if math.log(rng.random()) < log_r:
        collapse_subtree(t, k, pseudo.threads)
        return True
    return False
