"""The registry of sampler configurations that every sampler test runs over (tests/test_matrix.py).

Each entry is a step class with options, and the run sizes of each kind of test: how strongly the
pseudo-data weigh (``w``: 1 is noise sd 1, 4 is sd 0.5), how many states are kept and how many
sweeps separate them (chosen so kept states are close to independent: at these settings the TV
distance to the exact answer sits at the level of iid multinomial noise), and the seed. ``None``:
that test is not run for the entry. A new sampler gets the whole suite from one entry here.

Calibration notes (thresholds are never widened; thinning is raised until a correct sampler sits at
noise level over several seeds, and the seed below is then fixed):

* grow/prune cannot move a split without pruning it first, so it runs at ``w = 1`` (at sd 0.5 the
  root-only tree it must pass through has posterior mass 2e-8 on the tiny data);
* PG resampling at every stage keeps the old tree often: thinning 20 at C = 10, 60 for the prior;
* CT: about 100 time units between kept states (``horizon = 1``, thinning 100);
* m = 2 (324 pairs of partitions): at thinning 10 every entry already sat at noise level (TV
  0.050-0.062 against 0.064 over seeds 1-3); the entries keep 2-5x that;
* pg-optimal-systematic runs its posterior test at ``w = 1``: at ``w = 4`` the optimal proposal
  keeps the old tree so often that thinning 50 was not enough (TV 0.018-0.033 over three seeds
  against 0.027; 0.015-0.021 at 100), as tests/test_pg.py notes for the optimal proposal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pymc_treesamplers as pmt


@dataclass(frozen=True)
class Sampler:
    """A sampler configuration and its test sizes (see the module docstring)."""

    name: str
    step: type
    options: dict
    posterior: tuple | None = None  # (w, kept draws, thinning, seed): kernel chain vs enumeration, m = 1
    prior: tuple | None = None  # (kept draws, thinning, seed): kernel chain with w = 0 vs the tree prior
    pair: tuple | None = None  # (kept draws, thinning, seed): m = 2 on five rows, w = 1, vs enumeration
    pm_sample: tuple | None = None  # (sigma, kept draws, thinning, seed, options): pm.sample vs enumeration
    # the step's own stats (beyond the shared ones) and what the mean of each over a fit must satisfy
    stats: dict[str, Callable[[float], bool]] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


SAMPLERS = [
    Sampler("growprune", pmt.GrowPruneStep, {}, posterior=(1.0, 20_000, 50, 11), prior=(20_000, 10, 5),
            pair=(10_000, 50, 1), pm_sample=(2.0, 2000, 15, 3, {})),
    Sampler("cgm", pmt.CGMStep, {}, posterior=(4.0, 20_000, 20, 11), prior=(20_000, 10, 5),
            pair=(10_000, 20, 1), pm_sample=(1.0, 2000, 4, 3, {})),
    # the twig moves (attach a prior subtree at a leaf, detach a whole subtree; and both aimed at a misfit row) in
    # each MH move set, at shares above any default so the chain leans on them
    Sampler("cgm-twigs", pmt.CGMStep, {"twigs": 0.2, "aimed_twigs": 0.2}, posterior=(4.0, 20_000, 20, 11),
            prior=(20_000, 10, 5), pair=(10_000, 20, 1)),
    # (under the flat likelihood of the prior test no row is misfit, so the aimed moves stay put: at thinning 10 its
    # grow/prune chain missed on seeds 5 and 1, TV 0.020 and 0.0195 against 0.0189; at 30, 0.011-0.016 on seeds 1-3, 5)
    Sampler("growprune-twigs", pmt.GrowPruneStep, {"twigs": 0.2, "aimed_twigs": 0.2}, posterior=(1.0, 20_000, 50, 11),
            prior=(20_000, 30, 5), pair=(10_000, 50, 1)),
    Sampler("pg", pmt.PGBARTStep, {}, posterior=(1.0, 10_000, 20, 10), prior=(5000, 60, 110),
            pair=(10_000, 20, 1), pm_sample=(1.0, 2000, 15, 5, {}),
            stats={"kept_old": lambda v: 0.0 <= v <= 1.0, "stages": lambda v: v >= 1.0}),
    Sampler("pg-optimal-systematic", pmt.PGBARTStep, {"num_particles": 5, "proposal": "optimal",
                                                     "resampling": "systematic", "ess_threshold": 0.5},
            posterior=(1.0, 10_000, 50, 1), prior=(5000, 100, 1), pair=(10_000, 20, 1)),
    # layer-wise expansion (the 2013 paper's): the old tree replays its construction a depth at a time
    Sampler("pg-layer", pmt.PGBARTStep, {"expansion": "layer"}, posterior=(1.0, 10_000, 20, 10),
            prior=(5000, 60, 110), pair=(10_000, 20, 1)),
    # particle independent Metropolis-Hastings after each conditional run: the evidence estimate of
    # the conditional run against a fresh one's
    Sampler("pg-pimh", pmt.PGBARTStep, {"num_particles": 5, "pimh": 2}, posterior=(1.0, 10_000, 10, 1),
            prior=(5000, 30, 1), pair=(10_000, 10, 1)),
    # many proposals per tree from local and reshaping moves (restructure, splice, reroute): the
    # tree-level tests are in tests/test_reshape.py
    Sampler("reshape", pmt.ReshapeStep, {"n_moves": 3}, posterior=(4.0, 10_000, 10, 1), prior=(10_000, 10, 1),
            pair=(10_000, 10, 1), pm_sample=(1.0, 2000, 4, 3, {}),
            stats={"moves_accept": lambda v: 0.0 < v <= 1.0}),
    Sampler("ct", pmt.CTBirthDeathStep, {"horizon": 1.0}, posterior=(1.0, 10_000, 100, 3), prior=(10_000, 10, 5),
            pair=(10_000, 50, 1), pm_sample=(1.0, 2000, 20, 6, {"horizon": 5.0}),
            stats={"jumps": lambda v: v > 0, "total_rate": lambda v: v > 0}),
    Sampler("ct-rotate-change", pmt.CTBirthDeathStep, {"horizon": 0.5, "rotate": True, "change": True},
            posterior=(4.0, 10_000, 20, 1), prior=(10_000, 10, 1), pair=(10_000, 20, 1)),
]

# one configuration per step class: the reproducibility, chain-independence and stats tests
MAIN = [s for s in SAMPLERS if s.pm_sample is not None]
