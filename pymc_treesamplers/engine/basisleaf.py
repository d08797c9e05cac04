"""Leaves that hold a coefficient vector on a basis: the weighted multivariate Normal-Normal algebra of one leaf,
and a tree's fit.

Working model in a leaf (a :class:`~pymc_treesamplers.engine.records.BasisPseudo`): ``r_i ~ N(B_i . beta,
1 / w_i)`` with ``beta ~ N(mu0, S0)``, ``S0 = diag(s2)``, ``B`` the basis (n, d). The sufficient statistics of
a leaf's rows are ``b = sum w_i B_i r_i`` (d) and ``P = sum w_i B_i B_i^T`` (d x d), packed as one vector of
width ``d + d^2``: ``b`` first, then ``P`` row by row (the leaf-model interface of :mod:`.leaves` sums such
vectors). With ``A = P + S0^-1`` and ``c = b + S0^-1 mu0``:

* log marginal likelihood, up to a term free of the partition:
  ``-0.5 log|I + S0 P| + 0.5 c^T A^-1 c - 0.5 mu0^T S0^-1 mu0`` (0 for a leaf without rows; with ``d = 1`` it is
  :func:`~pymc_treesamplers.engine.gaussian.leaf_loglik`'s formula);
* full conditional of ``beta``: ``N(A^-1 c, A^-1)``, drawn as ``A^-1 c + L^-T z`` with ``A = L L^T``.

``d`` is small (an intercept and a slope, a treatment), so the Cholesky factor is written out here over the
record's scratch, with no allocation per leaf: the SMC's optimal proposal scores a leaf per gap of every
variable.

>>> import numpy as np
>>> from pymc_treesamplers.engine.records import TreePrior, basis_pseudo
>>> bp = basis_pseudo(np.array([1.0, 2.0]), np.ones(1), np.array([[1.0, 0.0], [1.0, 1.0]]), 0.0, 1.0)
>>> st = np.empty(basis_width(bp))
>>> basis_rows(bp, np.arange(2, dtype=np.int32), 0, 2, st)
>>> st.tolist()
[3.0, 2.0, 2.0, 1.0, 1.0, 1.0]
>>> round(float(basis_marginal(TreePrior(0.95, 2.0, 0.0, 1.0), bp, np.zeros(6))), 12)
0.0
"""

import math

import numba
import numpy as np

from .nodes import COEF, END, LEFT, START
from .records import tree_of
from .rows import leaf_ranges, row_weight


@numba.njit(cache=True, nogil=True)
def basis_width(lm):
    """Width of a basis leaf's statistics: ``d + d^2``."""
    d = lm.basis.shape[1]
    return d + d * d


@numba.njit(cache=True, nogil=True)
def basis_rows(lm, perm, s, e, out):
    """The statistics of the rows ``perm[s:e]`` written to ``out`` (module docstring's layout)."""
    d = lm.basis.shape[1]
    for k in range(d + d * d):
        out[k] = 0.0
    B = lm.basis
    for q in range(s, e):
        i = perm[q]
        wi = row_weight(lm.weight, i)
        wr = wi * lm.r[i]
        for j in range(d):
            out[j] += wr * B[i, j]
            wb = wi * B[i, j]
            for k in range(d):
                out[d + j * d + k] += wb * B[i, k]


@numba.njit(cache=True, nogil=True, inline="always")
def basis_row(lm, i, hist, k):
    """Row ``i``'s statistics added to row ``k`` of ``hist``."""
    d = lm.basis.shape[1]
    B = lm.basis
    wi = row_weight(lm.weight, i)
    wr = wi * lm.r[i]
    for j in range(d):
        hist[k, j] += wr * B[i, j]
        wb = wi * B[i, j]
        for u in range(d):
            hist[k, d + j * d + u] += wb * B[i, u]


@numba.njit(cache=True, nogil=True, inline="always")
def _factor(lm, stats):
    """``A`` into ``lm.chol`` as its lower Cholesky factor ``L``, ``L^-1 c`` into ``lm.vec``; returns
    ``sum log L_jj - 0.5 log|S0^-1|`` (half of ``log|I + S0 P|``) and ``mu0^T S0^-1 mu0``."""
    d = lm.basis.shape[1]
    L = lm.chol
    c = lm.vec
    half_logdet = 0.0
    quad0 = 0.0
    for j in range(d):
        c[j] = stats[j] + lm.mu0[j] / lm.s2[j]
        half_logdet += 0.5 * math.log(lm.s2[j])
        quad0 += lm.mu0[j] * lm.mu0[j] / lm.s2[j]
    for j in range(d):
        for k in range(j + 1):
            v = stats[d + j * d + k]
            if j == k:
                v += 1.0 / lm.s2[j]
            for u in range(k):
                v -= L[j, u] * L[k, u]
            if j == k:
                L[j, j] = math.sqrt(v)
                half_logdet += math.log(L[j, j])
            else:
                L[j, k] = v / L[k, k]
    for j in range(d):  # forward substitution: c <- L^-1 c
        v = c[j]
        for u in range(j):
            v -= L[j, u] * c[u]
        c[j] = v / L[j, j]
    return half_logdet, quad0


@numba.njit(cache=True, nogil=True, inline="always")  # per gap of the optimal proposal: no call
def basis_marginal(prior, lm, stats):
    """Log marginal likelihood of a basis leaf with these statistics, up to a partition-free term (module
    docstring). ``prior`` (the scalar :class:`~pymc_treesamplers.engine.records.TreePrior`) is unused: the record
    carries the coefficients' prior."""
    half_logdet, quad0 = _factor(lm, stats)
    quad = 0.0
    for j in range(lm.basis.shape[1]):
        quad += lm.vec[j] * lm.vec[j]
    return -half_logdet + 0.5 * quad - 0.5 * quad0


