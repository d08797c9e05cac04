"""The single-tree SMC estimators (pymc_treesamplers/estimators/smctree.py) against exact enumeration.

On tiny data (7 rows, 34 row partitions under the prior) every tree is enumerated with the leaf
models written independently here (tests/helpers/exact.py: the Dirichlet-multinomial from its Gamma
functions, the Normal-inverse-gamma as a multivariate Student-t from its covariance):

* each island's evidence estimate is unbiased: the mean of ``exp(log_evidence_)`` over thousands of
  independent islands matches the exact ``p(y | X)`` within four standard errors, for every proposal
  and expansion order, and misses the evidence of a wrong model;
* the weighted trees approach the exact posterior over row partitions as particles grow (islands
  pooled equally, so only more particles can shrink the bias), below the multinomial noise of one
  draw per island at the largest size, while a wrong posterior stays above it; pooled by evidence,
  even small islands give the exact posterior (importance sampling with unbiased weights).
"""

import math

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from pymc_treesamplers import SMCTreeClassifier, SMCTreeRegressor
from pymc_treesamplers.model.binning import bin_columns
from pymc_treesamplers.model.sigma_prior import chipman_sigma2_prior
from tests.helpers.exact import (
    dirichlet_multinomial_term,
    exact_log_evidence,
    exact_partition_posterior,
    normal_inverse_gamma_term,
    partition_key,
    tiny_data,
    tv_distance,
    tv_threshold,
)

ALPHA, BETA = 0.95, 0.5
_, R, _ = tiny_data(0)
X = tiny_data(0)[0].astype(float)
# equally spaced cuts over each column's range: codes {0, 3, 7} and {0, 7}, so a node's gaps between
# present codes hold several cuts and the empirical proposal's correction is not trivially zero
CODING = {"split_points": "range", "max_bins": 8}
CODES = bin_columns(X, **CODING).codes.T.astype(np.int64)
LABELS = np.array([1, 0, 2, 0, 2, 1, 2])
CASES = [(p, e) for p in ("prior", "empirical", "optimal") for e in ("node", "layer")]


def _estimator(kind, **kw):
    cls = SMCTreeClassifier if kind == "classifier" else SMCTreeRegressor
    return cls(alpha=kw.pop("alpha", ALPHA), beta=BETA, **CODING, **kw)


def _target(kind, alpha=ALPHA, conc=1.0, kappa=1.0 / 3.0):
    """``(y, leaf_term, log Jacobian)``: the data, the exact leaf marginal, and what converts the
    enumeration's evidence to that of y (the regressor standardises y)."""
    if kind == "classifier":
        return LABELS, dirichlet_multinomial_term(LABELS, [conc] * 3), 0.0
    z = (R - R.mean()) / R.std()
    a0, b0 = chipman_sigma2_prior(X, z)
    return R, normal_inverse_gamma_term(z, 0.0, kappa, a0, b0), len(R) * math.log(R.std())


def _log_evidence(kind, **kw):
    _, term, jac = _target(kind, **kw)
    return exact_log_evidence(CODES, R, np.ones(len(R)), kw.get("alpha", ALPHA), BETA, 0.0, 1.0, leaf_term=term) - jac


def _posterior(kind, **kw):
    _, term, _ = _target(kind, **kw)
    return exact_partition_posterior(CODES, R, np.ones(len(R)), kw.get("alpha", ALPHA), BETA, 0.0, 1.0, leaf_term=term)


