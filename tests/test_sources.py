"""Every kind of source yields the same rows, in the same order, at any chunk size."""

from __future__ import annotations

import uuid
from pathlib import Path

import dask.array as da
import dask.dataframe as dd
import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zarr

from streamlearn import open_dataset
from streamlearn.data.labels import consecutive_codes, offset_codes
from streamlearn.data.sources.base import stack_columns, transpose_into
from streamlearn.errors import DataError, LabelError, ReadError, SchemaError, SourceError
from tests.c_heap import files_in_memory, heap_while_opening
from tests.conftest import (
    FEATURES,
    Reference,
    write_parquet_dir,
    write_parquet_file,
    write_zarr_columns,
    write_zarr_matrix,
)


def _memory_parquet(ref: Reference) -> str:
    fs = fsspec.filesystem("memory")
    root = f"/streamlearn-test-{uuid.uuid4().hex}"
    fs.mkdir(root)
    table = pa.Table.from_pandas(ref.frame, preserve_index=False)
    import pyarrow.parquet as pq

    with fs.open(f"{root}/part-0.parquet", "wb") as fh:
        pq.write_table(table.slice(0, 600), fh, row_group_size=200)
    with fs.open(f"{root}/part-1.parquet", "wb") as fh:
        pq.write_table(table.slice(600), fh, row_group_size=150)
    return f"memory://{root}"


def _source(ref: Reference, tmp: Path, name: str) -> dict:
    """open_dataset keyword arguments for the source called ``name``."""
    named = {"target": "label", "weight": "w", "features": FEATURES}
    makers = {
        "parquet-file": lambda: {
            "source": str(write_parquet_file(ref.frame, tmp / "f.parquet")), **named},
        "parquet-dir": lambda: {"source": str(write_parquet_dir(ref.frame, tmp / "dir")), **named},
        "parquet-file-url": lambda: {
            "source": write_parquet_file(ref.frame, tmp / "f.parquet").as_uri(), **named},
        "parquet-memory-url": lambda: {"source": _memory_parquet(ref), **named},
        "zarr-matrix": lambda: {"source": write_zarr_matrix(ref, tmp / "m.zarr"), "weight": "w"},
        "zarr-columns": lambda: {"source": write_zarr_columns(ref, tmp / "c.zarr"), **named},
        "zarr-memory-url": lambda: {
            "source": write_zarr_matrix(ref, f"memory://zarr-{uuid.uuid4().hex}.zarr"),
            "weight": "w",
        },
        "numpy": lambda: {"source": ref.X, "target": ref.label, "weight": ref.weight},
        "numpy-tuple": lambda: {"source": (ref.X, ref.label), "weight": ref.weight},
        "pandas": lambda: {"source": ref.frame, **named},
        "arrow": lambda: {"source": pa.Table.from_pandas(ref.frame, preserve_index=False), **named},
        "dask-array": lambda: {
            "source": da.from_array(ref.X, chunks=(230, 5)),
            "target": da.from_array(ref.label, chunks=230),
            "weight": da.from_array(ref.weight, chunks=230),
        },
        "dask-dataframe": lambda: {"source": dd.from_pandas(ref.frame, npartitions=4), **named},
    }
    return makers[name]()


SOURCE_NAMES = [
    "parquet-file", "parquet-dir", "parquet-file-url", "parquet-memory-url", "zarr-matrix",
    "zarr-columns", "zarr-memory-url", "numpy", "numpy-tuple", "pandas", "arrow", "dask-array",
    "dask-dataframe",
]


@pytest.mark.parametrize("name", SOURCE_NAMES)
@pytest.mark.parametrize("chunk_rows", [1000, 77, 5000])
def test_source_round_trips_rows_in_order(ref: Reference, tmp_path: Path, name: str,
                                          chunk_rows: int) -> None:
    kwargs = _source(ref, tmp_path, name)
    ds = open_dataset(kwargs.pop("source"), chunk_rows=chunk_rows, **kwargs)
    assert ds.n_rows == len(ref.X)
    assert ds.n_features == 5
    assert ds.task == "classification"
    np.testing.assert_array_equal(ds.classes, [3, 5, 7])
    chunks = list(ds.chunks())
    assert [c.start for c in chunks] == list(range(0, len(ref.X), chunk_rows))
    assert all(c.X.dtype == np.float32 and c.X.flags.c_contiguous for c in chunks)
    X = np.concatenate([c.X for c in chunks])
    np.testing.assert_array_equal(X, ref.X)
    np.testing.assert_array_equal(ds.classes[np.concatenate([c.y for c in chunks])], ref.label)
    np.testing.assert_array_equal(np.concatenate([c.weight for c in chunks]), ref.weight)


