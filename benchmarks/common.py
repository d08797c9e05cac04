"""Shared helpers for the benchmark scripts.

Kept free of heavy imports (no pymc / pytensor at module import time) so that the
parent process that orchestrates the benchmark stays small: every measured
configuration runs in its own child process.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as _md
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# --------------------------------------------------------------------------- data


def friedman1_f(X: np.ndarray) -> np.ndarray:
    """Noise-free Friedman #1 mean function (only the first 5 columns matter)."""
    return 10.0 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20.0 * (X[:, 2] - 0.5) ** 2 + 10.0 * X[:, 3] + 5.0 * X[:, 4]


def friedman1_data(n: int, seed: int, n_test: int = 1000, p: int = 10, noise_sd: float = 1.0):
    """Training data (X, y, f) of size ``n`` and a test set (X_test, f_test).

    The training set depends on (seed, n) only, so every sampler and every m
    sees exactly the same data for a given n.  The test set depends on the seed
    only, so it is shared across all n as well.  ``f_test`` is noise free.
    """
    rng = np.random.default_rng([seed, n])
    X = rng.uniform(size=(n, p))
    f = friedman1_f(X)
    y = f + noise_sd * rng.normal(size=n)
    rng_test = np.random.default_rng([seed, 0, 1])  # independent stream, not a function of n
    X_test = rng_test.uniform(size=(n_test, p))
    f_test = friedman1_f(X_test)
    return X, y, f, X_test, f_test


# --------------------------------------------------------------------------- diagnostics


def bulk_ess(draws: np.ndarray) -> np.ndarray:
    """Bulk ESS (rank-normalised, split chains; Vehtari et al. 2021) via arviz-stats.

    ``draws`` has shape (chain, draw, *rest); returns an array of shape ``rest``
    (a 0-d array for a scalar quantity).  Uses ``arviz_stats.base.array_stats.ess``
    (the numpy array interface of arviz 1.x) with ``method="bulk"``.
    """
    from arviz_stats.base import array_stats

    return np.asarray(array_stats.ess(np.asarray(draws, dtype=float), chain_axis=0, draw_axis=1, method="bulk"))


