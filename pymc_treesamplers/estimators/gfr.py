"""A fast fit by grow-from-root sweeps alone (XBART; stochtree's "XBART only" mode): :class:`GFRRegressor`.

**Not an MCMC sample.** Each sweep regrows every tree from its root, every split drawn by its local
posterior (:mod:`pymc_treesamplers.engine.updates.gfr`), then draws sigma^2 from its conditional; the forests
of the sweeps after ``burn`` are averaged. That is a quick, often accurate point fit, but the spread of
its forests is not the posterior's: for intervals, sample the model with a step method (their
``warm_start`` option starts each chain from these sweeps, and keeps only the exact sampler's draws).

Model: ``y = sum of m trees + N(0, sigma^2)``, the tree and leaf priors of :func:`pymc_treesamplers.BART`
(defaults on the scale of y) and the Chipman et al. (2010) inverse-gamma prior of sigma^2
(:func:`pymc_treesamplers.chipman_sigma2_prior`).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ..engine import Chain, Pseudo, check_threads
from ..model.binning import split_columns
from ..model.covariates import bart_spec
from ..model.sigma_prior import chipman_sigma2_prior
from ..results.predictive import predict_forests
from .checks import integer


class GFRRegressor(RegressorMixin, BaseEstimator):
    """Sum-of-trees regression fit by grow-from-root sweeps (XBART): fast, **not an MCMC sample**.

    Parameters
    ----------
    m : int, default 200
        Number of trees.
    sweeps : int, default 40
        Grow-from-root sweeps over all trees.
    burn : int, default 15
        Sweeps discarded before the forests are averaged (XBART's defaults: 40 and 15).
    alpha, beta, k, max_bins, split_points
        The tree prior, leaf prior scale and split coding of :func:`pymc_treesamplers.BART`.
    threads : int, default 1
        Threads for the passes over the rows of a long data set.
    random_state : int or None
        Seed of the sweeps.

    Attributes
    ----------
    forests_ : list of str
        The kept sweeps' forests in the package's stored encoding
        (:func:`pymc_treesamplers.results.predictive.predict_forests` evaluates them).
    sigma_ : ndarray
        sigma after every sweep.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_treesamplers import GFRRegressor
    >>> X = np.random.default_rng(0).uniform(size=(300, 2)); y = np.where(X[:, 0] > 0.5, 3.0, 0.0)
    >>> reg = GFRRegressor(m=20, sweeps=10, burn=3, random_state=0).fit(X, y)
    >>> reg.score(X, y) > 0.95
    True
    """

    def __init__(self, m: int = 200, sweeps: int = 40, burn: int = 15, alpha: float = 0.95, beta: float = 2.0,
                 k: float = 2.0, max_bins: int = 256, split_points: str = "data", threads: int = 1,
                 random_state=None):
        self.m = m
        self.sweeps = sweeps
        self.burn = burn
        self.alpha = alpha
        self.beta = beta
        self.k = k
        self.max_bins = max_bins
        self.split_points = split_points
        self.threads = threads
        self.random_state = random_state

    def fit(self, X, y) -> GFRRegressor:
        """Run the sweeps on covariates ``X`` (n, p; NaN: missing) and responses ``y`` (n,)."""
        sweeps = integer("sweeps", self.sweeps, 1)
        burn = integer("burn", self.burn, 0)
        if burn >= sweeps:
            raise ValueError(f"burn must be < sweeps (some sweeps must be kept), got burn={burn}, sweeps={sweeps}")
        threads = check_threads(self.threads)
        Xa, ya, kw = bart_spec(X, y, m=self.m, alpha=self.alpha, beta=self.beta, k=self.k, max_bins=self.max_bins,
                               split_points=self.split_points)
        if not ya.std() > 0:
            raise ValueError("y is constant: there is nothing for the trees to fit")
        n, p = Xa.shape
        columns = split_columns(Xa, kw["max_bins"], kw["split_points"], kw["categorical"])
        # no sampler scratch: this chain runs grow-from-root sweeps only
        chain = Chain.new(columns.codes, kw["m"], alpha=kw["alpha"], beta=kw["beta"], mu0=kw["mu0"],
                          s2=kw["sigma_mu"] ** 2, split_weights=columns.column_weights(np.ones(p)), threads=threads)
        # least squares needs complete rows: with missing values the reference scale is sd(y)
        a0, b0 = chipman_sigma2_prior(Xa, ya, sigma_hat=float(ya.std()) if np.isnan(Xa).any() else None)
        rng = np.random.default_rng(self.random_state)
        f = np.empty(n)
        chain.fit(f)
        r = ya - f
        thr, trace_var = columns.threshold_table(), columns.trace_var
        sigma2 = float(ya.var())
        self.forests_, sigmas = [], []
        for s in range(sweeps):
            # the driver keeps r the residual of the whole forest, tree by tree
            # one sigma: one weight for every row, as the steps pass it (the passes then read no weights)
            if chain.sweep(rng, Pseudo(r, np.full(1, 1.0 / sigma2), threads), warm=True, threads=threads) >= 0:
                raise RuntimeError("a grow-from-root tree outgrew its node buffers")  # cannot happen: 2n + 1 nodes
            # not r @ r: a BLAS dot leaves OpenBLAS threads spinning, taking the cores from the next sweep
            sigma2 = (b0 + 0.5 * float(np.square(r).sum())) / rng.gamma(a0 + 0.5 * n)
            sigmas.append(np.sqrt(sigma2))
            if s >= burn:
                self.forests_.append(chain.encode(thr, trace_var, p))
        self.sigma_ = np.array(sigmas)
        self.n_features_in_ = p
        return self

    def predict(self, X) -> np.ndarray:
        """The average of the kept sweeps' forests at the rows of ``X``."""
        check_is_fitted(self, "forests_")
        return predict_forests(self.forests_, X).mean(axis=0)
