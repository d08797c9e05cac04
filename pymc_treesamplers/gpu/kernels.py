"""The device kernels of the GPU sweep (numba-cuda; grow/prune or CGM's four moves); :mod:`.device_chain` runs them.

Everything lives on the device across sweeps: the split codes (p x n, uint8 or uint16), the leaf slot of every
row in every tree (m x n, uint8), the running residual (n, float32 or float64), the trees' node tables, the
random state and the small exchange buffers. The tree decisions are :func:`.decisions.build`'s functions compiled
for the device (the CPU twin runs the same source), made by one thread; the row pass by all.

Two drivers, the same order of work and the same draws:

* ``coop`` (default): one launch per sweep (:func:`k_sweep_soft`, a grid of resident blocks); per tree the
  deciding thread draws the proposal, a grid barrier, the row pass, a grid barrier, the decision. No host
  round trip inside a sweep; the host reads back sigma^2 and the error words once per sweep. The barrier is
  made of atomics (:func:`_soft_sync`, with a time-out instead of a hang), or cooperative groups' one
  (:func:`k_sweep_cg`, needs libcudadevrt) where the first is refused.
* ``launch`` (where neither runs): per tree one launch of the row pass (:func:`k_pass`) and one single-thread
  launch of the decisions (:func:`k_decide`), queued on one stream without synchronising.

See ``pymc_treesamplers/gpu/__init__.py`` for the design, :mod:`.layout` for the buffers' words.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import cuda, float64, int32, uint64

from . import layout
from .decisions import build
from .layout import INT_BIG, MAXN, N_INTS, N_PARAMS, NACC, PMAX, SITE_LEN, SUBMAX

N_SH_RNG = SUBMAX * 2 * PMAX  # the site leaves' code bounds (a literal size for numba)

DEV = build(cuda.jit(device=True))
_pre_tree, _post_tree = DEV.pre_tree, DEV.post_tree
_mask_has, _site_descend = DEV.mask_has, DEV.site_descend


@cuda.jit(device=True)
def _row_pass(codes, leaf, r, words_pend, floats_pend, words, floats, first, sh):
    """All threads: the pending change of tree ``words_pend[layout.I_JP]`` (a row whose leaf slot is in the pending
    site's mask descends that site to its new slot; the residual moves by the old minus the new value; from the buffer
    row ``words_pend``/``floats_pend``), then tree ``words[layout.I_J]``'s leaf sums with its fit added back (slots
    below NACC in per-thread accumulators, the rest in shared memory), and for the rows in the proposal's site's mask
    the site leaf each reaches, its row count, sum and code ranges (counts and sums per thread, ranges by shared atomics
    taken only when they move a bound), and the residual sum of squares. Block reductions in shared memory, then global
    atomics into ``words``/``floats`` (zeroed by the deciding thread before). Blocks below ``first`` take no rows (block
    0 when the deciding thread draws the next proposal meanwhile). ``sh``: the kernel's shared and per-thread arrays, in
    the order unpacked below (allocated in each kernel, one a line: the simulator tells shared arrays apart by their
    source line)."""
    sh_sum, sh_f, sh_site, sh_psite, sh_cnt, sh_ssum, sh_rng, acc, lcnt, lsum = sh
    t = cuda.threadIdx.x
    bd = cuda.blockDim.x
    p = codes.shape[0]
    n = codes.shape[1]
    jp = words_pend[layout.I_JP]
    j = words[layout.I_J]
    n_pend = words_pend[layout.I_PSITE + layout.S_N] if jp >= 0 else 0
    n_site = words[layout.I_SITE + layout.S_N] if j >= 0 else 0
    tj = words[layout.I_TOP] if j >= 0 else 0
    na = tj if tj < NACC else NACC
    p2 = 2 * p
    for e in range(t, layout.S_NODES + layout.S_FIELDS * n_pend if n_pend > 0 else 0, bd):
        sh_psite[e] = words_pend[layout.I_PSITE + e]
    for e in range(t, layout.S_NODES + layout.S_FIELDS * n_site if n_site > 0 else 0, bd):
        sh_site[e] = words[layout.I_SITE + e]
    for q in range(t, tj, bd):
        sh_sum[q] = 0.0
    for e in range(t, p2 * n_site, bd):
        sh_rng[e] = INT_BIG if e % p2 < p else -1
    for q in range(t, n_site, bd):
        sh_cnt[q] = 0
        sh_ssum[q] = 0.0
    if t == 0:
        sh_f[0] = 0.0
    for q in range(na):
        acc[q] = 0.0
    for q in range(n_site):
        lcnt[q] = 0
        lsum[q] = 0.0
    cuda.syncthreads()
    ssr = 0.0
    i = (cuda.blockIdx.x - first) * bd + t
    stride = (cuda.gridDim.x - first) * bd
    if cuda.blockIdx.x < first:
        i = n
    # software pipelined by one row: the next row's residual and leaf slots are loaded before this row is
    # worked on (two rows' loads in flight per thread)
    nr = 0.0
    nlo = 0
    nlj = 0
    if i < n:
        nr = float64(r[i])
        if jp >= 0:
            nlo = int32(leaf[jp, i])
        if j >= 0:
            nlj = int32(leaf[j, i])
    while i < n:
        ri = nr
        lo = nlo
        lj = nlj
        inext = i + stride
        if inext < n:
            nr = float64(r[inext])
            if jp >= 0:
                nlo = int32(leaf[jp, inext])
            if j >= 0:
                nlj = int32(leaf[j, inext])
        if jp >= 0:
            ln = lo
            if n_pend > 0 and _mask_has(sh_psite, 0, lo):
                ln = sh_psite[layout.S_NODES + layout.S_FIELDS * _site_descend(codes, sh_psite, 0, i) + layout.N_SLOT]
                leaf[jp, i] = ln
            ri = ri + floats_pend[layout.F_OLD + lo] - floats_pend[layout.F_NEW + ln]
            r[i] = ri
            ri = float64(r[i])  # the value stored (float32 residuals: the rounded one)
            if j == jp:  # one tree (m = 1): its slot as just changed
                lj = ln
        ssr += ri * ri
        if j >= 0:
            x = ri + floats[layout.F_CUR + lj]
            if lj < NACC:
                acc[lj] += x
            else:
                cuda.atomic.add(sh_sum, lj, x)
            if n_site > 0 and _mask_has(sh_site, 0, lj):
                q = _site_descend(codes, sh_site, 0, i)
                lcnt[q] += 1
                lsum[q] += x
                base = p2 * q
                for w in range(p):
                    cw = int32(codes[w, i])
                    # a bound only moves one way: a stale read can only cost an atomic, never skip a needed one
                    if cw < sh_rng[base + w]:
                        cuda.atomic.min(sh_rng, base + w, cw)
                    if cw > sh_rng[base + p + w]:
                        cuda.atomic.max(sh_rng, base + p + w, cw)
        i = inext
    for q in range(na):
        if acc[q] != 0.0:
            cuda.atomic.add(sh_sum, q, acc[q])
    cuda.atomic.add(sh_f, 0, ssr)
    for q in range(n_site):
        if lcnt[q] > 0:
            cuda.atomic.add(sh_cnt, q, lcnt[q])
            cuda.atomic.add(sh_ssum, q, lsum[q])
    cuda.syncthreads()
    for q in range(t, tj, bd):
        if sh_sum[q] != 0.0:
            cuda.atomic.add(floats, layout.F_SUM + q, sh_sum[q])
    if t == 0:
        cuda.atomic.add(floats, layout.F_SSR, sh_f[0])
    for q in range(t, n_site, bd):
        if sh_cnt[q] > 0:
            cuda.atomic.add(words, layout.I_CNT + q, sh_cnt[q])
            cuda.atomic.add(floats, layout.F_SSUM + q, sh_ssum[q])
    for e in range(t, p2 * n_site, bd):
        if e % p2 < p:
            if sh_rng[e] != INT_BIG:
                cuda.atomic.min(words, layout.I_RANGE + e, sh_rng[e])
        elif sh_rng[e] != -1:
            cuda.atomic.max(words, layout.I_RANGE + e, sh_rng[e])


PF_MAGIC_I, PF_MAGIC_F = -7777777777777, 1.5e-300  # sums the prefetch cannot reach (codes < 2^16, < 2^14 words)


@cuda.jit(device=True)
def _prefetch(ints, lohi, cnt, val, log_avail, used, top, wsplit, j, words_row, floats_row, post, sink):
    """Block 0's threads load tree ``j``'s node table (its first ``top[j]`` slots) and, ``post``, the buffer
    row ``words_row``/``floats_row`` the decision reads, so that the deciding thread's ~100 dependent loads hit this
    multiprocessor's L1 (tens of cycles) instead of L2/DRAM (hundreds each): the decision runs on one thread
    while the grid waits, so its load latency is the sweep's critical path at small n. A pure performance
    hint: the values are summed only so the loads are not removed (``sink`` is never written: the sums cannot
    reach the magic values). The caller syncs the block before the deciding thread starts."""
    t = cuda.threadIdx.x
    bd = cuda.blockDim.x
    tj = top[j]
    p = wsplit.shape[0]
    si = 0
    sf = 0.0
    for q in range(t, tj * N_INTS, bd):
        si += ints[j, q // N_INTS, q % N_INTS]
    for q in range(t, tj * 2 * p, bd):
        si += lohi[j, q // (2 * p), (q // p) % 2, q % p]
    for q in range(t, tj, bd):
        si += cnt[j, q] + used[j, q]
        sf += val[j, q] + log_avail[j, q]
    if post:  # the words the decision reads: control words and site, the site's counts, sums and ranges
        ns = words_row[layout.I_SITE + layout.S_N]
        for q in range(t, layout.I_SITE + layout.S_NODES + layout.S_FIELDS * ns, bd):
            si += words_row[q]
        for q in range(t, ns, bd):
            si += words_row[layout.I_CNT + q]
            sf += floats_row[layout.F_SSUM + q]
        for q in range(t, 2 * p * ns, bd):
            si += words_row[layout.I_RANGE + q]
        for q in range(t, tj, bd):
            sf += floats_row[layout.F_SUM + q]
        if t == 0:
            sf += floats_row[layout.F_SSR] + wsplit[0]
    if si == PF_MAGIC_I and sf == PF_MAGIC_F:
        sink[3] = 1


SPIN_LIMIT = 1 << 22  # polls of a grid barrier before it gives up (seconds; a legitimate wait is < 1 ms)
# the software barrier's words (int32), each in its own 128-byte line: the blocks polling the generation would
# otherwise share the arrivals' line and slow every arrival's atomic; B_SPIN: nanoseconds a poller sleeps
# between polls (0: none), a setting read by each barrier
B_COUNT, B_GEN, B_ERR, B_SPIN = 0, 32, 64, 96
N_BAR = 128


def barrier_words(spin_ns: int) -> np.ndarray:
    bar = np.zeros(N_BAR, dtype=np.int32)
    bar[B_SPIN] = spin_ns
    return bar


@cuda.jit(device=True)
def _soft_sync(bar):
    """A grid barrier from atomics (the pattern of cooperative groups' own grid sync: fence, arrive, wait for
    the generation to flip, fence), for a grid whose blocks are all resident (sized by the occupancy query).
    Needs no cooperative launch and no libcudadevrt. A wait longer than SPIN_LIMIT polls (blocks not resident:
    it would never end) sets ``bar[B_ERR]`` and returns: the kernel then stops instead of hanging."""
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        nb = cuda.gridDim.x
        cuda.threadfence()
        gen = cuda.atomic.add(bar, B_GEN, 0)
        if cuda.atomic.add(bar, B_COUNT, 1) == nb - 1:
            cuda.atomic.exch(bar, B_COUNT, 0)
            cuda.threadfence()
            cuda.atomic.add(bar, B_GEN, 1)
        else:
            spins = 0
            nap = bar[B_SPIN]
            while cuda.atomic.add(bar, B_GEN, 0) == gen:
                spins += 1
                if spins > SPIN_LIMIT:
                    cuda.atomic.exch(bar, B_ERR, 1)
                    break
                if nap > 0:  # fewer polls of the line the last arrival must flip
                    cuda.nanosleep(nap)
        cuda.threadfence()
    cuda.syncthreads()


@cuda.jit(device=True)
def _lead_copy(rs, params, prop, rs_to, prm_to, prop_to):
    """The deciding thread's generator states, parameters and proposals, from one set of arrays to another
    (global -> its local copies before a sweep, and back after)."""
    for a in range(2):
        rs_to[a, 0] = rs[a, 0]
        rs_to[a, 1] = rs[a, 1]
        for q in range(4):
            prop_to[a, q] = prop[a, q]
    for q in range(N_PARAMS):
        prm_to[q] = params[q]


@cuda.jit(device=True)
def _cg_sync(bar):
    """Cooperative groups' grid barrier (a cooperative launch; numba-cuda links libcudadevrt for it)."""
    cuda.cg.this_grid().sync()


