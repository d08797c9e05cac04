"""Continuous-time birth-death tree step (horizon and jump modes)."""

from __future__ import annotations

import numpy as np
import pymc as pm

from ..engine import new_ct_scratch
from .base import BaseTreeStep
from .options import tree_step


def _move_count(name: str, value) -> int:
    """``True``/``False`` or a count of moves per tree and draw, as an int."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be True, False or a number of moves per tree and draw, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0 moves per tree and draw, got {value}")
    return int(value)


@tree_step
class CTBirthDeathStep(BaseTreeStep):
    """Continuous-time birth-death MCMC: each tree follows the birth-death jump process for time
    ``horizon`` per draw and keeps the state it is in at that time.

    Births (a leaf split by any valid rule) and deaths (a node with two leaf children merged) occur
    at rate ``min(1, pi(T') / pi(T))``: detailed balance holds for every pair, so the state at a
    fixed time is an exact conditional draw, and the step composes with sigma, other trees and
    other variables.

    Parameters
    ----------
    vars : list of one BART variable, optional
        Defaults to the model's BART variable.
    horizon : float > 0, default 1.0
        Time each tree's process runs per draw: the expected number of jumps per tree is about
        ``horizon`` times the total rate, so it trades cost for mixing.
    mode : {"horizon", "jump"}, default "horizon"
        ``"jump"`` (one tree, nothing else in the model moving) makes exactly one jump per draw
        and records ``<var>_waiting_time``, the expected holding time ``1 / Lambda(T)`` of the
        state the draw ends in: the draws are then the embedded jump chain, and posterior
        expectations are waiting-time-weighted averages (:func:`pymc_treesamplers.jump_weights`,
        :func:`pymc_treesamplers.resample_jump_chain`), not plain averages.
    rotate : bool or int, default False
        Pratola's (2016) rotate moves after each tree's run (``True``: one; an int: that many per
        tree and draw), each followed by a pivot, the tree rotation for the case where one lifted
        copy would be empty (every leaf keeps its rows, so a root cut placed short of a gap can be
        moved under the split that should be the root, and the leftover split dies).
    change : bool or int, default False
        Rounds of exact rule redraws after each tree's run: a CGM change (MH redraw of any node's
        rule from its prior), a Gibbs redraw of the rule of a node whose children are leaves, and
        a Gibbs redraw of a node's rule among the rules that cut its rows the same way, mirrored or
        not (it moves a root split from x1 to the equivalent split on x3 on the Wu et al. data).
        ``rotate=True, change=True`` is the paper's CT-C arm, ``rotate=True`` alone its CT-B.
    threads, route, warm_start, sigma_every, model, initial_point, compile_kwargs, blocked, rng : keyword options
        The options every tree step shares (:class:`~pymc_treesamplers.steps.options.TreeStepOptions`).

    Notes
    -----
    Extra per-draw stats: ``<var>_jumps`` (mean jumps per tree), ``<var>_total_rate`` (mean total
    jump rate per tree at the start of its update; in jump mode, after the jump) and, in jump mode,
    ``<var>_waiting_time``.

    Examples
    --------
    >>> # idata = pm.sample(step=[pmt.CTBirthDeathStep([mu], horizon=2.0)])
    """

    name = "ctbirthdeath"

    def __init__(
        self,
        vars=None,
        *,
        horizon: float = 1.0,
        mode: str = "horizon",
        rotate: bool | int = False,
        change: bool | int = False,
        **shared,
    ):
        if mode not in ("horizon", "jump"):
            raise ValueError(f"mode must be 'horizon' or 'jump', got {mode!r}")
        if isinstance(horizon, bool) or not isinstance(horizon, (int, float, np.integer, np.floating)):
            raise TypeError(f"horizon must be a number, got {horizon!r}")
        if not (np.isfinite(horizon) and horizon > 0):
            raise ValueError(f"horizon must be finite and > 0, got {horizon!r}")
        self.mode = mode
        self.horizon = float(horizon)
        self.rotate = _move_count("rotate", rotate)
        self.change = _move_count("change", change)
        for flag in ("change", "rotate"):
            if getattr(self, flag) and mode == "jump":
                raise ValueError(f"{flag} moves cannot be combined with mode='jump' (the weights are the jump chain's)")
        self._extra_stats = {"jumps": np.float64, "total_rate": np.float64}
        if mode == "jump":
            self._extra_stats["waiting_time"] = np.float64
        super().__init__(vars, **shared)
        if mode == "jump":
            model = pm.modelcontext(shared.get("model"))
            others = [rv.name for rv in model.free_RVs if rv.name != self.var_name]
            if others or self.m != 1:
                raise ValueError(
                    "mode='jump' needs a single tree (m=1) and nothing else moving (its draws are weighted by "
                    f"waiting times, which other updates would invalidate); got m={self.m} and other free "
                    f"variables {others}: use mode='horizon'"
                )

    def new_scratch(self, codes, m):
        horizon = -1.0 if self.mode == "jump" else self.horizon
        return new_ct_scratch(codes, m, horizon, self.rotate, self.change, width=self.leaf_width)

    def sampler_stats(self, sampler) -> dict:
        out = {"jumps": float(sampler.jumps.mean()), "total_rate": float(sampler.rate.mean())}
        if self.mode == "jump":
            lam = float(sampler.rate[0])
            out["waiting_time"] = 1.0 / lam if lam > 0 else float("inf")
        return out
