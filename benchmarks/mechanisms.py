"""What each candidate mechanism buys in mixing, per sweep and per second (issue 44).

    python -m benchmarks.mechanisms [--quick] [--cases boston,friedman] [--arms trees,tempered,collapsed]
    python -m benchmarks.mechanisms --arms twigs --out docs/reports/twigs.md --json benchmarks/results/twigs.json
    python -m benchmarks.mechanisms --arms twigs,sigma-every --seed 144 --cases boston,california \
        --out docs/reports/twigs-replicate.md --json benchmarks/results/twigs-replicate.json
    python -m benchmarks.mechanisms --arms sigma-every --out docs/reports/sigma-every.md \
        --json benchmarks/results/sigma-every.json
        [--chains 8] [--draws N] [--out docs/reports/mechanisms.md] [--json PATH]
    python -m benchmarks.mechanisms --render-only [--quick | --json PATH]

The question is not whether a mechanism is exact (those that join the package are proven so in tests) but
whether it makes independent chains agree sooner, so each arm runs **8 chains** from single-leaf trees, each with
its own seed and σ started at sd(y) times a random factor (a log-normal with sd 0.5), and reports, from the kept
draws of all chains: the rank-normalised R-hat and bulk ESS of σ and of f at 10 fixed training rows (largest
R-hat, smallest ESS), the seconds per chain (one thread), **ESS per chain-second** (what a fixed machine buys), the
test RMSE of the posterior mean (Friedman #1: against f) and the replicas' swap rates.

Every arm drives the engine's :class:`~pymc_treesamplers.engine.chain.Chain` directly, with the CGM sweep that
``pm.sample()`` assigns to a BART variable (unless the arm says otherwise) and σ ~ HalfNormal(sd(y)) updated
after every sweep by the package's slice update (:func:`pymc_treesamplers.steps.scale.slice_update`) on log σ,
as ``NormalScaleGibbs`` does. The arms:

* ``trees``: that sampler alone, at several numbers of trees ``m`` (a different model: same data, same priors'
  rules, the leaf prior's scale shrinking as ``1/sqrt(m)``), so the tables also show what more trees cost in
  held-out RMSE;
* ``samplers``: the package's other tree steps in place of CGM, with their defaults (Reshape; on Boston also
  Particle Gibbs and continuous-time birth-death), at the base ``m``;
* ``tempered``: replica exchange. ``K`` replicas, replica ``k`` targeting the tree and σ priors times the
  likelihood raised to ``beta_k`` (a Normal likelihood to the power beta is the same Normal with weight
  ``beta / sigma^2``, so each replica's sweep is the ordinary sweep with its weight scaled), ``beta_k`` geometric
  from 1 down to ``beta_min``. After each round of sweeps, neighbours ``(k, k + 1)`` (even pairs, then odd, in
  turn) swap their whole states with probability ``min(1, exp((beta_k - beta_{k+1}) (l_{k+1} - l_k)))``, ``l``
  the untempered log-likelihood. Only replica 0 (beta = 1) is kept; its cost is ``K`` sweeps per draw;
* ``collapsed`` (Boston only: its eigen-decomposition costs ``L^3``): σ drawn with every leaf integrated out
  given the trees' structures, ``y ~ N(m mu0, sigma^2 I + s2 B B^T)`` (``B`` the rows' leaf memberships, ``s2``
  the leaf prior's variance), through the eigen-decomposition of ``B^T B`` (``L x L``, ``L`` the number of
  leaves), then every leaf at once from its Gaussian conditional given σ: an exact blocked Gibbs step on
  (σ, leaves) given the structures.

These four are research prototypes written over the engine's public records: none is in the package, because
none paid for itself here (docs/samplers.md, "Do the chains agree?"). The last two arms run the package's own
step options:

* ``sigma-every``: the tree step's ``sigma_every = m / G``: σ updated ``G`` times a sweep, after each ``m / G`` trees
  (an exact scan order: the trees in ``G`` groups, each swept against the running residual, then σ from its
  conditional, by the step's own code and its ``NormalScaleGibbs``), at each ``m`` of ``TWIGS``; ``G = 1`` is the
  usual scan through the same code, so the arm carries its own baseline;
* ``twigs``: CGM without and with the twig moves, at each ``m`` of ``TWIGS``: ``CGMStep(twigs=...)`` (attach a subtree
  drawn from the tree prior at a leaf, detach the whole subtree below a node) and ``CGMStep(aimed_twigs=...)`` (a
  path of splits that narrows in on a row drawn by its squared residual, attached or detached; docs/mh.md).

Data: Boston housing (the ``make demo`` split, 405 rows), Friedman #1 (n = 1000, the mixing benchmark's), California
housing (2,000 training rows, benchmarks/california.py) and marketing (sales on advertising budgets, 200 rows, a
fixed 80/20 split; not used to tune anything).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import harness
from benchmarks.harness import fmt, md_table
from benchmarks.mixing import load_case

MODULE = "benchmarks.mechanisms"
CASES = ("boston", "friedman", "california", "marketing")
ARMS = ("trees", "samplers", "tempered", "collapsed", "twigs", "sigma-every")
DEFAULT_ARMS = ARMS[:4]  # the twigs and sigma-every arms: their own report (make bench-mixing: docs/reports/twigs.md)
TREES = {"boston": (50, 200, 400, 800), "friedman": (200, 400, 800), "california": (200,), "marketing": (200,)}
BASE_M = {"boston": 50, "friedman": 200, "california": 200, "marketing": 200}  # the mixing benchmark's m
# the twig moves (engine/moves/twig.py): CGM without them and with these shares of the proposals (from the prior,
# aimed at misfit rows), at each m
TWIGS = {"boston": (50, 200), "friedman": (200,), "california": (200,), "marketing": (200,)}
TWIG_SHARES = ((0.0, 0.0), (0.3, 0.0), (0.0, 0.3))
# the step's sigma_every = m / G (σ updated G times a sweep), at the m of TWIGS; G = 1 is the usual scan (σ once a
# sweep) through the same code, the arm's own baseline
SIGMA_GROUPS = (1, 10, 40)
# (replicas, beta_min); on Friedman the two ladders that were nearest to paying on Boston (its sweep costs ~4x)
TEMPERED = {"boston": ((2, 0.9), (4, 0.8), (4, 0.5), (8, 0.5)), "friedman": ((2, 0.9), (4, 0.8)), "california": (),
            "marketing": ()}
# the collapsed step's eigen-decomposition grows as L^3 (L ~ 600 leaves at m = 200): Boston only
COLLAPSED = ("boston",)
# the package's other tree steps, at the base m (CT and PG cost 10-20x CGM's sweep: Boston only)
SAMPLERS = {"boston": ("reshape", "pg", "ct"), "friedman": ("reshape",), "california": (), "marketing": ()}
STEPS = {"cgm": "CGMStep", "reshape": "ReshapeStep", "pg": "PGBARTStep", "ct": "CTBirthDeathStep"}
TUNE = 1000
N_ROWS = 10  # training rows whose f is tracked
N_PREDICT = 100  # kept draws per chain whose forests predict the test rows
SEED = 44
# kept draws per chain: Friedman's sweeps cost about 4x Boston's, California's (2,000 rows) about 2x Friedman's
DRAWS = {"boston": 4000, "friedman": 2000, "california": 2000, "marketing": 4000}


# =========================================================================== worker


def _problem(case: str, m: int, sampler: str = "cgm", twigs: float = 0.0, aimed: float = 0.0, every: int = 0):
    """The tree step's chain for the benchmark's model, and what the worker needs around it; ``every``: the step's
    ``sigma_every``."""
    import pymc as pm

    import pymc_treesamplers as pmt

    X, y, X_test, target = load_case(case)
    y = np.asarray(y, dtype=float)
    with pm.Model():
        mu = pmt.BART("mu", X, y, m=m)
        sigma = pm.HalfNormal("sigma", float(y.std()))
        pm.Normal("y", mu, sigma, observed=y)
        moves = {k: v for k, v in (("twigs", twigs), ("aimed_twigs", aimed), ("sigma_every", every)) if v}
        step = getattr(pmt, STEPS[sampler])([mu], **moves)
    return step, y, np.asarray(X_test, dtype=float), np.asarray(target, dtype=float)


def _log_sigma_density(scale: float, n: int, rss: float, beta: float):
    """log density of log σ: HalfNormal(scale) prior (with the Jacobian) times the Normal likelihood^beta."""
    return lambda x: -0.5 * (np.exp(x) / scale) ** 2 + x - beta * (n * x + 0.5 * rss * np.exp(-2.0 * x))


def _leaf_memberships(chain, n: int):
    """``(cols, slots)``: ``cols[i, j]`` the column (global leaf number) of row ``i``'s leaf in tree ``j``, and the
    ``(tree, node)`` of every column."""
    from pymc_treesamplers.engine.nodes import END, START, VAR

    forest = chain.forest
    cols = np.empty((n, chain.m), dtype=np.int64)
    slots = []
    for j in range(chain.m):
        for k in range(int(forest.n_nodes[j])):
            if forest.ints[j, k, VAR] < 0:
                cols[forest.perm[j, forest.ints[j, k, START]:forest.ints[j, k, END]], j] = len(slots)
                slots.append((j, k))
    return cols, slots


def _collapsed_sigma_and_leaves(rng, chain, y, log_sigma: float, scale: float, beta: float) -> float:
    """σ from its law with every leaf integrated out, then all leaves given σ (module docstring); returns log σ."""
    import scipy.sparse as sp

    from pymc_treesamplers.engine.nodes import VALUE
    from pymc_treesamplers.steps.scale import slice_update

    n, m, mu0, s2 = y.size, chain.m, chain.prior.mu0, chain.prior.s2
    cols, slots = _leaf_memberships(chain, n)
    n_leaves = len(slots)
    B = sp.csr_matrix((np.ones(n * m), cols.ravel(), np.arange(0, n * m + 1, m)), shape=(n, n_leaves))
    lam, Q = np.linalg.eigh((B.T @ B).toarray())
    lam = np.maximum(lam, 0.0)
    r0 = y - m * mu0
    u = Q.T @ (B.T @ r0)
    rr = float(r0 @ r0)

    def log_density(x):
        v = np.exp(2.0 * x) / beta  # the tempered likelihood is a Normal with variance sigma^2 / beta
        log_det = (n - n_leaves) * np.log(v) + np.sum(np.log(v + s2 * lam))
        quad = (rr - np.sum(u * u / (v / s2 + lam))) / v
        return -0.5 * (np.exp(x) / scale) ** 2 + x - 0.5 * log_det - 0.5 * quad

    log_sigma, _ = slice_update(rng, log_sigma, log_density, 0.5)
    v = np.exp(2.0 * log_sigma) / beta
    prec = lam / v + 1.0 / s2
    delta = Q @ ((u / v) / prec + rng.standard_normal(n_leaves) / np.sqrt(prec))
    for (j, k), d in zip(slots, delta, strict=True):
        chain.forest.floats[j, k, VALUE] = mu0 + d
    return log_sigma


class _Replica:
    """One replica: its chain, its fit at the training rows and its log σ."""

    def __init__(self, template, n: int, log_sigma: float):
        self.chain = template.sibling(template.prior.mu0, template.prior.s2)
        self.f = np.empty(n)
        self.chain.fit(self.f)
        self.log_sigma = log_sigma


def _run_chain(spec: dict, step, y, rows, seed: int) -> dict:
    from pymc_treesamplers.engine.records import Pseudo
    from pymc_treesamplers.steps.scale import slice_update

    rng = np.random.default_rng(seed)
    n, scale = y.size, float(y.std())
    betas = spec["beta_min"] ** (np.arange(spec["replicas"]) / max(spec["replicas"] - 1, 1))
    template = step.outputs[0].chain
    reps = [_Replica(template, n, np.log(scale) + rng.normal(0.0, 0.5)) for _ in betas]
    keep_every = max(1, spec["draws"] // N_PREDICT)
    sigma, f_rows, forests = [], [], []
    tries = np.zeros(len(betas) - 1)
    swaps = np.zeros(len(betas) - 1)
    loglik = np.empty(len(betas))
    t0 = time.perf_counter()
    for it in range(TUNE + spec["draws"]):
        for k, (rep, beta) in enumerate(zip(reps, betas, strict=True)):
            rep.chain.sweep(rng, Pseudo(y - rep.f, np.array([beta * np.exp(-2.0 * rep.log_sigma)]), 1))
            if spec["arm"] == "collapsed":
                rep.log_sigma = _collapsed_sigma_and_leaves(rng, rep.chain, y, rep.log_sigma, scale, beta)
            rep.chain.fit(rep.f)
            rss = float(np.sum((y - rep.f) ** 2))
            if spec["arm"] != "collapsed":
                rep.log_sigma, _ = slice_update(rng, rep.log_sigma, _log_sigma_density(scale, n, rss, beta), 0.5)
            loglik[k] = -n * rep.log_sigma - 0.5 * rss * np.exp(-2.0 * rep.log_sigma)
        for k in range(it % 2, len(betas) - 1, 2):
            tries[k] += 1
            if np.log(rng.uniform()) < (betas[k] - betas[k + 1]) * (loglik[k + 1] - loglik[k]):
                reps[k], reps[k + 1] = reps[k + 1], reps[k]
                loglik[[k, k + 1]] = loglik[[k + 1, k]]
                swaps[k] += 1
        if it >= TUNE:
            sigma.append(np.exp(reps[0].log_sigma))
            f_rows.append(reps[0].f[rows])
            if (it - TUNE) % keep_every == 0:
                forests.append(reps[0].chain.encode(step.thr_table, step.columns.trace_var, step.p))
    return {"seconds": time.perf_counter() - t0, "sigma": np.array(sigma), "f_rows": np.array(f_rows),
            "forests": forests, "swap_rate": (swaps / np.maximum(tries, 1)).tolist()}


def _run_scale_in_sweep_chain(spec: dict, step, y, rows, seed: int) -> dict:
    """The ``sigma-every`` arm's chain: the step's own scan (``sigma_every``, steps/scale_in_sweep.py), its trees swept
    in groups of ``spec["every"]`` against one running residual and σ updated after each group by the step's
    :class:`~pymc_treesamplers.NormalScaleGibbs` (the PyTensor prior and slice width it tunes while tuning)."""
    from pymc_treesamplers.engine.records import Pseudo

    rng = np.random.default_rng(seed)
    n, scale = y.size, float(y.std())
    chain, inner = step.outputs[0].chain, step.scale
    chain.start()
    inner.tuning = (1.0, 0)
    f = np.empty(n)
    chain.fit(f)
    r = y - f
    log_sigma = np.log(scale) + rng.normal(0.0, 0.5)
    keep_every = max(1, spec["draws"] // N_PREDICT)
    sigma, f_rows, forests = [], [], []
    t0 = time.perf_counter()
    for it in range(TUNE + spec["draws"]):
        inner.start(log_sigma, it < TUNE)  # HalfNormal's value variable is log σ
        pseudo = Pseudo(r, np.array([np.exp(-2.0 * log_sigma)]), 1)
        for trees in inner.groups:
            chain.sweep(rng, pseudo, trees=trees)  # r updated in place
            inner.after(rng, pseudo)
        log_sigma = inner.x
        if it >= TUNE:
            sigma.append(np.exp(log_sigma))
            f_rows.append((y - r)[rows])
            if (it - TUNE) % keep_every == 0:
                forests.append(chain.encode(step.thr_table, step.columns.trace_var, step.p))
    return {"seconds": time.perf_counter() - t0, "sigma": np.array(sigma), "f_rows": np.array(f_rows),
            "forests": forests, "swap_rate": []}


def worker_body(spec: dict) -> dict:
    from pymc_treesamplers.results.diagnostics import bulk_ess, rank_rhat
    from pymc_treesamplers.results.predictive import predict_forests

    step, y, X_test, target = _problem(spec["case"], spec["m"], spec["sampler"], spec.get("twigs", 0.0),
                                       spec.get("aimed", 0.0), spec.get("every", 0))
    rows = np.linspace(0, y.size - 1, N_ROWS).round().astype(np.int64)
    if spec["arm"] == "sigma-every":
        def run(sp, seed):
            return _run_scale_in_sweep_chain(sp, step, y, rows, seed)
    else:
        def run(sp, seed):
            return _run_chain(sp, step, y, rows, seed)
    run({**spec, "draws": 5}, 0)  # untimed: the numba caches
    runs = [run(spec, spec.get("seed", SEED) + c) for c in range(spec["chains"])]
    sigma = np.stack([r["sigma"] for r in runs])
    f_rows = np.stack([r["f_rows"] for r in runs])
    pred = np.asarray(predict_forests([t for r in runs for t in r["forests"]], X_test))
    seconds = float(np.mean([r["seconds"] for r in runs]))
    ess_sigma, ess_f = float(bulk_ess(sigma)), float(np.min(bulk_ess(f_rows)))
    return {"seconds_per_chain": seconds, "rhat_sigma": float(rank_rhat(sigma)), "ess_sigma": ess_sigma,
            "rhat_f_max": float(np.max(rank_rhat(f_rows))), "ess_f_min": ess_f,
            "ess_sigma_per_chain_s": ess_sigma / (spec["chains"] * seconds),
            "ess_f_per_chain_s": ess_f / (spec["chains"] * seconds),
            "rmse": float(np.sqrt(np.mean((pred.mean(axis=0) - target) ** 2))),
            "sigma_mean": float(sigma.mean()),
            "swap_rate": np.mean([r["swap_rate"] for r in runs], axis=0).tolist() if runs[0]["swap_rate"] else []}


def describe(res: dict) -> str:
    return (f"R-hat σ {res['rhat_sigma']:.3f}, ESS σ {res['ess_sigma']:.0f}, R-hat f {res['rhat_f_max']:.3f}, "
            f"ESS f {res['ess_f_min']:.0f}, {res['seconds_per_chain']:.1f} s/chain")


# =========================================================================== report


def _label(spec: dict) -> str:
    if spec["arm"] == "trees":
        return f"CGM, m = {spec['m']}"
    if spec["arm"] == "samplers":
        return f"{STEPS[spec['sampler']].removesuffix('Step')}, m = {spec['m']}"
    if spec["arm"] == "sigma-every" and "groups" in spec:  # the prototype's rows (G chains of m / G trees)
        return f"CGM, m = {spec['m']}, σ after every {spec['m'] // spec['groups']} trees"
    if spec["arm"] == "sigma-every":
        k = spec["every"]
        every = "once a sweep" if k == spec["m"] else "after every tree" if k == 1 else f"after every {k} trees"
        return f"CGMStep(sigma_every={spec['every']}), m = {spec['m']}: σ {every}"
    if spec["arm"] == "twigs":
        moves = [f"{name} ({spec.get(key, 0.0):g} of proposals)"
                 for key, name in (("twigs", "twig moves"), ("aimed", "aimed twigs")) if spec.get(key, 0.0)]
        return " + ".join([f"CGM, m = {spec['m']}", *moves])
    if spec["arm"] == "tempered":
        return f"CGM + replica exchange, K = {spec['replicas']}, β down to {spec['beta_min']}"
    return "CGM + σ with the leaves integrated out"


def render(saved: dict) -> str:
    st = saved["settings"]
    title = harness.smoke_title("Mechanisms for chains that agree: mixing per sweep and per second", st)
    lines = harness.header_lines(title, saved["meta"], runs=saved["results"])
    kept = ", ".join(f"{c} {st['draws'] or DRAWS[c]}" for c in st["cases"])
    lines += [
        f"* {st['chains']} chains x ({TUNE} tuning sweeps + the kept draws: {kept}) per arm, each chain one "
        f"thread, seeds {st.get('seed', SEED)}.., from single-leaf trees and scattered σ; R-hat and bulk ESS from the "
        f"kept draws of all chains; f at {N_ROWS} training rows (largest R-hat, smallest ESS); **per chain-s**: ESS / "
        f"(chains x seconds per chain); test RMSE of the posterior mean from {N_PREDICT} draws per chain. Protocol: "
        "`benchmarks/mechanisms.py` docstring.",
        "",
    ]
    for case in st["cases"]:
        rows = []
        for res in saved["results"]:
            spec = res["spec"]
            if spec["case"] != case:
                continue
            if res.get("status") != "ok":
                rows.append([_label(spec), "**failed**"] + [""] * 9)
                continue
            rows.append([_label(spec), fmt(res["seconds_per_chain"]), fmt(res["rhat_sigma"]), fmt(res["ess_sigma"]),
                         fmt(res["ess_sigma_per_chain_s"]), fmt(res["rhat_f_max"]), fmt(res["ess_f_min"]),
                         fmt(res["ess_f_per_chain_s"]), fmt(res["rmse"]), fmt(res["sigma_mean"]),
                         ", ".join(fmt(r, 2) for r in res["swap_rate"]) or "—"])
        lines += [f"## {case}", "",
                  md_table(["arm", "s / chain", "R-hat σ", "ESS σ", "ESS σ per chain-s", "max R-hat f", "min ESS f",
                            "ESS f per chain-s", "test RMSE", "mean σ", "swap rates"], rows), ""]
    return "\n".join(lines + harness.report_footer(saved, lambda sp: f"{sp['case']} {_label(sp)}"))


# =========================================================================== CLI


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = harness.report_parser(MODULE, __doc__, quick_help="smoke run: Boston, 2 chains, 50 draws, one arm each")
    harness.add_cases_option(p, CASES)
    p.add_argument("--arms", default=",".join(DEFAULT_ARMS), help=f"comma list from {list(ARMS)}")
    p.add_argument("--chains", type=int, default=None, help="chains per arm (default 8; --quick: 2)")
    p.add_argument("--seed", type=int, default=SEED, help=f"chain c's seed is SEED + c (default {SEED}): a replicate")
    p.add_argument("--draws", type=int, default=None,
                   help=f"kept draws per chain (default {DRAWS}; --quick: 50)")
    args = harness.parse_report_args(p, argv, "mechanisms", timeout_min=60.0)
    if not harness.measuring(args):
        return args
    args.cases = harness.chosen_cases(args, p, CASES, quick="boston")
    args.arms = harness.choice_list(args.arms, ARMS, p, "arm(s)")
    args.chains = args.chains or (2 if args.quick else 8)
    args.draws = args.draws or (50 if args.quick else None)
    if args.chains < 2 or (args.draws is not None and args.draws < 10):
        p.error("--chains must be >= 2 and --draws >= 10 (R-hat needs several chains and draws)")
    return args


def plan(args: argparse.Namespace) -> tuple[dict, list[tuple[str, dict]]]:
    settings = {"quick": args.quick, "cases": args.cases, "arms": args.arms, "chains": args.chains,
                "draws": args.draws, **({"seed": args.seed} if args.seed != SEED else {})}
    runs = []
    for case in args.cases:
        base = {"case": case, "chains": args.chains, "draws": args.draws or DRAWS[case], "replicas": 1, "beta_min": 1.0,
                "m": BASE_M[case], "sampler": "cgm", **({"seed": args.seed} if args.seed != SEED else {})}
        for arm in args.arms:
            if arm == "trees":
                ms = TREES[case][:2] if args.quick else TREES[case]
                runs += [(f"{case} trees m={m}", {**base, "arm": arm, "m": m}) for m in ms]
            elif arm == "samplers":
                names = SAMPLERS[case][:1] if args.quick else SAMPLERS[case]
                runs += [(f"{case} {name}", {**base, "arm": arm, "sampler": name}) for name in names]
            elif arm == "tempered":
                ladders = TEMPERED[case][:1] if args.quick else TEMPERED[case]
                runs += [(f"{case} tempered K={k} beta_min={b}", {**base, "arm": arm, "replicas": k, "beta_min": b})
                         for k, b in ladders]
            elif arm == "twigs":
                runs += [(f"{case} twigs={tw} aimed={aim} m={m}",
                          {**base, "arm": arm, "m": m, "twigs": tw, "aimed": aim})
                         for m in TWIGS[case] for tw, aim in TWIG_SHARES]
            elif arm == "sigma-every":
                runs += [(f"{case} sigma-every every={max(1, m // g)} m={m}",
                          {**base, "arm": arm, "m": m, "every": max(1, m // g)})
                         for m in TWIGS[case] for g in SIGMA_GROUPS]
            elif case in COLLAPSED:
                runs.append((f"{case} collapsed", {**base, "arm": arm}))
    return settings, runs


def main(argv: list[str] | None = None) -> int:
    return harness.grid_main(MODULE, argv, parse_args, worker_body, describe, render, plan)


if __name__ == "__main__":
    sys.exit(main())
