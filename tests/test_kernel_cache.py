"""The package's kernel cache (pymc_treesamplers/kernel_cache.py): one folder per hash of the sources, so an edit to
a kernel's callee in another file recompiles its caller, which numba's own cache does not notice."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import pytest

import pymc_treesamplers
from pymc_treesamplers import kernel_cache

PACKAGE = Path(pymc_treesamplers.__file__).resolve().parent

# a caller in its own file of the copied package, calling a kernel of engine/prior.py
PROBE = '''
import numba

from .prior import log_psplit


@numba.njit(cache=True)
def probe(prior):
    return log_psplit(prior, 1)
'''

RUN = '''
import sys
sys.path.insert(0, {root!r})
import pymc_treesamplers
assert pymc_treesamplers.__file__.startswith({root!r}), pymc_treesamplers.__file__
from pymc_treesamplers.engine import probe as module  # the copy's own module, written by the test
probe = module.probe
from pymc_treesamplers.engine.records import TreePrior
value = probe(TreePrior(0.95, 2.0, 0.0, 1.0))
print(repr(value), sum(probe.stats.cache_hits.values()))
'''


def _copy(tmp_path: Path, with_locator: bool) -> Path:
    root = tmp_path / ("ours" if with_locator else "numba-only")
    shutil.copytree(PACKAGE, root / "pymc_treesamplers", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "pymc_treesamplers" / "engine" / "probe.py").write_text(PROBE)
    if not with_locator:  # the control: numba's cache alone, beside the sources
        init = root / "pymc_treesamplers" / "__init__.py"
        init.write_text(init.read_text().replace("from . import kernel_cache", "pass  # no package cache"))
    return root


def _run(root: Path, cache_home: Path) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(cache_home)
    out = subprocess.run([sys.executable, "-c", RUN.format(root=str(root))], env=env, capture_output=True,
                         text=True, check=True, cwd=root)
    value, hits = out.stdout.split()[-2:]
    return float(value), int(hits)


def _edit_callee(root: Path) -> None:
    prior = root / "pymc_treesamplers" / "engine" / "prior.py"
    old = "return math.log(prior.alpha) - prior.beta * math.log(1.0 + d)"
    text = prior.read_text()
    assert old in text
    prior.write_text(text.replace(old, "return math.log(prior.alpha) - prior.beta * math.log(1.0 + d) + 1.0"))


def test_an_edit_to_a_callee_in_another_file_recompiles_the_caller(tmp_path):
    results = {}
    for with_locator in (True, False):
        root, home = _copy(tmp_path, with_locator), tmp_path / f"home-{with_locator}"
        first, hits_first = _run(root, home)
        again, hits_again = _run(root, home)
        _edit_callee(root)
        edited, hits_edited = _run(root, home)
        assert (hits_first, hits_again, again) == (0, 1, first)  # compiled, then read from the cache
        results[with_locator] = (first, edited, hits_edited)
    first, edited, hits = results[True]
    assert hits == 0 and edited == pytest.approx(first + 1.0)  # the caller compiled again, with the new callee
    # the control: numba's own cache keeps the caller's machine code, with the old callee inlined in it (a sentinel:
    # should numba one day track callees, this line fails and the package's locator can be reconsidered)
    first, edited, hits = results[False]
    assert hits == 1 and edited == first


def test_the_folder_is_under_numba_cache_dir_or_the_users_cache(monkeypatch, tmp_path):
    try:
        monkeypatch.setattr(numba.core.config, "CACHE_DIR", "")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        kernel_cache.cache_base.cache_clear()
        if sys.platform.startswith("linux"):
            assert kernel_cache.cache_dir() == tmp_path / "xdg" / "pymc-treesamplers" / kernel_cache.cache_key()
        monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "numba"))
        kernel_cache.cache_base.cache_clear()
        assert kernel_cache.cache_dir() == tmp_path / "numba" / "pymc-treesamplers" / kernel_cache.cache_key()
        (kernel_cache.cache_base() / "0123456789ab").mkdir(parents=True)
        kernel_cache.cache_dir().mkdir()
        assert [p.name for p in kernel_cache.clear()] == ["0123456789ab"]
        assert kernel_cache.cache_dir().is_dir()
        assert [p.name for p in kernel_cache.clear(everything=True)] == [kernel_cache.cache_key()]
    finally:
        kernel_cache.cache_base.cache_clear()


def test_the_key_follows_the_settings_compiled_in(monkeypatch):
    key = kernel_cache.cache_key()

    def key_with(block):
        if block is None:
            monkeypatch.delenv("PMT_ROWS_BLOCK", raising=False)
        else:
            monkeypatch.setenv("PMT_ROWS_BLOCK", block)
        kernel_cache.cache_key.cache_clear()
        return kernel_cache.cache_key()

    try:
        assert key_with("2") != key_with("4")
        assert key_with(None) == key_with(str(1 << 13))  # the default spelt out is the same code, the same key
    finally:
        monkeypatch.undo()
        kernel_cache.cache_key.cache_clear()
    assert kernel_cache.cache_key() == key


def test_saves_into_the_package_folders_are_locked():
    from numba.core import caching

    assert caching.IndexDataCacheFile.save is kernel_cache._locked_save
    assert kernel_cache._NUMBA_SAVE is not kernel_cache._locked_save


def test_only_the_packages_functions_are_placed(tmp_path):
    source = tmp_path / "user_module.py"
    source.write_text(textwrap.dedent("""
        def f():
            return 1
    """))
    namespace: dict = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    assert kernel_cache.PackageCacheLocator.from_function(namespace["f"], str(source)) is None
    from pymc_treesamplers.engine import prior

    locator = kernel_cache.PackageCacheLocator.from_function(prior.log_psplit.py_func, prior.__file__)
    assert Path(locator.get_cache_path()) == kernel_cache.cache_dir() / "engine"
