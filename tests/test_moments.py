"""Chunk moments and their parallel merge against numpy on the whole array."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.engine.moments import NUMPY_MOMENTS_ENTRIES, chunk_moments_kernel
from streamlearn.solvers.moments import chunk_moments, empty_moments, merge_moments


def _reference(X: np.ndarray):
    X64 = X.astype(np.float64)
    mean = X64.mean(axis=0)
    return X.shape[0], mean, ((X64 - mean) ** 2).sum(axis=0), X.min(axis=0), X.max(axis=0)


def _data(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(loc=rng.uniform(-5, 5, d), scale=rng.uniform(0.5, 3, d), size=(n, d))
    return np.ascontiguousarray(X, dtype=np.float32)


def _assert_matches(got, ref) -> None:
    assert got[0] == ref[0]
    # atol for means that cancel to zero, relative to the data's scale
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-9, atol=1e-12 * np.abs(ref[3:]).max())
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-9)
    np.testing.assert_array_equal(got[3], ref[3])
    np.testing.assert_array_equal(got[4], ref[4])
    assert got[3].dtype == np.float32 and got[4].dtype == np.float32


def test_chunk_moments_matches_numpy():
    X = _data(257, 4, seed=1)
    got = chunk_moments(X)
    _assert_matches(got, _reference(X))
    assert got[1].dtype == np.float64 and got[2].dtype == np.float64


@pytest.mark.parametrize("n", [0, 1, 257, NUMPY_MOMENTS_ENTRIES // 4 + 1])
def test_numpy_and_kernel_moments_give_the_same_bits(n):
    # chunk_moments takes numpy up to NUMPY_MOMENTS_ENTRIES values, the kernel above
    X = _data(n, 4, seed=4)
    X[: n // 3] *= 1e4
    kernel = chunk_moments_kernel(X)
    got = chunk_moments(X)
    assert got[0] == kernel[0] == n
    for a, b in zip(got[1:], kernel[1:], strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    if n:
        _assert_matches(got, _reference(X))


def test_chunk_moments_of_empty_chunk_is_merge_identity():
    count, mean, m2, lo, hi = chunk_moments(np.empty((0, 3), dtype=np.float32))
    assert count == 0
    np.testing.assert_array_equal(mean, 0.0)
    np.testing.assert_array_equal(m2, 0.0)
    assert np.all(np.isposinf(lo)) and np.all(np.isneginf(hi))
    X = _data(10, 3, seed=2)
    ref = _reference(X)
    part = chunk_moments(X)
    for merged in (merge_moments(part, empty_moments(3)), merge_moments(empty_moments(3), part),
                   merge_moments(chunk_moments(np.empty((0, 3), np.float32)), part)):
        _assert_matches(merged, ref)
    assert merge_moments(empty_moments(3), empty_moments(3)).count == 0


def test_variance_is_stable_under_a_large_offset():
    # Sum-of-squares formulas lose every digit here: E[x^2] ~ 1e12 while var ~ 1.
    rng = np.random.default_rng(3)
    X = (1e6 + rng.normal(size=(5000, 2))).astype(np.float32)
    ref = _reference(X)
    merged = empty_moments(2)
    for lo in range(0, 5000, 700):
        merged = merge_moments(merged, chunk_moments(X[lo:lo + 700]))
    _assert_matches(merged, ref)
    np.testing.assert_allclose(merged.m2 / merged.count, X.astype(np.float64).var(axis=0),
                               rtol=1e-9)


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(0, 50), min_size=1, max_size=25),
       d=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_merge_in_any_order_matches_unchunked(sizes, d, seed):
    n = sum(sizes)
    X = _data(n, d, seed)
    bounds = np.cumsum([0, *sizes])
    parts = [chunk_moments(X[bounds[i]:bounds[i + 1]]) for i in range(len(sizes))]
    rng = np.random.default_rng(seed)
    while len(parts) > 1:
        i, j = rng.choice(len(parts), size=2, replace=False)
        merged = merge_moments(parts[i], parts[j])
        parts = [p for k, p in enumerate(parts) if k not in (i, j)] + [merged]
    got = merge_moments(empty_moments(d), parts[0])
    if n == 0:
        assert got.count == 0
        return
    _assert_matches(got, _reference(X))


def test_merge_rejects_different_widths():
    with pytest.raises(ValueError, match="features"):
        merge_moments(empty_moments(2), empty_moments(3))


@pytest.mark.parametrize("sparse", [False, True])
def test_feature_moments_pass_leaves_out_rows_of_weight_zero(sparse):
    import scipy.sparse as sp

    from streamlearn.data import open_dataset
    from streamlearn.engine import LocalEngine
    from streamlearn.engine.moments import FeatureMomentsPass

    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.5] = 0.0
    w = rng.integers(0, 3, size=500).astype(np.float32)  # a third of the rows weigh 0
    X[w == 0] *= 1000.0  # far away: any trace of them moves every moment
    data = sp.csr_matrix(X) if sparse else X
    ds = open_dataset(data, target=np.arange(500) % 2, weight=w, chunk_rows=64)
    got = LocalEngine(progress=False).run(FeatureMomentsPass(4), ds, shuffle=True, seed=1)
    kept = X[w > 0].astype(np.float64)  # numpy, over the rows of positive weight
    assert got.count == len(kept)
    np.testing.assert_allclose(got.mean, kept.mean(axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.m2, ((kept - kept.mean(axis=0)) ** 2).sum(axis=0),
                               rtol=1e-9)
    np.testing.assert_array_equal(got.minimum, kept.min(axis=0).astype(np.float32))
    np.testing.assert_array_equal(got.maximum, kept.max(axis=0).astype(np.float32))
