"""Exact data augmentation: latent variables given which a likelihood is Gaussian in the BART value.

For these families a tree step first draws one latent variable per row (per trial) from its exact
conditional given the current BART value, then updates every tree on the Gaussian pseudo-data the
latents define, with the exact Gaussian kernels: no working model, no correction, nothing that can
be far from where the leaves sit. It is a Gibbs step on (trees, latents); the latents are drawn
afresh at every draw and never stored, so the trees' update leaves their posterior exactly invariant.

=============================  =================================================  ============================
family (``eta = a + b f``)     latent given ``eta``                               Gaussian pseudo-data in eta
=============================  =================================================  ============================
Bernoulli/Binomial, logit      ``omega ~ PG(N, eta)`` (Polson, Scott & Windle     ``z = (y - N/2) / omega``,
(``u = y``, ``v = N - y``)     2013: a sum of ``N`` draws of ``PG(1, eta)``)      weight ``omega``
Bernoulli/Binomial, probit     one utility per trial ``N(eta, 1)``, truncated to  ``z`` = their mean,
                               ``> 0`` for a success, ``< 0`` for a failure       weight ``N``
                               (Albert & Chib 1993)
Student-t (``u = y``,          ``lambda ~ Gamma((nu + 1) / 2,                     ``z = y``,
``v = nu``, ``s = sigma``)     (nu + (y - eta)^2 / sigma^2) / 2)``                weight ``lambda / sigma^2``
=============================  =================================================  ============================

The negative binomial has an augmentation too (a Poisson whose mean carries a gamma latent), but with
large counts the latents pin the trees down: on the bike counts, m = 50, its chains had half the ESS per
second of f of the centred expansion (docs/reports/routes.md), which is its route.

Pseudo-data in ``f`` are ``(z - a) / b`` with weight ``b^2`` times the weight in ``eta``.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> draws = np.array([pg1(rng, 1.5) for _ in range(20000)])
>>> bool(abs(draws.mean() - np.tanh(0.75) / 3.0) < 0.003)   # E PG(1, z) = tanh(z / 2) / (2 z)
True
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from .observation import LOGIT2, PROBIT2, STUDENT_T, column, log_ndtr

_TRUNC = 0.64  # where the two pieces of Devroye's proposal for J*(1, c) meet
_PI2_8 = math.pi * math.pi / 8.0


@numba.njit(cache=True, nogil=True)
def _series_term(n, x):
    """``a_n(x)``, the n-th term of the alternating series of J*(1)'s density (piecewise at ``_TRUNC``)."""
    k = (n + 0.5) * math.pi
    if x > _TRUNC:
        return k * math.exp(-0.5 * k * k * x)
    if x <= 0.0:
        return 0.0
    return math.exp(math.log(k) + 1.5 * math.log(2.0 / (math.pi * x)) - 2.0 * (n + 0.5) * (n + 0.5) / x)


@numba.njit(cache=True, nogil=True)
def _truncated_ig(rng, c):
    """An inverse Gaussian ``IG(1 / c, 1)`` draw truncated to ``(0, _TRUNC)``."""
    t = _TRUNC
    if c < 1.0 / t:
        # mean beyond t: 1 / chi^2_1 truncated to (0, t) (a normal truncated to |Z| > 1 / sqrt(t), by
        # an exponential proposal), kept with probability exp(-c^2 x / 2), the IG's tilt
        while True:
            e1 = rng.standard_exponential()
            e2 = rng.standard_exponential()
            while e1 * e1 > 2.0 * e2 / t:
                e1 = rng.standard_exponential()
                e2 = rng.standard_exponential()
            x = t / ((1.0 + t * e1) * (1.0 + t * e1))
            if rng.random() <= math.exp(-0.5 * c * c * x):
                return x
    mu = 1.0 / c
    while True:  # the IG itself (Michael, Schucany & Haas 1976) until it falls below t
        y = rng.standard_normal()
        y *= y
        my = mu * y
        x = mu + 0.5 * mu * my - 0.5 * mu * math.sqrt(4.0 * my + my * my)
        if rng.random() > mu / (mu + x):
            x = mu * mu / x
        if x < t:
            return x


@numba.njit(cache=True, nogil=True)
def pg1(rng, z):
    """One draw of the Polya-Gamma ``PG(1, z)``: ``J*(1, |z| / 2) / 4`` by Devroye's alternating-series
    rejection sampler (Polson, Scott & Windle 2013, section 4), exact."""
    c = 0.5 * abs(z)
    K = _PI2_8 + 0.5 * c * c
    t = _TRUNC
    # mixture weight of the right (exponential) piece: p / (p + q), with q / p formed in logs (a plain
    # exp(x0 + c) Phi(a) is inf times 0 beyond |z| ~ 94)
    b = (t * c - 1.0) / math.sqrt(t)
    a = -(t * c + 1.0) / math.sqrt(t)
    x0 = math.log(K) + K * t
    q_over_p = 4.0 / math.pi * (math.exp(x0 - c + log_ndtr(b)) + math.exp(x0 + c + log_ndtr(a)))
    p_right = 1.0 / (1.0 + q_over_p)
    while True:
        if rng.random() < p_right:
            x = t + rng.standard_exponential() / K
        else:
            x = _truncated_ig(rng, c)
        s = _series_term(0, x)
        y = rng.random() * s
        n = 0
        while True:
            n += 1
            if n % 2 == 1:
                s -= _series_term(n, x)
                if y <= s:
                    return 0.25 * x
            else:
                s += _series_term(n, x)
                if y > s:
                    break


