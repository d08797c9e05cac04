"""What the tree kernels see of a PyMC model: the likelihood of one BART variable (docs/design.md section 1).

:func:`working_model` is the one place a route is chosen (the steps call it once per output) and returns
one of three, which the steps then use through the same three methods: ``leaf_prior(op, m)`` (the leaf
prior on the route's scale), ``sweep_input(f, rng, threads)`` (the record one sweep runs on at the BART
value ``f``) and ``compile_record()`` (a small record of that type, to compile the sweep before sampling):

* :class:`~pymc_treesamplers.routes.gaussian.GaussianWorkingModel` (``gaussian.py``) when the likelihood is
  Gaussian in the BART value ``f``. The observed
  log-likelihood terms that depend on ``f`` are compiled once with their gradient ``g`` and negative
  Hessian diagonal ``h`` in ``f`` (all other model values enter as shared variables, set by PyMC
  before each step). At model build the Hessian is checked to be diagonal (rows not coupled:
  ``H v = h * v`` for random ``v`` at two points) and constant with an exact second-order expansion
  (a Normal likelihood whose mean is affine in ``f``); then the pseudo-data ``z_i ~ N(f_i, 1/w_i)``
  with ``w = h`` and ``z = f + g / h`` are exact.
* :class:`~pymc_treesamplers.routes.family.FamilyWorkingModel` (``family.py``) when the likelihood is one of the
  families of
  :mod:`pymc_treesamplers.routes.family_record` with ``f`` in one parameter through a link,
  ``link(param) = a + b f``. Each step reads ``a``, ``b`` and the family's data from the model and
  hands the kernels a :class:`~pymc_treesamplers.routes.family_record.FamilyLik`, whose working model
  and Metropolis-Hastings correction keep every tree update exact.
* :class:`~pymc_treesamplers.routes.graph.GraphWorkingModel` (``graph.py``) for any other elementwise likelihood:
  the same correction with the log-likelihood evaluated by its compiled PyTensor graph.

What each reads of the PyMC graph (the family and link of the likelihood, a link's scale, one output of a BART
with several) is :mod:`pymc_treesamplers.routes.reading`'s.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pymc as pm

from .family import ROUTES, FamilyWorkingModel
from .gaussian import GaussianWorkingModel
from .graph import GraphWorkingModel
from .reading import OutputView

__all__ = ["ROUTES", "OutputView", "WorkingModel", "working_model"]


class WorkingModel(Protocol):
    """What a step sees of one output's likelihood (module docstring): every route's working model has these.

    ``corrected``: whether the tree updates need the Metropolis-Hastings correction (every record but exact
    Gaussian pseudo-data); ``leaf_prior(op, m)``: the leaf prior ``(mu0, s2)`` on the route's scale;
    ``sweep_input(f, rng, threads)``: the record one sweep runs on at the BART value ``f``;
    ``compile_record()``: a small record of that type, to compile the sweep before sampling.
    """

    @property
    def corrected(self) -> bool: ...

    def leaf_prior(self, op, m: int) -> tuple[float, float]: ...

    def sweep_input(self, f: np.ndarray, rng: np.random.Generator, threads: int = 1) -> Any: ...

    def compile_record(self) -> Any: ...


def working_model(model: pm.Model, bart_rv, value_var, shared: dict, point: dict, center: float,
                  compile_kwargs=None, view: OutputView | None = None, route: str = "auto") -> WorkingModel:
    """The working model of ``bart_rv``'s likelihood (module docstring); ``center``: the leaf prior mean;
    ``view``: one output of a BART variable with several, given the others; ``route``: a family's route
    (:class:`FamilyWorkingModel`).

    The exact Gaussian pseudo-data when they apply, else a family of ``routes/family_record.py`` when the
    graph matches one, else the PyTensor graph.
    """
    # a piecewise-linear likelihood (AsymmetricLaplace) has a Hessian that PyTensor simplifies to zeros,
    # leaving the direction of the Hessian-vector product out of the graph
    gaussian_kwargs = {"on_unused_input": "ignore", **(compile_kwargs or {})}
    gaussian = GaussianWorkingModel(model, bart_rv, value_var, shared, point, gaussian_kwargs, require_quadratic=False,
                                    view=view)
    if gaussian.flat or gaussian.quadratic:
        return gaussian
    if gaussian.n_potentials == 0:
        try:
            return FamilyWorkingModel(model, bart_rv, value_var, shared, point, gaussian, center, compile_kwargs,
                                      view=view, route=route)
        except NotImplementedError as err:
            reason = str(err)
    else:
        reason = "a pm.Potential depends on the BART value"
    return GraphWorkingModel(gaussian, center, reason, gaussian_kwargs)
