"""Whether a fit's chains agree (pmt.agreement) and the advice added to PyMC's convergence warnings."""

import logging

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pymc.stats.convergence import log_warnings, run_convergence_checks

import pymc_treesamplers as pmt
from pymc_treesamplers.results.agreement import ADVICE, ConvergenceAdvice, disagreement_advice


def _idata(shift_sigma=0.0, shift_f=0.0, shift_leaves=0.0, chains=4, draws=500, seed=0):
    rng = np.random.default_rng(seed)
    offsets = np.arange(chains)[:, None]
    mu = rng.normal(size=(chains, draws, 30))
    mu[:, :, 7] += shift_f * offsets  # one row of f disagrees
    return az.from_dict({
        "posterior": {"sigma": rng.normal(size=(chains, draws)) + shift_sigma * offsets, "mu": mu,
                      "beta": rng.normal(size=(chains, draws, 3))},
        "sample_stats": {"mu_forest": np.full((chains, draws), ""),
                         "mu_n_leaves": rng.normal(size=(chains, draws)) + shift_leaves * offsets},
    })


def test_agreeing_chains_pass_on_every_quantity():
    table = pmt.agreement(_idata())
    assert list(table.index) == ["sigma", "beta", "mu: f at 10 rows", "mu: n_leaves"]
    assert table["agree"].all() and (table["r_hat"] < 1.01).all() and (table["ess_bulk"] > 1000).all()
    assert disagreement_advice(table) is None


@pytest.mark.parametrize(("shift", "quantity"), [({"shift_sigma": 1.0}, "sigma"),
                                                 ({"shift_leaves": 1.0}, "mu: n_leaves")])
def test_a_quantity_whose_chains_sit_apart_fails_alone(shift, quantity):
    table = pmt.agreement(_idata(**shift))
    assert list(table.index[~table["agree"]]) == [quantity]
    assert table.loc[quantity, "r_hat"] > 1.1
    advice = disagreement_advice(table)
    assert advice.startswith(f"The chains disagree on {quantity} (R-hat") and advice.endswith(ADVICE)


def test_f_is_judged_at_the_rows_asked_for():
    idata = _idata(shift_f=1.0)
    assert pmt.agreement(idata).loc["mu: f at 10 rows", "agree"]  # row 7 is not among the 10 evenly spaced rows
    table = pmt.agreement(idata, rows=[3, 7])
    assert not table.loc["mu: f at 2 rows", "agree"]


def test_too_few_draws_or_a_chain_short_of_the_ess_do_not_agree():
    table = pmt.agreement(_idata(draws=60))  # 4 x 60 draws cannot give a bulk ESS of 400
    assert not table["agree"].any() and (table["r_hat"] < 1.05).all()


@pytest.mark.parametrize(("kwargs", "match"), [({"var_name": "nu"}, "var_name='nu' is not a BART variable"),
                                               ({"rows": [30]}, r"rows must be training rows in \[0, 30\)")])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        pmt.agreement(_idata(), **kwargs)


def test_a_quantity_that_never_changes_has_nothing_to_disagree_on():
    idata = _idata()
    idata["posterior"]["fixed"] = idata["posterior"]["sigma"] * 0 + 2.0
    mu = idata["posterior"]["mu"].values
    mu[..., 0] = 1.0  # one constant element among the checked rows: the others decide
    table = pmt.agreement(idata)
    assert table.loc["fixed"].tolist() == [1.0, np.inf, True] and table["agree"].all()
    assert table.loc["mu: f at 10 rows", "ess_bulk"] < np.inf


def test_one_chain_is_refused():
    with pytest.raises(ValueError, match="several chains"):
        pmt.agreement(_idata(chains=1))


def _logged(caplog, idata, model):
    caplog.clear()
    for f in logging.getLogger("pymc.stats.convergence").filters:  # each check here stands for a new pm.sample
        if isinstance(f, ConvergenceAdvice):
            f._advised = -np.inf
    with caplog.at_level(logging.INFO, logger="pymc"), model:
        log_warnings(run_convergence_checks(idata, model))
    return [r.getMessage() for r in caplog.records if r.name == "pymc.stats.convergence"]


def test_pymc_warnings_name_what_to_do_for_a_bart_model(caplog):
    """PyMC's own checks on a BART model's disagreeing trace log its R-hat warning with the advice; a model
    without a BART variable gets PyMC's message unchanged; chains that agree get no warning."""
    X = np.random.default_rng(1).normal(size=(30, 2))
    with pm.Model() as bart_model:
        mu = pmt.BART("mu", X, X[:, 0], m=3)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=X[:, 0])
    with pm.Model() as plain:
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", 0.0, sigma, observed=X[:, 0])
    bad = az.from_dict({"posterior": {"sigma": 1 + np.abs(np.random.default_rng(2).normal(size=(4, 200)))
                                      + np.arange(4)[:, None]}})
    logged = _logged(caplog, bad, bart_model)
    rhat = [m for m in logged if m.startswith("The rhat statistic is larger than 1.01")]
    assert len(rhat) == 1 and rhat[0].endswith(ADVICE)
    ess = [m for m in logged if m.startswith("The effective sample size")]  # logged next: advised once
    assert len(ess) == 1 and ess[0].endswith("see the advice above.)")
    logged = _logged(caplog, bad, plain)
    assert any(m.startswith("The rhat statistic") for m in logged) and not any(ADVICE in m for m in logged)
    good = az.from_dict({"posterior": {"sigma": 1 + np.abs(np.random.default_rng(3).normal(size=(4, 200)))}})
    assert not any(ADVICE in m for m in _logged(caplog, good, bart_model))


def test_the_filter_is_installed_once_and_leaves_other_records_alone():
    filters = [f for f in logging.getLogger("pymc.stats.convergence").filters if isinstance(f, ConvergenceAdvice)]
    assert len(filters) == 1
    record = logging.LogRecord("pymc.stats.convergence", logging.INFO, "", 0, "There were 3 divergences", None, None)
    X = np.zeros((5, 1))
    with pm.Model():
        pmt.BART("mu", X, np.zeros(5), m=2)
        assert filters[0].filter(record) and record.getMessage() == "There were 3 divergences"
