"""Leaves that hold a coefficient vector on a basis of several columns, in the engine (engine/basisleaf.py).

Each leaf holds ``beta ~ N(mu0, diag(s2))`` and a tree contributes ``B_i . beta_leaf(i)`` at row ``i``; the
partitions are shared by the columns. The leaf algebra is checked against the rows' Gaussian density written
out (tests/helpers/exact.py), and Particle Gibbs on such leaves (the SMC core through the leaf-model
interface, then the leaves' draws and the fit in the backfitting driver) against enumeration of every tree,
with one tree and with two (the backfitting). A sampler that ignores the basis fails the same test, and an
all-ones basis of one column gives constant leaves' draws.
"""

import functools

import numpy as np
import pymc as pm
import pytest
from scipy import special

import pymc_treesamplers as pmt
from pymc_treesamplers.engine.basisleaf import add_basis_fit, basis_draw, basis_marginal, basis_rows, basis_width
from pymc_treesamplers.engine.forest import Forest, init_roots
from pymc_treesamplers.engine.nodes import COEF, END, LEFT, START, VALUE
from pymc_treesamplers.engine.records import Pseudo, TreePrior, basis_pseudo, split_data, tree_of
from pymc_treesamplers.engine.smc import PROPOSAL_PRIOR, RESAMPLE_SYSTEMATIC, SMCOptions
from pymc_treesamplers.engine.updates.pg import new_pg_scratch
from tests.helpers.exact import (
    basis_leaf_term,
    empirical,
    exact_pair_posterior,
    exact_partition_posterior,
    partition_key,
    partition_keys_from_values,
    quadrature_basis_term,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.fits import assert_state_resumes, forest_partition_keys, leaf_proposal
from tests.helpers.kernel_chain import leaf_model_chain
from tests.helpers.samplers import MAIN

PRIOR = TreePrior(0.95, 2.0, 0.0, 1.0)
MU0 = np.array([0.2, -0.1])
SD = np.array([1.0, 0.7])
# Unit weights, as tests/test_pg.py: the indicator of the most likely partition then has an autocorrelation time
# of about 1 sweep. With the tiny data's weight 4 it is 50-160 sweeps (Particle Gibbs with 10 particles is
# sticky on that sharper posterior), too slow for a unit test; 500,000 sweeps there matched every partition of
# mass above 0.03 to within 0.01 all the same.
W = np.ones(7)
THIN = 5
# grow/prune cannot move a split without pruning it first (tests/helpers/samplers.py): at 5 its TV sat at
# 0.8-1.6x the threshold over three seeds, at 50 at 0.4-0.9x, as the constant leaves' registry thins it
THIN_OF = {"growprune": 50, "ct": 100, "ct-rotate-change": 20}  # CT: about 100 time units between kept states


def _basis(n=7, seed=3):
    """An intercept and a slope on a covariate the trees do not split on (with a zero and a negative)."""
    x = np.random.default_rng(seed).normal(size=n)
    x[1] = 0.0
    return np.column_stack([np.ones(n), x])


def _random_partition(rng, n, k):
    labels = rng.integers(0, k, size=n)
    return [np.flatnonzero(labels == g) for g in range(k) if np.any(labels == g)]


def test_marginal_is_the_rows_density_up_to_a_partition_free_term():
    """Sum over leaves of the leaf marginal minus the rows' Gaussian log density (written out) is the same for
    every partition: the engine's marginal is exact up to a constant."""
    rng = np.random.default_rng(0)
    n = 9
    B = np.column_stack([np.ones(n), rng.normal(size=n), rng.uniform(-1, 1, size=n)])
    r, w = rng.normal(size=n), rng.uniform(0.5, 3.0, size=n)
    bp = basis_pseudo(r, w, B, np.array([0.3, 0.0, -0.2]), np.array([1.0, 0.5, 2.0]))
    exact = basis_leaf_term(r, w, B, bp.mu0, np.sqrt(bp.s2))
    perm = np.arange(n, dtype=np.int32)
    st = np.empty(basis_width(bp))
    gaps = []
    for k in (1, 2, 3, 5, 9):
        leaves = _random_partition(rng, n, k)
        total = 0.0
        for rows in leaves:
            basis_rows(bp, rows.astype(np.int32), 0, len(rows), st, -1)
            total += basis_marginal(PRIOR, bp, st) - exact(rows)
        gaps.append(total)
    assert np.ptp(gaps) < 1e-10
    basis_rows(bp, perm, 0, 0, st, -1)
    assert abs(basis_marginal(PRIOR, bp, st)) < 1e-12  # a leaf without rows adds nothing


def test_coefficient_draws_have_the_conditional_moments():
    rng = np.random.default_rng(1)
    n = 6
    B = np.column_stack([np.ones(n), rng.normal(size=n)])
    r, w = rng.normal(size=n), np.full(1, 2.0)
    bp = basis_pseudo(r, w, B, MU0, SD**2)
    st = np.empty(basis_width(bp))
    basis_rows(bp, np.arange(n, dtype=np.int32), 0, n, st, -1)
    A = 2.0 * B.T @ B + np.diag(1 / SD**2)
    cov = np.linalg.inv(A)
    mean = cov @ (2.0 * B.T @ r + MU0 / SD**2)
    draws = np.empty((40_000, 2))
    for k in range(draws.shape[0]):
        basis_draw(rng, bp, st, draws[k])
    se = np.sqrt(np.diag(cov) / draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4.5 * se)
    assert np.allclose(np.cov(draws.T), cov, rtol=0.05, atol=0.002)


def test_a_tree_fit_is_its_coefficients_times_the_basis():
    codes, _, _ = tiny_data(0)
    B = _basis()
    data = split_data(np.ascontiguousarray(codes.T), np.ones(2))
    forest = Forest.empty(1, 7, cap=8, coefs=2)
    init_roots(forest.arrays(), data, 0.0)
    forest.floats[0, 0, COEF:] = [0.5, -2.0]
    out = np.ones(7)
    add_basis_fit(tree_of(forest.arrays(), 0), basis_pseudo(out, np.ones(1), B, 0.0, 1.0), out, -1.0)
    assert np.allclose(out, 1.0 - B @ [0.5, -2.0])


SAMPLERS = ("cgm", "growprune", "reshape", "pg-prior", "pg-optimal", "ct", "ct-rotate-change")


def _basis_chain(sampler, codes_np, r, w, basis, mu0, sd, n_draws, thin, seed, m=1, constant=False):
    """Partition keys of a chain of ``m`` trees with basis leaves on fixed pseudo-data (the record itself is the
    running residual: the forest starts with every coefficient at 0); with ``constant``, the same chain on
    constant leaves (``Pseudo``), for the all-ones comparison. Also the last forest and the record."""
    if constant:
        prior = TreePrior(0.95, 2.0, float(mu0), float(sd) ** 2)
        lik = Pseudo(np.array(r, dtype=float), np.asarray(w, dtype=float), 1)
    else:
        prior = PRIOR
        lik = basis_pseudo(np.array(r, dtype=float), w, basis, mu0, np.asarray(sd) ** 2)
    labels, _, forest = leaf_model_chain(sampler, codes_np, prior, lik, n_draws, thin, seed, m)
    if m == 1:
        return [partition_key(row[0]) for row in labels], forest, lik
    return [tuple(partition_key(t) for t in row) for row in labels], forest, lik


def _slope_data():
    """The tiny data with a slope that differs between the cells of column 1, the basis, and the exact
    partition posterior under it."""
    codes, r, _ = tiny_data(0)
    B = _basis()
    r = r + 1.5 * B[:, 1] * (codes[:, 1] == 1)
    exact = exact_partition_posterior(codes, r, W, 0.95, 2.0, 0.0, 1.0, leaf_term=basis_leaf_term(r, W, B, MU0, SD))
    return codes, r, B, exact


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_basis_leaves_match_enumeration(sampler):
    """m = 1, d = 2 (intercept and slope): the partitions match enumeration, and the running residual stays the
    data minus the tree's fit."""
    codes, r, B, exact = _slope_data()
    n_draws = 6000
    keys, forest, lik = _basis_chain(sampler, codes, r, W[:1], B, MU0, SD, n_draws, THIN_OF.get(sampler, THIN), 11)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, n_draws)
    fit = np.zeros(7)
    add_basis_fit(tree_of(forest.arrays(), 0), lik, fit, 1.0)
    assert np.allclose(lik.r, r - fit)


