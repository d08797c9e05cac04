"""BART under likelihoods that are not Gaussian in it: detection from the PyMC graph, recovery of known
functions and parameters, composition with other terms, and the errors for what is not supported.

The exactness of the corrected tree updates is proven on the kernel chain in tests/test_families.py;
here ``pm.sample`` runs the same code from a PyMC model, once against enumeration as well.
"""

import logging
import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import special, stats

import pymc_treesamplers as pmt
from tests.helpers.exact import (
    empirical,
    exact_partition_posterior,
    partition_keys_from_values,
    quadrature_leaf_term,
    tiny_data,
    tv_distance,
    tv_threshold,
)

RNG = np.random.default_rng(0)
N = 240
X = RNG.uniform(-2, 2, size=(N, 3))
F = 1.2 * np.sin(1.5 * X[:, 0]) + 0.8 * X[:, 1]


def _fit(build, m=20, draws=150, step=pmt.CGMStep, seed=1, chains=1):
    with pm.Model() as model:
        mu = build()
        idata = pm.sample(tune=150, draws=draws, chains=chains, cores=1, step=[step([mu])], random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    return model, idata


def _bart(name="mu", m=20, y=None, **kw):
    return pmt.BART(name, X, F if y is None else y, m=m, **kw)


def _families():
    p = special.expit(F)
    y_bin = RNG.binomial(1, p).astype(float)
    trials = np.full(N, 6)
    y_binom = RNG.binomial(trials, p).astype(float)
    lam = np.exp(0.5 * F + 1.0)
    y_pois = RNG.poisson(lam).astype(float)
    y_nb = RNG.negative_binomial(3.0, 3.0 / (3.0 + lam)).astype(float)
    y_gamma = RNG.gamma(4.0, lam / 4.0)
    y_t = F + 0.3 * RNG.standard_t(4, size=N)
    y_het = RNG.normal(0.0, np.exp(0.4 * F))
    # F is the 0.8-quantile of y: asymmetric Laplace noise located at 0 (kappa = sqrt(q / (1 - q))); its own
    # generator, so the draws of the other tests stay what they were
    y_al = F + stats.laplace_asymmetric.rvs(2.0, scale=0.5, size=N, random_state=np.random.default_rng(5))
    return {
        "bernoulli-logit": (lambda mu: pm.Bernoulli("y", logit_p=mu, observed=y_bin), F, "Bernoulli (logit link)"),
        "bernoulli-probit": (lambda mu: pm.Bernoulli("y", p=pm.math.invprobit(mu), observed=y_bin), F / 1.7,
                             "Bernoulli (probit link)"),
        "binomial-logit": (lambda mu: pm.Binomial("y", n=trials, logit_p=mu, observed=y_binom), F,
                           "Binomial (logit link)"),
        "poisson-log": (lambda mu: pm.Poisson("y", mu=pm.math.exp(mu), observed=y_pois), np.log(lam),
                        "Poisson (log link)", y_pois),
        "negbinomial-log": (lambda mu: pm.NegativeBinomial("y", mu=pm.math.exp(mu), alpha=3.0, observed=y_nb),
                            np.log(lam), "NegBinomial (logit link)"),
        "gamma-log": (lambda mu: pm.Gamma("y", alpha=4.0, beta=4.0 / pm.math.exp(mu), observed=y_gamma),
                      np.log(lam), "Gamma (log link)"),
        "student-t": (lambda mu: pm.StudentT("y", nu=4, mu=mu, sigma=0.3, observed=y_t), F, "StudentT (identity link)"),
        "normal-logsd": (lambda mu: pm.Normal("y", 0.0, pm.math.exp(mu), observed=y_het), 0.4 * F,
                         "Normal (log link)"),
        "asymmetric-laplace": (lambda mu: pm.AsymmetricLaplace("y", b=2.0, q=0.8, mu=mu, observed=y_al), F,
                               "AsymmetricLaplace (identity link)"),
    }


FAMILIES = _families()
# each family's default route (likelihood.py): exact augmentation, log-link leaves, or the centred expansion
ROUTE = {"bernoulli-logit": "augment", "bernoulli-probit": "augment", "binomial-logit": "augment",
         "poisson-log": "loglink", "negbinomial-log": "expand", "gamma-log": "loglink", "student-t": "augment",
         "normal-logsd": "loglink", "asymmetric-laplace": "expand"}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_family_recovers_the_function(name):
    like, truth = FAMILIES[name][:2]

    def build():
        mu = _bart()
        like(mu)
        return mu

    _, idata = _fit(build)
    post = idata.posterior["mu"].mean(("chain", "draw")).values
    assert np.corrcoef(post, truth)[0, 1] > 0.85
    if ROUTE[name] == "augment":  # exact Gaussian pseudo-data: no correction, no acceptance to report
        assert "mu_mh_accept" not in idata.sample_stats
    else:
        accept = float(idata.sample_stats["mu_mh_accept"].mean())
        # measured 0.47 (asymmetric Laplace) to 0.9 (Poisson) at m = 20
        assert 0.3 < accept <= 1.0, accept


@pytest.mark.parametrize("name", list(FAMILIES))
def test_family_is_detected_from_the_graph(name):
    like, _, family = FAMILIES[name][:3]
    with pm.Model():
        mu = _bart()
        like(mu)
        step = pmt.GrowPruneStep([mu])
    assert step.working.family == family
    assert step.working.route == ROUTE[name]
    if ROUTE[name] != "augment":
        assert step.stats_dtypes_shapes["mu_mh_accept"] == (np.float64, [])
    else:
        assert "mu_mh_accept" not in step.stats_dtypes_shapes
    with pm.Model():  # every family takes the expansion route on request
        mu = _bart()
        like(mu)
        assert pmt.GrowPruneStep([mu], route="expand").working.route == "expand"


def test_detected_family_and_link_scale_leaf_prior():
    like = FAMILIES["poisson-log"][0]
    with pm.Model(), warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        mu = _bart(m=20)
        like(mu)
        step = pmt.CGMStep([mu])  # building the step is quiet: nothing is wrong yet
        assert not [w for w in said if "leaf prior" in str(w.message)]
        # a prior predictive check would draw with the leaf prior on the scale of Y: that is said there
        with pytest.warns(UserWarning, match="prior predictive draws of 'mu'"):
            pm.sample_prior_predictive(draws=2, random_seed=1)
    assert step.working.family == "Poisson (log link)"
    # defaulted leaf prior on the log scale: sd 3 / (k sqrt(m)), mean the best constant over m
    assert step.prior.s2 == pytest.approx((3.0 / (2.0 * np.sqrt(20))) ** 2)
    assert 20 * step.prior.mu0 == pytest.approx(np.log(FAMILIES["poisson-log"][3].mean()), abs=1e-6)
    with pm.Model(), warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")  # explicit leaf prior: the same everywhere, nothing to say
        mu = _bart(m=20, mu0=0.1, sigma_mu=0.2)
        like(mu)
        step = pmt.CGMStep([mu])
        pm.sample_prior_predictive(draws=2, random_seed=1)
    assert not [w for w in said if "leaf prior" in str(w.message)]
    with pm.Model(), warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")  # a Normal mean: the leaf prior is on the scale of Y everywhere
        mu = _bart(m=20)
        pm.Normal("y", mu, 1.0, observed=FAMILIES["poisson-log"][3])
        pm.sample_prior_predictive(draws=2, random_seed=1)
    assert not [w for w in said if "leaf prior" in str(w.message)]
    assert (step.prior.mu0, step.prior.s2) == (0.1, pytest.approx(0.04))


def _tiny_logit_matches_enumeration(likelihood):
    """``pm.sample`` with CGMStep on the tiny data, m = 1, Bernoulli-logit written by ``likelihood(mu, y)``,
    against enumeration x quadrature; returns the step."""
    codes, r, _ = tiny_data(0)
    y = (r > 0.25).astype(float)
    mu0 = float(special.logit(y.mean()))
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), y, m=1, mu0=mu0, sigma_mu=1.0)
        likelihood(mu, y)
        step = pmt.CGMStep([mu])
        # every 10th draw: the number of leaves has an ESS of 0.07-0.12 per draw here, on either route
        idata = pm.sample(tune=200, draws=20_000, chains=1, step=[step], random_seed=3, progressbar=False,
                          compute_convergence_checks=False)
    keys = partition_keys_from_values(idata.posterior["mu"].values.reshape(-1, len(y))[::10])

    def loglik(rows, m):
        return sum(special.log_expit(m if y[i] else -m) for i in rows)

    exact = exact_partition_posterior(codes, r, np.ones(7), 0.95, 2.0, mu0, 1.0,
                                      leaf_term=quadrature_leaf_term(loglik, mu0, 1.0))
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))
    return step


