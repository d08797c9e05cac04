"""The data-parallel prototype (prototypes/mpi.py) is the package's grow/prune chain, over MPI
ranks.

* One process reproduces ``GrowPruneStep`` tree for tree (same seed, same data, sigma fixed).
* Two ranks under ``mpirun`` reproduce the one-process chain: identical tree structures and split rules
  every sweep; leaf values and sigma equal up to ``RTOL``. Bitwise equality is not expected: a rank adds
  its rows' ``w r`` in its own order and the all-reduce adds the ranks' partial sums, so a sum over a
  node's rows is associated differently than in one process (differences near 1e-16 relative, which
  the chain carries on through the residuals but does not amplify); ``RTOL = 1e-9`` leaves room for that
  and for nothing a wrong reduction does.
* A deliberately wrong reduction (leaf sums or code ranges of one rank's rows only) fails that test.

The ``mpirun`` tests are slow (MPI start-up and numba cache loading per rank) and skip without mpi4py or an
MPI launcher (``PMT_MPIRUN`` names one; default: the ``mpirun`` next to this Python, then on PATH).
"""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from prototypes.mpi import Fit, Reducer, bin_rows, compare_fits, fit
from pymc_treesamplers.datasets import friedman1
from pymc_treesamplers.model.binning import split_columns

ROOT = Path(__file__).resolve().parent.parent
RTOL = 1e-9
TIMEOUT = 600  # seconds: a cold numba cache compiles the kernels in both ranks at once on 2 cores


def _data(n=300, p=5, seed=1):
    X, y, _ = friedman1(n, p=p, rng=seed)
    return X, y


def _steps_data():
    """Few-valued, constant and continuous columns and a sharp signal: deep trees, many prunes."""
    rng = np.random.default_rng(3)
    n = 200
    X = np.column_stack([rng.integers(0, 4, n), rng.uniform(size=n), np.ones(n), rng.integers(0, 2, n)]).astype(float)
    y = 3 * np.sin(4 * X[:, 1]) + X[:, 0] - 2 * X[:, 3] + 0.1 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("case", [
    pytest.param(dict(data=_data, m=8, sweeps=40, seed=7, sigma=1.0), id="friedman"),
    pytest.param(dict(data=_steps_data, m=5, sweeps=200, seed=1, sigma=0.1), id="deep-trees"),
])
def test_one_process_is_the_package_growprune_chain(case):
    """comm=None replays GrowPruneStep's chain: the same random numbers drive the same moves, so every
    sweep's forest (structure, rules, leaf values) is the step's."""
    X, y = case["data"]()
    m, sweeps, seed, sigma = case["m"], case["sweeps"], case["seed"], case["sigma"]
    with pm.Model() as model:
        mu = pmt.BART("mu", X, y, m=m)
        pm.Normal("y", mu, sigma, observed=y)
        step = pmt.GrowPruneStep([mu])
    step.setup_chain(np.random.default_rng(seed), tune=0, draws=sweeps)
    point, forests = model.initial_point(), []
    for _ in range(sweeps):
        point, stats = step.step(point)
        forests.append(stats[0]["mu_forest"])
    package = Fit(forests, np.full(sweeps, sigma), *np.zeros((6, sweeps)))
    ours = fit(X, y, m=m, n_sweeps=sweeps, seed=seed, sigma=sigma)
    assert compare_fits(ours, package, rtol=RTOL) == []
    assert ours.n_leaves.max() > 2 and 0 < ours.accept.mean() < 1  # the chain moved: a real comparison
    # and a different seed is a different chain, which compare_fits reports
    assert compare_fits(fit(X, y, m=m, n_sweeps=sweeps, seed=seed + 1, sigma=sigma), package, rtol=RTOL)


