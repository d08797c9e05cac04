"""docs/layout.md is the map of the code: every module it lists exists, every module is listed."""

import ast
import re
import sys
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



# a dotted path into the package, as code imports it and docs name it (``pymc_treesamplers.results.storage``,
# ``pymc_treesamplers.engine.chain.Chain``)
_DOTTED = re.compile(r"\bpymc_treesamplers(?:\.[A-Za-z_]\w*)+")


def _resolves(name: str) -> bool:
    """Whether ``name`` is a module of the package, or an attribute reached from its longest importable prefix."""
    import importlib

    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _written_paths() -> dict[str, list[str]]:
    """Every dotted package path in the code, tests, benchmarks, notebooks and docs (not the changelog, which
    records what was), with the files that write it."""
    folders = ("pymc_treesamplers", "tests", "benchmarks", "scripts", "examples", "prototypes", "notebooks", "docs")
    files = [p for folder in folders for p in sorted((ROOT / folder).rglob("*"))
             if p.suffix in (".py", ".ipynb", ".md") and (ROOT / "benchmarks" / "results") not in p.parents]
    found: dict[str, list[str]] = {}
    for path in [*files, ROOT / "README.md", ROOT / "CONTRIBUTING.md"]:
        if path == Path(__file__):
            continue  # this file's own probes name paths that must not resolve
        for name in set(_DOTTED.findall(path.read_text())):
            found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def test_every_written_package_path_resolves():
    """No old module path anywhere: every ``pymc_treesamplers.…`` path in the package, tests, notebooks and docs
    imports (or is an attribute of what imports) without a finder or alias; and nothing answers for the paths
    from before the top level was grouped (``pymc_treesamplers.storage``, ``.bart``, ...)."""
    import sys

    import pymc_treesamplers as pmt

    found = _written_paths()
    assert len(found) > 50
    assert not {name: files for name, files in found.items() if not _resolves(name)}
    assert not any(type(f).__module__.startswith("pymc_treesamplers") for f in sys.meta_path)
    for old in ("bart", "storage", "predictive", "binning", "callers", "smctree", "gfr"):
        assert not _resolves(f"pymc_treesamplers.{old}"), old
    # what a user is shown stays a plain attribute of the package
    assert pmt.plots.__name__ == "pymc_treesamplers.results.plots"
    assert pmt.diagnostics.__name__ == "pymc_treesamplers.results.diagnostics"


def test_the_path_check_catches_an_old_path():
    assert _resolves("pymc_treesamplers.results.storage.ForestFormatError")
    assert _resolves("pymc_treesamplers.engine.chain.Chain.new")
    assert not _resolves("pymc_treesamplers.storage.ForestFormatError")
    assert not _resolves("pymc_treesamplers.results.diagnostics.no_such_function")
    found = _DOTTED.findall("see `pymc_treesamplers.results.plots.plot_pdp`.")
    assert found == ["pymc_treesamplers.results.plots.plot_pdp"]


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
    assert _outside_engine(_imports(probe, "from ...model.bart import BART")) == {"pymc_treesamplers.model.bart"}
    assert _outside_engine(_imports(probe, "from ... import results")) == {
        "pymc_treesamplers", "pymc_treesamplers.results"}
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """The package's modules and the package modules each imports (at any depth of the file, TYPE_CHECKING
    blocks and function bodies included: a cycle there is a cycle of the design). ``from a import b`` is an
    import of ``a.b`` when that is a module, else of ``a``; a name not a module is counted as its longest prefix
    that is one."""
    files = sorted((ROOT / "pymc_treesamplers").rglob("*.py"))
    modules = {_module_name(p) for p in files}

    def known(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for path in files:
        package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges.update(known(a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                edges.update(f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else known(mod) for a in node.names)
        me = _module_name(path)
        graph[me] = edges - {"", me}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_modules():
    graph = _import_graph()
    assert len(graph) > 80
    assert _cycles(graph) == []


def test_the_cycle_check_catches_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_outside_the_engine_the_package_imports_its_public_names_only():
    """The engine's face is engine/__init__.py: every other module of the package imports engine names from
    ``pymc_treesamplers.engine`` itself, and only names in its ``__all__`` (tests and benchmarks may reach the
    pieces)."""
    import pymc_treesamplers.engine as engine

    public = set(engine.__all__)
    assert all(hasattr(engine, name) for name in public)
    bad = {}
    for path in sorted((ROOT / "pymc_treesamplers").rglob("*.py")):
        if (ROOT / "pymc_treesamplers" / "engine") in path.parents:
            continue
        package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                if mod.startswith("pymc_treesamplers.engine.") or (
                        mod == "pymc_treesamplers.engine" and {a.name for a in node.names} - public):
                    bad.setdefault(str(path.relative_to(ROOT)), []).append(mod)
            elif isinstance(node, ast.Import) and any(a.name.startswith("pymc_treesamplers.engine.")
                                                      for a in node.names):
                bad.setdefault(str(path.relative_to(ROOT)), []).append("import")
    assert not bad


def _private_reads(path: Path, name: str = "step") -> set[str]:
    """The private attributes (``_x``, not dunder) a module reads or writes on a variable named ``name``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.add(node.attr)
    return found


def test_the_sweepers_use_the_seam_only():
    """A sweeper sees its step through steps/sweeper.py's SweptStep only: no private member of the step, and each
    sweeper has every method of the Sweeper protocol with the protocol's parameters."""
    import inspect

    from pymc_treesamplers.steps.cpu import CPUSweeper
    from pymc_treesamplers.steps.gpu import GPUSweeper
    from pymc_treesamplers.steps.sweeper import Sweeper, SweptStep

    for module in ("cpu", "gpu", "output", "compiling"):
        assert _private_reads(ROOT / "pymc_treesamplers" / "steps" / f"{module}.py") == set(), module
    methods = [n for n, v in vars(Sweeper).items() if inspect.isfunction(v) and not n.startswith("_")]
    assert sorted(methods) == ["arrived", "compile", "draw", "restore", "start", "trees"]
    for cls in (CPUSweeper, GPUSweeper):
        for name in methods:
            want = list(inspect.signature(getattr(Sweeper, name)).parameters)
            assert list(inspect.signature(getattr(cls, name)).parameters)[: len(want)] == want, (cls, name)
    # what a sweeper reads of the step is the step's
    from pymc_treesamplers.steps.base import BaseTreeStep

    for name in SweptStep.__annotations__:
        assert name in vars(BaseTreeStep) or name in inspect.getsource(BaseTreeStep.__init__), name
    for name in ("data", "prior", "output_values", "new_scratch", "sampler_stats"):
        assert callable(getattr(BaseTreeStep, name, None)) or isinstance(getattr(BaseTreeStep, name), property)


def test_the_seam_check_catches_a_private_read(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def draw(step):\n    step._failure(3)\n    return step.f, step.__class__\n")
    assert _private_reads(probe) == {"_failure"}
