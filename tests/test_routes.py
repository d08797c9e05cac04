"""The exact likelihood routes against enumeration x quadrature, with the leaf prior far from the data.

The default route of every non-Gaussian family (docs/likelihoods.md): latents that make the likelihood
Gaussian (Polya-Gamma for logit, Albert-Chib for probit, a gamma scale for Student-t; drawn afresh before
every sweep, as the step does at every draw), exact leaf sums with Laplace leaves (Poisson, Gamma, a log
sd), or the Gaussian expansion at the other trees' fit plus the constant that fits best there (negative
binomial). One tree on the 7 rows of tests/helpers/exact.py, each leaf's marginal likelihood computed by
quadrature over the leaf value from scipy's densities.

The leaf prior mean sits ``OFF`` prior sds below the data's constant fit, with the one-tree default sd:
the setting where the expansion at the prior mean froze every sampler (Poisson: acceptance 0.000-0.04,
TV 0.14-0.99; the negative binomial's expansion route, now centred, is here too). Each chain must keep a
Metropolis-Hastings acceptance of at least 0.3 where there is a correction, keep an ESS of its number of
leaves of at least 2000 over its 5000 kept states, and match the exact partition posterior within the
99.9% quantile of the TV distance of iid multinomial samples. A deliberately wrong version of each route
must fail the same check.
"""

import numpy as np
import pytest
from scipy import special, stats

from pymc_treesamplers.results.diagnostics import bulk_ess
from pymc_treesamplers.routes.augment import augmented
from pymc_treesamplers.routes.family_record import family_lik
from pymc_treesamplers.routes.observation import (
    GAMMA_LOGSCALE,
    LOGIT2,
    NORMAL_LOGSD,
    POISSON_LOG,
    PROBIT2,
    STUDENT_T,
)
from pymc_treesamplers.testing import LikelihoodOnlyLogLink, UncorrectedFamily, UntiltedAugmented
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
N = len(R)
N_DRAWS = 5000
SD = 1.5  # the default leaf sd of one tree on a link scale, 3 / (k sqrt(m)) with k = 2, m = 1
OFF = 2.0
Y_BINARY = (R > 0.25).astype(float)
Y_TRIALS = np.array([0.0, 1.0, 3.0, 0.0, 3.0, 1.0, 2.0])  # successes of 3 trials
Y_COUNT = np.array([0.0, 1.0, 6.0, 0.0, 3.0, 2.0, 5.0])
Y_POSITIVE = np.exp(R)
NB_ALPHA, T_NU, T_SIGMA, GAMMA_SHAPE = 2.0, 3.0, 0.5, 4.0
ONES = np.ones(N)


def _family(kind, u, v, s):
    return lambda f, mu0: family_lik(kind, u, v, s, 0.0, 1.0, mu0, SD**2, f)


def _nb(f, mu0, record=None):
    # logit p = log(alpha) - f: the mean count is exp(f); the expansion route (centred at the best constant)
    lik = family_lik(LOGIT2, NB_ALPHA, Y_COUNT, 0.0, np.log(NB_ALPHA), -1.0, mu0, SD**2, f)
    return lik if record is None else record(*lik)


# name: (the record the chain runs on, given the initial fit and the leaf prior mean; the rows' log-likelihood
# at leaf value mu from scipy; the constant fit on the link scale (the data's centre); the samplers it runs
# for (None: every sampler of the registry); the thinning factor over the registry's posterior thinning)
ROUTES = {
    "poisson": (_family(POISSON_LOG, Y_COUNT, 0.0, 0.0),
                lambda rows, mu: sum(stats.poisson.logpmf(Y_COUNT[i], np.exp(mu)) for i in rows),
                np.log(Y_COUNT.mean()), None, 1),
    "negative-binomial": (_nb,
                          lambda rows, mu: sum(stats.nbinom.logpmf(Y_COUNT[i], NB_ALPHA,
                                                                   NB_ALPHA / (NB_ALPHA + np.exp(mu))) for i in rows),
                          np.log(Y_COUNT.mean()), None, 1),
    "bernoulli-logit": (lambda f, mu0: augmented(LOGIT2, Y_BINARY, 1.0 - Y_BINARY, 0.0, 0.0, 1.0, N),
                        lambda rows, mu: sum(special.log_expit(mu if Y_BINARY[i] else -mu) for i in rows),
                        special.logit(Y_BINARY.mean()), None, 1),
    "bernoulli-probit": (lambda f, mu0: augmented(PROBIT2, Y_BINARY, 1.0 - Y_BINARY, 0.0, 0.0, 1.0, N),
                         lambda rows, mu: sum(special.log_ndtr(mu if Y_BINARY[i] else -mu) for i in rows),
                         special.ndtri(Y_BINARY.mean()), None, 1),
    "binomial-logit": (lambda f, mu0: augmented(LOGIT2, Y_TRIALS, 3.0 - Y_TRIALS, 0.0, 0.0, 1.0, N),
                       lambda rows, mu: sum(stats.binom.logpmf(Y_TRIALS[i], 3, special.expit(mu)) for i in rows),
                       special.logit(Y_TRIALS.mean() / 3.0), ("cgm", "pg"), 1),
    "student-t": (lambda f, mu0: augmented(STUDENT_T, R, T_NU, T_SIGMA, 0.0, 1.0, N),
                  lambda rows, mu: sum(stats.t.logpdf(R[i], T_NU, loc=mu, scale=T_SIGMA) for i in rows),
                  np.median(R), ("cgm", "pg"), 1),
    "gamma": (_family(GAMMA_LOGSCALE, Y_POSITIVE, GAMMA_SHAPE, 0.0),
              lambda rows, mu: sum(stats.gamma.logpdf(Y_POSITIVE[i], GAMMA_SHAPE, scale=np.exp(mu)) for i in rows),
              np.log(Y_POSITIVE.mean() / GAMMA_SHAPE), ("cgm", "pg"), 1),
    "normal-log-sd": (_family(NORMAL_LOGSD, R**2, 0.0, 0.0),
                      lambda rows, mu: sum(stats.norm.logpdf(R[i], 0.0, np.exp(mu)) for i in rows),
                      0.5 * np.log(np.mean(R**2)), ("cgm", "pg"), 1),
}


