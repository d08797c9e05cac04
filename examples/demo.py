"""Demo: BART on Boston housing with every tree sampler of the package, compared side by side.

Run ``python -m examples.demo [--out DIR] [--draws N] [--tune N] [--all] [--quick]``.

For each sampler (CGM, the default, grow/prune and Reshape; with ``--all`` every ``*Step`` class in
``pymc_treesamplers.__all__``) the demo fits

    mu = pmt.BART("mu", X_train, y_train, m=200)      # the package's default m
    sigma = pm.HalfNormal("sigma", y_train.std())
    y ~ Normal(mu, sigma)

on a fixed random 80/20 split of the Boston housing data (4 chains, PyMC's default, on 2 cores, fixed seed;
1000 tune + 2000 draws per chain unless told otherwise), then
prints a table of wall time; bulk ESS (of all the chains' draws together) and R-hat of sigma and of the fit
at 10 fixed training rows (the smallest ESS and the largest R-hat of the ten); bulk ESS per second of both;
test RMSE of the posterior mean and the posterior mean of sigma; and per sampler whether its chains agree
(:func:`pymc_treesamplers.agreement`: R-hat at most 1.01 and bulk ESS at least 400 for sigma, the fit at those
rows and the forest's size; docs/samplers.md, "Do the chains agree?"), with what to do when they do not. It
writes to ``--out``:

* ``comparison.csv``: the table;
* ``predicted_vs_observed.png``: test-set predictions with 90% intervals (best sampler);
* ``sigma_trace_rank.png``: trace and rank plots of sigma, one row per sampler;
* ``idata_<sampler>.nc``: the best sampler's InferenceData, reloaded to check that
  ``pmt.predict`` gives the same predictions from the file.

"Best" is the sampler with the highest minimum ESS/s of the fit. ``--quick`` is a tiny run
(100 tune + 100 draws) for smoke tests; its numbers are not meaningful.

>>> # from examples.demo import main; main(["--quick", "--out", "/tmp/demo"])
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
from matplotlib.figure import Figure

import pymc_treesamplers as pmt
from pymc_treesamplers.datasets import load_boston
from pymc_treesamplers.results.agreement import ADVICE, ESS_MIN, RHAT_MAX

SEED = 20240607
N_TREES = 200  # the package's default
CHAINS = 4
CORES = 2
TEST_FRACTION = 0.2
N_FIT_ROWS = 10  # training rows (evenly spaced) whose fitted value's R-hat and ESS are reported
INTERVAL = 0.90
TUNE, DRAWS = 1000, 2000  # per chain
# The samplers whose sweep costs 10-35x CGM's at m = 200 run with --all only, with this share of the tune and draws
# (said in the output): their compiles (24-35 s each on an empty cache) and fits (30-50 s) would take the demo
# from a fresh clone past 5 minutes
SHARE = {"pgbart": 0.25, "ctbirthdeath": 0.1}
QUICK_TUNE = QUICK_DRAWS = 100


def available_samplers() -> dict[str, type]:
    """The tree step classes exported by the package, keyed by their short name.

    >>> sorted(available_samplers())
    ['cgm', 'ctbirthdeath', 'growprune', 'pgbart', 'reshape']
    """
    classes = [getattr(pmt, n) for n in sorted(pmt.__all__) if n.endswith("Step")]
    return {cls.name: cls for cls in classes}


def train_test_rows(seed: int = SEED) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame, np.ndarray]:
    """Fixed random 80/20 train/test split of Boston housing: ``X_train, y_train, X_test, y_test``.

    >>> X_tr, y_tr, X_te, y_te = train_test_rows()
    >>> len(y_tr), len(y_te)
    (405, 101)
    """
    X, y = load_boston()
    perm = np.random.default_rng(seed).permutation(len(y))
    n_test = round(TEST_FRACTION * len(y))
    test, train = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    return X.iloc[train].reset_index(drop=True), y[train], X.iloc[test].reset_index(drop=True), y[test]


def fit(step_cls: type, X_train, y_train, tune: int, draws: int, chains: int = CHAINS, cores: int = CORES):
    """Fit the demo model with one tree sampler; returns ``(idata, wall seconds)``."""
    t0 = time.perf_counter()
    with pm.Model():
        mu = pmt.BART("mu", X_train, y_train, m=N_TREES)
        sigma = pm.HalfNormal("sigma", float(y_train.std()))
        pm.Normal("y", mu, sigma, observed=y_train)
        idata = pm.sample(
            tune=tune,
            draws=draws,
            chains=chains,
            cores=cores,
            random_seed=SEED,
            step=[step_cls([mu])],
            progressbar=False,
            compute_convergence_checks=False,
        )
    return idata, time.perf_counter() - t0


def summarise(name: str, idata, wall: float, X_test, y_test) -> tuple[dict, np.ndarray]:
    """One row of the comparison table and the (chain, draw, n_test) test-set draws of mu."""
    sigma = np.asarray(idata.posterior["sigma"].values)
    n_train = idata.posterior["mu"].shape[-1]
    rows = np.linspace(0, n_train - 1, N_FIT_ROWS).round().astype(int)
    agree = pmt.agreement(idata, "mu", rows=rows)
    fit, leaves = f"mu: f at {N_FIT_ROWS} rows", "mu: n_leaves"
    f_test = pmt.predict(idata, X_test, "mu")
    rmse = float(np.sqrt(np.mean((f_test.mean(axis=(0, 1)) - y_test) ** 2)))
    short = {"sigma": "sigma", fit: "fit", leaves: "leaves"}
    row = {
        "sampler": name,
        "draws": sigma.shape[1],
        "wall_s": wall,
        "ess_sigma": agree.loc["sigma", "ess_bulk"],
        "rhat_sigma": agree.loc["sigma", "r_hat"],
        "min_ess_fit": agree.loc[fit, "ess_bulk"],
        "max_rhat_fit": agree.loc[fit, "r_hat"],
        "rhat_leaves": agree.loc[leaves, "r_hat"],
        "ess_per_s_sigma": agree.loc["sigma", "ess_bulk"] / wall,
        "min_ess_per_s_fit": agree.loc[fit, "ess_bulk"] / wall,
        "test_rmse": rmse,
        "sigma_mean": float(sigma.mean()),
        "agree": bool(agree["agree"].all()),
        "disagree_on": ", ".join(short[q] for q in agree.index[~agree["agree"]]),
    }
    return row, f_test


def format_table(df: pd.DataFrame) -> str:
    """The comparison table as aligned text."""
    headers = {
        "sampler": "sampler",
        "draws": "draws/chain",
        "wall_s": "wall (s)",
        "ess_sigma": "ESS sigma",
        "rhat_sigma": "R-hat sigma",
        "min_ess_fit": "min ESS fit",
        "max_rhat_fit": "max R-hat fit",
        "rhat_leaves": "R-hat leaves",
        "ess_per_s_sigma": "ESS/s sigma",
        "min_ess_per_s_fit": "min ESS/s fit",
        "test_rmse": "test RMSE",
        "sigma_mean": "sigma mean",
    }
    formats = {"draws": "{:.0f}", "wall_s": "{:.1f}", "ess_sigma": "{:.0f}", "min_ess_fit": "{:.0f}",
               "ess_per_s_sigma": "{:.2f}", "min_ess_per_s_fit": "{:.2f}"}
    cells = [list(headers.values())]
    for _, r in df.iterrows():
        cells.append([formats.get(k, "{:.3f}").format(r[k]) if k != "sampler" else str(r[k]) for k in headers])
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def agreement_line(table: pd.DataFrame) -> str:
    """Which samplers' chains agree on sigma, the fit and the forest's size (:func:`pymc_treesamplers.agreement`).

    >>> t = pd.DataFrame({"sampler": ["a", "b"], "agree": [True, False], "disagree_on": ["", "sigma, fit"]})
    >>> agreement_line(t)
    'chains agree (R-hat <= 1.01 and bulk ESS >= 400 for sigma, the fit and the leaves): a; not yet: b (sigma, fit)'
    """
    ok = table["agree"].astype(bool)
    agree = list(table["sampler"][ok])
    not_yet = [f"{r.sampler} ({r.disagree_on})" for r in table[~ok].itertuples()]
    return (f"chains agree (R-hat <= {RHAT_MAX} and bulk ESS >= {ESS_MIN} for sigma, the fit and the leaves): "
            f"{', '.join(agree) or 'none'}" + (f"; not yet: {', '.join(not_yet)}" if not_yet else ""))


def plot_predictions(path: Path, name: str, f_test: np.ndarray, sigma: np.ndarray, y_test: np.ndarray, rng) -> float:
    """Predicted vs observed on the test set with 90% intervals; returns the predictive coverage."""
    q = [(1 - INTERVAL) / 2, (1 + INTERVAL) / 2]
    f = f_test.reshape(-1, f_test.shape[-1])
    y_rep = f + sigma.reshape(-1, 1) * rng.standard_normal(f.shape)
    mean = f.mean(axis=0)
    lo_f, hi_f = np.quantile(f, q, axis=0)
    lo_y, hi_y = np.quantile(y_rep, q, axis=0)
    covered = float(np.mean((y_test >= lo_y) & (y_test <= hi_y)))
    rmse = float(np.sqrt(np.mean((mean - y_test) ** 2)))

    fig = Figure(figsize=(7, 6.5), layout="constrained")
    ax = fig.add_subplot()
    ax.errorbar(
        y_test,
        mean,
        yerr=[mean - lo_y, hi_y - mean],
        fmt="none",
        ecolor="0.75",
        elinewidth=1,
        label=f"{INTERVAL:.0%} predictive interval of y ({covered:.0%} cover)",
    )
    ax.errorbar(
        y_test,
        mean,
        yerr=[mean - lo_f, hi_f - mean],
        fmt="o",
        ms=3.5,
        color="C0",
        ecolor="C0",
        elinewidth=2,
        label=f"posterior mean and {INTERVAL:.0%} interval of mu",
    )
    lims = [min(y_test.min(), lo_y.min()), max(y_test.max(), hi_y.max())]
    ax.plot(lims, lims, color="k", lw=1, ls="--", label="predicted = observed")
    ax.set_xlabel("observed median home value, medv ($1000s; capped at 50 in the data)")
    ax.set_ylabel("predicted medv ($1000s)")
    ax.set_title(
        f"Boston housing test set ({len(y_test)} rows): BART m={N_TREES}, {name} sampler\ntest RMSE {rmse:.2f}"
    )
    ax.legend(loc="upper left", fontsize=9)
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=120)
    return covered


def plot_sigma(path: Path, results: dict[str, dict]) -> None:
    """Trace (left) and rank histograms per chain (right) of sigma, one row per sampler."""
    names = list(results)
    fig = Figure(figsize=(11, 3.0 * len(names) + 0.6), layout="constrained")
    axes = fig.subplots(len(names), 2, squeeze=False, gridspec_kw={"width_ratios": [2.2, 1]})
    for row in range(1, len(names)):  # same scales in every row, so the samplers compare by eye
        axes[row, 0].sharey(axes[0, 0])
        axes[row, 1].sharey(axes[0, 1])
    for row, name in enumerate(names):
        sigma = np.asarray(results[name]["idata"].posterior["sigma"].values)
        chains, draws = sigma.shape
        ess, rhat = results[name]["row"]["ess_sigma"], results[name]["row"]["rhat_sigma"]
        ax = axes[row, 0]
        for c in range(chains):
            ax.plot(np.arange(draws), sigma[c], lw=0.7, alpha=0.8, color=f"C{c}", label=f"chain {c}")
        ax.set_title(f"{name}: trace of sigma (bulk ESS {ess:.0f} of {chains * draws} draws, R-hat {rhat:.2f})")
        ax.set_xlabel("draw (after tuning)")
        ax.set_ylabel("sigma")
        ax.legend(loc="best", fontsize=8)
        ax = axes[row, 1]
        ranks = sigma.ravel().argsort().argsort().reshape(sigma.shape)
        bins = np.linspace(0, chains * draws, min(20, draws // 5 or 1) + 1)
        for c in range(chains):
            ax.hist(ranks[c], bins=bins, histtype="step", lw=1.5, color=f"C{c}", label=f"chain {c}")
        ax.axhline(draws / (len(bins) - 1), color="k", ls="--", lw=1, label="uniform")
        ax.set_title(f"{name}: rank plot of sigma")
        ax.set_xlabel("rank of draw among all chains")
        ax.set_ylabel("draws per bin")
        ax.legend(loc="best", fontsize=8, framealpha=0.9)
    fig.suptitle("Posterior of the noise sd sigma per sampler (flat, overlapping rank histograms = good mixing)")
    fig.savefig(path, dpi=110)


def warm_up(samplers: dict[str, type], X_train, y_train) -> float:
    """Compile everything once before timing: a 2+2 draw fit per sampler, one chain, in this process.

    That builds the numba tree kernels (inherited by forked chain processes, loaded from numba's
    disk cache otherwise) and PyTensor's functions for this model, so that no sampler's wall time
    includes compilation. Returns the seconds it took.
    """
    t0 = time.perf_counter()
    pymc_log = logging.getLogger("pymc")
    level = pymc_log.level
    pymc_log.setLevel(logging.ERROR)  # silence "Only 2 samples per chain ..." and the sampler banner
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for cls in samplers.values():
                fit(cls, X_train, y_train, tune=2, draws=2, chains=1, cores=1)
    finally:
        pymc_log.setLevel(level)
    return time.perf_counter() - t0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m examples.demo",
        description="Fit BART to Boston housing with every pymc-treesamplers sampler and compare them.",
    )
    parser.add_argument("--out", type=Path, default=Path("demo_output"), help="output directory (default demo_output/)")
    parser.add_argument("--draws", type=int, default=None, help=f"posterior draws per chain (default {DRAWS})")
    parser.add_argument("--tune", type=int, default=None, help=f"tuning draws per chain (default {TUNE})")
    parser.add_argument("--all", action="store_true",
                        help="also Particle Gibbs and continuous-time birth-death, with fewer draws (~2.5 min more)")
    parser.add_argument(
        "--quick", action="store_true", help=f"tiny run ({QUICK_TUNE} tune + {QUICK_DRAWS} draws) for smoke tests"
    )
    args = parser.parse_args(argv)
    if args.draws is None:
        args.draws = QUICK_DRAWS if args.quick else DRAWS
    if args.tune is None:
        args.tune = QUICK_TUNE if args.quick else TUNE
    if args.draws < 4:
        parser.error(f"--draws must be at least 4 (ESS needs a few draws per chain), got {args.draws}")
    if args.tune < 0:
        parser.error(f"--tune must be >= 0, got {args.tune}")
    return args


def main(argv: Sequence[str] | None = None) -> pd.DataFrame:
    """Run the demo; returns the comparison table (also written to ``<out>/comparison.csv``)."""
    t_start = time.perf_counter()
    args = parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    samplers = {k: v for k, v in available_samplers().items() if args.all or k not in SHARE}
    X_train, y_train, X_test, y_test = train_test_rows()
    print(f"Boston housing: {len(y_train)} training rows, {len(y_test)} test rows, {X_train.shape[1]} covariates")
    print(
        f"BART m={N_TREES}; samplers: {', '.join(samplers)}; {CHAINS} chains on {CORES} cores, "
        f"{args.tune} tune + {args.draws} draws per chain (fewer for the slow samplers), seed {SEED}"
    )
    if not args.all:
        print(f"left out: {', '.join(SHARE)} (a sweep 10-35x CGM's; --all runs them with fewer draws)")
    print(
        f"compiling (numba tree kernels, PyTensor model functions; fast once cached): "
        f"{warm_up(samplers, X_train, y_train):.1f} s"
    )

    results: dict[str, dict] = {}
    for name, cls in samplers.items():
        share = SHARE.get(name, 1.0)
        tune, draws = round(share * args.tune), max(4, round(share * args.draws))
        idata, wall = fit(cls, X_train, y_train, tune, draws)
        row, f_test = summarise(name, idata, wall, X_test, y_test)
        results[name] = {"idata": idata, "row": row, "f_test": f_test}
        print(f"  {name}: {wall:.1f} s" + (f" ({tune} tune + {draws} draws per chain: its sweep costs 10-35x "
                                            "CGM's)" if share != 1.0 else ""))

    table = pd.DataFrame([r["row"] for r in results.values()])
    print()
    print(format_table(table))
    print(agreement_line(table))
    if not table["agree"].all():
        print(f"what to do when chains disagree: {ADVICE}")
    print()
    table.to_csv(out / "comparison.csv", index=False)

    best = str(table.loc[table["min_ess_per_s_fit"].idxmax(), "sampler"])
    best_idata, best_f = results[best]["idata"], results[best]["f_test"]
    sigma_best = np.asarray(best_idata.posterior["sigma"].values)
    coverage = plot_predictions(
        out / "predicted_vs_observed.png", best, best_f, sigma_best, y_test, np.random.default_rng(SEED)
    )
    plot_sigma(out / "sigma_trace_rank.png", results)
    print(
        f"best sampler (highest min ESS/s of the fit): {best}; "
        f"{INTERVAL:.0%} predictive intervals cover {coverage:.0%} of the test responses"
    )

    nc_path = out / f"idata_{best}.nc"
    best_idata.to_netcdf(nc_path)
    reloaded = az.from_netcdf(nc_path)
    same = np.array_equal(pmt.predict(reloaded, X_test, "mu"), best_f)
    print(f"reloaded {nc_path.name}: pmt.predict gives {'identical' if same else 'DIFFERENT'} test-set predictions")
    if not same:
        raise RuntimeError(f"predictions from the reloaded {nc_path} differ from those of the in-memory trace")

    written = ["comparison.csv", "predicted_vs_observed.png", "sigma_trace_rank.png", nc_path.name]
    print(f"wrote to {out.resolve()}/: {', '.join(written)}")
    print(f"total time {time.perf_counter() - t_start:.0f} s")
    return table


if __name__ == "__main__":
    main()
