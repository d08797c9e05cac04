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


@pytest.fixture(autouse=True)
def _close_pyplot_figures():
    """pymc-bart's plot calls draw on pyplot figures (as pymc-bart's do): close them after each test."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
