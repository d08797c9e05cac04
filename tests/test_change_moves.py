"""Change and swap moves screened with their rows unmoved (engine/moves/cgm.py) decide exactly as before.

* the screen's bound (``tree.rule_change_bound``) finds the same empty sides as re-partitioning, and equals
  the exact new log posterior plus the slacks its docstring names, never less, on random trees and rules
  (Gaussian leaves with mu0 = 0 and 0.4, log-link leaves, leaves on a basis ``[1, x]`` and on a line in their
  parent's covariate; swaps of a parent with both children included; a subtree deeper than two levels is left
  unscreened);
* whole runs of change and swap moves give bit for bit the trees, row orders and random streams of the
  unscreened moves (the code as it was before the screen), on short rows and on rows long enough for the
  block paths, and with both bases; a screen whose bound is too low (by 5, more than its slacks) is caught by
  the same comparison.
"""

import math

import numba
import numpy as np
import pytest

from pymc_treesamplers.engine.moves.cgm import _settle, _swap_rules, new_move_buffers
from pymc_treesamplers.engine.nodes import (
    CUT,
    DEPTH,
    END,
    FALSE,
    LEFT,
    LWAVAIL,
    PARENT,
    RIGHT,
    RULELP,
    START,
    TRUE,
    VAR,
)
from pymc_treesamplers.engine.prior import draw_split_rule, leaf_log_prior
from pymc_treesamplers.engine.records import (
    Pseudo,
    Tree,
    TreePrior,
    basis_pseudo,
    empty_nodes,
    new_backup,
    split_data,
)
from pymc_treesamplers.engine.rows import PAR_MIN
from pymc_treesamplers.engine.tree import (
    INTERNAL,
    INTERNAL_CHILD,
    backup,
    grow_from_prior,
    init_root,
    random_node,
    refresh_subtree_prior,
    repartition_subtree,
    restore,
    rule_change_bound,
    subtree_log_post,
    subtree_nodes,
)