def test_named_matrix_sources_report_feature_names(ref: Reference, tmp_path: Path) -> None:
    ds = open_dataset(write_zarr_matrix(ref, tmp_path / "m.zarr"))
    assert ds.feature_names == tuple(FEATURES)
    assert ds.target == "y"
    assert open_dataset(ref.X, target=ref.label).feature_names == ("x0", "x1", "x2", "x3", "x4")


def test_schema_comes_from_metadata_without_reading_rows(ref: Reference, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    ds = open_dataset(str(write_parquet_dir(ref.frame, tmp_path / "dir")), target="label",
                      exclude=["w"])

    def no_reads(*args: object, **kwargs: object) -> None:
        raise AssertionError("rows were read")

    monkeypatch.setattr(ds.source, "read_piece", no_reads)
    monkeypatch.setattr(ds.source, "read_target", no_reads)
    assert ds.n_rows == 1000
    assert ds.feature_names == tuple(FEATURES)
    assert ds.task == "classification"


def test_zarr_classes_attribute_skips_the_scan(ref: Reference, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    store = write_zarr_matrix(ref, tmp_path / "m.zarr")
    zarr.open_group(store, mode="r+")["y"].attrs["classes"] = [3, 5, 7]
    ds = open_dataset(store)
    monkeypatch.setattr(ds.source, "read_target", lambda *a: pytest.fail("scanned"))
    np.testing.assert_array_equal(ds.schema.classes, [3, 5, 7])


def test_zarr_array_with_damaged_metadata_is_a_read_error(ref: Reference,
                                                          tmp_path: Path) -> None:
    store = Path(write_zarr_matrix(ref, tmp_path / "m.zarr"))
    meta = store / "X" / "zarr.json"
    meta.write_bytes(meta.read_bytes()[:100])  # cut short, as by a copy that stopped
    with pytest.raises(ReadError, match=r"could not open the arrays of zarr store .*m\.zarr"):
        open_dataset(str(store))


def test_zarr_arrays_that_are_not_columns_are_set_aside(ref: Reference,
                                                        tmp_path: Path) -> None:
    """Arrays beside ``X`` that are not columns of its rows (a list of names, a 3-D
    array) leave the store readable; naming one as a column says why it is not one."""
    store = write_zarr_matrix(ref, tmp_path / "m.zarr")
    group = zarr.open_group(store, mode="r+")
    group.create_array("names", shape=(len(FEATURES),), dtype=str)[:] = np.array(FEATURES)
    group.create_array("img", shape=(len(ref.X), 2, 2), dtype="float32")
    ds = open_dataset(store, chunk_rows=300)
    chunks = list(ds.chunks())
    np.testing.assert_array_equal(np.concatenate([c.X for c in chunks]), ref.X)
    codes = np.concatenate([c.y for c in chunks])
    np.testing.assert_array_equal(np.asarray(ds.classes)[codes], ref.label)
    with pytest.raises(SchemaError, match=r"array 'img' of shape \(1000, 2, 2\) is not a "
                                          r"column of the 1,000 rows of 'X'"):
        open_dataset(store, target="img")
    with pytest.raises(SchemaError, match=r"'names' of shape \(5,\) is not a column"):
        open_dataset(store, features=[*FEATURES, "names"])
    short = write_zarr_matrix(ref, tmp_path / "short.zarr")
    zarr.open_group(short, mode="r+")["y"].resize((999,))  # the store's target: no column
    with pytest.raises(DataError, match=r"different numbers of rows: the target 'y' has "
                                        r"999, 'X' 1,000"):
        open_dataset(short)


def test_zarr_feature_named_as_another_array_is_refused(ref: Reference,
                                                        tmp_path: Path) -> None:
    """A name of ``X``'s ``feature_names`` that is also an array of the group would stand
    for two columns (the feature was left out, and the array read in its place)."""
    store = write_zarr_matrix(ref, tmp_path / "m.zarr")
    zarr.open_group(store, mode="r+")["X"].attrs["feature_names"] = [*FEATURES[:-1], "y"]
    with pytest.raises(SourceError, match=r"feature_names of 'X' names 'y', which is also "
                                          r"an array of the group"):
        open_dataset(store)


def test_zarr_v2_group_in_a_directory_of_any_name_is_zarr(ref: Reference,
                                                          tmp_path: Path) -> None:
    """A zarr v2 group (``.zgroup``) is told by its metadata, as a v3 one (``zarr.json``)
    is, whatever its directory is called."""
    group = zarr.open_group(str(tmp_path / "store"), mode="w", zarr_format=2)
    group.create_array("X", shape=ref.X.shape, chunks=(300, 5), dtype="float64")[:] = ref.X
    group.create_array("y", shape=ref.label.shape, chunks=(300,), dtype="int64")[:] = ref.label
    ds = open_dataset(str(tmp_path / "store"), chunk_rows=400)
    chunks = list(ds.chunks())
    np.testing.assert_array_equal(np.concatenate([c.X for c in chunks]), ref.X)
    codes = np.concatenate([c.y for c in chunks])
    np.testing.assert_array_equal(np.asarray(ds.classes)[codes], ref.label)


def test_zarr_store_zipped_names_the_way_to_open_it(ref: Reference, tmp_path: Path) -> None:
    """A zip archive given as a zarr store is not a group; the error says how to read the
    store inside it, and that way reads the rows zarr holds."""
    from zarr.storage import ZipStore

    path = tmp_path / "m.zip"
    with ZipStore(path, mode="w") as store:
        group = zarr.open_group(store, mode="w")
        group.create_array("X", shape=ref.X.shape, chunks=(300, 5), dtype="float32")[:] = ref.X
        group.create_array("y", shape=ref.label.shape, chunks=(300,), dtype="int64")[:] = \
            ref.label
    with pytest.raises(SourceError, match=r"m\.zip: it is a zip archive; open the store "
                                          r"inside it as 'zip::.*m\.zip'"):
        open_dataset(str(path), format="zarr")
    ds = open_dataset(f"zip::{path}", format="zarr", chunk_rows=400)
    np.testing.assert_array_equal(np.concatenate([c.X for c in ds.chunks()]), ref.X)


def test_hive_partition_keys_become_columns(ref: Reference, tmp_path: Path) -> None:
    root = tmp_path / "hive"
    for part in range(3):
        rows = ref.frame.iloc[part * 300 : (part + 1) * 300 if part < 2 else None]
        (root / f"part={part}").mkdir(parents=True)
        write_parquet_file(rows, root / f"part={part}" / "data.parquet", row_group_size=64)
    ds = open_dataset(str(root), target="label", features=[*FEATURES, "part"], chunk_rows=111)
    X = np.concatenate([c.X for c in ds.chunks()])
    np.testing.assert_array_equal(X[:, :5], ref.X)
    expected_part = np.repeat([0, 1, 2], [300, 300, 400]).astype(np.float32)
    np.testing.assert_array_equal(X[:, 5], expected_part)
    # a partition key can be the target too
    by_part = open_dataset(str(root), target="part", features=FEATURES)
    np.testing.assert_array_equal(by_part.classes, [0, 1, 2])
    codes = np.concatenate([c.y for c in by_part.chunks()])
    np.testing.assert_array_equal(codes, expected_part.astype(int))


def test_hive_key_held_by_the_files_with_another_type_is_a_schema_error(
        tmp_path: Path) -> None:
    # the files hold `year` as int64, the directory names make it int32: pyarrow cannot
    # merge the two
    for year in (2023, 2024):
        (tmp_path / f"year={year}").mkdir()
        pq.write_table(pa.table({"x": [0.5, 1.5], "year": [year, year], "label": [0, 1]}),
                       tmp_path / f"year={year}" / "p.parquet")
    with pytest.raises(SchemaError, match=rf"{tmp_path}.* partition key .*Field year"):
        open_dataset(str(tmp_path), target="label")


def test_opening_many_parquet_files_holds_one_footer_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # each footer read whole stays in memory (~50 KB for 20 columns) as long as the object
    # that read it: opening a directory of 200 files held all 200 at once (~10 MB here;
    # a Spark output of 100k part files, gigabytes). The C heap is sampled as each file
    # is opened: it must not grow by the footers read before.
    rng = np.random.default_rng(4)
    tables = [
        pa.table(
            {
                **{f"f{j}": rng.normal(size=2) for j in range(20)},
                "label": rng.integers(0, 2, size=2),
            }
        )
        for _ in range(200)
    ]
    with files_in_memory(tables, "streamlearn-many") as url:
        ds, in_use = heap_while_opening(
            monkeypatch, lambda: open_dataset(url, target="label", chunk_rows=64))
        assert len(in_use) >= 200
        assert max(in_use) - in_use[0] < 2_000_000, (
            f"the C heap grew by {(max(in_use) - in_use[0]) / 1e6:.1f} MB over 200 footers"
        )
        # every file, in path order
        expected = pa.concat_tables(tables)
        X = np.concatenate([c.X for c in ds.chunks()])
        np.testing.assert_array_equal(X[:, 0], expected.column("f0").to_numpy().astype(np.float32))


@pytest.mark.parametrize("labels", [
    np.array(["spam", "ham"]),
    np.array([0, 1]),
    np.array([-1, 1]),
    np.array([False, True]),
])
def test_label_codings_map_to_class_indices(labels: np.ndarray) -> None:
    rng = np.random.default_rng(1)
    y = labels[rng.integers(0, 2, size=300)]
    ds = open_dataset(rng.normal(size=(300, 2)), target=y, chunk_rows=64)
    codes = np.concatenate([c.y for c in ds.chunks()])
    assert codes.dtype == np.int32
    np.testing.assert_array_equal(ds.classes[codes], y)


@pytest.mark.parametrize("stored", ["parquet", "arrow", "pandas"])
@pytest.mark.parametrize("labels", [np.array([3, 5, 7]), np.array([False, True])])
def test_null_labels_of_an_integer_or_boolean_target_are_missing_values(
        tmp_path: Path, stored: str, labels: np.ndarray) -> None:
    # a null label is dropped under nan_policy="drop" and refused otherwise, as a NaN one
    # is; the classes keep the labels' own type
    rng = np.random.default_rng(2)
    y = labels[rng.integers(0, len(labels), size=300)]
    missing = np.zeros(300, dtype=bool)
    missing[[0, 5, 299]] = True
    table = pa.table({"x": rng.normal(size=300), "label": pa.array(y, mask=missing)})
    data: object = {"parquet": lambda: str(tmp_path / "t.parquet"), "arrow": lambda: table,
                    "pandas": lambda: table.to_pandas(types_mapper=pd.ArrowDtype)}[stored]()
    if stored == "parquet":
        pq.write_table(table, data)
    if stored == "pandas":  # the nullable types of numpy-backed pandas: Int64, boolean
        data = data.astype({"label": "boolean" if y.dtype == bool else "Int64"})
    ds = open_dataset(data, target="label", nan_policy="drop", chunk_rows=64)
    assert ds.classes.dtype == y.dtype
    np.testing.assert_array_equal(ds.classes, np.unique(y[~missing]))
    chunks = list(ds.chunks())
    np.testing.assert_array_equal(ds.classes[np.concatenate([c.y for c in chunks])],
                                  y[~missing])
    np.testing.assert_array_equal(np.concatenate([c.X[:, 0] for c in chunks]),
                                  table.column("x").to_numpy()[~missing].astype(np.float32))
    with pytest.raises(LabelError, match="'label' has NaN or infinite labels; pass "
                                         "nan_policy='drop'"):
        open_dataset(data, target="label").classes


def test_float_target_means_regression(ref: Reference) -> None:
    ds = open_dataset(ref.frame, target="e", features=["a", "b"], chunk_rows=300)
    assert ds.task == "regression" and ds.classes is None
    y = np.concatenate([c.y for c in ds.chunks()])
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, ref.frame["e"].to_numpy())


def test_string_target_from_parquet(ref: Reference, tmp_path: Path) -> None:
    frame = ref.frame.assign(label=ref.frame["label"].map({3: "three", 5: "five", 7: "seven"}))
    path = write_parquet_file(frame, tmp_path / "s.parquet")
    ds = open_dataset(str(path), target="label", exclude=["w"], chunk_rows=333)
    assert list(ds.classes) == ["five", "seven", "three"]
    codes = np.concatenate([c.y for c in ds.chunks()])
    np.testing.assert_array_equal(ds.classes[codes], frame["label"].to_numpy())
    categorical = frame.assign(label=frame["label"].astype("category"))
    ds = open_dataset(categorical, target="label", exclude=["w"])
    assert list(ds.classes) == ["five", "seven", "three"]


def test_a_stored_pandas_index_is_not_a_feature(tmp_path: Path) -> None:
    """pandas stores the index of a shuffled or filtered frame as a column
    (``__index_level_0__``, or the index's name); like ``pandas.read_parquet``, the
    default features leave it out, the rows and their order are the frame's, and the
    column can still be named."""
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200),
                          "label": rng.integers(0, 2, 200)})
    shuffled = frame.sample(frac=1, random_state=1)
    shuffled.to_parquet(tmp_path / "shuffled.parquet")
    ds = open_dataset(str(tmp_path / "shuffled.parquet"), target="label")
    assert ds.feature_names == ("a", "b")
    X = np.concatenate([c.X for c in ds.chunks()])
    np.testing.assert_allclose(X, shuffled[["a", "b"]].to_numpy(np.float32))
    frame.set_index("a").to_parquet(tmp_path / "named.parquet")
    assert open_dataset(str(tmp_path / "named.parquet"), target="label").feature_names == ("b",)
    named = open_dataset(str(tmp_path / "named.parquet"), target="label", features=["a", "b"])
    assert named.feature_names == ("a", "b")
    # a directory whose files differ only in whether the index was stored
    (tmp_path / "dir").mkdir()
    frame.iloc[:100].to_parquet(tmp_path / "dir" / "0.parquet")
    frame.iloc[100:].sample(frac=1, random_state=2).to_parquet(tmp_path / "dir" / "1.parquet")
    both = open_dataset(str(tmp_path / "dir"), target="label")
    assert both.feature_names == ("a", "b") and both.n_rows == 200


