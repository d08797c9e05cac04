"""The decisions of the GPU sweep (grow/prune, or CGM's grow, prune, change and swap), written once and compiled
twice: by ``numba.njit`` for the host (the CPU twin the exactness tests run) and by ``cuda.jit(device=True)`` for
the device (``device.py``), so the device runs the very code the tests prove, draw for draw.

The trees are small node tables (one per tree, ``MAXN`` slots); the rows (codes, the per-tree leaf slot of every
row, the running residual) are touched only by the row pass. Per tree ``j``:

1. :func:`pre_tree` (one thread): draw tree ``j``'s proposal from its node table alone: the move (grow, prune,
   change, swap with the chain's probabilities; a root-only tree grows), its node, and for grow and change a
   rule from its prior given the node's code ranges (stored when the node's rows were last counted). Grow,
   change and swap write the subtree they re-partition as a *site* (``S_*``: its nodes with the proposed rules,
   and the mask of the leaf slots whose rows descend it: a grow's leaf, a change/swap's subtree leaves).
   Zero the outputs; copy tree ``j``'s leaf values into ``floats``.
2. the row pass (:func:`row_pass_cpu` here, ``device.py`` on the GPU, all threads): apply the pending change of
   the previous tree (a row in the pending site's mask descends it to its new leaf slot; the residual takes the
   new leaf values), then sum tree ``j``'s rows per leaf with its fit added back, and the rows in the site's
   mask per site leaf (count, sum, code range per split column), and the residual sum of squares.
3. :func:`post_tree` (one thread): at tree 0 the sigma^2 draw (conjugate, from the residual sum of squares);
   accept or reject, draw every leaf of the tree, write the pending change (a site) for the next pass.

The posterior is the package's (docs/design.md, section 2; ``engine/moves/growprune.py``, ``cgm.py``): the leaf
chosen uniformly among the growable ones (a valid cut on some variable of positive weight), the rule drawn
from its prior (so its probability cancels), the Hastings terms ``log(g)`` and ``log(nog)``; change at a uniform
internal node with a new rule from its prior (the top rule's probability cancels), swap at a uniform non-root
internal node and its parent (symmetric; both children's rules when they share one); the Chipman tree prior with
the valid-cut convention, Normal-Normal leaves integrated out for structure and drawn from their conditional
afterwards. A change/swap whose subtree has more than ``P_SUBCAP`` (at most ``SUBMAX``) nodes leaves the tree as
it is: the pass has room for ``SUBMAX`` site nodes, and since both moves keep the tree's shape the subtree's
size is the same after them, so the restriction is symmetric and the chain exact.

Overlap: the proposal of tree ``j + 1`` needs only tree ``j + 1``'s node table, so the device draws it while
the other blocks still pass over the rows for tree ``j``. The exchange buffers are therefore two rows (``words``,
``floats``, ``prop``: row ``t & 1`` for the ``t``-th tree processed, counted over sweeps): a tree's proposal,
outputs and pending change live in its row; the pass reads the pending change (``I_PSITE``, ``F_OLD``,
``F_NEW``) from the other row, whose proposal fields the deciding thread writes meanwhile (disjoint words).

Random numbers: xoroshiro128+ (the generator of ``numba.cuda.random``), two streams (``rs[0]`` the proposals',
``rs[1]`` the decisions' and sigma^2's), each used by one thread, so drawing a proposal early changes no draw;
uniforms are 53-bit, normals Box-Muller, gammas Marsaglia-Tsang.
"""

from __future__ import annotations

import math
import types

import numpy as np

