"""Reading ahead from disk: advice to the kernel for zarr chunk files, concurrent parquet
row groups."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import streamlearn.data.dataset as dataset_module
from streamlearn import open_dataset
from streamlearn.data import readahead
from streamlearn.data.readahead import FileRange, ReadAhead, advise_willneed
from tests.conftest import (
    FEATURES,
    Reference,
    record_piece_reads,
    write_parquet_dir,
    write_parquet_file,
)

pytestmark = pytest.mark.skipif(not ReadAhead.available(), reason="no posix_fadvise here")

MIB = 1 << 20


def _wait_for(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)


def _walk_after_advice(ds, n_advised, target: int, **kwargs) -> list:
    """Every chunk of ``ds.chunks(prefetch=0, **kwargs)``: the first, then the rest once
    ``n_advised()`` has reached ``target``, so that the read-ahead thread (which skips
    the chunks a reader has already reached) has advised every chunk before it is read."""
    walk = ds.chunks(prefetch=0, **kwargs)
    chunks = [next(walk)]
    _wait_for(lambda: n_advised() >= target, timeout=30.0)
    return chunks + list(walk)


def test_advice_counts_the_bytes_of_each_range_and_skips_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 5000)
    ranges = [FileRange(str(path), 0, 0), FileRange(str(path), 1000, 0),
              FileRange(str(path), 100, 300), FileRange(str(tmp_path / "missing"), 0, 0)]
    assert advise_willneed(ranges) == 5000 + 4000 + 300


def test_readahead_advises_in_order_and_no_further_than_its_window(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = []
    for k in range(12):
        files.append(tmp_path / f"c{k}")
        files[-1].write_bytes(b"\0" * MIB)
    advised: list[int] = []
    lock = threading.Lock()

    def recorded(ranges: list[FileRange]) -> int:
        with lock:
            advised.extend(int(Path(r.path).name[1:]) for r in ranges)
        return len(ranges) * MIB

    monkeypatch.setattr(readahead, "advise_willneed", recorded)
    ahead = ReadAhead(lambda k: [FileRange(str(files[k]), 0, 0)], len(files),
                      window_bytes=3 * MIB).start()
    try:
        _wait_for(lambda: len(advised) >= 3)
        time.sleep(0.05)
        assert advised == [0, 1, 2]  # three chunks fill the window
        ahead.reached(5)  # the reader skipped ahead: chunks 3-4 are not advised any more
        _wait_for(lambda: len(advised) >= 6)
        time.sleep(0.05)
        assert advised == [0, 1, 2, 5, 6, 7]
        ahead.reached(11)
        _wait_for(lambda: len(advised) >= 7)
    finally:
        ahead.stop()
    assert advised == [0, 1, 2, 5, 6, 7, 11]
    assert not ahead._thread.is_alive()


def test_a_failing_lookup_does_not_stop_the_readahead(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def ranges_of(k: int) -> list[FileRange]:
        seen.append(k)
        raise OSError("gone")

    ahead = ReadAhead(ranges_of, 4).start()
    _wait_for(lambda: len(seen) == 4)
    ahead.stop()
    assert seen == [0, 1, 2, 3]


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_zarr_stream_advises_each_chunks_files_before_reading_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shuffle: bool) -> None:
    from streamlearn.data.convert import convert

    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(1000, 6)).astype(np.float32), rng.integers(0, 2, 1000)
    out = tmp_path / "s.zarr"
    convert(open_dataset(X, target=y), out, chunk_rows=100)
    advised: list[str] = []
    lock = threading.Lock()
    advise = readahead.advise_willneed

    def recorded(ranges: list[FileRange]) -> int:
        with lock:
            advised.extend(str(Path(r.path).relative_to(out)) for r in ranges)
        return advise(ranges)

    monkeypatch.setattr(readahead, "advise_willneed", recorded)
    # chunk by chunk: a shuffled walk that mixes rows across a group of chunks reads the
    # group's chunks at once (streamlearn.data.row_mixing), ahead of this test's pause
    monkeypatch.setattr(dataset_module, "mix_group_size", lambda *args: 1)
    ds = open_dataset(str(out), chunk_rows=100)
    chunks = _walk_after_advice(ds, lambda: len(advised), 20, shuffle=shuffle, seed=2)
    # the same rows as without advice, and every chunk's X and y files advised, in the
    # order the chunks come
    expected = [name for c in chunks for name in
                (f"X/c/{c.start // 100}/0", f"y/c/{c.start // 100}")]
    assert advised == expected
    np.testing.assert_array_equal(np.concatenate([c.X for c in chunks]),
                                  X[np.concatenate([c.rows for c in chunks])])
    monkeypatch.setattr(ReadAhead, "available", staticmethod(lambda: False))
    advised.clear()
    again = list(ds.chunks(shuffle=shuffle, seed=2))
    assert advised == []
    for a, b in zip(chunks, again, strict=True):
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.y, b.y)


def test_a_stream_left_early_stops_its_readahead(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlearn.data.convert import convert

    monkeypatch.setattr(readahead, "READAHEAD_BYTES", 1)  # one chunk ahead: it waits

    X = np.arange(4000, dtype=np.float32).reshape(1000, 4)
    out = tmp_path / "s.zarr"
    convert(open_dataset(X), out, chunk_rows=50)
    ds = open_dataset(str(out), chunk_rows=50)
    walk = ds.chunks()
    next(walk)
    assert any(t.name == "streamlearn-readahead" for t in threading.enumerate())
    walk.close()
    _wait_for(lambda: not any(t.name == "streamlearn-readahead"
                              for t in threading.enumerate()))
    assert not any(t.name == "streamlearn-readahead" for t in threading.enumerate())


@pytest.mark.parametrize("chunk_rows", [1, 33, 50, 70, 333, 1000])
@pytest.mark.parametrize("shuffle", [False, True])
def test_the_piece_order_is_the_order_a_reader_asks_for_pieces(
        ref: Reference, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_rows: int,
        shuffle: bool) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    ds = open_dataset(str(root), target="label", features=FEATURES)
    asked = record_piece_reads(monkeypatch, ds.source)
    list(ds.chunks(chunk_rows=chunk_rows, shuffle=shuffle, seed=5, prefetch=0))
    rng = np.random.default_rng([5, 0])
    starts = np.arange(0, ds.n_rows, chunk_rows, dtype=np.int64)
    if shuffle:
        from streamlearn.data.dataset import piece_grouped_order

        starts = starts[piece_grouped_order(starts, ds._offsets, rng)]
    assert ds._piece_order(starts, chunk_rows, ds.n_rows) == asked


@pytest.mark.parametrize("prefetch", [1, 2, 3])
def test_parquet_row_groups_read_concurrently_give_the_same_chunks(
        ref: Reference, tmp_path: Path, prefetch: int) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    ds = open_dataset(str(root), target="label", features=FEATURES, weight="w")
    for shuffle in (False, True):
        one = list(ds.chunks(chunk_rows=70, shuffle=shuffle, seed=1, prefetch=0))
        many = list(ds.chunks(chunk_rows=70, shuffle=shuffle, seed=1, prefetch=prefetch))
        assert [c.start for c in one] == [c.start for c in many]
        for a, b in zip(one, many, strict=True):
            np.testing.assert_array_equal(a.X, b.X)
            np.testing.assert_array_equal(a.y, b.y)
            np.testing.assert_array_equal(a.weight, b.weight)
            np.testing.assert_array_equal(a.X, ref.X[a.rows])


def test_a_parquet_stream_left_early_stops_its_piece_readers(
        ref: Reference, tmp_path: Path) -> None:
    path = write_parquet_file(ref.frame, tmp_path / "f.parquet", row_group_size=20)
    ds = open_dataset(str(path), target="label", features=FEATURES)
    walk = ds.chunks(chunk_rows=20, prefetch=2)
    next(walk)
    walk.close()
    _wait_for(lambda: not any(t.name.startswith("streamlearn-piece")
                              for t in threading.enumerate()))
    assert not any(t.name.startswith("streamlearn-piece") for t in threading.enumerate())


def test_a_sparse_zarr_stream_advises_its_rows_entries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import scipy.sparse
    import zarr

    rng = np.random.default_rng(6)
    X = scipy.sparse.random(600, 40, density=0.15, format="csr", random_state=6,
                            dtype=np.float32)
    y = rng.integers(0, 2, 600).astype(np.int8)
    path = tmp_path / "csr.zarr"
    group = zarr.open_group(str(path), mode="w", zarr_format=3)
    group.attrs.update({"layout": "csr", "n_features": 40})
    for name, values, chunk in (("indptr", X.indptr.astype(np.int64), 64),
                                ("indices", X.indices.astype(np.int32), 256),
                                ("data", X.data, 256), ("y", y, 64)):
        group.create_array(name, shape=values.shape, chunks=(chunk,), dtype=values.dtype)[:] = \
            values
    advised: list[str] = []
    lock = threading.Lock()

    def recorded(ranges: list[FileRange]) -> int:
        with lock:
            advised.extend(str(Path(r.path).relative_to(path)) for r in ranges)
        return 0

    monkeypatch.setattr(readahead, "advise_willneed", recorded)
    # chunk by chunk, as above: a mixing walk reads its group's chunks at once, racing
    # the read-ahead thread, which skips the chunks already reached
    monkeypatch.setattr(dataset_module, "mix_group_size", lambda *args: 1)

    def files(a: int) -> list[str]:  # a chunk's: indptr, y, then the entries' files
        b = min(a + 100, 600)
        lo, hi = X.indptr[a], X.indptr[b]
        return [*(f"indptr/c/{k}" for k in range(a // 64, -(-(b + 1) // 64))),
                *(f"y/c/{k}" for k in range(a // 64, -(-b // 64))),
                *(f"{name}/c/{k}" for name in ("indices", "data")
                  for k in range(lo // 256, -(-hi // 256)))]

    ds = open_dataset(str(path), chunk_rows=100)
    total = sum(len(files(a)) for a in range(0, 600, 100))
    chunks = _walk_after_advice(ds, lambda: len(advised), total, shuffle=True, seed=3)
    assert advised == [name for c in chunks for name in files(c.start)]
    for c in chunks:  # the rows themselves, as read
        np.testing.assert_array_equal(c.X.to_scipy().toarray(), X[c.rows].toarray())


def test_pieces_asked_for_out_of_the_announced_order_are_still_right(
        ref: Reference, tmp_path: Path) -> None:
    from streamlearn.data.dataset import _PieceReader

    path = write_parquet_file(ref.frame, tmp_path / "f.parquet", row_group_size=100)
    ds = open_dataset(str(path), target="label", features=FEATURES)
    reader = _PieceReader(ds, order=[0, 1, 2, 3, 4, 5], depth=2)
    try:
        for i in (2, 3, 0, 7, 2, 1, 8):  # ahead of the order, behind it, past one read ahead
            a = i * 100
            X, y, _ = reader.rows(a, a + 100)
            np.testing.assert_array_equal(X, ref.X[a:a + 100])
            np.testing.assert_array_equal(y, ref.frame["label"].to_numpy()[a:a + 100])
    finally:
        reader.close()
