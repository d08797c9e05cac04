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

**A basis chosen by the tree** (``by_split``: pymc-bart's ``response="linear"`` and ``"mix"`` as exact models). A
leaf whose parent splits on covariate ``v`` has the basis ``B_i = (1, z_iv)``, a line in the covariate its parent
chose (the root leaf: ``(1, 0)``). Every function here takes that column, ``col`` (:func:`parent_var`; ``-1`` at
the root), and a fixed basis ignores it; a split's children and their parent then have statistics on different
bases, so the callers score a parent by its own column (:func:`~pymc_treesamplers.engine.leaves.col_dependent`).
With ``log_spike > -inf`` each leaf's slope is also zero with prior probability ``exp(log_spike)`` (a spike and
slab over the leaf's type, the type summed out): the marginal is
``logaddexp(log_slab + m_full, log_spike + m_1)`` with ``m_1`` the intercept-only leaf's, read from the same
statistics (``b_0``, ``P_00``), and a draw picks the type from its posterior first.

>>> import numpy as np
>>> from pymc_treesamplers.engine.records import TreePrior, basis_pseudo
>>> bp = basis_pseudo(np.array([1.0, 2.0]), np.ones(1), np.array([[1.0, 0.0], [1.0, 1.0]]), 0.0, 1.0)
>>> st = np.empty(basis_width(bp))
>>> basis_rows(bp, np.arange(2, dtype=np.int32), 0, 2, st, -1)
>>> st.tolist()
[3.0, 2.0, 2.0, 1.0, 1.0, 1.0]
>>> round(float(basis_marginal(TreePrior(0.95, 2.0, 0.0, 1.0), bp, np.zeros(6))), 12)
0.0
"""

import math

import numba
import numpy as np

from .nodes import COEF, CUT, END, LEFT, PARENT, RIGHT, START, VAR
from .records import tree_of
from .rows import leaf_ranges, row_weight


@numba.njit(cache=True, nogil=True, inline="always")
def parent_var(ti, u):
    """The covariate node ``u``'s parent splits on, ``-1`` for the root: the column of a basis chosen by the tree."""
    p = ti[u, PARENT]
    return ti[p, VAR] if p >= 0 else -1


@numba.njit(cache=True, nogil=True, inline="always")
def basis_dim(lm):
    """``d``, the coefficients a leaf holds."""
    return 2 if lm.by_split else lm.basis.shape[1]


@numba.njit(cache=True, nogil=True, inline="always")
def basis_at(lm, i, j, col):
    """Row ``i``'s ``j``-th basis value in a leaf whose parent splits on ``col`` (module docstring)."""
    if not lm.by_split or j == 0:
        return lm.basis[i, j]
    return _line_at(lm, i, col)


@numba.njit(cache=True, nogil=True, inline="always")
def _line_at(lm, i, col):
    """Row ``i``'s second basis value when ``d = 2``: the fixed basis's, or the line's on column ``col``."""
    if not lm.by_split:
        return lm.basis[i, 1]
    return lm.basis[i, 1 + col] if col >= 0 else 0.0


@numba.njit(cache=True, nogil=True)
def basis_width(lm):
    """Width of a basis leaf's statistics: ``d + d^2``."""
    d = basis_dim(lm)
    return d + d * d


@numba.njit(cache=True, nogil=True, inline="always")
def _put2(out, b0, b1, p00, p10, p11):
    out[0] = b0
    out[1] = b1
    out[2] = p00
    out[3] = p10  # the lower triangle is what the algebra reads; P is symmetric
    out[4] = p10
    out[5] = p11


@numba.njit(cache=True, nogil=True)
def _rows2(lm, perm, s, e, out, col):
    """:func:`basis_rows` for ``d = 2`` (an intercept and a slope, the line leaves): the five sums kept in
    registers, each added in row order with the general loop's products, so the statistics are the same numbers."""
    b0 = b1 = p00 = p10 = p11 = 0.0
    for q in range(s, e):
        i = perm[q]
        wi = row_weight(lm.weight, i)
        wr = wi * lm.r[i]
        x0 = lm.basis[i, 0]
        x1 = _line_at(lm, i, col)
        b0 += wr * x0
        b1 += wr * x1
        p00 += wi * x0 * x0
        p10 += wi * x1 * x0
        p11 += wi * x1 * x1
    _put2(out, b0, b1, p00, p10, p11)


@numba.njit(cache=True, nogil=True)
def basis_rows(lm, perm, s, e, out, col):
    """The statistics of the rows ``perm[s:e]`` of a leaf on column ``col`` written to ``out`` (module docstring's
    layout)."""
    d = basis_dim(lm)
    if d == 2:
        _rows2(lm, perm, s, e, out, col)
        return
    for k in range(d + d * d):
        out[k] = 0.0
    for q in range(s, e):
        i = perm[q]
        wi = row_weight(lm.weight, i)
        wr = wi * lm.r[i]
        for j in range(d):
            bj = basis_at(lm, i, j, col)
            out[j] += wr * bj
            wb = wi * bj
            for k in range(d):
                out[d + j * d + k] += wb * basis_at(lm, i, k, col)


@numba.njit(cache=True, nogil=True, inline="always")
def basis_row(lm, i, hist, k, col):
    """Row ``i``'s statistics on column ``col`` added to row ``k`` of ``hist``."""
    d = basis_dim(lm)
    wi = row_weight(lm.weight, i)
    wr = wi * lm.r[i]
    for j in range(d):
        bj = basis_at(lm, i, j, col)
        hist[k, j] += wr * bj
        wb = wi * bj
        for u in range(d):
            hist[k, d + j * d + u] += wb * basis_at(lm, i, u, col)


@numba.njit(cache=True, nogil=True, inline="always")
def cholesky_lower(L, d):
    """The lower Cholesky factor of the symmetric matrix whose lower triangle is in ``L[:d, :d]``, in place;
    returns ``sum log L_jj``. With :func:`solve_lower` and :func:`solve_upper` it solves ``A x = b``.

    >>> L = np.array([[4.0, 0.0], [2.0, 5.0]])      # A = [[4, 2], [2, 5]], lower triangle
    >>> half_logdet = cholesky_lower(L, 2)           # L L^T = A; half_logdet = 0.5 log|A| = 0.5 log 16
    >>> b = np.array([8.0, 9.0]); x = np.empty(2)
    >>> solve_lower(L, b, 2); solve_upper(L, b, x, 2)   # x = A^-1 b
    >>> x.tolist(), round(float(half_logdet), 12) == round(0.5 * math.log(16.0), 12)
    ([1.375, 1.25], True)
    """
    half_logdet = 0.0
    for j in range(d):
        for k in range(j + 1):
            v = L[j, k]
            for u in range(k):
                v -= L[j, u] * L[k, u]
            if j == k:
                L[j, j] = math.sqrt(v)
                half_logdet += math.log(L[j, j])
            else:
                L[j, k] = v / L[k, k]
    return half_logdet


@numba.njit(cache=True, nogil=True, inline="always")
def solve_lower(L, x, d):
    """``x <- L^-1 x`` for the lower triangular ``L`` (forward substitution)."""
    for j in range(d):
        v = x[j]
        for u in range(j):
            v -= L[j, u] * x[u]
        x[j] = v / L[j, j]


@numba.njit(cache=True, nogil=True, inline="always")
def solve_upper(L, x, out, d):
    """``out <- L^-T x`` for the lower triangular ``L`` (back substitution)."""
    for j in range(d - 1, -1, -1):
        v = x[j]
        for u in range(j + 1, d):
            v -= L[u, j] * out[u]
        out[j] = v / L[j, j]


@numba.njit(cache=True, nogil=True, inline="always")
def _factor(lm, stats):
    """``A`` into ``lm.chol`` as its lower Cholesky factor ``L``, ``L^-1 c`` into ``lm.vec``; returns
    ``sum log L_jj - 0.5 log|S0^-1|`` (half of ``log|I + S0 P|``) and ``mu0^T S0^-1 mu0``."""
    d = basis_dim(lm)
    L = lm.chol
    c = lm.vec
    half_logdet = 0.0
    quad0 = 0.0
    for j in range(d):
        c[j] = stats[j] + lm.mu0[j] / lm.s2[j]
        half_logdet += 0.5 * math.log(lm.s2[j])
        quad0 += lm.mu0[j] * lm.mu0[j] / lm.s2[j]
        for k in range(j + 1):
            L[j, k] = stats[d + j * d + k] + (1.0 / lm.s2[j] if j == k else 0.0)
    half_logdet += cholesky_lower(L, d)
    solve_lower(L, c, d)
    return half_logdet, quad0


@numba.njit(cache=True, nogil=True)
def _full_marginal(lm, stats):
    half_logdet, quad0 = _factor(lm, stats)
    quad = 0.0
    for j in range(basis_dim(lm)):
        quad += lm.vec[j] * lm.vec[j]
    return -half_logdet + 0.5 * quad - 0.5 * quad0


@numba.njit(cache=True, nogil=True)
def basis_posterior_mean(lm, stats, out):
    """The mean ``A^-1 c`` of a leaf's full conditional into ``out`` (d,); returns the leaf's log marginal
    likelihood with every coefficient free (no spike), on the same terms as :func:`basis_marginal`."""
    marginal = _full_marginal(lm, stats)
    solve_upper(lm.chol, lm.vec, out, basis_dim(lm))
    return marginal


@numba.njit(cache=True, nogil=True)
def _intercept_marginal(lm, stats):
    """The marginal of the leaf with every coefficient after the first at zero: ``b_0`` and ``P_00`` alone."""
    s2 = lm.s2[0]
    a = stats[basis_dim(lm)] + 1.0 / s2
    c = stats[0] + lm.mu0[0] / s2
    return -0.5 * math.log(s2 * a) + 0.5 * c * c / a - 0.5 * lm.mu0[0] * lm.mu0[0] / s2


@numba.njit(cache=True, nogil=True)
def _logaddexp(a, b):
    hi = max(a, b)
    return hi + math.log(math.exp(a - hi) + math.exp(b - hi))


@numba.njit(cache=True, nogil=True, inline="always")  # per gap of the optimal proposal: no call
def basis_marginal(prior, lm, stats):
    """Log marginal likelihood of a basis leaf with these statistics, up to a partition-free term (module
    docstring; with a spike, the leaf's type summed out). ``prior`` (the scalar
    :class:`~pymc_treesamplers.engine.records.TreePrior`) is unused: the record carries the coefficients' prior."""
    full = _full_marginal(lm, stats)
    if lm.log_spike == -math.inf:
        return full
    return _logaddexp(lm.log_slab + full, lm.log_spike + _intercept_marginal(lm, stats))


@numba.njit(cache=True, nogil=True)
def basis_range_loglik(prior, lm, perm, s, e, col):
    """:func:`basis_marginal` of the rows ``perm[s:e]`` on column ``col`` (statistics in ``lm.stats[0]``)."""
    st = lm.stats[0]
    basis_rows(lm, perm, s, e, st, col)
    return basis_marginal(prior, lm, st)


@numba.njit(cache=True, nogil=True)
def _union_logliks(prior, lm, perm, s, e, col_children, col_parent):
    """Log marginals of the two sides in ``lm.stats[0]`` and ``[1]`` and of their parent, the rows ``perm[s:e]``
    (into ``[2]``): the sides' sum, or, when the basis is the tree's, the parent's rows on its own column."""
    st = lm.stats
    if lm.by_split and col_parent != col_children:
        basis_rows(lm, perm, s, e, st[2], col_parent)
    else:
        for u in range(st.shape[1]):
            st[2, u] = st[0, u] + st[1, u]
    return basis_marginal(prior, lm, st[0]), basis_marginal(prior, lm, st[1]), basis_marginal(prior, lm, st[2])


@numba.njit(cache=True, nogil=True)
def _split_rows2(lm, perm, s, e, code_v, c, col):
    """:func:`basis_split_logliks`'s pass for ``d = 2``, as :func:`_rows2`: both sides' sums in registers, into
    ``lm.stats[0]`` and ``[1]``; returns the left side's count. The row's terms are written out here as in
    :func:`_rows2` on purpose: a shared helper returning them as a tuple, inlined or not, made the pass about 40x
    slower (0.49 ms against 0.013 ms for 10,000 rows, quiet machine)."""
    lb0 = lb1 = l00 = l10 = l11 = 0.0
    rb0 = rb1 = r00 = r10 = r11 = 0.0
    n_left = 0
    for q in range(s, e):
        i = perm[q]
        wi = row_weight(lm.weight, i)
        wr = wi * lm.r[i]
        x0 = lm.basis[i, 0]
        x1 = _line_at(lm, i, col)
        if code_v[i] <= c:
            n_left += 1
            lb0 += wr * x0
            lb1 += wr * x1
            l00 += wi * x0 * x0
            l10 += wi * x1 * x0
            l11 += wi * x1 * x1
        else:
            rb0 += wr * x0
            rb1 += wr * x1
            r00 += wi * x0 * x0
            r10 += wi * x1 * x0
            r11 += wi * x1 * x1
    _put2(lm.stats[0], lb0, lb1, l00, l10, l11)
    _put2(lm.stats[1], rb0, rb1, r00, r10, r11)
    return n_left


@numba.njit(cache=True, nogil=True)
def basis_split_logliks(prior, lm, perm, s, e, code_v, c, col_children, col_parent):
    """The rows ``perm[s:e]`` split at ``code_v <= c`` (unmoved): ``(n_left, left, right, both)``, the sides' log
    marginals on column ``col_children`` and the whole range's on ``col_parent``."""
    d = basis_dim(lm)
    st = lm.stats
    if d == 2:
        n_left = _split_rows2(lm, perm, s, e, code_v, c, col_children)
    else:
        for u in range(d + d * d):
            st[0, u] = 0.0
            st[1, u] = 0.0
        n_left = 0
        for q in range(s, e):
            i = perm[q]
            side = 0 if code_v[i] <= c else 1
            n_left += 1 - side
            basis_row(lm, i, st, side, col_children)
    left, right, both = _union_logliks(prior, lm, perm, s, e, col_children, col_parent)
    return n_left, left, right, both


@numba.njit(cache=True, nogil=True)
def basis_children_logliks(prior, lm, perm, sa, ea, sb, eb, col_children, col_parent):
    """Log marginals of the sibling rows ``perm[sa:ea]``, ``perm[sb:eb]`` on ``col_children`` and of both together
    on ``col_parent`` (siblings' ranges are adjacent: their union is one range)."""
    basis_rows(lm, perm, sa, ea, lm.stats[0], col_children)
    basis_rows(lm, perm, sb, eb, lm.stats[1], col_children)
    return _union_logliks(prior, lm, perm, min(sa, sb), max(ea, eb), col_children, col_parent)


@numba.njit(cache=True, nogil=True)
def basis_two_level_bound(t, data, prior, lm, k, bound):
    """The change screen's bound (:func:`~pymc_treesamplers.engine.tree.rule_change_bound`) of ``k``'s subtree,
    two levels deep, for basis leaves: the rules now written at and below ``k`` send each row of ``k`` to one of
    four cells (left-left, left-right, right-left, right-right; a child that is a leaf keeps its rows in its first
    cell), whose statistics are taken in one read-only pass into ``lm.stats``, each on its leaf's column (a leaf
    child's parent is ``k``, a grandchild's is its child). Returns ``(valid, bound + the leaves' log marginals)``,
    ``(False, 0)`` when a rule leaves a side empty."""
    ti = t.ints
    s, e, a, b = ti[k, START], ti[k, END], ti[k, LEFT], ti[k, RIGHT]
    code0, c0 = data.codes[ti[k, VAR]], ti[k, CUT]
    split_a, split_b = ti[a, LEFT] >= 0, ti[b, LEFT] >= 0
    col_l = ti[a, VAR] if split_a else ti[k, VAR]
    col_r = ti[b, VAR] if split_b else ti[k, VAR]
    # a leaf child's own rule fields are not read (split_a, split_b): its rows stay in its first cell
    code_a, c_a = data.codes[col_l], ti[a, CUT]
    code_b, c_b = data.codes[col_r], ti[b, CUT]
    st = lm.stats
    for c in range(4):
        for u in range(st.shape[1]):
            st[c, u] = 0.0
    n0 = n1 = n2 = n3 = 0
    for q in range(s, e):
        i = t.perm[q]
        if code0[i] <= c0:
            if split_a and code_a[i] > c_a:
                n1 += 1
                basis_row(lm, i, st, 1, col_l)
            else:
                n0 += 1
                basis_row(lm, i, st, 0, col_l)
        elif split_b and code_b[i] > c_b:
            n3 += 1
            basis_row(lm, i, st, 3, col_r)
        else:
            n2 += 1
            basis_row(lm, i, st, 2, col_r)
    if n0 + n1 == 0 or n2 + n3 == 0 or (split_a and (n0 == 0 or n1 == 0)) or (split_b and (n2 == 0 or n3 == 0)):
        return False, 0.0
    bound += basis_marginal(prior, lm, st[0]) + basis_marginal(prior, lm, st[2])
    if split_a:
        bound += basis_marginal(prior, lm, st[1])
    if split_b:
        bound += basis_marginal(prior, lm, st[3])
    return True, bound


@numba.njit(cache=True, nogil=True)
def basis_draw(rng, lm, stats, out):
    """Draw a leaf's coefficients from their full conditional ``N(A^-1 c, A^-1)`` into ``out`` (d,): one standard
    normal per coefficient, in column order. With a spike, a uniform first picks the leaf's type from its posterior;
    a leaf of the intercept-only type draws its intercept and holds zeros after it."""
    d = basis_dim(lm)
    if lm.log_spike != -math.inf:
        full = lm.log_slab + _full_marginal(lm, stats)
        spike = lm.log_spike + _intercept_marginal(lm, stats)
        if math.log(rng.random()) >= full - _logaddexp(full, spike):
            s2 = lm.s2[0]
            a = stats[d] + 1.0 / s2
            out[0] = (stats[0] + lm.mu0[0] / s2) / a + rng.standard_normal() / math.sqrt(a)
            for j in range(1, d):
                out[j] = 0.0
            return
    _factor(lm, stats)
    z = lm.vec
    for j in range(d):
        z[j] += rng.standard_normal()
    solve_upper(lm.chol, z, out, d)  # out <- L^-T (L^-1 c + z)


@numba.njit(cache=True, nogil=True)
def add_basis_fit(t, lm, out, sign):
    """``out[i] += sign * basis_i . beta_leaf(i)`` for every row of the tree ``t``, whose leaves hold
    coefficients in the node columns ``COEF ..`` (:mod:`.nodes`), on the basis of the record ``lm``."""
    ti = t.ints
    tf = t.floats
    d = basis_dim(lm)
    for k in range(t.nn[0]):
        if ti[k, LEFT] < 0:
            col = parent_var(ti, k)
            for q in range(ti[k, START], ti[k, END]):
                i = t.perm[q]
                v = 0.0
                for j in range(d):
                    v += basis_at(lm, i, j, col) * tf[k, COEF + j]
                out[i] += sign * v


@numba.njit(cache=True, nogil=True)
def draw_basis_leaves(rng, t, prior, lm):
    """Draw every leaf's coefficients of ``t`` from their conditional and subtract the tree's fit from ``lm.r``
    (the basis twin of :func:`~pymc_treesamplers.engine.tree.draw_leaves`: all leaves' statistics are taken
    before any fit is subtracted, and the leaves own disjoint rows)."""
    d = basis_dim(lm)
    nodes, starts, ends, _ = leaf_ranges(t)
    st = np.empty(d + d * d)
    for j in range(nodes.shape[0]):
        basis_rows(lm, t.perm, starts[j], ends[j], st, parent_var(t.ints, nodes[j]))
        basis_draw(rng, lm, st, t.floats[nodes[j], COEF : COEF + d])
    add_basis_fit(t, lm, lm.r, -1.0)


@numba.njit(cache=True, nogil=True)
def forest_basis_sum(forest, lm, out):
    """The sum of all trees' terms ``basis_i . beta`` at the training rows into ``out``, trees in order 0..m-1
    for every row (as a basis forest's predictions add them)."""
    for i in range(out.shape[0]):
        out[i] = 0.0
    for j in range(forest.ints.shape[0]):
        add_basis_fit(tree_of(forest, j), lm, out, 1.0)


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
