"""Small data sets for examples, tests and benchmarks: shipped real data sets, simulators.

* :func:`load_boston`: Boston housing (Harrison & Rubinfeld 1978), 506 rows; :func:`load_bikes`
  (hourly rental counts), :func:`load_ionosphere` (binary classification), :func:`load_marketing`
  (sales against advertising): the data of pymc-bart's gallery models. All shipped with the package
  (no download).
* :func:`friedman1`: Friedman's (1991) first test function, the usual BART benchmark;
  :func:`friedman1_train_test`: the benchmarks' training set and noise-free test set of it.
* :func:`hypercube`: the hypercube-D data of the Particle Gibbs paper (Lakshminarayanan, Roy &
  Teh 2015), one tree with ``2^D`` leaves.
* :func:`wu_tjelmeland_west`: the one-tree test data of Wu, Tjelmeland & West (2007), where two
  root splits fit equally well (a test of how a tree sampler mixes between modes).

:func:`friedman1` and :func:`wu_tjelmeland_west` return ``(X, y, f)`` with ``f`` the noise-free
mean, and take ``rng`` as anything :func:`numpy.random.default_rng` accepts (None, an int seed or
a Generator). The two benchmark sets return ``(X, y, f, X_test, f_test)`` and take an integer
``seed`` from which they derive fixed random streams, so that their arrays never change for a
given seed (saved benchmark results refer to them).
"""

from __future__ import annotations

import itertools
from importlib import resources
from numbers import Integral, Real

import numpy as np
import pandas as pd

__all__ = [
    "friedman1",
    "friedman1_train_test",
    "hypercube",
    "load_bikes",
    "load_boston",
    "load_ionosphere",
    "load_marketing",
    "wu_tjelmeland_west",
]

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
    df = _read_shipped("boston_housing.csv")
    y = df.pop("medv").to_numpy(dtype=float)
    return df, y


def _read_shipped(name: str, **read_kw) -> pd.DataFrame:
    with resources.files("pymc_treesamplers").joinpath("data", name).open("r") as fh:
        return pd.read_csv(fh, **read_kw)


def load_bikes() -> tuple[pd.DataFrame, np.ndarray]:
    """Hourly bike rentals: ``hour, temperature, humidity, workingday`` and the ``count`` of rentals.

    348 rows subsampled from the UCI Bike Sharing data (Fanaee-T & Gama 2013; temperature and humidity
    normalised to [0, 1]), the sample of the PyMC example gallery's BART count notebooks; shipped in
    ``pymc_treesamplers/data/bikes.csv``.

    >>> X, y = load_bikes()
    >>> X.shape, int(y.min()) >= 0
    ((348, 4), True)
    """
    df = _read_shipped("bikes.csv")
    y = df.pop("count").to_numpy(dtype=float)
    return df, y


def load_ionosphere() -> tuple[pd.DataFrame, np.ndarray]:
    """UCI Ionosphere (Sigillito et al. 1989): 34 radar features and the class (1 good, 0 bad).

    351 rows, shipped in ``pymc_treesamplers/data/ionosphere.csv``.

    >>> X, y = load_ionosphere()
    >>> X.shape, sorted(set(y.tolist()))
    ((351, 34), [0.0, 1.0])
    """
    df = _read_shipped("ionosphere.csv")
    y = df.pop("Class").to_numpy(dtype=float)
    return df, y


def load_marketing() -> tuple[pd.DataFrame, np.ndarray]:
    """Sales against advertising budgets ``youtube, facebook, newspaper`` (thousands of dollars).

    The ``marketing`` data of the R package datarium (200 rows), the data of the PyMC example gallery's
    BART heteroskedasticity notebook; shipped in ``pymc_treesamplers/data/marketing.csv``.

    >>> X, y = load_marketing()
    >>> X.shape, round(float(y.mean()), 2)
    ((200, 3), 16.83)
    """
    df = _read_shipped("marketing.csv", sep=";", decimal=",")
    y = df.pop("sales").to_numpy(dtype=float)
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