def test_a_grow_from_root_warm_start_on_basis_leaves_keeps_the_residual():
    """GFR (a warm start, not a kernel: no posterior to match) grows trees on basis leaves and leaves the record's
    residual the data minus the forest's fit."""
    codes, r, B, _ = _slope_data()
    keys, forest, lik = _basis_chain("gfr", codes, r, W[:1], B, MU0, SD, 20, 1, 3, m=2)
    assert len({k for pair in keys for k in pair}) > 1  # the trees were regrown, not left as roots
    fit = np.zeros(7)
    for j in range(2):
        add_basis_fit(tree_of(forest.arrays(), j), lik, fit, 1.0)
    assert np.allclose(lik.r, r - fit)


@pytest.mark.parametrize("sampler", ["cgm", "pg-prior", "ct"])
def test_a_sampler_that_ignores_the_basis_fails_enumeration(sampler):
    """The same chain given a basis of ones in place of the slope column (the basis ignored) is far from the
    exact posterior under the true basis."""
    codes, r, B, exact = _slope_data()
    n_draws = 6000
    wrong = np.column_stack([B[:, 0], np.ones(7)])
    keys, _, _ = _basis_chain(sampler, codes, r, W[:1], wrong, MU0, SD, n_draws, THIN_OF.get(sampler, THIN), 11)
    assert tv_distance(exact, empirical(keys)) > 2 * tv_threshold(exact, n_draws)


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_basis_leaves_match_pair_enumeration(sampler):
    """m = 2 (the backfitting: each tree sees the other's fit through the running residual), d = 2."""
    codes, r, _ = tiny_data(0)
    codes, r = codes[:5], r[:5]  # the pair enumeration is quadratic in the number of trees
    B = _basis(5)
    exact = exact_pair_posterior(codes, r, W[:5], 0.95, 2.0, MU0, SD, basis=B)
    n_draws = 6000
    keys, _, _ = _basis_chain(sampler, codes, r, W[:1], B, MU0, SD, n_draws, THIN_OF.get(sampler, THIN), 5, m=2)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, n_draws)


