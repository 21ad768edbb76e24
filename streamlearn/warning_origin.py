"""Where streamlearn's warnings point: the line of the user's code that called the library."""

from __future__ import annotations

import os
import sys

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
