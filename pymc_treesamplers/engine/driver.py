"""The Bayesian backfitting driver: every tree updated once against the running residual.

For tree ``j`` (Chipman et al. 2010; stochtree's loop has the same shape):

1. tree ``j``'s pseudo-data come from the likelihood record (:func:`tree_pseudo`): weighted
   Gaussian data ``r_i ~ N(g_j(x_i), 1 / w_i)`` once the tree's own fit is added back to ``r``
   (for the exact Gaussian working model the record itself is the running residual);
2. add tree ``j``'s fit back to the residual;
3. copy the tree's nodes into a scratch tree with room for any tree on ``n`` rows and run the
   sampler's update there (:func:`tree_update`, chosen by the type of the sampler's scratch
   record), then draw the proposal's leaves from their conditional under the pseudo-data (which
   takes its fit off the residual; an update that carries its leaves, the monotone one, has drawn
   them, and only its fit is taken off); the scratch tree shares the tree's row order, so nothing of
   size ``n`` is copied;
4. ask the likelihood record whether to keep the proposal, structure and leaves
   (:func:`accept_proposal`; the exact Gaussian working model always keeps it, a working model of
   another likelihood corrects by Metropolis-Hastings); on rejection the old tree's rows are
   re-split by its own rules and the old tree stays, leaves included;
5. copy the result back (if it does not fit the forest's node arrays, return so the caller can
   grow them and resume at this tree: the result waits in the scratch tree).

The residual is kept, never recomputed from the forest. A sampler plugs in with one scratch record
type and one update function registered for it (:func:`register_update`); a likelihood with
one record type and its :func:`tree_pseudo` and :func:`accept_proposal` (:func:`register_likelihood`).
"""

from typing import NamedTuple

import numba
import numpy as np
from numba.extending import overload

from .basisleaf import draw_basis_leaves
from .leaves import add_fit
from .nodes import NODE_INT, ROOT
from .records import BasisPseudo, Pseudo, Tree, empty_nodes, tree_of
from .rows import numba_threads
from .tree import copy_nodes, draw_leaves, repartition_subtree

SWEEP_DONE, SWEEP_GROW, SWEEP_FAILED = range(3)

_UPDATES: dict[type, object] = {}
_CARRIES_LEAVES: set[type] = set()
_LIKELIHOODS: dict[type, tuple[object, object]] = {}
_BASIS_RECORDS: dict[type, object] = {}


class ScratchTree(NamedTuple):
    """Scratch tree of the driver: node rows for up to ``2n + 1`` nodes, node count, walk buffer."""

    ints: np.ndarray
    floats: np.ndarray
    nn: np.ndarray
    order: np.ndarray


def new_scratch_tree(n: int, coefs: int = 0) -> ScratchTree:
    """A :class:`ScratchTree` for trees on ``n`` rows (a tree has at most ``2n - 1`` nodes; 2 spare slots), whose
    leaves hold ``coefs`` coefficients on a basis (0: constant leaves)."""
    ints, floats = empty_nodes(2 * n + 1, coefs)
    return ScratchTree(ints, floats, np.zeros(1, dtype=NODE_INT), np.empty(2 * n + 1, dtype=NODE_INT))


def register_update(scratch_cls, carries_leaves: bool = False):
    """Register ``update(rng, j, tree, data, prior, pseudo, sampler) -> int`` for scratch records of
    ``scratch_cls``: it moves ``tree`` in place and returns 1 if it changed the tree (accepted a
    move), 0 if not, a negative code on failure (the step turns it into an error).

    ``carries_leaves``: the update leaves the tree's leaf values drawn (the monotone update, whose leaves do not
    integrate out one by one); the driver then takes the tree's fit off the residual instead of drawing them.
    """

    def decorate(update):
        _UPDATES[scratch_cls] = update
        if carries_leaves:
            _CARRIES_LEAVES.add(scratch_cls)
        return update

    return decorate


