"""One test for each name of bambi and formulae outside their public API that pymc_treesamplers/bambi/internals.py
uses (its docstring lists them), against the pinned bambi: a release that renames one fails here, by name."""

import inspect

import bambi as bmb
import formulae as fm
import numpy as np
import pandas as pd
import pymc as pm
import pytest

from pymc_treesamplers.bambi import internals


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"y": rng.normal(size=30), "x1": rng.normal(size=30), "z": rng.normal(size=30),
                         "g": rng.choice(list("ab"), 30)})


def test_pinned_bambi_version():
    assert bmb.__version__.rsplit(".", 1)[0] == internals.BAMBI_TESTED


def test_parsed_formula_parts_find_bart():
    """formulae's Term.components, GroupSpecificTerm.expr/.factor and Call.call.callee."""
    alone, misplaced = internals.bart_calls(fm.model_description("y ~ bart(x1, z) + z + (1|g)"))
    assert [internals.call_name(c) for c in alone] == ["bart(x1, z)"] and misplaced == []
    for formula, where in [("y ~ bart(x1):z", "interaction"), ("y ~ z*bart(x1)", "interaction"),
                           ("y ~ (bart(x1)|g)", "group-specific"), ("y ~ np.log(bart(x1))", "another call")]:
        _, misplaced = internals.bart_calls(fm.model_description(formula))
        assert misplaced and where in misplaced[0], formula


def test_call_arguments_are_lazy_variables():
    """formulae's LazyCall.args hold LazyVariable (with .name) for plain names."""
    (call,), _ = internals.bart_calls(fm.model_description("y ~ bart(x1, np.log(z), m=50)"))
    columns, other = internals.call_columns(call)
    assert columns == ["x1"] and other == ["np.log(z)"]


def test_offset_is_formulae_offset_kind(frame):
    """formulae.transforms.Offset: a call returning one is an offset term, evaluated again on new data."""
    design = fm.design_matrices("y ~ myoffset(x1) + z", frame, extra_namespace={
        "myoffset": lambda x: internals.zero_offset(len(x))})
    term = design.common.terms["myoffset(x1)"]
    assert term.kind == "offset"
    new = design.common.evaluate_new_data(frame.iloc[:4])
    assert new.design_matrix.shape[0] == 4


def test_offset_term_subclass_is_bambi_offset(frame):
    """bambi.terms.OffsetTerm: bambi adds an offset's data (squeezed, inside the model) to the linear predictor
    and keeps its column out of the common terms' coefficients."""
    built = []

    def forest():
        built.append(pm.modelcontext(None))
        return pm.math.constant(np.full(30, 7.0))

    model = bmb.Model("y ~ myoffset(x1) + z", frame, extra_namespace={
        "myoffset": lambda x: internals.zero_offset(len(x))})
    component = model.parameters["mu"]
    old = component.terms["myoffset(x1)"]
    component.terms["myoffset(x1)"] = internals.ForestTerm(old.term, component.prefix, forest)
    assert "myoffset(x1)" in component.offset_terms and "myoffset(x1)" not in component.common_terms
    assert np.all(component.terms["myoffset(x1)"].data == 0)  # outside a model: the formula's zeros
    model.build()
    assert built and built[0] is model.backend.model


def test_intercept_prior_dist_is_called(frame):
    """The intercept term's ``prior`` attribute, with a bmb.Prior whose dist bambi calls as dist(label, **args)."""
    seen = []
    model = bmb.Model("y ~ z", frame)
    model.parameters["mu"].intercept_term.prior = bmb.Prior("mine", dist=lambda label, **kw: seen.append(label) or
                                                            pm.Normal(label))
    model.build()
    assert seen == ["Intercept"]


def test_component_class_and_predict_methods(frame):
    """bambi.model_components.DistributionalComponent: its class can be swapped, and predict / predict_common keep
    the arguments the subclass reads (idata, data; posterior, data, in_sample)."""
    cls = internals.DistributionalComponent
    assert list(inspect.signature(cls.predict).parameters)[:3] == ["self", "idata", "data"]
    assert list(inspect.signature(cls.predict_common).parameters)[:4] == ["self", "posterior", "data", "in_sample"]

    class Sub(cls):
        pass

    model = bmb.Model("y ~ z", frame)
    internals.adopt_component(model.parameters["mu"], Sub)
    assert type(model.parameters["mu"]) is Sub
    with pytest.raises(TypeError, match="DistributionalComponent"):
        internals.adopt_component(object(), Sub)


def test_group_specific_terms_expose_intercepts(frame):
    """The component's group_specific_terms: bambi's terms, whose formulae term's expr is an Intercept for (1|g);
    their alias/name, prior and hyperprior_alias (the sigma variable's name after set_alias)."""
    model = bmb.Model("y ~ z + (1|g) + (z|g)", frame)
    found = internals.intercept_groups(model.parameters["mu"])
    assert [(label, sigma) for label, _, sigma in found] == [("1|g", "1|g_sigma")]
    assert found[0][1].name == "Normal"
    model.set_alias({"1|g": "group", "sigma": "tau"})
    model.build()
    (label, _, sigma), = internals.intercept_groups(model.parameters["mu"])
    assert sigma in model.backend.model.named_vars and label == "group"
