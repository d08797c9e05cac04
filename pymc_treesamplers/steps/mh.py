"""Metropolis-Hastings tree steps: grow/prune only, and the full CGM move set."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pymc.blocking import RaveledVars

from ..engine.updates.mh import new_mh_scratch
from .base import BaseTreeStep
from .gpu import DeviceSweep, _first_sum, check_backend


class _MHStep(BaseTreeStep):
    """The MH tree steps' common part: the move mixture's scratch, and the ``backend`` option (the sweep on the
    CPU kernels, or on the GPU, :mod:`.gpu`)."""

    move_probs: np.ndarray

    def __init__(self, vars=None, *, threads: int = 1, route: str = "auto", backend: str = "cpu",
                 warm_start: int = 0, model=None, initial_point=None, compile_kwargs=None, blocked=False, rng=None):
        self.backend = check_backend(backend, threads)
        if self.backend != "cpu" and warm_start:
            raise ValueError(f"warm_start is not available with backend={backend!r} (the grow-from-root sweep runs on "
                             "the CPU): use backend='cpu' or warm_start=0")
        self._device = None
        super().__init__(vars, threads=threads, route=route, warm_start=warm_start, model=model,
                         initial_point=initial_point, compile_kwargs=compile_kwargs, blocked=blocked, rng=rng)
        if self.backend != "cpu":
            self._device = DeviceSweep(self, self.backend)

    def _new_scratch(self, codes, m):
        return new_mh_scratch(self.move_probs, codes.shape[0], codes.shape[1], m)

    # backend="cuda": the sweep and its state live in self._device (steps/gpu.py); no CPU forest, no CPU kernels

    def _compile_kernels(self) -> None:
        if self.backend == "cpu":
            super()._compile_kernels()

    def _reset_forests(self) -> None:
        if self.backend == "cpu":
            super()._reset_forests()
            return
        self.forests = None  # the trees are on the device
        self.f = np.full((self.k, self.n), _first_sum(self.prior.mu0, self.m))
        self.fresh = True
        self.synced = False
        self._changed = np.zeros((self.k, self.m), dtype=np.bool_)
        self._split_counts = np.zeros(self.data.codes.shape[0], dtype=np.int64)
        if self._device is not None:
            self._device.reset()

    @property
    def trees(self) -> list | None:
        """As :attr:`BaseTreeStep.trees`; with a GPU backend always None (the forest lives on the device: a
        restored sampling state starts its chain again)."""
        return BaseTreeStep.trees.fget(self) if self.backend == "cpu" else None

    @trees.setter
    def trees(self, forests: list | None) -> None:
        if self.backend == "cpu":
            BaseTreeStep.trees.fset(self, forests)
        elif forests is not None:
            raise ValueError(f"backend={self.backend!r} keeps its forest on the device: a sampling state with "
                             "CPU forests cannot be restored into it")
        else:
            self._reset_forests()

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, list[dict[str, Any]]]:
        if self.backend == "cpu":
            return super().astep(q0)
        self._check_value(q0)
        self.fresh = False
        fit, values, changed = self._device.draw(self)
        self.f[0] = fit
        self._changed[0] = changed
        self.synced = True
        values["accept"] = float(changed.mean())
        stats = {"tune": self.tune, "warning": self._watch(np.zeros(2, dtype=np.int64)),
                 **{self._stat_names[k]: v for k, v in values.items()}}
        return RaveledVars(self.f.ravel().astype(q0.data.dtype), q0.point_map_info), [stats]




class GrowPruneStep(_MHStep):
    """Grow/prune Metropolis-Hastings on every tree per draw (the move set of BART, dbarts, stochtree).

    Exact, but it cannot change a split without first pruning it away, which can take
    exponentially long when the data support the split (prefer :class:`CGMStep`).

    Parameters
    ----------
    vars : list of one BART variable, optional
        Defaults to the model's BART variable.
    threads : int, default 1
        Threads for the passes over rows of a long data set (docs/scale.md); draws are the same for
        any value. Keep ``threads`` x chains run in parallel within the machine's cores.
    route : {"auto", "expand"}, default "auto"
        How a likelihood that is not Gaussian in the BART value is handled (docs/likelihoods.md).
        ``"auto"``: exact data augmentation for Bernoulli/Binomial (logit: Polya-Gamma, probit: Albert-Chib)
        and Student-t, exact leaf sums with Laplace leaves for Poisson, negative binomial, Gamma and a log
        sd; ``"expand"``: a Gaussian expansion at the other trees' fit, Metropolis-Hastings corrected, for
        every family. Both are exact.
    backend : {"cpu", "cuda", "cuda-twin"}, default "cpu"
        Where the sweep runs. ``"cuda"``: on one NVIDIA GPU (``pip install 'pymc-treesamplers[gpu]'``,
        docs/gpu.md), the rows and trees kept on the device across draws; only the exact Gaussian route (a
        Normal likelihood whose mean is affine in the BART value, one sigma for all rows; sigma keeps its own
        step), a BART vector, at most 32 split columns, no ``split_prior``, ``threads=1``; anything else is
        refused when the step is built. The same posterior, priors, split coding and stored forests as
        ``"cpu"`` (a different random stream). ``"cuda-twin"``: the GPU sweep's CPU twin (the device's
        decision code and random stream on the CPU, one thread; the draws of ``"cuda"``), for tests.
    warm_start : int, default 0
        Grow-from-root sweeps (XBART; docs/mixing.md) at the start of each chain, in place of this step's
        first ``warm_start`` tuning sweeps: every tree is regrown from its root, each split drawn by its local
        posterior, so the chain starts near the data. They run only while tuning (never more than ``tune``
        of them) and no kept draw comes from them; the ``<var>_warm`` stat marks them.
    model, initial_point, compile_kwargs, blocked, rng
        As for PyMC's own step methods.

    Examples
    --------
    >>> # idata = pm.sample(step=[pmt.GrowPruneStep([mu])])
    >>> # idata = pm.sample(step=[pmt.GrowPruneStep([mu], backend="cuda"), pmt.NormalScaleGibbs([sigma])])
    """

    name = "growprune"

    def __init__(self, vars=None, *, threads: int = 1, route: str = "auto", backend: str = "cpu",
                 warm_start: int = 0, model=None, initial_point=None, compile_kwargs=None, blocked=False, rng=None):
        self.move_probs = np.array([0.5, 0.5, 0.0, 0.0])
        super().__init__(vars, threads=threads, route=route, backend=backend, warm_start=warm_start, model=model,
                         initial_point=initial_point, compile_kwargs=compile_kwargs, blocked=blocked, rng=rng)

class CGMStep(_MHStep):
    """Chipman-George-McCulloch Metropolis-Hastings: grow, prune, change and swap moves.

    The default step of a BART variable in ``pm.sample``.

    Parameters
    ----------
    vars : list of one BART variable, optional
        Defaults to the model's BART variable.
    move_probs : sequence of 4 floats, default (0.25, 0.25, 0.40, 0.10)
        Probabilities of proposing a grow, prune, change and swap. Grow and prune must be
        positive (they are each other's reverse); the four must sum to 1.
    threads : int, default 1
        Threads for the passes over rows of a long data set (docs/scale.md); draws are the same for
        any value. Keep ``threads`` x chains run in parallel within the machine's cores.
    route : {"auto", "expand"}, default "auto"
        How a likelihood that is not Gaussian in the BART value is handled (docs/likelihoods.md).
        ``"auto"``: exact data augmentation for Bernoulli/Binomial (logit: Polya-Gamma, probit: Albert-Chib)
        and Student-t, exact leaf sums with Laplace leaves for Poisson, negative binomial, Gamma and a log
        sd; ``"expand"``: a Gaussian expansion at the other trees' fit, Metropolis-Hastings corrected, for
        every family. Both are exact.
    backend : {"cpu", "cuda", "cuda-twin"}, default "cpu"
        Where the sweep runs, as for :class:`GrowPruneStep` (docs/gpu.md): ``"cuda"`` runs these four moves on
        one NVIDIA GPU, with the same refusals. On the GPU a change or swap above a subtree of more than 31
        nodes leaves the tree as it is (exact: the moves keep the tree's shape, so the restriction is
        symmetric).
    warm_start : int, default 0
        Grow-from-root sweeps (XBART; docs/mixing.md) at the start of each chain, in place of this step's
        first ``warm_start`` tuning sweeps: every tree is regrown from its root, each split drawn by its local
        posterior, so the chain starts near the data. They run only while tuning (never more than ``tune``
        of them) and no kept draw comes from them; the ``<var>_warm`` stat marks them.
    model, initial_point, compile_kwargs, blocked, rng
        As for PyMC's own step methods.

    Examples
    --------
    >>> # idata = pm.sample(step=[pmt.CGMStep([mu], move_probs=(0.3, 0.3, 0.3, 0.1))])
    >>> # idata = pm.sample(step=[pmt.CGMStep([mu], backend="cuda"), pmt.NormalScaleGibbs([sigma])])
    """

    name = "cgm"

    def __init__(
        self,
        vars=None,
        *,
        move_probs: Sequence[float] = (0.25, 0.25, 0.40, 0.10),
        model=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=False,
        rng=None,
        threads: int = 1,
        route: str = "auto",
        backend: str = "cpu",
        warm_start: int = 0,
    ):
        try:
            probs = np.asarray(move_probs, dtype=float)
        except (TypeError, ValueError) as err:
            raise TypeError(f"move_probs must be four numbers, got {move_probs!r}") from err
        if probs.shape != (4,) or not np.isfinite(probs).all() or (probs < 0).any():
            raise ValueError(f"move_probs must be four non-negative numbers (grow, prune, change, swap), got {probs}")
        if probs[0] <= 0 or probs[1] <= 0:
            raise ValueError("move_probs: grow and prune probabilities must both be > 0")
        if abs(probs.sum() - 1.0) > 1e-9:
            raise ValueError(f"move_probs must sum to 1, got {probs.sum()}")
        self.move_probs = probs
        super().__init__(vars, threads=threads, route=route, backend=backend, warm_start=warm_start, model=model,
                         initial_point=initial_point, compile_kwargs=compile_kwargs, blocked=blocked, rng=rng)
