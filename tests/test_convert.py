"""Writing datasets to zarr (dense and CSR layouts), reading CSR groups, `streamlearn convert`."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import numcodecs
import numpy as np
import pandas as pd
import pytest
import zarr
from click.testing import CliRunner
from scipy import sparse

from streamlearn import open_dataset
from streamlearn.cli import cli
from streamlearn.data import convert as convert_module
from streamlearn.data.convert import ConvertReport, convert
from streamlearn.data.dataset import Dataset
from streamlearn.data.sources.sparse_zarr import SparseZarrSource, is_sparse_zarr
from streamlearn.errors import DataError, ReadError, SchemaError, SourceError
from tests.conftest import FEATURES, Reference, write_parquet_file


# ------------------------------------------------------------------ helpers
def sparse_matrix(n: int = 300, d: int = 40, density: float = 0.1, seed: int = 0) -> np.ndarray:
    """A dense float32 matrix with about ``density`` of its entries non-zero (some rows
    empty)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random((n, d)) >= density] = 0
    X[::17] = 0
    return X


def write_csr(path: Path | str, matrix: sparse.csr_array, y: np.ndarray | None,
              weight: np.ndarray | None = None, *, rows: int = 32, entries: int = 50,
              attrs: dict | None = None, classes: list | None = None) -> zarr.Group:
    """A CSR group written array by array, with small storage chunks."""
    group = zarr.open_group(str(path), mode="w")
    group.attrs.update(attrs if attrs is not None
                       else {"layout": "csr", "n_features": int(matrix.shape[1])})
    group.create_array("indptr", data=np.asarray(matrix.indptr, dtype=np.int64),
                       chunks=(rows,))
    group.create_array("indices", data=np.asarray(matrix.indices, dtype=np.int32),
                       chunks=(entries,))
    group.create_array("data", data=np.asarray(matrix.data, dtype=np.float32),
                       chunks=(entries,))
    if y is not None:
        kind = str if y.dtype.kind in "UO" else y.dtype
        arr = group.create_array("y", shape=y.shape, dtype=kind, chunks=(rows,))
        arr[:] = y
        if classes is not None:
            arr.attrs["classes"] = classes
    if weight is not None:
        group.create_array("weight", data=weight.astype(np.float32), chunks=(rows,))
    return group


def streamed(dataset: Dataset, chunk_rows: int = 64) -> tuple[np.ndarray, np.ndarray | None,
                                                               np.ndarray | None]:
    """Dense features, original labels (or values) and weights of every row, in order."""
    X, y, w = [], [], []
    for chunk in dataset.chunks(chunk_rows, prefetch=0):
        X.append(chunk.X.toarray() if chunk.is_sparse else chunk.X)
        if chunk.y is not None:
            y.append(dataset.classes[chunk.y] if dataset.classes is not None else chunk.y)
        if chunk.weight is not None:
            w.append(chunk.weight)
    return (np.concatenate(X), np.concatenate(y) if y else None,
            np.concatenate(w) if w else None)


@pytest.fixture
def labelled(ref: Reference) -> pd.DataFrame:
    frame = ref.frame.copy()
    frame["animal"] = np.where(frame["label"].to_numpy() == 3, "cat",
                               np.where(frame["label"].to_numpy() == 5, "dog", "emu"))
    return frame


# ------------------------------------------------------------------ dense layout
def test_numpy_to_dense_zarr_reads_back_rows_labels_weights(ref: Reference,
                                                            tmp_path: Path) -> None:
    ds = open_dataset(ref.X, target=ref.label, weight=ref.weight, chunk_rows=96)
    out = tmp_path / "out.zarr"
    report = convert(ds, out, chunk_rows=100)
    assert isinstance(report, ConvertReport)
    assert (report.rows, report.features, report.layout) == (1000, 5, "dense")
    assert report.nnz == np.count_nonzero(ref.X)
    assert report.bytes_written > 0 and report.seconds > 0
    group = zarr.open_group(str(out), mode="r")
    assert group["X"].chunks == (100, 5)
    assert group["y"].attrs["classes"] == [3, 5, 7]

    back = open_dataset(str(out), weight="weight")
    assert back.target == "y" and back.task == "classification"
    X, y, w = streamed(back)
    np.testing.assert_array_equal(X, ref.X)
    np.testing.assert_array_equal(y, ref.label)
    np.testing.assert_array_equal(w, ref.weight)
    assert sorted(os.listdir(tmp_path)) == ["out.zarr"]  # no temporary directory left


def test_parquet_to_dense_zarr_keeps_feature_names(ref: Reference, tmp_path: Path) -> None:
    path = write_parquet_file(ref.frame, tmp_path / "t.parquet")
    ds = open_dataset(str(path), target="label", features=FEATURES)
    convert(ds, tmp_path / "t.zarr")
    back = open_dataset(str(tmp_path / "t.zarr"))
    assert back.feature_names == tuple(FEATURES)
    X, y, _ = streamed(back)
    np.testing.assert_array_equal(X, ref.X)
    np.testing.assert_array_equal(y, ref.label)


