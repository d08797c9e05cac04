"""The Bayesian backfitting sweep: every tree updated once against the running residual.

For tree ``j`` the residual ``resid = z - sum of the other trees`` is the working response of
the weighted Gaussian pseudo-data ``resid_i ~ N(g_j(x_i), 1 / w_i)``; the structure move
integrates the leaves out, then the leaves are drawn from their conditional and the tree's new
fit is taken off the residual. The residual is kept, never recomputed from the forest.
"""

import numba
import numpy as np

from ..forest import add_tree
from ..gaussian import leaf_draw, leaf_suff
from ..layout import END, LEFT, START, VALUE
from .cgm import mh_update

KIND_MH = 0


@numba.njit(cache=True, nogil=True)
def draw_leaves(rng, ti, tf, pj, nn, resid, w, mu0, s2):
    """Draw every leaf of one tree from its conditional and subtract the tree from ``resid``."""
    for k in range(nn[0]):
        if ti[k, LEFT] < 0:
            s = ti[k, START]
            e = ti[k, END]
            wk, sk = leaf_suff(resid, w, pj, s, e)
            val = leaf_draw(rng, wk, sk, mu0, s2)
            tf[k, VALUE] = val
            for t in range(s, e):
                resid[pj[t]] -= val


@numba.njit(cache=True, nogil=True)
def sweep(rng, j0, kind, probs, codes, wsplit, logw, prm, ints, floats, perm, n_nodes, resid, w, moves, accepted):
    """Update trees ``j0 .. m-1`` in turn. Returns -1, or the index of a tree that needs more
    node capacity (the caller grows the arrays and calls again from that tree).

    ``moves[j]``/``accepted[j]`` receive the proposed move type and whether it was accepted.
    """
    m = ints.shape[0]
    cap = ints.shape[1]
    p = codes.shape[0]
    n = resid.shape[0]
    scratch_p = np.empty(p)
    stack = np.empty(cap + 2, dtype=np.int32)
    bk_i = np.empty((cap, ints.shape[2]), dtype=ints.dtype)
    bk_f = np.empty((cap, floats.shape[2]))
    bk_p = np.empty(n, dtype=perm.dtype)
    mu0 = prm[2]
    s2 = prm[3]
    for j in range(j0, m):
        if n_nodes[j] + 2 > cap:
            return j
        ti = ints[j]
        tf = floats[j]
        pj = perm[j]
        nn = n_nodes[j : j + 1]
        add_tree(ti, tf, pj, nn, resid, 1.0)
        if kind == KIND_MH:
            mv, acc = mh_update(
                rng, probs, ti, tf, pj, nn, codes, wsplit, logw, prm, resid, w, scratch_p, stack, bk_i, bk_f, bk_p
            )
            moves[j] = mv
            accepted[j] = acc
        draw_leaves(rng, ti, tf, pj, nn, resid, w, mu0, s2)
    return -1
