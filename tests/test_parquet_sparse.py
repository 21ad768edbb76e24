"""Parquet sparse rows: list columns and hashed columns against references, errors."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from streamlearn.data.dataset import Dataset
from streamlearn.data.sources.parquet_sparse import ParquetSparseSource
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.errors import DataError, SchemaError, SourceError
from tests.c_heap import files_in_memory, heap_while_opening
from tests.test_hashing import hashed

FEATURES = ["num", "count", "flag", "cat", "city", "tags", "kw"]


def make_table(n: int = 23, seed: int = 0) -> pa.Table:
    """Rows with list columns (``idx``, ``val``) and columns of every hashed kind."""
    rng = np.random.default_rng(seed)
    idx = [rng.choice(30, size=rng.integers(0, 6), replace=False).tolist() for _ in range(n)]
    val = [rng.normal(size=len(i)).astype(np.float32).tolist() for i in idx]
    idx[0] = [29, 0]  # the largest index, unsorted
    val[0] = [1.5, -2.0]
    words = ["red", "green", "blue", "naïve", ""]
    num = [None if r % 7 == 3 else 0.0 if r % 5 == 0 else float(rng.normal()) for r in range(n)]
    cat = [None if r % 6 == 2 else words[r % 4] for r in range(n)]
    city = [None if r % 4 == 1 else words[(r * 3) % 5] for r in range(n)]
    tags = [
        None
        if r % 8 == 5
        else []
        if r % 8 == 6
        else [words[int(k)] if k < 5 else None for k in rng.integers(0, 6, rng.integers(1, 5))]
        for r in range(n)
    ]
    return pa.table(
        {
            "y": pa.array([["a", "b", "c"][r % 3] for r in range(n)]),
            "w": pa.array(rng.uniform(0.5, 2, n), type=pa.float32()),
            "idx": pa.array(idx, type=pa.list_(pa.int64())),
            "val": pa.array(val, type=pa.list_(pa.float32())),
            "num": pa.array(num, type=pa.float64()),
            "count": pa.array(rng.integers(-2, 3, n), type=pa.int32()),
            "flag": pa.array(rng.random(n) < 0.5),
            "cat": pa.array(cat).dictionary_encode(),
            "city": pa.array(city, type=pa.string()),
            "tags": pa.array(tags, type=pa.list_(pa.string())),
            "kw": pa.array(tags[::-1], type=pa.large_list(pa.string())).cast(
                pa.large_list(pa.dictionary(pa.int32(), pa.large_string()))
            ),
        }
    )


def list_reference(table: pa.Table, values: bool, n_features: int) -> sp.csr_matrix:
    idx = table.column("idx").to_pylist()
    val = table.column("val").to_pylist() if values else [[1.0] * len(i) for i in idx]
    indptr = np.cumsum([0] + [len(i) for i in idx])
    return sp.csr_matrix(
        (
            np.array([v for row in val for v in row], dtype=np.float32),
            [j for row in idx for j in row],
            indptr,
        ),
        shape=(table.num_rows, n_features),
    )


def hashed_reference(table: pa.Table, features: list[str], n: int) -> sp.csr_matrix:
    """Every entry hashed in Python, summed in column order, explicit zeros kept."""
    columns = {c: table.column(c).to_pylist() for c in features}
    rows = []
    for r in range(table.num_rows):
        row: dict[int, float] = {}

        def add(name: str, value: float, row: dict[int, float] = row) -> None:
            column, sign = hashed(name, n)
            row[column] = row.get(column, 0.0) + sign * value

        for c in features:
            v = columns[c][r]
            if v is None:
                continue
            if isinstance(v, list):
                for token in v:
                    if token is not None:
                        add(f"{c}={token}", 1.0)
            elif isinstance(v, str):
                add(f"{c}={v}", 1.0)
            elif float(v) != 0:
                add(c, float(v))
        rows.append(row)
    indptr = np.cumsum([0] + [len(row) for row in rows])
    indices = [c for row in rows for c in sorted(row)]
    data = np.array([row[c] for row in rows for c in sorted(row)], dtype=np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(len(rows), n))


def read_all(src: ParquetSparseSource) -> sp.csr_matrix:
    blocks = [src.read_piece(i, [], "y", None) for i in range(len(src.pieces))]
    for block, piece in zip(blocks, src.pieces, strict=True):
        assert isinstance(block.X, SparseRows) and block.X.n_rows == piece.n_rows
        assert block.X.n_cols == src.n_features and block.X.indptr[0] == 0
        assert block.X.indices.dtype == np.int32 and block.X.values.dtype == np.float32
    return sp.csr_matrix(SparseRows.concatenate([b.X for b in blocks]).to_scipy())


def assert_same(X: sp.csr_matrix, X_ref: sp.csr_matrix) -> None:
    X, X_ref = X.copy(), X_ref.copy()
    X.sort_indices()
    X_ref.sort_indices()
    assert X.shape == X_ref.shape
    np.testing.assert_array_equal(X.indptr, X_ref.indptr)
    np.testing.assert_array_equal(X.indices, X_ref.indices)
    np.testing.assert_array_equal(X.data, X_ref.data)


def streamed(src: ParquetSparseSource, chunk_rows: int) -> tuple[sp.csr_matrix, np.ndarray]:
    ds = Dataset(src, target="y", chunk_rows=chunk_rows)
    chunks = list(ds.chunks())
    assert all(c.X.n_rows <= chunk_rows for c in chunks)
    X = sp.vstack([c.X.to_scipy() for c in chunks]).tocsr()
    return X, np.asarray(ds.classes)[np.concatenate([c.y for c in chunks])]


@pytest.mark.parametrize(
    ("values", "statistics", "n_features"),
    [(True, True, None), (False, False, None), (True, False, 40)],
)
def test_list_layout(
    tmp_path: Path, values: bool, statistics: bool, n_features: int | None
) -> None:
    table = make_table()
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path, row_group_size=7, write_statistics=statistics)
    src = ParquetSparseSource(
        str(path),
        target="y",
        weight="w",
        indices="idx",
        values="val" if values else None,
        n_features=n_features,
    )
    assert src.sparse and src.columns == ["y", "w"] and set(src.kinds) == {"y", "w"}
    assert src.n_features == (n_features or 30)
    assert [p.n_rows for p in src.pieces] == [7, 7, 7, 2]
    assert src.pieces[2].label == f"{path} (row group 2)" and src.pieces[2].file_row == 14
    X_ref = list_reference(table, values, src.n_features)
    assert src.nnz >= X_ref.nnz
    assert_same(read_all(src), X_ref)
    block = src.read_piece(1, [], "y", "w")
    np.testing.assert_array_equal(block.weight, table.column("w").to_numpy()[7:14])
    np.testing.assert_array_equal(src.read_target(3, "y"), ["a", "b"])  # rows 21, 22
    X, y = streamed(src, chunk_rows=5)
    assert_same(X, X_ref)
    np.testing.assert_array_equal(y, table.column("y").to_pylist())


@pytest.mark.parametrize("n", [8, 2**20])
def test_hashed_layout(tmp_path: Path, n: int) -> None:
    table = make_table(seed=1)
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path, row_group_size=6)
    src = ParquetSparseSource(
        str(path), target="y", weight="w", hash_features=n, exclude=["idx", "val"]
    )
    assert src.n_features == n and src.columns == ["y", "w"]
    X_ref = hashed_reference(table, FEATURES, n)
    assert src.nnz >= X_ref.nnz
    assert_same(read_all(src), X_ref)
    X, y = streamed(src, chunk_rows=10)
    assert_same(X, X_ref)
    np.testing.assert_array_equal(y, table.column("y").to_pylist())
    if n == 8:  # a tiny table: collisions were summed
        assert X_ref.nnz < hashed_reference(table, FEATURES, 2**20).nnz


def test_directory_of_two_files(tmp_path: Path) -> None:
    tables = [make_table(n=11, seed=2), make_table(n=9, seed=3)]
    folder = tmp_path / "rows"
    folder.mkdir()
    for k, table in enumerate(tables):
        pq.write_table(table, folder / f"part-{k}.parquet", row_group_size=4)
    whole = pa.concat_tables(tables)
    labels = [p.label for p in ParquetSparseSource(str(folder), target="y", indices="idx").pieces]
    assert labels == [f"{folder / 'part-0.parquet'} (row group {g})" for g in range(3)] + [
        f"{folder / 'part-1.parquet'} (row group {g})" for g in range(3)
    ]

    src = ParquetSparseSource(str(folder), target="y", indices="idx", values="val")
    assert src.n_features == 30
    X_ref = list_reference(whole, True, 30)
    X, y = streamed(pickle.loads(pickle.dumps(src)), chunk_rows=6)
    assert_same(X, X_ref)
    np.testing.assert_array_equal(y, whole.column("y").to_pylist())

    src = ParquetSparseSource(
        str(folder), target="y", hash_features=64, exclude=["idx", "val", "w"]
    )
    X, y = streamed(src, chunk_rows=6)
    assert_same(X, hashed_reference(whole, FEATURES, 64))
    np.testing.assert_array_equal(y, whole.column("y").to_pylist())


def test_opening_many_files_holds_one_footer_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # every footer read (~15 KB each for these three columns) stayed in memory as long as
    # the source, for the statistics and value counts read after the files were listed:
    # 200 files held ~3 MB here, 10,000 files hundreds of MB. The C heap is sampled as each
    # file is opened: it must not grow by the footers read before.
    rng = np.random.default_rng(5)
    tables = []
    for _ in range(200):
        # no empty row: parquet stores an empty list as one (null) value
        idx = [rng.choice(50, size=rng.integers(1, 4), replace=False).tolist() for _ in range(2)]
        tables.append(
            pa.table(
                {
                    "y": rng.integers(0, 2, size=2),
                    "idx": pa.array(idx, type=pa.list_(pa.int64())),
                    "val": pa.array(
                        [rng.normal(size=len(i)).tolist() for i in idx], type=pa.list_(pa.float32())
                    ),
                }
            )
        )
    with files_in_memory(tables, "streamlearn-sparse-many") as url:
        src, in_use = heap_while_opening(
            monkeypatch,
            lambda: ParquetSparseSource(url, target="y", indices="idx", values="val"),
        )
        assert len(in_use) >= 200
        assert max(in_use) - in_use[0] < 1_000_000, (
            f"the C heap grew by {(max(in_use) - in_use[0]) / 1e6:.1f} MB over 200 footers"
        )
        # the numbers kept from the footers: the largest index (statistics), values stored
        whole = pa.concat_tables(tables)
        flat = np.concatenate(
            [np.asarray(row, dtype=np.int64) for row in whole.column("idx").to_pylist()]
        )
        assert src.n_features == flat.max() + 1
        assert src.nnz == flat.size
        assert_same(read_all(src), list_reference(whole, True, src.n_features))


@pytest.mark.parametrize("first_has_statistics", [True, False])
def test_largest_index_from_statistics_and_from_reading(
    tmp_path: Path, first_has_statistics: bool
) -> None:
    # one file's footer gives its largest index, the other's column is read for it
    for k, top in enumerate((7, 12)):
        table = pa.table({"y": [0, 1], "idx": pa.array([[top, 1], [2]], type=pa.list_(pa.int64()))})
        pq.write_table(
            table, tmp_path / f"part-{k}.parquet", write_statistics=(k == 0) == first_has_statistics
        )
    src = ParquetSparseSource(str(tmp_path), target="y", indices="idx")
    assert src.n_features == 13 and src.nnz == 6


def test_hive_partition_key_is_a_feature(tmp_path: Path) -> None:
    table = pa.table({"y": [1, 0, 1], "word": ["a", "b", None]})
    for part in ("east", "west"):
        (tmp_path / f"region={part}").mkdir()
        pq.write_table(table, tmp_path / f"region={part}" / "f.parquet")
    src = ParquetSparseSource(str(tmp_path), target="y", hash_features=2**16)
    whole = pa.table(
        {"y": [1, 0, 1] * 2, "word": ["a", "b", None] * 2, "region": ["east"] * 3 + ["west"] * 3}
    )
    assert_same(read_all(src), hashed_reference(whole, ["word", "region"], 2**16))


def test_hive_key_held_by_the_files_with_another_type_is_a_schema_error(tmp_path: Path) -> None:
    for year in (2023, 2024):
        (tmp_path / f"year={year}").mkdir()
        pq.write_table(
            pa.table({"y": [1, 0], "word": ["a", "b"], "year": [year, year]}),
            tmp_path / f"year={year}" / "f.parquet",
        )
    with pytest.raises(SchemaError, match=rf"{tmp_path}.* partition key .*Field year"):
        ParquetSparseSource(str(tmp_path), target="y", hash_features=64)


def write_groups(path: Path, groups: list[dict[str, list]]) -> None:
    """One row group per dict of columns (y, idx, val)."""
    schema = pa.schema(
        [("y", pa.int64()), ("idx", pa.list_(pa.int32())), ("val", pa.list_(pa.float64()))]
    )
    with pq.ParquetWriter(path, schema) as writer:
        for group in groups:
            writer.write_table(pa.table(group, schema=schema))


GOOD = {
    "y": [0, 1, 0, 1],
    "idx": [[0, 1], [2], [], [3, 0]],
    "val": [[1.0, 2.0], [3.0], [], [4.0, 5.0]],
}


@pytest.mark.parametrize(
    ("bad_idx", "bad_val", "message"),
    [
        (
            [[1], [0], None],
            [[1.0], [1.0], [1.0]],
            "row 2 (row 6 of the file): the 'idx' list is null",
        ),
        ([[1], [0, -1], [2]], [[1.0], [1.0, 1.0], [1.0]], "row 1 (row 5 of the file): index -1"),
        (
            [[1], [0, 9], [2]],
            [[1.0], [1.0, 1.0], [1.0]],
            "row 1 (row 5 of the file): index 9 in 'idx' is outside the columns 0..7",
        ),
        (
            [[1], [0, 2, 3, 2], [2]],
            [[1.0], [1.0] * 4, [1.0]],
            "row 1 (row 5 of the file): index 2 appears twice",
        ),
        (
            [[1], [0, None], [2]],
            [[1.0], [1.0, 1.0], [1.0]],
            "row 1 (row 5 of the file): the 'idx' list holds a null index",
        ),
        (
            [[1], [0, 1], [2]],
            [[1.0], [1.0], [1.0]],
            "row 1 (row 5 of the file): 'idx' holds 2 indices but 'val' 1 values",
        ),
        (
            [[1], [0, 1], [2]],
            [[1.0], None, [1.0]],
            "row 1 (row 5 of the file): the 'val' list is null",
        ),
        (
            [[1], [0, 1], [2]],
            [[1.0], [1.0, None], [1.0]],
            "row 1 (row 5 of the file): the 'val' list holds a null value",
        ),
    ],
)
def test_list_layout_errors(tmp_path: Path, bad_idx: list, bad_val: list, message: str) -> None:
    path = tmp_path / "bad.parquet"
    write_groups(path, [GOOD, {"y": [0, 1, 0], "idx": bad_idx, "val": bad_val}])
    src = ParquetSparseSource(str(path), target="y", indices="idx", values="val", n_features=8)
    src.read_piece(0, [], "y", None)
    with pytest.raises(DataError) as info:
        src.read_piece(1, [], "y", None)
    assert f"{path} (row group 1), {message}" in str(info.value)
    with pytest.raises(DataError, match="row group 1"):
        list(Dataset(src, target="y").chunks())


def test_opening_errors(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(make_table(n=5), path)
    url = str(path)
    with pytest.raises(ValueError, match="either indices= .* or hash_features="):
        ParquetSparseSource(url, target="y")
    with pytest.raises(ValueError, match="not both"):
        ParquetSparseSource(url, target="y", indices="idx", hash_features=8)
    with pytest.raises(ValueError, match="hash_features must be a power of two"):
        ParquetSparseSource(url, target="y", hash_features=12)
    with pytest.raises(ValueError, match="values= belongs to the list layout"):
        ParquetSparseSource(url, target="y", hash_features=8, values="val")
    with pytest.raises(ValueError, match="n_features must be"):
        ParquetSparseSource(url, target="y", indices="idx", n_features=0)
    with pytest.raises(SchemaError, match="indices column 'nope' not found"):
        ParquetSparseSource(url, target="y", indices="nope")
    with pytest.raises(SchemaError, match="target column 'label' not found"):
        ParquetSparseSource(url, target="label", indices="idx")
    with pytest.raises(
        SchemaError,
        match="column 'tags' .* is list<element: string>; it must be a list<int> column",
    ):
        ParquetSparseSource(url, target="y", indices="tags")
    with pytest.raises(SchemaError, match="column 'val' .* list of numbers is ambiguous"):
        ParquetSparseSource(url, target="y", hash_features=8, exclude=["idx"])
    with pytest.raises(SchemaError, match="exclude names column"):
        ParquetSparseSource(url, target="y", hash_features=8, exclude=["idx", "val", "zz"])
    with pytest.raises(SourceError, match="no parquet"):
        ParquetSparseSource(str(tmp_path / "missing"), target="y", indices="idx")

    stamps = tmp_path / "stamps.parquet"
    pq.write_table(pa.table({"y": [1, 0], "t": pa.array([1, 2], type=pa.timestamp("s"))}), stamps)
    with pytest.raises(SchemaError, match="column 't' .* is timestamp"):
        ParquetSparseSource(str(stamps), target="y", hash_features=8)

    folder = tmp_path / "two"
    folder.mkdir()
    pq.write_table(pa.table({"y": [1, 0], "a": [1.0, 2.0]}), folder / "a.parquet")
    pq.write_table(pa.table({"y": [1, 0], "b": [1.0, 2.0]}), folder / "b.parquet")
    with pytest.raises(SchemaError, match="all files must share their columns"):
        ParquetSparseSource(str(folder), target="y", hash_features=8)

    src = ParquetSparseSource(url, target="y", indices="idx")
    with pytest.raises(SchemaError, match="target column 'w' was not named"):
        src.read_piece(0, [], "w", None)


def test_open_dataset_chooses_the_sparse_parquet_layouts(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from streamlearn import open_dataset

    table = pa.table(
        {
            "idx": [[0, 3], [1], []],
            "val": [[1.0, 2.0], [0.5], []],
            "word": ["a", "b", "a"],
            "label": [0, 1, 0],
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    lists = open_dataset(str(path), target="label", sparse_columns=("idx", "val"), n_features=5)
    assert lists.is_sparse and lists.n_features == 5
    X = np.concatenate([c.X.toarray() for c in lists.chunks()])
    np.testing.assert_array_equal(X, [[1, 0, 0, 2, 0], [0, 0.5, 0, 0, 0], [0, 0, 0, 0, 0]])
    hashed = open_dataset(str(path), target="label", hash_features=2**8, exclude=["idx", "val"])
    rows = np.concatenate([c.X.toarray() for c in hashed.chunks()])
    assert hashed.n_features == 256 and (np.abs(rows).sum(axis=1) == 1).all()
    assert (rows[0] == rows[2]).all() and (rows[0] != rows[1]).any()
