"""The option checks the scikit-learn estimators share: each names the option it refuses, before any work.

>>> integer("sweeps", 40, 1), real("alpha", 0.95, 0.0, 1.0), choice("split_points", "data", ("data", "range"))
(40, 0.95, 'data')
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any


def choice(name: str, value: Any, options: Mapping[str, Any] | Sequence[str]) -> Any:
    """``value`` if it is one of ``options`` (a mapping: what it maps to), else a ``ValueError`` naming ``name``.

    >>> choice("expansion", "node", {"node": 0, "layer": 1})
    0
    """
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}, got {value!r}")
    return options[value] if isinstance(options, Mapping) else value


def integer(name: str, value: Any, low: int) -> int:
    """``value`` as an int if it is an integer ``>= low`` (not a bool), else a ``TypeError``/``ValueError`` naming
    ``name``.

    >>> integer("n_islands", 2.0, 1)
    Traceback (most recent call last):
    TypeError: n_islands must be an integer, got float
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def real(name: str, value: Any, low: float, high: float, low_open: bool = True, high_open: bool = True) -> float:
    """``value`` as a float if it is a finite number in the interval from ``low`` to ``high`` (open or closed at
    each end), else a ``TypeError``/``ValueError`` naming ``name``.

    >>> real("ess_threshold", 1, 0.0, 1.0, low_open=False, high_open=False)
    1.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    below = value <= low if low_open else value < low
    above = value >= high if high_open else value > high
    if not math.isfinite(value) or below or above:
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {lo}{low}, {high}{hi}, got {value}")
    return value
