"""Streaming sparse sources through ``open_dataset`` / ``Dataset``: rows, labels, weights,
chunk boundaries across pieces, shuffling, NaN policies, validation errors."""

from __future__ import annotations

import itertools
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from streamlearn import open_dataset
from streamlearn.data.chunk import Chunk
from streamlearn.data.convert import convert
from streamlearn.data.dataset import Dataset
from streamlearn.data.row_mixing import group_sizes, mix_group_size
from streamlearn.data.sources import in_memory
from streamlearn.data.sources.base import Block, ColumnKind, NumberedNames, Piece
from streamlearn.data.sources.in_memory import ScipySparseSource
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.errors import DataError, SchemaError

N_ROWS, N_COLS = 37, 11
CLASSES = [3, 5, 7]


def make_matrix(seed: int = 0) -> np.ndarray:
    """Dense reference: float32-exact values, about 30% non-zero, rows 0, 9 and 30 empty."""
    rng = np.random.default_rng(seed)
    shape = (N_ROWS, N_COLS)
    values = rng.integers(1, 64, size=shape) / 8.0 * rng.choice([-1, 1], shape)
    dense = np.where(rng.random((N_ROWS, N_COLS)) < 0.3, values, 0.0)
    dense[[0, 9, 30]] = 0.0
    dense[[3, 13, 20], 1] = 2.5  # rows the NaN tests spoil have an entry
    return dense


@pytest.fixture(scope="module")
def dense() -> np.ndarray:
    return make_matrix()


@pytest.fixture(scope="module")
def labels() -> np.ndarray:
    return np.random.default_rng(1).choice(CLASSES, size=N_ROWS)


@pytest.fixture(scope="module")
def weights() -> np.ndarray:
    return np.random.default_rng(2).uniform(0.5, 2.0, N_ROWS).astype(np.float32)


FORMATS = {
    "csr_matrix": sp.csr_matrix,
    "csr_array": sp.csr_array,
    "csc_matrix": sp.csc_matrix,
    "csc_array": sp.csc_array,
    "coo_matrix": sp.coo_matrix,
    "coo_array": sp.coo_array,
}


def streamed(ds: Dataset, **options: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                                    list[Chunk]]:
    """Dense rows, labels (class values), weights in global row order, and the chunks."""
    chunks = list(ds.chunks(**options))
    rows = np.concatenate([c.rows for c in chunks])
    order = np.argsort(rows, kind="stable")
    for c in chunks:
        assert c.is_sparse and isinstance(c.X, SparseRows)
        assert c.X.n_cols == ds.n_features and c.X.n_rows == c.n_rows == len(c.rows)
        assert c.X.indptr.dtype == np.int64 and c.X.indices.dtype == np.int32
        assert c.X.values.dtype == np.float32
    X = SparseRows.concatenate([c.X for c in chunks]).toarray()[order]
    y = np.concatenate([c.y for c in chunks])[order] if chunks[0].y is not None else None
    if y is not None and ds.classes is not None:
        y = ds.classes[y]
    w = np.concatenate([c.weight for c in chunks])[order] if chunks[0].weight is not None \
        else None
    return X, y, w, chunks


# ------------------------------------------------------------------ scipy sources
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_scipy_formats_stream_back_exactly(fmt: str, dense: np.ndarray,
                                           labels: np.ndarray) -> None:
    matrix = FORMATS[fmt](dense)
    ds = open_dataset(matrix, target=labels, chunk_rows=5)
    assert isinstance(ds.source, ScipySparseSource)
    assert ds.is_sparse and ds.n_rows == N_ROWS and ds.n_features == N_COLS
    assert ds.feature_names == NumberedNames(N_COLS)
    assert ds.schema.n_features == N_COLS and ds.schema.feature_names == [
        f"x{j}" for j in range(N_COLS)]
    assert ds.task == "classification" and ds.classes.tolist() == CLASSES
    assert ds.n_chunks == 8
    X, y, w, chunks = streamed(ds)
    np.testing.assert_array_equal(X, dense.astype(np.float32))
    np.testing.assert_array_equal(y, labels)
    assert w is None
    assert [c.start for c in chunks] == list(range(0, N_ROWS, 5))
    assert all(c.index is None for c in chunks)


