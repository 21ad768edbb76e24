"""Kernels of super-sparse machines: similarities to prototypes and their sufficient statistics.

Paper 004 fits ``f(x) = sum_j beta_j s(x, c_j) + b`` over ``p`` virtual prototypes ``c_j`` by
minimising ``(1 / V) sum_i v_i (f(x_i) - y_i)^2 + lam R(beta)`` with ``V = sum_i v_i`` and
``R`` the squared (ridge) or absolute (LASSO) norm. A model of ``K`` outputs (one per class
of a multiclass problem) shares the prototypes and has a column ``(beta_c, b_c)`` per output;
its loss is the sum of the outputs' losses. Everything a fit needs from the rows is a sum over
them, so each kernel here takes one chunk and adds its share to an accumulator:

- :func:`rbf_similarities`: ``S_ij = exp(-gamma ||x_i - c_j||^2)``, the chunk's ``(n, p)``
  similarity matrix (:func:`prototype_sq_distances`, then numpy's ``exp``);
- :func:`gram_update`: the ``(p + 1) x (p + 1)`` Gram matrix ``sum_i v_i z_i z_i^T`` (shared
  by the outputs) and the right-hand sides ``sum_i v_i z_i Y_i^T`` of ``z_i = (S_i, 1)``,
  from which the beta-step is a ridge solve (eq. 4) or LASSO coordinate descent
  (:func:`lasso_cd`) per output;
- :func:`weighted_residuals` and :func:`prototype_weights` (``M_ik = sum_c v_i e_ic
  beta_kc``, ``e_i = f(x_i) - Y_i``), then one of :func:`rbf_gradient_update` (analytic
  RBF derivative, ``d s / d c = 2 gamma (x - c) s``), :func:`approx_gradient_update` (eq. 7,
  ``d s / d c ~ x - c`` for a black-box similarity) or :func:`derivative_gradient_update`
  (derivatives supplied by the caller): ``sum_i M_ik d s(x_i, c_k) / d c_k`` per prototype.
  The gradient of eq. 5 is ``2 / V`` times that row. With ``beta`` at its optimum for the
  current prototypes the terms of eq. 6 through ``d beta / d c`` vanish (the derivative of
  the objective in ``beta`` is zero there), so this partial gradient is the total one.

Data arrays are float32, prototypes and accumulators float64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamlearn.data.sparse_rows import SparseRows


@njit(cache=True, nogil=True)
def prototype_sq_distances(X, Ct, weights):
    """Weighted squared Euclidean distances of every row to every prototype.

    The prototypes come transposed so that the innermost loop runs along contiguous
    prototypes, independent sums that compile to SIMD instructions (a loop along the
    features would be one reduction, which stays scalar without fast-math).

    Parameters
    ----------
    X : ndarray of shape (n, d), float32
    Ct : ndarray of shape (d, p), float64, C-contiguous
        Prototypes, one per column.
    weights : ndarray of shape (d,), float64
        Per-feature weights ``w_f`` (ones: the plain distance; ``1 / scale_f^2``: the
        distance between the standardised row and prototype, from the raw ones).

    Returns
    -------
    ndarray of shape (n, p), float64
        ``sum_f w_f (x_if - c_jf)^2``, summed over the features in their order.
    """
    n, d = X.shape
    p = Ct.shape[1]
    D = np.zeros((n, p), dtype=np.float64)
    for i in range(n):
        for f in range(d):
            xf = np.float64(X[i, f])
            wf = weights[f]
            for j in range(p):
                diff = xf - Ct[f, j]
                D[i, j] += wf * (diff * diff)
    return D


@njit(cache=True, nogil=True)
def prototype_sq_distances_csr(indptr, indices, values, C, weights):
    """:func:`prototype_sq_distances` of CSR rows, over their stored entries.

    ``sum_f w_f (x_f - c_jf)^2 = sum_f w_f c_jf^2 + sum_{stored f} w_f x_f (x_f - 2 c_jf)``:
    the prototypes' weighted norms once, then each stored entry's correction.

    Parameters
    ----------
    indptr, indices, values : ndarray
        The rows in CSR form (int64, int32, float32).
    C : ndarray of shape (p, d), float64, C-contiguous
        Prototypes, one per row.
    weights : ndarray of shape (d,), float64

    Returns
    -------
    ndarray of shape (n, p), float64
        Clipped at 0 (the correction can round below it).
    """
    n = indptr.shape[0] - 1
    p, d = C.shape
    c_sq = np.zeros(p)
    for j in range(p):
        for f in range(d):
            c_sq[j] += weights[f] * C[j, f] * C[j, f]
    D = np.empty((n, p), dtype=np.float64)
    for i in range(n):
        for j in range(p):
            D[i, j] = c_sq[j]
        for e in range(indptr[i], indptr[i + 1]):
            f = indices[e]
            x = np.float64(values[e])
            wx = weights[f] * x
            for j in range(p):
                D[i, j] += wx * (x - 2.0 * C[j, f])
        for j in range(p):
            D[i, j] = max(D[i, j], 0.0)
    return D


def rbf_similarities(X: np.ndarray | SparseRows, C: np.ndarray, gamma: float,
                     scale: np.ndarray | None = None) -> np.ndarray:
    """RBF similarities of every row to every prototype.

    :func:`prototype_sq_distances`, then numpy's vectorised ``exp`` in place (numba's ``exp``
    is scalar, and was most of the time of a prediction).

    Parameters
    ----------
    X : ndarray of shape (n, d), float32, or SparseRows
        CSR rows take :func:`prototype_sq_distances_csr`.
    C : ndarray of shape (p, d), float64
        Prototypes.
    gamma : float
    scale : ndarray of shape (d,), optional
        Per-feature scales: the distance is that of ``x / scale`` and ``c / scale``, so that
        a standardised model predicts from raw rows and raw prototypes without
        standardising the rows first.

    Returns
    -------
    ndarray of shape (n, p), float64
        ``exp(-gamma ||(x_i - c_j) / scale||^2)``.
    """
    weights = (np.ones(X.shape[1]) if scale is None
               else 1.0 / np.square(np.asarray(scale, dtype=np.float64)))
    if isinstance(X, SparseRows):
        S = prototype_sq_distances_csr(*X.kernel_args,
                                       np.ascontiguousarray(C, dtype=np.float64), weights)
    else:
        S = prototype_sq_distances(X, np.ascontiguousarray(np.asarray(C, dtype=np.float64).T),
                                   weights)
    np.multiply(S, -float(gamma), out=S)
    return np.exp(S, out=S)


@njit(cache=True, nogil=True)
def gram_update(S, Y, v, G, R):
    """Add a chunk's weighted Gram matrix and right-hand sides of ``z_i = (S_i, 1)``.

    Parameters
    ----------
    S : ndarray of shape (n, p), float64
        Similarities of the chunk's rows to the prototypes.
    Y : ndarray of shape (n, K), float64
        Targets, one column per output (``K = 1``: one regression target or two classes).
    v : ndarray of shape (n,), float32
        Sample weights.
    G : ndarray of shape (p + 1, p + 1), float64
        ``sum_i v_i z_i z_i^T``, updated in place (constant column last).
    R : ndarray of shape (p + 1, K), float64
        ``sum_i v_i z_i Y_i^T``, updated in place.

    Returns
    -------
    yy : float
        ``sum_i v_i ||Y_i||^2`` over the chunk.
    weight : float
        ``sum_i v_i`` over the chunk.
    """
    n, p = S.shape
    K = Y.shape[1]
    yy = 0.0
    weight = 0.0
    for i in range(n):
        vi = np.float64(v[i])
        if vi == 0.0:
            continue
        for j in range(p):
            sj = vi * S[i, j]
            for k in range(j, p):
                G[j, k] += sj * S[i, k]
            G[j, p] += sj
            for c in range(K):
                R[j, c] += sj * Y[i, c]
        G[p, p] += vi
        for c in range(K):
            R[p, c] += vi * Y[i, c]
            yy += vi * Y[i, c] * Y[i, c]
        weight += vi
    for j in range(p + 1):
        for k in range(j):
            G[j, k] = G[k, j]
    return yy, weight


@njit(cache=True, nogil=True)
def weighted_residuals(S, W, Y, v):
    """``v_i (f(x_i) - Y_i)`` with ``f_c(x_i) = S_i . W[:p, c] + W[p, c]``.

    Parameters
    ----------
    S : ndarray of shape (n, p), float64
    W : ndarray of shape (p + 1, K), float64
        Coefficients, the intercepts last.
    Y : ndarray of shape (n, K), float64
    v : ndarray of shape (n,), float32

    Returns
    -------
    ndarray of shape (n, K), float64
    """
    n, p = S.shape
    K = W.shape[1]
    out = np.empty((n, K), dtype=np.float64)
    for i in range(n):
        vi = np.float64(v[i])
        for c in range(K):
            f = W[p, c]
            for j in range(p):
                f += S[i, j] * W[j, c]
            out[i, c] = vi * (f - Y[i, c])
    return out


@njit(cache=True, nogil=True)
def prototype_weights(residual, W):
    """``M_ik = sum_c residual_ic W_kc``: how much row ``i`` pulls on prototype ``k``.

    The prototype gradient of eq. 5 is ``(2 / V) sum_i M_ik d s(x_i, c_k) / d c_k``; with
    one output ``M_ik = v_i e_i beta_k``.

    Parameters
    ----------
    residual : ndarray of shape (n, K), float64
        Weighted residuals (:func:`weighted_residuals`).
    W : ndarray of shape (p + 1, K), float64
        Coefficients (the intercept row is not used).

    Returns
    -------
    ndarray of shape (n, p), float64
    """
    n, K = residual.shape
    p = W.shape[0] - 1
    out = np.zeros((n, p), dtype=np.float64)
    for i in range(n):
        for c in range(K):
            rc = residual[i, c]
            if rc == 0.0:
                continue
            for k in range(p):
                out[i, k] += rc * W[k, c]
    return out


@njit(cache=True, nogil=True)
def rbf_gradient_update(X, C, S, gamma, M, out):
    """Add ``sum_i M_ik d s(x_i, c_k) / d c_k`` for the RBF similarity.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32
    C : ndarray of shape (p, d), float64
    S : ndarray of shape (n, p), float64
        ``rbf_similarities(X, C, gamma)``.
    gamma : float
    M : ndarray of shape (n, p), float64
        Per row and prototype weights (:func:`prototype_weights`).
    out : ndarray of shape (p, d), float64
        Updated in place; ``d s / d c = 2 gamma (x - c) s``.
    """
    n, d = X.shape
    p = C.shape[0]
    for i in range(n):
        for k in range(p):
            w = 2.0 * gamma * M[i, k] * S[i, k]
            if w == 0.0:
                continue
            for f in range(d):
                out[k, f] += w * (X[i, f] - C[k, f])


@njit(cache=True, nogil=True)
def rbf_gradient_update_csr(indptr, indices, values, C, S, gamma, M, out):
    """:func:`rbf_gradient_update` of CSR rows: ``sum_i a_ik (x_i - c_k)`` with
    ``a_ik = 2 gamma M_ik S_ik`` is ``sum_i a_ik x_i`` over the stored entries minus
    ``(sum_i a_ik) c_k``.

    Parameters
    ----------
    indptr, indices, values : ndarray
        The rows in CSR form (int64, int32, float32).
    C, S, gamma, M, out
        As for :func:`rbf_gradient_update`.
    """
    n = indptr.shape[0] - 1
    p, d = C.shape
    mass = np.zeros(p)
    for i in range(n):
        for k in range(p):
            w = 2.0 * gamma * M[i, k] * S[i, k]
            if w == 0.0:
                continue
            mass[k] += w
            for e in range(indptr[i], indptr[i + 1]):
                out[k, indices[e]] += w * np.float64(values[e])
    for k in range(p):
        for f in range(d):
            out[k, f] -= mass[k] * C[k, f]


@njit(cache=True, nogil=True)
def approx_gradient_update(X, C, M, out):
    """Add ``sum_i M_ik (x_i - c_k)``: eq. 7's ``d s(x, c) / d c ~ x - c``.

    For a similarity known only through its values: it grows as ``c`` moves towards ``x``.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32
    C : ndarray of shape (p, d), float64
    M : ndarray of shape (n, p), float64
    out : ndarray of shape (p, d), float64
        Updated in place.
    """
    n, d = X.shape
    p = C.shape[0]
    for i in range(n):
        for k in range(p):
            w = M[i, k]
            if w == 0.0:
                continue
            for f in range(d):
                out[k, f] += w * (X[i, f] - C[k, f])


@njit(cache=True, nogil=True)
def derivative_gradient_update(dS, M, out):
    """Add ``sum_i M_ik dS[i, k]`` for derivatives given by the caller.

    Parameters
    ----------
    dS : ndarray of shape (n, p, d), float64
        ``d s(x_i, c_k) / d c_k``.
    M : ndarray of shape (n, p), float64
    out : ndarray of shape (p, d), float64
        Updated in place.
    """
    n, p, d = dS.shape
    for i in range(n):
        for k in range(p):
            w = M[i, k]
            if w == 0.0:
                continue
            for f in range(d):
                out[k, f] += w * dS[i, k, f]


@njit(cache=True, nogil=True)
def lasso_cd(G, r, lam, w, max_sweeps, tol):
    """LASSO on sufficient statistics by cyclic coordinate descent.

    Minimises ``w^T G w - 2 r^T w + lam sum_{j < m} |w_j|`` where the last coordinate
    (the intercept) is not penalised; with ``G`` and ``r`` the weighted Gram matrix and
    right-hand side divided by ``V`` this is ``(1 / V) sum_i v_i (z_i . w - y_i)^2 +
    lam ||beta||_1`` up to a constant.

    The gradient ``G w`` is kept up to date as coordinates move (a move costs one column of
    ``G``), and after a sweep that moved something the next sweeps visit the non-zero
    coordinates only, until they settle; a full sweep then checks every coordinate (the
    active-set strategy of glmnet). The fixed point is that of plain cyclic sweeps.

    Parameters
    ----------
    G : ndarray of shape (m + 1, m + 1), float64
        Symmetric positive semi-definite.
    r : ndarray of shape (m + 1,), float64
    lam : float
    w : ndarray of shape (m + 1,), float64
        Warm start, updated in place.
    max_sweeps : int
        Sweeps allowed, full and active-set ones together.
    tol : float
        Stop when a full sweep moved no coordinate by more than ``tol``.

    Returns
    -------
    int
        Sweeps done.
    """
    m = G.shape[0]
    half = 0.5 * lam
    g = np.zeros(m)
    for j in range(m):
        if w[j] != 0.0:
            for k in range(m):
                g[k] += G[k, j] * w[j]
    sweeps = 0
    full = True
    while sweeps < max_sweeps:
        sweeps += 1
        largest = 0.0
        for j in range(m):
            if not full and w[j] == 0.0 and j != m - 1:
                continue
            if G[j, j] <= 0.0:
                new = 0.0
            else:
                rho = r[j] - g[j] + G[j, j] * w[j]
                if j == m - 1:
                    new = rho / G[j, j]
                elif rho > half:
                    new = (rho - half) / G[j, j]
                elif rho < -half:
                    new = (rho + half) / G[j, j]
                else:
                    new = 0.0
            delta = new - w[j]
            if delta != 0.0:
                for k in range(m):
                    g[k] += G[k, j] * delta
                w[j] = new
            if abs(delta) > largest:
                largest = abs(delta)
        if largest <= tol:
            if full:
                break
            full = True  # the active set settled: check every coordinate
        else:
            full = False
    return sweeps
