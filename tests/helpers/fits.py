"""Small PyMC fits shared by the end-to-end tests."""

import contextlib
from unittest import mock

import numpy as np
import pymc as pm

import pymc_treesamplers as pmt
from pymc_treesamplers.datasets import friedman1
from pymc_treesamplers.results.predictive import _extended, leaf_positions
from pymc_treesamplers.results.storage import decode_forest
from tests.helpers.exact import partition_key


def fit_friedman(step_cls=None, options=None, seed=1, chains=2, cores=1, draws=50, tune=50, n=100, m=10):
    """BART + NUTS sigma on Friedman #1 with 5 covariates; ``step_cls=None``: PyMC's assignment (which
    gives sigma to NormalScaleGibbs).

    Returns ``(model, X, idata)``.
    """
    X, y, _ = friedman1(n, p=5, rng=0)
    with pm.Model() as model:
        mu = pmt.BART("mu", X, y, m=m)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu, sigma, observed=y)
        step = None if step_cls is None else [step_cls([mu], **(options or {})), pm.NUTS([sigma])]
        idata = pm.sample(tune=tune, draws=draws, chains=chains, cores=cores, random_seed=seed, step=step,
                          progressbar=False, compute_convergence_checks=False)
    return model, X, idata


def forest_partition_keys(idata, var, codes, thin, parents=False):
    """Each kept draw's row partition per tree, read from the stored forests of ``var`` (one chain, every
    ``thin``-th draw): a tuple of one :func:`~tests.helpers.exact.partition_key` per tree. A forest on a basis of
    several columns is stored as one forest per coefficient, the same trees: the first is read. With ``parents``,
    each tree's :func:`~tests.helpers.exact.leaf_structure` instead (the rows and parent's covariate of each leaf)."""
    X = _extended(np.ascontiguousarray(codes, dtype=float))
    keys = []
    for text in idata.sample_stats[f"{var}_forest"].values.reshape(-1)[::thin]:
        p, counts, vars_, vals = decode_forest(str(text).split(",")[0])
        leaf = np.empty((counts.shape[0], X.shape[0]), dtype=np.int64)
        leaf_positions(counts, vars_, vals, X, leaf, 2 * p)
        if not parents:
            keys.append(tuple(partition_key(row) for row in leaf))
            continue
        up = _preorder_parents(counts, vars_)
        keys.append(tuple(tuple(sorted((tuple(int(i) for i in np.flatnonzero(row == k)),
                                        int(vars_[up[k]] % p) if up[k] >= 0 else -1) for k in np.unique(row)))
                          for row in leaf))
    return keys


def _preorder_parents(counts, vars_):
    """The parent's position of every node of preorder trees (``-1`` for a root)."""
    up = np.full(vars_.shape[0], -1)
    start = 0
    for c in counts:
        stack = []  # internal nodes still missing a child: [position, children seen]
        for k in range(start, start + c):
            if stack:
                up[k] = stack[-1][0]
                stack[-1][1] += 1
                if stack[-1][1] == 2:
                    stack.pop()
            if vars_[k] >= 0:
                stack.append([k, 0])
        start += c
    return up


def assert_state_resumes(model, step, var: str):
    """Three steps from the initial point, then: two more steps from there equal two steps after restoring the
    step's sampling state with the point it produced (the chain resumes exactly). Returns the last point and the
    last step's stats of both runs."""
    step.setup_chain(np.random.default_rng(1), tune=0, draws=10)
    point = model.initial_point()
    for _ in range(3):
        point, _ = step.step(point)
    state, saved = step.sampling_state, dict(point)
    first, stats = step.step(step.step(point)[0])
    step.sampling_state = state
    again, stats_again = step.step(step.step(saved)[0])
    np.testing.assert_array_equal(first[var], again[var])
    return again, stats, stats_again


@contextlib.contextmanager
def leaf_proposal(refine: bool):
    """Within it, the expansion route proposes leaves from the Newton-refined ``q`` (``refine``) or from their
    working conditional, whatever its own rule would choose (``FamilyWorkingModel.choose_leaf_proposal``), so a
    test covers both."""
    from pymc_treesamplers.routes.family import FamilyWorkingModel

    def choose(self, m):
        self.refine = bool(refine)
        return self.refine

    with mock.patch.object(FamilyWorkingModel, "choose_leaf_proposal", choose):
        yield
