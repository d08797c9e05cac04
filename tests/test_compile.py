"""``python -m pymc_treesamplers.compile``: its tasks, its checks of the command line, and a second run that
compiles nothing."""

import io
import json
import subprocess
import sys

import pytest

from pymc_treesamplers import compile as pmt_compile


def test_tasks_are_every_sampler_under_every_family():
    names = [t.name for t in pmt_compile.tasks()]
    assert len(names) == len(pmt_compile.SAMPLERS) * len(pmt_compile.FAMILIES) == len(set(names))
    assert "cgm-normal" in names and "ct-poisson" in names
    with pytest.raises(ValueError, match="samplers: unknown 'nuts'"):
        pmt_compile.tasks(["nuts"], ["normal"])


@pytest.mark.parametrize("argv, message", [(["--jobs", "0"], "--jobs must be at least 1"),
                                            (["--families", "gamma"], "families: unknown 'gamma'"),
                                            (["--threads", "0"], "threads must be between 1 and")])
def test_the_command_line_is_checked(argv, message):
    out = subprocess.run([sys.executable, "-m", "pymc_treesamplers.compile", *argv], capture_output=True, text=True)
    assert out.returncode == 2 and message in out.stderr


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True])
def test_compile_all_refuses_a_count_of_processes_that_is_not_one_or_more(jobs):
    with pytest.raises(ValueError, match="jobs must be a whole number"):
        pmt_compile.compile_all(pmt_compile.tasks(["cgm"], ["normal"]), jobs=jobs, out=io.StringIO())


def test_nothing_to_do_when_every_task_is_noted_for_this_cpu(monkeypatch, tmp_path):
    monkeypatch.setattr(pmt_compile, "_notes", lambda: tmp_path)
    chosen = pmt_compile.tasks(["cgm", "pg"], ["normal"])
    for t in chosen:
        (tmp_path / f"{t.name}.json").write_text(json.dumps({"cpu": pmt_compile._cpu()}))
    out = io.StringIO()
    assert pmt_compile.compile_all(chosen, jobs=2, out=out) == {}
    assert out.getvalue().startswith("nothing to compile: the kernels of 2 tasks")
    # a note from another CPU (an image built elsewhere), or an unreadable one, is not done: numba keys machine
    # code on the CPU
    (tmp_path / "pg-normal.json").write_text(json.dumps({"cpu": ["x86_64-unknown-linux-gnu", "generic", ""]}))
    (tmp_path / "cgm-normal.json").write_text("{")
    assert not any(pmt_compile.done(t) for t in chosen)


FRESH_FIT = """
import logging
logging.basicConfig(level=logging.INFO)
from pymc_treesamplers import compile as pmt_compile
pmt_compile.fit(pmt_compile.Task("growprune", "bernoulli"))
"""


@pytest.mark.slow
def test_a_task_runs_in_its_own_process_and_then_nothing_compiles():
    task = pmt_compile.Task("growprune", "bernoulli")
    note = pmt_compile._notes() / f"{task.name}.json"
    kept = note.read_bytes() if note.is_file() else None  # a note of this cache that was there before the test
    note.unlink(missing_ok=True)
    try:
        cmd = [sys.executable, "-m", "pymc_treesamplers.compile", "--samplers", "growprune", "--families",
               "bernoulli", "--jobs", "1"]
        first = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        assert "growprune-bernoulli: " in first and note.is_file()
        second = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        assert second.startswith("nothing to compile: the kernels of 1 task ")
        # a fresh process's fit of the same task loads its sweep from the cache: no compile notice
        fresh = subprocess.run([sys.executable, "-c", FRESH_FIT], capture_output=True, text=True, check=True)
        assert "compiling the" not in fresh.stderr, fresh.stderr[-2000:]
    finally:
        if kept is None:
            note.unlink(missing_ok=True)
        else:
            note.write_bytes(kept)