def test_shuffled_chunks_hold_the_same_rows(dense: np.ndarray, labels: np.ndarray,
                                            weights: np.ndarray) -> None:
    ds = open_dataset(sp.csr_array(dense), target=labels, weight=weights, chunk_rows=6)
    X, y, w, chunks = streamed(ds, shuffle=True, seed=4)
    np.testing.assert_array_equal(X, dense.astype(np.float32))
    np.testing.assert_array_equal(y, labels)
    np.testing.assert_array_equal(w, weights)
    rows = np.concatenate([c.rows for c in chunks])
    assert not (np.diff(rows) > 0).all()  # visited out of order
    sizes = group_sizes(len(chunks), mix_group_size(6, ds.n_features, sparse=True))
    bounds = np.cumsum([0, *sizes])
    for g, h in itertools.pairwise(bounds):  # each group of chunks holds its blocks' rows
        part = chunks[g:h]
        assert sorted(np.concatenate([c.rows for c in part]).tolist()) == sorted(
            r for c in part for r in range(c.start, min(c.start + 6, N_ROWS)))
    for c in chunks:
        np.testing.assert_array_equal(c.X.toarray(), dense[c.rows].astype(np.float32))
        np.testing.assert_array_equal(ds.classes[c.y], labels[c.rows])
    # reproducible from the seed, different for another epoch
    again = np.concatenate([c.rows for c in ds.chunks(shuffle=True, seed=4)])
    np.testing.assert_array_equal(again, rows)
    other = np.concatenate([c.rows for c in ds.chunks(shuffle=True, seed=4, epoch=1)])
    assert not np.array_equal(other, rows)


def test_weights_and_regression_target(dense: np.ndarray, weights: np.ndarray) -> None:
    target = np.linspace(-1, 1, N_ROWS)
    ds = open_dataset(sp.csr_matrix(dense), target=target, weight=weights, chunk_rows=8)
    assert ds.task == "regression" and ds.classes is None and ds.weight == "weight"
    X, y, w, _ = streamed(ds)
    np.testing.assert_array_equal(X, dense.astype(np.float32))
    np.testing.assert_array_equal(y, target.astype(np.float32))
    np.testing.assert_array_equal(w, weights)


def test_negative_weight_is_refused(dense: np.ndarray, labels: np.ndarray,
                                    weights: np.ndarray) -> None:
    bad = weights.copy()
    bad[17] = -1.0
    ds = open_dataset(sp.csr_array(dense), target=labels, weight=bad, chunk_rows=8)
    with pytest.raises(DataError, match="weight"):
        list(ds.chunks())


def test_string_labels(dense: np.ndarray, labels: np.ndarray) -> None:
    names = np.array(["cat", "dog", "emu"])[np.searchsorted(CLASSES, labels)]
    ds = open_dataset(sp.csr_array(dense), target=names, chunk_rows=10)
    assert ds.classes.tolist() == ["cat", "dog", "emu"]
    _, y, _, _ = streamed(ds)
    np.testing.assert_array_equal(y, names)


@pytest.mark.parametrize("chunk_rows", [1, 3, 5, 8, 37, 100])
def test_chunks_across_several_pieces(monkeypatch: pytest.MonkeyPatch, dense: np.ndarray,
                                      labels: np.ndarray, weights: np.ndarray,
                                      chunk_rows: int) -> None:
    monkeypatch.setattr(in_memory, "PIECE_ROWS", 8)
    ds = open_dataset(sp.csr_array(dense), target=labels, weight=weights,
                      chunk_rows=chunk_rows)
    assert [p.n_rows for p in ds.source.pieces] == [8, 8, 8, 8, 5]
    assert ds.classes.tolist() == CLASSES  # known from the array
    for shuffle in (False, True):
        X, y, w, chunks = streamed(ds, shuffle=shuffle, seed=1)
        np.testing.assert_array_equal(X, dense.astype(np.float32))
        np.testing.assert_array_equal(y, labels)
        np.testing.assert_array_equal(w, weights)
        assert sorted(c.start for c in chunks) == list(range(0, N_ROWS, chunk_rows))


