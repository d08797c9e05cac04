"""Run the package's own sweep kernel for one tree over many iterations, inside numba.

Used by the exactness tests so that 10^6 sweeps on tiny data take about a second. It calls the
same ``sweep`` the step methods call; only the outer loop (and fixed pseudo-data) is test code.
"""

import numba
import numpy as np
from exact import partition_key

from pymc_treesamplers.forest import Forest, forest_sum, init_root_availability
from pymc_treesamplers.kernels.ct import sweep_ct
from pymc_treesamplers.kernels.pg import sweep_pg
from pymc_treesamplers.kernels.sweep import KIND_MH, sweep
from pymc_treesamplers.layout import END, LEFT, START


@numba.njit(cache=True)
def _chain(rng, n_draws, thin, kind, probs, codes, wsplit, logw, prm, ints, floats, perm, n_nodes, r, w, labels,
           pg_opts, Pi, Pf, Ps, Pperm, Pnn, Phead, Pmap):
    n = r.shape[0]
    f = np.empty(n)
    moves = np.zeros(ints.shape[0], dtype=np.int64)
    accepted = np.zeros(ints.shape[0], dtype=np.bool_)
    stages = np.zeros(ints.shape[0], dtype=np.int64)
    status = np.zeros(2, dtype=np.int64)
    for d in range(n_draws):
        for _ in range(thin):
            forest_sum(ints, floats, perm, n_nodes, f)
            resid = r - f
            if kind == KIND_MH:
                j = sweep(rng, 0, kind, probs, codes, wsplit, logw, prm, ints, floats, perm, n_nodes, resid, w,
                          moves, accepted)
            else:
                j = sweep_pg(rng, 0, 0, pg_opts, codes, wsplit, logw, prm, ints, floats, perm, n_nodes, resid, w,
                             Pi, Pf, Ps, Pperm, Pnn, Phead, Pmap, accepted, stages, status)
            if j >= 0:
                raise RuntimeError("node capacity exceeded")
        for k in range(n_nodes[0]):
            if ints[0, k, LEFT] < 0:
                for t in range(ints[0, k, START], ints[0, k, END]):
                    labels[d, perm[0, t]] = k


def _one_tree(codes_np, n_draws, alpha, beta, mu0, sigma_mu, split_weights):
    """Codes (p, n), split weights and their logs, a root-only one-tree forest, prior, label buffer."""
    codes = np.ascontiguousarray(np.asarray(codes_np).T.astype(np.uint16))
    p, n = codes.shape
    wsplit = np.ones(p) if split_weights is None else np.asarray(split_weights, dtype=float)
    with np.errstate(divide="ignore"):
        logw = np.log(wsplit)
    forest = Forest.empty(1, n, mu0, cap=4 * n)
    init_root_availability(codes, wsplit, forest.floats, forest.perm)
    prm = np.array([alpha, beta, mu0, sigma_mu**2])
    return codes, wsplit, logw, forest, prm, np.empty((n_draws, n), dtype=np.int64)


def partition_draws(codes_np, r, w, probs, n_draws, thin, seed, alpha=0.95, beta=2.0, mu0=0.0, sigma_mu=1.0,
                    split_weights=None, pg=None):
    """Partition keys of ``n_draws`` states, one every ``thin`` sweeps, of a one-tree chain.

    ``probs`` are the MH move probabilities; ``pg = (C, proposal, resampling, ess_threshold)``
    runs Particle Gibbs instead.
    """
    codes, wsplit, logw, forest, prm, labels = _one_tree(codes_np, n_draws, alpha, beta, mu0, sigma_mu,
                                                         split_weights)
    n = codes.shape[1]
    C = 2 if pg is None else pg[0]
    pg_opts = np.array([C, 0, 0, 1.0, 10_000] if pg is None else [*pg, 10_000], dtype=float)
    cap = 2 * n + 1
    probs = np.zeros(4) if probs is None else np.asarray(probs, dtype=float)
    _chain(np.random.default_rng(seed), n_draws, thin, KIND_MH if pg is None else 1, probs,
           codes, wsplit, logw, prm, forest.ints, forest.floats, forest.perm, forest.n_nodes, np.asarray(r, float),
           np.asarray(w, float), labels, pg_opts, np.full((C, cap, 8), -1, dtype=np.int32), np.zeros((C, cap, 3)),
           np.zeros((C, cap, 3)), np.empty((C, n), dtype=np.int32), np.zeros(C, dtype=np.int32),
           np.zeros(C, dtype=np.int32), np.zeros(cap, dtype=np.int32))
    return [partition_key(row) for row in labels]


@numba.njit(cache=True)
def _ct_chain(rng, n_draws, thin, horizon, n_change, n_rotate, codes, wsplit, logw, prm, ints, floats, perm, n_nodes,
              r, w, labels, Ti, Tf, Tperm, Tnn, last_rate):
    n = r.shape[0]
    f = np.empty(n)
    jumps = np.zeros(ints.shape[0], dtype=np.int64)
    rate = np.zeros(ints.shape[0])
    for d in range(n_draws):
        for _ in range(thin):
            forest_sum(ints, floats, perm, n_nodes, f)
            resid = r - f
            if sweep_ct(rng, 0, 0, horizon, n_change, n_rotate, codes, wsplit, logw, prm, ints, floats, perm, n_nodes,
                        resid, w, Ti, Tf, Tperm, Tnn, jumps, rate) >= 0:
                raise RuntimeError("node capacity exceeded")
        last_rate[d] = rate[0]
        for k in range(n_nodes[0]):
            if ints[0, k, LEFT] < 0:
                for t in range(ints[0, k, START], ints[0, k, END]):
                    labels[d, perm[0, t]] = k


def ct_partition_draws(codes_np, r, w, horizon, n_draws, thin, seed, alpha=0.95, beta=2.0, mu0=0.0, sigma_mu=1.0,
                       split_weights=None, change=False, rotate=False, return_rates=False):
    """Partition keys of a one-tree continuous-time birth-death chain.

    ``change``/``rotate``: rounds of rule moves / rotate moves per sweep (bool or count).
    ``horizon < 0`` runs jump mode (one jump per sweep); ``return_rates`` also returns the total
    rate recorded at each kept draw (after its jump, in jump mode).
    """
    codes, wsplit, logw, forest, prm, labels = _one_tree(codes_np, n_draws, alpha, beta, mu0, sigma_mu,
                                                         split_weights)
    n = codes.shape[1]
    cap = 2 * n + 1
    _ct_chain(np.random.default_rng(seed), n_draws, thin, float(horizon), int(change), int(rotate), codes, wsplit,
              logw, prm, forest.ints, forest.floats, forest.perm, forest.n_nodes, np.asarray(r, float),
              np.asarray(w, float), labels, np.full((cap, 8), -1, dtype=np.int32), np.zeros((cap, 3)),
              np.empty(n, dtype=np.int32), np.zeros(1, dtype=np.int32), rates := np.zeros(n_draws))
    keys = [partition_key(row) for row in labels]
    return (keys, rates) if return_rates else keys
