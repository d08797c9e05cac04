"""Turning saved results into Markdown: a report's provenance block, its publication (JSON first, then the page
rendered from it), re-rendering, and the pieces every report's tables share."""

from __future__ import annotations

import importlib
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import paths
from .paths import rel
from .provenance import (
    CORE_PACKAGES,
    DirtyTreeError,
    dirty_paths,
    git_state,
    machine_info,
    package_versions,
    require_clean_tree,
    utc_now,
)
from .store import load_json, save_json

# a run during which other processes used more cores than this on average is flagged in its report
CONTENTION_WARN_CORES = 0.3


def report_meta(module: str, argv: list[str], out: Path | None, json_path: Path) -> dict:
    """Where a report comes from: command, time, git state, machine, versions, and its two files (no markdown:
    None); from a tree with local changes (``BENCH_ALLOW_DIRTY=1``) also ``dirty``, the changed sources."""
    meta = {
        "module": module,
        "argv": list(argv),
        "generated": utc_now(),
        "git": git_state(paths.ROOT),
        "machine": machine_info(),
        "versions": package_versions(),
        "out": rel(out) if out is not None else None,
        "json": rel(json_path),
    }
    dirty = dirty_paths(paths.ROOT)
    if dirty:
        meta["dirty"] = dirty
    return meta


def render_saved(json_path: Path) -> tuple[Path | None, str]:
    """(report path or None, text) of the report saved in ``json_path``, rendered by the script that made it."""
    saved = load_json(json_path)
    module = importlib.import_module(saved["meta"]["module"])
    out = saved["meta"].get("out")
    return (paths.ROOT / out if out else None), module.render(saved)


def publish(saved: dict, render: Callable[[dict], str], since: str | None = None) -> str:
    """Save a report's JSON, render it from exactly that, write the markdown (if it has one); return the text.

    Only from a clean tree (:func:`require_clean_tree`; ``since``: the git state at the start of the run):
    else raises :class:`DirtyTreeError`, writes neither file and keeps the JSON in ``raw/rejected/``
    (ignored by git), so that a long run is not lost.
    """
    meta = saved["meta"]
    try:
        require_clean_tree(paths.ROOT, " and ".join(f for f in (meta.get("out"), meta["json"]) if f), since)
    except DirtyTreeError as exc:
        kept = paths.RESULTS_DIR / "raw" / "rejected" / Path(meta["json"]).name
        save_json(saved, kept)
        raise DirtyTreeError(f"{exc} This run's results are kept in {rel(kept)}.") from None
    save_json(saved, paths.ROOT / meta["json"])
    text = render(load_json(paths.ROOT / meta["json"]))
    if meta.get("out"):
        out = paths.ROOT / meta["out"]
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
    return [p for p in sorted(paths.RESULTS_DIR.glob("*.json")) if load_json(p).get("meta", {}).get("out")]


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


def smoke_title(title: str, settings: dict) -> str:
    """A report's title, marked when the saved run was a ``--quick`` smoke run."""
    return title + (" — --quick smoke run" if settings["quick"] else "")