def friedman1_train_test(
    n: int, seed: int, n_test: int = 1000, p: int = 10, noise: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Friedman #1 training set of size ``n`` and a noise-free test set, as the benchmarks use them.

    Both come from :func:`friedman1`. The training rows are drawn from the stream
    ``default_rng([seed, n])``, so every sampler and every number of trees sees the same data for
    a given ``(seed, n)``; the test rows from ``default_rng([seed, 0, 1])``, which does not depend
    on ``n``, so all training sizes share one test set.

    Parameters
    ----------
    n : int
        Number of training rows (>= 1).
    seed : int
        Seed of both streams (>= 0).
    n_test : int, default 1000
        Number of test rows (>= 1).
    p : int, default 10
        Number of covariates (>= 5).
    noise : float, default 1.0
        Standard deviation of the noise of the training ``y`` (>= 0).

    Returns
    -------
    X : (n, p) ndarray, y : (n,) ndarray, f : (n,) ndarray (noise-free mean of the training rows),
    X_test : (n_test, p) ndarray, f_test : (n_test,) ndarray (noise-free mean of the test rows)

    Examples
    --------
    >>> X, y, f, X_test, f_test = friedman1_train_test(300, seed=1234)
    >>> X.shape, X_test.shape, f_test.shape
    ((300, 10), (1000, 10), (1000,))
    >>> bool((friedman1_train_test(50, seed=1234)[3] == X_test).all())  # one test set for every n
    True
    """
    n = _check_int(n, "n", 1)
    seed = _check_int(seed, "seed", 0)
    n_test = _check_int(n_test, "n_test", 1)
    X, y, f = friedman1(n, p, noise, np.random.default_rng([seed, n]))
    X_test, _, f_test = friedman1(n_test, p, 0.0, np.random.default_rng([seed, 0, 1]))
    return X, y, f, X_test, f_test


def hypercube(
    dim: int, seed: int = 0, per_vertex: int = 10, per_vertex_test: int = 10
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Hypercube-D data of Lakshminarayanan, Roy & Teh (2015, section 4.1): one tree with ``2^dim`` leaves.

    Around every vertex ``v`` of ``[-1, 1]^dim`` lie ``per_vertex`` points ``x = v + N(0, 0.1^2 I)``;
    the vertex values ``f(v) ~ N(0, 3^2)`` are iid and ``y = f(v) + N(0, 0.01^2)``. The test set
    has ``per_vertex_test`` fresh points per vertex with the same vertex values and noise-free
    ``f``. Rows are ordered by vertex (vertices in :func:`itertools.product` order).

    The training data and the vertex values are drawn from ``default_rng([seed, dim])``, the test
    points from ``default_rng([seed, dim, 1])``: the data depend on ``(seed, dim)`` only.

    Parameters
    ----------
    dim : int
        Dimension D (>= 1); there are ``2^dim`` vertices.
    seed : int, default 0
        Seed of the streams (>= 0).
    per_vertex : int, default 10
        Training points per vertex (>= 1).
    per_vertex_test : int, default 10
        Test points per vertex (>= 1).

    Returns
    -------
    X : (2^dim * per_vertex, dim) ndarray, y : ndarray, f : ndarray (vertex value of each row),
    X_test : (2^dim * per_vertex_test, dim) ndarray, f_test : ndarray

    Examples
    --------
    >>> X, y, f, X_test, f_test = hypercube(3)
    >>> X.shape, X_test.shape, len(set(f.tolist()))
    ((80, 3), (80, 3), 8)
    >>> bool(abs(y - f).max() < 0.1)
    True
    """
    dim = _check_int(dim, "dim", 1)
    seed = _check_int(seed, "seed", 0)
    per_vertex = _check_int(per_vertex, "per_vertex", 1)
    per_vertex_test = _check_int(per_vertex_test, "per_vertex_test", 1)
    vertices = np.array(list(itertools.product([-1.0, 1.0], repeat=dim)))
    gen = np.random.default_rng([seed, dim])
    f_vertex = gen.normal(0.0, 3.0, size=vertices.shape[0])
    X = np.repeat(vertices, per_vertex, axis=0) + gen.normal(0.0, 0.1, size=(vertices.shape[0] * per_vertex, dim))
    f = np.repeat(f_vertex, per_vertex)
    y = f + gen.normal(0.0, 0.01, size=f.shape[0])
    gen_test = np.random.default_rng([seed, dim, 1])
    X_test = np.repeat(vertices, per_vertex_test, axis=0) + gen_test.normal(
        0.0, 0.1, size=(vertices.shape[0] * per_vertex_test, dim)
    )
    f_test = np.repeat(f_vertex, per_vertex_test)
    return X, y, f, X_test, f_test


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
        Number of rows (>= 1), split into the three blocks above.
    noise : float, default 0.5
        Noise sd (>= 0; the original's 0.5; the benchmarks also use 0.1 and 0.01).
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
