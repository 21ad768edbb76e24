"""``SparseRows`` against scipy.sparse and numpy; ``first_bad_entry``; ``NumberedNames``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from streamlearn.data.sources.base import NumberedNames
from streamlearn.data.sparse_rows import SparseRows, first_bad_entry


def random_csr(n: int = 9, d: int = 7, density: float = 0.35, seed: int = 0) -> sp.csr_array:
    """A float32 CSR matrix with some empty rows (rows 2 and 5 emptied on purpose)."""
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((n, d)) < density, rng.normal(size=(n, d)), 0.0)
    dense[[2, 5]] = 0.0
    return sp.csr_array(dense.astype(np.float32))


def rows_of(matrix: sp.csr_array) -> SparseRows:
    """The rows of a CSR built directly from its arrays (the reference's own structure)."""
    return SparseRows(matrix.indptr.astype(np.int64), matrix.indices.astype(np.int32),
                      matrix.data.astype(np.float32), matrix.shape[1])


def assert_same(rows: SparseRows, expected) -> None:
    """``rows`` holds ``expected`` (scipy or dense) exactly, with the documented dtypes."""
    expected = sp.csr_array(expected)
    assert rows.shape == expected.shape
    assert rows.indptr.dtype == np.int64 and rows.indptr[0] == 0
    assert rows.indices.dtype == np.int32 and rows.values.dtype == np.float32
    assert rows.indptr[-1] == rows.indices.shape[0] == rows.values.shape[0] == rows.nnz
    np.testing.assert_array_equal(rows.toarray(), expected.toarray().astype(np.float32))


# --------------------------------------------------------------------- SparseRows
def test_properties_and_toarray() -> None:
    m = random_csr()
    rows = rows_of(m)
    assert rows.n_rows == 9 and rows.shape == (9, 7) and rows.nnz == m.nnz
    assert rows.nbytes == rows.indptr.nbytes + rows.indices.nbytes + rows.values.nbytes
    assert rows.kernel_args[0] is rows.indptr and rows.kernel_args[2] is rows.values
    dense = rows.toarray()
    assert dense.dtype == np.float32 and dense.flags.c_contiguous
    np.testing.assert_array_equal(dense, m.toarray())


def test_to_scipy_shares_the_arrays() -> None:
    m = random_csr()
    rows = rows_of(m)
    back = rows.to_scipy()
    assert sp.issparse(back) and back.format == "csr" and back.shape == m.shape
    assert np.shares_memory(back.data, rows.values)
    assert (back != m).nnz == 0


@pytest.mark.parametrize(("a", "b"), [(0, 9), (0, 0), (3, 7), (2, 3), (5, 6), (8, 9), (9, 9)])
def test_slice(a: int, b: int) -> None:
    m = random_csr()
    whole = rows_of(m)
    part = whole.slice(a, b)
    assert_same(part, m[a:b])
    assert part.n_cols == 7
    if part.nnz:  # entries are views
        assert np.shares_memory(part.values, whole.values)
        assert np.shares_memory(part.indices, whole.indices)


@pytest.mark.parametrize("take", [
    [4, 0, 8, 1],  # permuted
    [3, 3, 3],  # repeated
    [2, 5, 2],  # empty rows only
    [8, 7, 6, 5, 4, 3, 2, 1, 0],  # every row, reversed
    [],  # none
])
def test_take_matches_fancy_indexing(take: list[int]) -> None:
    m = random_csr()
    rows = rows_of(m)
    got = rows.take(np.array(take, dtype=np.int32))
    assert_same(got, m.toarray()[np.array(take, dtype=np.int64)].reshape(len(take), 7))
    # a copy: writing into it leaves the source alone
    if got.nnz:
        got.values[:] = 99.0
        np.testing.assert_array_equal(rows.toarray(), m.toarray())


def test_take_of_a_slice() -> None:
    m = random_csr(n=20, seed=3)
    part = rows_of(m).slice(6, 15)
    assert_same(part.take(np.array([8, 0, 4, 4])), m.toarray()[[14, 6, 10, 10]])


def test_from_scipy_coo_sums_duplicates() -> None:
    row = np.array([0, 0, 2, 2, 2, 1, 0])
    col = np.array([3, 3, 1, 0, 1, 4, 0])
    val = np.array([1.0, 2.5, -1.0, 4.0, 0.25, 7.0, 3.0])
    coo = sp.coo_matrix((val, (row, col)), shape=(4, 5))
    rows = SparseRows.from_scipy(coo)
    expected = np.zeros((4, 5))
    np.add.at(expected, (row, col), val)
    assert_same(rows, expected)
    assert rows.nnz == 5  # duplicates merged, row 3 empty
    for r in range(4):  # each row's columns distinct
        cols = rows.indices[rows.indptr[r]:rows.indptr[r + 1]]
        assert len(set(cols.tolist())) == len(cols)


def test_from_scipy_csr_int64_indices_float64_data() -> None:
    m = sp.csr_matrix(random_csr(seed=1).toarray().astype(np.float64))
    m.indices = m.indices.astype(np.int64)
    m.indptr = m.indptr.astype(np.int64)
    assert m.indices.dtype == np.int64 and m.data.dtype == np.float64
    rows = SparseRows.from_scipy(m)
    assert_same(rows, m)
    assert rows.n_cols == 7


@pytest.mark.parametrize("fmt", ["csc", "coo", "lil", "dok", "bsr"])
def test_from_scipy_any_format(fmt: str) -> None:
    m = random_csr(seed=2)
    assert_same(SparseRows.from_scipy(m.asformat(fmt)), m)


def test_from_scipy_of_a_sliced_csr_starts_indptr_at_zero() -> None:
    m = random_csr(n=12, seed=4)
    view = sp.csr_matrix(m)[4:10]
    assert_same(SparseRows.from_scipy(view), m.toarray()[4:10])


def test_concatenate() -> None:
    m = random_csr(n=12, seed=5)
    whole = rows_of(m)
    empty_block = whole.slice(4, 4)
    parts = [whole.slice(0, 2), empty_block, whole.slice(2, 6), whole.slice(6, 6),
             whole.slice(6, 12)]
    assert empty_block.n_rows == 0 and empty_block.nnz == 0
    joined = SparseRows.concatenate(parts)
    assert_same(joined, m)
    np.testing.assert_array_equal(joined.indptr, whole.indptr)
    # blocks of copied rows (indptr from 0), in another order
    other = SparseRows.concatenate([whole.take(np.array([7, 2])), whole.slice(0, 0),
                                    whole.slice(5, 6)])
    assert_same(other, m.toarray()[[7, 2, 5]])


def test_concatenate_only_empty_rows_and_single_part() -> None:
    m = random_csr()
    empty_rows = rows_of(m).take(np.array([2, 5]))
    joined = SparseRows.concatenate([empty_rows, rows_of(m).slice(3, 3), empty_rows])
    assert_same(joined, np.zeros((4, 7)))
    single = rows_of(m).slice(1, 4)
    assert SparseRows.concatenate([single]) is single


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_concatenate_take_is_scipy_vstack_then_the_rows_in_order(seed: int) -> None:
    m = random_csr(n=30, d=11, seed=seed)
    whole = rows_of(m)
    # parts as the row mixing cuts them: slices (views), empty ones and copied rows
    parts = [whole.slice(3, 9), whole.slice(9, 9), whole.take(np.array([0, 29, 2])),
             whole.slice(12, 30), whole.slice(1, 2)]
    stacked = sp.vstack([sp.csr_array(p.toarray()) for p in parts]).toarray()
    order = np.random.default_rng(seed).permutation(stacked.shape[0])
    assert_same(SparseRows.concatenate_take(parts, order), stacked[order])


# ---------------------------------------------------------------- first_bad_entry
def first_bad_reference(indptr: np.ndarray, indices: np.ndarray, n_cols: int) -> int:
    for r in range(len(indptr) - 1):
        seen: set[int] = set()
        for e in range(indptr[r], indptr[r + 1]):
            j = int(indices[e])
            if j < 0 or j >= n_cols or j in seen:
                return e
            seen.add(j)
    return -1


@pytest.mark.parametrize(("indptr", "indices"), [
    ([0, 2, 2, 5], [1, 4, 0, 3, 2]),  # valid (unsorted rows are fine)
    ([0, 0, 0], []),  # valid, no entries
    ([0, 2, 2, 5], [1, 4, 0, 5, 2]),  # out of range (== n_cols)
    ([0, 2, 2, 5], [1, 9, 0, 3, 2]),  # out of range, first row
    ([0, 2, 2, 5], [1, 4, 0, -1, 2]),  # negative
    ([0, 2, 2, 5], [1, 4, 3, 0, 3]),  # duplicate in a row
    ([0, 2, 4], [1, 1, 0, 0]),  # duplicates in two rows: the first one
    ([0, 2, 4], [3, 4, 3, 4]),  # same columns in different rows: valid
    ([0, 1, 3], [2, -7, 9]),  # negative before out of range
    ([0, 3, 6], [0, 2, 4, 4, 2, 0]),  # sorted row, then an unsorted one on its columns: valid
    ([0, 3, 6], [0, 2, 4, 3, 1, 3]),  # sorted row, then a repeat in an unsorted one
    ([0, 3, 5], [0, 2, 2, 1, 4]),  # a rising row that repeats its last column
])
def test_first_bad_entry(indptr: list[int], indices: list[int]) -> None:
    ip = np.array(indptr, dtype=np.int64)
    ix = np.array(indices, dtype=np.int32)
    assert first_bad_entry(ip, ix, 5) == first_bad_reference(ip, ix, 5)


def test_first_bad_entry_random() -> None:
    rng = np.random.default_rng(7)
    for _ in range(40):
        n_cols = int(rng.integers(1, 8))
        lengths = rng.integers(0, 4, size=6)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        indices = rng.integers(-1, n_cols + 1, size=int(indptr[-1])).astype(np.int32)
        for r in np.flatnonzero(rng.random(6) < 0.5):  # some rows sorted: the quick path
            indices[indptr[r]:indptr[r + 1]].sort()
        assert first_bad_entry(indptr, indices, n_cols) == \
            first_bad_reference(indptr, indices, n_cols)


# ------------------------------------------------------------------ NumberedNames
def test_numbered_names_sequence() -> None:
    names = NumberedNames(5)
    listed = ["x0", "x1", "x2", "x3", "x4"]
    assert len(names) == 5 and list(names) == listed
    assert names[0] == "x0" and names[4] == "x4" and names[-1] == "x4" and names[-5] == "x0"
    for bad in (5, -6):
        with pytest.raises(IndexError):
            names[bad]
    assert names[1:4] == ["x1", "x2", "x3"] and names[::-2] == ["x4", "x2", "x0"]
    assert names[3:99] == ["x3", "x4"] and names[4:1] == []
    assert list(reversed(names)) == listed[::-1]
    assert len(NumberedNames(0)) == 0 and list(NumberedNames(0)) == []


def test_numbered_names_contains_and_index() -> None:
    names = NumberedNames(12)
    for j in (0, 7, 11):
        assert f"x{j}" in names and names.index(f"x{j}") == j
    for name in ("x12", "x-1", "x01", "x", "y1", "1", "x1.0", " x1", "x 1", "X1", "", 1, None):
        assert name not in names
        with pytest.raises(ValueError):
            names.index(name)
    assert names.count("x3") == 1 and names.count("x12") == 0


def test_numbered_names_non_ascii_digits_are_not_names() -> None:
    assert "x²" not in NumberedNames(5)


def test_numbered_names_equality_and_repr() -> None:
    names = NumberedNames(3)
    assert names == ["x0", "x1", "x2"] and names == ("x0", "x1", "x2")
    assert ["x0", "x1", "x2"] == names and ("x0", "x1", "x2") == names
    assert names == NumberedNames(3) and hash(names) == hash(NumberedNames(3))
    assert names != NumberedNames(4)
    for other in (["x0", "x1"], ["x0", "x1", "x3"], ("x0", "x1", "x2", "x3"), "x0x1x2",
                  ["a", "b", "c"], None, 3):
        assert names != other
    assert NumberedNames(0) == [] and NumberedNames(0) == ()
    assert repr(names) == "NumberedNames(3)"
