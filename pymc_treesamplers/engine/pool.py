"""numba's threading layer and thread pool, set up once, in one place: :func:`start`.

Two things must hold before the package's first parallel launch in a process, and neither can be changed after
it:

* **The layer is fork-safe.** numba's OpenMP layer aborts a process forked after it was loaded once that process
  runs a parallel loop ("fork() called from a process already using GNU OpenMP"), and PyMC forks its chain
  workers on Linux: with threads > 1 and cores > 1 every chain would die. TBB is fork-safe and starts a parallel
  loop in microseconds; numba finds the library of the ``tbb`` wheel only when it is already loaded (it sits in
  the environment's lib/, off the loader's path). Without TBB, the workqueue layer: also fork-safe, but ~0.2 ms
  per launch. A layer the user chose (``NUMBA_THREADING_LAYER`` or ``numba.config.THREADING_LAYER``) is left
  alone.
* **The pool has started.** Kernels that link the parallel loops (every tree kernel does, through the
  long-range paths of :mod:`.rows`) and come from numba's on-disk cache do not start it themselves: run before it
  started, such a kernel crashes the process (a segfault in the single-tree SMC on a warm cache), even on the
  one-thread path.

So every way into the kernels calls :func:`start` first: a :class:`~pymc_treesamplers.engine.chain.Chain` when it
is made, :func:`~pymc_treesamplers.engine.rows.numba_threads` around each parallel region, and prediction.
Importing the package changes neither (docs/layout.md, "What importing the package does").
"""

from __future__ import annotations

import ctypes
import importlib
import os
import sys

import numba

_TBB_NAMES = {"linux": "libtbb.so.12", "darwin": "libtbb.12.dylib", "win32": "tbb12.dll"}

_started = False
_layer: str | None = None


def _tbb_candidates() -> list[str]:
    """Where the ``tbb`` wheel's library may be: the files its installed distribution records (found wherever pip
    put it: a virtual environment, ``--user``, ``--prefix``), the environment's lib folders, then the loader's path.

    >>> _tbb_candidates()[-1] in _TBB_NAMES.values()  # last: the bare name, for the loader's own path
    True
    """
    name = _TBB_NAMES.get(sys.platform)
    if not name:
        return []
    recorded = []
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        recorded = [str(f.locate()) for f in distribution("tbb").files or [] if f.name == name]
    except (PackageNotFoundError, OSError, ValueError):
        pass
    return [*recorded, os.path.join(sys.prefix, "lib", name), os.path.join(sys.prefix, "Library", "bin", name), name]


def _load_tbb() -> bool:
    for lib in _tbb_candidates():
        try:
            ctypes.CDLL(lib, mode=getattr(ctypes, "RTLD_GLOBAL", 0))
            importlib.import_module("numba.np.ufunc.tbbpool")  # fails if numba cannot use this TBB
        except (OSError, ImportError):
            continue
        return True
    return False


def start() -> str | None:
    """Choose the threading layer and start numba's pool, once per process; returns the layer this package chose
    (None: the user's choice was kept).

    >>> start() in ("tbb", "workqueue", None)
    True
    """
    global _started, _layer
    if not _started:
        tbb = _load_tbb()  # also when the user asked numba for TBB: then it is found
        if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
            numba.config.THREADING_LAYER = _layer = "tbb" if tbb else "workqueue"
        numba.get_num_threads()  # numba's public call that starts the pool
        _started = True
    return _layer


def threading_layer() -> str:
    """The layer in use, for messages: this package's choice, or the user's."""
    layer = start()
    return layer or f"{numba.config.THREADING_LAYER} (set by the user)"