class PieceOnlySparse:
    """A sparse source read only piece by piece (no ``read_rows``), whose pieces are given
    as SparseRows: chunks are cut out of pieces and joined (``slice``/``concatenate``)."""

    sparse = True

    def __init__(self, blocks: list[SparseRows], y: np.ndarray | None = None,
                 n_features: int | None = None) -> None:
        self.blocks = blocks
        self.n_features = int(n_features if n_features is not None else blocks[0].n_cols)
        self.nnz = sum(b.nnz for b in blocks)
        self.description = "hand-made sparse source"
        self.y = y
        self.columns = [] if y is None else ["y"]
        self.kinds = {} if y is None else {"y": ColumnKind.INTEGER}
        # each piece is a "file" of its own: its rows count from 0 in messages
        self.pieces = [Piece(b.n_rows, f"piece {i}", 0) for i, b in enumerate(blocks)]
        self._starts = np.cumsum([0] + [b.n_rows for b in blocks])

    def _y(self, i: int) -> np.ndarray:
        assert self.y is not None
        return self.y[self._starts[i] : self._starts[i + 1]]

    def read_piece(self, i: int, features: Any, target: str | None,
                   weight: str | None) -> Block:
        return Block(X=self.blocks[i], y=self._y(i) if target else None, weight=None)

    def read_target(self, i: int, target: str) -> np.ndarray:
        return self._y(i)

    def known_classes(self, target: str) -> np.ndarray | None:
        return None


def cut(matrix: sp.csr_array, sizes: list[int]) -> list[SparseRows]:
    whole = SparseRows.from_scipy(matrix)
    bounds = np.cumsum([0, *sizes])
    return [whole.slice(int(a), int(b)) for a, b in pairwise(bounds)]


@pytest.mark.parametrize("chunk_rows", [2, 4, 7, 11, 37])
def test_piece_reader_joins_sparse_pieces(dense: np.ndarray, labels: np.ndarray,
                                          chunk_rows: int) -> None:
    sizes = [5, 0, 3, 12, 1, 16]  # uneven pieces, one empty
    source = PieceOnlySparse(cut(sp.csr_array(dense), sizes), labels)
    ds = Dataset(source, target="y", chunk_rows=chunk_rows, prefetch=0)
    assert ds.is_sparse and ds.n_features == N_COLS and ds.n_rows == N_ROWS
    assert ds.classes.tolist() == CLASSES  # found by a scan of the pieces
    for shuffle in (False, True):
        X, y, _, _ = streamed(ds, shuffle=shuffle, seed=2)
        np.testing.assert_array_equal(X, dense.astype(np.float32))
        np.testing.assert_array_equal(y, labels)


# ------------------------------------------------------------------ NaN policies
def spoiled(dense: np.ndarray) -> sp.csr_array:
    """The matrix with its stored value at (3, 1) NaN, (13, 1) NaN and (20, 1) +inf."""
    matrix = sp.csr_array(dense)
    for r, v in ((3, np.nan), (13, np.nan), (20, np.inf)):
        cols = matrix.indices[matrix.indptr[r]:matrix.indptr[r + 1]]
        matrix.data[matrix.indptr[r] + int(np.flatnonzero(cols == 1)[0])] = v
    return matrix


def test_nan_raises_by_default_naming_the_row(monkeypatch: pytest.MonkeyPatch,
                                              dense: np.ndarray, labels: np.ndarray) -> None:
    ds = open_dataset(spoiled(dense), target=labels, chunk_rows=5)
    with pytest.raises(DataError, match=r"nan in column x1 at row 3 of .* \(dataset row 3\)"):
        list(ds.chunks())
    with pytest.raises(DataError, match=r"nan in column x1 at row 13 of .* \(dataset row 13\)"):
        list(ds.chunks(rows=(5, N_ROWS)))
    with pytest.raises(DataError, match=r"inf in column x1 .* \(dataset row 20\)"):
        list(ds.chunks(rows=(15, N_ROWS)))
    # the message names the piece
    monkeypatch.setattr(in_memory, "PIECE_ROWS", 8)
    ds = open_dataset(spoiled(dense), target=labels, chunk_rows=5, nan_policy="raise")
    with pytest.raises(DataError, match=r"row 13 of .*rows 8-16 \(dataset row 13\)"):
        list(ds.chunks(rows=(10, N_ROWS)))