def test_pm_sample_matches_enumeration_bernoulli_logit():
    """The whole route (graph detection, record, correction) against enumeration x quadrature, m = 1."""
    step = _tiny_logit_matches_enumeration(lambda mu, y: pm.Bernoulli("y", logit_p=mu, observed=y))
    assert step.working.family == "Bernoulli (logit link)"


def test_pm_sample_with_a_potential_matches_enumeration():
    """pm.Potential likelihood (the PyTensor-graph route), m = 1, against enumeration x quadrature."""
    step = _tiny_logit_matches_enumeration(
        lambda mu, y: pm.Potential("loglik", pm.math.sum(y * mu - pt.softplus(mu))))
    assert step.working.family.startswith("PyTensor graph")
    assert step.working.native is not None  # lowered: the sweep never calls Python


def test_linear_term_with_nuts_is_recovered():
    z = RNG.normal(size=N)
    y = RNG.binomial(1, special.expit(F + 1.5 * z))

    def build():
        mu = _bart()
        beta = pm.Normal("beta", 0.0, 3.0)
        pm.Bernoulli("y", logit_p=mu + beta * z, observed=y)
        return mu

    _, idata = _fit(build, draws=300)
    beta = idata.posterior["beta"].values.ravel()
    assert abs(beta.mean() - 1.5) < 3 * beta.std() + 0.1


