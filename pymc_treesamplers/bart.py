"""The BART random variable: a PyTensor ``RandomVariable`` registered with PyMC.

``pmt.BART("mu", X, Y, m=200)`` is a vector of length ``n`` (one value per row of X): the sum of
``m`` regression trees. Its log density inside the model is constant (zero): the trees and their
prior are handled by the tree step methods, which see the rest of the model through the
likelihood. Prior predictive draws sample fresh trees from the tree prior.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Distribution, _call_rv_op
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.sharedvar import TensorSharedVariable
from pytensor.tensor.variable import TensorConstant

from .binning import SPLIT_POINTS, covariate_matrix, number_labels, numeric_array, split_columns
from .callers import calling_model, check_route, inside_posterior_predictive
from .engine.prior import sample_prior_tree
from .engine.splitprior import DirichletSplitPrior, prior_split_weights
from .split_rules import split_rule_kind

__all__ = ["BART", "BARTRV", "as_data_array", "bart_covariates", "bart_spec"]


# the default k of the leaf prior sd 3 / (k sqrt(m)) on each scale (the sum of the trees then has prior sd 3 / k
# at every row): chosen by held-out log score on data sets that the comparison with the peers then leaves out
# (benchmarks/defaults.py, docs/defaults.md): the logit of a probability 0.75 (1 scored 0.001 worse, 2 0.013),
# its probit 2 (Chipman et al.'s, about 1.2 on the logit scale), the log of a count's mean 2 (3 within 0.001),
# the log of a positive response's mean 3 (2 scored 0.007 worse); the log sd of a Normal keeps 2 (not measured)
LINK_K = {"logit": 0.75, "probit": 2.0, "count": 2.0, "positive": 3.0, "log": 2.0}

_BART_PROPS = ("m", "alpha", "beta", "mu0", "sigma_mu", "split_prior", "max_bins", "split_points", "k", "auto_leaf",
               "categorical", "number_categories")


class BARTRV(RandomVariable):
    """PyTensor Op of a BART sum-of-trees vector. Priors live in the Op's properties."""

    name = "bart"
    signature = "(n,p),(n)->(n)"
    dtype = "floatX"
    _print_name = ("BART", "\\operatorname{BART}")
    __props__ = (*RandomVariable.__props__, *_BART_PROPS)

    def __init__(self, *, m=200, alpha=0.95, beta=2.0, mu0=0.0, sigma_mu=1.0, split_prior=None, max_bins=256,
                 split_points="data", k=2.0, auto_leaf=(False, False, False), categorical=(), number_categories=(),
                 **kwargs):
        self.m = int(m)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.mu0 = float(mu0)
        self.sigma_mu = float(sigma_mu)
        if split_prior is None or isinstance(split_prior, DirichletSplitPrior):
            self.split_prior = split_prior
        else:
            self.split_prior = tuple(float(x) for x in split_prior)
        self.max_bins = int(max_bins)
        self.split_points = str(split_points)
        # which of (mu0, sigma_mu, k) were defaulted: a step that finds a non-Gaussian likelihood
        # replaces those by defaults on the link scale (leaf_prior)
        self.k = float(k)
        self.auto_leaf = tuple(bool(a) for a in (*auto_leaf, False, False, False)[:3])
        # the columns of X holding unordered categories (label codes, binning.covariate_matrix)
        self.categorical = tuple(int(j) for j in categorical)
        # those of them that X holds as numbers, coded when read (split_rules "OneHotSplit": :meth:`coded`)
        self.number_categories = tuple(int(j) for j in number_categories)
        super().__init__(**kwargs)

    def coded(self, X) -> np.ndarray:
        """Covariates as the trees read them: the columns whose numbers are category labels
        (``number_categories``) replaced by their category codes (:func:`~pymc_treesamplers.binning.number_labels`)."""
        X = np.array(X, dtype=float)
        for j in self.number_categories:
            X[..., j] = number_labels(X[..., j].ravel()).reshape(X[..., j].shape)
        return X

    def leaf_prior(self, constant_fit: float | None = None, scale: str | None = None) -> tuple[float, float]:
        """``(mu0, sigma_mu)`` of the leaves. ``constant_fit``: under a non-Gaussian likelihood, the
        BART value that fits the data best as a constant; ``scale``: the scale the BART value lives on
        (``"logit"``, ``"probit"``, ``"count"`` and ``"positive"``: the log of the mean, ``"log"``: of a
        Normal's sd, ``"identity"``, None when unknown). Defaulted values then
        follow Chipman et al. (2010, binary case) on that scale: ``mu0 = constant_fit / m``,
        ``sigma_mu = 3 / (k sqrt(m))`` with ``k`` from :data:`LINK_K` unless given (docs/likelihoods.md:
        chosen by held-out log score, benchmarks/defaults.py); on the identity scale (Student-t, asymmetric
        Laplace) the scale of Y's rule, as for a Normal likelihood.

        >>> BARTRV(m=4, mu0=0.5, sigma_mu=1.0, auto_leaf=(True, True, False)).leaf_prior(2.0)
        (0.5, 0.75)
        >>> BARTRV(m=4, mu0=0.5, sigma_mu=1.0, auto_leaf=(True, True, True)).leaf_prior(2.0, "logit")
        (0.5, 2.0)
        """
        if constant_fit is None:
            return self.mu0, self.sigma_mu
        mu0 = constant_fit / self.m if self.auto_leaf[0] else self.mu0
        if not self.auto_leaf[1] or scale == "identity":
            return float(mu0), float(self.sigma_mu)
        k = LINK_K.get(scale, self.k) if self.auto_leaf[2] else self.k
        return float(mu0), float(3.0 / (k * np.sqrt(self.m)))

    @property
    def sparse(self) -> DirichletSplitPrior | None:
        """The Dirichlet prior of the split weights, when they are unknown (``split_prior="dirichlet"``)."""
        return self.split_prior if isinstance(self.split_prior, DirichletSplitPrior) else None

    def split_weights(self, p: int) -> np.ndarray:
        """Fixed split weights, or the starting ones (equal) when they have a Dirichlet prior."""
        if self.split_prior is None or self.sparse is not None:
            return np.ones(p)
        return np.asarray(self.split_prior, dtype=float)

    def rng_fn(self, rng, X, Y, size):
        """Draw the sum of ``m`` trees from the prior (structure and leaves) at the rows of X; with
        ``size = (k,)`` one independent forest per output, shape ``(k, n)``.

        Refused inside ``pm.sample_posterior_predictive`` (``sample_vars=[bart]``): there a prior draw
        would pass for a prediction from the fitted trees."""
        if inside_posterior_predictive():
            raise ValueError(
                "pm.sample_posterior_predictive was asked to redraw a BART variable (it is in sample_vars), which "
                "would draw fresh trees from the prior, not predictions from the fitted ones. Predict from the "
                "stored trees instead: pmt.sample_posterior_predictive(idata, var_names=[...]) after pm.set_data "
                "(draw-matched, everything downstream included), or pmt.predict(idata, X_new, var_name)."
            )
        # (a defaulted k alone changes nothing once sigma_mu is given)
        if any(self.auto_leaf[:2]) and (model := calling_model("sample_prior_predictive")) is not None:
            self._warn_if_link_scale(model)
        # PyTensor broadcasts X and Y to the batch (output) shape: every output has the same X
        X = X.reshape(-1, *X.shape[-2:])
        if not all(np.array_equal(x, X[0], equal_nan=True) for x in X[1:]):
            raise ValueError("BART prior draws need the same X for every output")
        X = X[0]
        outputs = 1 if size is None or len(size) == 0 else int(np.prod(size))
        if size is not None and len(size) > 1:
            raise ValueError(f"BART has at most one output dimension before the rows, got size {tuple(size)}")
        columns = split_columns(self.coded(X), self.max_bins, self.split_points, self.categorical)
        codes, p = columns.codes, X.shape[1]
        wsplit = columns.column_weights(self.split_weights(p) if self.sparse is None
                                        else prior_split_weights(self.sparse, p, rng))
        out = np.zeros((outputs, X.shape[0]))
        for row in out:
            for _ in range(self.m):
                leaf = sample_prior_tree(codes, wsplit, self.alpha, self.beta, rng)
                values = rng.normal(self.mu0, self.sigma_mu, size=leaf.max() + 1)
                row += values[leaf]
        return out[0] if size is None or len(size) == 0 else out


    def _warn_if_link_scale(self, model) -> None:
        """Warn when prior predictive draws use the leaf prior on the scale of Y while the tree steps will use
        one on a link scale: a defaulted leaf prior of a BART under a likelihood other than a Normal mean."""
        from pytensor.graph.traversal import ancestors
        from pytensor.tensor.random.basic import NormalRV

        # the compiled function may hold an in-place copy of this Op (another ``inplace`` prop): compare ours
        mine = [getattr(self, k) for k in _BART_PROPS]
        barts = [rv for rv in model.free_RVs if isinstance(getattr(rv.owner, "op", None), BARTRV)
                 and [getattr(rv.owner.op, k) for k in _BART_PROPS] == mine]
        for obs in model.observed_RVs:
            mine = [rv for rv in barts if rv in set(ancestors([obs]))]
            if not mine:
                continue
            params = obs.owner.op.dist_params(obs.owner)
            gaussian_mean = isinstance(obs.owner.op, NormalRV) and not any(
                rv in set(ancestors(params[1:])) for rv in mine)
            if not gaussian_mean:
                warnings.warn(
                    f"prior predictive draws of {mine[0].name!r} use the leaf prior mu0={self.mu0:.4g}, "
                    f"sigma_mu={self.sigma_mu:.4g} (the defaults on the scale of Y), but under the likelihood "
                    f"{obs.name!r} the tree steps sample with a leaf prior on its link scale (sigma_mu = "
                    f"3 / (k sqrt(m)), mu0 = the best constant fit / m; docs/likelihoods.md). Pass mu0 and sigma_mu "
                    "to pmt.BART to make the two the same.", UserWarning, stacklevel=2)
                return