@pytest.mark.parametrize("shape", [(5, 1000), (32, 64), (3, 1), (7, 130), (0, 10),
                                   (33, 50), (100, 37), (784, 17)])
def test_transpose_into_matches_numpy(shape: tuple[int, int]) -> None:
    columns = np.random.default_rng(2).normal(size=shape).astype(np.float32)
    out = np.full(shape[::-1], np.nan, dtype=np.float32)
    transpose_into(columns, out)
    np.testing.assert_array_equal(out, columns.T)
    stacked = stack_columns(list(columns), shape[1])
    assert stacked.flags.c_contiguous
    np.testing.assert_array_equal(stacked, columns.T)


@pytest.mark.parametrize("storage_rows", [64, 100, 1000])
def test_zarr_row_ranges_across_storage_chunks(ref: Reference, tmp_path: Path,
                                               storage_rows: int) -> None:
    """Chunks cut across storage chunks, read one range at a time, equal the numpy rows."""
    ds = open_dataset(write_zarr_matrix(ref, tmp_path / "m.zarr", chunk=storage_rows),
                      weight="w", chunk_rows=150)
    block = ds.source.read_rows(37, 411, FEATURES, "y", "w")
    np.testing.assert_array_equal(block.X, ref.X[37:411])
    np.testing.assert_array_equal(block.y, ref.label[37:411])
    np.testing.assert_array_equal(block.weight, ref.weight[37:411])
    for prefetch in (0, 1, 3):
        chunks = list(ds.chunks(prefetch=prefetch, rows=(10, 990)))
        assert [c.start for c in chunks] == list(range(10, 990, 150))
        np.testing.assert_array_equal(np.concatenate([c.X for c in chunks]), ref.X[10:990])
        np.testing.assert_array_equal(ds.classes[np.concatenate([c.y for c in chunks])],
                                      ref.label[10:990])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint32])
