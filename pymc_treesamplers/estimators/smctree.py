"""Single Bayesian decision trees by top-down SMC (Lakshminarayanan, Roy & Teh 2013), as
scikit-learn estimators: :class:`SMCTreeClassifier` and :class:`SMCTreeRegressor`.

The model is one tree with the Chipman et al. (1998) prior of the package (``alpha``, ``beta``,
splits on the coded covariates of :mod:`.binning`) and conjugate leaves integrated out
(:mod:`.leaves`): Dirichlet-multinomial for classes, Normal-inverse-gamma (mean and variance per
leaf) for a response. Each of ``n_islands`` independent particle filters (:mod:`.engine.updates.islands`,
the SMC core that Particle Gibbs also runs) grows ``n_particles`` trees top-down and returns them
weighted, with an unbiased estimate of the marginal likelihood ``p(y | X)``.

Islands are pooled equally as in the paper's experiments (``island_weights="equal"``, the default:
consistent as particles grow), or by their evidence estimates (``"evidence"``: the pooled set is
then a consistent estimate of the posterior as islands grow, not only as particles grow; but with a
few islands of practical size one island takes nearly all the weight: an island ESS of 1.00-1.03 on
ionosphere at 30-300 particles per island, so four fifths of the work would be discarded).
Identical trees of one island (copies made by resampling) are merged and their weights summed;
islands keep their own copies.
"""

from __future__ import annotations

import math
import numbers
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from joblib import effective_n_jobs
from scipy import special, stats
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..engine import (
    EXPANSION_LAYER,
    EXPANSION_NODE,
    PROPOSAL_EMPIRICAL,
    PROPOSAL_OPTIMAL,
    PROPOSAL_PRIOR,
    RESAMPLE_MULTINOMIAL,
    RESAMPLE_SYSTEMATIC,
    Islands,
    SMCOptions,
    class_counts,
    n_stats,
    ng_posteriors,
    normal_gamma,
)
from ..model.binning import bin_columns
from ..model.sigma_prior import chipman_sigma2_prior
from ..results.predictive import leaf_positions, weighted_leaf_sum
from ..results.storage import encode_preorder
from .checks import choice, integer, real

_PROPOSALS = {"prior": PROPOSAL_PRIOR, "empirical": PROPOSAL_EMPIRICAL, "optimal": PROPOSAL_OPTIMAL}
_EXPANSIONS = {"node": EXPANSION_NODE, "layer": EXPANSION_LAYER}
_RESAMPLING = {"multinomial": RESAMPLE_MULTINOMIAL, "systematic": RESAMPLE_SYSTEMATIC}
_ISLAND_WEIGHTS = ("equal", "evidence")


