"""Reading a BART variable's likelihood from the PyMC graph: which observation family and link it enters
(:data:`FAMILIES`), the link scale of a parameter as a graph, and one output of a BART with several as a vector
(:class:`OutputView`). The working models of :mod:`.gaussian`, :mod:`.family` and :mod:`.graph` are built from
what these read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.continuous import AsymmetricLaplaceRV
from pytensor.scalar import Erfc, Exp, Sigmoid
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.random import basic as rvs

from . import observation


class OutputView:
    """One output of a BART variable of shape ``(k, n)`` as a working model sees it: a vector ``var``
    stands for row ``index`` of the value, and the other rows are read from ``base``, a shared variable
    the step keeps equal to the variable's current value (:meth:`set_others`). Each output's forest is
    then updated given the others, under its own working model, exactly as a BART vector is.

    >>> import pytensor.tensor as pt
    >>> view = OutputView(pt.matrix("mu"), 1, np.zeros((2, 3)))
    >>> view.var.name, view.base.get_value().shape
    ('mu[1]', (2, 3))
    """

    def __init__(self, value_var, index: int, value: np.ndarray):
        self.index = int(index)
        self.base = pytensor.shared(np.array(value, dtype=value_var.dtype), name=f"{value_var.name}_others")
        self.var = pt.vector(f"{value_var.name}[{index}]", dtype=value_var.dtype)
        self.replacement = {value_var: pt.set_subtensor(self.base[self.index], self.var)}
        self.shape = tuple(np.shape(value))

    def set_others(self, value: np.ndarray) -> None:
        """Make the other outputs' current values ``value`` (shape ``(k, n)``; row ``index`` is ignored)."""
        self.base.set_value(np.asarray(value, dtype=self.base.dtype))

    def row(self, x: np.ndarray, n: int) -> np.ndarray | None:
        """This output's row of a per-observation array ``x`` that is shaped like the whole variable
        (``(k, n)``) or like one output (``(n,)``); None if it is neither."""
        shape = np.shape(x)
        if shape == (n,):
            return np.asarray(x)
        if len(shape) == 2 and shape[1] == n and shape[0] == self.shape[0]:
            return np.asarray(x)[self.index]
        return None

    def value_of(self, value: np.ndarray) -> np.ndarray:
        """What ``var`` stands for at the variable's value ``value`` (k, n): its row."""
        return np.asarray(value)[self.index]


class BasisView:
    """The term ``t = sum_j W[:, j] * F[j]`` of a BART variable whose leaves hold coefficient vectors on a basis
    ``W`` (n, d), as a working model sees it: a vector ``var`` stands for ``t``, and the coefficients are
    ``F = base + C * (t - term(base))`` with ``C[j] = W[:, j] / |W_i|^2`` (0 where a row's basis is 0), whose
    term is ``t`` at every row where the basis is not 0 (and 0, which no ``t`` changes, where it is). The
    likelihood reads the coefficients only through the term (the variable's own graph), so its value in ``var``
    is its value at the coefficients. ``base`` is a shared variable the step keeps equal to the current
    coefficients (:meth:`set_others`). The trees see the term's pseudo-data, and the basis only in their leaves.

    >>> import pytensor.tensor as pt
    >>> view = BasisView(pt.matrix("mu"), np.column_stack([np.ones(3), [0.0, 1.0, 2.0]]), np.zeros((2, 3)))
    >>> view.var.name, view.value_of(np.ones((2, 3))).tolist()
    ('mu_term', [1.0, 2.0, 3.0])
    """

    def __init__(self, value_var, basis: np.ndarray, value: np.ndarray):
        self.basis = np.asarray(basis, dtype=float)
        self.base = pytensor.shared(np.array(value, dtype=value_var.dtype), name=f"{value_var.name}_coefficients")
        self.var = pt.vector(f"{value_var.name}_term", dtype=value_var.dtype)
        norm = (self.basis**2).sum(axis=1)
        lift = np.divide(self.basis.T, norm, out=np.zeros_like(self.basis.T), where=norm > 0)
        W = pt.as_tensor_variable(self.basis.T.astype(value_var.dtype))
        self.replacement = {value_var: self.base + lift.astype(value_var.dtype) * (self.var - (W * self.base).sum(0))}
        self.shape = tuple(np.shape(value))

    def set_others(self, value: np.ndarray) -> None:
        """Make the current coefficients ``value`` (d, n)."""
        self.base.set_value(np.asarray(value, dtype=self.base.dtype))

    def row(self, x: np.ndarray, n: int) -> np.ndarray | None:
        """A per-observation array ``x`` of one value per row (``(n,)``), else None."""
        return np.asarray(x) if np.shape(x) == (n,) else None

    def value_of(self, value: np.ndarray) -> np.ndarray:
        """The term at the coefficients ``value`` (d, n)."""
        return (self.basis.T * np.asarray(value)).sum(axis=0)


