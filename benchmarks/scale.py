"""Scale: seconds per sweep and peak memory from 10^4 to 10^7 rows, 1 and 2 threads, against stochtree and pymc-bart.

    python -m benchmarks.scale [--quick] [--sizes 1e4,1e5,1e6,1e7]
        [--arms pmt-1,pmt-2,readme-cgm-1,...,stochtree-1,stochtree-2,pymc-bart]
        [--thread-env pinned,none,numba-omp,others-1]
        [--out docs/reports/scale-benchmark.md] [--json PATH]
    python -m benchmarks.scale --render-only [--quick | --json PATH]

Issue 17's protocol: Friedman #1 (``datasets.friedman1_train_test``, seed 1234) with n = 10^4, 10^5,
10^6 and 10^7 training rows, p = 10, m = 200 trees, one chain; every arm of one n in one run, each in
its own child process (``benchmarks.harness``: peak memory of the process tree, other load on the
machine), children one after the other:

* ``pmt-1``, ``pmt-2``: ``pmt.GrowPruneStep([mu], threads=1 or 2)`` and ``sigma2 ~ InverseGamma``
  (Chipman's prior) by its conjugate draw (``pmt.NormalScaleGibbs``, assigned by ``pm.sample``), the
  same model as stochtree's; ``pm.sample(chains=1, tune=B, draws=K, var_names=["sigma2"])``: the
  BART variable itself is not stored (n floats per draw; predictions come from the stored forests).
  Seconds per sweep: the median over the K kept iterations of the time between PyMC's per-draw
  callbacks (the whole iteration: tree sweep, sigma draw, PyMC's bookkeeping).
* ``stochtree-1``, ``stochtree-2``: ``BARTModel.sample`` with ``num_threads`` 1 or 2, grow/prune MCMC
  from single-leaf trees (``num_gfr=0``), sigma^2 by its Gibbs draw. Seconds per sweep: it reports no
  per-sweep times, so two fits in the same process, with B and B + K sweeps, and the difference of
  their wall times over K (its set-up and burn-in, run twice, cancel): the same sweeps as ours.
* ``readme-1``: the README's model as a user writes it, ``pmt.BART("mu", X, y, m=200)``, ``sigma ~
  HalfNormal(y.std())``, ``pm.Normal("y", mu, sigma)``, and ``pm.sample`` with its automatic step
  assignment (CGMStep for the trees, NormalScaleGibbs's slice update for sigma) and its default trace
  (the BART variable stored); the median time between callbacks (issue 27: at most 0.6x stochtree's
  sweep at 10^6 rows, 1 thread).
* ``readme-<step>-<threads>``: the same model and trace with the tree step given, ``cgm``, ``growprune``,
  ``reshape`` or ``pg`` (``pmt.CGMStep([mu], threads=t)``, ...), sigma still assigned by ``pm.sample``;
  with ``t`` = 1 and 2 (and the process's thread pools at ``t``), what threads buy each sampler on the
  README's model (issue 45: 2 threads >= 1.6x at 10^6 rows): ``make bench-threads``.
* ``--thread-env``: the thread variables each arm runs under (``benchmarks.harness.THREAD_ENVS``): ``pinned``
  (the default: numba's, OpenMP's and BLAS's at the arm's count), ``none`` (none set), ``numba-omp`` (numba's
  and OpenMP's at the count, BLAS's unset) and ``others-1`` (OpenMP and BLAS pinned to 1, as a user does for
  other libraries; numba's unset); every arm under each, so a table shows what threads buy as users set the
  variables (issue 60: ``make bench-threads-env``).
* ``pymc-bart``: its PGBART step (1 thread; no thread option) with sigma by NUTS, at n <= 10^5 only
  (it keeps every particle's prediction of every row: at 10^6 rows that is out of reach); the
  median time between callbacks.

B = 20, K = 30 at n <= 10^5; B = 20, K = 10 at 10^6; B = 5, K = 5 at 10^7; PG (it redraws every tree
whole, about 20 s a sweep at 10^6 rows) B = 3, K = 5 from 10^6 (``--quick``: n = 10^4 and 10^5, B = 5,
K = 10). A sweep's cost grows in the first sweeps, as the trees grow, then levels off.
A child whose process tree passes 20 GB of resident memory is stopped and reported as over the
limit (the machine has 24 GB).

The same draws with 1 and 2 threads are a test (``tests/test_rows.py``), not a benchmark.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.scale"
# the README's model with each tree step given explicitly, on 1 and 2 threads (issue 45's threads table)
README_STEPS = {"cgm": "CGMStep", "growprune": "GrowPruneStep", "reshape": "ReshapeStep", "pg": "PGBARTStep"}
README_ARMS = [f"readme-{s}-{t}" for s in README_STEPS for t in (1, 2)]
ARMS = ["pmt-1", "pmt-2", "readme-1", *README_ARMS, "stochtree-1", "stochtree-2", "pymc-bart"]
LABELS = {"pmt-1": "pmt GrowPrune, 1 thread", "pmt-2": "pmt GrowPrune, 2 threads",
          "readme-1": "pmt, the README's model and pm.sample's step assignment, 1 thread",
          **{f"readme-{s}-{t}": f"pmt, the README's model, {README_STEPS[s]}(threads={t})"
             for s in README_STEPS for t in (1, 2)},
          "stochtree-1": "stochtree, 1 thread", "stochtree-2": "stochtree, 2 threads",
          "pymc-bart": "pymc-bart (PGBART)"}
PG_SWEEPS_FROM = 10**6  # PG redraws every tree whole: ~20 s a sweep at 10^6 rows, so fewer sweeps there
SIZES = [10**4, 10**5, 10**6, 10**7]
SEED, M, P = 1234, 200, 10
PYMC_BART_MAX_N = 10**5
MEM_LIMIT_MB = 20 * 1024
# targets of issue 17
RATIO_TARGET, RATIO_FROM = 0.6, 10**5
SPEEDUP_TARGET, SPEEDUP_FROM = 1.6, 10**6
MEM_TARGET_GB, MEM_AT = 16.0, 10**7


def sweeps_for(n: int, quick: bool, arm: str = "") -> tuple[int, int]:
    """(burn-in B, kept K) sweeps at ``n`` rows (fewer for PG from :data:`PG_SWEEPS_FROM` rows)."""
    if quick:
        return 5, 10
    if arm.startswith("readme-pg") and n >= PG_SWEEPS_FROM:
        return 3, 5
    if n >= 10**7:
        return 5, 5
    return (20, 10) if n >= 10**6 else (20, 30)


def _data(n: int):
    from pymc_treesamplers.datasets import friedman1_train_test

    X, y, _, _, _ = friedman1_train_test(n, SEED, n_test=10, p=P)
    return X, y


def _fit_pymc(spec: dict, X, y) -> dict:
    import pymc as pm

    stamps: list[float] = []
    arm = spec["arm"]
    with pm.Model():
        if arm == "pymc-bart":
            import pymc_bart

            mu = pymc_bart.BART("mu", X, y, m=M)
            sigma = pm.HalfNormal("sigma", float(y.std()))
            pm.Normal("y", mu, sigma, observed=y)
            keep, step = ["sigma"], None
        elif arm.startswith("readme"):
            import pymc_treesamplers as pmt

            mu = pmt.BART("mu", X, y, m=M)
            sigma = pm.HalfNormal("sigma", float(y.std()))
            pm.Normal("y", mu, sigma, observed=y)
            keep, step = None, None
            if arm != "readme-1":  # readme-<step>-<threads>: the tree step given, sigma still assigned
                step = [getattr(pmt, README_STEPS[arm.split("-")[1]])([mu], threads=spec["threads"])]
        else:
            import pymc_treesamplers as pmt

            mu = pmt.BART("mu", X, y, m=M)
            a, b = pmt.chipman_sigma2_prior(X, y)
            sigma2 = pm.InverseGamma("sigma2", a, b)
            pm.Normal("y", mu, pm.math.sqrt(sigma2), observed=y)
            keep, step = ["sigma2"], [pmt.GrowPruneStep([mu], threads=spec["threads"])]
        t0 = time.perf_counter()
        pm.sample(tune=spec["tune"], draws=spec["draws"], chains=1, cores=1, random_seed=SEED, step=step,
                  var_names=keep, progressbar=False, compute_convergence_checks=False,
                  callback=lambda trace, draw: stamps.append(time.perf_counter()))
        wall = time.perf_counter() - t0
    gaps = np.diff(stamps)[spec["tune"]:]  # the kept iterations (the callback sees tuning draws too)
    return {"sweep_s": float(np.median(gaps)), "sweep_s_mean": float(gaps.mean()), "wall_s": wall,
            "sweeps": len(stamps)}


def _stochtree_wall(X, y, sweeps: int, threads: int) -> float:
    from stochtree import BARTModel

    t0 = time.perf_counter()
    BARTModel().sample(X_train=X, y_train=y, num_gfr=0, num_burnin=0, num_mcmc=sweeps,
                       general_params={"num_chains": 1, "random_seed": SEED, "num_threads": threads},
                       mean_forest_params={"num_trees": M})
    return time.perf_counter() - t0


def _fit_stochtree(spec: dict, X, y) -> dict:
    short = _stochtree_wall(X, y, spec["tune"], spec["threads"])
    long = _stochtree_wall(X, y, spec["tune"] + spec["draws"], spec["threads"])
    return {"sweep_s": (long - short) / spec["draws"], "wall_s": short + long, "setup_and_burnin_s": short,
            "sweeps": 2 * spec["tune"] + spec["draws"]}


def worker_body(spec: dict) -> dict:
    t0 = time.perf_counter()
    X, y = _data(spec["n"])
    data_s = time.perf_counter() - t0
    out = (_fit_stochtree if spec["arm"].startswith("stochtree") else _fit_pymc)(spec, X, y)
    return {"data_s": data_s, **out}


def describe(res: dict) -> str:
    return f"{res['sweep_s']:.3f} s per sweep, peak {res['peak_rss_sum_mb'] / 1024:.2f} GB"


def _env(r: dict) -> str:
    return r["spec"].get("thread_env", "pinned")


def _label(sp: dict) -> str:
    env = sp.get("thread_env", "pinned")
    return LABELS[sp["arm"]] + ("" if env == "pinned" else f", thread variables: {env}")


def _ok(r) -> bool:
    return bool(r) and r.get("status") == "ok"


def _status(r: dict) -> str:
    if r.get("mem_limit_hit"):
        return f"**over {MEM_LIMIT_MB / 1024:.0f} GB**"
    return f"**{r.get('status')}**"


def render(saved: dict) -> str:
    st = saved["settings"]
    lines = harness.header_lines(harness.smoke_title("Scale: rows, threads and memory", st),
                                 saved["meta"], runs=saved["results"])
    lines += [
        f"* Friedman #1, p = {P}, m = {M}, one chain, seed {SEED}; sweeps per arm as in the protocol "
        "(`benchmarks/scale.py` docstring): seconds per sweep in the steady state (median over the kept "
        "sweeps, after burn-in; stochtree's by the difference of two fits); peak memory = summed resident "
        "memory of the child's process tree (data, model, sampler, trace).",
    ]
    arms = {r["spec"]["arm"] for r in saved["results"]}
    envs = list(dict.fromkeys(_env(r) for r in saved["results"]))
    if arms & {"pmt-1", "pmt-2"}:
        lines.append("* pmt arms: GrowPrune and sigma^2 by its conjugate draw, the BART variable not stored in the "
                     "trace (`var_names=['sigma2']`; docs/scale.md).")
    if arms & set(README_ARMS):
        lines.append("* README arms: `sigma ~ HalfNormal(y.std())`, `pm.Normal` likelihood, the tree step given with "
                     "`threads=` 1 or 2, sigma assigned by `pm.sample`, the default trace (the BART value stored); "
                     "the process's thread pools (numba, BLAS, OpenMP) at the arm's thread count"
                     + (" unless its thread variables say otherwise (below)." if envs != ["pinned"] else "."))
    if envs != ["pinned"]:
        lines.append("* Thread variables (`--thread-env`, `benchmarks.harness.THREAD_ENVS`): `pinned` numba's, "
                     "OpenMP's and BLAS's at the arm's count; `none` none set; `numba-omp` NUMBA_NUM_THREADS and "
                     "OMP_NUM_THREADS at the count, BLAS's unset; `others-1` OpenMP's and BLAS's at 1, numba's unset.")
    lines.append("")
    by = {(r["spec"]["n"], r["spec"]["arm"], _env(r)): r for r in saved["results"]}
    rows = []
    for r in saved["results"]:
        sp = r["spec"]
        if not _ok(r):
            rows.append([f"{sp['n']:.0e}", _label(sp), _status(r), "", "",
                         fmt(r.get("peak_rss_sum_mb", 0) / 1024)])
            continue
        ref = (by.get((sp["n"], "stochtree-" + sp["arm"][-1], _env(r))) if sp["arm"].startswith(("pmt", "readme"))
               else None)
        ratio = fmt(r["sweep_s"] / ref["sweep_s"]) if _ok(ref) else ""
        rows.append([f"{sp['n']:.0e}", _label(sp), fmt(r["sweep_s"]), ratio, fmt(r["wall_s"]),
                     fmt(r["peak_rss_sum_mb"] / 1024)])
    lines += [md_table(["n", "arm", "s per sweep", "x stochtree (same threads)", "wall s", "peak GB"], rows), ""]
    lines += [("## Targets (issues 45 and 60)" if envs != ["pinned"] else "## Targets (issue 45)")
              if arms & set(README_ARMS) else "## Targets (issues 17 and 27)", ""]
    targets = []
    for n in st["sizes"]:
        for arm, t in (("pmt", 1), ("pmt", 2), ("readme", 1)):
            ours, ref = by.get((n, f"{arm}-{t}", "pinned")), by.get((n, f"stochtree-{t}", "pinned"))
            what = "the README's model" if arm == "readme" else f"{t} thread(s)"
            if n >= RATIO_FROM and _ok(ours):
                if _ok(ref):
                    q = ours["sweep_s"] / ref["sweep_s"]
                    targets.append([f"n = {n:.0e}, {what}: per sweep <= {RATIO_TARGET}x stochtree", fmt(q),
                                    "✅ met" if q <= RATIO_TARGET else "❌ not met"])
                elif ref:
                    targets.append([f"n = {n:.0e}, {what}: per sweep <= {RATIO_TARGET}x stochtree",
                                    f"stochtree: {_status(ref)}", "stochtree did not run"])
        one, two = by.get((n, "pmt-1", "pinned")), by.get((n, "pmt-2", "pinned"))
        for env in envs:
            where = "" if env == "pinned" else f", thread variables: {env}"
            for a, b, what in [("pmt-1", "pmt-2", "")] + [(f"readme-{s}-1", f"readme-{s}-2",
                                                           f", README model, {step}")
                                                          for s, step in README_STEPS.items()]:
                r1, r2 = by.get((n, a, env)), by.get((n, b, env))
                if not (_ok(r1) and _ok(r2)):
                    continue
                s = r1["sweep_s"] / r2["sweep_s"]
                if n >= SPEEDUP_FROM:
                    targets.append([f"n = {n:.0e}{what}{where}: 2 threads >= {SPEEDUP_TARGET}x faster than 1",
                                    fmt(s), "✅ met" if s >= SPEEDUP_TARGET else "❌ not met"])
                elif envs != ["pinned"]:  # issue 60: a second thread never costs, at any n
                    targets.append([f"n = {n:.0e}{what}{where}: 2 threads not slower than 1", fmt(s),
                                    "✅ met" if s >= 1.0 else "❌ not met"])
        if n == MEM_AT and (one or two):
            peak = max((r.get("peak_rss_sum_mb", 0) for r in (one, two) if r), default=0) / 1024
            fits = all(_ok(r) for r in (one, two) if r) and peak <= MEM_TARGET_GB
            targets.append([f"n = {n:.0e}, one chain: fits in {MEM_TARGET_GB:.0f} GB", f"{peak:.2f} GB",
                            "✅ met" if fits else "❌ not met"])
    lines += [md_table(["target", "measured", "verdict"], targets) if targets else "(no target measured)", ""]
    return "\n".join(lines + harness.report_footer(saved, lambda sp: f"n = {sp['n']:.0e} {sp['arm']}"
                                                       + (f" {sp['thread_env']}" if "thread_env" in sp else "")))


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__, quick_help="smoke run: n = 1e4 and 1e5, 5 + 10 sweeps")
    p.add_argument("--sizes", default=None, help="comma list of n (default 1e4,1e5,1e6,1e7)")
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma list from {ARMS}")
    p.add_argument("--thread-env", default="pinned",
                   help=f"comma list of the thread variables each arm runs under, from {list(harness.THREAD_ENVS)}")
    args = harness.parse_report_args(p, argv, "scale-benchmark", timeout_min=60.0)
    if not harness.measuring(args):
        return args
    sizes = args.sizes or ("1e4,1e5" if args.quick else ",".join(map(str, SIZES)))
    args.sizes = [int(float(s)) for s in sizes.split(",")]
    args.arms = harness.choice_list(args.arms, ARMS, p, "arm(s)")
    args.thread_env = harness.choice_list(args.thread_env, list(harness.THREAD_ENVS), p, "thread setting(s)")
    return args


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    envs = getattr(args, "thread_env", ["pinned"])
    settings = {"quick": args.quick, "sizes": args.sizes, "arms": args.arms, "thread_env": envs}
    runs = []
    for n in args.sizes:
        for env in envs:
            for arm in args.arms:
                tune, draws = sweeps_for(n, args.quick, arm)
                if arm == "pymc-bart" and n > PYMC_BART_MAX_N:
                    continue
                threads = int(arm[-1]) if arm[-1].isdigit() else 1
                # the thread pools of numba, OpenMP, BLAS may use this many (under env's variables)
                spec = {"n": n, "arm": arm, "threads": threads, "tune": tune, "draws": draws,
                        "mem_limit_mb": MEM_LIMIT_MB, "env_threads": threads}
                if env != "pinned":
                    spec["thread_env"] = env
                runs.append((f"n={n:.0e} {arm}" + ("" if env == "pinned" else f" {env}"), spec))
    return settings, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, describe, render, plan)


if __name__ == "__main__":
    raise SystemExit(main())
