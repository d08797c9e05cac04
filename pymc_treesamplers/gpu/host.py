"""Decisions of the GPU sweep (grow/prune, or CGM's grow, prune, change and swap), written once and compiled
twice: by ``numba.njit`` for the host (the CPU twin the exactness tests run) and by ``cuda.jit(device=True)`` for
the device (``device.py``), so the device runs the very code the tests prove, draw for draw.

The trees are small node tables (one per tree, ``MAXN`` slots); the rows (codes, the per-tree leaf slot of every
row, the running residual) are touched only by the row pass. Per tree ``j``:

1. :func:`pre_tree` (one thread): draw tree ``j``'s proposal from its node table alone: the move (grow, prune,
   change, swap with the chain's probabilities; a root-only tree grows), its node, and for grow and change a
   rule from its prior given the node's code ranges (stored when the node's rows were last counted). Grow,
   change and swap write the subtree they re-partition as a *site* (``S_*``: its nodes with the proposed rules,
   and the mask of the leaf slots whose rows descend it: a grow's leaf, a change/swap's subtree leaves).
   Zero the outputs; copy tree ``j``'s leaf values into ``fb``.
2. the row pass (:func:`row_pass_cpu` here, ``device.py`` on the GPU, all threads): apply the pending change of
   the previous tree (a row in the pending site's mask descends it to its new leaf slot; the residual takes the
   new leaf values), then sum tree ``j``'s rows per leaf with its fit added back, and the rows in the site's
   mask per site leaf (count, sum, code range per split column), and the residual sum of squares.
3. :func:`post_tree` (one thread): at tree 0 the sigma^2 draw (conjugate, from the residual sum of squares);
   accept or reject, draw every leaf of the tree, write the pending change (a site) for the next pass.

The posterior is the package's (docs/design.md section 2, ``engine/moves/growprune.py``, ``cgm.py``): the
leaf chosen uniformly among the growable ones (a valid cut on some variable of positive weight), the rule drawn
from its prior (so its probability cancels), the Hastings terms ``log(g)`` and ``log(nog)``; change at a uniform
internal node with a new rule from its prior (the top rule's probability cancels), swap at a uniform non-root
internal node and its parent (symmetric; both children's rules when they share one); the Chipman tree prior with
the valid-cut convention, Normal-Normal leaves integrated out for structure and drawn from their conditional
afterwards. A change/swap whose subtree has more than ``P_SUBCAP`` (at most ``SUBMAX``) nodes leaves the tree as
it is: the pass has room for ``SUBMAX`` site nodes, and since both moves keep the tree's shape the subtree's
size is the same after them, so the restriction is symmetric and the chain exact.

Overlap: the proposal of tree ``j + 1`` needs only tree ``j + 1``'s node table, so the device draws it while
the other blocks still pass over the rows for tree ``j``. The exchange buffers are therefore two rows (``ib``,
``fb``, ``prop``: row ``t & 1`` for the ``t``-th tree processed, counted over sweeps): a tree's proposal,
outputs and pending change live in its row; the pass reads the pending change (``I_PSITE``, ``F_OLD``,
``F_NEW``) from the other row, whose proposal fields the deciding thread writes meanwhile (disjoint words).

Random numbers: xoroshiro128+ (the generator of ``numba.cuda.random``), two streams (``rs[0]`` the proposals',
``rs[1]`` the decisions' and sigma^2's), each used by one thread, so drawing a proposal early changes no draw;
uniforms are 53-bit, normals Box-Muller, gammas Marsaglia-Tsang.
"""

from __future__ import annotations

import math
import types

import numba
import numpy as np

MAXN = 256  # node slots per tree (leaf slots of rows are uint8)
PMAX = 32  # most split columns the device pass handles
NACC = 8  # leaf slots the device pass sums in per-thread registers/local memory (higher slots: shared atomics)
SUBMAX = 31  # most nodes of the subtree a proposal re-partitions (a change/swap above a larger one stays put)
MASKW = MAXN // 16  # 16-bit words of a slot mask (16 bits a word keeps every int32 word non-negative)

# node table fields (ints[j, k, :])
VAR, CUT, LEFT, RIGHT, PARENT, DEPTH = range(6)
N_INTS = 6

# move kinds
NONE, GROW, PRUNE, CHANGE, SWAP = range(5)

# A site (int32 words in ib): the subtree a move re-partitions, with its rules as proposed. S_N nodes in
# breadth-first order (a parent before its children; node 0 the subtree's top), each VAR, CUT (-1: a leaf),
# LEFT, RIGHT (site indices), SLOT (the node table slot; -1 for a grow's children before they get one); S_MASK:
# the bits of the tree's leaf slots whose rows it takes (a grow: the leaf; a change/swap: the subtree's leaves;
# a prune: the two children). A row in the mask descends the site from node 0 to one of its leaves.
S_N, S_MASK = 0, 1
S_NODES = 1 + MASKW
N_VAR, N_CUT, N_LEFT, N_RIGHT, N_SLOT = range(5)
S_FIELDS = 5
SITE_LEN = S_NODES + S_FIELDS * SUBMAX

