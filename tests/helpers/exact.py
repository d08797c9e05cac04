"""Exact reference for the BART tree prior and posterior over row partitions.

Independent pure-Python/NumPy code used by the tests to prove that a tree
sampler targets the right distribution.  Everything is expressed on *row
partitions*: a tree is summarised by which rows share a leaf, encoded by
:func:`partition_key`.

Conventions (shared with the sampler under test):

* ``codes`` is an ``(n, p)`` array of small non-negative integers.  A split
  ``(v, c)`` sends row ``i`` left when ``codes[i, v] <= c``, else right.
* In a node, cut ``c`` on ``v`` is valid when ``min_code <= c < max_code``
  over the node's rows (every such integer, observed or not).  Variable ``v``
  is *available* when it has a valid cut and ``split_weights[v] > 0``; a node
  is *splittable* when some variable is available.
* Tree prior (Chipman et al.): a splittable node at depth ``d`` (root: 0)
  splits with probability ``alpha * (1 + d) ** -beta``; an unsplittable node
  is a leaf.  The variable is drawn with probability proportional to its
  weight among the available ones, the cut uniformly among its valid cuts.
* Leaf values are integrated out: ``r_i ~ N(mu_leaf, 1 / w_i)`` and
  ``mu_leaf ~ N(mu0, sigma_mu**2)``; a leaf with ``W = sum w_i`` and
  ``S = sum w_i r_i`` contributes :func:`leaf_loglik` ``(W, S)``.  The
  posterior of a tree is ``prior(T) * exp(sum of leaf terms)``.

Example:
    >>> codes, r, w = tiny_data()
    >>> prior = exact_partition_prior(codes, alpha=0.95, beta=2.0)
    >>> len(prior), round(sum(prior.values()), 12)
    (34, 1.0)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable

import numpy as np

__all__ = [
    "empirical",
    "basis_leaf_term",
    "dirichlet_multinomial_term",
    "exact_log_evidence",
    "exact_pair_posterior",
    "exact_partition_posterior",
    "exact_partition_prior",
    "exact_tree_posterior",
    "leaf_loglik",
    "normal_inverse_gamma_term",
    "partition_key",
    "partition_keys_from_values",
    "quadrature_leaf_term",
    "sample_prior_partitions",
    "summarize",
    "tiny_data",
    "tv_distance",
    "tv_threshold",
]

Key = tuple[int, ...]
# A partition of some rows, as a set of blocks (each block a set of rows).
_Partition = frozenset[frozenset[int]]


def partition_key(leaf_labels: Iterable[Hashable]) -> Key:
    """Canonical key of a row partition given any per-row leaf labels.

    Rows with equal labels share a leaf; labels are renamed 0, 1, 2, ... in
    order of first appearance, so equal partitions get equal keys.

    Example:
        >>> partition_key([5, 5, 2, 9, 2])
        (0, 0, 1, 2, 1)
    """
    names: dict[Hashable, int] = {}
    return tuple(names.setdefault(label, len(names)) for label in leaf_labels)


def leaf_loglik(W: float, S: float, mu0: float, sigma_mu: float) -> float:
    """Log marginal likelihood of one leaf, up to a partition-free constant.

    ``W = sum w_i`` and ``S = sum w_i r_i`` over the leaf's rows.

    Example:
        >>> leaf_loglik(0.0, 0.0, mu0=0.3, sigma_mu=2.0)
        0.0
    """
    s2 = sigma_mu**2
    return (
        -0.5 * math.log1p(s2 * W)
        + 0.5 * (S + mu0 / s2) ** 2 / (W + 1.0 / s2)
        - 0.5 * mu0**2 / s2
    )


def partition_keys_from_values(draws) -> list[Key]:
    """Row partition of each draw of a tree's (or forest's) values: rows share a cell iff their
    values are equal (leaf values are continuous, so distinct leaves differ almost surely).

    Example:
        >>> partition_keys_from_values([[0.3, 1.2, 0.3], [5.0, 5.0, 5.0]])
        [(0, 1, 0), (0, 0, 0)]
    """
    return [partition_key(np.unique(np.asarray(row), return_inverse=True)[1].tolist()) for row in draws]


def _check_inputs(codes, split_weights) -> tuple[np.ndarray, np.ndarray]:
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[0] == 0:
        raise ValueError("codes must be a non-empty (n, p) array")
    if not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0:
        raise ValueError("codes must be non-negative integers")
    p = codes.shape[1]
    if split_weights is None:
        weights = np.ones(p)
    else:
        weights = np.asarray(split_weights, dtype=float)
    if weights.shape != (p,) or np.any(weights < 0):
        raise ValueError("split_weights must be (p,) and non-negative")
    return codes.astype(np.int64), weights


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def _add_log(acc: dict, key, logm: float) -> None:
    """``acc[key] = log(exp(acc[key]) + exp(logm))``, stably."""
    old = acc.get(key)
    if old is None or old == -math.inf:
        acc[key] = logm
    elif logm != -math.inf:
        hi, lo = max(old, logm), min(old, logm)
        acc[key] = hi + math.log1p(math.exp(lo - hi))


def _log_masses(codes, r, w, alpha, beta, mu0, sigma_mu, split_weights, leaf_term=None) -> dict[Key, float]:
    """Log of prior(T) * exp(sum of leaf terms), summed over the trees of each row partition.

    ``leaf_term(rows) -> float`` replaces the Gaussian leaf term when given (see
    :func:`quadrature_leaf_term`). Every tree is enumerated recursively.  The distribution over partitions
    of a node's rows is a mixture of "leaf" and each split ``(v, c)``, the
    latter being the product of the children's distributions; it is memoised
    on ``(rows, depth)`` and computed in log space.
    """
    codes, weights = _check_inputs(codes, split_weights)
    n, p = codes.shape
    r = np.asarray(r, dtype=float)
    w = np.asarray(w, dtype=float)
    if r.shape != (n,) or w.shape != (n,) or np.any(w < 0):
        raise ValueError("r and w must be (n,) and w non-negative")
    memo: dict[tuple[frozenset[int], int], dict[_Partition, float]] = {}

    def node(rows: frozenset[int], depth: int) -> dict[_Partition, float]:
        """Log masses of the partitions of ``rows`` for a node at ``depth``."""
        if (rows, depth) in memo:
            return memo[(rows, depth)]
        idx = np.fromiter(rows, dtype=np.int64)
        if leaf_term is not None:
            leaf = leaf_term(idx)
        else:
            leaf = leaf_loglik(float(w[idx].sum()), float((w[idx] * r[idx]).sum()), mu0, sigma_mu)
        sub = codes[idx]
        lo, hi = sub.min(axis=0), sub.max(axis=0)
        avail = [v for v in range(p) if hi[v] > lo[v] and weights[v] > 0]
        out: dict[_Partition, float] = {}
        if not avail:
            out[frozenset([rows])] = leaf
            memo[(rows, depth)] = out
            return out
        p_split = alpha * (1.0 + depth) ** (-beta)
        _add_log(out, frozenset([rows]), _log(1.0 - p_split) + leaf)
        # Log probability of each distinct left child (several (v, c) can
        # produce the same split of the rows).
        lefts: dict[frozenset[int], float] = {}
        total_w = sum(weights[v] for v in avail)
        for v in avail:
            log_vc = _log(p_split) + _log(weights[v] / total_w)
            log_vc -= math.log(hi[v] - lo[v])
            for c in range(lo[v], hi[v]):
                left = frozenset(i for i in rows if codes[i, v] <= c)
                _add_log(lefts, left, log_vc)
        for left, log_split in lefts.items():
            right_dist = node(rows - left, depth + 1)
            for lpart, lmass in node(left, depth + 1).items():
                for rpart, rmass in right_dist.items():
                    _add_log(out, lpart | rpart, log_split + lmass + rmass)
        memo[(rows, depth)] = out
        return out

    log_masses: dict[Key, float] = {}
    for part, logm in node(frozenset(range(n)), 0).items():
        labels = [0] * n
        for b, block in enumerate(part):
            for i in block:
                labels[i] = b
        _add_log(log_masses, partition_key(labels), logm)
    return log_masses


def exact_tree_posterior(codes, r, w, alpha: float, beta: float, mu0: float, sigma_mu: float,
                         split_weights=None, parent_leaf_term=None) -> dict[tuple, float]:
    """Exact posterior probability of every *tree* (not partition), by enumeration.

    A tree's key is its preorder rule sequence: ``(v, c)`` for a split, ``-1`` for a leaf, left
    subtree first; trees with the same partition but other rules, other cuts in the same gap or
    another order of splits are different keys. This is what a move that keeps the partition and
    changes the tree (a restructure) must get right; partition tests cannot see it.
    ``parent_leaf_term(rows, v) -> float`` replaces the Gaussian leaf term by one that also depends on the
    variable ``v`` the leaf's parent splits on (``-1`` for the root): leaves on a basis chosen by the tree
    (:func:`split_basis_term`).

    Example:
        >>> post = exact_tree_posterior([[0], [1]], [0.0, 0.0], [0.0, 0.0], 0.9, 2.0, 0.0, 1.0)
        >>> {k: round(v, 12) for k, v in sorted(post.items(), key=str)}
        {((0, 0), -1, -1): 0.9, (-1,): 0.1}
    """
    codes, weights = _check_inputs(codes, split_weights)
    n, p = codes.shape
    r = np.asarray(r, dtype=float)
    w = np.asarray(w, dtype=float)

    def node(rows: tuple[int, ...], depth: int, parent: int = -1) -> dict[tuple, float]:
        idx = np.array(rows, dtype=np.int64)
        if parent_leaf_term is not None:
            leaf = parent_leaf_term(idx, parent)
        else:
            leaf = leaf_loglik(float(w[idx].sum()), float((w[idx] * r[idx]).sum()), mu0, sigma_mu)
        sub = codes[idx]
        lo, hi = sub.min(axis=0), sub.max(axis=0)
        avail = [v for v in range(p) if hi[v] > lo[v] and weights[v] > 0]
        if not avail:
            return {(-1,): leaf}
        p_split = alpha * (1.0 + depth) ** (-beta)
        out = {(-1,): _log(1.0 - p_split) + leaf}
        total_w = sum(weights[v] for v in avail)
        for v in avail:
            log_vc = _log(p_split) + _log(weights[v] / total_w) - math.log(hi[v] - lo[v])
            for c in range(lo[v], hi[v]):
                left = tuple(i for i in rows if codes[i, v] <= c)
                right = tuple(i for i in rows if codes[i, v] > c)
                right_dist = node(right, depth + 1, v)
                for lk, lm in node(left, depth + 1, v).items():
                    for rk, rm in right_dist.items():
                        out[((v, c), *lk, *rk)] = log_vc + lm + rm
        return out

    logs = node(tuple(range(n)), 0)
    log_z = _log_sum(logs.values())
    return {k: math.exp(m - log_z) for k, m in logs.items() if m > -math.inf}


def _log_sum(values) -> float:
    values = list(values)
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def exact_partition_posterior(
    codes,
    r,
    w,
    alpha: float,
    beta: float,
    mu0: float,
    sigma_mu: float,
    split_weights=None,
    leaf_term: Callable[[np.ndarray], float] | None = None,
) -> dict[Key, float]:
    """Exact posterior probability of every row partition, by enumeration.

    Returns ``{partition_key: probability}`` (probabilities sum to 1). ``leaf_term(rows)``: a leaf's
    log marginal likelihood under another observation model (``r`` and ``w`` are then unused).

    Example:
        >>> post = exact_partition_posterior(
        ...     [[0], [1]], r=[0.0, 0.0], w=[0.0, 0.0], alpha=0.9, beta=2.0,
        ...     mu0=0.0, sigma_mu=1.0)
        >>> {k: round(v, 12) for k, v in sorted(post.items())}
        {(0, 0): 0.1, (0, 1): 0.9}
    """
    log_masses = _log_masses(codes, r, w, alpha, beta, mu0, sigma_mu, split_weights, leaf_term)
    log_z = _log_sum(log_masses.values())
    return {k: math.exp(m - log_z) for k, m in log_masses.items() if m > -math.inf}


def exact_log_evidence(
    codes, r, w, alpha: float, beta: float, mu0: float, sigma_mu: float, split_weights=None,
    leaf_term: Callable[[np.ndarray], float] | None = None,
) -> float:
    """``log sum_T prior(T) prod_leaves exp(leaf_loglik)``: the marginal likelihood of one tree, in
    the units of :func:`leaf_loglik` (the same partition-free constant left out), or with
    ``leaf_term(rows)`` as each leaf's log marginal likelihood (``r``, ``w`` then unused).

    Example:
        >>> round(exact_log_evidence([[0], [1]], [0.0, 0.0], [0.0, 0.0], 0.9, 2.0, 0.0, 1.0), 12)
        0.0
    """
    return _log_sum(_log_masses(codes, r, w, alpha, beta, mu0, sigma_mu, split_weights, leaf_term).values())


def dirichlet_multinomial_term(y, conc) -> Callable[[np.ndarray], float]:
    """``leaf_term`` of class labels ``y`` (0..K-1) with symmetric-or-not Dirichlet(``conc``) leaves:
    ``log Gamma(A) - sum log Gamma(a_k) + sum log Gamma(m_k + a_k) - log Gamma(N + A)``.

    Example:
        >>> round(dirichlet_multinomial_term([0, 1], [1.0, 1.0])(np.array([0, 1])), 6)  # 1/2 * 1/3
        -1.791759
    """
    y = np.asarray(y)
    conc = [float(a) for a in conc]

    def term(rows):
        counts = [int(np.sum(y[rows] == k)) for k in range(len(conc))]
        out = math.lgamma(sum(conc)) - sum(math.lgamma(a) for a in conc)
        out += sum(math.lgamma(m + a) for m, a in zip(counts, conc, strict=True))
        return out - math.lgamma(len(rows) + sum(conc))

    return term


def normal_inverse_gamma_term(y, mu0, kappa0, a0, b0) -> Callable[[np.ndarray], float]:
    """``leaf_term`` of responses ``y`` with ``y ~ N(mu, s2)``, ``mu ~ N(mu0, s2 / kappa0)``,
    ``s2 ~ InvGamma(a0, b0)`` per leaf: the multivariate Student-t density of the leaf's ``y``
    (computed from its covariance, not from the conjugate update the package uses).

    Example:
        >>> term = normal_inverse_gamma_term([0.0], 0.0, 1.0, 1.0, 1.0)
        >>> round(term(np.array([0])), 6)  # Student-t, 2 df, scale sqrt(2), at its centre: density 1/4
        -1.386294
    """
    y = np.asarray(y, dtype=float)

    def term(rows):
        v = y[rows]
        n = len(v)
        # y | s2 ~ N(mu0 1, s2 (I + 11'/kappa0)); integrating s2 gives a multivariate t with 2 a0 df
        shape = (np.eye(n) + np.ones((n, n)) / kappa0) * (b0 / a0)
        dev = v - mu0
        quad = float(dev @ np.linalg.solve(shape, dev))
        nu = 2.0 * a0
        _, logdet = np.linalg.slogdet(shape)
        return float(math.lgamma((nu + n) / 2) - math.lgamma(nu / 2) - 0.5 * n * math.log(nu * math.pi)
                     - 0.5 * logdet - 0.5 * (nu + n) * math.log1p(quad / nu))

    return term


def _gaussian_logpdf(r, mean, cov) -> float:
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, r - mean)
    return float(-0.5 * z @ z - np.log(np.diag(chol)).sum() - 0.5 * len(r) * math.log(2 * math.pi))


def basis_leaf_term(r, w, basis, mu0, sigma_mu) -> Callable[[np.ndarray], float]:
    """``leaf_term`` of leaves that hold a coefficient on a basis: ``r_i ~ N(basis_i . beta, 1 / w_i)`` with
    ``beta ~ N(mu0, diag(sigma_mu^2))`` (``basis`` (n,) or (n, d); ``mu0`` and ``sigma_mu`` scalars or one per
    column): the leaf's rows are jointly Gaussian with mean ``B mu0`` and covariance
    ``diag(1 / w) + B diag(sigma_mu^2) B^T``, written out here and not by sufficient statistics (the package
    divides by a one-column basis, and sums ``B B^T`` for several; this does neither). Needs ``w > 0``.

    Example:
        >>> term = basis_leaf_term([0.0], [1.0], [[1.0]], 0.0, 1.0)
        >>> round(term(np.array([0])), 6) == round(-0.5 * math.log(2 * math.pi * 2.0), 6)
        True
    """
    r, w = np.asarray(r, dtype=float), np.asarray(w, dtype=float)
    B = np.asarray(basis, dtype=float).reshape(len(r), -1)
    m0 = np.broadcast_to(np.asarray(mu0, dtype=float), (B.shape[1],))
    s2 = np.broadcast_to(np.asarray(sigma_mu, dtype=float) ** 2, (B.shape[1],))

    def term(rows: np.ndarray) -> float:
        b = B[rows]
        cov = np.diag(1.0 / w[rows]) + (b * s2) @ b.T
        return _gaussian_logpdf(r[rows], b @ m0, cov)

    return term


def split_basis_term(r, w, z, mu0, sigma_mu, slab: float = 1.0) -> Callable[[np.ndarray, int], float]:
    """``parent_leaf_term`` of leaves on a basis chosen by the tree: a leaf whose parent splits on ``v`` holds an
    intercept and a slope on ``z[:, v]`` (``z`` (n, p); no slope column at the root), ``N(mu0, sigma_mu^2)`` each
    (two values), its rows' density written out as :func:`basis_leaf_term`; with ``slab < 1`` the slope is 0 with
    prior probability ``1 - slab``, the mixture of the two densities.

    Example:
        >>> term = split_basis_term([0.0], [1.0], [[2.0]], [0.0, 0.0], [1.0, 1.0])
        >>> round(term(np.array([0]), -1), 6) == round(-0.5 * math.log(2 * math.pi * 2.0), 6)
        True
    """
    r, w, z = np.asarray(r, dtype=float), np.asarray(w, dtype=float), np.asarray(z, dtype=float)
    m0 = np.broadcast_to(np.asarray(mu0, dtype=float), (2,))
    sd = np.broadcast_to(np.asarray(sigma_mu, dtype=float), (2,))
    intercept = basis_leaf_term(r, w, np.ones(len(r)), m0[0], sd[0])
    lines = [basis_leaf_term(r, w, np.column_stack([np.ones(len(r)), z[:, v]]), m0, sd) for v in range(z.shape[1])]

    def term(rows: np.ndarray, v: int) -> float:
        full = intercept(rows) if v < 0 else lines[v](rows)  # at the root the slope has no column
        if slab >= 1.0:
            return full
        return float(np.logaddexp(math.log(slab) + full, math.log1p(-slab) + intercept(rows)))

    return term


def leaf_structure(tree_key: tuple, codes) -> tuple:
    """A tree's leaves as ``((rows...), parent variable)`` pairs, sorted: what the likelihood of leaves on a basis
    chosen by the tree depends on (the partition and each leaf's parent's variable). ``tree_key`` as
    :func:`exact_tree_posterior`'s.

    Example:
        >>> leaf_structure(((0, 0), -1, -1), [[0], [1]])
        (((0,), 0), ((1,), 0))
    """
    codes = np.asarray(codes)
    out = []
    pos = 0

    def walk(rows, parent):
        nonlocal pos
        item = tree_key[pos]
        pos += 1
        if item == -1:
            out.append((tuple(sorted(rows)), parent))
            return
        v, c = item
        walk([i for i in rows if codes[i, v] <= c], v)
        walk([i for i in rows if codes[i, v] > c], v)

    walk(list(range(codes.shape[0])), -1)
    return tuple(sorted(out))


def exact_split_basis_pair_posterior(codes, r, w, z, alpha: float, beta: float, mu0, sigma_mu) -> dict:
    """Exact posterior of the :func:`leaf_structure` pair of a sum of two trees whose leaves hold an intercept and a
    slope on the covariate of their parent's split (:func:`split_basis_term`, every slope free), by enumeration:
    given the two structures ``r`` is Gaussian with mean ``sum_k B_k mu0`` and covariance
    ``diag(1 / w) + sum_k B_k S0 B_k^T``, ``B_k`` the rows' basis values in tree ``k`` (a row's ``(1, z_iv)``,
    ``v`` its leaf's parent's variable) and leaves independent.

    Example:
        >>> post = exact_split_basis_pair_posterior([[0], [1]], [0.0, 1.0], [1.0, 1.0], [[0.0], [1.0]], 0.5, 2.0,
        ...                                         [0.0, 0.0], [1.0, 1.0])
        >>> len(post), round(sum(post.values()), 12)
        (4, 1.0)
    """
    codes = np.asarray(codes)
    n = codes.shape[0]
    r, w, z = np.asarray(r, dtype=float), np.asarray(w, dtype=float), np.asarray(z, dtype=float)
    flat = exact_tree_posterior(codes, np.zeros(n), np.zeros(n), alpha, beta, 0.0, 1.0)  # the tree prior
    prior: dict[tuple, float] = {}
    for key, mass in flat.items():
        s = leaf_structure(key, codes)
        prior[s] = prior.get(s, 0.0) + mass
    m0 = np.broadcast_to(np.asarray(mu0, dtype=float), (2,))
    s2 = np.broadcast_to(np.asarray(sigma_mu, dtype=float) ** 2, (2,))

    def moments(structure):
        mean = np.zeros(n)
        cov = np.zeros((n, n))
        for rows, v in structure:
            idx = np.array(rows)
            slope = z[idx, v] if v >= 0 else np.zeros(len(idx))
            mean[idx] = m0[0] + m0[1] * slope
            cov[np.ix_(idx, idx)] = s2[0] + s2[1] * np.outer(slope, slope)
        return mean, cov

    mom = {s: moments(s) for s in prior}
    base = np.diag(1.0 / w)
    log_post = {}
    for s1, p1 in prior.items():
        for t2, p2 in prior.items():
            cov = base + mom[s1][1] + mom[t2][1]
            log_post[(s1, t2)] = math.log(p1) + math.log(p2) + _gaussian_logpdf(r, mom[s1][0] + mom[t2][0], cov)
    log_z = _log_sum(log_post.values())
    return {k: math.exp(v - log_z) for k, v in log_post.items()}


def exact_pair_posterior(
    codes, r, w, alpha: float, beta: float, mu0: float, sigma_mu: float, split_weights=None, basis=None
) -> dict[tuple[Key, Key], float]:
    """Exact posterior of the row partitions ``(P1, P2)`` of a sum of two trees, by enumeration.

    The trees are independent under the prior; given them, ``r = g1 + g2 + noise`` with every leaf
    value ``N(mu0, sigma_mu^2)`` independently and noise ``N(0, 1 / w_i)``, so ``r`` is Gaussian
    with mean ``2 mu0`` and covariance ``diag(1 / w) + sigma_mu^2 (A1 + A2)``, ``A_k[i, i'] = 1``
    when rows ``i`` and ``i'`` share a leaf of tree ``k``. Needs ``w > 0``. ``basis`` (n,) or (n, d): every leaf
    holds a coefficient per column, ``N(mu0, sigma_mu^2)`` each (scalars or one per column), so the mean is
    ``2 B mu0`` and ``A_k`` is scaled elementwise by ``B diag(sigma_mu^2) B^T`` (for one column,
    ``sigma_mu^2 basis_i basis_i'``).

    Example:
        >>> post = exact_pair_posterior([[0], [1]], [0.0, 1.0], [1.0, 1.0], 0.5, 2.0, 0.0, 1.0)
        >>> len(post), round(sum(post.values()), 12)
        (4, 1.0)
    """
    r = np.asarray(r, dtype=float)
    w = np.asarray(w, dtype=float)
    if np.any(w <= 0):
        raise ValueError("w must be > 0 (a Gaussian likelihood) for the pair posterior")
    prior = exact_partition_prior(codes, alpha, beta, split_weights)
    same = {k: np.equal.outer(np.array(k), np.array(k)).astype(float) for k in prior}
    base = np.diag(1.0 / w)
    B = np.ones((len(r), 1)) if basis is None else np.asarray(basis, dtype=float).reshape(len(r), -1)
    m0 = np.broadcast_to(np.asarray(mu0, dtype=float), (B.shape[1],))
    s2 = np.broadcast_to(np.asarray(sigma_mu, dtype=float) ** 2, (B.shape[1],))
    outer = (B * s2) @ B.T
    mean = 2 * B @ m0
    log_post = {}
    for k1, p1 in prior.items():
        for k2, p2 in prior.items():
            cov = base + outer * (same[k1] + same[k2])
            log_post[(k1, k2)] = math.log(p1) + math.log(p2) + _gaussian_logpdf(r, mean, cov)
    log_z = _log_sum(log_post.values())
    return {k: math.exp(v - log_z) for k, v in log_post.items()}




def exact_partition_prior(
    codes, alpha: float, beta: float, split_weights=None
) -> dict[Key, float]:
    """Exact prior probability of every row partition (posterior with w = 0).

    Example:
        >>> prior = exact_partition_prior([[0], [1], [2]], alpha=0.5, beta=1.0)
        >>> round(prior[(0, 0, 0)], 12), round(prior[(0, 1, 2)], 12)
        (0.5, 0.125)
    """
    n = np.asarray(codes).shape[0]
    zeros = np.zeros(n)
    return exact_partition_posterior(
        codes, zeros, zeros, alpha, beta, 0.0, 1.0, split_weights
    )


def sample_prior_partitions(
    codes, alpha: float, beta: float, n_draws: int, rng, split_weights=None
) -> list[Key]:
    """Draw ``n_draws`` partition keys by simulating the prior directly.

    Plain simulation of the generative process (deliberately sharing no code
    with the enumeration), used to cross-check :func:`exact_partition_prior`.
    ``rng`` is a ``numpy.random.Generator`` or a seed.

    Example:
        >>> keys = sample_prior_partitions([[0], [1]], 0.5, 2.0, 5, rng=0)
        >>> len(keys), set(keys) <= {(0, 0), (0, 1)}
        (5, True)
    """
    codes, weights = _check_inputs(codes, split_weights)
    rng = np.random.default_rng(rng)
    n, p = codes.shape
    cols = [codes[:, v].tolist() for v in range(p)]
    keys = []
    for _ in range(n_draws):
        labels = [0] * n
        n_leaves = 0
        stack = [(list(range(n)), 0)]
        while stack:
            rows, depth = stack.pop()
            ranges = {}  # available variable -> (min code, max code)
            for v in range(p):
                vals = [cols[v][i] for i in rows]
                if weights[v] > 0 and max(vals) > min(vals):
                    ranges[v] = (min(vals), max(vals))
            if ranges and rng.random() < alpha * (1.0 + depth) ** (-beta):
                # Variable with probability proportional to its weight.
                u = rng.random() * sum(weights[v] for v in ranges)
                for v in ranges:
                    u -= weights[v]
                    if u < 0:
                        break
                c = int(rng.integers(ranges[v][0], ranges[v][1]))  # [lo, hi)
                stack.append(([i for i in rows if cols[v][i] <= c], depth + 1))
                stack.append(([i for i in rows if cols[v][i] > c], depth + 1))
            else:
                for i in rows:
                    labels[i] = n_leaves
                n_leaves += 1
        keys.append(partition_key(labels))
    return keys


def summarize(dist: dict[Key, float], fn: Callable[[Key], Hashable]) -> dict:
    """Push a partition distribution through ``fn`` (e.g. number of leaves).

    Example:
        >>> summarize({(0, 0): 0.25, (0, 1): 0.75}, lambda k: max(k) + 1)
        {1: 0.25, 2: 0.75}
    """
    out: dict = {}
    for key, prob in dist.items():
        out[fn(key)] = out.get(fn(key), 0.0) + prob
    return out


def tv_distance(p: dict, q: dict) -> float:
    """Total variation distance ``0.5 * sum |p - q|`` over the union of keys.

    Example:
        >>> tv_distance({"a": 0.5, "b": 0.5}, {"a": 1.0})
        0.5
    """
    keys = p.keys() | q.keys()
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in keys)


def empirical(keys: Iterable[Hashable]) -> dict:
    """Empirical distribution (relative frequencies) of a list of keys.

    Example:
        >>> empirical(["a", "b", "a", "a"])
        {'a': 0.75, 'b': 0.25}
    """
    counts = Counter(keys)
    total = sum(counts.values())
    return {k: c / total for k, c in counts.items()}


def tv_threshold(
    p_exact: dict,
    n_draws: int,
    quantile: float = 0.999,
    n_sim: int = 2000,
    seed: int = 0,
) -> float:
    """Quantile of the TV distance between ``p_exact`` and an ideal sample.

    Simulates ``n_sim`` multinomial samples of size ``n_draws`` from
    ``p_exact`` and returns the ``quantile`` of their TV distances to
    ``p_exact``: a correct iid sampler exceeds it with probability about
    ``1 - quantile``.  (Correlated MCMC draws need a thinned or effective
    sample size in place of ``n_draws``.)

    Example:
        >>> t = tv_threshold({"a": 0.5, "b": 0.5}, n_draws=10000)
        >>> 0.01 < t < 0.03
        True
    """
    probs = np.array(list(p_exact.values()), dtype=float)
    probs /= probs.sum()
    counts = np.random.default_rng(seed).multinomial(n_draws, probs, size=n_sim)
    tvs = 0.5 * np.abs(counts / n_draws - probs).sum(axis=1)
    return float(np.quantile(tvs, quantile))


def quadrature_leaf_term(row_loglik: Callable[[np.ndarray, float], float], mu0: float, sigma_mu: float,
                         n_grid: int = 20_001, width: float = 12.0) -> Callable[[np.ndarray], float]:
    """A leaf's log marginal likelihood ``log int prod_i p(y_i | mu) N(mu; mu0, sigma_mu^2) dmu`` by
    quadrature over the leaf value, for :func:`exact_partition_posterior` with ``m = 1``.

    ``row_loglik(rows, mu)`` is the summed log-likelihood of those rows when the leaf value is
    ``mu`` (vectorised over a grid of ``mu``). The trapezoid rule on ``n_grid`` points over
    ``mu0 +- width * sigma_mu`` (the integrand is smooth and negligible beyond).

    Example:
        >>> term = quadrature_leaf_term(lambda rows, mu: 0.0 * mu, 0.0, 1.0)
        >>> round(term(np.array([0, 1])), 9)
        0.0
    """
    grid = np.linspace(mu0 - width * sigma_mu, mu0 + width * sigma_mu, n_grid)
    log_prior = -0.5 * ((grid - mu0) / sigma_mu) ** 2 - math.log(sigma_mu * math.sqrt(2 * math.pi))
    weights = np.full(n_grid, grid[1] - grid[0])
    weights[[0, -1]] *= 0.5
    log_w = np.log(weights)

    def term(rows: np.ndarray) -> float:
        vals = row_loglik(rows, grid) + log_prior + log_w
        top = vals.max()
        return float(top + np.log(np.exp(vals - top).sum()))

    return term


def quadrature_basis_term(row_loglik: Callable[[int, np.ndarray], np.ndarray], basis, mu0, sd, grid: int = 241,
                          width: float = 7.0) -> Callable[[np.ndarray], float]:
    """``leaf_term`` of leaves holding two coefficients on a basis (n, 2) under any row likelihood
    ``row_loglik(i, eta)`` with ``eta_i = basis_i . beta``, ``beta ~ N(mu0, diag(sd^2))``: two-dimensional
    quadrature (a product trapezoid rule over +-``width`` sd).

    Example:
        >>> term = quadrature_basis_term(lambda i, eta: 0.0 * eta, np.ones((1, 2)), [0.0, 0.0], [1.0, 1.0])
        >>> abs(term(np.array([0]))) < 1e-6  # a flat likelihood: the prior's mass, 1
        True
    """
    u = np.linspace(-width, width, grid)
    mu0, sd = np.broadcast_to(np.asarray(mu0, float), (2,)), np.broadcast_to(np.asarray(sd, float), (2,))
    basis = np.asarray(basis, dtype=float)
    b0, b1 = np.meshgrid(mu0[0] + sd[0] * u, mu0[1] + sd[1] * u, indexing="ij")
    log_prior = -0.5 * (u[:, None] ** 2 + u[None, :] ** 2) - math.log(2 * math.pi)
    cell = math.log((u[1] - u[0]) ** 2)

    def term(rows: np.ndarray) -> float:
        ll = log_prior.copy()
        for i in rows:
            ll = ll + row_loglik(i, basis[i, 0] * b0 + basis[i, 1] * b1)
        top = ll.max()
        return float(top + math.log(np.exp(ll - top).sum()) + cell)

    return term


def tiny_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard tiny example: ``(codes, r, w)`` with n = 7 rows, p = 2.

    Column 0 has codes {0, 1, 2} (2, 2 and 3 rows), column 1 has {0, 1}
    (3 and 4 rows); both are fixed.  ``r`` is a step in column 0 (-1, 0, 1.5)
    plus 0.75 * column 1 plus N(0, 0.5**2) noise drawn from ``seed``;
    ``w = 4`` everywhere (noise sd 0.5).  The rows fall in 6 distinct cells
    (rows 2 and 6 coincide) and the prior puts mass on 34 distinct partitions
    of the 7 rows (for any 0 < alpha < 1, any beta, positive split weights).

    Example:
        >>> codes, r, w = tiny_data(seed=1)
        >>> codes.shape, r.shape, float(w[0])
        ((7, 2), (7,), 4.0)
    """
    codes = np.array(
        [[1, 0], [0, 1], [2, 1], [0, 0], [2, 0], [1, 1], [2, 1]], dtype=np.int64
    )
    step = np.array([-1.0, 0.0, 1.5])
    noise = np.random.default_rng(seed).normal(0.0, 0.5, size=7)
    r = step[codes[:, 0]] + 0.75 * codes[:, 1] + noise
    w = np.full(7, 4.0)
    return codes, r, w
