"""The GPU sweep's CPU twin: the device's decisions (:mod:`.decisions`, the same source compiled by numba) with a
single-threaded row pass that does what the device's does, in the device's order. It needs no GPU and gives the
device's draws, draw for draw: the exactness tests run it against enumeration, and the device kernels (in
numba-cuda's simulator) against it.

>>> import numpy as np
>>> from pymc_treesamplers.gpu import DeviceChain
>>> g = DeviceChain(np.array([[0, 1, 2, 2]]), np.array([0.0, 0.1, 1.0, 1.1]), m=2, rng=0, backend="cpu")
>>> int(make_sweeps(HOST)(g.rs, 1, g.codes, g.leaf, g.r, *g.state, g.params, g.wsplit, g.words, g.floats, g.prop,
...                       g.tick, np.zeros(1)))
1
"""

from __future__ import annotations

import numba
import numpy as np

from . import layout
from .decisions import build

HOST = build(numba.njit(cache=True))
_mask_has, _site_descend = HOST.mask_has, HOST.site_descend


@numba.njit(cache=True)
def row_pass_cpu(codes, leaf, r, words_pend, floats_pend, words, floats):
    """The CPU twin of the device's row pass: apply the pending change of tree ``words_pend[layout.I_JP]`` (from the
    buffer row ``words_pend``/``floats_pend``: a row whose leaf is in the pending site's mask descends that site to its
    new leaf; the residual moves by the old minus the new value) to every row, then sum tree ``words[layout.I_J]``'s
    rows per leaf with its current fit added back, and those in the proposal's site's mask per site leaf, with their
    code ranges (into ``words``/``floats``; the flush passes the pending row for both, with ``layout.I_J`` = -1)."""
    p = codes.shape[0]
    n = codes.shape[1]
    jp = words_pend[layout.I_JP]
    n_pend = words_pend[layout.I_PSITE + layout.S_N] if jp >= 0 else 0
    j = words[layout.I_J]
    n_site = words[layout.I_SITE + layout.S_N] if j >= 0 else 0
    ssr = 0.0
    for i in range(n):
        ri = r[i]
        if jp >= 0:
            lo = np.int64(leaf[jp, i])
            ln = lo
            if n_pend > 0 and _mask_has(words_pend, layout.I_PSITE, lo):
                q = _site_descend(codes, words_pend, layout.I_PSITE, i)
                ln = words_pend[layout.I_PSITE + layout.S_NODES + layout.S_FIELDS * q + layout.N_SLOT]
                leaf[jp, i] = ln
            ri = ri + floats_pend[layout.F_OLD + lo] - floats_pend[layout.F_NEW + ln]
            r[i] = ri
        ssr += ri * ri
        if j >= 0:
            l = np.int64(leaf[j, i])
            x = ri + floats[layout.F_CUR + l]
            floats[layout.F_SUM + l] += x
            if n_site > 0 and _mask_has(words, layout.I_SITE, l):
                q = _site_descend(codes, words, layout.I_SITE, i)
                words[layout.I_CNT + q] += 1
                floats[layout.F_SSUM + q] += x
                base = layout.I_RANGE + 2 * p * q
                for w in range(p):
                    cw = np.int32(codes[w, i])
                    if cw < words[base + w]:
                        words[base + w] = cw
                    if cw > words[base + p + w]:
                        words[base + p + w] = cw
    floats[layout.F_SSR] = ssr



def make_sweeps(decisions, jit=numba.njit):
    """The twin's sweep loop over the decisions ``decisions`` (a :func:`~.decisions.build` namespace): the
    package's, :data:`sweeps`, is over :data:`HOST`; the tests build one over deliberately wrong decisions."""
    pre_tree, post_tree = decisions.pre_tree, decisions.post_tree

    @jit
    def sweeps(rs, n_sweeps, codes, leaf, r, ints, lohi, cnt, val, log_avail, used, top, params, wsplit, words, floats,
               prop,
                    tick, out_sigma2):
        """``n_sweeps`` whole sweeps on the CPU twin: the device's decision code (the same source), the CPU row
        pass, the device's order (the proposal of tree ``j + 1`` after the pass of tree ``j``, before its
        decision). ``tick[0]``: trees processed so far (their buffer rows alternate), advanced here.
        ``out_sigma2[s]``: the sigma^2 of sweep ``s``. Returns the sweeps done (fewer: a tree ran out of node
        slots, ``words[:, layout.I_ERR]`` says which)."""
        m = ints.shape[0]
        t = tick[0]
        for s in range(n_sweeps):
            c = t & 1
            pre_tree(rs[0], ints, lohi, val, log_avail, used, top, 0, params, wsplit, words[c], floats[c], prop[c])
            for j in range(m):
                c = t & 1
                row_pass_cpu(codes, leaf, r, words[1 - c], floats[1 - c], words[c], floats[c])
                if j + 1 < m:
                    pre_tree(rs[0], ints, lohi, val, log_avail, used, top, j + 1, params, wsplit, words[1 - c],
                             floats[1 - c],
                              prop[1 - c])
                post_tree(rs[1], ints, lohi, cnt, val, log_avail, used, top, j, params, wsplit, words[c], floats[c],
                          prop[c])
                t += 1
                tick[0] = t
                if words[c, layout.I_ERR] != 0:
                    return s
            out_sigma2[s] = params[layout.P_SIGMA2]
        return n_sweeps


    return sweeps


sweeps = make_sweeps(HOST, numba.njit(cache=True))
