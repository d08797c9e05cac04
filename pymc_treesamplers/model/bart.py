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

from ..engine import DirichletSplitPrior, prior_split_weights, sample_monotone_tree, sample_prior_tree
from .basis import LINE_SLAB, basis_spec, coefficient_prior, line_basis, line_recipe
from .binning import number_labels, split_columns
from .callers import calling_model, check_method, inside_posterior_predictive
from .covariates import as_data_array, bart_spec, split_directions
from .split_rules import split_rule_kind

__all__ = ["BART", "BARTRV", "as_data_array", "bart_covariates", "bart_spec"]


# the default k of the leaf prior sd 3 / (k sqrt(m)) on each scale (the sum of the trees then has prior sd 3 / k
# at every row): chosen by held-out log score on data sets that the comparison with the peers then leaves out
# (benchmarks/defaults.py, docs/reports/defaults.md): the logit of a probability 0.75 (1 scored 0.001 worse, 2 0.013),
# its probit 2 (Chipman et al.'s, about 1.2 on the logit scale), the log of a count's mean 2 (3 within 0.001),
# the log of a positive response's mean 3 (2 scored 0.007 worse), the log sd of a Normal 3 (4 scored 0.001 worse,
# 2 0.006; docs/reports/defaults-scale.md)
LINK_K = {"logit": 0.75, "probit": 2.0, "count": 2.0, "positive": 3.0, "log": 3.0}

_BART_PROPS = ("m", "alpha", "beta", "mu0", "sigma_mu", "split_prior", "max_bins", "split_points", "k", "auto_leaf",
               "categorical", "number_categories", "basis_scale", "basis_constant", "coef_mu0", "coef_sd", "leaf_slab",
               "line_center", "line_inv_scale", "monotone")


