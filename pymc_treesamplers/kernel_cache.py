"""Where the package's compiled numba kernels are cached, in a folder that no edit can make stale.

numba's ``cache=True`` writes a kernel's machine code beside its source (``__pycache__``) or under
``NUMBA_CACHE_DIR``, and reuses it while that one source file is unchanged. Two things it does not see: an edit to
a kernel that it calls from another file (numba inlines callees into the caller's machine code), and a module-level
constant frozen in at compile time (``engine/rows.py``'s ``PMT_ROWS_BLOCK``). After ``git pull`` in an editable
install, or a wheel upgraded in place, a kernel could then run old code. And a cache beside the sources is one a
read-only site-packages cannot hold, while ``make`` targets and a user's own Python would each warm their own.

So every kernel of this package is cached under one folder per *key*: a hash of all the package's Python sources,
the Python, numba and NumPy versions, and the settings of this package and of numba that a run is likely to change
(numba's bounds checking and optimisation level, ``PMT_ROWS_BLOCK``; numba keys each kernel on the CPU itself).
Any edit anywhere in the package, or another version, is another folder, and everything that depends on it
compiles again. The folder is

* ``$NUMBA_CACHE_DIR/pymc-treesamplers/<key>`` when ``NUMBA_CACHE_DIR`` is set (and can be written);
* else the user's cache folder: ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS,
  ``%LOCALAPPDATA%`` on Windows, then ``pymc-treesamplers/<key>``;
* else, where that cannot be written, the temporary folder's ``pymc-treesamplers-<uid>/<key>``, made private to
  the user (a folder there that another user owns is not used: a new private one is made).

numba's index of one file's kernels is read, extended and written back by each process that saves a kernel, with no
lock: two processes saving two signatures of one function at once could leave the index naming one signature's
machine code for the other. The package's cache folders take a file lock around each save (POSIX; elsewhere numba's
own behaviour), which ``python -m pymc_treesamplers.compile``, running several processes at once, relies on.

:func:`install` (run when this module is imported, which the package does before any kernel is defined) puts a
locator for the package's own source files in front of numba's; functions defined elsewhere (a user's,
PyTensor's) are cached as numba always does, and so are CUDA kernels (numba-cuda has a cache of its own; the
package caches none on disk). The key is computed once a process, from the sources as they were when the
package was imported. Folders of old keys are left in place: :func:`clear` removes every one but the current, or
all.

>>> from pymc_treesamplers import kernel_cache
>>> kernel_cache.cache_dir().name == kernel_cache.cache_key()
True
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: saves keep numba's own (unlocked) behaviour
    fcntl = None

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
    # the values as the code reads them (engine/rows.py's BLOCK), so that the same setting spelt two ways is one key
    compiled_in = (sys.version, numba.__version__, np.__version__, bool(config.BOUNDSCHECK), config.OPT,
                   int(os.environ.get("PMT_ROWS_BLOCK", 1 << 13)))
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


def _private_temp() -> Path:
    """The temporary folder's ``pymc-treesamplers-<uid>``, owned by this user and closed to others; a fresh private
    folder if that name is taken by someone else (numba's cache files are pickles: loading another user's would run
    their code)."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    path = Path(tempfile.gettempdir()) / f"{FOLDER}-{uid if uid is not None else 'user'}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = path.lstat()
        if stat.S_ISDIR(st.st_mode) and (uid is None or (st.st_uid == uid and not st.st_mode & 0o022)):
            return path
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix=f"{FOLDER}-"))


@functools.cache
def cache_base() -> Path:
    """The folder that holds one subfolder per key (module docstring): under ``NUMBA_CACHE_DIR`` if it is set (and
    can be written), else the user's cache folder, else a private folder in the temporary folder.

    >>> cache_base().name.startswith("pymc-treesamplers")
    True
    """
    for base in ([Path(config.CACHE_DIR) / FOLDER] if config.CACHE_DIR else []) + [_user_cache_root() / FOLDER]:
        if _writable(base):
            return base
    return _private_temp()


def cache_dir() -> Path:
    """The folder this install's kernels are cached in: :func:`cache_base` / :func:`cache_key`.

    >>> cache_dir().parent == cache_base()
    True
    """
    return cache_base() / cache_key()


def clear(everything: bool = False) -> list[Path]:
    """Remove the cached kernels of other keys (old sources or versions), or with ``everything`` also the current
    ones; returns the folders removed. Safe at any time: a removed kernel compiles again when next called.

    >>> removed = clear()  # doctest: +SKIP

    The example is not run: it really removes the folders. ``clear()`` keeps the kernels of the sources running
    now; ``clear(everything=True)`` removes them too.
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
    :func:`cache_dir`, laid out as the package is. numba's own stamp (a hash of the source file) still guards
    each file; the key guards everything else."""

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


# numba's own save (also when this module is imported a second time, e.g. reloaded)
_NUMBA_SAVE = getattr(caching.IndexDataCacheFile.save, "numba_save", caching.IndexDataCacheFile.save)


def _locked_save(self, key, data):
    """numba's save of one kernel into a file's index and data, under an exclusive lock on the folder's lock file
    when the folder is the package's (module docstring)."""
    if fcntl is None or not str(self._cache_path).startswith(str(cache_base())):
        return _NUMBA_SAVE(self, key, data)
    with open(os.path.join(self._cache_path, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _NUMBA_SAVE(self, key, data)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


_locked_save.numba_save = _NUMBA_SAVE


def install() -> None:
    """Put :class:`PackageCacheLocator` first among numba's locators and lock the saves into the package's folders
    (once). A process that names its own locators (``NUMBA_CACHE_LOCATOR_CLASSES``) keeps them.

    >>> install(); _CACHE_IMPL._locator_classes[0] is PackageCacheLocator
    True
    """
    caching.IndexDataCacheFile.save = _locked_save
    classes = _CACHE_IMPL._locator_classes
    if classes and classes[0] is PackageCacheLocator:
        return
    if PackageCacheLocator in classes:
        classes.remove(PackageCacheLocator)
    classes.insert(0, PackageCacheLocator)


install()