def test_features_named_like_the_target_and_weight_arrays_keep_their_names(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"y": rng.normal(size=300), "a": rng.normal(size=300),
                          "weight": rng.random(300)})
    frame["label"] = np.where(frame["y"] > 0, "p", "n")
    frame["w"] = rng.random(300).astype(np.float32) + 0.5
    data = tmp_path / "t.parquet"
    frame.to_parquet(data, index=False)
    store = tmp_path / "t.zarr"
    convert(open_dataset(str(data), target="label", weight="w"), str(store))
    assert zarr.open_group(str(store), mode="r").attrs["target"] == "y_"
    back = open_dataset(str(store), weight="weight_")  # the target is found by itself
    assert list(back.feature_names) == ["y", "a", "weight"] and back.target == "y_"
    chunk = next(back.chunks(prefetch=0))
    np.testing.assert_array_equal(
        chunk.X, frame[["y", "a", "weight"]].to_numpy(dtype=np.float32)[:chunk.n_rows])
    np.testing.assert_array_equal(back.classes[chunk.y], frame["label"][:chunk.n_rows])
    np.testing.assert_array_equal(chunk.weight, frame["w"][:chunk.n_rows])


def test_storage_chunks_of_small_data_are_no_longer_than_the_data(tmp_path: Path) -> None:
    X = np.arange(400, dtype=np.float32).reshape(100, 4)
    convert(open_dataset(X, target=np.arange(100) % 2), str(tmp_path / "s.zarr"),
            compression="none")
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="r")
    assert group["X"].chunks == (100, 4) and group["y"].chunks == (100,)
    assert os.path.getsize(tmp_path / "s.zarr" / "X" / "c" / "0" / "0") == X.nbytes


def test_string_labels_written_as_labels(labelled: pd.DataFrame, ref: Reference,
                                         tmp_path: Path) -> None:
    path = write_parquet_file(labelled, tmp_path / "t.parquet")
    ds = open_dataset(str(path), target="animal", features=FEATURES)
    convert(ds, tmp_path / "t.zarr", layout="sparse")
    group = zarr.open_group(str(tmp_path / "t.zarr"), mode="r")
    assert group["y"].attrs["classes"] == ["cat", "dog", "emu"]
    back = open_dataset(str(tmp_path / "t.zarr"))
    assert back.classes.tolist() == ["cat", "dog", "emu"]
    _, y, _ = streamed(back)
    np.testing.assert_array_equal(y, labelled["animal"].to_numpy())


def test_named_columns_in_the_sparse_layout_are_selected_by_their_names(
        labelled: pd.DataFrame, tmp_path: Path) -> None:
    path = write_parquet_file(labelled, tmp_path / "t.parquet")
    ds = open_dataset(str(path), target="animal", features=FEATURES)
    convert(ds, tmp_path / "s.zarr", layout="sparse")
    # the store's columns keep their names, which select all of them, in order
    back = open_dataset(str(tmp_path / "s.zarr"), features=FEATURES)
    assert list(back.feature_names) == FEATURES
    assert list(open_dataset(str(tmp_path / "s.zarr")).feature_names) == FEATURES
    X = np.vstack([c.X.to_scipy().toarray() for c in back.chunks()])
    np.testing.assert_array_equal(X, labelled[FEATURES].to_numpy(np.float32))
    with pytest.raises(SchemaError, match="numbered columns"):
        open_dataset(str(tmp_path / "s.zarr"), features=FEATURES[::-1])
    # a model trained on the named columns predicts the store from the command line
    model = tmp_path / "m.slm"
    trained = CliRunner().invoke(cli, ["train", str(path), "-t", "animal", "--features",
                                       ",".join(FEATURES), "-m", "additive", "-p",
                                       "embedding=linear", "-o", str(model), "--quiet"])
    assert trained.exit_code == 0, trained.output
    predicted = CliRunner().invoke(cli, ["predict", str(model), str(tmp_path / "s.zarr"), "-o",
                                         str(tmp_path / "p.parquet"), "--quiet"])
    assert predicted.exit_code == 0, predicted.output
    direct = CliRunner().invoke(cli, ["predict", str(model), str(path), "-o",
                                      str(tmp_path / "q.parquet"), "--quiet"])
    assert direct.exit_code == 0, direct.output
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "p.parquet"),
                                  pd.read_parquet(tmp_path / "q.parquet"))
    # and one trained on the store predicts the table its rows came from, by name
    on_store = tmp_path / "n.slm"
    trained = CliRunner().invoke(cli, ["train", str(tmp_path / "s.zarr"), "-m", "additive",
                                       "-p", "embedding=linear", "-o", str(on_store), "-q"])
    assert trained.exit_code == 0, trained.output
    for data, out in ((tmp_path / "s.zarr", "r.parquet"), (path, "u.parquet")):
        predicted = CliRunner().invoke(cli, ["predict", str(on_store), str(data), "-o",
                                             str(tmp_path / out), "--quiet"])
        assert predicted.exit_code == 0, predicted.output
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "r.parquet"),
                                  pd.read_parquet(tmp_path / "u.parquet"))