def register_likelihood(lik_cls, pseudo, accept, leaves=None):
    """Register a likelihood record type.

    ``pseudo(lik, j, tree) -> Pseudo`` gives tree ``j``'s pseudo-data (``r``: the residual the driver
    adds the tree's fit back to); ``accept(rng, lik, j, old, new, pseudo) -> bool`` decides whether the
    proposed tree ``new`` (structure and leaves; its fit already taken off ``pseudo.r``) replaces ``old``
    (whose rows ``new`` has reordered). The kernels are reversible with respect to the pseudo-data's
    tree posterior, which is what an accept step that corrects towards another target relies on.
    ``leaves(rng, lik, tree, prior, pseudo)`` draws the proposal's leaves and takes its fit off ``pseudo.r``
    (default: :func:`~pymc_treesamplers.engine.tree.draw_leaves`, their conditional under the pseudo-data).
    """
    _LIKELIHOODS[lik_cls] = (pseudo, accept, _working_leaves if leaves is None else leaves)


def register_basis_record(lik_cls, wrap):
    """Register how a likelihood record of ``lik_cls`` drives trees whose leaves hold coefficient vectors on a basis:
    ``wrap(lik, basis)`` (``basis`` a :class:`~pymc_treesamplers.engine.records.BasisPseudo`) returns a record of
    a registered likelihood type whose pseudo-data are that basis record. Gaussian pseudo-data need none (the
    chain wraps them itself)."""
    _BASIS_RECORDS[lik_cls] = wrap


def basis_record(lik, basis):
    """``lik`` for a basis chain (:func:`register_basis_record`), or None when its type has no such record."""
    wrap = _BASIS_RECORDS.get(type(lik))
    return None if wrap is None else wrap(lik, basis)


def tree_update(rng, j, tree, data, prior, pseudo, sampler):
    """The update registered for the type of ``sampler`` (compiled dispatch; see :func:`register_update`)."""
    raise NotImplementedError("tree_update only runs inside numba kernels")


def carries_leaves(sampler):
    """Whether the update registered for the type of ``sampler`` draws its tree's leaves (compiled constant)."""
    raise NotImplementedError("carries_leaves only runs inside numba kernels")


def tree_pseudo(lik, j, tree):
    """Pseudo-data of tree ``j`` under the likelihood record ``lik`` (compiled dispatch)."""
    raise NotImplementedError("tree_pseudo only runs inside numba kernels")


def propose_leaves(rng, lik, tree, prior, pseudo):
    """Draw the proposal's leaves (compiled dispatch; see :func:`register_likelihood`)."""
    raise NotImplementedError("propose_leaves only runs inside numba kernels")


def accept_proposal(rng, lik, j, old, new, pseudo):
    """Whether to keep the proposed tree (compiled dispatch; see :func:`register_likelihood`)."""
    raise NotImplementedError("accept_proposal only runs inside numba kernels")


# The dispatch shims are inlined into their callers, whose compiled code numba caches; the shims
# themselves are not cached: every shim of every record type shares one index file on disk, and a
# record type defined outside the package (a test's deliberately wrong kernel) in it would break
# loading that index in any process that cannot import its module.
_DISPATCH = {"nogil": True}


def _registered(table, typ, what):
    cls = getattr(typ, "instance_class", None)
    if cls not in table:
        raise TypeError(f"no {what} registered for {typ}")
    return table[cls]


@overload(tree_update, inline="always", jit_options=_DISPATCH)
def _tree_update(rng, j, tree, data, prior, pseudo, sampler):
    update = _registered(_UPDATES, sampler, "tree update")

    def impl(rng, j, tree, data, prior, pseudo, sampler):
        return update(rng, j, tree, data, prior, pseudo, sampler)

    return impl


@overload(carries_leaves, inline="always", jit_options=_DISPATCH)
def _carries_leaves(sampler):
    _registered(_UPDATES, sampler, "tree update")
    if sampler.instance_class in _CARRIES_LEAVES:
        return lambda sampler: True
    return lambda sampler: False


@overload(tree_pseudo, inline="always", jit_options=_DISPATCH)
def _tree_pseudo(lik, j, tree):
    pseudo = _registered(_LIKELIHOODS, lik, "likelihood")[0]

    def impl(lik, j, tree):
        return pseudo(lik, j, tree)

    return impl


@overload(accept_proposal, inline="always", jit_options=_DISPATCH)
def _accept_proposal(rng, lik, j, old, new, pseudo):
    accept = _registered(_LIKELIHOODS, lik, "likelihood")[1]

    def impl(rng, lik, j, old, new, pseudo):
        return accept(rng, lik, j, old, new, pseudo)

    return impl