def test_binned_rows_are_the_package_codes():
    """bin_rows codes as split_columns does: ranks of distinct values, and quantile bins beyond max_bins."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(size=400), rng.integers(0, 5, size=400), rng.normal(size=400)])
    codes, table = bin_rows(X, Reducer(None), max_bins=64)
    ref = split_columns(X, 64)
    np.testing.assert_array_equal(codes, ref.codes)
    np.testing.assert_array_equal(table, ref.threshold_table())


def _mpirun() -> list[str]:
    pytest.importorskip("mpi4py")
    launcher = os.environ.get("PMT_MPIRUN") or shutil.which("mpirun", path=str(Path(sys.executable).parent)) \
        or shutil.which("mpirun")
    if launcher is None:
        pytest.skip("no MPI launcher (set PMT_MPIRUN or install the mpich wheel)")
    cmd = [launcher, "-n", "2"]
    if (Path(launcher).parent / "mpiexec.hydra").exists():
        cmd[1:1] = ["-launcher", "fork"]  # MPICH's hydra: start the ranks locally, never through ssh
    return cmd


def _run_ranks(tmp_path, X, y, *options) -> tuple[subprocess.CompletedProcess, Path]:
    """``mpirun -n 2 python -m prototypes.mpi`` on X, y; the whole process group is killed on
    timeout."""
    data, out = tmp_path / "xy.npz", tmp_path / "draws.npz"
    np.savez(data, X=X, y=y)
    cmd = _mpirun() + [sys.executable, "-m", "prototypes.mpi", "--data", str(data),
                       "--out", str(out), *options]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} did not finish in {TIMEOUT} s\nstdout:\n{stdout}\nstderr:\n{stderr}")
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr), out


def _two_ranks(tmp_path, X, y, m, sweeps, seed, *options) -> Fit:
    proc, out = _run_ranks(tmp_path, X, y, "--m", str(m), "--sweeps", str(sweeps), "--seed", str(seed), *options)
    assert proc.returncode == 0 and out.exists(), (
        f"{' '.join(proc.args)} failed ({proc.returncode})\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return Fit.load(out)


def test_two_ranks_give_the_one_process_draws(tmp_path):
    """The equality test: rows split over 2 ranks, sigma drawn by Gibbs, the same chain as one process."""
    X, y = _data(n=500, p=6, seed=2)
    m, sweeps, seed = 10, 40, 11
    ranks = _two_ranks(tmp_path, X, y, m, sweeps, seed)
    one = fit(X, y, m=m, n_sweeps=sweeps, seed=seed)
    assert compare_fits(ranks, one, rtol=RTOL) == []
    assert one.n_leaves.max() > 2 and np.ptp(one.sigma) > 0
    np.testing.assert_array_equal(ranks.calls, one.calls)  # the same all-reduces, counted in one process too


@pytest.mark.parametrize("unreduced", ["leaves", "ranges"])
def test_a_wrong_reduction_fails_the_equality_test(tmp_path, unreduced):
    """Leaf sums, or code ranges, of each rank's own rows instead of all-reduced ones, with the per-sweep
    agreement check off: the run does not give the one-process draws. Unreduced leaf sums keep the ranks
    in step (every decision still reads all-reduced ratio sums) and the draws differ; unreduced code
    ranges give the ranks different trees, so their next reductions differ in size and MPI stops the run
    (here: a truncated message) or, if the sizes happen to match, the draws differ."""
    X, y = _data(n=500, p=6, seed=2)
    m, sweeps, seed = 10, 40, 11
    proc, out = _run_ranks(tmp_path, X, y, "--m", str(m), "--sweeps", str(sweeps), "--seed", str(seed),
                           "--unreduced", unreduced, "--no-check")
    if unreduced == "leaves":
        assert proc.returncode == 0, proc.stderr
    if proc.returncode == 0:
        assert compare_fits(Fit.load(out), fit(X, y, m=m, n_sweeps=sweeps, seed=seed), rtol=RTOL) != []
    else:
        assert not out.exists()


def test_ranks_that_disagree_stop_with_a_clear_error(tmp_path):
    """With the check on (the default), ranks whose replicated state diverged abort all together after the
    sweep in which it happened, saying why, rather than return draws or wait for each other forever."""
    X, y = _data(n=500, p=6, seed=2)
    proc, out = _run_ranks(tmp_path, X, y, "--m", "10", "--sweeps", "40", "--seed", "11", "--unreduced", "ranges")
    assert proc.returncode != 0 and not out.exists()
    assert "replicated states differ" in proc.stderr, proc.stderr
