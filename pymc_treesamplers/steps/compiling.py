"""Compiling a step's kernels before sampling starts, and saying so when it is a real compile.

The first ``pm.sample`` on an empty numba cache compiles for tens of seconds (docs/reports/coldstart.md); without a
notice it sits silently at 0%. Each kind of sweep (sampler, likelihood record, warm start) is compiled once
per process, on a four-row chain, so PyMC's worker processes then load it from numba's on-disk cache.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from ..engine import Chain, threading_layer

_log = logging.getLogger("pymc_treesamplers")

_COMPILED: set[tuple] = set()


def compile_sweeps(step) -> None:
    """Compile (or load from numba's cache) the sweep of every output of ``step``, and the warm start's."""
    for out in step.outputs:
        _compile_sweep(step, out)
        if step.warm_start:
            _compile_sweep(step, out, warm=True)


def _compile_sweep(step, out, warm: bool = False) -> None:
    basis = out.chain.basis
    kind = (type(step), type(out.working), out.corrected, warm, None if basis is None else basis.mu0.shape[0])
    if kind in _COMPILED:
        return
    _COMPILED.add(kind)
    codes = np.array([[0, 1, 1, 2]], dtype=np.uint16)
    prior = out.chain.prior
    leaf = (prior.mu0, prior.s2) if basis is None else (basis.mu0, basis.s2)
    chain = Chain.new(codes, 1, alpha=prior.alpha, beta=prior.beta, mu0=leaf[0], s2=leaf[1],
                      new_scratch=lambda: step.new_scratch(codes, 1),
                      basis=None if basis is None else np.ones((4, basis.basis.shape[1])),
                      by_split=basis is not None and basis.by_split,
                      slab=1.0 if basis is None else math.exp(basis.log_slab))
    if not warm and not type(chain.workspace.scratch(codes)).__module__.startswith("pymc_treesamplers."):
        # a record type from outside the package (a test's deliberately wrong kernel) must not enter
        # the on-disk cache index of the sweep: loading that index would then need its module
        return
    lik = out.working.compile_record()
    cached = in_numba_cache(chain, lik, warm)
    t0 = time.perf_counter()
    if not cached:
        _log.info("pymc_treesamplers: compiling the %s kernels%s (first use with this numba cache; cached after; "
                  "numba threading layer %s)", "grow-from-root" if warm else kind[0].__name__,
                  f" for {kind[1].__name__}" if out.corrected else "",
                  threading_layer())
    chain.sweep(np.random.default_rng(0), lik, warm=warm)
    chain.fit(np.empty(4))
    chain.summary(np.zeros(1, dtype=np.int64))
    chain.encode(np.zeros((1, 2)))
    if not cached:
        _log.info("pymc_treesamplers: compiled in %.0f s", time.perf_counter() - t0)


def in_numba_cache(chain: Chain, lik, warm: bool) -> bool:
    """Whether the chain's sweep under ``lik`` is compiled (a test replaces it to see the notice)."""
    return chain.sweep_cached(lik, warm=warm)