@pytest.mark.parametrize("shuffle", [False, True])
def test_nan_drop_drops_exactly_those_rows(dense: np.ndarray, labels: np.ndarray,
                                           weights: np.ndarray, shuffle: bool) -> None:
    ds = open_dataset(spoiled(dense), target=labels, weight=weights, chunk_rows=5,
                      nan_policy="drop")
    X, y, w, chunks = streamed(ds, shuffle=shuffle, seed=3)
    kept = np.setdiff1d(np.arange(N_ROWS), [3, 13, 20])
    rows = np.sort(np.concatenate([c.rows for c in chunks]))
    np.testing.assert_array_equal(rows, kept)
    np.testing.assert_array_equal(X, dense[kept].astype(np.float32))
    np.testing.assert_array_equal(y, labels[kept])
    np.testing.assert_array_equal(w, weights[kept])
    for c in chunks:
        np.testing.assert_array_equal(c.X.toarray(), dense[c.rows].astype(np.float32))


def test_nan_drop_also_drops_missing_regression_targets(dense: np.ndarray) -> None:
    target = np.linspace(0, 1, N_ROWS)
    target[[6, 25]] = np.nan  # chunks of 4: alone in their chunks
    ds = open_dataset(spoiled(dense), target=target, chunk_rows=4, nan_policy="drop")
    X, y, _, _ = streamed(ds)
    kept = np.setdiff1d(np.arange(N_ROWS), [3, 6, 13, 20, 25])
    np.testing.assert_array_equal(X, dense[kept].astype(np.float32))
    np.testing.assert_array_equal(y, target[kept].astype(np.float32))


def test_nan_drop_of_features_and_targets_in_one_chunk(dense: np.ndarray) -> None:
    target = np.linspace(0, 1, N_ROWS)
    target[15] = np.nan  # in the chunk 12-15 with the NaN feature of row 13
    ds = open_dataset(spoiled(dense), target=target, chunk_rows=4, nan_policy="drop")
    X, _, _, chunks = streamed(ds)
    rows = np.sort(np.concatenate([c.rows for c in chunks]))
    kept = np.setdiff1d(np.arange(N_ROWS), [3, 13, 15, 20])
    np.testing.assert_array_equal(rows, kept)
    np.testing.assert_array_equal(X, dense[kept].astype(np.float32))


def test_nan_fill(dense: np.ndarray, labels: np.ndarray) -> None:
    matrix = spoiled(dense)
    ds = open_dataset(matrix, target=labels, chunk_rows=5, nan_policy=0.5)
    X, y, _, chunks = streamed(ds)
    expected = dense.astype(np.float32)
    expected[[3, 13, 20], 1] = 0.5
    np.testing.assert_array_equal(X, expected)
    np.testing.assert_array_equal(y, labels)
    assert sum(c.n_rows for c in chunks) == N_ROWS
    assert np.isnan(matrix.data).sum() == 2  # the source's values are left alone


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(("indices", "words"), [
    ([0, 3, 11], "column index 11 at row 1 of piece 1 .*dataset row 4.* outside the columns"),
    ([0, 3, -2], "column index -2 .*outside the columns"),
    ([0, 3, 3], "column index 3 at row 1 of piece 1 .*stored twice in its row"),
])
def test_bad_column_index_raises(indices: list[int], words: str) -> None:
    good = SparseRows(np.array([0, 1, 2, 3], np.int64), np.array([0, 5, 2], np.int32),
                      np.ones(3, np.float32), N_COLS)
    # piece 1, row 1 holds two entries, the second one spoiled
    bad = SparseRows(np.array([0, 1, 3], np.int64), np.array(indices, np.int32),
                     np.ones(3, np.float32), N_COLS)
    source = PieceOnlySparse([good, bad, good])
    ds = Dataset(source, chunk_rows=4, prefetch=0)
    assert ds.n_features == N_COLS and ds.target is None
    with pytest.raises(DataError, match=words):
        list(ds.chunks())


def test_features_or_exclude_on_a_sparse_source_raise(dense: np.ndarray,
                                                      labels: np.ndarray) -> None:
    matrix = sp.csr_array(dense)
    for options in ({"features": ["x0", "x1"]}, {"features": ["x1", "x0", *[
            f"x{j}" for j in range(2, N_COLS)]]}, {"exclude": ["x3"]}):
        with pytest.raises(SchemaError, match="sparse rows of 11 numbered columns"):
            open_dataset(matrix, target=labels, **options)
    # naming every column, in order, is allowed
    ds = open_dataset(matrix, target=labels, features=[f"x{j}" for j in range(N_COLS)])
    assert ds.n_features == N_COLS


