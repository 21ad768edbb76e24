"""Kernels of super-sparse machines against numpy references."""

from __future__ import annotations

import numpy as np

from streamlearn.solvers.prototypes import (
    approx_gradient_update,
    derivative_gradient_update,
    gram_update,
    lasso_cd,
    rbf_gradient_update,
    rbf_similarities,
    weighted_residuals,
)


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


def test_rbf_similarities_match_numpy():
    X, C, _, _ = _problem()
    ref = np.exp(-0.7 * ((X.astype(np.float64)[:, None, :] - C[None]) ** 2).sum(-1))
    np.testing.assert_allclose(rbf_similarities(X, C, 0.7), ref, rtol=1e-6)


def test_ridge_step_from_chunked_gram_equals_numpy_solve():
    X, C, y, v = _problem(n=80)
    gamma, lam = 0.5, 0.01
    p = C.shape[0]
    G = np.zeros((p + 1, p + 1))
    r = np.zeros(p + 1)
    yy = weight = 0.0
    for a in range(0, 80, 25):  # chunks of unequal size
        S = rbf_similarities(X[a:a + 25], C, gamma)
        dyy, dw = gram_update(S, y[a:a + 25], v[a:a + 25], G, r)
        yy += dyy
        weight += dw
    assert np.isclose(weight, v.sum()) and np.isclose(yy, (v * y * y).sum())
    A = G / weight
    A[:p, :p] += lam * np.eye(p)
    w = np.linalg.solve(A, r / weight)
    _, ref = _objective(X, C, y, v, gamma, lam)
    np.testing.assert_allclose(w, ref, rtol=1e-6, atol=1e-8)


def test_weighted_residuals_match_numpy():
    X, C, y, v = _problem()
    S = rbf_similarities(X, C, 0.3)
    beta = np.array([0.5, -1.0, 2.0, 0.1])
    got = weighted_residuals(S, beta, 0.3, y, v)
    np.testing.assert_allclose(got, v * (S @ beta + 0.3 - y), rtol=1e-6)


def test_rbf_prototype_gradient_matches_finite_differences():
    # d/dc_k of (1/V) sum_i v_i (S_i beta + b - y_i)^2 at fixed beta, b
    X, C, y, v = _problem(n=40, d=3, p=3, seed=1)
    gamma, b = 0.4, 0.2
    beta = np.array([1.5, -0.7, 0.9])
    V = v.sum()

    def loss(C_):
        S_ = rbf_similarities(X, C_, gamma)
        e = S_ @ beta + b - y
        return float((v * e * e).sum() / V)

    S = rbf_similarities(X, C, gamma)
    res = weighted_residuals(S, beta, b, y, v)
    acc = np.zeros_like(C)
    rbf_gradient_update(X, C, S, gamma, res, acc)
    grad = 2.0 / V * beta[:, None] * acc
    h = 1e-6
    numeric = np.zeros_like(C)
    for k in range(C.shape[0]):
        for f in range(C.shape[1]):
            up, down = C.copy(), C.copy()
            up[k, f] += h
            down[k, f] -= h
            numeric[k, f] = (loss(up) - loss(down)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-7)


def test_approx_and_supplied_derivative_gradients_match_numpy():
    X, C, _, _ = _problem(n=30)
    res = np.random.default_rng(3).normal(size=30)
    diff = X.astype(np.float64)[:, None, :] - C[None]            # (n, p, d): x_i - c_k
    acc = np.zeros_like(C)
    approx_gradient_update(X, C, res, acc)
    np.testing.assert_allclose(acc, np.einsum("i,ikf->kf", res, diff), rtol=1e-9)
    dS = np.ascontiguousarray(diff * 2.0)
    acc2 = np.zeros_like(C)
    derivative_gradient_update(dS, res, acc2)
    np.testing.assert_allclose(acc2, np.einsum("i,ikf->kf", res, dS), rtol=1e-9)


def test_lasso_cd_matches_scikit_learn():
    from sklearn.linear_model import Lasso

    X, C, y, v = _problem(n=200, p=6, seed=2)
    v = np.ones_like(v)
    S = rbf_similarities(X, C, 0.5)
    p = C.shape[0]
    G = np.zeros((p + 1, p + 1))
    r = np.zeros(p + 1)
    gram_update(S, y, v, G, r)
    n = len(y)
    lam = 0.02
    w = np.zeros(p + 1)
    lasso_cd(G / n, r / n, lam, w, 10_000, 1e-12)
    # scikit-learn: (1 / 2n) ||y - Sw - b||^2 + alpha ||w||_1, i.e. ours with alpha = lam / 2
    ref = Lasso(alpha=lam / 2, tol=1e-12, max_iter=100_000).fit(S, y)
    np.testing.assert_allclose(w[:p], ref.coef_, atol=1e-6)
    assert np.isclose(w[p], ref.intercept_, atol=1e-6)
    assert (w[:p] == 0).any() or lam == 0  # the penalty zeroes some coefficient here
