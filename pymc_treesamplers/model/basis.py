"""A leaf basis: leaves that hold a coefficient on a column the user gives (``pmt.BART(..., leaf_basis=w)``).

With a basis ``w`` (one value per row) each leaf holds a coefficient ``beta_l ~ N(mu0, sigma_mu^2)`` and a tree
contributes ``w_i beta_l`` at row ``i``. The sum of the trees is then ``w * F(X)``, with ``F`` an ordinary sum of
trees: the BART variable holds ``F`` (the coefficient at each row: for a treatment column, the effect) and
:func:`~pymc_treesamplers.BART` returns ``w * F``, the term the likelihood reads. Every likelihood route takes a
BART value that enters its link affinely, ``a + b F`` with a coefficient per row (routes/likelihood.py), so the
tree steps are exact with a basis with no kernel of their own: the pseudo-data of ``F`` are ``r / w`` with
weight ``w^2`` times the row's, and a row with ``w = 0`` carries no information about ``F``.

Defaults of the leaf prior (:func:`basis_spec`): the contribution ``w beta`` has, on average over the rows, the
prior variance of a constant leaf: ``sigma_mu`` is divided by the root mean square of ``w``. ``mu0`` is the
constant leaves' divided by ``w`` when ``w`` is one constant, and 0 otherwise: a coefficient on a varying
column (a treatment, a slope) is centred at no effect. An all-ones basis is then exactly constant leaves.

A basis of ``d > 1`` columns ``W`` (n, d): each leaf holds a coefficient vector ``beta_l ~ N(mu0, diag(s^2))``
and a tree contributes ``W_i . beta_l``, the partitions shared by the columns. The engine scores such leaves with
their matrix statistics (:mod:`pymc_treesamplers.engine.basisleaf`); the BART variable holds the coefficients
``F`` (d, n) and :func:`~pymc_treesamplers.BART` returns the term ``sum_j W[:, j] * F[j]``. Defaults of the
coefficients' prior (:func:`coefficient_prior`): the term has, on average over the rows, the prior variance of a
constant leaf, shared equally by the columns, ``s_j = sigma_mu / (rms(W_j) sqrt(d))``; ``mu0_j`` the constant
leaves' divided by the first column that is one constant (an intercept), 0 for the others.

Lines in the leaves (``pmt.BART(..., response="linear")`` or ``"mix"``, pymc-bart's leaf types as exact models): a
basis chosen by the tree. A leaf whose parent splits on covariate ``v`` holds an intercept and a slope on ``z_v``,
the covariate standardised on the training rows (:func:`line_recipe`, :func:`line_basis`): ``(x_v - mean) / sd``,
0 where ``x_v`` is missing (the line at the mean), and no slope on a categorical or constant covariate (its ``z``
is 0); the root leaf, with no parent, holds an intercept. Intercept and slope are ``N(mu0, s^2)`` and ``N(0, s^2)``
with ``s = sigma_mu / sqrt(2)`` (the rule above with ``d = 2``: both columns have root mean square 1). With
``"mix"`` each leaf's slope is zero with prior probability 1/2. The variable holds the sum of the trees, as with
constant leaves.

>>> spec = basis_spec(np.array([0.0, 1.0, 1.0, 0.0]), 4)
>>> spec.scale, spec.constant, spec.columns
(0.7071067811865476, 0.0, 1)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.sharedvar import TensorSharedVariable
from pytensor.tensor.variable import TensorConstant

__all__ = ["LINE_SLAB", "BasisSpec", "basis_spec", "bart_of", "coefficient_prior", "leaf_basis_of", "line_basis",
           "line_recipe"]

# pymc-bart's leaf types: the prior probability that a leaf's slope is free (0: constant leaves, no slope)
LINE_SLAB = {"constant": 0.0, "linear": 1.0, "mix": 0.5}


class BasisSpec(NamedTuple):
    """A checked leaf basis: ``tensor`` (what multiplies the BART in the graph: ``pm.Data`` stays itself, so
    ``pm.set_data`` reaches predictions; (n,) for one column, (n, d) for several), ``scale`` (root mean square of
    the column at build time) and ``constant`` (its value when every row has the same, else 0), per column
    (``scales``, ``constants``) for several; ``columns`` (d) and ``value`` (n, d), the basis at build time."""

    tensor: pt.TensorVariable
    scale: float
    constant: float
    columns: int = 1
    scales: tuple = ()
    constants: tuple = ()
    value: np.ndarray | None = None


def basis_spec(leaf_basis, n: int) -> BasisSpec:
    """Check ``leaf_basis`` (finite values, one row per row of X: an array of shape ``(n,)`` or ``(n, d)``, or
    ``pm.Data`` of that shape) and resolve its scale for the leaf prior's defaults (module docstring).

    >>> basis_spec(np.ones(3), 3).constant
    1.0
    >>> basis_spec(np.column_stack([np.ones(3), [0.0, 1.0, 2.0]]), 3).constants
    (1.0, 0.0)
    """
    if isinstance(leaf_basis, TensorSharedVariable):
        value, tensor = np.asarray(leaf_basis.get_value()), leaf_basis
    elif isinstance(leaf_basis, TensorConstant):
        value, tensor = np.asarray(leaf_basis.data), leaf_basis
    elif isinstance(leaf_basis, pt.TensorVariable):
        raise TypeError("leaf_basis must be data (an array or pm.Data), not a symbolic tensor")
    else:
        try:
            value = np.asarray(leaf_basis, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"leaf_basis must be numeric, got {type(leaf_basis).__name__}") from None
        tensor = None
    if value.dtype.kind not in "biuf":
        raise TypeError(f"leaf_basis must be numeric, got dtype {value.dtype}")
    value = value.astype(float)
    if value.ndim not in (1, 2) or value.shape[0] != n or (value.ndim == 2 and value.shape[1] < 1):
        raise ValueError(f"leaf_basis must have one row per row of X, shape ({n},) or ({n}, d); got {value.shape}")
    if not np.isfinite(value).all():
        raise ValueError("leaf_basis contains NaN or inf: every basis value must be finite")
    if value.ndim == 2 and value.shape[1] > 1:
        if not value.any(axis=0).all():
            zero = np.flatnonzero(~value.any(axis=0)).tolist()
            raise ValueError(f"leaf_basis column(s) {zero} are zero in every row: their coefficients would not enter "
                             "the model")
        if np.linalg.matrix_rank(value) < value.shape[1]:
            raise ValueError(f"leaf_basis has {value.shape[1]} columns of rank {np.linalg.matrix_rank(value)}: a "
                             "column that is a combination of the others leaves its coefficient unidentified; "
                             "drop it")
        tensor = pt.as_tensor_variable(value) if tensor is None else tensor
        rms = np.sqrt(np.mean(value**2, axis=0))
        constants = tuple(float(c[0]) if np.all(c == c[0]) else 0.0 for c in value.T)
        return BasisSpec(tensor, 1.0, 1.0, value.shape[1], tuple(rms.tolist()), constants, value)
    if not value.any():
        raise ValueError("leaf_basis is zero in every row: the trees would not enter the model")
    value = value.reshape(n)
    if tensor is None:
        tensor = pt.as_tensor_variable(value)
    elif tensor.ndim == 2:
        tensor = tensor[:, 0]
    constant = float(value[0]) if np.all(value == value[0]) else 0.0
    return BasisSpec(tensor, float(np.sqrt(np.mean(value**2))), constant, value=value.reshape(n, 1))


def coefficient_prior(spec: BasisSpec, mu0, sigma_mu, term_mu0: float, term_sigma_mu: float):
    """The coefficients' prior ``(mu0, sd)`` (two tuples of d) for a basis of several columns: the user's
    ``mu0`` and ``sigma_mu`` (scalars or one per column), else the defaults of the module docstring from the
    constant leaves' defaults ``term_mu0``, ``term_sigma_mu`` (what those leaves would have on this Y).

    >>> spec = basis_spec(np.column_stack([np.ones(4), [-1.0, 1.0, -1.0, 1.0]]), 4)
    >>> coefficient_prior(spec, None, None, 0.5, 1.0)
    ((0.5, 0.0), (0.7071067811865475, 0.7071067811865475))
    """
    d = spec.columns

    def given(x, name):
        v = np.broadcast_to(np.asarray(x, dtype=float), (d,)) if np.ndim(x) <= 1 and np.size(x) in (1, d) else None
        if v is None:
            raise ValueError(f"{name} must be a number or one per column of leaf_basis ({d}), got shape {np.shape(x)}")
        if not np.isfinite(v).all():
            raise ValueError(f"{name} must be finite, got {np.asarray(x).tolist()}")
        return tuple(float(a) for a in v)

    if mu0 is None:
        first = next((j for j, c in enumerate(spec.constants) if c != 0.0), None)
        means = tuple(term_mu0 / spec.constants[j] if j == first else 0.0 for j in range(d))
    else:
        means = given(mu0, "mu0")
    if sigma_mu is None:
        sds = tuple(float(term_sigma_mu / (r * np.sqrt(d))) for r in spec.scales)
    else:
        sds = given(sigma_mu, "sigma_mu")
        if min(sds) <= 0:
            raise ValueError(f"sigma_mu must be > 0, got {np.asarray(sigma_mu).tolist()}")
    return means, sds


def bart_of(var):
    """The BART variable behind ``var``: the coefficient of a basis term that :func:`~pymc_treesamplers.BART`
    returned (``w * F`` -> ``F``; the term carries it in its tag), else ``var`` itself. So the steps, plots and
    diagnostics take the term a user holds where they take a BART variable.

    >>> bart_of(3) == 3
    True
    """
    tag = getattr(var, "tag", None)
    return getattr(tag, "bart_coefficient", var)


def leaf_basis_of(rv) -> np.ndarray:
    """The basis (n, d) of a BART variable whose leaves hold coefficient vectors, at its current value (the
    variable carries its basis tensor in its tag, as :func:`~pymc_treesamplers.BART` made it).

    >>> leaf_basis_of(3)
    Traceback (most recent call last):
    ...
    ValueError: the BART variable 3 has no leaf basis in its tag (was it built by pmt.BART(..., leaf_basis=W)?)
    """
    tensor = getattr(getattr(rv, "tag", None), "leaf_basis", None)
    if tensor is None:
        raise ValueError(f"the BART variable {getattr(rv, 'name', rv)} has no leaf basis in its tag (was it built by "
                         "pmt.BART(..., leaf_basis=W)?)")
    if isinstance(tensor, TensorSharedVariable):
        return np.asarray(tensor.get_value(), dtype=float)
    return np.asarray(tensor.data if isinstance(tensor, TensorConstant) else tensor.eval(), dtype=float)


def line_recipe(X: np.ndarray, categorical=()) -> tuple[tuple, tuple]:
    """The standardisation of line leaves' covariates (module docstring) from the training covariates ``X`` (n, p):
    ``(center, inv_scale)``, one per covariate; ``inv_scale`` 0 for a categorical or constant covariate (no slope).

    >>> line_recipe(np.array([[0.0, 1.0], [2.0, 1.0], [np.nan, 1.0]]))  # the second covariate is constant: no slope
    ((1.0, 0.0), (1.0, 0.0))
    """
    X = np.asarray(X, dtype=float)
    center, inv = [], []
    for v in range(X.shape[1]):
        x = X[:, v][~np.isnan(X[:, v])]
        sd = float(x.std()) if x.size else 0.0
        off = v in categorical or sd == 0.0
        center.append(0.0 if off else float(x.mean()))
        inv.append(0.0 if off else 1.0 / sd)
    return tuple(center), tuple(inv)


def line_basis(X: np.ndarray, center, inv_scale) -> np.ndarray:
    """``[1, z_1, ..., z_p]`` (n, 1 + p) at the covariates ``X`` for the recipe of :func:`line_recipe`: the basis
    the engine picks a leaf's slope column from (:class:`~pymc_treesamplers.engine.records.BasisPseudo`,
    ``by_split``).

    >>> line_basis(np.array([[0.0], [np.nan]]), (1.0,), (0.5,)).tolist()
    [[1.0, -0.5], [1.0, 0.0]]
    """
    X = np.asarray(X, dtype=float)
    z = (X - np.asarray(center)) * np.asarray(inv_scale)
    z[np.isnan(z)] = 0.0
    return np.ascontiguousarray(np.column_stack([np.ones(X.shape[0]), z]))
