"""Bottom-k row sample: keys against a pure-Python splitmix64, sample against a full sort."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.solvers.row_sample import NOT_FULL, BottomKSample, keys_below, row_keys

MASK = 2**64 - 1


def splitmix64_ref(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def keys_ref(rows: np.ndarray, seed: int) -> np.ndarray:
    c = splitmix64_ref(seed % 2**64)
    return np.array([splitmix64_ref((int(r) % 2**64) ^ c) for r in rows], dtype=np.uint64)


def bottom_k_ref(n: int, k: int, seed: int) -> np.ndarray:
    """Row ids of the k smallest keys among rows 0..n-1, by key."""
    keys = keys_ref(np.arange(n), seed)
    return np.argsort(keys, kind="stable")[:k]


def test_splitmix64_reference_vector():
    # First output of the reference SplitMix64 generator seeded with 0.
    assert splitmix64_ref(0) == 0xE220A8397B1DCDAF
    assert row_keys(np.array([0], dtype=np.int64), 0)[0] == splitmix64_ref(0xE220A8397B1DCDAF)


@pytest.mark.parametrize("seed", [0, 1, -7, 2**63 + 5, 123456789])
def test_row_keys_match_reference(seed):
    rng = np.random.default_rng(0)
    rows = np.concatenate([np.arange(20), rng.integers(0, 2**62, 50), [2**63 - 1]])
    rows = rows.astype(np.int64)
    got = row_keys(rows, seed if seed < 2**63 else np.uint64(seed))
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, keys_ref(rows, seed))
    assert len(np.unique(got)) == len(rows)


def test_keys_below_matches_numpy():
    keys = row_keys(np.arange(500, dtype=np.int64), 3)
    for threshold in (np.uint64(0), np.sort(keys)[100], NOT_FULL):
        got = keys_below(keys, threshold)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.flatnonzero(keys < threshold))


def _chunks(X: np.ndarray, sizes: list[int]):
    bounds = np.cumsum([0, *sizes])
    return [(X[bounds[i]:bounds[i + 1]], np.arange(bounds[i], bounds[i + 1], dtype=np.int64))
            for i in range(len(sizes))]


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(0, 50), min_size=1, max_size=30),
       k=st.integers(1, 60), seed=st.integers(-2**63, 2**63 - 1), order=st.randoms())
def test_sample_is_independent_of_chunking_and_merge_order(sizes, k, seed, order):
    n = sum(sizes)
    X = np.random.default_rng(abs(seed) % 1000).normal(size=(n, 3)).astype(np.float32)
    expected = bottom_k_ref(n, k, seed)
    sequential = BottomKSample(k, 3, seed)
    for Xc, rows in _chunks(X, sizes):
        sequential.update(Xc, rows)
    parts = []
    for Xc, rows in _chunks(X, sizes):
        part = BottomKSample(k, 3, seed)
        # rows shuffled within the chunk, as with Chunk.index
        perm = np.random.default_rng(len(rows)).permutation(len(rows))
        parts.append(part.update(Xc[perm], rows[perm]))
    while len(parts) > 1:
        i, j = order.sample(range(len(parts)), 2)
        merged = parts[i].merge(parts[j])
        parts = [p for t, p in enumerate(parts) if t not in (i, j)] + [merged]
    for sample in (sequential, parts[0]):
        assert len(sample) == min(k, n)
        np.testing.assert_array_equal(sample.rows, expected)
        np.testing.assert_array_equal(sample.values, X[expected])
        np.testing.assert_array_equal(sample.keys, keys_ref(expected, seed))
        assert sample.values.dtype == np.float32


def test_threshold_and_seed():
    X = np.arange(200, dtype=np.float32).reshape(100, 2)
    rows = np.arange(100, dtype=np.int64)
    a = BottomKSample(10, 2, seed=0).update(X, rows)
    b = BottomKSample(10, 2, seed=1).update(X, rows)
    assert a.threshold == a.keys.max() and a.threshold != NOT_FULL
    assert BottomKSample(200, 2).update(X, rows).threshold == NOT_FULL
    assert set(a.rows.tolist()) != set(b.rows.tolist())
    with pytest.raises(ValueError, match="same k"):
        a.merge(b)
    with pytest.raises(ValueError, match="features"):
        a.update(np.zeros((3, 5), np.float32), np.arange(3))


def test_quantiles_of_small_data_are_exact():
    X = np.random.default_rng(5).exponential(size=(300, 2)).astype(np.float32)
    sample = BottomKSample(1000, 2).update(X, np.arange(300))
    probs = [0.0, 0.1, 0.5, 0.93, 1.0]
    np.testing.assert_allclose(sample.quantiles(probs),
                               np.quantile(X.astype(np.float64), probs, axis=0), rtol=1e-12)
    assert np.isnan(BottomKSample(4, 2).quantiles([0.5])).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sample_quantiles_within_dkw_bound(seed):
    n, k, d = 20_000, 1024, 3
    rng = np.random.default_rng(11)
    X = np.column_stack([rng.normal(size=n), rng.exponential(size=n),
                         rng.integers(0, 7, size=n)]).astype(np.float32)
    sample = BottomKSample(k, d, seed)
    for lo in range(0, n, 3000):
        sample.update(X[lo:lo + 3000], np.arange(lo, min(lo + 3000, n), dtype=np.int64))
    probs = np.linspace(0.01, 0.99, 25)
    q = sample.quantiles(probs)
    # DKW: P(sup |F_k - F| > eps) <= 2 exp(-2 k eps^2); union over the d + 1 checks and 3
    # seeds keeps the failure probability below 1e-6. Interpolating between order statistics
    # adds at most 1 / k.
    eps = math.sqrt(math.log(2 * 3 * (d + 1) / 1e-6) / (2 * k)) + 1.0 / k
    for j in range(d):
        column = np.sort(X[:, j])
        below = np.searchsorted(column, q[:, j], side="left") / n  # F(q-)
        at_or_below = np.searchsorted(column, q[:, j], side="right") / n  # F(q)
        assert np.all(probs >= below - eps), (j, probs - below)
        assert np.all(probs <= at_or_below + eps), (j, at_or_below - probs)
    # The sampled row ids themselves are uniform on 0..n-1.
    ids = np.sort(sample.rows) / n
    ecdf_gap = np.max(np.maximum(np.arange(1, k + 1) / k - ids, ids - np.arange(k) / k))
    assert ecdf_gap <= eps
