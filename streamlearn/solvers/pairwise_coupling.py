"""Pairwise coupling: class probabilities from the probabilities of one-vs-one models.

Given, for every pair of classes ``i < j``, an estimate ``r_ij`` of
``P(y = i | y in {i, j}, x)`` (``r_ji = 1 - r_ij``), the second method of Wu, Lin and Weng
(JMLR 2004; the one libsvm uses) takes the class probabilities ``p`` minimising

    ``sum_i sum_{j != i} (r_ji p_i - r_ij p_j)^2``  subject to  ``sum_i p_i = 1``,

that is ``min p^T Q p`` with ``Q_ii = sum_{j != i} r_ji^2`` and ``Q_ij = -r_ji r_ij``. For
``0 < r_ij < 1`` the matrix ``Q`` is positive definite on the constraint plane and the
minimiser is non-negative (their Theorem 2), so it solves the equality-constrained system

    ``[[2 Q, 1], [1^T, 0]] [p, b] = [0, 1]``

directly (one small dense solve per row) instead of libsvm's fixed-point iterations.
"""

from __future__ import annotations

import numpy as np

#: ``r_ij`` are clipped to ``[EPS, 1 - EPS]`` (libsvm's ``min_prob``).
EPS = 1e-7


def couple_pairwise(r: np.ndarray, first: np.ndarray, second: np.ndarray,
                    n_classes: int) -> np.ndarray:
    """Class probabilities of each row from its pairwise probabilities.

    Parameters
    ----------
    r : ndarray of shape (n, m)
        ``r[:, t]``: probability that the row is of class ``first[t]`` rather than
        ``second[t]``.
    first, second : ndarray of shape (m,), int
        The classes of each pair; every unordered pair of ``0 .. n_classes - 1`` once.
    n_classes : int

    Returns
    -------
    ndarray of shape (n, n_classes), float64
        Non-negative rows summing to 1.
    """
    r = np.clip(np.asarray(r, dtype=np.float64), EPS, 1.0 - EPS)
    n, m = r.shape
    if m != n_classes * (n_classes - 1) // 2 or len(first) != m or len(second) != m:
        raise ValueError(f"{m} pairwise columns for {n_classes} classes: need "
                         f"{n_classes * (n_classes - 1) // 2}, one per pair")
    k = n_classes
    # R[:, i, j] = P(i | i or j) for i != j
    R = np.zeros((n, k, k))
    R[:, first, second] = r
    R[:, second, first] = 1.0 - r
    Q = -R.transpose(0, 2, 1) * R  # Q_ij = -r_ji r_ij
    diag = np.einsum("nji,nji->ni", R, R)  # sum_j r_ji^2 (R_ii = 0)
    Q[:, np.arange(k), np.arange(k)] = diag
    A = np.zeros((n, k + 1, k + 1))
    A[:, :k, :k] = 2.0 * Q
    A[:, :k, k] = 1.0
    A[:, k, :k] = 1.0
    rhs = np.zeros((n, k + 1, 1))
    rhs[:, k, 0] = 1.0
    p = np.linalg.solve(A, rhs)[:, :k, 0]
    # the minimiser is non-negative in exact arithmetic; remove round-off below zero
    p = np.maximum(p, 0.0)
    return p / p.sum(axis=1, keepdims=True)