# ib (int32): control words, the proposal's site, the pending change's site, then the pass's outputs
I_J, I_KIND, I_K, I_TOP, I_ERR, I_JP = range(6)
I_SITE = 6  # the proposal of tree ib[I_J] (S_N = 0: no pass output but the leaf sums)
I_PSITE = I_SITE + SITE_LEN  # the accepted change of tree ib[I_JP] the next pass applies (S_N = 0: none)
I_CNT = I_PSITE + SITE_LEN  # output: rows reaching each site node (the pass fills leaves, the decision the rest)
I_RANGE = I_CNT + SUBMAX  # output: 2 p code bounds per site node: I_RANGE + 2 p q + (w: min, p + w: max)
INT_BIG = 2**31 - 1

# fb (float64): leaf values in, sums out
F_OLD, F_NEW, F_CUR, F_SUM = 0, MAXN, 2 * MAXN, 3 * MAXN
F_SSUM = 4 * MAXN  # output: sum of the rows reaching each site leaf
F_SSR = 4 * MAXN + SUBMAX  # output: residual sum of squares after the pending change
N_FB = F_SSR + 1

# prm (float64): priors, sigma^2 (written by the sigma^2 draw), the chain's settings; the move probabilities
# (grow, prune, change; swap the rest) and the largest subtree a change/swap re-partitions (<= SUBMAX)
(P_ALPHA, P_BETA, P_MU0, P_S2MU, P_SIGMA2, P_PGROW, P_A0, P_B0, P_N, P_FIXED, P_WRONG, P_PPRUNE, P_PCHANGE,
 P_SUBCAP) = range(14)
N_PRM = 14

# wrong variants (tests only): 0 = exact
WRONG_NONE, WRONG_PRUNE_RATIO, WRONG_LEAF_PRIOR, WRONG_CHANGE_TOP_RULE, WRONG_SWAP_NO_TOP_RULE = range(5)

NEG_INF = -math.inf
TWO_PI = 2.0 * math.pi
INV_2_53 = 1.0 / 9007199254740992.0


def n_ib(p: int) -> int:
    return I_RANGE + 2 * p * SUBMAX


def new_state(m: int, p: int):
    """Node tables of ``m`` trees: ``(ints, lohi, cnt, val, lwav, used, top)``; ``top[j]``: one past tree
    ``j``'s highest used slot (every loop over a tree's slots stops there). ``lohi[j, k]``: the code range of
    node ``k``'s rows per split column; ``lwav[j, k]``: log of the split weight with a valid cut there
    (-inf: none), kept for internal nodes too (a node pruned back to a leaf reads it)."""
    ints = np.full((m, MAXN, N_INTS), -1, dtype=np.int64)
    lohi = np.zeros((m, MAXN, 2, p), dtype=np.int64)
    cnt = np.zeros((m, MAXN), dtype=np.int64)
    val = np.zeros((m, MAXN))
    lwav = np.full((m, MAXN), NEG_INF)
    used = np.zeros((m, MAXN), dtype=np.uint8)
    top = np.zeros(m, dtype=np.int64)
    return ints, lohi, cnt, val, lwav, used, top


def seed_state(rng) -> np.ndarray:
    """Two xoroshiro128+ states (``(2, 2)`` nonzero uint64 words: the proposals', the decisions') from a numpy
    Generator."""
    return rng.integers(1, 2**63 - 1, size=(2, 2), dtype=np.int64).astype(np.uint64)


def new_buffers(p: int):
    """The exchange buffers ``(ib, fb, prop)``, two rows each, nothing pending."""
    ib = np.zeros((2, n_ib(p)), dtype=np.int32)
    ib[:, I_JP] = -1
    return ib, np.zeros((2, N_FB)), np.zeros((2, 4))


def move_prm(prm: np.ndarray, move_probs, subtree_cap: int = SUBMAX) -> None:
    """Write the move probabilities ``(grow, prune, change, swap)`` and the subtree cap into ``prm``."""
    prm[P_PGROW], prm[P_PPRUNE], prm[P_PCHANGE] = move_probs[0], move_probs[1], move_probs[2]
    prm[P_SUBCAP] = subtree_cap


