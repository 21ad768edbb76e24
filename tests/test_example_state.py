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


def test_a_dcd_fit_with_its_dual_variables_on_disk_is_the_fit_in_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Dual variables beyond the memory budget go to a store read and written by storage
    chunk through a cache (here of 2 storage chunks, so that chunks leave it and come back
    every chunk): the same model to the last bit."""
    from streamlearn.data import state_blocks
    from streamlearn.models import AdditiveSVC

    rng = np.random.default_rng(5)
    X = rng.normal(size=(200_000, 3)).astype(np.float32)
    y = (X[:, 0] + np.sin(2 * X[:, 1]) > 0).astype(int)
    ds = open_dataset(X, target=y, chunk_rows=8192)  # 4 storage chunks of state, mixed
    params = dict(solver="dcd", epochs=2, tol=None, interactions=0, value_terms=False,
                  n_bases=8, calibrate=False, random_state=0)
    in_memory = AdditiveSVC(**params).fit(ds)
    monkeypatch.setattr(example_state, "MEMORY_LIMIT_BYTES", 0)
    monkeypatch.setattr(state_blocks, "CACHE_CHUNKS", 2)
    on_disk = AdditiveSVC(**params).fit(ds)
    np.testing.assert_array_equal(on_disk.coef_d_, in_memory.coef_d_)
    np.testing.assert_array_equal(on_disk.intercept_, in_memory.intercept_)