class _SMCTree(BaseEstimator):
    """What both estimators share: checks, the islands, the weighted tree set, its encodings."""

    def _smc_options(self):
        return SMCOptions(
            integer("n_particles", self.n_particles, 1),
            choice("proposal", self.proposal, _PROPOSALS),
            choice("resampling", self.resampling, _RESAMPLING),
            real("ess_threshold", self.ess_threshold, 0.0, 1.0, low_open=False, high_open=False),
            integer("max_stages", self.max_stages, 1),
            choice("expansion", self.expansion, _EXPANSIONS),
        )

    def _check_common(self):
        opts = self._smc_options()
        n_islands = integer("n_islands", self.n_islands, 1)
        alpha = real("alpha", self.alpha, 0.0, 1.0)
        tree_prior = (alpha, real("beta", self.beta, 0.0, math.inf, low_open=False))
        choice("island_weights", self.island_weights, _ISLAND_WEIGHTS)
        integer("max_bins", self.max_bins, 2)
        choice("split_points", self.split_points, ("data", "range"))
        if self.n_jobs is not None:
            integer("n_jobs", self.n_jobs, -(2**31))
            if self.n_jobs == 0:
                raise ValueError("n_jobs must not be 0 (None or 1: one thread; -1: every core)")
        return opts, n_islands, tree_prior

    def _grow(self, X, lm, checked):
        """Run the islands on ``X`` under the leaf model ``lm`` with the options ``checked`` (what
        :meth:`_check_common` returned before any work); set the fitted attributes."""
        opts, n_islands, (alpha, beta) = checked
        width = n_stats(lm)
        binning = bin_columns(X, self.max_bins, self.split_points)
        # the coded data and tree prior every island shares (the leaves' own prior is the leaf model's); each
        # island grows its own particles
        runner = Islands(binning.codes, alpha, beta, opts, width)
        thr = binning.threshold_table()
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        seqs = np.random.SeedSequence(seed).spawn(n_islands)

        def island(k):
            run = runner.run(np.random.default_rng(seqs[k]), lm)
            if run[0] < 0:
                raise RuntimeError(f"an island needed more than max_stages={opts.max_stages} stages: raise max_stages")
            return run

        workers = min(n_islands, effective_n_jobs(self.n_jobs))
        if workers > 1:
            with ThreadPoolExecutor(workers) as pool:
                runs = list(pool.map(island, range(n_islands)))
        else:
            runs = [island(k) for k in range(n_islands)]

        log_ev = np.empty(n_islands)
        ess = np.empty(n_islands)
        trees = {}  # (island, structure) -> [weight, node slice]
        pieces = []
        for k, (_, log_evidence, logw, (counts, var, cut, st)) in enumerate(runs):
            log_ev[k] = log_evidence
            w = np.exp(logw - logw.max())
            w /= w.sum()
            ess[k] = 1.0 / np.sum(w * w)
            starts = np.concatenate([[0], np.cumsum(counts)])
            for c in range(counts.shape[0]):
                sl = slice(starts[c], starts[c + 1])
                key = (k, var[sl].tobytes(), cut[sl].tobytes())
                if key in trees:
                    trees[key][0] += w[c]
                else:
                    trees[key] = [w[c], len(pieces)]
                    pieces.append((var[sl], cut[sl], st[sl]))
        if self.island_weights == "evidence":
            iw = np.exp(log_ev - log_ev.max())
            iw /= iw.sum()
        else:
            iw = np.full(n_islands, 1.0 / n_islands)
        order = sorted(trees.items(), key=lambda kv: kv[1][1])
        tree_island = np.array([key[0] for key, _ in order], dtype=np.int64)
        weights = np.array([wt for _, (wt, _) in order]) * iw[tree_island]
        var = np.concatenate([pieces[i][0] for _, (_, i) in order])
        cut = np.concatenate([pieces[i][1] for _, (_, i) in order])
        self._node_stats = np.concatenate([pieces[i][2] for _, (_, i) in order])[:, 1:]
        self._counts = np.array([len(pieces[i][0]) for _, (_, i) in order], dtype=np.int64)
        self._var = var
        split = var >= 0
        self._thr = np.zeros(var.shape[0])
        self._thr[split] = thr[var[split], cut[split]]
        self.n_features_in_ = X.shape[1]
        self.log_evidence_ = log_ev
        self.log_evidence_pooled_ = float(special.logsumexp(log_ev) - math.log(n_islands))
        self.ess_ = ess
        self.n_stages_ = np.array([r[0] for r in runs], dtype=np.int64)
        self.island_weights_ = iw
        self.tree_weights_ = weights / weights.sum()
        self.tree_island_ = tree_island
        leaves = ~split
        starts = np.concatenate([[0], np.cumsum(self._counts)])
        self.n_leaves_ = np.add.reduceat(leaves.astype(np.int64), starts[:-1])
        return self

    def _encode(self, leaf_values: np.ndarray) -> np.ndarray:
        """Each tree in the package's forest encoding (one per column of ``leaf_values``, comma-joined)."""
        out = []
        start = 0
        for count in self._counts:
            sl = slice(start, start + count)
            texts = []
            for f in range(leaf_values.shape[1]):
                val = np.where(self._var[sl] >= 0, self._thr[sl], leaf_values[sl, f])
                texts.append(encode_preorder([count], self._var[sl].astype(np.int32), val, self.n_features_in_))
            out.append(",".join(texts))
            start += count
        return np.array(out, dtype=object)

    def _X(self, X):
        check_is_fitted(self)
        return np.ascontiguousarray(validate_data(self, X, reset=False, dtype=np.float64), dtype=np.float64)

    def _average(self, X, values):
        """Posterior average over the weighted trees of a per-leaf vector, at the rows of ``X``."""
        out = np.empty((X.shape[0], values.shape[1]))
        weighted_leaf_sum(self._counts, self._var, self._thr, self.tree_weights_, np.ascontiguousarray(values), X, out,
                          X.shape[1])  # numbers only: no category splits
        return out

    def apply(self, X) -> np.ndarray:
        """The leaf each row of ``X`` reaches in each tree: (n, n_trees) preorder node positions
        (rows that share a value in column ``j`` share a leaf of ``trees_[j]``).

        >>> # partition of the training rows by the heaviest tree:
        >>> # leaves = est.apply(X)[:, np.argmax(est.tree_weights_)]
        """
        starts = np.concatenate([[0], np.cumsum(self._counts)[:-1]])
        return (self._positions(self._X(X)) - starts[:, None]).T

    def _positions(self, X):
        """(n_trees, n) positions, in the flat node arrays, of the leaves the rows of ``X`` reach."""
        pos = np.empty((self._counts.shape[0], X.shape[0]), dtype=np.int64)
        leaf_positions(self._counts, self._var, self._thr, X, pos, X.shape[1])
        return pos

    def to_inference_data(self, draws: int = 1000, random_state=None, var_name: str = "mu"):
        """Trees drawn from the weighted set (multinomially) as an ArviZ ``DataTree`` whose
        ``sample_stats`` hold what a pmt tree step records (``{var_name}_forest``, ``_n_leaves``,
        ``_tree_depth``, ``_split_counts``), one chain: so :func:`pymc_treesamplers.predict`, the
        diagnostics and the plots read it like a BART trace with m = 1.

        >>> # idata = est.to_inference_data(); pmt.plot_variable_inclusion(idata)
        """
        import arviz as az

        check_is_fitted(self)
        rng = check_random_state(random_state)
        pick = rng.choice(self.tree_weights_.shape[0], size=integer("draws", draws, 1), p=self.tree_weights_)
        starts = np.concatenate([[0], np.cumsum(self._counts)])
        depth = np.empty(self._counts.shape[0])
        splits = np.zeros((self._counts.shape[0], self.n_features_in_), dtype=np.int64)
        for t in range(self._counts.shape[0]):
            var = self._var[starts[t] : starts[t + 1]]
            best, stack = 0, [0]
            for v in var:  # preorder: a split's two children sit one level down
                d = stack.pop()
                best = max(best, d)
                if v >= 0:
                    splits[t, v] += 1
                    stack += [d + 1, d + 1]
            depth[t] = best
        stats_ = {
            f"{var_name}_forest": self.trees_[pick][None, :],
            f"{var_name}_n_leaves": self.n_leaves_[pick][None, :].astype(float),
            f"{var_name}_tree_depth": depth[pick][None, :],
            f"{var_name}_split_counts": splits[pick][None, :, :],
        }
        return az.from_dict({"sample_stats": stats_})


