"""Test utilities for samplers and likelihood records (as ``numpy.testing`` is for numpy).

:class:`LazyGaussian` is exact Gaussian pseudo-data whose proposals the driver keeps only with
probability ``keep``. A lazy version of an exact kernel is exact, so a sampler run with it must still
match the exact posterior, and with ``keep = 0`` every tree must stay as it was: it exercises the
reject path of :func:`pymc_treesamplers.engine.driver.sweep` that the exact Gaussian working model
never takes. It lives in the package, not in a test file, because numba's on-disk cache of the
driver records the record types it was compiled for and must be able to import them again.

:class:`UncorrectedFamily`, :class:`LikelihoodOnlyLogLink` and :class:`UntiltedAugmented` are deliberately
wrong versions of the likelihood routes (a correction without the working likelihood, a log-link correction by
the likelihood ratio alone, Polya-Gamma latents without their tilt), which the exactness tests must detect.
:data:`GPU_WRONG` and :func:`wrong_gpu_sweeps` are the same for the GPU sweep's decisions: its CPU twin's
sweep loop over decisions built with one piece wrong.

>>> import numpy as np
>>> LazyGaussian(np.zeros(3), np.ones(3), 0.5).keep
0.5
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numba
import numpy as np

from .engine import Pseudo, add_tree, register_likelihood
from .gpu.layout import CHANGE, SWAP
from .routes.augment import Augmented, pg1
from .routes.correction import commit_exp_rows, metropolis, scatter_leaves
from .routes.family_record import FamilyLik, family_pseudo
from .routes.family_record import _propose_leaves as propose_leaves
from .routes.observation import loglink_row, row_loglik

__all__ = ["GPU_WRONG", "LazyGaussian", "LikelihoodOnlyLogLink", "UncorrectedFamily", "UntiltedAugmented",
           "untilted_augment_pseudo", "wrong_gpu_sweeps"]


class LazyGaussian(NamedTuple):
    """Gaussian pseudo-data ``(r, w)`` whose tree proposals are kept with probability ``keep``."""

    r: np.ndarray
    w: np.ndarray
    keep: float


@numba.njit(cache=True, nogil=True)
def _pseudo(lik, j, tree):
    return Pseudo(lik.r, lik.w, None)


@numba.njit(cache=True, nogil=True)
def _accept(rng, lik, j, old, new, pseudo):
    return rng.random() < lik.keep


register_likelihood(LazyGaussian, _pseudo, _accept)


# FamilyLik's fields under another type, so the driver dispatches to the deliberately wrong accept
UncorrectedFamily = NamedTuple("UncorrectedFamily", list(FamilyLik.__annotations__.items()))
UncorrectedFamily.__doc__ = """:class:`~pymc_treesamplers.routes.family_record.FamilyLik` whose accept step
drops the working likelihood from the ratio: a deliberately wrong correction, which exactness tests
must detect."""


@numba.njit(cache=True, nogil=True)
def _uncorrected_accept(rng, lik, j, old, new, pseudo):
    log_ratio = 0.0
    lik.gnew[:] = 0.0
    add_tree(new, lik.gnew, 1.0)
    for i in range(lik.f.shape[0]):
        base = lik.a[i] + lik.b[i] * (lik.f[i] - lik.g[i])
        log_ratio += row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i], base + lik.b[i] * lik.gnew[i])
        log_ratio -= row_loglik(lik.kind, lik.u[i], lik.v[i], lik.s[i], base + lik.b[i] * lik.g[i])
    if not metropolis(rng, lik.counts, log_ratio):
        return False
    for i in range(lik.f.shape[0]):
        lik.f[i] += lik.gnew[i] - lik.g[i]
    for i in range(lik.e.shape[0]):  # exp(eta) kept per row (log and logit links with one slope)
        lik.e[i] = np.exp(lik.a[i] + lik.b[i] * lik.f[i])
    return True


register_likelihood(UncorrectedFamily, family_pseudo, _uncorrected_accept)


# FamilyLik's fields again, for the log-link route's deliberately wrong correction
LikelihoodOnlyLogLink = NamedTuple("LikelihoodOnlyLogLink", list(FamilyLik.__annotations__.items()))
LikelihoodOnlyLogLink.__doc__ = """:class:`~pymc_treesamplers.routes.family_record.FamilyLik` on the log-link route
whose accept step uses the likelihood ratio alone, dropping the leaves' prior, their proposal density and the Laplace
marginals: a deliberately wrong correction, which exactness tests must detect."""


@numba.njit(cache=True, nogil=True)
def _likelihood_only_accept(rng, lik, j, old, new, pseudo):
    scatter_leaves(new, lik.gnew, lik.enew, lik.slope)
    log_ratio = 0.0
    for i in range(lik.f.shape[0]):
        s, k = loglink_row(lik.kind, lik.u[i], lik.v[i])
        e1 = lik.em[i] * lik.enew[i]
        lik.enew[i] = e1
        log_ratio += s * lik.slope * (lik.gnew[i] - lik.g[i]) - k * (e1 - lik.e[i])
    if not metropolis(rng, lik.counts, log_ratio):
        return False
    commit_exp_rows(lik)
    return True


register_likelihood(LikelihoodOnlyLogLink, family_pseudo, _likelihood_only_accept, propose_leaves)


# Augmented's fields under another type: the test chains draw its latents with the wrong draw below
UntiltedAugmented = NamedTuple("UntiltedAugmented", list(Augmented.__annotations__.items()))
UntiltedAugmented.__doc__ = """:class:`~pymc_treesamplers.routes.augment.Augmented` whose Polya-Gamma latents are drawn
without their tilt, ``PG(N, 0)`` instead of ``PG(N, eta)``: a deliberately wrong augmentation, which exactness
tests must detect."""


@numba.njit(cache=True, nogil=True)
def untilted_augment_pseudo(rng, aug, f, z, w):
    """:func:`~pymc_treesamplers.routes.augment.augment_pseudo` for ``LOGIT2`` with ``omega ~ PG(N, 0)``."""
    for i in range(f.shape[0]):
        omega = 0.0
        for _ in range(aug.trials[i]):
            omega += pg1(rng, 0.0)
        z[i] = (0.5 * (aug.u[i] - aug.v[i]) / omega - aug.a[i]) / aug.b[i]
        w[i] = aug.b[i] * aug.b[i] * omega


# The GPU sweep's deliberately wrong decisions: each replaces one exact piece of gpu/decisions.build.
def _prune_without_proposal_ratio(log_post, log_pgrow_back, g_new, log_pprune, nog):
    return -log_post


def _every_leaf_could_split(log_avail):
    return True


def _change_counts_its_drawn_rule(kind):
    return kind == SWAP or kind == CHANGE


def _swap_drops_the_top_rule(kind):
    return False


GPU_WRONG = {
    "prune-ratio": {"prune_log_ratio": _prune_without_proposal_ratio},  # the proposal ratio left out
    "leaf-prior": {"leaf_could_split": _every_leaf_could_split},  # the valid-cut convention broken
    "change-counts-its-drawn-rule": {"top_rule_counts": _change_counts_its_drawn_rule},
    "swap-drops-the-top-rule": {"top_rule_counts": _swap_drops_the_top_rule},
}


@functools.cache
def wrong_gpu_sweeps(name: str):
    """The GPU twin's sweep loop (:func:`pymc_treesamplers.gpu.twin.make_sweeps`) over decisions with the
    :data:`GPU_WRONG` piece ``name`` in place of the exact one (compiled here, never cached on disk: numba's
    cache would take it for the package's decisions, which share its source).

    >>> sorted(GPU_WRONG)[0]
    'change-counts-its-drawn-rule'
    >>> wrong_gpu_sweeps("no-such-piece")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: name must be one of [...], got 'no-such-piece'
    """
    if name not in GPU_WRONG:
        raise ValueError(f"name must be one of {sorted(GPU_WRONG)}, got {name!r}")
    from .gpu.decisions import build
    from .gpu.twin import make_sweeps

    return make_sweeps(build(numba.njit, **GPU_WRONG[name]))

