"""Plots of a BART fit, from the InferenceData alone (matplotlib, on pyplot figures as ArviZ's and
pymc-bart's are; each returns its Figure, except where pymc-bart's call returns Axes:
``plot_variable_importance``, ``plot_scatter_submodels`` and the variable-first forms of the
partial-dependence plots).

Names and arguments follow pymc-bart's where they mean the same (``plot_variable_inclusion``,
``plot_variable_importance``, ``plot_scatter_submodels``, ``plot_pdp``, ``plot_ice``); every
function takes ``ax`` (one Axes, or an array of them for the multi-panel ones) to draw into,
ArviZ's ``backend`` (``"matplotlib"``, the only one here) and ``var_name`` for the BART variable.
Bands are central credible intervals of probability ``hdi_prob`` over posterior draws; partial
dependence is computed draw by draw from the stored forests (:func:`pymc_treesamplers.predict`), so
its band is the posterior uncertainty of the curve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure

from .diagnostics import _labels, choose_draws, coded_for, get_variable_inclusion, tree_size_trace
from .predictive import CodedX, check_new_X, predict

__all__ = [
    "find_fit",
    "plot_compare_samplers",
    "plot_convergence",
    "plot_dependence",
    "plot_ice",
    "plot_pdp",
    "plot_predicted_observed",
    "plot_scatter_submodels",
    "plot_tree_size",
    "plot_variable_importance",
    "plot_variable_inclusion",
]


def _figure(figsize) -> Figure:
    """A new Figure through pyplot, as ArviZ's and pymc-bart's plots make theirs: a notebook shows it (a
    Figure made outside pyplot shows as its repr in a kernel that has not imported pyplot) and
    ``plt.show()`` finds it."""
    import matplotlib.pyplot as plt

    return plt.figure(figsize=figsize, layout="constrained")


def _axes(ax, n: int = 1, ncols: int | None = None, figsize=None):
    """``n`` Axes: the ones given, or a new Figure's grid (:func:`_figure`)."""
    if ax is not None:
        axes = np.atleast_1d(ax).ravel()
        if axes.size < n:
            raise ValueError(f"ax holds {axes.size} Axes, {n} are needed")
        return axes[0].figure, axes
    ncols = ncols or min(n, 3)
    nrows = -(-n // ncols)
    fig = _figure(figsize or (4.0 * ncols, 3.2 * nrows))
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for extra in axes[n:]:
        extra.set_visible(False)
    return fig, axes


def _check_backend(backend) -> None:
    """ArviZ's ``backend`` argument: only matplotlib draws these plots."""
    if backend not in (None, "matplotlib"):
        raise ValueError(f"backend={backend!r}: these plots are drawn with matplotlib only (backend='matplotlib')")


def _band(values: np.ndarray, hdi_prob: float) -> np.ndarray:
    if not 0.0 < hdi_prob < 1.0:
        raise ValueError(f"hdi_prob must lie in (0, 1), got {hdi_prob!r}")
    tail = (1.0 - hdi_prob) / 2.0
    return np.quantile(values, [tail, 1.0 - tail], axis=0)


def plot_variable_inclusion(idata, var_name: str | None = None, labels: Sequence[str] | None = None, X=None,
                            ax=None, backend: str | None = None, figsize=None, plot_kwargs: dict | None = None):
    """Share of splits per covariate (most used first), with each chain's share as a dot; with a
    Dirichlet prior on the split weights also their posterior mean and 94% interval. The dashed line
    is ``1 / p``, every covariate used alike.

    pymc-bart's call, ``plot_variable_inclusion(idata, X, labels=None, figsize=None, plot_kwargs=None,
    ax=None)`` with X second, works and returns the Axes as pymc-bart does (ours returns the Figure);
    ``plot_kwargs``: ``color``, ``marker``, ``ls``, ``rotation``.

    >>> # pmt.plot_variable_inclusion(idata, "mu", X=X_df).savefig("inclusion.png")
    """
    from .diagnostics import _is_covariates, _one_bart

    _check_backend(backend)
    theirs = _is_covariates(var_name)
    if theirs:
        X, var_name = var_name, None
    var_name = _one_bart(idata, var_name)
    kw = {"color": "k", "marker": "o", "ls": "-", "rotation": None} | dict(plot_kwargs or {})
    inc = get_variable_inclusion(idata, var_name, labels=labels, X=X)
    fig, (axis,) = _axes(ax, figsize=figsize or (max(4.0, 0.6 * len(inc)), 3.2))
    pos = np.arange(len(inc))
    axis.bar(pos, inc["inclusion"], color="C0", alpha=0.6, label="all chains")
    axis.plot(pos, inc["inclusion"], color=kw["color"], ls=kw["ls"], lw=0.8, alpha=0.6)
    chains = [c for c in inc.columns if c.startswith("chain_")]
    for i, c in enumerate(chains):
        axis.plot(pos, inc[c], kw["marker"], color=kw["color"], ms=3, alpha=0.7, label="each chain" if i == 0 else None)
    if "weight" in inc.columns:
        w = inc["weight"].to_numpy()
        axis.errorbar(pos + 0.25, w, yerr=[w - inc["weight_lo"].to_numpy(), inc["weight_hi"].to_numpy() - w],
                      fmt="D", color="C1", ms=3, capsize=2, label="split weight (94%)")
    axis.axhline(1.0 / len(inc), color="0.5", ls="--", lw=1)
    rotation = kw["rotation"] if kw["rotation"] is not None else (45 if len(inc) > 6 else 0)
    axis.set_xticks(pos, inc.index, rotation=rotation, ha="right" if rotation else "center")
    axis.set_ylabel("share of splits" + (" / split weight" if "weight" in inc.columns else ""))
    axis.set_title(f"variable inclusion of {var_name}")
    axis.legend(frameon=False)
    return axis if theirs else fig


def plot_convergence(idata, var_name: str | None = None, kind: str = "ecdf", figsize=None, ax=None,
                     backend: str | None = None, rows: Sequence[int] | None = None) -> Figure:
    """Bulk ESS and R-hat over chains of the BART value at every training row (or ``rows``), as ECDFs
    (``kind="ecdf"``), densities (``"kde"``) or histograms (``"hist"``), with dashed lines at 100 * chains ESS and R-hat
    1.01: the per-row view pymc-bart's ``plot_convergence`` gave (its 0.13 only points to ArviZ).

    >>> # pmt.plot_convergence(idata, "mu")
    """
    from .diagnostics import _one_bart, f_convergence

    _check_backend(backend)
    if kind not in ("ecdf", "hist", "kde"):
        raise ValueError(f"kind must be 'ecdf', 'kde' or 'hist', got {kind!r}")
    var_name = _one_bart(idata, var_name)
    if "posterior" not in idata.children or var_name not in idata["posterior"]:
        raise ValueError(f"no {var_name!r} in idata.posterior: plot_convergence reads the stored BART values")
    n = idata["posterior"][var_name].shape[-1]
    table = f_convergence(idata, var_name, rows=range(n) if rows is None else rows)
    chains = idata["posterior"][var_name].shape[0]
    fig, axes = _axes(ax, 2, ncols=2, figsize=figsize or (8.0, 3.2))
    for axis, col, ref, title in ((axes[0], "ess_bulk", 100 * chains, "bulk ESS"), (axes[1], "r_hat", 1.01, "R-hat")):
        values = np.sort(table[col].to_numpy())
        if kind == "ecdf":
            axis.step(values, np.arange(1, values.size + 1) / values.size, where="post", color="C0")
            axis.set_ylabel("share of rows")
        elif kind == "kde" and values.size > 1 and values.std() > 0:
            from scipy.stats import gaussian_kde

            xs = np.linspace(values.min(), values.max(), 200)
            axis.plot(xs, gaussian_kde(values)(xs), color="C0")
            axis.set_ylabel("density over rows")
        else:
            axis.hist(values, bins=min(30, max(5, values.size // 5)), color="C0", alpha=0.7)
            axis.set_ylabel("rows")
        axis.axvline(ref, color="0.5", ls="--", lw=1)
        axis.set_xlabel(title)
    axes[0].set_title(f"{var_name}: {chains} chains, {len(table)} rows", fontsize=9)
    return fig


def _submodels(vi_results: dict, submodels, labels) -> tuple[list[int], list[str]]:
    """The submodels to show (sorted; default all) and their tick labels."""
    p = len(vi_results["labels"])
    submodels = list(range(p)) if submodels is None else sorted(int(s) for s in submodels)
    if any(not 0 <= s < p for s in submodels):
        raise ValueError(f"submodels must be indices in [0, {p}), got {submodels}")
    labels = [str(vi_results["labels"][s]) for s in submodels] if labels is None else [str(x) for x in labels]
    if len(labels) != len(submodels):
        raise ValueError(f"labels has {len(labels)} entries for {len(submodels)} submodels")
    return submodels, labels


def plot_variable_importance(vi_results: dict, submodels: Sequence[int] | None = None,
                             labels: Sequence[str] | None = None, figsize=None, plot_kwargs: dict | None = None,
                             ax=None, backend: str | None = None):
    """R^2 of each submodel against the full model (:func:`~pymc_treesamplers.compute_variable_importance`):
    mean over draws with its band, covariates added left to right. Returns the Axes (pymc-bart's
    return; ``.figure`` is the Figure).

    pymc-bart's arguments: ``submodels`` (indices of the submodels to show), ``labels`` (their tick
    labels), ``figsize`` and ``plot_kwargs`` (``color_r2``, ``marker_r2``, ``marker_fc_r2``, ``ls_ref``,
    ``color_ref``, ``rotation``). The dashed line is R^2 = 1, the full model.

    >>> # pmt.plot_variable_importance(pmt.compute_variable_importance(idata, X))
    """
    _check_backend(backend)
    kw = {"color_r2": "C0", "marker_r2": "o", "marker_fc_r2": "white", "ls_ref": "--", "color_ref": "0.5",
          "rotation": 45} | dict(plot_kwargs or {})
    submodels, labels = _submodels(vi_results, submodels, labels)
    r2, hdi = np.asarray(vi_results["r2_mean"])[submodels], np.asarray(vi_results["r2_hdi"])[submodels]
    _, (axis,) = _axes(ax, figsize=figsize or (max(4.0, 0.7 * len(r2)), 3.4))
    pos = np.arange(len(r2))
    axis.errorbar(pos, r2, yerr=[np.clip(r2 - hdi[:, 0], 0, None), np.clip(hdi[:, 1] - r2, 0, None)],
                  fmt=kw["marker_r2"] + "-", color=kw["color_r2"], mfc=kw["marker_fc_r2"], capsize=3)
    axis.axhline(1.0, color=kw["color_ref"], ls=kw["ls_ref"], lw=1)
    axis.set_xticks(pos, labels, rotation=kw["rotation"], ha="right" if kw["rotation"] else "center")
    axis.set_ylabel("R² against the full model")
    axis.set_title(f"variable importance ({vi_results.get('method', 'VI')})")
    return axis


def plot_scatter_submodels(vi_results: dict, func: Callable | None = None, submodels: Sequence[int] | None = None,
                           grid="long", labels: Sequence[str] | None = None, figsize=None,
                           plot_kwargs: dict | None = None, ax=None, backend: str | None = None):
    """The full model's fit against each submodel's, per row (posterior means over the chosen draws).
    Returns the array of Axes, one per panel (pymc-bart's return).

    pymc-bart's arguments: ``func`` (applied to both fits first, e.g. an inverse link), ``submodels``,
    ``grid`` (``"long"``: one column, ``"wide"``: one row, or ``(rows, cols)``), ``labels``, ``figsize``
    and ``plot_kwargs`` (``marker_scatter``, ``color_scatter``, ``alpha_scatter``, ``color_ref``,
    ``ls_ref``). With k outputs every output gets its own panel per submodel.

    >>> # pmt.plot_scatter_submodels(vi, submodels=[0, 1, 2])
    """
    _check_backend(backend)
    kw = {"marker_scatter": ".", "color_scatter": "C0", "alpha_scatter": 0.5, "color_ref": "0.4",
          "ls_ref": "-"} | dict(plot_kwargs or {})
    submodels, labels = _submodels(vi_results, submodels, labels)
    full, preds = np.asarray(vi_results["preds_all"]), np.asarray(vi_results["preds"])
    if func is not None:
        full, preds = func(full), func(preds)
    full = full.mean(axis=0)
    outputs = full.shape[1] if full.ndim == 2 else 1
    full = full.reshape(full.shape[0], outputs)
    panels = [(s, lab, o) for s, lab in zip(submodels, labels, strict=True) for o in range(outputs)]
    _, axes = _axes(ax, len(panels), ncols=_grid_cols(grid, len(panels)), figsize=figsize)
    for axis, (s, lab, o) in zip(axes, panels, strict=False):
        sub = preds[s].mean(axis=0).reshape(full.shape[0], outputs)[:, o]
        axis.plot(sub, full[:, o], kw["marker_scatter"], alpha=kw["alpha_scatter"], color=kw["color_scatter"])
        lo, hi = min(full[:, o].min(), sub.min()), max(full[:, o].max(), sub.max())
        axis.plot([lo, hi], [lo, hi], color=kw["color_ref"], ls=kw["ls_ref"], lw=1)
        axis.set_title(lab + (f" (output {o})" if outputs > 1 else ""), fontsize=9)
        axis.set_xlabel("submodel")
        axis.set_ylabel("full model")
    return axes[: len(panels)]


def _grid_cols(grid, n: int) -> int | None:
    """Columns of a panel grid from pymc-bart's ``grid``: ``"long"`` one column, ``"wide"`` one row,
    ``(rows, cols)`` that many columns (rows grow to fit all panels), None: our default (3 across)."""
    if grid is None:
        return None
    if grid == "long":
        return 1
    if grid == "wide":
        return max(n, 1)
    if isinstance(grid, (tuple, list)) and len(grid) == 2 and all(isinstance(g, (int, np.integer)) and g > 0
                                                                 for g in grid):
        return int(grid[1])
    raise ValueError(f"grid must be 'long', 'wide' or (rows, cols), got {grid!r}")


def plot_tree_size(idata, var_name: str = "mu", ax=None, backend: str | None = None) -> Figure:
    """Mean number of leaves per tree at every draw, one line per chain (Figure 3 of the PG-BART
    paper): chains that sit at different sizes have not mixed.

    >>> # pmt.plots.plot_tree_size(idata, "mu")
    """
    _check_backend(backend)
    sizes = tree_size_trace(idata, var_name)
    fig, axes = _axes(ax, 2, ncols=2, figsize=(9.0, 3.2))
    for axis, name, label in zip(axes, ("n_leaves", "tree_depth"), ("leaves per tree", "depth"), strict=False):
        values = np.asarray(sizes[name].values, dtype=float)
        for c, trace in enumerate(values):
            axis.plot(trace, lw=0.8, label=f"chain {c}")
        axis.set_xlabel("draw")
        axis.set_ylabel(f"mean {label}")
    axes[0].legend(frameon=False, fontsize=8)
    axes[0].set_title(f"tree size of {var_name}")
    return fig


def _grid(column: np.ndarray, grid_points: int, xs_interval: str | None = None, xs_values=None) -> np.ndarray:
    """The values a covariate takes in a partial dependence: its distinct values if there are at most
    ``grid_points``, else that many quantiles; pymc-bart's ``xs_interval``: ``"quantiles"`` (at
    ``xs_values``, default 0.05, 0.2, ..., 0.8, 0.95), ``"linear"`` (``xs_values`` evenly spaced points,
    default 10, over the range) or ``"insample"`` (the distinct observed values)."""
    column = column[~np.isnan(column)]  # a partial dependence over the values present
    values = np.unique(column)
    if xs_interval is None:
        if values.size <= grid_points:
            return values
        return np.quantile(column, np.linspace(0.0, 1.0, grid_points))
    if xs_interval == "insample":
        return values
    if xs_interval == "linear":
        points = 10 if xs_values is None else xs_values
        if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 2:
            raise ValueError(f"xs_interval='linear' takes xs_values, a number of points >= 2, got {points!r}")
        return np.unique(np.linspace(column.min(), column.max(), int(points)))
    if xs_interval == "quantiles":
        q = np.array([0.05, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.95]) if xs_values is None else np.asarray(xs_values,
                                                                                                            float)
        if q.ndim != 1 or q.size < 1 or not ((q >= 0) & (q <= 1)).all():
            raise ValueError(f"xs_interval='quantiles' takes xs_values, quantiles in [0, 1], got {xs_values!r}")
        return np.unique(np.quantile(column, q))
    raise ValueError(f"xs_interval must be 'quantiles', 'linear' or 'insample', got {xs_interval!r}")


def _pdp_draws(idata, X, var_name, var_idx, grid, draws, func, categorical=()):
    """Partial dependence on covariate(s) ``var_idx`` at ``grid`` (points x len(var_idx)), per draw and
    row: ``(points, draws, [k,] rows)``; ``categorical``: the columns of X holding category codes."""
    out = []
    for point in grid:
        Xg = X.copy()
        Xg[:, var_idx] = point
        f = predict(idata, CodedX(Xg, categorical), var_name, draws=draws)
        out.append(func(f) if func is not None else f)
    return np.array(out)


def _check_var_idx(var_idx, p: int) -> list:
    """Covariate indices (or pairs of them) to plot, each in ``[0, p)``; default all."""
    var_idx = list(range(p)) if var_idx is None else list(var_idx)
    for v in var_idx:
        for i in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < p:
                raise ValueError(f"var_idx must hold covariate indices (or pairs of them) in [0, {p}), got {v!r}")
    return var_idx


class _Call(NamedTuple):
    """A partial-dependence call resolved from either form: ours ``(idata, X, var_name)`` or pymc-bart's
    ``(bartrv, X, Y)``."""

    idata: object
    var_names: list
    pymc_bart: bool
    y_name: str | None
    bartrv: object = None


def _resolve(first, third, what: str) -> _Call:
    """Which fit a partial-dependence plot reads: ``first`` is our InferenceData, or (pymc-bart's form) a
    BART variable or a list of them, whose fitted forests are in the one InferenceData of this
    session that holds that variable's forests (:func:`find_fit`)."""
    from ..model.basis import bart_of
    from .diagnostics import _bart_variable_names, _one_bart

    names = _bart_variable_names(first)
    if names is None:
        if third is not None and not isinstance(third, str):
            raise TypeError(f"{what}(idata, X, var_name): var_name must be a str, got {type(third).__name__} "
                            f"(pymc-bart's form {what}(bartrv, X, Y) takes the BART variable first)")
        return _Call(first, [_one_bart(first, third)], False, None)
    idata = find_fit(bart_of(first[0] if isinstance(first, (list, tuple)) else first))
    y_name = getattr(third, "name", None) if third is not None else None
    return _Call(idata, names, True, "Y" if third is not None and y_name is None else y_name, first)


def find_fit(bartrv):
    """The InferenceData alive in this session that holds the fitted forests of ``bartrv`` (a variable of
    that name and as many rows), for pymc-bart's calls that pass only the variable (``plot_pdp(mu, X,
    Y)``): pymc-bart keeps the trees on the variable, this package in the InferenceData. When several
    hold fits of that name it raises rather than guess (the fits do not record their model): pass the
    InferenceData first then, ``plot_pdp(idata, X, "mu")``.

    >>> # pmt.plots.find_fit(mu) is idata
    """
    import gc

    import xarray as xr

    name = bartrv.name
    X = bartrv.owner.inputs[-2] if len(bartrv.owner.inputs) >= 2 else None
    shape = getattr(getattr(X, "data", None), "shape", None)
    gc.collect()
    found = []
    for obj in gc.get_objects():
        if not issubclass(type(obj), xr.DataTree) or obj.parent is not None:  # (type(): safe on dead proxies)
            continue
        try:
            if "sample_stats" not in obj.children or f"{name}_forest" not in obj["sample_stats"]:
                continue
            post = obj["posterior"] if "posterior" in obj.children else None
            if shape is not None and post is not None and name in post and post[name].shape[-1] != shape[0]:
                continue
            stamp = str(post.attrs.get("created_at", "")) if post is not None else ""
        except Exception:  # a half-built tree: not a fit
            continue
        found.append((stamp, id(obj), obj))
    if not found:
        raise ValueError(f"no fit of {name!r} found: pymc-treesamplers keeps the trees in the InferenceData that "
                         f"pm.sample returns, not on the variable; keep it (idata = pm.sample(...)) and pass it "
                         f"first: plot_pdp(idata, X, {name!r})")
    if len(found) > 1:  # which model each came from is not recorded: choosing one could show another model's fit
        stamps = ", ".join(sorted(t[0] or "?" for t in found))
        raise ValueError(f"{len(found)} InferenceData objects in this session hold fits of {name!r} (created "
                         f"{stamps}): pass the one you mean first, plot_pdp(idata, X, {name!r})")
    return found[0][2]


def _layout(ax, n: int, grid, sharey, figsize):
    """Figure and ``n`` Axes for per-covariate panels: pymc-bart's ``grid`` and ``sharey``, or ours."""
    if ax is not None:
        return _axes(ax, n)
    ncols = _grid_cols(grid, n)
    ncols = ncols or min(n, 3)
    nrows = -(-n // ncols)
    fig = _figure(figsize or (4.0 * ncols, 3.2 * nrows))
    share = {True: True, False: False, "none": False, "all": True, "row": "row", "col": "col"}.get(sharey, sharey)
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False, sharey=share)).ravel()
    for extra in axes[n:]:
        extra.set_visible(False)
    return fig, axes


def _smooth(x: np.ndarray, y: np.ndarray, smooth_kwargs: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """A Savitzky-Golay smoothed curve on 200 points (pymc-bart's ``smooth``; ``smooth_kwargs`` go to
    ``scipy.signal.savgol_filter``, default ``window_length=55, polyorder=2``). A monotone curve stays monotone
    (the running maximum or minimum of the smoothed one): the filter's overshoot at a step would otherwise show a
    dip that no draw of a monotone BART has (docs/monotone.md)."""
    from scipy.signal import savgol_filter

    if x.size < 4:
        return x, y
    xs = np.linspace(x.min(), x.max(), 200)
    ys = np.interp(xs, x, y)
    kw = {"window_length": 55, "polyorder": 2} | dict(smooth_kwargs or {})
    smoothed = savgol_filter(ys, **kw)
    steps = np.diff(y)
    if (steps >= 0).all():
        smoothed = np.maximum.accumulate(smoothed)
    elif (steps <= 0).all():
        smoothed = np.minimum.accumulate(smoothed)
    return xs, smoothed


def _evaluated(X):
    """Covariates given as a PyTensor variable (``pm.Data``) are read for their current value."""
    return X.eval() if hasattr(X, "eval") and hasattr(X, "type") and not hasattr(X, "columns") else X


def plot_pdp(idata, X, var_name: str | None = None, var_idx: Sequence | None = None, grid_points: int = 20,
             func: Callable | None = None, samples: int | None = None, hdi_prob: float = 0.94, labels=None,
             random_seed=None, ax=None, backend: str | None = None, figsize=None, *, Y=None, xs_interval=None,
             xs_values=None, var_discrete: Sequence[int] | None = None, ref_line: bool | None = None, sharey=True,
             smooth: bool | None = None, grid=None, color="C0", color_mean=None, alpha: float | None = None,
             smooth_kwargs: dict | None = None):
    """Partial dependence: the BART value averaged over the rows of ``X`` with one covariate set to
    each grid value, draw by draw from the stored forests; posterior mean and band per covariate.

    ``var_idx``: covariates to show (default all); an entry that is a pair ``(i, j)`` draws the 2-D
    partial dependence (posterior mean as a colour map). ``func``: applied to the BART value before
    averaging (e.g. ``scipy.special.expit`` for a logit model; for several outputs it gets
    ``(draws, k, rows)``). For a BART with several outputs each output gets its own line (its own panel
    in pymc-bart's form). Panels are labelled by ``labels``, else a DataFrame's columns.

    pymc-bart's call works as written: ``plot_pdp(bartrv, X, Y=None, xs_interval="quantiles",
    xs_values=None, var_idx=None, var_discrete=None, func=None, samples=200, ref_line=True,
    random_seed=None, sharey=True, smooth=True, grid="long", color="C0", color_mean="C0", alpha=0.1,
    figsize=None, smooth_kwargs=None, ax=None)``, with the BART variable first (or a list of
    one-output BARTs); its fit is the one InferenceData of this session holding it
    (:func:`find_fit`; our form names it), and it returns the axes, as pymc-bart does (ours returns
    the Figure). Every
    one of those arguments works in our form too: ``xs_interval``/``xs_values`` (the grid),
    ``var_discrete`` (covariates drawn as points with intervals), ``ref_line`` (the mean partial
    dependence), ``sharey``, ``smooth`` (Savitzky-Golay), ``grid`` (``"long"``, ``"wide"`` or
    ``(rows, cols)``), ``color``, ``color_mean``, ``alpha``, ``smooth_kwargs``. The curve itself is
    Friedman's partial dependence (an average over the rows of ``X``), in both forms.

    >>> # pmt.plot_pdp(idata, X, "mu", var_idx=[0, 1, (0, 1)])
    >>> # pmt.plot_pdp(mu, X, Y, grid=(2, 2), func=np.exp)   # pymc-bart's call
    """
    _check_backend(backend)
    if Y is not None and var_name is not None and not isinstance(var_name, str):
        raise TypeError("plot_pdp got Y twice (third argument and Y=)")
    call = _resolve(idata, var_name if var_name is not None else Y, "plot_pdp")
    # unset arguments take the defaults of the form used: pymc-bart's, or ours
    theirs = call.pymc_bart
    if theirs and isinstance(var_idx, str):
        raise TypeError(f"plot_pdp(bartrv, X, Y, {var_idx!r}, ...): give pymc-bart's arguments after Y by keyword "
                        f"(xs_interval={var_idx!r}, ...): their positions differ here")
    samples = (200 if theirs else 100) if samples is None else samples
    xs_interval = ("quantiles" if theirs else None) if xs_interval is None else xs_interval
    grid = ("long" if theirs else None) if grid is None else grid
    ref_line = theirs if ref_line is None else ref_line
    smooth = theirs if smooth is None else smooth
    alpha = (0.1 if theirs else 0.3) if alpha is None else alpha
    X = _evaluated(X)
    names = _labels(np.shape(X)[1] if np.ndim(X) == 2 else 1, labels, X)
    X, cat = check_new_X(X if call.bartrv is None else coded_for(call.bartrv, X), None, with_categories=True)
    var_idx = _check_var_idx(var_idx, X.shape[1])
    discrete = set(int(v) for v in (var_discrete or ()))
    draws = choose_draws(call.idata, call.var_names[0], samples, random_seed)
    color_mean = color if color_mean is None else color_mean

    def curves_of(v):  # (points, draws, outputs) for covariate v
        grid_v = _grid(X[:, v], grid_points, xs_interval, xs_values)
        cs = []
        for name in call.var_names:
            pd_ = _pdp_draws(call.idata, X, name, [v], grid_v[:, None], draws, func, cat).mean(axis=-1)
            cs.append(pd_[..., None] if pd_.ndim == 2 else pd_)
        return grid_v, np.concatenate(cs, axis=2)

    computed = {v: curves_of(v) for v in var_idx if not isinstance(v, (tuple, list))}
    outputs = next(iter(computed.values()))[1].shape[2] if computed else 1
    per_output = call.pymc_bart and outputs > 1
    panels = [(v, o) for v in var_idx for o in (range(outputs) if per_output and not isinstance(v, (tuple, list))
                                                 else [None])]
    fig, axes = _layout(ax, len(panels), grid, sharey, figsize)
    ref = np.mean([c.mean() for _, c in computed.values()]) if computed else None
    for axis, (v, o) in zip(axes, panels, strict=False):
        if isinstance(v, (tuple, list)):
            i, j = (int(x) for x in v)
            gi, gj = _grid(X[:, i], grid_points), _grid(X[:, j], grid_points)
            pts = np.array([(a, b) for a in gi for b in gj])
            pd_ = _pdp_draws(call.idata, X, call.var_names[0], [i, j], pts, draws, func, cat).mean(axis=-1)
            surface = pd_.reshape(len(gi), len(gj), *pd_.shape[1:]).mean(axis=2)  # over draws
            if surface.ndim == 3:
                surface = surface[..., 0]  # first output
            mesh = axis.pcolormesh(gj, gi, surface, shading="nearest", cmap="viridis")
            fig.colorbar(mesh, ax=axis, label="partial dependence")
            axis.set_xlabel(names[j])
            axis.set_ylabel(names[i])
            continue
        grid_v, curves = computed[v]
        for out in (range(curves.shape[2]) if o is None else [o]):
            c = color if (o is not None or curves.shape[2] == 1) else f"C{out}"
            cm = color_mean if (o is not None or curves.shape[2] == 1) else f"C{out}"
            band = _band(curves[:, :, out].T, hdi_prob)
            mean = curves[:, :, out].mean(axis=1)
            label = f"output {out}" if curves.shape[2] > 1 and o is None else None
            if v in discrete:
                axis.errorbar(grid_v, mean, yerr=[mean - band[0], band[1] - mean], fmt="o", color=cm, ecolor=c,
                              label=label)
                axis.set_xticks(grid_v)
            elif smooth:
                xs, lo = _smooth(grid_v, band[0], smooth_kwargs)
                _, hi = _smooth(grid_v, band[1], smooth_kwargs)
                _, mid = _smooth(grid_v, mean, smooth_kwargs)
                axis.fill_between(xs, lo, hi, color=c, alpha=alpha, lw=0)
                axis.plot(xs, mid, color=cm, label=label)
            else:
                axis.fill_between(grid_v, band[0], band[1], color=c, alpha=alpha, lw=0)
                axis.plot(grid_v, mean, color=cm, label=label)
        if ref_line and ref is not None:
            axis.axhline(ref, color="0.5", ls="--", lw=1)
        if not call.pymc_bart:
            axis.plot(X[:, v], np.full(X.shape[0], axis.get_ylim()[0]), "|", color="k", alpha=0.3)
            axis.set_ylabel("partial dependence")
        axis.set_xlabel(names[v])
        if o is not None:
            axis.set_title(f"output {o}", fontsize=9)
        if curves.shape[2] > 1 and o is None:
            axis.legend(frameon=False, fontsize=8)
    if not call.pymc_bart:
        return fig
    fig.text(-0.02, 0.5, f"Partial {call.y_name or 'Y'}", rotation=90, va="center", ha="right", fontsize=15)
    return axes[: len(panels)]


def plot_ice(idata, X, var_name: str | None = None, var_idx: Sequence[int] | None = None, grid_points: int = 20,
             instances: int = 30, func: Callable | None = None, samples: int = 100, labels=None, centered=True,
             random_seed=None, ax=None, backend: str | None = None, figsize=None, *, Y=None,
             var_discrete: Sequence[int] | None = None, sharey=True, smooth: bool | None = None, grid=None,
             color="C0", color_mean=None, alpha: float | None = None, smooth_kwargs: dict | None = None):
    """Individual conditional expectation: for ``instances`` rows of ``X`` (chosen at random), the
    posterior mean of the BART value as one covariate moves over its grid, with the partial
    dependence (their mean) on top; ``centered``: each curve starts at 0 (c-ICE), so differences in
    shape, the sign of interactions, stand out. The first output of a BART with several (each output
    its own panel in pymc-bart's form).

    pymc-bart's call works as written: ``plot_ice(bartrv, X, Y=None, var_idx=None, var_discrete=None,
    func=None, centered=True, samples=100, instances=30, random_seed=None, sharey=True, smooth=True,
    grid="long", color="C0", color_mean="C0", alpha=0.1, figsize=None, smooth_kwargs=None, ax=None)``,
    the fit found as for :func:`plot_pdp`, returning the axes; each argument works in our form too.

    >>> # pmt.plot_ice(idata, X, "mu", var_idx=[0])
    """
    _check_backend(backend)
    if Y is not None and var_name is not None and not isinstance(var_name, str):
        raise TypeError("plot_ice got Y twice (third argument and Y=)")
    call = _resolve(idata, var_name if var_name is not None else Y, "plot_ice")
    theirs = call.pymc_bart
    grid = ("long" if theirs else None) if grid is None else grid
    smooth = theirs if smooth is None else smooth
    alpha = (0.1 if theirs else 0.3) if alpha is None else alpha
    color_mean = (color if theirs else "k") if color_mean is None else color_mean
    X = _evaluated(X)
    names = _labels(np.shape(X)[1] if np.ndim(X) == 2 else 1, labels, X)
    X, cat = check_new_X(X if call.bartrv is None else coded_for(call.bartrv, X), None, with_categories=True)
    var_idx = _check_var_idx(var_idx, X.shape[1])
    if isinstance(instances, bool) or not isinstance(instances, (int, np.integer)) or instances < 1:
        raise ValueError(f"instances must be an integer >= 1, got {instances!r}")
    discrete = set(int(v) for v in (var_discrete or ()))
    rng = np.random.default_rng(random_seed)
    rows = np.sort(rng.choice(X.shape[0], size=min(instances, X.shape[0]), replace=False))
    draws = choose_draws(call.idata, call.var_names[0], samples, random_seed)
    computed = {}
    for v in var_idx:
        grid_v = _grid(X[:, v], grid_points)
        fs = []
        for name in call.var_names:
            f = _pdp_draws(call.idata, X[rows], name, [v], grid_v[:, None], draws, func, cat).mean(axis=1)
            fs.append(f[:, None, :] if f.ndim == 2 else f)  # (points, outputs, rows)
        f = np.concatenate(fs, axis=1)
        computed[v] = (grid_v, f - f[:1] if centered else f)
    outputs = next(iter(computed.values()))[1].shape[1]
    panels = [(v, o) for v in var_idx for o in (range(outputs) if call.pymc_bart else [0])]
    fig, axes = _layout(ax, len(panels), grid, sharey, figsize)
    for axis, (v, o) in zip(axes, panels, strict=False):
        grid_v, f = computed[v]
        f = f[:, o]
        if v in discrete:
            axis.plot(grid_v, f, "o", color=color, alpha=alpha, ms=3)
            axis.plot(grid_v, f.mean(axis=1), "o", color=color_mean, ms=6, label="partial dependence")
            axis.set_xticks(grid_v)
        elif smooth:
            for r in range(f.shape[1]):
                xs, ys = _smooth(grid_v, f[:, r], smooth_kwargs)
                axis.plot(xs, ys, color=color, alpha=alpha, lw=0.8)
            xs, ys = _smooth(grid_v, f.mean(axis=1), smooth_kwargs)
            axis.plot(xs, ys, color=color_mean, lw=2, label="partial dependence")
        else:
            axis.plot(grid_v, f, color=color, alpha=alpha, lw=0.8)
            axis.plot(grid_v, f.mean(axis=1), color=color_mean, lw=2, label="partial dependence")
        axis.set_xlabel(names[v])
        axis.set_ylabel("c-ICE" if centered else "ICE")
        if outputs > 1 and call.pymc_bart:
            axis.set_title(f"output {o}", fontsize=9)
        axis.legend(frameon=False, fontsize=8)
    if not call.pymc_bart:
        return fig
    fig.text(-0.02, 0.5, f"Partial {call.y_name or 'Y'}", rotation=90, va="center", ha="right", fontsize=15)
    return axes[: len(panels)]


def plot_dependence(bartrv, X, Y=None, kind: str = "pdp", xs_interval: str = "linear", xs_values=None,
                    var_idx: Sequence[int] | None = None, samples: int = 50, instances: int = 10, rug: bool = True,
                    **kwargs):
    """pymc-bart's older partial-dependence entry point (before 0.13 it became :func:`plot_pdp` and
    :func:`plot_ice`), with its defaults: ``kind="pdp"`` or ``"ice"``; ``rug`` marks the observed values
    of each covariate under its panel; the other arguments go to :func:`plot_pdp` / :func:`plot_ice`.
    Returns the axes.

    >>> # pmt.plot_dependence(mu, X, Y, kind="ice")
    """
    if kind not in ("pdp", "ice"):
        raise ValueError(f"kind must be 'pdp' or 'ice', got {kind!r}")
    if kind == "pdp":
        axes = plot_pdp(bartrv, X, Y, var_idx=var_idx, samples=samples, xs_interval=xs_interval,
                        xs_values=xs_values, **kwargs)
    else:
        axes = plot_ice(bartrv, X, Y, var_idx=var_idx, samples=samples, instances=instances, **kwargs)
    if rug:
        values = np.asarray(_evaluated(X.to_numpy() if hasattr(X, "to_numpy") else X), dtype=float)
        shown = list(range(values.shape[1])) if var_idx is None else list(var_idx)
        per = max(1, len(np.atleast_1d(axes)) // max(1, len(shown)))
        for i, axis in enumerate(np.atleast_1d(axes)):
            column = values[:, shown[min(i // per, len(shown) - 1)]]
            axis.plot(column, np.full(column.shape, axis.get_ylim()[0]), "|", color="k", alpha=0.3)
    return axes


def plot_predicted_observed(idata, y, var_name: str = "mu", func: Callable | None = None, hdi_prob: float = 0.94,
                            ax=None, backend: str | None = None) -> Figure:
    """Observed ``y`` against the posterior mean of ``func(BART value)`` at the training rows, with each
    row's credible interval as a vertical bar, and the identity line.

    >>> # pmt.plots.plot_predicted_observed(idata, y, "mu")
    """
    _check_backend(backend)
    f = np.asarray(idata["posterior"][var_name].values, dtype=float)
    f = f.reshape(-1, f.shape[-1])
    f = func(f) if func is not None else f
    y = np.asarray(y, dtype=float).ravel()
    if y.shape[0] != f.shape[-1]:
        raise ValueError(f"y has {y.shape[0]} values but {var_name} has {f.shape[-1]} rows")
    mean, band = f.mean(axis=0), _band(f, hdi_prob)
    fig, (axis,) = _axes(ax, figsize=(4.5, 4.0))
    axis.errorbar(y, mean, yerr=[mean - band[0], band[1] - mean], fmt=".", color="C0", ecolor="C0", alpha=0.5,
                  elinewidth=0.8)
    lo, hi = min(y.min(), band[0].min()), max(y.max(), band[1].max())
    axis.plot([lo, hi], [lo, hi], color="0.4", lw=1)
    axis.set_xlabel("observed")
    axis.set_ylabel(f"predicted ({hdi_prob:.0%} interval)")
    return fig


def plot_compare_samplers(table, columns: Sequence[str] = ("ess_sigma_per_s", "ess_f_per_s"), ax=None,
                          backend: str | None = None) -> Figure:
    """Bars of :func:`~pymc_treesamplers.results.diagnostics.compare_samplers`' table, one panel per column.

    >>> # pmt.plots.plot_compare_samplers(pmt.diagnostics.compare_samplers({"CGM": a, "PG": b}))
    """
    _check_backend(backend)
    columns = [c for c in columns if c in table.columns]
    fig, axes = _axes(ax, len(columns), ncols=len(columns), figsize=(4.0 * len(columns), 3.2))
    for axis, col in zip(axes, columns, strict=False):
        axis.bar(np.arange(len(table)), table[col], color=[f"C{i}" for i in range(len(table))])
        axis.set_xticks(np.arange(len(table)), table.index)
        axis.set_title(col.replace("_", " "))
    return fig
