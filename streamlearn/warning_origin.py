"""Where streamlearn's warnings point: the line of the user's code that called the library."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: The package's directory: frames of files under it are the library's own.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def caller_stacklevel() -> int:
    """``stacklevel`` that makes a warning, issued by the function calling this one, name
    the first frame outside streamlearn: the user's call (``fit``, ``reduce``, ...) however
    deep inside the library the warning is raised.

    Returns
    -------
    int
    """
    level, frame = 1, sys._getframe(1)  # level 1: the function that warns
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


#: Set while the library hands a fitted model rows of its own (see :func:`library_rows`).
_LIBRARY_ROWS: ContextVar[bool] = ContextVar("streamlearn_library_rows", default=False)


@contextmanager
def library_rows() -> Iterator[None]:
    """Within this block, rows given to a fitted model's predictions are the library's own
    (a dataset's chunks read by the model's columns, held-out rows, a grid of values), in
    the order of the columns seen in ``fit``: a plain array then gets no warning that the
    model was fitted with feature names, which is meant for the user's own calls only.

    The flag belongs to the running thread (a ``ContextVar``): enter the block where the
    prediction is made, not in a thread that hands the work to another.
    """
    token = _LIBRARY_ROWS.set(True)
    try:
        yield
    finally:
        _LIBRARY_ROWS.reset(token)


def in_library_rows() -> bool:
    """Whether the running code is inside :func:`library_rows`."""
    return _LIBRARY_ROWS.get()
