"""What the test suite compiles, from the log ``PMT_COMPILE_LOG=path`` makes tests/conftest.py write.

    PMT_COMPILE_LOG=/tmp/compile.jsonl .venv/bin/python -m pytest -n 2 ...
    .venv/bin/python scripts/compile_log.py /tmp/compile.jsonl [--top 30]

Prints the seconds spent compiling in all (each compile's own time: a kernel compiled inside another's compile
is counted once, as its own), by kernel, by test, and the kernels compiled with the same signature in more than
one process (the work a shared cache could have saved: the second process compiled before the first saved).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def own_times(lines: list[dict]) -> list[float]:
    """Each compile's seconds less those of the compiles nested in it (same process)."""
    own = [e["end"] - e["start"] for e in lines]
    by_pid = defaultdict(list)
    for i, e in enumerate(lines):
        by_pid[e["pid"]].append(i)
    for idx in by_pid.values():
        for i in idx:
            for j in idx:
                ei, ej = lines[i], lines[j]
                if ej["depth"] == ei["depth"] + 1 and ei["start"] <= ej["start"] and ej["end"] <= ei["end"]:
                    own[i] -= ej["end"] - ej["start"]
    return own


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    lines = [json.loads(x) for x in a.log.read_text().splitlines() if x.strip()]
    own = own_times(lines)
    by_kernel, by_test, seen = defaultdict(float), defaultdict(float), defaultdict(set)
    for e, s in zip(lines, own, strict=True):
        by_kernel[e["kernel"]] += s
        by_test[e["test"]] += s
        seen[(e["kernel"], e["sig"])].add(e["pid"])
    again = sum(s for e, s in zip(lines, own, strict=True) if len(seen[(e["kernel"], e["sig"])]) > 1) / 2
    print(f"{len(lines)} compiles, {sum(own):.0f} s in all; about {again:.0f} s of it the same kernel and signature "
          f"compiled in a second process")
    for title, table in (("by kernel", by_kernel), ("by test", by_test)):
        print(f"\n{title}:")
        for name, s in sorted(table.items(), key=lambda kv: -kv[1])[: a.top]:
            print(f"  {s:7.1f} s  {name}")


if __name__ == "__main__":
    main()
