"""Particle Gibbs for one tree: conditional SMC (Lakshminarayanan, Roy & Teh 2015, Algorithm 2).

Every particle builds a tree by node-wise, breadth-first expansion (Lakshminarayanan et al. 2013):
at each stage it pops its oldest eligible node and either stops it (a leaf) or splits it. Nodes are
created in the order they join the eligible queue, so a particle's queue is simply its node ids
``head .. n_nodes - 1``. Particle 0 is clamped to the old tree: it replays the old tree's own
construction path (same decisions, same rules). The others draw decisions from a proposal:

* ``prior``: split w.p. ``p_split(d)``, rule from the rule prior;
* ``empirical``: as prior, but the cut is drawn uniformly among the gaps between adjacent codes
  present in the node, then uniformly inside the gap (the discrete analogue of the 2013 paper);
* ``optimal``: the one-step optimal proposal, ``q(decision) ∝ prior(decision) * likelihood ratio``.

Each stage multiplies a particle's weight by ``prior * likelihood ratio / proposal`` of its
decision (eq. 11 for the prior proposal; eligible nodes count as leaves). When the effective sample
size is at most ``ess_threshold * C`` all particles but the reference are resampled (multinomial,
or conditional systematic with the reference placed at a position drawn given its index). When no
particle has an eligible node the final tree is drawn from the weights. Leaves are integrated out
throughout and drawn afterwards by the caller.

Particle buffers hold up to ``2n - 1`` nodes (the most a tree can have), so a run never restarts.
"""

import math

import numba
import numpy as np

from ..forest import add_tree, set_leaf, split_leaf
from ..gaussian import leaf_loglik, leaf_suff
from ..layout import CUT, DEPTH, END, LEFT, LWAVAIL, RIGHT, START, VAR
from ..prior import (
    NEG_INF,
    code_range,
    draw_split_rule,
    log1m_psplit,
    log_psplit,
)
from .sweep import draw_leaves

PROPOSAL_PRIOR, PROPOSAL_EMPIRICAL, PROPOSAL_OPTIMAL = range(3)
RESAMPLE_MULTINOMIAL, RESAMPLE_SYSTEMATIC = range(2)
W_, S_, L_ = range(3)  # columns of the per-node sufficient statistics


@numba.njit(cache=True, nogil=True)
def _node_stats(Ps, c, u, resid, w, pj, s, e, mu0, s2):
    wu, su = leaf_suff(resid, w, pj, s, e)
    Ps[c, u, W_] = wu
    Ps[c, u, S_] = su
    Ps[c, u, L_] = leaf_loglik(wu, su, mu0, s2)


@numba.njit(cache=True, nogil=True)
def _split(Pi, Pf, Ps, Pperm, Pnn, c, u, v, c_cut, n_cuts, codes, wsplit, logw, resid, w, mu0, s2):
    """Split node ``u`` of particle ``c`` by ``code_v <= c_cut``; returns the log likelihood ratio."""
    ti = Pi[c]
    pj = Pperm[c]
    a = Pnn[c]
    mid = split_leaf(ti, Pf[c], pj, Pnn[c : c + 1], u, v, c_cut, n_cuts, codes, wsplit, logw)
    _node_stats(Ps, c, a, resid, w, pj, ti[u, START], mid, mu0, s2)
    _node_stats(Ps, c, a + 1, resid, w, pj, mid, ti[u, END], mu0, s2)
    return Ps[c, a, L_] + Ps[c, a + 1, L_] - Ps[c, u, L_]


@numba.njit(cache=True, nogil=True)
def _gap_of(code_v, pj, s, e, c_cut, present):
    """Gaps between adjacent codes present in a node: ``(number of gaps, length of c_cut's gap)``.

    ``present`` is boolean scratch over codes (left all False on return).
    """
    mn, mx = code_range(code_v, pj, s, e)
    for t in range(s, e):
        present[code_v[pj[t]]] = True
    n_gaps = 0
    gap_len = 0
    prev = mn
    for code in range(mn + 1, mx + 1):
        if present[code]:
            n_gaps += 1
            if prev <= c_cut < code:
                gap_len = code - prev
            prev = code
    for t in range(s, e):
        present[code_v[pj[t]]] = False
    return n_gaps, gap_len


@numba.njit(cache=True, nogil=True)
def _draw_empirical_cut(rng, code_v, pj, s, e, present):
    """A gap between adjacent present codes uniformly, then a cut uniformly inside it."""
    mn, mx = code_range(code_v, pj, s, e)
    for t in range(s, e):
        present[code_v[pj[t]]] = True
    n_gaps = 0
    for code in range(mn + 1, mx + 1):
        if present[code]:
            n_gaps += 1
    pick = rng.integers(0, n_gaps)
    prev = mn
    lo = mn
    hi = mn
    k = 0
    for code in range(mn + 1, mx + 1):
        if present[code]:
            if k == pick:
                lo = prev
                hi = code
            k += 1
            prev = code
    for t in range(s, e):
        present[code_v[pj[t]]] = False
    return lo + rng.integers(0, hi - lo)


