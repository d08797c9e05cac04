"""The forest's level against group intercepts: an exact Gibbs move along the line the likelihood cannot see.

Where a model's linear predictor is ``eta_i = F(x_i) + a u_g(i) + ...`` (F the BART value, ``u`` one entry per
group, every row in one group, each ``u_g ~ N(0, s^2)`` a priori), the likelihood depends on F and u only through
``F + a u``: moving every leaf of every tree by ``d / m`` and every ``u_g`` by ``-d / a`` changes no row's
``eta``. The tree step moves the trees given ``u`` and NUTS moves ``u`` given the trees, each precisely, so the
split of the level between them (the forest's level against the group intercepts' mean) random-walks for
thousands of draws. This move draws ``d`` from the posterior along that line (a translation: unit Jacobian, so
the conditional of ``d`` is the posterior restricted to the line, Liu & Sabatti 2000), which is the prior there:

    log p(d) = - sum_leaves (v + d/m - mu0)^2 / (2 s2) - sum_g (u_g - d/a)^2 / (2 s^2) + const,

a Normal with precision ``A = L / (m^2 s2) + G / (a^2 s^2)`` and mean ``(sum_g u_g / (a s^2) - S / (m s2)) / A``,
``L`` the number of leaves and ``S`` the sum of their values less ``mu0``. The tree step runs it after its sweep
(:meth:`~pymc_treesamplers.steps.base.BaseTreeStep.step`) for each group term in turn, changing the BART value
and the group term's value in the point together. bambi's non-centred group intercepts (``u = sigma_g z``,
``z ~ N(0, 1)``) are the case ``a = sigma_g``, ``s = 1`` on ``z``; centred ones ``a = 1``, ``s = sigma_g``.

>>> # step.level = LevelShift([GroupLevel("1|g_offset", sigma=...)])  (pymc_treesamplers.bambi sets it)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["GroupLevel", "LevelShift", "level_draw"]


@dataclass
class GroupLevel:
    """One group term along the line: the name of its vector in the point (one entry per group) and ``sigma``, the
    group scale (a function of the point, or a number). ``noncentred``: the vector is ``z ~ N(0, 1)`` and the rows
    get ``sigma z_g`` (``a = sigma``, ``s = 1``); else it is ``u ~ N(0, sigma^2)`` and the rows get ``u_g`` (``a =
    1``, ``s = sigma``)."""

    name: str
    sigma: Callable[[dict], float] | float
    noncentred: bool = True

    def coef_scale(self, point: dict) -> tuple[float, float]:
        """``(a, s)`` at ``point``."""
        sigma = float(self.sigma(point) if callable(self.sigma) else self.sigma)
        return (sigma, 1.0) if self.noncentred else (1.0, sigma)


def level_draw(rng: np.random.Generator, leaves: int, excess: float, m: int, s2: float, u: np.ndarray, a: float,
               s: float) -> float:
    """A draw of the shift ``d`` of the forest's level from its conditional (the module's docstring): ``leaves``
    and ``excess`` are ``L`` and ``S``, ``(m, s2)`` the trees and the leaf prior's variance, ``u`` the group
    term's vector, ``a`` and ``s`` its coefficient and prior scale.

    >>> d = level_draw(np.random.default_rng(0), 10, 0.0, 10, 1.0, np.zeros(3), 1.0, 1.0)
    >>> isinstance(d, float)
    True
    """
    precision = leaves / (m * m * s2) + u.size / (a * a * s * s)
    mean = (u.sum() / (a * s * s) - excess / (m * s2)) / precision
    return float(mean + rng.standard_normal() / np.sqrt(precision))


class LevelShift:
    """The move for each group term in turn, on a tree step's one output of constant leaves."""

    def __init__(self, groups: list[GroupLevel]):
        self.groups = list(groups)

    def check(self, step) -> None:
        """Refuse a step whose BART value is not one output of constant leaves on this machine's sweeper."""
        from .cpu import CPUSweeper

        if step.k != 1 or step.outputs[0].term is not None or step.lines is not None:
            raise ValueError("the level shift moves one output of constant leaves (not several outputs, a leaf "
                             "basis or line leaves)")
        if not isinstance(step.sweeper, CPUSweeper):
            raise ValueError("the level shift runs with the CPU sweeper (backend='cpu')")

    def shift(self, step, point: dict, rng: np.random.Generator) -> dict:
        """The point after the move, the step's chain and fit moved with it."""
        chain = step.outputs[0].chain
        point = dict(point)
        for group in self.groups:
            u = np.asarray(point[group.name], dtype=np.float64)
            a, s = group.coef_scale(point)
            leaves, excess = chain.level()
            d = level_draw(rng, leaves, excess, chain.m, chain.prior.s2, u, a, s)
            chain.shift_level(d)
            point[group.name] = (u - d / a).astype(np.asarray(point[group.name]).dtype)
        step.outputs[0].refresh(step.f[0], step.threads)  # the shifted trees' own sum: F + d, to rounding
        point[step.value_name] = step.f.reshape(np.shape(point[step.value_name])).astype(
            np.asarray(point[step.value_name]).dtype)
        return point
