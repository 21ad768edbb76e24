"""The super-sparse driver and its new passes, against numpy references."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from streamlearn.data import Chunk, open_dataset
from streamlearn.engine import LocalEngine
from streamlearn.models.supersparse import SuperSparseRegressor
from streamlearn.solvers.supersparse import SuperSparseConfig, SuperSparseFit, fit
from streamlearn.solvers.supersparse.passes import FeatureSpreadPass, scale_gamma


def _config(**overrides) -> SuperSparseConfig:
    values = dict(grid=(4,), gamma="scale", standardize=True, lam=1e-2, coef="ridge", step=1.0,
                  max_iter=0,
                  tol=1e-5, solver="batch", repulsion=0.0, repulsion_decay=0.5,
                  init="random", tradeoff=0.0, validation_fraction=0.2,
                  target="regression", sign_error=False)
    values.update(overrides)
    return SuperSparseConfig(**values)


def test_driver_with_fixed_prototypes_is_the_weighted_ridge_closed_form():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3)).astype(np.float32) * np.array([1, 2, 4], dtype=np.float32)
    y = np.sin(X[:, 0]) + 0.1 * X[:, 2]
    v = rng.uniform(0.5, 2.0, size=240)
    C = rng.normal(size=(4, 3))
    dataset = open_dataset(X, target=y, weight=v.astype(np.float32), chunk_rows=64)
    fitted = fit(LocalEngine(progress=False), dataset, _config(init=C), seed=0)
    assert isinstance(fitted, SuperSparseFit) and fitted.n_prototypes == 4
    # the RBF works on the weighted-standardised features, gamma="scale" is 1 / 3 there, and
    # the fit's prototypes are the given ones in those units
    variances = np.cov(X.astype(np.float64).T, aweights=v, bias=True).diagonal()
    mean = v @ X.astype(np.float64) / v.sum()
    np.testing.assert_allclose(fitted.shift, mean, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(fitted.scale, np.sqrt(variances), rtol=1e-6)
    assert np.isclose(fitted.gamma, 1.0 / 3, rtol=1e-6)
    Xz = ((X - mean) / np.sqrt(variances)).astype(np.float32).astype(np.float64)
    Cz = (C - mean) / np.sqrt(variances)
    np.testing.assert_allclose(fitted.prototypes, Cz, rtol=1e-6, atol=1e-9)
    Z = np.hstack([np.exp(-fitted.gamma * ((Xz[:, None, :] - Cz[None]) ** 2).sum(-1)),
                   np.ones((240, 1))])
    p = v / v.sum()
    A = Z.T @ (p[:, None] * Z)
    A[np.arange(4), np.arange(4)] += 1e-2
    w = np.linalg.solve(A, Z.T @ (p * y))
    np.testing.assert_allclose(np.append(fitted.coef, fitted.intercept), w, rtol=1e-4,
                               atol=1e-7)
    J = p @ (Z @ w - y) ** 2 + 1e-2 * w[:-1] @ w[:-1]
    assert np.isclose(fitted.objective, J, rtol=1e-6)


def test_estimator_attributes_are_the_driver_result():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2)).astype(np.float32)
    y = X[:, 0] ** 2 - X[:, 1]
    model = SuperSparseRegressor(n_prototypes=4, gamma="scale", max_iter=5, tol=0.0,
                                 random_state=3, linear_part=False)
    with pytest.warns(ConvergenceWarning):
        model.fit(X, y)
    with pytest.warns(ConvergenceWarning):
        fitted = fit(LocalEngine(progress=False), open_dataset(X, target=y),
                     _config(max_iter=5, tol=0.0, lam=model.lam, solver=model.solver), seed=3)
    # the estimator shows the prototypes in the features' units
    np.testing.assert_allclose(model.prototypes_, fitted.prototypes * fitted.scale
                               + fitted.shift, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.dual_coef_, fitted.coef[:, 0])
    assert model.intercept_ == fitted.intercept[0]
    assert model.n_iter_ == fitted.n_iter == 5


def test_feature_spread_pass_merges_like_one_pass():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(90, 4)).astype(np.float32) * 3 + 1
    v = rng.uniform(0, 2, size=90).astype(np.float32)
    spread = FeatureSpreadPass(4)
    whole = spread.step(spread.start(), Chunk(X, None, 0, weight=v))
    parts = spread.merge(spread.step(spread.start(), Chunk(X[:40], None, 0, weight=v[:40])),
                         spread.step(spread.start(), Chunk(X[40:], None, 40, weight=v[40:])))
    assert np.isclose(scale_gamma(whole), scale_gamma(parts), rtol=1e-10)
    variances = np.cov(X.astype(np.float64).T, aweights=v, bias=True).diagonal()
    assert np.isclose(scale_gamma(whole), 1.0 / variances.sum(), rtol=1e-6)
    constant = spread.step(spread.start(), Chunk(np.ones((5, 4), np.float32), None, 0))
    assert scale_gamma(constant) == 1.0
