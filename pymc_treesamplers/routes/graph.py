"""Any elementwise likelihood, evaluated by its PyTensor graph: lowered to native code, else in Python.

The working model, the proposal and the Metropolis-Hastings correction are those of
:mod:`.family_record`; only the log-likelihood and its derivatives come from the model's graph instead of a
numba family. Two ways to evaluate it, chosen once per step (:class:`GraphWorkingModel`):

* **native** (the default): the graph lowered by :mod:`.native` (PyTensor's numba backend): the sweep calls
  its compiled code by address, without Python or the GIL;
* **Python**, when the graph cannot be lowered (an op PyTensor's numba backend runs in object mode, such as the
  trigamma in a Beta likelihood's curvature; a shared input that is not numeric): a Python host object
  evaluates the compiled graph, called from the compiled driver through ``numba.objmode`` (about 10 us per
  call plus the host's own evaluation). When only the derivatives cannot be lowered, the log-likelihood stays
  native. The step warns, with the reason, when it takes this path.

A host is registered under an integer key (:func:`register_host`) and provides
``derivs(f, grad, curv)``, filling the gradient of the log-likelihood in the BART value ``f`` and a
positive working curvature (rows with none get 0: the working model ignores them and the correction
accounts for them), and ``loglik(f) -> float``.

>>> class Flat:
...     def derivs(self, f, grad, curv):
...         grad[:] = 0.0
...         curv[:] = 0.0
...     def loglik(self, f):
...         return 0.0
>>> import numpy as np
>>> lik = graph_lik(register_host(Flat()), 0.0, np.zeros(3))
>>> lik.ll.tolist()
[0.0]
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import TYPE_CHECKING, NamedTuple

import numba
import numpy as np
import pytensor

from ..engine import (
    BasisPseudo,
    Pseudo,
    add_basis_fit,
    add_tree,
    draw_basis_leaves,
    register_basis_record,
    register_likelihood,
)
from .correction import CENTER_MAX, CENTER_STEPS, CENTER_TOL, metropolis, score_info, set_working_row
from .family import score_root
from .native import NativeGraph, graph_derivs, graph_loglik, lower

if TYPE_CHECKING:
    from .gaussian import GaussianWorkingModel

# The driver is nogil; its objmode calls into the host take the GIL for their duration, which is all
# numba's warning says (such a sweep cannot run in parallel with another thread's Python).
warnings.filterwarnings("ignore", message="Code running in object mode won't allow parallel execution",
                        category=numba.NumbaWarning)

_HOSTS: dict[int, object] = {}
_KEYS = itertools.count(1)


def register_host(host, key: int | None = None) -> int:
    """Make ``host`` reachable from compiled code under ``key`` (a new key if None); returns the key."""
    key = next(_KEYS) if key is None else int(key)
    _HOSTS[key] = host
    return key


def _host_derivs(key, f, grad, curv):
    _HOSTS[key].derivs(f, grad, curv)


def _host_loglik(key, f, out):
    out[0] = _HOSTS[key].loglik(f)


class GraphLik(NamedTuple):
    """Likelihood record of a likelihood evaluated by its graph: ``fns`` how to call its lowered functions
    (:attr:`.native.NativeGraph.fns`; a zero address: evaluate through the host ``key`` instead) and ``theta`` their
    shared inputs (:mod:`.native`); ``mu0``, ``s2``, ``f``, ``g``, ``z``, ``r``, ``w``, ``counts`` as in
    :class:`.family_record.FamilyLik`; ``x`` (n,) a point to evaluate at; ``ll`` (1,) the log-likelihood at
    ``f``; ``ll_new`` (1,) at the proposal."""

    key: np.int64
    fns: np.ndarray
    theta: np.ndarray
    mu0: float
    s2: float
    f: np.ndarray
    g: np.ndarray
    z: np.ndarray
    r: np.ndarray
    w: np.ndarray
    x: np.ndarray
    ll: np.ndarray
    ll_new: np.ndarray
    counts: np.ndarray


def graph_lik(key: int, mu0: float, f, s2: float = 1.0, native: NativeGraph | None = None) -> GraphLik:
    """A :class:`GraphLik` at the BART value ``f`` (its log-likelihood evaluated once here); ``mu0``, ``s2``:
    the leaf prior; ``native``: the lowered graph, else the host ``key`` evaluates it."""
    f = np.array(f, dtype=np.float64)
    n = f.shape[0]
    fns = native.fns if native is not None else np.zeros(4, dtype=np.int64)
    theta = native.theta() if native is not None else np.zeros(0)
    lik = GraphLik(np.int64(key), fns, theta, float(mu0), float(s2), f,
                   np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(1), np.zeros(1),
                   np.zeros(2, dtype=np.int64))
    if native is None:
        _host_loglik(key, f, lik.ll)
    else:
        lik.ll[0] = graph_loglik(fns, f, theta)
    return lik


@numba.njit(cache=True)
def _expand(lik):
    # expanded at the other trees' fit plus the constant that fits best there, as family_record.py's
    # _centred_rows: one host call per Newton step, one when the leaf prior mean is already good; the tree's
    # fit is in lik.g
    g = lik.g
    prec0 = 1.0 / lik.s2
    sd = math.sqrt(lik.s2)
    c = lik.mu0
    for it in range(CENTER_STEPS):
        for i in range(g.shape[0]):
            lik.x[i] = lik.f[i] - g[i] + c
        # z holds the gradient until it is turned into the working response
        if lik.fns[2] != 0:  # derivatives lowered
            graph_derivs(lik.fns, lik.x, lik.theta, lik.z, lik.w)
        else:
            with numba.objmode():
                _host_derivs(lik.key, lik.x, lik.z, lik.w)
        for i in range(g.shape[0]):
            set_working_row(lik, i, c, lik.z[i], lik.w[i])
        score, info = score_info(lik.w, lik.z, c)
        step = (score - (c - lik.mu0) * prec0) / (info + prec0)
        if not (abs(step) >= CENTER_TOL * sd) or it == CENTER_STEPS - 1:
            break
        c += max(-CENTER_MAX * sd, min(CENTER_MAX * sd, step))


@numba.njit(cache=True)
def _pseudo(lik, j, tree):
    lik.g[:] = 0.0
    add_tree(tree, lik.g, 1.0)
    _expand(lik)
    return Pseudo(lik.r, lik.w, None)


@numba.njit(cache=True)
def _accept_start(lik):
    """The working part of the log acceptance ratio, and ``x`` set to the other trees' fit (the proposal's is
    added to it from its leaves, not as z - r: family_record.py's _accept says why)."""
    work = 0.0
    for i in range(lik.f.shape[0]):
        d_old = lik.z[i] - lik.g[i]
        lik.x[i] = lik.f[i] - lik.g[i]
        work += 0.5 * lik.w[i] * (lik.r[i] * lik.r[i] - d_old * d_old)
    return work


