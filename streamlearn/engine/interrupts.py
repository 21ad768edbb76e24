"""Ctrl-C that Python dropped inside a finalizer, raised again as the next pass starts.

Python raises ``KeyboardInterrupt`` wherever the main thread is when SIGINT arrives. Inside
a finalizer (an object's ``__del__``, a ``weakref.finalize`` callback: a fit on dask runs
many, as its futures release their keys) the exception is printed ("Exception ignored
in ...") and dropped, and the fit goes on to its end: once in a while, Ctrl-C did nothing.
While a fit runs, :func:`interrupts_noted` notes each SIGINT before the handler that was
there raises it, and :func:`raise_noted_interrupt`, which every engine calls as a pass
starts, raises it again.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_noted = False
_depth = 0  # nested fits (a search's candidates) share the outermost one's note


def _is_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def interrupts_noted() -> Iterator[None]:
    """Note SIGINTs while the block runs, for :func:`raise_noted_interrupt`.

    Also usable as a decorator. In a thread other than the main one, or where SIGINT is
    not handled by a Python function (ignored, as in the workers of
    :func:`~streamlearn.engine.local_cluster.local_cluster`, or the default action), it
    changes nothing. The handler that was there still runs first-hand, and is put back
    when the block ends; the note is cleared when the outermost block ends.
    """
    global _depth, _noted
    previous = signal.getsignal(signal.SIGINT) if _is_main_thread() else None
    if not callable(previous):
        yield
        return

    def note(signum: int, frame: FrameType | None) -> None:
        global _noted
        _noted = True
        previous(signum, frame)

    signal.signal(signal.SIGINT, note)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _noted = False
        if signal.getsignal(signal.SIGINT) is note:  # not if the block set one of its own
            signal.signal(signal.SIGINT, previous)


def raise_noted_interrupt() -> None:
    """Raise ``KeyboardInterrupt`` if a SIGINT was noted (in the main thread only); the
    note is then cleared."""
    global _noted
    if _noted and _is_main_thread():
        _noted = False
        raise KeyboardInterrupt
