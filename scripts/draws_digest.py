"""A digest of every sampler's draws from fixed seeds: run it before and after a refactor that must not
change any chain, and compare the two outputs line by line.

Each line is ``name sha1``: the sha1 of a small fit's draws (the BART values, the stored forests and the
sampler stats of one chain of ``pm.sample``; the kept forests of the estimators). The fits cover every
sampler of tests/helpers/samplers.py, the routes (exact Gaussian, augmentation, log-link leaves, the
expansion, the compiled graph), several outputs, a Dirichlet split prior, missing values, warm starts, the
GPU sweep's CPU twin and the estimators (GFRRegressor, SMCTreeRegressor, the MPI prototype).

    python scripts/draws_digest.py > before.txt   # on the old commit
    python scripts/draws_digest.py > after.txt    # on the new one
    diff before.txt after.txt
"""

from __future__ import annotations

import hashlib
import logging
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

logging.getLogger("pymc").setLevel(logging.ERROR)
logging.getLogger("pymc_treesamplers").setLevel(logging.ERROR)
warnings.filterwarnings("ignore")


def _digest(*parts) -> str:
    h = hashlib.sha1()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(repr(part).encode())
    return h.hexdigest()


def _data(n=40, p=3, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p))
    y = np.sin(4 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=n)
    if nan:
        X[rng.choice(n, n // 5, replace=False), 2] = np.nan
    return X, y


def _fit_digest(idata) -> str:
    post, stats = idata.posterior, idata.sample_stats
    parts = [np.asarray(post[v].values, dtype=float) for v in sorted(post.data_vars)]
    for name in sorted(stats.data_vars):
        values = stats[name].values
        parts.append(repr(values.tolist()) if values.dtype.kind in "OUSb" else np.asarray(values, dtype=float))
    return _digest(*parts)


def _sample(build, step, seed=1, tune=5, draws=10):
    import pymc as pm

    with build() as model:
        steps = step(model)
        idata = pm.sample(tune=tune, draws=draws, chains=1, cores=1, random_seed=seed, step=steps,
                          progressbar=False, compute_convergence_checks=False)
    return _fit_digest(idata)


def _gaussian(nan=False, outputs=1, split_prior=None):
    import pymc as pm

    import pymc_treesamplers as pmt

    X, y = _data(nan=nan)

    def build():
        model = pm.Model()
        with model:
            kw = {"split_prior": split_prior} if split_prior is not None else {}
            if outputs == 1:
                mu = pmt.BART("mu", X, y, m=5, **kw)
                pm.Normal("y", mu, 0.5, observed=y)
            else:
                mu = pmt.BART("mu", X, y, m=5, shape=(outputs, len(y)), **kw)
                pm.Normal("y", mu.sum(axis=0), 0.5, observed=y)
        return model

    return build


def _family(kind):
    import pymc as pm

    import pymc_treesamplers as pmt

    X, y = _data()

    def build():
        model = pm.Model()
        with model:
            if kind == "bernoulli":
                yy = (y > np.median(y)).astype(int)
                mu = pmt.BART("mu", X, yy, m=5)
                pm.Bernoulli("y", logit_p=mu, observed=yy)
            elif kind == "poisson":
                yy = np.random.default_rng(3).poisson(np.exp(0.5 * y))
                mu = pmt.BART("mu", X, yy, m=5)
                pm.Poisson("y", pm.math.exp(mu), observed=yy)
            elif kind == "graph":  # a likelihood no family covers: the compiled graph's route
                yy = np.random.default_rng(3).normal(y, 0.3)
                mu = pmt.BART("mu", X, yy, m=5)
                pm.Normal("y", pm.math.sin(mu), 0.3, observed=yy)
            else:
                raise ValueError(kind)
        return model

    return build


def cases():
    """(name, function returning the digest) for every fit."""
    import pymc as pm

    import pymc_treesamplers as pmt
    from tests.helpers.samplers import SAMPLERS

    out = []
    for s in SAMPLERS:
        out.append((f"gaussian/{s.name}", lambda s=s: _sample(_gaussian(), lambda m: [s.step([m["mu"]], **s.options)])))
    for s in SAMPLERS:
        out.append((f"bernoulli/{s.name}",
                    lambda s=s: _sample(_family("bernoulli"), lambda m: [s.step([m["mu"]], **s.options)])))
    extra = {
        "poisson/cgm": (_family("poisson"), lambda m: [pmt.CGMStep([m["mu"]])]),
        "poisson/expand/growprune": (_family("poisson"), lambda m: [pmt.GrowPruneStep([m["mu"]], route="expand")]),
        "bernoulli/expand/cgm": (_family("bernoulli"), lambda m: [pmt.CGMStep([m["mu"]], route="expand")]),
        "graph/cgm": (_family("graph"), lambda m: [pmt.CGMStep([m["mu"]])]),
        "graph/pg": (_family("graph"), lambda m: [pmt.PGBARTStep([m["mu"]])]),
        "outputs2/cgm": (_gaussian(outputs=2), lambda m: [pmt.CGMStep([m["mu"]])]),
        "outputs2/pg": (_gaussian(outputs=2), lambda m: [pmt.PGBARTStep([m["mu"]])]),
        "missing/cgm": (_gaussian(nan=True), lambda m: [pmt.CGMStep([m["mu"]])]),
        "dirichlet/cgm": (_gaussian(split_prior="dirichlet"), lambda m: [pmt.CGMStep([m["mu"]])]),
        "warm/cgm": (_gaussian(), lambda m: [pmt.CGMStep([m["mu"]], warm_start=3)]),
        "warm/reshape": (_gaussian(), lambda m: [pmt.ReshapeStep([m["mu"]], warm_start=3)]),
        "threads2/cgm": (_gaussian(), lambda m: [pmt.CGMStep([m["mu"]], threads=2)]),
        "twin/growprune": (_gaussian(), lambda m: [pmt.GrowPruneStep([m["mu"]], backend="cuda-twin")]),
        "twin/cgm": (_gaussian(), lambda m: [pmt.CGMStep([m["mu"]], backend="cuda-twin")]),
    }
    for name, (build, step) in extra.items():
        out.append((name, lambda b=build, s=step: _sample(b, s)))

    def auto():  # pm.sample's own assignment, sigma free
        X, y = _data()
        with pm.Model():
            mu = pmt.BART("mu", X, y, m=5)
            sigma = pm.HalfNormal("sigma", 1.0)
            pm.Normal("y", mu, sigma, observed=y)
            idata = pm.sample(tune=5, draws=10, chains=1, cores=1, random_seed=1, progressbar=False,
                              compute_convergence_checks=False)
        return _fit_digest(idata)

    out.append(("auto/sigma", auto))

    def gfr():
        X, y = _data(nan=True)
        reg = pmt.GFRRegressor(m=5, sweeps=6, burn=2, random_state=0).fit(X, y)
        return _digest(reg.forests_, reg.sigma_)

    def smctree():
        X, y = _data()
        reg = pmt.SMCTreeRegressor(n_particles=10, n_islands=2, random_state=0).fit(X, y)
        return _digest(reg.predict(X))

    def mpi():
        from prototypes import mpi as mpi_fit

        X, y = _data()
        out = mpi_fit.fit(X, y, m=3, n_sweeps=6, seed=1)
        return _digest(out.forests, out.sigma)

    out += [("gfr", gfr), ("smctree", smctree), ("mpi", mpi)]
    return out


def main() -> None:
    only = sys.argv[1:]
    for name, run in cases():
        if only and not any(name.startswith(o) for o in only):
            continue
        try:
            print(name, run(), flush=True)
        except Exception as err:  # a case the version under test cannot run is a line, not a stop
            print(name, f"error: {type(err).__name__}: {err}", flush=True)


if __name__ == "__main__":
    main()