@pytest.mark.parametrize("sampler", ["cgm", "pg-optimal", "ct-rotate-change"])
def test_an_all_ones_basis_gives_constant_leaves_draws(sampler):
    """One column of ones with the constant leaves' prior: the same partitions, and leaf values equal up to
    rounding, as constant leaves from the same seed."""
    codes, r, w = tiny_data(0)
    ones = np.ones((7, 1))
    keys_b, forest_b, _ = _basis_chain(sampler, codes, r, w[:1], ones, 0.1, 0.8, 300, 1, 4, m=2)
    keys_c, forest_c, _ = _basis_chain(sampler, codes, r, w[:1], ones, 0.1, 0.8, 300, 1, 4, m=2, constant=True)
    assert keys_b == keys_c
    for j in range(2):
        tb, tc = tree_of(forest_b.arrays(), j), tree_of(forest_c.arrays(), j)
        leaves = [k for k in range(tc.nn[0]) if tc.ints[k, LEFT] < 0]
        assert [tb.ints[k, START] for k in leaves] == [tc.ints[k, START] for k in leaves]
        assert [tb.ints[k, END] for k in leaves] == [tc.ints[k, END] for k in leaves]
        assert np.allclose([tb.floats[k, COEF] for k in leaves], [tc.floats[k, VALUE] for k in leaves],
                           rtol=1e-9, atol=1e-12)


