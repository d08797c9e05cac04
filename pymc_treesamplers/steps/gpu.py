"""The GPU backend of the MH tree steps, :class:`~pymc_treesamplers.steps.mh.GrowPruneStep` and
:class:`~pymc_treesamplers.steps.mh.CGMStep` (``backend="cuda"``, issue 32 item 2): the exact Gaussian sweep of
:mod:`pymc_treesamplers.gpu` with the step's move probabilities, its state kept on the device across draws
(docs/gpu.md).

Each draw, :meth:`GPUSweeper.draw` (the step's :class:`~.sweeper.Sweeper`, as :class:`~.cpu.CPUSweeper` is on the
CPU):

1. asks the step's working model for the exact Gaussian pseudo-data at the current BART value (those the
   CPU step's ``sweep_input`` makes its residual of): ``z`` and one weight ``w = 1 / sigma^2`` for every row;
   sigma^2 comes from the model's point, so the noise scale keeps its own step (``NormalScaleGibbs`` or NUTS);
2. sets that sigma^2 on the device (the sweep's fixed-sigma mode), and, when the pseudo-data moved (another term
   of the Normal mean, e.g. an intercept, changed), moves the device residual by ``dz`` (the one upload);
3. runs one sweep over the ``m`` trees on the device;
4. brings back the fit at the training rows (summed on the device from the leaf slots, the BART value PyMC
   needs) and the node tables' structure and leaf values, from which the host writes the stored forest (the
   CPU steps' ``<name>_forest`` format, split columns mapped as theirs) and the other stats.

``backend="cuda-twin"`` runs the same chain on the CPU (the GPU sweep's CPU twin: the device's decision code,
a single-threaded row pass); it needs no GPU and gives the device's draws, for tests.

What the GPU sweep does not do is refused when the step is built (:func:`check_backend`,
:meth:`GPUSweeper.check`), with the argument it is about.
"""

from __future__ import annotations

import math

import numpy as np

from ..results.storage import encode_preorder
from ..routes.gaussian import GaussianWorkingModel
from .output import OutputDraw
from .sweeper import Draw, SweptStep

BACKENDS = ("cpu", "cuda", "cuda-twin")
INSTALL = "pip install 'pymc-treesamplers[gpu]' (numba-cuda) on a machine with an NVIDIA GPU and its driver"
# pseudo-data that moved by less than this (relative to their size) did not move: z is recomputed from the
# gradient each draw, and its rounding alone must not cost an upload
Z_RTOL = 1e-12