@numba.njit(cache=True, nogil=True)
def _optimal_options(Pi, Pf, Ps, Pperm, c, u, codes, wsplit, logw, prm, resid, w, hist_w, hist_s, opt):
    """Log (prior x likelihood ratio) of stopping (``opt[0, 0]``) and of every rule (``opt[1 + v, code]``).

    Returns the log normaliser; impossible options hold ``-inf``.
    """
    alpha, beta, mu0, s2 = prm[0], prm[1], prm[2], prm[3]
    ti = Pi[c]
    pj = Pperm[c]
    s = ti[u, START]
    e = ti[u, END]
    d = ti[u, DEPTH]
    lwavail = Pf[c, u, LWAVAIL]
    opt[:, :] = NEG_INF
    if lwavail == NEG_INF:
        opt[0, 0] = 0.0
        return 0.0
    opt[0, 0] = log1m_psplit(d, alpha, beta)
    l_parent = Ps[c, u, L_]
    w_tot = Ps[c, u, W_]
    s_tot = Ps[c, u, S_]
    lsplit = log_psplit(d, alpha, beta)
    for v in range(codes.shape[0]):
        if wsplit[v] <= 0.0:
            continue
        code_v = codes[v]
        mn, mx = code_range(code_v, pj, s, e)
        if mx == mn:
            continue
        for code in range(mn, mx + 1):
            hist_w[code] = 0.0
            hist_s[code] = 0.0
        for t in range(s, e):
            i = pj[t]
            hist_w[code_v[i]] += w[i]
            hist_s[code_v[i]] += w[i] * resid[i]
        base = lsplit + logw[v] - lwavail - math.log(mx - mn)
        wl = 0.0
        sl = 0.0
        for code in range(mn, mx):
            wl += hist_w[code]
            sl += hist_s[code]
            lik = leaf_loglik(wl, sl, mu0, s2) + leaf_loglik(w_tot - wl, s_tot - sl, mu0, s2) - l_parent
            opt[1 + v, code] = base + lik
    top = opt.max()
    total = 0.0
    for r in range(opt.shape[0]):
        for q in range(opt.shape[1]):
            if opt[r, q] > NEG_INF:
                total += math.exp(opt[r, q] - top)
    return top + math.log(total)


@numba.njit(cache=True, nogil=True)
def _expand(rng, proposal, is_ref, ti_old, Pmap, Pi, Pf, Ps, Pperm, Pnn, c, u, codes, wsplit, logw, prm, resid, w,
            scratch_p, present, hist_w, hist_s, opt):
    """Pop node ``u`` of particle ``c``: stop or split it; returns the log incremental weight."""
    alpha, beta, mu0, s2 = prm[0], prm[1], prm[2], prm[3]
    ti = Pi[c]
    pj = Pperm[c]
    s = ti[u, START]
    e = ti[u, END]
    d = ti[u, DEPTH]
    lwavail = Pf[c, u, LWAVAIL]
    v = -1
    c_cut = -1
    if proposal == PROPOSAL_OPTIMAL:
        log_z = _optimal_options(Pi, Pf, Ps, Pperm, c, u, codes, wsplit, logw, prm, resid, w, hist_w, hist_s, opt)
        if is_ref:
            o = Pmap[u]
            split = ti_old[o, LEFT] >= 0
            v = ti_old[o, VAR]
            c_cut = ti_old[o, CUT]
        else:
            target = math.log(rng.random()) + log_z
            acc = NEG_INF
            split = False
            done = False
            for r in range(opt.shape[0]):
                for q in range(opt.shape[1]):
                    if opt[r, q] > NEG_INF:
                        hi = max(acc, opt[r, q])
                        acc = hi + math.log(math.exp(acc - hi) + math.exp(opt[r, q] - hi))
                        if acc >= target:
                            split = r > 0
                            v = r - 1
                            c_cut = q
                            done = True
                            break
                if done:
                    break
            if not done:  # rounding at the top end: take the last possible option
                for r in range(opt.shape[0]):
                    for q in range(opt.shape[1]):
                        if opt[r, q] > NEG_INF:
                            split = r > 0
                            v = r - 1
                            c_cut = q
        if split:
            mn, mx = code_range(codes[v], pj, s, e)
            _split(Pi, Pf, Ps, Pperm, Pnn, c, u, v, c_cut, mx - mn, codes, wsplit, logw, resid, w, mu0, s2)
            if is_ref:
                Pmap[Pnn[c] - 2] = ti_old[Pmap[u], LEFT]
                Pmap[Pnn[c] - 1] = ti_old[Pmap[u], RIGHT]
        return log_z
    # prior and empirical proposals: the split decision and variable come from the prior
    if is_ref:
        o = Pmap[u]
        split = ti_old[o, LEFT] >= 0
        if split:
            v = ti_old[o, VAR]
            c_cut = ti_old[o, CUT]
    else:
        split = lwavail > NEG_INF and rng.random() < math.exp(log_psplit(d, alpha, beta))
        if split:
            v, c_cut, _ = draw_split_rule(rng, codes, wsplit, pj, s, e, scratch_p)
            if proposal == PROPOSAL_EMPIRICAL:
                c_cut = _draw_empirical_cut(rng, codes[v], pj, s, e, present)
    if not split:
        return 0.0
    lw = 0.0
    mn, mx = code_range(codes[v], pj, s, e)
    if proposal == PROPOSAL_EMPIRICAL:
        n_gaps, gap_len = _gap_of(codes[v], pj, s, e, c_cut, present)
        lw = math.log(n_gaps * gap_len) - math.log(mx - mn)  # prior cut prob / proposal cut prob
    lw += _split(Pi, Pf, Ps, Pperm, Pnn, c, u, v, c_cut, mx - mn, codes, wsplit, logw, resid, w, mu0, s2)
    if is_ref:
        Pmap[Pnn[c] - 2] = ti_old[Pmap[u], LEFT]
        Pmap[Pnn[c] - 1] = ti_old[Pmap[u], RIGHT]
    return lw


