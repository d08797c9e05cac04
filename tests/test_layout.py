"""docs/layout.md is the map of the code: every module it lists exists, every module is listed."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _listed() -> set[str]:
    text = (ROOT / "docs" / "layout.md").read_text()
    block = text.split("```")[1]
    paths, stack = set(), []
    for line in block.splitlines():
        m = re.match(r"( *)(\S+)", line)
        if not m or not line.strip() or line.startswith(" " * 20):
            continue
        depth = len(m.group(1)) // 2
        name = m.group(2)
        stack = stack[:depth] + [name.rstrip("/")]
        if name.endswith(".py"):
            paths.add("/".join(stack))
    return paths


def test_layout_page_matches_the_package():
    actual = {str(p.relative_to(ROOT)) for p in (ROOT / "pymc_treesamplers").rglob("*.py")}
    actual -= {p for p in actual if p.endswith("__init__.py") and p != "pymc_treesamplers/__init__.py"}
    assert _listed() == actual