def _sweep_kernel(sync):
    """The one-launch sweep with the grid barrier ``sync`` (:func:`_soft_sync` or :func:`_cg_sync`): trees
    ``j0 .. j1 - 1`` (``t0``: trees processed before, for the buffer rows). The deciding thread (block 0,
    thread 0) draws tree ``j0``'s proposal; then per tree ``j``: a grid barrier, the row pass (blocks from
    ``first`` on), meanwhile the deciding thread draws tree ``j + 1``'s proposal, a grid barrier, the decision
    of tree ``j``. Stops (all threads, after a barrier) when an error word or the soft barrier's error is set.
    ``prefetch``: block 0 loads the deciding thread's node table and buffer row into L1 before each of its
    steps (:func:`_prefetch`; no change to any draw). The deciding thread keeps the random states, the
    parameters and the proposals' terms in its own (local) memory for the launch. ``probe > 0``: only that many
    barriers (the driver's check that the grid is resident)."""

    def k_sweep(codes, leaf, r, ints, lohi, cnt, val, log_avail, used, top, params, wsplit, words, floats, prop, rs,
                j0, j1, t0,
                first, bar, probe, prefetch):
        # one allocation a line: the simulator tells shared arrays apart by their source line
        sh = (cuda.shared.array(MAXN, float64),
              cuda.shared.array(1, float64),
              cuda.shared.array(SITE_LEN, int32),
              cuda.shared.array(SITE_LEN, int32),
              cuda.shared.array(SUBMAX, int32),
              cuda.shared.array(SUBMAX, float64),
              cuda.shared.array(N_SH_RNG, int32),
              cuda.local.array(NACC, float64),
              cuda.local.array(SUBMAX, int32),
              cuda.local.array(SUBMAX, float64))
        rs_l = cuda.local.array((2, 2), uint64)
        prm_l = cuda.local.array(N_PARAMS, float64)
        prop_l = cuda.local.array((2, 4), float64)
        if probe > 0:
            for _ in range(probe):
                sync(bar)
            return
        lead = cuda.blockIdx.x == 0 and cuda.threadIdx.x == 0
        t = t0
        if lead:
            _lead_copy(rs, params, prop, rs_l, prm_l, prop_l)
            if j0 < j1:
                c = t & 1
                _pre_tree(rs_l[0], ints, lohi, val, log_avail, used, top, j0, prm_l, wsplit, words[c], floats[c],
                          prop_l[c])
        for j in range(j0, j1):
            c = t & 1
            sync(bar)
            if words[0, layout.I_ERR] != 0 or words[1, layout.I_ERR] != 0 or bar[B_ERR] != 0:
                break
            _row_pass(codes, leaf, r, words[1 - c], floats[1 - c], words[c], floats[c], first, sh)
            if cuda.blockIdx.x == 0 and prefetch != 0 and j + 1 < j1:
                _prefetch(ints, lohi, cnt, val, log_avail, used, top, wsplit, j + 1, words[1 - c], floats[1 - c],
                          False, bar)
                cuda.syncthreads()
            if lead and j + 1 < j1:
                _pre_tree(rs_l[0], ints, lohi, val, log_avail, used, top, j + 1, prm_l, wsplit, words[1 - c],
                          floats[1 - c],
                          prop_l[1 - c])
            sync(bar)
            if bar[B_ERR] != 0:
                break
            if cuda.blockIdx.x == 0 and prefetch != 0:  # after the barrier's fence: the outputs are final
                _prefetch(ints, lohi, cnt, val, log_avail, used, top, wsplit, j, words[c], floats[c], True, bar)
                cuda.syncthreads()
            if lead:
                _post_tree(rs_l[1], ints, lohi, cnt, val, log_avail, used, top, j, prm_l, wsplit, words[c], floats[c],
                           prop_l[c])
            t += 1
        if lead:
            _lead_copy(rs_l, prm_l, prop_l, rs, params, prop)

    return k_sweep


