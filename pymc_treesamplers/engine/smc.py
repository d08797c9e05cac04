"""Top-down sequential Monte Carlo over trees (Lakshminarayanan, Roy & Teh 2013), the one SMC
engine of the package: Particle Gibbs runs it conditionally (:mod:`.pg`), estimators and particle
independent Metropolis-Hastings unconditionally.

Every particle builds a tree breadth-first: at each stage it pops its
oldest eligible node and either stops it (a leaf) or splits it. Nodes are created in the order they
join the eligible queue, so a particle's queue is simply its node ids ``head .. nn - 1``. With
``conditional``, particle 0 is clamped to a reference tree: it replays that tree's own construction
path (same decisions, same rules) and is never resampled away (Andrieu, Doucet & Holenstein 2010;
Algorithm 2 of the PG-BART paper). The other particles draw decisions from a proposal:

* ``PROPOSAL_PRIOR``: split w.p. ``p_split(d)``, rule from the rule prior;
* ``PROPOSAL_EMPIRICAL``: as prior, but the cut is drawn uniformly among the gaps between adjacent
  codes present in the node, then uniformly inside the gap (the discrete analogue of the 2013 paper);
* ``PROPOSAL_OPTIMAL``: the one-step optimal proposal, ``q(decision) ∝ prior(decision) * likelihood ratio``.

Each particle pops one node per stage (``EXPANSION_NODE``, the paper's node-wise expansion) or
every node of its current layer (``EXPANSION_LAYER``: all nodes eligible when the stage starts,
which in breadth-first order are the nodes of one depth).

Leaves are scored by a conjugate leaf model (:mod:`pymc_treesamplers.engine.leaves`): the record passed
as ``lm`` (Gaussian pseudo-data for BART, Dirichlet-multinomial or Normal-inverse-gamma for the
single-tree estimators) and its sufficient statistics, kept per node.

Each stage multiplies a particle's weight by ``prior * likelihood ratio / proposal`` of its
decision (eq. 11 of the 2015 paper for the prior proposal; eligible nodes count as leaves). When the
effective sample size is at most ``ess_threshold * C`` the particles are resampled (multinomial or
systematic; conditionally, all but the reference, with the reference placed at a position drawn
given its index) and every weight set to their mean, so that at the end the mean weight is the
estimate of the marginal likelihood relative to the single-leaf tree: unbiased for an
unconditional run. Leaves are integrated out throughout and drawn afterwards by the caller.

Particle buffers hold up to ``2n + 1`` nodes (a tree has at most ``2n - 1``), so a run never restarts.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from .leaves import add_row, col_dependent, log_marginal, range_stats
from .nodes import (
    CUT,
    DEPTH,
    END,
    LEFT,
    LWAVAIL,
    NO_NODE,
    NODE_INT,
    RIGHT,
    ROOT,
    ROW_INT,
    START,
    VAR,
)
from .prior import NEG_INF, code_range, draw_split_rule, log1m_psplit, log_psplit
from .records import Tree, empty_nodes
from .tree import copy_nodes, copy_perm, set_leaf, split_leaf

PROPOSAL_PRIOR, PROPOSAL_EMPIRICAL, PROPOSAL_OPTIMAL = range(3)
RESAMPLE_MULTINOMIAL, RESAMPLE_SYSTEMATIC = range(2)
EXPANSION_NODE, EXPANSION_LAYER = range(2)
L_ = 0  # per-node column of the leaf log marginal likelihood; the sufficient statistics follow


class SMCOptions(NamedTuple):
    """``n_particles`` (C), proposal and resampling codes, resampling threshold on the ESS as a
    share of C, a stage limit (a run that needs more stops and reports it) and the expansion code."""

    n_particles: int
    proposal: int
    resampling: int
    ess_threshold: float
    max_stages: int
    expansion: int = EXPANSION_NODE


class Particles(NamedTuple):
    """C trees under construction: node rows, per-node ``(log marginal likelihood, statistics...)``, row
    orders, node counts, queue heads, log weights; ``ref_map`` maps the reference particle's nodes
    to the reference tree's; ``counts`` and ``cum`` (C + 1) are resampling scratch, kept here because
    a resampling runs at every stage and an allocation there cost more than the arithmetic."""

    ints: np.ndarray
    floats: np.ndarray
    stats: np.ndarray
    perm: np.ndarray
    nn: np.ndarray
    head: np.ndarray
    logw: np.ndarray
    ref_map: np.ndarray
    counts: np.ndarray
    cum: np.ndarray


class ProposalScratch(NamedTuple):
    """Buffers of the proposals: per-variable weights, per-code presence flags and statistics
    histograms, left-child statistics, and the optimal proposal's table of log option weights (stop;
    every gap of every variable) with the first ``hi[r]`` entries of row ``r`` in use and the cuts
    ``[glo, ghi)`` of each gap; ``total``: a node's statistics on a variable's basis, where the leaf model's
    statistics depend on the column (:func:`~pymc_treesamplers.engine.leaves.col_dependent`)."""

    scratch_p: np.ndarray
    present: np.ndarray
    hist: np.ndarray
    left: np.ndarray
    right: np.ndarray
    opt: np.ndarray
    hi: np.ndarray
    glo: np.ndarray
    ghi: np.ndarray
    total: np.ndarray


def new_particles(C: int, n: int, width: int = 2) -> Particles:
    """Buffers for ``C`` particles on ``n`` rows, leaf statistics of ``width`` values."""
    cap = 2 * n + 1
    ints, floats = empty_nodes(C * cap)
    return Particles(ints.reshape(C, cap, -1), floats.reshape(C, cap, -1), np.empty((C, cap, 1 + width)),
                     np.empty((C, n), dtype=ROW_INT), np.zeros(C, dtype=NODE_INT), np.zeros(C, dtype=NODE_INT),
                     np.zeros(C), np.zeros(cap, dtype=NODE_INT), np.zeros(C, dtype=NODE_INT), np.zeros(C + 1))


def new_proposal_scratch(codes: np.ndarray, width: int = 2) -> ProposalScratch:
    """Proposal buffers for the covariate codes (p, n) and leaf statistics of ``width`` values."""
    p = codes.shape[0]
    size = int(codes.max(initial=0)) + 2
    return ProposalScratch(np.empty(p), np.zeros(size, dtype=np.bool_), np.empty((size, width)), np.empty(width),
                           np.empty(width), np.empty((1 + p, size)), np.zeros(1 + p, dtype=np.int64),
                           np.zeros((1 + p, size), dtype=np.int64), np.zeros((1 + p, size), dtype=np.int64),
                           np.empty(width))


@numba.njit(cache=True, nogil=True, inline="always")
def particle(P, c):
    """Particle ``c`` as a :class:`~pymc_treesamplers.engine.records.Tree` of views."""
    return Tree(P.ints[c], P.floats[c], P.perm[c], P.nn[c : c + 1])


@numba.njit(cache=True, nogil=True, inline="always")
def _node_stats(P, c, u, lm, perm, s, e, prior, col):
    st = P.stats[c, u]
    range_stats(lm, perm, s, e, st[1:], col)
    st[L_] = log_marginal(prior, lm, st[1:])


@numba.njit(cache=True, nogil=True, inline="always")
def _split(P, c, u, v, cut, n_cuts, data, prior, lm):
    """Split node ``u`` of particle ``c`` by ``code_v <= cut``; returns the log likelihood ratio."""
    t = particle(P, c)
    a = P.nn[c]
    mid = split_leaf(t, u, v, cut, n_cuts, data)
    _node_stats(P, c, a, lm, t.perm, t.ints[u, START], mid, prior, v)
    _node_stats(P, c, a + 1, lm, t.perm, mid, t.ints[u, END], prior, v)
    return P.stats[c, a, L_] + P.stats[c, a + 1, L_] - P.stats[c, u, L_]


@numba.njit(cache=True, nogil=True)
def _gaps(code_v, perm, s, e, present, cut, pick):
    """Gaps between adjacent codes present in a node: ``(number of gaps, lo, hi)`` where
    ``[lo, hi)`` are the cuts of the gap holding ``cut`` (``cut >= 0``) or of the ``pick``-th gap.

    ``present`` is boolean scratch over codes (left all False on return).
    """
    mn, mx = code_range(code_v, perm, s, e)
    for q in range(s, e):
        present[code_v[perm[q]]] = True
    n_gaps = 0
    lo = mn
    hi = mn
    prev = mn
    for code in range(mn + 1, mx + 1):
        if present[code]:
            if (cut >= 0 and prev <= cut < code) or n_gaps == pick:
                lo = prev
                hi = code
            n_gaps += 1
            prev = code
    for q in range(s, e):
        present[code_v[perm[q]]] = False
    return n_gaps, lo, hi


@numba.njit(cache=True, nogil=True)
def _draw_empirical_cut(rng, code_v, perm, s, e, present):
    """A gap between adjacent present codes uniformly, then a cut uniformly inside it."""
    n_gaps, _, _ = _gaps(code_v, perm, s, e, present, -1, -1)
    _, lo, hi = _gaps(code_v, perm, s, e, present, -1, rng.integers(0, n_gaps))
    return lo + rng.integers(0, hi - lo)


@numba.njit(cache=True, nogil=True)
def _optimal_options(P, c, u, perm, s, e, d, lwavail, data, prior, lm, sc):
    """Log option weights of node ``u`` of particle ``c`` (rows ``perm[s:e]``, depth ``d``, log available
    weight ``lwavail``): stopping (``opt[0, 0]``) and every *gap* of every variable, a gap being the cuts
    between two adjacent codes present in the node (``opt[1 + v, k]`` for the ``k``-th gap of ``v``, cuts
    ``[glo[1 + v, k], ghi[1 + v, k])``, rows ``[0, sc.hi[r])`` in use).

    An option's weight is its prior times its likelihood ratio. All cuts of a gap split the node's rows
    alike, so one likelihood ratio serves the whole gap and the gap weighs its number of cuts: a node
    costs one pass over its rows per variable plus one leaf score per distinct split, however many
    codes the data have (a cut is then drawn uniformly in the chosen gap).
    Returns the log normaliser.
    """
    opt = sc.opt
    hist = sc.hist
    left = sc.left
    right = sc.right
    present = sc.present
    width = left.shape[0]
    sc.hi[0] = 1
    for r in range(1, opt.shape[0]):
        sc.hi[r] = 0
    if lwavail == NEG_INF:
        opt[0, 0] = 0.0
        return 0.0
    opt[0, 0] = log1m_psplit(prior, d)
    top = opt[0, 0]
    parent = P.stats[c, u]
    l_parent = parent[L_]
    lsplit = log_psplit(prior, d)
    dep = col_dependent(lm)
    for v in range(data.codes.shape[0]):
        if data.wsplit[v] <= 0.0:
            continue
        code_v = data.codes[v]
        mn = code_v[perm[s]]
        mx = mn
        for q in range(s, e):
            i = perm[q]
            code = code_v[i]
            if not present[code]:
                present[code] = True
                hist[code, :] = 0.0
                if code < mn:
                    mn = code
                elif code > mx:
                    mx = code
            add_row(lm, i, hist, code, v)
        if mx == mn:
            present[mn] = False
            continue
        base = lsplit + data.logw[v] - lwavail - math.log(mx - mn)
        if dep:  # the children's statistics are on v's basis, the parent's on its own
            sc.total[:] = 0.0
            for code in range(mn, mx + 1):
                if present[code]:
                    for f in range(width):
                        sc.total[f] += hist[code, f]
        left[:] = 0.0
        r = 1 + v
        k = 0
        prev = np.int64(mn)
        for code in range(mn + 1, mx + 1):
            if not present[code]:
                continue
            present[code] = False
            for f in range(width):
                left[f] += hist[prev, f]
                right[f] = (sc.total[f] if dep else parent[1 + f]) - left[f]
            lr = log_marginal(prior, lm, left) + log_marginal(prior, lm, right) - l_parent
            x = base + math.log(code - prev) + lr
            opt[r, k] = x
            sc.glo[r, k] = prev
            sc.ghi[r, k] = code
            if x > top:
                top = x
            k += 1
            prev = code
        present[mn] = False
        sc.hi[r] = k
    total = 0.0
    for r in range(opt.shape[0]):
        for q in range(sc.hi[r]):
            total += math.exp(opt[r, q] - top)
    return top + math.log(total)


@numba.njit(cache=True, nogil=True)
def _draw_option(rng, sc, log_z):
    """``(split, v, cut)`` drawn in proportion to ``exp(opt)`` over the valid entries of the table
    of :func:`_optimal_options` (normaliser ``exp(log_z)``): an option, then a cut uniformly in its gap."""
    opt = sc.opt
    target = rng.random()
    acc = 0.0
    last_r = 0
    last_q = 0
    for r in range(opt.shape[0]):
        for q in range(sc.hi[r]):
            acc += math.exp(opt[r, q] - log_z)
            last_r = r
            last_q = q
            if acc > target:
                break
        if acc > target:
            break
    if last_r == 0:
        return False, -1, -1
    lo = sc.glo[last_r, last_q]
    return True, last_r - 1, lo + rng.integers(0, sc.ghi[last_r, last_q] - lo)


@numba.njit(cache=True, nogil=True, inline="always")
def _expand(rng, proposal, is_ref, ref, P, c, u, data, prior, lm, sc):
    """Pop node ``u`` of particle ``c``: stop or split it; returns the log incremental weight."""
    ti = P.ints[c]
    perm = P.perm[c]
    s = ti[u, START]
    e = ti[u, END]
    d = ti[u, DEPTH]
    lwavail = P.floats[c, u, LWAVAIL]
    v = -1
    cut = -1
    lw = 0.0
    if proposal == PROPOSAL_OPTIMAL:
        lw = _optimal_options(P, c, u, perm, s, e, d, lwavail, data, prior, lm, sc)
        if is_ref:
            o = P.ref_map[u]
            split = ref.ints[o, LEFT] >= 0
            v = ref.ints[o, VAR]
            cut = ref.ints[o, CUT]
        else:
            split, v, cut = _draw_option(rng, sc, lw)
        if not split:
            return lw
        mn, mx = code_range(data.codes[v], perm, s, e, data.threads)
        _split(P, c, u, v, cut, mx - mn, data, prior, lm)
    else:  # prior and empirical proposals: the split decision and variable come from the prior
        n_cuts = 0
        if is_ref:
            o = P.ref_map[u]
            split = ref.ints[o, LEFT] >= 0
            if split:
                v = ref.ints[o, VAR]
                cut = ref.ints[o, CUT]
                mn, mx = code_range(data.codes[v], perm, s, e, data.threads)
                n_cuts = mx - mn
        else:
            split = lwavail > NEG_INF and rng.random() < math.exp(log_psplit(prior, d))
            if split:
                # the rule draw took the node's code range of v: one pass over its rows fewer
                v, cut, n_cuts = draw_split_rule(rng, data, perm, s, e, sc.scratch_p)
                if proposal == PROPOSAL_EMPIRICAL:
                    cut = _draw_empirical_cut(rng, data.codes[v], perm, s, e, sc.present)
        if not split:
            return 0.0
        if proposal == PROPOSAL_EMPIRICAL:
            n_gaps, lo, hi = _gaps(data.codes[v], perm, s, e, sc.present, cut, -1)
            lw = math.log(n_gaps * (hi - lo)) - math.log(n_cuts)  # prior cut prob / proposal cut prob
        lw += _split(P, c, u, v, cut, n_cuts, data, prior, lm)
    if is_ref:
        P.ref_map[P.nn[c] - 2] = ref.ints[P.ref_map[u], LEFT]
        P.ref_map[P.nn[c] - 1] = ref.ints[P.ref_map[u], RIGHT]
    return lw


@numba.njit(cache=True, nogil=True, inline="always")
def _copy_particle(P, src, dst):
    copy_nodes(particle(P, src), particle(P, dst))
    copy_perm(particle(P, src), particle(P, dst))
    for u in range(P.nn[src]):
        for f in range(P.stats.shape[2]):
            P.stats[dst, u, f] = P.stats[src, u, f]
    P.head[dst] = P.head[src]


@numba.njit(cache=True, nogil=True)
def _cumulative_weights(logw, cum):
    """Write the normalised cumulative weights into ``cum`` (``cum[0] = 0``, ``cum[C] = 1``); return the
    max log weight and the sum of ``exp(logw - max)``."""
    C = logw.shape[0]
    top = logw.max()
    total = _sum_exp(logw, top)
    cum[0] = 0.0
    for i in range(C):
        cum[i + 1] = cum[i] + math.exp(logw[i] - top) / total
    cum[C] = 1.0
    return top, total


@numba.njit(cache=True, nogil=True, inline="always")
def _sum_exp(logw, top):
    """``sum(exp(logw - top))`` added in index order (the order of numpy's sum in numba), without an array."""
    total = 0.0
    for i in range(logw.shape[0]):
        total += math.exp(logw[i] - top)
    return total


@numba.njit(cache=True, nogil=True)
def _locate(cum, x, i):
    """Index ``i`` with ``cum[i] <= x < cum[i + 1]``, searching from a start guess ``i``."""
    C = cum.shape[0] - 1
    while i < C - 1 and cum[i + 1] <= x:
        i += 1
    while i > 0 and cum[i] > x:
        i -= 1
    return i


@numba.njit(cache=True, nogil=True, inline="always")
def _overlap(lo0, hi0, k, C):
    """Length of ``[lo0, hi0)`` inside ``[k/C, (k+1)/C)``."""
    return max(0.0, min(hi0, (k + 1) / C) - max(lo0, k / C))


@numba.njit(cache=True, nogil=True)
def _systematic_reference_position(rng, cum):
    """Conditional systematic resampling: the position ``k`` of the reference (index 0) and the
    offset ``U``, drawn given that systematic resampling with a random offset assigns it index 0.
    ``k`` is drawn in proportion to the overlap of ``[cum[0], cum[1])`` with ``[k/C, (k+1)/C)``,
    ``U`` uniformly on the compatible interval; the other ``C - 1`` positions follow from ``U``."""
    C = cum.shape[0] - 1
    lo0 = cum[0]
    hi0 = cum[1]
    total = 0.0
    for k in range(C):
        total += _overlap(lo0, hi0, k, C)
    r = rng.random() * total
    k = 0
    while k < C - 1 and r >= _overlap(lo0, hi0, k, C):
        r -= _overlap(lo0, hi0, k, C)
        k += 1
    a = max(lo0, k / C)
    b = min(hi0, (k + 1) / C)
    vpos = a + rng.random() * (b - a)
    return k, C * vpos - k


@numba.njit(cache=True, nogil=True)
def resample(rng, scheme, conditional, P):
    """Resample the particles in place given their weights; every log weight becomes the log mean
    weight. With ``conditional``, particle 0 (the reference) keeps slot 0 and the other ``C - 1``
    are drawn; a particle drawn at least once keeps its slot and extra copies fill the slots of
    particles drawn zero times."""
    logw = P.logw
    counts = P.counts
    C = logw.shape[0]
    cum = P.cum
    top, total = _cumulative_weights(logw, cum)
    for i in range(C):
        counts[i] = 0
    first = 1 if conditional else 0
    if scheme == RESAMPLE_MULTINOMIAL:
        for _ in range(first, C):
            u = rng.random()
            i = 0
            while i < C - 1 and cum[i + 1] <= u:
                i += 1
            counts[i] += 1
    else:
        if conditional:
            k, U = _systematic_reference_position(rng, cum)
        else:
            k, U = -1, rng.random()
        i = 0
        for pos in range(C):
            if pos == k:
                continue
            i = _locate(cum, (U + pos) / C, i)
            counts[i] += 1
    free = first
    for i in range(C):
        extra = counts[i] if (conditional and i == 0) else counts[i] - 1
        while extra > 0:
            while free < C and counts[free] > 0:
                free += 1
            _copy_particle(P, i, free)
            free += 1
            extra -= 1
    mean = top + math.log(total / C)
    for i in range(C):
        logw[i] = mean


@numba.njit(cache=True, nogil=True)
def smc_init(P, C, root, prior, lm):
    """Start ``C`` particles as single leaves holding the rows of ``root`` (a tree whose node 0 is
    its root: its row order and available split weight are taken), scored by the leaf model ``lm``.
    The root's statistics are one pass, shared: every particle starts from the same rows."""
    n = root.perm.shape[0]
    _node_stats(P, 0, ROOT, lm, root.perm, ROOT, NODE_INT(n), prior, NO_NODE)
    for c in range(C):
        set_leaf(particle(P, c), ROOT, NO_NODE, ROOT, ROOT, NODE_INT(n), root.floats[0, LWAVAIL])
        copy_perm(root, particle(P, c))
        if c > 0:
            P.stats[c, ROOT, :] = P.stats[0, ROOT, :]
        P.nn[c] = 1
        P.head[c] = 0
        P.logw[c] = 0.0
    P.ref_map[0] = 0


@numba.njit(cache=True, nogil=True)
def smc_run(rng, opts, conditional, ref, P, data, prior, lm, sc):
    """Expand the particles of :func:`smc_init` until no particle has an eligible node.

    With ``conditional``, particle 0 follows the tree ``ref``. Returns ``(stages, log_z)``: the
    number of stages (``-1`` if ``opts.max_stages`` stopped the run) and the log of the mean final
    weight, the estimate of the marginal likelihood relative to the single-leaf tree.
    """
    C = opts.n_particles
    layer = opts.expansion == EXPANSION_LAYER
    stages = 0
    while True:
        active = False
        for c in range(C):
            if P.head[c] < P.nn[c]:
                active = True
                break
        if not active:
            break
        if stages == opts.max_stages:
            return -1, NEG_INF
        stages += 1
        for c in range(C):
            end = P.nn[c] if layer else min(P.head[c] + 1, P.nn[c])
            while P.head[c] < end:
                u = P.head[c]
                P.head[c] = u + 1
                P.logw[c] += _expand(rng, opts.proposal, conditional and c == 0, ref, P, c, u, data, prior, lm, sc)
        top = P.logw.max()
        sw = 0.0
        sw2 = 0.0
        for c in range(C):
            x = math.exp(P.logw[c] - top)
            sw += x
            sw2 += x * x
        if sw * sw / sw2 <= opts.ess_threshold * C * (1.0 + 1e-9):
            resample(rng, opts.resampling, conditional, P)
    top = P.logw.max()
    return stages, top + math.log(_sum_exp(P.logw, top) / C)


@numba.njit(cache=True, nogil=True)
def adopt_particle(P, c, t):
    """Particle ``c`` becomes tree ``t`` (nodes and row order)."""
    src = particle(P, c)
    copy_nodes(src, t)
    copy_perm(src, t)


@numba.njit(cache=True, nogil=True)
def pick_particle(rng, P):
    """A particle index drawn in proportion to the final weights."""
    C = P.logw.shape[0]
    top = P.logw.max()
    target = rng.random() * _sum_exp(P.logw, top)
    chosen = 0
    acc = math.exp(P.logw[0] - top)
    while acc <= target and chosen < C - 1:
        chosen += 1
        acc += math.exp(P.logw[chosen] - top)
    return chosen
