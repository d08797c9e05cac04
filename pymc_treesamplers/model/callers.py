"""Which PyMC method is calling: the BART Op and its log-density have no other way to know.

A BART variable's log-density is zero (the tree prior is the tree steps' business), so any PyMC inference
method other than the tree steps sees a free vector with a flat prior and returns a plausible, wrong answer: MAP
interpolates y, ADVI inflates the noise, a Metropolis or NUTS step on the variable random-walks, SMC and
the external NUTS samplers sample nonsense. Each of those methods builds the model's log-density (or picks
step methods) before doing any work; these functions recognise it on the call stack at that moment and
refuse it by name. What works with a BART variable is in docs/model.md ("What works with a BART variable").
"""

from __future__ import annotations

import sys

__all__ = ["UnsupportedMethodError", "calling_model", "check_method", "check_nuts_sampler",
           "inside_posterior_predictive"]

_WHAT_WORKS = ("Sample it with pm.sample() and the tree steps (CGMStep by default; PGBARTStep, GrowPruneStep, "
               "ReshapeStep, CTBirthDeathStep on request), with NUTS or other steps on the other variables. For "
               "speed: fewer trees (m), GrowPruneStep, threads= on the tree step, fewer draws, or chains in "
               "parallel (cores=, pmt.distributed).")


class UnsupportedMethodError(ValueError):
    """A PyMC method that cannot sample a BART variable's trees (it names the variable and what works)."""


RouteError = UnsupportedMethodError  # its earlier name (docs/model.md), for code that catches it


def _frames(depth: int):
    frame = sys._getframe(depth + 1)
    while frame is not None:
        yield frame
        frame = frame.f_back


def _module(frame) -> str:
    return frame.f_globals.get("__name__", "")


def _pymc_frame(function: str):
    """The frame of PyMC's ``function`` on the call stack, or None."""
    for frame in _frames(2):
        if frame.f_code.co_name == function and _module(frame).startswith("pymc."):
            return frame
    return None


def calling_model(function: str):
    """The model of PyMC's ``function`` (``sample_prior_predictive``) when it is on the call stack, else None."""
    frame = _pymc_frame(function)
    return None if frame is None else frame.f_locals.get("model")


def inside_posterior_predictive() -> bool:
    """Whether PyMC's ``sample_posterior_predictive`` is on the call stack."""
    return _pymc_frame("sample_posterior_predictive") is not None


def _foreign_step(frame, value) -> str | None:
    """The class name of a PyMC step method being created for ``value`` in ``frame`` (None if it is not
    one, is a tree step or noise step of this package, or is for other variables)."""
    from pymc.step_methods.compound import BlockedStep

    step = frame.f_locals.get("self")
    if frame.f_code.co_name != "__init__" or not isinstance(step, BlockedStep):
        return None
    if type(step).__module__.startswith("pymc_treesamplers."):
        return None
    vars_ = frame.f_locals.get("vars") or frame.f_locals.get("value_vars") or ()
    try:
        vars_ = list(vars_)
    except TypeError:
        vars_ = [vars_]
    if any(v is value or getattr(v, "name", None) == value.name for v in vars_):
        return type(step).__name__
    return None


def _refused_method(value) -> str | None:
    """The PyMC method on the call stack that cannot sample ``value``'s trees, if any."""
    for frame in _frames(1):
        module, name = _module(frame), frame.f_code.co_name
        if module in (__name__, "pymc_treesamplers.model.bart"):
            continue  # this check and the log-density asking for it
        if module.startswith("pymc_treesamplers."):
            return None  # this package asked for the log-density (a method of its own)
        if module.startswith("pymc.variational"):
            return "pm.fit (ADVI, full-rank ADVI, SVGD: every variational method)"
        if module == "pymc.tuning.starting" and name == "find_MAP":
            return "pm.find_MAP"
        if module.startswith("pymc.smc"):
            return "pm.sample_smc"
        if name == "_sample_external_nuts" or module.startswith("pymc.sampling.jax"):
            return "an external NUTS sampler (nutpie, numpyro, blackjax)"
        if (step := _foreign_step(frame, value)) is not None:
            return f"a pm.{step} step"
    return None


def check_method(value) -> None:
    """Raise :class:`UnsupportedMethodError` when the BART variable of value variable ``value`` is being handed to a
    PyMC method that cannot sample trees; called where its log-density is built (before any work)."""
    if (method := _refused_method(value)) is not None:
        raise UnsupportedMethodError(
            f"{method} cannot be used for the BART variable {value.name!r}: its trees have no log-density "
            f"that method could use (to it {value.name!r} is a free vector with a flat prior, and the "
            f"answer would look plausible and be wrong). {_WHAT_WORKS}")


def check_nuts_sampler(var) -> None:
    """Raise :class:`UnsupportedMethodError` when ``pm.sample(nuts_sampler=...)`` asks an external NUTS sampler for a
    model with a BART variable ``var`` (called from the tree steps' competence, while PyMC picks steps)."""
    for frame in _frames(1):
        if frame.f_code.co_name == "sample" and _module(frame) == "pymc.sampling.mcmc":
            sampler = frame.f_locals.get("nuts_sampler")
            if sampler not in (None, "pymc"):
                raise UnsupportedMethodError(
                    f"nuts_sampler={sampler!r} cannot sample the BART variable {var.name!r}: an external NUTS sampler "
                    f"needs a gradient for every variable, and trees have none. Use nuts_sampler='pymc' (the "
                    f"default): {_WHAT_WORKS}")
            return
