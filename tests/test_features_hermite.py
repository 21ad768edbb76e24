"""Hermite embedding of paper 000, Table 1, against numpy's HermiteE series and quadrature."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.polynomial import hermite_e as He

from streamlearn.features.hermite import (
    HermiteMap,
    hermite_encode_row,
    hermite_transform_dense,
    hermite_weights,
)


def table_1_weight(n: int, order: int) -> float:
    if order == 1:
        return 1.0 / math.sqrt(n * math.factorial(n))
    return 1.0 if n == 1 else 1.0 / math.sqrt(n * (n - 1) * math.factorial(n))


def reference(X: np.ndarray, mean, std, n_terms: int, order: int, clip=np.inf) -> np.ndarray:
    """c_n He_n(z) for n = 1..K via numpy.polynomial.hermite_e.hermeval."""
    z = np.clip((X.astype(np.float64) - mean) / std, -clip, clip)
    cols = []
    for f in range(X.shape[1]):
        for n in range(1, n_terms + 1):
            c = np.zeros(n + 1)
            c[n] = table_1_weight(n, order)
            cols.append(He.hermeval(z[:, f], c))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("order", [1, 2])
def test_weights_are_table_1(order):
    np.testing.assert_allclose(hermite_weights(6, order), [table_1_weight(n, order)
                                                            for n in range(1, 7)])


def test_order_1_and_2_agree_on_the_first_two_terms():
    # Table 3 of the paper reports identical results for d = 1, 2 with 1 or 2 bases.
    np.testing.assert_allclose(hermite_weights(2, 1), hermite_weights(2, 2))


@pytest.mark.parametrize("order", [1, 2])
def test_encode_row_and_dense_transform_match_hermeval(order):
    mean = np.array([0.0, 3.0])
    std = np.array([1.0, 0.5])
    X = np.random.default_rng(0).normal(size=(25, 2)).astype(np.float32) * [1.0, 0.5] + [0, 3]
    X = X.astype(np.float32)
    K = 6
    w = hermite_weights(K, order)
    ref = reference(X, mean, std, K, order)
    idx = np.empty(2 * K, dtype=np.int32)
    val = np.empty(2 * K, dtype=np.float32)
    for r, row in enumerate(X):
        nnz = hermite_encode_row(row, mean, std, w, np.inf, False, idx, val)
        assert nnz == 2 * K
        np.testing.assert_array_equal(idx, np.arange(2 * K))
        np.testing.assert_allclose(val, ref[r], rtol=1e-5, atol=1e-6)
    out = np.empty_like(ref, dtype=np.float32)
    hermite_transform_dense(X, mean, std, w, np.inf, False, out)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(HermiteMap(K, order).fit(mean, std).transform(X), out)


def test_clip_clamps_standardised_inputs():
    X = np.array([[-10.0], [0.5], [10.0]], dtype=np.float32)
    got = HermiteMap(4, 1, clip=2.0).fit([0.0], [1.0]).transform(X)
    np.testing.assert_allclose(got, reference(X, 0.0, 1.0, 4, 1, clip=2.0), rtol=1e-6)


@pytest.mark.parametrize("order", [1, 2])
def test_derivatives_are_orthonormal_for_the_gaussian_weight(order):
    """int f^(d)(z)^2 exp(-z^2/2) dz = sqrt(2 pi) sum_n w_n^2 (n >= d) for f = w . Psi^d.

    The polynomial f is recovered from the map's own output by a HermiteE least-squares fit,
    differentiated with hermeder and integrated with Gauss-HermiteE quadrature.
    """
    K = 5
    m = HermiteMap(K, order).fit([0.0], [1.0])
    z = np.linspace(-3, 3, 200).astype(np.float32)
    w = np.random.default_rng(2).normal(size=K)
    f = m.transform(z[:, None]).astype(np.float64) @ w
    coef = He.hermefit(z.astype(np.float64), f, K)
    nodes, qw = He.hermegauss(K + 2)
    penalty = np.sum(qw * He.hermeval(nodes, He.hermeder(coef, order)) ** 2)
    unpenalised = order - 1  # He_1 has no second derivative
    expected = math.sqrt(2 * math.pi) * np.sum(w[unpenalised:] ** 2)
    np.testing.assert_allclose(penalty, expected, rtol=1e-4)


def test_zero_std_becomes_one():
    m = HermiteMap(3).fit([1.0, 2.0], [0.0, 2.0])
    np.testing.assert_array_equal(m.std_, [1.0, 2.0])
