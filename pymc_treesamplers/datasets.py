"""Small data sets for examples, tests and benchmarks: one shipped real data set, two simulators.

* :func:`load_boston`: Boston housing (Harrison & Rubinfeld 1978), 506 rows, shipped with the
  package (no download).
* :func:`friedman1`: Friedman's (1991) first test function, the usual BART benchmark.
* :func:`wu_tjelmeland_west`: the one-tree test data of Wu, Tjelmeland & West (2007), where two
  root splits fit equally well (a test of how a tree sampler mixes between modes).

The simulators return ``(X, y, f)`` with ``f`` the noise-free mean, and take ``rng`` as
anything :func:`numpy.random.default_rng` accepts (None, an int seed or a Generator).
"""

from __future__ import annotations

from importlib import resources
from numbers import Integral, Real

import numpy as np
import pandas as pd

__all__ = ["friedman1", "load_boston", "wu_tjelmeland_west"]

RngLike = int | np.random.Generator | None


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_noise(noise, name: str = "noise") -> float:
    if isinstance(noise, bool) or not isinstance(noise, Real) or not np.isfinite(noise) or noise < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {noise!r}")
    return float(noise)


def load_boston() -> tuple[pd.DataFrame, np.ndarray]:
    """Boston housing data: 13 covariates and the median home value ``medv`` (in $1000s).

    Read from the copy shipped in ``pymc_treesamplers/data/boston_housing.csv`` (UCI version,
    506 rows, no missing values; ``chas`` is a 0/1 indicator).

    Returns
    -------
    X : pandas.DataFrame, shape (506, 13)
        Covariates ``crim, zn, indus, chas, nox, rm, age, dis, rad, tax, ptratio, b, lstat``.
    y : numpy.ndarray, shape (506,)
        Response ``medv``.

    Examples
    --------
    >>> X, y = load_boston()
    >>> X.shape, y.shape, round(float(y.mean()), 2)
    ((506, 13), (506,), 22.53)
    """
    with resources.files("pymc_treesamplers").joinpath("data", "boston_housing.csv").open("r") as fh:
        df = pd.read_csv(fh)
    y = df.pop("medv").to_numpy(dtype=float)
    return df, y


def friedman1(
    n: int, p: int = 10, noise: float = 1.0, rng: RngLike = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Friedman's first test function, ``y = f(x) + N(0, noise^2)``, covariates iid U(0, 1).

    ``f(x) = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5``; the other ``p - 5`` columns
    are pure noise covariates.

    Parameters
    ----------
    n : int
        Number of rows (>= 1).
    p : int, default 10
        Number of covariates (>= 5).
    noise : float, default 1.0
        Standard deviation of the Gaussian noise (>= 0).
    rng : int, Generator or None
        Seed or generator.

    Returns
    -------
    X : (n, p) ndarray, y : (n,) ndarray, f : (n,) ndarray (noise-free mean)

    Examples
    --------
    >>> X, y, f = friedman1(200, rng=0)
    >>> X.shape, y.shape, bool(0 <= X.min() and X.max() <= 1)
    ((200, 10), (200,), True)
    """
    n = _check_int(n, "n", 1)
    p = _check_int(p, "p", 5)
    noise = _check_noise(noise)
    gen = np.random.default_rng(rng)
    X = gen.uniform(0.0, 1.0, size=(n, p))
    f = 10.0 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20.0 * (X[:, 2] - 0.5) ** 2 + 10.0 * X[:, 3] + 5.0 * X[:, 4]
    y = f + noise * gen.standard_normal(n)
    return X, y, f


def wu_tjelmeland_west(
    n: int = 300, noise: float = 0.5, rng: RngLike = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-tree test data of Wu, Tjelmeland & West (2007), three covariates.

    Rows come in three blocks (for ``n = 300``: rows 1-100, 101-200, 201-300; for other ``n``
    the blocks end at ``n // 3`` and ``2 n // 3``):

    ========  ============  ============  ============
    block     x1            x2            x3
    ========  ============  ============  ============
    first     U(0.1, 0.4)   U(0.1, 0.4)   U(0.6, 0.9)
    second    U(0.1, 0.4)   U(0.6, 0.9)   U(0.6, 0.9)
    third     U(0.6, 0.9)   U(0.1, 0.9)   U(0.1, 0.4)
    ========  ============  ============  ============

    ``f = 1`` if ``x1 <= 0.5 and x2 <= 0.5``, ``3`` if ``x1 <= 0.5 and x2 > 0.5``, ``5`` if
    ``x1 > 0.5``; ``y = f + N(0, noise^2)``. The original uses ``noise = 0.5``. On this sample
    ``{x1 <= 0.5}`` and ``{x3 > 0.5}`` are the same rows, so a root split on x1 and one on x3 fit
    equally well.

    Parameters
    ----------
    n : int, default 300
        Number of rows (>= 1).
    noise : float, default 0.5
        Standard deviation of the Gaussian noise (>= 0).
    rng : int, Generator or None
        Seed or generator.

    Returns
    -------
    X : (n, 3) ndarray, y : (n,) ndarray, f : (n,) ndarray (noise-free mean, values in {1, 3, 5})

    Examples
    --------
    >>> X, y, f = wu_tjelmeland_west(rng=0)
    >>> X.shape, sorted(set(f.tolist()))
    ((300, 3), [1.0, 3.0, 5.0])
    """
    n = _check_int(n, "n", 1)
    noise = _check_noise(noise)
    gen = np.random.default_rng(rng)
    b1, b2 = n // 3, (2 * n) // 3
    low, high, wide = (0.1, 0.4), (0.6, 0.9), (0.1, 0.9)
    blocks = [(b1, (low, low, high)), (b2 - b1, (low, high, high)), (n - b2, (high, wide, low))]
    X = np.vstack([np.column_stack([gen.uniform(lo, hi, size=size) for lo, hi in ranges]) for size, ranges in blocks])
    x1, x2 = X[:, 0], X[:, 1]
    f = np.where(x1 > 0.5, 5.0, np.where(x2 <= 0.5, 1.0, 3.0))
    y = f + noise * gen.standard_normal(n)
    return X, y, f
