"""One chain of the GPU sweep: :class:`DeviceChain` holds one chain's state on the device (or, with
``backend="cpu"``, in the CPU twin's arrays), checks its options, and runs sweeps with the kernels of
:mod:`.kernels` (or :mod:`.twin`'s loop).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import cuda

from . import layout, tables, twin
from .kernels import B_ERR, N_BAR, SWEEP_KERNELS, barrier_words, k_decide, k_fit, k_flush, k_pass, k_shift
from .layout import F_SSR, I_ERR, I_J, I_JP, I_KIND, MAXN


def _sm_count() -> int:
    if numba.config.ENABLE_CUDASIM:
        return 1
    return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)


def _check_options(m, alpha, beta, sigma_mu, fixed_sigma2, split_weights, p, backend, dtype) -> None:
    """The sweep's options, refused by name before anything is allocated."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m (number of trees) must be an int >= 1, got {m!r}")
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not float(beta) >= 0.0:
        raise ValueError(f"beta must be >= 0, got {beta!r}")
    if sigma_mu is not None and not float(sigma_mu) > 0.0:
        raise ValueError(f"sigma_mu must be > 0, got {sigma_mu!r}")
    if fixed_sigma2 is not None and not (float(fixed_sigma2) > 0.0):
        raise ValueError(f"fixed_sigma2 must be > 0 (np.inf for a flat likelihood), got {fixed_sigma2!r}")
    if split_weights is not None:
        w = np.asarray(split_weights, dtype=np.float64)
        if w.shape != (p,) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"split_weights must be {p} finite non-negative weights, not all zero")
    if backend not in ("cuda", "cpu"):
        raise ValueError(f"backend must be 'cuda' or 'cpu', got {backend!r}")
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")


def _check_moves(move_probs, subtree_cap) -> np.ndarray:
    """``(grow, prune, change, swap)`` probabilities and the change/swap subtree cap, refused by name."""
    try:
        probs = np.asarray(move_probs, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"move_probs must be four numbers (grow, prune, change, swap), got {move_probs!r}") from err
    if (probs.shape != (4,) or not np.isfinite(probs).all() or (probs < 0).any() or probs[0] <= 0
            or probs[1] <= 0 or abs(probs.sum() - 1.0) > 1e-9):
        raise ValueError(f"move_probs must be four non-negative numbers (grow, prune, change, swap) summing to 1, "
                         f"grow and prune > 0; got {move_probs!r}")
    if (isinstance(subtree_cap, bool) or not isinstance(subtree_cap, (int, np.integer))
            or not 3 <= subtree_cap <= layout.SUBMAX):
        raise ValueError(f"subtree_cap (largest subtree a change/swap re-partitions) must be an int in "
                         f"3..{layout.SUBMAX}, got {subtree_cap!r}")
    return probs


