"""Where an output file goes: a local path, or any fsspec URL (``s3://``, ``gs://``,
``memory://`` ...).

Local files are written under a temporary name and renamed when complete; a remote file
is written whole, in one upload, once it is complete, so neither is ever seen half
written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem


def remote_location(location: str | os.PathLike[str]) -> tuple[Any, str] | None:
    """The fsspec filesystem and the path on it of a URL that is not a local file.

    Parameters
    ----------
    location : str or path-like

    Returns
    -------
    (filesystem, path) or None
        None for a local path or a ``file://`` URL (see :func:`local_path`).
    """
    text = os.fspath(location)
    if "://" not in text or text.startswith("file://"):
        return None
    fs, path = fsspec.core.url_to_fs(text)
    if isinstance(fs, LocalFileSystem):
        return None
    return fs, path


def local_path(location: str | os.PathLike[str]) -> Path:
    """The local path of a path or ``file://`` URL (``~`` expanded)."""
    text = os.fspath(location)
    if text.startswith("file://"):
        text = text[len("file://"):]
    return Path(text).expanduser()


def _remote_destination(location: str | os.PathLike[str]) -> tuple[Any, str]:
    """The filesystem and path of a remote ``location``, its parent directory made."""
    remote = remote_location(location)
    assert remote is not None
    fs, path = remote
    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    if parent:
        fs.makedirs(parent, exist_ok=True)
    return fs, path


def upload(local: Path, location: str | os.PathLike[str]) -> None:
    """Copy the complete file ``local`` to the remote ``location`` in one upload."""
    fs, path = _remote_destination(location)
    fs.put_file(str(local), path)


def upload_bytes(data: bytes, location: str | os.PathLike[str]) -> None:
    """Write ``data`` to the remote ``location`` in one upload."""
    fs, path = _remote_destination(location)
    fs.pipe_file(path, data)
