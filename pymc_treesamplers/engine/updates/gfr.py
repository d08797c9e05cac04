"""Grow-from-root (GFR, XBART: He & Hahn 2021): regrow a tree from its root, every split drawn in
proportion to its local posterior. A warm start, not an MCMC kernel: it leaves no posterior invariant.

At a node at depth ``d`` with prior split probability ``p_d = alpha (1 + d)^-beta`` and the summed weight
``W_avail`` of its splittable variables, the choices and their weights are

* stop: ``(1 - p_d) L(node)``;
* split on ``x_v <= c`` for each valid cut ``c`` of each variable ``v``:
  ``p_d w_v / (W_avail n_cuts_v) L(left) L(right)``,

with ``L`` a leaf's marginal likelihood (:func:`~pymc_treesamplers.engine.gaussian.leaf_loglik`). That is the
exact posterior over "stop here" and "split once, children stay leaves", the tree prior's own rule
probabilities included; with equal weights and equal cut counts it is XBART's weighting (the no-split
option scaled by the number of cuts and the prior odds). Every child is then grown the same way.

Binned codes make a variable's cuts one pass: the node's rows are summed per code (``W = sum w``,
``S = sum w r``), and the prefix sums over codes are every left child's statistics.

The sweep runs through the one backfitting driver like any tree update (registered for
:class:`GFRScratch`); the driver then draws the new tree's leaves from their conditional.

>>> sk = new_gfr_scratch(np.array([[0, 3, 1]], dtype=np.uint16))
>>> sk.W.shape, sk.logp.shape
((4,), (1, 4))
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from ..driver import register_update
from ..gaussian import leaf_loglik, leaf_suff
from ..nodes import DEPTH, END, LWAVAIL, START, VALUE
from ..prior import NEG_INF, log1m_psplit, log_psplit
from ..tree import init_root, split_leaf


class GFRScratch(NamedTuple):
    """Per-code sums of one variable (``W``, ``S``: length of the largest code + 1), the log weight of
    every cut of every variable at the current node (``logp`` (p, codes)), each variable's code range there
    (``lo``, ``hi``; ``hi <= lo``: no valid cut)."""

    W: np.ndarray
    S: np.ndarray
    logp: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def new_gfr_scratch(codes: np.ndarray) -> GFRScratch:
    """Scratch for :func:`gfr_update` on the split codes ``codes`` (p, n)."""
    p = codes.shape[0]
    b = int(codes.max()) + 1 if codes.size else 1
    return GFRScratch(np.zeros(b), np.zeros(b), np.empty((p, b)), np.zeros(p, dtype=np.int64),
                      np.zeros(p, dtype=np.int64))


@numba.njit(cache=True, nogil=True)
def _cut_weights(data, prior, ps, pj, s, e, d, lwavail, W0, S0, sk):
    """Fill ``sk.logp`` with every cut's log weight at the node ``pj[s:e]``; return their maximum."""
    base = log_psplit(prior, d) - lwavail
    best = NEG_INF
    for v in range(data.codes.shape[0]):
        sk.lo[v] = 0
        sk.hi[v] = 0
        if data.wsplit[v] <= 0.0:
            continue
        code_v = data.codes[v]
        mn = code_v[pj[s]]
        mx = mn
        for q in range(s, e):
            i = pj[q]
            c = code_v[i]
            sk.W[c] += ps.w[i]
            sk.S[c] += ps.w[i] * ps.r[i]
            if c < mn:
                mn = c
            elif c > mx:
                mx = c
        if mx > mn:
            sk.lo[v] = mn
            sk.hi[v] = mx
            lv = base + data.logw[v] - math.log(mx - mn)
            WL = 0.0
            SL = 0.0
            for c in range(mn, mx):
                WL += sk.W[c]
                SL += sk.S[c]
                lp = lv + leaf_loglik(prior, WL, SL) + leaf_loglik(prior, W0 - WL, S0 - SL)
                sk.logp[v, c] = lp
                if lp > best:
                    best = lp
        for c in range(mn, mx + 1):  # leave the sums zero for the next variable
            sk.W[c] = 0.0
            sk.S[c] = 0.0
    return best


@numba.njit(cache=True, nogil=True)
def _draw_cut(rng, sk, stop, top):
    """``(v, c)`` drawn among the cuts in ``sk`` and stopping (``v = -1``), in proportion to their weights."""
    total = math.exp(stop - top)
    for v in range(sk.lo.shape[0]):
        for c in range(sk.lo[v], sk.hi[v]):
            total += math.exp(sk.logp[v, c] - top)
    u = rng.random() * total - math.exp(stop - top)
    if u < 0.0:
        return -1, -1
    last_v, last_c = -1, -1
    for v in range(sk.lo.shape[0]):
        for c in range(sk.lo[v], sk.hi[v]):
            u -= math.exp(sk.logp[v, c] - top)
            last_v, last_c = v, c
            if u < 0.0:
                return v, c
    return last_v, last_c  # rounding at the very end of the sum


@register_update(GFRScratch)
@numba.njit(cache=True, nogil=True, inline="always")  # one call site: the driver
def gfr_update(rng, j, t, data, prior, ps, sk):
    """Replace tree ``j`` by one grown from its root (module docstring); returns 1 (the tree is new)."""
    init_root(t, data, t.floats[0, VALUE])
    u = 0
    while u < t.nn[0]:
        lwavail = t.floats[u, LWAVAIL]
        if lwavail > NEG_INF:
            s = t.ints[u, START]
            e = t.ints[u, END]
            d = t.ints[u, DEPTH]
            W0, S0 = leaf_suff(ps, t.perm, s, e)
            stop = log1m_psplit(prior, d) + leaf_loglik(prior, W0, S0)
            top = max(stop, _cut_weights(data, prior, ps, t.perm, s, e, d, lwavail, W0, S0, sk))
            v, c = _draw_cut(rng, sk, stop, top)
            if v >= 0:
                split_leaf(t, u, v, c, sk.hi[v] - sk.lo[v], data)
        u += 1
    return 1