k_sweep_soft = _sweep_kernel(_soft_sync)
k_sweep_cg = _sweep_kernel(_cg_sync)


def _capped(fn, regs):
    """``cuda.jit`` with at most ``regs`` registers a thread, or None where the option is not taken."""
    if numba.config.ENABLE_CUDASIM:
        return None
    try:
        return cuda.jit(max_registers=regs)(fn)
    except Exception:  # noqa: BLE001
        return None


# Uncapped, a sweep kernel takes ~158 registers a thread (the decisions' peak, run by one thread), which
# leaves one 256-thread block per multiprocessor for the row pass; capped at 80, three fit (ptxas spills in
# the decisions' part). The driver tries the capped kernels first, then the plain ones.
SWEEP_KERNELS = {"soft-capped": _capped(k_sweep_soft, 80), "soft": cuda.jit(k_sweep_soft),
                 "cg-capped": _capped(k_sweep_cg, 80), "cg": cuda.jit(k_sweep_cg)}
k_sweep_soft, k_sweep_cg = SWEEP_KERNELS["soft"], SWEEP_KERNELS["cg"]


@cuda.jit
def k_pass(codes, leaf, r, words, floats, cur, pend, first):
    """The row pass alone (the ``launch`` driver and the flush): pending change from buffer row ``pend``,
    tree from row ``cur``, rows on the blocks from ``first`` on."""
    sh = (cuda.shared.array(MAXN, float64),
          cuda.shared.array(1, float64),
          cuda.shared.array(SITE_LEN, int32),
          cuda.shared.array(SITE_LEN, int32),
          cuda.shared.array(SUBMAX, int32),
          cuda.shared.array(SUBMAX, float64),
          cuda.shared.array(N_SH_RNG, int32),
          cuda.local.array(NACC, float64),
          cuda.local.array(SUBMAX, int32),
          cuda.local.array(SUBMAX, float64))
    _row_pass(codes, leaf, r, words[pend], floats[pend], words[cur], floats[cur], first, sh)


