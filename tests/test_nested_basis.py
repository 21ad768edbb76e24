"""The interval parametrisation of nested ShareBoost columns (stumps of a feature, balls of
a centre) against dense matrices, and the corrective step's minimiser with and without it."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn import LocalEngine, open_dataset
from streamlearn.solvers.shareboost import ShareBoostConfig
from streamlearn.solvers.shareboost.columns import LinearColumns, StumpColumns
from streamlearn.solvers.shareboost.driver import corrective_step
from streamlearn.solvers.shareboost.nested_basis import NestedBasis


def dense_map(group: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """``D`` with ``W = D v``: a column's weight is its interval value minus the value of
    the next larger column of its group, built by a double loop."""
    T = group.shape[0]
    D = np.eye(T)
    for i in range(T):
        larger = [j for j in range(T) if group[j] == group[i] and rank[j] > rank[i]]
        if larger:
            D[i, min(larger, key=lambda j: rank[j])] = -1.0
    return D


def test_maps_match_the_dense_matrix() -> None:
    rng = np.random.default_rng(0)
    group = np.array([3, 1, 3, 0, 1, 3, 2])
    rank = np.array([5, 2, 1, 7, 9, 30, 0])
    basis = NestedBasis.of(group, rank)
    D = dense_map(group, rank)
    v = rng.normal(size=(7, 4, 2))
    g = rng.normal(size=(7, 4, 2))
    flat = (7, 8)
    np.testing.assert_allclose(basis.weights(v).reshape(flat), D @ v.reshape(flat))
    W = basis.weights(v)
    np.testing.assert_allclose(basis.values(W), v)
    np.testing.assert_allclose(basis.values(W).reshape(flat),
                               np.linalg.solve(D, W.reshape(flat)))
    np.testing.assert_allclose(basis.gradient(g).reshape(flat), D.T @ g.reshape(flat))


def test_interval_values_are_the_scores_of_the_intervals() -> None:
    # stumps 1[x <= t] at thresholds 1 < 2 < 4 on one feature: a value in (2, 4] is scored
    # by the stump at 4 alone, one in (1, 2] by the stumps at 2 and 4
    thresholds = np.array([4.0, 1.0, 2.0])
    W = np.array([0.5, -1.0, 2.0])[:, None, None]
    v = NestedBasis.of(np.zeros(3), np.argsort(np.argsort(thresholds))).values(W)
    for x in (0.5, 1.5, 3.0):
        score = float(np.sum(W[:, 0, 0] * (x <= thresholds)))
        inside = thresholds[thresholds >= x].min()
        assert v[list(thresholds).index(inside), 0, 0] == pytest.approx(score)


def test_refuses_two_columns_of_one_group_at_one_rank() -> None:
    with pytest.raises(ValueError, match="share a rank"):
        NestedBasis.of(np.array([0, 1, 0]), np.array([2, 2, 2]))


def test_linear_columns_are_not_nested() -> None:
    assert LinearColumns(np.ones(3)).nested_basis(np.array([0, 2])) is None


def test_corrective_step_reaches_the_same_minimiser_in_either_basis(monkeypatch) -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    y = (X[:, 0] > 0.3).astype(int) + (X[:, 1] > -0.2).astype(int)
    data = open_dataset(X, target=y, chunk_rows=200)
    thresholds = np.sort(rng.normal(size=(3, 7)), axis=1).astype(np.float32)
    family = StumpColumns(thresholds)
    selected = [2, 5, 0, 9, 13, 8, 16]  # feature 0 at 2, 5, 0; feature 1 at 2, 6, 1; 2 at 2
    config = ShareBoostConfig(n_rounds=1, features="stumps", l2=0.01, refit_iter=500,
                              n_bins=8, n_centres=1, n_radii=1, max_coverage=1.0, tol=0.0)
    start = np.zeros((len(selected), 3, 1))

    def solve() -> np.ndarray:
        step = corrective_step(LocalEngine(chunk_rows=200), data, family, selected, start,
                               np.zeros(3), config, 0.01, gtol=1e-10)
        return np.concatenate([step.coef.ravel(), step.intercept])

    nested = solve()
    monkeypatch.setattr(StumpColumns, "nested_basis", lambda self, c: None)
    plain = solve()
    np.testing.assert_allclose(nested, plain, atol=1e-5)
