"""Non-Gaussian likelihoods on the expansion route: every sampler of the registry against the exact posterior
(m = 1).

The expansion route (``route="expand"``, and the route of the asymmetric Laplace and of the PyTensor graph)
expands the log-likelihood at the other trees' fit plus the leaf prior mean and corrects by
Metropolis-Hastings. The default routes of the other families (augmentation, log-link leaves) are proven in
tests/test_routes.py.

The exact answer enumerates every tree of the tiny data set (tests/helpers/exact.py) with each leaf's
marginal likelihood computed by quadrature over the leaf value, from scipy's log densities (not the
package's). The chain is the step's own sweep with the likelihood record the step builds
(``routes.family_record.FamilyLik``), so each tree update is the sampler's working-model kernel plus
the Metropolis-Hastings correction. Thresholds: the 99.9% quantile of the TV distance of iid
multinomial samples of the same size, as everywhere.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

from pymc_treesamplers.routes.graph import graph_lik, register_host
from pymc_treesamplers.routes.observation import ASYM_LAPLACE, LOGIT2, POISSON_LOG, PROBIT2, row_terms
from pymc_treesamplers.testing import UncorrectedFamily
from tests.helpers.exact import (
    empirical,
    exact_partition_posterior,
    quadrature_leaf_term,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.kernel_chain import chain_draws
from tests.helpers.samplers import SAMPLERS

CODES, R, _ = tiny_data(0)
N_DRAWS = 5000
Y_BINARY = (R > 0.25).astype(float)
Y_COUNT = np.array([0.0, 1.0, 6.0, 0.0, 3.0, 2.0, 5.0])
# asymmetric Laplace (quantile regression at q = 0.3) of the continuous response: scipy's
# laplace_asymmetric(kappa, loc=mu, scale=1/b) is PyMC's AsymmetricLaplace(b, kappa, mu)
# (test_asymmetric_laplace_terms checks both). Its working curvature is the Fisher information b^2,
# which overstates how well a leaf of a few rows pins its value (the log-likelihood is piecewise
# linear, nearly flat between the rows): at b = 2 the refined proposal is too narrow (MH acceptance
# 0.16-0.19) and the chains sat above the threshold at twice the registry's thinning (TV 0.046-0.070
# vs 0.038) and just under it at ten times (CGM 0.035); at b = 1 (acceptance 0.44-0.54) they sit at
# noise level at the same thinning as Bernoulli-logit, and the uncorrected chain is far off (CGM TV 0.46)
AL_B, AL_Q = 1.0, 0.3
AL_KAPPA = float(np.sqrt(AL_Q / (1.0 - AL_Q)))

# name: (family record arguments (kind, u, v, s, refine: leaves from the Newton-refined proposal or the
# working conditional; both routes are covered), the rows' log-likelihood at leaf value mu, via scipy,
# the leaf prior mean (the package's default for m = 1: the link of mean(Y)), the thinning factor over
# the registry's Gaussian thinning). A single tree is the hardest case for the correction: the whole
# fit moves with the tree, so the expansion at the leaf prior mean is far from the larger counts'
# leaves (MH acceptance with working-conditional leaves 0.95 logit, 0.85 probit, 0.38 Poisson here; with
# Newton-refined leaves 0.96, 0.91, 0.77), and kept states must be further
# apart: at the registry's thinning the Poisson chains sat above the threshold (CGM 0.0179 vs 0.0179,
# CT 0.030 vs 0.025, PG 0.066 vs 0.025); at 5x most fell to noise level but PG (0.0251 vs 0.0247) and,
# at 2x, CT probit (0.0285 vs 0.0272) did not; at 10x and 4x they did (PG 0.022, CT 0.014 / 0.018
# over two seeds). So every chain keeps N_DRAWS states (a quarter or half of the registry's) at twice
# the factor below times the registry's thinning.
FAMILIES = {
    "bernoulli-logit": ((LOGIT2, Y_BINARY, 1.0 - Y_BINARY, 0.0, False),
                        lambda rows, mu: sum(special.log_expit(mu if Y_BINARY[i] else -mu) for i in rows),
                        float(special.logit(Y_BINARY.mean())), 1),
    "bernoulli-probit": ((PROBIT2, Y_BINARY, 1.0 - Y_BINARY, 0.0, True),
                         lambda rows, mu: sum(special.log_ndtr(mu if Y_BINARY[i] else -mu) for i in rows),
                         float(special.ndtri(Y_BINARY.mean())), 2),
    "poisson-log": ((POISSON_LOG, Y_COUNT, 0.0, 0.0, True, None, False),
                    lambda rows, mu: sum(stats.poisson.logpmf(Y_COUNT[i], np.exp(mu)) for i in rows),
                    float(np.log(Y_COUNT.mean())), 5),
    "asymmetric-laplace": ((ASYM_LAPLACE, R, AL_B, AL_KAPPA, True),
                           lambda rows, mu: sum(stats.laplace_asymmetric.logpdf(R[i], AL_KAPPA, loc=mu,
                                                                                scale=1.0 / AL_B) for i in rows),
                           float(np.quantile(R, AL_Q)), 1),
}


def _exact(name):
    _, loglik, mu0, _ = FAMILIES[name]
    return exact_partition_posterior(CODES, R, np.ones(7), 0.95, 2.0, mu0, 1.0,
                                     leaf_term=quadrature_leaf_term(loglik, mu0, 1.0))


def _entries():
    return [pytest.param(s, id=s.name) for s in SAMPLERS if s.posterior is not None]


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("s", _entries())
def test_posterior_matches_enumeration_with_quadrature(s, family):
    _, _, thin, seed = s.posterior
    n_draws, thin = N_DRAWS, 2 * thin * FAMILIES[family][3]
    counts = []
    keys = chain_draws(s.step, s.options, CODES, R, None, n_draws, thin, seed, family=FAMILIES[family][0],
                       mu0=FAMILIES[family][2], counts=counts)
    exact = _exact(family)
    tv = tv_distance(exact, empirical(keys))
    threshold = tv_threshold(exact, n_draws)
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f} (MH acceptance {counts[1] / counts[0]:.3f})"
    assert 0.0 < counts[1] <= counts[0]
    print(f"{s.name} {family}: TV {tv:.4f} < {threshold:.4f}, MH acceptance {counts[1] / counts[0]:.3f}")


@pytest.mark.parametrize("family", ["bernoulli-logit", "poisson-log"])
def test_dropping_the_working_likelihood_is_detected(family):
    """The same check fails when the correction omits the working-likelihood term (it can fail)."""
    s = next(s for s in SAMPLERS if s.name == "cgm")
    _, _, thin, seed = s.posterior
    n_draws, thin = N_DRAWS, 2 * thin * FAMILIES[family][3]
    keys = chain_draws(s.step, s.options, CODES, R, None, n_draws, thin, seed,
                       family=(*FAMILIES[family][0][:4], False, UncorrectedFamily, False), mu0=FAMILIES[family][2])
    exact = _exact(family)
    assert tv_distance(exact, empirical(keys)) > tv_threshold(exact, n_draws)


@pytest.mark.parametrize("kind", [LOGIT2, PROBIT2, POISSON_LOG])
def test_row_terms_match_scipy_and_finite_differences(kind):
    u, v = (3.0, 2.0) if kind != POISSON_LOG else (4.0, 0.0)
    ref = {LOGIT2: lambda e: u * special.log_expit(e) + v * special.log_expit(-e),
           PROBIT2: lambda e: u * special.log_ndtr(e) + v * special.log_ndtr(-e),
           POISSON_LOG: lambda e: u * e - np.exp(e)}[kind]
    for eta in (-30.0, -3.0, -0.2, 0.0, 0.7, 4.0, 30.0):
        if kind == POISSON_LOG and abs(eta) > 5:
            continue
        l, dl, h = row_terms(kind, u, v, 0.0, eta)
        assert l == pytest.approx(ref(eta), rel=1e-9, abs=1e-9)
        eps = 1e-5
        assert dl == pytest.approx((ref(eta + eps) - ref(eta - eps)) / (2 * eps), rel=1e-5, abs=1e-6)
        eps = 1e-4  # second differences: larger step against rounding
        d2 = (ref(eta + eps) - 2 * ref(eta) + ref(eta - eps)) / eps**2
        assert h > 0 and h == pytest.approx(-d2, rel=1e-3, abs=1e-5)


def test_asymmetric_laplace_terms():
    """The family's log-likelihood and score against scipy, its curvature against the Fisher
    information of the location computed from scipy's distribution (the observed curvature is zero)."""
    b, kappa, mu = 1.7, 0.6, 0.3
    dist = stats.laplace_asymmetric(kappa, loc=mu, scale=1.0 / b)
    ys = np.array([-2.0, -0.1, 0.35, 3.0])
    pymc_logp = pm.logp(pm.AsymmetricLaplace.dist(b=b, kappa=kappa, mu=mu), ys).eval()
    np.testing.assert_allclose(pymc_logp, dist.logpdf(ys), rtol=1e-6)  # the parametrisation of the test
    const = np.log(b / (kappa + 1.0 / kappa))  # the density's eta-free term, left out of l
    for y in ys:
        l, dl, h = row_terms(ASYM_LAPLACE, y, b, kappa, mu)
        assert l + const == pytest.approx(dist.logpdf(y), rel=1e-12)
        eps = 1e-6
        fd = (stats.laplace_asymmetric.logpdf(y, kappa, loc=mu + eps, scale=1.0 / b)
              - stats.laplace_asymmetric.logpdf(y, kappa, loc=mu - eps, scale=1.0 / b)) / (2 * eps)
        assert dl == pytest.approx(fd, rel=1e-6)
        # the score is b kappa above mu and -b / kappa below: mean zero, variance b^2
        below = dist.cdf(mu)
        assert below == pytest.approx(kappa**2 / (1.0 + kappa**2))
        assert (1.0 - below) * b * kappa - below * b / kappa == pytest.approx(0.0, abs=1e-12)
        assert h == pytest.approx((1.0 - below) * (b * kappa) ** 2 + below * (b / kappa) ** 2, rel=1e-12)