@cuda.jit
def k_decide(ints, lohi, cnt, val, log_avail, used, top, params, wsplit, words, floats, prop, rs, j_post, c_post,
             j_pre, c_pre):
    """One thread: the decision of tree ``j_post`` (if >= 0; buffer row ``c_post``), then the proposal of tree
    ``j_pre`` (if >= 0; row ``c_pre``)."""
    if cuda.blockIdx.x == 0 and cuda.threadIdx.x == 0 and words[0, layout.I_ERR] == 0 and words[1, layout.I_ERR] == 0:
        if j_post >= 0:
            _post_tree(rs[1], ints, lohi, cnt, val, log_avail, used, top, j_post, params, wsplit, words[c_post],
                       floats[c_post],
                       prop[c_post])
        if j_pre >= 0:
            _pre_tree(rs[0], ints, lohi, val, log_avail, used, top, j_pre, params, wsplit, words[c_pre], floats[c_pre],
                      prop[c_pre])


@cuda.jit
def k_flush(words, floats, pend, stage):
    """Before (stage 0) and after (1) the pass that only applies the pending change of buffer row ``pend``."""
    if cuda.blockIdx.x == 0 and cuda.threadIdx.x == 0:
        if stage == 0:
            words[pend, layout.I_J] = -1
            words[pend, layout.I_KIND] = 0
            floats[pend, layout.F_SSR] = 0.0
        else:
            words[pend, layout.I_JP] = -1


@cuda.jit
def k_fit(leaf, val, out):
    """``out[i]``: the forest's fit at row ``i`` from the leaf slots (trees added in order from 0.0, as the CPU
    twin's ``tables.fit_from_slots`` and ``pmt.predict`` add them); the slots must be current (after a flush)."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    m = leaf.shape[0]
    n = leaf.shape[1]
    while i < n:
        s = 0.0
        for j in range(m):
            s += val[j, int32(leaf[j, i])]
        out[i] = s
        i += stride


@cuda.jit
def k_shift(r, dz):
    """``r += dz``: the residual follows pseudo-data that moved by ``dz``."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < r.shape[0]:
        r[i] = float64(r[i]) + dz[i]
        i += stride