class BARTRV(RandomVariable):
    """PyTensor Op of a BART sum-of-trees vector. Priors live in the Op's properties."""

    name = "bart"
    signature = "(n,p),(n)->(n)"
    dtype = "floatX"
    _print_name = ("BART", "\\operatorname{BART}")
    __props__ = (*RandomVariable.__props__, *_BART_PROPS)

    def __init__(self, *, m=200, alpha=0.95, beta=2.0, mu0=0.0, sigma_mu=1.0, split_prior=None, max_bins=256,
                 split_points="data", k=2.0, auto_leaf=(False, False, False), categorical=(), number_categories=(),
                 basis_scale=1.0, basis_constant=1.0, coef_mu0=(), coef_sd=(), leaf_slab=0.0, line_center=(),
                 line_inv_scale=(), monotone=(), **kwargs):
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
        # each covariate's direction under a monotone constraint (+1, 0, -1), () when unconstrained
        self.monotone = tuple(int(d) for d in monotone)
        # those of them that X holds as numbers, coded when read (split_rules "OneHotSplit": :meth:`coded`)
        self.number_categories = tuple(int(j) for j in number_categories)
        # a leaf basis's scale and constant value (0: it varies), for the defaults of its coefficient's prior
        # (model/basis.py); 1, 1 without a basis
        self.basis_scale = float(basis_scale)
        self.basis_constant = float(basis_constant)
        # a basis of several columns: each leaf's coefficient vector's prior means and sds (model/basis.py); the
        # variable then holds the coefficients (d, n), one forest for all; () otherwise
        self.coef_mu0 = tuple(float(x) for x in coef_mu0)
        self.coef_sd = tuple(float(x) for x in coef_sd)
        # lines in the leaves (response "linear": 1, "mix": 0.5, the prior probability of a free slope; 0: constant
        # leaves) and the standardisation of their covariates (model/basis.py: line_recipe)
        self.leaf_slab = float(leaf_slab)
        self.line_center = tuple(float(x) for x in line_center)
        self.line_inv_scale = tuple(float(x) for x in line_inv_scale)
        super().__init__(**kwargs)

    @property
    def lines(self) -> bool:
        """Whether the leaves hold lines in their parent's covariate (pymc-bart's ``response="linear"`` or
        ``"mix"``; model/basis.py)."""
        return self.leaf_slab > 0.0

    def line_basis(self, X) -> np.ndarray:
        """The line leaves' basis ``[1, z]`` (n, 1 + p) at covariates ``X`` (coded as the trees read them)."""
        return line_basis(X, self.line_center, self.line_inv_scale)

    def line_prior(self, mu0: float, s2: float) -> tuple[np.ndarray, np.ndarray]:
        """Intercept and slope means and variances from the constant leaves' ``N(mu0, s2)`` (model/basis.py)."""
        return np.array([mu0, 0.0]), np.array([s2, s2]) / 2.0

    @property
    def basis_columns(self) -> int:
        """The columns of a basis whose coefficient vectors the leaves hold (0: no such basis; a basis of one
        column is the coefficient of ``w * F`` with constant leaves, model/basis.py)."""
        return len(self.coef_mu0)

    def coded(self, X) -> np.ndarray:
        """Covariates as the trees read them: the columns whose numbers are category labels
        (``number_categories``) replaced by their category codes
        (:func:`~pymc_treesamplers.model.binning.number_labels`)."""
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
        # with a leaf basis the constant fit is already the coefficient's; a basis that varies centres it at 0
        mu0 = (constant_fit / self.m if self.basis_constant else 0.0) if self.auto_leaf[0] else self.mu0
        if not self.auto_leaf[1] or scale == "identity":
            return float(mu0), float(self.sigma_mu)
        k = LINK_K.get(scale, self.k) if self.auto_leaf[2] else self.k
        return float(mu0), float(3.0 / (k * np.sqrt(self.m)) / self.basis_scale)

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
        ``size = (k,)`` one independent forest per output, shape ``(k, n)``; on a basis of ``d`` columns one
        forest whose leaves hold coefficient vectors, shape ``(d, n)``.

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
        if self.lines:
            # each leaf a line in its parent's covariate (none at the root), its slope zero w.p. 1 - leaf_slab
            z = self.line_basis(X)[:, 1:]
            mean, var = self.line_prior(self.mu0, self.sigma_mu**2)
            for row in out:
                for _ in range(self.m):
                    leaf, parent = sample_prior_tree(codes, wsplit, self.alpha, self.beta, rng, parents=True)
                    col = np.where(parent >= 0, columns.source[np.maximum(parent, 0)], -1)[leaf]
                    values = rng.normal(mean, np.sqrt(var), size=(leaf.max() + 1, 2))
                    values[rng.random(leaf.max() + 1) >= self.leaf_slab, 1] = 0.0
                    slope = np.where(col >= 0, z[np.arange(len(leaf)), np.maximum(col, 0)], 0.0)
                    row += values[leaf, 0] + values[leaf, 1] * slope
            return out[0] if size is None or len(size) == 0 else out
        if self.basis_columns:
            # coefficient vectors on a basis: one forest for all, each leaf a vector N(coef_mu0, diag(coef_sd^2))
            for _ in range(self.m):
                leaf = sample_prior_tree(codes, wsplit, self.alpha, self.beta, rng)
                values = rng.normal(self.coef_mu0, self.coef_sd, size=(leaf.max() + 1, self.basis_columns))
                out += values[leaf].T
            return out
        if self.monotone:
            # the prior restricted to monotone trees (docs/monotone.md), tree by tree
            dirs = split_directions(self.monotone, columns.source)
            for row in out:
                for _ in range(self.m):
                    leaf, values = sample_monotone_tree(codes, wsplit, self.alpha, self.beta, self.mu0,
                                                        self.sigma_mu, dirs, rng)
                    row += values[leaf]
            return out[0] if size is None or len(size) == 0 else out
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


