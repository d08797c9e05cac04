"""Continuous-time birth-death tree step (horizon mode)."""

from __future__ import annotations

import numpy as np

from ..kernels.ct import sweep_ct
from ..layout import N_FLOAT_FIELDS, N_INT_FIELDS
from .base import BaseTreeStep


class CTBirthDeathStep(BaseTreeStep):
    """Continuous-time birth-death MCMC: each tree follows the birth-death jump process for time
    ``horizon`` per draw and keeps the state it is in at that time.

    Births (a leaf split by any valid rule) and deaths (a node with two leaf children merged) occur
    at rate ``min(1, pi(T') / pi(T))``: detailed balance holds for every pair, so the state at a
    fixed time is an exact conditional draw, and the step composes with sigma, other trees and
    other variables. ``horizon`` (> 0, default 1.0) trades cost for mixing: the expected number of
    jumps per tree is about ``horizon`` times the total rate. ``change=True`` follows each tree's
    run with one CGM change move (an exact Metropolis-Hastings redraw of one node's rule, the
    paper's CT-C arm): births and deaths alone cannot move a well-supported root split.

    Extra per-draw stats: ``jumps`` (mean jumps per tree) and ``total_rate`` (mean total jump rate
    per tree at the start of its update).

    >>> # idata = pm.sample(step=[pmt.CTBirthDeathStep([mu], horizon=2.0)])
    """

    name = "ctbirthdeath"

    def _configure(self, kwargs: dict) -> None:
        horizon = kwargs.pop("horizon", 1.0)
        if isinstance(horizon, bool) or not isinstance(horizon, (int, float, np.integer, np.floating)):
            raise TypeError(f"horizon must be a number, got {horizon!r}")
        if not (np.isfinite(horizon) and horizon > 0):
            raise ValueError(f"horizon must be finite and > 0, got {horizon!r}")
        self.horizon = float(horizon)
        change = kwargs.pop("change", False)
        if not isinstance(change, (bool, np.bool_)):
            raise TypeError(f"change must be True or False, got {change!r}")
        self.change = bool(change)
        self._probs = np.zeros(4)

    def _extra_stats_dtypes(self) -> dict:
        return {"jumps": (np.float64, []), "total_rate": (np.float64, [])}

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
            j = sweep_ct(self.rng, j, resume, self.horizon, int(self.change), self.codes, self.wsplit, self.logw,
                         self.prm, fr.ints, fr.floats, fr.perm, fr.n_nodes, resid, w, self._Ti, self._Tf,
                         self._Tperm, self._Tnn, self._jumps, self._rate)
            if j < 0:
                break
            while fr.capacity < self._Tnn[0]:
                fr.grow_capacity()
            resume = 1
        self._accepted[:] = self._jumps > 0

    def _extra_stats(self) -> dict:
        return {"jumps": float(self._jumps.mean()), "total_rate": float(self._rate.mean())}
