"""The graph route lowered to native code (routes/native.py): the same numbers as the PyTensor graph it comes
from, and every sampler against the exact posterior with it (m = 1 and m = 2), as the Python route is proven.

The kernel chains are the steps' own sweeps on a :class:`~pymc_treesamplers.routes.graph.GraphLik` whose
functions are the lowered graph (no Python host is registered: a call into Python would fail), so each tree
update is the sampler's working-model kernel, the expansion from the lowered derivatives and the
Metropolis-Hastings correction from the lowered log-likelihood. The likelihood carries a shared input (an
offset, as PyMC's other variables enter), so the packing of shared values into ``theta`` is exercised.

What a wrong lowering breaks, and what it does not: a wrong log-likelihood (here, tempered by 0.5) changes the
target and fails the enumeration; wrong derivatives change only the working model, which the correction makes
exact whatever it is, so the chain stays exact (a test shows both, with the acceptance the wrong derivatives
cost).
"""

import functools
import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special

import pymc_treesamplers as pmt
from pymc_treesamplers.routes.graph import GraphWorkingModel, graph_lik
from pymc_treesamplers.routes.native import NativeGraph, graph_derivs, graph_loglik, lower, working_curvature
from tests.helpers.exact import (
    empirical,
    exact_pair_posterior,
    exact_partition_posterior,
    quadrature_leaf_term,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.kernel_chain import chain_draws
from tests.helpers.samplers import SAMPLERS

CODES, R, _ = tiny_data(0)
Y = (R > 0.25).astype(float)
OFFSET = 0.3
MU0 = float(special.logit(Y.mean())) - OFFSET
N_DRAWS = 5000
PAIR_ROWS = 5


def _logit(scale: float = 1.0, grad_factor: float = 1.0, y=Y) -> NativeGraph:
    """Bernoulli-logit with ``logit p = f + offset`` (a shared offset), lowered; ``scale`` tempers the
    log-likelihood and ``grad_factor`` scales the derivatives (the deliberately wrong variants)."""
    f = pt.vector("f")
    offset = pytensor.shared(OFFSET, name="offset")
    eta = f + offset
    ll = pt.sum(y * eta - pt.softplus(eta))
    g = pt.grad(ll, f)
    native = lower([f], [scale * ll, grad_factor * g, -grad_factor * pt.grad(pt.sum(g), f)], "test")
    assert isinstance(native, NativeGraph), native
    return native


def _exact_logit():
    def loglik(rows, mu):
        return sum(special.log_expit(mu + OFFSET if Y[i] else -(mu + OFFSET)) for i in rows)

    return exact_partition_posterior(CODES, R, np.ones(7), 0.95, 2.0, MU0, 1.0,
                                     leaf_term=quadrature_leaf_term(loglik, MU0, 1.0))


def _draws(s, native, n_draws=N_DRAWS, factor=2, counts=None):
    _, _, thin, seed = s.posterior
    return chain_draws(s.step, s.options, CODES, R, None, n_draws, factor * thin, seed, mu0=MU0,
                       family=lambda f, mu0: graph_lik(-1, mu0, f, native=native), counts=counts)


def _entries(what):
    return [pytest.param(s, id=s.name) for s in SAMPLERS if getattr(s, what) is not None]


def test_lowered_functions_are_the_graph():
    """Log-likelihood, gradient and working curvature of the lowered graph against PyTensor's own evaluation,
    and ``theta`` following the shared value."""
    native = _logit()
    f = np.random.default_rng(0).normal(size=7)
    eta = f + OFFSET
    ll = float(np.sum(Y * special.log_expit(eta) + (1 - Y) * special.log_expit(-eta)))
    assert graph_loglik(native.fns, f, native.theta()) == pytest.approx(ll, rel=1e-13)
    grad, curv = np.empty(7), np.empty(7)
    graph_derivs(native.fns, f, native.theta(), grad, curv)
    p = special.expit(eta)
    np.testing.assert_allclose(grad, Y - p, rtol=1e-12)
    np.testing.assert_allclose(curv, p * (1 - p), rtol=1e-12)
    native.shared[0].set_value(-1.0)
    assert graph_loglik(native.fns, f, native.theta()) != pytest.approx(ll, rel=1e-6)


def test_a_shared_value_that_changes_shape_is_refused():
    f = pt.vector("f")
    scale = pytensor.shared(np.ones(3), name="scale")
    ll = -pt.sum(f**2) * scale.sum()
    g = pt.grad(ll, f)
    native = lower([f], [ll, g, -pt.grad(pt.sum(g), f)], "test")
    assert native.theta().tolist() == [1.0, 1.0, 1.0]
    scale.set_value(np.ones(4))
    with pytest.raises(ValueError, match="changed shape"):
        native.theta()


def test_working_curvature_fills_rows_without_curvature():
    curv = np.array([2.0, -1.0, 4.0, 0.0, 3.0])
    working_curvature(curv)
    assert curv.tolist() == [2.0, 3.0, 4.0, 3.0, 3.0]
    none = np.array([-1.0, 0.0])
    working_curvature(none)
    assert none.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("s", _entries("posterior"))
def test_every_sampler_matches_enumeration_on_the_lowered_graph(s):
    """m = 1, Bernoulli-logit with a shared offset, against enumeration x quadrature."""
    counts = []
    keys = _draws(s, _logit(), counts=counts)
    exact = _exact_logit()
    tv, threshold = tv_distance(exact, empirical(keys)), tv_threshold(exact, N_DRAWS)
    assert tv < threshold, f"TV {tv:.4f} >= {threshold:.4f} (MH acceptance {counts[1] / counts[0]:.3f})"
    assert 0 < counts[1] <= counts[0]


@functools.cache
def _pair_case():
    codes, r = CODES[:PAIR_ROWS], R[:PAIR_ROWS]
    return codes, r, exact_pair_posterior(codes, r, np.ones(PAIR_ROWS), 0.95, 2.0, 0.0, 1.0)


@pytest.mark.parametrize("s", _entries("pair"))
def test_every_sampler_matches_pair_enumeration_on_the_lowered_graph(s):
    """m = 2: a Normal likelihood (unit noise) written as a graph and lowered, so the backfitting runs on the
    graph record (expansion and correction), against the exact posterior of the pair of partitions."""
    codes, r, exact = _pair_case()
    f = pt.vector("f")
    ll = -0.5 * pt.sum((pt.constant(r) - f) ** 2)
    g = pt.grad(ll, f)
    native = lower([f], [ll, g, -pt.grad(pt.sum(g), f)], "normal")
    n_draws, thin, seed = s.pair
    keys = chain_draws(s.step, s.options, codes, r, None, n_draws, thin, seed, m=2, mu0=0.0,
                       family=lambda fit, mu0: graph_lik(-1, mu0, fit, native=native))
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, n_draws)