def as_data_array(x, what: str) -> np.ndarray:
    """Numeric value of X or Y given as ndarray, pandas object, pm.Data or a constant tensor.

    >>> as_data_array([[1, 2], [3, 4]], "X").shape
    (2, 2)
    """
    if isinstance(x, TensorSharedVariable):
        x = x.get_value()
    elif isinstance(x, TensorConstant):
        x = x.data
    elif isinstance(x, pt.TensorVariable):
        raise TypeError(f"{what} must be data (ndarray, DataFrame or pm.Data), not a symbolic tensor")
    return numeric_array(x, what)


def bart_covariates(rv) -> pt.TensorVariable:
    """The covariate matrix X (n, p) of a BART variable, as given to :class:`BART` (a BART with several
    outputs sees it broadcast over the outputs in its graph: that broadcast is taken off).

    >>> import pymc as pm
    >>> with pm.Model():
    ...     mu = BART("mu", np.eye(3), np.ones(3), m=2, shape=(2, 3))
    >>> bart_covariates(mu).type.shape
    (3, 3)
    """
    X = rv.owner.op.dist_params(rv.owner)[0]
    while X.ndim > 2 and X.owner is not None and isinstance(X.owner.op, DimShuffle):
        X = X.owner.inputs[0]
    return X


_OPTIONS = dict(m=200, alpha=0.95, beta=2.0, k=None, mu0=None, sigma_mu=None, split_prior=None, max_bins=256,
                split_points="data", number_categories=())


