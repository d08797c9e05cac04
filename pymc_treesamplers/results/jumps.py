"""Summaries of a jump-mode trace (``CTBirthDeathStep(mode="jump")``).

Each draw of a jump-mode chain is a state of the embedded jump chain; the continuous-time process
spends an expected ``waiting_time = 1 / Lambda(T)`` in it, so posterior expectations are
waiting-time-weighted averages over the draws (Rao-Blackwellised: the expected holding time
replaces the random one).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = ["jump_weights", "resample_jump_chain", "weighted_mean"]


def jump_weights(idata) -> np.ndarray:
    """Normalised waiting-time weights of a jump-mode trace, shape (chain, draw), each chain summing to 1.

    >>> # w = pmt.jump_weights(idata); (w * idata.posterior["mu"].values[..., 0]).sum(1)
    """
    stats = idata["sample_stats"] if "sample_stats" in idata.children else None
    names = [] if stats is None else [name for name in stats.data_vars if str(name).endswith("_waiting_time")]
    if len(names) != 1:
        raise ValueError(
            "idata needs exactly one '<var>_waiting_time' sample stat (found "
            f"{names}): was it sampled with CTBirthDeathStep(mode='jump')?"
        )
    wt = np.asarray(stats[names[0]].values, dtype=float)
    if not np.isfinite(wt).all() or (wt <= 0).any():
        raise ValueError("waiting times must be finite and > 0 (a state with no possible move has no weight)")
    return wt / wt.sum(axis=1, keepdims=True)


def weighted_mean(idata, var_name: str) -> np.ndarray:
    """Waiting-time-weighted posterior mean of a variable, per chain: shape (chain, *var_shape).

    >>> # f_hat = pmt.weighted_mean(idata, "mu").mean(0)
    """
    w = jump_weights(idata)
    x = np.asarray(idata["posterior"][var_name].values, dtype=float)
    return np.einsum("cd,cd...->c...", w, x)


def resample_jump_chain(idata, n_draws: int | None = None, random_seed=None):
    """An equally weighted copy of a jump-mode trace: each chain's draws resampled in proportion
    to their waiting times (multinomial, with replacement), so ArviZ summaries and plots apply.

    Draw ``(c, d)`` of the copy is draw ``(c, index[c, d])`` of the original, for the posterior
    and the sample stats alike (``pmt.predict`` stays draw-matched). Resampling adds Monte Carlo
    noise and repeated draws, so ESS from the copy understates the chain; prefer
    :func:`weighted_mean` for point summaries.

    >>> # az.summary(pmt.resample_jump_chain(idata, random_seed=1))
    """
    w = jump_weights(idata)
    rng = np.random.default_rng(random_seed)
    n_chain, n_orig = w.shape
    n = n_orig if n_draws is None else int(n_draws)
    if n < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws!r}")
    index = np.stack([np.sort(rng.choice(n_orig, size=n, p=w[c])) for c in range(n_chain)])
    sel = xr.DataArray(index, dims=("chain", "draw_new"))
    out = idata.copy()
    for group in ("posterior", "sample_stats"):
        if group in out.children:
            ds = out[group].dataset
            ds = ds.isel(draw=sel).drop_vars("draw", errors="ignore").rename({"draw_new": "draw"})
            out[group] = xr.DataTree(ds.assign_coords(draw=np.arange(n)))
    return out