class DeviceChain:
    """The Gaussian BART sweep on a CUDA device: one Metropolis-Hastings proposal per tree (grow/prune, or
    ``move_probs`` for CGM's grow, prune, change and swap), leaves from their Normal-Normal conditional, sigma^2
    by its conjugate inverse-gamma draw (or fixed).

    ``codes``: the split codes, ``(p, n)`` non-negative integers (``binning.bin_columns(X).codes``);
    ``y``: the response (n,). Priors as the package's (docs/design.md section 2): ``alpha``, ``beta``;
    leaves ``N(mu0, sigma_mu^2)`` (defaults ``mean(y) / m`` and ``(max y - min y) / (2 k sqrt(m))``);
    ``sigma2 ~ InvGamma(a0, b0)`` with ``sigma2_prior = (a0, b0)`` (``chipman_sigma2_prior`` gives it;
    from Chipman's ``(nu, lam)``: ``(nu / 2, nu * lam / 2)``); ``fixed_sigma2``: keep sigma^2 at this
    value instead. ``rng``: a seed or ``numpy.random.Generator`` (it seeds the chain's xoroshiro128+ stream).
    ``dtype``: of the residual on the device (float32 halves its traffic; sums are float64). ``resync``: every
    this many sweeps the residual is recomputed as ``y - fit`` in float64 (:meth:`resynchronise`), so the rounding
    of the running float32 residual does not add up over a long chain; default 50 with float32, 0 (never) with
    float64.
    ``backend="cpu"`` runs the CPU twin (the same decision code, the CPU row pass; no device).
    ``mode``: ``"coop"``, ``"launch"`` or None (coop where the device allows it, else launch; ``mode_note``
    says why); ``barrier``: the coop driver's grid barrier tried first, ``"soft"`` (atomics, any launch) or
    ``"cg"`` (cooperative groups: a cooperative launch, libcudadevrt). ``rows_per_thread``: the grid is sized
    so each thread has at least this many rows; ``blocks`` caps the grid (fewer blocks: a cheaper grid
    barrier). ``prefetch``: block 0's idle threads load the deciding thread's node table into L1 before each
    decision (a performance hint only, the draws are the same). ``move_probs``: the probabilities of proposing a
    grow, prune, change and swap (default grow/prune only; ``CGMStep``'s are ``(0.25, 0.25, 0.4, 0.1)``);
    ``subtree_cap``: a change/swap above a subtree of more nodes leaves the tree as it is (3 to ``layout.SUBMAX``,
    the most the pass scores; exact for any value, tests use small ones). ``spin_ns``: the soft grid barrier's
    pollers sleep this long between polls (0: they poll without pause; a performance setting, the same draws).

    Per draw :meth:`sweep` returns sigma^2; :attr:`state` the node tables (copied from the device when
    stale), :meth:`encode` the stored forest format (``thresholds`` needed), :meth:`row_leaves` the leaf slot
    of every row per tree. Bad options raise a ValueError naming the argument.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0, 1, 2, 2]])
    >>> g = DeviceChain(codes, np.array([0.0, 0.1, 1.0, 1.1]), m=2, rng=0, backend="cpu")  # the CPU twin
    >>> sigma2 = g.sweep()
    >>> g.fit().shape
    (4,)
    >>> cgm = DeviceChain(codes, np.array([0.0, 0.1, 1.0, 1.1]), m=2, rng=0, backend="cpu",
    ...                    move_probs=(0.25, 0.25, 0.4, 0.1))  # CGMStep's moves
    >>> cgm.sweep() > 0.0
    True
    """

    def __init__(self, codes, y, m=200, alpha=0.95, beta=2.0, mu0=None, sigma_mu=None, k=2.0, sigma2_prior=None,
                 sigma2=None, fixed_sigma2=None, split_weights=None, rng=None, dtype=np.float32, thresholds=None,
                 threads_per_block=256, blocks=None, backend="cuda", mode=None, rows_per_thread=8,
                 barrier="soft", prefetch=True, resync=None, move_probs=(0.5, 0.5, 0.0, 0.0),
                 subtree_cap=layout.SUBMAX, spin_ns=0):
        codes = np.ascontiguousarray(codes)
        if codes.ndim != 2 or not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0:
            raise ValueError("codes must be a (p, n) array of non-negative integers")
        p, n = codes.shape
        if p > layout.PMAX:
            raise ValueError(f"at most {layout.PMAX} split columns on the GPU sweep, got {p}")
        y = np.asarray(y, dtype=np.float64)
        if y.shape != (n,) or not np.isfinite(y).all():
            raise ValueError(f"y must be finite with shape ({n},)")
        _check_options(m, alpha, beta, sigma_mu, fixed_sigma2, split_weights, p, backend, dtype)
        move_probs = _check_moves(move_probs, subtree_cap)
        if isinstance(spin_ns, bool) or not isinstance(spin_ns, (int, np.integer)) or not 0 <= spin_ns <= 10**6:
            raise ValueError(f"spin_ns (nanoseconds between a grid barrier's polls) must be an int in 0..10^6, "
                             f"got {spin_ns!r}")
        if resync is None:
            resync = 50 if np.dtype(dtype) == np.float32 else 0
        if isinstance(resync, bool) or not isinstance(resync, (int, np.integer)) or resync < 0:
            raise ValueError(f"resync (sweeps between recomputing the residual; 0: never) must be an int >= 0, "
                             f"got {resync!r}")
        self.resync = int(resync)
        self.y_now = y.copy()  # the response the residual is of (moved by shift_residual)
        self.n, self.p, self.m = n, p, int(m)
        self.codes_host = codes.astype(np.uint8 if codes.max() < 256 else np.uint16)
        self.rng = np.random.default_rng(rng)
        if mu0 is None:
            mu0 = float(y.mean()) / m
        if sigma_mu is None:
            sigma_mu = float(y.max() - y.min()) / (2 * k * math.sqrt(m))
        self.fixed = fixed_sigma2 is not None
        if sigma2_prior is None:
            sigma2_prior = (1.5, 1.5 * float(np.var(y)) * 0.1)  # only a fallback; pass chipman_sigma2_prior's
        s2 = fixed_sigma2 if self.fixed else (sigma2 if sigma2 is not None else float(np.var(y)))
        params = np.zeros(layout.N_PARAMS)
        params[layout.P_ALPHA], params[layout.P_BETA] = alpha, beta
        params[layout.P_MU0], params[layout.P_S2MU] = mu0, sigma_mu**2
        params[layout.P_SIGMA2] = s2
        layout.move_params(params, move_probs, subtree_cap)
        params[layout.P_A0], params[layout.P_B0] = sigma2_prior
        params[layout.P_N], params[layout.P_FIXED] = n, float(self.fixed)
        self.params = params
        self.wsplit = np.ones(p) if split_weights is None else np.asarray(split_weights, dtype=np.float64)
        self.thresholds = thresholds
        self._state = layout.new_state(self.m, p)
        value = mu0  # every tree starts as one leaf at the prior mean
        root_lo = self.codes_host.min(axis=1).astype(np.int64)
        root_hi = self.codes_host.max(axis=1).astype(np.int64)
        tables.init_state(*self._state, root_lo, root_hi, n, value, self.wsplit)
        self.rs = layout.seed_state(self.rng)
        self.words, self.floats, self.prop = layout.new_buffers(p)
        self.tick = np.zeros(1, dtype=np.int64)  # trees processed (their buffer rows alternate)
        self._sig = np.zeros(1)
        self.r_dtype = np.dtype(dtype)
        r0 = (y - m * value).astype(dtype)
        leaf0 = np.zeros((self.m, n), dtype=np.uint8)
        self.backend = backend
        self.prefetch = bool(prefetch)
        self.spin_ns = int(spin_ns)
        self._stale = False
        self._soft = False
        self.mode, self.mode_note, self.kernel = "cpu", "", ""
        if backend == "cuda":
            self._init_device(leaf0, r0, threads_per_block, blocks, mode, rows_per_thread, barrier)
        elif backend == "cpu":
            self.codes, self.leaf, self.r = self.codes_host, leaf0, r0
        else:
            raise ValueError(f"backend must be 'cuda' or 'cpu', got {backend!r}")
        self.n_sweeps = 0

    # ---------------------------------------------------------------------------------------------
    def _init_device(self, leaf0, r0, tpb, blocks, mode, rows_per_thread, barrier):
        s = self.stream = cuda.stream()
        self.d_codes = cuda.to_device(self.codes_host, stream=s)
        self.d_leaf = cuda.to_device(leaf0, stream=s)
        self.d_r = cuda.to_device(r0, stream=s)
        self.d_state = tuple(cuda.to_device(a, stream=s) for a in self._state)
        self.d_params = cuda.to_device(self.params, stream=s)
        self.d_wsplit = cuda.to_device(self.wsplit, stream=s)
        self.d_words = cuda.to_device(self.words, stream=s)
        self.d_floats = cuda.to_device(self.floats, stream=s)
        self.d_prop = cuda.to_device(self.prop, stream=s)
        self.d_rs = cuda.to_device(self.rs, stream=s)
        self.h_params = cuda.pinned_array(layout.N_PARAMS, dtype=np.float64)
        self.h_words = cuda.pinned_array((2, layout.n_words(self.p)), dtype=np.int32)
        s.synchronize()
        sim = bool(numba.config.ENABLE_CUDASIM)
        if sim:
            tpb = min(tpb, 8)  # the simulator runs a Python thread per device thread
        want = max(1, math.ceil(self.n / (tpb * rows_per_thread)))
        self.tpb = tpb
        self.bar = cuda.to_device(barrier_words(self.spin_ns), stream=s)
        self.h_bar = cuda.pinned_array(N_BAR, dtype=np.int32)
        if mode in (None, "coop"):
            notes = []
            order = [k for k in SWEEP_KERNELS if k.startswith(barrier)] + [k for k in SWEEP_KERNELS
                                                                         if not k.startswith(barrier)]
            for name in order:
                kd = SWEEP_KERNELS[name]
                if kd is None:
                    continue
                soft = name.startswith("soft")
                try:
                    if sim:
                        nb = 1  # the simulator runs blocks one after the other: a grid barrier holds for one
                    else:
                        sig = tuple(numba.typeof(a) for a in self._sweep_args(0, 1))
                        kern = kd.compile(sig)
                        try:
                            nb = int(kern.max_cooperative_grid_blocks(tpb))  # occupancy x multiprocessors
                        except AttributeError:  # an API without it: one block per multiprocessor fits
                            nb = _sm_count()
                        if nb < 1:
                            raise RuntimeError("no resident blocks fit")
                    self.blocks = max(1, min(nb, want + 1 if blocks is None else blocks))
                    self.first = 1 if self.blocks > 1 else 0  # block 0 draws the next proposal, no rows
                    self._k_sweep = kd[self.blocks, tpb, s]
                    self._soft = soft
                    if not sim:  # a real launch proves the link (libcudadevrt for cg) and, soft, residency
                        self._k_sweep(*self._sweep_args(0, 0, probe=4 if soft else 0))
                        self.bar.copy_to_host(self.h_bar, stream=s)
                        s.synchronize()
                        if soft and self.h_bar[B_ERR] != 0:
                            self.bar.copy_to_device(barrier_words(self.spin_ns), stream=s)
                            s.synchronize()
                            raise RuntimeError("grid barrier timed out: blocks not all resident")
                    self.mode, self.kernel = "coop", name
                    break
                except Exception as e:  # noqa: BLE001 - the next candidate, then per-tree launches
                    notes.append(f"{name} sweep kernel refused: {type(e).__name__}: {str(e)[:200]}")
            self.mode_note = "; ".join(notes)
            if self.mode != "coop" and mode == "coop":
                raise RuntimeError(self.mode_note)
        if self.mode != "coop":
            if sim:
                self.blocks = 1 if blocks is None else blocks
            else:
                self.blocks = max(1, min(8 * _sm_count(), want)) if blocks is None else blocks
            self.first = 1 if self.blocks > 1 else 0  # the coop driver's row split (tested by the simulator)
            self._k_pass = k_pass[self.blocks, tpb, s]
            self._k_decide = k_decide[1, 1, s]
            self.mode, self.kernel = "launch", "pass+decide"

    def _sweep_args(self, j0, j1, probe=0):
        return (self.d_codes, self.d_leaf, self.d_r, *self.d_state, self.d_params, self.d_wsplit, self.d_words,
                self.d_floats,
                self.d_prop, self.d_rs, np.int64(j0), np.int64(j1), np.int64(self.tick[0]),
                np.int64(getattr(self, "first", 0)), self.bar, np.int64(probe), np.int64(self.prefetch))

    def _decide_args(self, j_post, c_post, j_pre, c_pre):
        return (*self.d_state, self.d_params, self.d_wsplit, self.d_words, self.d_floats, self.d_prop, self.d_rs,
                np.int64(j_post), np.int64(c_post), np.int64(j_pre), np.int64(c_pre))

    def sweep(self) -> float:
        """One sweep over the ``m`` trees (sigma^2 drawn at tree 0, given the residual the last sweep left);
        returns the sigma^2 the trees were drawn with."""
        if self.backend == "cpu":
            done = twin.sweeps(self.rs, 1, self.codes, self.leaf, self.r, *self._state, self.params, self.wsplit,
                                    self.words, self.floats, self.prop, self.tick, self._sig)
            if done != 1:
                self._raise_slots(self.words[:, layout.I_ERR].max())
            self._after_sweep()
            return float(self.params[layout.P_SIGMA2])
        s = self.stream
        if self.mode == "coop":
            self._k_sweep(*self._sweep_args(0, self.m))
            if self._soft:
                self.bar.copy_to_host(self.h_bar, stream=s)
        else:
            m = self.m
            t = int(self.tick[0])
            self._k_decide(*self._decide_args(-1, 0, 0, t & 1))
            for j in range(m):
                c = t & 1
                self._k_pass(self.d_codes, self.d_leaf, self.d_r, self.d_words, self.d_floats, np.int64(c),
                             np.int64(1 - c),
                             np.int64(self.first))
                self._k_decide(*self._decide_args(j, c, j + 1 if j + 1 < m else -1, 1 - c))
                t += 1
        self.tick[0] += self.m
        self.d_params.copy_to_host(self.h_params, stream=s)
        self.d_words.copy_to_host(self.h_words, stream=s)
        s.synchronize()
        self._stale = True
        if self.mode == "coop" and self._soft and self.h_bar[B_ERR] != 0:
            raise RuntimeError("the grid barrier timed out inside a sweep (blocks not all resident); this sweep "
                               "object is unusable now: make a new one with mode='launch'")
        if self.h_words[:, I_ERR].max() != 0:
            self._raise_slots(self.h_words[:, I_ERR].max())
        self._after_sweep()
        return float(self.h_params[layout.P_SIGMA2])

    def _after_sweep(self) -> None:
        self.n_sweeps += 1
        if self.resync and self.n_sweeps % self.resync == 0:
            self.resynchronise()

    def resynchronise(self) -> None:
        """Recompute the residual as ``y - fit`` (float64 on the host, stored in the residual's dtype): what the
        running residual is up to rounding, which a float32 residual would otherwise accumulate over a chain.
        The trees and their draws' law are untouched."""
        r = (self.y_now - self.fit_rows()).astype(self.r_dtype)
        if self.backend == "cpu":
            self.r[:] = r
            return
        self.d_r.copy_to_device(r, stream=self.stream)
        self.stream.synchronize()

    def _raise_slots(self, err):
        raise RuntimeError(f"tree {int(err) - 1} needs more than {MAXN} nodes (the GPU sweep's limit); "
                           "this sweep object is unusable now. Sample with backend='cpu' (no limit), or with more "
                           "trees (m), whose trees stay smaller")

    def flush(self):
        """Apply the last tree's pending change to the rows (a pass with no tree), so the residual is
        ``y - sum of the trees``; the next sweep then has nothing pending. Returns the residual sum of squares."""
        pend = int((self.tick[0] - 1) & 1)  # the row of the last tree processed (row 1 before any)
        if self.backend == "cpu":
            words, floats = self.words[pend], self.floats[pend]
            words[I_J] = -1
            words[I_KIND] = 0
            twin.row_pass_cpu(self.codes, self.leaf, self.r, words, floats, words, floats)
            words[I_JP] = -1
            return float(floats[F_SSR])
        s = self.stream
        k_flush[1, 1, s](self.d_words, self.d_floats, np.int64(pend), np.int64(0))
        k_pass[self.blocks, self.tpb, s](self.d_codes, self.d_leaf, self.d_r, self.d_words, self.d_floats,
                                         np.int64(pend),
                                         np.int64(pend), np.int64(self.first))
        k_flush[1, 1, s](self.d_words, self.d_floats, np.int64(pend), np.int64(1))
        floats = self.d_floats.copy_to_host(stream=s)
        s.synchronize()
        return float(floats[pend, F_SSR])

    def set_sigma2(self, sigma2: float) -> None:
        """The noise variance the next sweep draws the trees with (``fixed_sigma2`` mode: a PyMC step sets it
        from the model's point each draw)."""
        if not self.fixed:
            raise ValueError("set_sigma2 needs a sweep made with fixed_sigma2 (sigma^2 is drawn otherwise)")
        if not (np.isfinite(sigma2) and sigma2 > 0.0):
            raise ValueError(f"sigma^2 must be finite and positive, got {sigma2}")
        self.params[layout.P_SIGMA2] = sigma2
        if self.backend == "cuda":
            self.d_params.copy_to_device(self.params, stream=self.stream)

    def shift_residual(self, dz) -> None:
        """The response (pseudo-data) moved by ``dz`` (n,): the residual moves with it (a PyMC step whose
        Normal mean has other terms, e.g. an intercept, that changed since the last draw)."""
        dz = np.ascontiguousarray(dz, dtype=np.float64)
        if dz.shape != (self.n,):
            raise ValueError(f"dz must have shape ({self.n},)")
        self.y_now += dz
        if self.backend == "cpu":
            tables.shift_residual(self.r, dz)
            return
        k_shift[self.blocks, self.tpb, self.stream](self.d_r, cuda.to_device(dz, stream=self.stream))

    def fit_rows(self) -> np.ndarray:
        """The forest's fit at the training rows (float64, from the leaf slots and leaf values; flushes first).
        On the device it is summed there and is the only n-vector copied back; the returned array is reused by
        the next call."""
        self.flush()
        if self.backend == "cpu":
            out = np.empty(self.n)
            tables.fit_from_slots(self.leaf, self._state[3], out)
            return out
        s = self.stream
        if getattr(self, "d_fit", None) is None:
            self.d_fit = cuda.device_array(self.n, dtype=np.float64, stream=s)
            self.h_fit = cuda.pinned_array(self.n, dtype=np.float64)
        k_fit[self.blocks, self.tpb, s](self.d_leaf, self.d_state[3], self.d_fit)
        self.d_fit.copy_to_host(self.h_fit, stream=s)
        s.synchronize()
        return self.h_fit

    def tables(self):
        """``(ints, val, used)``: the node tables' structure, leaf values and slots in use, copied from the device
        (only these: not the code ranges), what a draw's forest encoding and stats need."""
        ints, val, used = self._state[0], self._state[3], self._state[5]
        if self.backend == "cuda":
            s = self.stream
            for i, h in ((0, ints), (3, val), (5, used)):
                self.d_state[i].copy_to_host(h, stream=s)
            s.synchronize()
        return ints, val, used

    def residual(self) -> np.ndarray:
        self.flush()
        if self.backend == "cpu":
            return self.r.astype(np.float64)
        return self.d_r.copy_to_host().astype(np.float64)

    # ---------------------------------------------------------------------------------------------
    @property
    def state(self):
        """The node tables ``(ints, lohi, cnt, val, log_avail, used, top)`` (host copies, refreshed from the device
        after a sweep)."""
        if self.backend == "cuda" and self._stale:
            for d, h in zip(self.d_state, self._state, strict=True):
                d.copy_to_host(h, stream=self.stream)
            self.stream.synchronize()
            self._stale = False
        return self._state

    def trees(self):
        """Copies of the node tables ``(ints, cnt, val, used)``."""
        ints, _, cnt, val, _, used, _ = self.state
        return ints.copy(), cnt.copy(), val.copy(), used.copy()

    def row_leaves(self, codes=None) -> np.ndarray:
        """``(m, n)`` leaf slot of every row in every tree (read from the node tables)."""
        codes = self.codes_host if codes is None else codes
        ints = self.state[0]
        out = np.empty((self.m, codes.shape[1]), dtype=np.int64)
        for j in range(self.m):
            tables.row_leaves(ints, j, codes, out[j])
        return out

    def fit(self) -> np.ndarray:
        """Sum of the trees at the training rows."""
        ints, val = self.state[0], self.state[3]
        out = np.zeros(self.n)
        leaves = np.empty(self.n, dtype=np.int64)
        for j in range(self.m):
            tables.row_leaves(ints, j, self.codes_host, leaves)
            out += val[j, leaves]
        return out

    def preorder(self):
        """``(counts, var, val)`` of the trees in preorder, split values as thresholds (or codes when the
        sweep has no ``thresholds``)."""
        ints, val, used = self.state[0], self.state[3], self.state[5]
        if self.thresholds is None:
            thr = np.tile(np.arange(65536, dtype=np.float64), (self.p, 1))
        else:
            width = max(1, max(len(t) for t in self.thresholds))
            thr = np.full((self.p, width), np.inf)
            for v, t in enumerate(self.thresholds):
                thr[v, : len(t)] = t
        total = int(used.sum())
        counts = np.empty(self.m, dtype=np.int32)
        var = np.empty(total, dtype=np.int32)
        vals = np.empty(total)
        tables.preorder(ints, val, thr, counts, var, vals)
        return counts, var, vals

    def encode(self) -> str:
        """This draw's forest in the package's stored format (``storage.encode_preorder``), readable by
        ``pmt.predict``; needs ``thresholds``."""
        if self.thresholds is None:
            raise ValueError("encode needs the thresholds of the binning")
        from ..results.storage import encode_preorder

        counts, var, vals = self.preorder()
        return encode_preorder(counts, var, vals, self.p)

    def device_bytes(self) -> int:
        """Bytes of the device state (codes, leaf slots, residual, node tables, buffers)."""
        if self.backend != "cuda":
            return 0
        arrs = (self.d_codes, self.d_leaf, self.d_r, *self.d_state, self.d_params, self.d_wsplit, self.d_words,
                self.d_floats,
                self.d_prop, self.d_rs, self.bar)
        return sum(a.nbytes for a in arrs)
