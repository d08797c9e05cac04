"""Running a benchmark: each measured configuration in its own child process (threads pinned, numba cache per
source, timeout, log file) under a monitor of its memory and of the machine's busy CPU time, the child's side,
and the command line every benchmark shares."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from . import paths
from .paths import rel
from .provenance import DirtyTreeError, require_clean_tree, source_hash, utc_now
from .report import contention_note, publish, report_meta, rerender, source_line
from .store import save_json

# one thread per process: parallel chains run in their own processes, and a second layer of
# threads would make the timings depend on what else runs on the machine
THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
POLL_S = 0.25


THREAD_ENVS = ("pinned", "none", "numba-omp", "others-1")
"""The thread variables a child may run under (a run that measures what they do to threads): ``pinned``, every
variable of :data:`THREAD_VARS` at the run's count; ``none``, none set (each library's own default: the cores);
``numba-omp``, ``NUMBA_NUM_THREADS`` and ``OMP_NUM_THREADS`` at the count and BLAS's left unset; ``others-1``,
what a user who pins the other libraries does, ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and
``MKL_NUM_THREADS`` at 1 and numba's unset."""


def thread_vars(threads: int, setting: str = "pinned") -> dict[str, str | None]:
    """The value of each of :data:`THREAD_VARS` under ``setting`` (:data:`THREAD_ENVS`); None: unset.

    >>> thread_vars(2, "numba-omp")["OPENBLAS_NUM_THREADS"] is None
    True
    """
    if setting not in THREAD_ENVS:
        raise ValueError(f"thread setting must be one of {THREAD_ENVS}, not {setting!r}")
    if setting == "pinned":
        return dict.fromkeys(THREAD_VARS, str(threads))
    if setting == "none":
        return dict.fromkeys(THREAD_VARS)
    if setting == "numba-omp":
        return {var: str(threads) if var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS") else None for var in THREAD_VARS}
    return {var: None if var == "NUMBA_NUM_THREADS" else "1" for var in THREAD_VARS}


def child_env(src: Path | None = None, shim: Path | None = None, threads: int = 1,
              thread_setting: str = "pinned") -> dict[str, str]:
    """Environment of a child: threads pinned (to 1 unless a run measures threads; ``thread_setting``, one of
    :data:`THREAD_ENVS`, for a run that measures what the variables do), numba cache per source, PYTHONPATH for
    ``src``."""
    env = dict(os.environ)
    for var, value in thread_vars(threads, thread_setting).items():
        if value is None:
            env.pop(var, None)
        else:
            env[var] = value
    # numba's cache=True notices edits to a function's own file only, not to the kernels it calls
    # from other files: a cache directory per source hash never serves stale machine code (and
    # keeps two checkouts apart)
    base = Path(os.environ.get("NUMBA_CACHE_DIR") or paths.ROOT / ".numba-cache")
    env["NUMBA_CACHE_DIR"] = str(base / source_hash(src or paths.ROOT))
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(shim), str(src), os.environ.get("PYTHONPATH")) if p)
    return env


def _tree_memory(proc, cpu_seen: dict) -> tuple[int, int, int]:
    """(sum RSS, sum PSS, max single RSS) in bytes over ``proc`` and its descendants; records their CPU time."""
    import psutil

    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0, 0, 0
    rss_sum = pss_sum = rss_max = 0
    for p in procs:
        try:
            # PSS (/proc/PID/smaps_rollup) splits the pages forked chain workers share; reading it walks
            # the process's page tables under its memory-map lock, which stalls the process's own
            # allocations: 4 times a second on a 10 GB process that was 1.3-1.5x on a 2-thread sweep.
            # One process shares no pages within the tree: its RSS (a counter) is the measure.
            mi = p.memory_full_info() if len(procs) > 1 else p.memory_info()
            rss, pss = mi.rss, getattr(mi, "pss", mi.rss)
        except psutil.AccessDenied:
            try:
                rss = pss = p.memory_info().rss
            except psutil.Error:
                continue
        except psutil.Error:
            continue
        rss_sum += rss
        pss_sum += pss
        rss_max = max(rss_max, rss)
        try:
            ct = p.cpu_times()
            cpu_seen[(p.pid, p.create_time())] = ct.user + ct.system
        except psutil.Error:
            pass
    return rss_sum, pss_sum, rss_max