def build(jit):
    """The decision functions compiled by ``jit`` (``numba.njit`` or ``cuda.jit(device=True)``); returns a
    namespace of them. The same Python source for both targets: the twin is the device's code."""

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
    def log_psplit(prm, d):
        return math.log(prm[P_ALPHA]) - prm[P_BETA] * math.log(1.0 + d)

    @jit
    def log1m_psplit(prm, d):
        return math.log1p(-prm[P_ALPHA] * (1.0 + d) ** (-prm[P_BETA]))

    @jit
    def leaf_log_prior(prm, d, lw):
        if lw == NEG_INF and prm[P_WRONG] != WRONG_LEAF_PRIOR:
            return 0.0
        return log1m_psplit(prm, d)

    @jit
    def leaf_loglik(prm, W, S):
        mu0 = prm[P_MU0]
        s2 = prm[P_S2MU]
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
    def site_of(ints, j, k, ib, at, cap):
        """Write the subtree of tree ``j`` below slot ``k`` (its rules as they are) as a site at ``ib[at:]``, the
        mask its leaves; returns its node count, or -1 (nothing usable written) when it has more than ``cap``."""
        for w in range(MASKW):
            ib[at + S_MASK + w] = 0
        ib[at + S_NODES + N_SLOT] = k
        n = 1
        q = 0
        while q < n:
            base = at + S_NODES + S_FIELDS * q
            s = ib[base + N_SLOT]
            if ints[j, s, LEFT] >= 0:
                if n + 2 > cap:
                    return -1
                ib[base + N_VAR] = ints[j, s, VAR]
                ib[base + N_CUT] = ints[j, s, CUT]
                ib[base + N_LEFT] = n
                ib[base + N_RIGHT] = n + 1
                ib[at + S_NODES + S_FIELDS * n + N_SLOT] = ints[j, s, LEFT]
                ib[at + S_NODES + S_FIELDS * (n + 1) + N_SLOT] = ints[j, s, RIGHT]
                n += 2
            else:
                ib[base + N_VAR] = -1
                ib[base + N_CUT] = -1
                ib[base + N_LEFT] = -1
                ib[base + N_RIGHT] = -1
                mask_set(ib, at, s)
            q += 1
        ib[at + S_N] = n
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
    def avail_out(ib, q, wsplit):
        """Split weight of the columns with a valid cut at site node ``q`` (the pass's code ranges)."""
        p = wsplit.shape[0]
        base = I_RANGE + 2 * p * q
        total = 0.0
        for w in range(p):
            if wsplit[w] > 0.0 and ib[base + p + w] > ib[base + w]:
                total += wsplit[w]
        return total

    @jit
    def log_or_neg_inf(x):
        return math.log(x) if x > 0.0 else NEG_INF

    @jit
    def draw_rule(rs, lohi, j, k, wsplit, ib, base):
        """A rule for node ``k`` of tree ``j`` from its prior (a column in proportion to its weight among those
        with a valid cut there, then a cut uniform among the valid ones) into ``ib[base + N_VAR / N_CUT]``."""
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
        ib[base + N_VAR] = v
        ib[base + N_CUT] = lo + rng_below(rs, lohi[j, k, 1, v] - lo)

    @jit
    def nth_node(ints, used, lwav, j, tj, what, idx):
        """The ``idx``-th slot (in slot order) of tree ``j`` that is growable (``what`` 0), a parent of two
        leaves (1), internal (2) or internal and not the root (3)."""
        for q in range(tj):
            if used[j, q] == 0:
                continue
            if what == 0:
                hit = ints[j, q, LEFT] < 0 and lwav[j, q] > NEG_INF
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
    def pre_tree(rs, ints, lohi, val, lwav, used, top, j, prm, wsplit, ib, fb, prop):
        """Draw tree ``j``'s proposal from its node table; write it (kind, node, site) and ``j``'s leaf values into
        ``ib``/``fb`` and zero the outputs. ``prop`` keeps ``g``, ``nog`` and ``log P(move)`` for :func:`post_tree`.

        The move is a grow, prune, change or swap with the probabilities in ``prm`` (a root-only tree grows), as
        the CPU's ``engine/updates/mh.py`` draws it. A change or swap at a node whose subtree has more than
        ``prm[P_SUBCAP]`` nodes leaves the tree as it is: the moves keep every tree's shape, so that subtree has
        the same size after them and the restriction is symmetric (the chain stays exact)."""
        p = wsplit.shape[0]
        tj = top[j]
        g = 0
        nog = 0
        n_int = 0
        for q in range(tj):
            if used[j, q] != 0:
                if ints[j, q, LEFT] < 0:
                    if lwav[j, q] > NEG_INF:
                        g += 1
                else:
                    n_int += 1
                    if is_nog(ints, used, j, q):
                        nog += 1
        pg = prm[P_PGROW]
        pp = prm[P_PPRUNE]
        cap = np.int64(prm[P_SUBCAP])
        kind = NONE
        k = -1
        log_pmove = 0.0
        at = I_SITE
        nodes = at + S_NODES
        ib[at + S_N] = 0
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
            elif u - pg - pp < prm[P_PCHANGE]:
                kind = CHANGE
            else:
                kind = SWAP
        if kind == GROW:
            if g == 0:
                kind = NONE
            else:
                k = nth_node(ints, used, lwav, j, tj, 0, rng_below(rs, g))
                for w in range(MASKW):
                    ib[at + S_MASK + w] = 0
                mask_set(ib, at, k)
                draw_rule(rs, lohi, j, k, wsplit, ib, nodes)
                ib[nodes + N_LEFT] = 1
                ib[nodes + N_RIGHT] = 2
                ib[nodes + N_SLOT] = k
                for q in range(1, 3):
                    base = nodes + S_FIELDS * q
                    ib[base + N_VAR] = -1
                    ib[base + N_CUT] = -1
                    ib[base + N_LEFT] = -1
                    ib[base + N_RIGHT] = -1
                    ib[base + N_SLOT] = -1
                ib[at + S_N] = 3
        elif kind == PRUNE:
            if nog == 0:
                kind = NONE
            else:
                k = nth_node(ints, used, lwav, j, tj, 1, rng_below(rs, nog))
        elif kind == CHANGE:
            k = nth_node(ints, used, lwav, j, tj, 2, rng_below(rs, n_int))
            if site_of(ints, j, k, ib, at, cap) < 0:
                kind = NONE
            else:
                draw_rule(rs, lohi, j, k, wsplit, ib, nodes)
                if ib[nodes + N_VAR] == ints[j, k, VAR] and ib[nodes + N_CUT] == ints[j, k, CUT]:
                    kind = NONE  # the tree as it is: nothing to score
        else:  # SWAP: a parent's rule with its internal child's (with both children's when they share a rule)
            if n_int <= 1:
                kind = NONE
            else:
                ch = nth_node(ints, used, lwav, j, tj, 3, rng_below(rs, n_int - 1))
                k = ints[j, ch, PARENT]
                if site_of(ints, j, k, ib, at, cap) < 0:
                    kind = NONE
                else:
                    c1 = nodes + S_FIELDS
                    c2 = nodes + 2 * S_FIELDS
                    cq = c1 if ints[j, k, LEFT] == ch else c2
                    pv = ib[nodes + N_VAR]
                    pc = ib[nodes + N_CUT]
                    ib[nodes + N_VAR] = ib[cq + N_VAR]
                    ib[nodes + N_CUT] = ib[cq + N_CUT]
                    if (ib[c1 + N_LEFT] >= 0 and ib[c2 + N_LEFT] >= 0 and ib[c1 + N_VAR] == ib[c2 + N_VAR]
                            and ib[c1 + N_CUT] == ib[c2 + N_CUT]):
                        ib[c1 + N_VAR] = pv
                        ib[c1 + N_CUT] = pc
                        ib[c2 + N_VAR] = pv
                        ib[c2 + N_CUT] = pc
                    else:
                        ib[cq + N_VAR] = pv
                        ib[cq + N_CUT] = pc
        if kind == NONE or kind == PRUNE:
            ib[at + S_N] = 0
        ib[I_J] = j
        ib[I_KIND] = kind
        ib[I_K] = k
        ib[I_TOP] = tj
        for q in range(ib[at + S_N]):
            ib[I_CNT + q] = 0
            fb[F_SSUM + q] = 0.0
            if ib[nodes + S_FIELDS * q + N_LEFT] < 0:  # the pass bounds the leaves; the decision the rest
                for w in range(p):
                    ib[I_RANGE + 2 * p * q + w] = INT_BIG
                    ib[I_RANGE + 2 * p * q + p + w] = -1
        for q in range(tj):
            fb[F_CUR + q] = val[j, q]
            fb[F_SUM + q] = 0.0
        fb[F_SSR] = 0.0
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
    def store_site_node(ints, lohi, cnt, lwav, fb, ib, j, q, wsplit):
        """Site node ``q`` as scored into tree ``j``'s node table: its rule, rows, code ranges and available
        weight (and a leaf's sum, for its draw)."""
        p = wsplit.shape[0]
        base = I_SITE + S_NODES + S_FIELDS * q
        s = ib[base + N_SLOT]
        ints[j, s, VAR] = ib[base + N_VAR]
        ints[j, s, CUT] = ib[base + N_CUT]
        cnt[j, s] = ib[I_CNT + q]
        for w in range(p):
            lohi[j, s, 0, w] = ib[I_RANGE + 2 * p * q + w]
            lohi[j, s, 1, w] = ib[I_RANGE + 2 * p * q + p + w]
        lwav[j, s] = log_or_neg_inf(avail_out(ib, q, wsplit))
        if ib[base + N_LEFT] < 0:
            fb[F_SUM + s] = fb[F_SSUM + q]

    @jit
    def rule_log_prior(wv, avail, n_cuts):
        return math.log(wv) - math.log(avail) - math.log(n_cuts)

    @jit
    def site_log_ratio(ints, lohi, cnt, lwav, j, prm, wsplit, ib, fb, top_rule):
        """log posterior of the proposed site over the current subtree, the terms that differ: each leaf's
        prior factor and integrated likelihood, each split's rule probability (the top one's only when
        ``top_rule``: a change draws it from its prior, which cancels it). The split factors ``p_split(d)``
        cancel (the moves keep the shape). The site's internal counts and ranges must be filled in."""
        p = wsplit.shape[0]
        s2 = prm[P_SIGMA2]
        lp = 0.0
        for q in range(ib[I_SITE + S_N]):
            base = I_SITE + S_NODES + S_FIELDS * q
            s = ib[base + N_SLOT]
            d = ints[j, s, DEPTH]
            if ib[base + N_LEFT] >= 0:
                if q > 0 or top_rule:
                    vn = ib[base + N_VAR]
                    rq = I_RANGE + 2 * p * q
                    lp += rule_log_prior(wsplit[vn], avail_out(ib, q, wsplit), ib[rq + p + vn] - ib[rq + vn])
                    vo = ints[j, s, VAR]
                    lp -= rule_log_prior(wsplit[vo], avail_tab(lohi, j, s, wsplit),
                                         lohi[j, s, 1, vo] - lohi[j, s, 0, vo])
            else:
                lp += (leaf_log_prior(prm, d, log_or_neg_inf(avail_out(ib, q, wsplit)))
                       + leaf_loglik(prm, ib[I_CNT + q] / s2, fb[F_SSUM + q] / s2))
                lp -= leaf_log_prior(prm, d, lwav[j, s]) + leaf_loglik(prm, cnt[j, s] / s2, fb[F_SUM + s] / s2)
        return lp

    @jit
    def fill_site(ib, p):
        """The site's internal nodes' row counts and code ranges from their leaves' (children after parents, so
        backwards); returns False when a leaf has no rows (a split with an empty side: prior zero)."""
        valid = True
        for q in range(ib[I_SITE + S_N] - 1, -1, -1):
            base = I_SITE + S_NODES + S_FIELDS * q
            a = ib[base + N_LEFT]
            if a >= 0:
                b = ib[base + N_RIGHT]
                ib[I_CNT + q] = ib[I_CNT + a] + ib[I_CNT + b]
                for e in range(2 * p):
                    x = ib[I_RANGE + 2 * p * a + e]
                    y = ib[I_RANGE + 2 * p * b + e]
                    if e < p:
                        ib[I_RANGE + 2 * p * q + e] = x if x < y else y
                    else:
                        ib[I_RANGE + 2 * p * q + e] = x if x > y else y
            elif ib[I_CNT + q] == 0:
                valid = False
        return valid

    @jit
    def decide(rs, ints, lohi, cnt, val, lwav, used, top, j, prm, wsplit, ib, fb, prop):
        """Accept or reject tree ``j``'s proposal from the pass's outputs, draw every leaf of the tree, and write
        the pending change for the next pass. Returns 1 accepted, 0 not, -1 out of node slots."""
        p = wsplit.shape[0]
        s2 = prm[P_SIGMA2]
        wrong = prm[P_WRONG]
        kind = ib[I_KIND]
        k = ib[I_K]
        g = prop[0]
        nog = prop[1]
        log_pmove = prop[2]
        pg = prm[P_PGROW]
        pp = prm[P_PPRUNE]
        accepted = 0
        a = -1
        b = -1
        tj = top[j]
        nodes = I_SITE + S_NODES
        for q in range(tj):  # old values of tree j, for the pending change
            fb[F_OLD + q] = val[j, q]
        if kind == GROW:
            d = ints[j, k, DEPTH]
            nl = ib[I_CNT + 1]
            sl = fb[F_SSUM + 1]
            nr = ib[I_CNT + 2]
            sr = fb[F_SSUM + 2]
            nk = cnt[j, k]
            sk = fb[F_SUM + k]
            lw_l = log_or_neg_inf(avail_out(ib, 1, wsplit))
            lw_r = log_or_neg_inf(avail_out(ib, 2, wsplit))
            dlik = (leaf_loglik(prm, nl / s2, sl / s2) + leaf_loglik(prm, nr / s2, sr / s2)
                    - leaf_loglik(prm, nk / s2, sk / s2))
            dprior = (log_psplit(prm, d) + leaf_log_prior(prm, d + 1, lw_l)
                      + leaf_log_prior(prm, d + 1, lw_r) - log1m_psplit(prm, d))
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
                ints[j, k, VAR] = ib[nodes + N_VAR]
                ints[j, k, CUT] = ib[nodes + N_CUT]
                ints[j, k, LEFT] = a
                ints[j, k, RIGHT] = b
                ib[nodes + S_FIELDS + N_SLOT] = a
                ib[nodes + 2 * S_FIELDS + N_SLOT] = b
                for q in range(1, 3):
                    c = a if q == 1 else b
                    used[j, c] = 1
                    ints[j, c, LEFT] = -1
                    ints[j, c, RIGHT] = -1
                    ints[j, c, PARENT] = k
                    ints[j, c, DEPTH] = d + 1
                    store_site_node(ints, lohi, cnt, lwav, fb, ib, j, q, wsplit)
                if b + 1 > tj:
                    tj = b + 1
                    top[j] = tj
        elif kind == PRUNE:
            a = ints[j, k, LEFT]
            b = ints[j, k, RIGHT]
            d = ints[j, k, DEPTH]
            na = cnt[j, a]
            nb = cnt[j, b]
            sa = fb[F_SUM + a]
            sb = fb[F_SUM + b]
            dlik = (leaf_loglik(prm, na / s2, sa / s2) + leaf_loglik(prm, nb / s2, sb / s2)
                    - leaf_loglik(prm, (na + nb) / s2, (sa + sb) / s2))
            dprior = (log_psplit(prm, d) + leaf_log_prior(prm, d + 1, lwav[j, a])
                      + leaf_log_prior(prm, d + 1, lwav[j, b]) - log1m_psplit(prm, d))
            g_new = g + 1
            if lwav[j, a] > NEG_INF:
                g_new -= 1
            if lwav[j, b] > NEG_INF:
                g_new -= 1
            log_pgrow_new = 0.0 if k == 0 else math.log(pg)
            if wrong == WRONG_PRUNE_RATIO:  # the proposal ratio left out
                log_r = -(dprior + dlik)
            else:
                log_r = -(dprior + dlik) + (log_pgrow_new - math.log(g_new)) - (log_pmove - math.log(nog))
            if math.log(1.0 - rng_uniform(rs)) < log_r:
                accepted = 1
                used[j, a] = 0
                used[j, b] = 0
                ints[j, k, VAR] = -1
                ints[j, k, CUT] = -1
                ints[j, k, LEFT] = -1
                ints[j, k, RIGHT] = -1
                fb[F_SUM + k] = sa + sb
                cnt[j, k] = na + nb
                # the freed slots keep their old values until the next pass has moved their rows
        elif kind == CHANGE or kind == SWAP:
            top_rule = kind == SWAP
            if wrong == WRONG_CHANGE_TOP_RULE and kind == CHANGE:
                top_rule = True
            if wrong == WRONG_SWAP_NO_TOP_RULE and kind == SWAP:
                top_rule = False
            if fill_site(ib, p):  # else rejected, no uniform drawn (as the CPU's moves)
                log_r = site_log_ratio(ints, lohi, cnt, lwav, j, prm, wsplit, ib, fb, top_rule)
                if math.log(1.0 - rng_uniform(rs)) < log_r:
                    accepted = 1
                    for q in range(ib[I_SITE + S_N]):
                        store_site_node(ints, lohi, cnt, lwav, fb, ib, j, q, wsplit)
        # leaves from their Normal-Normal conditional, in slot order
        s2mu = prm[P_S2MU]
        mu0 = prm[P_MU0]
        for q in range(tj):
            if is_leaf(ints, used, j, q):
                W = cnt[j, q] / s2
                S = fb[F_SUM + q] / s2
                prec = W + 1.0 / s2mu
                val[j, q] = (S + mu0 / s2mu) / prec + rng_normal(rs) / math.sqrt(prec)
        # pending change for the next pass: the rows it moves and where (the pruned children: to their parent);
        # fb[F_NEW] of the pruned children is their old value (no row stays there)
        ib[I_JP] = j
        pend = I_PSITE
        if accepted == 1 and kind == PRUNE:
            for w in range(MASKW):
                ib[pend + S_MASK + w] = 0
            mask_set(ib, pend, a)
            mask_set(ib, pend, b)
            base = pend + S_NODES
            ib[base + N_VAR] = -1
            ib[base + N_CUT] = -1
            ib[base + N_LEFT] = -1
            ib[base + N_RIGHT] = -1
            ib[base + N_SLOT] = k
            ib[pend + S_N] = 1
        elif accepted == 1:
            for e in range(S_NODES + S_FIELDS * ib[I_SITE + S_N]):
                ib[pend + e] = ib[I_SITE + e]
        else:
            ib[pend + S_N] = 0
        for q in range(tj):
            fb[F_NEW + q] = val[j, q]
        if accepted == 1 and kind == PRUNE:
            val[j, a] = 0.0
            val[j, b] = 0.0
            while tj > 1 and used[j, tj - 1] == 0:
                tj -= 1
            top[j] = tj
        return accepted

    @jit
    def post_tree(rs, ints, lohi, cnt, val, lwav, used, top, j, prm, wsplit, ib, fb, prop):
        """After tree ``j``'s pass: the sigma^2 draw at tree 0 (unless fixed), then :func:`decide`; an error
        (out of node slots) is flagged in ``ib[I_ERR]`` (tree + 1)."""
        if j == 0 and prm[P_FIXED] == 0.0:
            prm[P_SIGMA2] = (prm[P_B0] + 0.5 * fb[F_SSR]) / rng_gamma(rs, prm[P_A0] + 0.5 * prm[P_N])
        if decide(rs, ints, lohi, cnt, val, lwav, used, top, j, prm, wsplit, ib, fb, prop) < 0:
            ib[I_ERR] = j + 1

    return types.SimpleNamespace(rng_next=rng_next, rng_uniform=rng_uniform, rng_below=rng_below,
                                 rng_normal=rng_normal, rng_gamma=rng_gamma, pre_tree=pre_tree,
                                 post_tree=post_tree, decide=decide, mask_has=mask_has,
                                 site_descend=site_descend)



