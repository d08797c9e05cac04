"""The shared machinery of every tree step: state, pseudo-data, the sweep, stats, the trace.

A subclass names its kernel (``_kind``) and its options; everything else lives here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm
from pymc.blocking import RaveledVars
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence, StepMethodState

from ..bart import BARTRV, _as_array
from ..binning import bin_columns
from ..forest import Forest, forest_sum, forest_summary, init_root_availability
from ..kernels.sweep import sweep
from ..likelihood import GaussianWorkingModel
from ..trace import encode_forest

_PYMC_KWARGS = ("model", "initial_point", "compile_kwargs", "blocked", "rng")


class BaseTreeStep(ArrayStepShared):
    """Base class of the BART step methods; one instance updates one BART variable.

    Several BART variables given to one step class become one step per variable (PyMC's
    non-blocked convention), each updated given the current values of the others.
    """

    name = "tree_step"
    default_blocked = False
    _state_class = StepMethodState
    _kind: int = -1

    def __init__(
        self, vars=None, *, model=None, initial_point=None, compile_kwargs=None, blocked=False, rng=None, **kwargs: Any
    ):
        self._configure(kwargs)
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected keyword arguments {sorted(kwargs)}")
        model = pm.modelcontext(model)
        if vars is None:
            vars = [v for v in model.value_vars if isinstance(model.values_to_rvs[v].owner.op, BARTRV)]
        value_vars = pm.util.get_value_vars_from_user_vars(vars, model)
        if len(value_vars) != 1:
            raise ValueError(f"{type(self).__name__} updates one BART variable per instance, got {len(value_vars)}")
        value_var = value_vars[0]
        rv = model.values_to_rvs[value_var]
        if not isinstance(rv.owner.op, BARTRV):
            raise TypeError(f"{type(self).__name__} can only sample BART variables; {rv.name!r} is not one")
        if initial_point is None:
            initial_point = model.initial_point()
        op: BARTRV = rv.owner.op
        _, _, X, Y = rv.owner.inputs
        X = _as_array(X, "X")
        binning = bin_columns(X, op.max_bins, op.split_points)
        self.var_name = rv.name
        self.codes = np.ascontiguousarray(binning.codes)
        self.thr_table = binning.threshold_table()
        self.m = op.m
        self.n, self.p = X.shape
        wsplit = op.split_weights(self.p)
        self.wsplit = wsplit
        with np.errstate(divide="ignore"):
            self.logw = np.log(wsplit)
        self.prm = np.array([op.alpha, op.beta, op.mu0, op.sigma_mu**2])
        shared = pm.pytensorf.make_shared_replacements(initial_point, [value_var], model)
        self.working = GaussianWorkingModel(model, rv, value_var, shared, initial_point, compile_kwargs)
        self.stats_dtypes_shapes = {
            "tree_depth": (np.float64, []),
            "n_leaves": (np.float64, []),
            "accept": (np.float64, []),
            # object, not (int64, [p]): PyMC's default NDArray backend allocates stats by dtype
            # only (one scalar per draw), so an array-valued stat must travel as an object
            "split_counts": (object, []),
            "tune": (bool, []),
            f"{self.var_name}_forest": (object, []),
            **self._extra_stats_dtypes(),
        }
        self.stats_dtypes = [{k: d for k, (d, _) in self.stats_dtypes_shapes.items()}]
        super().__init__([value_var], shared, blocked=blocked, rng=rng)
        self._reset_chain()
        self.tune = True

    def _configure(self, kwargs: dict) -> None:
        """Pop and check the sampler's own options from ``kwargs`` (subclasses)."""

    def _extra_stats_dtypes(self) -> dict:
        """Sampler-specific per-draw stats (subclasses)."""
        return {}

    def _extra_stats(self) -> dict:
        return {}

    def _reset_chain(self) -> None:
        self.forest = Forest.empty(self.m, self.n, self.prm[2])
        init_root_availability(self.codes, self.wsplit, self.forest.floats, self.forest.perm)
        self.f = np.empty(self.n)
        forest_sum(self.forest.ints, self.forest.floats, self.forest.perm, self.forest.n_nodes, self.f)
        self._moves = np.zeros(self.m, dtype=np.int64)
        self._accepted = np.zeros(self.m, dtype=np.bool_)
        self._split_counts = np.zeros(self.p, dtype=np.int64)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain: take its generator, reset the forest to single-leaf trees."""
        super().setup_chain(rng, tune, draws)
        self._reset_chain()
        self.tune = tune > 0

    @staticmethod
    def competence(var, has_grad):
        if isinstance(getattr(var.owner, "op", None), BARTRV):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def _run_sweep(self, resid: np.ndarray, w: np.ndarray) -> None:
        fr = self.forest
        j = 0
        while True:
            j = sweep(
                self.rng,
                j,
                self._kind,
                self._probs,
                self.codes,
                self.wsplit,
                self.logw,
                self.prm,
                fr.ints,
                fr.floats,
                fr.perm,
                fr.n_nodes,
                resid,
                w,
                self._moves,
                self._accepted,
            )
            if j < 0:
                return
            fr.grow_capacity()

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, list[dict[str, Any]]]:
        z, w = self.working(self.f)
        resid = z - self.f
        self._run_sweep(resid, w)
        fr = self.forest
        forest_sum(fr.ints, fr.floats, fr.perm, fr.n_nodes, self.f)
        depth, leaves = forest_summary(fr.ints, fr.n_nodes, self._split_counts)
        stats = {
            "tree_depth": depth,
            "n_leaves": leaves,
            "accept": float(self._accepted.mean()),
            "split_counts": self._split_counts.copy(),
            "tune": self.tune,
            f"{self.var_name}_forest": encode_forest(fr, self.thr_table),
            **self._extra_stats(),
        }
        return RaveledVars(self.f.astype(q0.data.dtype), q0.point_map_info), [stats]