def test_string_labels_dense_layout(labelled: pd.DataFrame, tmp_path: Path) -> None:
    path = write_parquet_file(labelled, tmp_path / "t.parquet")
    ds = open_dataset(str(path), target="animal", features=FEATURES)
    convert(ds, tmp_path / "t.zarr")
    back = open_dataset(str(tmp_path / "t.zarr"))
    assert back.classes.tolist() == ["cat", "dog", "emu"]
    _, y, _ = streamed(back)
    np.testing.assert_array_equal(y, labelled["animal"].to_numpy())


def test_regression_target_written_as_values(ref: Reference, tmp_path: Path) -> None:
    values = ref.X[:, 0] * 3 + 1
    ds = open_dataset(ref.X, target=values)
    convert(ds, tmp_path / "r.zarr")
    back = open_dataset(str(tmp_path / "r.zarr"))
    assert back.task == "regression"
    _, y, _ = streamed(back)
    np.testing.assert_array_equal(y, values)


def test_categorical_features_written_as_codes_with_their_lists(tmp_path: Path) -> None:
    frame = pd.DataFrame({"colour": ["red", "blue", "red", "green"] * 25,
                          "size": np.arange(100, dtype=np.float32),
                          "label": [0, 1] * 50})
    ds = open_dataset(frame, target="label")
    convert(ds, tmp_path / "c.zarr")
    X = zarr.open_group(str(tmp_path / "c.zarr"), mode="r")["X"]
    assert X.attrs["categories"] == {"colour": ["blue", "green", "red"]}
    codes = np.asarray(X[:, 0])
    np.testing.assert_array_equal(codes[:4], [2, 0, 2, 1])


def test_a_store_of_codes_reports_its_categories_to_the_models_trained_on_it(
        tmp_path: Path) -> None:
    """The store's ``categories`` come back as the dataset's: a model trained on the store
    records them, so the rows of a table holding only some of the values (whose own
    dictionary would code them otherwise) predict as the same rows of the store do; a
    model trained on the table scores the store; other lists are refused by name."""
    from streamlearn.models import AdditiveSVC

    rng = np.random.default_rng(3)
    colour = rng.choice(["blue", "green", "red"], 900)
    size = rng.normal(size=900).astype(np.float32)
    label = ((colour == "red") ^ (size > 0)).astype(int)
    frame = pd.DataFrame({"colour": colour, "size": size, "label": label})
    write_parquet_file(frame, tmp_path / "t.parquet")
    red = frame[frame.colour == "red"].reset_index(drop=True)
    write_parquet_file(red, tmp_path / "red.parquet")
    convert(open_dataset(str(tmp_path / "t.parquet"), target="label"), tmp_path / "c.zarr")
    store = open_dataset(str(tmp_path / "c.zarr"))
    assert store.categories == {"colour": ("blue", "green", "red")}
    on_store = AdditiveSVC(interactions=0, value_terms=False).fit(store)
    assert on_store.categories_ == {"colour": ("blue", "green", "red")}
    # streamed as the command line streams it (coded by the model's lists) and in memory
    streamed_red = open_dataset(str(tmp_path / "red.parquet"), target="label",
                                categories=on_store.categories_)
    in_memory = on_store.predict(red.drop(columns="label"))
    assert on_store.score(streamed_red) == pytest.approx(np.mean(in_memory == red.label))
    assert on_store.score(store) == pytest.approx(on_store.score(frame.drop(columns="label"),
                                                                 label))
    on_table = AdditiveSVC(interactions=0, value_terms=False).fit(
        open_dataset(str(tmp_path / "t.parquet"), target="label"))
    assert on_table.score(store) == pytest.approx(on_table.score(frame.drop(columns="label"),
                                                                 label))
    with pytest.raises(SchemaError, match="holds codes into the categories"):
        open_dataset(str(tmp_path / "c.zarr"), categories={"colour": ["green", "red"]})


def test_rows_dropped_by_the_nan_policy_are_left_out(tmp_path: Path) -> None:
    X = np.arange(600, dtype=np.float32).reshape(200, 3)
    X[[5, 50, 150], 1] = np.nan
    y = np.arange(200) % 2
    ds = open_dataset(X, target=y, nan_policy="drop")
    report = convert(ds, tmp_path / "d.zarr", chunk_rows=32)
    assert report.rows == 197
    keep = np.isfinite(X).all(axis=1)
    back = open_dataset(str(tmp_path / "d.zarr"))
    got, labels, _ = streamed(back)
    np.testing.assert_array_equal(got, X[keep])
    np.testing.assert_array_equal(labels, y[keep])
    report = convert(ds, tmp_path / "s.zarr", layout="sparse", chunk_rows=32)
    assert report.rows == 197
    source = SparseZarrSource(str(tmp_path / "s.zarr"))
    np.testing.assert_array_equal(source.read_rows(0, 197, [], None, None).X.toarray(),
                                  X[keep])


