"""numba's threading layer and pool are set up by the package's ways into the kernels, not by importing it
(engine/pool.py): each way is the first kernel call of a fresh process, run twice so that the second run loads
every kernel from numba's on-disk cache (the single-tree SMC crashed there on a warm cache while nothing had
started the pool). A way in that skips :func:`~pymc_treesamplers.engine.pool.start` leaves numba's default
layer, which fails here (checked by making ``start`` do nothing: every case failed)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_PRELUDE = """
import numba, numpy as np
import pymc_treesamplers as pmt
user = "NUMBA_THREADING_LAYER" in __import__("os").environ
assert user or numba.config.THREADING_LAYER == "default", numba.config.THREADING_LAYER  # import chose nothing
X = np.random.default_rng(0).uniform(size=(40, 2)); y = X[:, 0] + 0.1 * np.random.default_rng(1).normal(size=40)
"""

WAYS = {
    "gfr": "pmt.GFRRegressor(m=3, sweeps=3, burn=1, random_state=0).fit(X, y).predict(X)",
    "smctree": "pmt.SMCTreeRegressor(n_particles=5, n_islands=1, random_state=0).fit(X, y).predict(X)",
    "predict": ("from pymc_treesamplers.results.storage import encode_preorder\n"
                "from pymc_treesamplers.results.predictive import predict_forests\n"
                "predict_forests([encode_preorder([3], [0, -1, -1], [0.5, -1.0, 1.0], p=2)], X)"),
    "prior-predictive": ("import pymc as pm\n"
                         "with pm.Model():\n"
                         "    mu = pmt.BART('mu', X, y, m=2)\n"
                         "    pm.sample_prior_predictive(draws=2, random_seed=0)"),
    "step": ("import pymc as pm\n"
             "with pm.Model():\n"
             "    mu = pmt.BART('mu', X, y, m=2)\n"
             "    pm.Normal('y', mu, 0.1, observed=y)\n"
             "    pm.sample(tune=2, draws=2, chains=1, cores=1, progressbar=False, compute_convergence_checks=False)"),
}


@pytest.mark.parametrize("way", sorted(WAYS))
def test_each_way_in_sets_up_the_pool_from_a_fresh_process(way):
    script = _PRELUDE + WAYS[way] + "\nprint('layer', numba.config.THREADING_LAYER)\n"
    for _ in range(2):  # the second run's kernels all come from the cache
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=600,
                             env=os.environ.copy())
        assert out.returncode == 0, out.stderr[-3000:]
    chosen = os.environ.get("NUMBA_THREADING_LAYER")  # the user's choice is kept, else TBB or workqueue
    assert any(f"layer {name}" in out.stdout for name in ([chosen] if chosen else ["tbb", "workqueue"])), out.stdout


def test_import_leaves_the_pool_and_a_chain_starts_it():
    """A kernel that links the parallel loops and is loaded from numba's cache before the pool started crashed
    the process (the single-tree SMC's notebook, on a warm cache): importing the package starts nothing, the first
    chain starts the pool."""
    code = ("import numba.np.ufunc.parallel as par, numpy as np\n"
            "import pymc_treesamplers\n"
            "assert not par._is_initialized\n"
            "from pymc_treesamplers.engine.chain import Chain\n"
            "Chain.new(np.zeros((1, 3), np.uint16), 1, alpha=0.95, beta=2.0, mu0=0.0, s2=1.0)\n"
            "print(par._is_initialized)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