@numba.njit(cache=True, nogil=True)
def _copy_particle(Pi, Pf, Ps, Pperm, Pnn, Phead, src, dst):
    nn = Pnn[src]
    Pi[dst, :nn] = Pi[src, :nn]
    Pf[dst, :nn] = Pf[src, :nn]
    Ps[dst, :nn] = Ps[src, :nn]
    Pperm[dst] = Pperm[src]
    Pnn[dst] = nn
    Phead[dst] = Phead[src]


@numba.njit(cache=True, nogil=True)
def _resample(rng, scheme, logwt, Pi, Pf, Ps, Pperm, Pnn, Phead, counts):
    """Resample particles 1..C-1 given the weights; particle 0 (the reference) stays."""
    C = logwt.shape[0]
    top = logwt.max()
    wts = np.exp(logwt - top)
    total = wts.sum()
    cum = np.empty(C + 1)
    cum[0] = 0.0
    for i in range(C):
        cum[i + 1] = cum[i] + wts[i] / total
    cum[C] = 1.0
    counts[:] = 0
    if scheme == RESAMPLE_MULTINOMIAL:
        for _ in range(C - 1):
            u = rng.random()
            i = 0
            while i < C - 1 and cum[i + 1] <= u:
                i += 1
            counts[i] += 1
    else:
        # conditional systematic: the reference (index 0) sits at position k, drawn given that
        # systematic resampling with a random position assigns it index 0; the offset U is then
        # uniform on the compatible interval, and the other C-1 positions follow from U.
        lo0 = cum[0]
        hi0 = cum[1]
        over = np.empty(C)
        for k in range(C):
            over[k] = max(0.0, min(hi0, (k + 1) / C) - max(lo0, k / C))
        r = rng.random() * over.sum()
        k = 0
        while k < C - 1 and r >= over[k]:
            r -= over[k]
            k += 1
        a = max(lo0, k / C)
        b = min(hi0, (k + 1) / C)
        vpos = a + rng.random() * (b - a)
        U = C * vpos - k
        i = 0
        for j in range(C):
            if j == k:
                continue
            x = (U + j) / C
            while i < C - 1 and cum[i + 1] <= x:
                i += 1
            while i > 0 and cum[i] > x:
                i -= 1
            counts[i] += 1
    # in place: a particle drawn at least once keeps its slot; extra copies fill the slots of
    # particles drawn zero times (the reference keeps slot 0 regardless)
    free = 1
    for i in range(C):
        extra = counts[i] if i == 0 else counts[i] - 1
        while extra > 0:
            while free < C and counts[free] > 0:
                free += 1
            _copy_particle(Pi, Pf, Ps, Pperm, Pnn, Phead, i, free)
            free += 1
            extra -= 1
    logwt[:] = top + math.log(total / C)