# ------------------------------------------------------------------ sparse layout
def test_dense_to_sparse_zarr_holds_the_non_zeros(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(convert_module, "SPARSE_CHUNK_ENTRIES", 64)
    X = sparse_matrix()
    y = np.arange(X.shape[0]) % 3
    ds = open_dataset(X, target=y, weight=np.linspace(1, 2, X.shape[0]))
    report = convert(ds, tmp_path / "s.zarr", layout="sparse", chunk_rows=50)
    expected = sparse.csr_array(X)
    assert report.layout == "sparse" and report.nnz == expected.nnz
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="r")
    assert is_sparse_zarr(group) and is_sparse_zarr(str(tmp_path / "s.zarr"))
    assert group["indices"].chunks == (64,) and group["indptr"].chunks == (50,)

    source = SparseZarrSource(str(tmp_path / "s.zarr"))
    assert source.sparse and source.n_features == 40 and source.nnz == expected.nnz
    assert source.columns == ["y", "weight"]
    block = source.read_rows(0, X.shape[0], [], "y", "weight")
    got = block.X.to_scipy()
    assert (got != expected).nnz == 0
    np.testing.assert_array_equal(got.indptr, expected.indptr)
    np.testing.assert_array_equal(block.y, y)
    np.testing.assert_allclose(block.weight, np.linspace(1, 2, X.shape[0]), rtol=1e-6)
    assert list(source.known_classes("y")) == [0, 1, 2]


def test_csr_group_written_by_hand_read_across_storage_chunks(tmp_path: Path) -> None:
    X = sparse_matrix(n=250, d=30, density=0.2, seed=1)
    matrix = sparse.csr_array(X)
    labels = np.where(np.arange(250) % 3 == 0, "spam", "ham")
    weight = np.linspace(0.5, 1.5, 250)
    write_csr(tmp_path / "h.zarr", matrix, labels, weight, rows=32, entries=50)
    source = SparseZarrSource(str(tmp_path / "h.zarr"))
    assert [p.n_rows for p in source.pieces] == [32] * 7 + [26]
    assert [p.file_row for p in source.pieces] == list(range(0, 250, 32))
    for a, b in [(0, 250), (0, 1), (31, 33), (30, 97), (64, 64), (100, 250), (17, 18)]:
        block = source.read_rows(a, b, [], "y", "weight")
        assert block.X.indptr[0] == 0 and block.X.n_cols == 30
        np.testing.assert_array_equal(block.X.toarray(), X[a:b])
        np.testing.assert_array_equal(block.y, labels[a:b])
        np.testing.assert_array_equal(block.weight, weight[a:b].astype(np.float32))
        assert block.weight.dtype == np.float64  # the dataset checks it, then casts it
        assert block.X.indices.dtype == np.int32 and block.X.values.dtype == np.float32
    piece = source.read_piece(3, [], "y", None)
    np.testing.assert_array_equal(piece.X.toarray(), X[96:128])
    assert piece.weight is None
    np.testing.assert_array_equal(source.read_target(7, "y"), labels[224:])
    assert source.known_classes("y") is None


def test_sparse_dataset_of_a_csr_group_converts_both_ways(tmp_path: Path) -> None:
    X = sparse_matrix(n=200, d=25, seed=2)
    y = np.arange(200) % 2
    write_csr(tmp_path / "h.zarr", sparse.csr_array(X), y, rows=40, entries=64,
              classes=[0, 1])
    ds = Dataset(SparseZarrSource(str(tmp_path / "h.zarr")), target="y", chunk_rows=30)

    report = convert(ds, tmp_path / "s.zarr")  # auto: the source is sparse
    assert report.layout == "sparse" and report.nnz == np.count_nonzero(X)
    back = SparseZarrSource(str(tmp_path / "s.zarr"))
    np.testing.assert_array_equal(back.read_rows(0, 200, [], None, None).X.toarray(), X)
    assert "feature_names" not in zarr.open_group(str(tmp_path / "s.zarr")).attrs

    report = convert(ds, tmp_path / "d.zarr", layout="dense", chunk_rows=64)
    assert report.layout == "dense" and report.nnz == np.count_nonzero(X)
    dense = open_dataset(str(tmp_path / "d.zarr"))
    got, labels, _ = streamed(dense)
    np.testing.assert_array_equal(got, X)
    np.testing.assert_array_equal(labels, y)


