"""Monotone constraints (``BART(monotone=...)``): the kernels against the exact restricted posterior, a wrong
ratio caught, every drawn forest monotone on a dense grid, and the refusals.

The reference (tests/helpers/monotone_exact.py) enumerates every tree on the tiny data and weighs it by the
probability that its leaves are in order under their conditionals; thresholds are the 99.9% quantile of the TV
distance of iid samples of the same size (tests/helpers/exact.py), never widened.
"""

from typing import NamedTuple

import numba
import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import special

import pymc_treesamplers as pmt
from pymc_treesamplers.engine import new_monotone_scratch, sample_monotone_tree
from pymc_treesamplers.engine.driver import register_update
from pymc_treesamplers.engine.moves.cgm import MoveBuffers
from pymc_treesamplers.engine.updates.monotone import grow_carried, monotone_update, prune_carried
from pymc_treesamplers.model.covariates import split_directions
from pymc_treesamplers.routes.augment import augmented
from pymc_treesamplers.routes.observation import LOGIT2
from tests.helpers.exact import empirical, partition_key, summarize, tiny_data, tv_distance, tv_threshold
from tests.helpers.kernel_chain import _uncached, chain_draws
from tests.helpers.monotone_exact import (
    gaussian_rows,
    monotone_pair_posterior,
    monotone_pair_posterior_mc,
    monotone_tree_posterior,
    order_mass,
    tree_partition,
)

GROWPRUNE = (0.5, 0.5, 0.0, 0.0)
CGM = (0.25, 0.25, 0.4, 0.1)
# (move probabilities, the pseudo-data's weight, thinning): grow/prune needs a weaker likelihood and more sweeps
# per draw to cross between its modes on the tiny data (as in tests/helpers/samplers.py)
KERNELS = {"growprune": (GROWPRUNE, 1.0, 50), "cgm": (CGM, 4.0, 20)}
N_DRAWS = 20_000


class NoMasses(NamedTuple):
    """The monotone update without the truncation masses in its ratio (every draw still inside its interval)."""

    probs: np.ndarray
    mb: MoveBuffers
    moves: np.ndarray
    dirs: np.ndarray


class ParentFromLeftBox(NamedTuple):
    """The monotone update whose grow bounds the reverse prune's draw by the left child's neighbours, not the
    parent's."""

    probs: np.ndarray
    mb: MoveBuffers
    moves: np.ndarray
    dirs: np.ndarray


def _wrong_update(**replace):
    # the package's moves with one named piece of the ratio replaced, uncached (a test type: kernel_chain.py)
    return _uncached(monotone_update, grow_carried=_uncached(grow_carried, **replace),
                     prune_carried=_uncached(prune_carried, **replace))


@numba.njit
def _no_masses(log_p_left, log_p_right, log_p_parent):
    return 0.0


@numba.njit
def _left_box(parent_lo, parent_hi, left_lo, left_hi):
    return left_lo, left_hi


register_update(NoMasses, carries_leaves=True)(_wrong_update(masses_ratio=_no_masses))
register_update(ParentFromLeftBox, carries_leaves=True)(_wrong_update(reverse_box=_left_box))


def _draws(probs, dirs, r, w, thin, seed=3, m=1, codes=None, record=None, n_draws=N_DRAWS, **kwargs):
    codes = tiny_data(0)[0] if codes is None else codes
    sk = new_monotone_scratch(probs, dirs, len(r), m)
    return chain_draws(pmt.CGMStep, {}, codes, r, w, n_draws, thin, seed, m=m,
                       scratch=sk if record is None else record(*sk), tree_keys=m == 1, **kwargs)


def _tv(exact, keys):
    return tv_distance(exact, empirical(keys)), tv_threshold(exact, len(keys))


def test_order_mass_matches_monte_carlo():
    # four leaves in a diamond (0 below 1 and 2, both below 3) and a chain of three, against 10^6 draws
    rng = np.random.default_rng(0)
    grid = np.linspace(-10, 10, 8001)
    means, sds = np.array([0.4, -0.2, 0.9, 0.1]), np.array([0.7, 1.0, 0.5, 1.3])
    dens = np.exp(-0.5 * ((grid - means[:, None]) / sds[:, None]) ** 2) / (sds[:, None] * np.sqrt(2 * np.pi))
    x = rng.normal(means, sds, size=(1_000_000, 4))
    for pairs in ([(0, 1), (0, 2), (1, 3), (2, 3)], [(2, 0), (0, 1)]):
        mc = np.all([x[:, a] < x[:, b] for a, b in pairs], axis=0).mean()
        assert abs(order_mass(dens, pairs, grid) - mc) < 4 * np.sqrt(mc * (1 - mc) / len(x)) + 1e-4