@pytest.mark.parametrize("classes", [[0, 1], [3, 4, 5, 6], [-1, 0, 1]])
def test_consecutive_integer_labels_code_like_searchsorted(dtype: type,
                                                           classes: list[int]) -> None:
    if np.dtype(dtype).kind == "u" and classes[0] < 0:
        classes = [c - classes[0] for c in classes]
    classes_arr = np.array(classes)
    y = classes_arr[np.random.default_rng(3).integers(0, len(classes), size=500)].astype(dtype)
    codes = consecutive_codes(y, classes_arr)
    assert codes is not None and codes.dtype == np.int32
    np.testing.assert_array_equal(codes, np.searchsorted(classes_arr, y))
    outside = y.copy()
    outside[123] = classes[-1] + 1
    assert consecutive_codes(outside, classes_arr) is None
    assert consecutive_codes(y, np.array([classes[0], classes[-1] + 5])) is None  # gap
    assert consecutive_codes(y.astype(np.float64), classes_arr) is None


def test_offset_codes_reports_the_first_label_outside() -> None:
    y = np.array([5, 6, 7, 9, 4, 6], dtype=np.int16)
    codes = np.full(6, -9, dtype=np.int32)
    assert offset_codes(y, 5, 3, codes) == 3
    np.testing.assert_array_equal(codes[:3], [0, 1, 2])
    assert offset_codes(y[:3], 5, 3, codes) == -1
    assert offset_codes(np.array([], dtype=np.int8), 0, 2, codes) == -1


