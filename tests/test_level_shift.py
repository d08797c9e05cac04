"""The level shift (steps/level.py): its draw against the conditional computed on a grid, and the whole sampler
(tree step with the shift, NUTS on the group intercepts) against the exact posterior of a linear Gaussian model with
the ridge (stumps plus group intercepts, tight noise), where a shift that leaves out the group intercepts' prior is
caught and no shift at all barely moves."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_treesamplers as pmt
from pymc_treesamplers.steps import level
from pymc_treesamplers.steps.level import GroupLevel, LevelShift, level_draw


def test_draw_matches_the_conditional_on_a_grid():
    rng = np.random.default_rng(1)
    m, mu0, s2 = 4, 0.3, 0.5
    leaves = rng.normal(mu0, np.sqrt(s2), size=9) + 0.8  # nine leaves away from their prior's mean
    u, a, s = rng.normal(size=5) + 0.4, 0.7, 1.3
    grid = np.linspace(-8, 8, 20001)
    logp = (stats.norm.logpdf(leaves[:, None] + grid / m, mu0, np.sqrt(s2)).sum(0)
            + stats.norm.logpdf(u[:, None] - grid / a, 0, s).sum(0))
    p = np.exp(logp - logp.max())
    p /= p.sum()
    mean = (grid * p).sum()
    sd = np.sqrt(((grid - mean) ** 2 * p).sum())
    draws = np.array([level_draw(rng, leaves.size, (leaves - mu0).sum(), m, s2, u, a, s) for _ in range(20000)])
    assert abs(draws.mean() - mean) < 4 * sd / np.sqrt(draws.size)
    assert abs(draws.std() / sd - 1) < 0.03


N, GROUPS, NOISE, M = 30, 3, 0.05, 2


def ridge_model(seed=0):
    """Stumps (``alpha`` 1e-6: every tree one leaf) plus non-centred group intercepts of fixed scale 1 under a
    tight Normal likelihood: ``y_i = v_1 + v_2 + z_g(i) + noise``, a linear Gaussian model whose posterior is
    known exactly, and whose data pin each group's sum, leaving the split of the level to the priors."""
    rng = np.random.default_rng(seed)
    idx = np.arange(N) % GROUPS
    y = 1.5 + np.array([0.4, -0.2, 0.9])[idx] + NOISE * rng.normal(size=N)
    with pm.Model() as model:
        f = pmt.BART("f", rng.uniform(size=(N, 1)), y, m=M, alpha=1e-6, mu0=0.0, sigma_mu=1.0)
        z = pm.Normal("z", 0.0, 1.0, shape=GROUPS)
        pm.Normal("y", f + z[idx], NOISE, observed=y)
    return model, y, idx


def exact_moments(y, idx):
    """Posterior mean and variance of F = v_1 + v_2 and of z_0 (theta = (v_1, v_2, z), prior N(0, I))."""
    H = np.zeros((N, M + GROUPS))
    H[:, :M] = 1.0
    H[np.arange(N), M + idx] = 1.0
    cov = np.linalg.inv(np.eye(M + GROUPS) + H.T @ H / NOISE**2)
    mean = cov @ H.T @ y / NOISE**2
    a = np.r_[np.ones(M), np.zeros(GROUPS)]
    return {"F": (a @ mean, a @ cov @ a), "z0": (mean[M], cov[M, M])}


def gaps(idata, moments) -> dict:
    """|sampled - exact| / Monte Carlo standard error, for the mean and the variance of F and of z_0."""
    post = idata.posterior
    draws = {"F": post["f"].isel(f_dim_0=0), "z0": post["z"].isel(z_dim_0=0)}
    out = {}
    for name, x in draws.items():
        mean, var = moments[name]
        out[f"{name} mean"] = abs(float(x.mean()) - mean) / float(az.mcse(x))
        sq = (x - mean) ** 2
        out[f"{name} var"] = abs(float(sq.mean()) - var) / float(az.mcse(sq))
    return out


def sample(model, shift=True):
    with model:
        step = pmt.CGMStep([model["f"]])
        if shift:
            step.level = LevelShift([GroupLevel("z", 1.0, noncentred=True)])
        return pm.sample(draws=3000, tune=500, chains=2, cores=1, step=[step], random_seed=5, progressbar=False,
                         compute_convergence_checks=False)


def test_sampler_with_the_shift_gives_the_exact_posterior():
    model, y, idx = ridge_model()
    idata = sample(model)
    assert max(gaps(idata, exact_moments(y, idx)).values()) < 4
    # and it moves along the ridge: without the shift the level's split hardly moves in as many draws
    assert float(az.ess(idata.posterior["z"].isel(z_dim_0=0))) > 1000
    assert float(az.ess(sample(ridge_model()[0], shift=False).posterior["z"].isel(z_dim_0=0))) < 100


def test_a_shift_without_the_group_prior_is_caught(monkeypatch):
    def leaves_only(rng, leaves, excess, m, s2, u, a, s):
        # the wrong target: the line's conditional from the leaves' prior alone
        precision = leaves / (m * m * s2)
        return float(-excess / (m * s2) / precision + rng.standard_normal() / np.sqrt(precision))

    monkeypatch.setattr(level, "level_draw", leaves_only)
    model, y, idx = ridge_model()
    assert max(gaps(sample(model), exact_moments(y, idx)).values()) > 4


def test_refuses_what_it_cannot_move():
    rng = np.random.default_rng(0)
    with pm.Model():
        f = pmt.BART("f", rng.uniform(size=(10, 1)), rng.normal(size=10), m=3, shape=(2, 10))
        pm.Normal("y", f.sum(0), 1.0, observed=rng.normal(size=10))
        step = pmt.CGMStep([f])
    with pytest.raises(ValueError, match="one output"):
        LevelShift([GroupLevel("z", 1.0)]).check(step)