@pytest.mark.parametrize("dirs", [[-1, 0], [1, -1]], ids=["decreasing-free", "increasing-decreasing"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_matches_enumeration(kernel, dirs):
    """m = 1, Gaussian pseudo-data that rise with both columns: the constraints bind (against the data on a
    decreasing column) and the tree posterior is the restricted one, tree by tree."""
    probs, weight, thin = KERNELS[kernel]
    codes, r, _ = tiny_data(0)
    w = np.full(len(r), weight)
    exact = monotone_tree_posterior(codes, dirs, gaussian_rows(r, w), 0.95, 2.0, 0.0, 1.0)
    tv, threshold = _tv(exact, _draws(probs, dirs, r, w, thin))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_prior_recovered_under_flat_likelihood():
    codes, r, _ = tiny_data(0)
    w = np.zeros(len(r))
    exact = monotone_tree_posterior(codes, [-1, -1], gaussian_rows(r, w), 0.95, 2.0, 0.0, 1.0)
    tv, threshold = _tv(exact, _draws(CGM, [-1, -1], r, w, 5))
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"


def test_prior_draws_follow_the_restricted_prior():
    """The prior predictive's draws (a tree and leaves from BART's prior, again until in order) against the
    enumerated restricted prior, partition by partition, and a prior predictive draw of a model is monotone."""
    codes, r, _ = tiny_data(0)
    rng = np.random.default_rng(4)
    dirs = np.array([-1, 1])
    keys = [partition_key(sample_monotone_tree(codes.T.astype(np.uint16), np.ones(2), 0.95, 2.0, 0.0, 1.0, dirs,
                                               rng)[0]) for _ in range(N_DRAWS)]
    exact = summarize(monotone_tree_posterior(codes, dirs, gaussian_rows(r, np.zeros(len(r))), 0.95, 2.0, 0.0, 1.0),
                      lambda k: tree_partition(k, codes))
    tv, threshold = _tv(exact, keys)
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"
    free = summarize(monotone_tree_posterior(codes, [0, 0], gaussian_rows(r, np.zeros(len(r))), 0.95, 2.0, 0.0, 1.0),
                     lambda k: tree_partition(k, codes))
    assert _tv(free, keys)[0] > threshold
    x = np.linspace(0, 1, 30)
    with pm.Model():
        pmt.BART("mu", x[:, None], x, m=10, monotone=[1])
        prior = pm.sample_prior_predictive(draws=50, random_seed=1).prior["mu"].values.reshape(50, -1)
    assert np.diff(prior, axis=1).min() >= 0


# three rows on one column, decreasing against data that nearly agree: where a grow's reverse interval matters
LINE_CODES, LINE_R, LINE_W, LINE_DRAWS = np.arange(3)[:, None], np.array([0.3, -0.2, 0.5]), np.full(3, 0.5), 150_000


@pytest.mark.parametrize("kernel", KERNELS)
def test_one_column_matches_enumeration(kernel):
    probs, thin = KERNELS[kernel][0], 10  # three rows: a few sweeps cross between the trees
    exact = monotone_tree_posterior(LINE_CODES, [-1], gaussian_rows(LINE_R, LINE_W), 0.95, 2.0, 0.0, 1.0)
    keys = _draws(probs, [-1], LINE_R, LINE_W, thin, codes=LINE_CODES, n_draws=LINE_DRAWS)
    tv, threshold = _tv(exact, keys)
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"
    # the test can fail: a grow that bounds the reverse prune's draw by the left child's neighbours
    keys = _draws(probs, [-1], LINE_R, LINE_W, thin, codes=LINE_CODES, n_draws=LINE_DRAWS, record=ParentFromLeftBox)
    assert _tv(exact, keys)[0] > threshold


@pytest.mark.parametrize("kernel", KERNELS)
def test_wrong_targets_are_detected(kernel):
    """The test can fail: the same moves without the truncation masses in the ratio (each grow's children still
    drawn inside their neighbours' interval, so no draw breaks an order); and the chain against the unrestricted
    posterior's, which a sampler ignoring the constraint would follow."""
    probs, weight, thin = KERNELS[kernel]
    codes, r, _ = tiny_data(0)
    w = np.full(len(r), weight)
    exact = monotone_tree_posterior(codes, [-1, 0], gaussian_rows(r, w), 0.95, 2.0, 0.0, 1.0)
    tv, threshold = _tv(exact, _draws(probs, [-1, 0], r, w, thin, record=NoMasses))
    assert tv > threshold
    free = monotone_tree_posterior(codes, [0, 0], gaussian_rows(r, w), 0.95, 2.0, 0.0, 1.0)
    tv, threshold = _tv(free, _draws(probs, [-1, 0], r, w, thin))
    assert tv > threshold


PAIR_R = np.array([0.4, -0.5, 0.9, 0.2, 1.1])  # five rows, one column, codes 0..4: rising with a dip


@pytest.mark.parametrize("kernel", KERNELS)
def test_two_trees_match_pair_enumeration(kernel):
    """m = 2: each tree monotone, updated given the other's fit (backfitting); the pair of partitions against
    the restricted joint posterior of the sum (its order probability a Gaussian orthant mass)."""
    probs, weight, thin = KERNELS[kernel]
    codes = np.arange(5)[:, None]
    w = np.full(5, weight)
    sd = 1.0 / np.sqrt(2.0)
    exact = monotone_pair_posterior(codes, PAIR_R, w, 1, 0.95, 2.0, 0.0, sd)
    keys = _draws(probs, [1], PAIR_R, w, thin, m=2, codes=codes, sigma_mu=sd)
    tv, threshold = _tv(exact, keys)
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"
    # the test can fail: the same draws against the pair posterior of decreasing trees
    assert _tv(monotone_pair_posterior(codes, PAIR_R, w, -1, 0.95, 2.0, 0.0, sd), keys)[0] > threshold


@pytest.mark.parametrize("kernel", KERNELS)
def test_two_trees_bernoulli_match_the_pair_posterior(kernel):
    """m = 2 under Bernoulli-logit (its augmentation redrawn before every sweep), on three rows whose labels dip
    against the constraint: against the pair posterior by Monte Carlo over the leaves' prior."""
    probs, _, thin = KERNELS[kernel]
    y = np.array([1.0, 0.0, 1.0])
    codes, sd = np.arange(3)[:, None], 1.0
    exact = monotone_pair_posterior_mc(codes, lambda f: special.log_expit(np.where(y > 0, f, -f)).sum(axis=1), 1,
                                       0.95, 2.0, 0.0, sd)
    record = lambda f, mu0: augmented(LOGIT2, y, 1.0 - y, 0.0, 0.0, 1.0, 3)  # noqa: E731
    keys = _draws(probs, [1], np.zeros(3), None, thin, m=2, codes=codes, family=record, sigma_mu=sd)
    tv, threshold = _tv(exact, keys)
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"
    free = monotone_pair_posterior_mc(codes, lambda f: special.log_expit(np.where(y > 0, f, -f)).sum(axis=1), 0,
                                      0.95, 2.0, 0.0, sd)
    assert _tv(free, keys)[0] > threshold


@pytest.mark.parametrize("kernel", KERNELS)
def test_bernoulli_logit_matches_enumeration(kernel):
    """m = 1, Bernoulli-logit by its exact augmentation (Polya-Gamma latents redrawn before every sweep, as the
    step does): against enumeration times quadrature over each leaf's value, with the constraint against the
    data."""
    codes, r, _ = tiny_data(0)
    y = (r > 0.25).astype(float)
    n, sd = len(y), 1.5
    rows = lambda idx, mu: sum(special.log_expit(mu if y[i] else -mu) for i in idx)  # noqa: E731
    exact = monotone_tree_posterior(codes, [-1, 0], rows, 0.95, 2.0, 0.0, sd)
    record = lambda f, mu0: augmented(LOGIT2, y, 1.0 - y, 0.0, 0.0, 1.0, n)  # noqa: E731
    probs, _, thin = KERNELS[kernel]
    keys = _draws(probs, [-1, 0], r, None, thin, family=record, sigma_mu=sd)
    part = summarize(exact, lambda k: tree_partition(k, codes))
    parts = [tree_partition(k, codes) for k in keys]
    tv, threshold = _tv(part, parts)
    assert tv < threshold, f"TV {tv:.4f} >= threshold {threshold:.4f}"
    free = summarize(monotone_tree_posterior(codes, [0, 0], rows, 0.95, 2.0, 0.0, sd),
                     lambda k: tree_partition(k, codes))
    assert _tv(free, parts)[0] > threshold  # the constraint changes the posterior: the test can fail


def _fit(X, y, monotone, step=None, m=5, draws=40, seed=0, **bart):
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=m, monotone=monotone, **bart)
        pm.Normal("y", mu, 0.3, observed=y if mu.ndim == 1 else np.tile(y, (mu.shape[0].eval(), 1)))
        steps = None if step is None else [step([mu])]
        return pm.sample(draws=draws, tune=20, chains=1, step=steps, random_seed=seed, progressbar=False,
                         compute_convergence_checks=False)


def _assert_monotone(idata, dirs, p, rng, var="mu"):
    # along each constrained column, through random points, on a grid finer than the data's codes
    grid = np.linspace(-0.1, 1.1, 97)
    for j in np.flatnonzero(dirs):
        for _ in range(3):
            Xg = np.tile(rng.uniform(size=p), (grid.size, 1))
            Xg[:, j] = grid
            pred = np.asarray(pmt.predict(idata, Xg, var))
            steps = np.diff(pred.reshape(-1, grid.size), axis=1) * dirs[j]
            assert steps.min() >= -1e-12, f"column {j}: a drawn forest breaks its order by {-steps.min():.3g}"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_drawn_forest_is_monotone_on_a_dense_grid(seed):
    """Random data, random constraints (at least one), both steps: every stored forest, evaluated between and
    beyond the training codes, is monotone along each constrained column."""
    rng = np.random.default_rng(seed)
    n, p = 60, 3
    X = rng.uniform(size=(n, p))
    y = np.sin(4 * X[:, 0]) + X[:, 1] - X[:, 2] ** 2 + rng.normal(0, 0.3, n)
    dirs = rng.choice([-1, 0, 1], size=p)
    if not dirs.any():
        dirs[0] = 1
    step = (pmt.CGMStep, pmt.GrowPruneStep)[seed % 2]
    _assert_monotone(_fit(X, y, dirs.tolist(), step=step), dirs, p, rng)


def test_several_outputs_share_the_constraint():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(50, 2))
    y = X[:, 0] - X[:, 1] + rng.normal(0, 0.2, 50)
    idata = _fit(X, y, [1, -1], shape=(2, 50))
    _assert_monotone(idata, np.array([1, -1]), 2, rng)


