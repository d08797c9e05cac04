"""A first fit's wall time: import, first ``pm.sample``, first prediction, with empty and with warm caches.

    python -m benchmarks.coldstart [--arms cgm,growprune,reshape,pg,ct,pymc-bart] [--n 200] [--m 50]
        [--tune 100] [--draws 100] [--out docs/reports/coldstart.md] [--json PATH] [--timeout-min 10]
    python -m benchmarks.coldstart --render-only

Each arm runs twice, each time in a fresh process: *cold* with an empty numba cache directory (numba's
compiled kernels; PyTensor's numba backend caches there too) and an empty PyTensor compile directory, as
in a new environment (CI, a container, a hosted notebook); then *warm*, with the caches the cold run left.
Timed in the process, from before ``import pymc`` to the end of the first prediction: the imports (PyMC and
the BART package), building the model, ``pm.sample`` (2 chains on 2 cores, ``tune`` + ``draws``, the
README's model at ``n`` rows and ``m`` trees: Friedman #1, sigma ~ HalfNormal, a Normal likelihood) and the
first prediction at 100 new rows (``pmt.predict``; pymc-bart's ``pm.set_data`` then
``pm.sample_posterior_predictive(..., sample_vars=["mu"])``, its documented route in PyMC 6).

Arms: this package's step methods (``cgm`` is what ``pm.sample`` assigns; each other one is passed as
``step=``) and pymc-bart's default (PGBART).

*After the set-up* (issue 60): first, once, the README's set-up step ``python -m pymc_treesamplers.compile`` (every
sampler, in its default number of processes) in a fresh process whose user cache folder (``XDG_CACHE_HOME``) is an
empty temporary one and which has no ``NUMBA_CACHE_DIR``; its wall time is reported. Then, per arm of this package,
the same first fit in a fresh process with that user cache folder, no ``NUMBA_CACHE_DIR`` (a user's own Python,
started outside ``make``) and an empty PyTensor compile directory (so the model's own PyTensor functions compile,
as a user's first model does).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness

MODULE = "benchmarks.coldstart"
ARMS = ("cgm", "growprune", "reshape", "pg", "ct", "pymc-bart")
WHEN = ("cold", "warm", "after-setup")
STEPS = {"growprune": "GrowPruneStep", "reshape": "ReshapeStep", "pg": "PGBARTStep", "ct": "CTBirthDeathStep"}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__)
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma list from {list(ARMS)}")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--m", type=int, default=50)
    p.add_argument("--tune", type=int, default=100)
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    args = harness.parse_report_args(p, argv, "coldstart", timeout_min=10.0)
    if harness.measuring(args):
        args.arms = harness.choice_list(args.arms, ARMS, p, "arm(s)")
    return args


# =========================================================================== worker


def worker_body(spec: dict) -> dict:
    """One timed first fit in this process, or the set-up (``spec["when"] == "setup"``); the caches are the spec's
    (set before numba is imported)."""
    if spec["when"] in ("setup", "after-setup"):  # the package's own cache folder, in a user cache folder
        os.environ.pop("NUMBA_CACHE_DIR", None)
        os.environ["XDG_CACHE_HOME"] = spec["user_cache"]
    else:
        os.environ["NUMBA_CACHE_DIR"] = spec["numba_cache"]
    os.environ["PYTENSOR_FLAGS"] = f"compiledir={spec['pytensor_cache']}"
    assert "numba" not in sys.modules, "numba imported before the cache directory was set"
    t0 = time.perf_counter()
    if spec["when"] == "setup":
        from pymc_treesamplers import compile as setup

        setup.main([])
        return {"total_s": time.perf_counter() - t0}
    import numpy as np
    import pymc as pm

    if spec["arm"] == "pymc-bart":
        import pymc_bart as pkg
    else:
        import pymc_treesamplers as pkg
    from pymc_treesamplers.datasets import friedman1_train_test

    t_import = time.perf_counter() - t0
    X, y, _, X_new, _ = friedman1_train_test(spec["n"], seed=spec["seed"], n_test=100)
    t1 = time.perf_counter()
    with pm.Model() as model:
        Xd = pm.Data("X", X)
        mu = pkg.BART("mu", Xd, y, m=spec["m"])
        sigma = pm.HalfNormal("sigma", float(y.std()))
        pm.Normal("y", mu, sigma, observed=y, shape=Xd.shape[0])
        step = [getattr(pkg, STEPS[spec["arm"]])([mu])] if spec["arm"] in STEPS else None
        idata = pm.sample(tune=spec["tune"], draws=spec["draws"], chains=2, cores=2, step=step,
                          random_seed=spec["seed"], progressbar=False, compute_convergence_checks=False)
    t_sample = time.perf_counter() - t1
    t2 = time.perf_counter()
    if spec["arm"] == "pymc-bart":
        with model:
            pm.set_data({"X": X_new})
            # PyMC 6 keeps a traced variable frozen unless it is listed in sample_vars: pymc-bart's trees
            # then draw it at the new rows
            f_new = pm.sample_posterior_predictive(idata, var_names=["mu"], sample_vars=["mu"], progressbar=False,
                                                   random_seed=spec["seed"]).posterior_predictive["mu"].values
    else:
        f_new = pkg.predict(idata, X_new, "mu")
    t_predict = time.perf_counter() - t2
    assert np.isfinite(f_new).all() and f_new.shape[-1] == 100
    return {"import_s": t_import, "sample_s": t_sample, "predict_s": t_predict, "total_s": time.perf_counter() - t0}


# =========================================================================== report


def _row(arm: str, results: dict) -> list:
    runs = [results.get(f"{arm} {when}", {}) for when in WHEN]
    label = "pymc-bart 0.13 (PGBART)" if arm == "pymc-bart" else f"pymc-treesamplers {arm}"
    cells = [label]
    for r in runs:
        ok = r.get("status") == "ok"
        if not r:  # not run (pymc-bart has no set-up)
            cells += ["-", "", "", ""]
            continue
        cells += [harness.fmt(r.get("import_s")) if ok else "error", harness.fmt(r.get("sample_s")) if ok else "",
                  harness.fmt(r.get("predict_s")) if ok else "", harness.fmt(r.get("total_s")) if ok else ""]
    return cells


def render(saved: dict) -> str:
    s, res, meta = saved["settings"], saved["results"], saved["meta"]
    lines = harness.header_lines("A first fit: cold and warm start", meta,
                                 packages=harness.CORE_PACKAGES + ("pymc-bart",)) + [
        f"* The README's model (Friedman #1, sigma ~ HalfNormal, Normal likelihood) at n = {s['n']} rows, "
        f"m = {s['m']} trees; `pm.sample(tune={s['tune']}, draws={s['draws']}, chains=2, cores=2)`; then the first "
        "prediction at 100 new rows. Seconds, each run in a fresh process; *cold*: empty numba and PyTensor "
        "caches, *warm*: the caches the cold run left (`benchmarks/coldstart.py` docstring).",
        "",
        harness.md_table(["arm", "cold: import", "sample", "predict", "total", "warm: import", "sample", "predict",
                          "total", "after set-up: import", "sample", "predict", "total"],
                         [_row(a, res) for a in ARMS if f"{a} cold" in res]),
        "",
    ]
    setup = res.get("setup", {})
    if setup:
        done = harness.fmt(setup.get("total_s")) + " s" if setup.get("status") == "ok" else "**" + str(
            setup.get("status")) + "**"
        lines += [f"The set-up, `python -m pymc_treesamplers.compile` (every sampler under the Normal, Bernoulli and "
                  f"Poisson likelihoods, both cores) on empty caches: {done}.", ""]
    ref = res.get("pymc-bart cold", {})
    if ref.get("status") == "ok":
        lines += ["| arm | cold total / pymc-bart's | warm total / pymc-bart's | after set-up / pymc-bart's cold |",
                  "|---|---|---|---|"]
        ref_w = res.get("pymc-bart warm", {})
        for a in ARMS:
            c, w, b = (res.get(f"{a} {when}", {}) for when in WHEN)
            if a == "pymc-bart" or c.get("status") != "ok":
                continue
            wr = harness.fmt(w["total_s"] / ref_w["total_s"]) if w.get("status") == "ok" and ref_w.get(
                "status") == "ok" else ""
            br = harness.fmt(b["total_s"] / ref["total_s"]) if b.get("status") == "ok" else ""
            lines.append(f"| {a} | {harness.fmt(c['total_s'] / ref['total_s'])} | {wr} | {br} |")
        lines.append("")
    errors = [f"* {k}: {v.get('error', '')[:300]}" for k, v in res.items() if v.get("status") != "ok"]
    if errors:
        lines += ["Errors:", "", *errors, ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv, args, code = harness.start(argv, parse_args, worker_body)
    if code is not None:
        return code
    settings = {k: getattr(args, k) for k in ("n", "m", "tune", "draws", "seed")}
    runs = []
    with tempfile.TemporaryDirectory(prefix="coldstart_") as tmp:
        user_cache = str(Path(tmp) / "user-cache")
        if any(a != "pymc-bart" for a in args.arms):
            runs.append(("setup", {"arm": "setup", "when": "setup", **settings, "user_cache": user_cache,
                                   "pytensor_cache": str(Path(tmp) / "setup-pt")}))
        for arm in args.arms:
            caches = {"numba_cache": str(Path(tmp) / arm / "numba"), "pytensor_cache": str(Path(tmp) / arm / "pt")}
            spec = {"arm": arm, **settings, **caches}
            runs += [(f"{arm} cold", {**spec, "when": "cold"}), (f"{arm} warm", {**spec, "when": "warm"})]
            if arm != "pymc-bart":
                runs.append((f"{arm} after-setup", {**spec, "when": "after-setup", "user_cache": user_cache,
                                                     "pytensor_cache": str(Path(tmp) / arm / "pt-after")}))
        done = harness.run_specs(MODULE, args, runs, lambda r: f"total {r.get('total_s', float('nan')):.1f} s")
        shutil.rmtree(tmp, ignore_errors=True)
    return harness.finish(MODULE, argv, args, settings, {name: r for (name, _), r in zip(runs, done, strict=True)},
                          render)


if __name__ == "__main__":
    sys.exit(main())
