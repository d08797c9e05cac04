"""Rewrite tests/slow.txt, the tests `make check` leaves to `make test`, from a pytest durations report.

    .venv/bin/python -m pytest -n 2 --durations=0 > full.log                 # the whole suite
    .venv/bin/python -m pytest -n 2 --durations=0 -m "not slow" > check.log  # what `make check` runs, warm
    .venv/bin/python scripts/slow_tests.py full.log check.log [--seconds 3]

A test is listed when its setup + call + teardown took at least ``--seconds`` in any of the runs and it still
exists. Give `make check`'s own run too: a test there can pay for a fit that a slow test shares with it in the
whole suite (a cached fit is made by whichever test asks first), so it is slower there than in the full run.
The tests listed already stay listed while they exist (``--fresh``: start from an empty list). The list is the one
place a test is marked slow (no inline marks): tests/conftest.py marks every listed test ``slow``, and a
whole-suite collection refuses an id the list names that no longer exists.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = """\
# Tests that `make check` leaves to `make test` (marked slow by tests/conftest.py): each took at least {s:g} s
# on the 2-core machine in a full run or in `make check`'s. Regenerate: scripts/slow_tests.py (its docstring says how).
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
    ap.add_argument("logs", type=Path, nargs="+")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--fresh", action="store_true", help="forget the tests listed now")
    a = ap.parse_args()
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()
    exists = {line.strip() for line in collected if "::" in line}
    slow = {t for log in a.logs for t, s in durations(log).items() if s >= a.seconds}
    if not a.fresh:
        listed = (ROOT / "tests" / "slow.txt").read_text().splitlines()
        slow |= {line.strip() for line in listed if line.strip() and not line.startswith("#")}
    slow = sorted(slow & exists)
    (ROOT / "tests" / "slow.txt").write_text(HEADER.format(s=a.seconds) + "".join(f"{t}\n" for t in slow))
    print(f"{len(slow)} tests listed in tests/slow.txt")


if __name__ == "__main__":
    main()
