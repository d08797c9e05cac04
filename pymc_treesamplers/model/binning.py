"""Coding of covariates into integer split codes, once per model (docs/design.md section 2).

Two codings (``split_points``):

* ``"data"`` (default): a column with at most ``max_bins`` distinct values gets the ranks of its
  distinct values as codes; a column with more gets quantile bins. Every gap between consecutive
  data values (or bins) is one cut, so the prior puts equal mass on each of them.
* ``"range"``: ``max_bins - 1`` equally spaced cuts over the column's range (BayesTree/dbarts with
  ``usequants=FALSE``; the split prior of Lakshminarayanan, Roy & Teh). Codes between data values
  may be empty; since the tree prior draws a cut uniformly over ``[min_code, max_code)`` of a node,
  the prior mass of a partition is proportional to the width of the gap its cut falls in, i.e.
  a split location uniform over the node's range, discretised to the grid.

Either way a column is described by increasing ``thresholds`` and
``code(x) = #{t in thresholds : t < x}``, so the split ``code <= c`` is the same as
``x <= thresholds[c]``: prediction on new data needs only the thresholds.

Categorical covariates (docs/categorical.md): an unordered one holds a code per category (a hash of its
label, :func:`label_codes`) and becomes one split column per category, "this category or not" (0/1),
each with ``1 / K`` of the covariate's weight; an ordered one holds its category's position and splits
like a number.

Missing values (NaN, docs/missing.md): a column with missing values becomes two *split columns*, ``x``
and ``-x``, each with the missing rows on one extra code above all others (the last threshold is the
largest float, so ``x <= threshold`` is false for NaN and true for every number). A split on the first
sends the missing rows right with the larger values, on the second (``-x <= t``, i.e. ``x >= -t``)
right with the smaller ones: each rule says where missing values go, and the tree prior chooses the
direction with probability 1/2 (each split column has half the column's weight).
"""

import hashlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class Binning:
    """Per-column thresholds; ``codes`` has shape (p, n), dtype uint16.

    >>> b = bin_columns(np.array([[1.0], [3.0], [2.0], [3.0]]))
    >>> b.codes.tolist(), b.thresholds[0].tolist()
    ([[0, 2, 1, 2]], [1.0, 2.0])
    """

    codes: np.ndarray
    thresholds: tuple

    @property
    def n_codes(self) -> np.ndarray:
        return np.array([len(t) + 1 for t in self.thresholds])

    def threshold_table(self) -> np.ndarray:
        """Thresholds padded into a (p, max_codes) float array (unused slots are +inf)."""
        width = max(1, max(len(t) for t in self.thresholds))
        table = np.full((len(self.thresholds), width), np.inf)
        for v, t in enumerate(self.thresholds):
            table[v, : len(t)] = t
        return table


def numeric_array(x, what: str) -> np.ndarray:
    """``x`` (ndarray, pandas DataFrame or Series, or sequence) as a float array; TypeError if not numeric.

    >>> numeric_array([[1, 2]], "X").dtype
    dtype('float64')
    >>> import pandas as pd
    >>> numeric_array(pd.Series([1, 2], name="a"), "Y").tolist()
    [1.0, 2.0]
    """
    dtypes = getattr(x, "dtypes", None)
    if hasattr(dtypes, "items") and hasattr(x, "to_numpy"):  # a DataFrame: name the offending columns
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        bad = [str(c) for c, dt in dtypes.items() if not (is_numeric_dtype(dt) or is_bool_dtype(dt))]
        if bad:
            raise TypeError(f"{what} has non-numeric columns {bad}; encode them as numbers first")
    if hasattr(x, "to_numpy"):
        x = x.to_numpy()
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{what} must be numeric, got dtype {arr.dtype}")
    return arr.astype(np.float64)


MISSING_LABEL = "\x00missing"  # a missing category is a category of its own


def label_codes(labels) -> np.ndarray:
    """Float codes of category labels: 52 bits of a hash of ``str(label)``, so that the same label has
    the same code in any data set (prediction needs no table of the training categories); a missing
    label (None, NaN, pd.NA) is the category ``MISSING_LABEL``.

    >>> c = label_codes(["a", "b", "a", None])
    >>> bool(c[0] == c[2]), bool(c[0] != c[1]), bool((c >= 0).all() and (c < 2.0**52).all())
    (True, True, True)
    """
    import pandas as pd

    out = np.empty(len(labels))
    for i, lab in enumerate(labels):
        text = MISSING_LABEL if lab is None or (not isinstance(lab, str) and bool(pd.isna(lab))) else str(lab)
        out[i] = float(int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 12)
    return out


