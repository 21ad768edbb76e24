"""Trigonometric embedding of paper 000, Table 1, against closed forms and an FFT."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.features.fourier import (
    HALF_WIDTH,
    WHOLE_PERIOD,
    FourierMap,
    cos_sin_half_pi,
    cos_sin_pi,
    fourier_encode_frequency_major,
    fourier_encode_row,
    fourier_scaling,
    fourier_transform_dense,
    fourier_weights,
)


def closed_form(
    X: np.ndarray, lo, hi, n_terms: int, order: int, half_width: float = 0.5
) -> np.ndarray:
    """[cos(k pi t) / k^d, sin(k pi t) / k^d] for k = 1..K, where t runs linearly from
    -half_width at lo to half_width at hi, x clamped to [lo, hi] first."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    x = np.clip(X.astype(np.float64), lo, hi)
    t = -half_width + 2.0 * half_width * (x - lo) / (hi - lo)
    cols = []
    for f in range(X.shape[1]):
        for k in range(1, n_terms + 1):
            cols.append(np.cos(k * np.pi * t[:, f]) / k**order)
            cols.append(np.sin(k * np.pi * t[:, f]) / k**order)
    return np.stack(cols, axis=1)


def test_weights_are_table_1():
    np.testing.assert_allclose(fourier_weights(4, 1), [1, 1 / 2, 1 / 3, 1 / 4])
    np.testing.assert_allclose(fourier_weights(4, 2), [1, 1 / 4, 1 / 9, 1 / 16])
    with pytest.raises(ValueError):
        fourier_weights(3, 0)


@pytest.mark.parametrize("half_width", [HALF_WIDTH, WHOLE_PERIOD, 0.3])
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("K", [1, 6, 64])
def test_encode_row_and_dense_transform_match_closed_form(order, K, half_width):
    """K = 1 writes the first frequency only; K = 64 runs the recurrence long enough for a
    float32 drift to show, were the weights 1 / k^d not scaling it back. The whole period
    is the scaling of maps saved before the half period, which must encode as they did;
    0.3, no map's, takes the encoders' general path."""
    lo = np.array([0.0, -5.0, 2.0])
    hi = np.array([1.0, 5.0, 3.0])
    X = np.random.default_rng(0).uniform(-6, 6, (30, 3)).astype(np.float32)
    w = fourier_weights(K, order)
    ref = closed_form(X, lo, hi, K, order, half_width)
    idx = np.empty(3 * 2 * K, dtype=np.int32)
    val = np.empty(3 * 2 * K, dtype=np.float32)
    for r, row in enumerate(X):
        nnz = fourier_encode_row(row, lo, hi, half_width, w, False, idx, val)
        assert nnz == 3 * 2 * K
        np.testing.assert_array_equal(idx, np.arange(3 * 2 * K))
        np.testing.assert_allclose(val, ref[r], rtol=0, atol=2e-7)
    out = np.empty_like(ref, dtype=np.float32)
    fourier_transform_dense(X, lo, hi, half_width, w, False, out)
    np.testing.assert_allclose(out, ref, rtol=0, atol=2e-7)
    if half_width == HALF_WIDTH:
        np.testing.assert_array_equal(FourierMap(K, order).fit(lo, hi).transform(X), out)


@pytest.mark.parametrize("half_width", [HALF_WIDTH, WHOLE_PERIOD, 0.3])
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("K", [1, 6, 64])
def test_frequency_major_encoding_is_the_closed_form_in_its_order(order, K, half_width):
    lo = np.array([0.0, -5.0, 2.0, 0.0, 1.0])
    hi = np.array([1.0, 5.0, 3.0, 4.0, 1.5])
    X = np.random.default_rng(1).uniform(-6, 6, (30, 5)).astype(np.float32)
    w = fourier_weights(K, order)
    ref = closed_form(X, lo, hi, K, order, half_width)
    # entry c nf + f is column c of feature f's block: the blocks transposed
    columns = np.arange(5 * 2 * K).reshape(5, 2 * K).T.reshape(-1)
    work = [np.empty(5, dtype=np.float32) for _ in range(4)]
    val = np.empty(5 * 2 * K, dtype=np.float32)
    for r, row in enumerate(X):
        n = fourier_encode_frequency_major(row, *fourier_scaling(lo, hi), half_width, w, *work, val)
        assert n == 5 * 2 * K
        np.testing.assert_allclose(val, ref[r, columns], rtol=0, atol=2e-7)


