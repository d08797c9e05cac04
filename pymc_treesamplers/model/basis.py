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

Only one column for now: shared partitions with a coefficient vector per leaf (``d > 1``) need the engine's
sufficient statistics to become matrices, which they are not yet.

>>> spec = basis_spec(np.array([0.0, 1.0, 1.0, 0.0]), 4)
>>> spec.scale, spec.constant
(0.7071067811865476, 0.0)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.sharedvar import TensorSharedVariable
from pytensor.tensor.variable import TensorConstant

__all__ = ["BasisSpec", "basis_spec", "bart_of"]


class BasisSpec(NamedTuple):
    """A checked leaf basis: ``tensor`` (what multiplies the BART in the graph: ``pm.Data`` stays itself, so
    ``pm.set_data`` reaches predictions), ``scale`` (root mean square of the column at build time) and
    ``constant`` (its value when every row has the same, else 0)."""

    tensor: pt.TensorVariable
    scale: float
    constant: float


def basis_spec(leaf_basis, n: int) -> BasisSpec:
    """Check ``leaf_basis`` (one finite value per row of X: an array of shape ``(n,)`` or ``(n, 1)``, or
    ``pm.Data`` of that shape) and resolve its scale for the leaf prior's defaults (module docstring).

    >>> basis_spec(np.ones(3), 3).constant
    1.0
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
    if value.ndim == 2 and value.shape[0] == n and value.shape[1] > 1:
        raise NotImplementedError(
            f"leaf_basis has {value.shape[1]} columns; leaves with a coefficient vector on a basis of several "
            "columns (shared partitions) are not available yet. One column works (e.g. a treatment), and so does "
            "one forest per column: beta = pmt.BART(name, X, Y, shape=(d, n)) and (W.T * beta).sum(axis=0) "
            "(docs/basis.md)")
    if value.shape not in ((n,), (n, 1)):
        raise ValueError(f"leaf_basis must have one value per row of X, shape ({n},) or ({n}, 1); got {value.shape}")
    if not np.isfinite(value).all():
        raise ValueError("leaf_basis contains NaN or inf: every basis value must be finite")
    if not value.any():
        raise ValueError("leaf_basis is zero in every row: the trees would not enter the model")
    value = value.reshape(n)
    if tensor is None:
        tensor = pt.as_tensor_variable(value)
    elif tensor.ndim == 2:
        tensor = tensor[:, 0]
    constant = float(value[0]) if np.all(value == value[0]) else 0.0
    return BasisSpec(tensor, float(np.sqrt(np.mean(value**2))), constant)


def bart_of(var):
    """The BART variable behind ``var``: the coefficient of a basis term that :func:`~pymc_treesamplers.BART`
    returned (``w * F`` -> ``F``; the term carries it in its tag), else ``var`` itself. So the steps, plots and
    diagnostics take the term a user holds where they take a BART variable.

    >>> bart_of(3) == 3
    True
    """
    tag = getattr(var, "tag", None)
    return getattr(tag, "bart_coefficient", var)