def test_dict_by_column_name():
    rng = np.random.default_rng(6)
    X = pd.DataFrame({"dose": rng.uniform(size=40), "age": rng.uniform(size=40)})
    y = X["dose"].to_numpy() + rng.normal(0, 0.2, 40)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=3, monotone={"dose": 1})
    assert mu.owner.op.monotone == (1, 0)


def _bart(X, y, **kw):
    with pm.Model() as model:
        mu = pmt.BART("mu", X, y, m=3, **kw)
        pm.Normal("y", mu, 1.0, observed=y)
    return model, mu


@pytest.mark.parametrize(("monotone", "error", "match"), [
    ([1, 0], ValueError, "one value per column"),
    ([2, 0, 0], ValueError, "must be \\+1"),
    ("increasing", TypeError, "one value per column"),
    ({"price": 1}, ValueError, "does not have"),
])
def test_bad_monotone_is_refused_by_name(monotone, error, match):
    X = np.random.default_rng(0).uniform(size=(20, 3))
    with pytest.raises(error, match=match):
        _bart(X, X[:, 0], monotone=monotone)


def test_categorical_and_missing_columns_are_refused_by_name():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"dose": rng.uniform(size=20), "site": pd.Categorical(rng.choice(["a", "b"], 20))})
    with pytest.raises(ValueError, match="categorical column.*site"):
        _bart(X, X["dose"].to_numpy(), monotone={"site": 1})
    Xn = rng.uniform(size=(20, 2))
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="missing values"):
        _bart(Xn, Xn[:, 0], monotone=[0, 1])
    _bart(Xn, Xn[:, 0], monotone=[1, 0])  # missing values in a free column are fine
    # NaN that pm.set_data brings into a constrained column later (split as x and -x: two split columns of one
    # covariate) is refused where the split columns' directions are made, for the step and the prior draws alike
    Xd = rng.uniform(size=(20, 2))
    with pm.Model():
        data = pm.Data("X", Xd)
        mu = pmt.BART("mu", data, Xd[:, 0], m=3, monotone=[1, 0])
        pm.Normal("y", mu, 1.0, observed=Xd[:, 0])
        Xd[0, 0] = np.nan
        pm.set_data({"X": Xd})
        with pytest.raises(ValueError, match="now hold missing values"):
            pmt.CGMStep([mu])
    with pytest.raises(ValueError, match="now hold missing values"):
        split_directions((1, 0), np.array([0, 1, 0]))


def test_steps_and_routes_without_the_constraint_refuse_it():
    X = np.random.default_rng(0).uniform(size=(30, 2))
    y = X[:, 0]
    model, mu = _bart(X, y, monotone=[1, 0])
    with model:
        with pytest.raises(ValueError, match="cannot sample a BART with monotone.*CGMStep"):
            pmt.PGBARTStep([mu])
        with pytest.raises(ValueError, match="twigs"):
            pmt.CGMStep([mu], twigs=0.2)
        with pytest.raises(ValueError, match="warm_start"):
            pmt.CGMStep([mu], warm_start=5)
    with pm.Model():
        mu = pmt.BART("mu", X, np.round(3 * y), m=3, monotone=[1, 0])
        pm.Poisson("y", pm.math.exp(mu), observed=np.round(3 * y))
        with pytest.raises(ValueError, match="corrected route"):
            pmt.CGMStep([mu])
    with pytest.raises(ValueError, match="constant leaves"):
        _bart(X, y, monotone=[1, 0], leaf_basis=np.ones(30))