def test_hierarchical_intercepts_and_dims_under_poisson():
    """BART with dims plus group intercepts (NUTS) under a Poisson likelihood: the group effects are
    recovered next to the trees."""
    groups = np.arange(N) % 4
    effect = np.array([-0.6, -0.2, 0.2, 0.6])
    y = RNG.poisson(np.exp(1.0 + 0.5 * F + effect[groups])).astype(float)
    with pm.Model(coords={"obs": np.arange(N), "group": np.arange(4)}):
        mu = pmt.BART("mu", X, np.log1p(y), m=20, dims="obs")
        sd = pm.HalfNormal("sd", 1.0)
        alpha = pm.Normal("alpha", 0.0, sd, dims="group")
        pm.Poisson("y", pm.math.exp(mu + alpha[groups]), observed=y, dims="obs")
        idata = pm.sample(tune=200, draws=200, chains=1, step=[pmt.CGMStep([mu])], random_seed=4, progressbar=False,
                          compute_convergence_checks=False)
    assert idata.posterior["mu"].dims == ("chain", "draw", "obs")
    alpha = idata.posterior["alpha"].mean(("chain", "draw")).values
    # intercepts are identified up to a constant shared with the trees: compare centred values
    assert np.abs((alpha - alpha.mean()) - (effect - effect.mean())).max() < 0.2
    assert float(idata.sample_stats["mu_mh_accept"].mean()) > 0.3


def test_heteroskedastic_two_barts():
    sd = np.exp(0.5 * X[:, 2])
    y = F + RNG.normal(0.0, sd)
    with pm.Model():
        mean = pmt.BART("mean", X, y, m=20)
        logsd = pmt.BART("logsd", X, y, m=20)
        pm.Normal("y", mean, pm.math.exp(logsd), observed=y)
        idata = pm.sample(tune=200, draws=200, chains=1, step=[pmt.CGMStep([mean]), pmt.CGMStep([logsd])],
                          random_seed=2, progressbar=False, compute_convergence_checks=False)
    post = idata.posterior
    assert np.corrcoef(post["mean"].mean(("chain", "draw")), F)[0, 1] > 0.9
    assert np.corrcoef(post["logsd"].mean(("chain", "draw")), 0.5 * X[:, 2])[0, 1] > 0.7
    assert "mean_mh_accept" not in idata.sample_stats  # Normal in the mean: exact, no correction
    assert float(idata.sample_stats["logsd_mh_accept"].mean()) > 0.3  # measured 0.49


def _graph_cases():
    lam = np.exp(0.5 * F + 1.0)
    y_gamma = RNG.gamma(4.0, lam / 4.0)
    p = special.expit(F)
    y_bin = RNG.binomial(1, p).astype(float)
    y_exp = RNG.exponential(lam)

    def custom_logp(value, eta):
        return value * eta - pt.softplus(eta)

    return {
        # the BART value in both parameters of PyMC's Gamma (alpha = mu^2/sigma^2, beta = mu/sigma^2)
        "gamma-mu-sigma": (lambda mu: pm.Gamma("y", mu=pm.math.exp(mu), sigma=pm.math.exp(mu) / 2.0,
                                               observed=y_gamma), np.log(lam)),
        "exponential": (lambda mu: pm.Exponential("y", lam=pm.math.exp(-mu), observed=y_exp), np.log(lam)),
        "potential": (lambda mu: pm.Potential("loglik", pm.math.sum(y_bin * mu - pt.softplus(mu))), F),
        "customdist": (lambda mu: pm.CustomDist("y", mu, logp=custom_logp, observed=y_bin), F),
    }