def _pymc_bart_keywords(response, split_rules, X) -> tuple[tuple[int, ...], float]:
    """Accept pymc-bart's ``response`` and ``split_rules`` where they mean what this package does
    (constant leaves or lines in the parent's covariate, as exact models; splits ``x <= c`` or "this value or
    another"), refuse the rest by name; returns the columns whose values are category labels (``"OneHotSplit"``)
    and the prior probability of a leaf's free slope (model/basis.py: ``LINE_SLAB``)."""
    if response is not None and response not in LINE_SLAB:
        raise ValueError(f"response must be one of {sorted(LINE_SLAB)} (pymc-bart's leaf types), got {response!r}")
    slab = LINE_SLAB[response or "constant"]
    if split_rules is None:
        return (), slab
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
    return tuple(one_hot), slab


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
        pymc-bart's per-covariate rules, in any of its spellings (:mod:`pymc_treesamplers.model.split_rules`):
        ``"ContinuousSplit"`` (``x <= c``, the default) or ``"OneHotSplit"`` (the column's numbers are
        category labels: "this value or another", as a pandas category column would split);
        ``"SubsetSplit"`` is refused.
    response : {"constant", "linear", "mix"}, optional
        pymc-bart's leaf types, as exact models (docs/basis.md, "Lines in the leaves"): ``"constant"`` (the
        default); ``"linear"``: a leaf whose parent splits on covariate ``v`` holds a line in ``v`` (standardised
        on the training rows; the root leaf an intercept), intercept and slope ``N(mu0, sigma_mu^2 / 2)`` and
        ``N(0, sigma_mu^2 / 2)`` a priori, sampled with the trees, not fitted by least squares; ``"mix"``: the
        same with each slope zero with prior probability 1/2. The variable holds the sum of the trees, as with
        constant leaves.
    leaf_basis : (n,) or (n, d) array or pm.Data, optional
        A basis column ``w``: each leaf then holds a coefficient and the trees contribute ``w * F(X)`` (a
        varying coefficient; with a treatment column, its effect: docs/basis.md). ``BART`` then returns that
        term, ``w * F``, for the likelihood, while the model's variable ``name`` (and the trace, and
        :func:`~pymc_treesamplers.predict`) hold the coefficient ``F``. The leaf prior's defaults are the
        coefficient's: ``sigma_mu`` divided by the root mean square of ``w``; ``mu0`` divided by ``w`` when
        it is one constant, else 0. ``pm.Data`` may be changed by ``pm.set_data`` for predictions. With
        ``d > 1`` columns ``W`` each leaf holds a coefficient vector (the partitions shared by the columns:
        linear leaves on ``[1, x]``, say), the variable holds the coefficients ``F`` (d, n), ``BART`` returns
        ``sum_j W[:, j] * F[j]``, and ``mu0``, ``sigma_mu`` may be one per column (defaults: model/basis.py).
        A basis of several columns takes every likelihood of the package's families (a Normal, the augmented and
        the expanded ones); one outside them (the compiled graph's route) is refused, for now.
    monotone : sequence of {1, 0, -1} or dict, optional
        Shape constraints: one value per column of X, +1 where the sum of the trees may only rise as that covariate
        rises (every other held fixed), -1 where it may only fall, 0 where it is free (scikit-learn's and
        LightGBM's convention), or a dict from a DataFrame's column names (or column indices) to values, the
        columns left out free. The prior is BART's restricted to forests whose every tree is monotone, so the
        fit and every prediction are monotone at every x (docs/monotone.md). Numeric columns without missing
        values only; sampled by :class:`~pymc_treesamplers.CGMStep` (the default) and
        :class:`~pymc_treesamplers.GrowPruneStep`, under a Normal likelihood or an augmented one (Bernoulli,
        Binomial, Student-t); anything else is refused when the step is built.
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
        leaf_basis=None,
        monotone=None,
        **kwargs,
    ):
        if k in ("constant", "linear", "mix", "motr"):  # pymc-bart's positional order after beta: response,
            # split_rules, split_prior
            if response is not None or split_rules is not None:
                raise TypeError(f"BART got response twice ({k!r} in k's place, pymc-bart's position, and by keyword)")
            response, split_rules, split_prior, k, mu0, sigma_mu = k, mu0, sigma_mu, None, None, None
        one_hot, slab = _pymc_bart_keywords(response, split_rules, X)
        if monotone is not None and (slab or leaf_basis is not None):
            raise ValueError("monotone constraints order constant leaves: they cannot be combined with "
                             f"{'leaf_basis' if leaf_basis is not None else f'response={response!r}'} "
                             "(a leaf's line or coefficient has no single value to order)")
        if slab and leaf_basis is not None:
            raise ValueError(f"response={response!r} chooses each leaf's basis from the tree (a line in its parent's "
                             "covariate); leaf_basis gives one: pass one or the other")
        Ya = np.asarray(as_data_array(Y, "Y"))
        # (a Y that is not a vector is refused by bart_spec, by name)
        basis = None if leaf_basis is None or Ya.ndim != 1 else basis_spec(leaf_basis, Ya.shape[0])
        several = basis is not None and basis.columns > 1
        if several and ({"shape", "size", "dims"} & kwargs.keys()):
            raise ValueError(f"a BART on a leaf basis of {basis.columns} columns has one output, its coefficients of "
                             f"shape ({basis.columns}, n): give no shape, size or dims")
        # several columns: the constant leaves' defaults on this Y, shared out per column after (model/basis.py)
        user_leaf = (mu0, sigma_mu)
        if several:
            mu0, sigma_mu = (None if np.ndim(x) else x for x in user_leaf)
        Xa, _, op_kw = bart_spec(X, Y, m=m, alpha=alpha, beta=beta, k=k, mu0=mu0, sigma_mu=sigma_mu,
                                 split_prior=split_prior, max_bins=max_bins, split_points=split_points,
                                 number_categories=one_hot, monotone=monotone,
                                 **({} if basis is None or several else {"basis_scale": basis.scale,
                                                                         "basis_constant": basis.constant}))
        if several:
            op_kw["coef_mu0"], op_kw["coef_sd"] = coefficient_prior(basis, *user_leaf, op_kw["mu0"],
                                                                    op_kw["sigma_mu"])
            # what the user gave (one per column, say) is not a default a link scale may replace
            op_kw["auto_leaf"] = (user_leaf[0] is None, user_leaf[1] is None, op_kw["auto_leaf"][2])
            kwargs["size"] = (basis.columns,)
        if slab:
            op_kw["leaf_slab"] = slab
            op_kw["line_center"], op_kw["line_inv_scale"] = line_recipe(Xa, op_kw["categorical"])
        X_in = X if isinstance(X, TensorSharedVariable) else Xa
        rv = super().__new__(cls, name, X_in, Ya, op_kwargs=op_kw, separate_trees=separate_trees, **kwargs)
        if basis is None:
            return rv
        if several:
            rv.tag.leaf_basis = basis.tensor  # the step reads the basis here (model/basis.py: leaf_basis_of)
            term = (basis.tensor.T * rv).sum(axis=0)
            term.name = f"{name}_term"
            term.tag.bart_coefficient = rv
            return term
        # the model's variable is the coefficient; the likelihood reads its contribution (model/basis.py)
        term = basis.tensor * rv
        term.name = f"{name}_term"
        term.tag.bart_coefficient = rv  # the steps, plots and diagnostics take the term for the variable (bart_of)
        return term

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
        check_method(value)
        return pt.zeros(value.shape[:-1], dtype=value.dtype)

    def support_point(rv, size, X, Y):
        # from the shapes alone: ``zeros_like(rv)`` made PyMC's initial point draw a whole prior
        # forest (m trees over every row: ~50 s at 10^7 rows) only to read its shape
        n = X.shape[-2]
        op = rv.owner.op
        if op.basis_columns:  # coefficients on a basis of several columns: each at its trees' prior mean
            return pt.outer(op.m * pt.as_tensor_variable(np.array(op.coef_mu0)), pt.ones(n))
        # a leaf basis's coefficient starts where its trees' leaves centre it (0 for a basis that varies)
        start = pt.mean(Y) if (op.basis_scale, op.basis_constant) == (1.0, 1.0) else op.m * op.mu0
        if rv.type.ndim == 1:
            return pt.alloc(start, n)
        k = rv.type.shape[0] if rv.type.shape[0] is not None else size[0]
        return pt.alloc(start, k, n)
