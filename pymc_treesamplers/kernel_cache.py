"""Where the package's compiled numba kernels are cached, in a folder that no edit can make stale.

numba's ``cache=True`` writes a kernel's machine code beside its source (``__pycache__``) or under
``NUMBA_CACHE_DIR``, and reuses it while that one source file is unchanged. Two things it does not see: an edit to
a kernel that it calls from another file (numba inlines callees into the caller's machine code), and a module-level
constant frozen in at compile time (``engine/rows.py``'s ``PMT_ROWS_BLOCK``). After ``git pull`` in an editable
install, or a wheel upgraded in place, a kernel could then run old code. And a cache beside the sources is one a
read-only site-packages cannot hold, while ``make`` targets and a user's own Python would each warm their own.

So every kernel of this package is cached under one folder per *key*: a hash of all the package's Python sources,
the Python, numba and NumPy versions, and the settings compiled into the code (numba's bounds checking and
optimisation level, ``PMT_ROWS_BLOCK``). Any edit anywhere in the package, or another version, is another folder,
and everything that depends on it compiles again. The folder is

* ``$NUMBA_CACHE_DIR/pymc-treesamplers/<key>`` when ``NUMBA_CACHE_DIR`` is set;
* else the user's cache folder: ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS,
  ``%LOCALAPPDATA%`` on Windows, then ``pymc-treesamplers/<key>``;
* else, where that cannot be written, the temporary folder's ``pymc-treesamplers-<user>/<key>``.

:func:`install` (run when this module is imported, which the package does before any kernel is defined) puts a
locator for the package's own source files in front of numba's; functions defined elsewhere (a user's,
PyTensor's) are cached as numba always does. Folders of old keys are left in place: :func:`clear` removes every
one but the current, or all.

>>> from pymc_treesamplers import kernel_cache
>>> kernel_cache.cache_dir().name == kernel_cache.cache_key()
True
"""

from __future__ import annotations

import functools
import getpass
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numba
import numpy as np
from numba.core import caching, config

__all__ = ["cache_base", "cache_dir", "cache_key", "clear", "install"]

PACKAGE_ROOT = Path(__file__).resolve().parent
# numba's base of cached-function implementations, whose class list names the locators tried in turn
# (CacheImpl in the numba of today, _CacheImpl in older ones)
_CACHE_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl
FOLDER = "pymc-treesamplers"


@functools.cache
def cache_key() -> str:
    """12 hex digits: the hash of every ``.py`` file of the package (its path and bytes), the versions, and the
    settings compiled into the kernels (module docstring). The same for every process on the same install.

    >>> len(cache_key())
    12
    """
    h = hashlib.sha1()
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        h.update(path.relative_to(PACKAGE_ROOT).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
    compiled_in = (sys.version, numba.__version__, np.__version__, config.BOUNDSCHECK, config.OPT,
                   os.environ.get("PMT_ROWS_BLOCK", ""))
    h.update(repr(compiled_in).encode())
    return h.hexdigest()[:12]


def _user_cache_root() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


@functools.cache
def cache_base() -> Path:
    """The folder that holds one subfolder per key (module docstring): under ``NUMBA_CACHE_DIR`` if it is set, else
    the user's cache folder, else the temporary folder.

    >>> cache_base().name.startswith("pymc-treesamplers")
    True
    """
    if config.CACHE_DIR:
        return Path(config.CACHE_DIR) / FOLDER
    base = _user_cache_root() / FOLDER
    if _writable(base):
        return base
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"{FOLDER}-{user}"


def cache_dir() -> Path:
    """The folder this install's kernels are cached in: :func:`cache_base` / :func:`cache_key`.

    >>> cache_dir().parent == cache_base()
    True
    """
    return cache_base() / cache_key()


def clear(everything: bool = False) -> list[Path]:
    """Remove the cached kernels of other keys (old sources or versions), or with ``everything`` also the current
    ones; returns the folders removed. Safe at any time: a removed kernel compiles again when next called.

    >>> isinstance(clear(), list)
    True
    """
    base = cache_base()
    if not base.is_dir():
        return []
    gone = [p for p in base.iterdir() if p.is_dir() and (everything or p.name != cache_key())]
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    return gone


class PackageCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba's locator for a function defined in this package's sources: the file's folder under
    :func:`cache_dir`, laid out as the package is. numba's own stamp (the source file's time and size) still
    guards each file; the key guards everything else."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        rel = Path(py_file).resolve().parent.relative_to(PACKAGE_ROOT)
        self._cache_path = str(cache_dir() / rel)

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            Path(py_file).resolve().relative_to(PACKAGE_ROOT)
        except (ValueError, OSError):
            return None  # not ours: numba's next locator
        return super().from_function(py_func, py_file)


def install() -> None:
    """Put :class:`PackageCacheLocator` first among numba's locators (once). A process that names its own
    locators (``NUMBA_CACHE_LOCATOR_CLASSES``) keeps them.

    >>> install(); _CACHE_IMPL._locator_classes[0] is PackageCacheLocator
    True
    """
    classes = _CACHE_IMPL._locator_classes
    if classes and classes[0] is PackageCacheLocator:
        return
    if PackageCacheLocator in classes:
        classes.remove(PackageCacheLocator)
    classes.insert(0, PackageCacheLocator)


install()
