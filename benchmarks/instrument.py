"""A BART step seen from a benchmark: its per-draw stats under either spelling, and its time per call.

The package is renaming the BART steps' per-draw stats from ``tree_depth``, ``n_leaves``, ...
to ``<var>_tree_depth``, ``<var>_n_leaves``, ... (``tree_depth`` collided with NUTS's own stat).
The benchmarks run against checkouts on both sides of the rename, so they read stats through
:func:`stat_key` / :func:`stat`, which try the new spelling first.
"""

from __future__ import annotations

import time
from collections.abc import Mapping


def stat_key(stats: Mapping, name: str, var: str = "mu") -> str | None:
    """The key under which ``stats`` (a step's stats dict or ``idata.sample_stats``) holds BART stat ``name``.

    ``<var>_<name>`` first, then the old ``name``; None if neither is there. With the old spelling
    a model with NUTS may hold NUTS's ``tree_depth`` under the same name: read ``tree_depth`` from
    the BART step's own stats dict (see :class:`StepRecorder`), not from the merged trace.
    """
    for key in (f"{var}_{name}", name):
        if key in stats:
            return key
    return None


def stat(stats: Mapping, name: str, var: str = "mu"):
    """``stats[stat_key(stats, name, var)]``; KeyError naming both spellings if neither is there."""
    key = stat_key(stats, name, var)
    if key is None:
        raise KeyError(f"no BART stat {var}_{name} (or {name}) among {sorted(stats)}")
    return stats[key]


class StepRecorder:
    """Wraps a step's ``step`` method to time every call and keep some of its per-draw stats.

    The stats come from the step's own return value, so they cannot be mixed up with another
    step's stat of the same name. ``seconds[i]`` and ``stats[i]`` belong to the i-th draw
    (tuning included); only one chain in this process (``cores=1``).
    """

    def __init__(self, step, names: tuple[str, ...] = (), var: str = "mu"):
        self.seconds: list[float] = []
        self.stats: list[dict[str, float]] = []
        inner = step.step

        def timed(point):
            t = time.perf_counter()
            out = inner(point)
            self.seconds.append(time.perf_counter() - t)
            st = out[1][0] if out[1] else {}
            self.stats.append({n: float(st[k]) for n in names if (k := stat_key(st, n, var)) is not None})
            return out

        step.step = timed
