"""Where a measurement comes from: the machine, the package versions, the git state of the checkout, and the
guard that measures and writes a report only from a clean tree."""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata as md
import os
import platform
import subprocess
import sys
from pathlib import Path

from . import paths

CORE_PACKAGES = ("pymc-treesamplers", "pymc", "pytensor", "numpy", "numba", "arviz", "arviz-stats")
PEER_PACKAGES = ("pymc-bart", "bartrs", "stochtree")


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


def environment(repo: Path | None = None) -> dict:
    """Machine, package versions and git state (of ``repo``, default the repository), as saved with every measured
    configuration that outlives its run."""
    return {"machine": machine_info(), "versions": package_versions(), "git": git_state(repo or paths.ROOT)}


def source_hash(tree: Path) -> str:
    """Hash of the package's Python source in checkout ``tree``."""
    h = hashlib.sha1()
    for path in sorted((tree / "pymc_treesamplers").rglob("*.py")):
        h.update(str(path.relative_to(tree)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]
