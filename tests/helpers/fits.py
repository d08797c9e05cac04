"""Small PyMC fits shared by the end-to-end tests."""

import pymc as pm

import pymc_treesamplers as pmt
from pymc_treesamplers.datasets import friedman1


def fit_friedman(step_cls=None, options=None, seed=1, chains=2, cores=1, draws=50, tune=50, n=100, m=10):
    """BART + NUTS sigma on Friedman #1 with 5 covariates; ``step_cls=None``: PyMC's assignment (which
    gives sigma to NormalScaleGibbs).

    Returns ``(model, X, idata)``.
    """
    X, y, _ = friedman1(n, p=5, rng=0)
    with pm.Model() as model:
        mu = pmt.BART("mu", X, y, m=m)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu, sigma, observed=y)
        step = None if step_cls is None else [step_cls([mu], **(options or {})), pm.NUTS([sigma])]
        idata = pm.sample(tune=tune, draws=draws, chains=chains, cores=cores, random_seed=seed, step=step,
                          progressbar=False, compute_convergence_checks=False)
    return model, X, idata