def _busy_cpu_s() -> float:
    """Non-idle CPU seconds of the whole machine since boot (all cores)."""
    import psutil

    t = psutil.cpu_times()
    return float(sum(getattr(t, f) for f in t._fields if f not in ("idle", "iowait", "guest", "guest_nice")))


def own_cpu_s() -> float:
    """user + sys CPU seconds of this process and its waited-for children."""
    import resource

    a = resource.getrusage(resource.RUSAGE_SELF)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def monitor_child(cmd: list[str], log_path: Path, timeout_s: float, env: dict, cwd: Path,
                  mem_limit_mb: float | None = None) -> dict:
    """Run ``cmd`` in a new session with output to ``log_path``; poll its process tree until it ends.

    Returns the return code, elapsed seconds, whether it timed out, the machine's busy CPU seconds
    over the run (all processes), the CPU seconds of the child's tree as last polled, and peak
    memory: ``peak_pss_sum_mb`` (summed PSS of the tree, pages shared by forked chain workers split
    between them: the fairest total), ``peak_rss_sum_mb`` (summed RSS, shared pages counted in every
    process) and ``peak_rss_proc_mb`` (largest single process). With ``mem_limit_mb``, a tree whose
    summed RSS passes it is stopped like a timed-out one (``mem_limit_hit``), before the machine swaps.
    """
    import psutil

    log_path.parent.mkdir(parents=True, exist_ok=True)
    busy0 = _busy_cpu_s()
    self_cpu0 = time.process_time()
    cpu_seen: dict = {}
    peak = [0, 0, 0]
    load_max = 0.0
    timed_out = mem_hit = False
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=cwd)
        proc = psutil.Process(child.pid)
        while child.poll() is None:
            peak = [max(a, b) for a, b in zip(peak, _tree_memory(proc, cpu_seen), strict=True)]
            load_max = max(load_max, os.getloadavg()[0])
            mem_hit = mem_limit_mb is not None and peak[0] / 2**20 > mem_limit_mb
            if time.perf_counter() - t0 > timeout_s or mem_hit:
                timed_out = not mem_hit
                try:
                    os.killpg(child.pid, signal.SIGTERM)  # the child's own session only
                    child.wait(30)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(child.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                break
            time.sleep(POLL_S)
        rc = child.wait()
    return {
        "returncode": rc,
        "elapsed_s": time.perf_counter() - t0,
        "machine_busy_cpu_s": _busy_cpu_s() - busy0,
        "tree_cpu_s_polled": float(sum(cpu_seen.values())),  # misses < POLL_S per short-lived process
        "parent_cpu_s": time.process_time() - self_cpu0,  # this polling process
        "loadavg1_max": load_max,
        "timed_out": timed_out,
        "mem_limit_hit": mem_hit,
        "peak_rss_sum_mb": peak[0] / 2**20,
        "peak_pss_sum_mb": peak[1] / 2**20,
        "peak_rss_proc_mb": peak[2] / 2**20,
    }


def tail(path: Path, n: int = 25) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def run_worker(module: str, spec: dict, log_path: Path, timeout_s: float, src: Path | None = None) -> dict:
    """Run ``python -m module --worker SPEC`` in its own process and return its result with the monitor's numbers.

    ``src``: a checkout whose ``pymc_treesamplers`` the child imports instead of this one's (the
    benchmark code itself always comes from this checkout). ``other_load_cores`` is the average
    number of cores used by other processes during the run (machine-wide busy CPU time minus the
    run's own), the measure behind :func:`contention_note`.
    """
    with tempfile.TemporaryDirectory(prefix="bench_") as tmp:
        out_json = Path(tmp) / "result.json"
        cmd = [sys.executable]
        shim = None
        if src is not None:
            # -P keeps the working directory off sys.path, so PYTHONPATH alone decides: first a
            # directory holding only a link to this checkout's benchmarks, then ``src``
            shim = Path(tmp) / "shim"
            shim.mkdir()
            (shim / "benchmarks").symlink_to(paths.ROOT / "benchmarks")
            cmd.append("-P")
        cmd += ["-m", module, "--worker", json.dumps(dict(spec, out_json=str(out_json)))]
        mon = monitor_child(cmd, log_path, timeout_s, env=child_env(src, shim, spec.get("env_threads", 1),
                                                                 spec.get("thread_env", "pinned")),
                            cwd=paths.ROOT, mem_limit_mb=spec.get("mem_limit_mb"))
        if out_json.exists():
            res = json.loads(out_json.read_text())
        else:
            why = ("timed out" if mon["timed_out"] else
                   f"stopped at {spec['mem_limit_mb']:.0f} MB of memory" if mon["mem_limit_hit"] else
                   f"child exited with code {mon['returncode']}")
            res = {"spec": _public(spec), "status": "error", "error": f"{why}; log tail:\n{tail(log_path)}"}
    res.update(mon)
    ours = max(res.get("own_cpu_s") or 0.0, mon["tree_cpu_s_polled"]) + mon["parent_cpu_s"]
    res["other_load_cores"] = max(0.0, (mon["machine_busy_cpu_s"] - ours) / mon["elapsed_s"])
    res["measured_at"] = utc_now()
    res["log"] = rel(log_path)
    return res


def _public(spec: dict) -> dict:
    """The spec without the child's output paths."""
    return {k: v for k, v in spec.items() if not k.startswith("out_")}


def worker_main(spec_json: str, body: Callable[[dict], dict]) -> int:
    """Child side of :func:`run_worker`: run ``body(spec)``, write its dict (or the error) as JSON.

    Adds the peak RSS of this process and of its largest waited-for child (e.g. a chain worker),
    the CPU time of both, and the thread settings the child ran with.
    """
    import resource

    spec = json.loads(spec_json)
    result: dict = {"spec": _public(spec)}
    try:
        result.update(body(spec))
        result.setdefault("status", "ok")
    except Exception as exc:
        result.update(status="error", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
        traceback.print_exc()
    result["maxrss_self_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    result["maxrss_children_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    result["own_cpu_s"] = own_cpu_s()
    result["threads"] = {var: os.environ.get(var) for var in THREAD_VARS}
    save_json(result, Path(spec["out_json"]))
    print(f"worker done: status={result['status']}", flush=True)
    return 0


def start(argv: list[str] | None, parse_args: Callable[[list[str]], argparse.Namespace],
          worker_body: Callable[[dict], dict]) -> tuple[list[str], argparse.Namespace, int | None]:
    """Parse a script's command line and take the two modes every script has besides running:
    ``--worker SPEC`` (the child's side) and ``--render-only``. Returns ``(argv, args, code)``: the
    exit code of the mode taken, or None when the script should run its benchmark."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.worker is not None:
        return argv, args, worker_main(args.worker, worker_body)
    if args.render_only:
        return argv, args, rerender(args.json, args.out)
    try:  # before hours of sampling, not after: a report is generated only from a clean tree
        args.git_at_start = require_clean_tree(paths.ROOT, f"the report {rel(args.out or args.json)}")
    except DirtyTreeError as exc:
        print(exc, file=sys.stderr)
        return argv, args, 2
    return argv, args, None


def run_specs(module: str, args: argparse.Namespace, runs: list[tuple[str, dict]],
              describe: Callable[[dict], str], src_key: str | None = None) -> list[dict]:
    """Run each ``(name, spec)`` in its own child (log ``<report>_<name>.log``), printing progress and
    status lines; ``src_key``: the spec entry naming another checkout to run against."""
    results = []
    for i, (name, spec) in enumerate(runs, 1):
        print(f"[{i}/{len(runs)}] {name} ...", file=sys.stderr, flush=True)
        log = args.json.parent / "logs" / f"{args.json.stem}_{name.replace(' ', '_')}.log"
        src = Path(spec[src_key]) if src_key else None
        t0 = time.perf_counter()
        results.append(run_worker(module, spec, log, args.timeout_min * 60, src=src))
        print_status(results[-1], describe, t0)
    return results


def finish(module: str, argv: list[str], args: argparse.Namespace, settings: dict, results,
           render: Callable[[dict], str], raw: list[dict] = ()) -> int:
    """Save the run's JSON, write its report and print it; ``raw``: the records of its raw files
    (:func:`save_raw`), kept in the JSON's ``meta``. 2 when the tree is not clean (:func:`publish`)."""
    saved = {"meta": report_meta(module, argv, args.out, args.json), "settings": settings, "results": results}
    if raw:
        saved["meta"]["raw"] = list(raw)
    try:
        text = publish(saved, render, since=getattr(args, "git_at_start", None))
    except DirtyTreeError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(text)
    return 0


def grid_main(module: str, argv: list[str] | None, parse_args: Callable[[list[str]], argparse.Namespace],
              worker_body: Callable[[dict], dict], describe: Callable[[dict], str], render: Callable[[dict], str],
              plan: Callable[[argparse.Namespace], tuple[dict, list[tuple[str, dict]]]]) -> int:
    """The whole ``main`` of a script that runs a list of configurations: the worker and render-only
    modes (:func:`start`), else ``plan(args) -> (settings, runs)``, each run in its child
    (:func:`run_specs`), the report (:func:`finish`)."""
    argv, args, code = start(argv, parse_args, worker_body)
    if code is not None:
        return code
    settings, runs = plan(args)
    return finish(module, argv, args, settings, run_specs(module, args, runs, describe), render)


def chosen_settings(args: argparse.Namespace, quick: dict, full: dict, **extra) -> dict:
    """A run's settings: the ``quick`` sizes under ``--quick``, else the ``full`` ones, then ``quick`` and
    ``extra`` in the order given (the order the saved JSON keeps)."""
    return dict(quick if args.quick else full, quick=args.quick, **extra)


def print_status(res: dict, describe: Callable[[dict], str], t0: float) -> None:
    """One line on stderr: status, the script's summary of a successful result, contention."""
    msg = res.get("status", "?")
    if msg == "ok":
        msg += ": " + describe(res)
        note = contention_note(res)
        if note:
            msg += f" [{note}]"
    elif res.get("error"):
        msg += ": " + res["error"].splitlines()[0]
    print(f"    {msg} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)


# =========================================================================== command line


def add_harness_args(
    parser: argparse.ArgumentParser, timeout_min: float, out_default: str = "docs/reports/<report>.md"
) -> None:
    """Options every benchmark has: timeout, report files, render-only mode, and the hidden worker entry."""
    parser.add_argument("--out", default=None, help=f"markdown report (default: {out_default})")
    parser.add_argument("--json", default=None, help="the report's JSON (default: benchmarks/results/<report>.json)")
    parser.add_argument(
        "--render-only", action="store_true", help="rebuild the report from its saved JSON, without sampling"
    )
    parser.add_argument(
        "--render", nargs="?", const="", default=None, metavar="JSON", help="same as --render-only [--json JSON]"
    )
    parser.add_argument(
        "--timeout-min", type=float, default=timeout_min, help="kill one configuration's process after this long"
    )
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)


def resolve_report_paths(args: argparse.Namespace, stem: str) -> None:
    """Fill ``args.out`` / ``args.json`` (absolute) from the report's default stem; set ``args.render_only``.

    The JSON is named after the report (``docs/reports/x.md`` <-> ``benchmarks/results/x.json``). In
    render-only mode an unspecified ``--out`` stays None: the saved JSON knows its report.
    """
    if args.render is not None:
        args.render_only = True
        args.json = args.json or args.render or None
    explicit_out = args.out
    out = Path(args.out or paths.REPORTS_DIR / f"{stem}.md")
    args.out = out if out.is_absolute() else paths.ROOT / out
    js = Path(args.json or paths.RESULTS_DIR / f"{args.out.stem}.json")
    args.json = js if js.is_absolute() else paths.ROOT / js
    if args.render_only and explicit_out is None:
        args.out = None


def int_list(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x.strip()]


def report_parser(module: str, doc: str, quick_help: str | None = None) -> argparse.ArgumentParser:
    """A benchmark's command line: ``python -m <module>``, described by its docstring's first paragraph, with
    ``--quick`` (a smoke run, report ``<stem>-quick``) when ``quick_help`` says what it runs."""
    p = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.split("\n\n")[0])
    if quick_help is not None:
        p.add_argument("--quick", action="store_true", help=quick_help)
    return p


def parse_report_args(parser: argparse.ArgumentParser, argv: list[str], stem: str, timeout_min: float,
                      out_default: str = "docs/reports/<report>.md") -> argparse.Namespace:
    """Add the harness options to a benchmark's ``parser``, parse ``argv`` and resolve the report's paths
    (``<stem>-quick`` under ``--quick``)."""
    add_harness_args(parser, timeout_min=timeout_min, out_default=out_default)
    args = parser.parse_args(argv)
    resolve_report_paths(args, stem + ("-quick" if getattr(args, "quick", False) else ""))
    return args


def measuring(args: argparse.Namespace) -> bool:
    """Whether this invocation measures (not a worker child, not a re-render from saved JSON): only then are
    the benchmark's own options checked and its runs started."""
    return args.worker is None and not args.render_only


def parse_case_args(argv: list[str], module: str, doc: str, cases, stem: str, quick_help: str,
                    timeout_min: float = 30.0) -> argparse.Namespace:
    """The command line of a script whose runs are named cases: ``--cases``, ``--quick`` (report
    ``<stem>-quick``) and the harness options; ``args.cases`` becomes a checked list."""
    p = report_parser(module, doc)
    p.add_argument("--cases", default=",".join(cases), help=f"comma list from {list(cases)}")
    p.add_argument("--quick", action="store_true", help=quick_help)
    args = parse_report_args(p, argv, stem, timeout_min)
    if measuring(args):
        args.cases = choice_list(args.cases, cases, p, "case(s)")
    return args


def run_notes(results: list[dict], label: Callable[[dict], str]) -> list[str]:
    """Report lines for runs that met contention or did not finish, each named by ``label(spec)``."""
    notes = [f"* {label(r['spec'])}: {note}" for r in results
             if r.get("status") == "ok" and (note := contention_note(r))]
    notes += [f"* {label(r['spec'])}: **{r.get('status')}** "
              f"{(r.get('error') or '').splitlines()[0] if r.get('error') else ''}"
              for r in results if r.get("status") != "ok"]
    return notes + [""] if notes else []


def report_footer(saved: dict, label: Callable[[dict], str] | None = None, results: list[dict] | None = None
                  ) -> list[str]:
    """The lines that close a report: :func:`run_notes` for the runs (default: all saved) when ``label`` names
    them, then the source line."""
    notes = run_notes(saved["results"] if results is None else results, label) if label is not None else []
    return notes + [source_line(saved["meta"]), ""]


def add_cases_option(parser: argparse.ArgumentParser, cases) -> None:
    """``--cases``: a comma list of ``cases``, its default resolved by :func:`chosen_cases`."""
    parser.add_argument("--cases", default=None, help=f"comma list from {list(cases)}")


def chosen_cases(args: argparse.Namespace, parser: argparse.ArgumentParser, cases, quick: str) -> list[str]:
    """The checked ``--cases`` list: as given, else ``quick`` under ``--quick``, else every case."""
    return choice_list(args.cases or (quick if args.quick else ",".join(cases)), cases, parser, "case(s)")


def choice_list(s: str, choices, parser: argparse.ArgumentParser, what: str) -> list[str]:
    out = [x.strip() for x in s.split(",") if x.strip()]
    bad = [x for x in out if x not in choices]
    if bad:
        parser.error(f"unknown {what} {bad}; choose from {list(choices)}")
    return out