def test_a_file_named_without_its_format_is_read_by_its_first_bytes(ref: Reference,
                                                                     tmp_path: Path) -> None:
    import gzip

    from sklearn.datasets import dump_svmlight_file

    from streamlearn.errors import SourceError

    X = ref.X.astype(np.float64)
    expected = open_dataset(ref.frame, target="label", features=FEATURES)
    parquet = write_parquet_file(ref.frame, tmp_path / "f.parquet").rename(tmp_path / "table")
    ref.frame.to_csv(tmp_path / "table.data", index=False)
    dump_svmlight_file(X, ref.label, str(tmp_path / "a9a.t"), zero_based=False)
    with gzip.open(tmp_path / "rows.gz", "wb") as f:
        f.write((tmp_path / "a9a.t").read_bytes())
    for path in (parquet, tmp_path / "table.data"):
        got = open_dataset(str(path), target="label", features=FEATURES)
        np.testing.assert_array_equal(np.concatenate([c.X for c in got.chunks()]),
                                      np.concatenate([c.X for c in expected.chunks()]))
    for path in (tmp_path / "a9a.t", tmp_path / "rows.gz"):
        got = open_dataset(str(path))
        assert got.is_sparse
        dense = np.concatenate([c.X.toarray() for c in got.chunks()])
        np.testing.assert_allclose(dense, X, rtol=1e-6)
    # what the start of a file does not tell is an error that says what to do
    (tmp_path / "notes").write_text("just some words\nand more words\n")
    (tmp_path / "tabs").write_text("a\tb\n1\t2\n")
    (tmp_path / "hidden").write_bytes(gzip.compress(b"1 1:2\n"))
    for name, words in (("notes", "pass format="), ("tabs", "name it .tsv"),
                        ("hidden", "gzip-compressed")):
        with pytest.raises(SourceError, match=words):
            open_dataset(str(tmp_path / name))


