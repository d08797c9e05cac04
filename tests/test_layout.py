"""docs/layout.md is the map of the code: every module it lists exists, every module is listed."""

import ast
import re
import sys
from pathlib import Path

import pytest

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



# the package's top-level modules before they were grouped (model/, results/, estimators/), all still importable
_TOP_LEVEL_BEFORE = ["bart", "binning", "callers", "covariates", "datasets", "diagnostics", "distributed", "gfr",
                     "jumps", "plots", "predictive", "sigma_prior", "smctree", "split_rules", "storage", "testing"]


def test_the_module_paths_before_the_grouping_still_import():
    """``import pymc_treesamplers.plots``, ``from pymc_treesamplers.storage import ...`` and ``pmt.predictive``
    give the very module that moved (one object: patching either path patches both)."""
    import importlib

    import pymc_treesamplers as pmt
    from pymc_treesamplers.moved import MOVED

    for name in _TOP_LEVEL_BEFORE:
        old = f"pymc_treesamplers.{name}"
        module = importlib.import_module(old)
        assert getattr(pmt, name) is module
        assert module.__name__ == MOVED.get(old, old)
    assert set(MOVED) <= {f"pymc_treesamplers.{n}" for n in _TOP_LEVEL_BEFORE}
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pymc_treesamplers.no_such_module")


def _imports(path: Path, text: str | None = None) -> set[str]:
    """Absolute names of the modules a file imports (relative imports resolved from its package);
    ``text``: the file's text, else read from ``path``."""
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text() if text is None else text)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            names.add(mod)
            if not node.module:  # from . import a, b: the submodules
                names.update(f"{mod}.{a.name}" for a in node.names)
    return names


def _outside_engine(names: set[str]) -> set[str]:
    """The names an engine module may not import: not the standard library, numpy, numba or the engine."""
    allowed = {"numpy", "numba", "__future__"} | set(sys.stdlib_module_names)
    return {n for n in names if not (n == "pymc_treesamplers.engine" or n.startswith("pymc_treesamplers.engine.")
                                     or n.split(".")[0] in allowed)}


def test_the_engine_imports_numpy_and_numba_only():
    """engine/ is the numba core: it may import the standard library, numpy, numba and itself, never PyMC,
    PyTensor or another part of the package (which would bring them in)."""
    files = sorted((ROOT / "pymc_treesamplers" / "engine").rglob("*.py"))
    assert len(files) > 20
    bad = {str(p.relative_to(ROOT)): sorted(_outside_engine(_imports(p))) for p in files}
    assert not {k: v for k, v in bad.items() if v}


def test_the_engine_check_catches_an_import_from_outside():
    """The check fails on an engine file that imports PyMC, or the package outside the engine (relative
    imports resolved), and passes one that imports a sibling."""
    probe = ROOT / "pymc_treesamplers" / "engine" / "moves" / "growprune.py"
    assert _outside_engine(_imports(probe, "import pymc as pm")) == {"pymc"}
    assert _outside_engine(_imports(probe, "from pytensor.tensor import as_tensor")) == {"pytensor.tensor"}
    assert _outside_engine(_imports(probe, "from ...bart import BART")) == {"pymc_treesamplers.bart"}
    assert _outside_engine(_imports(probe, "from ... import predictive")) == {
        "pymc_treesamplers", "pymc_treesamplers.predictive"}
    assert _outside_engine(_imports(probe, "from ..rows import range_suff\nfrom . import cgm")) == set()


# what only engine/chain.py may call outside the engine: the pieces of a chain's set-up and its sweep
_CHAIN_ONLY = {"split_data", "TreePrior", "Forest", "Forest.empty", "init_roots", "new_scratch_tree", "run_sweep",
               "sweep", "forest_sum"}


def _hand_built(text: str) -> set[str]:
    """The names of :data:`_CHAIN_ONLY` that a file's code calls: ``f(...)``, ``Forest.empty(...)`` or
    ``module.f(...)`` (not ``x.sweep(...)``, which is also the chain's own method)."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name):
            names = {f.id}
        elif isinstance(f, ast.Attribute):
            names = {f.attr} - {"sweep"}
            if isinstance(f.value, ast.Name):
                names.add(f"{f.value.id}.{f.attr}")
        else:
            names = set()
        found |= names & _CHAIN_ONLY
    return found


def test_only_the_chain_object_builds_what_a_chain_holds():
    """Outside engine/, nothing builds split data, a tree prior, a forest or the driver's buffers by hand, nor
    runs the driver: the package, its benchmarks, examples and prototypes go through engine/chain.py's Chain
    (tests may build tiny kernels' inputs by hand: they test the pieces)."""
    files = [p for folder in ("pymc_treesamplers", "benchmarks", "examples", "prototypes", "scripts")
             for p in sorted((ROOT / folder).rglob("*.py"))
             if (ROOT / "pymc_treesamplers" / "engine") not in p.parents]
    assert len(files) > 60
    bad = {str(p.relative_to(ROOT)): sorted(_hand_built(p.read_text())) for p in files}
    assert not {k: v for k, v in bad.items() if v}


def test_the_chain_check_catches_a_forest_built_by_hand():
    assert _hand_built("f = Forest.empty(3, 5, 0.0)\ninit_roots(f.arrays(), data, 0.0)") == {
        "Forest.empty", "init_roots"}
    assert _hand_built("prior = records.TreePrior(0.95, 2.0, 0.0, 1.0)") == {"TreePrior"}
    assert _hand_built("prior = TreePrior(0.95, 2.0, 0.0, 1.0)\nw = new_scratch_tree(4)") == {
        "TreePrior", "new_scratch_tree"}
    assert _hand_built("chain = Chain.new(codes, 3, alpha=0.95, beta=2.0, mu0=0.0, s2=1.0)") == set()
