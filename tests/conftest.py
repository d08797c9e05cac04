import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("PYTENSOR_FLAGS", "")

# tests call the engine's kernels directly, not through a Chain: numba's threading layer and pool first
# (engine/pool.py; tests/test_pool.py runs the package's own ways in from fresh processes, without this)
from pymc_treesamplers.engine import pool  # noqa: E402

pool.start()


def _slow_list() -> set[str]:
    """The test ids in tests/slow.txt (scripts/slow_tests.py); ``PMT_SLOW_LIST=""`` ignores the list."""
    if os.environ.get("PMT_SLOW_LIST") == "":
        return set()
    lines = (Path(__file__).parent / "slow.txt").read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


@pytest.hookimpl(tryfirst=True)  # before -m and -k deselect: every collected test is seen
def pytest_collection_modifyitems(config, items):
    """Mark the tests listed in tests/slow.txt ``slow`` (the one place slowness is written): ``make check`` runs
    the rest. A whole-suite collection refuses a listed id that no longer exists (a renamed test would silently
    leave the list)."""
    slow = _slow_list()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
    if not config.args or [Path(a).resolve() for a in config.args] == [Path(config.rootpath) / t for t in
                                                                        config.getini("testpaths")]:
        stale = slow - {item.nodeid for item in items}
        if stale:
            raise pytest.UsageError(f"tests/slow.txt lists tests that do not exist: {sorted(stale)[:5]} (and "
                                    f"{max(len(stale) - 5, 0)} more); regenerate it (scripts/slow_tests.py)")


# PMT_COMPILE_LOG=path: every numba compile in the test processes, one JSON line each (scripts/compile_log.py
# reads them): which kernel, for which test, from when to when, how deep inside another kernel's compile
_current_test = ["collection"]
if os.environ.get("PMT_COMPILE_LOG"):
    import json
    import time

    from numba.core import event

    class _CompileLog(event.Listener):
        def __init__(self, path: str):
            self.path, self.open = path, []

        def on_start(self, ev):
            self.open.append(time.perf_counter())

        def on_end(self, ev):
            start = self.open.pop()
            py = ev.data["dispatcher"].py_func
            line = {"pid": os.getpid(), "kernel": f"{py.__module__}.{py.__qualname__}",
                    "sig": str(ev.data["args"]), "test": _current_test[0], "start": start,
                    "end": time.perf_counter(), "depth": len(self.open)}
            with open(self.path, "a") as f:
                f.write(json.dumps(line) + "\n")

    event.register("numba:compile", _CompileLog(os.environ["PMT_COMPILE_LOG"]))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _current_test[0] = item.nodeid


@pytest.fixture(autouse=True)
def _close_pyplot_figures():
    """pymc-bart's plot calls draw on pyplot figures (as pymc-bart's do): close them after each test."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