GRAPH = _graph_cases()


@pytest.mark.parametrize("name", list(GRAPH))
def test_other_elementwise_likelihoods_take_the_graph_route(name):
    like, truth = GRAPH[name]

    def build():
        mu = _bart()
        like(mu)
        return mu

    model, idata = _fit(build)
    with model:
        step = pmt.CGMStep([model["mu"]])
    assert step.working.family.startswith("PyTensor graph")
    post = idata.posterior["mu"].mean(("chain", "draw")).values
    assert np.corrcoef(post, truth)[0, 1] > 0.85
    assert 0.3 < float(idata.sample_stats["mu_mh_accept"].mean()) <= 1.0


@pytest.mark.parametrize(
    ("like", "match"),
    [
        (lambda mu, y: pm.Bernoulli("y", logit_p=mu - mu.mean(), observed=y), "couples different rows"),
        (lambda mu, y: pm.Normal("z", pm.math.exp(mu), 1.0), "unobserved"),
    ],
    ids=["rows-coupled", "latent"],
)
def test_what_the_steps_cannot_sample_is_refused_before_sampling(like, match):
    with pm.Model():
        mu = _bart()
        like(mu, (F > 0).astype(float))
        with pytest.raises(NotImplementedError, match=match):
            pmt.CGMStep([mu])


def test_a_chain_that_cannot_move_says_so(caplog):
    """One tree on small counts with the leaf prior mean 2 prior sds below the data: on the expansion route the
    correction rejects nearly every proposal and the step warns at the chain's end, naming the variable and the
    rate (as PyMC warns of divergences); the default route moves and is silent."""
    y = np.array([0.0, 1, 2, 3, 4, 5, 6, 7])
    X8 = np.arange(8.0)[:, None]
    rates = {}
    for route in ("expand", "auto"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="pymc"), pm.Model():
            mu = pmt.BART("mu", X8, y, m=1, mu0=float(np.log(y.mean())) - 3.0, sigma_mu=1.5)
            pm.Poisson("y", mu=pm.math.exp(mu), observed=y)
            idata = pm.sample(tune=100, draws=300, chains=1, step=[pmt.CGMStep([mu], route=route)], random_seed=3,
                              progressbar=False, compute_convergence_checks=False)
        said = [r.getMessage() for r in caplog.records if "The tree step of 'mu'" in r.getMessage()]
        table = pmt.diagnostics.acceptance(idata, "mu")
        rates[route] = float(table["mh_accept"].iloc[0])
        assert bool(table["frozen"].iloc[0]) == (route == "expand")
        if route == "expand":
            assert len(said) == 1 and "CGMStep" in said[0] and "route=\"auto\"" in said[0], said
            assert f"kept {rates[route]:.1%}" in said[0]
        else:
            assert not said, said
    assert rates["expand"] < pmt.diagnostics.FROZEN_MH < 0.5 < rates["auto"], rates


@pytest.mark.parametrize(("name", "k"), [("bernoulli-logit", 0.75), ("bernoulli-probit", 2.0), ("poisson-log", 2.0),
                                         ("negbinomial-log", 2.0), ("gamma-log", 3.0), ("student-t", None),
                                         ("asymmetric-laplace", None)])
def test_default_leaf_prior_on_each_scale(name, k):
    """The leaf prior sd the step takes by default: 3 / (k sqrt(m)) with the link's k (BART's LINK_K, chosen by
    held-out log score), the scale of Y's rule for an identity link; a k passed to BART is kept."""
    like = FAMILIES[name][0]
    m = 20
    with pm.Model():
        mu = _bart(m=m)
        like(mu)
        step = pmt.CGMStep([mu])
    expected = mu.owner.op.sigma_mu if k is None else 3.0 / (k * np.sqrt(m))
    assert np.sqrt(step.prior.s2) == pytest.approx(expected)
    if k is not None:
        with pm.Model():
            mu = _bart(m=m, k=1.5)
            like(mu)
            assert np.sqrt(pmt.CGMStep([mu]).prior.s2) == pytest.approx(3.0 / (1.5 * np.sqrt(m)))
