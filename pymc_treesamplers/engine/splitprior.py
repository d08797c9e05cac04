"""Sparse variable selection (DART, Linero 2018): a Dirichlet prior on the split weights, updated exactly.

With ``split_prior="dirichlet"`` the weights ``s`` of the covariates (the probabilities of choosing each
as a split variable, docs/design.md section 2) are unknown, with the prior

    s ~ Dirichlet(alpha / p, ..., alpha / p),    alpha / (alpha + rho) ~ Beta(a, b)

(Linero 2018: ``a = 0.5``, ``b = 1``, ``rho = p``). A small ``alpha`` puts the mass of ``s`` on few
covariates, so the trees split on few. Given the trees the weights' conditional density is

    p(s | trees) ∝ Dirichlet(s; alpha / p + c) × prod over split nodes n of 1 / S_n(s),

``c`` the split counts per covariate and ``S_n(s)`` the summed weight of the covariates with a valid cut
in node n (the normaliser of the rule's prior probability ``s_v / S_n(s)``). ``S_n = 1`` when every
covariate can split the node, the usual case with continuous covariates; Linero's conjugate update
drops the product altogether. Here it is the Metropolis-Hastings correction of that update used as an
independence proposal, accepted with probability ``min(1, prod_n S_n(s) / S_n(s'))``, so the chain
leaves the exact posterior invariant. The concentration ``alpha`` is then updated given ``s`` by slice
sampling on ``z = log(alpha / rho)`` (Neal 2003), also exact, where BART (R) uses a grid.

Weights are held as exact logs. The kernels see them relative to the largest and floored at ``1e-300``
(``TINY``): below that a weight only matters in a node where no covariate of larger weight can split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

from .nodes import END, LEFT, LWAVAIL, ROOT, START
from .prior import node_log_avail, var_has_valid_cut
from .records import tree_of
from .tree import refresh_subtree_prior

__all__ = ["DirichletSplitPrior", "SplitWeights", "new_split_weights", "update_split_weights",
           "prior_split_weights"]

TINY = 1e-300


@dataclass(frozen=True)
class DirichletSplitPrior:
    """The Dirichlet prior of the split weights (DART, Linero 2018) and its hyperprior.

    ``s ~ Dirichlet(alpha / p, ...)`` with ``alpha / (alpha + rho) ~ Beta(a, b)``; ``rho=None`` means
    ``rho = p``, the number of covariates (Linero's default, as are ``a = 0.5`` and ``b = 1``).
    Pass it as ``pmt.BART(..., split_prior=pmt.DirichletSplitPrior(a=1.0))``;
    ``split_prior="dirichlet"`` is ``DirichletSplitPrior()``.

    >>> DirichletSplitPrior().rho_for(100)
    100.0
    >>> DirichletSplitPrior(a=0.0)
    Traceback (most recent call last):
    ...
    ValueError: DirichletSplitPrior: a must be a finite number > 0, got 0.0
    """

    a: float = 0.5
    b: float = 1.0
    rho: float | None = None

    def __post_init__(self):
        for name in ("a", "b", "rho"):
            value = getattr(self, name)
            if value is None and name == "rho":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                    or not (math.isfinite(value) and value > 0):
                raise ValueError(f"DirichletSplitPrior: {name} must be a finite number > 0, got {value!r}")
            object.__setattr__(self, name, float(value))

    def rho_for(self, p: int) -> float:
        """``rho`` for ``p`` covariates."""
        return float(p) if self.rho is None else self.rho


class SplitWeights(NamedTuple):
    """State of the split weights: exact ``logs`` of ``s`` (p,), log-sum-exp 0; the concentration
    ``conc`` (1,); ``hyper`` = ``(a, b, rho)``; per split column (the kernels' columns: a covariate with
    missing values has two, docs/missing.md) its covariate ``group`` and its ``share`` of that weight."""

    logs: np.ndarray
    conc: np.ndarray
    hyper: np.ndarray
    group: np.ndarray
    share: np.ndarray


def new_split_weights(spec: DirichletSplitPrior, p: int, rng: np.random.Generator, group=None,
                      share=None) -> SplitWeights:
    """Start of a chain: ``alpha`` at the hyperprior's mean of ``alpha / (alpha + rho)`` and weights drawn
    from ``Dirichlet(alpha / p)`` (not equal weights: at exactly equal weights the conditional of
    ``alpha`` is improper for ``p >= 3``, ``b = 1``). ``group``, ``share``: the split columns' covariates
    and shares (default: one split column each).

    >>> sw = new_split_weights(DirichletSplitPrior(), 4, np.random.default_rng(0))
    >>> round(float(np.exp(sw.logs).sum()), 12), float(sw.conc[0])
    (1.0, 2.0)
    """
    rho = spec.rho_for(p)
    group = np.arange(p, dtype=np.int64) if group is None else np.asarray(group, dtype=np.int64)
    share = np.ones(len(group)) if share is None else np.asarray(share, dtype=float)
    alpha = rho * spec.a / spec.b
    logs = np.empty(p)
    draw_log_dirichlet(rng, np.full(p, alpha / p), logs)
    return SplitWeights(logs, np.array([alpha]), np.array([spec.a, spec.b, rho]), group, share)


@numba.njit(cache=True, nogil=True)
def log_gamma_variate(rng, shape):
    """Log of a ``Gamma(shape, 1)`` draw, without underflow for tiny shapes
    (``Gamma(a) = Gamma(a + 1) U^(1/a)``)."""
    if shape >= 1.0:
        return math.log(rng.gamma(shape, 1.0))
    return math.log(rng.gamma(shape + 1.0, 1.0)) + math.log(1.0 - rng.random()) / shape


@numba.njit(cache=True, nogil=True)
def draw_log_dirichlet(rng, shape, out):
    """Logs of a ``Dirichlet(shape)`` draw into ``out``."""
    top = -np.inf
    for v in range(shape.shape[0]):
        out[v] = log_gamma_variate(rng, shape[v])
        top = max(top, out[v])
    total = 0.0
    for v in range(shape.shape[0]):
        total += math.exp(out[v] - top)
    lse = top + math.log(total)
    for v in range(shape.shape[0]):
        out[v] -= lse


@numba.njit(cache=True, nogil=True)
def kernel_weights(logs, group, share, wsplit, logw):
    """The split columns' weights as the kernels use them: ``s[group] * share`` relative to the largest
    ``s``, floored at ``TINY``; returns the log of the factor that turns them back into probabilities."""
    top = logs.max()
    for v in range(group.shape[0]):
        w = max(math.exp(logs[group[v]] - top) * share[v], TINY)
        wsplit[v] = w
        logw[v] = math.log(w)
    return top


@numba.njit(cache=True, nogil=True)
def log_norms(forest, codes, w_a, top_a, w_b, top_b):
    """Sums over the split nodes of all trees of ``log S_n`` for two weight vectors given as kernel weights
    and their log factors (:func:`kernel_weights`): ``S_n = exp(top) * sum_{v avail in n} w[v]``."""
    la = 0.0
    lb = 0.0
    for j in range(forest.ints.shape[0]):
        ti = forest.ints[j]
        perm = forest.perm[j]
        for k in range(forest.n_nodes[j]):
            if ti[k, LEFT] < 0:
                continue
            sa = 0.0
            sb = 0.0
            for v in range(codes.shape[0]):
                if var_has_valid_cut(codes[v], perm, ti[k, START], ti[k, END]):
                    sa += w_a[v]
                    sb += w_b[v]
            la += math.log(sa) + top_a
            lb += math.log(sb) + top_b
    return la, lb


@numba.njit(cache=True, nogil=True)
def refresh_forest_prior(forest, data, order):
    """Recompute every node's available weight and rule probability after the weights changed."""
    for j in range(forest.ints.shape[0]):
        t = tree_of(forest, j)
        t.floats[ROOT, LWAVAIL] = node_log_avail(data, t.perm, t.ints[ROOT, START], t.ints[ROOT, END])
        refresh_subtree_prior(t, data, ROOT, order)


@numba.njit(cache=True, nogil=True)
def _log_dirichlet_norm(alpha, p):
    """``lgamma(alpha) - p lgamma(alpha / p) - alpha log p``: the Dirichlet normaliser with ``p log p``
    taken out, which grows like ``(p - 1) / 2 log alpha``; for large ``alpha / p`` from Stirling's series
    (the direct difference cancels to rounding noise there)."""
    if alpha / p < 1e5:
        return math.lgamma(alpha) - p * math.lgamma(alpha / p) - alpha * math.log(p)
    half_log_2pi = 0.5 * math.log(2.0 * math.pi)
    return (0.5 * (p - 1) * math.log(alpha) - 0.5 * p * math.log(p) + (1.0 - p) * half_log_2pi
            + (1.0 - p * p) / (12.0 * alpha))


@numba.njit(cache=True, nogil=True)
def _log_conc_density(z, logs_gap, p, a, b, rho):
    """Log density of ``z = log(alpha / rho)`` given ``s``: ``u = alpha / (alpha + rho) = sigmoid(z)``
    has the ``Beta(a, b)`` prior (with the Jacobian ``u (1 - u)``), times ``Dirichlet(s; alpha / p)``;
    ``logs_gap = sum(log s) + p log p`` (<= 0, 0 at equal weights)."""
    alpha = rho * math.exp(z)
    log_u = -math.log1p(math.exp(-z)) if z > -30.0 else z
    log_1mu = -math.log1p(math.exp(z)) if z < 30.0 else -z
    return a * log_u + b * log_1mu + _log_dirichlet_norm(alpha, p) + (alpha / p) * logs_gap


@numba.njit(cache=True, nogil=True)
def update_concentration(rng, sw):
    """One slice-sampling update of ``alpha`` given the weights (stepping out, then shrinking; Neal 2003)."""
    a, b, rho = sw.hyper[0], sw.hyper[1], sw.hyper[2]
    p = sw.logs.shape[0]
    logs_sum = sw.logs.sum() + p * math.log(p)
    z0 = math.log(sw.conc[0] / rho)
    level = _log_conc_density(z0, logs_sum, p, a, b, rho) + math.log(1.0 - rng.random())
    width = 1.0
    lo = z0 - width * rng.random()
    hi = lo + width
    # at most 100 steps out, split at random between the sides (Neal 2003, fig. 3: keeps the update
    # reversible when the limit is reached)
    j = int(100 * rng.random())
    k = 99 - j
    while j > 0 and _log_conc_density(lo, logs_sum, p, a, b, rho) > level:
        lo -= width
        j -= 1
    while k > 0 and _log_conc_density(hi, logs_sum, p, a, b, rho) > level:
        hi += width
        k -= 1
    for _ in range(200):
        z = lo + (hi - lo) * rng.random()
        if _log_conc_density(z, logs_sum, p, a, b, rho) > level:
            sw.conc[0] = rho * math.exp(z)
            return
        if z < z0:
            lo = z
        else:
            hi = z
    # 200 halvings-or-better without a point above the level: the interval is down to rounding around
    # z0 (a level equal to the density at z0 to the last bit); staying at z0 is the limit of the shrinkage


def update_split_weights(rng: np.random.Generator, sw: SplitWeights, data, forests: list, counts: np.ndarray,
                         order: np.ndarray) -> bool:
    """One exact update of the split weights and then of the concentration, given the trees of
    ``forests`` (:class:`~pymc_treesamplers.engine.records.ForestArrays`, all outputs of one BART) whose split
    counts per split column are ``counts``. Writes the accepted weights into ``data`` and refreshes the
    nodes' cached rule probabilities; returns whether the proposed weights were accepted.

    >>> from pymc_treesamplers.engine.forest import Forest, init_roots
    >>> from pymc_treesamplers.engine.records import split_data
    >>> data = split_data(np.array([[0, 1], [1, 0]], dtype=np.uint16), np.ones(2))
    >>> forest = Forest.empty(1, 2); init_roots(forest.arrays(), data, 0.0)
    >>> sw = new_split_weights(DirichletSplitPrior(), 2, np.random.default_rng(0))
    >>> update_split_weights(np.random.default_rng(0), sw, data, [forest.arrays()], np.zeros(2, np.int64),
    ...                      np.empty(8, np.int64))
    True
    """
    p, q = sw.logs.shape[0], sw.group.shape[0]
    proposal = np.empty(p)
    draw_log_dirichlet(rng, sw.conc[0] / p + np.bincount(sw.group, counts, minlength=p), proposal)
    w_old, w_new = np.empty(q), np.empty(q)
    top_old = kernel_weights(sw.logs, sw.group, sw.share, w_old, np.empty(q))
    top_new = kernel_weights(proposal, sw.group, sw.share, w_new, np.empty(q))
    log_ratio = 0.0
    for forest in forests:
        la, lb = log_norms(forest, data.codes, w_old, top_old, w_new, top_new)
        log_ratio += la - lb
    accepted = bool(math.log(1.0 - rng.random()) < log_ratio)
    if accepted:
        sw.logs[:] = proposal
        kernel_weights(sw.logs, sw.group, sw.share, data.wsplit, data.logw)
        for forest in forests:
            refresh_forest_prior(forest, data, order)
    update_concentration(rng, sw)
    return accepted


def prior_split_weights(spec: DirichletSplitPrior, p: int, rng: np.random.Generator) -> np.ndarray:
    """One draw of the split weights from their prior (``alpha`` from its hyperprior), as the kernels
    use them (relative to the largest, floored at ``TINY``): the prior predictive draws of a BART.

    >>> w = prior_split_weights(DirichletSplitPrior(), 3, np.random.default_rng(0))
    >>> w.shape, float(w.max())
    ((3,), 1.0)
    """
    u = rng.beta(spec.a, spec.b)
    alpha = spec.rho_for(p) * u / (1.0 - u)
    logs = np.empty(p)
    draw_log_dirichlet(rng, np.full(p, max(alpha, 1e-300) / p), logs)
    w = np.empty(p)
    kernel_weights(logs, np.arange(p), np.ones(p), w, np.empty(p))
    return w
