"""Rewrite tests/slow.txt, the tests `make check` leaves to `make test`, from a pytest durations report.

    .venv/bin/python -m pytest -n 2 --durations=0 > durations.log
    .venv/bin/python scripts/slow_tests.py durations.log [--seconds 6]

A test is listed when its setup + call + teardown took at least ``--seconds`` in that run; tests already
marked ``slow`` in their file are not listed again. tests/conftest.py marks every listed test ``slow``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
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


def marked_slow_in_source() -> set[str]:
    """Test ids that their own files mark slow (collected with ``-m slow`` and the list ignored)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--co", "-m", "slow"],
                         cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PMT_SLOW_LIST": ""})
    return {line.strip() for line in out.stdout.splitlines() if "::" in line}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--seconds", type=float, default=6.0)
    a = ap.parse_args()
    already = marked_slow_in_source()
    slow = sorted(t for t, s in durations(a.log).items() if s >= a.seconds and t not in already)
    (ROOT / "tests" / "slow.txt").write_text(HEADER.format(s=a.seconds) + "".join(f"{t}\n" for t in slow))
    print(f"{len(slow)} tests listed in tests/slow.txt")


if __name__ == "__main__":
    main()
