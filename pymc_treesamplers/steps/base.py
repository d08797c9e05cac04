"""What every tree step shares: the variable and its data, one chain per output, the sweeper, stats, the state.

A subclass checks its own options, builds its kernel's scratch record (:meth:`BaseTreeStep.new_scratch`) and
reports its own stats; the chains are the engine's (:class:`~pymc_treesamplers.engine.chain.Chain`, one per output:
:class:`~.output.Output`), and where their sweeps run is the step's :class:`~.sweeper.Sweeper`, chosen once when the
step is built (:class:`~.cpu.CPUSweeper`, or the GPU's in :mod:`.gpu`). The step makes a draw's stats from what its
sweeper gives back.

Stats are named ``<var>_<stat>`` (``mu_n_leaves``, ``mu_forest``, ...): two BART variables in one
model, or a NUTS step (whose ``depth`` PyMC renames ``tree_depth``), never report the same name, so
no stat silently replaces another and each one can be saved.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pymc as pm
from pymc.blocking import RaveledVars
from pymc.stats.convergence import SamplerWarning
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence

from ..engine import Chain, kernel_weights, new_split_weights
from ..model.bart import BARTRV, bart_covariates
from ..model.basis import bart_of, basis_spec, coefficient_prior, leaf_basis_of
from ..model.binning import split_columns
from ..model.callers import check_nuts_sampler
from ..model.covariates import as_data_array, split_directions
from ..routes.likelihood import OutputView, working_model
from ..routes.reading import BasisView
from .cpu import CPUSweeper
from .level import LevelShift
from .options import TreeStepOptions
from .output import Output, SweepFailed
from .scale_in_sweep import ScaleInSweep
from .state import TreeStepState, Watch
from .sweeper import Draw, Sweeper


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
    # the sampler's own per-draw stats (name: dtype), which sampler_stats gives
    _extra_stats: dict[str, type] = {}

    def __init__(self, vars=None, *, threads: int = 1, route: str = "auto", warm_start: int = 0, sigma_every: int = 0,
                 model=None, initial_point=None, compile_kwargs=None, blocked=False, rng=None):
        self.options = TreeStepOptions(threads, route, warm_start, sigma_every)
        model = pm.modelcontext(model)
        if vars is None:
            vars = [v for v in model.value_vars if isinstance(model.values_to_rvs[v].owner.op, BARTRV)]
        # a basis term (w * F, what BART returns with leaf_basis) stands for its coefficient F
        vars = [bart_of(v) for v in (vars if isinstance(vars, (list, tuple)) else [vars])]
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
        self.dirs = self._monotone_dirs(op)
        self.var_name = rv.name
        self.value_name = value_var.name
        # a LevelShift (steps/level.py) run after each sweep: set by pymc_treesamplers.bambi for group intercepts
        self.level: LevelShift | None = None
        self.thr_table = self.columns.threshold_table()
        self.m = op.m
        self.n, self.p = X.shape
        self.sparse = op.sparse
        shared = pm.pytensorf.make_shared_replacements(initial_point, [value_var], model)
        value = np.asarray(initial_point[value_var.name])
        basis = leaf_basis_of(rv) if op.basis_columns else None
        self.k = 1 if value.ndim == 1 or basis is not None else value.shape[0]
        # the width of a leaf's statistics, for the samplers that keep them (engine/leaves.py: n_stats)
        self.leaf_width = 6 if op.lines else 2 if basis is None else op.basis_columns * (op.basis_columns + 1)
        weights = self.columns.column_weights(op.split_weights(self.p))
        self.outputs: list[Output] = []
        if basis is not None:
            self.outputs.append(self._basis_output(model, rv, value_var, shared, initial_point, value, basis,
                                                   weights, compile_kwargs))
        for i in range(self.k if basis is None else 0):
            view = None if value.ndim == 1 else OutputView(value_var, i, value)
            # the one place a likelihood route is chosen; the step then talks to it through leaf_prior,
            # sweep_input and compile_record only
            working = working_model(model, rv, value_var, shared, initial_point, op.mu0, compile_kwargs, view=view,
                                    route=self.route)
            mu0, s2 = working.leaf_prior(op, self.m)
            if op.lines:
                chain = self._line_chain(op, X, mu0, s2, weights)
            else:
                chain = (Chain.new(self.columns.codes, self.m, alpha=op.alpha, beta=op.beta, mu0=mu0, s2=s2,
                                   split_weights=weights, threads=self.threads, start=False,
                                   new_scratch=partial(self.new_scratch, self.columns.codes, self.m))
                         if i == 0 else self.outputs[0].chain.sibling(mu0, s2, start=False))
            self.outputs.append(Output(working, chain, view))
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
            # line leaves: the standardisation of their covariates, every covariate's center then every one's
            # inverse scale (2p values, the same every draw), which predictions from the trace need
            **({"lines": object} if op.lines else {}),
            # share of tree proposals the likelihood correction accepted (non-Gaussian likelihoods)
            **({"mh_accept": np.float64} if any(out.corrected for out in self.outputs) else {}),
        }
        self._stat_names = {k: f"{self.var_name}_{k}" for k in base}
        # "warning": PyMC logs a SamplerWarning found under this name in a draw's stats (as NUTS's divergences)
        # the backends that read shapes (ZarrTrace) get the per-covariate stats as the vectors they are; the
        # default backend, which allocates by dtype alone, keeps them as objects
        vectors = {"split_counts": (np.int64, [self.p]), "split_weights": (np.float64, [self.p]),
                   "lines": (np.float64, [2 * self.p])}
        self.lines = np.array([*op.line_center, *op.line_inv_scale]) if op.lines else None
        self.stats_dtypes_shapes = {"tune": (bool, []), "warning": (SamplerWarning, None),
                                    **{self._stat_names[k]: vectors.get(k, (d, [])) for k, d in base.items()}}
        self.stats_dtypes = [{"tune": bool, "warning": SamplerWarning,
                              **{self._stat_names[k]: d for k, d in base.items()}}]
        if self.dirs is not None and (corrected := [out for out in self.outputs if out.corrected]):
            raise ValueError(f"{type(self).__name__}: monotone constraints are sampled exactly under a Normal "
                             "likelihood and the augmented ones (Bernoulli, Binomial, Student-t); this model's "
                             f"likelihood takes the corrected route {type(corrected[0].working).__name__}, whose "
                             "Metropolis-Hastings correction the monotone update does not carry (docs/monotone.md)")
        self.scale = self._scale_in_sweep(model, shared, initial_point, value_var, op, compile_kwargs)
        step_vars = [value_var] if self.scale is None else [value_var, self.scale.value_var]
        super().__init__(step_vars, shared, blocked=blocked, rng=rng)
        self.tune = True
        self.f = np.zeros((1, self.n) if value.ndim == 1 else value.shape)
        self.sweeper = self._new_sweeper()
        if self.scale is not None and not isinstance(self.sweeper, CPUSweeper):
            raise ValueError(f"sigma_every is not available with {type(self.sweeper).__name__} (the scale is updated "
                             "between the trees of a CPU sweep): use backend='cpu' or sigma_every=0")
        self._reset_chain()
        self.sweeper.compile(self)

    def _scale_in_sweep(self, model, shared, initial_point, value_var, op, compile_kwargs) -> ScaleInSweep | None:
        """With ``sigma_every``: the noise scale this step updates between its trees (steps/scale_in_sweep.py)."""
        every = self.options.sigma_every
        if not every:
            return None
        if self.k != 1 or op.basis_columns or op.lines:
            raise ValueError(f"sigma_every={every} needs a BART with one output and constant leaves; use "
                             "sigma_every=0 (the default), which leaves the scale to its own step")
        return ScaleInSweep.for_step(model, self.outputs[0].working, shared, initial_point, value_var, every, self.m,
                                     compile_kwargs)

    @property
    def scale_tuning(self) -> tuple[float, int] | None:
        """The tuning of the scale this step updates (``sigma_every``), as its sampling state holds it."""
        return None if self.scale is None else self.scale.tuning

    @scale_tuning.setter
    def scale_tuning(self, value) -> None:
        if self.scale is not None and value is not None:
            self.scale.tuning = value

    def _basis_output(self, model, rv, value_var, shared, initial_point, value, basis, weights, compile_kwargs):
        """The one output of a BART on a basis of several columns: the working model of its term
        (:class:`~pymc_treesamplers.routes.reading.BasisView`) and a chain whose leaves hold the coefficients."""
        op = rv.owner.op
        view = BasisView(value_var, basis, value)
        working = working_model(model, rv, value_var, shared, initial_point, op.mu0, compile_kwargs, view=view,
                                route=self.route)
        # defaults on the route's scale (a link's, on the augmentation routes), shared out per column; what the
        # user gave stays
        term_mu0, term_s2 = working.leaf_prior(op, self.m)
        means, sds = coefficient_prior(basis_spec(basis, self.n), None, None, term_mu0, float(np.sqrt(term_s2)))
        means = means if op.auto_leaf[0] else op.coef_mu0
        sds = sds if op.auto_leaf[1] else op.coef_sd
        chain = Chain.new(self.columns.codes, self.m, alpha=op.alpha, beta=op.beta, mu0=np.array(means),
                          s2=np.array(sds) ** 2, split_weights=weights, threads=self.threads, start=False,
                          new_scratch=partial(self.new_scratch, self.columns.codes, self.m), basis=basis)
        return Output(working, chain, view, term=np.zeros(self.n))

    def _line_chain(self, op, X, mu0: float, s2: float, weights) -> Chain:
        """The chain of one output of a BART whose leaves hold lines in their parent's covariate (pymc-bart's
        ``response="linear"``, ``"mix"``): on the basis ``[1, z]`` of model/basis.py, the leaf prior split between
        intercept and slope."""
        means, variances = op.line_prior(mu0, s2)
        # the engine picks a leaf's slope column by the split column its parent splits on: a covariate's columns
        # (x, -x with missing values; a category's 0/1 columns, whose z is 0) all carry that covariate's z
        covariates = op.line_basis(X)
        basis = np.column_stack([covariates[:, 0], covariates[:, 1 + self.columns.source]])
        return Chain.new(self.columns.codes, self.m, alpha=op.alpha, beta=op.beta, mu0=means, s2=variances,
                         split_weights=weights, threads=self.threads, start=False,
                         new_scratch=partial(self.new_scratch, self.columns.codes, self.m),
                         basis=basis, by_split=True, slab=op.leaf_slab)

    def output_values(self) -> list[tuple[Output, np.ndarray]]:
        """Each output with its rows of the step's value ``f``: one row each, or all of them (the coefficients)
        for a BART on a basis of several columns."""
        if self.outputs[0].term is not None:
            return [(self.outputs[0], self.f)]
        return list(zip(self.outputs, self.f, strict=True))

    # the shared options, as attributes of the step
    threads = property(lambda self: self.options.threads)
    route = property(lambda self: self.options.route)
    warm_start = property(lambda self: self.options.warm_start)

    # a BART vector has one output: its working model, prior, data and forest by the names of one
    working = property(lambda self: self.outputs[0].working)
    prior = property(lambda self: self.outputs[0].prior)
    corrected = property(lambda self: self.outputs[0].corrected)
    data = property(lambda self: self.outputs[0].chain.data)

    @property
    def forest(self):
        return self.outputs[0].chain.forest

    @forest.setter
    def forest(self, forest) -> None:
        self.outputs[0].chain.restore(forest)

    # ------------------------------------------------------------------ what a sampler provides

    supports_monotone = False
    """Whether the step samples a BART with monotone constraints (``BART(monotone=...)``)."""

    def _monotone_dirs(self, op) -> np.ndarray | None:
        """The direction of every split column under the BART's monotone constraints, or None without any; refused
        by name for a step that cannot sample them (and as :func:`split_directions` refuses)."""
        if not op.monotone:
            return None
        if not self.supports_monotone:
            raise ValueError(f"{type(self).__name__} cannot sample a BART with monotone constraints: use "
                             "pmt.CGMStep (the default step) or pmt.GrowPruneStep (docs/monotone.md)")
        return split_directions(op.monotone, self.columns.source)

    def new_scratch(self, codes: np.ndarray, m: int):
        """The kernel's scratch record for ``m`` trees on the rows of ``codes`` (subclasses)."""
        raise NotImplementedError

    def sampler_stats(self, scratch) -> dict:
        """Values of the stats declared in ``_extra_stats`` from the sampler's scratch record right after one
        output's sweep (subclasses)."""
        return {}

    def _new_sweeper(self) -> Sweeper:
        """Where the sweeps run, chosen once: this machine's cores (a subclass may offer other backends)."""
        return CPUSweeper()

    def _failure(self, j: int) -> str:
        """The error message when the update of tree ``j`` failed (subclasses whose update can fail)."""
        return f"{type(self).__name__}: the update of tree {j} failed"

    # ----------------------------------------------------------------------------- the chain

    def _reset_chain(self) -> None:
        self.watch = Watch()  # a chain's length is known once PyMC sets it up (setup_chain)
        # the weights first: the roots cache their available weight
        self.split_weights = None if self.sparse is None else new_split_weights(
            self.sparse, self.p, self.rng, self.columns.source, self.columns.column_weights(np.ones(self.p)))
        self._use_split_weights()
        self.sweeper.start(self)
        self.f_is_current = False

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
        self.watch = Watch(length=tune + draws)

    @property
    def trees(self) -> list | None:
        """The forests as the sampling state holds them: None while no sweep has run since the chain's start."""
        return self.sweeper.trees(self)

    @trees.setter
    def trees(self, forests: list | None) -> None:
        if forests is None:
            self._use_split_weights()  # the roots of a new chain cache their available weight
        if self.sweeper.restore(self, forests):
            self.f_is_current = False

    def __setstate__(self, state: dict) -> None:
        # a step arriving in a worker process (PyMC's chains, dask tasks): its chains restore themselves, a
        # device's state did not travel
        self.__dict__.update(state)
        if self.sweeper.arrived(self):
            self.f_is_current = False

    @staticmethod
    def competence(var, has_grad):
        if isinstance(getattr(var.owner, "op", None), BARTRV):
            check_nuts_sampler(var)  # pm.sample(nuts_sampler="nutpie", ...) is refused here, by name
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def _warming(self) -> bool:
        """Whether this draw is one of the chain's first ``warm_start`` tuning draws: a grow-from-root sweep
        (:mod:`pymc_treesamplers.engine.updates.gfr`) instead of the sampler's. Never after tuning, so no kept
        draw comes from it."""
        return self.tune and self.watch.draw < self.warm_start

    def _check_value(self, value: np.ndarray) -> None:
        """Refuse a BART value that is not the one this step last returned (changed behind its back)."""
        if self.f_is_current and not np.array_equal(value, self.f.ravel() if value.dtype == self.f.dtype else
                                              self.f.ravel().astype(value.dtype)):
            raise RuntimeError(
                f"the value of the BART variable {self.var_name!r} was changed outside its tree step, so it no longer "
                "matches the trees. Let one pymc_treesamplers step own each BART variable (no other step, no manual "
                "edits of the point); to resume a chain, restore the step's sampling_state together with the point."
            )

    def step(self, point: dict) -> tuple[dict, list[dict[str, Any]]]:
        """PyMC's step (the sweep, :meth:`astep`), then the level shift when one is set: it moves the BART value
        and a group term's value together, along the line the likelihood cannot see."""
        point, stats = super().step(point)
        if getattr(self, "level", None) is not None:
            point = self.level.shift(self, point, self.rng)
            # the draw's stored forest is the shifted one, which the point's BART value is the fit of
            stats[0][self._stat_names["forest"]] = self.sweeper.encode(self)
        return point, stats

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, list[dict[str, Any]]]:
        self._check_value(q0.data[: self.f.size])
        if self.scale is not None:  # the scale variable's value follows the BART value's in the step's vars
            self.scale.start(float(q0.data[self.f.size]), self.tune)
        warm = self._warming()
        self._use_split_weights()  # cheap (p numbers); a restored state brings its own
        try:
            draw = self.sweeper.draw(self, warm)
        except SweepFailed as err:
            raise RuntimeError(self._failure(err.tree)) from None
        self.f_is_current = True
        changed = np.concatenate([one.changed for one in draw.outputs])
        mh_counts = np.zeros(2, dtype=np.int64)
        for one in draw.outputs:
            if one.mh_counts is not None:
                mh_counts += one.mh_counts
        stats = {"tune": self.tune,
                 "warning": self.watch.count(self.var_name, type(self).__name__, self.tune, changed, mh_counts),
                 **{self._stat_names[k]: v for k, v in self._draw_stats(draw, changed, warm).items()}}
        value = self.f.ravel().astype(q0.data.dtype)
        if self.scale is not None:
            value = np.append(value, np.asarray(self.scale.x, dtype=q0.data.dtype))
        return RaveledVars(value, q0.point_map_info), [stats]

    def _draw_stats(self, draw: Draw, changed: np.ndarray, warm: bool) -> dict:
        """The stats of one draw (their names without the variable's prefix), from what the sweeper gave back."""
        depth = leaves = 0.0
        split_counts = np.zeros(self.data.codes.shape[0], dtype=np.int64)
        for one in draw.outputs:
            depth, leaves = depth + one.depth / self.k, leaves + one.leaves / self.k
            split_counts += one.split_counts
        # a warm-start sweep ran no sampler update: its own stats are NaN for that draw
        per_output = [{k: np.nan for k in self._extra_stats} if warm else one.sampler for one in draw.outputs]
        accepted = [one.mh_counts[1] / max(one.mh_counts[0], 1) for one in draw.outputs if one.mh_counts is not None]
        sw = self.split_weights
        return {
            "tree_depth": depth,
            "n_leaves": leaves,
            "accept": float(changed.mean()),
            # per covariate (a covariate's two split columns, with missing values, count together)
            "split_counts": np.bincount(self.columns.source, split_counts, minlength=self.p).astype(np.int64),
            "forest": draw.forest,
            "warm": warm,
            **{name: float(np.mean([s[name] for s in per_output])) for name in per_output[0]},
            **({"mh_accept": float(np.mean(accepted))} if accepted else {}),
            **({"split_weights": np.exp(sw.logs), "split_concentration": float(sw.conc[0])} if sw is not None else {}),
            **({"lines": self.lines} if self.lines is not None else {}),
        }
