"""Difference penalties D0, D1, D2 on spline coefficients, linearised by D^-T.

Paper 000, Sec. 3 and 5. For ``n`` coefficients the penalty matrices are square and
invertible (the paper adds one row on top of the usual ``(n-1) x n`` difference matrix):

* ``D0 = I``;
* ``D1`` has ``1`` on the diagonal and ``-1`` on the sub-diagonal (row 0 is ``[1, 0, ...]``);
* ``D2 = D1 @ D1`` (rows ``[1]``, ``[-2, 1]``, ``[1, -2, 1]``, ...).

Their inverses have closed forms: ``D1^-T`` is upper triangular with ``s_ij = 1`` for
``j >= i``, ``D2^-T`` is upper triangular with ``s_ij = j - i + 1`` for ``j >= i``.
Applying ``D1^-T`` to a vector is a suffix sum (*Step A*) and applying ``D1^-1`` is a prefix
sum (*Step B*); ``Dd^-T = (D1^-T)^d`` and ``Dd^-1 = (D1^-1)^d``.

With spline coefficients ``w_d = Dd^-1 w`` the score of the linearised model
``w . Psi_d(x)``, ``Psi_d = Dd^-T Phi``, equals the sparse product ``w_d . Phi(x)``, and the
update ``w <- w + eta Psi_d(x)`` becomes ``w_d <- w_d + eta L_d Phi(x)`` with
``L_d = Dd^-1 Dd^-T``: ``d`` Step A sweeps followed by ``d`` Step B sweeps, O(d n) work per
input feature (eq. 7).

Kernels working on a row take its sparse B-spline encoding ``(idx, val, nnz)`` as written by
:func:`streamlearn.features.bspline.bspline_encode_row`: column ``f * n_cols + j`` holds basis
``j`` of feature ``f``, and the entries of one feature are contiguous.
"""

from __future__ import annotations

import numpy as np
from numba import njit

PENALTY_ORDERS = (0, 1, 2)


def _check_order(order: int) -> int:
    if order not in PENALTY_ORDERS:
        raise ValueError(f"penalty order must be one of {PENALTY_ORDERS}, got {order!r}")
    return int(order)


def difference_matrix(n: int, order: int) -> np.ndarray:
    """Dense square difference matrix ``D_order`` of paper 000, Sec. 3.

    Parameters
    ----------
    n : int
        Number of coefficients (matrix size).
    order : {0, 1, 2}
        Difference order ``d``.

    Returns
    -------
    ndarray of shape (n, n), float64
        ``I`` for order 0; ``D1 = I - S`` with ``S`` the sub-diagonal shift; ``D1 @ D1``.
    """
    order = _check_order(order)
    d1 = np.eye(n) - np.eye(n, k=-1)
    return np.linalg.matrix_power(d1, order)


def inverse_transpose(n: int, order: int) -> np.ndarray:
    """Closed form of ``D_order^-T`` (paper 000, Sec. 3).

    Parameters
    ----------
    n : int
        Number of coefficients.
    order : {0, 1, 2}
        Difference order ``d``.

    Returns
    -------
    ndarray of shape (n, n), float64
        ``I``; upper triangular ``s_ij = 1`` (``j >= i``); upper triangular
        ``s_ij = j - i + 1`` (``j >= i``).
    """
    order = _check_order(order)
    if order == 0:
        return np.eye(n)
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    upper = j >= i
    if order == 1:
        return upper.astype(np.float64)
    return np.where(upper, j - i + 1, 0).astype(np.float64)


@njit(cache=True, nogil=True)
def _suffix_sums(a, stop, order):
    # Step A of paper 000, Sec. 5, repeated ``order`` times on a[:stop]:
    # a_i <- a_i + a_{i+1}, i from stop-2 down to 0.
    for _ in range(order):
        for i in range(stop - 2, -1, -1):
            a[i] += a[i + 1]


@njit(cache=True, nogil=True)
def _prefix_sums(a, order):
    # Step B of paper 000, Sec. 5, repeated ``order`` times: a_i <- a_i + a_{i-1}.
    n = a.shape[0]
    for _ in range(order):
        for i in range(1, n):
            a[i] += a[i - 1]


@njit(cache=True, nogil=True)
def step_a(a, order):
    """Apply ``D_order^-T`` to ``a`` in place (``order`` suffix-sum sweeps, Step A).

    Parameters
    ----------
    a : ndarray of shape (n,), float
        Vector, overwritten.
    order : int
        Penalty order ``d`` in {0, 1, 2}.
    """
    _suffix_sums(a, a.shape[0], order)


@njit(cache=True, nogil=True)
def step_b(a, order):
    """Apply ``D_order^-1`` to ``a`` in place (``order`` prefix-sum sweeps, Step B).

    Parameters
    ----------
    a : ndarray of shape (n,), float
        Vector, overwritten.
    order : int
        Penalty order ``d`` in {0, 1, 2}.
    """
    _prefix_sums(a, order)