def _histogram(est):
    """The estimator's posterior over row partitions of the training rows: tree weights by partition."""
    leaves = est.apply(X)
    out = {}
    for j, wt in enumerate(est.tree_weights_):
        key = partition_key(leaves[:, j].tolist())
        out[key] = out.get(key, 0.0) + wt
    return out


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
@pytest.mark.parametrize(("proposal", "expansion"), CASES)
def test_island_evidence_is_unbiased(kind, proposal, expansion):
    y, _, _ = _target(kind)
    node = expansion == "node"
    est = _estimator(kind, n_particles=5, n_islands=4000, proposal=proposal, expansion=expansion,
                     ess_threshold=1.0 if node else 0.5, resampling="multinomial" if node else "systematic",
                     random_state=len(proposal) + 10 * node).fit(X, y)
    exact = _log_evidence(kind)
    z = np.exp(est.log_evidence_ - exact)
    se = z.std(ddof=1) / math.sqrt(z.size)
    assert abs(z.mean() - 1.0) < 4 * se, (z.mean(), se)
    # the check can fail: the evidence of a slightly different tree prior lies outside the band
    assert abs(z.mean() - math.exp(_log_evidence(kind, alpha=0.85) - exact)) > 4 * se


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
@pytest.mark.parametrize(("proposal", "expansion"), [("prior", "node"), ("optimal", "layer")])
def test_weighted_trees_converge_to_the_exact_posterior(kind, proposal, expansion):
    y, _, _ = _target(kind)
    exact = _posterior(kind)
    islands = 2000
    tvs = []
    for C in (2, 20, 200):
        est = _estimator(kind, n_particles=C, n_islands=islands, island_weights="equal", proposal=proposal,
                         expansion=expansion, random_state=C).fit(X, y)
        assert est.tree_weights_.sum() == pytest.approx(1.0)
        tvs.append(tv_distance(exact, _histogram(est)))
    threshold = tv_threshold(exact, islands)  # as if each island gave one exact draw: conservative
    assert tvs[2] < threshold < tvs[0], tvs
    assert tvs[2] < tvs[1] < tvs[0], tvs
    # a wrong posterior (another leaf prior) is far from the same weighted trees
    wrong = _posterior(kind, conc=10.0) if kind == "classifier" else _posterior(kind, kappa=0.01)
    assert tv_distance(wrong, _histogram(est)) > threshold


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_islands_pooled_by_evidence_are_exact_at_any_size(kind):
    y, _, _ = _target(kind)
    exact = _posterior(kind)
    est = _estimator(kind, n_particles=3, n_islands=6000, random_state=7, island_weights="evidence").fit(X, y)
    iw = est.island_weights_
    ess = int(1.0 / np.sum(iw * iw))
    assert ess > 1000
    assert tv_distance(exact, _histogram(est)) < tv_threshold(exact, ess)
    equal = _estimator(kind, n_particles=3, n_islands=6000, random_state=7, island_weights="equal").fit(X, y)
    assert tv_distance(exact, _histogram(equal)) > tv_threshold(exact, ess)  # the bias evidence weights remove


def _expected_failures(estimator):
    if isinstance(estimator, SMCTreeRegressor):
        # the check sets ``alpha = 0.01`` for linear models' penalty; here alpha is the prior split
        # probability, and a tree that almost never splits scores R^2 < 0.5 as it should
        return {"check_regressors_train": "sets alpha=0.01, the tree prior's split probability here"}
    return {}


@parametrize_with_checks([SMCTreeClassifier(n_particles=20, n_islands=2, random_state=0),
                          SMCTreeRegressor(n_particles=20, n_islands=2, random_state=0)],
                         expected_failed_checks=_expected_failures)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_regressor_trains_like_scikit_learn_asks_at_its_own_alpha():
    """What check_regressors_train asserts, at the default tree prior: malformed input refused, lists
    accepted, and R^2 > 0.5 on its scaled Boston-like data."""
    rng = np.random.default_rng(0)
    Xr = rng.normal(size=(200, 5))
    yr = Xr[:, 0] + np.sin(2 * Xr[:, 1]) + 0.3 * rng.normal(size=200)
    reg = SMCTreeRegressor(n_particles=20, n_islands=2, random_state=0)
    with pytest.raises(ValueError):
        reg.fit(Xr, yr[:-1])
    assert reg.fit(Xr.tolist(), yr.tolist()).predict(Xr).shape == yr.shape
    assert reg.score(Xr, yr) > 0.5
    assert SMCTreeRegressor(alpha=0.01, n_particles=20, n_islands=2, random_state=0).fit(Xr, yr).score(Xr, yr) < 0.5


