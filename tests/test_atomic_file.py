"""Atomic output files: symbolic links followed, FIFOs and devices written through."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from streamlearn.atomic_file import AtomicOutput, atomic_write_bytes, output_target
from streamlearn.io import load_model, save_model
from tests.test_model_file import REGISTRY, _toy


class FifoReader:
    """Reads a FIFO to its end in a thread, as the other end of a pipe would."""

    def __init__(self, path: Path) -> None:
        self.data = b""
        self._thread = threading.Thread(target=self._read, args=(path,), daemon=True)
        self._thread.start()

    def _read(self, path: Path) -> None:
        with open(path, "rb") as fh:
            self.data = fh.read()

    def join(self) -> bytes:
        self._thread.join(timeout=60)
        assert not self._thread.is_alive()
        return self.data


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    yield path


def _write(data: bytes):
    return lambda fh: fh.write(data)


def test_a_symbolic_link_is_followed_and_kept(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "model.slm"
    atomic_write_bytes(target, _write(b"old"))
    link = tmp_path / "link.slm"
    os.symlink("real/model.slm", link)
    assert atomic_write_bytes(link, _write(b"new")) == link
    assert link.is_symlink() and os.readlink(link) == "real/model.slm"
    assert target.read_bytes() == b"new"
    # the temporary file was made beside the target, and nothing is left of it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.slm", "real"]
    assert [p.name for p in target.parent.iterdir()] == ["model.slm"]


def test_a_link_to_a_missing_file_creates_the_file(tmp_path: Path) -> None:
    link = tmp_path / "link.slm"
    os.symlink(tmp_path / "sub" / "model.slm", link)
    atomic_write_bytes(link, _write(b"made"))
    assert link.is_symlink() and (tmp_path / "sub" / "model.slm").read_bytes() == b"made"


def test_a_model_saved_through_a_link_replaces_the_file_it_names(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    save_model(_toy(), tmp_path / "real" / "model.slm")
    os.symlink("real/model.slm", tmp_path / "link.slm")
    newer = _toy()
    newer.alpha = 2.0
    save_model(newer, tmp_path / "link.slm")
    assert (tmp_path / "link.slm").is_symlink()
    assert load_model(tmp_path / "real" / "model.slm", classes=REGISTRY).alpha == 2.0


def test_a_fifo_is_written_through_not_replaced(fifo: Path) -> None:
    reader = FifoReader(fifo)
    atomic_write_bytes(fifo, _write(b"piped"))
    assert reader.join() == b"piped"
    assert fifo.is_fifo() and os.listdir(fifo.parent) == ["pipe"]


def test_a_model_written_to_a_fifo_is_read_whole_at_its_other_end(fifo: Path) -> None:
    reader = FifoReader(fifo)
    save_model(_toy(), fifo)
    received = fifo.parent / "received.slm"
    received.write_bytes(reader.join())
    assert fifo.is_fifo()
    np.testing.assert_array_equal(load_model(received, classes=REGISTRY).coef_, _toy().coef_)


def test_a_failed_write_to_a_fifo_leaves_it_a_fifo(fifo: Path) -> None:
    reader = FifoReader(fifo)

    def failing(fh) -> None:
        fh.write(b"part")
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError, match="stopped"):
        atomic_write_bytes(fifo, failing)
    reader.join()
    assert fifo.is_fifo() and os.listdir(fifo.parent) == ["pipe"]


def test_character_devices_are_written_through() -> None:
    assert output_target(os.devnull) == output_target(Path(os.devnull))
    assert output_target(os.devnull).through and output_target(os.devnull).path == \
        Path(os.devnull)


def test_a_socket_or_a_directory_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(OSError, match=f"{path} is a socket, not a regular file, a FIFO "
                                          "or a character device"):
            atomic_write_bytes(path, _write(b"x"))
        assert path.is_socket()
    with pytest.raises(OSError, match=f"{tmp_path} is a directory, not a regular file"):
        atomic_write_bytes(tmp_path, _write(b"x"))
    assert os.listdir(tmp_path) == ["s"]


def test_a_store_directory_refuses_a_fifo_and_follows_a_link(tmp_path: Path,
                                                             fifo: Path) -> None:
    with pytest.raises(OSError, match=f"{fifo} is a FIFO, not a directory"):
        output_target(fifo, directory=True)
    (tmp_path / "store").mkdir()
    os.symlink("store", tmp_path / "link")
    assert output_target(tmp_path / "link", directory=True).path == tmp_path / "store"


def test_discarded_output_leaves_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_bytes(b"previous")
    output = AtomicOutput(path)
    output.path.write_bytes(b"partial")
    output.discard()
    assert path.read_bytes() == b"previous" and os.listdir(tmp_path) == ["out.csv"]


def _new_file_mode(tmp_path: Path) -> int:
    (tmp_path / "plain").write_bytes(b"")
    mode = (tmp_path / "plain").stat().st_mode & 0o777
    (tmp_path / "plain").unlink()
    return mode


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    path = tmp_path / "keep.slm"
    save_model(_toy(), path)
    assert path.stat().st_mode & 0o7777 == _new_file_mode(tmp_path)
    for mode in (0o600, 0o640, 0o755):
        path.chmod(mode)
        save_model(_toy(), path)
        assert path.stat().st_mode & 0o7777 == mode
    # through a link, the file it names keeps its own
    os.symlink("keep.slm", tmp_path / "link.slm")
    path.chmod(0o604)
    atomic_write_bytes(tmp_path / "link.slm", _write(b"new"))
    assert path.read_bytes() == b"new" and path.stat().st_mode & 0o7777 == 0o604


def test_a_replaced_file_keeps_its_owner_and_at_least_its_group(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "shared.csv"
    path.write_bytes(b"old")
    real_stat = os.stat

    def stat(name, *args, **kwargs) -> os.stat_result:  # the old file belongs to others
        result = real_stat(name, *args, **kwargs)
        if Path(name) != path:
            return result
        fields = list(result[:10])
        fields[4:6] = [result.st_uid + 1, result.st_gid + 1]
        return os.stat_result(fields)

    calls: list[tuple[int, int]] = []

    def chown(name, uid: int, gid: int) -> None:  # as for a user who may give the group only
        calls.append((uid, gid))
        if uid != -1:
            raise PermissionError(1, "Operation not permitted", name)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "chown", chown)
    atomic_write_bytes(path, _write(b"new"))
    mine = real_stat(path)
    assert calls == [(mine.st_uid + 1, mine.st_gid + 1), (-1, mine.st_gid + 1)]
    assert path.read_bytes() == b"new"
