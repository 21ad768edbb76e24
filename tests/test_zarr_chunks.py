"""Direct chunk-file reads of local zarr arrays, against zarr's own reads."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.codecs import BytesCodec, Crc32cCodec

from streamlearn import open_dataset
from streamlearn.data.convert import compressors
from streamlearn.data.sources import zarr_store
from streamlearn.data.sources.zarr_chunks import ChunkFileReader
from streamlearn.errors import ReadError

RANGES = [(0, 64), (0, 250), (10, 20), (60, 70), (63, 129), (128, 250), (200, 250),
          (249, 250), (5, 5), (0, 0)]


def _array(path: Path, name: str, data: np.ndarray, chunk_rows: int,
           compression: str, **options) -> zarr.Array:
    group = zarr.open_group(path, mode="a", zarr_format=3)
    array = group.create_array(name, shape=data.shape, dtype=data.dtype,
                               chunks=(chunk_rows, *data.shape[1:]),
                               compressors=compressors(compression, data.dtype), **options)
    array[:] = data
    return array


@pytest.mark.parametrize("compression", ["lz4", "zstd", "none"])
def test_rows_equal_zarr_reads_for_every_codec_and_dtype(tmp_path: Path,
                                                         compression: str) -> None:
    rng = np.random.default_rng(0)
    data = {"X": rng.normal(size=(250, 7)).astype(np.float32),
            "y": rng.integers(-3, 4, 250).astype(np.int8),
            "w": rng.uniform(size=250),
            "flags": rng.uniform(size=250) < 0.3}
    for name, values in data.items():
        array = _array(tmp_path / "s.zarr", name, values, 64, compression)
        reader = ChunkFileReader.of(array)
        assert reader is not None and reader.compressor == (
            {"lz4": "blosc"}.get(compression, compression))
        for a, b in RANGES:
            got = reader.read(a, b, "here")
            np.testing.assert_array_equal(got, array[a:b])
            assert got.dtype == values.dtype and got.flags.c_contiguous


def test_missing_chunk_files_hold_the_fill_value(tmp_path: Path) -> None:
    group = zarr.open_group(tmp_path / "s.zarr", mode="w", zarr_format=3)
    array = group.create_array("X", shape=(200, 3), dtype="float32", chunks=(50, 3),
                               fill_value=7.0, compressors=compressors("lz4", np.float32))
    array[50:100] = np.arange(150, dtype=np.float32).reshape(50, 3)
    reader = ChunkFileReader.of(array)
    assert reader is not None
    got = reader.read(30, 170, "here")
    np.testing.assert_array_equal(got, array[30:170])
    assert (got[:20] == 7.0).all() and got[20, 0] == 0.0


@pytest.mark.parametrize(("compression", "damage"), [
    ("lz4", lambda raw: raw[: len(raw) // 2]),
    ("lz4", lambda raw: b"not lz4"),
    ("zstd", lambda raw: raw[: len(raw) // 2]),
    ("none", lambda raw: raw[:-4]),
    ("none", lambda raw: raw + b"0000"),
])
def test_a_damaged_chunk_names_its_array_and_rows(tmp_path: Path, compression: str,
                                                  damage) -> None:
    data = np.arange(400, dtype=np.float32).reshape(100, 4)
    array = _array(tmp_path / "s.zarr", "X", data, 25, compression)
    chunk = tmp_path / "s.zarr" / "X" / "c" / "2" / "0"
    chunk.write_bytes(damage(chunk.read_bytes()))
    reader = ChunkFileReader.of(array)
    assert reader is not None
    np.testing.assert_array_equal(reader.read(0, 50, "s.zarr"), data[:50])
    with pytest.raises(ReadError, match=r"rows 50-75 of array 'X' in s.zarr"):
        reader.read(40, 60, "s.zarr")


def test_layouts_it_does_not_read_are_left_to_zarr(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    group = zarr.open_group(path, mode="w", zarr_format=3)
    columns = group.create_array("columns", shape=(100, 4), dtype="float32", chunks=(25, 2))
    sharded = group.create_array("sharded", shape=(100, 4), dtype="float32", chunks=(25, 4),
                                 shards=(50, 4))
    checked = group.create_array("checked", shape=(100,), dtype="float32", chunks=(25,),
                                 compressors=[Crc32cCodec()])
    big_endian = group.create_array("big", shape=(100,), dtype="float32", chunks=(25,),
                                    serializer=BytesCodec(endian="big"), compressors=None)
    text = group.create_array("text", shape=(10,), dtype=str, chunks=(5,))
    for array in (columns, sharded, checked, big_endian, text):
        assert ChunkFileReader.of(array) is None, array.path
    in_memory = zarr.open_group(zarr.storage.MemoryStore(), mode="w")
    assert ChunkFileReader.of(in_memory.create_array("X", shape=(10, 2),
                                                     dtype="float32")) is None


def test_a_converted_store_is_streamed_by_its_chunk_files(tmp_path: Path,
                                                          monkeypatch) -> None:
    from streamlearn.data.convert import convert

    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(300, 5)).astype(np.float32), rng.integers(0, 3, 300)
    w = rng.uniform(size=300).astype(np.float32)
    out = tmp_path / "o.zarr"
    convert(open_dataset(X, target=y, weight=w), out, chunk_rows=64)

    def no_zarr_reads(*args, **kwargs):
        raise AssertionError("read through zarr")

    monkeypatch.setattr(zarr_store, "read_together", no_zarr_reads)
    ds = open_dataset(str(out), weight="weight", chunk_rows=50)
    chunks = list(ds.chunks())
    np.testing.assert_array_equal(np.concatenate([c.X for c in chunks]), X)
    np.testing.assert_array_equal(np.concatenate([c.weight for c in chunks]), w)
    labels = np.concatenate([c.y for c in chunks])
    np.testing.assert_array_equal(np.asarray(ds.classes)[labels], y)


@pytest.mark.parametrize(("layout", "chunks", "chunk_rows", "warned"), [
    ("matrix", (1000, 1), 100, "'X' .* shape \\(1000, 1\\) \\(1,000 rows, 1 of 6 columns\\)"),
    ("matrix", (1000, 3), 200, "'X' .* shape \\(1000, 3\\) \\(1,000 rows, 3 of 6 columns\\)"),
    ("matrix", (400, 1), 100, None),  # four stream chunks of rows: not warned of
    ("matrix", (1000, 6), 100, None),  # chunks of whole rows
    ("matrix", (1000, 1), None, None),  # the default chunk holds every row
    ("columns", (1000,), 100,
     "'c0' \\(and 5 more arrays\\) .* shape \\(1000,\\) \\(1,000 rows, 1 of 6 columns\\)"),
    ("columns", (100,), 100, None),
])
def test_storage_chunks_of_some_columns_over_many_rows_are_warned_of(
        tmp_path: Path, layout: str, chunks: tuple[int, ...], chunk_rows: int | None,
        warned: str | None) -> None:
    X = np.random.default_rng(1).normal(size=(1000, 6)).astype(np.float32)
    group = zarr.open_group(tmp_path / "s.zarr", mode="w", zarr_format=3)
    if layout == "matrix":
        group.create_array("X", data=X, chunks=chunks)
    else:
        for j in range(X.shape[1]):
            group.create_array(f"c{j}", data=X[:, j], chunks=chunks)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = open_dataset(str(tmp_path / "s.zarr"), chunk_rows=chunk_rows)
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    if warned is None:
        assert messages == []
    else:
        assert len(messages) == 1 and re.search(warned, messages[0])
        assert "`streamlearn convert` rewrites the store in chunks of whole rows" in messages[0]
    # the rows are zarr's own all the same
    np.testing.assert_array_equal(np.concatenate([c.X for c in ds.chunks()]), X)
