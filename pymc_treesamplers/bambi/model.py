"""A bambi model whose formula can hold a forest: ``Model("y ~ bart(x1, x2) + z + (1|g)", data)``.

The forest is a :class:`pymc_treesamplers.BART` added to the parent parameter's linear predictor before the inverse
link, next to bambi's common and group-specific terms. Fitting samples its trees with the default tree step (or
``tree_step=``) and every other parameter by PyMC's assignment (NUTS); predictions at new rows come from the
forests stored in the trace (:func:`pymc_treesamplers.predict`), draw by draw.

**The intercept is the forest's mean.** A forest's leaf prior is centred on the response (``mu0``), and a free
intercept beside it would trade places with the forest's level: their sum is identified, each alone is not, and
chains would disagree on the split. So a formula's intercept does not add a parameter: the forest carries the
level, and ``Intercept`` in the trace is a deterministic, the forest's mean over the training rows (less the
centred common terms' share, as bambi reports every intercept), so that ``Intercept + X b + (forest - its mean)``
is the linear predictor bambi predicts with. A formula without an intercept (``0 + ...``) has no ``Intercept``;
the forest still carries the level, and bambi does not centre the common terms.

**Group intercepts** ``(1|g)`` share the level too: ``fit`` has the tree step draw, after each sweep, the split
of the level between the forest and each such term exactly (:mod:`pymc_treesamplers.steps.level`).
"""

from __future__ import annotations

import contextvars
import sys
import warnings
from dataclasses import dataclass

import bambi as bmb
import formulae as fm
import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from ..model.bart import BART
from ..model.callers import UnsupportedMethodError
from ..results.predictive import predict as forest_predict
from ..steps.level import GroupLevel, LevelShift
from ..steps.mh import CGMStep
from . import internals

__all__ = ["Model", "bart"]

# bambi's inference methods that never reach pm.sample's compound step (vi, laplace) or hand the model to an
# external NUTS (nutpie, numpyro, blackjax): none of them can sample trees
_NO_TREES = ("nutpie", "numpyro", "blackjax", "vi", "laplace")
# BART's arguments that the term sets itself
_TERM_SETS = ("name", "X", "Y", "shape", "size", "dims", "observed", "leaf_basis")
_OBS_DIM = "__bart_obs__"  # the forest's own rows: bambi's "__obs__" is dropped on predicting at new rows
# families whose parent has more than one linear predictor per row (categories, thresholds)
_SEVERAL_PREDICTORS = ("categorical", "multinomial", "dirichlet_multinomial", "cumulative", "sratio")

# set while one of our models evaluates its formula: the options each `bart(...)` call was evaluated with
_EVALUATING: contextvars.ContextVar[list | None] = contextvars.ContextVar("pmt_bambi_evaluating", default=None)
# set while one of our models predicts: the InferenceData (its sample_stats hold the forests) and the new rows as
# the caller gave them (formulae sees the forest's columns with their missing values filled)
_PREDICTING: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("pmt_bambi_predicting", default=None)


def bart(*columns, **options):
    """The forest term of a formula in :class:`pymc_treesamplers.bambi.Model`: ``bart(x1, x2, m=50, ...)``.

    Positional arguments are data columns (names, not expressions); keyword arguments are
    :class:`~pymc_treesamplers.BART`'s options (``m``, ``alpha``, ``beta``, ``k``, ``mu0``, ``sigma_mu``,
    ``split_prior``, ``split_rules``, ``monotone``, ...), given as numbers or strings in the formula, or as names
    of objects in the calling scope (``bart(x1, x2, monotone=mono)`` with ``mono = {"x1": 1}``).

    Called by bambi's own ``bambi.Model`` it would be a linear term, so it raises there.

    >>> import pymc_treesamplers.bambi as pmb
    >>> # pmb.Model("y ~ bart(x1, x2, m=50) + z + (1|g)", data).fit()
    """
    sink = _EVALUATING.get()
    if sink is None:
        raise TypeError("bart(...) in a formula is pymc-treesamplers' forest term: write the model with "
                        "pymc_treesamplers.bambi.Model (bambi.Model would make its columns linear coefficients)")
    sink.append(options)
    return internals.zero_offset(len(columns[0]) if columns else 0)