@pytest.mark.parametrize("order", [1, 2])
def test_penalty_is_pi_power_times_squared_weights(order):
    """int_{-1}^{1} f^(d)(t)^2 dt = pi^(2d) ||w||^2 for f = w . Psi^d over the whole period,
    measured by FFT. A map's range is the period's middle half, so the period is sampled
    through the kernel with the whole period as its range (then t = x)."""
    K, M = 5, 64
    t = (-1.0 + 2.0 * np.arange(M) / M).astype(np.float32)
    cols = np.empty((M, 2 * K), dtype=np.float32)
    fourier_transform_dense(
        t[:, None],
        np.array([-1.0]),
        np.array([1.0]),
        WHOLE_PERIOD,
        fourier_weights(K, order),
        False,
        cols,
    )
    w = np.random.default_rng(1).normal(size=2 * K)
    f = cols.astype(np.float64) @ w
    F = np.fft.rfft(f) / M
    k = np.arange(F.size)
    # f = sum a_k cos(k pi t) + b_k sin(k pi t) with F_k = (a_k - i b_k) / 2
    penalty = np.sum((k * np.pi) ** (2 * order) * 4 * np.abs(F) ** 2)
    np.testing.assert_allclose(penalty, np.pi ** (2 * order) * np.sum(w**2), rtol=1e-5)


def test_inputs_outside_the_range_are_clamped():
    m = FourierMap(3).fit([0.0], [2.0])
    np.testing.assert_array_equal(m.transform([[-7.0]]), m.transform([[0.0]]))
    np.testing.assert_array_equal(m.transform([[9.0]]), m.transform([[2.0]]))
    assert m.n_output_features(5) == 30


def test_a_range_is_half_the_period_so_its_ends_differ():
    """At lo (t = -1/2) and hi (t = 1/2): cos(k pi t) agree, sin(k pi t) = -+sin(k pi / 2),
    so the first frequency's sine column tells the ends apart (the whole period could not:
    every column agreed there)."""
    K = 4
    m = FourierMap(K).fit([2.0], [6.0])
    ends = m.transform([[2.0], [6.0]]).astype(np.float64)
    k = np.arange(1, K + 1)
    expected = np.empty((2, 2 * K))
    expected[:, 0::2] = np.cos(k * np.pi / 2) / k
    expected[0, 1::2] = -np.sin(k * np.pi / 2) / k
    expected[1, 1::2] = np.sin(k * np.pi / 2) / k
    np.testing.assert_allclose(ends, expected, atol=2e-7)
    assert m.half_width_ == HALF_WIDTH
    # the sine of the first frequency rises from lo to hi
    grid = np.linspace(2.0, 6.0, 50)[:, None]
    assert np.all(np.diff(m.transform(grid)[:, 1]) > 0)


def test_a_map_saved_before_the_half_period_keeps_the_whole_period():
    """A dict without half_width_ (and a map object without the attribute, as the model
    files' codec rebuilds one) encodes with the whole period, as when it was saved."""
    lo, hi = np.array([0.0, -1.0]), np.array([1.0, 3.0])
    X = np.random.default_rng(3).uniform(-2, 4, (10, 2)).astype(np.float32)
    data = FourierMap(3, 2).fit(lo, hi).to_dict()
    assert data["state"]["half_width_"] == HALF_WIDTH
    np.testing.assert_allclose(
        FourierMap.from_dict(data).transform(X), closed_form(X, lo, hi, 3, 2, HALF_WIDTH), atol=2e-7
    )
    del data["state"]["half_width_"]
    old = FourierMap.from_dict(data)
    assert old.half_width_ == WHOLE_PERIOD
    np.testing.assert_allclose(
        old.transform(X), closed_form(X, lo, hi, 3, 2, WHOLE_PERIOD), atol=2e-7
    )
    bare = FourierMap.__new__(FourierMap)
    vars(bare).update({k: v for k, v in vars(old).items() if k != "half_width_"})
    np.testing.assert_array_equal(bare.transform(X), old.transform(X))
    data["state"]["half_width_"] = 0.25
    with pytest.raises(ValueError, match="half_width_"):
        FourierMap.from_dict(data)