def test_wide_sparse_rows_go_dense_in_bounded_chunks(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(convert_module, "MAX_DENSE_CHUNK_BYTES", 4 * 25 * 7)
    X = sparse_matrix(n=100, d=25, seed=3)
    write_csr(tmp_path / "h.zarr", sparse.csr_array(X), np.arange(100) % 2)
    ds = Dataset(SparseZarrSource(str(tmp_path / "h.zarr")), target="y", chunk_rows=30)
    convert(ds, tmp_path / "d.zarr", layout="dense")
    assert zarr.open_group(str(tmp_path / "d.zarr"))["X"].chunks == (7, 25)
    np.testing.assert_array_equal(streamed(open_dataset(str(tmp_path / "d.zarr")))[0], X)


# ------------------------------------------------------------------ layout errors
@pytest.fixture
def csr_store(tmp_path: Path) -> tuple[Path, sparse.csr_array]:
    matrix = sparse.csr_array(sparse_matrix(n=60, d=10, density=0.3, seed=4))
    path = tmp_path / "bad.zarr"
    write_csr(path, matrix, np.arange(60) % 2, rows=16, entries=20)
    return path, matrix


@pytest.mark.parametrize(("change", "error", "words"), [
    (lambda g: g.attrs.__delitem__("layout"), SourceError, "not a CSR group"),
    (lambda g: g.attrs.update({"layout": "csc"}), SourceError, "'csc'"),
    (lambda g: g.attrs.__delitem__("n_features"), SourceError, "n_features"),
    (lambda g: g.attrs.update({"n_features": "ten"}), SourceError, "n_features"),
    (lambda g: g.__delitem__("indices"), SourceError, "lacks the array(s) ['indices']"),
    (lambda g: g["y"].resize((59,)), DataError, "'y' has 59 rows"),
    (lambda g: g["data"].resize((5,)), DataError, "'data' has 5"),
    (lambda g: g["indptr"].__setitem__(0, 1), DataError, "starts at 1"),
    (lambda g: g["indptr"].__setitem__(60, 3), DataError, "ends at 3"),
    (lambda g: g.create_array("weight", shape=(60, 2), dtype="float32"), SourceError,
     "expected a 1-D array"),
    (lambda g: g.create_array("weight", shape=(60,), dtype=str), SourceError,
     "numeric dtype"),
])
def test_layout_errors_name_the_store(csr_store, change, error, words) -> None:
    path, _ = csr_store
    change(zarr.open_group(str(path), mode="r+"))
    with pytest.raises(error, match="bad.zarr") as info:
        SparseZarrSource(str(path))
    assert words in str(info.value)


def test_no_store_at_the_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no zarr group"):
        SparseZarrSource(str(tmp_path / "missing.zarr"))
    assert not is_sparse_zarr(str(tmp_path / "missing.zarr"))


@pytest.mark.parametrize(("column", "words"), [(10, "outside the columns 0..9"),
                                               (None, "stored twice")])
def test_bad_column_indices_are_refused_when_streamed(csr_store, column, words) -> None:
    path, matrix = csr_store
    group = zarr.open_group(str(path), mode="r+")
    row = 20
    first, second = int(matrix.indptr[row]), int(matrix.indptr[row]) + 1
    assert matrix.indptr[row + 1] - matrix.indptr[row] >= 2
    group["indices"][second] = column if column is not None else matrix.indices[first]
    ds = Dataset(SparseZarrSource(str(path)), target="y")
    next(ds.chunks(20, prefetch=0))  # rows before it are fine
    with pytest.raises(DataError, match=f"{words}") as info:
        list(ds.chunks(16, prefetch=0))
    assert "bad.zarr" in str(info.value) and "dataset row 20" in str(info.value)


def test_decreasing_indptr_is_refused_on_read(csr_store) -> None:
    path, _ = csr_store
    zarr.open_group(str(path), mode="r+")["indptr"][30] = 0
    source = SparseZarrSource(str(path))
    source.read_rows(0, 29, [], None, None)
    with pytest.raises(DataError, match="bad.zarr: 'indptr' of rows 16-32 is not"):
        source.read_rows(16, 32, [], None, None)


def test_unreadable_storage_chunk_names_array_and_rows(csr_store) -> None:
    path, _ = csr_store
    (path / "indices" / "c" / "1").write_bytes(b"not zstd")
    source = SparseZarrSource(str(path))
    with pytest.raises(ReadError, match=r"rows 20-40 of array 'indices'.*rows 0-60"):
        source.read_rows(0, 60, [], None, None)


# ------------------------------------------------------------------ the destination
def test_existing_destination_refused_unless_overwrite(ref: Reference, tmp_path: Path) -> None:
    ds = open_dataset(ref.X, target=ref.label)
    out = tmp_path / "o.zarr"
    convert(ds, out, layout="sparse")
    with pytest.raises(FileExistsError, match="o.zarr exists"):
        convert(ds, out)
    assert is_sparse_zarr(str(out))
    report = convert(ds, out, overwrite=True)
    assert report.layout == "dense" and not is_sparse_zarr(str(out))
    assert sorted(os.listdir(tmp_path)) == ["o.zarr"]
    # overwrite replaces a store, never a directory of other files, nor a file
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "important.txt").write_text("keep me")
    (tmp_path / "file.zarr").write_text("not a store")
    for other in ("notes", "file.zarr"):
        with pytest.raises(FileExistsError, match="is not a zarr store"):
            convert(ds, tmp_path / other, overwrite=True)
    assert (tmp_path / "notes" / "important.txt").read_text() == "keep me"
    assert (tmp_path / "file.zarr").read_text() == "not a store"


