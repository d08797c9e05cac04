"""Particle Gibbs tree step (conditional SMC of Lakshminarayanan, Roy & Teh 2015)."""

from __future__ import annotations

import numpy as np

from ..kernels.pg import (
    PROPOSAL_EMPIRICAL,
    PROPOSAL_OPTIMAL,
    PROPOSAL_PRIOR,
    RESAMPLE_MULTINOMIAL,
    RESAMPLE_SYSTEMATIC,
    sweep_pg,
)
from ..layout import N_FLOAT_FIELDS, N_INT_FIELDS
from .base import BaseTreeStep

_PROPOSALS = {"prior": PROPOSAL_PRIOR, "empirical": PROPOSAL_EMPIRICAL, "optimal": PROPOSAL_OPTIMAL}
_RESAMPLING = {"multinomial": RESAMPLE_MULTINOMIAL, "systematic": RESAMPLE_SYSTEMATIC}


class PGBARTStep(BaseTreeStep):
    """Particle Gibbs: each tree is redrawn whole by a conditional SMC clamped to the old tree.

    Parameters (keywords): ``num_particles`` (C >= 2, default 10); ``resampling`` ("multinomial"
    or "systematic"); ``ess_threshold`` in [0, 1] (resample when ESS <= threshold * C; 1.0, the
    paper's setting, resamples at every stage); ``proposal`` ("prior", "empirical" or
    "optimal"); ``max_stages`` (default 5000; an SMC that would need more raises an error rather
    than truncate the tree prior).

    Extra per-draw stats: ``kept_old`` (share of trees where the old tree was kept) and
    ``stages`` (mean SMC stages per tree).

    >>> # idata = pm.sample(step=[pmt.PGBARTStep([mu], num_particles=10)])
    """

    name = "pgbart"

    def _configure(self, kwargs: dict) -> None:
        c = kwargs.pop("num_particles", 10)
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 2:
            raise ValueError(f"num_particles must be an integer >= 2, got {c!r}")
        resampling = kwargs.pop("resampling", "multinomial")
        if resampling not in _RESAMPLING:
            raise ValueError(f"resampling must be one of {sorted(_RESAMPLING)}, got {resampling!r}")
        proposal = kwargs.pop("proposal", "prior")
        if proposal not in _PROPOSALS:
            raise ValueError(f"proposal must be one of {sorted(_PROPOSALS)}, got {proposal!r}")
        ess = kwargs.pop("ess_threshold", 1.0)
        if not isinstance(ess, (int, float, np.floating)) or not 0.0 <= float(ess) <= 1.0:
            raise ValueError(f"ess_threshold must lie in [0, 1], got {ess!r}")
        stages = kwargs.pop("max_stages", 5000)
        if isinstance(stages, bool) or not isinstance(stages, (int, np.integer)) or stages < 1:
            raise ValueError(f"max_stages must be an integer >= 1, got {stages!r}")
        self.num_particles = int(c)
        self._opts = np.array([c, _PROPOSALS[proposal], _RESAMPLING[resampling], float(ess), stages], dtype=float)
        self._probs = np.zeros(4)

    def _extra_stats_dtypes(self) -> dict:
        return {"kept_old": (np.float64, []), "stages": (np.float64, [])}

    def _reset_chain(self) -> None:
        super()._reset_chain()
        C, n, cap = self.num_particles, self.n, 2 * self.n + 1
        self._Pi = np.full((C, cap, N_INT_FIELDS), -1, dtype=np.int32)
        self._Pf = np.zeros((C, cap, N_FLOAT_FIELDS))
        self._Ps = np.zeros((C, cap, 3))
        self._Pperm = np.empty((C, n), dtype=np.int32)
        self._Pnn = np.zeros(C, dtype=np.int32)
        self._Phead = np.zeros(C, dtype=np.int32)
        self._Pmap = np.zeros(cap, dtype=np.int32)
        self._kept = np.zeros(self.m, dtype=np.bool_)
        self._stages = np.zeros(self.m, dtype=np.int64)
        self._status = np.zeros(2, dtype=np.int64)

    def _run_sweep(self, resid: np.ndarray, w: np.ndarray) -> None:
        fr = self.forest
        j, resume = 0, 0
        while True:
            self._status[1] = 0
            j = sweep_pg(self.rng, j, resume, self._opts, self.codes, self.wsplit, self.logw, self.prm,
                         fr.ints, fr.floats, fr.perm, fr.n_nodes, resid, w, self._Pi, self._Pf, self._Ps,
                         self._Pperm, self._Pnn, self._Phead, self._Pmap, self._kept, self._stages, self._status)
            if j < 0:
                break
            if self._status[1]:
                raise RuntimeError(
                    f"PGBARTStep: an SMC for tree {j} needed more than max_stages={int(self._opts[4])} stages; "
                    "raise max_stages (it must exceed the node count of every tree)"
                )
            while fr.capacity < self._Pnn[self._status[0]]:
                fr.grow_capacity()
            resume = 1
        self._accepted[:] = ~self._kept

    def _extra_stats(self) -> dict:
        return {"kept_old": float(self._kept.mean()), "stages": float(self._stages.mean())}
