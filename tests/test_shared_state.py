"""Per-row state read and written by storage chunk, against numpy on the same walks.

A shuffled walk hands on chunks whose rows come from every storage chunk of a mixing
group. A dask task's view of its partition's state, and an ``ExampleState`` on disk, must
give each chunk its rows' values, end with exactly the values written (the rows no chunk
carried as they were), and read and write each storage chunk about once a pass, not once
per chunk of its group.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streamlearn.data import Chunk, state_blocks
from streamlearn.data.example_state import ExampleState
from streamlearn.data.state_blocks import StateBlocks
from streamlearn.engine.shared_state import SharedExampleState

ROWS_PER_BLOCK = 10


class Counted:
    """A zarr array that counts the reads and writes of each storage chunk."""

    def __init__(self, array) -> None:
        self.array = array
        self.reads: dict[int, int] = {}
        self.writes: dict[int, int] = {}

    def _count(self, into: dict[int, int], key: slice) -> None:
        for block in range(key.start // ROWS_PER_BLOCK, -(-key.stop // ROWS_PER_BLOCK)):
            into[block] = into.get(block, 0) + 1

    def __getitem__(self, key: slice):
        self._count(self.reads, key)
        return self.array[key]

    def __setitem__(self, key: slice, value) -> None:
        self._count(self.writes, key)
        self.array[key] = value


def mixed_walk(lo: int, hi: int, group: int, seed: int) -> list[np.ndarray]:
    """Rows of each chunk of a walk over ``lo:hi`` that mixes groups of ``group`` storage
    chunks: every chunk handed on takes rows of each chunk of its group."""
    rng = np.random.default_rng(seed)
    blocks = [np.arange(s, min(s + ROWS_PER_BLOCK, hi)) for s in range(lo, hi, ROWS_PER_BLOCK)]
    order = rng.permutation(len(blocks))
    chunks = []
    for g in range(0, len(order), group):
        rows = rng.permutation(np.concatenate([blocks[i] for i in order[g:g + group]]))
        chunks += np.array_split(rows, len(order[g:g + group]))
    return chunks


@pytest.mark.parametrize("n_columns", [None, 3])
@pytest.mark.parametrize("capacity", [64, 2])
def test_a_partition_s_mixed_walk_reads_each_storage_chunk_once_and_leaves_what_it_wrote(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n_columns: int | None,
        capacity: int) -> None:
    monkeypatch.setattr(state_blocks, "CACHE_CHUNKS", capacity)
    n = 235  # the last storage chunk is short
    tail = () if n_columns is None else (n_columns,)
    rng = np.random.default_rng(0)
    before = rng.normal(size=(n, *tail)).astype(np.float32)
    state = ExampleState(n, n_columns)
    state.put(Chunk(X=np.empty((n, 0), np.float32), y=None, start=0), before)
    ranges = [(0, 120), (120, n)]
    shared = SharedExampleState.create(tmp_path, state, ranges, ROWS_PER_BLOCK)

    expected = before.copy()
    for partition, (lo, hi) in enumerate(ranges):
        view = shared.for_partition(partition, writable=True)
        view._src, view._dst = Counted(view._src), Counted(view._dst)
        blocks = view._blocks
        blocks._source, blocks._target = view._src, view._dst
        chunks = mixed_walk(lo, hi, group=4, seed=partition)
        skipped = chunks.pop(1)  # rows no chunk carries keep their values
        for rows in chunks:
            chunk = Chunk(X=np.empty((rows.size, 0), np.float32), y=None,
                          start=int(rows.min()), index=rows.astype(np.int64))
            np.testing.assert_array_equal(view.get(chunk), before[rows])
            new = rng.normal(size=(rows.size, *tail)).astype(np.float32)
            view.put(chunk, new)
            expected[rows] = new
            # a row written this pass reads what was written, as in memory
            np.testing.assert_array_equal(view.get(chunk), new)
        view.complete()
        n_blocks = -(-(hi - lo) // ROWS_PER_BLOCK)
        assert sorted(view._dst.writes) == list(range(n_blocks))
        if capacity >= 4:  # a group's storage chunks all kept: each read and written once
            assert set(view._src.reads.values()) == {1}
            assert set(view._dst.writes.values()) == {1}
            assert view._dst.reads == {}
        assert skipped.size > 0

    written = shared.swapped()
    after = ExampleState(n, n_columns)
    written.pull(after)
    np.testing.assert_array_equal(
        after.get(Chunk(X=np.empty((n, 0), np.float32), y=None, start=0)), expected)


@pytest.mark.parametrize("n_columns", [None, 2])
def test_an_example_state_on_disk_is_read_by_storage_chunk_not_by_span(
        tmp_path: Path, n_columns: int | None) -> None:
    """The rows of a mixed chunk lie anywhere: the state reads the storage chunks they fall
    in (before, the span between their first and last row: most of the store)."""
    n = 400
    tail = () if n_columns is None else (n_columns,)
    state = ExampleState(n, n_columns, fill=1.0, path=tmp_path / "s.zarr",
                         chunk_rows=ROWS_PER_BLOCK)
    counted = Counted(state._values)
    state._blocks._source = state._blocks._target = counted
    rng = np.random.default_rng(1)
    expected = np.ones((n, *tail), np.float32)
    for rows in mixed_walk(0, n, group=4, seed=2):
        chunk = Chunk(X=np.empty((rows.size, 0), np.float32), y=None,
                      start=int(rows.min()), index=rows.astype(np.int64))
        np.testing.assert_array_equal(state.get(chunk), expected[rows])
        new = rng.normal(size=(rows.size, *tail)).astype(np.float32)
        state.put(chunk, new)
        expected[rows] = new
    # every storage chunk read once (each group's 4 are kept), none read twice
    assert set(counted.reads.values()) == {1}
    assert sum(counted.reads.values()) == n // ROWS_PER_BLOCK
    state.close()  # a store of the caller's gets what was kept
    np.testing.assert_array_equal(ExampleState.open(tmp_path / "s.zarr").to_numpy(), expected)


def test_blocks_that_leave_the_cache_are_written_and_read_back(tmp_path: Path) -> None:
    stored = np.arange(50, dtype=np.float32)
    blocks = StateBlocks(stored, stored, block_rows=10, capacity=2)
    blocks.put(np.array([3, 13, 23]), np.array([-1, -2, -3], np.float32))  # 3 blocks, keeps 2
    assert stored[3] == -1 and stored[13] == 13  # the first left the cache: written
    np.testing.assert_array_equal(blocks.get(np.array([23, 13, 3, 4])), [-3, -2, -1, 4])
    blocks.flush()
    np.testing.assert_array_equal(stored[[3, 13, 23]], [-1, -2, -3])
    read_only = StateBlocks(stored, None, block_rows=10, capacity=2)
    with pytest.raises(ValueError, match="read only"):
        read_only.put(np.array([0]), np.array([0.0]))
