"""Parquet files read from several threads at once."""

from __future__ import annotations

import pickle
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from streamlearn.data.sources.parquet_handles import OPEN_FILES, ParquetHandles


@pytest.fixture()
def files(tmp_path: Path) -> list[str]:
    rng = np.random.default_rng(3)
    paths = []
    for k in range(OPEN_FILES + 2):
        table = pa.table({f"c{j}": rng.normal(size=3000) for j in range(6)})
        paths.append(str(tmp_path / f"f{k}.parquet"))
        pq.write_table(table, paths[-1], row_group_size=500)
    return paths


@pytest.mark.parametrize("pre_buffer", [True, False])
def test_row_groups_read_side_by_side_equal_those_read_one_at_a_time(
        files: list[str], pre_buffer: bool) -> None:
    handles = ParquetHandles(pafs.LocalFileSystem(), pre_buffer=pre_buffer)
    jobs = [(path, rg) for path in files for rg in range(6)] * 2
    alone = [pq.ParquetFile(path).read_row_group(rg, columns=["c1", "c4"])
             for path, rg in jobs]
    with ThreadPoolExecutor(4) as pool:  # every thread on every file: no shared handle
        together = list(pool.map(lambda job: handles.read_row_group(*job, ["c1", "c4"]),
                                 jobs))
    for a, b in zip(alone, together, strict=True):
        assert a.equals(b)
    assert handles._reading == 0


def test_each_thread_keeps_its_own_few_handles(files: list[str]) -> None:
    handles = ParquetHandles(pafs.LocalFileSystem(), pre_buffer=True)
    mine = handles.file(files[0])
    assert handles.file(files[0]) is mine
    theirs: list[pq.ParquetFile] = []
    thread = threading.Thread(target=lambda: theirs.append(handles.file(files[0])))
    thread.start()
    thread.join()
    assert theirs[0] is not mine
    for path in files:  # more files than are kept: the least recently used is dropped
        handles.file(path)
    assert len(handles._local.files) == OPEN_FILES
    assert files[0] not in handles._local.files and files[-1] in handles._local.files


def test_handles_pickle_without_their_open_files(files: list[str]) -> None:
    handles = ParquetHandles(pafs.LocalFileSystem(), pre_buffer=True)
    handles.file(files[0])
    copy = pickle.loads(pickle.dumps(handles))
    assert copy.pre_buffer and getattr(copy._local, "files", None) is None
    assert copy.read_row_group(files[1], 2, ["c0"]).equals(
        pq.ParquetFile(files[1]).read_row_group(2, columns=["c0"]))


def test_files_behind_python_code_are_read_only_by_python_threads(
        files: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrow's own threads never call into Python: one that takes the interpreter's lock
    while it shuts down is unwound through C++ frames that may not throw, and the process
    aborts after its work is done ("terminate called without an active exception")."""
    import fsspec
    from fsspec.implementations.memory import MemoryFile

    readers: list[threading.Thread] = []

    def recorded(method):
        def read(self, *args):
            readers.append(threading.current_thread())
            return method(self, *args)
        return read

    for name in ("read", "readinto"):
        monkeypatch.setattr(MemoryFile, name, recorded(getattr(MemoryFile, name)))
    memory = fsspec.filesystem("memory")
    paths = []
    for k, local in enumerate(files[:2]):
        paths.append(f"/handles-test-{k}.parquet")
        memory.pipe(paths[-1], Path(local).read_bytes())
    fs = pafs.PyFileSystem(pafs.FSSpecHandler(memory))
    try:
        for pre_buffer in (True, False):
            handles = ParquetHandles(fs, pre_buffer=pre_buffer)
            for path in paths:
                local = files[paths.index(path)]
                for rg in range(6):
                    table = handles.read_row_group(path, rg, ["c0", "c2", "c5"])
                    assert table.equals(pq.ParquetFile(local).read_row_group(
                        rg, columns=["c0", "c2", "c5"]))
    finally:
        for path in paths:
            memory.rm(path)
    assert readers
    foreign = {t.name for t in readers if isinstance(t, threading._DummyThread)}
    assert not foreign, f"Arrow's threads read a Python file: {sorted(foreign)}"