def bart_spec(X, Y, **options) -> tuple[np.ndarray, np.ndarray, dict]:
    """Check BART inputs and resolve the prior defaults; returns ``(X, Y, op_kwargs)``.

    ``options`` are the keyword arguments of :class:`BART` (defaults as there). Defaults (Chipman
    et al. 2010, on the scale of Y): ``mu0 = mean(Y)/m``, ``sigma_mu = (max(Y) - min(Y)) / (2 k sqrt(m))``
    (under a non-Gaussian likelihood the step moves defaulted values to the link scale:
    :meth:`BARTRV.leaf_prior`).

    >>> X, Y, kw = bart_spec(np.arange(6.0)[:, None], np.arange(6.0), m=4)
    >>> kw["mu0"], kw["sigma_mu"]
    (0.625, 0.625)
    """
    if unknown := sorted(set(options) - set(_OPTIONS)):
        raise TypeError(f"BART got unexpected keyword arguments {unknown}")
    opts = _OPTIONS | options
    m, alpha, beta, k, mu0, sigma_mu = (opts[name] for name in ("m", "alpha", "beta", "k", "mu0", "sigma_mu"))
    split_prior, max_bins, split_points = opts["split_prior"], opts["max_bins"], opts["split_points"]
    number_categories = tuple(int(j) for j in opts["number_categories"])
    if isinstance(X, (TensorSharedVariable, TensorConstant)) or not hasattr(X, "dtypes"):
        Xa, categorical = as_data_array(X, "X"), ()
    else:  # a DataFrame: categorical and string columns get category codes
        Xa, categorical = covariate_matrix(X, "X")
    Ya = as_data_array(Y, "Y")
    if Xa.ndim == 1:
        Xa = Xa[:, None]
    if Xa.ndim != 2:
        raise ValueError(f"X must be a 2-D matrix (rows x covariates), got {Xa.ndim} dimensions")
    if Ya.ndim != 1:
        raise ValueError(f"Y must be a vector, got shape {Ya.shape}")
    if Xa.shape[0] != Ya.shape[0]:
        raise ValueError(f"X has {Xa.shape[0]} rows but Y has {Ya.shape[0]}: they must match")
    if Xa.shape[0] < 1 or Xa.shape[1] < 1:
        raise ValueError(f"X must have at least one row and one column, got shape {Xa.shape}")
    if np.isinf(Xa).any():
        raise ValueError("X contains inf: every covariate value must be finite (or NaN for a missing value)")
    if (empty := np.flatnonzero(np.isnan(Xa).all(axis=0))).size:
        names = _column_names(X, empty)
        raise ValueError(f"X column(s) {names} are entirely missing (NaN): drop them, they cannot inform a split")
    # columns whose numbers are labels (split_rules "OneHotSplit"); a DataFrame's category column already is one
    number_categories = tuple(j for j in number_categories if j not in categorical)
    categorical = tuple(sorted((*categorical, *number_categories)))
    if (single := [j for j in categorical if np.unique(Xa[:, j]).size < 2]):
        raise ValueError(f"X categorical column(s) {_column_names(X, single)} have a single category: drop them, "
                         "they cannot inform a split")
    if not np.isfinite(Ya).all():
        raise ValueError("Y contains NaN or inf: every response value must be finite")
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m (number of trees) must be an integer >= 1, got {m!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if not beta >= 0.0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    auto_k = k is None
    if auto_k:  # the Normal default; a step under another likelihood takes its link's (LINK_K)
        k = 2.0
    if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)) or not k > 0.0:
        raise ValueError(f"k must be a number > 0, got {k!r}")
    if isinstance(max_bins, bool) or not isinstance(max_bins, (int, np.integer)) or not 2 <= max_bins <= 65536:
        raise ValueError(f"max_bins must be an integer between 2 and 65536, got {max_bins!r}")
    if split_points not in SPLIT_POINTS:
        raise ValueError(f"split_points must be one of {SPLIT_POINTS}, got {split_points!r}")
    p = Xa.shape[1]
    if isinstance(split_prior, str):
        if split_prior != "dirichlet":
            raise ValueError(f"split_prior must be 'dirichlet', a pmt.DirichletSplitPrior or one weight per column "
                             f"of X, got {split_prior!r}")
        split_prior = DirichletSplitPrior()
    if split_prior is not None and not isinstance(split_prior, DirichletSplitPrior):
        sp = np.asarray(split_prior, dtype=float)
        if sp.shape != (p,):
            raise ValueError(f"split_prior must have one weight per column of X ({p}), got shape {sp.shape}")
        if not np.isfinite(sp).all() or (sp < 0).any():
            raise ValueError("split_prior weights must be finite and >= 0")
        if sp.sum() <= 0:
            raise ValueError("split_prior must give at least one column a positive weight")
        split_prior = tuple(sp.tolist())
    auto_leaf = (mu0 is None, sigma_mu is None, auto_k)
    if mu0 is None:
        mu0 = float(Ya.mean()) / m
    if sigma_mu is None:
        spread = float(Ya.max() - Ya.min())
        sigma_mu = spread / (2.0 * k * np.sqrt(m)) if spread > 0 else 1.0 / np.sqrt(m)
    if not np.isfinite(mu0):
        raise ValueError(f"mu0 must be finite, got {mu0}")
    if not (np.isfinite(sigma_mu) and sigma_mu > 0):
        raise ValueError(f"sigma_mu must be finite and > 0, got {sigma_mu}")
    kw = dict(
        m=int(m),
        alpha=float(alpha),
        beta=float(beta),
        mu0=float(mu0),
        sigma_mu=float(sigma_mu),
        split_prior=split_prior,
        max_bins=int(max_bins),
        split_points=split_points,
        k=float(k),
        auto_leaf=auto_leaf,
        categorical=categorical,
        number_categories=number_categories,
    )
    return Xa, Ya, kw