def number_labels(values: np.ndarray) -> np.ndarray:
    """Category codes of a numeric column whose numbers are labels (pymc-bart's ``"OneHotSplit"``): each
    number's :func:`label_codes` as the label a pandas category of those numbers would carry (``3.0``
    as ``"3"``, ``2.5`` as ``"2.5"``), so that the same column given as a DataFrame category predicts
    alike; NaN is the missing category.

    >>> c = number_labels(np.array([1.0, 2.0, 1.0, np.nan]))
    >>> bool(c[0] == c[2]), bool(c[0] == label_codes(["1"])[0]), bool(c[3] == label_codes([None])[0])
    (True, True, True)
    """
    values = np.asarray(values, dtype=float)
    labels = [None if np.isnan(v) else (str(int(v)) if float(v).is_integer() else repr(float(v))) for v in values]
    return label_codes(labels)


def covariate_matrix(X, what: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """Covariates as a float matrix and the indices of their unordered categorical columns.

    A DataFrame may hold numeric and boolean columns, pandas ``category`` columns and object/string
    columns: an unordered categorical, object or string column gets :func:`label_codes`; an ordered
    categorical its categories' positions (missing: NaN). Anything else goes through
    :func:`numeric_array`.

    >>> import pandas as pd
    >>> X, cat = covariate_matrix(pd.DataFrame({"x": [1.0, 2.0], "c": ["u", "v"]}), "X")
    >>> X.shape, cat
    ((2, 2), (1,))
    """
    dtypes = getattr(X, "dtypes", None)
    if not (hasattr(dtypes, "items") and hasattr(X, "to_numpy")):
        return numeric_array(X, what), ()
    from pandas.api.types import CategoricalDtype, is_bool_dtype, is_numeric_dtype, is_object_dtype, is_string_dtype

    cols, cat = [], []
    for j, (name, dt) in enumerate(dtypes.items()):
        col = X.iloc[:, j]
        if isinstance(dt, CategoricalDtype) and dt.ordered:
            codes = col.cat.codes.to_numpy().astype(float)
            codes[codes < 0] = np.nan
            cols.append(codes)
        elif isinstance(dt, CategoricalDtype) and is_numeric_dtype(dt.categories.dtype):
            # numbers as labels: one canonical label per number (3, 3.0 -> "3"), as number_labels gives them
            cols.append(number_labels(col.astype(float).to_numpy(dtype=float, na_value=np.nan)))
            cat.append(j)
        elif isinstance(dt, CategoricalDtype) or is_object_dtype(dt) or is_string_dtype(dt):
            cols.append(label_codes(col.to_numpy(dtype=object)))
            cat.append(j)
        elif is_numeric_dtype(dt) or is_bool_dtype(dt):
            cols.append(col.to_numpy(dtype=float, na_value=np.nan))
        else:
            raise TypeError(f"{what} column {name!r} has dtype {dt}: numbers, booleans or categories only")
    return np.column_stack(cols) if cols else np.empty((len(X), 0)), tuple(cat)


SPLIT_POINTS = ("data", "range")
MISSING_THRESHOLD = float(np.finfo(np.float64).max)  # the cut between every number and NaN


@dataclass(frozen=True)
class SplitColumns(Binning):
    """The split columns of a covariate matrix that may hold NaN and categorical columns: :class:`Binning`
    of ``x`` for every numeric column, then of ``-x`` for each with missing values, then a 0/1 column per
    category of each unordered categorical one. ``source[v]`` is the covariate of split column ``v``;
    ``negated[v]`` whether it is ``-x``, ``category[v]`` whether it is a category's indicator (its one
    threshold is the category's code). A forest stores a split on split column ``v`` as covariate
    ``source[v] + p * negated[v] + 2 p * category[v]`` (:meth:`trace_var`), which prediction reads on
    ``[X, -X, X]`` (the last block by equality with the category's code).

    >>> sc = split_columns(np.array([[1.0], [np.nan], [3.0]]))
    >>> sc.codes.tolist(), sc.source.tolist(), sc.negated.tolist(), sc.trace_var.tolist()
    ([[0, 2, 1], [1, 2, 0]], [0, 0], [False, True], [0, 1])
    """

    source: np.ndarray = None
    negated: np.ndarray = None
    category: np.ndarray = None
    p: int = 0

    @cached_property  # read at every draw's encoding; the fields are frozen
    def trace_var(self) -> np.ndarray:
        return (self.source + self.p * self.negated + 2 * self.p * self.category).astype(np.int32)

    def column_weights(self, weights: np.ndarray) -> np.ndarray:
        """Split-column weights from one weight per covariate: a covariate with missing values gives
        half to each of its two split columns."""
        halves = np.bincount(self.source, minlength=len(weights))
        return np.asarray(weights, dtype=float)[self.source] / halves[self.source]


def split_columns(X: np.ndarray, max_bins: int = 256, split_points: str = "data",
                  categorical: tuple[int, ...] = ()) -> SplitColumns:
    """:func:`bin_columns` for a matrix whose columns may hold NaN (none entirely) and whose columns
    ``categorical`` hold category codes: the split columns of :class:`SplitColumns`. Without NaN and
    categories it is ``bin_columns`` with ``source = 0..p-1``."""
    n, p = X.shape
    categorical = sorted(categorical)
    numeric = [j for j in range(p) if j not in categorical]
    missing = np.isnan(X[:, numeric])
    with_nan = np.asarray(numeric, dtype=np.int64)[missing.any(axis=0)]
    if with_nan.size and max_bins > 65535:
        raise ValueError(f"max_bins must be at most 65535 when X has missing values, got {max_bins}")
    levels = {j: np.unique(X[:, j]) for j in categorical}
    n_cat = sum(len(v) for v in levels.values())
    codes = np.empty((len(numeric) + with_nan.size + n_cat, n), dtype=np.uint16)
    thresholds = []
    for v, col in enumerate([X[:, j] for j in numeric] + [-X[:, j] for j in with_nan]):
        gone = np.isnan(col)
        if not gone.any():
            b = bin_columns(col[:, None], max_bins, split_points)
            codes[v], thr = b.codes[0], b.thresholds[0]
        else:
            b = bin_columns(col[~gone][:, None], max_bins, split_points)
            codes[v, ~gone] = b.codes[0]
            thr = np.append(b.thresholds[0], MISSING_THRESHOLD)
            codes[v, gone] = len(thr)
        thresholds.append(thr)
    v = len(numeric) + with_nan.size
    for j in categorical:
        for level in levels[j]:
            # 0: another category (goes left), 1: this one; the threshold records which category it is
            codes[v] = X[:, j] == level
            thresholds.append(np.array([level]))
            v += 1
    cat_source = [j for j in categorical for _ in levels[j]]
    source = np.concatenate([numeric, with_nan, cat_source]).astype(np.int64)
    negated = np.concatenate([np.zeros(len(numeric), bool), np.ones(with_nan.size, bool), np.zeros(n_cat, bool)])
    category = np.concatenate([np.zeros(len(numeric) + with_nan.size, bool), np.ones(n_cat, bool)])
    return SplitColumns(codes, tuple(thresholds), source, negated, category, p)


def bin_columns(X: np.ndarray, max_bins: int = 256, split_points: str = "data") -> Binning:
    """Code every column of a finite float matrix ``X`` (n, p).

    >>> bin_columns(np.arange(10.0)[:, None], max_bins=4).codes.max()
    np.uint16(3)
    >>> bin_columns(np.array([[0.0], [0.1], [1.0]]), max_bins=4, split_points="range").codes.tolist()
    [[0, 0, 3]]
    """
    if not 2 <= max_bins <= 65536:
        raise ValueError(f"max_bins must be between 2 and 65536, got {max_bins}")
    if split_points not in SPLIT_POINTS:
        raise ValueError(f"split_points must be one of {SPLIT_POINTS}, got {split_points!r}")
    n, p = X.shape
    codes = np.empty((p, n), dtype=np.uint16)
    thresholds = []
    for v in range(p):
        col = X[:, v]
        distinct = np.unique(col)
        if split_points == "range":
            lo, hi = distinct[0], distinct[-1]
            # interior grid points only; a constant column gets none (no valid cut)
            thr = np.unique(lo + (hi - lo) * np.arange(1, max_bins) / max_bins) if hi > lo else distinct[:0]
            thr = thr[(thr >= lo) & (thr < hi)]
        elif len(distinct) <= max_bins:
            thr = distinct[:-1]
        else:
            qs = np.quantile(col, np.linspace(0.0, 1.0, max_bins + 1)[1:-1], method="inverted_cdf")
            thr = np.unique(qs)
            thr = thr[thr < distinct[-1]]
        codes[v] = np.searchsorted(thr, col, side="left")
        thresholds.append(np.asarray(thr, dtype=np.float64))
    return Binning(codes, tuple(thresholds))
