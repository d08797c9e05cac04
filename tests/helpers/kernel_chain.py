"""Run a step's own sweep over many iterations on fixed pseudo-data, inside numba.

Used by the exactness tests so that 10^6 tree updates on tiny data take about a second. The chain
calls the same driver (``engine.driver.sweep``) with the same scratch record the step methods use,
built by the step class itself from its options (a model without likelihood is enough for that);
only the outer loop and the fixed pseudo-data are test code. With a likelihood record of another
observation model (:class:`~pymc_treesamplers.routes.family_record.FamilyLik`) the record itself is
what the sweep sees, as in the step.
"""

import types

import numba
import numpy as np
import pymc as pm
from numba.extending import overload

import pymc_treesamplers as pmt
from pymc_treesamplers.engine.driver import SWEEP_DONE, new_scratch_tree, sweep
from pymc_treesamplers.engine.forest import Forest, forest_sum, init_roots
from pymc_treesamplers.engine.nodes import CUT, END, FALSE, LEFT, ROOT, START, VAR
from pymc_treesamplers.engine.records import Pseudo, TreePrior, split_data
from pymc_treesamplers.engine.smc import PROPOSAL_OPTIMAL, PROPOSAL_PRIOR, RESAMPLE_SYSTEMATIC, SMCOptions
from pymc_treesamplers.engine.tree import subtree_nodes
from pymc_treesamplers.engine.updates.ct import CTScratch, new_ct_scratch
from pymc_treesamplers.engine.updates.gfr import new_gfr_scratch
from pymc_treesamplers.engine.updates.pg import new_pg_scratch
from pymc_treesamplers.routes.augment import Augmented, augment_pseudo
from pymc_treesamplers.routes.family_record import family_lik
from pymc_treesamplers.testing import UntiltedAugmented, untilted_augment_pseudo
from tests.helpers.exact import partition_key

# record types whose sweep input is Gaussian pseudo-data of latents drawn before each sweep, and their draw
AUGMENTATIONS = {Augmented: augment_pseudo, UntiltedAugmented: untilted_augment_pseudo}


def _first_rate(sk):
    """Total jump rate of the first tree at its last update (0 for samplers without one)."""


@overload(_first_rate)
def _first_rate_impl(sk):
    if getattr(sk, "instance_class", None) is CTScratch:
        return lambda sk: sk.rate[0]
    return lambda sk: 0.0


def _sweep_record(rng, lik, forest, f, zw):
    """What the sweep sees: the running residual of fixed Gaussian pseudo-data, the Gaussian pseudo-data
    of freshly drawn latents (an augmentation record, as the step draws them), or the record."""


@overload(_sweep_record)
def _sweep_record_impl(rng, lik, forest, f, zw):
    cls = getattr(lik, "instance_class", None)
    if cls in AUGMENTATIONS:
        draw = AUGMENTATIONS[cls]

        def augmented(rng, lik, forest, f, zw):
            forest_sum(forest, f)
            draw(rng, lik, f, zw[0], zw[1])
            return Pseudo(zw[0] - f, zw[1], 1)

        return augmented
    if cls is not Pseudo:
        return lambda rng, lik, forest, f, zw: lik

    def gaussian(rng, lik, forest, f, zw):
        forest_sum(forest, f)
        return Pseudo(lik.r - f, lik.w, 1)

    return gaussian


@numba.njit(cache=True)
def _chain(rng, n_draws, thin, data, prior, forest, lik, labels, work, sk, changed, rates, rules):
    f = np.empty(forest.perm.shape[1])
    zw = np.empty((2, forest.perm.shape[1]))
    for d in range(n_draws):
        for _ in range(thin):
            # typed ROOT/FALSE, not literals: the call then reuses the step's compiled sweep
            code, _ = sweep(rng, ROOT, forest.ints.shape[0], FALSE, data, prior, forest,
                            _sweep_record(rng, lik, forest, f, zw), work, sk, changed)
            if code != SWEEP_DONE:
                raise RuntimeError("node capacity exceeded or the update failed")
        _keep(d, forest, work, sk, labels, rates, rules)


@numba.njit(cache=True)
def _keep(d, forest, work, sk, labels, rates, rules):
    """Record the state after draw ``d``: tree 0's total rate, its rules, every row's leaf per tree."""
    if rates.shape[0] > 0:
        rates[d] = _first_rate(sk)
    if rules.shape[0] > 0:  # tree 0's rules in preorder (left child first): (var, cut), -1 for a leaf
        nn = subtree_nodes(forest.ints[0], ROOT, work.order)
        for q in range(nn):
            u = work.order[q]
            rules[d, q, 0] = forest.ints[0, u, VAR]
            rules[d, q, 1] = forest.ints[0, u, CUT]
        rules[d, nn:, 0] = -2
    # rows share a cell of the common refinement iff they share a leaf in every tree
    for j in range(forest.ints.shape[0]):
        for k in range(forest.n_nodes[j]):
            if forest.ints[j, k, LEFT] < 0:
                for t in range(forest.ints[j, k, START], forest.ints[j, k, END]):
                    labels[d, j, forest.perm[j, t]] = k


