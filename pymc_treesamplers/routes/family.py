"""An observation family's route: :class:`FamilyWorkingModel`, the working model of a likelihood that is one of
the families of :mod:`.family_record` with the BART value in one parameter through a link. It chooses the family's
route once (exact augmentation, the log-link record, or the expansion) and hands the kernels that record each
sweep.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random import basic as rvs

from ..engine import Pseudo
from . import family_record as fam
from . import observation
from .augment import augment_pseudo, augmented, can_augment
from .gaussian import GaussianWorkingModel, residuals
from .reading import FAMILIES, SUPPORTED, BasisView, OutputView, is_probit, link_scale

ROUTES = ("auto", "expand")
"""The values of the steps' ``route`` option: each family's own route, or the expansion for every family."""


# Binomial rows with more trials than this on average take the expansion route: an augmentation
# draws one latent per trial, and with many trials a row's likelihood is close to Gaussian anyway
MAX_MEAN_TRIALS = 50

class FamilyWorkingModel:
    """The likelihood record of a BART variable under an observation family (module docstring).

    ``sweep_input(f, rng, threads)`` reads the other model values (set by PyMC before each step) and returns what
    one sweep of the trees runs on at the BART value ``f``, by the family's route (``self.route``):

    * ``"augment"`` (Bernoulli/Binomial logit or probit, Student-t): latents drawn given ``f``
      (:mod:`pymc_treesamplers.routes.augment`), then Gaussian pseudo-data (the residual record of the
      exact kernels), no correction;
    * ``"loglink"`` (Poisson, Gamma, Normal log sd): a
      :class:`~pymc_treesamplers.routes.family_record.FamilyLik` on the log-link route (exact leaf sums, Laplace
      leaves, Metropolis-Hastings corrected);
    * ``"expand"`` (negative binomial, asymmetric Laplace, a Binomial with more than ``MAX_MEAN_TRIALS``
      trials per row on average, or any family with ``route="expand"``): a ``FamilyLik`` expanded at the
      other trees' fit plus the constant that fits best there, corrected.

    ``record(f)`` is the expansion route's record (which also serves the constant fit).
    """

    def __init__(self, model: pm.Model, bart_rv, value_var, shared: dict, point: dict, gaussian: GaussianWorkingModel,
                 center: float, compile_kwargs=None, view: OutputView | None = None, route: str = "auto"):
        names = gaussian.observed_names
        observed = [model[name] for name in names]
        if len(observed) != 1:
            raise NotImplementedError(f"the BART variable {bart_rv.name!r} enters several likelihood terms {names}; "
                                      "the tree steps handle one non-Gaussian likelihood term per BART variable")
        obs = observed[0]
        op = obs.owner.op
        params = model.replace_rvs_by_values(list(op.dist_params(obs.owner)))
        f0 = np.asarray(point[value_var.name], dtype=float)
        if view is not None:
            params = graph_replace(params, view.replacement, strict=False)
            value_var, f0 = view.var, view.value_of(f0)
        # the checks below run at moderate values (GaussianWorkingModel explains why)
        f0 = 0.5 * np.random.default_rng(3).normal(size=f0.shape)
        self._view = view
        # the term of leaves with coefficient vectors: the expansion's records without kept exp
        # (routes/family_record.py: BasisFamilyLik), and no log-link route, whose Laplace leaves are scalars
        self.basis = isinstance(view, BasisView) or getattr(bart_rv.owner.op, "lines", False)
        dependent = [k for k, p in enumerate(params) if value_var in set(ancestors([p]))]
        if view is not None and dependent:
            # every row of the whole variable is an ancestor of mu[0]; keep the parameters whose values
            # move with this output (the check against PyMC's log-likelihood below backs this up)
            fn = pm.pytensorf.compile([value_var], graph_replace([params[k] for k in dependent], shared, strict=False),
                                      on_unused_input="ignore", **(compile_kwargs or {}))
            rng = np.random.default_rng(2)
            at0 = fn(f0.astype(value_var.dtype))
            at1 = fn((f0 + rng.normal(size=f0.shape)).astype(value_var.dtype))
            dependent = [k for k, a, b in zip(dependent, at0, at1, strict=True) if not np.array_equal(a, b)]
        spec = FAMILIES.get(type(op))
        if len(dependent) != 1 or spec is None or dependent[0] != spec.param:
            where = [op.dist_params(obs.owner)[k].name or f"parameter {k}" for k in dependent]
            raise NotImplementedError(
                f"the likelihood {obs.name!r} ({type(op).__name__}) depends on the BART value through {where}; "
                f"the tree steps sample BART under: {SUPPORTED}"
            )
        k = dependent[0]
        kind_link, self._data = spec.kind, spec.data
        if kind_link == "binary":
            kind_link = (observation.PROBIT2, "probit") if is_probit(params[k]) else (observation.LOGIT2, "logit")
        self.kind, self.link = kind_link
        # an augmentation draws one latent per trial: a Binomial's trials must be data, not a variable
        trials_are_data = not (isinstance(op, rvs.BinomialRV) and set(model.value_vars) & set(ancestors([params[0]])))
        eta = link_scale(params[k], self.link)
        others = [p for j, p in enumerate(params) if j != k]
        y = model.rvs_to_values[obs]
        outs = graph_replace([eta, y, *others], shared, strict=False)
        self._fn = pm.pytensorf.compile([value_var], outs, on_unused_input="ignore", **(compile_kwargs or {}))
        # what the record reads besides the BART value (the other variables, which PyMC sets before each step, and
        # data): the link's intercept and slope and the family's data are kept while these values stay the same
        self._inputs = self._fn.get_shared()
        self._kept_at, self._kept = None, None
        self.name = obs.name
        self.family = f"{type(op).__name__.removesuffix('RV')} ({self.link} link)"
        self.mu0, self.s2 = float(center), 1.0  # the leaf prior; set by the step
        self.refine = True
        self._dtype = value_var.dtype
        self.n = f0.shape[0]
        lik0 = self.record(f0)
        f1 = f0 + np.random.default_rng(1).normal(size=f0.shape)
        self.record(f1)  # affine check at a second point
        # the family's log-likelihood must move with f exactly as PyMC's does (catches any mis-mapping)
        ours = fam.family_loglik(lik0, f1) - fam.family_loglik(lik0, f0)
        theirs = gaussian.loglik(f1) - gaussian.loglik(f0)
        if not abs(ours - theirs) <= 1e-6 * (1.0 + abs(theirs)):
            raise RuntimeError(f"internal check failed: the {self.family} likelihood of {obs.name!r} differs from "
                               f"PyMC's ({ours} vs {theirs} between two points); please report this model")
        self._negative_binomial = isinstance(op, rvs.NegBinomialRV)
        self.route = self._choose_route(route, op, lik0, trials_are_data)

    def _choose_route(self, route: str, op, lik: fam.FamilyLik, trials_are_data: bool) -> str:
        if route not in ROUTES:
            raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
        if route == "expand":
            return "expand"
        if self.kind in (observation.POISSON_LOG, observation.GAMMA_LOGSCALE, observation.NORMAL_LOGSD):
            return "expand" if self.basis else "loglink"
        if self.kind == observation.STUDENT_T:
            return "augment"
        binary = isinstance(op, (rvs.BernoulliRV, rvs.BinomialRV))
        if (binary and trials_are_data and can_augment(self.kind, lik.u, lik.v)
                and np.mean(lik.u + lik.v) <= MAX_MEAN_TRIALS):
            return "augment"
        return "expand"  # negative binomial, asymmetric Laplace, Binomial with many trials

    @property
    def corrected(self) -> bool:
        """Whether the tree updates are Metropolis-Hastings corrected (every route but ``"augment"``)."""
        return self.route != "augment"

    @property
    def leaf_scale(self) -> str:
        """The scale the BART value lives on, for its default leaf prior (:meth:`BARTRV.leaf_prior`): the
        log of a count's mean (``"count"``; a negative binomial's too, whose link is written on its ``p``) or
        of a positive response's (``"positive"``), of a Normal's sd (``"log"``), the logit or probit of a
        probability, or the scale of Y (``"identity"``: Student-t, asymmetric Laplace)."""
        if self.kind in (observation.STUDENT_T, observation.ASYM_LAPLACE):
            return "identity"
        if self.kind == observation.POISSON_LOG or self._negative_binomial:
            return "count"
        if self.kind == observation.GAMMA_LOGSCALE:
            return "positive"
        if self.kind == observation.NORMAL_LOGSD:
            return "log"
        return self.link

    def _eval(self, f):
        eta, y, *others = self._fn(np.asarray(f, dtype=self._dtype))
        shape = np.shape(eta)
        if self._view is not None and not all(np.shape(x) == (self.n,) for x in (eta, y, *others)):
            # an observation shaped like the whole variable (k, n): this output's row of everything
            full = np.broadcast_shapes(shape, np.shape(y), *(np.shape(p) for p in others))
            eta, y, *others = (np.broadcast_to(x, full) for x in (eta, y, *others))
            rows = [self._view.row(x, self.n) for x in (eta, y, *others)]
            if any(r is None for r in rows):
                raise NotImplementedError(f"the likelihood {self.name!r} has shape {full}; the tree steps need "
                                          f"one observation per row of the BART output ({self.n},) or per value of "
                                          f"the BART variable {self._view.shape}")
            eta, y, *others = rows
        elif shape != (self.n,):
            raise NotImplementedError(f"the likelihood {self.name!r} has shape {shape}; the tree steps need one "
                                      f"observation per row of the BART variable ({self.n},)")
        return np.asarray(eta, dtype=float), np.asarray(y, dtype=float), [np.asarray(p, dtype=float) for p in others]

    def _parts(self, f: np.ndarray):
        """``(u, v, s, a, b)`` at the other variables' current values (checks that the link scale is affine
        in the BART value)."""
        now = [np.array(x.get_value(borrow=True), copy=True) for x in self._inputs]
        if self._kept_at is None or not all(np.array_equal(x, k) for x, k in zip(now, self._kept_at, strict=True)):
            eta0, y, others = self._eval(np.zeros(self.n))
            eta1 = self._eval(np.ones(self.n))[0]
            self._kept_at, self._kept = now, (eta0, eta1 - eta0, self._data(y, others))
        a, b, data = self._kept
        eta = self._eval(f)[0]
        with np.errstate(invalid="ignore"):  # a link that is infinite at 0 or 1 (log |w|) is not affine: said below
            affine = np.allclose(eta, a + b * f, rtol=1e-8, atol=1e-8)
        if not affine:
            raise NotImplementedError(
                f"the {self.link} of the parameter of {self.name!r} is not affine in the BART value (each row's "
                f"{self.link}(parameter) must be a + b * bart[row]); the tree steps need that form"
            )
        return (*data, a, b)

    def record(self, f: np.ndarray) -> fam.FamilyLik:
        """The expansion route's likelihood record at the BART value ``f``."""
        u, v, s, a, b = self._parts(f)
        return fam.family_lik(self.kind, u, v, s, a, b, self.mu0, self.s2, f, self.refine, laplace=False,
                              kept_exp=not self.basis)

    def leaf_prior(self, op, m: int) -> tuple[float, float]:
        """``(mu0, sigma_mu^2)`` of the leaves, set on the record too: defaulted values on the link scale,
        centred where the likelihood puts a BART that has not split (prior predictive draws keep the values
        BART resolved on the scale of Y, and say so); on the expansion routes it also chooses the leaf
        proposal (:meth:`choose_leaf_proposal`)."""
        mu0, sigma_mu = op.leaf_prior(self.constant_fit(), self.leaf_scale)
        self.mu0, self.s2 = mu0, sigma_mu**2
        if self.route != "augment":
            self.choose_leaf_proposal(m)
        return self.mu0, self.s2

    def compile_record(self) -> fam.FamilyLik | Pseudo:
        """A small record of the type :meth:`sweep_input` returns, to compile the sweep for it (the record
        type sets the compiled code, not the family)."""
        if not self.corrected:
            return GaussianWorkingModel.compile_record()
        return fam.family_lik(observation.POISSON_LOG, np.ones(4), 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, np.zeros(4),
                              refine=not self.basis, laplace=None if not self.basis else False,
                              kept_exp=not self.basis)

    def sweep_input(self, f: np.ndarray, rng: np.random.Generator, threads: int = 1) -> fam.FamilyLik | Pseudo:
        """What one sweep runs on at the BART value ``f`` (class docstring): Gaussian pseudo-data (a
        residual record) on the augmentation route, else a likelihood record."""
        u, v, s, a, b = self._parts(f)
        f = np.asarray(f, dtype=np.float64)
        if self.route == "augment":
            z, w = np.empty(self.n), np.empty(self.n)
            augment_pseudo(rng, augmented(self.kind, u, v, s, a, b, self.n), f, z, w)
            return residuals(z, w, f, threads)
        return fam.family_lik(self.kind, u, v, s, a, b, self.mu0, self.s2, f, self.refine,
                              laplace=None if self.route == "loglink" else False, kept_exp=not self.basis)

    def constant_fit(self) -> float:
        """The BART value ``c`` (the same in every row) that maximises the likelihood at the current other
        values: where a BART that has not split yet should sit."""
        lik = self.record(np.zeros(self.n))
        return score_root(lambda c: fam.constant_score(lik, c))

    def choose_leaf_proposal(self, m: int) -> bool:
        """Whether to propose leaves from the Newton-refined ``q`` (routes/family_record.py), set on
        ``self.refine`` (the expansion route's choice; the log-link route always proposes from the
        leaves' exact conditional modes). Both are exact; refining costs two more passes over the rows
        per tree and pays when a working mean ``delta^2 / 2`` off (``delta`` ~ the leaf prior sd) is more
        than a leaf's posterior sd: ``s2 / 2 * sqrt(rows per leaf * curvature per row) > 1``, with
        ``n / 2`` rows per leaf and the curvature at the constant fit ``m * mu0``; and always for the
        asymmetric Laplace."""
        lik = self.record(np.zeros(self.n))
        info = fam.constant_score(lik, m * self.mu0)[1]
        # the asymmetric Laplace's working curvature (its Fisher information) says nothing of where a leaf's
        # conditional sits, whatever the prior: always refined (m = 20, q = 0.8: acceptance 0.50 against 0.29)
        self.refine = bool(self.kind == observation.ASYM_LAPLACE or 0.5 * self.s2 * np.sqrt(0.5 * info) > 1.0)
        return self.refine


def score_root(score_info, tol: float = 1e-10) -> float:
    """The root of a decreasing score (a concave 1-D log-likelihood's maximiser) by bracketing from 0
    and bisection; an overflowing score counts as past the root. Newton from 0 overshoots badly when
    the root is far away (log of a mean count of 200)."""

    def sign(c):
        score = score_info(c)[0]
        return 1.0 if np.isfinite(score) and score > 0 else (-1.0 if not np.isfinite(score) or score < 0 else 0.0)

    direction = sign(0.0)
    if direction == 0.0:
        return 0.0
    lo, step = 0.0, 1.0
    for _ in range(60):
        hi = lo + direction * step
        if sign(hi) != direction:
            break
        lo, step = hi, 2.0 * step
    else:
        return float(lo)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if sign(mid) == direction:
            lo = mid
        else:
            hi = mid
        if abs(hi - lo) < tol * (1.0 + abs(mid)):
            break
    return float(0.5 * (lo + hi))