def _column_names(X, idx) -> list:
    """Names of the columns ``idx`` of X: a DataFrame's labels, else the indices."""
    cols = getattr(X, "columns", None)
    return [str(cols[i]) for i in idx] if cols is not None else [int(i) for i in idx]


def _pymc_bart_keywords(response, split_rules, X) -> tuple[int, ...]:
    """Accept pymc-bart's ``response`` and ``split_rules`` where they mean what this package does
    (constant leaves; splits ``x <= c`` or "this value or another"), refuse the rest by name; returns
    the columns whose values are category labels (``"OneHotSplit"``)."""
    if response is not None and response != "constant":
        raise ValueError(f"response={response!r} (pymc-bart's leaves that are linear in X) is not available: leaves "
                         "here are constants (response='constant', the default)")
    if split_rules is None:
        return ()
    if isinstance(split_rules, (str, type)) or not hasattr(split_rules, "__len__"):
        raise TypeError("split_rules must be a list with one rule per column of X, e.g. ['ContinuousSplit'] * p")
    p = np.shape(X)[1] if np.ndim(X) == 2 else 1
    if len(split_rules) != p:
        raise ValueError(f"split_rules has {len(split_rules)} entries but X has {p} columns")
    one_hot = []
    for v, rule in enumerate(split_rules):
        try:
            kind = split_rule_kind(rule)
        except ValueError as err:
            raise ValueError(f"split_rules[{v}]: {err}") from None
        if kind == "subset":
            raise ValueError(f"split_rules[{v}] is a SubsetSplit (a split sending any subset of the categories one "
                             "way): not available; 'OneHotSplit' splits as 'this category or another' "
                             "(docs/categorical.md)")
        if kind == "one-hot":
            one_hot.append(v)
    return tuple(one_hot)


