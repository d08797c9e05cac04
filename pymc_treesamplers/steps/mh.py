"""Metropolis-Hastings tree steps: grow/prune only, and the full CGM move set."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..engine import new_mh_scratch, new_monotone_scratch
from .base import BaseTreeStep
from .gpu import GPUSweeper, check_backend
from .options import tree_step


class _MHStep(BaseTreeStep):
    """The MH tree steps' common part: the move mixture's scratch, and the ``backend`` option (where the sweeps
    run: the CPU kernels, or the GPU's :class:`~.gpu.GPUSweeper`)."""

    move_probs: np.ndarray

    def __init__(self, vars=None, *, twigs: float = 0.0, aimed_twigs: float = 0.0, backend: str = "cpu", **shared):
        self.twigs = check_twigs(twigs)
        self.aimed_twigs = check_twigs(aimed_twigs, "aimed_twigs")
        if self.twigs + self.aimed_twigs >= 1.0:
            raise ValueError(f"twigs + aimed_twigs must be below 1 (the other moves take the rest), got "
                             f"{self.twigs} + {self.aimed_twigs}")
        self.backend = check_backend(backend, shared.get("threads", 1))
        if self.backend != "cpu" and shared.get("warm_start", 0):
            raise ValueError(f"warm_start is not available with backend={backend!r} (the grow-from-root sweep runs on "
                             "the CPU): use backend='cpu' or warm_start=0")
        if self.backend != "cpu" and (self.twigs or self.aimed_twigs):
            raise ValueError(f"twigs and aimed_twigs are not available with backend={backend!r} (the GPU sweep has "
                             "grow, prune, change and swap only): use backend='cpu' or twigs=0, aimed_twigs=0")
        super().__init__(vars, **shared)

    supports_monotone = True

    def _monotone_dirs(self, op):
        dirs = super()._monotone_dirs(op)
        if dirs is not None:
            if self.twigs or self.aimed_twigs:
                raise ValueError(f"{type(self).__name__}: twigs and aimed_twigs are not available with monotone "
                                 "constraints (the monotone update has grow, prune, change and swap): use twigs=0, "
                                 "aimed_twigs=0")
            if self.backend != "cpu":
                raise ValueError(f"monotone constraints are sampled on the CPU: use backend='cpu', not "
                                 f"{self.backend!r}")
            if self.options.warm_start:
                raise ValueError("warm_start is not available with monotone constraints (the grow-from-root sweeps "
                                 "draw trees that need not be monotone): use warm_start=0")
        return dirs

    def new_scratch(self, codes, m):
        if self.dirs is not None:
            return new_monotone_scratch(self.move_probs, self.dirs, codes.shape[1], m)
        return new_mh_scratch(twig_mixture(self.move_probs, self.twigs, self.aimed_twigs), codes.shape[0],
                              codes.shape[1], m)

    def _new_sweeper(self):
        return super()._new_sweeper() if self.backend == "cpu" else GPUSweeper(self, self.backend)

    @property
    def _device(self) -> GPUSweeper | None:
        """The GPU sweep (``backend="cuda"`` or ``"cuda-twin"``), else None."""
        return None if self.backend == "cpu" else self.sweeper


def check_twigs(twigs, name: str = "twigs") -> float:
    """``twigs``, the probability of proposing a twig move, as a float in [0, 1) (a ``TypeError`` or ``ValueError``
    naming the option ``name`` otherwise).

    >>> check_twigs(0.2)
    0.2
    """
    if isinstance(twigs, bool) or not isinstance(twigs, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number (the probability of proposing a twig move), got {twigs!r}")
    if not 0.0 <= twigs < 1.0:
        raise ValueError(f"{name} must be in [0, 1) (the probability of proposing a twig move), got {twigs!r}")
    return float(twigs)


def twig_mixture(move_probs, twigs: float, aimed_twigs: float = 0.0) -> np.ndarray:
    """The eight move probabilities (grow, prune, change, swap, attach, detach, aimed attach, aimed detach):
    ``move_probs`` scaled by ``1 - twigs - aimed_twigs``, ``twigs`` shared by attach and detach, ``aimed_twigs`` by
    their aimed versions. With both 0 the first four are ``move_probs`` exactly.

    >>> twig_mixture([0.5, 0.5, 0.0, 0.0], 0.2).tolist()
    [0.4, 0.4, 0.0, 0.0, 0.1, 0.1, 0.0, 0.0]
    """
    # with both 0 the scale is exactly 1.0, and x * 1.0 is x: the four probabilities, and so the draws, unchanged
    probs = np.asarray(move_probs, dtype=float) * (1.0 - twigs - aimed_twigs)
    return np.concatenate([probs, [twigs / 2, twigs / 2, aimed_twigs / 2, aimed_twigs / 2]])


@tree_step
class GrowPruneStep(_MHStep):
    """Grow/prune Metropolis-Hastings on every tree per draw (the move set of BART, dbarts, stochtree).

    Exact, but it cannot change a split without first pruning it away, which can take
    exponentially long when the data support the split (prefer :class:`CGMStep`).

    Parameters
    ----------
    vars : list of one BART variable, optional
        Defaults to the model's BART variable.
    twigs : float in [0, 1), default 0
        Probability of proposing a twig move instead of a grow or prune: half the time a subtree drawn from the
        tree prior is attached at a leaf, half the time the whole subtree below a node is detached
        (docs/mh.md#twig-moves). They make in one step the several nested splits that fitting a few isolated rows
        needs, which grow/prune can only reach through trees the prior penalises.
    aimed_twigs : float in [0, 1), default 0
        Probability of proposing a twig aimed at a misfit row instead: a row is drawn with probability proportional
        to its squared deviation in the pseudo-data the other trees leave, and a path of splits that narrows in on
        it is attached at its leaf, or such a path detached (docs/mh.md#twig-moves).
    backend : {"cpu", "cuda", "cuda-twin"}, default "cpu"
        Where the sweep runs. ``"cuda"``: on one NVIDIA GPU (``pip install 'pymc-treesamplers[gpu]'``,
        docs/gpu.md), the rows and trees kept on the device across draws; only the exact Gaussian route (a
        Normal likelihood whose mean is affine in the BART value, one sigma for all rows; sigma keeps its own
        step), a BART vector, at most 32 split columns, no ``split_prior``, ``threads=1``; anything else is
        refused when the step is built. The same posterior, priors, split coding and stored forests as
        ``"cpu"`` (a different random stream). ``"cuda-twin"``: the GPU sweep's CPU twin (the device's
        decision code and random stream on the CPU, one thread; the draws of ``"cuda"``), for tests.
    threads, route, warm_start, sigma_every, model, initial_point, compile_kwargs, blocked, rng : keyword options
        The options every tree step shares (:class:`~pymc_treesamplers.steps.options.TreeStepOptions`).

    Examples
    --------
    >>> # idata = pm.sample(step=[pmt.GrowPruneStep([mu])])
    >>> # idata = pm.sample(step=[pmt.GrowPruneStep([mu], twigs=0.2)])
    >>> # idata = pm.sample(step=[pmt.GrowPruneStep([mu], backend="cuda"), pmt.NormalScaleGibbs([sigma])])
    """

    name = "growprune"

    def __init__(self, vars=None, *, twigs: float = 0.0, aimed_twigs: float = 0.0, backend: str = "cpu", **shared):
        self.move_probs = np.array([0.5, 0.5, 0.0, 0.0])
        super().__init__(vars, twigs=twigs, aimed_twigs=aimed_twigs, backend=backend, **shared)


@tree_step
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
    twigs : float in [0, 1), default 0
        Probability of proposing a twig move instead (``move_probs`` are scaled by ``1 - twigs``): attach a subtree
        drawn from the tree prior at a leaf, or detach the whole subtree below a node, as for
        :class:`GrowPruneStep`.
    aimed_twigs : float in [0, 1), default 0
        Probability of proposing a twig aimed at a misfit row instead, as for :class:`GrowPruneStep`.
    backend : {"cpu", "cuda", "cuda-twin"}, default "cpu"
        Where the sweep runs, as for :class:`GrowPruneStep` (docs/gpu.md): ``"cuda"`` runs these four moves on
        one NVIDIA GPU, with the same refusals. On the GPU a change or swap above a subtree of more than 31
        nodes leaves the tree as it is (exact: the moves keep the tree's shape, so the restriction is
        symmetric).
    threads, route, warm_start, sigma_every, model, initial_point, compile_kwargs, blocked, rng : keyword options
        The options every tree step shares (:class:`~pymc_treesamplers.steps.options.TreeStepOptions`).

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
        twigs: float = 0.0,
        aimed_twigs: float = 0.0,
        backend: str = "cpu",
        **shared,
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
        super().__init__(vars, twigs=twigs, aimed_twigs=aimed_twigs, backend=backend, **shared)