def _uncached(fn, **replace):
    """``fn`` compiled without numba's on-disk cache, with global names in ``replace`` rebound."""
    py = fn.py_func
    return numba.njit(types.FunctionType(py.__code__, {**py.__globals__, **replace}, py.__name__))


# A scratch record type defined by a test (a deliberately wrong kernel) must not enter the on-disk
# cache index of the package's sweep: every later process that loads that index (make demo, a
# script) would need the test module to unpickle it. Such chains run uncached copies instead.
_chain_test_types = _uncached(_chain, sweep=_uncached(sweep), _keep=_uncached(_keep))  # _keep reads the scratch too


def make_step(step_cls, options, n, p, m=1):
    """A step of ``step_cls`` with ``options`` on a model with one BART of ``m`` trees and no likelihood."""
    with pm.Model():
        mu = pmt.BART("mu", np.arange(n * p, dtype=float).reshape(n, p), np.zeros(n), m=m, mu0=0.0, sigma_mu=1.0)
        return step_cls([mu], **options)


def chain_draws(step_cls, options, codes_np, r, w, n_draws, thin, seed, m=1, alpha=0.95, beta=2.0, mu0=0.0,
                sigma_mu=1.0, split_weights=None, return_rates=False, family=None, counts=None, tree_keys=False,
                leaf_exp=None, shared_weight=True, scratch=None):
    """Partition keys of ``n_draws`` states, one every ``thin`` sweeps, of a chain of ``m`` trees on
    the pseudo-data ``(r, w)``, or under ``family = (kind, u, v, s[, refine[, record type[, laplace]]])``
    (``eta = f``; ``r, w`` unused; FamilyLik's ``refine`` flag, a record type with its fields or None, its
    ``laplace`` flag), or ``family`` a function ``(f, mu0) -> likelihood record``, or an augmentation record
    (its latents redrawn before every sweep, as a step does at each draw); ``counts``: a list that receives
    the record's (proposals, accepted). With ``m = 1`` a key is the tree's row partition; with ``m >= 2``
    the tuple of every tree's partition. ``return_rates``: also the first tree's total jump rate at each
    kept draw (CTBirthDeathStep only). ``tree_keys``: the keys are tree 0's preorder rule sequences, as
    :func:`exact.exact_tree_posterior` writes them, not partitions. ``leaf_exp``: the tree prior's, instead
    of the record's (a deliberately wrong test). ``shared_weight``: weights equal on every row go to the
    kernels as one weight (length 1), as the steps pass the pseudo-data of one sigma; False keeps one per row.
    ``scratch``: the sampler's scratch record, instead of the one the step builds (the monotone update's, whose
    directions live on the BART variable)."""
    codes = np.asarray(codes_np).T
    p, n = codes.shape
    data = split_data(codes, np.ones(p) if split_weights is None else np.asarray(split_weights, dtype=float))
    prior = TreePrior(alpha, beta, mu0, sigma_mu**2)
    forest = Forest.empty(m, n, mu0, cap=4 * n)
    init_roots(forest.arrays(), data, mu0)
    step = make_step(step_cls, options, n, p, m)
    labels = np.empty((n_draws, m, n), dtype=np.int64)
    rates = np.zeros(n_draws if return_rates else 0)
    if family is None:
        w = np.asarray(w, float)
        if shared_weight and w.size > 1 and w.min() == w.max():
            w = w[:1]  # as routes.gaussian.residuals passes one sigma's weights
        lik = Pseudo(np.asarray(r, float), w, 1)
    else:
        f = np.empty(n)
        forest_sum(forest.arrays(), f)
        if callable(family):
            lik = family(f, mu0)
        else:
            lik = family_lik(*family[:4], 0.0, 1.0, mu0, sigma_mu**2, f, refine=family[4] if len(family) > 4 else True,
                             laplace=family[6] if len(family) > 6 else None)
            if len(family) > 5 and family[5] is not None:
                lik = family[5](*lik)
    # a record on the log-link route integrates its leaves by Laplace, and so must the kernels (as the step
    # sets it); ``leaf_exp`` overrides that (a deliberately wrong test)
    prior = prior._replace(leaf_exp=getattr(lik, "leaf_exp", 0.0) if leaf_exp is None else leaf_exp)
    rules = np.empty((n_draws if tree_keys else 0, 2 * n + 1, 2), dtype=np.int64)
    scratch = step.new_scratch(data.codes, m) if scratch is None else scratch
    args = (np.random.default_rng(seed), n_draws, thin, data, prior, forest.arrays())
    tail = (labels, new_scratch_tree(n), scratch, np.zeros(m, dtype=np.bool_), rates, rules)
    chain = _chain if type(scratch).__module__.startswith("pymc_treesamplers.") else _chain_test_types
    chain(*args, lik, *tail)
    if counts is not None and hasattr(lik, "counts"):
        counts.extend(lik.counts.tolist())
    if tree_keys:
        keys = rule_keys(rules)
    elif m == 1:
        keys = [partition_key(row[0]) for row in labels]
    else:
        keys = [tuple(partition_key(tree) for tree in row) for row in labels]
    return (keys, rates) if return_rates else keys


