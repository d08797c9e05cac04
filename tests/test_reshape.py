"""ReshapeStep and its moves against the exact posterior over *trees* (not partitions).

Restructure keeps a tree's leaves and changes its shape, so a wrong ratio would leave every
partition test of tests/test_matrix.py green while the chain visits the wrong trees. The tests here
enumerate every tree of the tiny data (tests/helpers/exact.py: ``exact_tree_posterior``), with codes that
leave gaps of several cuts between the values present (so that a cut can move inside its gap), and
require each move, with grow/prune alone around it and in the default mixture, to match the tree
posterior; the same chain with a move's proposal ratio dropped must fail. Thresholds: the 99.9%
quantile of the TV of iid multinomial samples of the same size, never widened.
"""

import numba
import numpy as np
import pymc as pm
import pytest

import pymc_treesamplers as pmt
from pymc_treesamplers.engine.driver import register_update
from pymc_treesamplers.engine.moves import growprune, reroute, restructure, splice
from pymc_treesamplers.engine.nodes import END, LEFT, RIGHT, ROOT, START, TRUE
from pymc_treesamplers.engine.prior import draw_split_rule
from pymc_treesamplers.engine.tree import INTERNAL, copy_nodes, copy_perm, count_nodes, random_node, subtree_log_post
from pymc_treesamplers.engine.updates.reshape import ReshapeScratch, new_reshape_scratch
from tests.helpers.exact import empirical, exact_tree_posterior, tiny_data, tv_distance, tv_threshold
from tests.helpers.kernel_chain import chain_draws

BETA = 2.0
N_DRAWS, THIN = 20_000, 20
ONLY = {  # grow and prune around one reshaping move (probabilities of the seven kinds)
    "restructure": (0.25, 0.25, 0.0, 0.0, 0.5, 0.0, 0.0),
    "splice": (0.25, 0.25, 0.0, 0.0, 0.0, 0.5, 0.0),
    "reroute": (0.25, 0.25, 0.0, 0.0, 0.0, 0.0, 0.5),
}


def gapped_data(w=4.0):
    """The tiny data with codes {0, 1, 3} and {0, 2}: 348 trees, gaps of two cuts."""
    codes, r, _ = tiny_data(0)
    gapped = codes.copy()
    gapped[:, 0] = np.array([0, 1, 3])[codes[:, 0]]
    gapped[:, 1] = np.array([0, 2])[codes[:, 1]]
    return gapped, r, np.full(len(r), w)


def _tree_tv(step, options, w=4.0, seed=1, n_draws=N_DRAWS, thin=THIN):
    codes, r, w = gapped_data(w)
    exact = exact_tree_posterior(codes, r, w, 0.95, BETA, 0.0, 1.0)
    keys = chain_draws(step, options, codes, r, w, n_draws, thin, seed, beta=BETA, tree_keys=True)
    return tv_distance(exact, empirical(keys)), tv_threshold(exact, n_draws)


@pytest.mark.parametrize("move", sorted(ONLY))
def test_each_move_matches_the_tree_posterior(move):
    tv, threshold = _tree_tv(pmt.ReshapeStep, {"n_moves": 2, "move_probs": ONLY[move]})
    assert tv < threshold, f"TV {tv:.4f} >= {threshold:.4f}"


def test_default_mixture_matches_the_tree_posterior_and_prior():
    tv, threshold = _tree_tv(pmt.ReshapeStep, {"n_moves": 2})
    assert tv < threshold, f"TV {tv:.4f} >= {threshold:.4f}"
    tv, threshold = _tree_tv(pmt.ReshapeStep, {"n_moves": 2}, w=0.0)  # flat likelihood: the tree prior
    assert tv < threshold, f"TV {tv:.4f} >= {threshold:.4f}"


# ------------------------------------------------------------ the same moves, ratios dropped


class _Wrong(ReshapeScratch):
    pass


def _wrong_step(kind):
    class Wrong(pmt.ReshapeStep):
        def new_scratch(self, codes, m):
            sk = new_reshape_scratch(ONLY[kind], 2, codes.shape[0], codes.shape[1])
            return _Wrong(*sk)

    return Wrong


@numba.njit(cache=True)
def _restructure_always(rng, t, data, prior, sk):
    L = restructure._group_ranges(t, data, sk.rs)
    if L < 2:
        return
    restructure._propose(rng, t, data, prior, sk.rs, L)
    copy_nodes(sk.rs.prop, t)
    copy_perm(sk.rs.prop, t)


