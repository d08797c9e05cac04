"""``python -m benchmarks.harness``: rebuild every saved report from its JSON, or verify the raw files."""

from __future__ import annotations

import argparse
import sys

from .paths import rel
from .report import render_saved, saved_reports
from .store import verify_raw


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.harness``: rebuild every saved report from its JSON.

    It measures nothing, so it runs on a dirty tree too: the numbers and the git state in each report are
    the saved ones; only the text around them comes from the checkout's render code.
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.harness", description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="only report which docs differ from their JSON")
    parser.add_argument(
        "--verify-raw", action="store_true", help="check the raw files (draws, traces) the results record, by sha256"
    )
    args = parser.parse_args(argv)
    if args.verify_raw:
        return verify_raw()
    stale = 0
    for path in saved_reports():
        out, text = render_saved(path)
        if out.exists() and out.read_text() == text:
            print(f"{rel(out)}: up to date", file=sys.stderr)
            continue
        stale += 1
        if args.check:
            print(f"{rel(out)}: differs from {rel(path)}", file=sys.stderr)
        else:
            out.write_text(text)
            print(f"{rel(out)}: rewritten from {rel(path)}", file=sys.stderr)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