class SMCTreeClassifier(ClassifierMixin, _SMCTree):
    """Bayesian decision-tree classifier fit by top-down SMC (Lakshminarayanan, Roy & Teh 2013).

    Leaves hold class probabilities with a Dirichlet prior of concentration ``leaf_concentration``
    per class (eq. 3 of the paper with ``alpha / K`` per class), integrated out. Predictions average
    the leaves' posterior predictive probabilities over the weighted trees.

    Parameters
    ----------
    n_particles : int, default 100
        Particles per island (``M / I`` in the paper).
    n_islands : int, default 5
        Independent particle filters, pooled as ``island_weights`` says.
    proposal : {"prior", "empirical", "optimal"}, default "prior"
        How a particle proposes a node's fate: from the tree prior; the prior with the cut drawn
        among the gaps between the node's data; or the one-step optimal proposal.
    expansion : {"node", "layer"}, default "node"
        One node per stage (breadth-first), or every node of a depth per stage.
    ess_threshold : float, default 0.1
        Resample when the effective sample size is at most this share of the particles.
    resampling : {"multinomial", "systematic"}, default "multinomial"
        Resampling scheme.
    alpha : float, default 0.95
        The tree prior ``p_split(d) = alpha (1 + d)^-beta`` (the paper's value).
    beta : float, default 0.5
        Depth penalty of the tree prior (the paper's value).
    leaf_concentration : float or array of shape (K,), default 1.0
        Dirichlet concentration of the leaves' class probabilities, per class.
    max_bins : int, default 256
        Coding of the covariates: columns with more distinct values are binned by quantiles
        (:func:`pymc_treesamplers.model.binning.bin_columns`).
    split_points : {"data", "range"}, default "data"
        Cuts between the data values, or ``max_bins - 1`` equally spaced cuts over the range.
    island_weights : {"equal", "evidence"}, default "equal"
        Islands weighted equally (the paper), or by their marginal-likelihood estimates (consistent
        as islands grow, but with few islands one island usually takes nearly all the weight).
    max_stages : int, default 5000
        Stage limit of an island (an island that needs more is an error).
    random_state : int, numpy.random.RandomState or None, default None
        Seed of the islands' generators.
    n_jobs : int or None, default None
        Islands run in this many threads (None: one; -1: every core).

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
        The class labels.
    log_evidence_ : ndarray of shape (n_islands,)
        Log marginal likelihood ``log p(y | X)`` estimated by each island. (For the regressor the
        leaf prior is set from the data, centred at the mean of y and scaled by its least-squares
        residual sd, so this is an empirical-Bayes evidence.)
    log_evidence_pooled_ : float
        Log of the islands' mean estimate (unbiased on the natural scale).
    ess_ : ndarray of shape (n_islands,)
        Effective sample size of each island's final weights.
    trees_ : ndarray of str
        The distinct trees, each as ``K`` forest encodings (leaf value: class ``k``'s predictive
        probability) joined by commas, the format :func:`pymc_treesamplers.predict` reads.
    tree_weights_ : ndarray
        Posterior weights of ``trees_`` (sum to 1).
    tree_island_ : ndarray of int
        The island of each tree.
    n_leaves_ : ndarray of int
        Leaves of each tree.
    island_weights_ : ndarray of shape (n_islands,)
        The weight of each island in the pooled tree set.
    n_stages_ : ndarray of int
        SMC stages each island ran.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_treesamplers import SMCTreeClassifier
    >>> X = np.random.default_rng(0).uniform(size=(200, 2)); y = (X[:, 0] > 0.5).astype(int)
    >>> clf = SMCTreeClassifier(n_particles=20, n_islands=2, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """

    def __init__(self, n_particles: int = 100, n_islands: int = 5, proposal: str = "prior", expansion: str = "node",
                 ess_threshold: float = 0.1, resampling: str = "multinomial", alpha: float = 0.95, beta: float = 0.5,
                 leaf_concentration=1.0, max_bins: int = 256, split_points: str = "data",
                 island_weights: str = "equal", max_stages: int = 5000, random_state=None,
                 n_jobs: int | None = None):
        self.n_particles = n_particles
        self.n_islands = n_islands
        self.proposal = proposal
        self.expansion = expansion
        self.ess_threshold = ess_threshold
        self.resampling = resampling
        self.alpha = alpha
        self.beta = beta
        self.leaf_concentration = leaf_concentration
        self.max_bins = max_bins
        self.split_points = split_points
        self.island_weights = island_weights
        self.max_stages = max_stages
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X, y) -> SMCTreeClassifier:
        """Grow the weighted trees on ``X`` (n, p) and class labels ``y`` (n,)."""
        checked = self._check_common()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        K = self.classes_.shape[0]
        conc = self.leaf_concentration
        if isinstance(conc, bool | str) or not (isinstance(conc, numbers.Real) or (
                np.ndim(conc) == 1 and all(isinstance(a, numbers.Real) and not isinstance(a, bool) for a in conc))):
            raise TypeError(f"leaf_concentration must be a number or a sequence of numbers, got {conc!r}")
        conc = np.asarray(conc, dtype=np.float64)
        if conc.ndim == 1 and conc.shape[0] != K:
            raise ValueError(f"leaf_concentration must be a number or one per class ({K}), got {len(conc)} values")
        if not np.all(np.isfinite(conc)) or np.any(conc <= 0):
            raise ValueError(f"leaf_concentration must be > 0, got {self.leaf_concentration!r}")
        self._conc = np.broadcast_to(conc, (K,)).copy()
        self._grow(np.ascontiguousarray(X), class_counts(codes, self._conc), checked)
        counts = self._node_stats
        self._leaf_proba = (counts + self._conc) / (counts.sum(axis=1, keepdims=True) + self._conc.sum())
        self.trees_ = self._encode(self._leaf_proba)
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Posterior predictive class probabilities, (n, K) in the order of ``classes_``."""
        return self._average(self._X(X), self._leaf_proba)

    def predict_log_proba(self, X) -> np.ndarray:
        """Log of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def log_predictive(self, X, y) -> float:
        """Mean log posterior predictive probability of the labels ``y`` at ``X`` (the paper's
        test metric); a label not seen in training is an error."""
        proba = self.predict_proba(X)
        y = np.asarray(y)
        idx = np.searchsorted(self.classes_, y)
        if np.any(idx >= self.classes_.shape[0]) or np.any(self.classes_[np.minimum(idx, len(self.classes_) - 1)] != y):
            raise ValueError("y holds labels not seen in fit")
        return float(np.mean(np.log(proba[np.arange(y.shape[0]), idx])))


