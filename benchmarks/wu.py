"""One tree on the Wu, Tjelmeland & West (2007) data: do the samplers move between equivalent roots?

    python -m benchmarks.wu [--iters 20000] [--burn 1000] [--sds 0.5,1,0.1,0.01] [--grids range,data]
        [--samplers CT,CT-B,CT-C,GrowPrune,CGM,PG] [--seed 7] [--quick] [--out docs/reports/ct-wu.md] [--json PATH]
    python -m benchmarks.wu --render-only [--quick | --json PATH]

Data (``pymc_treesamplers.datasets.wu_tjelmeland_west``): n = 300, three covariates; {x1 <= 0.5}
and {x3 > 0.5} are the same rows, so a root split on x1 and one on x3 explain the data equally
well. m = 1, alpha = 0.95, beta = 2 (package defaults), sigma fixed at the true noise sd (the tree
is the only unknown besides its leaves), one chain per (grid, sd, sampler), each in its own
process, ``pm.sample(tune=burn, draws=iters)``. Reports test MSE of the posterior mean of f (300
fresh points), the minimum bulk ESS of the fitted values at 5 training rows, variable activity
(share of splits on x1, x2, x3), unique trees visited, switches of the root variable between x1
and x3, and ESS/s.

Two cut grids (``--grids``), because on this data the grid decides whether a root can move:

* ``range`` (first): ``split_points="range", max_bins=100``, i.e. 99 equally spaced cuts per
  covariate, BayesTree's default (``usequants=FALSE, numcut=100``). The gap 0.4-0.6 between the
  two clusters of x1 (and of x3) holds about 25 cuts, all giving the same partition of the rows.
* ``data``: the package default (cuts between consecutive distinct values): exactly one cut
  falls in each gap, so a root one code off the gap must drag a stray row along.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from benchmarks import harness
from benchmarks.instrument import stat
from benchmarks.metrics import bulk_ess

MODULE = "benchmarks.wu"
SAMPLERS = {
    "CT": ("CTBirthDeathStep", {}),
    "CT-B": ("CTBirthDeathStep", {"rotate": True}),
    "CT-C": ("CTBirthDeathStep", {"rotate": True, "change": True}),
    "GrowPrune": ("GrowPruneStep", {}),
    "CGM": ("CGMStep", {}),
    "PG": ("PGBARTStep", {}),
}
FIT_ROWS = (0, 100, 150, 250, 299)
GRIDS = {"range": ("range", 100), "data": ("data", 256)}
GRID_TEXT = {
    "range": 'Cut grid `range`: `split_points="range", max_bins=100` (99 equally spaced cuts per covariate, '
    "BayesTree's default `usequants=FALSE, numcut=100`); about 25 cuts fall in the 0.4-0.6 gap of x1 and of x3, "
    "all giving the same partition.",
    "data": "Cut grid `data` (package default): cuts between consecutive distinct values (256 quantile bins); "
    "exactly one cut falls in each gap, so a root cut one code off the gap drags a stray row with it and "
    "the tree needs an extra split to isolate that row.",
}


# =========================================================================== worker


def _trace_summary(idata) -> tuple[np.ndarray, int]:
    """Root variable per draw and the number of distinct partitions of the training rows."""
    from pymc_treesamplers.results.storage import decode_forest

    enc = idata.sample_stats["mu_forest"].values.reshape(-1)
    roots = np.array([decode_forest(str(text))[2][0] for text in enc])
    mu = idata.posterior["mu"].values.reshape(enc.size, -1)
    # rows share a leaf iff they share the (continuous) leaf value of the draw
    seen = {np.unique(row, return_inverse=True)[1].tobytes() for row in mu}
    return roots, len(seen)


def worker_body(spec: dict) -> dict:
    import pymc as pm

    import pymc_treesamplers as pmt
    from pymc_treesamplers.datasets import wu_tjelmeland_west

    sd, name = spec["sd"], spec["sampler"]
    # same seed, same design at every sd (the noise is drawn after the covariates)
    X, y, _ = wu_tjelmeland_west(300, sd, spec["seed"])
    Xt, _, ft = wu_tjelmeland_west(300, sd, spec["seed"] + 1)
    cls_name, kw = SAMPLERS[name]
    split_points, max_bins = GRIDS[spec["grid"]]
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=1, split_points=split_points, max_bins=max_bins)
        pm.Normal("y", mu, sd, observed=y)
        run = {"chains": 1, "cores": 1, "random_seed": spec["seed"], "progressbar": False}
        # untimed warm-up, so that numba compilation / cache loading is not billed to the chain
        pm.sample(tune=2, draws=2, step=[getattr(pmt, cls_name)([mu], **kw)], compute_convergence_checks=False, **run)
        idata = pm.sample(
            tune=spec["burn"],
            draws=spec["iters"],
            step=[getattr(pmt, cls_name)([mu], **kw)],
            compute_convergence_checks=False,
            **run,
        )
    secs = float(idata.posterior.attrs["sampling_time"])
    mu_draws = idata.posterior["mu"].values[0]
    ess = min(float(bulk_ess(mu_draws[None, :, r])) for r in FIT_ROWS)
    f_test = pmt.predict(idata, Xt, "mu")[0]
    counts = np.asarray(stat(idata.sample_stats, "split_counts").values, dtype=float).reshape(-1, X.shape[1])
    activity = counts.sum(0) / max(counts.sum(), 1.0)
    roots, unique = _trace_summary(idata)
    r13 = roots[(roots == 0) | (roots == 2)]
    return {
        "sampler": name,
        "sd": sd,
        "grid": spec["grid"],
        "test_mse": float(np.mean((f_test.mean(0) - ft) ** 2)),
        "min_ess_fit": ess,
        "ess_per_s": ess / secs,
        "sampling_s": secs,
        "activity": activity.tolist(),
        "x1_share_of_x1_x3": float(activity[0] / max(activity[0] + activity[2], 1e-12)),
        "root_x1_share": float(np.mean(r13 == 0)) if r13.size else float("nan"),
        "root_switches": int(np.sum(r13[1:] != r13[:-1])),
        "unique_trees": unique,
        "mean_leaves": float(stat(idata.sample_stats, "n_leaves").mean()),
    }


# =========================================================================== report


def describe(r: dict) -> str:
    return f"root x1 {r['root_x1_share']:.2f}, switches {r['root_switches']}, ESS {r['min_ess_fit']:.0f}"


def _table(results: list[dict]) -> list[str]:
    lines = [
        "| sd | sampler | test MSE | min ESS fit | ESS/s | activity x1 / x2 / x3 | x1 share | root on x1 "
        "| root switches | unique trees | leaves | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        a = r["activity"]
        lines.append(
            f"| {r['sd']:g} | {r['sampler']} | {r['test_mse']:.4g} | {r['min_ess_fit']:.1f} | {r['ess_per_s']:.3g} | "
            f"{a[0]:.2f} / {a[1]:.2f} / {a[2]:.2f} | {r['x1_share_of_x1_x3']:.2f} | {r['root_x1_share']:.2f} | "
            f"{r['root_switches']} | {r['unique_trees']} | {r['mean_leaves']:.2f} | {r['sampling_s']:.0f} |"
        )
    lines.append("")
    warn = [f"* sd {r['sd']:g} {r['sampler']}: {note}" for r in results if (note := harness.contention_note(r))]
    if warn:
        lines += warn + [""]
    tgt = [r for r in results if r["sd"] == 0.1]
    if tgt:
        lines += ["Target at sd 0.1 (x1 share in 0.3-0.7), all splits / root only:", ""]
        for r in tgt:
            ok = 0.3 <= r["x1_share_of_x1_x3"] <= 0.7
            ok_root = 0.3 <= r["root_x1_share"] <= 0.7
            lines.append(
                f"* {r['sampler']}: all splits {r['x1_share_of_x1_x3']:.2f} ({'met' if ok else 'not met'}); "
                f"root {r['root_x1_share']:.2f} ({'met' if ok_root else 'not met'}), {r['root_switches']} switches"
            )
        lines.append("")
    return lines


def render(saved: dict) -> str:
    """The markdown report of a saved run."""
    st, results = saved["settings"], saved["results"]
    lines = harness.header_lines(
        "Wu, Tjelmeland & West (2007) data: one tree, equivalent roots on x1 and x3", saved["meta"]
    )
    lines += [
        f"* n = 300, m = 1, alpha = 0.95, beta = 2, sigma fixed at the true sd; one chain per row, "
        f"{st['burn']} burn-in + {st['iters']} kept iterations, seed {st['seed']}, root-only start, warm numba "
        "cache. The paper's arms: CT (CT-A): birth-death, horizon 1; CT-B: plus one rotate and one pivot move per "
        "tree and draw (`rotate=True`); "
        "CT-C: plus one round of rule moves (`change=True`: CGM change, nog-rule Gibbs, same-bipartition relabel "
        "Gibbs). PG: 10 particles.",
        "* activity = share of all splits over the kept draws on x1 / x2 / x3 (the CT paper reports about "
        "0.25 / 0.5 / 0.25 for a sampler that mixes); x1 share = x1 / (x1 + x3) among splits; root on x1 = share "
        "of draws with the root on x1 among those with the root on x1 or x3; root switches = changes of the root "
        "variable between x1 and x3 along the chain; unique trees = distinct partitions of the training rows "
        "visited; ESS = minimum bulk ESS of the fitted values at 5 training rows; s = sampling seconds.",
        "* Target: within one chain, the share of x1 among splits on {x1, x3} between 0.3 and 0.7 at sd 0.1. "
        "Judged on the root: a chain stuck in a large tree splits on every variable somewhere, so the all-splits "
        "share can look balanced while the root never changes (root switches = 0).",
        "",
    ]
    for grid in GRIDS:
        rows = [r for r in results if r.get("status", "ok") == "ok" and r.get("grid", "data") == grid]
        if rows:
            lines += [f"## Grid `{grid}`", "", GRID_TEXT[grid], ""] + _table(rows)
    errors = [r for r in results if r.get("status", "ok") != "ok"]
    for r in errors:
        lines += [f"Error in {r['spec']}:", "", "```", (r.get("error") or "")[-3000:], "```", ""]
    return "\n".join(lines + harness.report_footer(saved))


# =========================================================================== CLI


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__)
    p.add_argument("--iters", type=int, default=20000, help="kept draws per chain")
    p.add_argument("--burn", type=int, default=1000, help="burn-in (tuning) draws per chain")
    p.add_argument("--sds", default="0.5,1,0.1,0.01", help="noise sds, comma list")
    p.add_argument("--samplers", default=",".join(SAMPLERS), help=f"comma list from {list(SAMPLERS)}")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--grids", default=",".join(GRIDS), help="cut grids to run: range, data (see module docstring)")
    p.add_argument("--quick", action="store_true", help="2000 + 200 iterations, sd 0.1 only")
    args = harness.parse_report_args(p, argv, "ct-wu", timeout_min=20.0)
    if not harness.measuring(args):
        return args
    if args.quick:
        args.iters, args.burn, args.sds = 2000, 200, "0.1"
    args.sds = [float(x) for x in args.sds.split(",") if x.strip()]
    args.samplers = harness.choice_list(args.samplers, SAMPLERS, p, "sampler(s)")
    args.grids = harness.choice_list(args.grids, GRIDS, p, "grid(s)")
    return args


def main(argv: list[str] | None = None) -> int:
    argv, args, code = harness.start(argv, parse_args, worker_body)
    if code is not None:
        return code
    settings = {k: getattr(args, k) for k in ("quick", "iters", "burn", "seed", "sds", "samplers", "grids")}
    runs = [(f"{g} sd{sd:g} {s}", {"grid": g, "sd": sd, "sampler": s, "iters": args.iters, "burn": args.burn,
                                   "seed": args.seed})
            for g in args.grids for sd in args.sds for s in args.samplers]
    done = harness.run_specs(MODULE, args, runs, describe)
    keys = ("grid", "sd", "sampler")
    results = [dict(res, **{k: spec[k] for k in keys}) for res, (_, spec) in zip(done, runs, strict=True)]
    return harness.finish(MODULE, argv, args, settings, results, render)


if __name__ == "__main__":
    sys.exit(main())
