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
from pymc_treesamplers.model.bart import bart_covariates
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


N, GROUPS, NOISE, M, MU0, SIGMA_MU, SIGMA_G = 30, 3, 0.05, 5, 0.2, 0.6, 1.7


def ridge_model(noncentred=True, seed=0):
    """Stumps (``alpha`` 1e-6: every tree one leaf) plus group intercepts of fixed scale 1.7, non-centred
    (``1.7 z_g``, ``z ~ N(0, 1)``) or centred (``u_g ~ N(0, 1.7^2)``), under a tight Normal likelihood: a linear
    Gaussian model whose posterior is known exactly, and whose data pin each group's sum, leaving the split of the
    level to the priors."""
    rng = np.random.default_rng(seed)
    idx = np.arange(N) % GROUPS
    y = 1.5 + np.array([0.4, -0.2, 0.9])[idx] + NOISE * rng.normal(size=N)
    with pm.Model() as model:
        f = pmt.BART("f", rng.uniform(size=(N, 1)), y, m=M, alpha=1e-6, mu0=MU0, sigma_mu=SIGMA_MU)
        if noncentred:
            group = SIGMA_G * pm.Normal("u", 0.0, 1.0, shape=GROUPS)
        else:
            group = pm.Normal("u", 0.0, SIGMA_G, shape=GROUPS)
        pm.Normal("y", f + group[idx], NOISE, observed=y)
    return model, y, idx


def exact_moments(y, idx, noncentred):
    """Posterior mean and variance of F = sum of the leaves and of u_0: theta = (v_1 .. v_m, u), a linear Gaussian
    model with prior N((mu0, .., 0), diag(sigma_mu^2, .., s^2))."""
    a, s = (SIGMA_G, 1.0) if noncentred else (1.0, SIGMA_G)
    H = np.zeros((N, M + GROUPS))
    H[:, :M] = 1.0
    H[np.arange(N), M + idx] = a
    prior_mean = np.r_[np.full(M, MU0), np.zeros(GROUPS)]
    prior_prec = np.diag(np.r_[np.full(M, SIGMA_MU**-2), np.full(GROUPS, s**-2)])
    cov = np.linalg.inv(prior_prec + H.T @ H / NOISE**2)
    mean = cov @ (prior_prec @ prior_mean + H.T @ y / NOISE**2)
    w = np.r_[np.ones(M), np.zeros(GROUPS)]
    return {"F": (w @ mean, w @ cov @ w), "u0": (mean[M], cov[M, M])}


def gaps(idata, moments) -> dict:
    """|sampled - exact| / Monte Carlo standard error, for the mean and the variance of F and of u_0."""
    post = idata.posterior
    draws = {"F": post["f"].isel(f_dim_0=0), "u0": post["u"].isel(u_dim_0=0)}
    out = {}
    for name, x in draws.items():
        mean, var = moments[name]
        out[f"{name} mean"] = abs(float(x.mean()) - mean) / float(az.mcse(x))
        sq = (x - mean) ** 2
        out[f"{name} var"] = abs(float(sq.mean()) - var) / float(az.mcse(sq))
    return out


def sample(model, noncentred=True, shift=True):
    with model:
        step = pmt.CGMStep([model["f"]])
        if shift:
            step.level = LevelShift([GroupLevel("u", SIGMA_G, noncentred=noncentred)])
        return pm.sample(draws=3000, tune=500, chains=2, cores=1, step=[step], random_seed=5, progressbar=False,
                         compute_convergence_checks=False)


@pytest.mark.parametrize("noncentred", [True, False], ids=["noncentred", "centred"])
def test_sampler_with_the_shift_gives_the_exact_posterior(noncentred):
    model, y, idx = ridge_model(noncentred)
    idata = sample(model, noncentred)
    assert max(gaps(idata, exact_moments(y, idx, noncentred)).values()) < 4
    assert float(az.ess(idata.posterior["u"].isel(u_dim_0=0))) > 1000
    # the stored forests are the shifted ones: predictions from the trace reproduce its BART values
    X = bart_covariates(model["f"]).eval()
    assert np.allclose(pmt.predict(idata, X, "f"), idata.posterior["f"].values)


def test_without_the_shift_the_split_hardly_moves():
    assert float(az.ess(sample(ridge_model()[0], shift=False).posterior["u"].isel(u_dim_0=0))) < 100


@pytest.mark.parametrize("noncentred", [True, False], ids=["noncentred", "centred"])
def test_a_wrong_shift_is_caught(monkeypatch, noncentred):
    """Two wrong targets: the roles of the scale in the two parametrisations swapped, and the line's conditional
    from the leaves' prior alone."""
    model, y, idx = ridge_model(noncentred)
    swapped = sample(model, noncentred=not noncentred)
    assert max(gaps(swapped, exact_moments(y, idx, noncentred)).values()) > 4

    def leaves_only(rng, leaves, excess, m, s2, u, a, s):
        precision = leaves / (m * m * s2)
        return float(-excess / (m * s2) / precision + rng.standard_normal() / np.sqrt(precision))

    monkeypatch.setattr(level, "level_draw", leaves_only)
    assert max(gaps(sample(ridge_model(noncentred)[0], noncentred), exact_moments(y, idx, noncentred)).values()) > 4


def test_refuses_what_it_cannot_move():
    rng = np.random.default_rng(0)
    with pm.Model():
        f = pmt.BART("f", rng.uniform(size=(10, 1)), rng.normal(size=10), m=3, shape=(2, 10))
        pm.Normal("y", f.sum(0), 1.0, observed=rng.normal(size=10))
        step = pmt.CGMStep([f])
    with pytest.raises(ValueError, match="one output"):
        LevelShift([GroupLevel("z", 1.0)]).check(step)