from .layout import (
    CHANGE,
    CUT,
    DEPTH,
    F_CUR,
    F_NEW,
    F_OLD,
    F_SSR,
    F_SSUM,
    F_SUM,
    GROW,
    I_CNT,
    I_ERR,
    I_J,
    I_JP,
    I_K,
    I_KIND,
    I_PSITE,
    I_RANGE,
    I_SITE,
    I_TOP,
    INT_BIG,
    INV_2_53,
    LEFT,
    MASKW,
    N_CUT,
    N_LEFT,
    N_RIGHT,
    N_SLOT,
    N_VAR,
    NEG_INF,
    NONE,
    P_A0,
    P_ALPHA,
    P_B0,
    P_BETA,
    P_FIXED,
    P_MU0,
    P_N,
    P_PCHANGE,
    P_PGROW,
    P_PPRUNE,
    P_S2MU,
    P_SIGMA2,
    P_SUBCAP,
    PARENT,
    PRUNE,
    RIGHT,
    S_FIELDS,
    S_MASK,
    S_N,
    S_NODES,
    SWAP,
    TWO_PI,
    VAR,
)

# The tree prior and the leaf marginal are the engine's formulas, written again here over the parameter vector
# (the device cannot call the engine's functions, which take its records). Each mirror and the engine function
# it must equal; tests/test_gpu.py holds every pair equal on random inputs.
ENGINE_MIRRORS = {
    "log_psplit": "pymc_treesamplers.engine.prior.log_psplit",
    "log1m_psplit": "pymc_treesamplers.engine.prior.log1m_psplit",
    "leaf_log_prior": "pymc_treesamplers.engine.prior.leaf_log_prior",
    "leaf_loglik": "pymc_treesamplers.engine.gaussian.leaf_loglik",
    "rule_log_prior": "pymc_treesamplers.engine.prior.rule_log_prob",
}


def leaf_could_split(log_avail):
    """Whether a leaf's prior holds the factor ``1 - p_split(d)``: where it has a valid cut; a leaf without one
    (``log_avail`` -inf) stays a leaf with probability one."""
    return log_avail != NEG_INF


def prune_log_ratio(log_post, log_pgrow_back, g_new, log_pprune, nog):
    """A prune's log acceptance ratio: minus the grow's log posterior ratio ``log_post``, plus the Hastings
    term (grow back: the move's probability over the growable leaves after the prune; the prune: its
    probability over the parents of two leaves now)."""
    return -log_post + (log_pgrow_back - math.log(g_new)) - (log_pprune - math.log(nog))


def top_rule_counts(kind):
    """Whether a change or swap's ratio holds the top node's rule probability: a swap moves that rule (it
    counts); a change draws it from its prior (it cancels)."""
    return kind == SWAP