@numba.njit(cache=True)
def _accept_end(rng, lik, work):
    """Accept the proposal whose whole fit is in ``x``, by the likelihood there and ``work``."""
    if lik.fns[0] != 0:
        lik.ll_new[0] = graph_loglik(lik.fns, lik.x, lik.theta)
    else:
        with numba.objmode():
            _host_loglik(lik.key, lik.x, lik.ll_new)
    log_ratio = lik.ll_new[0] - lik.ll[0] + work
    if not metropolis(rng, lik.counts, log_ratio):
        return False
    lik.ll[0] = lik.ll_new[0]
    for i in range(lik.f.shape[0]):
        lik.f[i] = lik.x[i]
    return True


@numba.njit(cache=True)
def _accept(rng, lik, j, old, new, pseudo):
    work = _accept_start(lik)
    add_tree(new, lik.x, 1.0)
    return _accept_end(rng, lik, work)


register_likelihood(GraphLik, _pseudo, _accept)


class BasisGraphLik(NamedTuple):
    """A :class:`GraphLik` for a tree whose leaves hold coefficient vectors on a basis: the same working model and
    correction, the tree's fit read from its coefficients and the chain's ``leaves`` record (the basis and the
    coefficients' prior, whose residual and weights are the graph's working ones)."""

    graph: GraphLik
    leaves: BasisPseudo


@numba.njit(cache=True)
def _basis_pseudo(lik, j, tree):
    gl = lik.graph
    gl.g[:] = 0.0
    add_basis_fit(tree, lik.leaves, gl.g, 1.0)
    _expand(gl)
    b = lik.leaves
    return BasisPseudo(gl.r, gl.w, b.basis, b.mu0, b.s2, b.threads, b.chol, b.vec, b.stats, b.by_split, b.log_slab,
                       b.log_spike)


