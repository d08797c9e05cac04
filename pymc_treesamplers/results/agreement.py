"""Do a BART fit's chains agree, and what to do when they do not (docs/samplers.md, "Do the chains agree?").

:func:`agreement` reads one fit's InferenceData: over all its chains, the rank-normalised R-hat and bulk ESS of
every other variable of the posterior (σ first of all), of the BART value at 10 training rows and of a tree-level
quantity (the forest's leaves). :func:`disagreement_advice` turns a table that fails into what the measurements say
to do, and :class:`ConvergenceAdvice`, installed on PyMC's convergence logger when the package is imported, adds
that advice to PyMC's own R-hat and ESS warnings when the model being sampled holds a BART variable: PyMC's checks
run once over all chains, after sampling, and offer no other place to say it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .diagnostics import bart_names, bulk_ess, rank_rhat

__all__ = ["ESS_MIN", "RHAT_MAX", "ConvergenceAdvice", "agreement", "disagreement_advice", "install_advice"]

# Agreement as issue 59 and the demo judge it: R-hat of each quantity at most 1.01 (Vehtari et al. 2021) with a
# bulk ESS of at least 400 over all chains (100 a chain for PyMC's default 4)
RHAT_MAX = 1.01
ESS_MIN = 400
N_ROWS = 10  # training rows whose BART value is checked, evenly spaced

# What helped, measured (docs/samplers.md, "Do the chains agree?"; docs/reports/mechanisms.md, twigs.md): on Boston
# housing 4 chains of CGM at m = 200 left R-hat of sigma at 1.02-1.03 after 4,000-5,000 draws each, at m = 400 they
# agreed (1.006) in 5,000 at 1.8x the time; no other step or move of the package beat CGM per second there
ADVICE = (
    "A BART fit's chains are slowest to agree on the noise scale sigma and on the fit at the few rows a Normal "
    "likelihood calls outliers; every tree step here is exact, so longer chains do agree. What helped, measured "
    "(docs/samplers.md, \"Do the chains agree?\"): (1) more draws: pm.sample(draws=5000) or more (on Boston housing "
    "at m=200, 4 chains still read R-hat of sigma 1.02-1.03 after 4,000-5,000 draws each); (2) a larger m: "
    "pmt.BART(..., m=400) agreed there in 5,000 draws at 1.8x the time (another prior: check the held-out fit); "
    "(3) where a few rows sit far from the fit: pm.sample(step=[pmt.CGMStep([mu], aimed_twigs=0.3)]) gave "
    "2-5x the ESS of sigma per second on Boston at m=200 (1-1.9x on California, 0.6-0.9x on Friedman #1 and "
    "marketing, so it is not the default); (4) another step helped less: ReshapeStep(warm_start=10) was the first "
    "to bring R-hat below 1.1 on California housing, PGBARTStep came nearest on sigma on Boston at a tenth of "
    "CGMStep's speed. "
    "pmt.agreement(idata) says which quantity disagrees."
)


def _worst(draws: np.ndarray) -> tuple[float, float]:
    """The largest R-hat and the smallest bulk ESS over the trailing elements of (chain, draw, ...) draws.
    An element that never changes (a fixed deterministic, a constant fit) has no R-hat and nothing to disagree
    on: it is left out, and a quantity made only of such elements reads R-hat 1 and an infinite ESS."""
    flat = np.asarray(draws, dtype=float).reshape(draws.shape[0], draws.shape[1], -1)
    flat = flat[..., np.ptp(flat, axis=(0, 1)) > 0]
    if flat.shape[-1] == 0:
        return 1.0, np.inf
    return float(np.max(rank_rhat(flat))), float(np.min(bulk_ess(flat)))


def agreement(idata, var_name: str | None = None, rows: Sequence[int] | None = None, *,
              rhat_max: float = RHAT_MAX, ess_min: float = ESS_MIN) -> pd.DataFrame:
    """Whether a fit's chains agree: one row per quantity with its R-hat (``r_hat``, the largest over its
    elements), bulk ESS (``ess_bulk``, the smallest) and ``agree`` (``r_hat <= rhat_max`` and
    ``ess_bulk >= ess_min``).

    The quantities: every variable of the posterior other than the BART variables (σ, coefficients, group
    effects: each its worst element), the BART value ``f`` of each BART variable at ``rows`` (training rows;
    default 10 evenly spaced) and its tree-level quantity ``n_leaves`` (the forest's mean leaves per tree,
    from ``sample_stats``), which can stall while σ moves. ``var_name`` restricts the BART rows to one
    variable (default: every BART variable in ``idata``). Chains need at least 4 draws each.

    >>> import arviz as az
    >>> rng = np.random.default_rng(0)
    >>> idata = az.from_dict({"posterior": {"sigma": rng.normal(size=(4, 500)),
    ...                                     "mu": rng.normal(size=(4, 500, 20))},
    ...                       "sample_stats": {"mu_forest": np.full((4, 500), ""),
    ...                                        "mu_n_leaves": rng.normal(size=(4, 500)) + np.arange(4)[:, None]}})
    >>> agreement(idata)["agree"].to_dict()
    {'sigma': True, 'mu: f at 10 rows': True, 'mu: n_leaves': False}
    """
    if "posterior" not in idata.children:
        raise ValueError("idata has no posterior group: pass what pm.sample returned")
    post = idata["posterior"].to_dataset()
    if post.sizes.get("chain", 0) < 2:
        raise ValueError(f"agreement needs several chains, idata has {post.sizes.get('chain', 0)}: "
                         "pm.sample(chains=4) (PyMC's default)")
    if post.sizes.get("draw", 0) < 4:
        raise ValueError(f"agreement needs at least 4 draws a chain, idata has {post.sizes.get('draw', 0)}")
    every_bart = bart_names(idata) if "sample_stats" in idata.children else []
    barts = every_bart
    if var_name is not None:
        if var_name not in barts:
            raise ValueError(f"var_name={var_name!r} is not a BART variable of idata (those with forests: {barts})")
        barts = [var_name]
    table: dict[str, tuple[float, float]] = {}
    for name in post.data_vars:
        if name not in every_bart:
            table[str(name)] = _worst(post[name].values)
    for name in barts:
        if name not in post:
            continue
        f = np.asarray(post[name].values, dtype=float)
        n = f.shape[-1]
        chosen = np.unique(np.linspace(0, n - 1, min(N_ROWS, n)).round().astype(int)) if rows is None else \
            np.asarray([int(r) for r in rows])
        if chosen.size == 0 or np.any((chosen < 0) | (chosen >= n)):
            raise ValueError(f"rows must be training rows in [0, {n}), got {list(chosen)}")
        table[f"{name}: f at {chosen.size} rows"] = _worst(f[..., chosen])
        stats = idata["sample_stats"]
        if f"{name}_n_leaves" in stats:
            table[f"{name}: n_leaves"] = _worst(np.asarray(stats[f"{name}_n_leaves"].values))
    out = pd.DataFrame.from_dict(table, orient="index", columns=["r_hat", "ess_bulk"])
    return out.assign(agree=(out["r_hat"] <= rhat_max) & (out["ess_bulk"] >= ess_min))


def disagreement_advice(table: pd.DataFrame) -> str | None:
    """What to do when :func:`agreement`'s table has a quantity that disagrees (None when all agree).

    >>> t = pd.DataFrame({"r_hat": [1.03, 1.0], "ess_bulk": [90.0, 800.0], "agree": [False, True]},
    ...                  index=["sigma", "mu: n_leaves"])
    >>> print(disagreement_advice(t)[:80])
    The chains disagree on sigma (R-hat 1.030, bulk ESS 90). A BART fit's chains are
    """
    bad = table[~table["agree"]]
    if bad.empty:
        return None
    which = ", ".join(f"{name} (R-hat {r.r_hat:.3f}, bulk ESS {r.ess_bulk:.0f})" for name, r in bad.iterrows())
    return f"The chains disagree on {which}. {ADVICE}"


class ConvergenceAdvice(logging.Filter):
    """Adds :data:`ADVICE` to PyMC's R-hat and ESS warnings when the model in context holds a BART variable.

    PyMC logs those warnings from ``pymc.stats.convergence`` after every chain has finished, inside the
    user's ``with model:`` block; the filter changes nothing else and lets every record through.

    >>> record = logging.LogRecord("pymc.stats.convergence", logging.INFO, "", 0, "The rhat statistic ...", None, None)
    >>> ConvergenceAdvice().filter(record), record.getMessage()   # no model in context: unchanged
    (True, 'The rhat statistic ...')
    """

    PREFIXES = ("The rhat statistic is larger than", "The effective sample size per chain is smaller than")
    SAME_CHECK_S = 5.0  # PyMC logs its R-hat and ESS warnings one after the other: advise once

    def __init__(self) -> None:
        super().__init__()
        self._advised = -np.inf

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(self.PREFIXES) and ADVICE not in record.msg \
                and _model_has_bart():
            if record.created - self._advised < self.SAME_CHECK_S:
                record.msg = f"{record.msg} (For the BART variable, see the advice above.)"
            else:
                record.msg = f"{record.msg} {ADVICE}"
                self._advised = record.created
        return True


def _model_has_bart() -> bool:
    import pymc as pm

    from ..model.bart import BARTRV

    try:
        model = pm.Model.get_context(error_if_none=False)
    except Exception:  # a context that blocks model access (PyMC's BlockModelAccess): say nothing
        return False
    return model is not None and any(isinstance(getattr(rv.owner, "op", None), BARTRV) for rv in model.free_RVs)


def install_advice(logger_name: str = "pymc.stats.convergence") -> ConvergenceAdvice:
    """Put :class:`ConvergenceAdvice` on PyMC's convergence logger once (the package does it on import).

    >>> install_advice() is install_advice()
    True
    """
    logger = logging.getLogger(logger_name)
    for existing in logger.filters:
        if isinstance(existing, ConvergenceAdvice):
            return existing
    advice = ConvergenceAdvice()
    logger.addFilter(advice)
    return advice