def test_chunk_select_on_a_sparse_chunk(dense: np.ndarray, labels: np.ndarray,
                                        weights: np.ndarray) -> None:
    ds = open_dataset(sp.csr_array(dense), target=labels, weight=weights, chunk_rows=12)
    chunk = list(ds.chunks(shuffle=True, seed=5))[1]
    keep = np.zeros(chunk.n_rows, dtype=bool)
    keep[[0, 3, 4, chunk.n_rows - 1]] = True  # a mixed chunk: about the mean size
    part = chunk.select(keep)
    assert part.is_sparse and part.n_rows == 4 and part.start == chunk.start
    np.testing.assert_array_equal(part.rows, chunk.rows[keep])
    np.testing.assert_array_equal(part.X.toarray(), dense[chunk.rows[keep]].astype(np.float32))
    np.testing.assert_array_equal(part.y, chunk.y[keep])
    np.testing.assert_array_equal(part.weight, weights[chunk.rows[keep]])
    none = chunk.select(np.zeros(chunk.n_rows, dtype=bool))
    assert none.n_rows == 0 and none.X.nnz == 0 and none.X.n_cols == N_COLS
    assert chunk.nbytes >= chunk.X.nbytes + chunk.y.nbytes


# ------------------------------------------------------------------ files
@pytest.fixture(scope="module")
def svm_file(tmp_path_factory: pytest.TempPathFactory, dense: np.ndarray,
             labels: np.ndarray) -> Path:
    path = tmp_path_factory.mktemp("svm") / "data.svm"
    dump_svmlight_file(sp.csr_matrix(dense), labels, str(path), zero_based=True)
    return path


def assert_rows_of_svm_file(ds: Dataset, path: Path) -> None:
    X_ref, y_ref = load_svmlight_file(str(path), zero_based=True, n_features=N_COLS)
    assert ds.is_sparse and ds.n_rows == X_ref.shape[0] and ds.n_features == X_ref.shape[1]
    assert ds.target == "y" and ds.classes.tolist() == CLASSES
    for shuffle in (False, True):
        X, y, _, _ = streamed(ds, shuffle=shuffle, seed=6)
        np.testing.assert_array_equal(X, X_ref.toarray().astype(np.float32))
        np.testing.assert_array_equal(y, y_ref)


def test_svmlight_file_through_open_dataset(svm_file: Path) -> None:
    ds = open_dataset(str(svm_file), chunk_rows=6)
    assert type(ds.source).__name__ == "SvmlightSource"
    assert_rows_of_svm_file(ds, svm_file)


def test_sparse_zarr_through_open_dataset(svm_file: Path, tmp_path: Path) -> None:
    report = convert(open_dataset(str(svm_file)), tmp_path / "s.zarr", layout="sparse",
                     chunk_rows=8)
    assert report.layout == "sparse"
    ds = open_dataset(str(tmp_path / "s.zarr"), chunk_rows=6)
    assert type(ds.source).__name__ == "SparseZarrSource"
    assert_rows_of_svm_file(ds, svm_file)


def test_svmlight_labels_stay_classes_through_zarr(svm_file: Path, tmp_path: Path) -> None:
    convert(open_dataset(str(svm_file)), tmp_path / "s.zarr", layout="sparse")
    ds = open_dataset(str(tmp_path / "s.zarr"))
    assert ds.task == "classification" and ds.classes.tolist() == CLASSES


def test_compressed_text_is_shuffled_within_chunks_only(svm_file: Path,
                                                        tmp_path: Path) -> None:
    import gzip

    packed = tmp_path / "train.svm.gz"
    packed.write_bytes(gzip.compress(svm_file.read_bytes()))
    ds = open_dataset(str(packed), chunk_rows=5)
    assert ds.source.reads_in_order
    chunks = list(ds.chunks(shuffle=True, seed=3))
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)
    assert any((c.rows != np.arange(c.start, c.start + c.n_rows)).any() for c in chunks)
    assert not open_dataset(str(svm_file)).source.reads_in_order