def test_a_wrong_log_likelihood_fails_and_wrong_derivatives_do_not():
    """The enumeration can fail: a tempered log-likelihood (0.5 x) is detected. Derivatives 2x too large give
    a worse working model, which the correction makes exact: the chain passes at a lower acceptance."""
    s = next(s for s in SAMPLERS if s.name == "cgm")
    exact = _exact_logit()
    threshold = tv_threshold(exact, N_DRAWS)
    assert tv_distance(exact, empirical(_draws(s, _logit(scale=0.5)))) > threshold
    right, wrong = [], []
    _draws(s, _logit(), n_draws=1000, counts=right)
    keys = _draws(s, _logit(grad_factor=2.0), counts=wrong)
    assert tv_distance(exact, empirical(keys)) < threshold
    assert wrong[1] / wrong[0] < right[1] / right[0] - 0.05


def _potential_model(y):
    with pm.Model() as model:
        mu = pmt.BART("mu", np.arange(len(y), dtype=float)[:, None], y, m=3)
        shift = pm.Normal("shift", 0.0, 1.0)
        pm.Potential("loglik", pm.math.sum(y * (mu + shift) - pt.softplus(mu + shift)))
    return model


def test_the_step_lowers_the_graph_and_follows_the_other_variables():
    """In a PyMC model the step lowers the graph (no warning), its record reads the other variables' current
    values, and the lowered numbers are the Python route's."""
    y = (np.arange(12) % 3 == 0).astype(float)
    model = _potential_model(y)
    with model, warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        step = pmt.CGMStep([model["mu"]])
    working = step.working
    assert isinstance(working, GraphWorkingModel) and working.native is not None
    f = np.linspace(-1.0, 1.0, 12)
    for shift in (0.0, 0.7):
        working.native.shared[0].set_value(shift)
        lik = working.record(f)
        assert lik.ll[0] == pytest.approx(working.gaussian.loglik(f), rel=1e-12)
        assert lik.ll[0] == pytest.approx(float(np.sum(y * (f + shift) - np.logaddexp(0.0, f + shift))), rel=1e-12)


def test_a_graph_that_cannot_be_lowered_says_so_and_samples_in_python():
    """An op PyTensor's numba backend runs in object mode (trigamma, in a Beta likelihood's curvature) keeps its
    derivatives in Python, with a warning that names the reason; the log-likelihood is still lowered."""
    rng = np.random.default_rng(1)
    y = rng.beta(2.0, 3.0, size=20)
    with pm.Model():
        mu = pmt.BART("mu", rng.uniform(size=(20, 2)), y, m=3)
        pm.Beta("y", mu=pm.math.invlogit(mu), nu=10.0, observed=y)
        with pytest.warns(UserWarning, match="derivatives .* evaluated in Python.*object mode"):
            step = pmt.CGMStep([mu])
        idata = pm.sample(tune=20, draws=20, chains=1, step=[step], random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    assert step.working.native.fns[2] == 0 and step.working.native.fns[0] != 0
    assert np.isfinite(idata.posterior["mu"].values).all()


def test_an_exception_in_the_graph_reaches_the_user():
    """A lowered graph that raises (a parameter out of its support checked by PyMC) raises out of the sweep with
    the graph's own message, not a silent rejection."""
    f = pt.vector("f")
    ll = pm.logp(pm.Normal.dist(0.0, pt.exp(f) - 10.0), np.zeros(4)).sum()  # sigma < 0 near f = 0
    g = pt.grad(ll, f)
    native = lower([f], [ll, g, -pt.grad(pt.sum(g), f)], "bad")
    with pytest.raises(Exception, match="sigma > 0"):
        graph_loglik(native.fns, np.zeros(4), native.theta())
