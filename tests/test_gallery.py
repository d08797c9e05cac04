"""pymc-bart's gallery models with only the import changed (``import pymc_treesamplers as pmb``), at
small size, on the shipped data: they build, sample with PyMC's automatic step assignment and fit.
"""

import numpy as np
import pymc as pm
from scipy import special

import pymc_treesamplers as pmb
from pymc_treesamplers.datasets import load_bikes, load_ionosphere

RUN = {"tune": 150, "draws": 150, "chains": 1, "random_seed": 1, "progressbar": False,
       "compute_convergence_checks": False}


def test_bikes_negative_binomial():
    X, Y = load_bikes()
    with pm.Model():
        α = pm.Exponential("α", 1)
        μ = pmb.BART("μ", X, np.log(Y), m=50)
        pm.NegativeBinomial("y", mu=pm.math.exp(μ), alpha=α, observed=Y)
        idata = pm.sample(**RUN)
    mean = np.exp(idata.posterior["μ"]).mean(("chain", "draw")).values
    assert np.corrcoef(mean, Y)[0, 1] > 0.8
    assert 0.3 < float(idata.sample_stats["μ_mh_accept"].mean()) <= 1.0


def test_bikes_poisson():
    X, Y = load_bikes()
    with pm.Model():
        μ = pmb.BART("μ", X, np.log(Y), m=50)
        pm.Poisson("y", mu=pm.math.exp(μ), observed=Y)
        idata = pm.sample(**RUN)
    mean = np.exp(idata.posterior["μ"]).mean(("chain", "draw")).values
    assert np.corrcoef(mean, Y)[0, 1] > 0.9


def test_ionosphere_bernoulli():
    X, Y = load_ionosphere()
    with pm.Model():
        μ = pmb.BART("μ", X, Y, m=50)
        θ = pm.Deterministic("θ", pm.math.sigmoid(μ))
        pm.Bernoulli("y", p=θ, observed=Y)
        idata = pm.sample(**RUN)
    p = special.expit(idata.posterior["μ"]).mean(("chain", "draw")).values
    assert ((p > 0.5) == (Y > 0.5)).mean() > 0.9