def _mu0(name):
    return float(ROUTES[name][2]) - OFF * SD


def _exact(name, mu0=None):
    mu0 = _mu0(name) if mu0 is None else mu0
    return exact_partition_posterior(CODES, R, ONES, 0.95, 2.0, mu0, SD,
                                     leaf_term=quadrature_leaf_term(ROUTES[name][1], mu0, SD))


def _run(s, name, record=None, leaf_exp=None, thin_factor=None):
    make, _, _, _, factor = ROUTES[name]
    _, _, thin, seed = s.posterior
    counts = []
    mu0 = _mu0(name)
    family = (lambda f, m0: record(f, m0)) if record is not None else make
    keys = chain_draws(s.step, s.options, CODES, R, None, N_DRAWS, 2 * thin * (thin_factor or factor), seed,
                       mu0=mu0, sigma_mu=SD, family=family, counts=counts, leaf_exp=leaf_exp)
    return keys, counts


def _entries():
    return [pytest.param(s, name, id=f"{name}-{s.name}") for name, spec in ROUTES.items() for s in SAMPLERS
            if s.posterior is not None and (spec[3] is None or s.name in spec[3])]


@pytest.mark.parametrize(("s", "name"), _entries())
def test_route_matches_enumeration_far_from_the_prior_mean(s, name):
    keys, counts = _run(s, name)
    exact = _exact(name)
    tv = tv_distance(exact, empirical(keys))
    threshold = tv_threshold(exact, N_DRAWS)
    leaves = np.array([max(k) + 1 for k in keys], dtype=float)
    ess = bulk_ess(leaves[None, :])
    acc = counts[1] / counts[0] if counts else 1.0  # no correction: every proposal is kept
    print(f"{s.name} {name}: TV {tv:.4f} (threshold {threshold:.4f}), ESS of the leaves {ess:.0f}, "
          f"MH acceptance {acc:.3f}")
    assert acc >= 0.3, f"MH acceptance {acc:.3f}"
    assert ess >= 2000, f"ESS of the number of leaves {ess:.0f} over {N_DRAWS} kept states"
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f} (MH acceptance {acc:.3f}, ESS {ess:.0f})"


CGM = next(s for s in SAMPLERS if s.name == "cgm")


def _detected(name, **kwargs):
    keys, _ = _run(CGM, name, **kwargs)
    exact = _exact(name)
    tv = tv_distance(exact, empirical(keys))
    threshold = tv_threshold(exact, N_DRAWS)
    print(f"{name} {kwargs}: TV {tv:.4f} (threshold {threshold:.4f})")
    return tv > threshold


def test_untilted_polya_gamma_latents_are_detected():
    """Polya-Gamma latents drawn as PG(1, 0), without their tilt by the current log-odds."""
    assert _detected("bernoulli-logit", record=lambda f, mu0: UntiltedAugmented(
        *augmented(LOGIT2, Y_BINARY, 1.0 - Y_BINARY, 0.0, 0.0, 1.0, N)))


def test_log_link_correction_by_the_likelihood_alone_is_detected():
    assert _detected("poisson", record=lambda f, mu0: LikelihoodOnlyLogLink(*ROUTES["poisson"][0](f, mu0)))


def test_log_link_kernels_without_the_laplace_leaves_are_detected():
    """The kernels integrate the leaves as Gaussian pseudo-data (the tree prior not told about the log-link
    rows) while the correction assumes the Laplace marginals."""
    assert _detected("poisson", leaf_exp=0.0)


def test_negative_binomial_correction_without_the_working_likelihood_is_detected():
    assert _detected("negative-binomial", record=lambda f, mu0: _nb(f, mu0, UncorrectedFamily))


def test_the_supported_families_are_named_from_their_record():
    """Adding a family is one entry of reading.FAMILIES: its name is the PyMC distribution of that op, and the
    refusal of any other likelihood (SUPPORTED) names every family, after the exact Gaussian route."""
    import pymc as pm

    from pymc_treesamplers.routes.reading import FAMILIES, GAUSSIAN_ROUTE, SUPPORTED

    for op, family in FAMILIES.items():
        assert getattr(pm, family.name).rv_type is op
        assert f"{family.name} ({family.enters})" in SUPPORTED
    assert SUPPORTED.startswith(GAUSSIAN_ROUTE)
    assert SUPPORTED.count("(") == len(FAMILIES) + 1
