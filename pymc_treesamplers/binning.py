"""Coding of covariates into integer split codes, once per model (DESIGN.md section 2).

A column with at most ``max_bins`` distinct values gets the ranks of its distinct values as
codes; a column with more gets quantile bins. Either way a column is described by increasing
``thresholds`` and ``code(x) = #{t in thresholds : t < x}``, so the split ``code <= c`` is the
same as ``x <= thresholds[c]``: prediction on new data needs only the thresholds.
"""

from dataclasses import dataclass

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
    """``x`` (ndarray, pandas object or sequence) as a float array; TypeError if not numeric.

    >>> numeric_array([[1, 2]], "X").dtype
    dtype('float64')
    """
    if hasattr(x, "dtypes") and hasattr(x, "to_numpy"):  # a DataFrame: name the offending columns
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        bad = [str(c) for c, dt in x.dtypes.items() if not (is_numeric_dtype(dt) or is_bool_dtype(dt))]
        if bad:
            raise TypeError(f"{what} has non-numeric columns {bad}; encode them as numbers first")
    if hasattr(x, "to_numpy"):
        x = x.to_numpy()
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{what} must be numeric, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def bin_columns(X: np.ndarray, max_bins: int = 256) -> Binning:
    """Code every column of a finite float matrix ``X`` (n, p).

    >>> bin_columns(np.arange(10.0)[:, None], max_bins=4).codes.max()
    np.uint16(3)
    """
    if not 2 <= max_bins <= 65536:
        raise ValueError(f"max_bins must be between 2 and 65536, got {max_bins}")
    n, p = X.shape
    codes = np.empty((p, n), dtype=np.uint16)
    thresholds = []
    for v in range(p):
        col = X[:, v]
        distinct = np.unique(col)
        if len(distinct) <= max_bins:
            thr = distinct[:-1]
        else:
            qs = np.quantile(col, np.linspace(0.0, 1.0, max_bins + 1)[1:-1], method="inverted_cdf")
            thr = np.unique(qs)
            thr = thr[thr < distinct[-1]]
        codes[v] = np.searchsorted(thr, col, side="left")
        thresholds.append(np.asarray(thr, dtype=np.float64))
    return Binning(codes, tuple(thresholds))
