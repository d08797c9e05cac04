"""The GPU sweep as a PyMC step: ``pmt.GrowPruneStep([mu], backend="cuda")`` and ``pmt.CGMStep([mu],
backend="cuda")`` (issue 32 item 2; steps/gpu.py).

1. The step's sweeps are the GPU sweep's own draws: driven by PyMC's ``step.step(point)`` with sigma fixed and an
   offset in the Normal mean that moves between draws (the device residual follows the pseudo-data), the
   ``"cuda-twin"`` step gives, draw after draw, the trees and the fit of a standalone ``DeviceChain`` (CPU twin)
   from the same seed and sigma. With the exactness tests of tests/test_gpu.py (twin = enumeration, device =
   twin), the step samples the posterior.
2. ``pm.sample`` with ``backend="cuda"`` on numba's CUDA simulator (a child process, NUMBA_ENABLE_CUDASIM=1)
   gives the ``"cuda-twin"`` run's draws (trees equal, mu and sigma to rounding), with sigma on its own step
   (NormalScaleGibbs) and an intercept on NUTS; ``pmt.predict`` reproduces mu from the stored forests, in both.
3. ``pmt.predict`` reproduces mu after netCDF, with missing values in X (the split columns of ``-x``): the stored
   forests are the CPU steps' format.
4. What the GPU sweep cannot do is refused when the step is built, naming the argument.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import arviz as az
import cloudpickle
import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers.results.storage import decode_forest

ROOT = Path(__file__).resolve().parent.parent


def _data(n=40, p=3, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p))
    y = 2.0 * (X[:, 0] > 0.5) + X[:, 1] + rng.normal(0, 0.3, n)
    if nan:
        X[rng.choice(n, n // 5, replace=False), 1] = np.nan
    return X, y


@pytest.mark.parametrize(("step_cls", "probs"), [("GrowPruneStep", (0.5, 0.5, 0.0, 0.0)),
                                                  ("CGMStep", (0.25, 0.25, 0.4, 0.1))])
def test_step_sweeps_are_the_gpu_sweeps_own_draws(step_cls, probs):
    """``GrowPruneStep`` and ``CGMStep`` with a GPU backend: each draw is a standalone sweep's with the step's
    move probabilities, from the same seed and sigma, with an offset that moves."""
    from pymc_treesamplers.gpu.device_chain import DeviceChain

    X, y = _data()
    sigma, m, draws = 0.5, 2, 25
    with pm.Model() as model:
        mu = pmt.BART("mu", X, y, m=m)
        pm.Normal("a", 0.0, 1.0)
        pm.Normal("y", mu + model["a"], sigma, observed=y)
        step = getattr(pmt, step_cls)([mu], backend="cuda-twin")
    step.setup_chain(np.random.default_rng(5), tune=0, draws=draws)
    prior = step.prior
    ref = DeviceChain(step.data.codes, y, m=m, alpha=prior.alpha, beta=prior.beta, mu0=prior.mu0,
                       sigma_mu=np.sqrt(prior.s2), fixed_sigma2=sigma**2, rng=np.random.default_rng(5),
                       dtype=np.float64, backend="cpu", move_probs=probs)
    point = model.initial_point()
    a_old = 0.0
    accepted = 0
    for s in range(draws):
        a_new = 0.3 * np.sin(s) if s >= 10 else 0.0  # the offset moves in the second half: z = y - a moves
        point["a"] = np.asarray(a_new)
        point, stats = step.step(point)
        if a_new != a_old:
            ref.shift_residual(np.full(len(y), a_old - a_new))
            a_old = a_new
        ref.sweep()
        assert np.array_equal(ref.row_leaves(), step._device.sweep.row_leaves()), s
        np.testing.assert_allclose(point["mu"], ref.fit(), rtol=0, atol=1e-10)
        accepted += stats[0]["mu_accept"] > 0
    assert accepted > 0  # the trees moved
    clone = cloudpickle.loads(cloudpickle.dumps(step))  # how PyMC ships steps to workers: no device state
    assert clone._device.sweep is None and not clone.f_is_current and clone.backend == "cuda-twin"


@pytest.mark.parametrize(("b", "ref_sigma"), [(2.5, "sigma / b"), (-0.5, "sigma / b"), (2.5, "sigma (wrong)")])
def test_an_affine_mean_is_the_sweep_on_rescaled_data(b, ref_sigma):
    """y ~ Normal(a + b * mu, sigma): the adapter hands the sweep the pseudo-data (y - a) / b with noise sd
    sigma / |b| (the exact Gaussian working model's z and weight b^2 / sigma^2), so the step's draws are a
    standalone sweep's on those data; a reference that keeps sigma (the scaling forgotten) is caught."""
    from pymc_treesamplers.gpu.device_chain import DeviceChain

    X, y = _data(seed=2)
    sigma, a, m, draws = 0.4, 0.7, 2, 30
    with pm.Model() as model:
        mu = pmt.BART("mu", X, y, m=m)
        pm.Normal("y", a + b * mu, sigma, observed=y)
        step = pmt.GrowPruneStep([mu], backend="cuda-twin")
    step.setup_chain(np.random.default_rng(8), tune=0, draws=draws)
    prior = step.prior
    s2 = (sigma / b) ** 2 if ref_sigma == "sigma / b" else sigma**2
    ref = DeviceChain(step.data.codes, (y - a) / b, m=m, alpha=prior.alpha, beta=prior.beta, mu0=prior.mu0,
                       sigma_mu=np.sqrt(prior.s2), fixed_sigma2=s2, rng=np.random.default_rng(8), dtype=np.float64,
                       backend="cpu")
    point, same, leaves = model.initial_point(), [], []
    for _ in range(draws):
        point, stats = step.step(point)
        leaves.append(stats[0]["mu_n_leaves"])
        ref.sweep()
        same.append(np.array_equal(ref.row_leaves(), step._device.sweep.row_leaves())
                    and np.allclose(point["mu"], ref.fit(), rtol=0, atol=1e-9))
    if ref_sigma == "sigma / b":
        assert all(same)
        assert max(leaves) > 1  # the trees grew: a real comparison
    else:
        assert not all(same)


SIM_SCRIPT = textwrap.dedent(
    """
    import json, warnings
    warnings.filterwarnings("ignore")
    import numpy as np, pymc as pm, pymc_treesamplers as pmt
    from pymc_treesamplers.results.storage import decode_forest

    rng = np.random.default_rng(1)
    n = 24
    X = rng.uniform(size=(n, 2))
    y = 1.0 + 2.0 * (X[:, 0] > 0.5) + rng.normal(0, 0.3, n)
    out = {}
    for backend in ("cuda", "cuda-twin", "cgm-cuda", "cgm-cuda-twin"):
        with pm.Model():
            mu = pmt.BART("mu", X, y, m=2)
            a = pm.Normal("a", 0.0, 2.0)
            sigma = pm.HalfNormal("sigma", 1.0)
            pm.Normal("y", mu + a, sigma, observed=y)
            tree_step = (pmt.CGMStep([mu], backend=backend[4:]) if backend.startswith("cgm")
                         else pmt.GrowPruneStep([mu], backend=backend))
            step = [tree_step, pmt.NormalScaleGibbs([sigma]), pm.NUTS([a])]
            idata = pm.sample(tune=4, draws=8, chains=1, cores=1, random_seed=11, progressbar=False,
                              compute_convergence_checks=False, step=step)
        post = idata.posterior
        trees = [decode_forest(str(t)) for t in idata.sample_stats["mu_forest"].values.reshape(-1)]
        counts, var, val = (np.concatenate([t[i] for t in trees]) for i in (1, 2, 3))
        out[backend] = dict(mu=post["mu"].values.tolist(), sigma=post["sigma"].values.ravel().tolist(),
                            a=post["a"].values.ravel().tolist(), counts=counts.tolist(), var=var.tolist(),
                            val=val.tolist(), pred=pmt.predict(idata, X, "mu").tolist(),
                            accept=idata.sample_stats["mu_accept"].values.ravel().tolist())
    print("RESULT" + json.dumps(out))
    """
)


def test_pm_sample_on_the_cuda_simulator_gives_the_twins_draws():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-c", SIM_SCRIPT], env=env, capture_output=True, text=True, timeout=600,
                          cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    res = json.loads(line[len("RESULT"):])
    for prefix in ("", "cgm-"):  # GrowPruneStep, CGMStep
        dev, twin = res[prefix + "cuda"], res[prefix + "cuda-twin"]
        assert dev["counts"] == twin["counts"] and dev["var"] == twin["var"]  # the same trees every draw
        np.testing.assert_allclose(dev["val"], twin["val"], rtol=0, atol=1e-9)
        for key in ("mu", "sigma", "a"):
            np.testing.assert_allclose(dev[key], twin[key], rtol=1e-9, atol=1e-9)
        for run in (dev, twin):
            np.testing.assert_allclose(run["pred"], run["mu"], rtol=0, atol=1e-12)  # predict reads the stored trees
        assert sum(dev["accept"]) > 0  # the trees moved
    assert res["cuda"]["var"] != res["cgm-cuda"]["var"]  # the move probabilities reached the sweep


def test_predict_reproduces_mu_after_netcdf_with_missing_values(tmp_path):
    X, y = _data(n=50, nan=True)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=3)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=y)
        step = pmt.GrowPruneStep([mu], backend="cuda-twin")
        assert step.data.codes.shape[0] == 4  # x0, x1, x2 and -x1
        idata = pm.sample(tune=10, draws=15, chains=1, cores=1, random_seed=2, progressbar=False,
                          compute_convergence_checks=False, step=[step, pmt.NormalScaleGibbs([sigma])])
    path = tmp_path / "gpu.nc"
    idata.to_netcdf(path)
    again = az.from_netcdf(path)
    pred = pmt.predict(again, X, "mu")
    np.testing.assert_allclose(pred, idata.posterior["mu"].values, rtol=0, atol=1e-12)
    stats = idata.sample_stats
    assert stats["mu_split_counts"].shape == (1, 15, 3)
    # the stats agree with the stored trees
    _, counts, var, _ = decode_forest(str(stats["mu_forest"].values.reshape(-1)[-1]))
    assert stats["mu_n_leaves"].values[0, -1] == pytest.approx((var < 0).sum() / 3)
    assert stats["mu_split_counts"].values[0, -1].sum() == (var >= 0).sum()
    assert stats["mu_n_leaves"].values.max() > 1


