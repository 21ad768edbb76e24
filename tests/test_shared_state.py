"""A task's view of per-example state on the shared store, against numpy on the same walk.

A shuffled walk hands on chunks whose rows come from every storage chunk of a mixing
group; the view must give each chunk the values from before the pass, end with exactly
the values written (the rows no chunk carried as they were), and read and write each
storage chunk about once a pass, not once per chunk of its group.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streamlearn.data import Chunk
from streamlearn.data.example_state import ExampleState
from streamlearn.engine import shared_state
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
def test_a_mixed_walk_reads_the_values_before_the_pass_and_leaves_those_it_wrote(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n_columns: int | None,
        capacity: int) -> None:
    monkeypatch.setattr(shared_state, "CACHE_CHUNKS", capacity)
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
        chunks = mixed_walk(lo, hi, group=4, seed=partition)
        skipped = chunks.pop(1)  # rows no chunk carries keep their values
        for rows in chunks:
            chunk = Chunk(X=np.empty((rows.size, 0), np.float32), y=None,
                          start=int(rows.min()), index=rows.astype(np.int64))
            np.testing.assert_array_equal(view.get(chunk), before[rows])
            new = rng.normal(size=(rows.size, *tail)).astype(np.float32)
            view.put(chunk, new)
            expected[rows] = new
            # a row written this pass still reads its value from before it
            np.testing.assert_array_equal(view.get(chunk), before[rows])
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