@numba.njit(cache=True)
def _basis_accept(rng, lik, j, old, new, pseudo):
    work = _accept_start(lik.graph)
    add_basis_fit(new, lik.leaves, lik.graph.x, 1.0)
    return _accept_end(rng, lik.graph, work)


@numba.njit(cache=True)
def _basis_leaves(rng, lik, t, prior, pseudo):
    draw_basis_leaves(rng, t, prior, pseudo)


register_likelihood(BasisGraphLik, _basis_pseudo, _basis_accept, _basis_leaves)
register_basis_record(GraphLik, BasisGraphLik)


class GraphWorkingModel:
    """The likelihood record of a BART variable under any elementwise likelihood, evaluated by the
    PyTensor graph of its log-likelihood: lowered to native code, else in Python with a warning that says
    why (module docstring). ``native``: the lowered graph, or None; ``python_reason``: why not."""

    def __init__(self, gaussian: GaussianWorkingModel, center: float, reason: str, compile_kwargs=None):
        self.gaussian = gaussian
        self.mu0, self.s2 = float(center), 1.0
        self.family = f"PyTensor graph of {gaussian.observed_names}"
        self.reason = reason
        self._key = None
        self._lower(warn=True)
        kwargs = compile_kwargs or {}
        if (self.native is None or self.native.derivs_reason is not None) and "mode" not in kwargs \
                and pytensor.config.cxx:
            # what stays in Python is evaluated at every tree: PyTensor's default numba backend runs ops it cannot
            # compile (polygamma in a Gamma likelihood's Hessian) element by element in Python, 40x slower than
            # its C backend on the gallery's Gamma model; use C when a compiler is there
            gaussian.compile({**kwargs, "mode": "CVM"})

    def _lower(self, warn: bool) -> None:
        inputs, outputs = self.gaussian._graph
        native = lower(inputs, outputs, self.gaussian.observed_names)
        self.native, self.python_reason = (native, None) if isinstance(native, NativeGraph) else (None, native)
        if not warn:
            return
        if self.native is None:
            warnings.warn(f"the likelihood {self.gaussian.observed_names} is evaluated in Python at every tree "
                          f"update, several times slower than natively: {self.python_reason}", UserWarning,
                          stacklevel=4)
        elif self.native.derivs_reason is not None:
            warnings.warn(f"the derivatives of the likelihood {self.gaussian.observed_names} are evaluated in Python "
                          f"at every tree update (its log-likelihood natively): {self.native.derivs_reason}",
                          UserWarning, stacklevel=4)

    def __getstate__(self):
        # host keys and native code are per process: a worker registers or lowers its own
        return {**self.__dict__, "_key": None, "native": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.python_reason is None:
            self._lower(warn=False)

    def constant_fit(self) -> float:
        """As :meth:`FamilyWorkingModel.constant_fit`, from the graph's derivatives."""
        n = self.gaussian.n
        grad, curv = np.empty(n), np.empty(n)

        def score_info(c):
            self.gaussian.derivs(np.full(n, c), grad, curv)
            return grad.sum(), curv.sum()

        return score_root(score_info)

    corrected = True
    leaf_scale = None  # unknown: the leaf prior keeps its k

    def leaf_prior(self, op, m: int) -> tuple[float, float]:
        """As :meth:`FamilyWorkingModel.leaf_prior` (no leaf proposal to choose)."""
        mu0, sigma_mu = op.leaf_prior(self.constant_fit(), self.leaf_scale)
        self.mu0, self.s2 = mu0, sigma_mu**2
        return self.mu0, self.s2

    @staticmethod
    def compile_record() -> GraphLik:
        """A small record of the type :meth:`sweep_input` returns, to compile the sweep for it."""
        return graph_lik(register_host(_FlatHost(), key=0), 0.0, np.zeros(4))

    def record(self, f: np.ndarray) -> GraphLik:
        """The likelihood record at the BART value ``f`` (the shared inputs' values as they are now)."""
        if self._key is None:
            self._key = register_host(self.gaussian)
        return graph_lik(self._key, self.mu0, f, self.s2, self.native)

    def sweep_input(self, f: np.ndarray, rng: np.random.Generator, threads: int = 1) -> GraphLik:
        """:meth:`record` (``rng`` and ``threads`` unused)."""
        return self.record(f)


class _FlatHost:
    """A likelihood host without information, for compiling the graph record's code."""

    def derivs(self, f, grad, curv):
        grad[:] = 0.0
        curv[:] = 0.0

    def loglik(self, f):
        return 0.0
