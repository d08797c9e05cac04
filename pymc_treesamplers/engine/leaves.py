"""Conjugate leaf models behind one sufficient-statistics interface, for the SMC core.

A leaf model is the record a kernel passes where the Gaussian kernels pass their
:class:`~pymc_treesamplers.engine.records.Pseudo` data; the record's type picks the model at compile
time. Every model answers three questions, over a vector of sufficient statistics of fixed width:

* :func:`n_stats` ``(lm)``: the width;
* :func:`range_stats` ``(lm, perm, s, e, out, col)``: the statistics of the rows ``perm[s:e]`` (written);
  :func:`add_row` ``(lm, i, hist, k, col)``: row ``i``'s statistics added to row ``k`` of ``hist`` (histograms by
  code). ``col`` is the covariate the leaf's parent splits on (``-1`` at the root); only a basis chosen by the tree
  reads it (:func:`col_dependent`), so a split's children and their parent may have statistics on different bases;
* :func:`log_marginal` ``(prior, lm, stats)``: the leaf's log marginal likelihood, leaf parameters
  integrated out. Zero for empty statistics, so a tree's value is a sum over its leaves.

The models:

* :class:`~pymc_treesamplers.engine.records.Pseudo`: weighted Gaussian pseudo-data with leaf prior
  ``N(mu0, s2)`` from the :class:`~pymc_treesamplers.engine.records.TreePrior` (:mod:`.gaussian`): the
  BART working model, up to a partition-free constant.
* :class:`~pymc_treesamplers.engine.records.BasisPseudo`: the same with leaves that hold a coefficient vector on
  a basis, ``beta ~ N(mu0, diag(s2))`` from the record (:mod:`.basisleaf`): exact, up to the same constant.
* :class:`ClassCounts`: labels ``0 .. K-1`` with class probabilities ``~ Dirichlet(conc)`` per
  leaf, the Dirichlet-multinomial of Lakshminarayanan et al. (2013, eq. 3); exact, normalised.
* :class:`NormalGamma`: ``y ~ N(mu, sigma^2)`` in a leaf, ``sigma^2 ~ InvGamma(a0, b0)``,
  ``mu | sigma^2 ~ N(mu0, sigma^2 / kappa0)`` independently per leaf (Chipman, George & McCulloch
  1998's mean-variance shift model); exact, normalised. A shared ``sigma^2`` would not factor over
  leaves, and the SMC's weights need a likelihood that does.

>>> import numpy as np
>>> from pymc_treesamplers.engine.records import TreePrior
>>> lm = class_counts(np.array([0, 1, 1]), np.ones(2))
>>> stats = np.zeros(n_stats(lm))
>>> range_stats(lm, np.arange(3), 0, 3, stats, -1)
>>> stats.tolist(), round(float(log_marginal(TreePrior(0.95, 2.0, 0.0, 1.0), lm, stats)), 6)
([1.0, 2.0], -2.484907)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba.extending import overload

from .basisleaf import (
    add_basis_fit,
    basis_children_logliks,
    basis_marginal,
    basis_range_loglik,
    basis_row,
    basis_rows,
    basis_split_logliks,
    basis_width,
)
from .gaussian import leaf_loglik, leaf_suff
from .records import BasisPseudo, Pseudo
from .rows import add_tree, row_weight, split_suff

_MODELS: dict[type, tuple] = {}
_JIT = {"cache": True, "nogil": True}


class ClassCounts(NamedTuple):
    """Dirichlet-multinomial leaves: labels ``y`` (n,) in ``0 .. K-1``, concentration ``conc`` (K,),
    ``log_norm = lgamma(sum conc) - sum lgamma(conc)``."""

    y: np.ndarray
    conc: np.ndarray
    log_norm: float


class NormalGamma(NamedTuple):
    """Normal-inverse-gamma leaves over responses ``y`` (n,): ``mu0``, ``kappa0``, ``a0``, ``b0``;
    ``log_norm = a0 log b0 - lgamma(a0) + 0.5 log kappa0``."""

    y: np.ndarray
    mu0: float
    kappa0: float
    a0: float
    b0: float
    log_norm: float


def class_counts(y: np.ndarray, conc: np.ndarray) -> ClassCounts:
    """:class:`ClassCounts` for integer labels ``y`` and per-class concentrations ``conc`` (> 0).

    >>> class_counts(np.array([0, 1]), np.array([1.0, 1.0])).log_norm
    0.0
    """
    conc = np.ascontiguousarray(conc, dtype=np.float64)
    log_norm = math.lgamma(float(conc.sum())) - sum(math.lgamma(float(a)) for a in conc)
    return ClassCounts(np.ascontiguousarray(y, dtype=np.int64), conc, float(log_norm))


def normal_gamma(y: np.ndarray, mu0: float, kappa0: float, a0: float, b0: float) -> NormalGamma:
    """:class:`NormalGamma` for responses ``y`` (best centred and scaled: the statistics are raw sums).

    >>> round(normal_gamma(np.zeros(2), 0.0, 1.0, 1.0, 1.0).log_norm, 6)
    0.0
    """
    log_norm = a0 * math.log(b0) - math.lgamma(a0) + 0.5 * math.log(kappa0)
    return NormalGamma(np.ascontiguousarray(y, dtype=np.float64), float(mu0), float(kappa0), float(a0), float(b0),
                       float(log_norm))


def register_leaf_model(cls, width, rows, row, marginal):
    """Register a leaf model record type: ``width(lm)``, ``rows(lm, perm, s, e, out, col)``,
    ``row(lm, i, hist, k, col)`` and ``marginal(prior, lm, stats)`` (numba functions)."""
    _MODELS[cls] = (width, rows, row, marginal)


def _model(lm):
    cls = getattr(lm, "instance_class", None)
    if cls not in _MODELS:
        raise TypeError(f"no leaf model registered for {lm}")
    return _MODELS[cls]


def n_stats(lm):
    """Width of the sufficient statistics of the leaf model ``lm`` (compiled dispatch)."""
    return _model(numba.typeof(lm))[0](lm)


def range_stats(lm, perm, s, e, out, col):
    """Sufficient statistics of the rows ``perm[s:e]`` of a leaf whose parent splits on ``col`` written to ``out``
    (compiled dispatch)."""
    _model(numba.typeof(lm))[1](lm, perm, s, e, out, col)


def add_row(lm, i, hist, k, col):
    """Row ``i``'s statistics (its leaf's parent splitting on ``col``) added to row ``k`` of ``hist`` (compiled
    dispatch; no view per row: this is the innermost loop of the optimal proposal)."""
    _model(numba.typeof(lm))[2](lm, i, hist, k, col)


def log_marginal(prior, lm, stats):
    """Log marginal likelihood of a leaf with these statistics (compiled dispatch)."""
    return _model(numba.typeof(lm))[3](prior, lm, stats)


@overload(n_stats, inline="always", jit_options=_JIT)
def _n_stats(lm):
    fn = _model(lm)[0]
    return lambda lm: fn(lm)


@overload(range_stats, inline="always", jit_options=_JIT)
def _range_stats(lm, perm, s, e, out, col):
    fn = _model(lm)[1]
    return lambda lm, perm, s, e, out, col: fn(lm, perm, s, e, out, col)


@overload(add_row, inline="always", jit_options=_JIT)
def _add_row(lm, i, hist, k, col):
    fn = _model(lm)[2]
    return lambda lm, i, hist, k, col: fn(lm, i, hist, k, col)


@overload(log_marginal, inline="always", jit_options=_JIT)
def _log_marginal(prior, lm, stats):
    fn = _model(lm)[3]
    return lambda prior, lm, stats: fn(prior, lm, stats)


# --- weighted Gaussian pseudo-data: stats (W, S) ------------------------------------------------


@numba.njit(cache=True, nogil=True)
def _gauss_width(lm):
    return 2


@numba.njit(cache=True, nogil=True)
def _gauss_rows(lm, perm, s, e, out, col):
    out[0], out[1] = leaf_suff(lm, perm, s, e)


@numba.njit(cache=True, nogil=True, inline="always")
def _gauss_row(lm, i, hist, k, col):
    wi = row_weight(lm.w, i)
    hist[k, 0] += wi
    hist[k, 1] += wi * lm.r[i]


@numba.njit(cache=True, nogil=True, inline="always")  # per gap of the optimal proposal: no call
def _gauss_marginal(prior, lm, stats):
    return leaf_loglik(prior, stats[0], stats[1])


register_leaf_model(Pseudo, _gauss_width, _gauss_rows, _gauss_row, _gauss_marginal)
register_leaf_model(BasisPseudo, basis_width, basis_rows, basis_row, basis_marginal)


def add_fit(t, lm, sign):
    """``sign`` times the tree ``t``'s fit added to the running residual ``lm.r`` of Gaussian pseudo-data: a
    constant leaf's value at its rows (:class:`~pymc_treesamplers.engine.records.Pseudo`), or a basis leaf's
    coefficients times each row's basis (:class:`~pymc_treesamplers.engine.records.BasisPseudo`); compiled
    dispatch on the record's type."""
    raise NotImplementedError("add_fit only runs inside numba kernels")


