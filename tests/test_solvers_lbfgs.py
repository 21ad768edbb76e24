"""L-BFGS driver against scipy's L-BFGS-B on smooth problems with a known optimum."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der

from streamlearn.solvers.lbfgs import lbfgs_minimize


def _logistic(X: np.ndarray, y: np.ndarray, lam: float):
    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = X @ w
        value = np.mean(np.logaddexp(0.0, -y * z)) + lam * w @ w
        p = 1.0 / (1.0 + np.exp(y * z))
        grad = -(X.T @ (y * p)) / len(y) + 2.0 * lam * w
        return float(value), grad
    return fun


def test_reaches_scipy_optimum_of_regularised_logistic_regression() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8))
    y = np.sign(X @ rng.normal(size=8) + 0.5 * rng.normal(size=300))
    fun = _logistic(X, y, 1e-3)
    ref = minimize(fun, np.zeros(8), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 1000})
    res = lbfgs_minimize(fun, np.zeros(8), max_iter=200, gtol=1e-9)
    assert res.value == pytest.approx(ref.fun, abs=1e-10)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-5)
    np.testing.assert_allclose(res.grad, fun(res.x)[1], atol=1e-12)


def test_rosenbrock_matrix_shaped_variable() -> None:
    fun = lambda x: (rosen(x.ravel()), rosen_der(x.ravel()).reshape(x.shape))  # noqa: E731
    x0 = np.full((2, 2), -1.2)
    ref = minimize(lambda v: rosen(v), x0.ravel(), jac=rosen_der, method="L-BFGS-B",
                   options={"gtol": 1e-10, "maxiter": 2000})
    res = lbfgs_minimize(fun, x0, max_iter=500, gtol=1e-8)
    assert res.x.shape == (2, 2)
    np.testing.assert_allclose(res.x.ravel(), ref.x, atol=1e-4)
    np.testing.assert_allclose(res.x, 1.0, atol=1e-4)


def test_every_step_lowers_the_objective_and_start_saves_an_evaluation() -> None:
    rng = np.random.default_rng(1)
    A = rng.normal(size=(6, 6))
    H = A @ A.T + np.eye(6)
    b = rng.normal(size=6)
    seen: list[float] = []

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        seen.append(0.5 * x @ H @ x - b @ x)
        return seen[-1], H @ x - b

    x0 = np.zeros(6)
    res = lbfgs_minimize(fun, x0, max_iter=4, start=(0.0, -b))
    assert res.n_eval == len(seen)  # the start was not evaluated again
    assert res.n_iter == 4
    closed_form = -0.5 * b @ np.linalg.solve(H, b)
    assert closed_form <= res.value < 0.0
    values = [lbfgs_minimize(fun, x0, max_iter=n).value for n in range(1, 8)]
    assert np.all(np.diff(values) <= 0.0)
    assert lbfgs_minimize(fun, x0, max_iter=100).value == pytest.approx(closed_form, abs=1e-12)


def test_a_bound_per_entry_stops_only_when_every_entry_is_below_its_own() -> None:
    # a separable quadratic whose second coordinate converges slowly under a bad scaling
    scale = np.array([1.0, 1e-3])

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        return float(0.5 * np.sum(scale * x * x)), scale * x

    loose = lbfgs_minimize(fun, np.ones(2), max_iter=100, gtol=np.array([1e-6, 1e-2]))
    tight = lbfgs_minimize(fun, np.ones(2), max_iter=100, gtol=np.array([1e-6, 1e-8]))
    for res, bound in ((loose, [1e-6, 1e-2]), (tight, [1e-6, 1e-8])):
        assert np.all(np.abs(res.grad) <= bound)
    assert abs(loose.grad[1]) > 1e-8  # the loose bound let it stop earlier
    assert loose.n_iter < tight.n_iter


def test_measure_judges_the_stop_on_the_gradient_in_the_problems_coordinates() -> None:
    # F(v) = v.Hv / 2 - b.v minimised over theta = L^T v: the gradient L-BFGS sees is
    # L^-1 (Hv - b), the stop must read Hv - b itself
    rng = np.random.default_rng(3)
    A = rng.normal(size=(8, 8))
    H = A @ A.T + 0.01 * np.eye(8)
    b = rng.normal(size=8)
    L = np.linalg.cholesky(np.diag(rng.uniform(1.0, 4.0, size=8))) * 50.0
    # theta's gradient is some 100 times smaller than v's
    solution = np.linalg.solve(H, b)

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        v = np.linalg.solve(L.T, theta)
        return float(0.5 * v @ H @ v - b @ v), np.linalg.solve(L, H @ v - b)

    gtol = 1e-6
    plain = lbfgs_minimize(fun, np.zeros(8), max_iter=500, gtol=gtol)
    judged = lbfgs_minimize(fun, np.zeros(8), max_iter=500, gtol=gtol,
                            measure=lambda g: L @ g)
    for res in (plain, judged):
        assert np.all(np.abs(res.grad) <= gtol)
    v_plain, v_judged = np.linalg.solve(L.T, plain.x), np.linalg.solve(L.T, judged.x)
    assert np.max(np.abs(H @ v_judged - b)) <= gtol  # recomputed in v's coordinates
    assert np.max(np.abs(H @ v_plain - b)) > gtol  # the plain rule stopped short of it
    assert plain.n_iter < judged.n_iter < 500
    np.testing.assert_allclose(v_judged, solution, rtol=1e-3)
