"""Chunking, shuffling, prefetching and the memory bound of a stream."""

from __future__ import annotations

import itertools
import os
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn import LocalEngine, Reduction, open_dataset
from streamlearn.data.prefetch import prefetched, prefetched_map
from streamlearn.data.row_mixing import group_sizes, mix_group_size
from tests.conftest import (
    FEATURES,
    Reference,
    record_piece_reads,
    write_parquet_dir,
    write_parquet_file,
    write_zarr_matrix,
)


def _sums() -> Reduction:
    """Column sums (float64), squared sums, min, max, row count and label counts."""

    def start() -> dict:
        return {"n": 0, "s": 0.0, "s2": 0.0, "lo": np.inf, "hi": -np.inf, "k": np.zeros(3, int)}

    def step(state: dict, chunk) -> dict:
        X = chunk.X.astype(np.float64)
        return {
            "n": state["n"] + chunk.n_rows,
            "s": state["s"] + X.sum(axis=0),
            "s2": state["s2"] + (X**2).sum(axis=0),
            "lo": np.minimum(state["lo"], chunk.X.min(axis=0)),
            "hi": np.maximum(state["hi"], chunk.X.max(axis=0)),
            "k": state["k"] + np.bincount(chunk.y, minlength=3),
        }

    def merge(a: dict, b: dict) -> dict:
        return {"n": a["n"] + b["n"], "s": a["s"] + b["s"], "s2": a["s2"] + b["s2"],
                "lo": np.minimum(a["lo"], b["lo"]), "hi": np.maximum(a["hi"], b["hi"]),
                "k": a["k"] + b["k"]}

    return Reduction(start=start, step=step, merge=merge)