def test_constant_leaf_kernels_refuse_a_basis_record():
    """A kernel written for constant leaves reads ``pseudo.w``, which a basis record does not have: it fails to
    compile rather than ignore the basis."""
    from numba.core.errors import TypingError

    from pymc_treesamplers.engine.gaussian import leaf_suff

    bp = basis_pseudo(np.zeros(3), np.ones(1), np.ones((3, 2)), 0.0, 1.0)
    with pytest.raises(TypingError):
        leaf_suff(bp, np.arange(3, dtype=np.int32), 0, 3)


def test_a_chain_on_a_basis_sweeps_fits_and_gives_its_coefficients():
    """The way in (engine/chain.py): a chain made with a basis wraps each sweep's Gaussian pseudo-data in the
    basis record, its fit is the trees' terms and its coefficients the per-row sums that the fit combines."""
    from pymc_treesamplers.engine.chain import Chain

    codes, r, B, _ = _slope_data()
    codes = np.ascontiguousarray(codes.T).astype(np.uint16)
    chain = Chain.new(codes, 3, alpha=0.95, beta=2.0, mu0=MU0, s2=SD**2, basis=B,
                      new_scratch=lambda: new_pg_scratch(SMCOptions(5, PROPOSAL_PRIOR, RESAMPLE_SYSTEMATIC, 1.0, 100),
                                                         codes, 3, width=6))
    f, coef = np.empty(7), np.empty((2, 7))
    chain.fit(f)
    assert np.allclose(f, 3 * B @ MU0)  # every root at its coefficients' prior mean
    resid = r - f
    rng = np.random.default_rng(0)
    for _ in range(20):
        assert chain.sweep(rng, Pseudo(resid, np.ones(1), 1)) == -1
    chain.fit(f)
    chain.coefficients(coef)
    assert np.allclose(resid, r - f)
    assert np.allclose(f, (B * coef.T).sum(axis=1))
    assert chain.sweep(rng, Pseudo(resid, np.ones(1), 1), warm=True) == -1  # grow-from-root on the basis
    chain.fit(f)
    assert np.allclose(resid, r - f)
    with pytest.raises(NotImplementedError, match="Gaussian pseudo-data or a record registered"):
        chain.sweep(rng, (resid,))
    from pymc_treesamplers.results.predictive import predict_forests

    chain.coefficients(coef)
    texts = chain.encode(np.array([[0.5, 1.5, 2.5], [0.5, 1.5, 2.5]])).split(",")
    assert len(texts) == 2  # one stored forest per coefficient, the same trees
    X = np.ascontiguousarray(codes.T, dtype=float)
    assert np.allclose(predict_forests(texts, X), coef)


# ------------------------------------------------------------------ end to end: pmt.BART(..., leaf_basis=W)


def _entries():
    return [pytest.param(s, id=s.name) for s in MAIN]


def _fit(s, codes, y, likelihood, m, draws, seed, basis, **bart):
    """pm.sample of ``likelihood(term, y)``, ``term = BART(..., leaf_basis=basis)`` (d columns), with the step of
    ``s``."""
    with pm.Model():
        term = pmt.BART("mu", codes.astype(float), y, m=m, leaf_basis=basis, **({"mu0": MU0, "sigma_mu": SD} | bart))
        likelihood(term, y)
        return pm.sample(tune=100, draws=draws, chains=1, cores=1, random_seed=seed, progressbar=False,
                         step=[s.step([term], **(s.options | s.pm_sample[4]))], compute_convergence_checks=False)


@functools.cache
def _gaussian_fit(name):
    s = next(s for s in MAIN if s.name == name)
    sigma, n_kept, thin, seed, _ = s.pm_sample
    codes, r, B, _ = _slope_data()
    idata = _fit(s, codes, r, lambda t, y: pm.Normal("y", t, sigma, observed=y), 1, n_kept * thin, seed, B)
    coef = idata.posterior["mu"].values[0]
    return idata, partition_keys_from_values(coef[::thin, 0])


def _gaussian_exact(sigma, basis):
    codes, r, _, _ = _slope_data()
    w = np.full(7, 1 / sigma**2)
    return exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0, leaf_term=basis_leaf_term(r, w, basis, MU0, SD))