class LogitHost:
    """Bernoulli-logit likelihood in numpy, as a host of the graph record (any elementwise likelihood)."""

    def derivs(self, f, grad, curv):
        p = special.expit(f)
        grad[:] = Y_BINARY - p
        curv[:] = p * (1.0 - p)

    def loglik(self, f):
        return float(special.log_expit(np.where(Y_BINARY > 0, f, -f)).sum())


@pytest.mark.parametrize("s", [e for e in _entries() if e.id in ("cgm", "pg")])
def test_graph_record_matches_enumeration(s):
    """The host-evaluated route (what any other elementwise likelihood takes) against enumeration.

    Its record differs from the family record only in where the log-likelihood comes from; the driver
    and the samplers' updates are the same code, so two samplers (an MH move and the conditional SMC)
    cover it without compiling every sampler a third time."""
    _, _, thin, seed = s.posterior
    key = register_host(LogitHost())
    counts = []
    keys = chain_draws(s.step, s.options, CODES, R, None, N_DRAWS, 2 * thin, seed, mu0=FAMILIES["bernoulli-logit"][2],
                       family=lambda f, mu0: graph_lik(key, mu0, f), counts=counts)
    exact = _exact("bernoulli-logit")
    tv = tv_distance(exact, empirical(keys))
    assert tv < tv_threshold(exact, N_DRAWS), f"TV {tv:.4f} (MH acceptance {counts[1] / counts[0]:.3f})"