def test_a_class_target_with_about_as_many_classes_as_rows_warns() -> None:
    import warnings

    import pandas as pd

    frame = pd.DataFrame({"x": np.arange(300.0), "id": np.arange(300),
                          "label": np.arange(300) % 60})
    with pytest.warns(UserWarning, match="'id' has 300 classes in 300 rows: an identifier"):
        assert len(open_dataset(frame, target="id").classes) == 300
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert len(open_dataset(frame, target="label").classes) == 60  # 5 rows a class


@pytest.mark.parametrize("bad", [2.5, 0, True, "3"])
def test_chunk_rows_must_be_a_whole_number(bad: object) -> None:
    X = np.zeros((10, 2), dtype=np.float32)
    with pytest.raises(ValueError, match="chunk_rows must be a positive whole number"):
        open_dataset(X, chunk_rows=bad)
    with pytest.raises(ValueError, match="chunk_rows must be a positive whole number"):
        list(open_dataset(X).chunks(chunk_rows=bad))


@pytest.mark.parametrize("n_features", [1, 3, 4, 8, 100, 4096, 5000, 100_000])
def test_default_chunk_rows_is_16_mib_of_features_within_its_bounds(n_features: int) -> None:
    # reference: 16 MiB of float32 values a chunk, in whole KiB rows, 1,024 to 2**20 rows
    rows = open_dataset(np.zeros((10, n_features), dtype=np.float32)).chunk_rows
    expected = (16 << 20) // (4 * n_features) // 1024 * 1024
    assert rows == min(max(expected, 1024), 1 << 20)


def test_options_a_source_would_ignore_are_refused(tmp_path: Path) -> None:
    X = np.zeros((10, 2), dtype=np.float32)
    for bad in (-5, 1.5, True):
        with pytest.raises(ValueError, match=rf"prefetch must be a whole number .*got {bad}"):
            open_dataset(X, prefetch=bad)
        with pytest.raises(ValueError, match="prefetch must be a whole number"):
            list(open_dataset(X).chunks(prefetch=bad))
    assert open_dataset(X, prefetch=0).prefetch == 0
    path = tmp_path / "dense.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0], "b": [3.0, 4.0]}), path)
    with pytest.raises(ValueError, match=r"n_features=5 apply to svmlight text .*not to "
                                         r".*dense.parquet"):
        open_dataset(path, n_features=5)
    with pytest.raises(ValueError, match=r"zero_based=True apply to svmlight text"):
        open_dataset(X, zero_based=True)


def test_a_dataset_reopened_with_other_options_is_refused() -> None:
    # open_dataset returns a Dataset as it is: an option it would not apply is named
    X = np.random.default_rng(0).normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(np.int64)
    ds = open_dataset(X, target=y)
    same = dict(target="y", task="classification", chunk_rows=ds.chunk_rows, prefetch=2,
                nan_policy="raise", features=["x0", "x1", "x2"], classes=[0, 1], exclude=None)
    assert open_dataset(ds) is ds
    assert open_dataset(ds, **same) is ds
    with pytest.raises(ValueError, match=r"cannot apply task='regression' \(the dataset's is "
                                         r"'classification': use dataset.with_task\(task\)\); "
                                         r"chunk_rows=7 \(the dataset's is \d+\)"):
        open_dataset(ds, task="regression", chunk_rows=7)
    for option, shown in ((dict(format="parquet"), "format='parquet' .it applies when a "
                                                   "source is opened"),
                          (dict(exclude=["x0"]), r"exclude=\['x0'\]"),
                          (dict(nan_policy="drop"), "nan_policy='drop'"),
                          (dict(classes=[0, 1, 2]), r"classes=\[0, 1, 2\] \(the dataset's is "
                                                    r"\[0, 1\]\)"),
                          (dict(target=y), "target=<ndarray>")):
        with pytest.raises(ValueError, match=shown):
            open_dataset(ds, **option)


