"""Seconds spent compiling numba kernels while a block of code runs.

A kernel compiles on its first call and is cached on disk (``NUMBA_CACHE_DIR``), so the
first fit after installing, or after an edit of the package, pays for compiling every
kernel it uses; later fits load them. :class:`CompileClock` tells the two costs apart, from
numba's compile events.
"""

from __future__ import annotations

import time
from types import TracebackType

import numba.core.event as numba_event


class CompileClock(numba_event.Listener):
    """Context manager summing the wall time of the outermost numba compilations inside it.

    Examples
    --------
    >>> with CompileClock() as clock:  # doctest: +SKIP
    ...     model.fit(X, y)
    >>> clock.seconds  # doctest: +SKIP
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self._depth = 0
        self._started = 0.0

    def on_start(self, event: numba_event.Event) -> None:
        """A compilation starts (nested ones, of the kernels it calls, are inside it)."""
        if self._depth == 0:
            self._started = time.perf_counter()
        self._depth += 1

    def on_end(self, event: numba_event.Event) -> None:
        """A compilation ends."""
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._started

    def __enter__(self) -> CompileClock:
        numba_event.register("numba:compile", self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        numba_event.unregister("numba:compile", self)
