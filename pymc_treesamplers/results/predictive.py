"""Predictions from the forests stored in the trace: ``predict(idata, X)`` and posterior predictive sampling.

The stored trees (storage.py) are walked at new covariates in one compiled loop over all draws
(:func:`predict`). Posterior predictive sampling through PyMC uses them for draw-matched BART values on
the current data:

PyMC 6 keeps a traced random variable at its trace value unless it is listed in ``sample_vars``,
and regenerates a listed one from its distribution: for a BART variable that is the tree prior.
Neither gives the posterior at new covariates. The trees of every draw are in the trace, though
(``<name>_forest``), so this wrapper evaluates each BART variable at its *current* covariates
(after ``pm.set_data``) draw by draw with :func:`pymc_treesamplers.predict`, puts those values in
place of the trace's, freezes them, and lets ``pm.sample_posterior_predictive`` do the rest: every
downstream variable (the likelihood, deterministics) is drawn with the same draw's sigma and
trees.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
import pymc as pm
import xarray as xr
from pymc.model import modelcontext

from ..model.bart import BARTRV, bart_covariates
from ..model.basis import line_basis
from ..model.binning import covariate_matrix
from .storage import ForestFormatError, as_text, blob_trees, decode_trace

__all__ = ["CodedX", "check_new_X", "predict", "predict_forests", "sample_posterior_predictive"]


@numba.njit(cache=True, nogil=True, inline="always")
def _subtree_sizes(var, start, end, size):
    """``size[k]``: the number of nodes of node ``k``'s subtree, for the preorder tree ``var[start:end]``."""
    for k in range(end - 1, start - 1, -1):
        if var[k] < 0:
            size[k] = 1
        else:
            size[k] = 1 + size[k + 1] + size[k + 1 + size[k + 1]]


@numba.njit(cache=True, nogil=True, inline="always")
def _goes_left(X, i, v, t, cat0):
    """Whether row ``i`` goes left at a split on column ``v`` of X with value ``t``: ``x <= t``, or, for
    ``v >= cat0`` (a category split), the row's category is another one."""
    if v >= cat0:
        return X[i, v] != t
    return X[i, v] <= t


@numba.njit(cache=True, nogil=True, inline="always")
def _leaf_of(var, val, size, X, i, k, cat0):
    """The leaf that row ``i`` of ``X`` reaches from the root ``k`` of a preorder tree."""
    while var[k] >= 0:
        if _goes_left(X, i, var[k], val[k], cat0):
            k = k + 1
        else:
            k = k + 1 + size[k + 1]
    return k


@numba.njit(cache=True, nogil=True)
def predict_preorder(counts, var, val, X, out, cat0):
    """Sum of the encoded trees at the rows of ``X`` (trees added in order, as in training); splits on
    columns ``>= cat0`` are category splits.

    Trusts its input: the trees must have passed the checks of :func:`decode_trace`.
    """
    n = X.shape[0]
    out[:] = 0.0
    size = np.empty(var.shape[0], dtype=np.int64)
    start = 0
    for j in range(counts.shape[0]):
        end = start + counts[j]
        _subtree_sizes(var, start, end, size)
        for i in range(n):
            out[i] += val[_leaf_of(var, val, size, X, i, start, cat0)]
        start = end


@numba.njit(cache=True, nogil=True)
def predict_lines_preorder(counts, var, val, slope, X, Z, out, p):
    """:func:`predict_preorder` for leaves that hold lines in their parent's covariate (model/basis.py): the
    intercepts in ``val`` (the split thresholds too), the slopes in ``slope`` (same trees), ``Z`` (n, p) the rows'
    standardised covariates. A stored split variable ``v`` is covariate ``v % p`` (storage.py)."""
    n = X.shape[0]
    out[:] = 0.0
    size = np.empty(var.shape[0], dtype=np.int64)
    cat0 = 2 * p
    start = 0
    for j in range(counts.shape[0]):
        end = start + counts[j]
        _subtree_sizes(var, start, end, size)
        for i in range(n):
            k = start
            up = -1
            while var[k] >= 0:
                up = var[k]
                if _goes_left(X, i, var[k], val[k], cat0):
                    k = k + 1
                else:
                    k = k + 1 + size[k + 1]
            out[i] += val[k] + (slope[k] * Z[i, up % p] if up >= 0 else 0.0)
        start = end