def test_feature_transforms_apply_in_the_order_given() -> None:
    from streamlearn.features.tail_transform import TailTransform
    from streamlearn.solvers.kmeans import Standardiser

    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    tail = TailTransform(np.array([1]), np.array([0.5]), np.array([2.0]))
    std = Standardiser(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 0.5]))
    data = open_dataset(X, target=np.arange(300) % 2, chunk_rows=100)
    both = data.with_feature_transform(tail).with_feature_transform(std)
    got = np.concatenate([chunk.X for chunk in both.chunks()])
    np.testing.assert_allclose(got, std.apply(tail.apply(X)), rtol=1e-6)
    expected = X.astype(np.float64)
    expected[:, 1] = np.arcsinh((expected[:, 1] - 0.5) / 2.0)
    np.testing.assert_allclose(got, (expected - [1.0, 2.0, 3.0]) / [2.0, 4.0, 0.5],
                               rtol=1e-5, atol=1e-6)
    # the dataset it came from still maps nothing
    np.testing.assert_array_equal(np.concatenate([c.X for c in data.chunks()]), X)


def test_a_feature_expansion_changes_the_columns_of_every_chunk() -> None:
    import pandas as pd

    from streamlearn.errors import DataError
    from streamlearn.features.category_indicators import CategoryIndicators

    rng = np.random.default_rng(3)
    colour = rng.choice(["red", "green", "blue"], 300)
    frame = pd.DataFrame({"a": rng.normal(size=300), "colour": colour,
                          "t": np.arange(300) % 2})
    data = open_dataset(frame, target="t", chunk_rows=70)
    indicators = CategoryIndicators.of(data.feature_names, data.categories)
    wide = data.with_feature_expansion(indicators)
    # the columns: pandas' indicators of the colours (sorted), in the column's place
    assert wide.feature_names == ("a", "colour=blue", "colour=green", "colour=red")
    assert wide.indicator_features == (1, 2, 3) and data.indicator_features == ()
    expected = pd.get_dummies(frame["colour"]).to_numpy(np.float32)
    got = np.concatenate([chunk.X for chunk in wide.chunks()])
    np.testing.assert_array_equal(got, np.c_[frame["a"].to_numpy(np.float32), expected])
    # the categories stay those of the rows read; reopened for a task, it keeps the map
    assert wide.categories == {"colour": ("blue", "green", "red")}
    again = wide.with_task("regression")
    assert again.feature_names == wide.feature_names
    np.testing.assert_array_equal(np.concatenate([c.X for c in again.chunks()]), got)
    # a missing value is named by the column read
    holes = frame.assign(a=np.where(np.arange(300) == 5, np.nan, frame["a"]))
    holed = open_dataset(holes, target="t").with_feature_expansion(indicators)
    with pytest.raises(DataError, match="nan in feature column 'a' at"):
        list(holed.chunks())


