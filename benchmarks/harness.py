"""The benchmark harness: child processes, contention monitor, environment, saved results, reports.

A benchmark script is its spec, its worker body and its tables; everything else is done here, the
same way for every benchmark:

* :func:`run_worker` runs one measured configuration as ``python -m <script> --worker SPEC`` in its
  own process session (threads pinned, numba cache keyed by the package source, timeout, log file)
  while it polls the memory of the child's process tree and the machine's busy CPU time, so a
  report can flag runs during which other processes competed for the cores. :func:`worker_main`
  is the child's side. ``src=`` runs the child against another checkout of the package.
* :func:`environment` and :func:`report_meta` capture the machine, package versions and git state.
* Every report has one JSON file, ``benchmarks/results/<report>.json`` with ``meta``, ``settings``
  and ``results``; the script's ``render(saved)`` turns it into ``docs/<report>.md``, so a report
  can always be rebuilt from its JSON (``--render-only``; ``python -m benchmarks.harness`` rebuilds
  all of them).
* A report is measured and written only from a clean tree (:func:`require_clean_tree`, asked before
  the run and again before writing; ``BENCH_ALLOW_DIRTY=1`` writes it anyway, marked ``-dirty``).
  Re-rendering saved JSON does not ask: it measures nothing.
* Git keeps the summaries the reports show; draws and traces go to an ignored ``raw/`` folder, and the
  JSON records each file's size, sha256 and the command that regenerates it (:func:`save_raw`,
  :func:`load_raw`; ``python -m benchmarks.harness --verify-raw``).
* :func:`fmt`, :func:`md_table`, :func:`column_table` (a table from ``(header, cell)`` pairs),
  :func:`header_lines`, :func:`contention_note` and :func:`source_line` are the pieces every
  report shares.

No pymc import here: the parent process only orchestrates.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib
import importlib.metadata as md
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
DOCS_DIR = ROOT / "docs"

# one thread per process: parallel chains run in their own processes, and a second layer of
# threads would make the timings depend on what else runs on the machine
THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
CONTENTION_WARN_CORES = 0.3
POLL_S = 0.25
CORE_PACKAGES = ("pymc-treesamplers", "pymc", "pytensor", "numpy", "numba", "arviz", "arviz-stats")
PEER_PACKAGES = ("pymc-bart", "bartrs", "stochtree")


# =========================================================================== environment


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def machine_info() -> dict:
    """CPU count (affinity), CPU model, RAM, Python and platform of this machine."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.lower().startswith("model name")), cpu)
    except OSError:
        pass
    try:
        import psutil

        ram = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        ram = None
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_model": cpu,
        "ram_gb": ram,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def package_versions(names: tuple[str, ...] = CORE_PACKAGES + PEER_PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None if not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


# the sources that make a report's numbers: the package, the benchmark scripts and the build settings; not
# what the runs write (benchmarks/results, docs), so that a run's own outputs do not make its tree dirty
SOURCE_PATHSPEC = ("pymc_treesamplers", "benchmarks", "pyproject.toml", ":(exclude)benchmarks/results")
# BENCH_ALLOW_DIRTY=1: write a report from a tree with local changes anyway (its git state says -dirty)
ALLOW_DIRTY_ENV = "BENCH_ALLOW_DIRTY"


class DirtyTreeError(RuntimeError):
    """A report was about to be measured or written from a tree whose sources have local changes."""


def dirty_paths(repo: Path) -> list[str] | None:
    """The sources of ``repo`` (:data:`SOURCE_PATHSPEC`) with local changes, untracked files included
    (``git status --porcelain`` lines); None if git cannot tell (no git, not a checkout)."""
    try:
        st = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", *SOURCE_PATHSPEC], capture_output=True, text=True
        )
    except OSError:
        return None
    if st.returncode != 0:
        return None
    return [line for line in st.stdout.splitlines() if line.strip()]


