"""pmt.distributed: chains on a dask cluster are pm.sample's chains, draw for draw; a lost worker costs
only its chain; the merged result works with predict, ArviZ and netCDF; bad arguments are refused
before anything starts."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm
import pytest

distributed = pytest.importorskip("dask.distributed")

import pymc_treesamplers as pmt  # noqa: E402
from pymc_treesamplers.distributed import ChainSeed, ChainsFailed  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KW = {"tune": 20, "draws": 20}
SEED = 20261125


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = X[:, 0] + np.sin(X[:, 1]) + rng.normal(scale=0.5, size=50)
    return X, y


def build_model():
    X, y = _data()
    with pm.Model() as model:
        mu = pmt.BART("mu", X, y, m=5)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=y)
    return model


def grow_prune(model):
    return [pmt.GrowPruneStep([model["mu"]])]


def die_in_chain_1(trace, draw):
    """A pm.sample callback that kills the worker process of chain 1 at its fourth draw."""
    if pmt.distributed.current_chain() == 1 and draw.draw_idx == 3:
        os._exit(1)


@pytest.fixture(scope="module")
def by_value():
    import cloudpickle

    # the workers cannot import this test module: send its functions by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def client(by_value):
    with pmt.distributed.local_cluster(2) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def merged(client):
    return pmt.distributed.sample(build_model, chains=4, client=client, random_seed=SEED, step=grow_prune,
                                  compute_convergence_checks=False, **KW)


def test_chains_are_pm_samples_chains(merged):
    model = build_model()
    with model:
        local = pm.sample(chains=4, cores=1, random_seed=SEED, step=grow_prune(model), progressbar=False,
                          compute_convergence_checks=False, **KW)
    assert set(merged.children) == set(local.children)
    np.testing.assert_array_equal(merged.posterior["chain"].values, np.arange(4))
    for name in ("mu", "sigma"):
        np.testing.assert_array_equal(merged.posterior[name].values, local.posterior[name].values)
    np.testing.assert_array_equal(merged.sample_stats["mu_forest"].values, local.sample_stats["mu_forest"].values)
    np.testing.assert_array_equal(merged.sample_stats["mu_split_counts"].values,
                                  local.sample_stats["mu_split_counts"].values)
    np.testing.assert_array_equal(merged.observed_data["y"].values, local.observed_data["y"].values)
    attrs = merged.posterior.attrs
    assert attrs["random_seed"] == SEED and attrs["tuning_steps"] == 20
    assert len(attrs["chain_sampling_time"]) == 4 and attrs["sampling_time"] > 0


def test_merged_result_predicts_diagnoses_and_round_trips(merged, tmp_path):
    X, _ = _data()
    # draw-matched: the stored forests at the training rows are the posterior draws of mu
    np.testing.assert_allclose(pmt.predict(merged, X, "mu"), merged.posterior["mu"].values, rtol=0, atol=1e-12)
    X_new = np.random.default_rng(1).normal(size=(7, 3))
    f_new = pmt.predict(merged, X_new, "mu")
    assert f_new.shape == (4, 20, 7)
    rhat, ess = az.rhat(merged), az.ess(merged)
    assert np.isfinite(rhat["sigma"].values) and np.isfinite(ess["sigma"].values)
    assert rhat["mu"].shape == (50,)
    path = tmp_path / "merged.nc"
    merged.to_netcdf(path)
    again = az.from_netcdf(path)
    np.testing.assert_array_equal(pmt.predict(again, X_new, "mu"), f_new)
    np.testing.assert_array_equal(again.posterior["sigma"].values, merged.posterior["sigma"].values)
    assert int(again.posterior.attrs["random_seed"]) == SEED


def test_a_dying_worker_costs_only_its_chain(client, merged):
    with pytest.raises(ChainsFailed, match=r"1 of 3 chains failed") as info:
        pmt.distributed.sample(build_model, chains=3, client=client, random_seed=SEED, step=grow_prune,
                               callback=die_in_chain_1, **KW)
    err = info.value
    assert set(err.failures) == {1}
    assert isinstance(err.failures[1], distributed.KilledWorker)
    assert "chain 1: the worker running it died" in str(err)
    idata = err.idata
    np.testing.assert_array_equal(idata.posterior["chain"].values, [0, 2])
    assert idata.posterior.attrs["failed_chains"] == [1]
    # chains 0 and 2 of a 3-chain run are chains 0 and 2 of the 4-chain run with the same seed
    np.testing.assert_array_equal(idata.posterior["sigma"].values, merged.posterior["sigma"].values[[0, 2]])


def test_a_raising_chain_is_reported_with_its_cause(client):
    def broken():
        raise ValueError("no data on this worker")

    with pytest.raises(ChainsFailed, match=r"2 of 2 chains failed \(none finished") as info:
        pmt.distributed.sample(broken, chains=2, client=client, random_seed=1, **KW)
    assert info.value.idata is None
    assert set(info.value.failures) == {0, 1}
    assert "chain 0: ValueError: no data on this worker" in str(info.value)
    assert info.value.__cause__ is info.value.failures[0]
    assert str(pickle.loads(pickle.dumps(info.value))) == str(info.value)


def test_own_cluster_fresh_seed_per_chain_initvals_and_warmup(by_value):
    """No client: sample starts and closes its own cluster; a fresh seed is recorded and reproduces the run;
    initvals per chain and the warmup groups come through."""
    initvals = [{"sigma": 0.5}, {"sigma": 2.0}]
    idata = pmt.distributed.sample(build_model, chains=2, step=grow_prune, initvals=initvals,
                                   discard_tuned_samples=False, **KW)
    seed = idata.posterior.attrs["random_seed"]
    assert isinstance(seed, int)
    model = build_model()
    with model:
        local = pm.sample(chains=2, cores=1, random_seed=seed, step=grow_prune(model), initvals=initvals,
                          discard_tuned_samples=False, progressbar=False, compute_convergence_checks=False, **KW)
    assert {"warmup_posterior", "warmup_sample_stats"} <= set(idata.children)
    for group in ("posterior", "warmup_posterior"):
        np.testing.assert_array_equal(idata[group]["sigma"].values, local[group]["sigma"].values)
    np.testing.assert_array_equal(idata.warmup_sample_stats["mu_forest"].values,
                                  local.warmup_sample_stats["mu_forest"].values)


def test_chain_seeds_are_pm_samples():
    """Chain i's generator is the i-th spawn pm.sample makes, for every kind of seed it takes."""
    from pymc.util import get_random_generator

    user_rng = np.random.default_rng(5)
    before = user_rng.bit_generator.state
    for seed in (SEED, [3, 4], user_rng, np.random.default_rng(np.random.SeedSequence(9, spawn_key=(2,)))):
        ours = ChainSeed.for_chains(seed, 3)
        theirs = get_random_generator(seed).spawn(3)
        for i in range(3):
            mine = ours[i].generator().spawn(1)[0]
            assert mine.bit_generator.state == theirs[i].bit_generator.state
            np.testing.assert_array_equal(mine.integers(2**30, size=4), theirs[i].integers(2**30, size=4))
    assert user_rng.bit_generator.state == before  # as in pm.sample, the caller's generator is not advanced


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((42,), {"chains": 2}, TypeError, "model_factory must be a callable"),
        ((build_model,), {"chains": 0}, ValueError, "chains must be at least 1"),
        ((build_model,), {"chains": "4"}, TypeError, "chains must be an int"),
        ((build_model,), {"chains": True}, TypeError, "chains must be an int"),
        ((build_model,), {"chains": 2, "cores": 2}, ValueError, "cores is not"),
        ((build_model,), {"chains": 2, "mp_ctx": "spawn"}, ValueError, "mp_ctx is not"),
        ((build_model,), {"chains": 2, "model": None}, ValueError, "model is not"),
        ((build_model,), {"chains": 2, "trace": None}, ValueError, "trace is not"),
        ((build_model,), {"chains": 2, "return_inferencedata": False}, ValueError, "return_inferencedata=False"),
        ((build_model,), {"chains": 2, "nuts_sampler": "numpyro"}, ValueError, "nuts_sampler='numpyro'"),
        ((build_model,), {"chains": 2, "step": object()}, TypeError, r"step must be a callable step\(model\)"),
        ((build_model,), {"chains": 2, "initvals": [{}, {}, {}]}, ValueError, "initvals has 3 entries for 2"),
        ((build_model,), {"chains": 2, "random_seed": -1}, ValueError, "random_seed=-1"),
        ((build_model,), {"chains": 2, "random_seed": np.random.RandomState(0)}, TypeError,
         "random_seed must be.*RandomState"),
        ((build_model,), {"chains": 2, "random_seed": "abc"}, TypeError, "random_seed=.abc. is not a seed"),
        ((build_model,), {"chains": 2, "client": "tcp://scheduler:8786"}, TypeError, "client must be a"),
    ],
)
def test_bad_arguments_are_refused_before_anything_starts(monkeypatch, args, kwargs, error, match):
    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(pmt.distributed, "local_cluster", no_cluster)
    with pytest.raises(error, match=match):
        pmt.distributed.sample(*args, **kwargs)


def test_chains_and_seed_cannot_come_twice():
    for name in ("chains", "random_seed"):
        with pytest.raises(TypeError, match=f"multiple values for keyword argument '{name}'"):
            pmt.distributed.sample(build_model, chains=2, random_seed=1, **{name: 3})


def test_without_dask_import_works_and_sample_names_the_extra():
    code = (
        "import sys\n"
        "sys.modules['dask'] = sys.modules['distributed'] = sys.modules['dask.distributed'] = None\n"
        "import pymc_treesamplers as pmt\n"
        "try:\n"
        "    pmt.distributed.sample(lambda: None, chains=1, random_seed=1)\n"
        "except ImportError as err:\n"
        "    print('ImportError:', err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert "pip install pymc-treesamplers[distributed]" in out.stdout