@pytest.mark.parametrize("cores", [1, 2], ids=["chains-in-turn", "chains-in-processes"])
def test_several_chains_each_start_their_own_device_state(cores):
    """Two chains, one after the other in this process (the step's state restored between them) or in two
    worker processes (the step pickled without its device state): each chain makes its own sweep from its own
    seed, so the chains differ, and each chain's stored forests reproduce its own mu."""
    X, y = _data(n=50)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=3)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=y)
        idata = pm.sample(tune=5, draws=10, chains=2, cores=cores, random_seed=4, progressbar=False,
                          compute_convergence_checks=False,
                          step=[pmt.CGMStep([mu], backend="cuda-twin"), pmt.NormalScaleGibbs([sigma])])
    mu_draws = idata.posterior["mu"].values
    assert not np.array_equal(mu_draws[0], mu_draws[1])
    np.testing.assert_allclose(pmt.predict(idata, X, "mu"), mu_draws, rtol=0, atol=1e-12)
    assert idata.sample_stats["mu_n_leaves"].values.max() > 1


def _model(kind="normal"):
    X, y = _data(n=30)
    model = pm.Model()
    with model:
        if kind == "bernoulli":
            mu = pmt.BART("mu", X, (y > 1.5).astype(float), m=2)
            pm.Bernoulli("y", logit_p=mu, observed=(y > 1.5).astype(int))
        elif kind == "outputs":
            mu = pmt.BART("mu", X, y, m=2, shape=(2, 30))
            pm.Normal("y", mu[0] + mu[1], 1.0, observed=y)
        elif kind == "split_prior":
            mu = pmt.BART("mu", X, y, m=2, split_prior=[0.5, 0.3, 0.2])
            pm.Normal("y", mu, 1.0, observed=y)
        elif kind == "dart":
            mu = pmt.BART("mu", X, y, m=2, split_prior="dirichlet")
            pm.Normal("y", mu, 1.0, observed=y)
        elif kind == "wide":
            Xw = np.random.default_rng(0).uniform(size=(30, 33))
            mu = pmt.BART("mu", Xw, y, m=2)
            pm.Normal("y", mu, 1.0, observed=y)
        elif kind == "rows":
            mu = pmt.BART("mu", X, y, m=2)
            pm.Normal("y", mu, np.linspace(0.5, 1.5, 30), observed=y)
        else:
            mu = pmt.BART("mu", X, y, m=2)
            pm.Normal("y", mu, 1.0, observed=y)
    return model, mu


