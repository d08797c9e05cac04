"""A BART's covariates and response as the user gives them, checked and resolved before any coding.

:func:`bart_spec` is where X and Y enter from any front end (:func:`pymc_treesamplers.BART`,
:class:`pymc_treesamplers.GFRRegressor`): numeric arrays from ndarrays, DataFrames (categorical and string
columns coded), ``pm.Data`` or constants, every check that names the argument, and the prior defaults on the
scale of Y. From here the data flow one way: covariates -> split coding (:mod:`.binning`) -> the engine's chain
-> the stored forests.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.sharedvar import TensorSharedVariable
from pytensor.tensor.variable import TensorConstant

from ..engine import DirichletSplitPrior
from .binning import SPLIT_POINTS, covariate_matrix, numeric_array

__all__ = ["as_data_array", "bart_spec", "column_names", "monotone_spec", "split_directions"]


def as_data_array(x, what: str) -> np.ndarray:
    """Numeric value of X or Y given as ndarray, pandas object, pm.Data or a constant tensor.

    >>> as_data_array([[1, 2], [3, 4]], "X").shape
    (2, 2)
    """
    if isinstance(x, TensorSharedVariable):
        x = x.get_value()
    elif isinstance(x, TensorConstant):
        x = x.data
    elif isinstance(x, pt.TensorVariable):
        raise TypeError(f"{what} must be data (ndarray, DataFrame or pm.Data), not a symbolic tensor")
    return numeric_array(x, what)


_OPTIONS = dict(m=200, alpha=0.95, beta=2.0, k=None, mu0=None, sigma_mu=None, split_prior=None, max_bins=256,
                split_points="data", number_categories=(), basis_scale=1.0, basis_constant=1.0, monotone=None)


def bart_spec(X, Y, **options) -> tuple[np.ndarray, np.ndarray, dict]:
    """Check BART inputs and resolve the prior defaults; returns ``(X, Y, op_kwargs)``.

    ``options`` are the keyword arguments of :func:`pymc_treesamplers.BART` (defaults as there). Defaults (Chipman
    et al. 2010, on the scale of Y): ``mu0 = mean(Y)/m``, ``sigma_mu = (max(Y) - min(Y)) / (2 k sqrt(m))``
    (under a non-Gaussian likelihood the step moves defaulted values to the link scale:
    :meth:`pymc_treesamplers.model.bart.BARTRV.leaf_prior`). With a leaf basis (``basis_scale``, ``basis_constant``
    from :func:`~pymc_treesamplers.model.basis.basis_spec`) the defaults are for its coefficient: ``sigma_mu``
    divided by the basis's scale, ``mu0`` divided by its constant value, or 0 for a basis that varies.

    >>> X, Y, kw = bart_spec(np.arange(6.0)[:, None], np.arange(6.0), m=4)
    >>> kw["mu0"], kw["sigma_mu"]
    (0.625, 0.625)
    """
    if unknown := sorted(set(options) - set(_OPTIONS)):
        raise TypeError(f"BART got unexpected keyword arguments {unknown}")
    opts = _OPTIONS | options
    m, alpha, beta, k, mu0, sigma_mu = (opts[name] for name in ("m", "alpha", "beta", "k", "mu0", "sigma_mu"))
    split_prior, max_bins, split_points = opts["split_prior"], opts["max_bins"], opts["split_points"]
    number_categories = tuple(int(j) for j in opts["number_categories"])
    if isinstance(X, (TensorSharedVariable, TensorConstant)) or not hasattr(X, "dtypes"):
        Xa, categorical = as_data_array(X, "X"), ()
    else:  # a DataFrame: categorical and string columns get category codes
        Xa, categorical = covariate_matrix(X, "X")
    Ya = as_data_array(Y, "Y")
    if Xa.ndim == 1:
        Xa = Xa[:, None]
    if Xa.ndim != 2:
        raise ValueError(f"X must be a 2-D matrix (rows x covariates), got {Xa.ndim} dimensions")
    if Ya.ndim != 1:
        raise ValueError(f"Y must be a vector, got shape {Ya.shape}")
    if Xa.shape[0] != Ya.shape[0]:
        raise ValueError(f"X has {Xa.shape[0]} rows but Y has {Ya.shape[0]}: they must match")
    if Xa.shape[0] < 1 or Xa.shape[1] < 1:
        raise ValueError(f"X must have at least one row and one column, got shape {Xa.shape}")
    if np.isinf(Xa).any():
        raise ValueError("X contains inf: every covariate value must be finite (or NaN for a missing value)")
    if (empty := np.flatnonzero(np.isnan(Xa).all(axis=0))).size:
        names = column_names(X, empty)
        raise ValueError(f"X column(s) {names} are entirely missing (NaN): drop them, they cannot inform a split")
    # columns whose numbers are labels (split_rules "OneHotSplit"); a DataFrame's category column already is one
    number_categories = tuple(j for j in number_categories if j not in categorical)
    categorical = tuple(sorted((*categorical, *number_categories)))
    if (single := [j for j in categorical if np.unique(Xa[:, j]).size < 2]):
        raise ValueError(f"X categorical column(s) {column_names(X, single)} have a single category: drop them, "
                         "they cannot inform a split")
    if not np.isfinite(Ya).all():
        raise ValueError("Y contains NaN or inf: every response value must be finite")
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m (number of trees) must be an integer >= 1, got {m!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if not beta >= 0.0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    auto_k = k is None
    if auto_k:  # the Normal default; a step under another likelihood takes its link's (LINK_K)
        k = 2.0
    if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)) or not k > 0.0:
        raise ValueError(f"k must be a number > 0, got {k!r}")
    if isinstance(max_bins, bool) or not isinstance(max_bins, (int, np.integer)) or not 2 <= max_bins <= 65536:
        raise ValueError(f"max_bins must be an integer between 2 and 65536, got {max_bins!r}")
    if split_points not in SPLIT_POINTS:
        raise ValueError(f"split_points must be one of {SPLIT_POINTS}, got {split_points!r}")
    p = Xa.shape[1]
    if isinstance(split_prior, str):
        if split_prior != "dirichlet":
            raise ValueError(f"split_prior must be 'dirichlet', a pmt.DirichletSplitPrior or one weight per column "
                             f"of X, got {split_prior!r}")
        split_prior = DirichletSplitPrior()
    if split_prior is not None and not isinstance(split_prior, DirichletSplitPrior):
        sp = np.asarray(split_prior, dtype=float)
        if sp.shape != (p,):
            raise ValueError(f"split_prior must have one weight per column of X ({p}), got shape {sp.shape}")
        if not np.isfinite(sp).all() or (sp < 0).any():
            raise ValueError("split_prior weights must be finite and >= 0")
        if sp.sum() <= 0:
            raise ValueError("split_prior must give at least one column a positive weight")
        split_prior = tuple(sp.tolist())
    auto_leaf = (mu0 is None, sigma_mu is None, auto_k)
    basis_scale, basis_constant = float(opts["basis_scale"]), float(opts["basis_constant"])
    if mu0 is None:
        mu0 = float(Ya.mean()) / m / basis_constant if basis_constant else 0.0
    if sigma_mu is None:
        spread = float(Ya.max() - Ya.min())
        sigma_mu = (spread / (2.0 * k * np.sqrt(m)) if spread > 0 else 1.0 / np.sqrt(m)) / basis_scale
    if not np.isfinite(mu0):
        raise ValueError(f"mu0 must be finite, got {mu0}")
    if not (np.isfinite(sigma_mu) and sigma_mu > 0):
        raise ValueError(f"sigma_mu must be finite and > 0, got {sigma_mu}")
    kw = dict(
        m=int(m),
        alpha=float(alpha),
        beta=float(beta),
        mu0=float(mu0),
        sigma_mu=float(sigma_mu),
        split_prior=split_prior,
        max_bins=int(max_bins),
        split_points=split_points,
        k=float(k),
        auto_leaf=auto_leaf,
        categorical=categorical,
        number_categories=number_categories,
        basis_scale=basis_scale,
        basis_constant=basis_constant,
        monotone=monotone_spec(opts["monotone"], X, Xa, categorical),
    )
    return Xa, Ya, kw


def column_names(X, idx) -> list:
    """Names of the columns ``idx`` of X, for messages: a DataFrame's labels, else the indices.

    >>> column_names(np.zeros((2, 3)), [0, 2])
    [0, 2]
    """
    cols = getattr(X, "columns", None)
    return [str(cols[i]) for i in idx] if cols is not None else [int(i) for i in idx]


def monotone_spec(monotone, X, Xa: np.ndarray, categorical=()) -> tuple[int, ...]:
    """The direction of every column of X under ``BART(monotone=...)``: +1 increasing, -1 decreasing, 0 free
    (scikit-learn's ``monotonic_cst`` and LightGBM's ``monotone_constraints`` convention); ``()`` without a
    constraint.

    ``monotone``: None, one value per column, or a dict from a DataFrame's column names (or column indices) to
    values, the columns left out free. A constraint on a categorical column, or on a column with missing values,
    is refused by name: an unordered category has no direction, and a missing value has no place on the axis.

    >>> monotone_spec([1, 0, -1], None, np.zeros((4, 3)))
    (1, 0, -1)
    >>> monotone_spec({1: -1}, None, np.zeros((4, 3)))
    (0, -1, 0)
    """
    if monotone is None:
        return ()
    p = Xa.shape[1]
    names = list(getattr(X, "columns", []))
    if isinstance(monotone, dict):
        dirs = [0] * p
        for key, value in monotone.items():
            if key in names:
                j = names.index(key)
            elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 0 <= key < p:
                j = int(key)
            else:
                known = f"X's columns are {names}" if names else f"X has {p} columns, indexed 0..{p - 1}"
                raise ValueError(f"monotone names column {key!r}, which X does not have ({known})")
            dirs[j] = value
    elif isinstance(monotone, str) or not hasattr(monotone, "__len__"):
        raise TypeError(f"monotone must be one value per column of X (+1, 0, -1) or a dict from column names to "
                        f"values, got {monotone!r}")
    else:
        dirs = list(monotone)
        if len(dirs) != p:
            raise ValueError(f"monotone must have one value per column of X ({p}), got {len(dirs)}")
    for d in dirs:
        if isinstance(d, bool) or not isinstance(d, (int, float, np.integer, np.floating)) or d not in (-1, 0, 1):
            raise ValueError(f"monotone values must be +1 (increasing), 0 (free) or -1 (decreasing), got {d!r}")
    dirs = [int(d) for d in dirs]
    constrained = [j for j in range(p) if dirs[j]]
    if not constrained:
        return ()
    if bad := [j for j in constrained if j in categorical]:
        raise ValueError(f"monotone constrains the categorical column(s) {column_names(X, bad)}: a category has no "
                         "order to be monotone in; leave them free (0), or code an ordered category as numbers")
    if bad := [j for j in constrained if np.isnan(Xa[:, j]).any()]:
        raise ValueError(f"monotone constrains column(s) {column_names(X, bad)}, which have missing values (NaN): a "
                         "missing value has no place along the axis the constraint orders; impute them, or leave "
                         "the column free (0)")
    return tuple(dirs)


def split_directions(monotone, source: np.ndarray) -> np.ndarray:
    """The direction of every split column (``source[v]``: its covariate, :mod:`.binning`) under the covariates'
    ``monotone`` directions. A constrained covariate must be one split column: with missing values (which
    ``pm.set_data`` may bring after :func:`monotone_spec` refused them) it splits as x and -x, and is refused.

    >>> split_directions((1, 0, -1), np.array([0, 1, 2])).tolist()
    [1, 0, -1]
    """
    dirs = np.asarray(monotone, dtype=np.int64)
    if bad := [int(j) for j in np.flatnonzero(dirs) if np.count_nonzero(source == j) != 1]:
        raise ValueError(f"monotone constrains column(s) {bad} of X, which now hold missing values (NaN): impute "
                         "them, or leave the column free")
    return dirs[source]