@numba.njit(cache=True)
def _reroute_without_q(rng, t, data, prior, ps, sk):
    """A reroute accepted on the posterior ratio alone (insertion probabilities and draws dropped)."""
    if count_nodes(t, INTERNAL) == 0:
        return
    expand = rng.random() < 0.5
    u = random_node(rng, t, INTERNAL)
    ti = t.ints
    v, c, _ = draw_split_rule(rng, data, t.perm, ti[u, START], ti[u, END], sk.mb.scratch_p)
    reroute.encode_with_spans(t, sk.seq)
    iu = 0
    while sk.seq.order[iu] != u:
        iu += 1
    ok, _, _, n_ins = reroute._build(rng, t, data, prior, sk.seq, sk.rr, iu, v, c, expand, sk.mb.scratch_p)
    if not ok or (expand and not reroute._collapse_back_removes_insertions(t, data, sk.seq, sk.rr, n_ins)):
        return
    prop = sk.rr.prop
    log_ratio = (subtree_log_post(prop, prior, ps, ROOT, sk.rr.order, TRUE, TRUE)
                 - subtree_log_post(t, prior, ps, ROOT, sk.rr.order, TRUE, TRUE))
    if np.log(rng.random()) < log_ratio:
        copy_nodes(prop, t)
        copy_perm(prop, t)


@numba.njit(cache=True)
def _delete_without_q(rng, t, data, prior, ps, sk):
    """A splice delete accepted on the posterior ratio alone (the reverse insert's draws dropped)."""
    if count_nodes(t, INTERNAL) == 0:
        return
    u = random_node(rng, t, INTERNAL)
    keep_left = rng.random() < 0.5
    ti = t.ints
    kept = ti[u, LEFT] if keep_left else ti[u, RIGHT]
    if u == ROOT and ti[kept, LEFT] < 0:
        return
    seq = sk.seq
    old = subtree_log_post(t, prior, ps, ROOT, seq.order, TRUE, TRUE)
    L = splice.encode_with_spans(t, seq)
    iu = 0
    while seq.order[iu] != u:
        iu += 1
    a = iu + 1
    o = splice.copy_span(seq.V, seq.C, 0, iu, seq.V2, seq.C2, 0)
    if keep_left:
        o = splice.copy_span(seq.V, seq.C, a, seq.end[a], seq.V2, seq.C2, o)
    else:
        o = splice.copy_span(seq.V, seq.C, seq.end[a], seq.end[iu], seq.V2, seq.C2, o)
    L2 = splice.copy_span(seq.V, seq.C, seq.end[iu], L, seq.V2, seq.C2, o)
    n_old = t.nn[0]
    new = splice.propose_rebuild(t, data, prior, ps, seq, sk.mb.bk, L2)
    splice.keep_or_restore(rng, t, sk.mb.bk, n_old, new - old)


@numba.njit(cache=True)
def _wrong_update(rng, j, t, data, prior, ps, sk):
    for _ in range(sk.n_moves):
        # (package kernels get the package's records only: a test type must not enter their cache)
        if t.ints[0, LEFT] < 0:
            growprune.grow_move(rng, t, data, prior, ps, sk.mb.scratch_p, 0.0, np.log(0.25))
        elif rng.random() < 0.5:
            if rng.random() < 0.5:
                growprune.grow_move(rng, t, data, prior, ps, sk.mb.scratch_p, np.log(0.25), np.log(0.25))
            else:
                growprune.prune_move(rng, t, prior, ps, np.log(0.25), np.log(0.25))
        elif sk.probs[4] > 0:
            _restructure_always(rng, t, data, prior, sk)
        elif sk.probs[5] > 0:
            if rng.random() < 0.5:
                _delete_without_q(rng, t, data, prior, ps, sk)
            else:
                splice.insert_move(rng, t, data, prior, ps, sk.seq, sk.mb.bk, sk.mb.scratch_p)
        else:
            _reroute_without_q(rng, t, data, prior, ps, sk)
    return 1


register_update(_Wrong)(_wrong_update)


@pytest.mark.parametrize("move", sorted(ONLY))
def test_a_move_without_its_proposal_ratio_fails(move):
    """Restructure taking every proposal (no ratio of rule masses), a splice delete and a reroute
    accepted on the posterior ratio alone (the reverse move's draws dropped): each must miss the
    tree posterior that the right moves match above."""
    tv, threshold = _tree_tv(_wrong_step(move), {})
    assert tv > threshold, f"TV {tv:.4f} <= {threshold:.4f}"


# --------------------------------------------------------------------------------- the step


def test_options_are_checked():
    X = np.random.default_rng(0).uniform(size=(30, 2))
    with pm.Model():
        mu = pmt.BART("mu", X, X[:, 0], m=2)
        pm.Normal("y", mu, 1.0, observed=X[:, 0])
        for bad in (0, 1.5, True, "3"):
            with pytest.raises(ValueError, match="n_moves"):
                pmt.ReshapeStep([mu], n_moves=bad)
        assert pmt.ReshapeStep([mu]).n_moves == 50  # max(1, round(100 / m)), m = 2
        assert pmt.ReshapeStep([mu], n_moves=3).n_moves == 3
        with pytest.raises(ValueError, match="seven|7"):
            pmt.ReshapeStep([mu], move_probs=(0.5, 0.5, 0.0, 0.0))
        with pytest.raises(ValueError, match="grow and prune"):
            pmt.ReshapeStep([mu], move_probs=(0.0, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0))
        with pytest.raises(ValueError, match="sum to 1"):
            pmt.ReshapeStep([mu], move_probs=(0.5, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0))
        with pytest.raises(TypeError, match="move_probs"):
            pmt.ReshapeStep([mu], move_probs="grow")
