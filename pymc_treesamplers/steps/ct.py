"""Continuous-time birth-death tree step (horizon and jump modes)."""

from __future__ import annotations

import numpy as np
import pymc as pm

from ..kernels.ct import sweep_ct
from ..layout import N_FLOAT_FIELDS, N_INT_FIELDS
from .base import BaseTreeStep


def _move_count(name: str, value) -> int:
    """``True``/``False`` or a count of moves per tree and draw, as an int."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be True, False or a number of moves per tree and draw, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0 moves per tree and draw, got {value}")
    return int(value)


class CTBirthDeathStep(BaseTreeStep):
    """Continuous-time birth-death MCMC: each tree follows the birth-death jump process for time
    ``horizon`` per draw and keeps the state it is in at that time.

    Births (a leaf split by any valid rule) and deaths (a node with two leaf children merged) occur
    at rate ``min(1, pi(T') / pi(T))``: detailed balance holds for every pair, so the state at a
    fixed time is an exact conditional draw, and the step composes with sigma, other trees and
    other variables. ``horizon`` (> 0, default 1.0) trades cost for mixing: the expected number of
    jumps per tree is about ``horizon`` times the total rate.

    Births and deaths alone cannot move a well-supported root split, so two kinds of exact rule
    moves can follow each tree's run (``True`` for one, or a number per tree and draw):

    * ``rotate``: Pratola's (2016) rotate, an exact Metropolis-Hastings move that lifts a split
      above its parent or merges two identical lifted copies back (:mod:`..kernels.rotate`), each
      followed by a pivot, the tree rotation for the case where one lifted copy would be empty
      (:mod:`..kernels.pivot`; every leaf keeps its rows, so a root cut placed short of a gap can
      be moved under the split that should be the root, and the leftover split dies);
    * ``change``: one round of rule redraws, each exact: a CGM change (MH redraw of any node's
      rule from its prior), a Gibbs redraw of the rule of a node whose children are leaves (all
      its rules weighted from one pass over its rows), and a Gibbs redraw of a node's rule among
      the rules that cut its rows the same way, mirrored or not (:mod:`..kernels.relabel`; it is
      what moves a root split from x1 to the equivalent split on x3 on the Wu et al. data).

    ``rotate=True, change=True`` is the paper's CT-C arm, ``rotate=True`` alone its CT-B.

    ``mode="jump"`` (one tree, nothing else in the model moving) makes exactly one jump per draw
    and records ``waiting_time``, the expected holding time ``1 / Lambda(T)`` of the state the draw
    ends in: the draws are then the embedded jump chain, and posterior expectations are
    ``waiting_time``-weighted averages (:func:`pymc_treesamplers.jump_weights`,
    :func:`pymc_treesamplers.resample_jump_chain`), not plain averages.

    Extra per-draw stats: ``jumps`` (mean jumps per tree), ``total_rate`` (mean total jump rate
    per tree at the start of its update; in jump mode, after the jump) and, in jump mode,
    ``waiting_time``.

    >>> # idata = pm.sample(step=[pmt.CTBirthDeathStep([mu], horizon=2.0)])
    """

    name = "ctbirthdeath"

    def __init__(self, vars=None, *, model=None, **kwargs):
        super().__init__(vars, model=model, **kwargs)
        if self.mode == "jump":
            model = pm.modelcontext(model)
            others = [rv.name for rv in model.free_RVs if rv.name != self.var_name]
            if others or self.m != 1:
                raise ValueError(
                    "mode='jump' needs a single tree (m=1) and nothing else moving (its draws are weighted by "
                    f"waiting times, which other updates would invalidate); got m={self.m} and other free "
                    f"variables {others}: use mode='horizon'"
                )

    def _configure(self, kwargs: dict) -> None:
        mode = kwargs.pop("mode", "horizon")
        if mode not in ("horizon", "jump"):
            raise ValueError(f"mode must be 'horizon' or 'jump', got {mode!r}")
        self.mode = mode
        horizon = kwargs.pop("horizon", 1.0)
        if isinstance(horizon, bool) or not isinstance(horizon, (int, float, np.integer, np.floating)):
            raise TypeError(f"horizon must be a number, got {horizon!r}")
        if not (np.isfinite(horizon) and horizon > 0):
            raise ValueError(f"horizon must be finite and > 0, got {horizon!r}")
        self.horizon = float(horizon)
        for flag in ("change", "rotate"):
            setattr(self, flag, _move_count(flag, kwargs.pop(flag, False)))
            if getattr(self, flag) and mode == "jump":
                raise ValueError(f"{flag} moves cannot be combined with mode='jump' (the weights are the jump chain's)")
        self._probs = np.zeros(4)

    def _extra_stats_dtypes(self) -> dict:
        extra = {"jumps": (np.float64, []), "total_rate": (np.float64, [])}
        if self.mode == "jump":
            extra["waiting_time"] = (np.float64, [])
        return extra

    def _reset_chain(self) -> None:
        super()._reset_chain()
        cap = 2 * self.n + 1
        self._Ti = np.full((cap, N_INT_FIELDS), -1, dtype=np.int32)
        self._Tf = np.zeros((cap, N_FLOAT_FIELDS))
        self._Tperm = np.empty(self.n, dtype=np.int32)
        self._Tnn = np.zeros(1, dtype=np.int32)
        self._jumps = np.zeros(self.m, dtype=np.int64)
        self._rate = np.zeros(self.m)

    def _run_sweep(self, resid: np.ndarray, w: np.ndarray) -> None:
        fr = self.forest
        j, resume = 0, 0
        while True:
            horizon = -1.0 if self.mode == "jump" else self.horizon
            j = sweep_ct(self.rng, j, resume, horizon, self.change, self.rotate, self.codes, self.wsplit, self.logw,
                         self.prm, fr.ints, fr.floats, fr.perm, fr.n_nodes, resid, w, self._Ti, self._Tf,
                         self._Tperm, self._Tnn, self._jumps, self._rate)
            if j < 0:
                break
            while fr.capacity < self._Tnn[0]:
                fr.grow_capacity()
            resume = 1
        self._accepted[:] = self._jumps > 0

    def _extra_stats(self) -> dict:
        out = {"jumps": float(self._jumps.mean()), "total_rate": float(self._rate.mean())}
        if self.mode == "jump":
            lam = float(self._rate[0])
            out["waiting_time"] = 1.0 / lam if lam > 0 else float("inf")
        return out