@pytest.mark.parametrize(("kind", "match"), [
    ("bernoulli", "only the exact Gaussian route"),
    ("outputs", "2 outputs"),
    ("split_prior", "split_prior"),
    ("dart", "split_prior with a Dirichlet prior"),
    ("wide", "33 split columns"),
    ("rows", "one sigma"),
])
def test_what_the_gpu_sweep_cannot_do_is_refused(kind, match):
    model, mu = _model(kind)
    with model, pytest.raises(ValueError, match=match):
        pmt.GrowPruneStep([mu], backend="cuda-twin")


def test_bad_options_are_refused_by_name():
    model, mu = _model()
    with model:
        with pytest.raises(ValueError, match="backend must be one of"):
            pmt.GrowPruneStep([mu], backend="gpu")
        with pytest.raises(ValueError, match="threads=4"):
            pmt.GrowPruneStep([mu], backend="cuda-twin", threads=4)
        assert pmt.GrowPruneStep([mu], backend="cpu").backend == "cpu"


def test_cuda_without_a_device_or_numba_cuda_says_how_to_install(monkeypatch):
    from numba import cuda

    model, mu = _model()
    if not (cuda.is_available() or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"):
        with model, pytest.raises(RuntimeError, match=r"pymc-treesamplers\[gpu\]"):
            pmt.GrowPruneStep([mu], backend="cuda")
    import numba

    monkeypatch.delattr(numba, "cuda", raising=False)  # numba without its CUDA target
    monkeypatch.setitem(sys.modules, "numba.cuda", None)
    with model, pytest.raises(ImportError, match=r"pip install 'pymc-treesamplers\[gpu\]'"):
        pmt.GrowPruneStep([mu], backend="cuda")