@numba.njit(cache=True, nogil=True)
def basis_range_loglik(prior, lm, perm, s, e):
    """:func:`basis_marginal` of the rows ``perm[s:e]`` (statistics in ``lm.stats[0]``)."""
    st = lm.stats[0]
    basis_rows(lm, perm, s, e, st)
    return basis_marginal(prior, lm, st)


@numba.njit(cache=True, nogil=True)
def _union_logliks(prior, lm):
    """Log marginals of the two sides in ``lm.stats[0]`` and ``[1]`` and of their union (into ``[2]``)."""
    st = lm.stats
    for u in range(st.shape[1]):
        st[2, u] = st[0, u] + st[1, u]
    return basis_marginal(prior, lm, st[0]), basis_marginal(prior, lm, st[1]), basis_marginal(prior, lm, st[2])


@numba.njit(cache=True, nogil=True)
def basis_split_logliks(prior, lm, perm, s, e, code_v, c):
    """The rows ``perm[s:e]`` split at ``code_v <= c`` (unmoved): ``(n_left, left, right, both)``, the sides' and
    the whole range's log marginals."""
    d = lm.basis.shape[1]
    st = lm.stats
    for u in range(d + d * d):
        st[0, u] = 0.0
        st[1, u] = 0.0
    n_left = 0
    for q in range(s, e):
        i = perm[q]
        side = 0 if code_v[i] <= c else 1
        n_left += 1 - side
        basis_row(lm, i, st, side)
    left, right, both = _union_logliks(prior, lm)
    return n_left, left, right, both


@numba.njit(cache=True, nogil=True)
def basis_children_logliks(prior, lm, perm, sa, ea, sb, eb):
    """Log marginals of the rows ``perm[sa:ea]``, ``perm[sb:eb]`` and of both together."""
    basis_rows(lm, perm, sa, ea, lm.stats[0])
    basis_rows(lm, perm, sb, eb, lm.stats[1])
    return _union_logliks(prior, lm)


@numba.njit(cache=True, nogil=True)
def basis_draw(rng, lm, stats, out):
    """Draw a leaf's coefficients from their full conditional ``N(A^-1 c, A^-1)`` into ``out`` (d,): one standard
    normal per coefficient, in column order."""
    _factor(lm, stats)
    d = lm.basis.shape[1]
    L = lm.chol
    z = lm.vec
    for j in range(d):
        z[j] += rng.standard_normal()
    for j in range(d - 1, -1, -1):  # back substitution: out <- L^-T (L^-1 c + z)
        v = z[j]
        for u in range(j + 1, d):
            v -= L[u, j] * out[u]
        out[j] = v / L[j, j]


@numba.njit(cache=True, nogil=True)
def add_basis_fit(t, basis, out, sign):
    """``out[i] += sign * basis_i . beta_leaf(i)`` for every row of the tree ``t``, whose leaves hold
    coefficients in the node columns ``COEF ..`` (:mod:`.nodes`)."""
    ti = t.ints
    tf = t.floats
    d = basis.shape[1]
    for k in range(t.nn[0]):
        if ti[k, LEFT] < 0:
            for q in range(ti[k, START], ti[k, END]):
                i = t.perm[q]
                v = 0.0
                for j in range(d):
                    v += basis[i, j] * tf[k, COEF + j]
                out[i] += sign * v


@numba.njit(cache=True, nogil=True)
def draw_basis_leaves(rng, t, prior, lm):
    """Draw every leaf's coefficients of ``t`` from their conditional and subtract the tree's fit from ``lm.r``
    (the basis twin of :func:`~pymc_treesamplers.engine.tree.draw_leaves`: all leaves' statistics are taken
    before any fit is subtracted, and the leaves own disjoint rows)."""
    d = lm.basis.shape[1]
    nodes, starts, ends, _ = leaf_ranges(t)
    st = np.empty(d + d * d)
    for j in range(nodes.shape[0]):
        basis_rows(lm, t.perm, starts[j], ends[j], st)
        basis_draw(rng, lm, st, t.floats[nodes[j], COEF : COEF + d])
    add_basis_fit(t, lm.basis, lm.r, -1.0)


@numba.njit(cache=True, nogil=True)
def forest_basis_sum(forest, basis, out):
    """The sum of all trees' terms ``basis_i . beta`` at the training rows into ``out``, trees in order 0..m-1
    for every row (as a basis forest's predictions add them)."""
    for i in range(out.shape[0]):
        out[i] = 0.0
    for j in range(forest.ints.shape[0]):
        add_basis_fit(tree_of(forest, j), basis, out, 1.0)


@numba.njit(cache=True, nogil=True)
def forest_coefficients(forest, out):
    """Every row's coefficient vector summed over the trees into ``out`` (d, n)."""
    d = out.shape[0]
    for u in range(d):
        for i in range(out.shape[1]):
            out[u, i] = 0.0
    for j in range(forest.ints.shape[0]):
        ti = forest.ints[j]
        for k in range(forest.n_nodes[j]):
            if ti[k, LEFT] < 0:
                for q in range(ti[k, START], ti[k, END]):
                    i = forest.perm[j, q]
                    for u in range(d):
                        out[u, i] += forest.floats[j, k, COEF + u]
