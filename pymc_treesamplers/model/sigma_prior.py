"""The Chipman et al. (2010) default prior for the noise variance, offered as a helper.

``sigma^2 ~ nu * lam / chi^2_nu`` (an inverse gamma with shape ``nu/2`` and scale ``nu*lam/2``),
with ``lam`` chosen so that ``P(sigma < sigma_hat) = q``, where ``sigma_hat`` is the residual sd
of a least-squares fit of Y on X (the sd of Y when there are too few rows for least squares).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .binning import numeric_array


def chipman_sigma2_prior(X, Y, nu: float = 3.0, q: float = 0.9, sigma_hat: float | None = None) -> tuple[float, float]:
    """``(alpha, beta)`` of the inverse-gamma prior of sigma^2 (Chipman, George & McCulloch 2010).

    ``sigma_hat``: the reference scale, when given (else estimated from X and Y as above).

    >>> X = np.arange(20.0)[:, None]; Y = 2 * X[:, 0] + np.sin(np.arange(20.0))
    >>> a, b = chipman_sigma2_prior(X, Y)
    >>> a
    1.5
    >>> # sigma2 = pm.InverseGamma("sigma2", a, b); sigma = pm.Deterministic("sigma", pm.math.sqrt(sigma2))
    """
    if not nu > 0:
        raise ValueError(f"nu must be > 0, got {nu}")
    if not 0 < q < 1:
        raise ValueError(f"q must lie in (0, 1), got {q}")
    if sigma_hat is None:
        sigma_hat = _residual_sd(X, Y)
    elif not sigma_hat > 0:
        raise ValueError(f"sigma_hat must be > 0, got {sigma_hat}")
    lam = sigma_hat**2 * stats.chi2.ppf(1.0 - q, nu) / nu
    return nu / 2.0, nu * lam / 2.0


def _residual_sd(X, Y) -> float:
    """Residual sd of least squares of Y on X (the sd of Y when there are too few rows)."""
    Xa = numeric_array(X, "X")
    Ya = numeric_array(Y, "Y")
    if Xa.ndim == 1:
        Xa = Xa[:, None]
    if Xa.shape[0] != Ya.shape[0]:
        raise ValueError(f"X has {Xa.shape[0]} rows but Y has {Ya.shape[0]}")
    n, p = Xa.shape
    if n > p + 1:
        design = np.column_stack([np.ones(n), Xa])
        coef, *_ = np.linalg.lstsq(design, Ya, rcond=None)
        sigma_hat = float(np.sqrt(np.sum((Ya - design @ coef) ** 2) / (n - p - 1)))
    else:
        sigma_hat = float(np.std(Ya))
    if not sigma_hat > 0:
        raise ValueError("Y is constant (or fit exactly by least squares): cannot calibrate a noise prior")
    return sigma_hat