@dataclass
class _Forest:
    """The formula's forest: the PyMC variable's name, the covariates by name, BART's options, its training rows
    (``X``, with their missing values), the response they are scaled from, and the intercept's name (or None)."""

    name: str
    columns: list[str]
    options: dict
    X: pd.DataFrame
    Y: np.ndarray
    level: str | None

    def variable(self):
        """The BART variable in the model being built (made on first call)."""
        model = pm.modelcontext(None)
        if self.name not in model.named_vars:
            model.add_coords({_OBS_DIM: np.arange(len(self.Y))})
            forest = BART(self.name, self.X, self.Y, dims=_OBS_DIM, **self.options)
            if self.level is not None:
                # the reported intercept: the forest's mean over the training rows (bambi un-centres it after
                # sampling like any intercept); not part of the linear predictor, which holds the forest whole
                pm.Deterministic(self.level, forest.mean())
        return model[self.name]

    def intercept(self, label, **_):
        """The ``dist`` of the intercept's prior: makes the forest, whose mean is the intercept; adds nothing to
        the linear predictor itself (the forest term adds the forest whole)."""
        self.variable()
        return pt.zeros((1,))

    def values(self, posterior, in_sample) -> xr.DataArray:
        """The forest's part of the linear predictor bambi predicts with, ``(chain, draw, __obs__)``: the trace's
        own values at the training rows, the stored forests' at new rows; less the training rows' mean when the
        intercept reports it."""
        if self.name in posterior:
            fit = posterior[self.name].transpose("chain", "draw", _OBS_DIM).values
        else:
            fit = self._predict(self.X)
        if in_sample:
            out = fit
        else:
            out = self._predict(_PREDICTING.get()[1][self.columns])
        if self.level is not None:
            out = out - fit.mean(axis=2, keepdims=True)
        coords = {dim: posterior[dim].values for dim in ("chain", "draw")}
        return xr.DataArray(out, dims=("chain", "draw", "__obs__"), coords=coords)

    def _predict(self, X) -> np.ndarray:
        idata = _PREDICTING.get()[0]
        if "sample_stats" not in idata.children:
            raise ValueError(f"predicting {self.name} at new rows needs the whole InferenceData that fit() returned "
                             "(its sample_stats hold the forests)")
        return forest_predict(idata, X, self.name)


class _ForestComponent(internals.DistributionalComponent):
    """bambi's parent component, adding the forest to the linear predictor it predicts with."""

    _pmt_forest: _Forest

    def predict(self, idata, data=None, *args, **kwargs):
        forest = self._pmt_forest
        if data is not None:
            missing = [c for c in forest.columns if c not in getattr(data, "columns", ())]
            if missing:
                raise ValueError(f"data lacks the column(s) {missing} of the formula's {forest.name}")
        token, sink = _PREDICTING.set((idata, data)), _EVALUATING.set([])
        try:
            return super().predict(idata, _filled(data, self._pmt_forest.columns), *args, **kwargs)
        finally:
            _PREDICTING.reset(token)
            _EVALUATING.reset(sink)

    def predict_common(self, posterior, data, in_sample, *args, **kwargs):
        linear = super().predict_common(posterior, data, in_sample, *args, **kwargs)
        return linear + self._pmt_forest.values(posterior, in_sample)


def _filled(data, columns):
    """``data`` with missing values of the forest's columns filled, for formulae (which refuses or drops rows with
    any, but whose evaluation of ``bart(...)`` is only a column of zeros); the forest reads the original."""
    if data is None:
        return None
    if not isinstance(data, pd.DataFrame):
        raise ValueError("'data' must be a pandas DataFrame")
    todo = [c for c in columns if c in data.columns and data[c].isna().any()]
    if not todo:
        return data
    out = data.copy()
    for c in todo:
        known = out[c].dropna()
        if known.empty:
            raise ValueError(f"column {c!r} of the forest is missing in every row")
        out[c] = out[c].fillna(known.iloc[0])
    return out