@pytest.mark.parametrize(("param", "value", "error"), [
    ("n_particles", 0, ValueError), ("n_particles", 2.5, TypeError), ("n_islands", 0, ValueError),
    ("proposal", "greedy", ValueError), ("expansion", "depth", ValueError), ("ess_threshold", 1.5, ValueError),
    ("resampling", "stratified", ValueError), ("alpha", 1.0, ValueError), ("alpha", "high", TypeError),
    ("beta", -1.0, ValueError), ("max_bins", 1, ValueError), ("split_points", "quantile", ValueError),
    ("island_weights", "best", ValueError), ("max_stages", 0, ValueError), ("n_jobs", 0, ValueError),
    ("leaf_concentration", -1.0, ValueError), ("leaf_concentration", [1.0, 1.0], ValueError),
])
def test_bad_parameters_are_named_before_any_work(param, value, error):
    with pytest.raises(error, match=param):
        SMCTreeClassifier(**{param: value}).fit(X, LABELS)


@pytest.mark.parametrize(("param", "value"), [("leaf_kappa", 0.0), ("leaf_nu", -1.0), ("leaf_q", 1.0)])
def test_bad_leaf_prior_of_the_regressor_is_named(param, value):
    with pytest.raises(ValueError, match=param):
        SMCTreeRegressor(**{param: value}).fit(X, R)


def test_threads_change_nothing_but_the_time():
    """Each island has its own generator from ``random_state``, so threads give the same trees."""
    a = SMCTreeClassifier(n_particles=30, n_islands=4, random_state=3).fit(X, LABELS)
    b = SMCTreeClassifier(n_particles=30, n_islands=4, random_state=3, n_jobs=2).fit(X, LABELS)
    np.testing.assert_array_equal(a.log_evidence_, b.log_evidence_)
    np.testing.assert_array_equal(a.trees_, b.trees_)


def test_stored_trees_are_forest_encodings_that_predict_reads():
    import pymc_treesamplers as pmt
    from pymc_treesamplers.results.storage import decode_forest

    rng = np.random.default_rng(1)
    Xr = rng.uniform(size=(150, 3))
    yc = (Xr[:, 0] > 0.4).astype(int) + (Xr[:, 1] > 0.7)
    clf = SMCTreeClassifier(n_particles=30, n_islands=3, random_state=0).fit(Xr, yc)
    parts = clf.trees_[0].split(",")
    assert len(parts) == 3 and decode_forest(parts[0])[0] == 3  # one encoding per class, p = 3
    idata = clf.to_inference_data(draws=400, random_state=0)
    f = pmt.predict(idata, Xr[:20])  # (chain, draw, K, n): class probabilities of each drawn tree
    assert f.shape == (1, 400, 3, 20)
    np.testing.assert_allclose(f.sum(axis=2), 1.0)
    np.testing.assert_allclose(f.mean(axis=(0, 1)).T, clf.predict_proba(Xr[:20]), atol=0.05)
    assert pmt.get_variable_inclusion(idata).index[0] in ("x0", "x1")

    yr = 2.0 * (Xr[:, 0] > 0.5) + 0.2 * rng.normal(size=150)
    reg = SMCTreeRegressor(n_particles=30, n_islands=3, random_state=0).fit(Xr, yr)
    g = pmt.predict(reg.to_inference_data(draws=400, random_state=0), Xr[:20])
    np.testing.assert_allclose(g.mean(axis=(0, 1)), reg.predict(Xr[:20]), atol=0.05)


def test_regressor_predictive_intervals_cover():
    rng = np.random.default_rng(2)
    Xr = rng.uniform(size=(600, 2))
    yr = np.where(Xr[:, 0] > 0.5, 1.0, -1.0) + 0.3 * rng.normal(size=600)
    reg = SMCTreeRegressor(n_particles=50, n_islands=3, random_state=0).fit(Xr[:400], yr[:400])
    lo, hi = reg.predict_interval(Xr[400:], coverage=0.9).T
    covered = np.mean((lo <= yr[400:]) & (yr[400:] <= hi))
    assert 0.83 < covered < 0.97
    mean, sd = reg.predict(Xr[400:], return_std=True)
    assert np.all(lo < mean) and np.all(mean < hi)
    assert np.median(sd) == pytest.approx(0.3, rel=0.25)
    # the log predictive density of held-out y beats that of a Normal with the marginal sd
    marginal = -0.5 * np.log(2 * np.pi * yr[:400].var()) - 0.5
    assert reg.log_predictive(Xr[400:], yr[400:]) > marginal + 0.5
