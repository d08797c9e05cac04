"""Exact reference for monotone trees: the BART posterior restricted to trees monotone in given directions.

Independent of the kernels (plain Python and NumPy). The target of one tree is ``p(T) p(mu | T) 1[mu in M(T)]``
times the likelihood, so a tree's posterior mass is ``p(T) Z(T) P(M(T))``: the unrestricted mass times the
probability, under the leaves' independent conditionals given the tree, that every ordered pair of leaves is in
order. A leaf's conditional is tabulated on a grid of leaf values (prior times likelihood), so any likelihood of
the rows fits (Gaussian, Bernoulli); the order probability is the sum, over the linear extensions of the leaves'
partial order, of the probability of one chain ``mu_1 < ... < mu_L``, integrated on the grid by a forward
recursion (:func:`order_mass`; checked against Monte Carlo in tests/test_monotone.py).

Boxes and orders are the model's (docs/monotone.md): a left child ``code <= c`` ends at ``c``, a right child starts
at ``c + 1``; two leaves are ordered when their boxes touch across a cut on a constrained column and overlap on
every other column.

Two trees (:func:`monotone_pair_posterior`): on one column, every code observed, where a partition fixes the
boxes; the leaves of the pair are jointly Gaussian given the partitions, and the order probability is a
multivariate normal orthant probability of the differences (full rank: one chain per tree).

>>> grid = np.linspace(-8, 8, 2001)
>>> dens = np.exp(-0.5 * grid**2) / np.sqrt(2 * np.pi)
>>> round(order_mass(np.array([dens, dens]), [(0, 1)], grid), 6)
0.5
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from tests.helpers.exact import exact_partition_prior, partition_key

BIG = 10**9


def relation(box_a, box_b, dirs) -> int:
    """+1 when leaf a must be at most leaf b, -1 when at least, 0 when unordered."""
    sign, across = 0, False
    for j, ((la, ha), (lb, hb)) in enumerate(zip(box_a, box_b, strict=True)):
        if max(la, lb) <= min(ha, hb):
            continue
        if across or dirs[j] == 0:
            return 0
        across = True
        if ha + 1 == lb:
            sign = dirs[j]
        elif hb + 1 == la:
            sign = -dirs[j]
        else:
            return 0
    return sign


def ordered_pairs(boxes, dirs) -> list[tuple[int, int]]:
    """``(a, b)`` for every pair of leaves with ``mu_a <= mu_b`` required."""
    pairs = []
    for a in range(len(boxes)):
        for b in range(a + 1, len(boxes)):
            s = relation(boxes[a], boxes[b], dirs)
            if s > 0:
                pairs.append((a, b))
            elif s < 0:
                pairs.append((b, a))
    return pairs


def _extensions(items, pairs):
    """Every linear extension (an order of ``items`` that puts a before b for every pair)."""
    if not items:
        yield ()
        return
    for x in items:
        if any(b == x and a in items for a, b in pairs):
            continue
        rest = [y for y in items if y != x]
        for tail in _extensions(rest, pairs):
            yield (x, *tail)


def order_mass(dens, pairs, grid) -> float:
    """``P(mu_a < mu_b for every pair)`` for independent leaves with densities ``dens`` (L, G) on ``grid``."""
    involved = sorted({i for pair in pairs for i in pair})
    if not involved:
        return 1.0
    dx = grid[1] - grid[0]
    total = 0.0
    for chain in _extensions(involved, pairs):
        f = dens[chain[0]]
        for i in chain[1:]:
            cum = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * dx)])
            f = cum * dens[i]
        total += float(np.sum(0.5 * (f[1:] + f[:-1]) * dx))
    return total


def _leaf_table(row_loglik, mu0, sigma_mu, grid):
    log_prior = stats.norm.logpdf(grid, mu0, sigma_mu)
    dx = grid[1] - grid[0]

    def leaf(rows):
        vals = log_prior + (row_loglik(np.array(rows), grid) if rows else 0.0)
        top = vals.max()
        un = np.exp(vals - top)
        mass = float(np.sum(0.5 * (un[1:] + un[:-1]) * dx))
        return top + math.log(mass), un / mass

    return leaf


def gaussian_rows(r, w):
    """``row_loglik(rows, mu)`` of Gaussian pseudo-data ``r_i ~ N(mu, 1 / w_i)``, up to a constant."""
    r, w = np.asarray(r, float), np.asarray(w, float)
    return lambda rows, mu: (w[rows] * r[rows]).sum() * mu - 0.5 * w[rows].sum() * mu**2


def monotone_tree_posterior(codes, dirs, row_loglik, alpha, beta, mu0, sigma_mu, grid=None) -> dict[tuple, float]:
    """Exact posterior of every tree (keys as :func:`tests.helpers.exact.exact_tree_posterior` writes them)
    restricted to the trees monotone in ``dirs`` (one per column), with leaves ``N(mu0, sigma_mu^2)`` and rows of
    log-likelihood ``row_loglik(rows, mu)`` (vectorised over ``mu``)."""
    codes = np.asarray(codes, dtype=np.int64)
    n, p = codes.shape
    if grid is None:
        grid = np.linspace(mu0 - 12 * sigma_mu, mu0 + 12 * sigma_mu, 6001)
    leaf = _leaf_table(row_loglik, mu0, sigma_mu, grid)

    def node(rows, depth, box):
        # every (key, log prior of the structure, [(rows, box) of each leaf]) of the subtrees of this node
        sub = codes[list(rows)]
        lo, hi = sub.min(axis=0), sub.max(axis=0)
        avail = [v for v in range(p) if hi[v] > lo[v]]
        if not avail:
            return [((-1,), 0.0, [(rows, box)])]
        p_split = alpha * (1.0 + depth) ** (-beta)
        out = [((-1,), math.log(1.0 - p_split), [(rows, box)])]
        for v in avail:
            log_vc = math.log(p_split) - math.log(len(avail)) - math.log(hi[v] - lo[v])
            for c in range(lo[v], hi[v]):
                left = tuple(i for i in rows if codes[i, v] <= c)
                right = tuple(i for i in rows if codes[i, v] > c)
                lbox = tuple((a, min(b, c)) if j == v else (a, b) for j, (a, b) in enumerate(box))
                rbox = tuple((max(a, c + 1), b) if j == v else (a, b) for j, (a, b) in enumerate(box))
                rights = node(right, depth + 1, rbox)
                for lk, lm, ll in node(left, depth + 1, lbox):
                    for rk, rm, rl in rights:
                        out.append((((v, c), *lk, *rk), log_vc + lm + rm, ll + rl))
        return out

    logs = {}
    for key, log_prior, leaves in node(tuple(range(n)), 0, tuple((0, BIG) for _ in range(p))):
        tables = [leaf(rows) for rows, _ in leaves]
        dens = np.array([d for _, d in tables])
        mass = order_mass(dens, ordered_pairs([b for _, b in leaves], dirs), grid)
        if mass > 0:
            logs[key] = log_prior + sum(z for z, _ in tables) + math.log(mass)
    top = max(logs.values())
    z = sum(math.exp(v - top) for v in logs.values())
    return {k: math.exp(v - top) / z for k, v in logs.items()}


def tree_partition(key, codes) -> tuple:
    """The row partition (a :func:`tests.helpers.exact.partition_key`) of a tree key."""
    codes = np.asarray(codes)
    labels = [0] * codes.shape[0]
    pos = [0]
    count = [0]

    def walk(rows):
        item = key[pos[0]]
        pos[0] += 1
        if item == -1:
            for i in rows:
                labels[i] = count[0]
            count[0] += 1
            return
        v, c = item
        walk([i for i in rows if codes[i, v] <= c])
        walk([i for i in rows if codes[i, v] > c])

    walk(list(range(codes.shape[0])))
    return partition_key(labels)


def _intervals(key):
    # a 1-column partition's blocks as code intervals, in order of their codes (every code observed: row = code)
    blocks = {}
    for i, label in enumerate(key):
        blocks.setdefault(label, []).append(i)
    return sorted(blocks.values())


def monotone_pair_posterior(codes, r, w, direction, alpha, beta, mu0, sigma_mu) -> dict[tuple, float]:
    """Exact posterior of the pair of partitions of two trees on one column whose codes are the rows' indices
    (``codes[i] = i``), each tree monotone in ``direction`` (+1 or -1), Gaussian pseudo-data ``(r, w)``."""
    codes = np.asarray(codes, dtype=np.int64).reshape(-1, 1)
    n = codes.shape[0]
    if not np.array_equal(codes[:, 0], np.arange(n)):
        raise ValueError("the pair reference needs codes 0..n-1 in row order")
    r, w = np.asarray(r, float), np.asarray(w, float)
    prior = exact_partition_prior(codes, alpha, beta)
    s2 = sigma_mu**2
    logs = {}
    for k1, p1 in prior.items():
        b1 = _intervals(k1)
        for k2, p2 in prior.items():
            b2 = _intervals(k2)
            L = len(b1) + len(b2)
            B = np.zeros((n, L))
            for q, rows in enumerate(b1 + b2):
                B[rows, q] = 1.0
            log_z = stats.multivariate_normal.logpdf(r, mean=mu0 * B.sum(axis=1), cov=np.diag(1.0 / w) + s2 * B @ B.T)
            prec = np.eye(L) / s2 + B.T @ (w[:, None] * B)
            cov = np.linalg.inv(prec)
            mean = cov @ (mu0 / s2 * np.ones(L) + B.T @ (w * r))
            # consecutive blocks of each tree in order: mu_q - mu_{q+1} <= 0 for an increasing tree
            rows_d = []
            for start, blocks in ((0, b1), (len(b1), b2)):
                for q in range(len(blocks) - 1):
                    d = np.zeros(L)
                    d[start + q], d[start + q + 1] = direction, -direction
                    rows_d.append(d)
            mass = 1.0
            if rows_d:
                D = np.array(rows_d)
                mvn = stats.multivariate_normal(mean=D @ mean, cov=D @ cov @ D.T)
                mass = float(mvn.cdf(np.zeros(len(rows_d)))) if len(rows_d) > 1 else float(
                    stats.norm.cdf(0.0, (D @ mean)[0], math.sqrt((D @ cov @ D.T)[0, 0])))
            logs[(k1, k2)] = math.log(p1) + math.log(p2) + log_z + math.log(mass)
    top = max(logs.values())
    z = sum(math.exp(v - top) for v in logs.values())
    return {k: math.exp(v - top) / z for k, v in logs.items()}


def monotone_pair_posterior_mc(codes, row_loglik, direction, alpha, beta, mu0, sigma_mu, draws=400_000,
                               seed=0) -> dict[tuple, float]:
    """As :func:`monotone_pair_posterior`, for any likelihood of the rows' sums ``row_loglik(f)`` (``f``: (draws, n)
    values of the two trees' sum; returns (draws,) log-likelihoods): each pair's mass ``p(P1) p(P2) E[L 1[in
    order]]`` by Monte Carlo over the leaves' prior (``draws`` per pair, common random numbers across pairs)."""
    codes = np.asarray(codes, dtype=np.int64).reshape(-1, 1)
    n = codes.shape[0]
    if not np.array_equal(codes[:, 0], np.arange(n)):
        raise ValueError("the pair reference needs codes 0..n-1 in row order")
    prior = exact_partition_prior(codes, alpha, beta)
    z = np.random.default_rng(seed).standard_normal((draws, 2 * n))
    out = {}
    for k1, p1 in prior.items():
        b1 = _intervals(k1)
        for k2, p2 in prior.items():
            b2 = _intervals(k2)
            mu1 = mu0 + sigma_mu * z[:, : len(b1)]
            mu2 = mu0 + sigma_mu * z[:, n : n + len(b2)]
            f = np.zeros((draws, n))
            for q, rows in enumerate(b1):
                f[:, rows] += mu1[:, [q]]
            for q, rows in enumerate(b2):
                f[:, rows] += mu2[:, [q]]
            ok = np.ones(draws, dtype=bool)
            for mu in (mu1, mu2):
                steps = np.diff(mu, axis=1) * direction
                ok &= (steps >= 0).all(axis=1)
            out[(k1, k2)] = p1 * p2 * float(np.mean(np.where(ok, np.exp(row_loglik(f)), 0.0)))
    total = sum(out.values())
    return {k: v / total for k, v in out.items()}