@pytest.mark.parametrize("s", _entries())
def test_pm_sample_on_a_basis_of_two_columns_matches_enumeration(s):
    """m = 1, sigma fixed, every step class through pm.sample: the variable holds the coefficients (2, n), and the
    partitions its draws share match enumeration; the term the likelihood reads is the basis times them."""
    idata, keys = _gaussian_fit(s.name)
    assert idata.posterior["mu"].shape[2:] == (2, 7)
    exact = _gaussian_exact(s.pm_sample[0], _basis())
    tv, threshold = tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_pm_sample_that_ignores_a_column_fails_enumeration():
    """The same draws are far from the posterior with the slope column dropped (constant leaves) and with the
    slope moved to other rows."""
    _, keys = _gaussian_fit("cgm")
    codes, r, B, _ = _slope_data()
    sigma = next(s for s in MAIN if s.name == "cgm").pm_sample[0]
    dropped = exact_partition_posterior(codes, r, np.full(7, 1 / sigma**2), 0.95, 2.0, MU0[0], SD[0])
    moved = _gaussian_exact(sigma, B[[3, 1, 2, 0, 4, 5, 6]])
    for wrong in (dropped, moved):
        assert tv_distance(wrong, empirical(keys)) > tv_threshold(wrong, len(keys))


PAIR_KEPT, PAIR_THIN = 3000, 20


@pytest.mark.parametrize("s", _entries())
def test_pm_sample_on_a_basis_of_two_columns_pairs_match_enumeration(s):
    """m = 2, sigma = 1: the pair of row partitions read from the stored forests follows the joint posterior of
    two trees whose leaves hold coefficient vectors."""
    codes, r, _ = tiny_data(0)
    codes, r, B = codes[:5], r[:5], _basis(5)
    idata = _fit(s, codes, r, lambda t, y: pm.Normal("y", t, 1.0, observed=y), 2, PAIR_KEPT * PAIR_THIN, 1, B)
    keys = forest_partition_keys(idata, "mu", codes, PAIR_THIN)
    exact = exact_pair_posterior(codes, r, np.ones(5), 0.95, 2.0, MU0, SD, basis=B)
    tv, threshold = tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def _logit_term(y, basis):
    return quadrature_basis_term(lambda i, eta: special.log_expit(eta if y[i] else -eta), basis, MU0, SD)


def _poisson_term(y, basis):
    return quadrature_basis_term(lambda i, eta: y[i] * eta - np.exp(eta), basis, MU0, SD)


LOGIT_KEPT, LOGIT_THIN = 2000, 10


@pytest.mark.parametrize("s", _entries())
def test_pm_sample_on_a_basis_of_two_columns_under_a_logit_matches_enumeration(s):
    """m = 1, Bernoulli-logit (the Polya-Gamma augmentation: exact Gaussian pseudo-data of the term, so the basis
    leaves' kernels apply unchanged) against enumeration x two-dimensional quadrature over the coefficients."""
    codes, r, B, _ = _slope_data()
    y = (r > 0.25).astype(float)
    idata = _fit(s, codes, y, lambda t, y: pm.Bernoulli("y", logit_p=t, observed=y), 1, LOGIT_KEPT * LOGIT_THIN, 3, B)
    keys = partition_keys_from_values(idata.posterior["mu"].values[0][::LOGIT_THIN, 0])
    exact = exact_partition_posterior(codes, r, np.ones(7), 0.95, 2.0, 0.0, 1.0, leaf_term=_logit_term(y, B))
    tv, threshold = tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"
    if s.name == "cgm":  # the basis ignored (the slope dropped) fails the same check
        wrong = exact_partition_posterior(codes, r, np.ones(7), 0.95, 2.0, 0.0, 1.0,
                                          leaf_term=_logit_term(y, np.column_stack([B[:, 0], np.zeros(7)])))
        assert tv_distance(wrong, empirical(keys)) > tv_threshold(wrong, len(keys))