@numba.njit(cache=True, nogil=True, parallel=True)
def _predict_trace_lines(raw, firsts, X, Z, out):
    """``out[k] =`` the line-leaf forest whose intercepts and slopes are the validated blobs at ``firsts[2k]``
    and ``firsts[2k + 1]``, at the rows of ``X = [X, -X, X]``."""
    p = Z.shape[1]
    for k in numba.prange(out.shape[0]):
        counts, var, val = blob_trees(raw, firsts[2 * k])
        _, _, slope = blob_trees(raw, firsts[2 * k + 1])
        predict_lines_preorder(counts, var, val, slope, X, Z, out[k], p)


@numba.njit(cache=True, nogil=True)
def leaf_positions(counts, var, val, X, out, cat0):
    """``out[j, i]``: the preorder position (in ``var``) of the leaf of tree ``j`` that row ``i`` of
    ``X`` reaches; ``val`` holds the thresholds of the split nodes (category codes from ``cat0``)."""
    size = np.empty(var.shape[0], dtype=np.int64)
    start = 0
    for j in range(counts.shape[0]):
        end = start + counts[j]
        _subtree_sizes(var, start, end, size)
        for i in range(X.shape[0]):
            out[j, i] = _leaf_of(var, val, size, X, i, start, cat0)
        start = end


@numba.njit(cache=True, nogil=True)
def weighted_leaf_sum(counts, var, val, weights, values, X, out, cat0):
    """``out[i] = sum_j weights[j] * values[leaf_j(i)]``: a weighted average over preorder trees of
    per-leaf vectors (``values`` has a row per node; only the leaves' rows are read)."""
    size = np.empty(var.shape[0], dtype=np.int64)
    out[:] = 0.0
    start = 0
    for j in range(counts.shape[0]):
        end = start + counts[j]
        _subtree_sizes(var, start, end, size)
        for i in range(X.shape[0]):
            k = _leaf_of(var, val, size, X, i, start, cat0)
            for f in range(values.shape[1]):
                out[i, f] += weights[j] * values[k, f]
        start = end


