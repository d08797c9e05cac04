"""PyMC routes that cannot sample trees refuse a BART variable by name before doing any work; the routes
that can keep working (pmt.callers, docs/model.md "What works with a BART variable")."""

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers.model.callers import UnsupportedMethodError

QUIET = {"tune": 20, "draws": 20, "chains": 1, "progressbar": False, "compute_convergence_checks": False,
         "random_seed": 1}
rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, size=(60, 2))
Y = np.sin(3 * X[:, 0]) + rng.normal(0, 0.2, 60)


def _model():
    with pm.Model() as model:
        mu = pmt.BART("mu", X, Y, m=5)
        pm.Normal("y", mu, pm.HalfNormal("sigma", 1), observed=Y)
    return model


REFUSED = {
    "find_MAP": (lambda m: pm.find_MAP(progressbar=False, return_inferencedata=True, jitter=False), "pm.find_MAP"),
    "find_MAP-powell": (lambda m: pm.find_MAP(method="powell", progressbar=False, return_inferencedata=True,
                                              jitter=False), "pm.find_MAP"),
    "advi": (lambda m: pm.fit(10, progressbar=False), "pm.fit"),
    "fullrank-advi": (lambda m: pm.fit(10, method="fullrank_advi", progressbar=False), "pm.fit"),
    "svgd": (lambda m: pm.fit(10, method="svgd", progressbar=False), "pm.fit"),
    "smc": (lambda m: pm.sample_smc(20, progressbar=False), "pm.sample_smc"),
    "metropolis": (lambda m: pm.sample(step=[pm.Metropolis([m["mu"]])], **QUIET), "pm.Metropolis"),
    "slice": (lambda m: pm.sample(step=[pm.Slice([m["mu"]])], **QUIET), "pm.Slice"),
    "nuts": (lambda m: pm.sample(step=[pm.NUTS([m["mu"]])], **QUIET), "pm.NUTS"),
    "nuts-on-everything": (lambda m: pm.sample(step=pm.NUTS(), **QUIET), "pm.NUTS"),
    "nutpie": (lambda m: pm.sample(nuts_sampler="nutpie", **QUIET), "nuts_sampler='nutpie'"),
    "numpyro": (lambda m: pm.sample(nuts_sampler="numpyro", **QUIET), "nuts_sampler='numpyro'"),
    "blackjax": (lambda m: pm.sample(nuts_sampler="blackjax", **QUIET), "nuts_sampler='blackjax'"),
}


@pytest.mark.parametrize("route", list(REFUSED))
def test_a_route_that_cannot_sample_trees_is_refused_by_name(route):
    call, name = REFUSED[route]
    model = _model()
    with model, pytest.raises(UnsupportedMethodError) as err:
        call(model)
    message = str(err.value)
    assert name in message and "'mu'" in message and "pm.sample()" in message and "tree steps" in message


def test_the_routes_that_can_sample_trees_keep_working():
    model = _model()
    with model:
        idata = pm.sample(**(QUIET | {"draws": 100}))
        assert {"mu", "sigma"} <= set(idata.posterior.data_vars)
        pm.sample(step=[pmt.GrowPruneStep([model["mu"]]), pm.NUTS([model["sigma"]])], **QUIET)
        pm.sample(step=[pmt.CGMStep([model["mu"]]), pm.Metropolis([model["sigma"]])], **QUIET)
        pm.sample(step=[pmt.PGBARTStep([model["mu"]], num_particles=3), pm.Slice([model["sigma"]])], **QUIET)
        prior = pm.sample_prior_predictive(5, random_seed=1)
        assert prior.prior["mu"].shape == (1, 5, 60)
        pp = pmt.sample_posterior_predictive(idata, progressbar=False)
        assert pp.posterior_predictive["y"].shape == (1, 100, 60)
        pm.compute_log_likelihood(idata, progressbar=False)
        assert idata.log_likelihood["y"].shape == (1, 100, 60)
        assert np.isfinite(model.compile_logp()(model.initial_point()))
    assert np.isfinite(float(az.loo(idata).elpd))
