"""Decisions of the GPU grow/prune sweep, written once and compiled twice: by ``numba.njit`` for the host (the
CPU twin the exactness tests run) and by ``cuda.jit(device=True)`` for the device (``device.py``), so the
device runs the very code the tests prove, draw for draw.

The trees are small node tables (one per tree, ``MAXN`` slots); the rows (codes, the per-tree leaf slot of every
row, the running residual) are touched only by the row pass. Per tree ``j``:

1. :func:`pre_tree` (one thread): draw tree ``j``'s proposal from its node table alone (grow: a growable leaf
   and its rule from the per-node code ranges stored when the node was made; prune: a node whose children are
   leaves); write it and tree ``j``'s leaf values into ``ib``/``fb`` and zero the outputs.
2. the row pass (:func:`row_pass_cpu` here, ``device.py`` on the GPU, all threads): apply the pending change of
   the previous tree (leaf slots, residual), then sum tree ``j``'s rows per leaf with its fit added back, the
   proposal's left count and sum, both children's code ranges, and the residual sum of squares.
3. :func:`post_tree` (one thread): at tree 0 the sigma^2 draw (conjugate, from the residual sum of squares);
   accept or reject, draw every leaf of the tree, write the pending change for the next pass.

The posterior is the package's (../shared/DESIGN.md section 2, ``engine/moves/growprune.py``): grow and prune
with probability 1/2 each (a root-only tree grows with probability 1), a leaf chosen uniformly among the
growable ones (a valid cut on some variable of positive weight), the rule drawn from its prior (so the rule
probability cancels), the Hastings terms ``log(g)`` and ``log(nog)``, the Chipman tree prior with the valid-cut
convention, Normal-Normal leaves integrated out for structure and drawn from their conditional afterwards.

Overlap: the proposal of tree ``j + 1`` needs only tree ``j + 1``'s node table, so the device draws it while
the other blocks still pass over the rows for tree ``j``. The exchange buffers are therefore two rows (``ib``,
``fb``, ``prop``: row ``t & 1`` for the ``t``-th tree processed, counted over sweeps): a tree's proposal,
outputs and pending change live in its row; the pass reads the pending change from the other row.

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
PMAX = 32  # most split columns the device pass handles (its per-thread code ranges)
NACC = 8  # leaf slots the device pass sums in per-thread registers/local memory (higher slots: shared atomics)

# node table fields (ints[j, k, :])
VAR, CUT, LEFT, RIGHT, PARENT, DEPTH = range(6)
N_INTS = 6

# move kinds
NONE, GROW, PRUNE = 0, 1, 2

# ib (int32): control words, then outputs
I_JP, I_PKIND, I_PK, I_PV, I_PC, I_PA, I_PB, I_J, I_KIND, I_K, I_V, I_C, I_TOP, I_ERR = range(14)
I_NL = 14  # output: rows of the proposal's left child
I_RANGE = 15  # output: 4 p code bounds: min left, max left, min right, max right
INT_BIG = 2**31 - 1

# fb (float64): leaf values in, sums out
F_OLD, F_NEW, F_CUR, F_SUM = 0, MAXN, 2 * MAXN, 3 * MAXN
F_LEFT = 4 * MAXN  # output: sum of the proposal's left child
F_SSR = 4 * MAXN + 1  # output: residual sum of squares after the pending change
N_FB = 4 * MAXN + 2

# prm (float64): priors, sigma^2 (written by the sigma^2 draw), the chain's settings
P_ALPHA, P_BETA, P_MU0, P_S2MU, P_SIGMA2, P_PGROW, P_A0, P_B0, P_N, P_FIXED, P_WRONG = range(11)
N_PRM = 11

# wrong variants (tests only): 0 = exact
WRONG_NONE, WRONG_PRUNE_RATIO, WRONG_LEAF_PRIOR = 0, 1, 2

NEG_INF = -math.inf
TWO_PI = 2.0 * math.pi
INV_2_53 = 1.0 / 9007199254740992.0


def n_ib(p: int) -> int:
    return I_RANGE + 4 * p


def new_state(m: int, p: int):
    """Node tables of ``m`` trees: ``(ints, lohi, cnt, val, lwav, used, top)``; ``top[j]``: one past tree
    ``j``'s highest used slot (every loop over a tree's slots stops there)."""
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
    def growable(ints, used, lwav, j, k):
        return used[j, k] != 0 and ints[j, k, LEFT] < 0 and lwav[j, k] > NEG_INF

    @jit
    def is_nog(ints, used, j, k):
        if used[j, k] == 0 or ints[j, k, LEFT] < 0:
            return False
        return ints[j, ints[j, k, LEFT], LEFT] < 0 and ints[j, ints[j, k, RIGHT], LEFT] < 0

    @jit
    def pre_tree(rs, ints, lohi, val, lwav, used, top, j, prm, wsplit, ib, fb, prop):
        """Draw tree ``j``'s proposal from its node table; write it and ``j``'s leaf values into ``ib``/``fb``
        and zero the outputs. ``prop`` keeps ``g``, ``nog`` and ``log P(move)`` for :func:`post_tree`."""
        p = wsplit.shape[0]
        tj = top[j]
        g = 0
        nog = 0
        for q in range(tj):
            if growable(ints, used, lwav, j, q):
                g += 1
            elif is_nog(ints, used, j, q):
                nog += 1
        pgrow = prm[P_PGROW]
        kind = NONE
        k = -1
        v = -1
        c = -1
        log_pmove = 0.0
        if ints[j, 0, LEFT] < 0:
            kind = GROW
        elif rng_uniform(rs) < pgrow:
            kind = GROW
            log_pmove = math.log(pgrow)
        else:
            kind = PRUNE
            log_pmove = math.log(1.0 - pgrow)
        if kind == GROW:
            if g == 0:
                kind = NONE
            else:
                idx = rng_below(rs, g)
                for q in range(tj):
                    if growable(ints, used, lwav, j, q):
                        if idx == 0:
                            k = q
                            break
                        idx -= 1
                total = 0.0
                for w in range(p):
                    if wsplit[w] > 0.0 and lohi[j, k, 1, w] > lohi[j, k, 0, w]:
                        total += wsplit[w]
                u = rng_uniform(rs) * total
                acc = 0.0
                for w in range(p):
                    if wsplit[w] > 0.0 and lohi[j, k, 1, w] > lohi[j, k, 0, w]:
                        acc += wsplit[w]
                        v = w
                        if u < acc:
                            break
                lo = lohi[j, k, 0, v]
                c = lo + rng_below(rs, lohi[j, k, 1, v] - lo)
        elif kind == PRUNE:
            if nog == 0:
                kind = NONE
            else:
                idx = rng_below(rs, nog)
                for q in range(tj):
                    if is_nog(ints, used, j, q):
                        if idx == 0:
                            k = q
                            break
                        idx -= 1
        ib[I_J] = j
        ib[I_KIND] = kind
        ib[I_K] = k
        ib[I_V] = v
        ib[I_C] = c
        ib[I_TOP] = tj
        ib[I_NL] = 0
        for w in range(p):
            ib[I_RANGE + w] = INT_BIG
            ib[I_RANGE + p + w] = -1
            ib[I_RANGE + 2 * p + w] = INT_BIG
            ib[I_RANGE + 3 * p + w] = -1
        for q in range(tj):
            fb[F_CUR + q] = val[j, q]
            fb[F_SUM + q] = 0.0
        fb[F_LEFT] = 0.0
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
    def set_child(ints, lohi, cnt, lwav, used, fb, ib, j, child, k, depth, n_c, s_c, lw_c, off, p):
        used[j, child] = 1
        ints[j, child, VAR] = -1
        ints[j, child, CUT] = -1
        ints[j, child, LEFT] = -1
        ints[j, child, RIGHT] = -1
        ints[j, child, PARENT] = k
        ints[j, child, DEPTH] = depth
        cnt[j, child] = n_c
        fb[F_SUM + child] = s_c
        lwav[j, child] = lw_c
        for w in range(p):
            lohi[j, child, 0, w] = ib[I_RANGE + off + w]
            lohi[j, child, 1, w] = ib[I_RANGE + off + p + w]

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
        pgrow = prm[P_PGROW]
        accepted = 0
        a = -1
        b = -1
        tj = top[j]
        for q in range(tj):  # old values of tree j, for the pending change
            fb[F_OLD + q] = val[j, q]
        if kind == GROW:
            d = ints[j, k, DEPTH]
            nl = ib[I_NL]
            sl = fb[F_LEFT]
            nk = cnt[j, k]
            sk = fb[F_SUM + k]
            nr = nk - nl
            sr = sk - sl
            tl = 0.0
            tr = 0.0
            for w in range(p):
                if wsplit[w] > 0.0:
                    if ib[I_RANGE + p + w] > ib[I_RANGE + w]:
                        tl += wsplit[w]
                    if ib[I_RANGE + 3 * p + w] > ib[I_RANGE + 2 * p + w]:
                        tr += wsplit[w]
            lw_l = math.log(tl) if tl > 0.0 else NEG_INF
            lw_r = math.log(tr) if tr > 0.0 else NEG_INF
            dlik = (leaf_loglik(prm, nl / s2, sl / s2) + leaf_loglik(prm, nr / s2, sr / s2)
                    - leaf_loglik(prm, nk / s2, sk / s2))
            dprior = (log_psplit(prm, d) + leaf_log_prior(prm, d + 1, lw_l)
                      + leaf_log_prior(prm, d + 1, lw_r) - log1m_psplit(prm, d))
            par = ints[j, k, PARENT]
            nog_new = nog + 1
            if par >= 0 and is_nog(ints, used, j, par):
                nog_new -= 1
            log_r = dprior + dlik + (math.log(1.0 - pgrow) - math.log(nog_new)) - (log_pmove - math.log(g))
            if math.log(1.0 - rng_uniform(rs)) < log_r:
                a = free_slot(used, j, 0)
                b = free_slot(used, j, a) if a >= 0 else -1
                if b < 0:
                    return -1
                accepted = 1
                ints[j, k, VAR] = ib[I_V]
                ints[j, k, CUT] = ib[I_C]
                ints[j, k, LEFT] = a
                ints[j, k, RIGHT] = b
                set_child(ints, lohi, cnt, lwav, used, fb, ib, j, a, k, d + 1, nl, sl, lw_l, 0, p)
                set_child(ints, lohi, cnt, lwav, used, fb, ib, j, b, k, d + 1, nr, sr, lw_r, 2 * p, p)
                if b + 1 > tj:
                    tj = b + 1
                    top[j] = tj
                if a + 1 > tj:
                    tj = a + 1
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
            log_pgrow_new = 0.0 if k == 0 else math.log(pgrow)
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
        # leaves from their Normal-Normal conditional, in slot order
        s2mu = prm[P_S2MU]
        mu0 = prm[P_MU0]
        for q in range(tj):
            if is_leaf(ints, used, j, q):
                W = cnt[j, q] / s2
                S = fb[F_SUM + q] / s2
                prec = W + 1.0 / s2mu
                val[j, q] = (S + mu0 / s2mu) / prec + rng_normal(rs) / math.sqrt(prec)
        # pending change for the next pass; fb[F_NEW] of the pruned children: their old value (no row stays)
        ib[I_JP] = j
        ib[I_PKIND] = kind if accepted == 1 else NONE
        ib[I_PK] = k
        ib[I_PV] = ib[I_V]
        ib[I_PC] = ib[I_C]
        ib[I_PA] = a
        ib[I_PB] = b
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
                                 post_tree=post_tree, decide=decide)


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


@numba.njit(cache=True)
def row_pass_cpu(codes, leaf, r, ibp, fbp, ib, fb):
    """The CPU twin of the device's row pass: apply the pending change of tree ``ibp[I_JP]`` (from the buffer
    row ``ibp``/``fbp``) to every row (its leaf slot and the residual), then sum tree ``ib[I_J]``'s rows per
    leaf, with its current fit added back, and the proposal's left child and code ranges (into ``ib``/``fb``;
    the flush passes the pending row for both, with ``I_J`` = -1)."""
    p = codes.shape[0]
    n = codes.shape[1]
    jp = ibp[I_JP]
    pkind = ibp[I_PKIND]
    j = ib[I_J]
    kind = ib[I_KIND]
    ssr = 0.0
    for i in range(n):
        ri = r[i]
        if jp >= 0:
            lo = np.int64(leaf[jp, i])
            ln = lo
            if pkind == GROW and lo == ibp[I_PK]:
                ln = ibp[I_PA] if codes[ibp[I_PV], i] <= ibp[I_PC] else ibp[I_PB]
                leaf[jp, i] = ln
            elif pkind == PRUNE and (lo == ibp[I_PA] or lo == ibp[I_PB]):
                ln = ibp[I_PK]
                leaf[jp, i] = ln
            ri = ri + fbp[F_OLD + lo] - fbp[F_NEW + ln]
            r[i] = ri
        ssr += ri * ri
        if j >= 0:
            l = np.int64(leaf[j, i])
            x = ri + fb[F_CUR + l]
            fb[F_SUM + l] += x
            if kind == GROW and l == ib[I_K]:
                off = 0
                if codes[ib[I_V], i] <= ib[I_C]:
                    ib[I_NL] += 1
                    fb[F_LEFT] += x
                else:
                    off = 2 * p
                for w in range(p):
                    cw = np.int32(codes[w, i])
                    if cw < ib[I_RANGE + off + w]:
                        ib[I_RANGE + off + w] = cw
                    if cw > ib[I_RANGE + off + p + w]:
                        ib[I_RANGE + off + p + w] = cw
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
def shift_residual(r, dz):
    """``r += dz`` (the pseudo-data moved by ``dz``: the residual moves with it)."""
    for i in range(r.shape[0]):
        r[i] = r[i] + dz[i]