@njit(cache=True, nogil=True)
def score_d(w_d, idx, val, nnz):
    """Score ``w . Psi_d(x)`` of one row computed as the sparse product ``w_d . Phi(x)``.

    Parameters
    ----------
    w_d : ndarray of shape (n_features * n_cols,), float
        Spline coefficients ``w_d = D_d^-1 w`` (one block of ``n_cols`` per feature).
    idx : ndarray of int32
        Column indices of the row's B-spline encoding.
    val : ndarray of float32
        Basis values of the row's B-spline encoding.
    nnz : int
        Number of valid entries in ``idx`` and ``val``.

    Returns
    -------
    float
        The score, accumulated in float64.
    """
    s = 0.0
    for k in range(nnz):
        s += w_d[idx[k]] * val[k]
    return s


@njit(cache=True, nogil=True)
def next_block(idx, k, nnz, base, n_cols):
    """First column and end (exclusive, in ``idx``) of the feature block starting at entry ``k``.

    Parameters
    ----------
    idx : ndarray of int32
        Column indices of an encoding (features contiguous, ascending).
    k : int
        First entry of the block.
    nnz : int
        Number of valid entries.
    base : int
        First column of the previous block (``-n_cols`` before the first block).
    n_cols : int
        Columns per input feature.

    Returns
    -------
    base : int
        First column of the feature that entry ``k`` belongs to.
    end : int
        One past the last entry of that feature.

    Notes
    -----
    The block's feature is found by stepping from the previous one (the common case of
    consecutive features) and by one integer division only after a gap, so a row costs no
    division per entry.
    """
    j = idx[k]
    base += n_cols
    if j >= base + n_cols or j < base:
        base = (j // n_cols) * n_cols
    stop = base + n_cols
    end = k + 1
    while end < nnz and idx[end] < stop:
        end += 1
    return base, end


@njit(cache=True, nogil=True)
def update_d(w_d, idx, val, nnz, n_cols, order, eta, scratch):
    """Apply ``w <- w + eta Psi_d(x)`` to the spline coefficients ``w_d = D_d^-1 w``.

    Computes ``w_d <- w_d + eta L_d Phi(x)``, ``L_d = D_d^-1 D_d^-T`` (paper 000, eq. 7), one
    feature block at a time: ``order`` Step A sweeps over the block's non-zero span, then the
    ``order`` Step B sweeps fused with the addition into ``w_d``. Below the span the Step A
    result has a closed form (constant for ``d = 1``, linear for ``d = 2``) and above it is
    zero, so only the span's ``degree + 1`` entries are summed one after the other; the rest
    of the block is a closed-form update without a dependency chain. Features absent from
    the encoding are untouched.

    Parameters
    ----------
    w_d : ndarray of shape (n_features * n_cols,), float
        Spline coefficients, updated in place.
    idx : ndarray of int32
        Column indices of the row's B-spline encoding (features contiguous, ascending).
    val : ndarray of float32
        Basis values of the row's B-spline encoding.
    nnz : int
        Number of valid entries in ``idx`` and ``val``.
    n_cols : int
        Columns per input feature.
    order : int
        Penalty order ``d`` in {0, 1, 2}.
    eta : float
        Step size (any sign).
    scratch : ndarray of shape (n_cols,), float64
        Work space, overwritten.
    """
    if order == 0:
        for k in range(nnz):
            w_d[idx[k]] += eta * val[k]
        return
    k = 0
    base = -n_cols
    while k < nnz:
        base, end = next_block(idx, k, nnz, base, n_cols)
        first = n_cols
        top = 0
        for e in range(k, end):
            j = idx[e] - base
            first = min(first, j)
            top = max(top, j + 1)
        for i in range(first, top):
            scratch[i] = 0.0
        for e in range(k, end):
            scratch[idx[e] - base] += val[e]
        k = end
        # Step A on the span [first, top): t1 (and t2) there; below it t1 = t1[first] and
        # t2 = t2[first] + (first - i) t1[first]; above it both are zero.
        for i in range(top - 2, first - 1, -1):
            scratch[i] += scratch[i + 1]
        t1 = scratch[first]
        w = w_d[base : base + n_cols]
        if order == 1:
            # Step B: prefix sums of t1, i.e. (i + 1) t1 below the span
            c = eta * t1
            for i in range(first):
                w[i] += c * (i + 1)
            p = first * t1
            for i in range(first, top):
                p += scratch[i]
                w[i] += eta * p
            c = eta * p
            for i in range(top, n_cols):
                w[i] += c
            continue
        for i in range(top - 2, first - 1, -1):
            scratch[i] += scratch[i + 1]
        t2 = scratch[first]
        # two prefix sums: p1 = sum of t2, p2 = sum of p1 (closed forms below the span)
        p1 = 0.0
        p2 = 0.0
        for i in range(first):
            n1 = i + 1.0
            p1 = n1 * (t2 + first * t1) - t1 * (i * n1 * 0.5)
            p2 = (t2 + first * t1) * (n1 * (i + 2.0) * 0.5) - t1 * (i * n1 * (i + 2.0) / 6.0)
            w[i] += eta * p2
        for i in range(first, top):
            p1 += scratch[i]
            p2 += p1
            w[i] += eta * p2
        c = eta * p2
        d = eta * p1
        for i in range(top, n_cols):
            w[i] += c + d * (i - top + 1)