def test_a_store_named_through_a_symbolic_link_is_replaced_where_it_lies(
        ref: Reference, tmp_path: Path) -> None:
    ds = open_dataset(ref.X, target=ref.label)
    (tmp_path / "real").mkdir()
    convert(ds, tmp_path / "real" / "o.zarr", layout="sparse")
    link = tmp_path / "link.zarr"
    os.symlink("real/o.zarr", link)
    convert(ds, link, layout="dense", overwrite=True)
    assert link.is_symlink() and os.readlink(link) == "real/o.zarr"
    assert not is_sparse_zarr(str(tmp_path / "real" / "o.zarr"))
    assert sorted(os.listdir(tmp_path)) == ["link.zarr", "real"]
    assert os.listdir(tmp_path / "real") == ["o.zarr"]
    # a link to a store not written yet: the store is made where the link points
    os.symlink("real/new.zarr", tmp_path / "ahead.zarr")
    convert(ds, tmp_path / "ahead.zarr")
    assert (tmp_path / "ahead.zarr").is_symlink()
    assert (tmp_path / "real" / "new.zarr" / "zarr.json").is_file()


def test_a_store_gets_the_permissions_of_a_new_directory_or_keeps_its_own(
        ref: Reference, tmp_path: Path) -> None:
    ds = open_dataset(ref.X, target=ref.label)
    (tmp_path / "plain").mkdir()
    out = tmp_path / "o.zarr"
    convert(ds, out)
    assert out.stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777
    out.chmod(0o750)
    convert(ds, out, overwrite=True)
    assert out.stat().st_mode & 0o777 == 0o750


def test_interrupted_conversion_leaves_nothing(ref: Reference, tmp_path: Path) -> None:
    ds = open_dataset(ref.X, target=ref.label, chunk_rows=100)
    seen: list[int] = []

    def stop_midway(rows: int) -> None:
        seen.append(rows)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        convert(ds, tmp_path / "o.zarr", progress=stop_midway)
    assert os.listdir(tmp_path) == []


def lz4_bytes(values: np.ndarray) -> int:
    """Bytes of zarr's Blosc LZ4 (byte shuffle, level 5) encoding of ``values``, as numcodecs
    writes it."""
    codec = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE,
                            typesize=values.dtype.itemsize)
    return len(codec.encode(np.ascontiguousarray(values)))


def first_chunk_file(store: Path, name: str, ndim: int) -> Path:
    return store / name / "c" / "/".join(["0"] * ndim)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize(("compression", "codec"), [
    ("auto", None), ("lz4", "BloscCodec"), ("zstd", "ZstdCodec"), ("none", "")])
def test_each_compression_reads_back_the_same_rows(ref: Reference, tmp_path: Path, layout: str,
                                                   compression: str, codec: str | None) -> None:
    X = ref.X.copy()
    X[np.abs(X) < 0.8] = 0  # sparse enough for a CSR store to hold fewer entries
    ds = open_dataset(X, target=ref.label, weight=ref.weight, chunk_rows=96)
    out = tmp_path / "out.zarr"
    report = convert(ds, out, layout=layout, compression=compression)  # type: ignore[arg-type]
    group = zarr.open_group(str(out), mode="r")
    assert set(report.codecs) == set(group.array_keys())
    for name in ("X",) if layout == "dense" else ("indptr", "indices", "data"):
        expected = codec
        if expected is None:  # auto: LZ4 where it saves a quarter of the first chunk
            first = group[name][:group[name].chunks[0]]
            expected = "BloscCodec" if lz4_bytes(first) <= 0.75 * first.nbytes else ""
        found = [type(c).__name__ for c in group[name].compressors]
        assert found == ([expected] if expected else [])
        assert report.codecs[name] == {"BloscCodec": "lz4", "ZstdCodec": "zstd",
                                       "": "none"}[expected]
    X_back, y, w = streamed(open_dataset(str(out), weight="weight"))
    np.testing.assert_array_equal(X_back, X)
    np.testing.assert_array_equal(y, ref.label)
    np.testing.assert_array_equal(w, ref.weight)


