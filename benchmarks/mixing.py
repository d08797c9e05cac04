"""Mixing on real data: do independent chains agree? ReshapeStep against CGM, pymc-bart and stochtree.

    python -m benchmarks.mixing [--quick] [--cases friedman,california,boston]
        [--samplers cgm,reshape,pymc-bart,stochtree] [--out docs/mixing.md] [--json PATH]
    python -m benchmarks.mixing --render-only [--quick | --json PATH]

Issue 15's protocol: 4 independent chains x (1000 tune + 1000 draws) per arm, all arms of a data set
in one run, each in its own child process (``benchmarks.harness``); sigma ~ HalfNormal(sd(y)),
y ~ Normal(BART, sigma) for the PyMC arms (pymc-bart's default step, PGBART; ours with the named
step), stochtree's grow/prune MCMC (no grow-from-root warm start) with its default sigma prior.

* friedman: Friedman #1, n = 1000, m = 200 (``datasets.friedman1_train_test``, seed 1234);
* california: California housing, 2000 training rows (``benchmarks.california``, training set 1),
  m = 200, y in $100k;
* boston: the ``make demo`` problem (``demo.split_data``: 405 training rows), m = 50.

Reported: max rank R-hat of f over 25 fixed test rows (a chain that sits on its own trees shows
there), min bulk ESS of f there, bulk ESS of sigma and its R-hat, ESS of sigma per second of
wall time (PyMC arms: 2 chains at a time on the 2 cores; stochtree: its chains one after the other
in one thread), test RMSE of the posterior mean (against f for Friedman, against y otherwise).
"""

from __future__ import annotations

import argparse
import sys
import time

from benchmarks import friedman, harness
from benchmarks.harness import fmt, md_table

MODULE = "benchmarks.mixing"
CASES = {"friedman": 200, "california": 200, "boston": 50}
SAMPLERS = ["cgm", "reshape", "pymc-bart", "stochtree"]
LABELS = {"cgm": "pmt CGM", "reshape": "pmt Reshape (new)", "pymc-bart": "pymc-bart (PGBART)",
          "stochtree": "stochtree (GP MCMC)"}
SEED = 1234
N_POINTS = friedman.N_ESS
TARGET_RHAT, TARGET_SIGMA_RATIO = 1.1, 5.0


def load_case(case: str):
    """``(X, y, X_test, target_test)``: the test target is f where known (Friedman), else y."""
    if case == "friedman":
        from pymc_treesamplers.datasets import friedman1_train_test

        X, y, _, X_test, f_test = friedman1_train_test(1000, SEED, n_test=friedman.N_TEST)
        return X, y, X_test, f_test
    if case == "california":
        from benchmarks.california import california_split, load_california

        Xall, yall, _ = load_california()
        return california_split(Xall, yall, 1)
    from pymc_treesamplers.demo import split_data

    X, y, X_test, y_test = split_data()
    return X.to_numpy(dtype=float), y, X_test.to_numpy(dtype=float), y_test


def worker_body(spec: dict) -> dict:
    X, y, X_test, target = load_case(spec["case"])
    fspec = {"sampler": spec["sampler"], "m": CASES[spec["case"]], "tune": spec["tune"], "draws": spec["draws"],
             "chains": spec["chains"], "cores": 2, "seed": SEED, "threads": 1}
    fit = friedman._fit_stochtree if spec["sampler"] == "stochtree" else friedman._fit_pymc
    t0 = time.perf_counter()
    info, sigma, f_test = fit(fspec, X, y, X_test)
    out = {"n": int(X.shape[0]), "p": int(X.shape[1]), "fit_s": time.perf_counter() - t0, **info}
    out.update(friedman.fit_metrics(sigma, f_test, target, info["wall_s"]))
    blocks = sigma.reshape(sigma.shape[0], 10, -1).mean(axis=2)
    out["sigma_trace_means"] = [[float(v) for v in chain] for chain in blocks]
    return out


def describe(res: dict) -> str:
    return (f"max R-hat f {res['rhat_f_max']:.2f}, ESS sigma {res['ess_bulk_sigma']:.0f} "
            f"({res['ess_per_s_sigma']:.2f}/s), R-hat sigma {res['rhat_sigma']:.2f}, RMSE {res['rmse_test']:.3f}")