def probit_input(node):
    # pm.math.invprobit(x) is 0.5 * erfc(-x / sqrt(2)): return x
    consts, erfc = [], None
    for x in node.inputs:
        if x.owner is not None and isinstance(x.owner.op, Elemwise) and isinstance(x.owner.op.scalar_op, Erfc):
            erfc = x.owner.inputs[0]
        else:
            try:
                consts.append(float(pt.get_underlying_scalar_constant_value(x)))
            except Exception:
                return None
    if erfc is None or len(node.inputs) != 2 or consts != [0.5]:
        return None
    return -np.sqrt(2.0) * erfc


def link_scale(theta, link: str):
    """``link(theta)`` as a graph; exact (no round trip through theta) when theta is the link's inverse
    applied to something, e.g. ``sigmoid(x)`` under the logit link gives ``x``."""
    node = theta.owner
    if node is not None and isinstance(node.op, Elemwise):
        op = node.op.scalar_op
        if link == "logit" and isinstance(op, Sigmoid):
            return node.inputs[0]
        if link == "log" and isinstance(op, Exp):
            return node.inputs[0]
        if link == "probit" and (x := probit_input(node)) is not None:
            return x
    if link == "logit":
        return pt.log(theta) - pt.log1p(-theta)
    if link == "log":
        return pt.log(theta)
    if link == "probit":
        return np.sqrt(2.0) * pt.erfinv(2.0 * theta - 1.0)
    return theta


def is_probit(theta) -> bool:
    node = theta.owner
    return node is not None and isinstance(node.op, Elemwise) and probit_input(node) is not None


class Family(NamedTuple):
    """An observation family the tree steps sample BART under: its name as users write it, the parameter that holds
    the BART value (its index among the op's parameters), the row maths' kind and link (``"binary"``: logit or
    probit, read from the graph), the family data ``(u, v, s)`` from the observed value ``y`` and the other
    parameters ``p`` (see routes/family_record.py), and how the BART value enters, in words."""

    name: str
    param: int
    kind: Any
    data: Callable
    enters: str


# observation op -> its family. The error that refuses any other likelihood lists these (SUPPORTED), so a family
# added here is named there too.
FAMILIES = {
    rvs.NormalRV: Family("Normal", 1, (observation.NORMAL_LOGSD, "log"), lambda y, p: ((y - p[0]) ** 2, 0.0, 0.0),
                         "log of sigma"),
    rvs.BernoulliRV: Family("Bernoulli", 0, "binary", lambda y, p: (y, 1.0 - y, 0.0), "logit or probit of p"),
    rvs.BinomialRV: Family("Binomial", 1, "binary", lambda y, p: (y, p[0] - y, 0.0), "logit or probit of p"),
    rvs.PoissonRV: Family("Poisson", 0, (observation.POISSON_LOG, "log"), lambda y, p: (y, 0.0, 0.0), "log of mu"),
    rvs.NegBinomialRV: Family("NegativeBinomial", 1, (observation.LOGIT2, "logit"), lambda y, p: (p[0], y, 0.0),
                              "log of mu"),
    rvs.GammaRV: Family("Gamma", 1, (observation.GAMMA_LOGSCALE, "log"), lambda y, p: (y, p[0], 0.0),
                        "log of the mean with alpha fixed"),
    rvs.StudentTRV: Family("StudentT", 1, (observation.STUDENT_T, "identity"), lambda y, p: (y, p[0], p[1]), "mu"),
    # a SymbolicRandomVariable with params (b, kappa, mu) (pm.AsymmetricLaplace(q=...) gives kappa)
    AsymmetricLaplaceRV: Family("AsymmetricLaplace", 2, (observation.ASYM_LAPLACE, "identity"),
                                lambda y, p: (y, p[0], p[1]), "mu"),
}

# the exact Gaussian route first (routes/gaussian.py), then every family by FAMILIES
GAUSSIAN_ROUTE = "Normal (mean affine in the BART value: exact, no correction)"
SUPPORTED = ", ".join([GAUSSIAN_ROUTE, *(f"{f.name} ({f.enters})" for f in FAMILIES.values())])