def _static_int(x) -> int | None:
    """The value of a shape entry when it is known without running the graph (dims may not be)."""
    try:
        return int(pt.get_underlying_scalar_constant_value(x))
    except Exception:  # symbolic length: checked by PyMC when the model is evaluated
        return None


class BART(Distribution):
    r"""Bayesian additive regression trees: ``mu = sum_j g_j(X)``, a vector of length ``len(Y)``.

    Parameters
    ----------
    X : (n, p) ndarray, DataFrame or pm.Data
        Covariates (numeric, no inf). NaN marks a missing value: every split on that column then also
        says whether the missing rows go left or right (docs/missing.md). A DataFrame may also hold
        pandas ``category`` and string columns: unordered ones split as "this category or the rest",
        ordered ones like numbers (docs/categorical.md).
    Y : (n,) array
        Response, used only for the prior defaults of the leaves.
    m : int, default 200
        Number of trees.
    alpha, beta : float
        Tree prior: a node at depth d with a valid cut splits w.p. ``alpha (1 + d)^-beta``.
    k : float, optional
        Leaf prior scale. Under a Normal likelihood (and Student-t, asymmetric Laplace)
        ``sigma_mu = (max Y - min Y) / (2 k sqrt(m))``, default ``k = 2`` (Chipman et al. 2010); under a
        likelihood with a link, ``sigma_mu = 3 / (k sqrt(m))`` on the link scale, default ``k`` 0.75 (logit),
        2 (probit), 2 (log of a count's mean: Poisson, negative binomial), 3 (log of a positive response's
        mean: Gamma), chosen by held-out log score (docs/likelihoods.md).
    mu0, sigma_mu : float, optional
        Leaf prior mean and sd; override the defaults above. Under a likelihood that is not Normal in
        the BART value (Bernoulli, Poisson, ...) the BART lives on the link scale, and the tree steps
        replace defaulted values by ``mu0 = c / m`` (``c``: the best constant fit on that scale) and
        ``sigma_mu = 3 / (k sqrt(m))``. Prior predictive draws (``pm.sample_prior_predictive``) use the
        values resolved on the scale of Y, and say so when that differs: pass both explicitly for a prior
        predictive check on the link scale.
    split_prior : (p,) array, "dirichlet" or DirichletSplitPrior, optional
        Non-negative weights of the covariates when choosing split variables (default: equal). With
        ``"dirichlet"`` the weights are unknown with a sparsity-inducing Dirichlet prior (DART, Linero
        2018; :class:`~pymc_treesamplers.DirichletSplitPrior` for other hyperparameters), updated by the
        tree step each draw and reported as the stat ``<name>_split_weights`` (docs/sparsity.md).
    max_bins : int, default 256
        Columns with more distinct values are cut at quantiles into this many bins (``"data"``), or
        the number of equal-width bins over each column's range (``"range"``).
    split_points : {"data", "range"}, default "data"
        Where cuts may fall. ``"data"``: between consecutive distinct values (or quantile bins),
        each equally likely a priori. ``"range"``: on an equally spaced grid over the column's
        range, so a split location is a priori uniform over the node's range (BayesTree's default
        ``usequants=FALSE`` and the PG-BART paper's prior); wide gaps in the data get more prior
        mass, which suits clustered covariates.
    split_rules : list, optional
        pymc-bart's per-covariate rules, in any of its spellings (:mod:`pymc_treesamplers.split_rules`):
        ``"ContinuousSplit"`` (``x <= c``, the default) or ``"OneHotSplit"`` (the column's numbers are
        category labels: "this value or another", as a pandas category column would split);
        ``"SubsetSplit"`` is refused.
    response : str, optional
        pymc-bart's leaf type: ``"constant"`` (the only one here); ``"linear"`` and ``"mix"`` are refused.
    separate_trees : bool, optional
        pymc-bart's: with several outputs each has its own forest (``True``, the only choice here);
        ``False`` is refused.

    Examples
    --------
    >>> import pymc as pm, pymc_treesamplers as pmt
    >>> X = np.random.default_rng(0).uniform(size=(50, 2)); y = X[:, 0] > 0.5
    >>> with pm.Model():
    ...     mu = pmt.BART("mu", X, y.astype(float), m=10)
    ...     _ = pm.Normal("y", mu, 0.3, observed=y.astype(float))
    """

    rv_type = BARTRV
    rv_op = BARTRV()

    def __new__(
        cls,
        name,
        X,
        Y,
        m=200,
        alpha=0.95,
        beta=2.0,
        k=None,
        mu0=None,
        sigma_mu=None,
        split_prior=None,
        max_bins=256,
        split_points="data",
        separate_trees=None,
        response=None,
        split_rules=None,
        **kwargs,
    ):
        if k in ("constant", "linear", "mix", "motr"):  # pymc-bart's positional order after beta: response,
            # split_rules, split_prior
            if response is not None or split_rules is not None:
                raise TypeError(f"BART got response twice ({k!r} in k's place, pymc-bart's position, and by keyword)")
            response, split_rules, split_prior, k, mu0, sigma_mu = k, mu0, sigma_mu, None, None, None
        one_hot = _pymc_bart_keywords(response, split_rules, X)
        Xa, _, op_kw = bart_spec(X, Y, m=m, alpha=alpha, beta=beta, k=k, mu0=mu0, sigma_mu=sigma_mu,
                                 split_prior=split_prior, max_bins=max_bins, split_points=split_points,
                                 number_categories=one_hot)
        X_in = X if isinstance(X, TensorSharedVariable) else Xa
        return super().__new__(cls, name, X_in, np.asarray(as_data_array(Y, "Y")), op_kwargs=op_kw,
                               separate_trees=separate_trees, **kwargs)

    @classmethod
    def dist(cls, X, Y, op_kwargs=None, shape=None, size=None, separate_trees=None, **kwargs):
        if op_kwargs is None:
            Xa, _, op_kwargs = bart_spec(X, Y)
        if kwargs:
            raise TypeError(f"BART got unexpected keyword arguments {sorted(kwargs)}")
        if separate_trees is not None and not separate_trees:
            raise ValueError(
                "separate_trees=False (pymc-bart's trees shared by all outputs, with vector leaves) is not "
                "available: a BART with several outputs here always has one forest per output (separate_trees=True)"
            )
        n = int(np.shape(Y)[0])
        outputs = None
        if size is not None:
            size = tuple(np.atleast_1d(size))
            if size[-1:] == (n,):
                size = size[:-1]
            if len(size) > 1:
                raise ValueError(f"BART size must be (), ({n},), (k,) or (k, {n}); got {size}")
            outputs = size[0] if size else None
        if shape is not None:
            shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
            static = [_static_int(s) for s in shape]
            if len(shape) not in (1, 2) or (static[-1] is not None and static[-1] != n):
                raise ValueError(f"BART shape must be ({n},) (one value per row of X) or (k, {n}) (k outputs, one "
                                 f"forest each); got {shape}")
            if len(shape) == 2:
                if static[0] is None:  # a dim's length: a shared variable holding the current coords' length
                    try:
                        static[0] = int(pt.as_tensor_variable(shape[0]).eval())
                    except Exception:
                        pass
                if static[0] is None:
                    raise ValueError(f"BART shape {shape}: the number of outputs must be known when the model is "
                                     "built (give it as an integer or through fixed coords)")
                outputs = static[0]
        if outputs is not None and (not isinstance(outputs, (int, np.integer)) or outputs < 1):
            raise ValueError(f"BART needs at least one output, got {outputs!r}")
        op = BARTRV(**op_kwargs)
        args = (pt.as_tensor_variable(X), pt.as_tensor_variable(np.asarray(Y, dtype=float)))
        _, rv = _call_rv_op(op, *args, **({} if outputs is None else {"size": (int(outputs),)}))
        return rv

    def logp(value, X, Y):
        # one term per output (the rows are the support): the trees' prior is the tree steps' business, so a
        # route that would read this density as the variable's (MAP, ADVI, SMC, a generic step) is refused here
        check_route(value)
        return pt.zeros(value.shape[:-1], dtype=value.dtype)

    def support_point(rv, size, X, Y):
        # from the shapes alone: ``zeros_like(rv)`` made PyMC's initial point draw a whole prior
        # forest (m trees over every row: ~50 s at 10^7 rows) only to read its shape
        n = X.shape[-2]
        if rv.type.ndim == 1:
            return pt.alloc(pt.mean(Y), n)
        k = rv.type.shape[0] if rv.type.shape[0] is not None else size[0]
        return pt.alloc(pt.mean(Y), k, n)