@overload(propose_leaves, inline="always", jit_options=_DISPATCH)
def _propose_leaves(rng, lik, tree, prior, pseudo):
    leaves = _registered(_LIKELIHOODS, lik, "likelihood")[2]

    def impl(rng, lik, tree, prior, pseudo):
        return leaves(rng, lik, tree, prior, pseudo)

    return impl


@numba.njit(cache=True, nogil=True, inline="always")
def _working_leaves(rng, lik, tree, prior, pseudo):
    draw_leaves(rng, tree, prior, pseudo)


@numba.njit(cache=True, nogil=True)
def _gaussian_pseudo(lik, j, tree):
    return lik


@numba.njit(cache=True, nogil=True)
def _gaussian_accept(rng, lik, j, old, new, pseudo):
    # the pseudo-data are the exact conditional likelihood of the tree: every kernel already
    # leaves the tree's exact conditional invariant, so there is nothing to correct
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _basis_leaves(rng, lik, tree, prior, pseudo):
    draw_basis_leaves(rng, tree, prior, pseudo)


register_likelihood(Pseudo, _gaussian_pseudo, _gaussian_accept)
register_likelihood(BasisPseudo, _gaussian_pseudo, _gaussian_accept, _basis_leaves)


@numba.njit(cache=True, nogil=True)
def sweep(rng, j0, j1, resume, data, prior, forest, lik, work, sampler, changed):
    """Update trees ``j0 .. j1-1`` in turn (steps 1-5 of the module docstring).

    Returns ``(SWEEP_DONE, -1)``; ``(SWEEP_GROW, j)`` when tree ``j``'s result needs more node
    capacity than the forest has (``work.nn[0]`` nodes: grow the forest and call again with
    ``j0 = j, resume = True`` and the same ``j1``); or ``(SWEEP_FAILED, j)`` when the update of tree ``j`` failed.
    ``changed[j]`` records whether tree ``j`` changed.
    """
    cap = forest.ints.shape[1]
    for j in range(j0, j1):
        tree = tree_of(forest, j)
        scratch = Tree(work.ints, work.floats, tree.perm, work.nn)
        if not (resume and j == j0):
            pseudo = tree_pseudo(lik, j, tree)
            add_fit(tree, pseudo, 1.0)
            copy_nodes(tree, scratch)
            status = tree_update(rng, j, scratch, data, prior, pseudo, sampler)
            if status < 0:
                return SWEEP_FAILED, j
            changed[j] = status > 0
            if carries_leaves(sampler):
                add_fit(scratch, pseudo, -1.0)
            else:
                propose_leaves(rng, lik, scratch, prior, pseudo)
            if not accept_proposal(rng, lik, j, tree, scratch, pseudo):
                # the proposal reordered the shared rows: re-split them by the old tree's rules,
                # and put the old tree's fit, not the proposal's, off the residual
                add_fit(scratch, pseudo, 1.0)
                repartition_subtree(tree, data, ROOT, work.order)
                add_fit(tree, pseudo, -1.0)
                copy_nodes(tree, scratch)
                changed[j] = False
            if scratch.nn[0] > cap:
                return SWEEP_GROW, j
        copy_nodes(scratch, tree)
    return SWEEP_DONE, -1


def run_sweep(rng, data, prior, forest, lik, work, sampler, changed, threads: int = 1, kernel=sweep,
              trees: tuple[int, int] | None = None) -> int:
    """One :func:`sweep` over a :class:`~pymc_treesamplers.engine.forest.Forest`'s trees (``trees``: the range
    ``(start, stop)`` of them; default all), growing its node arrays whenever a tree needs more room; returns
    -1, or the tree whose update failed. ``kernel``: the compiled sweep to call (a step passes its entry point
    bound to its argument types)."""
    (j, stop), resume = (0, forest.ints.shape[0]) if trees is None else trees, False
    while True:
        with numba_threads(threads):
            code, j = kernel(rng, j, stop, resume, data, prior, forest.arrays(), lik, work, sampler, changed)
        if code == SWEEP_DONE:
            return -1
        if code == SWEEP_FAILED:
            return j
        forest.grow_capacity(int(work.nn[0]))
        resume = True
