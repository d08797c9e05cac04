"""Compile the kernels a fit uses ahead of the first fit: ``python -m pymc_treesamplers.compile``.

    python -m pymc_treesamplers.compile [--jobs N] [--samplers cgm,growprune,reshape,pg,ct]
        [--families normal,bernoulli,poisson] [--threads K] [--force]

A first ``pm.sample`` with a BART variable compiles about a hundred numba kernels (tens of seconds; the cold-start
report, docs/reports/coldstart.md). This command does that work once, where it is cheap to wait: after
``pip install``, in a container's build step, in ``make demo``. Each *task* is one sampler under one family of
likelihood, run as a user would run it on a few rows: ``pm.sample`` (one short chain), a prediction at new rows
and a partial-dependence plot; the default sampler's task also runs its warm start (grow-from-root). The three
families reach every route of the package: ``normal`` the Gaussian pseudo-data, ``bernoulli`` the augmentation
(exact latents), ``poisson`` the log-link record. The kernels land in the package's cache
(:mod:`pymc_treesamplers.kernel_cache`), which every later process of the same install reads.

Tasks run in ``N`` processes at once (default: the cores this process may use, at most 8), each with its own compile
lock. A finished task leaves a note in the cache folder naming the CPU it compiled for (numba keys machine code on
the CPU), so a second run on the same machine compiles nothing and says so; ``--force`` runs every task again. A new
version or an edited source is a new cache folder, where nothing is compiled yet. An image built on one machine and
run on another CPU recompiles at its first fit unless built with ``NUMBA_CPU_NAME=generic`` (numba's portable code).

A step on one thread (the default) runs kernels compiled without their parallel loops, and a step given ``threads=K``
with K > 1 runs another compile of them, with the loops (one for every K). ``--threads K`` runs the tasks with
``threads=K`` instead, for a set-up whose steps run on several threads; each such task has a name and a note of its own
(``cgm-normal-threads``).

>>> [t.name for t in tasks(["cgm"], ["normal", "poisson"])]
['cgm-normal', 'cgm-poisson']
>>> [t.name for t in tasks(["cgm"], ["normal"], threads=2)]
['cgm-normal-threads']
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import NamedTuple

SAMPLERS = {"cgm": "CGMStep", "growprune": "GrowPruneStep", "reshape": "ReshapeStep", "pg": "PGBARTStep",
            "ct": "CTBirthDeathStep"}
FAMILIES = ("normal", "bernoulli", "poisson")
WARM_START = "cgm"  # the sampler pm.sample assigns, whose task also compiles the warm start
N_ROWS, M, TUNE, DRAWS = 40, 4, 3, 3


class Task(NamedTuple):
    """One sampler under one family (module docstring)."""

    sampler: str
    family: str
    threads: int = 1

    @property
    def name(self) -> str:
        return f"{self.sampler}-{self.family}" + ("-threads" if self.threads > 1 else "")


def tasks(samplers=tuple(SAMPLERS), families=FAMILIES, threads: int = 1) -> list[Task]:
    """Every chosen sampler under every chosen family, on ``threads`` threads, checked by name.

    >>> tasks(["cgm"], ["gamma"])
    Traceback (most recent call last):
    ...
    ValueError: families: unknown 'gamma'; choose from normal, bernoulli, poisson
    """
    for what, chosen, known in (("samplers", samplers, tuple(SAMPLERS)), ("families", families, FAMILIES)):
        bad = [c for c in chosen if c not in known]
        if bad:
            raise ValueError(f"{what}: unknown {', '.join(map(repr, bad))}; choose from {', '.join(known)}")
    return [Task(s, f, threads) for s in samplers for f in families]


def _notes() -> Path:
    from .kernel_cache import cache_dir

    return cache_dir() / "compiled"


def _cpu() -> list[str]:
    """numba's identity of the machine code it makes here: target triple, CPU name and features."""
    from numba.core.registry import cpu_target

    return list(cpu_target.target_context.codegen().magic_tuple())


def done(task: Task) -> bool:
    """Whether ``task`` has run to the end in this install's cache folder, for this CPU."""
    try:
        note = json.loads((_notes() / f"{task.name}.json").read_text())
    except (OSError, ValueError):
        return False
    return note.get("cpu") == _cpu()


def run_task(task: Task) -> float:
    """Run ``task`` in this process (:func:`fit`, its notices left to the parent), note it as done, and return its
    seconds."""
    import logging

    logging.getLogger("pymc").setLevel(logging.ERROR)
    logging.getLogger("pymc_treesamplers").setLevel(logging.WARNING)  # the parent says what each task compiled
    t0 = time.perf_counter()
    fit(task)
    seconds = time.perf_counter() - t0
    notes = _notes()
    notes.mkdir(parents=True, exist_ok=True)
    (notes / f"{task.name}.json").write_text(json.dumps({"seconds": seconds, "finished": time.time(), "cpu": _cpu()}))
    return seconds