def range_loglik(prior, lm, perm, s, e, col):
    """Log marginal likelihood of one leaf holding the rows ``perm[s:e]`` of Gaussian pseudo-data, its parent
    splitting on ``col`` (constant or basis leaves; compiled dispatch). What the tree moves score a leaf with."""
    raise NotImplementedError("range_loglik only runs inside numba kernels")


def split_logliks(prior, lm, perm, s, e, code_v, c, col_children, col_parent):
    """The rows ``perm[s:e]`` split at ``code_v <= c`` without moving them: ``(n_left, left, right, both)``, the
    two sides' log marginal likelihoods (their parent splitting on ``col_children``) and the whole range's as one
    leaf (its parent splitting on ``col_parent``) (compiled dispatch)."""
    raise NotImplementedError("split_logliks only runs inside numba kernels")


def children_logliks(prior, lm, perm, sa, ea, sb, eb, col_children, col_parent):
    """Log marginal likelihoods of two sibling leaves' rows ``perm[sa:ea]``, ``perm[sb:eb]`` and of their union as
    one leaf (columns as :func:`split_logliks`; compiled dispatch)."""
    raise NotImplementedError("children_logliks only runs inside numba kernels")


def col_dependent(lm):
    """Whether the leaf model's statistics depend on the column its leaf's parent splits on (a basis chosen by the
    tree): then a split's children cannot be scored as their parent's statistics minus a side's (compiled
    dispatch; a constant ``False`` for every other model, so their kernels keep no such branch)."""
    raise NotImplementedError("col_dependent only runs inside numba kernels")


