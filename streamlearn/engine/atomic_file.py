"""Writing a file atomically: a crash, even mid-write, leaves the previous file intact.

Checkpoints (:mod:`streamlearn.engine.checkpoint`) and model files
(:mod:`streamlearn.io.model_file`) are written this way.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def give_new_file_mode(path: str | os.PathLike[str]) -> None:
    """Set the permissions a newly created file gets (``0o666`` less the umask).

    ``tempfile.mkstemp`` creates owner-only files; a file renamed from one into place should
    look like any other file the user writes.

    Parameters
    ----------
    path : str or path-like
        An existing file.
    """
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def atomic_write_bytes(path: str | os.PathLike[str], writer: Callable[[IO[bytes]], Any]) -> Path:
    """Write a file through ``writer(fileobj)`` into a temporary file, then rename it.

    The temporary file (``.<name>.<random>.tmp`` in the same directory) is flushed to disk
    before ``os.replace`` puts it in place; on any error it is removed and the old file, if
    any, is left as it was.

    Parameters
    ----------
    path : str or path-like
        Destination file; its directory is created if needed.
    writer : callable
        Called once with a binary file object open for writing.

    Returns
    -------
    Path
        The path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            writer(fh)
            fh.flush()
            os.fsync(fh.fileno())
        give_new_file_mode(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
