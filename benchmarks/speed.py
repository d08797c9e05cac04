"""Before/after speed of the tree samplers: two (or more) checkouts of the package side by side.

    python -m benchmarks.speed --src before=/path/to/old/checkout --src after=/work/main [--repeats 3]
        [--cases growprune,cgm,reshape,ct,pg] [--quick] [--json PATH] [--out PATH] [--timeout-min 20]
    python -m benchmarks.speed --render-only [--json PATH]

Cases:

* ``growprune-big``: the same GrowPrune chain at n = 10^6 on 2 threads (``threads=2``), tune = 4 + draws = 8:
  where the passes over rows dominate a sweep and run on the thread pool.
* ``growprune``, ``cgm``, ``reshape``, ``ct`` (each step's defaults): Friedman #1 (``friedman1_train_test``,
  seed 1234), n = 10,000, p = 10, m = 200, sigma fixed (``pm.Normal("y", mu, 1.0, observed=y)``), so a draw
  is one BART sweep and nothing else; one chain, cores = 1; an untimed warm-up (numba compile / cache load), then
  tune = 20 + draws = 100. Reported: seconds per sweep inside the step method over the 100 kept
  draws (median, which shrugs off bursts of other processes' work, and mean), and per tree (÷ m).
* ``pg``: the hypercube benchmark's PG arm (protocol of ``benchmarks.pg_paper``): D = 4, beta =
  0.4, m = 1, ``PGBARTStep`` with 10 particles, sigma^2 by NUTS, 300 iterations (150 burn-in)
  after the 3 + 3 warm-up. Reported: ms per iteration inside the BART step (median and mean over
  all 300), and for the whole iteration (BART step + NUTS step, mean).

Every (repeat, case, source) runs in its own child process that imports ``pymc_treesamplers``
from its source tree (``harness.run_worker(src=...)``: PYTHONPATH, checked in the child). The runs
of the trees are interleaved, their order alternating between repeats, so that they share the
machine's noise. The data are generated once, here, and handed to every child: all trees fit the
same arrays whatever their own ``datasets`` module holds. The table gives the median over repeats
[min–max] per tree and each tree's ratio to the first (median of the per-repeat ratios, which pair
runs made next to each other).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import harness, pg_paper
from benchmarks.harness import fmt, md_table
from benchmarks.instrument import StepRecorder, stat

MODULE = "benchmarks.speed"
CASES = ("growprune", "cgm", "reshape", "ct", "pg", "growprune-big")
STEP_CLASSES = {"growprune": "GrowPruneStep", "cgm": "CGMStep", "reshape": "ReshapeStep", "ct": "CTBirthDeathStep",
                "growprune-big": "GrowPruneStep"}
NAMES = {"growprune": "GrowPrune", "cgm": "CGM", "reshape": "Reshape", "ct": "CT birth-death (horizon 1)"}
FULL = {"n": 10_000, "m": 200, "tune": 20, "draws": 100, "D": 4, "pg_iters": 300, "big_n": 10**6, "big_threads": 2,
        "big_tune": 4, "big_draws": 8}
QUICK = {"n": 1000, "m": 50, "tune": 5, "draws": 20, "D": 4, "pg_iters": 60, "big_n": 40_000, "big_threads": 2,
         "big_tune": 2, "big_draws": 3}
SEED = 1234
PG_PARTICLES = 10


# =========================================================================== worker


def _sweeps(spec: dict, data, pmt) -> dict:
    """Seconds per BART sweep with sigma fixed: the step method's own time over the kept draws."""
    import pymc as pm

    cls = getattr(pmt, STEP_CLASSES[spec["case"]])
    threads = spec.get("threads", 1)
    run = {"chains": 1, "cores": 1, "random_seed": SEED, "progressbar": False, "compute_convergence_checks": False}
    with pm.Model():
        mu = pmt.BART("mu", data["X"], data["y"], m=spec["m"])
        pm.Normal("y", mu, 1.0, observed=data["y"])
        t = time.perf_counter()
        pm.sample(tune=2, draws=2, step=[cls([mu], threads=threads)], **run)  # untimed: compile / cache load
        warmup_s = time.perf_counter() - t
        step = cls([mu], threads=threads)
        rec = StepRecorder(step)
        idata = pm.sample(tune=spec["tune"], draws=spec["draws"], step=[step], **run)
    if len(rec.seconds) != spec["tune"] + spec["draws"]:
        raise RuntimeError(f"BART step ran {len(rec.seconds)} times, expected {spec['tune'] + spec['draws']}")
    secs = np.asarray(rec.seconds[spec["tune"] :])
    return {
        "warmup_s": warmup_s,
        "sampling_s": float(idata.posterior.attrs["sampling_time"]),
        "s_per_sweep": float(secs.mean()),
        "s_per_sweep_median": float(np.median(secs)),
        "ms_per_tree_median": float(np.median(secs)) / spec["m"] * 1e3,
        "sweep_seconds": secs.tolist(),
        "mean_leaves": float(stat(idata.sample_stats, "n_leaves").mean()),
    }


