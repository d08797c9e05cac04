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


def pytest_collection_modifyitems(config, items):
    """Mark the tests listed in tests/slow.txt ``slow``: ``make check`` runs the rest."""
    slow = _slow_list()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _close_pyplot_figures():
    """pymc-bart's plot calls draw on pyplot figures (as pymc-bart's do): close them after each test."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
