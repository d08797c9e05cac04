"""Random trees for the tests that need a tree without running a sampler (rotate/pivot, trace)."""

import numpy as np

from pymc_treesamplers.engine.forest import Forest, init_roots
from pymc_treesamplers.engine.nodes import END, LEFT, START, VALUE
from pymc_treesamplers.engine.prior import code_range
from pymc_treesamplers.engine.records import split_data, tree_of
from pymc_treesamplers.engine.tree import split_leaf


def empty_forest(codes, m=1, cap=None):
    """``m`` single-leaf trees on the rows of ``codes`` (p, n), room for ``cap`` nodes each."""
    p, n = codes.shape
    fr = Forest.empty(m, n, 0.0, cap=cap or 4 * n + 4)
    init_roots(fr.arrays(), split_data(codes, np.ones(p)), 0.0)
    return fr


def grow_random(t, codes, rng, n_splits):
    """``n_splits`` times: split a uniformly chosen leaf by a uniformly chosen valid rule (a leaf
    with no valid rule is left alone)."""
    data = split_data(codes, np.ones(codes.shape[0]))
    ti, pj = t.ints, t.perm
    for _ in range(n_splits):
        leaves = [k for k in range(t.nn[0]) if ti[k, LEFT] < 0]
        k = leaves[rng.integers(len(leaves))]
        rules = []
        for v in range(codes.shape[0]):
            mn, mx = code_range(codes[v], pj, ti[k, START], ti[k, END])
            rules += [(v, c, mx - mn) for c in range(mn, mx)]
        if rules:
            v, c, n_cuts = rules[rng.integers(len(rules))]
            split_leaf(t, k, v, c, n_cuts, data)


def random_forest(codes, rng, m, max_splits):
    """``m`` trees, each grown by up to ``max_splits`` random splits, with standard-normal leaf values."""
    fr = empty_forest(codes, m)
    for j in range(m):
        t = tree_of(fr.arrays(), j)
        grow_random(t, codes, rng, int(rng.integers(0, max_splits + 1)))
        for k in range(t.nn[0]):
            if t.ints[k, LEFT] < 0:
                t.floats[k, VALUE] = rng.normal()
    return fr