@numba.njit(cache=True, nogil=True)
def truncnorm_above(rng, lo):
    """A standard normal draw conditioned on ``Z > lo`` (plain rejection for ``lo < 0.5``, else
    Robert's (1995) translated-exponential proposal), exact."""
    if lo < 0.5:
        while True:
            z = rng.standard_normal()
            if z > lo:
                return z
    lam = 0.5 * (lo + math.sqrt(lo * lo + 4.0))
    while True:
        z = lo + rng.standard_exponential() / lam
        d = z - lam
        if rng.random() <= math.exp(-0.5 * d * d):
            return z


class Augmented(NamedTuple):
    """A family with an exact augmentation (module docstring): ``kind`` (``LOGIT2``, ``PROBIT2`` or
    ``STUDENT_T``), per-row family data ``u, v, s`` and link ``eta = a + b f``; ``trials``: the integer
    ``u + v`` of a binary family (unused for Student-t)."""

    kind: np.int64
    u: np.ndarray
    v: np.ndarray
    s: np.ndarray
    a: np.ndarray
    b: np.ndarray
    trials: np.ndarray


def augmented(kind, u, v, s, a, b, n: int) -> Augmented:
    """An :class:`Augmented` over ``n`` rows (scalars broadcast).

    >>> augmented(LOGIT2, [1.0, 0.0], [0.0, 1.0], 0.0, 0.0, 1.0, 2).trials.tolist()
    [1, 1]
    """

    u, v = column(u, n), column(v, n)
    trials = np.rint(u + v).astype(np.int64) if kind != STUDENT_T else np.zeros(n, dtype=np.int64)
    return Augmented(np.int64(kind), u, v, column(s, n), column(a, n), column(b, n), trials)


def can_augment(kind, u, v) -> bool:
    """Whether :func:`augment_pseudo` applies: Student-t, or a binary family with a whole number of
    trials in every row (not a negative binomial, whose ``LOGIT2`` form has ``alpha`` trials)."""
    if kind == STUDENT_T:
        return True
    if kind not in (LOGIT2, PROBIT2):
        return False
    u, v = np.asarray(u, dtype=float), np.asarray(v, dtype=float)
    whole = [u + v] + ([u] if kind == PROBIT2 else [])  # probit draws one utility per success and failure
    return all(bool(np.all(np.isfinite(x)) and np.all(x >= 0) and np.all(x == np.rint(x))) for x in whole)


@numba.njit(cache=True, nogil=True)
def augment_pseudo(rng, aug, f, z, w):
    """Draw every row's latents given the BART value ``f`` and write the Gaussian pseudo-data in ``f``
    they define: response ``z`` and weight ``w`` (0 for a row without information)."""
    for i in range(f.shape[0]):
        b = aug.b[i]
        eta = aug.a[i] + b * f[i]
        if not (abs(eta) < 1e10):  # also NaN: the samplers below would not return
            raise ValueError("the linear predictor of a row is not finite (or beyond 1e10): check the model's "
                             "other terms and the BART's leaf prior")
        if aug.kind == LOGIT2:
            n = aug.trials[i]
            omega = 0.0
            for _ in range(n):
                omega += pg1(rng, eta)
            if n == 0 or b == 0.0 or not omega > 0.0:
                z[i], w[i] = f[i], 0.0
                continue
            zeta = 0.5 * (aug.u[i] - aug.v[i]) / omega
            weta = omega
        elif aug.kind == PROBIT2:
            n = aug.trials[i]
            if n == 0 or b == 0.0:
                z[i], w[i] = f[i], 0.0
                continue
            total = 0.0
            ones = np.int64(aug.u[i] + 0.5)
            for t in range(n):
                if t < ones:
                    total += eta + truncnorm_above(rng, -eta)
                else:
                    total += eta - truncnorm_above(rng, eta)
            zeta = total / n
            weta = float(n)
        else:  # STUDENT_T: u = y, v = nu, s = sigma
            if b == 0.0:
                z[i], w[i] = f[i], 0.0
                continue
            nu = aug.v[i]
            s2 = aug.s[i] * aug.s[i]
            res = aug.u[i] - eta
            lam = rng.standard_gamma(0.5 * (nu + 1.0)) / (0.5 * (nu + res * res / s2))
            zeta = aug.u[i]
            weta = lam / s2
        z[i] = (zeta - aug.a[i]) / b
        w[i] = b * b * weta