# On the corrected route each tree update is one Metropolis-Hastings step whose coefficients come from the working
# conditional (acceptance about 0.4-0.5), and the indicator of the most likely partition has an autocorrelation
# time of 20-300 sweeps on these counts (300,000 CGM draws matched the top partitions to within their Monte Carlo
# error). The route is the driver's, the same for every sampler (whose moves the tests above prove): Particle
# Gibbs, thinning 100 (TV at 0.65x and 0.74x the threshold over two seeds; CGM sat at 0.6x and 1.0x). The counts
# make the slope matter: the slope moved to other rows is 3.2x the threshold away
POISSON_Y = np.array([0.0, 0.0, 3.0, 0.0, 1.0, 1.0, 0.0])
POISSON_KEPT, POISSON_THIN = 2000, 100


@functools.cache
def _poisson_fit(name, refine):
    s = next(s for s in MAIN if s.name == name)
    codes, r, B, _ = _slope_data()
    with leaf_proposal(refine):
        idata = _fit(s, codes, POISSON_Y, lambda t, y: pm.Poisson("y", pm.math.exp(t), observed=y), 1,
                     POISSON_KEPT * POISSON_THIN, 3, B)
    return idata, POISSON_Y, partition_keys_from_values(idata.posterior["mu"].values[0][::POISSON_THIN, 0])


@pytest.mark.parametrize("refine", [False, True], ids=["working", "refined"])
def test_pm_sample_on_a_basis_of_two_columns_under_a_poisson_matches_enumeration(refine):
    """m = 1, Poisson-log on the corrected route (the centred expansion of the term, the proposal's coefficients
    from their working conditional or from the refined multivariate Student-t, Metropolis-Hastings on the real
    likelihood: routes/family_record.py, BasisFamilyLik) against enumeration x two-dimensional quadrature over the
    coefficients; the slope moved to other rows fails the same check."""
    idata, y, keys = _poisson_fit("pg", refine)
    _assert_poisson_posterior(idata, keys)


def _assert_poisson_posterior(idata, keys):
    """The Poisson fit's partitions against enumeration x quadrature, and the slope moved to other rows rejected."""
    assert idata.sample_stats["mu_mh_accept"].values.mean() > 0.05
    codes, r, B, _ = _slope_data()
    exact = exact_partition_posterior(codes, r, np.ones(7), 0.95, 2.0, 0.0, 1.0, leaf_term=_poisson_term(POISSON_Y, B))
    tv, threshold = tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"
    moved = exact_partition_posterior(codes, r, np.ones(7), 0.95, 2.0, 0.0, 1.0,
                                      leaf_term=_poisson_term(POISSON_Y, B[[3, 1, 2, 0, 4, 5, 6]]))
    assert tv_distance(moved, empirical(keys)) > tv_threshold(moved, len(keys))


@functools.cache
def _potential_fit(name):
    s = next(s for s in MAIN if s.name == name)
    codes, r, B, _ = _slope_data()
    y = POISSON_Y
    idata = _fit(s, codes, y, lambda t, y: pm.Potential("loglik", pm.math.sum(y * t - pm.math.exp(t))), 1,
                 POISSON_KEPT * POISSON_THIN, 4, B)
    return idata, partition_keys_from_values(idata.posterior["mu"].values[0][::POISSON_THIN, 0])


def test_pm_sample_on_a_basis_under_the_graph_route_matches_enumeration():
    """m = 1, the Poisson log-likelihood written as a pm.Potential, so the compiled graph's route
    (routes/graph.py: BasisGraphLik, the same expansion and correction as for constant leaves, the tree's fit read
    from its coefficients) against the Poisson test's enumeration x quadrature; the slope moved fails it."""
    _assert_poisson_posterior(*_potential_fit("pg"))


