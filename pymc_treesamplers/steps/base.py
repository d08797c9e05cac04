"""What every tree step shares: the variable and its data, the forest, the sweep, stats, the state.

A subclass checks its options, builds its kernel's scratch record (:meth:`BaseTreeStep._new_scratch`)
and reports its own stats; the backfitting sweep itself is the one driver of
:mod:`pymc_treesamplers.engine.driver`.

Stats are named ``<var>_<stat>`` (``mu_n_leaves``, ``mu_forest``, ...): two BART variables in one
model, or a NUTS step (whose ``depth`` PyMC renames ``tree_depth``), never report the same name, so
no stat silently replaces another and each one can be saved.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numba
import numpy as np
import pymc as pm
from pymc.blocking import RaveledVars
from pymc.stats.convergence import SamplerWarning, WarningType
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence, StepMethodState
from pymc.step_methods.state import dataclass_state

from ..bart import BARTRV, as_data_array, bart_covariates
from ..binning import split_columns
from ..callers import check_nuts_sampler
from ..diagnostics import frozen_message
from ..engine.driver import new_work, run_sweep, sweep
from ..engine.forest import Forest, forest_sum, forest_summary, init_roots
from ..engine.records import TreePrior, split_data
from ..engine.rows import THREADING_LAYER, check_threads, numba_threads
from ..engine.splitprior import kernel_weights, new_split_weights, update_split_weights
from ..engine.updates.gfr import new_gfr_scratch
from ..routes.likelihood import ROUTES, FamilyWorkingModel, GaussianWorkingModel, OutputView, working_model
from ..storage import encode_forest

_log = logging.getLogger("pymc_treesamplers")


@dataclass_state
class TreeStepState(StepMethodState):
    """Sampling state of a tree step: the fits of the outputs at the training rows (``(k, n)``),
    whether those are the variable's current value (False right after a chain starts), the tuning
    flag, the split weights when they have a Dirichlet prior (else None), and the forest of each output
    (None at a chain's start, before any sweep: the single-leaf trees, rebuilt when the state is set).

    PyMC takes a deep copy of this state before its chains and sets it again at each chain's start:
    a forest holds its rows' order per tree (``4 m n`` bytes: 8 GB at 10^7 rows and 200 trees), which
    a fresh chain does not need copied. ``forests`` comes after ``split_weights``: single-leaf roots
    cache their available split weight, so the weights are restored first. ``watch``: the counts behind
    the warning of a chain that cannot move (:meth:`BaseTreeStep._watch`)."""

    f: np.ndarray
    synced: bool
    tune: bool
    split_weights: Any = None
    trees: list | None = None
    watch: Any = None
    var_name: str = field(metadata={"frozen": True})


@dataclass
class Output:
    """What a step knows of one output of its BART variable: the working model of the likelihood in
    that output (given the others), the tree prior (leaf prior on the output's scale) and, for a
    variable with several outputs, the view that feeds the others' current values to the working model."""

    working: GaussianWorkingModel | FamilyWorkingModel | Any
    prior: TreePrior
    view: OutputView | None

    @property
    def corrected(self) -> bool:
        """Whether the tree updates need the Metropolis-Hastings correction (not the exact Gaussian
        pseudo-data of a Gaussian likelihood or of an augmentation)."""
        return self.working.corrected


class BaseTreeStep(ArrayStepShared):
    """Base class of the BART step methods; one instance updates one BART variable.

    Several BART variables given to one step class become one step per variable (PyMC's
    non-blocked convention), each updated given the current values of the others. A BART variable
    of shape ``(k, n)`` has one forest per output; a sweep updates the outputs in turn, each given
    the others' current values (Gibbs over outputs, each output's update exact as for a vector).
    """

    name = "tree_step"
    default_blocked = False
    _state_class = TreeStepState
    _extra_stats: dict[str, type] = {}

    def __init__(self, vars=None, *, threads: int = 1, route: str = "auto", warm_start: int = 0, model=None,
                 initial_point=None, compile_kwargs=None, blocked=False, rng=None):
        self.threads = check_threads(threads)
        self.warm_start = check_warm_start(warm_start)
        if route not in ROUTES:
            raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
        self.route = route
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
        X = op.coded(as_data_array(bart_covariates(rv), "X"))
        # the kernels' columns: a covariate with missing values splits as x and as -x (binning.py)
        self.columns = split_columns(X, op.max_bins, op.split_points, op.categorical)
        self.var_name = rv.name
        self.thr_table = self.columns.threshold_table()
        self.m = op.m
        self.n, self.p = X.shape
        self.data = split_data(self.columns.codes, self.columns.column_weights(op.split_weights(self.p)), self.threads)
        self.sparse = op.sparse
        shared = pm.pytensorf.make_shared_replacements(initial_point, [value_var], model)
        value = np.asarray(initial_point[value_var.name])
        self.k = 1 if value.ndim == 1 else value.shape[0]
        self.outputs = [self._output(model, rv, value_var, shared, initial_point, compile_kwargs,
                                     None if value.ndim == 1 else OutputView(value_var, i, value))
                        for i in range(self.k)]
        corrected = any(out.corrected for out in self.outputs)
        base = {
            "tree_depth": np.float64,
            "n_leaves": np.float64,
            "accept": np.float64,
            # object, not (int64, [p]): PyMC's default trace backend allocates stats by dtype only
            # (one scalar per draw), so an array-valued stat travels as an object
            "split_counts": object,
            "forest": object,
            # whether this draw's sweep was a grow-from-root warm start (tuning only), not the sampler's
            "warm": bool,
            **self._extra_stats,
            # the split weights and their concentration, when they have a Dirichlet prior
            **({"split_weights": object, "split_concentration": np.float64} if self.sparse else {}),
            # share of tree proposals the likelihood correction accepted (non-Gaussian likelihoods)
            **({"mh_accept": np.float64} if corrected else {}),
        }
        self._stat_names = {k: f"{self.var_name}_{k}" for k in base}
        # "warning": PyMC logs a SamplerWarning found under this name in a draw's stats (as NUTS's divergences)
        self.stats_dtypes_shapes = {"tune": (bool, []), "warning": (SamplerWarning, None),
                                    **{self._stat_names[k]: (d, []) for k, d in base.items()}}
        self.stats_dtypes = [{k: d for k, (d, _) in self.stats_dtypes_shapes.items()}]
        super().__init__([value_var], shared, blocked=blocked, rng=rng)
        self.tune = True
        self._reset_chain()
        self._scratch = None
        self._compile_kernels()

    def _compile_kernels(self) -> None:
        """Compile (or load) the CPU kernels before sampling (a step whose sweep runs elsewhere skips it)."""
        _compile_kernels_once(self)

    def _output(self, model, rv, value_var, shared, point, compile_kwargs, view) -> Output:
        """The working model and tree prior of one output (the whole variable when ``view`` is None)."""
        op: BARTRV = rv.owner.op
        # the one place a likelihood route is chosen; the step then talks to it through leaf_prior,
        # sweep_input and compile_record only
        working = working_model(model, rv, value_var, shared, point, op.mu0, compile_kwargs, view=view,
                                route=self.route)
        mu0, s2 = working.leaf_prior(op, self.m)
        return Output(working, TreePrior(op.alpha, op.beta, mu0, s2), view)

    # a BART vector has one output: its working model, prior and forest by the names of one
    @property
    def working(self):
        return self.outputs[0].working

    @property
    def prior(self) -> TreePrior:
        return self.outputs[0].prior

    @property
    def corrected(self) -> bool:
        return self.outputs[0].corrected

    @property
    def forest(self) -> Forest:
        return self.forests[0]

    @forest.setter
    def forest(self, forest: Forest) -> None:
        self.forests[0] = forest

    # ------------------------------------------------------------------ what a sampler provides

    def _new_scratch(self, codes: np.ndarray, m: int):
        """The kernel's scratch record for ``m`` trees on the rows of ``codes`` (subclasses)."""
        raise NotImplementedError

    def _sampler_stats(self) -> dict:
        """Values of the stats declared in ``_extra_stats`` for the last sweep (subclasses)."""
        return {}

    def _failure(self, j: int) -> str:
        """The error message when the update of tree ``j`` failed (subclasses whose update can fail)."""
        return f"{type(self).__name__}: the update of tree {j} failed"

    # ----------------------------------------------------------------------------- the chain

    def _reset_chain(self) -> None:
        self.watch = new_watch(0)  # a chain's length is known once PyMC sets it up (setup_chain)
        # the weights first: the roots cache their available weight
        self.split_weights = None if self.sparse is None else new_split_weights(
            self.sparse, self.p, self.rng, self.columns.source, self.columns.column_weights(np.ones(self.p)))
        self._reset_forests()

    def _reset_forests(self) -> None:
        """Single-leaf trees for every output (in the row buffers the step already has) and their fit."""
        self._use_split_weights()
        old = getattr(self, "forests", None) or [None] * self.k
        self.forests = []
        self.f = np.empty((self.k, self.n))
        for out, f, prev in zip(self.outputs, self.f, old, strict=True):
            forest = Forest.empty(self.m, self.n, out.prior.mu0, perm=None if prev is None else prev.perm)
            init_roots(forest.arrays(), self.data, out.prior.mu0)
            forest_sum(forest.arrays(), f, 1)
            self.forests.append(forest)
        self.fresh = True  # no sweep since: the state need not carry the forests (TreeStepState)
        self.synced = False
        self._changed = np.zeros((self.k, self.m), dtype=np.bool_)
        self._split_counts = np.zeros(self.data.codes.shape[0], dtype=np.int64)

    def _split_weight_stats(self) -> dict:
        sw = self.split_weights
        return {"split_weights": np.exp(sw.logs), "split_concentration": float(sw.conc[0])}

    def _use_split_weights(self) -> None:
        """Give the kernels the current split weights (a chain's start, a restored sampling state)."""
        if self.split_weights is not None:
            sw = self.split_weights
            kernel_weights(sw.logs, sw.group, sw.share, self.data.wsplit, self.data.logw)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain: take its generator, reset the forest to single-leaf trees."""
        super().setup_chain(rng, tune, draws)
        self._reset_chain()
        self.tune = tune > 0
        self.watch = new_watch(tune + draws)

    @property
    def trees(self) -> list | None:
        """The forests as the sampling state holds them: None while no sweep has run since the chain's start."""
        return None if self.fresh else self.forests

    @trees.setter
    def trees(self, forests: list | None) -> None:
        if forests is None:
            self._reset_forests()
        else:
            self.forests, self.fresh = forests, False

    def __getstate__(self):
        # scratch buffers are sized by the data (up to ~100 bytes per row and particle); workers
        # allocate their own rather than receive them pickled; so are the single-leaf forests of a
        # chain not started (PyMC's chain workers, dask tasks): 4 bytes per row and tree
        state = self.__dict__.copy()
        state["_scratch"] = None
        if self.fresh:
            state["forests"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.forests is None:
            self._reset_forests()

    @staticmethod
    def competence(var, has_grad):
        if isinstance(getattr(var.owner, "op", None), BARTRV):
            check_nuts_sampler(var)  # pm.sample(nuts_sampler="nutpie", ...) is refused here, by name
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def _buffers(self):
        if self._scratch is None:
            kernels = _Kernels(_Bound(sweep), _Bound(forest_sum), _Bound(forest_summary))
            gfr = new_gfr_scratch(self.data.codes) if self.warm_start else None
            self._scratch = (new_work(self.n), self._new_scratch(self.data.codes, self.m), kernels, gfr)
        return self._scratch

    def _warming(self) -> bool:
        """Whether this draw is one of the chain's first ``warm_start`` tuning draws: a grow-from-root sweep
        (:mod:`pymc_treesamplers.engine.updates.gfr`) instead of the sampler's. Never after tuning, so no kept
        draw comes from it."""
        return self.tune and self.watch[WATCH_DRAW] < self.warm_start

    def _run_sweep(self, ps, i: int = 0, warm: bool = False) -> None:
        """One sweep over the trees of output ``i`` with pseudo-data or likelihood record ``ps``; ``warm``: a
        grow-from-root sweep instead of the sampler's update."""
        work, scratch, kernels, gfr = self._buffers()
        if warm:
            scratch = gfr
        # a record on the log-link route integrates its leaves by Laplace: the kernels must as well
        prior = self.outputs[i].prior._replace(leaf_exp=getattr(ps, "leaf_exp", 0.0))
        failed = run_sweep(self.rng, self.data, prior, self.forests[i], ps, work, scratch, self._changed[i],
                           self.threads, kernels.sweep)
        if failed >= 0:
            raise RuntimeError(self._failure(failed))

    def _check_value(self, q0: RaveledVars) -> None:
        """Refuse a BART value that is not the one this step last returned (changed behind its back)."""
        if self.synced and not np.array_equal(q0.data, self.f.ravel() if q0.data.dtype == self.f.dtype else
                                              self.f.ravel().astype(q0.data.dtype)):
            raise RuntimeError(
                f"the value of the BART variable {self.var_name!r} was changed outside its tree step, so it no longer "
                "matches the trees. Let one pymc_treesamplers step own each BART variable (no other step, no manual "
                "edits of the point); to resume a chain, restore the step's sampling_state together with the point."
            )

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, list[dict[str, Any]]]:
        self._check_value(q0)
        kernels = self._buffers()[2]
        warm = self._warming()
        self.fresh = False
        if self.split_weights is not None:
            self._use_split_weights()  # cheap (p numbers); a restored state brings its own
        per_output, accepted, mh_counts = [], [], np.zeros(2, dtype=np.int64)
        depth = leaves = 0.0
        split_counts = np.zeros(self.data.codes.shape[0], dtype=np.int64)
        for i, (out, f) in enumerate(zip(self.outputs, self.f, strict=True)):
            if out.view is not None:
                out.view.set_others(self.f)
            ps = out.working.sweep_input(f, self.rng, self.threads)
            self._run_sweep(ps, i, warm)
            if out.corrected:
                accepted.append(ps.counts[1] / max(ps.counts[0], 1))
                mh_counts += ps.counts
            fr = self.forests[i].arrays()
            with numba_threads(self.threads):
                kernels.forest_sum(fr, f, self.threads)
            d, nl = kernels.forest_summary(fr, self._split_counts)
            depth, leaves = depth + d / self.k, leaves + nl / self.k
            split_counts += self._split_counts
            # a warm-start sweep ran no sampler update: its own stats are NaN for that draw
            per_output.append({k: np.nan for k in self._extra_stats} if warm else self._sampler_stats())
        self.synced = True
        if self.split_weights is not None:
            update_split_weights(self.rng, self.split_weights, self.data, [fr.arrays() for fr in self.forests],
                                 split_counts, self._buffers()[0].order)
        values = {
            "tree_depth": depth,
            "n_leaves": leaves,
            "accept": float(self._changed.mean()),
            # per covariate (a covariate's two split columns, with missing values, count together)
            "split_counts": np.bincount(self.columns.source, split_counts, minlength=self.p).astype(np.int64),
            # one encoded forest per output, comma-separated (not in the base64 alphabet)
            "forest": ",".join(encode_forest(forest, self.thr_table, self.columns.trace_var, self.p)
                               for forest in self.forests),
            "warm": warm,
            **{name: float(np.mean([s[name] for s in per_output])) for name in per_output[0]},
            **({"mh_accept": float(np.mean(accepted))} if accepted else {}),
            **(self._split_weight_stats() if self.split_weights is not None else {}),
        }
        stats = {"tune": self.tune, "warning": self._watch(mh_counts),
                 **{self._stat_names[k]: v for k, v in values.items()}}
        return RaveledVars(self.f.ravel().astype(q0.data.dtype), q0.point_map_info), [stats]

    def _watch(self, mh_counts: np.ndarray) -> SamplerWarning | None:
        """Count this draw's tree updates after tuning; at a chain's last draw, a warning if its trees could
        not move (:func:`pymc_treesamplers.diagnostics.frozen`), which PyMC logs as it logs divergences."""
        w = self.watch
        if not self.tune:
            w[WATCH_UPDATES] += self._changed.size
            w[WATCH_CHANGED] += int(self._changed.sum())
            w[WATCH_MH:] += mh_counts
        w[WATCH_DRAW] += 1
        if w[WATCH_LENGTH] == 0 or w[WATCH_DRAW] != w[WATCH_LENGTH] or w[WATCH_UPDATES] == 0:
            return None
        tree = w[WATCH_CHANGED] / w[WATCH_UPDATES]
        mh = w[WATCH_MH + 1] / w[WATCH_MH] if w[WATCH_MH] > 0 else None
        message = frozen_message(self.var_name, type(self).__name__, tree, mh)
        return None if message is None else SamplerWarning(WarningType.BAD_ACCEPTANCE, message, "warn")


# the counts of BaseTreeStep.watch: draws so far, draws in the chain (0: unknown), and after tuning the tree
# updates, the trees they changed, and the likelihood correction's proposals and acceptances
WATCH_DRAW, WATCH_LENGTH, WATCH_UPDATES, WATCH_CHANGED, WATCH_MH = range(5)


def new_watch(length: int) -> np.ndarray:
    """Fresh :attr:`BaseTreeStep.watch` counts for a chain of ``length`` draws."""
    w = np.zeros(6, dtype=np.int64)
    w[WATCH_LENGTH] = length
    return w


def check_warm_start(warm_start) -> int:
    """``warm_start`` as an int >= 0 (a ``TypeError`` or ``ValueError`` naming it otherwise)."""
    if isinstance(warm_start, bool) or not isinstance(warm_start, (int, np.integer)):
        raise TypeError(f"warm_start must be an integer (grow-from-root sweeps at a chain's start), got {warm_start!r}")
    if warm_start < 0:
        raise ValueError(f"warm_start must be >= 0, got {warm_start}")
    return int(warm_start)


class _Bound:
    """A numba function bound to the argument types of its calls.

    numba's dispatch types record (NamedTuple) arguments in Python on every call, ~20-50 us for a
    step's records: as much as a whole update of a small tree. A step's argument types never change
    within a chain (the outputs of one variable may differ in their likelihood record's type, hence
    one entry point per tuple of Python types), so after the first call of each kind the compiled
    entry point is called directly.
    """

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self.entries = {}

    def __call__(self, *args):
        key = tuple(type(a) for a in args)
        entry = self.entries.get(key)
        if entry is None:
            out = self.dispatcher(*args)
            self.entries[key] = self.dispatcher.overloads[tuple(numba.typeof(a) for a in args)].entry_point
            return out
        return entry(*args)


class _Kernels(NamedTuple):
    sweep: _Bound
    forest_sum: _Bound
    forest_summary: _Bound


_COMPILED: set[type] = set()


def _compile_kernels_once(step: BaseTreeStep) -> None:
    """Compile (or load from numba's cache) the sweep for this sampler before sampling starts, saying so
    when it is a real compile, so the first ``pm.sample`` does not sit silently at 0% (worker
    processes then load the compiled code from the cache)."""
    for out in step.outputs:
        _compile_sweep(step, out)
        if step.warm_start:
            _compile_sweep(step, out, warm=True)


def _compile_sweep(step: BaseTreeStep, out: Output, warm: bool = False) -> None:
    kind = (type(step), type(out.working), out.corrected, warm)
    if kind in _COMPILED:
        return
    _COMPILED.add(kind)
    codes = np.array([[0, 1, 1, 2]], dtype=np.uint16)
    scratch = new_gfr_scratch(codes) if warm else step._new_scratch(codes, 1)
    if not type(scratch).__module__.startswith("pymc_treesamplers."):
        # a record type from outside the package (a test's deliberately wrong kernel) must not enter
        # the on-disk cache index of the sweep: loading that index would then need its module
        return
    data = split_data(codes, np.ones(1))
    forest = Forest.empty(1, 4, 0.0)
    fa = forest.arrays()
    ps = out.working.compile_record()
    args = (np.random.default_rng(0), 0, False, data, out.prior, fa, ps, new_work(4), scratch,
            np.zeros(1, dtype=np.bool_))
    cached = _in_numba_cache(sweep, args)
    t0 = time.perf_counter()
    if not cached:
        _log.info("pymc_treesamplers: compiling the %s kernels%s (first use with this numba cache; cached after; "
                  "numba threading layer %s)", "grow-from-root" if warm else kind[0].__name__,
                  f" for {kind[1].__name__}" if out.corrected else "",
                  THREADING_LAYER or f"{numba.config.THREADING_LAYER} (set by the user)")
    init_roots(fa, data, 0.0)
    sweep(*args)
    forest_sum(fa, np.empty(4), 1)
    forest_summary(fa, np.zeros(1, dtype=np.int64))
    encode_forest(forest, np.zeros((1, 2)))
    if not cached:
        _log.info("pymc_treesamplers: compiled in %.0f s", time.perf_counter() - t0)


def _in_numba_cache(dispatcher, args) -> bool:
    """Whether ``dispatcher`` has code for these arguments in memory or in its on-disk cache."""
    sig = tuple(numba.typeof(a) for a in args)
    if sig in dispatcher.overloads:
        return True
    try:  # numba's own lookup (Dispatcher.compile does the same before compiling)
        return dispatcher._cache.load_overload(sig, dispatcher.targetctx) is not None
    except Exception:  # internals changed: better no notice than a wrong one
        return True
