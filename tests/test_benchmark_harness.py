"""The benchmark harness: a report is measured and written only from a clean tree; raw draws leave git with a
checksum (issue 29). Fast: a throwaway git repository, no sampling."""

import argparse
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from benchmarks import harness

ROOT = Path(__file__).resolve().parent.parent


pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A committed checkout with a package, a benchmark script and a saved result, as the harness's ROOT."""
    files = {
        "pymc_treesamplers/__init__.py": "",
        "benchmarks/bench.py": "x = 1\n",
        "benchmarks/results/r.json": "{}\n",
        "docs/index.md": "docs\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "init")
    monkeypatch.setattr(harness.paths, "ROOT", tmp_path)
    monkeypatch.setattr(harness.paths, "RESULTS_DIR", tmp_path / "benchmarks" / "results")
    monkeypatch.delenv(harness.ALLOW_DIRTY_ENV, raising=False)
    return tmp_path


def _saved() -> dict:
    meta = {"module": "benchmarks.bench", "argv": [], "git": None}
    meta.update(out="docs/r.md", json="benchmarks/results/r.json")
    return {"meta": meta, "settings": {}, "results": [{"x": 1}]}


def _render(saved: dict) -> str:
    return f"report {saved['results'][0]['x']}\n"


def test_clean_tree_writes_the_report(repo):
    state = harness.require_clean_tree(repo, "r")
    assert state and not state.endswith("-dirty")
    harness.publish(_saved(), _render, since=state)
    assert (repo / "docs" / "r.md").read_text() == "report 1\n"


def test_dirty_tree_refuses_and_writes_nothing(repo):
    (repo / "benchmarks" / "bench.py").write_text("x = 2\n")
    with pytest.raises(harness.DirtyTreeError, match="git status") as err:
        harness.publish(_saved(), _render)
    assert "benchmarks/bench.py" in str(err.value) and harness.ALLOW_DIRTY_ENV in str(err.value)
    assert not (repo / "docs" / "r.md").exists()
    assert (repo / "benchmarks" / "results" / "r.json").read_text() == "{}\n"
    kept = repo / "benchmarks" / "results" / "raw" / "rejected" / "r.json"  # the run is not lost
    assert harness.load_json(kept)["results"] == [{"x": 1}]


def test_untracked_source_is_dirty_but_outputs_are_not(repo):
    (repo / "benchmarks" / "results" / "r.json").write_text('{"new": 1}\n')  # what runs write
    (repo / "docs" / "index.md").write_text("edited\n")
    assert harness.require_clean_tree(repo, "r")
    (repo / "pymc_treesamplers" / "new.py").write_text("")
    with pytest.raises(harness.DirtyTreeError):
        harness.require_clean_tree(repo, "r")


def test_escape_hatch_writes_a_report_marked_dirty(repo, monkeypatch):
    (repo / "benchmarks" / "bench.py").write_text("x = 2\n")
    monkeypatch.setenv(harness.ALLOW_DIRTY_ENV, "1")
    assert harness.require_clean_tree(repo, "r").endswith("-dirty")
    harness.publish(_saved(), _render)
    assert (repo / "docs" / "r.md").read_text() == "report 1\n"
    meta = harness.report_meta("benchmarks.bench", [], repo / "docs" / "r.md", repo / "benchmarks/results/r.json")
    assert meta["git"].endswith("-dirty") and meta["dirty"] == [" M benchmarks/bench.py"]


def test_checkout_that_moves_during_the_run_is_refused(repo):
    state = harness.require_clean_tree(repo, "r")
    (repo / "benchmarks" / "bench.py").write_text("x = 3\n")
    _git(repo, "commit", "-q", "-am", "edit")
    with pytest.raises(harness.DirtyTreeError, match="during the run"):
        harness.require_clean_tree(repo, "r", since=state)


def test_a_run_is_refused_before_it_samples(repo):
    (repo / "benchmarks" / "bench.py").write_text("x = 2\n")
    args = argparse.Namespace(worker=None, render_only=False, out=repo / "docs" / "r.md", json=None)

    def body(spec):
        raise AssertionError("must not run")

    _, _, code = harness.start([], lambda argv: args, body)
    assert code == 2


def test_raw_file_checksum_and_how_to_regenerate(repo):
    path = repo / "benchmarks" / "results" / "raw" / "a.npz"
    rec = harness.save_raw(path, {"x": np.arange(3.0), "y": np.ones((2, 2))}, "python -m benchmarks.bench")
    assert rec["path"] == "benchmarks/results/raw/a.npz" and rec["bytes"] == path.stat().st_size
    assert harness.save_raw(path, {"y": np.ones((2, 2)), "x": np.arange(3.0)})["sha256"] == rec["sha256"]
    np.testing.assert_array_equal(harness.load_raw(rec)["x"], np.arange(3.0))
    path.unlink()
    with pytest.raises(FileNotFoundError, match="python -m benchmarks.bench"):
        harness.load_raw(rec)
