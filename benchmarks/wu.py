"""One tree on the Wu, Tjelmeland & West (2007) data: do the samplers move between equivalent roots?

    python -m benchmarks.wu [--iters 20000] [--burn 1000] [--sds 0.5,1,0.1,0.01] [--grids range,data] [--quick]

Data (``../shared/papers/README.md``): n = 300, three covariates; {x1 <= 0.5} and {x3 > 0.5} are
the same rows, so a root split on x1 and one on x3 explain the data equally well. m = 1,
alpha = 0.95, beta = 2 (package defaults), sigma fixed at the true noise sd (the tree is the
only unknown besides its leaves), one chain per (sd, sampler), ``pm.sample(tune=burn,
draws=iters)``. Reports test MSE of the posterior mean of f (300 fresh points), the minimum bulk
ESS of the fitted values at 5 training rows, variable activity (share of splits on x1, x2, x3),
unique trees visited (structure and thresholds), switches of the root variable between x1 and
x3, and ESS/s. Writes ``docs/ct-wu.md`` and ``benchmarks/results/ct-wu.json``.

Two cut grids (``--grids``), because on this data the grid decides whether a root can move:

* ``range`` (first): ``split_points="range", max_bins=100``, i.e. 99 equally spaced cuts per
  covariate, BayesTree's default (``usequants=FALSE, numcut=100``). The gap 0.4-0.6 between the
  two clusters of x1 (and of x3) holds about 25 cuts, all giving the same partition of the rows.
* ``data``: the package default (cuts between consecutive distinct values): exactly one cut
  falls in each gap, so a root one code off the gap must drag a stray row along.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from .common import bulk_ess, dump_json, git_state, machine_info, package_versions, utc_now
from .pg_common import RESULTS_DIR, ROOT

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


def json_load(path):
    with open(path) as fh:
        return json.load(fh)


def _trace_summary(idata):
    """Root variable per draw and the number of distinct partitions of the training rows."""
    from pymc_treesamplers.trace import decode_forest

    enc = idata.sample_stats["mu_forest"].values.reshape(-1)
    roots = np.array([decode_forest(str(text))[2][0] for text in enc])
    mu = idata.posterior["mu"].values.reshape(enc.size, -1)
    # rows share a leaf iff they share the (continuous) leaf value of the draw
    seen = {np.unique(row, return_inverse=True)[1].tobytes() for row in mu}
    return roots, len(seen)


def run_one(name: str, sd: float, grid: str, args) -> dict:
    import pymc as pm

    import pymc_treesamplers as pmt
    from pymc_treesamplers.datasets import wu_tjelmeland_west

    # same seed, same design at every sd (the noise is drawn after the covariates)
    X, y, _ = wu_tjelmeland_west(300, sd, args.seed)
    Xt, _, ft = wu_tjelmeland_west(300, sd, args.seed + 1)
    cls_name, kw = SAMPLERS[name]
    with pm.Model():
        split_points, max_bins = GRIDS[grid]
        mu = pmt.BART("mu", X, y, m=1, split_points=split_points, max_bins=max_bins)
        pm.Normal("y", mu, sd, observed=y)
        idata = pm.sample(tune=args.burn, draws=args.iters, chains=1, cores=1, random_seed=args.seed,
                          step=[getattr(pmt, cls_name)([mu], **kw)], progressbar=False,
                          compute_convergence_checks=False)
    secs = float(idata.posterior.attrs["sampling_time"])
    mu_draws = idata.posterior["mu"].values[0]
    ess = min(float(bulk_ess(mu_draws[None, :, r])) for r in FIT_ROWS)
    f_test = pmt.predict(idata, Xt, "mu")[0]
    counts = np.asarray(idata.sample_stats["split_counts"].values, dtype=float).reshape(-1, X.shape[1])
    activity = counts.sum(0) / max(counts.sum(), 1.0)
    roots, unique = _trace_summary(idata)
    r13 = roots[(roots == 0) | (roots == 2)]
    return {
        "sampler": name,
        "sd": sd,
        "grid": grid,
        "test_mse": float(np.mean((f_test.mean(0) - ft) ** 2)),
        "min_ess_fit": ess,
        "ess_per_s": ess / secs,
        "sampling_s": secs,
        "activity": activity.tolist(),
        "x1_share_of_x1_x3": float(activity[0] / max(activity[0] + activity[2], 1e-12)),
        "root_x1_share": float(np.mean(r13 == 0)) if r13.size else float("nan"),
        "root_switches": int(np.sum(r13[1:] != r13[:-1])),
        "unique_trees": unique,
        "mean_leaves": float(idata.sample_stats["n_leaves"].mean()),
    }


GRID_TEXT = {
    "range": "Cut grid `range`: `split_points=\"range\", max_bins=100` (99 equally spaced cuts per covariate, "
    "BayesTree's default `usequants=FALSE, numcut=100`); about 25 cuts fall in the 0.4-0.6 gap of x1 and of x3, "
    "all giving the same partition.",
    "data": "Cut grid `data` (package default): cuts between consecutive distinct values (256 quantile bins); "
    "exactly one cut falls in each gap, so a root cut one code off the gap drags a stray row with it and "
    "the tree needs an extra split to isolate that row.",
}


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
            f"{r['root_switches']} | "
            f"{r['unique_trees']} | {r['mean_leaves']:.2f} | {r['sampling_s']:.0f} |"
        )
    lines.append("")
    tgt = [r for r in results if r["sd"] == 0.1]
    if tgt:
        lines.append("Target at sd 0.1 (x1 share in 0.3-0.7), all splits / root only:")
        lines.append("")
        for r in tgt:
            ok = 0.3 <= r["x1_share_of_x1_x3"] <= 0.7
            ok_root = 0.3 <= r["root_x1_share"] <= 0.7
            lines.append(
                f"* {r['sampler']}: all splits {r['x1_share_of_x1_x3']:.2f} ({'met' if ok else 'not met'}); "
                f"root {r['root_x1_share']:.2f} ({'met' if ok_root else 'not met'}), {r['root_switches']} switches"
            )
        lines.append("")
    return lines


def report(results: list[dict], args, argv) -> str:
    lines = [
        "# Wu, Tjelmeland & West (2007) data: one tree, equivalent roots on x1 and x3",
        "",
        f"Generated {utc_now()} by `python -m benchmarks.wu {' '.join(argv)}` (git {git_state(ROOT)}).",
        "",
        f"* Machine: {machine_info()}; versions: {package_versions()}.",
        f"* n = 300, m = 1, alpha = 0.95, beta = 2, sigma fixed at the true sd; one chain per row, "
        f"{args.burn} burn-in + {args.iters} kept iterations, seed {args.seed}, root-only start, warm numba "
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
        rows = [r for r in results if r.get("grid", "data") == grid]
        if rows:
            lines += [f"## Grid `{grid}`", "", GRID_TEXT[grid], ""] + _table(rows)
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m benchmarks.wu", description=__doc__.split("\n\n")[0])
    p.add_argument("--iters", type=int, default=20000)
    p.add_argument("--burn", type=int, default=1000)
    p.add_argument("--sds", default="0.5,1,0.1,0.01")
    p.add_argument("--samplers", default=",".join(SAMPLERS))
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--grids", default=",".join(GRIDS), help="cut grids to run: range, data (see module docstring)")
    p.add_argument("--quick", action="store_true", help="2000 + 200 iterations, sd 0.1 only")
    p.add_argument("--render", action="store_true", help="rewrite the report from the saved JSON, without running")
    args = p.parse_args(argv)
    if args.render:
        saved = json_load(RESULTS_DIR / "ct-wu.json")
        run_args = p.parse_args(saved["argv"])
        (ROOT / "docs" / "ct-wu.md").write_text(report(saved["results"], run_args, saved["argv"]))
        return 0
    if args.quick:
        args.iters, args.burn, args.sds = 2000, 200, "0.1"
    results = []
    grids = args.grids.split(",")
    bad = [g for g in grids if g not in GRIDS]
    if bad:
        p.error(f"--grids: unknown grid(s) {bad}; choose from {list(GRIDS)}")
    runs = [(g, float(x), n) for g in grids for x in args.sds.split(",") for n in args.samplers.split(",")]
    for grid, sd, name in runs:
        t = time.perf_counter()
        results.append(run_one(name, sd, grid, args))
        r = results[-1]
        print(f"{grid} sd {sd:g} {name}: root x1 {r['root_x1_share']:.2f}, switches {r['root_switches']}, "
              f"ESS {r['min_ess_fit']:.0f} ({time.perf_counter() - t:.0f} s)", file=sys.stderr, flush=True)
    suffix = "-quick" if args.quick else ""
    dump_json({"argv": argv, "results": results}, RESULTS_DIR / f"ct-wu{suffix}.json")
    text = report(results, args, argv)
    (ROOT / "docs" / f"ct-wu{suffix}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
