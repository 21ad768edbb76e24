"""Writing a file atomically: a crash, even mid-write, leaves the previous file intact.

Checkpoints (:mod:`streamlearn.engine.checkpoint`), model files
(:mod:`streamlearn.io.model_file`), the predictions of ``streamlearn predict`` and the
stores of ``streamlearn convert`` are written this way. Every one of them finds where its
output goes with :func:`output_target`:

- a symbolic link is followed: the file it names is replaced (the temporary file is made
  beside that file, so that the rename stays on one file system), the link is kept;
- an existing FIFO or character device (``/dev/stdout``, a named pipe) is opened and
  written through, never replaced or removed;
- any other existing path that is not a regular file (a block device, a socket, a
  directory where a file is expected) is refused;
- a regular file that is replaced keeps its permissions and, where the user may set them,
  its owner and group; a new file gets ``0o666`` less the umask.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any


@dataclass(frozen=True)
class OutputTarget:
    """Where writing an output path lands.

    Attributes
    ----------
    path : Path
        The path to write: the file a symbolic link names (followed to its end), or the
        path itself.
    through : bool
        True for an existing FIFO or character device, which is opened and written in
        place; False for a regular file or a new one, which is replaced atomically.
    """

    path: Path
    through: bool


_KINDS = {stat.S_IFBLK: "a block device", stat.S_IFCHR: "a character device",
          stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFREG: "a regular file",
          stat.S_IFSOCK: "a socket"}


def output_target(path: str | os.PathLike[str], *, directory: bool = False) -> OutputTarget:
    """Find where writing ``path`` lands, refusing a path that may not be replaced.

    Parameters
    ----------
    path : str or path-like
        The output path as given, which may be or go through a symbolic link.
    directory : bool
        Whether the output is a directory (a zarr store), replaced as a whole: an existing
        directory is then replaced, and a FIFO or a device refused.

    Returns
    -------
    OutputTarget

    Raises
    ------
    OSError
        ``path`` exists and is neither a regular file (a directory, for ``directory``) nor,
        for a file, a FIFO or a character device; the message names it and what it is.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode  # follows links: what the path names in the end
    except (FileNotFoundError, NotADirectoryError):  # a new file, or refused when made
        mode = None
    if mode is not None:
        wanted = stat.S_ISDIR(mode) if directory else stat.S_ISREG(mode)
        if not wanted:
            if not directory and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
                return OutputTarget(path, through=True)
            kind = _KINDS.get(stat.S_IFMT(mode), "not a file")
            expected = "a directory" if directory else \
                "a regular file, a FIFO or a character device"
            raise OSError(f"{path} is {kind}, not {expected}; it is not replaced: write "
                          "elsewhere")
    return OutputTarget(Path(os.path.realpath(path)), through=False)


def give_new_file_mode(path: str | os.PathLike[str],
                       replaced: str | os.PathLike[str] | None = None) -> None:
    """Give a file about to be renamed into place the permissions it should have.

    ``tempfile.mkstemp`` and ``tempfile.mkdtemp`` create owner-only entries; one renamed
    into place should look like the file it replaces, or like any other new file.

    Parameters
    ----------
    path : str or path-like
        An existing file or directory.
    replaced : str or path-like, optional
        The file (or directory) ``path`` will replace. When it exists, its permissions are
        copied, and its owner and group where the user may set them; otherwise ``path``
        gets ``0o666`` (``0o777`` for a directory) less the umask.
    """
    try:
        old = None if replaced is None else os.stat(replaced)
    except FileNotFoundError:
        old = None
    if old is None:
        umask = os.umask(0)
        os.umask(umask)
        full = 0o777 if os.path.isdir(path) else 0o666
        os.chmod(path, full & ~umask)
        return
    mine = os.stat(path)
    if (mine.st_uid, mine.st_gid) != (old.st_uid, old.st_gid):
        for uid in (old.st_uid, -1):  # the group alone when the owner may not be given
            try:
                os.chown(path, uid, old.st_gid)
                break
            except PermissionError:
                continue
    os.chmod(path, stat.S_IMODE(old.st_mode))  # after chown, which may clear setuid bits


class AtomicOutput:
    """A file written under a temporary name, then renamed over its destination.

    :attr:`path` is where to write: a new temporary file beside the destination
    (``.<name>.<random>.tmp``), or the destination itself when it is a FIFO or a character
    device (:func:`output_target`). :meth:`commit` flushes the temporary file to disk and
    renames it into place; :meth:`discard` removes it and leaves the destination as it
    was. As a context manager it commits when the block ends without an error and
    discards otherwise.

    Parameters
    ----------
    path : str or path-like
        The destination; its directory is created if needed.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        target = output_target(path)
        self.destination = target.path
        self._pending = not target.through
        if target.through:
            self.path = target.path
            return
        self.destination.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.destination.name}.", suffix=".tmp",
                                   dir=self.destination.parent)
        os.close(fd)
        self.path = Path(tmp)

    def commit(self) -> None:
        """Put the written file in place (nothing to do for one written through)."""
        if not self._pending:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            give_new_file_mode(self.path, self.destination)
            os.replace(self.path, self.destination)
        except BaseException:
            self.discard()
            raise
        self._pending = False

    def discard(self) -> None:
        """Remove the temporary file, if it is still there."""
        if self._pending:
            self.path.unlink(missing_ok=True)
            self._pending = False

    def __enter__(self) -> AtomicOutput:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def atomic_write_bytes(path: str | os.PathLike[str], writer: Callable[[IO[bytes]], Any]) -> Path:
    """Write a file through ``writer(fileobj)`` into a temporary file, then rename it.

    The temporary file (``.<name>.<random>.tmp`` beside the file ``path`` names, a symbolic
    link followed) is flushed to disk before ``os.replace`` puts it in place; on any error
    it is removed and the old file, if any, is left as it was. A FIFO or a character device
    at ``path`` is written through instead (:class:`AtomicOutput`).

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
    with AtomicOutput(path) as output, open(output.path, "wb") as fh:
        writer(fh)
    return path