def git_state(repo: Path) -> str | None:
    """Short HEAD of ``repo``, ``-dirty`` if its sources (:data:`SOURCE_PATHSPEC`) have local changes; None
    if unknown."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    except OSError:
        return None
    if head.returncode != 0:
        return None
    dirty = dirty_paths(repo)
    return head.stdout.strip() + ("-dirty" if dirty is None or dirty else "")


def require_clean_tree(repo: Path, what: str, since: str | None = None) -> str | None:
    """The git state of ``repo`` before measuring or writing ``what`` (a report): raises
    :class:`DirtyTreeError` when its sources have local changes, when git cannot tell, or when the state
    is no longer ``since`` (the state at the start of the run), unless ``BENCH_ALLOW_DIRTY=1``; then
    the report is written, and its git state (in the JSON and the report's header) ends in ``-dirty``.

    Re-rendering saved JSON (``make bench-render``, ``--render-only``) measures nothing and does not ask.
    """
    dirty, state = dirty_paths(repo), git_state(repo)
    if dirty is None or state is None:
        reason = f"git cannot tell whether {repo} is a clean checkout"
    elif dirty:
        shown = "; ".join(d.strip() for d in dirty[:8]) + (f"; and {len(dirty) - 8} more" if len(dirty) > 8 else "")
        reason = f"the sources have local changes ({shown})"
    elif since is not None and state != since:
        reason = f"the checkout moved from {since} to {state} during the run"
    else:
        return state
    if os.environ.get(ALLOW_DIRTY_ENV) == "1":
        print(f"warning: {reason}; writing {what} anyway ({ALLOW_DIRTY_ENV}=1), marked git {state}", file=sys.stderr)
        return state
    raise DirtyTreeError(
        f"refusing to write {what}: {reason}. A report is generated only from a clean tree: see `git status`, "
        f"commit or stash the changes, and rerun (or set {ALLOW_DIRTY_ENV}=1 to write it anyway, marked '-dirty'). "
        "Re-rendering saved JSON (`make bench-render`) needs no clean tree."
    )


def environment(repo: Path = ROOT) -> dict:
    """Machine, package versions and git state, as saved with every measured configuration that outlives its run."""
    return {"machine": machine_info(), "versions": package_versions(), "git": git_state(repo)}


def source_hash(tree: Path) -> str:
    """Hash of the package's Python source in checkout ``tree``."""
    h = hashlib.sha1()
    for path in sorted((tree / "pymc_treesamplers").rglob("*.py")):
        h.update(str(path.relative_to(tree)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


# =========================================================================== child processes


def child_env(src: Path | None = None, shim: Path | None = None, threads: int = 1) -> dict[str, str]:
    """Environment of a child: threads pinned (to 1 unless a run measures threads), numba cache per
    source, PYTHONPATH for ``src``."""
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = str(threads)
    # numba's cache=True notices edits to a function's own file only, not to the kernels it calls
    # from other files: a cache directory per source hash never serves stale machine code (and
    # keeps two checkouts apart)
    base = Path(os.environ.get("NUMBA_CACHE_DIR") or ROOT / ".numba-cache")
    env["NUMBA_CACHE_DIR"] = str(base / source_hash(src or ROOT))
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
            (shim / "benchmarks").symlink_to(ROOT / "benchmarks")
            cmd.append("-P")
        cmd += ["-m", module, "--worker", json.dumps(dict(spec, out_json=str(out_json)))]
        mon = monitor_child(cmd, log_path, timeout_s, env=child_env(src, shim, spec.get("env_threads", 1)), cwd=ROOT,
                            mem_limit_mb=spec.get("mem_limit_mb"))
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
        args.git_at_start = require_clean_tree(ROOT, f"the report {rel(args.out or args.json)}")
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


# =========================================================================== saved results


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o))


def save_json(obj, path: Path) -> None:
    """Write ``obj`` as indented JSON, atomically (numpy scalars and arrays become plain JSON)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, default=_json_default) + "\n")
    tmp.replace(path)


def load_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


# =========================================================================== raw files
#
# Draws and traces that a report does not show are not kept in git: they go to a ``raw/`` folder next
# to the results (ignored by git), and the summary JSON keeps a record of each file (its path, size,
# sha256 and the command that regenerates it). ``python -m benchmarks.harness --verify-raw`` checks them.


def save_raw(path: Path, arrays: dict[str, np.ndarray], regenerate: str | None = None) -> dict:
    """Write ``arrays`` as an ``.npz`` whose bytes depend on the arrays alone (fixed zip timestamps: a
    rerun that draws the same numbers gives the same checksum) and return its :func:`raw_record`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asarray(arrays[name]), allow_pickle=False)
    tmp.replace(path)
    return raw_record(path, regenerate)