def _pg(spec: dict, data) -> dict:
    """The hypercube benchmark's PG chain: ms per iteration, inside the BART step and in all."""
    kw = {"sampler": "pg", "m": 1, "alpha": 0.95, "beta": spec["beta"], "particles": PG_PARTICLES}
    warmup_s = pg_paper.warmup(data["X"], data["y"], data["X_test"], **kw)
    burn = spec["iters"] // 2
    fit = pg_paper.fit_bart(data["X"], data["y"], data["X_test"], burn=burn, draws=spec["iters"] - burn, seed=1, **kw)
    keep = ("sampling_s", "ms_per_iter", "bart_step_ms_per_iter", "bart_step_ms_median")
    return {"warmup_s": warmup_s, **{k: fit[k] for k in keep}}


def worker_body(spec: dict) -> dict:
    import pymc_treesamplers as pmt

    src = Path(spec["src"]).resolve()
    if not Path(pmt.__file__).resolve().is_relative_to(src):
        raise RuntimeError(f"pymc_treesamplers was imported from {pmt.__file__}, not from {src}")
    data = dict(np.load(spec["data"]))
    timing = _pg(spec, data) if spec["case"] == "pg" else _sweeps(spec, data, pmt)
    return {"pmt_file": pmt.__file__, **timing}


# =========================================================================== report


def _case_label(case: str, st: dict) -> str:
    if case == "pg":
        return f"PG ({PG_PARTICLES} particles), hypercube D = {st['D']}, m = 1, {st['pg_iters']} iterations"
    if case == "growprune-big":
        return (f"GrowPrune, Friedman #1 n = {st['big_n']:,}, {st['big_threads']} threads, m = {st['m']}, σ fixed, "
                f"{st['big_draws']} timed sweeps")
    name = NAMES[case]
    return f"{name}, Friedman #1 n = {st['n']:,}, m = {st['m']}, σ fixed, {st['draws']} timed sweeps"


# medians of the per-draw times shrug off bursts of other processes' work; means for the record
MEASURES = {
    "growprune": [
        ("s / sweep, median", "s_per_sweep_median"),
        ("ms / tree, median", "ms_per_tree_median"),
        ("s / sweep, mean", "s_per_sweep"),
    ],
    "pg": [
        ("BART ms / iteration, median", "bart_step_ms_median"),
        ("BART ms / iteration, mean", "bart_step_ms_per_iter"),
        ("ms / iteration with NUTS, mean", "ms_per_iter"),
    ],
}
MEASURES["cgm"] = MEASURES["reshape"] = MEASURES["ct"] = MEASURES["growprune-big"] = MEASURES["growprune"]


def _cell(vals: list[float]) -> str:
    if not vals:
        return "—"
    if len(vals) == 1:
        return fmt(vals[0])
    return f"{fmt(float(np.median(vals)))} [{fmt(min(vals))}–{fmt(max(vals))}]"


def render(saved: dict) -> str:
    """Table of the saved comparison: per source, median [min–max] over repeats; ratios to the first source."""
    st, results = saved["settings"], saved["results"]
    labels = [s["label"] for s in st["sources"]]
    ok = [r for r in results if r.get("status") == "ok"]
    headers = ["case", "time", *labels, *(f"{b} ÷ {labels[0]}" for b in labels[1:])]
    rows = []
    for case in st["cases"]:
        for i, (what, key) in enumerate(MEASURES[case]):
            by = {
                lab: {
                    r["spec"]["repeat"]: r[key] for r in ok if r["spec"]["case"] == case and r["spec"]["label"] == lab
                }
                for lab in labels
            }
            cells = [_cell(list(by[lab].values())) for lab in labels]
            ratios = []
            for lab in labels[1:]:
                paired = [by[lab][k] / by[labels[0]][k] for k in by[lab] if k in by[labels[0]]]
                ratios.append(_cell(paired))
            rows.append([_case_label(case, st) if i == 0 else "", what, *cells, *ratios])
    lines = harness.header_lines("Tree sampler speed, side by side", saved["meta"])
    lines += [
        f"* Source `{s['label']}`: `{s['path']}` (git {s['git'] or '?'}, source {s['hash']})." for s in st["sources"]
    ]
    lines += [
        f"* {st['repeats']} repeat(s); every run in its own process, runs of the sources interleaved (order "
        "alternating between repeats); numba cache warm (untimed warm-up in each process).",
        "",
        md_table(headers, rows),
        "",
    ]
    notes = [
        f"* {r['spec']['case']} `{r['spec']['label']}` repeat {r['spec']['repeat']}: {note}"
        for r in ok
        if (note := harness.contention_note(r))
    ]
    notes += [
        f"* {r['spec']['case']} `{r['spec']['label']}` repeat {r['spec']['repeat']}: **{r.get('status')}**: "
        f"{(r.get('error') or '').splitlines()[0] if r.get('error') else ''}"
        for r in results
        if r.get("status") != "ok"
    ]
    if notes:
        lines += notes + [""]
    return "\n".join(lines + harness.report_footer(saved))