def test_the_record_follows_the_other_variables_between_draws():
    """A family's record keeps the link's intercept and slope and the family's data between draws while the other
    values stay the same: when PyMC moves another variable (the Gamma's shape, the log mean's intercept), the
    record is that of the new values, equal to one a fresh working model builds there."""
    import pymc_treesamplers as pmt

    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(30, 2)), rng.gamma(2.0, 1.0, size=30)

    def working(shape, intercept):
        with pm.Model():
            mu = pmt.BART("mu", X, y, m=3)
            alpha = pm.HalfNormal("alpha", 2.0, initval=shape)
            c = pm.Normal("c", 0.0, 1.0, initval=intercept)
            pm.Gamma("y", alpha=alpha, beta=alpha / pm.math.exp(c + mu), observed=y)
            step = pmt.CGMStep([mu])
        return step, step.outputs[0].working

    step, model = working(2.0, 0.0)
    f = rng.normal(size=30)
    first = model.record(f)
    for name, value in (("alpha_log__", np.log(3.0)), ("c", 0.4)):
        step.shared[name].set_value(np.asarray(value))
    moved = model.record(f)
    fresh = working(3.0, 0.4)[1].record(f)
    for field in ("u", "v", "a", "b"):
        np.testing.assert_allclose(getattr(moved, field), getattr(fresh, field), rtol=1e-12)
    assert not np.allclose(moved.a, first.a) and not np.allclose(moved.v, first.v)
