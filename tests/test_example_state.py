"""Per-row state lines up with rows however chunks are cut, shuffled or filtered."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streamlearn import ExampleState, open_dataset
from streamlearn.data import example_state


def _data(n: int = 1000):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    return X, rng.integers(0, 2, n)


@pytest.mark.parametrize("backend", ["memory", "zarr"])
@pytest.mark.parametrize("n_columns", [None, 4])
def test_values_follow_global_rows(tmp_path: Path, backend: str, n_columns: int | None) -> None:
    X, y = _data()
    ds = open_dataset(X, target=y, chunk_rows=96)
    path = tmp_path / "state.zarr" if backend == "zarr" else None
    state = ExampleState(ds.n_rows, n_columns, fill=-1.0, path=path, chunk_rows=128)
    assert state.in_memory == (backend == "memory")
    expected = np.full((1000,) if n_columns is None else (1000, n_columns), -1.0, np.float32)
    np.testing.assert_array_equal(state.to_numpy(), expected)

    def value(rows: np.ndarray) -> np.ndarray:
        v = (rows * 0.5).astype(np.float32)
        return v if n_columns is None else np.repeat(v[:, None], n_columns, 1) + np.arange(4)

    for chunk in ds.chunks(shuffle=True, seed=1):  # write in shuffled order
        np.testing.assert_array_equal(state.get(chunk), expected[chunk.rows])
        state.put(chunk, value(chunk.rows))
    np.testing.assert_array_equal(state.to_numpy(), value(np.arange(1000)))
    for chunk in ds.chunks(chunk_rows=77):  # read back in another chunking
        np.testing.assert_array_equal(state.get(chunk), value(chunk.rows))
    if backend == "zarr":
        reopened = ExampleState.open(path)
        np.testing.assert_array_equal(reopened.to_numpy(), value(np.arange(1000)))


def test_dropped_rows_leave_their_state_alone() -> None:
    X, y = _data()
    X[[10, 11, 500]] = np.nan
    ds = open_dataset(X, target=y, nan_policy="drop", chunk_rows=100)
    state = ExampleState(ds.n_rows, fill=0.0)
    for chunk in ds.chunks(shuffle=True, seed=2):
        state.put(chunk, np.ones(chunk.n_rows))
    values = state.to_numpy()
    assert values.sum() == 997 and values[[10, 11, 500]].sum() == 0


def test_large_state_spills_to_a_temporary_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(example_state, "MEMORY_LIMIT_BYTES", 1000)
    with ExampleState(5000, fill=2.0) as state:
        assert not state.in_memory and state.path is not None and state.path.exists()
        where = state.path
        assert float(state.to_numpy().sum()) == 10000.0
    assert not where.exists()


def test_states_alive_together_share_one_memory_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two states of 600 bytes under a 1,000-byte budget: the second spills to disk;
    closing the first gives its bytes back, so the next one fits in memory again."""
    monkeypatch.setattr(example_state, "MEMORY_LIMIT_BYTES", 1000)
    monkeypatch.setattr(example_state, "_held_bytes", 0)
    first = ExampleState(150, fill=1.0)
    with ExampleState(150, fill=2.0) as second:
        assert first.in_memory and not second.in_memory
        assert float(second.to_numpy().sum()) == 300.0
    first.close()
    assert first.to_numpy().sum() == 150.0  # closed, still readable
    with ExampleState(150) as third:
        assert third.in_memory
    assert example_state._held_bytes == 0
