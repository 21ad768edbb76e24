"""Kernels of super-sparse machines against numpy references."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.solvers.prototypes import (
    approx_gradient_update,
    derivative_gradient_update,
    gram_update,
    lasso_cd,
    prototype_sq_distances,
    prototype_weights,
    rbf_gradient_update,
    rbf_similarities,
    weighted_residuals,
)
from tests.finite_differences import central_differences


def _problem(n: int = 60, d: int = 3, p: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    C = rng.normal(size=(p, d))
    y = rng.normal(size=n)
    v = rng.uniform(0.5, 2.0, size=n).astype(np.float32)
    return X, C, y, v


def _objective(X, C, y, v, gamma, lam):
    """Weighted ridge objective at its optimal (beta, b), by numpy on materialised S."""
    S = np.exp(-gamma * ((X.astype(np.float64)[:, None, :] - C[None]) ** 2).sum(-1))
    Z = np.hstack([S, np.ones((len(y), 1))])
    V = v.sum()
    A = Z.T @ (v[:, None] * Z) / V
    A[:-1, :-1] += lam * np.eye(C.shape[0])
    w = np.linalg.solve(A, Z.T @ (v * y) / V)
    e = Z @ w - y
    return (v * e * e).sum() / V + lam * (w[:-1] ** 2).sum(), w


def test_prototype_sq_distances_match_numpy():
    X, C, _, _ = _problem(n=37, d=5, p=6)
    w = np.linspace(0.5, 2.0, 5)
    ref = (w * (X.astype(np.float64)[:, None, :] - C[None]) ** 2).sum(-1)
    np.testing.assert_allclose(prototype_sq_distances(X, np.ascontiguousarray(C.T), w), ref,
                               rtol=1e-12)
    # scaled similarities are those of the scaled rows and prototypes
    scale = np.array([2.0, 0.5, 1.0, 3.0, 0.25])
    np.testing.assert_allclose(rbf_similarities(X, C, 0.3, scale),
                               rbf_similarities((X / scale).astype(np.float32), C / scale, 0.3),
                               rtol=1e-6)


def test_rbf_similarities_match_numpy():
    X, C, _, _ = _problem()
    ref = np.exp(-0.7 * ((X.astype(np.float64)[:, None, :] - C[None]) ** 2).sum(-1))
    np.testing.assert_allclose(rbf_similarities(X, C, 0.7), ref, rtol=1e-6)


def test_ridge_step_from_chunked_gram_equals_numpy_solve():
    X, C, y, v = _problem(n=80)
    gamma, lam = 0.5, 0.01
    p = C.shape[0]
    G = np.zeros((p + 1, p + 1))
    r = np.zeros((p + 1, 1))
    yy = weight = 0.0
    for a in range(0, 80, 25):  # chunks of unequal size
        S = rbf_similarities(X[a:a + 25], C, gamma)
        dyy, dw = gram_update(S, y[a:a + 25, None], v[a:a + 25], G, r)
        yy += dyy
        weight += dw
    assert np.isclose(weight, v.sum()) and np.isclose(yy, (v * y * y).sum())
    A = G / weight
    A[:p, :p] += lam * np.eye(p)
    w = np.linalg.solve(A, r[:, 0] / weight)
    _, ref = _objective(X, C, y, v, gamma, lam)
    np.testing.assert_allclose(w, ref, rtol=1e-6, atol=1e-8)


def test_gram_of_several_outputs_is_one_gram_and_a_right_hand_side_each():
    X, C, y, v = _problem(n=50)
    Y = np.column_stack([y, -2.0 * y + 1.0, np.sign(y)])
    S = rbf_similarities(X, C, 0.5)
    p = C.shape[0]
    G = np.zeros((p + 1, p + 1))
    R = np.zeros((p + 1, 3))
    yy, weight = gram_update(S, Y, v, G, R)
    Z = np.hstack([S, np.ones((50, 1))])
    np.testing.assert_allclose(G, Z.T @ (v[:, None] * Z), rtol=1e-6)
    np.testing.assert_allclose(R, Z.T @ (v[:, None] * Y), rtol=1e-6)
    assert np.isclose(yy, (v[:, None] * Y * Y).sum()) and np.isclose(weight, v.sum())


def test_weighted_residuals_match_numpy():
    X, C, y, v = _problem()
    S = rbf_similarities(X, C, 0.3)
    W = np.array([[0.5, 1.0], [-1.0, 0.0], [2.0, -0.5], [0.1, 0.2], [0.3, -0.1]])
    Y = np.column_stack([y, y * y])
    got = weighted_residuals(S, W, Y, v)
    np.testing.assert_allclose(got, v[:, None] * (S @ W[:-1] + W[-1] - Y), rtol=1e-6)
    np.testing.assert_allclose(prototype_weights(got, W), got @ W[:-1].T, rtol=1e-12)


@pytest.mark.parametrize("outputs", [1, 3])
def test_rbf_prototype_gradient_matches_finite_differences(outputs):
    # d/dc_k of (1/V) sum_i v_i ||S_i W + b - Y_i||^2 at fixed W, b
    X, C, y, v = _problem(n=40, d=3, p=3, seed=1)
    gamma = 0.4
    rng = np.random.default_rng(outputs)
    W = np.vstack([rng.normal(size=(3, outputs)), np.full((1, outputs), 0.2)])
    Y = np.column_stack([y * (c + 1) for c in range(outputs)])
    V = v.sum()

    def loss(C_):
        S_ = rbf_similarities(X, C_, gamma)
        e = S_ @ W[:-1] + W[-1] - Y
        return float((v[:, None] * e * e).sum() / V)

    S = rbf_similarities(X, C, gamma)
    M = prototype_weights(weighted_residuals(S, W, Y, v), W)
    acc = np.zeros_like(C)
    rbf_gradient_update(X, C, S, gamma, M, acc)
    grad = 2.0 / V * acc
    h = 1e-6
    numeric = central_differences(loss, C, h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-7)


def test_approx_and_supplied_derivative_gradients_match_numpy():
    X, C, _, _ = _problem(n=30)
    M = np.random.default_rng(3).normal(size=(30, C.shape[0]))
    diff = X.astype(np.float64)[:, None, :] - C[None]            # (n, p, d): x_i - c_k
    acc = np.zeros_like(C)
    approx_gradient_update(X, C, M, acc)
    np.testing.assert_allclose(acc, np.einsum("ik,ikf->kf", M, diff), rtol=1e-9)
    dS = np.ascontiguousarray(diff * 2.0)
    acc2 = np.zeros_like(C)
    derivative_gradient_update(dS, M, acc2)
    np.testing.assert_allclose(acc2, np.einsum("ik,ikf->kf", M, dS), rtol=1e-9)


def test_lasso_cd_matches_scikit_learn():
    from sklearn.linear_model import Lasso

    X, C, y, v = _problem(n=200, p=6, seed=2)
    v = np.ones_like(v)
    S = rbf_similarities(X, C, 0.5)
    p = C.shape[0]
    G = np.zeros((p + 1, p + 1))
    r = np.zeros((p + 1, 1))
    gram_update(S, y[:, None], v, G, r)
    n = len(y)
    lam = 0.02
    w = np.zeros(p + 1)
    lasso_cd(G / n, r[:, 0] / n, lam, w, 10_000, 1e-12)
    # scikit-learn: (1 / 2n) ||y - Sw - b||^2 + alpha ||w||_1, i.e. ours with alpha = lam / 2
    ref = Lasso(alpha=lam / 2, tol=1e-12, max_iter=100_000).fit(S, y)
    np.testing.assert_allclose(w[:p], ref.coef_, atol=1e-6)
    assert np.isclose(w[p], ref.intercept_, atol=1e-6)
    assert (w[:p] == 0).any() or lam == 0  # the penalty zeroes some coefficient here