def test_predictions_are_the_coefficients_and_follow_set_data():
    """pmt.predict gives the coefficients (chain, draw, d, n_new), equal to the posterior at the training rows;
    pmt.sample_posterior_predictive after pm.set_data of X and of the basis predicts the new rows' term."""
    rng = np.random.default_rng(0)
    n = 60
    X = rng.uniform(-1, 1, size=(n, 2))
    x = rng.normal(size=n)
    y = 0.5 + np.where(X[:, 0] > 0, 2.0, -1.0) * x + rng.normal(0, 0.1, n)
    W = np.column_stack([np.ones(n), x])
    with pm.Model() as model:
        Xd, Wd = pm.Data("X", X[:40]), pm.Data("W", W[:40])
        term = pmt.BART("beta", Xd, y[:40], m=5, leaf_basis=Wd)
        pm.Normal("y", term, 0.1, observed=y[:40], shape=Xd.shape[0])
        idata = pm.sample(tune=50, draws=20, chains=1, random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    coef = idata.posterior["beta"].values
    assert coef.shape == (1, 20, 2, 40)
    np.testing.assert_allclose(pmt.predict(idata, X[:40], "beta"), coef, rtol=1e-12, atol=1e-12)
    new = pmt.predict(idata, X[40:], "beta")
    with model:
        pm.set_data({"X": X[40:], "W": W[40:]})
        pp = pmt.sample_posterior_predictive(idata, var_names=["y"], predictions=True, random_seed=2)
    resid = pp["predictions"]["y"].values - (new * W[40:].T).sum(axis=2)
    assert resid.shape == (1, 20, 20) and abs(resid.std() - 0.1) < 0.03


def test_prior_draws_share_one_forest_for_the_coefficients():
    """Prior predictive draws of the coefficients (d, n): one forest, so rows share a leaf in every column at
    once, and the term is the basis times them."""
    codes, r, B, _ = _slope_data()
    with pm.Model():
        term = pmt.BART("mu", codes.astype(float), r, m=1, leaf_basis=B, mu0=MU0, sigma_mu=SD)
        pm.Deterministic("term", term)
        prior = pm.sample_prior_predictive(draws=200, random_seed=1).prior
    coef = prior["mu"].values[0]
    assert coef.shape == (200, 2, 7)
    assert partition_keys_from_values(coef[:, 0]) == partition_keys_from_values(coef[:, 1])
    np.testing.assert_allclose(prior["term"].values[0], (coef * B.T).sum(axis=1))
    assert abs(coef[:, 1].mean() - MU0[1]) < 4 * SD[1] / np.sqrt(200)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"leaf_basis": np.column_stack([np.ones(7), np.ones(7)])}, ValueError, "rank 1"),
    ({"leaf_basis": np.column_stack([np.ones(7), np.zeros(7)])}, ValueError, r"column\(s\) \[1\] are zero"),
    ({"leaf_basis": np.ones((6, 2))}, ValueError, r"one row per row of X"),
    ({"leaf_basis": _basis(), "mu0": np.zeros(3)}, ValueError, "mu0 must be a number or one per column"),
    ({"leaf_basis": _basis(), "sigma_mu": np.array([1.0, -1.0])}, ValueError, "sigma_mu must be > 0"),
    ({"leaf_basis": _basis(), "shape": (2, 7)}, ValueError, "give no shape, size or dims"),
])
def test_a_bad_basis_of_several_columns_is_refused_by_name(kwargs, error, match):
    codes, r, _ = tiny_data(0)
    with pm.Model(), pytest.raises(error, match=match):
        pmt.BART("mu", codes.astype(float), r, m=1, **kwargs)


def test_the_gpu_is_refused_before_sampling():
    codes, r, B, _ = _slope_data()
    with pm.Model():
        term = pmt.BART("mu", codes.astype(float), r, m=1, leaf_basis=B)
        pm.Normal("y", term, 1.0, observed=r)
        with pytest.raises(ValueError, match="constant leaves only"):
            pmt.GrowPruneStep([term], backend="cuda-twin")


def test_a_restored_sampling_state_resumes_a_basis_chain_exactly():
    """The sampling state holds the forest and the coefficients; the term the working model reads is rebuilt from
    the restored forest, so the chain continues as it would have."""
    codes, r, B, _ = _slope_data()
    with pm.Model() as model:
        term = pmt.BART("mu", codes.astype(float), r, m=3, leaf_basis=B)
        pm.Normal("y", term, 1.0, observed=r)
        step = pmt.CGMStep([term])
    assert_state_resumes(model, step, "mu")
