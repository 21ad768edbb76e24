"""Mini-batch k-means kernels and the streamed k-means driver against numpy and scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import KMeans

from streamlearn.data import open_dataset
from streamlearn.engine.passes import run_chunks
from streamlearn.errors import DataError
from streamlearn.solvers import kmeans
from streamlearn.solvers.kmeans import (
    NUMPY_ASSIGN_ENTRIES,
    MiniBatchKMeansPass,
    assign_chunk,
    assign_numpy,
    assign_rows,
    kmeans_plus_plus,
    minibatch_rows,
    minibatch_step,
    streamed_kmeans,
)


def _blobs(n_per: int, centers: np.ndarray, scale: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = np.vstack([c + scale * rng.normal(size=(n_per, centers.shape[1])) for c in centers])
    return rng.permutation(X).astype(np.float32)


def test_assign_chunk_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 7)).astype(np.float32)
    C = rng.normal(size=(9, 7)).astype(np.float32)
    labels, sq = assign_chunk(X, C)
    d = ((X.astype(np.float64)[:, None, :] - C.astype(np.float64)[None]) ** 2).sum(axis=2)
    assert labels.dtype == np.int32 and sq.dtype == np.float32
    np.testing.assert_array_equal(labels, d.argmin(axis=1))
    np.testing.assert_allclose(sq, d.min(axis=1), rtol=1e-5, atol=1e-5)


def test_minibatch_step_is_running_mean() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    w = rng.uniform(0.5, 2.0, size=200).astype(np.float32)
    C = rng.normal(size=(4, 3))
    counts = np.array([0.0, 5.0, 1.0, 0.0])
    labels, sq = assign_chunk(X, C)
    expected_c, expected_n = C.copy(), counts.copy()
    for j in range(4):
        m = labels == j
        if m.any():
            mass = w[m].sum(dtype=np.float64)
            total = counts[j] + mass
            moved = (w[m, None].astype(np.float64) * X[m]).sum(axis=0)
            expected_c[j] = (counts[j] * C[j] + moved) / total
            expected_n[j] = total
    inertia = minibatch_step(X, w, C, counts)
    np.testing.assert_allclose(C, expected_c, rtol=1e-10)
    np.testing.assert_allclose(counts, expected_n, rtol=1e-10)
    assert inertia == pytest.approx(float((w * sq).sum()), rel=1e-5)


def test_numpy_assignment_and_step_match_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    # small dense chunks take numpy: the kernels' labels, distances up to rounding, and
    # the same bits of the moved centres and counts (rows added in the same order)
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 7)).astype(np.float32)
    w = rng.uniform(0.5, 2.0, size=300).astype(np.float32)
    C = rng.normal(size=(9, 7))
    C[4] = C[2]  # a repeated centre: the first one wins, by both
    labels, sq = assign_chunk(X, C)
    got_labels, got_sq = assign_numpy(X, C)
    assert got_labels.dtype == np.int32 and got_sq.dtype == np.float32
    np.testing.assert_array_equal(got_labels, labels)
    assert not np.any(got_labels == 4)
    np.testing.assert_allclose(got_sq, sq, rtol=1e-6, atol=1e-6)
    kernel_c, kernel_n = C.copy(), np.array([0.0, 5.0, 1.0, 0, 0, 0, 0, 0, 2.0])
    numpy_c, numpy_n = kernel_c.copy(), kernel_n.copy()
    inertia = minibatch_step(X, w, kernel_c, kernel_n)
    calls = []
    monkeypatch.setattr(kmeans, "minibatch_step", lambda *a: calls.append(a))
    monkeypatch.setattr(kmeans, "assign_chunk", lambda *a: calls.append(a))
    assert minibatch_rows(X, w, numpy_c, numpy_n) == pytest.approx(inertia, rel=1e-10)
    np.testing.assert_array_equal(numpy_c, kernel_c)
    np.testing.assert_array_equal(numpy_n, kernel_n)
    assign_rows(X, C)
    assert calls == []
    # above NUMPY_ASSIGN_ENTRIES rows x centres, the kernels
    big = np.zeros((NUMPY_ASSIGN_ENTRIES // C.shape[0] + 1, 7), dtype=np.float32)
    assign_rows(big, C)
    minibatch_rows(big, np.ones(big.shape[0], dtype=np.float32), C.copy(), np.zeros(9))
    assert len(calls) == 2


def test_merge_is_mass_weighted_and_leaves_inputs() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 2)).astype(np.float32)
    C0 = rng.normal(size=(3, 2))
    kpass = MiniBatchKMeansPass(C0)
    ds = open_dataset(X, chunk_rows=100)
    chunks = list(ds.chunks())
    a = kpass.start()
    b = kpass.start()
    for c in chunks[:2]:
        a = kpass.step(a, c)
    for c in chunks[2:]:
        b = kpass.step(b, c)
    a_copy = a.centers.copy()
    m = kpass.merge(a, b)
    np.testing.assert_array_equal(a.centers, a_copy)
    w = a.gained + b.gained
    expected = (a.gained[:, None] * a.centers + b.gained[:, None] * b.centers) / w[:, None]
    np.testing.assert_allclose(m.centers, expected)
    assert m.rows == 400 and m.counts.sum() == pytest.approx(400.0)


def test_kmeans_plus_plus_picks_distinct_rows() -> None:
    X = np.repeat(np.arange(5, dtype=np.float32)[:, None], 10, axis=0)
    centers = kmeans_plus_plus(X, 5, np.random.default_rng(0))
    # D^2 sampling never picks a row at distance 0 while others are farther away
    np.testing.assert_array_equal(np.sort(centers[:, 0]), np.arange(5.0))


def test_streamed_kmeans_matches_sklearn_on_blobs() -> None:
    true = np.array([[0, 0], [6, 0], [0, 6], [6, 6], [3, 12]], dtype=np.float64)
    X = _blobs(400, true, 0.7, seed=3)
    ours = streamed_kmeans(open_dataset(X, chunk_rows=256), 5, epochs=2, seed=0, init_rows=500)
    ref = KMeans(5, n_init=5, random_state=0).fit(X).cluster_centers_
    assert ours.dtype == np.float32 and ours.shape == (5, 2)
    # same centres up to order
    d = ((ours[:, None, :] - ref[None]) ** 2).sum(axis=2)
    assert sorted(d.argmin(axis=1).tolist()) == list(range(5))
    assert d.min(axis=1).max() < 0.05**2 * 100


def test_streamed_kmeans_sequential_reference() -> None:
    # epochs=1 over an unshuffled-equivalent pass equals the kernel run chunk by chunk
    X = _blobs(100, np.array([[0.0, 0.0], [5.0, 5.0]]), 1.0, seed=4)
    ds = open_dataset(X, chunk_rows=50)
    C0 = np.array([[1.0, 1.0], [4.0, 4.0]])
    state = run_chunks(MiniBatchKMeansPass(C0), ds.chunks())
    C, n = C0.copy(), np.zeros(2)
    for start in range(0, 200, 50):
        part = X[start:start + 50]
        labels, _ = assign_chunk(part, C)
        for j in range(2):
            m = labels == j
            if m.any():
                C[j] = (n[j] * C[j] + part[m].astype(np.float64).sum(axis=0)) / (n[j] + m.sum())
                n[j] += m.sum()
    np.testing.assert_allclose(state.centers, C, rtol=1e-12)


def test_streamed_kmeans_needs_rows() -> None:
    with pytest.raises(DataError, match="at least 5 rows"):
        streamed_kmeans(np.zeros((3, 2), dtype=np.float32), 5)


def test_row_sample_pass_offers_only_rows_of_positive_weight() -> None:
    from streamlearn.engine import LocalEngine
    from streamlearn.solvers.kmeans import RowSamplePass

    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    junk = rng.normal(size=(300, 3)).astype(np.float32) * 100
    w = np.r_[np.ones(400), np.zeros(300)].astype(np.float32)
    engine = LocalEngine(progress=False)
    with_junk = engine.run(RowSamplePass(100, 3, 5), open_dataset(
        np.r_[X, junk], target=np.arange(700) % 2, weight=w, chunk_rows=128))
    plain = engine.run(RowSamplePass(100, 3, 5), open_dataset(
        X, target=np.arange(400) % 2, chunk_rows=128))
    # the rows of weight 0 (ids 400..699) are never offered: the sample is the one of
    # the positive rows alone, whose ids are the same
    assert len(with_junk) == 100 and with_junk.rows.max() < 400
    np.testing.assert_array_equal(np.sort(with_junk.rows), np.sort(plain.rows))
    order = np.argsort(with_junk.rows)
    np.testing.assert_array_equal(with_junk.values[order], X[np.sort(with_junk.rows)])
