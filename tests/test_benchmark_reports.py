"""Every published benchmark report is exactly what its saved JSON renders to (docs and results cannot drift)."""

from pathlib import Path

import pytest

from benchmarks import harness

ROOT = Path(__file__).resolve().parent.parent


REPORTS = [
    "benchmarks",
    "benchmarks-quick",
    "california-shipped",
    "california-shipped-quick",
    "coldstart",
    "ct-horizon-sweep",
    "ct-wu",
    "ct-wu-quick",
    "defaults",
    "glm",
    "hypercube-mixing",
    "likelihood-cost",
    "mixing",
    "persistence",
    "routes",
    "scale-benchmark",
    "scale-readme",
    "sparsity-benchmark",
    "sparsity-benchmark-quick",
    "pg-california",
    "pg-california-quick",
    "pg-hypercube",
    "pg-hypercube-quick",
    "pg-hypercube-range",
    "smctree-benchmark",
    "smctree-benchmark-quick",
    "speed",
]


@pytest.mark.parametrize("stem", REPORTS)
def test_report_renders_from_its_json(stem):
    out, text = harness.render_saved(ROOT / "benchmarks" / "results" / f"{stem}.json")
    assert out == ROOT / "docs" / f"{stem}.md"
    assert text == out.read_text(), f"docs/{stem}.md differs from its JSON: python -m benchmarks.harness rebuilds it"


def test_every_generated_doc_is_listed():
    """A new report must come with its JSON (and join REPORTS), so that it is checked too."""
    generated = {p.stem for p in (ROOT / "docs").glob("*.md") if p.read_text().split("\n")[2].startswith("Generated ")}
    assert generated == set(REPORTS)
    assert {p.stem for p in harness.saved_reports()} == set(REPORTS)
