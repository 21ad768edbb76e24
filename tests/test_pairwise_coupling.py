"""Pairwise coupling against libsvm's fixed-point iterations and against consistent inputs."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.solvers.pairwise_coupling import couple_pairwise


def libsvm_multiclass_probability(r: np.ndarray, max_iter: int = 1000) -> np.ndarray:
    """libsvm's ``multiclass_probability`` (svm.cpp), one row: ``r[i, j] = P(i | i or j)``."""
    k = r.shape[0]
    Q = np.zeros((k, k))
    for t in range(k):
        for j in range(k):
            if j != t:
                Q[t, t] += r[j, t] ** 2
                Q[t, j] = -r[j, t] * r[t, j]
    p = np.full(k, 1.0 / k)
    for _ in range(max_iter):
        Qp = Q @ p
        pQp = p @ Qp
        if np.max(np.abs(Qp - pQp)) < 1e-12:
            break
        for t in range(k):
            diff = (-Qp[t] + pQp) / Q[t, t]
            p[t] += diff
            pQp = (pQp + diff * (diff * Q[t, t] + 2 * Qp[t])) / (1 + diff) ** 2
            Qp = (Qp + diff * Q[t]) / (1 + diff)
            p /= 1 + diff
    return p


def _pairs(k: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.triu_indices(k, k=1)
    return a, b


@pytest.mark.parametrize("k", [3, 4, 7])
def test_matches_libsvm_iterations(k: int) -> None:
    rng = np.random.default_rng(k)
    a, b = _pairs(k)
    r = rng.uniform(0.02, 0.98, size=(20, len(a)))
    ours = couple_pairwise(r, a, b, k)
    for row in range(20):
        R = np.zeros((k, k))
        R[a, b] = r[row]
        R[b, a] = 1 - r[row]
        np.testing.assert_allclose(ours[row], libsvm_multiclass_probability(R), atol=1e-8)


def test_consistent_pairwise_probabilities_give_back_the_classes() -> None:
    rng = np.random.default_rng(0)
    k = 5
    a, b = _pairs(k)
    p = rng.dirichlet(np.ones(k), size=50)
    r = p[:, a] / (p[:, a] + p[:, b])
    np.testing.assert_allclose(couple_pairwise(r, a, b, k), p, rtol=1e-6, atol=1e-9)


def test_pair_count_is_checked() -> None:
    with pytest.raises(ValueError, match="one per pair"):
        couple_pairwise(np.full((2, 2), 0.5), np.array([0, 0]), np.array([1, 2]), 3)