def _case(n, seed, p=3, n_codes=6, mu0=0.0, leaf_exp=0.0, basis=None):
    """Codes, pseudo-data and prior; ``basis``: leaves on ``[1, x]`` (``"fixed"``) or on a line in their parent's
    covariate (``"lines"``, a basis chosen by the tree), else constant leaves."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_codes, size=(p, n)).astype(np.uint16)
    data = split_data(codes, np.array([1.0, 0.5, 2.0])[:p])
    signal = np.where(codes[0] <= 2, 0.6, -0.4) + np.where(codes[1] <= 1, 0.3, 0.0)
    r, w = signal + rng.normal(size=n) * 0.7, rng.uniform(0.5, 1.5, size=n)
    prior = TreePrior(0.95, 1.0, mu0, 0.25, leaf_exp)
    if basis is None:
        return data, Pseudo(r, w, 1), prior
    z = (codes - codes.mean(axis=1, keepdims=True)).T / n_codes
    if basis == "fixed":
        return data, basis_pseudo(r, w, np.column_stack([np.ones(n), z[:, 0]]), mu0, 0.25), prior
    return data, basis_pseudo(r, w, np.column_stack([np.ones(n), z]), mu0, 0.25, by_split=True), prior


def _random_tree(data, prior, n, rng, cap=1025):
    ints, floats = empty_nodes(cap)
    t = Tree(ints, floats, rng.permutation(n).astype(np.int32), np.zeros(1, dtype=np.int64))
    init_root(t, data, 0.0)
    grow_from_prior(rng, t, data, prior, 0, np.empty(data.codes.shape[0]))
    return t


def _buffers(p, n, cap=1025):
    return new_move_buffers(p, 8)._replace(order=np.empty(cap + 1, dtype=np.int64), bk=new_backup(cap, n))


@pytest.mark.parametrize("mu0, leaf_exp, basis", [(0.0, 0.0, None), (0.4, 0.0, None), (0.3, 1.0, None),
                                                  (0.2, 0.0, "fixed"), (0.0, 0.0, "lines")],
                         ids=["gaussian", "mu0", "log-link", "basis", "lines"])
def test_bound_is_the_exact_posterior_plus_its_slacks(mu0, leaf_exp, basis):
    n = 40
    data, ps, prior = _case(n, 1, mu0=mu0, leaf_exp=leaf_exp, basis=basis)
    rng = np.random.default_rng(2)
    mb = _buffers(3, n)
    seen = {"invalid": 0, "bounded": 0, "deep": 0, "swap of both children": 0}
    for trial in range(1200):
        t = _random_tree(data, prior, n, rng)
        ti = t.ints
        swap = trial % 2 == 1
        k = random_node(rng, t, INTERNAL_CHILD if swap else INTERNAL)
        if k < 0:
            continue
        backup(t, k, mb.bk)
        if swap:
            ch, k = k, ti[k, PARENT]
            backup(t, k, mb.bk)
            a, b = ti[k, LEFT], ti[k, RIGHT]
            if ti[a, LEFT] >= 0 and ti[b, LEFT] >= 0 and (ti[a, VAR], ti[a, CUT]) == (ti[b, VAR], ti[b, CUT]):
                seen["swap of both children"] += 1
            _swap_rules(ti, k, ch)
        else:
            v, c, _ = draw_split_rule(rng, data, t.perm, ti[k, START], ti[k, END], mb.scratch_p)
            ti[k, VAR], ti[k, CUT] = v, c
        ok, bound = rule_change_bound(t, data, prior, ps, k, TRUE if swap else FALSE)
        valid = repartition_subtree(t, data, k, mb.order)
        if ok and bound == math.inf:  # deeper than two levels: left to the exact path, validity included
            seen["deep"] += 1
        else:
            assert ok == valid
        if not valid:
            seen["invalid"] += 1
        else:
            refresh_subtree_prior(t, data, k, mb.order)
            new = subtree_log_post(t, prior, ps, k, mb.order, TRUE if swap else FALSE, FALSE)
            if bound < math.inf:
                seen["bounded"] += 1
                tf = t.floats
                slack = 0.0
                for u in mb.order[: subtree_nodes(ti, k, mb.order)]:
                    if ti[u, LEFT] < 0:
                        slack -= leaf_log_prior(prior, ti[u, DEPTH], tf[u, LWAVAIL])
                    elif u != k:
                        slack -= tf[u, RULELP]
                if swap:  # log n_cuts of k's new rule
                    slack += data.logw[ti[k, VAR]] - tf[k, LWAVAIL] - tf[k, RULELP]
                assert slack >= 0.0
                assert bound == pytest.approx(new + slack, rel=1e-12, abs=1e-9)
        restore(t, k, mb.bk, t.nn[0])
    # every case reached often; a parent whose two children share a rule is rarer on random trees
    assert min(seen["invalid"], seen["bounded"], seen["deep"]) >= 20, seen
    assert seen["swap of both children"] >= 5, seen


@numba.njit
def _change(rng, t, data, prior, ps, mb, screened, shift):
    # screened=False: the move as it was before the screen; shift > 0: a screen whose bound is too low
    k = random_node(rng, t, INTERNAL)
    if k < 0:
        return False
    ti = t.ints
    v, c, _ = draw_split_rule(rng, data, t.perm, ti[k, START], ti[k, END], mb.scratch_p)
    if v == ti[k, VAR] and c == ti[k, CUT]:
        return False
    lu = math.nan
    bound = math.inf
    if screened:
        pv, pc = ti[k, VAR], ti[k, CUT]
        ti[k, VAR], ti[k, CUT] = v, c
        ok, bound = rule_change_bound(t, data, prior, ps, k, FALSE)
        ti[k, VAR], ti[k, CUT] = pv, pc
        if not ok:
            return False
    old = subtree_log_post(t, prior, ps, k, mb.order, FALSE, FALSE)
    if screened and bound < math.inf:
        lu = math.log(rng.random())
        if lu >= bound - shift - old + 1e-7 * (1.0 + abs(bound) + abs(old)):
            return False
    backup(t, k, mb.bk)
    ti[k, VAR], ti[k, CUT] = v, c
    return _settle(rng, t, data, prior, ps, k, mb, old, FALSE, lu)


@numba.njit
def _swap_unscreened(rng, t, data, prior, ps, mb):
    ch = random_node(rng, t, INTERNAL_CHILD)
    if ch < 0:
        return False
    k = t.ints[ch, PARENT]
    old = subtree_log_post(t, prior, ps, k, mb.order, TRUE, FALSE)
    backup(t, k, mb.bk)
    _swap_rules(t.ints, k, ch)
    return _settle(rng, t, data, prior, ps, k, mb, old, TRUE, math.nan)


def _run(n, moves, seed, kind, basis=None, **kw):
    """Trees, row orders, decisions and the next uniform after ``moves`` moves from random trees (leaves of
    :func:`_case`'s ``basis``)."""
    from pymc_treesamplers.engine.moves.cgm import change_move, swap_move

    data, ps, prior = _case(n, seed, basis=basis)
    rng = np.random.default_rng(seed + 1)
    trees = [_random_tree(data, prior, n, rng) for _ in range(4)]
    mb = _buffers(3, n)
    out = []
    for q in range(moves):
        t = trees[q % 4]
        if kind == "screened":
            acc = (change_move if q % 3 else swap_move)(rng, t, data, prior, ps, mb)
        elif kind == "unscreened":
            acc = _change(rng, t, data, prior, ps, mb, False, 0.0) if q % 3 else _swap_unscreened(rng, t, data, prior,
                                                                                                  ps, mb)
        else:  # a test-local screen, exact or with its bound lowered
            acc = _change(rng, t, data, prior, ps, mb, True, kw["shift"]) if q % 3 else _swap_unscreened(
                rng, t, data, prior, ps, mb)
        out.append(bool(acc))
    state = [np.concatenate([t.ints[: t.nn[0]].ravel(), t.perm]) for t in trees]
    return out, state, rng.random()


@pytest.mark.parametrize("n, basis", [(30, None), (2 * PAR_MIN + 17, None), (30, "fixed"), (30, "lines")])
def test_screened_moves_decide_as_the_unscreened_moves(n, basis):
    moves = 900 if n < PAR_MIN else 120
    got = _run(n, moves, 5, "screened", basis)
    ref = _run(n, moves, 5, "unscreened", basis)
    assert got[0] == ref[0]
    assert 0.05 < np.mean(got[0]) < 0.9  # the screen met both outcomes
    for a, b in zip(got[1], ref[1], strict=True):
        np.testing.assert_array_equal(a, b)
    assert got[2] == ref[2]


def test_a_screen_that_rejects_too_much_is_caught():
    exact = _run(30, 900, 5, "local", shift=0.0)
    ref = _run(30, 900, 5, "unscreened")
    assert exact[0] == ref[0] and exact[2] == ref[2]  # the test-local screen is the package's
    wrong = _run(30, 900, 5, "local", shift=5.0)
    assert sum(wrong[0]) < sum(ref[0])  # it rejects proposals the exact rule accepts
