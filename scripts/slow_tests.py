"""Rewrite tests/slow.txt, the tests `make check` leaves to `make test`, from a pytest durations report.

    .venv/bin/python -m pytest -n 2 --durations=0 > durations.log
    .venv/bin/python scripts/slow_tests.py durations.log [--seconds 6]

A test is listed when its setup + call + teardown took at least ``--seconds`` in that run. The list is the one
place a test is marked slow (no inline marks): tests/conftest.py marks every listed test ``slow``, and a
whole-suite collection refuses an id the list names that no longer exists.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = """\
# Tests that `make check` leaves to `make test` (marked slow by tests/conftest.py): each took at least {s:g} s
# on the 2-core machine in a full run. Regenerate: scripts/slow_tests.py (its docstring says how).
"""


def durations(log: Path) -> dict[str, float]:
    """Seconds per test id (setup + call + teardown) in a ``--durations=0`` report."""
    total: dict[str, float] = defaultdict(float)
    for line in log.read_text().splitlines():
        m = re.match(r"\s*([\d.]+)s (?:call|setup|teardown)\s+(\S+::\S+)", line)
        if m:
            total[m.group(2)] += float(m.group(1))
    return dict(total)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--seconds", type=float, default=6.0)
    a = ap.parse_args()
    slow = sorted(t for t, s in durations(a.log).items() if s >= a.seconds)
    (ROOT / "tests" / "slow.txt").write_text(HEADER.format(s=a.seconds) + "".join(f"{t}\n" for t in slow))
    print(f"{len(slow)} tests listed in tests/slow.txt")


if __name__ == "__main__":
    main()