def test_text_labels_keep_zstd_whatever_the_compression(labelled: pd.DataFrame,
                                                        tmp_path: Path) -> None:
    path = write_parquet_file(labelled, tmp_path / "d.parquet")
    out = tmp_path / "o.zarr"
    convert(open_dataset(str(path), target="animal"), out, compression="lz4")
    group = zarr.open_group(str(out), mode="r")
    assert [type(c).__name__ for c in group["y"].compressors] == ["ZstdCodec"]
    assert [type(c).__name__ for c in group["X"].compressors] == ["BloscCodec"]


def test_auto_compresses_the_arrays_lz4_shrinks_by_a_quarter(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    # CSR rows: random float32 values barely compress, column indices below 256 do
    monkeypatch.setattr(convert_module, "SPARSE_CHUNK_ENTRIES", 4096)
    rng = np.random.default_rng(7)
    n, d = 2000, 200
    X = sparse.random(n, d, density=0.1, format="csr", dtype=np.float32, random_state=rng,
                      data_rvs=lambda k: rng.normal(size=k))
    y = np.where(rng.random(n) < 0.5, 1, -1)
    stores = {c: tmp_path / f"{c}.zarr" for c in ("auto", "lz4")}
    reports = {c: convert(open_dataset(X, target=y), stores[c], layout="sparse", chunk_rows=500,
                          compression=c) for c in stores}  # type: ignore[arg-type]
    raw = {"indices": X.indices[:4096].astype(np.int32), "data": X.data[:4096],
           "indptr": np.asarray(X.indptr[:500], dtype=np.int64), "y": y[:500].astype(np.int64)}
    lz4_group = zarr.open_group(str(stores["lz4"]), mode="r")
    auto_group = zarr.open_group(str(stores["auto"]), mode="r")
    # an explicit "lz4" compresses every array, whatever it saves
    assert set(reports["lz4"].codecs.values()) == {"lz4"}
    for name, first in raw.items():
        assert [type(c).__name__ for c in lz4_group[name].compressors] == ["BloscCodec"]
        # the LZ4 chunk the lz4 store holds is numcodecs' encoding of the first chunk
        lz4_size = first_chunk_file(stores["lz4"], name, 1).stat().st_size
        assert lz4_size == lz4_bytes(first)
        compressed = lz4_size <= 0.75 * first.nbytes
        assert reports["auto"].codecs[name] == ("lz4" if compressed else "none")
        stored = first_chunk_file(stores["auto"], name, 1).stat().st_size
        assert stored == (lz4_size if compressed else first.nbytes)
    assert reports["auto"].codecs["data"] == "none"
    assert reports["auto"].codecs["indices"] == "lz4"
    assert auto_group["data"].compressors == ()
    got = SparseZarrSource(str(stores["auto"])).read_rows(0, n, [], None, None).X.toarray()
    np.testing.assert_array_equal(got, X.toarray())


def test_auto_compresses_image_pixels_not_noisy_features(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    pixels = np.zeros((600, 64), dtype=np.float32)
    pixels[:, 20:44] = rng.integers(0, 256, size=(600, 24))  # a dark border, bytes inside
    noisy = rng.normal(size=(600, 8)).astype(np.float32)
    for name, X in (("pixels", pixels), ("noisy", noisy)):
        out = tmp_path / f"{name}.zarr"
        report = convert(open_dataset(X), out, chunk_rows=200)
        first = X[:200]
        compressed = lz4_bytes(first) <= 0.75 * first.nbytes
        assert compressed == (name == "pixels")
        assert report.codecs == {"X": "lz4" if compressed else "none"}
        assert first_chunk_file(out, "X", 2).stat().st_size == \
            (lz4_bytes(first) if compressed else first.nbytes)
        np.testing.assert_array_equal(streamed(open_dataset(str(out)))[0], X)


def test_unreadable_chunk_of_a_dense_store_names_its_array(ref: Reference,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "o.zarr"
    convert(open_dataset(ref.X, target=ref.label), out, chunk_rows=100)
    (out / "X" / "c" / "3" / "0").write_bytes(b"not lz4")
    ds = open_dataset(str(out))
    with pytest.raises(ReadError, match=r"rows 300-400 of array 'X'"):
        streamed(ds)


def test_layout_and_chunk_rows_are_checked(ref: Reference, tmp_path: Path) -> None:
    ds = open_dataset(ref.X, target=ref.label)
    with pytest.raises(ValueError, match="layout"):
        convert(ds, tmp_path / "o.zarr", layout="csc")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compression must be one of"):
        convert(ds, tmp_path / "o.zarr", compression="gzip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="chunk_rows"):
        convert(ds, tmp_path / "o.zarr", chunk_rows=0)


def test_fsspec_url_destination(ref: Reference) -> None:
    url = f"memory://convert-{uuid.uuid4().hex}.zarr"
    report = convert(open_dataset(ref.X, target=ref.label), url, layout="sparse")
    assert report.rows == 1000
    source = SparseZarrSource(url)
    np.testing.assert_array_equal(source.read_rows(0, 1000, [], None, None).X.toarray(), ref.X)


# ------------------------------------------------------------------ the command
def test_cli_convert(labelled: pd.DataFrame, tmp_path: Path) -> None:
    data = write_parquet_file(labelled, tmp_path / "t.parquet")
    out = tmp_path / "t.zarr"
    args = ["convert", str(data), "-t", "label", "--exclude", "animal,w", "-o", str(out),
            "--chunk-rows", "300", "--quiet"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.output.count("\n") == 1
    assert "1,000 rows x 5 features + target 'label', dense layout" in result.output
    assert "rows/s" in result.output and "non-zeros" in result.output
    group = zarr.open_group(str(out), mode="r")
    for name in ("X", "y"):  # each array named after the compressor its metadata holds
        codec = "lz4" if group[name].compressors else "none"
        assert re.search(rf"[(;] ?{codec}: [^;)]*\b{name}\b", result.output), result.output
    back = open_dataset(str(out))
    assert back.feature_names == tuple(FEATURES)
    np.testing.assert_array_equal(streamed(back)[1], labelled["label"].to_numpy())

    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 1
    assert "exists" in again.output and "--overwrite" in again.output

    sparse_run = CliRunner().invoke(cli, [*args, "--overwrite", "--layout", "sparse",
                                          "--compression", "zstd"])
    assert sparse_run.exit_code == 0, sparse_run.output
    assert "sparse layout" in sparse_run.output
    assert is_sparse_zarr(str(out))
    group = zarr.open_group(str(out), mode="r")
    assert [type(c).__name__ for c in group["indices"].compressors] == ["ZstdCodec"]


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_cli_convert_onto_a_full_disk_is_one_line(ref: Reference, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   layout: str) -> None:
    writer = convert_module._DenseWriter if layout == "dense" else convert_module._SparseWriter
    write = writer.write
    calls: list[int] = []

    def filling(self, chunk) -> None:
        calls.append(chunk.n_rows)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        write(self, chunk)

    monkeypatch.setattr(writer, "write", filling)
    data = write_parquet_file(ref.frame, tmp_path / "t.parquet")
    out = tmp_path / "o" / "a.zarr"
    result = CliRunner().invoke(cli, ["convert", str(data), "-t", "label", "-o", str(out),
                                      "--layout", layout, "--chunk-rows", "300", "-q"])
    assert result.exit_code == 1
    assert result.output == (f"Error: could not write the store to {out}: "
                             "[Errno 28] No space left on device\n")
    assert calls == [300, 300]
    assert os.listdir(tmp_path / "o") == []  # the temporary store is gone


def test_cli_convert_reports_a_bad_column(tmp_path: Path, ref: Reference) -> None:
    data = write_parquet_file(ref.frame, tmp_path / "t.parquet")
    result = CliRunner().invoke(cli, ["convert", str(data), "-t", "nope", "-o",
                                      str(tmp_path / "o.zarr")])
    assert result.exit_code == 1
    assert "SchemaError" in result.output and "'nope'" in result.output
    assert not (tmp_path / "o.zarr").exists()


def test_a_lost_chunk_file_is_an_error_and_an_all_zero_chunk_is_written(tmp_path: Path) -> None:
    """convert writes every chunk, the all-zero ones too, so a missing chunk file is lost
    data: it raises a ReadError naming the file. A store written without that promise
    still reads a missing chunk as zarr does, as its fill value."""
    X = np.zeros((3000, 2), dtype=np.float32)
    X[:1000] = 1.0  # rows 1000-2999 all zero: chunks zarr would leave out
    y = np.arange(3000) % 2
    out = tmp_path / "s.zarr"
    convert(open_dataset(X, target=y, chunk_rows=1000), str(out), chunk_rows=1000)
    chunks = sorted(os.listdir(out / "X" / "c"))
    assert len(chunks) == 3
    got = open_dataset(str(out))
    np.testing.assert_array_equal(np.concatenate([c.X for c in got.chunks()]), X)
    os.remove(out / "X" / "c" / "2" / "0")
    with pytest.raises(ReadError, match=r"rows 2000-3000 .*chunk file .* is missing"):
        list(open_dataset(str(out)).chunks())
    plain = zarr.open_group(str(tmp_path / "plain.zarr"), mode="w")
    plain.create_array("X", shape=(3000, 2), chunks=(1000, 2), dtype="float32")[:] = X
    plain.create_array("y", shape=(3000,), chunks=(1000,), dtype="int64")[:] = y
    assert len(os.listdir(tmp_path / "plain.zarr" / "X" / "c")) == 1  # zeros left out
    read = open_dataset(str(tmp_path / "plain.zarr"), target="y")
    np.testing.assert_array_equal(np.concatenate([c.X for c in read.chunks()]), X)
