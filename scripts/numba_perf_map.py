"""Name the numba kernels in a ``perf`` profile: write ``/tmp/perf-<pid>.map`` for this process.

``perf`` shows jitted code as bare addresses. Call :func:`write_perf_map` in the process you profile,
after the kernels ran once, then attach ``perf record -p <pid>`` while it keeps running; ``perf report``
reads the map by itself. Kernels must have been *compiled* in that process: code loaded from numba's
on-disk cache keeps no LLVM module to read the addresses from, so point ``NUMBA_CACHE_DIR`` at an empty
directory for the profiled run. Each function's size is the distance to the next one (numba does not
report sizes), which is exact enough to attribute samples.

Example (a PG chain on the 7-row test data)::

    NUMBA_CACHE_DIR=$(mktemp -d) python my_chain.py &   # calls write_perf_map() after a warm-up
    perf record -F 2000 -p $! -o /tmp/perf.data -- sleep 5
    perf report -i /tmp/perf.data --no-children --sort symbol

This is how the SMC core's reference counting (NRT_incref/NRT_decref at 47% of a tiny-data PG sweep) and
the residual add's false sharing were found.
"""

from __future__ import annotations

import gc
import os


def write_perf_map(path: str | None = None) -> int:
    """Write a perf map of every numba function compiled in this process; return how many it names.

    >>> write_perf_map(os.devnull) >= 0
    True
    """
    addrs: dict[int, str] = {}
    for obj in gc.get_objects():
        if type(obj).__name__ != "CPUDispatcher":
            continue
        for cres in list(obj.overloads.values()):
            lib = cres.library
            for fn in lib._final_module.functions:  # empty for code loaded from the on-disk cache
                if fn.is_declaration:
                    continue
                addr = lib.get_pointer_to_function(fn.name)
                if addr:
                    addrs[addr] = fn.name
    items = sorted(addrs.items())
    with open(path or f"/tmp/perf-{os.getpid()}.map", "w") as fh:
        for i, (addr, name) in enumerate(items):
            size = min(items[i + 1][0] - addr, 1 << 20) if i + 1 < len(items) else 4096
            fh.write(f"{addr:x} {size:x} {name}\n")
    return len(items)