class Model(bmb.Model):
    """A :class:`bambi.Model` whose formula may hold one forest term, ``bart(col, ...)``.

    Takes bambi's arguments (formula, data, family, priors, link, categorical, potentials, dropna, auto_scale,
    noncentered, center_predictors, extra_namespace). The families are bambi's with one linear predictor per row
    (gaussian, bernoulli, poisson, negativebinomial, gamma, t, ...). The intercept is the forest's mean (see the
    module's docstring): it takes no prior. Missing values in the forest's columns are BART's (docs/missing.md),
    also under ``dropna=True``, which drops rows by the other terms' columns only.

    >>> import numpy as np, pandas as pd
    >>> import pymc_treesamplers.bambi as pmb
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x1": rng.uniform(size=60), "x2": rng.uniform(size=60), "g": rng.choice(list("abc"), 60)})
    >>> df["y"] = np.sin(6 * df.x1) + (df.g == "b") + rng.normal(scale=0.3, size=60)
    >>> model = pmb.Model("y ~ bart(x1, x2, m=20) + (1|g)", df)
    >>> # idata = model.fit(draws=500, chains=4); model.predict(idata, data=new_rows)
    """

    def __init__(self, formula, data, family="gaussian", priors=None, *args, extra_namespace=None, **kwargs):
        main = formula.main if isinstance(formula, bmb.Formula) else formula
        if isinstance(formula, bmb.Formula):
            for extra in formula.additionals:
                if any(internals.bart_calls(fm.model_description(extra))):
                    raise ValueError(f"bart(...) in the formula of an auxiliary parameter ({extra!r}) is not "
                                     "supported: write that model with pmt.BART in a pm.Model")
        if not isinstance(main, str):
            raise TypeError(f"formula must be a string or a bambi.Formula, got {type(formula).__name__}")
        alone, misplaced = internals.bart_calls(fm.model_description(main))
        if misplaced:
            raise ValueError(f"bart(...) is a forest added to the linear predictor; it must be a term of its own, "
                             f"found {'; '.join(misplaced)}")
        if not alone:
            raise ValueError("the formula has no bart(...) term: use bambi.Model for a model without a forest")
        if len(alone) > 1:
            names = ", ".join(map(internals.call_name, alone))
            raise ValueError(f"the formula has {len(alone)} bart(...) terms ({names}): give one, with every column "
                             "the forest may split on")
        call = alone[0]
        columns, other = internals.call_columns(call)
        if other or not columns:
            raise ValueError(f"{internals.call_name(call)}: bart() takes the names of data columns"
                             + (f", not {other}" if other else ", at least one") + " (make a column for an expression)")
        if not isinstance(data, pd.DataFrame):
            raise ValueError("'data' must be a pandas DataFrame.")
        absent = [c for c in columns if c not in data.columns]
        if absent:
            raise ValueError(f"{internals.call_name(call)}: no column {absent} in data")
        priors = dict(priors or {})
        if "Intercept" in priors:
            raise ValueError("with a bart(...) term the intercept is the forest's mean, not a parameter: set the "
                             "forest's leaf prior (bart(..., mu0=..., sigma_mu=...)), not a prior on 'Intercept'")
        namespace = _caller_namespace(sys._getframe(1), extra_namespace)
        used = fm.model_description(main).var_names
        # the forest's columns that no other term reads: formulae sees them filled; the forest, with their NaNs
        others = set().union(*(getattr(t, "var_names", set()) for t in fm.model_description(main).terms
                               if not (hasattr(t, "components") and t.components == [call])))
        filled = _filled(data, [c for c in columns if c not in others])
        sink = _EVALUATING.set([])
        try:
            super().__init__(main if not isinstance(formula, bmb.Formula) else formula, filled, family, priors,
                             *args, extra_namespace=namespace, **kwargs)
            evaluated = _EVALUATING.get()
        finally:
            _EVALUATING.reset(sink)
        self.data = self.data.copy()
        for c in columns:
            if c not in others and data[c].isna().any():
                self.data[c] = self.data[c].where(data[c].notna().to_numpy())
        if self.family.name in _SEVERAL_PREDICTORS or np.ndim(np.squeeze(self.response_term.data)) != 1:
            raise ValueError(f"bart(...) needs a family with one linear predictor per row; {self.family.name!r} "
                             "has several")
        options = dict(evaluated[-1]) if evaluated else {}
        fixed = sorted(set(options) & set(_TERM_SETS))
        if fixed:
            raise ValueError(f"{internals.call_name(call)}: the term sets {fixed} itself")
        keep = np.ones(len(data), dtype=bool)
        if kwargs.get("dropna", False):
            keep = ~filled[sorted(used & set(filled.columns))].isna().any(axis=1).to_numpy()
        component = self.parameters[self.family.likelihood.parent]
        level = component.intercept_term
        forest = _Forest(name=internals.call_name(call), columns=columns, options=options,
                         X=data.loc[keep, columns].reset_index(drop=True),
                         Y=np.asarray(np.squeeze(self.response_term.data), dtype=float),
                         level=None if level is None else (level.alias or level.name))
        name = internals.call_name(call)
        component.terms[name] = internals.ForestTerm(component.terms[name].term, component.prefix, forest.variable)
        if level is not None:
            level.prior = bmb.Prior("the forest's mean", dist=forest.intercept)
        internals.adopt_component(component, _ForestComponent)
        component._pmt_forest = forest
        self.forest = forest

    def fit(self, draws=1000, tune=1000, *args, inference_method="pymc", tree_step=None,
            level_shift: bool | None = None, **kwargs):
        """bambi's ``fit``, sampling the forest's trees with the default tree step (or ``tree_step``, a tree step
        class such as :class:`pymc_treesamplers.PGBARTStep`) and every other parameter by PyMC's assignment.

        ``level_shift``: with group intercepts ``(1|g)`` (bambi's Normal, mean 0, with a sigma hyperprior), the tree
        step also draws, after each sweep, the split of the level between the forest and the group intercepts
        exactly (:mod:`pymc_treesamplers.steps.level`), which the sweep and NUTS alone move by a random walk.
        ``None`` (default): wherever it applies, with a warning where it cannot (a tree step with line leaves or on
        the GPU, a model with potentials); ``True``: required (raises where it cannot); ``False``: left out.

        ``inference_method`` must be ``"pymc"``: nutpie, numpyro and blackjax run an external NUTS and vi and
        laplace a continuous approximation, none of which can sample trees; each raises, naming the forest.

        >>> # idata = model.fit(draws=1000, chains=4, tree_step=pmt.GrowPruneStep)
        """
        method = str(inference_method).lower()
        if method in _NO_TREES:
            raise UnsupportedMethodError(
                f"fit(inference_method={inference_method!r}) cannot sample the trees of the formula's "
                f"{self.forest.name}, a BART: {method} treats it as a continuous vector. Use "
                "inference_method='pymc' (the default), which samples the trees with pymc-treesamplers' tree "
                "steps and the other parameters with NUTS")
        if not self.built:
            self.build()
        groups = [] if level_shift is False else self._level_groups()
        if tree_step is not None or groups:
            model = self.backend.model
            with model:
                step = (tree_step or CGMStep)(vars=[model[self.forest.name]])
            if groups:
                why = self._level_refused(step)
                if why is None:
                    step.level = LevelShift(groups)
                elif level_shift:
                    raise ValueError(f"level_shift=True: {why}")
                else:
                    warnings.warn(f"no level shift for the group intercepts ({why}): their mean and the forest's "
                                  "level may mix slowly (docs/bambi.md)", stacklevel=2)
            given = kwargs.pop("step", None)
            kwargs["step"] = [step] + (list(given) if isinstance(given, (list, tuple)) else
                                       [] if given is None else [given])
        elif level_shift:
            raise ValueError("level_shift=True: the formula has no group intercepts (1|g) with a Normal(0, sigma) "
                             "prior for it to move")
        return super().fit(draws, tune, *args, inference_method=inference_method, **kwargs)

    def _level_refused(self, step) -> str | None:
        """Why the level shift cannot run with ``step`` in this model, or None."""
        if self.backend.model.potentials:
            return "the model has potentials, which may depend on the forest or the group intercepts"
        try:
            LevelShift([]).check(step)
        except ValueError as err:
            return str(err)
        return None

    def _level_groups(self) -> list[GroupLevel]:
        """The group intercepts whose mean shares the forest's level, as the level shift moves them: bambi's
        Normal(0, sigma) ones with a sigma hyperprior, non-centred (``label_offset ~ N(0, 1)``) or centred."""
        model = self.backend.model
        groups = []
        for label, prior, sigma_name in internals.intercept_groups(self.parameters[self.family.likelihood.parent]):
            args = getattr(prior, "args", {})
            mu = args.get("mu", 0)
            if (getattr(prior, "name", None) != "Normal" or np.ndim(mu) != 0 or mu != 0
                    or not isinstance(args.get("sigma"), bmb.Prior) or sigma_name not in model.named_vars):
                continue
            noncentred = f"{label}_offset" in model.named_vars
            rv = model[f"{label}_offset" if noncentred else label]
            if rv not in model.free_RVs:
                continue
            # the scale at the point's (transformed) values: compiled on the RV itself it would be a new draw
            value = model.replace_rvs_by_values([model[sigma_name]])[0]
            scale = model.compile_fn(value, inputs=model.value_vars, on_unused_input="ignore", point_fn=True)
            groups.append(GroupLevel(model.rvs_to_values[rv].name, scale, noncentred))
        return groups

    def __str__(self):
        text = super().__str__()
        options = ", ".join(f"{k}={v!r}" for k, v in self.forest.options.items())
        line = f"    {self.forest.name} ~ BART({options})" + (
            f"; {self.forest.level} = the forest's mean" if self.forest.level else "")
        return text + "\n  Forest\n" + line


def _caller_namespace(frame, extra) -> dict:
    """The namespace a formula sees: the caller's (as bambi's own Model gives formulae), then ``extra_namespace``;
    refusing a ``bart`` there that is not the forest term."""
    if extra is not None and not isinstance(extra, dict):
        raise ValueError("'extra_namespace' must be a dictionary or None")
    namespace = {**frame.f_globals, **frame.f_locals, **(extra or {})}
    own = namespace.get("bart", bart)
    if own is not bart:
        where = "extra_namespace" if extra and "bart" in extra else "the calling scope"
        raise ValueError(f"the formula's bart(...) is the forest term, but {where} defines another 'bart' "
                         f"({type(own).__name__}): rename it (its calls would not be a forest)")
    namespace["bart"] = bart
    return namespace