def fit(task: Task) -> None:
    """What ``task`` runs: a short ``pm.sample`` of its sampler under its family on a few rows (and the warm start's,
    for the default sampler), a prediction at new rows and a partial-dependence plot."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pymc as pm

    import pymc_treesamplers as pmt

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(N_ROWS, 3))
    eta = 2.0 * X[:, 0] - 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pm.Model():
            mu = pmt.BART("mu", X, eta if task.family == "normal" else np.zeros(N_ROWS), m=M)
            if task.family == "normal":
                pm.Normal("y", mu, pm.HalfNormal("sigma", 1.0), observed=eta + 0.1 * rng.standard_normal(N_ROWS))
            elif task.family == "bernoulli":
                pm.Bernoulli("y", logit_p=mu, observed=rng.uniform(size=N_ROWS) < 1.0 / (1.0 + np.exp(-eta)))
            else:
                pm.Poisson("y", pm.math.exp(mu), observed=rng.poisson(np.exp(eta)))
            step_class = getattr(pmt, SAMPLERS[task.sampler])
            steps = [step_class([mu], threads=task.threads)]
            if task.sampler == WARM_START and task.family == "normal":
                steps.append(step_class([mu], warm_start=1, threads=task.threads))
            for step in steps:
                idata = pm.sample(tune=TUNE, draws=DRAWS, chains=1, cores=1, step=[step], random_seed=0,
                                  progressbar=False, compute_convergence_checks=False)
        pmt.predict(idata, X[:5], "mu")
        fig = pmt.plots.plot_pdp(idata, X, "mu", var_idx=[0])
        plt.close("all")
        del fig


def compile_all(chosen: list[Task], jobs: int, force: bool = False, out=sys.stdout) -> dict[str, float]:
    """Run the chosen tasks not yet done (all of them with ``force``) in ``jobs`` processes; print each as it
    finishes and return its seconds by name. A task that fails raises, after the others finished."""
    from .kernel_cache import cache_dir

    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"jobs must be a whole number of processes, at least 1, not {jobs!r}")
    todo = [t for t in chosen if force or not done(t)]
    if not todo:
        tasks_text = f"{len(chosen)} task" + ("s" if len(chosen) != 1 else "")
        print(f"nothing to compile: the kernels of {tasks_text} are in {cache_dir()}", file=out)
        return {}
    jobs = min(jobs, len(todo))
    print(f"compiling {len(todo)} tasks ({', '.join(t.name for t in todo)}) in {jobs} processes into "
          f"{cache_dir()}", file=out, flush=True)
    t0 = time.perf_counter()
    seconds: dict[str, float] = {}
    failed: list[str] = []
    # spawn, not fork: each process its own numba compile lock, and no copy of a parent's threads
    from . import compile as module  # run_task by the package's name, also when this file runs as __main__

    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(module.run_task, t): t for t in todo}
        for fut in as_completed(futures):
            task = futures[fut]
            try:
                seconds[task.name] = fut.result()
            except Exception as err:  # reported by name, raised after the rest
                failed.append(f"{task.name}: {type(err).__name__}: {err}")
                print(f"  {task.name}: FAILED ({type(err).__name__}: {err})", file=out, flush=True)
                continue
            print(f"  {task.name}: {seconds[task.name]:.1f} s", file=out, flush=True)
    print(f"done in {time.perf_counter() - t0:.1f} s", file=out, flush=True)
    if failed:
        raise RuntimeError("some tasks failed: " + "; ".join(failed))
    return seconds


def default_jobs() -> int:
    """The cores this process may use (its affinity, where the platform says), at most 8: each process imports PyMC.

    >>> 1 <= default_jobs() <= 8
    True
    """
    count = getattr(os, "process_cpu_count", None)
    cores = count() if count is not None else len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
    return max(1, min(8, cores or os.cpu_count() or 1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pymc_treesamplers.compile",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=default_jobs(), help="processes at once (default: the cores, at most 8)")
    p.add_argument("--samplers", default=",".join(SAMPLERS), help=f"comma list from {', '.join(SAMPLERS)}")
    p.add_argument("--families", default=",".join(FAMILIES), help=f"comma list from {', '.join(FAMILIES)}")
    p.add_argument("--threads", type=int, default=1,
                   help="the steps' threads= (default 1; any K > 1 compiles the kernels of every K > 1)")
    p.add_argument("--force", action="store_true", help="run every task again")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, not {args.jobs}")
    from .engine import check_threads

    try:
        check_threads(args.threads)
        chosen = tasks([s for s in args.samplers.split(",") if s], [f for f in args.families.split(",") if f],
                       args.threads)
    except ValueError as err:
        p.error(str(err))
    compile_all(chosen, args.jobs, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
