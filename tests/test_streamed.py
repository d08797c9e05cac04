"""Long runs streamed to disk by PyMC's ZarrTrace, read back by ``pmt.load_zarr``: every tree step writes its
draws and forests as they are drawn, predictions from the store are the draws, and a store whose writer was
killed loads the draws so far and predicts from them.

PyMC's writer pickles its sampling state (and the forests, object stats) with numcodecs, which decodes pickles
only when trusted: the tests set ``NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE`` as a user of ZarrTrace must
(docs/predictions.md).
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

os.environ.setdefault("NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE", "1")
zarr = pytest.importorskip("zarr")  # the test extra installs it; a bare install may not have it

import numcodecs  # noqa: E402

# numcodecs reads the variable when it is first imported, which another test module may have done already
numcodecs.pickles.ALLOW_UNSAFE_PICKLE_DECODE = True
import pymc as pm  # noqa: E402
from pymc.backends.zarr import ZarrTrace  # noqa: E402

import pymc_treesamplers as pmt  # noqa: E402
from tests.helpers.samplers import MAIN  # noqa: E402

RNG = np.random.default_rng(45)
X = RNG.uniform(size=(40, 2))
Y = np.sin(3 * X[:, 0]) + 0.1 * RNG.normal(size=40)


def test_pickles_are_trusted_here():
    # the store cannot be written otherwise (PyMC's sampling state is pickled)
    assert numcodecs.pickles.ALLOW_UNSAFE_PICKLE_DECODE


@pytest.mark.parametrize("s", [pytest.param(s, id=s.name) for s in MAIN])
def test_every_tree_step_streams_draws_and_forests(s, tmp_path):
    with pm.Model():
        mu = pmt.BART("mu", X, Y, m=3)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=Y)
        trace = ZarrTrace(store=zarr.DirectoryStore(str(tmp_path / "run.zarr")))
        pm.sample(tune=5, draws=6, chains=2, cores=1, step=[s.step([mu])], trace=trace, random_seed=3,
                  return_inferencedata=False, progressbar=False, compute_convergence_checks=False)
    idata = pmt.load_zarr(str(tmp_path / "run.zarr"))
    post = idata["posterior"]["mu"].values
    assert post.shape == (2, 6, 40)
    assert idata["warmup_posterior"]["mu"].shape == (2, 5, 40)
    assert "mu_forest" in idata["sample_stats"] and idata["sample_stats"]["mu_split_counts"].shape == (2, 6, 2)
    np.testing.assert_allclose(pmt.predict(idata, X, "mu"), post, rtol=1e-12, atol=1e-12)


WRITER = textwrap.dedent("""
    import os, signal, sys
    import numpy as np, pymc as pm, zarr
    from pymc.backends.zarr import ZarrTrace
    import pymc_treesamplers as pmt
    rng = np.random.default_rng(45)
    X = rng.uniform(size=(40, 2)); Y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=40)

    def die(trace, draw):
        # killed, not stopped: no Python clean-up runs, as when a machine or a job scheduler ends the process
        if draw.chain == 1 and draw.draw_idx == 7:
            os.kill(os.getpid(), signal.SIGKILL)

    with pm.Model():
        mu = pmt.BART("mu", X, Y, m=3)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=Y)
        trace = ZarrTrace(store=zarr.DirectoryStore(sys.argv[1]))
        pm.sample(tune=5, draws=10, chains=2, cores=1, step=[pmt.CGMStep([mu])], trace=trace, random_seed=3,
                  return_inferencedata=False, progressbar=False, compute_convergence_checks=False, callback=die)
""")


def test_a_store_whose_writer_was_killed_loads_and_predicts(tmp_path):
    path = str(tmp_path / "run.zarr")
    done = subprocess.run([sys.executable, "-c", WRITER, path], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE": "1"})
    assert done.returncode == -9, done.stderr[-2000:]
    idata = pmt.load_zarr(path)
    post = idata["posterior"]["mu"].values
    # chain 0 finished its 10 draws, chain 1 was killed during its 3rd after tuning: the draws both finished
    assert post.shape[0] == 2 and 1 <= post.shape[1] < 10
    assert np.isfinite(post).all()
    np.testing.assert_allclose(pmt.predict(idata, X, "mu"), post, rtol=1e-12, atol=1e-12)


def test_a_store_pm_sample_did_not_write_is_refused(tmp_path):
    zarr.open_group(str(tmp_path / "other.zarr"), mode="w")
    with pytest.raises(ValueError, match="_sampling_state"):
        pmt.load_zarr(str(tmp_path / "other.zarr"))
