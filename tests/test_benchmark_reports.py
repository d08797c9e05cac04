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
    "causal",
    "coldstart",
    "ct-horizon-sweep",
    "ct-wu",
    "ct-wu-quick",
    "defaults",
    "defaults-scale",
    "glm",
    "graph-route",
    "hypercube-mixing",
    "likelihood-cost",
    "lines",
    "lines-quick",
    "mechanisms",
    "mixing",
    "bambi",
    "monotone",
    "monotone-quick",
    "persistence",
    "routes",
    "scale-benchmark",
    "scale-readme",
    "sigma-every",
    "sigma-ridge",
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
    "threads",
    "threads-env",
    "twigs",
    "twigs-replicate",
    "variance",
    "varying",
]


@pytest.mark.parametrize("stem", REPORTS)
def test_report_renders_from_its_json(stem):
    out, text = harness.render_saved(ROOT / "benchmarks" / "results" / f"{stem}.json")
    assert out == ROOT / "docs" / "reports" / f"{stem}.md"
    assert text == out.read_text(), \
        f"docs/reports/{stem}.md differs from its JSON: python -m benchmarks.harness rebuilds it"


def test_every_generated_doc_is_listed():
    """A new report must come with its JSON (and join REPORTS), so that it is checked too."""
    reports = (ROOT / "docs" / "reports").glob("*.md")
    generated = {p.stem for p in reports if p.read_text().split("\n")[2].startswith("Generated ")}
    assert generated == set(REPORTS)
    assert {p.stem for p in harness.saved_reports()} == set(REPORTS)


def test_the_time_to_agreement_figure_is_drawn_from_its_json(tmp_path):
    """docs/reports/mixing.md shows a figure made from the same JSON (benchmarks/mixing.py): it must render, and the
    page must point at the file the benchmark writes."""
    from benchmarks import mixing

    saved = harness.load_json(ROOT / "benchmarks" / "results" / "mixing.json")
    path = tmp_path / mixing.figure_name(saved)
    mixing.figure(saved, path)
    assert path.stat().st_size > 10_000
    assert f"]({mixing.figure_name(saved)})" in (ROOT / "docs" / "reports" / "mixing.md").read_text()
    assert (ROOT / "docs" / "reports" / mixing.figure_name(saved)).exists()


def test_time_to_agreement_reads_the_first_grid_point_from_which_rhat_stays_below_the_threshold():
    import numpy as np

    from benchmarks import mixing

    rng = np.random.default_rng(0)
    chains, n = 4, 400
    sigma = rng.normal(1.0, 0.1, (chains, n))
    f_points = rng.normal(0.0, 1.0, (chains, n, mixing.N_POINTS))
    f_points[0, :100] += 5.0  # chain 0 starts elsewhere: R-hat falls as k grows past its transient
    thin = np.arange(0, n, 4)
    f_thin = rng.normal(0.0, 1.0, (chains, thin.size, 400))  # a standard normal posterior at 400 test rows
    wall = np.arange(1, n + 1) * 0.01
    target = rng.normal(0.0, 1.0, 400)  # drawn from it: its 90% intervals cover about 90%
    curve = mixing.agreement_curve(sigma, f_points, f_thin, thin, target, wall, True, grid=(25, 50, 100, 200))
    assert [pt["k"] for pt in curve] == [25, 50, 100, 200, 400]
    hit = mixing.first_agreement(curve, 1.1)
    assert hit is not None and hit["k"] > 100 and hit["wall_s"] == wall[hit["k"] - 1]
    assert all(pt["rhat_f_max"] >= 1.1 for pt in curve if pt["k"] < hit["k"])
    assert mixing.first_agreement(curve, 1.0) is None
    assert 0.85 < curve[-1]["coverage90"] < 0.95
    # agreement must hold: a dip below the threshold followed by a rise does not count
    bumpy = [{**pt, "rhat_f_max": r} for pt, r in zip(curve, (1.3, 1.05, 1.2, 1.05, 1.04), strict=True)]
    assert mixing.first_agreement(bumpy, 1.1)["k"] == 200
    assert mixing.first_agreement(bumpy[:3], 1.1) is None