HOST = build(numba.njit(cache=True))


@numba.njit(cache=True)
def init_state(ints, lohi, cnt, val, lwav, used, top, root_lo, root_hi, n, value, wsplit):
    """Every tree a single leaf over all ``n`` rows with leaf ``value``."""
    m = ints.shape[0]
    total = 0.0
    for v in range(root_lo.shape[0]):
        if wsplit[v] > 0.0 and root_hi[v] > root_lo[v]:
            total += wsplit[v]
    lw = math.log(total) if total > 0.0 else NEG_INF
    for j in range(m):
        for k in range(ints.shape[1]):
            used[j, k] = 0
            for f in range(N_INTS):
                ints[j, k, f] = -1
        used[j, 0] = 1
        top[j] = 1
        ints[j, 0, DEPTH] = 0
        for v in range(root_lo.shape[0]):
            lohi[j, 0, 0, v] = root_lo[v]
            lohi[j, 0, 1, v] = root_hi[v]
        cnt[j, 0] = n
        val[j, 0] = value
        lwav[j, 0] = lw


_mask_has, _site_descend = HOST.mask_has, HOST.site_descend


@numba.njit(cache=True)
def row_pass_cpu(codes, leaf, r, ibp, fbp, ib, fb):
    """The CPU twin of the device's row pass: apply the pending change of tree ``ibp[I_JP]`` (from the buffer
    row ``ibp``/``fbp``: a row whose leaf is in the pending site's mask descends that site to its new leaf; the
    residual moves by the old minus the new value) to every row, then sum tree ``ib[I_J]``'s rows per leaf with
    its current fit added back, and those in the proposal's site's mask per site leaf, with their code ranges
    (into ``ib``/``fb``; the flush passes the pending row for both, with ``I_J`` = -1)."""
    p = codes.shape[0]
    n = codes.shape[1]
    jp = ibp[I_JP]
    n_pend = ibp[I_PSITE + S_N] if jp >= 0 else 0
    j = ib[I_J]
    n_site = ib[I_SITE + S_N] if j >= 0 else 0
    ssr = 0.0
    for i in range(n):
        ri = r[i]
        if jp >= 0:
            lo = np.int64(leaf[jp, i])
            ln = lo
            if n_pend > 0 and _mask_has(ibp, I_PSITE, lo):
                q = _site_descend(codes, ibp, I_PSITE, i)
                ln = ibp[I_PSITE + S_NODES + S_FIELDS * q + N_SLOT]
                leaf[jp, i] = ln
            ri = ri + fbp[F_OLD + lo] - fbp[F_NEW + ln]
            r[i] = ri
        ssr += ri * ri
        if j >= 0:
            l = np.int64(leaf[j, i])
            x = ri + fb[F_CUR + l]
            fb[F_SUM + l] += x
            if n_site > 0 and _mask_has(ib, I_SITE, l):
                q = _site_descend(codes, ib, I_SITE, i)
                ib[I_CNT + q] += 1
                fb[F_SSUM + q] += x
                base = I_RANGE + 2 * p * q
                for w in range(p):
                    cw = np.int32(codes[w, i])
                    if cw < ib[base + w]:
                        ib[base + w] = cw
                    if cw > ib[base + p + w]:
                        ib[base + p + w] = cw
    fb[F_SSR] = ssr


