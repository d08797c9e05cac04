"""How far one tree's update moves σ's conditional: what a joint move of a tree and σ could gain (issue 59, item 3).

    python -m benchmarks.sigma_ridge [--quick] [--cases boston-50,boston-200,friedman,california,marketing]
        [--out docs/reports/sigma-ridge.md] [--json PATH]
    python -m benchmarks.sigma_ridge --render-only [--json PATH]

A joint proposal that changes one tree and moves log σ with it helps only where the tree's move changes which σ
the data want: given the trees, log σ under a Normal likelihood with ``n`` rows has a conditional whose mode is
``log sqrt(RSS / n)`` and whose sd is close to ``s = 1 / sqrt(2 n)`` (the prior is flat on that scale). A tree update
that takes the residual sum of squares from ``RSS`` to ``RSS'`` shifts the mode by ``d = log(RSS' / RSS) / 2``. The
σ part of a joint move's ratio can add at most, on average, the Kullback-Leibler divergence between the two
conditionals, ``d^2 / (2 s^2)`` nats, to the log acceptance of the same tree move with σ held; a move whose
``|d| / s`` is small sees the same σ either way.

Each run is one chain of the benchmark's model (benchmarks/mechanisms.py's ``_problem``: ``pmt.BART`` with the
case's ``m``, ``sigma ~ HalfNormal(sd(y))``, the default CGM step; ``aimed``: with ``aimed_twigs=0.3``, the twig
move that fits misfit rows), σ by the package's slice update once a sweep, 1,000 sweeps to settle and then
``K`` sweeps (500; ``--quick`` 50) in which every tree is swept on its own (``Chain.sweep(trees=(j, j + 1))``) and
``RSS`` read before and after it. Reported over the updates that changed a tree's structure (every update
redraws the leaves): ``|d| / s`` and the bound ``d^2 / (2 s^2)`` (median, 99% and max), and over whole sweeps
``|d| / s`` of the sweep's total shift. Only
accepted changes are seen (a rejected proposal's ``RSS'`` stays inside the kernel); for a proposal the likelihood
at a fixed σ already weighs it by ``exp(-(RSS' - RSS) / (2 sigma^2))``, and the joint move's gain relative to that
term is ``(RSS' - RSS) / (2 RSS)``: a few percent for any change one tree of ``m`` makes to a fit of hundreds of
rows.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.sigma_ridge"
# case name -> (data set of benchmarks/mixing.py's load_case, m)
CASES = {"boston-50": ("boston", 50), "boston-200": ("boston", 200), "friedman": ("friedman", 200),
         "california": ("california", 200), "marketing": ("marketing", 200)}
ARMS = {"cgm": 0.0, "aimed": 0.3}
FULL = {"settle": 1000, "sweeps": 500}
QUICK = {"settle": 100, "sweeps": 50}
SEED = 7


def worker_body(spec: dict) -> dict:
    from benchmarks.mechanisms import _log_sigma_density, _problem
    from pymc_treesamplers.engine.records import Pseudo
    from pymc_treesamplers.steps.scale import slice_update

    data, m = CASES[spec["case"]]
    step, y, _, _ = _problem(data, m, aimed=ARMS[spec["arm"]])
    rng = np.random.default_rng(SEED)
    n, scale = y.size, float(y.std())
    chain = step.outputs[0].chain
    chain.start()
    f = np.empty(n)
    chain.fit(f)
    r = y - f  # the running residual every sweep updates in place
    log_sigma = np.log(scale)
    t0 = time.perf_counter()
    for _ in range(spec["settle"]):
        chain.sweep(rng, Pseudo(r, np.array([np.exp(-2.0 * log_sigma)]), 1))
        log_sigma, _ = slice_update(rng, log_sigma, _log_sigma_density(scale, n, float(r @ r), 1.0), 0.5)
    tree_shift, sweep_shift, updates = [], [], 0
    for _ in range(spec["sweeps"]):
        pseudo = Pseudo(r, np.array([np.exp(-2.0 * log_sigma)]), 1)
        start = before = float(r @ r)
        for j in range(m):
            chain.sweep(rng, pseudo, trees=(j, j + 1))
            after = float(r @ r)
            updates += 1
            if chain.changed[j]:
                tree_shift.append(0.5 * np.log(after / before))
            before = after
        sweep_shift.append(0.5 * np.log(before / start))
        log_sigma, _ = slice_update(rng, log_sigma, _log_sigma_density(scale, n, before, 1.0), 0.5)
    s = 1.0 / np.sqrt(2.0 * n)
    tree = np.abs(np.array(tree_shift)) / s
    sweep = np.abs(np.array(sweep_shift)) / s
    q = (0.5, 0.99, 1.0)
    return {"n": n, "m": m, "sd": s, "updates": updates, "changes": tree.size, "seconds": time.perf_counter() - t0,
            "tree": np.quantile(tree, q).tolist(), "gain": np.quantile(tree**2 / 2, q).tolist(),
            "sweep": np.quantile(sweep, q).tolist(), "sigma": float(np.exp(log_sigma))}


def describe(res: dict) -> str:
    return f"|d|/s median {res['tree'][0]:.3g}, max {res['tree'][2]:.3g}; {res['seconds']:.3g} s"


def render(saved: dict) -> str:
    st, results = saved["settings"], saved["results"]
    lines = harness.header_lines("How far one tree's update moves sigma's conditional", saved["meta"])
    lines += [f"* One chain a row, seed {SEED}: {st['settle']} sweeps to settle, then {st['sweeps']} sweeps read tree "
              "by tree. `d`: the shift of the mode of log σ given the trees, `s = 1/sqrt(2n)` its sd; "
              "`d^2 / (2 s^2)`: the most a joint move of that tree and σ can add, on average, to its log acceptance "
              "(nats). Design: `benchmarks/sigma_ridge.py`.", ""]
    rows = []
    for r in results:
        if r.get("status") != "ok":
            continue
        sp = r["spec"]
        rows.append([sp["case"], sp["arm"], str(r["n"]), fmt(r["changes"] / r["updates"]),
                     " / ".join(fmt(v) for v in r["tree"]), " / ".join(fmt(v) for v in r["gain"]),
                     " / ".join(fmt(v) for v in r["sweep"]), fmt(r["seconds"])])
    head = ["case", "arm", "n", "share of updates that changed the tree", "one tree: abs(d)/s median / 99% / max",
            "gain bound, nats: median / 99% / max", "one sweep: abs(d)/s median / 99% / max", "seconds"]
    lines += [md_table(head, rows), ""]
    return "\n".join(lines + harness.report_footer(saved, lambda sp: f"{sp['case']} {sp['arm']}"))


def parse_args(argv: list[str]):
    return harness.parse_case_args(argv, MODULE, __doc__, tuple(CASES), "sigma-ridge",
                                   "smoke run: 100 sweeps to settle, 50 read", timeout_min=20.0)


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    """Each case with and without aimed twigs, one chain each."""
    st = harness.chosen_settings(args, QUICK, FULL, cases=args.cases)
    runs = [(f"{case} {arm}", {"case": case, "arm": arm, "settle": st["settle"], "sweeps": st["sweeps"]})
            for case in args.cases for arm in ARMS]
    return st, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
