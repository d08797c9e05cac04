"""Particle Gibbs tree step (conditional SMC of Lakshminarayanan, Roy & Teh 2015)."""

from __future__ import annotations

import numpy as np

from ..engine import (
    EXPANSION_LAYER,
    EXPANSION_NODE,
    PROPOSAL_EMPIRICAL,
    PROPOSAL_OPTIMAL,
    PROPOSAL_PRIOR,
    RESAMPLE_MULTINOMIAL,
    RESAMPLE_SYSTEMATIC,
    SMCOptions,
    new_pg_scratch,
)
from .base import BaseTreeStep
from .options import tree_step

_PROPOSALS = {"prior": PROPOSAL_PRIOR, "empirical": PROPOSAL_EMPIRICAL, "optimal": PROPOSAL_OPTIMAL}
_RESAMPLING = {"multinomial": RESAMPLE_MULTINOMIAL, "systematic": RESAMPLE_SYSTEMATIC}
_EXPANSIONS = {"node": EXPANSION_NODE, "layer": EXPANSION_LAYER}


@tree_step
class PGBARTStep(BaseTreeStep):
    """Particle Gibbs: each tree is redrawn whole by a conditional SMC clamped to the old tree.

    Parameters
    ----------
    vars : list of one BART variable, optional
        Defaults to the model's BART variable.
    num_particles : int, default 10
        Particles C (>= 2), the old tree included.
    resampling : {"multinomial", "systematic"}, default "multinomial"
        Resampling scheme (conditional: the old tree is never resampled away).
    ess_threshold : float in [0, 1], default 1.0
        Resample when the effective sample size is at most ``ess_threshold * C``; 1.0, the
        paper's setting, resamples at every stage, 0.0 never (conditional importance sampling).
    proposal : {"prior", "empirical", "optimal"}, default "prior"
        How particles grow: the tree prior; the prior with cuts uniform over the gaps between the
        node's data; or the one-step optimal proposal (prior times likelihood ratio).
    max_stages : int, default 5000
        An SMC that would need more stages raises an error rather than truncate the tree prior.
    expansion : {"node", "layer"}, default "node"
        Each stage expands one node per particle, breadth-first (Algorithm 2 of the PG-BART paper),
        or a whole depth (the 2013 paper's layer-wise expansion); the old tree replays its own path
        either way.
    pimh : int, default 0
        Particle independent Metropolis-Hastings moves per tree after the conditional run: each
        runs a fresh unconditional SMC (same options) and takes a tree from it with probability
        ``min(1, Z'/Z)`` of the two runs' marginal-likelihood estimates. Unlike the conditional
        run, a fresh run owes nothing to the old tree, so a chain can leave a poor tree whole.
    threads, route, warm_start, sigma_every, model, initial_point, compile_kwargs, blocked, rng : keyword options
        The options every tree step shares (:class:`~pymc_treesamplers.steps.options.TreeStepOptions`).

    Notes
    -----
    Extra per-draw stats: ``<var>_kept_old`` (share of trees where the old tree was kept) and
    ``<var>_stages`` (mean SMC stages per tree) and, with ``pimh``, ``<var>_pimh_accept`` (share
    of PIMH moves accepted).

    Examples
    --------
    >>> # idata = pm.sample(step=[pmt.PGBARTStep([mu], num_particles=10)])
    """

    name = "pgbart"
    _extra_stats = {"kept_old": np.float64, "stages": np.float64}

    def __init__(
        self,
        vars=None,
        *,
        num_particles: int = 10,
        resampling: str = "multinomial",
        ess_threshold: float = 1.0,
        proposal: str = "prior",
        max_stages: int = 5000,
        expansion: str = "node",
        pimh: int = 0,
        **shared,
    ):
        c = num_particles
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 2:
            raise ValueError(f"num_particles must be an integer >= 2, got {c!r}")
        if resampling not in _RESAMPLING:
            raise ValueError(f"resampling must be one of {sorted(_RESAMPLING)}, got {resampling!r}")
        if proposal not in _PROPOSALS:
            raise ValueError(f"proposal must be one of {sorted(_PROPOSALS)}, got {proposal!r}")
        ess = ess_threshold
        if isinstance(ess, bool) or not isinstance(ess, (int, float, np.floating)) or not 0.0 <= float(ess) <= 1.0:
            raise ValueError(f"ess_threshold must lie in [0, 1], got {ess!r}")
        if expansion not in _EXPANSIONS:
            raise ValueError(f"expansion must be one of {sorted(_EXPANSIONS)}, got {expansion!r}")
        stages = max_stages
        if isinstance(stages, bool) or not isinstance(stages, (int, np.integer)) or stages < 1:
            raise ValueError(f"max_stages must be an integer >= 1, got {stages!r}")
        if isinstance(pimh, bool) or not isinstance(pimh, (int, np.integer)) or pimh < 0:
            raise ValueError(f"pimh must be an integer >= 0, got {pimh!r}")
        self.num_particles = int(c)
        self.pimh = int(pimh)
        if self.pimh:
            self._extra_stats = {**self._extra_stats, "pimh_accept": np.float64}
        self.opts = SMCOptions(int(c), _PROPOSALS[proposal], _RESAMPLING[resampling], float(ess), int(stages),
                               _EXPANSIONS[expansion])
        super().__init__(vars, **shared)

    def new_scratch(self, codes, m):
        return new_pg_scratch(self.opts, codes, m, self.pimh, width=self.leaf_width)

    def sampler_stats(self, sampler) -> dict:
        out = {"kept_old": float(sampler.kept.mean()), "stages": float(sampler.stages.mean())}
        if self.pimh:
            out["pimh_accept"] = float(sampler.accepted.mean()) / self.pimh
        return out

    def _failure(self, j: int) -> str:
        return (
            f"PGBARTStep: an SMC for tree {j} needed more than max_stages={self.opts.max_stages} stages; "
            "raise max_stages (it must exceed the node count of every tree)"
        )


class PGBART(PGBARTStep):
    """pymc-bart's name and call for the Particle Gibbs step: ``PGBART(vars=None, num_particles=10,
    batch=(0.1, 0.1), model=None, initial_point=None, compile_kwargs=None, blocked=None, rng=None)``.

    It is :class:`PGBARTStep` (every option of it works too, by keyword). One difference, said when it
    matters: pymc-bart updates a share ``batch`` of the trees at each step (10% by default); a step here
    updates all ``m`` trees (a full sweep), so ``batch`` is accepted and, when given, a warning says it
    has no effect. The automatic step for a BART variable stays :class:`~pymc_treesamplers.CGMStep`.

    >>> # idata = pm.sample(step=[pmt.PGBART([mu], num_particles=10)])
    """

    __signature__ = None  # its own, not the one tree_step gave PGBARTStep

    def __init__(self, vars=None, num_particles: int = 10, batch=None, model=None, initial_point=None,
                 compile_kwargs=None, blocked=False, rng=None, **kwargs):
        if batch is not None:
            import warnings

            warnings.warn(f"PGBART(batch={batch!r}): every step here updates all m trees (a full Gibbs sweep), so "
                          "batch has no effect; fewer trees per step would only make each step cheaper and "
                          "the chain slower to move", UserWarning, stacklevel=2)
        super().__init__(vars, num_particles=num_particles, model=model, initial_point=initial_point,
                         compile_kwargs=compile_kwargs, blocked=False if blocked is None else blocked, rng=rng,
                         **kwargs)