def test_cos_sin_pi_matches_the_c_library_over_the_whole_range():
    t = np.concatenate([np.linspace(-1.0, 1.0, 4001), [-1.0, -0.5, 0.0, 0.5, 1.0]])
    got = np.array([cos_sin_pi(v) for v in t])
    np.testing.assert_allclose(got[:, 0], np.cos(np.pi * t), rtol=0, atol=1e-10)
    np.testing.assert_allclose(got[:, 1], np.sin(np.pi * t), rtol=0, atol=1e-10)


def test_cos_sin_half_pi_matches_the_c_library_over_the_whole_range():
    """The polynomials' fitted error is 1.33e-11 (sine) and 7.5e-13 (cosine); the grid is
    finer than their oscillation, the ends and the middle exact inputs."""
    t = np.concatenate([np.linspace(-1.0, 1.0, 200_001), [-1.0, -0.5, 0.0, 0.5, 1.0],
                        np.nextafter(1.0, 0.0) * np.array([-1.0, 1.0]), [1e-300, -1e-300]])
    got = np.array([cos_sin_half_pi(v) for v in t])
    np.testing.assert_allclose(got[:, 0], np.cos(0.5 * np.pi * t), rtol=0, atol=1.5e-11)
    np.testing.assert_allclose(got[:, 1], np.sin(0.5 * np.pi * t), rtol=0, atol=1.5e-11)
    # odd and even exactly, sin(0) = 0
    mirrored = np.array([cos_sin_half_pi(-v) for v in t])
    np.testing.assert_array_equal(mirrored[:, 0], got[:, 0])
    np.testing.assert_array_equal(mirrored[:, 1], -got[:, 1])
    assert cos_sin_half_pi(0.0)[1] == 0.0


def test_scaling_maps_the_range_to_the_unit_interval():
    """t = (x - centre) scale is the closed form 2 (x - lo) / (hi - lo) - 1."""
    lo = np.array([0.0, -5.0, 2.0, 1e6, -3e-4])
    hi = np.array([1.0, 5.0, 3.0, 1e6 + 10.0, 7e-4])
    centre, scale = fourier_scaling(lo, hi)
    x = np.random.default_rng(4).uniform(lo, hi, (50, 5))
    x = np.vstack([x, lo, hi])
    np.testing.assert_allclose((x - centre) * scale, 2.0 * (x - lo) / (hi - lo) - 1.0,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose((lo - centre) * scale, -1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose((hi - centre) * scale, 1.0, rtol=0, atol=1e-15)


def test_every_feature_and_zero_preserving_encodings_agree_where_both_apply():
    """Zero-preserving columns are the plain ones minus their value at x = 0."""
    lo, hi = np.array([-2.0, -1.0, 0.5]), np.array([3.0, 4.0, 2.5])
    X = np.random.default_rng(2).uniform(-3, 5, (20, 3)).astype(np.float32)
    X[3, 1] = 0.0
    K = 7
    w = fourier_weights(K, 1)
    at_zero = closed_form(np.zeros((1, 3), np.float32), lo, hi, K, 1)[0]
    idx = np.empty(3 * 2 * K, dtype=np.int32)
    val = np.empty(3 * 2 * K, dtype=np.float32)
    for row in X:
        plain = np.zeros(3 * 2 * K)
        nnz = fourier_encode_row(row, lo, hi, HALF_WIDTH, w, False, idx, val)
        plain[idx[:nnz]] = val[:nnz]
        shifted = np.zeros(3 * 2 * K)
        nnz = fourier_encode_row(row, lo, hi, HALF_WIDTH, w, True, idx, val)
        shifted[idx[:nnz]] = val[:nnz]
        expected = np.where(np.repeat(row != 0.0, 2 * K), plain - at_zero, 0.0)
        np.testing.assert_allclose(shifted, expected, atol=2e-6)
        by_hand = closed_form(row[None, :], lo, hi, K, 1)[0] - at_zero
        np.testing.assert_allclose(
            shifted, np.where(np.repeat(row != 0.0, 2 * K), by_hand, 0.0), atol=2e-6
        )
