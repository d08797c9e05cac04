"""Calling compiled kernels from Python without numba's per-call typing: :class:`Bound`.

numba's dispatcher types every argument on every call, and typing a record (NamedTuple) argument is Python
work: 20-50 us for a step's records, as much as a whole update of a small tree. A chain's argument types never
change between its sweeps, so after the first call with each tuple of Python types the compiled entry point
is called directly.
"""

from __future__ import annotations

import numba


class Bound:
    """A numba function bound to the argument types of its calls.

    One entry point per tuple of Python types: the outputs of one BART variable may differ in their
    likelihood record's type, and each gets its own.

    >>> import numpy as np
    >>> @numba.njit
    ... def total(x):
    ...     return x.sum()
    >>> f = Bound(total)
    >>> f(np.ones(3)), f(np.ones(4))  # the second call skips the dispatcher
    (3.0, 4.0)
    >>> f.cached(np.ones(2))
    True
    """

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self.entries = {}

    def __call__(self, *args):
        key = tuple(type(a) for a in args)
        entry = self.entries.get(key)
        if entry is None:
            out = self.dispatcher(*args)
            self.entries[key] = self.dispatcher.overloads[tuple(numba.typeof(a) for a in args)].entry_point
            return out
        return entry(*args)

    def cached(self, *args) -> bool:
        """Whether the kernel has code for these arguments in memory or in numba's on-disk cache (False: the
        next call compiles, which can take seconds to tens of seconds)."""
        sig = tuple(numba.typeof(a) for a in args)
        if sig in self.dispatcher.overloads:
            return True
        try:  # numba's own lookup (Dispatcher.compile does the same before compiling)
            return self.dispatcher._cache.load_overload(sig, self.dispatcher.targetctx) is not None
        except Exception:  # internals changed: better no notice than a wrong one
            return True