def test_threads_build_and_compute_dask_partitions_one_at_a_time(monkeypatch) -> None:
    """dask's expressions optimise through cached properties whose Python 3.11 locks are
    shared by all instances: two threads optimising at once could deadlock. Partitions of a
    concatenated frame read from four threads never overlap, and come back whole."""
    import threading
    import time

    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(400, 3)), columns=list("abc")).assign(
        t=rng.integers(0, 2, size=400))
    parts = [frame.iloc[:100], frame.iloc[0:0], frame.iloc[100:101], frame.iloc[101:]]
    ddf = dd.concat([dd.from_pandas(p, npartitions=1) for p in parts]).clear_divisions()
    dataset = open_dataset(ddf, target="t")
    source = dataset.source
    inside, most = [0], [0]
    original = source._frame.get_partition

    def counted(i: int):  # the partition's expression is built inside the lock
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        inside[0] -= 1
        return original(i)

    monkeypatch.setattr(source._frame, "get_partition", counted, raising=False)
    got: dict[int, np.ndarray] = {}

    def read(i: int) -> None:
        got[i] = source.read_piece(i, list("abc"), "t", None).X

    threads = [threading.Thread(target=read, args=(i,)) for i in range(4) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1
    np.testing.assert_allclose(np.concatenate([got[i] for i in range(4)]),
                               frame[list("abc")].to_numpy(np.float32))


def test_a_dask_target_of_unknown_chunk_sizes_says_what_to_do() -> None:
    import pandas as pd

    from streamlearn.errors import SourceError

    X = np.random.default_rng(0).normal(size=(40, 2)).astype(np.float32)
    y = dd.from_pandas(pd.Series(np.arange(40) % 2), npartitions=4).to_dask_array()
    with pytest.raises(SourceError, match=r"y has unknown chunk sizes.*compute_chunk_sizes"):
        open_dataset(da.from_array(X, chunks=(10, 2)), target=y)
    ds = open_dataset(da.from_array(X, chunks=(10, 2)), target=y.compute_chunk_sizes())
    assert ds.n_rows == 40


def _labelled_with_gaps(tmp_path: Path, container: str) -> tuple[object, pd.DataFrame]:
    """A table whose text label misses on some rows, as ``container``, and the frame."""
    rng = np.random.default_rng(3)
    n = 200
    label = pd.Series(rng.choice(["cat", "dog", "eel"], n), dtype="string")
    label[[0, 17, 18, 120, 199]] = pd.NA
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "label": label})
    if container.endswith("categorical"):
        frame["label"] = frame["label"].astype("category")
    if container.startswith("pandas"):
        return frame, frame
    if container.startswith("dask"):  # partitions of 70 rows: a gap at each one's end
        return dd.from_pandas(frame, npartitions=3, sort=False), frame
    if container.startswith("csv"):  # a missing label written empty, and as NA
        path = tmp_path / "gaps.csv"
        text = frame.to_csv(index=False, na_rep="").splitlines()
        text[1 + 17] += "NA"  # row 17's label
        path.write_text("\n".join(text) + "\n")
        return str(path), frame
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if container.startswith("arrow"):
        return table, frame
    path = tmp_path / "gaps.parquet"
    pq.write_table(table, path, row_group_size=64)
    return str(path), frame


CONTAINERS = ["pandas string", "pandas categorical", "arrow string", "arrow categorical",
              "parquet string", "parquet categorical", "dask string", "dask categorical",
              "csv string"]


@pytest.mark.parametrize("container", CONTAINERS)
def test_missing_text_labels_by_column_name_follow_nan_policy(tmp_path: Path,
                                                              container: str) -> None:
    """A text or categorical target named by column drops its missing labels' rows under
    nan_policy='drop' (as the same labels given as ``y`` are) and is refused, naming the
    column, otherwise."""
    source, frame = _labelled_with_gaps(tmp_path, container)
    kept = np.flatnonzero(frame["label"].notna().to_numpy())
    ds = open_dataset(source, target="label", nan_policy="drop", chunk_rows=50)
    assert ds.n_rows == ds.schema.n_rows == len(frame)  # the dropped rows counted, as stored
    np.testing.assert_array_equal(ds.class_labels(), ["cat", "dog", "eel"])
    chunks = list(ds.chunks())
    np.testing.assert_array_equal(np.concatenate([c.rows for c in chunks]), kept)
    np.testing.assert_array_equal(np.concatenate([c.X for c in chunks]),
                                  frame[["a", "b"]].to_numpy(np.float32)[kept])
    labels = ds.class_labels()[np.concatenate([c.y for c in chunks])]
    np.testing.assert_array_equal(labels, frame["label"].to_numpy(object)[kept])
    with pytest.raises(DataError, match=r"target column 'label' is missing \(null\) at row 0 "
                                        r".*nan_policy='drop'"):
        list(open_dataset(source, target="label").chunks())


@pytest.mark.parametrize("container", ["pandas categorical", "parquet string",
                                       "dask categorical", "csv string"])
def test_fit_by_column_name_drops_rows_of_missing_text_labels(tmp_path: Path,
                                                              container: str) -> None:
    """fit(table, "label", nan_policy="drop") learns what fit on the labelled rows does."""
    from streamlearn.models import ShareBoostClassifier

    source, frame = _labelled_with_gaps(tmp_path, container)
    labelled = frame[frame["label"].notna()].reset_index(drop=True)
    # no rows held out: they are drawn by a hash of the row number, which the dropped
    # rows' gaps shift, so a held-out choice would differ between the two fits by design
    model = ShareBoostClassifier(random_state=0, validation_fraction=None).fit(
        source, "label", nan_policy="drop")
    reference = ShareBoostClassifier(random_state=0, validation_fraction=None).fit(
        labelled[["a", "b"]], labelled["label"].astype(object))
    np.testing.assert_array_equal(model.classes_, ["cat", "dog", "eel"])
    np.testing.assert_allclose(model.decision_function(frame[["a", "b"]]),
                               reference.decision_function(frame[["a", "b"]]), rtol=1e-5)
    with pytest.raises(DataError, match="target column 'label' is missing"):
        ShareBoostClassifier().fit(source, "label")