@numba.njit(cache=True, nogil=True)
def pg_update(rng, opts, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, Pi, Pf, Ps, Pperm, Pnn, Phead, Pmap,
              logwt, scratch_p, present, hist_w, hist_s, opt, counts):
    """Conditional SMC for one tree; leaves the chosen particle in the buffers.

    ``opts = [C, proposal, resampling, ess_threshold, max_stages]``. Returns
    ``(chosen particle, stages run)``; ``stages = -1`` if ``max_stages`` stopped the run early.
    """
    C = int(opts[0])
    proposal = int(opts[1])
    scheme = int(opts[2])
    ess_thr = opts[3]
    max_stages = int(opts[4])
    mu0 = prm[2]
    s2 = prm[3]
    n = pj.shape[0]
    for c in range(C):
        set_leaf(Pi[c], Pf[c], 0, -1, 0, 0, n, tf[0, LWAVAIL])
        Pperm[c, :] = pj
        _node_stats(Ps, c, 0, resid, w, pj, 0, n, mu0, s2)
        Pnn[c] = 1
        Phead[c] = 0
        logwt[c] = 0.0
    Pmap[0] = 0
    stages = 0
    while True:
        active = False
        for c in range(C):
            if Phead[c] < Pnn[c]:
                active = True
                break
        if not active:
            break
        if stages == max_stages:
            return 0, -1
        stages += 1
        for c in range(C):
            u = Phead[c]
            if u < Pnn[c]:
                Phead[c] = u + 1
                logwt[c] += _expand(rng, proposal, c == 0, ti, Pmap, Pi, Pf, Ps, Pperm, Pnn, c, u, codes, wsplit,
                                    logw, prm, resid, w, scratch_p, present, hist_w, hist_s, opt)
        top = logwt.max()
        sw = 0.0
        sw2 = 0.0
        for c in range(C):
            x = math.exp(logwt[c] - top)
            sw += x
            sw2 += x * x
        if sw * sw / sw2 <= ess_thr * C * (1.0 + 1e-9):
            _resample(rng, scheme, logwt, Pi, Pf, Ps, Pperm, Pnn, Phead, counts)
    top = logwt.max()
    target = rng.random() * np.exp(logwt - top).sum()
    chosen = 0
    acc = math.exp(logwt[0] - top)
    while acc <= target and chosen < C - 1:
        chosen += 1
        acc += math.exp(logwt[chosen] - top)
    return chosen, stages


@numba.njit(cache=True, nogil=True)
def install_particle(Pi, Pf, Pperm, Pnn, c, ti, tf, pj, nn):
    """Copy particle ``c`` into a tree's arrays (the tree must have room for it)."""
    k = Pnn[c]
    ti[:k] = Pi[c, :k]
    tf[:k] = Pf[c, :k]
    pj[:] = Pperm[c]
    nn[0] = k


@numba.njit(cache=True, nogil=True)
def sweep_pg(rng, j0, resume, opts, codes, wsplit, logw, prm, ints, floats, perm, n_nodes, resid, w,
             Pi, Pf, Ps, Pperm, Pnn, Phead, Pmap, kept, stages_out, status):
    """Particle Gibbs over trees ``j0 .. m-1`` (the PG counterpart of ``kernels.sweep.sweep``).

    Returns -1 when done. Returns ``j`` when tree ``j``'s chosen particle does not fit its node
    arrays: the particle stays in the buffers (its index in ``status[0]``), the caller grows the
    forest and calls again with ``j0 = j, resume = 1``, which installs it without rerunning the SMC.
    ``status[1] = 1`` reports that ``max_stages`` stopped an SMC early (an error for the caller).
    """
    m = ints.shape[0]
    cap = ints.shape[1]
    p = codes.shape[0]
    C = int(opts[0])
    logwt = np.empty(C)
    scratch_p = np.empty(p)
    max_code = 0
    for v in range(p):
        for i in range(codes.shape[1]):
            if codes[v, i] > max_code:
                max_code = codes[v, i]
    present = np.zeros(max_code + 2, dtype=np.bool_)
    hist_w = np.empty(max_code + 2)
    hist_s = np.empty(max_code + 2)
    opt = np.empty((1 + p, max_code + 2))
    counts = np.empty(C, dtype=np.int64)
    mu0 = prm[2]
    s2 = prm[3]
    for j in range(j0, m):
        ti = ints[j]
        tf = floats[j]
        pj = perm[j]
        nn = n_nodes[j : j + 1]
        if resume == 1 and j == j0:
            chosen = status[0]
        else:
            add_tree(ti, tf, pj, nn, resid, 1.0)
            chosen, st = pg_update(rng, opts, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, Pi, Pf, Ps, Pperm,
                                   Pnn, Phead, Pmap, logwt, scratch_p, present, hist_w, hist_s, opt, counts)
            if st < 0:
                status[1] = 1
                return j
            kept[j] = chosen == 0
            stages_out[j] = st
            if Pnn[chosen] > cap:
                status[0] = chosen
                return j
        install_particle(Pi, Pf, Pperm, Pnn, chosen, ti, tf, pj, nn)
        draw_leaves(rng, ti, tf, pj, nn, resid, w, mu0, s2)
    return -1