class SMCTreeRegressor(RegressorMixin, _SMCTree):
    """Bayesian regression tree fit by top-down SMC (Lakshminarayanan, Roy & Teh 2013), with a
    conjugate Normal-inverse-gamma leaf model (mean and variance per leaf: Chipman, George &
    McCulloch 1998's mean-variance shift model).

    On the standardised response ``z = (y - mean) / sd``: ``z ~ N(mu, sigma^2)`` in a leaf,
    ``mu | sigma^2 ~ N(0, sigma^2 / leaf_kappa)``, ``sigma^2 ~ InvGamma(leaf_nu / 2, leaf_nu lam / 2)``
    with ``lam`` such that ``P(sigma < sigma_hat) = leaf_q`` (``sigma_hat``: the least-squares
    residual sd, Chipman et al. 2010's rule). Other parameters as :class:`SMCTreeClassifier`.

    The other parameters and the attributes are those of :class:`SMCTreeClassifier` (no
    ``classes_``; ``trees_`` hold the leaves' posterior means of y, one encoding per tree).

    Parameters
    ----------
    leaf_kappa : float, default 1/3
        Prior precision of a leaf mean relative to its noise (Chipman et al. 1998's ``a``).
    leaf_nu : float, default 3
        Degrees of freedom of the leaves' noise prior.
    leaf_q : float, default 0.9
        Prior probability that a leaf's noise sd is below the least-squares residual sd.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_treesamplers import SMCTreeRegressor
    >>> X = np.random.default_rng(0).uniform(size=(200, 2)); y = np.where(X[:, 0] > 0.5, 3.0, 0.0)
    >>> reg = SMCTreeRegressor(n_particles=20, n_islands=2, random_state=0).fit(X, y)
    >>> reg.score(X, y) > 0.95
    True
    """

    def __init__(self, n_particles: int = 100, n_islands: int = 5, proposal: str = "prior", expansion: str = "node",
                 ess_threshold: float = 0.1, resampling: str = "multinomial", alpha: float = 0.95, beta: float = 0.5,
                 leaf_kappa: float = 1.0 / 3.0, leaf_nu: float = 3.0, leaf_q: float = 0.9, max_bins: int = 256,
                 split_points: str = "data", island_weights: str = "equal", max_stages: int = 5000,
                 random_state=None, n_jobs: int | None = None):
        self.n_particles = n_particles
        self.n_islands = n_islands
        self.proposal = proposal
        self.expansion = expansion
        self.ess_threshold = ess_threshold
        self.resampling = resampling
        self.alpha = alpha
        self.beta = beta
        self.leaf_kappa = leaf_kappa
        self.leaf_nu = leaf_nu
        self.leaf_q = leaf_q
        self.max_bins = max_bins
        self.split_points = split_points
        self.island_weights = island_weights
        self.max_stages = max_stages
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X, y) -> SMCTreeRegressor:
        """Grow the weighted trees on ``X`` (n, p) and responses ``y`` (n,)."""
        checked = self._check_common()
        kappa = real("leaf_kappa", self.leaf_kappa, 0.0, math.inf)
        nu = real("leaf_nu", self.leaf_nu, 0.0, math.inf)
        q = real("leaf_q", self.leaf_q, 0.0, 1.0)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        self._y_mean = float(np.mean(y))
        sd = float(np.std(y))
        self._y_scale = sd if sd > 0 else 1.0
        z = (y - self._y_mean) / self._y_scale
        try:
            a0, b0 = chipman_sigma2_prior(X, z, nu, q)
        except ValueError:  # y constant, or fit exactly by least squares: the standardised scale instead
            a0, b0 = chipman_sigma2_prior(X, z, nu, q, sigma_hat=1.0)
        lm = normal_gamma(z, 0.0, kappa, a0, b0)
        self._grow(np.ascontiguousarray(X), lm, checked)
        jacobian = X.shape[0] * math.log(self._y_scale)  # the evidence of y, not of its standardised z
        self.log_evidence_ = self.log_evidence_ - jacobian
        self.log_evidence_pooled_ -= jacobian
        s = self._node_stats
        mu_n, kn, an, bn = ng_posteriors(lm, np.ascontiguousarray(s)).T
        scale2 = bn * (kn + 1.0) / (an * kn)  # Student-t predictive: 2 a_n degrees of freedom
        self._leaf_t = np.column_stack([self._y_mean + self._y_scale * mu_n, self._y_scale * np.sqrt(scale2), 2 * an])
        self.trees_ = self._encode(self._leaf_t[:, :1])
        return self

    def predict(self, X, return_std: bool = False):
        """Posterior predictive mean of y at the rows of ``X``; with ``return_std``, also the
        predictive standard deviation (of a new observation: the mixture over trees of the leaves'
        Student-t predictives)."""
        X = self._X(X)
        mean, df = self._leaf_t[:, 0], self._leaf_t[:, 2]
        with np.errstate(divide="ignore"):  # a Student-t with at most 2 degrees of freedom: infinite variance
            var = np.where(df > 2.0, self._leaf_t[:, 1] ** 2 * df / np.maximum(df - 2.0, 1e-300), np.inf)
        m = self._average(X, np.column_stack([mean, var + mean * mean]))
        if not return_std:
            return m[:, 0]
        return m[:, 0], np.sqrt(np.maximum(m[:, 1] - m[:, 0] ** 2, 0.0))

    def _components(self, X):
        return self._leaf_t[self._positions(X)]  # (trees, rows, [mean, scale, df])

    def predict_interval(self, X, coverage: float = 0.9) -> np.ndarray:
        """Central posterior predictive interval of a new y at each row of ``X``: (n, 2), the
        quantiles of the mixture over trees of the leaves' Student-t predictives (bisection)."""
        coverage = real("coverage", coverage, 0.0, 1.0)
        X = self._X(X)
        w = self.tree_weights_[:, None]
        out = np.empty((X.shape[0], 2))
        for r0 in range(0, X.shape[0], 256):
            comp = self._components(X[r0 : r0 + 256])
            loc, sc, df = comp[..., 0], comp[..., 1], comp[..., 2]
            for col, target in enumerate(((1 - coverage) / 2, (1 + coverage) / 2)):
                def cdf(q, loc=loc, sc=sc, df=df):
                    return (w * stats.t.cdf((q - loc) / sc, df)).sum(axis=0)

                lo = (loc - 10 * sc).min(axis=0)
                hi = (loc + 10 * sc).max(axis=0)
                span = hi - lo
                while np.any(cdf(lo) > target):  # heavy tails (few degrees of freedom): widen until bracketed
                    lo = np.where(cdf(lo) > target, lo - span, lo)
                    span = 2 * span
                span = hi - lo
                while np.any(cdf(hi) < target):
                    hi = np.where(cdf(hi) < target, hi + span, hi)
                    span = 2 * span
                for _ in range(80):
                    mid = 0.5 * (lo + hi)
                    below = cdf(mid) < target
                    lo = np.where(below, mid, lo)
                    hi = np.where(below, hi, mid)
                out[r0 : r0 + 256, col] = 0.5 * (lo + hi)
        return out

    def log_predictive(self, X, y) -> float:
        """Mean log posterior predictive density of ``y`` at ``X`` (the paper's test metric)."""
        X = self._X(X)
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
        total = 0.0
        logw = np.log(self.tree_weights_)[:, None]
        for r0 in range(0, X.shape[0], 256):
            comp = self._components(X[r0 : r0 + 256])
            lp = stats.t.logpdf(y[None, r0 : r0 + 256], comp[..., 2], comp[..., 0], comp[..., 1])
            total += special.logsumexp(lp + logw, axis=0).sum()
        return total / X.shape[0]
