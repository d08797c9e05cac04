"""Every name of bambi and formulae outside their public API that the formula term uses, in one place.

bambi 0.21 has no registry of term kinds: a call in a formula is a common term (one coefficient per column), an
offset (a column added to the linear predictor) or bambi's own HSGP. The forest term rides on the offset kind,
whose column bambi removes from the design matrix before the coefficients meet it, and whose contribution bambi
adds to the linear predictor itself. What that leaves to us is each name below; tests/test_bambi_internals.py
holds one test for each against the pinned bambi (``BAMBI_TESTED``), so a bambi release that renames one fails
there, by name, rather than in a fit.

* formulae's parsed formula (``model_description``, public) holds terms whose parts (``Term.components``,
  ``GroupSpecificTerm.expr``/``.factor``) and calls (``Call.call``: ``callee``, ``args`` of ``LazyVariable``
  with ``.name``) we read to find ``bart(...)`` and refuse it where it cannot be a forest;
* ``formulae.transforms.Offset``: what the formula's ``bart(...)`` returns, so the term is an offset (a column of
  zeros, ours to fill);
* ``bambi.terms.OffsetTerm``: the term class bambi made of it, subclassed so that building the PyMC model adds
  the forest (:class:`ForestTerm`);
* ``bambi.model_components.DistributionalComponent``, its ``terms`` dict, ``intercept_term`` and its methods
  ``predict(idata, data, ...)`` and ``predict_common(posterior, data, in_sample, ...)``: the parent parameter's
  component, whose class :func:`adopt_component` swaps for one that adds the forest's values to the linear
  predictor bambi predicts with;
* the component's ``group_specific_terms`` (bambi's terms, ``.term`` formulae's, whose ``expr`` is an
  ``Intercept`` for ``(1|g)``), their ``prior``, ``alias``/``name`` and ``hyperprior_alias``: the group
  intercepts whose mean shares the forest's level (:func:`intercept_groups`);
* the intercept term's ``prior`` attribute, given a ``bmb.Prior(dist=...)`` (public) that records the forest's
  mean instead of a free intercept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
from bambi.model_components import DistributionalComponent
from bambi.terms import OffsetTerm
from formulae.terms.call import Call
from formulae.terms.call_resolver import LazyVariable
from formulae.terms.terms import GroupSpecificTerm, Intercept, Term
from formulae.transforms import Offset

__all__ = ["BAMBI_TESTED", "ForestTerm", "adopt_component", "bart_calls", "call_columns", "call_name",
           "intercept_groups", "zero_offset"]

BAMBI_TESTED = "0.21"  # the bambi minor version every name here is tested against (the `bambi` extra pins it)


def _calls(component) -> list:
    """The calls to ``bart`` inside one part of a term (a call, or calls nested in a call's arguments)."""
    found = []
    if isinstance(component, Call):
        lazy = component.call
        if getattr(lazy, "callee", None) == "bart":
            found.append(component)
        stack = list(getattr(lazy, "args", [])) + list(getattr(lazy, "kwargs", {}).values())
        while stack:
            arg = stack.pop()
            if getattr(arg, "callee", None) == "bart":
                found.append(arg)
            stack.extend(getattr(arg, "args", []))
            stack.extend(getattr(arg, "kwargs", {}).values())
    return found


def bart_calls(description) -> tuple[list, list]:
    """The ``bart(...)`` terms of a parsed formula: ``(alone, misplaced)``, the terms that are a lone call of
    ``bart`` (a forest) and a description of every other place a ``bart`` call sits (an interaction, a group
    term, inside another call), which the model refuses by name.

    >>> import formulae as fm
    >>> alone, misplaced = bart_calls(fm.model_description("y ~ bart(x1, x2) + z + (bart(x1) | g)"))
    >>> [call_name(c) for c in alone], misplaced
    (['bart(x1, x2)'], ['in the group-specific term (bart(x1)|g)'])
    """
    alone, misplaced = [], []
    for term in description.terms:
        if isinstance(term, GroupSpecificTerm):
            parts = list(getattr(term.expr, "components", [])) + list(getattr(term.factor, "components", []))
            if any(_calls(part) for part in parts):
                misplaced.append(f"in the group-specific term ({_term_text(term.expr)}|{_term_text(term.factor)})")
            continue
        if not isinstance(term, Term):
            continue
        parts = term.components
        if len(parts) == 1 and isinstance(parts[0], Call) and parts[0].call.callee == "bart":
            if any(_calls(arg) for arg in _call_parts(parts[0])):
                misplaced.append(f"inside its own arguments ({parts[0].name})")
            alone.append(parts[0])
            continue
        if any(_calls(part) for part in parts):
            kind = "an interaction" if len(parts) > 1 else "another call"
            misplaced.append(f"in {kind} ({_term_text(term)})")
    return alone, misplaced


def _call_parts(call: Call) -> list:
    return [Call(arg) for arg in list(call.call.args) + list(call.call.kwargs.values()) if hasattr(arg, "callee")]


def _term_text(term) -> str:
    if hasattr(term, "components"):
        return ":".join(getattr(part, "name", str(part)) for part in term.components)
    return "1"


def call_name(call: Call) -> str:
    """The text of a call as formulae names its term (``'bart(x1, x2)'``): the name bambi gives the term."""
    return call.name


def call_columns(call: Call) -> tuple[list[str], list[str]]:
    """``(columns, other)``: the positional arguments of a ``bart(...)`` call that are plain names (data columns)
    and the text of those that are not (an expression, a number), which the model refuses."""
    columns, other = [], []
    for arg in call.call.args:
        if isinstance(arg, LazyVariable):
            columns.append(arg.name)
        else:
            other.append(str(getattr(arg, "name", arg)))
    return columns, other


def zero_offset(n: int) -> Offset:
    """What the formula's ``bart(...)`` evaluates to: an offset of ``n`` zeros (a Series, so that formulae evaluates
    it again, at the new rows' count, on new data)."""
    return Offset(pd.Series(np.zeros(n)))


class ForestTerm(OffsetTerm):
    """bambi's term for the formula's ``bart(...)``: an offset whose column, read while bambi builds the PyMC model
    (``offset.data.squeeze()`` inside the model's context), is the forest ``forest()``; outside a model it is the
    formula's column of zeros."""

    def __init__(self, term, prefix, forest):
        self._forest = forest
        super().__init__(term, prefix)

    @property
    def data(self):
        if pm.Model.get_context(error_if_none=False) is None:
            return self._zeros
        return self._forest()

    @data.setter
    def data(self, value):  # CommonTerm.__init__ stores the formula's column (zeros)
        self._zeros = value


def adopt_component(component: DistributionalComponent, cls: type) -> None:
    """Make bambi's parent component an instance of ``cls`` (a subclass that adds no state of its own)."""
    if not isinstance(component, DistributionalComponent):
        raise TypeError(f"bambi's component is a {type(component).__name__}, not a DistributionalComponent")
    component.__class__ = cls



def intercept_groups(component) -> list[tuple[str, object, str]]:
    """``(label, prior, sigma)`` of each group-intercept term ``(1|g)`` of bambi's component: the label its PyMC
    variables are named by (``label``, ``label_offset``) and the name of its ``sigma`` hyperprior's variable
    (``label_sigma``, or the alias bambi's ``set_alias`` gave it: the term's ``hyperprior_alias``)."""
    out = []
    for term in component.group_specific_terms.values():
        if isinstance(term.term.expr, Intercept):
            label = term.alias or term.name
            out.append((label, term.prior, f"{label}_{term.hyperprior_alias.get('sigma', 'sigma')}"))
    return out