@numba.njit(cache=True, nogil=True, parallel=True)
def _predict_trace(raw, firsts, X, out):
    """``out[k] =`` the forest of the validated blob starting at byte ``firsts[k]``, at the rows of
    ``X = [X, -X, X]`` (:func:`_extended`)."""
    cat0 = 2 * (X.shape[1] // 3)
    for k in numba.prange(firsts.shape[0]):
        counts, var, val = blob_trees(raw, firsts[k])
        predict_preorder(counts, var, val, X, out[k], cat0)


@numba.njit(cache=True, nogil=True)
def predict_preorder_marginal(counts, var, val, X_train, excluded, X, out):
    """Sum of the encoded trees at the rows of ``X`` (``[X, -X, X]``, :func:`_extended`) with the
    covariates flagged in ``excluded`` marginalised out: at a split on one of them both children
    contribute, weighted by the shares of the training rows ``X_train`` that went each way (pymc-bart's
    submodels, Friedman's partial dependence by tree weights). With nothing excluded it is :func:`predict_preorder`.
    """
    out[:] = 0.0
    cat0 = 2 * (X.shape[1] // 3)
    total = var.shape[0]
    size = np.empty(total, dtype=np.int64)
    n_rows = np.zeros(total)
    stack = np.empty(total, dtype=np.int64)
    weight = np.empty(total)
    start = 0
    for j in range(counts.shape[0]):
        end = start + counts[j]
        _subtree_sizes(var, start, end, size)
        for i in range(X_train.shape[0]):  # training rows per node
            k = start
            n_rows[k] += 1.0
            while var[k] >= 0:
                k = k + 1 if _goes_left(X_train, i, var[k], val[k], cat0) else k + 1 + size[k + 1]
                n_rows[k] += 1.0
        for i in range(X.shape[0]):
            top = 0
            stack[0] = start
            weight[0] = 1.0
            while top >= 0:
                k = stack[top]
                w = weight[top]
                top -= 1
                if var[k] < 0:
                    out[i] += w * val[k]
                    continue
                left = k + 1
                right = k + 1 + size[k + 1]
                if excluded[var[k]]:
                    both = n_rows[left] + n_rows[right]
                    share = n_rows[left] / both if both > 0 else 0.5
                    stack[top + 1] = left
                    weight[top + 1] = w * share
                    stack[top + 2] = right
                    weight[top + 2] = w * (1.0 - share)
                    top += 2
                else:
                    top += 1
                    stack[top] = left if _goes_left(X, i, var[k], val[k], cat0) else right
                    weight[top] = w
        start = end


@numba.njit(cache=True, nogil=True, parallel=True)
def _predict_trace_marginal(raw, firsts, X_train, excluded, X, out):
    """:func:`_predict_trace` with covariates marginalised out (:func:`predict_preorder_marginal`)."""
    for k in numba.prange(firsts.shape[0]):
        counts, var, val = blob_trees(raw, firsts[k])
        predict_preorder_marginal(counts, var, val, X_train, excluded, X, out[k])


class CodedX(NamedTuple):
    """Covariates already checked and coded by :func:`check_new_X`: the float matrix (category codes in
    its categorical columns) and the indices of the unordered categorical columns. :func:`predict`
    takes it as it is, so code that edits the covariates (partial dependence) keeps the categories."""

    values: np.ndarray
    categorical: tuple


def check_new_X(X_new, p: int | None, with_categories: bool = False):
    """Validate covariates for prediction: numeric (a DataFrame may hold category and string columns:
    :func:`~pymc_treesamplers.model.binning.covariate_matrix`), 2-D, right number of columns, no inf (NaN:
    missing). With ``with_categories`` returns a :class:`CodedX` (values and categorical columns)."""
    X, categorical = X_new if isinstance(X_new, CodedX) else covariate_matrix(X_new, "X_new")
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"X_new must be a 2-D matrix, got {X.ndim} dimensions")
    if p is not None and X.shape[1] != p:
        raise ValueError(f"X_new has {X.shape[1]} columns but the model was fit with {p}")
    if np.isinf(X).any():
        raise ValueError("X_new contains inf: every covariate value must be finite (or NaN for a missing value)")
    X = np.ascontiguousarray(X)
    return CodedX(X, tuple(categorical)) if with_categories else X


def _extended(X: np.ndarray) -> np.ndarray:
    """``[X, -X, X]``: the columns the stored split variables index (``[p, 2p)``: a split on ``-x``,
    ``[2p, 3p)``: a category split, read by equality)."""
    return np.ascontiguousarray(np.hstack([X, -X, X]))


@numba.njit(cache=True, nogil=True)
def _used_vars(raw, firsts, used):
    """``used[v]``: whether any forest of the validated blobs at ``firsts`` splits on stored variable ``v``."""
    for k in range(firsts.shape[0]):
        _, var, _ = blob_trees(raw, firsts[k])
        for q in range(var.shape[0]):
            if var[q] >= 0:
                used[var[q]] = True


def _check_categories(raw, firsts, p: int, categorical: tuple) -> None:
    """A covariate the forests split on as categories must be categorical in X_new, and one they split
    on as a number must not: else every row would silently take one side."""
    used = np.zeros(3 * p, dtype=np.bool_)
    _used_vars(raw, firsts, used)
    as_category = set(np.flatnonzero(used[2 * p:]).tolist())
    as_number = set(np.flatnonzero(used[:p] | used[p:2 * p]).tolist())
    if missing := sorted(as_category - set(categorical)):
        raise TypeError(f"X_new column(s) {missing} hold numbers, but the model split them as categories: pass "
                        "them as in training (a pandas category or string column of a DataFrame; for columns given "
                        "split_rules 'OneHotSplit', a category column of those numbers)")
    if wrong := sorted(as_number & set(categorical)):
        raise TypeError(f"X_new column(s) {wrong} hold categories, but the model split them as numbers: pass "
                        "them as in training")


def _split_outputs(enc: np.ndarray) -> tuple[list, int]:
    """Each draw's forests (one per output, comma-separated) in one flat list, and the number of
    outputs (the same in every draw, else a :class:`ForestFormatError` naming the draw)."""
    parts, k = [], None
    for d, t in enumerate(enc):
        try:
            pieces = as_text(t).split(",")
        except TypeError:
            pieces = [t]  # decode_trace says what is wrong with it
        if k is None:
            k = len(pieces)
        elif len(pieces) != k:
            raise ForestFormatError(f"corrupted pymc_treesamplers forest: {len(pieces)} outputs, the first draw "
                                    f"has {k}", d)
        parts.extend(pieces)
    return parts, k or 1


def predict_forests(texts, X_new) -> np.ndarray:
    """Values at new covariates of forests in the stored encoding
    (:func:`~pymc_treesamplers.results.storage.encode_forest`, one per text, each validated first): shape
    ``(len(texts), n_new)``.

    >>> # values = predict_forests(GFRRegressor().fit(X, y).forests_, X_new)
    """
    p, raw, starts = decode_trace(list(texts))
    X, categorical = check_new_X(X_new, p, with_categories=True)
    first = np.ascontiguousarray(starts[:-1])
    _check_categories(raw, first, p, categorical)
    out = np.empty((first.shape[0], X.shape[0]))
    _predict_trace(raw, first, _extended(X), out)
    return out


def predict(idata, X_new, var_name: str = "mu", *, exclude=None, X_train=None, draws=None) -> np.ndarray:
    """Draw-matched values of a BART variable at new covariates, from the trace alone.

    Returns an array of shape (chain, draw, n_new), or (chain, draw, k, n_new) for a BART with k
    outputs (``shape=(k, n)``): draw d of chain c uses exactly the forests that produced posterior
    draw (c, d). Works after ``to_netcdf``/``from_netcdf``. Every stored forest is validated first
    (see the module docstring): a corrupted or foreign one raises :class:`ForestFormatError` (a
    ``ValueError``) naming its (chain, draw).

    ``exclude``: covariate indices to marginalise out (each split on one of them weighs both children
    by the shares of the training rows ``X_train`` that went each way; :func:`predict_preorder_marginal`),
    the submodels of variable importance. ``draws``: flat indices ``chain * n_draw + draw`` of the draws
    to predict, returned as ``(len(draws), [k,] n_new)`` instead.

    >>> # f_new = pmt.predict(idata, X_test, "mu"); f_new.mean(axis=(0, 1))
    """
    stats = idata["sample_stats"] if "sample_stats" in idata.children else None
    key = f"{var_name}_forest"
    if stats is None or key not in stats:
        raise ValueError(f"no encoded forest {key!r} in idata.sample_stats: was {var_name!r} sampled by a pmt step?")
    da = stats[key]
    enc = np.asarray(da.values)
    if enc.ndim < 2 or enc.size != enc.shape[0] * enc.shape[1]:
        raise ValueError(f"{key} must hold one encoded forest per (chain, draw), got shape {enc.shape}")
    n_chain, n_draw = enc.shape[0], enc.shape[1]

    def where(index):
        c, d = divmod(index, n_draw)
        chain = da[da.dims[0]].values[c] if da.dims[0] in da.coords else c
        draw = da[da.dims[1]].values[d] if da.dims[1] in da.coords else d
        return f"{key} of draw (chain {chain}, draw {draw})"

    lines = stats[f"{var_name}_lines"] if f"{var_name}_lines" in stats else None
    try:
        texts, k = _split_outputs(enc.reshape(-1))
        try:
            p, raw, starts = decode_trace(texts)
        except ForestFormatError as err:
            raise ForestFormatError(err.reason, err.index // k) from None
    except ForestFormatError as err:
        raise ForestFormatError(err.reason, err.index, where(err.index)) from None
    X, categorical = check_new_X(X_new, p, with_categories=True)
    lead = (n_chain, n_draw)
    if draws is not None:
        draws = np.asarray(draws, dtype=np.int64).ravel()
        if draws.size and not (0 <= draws.min() and draws.max() < n_chain * n_draw):
            raise ValueError(f"draws must be flat indices in [0, {n_chain * n_draw})")
        first = np.ascontiguousarray(starts[(draws[:, None] * k + np.arange(k)).ravel()])
        lead = (draws.size,)
    else:
        first = np.ascontiguousarray(starts[:-1])
    _check_categories(raw, first, p, categorical)
    if lines is not None:  # line leaves: each output stored as its intercepts' and its slopes' forests
        if exclude is not None and len(exclude):
            raise ValueError(f"exclude (a marginal prediction) is not available for {var_name!r}, whose leaves hold "
                             "lines: the marginal over a covariate is written for constant leaves")
        held = np.asarray(lines.values)  # every covariate's center, then every one's inverse scale (each draw)
        recipe = np.asarray(held.reshape(-1)[0] if held.dtype == object else held.reshape(-1, 2 * p)[0],
                            dtype=float).reshape(2, p)
        out = np.empty((first.shape[0] // 2, X.shape[0]))
        _predict_trace_lines(raw, first, _extended(X), line_basis(X, recipe[0], recipe[1])[:, 1:], out)
        k //= 2
    elif exclude is None or len(exclude) == 0:
        out = np.empty((first.shape[0], X.shape[0]))
        _predict_trace(raw, first, _extended(X), out)
    else:
        out = np.empty((first.shape[0], X.shape[0]))
        mask = np.zeros(3 * p, dtype=np.bool_)
        exclude = np.asarray(exclude, dtype=np.int64)
        if exclude.min() < 0 or exclude.max() >= p:
            raise ValueError(f"exclude must hold covariate indices in [0, {p})")
        mask[exclude] = True
        mask[exclude + p] = True
        mask[exclude + 2 * p] = True
        if X_train is None:
            raise ValueError("exclude needs X_train, the training covariates (to weigh both sides of a split)")
        _predict_trace_marginal(raw, first, _extended(check_new_X(X_train, p)), mask, _extended(X), out)
    post = idata["posterior"] if "posterior" in idata.children else None
    several = k > 1 or (post is not None and var_name in post and post[var_name].ndim == 4)
    return out.reshape(*lead, k, X.shape[0]) if several else out.reshape(*lead, X.shape[0])

__all__ = ["CodedX", "check_new_X", "predict", "predict_forests", "sample_posterior_predictive"]


def _bart_vars(model, idata) -> list:
    stats = idata["sample_stats"] if "sample_stats" in idata.children else None
    out = []
    for rv in model.free_RVs:
        if isinstance(rv.owner.op, BARTRV):
            if stats is None or f"{rv.name}_forest" not in stats:
                raise ValueError(
                    f"idata has no encoded forest '{rv.name}_forest' in sample_stats: "
                    f"was {rv.name!r} sampled by a pymc_treesamplers step?"
                )
            out.append(rv)
    return out


def _current_X(rv) -> CodedX:
    """The variable's current covariates, coded as in training (its Op knows its categorical columns)."""
    return CodedX(rv.owner.op.coded(bart_covariates(rv).eval()), rv.owner.op.categorical)


def _replace_posterior(idata, values: dict, model) -> xr.DataTree:
    """A copy of ``idata`` whose posterior holds ``values`` (name -> (chain, draw, [k,] n)) instead.

    Posterior variables that share a resized dimension are dropped (PyMC then recomputes or
    redraws them at the new size rather than copying stale training-size values).
    """
    post = idata["posterior"].dataset
    new_vars = {}
    resized = {}
    for name, val in values.items():
        # (chain, draw, n) or, for a BART with several outputs, (chain, draw, k, n): the rows resize
        core = val.ndim - 2
        dims = model.named_vars_to_dims.get(name) or tuple(f"{name}_dim_{d}" for d in range(core))
        dim = dims[-1]
        n = val.shape[-1]
        coord = model.coords.get(dim)
        coord = np.asarray(coord) if coord is not None and len(coord) == n else np.arange(n)
        resized[dim] = coord
        coords = {"chain": post["chain"], "draw": post["draw"], dim: coord}
        if core == 2:
            coords[dims[0]] = post[name][dims[0]] if dims[0] in post[name].coords else np.arange(val.shape[2])
        new_vars[name] = xr.DataArray(val, dims=("chain", "draw", *dims), coords=coords)
    stale = [v for v in post.data_vars if v in values or any(d in resized for d in post[v].dims)]
    post = post.drop_vars(stale).drop_dims([d for d in resized if d in post.dims], errors="ignore")
    post = post.assign(new_vars)
    out = idata.copy()
    out["posterior"] = xr.DataTree(post)
    return out


def sample_posterior_predictive(idata, model=None, **kwargs):
    """``pm.sample_posterior_predictive`` with every BART variable draw-matched at its current X.

    Use it after ``pm.set_data`` (or without, for in-sample draws). Keyword arguments go to
    ``pm.sample_posterior_predictive``; BART variables must not be in ``sample_vars`` (they are
    predicted from their stored trees, not redrawn). ``extend_inferencedata=True`` adds the new
    groups to ``idata`` itself.

    >>> # with model:
    >>> #     pm.set_data({"X": X_new})
    >>> #     pp = pmt.sample_posterior_predictive(idata, var_names=["mu", "y"])
    """
    model = modelcontext(model)
    barts = _bart_vars(model, idata)
    names = [rv.name for rv in barts]
    sample_vars = kwargs.get("sample_vars") or []
    sample_vars = [sample_vars] if isinstance(sample_vars, str) else list(sample_vars)
    if clash := sorted(set(sample_vars) & set(names)):
        raise ValueError(
            f"sample_vars {clash} are BART variables: they are predicted from their stored trees at the "
            "current X, draw by draw; leave them out of sample_vars (list them in var_names to get them back)"
        )
    values = {rv.name: predict(idata, _current_X(rv), rv.name) for rv in barts}
    trace = _replace_posterior(idata, values, model) if values else idata
    freeze = kwargs.pop("freeze_vars", None) or []
    freeze = [freeze] if isinstance(freeze, str) else list(freeze)
    extend = kwargs.pop("extend_inferencedata", False)
    result = pm.sample_posterior_predictive(
        trace, model=model, freeze_vars=list(dict.fromkeys(freeze + names)), **kwargs
    )
    if not extend:
        return result
    for group in result.children:
        idata[group] = result[group]
    return idata
