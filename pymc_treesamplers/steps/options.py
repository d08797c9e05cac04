"""The options every tree step takes, checked and documented once: :class:`TreeStepOptions`.

A sampler's file declares only its own options; :func:`tree_step` gives its class the whole signature (its own
options, then these, each with its default: ``help()`` and ``inspect.signature`` show them all) and puts these
options' paragraphs into its docstring in place of the :data:`SHARED_MARKER` entry.
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass

import numpy as np

from ..engine import check_threads
from ..routes.family import ROUTES

#: the parameter entry of a step's docstring that :func:`tree_step` replaces with the shared options' paragraphs
#: (a valid entry as it stands, for documentation read from the source)
SHARED_MARKER = ("threads, route, warm_start, sigma_every, model, initial_point, compile_kwargs, blocked, rng : "
                 "keyword options")

# the shared keywords, in the order the signatures show them
_SHARED = (("threads", 1), ("route", "auto"), ("warm_start", 0), ("sigma_every", 0), ("model", None),
           ("initial_point", None), ("compile_kwargs", None), ("blocked", False), ("rng", None))


@dataclass(frozen=True)
class TreeStepOptions:
    """The options every tree step takes, checked (a ``TypeError`` or ``ValueError`` naming the option).

    Parameters
    ----------
    threads : int, default 1
        Threads for the passes over rows of a long data set (docs/scale.md); draws are the same for
        any value. Keep ``threads`` x chains run in parallel within the machine's cores.
    route : {"auto", "expand"}, default "auto"
        How a likelihood that is not Gaussian in the BART value is handled (docs/likelihoods.md).
        ``"auto"``: exact data augmentation for Bernoulli/Binomial (logit: Polya-Gamma, probit: Albert-Chib)
        and Student-t, exact leaf sums with Laplace leaves for Poisson, negative binomial, Gamma and a log
        sd; ``"expand"``: a Gaussian expansion at the other trees' fit, Metropolis-Hastings corrected, for
        every family. Both are exact.
    warm_start : int, default 0
        Grow-from-root sweeps (XBART; docs/reports/mixing.md) at the start of each chain, in place of this
        step's first ``warm_start`` tuning sweeps: every tree is regrown from its root, each split drawn by its
        local posterior, so the chain starts near the data. They run only while tuning (never more than
        ``tune`` of them) and no kept draw comes from them; the ``<var>_warm`` stat marks them.
    sigma_every : int, default 0
        Under a Normal likelihood whose scale is one free variable (``sigma``, or ``sigma2`` as its square), the
        step updates that variable itself after every ``sigma_every`` trees of a sweep, by the exact update
        :class:`~pymc_treesamplers.NormalScaleGibbs` makes once a sweep (docs/mh.md, "sigma inside the sweep");
        the step then owns both variables. 0: the step updates the trees only and another step moves the scale.
        Measured, it gains per sweep where σ is stuck with outlying rows and rarely per second
        (docs/reports/sigma-every.md), so it is off by default.
    model, initial_point, compile_kwargs, blocked, rng : optional
        As for PyMC's own step methods (not part of this record: the step takes them).

    Examples
    --------
    >>> TreeStepOptions(threads=2).threads
    2
    >>> TreeStepOptions(route="laplace")
    Traceback (most recent call last):
    ...
    ValueError: route must be one of ('auto', 'expand'), got 'laplace'
    """

    threads: int = 1
    route: str = "auto"
    warm_start: int = 0
    sigma_every: int = 0

    def __post_init__(self):
        object.__setattr__(self, "threads", check_threads(self.threads))
        object.__setattr__(self, "warm_start", check_warm_start(self.warm_start))
        object.__setattr__(self, "sigma_every", check_count(self.sigma_every, "sigma_every",
                                                            "trees between the scale's updates"))
        if self.route not in ROUTES:
            raise ValueError(f"route must be one of {ROUTES}, got {self.route!r}")


def check_warm_start(warm_start) -> int:
    """``warm_start`` as an int >= 0 (a ``TypeError`` or ``ValueError`` naming it otherwise).

    >>> check_warm_start(np.int64(3))
    3
    """
    return check_count(warm_start, "warm_start", "grow-from-root sweeps at a chain's start")


def check_count(value, name: str, meaning: str) -> int:
    """``value`` as an int >= 0, or a ``TypeError`` or ``ValueError`` naming the option ``name``.

    >>> check_count(True, "sigma_every", "trees between the scale's updates")
    Traceback (most recent call last):
    ...
    TypeError: sigma_every must be an integer (trees between the scale's updates), got True
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer ({meaning}), got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return int(value)


def _shared_paragraphs() -> str:
    """The Parameters paragraphs of :class:`TreeStepOptions`' docstring, dedented."""
    doc = inspect.cleandoc(TreeStepOptions.__doc__)
    body = doc.split("----------\n", 1)[1].split("\n\nExamples", 1)[0]
    return body.replace(" (not part of this record: the step takes them)", "") + "\n"


def tree_step(cls):
    """Class decorator of a tree step whose ``__init__(self, vars=None, *, <own options>, **shared)`` passes the
    shared options on: its signature lists its own options and then the shared ones, explicitly, and the
    :data:`SHARED_MARKER` entry of its docstring (the marker line and its one-line description) becomes their
    paragraphs, as :class:`TreeStepOptions` documents them."""
    own = [p for p in inspect.signature(cls.__init__).parameters.values() if p.kind != p.VAR_KEYWORD]
    shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default) for name, default in _SHARED]
    cls.__signature__ = inspect.Signature(own[1:] + shared)  # without self
    lines = (cls.__doc__ or "").splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.strip() == SHARED_MARKER]
    if len(at) != 1:
        raise TypeError(f"{cls.__name__}'s docstring must hold the entry {SHARED_MARKER!r} once, in its parameters")
    line = lines[at[0]]
    # Python 3.13 dedents docstrings when it compiles them: indent the paragraphs as the marker is
    indent = line[: len(line) - len(line.lstrip())]
    lines[at[0] : at[0] + 2] = [textwrap.indent(_shared_paragraphs(), indent)]
    cls.__doc__ = "".join(lines)
    return cls
