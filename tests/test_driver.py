"""The backfitting driver's own protocols: rejected proposals, and trees outgrowing the forest's arrays.

The samplers' exactness is tested in tests/test_matrix.py; here, the two paths of
engine/driver.py that the Gaussian samplers do not take every sweep:

* the accept hook of a likelihood record (the exact Gaussian one always keeps the proposal): a
  record that keeps it with probability 1/2 must still give the exact posterior (a lazy version of
  an exact kernel is exact), and one that never keeps it must leave every tree's partition as it was,
  with its rows re-split consistently with its rules;
* the resume protocol: a tree whose update does not fit the forest's node arrays returns to the
  step, which grows them and resumes; the draws must not depend on the starting capacity.
"""

import numba
import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers.datasets import friedman1
from pymc_treesamplers.engine.driver import SWEEP_DONE, new_scratch_tree, sweep
from pymc_treesamplers.engine.forest import Forest, forest_sum, init_roots
from pymc_treesamplers.engine.nodes import CUT, END, FALSE, LEFT, PARENT, ROOT, START, VAR
from pymc_treesamplers.engine.records import TreePrior, split_data, tree_of
from pymc_treesamplers.testing import LazyGaussian
from tests.helpers.exact import (
    empirical,
    exact_partition_posterior,
    partition_key,
    tiny_data,
    tv_distance,
    tv_threshold,
)
from tests.helpers.kernel_chain import make_step
from tests.helpers.samplers import MAIN
from tests.helpers.trees import grow_random


@numba.njit(cache=True)
def _lazy_chain(rng, n_draws, thin, keep, data, prior, forest, r, w, labels, work, sk, changed):
    f = np.empty(r.shape[0])
    for d in range(n_draws):
        for _ in range(thin):
            forest_sum(forest, f)
            code, _ = sweep(rng, ROOT, forest.ints.shape[0], FALSE, data, prior, forest, LazyGaussian(r - f, w, keep),
                            work, sk, changed)
            if code != SWEEP_DONE:
                raise RuntimeError("sweep did not finish")
        for k in range(forest.n_nodes[0]):
            if forest.ints[0, k, LEFT] < 0:
                for q in range(forest.ints[0, k, START], forest.ints[0, k, END]):
                    labels[d, forest.perm[0, q]] = k


def _lazy_draws(step_cls, options, keep, n_draws, thin, seed, start_splits=0):
    codes, r, w = tiny_data(0)
    w = np.ones(len(r))
    data = split_data(codes.T, np.ones(2))
    n = len(r)
    forest = Forest.empty(1, n, 0.0, cap=4 * n)
    init_roots(forest.arrays(), data, 0.0)
    if start_splits:
        grow_random(tree_of(forest.arrays(), 0), data.codes, np.random.default_rng(start_splits), start_splits)
    labels = np.empty((n_draws, n), dtype=np.int64)
    step = make_step(step_cls, options, n, 2)
    _lazy_chain(np.random.default_rng(seed), n_draws, thin, keep, data, TreePrior(0.95, 2.0, 0.0, 1.0),
                forest.arrays(), r, w, labels, new_scratch_tree(n), step.new_scratch(data.codes, 1),
                np.zeros(1, np.bool_))
    return codes, r, w, forest, [partition_key(row) for row in labels]


@pytest.mark.parametrize(("step_cls", "options", "thin"), [(pmt.CGMStep, {}, 40), (pmt.PGBARTStep, {}, 40)],
                         ids=["cgm", "pg"])
def test_lazy_acceptance_keeps_the_exact_posterior(step_cls, options, thin):
    """Half the proposals rejected by the likelihood record: still the exact posterior (thinning
    doubled from the registry's 20 for the laziness)."""
    codes, r, w, _, keys = _lazy_draws(step_cls, options, 0.5, 10_000, thin, seed=4)
    exact = exact_partition_posterior(codes, r, w, 0.95, 2.0, 0.0, 1.0)
    assert tv_distance(exact, empirical(keys)) < tv_threshold(exact, len(keys))


# CGM reorders rows within subtrees (change, swap), PG replaces the whole row order; the reject path
# itself does not depend on the sampler
@pytest.mark.parametrize("step_cls", [pmt.CGMStep, pmt.PGBARTStep])
def test_rejected_proposals_leave_the_tree_and_its_rows_consistent(step_cls):
    codes, _, _, forest, keys = _lazy_draws(step_cls, {}, 0.0, 200, 1, seed=5, start_splits=3)
    assert len(set(keys)) == 1 and max(keys[0]) > 0  # a split tree that never moved
    t = tree_of(forest.arrays(), 0)
    for k in range(1, t.nn[0]):  # every node's rows are on its side of its parent's rule
        parent = t.ints[k, PARENT]
        rows = t.perm[t.ints[k, START]:t.ints[k, END]]
        went_left = t.ints[parent, LEFT] == k
        assert np.all((codes[rows, t.ints[parent, VAR]] <= t.ints[parent, CUT]) == went_left)


@pytest.mark.parametrize("s", [pytest.param(s, id=s.name) for s in MAIN])
def test_draws_do_not_depend_on_the_forests_starting_capacity(s):
    """Capacity 2 makes almost every tree outgrow the forest's arrays: the driver returns, the step
    grows them and resumes at that tree, and the chain is the same as with room to spare."""
    X, y, _ = friedman1(80, p=5, rng=1)

    def draws(cap):
        with pm.Model() as model:
            mu = pmt.BART("mu", X, y, m=6)
            pm.Normal("y", mu, 1.0, observed=y)
            step = s.step([mu], **s.options)
        step.setup_chain(np.random.default_rng(3), tune=0, draws=20)
        step.forest = Forest.empty(step.m, step.n, step.prior.mu0, cap=cap)
        init_roots(step.forest.arrays(), step.data, step.prior.mu0)
        point, out = model.initial_point(), []
        for _ in range(20):
            point, _ = step.step(point)
            out.append(point["mu"].copy())
        return np.array(out), step.forest.capacity

    small, grown = draws(2)
    large, _ = draws(64)
    assert grown > 2
    np.testing.assert_array_equal(small, large)
