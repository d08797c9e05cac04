import os
import sys

# tests import their helpers (exact.py, kernel_chain.py) as top-level modules
sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("PYTENSOR_FLAGS", "")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _close_pyplot_figures():
    """pymc-bart's plot calls draw on pyplot figures (as pymc-bart's do): close them after each test."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