def build(jit, leaf_could_split=leaf_could_split, prune_log_ratio=prune_log_ratio,
          top_rule_counts=top_rule_counts):
    """The decision functions compiled by ``jit`` (``numba.njit`` or ``cuda.jit(device=True)``); returns a
    namespace of them. The same Python source for both targets: the twin is the device's code.

    The three pieces whose deliberately wrong versions the exactness tests must catch are arguments
    (:mod:`pymc_treesamplers.testing` passes its own), as the CPU side keeps its wrong records apart from the
    exact ones; the package always builds with the exact pieces above.

    >>> import numba
    >>> ns = build(numba.njit)
    >>> sorted(ns.__dict__)[:3]
    ['decide', 'leaf_log_prior', 'leaf_loglik']
    """
    leaf_could_split = jit(leaf_could_split)
    prune_ratio = jit(prune_log_ratio)
    top_rule_counts = jit(top_rule_counts)

    @jit
    def rng_next(rs):
        s0 = rs[0]
        s1 = rs[1]
        result = s0 + s1
        s1 = s1 ^ s0
        rs[0] = ((s0 << np.uint32(24)) | (s0 >> np.uint32(40))) ^ s1 ^ (s1 << np.uint32(16))
        rs[1] = (s1 << np.uint32(37)) | (s1 >> np.uint32(27))
        return result

    @jit
    def rng_uniform(rs):
        """[0, 1), 53 bits."""
        return np.float64(rng_next(rs) >> np.uint32(11)) * INV_2_53

    @jit
    def rng_below(rs, k):
        """An integer uniform on 0..k-1."""
        q = np.int64(math.floor(rng_uniform(rs) * k))
        return q if q < k else k - 1

    @jit
    def rng_normal(rs):
        u1 = 1.0 - rng_uniform(rs)  # (0, 1]
        u2 = rng_uniform(rs)
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(TWO_PI * u2)

    @jit
    def rng_gamma(rs, a):
        """Gamma(a, 1), Marsaglia-Tsang (a < 1 by the u^(1/a) boost)."""
        boost = 1.0
        if a < 1.0:
            boost = math.exp(math.log(1.0 - rng_uniform(rs)) / a)
            a = a + 1.0
        d = a - 1.0 / 3.0
        c = 1.0 / math.sqrt(9.0 * d)
        while True:
            x = rng_normal(rs)
            v = 1.0 + c * x
            if v <= 0.0:
                continue
            v = v * v * v
            u = 1.0 - rng_uniform(rs)
            if math.log(u) < 0.5 * x * x + d - d * v + d * math.log(v):
                return d * v * boost

    @jit
    def log_psplit(params, d):
        return math.log(params[P_ALPHA]) - params[P_BETA] * math.log(1.0 + d)

    @jit
    def log1m_psplit(params, d):
        return math.log1p(-params[P_ALPHA] * (1.0 + d) ** (-params[P_BETA]))

    @jit
    def leaf_log_prior(params, d, lw):
        if not leaf_could_split(lw):
            return 0.0
        return log1m_psplit(params, d)

    @jit
    def leaf_loglik(params, W, S):
        mu0 = params[P_MU0]
        s2 = params[P_S2MU]
        b = S + mu0 / s2
        return -0.5 * math.log1p(s2 * W) + 0.5 * b * b / (W + 1.0 / s2) - 0.5 * mu0 * mu0 / s2

    @jit
    def is_leaf(ints, used, j, k):
        return used[j, k] != 0 and ints[j, k, LEFT] < 0

    @jit
    def is_nog(ints, used, j, k):
        if used[j, k] == 0 or ints[j, k, LEFT] < 0:
            return False
        return ints[j, ints[j, k, LEFT], LEFT] < 0 and ints[j, ints[j, k, RIGHT], LEFT] < 0

    @jit
    def mask_has(a, at, s):
        """Whether slot ``s`` is in the mask of the site at ``a[at:]``."""
        return (a[at + S_MASK + (s >> 4)] >> (s & 15)) & 1 != 0

    @jit
    def mask_set(a, at, s):
        a[at + S_MASK + (s >> 4)] = a[at + S_MASK + (s >> 4)] | (1 << (s & 15))

    @jit
    def site_descend(codes, a, at, i):
        """The site leaf (site index) row ``i`` reaches from the site's top node, by the site's rules."""
        q = 0
        base = at + S_NODES
        while a[base + N_LEFT] >= 0:
            if codes[a[base + N_VAR], i] <= a[base + N_CUT]:
                q = a[base + N_LEFT]
            else:
                q = a[base + N_RIGHT]
            base = at + S_NODES + S_FIELDS * q
        return q

    @jit
    def site_of(ints, j, k, words, at, cap):
        """Write the subtree of tree ``j`` below slot ``k`` (its rules as they are) as a site at ``words[at:]``, the
        mask its leaves; returns its node count, or -1 (nothing usable written) when it has more than ``cap``."""
        for w in range(MASKW):
            words[at + S_MASK + w] = 0
        words[at + S_NODES + N_SLOT] = k
        n = 1
        q = 0
        while q < n:
            base = at + S_NODES + S_FIELDS * q
            s = words[base + N_SLOT]
            if ints[j, s, LEFT] >= 0:
                if n + 2 > cap:
                    return -1
                words[base + N_VAR] = ints[j, s, VAR]
                words[base + N_CUT] = ints[j, s, CUT]
                words[base + N_LEFT] = n
                words[base + N_RIGHT] = n + 1
                words[at + S_NODES + S_FIELDS * n + N_SLOT] = ints[j, s, LEFT]
                words[at + S_NODES + S_FIELDS * (n + 1) + N_SLOT] = ints[j, s, RIGHT]
                n += 2
            else:
                words[base + N_VAR] = -1
                words[base + N_CUT] = -1
                words[base + N_LEFT] = -1
                words[base + N_RIGHT] = -1
                mask_set(words, at, s)
            q += 1
        words[at + S_N] = n
        return n

    @jit
    def avail_tab(lohi, j, s, wsplit):
        """Split weight of the columns with a valid cut at node ``s`` of tree ``j`` (its stored code ranges)."""
        total = 0.0
        for w in range(wsplit.shape[0]):
            if wsplit[w] > 0.0 and lohi[j, s, 1, w] > lohi[j, s, 0, w]:
                total += wsplit[w]
        return total

    @jit
    def avail_out(words, q, wsplit):
        """Split weight of the columns with a valid cut at site node ``q`` (the pass's code ranges)."""
        p = wsplit.shape[0]
        base = I_RANGE + 2 * p * q
        total = 0.0
        for w in range(p):
            if wsplit[w] > 0.0 and words[base + p + w] > words[base + w]:
                total += wsplit[w]
        return total

    @jit
    def log_or_neg_inf(x):
        return math.log(x) if x > 0.0 else NEG_INF

    @jit
    def draw_rule(rs, lohi, j, k, wsplit, words, base):
        """A rule for node ``k`` of tree ``j`` from its prior (a column in proportion to its weight among those
        with a valid cut there, then a cut uniform among the valid ones) into ``words[base + N_VAR / N_CUT]``."""
        p = wsplit.shape[0]
        total = avail_tab(lohi, j, k, wsplit)
        u = rng_uniform(rs) * total
        acc = 0.0
        v = -1
        for w in range(p):
            if wsplit[w] > 0.0 and lohi[j, k, 1, w] > lohi[j, k, 0, w]:
                acc += wsplit[w]
                v = w
                if u < acc:
                    break
        lo = lohi[j, k, 0, v]
        words[base + N_VAR] = v
        words[base + N_CUT] = lo + rng_below(rs, lohi[j, k, 1, v] - lo)

    @jit
    def nth_node(ints, used, log_avail, j, tj, what, idx):
        """The ``idx``-th slot (in slot order) of tree ``j`` that is growable (``what`` 0), a parent of two
        leaves (1), internal (2) or internal and not the root (3)."""
        for q in range(tj):
            if used[j, q] == 0:
                continue
            if what == 0:
                hit = ints[j, q, LEFT] < 0 and log_avail[j, q] > NEG_INF
            elif what == 1:
                hit = is_nog(ints, used, j, q)
            elif what == 2:
                hit = ints[j, q, LEFT] >= 0
            else:
                hit = ints[j, q, LEFT] >= 0 and q != 0
            if hit:
                if idx == 0:
                    return q
                idx -= 1
        return -1

    @jit
    def pre_tree(rs, ints, lohi, val, log_avail, used, top, j, params, wsplit, words, floats, prop):
        """Draw tree ``j``'s proposal from its node table; write it (kind, node, site) and ``j``'s leaf values into
        ``words``/``floats`` and zero the outputs. ``prop`` keeps ``g``, ``nog`` and ``log P(move)`` for
        :func:`post_tree`.

        The move is a grow, prune, change or swap with the probabilities in ``params`` (a root-only tree grows), as
        the CPU's ``engine/updates/mh.py`` draws it. A change or swap at a node whose subtree has more than
        ``params[P_SUBCAP]`` nodes leaves the tree as it is: the moves keep every tree's shape, so that subtree has
        the same size after them and the restriction is symmetric (the chain stays exact)."""
        p = wsplit.shape[0]
        tj = top[j]
        g = 0
        nog = 0
        n_int = 0
        for q in range(tj):
            if used[j, q] != 0:
                if ints[j, q, LEFT] < 0:
                    if log_avail[j, q] > NEG_INF:
                        g += 1
                else:
                    n_int += 1
                    if is_nog(ints, used, j, q):
                        nog += 1
        pg = params[P_PGROW]
        pp = params[P_PPRUNE]
        cap = np.int64(params[P_SUBCAP])
        kind = NONE
        k = -1
        log_pmove = 0.0
        at = I_SITE
        nodes = at + S_NODES
        words[at + S_N] = 0
        if ints[j, 0, LEFT] < 0:
            kind = GROW
        else:
            u = rng_uniform(rs)
            if u < pg:
                kind = GROW
                log_pmove = math.log(pg)
            elif u - pg < pp:
                kind = PRUNE
                log_pmove = math.log(pp)
            elif u - pg - pp < params[P_PCHANGE]:
                kind = CHANGE
            else:
                kind = SWAP
        if kind == GROW:
            if g == 0:
                kind = NONE
            else:
                k = nth_node(ints, used, log_avail, j, tj, 0, rng_below(rs, g))
                for w in range(MASKW):
                    words[at + S_MASK + w] = 0
                mask_set(words, at, k)
                draw_rule(rs, lohi, j, k, wsplit, words, nodes)
                words[nodes + N_LEFT] = 1
                words[nodes + N_RIGHT] = 2
                words[nodes + N_SLOT] = k
                for q in range(1, 3):
                    base = nodes + S_FIELDS * q
                    words[base + N_VAR] = -1
                    words[base + N_CUT] = -1
                    words[base + N_LEFT] = -1
                    words[base + N_RIGHT] = -1
                    words[base + N_SLOT] = -1
                words[at + S_N] = 3
        elif kind == PRUNE:
            if nog == 0:
                kind = NONE
            else:
                k = nth_node(ints, used, log_avail, j, tj, 1, rng_below(rs, nog))
        elif kind == CHANGE:
            k = nth_node(ints, used, log_avail, j, tj, 2, rng_below(rs, n_int))
            if site_of(ints, j, k, words, at, cap) < 0:
                kind = NONE
            else:
                draw_rule(rs, lohi, j, k, wsplit, words, nodes)
                if words[nodes + N_VAR] == ints[j, k, VAR] and words[nodes + N_CUT] == ints[j, k, CUT]:
                    kind = NONE  # the tree as it is: nothing to score
        else:  # SWAP: a parent's rule with its internal child's (with both children's when they share a rule)
            if n_int <= 1:
                kind = NONE
            else:
                ch = nth_node(ints, used, log_avail, j, tj, 3, rng_below(rs, n_int - 1))
                k = ints[j, ch, PARENT]
                if site_of(ints, j, k, words, at, cap) < 0:
                    kind = NONE
                else:
                    c1 = nodes + S_FIELDS
                    c2 = nodes + 2 * S_FIELDS
                    cq = c1 if ints[j, k, LEFT] == ch else c2
                    pv = words[nodes + N_VAR]
                    pc = words[nodes + N_CUT]
                    words[nodes + N_VAR] = words[cq + N_VAR]
                    words[nodes + N_CUT] = words[cq + N_CUT]
                    if (words[c1 + N_LEFT] >= 0 and words[c2 + N_LEFT] >= 0 and words[c1 + N_VAR] == words[c2 + N_VAR]
                            and words[c1 + N_CUT] == words[c2 + N_CUT]):
                        words[c1 + N_VAR] = pv
                        words[c1 + N_CUT] = pc
                        words[c2 + N_VAR] = pv
                        words[c2 + N_CUT] = pc
                    else:
                        words[cq + N_VAR] = pv
                        words[cq + N_CUT] = pc
        if kind == NONE or kind == PRUNE:
            words[at + S_N] = 0
        words[I_J] = j
        words[I_KIND] = kind
        words[I_K] = k
        words[I_TOP] = tj
        for q in range(words[at + S_N]):
            words[I_CNT + q] = 0
            floats[F_SSUM + q] = 0.0
            if words[nodes + S_FIELDS * q + N_LEFT] < 0:  # the pass bounds the leaves; the decision the rest
                for w in range(p):
                    words[I_RANGE + 2 * p * q + w] = INT_BIG
                    words[I_RANGE + 2 * p * q + p + w] = -1
        for q in range(tj):
            floats[F_CUR + q] = val[j, q]
            floats[F_SUM + q] = 0.0
        floats[F_SSR] = 0.0
        prop[0] = g
        prop[1] = nog
        prop[2] = log_pmove

    @jit
    def free_slot(used, j, after):
        for q in range(after + 1, used.shape[1]):
            if used[j, q] == 0:
                return q
        return -1

    @jit
    def store_site_node(ints, lohi, cnt, log_avail, floats, words, j, q, wsplit):
        """Site node ``q`` as scored into tree ``j``'s node table: its rule, rows, code ranges and available
        weight (and a leaf's sum, for its draw)."""
        p = wsplit.shape[0]
        base = I_SITE + S_NODES + S_FIELDS * q
        s = words[base + N_SLOT]
        ints[j, s, VAR] = words[base + N_VAR]
        ints[j, s, CUT] = words[base + N_CUT]
        cnt[j, s] = words[I_CNT + q]
        for w in range(p):
            lohi[j, s, 0, w] = words[I_RANGE + 2 * p * q + w]
            lohi[j, s, 1, w] = words[I_RANGE + 2 * p * q + p + w]
        log_avail[j, s] = log_or_neg_inf(avail_out(words, q, wsplit))
        if words[base + N_LEFT] < 0:
            floats[F_SUM + s] = floats[F_SSUM + q]

    @jit
    def rule_log_prior(wv, avail, n_cuts):
        return math.log(wv) - math.log(avail) - math.log(n_cuts)

    @jit
    def site_log_ratio(ints, lohi, cnt, log_avail, j, params, wsplit, words, floats, top_rule):
        """log posterior of the proposed site over the current subtree, the terms that differ: each leaf's
        prior factor and integrated likelihood, each split's rule probability (the top one's only when
        ``top_rule``: a change draws it from its prior, which cancels it). The split factors ``p_split(d)``
        cancel (the moves keep the shape). The site's internal counts and ranges must be filled in."""
        p = wsplit.shape[0]
        s2 = params[P_SIGMA2]
        lp = 0.0
        for q in range(words[I_SITE + S_N]):
            base = I_SITE + S_NODES + S_FIELDS * q
            s = words[base + N_SLOT]
            d = ints[j, s, DEPTH]
            if words[base + N_LEFT] >= 0:
                if q > 0 or top_rule:
                    vn = words[base + N_VAR]
                    rq = I_RANGE + 2 * p * q
                    lp += rule_log_prior(wsplit[vn], avail_out(words, q, wsplit), words[rq + p + vn] - words[rq + vn])
                    vo = ints[j, s, VAR]
                    lp -= rule_log_prior(wsplit[vo], avail_tab(lohi, j, s, wsplit),
                                         lohi[j, s, 1, vo] - lohi[j, s, 0, vo])
            else:
                lp += (leaf_log_prior(params, d, log_or_neg_inf(avail_out(words, q, wsplit)))
                       + leaf_loglik(params, words[I_CNT + q] / s2, floats[F_SSUM + q] / s2))
                lp -= leaf_log_prior(params, d, log_avail[j, s]) + leaf_loglik(params, cnt[j, s] / s2,
                                                                               floats[F_SUM + s] / s2)
        return lp

    @jit
    def fill_site(words, p):
        """The site's internal nodes' row counts and code ranges from their leaves' (children after parents, so
        backwards); returns False when a leaf has no rows (a split with an empty side: prior zero)."""
        valid = True
        for q in range(words[I_SITE + S_N] - 1, -1, -1):
            base = I_SITE + S_NODES + S_FIELDS * q
            a = words[base + N_LEFT]
            if a >= 0:
                b = words[base + N_RIGHT]
                words[I_CNT + q] = words[I_CNT + a] + words[I_CNT + b]
                for e in range(2 * p):
                    x = words[I_RANGE + 2 * p * a + e]
                    y = words[I_RANGE + 2 * p * b + e]
                    if e < p:
                        words[I_RANGE + 2 * p * q + e] = x if x < y else y
                    else:
                        words[I_RANGE + 2 * p * q + e] = x if x > y else y
            elif words[I_CNT + q] == 0:
                valid = False
        return valid

    @jit
    def decide(rs, ints, lohi, cnt, val, log_avail, used, top, j, params, wsplit, words, floats, prop):
        """Accept or reject tree ``j``'s proposal from the pass's outputs, draw every leaf of the tree, and write
        the pending change for the next pass. Returns 1 accepted, 0 not, -1 out of node slots."""
        p = wsplit.shape[0]
        s2 = params[P_SIGMA2]
        kind = words[I_KIND]
        k = words[I_K]
        g = prop[0]
        nog = prop[1]
        log_pmove = prop[2]
        pg = params[P_PGROW]
        pp = params[P_PPRUNE]
        accepted = 0
        a = -1
        b = -1
        tj = top[j]
        nodes = I_SITE + S_NODES
        for q in range(tj):  # old values of tree j, for the pending change
            floats[F_OLD + q] = val[j, q]
        if kind == GROW:
            d = ints[j, k, DEPTH]
            nl = words[I_CNT + 1]
            sl = floats[F_SSUM + 1]
            nr = words[I_CNT + 2]
            sr = floats[F_SSUM + 2]
            nk = cnt[j, k]
            sk = floats[F_SUM + k]
            lw_l = log_or_neg_inf(avail_out(words, 1, wsplit))
            lw_r = log_or_neg_inf(avail_out(words, 2, wsplit))
            dlik = (leaf_loglik(params, nl / s2, sl / s2) + leaf_loglik(params, nr / s2, sr / s2)
                    - leaf_loglik(params, nk / s2, sk / s2))
            dprior = (log_psplit(params, d) + leaf_log_prior(params, d + 1, lw_l)
                      + leaf_log_prior(params, d + 1, lw_r) - log1m_psplit(params, d))
            par = ints[j, k, PARENT]
            nog_new = nog + 1
            if par >= 0 and is_nog(ints, used, j, par):
                nog_new -= 1
            log_r = dprior + dlik + (math.log(pp) - math.log(nog_new)) - (log_pmove - math.log(g))
            if math.log(1.0 - rng_uniform(rs)) < log_r:
                a = free_slot(used, j, 0)
                b = free_slot(used, j, a) if a >= 0 else -1
                if b < 0:
                    return -1
                accepted = 1
                ints[j, k, VAR] = words[nodes + N_VAR]
                ints[j, k, CUT] = words[nodes + N_CUT]
                ints[j, k, LEFT] = a
                ints[j, k, RIGHT] = b
                words[nodes + S_FIELDS + N_SLOT] = a
                words[nodes + 2 * S_FIELDS + N_SLOT] = b
                for q in range(1, 3):
                    c = a if q == 1 else b
                    used[j, c] = 1
                    ints[j, c, LEFT] = -1
                    ints[j, c, RIGHT] = -1
                    ints[j, c, PARENT] = k
                    ints[j, c, DEPTH] = d + 1
                    store_site_node(ints, lohi, cnt, log_avail, floats, words, j, q, wsplit)
                if b + 1 > tj:
                    tj = b + 1
                    top[j] = tj
        elif kind == PRUNE:
            a = ints[j, k, LEFT]
            b = ints[j, k, RIGHT]
            d = ints[j, k, DEPTH]
            na = cnt[j, a]
            nb = cnt[j, b]
            sa = floats[F_SUM + a]
            sb = floats[F_SUM + b]
            dlik = (leaf_loglik(params, na / s2, sa / s2) + leaf_loglik(params, nb / s2, sb / s2)
                    - leaf_loglik(params, (na + nb) / s2, (sa + sb) / s2))
            dprior = (log_psplit(params, d) + leaf_log_prior(params, d + 1, log_avail[j, a])
                      + leaf_log_prior(params, d + 1, log_avail[j, b]) - log1m_psplit(params, d))
            g_new = g + 1
            if log_avail[j, a] > NEG_INF:
                g_new -= 1
            if log_avail[j, b] > NEG_INF:
                g_new -= 1
            log_pgrow_new = 0.0 if k == 0 else math.log(pg)
            log_r = prune_ratio(dprior + dlik, log_pgrow_new, g_new, log_pmove, nog)
            if math.log(1.0 - rng_uniform(rs)) < log_r:
                accepted = 1
                used[j, a] = 0
                used[j, b] = 0
                ints[j, k, VAR] = -1
                ints[j, k, CUT] = -1
                ints[j, k, LEFT] = -1
                ints[j, k, RIGHT] = -1
                floats[F_SUM + k] = sa + sb
                cnt[j, k] = na + nb
                # the freed slots keep their old values until the next pass has moved their rows
        elif kind == CHANGE or kind == SWAP:
            top_rule = top_rule_counts(kind)
            if fill_site(words, p):  # else rejected, no uniform drawn (as the CPU's moves)
                log_r = site_log_ratio(ints, lohi, cnt, log_avail, j, params, wsplit, words, floats, top_rule)
                if math.log(1.0 - rng_uniform(rs)) < log_r:
                    accepted = 1
                    for q in range(words[I_SITE + S_N]):
                        store_site_node(ints, lohi, cnt, log_avail, floats, words, j, q, wsplit)
        # leaves from their Normal-Normal conditional, in slot order
        s2mu = params[P_S2MU]
        mu0 = params[P_MU0]
        for q in range(tj):
            if is_leaf(ints, used, j, q):
                W = cnt[j, q] / s2
                S = floats[F_SUM + q] / s2
                prec = W + 1.0 / s2mu
                val[j, q] = (S + mu0 / s2mu) / prec + rng_normal(rs) / math.sqrt(prec)
        # pending change for the next pass: the rows it moves and where (the pruned children: to their parent);
        # floats[F_NEW] of the pruned children is their old value (no row stays there)
        words[I_JP] = j
        pend = I_PSITE
        if accepted == 1 and kind == PRUNE:
            for w in range(MASKW):
                words[pend + S_MASK + w] = 0
            mask_set(words, pend, a)
            mask_set(words, pend, b)
            base = pend + S_NODES
            words[base + N_VAR] = -1
            words[base + N_CUT] = -1
            words[base + N_LEFT] = -1
            words[base + N_RIGHT] = -1
            words[base + N_SLOT] = k
            words[pend + S_N] = 1
        elif accepted == 1:
            for e in range(S_NODES + S_FIELDS * words[I_SITE + S_N]):
                words[pend + e] = words[I_SITE + e]
        else:
            words[pend + S_N] = 0
        for q in range(tj):
            floats[F_NEW + q] = val[j, q]
        if accepted == 1 and kind == PRUNE:
            val[j, a] = 0.0
            val[j, b] = 0.0
            while tj > 1 and used[j, tj - 1] == 0:
                tj -= 1
            top[j] = tj
        return accepted

    @jit
    def post_tree(rs, ints, lohi, cnt, val, log_avail, used, top, j, params, wsplit, words, floats, prop):
        """After tree ``j``'s pass: the sigma^2 draw at tree 0 (unless fixed), then :func:`decide`; an error
        (out of node slots) is flagged in ``words[I_ERR]`` (tree + 1)."""
        if j == 0 and params[P_FIXED] == 0.0:
            params[P_SIGMA2] = (params[P_B0] + 0.5 * floats[F_SSR]) / rng_gamma(rs, params[P_A0] + 0.5 * params[P_N])
        if decide(rs, ints, lohi, cnt, val, log_avail, used, top, j, params, wsplit, words, floats, prop) < 0:
            words[I_ERR] = j + 1

    return types.SimpleNamespace(rng_next=rng_next, rng_uniform=rng_uniform, rng_below=rng_below,
                                 rng_normal=rng_normal, rng_gamma=rng_gamma, pre_tree=pre_tree,
                                 post_tree=post_tree, decide=decide, mask_has=mask_has,
                                 site_descend=site_descend, log_psplit=log_psplit, log1m_psplit=log1m_psplit,
                                 leaf_log_prior=leaf_log_prior, leaf_loglik=leaf_loglik,
                                 rule_log_prior=rule_log_prior)