# Dispatch on the record's type; the constant leaves' branches are the code the moves ran before a basis
# existed, inlined, so their draws are unchanged. Not cached, as the driver's shims (engine/driver.py).
_SHIM = {"nogil": True}


def _is_basis(lm):
    return getattr(lm, "instance_class", None) is BasisPseudo


@overload(add_fit, inline="always", jit_options=_SHIM)
def _add_fit(t, lm, sign):
    if _is_basis(lm):
        return lambda t, lm, sign: add_basis_fit(t, lm, lm.r, sign)
    return lambda t, lm, sign: add_tree(t, lm.r, sign, lm.threads)


@numba.njit(cache=True, nogil=True, inline="always")
def _constant_range_loglik(prior, lm, perm, s, e, col):
    W, S = leaf_suff(lm, perm, s, e)
    return leaf_loglik(prior, W, S)


@numba.njit(cache=True, nogil=True, inline="always")
def _constant_split_logliks(prior, lm, perm, s, e, code_v, c, col_children, col_parent):
    n_left, wa, sa, wb, sb = split_suff(lm.r, lm.w, perm, s, e, code_v, c, lm.threads)
    return n_left, leaf_loglik(prior, wa, sa), leaf_loglik(prior, wb, sb), leaf_loglik(prior, wa + wb, sa + sb)


@numba.njit(cache=True, nogil=True, inline="always")
def _constant_children_logliks(prior, lm, perm, sa, ea, sb, eb, col_children, col_parent):
    wa, s_a = leaf_suff(lm, perm, sa, ea)
    wb, s_b = leaf_suff(lm, perm, sb, eb)
    return leaf_loglik(prior, wa, s_a), leaf_loglik(prior, wb, s_b), leaf_loglik(prior, wa + wb, s_a + s_b)


@overload(range_loglik, inline="always", jit_options=_SHIM)
def _range_loglik(prior, lm, perm, s, e, col):
    fn = basis_range_loglik if _is_basis(lm) else _constant_range_loglik
    return lambda prior, lm, perm, s, e, col: fn(prior, lm, perm, s, e, col)


@overload(split_logliks, inline="always", jit_options=_SHIM)
def _split_logliks(prior, lm, perm, s, e, code_v, c, col_children, col_parent):
    fn = basis_split_logliks if _is_basis(lm) else _constant_split_logliks
    return lambda prior, lm, perm, s, e, code_v, c, col_children, col_parent: fn(prior, lm, perm, s, e, code_v, c,
                                                                                 col_children, col_parent)


