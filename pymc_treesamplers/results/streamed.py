"""Reading a run that PyMC's ``ZarrTrace`` streamed to disk, whole or cut short: :func:`load_zarr`.

``pm.sample(trace=ZarrTrace(store=...))`` writes every draw as it is drawn, the tree steps' stats with the
forests among them, so a long run loses nothing when its process dies. On the stack this package supports
(PyMC 6.4, whose writer needs zarr 2, and xarray >= 2025, whose zarr reader needs zarr 3) PyMC's own
``ZarrTrace.to_inferencedata`` cannot open the store it wrote; :func:`load_zarr` reads it with zarr's own
API instead, into the InferenceData (an ``xarray.DataTree``) that ``pm.sample`` would have returned, so
``pmt.predict`` and ArviZ work on it. A store whose writer was killed loads the draws that every chain had
finished (the sampling state records how many).

The store's object arrays (the forests, PyMC's sampling state) are pickled by numcodecs, which decodes pickles
only when told the data are trusted: ``NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE=1`` before numcodecs is imported
(PyMC's writer needs the same to sample into a store at all, see docs/storage.md).

>>> import os, tempfile, zarr
>>> path = os.path.join(tempfile.mkdtemp(), "run.zarr")
>>> root = zarr.open_group(path, mode="w")
>>> state = root.create_group("_sampling_state")
>>> _ = state.array("draw_idx", np.array([3, 2]))
>>> _ = state.array("tuning_steps", np.array(1))
>>> post = root.create_group("posterior")
>>> a = post.array("a", np.arange(8.0).reshape(2, 4))
>>> a.attrs["_ARRAY_DIMENSIONS"] = ["chain", "draw"]
>>> load_zarr(path)["posterior"]["a"].values.tolist()  # one draw after tuning in every chain
[[0.0], [4.0]]
"""

from __future__ import annotations

import re

import numpy as np
import xarray as xr

__all__ = ["load_zarr"]

_GROUPS = ("posterior", "sample_stats", "warmup_posterior", "warmup_sample_stats", "observed_data",
           "constant_data")
_SAMPLER_PREFIX = re.compile(r"^sampler_\d+__")


def load_zarr(store) -> xr.DataTree:
    """The InferenceData of a store written by ``pm.sample(trace=ZarrTrace(store=...))`` (a path or a zarr 2
    store), with the draws every chain finished (module docstring): ``posterior`` and ``sample_stats`` with the
    draws after tuning, ``warmup_*`` with the tuning draws, ``observed_data`` and ``constant_data``. Stats keep
    the names ``pm.sample`` gives them (``mu_forest``, ...): PyMC's ``sampler_<k>__`` prefix is dropped where the
    name stays unique in its group.

    Example (the module's doctest writes a store by hand)::

        idata = pmt.load_zarr("run.zarr")
        f_new = pmt.predict(idata, X_new, "mu")
    """
    try:
        import zarr
    except ImportError as err:  # pragma: no cover - the message is the point
        raise ImportError("load_zarr needs zarr 2 (PyMC's ZarrTrace writes with it): pip install "
                          "'pymc-treesamplers[zarr]'") from err
    root = zarr.open_group(store, mode="r")
    if "_sampling_state" not in root.group_keys():
        raise ValueError(f"{store!r} is not a store that pm.sample(trace=ZarrTrace(...)) wrote: it has no "
                         "_sampling_state group")
    state = root["_sampling_state"]
    written = np.asarray(state["draw_idx"][:], dtype=np.int64)
    tune = int(np.asarray(state["tuning_steps"][()]))
    phases = {"warmup": np.minimum(written, tune), "posterior": np.maximum(written - tune, 0)}
    groups = {}
    for name in _GROUPS:
        if name not in root.group_keys():
            continue
        done = phases["warmup" if name.startswith("warmup_") else "posterior"]
        groups[name] = _dataset(root[name], done if name in _GROUPS[:4] else None)
    return xr.DataTree.from_dict(groups)


def _dataset(group, done) -> xr.Dataset:
    """One group as a Dataset: its arrays by their ``_ARRAY_DIMENSIONS``, cut to the draws every chain with any
    finished (``done``: draws per chain; None for a group without draws)."""
    arrays = {k: group[k] for k in group.array_keys()}
    chains = draws = None
    if done is not None:
        # a chain that had not started (chains run one after another) is left out, not padded
        chains = np.flatnonzero(done > 0) if (done > 0).any() else np.arange(done.size)
        draws = int(done[chains].min()) if chains.size else 0
    names = _stat_names(list(arrays))
    data, coords = {}, {}
    for key, arr in arrays.items():
        dims = [names.get(d, d) for d in arr.attrs.get("_ARRAY_DIMENSIONS", [f"{key}_dim_{i}" for i in
                                                                              range(arr.ndim)])]
        index = tuple(chains if d == "chain" and chains is not None else slice(0, draws) if d == "draw"
                      and draws is not None else slice(None) for d in dims)
        value = _read(arr, index)
        if len(dims) == 1 and names.get(key, key) == dims[0]:
            coords[dims[0]] = value
        else:
            data[names.get(key, key)] = (dims, value)
    return xr.Dataset(data, coords=coords)


def _read(arr, index) -> np.ndarray:
    try:
        value = arr.get_orthogonal_selection(index) if index else arr[...]
    except Exception as err:
        if "UnsafeDecodeError" in type(err).__name__:
            raise ValueError(f"the array {arr.name!r} is pickled, and numcodecs decodes pickles only from trusted "
                             "stores: set NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE=1 before importing numcodecs (PyMC's "
                             "ZarrTrace needs it to write the store too)") from err
        raise
    return np.asarray(value)


def _stat_names(keys: list[str]) -> dict[str, str]:
    """PyMC's ``sampler_<k>__`` prefixes dropped where the shorter name stays unique among ``keys``."""
    short = {k: _SAMPLER_PREFIX.sub("", k) for k in keys}
    counts: dict[str, int] = {}
    for s in short.values():
        counts[s] = counts.get(s, 0) + 1
    return {k: s for k, s in short.items() if counts[s] == 1 and (s == k or s not in keys)}