# =========================================================================== parent


def _write_data(st: dict, path: Path) -> None:
    """The arrays every child fits, from this checkout's generators."""
    from pymc_treesamplers.datasets import friedman1_train_test, hypercube

    X, y, _, _, _ = friedman1_train_test(st["n"], SEED)
    np.savez(path / "friedman.npz", X=X, y=y)
    if "growprune-big" in st["cases"]:
        X, y, _, _, _ = friedman1_train_test(st["big_n"], SEED)
        np.savez(path / "friedman-big.npz", X=X, y=y)
    Xh, yh, _, Xh_test, fh_test = hypercube(st["D"], 0)
    np.savez(path / "hypercube.npz", X=Xh, y=yh, X_test=Xh_test, f_test=fh_test)


def _source(text: str, parser: argparse.ArgumentParser) -> dict:
    label, sep, path = text.partition("=")
    root = Path(path).expanduser().resolve()
    if not sep or not label:
        parser.error(f"--src expects LABEL=PATH, got {text!r}")
    if not (root / "pymc_treesamplers" / "__init__.py").exists():
        parser.error(f"--src {label}: {root} holds no pymc_treesamplers package")
    return {"label": label, "path": str(root), "git": harness.git_state(root), "hash": harness.source_hash(root)}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__)
    p.add_argument("--src", action="append", default=[], metavar="LABEL=PATH", help="a checkout to time; repeat")
    p.add_argument("--repeats", type=int, default=None, help="runs per (case, source) (default 3; --quick 1)")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma list from {list(CASES)}")
    p.add_argument("--quick", action="store_true", help="smoke run: n = 1000, m = 50, 5 + 20 sweeps, PG 60 iterations")
    harness.add_harness_args(p, timeout_min=20.0, out_default="none, the table is printed")
    args = p.parse_args(argv)
    explicit_out = args.out
    harness.resolve_report_paths(args, "speed" + ("-quick" if args.quick else ""))
    if not args.render_only:
        args.out = args.out if explicit_out else None  # the table is printed; a markdown file only on request
    if args.worker is not None or args.render_only:
        return args
    args.sources = [_source(s, p) for s in args.src]
    if not args.sources:
        p.error("give at least one --src LABEL=PATH (two to compare)")
    if len({s["label"] for s in args.sources}) != len(args.sources):
        p.error("--src labels must differ")
    args.cases = harness.choice_list(args.cases, CASES, p, "case(s)")
    args.repeats = args.repeats or (1 if args.quick else 3)
    return args


def _describe(res: dict) -> str:
    key = MEASURES[res["spec"]["case"]][0][1]
    return f"{key} {res[key]:.4g}"


def main(argv: list[str] | None = None) -> int:
    argv, args, code = harness.start(argv, parse_args, worker_body)
    if code is not None:
        return code
    st = harness.chosen_settings(args, QUICK, FULL, repeats=args.repeats, cases=args.cases)
    st["sources"] = args.sources
    with tempfile.TemporaryDirectory(prefix="speed_") as tmp:
        _write_data(st, Path(tmp))
        runs = []
        for rep in range(args.repeats):  # the trees' order alternates, so both see the same drift
            for case in args.cases:
                for src in args.sources if rep % 2 == 0 else args.sources[::-1]:
                    spec = {"case": case, "label": src["label"], "src": src["path"], "repeat": rep}
                    if case == "pg":
                        spec.update(data=str(Path(tmp) / "hypercube.npz"), beta=0.4, iters=st["pg_iters"])
                    elif case == "growprune-big":
                        spec.update(data=str(Path(tmp) / "friedman-big.npz"), m=st["m"], tune=st["big_tune"],
                                    draws=st["big_draws"], threads=st["big_threads"],
                                    env_threads=st["big_threads"])
                    else:
                        spec.update(data=str(Path(tmp) / "friedman.npz"), m=st["m"], tune=st["tune"],
                                    draws=st["draws"])
                    runs.append((f"{rep} {case} {src['label']}", spec))
        results = harness.run_specs(MODULE, args, runs, _describe, src_key="src")
    return harness.finish(MODULE, argv, args, st, results, render)


if __name__ == "__main__":
    sys.exit(main())