@overload(children_logliks, inline="always", jit_options=_SHIM)
def _children_logliks(prior, lm, perm, sa, ea, sb, eb, col_children, col_parent):
    fn = basis_children_logliks if _is_basis(lm) else _constant_children_logliks
    return lambda prior, lm, perm, sa, ea, sb, eb, col_children, col_parent: fn(prior, lm, perm, sa, ea, sb, eb,
                                                                                col_children, col_parent)


@overload(col_dependent, inline="always", jit_options=_SHIM)
def _col_dependent(lm):
    if _is_basis(lm):
        return lambda lm: lm.by_split
    return lambda lm: False


# --- Dirichlet-multinomial: stats = class counts ------------------------------------------------


@numba.njit(cache=True, nogil=True)
def _dm_width(lm):
    return lm.conc.shape[0]


@numba.njit(cache=True, nogil=True)
def _dm_rows(lm, perm, s, e, out, col):
    out[:] = 0.0
    for q in range(s, e):
        out[lm.y[perm[q]]] += 1.0


@numba.njit(cache=True, nogil=True, inline="always")
def _dm_row(lm, i, hist, k, col):
    hist[k, lm.y[i]] += 1.0


@numba.njit(cache=True, nogil=True, inline="always")  # per gap of the optimal proposal: no call
def _dm_marginal(prior, lm, stats):
    total = 0.0
    out = lm.log_norm
    for k in range(stats.shape[0]):
        total += stats[k] + lm.conc[k]
        out += math.lgamma(stats[k] + lm.conc[k])
    return out - math.lgamma(total)


register_leaf_model(ClassCounts, _dm_width, _dm_rows, _dm_row, _dm_marginal)


# --- Normal-inverse-gamma: stats (n, sum y, sum y^2) --------------------------------------------

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit(cache=True, nogil=True)
def _ng_width(lm):
    return 3


@numba.njit(cache=True, nogil=True)
def _ng_rows(lm, perm, s, e, out, col):
    a = 0.0
    b = 0.0
    for q in range(s, e):
        v = lm.y[perm[q]]
        a += v
        b += v * v
    out[0] = e - s
    out[1] = a
    out[2] = b


@numba.njit(cache=True, nogil=True, inline="always")
def _ng_row(lm, i, hist, k, col):
    v = lm.y[i]
    hist[k, 0] += 1.0
    hist[k, 1] += v
    hist[k, 2] += v * v


@numba.njit(cache=True, nogil=True)
def ng_posterior(lm, n, sy, syy):
    """Posterior ``(mu_n, kappa_n, a_n, b_n)`` of a Normal-inverse-gamma leaf from its statistics."""
    kn = lm.kappa0 + n
    an = lm.a0 + 0.5 * n
    if n <= 0.0:
        return lm.mu0, kn, an, lm.b0
    ybar = sy / n
    ss = max(syy - sy * ybar, 0.0)  # rounding can take a constant leaf's sum of squares below zero
    dev = ybar - lm.mu0
    bn = lm.b0 + 0.5 * ss + 0.5 * lm.kappa0 * n * dev * dev / kn
    return (lm.kappa0 * lm.mu0 + sy) / kn, kn, an, bn


@numba.njit(cache=True, nogil=True)
def ng_posteriors(lm, stats):
    """:func:`ng_posterior` of every row of ``stats`` (rows ``(n, sum y, sum y^2)``): (rows, 4)."""
    out = np.empty((stats.shape[0], 4))
    for r in range(stats.shape[0]):
        out[r, 0], out[r, 1], out[r, 2], out[r, 3] = ng_posterior(lm, stats[r, 0], stats[r, 1], stats[r, 2])
    return out


@numba.njit(cache=True, nogil=True, inline="always")  # per gap of the optimal proposal: no call
def _ng_marginal(prior, lm, stats):
    n = stats[0]
    if n <= 0.0:
        return 0.0
    _, kn, an, bn = ng_posterior(lm, n, stats[1], stats[2])
    return lm.log_norm + math.lgamma(an) - an * math.log(bn) - 0.5 * math.log(kn) - n * _HALF_LOG_2PI


register_leaf_model(NormalGamma, _ng_width, _ng_rows, _ng_row, _ng_marginal)