_pre_tree, _post_tree = HOST.pre_tree, HOST.post_tree


@numba.njit(cache=True)
def twin_sweeps(rs, n_sweeps, codes, leaf, r, ints, lohi, cnt, val, lwav, used, top, prm, wsplit, ib, fb, prop,
                tick, out_sigma2):
    """``n_sweeps`` whole sweeps on the CPU twin: the device's decision code (the same source), the CPU row
    pass, the device's order (the proposal of tree ``j + 1`` after the pass of tree ``j``, before its
    decision). ``tick[0]``: trees processed so far (their buffer rows alternate), advanced here.
    ``out_sigma2[s]``: the sigma^2 of sweep ``s``. Returns the sweeps done (fewer: a tree ran out of node
    slots, ``ib[:, I_ERR]`` says which)."""
    m = ints.shape[0]
    t = tick[0]
    for s in range(n_sweeps):
        c = t & 1
        _pre_tree(rs[0], ints, lohi, val, lwav, used, top, 0, prm, wsplit, ib[c], fb[c], prop[c])
        for j in range(m):
            c = t & 1
            row_pass_cpu(codes, leaf, r, ib[1 - c], fb[1 - c], ib[c], fb[c])
            if j + 1 < m:
                _pre_tree(rs[0], ints, lohi, val, lwav, used, top, j + 1, prm, wsplit, ib[1 - c], fb[1 - c],
                          prop[1 - c])
            _post_tree(rs[1], ints, lohi, cnt, val, lwav, used, top, j, prm, wsplit, ib[c], fb[c], prop[c])
            t += 1
            tick[0] = t
            if ib[c, I_ERR] != 0:
                return s
        out_sigma2[s] = prm[P_SIGMA2]
    return n_sweeps


