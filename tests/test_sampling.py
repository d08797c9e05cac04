"""The step methods inside ``pm.sample``: prior recovery, parallel chains, prediction, composition, errors.

(Every sampler's pm.sample exactness, seeds and chain independence: tests/test_matrix.py.)"""

import inspect
import logging
import subprocess
import sys

import arviz as az
import cloudpickle
import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers.datasets import friedman1
from tests.helpers.exact import (
    empirical,
    exact_partition_prior,
    partition_keys_from_values,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.fits import assert_state_resumes, fit_friedman


def test_pm_sample_without_likelihood_recovers_prior():
    codes, r, _ = tiny_data(0)
    with pm.Model():
        mu = pmt.BART("mu", codes.astype(float), r, m=1, mu0=0.0, sigma_mu=1.0)
        idata = pm.sample(tune=100, draws=6000, chains=1, random_seed=4, progressbar=False,
                          step=[pmt.CGMStep([mu])], compute_convergence_checks=False)
    keys = partition_keys_from_values(idata.posterior["mu"].values[0][::3])
    exact = exact_partition_prior(codes, 0.95, 2.0)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


def test_automatic_assignment_stats_and_parallel_chains():
    _, _, idata = fit_friedman(None, cores=2)
    stats = idata.sample_stats
    for name in ("mu_tree_depth", "mu_n_leaves", "mu_accept"):  # "tune" is consumed by PyMC itself
        assert stats[name].shape == (2, 50)
    assert stats["mu_split_counts"].shape == (2, 50, 5)
    assert (stats["mu_split_counts"].values.sum(-1) > 0).any()
    assert stats["mu_forest"].shape[:2] == (2, 50)
    assert np.isfinite(idata.posterior["mu"].values).all()
    assert not np.array_equal(idata.posterior["mu"].values[0], idata.posterior["mu"].values[1])


@pytest.mark.boundscheck
def test_predict_reproduces_draws_after_netcdf(tmp_path):
    _, X, idata = fit_friedman(pmt.CGMStep, cores=2)
    path = tmp_path / "fit.nc"
    idata.to_netcdf(path)
    import arviz as az

    again = az.from_netcdf(path)
    pred = pmt.predict(again, X, "mu")
    np.testing.assert_array_equal(pred, idata.posterior["mu"].values)
    new = pmt.predict(again, np.random.default_rng(9).uniform(size=(17, 5)), "mu")
    assert new.shape == (2, 50, 17) and np.isfinite(new).all()


def test_predict_rejects_bad_input():
    _, _, idata = fit_friedman(pmt.GrowPruneStep, chains=1, draws=5, tune=5)
    with pytest.raises(ValueError, match="columns"):
        pmt.predict(idata, np.zeros((3, 4)), "mu")
    with pytest.raises(ValueError, match="inf"):
        pmt.predict(idata, np.full((3, 5), np.inf), "mu")
    with pytest.raises(TypeError, match="numeric"):
        pmt.predict(idata, np.array([["a"] * 5]), "mu")
    with pytest.raises(ValueError, match="no encoded forest"):
        pmt.predict(idata, np.zeros((3, 5)), "nu")


def test_other_terms_enter_the_residual():
    """y = f(X) + 3 z: NUTS moves the coefficient, the BART sees y - 3 z (and sigma)."""
    X, _, f = friedman1(300, p=5, rng=2)
    rng = np.random.default_rng(5)
    z = rng.normal(size=300)
    y = f + 3.0 * z + rng.normal(0, 0.5, size=300)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=30)
        coef = pm.Normal("coef", 0, 10)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu + coef * z, sigma, observed=y)
        idata = pm.sample(tune=300, draws=300, chains=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    assert abs(idata.posterior["coef"].mean().item() - 3.0) < 0.15
    assert idata.posterior["sigma"].mean().item() < 1.2


def test_two_barts_in_one_model_are_distinguishable_and_saveable(tmp_path):
    """Each BART variable reports its own stats (``a_split_counts`` and ``b_split_counts`` with their
    own column counts), and the whole InferenceData survives netCDF."""
    X, y, _ = friedman1(120, p=5, rng=3)
    with pm.Model():
        a = pmt.BART("a", X[:, :2], y, m=5)
        b = pmt.BART("b", X[:, 2:], y, m=5)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", a + b, sigma, observed=y)
        idata = pm.sample(tune=30, draws=30, chains=2, cores=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    stats = idata.sample_stats
    assert stats["a_split_counts"].shape == (2, 30, 2) and stats["b_split_counts"].shape == (2, 30, 3)
    assert stats["a_n_leaves"].shape == stats["b_n_leaves"].shape == (2, 30)
    path = tmp_path / "two.nc"
    idata.to_netcdf(path)
    again = az.from_netcdf(path)
    pred = pmt.predict(again, X[:, :2], "a") + pmt.predict(again, X[:, 2:], "b")
    np.testing.assert_allclose(pred, idata.posterior["a"].values + idata.posterior["b"].values)
    np.testing.assert_array_equal(again.sample_stats["b_split_counts"].values, stats["b_split_counts"].values)


def test_value_changed_outside_the_step_is_refused_and_state_resumes():
    """The step's sampling state holds its forest: restoring it with the point it produced resumes
    the chain exactly; a BART value changed behind the step's back is an error, not a silent drift."""
    X, y, _ = friedman1(60, p=5, rng=0)
    with pm.Model() as model:
        mu = pmt.BART("mu", X, y, m=5)
        pm.Normal("y", mu, 1.0, observed=y)
        step = pmt.CGMStep([mu])
    again, _, _ = assert_state_resumes(model, step, "mu")
    moved = dict(again)
    moved["mu"] = moved["mu"] + 0.5
    with pytest.raises(RuntimeError, match="changed outside"):
        step.step(moved)


def test_step_options_are_explicit_keywords():
    """help(pmt.PGBARTStep) and signatures show every option with its default (no **kwargs)."""
    expected = {pmt.CGMStep: {"move_probs", "twigs", "aimed_twigs", "backend"},
                pmt.GrowPruneStep: {"twigs", "aimed_twigs", "backend"},
                pmt.PGBARTStep: {"num_particles", "resampling", "ess_threshold", "proposal", "max_stages", "expansion",
                                   "pimh"},
                pmt.CTBirthDeathStep: {"horizon", "mode", "rotate", "change"},
                pmt.ReshapeStep: {"n_moves", "move_probs"}}
    common = {"vars", "threads", "route", "warm_start", "sigma_every", "model", "initial_point", "compile_kwargs",
              "blocked", "rng"}
    for cls, options in expected.items():
        params = inspect.signature(cls).parameters
        assert set(params) == common | options
        assert all(p.kind != p.VAR_KEYWORD for p in params.values())
        assert all(name in cls.__doc__ for name in options | {"warm_start", "sigma_every"})


def test_first_compile_is_announced_once(caplog, monkeypatch):
    from pymc_treesamplers.steps import compiling

    monkeypatch.setattr(compiling, "_COMPILED", set())
    monkeypatch.setattr(compiling, "in_numba_cache", lambda chain, lik, warm: False)
    X, y, _ = friedman1(30, p=5, rng=0)
    with caplog.at_level(logging.INFO, logger="pymc_treesamplers"), pm.Model():
        mu = pmt.BART("mu", X, y, m=2)
        pm.Normal("y", mu, 1.0, observed=y)
        pmt.CGMStep([mu])
        pmt.CGMStep([mu])
    assert sum("compiling the CGMStep kernels" in r.getMessage() for r in caplog.records) == 1


def test_compile_notice_is_shown_without_any_logging_setup():
    """A plain script configures no logging: the notice must still reach stderr (INFO on a logger
    without a handler is dropped), as PyMC's own "Sequential sampling ..." does."""
    script = (
        "import numpy as np, pymc as pm, pymc_treesamplers as pmt\n"
        "from pymc_treesamplers.steps import compiling\n"
        "compiling.in_numba_cache = lambda chain, lik, warm: False  # as on a machine's first use\n"
        "X = np.linspace(0, 1, 20)[:, None]\n"
        "with pm.Model():\n"
        "    mu = pmt.BART('mu', X, X[:, 0], m=2)\n"
        "    pm.Normal('y', mu, 1.0, observed=X[:, 0])\n"
        "    pmt.CGMStep([mu])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert "compiling the CGMStep kernels" in out.stderr
    assert "numba threading layer tbb" in out.stderr or "numba threading layer workqueue" in out.stderr


def test_step_is_picklable_and_rejects_unknown_kwargs():
    X, y, _ = friedman1(50, p=5, rng=0)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=3)
        pm.Normal("y", mu, 1.0, observed=y)
        step = pmt.CGMStep([mu])
        clone = cloudpickle.loads(cloudpickle.dumps(step))  # how PyMC ships steps to workers
        assert clone.m == 3 and clone.var_name == "mu"
        with pytest.raises(TypeError, match="num_particles"):
            pmt.GrowPruneStep([mu], num_particles=3)
        with pytest.raises(ValueError, match="sum to 1"):
            pmt.CGMStep([mu], move_probs=(0.5, 0.5, 0.5, 0.0))
        with pytest.raises(ValueError, match="grow and prune"):
            pmt.CGMStep([mu], move_probs=(0.0, 0.5, 0.5, 0.0))


@pytest.mark.parametrize("coupled", ["reversed", "sum"])
def test_likelihood_coupling_rows_is_refused(coupled):
    """A likelihood that mixes rows of the BART value breaks the per-row working model, however weakly
    (a 1e-8 coupling slipped through the old two-point check of the quadratic form; 1e-6 was
    refused there, as "not Gaussian")."""
    X, y, _ = friedman1(100, p=5, rng=0)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=3)
        mean = mu + 1e-8 * mu[::-1] if coupled == "reversed" else mu + 1e-3 * mu.sum()
        pm.Normal("y", mean, 1.0, observed=y)
        with pytest.raises(NotImplementedError, match="couples different rows"):
            pmt.CGMStep([mu])


def test_step_refuses_non_bart_variables():
    with pm.Model():
        s = pm.HalfNormal("s", 1.0)
        with pytest.raises(TypeError, match="BART"):
            pmt.CGMStep([s])


def test_initial_point_reads_shapes_without_drawing_the_prior(monkeypatch):
    """PyMC's initial point of a BART variable is mean(Y) at every row (and output), computed from the
    shapes: a prior draw of every tree over every row is not made (it took ~50 s at 10^7 rows)."""
    from pymc_treesamplers.model.bart import BARTRV

    def refuse(*args, **kwargs):
        raise AssertionError("the initial point drew BART from its prior")

    X, y, _ = friedman1(40, p=5, rng=0)
    with pm.Model() as model:
        pmt.BART("a", X, y, m=3)
        pmt.BART("b", X, y, m=3, shape=(2, 40))
    monkeypatch.setattr(BARTRV, "rng_fn", refuse)
    point = model.initial_point()
    np.testing.assert_allclose(point["a"], np.full(40, y.mean()))
    np.testing.assert_allclose(point["b"], np.full((2, 40), y.mean()))


def test_a_fresh_chain_state_does_not_copy_the_rows():
    """Before its first sweep a step's sampling state and its pickle leave out the forests' row order
    (4 bytes per row and tree: PyMC copies the state before its chains and pickles the step to its chain
    workers); setting such a state, or unpickling, gives single-leaf trees; a swept step's state keeps
    its forests and resumes exactly (test above)."""
    X, y, _ = friedman1(2000, p=5, rng=0)
    with pm.Model() as model:
        mu = pmt.BART("mu", X, y, m=50)
        pm.Normal("y", mu, 1.0, observed=y)
        step = pmt.GrowPruneStep([mu])
    rows_bytes = 50 * 2000 * 4
    assert step.sampling_state.trees is None
    assert len(cloudpickle.dumps(step)) < rows_bytes  # data, model and compiled functions: ~290 kB
    fresh = step.sampling_state
    step.setup_chain(np.random.default_rng(1), tune=0, draws=5)
    point = model.initial_point()
    for _ in range(3):
        point, _ = step.step(point)
    assert step.forest.n_nodes.max() > 1
    swept = step.sampling_state
    assert swept.trees is not None and len(cloudpickle.dumps(step)) > rows_bytes
    step.sampling_state = fresh
    assert (step.forest.n_nodes == 1).all() and step.sampling_state.trees is None
    np.testing.assert_array_equal(step.forest.perm, np.tile(np.arange(2000, dtype=step.forest.perm.dtype), (50, 1)))
    np.testing.assert_allclose(step.f, 50 * step.prior.mu0)
    again = cloudpickle.loads(cloudpickle.dumps(step))
    np.testing.assert_array_equal(again.forest.perm, step.forest.perm)
    np.testing.assert_array_equal(again.f, step.f)


def test_every_stat_has_the_shape_it_declares():
    """A backend that honours declared shapes (PyMC's ZarrTrace) stacks each stat's per-draw values against its
    ``stats_dtypes_shapes``: a vector stat declared as a scalar failed there ("expected array with shape (10,),
    got (10, 3)", issue 45). The default backend allocates by dtype alone, so ``stats_dtypes`` keeps vectors as
    objects."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(40, 3))
    y = X[:, 0] + rng.normal(0.0, 0.1, 40)
    seen = []
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=3, split_prior="dirichlet")
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=y)
        step = pmt.CGMStep([mu])
        pm.sample(tune=2, draws=3, chains=1, step=[step], random_seed=1, progressbar=False,
                  compute_convergence_checks=False, callback=lambda trace, draw: seen.append(draw.stats))
    ours = [next(s for s in stats if "mu_forest" in s) for stats in seen]  # the tree step's stats of each draw
    vectors = 0
    for name, (dtype, shape) in step.stats_dtypes_shapes.items():
        if shape is None:
            continue
        stacked = np.stack([np.asarray(stats[name]) for stats in ours])
        assert stacked.shape == (len(ours), *shape), name
        if shape:
            assert stacked.dtype == np.dtype(dtype) and step.stats_dtypes[0][name] is object, name
            vectors += 1
    assert vectors == 2  # mu_split_counts and mu_split_weights