def render(saved: dict) -> str:
    st = saved["settings"]
    lines = harness.header_lines("Mixing on real data: R-hat of f and ESS of sigma over independent chains"
                                 + (" — --quick smoke run" if st["quick"] else ""), saved["meta"],
                                 runs=saved["results"])
    lines += [
        f"* {st['chains']} chains x ({st['tune']} tune + {st['draws']} draws) per arm, seed {SEED}; data sets: "
        "Friedman #1 (n = 1000, m = 200), California housing (2000 training rows, m = 200), Boston housing "
        "(the demo's 405 training rows, m = 50). Protocol and columns: `benchmarks/mixing.py` docstring.",
        "* **max R-hat f**: largest rank-normalised R-hat over 25 fixed test rows; **ESS σ / s**: bulk ESS of "
        "σ over all chains per second of wall time (PyMC arms run 2 chains at a time on the 2 cores, "
        "stochtree its chains in sequence on one thread).",
        "",
    ]
    rows, by = [], {}
    for r in saved["results"]:
        sp = r["spec"]
        by[(sp["case"], sp["sampler"])] = r
        if r.get("status") != "ok":
            rows.append([sp["case"], LABELS[sp["sampler"]], f"**{r.get('status')}**", "", "", "", "", "", "", ""])
            continue
        rows.append([sp["case"], LABELS[sp["sampler"]], fmt(r["rhat_f_max"]), fmt(r["ess_bulk_f_min"]),
                     fmt(r["ess_bulk_sigma"]), fmt(r["rhat_sigma"]), fmt(r["ess_per_s_sigma"]), fmt(r["wall_s"]),
                     fmt(r["sigma_mean"]), fmt(r["rmse_test"])])
    lines += [md_table(["data", "arm", "max R-hat f", "min ESS f", "ESS σ", "R-hat σ", "ESS σ / s", "wall s",
                        "mean σ", "test RMSE"], rows), ""]
    lines += ["## Targets (issue 15)", ""]
    trows = []
    for case in st["cases"]:
        new = by.get((case, "reshape"))
        others = [by.get((case, s)) for s in st["samplers"] if s != "reshape"]
        if new is None or new.get("status") != "ok":
            continue
        above = [o for o in others if o and o.get("status") == "ok" and o["rhat_f_max"] >= TARGET_RHAT]
        met = new["rhat_f_max"] < TARGET_RHAT and len(above) > 0
        trows.append([f"{case}: max R-hat of f < {TARGET_RHAT} where the others are above",
                      f"Reshape {fmt(new['rhat_f_max'])}; others "
                      + ", ".join(f"{LABELS[o['spec']['sampler']]} {fmt(o['rhat_f_max'])}" for o in others
                                  if o and o.get('status') == 'ok'),
                      "✅ met" if met else "❌ not met"])
        cgm = by.get((case, "cgm"))
        if case == "boston" and cgm and cgm.get("status") == "ok":
            ratio = new["ess_per_s_sigma"] / cgm["ess_per_s_sigma"]
            trows.append([f"boston: ESS/s of σ ≥ {TARGET_SIGMA_RATIO:g}x CGM's", f"{fmt(ratio)}x "
                          f"({fmt(new['ess_per_s_sigma'])} vs {fmt(cgm['ess_per_s_sigma'])})",
                          "✅ met" if ratio >= TARGET_SIGMA_RATIO else "❌ not met"])
    lines += [md_table(["target", "measured", "verdict"], trows), ""]
    lines += ["Reading:", ""]
    lines += [
        "* f's R-hat at test rows is judged over chains that all started from single-leaf trees; none of the arms "
        "brings it below 1.1 on any of the three data sets in 4 x (1000 + 1000), and the moves that make "
        "hypercube chains agree ([reshape.md](reshape.md)) change nothing measurable here: with many small "
        "trees, what stays slow is not the shape of one tree.",
        "* pymc-bart's posterior differs from the others' where its mean σ does (its default leaf prior and split "
        "rules are not ours): its mixing numbers describe another posterior.",
    ]
    shares = [(r["spec"]["case"], r["chain_match_mismatch_share"], r["chain_match_next_best_share"])
              for r in saved["results"] if r.get("status") == "ok" and r.get("chain_match_mismatch_share") is not None]
    if shares:
        lines.append(
            "* pymc-bart's f at the test rows comes from the tree histories it keeps per chain, matched to the "
            "chains by their predictions at training rows. Its own prediction of a training row differs from its "
            "in-sample value where the row sits on a split value (tied values): share of differing (draw, row) "
            "pairs for the matched chain, and for the closest other chain: "
            + ", ".join(f"{c} {fmt(v)} and {fmt(w)}" for c, v, w in shares) + "."
        )
    lines += ["", "σ by chain, mean of each tenth of the kept draws (chains that disagree show as separate levels):",
              ""]
    srows = []
    for r in saved["results"]:
        if r.get("status") == "ok":
            srows.append([r["spec"]["case"], LABELS[r["spec"]["sampler"]],
                          "<br>".join(" ".join(fmt(v) for v in ch) for ch in r["sigma_trace_means"])])
    lines += [md_table(["data", "arm", "σ per chain (10 blocks)"], srows), ""]
    lines += harness.run_notes(saved["results"], lambda sp: f"{sp['case']} {sp['sampler']}")
    lines += [harness.source_line(saved["meta"]), ""]
    return "\n".join(lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: 2 chains x (50 + 50), Boston only")
    p.add_argument("--cases", default=None, help=f"comma list from {list(CASES)}")
    p.add_argument("--samplers", default=",".join(SAMPLERS), help=f"comma list from {SAMPLERS}")
    harness.add_harness_args(p, timeout_min=60.0)
    args = p.parse_args(argv)
    harness.resolve_report_paths(args, "mixing" + ("-quick" if args.quick else ""))
    if args.worker is not None or args.render_only:
        return args
    args.cases = harness.choice_list(args.cases or ("boston" if args.quick else ",".join(CASES)), CASES, p, "case(s)")
    args.samplers = harness.choice_list(args.samplers, SAMPLERS, p, "sampler(s)")
    return args


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    n = (2, 50, 50) if args.quick else (4, 1000, 1000)
    settings = {"quick": args.quick, "cases": args.cases, "samplers": args.samplers,
                "chains": n[0], "tune": n[1], "draws": n[2]}
    return settings, [(f"{c} {s}", {"case": c, "sampler": s, "chains": n[0], "tune": n[1], "draws": n[2]})
                      for c in args.cases for s in args.samplers]


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
