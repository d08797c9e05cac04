"""Posterior predictive sampling through PyMC with draw-matched BART values on the current data.

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

import numpy as np
import pymc as pm
import xarray as xr
from pymc.model import modelcontext

from .bart import BARTRV, bart_covariates
from .trace import CodedX, predict

__all__ = ["sample_posterior_predictive"]


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