@settings(max_examples=25, deadline=None)
@given(chunk_rows=st.integers(1, 1200), shuffle=st.booleans(), seed=st.integers(0, 2**31))
def test_chunking_never_changes_a_reduction(chunk_rows: int, shuffle: bool, seed: int) -> None:
    from tests.conftest import make_reference

    ref = make_reference(n=1000)
    ds = open_dataset(ref.frame, target="label", weight="w", prefetch=1)
    got = LocalEngine(chunk_rows=chunk_rows).run(_sums(), ds, shuffle=shuffle, seed=seed)
    X = ref.X.astype(np.float64)
    assert got["n"] == 1000
    np.testing.assert_allclose(got["s"], X.sum(axis=0), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(got["s2"], (X**2).sum(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(got["lo"], ref.X.min(axis=0))
    np.testing.assert_array_equal(got["hi"], ref.X.max(axis=0))
    np.testing.assert_array_equal(got["k"], [np.sum(ref.label == v) for v in (3, 5, 7)])


def test_merge_of_partition_states_equals_one_pass(ref: Reference) -> None:
    ds = open_dataset(ref.frame, target="label", weight="w", chunk_rows=64)
    red = _sums()
    whole = LocalEngine().run(red, ds)
    parts = [LocalEngine().run(red, ds, rows=(a, min(a + 300, 1000))) for a in (600, 0, 900, 300)]
    merged = parts[0]
    for p in parts[1:]:
        merged = red.merge(merged, p)
    np.testing.assert_allclose(merged["s"], whole["s"], rtol=1e-12)
    np.testing.assert_array_equal(merged["k"], whole["k"])


def test_shuffle_is_a_seeded_permutation(ref: Reference) -> None:
    ds = open_dataset(ref.frame, target="label", weight="w", chunk_rows=100)

    def order(**kw: int) -> tuple[np.ndarray, np.ndarray]:
        chunks = list(ds.chunks(shuffle=True, **kw))
        return np.concatenate([c.rows for c in chunks]), np.array([c.start for c in chunks])

    rows, starts = order(seed=7, epoch=0)
    assert sorted(rows.tolist()) == list(range(1000))
    assert not np.array_equal(rows, np.arange(1000))
    assert sorted(starts.tolist()) == list(range(0, 1000, 100))
    assert not np.array_equal(starts, np.arange(0, 1000, 100)), "chunk order must be permuted"
    chunks = list(ds.chunks(shuffle=True, seed=7))
    sizes = group_sizes(len(chunks), mix_group_size(100, ds.n_features, sparse=False))
    bounds = np.cumsum([0, *sizes])
    for g, h in itertools.pairwise(bounds):  # rows mixed within groups of chunks
        part = chunks[g:h]
        assert sorted(np.concatenate([c.rows for c in part]).tolist()) == sorted(
            r for c in part for r in range(c.start, min(c.start + 100, 1000)))
    for c in chunks:
        np.testing.assert_array_equal(c.X, ref.X[c.rows])  # rows move with their values
        np.testing.assert_array_equal(ds.classes[c.y], ref.label[c.rows])
        np.testing.assert_array_equal(c.weight, ref.weight[c.rows])
    again, _ = order(seed=7, epoch=0)
    np.testing.assert_array_equal(rows, again)
    other_epoch, _ = order(seed=7, epoch=1)
    other_seed, _ = order(seed=8, epoch=0)
    assert not np.array_equal(rows, other_epoch) and not np.array_equal(rows, other_seed)


@settings(max_examples=25, deadline=None)
@given(chunk_rows=st.integers(1, 400), block_rows=st.integers(1, 300),
       shuffle=st.booleans(), seed=st.integers(0, 2**31), data=st.data())
def test_left_out_blocks_are_never_read_and_every_other_row_once(
        chunk_rows: int, block_rows: int, shuffle: bool, seed: int, data: st.DataObject) -> None:
    from tests.conftest import make_reference

    ref = make_reference(n=1000)
    n_blocks = -(-1000 // block_rows)
    blocks = data.draw(st.lists(st.integers(0, n_blocks - 1), max_size=n_blocks))
    ds = open_dataset(ref.frame, target="label", weight="w", chunk_rows=chunk_rows)
    kept = ds.without_blocks(blocks, block_rows)
    chunks = list(kept.chunks(shuffle=shuffle, seed=seed))
    rows = np.concatenate([c.rows for c in chunks]) if chunks else np.empty(0, np.int64)
    # numpy reference: every row whose block is not left out, each exactly once
    expected = np.flatnonzero(~np.isin(np.arange(1000) // block_rows, blocks))
    np.testing.assert_array_equal(np.sort(rows), expected)
    assert all(c.n_rows > 0 for c in chunks)
    for c in chunks:
        np.testing.assert_array_equal(c.X, ref.X[c.rows])
        np.testing.assert_array_equal(ds.classes[c.y], ref.label[c.rows])
    assert kept.n_rows == ds.n_rows and ds._excluded is None  # the original is unchanged


def test_left_out_blocks_are_checked() -> None:
    from tests.conftest import make_reference

    ds = open_dataset(make_reference(n=100).frame, target="label")
    with pytest.raises(ValueError, match="not all among"):
        ds.without_blocks([10], 10)
    with pytest.raises(ValueError, match="positive"):
        ds.without_blocks([0], 0)
    with pytest.raises(ValueError, match="already"):
        ds.without_blocks([0], 10).without_blocks([1], 10)


def test_prefetch_keeps_order_and_bounds_read_ahead() -> None:
    produced: list[int] = []
    consumed: list[int] = []
    ahead: list[int] = []

    def produce():
        for i in range(50):
            produced.append(i)
            ahead.append(len(produced) - len(consumed))
            yield i

    for item in prefetched(produce, depth=3):
        consumed.append(item)
        time.sleep(0.001)
    assert consumed == list(range(50))
    # the item being produced, plus at most `depth` finished ones the consumer has not taken
    assert max(ahead) <= 3 + 1


def test_a_walk_of_one_chunk_reads_in_the_calling_thread(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    # nothing to read ahead of one chunk: no reader thread is started (a corrective step
    # runs a pass per evaluation, and starting one cost more than the pass on small data)
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    X = np.arange(60, dtype=np.float32).reshape(20, 3)
    y = np.arange(20) % 2
    zarr_path = tmp_path / "rows.zarr"
    zarr.save_group(str(zarr_path), X=X, y=y)
    for source, kwargs in ((X, {"target": y}), (str(zarr_path), {})):
        for chunk_rows, readers in ((20, 0), (7, 1)):
            started.clear()
            ds = open_dataset(source, chunk_rows=chunk_rows, prefetch=2, **kwargs)
            rows = [r for chunk in ds.chunks() for r in chunk.rows.tolist()]
            assert rows == list(range(20))
            assert (sum(name.startswith("streamlearn-") for name in started) >= 1) == readers


def test_prefetch_reraises_and_stops_on_early_exit() -> None:
    def failing():
        yield 1
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        list(prefetched(failing, depth=2))

    started = threading.active_count()

    def endless():
        i = 0
        while True:
            yield i
            i += 1

    gen = prefetched(endless, depth=2)
    assert next(gen) == 0
    gen.close()
    time.sleep(0.3)
    assert threading.active_count() <= started


def test_prefetched_map_keeps_order_and_bounds_work_ahead() -> None:
    lock = threading.Lock()
    started: list[int] = []
    consumed: list[int] = []
    ahead: list[int] = []

    def work(i: int) -> int:
        with lock:
            started.append(i)
            ahead.append(len(started) - len(consumed))
        time.sleep(0.002 * (i % 3))  # later items may finish first
        return i * i

    for value in prefetched_map(work, range(40), depth=3):
        with lock:
            consumed.append(value)
    assert consumed == [i * i for i in range(40)]
    assert sorted(started) == list(range(40))
    # the items submitted beyond the consumer's: at most `depth`, plus the one it holds
    assert max(ahead) <= 3 + 1
    assert list(prefetched_map(work, range(5), depth=0)) == [0, 1, 4, 9, 16]


def test_prefetched_map_reraises_in_order_and_stops_on_early_exit() -> None:
    def work(i: int) -> int:
        if i in (4, 6):
            raise KeyError(f"boom {i}")
        return i

    got: list[int] = []
    with pytest.raises(KeyError, match="boom 4"):
        for value in prefetched_map(work, range(10), depth=3):
            got.append(value)
    assert got == [0, 1, 2, 3]

    started = threading.active_count()
    calls: list[int] = []

    def slow(i: int) -> int:
        calls.append(i)
        time.sleep(0.01)
        return i

    gen = prefetched_map(slow, range(1000), depth=2)
    assert next(gen) == 0
    gen.close()
    assert len(calls) <= 4, "closing must cancel the work not yet started"
    assert threading.active_count() <= started


def test_zarr_shuffle_does_not_depend_on_prefetch(ref: Reference, tmp_path: Path) -> None:
    """Chunks cut by concurrent readers come out in the same order with the same rows."""
    ds = open_dataset(write_zarr_matrix(ref, tmp_path / "m.zarr", chunk=64), weight="w",
                      chunk_rows=90)
    walks = [list(ds.chunks(shuffle=True, seed=3, epoch=2, prefetch=p)) for p in (0, 1, 4)]
    for walk in walks[1:]:
        assert [c.start for c in walk] == [c.start for c in walks[0]]
        for c, c0 in zip(walk, walks[0], strict=True):
            np.testing.assert_array_equal(c.rows, c0.rows)
            np.testing.assert_array_equal(c.X, c0.X)
    rows = np.concatenate([c.rows for c in walks[0]])
    assert sorted(rows.tolist()) == list(range(1000))
    for c in walks[2]:
        np.testing.assert_array_equal(c.X, ref.X[c.rows])
        np.testing.assert_array_equal(ds.classes[c.y], ref.label[c.rows])
        np.testing.assert_array_equal(c.weight, ref.weight[c.rows])


@pytest.mark.parametrize("prefetch", [0, 2])
def test_stream_memory_is_bounded_by_chunks_not_rows(tmp_path: Path, prefetch: int) -> None:
    """A zarr store 32x the chunk size streams in a few chunks' worth of traced memory.

    The bound: ``prefetch + 1`` chunks delivered or queued, the consumer's previous chunk,
    and for each read in flight (one per CPU, at most ``prefetch``) zarr's decoding buffers,
    about twice the chunk read.
    """
    chunk_rows, d = 8192, 64
    n = 32 * chunk_rows
    group = zarr.open_group(str(tmp_path / "big.zarr"), mode="w")
    X = group.create_array("X", shape=(n, d), chunks=(4096, d), dtype="float32")
    y = group.create_array("y", shape=(n,), chunks=(4096,), dtype="int8")
    rng = np.random.default_rng(0)
    for a in range(0, n, 4096):
        X[a : a + 4096] = rng.normal(size=(4096, d)).astype(np.float32)
        y[a : a + 4096] = rng.integers(0, 2, 4096)
    chunk_bytes = chunk_rows * d * 4
    ds = open_dataset(str(tmp_path / "big.zarr"), chunk_rows=chunk_rows, prefetch=prefetch)
    ds.classes
    peaks = []
    for _ in range(2):  # the first walk also scans labels and loads numba's own modules
        tracemalloc.start()
        try:
            total = 0.0
            for chunk in ds.chunks():
                total += float(chunk.X[:, 0].sum())
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    peak = peaks[-1]
    reads_in_flight = max(1, min(prefetch, os.cpu_count() or 1))
    assert peak < (prefetch + 3 + 2 * reads_in_flight) * chunk_bytes, (peak / chunk_bytes)
    assert peak < 0.35 * n * d * 4


def test_parquet_stream_memory_is_bounded(ref: Reference, tmp_path: Path) -> None:
    """Arrow buffers of a parquet stream stay within a few row groups, whatever the file count."""
    big = ref.frame.loc[ref.frame.index.repeat(20)].reset_index(drop=True)
    root = write_parquet_dir(big, tmp_path / "d", sizes=(5000, 5000))
    ds = open_dataset(str(root), target="label", features=FEATURES, chunk_rows=1000)
    pool = pa.default_memory_pool()
    base = pool.bytes_allocated()
    tracemalloc.start()
    peak_arrow = 0
    try:
        for _chunk in ds.chunks():
            peak_arrow = max(peak_arrow, pool.bytes_allocated() - base)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    row_group_bytes = 150 * 7 * 8  # largest row group written above, all columns
    assert peak_arrow < 8 * row_group_bytes + (1 << 20)
    assert peak < 8 * 1000 * 5 * 4 + (1 << 20)


def test_single_file_with_many_row_groups_is_cut_exactly(ref: Reference, tmp_path: Path) -> None:
    path = write_parquet_file(ref.frame, tmp_path / "f.parquet", row_group_size=33)
    ds = open_dataset(str(path), target="label", features=FEATURES)
    assert len(ds.source.pieces) == -(-1000 // 33)
    sizes = [c.n_rows for c in ds.chunks(chunk_rows=250)]
    assert sizes == [250, 250, 250, 250]


def test_piece_grouped_order_keeps_each_pieces_chunks_together() -> None:
    from streamlearn.data.dataset import piece_grouped_order

    offsets = np.array([0, 100, 250, 300, 500])
    starts = np.arange(0, 500, 40)
    orders = [starts[piece_grouped_order(starts, offsets, np.random.default_rng(s))]
              for s in range(20)]
    for order in orders:
        assert sorted(order.tolist()) == starts.tolist()
        piece = np.searchsorted(offsets, order, side="right") - 1
        runs = piece[np.r_[True, piece[1:] != piece[:-1]]]
        assert len(runs) == len(set(runs.tolist()))  # each piece visited in one run
    assert len({tuple(o) for o in orders}) > 10  # and the order is random
    assert len({tuple(o[:2]) for o in orders}) > 3


def test_a_shuffled_parquet_pass_reads_each_row_group_once(ref: Reference, tmp_path: Path,
                                                          monkeypatch) -> None:
    path = write_parquet_file(ref.frame, tmp_path / "f.parquet", row_group_size=200)
    ds = open_dataset(str(path), target="label", features=FEATURES)
    reads = record_piece_reads(monkeypatch, ds.source)
    chunks = list(ds.chunks(chunk_rows=50, shuffle=True, seed=3))
    assert sorted(reads) == list(range(5))
    rows = np.concatenate([c.rows for c in chunks])
    assert sorted(rows.tolist()) == list(range(1000))
    assert not np.array_equal(rows, np.arange(1000))
    for c in chunks:
        np.testing.assert_array_equal(c.X, ref.X[c.rows])


@settings(max_examples=20, deadline=None)
@given(chunk_rows=st.integers(1, 1100), prefetch=st.integers(0, 3))
def test_describe_is_the_same_at_any_chunk_size(chunk_rows: int, prefetch: int) -> None:
    """The describe pass over a Dataset: exact where exact, round-off elsewhere."""
    from streamlearn import describe
    from tests.conftest import make_reference

    ref = make_reference(n=1000)
    ds = open_dataset(ref.frame, target="label", weight="w", chunk_rows=chunk_rows,
                      prefetch=prefetch)
    got = describe(ds, sample_size=256)
    base = describe(open_dataset(ref.frame, target="label", weight="w", chunk_rows=1000),
                    sample_size=256)
    X = ref.X.astype(np.float64)
    np.testing.assert_array_equal(got.count, 1000)
    np.testing.assert_allclose(got.mean, X.mean(axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.std, X.std(axis=0), rtol=1e-9)
    np.testing.assert_array_equal(got.min, ref.X.min(axis=0))
    np.testing.assert_array_equal(got.max, ref.X.max(axis=0))
    np.testing.assert_array_equal(got.sample_rows, base.sample_rows)  # same rows, any chunking
    np.testing.assert_array_equal(got.quantiles, base.quantiles)
    np.testing.assert_array_equal(got.class_counts, [np.sum(ref.label == v) for v in (3, 5, 7)])


def test_evaluate_streams_the_same_scores_as_scikit_learn(ref: Reference) -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, confusion_matrix, log_loss

    from streamlearn import evaluate

    model = LogisticRegression(max_iter=500).fit(ref.X[:600].astype(np.float64), ref.label[:600])
    got = evaluate(model, open_dataset(ref.frame, target="label", exclude=["w"], chunk_rows=97))
    X = ref.X.astype(np.float64)
    assert got["accuracy"] == pytest.approx(accuracy_score(ref.label, model.predict(X)))
    assert got["log_loss"] == pytest.approx(log_loss(ref.label, model.predict_proba(X)),
                                            rel=1e-6)
    np.testing.assert_array_equal(got["confusion_matrix"],
                                  confusion_matrix(ref.label, model.predict(X)))


def test_reduce_helper_and_progress_bar(ref: Reference, capsys: pytest.CaptureFixture,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ds = open_dataset(ref.frame, target="label", weight="w", chunk_rows=100)
    monkeypatch.delenv("STREAMLEARN_PROGRESS", raising=False)
    total = LocalEngine(progress=True).reduce(
        ds, start=lambda: 0.0, step=lambda s, c: s + float(c.weight.sum()),
        merge=lambda a, b: a + b, finish=lambda s: round(s, 3), description="weights",
    )
    assert total == round(float(ref.weight.astype(np.float64).sum()), 3)
    err = capsys.readouterr().err
    assert "weights" in err and "rows/s" in err and "1.00k/1.00k" in err
    monkeypatch.setenv("STREAMLEARN_PROGRESS", "0")
    LocalEngine(progress=True).run(_sums(), ds)
    assert capsys.readouterr().err == ""
