"""Where the harness reads and writes: the repository, its saved results and its generated reports (one place, so
that a test can point the harness at a throwaway repository)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
DOCS_DIR = ROOT / "docs"
REPORTS_DIR = DOCS_DIR / "reports"


def rel(path: Path | str) -> str:
    """``path`` relative to the repository (``../x`` for a sibling of it), as reports show it."""
    p = Path(path)
    p = (ROOT / p if not p.is_absolute() else p).resolve()
    if p.is_relative_to(ROOT):
        return str(p.relative_to(ROOT))
    if p.is_relative_to(ROOT.parent):
        return f"../{p.relative_to(ROOT.parent)}"
    return str(p)