def check_backend(backend, threads) -> str:
    """The ``backend`` option of a tree step, checked before anything is built: ``"cpu"`` (the package's
    kernels), ``"cuda"`` (the GPU sweep; numba-cuda and a device, or numba's CUDA simulator) or
    ``"cuda-twin"`` (the GPU sweep's CPU twin)."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "cpu":
        return backend
    if threads != 1:
        raise ValueError(f"threads={threads!r} sets the CPU threads of backend='cpu'; backend={backend!r} runs "
                         "the passes over rows on the GPU: leave threads at 1")
    if backend == "cuda":
        require_cuda()
    return backend


def require_cuda() -> None:
    """numba-cuda and a CUDA device (or ``NUMBA_ENABLE_CUDASIM=1``, numba's simulator: slow, for tests), else an
    error that says how to get them."""
    try:
        import numba
        from numba import cuda
    except ImportError as err:
        raise ImportError(f"backend='cuda' needs numba-cuda: {INSTALL}. Or use backend='cpu'.") from err
    if numba.config.ENABLE_CUDASIM:
        return
    try:
        ok = bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver install reads as no device
        ok = False
    if not ok:
        raise RuntimeError(
            "backend='cuda' found no usable CUDA device (numba.cuda.is_available() is False: no NVIDIA GPU, "
            f"driver or CUDA toolkit visible to numba-cuda). Install the GPU extra: {INSTALL}; check "
            "`python -c 'from numba import cuda; cuda.detect()'`. Without a GPU use backend='cpu' "
            "(NUMBA_ENABLE_CUDASIM=1 runs numba's CUDA simulator instead: exact but very slow, for tests).")


def _first_sum(mu0: float, m: int) -> float:
    """``m`` single-leaf trees at ``mu0`` added in order from 0.0 (as the fit is summed)."""
    s = 0.0
    for _ in range(m):
        s += mu0
    return s


class GPUSweeper:
    """The device side of one ``GrowPruneStep(backend="cuda")`` or ``CGMStep(backend="cuda")``: the checks, the
    per-chain sweep object (:class:`~pymc_treesamplers.gpu.device_chain.DeviceChain`, made at a chain's first draw with
    the chain's generator and the step's move probabilities) and the per-draw exchange (module docstring)."""

    def __init__(self, step, backend: str):
        self.backend = backend
        self.check(step)
        self.wsplit = np.array(step.data.wsplit, dtype=np.float64)  # the CPU step's column weights
        self.reset()

    # ------------------------------------------------------------------------------------------ checks
    def check(self, step) -> None:
        """Refuse, before sampling, what the GPU sweep cannot sample exactly."""
        from ..gpu.layout import PMAX

        b = f"backend={self.backend!r}"
        name = step.var_name
        if step.outputs[0].term is not None or step.lines is not None:
            raise ValueError(f"{b}: the leaves of {name!r} hold coefficient vectors on a basis; the GPU sweep has "
                             "constant leaves only: use backend='cpu'")
        if step.k != 1:
            raise ValueError(f"{b}: the BART variable {name!r} has {step.k} outputs (shape=({step.k}, n)); the GPU "
                             "sweep samples a BART vector (one output): use backend='cpu'")
        working = step.outputs[0].working
        if not isinstance(working, GaussianWorkingModel) or working.flat:
            what = ("no likelihood term" if getattr(working, "flat", False)
                    else getattr(working, "family", type(working).__name__))
            raise ValueError(
                f"{b} samples only the exact Gaussian route: a Normal likelihood whose mean is affine in the BART "
                f"value (mu + a, or a + b * mu) with one sigma for every row; the likelihood of {name!r} is {what}. "
                "Use backend='cpu' (every route)")
        if step.sparse is not None:
            raise ValueError(f"{b}: split_prior with a Dirichlet prior (DART, the BART variable {name!r}) is not on "
                             "the GPU sweep (its split weights are fixed): use backend='cpu'")
        ratio = step.data.wsplit / step.columns.column_weights(np.ones(step.p))
        if not np.allclose(ratio, ratio[0], rtol=1e-12, atol=0.0):
            raise ValueError(f"{b}: split_prior (non-uniform split weights of the BART variable {name!r}) is not "
                             "supported by the GPU sweep: use backend='cpu'")
        p_cols = step.data.codes.shape[0]
        if p_cols > PMAX:
            extra = p_cols - step.p
            more = f" ({step.p} covariates and {extra} more split columns for missing values or categories)" if extra \
                else ""
            raise ValueError(f"{b}: X of the BART variable {name!r} has {p_cols} split columns{more}; the GPU sweep "
                             f"handles at most {PMAX}: use backend='cpu'")
        self.sigma2(np.asarray(step.outputs[0].working(step.f[0])[1], dtype=np.float64), step.var_name)

    def sigma2(self, w: np.ndarray, name: str) -> float:
        """The one noise variance of the pseudo-data's weights ``w`` (refused if the rows differ)."""
        w0 = float(w[0]) if w.size else 0.0
        lo, hi = (float(w.min()), float(w.max())) if w.size else (0.0, 0.0)
        if not (w0 > 0.0 and np.isfinite(w0)) or max(hi - w0, w0 - lo) > 1e-12 * w0:
            raise ValueError(
                f"backend={self.backend!r}: the Normal likelihood of {name!r} must have one sigma (and one slope of "
                "the mean in the BART value) for every row: the GPU sweep has a single noise variance. Per-row "
                f"weights are not supported (here from {lo:.3g} to {hi:.3g}): use "
                "backend='cpu'")
        return 1.0 / w0

    # ------------------------------------------------------------------------------------------ chain
    # the step's Sweeper: the forest lives on the device, so the sampling state holds no trees and a restored state
    # starts its chain again
    def compile(self, step) -> None:
        """Nothing to compile before sampling: the device kernels compile at a chain's first draw."""

    def start(self, step) -> None:
        """A new chain: the single-leaf trees' fit; the sweep object is made again at its first draw."""
        step.f[:] = _first_sum(step.prior.mu0, step.m)
        self.reset()

    def reset(self) -> None:
        self.sweep = None
        self.z = None
        self.prev = None

    def arrived(self, step) -> bool:
        """In a new process the device state is gone (it does not pickle): the chain starts again."""
        self.start(step)
        return True

    def trees(self, step) -> None:
        return None

    def restore(self, step, forests) -> bool:
        if forests is not None:
            raise ValueError(f"backend={self.backend!r} keeps its forest on the device: a sampling state with "
                             "CPU forests cannot be restored into it")
        self.start(step)
        return True

    def __getstate__(self):
        # a worker process starts its own chain: device arrays do not travel
        state = self.__dict__.copy()
        state.update(sweep=None, z=None, prev=None)
        return state

    def _start(self, step, z: np.ndarray, s2: float) -> None:
        from ..gpu.device_chain import DeviceChain

        prior = step.prior
        self.sweep = DeviceChain(step.data.codes, z, m=step.m, alpha=prior.alpha, beta=prior.beta, mu0=prior.mu0,
                                  sigma_mu=math.sqrt(prior.s2), fixed_sigma2=s2, split_weights=self.wsplit,
                                  rng=step.rng, dtype=np.float64, move_probs=step.move_probs,
                                  backend="cuda" if self.backend == "cuda" else "cpu")
        self.z = z
        ints, _, used = self.sweep.tables()
        self.prev = (ints.copy(), used.copy())

    # ------------------------------------------------------------------------------------------ draw
    def draw(self, step: SweptStep, warm: bool = False) -> Draw:
        """One sweep at the step's current BART value and the model's point: the fit into ``step.f``, and what the
        step makes the draw's stats of, as the CPU sweeper's (the exact Gaussian route: no likelihood correction)."""
        from ..gpu import layout, tables
        from ..gpu.tables import moved_by

        # the pseudo-data themselves (the CPU step's sweep_input makes the residual z - f of them, which the
        # device keeps on its own)
        z, w = step.outputs[0].working(step.f[0])
        z = np.asarray(z, dtype=np.float64)
        s2 = self.sigma2(np.asarray(w, dtype=np.float64), step.var_name)
        if self.sweep is None:
            self._start(step, z, s2)
        else:
            self.sweep.set_sigma2(s2)
            d, size = moved_by(z, self.z)
            if d > Z_RTOL * (1.0 + size):
                self.sweep.shift_residual(z - self.z)
                self.z = z
        self.sweep.sweep()
        step.f[0] = self.sweep.fit_rows()
        ints, val, used = self.sweep.tables()
        changed = (ints != self.prev[0]).any(axis=(1, 2)) | (used != self.prev[1]).any(axis=1)
        self.prev[0][:] = ints
        self.prev[1][:] = used
        live = used != 0
        leaf = live & (ints[..., layout.LEFT] < 0)
        split = live & ~leaf
        depth = np.where(leaf, ints[..., layout.DEPTH], 0).max(axis=1)
        per_column = np.bincount(ints[..., layout.VAR][split], minlength=step.data.codes.shape[0])
        counts = np.empty(step.m, dtype=np.int32)
        total = int(live.sum())
        var = np.empty(total, dtype=np.int32)
        vals = np.empty(total)
        tables.preorder(ints, val, step.thr_table, counts, var, vals)
        var[var >= 0] = step.columns.trace_var[var[var >= 0]]
        one = OutputDraw(changed, float(depth.mean()), float(leaf.sum(axis=1).mean()), per_column, None, {})
        return Draw([one], encode_preorder(counts, var, vals, step.p))
