"""Numbers computed from draws: bulk ESS and R-hat (the package's, from arviz-stats), R-coda's ESS, the Gaussian
log-likelihood."""

from __future__ import annotations

import numpy as np

from pymc_treesamplers.results.diagnostics import bulk_ess, rank_rhat

__all__ = ["bulk_ess", "coda_ess", "gaussian_loglik", "rank_rhat", "single_chain_bulk_ess", "split_summary"]


def single_chain_bulk_ess(x: np.ndarray) -> float:
    """Bulk ESS of one chain's 1-d trace (0 for a constant trace)."""
    x = np.asarray(x, dtype=float).ravel()
    if np.ptp(x) == 0:
        return 0.0
    return float(bulk_ess(x[None, :]))


def coda_ess(x: np.ndarray) -> float:
    """ESS of a 1-d trace the way R-coda's ``effectiveSize`` computes it (the PG-BART paper's estimator).

    coda: ``n * var(x) / spectrum0.ar(x)$spec``, where ``spectrum0.ar`` fits an autoregressive
    model by Yule-Walker with the order chosen by AIC (R's ``ar(x, aic=TRUE)``, ``order.max =
    floor(10 log10(n))``) and returns its spectral density at frequency 0,
    ``var.pred / (1 - sum(ar))^2``. The same formulas as R's ``ar.yw``, so that no R is needed.
    Returns 0 for a constant trace, like coda.
    """
    x = np.asarray(x, dtype=float).ravel()
    n = x.size
    xc = x - x.mean()
    c0 = float(np.dot(xc, xc) / n)
    if n < 3 or not c0 > 0:
        return 0.0
    order_max = int(min(n - 1, np.floor(10 * np.log10(n))))
    acov = np.array([np.dot(xc[: n - k], xc[k:]) / n for k in range(order_max + 1)])
    # Levinson-Durbin recursion: AR coefficients and innovation variance for every order
    best = (n * np.log(c0), 0, np.zeros(0), c0)  # (AIC, order, coefficients, innovation variance)
    phi = np.zeros(0)
    v = c0
    for k in range(1, order_max + 1):
        kappa = (acov[k] - np.dot(phi, acov[k - 1 : 0 : -1])) / v
        phi = np.concatenate([phi - kappa * phi[::-1], [kappa]])
        v = v * (1.0 - kappa**2)
        if not v > 0:
            break
        aic = n * np.log(v) + 2 * k
        if aic < best[0]:
            best = (aic, k, phi.copy(), v)
    _, order, coef, v = best
    var_pred = v * n / (n - (order + 1))
    spec0 = var_pred / (1.0 - coef.sum()) ** 2
    return float(n * np.var(x, ddof=1) / spec0) if spec0 > 0 else 0.0


def gaussian_loglik(y: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """``sum_i log N(y_i | mu[..., i], sigma[...])`` for draws mu (..., n) and sigma (...)."""
    mu = np.asarray(mu, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    r = np.asarray(y, dtype=float) - mu
    n = r.shape[-1]
    return -0.5 * np.sum(r**2, axis=-1) / sigma**2 - n * np.log(sigma) - 0.5 * n * np.log(2 * np.pi)


def split_summary(counts: np.ndarray, relevant: int) -> dict:
    """Variable selection from per-draw split counts ``(draws, p)`` when the first ``relevant`` covariates
    are the ones the response depends on: their share of all splits, and posterior inclusion
    probabilities (share of draws whose forest splits on the covariate at least once)."""
    counts = np.asarray(counts, dtype=float)
    counts = counts.reshape(-1, counts.shape[-1])
    pip = (counts > 0).mean(axis=0)
    noise = pip[relevant:]
    return {"split_share_relevant": float(counts[:, :relevant].sum() / max(counts.sum(), 1.0)),
            "pip_relevant_min": float(pip[:relevant].min()),
            "pip_noise_mean": float(noise.mean()) if noise.size else None,
            "pip_noise_max": float(noise.max()) if noise.size else None,
            "n_noise_selected": int((noise > 0.5).sum())}