def step_split_columns(X, r, step_cls):
    """The split columns a step of ``step_cls`` builds for a one-tree BART on covariates ``X``:
    codes ``(n, q)`` and weights ``(q,)``."""
    with pm.Model():
        mu = pmt.BART("mu", X, r, m=1, mu0=0.0, sigma_mu=1.0)
        step = step_cls([mu])
    return step.data.codes.T.astype(np.int64), step.data.wsplit


def assert_same_split_columns(codes, weights, stated, stated_weights):
    """``codes``/``weights`` are the columns ``stated``/``stated_weights`` in some order."""
    order = [next(k for k in range(stated.shape[1]) if np.array_equal(codes[:, v], stated[:, k]))
             for v in range(codes.shape[1])]
    assert sorted(order) == list(range(stated.shape[1]))
    np.testing.assert_allclose(weights, np.asarray(stated_weights)[order])


def coding_tv(s, X, r, stated, stated_weights, thin=None, codes=None, weights=None):
    """TV distance between a registry entry's chain (run on its step's split columns of ``X``, or on
    ``codes``/``weights``) and the exact partition posterior under the ``stated`` coding, and the
    99.9% threshold of iid samples."""
    from tests.helpers.exact import empirical, exact_partition_posterior, tv_distance, tv_threshold

    weight, n_draws, default_thin, seed = s.posterior
    w = np.full(len(r), weight)
    exact = exact_partition_posterior(stated, r, w, 0.95, 2.0, 0.0, 1.0, split_weights=stated_weights)
    if codes is None:
        codes, weights = step_split_columns(X, r, s.step)
    keys = chain_draws(s.step, s.options, codes, r, w, n_draws, thin or default_thin, seed, split_weights=weights)
    return tv_distance(exact, empirical(keys)), tv_threshold(exact, n_draws)


def sampler_scratch(sampler, codes, m, width):
    """The scratch record of ``sampler`` (one of ``cgm``, ``growprune``, ``reshape``, ``pg-prior``, ``pg-optimal``,
    ``ct``, ``ct-rotate-change``, ``gfr``) on split codes (p, n): the step's own (its moves' buffers hold no leaf
    statistics), or, for the samplers that keep leaf statistics (Particle Gibbs's particles, CT's per-code sums,
    GFR), one with room for ``width`` of them."""
    if sampler.startswith("pg"):
        opts = SMCOptions(10, PROPOSAL_OPTIMAL if sampler == "pg-optimal" else PROPOSAL_PRIOR, RESAMPLE_SYSTEMATIC,
                          1.0, 1000)
        return new_pg_scratch(opts, codes, m, width=width)
    if sampler == "ct":
        return new_ct_scratch(codes, m, 1.0, 0, 0, width=width)
    if sampler == "ct-rotate-change":
        return new_ct_scratch(codes, m, 0.5, 1, 1, width=width)
    if sampler == "gfr":
        return new_gfr_scratch(codes, width=width)
    step_cls = {"cgm": pmt.CGMStep, "growprune": pmt.GrowPruneStep, "reshape": pmt.ReshapeStep}[sampler]
    return make_step(step_cls, {}, codes.shape[1], codes.shape[0], m).new_scratch(codes, m)


def leaf_model_chain(sampler, codes_np, prior, lik, n_draws, thin, seed, m=1, rules=False):
    """A chain of ``m`` trees of ``sampler`` on the fixed pseudo-data record ``lik`` (constant leaves' ``Pseudo`` or a
    ``BasisPseudo``: the record is the running residual, the forest starts with every leaf at 0). Returns every
    kept draw's leaf labels (n_draws, m, n), tree 0's preorder rules (n_draws, 2n + 1, 2) when ``rules`` (else
    empty) and the last forest."""
    codes = np.ascontiguousarray(np.asarray(codes_np).T)
    p, n = codes.shape
    data = split_data(codes, np.ones(p))
    d = lik.mu0.shape[0] if hasattr(lik, "basis") else 0
    forest = Forest.empty(m, n, cap=4 * n, coefs=d)
    init_roots(forest.arrays(), data, 0.0)
    sk = sampler_scratch(sampler, data.codes, m, d + d * d if d else 2)
    labels = np.empty((n_draws, m, n), dtype=np.int64)
    kept = np.empty((n_draws if rules else 0, 2 * n + 1, 2), np.int64)
    _chain(np.random.default_rng(seed), n_draws, thin, data, prior, forest.arrays(), lik, labels,
           new_scratch_tree(n, d), sk, np.zeros(m, dtype=np.bool_), np.zeros(0), kept)
    return labels, kept, forest


def rule_keys(rules):
    """Tree keys (:func:`tests.helpers.exact.exact_tree_posterior`'s) from :func:`leaf_model_chain`'s rules."""
    return [tuple(-1 if v < 0 else (int(v), int(c)) for v, c in row if v > -2) for row in rules]