@numba.njit(cache=True)
def row_leaves(ints, j, codes, out):
    """``out[i]``: the leaf slot of tree ``j`` that row ``i`` reaches (the node table read on the codes)."""
    for i in range(codes.shape[1]):
        k = 0
        while ints[j, k, LEFT] >= 0:
            k = ints[j, k, LEFT] if codes[ints[j, k, VAR], i] <= ints[j, k, CUT] else ints[j, k, RIGHT]
        out[i] = k


@numba.njit(cache=True)
def preorder(ints, val, thr, counts, var, vals):
    """Trees in preorder (left first), as the stored forest format holds them: node counts, split variables
    (``-1`` leaf) and values (the threshold ``thr[v, c]`` of a split, the leaf value). Returns nodes written."""
    m = ints.shape[0]
    stack = np.empty(MAXN + 1, dtype=np.int64)
    pos = 0
    for j in range(m):
        top = 0
        stack[0] = 0
        start = pos
        while top >= 0:
            k = stack[top]
            top -= 1
            if ints[j, k, LEFT] < 0:
                var[pos] = -1
                vals[pos] = val[j, k]
            else:
                var[pos] = ints[j, k, VAR]
                vals[pos] = thr[ints[j, k, VAR], ints[j, k, CUT]]
                top += 1
                stack[top] = ints[j, k, RIGHT]
                top += 1
                stack[top] = ints[j, k, LEFT]
            pos += 1
        counts[j] = pos - start
    return pos


@numba.njit(cache=True)
def fit_from_slots(leaf, val, out):
    """``out[i]``: the forest's fit at row ``i``, the sum over trees ``j = 0 .. m-1`` (in that order, from 0.0,
    as ``pmt.predict`` adds them) of ``val[j, leaf[j, i]]``; the leaf slots must be current (after a flush)."""
    m = leaf.shape[0]
    for i in range(leaf.shape[1]):
        s = 0.0
        for j in range(m):
            s += val[j, np.int64(leaf[j, i])]
        out[i] = s


@numba.njit(cache=True)
def moved_by(z, z_old):
    """``(max |z - z_old|, max |z_old|)`` in one pass (the step's test of whether the pseudo-data moved, at
    10^6 rows a few milliseconds less per draw than numpy's four passes and two temporaries)."""
    d = 0.0
    a = 0.0
    for i in range(z.shape[0]):
        e = abs(z[i] - z_old[i])
        if e > d:
            d = e
        e = abs(z_old[i])
        if e > a:
            a = e
    return d, a


@numba.njit(cache=True)
def shift_residual(r, dz):
    """``r += dz`` (the pseudo-data moved by ``dz``: the residual moves with it)."""
    for i in range(r.shape[0]):
        r[i] = r[i] + dz[i]
