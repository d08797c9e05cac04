"""The GPU sweep's CPU twin: the device's decisions (:mod:`.decisions`, the same source compiled by numba) with a
single-threaded row pass that does what the device's does, in the device's order. It needs no GPU and gives the
device's draws, draw for draw: the exactness tests run it against enumeration, and the device kernels (in
numba-cuda's simulator) against it.

>>> import numpy as np
>>> from pymc_treesamplers.gpu import GrowPruneGPU
>>> g = GrowPruneGPU(np.array([[0, 1, 2, 2]]), np.array([0.0, 0.1, 1.0, 1.1]), m=2, rng=0, backend="cpu")
>>> int(make_sweeps(HOST)(g.rs, 1, g.codes, g.leaf, g.r, *g.state, g.prm, g.wsplit, g.ib, g.fb, g.prop, g.tick,
...                       np.zeros(1)))
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
def row_pass_cpu(codes, leaf, r, ibp, fbp, ib, fb):
    """The CPU twin of the device's row pass: apply the pending change of tree ``ibp[layout.I_JP]`` (from the buffer
    row ``ibp``/``fbp``: a row whose leaf is in the pending site's mask descends that site to its new leaf; the
    residual moves by the old minus the new value) to every row, then sum tree ``ib[layout.I_J]``'s rows per leaf with
    its current fit added back, and those in the proposal's site's mask per site leaf, with their code ranges
    (into ``ib``/``fb``; the flush passes the pending row for both, with ``layout.I_J`` = -1)."""
    p = codes.shape[0]
    n = codes.shape[1]
    jp = ibp[layout.I_JP]
    n_pend = ibp[layout.I_PSITE + layout.S_N] if jp >= 0 else 0
    j = ib[layout.I_J]
    n_site = ib[layout.I_SITE + layout.S_N] if j >= 0 else 0
    ssr = 0.0
    for i in range(n):
        ri = r[i]
        if jp >= 0:
            lo = np.int64(leaf[jp, i])
            ln = lo
            if n_pend > 0 and _mask_has(ibp, layout.I_PSITE, lo):
                q = _site_descend(codes, ibp, layout.I_PSITE, i)
                ln = ibp[layout.I_PSITE + layout.S_NODES + layout.S_FIELDS * q + layout.N_SLOT]
                leaf[jp, i] = ln
            ri = ri + fbp[layout.F_OLD + lo] - fbp[layout.F_NEW + ln]
            r[i] = ri
        ssr += ri * ri
        if j >= 0:
            l = np.int64(leaf[j, i])
            x = ri + fb[layout.F_CUR + l]
            fb[layout.F_SUM + l] += x
            if n_site > 0 and _mask_has(ib, layout.I_SITE, l):
                q = _site_descend(codes, ib, layout.I_SITE, i)
                ib[layout.I_CNT + q] += 1
                fb[layout.F_SSUM + q] += x
                base = layout.I_RANGE + 2 * p * q
                for w in range(p):
                    cw = np.int32(codes[w, i])
                    if cw < ib[base + w]:
                        ib[base + w] = cw
                    if cw > ib[base + p + w]:
                        ib[base + p + w] = cw
    fb[layout.F_SSR] = ssr



def make_sweeps(decisions, jit=numba.njit):
    """The twin's sweep loop over the decisions ``decisions`` (a :func:`~.decisions.build` namespace): the
    package's, :data:`sweeps`, is over :data:`HOST`; the tests build one over deliberately wrong decisions."""
    pre_tree, post_tree = decisions.pre_tree, decisions.post_tree

    @jit
    def sweeps(rs, n_sweeps, codes, leaf, r, ints, lohi, cnt, val, lwav, used, top, prm, wsplit, ib, fb, prop,
                    tick, out_sigma2):
        """``n_sweeps`` whole sweeps on the CPU twin: the device's decision code (the same source), the CPU row
        pass, the device's order (the proposal of tree ``j + 1`` after the pass of tree ``j``, before its
        decision). ``tick[0]``: trees processed so far (their buffer rows alternate), advanced here.
        ``out_sigma2[s]``: the sigma^2 of sweep ``s``. Returns the sweeps done (fewer: a tree ran out of node
        slots, ``ib[:, layout.I_ERR]`` says which)."""
        m = ints.shape[0]
        t = tick[0]
        for s in range(n_sweeps):
            c = t & 1
            pre_tree(rs[0], ints, lohi, val, lwav, used, top, 0, prm, wsplit, ib[c], fb[c], prop[c])
            for j in range(m):
                c = t & 1
                row_pass_cpu(codes, leaf, r, ib[1 - c], fb[1 - c], ib[c], fb[c])
                if j + 1 < m:
                    pre_tree(rs[0], ints, lohi, val, lwav, used, top, j + 1, prm, wsplit, ib[1 - c], fb[1 - c],
                              prop[1 - c])
                post_tree(rs[1], ints, lohi, cnt, val, lwav, used, top, j, prm, wsplit, ib[c], fb[c], prop[c])
                t += 1
                tick[0] = t
                if ib[c, layout.I_ERR] != 0:
                    return s
            out_sigma2[s] = prm[layout.P_SIGMA2]
        return n_sweeps


    return sweeps


sweeps = make_sweeps(HOST, numba.njit(cache=True))