def raw_record(path: Path, regenerate: str | None = None) -> dict:
    """What a summary JSON keeps of a raw file: path (from the repository), size, sha256, and the command
    that regenerates it."""
    data = Path(path).read_bytes()
    rec = {"path": rel(path), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if regenerate:
        rec["regenerate"] = regenerate
    return rec


def raw_status(record: dict) -> str:
    """'ok', 'missing' or 'differs' (the file there is not the one the record describes)."""
    p = Path(record["path"])
    p = p if p.is_absolute() else ROOT / p
    if not p.exists():
        return "missing"
    return "ok" if hashlib.sha256(p.read_bytes()).hexdigest() == record["sha256"] else "differs"


def load_raw(record: dict) -> dict[str, np.ndarray]:
    """The arrays of a raw file recorded by :func:`save_raw`, after checking its checksum. Raw files are
    not in git: a missing one raises FileNotFoundError naming the command that regenerates it."""
    status = raw_status(record)
    how = record.get("regenerate", "rerunning the benchmark that recorded it")
    if status == "missing":
        raise FileNotFoundError(
            f"{record['path']} is not here (raw draws and traces are kept out of git): `{how}` regenerates it; "
            f"`python -m benchmarks.harness --verify-raw` then checks it against sha256 {record['sha256']}"
        )
    if status == "differs":
        raise ValueError(
            f"{record['path']} is not the file its results recorded (sha256 {record['sha256']}): regenerated "
            f"by other code, versions or machine? `{how}` regenerates it together with its summary"
        )
    p = Path(record["path"])
    with np.load(p if p.is_absolute() else ROOT / p) as z:
        return {k: z[k] for k in z.files}


def raw_records(obj) -> list[dict]:
    """Every raw-file record anywhere in a saved JSON object."""
    if isinstance(obj, dict):
        if {"path", "bytes", "sha256"} <= obj.keys():
            return [obj]
        return [rec for v in obj.values() for rec in raw_records(v)]
    if isinstance(obj, list):
        return [rec for v in obj for rec in raw_records(v)]
    return []


def verify_raw() -> int:
    """``--verify-raw``: check every raw file recorded in ``benchmarks/results`` against its checksum; 1 if
    one is missing or differs (each with the command that regenerates it)."""
    seen: dict[str, dict] = {}
    for js in sorted(RESULTS_DIR.rglob("*.json")):
        if "raw" not in js.relative_to(RESULTS_DIR).parts:
            for rec in raw_records(load_json(js)):
                seen.setdefault(rec["path"], rec)
    bad = 0
    for path, rec in sorted(seen.items()):
        status = raw_status(rec)
        bad += status != "ok"
        how = f": `{rec['regenerate']}` regenerates it" if status != "ok" and rec.get("regenerate") else ""
        print(f"{path}: {status}{how}", file=sys.stderr)
    print(f"{len(seen) - bad} of {len(seen)} recorded raw files present and as recorded", file=sys.stderr)
    return 1 if bad else 0


def rel(path: Path | str) -> str:
    """``path`` relative to the repository (``../x`` for a sibling of it), as reports show it."""
    p = Path(path)
    p = (ROOT / p if not p.is_absolute() else p).resolve()
    if p.is_relative_to(ROOT):
        return str(p.relative_to(ROOT))
    if p.is_relative_to(ROOT.parent):
        return f"../{p.relative_to(ROOT.parent)}"
    return str(p)


def report_meta(module: str, argv: list[str], out: Path | None, json_path: Path) -> dict:
    """Where a report comes from: command, time, git state, machine, versions, and its two files (no markdown:
    None); from a tree with local changes (``BENCH_ALLOW_DIRTY=1``) also ``dirty``, the changed sources."""
    meta = {
        "module": module,
        "argv": list(argv),
        "generated": utc_now(),
        "git": git_state(ROOT),
        "machine": machine_info(),
        "versions": package_versions(),
        "out": rel(out) if out is not None else None,
        "json": rel(json_path),
    }
    dirty = dirty_paths(ROOT)
    if dirty:
        meta["dirty"] = dirty
    return meta


def render_saved(json_path: Path) -> tuple[Path | None, str]:
    """(report path or None, text) of the report saved in ``json_path``, rendered by the script that made it."""
    saved = load_json(json_path)
    module = importlib.import_module(saved["meta"]["module"])
    out = saved["meta"].get("out")
    return (ROOT / out if out else None), module.render(saved)


def publish(saved: dict, render: Callable[[dict], str], since: str | None = None) -> str:
    """Save a report's JSON, render it from exactly that, write the markdown (if it has one); return the text.

    Only from a clean tree (:func:`require_clean_tree`; ``since``: the git state at the start of the run):
    else raises :class:`DirtyTreeError`, writes neither file and keeps the JSON in ``raw/rejected/``
    (ignored by git), so that a long run is not lost.
    """
    meta = saved["meta"]
    try:
        require_clean_tree(ROOT, " and ".join(f for f in (meta.get("out"), meta["json"]) if f), since)
    except DirtyTreeError as exc:
        kept = RESULTS_DIR / "raw" / "rejected" / Path(meta["json"]).name
        save_json(saved, kept)
        raise DirtyTreeError(f"{exc} This run's results are kept in {rel(kept)}.") from None
    save_json(saved, ROOT / meta["json"])
    text = render(load_json(ROOT / meta["json"]))
    if meta.get("out"):
        out = ROOT / meta["out"]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    print(f"wrote {meta['out'] or '(no markdown)'} and {meta['json']}", file=sys.stderr)
    return text


def rerender(json_path: Path, out: Path | None = None) -> int:
    """``--render-only``: rebuild a report from its saved JSON, without sampling (printed if it has no file)."""
    if not Path(json_path).exists():
        print(f"no saved results at {rel(json_path)}: run the benchmark first", file=sys.stderr)
        return 2
    default_out, text = render_saved(json_path)
    out = out or default_out
    if out is None:
        print(text)
        return 0
    out.write_text(text)
    print(f"rewrote {rel(out)} from {rel(json_path)}", file=sys.stderr)
    return 0


def saved_reports() -> list[Path]:
    """Every report JSON in ``benchmarks/results/`` that has a markdown page in the repository."""
    return [p for p in sorted(RESULTS_DIR.glob("*.json")) if load_json(p).get("meta", {}).get("out")]


# =========================================================================== command line


def add_harness_args(
    parser: argparse.ArgumentParser, timeout_min: float, out_default: str = "docs/<report>.md"
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

    The JSON is named after the report (``docs/x.md`` <-> ``benchmarks/results/x.json``). In
    render-only mode an unspecified ``--out`` stays None: the saved JSON knows its report.
    """
    if args.render is not None:
        args.render_only = True
        args.json = args.json or args.render or None
    explicit_out = args.out
    out = Path(args.out or DOCS_DIR / f"{stem}.md")
    args.out = out if out.is_absolute() else ROOT / out
    js = Path(args.json or RESULTS_DIR / f"{args.out.stem}.json")
    args.json = js if js.is_absolute() else ROOT / js
    if args.render_only and explicit_out is None:
        args.out = None


def int_list(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x.strip()]


def parse_case_args(argv: list[str], module: str, doc: str, cases, stem: str, quick_help: str,
                    timeout_min: float = 30.0) -> argparse.Namespace:
    """The command line of a script whose runs are named cases: ``--cases``, ``--quick`` (report
    ``<stem>-quick``) and the harness options; ``args.cases`` becomes a checked list."""
    p = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.split("\n\n")[0])
    p.add_argument("--cases", default=",".join(cases), help=f"comma list from {list(cases)}")
    p.add_argument("--quick", action="store_true", help=quick_help)
    add_harness_args(p, timeout_min=timeout_min)
    args = p.parse_args(argv)
    resolve_report_paths(args, stem + ("-quick" if args.quick else ""))
    if args.worker is None and not args.render_only:
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


def choice_list(s: str, choices, parser: argparse.ArgumentParser, what: str) -> list[str]:
    out = [x.strip() for x in s.split(",") if x.strip()]
    bad = [x for x in out if x not in choices]
    if bad:
        parser.error(f"unknown {what} {bad}; choose from {list(choices)}")
    return out


# =========================================================================== report pieces


def fmt(x, digits: int = 3) -> str:
    """Compact number for a markdown table ('—' for missing)."""
    if x is None:
        return "—"
    if isinstance(x, str):
        return x
    try:
        if not np.isfinite(x):
            return "—"
    except TypeError:
        return str(x)
    ax = abs(x)
    if ax >= 1000:
        return f"{x:,.0f}"
    if ax >= 100:
        return f"{x:.0f}"
    if ax >= 10:
        return f"{x:.1f}"
    if ax >= 1:
        return f"{x:.{digits - 1}f}"
    if ax == 0:
        return "0"
    return f"{x:.{digits}g}"


def md_table(headers: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


Column = tuple[str, Callable[[dict], object]]


def column_table(columns: list[Column], items: list[dict]) -> str:
    """Markdown table with one row per item; a column is ``(header, item -> cell)``."""
    return md_table([h for h, _ in columns], [[cell(x) for _, cell in columns] for x in items])


def if_ok(cell: Callable[[dict], object]) -> Callable[[dict], object]:
    """A cell that shows '—' for a configuration that failed (its monitor numbers say nothing)."""
    return lambda r: cell(r) if r.get("status", "ok") == "ok" else "—"


def machine_text(m: dict) -> str:
    return f"{m['nproc']} CPUs ({m['cpu_model']}), {m['ram_gb']} GB RAM, Python {m['python']}, {m['platform']}"


def command_line(module: str, argv: list[str]) -> str:
    """``python -m <module> <argv>``, as a report shows the command that made it."""
    return " ".join(["python -m", module, *(shlex.quote(a) for a in argv)])


def header_lines(title: str, meta: dict, packages: tuple[str, ...] = CORE_PACKAGES, runs: list[dict] = ()) -> list[str]:
    """Title, command, git, machine and versions of a report.

    ``runs``: measured configurations that carry their own ``machine`` (saved results reused from
    earlier sessions); the ones measured on another machine than the report's are counted.
    """
    command = command_line(meta["module"], meta["argv"])
    git = f" (git {meta['git']})" if meta.get("git") else ""
    vers = meta["versions"]
    shown = ", ".join(f"{k} {vers[k]}" for k in packages if vers.get(k))
    missing = [k for k in packages if k in vers and vers[k] is None]
    lines = [
        f"# {title}",
        "",
        f"Generated {meta['generated']} by `{command}`{git}.",
        "",
        f"* Machine: {machine_text(meta['machine'])}.",
        f"* Versions: {shown}." + (f" Not installed: {', '.join(missing)}." if missing else ""),
    ]
    elsewhere: dict[str, int] = {}
    for r in runs:
        if r.get("machine") and r["machine"] != meta["machine"]:
            elsewhere[machine_text(r["machine"])] = elsewhere.get(machine_text(r["machine"]), 0) + 1
    for text, count in elsewhere.items():
        lines.append(
            f"* {count} of the {len(runs)} rows were measured on another machine: {text} "
            "(*measured* in the details gives each row's time)."
        )
    return lines


def contention_note(res: dict) -> str | None:
    """Warning for a run during which other processes used more than ``CONTENTION_WARN_CORES`` cores."""
    other = res.get("other_load_cores")
    if other is not None and other > CONTENTION_WARN_CORES:
        return f"⚠ other processes used {other:.1f} cores on average during this run: timings inflated"
    return None


def source_line(meta: dict) -> str:
    """The last line of every report: where its numbers are and how to rebuild it."""
    return (
        f"This page is generated from `{meta['json']}`: `python -m {meta['module']} --render-only "
        f"--json {meta['json']}` rebuilds it without sampling."
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.harness``: rebuild every saved report from its JSON.

    It measures nothing, so it runs on a dirty tree too: the numbers and the git state in each report are
    the saved ones; only the text around them comes from the checkout's render code.
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.harness", description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="only report which docs differ from their JSON")
    parser.add_argument(
        "--verify-raw", action="store_true", help="check the raw files (draws, traces) the results record, by sha256"
    )
    args = parser.parse_args(argv)
    if args.verify_raw:
        return verify_raw()
    stale = 0
    for path in saved_reports():
        out, text = render_saved(path)
        if out.exists() and out.read_text() == text:
            print(f"{rel(out)}: up to date", file=sys.stderr)
            continue
        stale += 1
        if args.check:
            print(f"{rel(out)}: differs from {rel(path)}", file=sys.stderr)
        else:
            out.write_text(text)
            print(f"{rel(out)}: rewritten from {rel(path)}", file=sys.stderr)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
