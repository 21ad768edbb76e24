"""Passes over a few row ranges: the ranges, the merged result, and AdditiveSVC's describe,
calibration and pair screening from a sample of chunks on data of many chunks."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import log_loss

import streamlearn.solvers.additive.driver as additive_driver
from streamlearn.data import open_dataset
from streamlearn.engine import DaskEngine, DescribePass, LocalEngine, Reduction, recording
from streamlearn.engine.row_ranges import run_on_ranges, spread_ranges
from streamlearn.models.additive import AdditiveSVC
from streamlearn.solvers.additive.driver import (
    DESCRIBE_MIN_CHUNKS,
    DESCRIBE_SAMPLE_CHUNKS,
    DESCRIBE_SAMPLE_ROWS,
    HOLDOUT_SALT,
)
from streamlearn.solvers.holdout import Holdout


def test_spread_ranges_cover_the_rows_end_to_end() -> None:
    ranges = spread_ranges(1000, 30, 5)  # 34 chunks, the last of 10 rows
    starts = [a for a, _ in ranges]
    assert starts == [k * 30 for k in np.rint(np.linspace(0, 33, 5)).astype(int)]
    assert ranges[0][0] == 0 and ranges[-1] == (990, 1000)
    assert all(b - a == 30 for a, b in ranges[:-1])
    # no more ranges than chunks
    assert spread_ranges(100, 30, 16) == [(0, 30), (30, 60), (60, 90), (90, 100)]


def test_run_on_ranges_is_the_pass_over_the_rows_of_the_ranges(dask_client) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3)).astype(np.float32)
    X[:, 1] *= np.arange(2000) / 100  # rows stored in an order that matters
    ds = open_dataset(X, chunk_rows=100)
    ranges = spread_ranges(ds.n_rows, 100, 4)
    pass_ = DescribePass(list(ds.feature_names), sample_size=10_000)
    for engine in (LocalEngine(progress=False), DaskEngine(dask_client)):
        with recording() as log:
            got = run_on_ranges(engine, pass_, ds, ranges, description="sample")
        rows = np.concatenate([X[a:b] for a, b in ranges])
        np.testing.assert_allclose(got.mean, rows.mean(axis=0), rtol=1e-5)
        np.testing.assert_array_equal(got.max, rows.max(axis=0))
        assert got.n_rows == 400
        assert log.passes_over(ds.n_rows) == pytest.approx(0.2)
    walk = Reduction(start=lambda: 0, step=lambda s, c: s + c.n_rows,
                     merge=lambda a, b: a + b, kind="sequential")
    with pytest.raises(ValueError, match="reduction"):
        run_on_ranges(LocalEngine(progress=False), walk, ds, ranges, description="x")


def test_additive_describes_and_calibrates_many_chunks_from_a_sample() -> None:
    rng = np.random.default_rng(1)
    n_chunks, size = DESCRIBE_MIN_CHUNKS, DESCRIBE_SAMPLE_ROWS // DESCRIBE_SAMPLE_CHUNKS
    n = n_chunks * size

    def draw(rows: int) -> tuple[np.ndarray, np.ndarray]:
        X = rng.normal(size=(rows, 4)).astype(np.float32)
        return X, (X[:, 0] + np.sin(2 * X[:, 1]) + rng.normal(0, 0.3, rows) > 0).astype(int)

    X, y = draw(n)
    Xt, yt = draw(20_000)
    # one count of bases: each count tried would be two more epochs
    sampled = AdditiveSVC(epochs=2, tol=None, chunk_rows=size, interactions=0, n_bases=20,
                          progress=False).fit(X, y)
    # one chunk fewer than the rule asks: every row is read
    whole = AdditiveSVC(epochs=2, tol=None, chunk_rows=n // (n_chunks - 1) + 1, n_bases=20,
                        interactions=0, progress=False).fit(X, y)
    # a sample of chunks, 2 epochs and the calibration rows of a sample of chunks
    assert sampled.n_passes_ == pytest.approx(2 * DESCRIBE_SAMPLE_CHUNKS / n_chunks + 2)
    assert whole.n_passes_ == pytest.approx(4)
    # the row counts are exact: the held-out rows are a hash of the row number
    held = Holdout.fraction(0.1, 0 ^ HOLDOUT_SALT).mask(np.arange(n)).sum()
    assert sampled.n_calibration_ == whole.n_calibration_ == held > 0
    assert sampled.n_train_ == whole.n_train_ == n - held
    # the sample's ranges reach the whole data's central 90%
    lo, hi = sampled.feature_map_.lo_, sampled.feature_map_.hi_
    assert np.all(lo <= np.quantile(X, 0.05, axis=0))
    assert np.all(hi >= np.quantile(X, 0.95, axis=0))
    assert abs(sampled.score(Xt, yt) - whole.score(Xt, yt)) < 0.01
    assert sampled.calibrated_
    assert log_loss(yt, sampled.predict_proba(Xt)) < 1.05 * log_loss(yt,
                                                                    whole.predict_proba(Xt))


def test_additive_screens_pairs_of_many_chunks_on_the_sampled_chunks() -> None:
    """Pair screening reads the chunks of the describe sample, not every row, and still
    finds the planted pair."""
    rng = np.random.default_rng(2)
    n_chunks, size = DESCRIBE_MIN_CHUNKS, DESCRIBE_SAMPLE_ROWS // DESCRIBE_SAMPLE_CHUNKS
    n = n_chunks * size
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (2.0 * X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + rng.normal(0, 0.3, n) > 0)
    model = AdditiveSVC(epochs=2, tol=None, chunk_rows=size, interactions=1, pair_bases=8,
                        n_bases=20, progress=False).fit(X, y.astype(int))
    assert model.interactions_ == (("x0", "x1"),)
    share = DESCRIBE_SAMPLE_CHUNKS / n_chunks
    # per-feature model: describe and calibration on the sample, 2 epochs; the screening
    # on the sample; the model with the pair: 2 epochs and its calibration
    assert model.n_passes_ == pytest.approx(share + 2 + share + share + 2 + share)


def test_large_chunks_are_sampled_by_their_first_rows(monkeypatch) -> None:
    """Chunks larger than DESCRIBE_SAMPLE_RANGE_ROWS give the sample their first rows only:
    the same 16 ranges of that many rows whatever the chunk size, and the fit reads
    them, not the whole chunks."""
    rng = np.random.default_rng(3)
    size = DESCRIBE_SAMPLE_ROWS // DESCRIBE_SAMPLE_CHUNKS
    monkeypatch.setattr(additive_driver, "DESCRIBE_SAMPLE_RANGE_ROWS", size)
    n_chunks, chunk = DESCRIBE_MIN_CHUNKS, 3 * size
    n = n_chunks * chunk
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X[:, 0] + np.sin(2 * X[:, 1]) + rng.normal(0, 0.3, n) > 0).astype(int)
    ds = open_dataset(X, target=y, chunk_rows=chunk)
    ranges = additive_driver._sample_ranges(ds)
    assert ranges == spread_ranges(n, size, DESCRIBE_SAMPLE_CHUNKS)
    assert all(b - a == size and a % size == 0 for a, b in ranges)
    sample = additive_driver._sample_dataset(ds)
    assert sample is not None
    assert sum(c.n_rows for c in sample.chunks()) == DESCRIBE_SAMPLE_CHUNKS * size
    model = AdditiveSVC(epochs=2, tol=None, chunk_rows=chunk, interactions=0, n_bases=20,
                        progress=False).fit(X, y)
    # describe and calibration on the ranges, 2 epochs over every row
    share = DESCRIBE_SAMPLE_CHUNKS * size / n
    assert model.n_passes_ == pytest.approx(2 * share + 2)