def rank_rhat(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat (arviz_stats array interface), same layout as :func:`bulk_ess`."""
    from arviz_stats.base import array_stats

    return np.asarray(array_stats.rhat(np.asarray(draws, dtype=float), chain_axis=0, draw_axis=1, method="rank"))


def fit_metrics(
    sigma_draws: np.ndarray,
    f_test_draws: np.ndarray,
    f_test_true: np.ndarray,
    ess_idx: np.ndarray,
    wall_s: float,
) -> dict:
    """Numbers reported for one fit.

    sigma_draws: (chain, draw); f_test_draws: (chain, draw, n_test), draw-matched
    with sigma (same chain/draw indexing); f_test_true: (n_test,).
    """
    sigma_draws = np.asarray(sigma_draws, dtype=float)
    f_test_draws = np.asarray(f_test_draws, dtype=float)
    post_mean_f = f_test_draws.mean(axis=(0, 1))
    rmse = float(np.sqrt(np.mean((post_mean_f - f_test_true) ** 2)))
    ess_sigma = float(bulk_ess(sigma_draws))
    ess_f = bulk_ess(f_test_draws[:, :, ess_idx])
    return {
        "rmse_test": rmse,
        "sigma_mean": float(sigma_draws.mean()),
        "sigma_sd": float(sigma_draws.std()),
        "sigma_mean_per_chain": [float(v) for v in sigma_draws.mean(axis=1)],
        "ess_bulk_sigma": ess_sigma,
        "ess_bulk_f_min": float(np.min(ess_f)),
        "ess_bulk_f_median": float(np.median(ess_f)),
        "rhat_sigma": float(rank_rhat(sigma_draws)),
        "rhat_f_max": float(np.max(rank_rhat(f_test_draws[:, :, ess_idx]))),
        # correlation of the chains' sigma traces: ~0 for independent chains
        "sigma_chain_corr": (
            float(np.corrcoef(sigma_draws[0], sigma_draws[1])[0, 1]) if sigma_draws.shape[0] >= 2 else None
        ),
        "ess_per_s_sigma": ess_sigma / wall_s,
        "min_ess_per_s_f": float(np.min(ess_f)) / wall_s,
        "_post_mean_f": post_mean_f,
        "_ess_f": ess_f,
    }


# --------------------------------------------------------------------------- environment


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def total_ram_gb() -> float | None:
    try:
        import psutil

        return round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:  # pragma: no cover
        return None


def nproc() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


VERSION_PACKAGES = [
    "pymc-treesamplers",
    "pymc",
    "pytensor",
    "numpy",
    "numba",
    "arviz",
    "arviz-stats",
    "pymc-bart",
    "bartrs",
    "stochtree",
]


def package_versions() -> dict:
    out = {}
    for name in VERSION_PACKAGES:
        try:
            out[name] = _md.version(name)
        except _md.PackageNotFoundError:
            out[name] = None
    return out


def machine_info() -> dict:
    return {
        "nproc": nproc(),
        "cpu_model": cpu_model(),
        "ram_gb": total_ram_gb(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def git_state(repo: Path) -> str | None:
    """Short HEAD commit of ``repo`` (+ '-dirty' if the package or benchmarks have local changes), or None."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", "pymc_treesamplers", "benchmarks"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


# --------------------------------------------------------------------------- child runner


def _tree_memory(proc, cpu_seen: dict | None = None) -> tuple[int, int, int]:
    """(sum RSS, sum PSS, max single RSS) in bytes over ``proc`` and its descendants.

    If ``cpu_seen`` is given, it is updated with {(pid, create_time): user+sys CPU seconds}.
    """
    import psutil

    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0, 0, 0
    rss_sum = pss_sum = rss_max = 0
    for p in procs:
        try:
            mi = p.memory_full_info()  # reads /proc/PID/smaps_rollup: gives pss
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
        if cpu_seen is not None:
            try:
                ct = p.cpu_times()
                cpu_seen[(p.pid, p.create_time())] = ct.user + ct.system
            except psutil.Error:
                pass
    return rss_sum, pss_sum, rss_max


def run_child(cmd: list[str], log_path: Path, timeout_s: float, poll_s: float = 0.25, env=None, cwd=None) -> dict:
    """Run ``cmd`` in a new session, poll memory of its whole process tree.

    Returns returncode, elapsed seconds, timed_out flag and peak memory numbers:
    ``peak_rss_sum_mb`` (peak of the summed RSS of the process tree, counts
    copy-on-write pages shared by forked chain workers once per process),
    ``peak_pss_sum_mb`` (same with PSS, shared pages split between processes:
    the fairest "total memory of the run"), ``peak_rss_proc_mb`` (largest
    single process).
    """
    import psutil

    log_path.parent.mkdir(parents=True, exist_ok=True)
    busy0 = _busy_cpu_s()
    self_cpu0 = time.process_time()
    cpu_seen: dict = {}
    load_max = 0.0
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=cwd)
        proc = psutil.Process(child.pid)
        peak = [0, 0, 0]
        timed_out = False
        while child.poll() is None:
            mem = _tree_memory(proc, cpu_seen)
            peak = [max(a, b) for a, b in zip(peak, mem, strict=True)]
            load_max = max(load_max, os.getloadavg()[0])
            if time.perf_counter() - t0 > timeout_s:
                timed_out = True
                try:
                    os.killpg(child.pid, signal.SIGTERM)  # our own child's session only
                    child.wait(30)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(child.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                break
            time.sleep(poll_s)
        rc = child.wait()
    elapsed = time.perf_counter() - t0
    mb = 2**20
    return {
        "returncode": rc,
        "elapsed_s": elapsed,
        # CPU seconds used by the whole machine while the child ran (all processes,
        # ours included); the caller subtracts the child's own CPU time to detect
        # contention from other jobs.
        "machine_busy_cpu_s": _busy_cpu_s() - busy0,
        # CPU of the child's process tree as last seen by the poller (misses < poll_s per process)
        "tree_cpu_s_polled": float(sum(cpu_seen.values())),
        "parent_cpu_s": time.process_time() - self_cpu0,  # this (polling) process
        "loadavg1_max": load_max,
        "timed_out": timed_out,
        "peak_rss_sum_mb": peak[0] / mb,
        "peak_pss_sum_mb": peak[1] / mb,
        "peak_rss_proc_mb": peak[2] / mb,
    }


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


def tail(path: Path, n: int = 25) -> str:
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def dump_json(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")
    tmp.replace(path)


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


# --------------------------------------------------------------------------- formatting


def fmt(x, digits: int = 3) -> str:
    """Compact number formatting for markdown tables ('—' for missing)."""
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


def md_table(headers: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def python_exe() -> str:
    return sys.executable
