"""Plots of a BART fit, from the InferenceData alone (matplotlib; each returns its Figure).

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

import numpy as np
from matplotlib.figure import Figure

from .diagnostics import choose_draws, get_variable_inclusion, tree_size_trace
from .trace import CodedX, check_new_X, predict

__all__ = [
    "plot_compare_samplers",
    "plot_ice",
    "plot_pdp",
    "plot_predicted_observed",
    "plot_scatter_submodels",
    "plot_tree_size",
    "plot_variable_importance",
    "plot_variable_inclusion",
]


def _axes(ax, n: int = 1, ncols: int | None = None, figsize=None):
    """``n`` Axes: the ones given, or a new Figure's grid (no pyplot state: safe in scripts and tests)."""
    if ax is not None:
        axes = np.atleast_1d(ax).ravel()
        if axes.size < n:
            raise ValueError(f"ax holds {axes.size} Axes, {n} are needed")
        return axes[0].figure, axes
    ncols = ncols or min(n, 3)
    nrows = -(-n // ncols)
    fig = Figure(figsize=figsize or (4.0 * ncols, 3.2 * nrows), layout="constrained")
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


def plot_variable_inclusion(idata, var_name: str = "mu", labels: Sequence[str] | None = None, X=None,
                            ax=None, backend: str | None = None) -> Figure:
    """Share of splits per covariate (most used first), with each chain's share as a dot; with a
    Dirichlet prior on the split weights also their posterior mean and 94% interval.

    >>> # pmt.plots.plot_variable_inclusion(idata, "mu", X=X_df).savefig("inclusion.png")
    """
    _check_backend(backend)
    inc = get_variable_inclusion(idata, var_name, labels=labels, X=X)
    fig, (axis,) = _axes(ax, figsize=(max(4.0, 0.6 * len(inc)), 3.2))
    pos = np.arange(len(inc))
    axis.bar(pos, inc["inclusion"], color="C0", alpha=0.6, label="all chains")
    chains = [c for c in inc.columns if c.startswith("chain_")]
    for i, c in enumerate(chains):
        axis.plot(pos, inc[c], "o", color="k", ms=3, alpha=0.7, label="each chain" if i == 0 else None)
    if "weight" in inc.columns:
        w = inc["weight"].to_numpy()
        axis.errorbar(pos + 0.25, w, yerr=[w - inc["weight_lo"].to_numpy(), inc["weight_hi"].to_numpy() - w],
                      fmt="D", color="C1", ms=3, capsize=2, label="split weight (94%)")
    axis.set_xticks(pos, inc.index, rotation=45 if len(inc) > 6 else 0, ha="right" if len(inc) > 6 else "center")
    axis.set_ylabel("share of splits" + (" / split weight" if "weight" in inc.columns else ""))
    axis.set_title(f"variable inclusion of {var_name}")
    axis.legend(frameon=False)
    return fig


def plot_variable_importance(vi_results: dict, ax=None, backend: str | None = None) -> Figure:
    """R^2 of each submodel against the full model (:func:`~pymc_treesamplers.compute_variable_importance`):
    mean over draws with its band, covariates added left to right.

    >>> # pmt.plots.plot_variable_importance(pmt.compute_variable_importance(idata, X))
    """
    _check_backend(backend)
    r2, hdi, labels = vi_results["r2_mean"], vi_results["r2_hdi"], vi_results["labels"]
    fig, (axis,) = _axes(ax, figsize=(max(4.0, 0.7 * len(r2)), 3.4))
    pos = np.arange(len(r2))
    axis.errorbar(pos, r2, yerr=[r2 - hdi[0], hdi[1] - r2], fmt="o-", color="C0", capsize=3)
    axis.axhline(1.0, color="0.5", ls="--", lw=1)
    added = [lab.split(" + ")[-1] for lab in labels]
    axis.set_xticks(pos, ["+" + a if i else a for i, a in enumerate(added)], rotation=45, ha="right")
    axis.set_ylabel("R² against the full model")
    axis.set_title(f"variable importance ({vi_results['method']})")
    return fig


def plot_scatter_submodels(vi_results: dict, submodels: Sequence[int] | None = None, ax=None,
                           backend: str | None = None, figsize=None) -> Figure:
    """The full model's fit against each submodel's, per row (posterior means over the chosen draws).

    >>> # pmt.plots.plot_scatter_submodels(vi, submodels=[0, 1, 2])
    """
    _check_backend(backend)
    submodels = list(range(len(vi_results["labels"]))) if submodels is None else list(submodels)
    fig, axes = _axes(ax, len(submodels), figsize=figsize)
    full = vi_results["preds_all"].mean(axis=0)
    for axis, s in zip(axes, submodels, strict=False):
        sub = vi_results["preds"][s].mean(axis=0)
        axis.plot(full, sub, ".", alpha=0.5, color="C0")
        lo, hi = min(full.min(), sub.min()), max(full.max(), sub.max())
        axis.plot([lo, hi], [lo, hi], color="0.4", lw=1)
        axis.set_title(vi_results["labels"][s], fontsize=9)
        axis.set_xlabel("full model")
        axis.set_ylabel("submodel")
    return fig


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


def _grid(column: np.ndarray, grid_points: int) -> np.ndarray:
    column = column[~np.isnan(column)]  # a partial dependence over the values present
    values = np.unique(column)
    if values.size <= grid_points:
        return values
    return np.quantile(column, np.linspace(0.0, 1.0, grid_points))


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


def plot_pdp(idata, X, var_name: str = "mu", var_idx: Sequence | None = None, grid_points: int = 20,
             func: Callable | None = None, samples: int = 100, hdi_prob: float = 0.94, labels=None,
             random_seed=None, ax=None, backend: str | None = None, figsize=None) -> Figure:
    """Partial dependence: the BART value averaged over the rows of ``X`` with one covariate set to
    each grid value, draw by draw from the stored forests; posterior mean and band per covariate.

    ``var_idx``: covariates to show (default all); an entry that is a pair ``(i, j)`` draws the 2-D
    partial dependence (posterior mean as a colour map). ``func``: applied to the BART value before
    averaging (e.g. ``scipy.special.expit`` for a logit model; for several outputs it gets
    ``(draws, k, rows)``). For a BART with several outputs each output gets its own line.

    >>> # pmt.plots.plot_pdp(idata, X, "mu", var_idx=[0, 1, (0, 1)])
    """
    _check_backend(backend)
    X, cat = check_new_X(X, None, with_categories=True)
    names = list(labels) if labels is not None else [f"x{v}" for v in range(X.shape[1])]
    var_idx = _check_var_idx(var_idx, X.shape[1])
    draws = choose_draws(idata, var_name, samples, random_seed)
    fig, axes = _axes(ax, len(var_idx), figsize=figsize)
    for axis, v in zip(axes, var_idx, strict=False):
        if isinstance(v, (tuple, list)):
            i, j = (int(x) for x in v)
            gi, gj = _grid(X[:, i], grid_points), _grid(X[:, j], grid_points)
            pts = np.array([(a, b) for a in gi for b in gj])
            pd_ = _pdp_draws(idata, X, var_name, [i, j], pts, draws, func, cat).mean(axis=-1)  # over rows
            surface = pd_.reshape(len(gi), len(gj), *pd_.shape[1:]).mean(axis=2)  # over draws
            if surface.ndim == 3:
                surface = surface[..., 0]  # first output
            mesh = axis.pcolormesh(gj, gi, surface, shading="nearest", cmap="viridis")
            fig.colorbar(mesh, ax=axis, label="partial dependence")
            axis.set_xlabel(names[j])
            axis.set_ylabel(names[i])
            continue
        grid = _grid(X[:, v], grid_points)
        pd_ = _pdp_draws(idata, X, var_name, [v], grid[:, None], draws, func, cat).mean(axis=-1)  # (points, draws, [k])
        curves = pd_[..., None] if pd_.ndim == 2 else pd_
        for out in range(curves.shape[2]):
            band = _band(curves[:, :, out].T, hdi_prob)
            color = f"C{out}"
            axis.fill_between(grid, band[0], band[1], color=color, alpha=0.3, lw=0)
            axis.plot(grid, curves[:, :, out].mean(axis=1), color=color,
                      label=f"output {out}" if curves.shape[2] > 1 else None)
        axis.plot(X[:, v], np.full(X.shape[0], axis.get_ylim()[0]), "|", color="k", alpha=0.3)
        axis.set_xlabel(names[v])
        axis.set_ylabel("partial dependence")
        if curves.shape[2] > 1:
            axis.legend(frameon=False, fontsize=8)
    return fig


def plot_ice(idata, X, var_name: str = "mu", var_idx: Sequence[int] | None = None, grid_points: int = 20,
             instances: int = 30, func: Callable | None = None, samples: int = 100, labels=None, centered=True,
             random_seed=None, ax=None, backend: str | None = None, figsize=None) -> Figure:
    """Individual conditional expectation: for ``instances`` rows of ``X`` (chosen at random), the
    posterior mean of the BART value as one covariate moves over its grid, with the partial
    dependence (their mean) on top; ``centered``: each curve starts at 0 (c-ICE), so differences in
    shape, the sign of interactions, stand out. The first output of a BART with several.

    >>> # pmt.plots.plot_ice(idata, X, "mu", var_idx=[0])
    """
    _check_backend(backend)
    X, cat = check_new_X(X, None, with_categories=True)
    names = list(labels) if labels is not None else [f"x{v}" for v in range(X.shape[1])]
    var_idx = _check_var_idx(var_idx, X.shape[1])
    rng = np.random.default_rng(random_seed)
    rows = np.sort(rng.choice(X.shape[0], size=min(instances, X.shape[0]), replace=False))
    draws = choose_draws(idata, var_name, samples, random_seed)
    fig, axes = _axes(ax, len(var_idx), figsize=figsize)
    for axis, v in zip(axes, var_idx, strict=False):
        grid = _grid(X[:, v], grid_points)
        f = _pdp_draws(idata, X[rows], var_name, [v], grid[:, None], draws, func, cat)
        f = f.mean(axis=1)  # posterior mean: (points, [k,] rows)
        if f.ndim == 3:
            f = f[:, 0]
        if centered:
            f = f - f[:1]
        axis.plot(grid, f, color="C0", alpha=0.3, lw=0.8)
        axis.plot(grid, f.mean(axis=1), color="k", lw=2, label="partial dependence")
        axis.set_xlabel(names[v])
        axis.set_ylabel("c-ICE" if centered else "ICE")
        axis.legend(frameon=False, fontsize=8)
    return fig


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
    """Bars of :func:`~pymc_treesamplers.diagnostics.compare_samplers`' table, one panel per column.

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
