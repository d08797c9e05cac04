"""Continuous-time birth-death dynamics for one tree (Stephens 2000; horizon and jump modes).

The tree moves as a continuous-time Markov jump process on tree space. Every birth (a leaf split
by a valid ``(v, c)``) and every death (an internal node whose two children are leaves becomes a
leaf) happens at rate ``q(T -> T') = min(1, pi(T') / pi(T))``, where ``pi`` is the tree prior
(split probabilities and the split-rule prior) times the leaf-integrated likelihood. A birth and
the death that undoes it are each other's reverse, so ``pi(T) q(T -> T') = min(pi(T), pi(T'))``
is symmetric: detailed balance, and the state at any fixed time ``horizon`` is an exact draw
given an exact start. That is what lets it run inside a Gibbs sweep with sigma and other trees.

All birth rates of a leaf come from one pass over its rows per variable: per-code leaf statistics (the
sums of the weights and weighted residuals; a basis leaf's vector and matrix sums) give both children's
likelihoods for every cut by prefix sums,
and a representative row per code tells, for every cut at once, whether each child could split
again (the tree prior treats unsplittable leaves differently). After a jump only
the touched nodes' rates are recomputed: the two new leaves and the split node after a birth, the
new leaf and its parent after a death.

After the jump process, optional exact rule moves (:func:`ct_update`): Pratola's rotate with a
pivot (:mod:`.rotate`, :mod:`.pivot`) and rounds of rule redraws (a CGM change, the Gibbs redraw
:func:`nog_rule_gibbs`, :func:`.relabel.relabel_gibbs`).
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..basisleaf import parent_var
from ..driver import register_update
from ..leaves import add_row, col_dependent, log_marginal, range_stats
from ..moves.cgm import MoveBuffers, change_move, new_move_buffers
from ..moves.pivot import pivot_move
from ..moves.preorder import SeqScratch, new_seq_scratch
from ..moves.relabel import relabel_gibbs
from ..moves.rotate import rotate_move
from ..nodes import CUT, DEPTH, END, LEFT, LWAVAIL, PARENT, RIGHT, RULELP, START, VAR
from ..prior import NEG_INF, code_range, log1m_psplit, log_psplit
from ..tree import (
    NOG,
    collapse,
    is_nog,
    random_node,
    refresh_subtree_prior,
    repartition_subtree,
    split_leaf,
    split_log_ratio,
)

RATES_SUM, RATES, LOG_RATIOS = (np.int64(out) for out in range(3))  # typed: one specialisation


class BirthScratch(NamedTuple):
    """Per-code leaf statistics ``hist`` (codes, width: for constant leaves the sums of weights and of weighted
    residuals; :mod:`pymc_treesamplers.engine.leaves`), the leaf's ``tot``, a cut's ``left`` and ``right``
    sides, a representative row ``rep`` per code and whether the code's rows differ (``mixed``); ``R[v, c]``:
    the rate (or log ratio) of a birth."""

    hist: np.ndarray
    tot: np.ndarray
    left: np.ndarray
    right: np.ndarray
    rep: np.ndarray
    mixed: np.ndarray
    R: np.ndarray


class CTScratch(NamedTuple):
    """Options and buffers of :func:`ct_update`, and each tree's jumps and total rate.

    ``horizon < 0`` is jump mode (one jump per draw); ``n_rotate`` rotate+pivot moves and
    ``n_change`` rounds of rule redraws follow each tree's jump process.
    """

    horizon: float
    n_rotate: int
    n_change: int
    birth_rate: np.ndarray
    death_rate: np.ndarray
    births: BirthScratch
    seq: SeqScratch
    mb: MoveBuffers
    jumps: np.ndarray
    rate: np.ndarray


def new_ct_scratch(codes: np.ndarray, m: int, horizon: float, n_rotate: int, n_change: int,
                   width: int = 2) -> CTScratch:
    """Scratch for :func:`ct_update` on ``m`` trees over the rows of ``codes`` (p, n), for leaf statistics of
    ``width`` values (:func:`~pymc_treesamplers.engine.leaves.n_stats`: 2 for constant leaves)."""
    p, n = codes.shape
    size = int(codes.max(initial=0)) + 2
    births = BirthScratch(np.empty((size, width)), np.empty(width), np.empty(width), np.empty(width),
                          np.empty(size, dtype=np.int64), np.zeros(size, dtype=np.bool_), np.zeros((p, size)))
    cap = 2 * n + 1
    return CTScratch(float(horizon), int(n_rotate), int(n_change), np.zeros(cap), np.zeros(cap), births,
                     new_seq_scratch(n), new_move_buffers(p, n), np.zeros(m, dtype=np.int64), np.zeros(m))


@numba.njit(cache=True, nogil=True)
def _rows_differ(codes, wsplit, i1, i2):
    """True when rows ``i1`` and ``i2`` differ in some variable of positive split weight."""
    for u in range(codes.shape[0]):
        if wsplit[u] > 0.0 and codes[u, i1] != codes[u, i2]:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def leaf_births(t, k, data, prior, pseudo, bs, out):
    """Total birth rate of leaf ``k``; ``out`` = ``RATES_SUM`` (that only), ``RATES`` (also
    ``bs.R[v, c]`` = rate of each birth) or ``LOG_RATIOS`` (``bs.R[v, c] = log pi(T + (v, c)) -
    log pi(T)`` for every valid split; returns their maximum). The last is used on a node whose
    children are leaves too: up to a constant, the log posterior of each rule it could carry.

    A child can split again iff its rows are not all identical in the variables of positive weight;
    for the left child (codes ``<= c``) that holds from some cut on, for the right child up to some
    cut, so both thresholds come from one scan over the codes with a representative row per code.
    """
    hist, tot, left, right, rep, mixed, R = bs
    width = tot.shape[0]
    codes = data.codes
    wsplit = data.wsplit
    ti = t.ints
    perm = t.perm
    lwk = t.floats[k, LWAVAIL]
    if lwk == NEG_INF:
        return 0.0
    s = ti[k, START]
    e = ti[k, END]
    d = ti[k, DEPTH]
    range_stats(pseudo, perm, s, e, tot, parent_var(ti, k))
    base = log_psplit(prior, d) - log1m_psplit(prior, d) - log_marginal(prior, pseudo, tot)
    dep = col_dependent(pseudo)
    leaf_split = log1m_psplit(prior, d + 1)  # prior factor of a child that could split
    total = 0.0 if out != LOG_RATIOS else NEG_INF
    for v in range(codes.shape[0]):
        if wsplit[v] <= 0.0:
            continue
        mn, mx = code_range(codes[v], perm, s, e)
        if mx == mn:
            continue
        for c in range(mn, mx + 1):
            for u in range(width):
                hist[c, u] = 0.0
            rep[c] = -1
            mixed[c] = False
        for q in range(s, e):
            i = perm[q]
            c = codes[v, i]
            add_row(pseudo, i, hist, c, v)
            if rep[c] < 0:
                rep[c] = i
            elif not mixed[c] and _rows_differ(codes, wsplit, rep[c], i):
                mixed[c] = True
        c_left = mx  # left child splittable for cuts c >= c_left
        r0 = -1
        for c in range(mn, mx):
            if rep[c] >= 0:
                if mixed[c] or (r0 >= 0 and _rows_differ(codes, wsplit, r0, rep[c])):
                    c_left = c
                    break
                if r0 < 0:
                    r0 = rep[c]
        c_right = mn - 1  # right child splittable for cuts c <= c_right
        r1 = -1
        for c2 in range(mx, mn, -1):
            if rep[c2] >= 0:
                if mixed[c2] or (r1 >= 0 and _rows_differ(codes, wsplit, r1, rep[c2])):
                    c_right = c2 - 1
                    break
                if r1 < 0:
                    r1 = rep[c2]
        rule = data.logw[v] - lwk - math.log(mx - mn)
        if dep:  # the children's statistics are on v's basis (the leaf's own, in base, on its parent's)
            for u in range(width):
                tot[u] = 0.0
            for c in range(mn, mx + 1):
                if rep[c] >= 0:
                    for u in range(width):
                        tot[u] += hist[c, u]
        for u in range(width):
            left[u] = 0.0
        delta = 0.0
        r = 0.0
        for c in range(mn, mx):
            # a cut just above a code holding no rows splits the rows as the cut below it does, and
            # both splittability thresholds sit on codes holding rows: same delta, skip the logs
            if c == mn or rep[c] >= 0:
                for u in range(width):
                    left[u] += hist[c, u]
                    right[u] = tot[u] - left[u]
                delta = base + rule + log_marginal(prior, pseudo, left) + log_marginal(prior, pseudo, right)
                if c >= c_left:
                    delta += leaf_split
                if c <= c_right:
                    delta += leaf_split
                if out != LOG_RATIOS:
                    r = 1.0 if delta >= 0.0 else math.exp(delta)
            if out == LOG_RATIOS:
                R[v, c] = delta
                total = max(total, delta)
                continue
            total += r
            if out == RATES:
                R[v, c] = r
    return total


@numba.njit(cache=True, nogil=True)
def death_rate(t, k, prior, pseudo):
    """Rate of turning node ``k`` (both children leaves) back into a leaf."""
    delta = -split_log_ratio(t, prior, pseudo, k) - t.floats[k, RULELP]
    return 1.0 if delta >= 0.0 else math.exp(delta)


@numba.njit(cache=True, nogil=True)
def _pick_rule(rng, data, perm, s, e, R, total):
    """``(v, c, n_cuts)`` drawn in proportion to the weights ``R[v, c]`` (summing to ``total``) of
    the valid rules of the rows ``perm[s:e]``."""
    target = rng.random() * total
    v_pick = -1
    c_pick = -1
    n_cuts = 0
    for v in range(data.codes.shape[0]):
        if data.wsplit[v] <= 0.0:
            continue
        mn, mx = code_range(data.codes[v], perm, s, e)
        for c in range(mn, mx):
            v_pick = v  # the last valid rule absorbs rounding at the top end
            c_pick = c
            n_cuts = mx - mn
            target -= R[v, c]
            if target < 0.0:
                return v_pick, c_pick, n_cuts
    return v_pick, c_pick, n_cuts


@numba.njit(cache=True, nogil=True)
def _birth(rng, t, k, data, prior, pseudo, bs):
    """Split leaf ``k`` by a ``(v, c)`` drawn in proportion to its birth rate."""
    total = leaf_births(t, k, data, prior, pseudo, bs, RATES)
    v, c, n_cuts = _pick_rule(rng, data, t.perm, t.ints[k, START], t.ints[k, END], bs.R, total)
    split_leaf(t, k, v, c, n_cuts, data)


@numba.njit(cache=True, nogil=True)
def nog_rule_gibbs(rng, t, data, prior, pseudo, bs, order):
    """Redraw the rule of a uniformly chosen node whose children are leaves from its full conditional.

    Every valid ``(v, c)`` of the node is weighted by the posterior of the tree carrying it (rule
    prior, the children's split factors and leaf-integrated likelihoods), all from one pass over
    the node's rows. An exact Gibbs update; the set of such nodes does not depend on their rules,
    so choosing one uniformly keeps it exact. Returns True if the rule changed.
    """
    k = random_node(rng, t, NOG)
    if k < 0:
        return False
    ti, R = t.ints, bs.R
    s, e = ti[k, START], ti[k, END]
    top = leaf_births(t, k, data, prior, pseudo, bs, LOG_RATIOS)
    total = 0.0
    for v in range(data.codes.shape[0]):
        if data.wsplit[v] > 0.0:
            mn, mx = code_range(data.codes[v], t.perm, s, e)
            for c in range(mn, mx):
                R[v, c] = math.exp(R[v, c] - top)
                total += R[v, c]
    v_pick, c_pick, _ = _pick_rule(rng, data, t.perm, s, e, R, total)
    if v_pick == ti[k, VAR] and c_pick == ti[k, CUT]:
        return False
    ti[k, VAR] = v_pick
    ti[k, CUT] = c_pick
    repartition_subtree(t, data, k, order)
    refresh_subtree_prior(t, data, k, order)
    return True


@numba.njit(cache=True, nogil=True)
def _death(t, k, B, Dr, threads):
    """Collapse node ``k`` (its rows merged on ``threads`` threads); moves the rate caches with the slots.
    Returns ``k``'s new slot."""
    a = t.ints[k, LEFT]
    b = t.ints[k, RIGHT]
    idx = k
    count = t.nn[0]
    for slot in (max(a, b), min(a, b)):
        last = count - 1
        if slot != last:
            B[slot] = B[last]
            Dr[slot] = Dr[last]
            if last == idx:
                idx = slot
        count -= 1
    collapse(t, k, threads)
    return idx


@numba.njit(cache=True, nogil=True)
def _init_rates(t, data, prior, pseudo, cs):
    B = cs.birth_rate
    Dr = cs.death_rate
    for k in range(t.nn[0]):
        B[k] = 0.0
        Dr[k] = 0.0
        if t.ints[k, LEFT] < 0:
            B[k] = leaf_births(t, k, data, prior, pseudo, cs.births, RATES_SUM)
        elif is_nog(t.ints, k):
            Dr[k] = death_rate(t, k, prior, pseudo)


@numba.njit(cache=True, nogil=True)
def _total_rate(t, cs):
    lam = 0.0
    for k in range(t.nn[0]):
        lam += cs.birth_rate[k] + cs.death_rate[k]
    return lam


@numba.njit(cache=True, nogil=True)
def _jump(rng, lam, t, data, prior, pseudo, cs):
    """Make one jump, chosen in proportion to its rate (``lam`` = total); keeps the caches right."""
    B = cs.birth_rate
    Dr = cs.death_rate
    bs = cs.births
    ti = t.ints
    # slot by slot, a birth at the slot before a death at it; the last possible jump absorbs rounding
    target = rng.random() * lam
    k_pick = -1
    is_birth = True
    for q in range(2 * t.nn[0]):
        k = q // 2
        rate = B[k] if q % 2 == 0 else Dr[k]
        if rate > 0.0:
            k_pick = k
            is_birth = q % 2 == 0
            target -= rate
            if target < 0.0:
                break
    if is_birth:
        _birth(rng, t, k_pick, data, prior, pseudo, bs)
        a = ti[k_pick, LEFT]
        b = ti[k_pick, RIGHT]
        B[k_pick] = 0.0
        Dr[k_pick] = death_rate(t, k_pick, prior, pseudo)
        B[a] = leaf_births(t, a, data, prior, pseudo, bs, RATES_SUM)
        B[b] = leaf_births(t, b, data, prior, pseudo, bs, RATES_SUM)
        Dr[a] = 0.0
        Dr[b] = 0.0
        par = ti[k_pick, PARENT]
        if par >= 0:
            Dr[par] = 0.0
    else:
        k = _death(t, k_pick, B, Dr, pseudo.threads)
        B[k] = leaf_births(t, k, data, prior, pseudo, bs, RATES_SUM)
        Dr[k] = 0.0
        par = ti[k, PARENT]
        if par >= 0 and is_nog(ti, par):
            Dr[par] = death_rate(t, par, prior, pseudo)


@numba.njit(cache=True, nogil=True)
def birth_death(rng, t, data, prior, pseudo, cs):
    """Run the birth-death process for time ``cs.horizon``; returns ``(jumps, total rate at start)``.

    ``horizon < 0`` is jump mode: exactly one jump (none if no move is possible), and the second
    value is the total rate of the state *after* it, whose inverse is that state's expected
    holding time (the Rao-Blackwellised weight of the draw).
    """
    _init_rates(t, data, prior, pseudo, cs)
    lam = _total_rate(t, cs)
    if cs.horizon < 0.0:
        if lam <= 0.0:
            return 0, 0.0
        _jump(rng, lam, t, data, prior, pseudo, cs)
        return 1, _total_rate(t, cs)
    rate0 = lam
    time = 0.0
    jumps = 0
    while lam > 0.0:
        time += -math.log(1.0 - rng.random()) / lam
        if time > cs.horizon:
            break
        _jump(rng, lam, t, data, prior, pseudo, cs)
        jumps += 1
        lam = _total_rate(t, cs)
    return jumps, rate0


@register_update(CTScratch)
@numba.njit(cache=True, nogil=True, inline="always")  # one call site: the driver
def ct_update(rng, j, t, data, prior, pseudo, cs):
    """Birth-death for time ``horizon`` on tree ``j``, then ``n_rotate`` rotate moves each with a
    pivot move (the rotation rotate cannot make because a copy would be empty), then ``n_change``
    rounds of rule moves (one CGM change move, an exact MH redraw of any node's rule; an exact Gibbs
    redraw of the rule of a node whose children are leaves, :func:`nog_rule_gibbs`; an exact Gibbs
    redraw of a node's rule among those that cut its rows the same way,
    :func:`.relabel.relabel_gibbs`, left out for leaves on a basis chosen by the tree: its class of rules keeps the
    partition, not the likelihood, there). Returns 1 if the birth-death process jumped.

    With rotate or rule moves the sequence runs forwards or backwards with probability 1/2 each: each
    move is reversible, so this mixture of a composition and its adjoint is reversible too, which a
    likelihood record's Metropolis-Hastings correction relies on (engine/driver.py).
    """
    if (cs.n_rotate > 0 or cs.n_change > 0) and rng.random() < 0.5:
        for _ in range(cs.n_change):
            if not col_dependent(pseudo):  # a relabel keeps the likelihood, unless the basis reads the rule
                relabel_gibbs(rng, t, data, cs.mb.order)
            nog_rule_gibbs(rng, t, data, prior, pseudo, cs.births, cs.mb.order)
            change_move(rng, t, data, prior, pseudo, cs.mb)
        for _ in range(cs.n_rotate):
            pivot_move(rng, t, data, prior, pseudo, cs.seq, cs.mb.bk)
            rotate_move(rng, t, data, prior, pseudo, cs.seq, cs.mb.bk)
        jumps, rate = birth_death(rng, t, data, prior, pseudo, cs)
    else:
        jumps, rate = birth_death(rng, t, data, prior, pseudo, cs)
        for _ in range(cs.n_rotate):
            rotate_move(rng, t, data, prior, pseudo, cs.seq, cs.mb.bk)
            pivot_move(rng, t, data, prior, pseudo, cs.seq, cs.mb.bk)
        for _ in range(cs.n_change):
            change_move(rng, t, data, prior, pseudo, cs.mb)
            nog_rule_gibbs(rng, t, data, prior, pseudo, cs.births, cs.mb.order)
            if not col_dependent(pseudo):  # a relabel keeps the likelihood, unless the basis reads the rule
                relabel_gibbs(rng, t, data, cs.mb.order)
    cs.jumps[j] = jumps
    cs.rate[j] = rate
    return int(jumps > 0)
