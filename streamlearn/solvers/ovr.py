"""Several binary models (one-vs-rest or one-vs-one) trained from one read of each row.

A multiclass problem with ``k`` classes is ``k`` binary problems "class ``j`` against the
rest", or ``k (k - 1) / 2`` problems "class ``a`` against class ``b``", over the same rows.
The kernels here embed each row once (:func:`encode_row`, the expensive part for Fourier and
Hermite maps) and then score and update all ``m`` binary models with it. Model ``j`` is row
``j`` of a weight matrix ``W_d`` of shape ``(m, n_dims + 1)`` in the ``w_d`` form of
:mod:`streamlearn.solvers.embedding`, bias weight last. It sees the label ``+1`` for rows
whose class code is ``positive[j]`` and ``-1`` for rows whose code is ``negative[j]``, or for
every other row when ``negative[j]`` is :data:`REST`; rows of any other class are not in its
problem (for PEGASOS a step of weight 0, which only shrinks; for dual coordinate descent a row
whose dual variable stays 0). A binary problem is ``m = 1`` with ``positive = [1]`` and
``negative = [REST]``.

With the step counter shared by all models, a one-vs-one model of PEGASOS minimises
``lam / 2 ||w||^2 + (1 / n) sum_{i in its classes} loss_i`` with ``n`` all rows: the SVM of
its two classes with the same ``C = 1 / (lam n)`` as the dual coordinate descent models.

Each model follows exactly the arithmetic of its single-model kernel:
:func:`pegasos_ovr_chunk` is :func:`~streamlearn.solvers.pegasos.pegasos_chunk` run ``m``
times over the same rows (the shrink ``1 - 1/t`` depends only on the step, so the lazy
scale is shared by all models), and :func:`dcd_ovr_chunk` is
:func:`~streamlearn.solvers.dcd.dcd_chunk` run ``m`` times with the same seed (one visiting
order, one ``Q_ii`` per row, one dual variable per row and model).

One difference: for the hinge loss :func:`dcd_ovr_chunk` uses the box bound ``C_i`` rounded
to float32, the precision the dual variables are stored in. A variable clamped at the bound
then equals the bound exactly and is recognised as bounded, so its projected gradient is 0
and the projected-gradient range (the stopping rule) goes to 0 at the optimum; with a bound
that float32 cannot hold, a clamped variable would round just below it and keep reporting its
gradient. For ``C_i`` exactly representable in float32 both kernels take the same steps.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamlearn.features import score_d, update_d
from streamlearn.solvers.dcd import HINGE, PG_EPS, SQUARED_HINGE, row_orders
from streamlearn.solvers.embedding import (
    IP_MAX_NNZ,
    IP_N_COLS,
    IP_N_DIMS,
    IP_ORDER,
    encode_row,
    sq_norm_d,
)
from streamlearn.solvers.pegasos import MIN_SCALE

#: ``negative`` entry of a model whose negative rows are all classes but its positive one.
REST = -1


@njit(cache=True, nogil=True)
def _label(code, positive, negative):
    # +1, -1, or 0 for a row that is not in the model's problem
    if code == positive:
        return 1.0
    if negative == REST or code == negative:
        return -1.0
    return 0.0


@njit(cache=True, nogil=True)
def _fold_all(W, AVG, b_coef, scale):
    # AVG <- AVG + b_coef * V, V <- scale * V for every model
    m, n = W.shape
    for j in range(m):
        if b_coef != 0.0:
            for i in range(n):
                AVG[j, i] += b_coef * W[j, i]
        if scale != 1.0:
            for i in range(n):
                W[j, i] *= scale


@njit(cache=True, nogil=True)
def pegasos_ovr_chunk(X, codes, positive, negative, weight, lam, bias_scale, W, AVG, t,
                      average_start, kind, ipar, fpar):
    """PEGASOS steps of ``m`` binary models over the rows of one chunk, in their order.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    codes : ndarray of shape (n_rows,), int32
        Class code of each row.
    positive, negative : ndarray of shape (m,), int32
        Model ``j`` takes rows of class code ``positive[j]`` as ``+1`` and rows of code
        ``negative[j]`` (every other code for :data:`REST`) as ``-1``; it skips the rest.
    weight : ndarray of shape (n_rows,), float32
        Sample weights (``np.ones`` for none); a row of weight 0 only shrinks.
    lam : float
        Regularisation ``lam > 0``.
    bias_scale : float
        Value of the constant bias feature (0: no bias).
    W : ndarray of shape (m, ipar[IP_N_DIMS] + 1), float64, C-contiguous
        Models in ``w_d`` form, bias weight last; updated in place.
    AVG : ndarray of shape (m, ipar[IP_N_DIMS] + 1), float64, C-contiguous
        Mean of the iterates after steps ``average_start .. t``; updated in place once the
        steps reach ``average_start`` (untouched before).
    t : int
        Steps done before this chunk (0 at the start).
    average_start : int
        First step (``>= 1``) whose iterate enters ``AVG``;
        :data:`~streamlearn.solvers.pegasos.NO_AVERAGING` for none.
    kind : int
    ipar, fpar : ndarray
        Packed map (:func:`~streamlearn.solvers.embedding.embedding_params`).

    Returns
    -------
    int
        Steps done after this chunk, ``t + n_rows``.
    """
    n = X.shape[0]
    m = W.shape[0]
    dim = ipar[IP_N_DIMS]
    n_cols = ipar[IP_N_COLS]
    order = ipar[IP_ORDER]
    idx = np.empty(ipar[IP_MAX_NNZ], dtype=np.int32)
    val = np.empty(ipar[IP_MAX_NNZ], dtype=np.float32)
    scratch = np.empty(n_cols, dtype=np.float64)
    margins = np.empty(m, dtype=np.float64)
    averaging = n > 0 and t + n >= average_start
    if averaging:
        # AVG becomes the running sum A of S = A + b_coef * V
        n_avg = t - average_start + 1
        for j in range(m):
            for i in range(AVG.shape[1]):
                AVG[j, i] = AVG[j, i] * n_avg if n_avg > 0 else 0.0
    scale = 1.0
    b_coef = 0.0
    for r in range(n):
        k = t + 1 + r
        eta = 1.0 / (lam * k)
        nnz = encode_row(kind, X[r], ipar, fpar, idx, val)
        code = codes[r]
        for j in range(m):
            yj = _label(code, positive[j], negative[j])
            if yj == 0.0:
                margins[j] = np.inf
                continue
            wj = W[j]
            margins[j] = yj * scale * (score_d(wj, idx, val, nnz) + wj[dim] * bias_scale)
        scale *= 1.0 - 1.0 / k
        if scale < MIN_SCALE:
            _fold_all(W, AVG, b_coef, scale)
            b_coef = 0.0
            scale = 1.0
        c = np.float64(weight[r])
        if c != 0.0:
            for j in range(m):
                if margins[j] < 1.0:
                    yj = _label(code, positive[j], negative[j])
                    step = eta * c * yj / scale
                    if b_coef != 0.0:
                        aj = AVG[j]
                        update_d(aj, idx, val, nnz, n_cols, order, -b_coef * step, scratch)
                        aj[dim] -= b_coef * step * bias_scale
                    wj = W[j]
                    update_d(wj, idx, val, nnz, n_cols, order, step, scratch)
                    wj[dim] += step * bias_scale
        if averaging and k >= average_start:
            b_coef += scale
    _fold_all(W, AVG, b_coef, scale)
    if averaging:
        n_avg = t + n - average_start + 1
        for j in range(m):
            for i in range(AVG.shape[1]):
                AVG[j, i] /= n_avg
    return t + n


@njit(cache=True, nogil=True)
def dcd_ovr_chunk(X, codes, positive, negative, c, alpha, W, loss, bias_scale, n_inner, seed,
                  kind, ipar, fpar):
    """Dual coordinate descent sweeps of ``m`` binary models over one chunk.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    codes : ndarray of shape (n_rows,), int32
        Class code of each row.
    positive, negative : ndarray of shape (m,), int32
        Model ``j`` takes rows of class code ``positive[j]`` as ``+1`` and rows of code
        ``negative[j]`` (every other code for :data:`REST`) as ``-1``; it skips the rest.
    c : ndarray of shape (n_rows,), float64
        Per-row penalties ``C_i = C * weight_i`` (rows with ``C_i <= 0`` are skipped).
    alpha : ndarray of shape (n_rows, m), float32
        Dual variables of the chunk's rows for every model, updated in place.
    W : ndarray of shape (m, ipar[IP_N_DIMS] + 1), float64, C-contiguous
        Models in ``w_d`` form, bias weight last; updated in place.
    loss : int
        :data:`~streamlearn.solvers.dcd.HINGE` or
        :data:`~streamlearn.solvers.dcd.SQUARED_HINGE`.
    bias_scale : float
        Value of the regularised constant bias feature (0: no bias).
    n_inner : int
        Sweeps over the chunk, in the orders of :func:`~streamlearn.solvers.dcd.row_orders`.
    seed : int
        Non-negative seed of the orders.
    kind : int
    ipar, fpar : ndarray
        Packed map (:func:`~streamlearn.solvers.embedding.embedding_params`).

    Returns
    -------
    pg_max, pg_min : ndarray of shape (m,), float64
        Largest and smallest projected gradient of each model over the first sweep.
    alpha_sum : ndarray of shape (m,), float64
        ``sum_i alpha_ij`` after the sweeps.
    dual_quad : ndarray of shape (m,), float64
        ``1/2 sum_i D_ii alpha_ij^2`` after the sweeps (0 for the hinge).
    """
    n = X.shape[0]
    m = W.shape[0]
    dim = ipar[IP_N_DIMS]
    n_cols = ipar[IP_N_COLS]
    order = ipar[IP_ORDER]
    idx = np.empty(ipar[IP_MAX_NNZ], dtype=np.int32)
    val = np.empty(ipar[IP_MAX_NNZ], dtype=np.float32)
    scratch = np.empty(n_cols, dtype=np.float64)
    bias_sq = bias_scale * bias_scale
    qd = np.full(n, -1.0)
    pg_max = np.full(m, -np.inf)
    pg_min = np.full(m, np.inf)
    orders = row_orders(n, n_inner, seed)
    for sweep in range(n_inner):
        for p in range(n):
            r = orders[sweep, p]
            ci = c[r]
            if not ci > 0.0:
                continue
            if loss == HINGE:
                upper = np.float64(np.float32(ci))  # the bound as alpha can hold it
                diag = 0.0
            else:
                upper = np.inf
                diag = 0.5 / ci
            nnz = encode_row(kind, X[r], ipar, fpar, idx, val)
            if qd[r] < 0.0:
                qd[r] = sq_norm_d(idx, val, nnz, n_cols, order, scratch) + bias_sq
            q = qd[r] + diag
            code = codes[r]
            for j in range(m):
                yj = _label(code, positive[j], negative[j])
                if yj == 0.0:
                    continue
                wj = W[j]
                a = np.float64(alpha[r, j])
                g = yj * (score_d(wj, idx, val, nnz) + wj[dim] * bias_scale) - 1.0 + diag * a
                if a == 0.0:
                    pg = min(g, 0.0)
                elif a >= upper:
                    pg = max(g, 0.0)
                else:
                    pg = g
                if sweep == 0:
                    pg_max[j] = max(pg_max[j], pg)
                    pg_min[j] = min(pg_min[j], pg)
                if abs(pg) <= PG_EPS:
                    continue
                a_new = min(max(a - g / q, 0.0), upper) if q > 0.0 else upper
                delta = np.float64(np.float32(a_new)) - a
                if delta == 0.0:
                    continue
                alpha[r, j] = np.float32(a_new)
                update_d(wj, idx, val, nnz, n_cols, order, delta * yj, scratch)
                wj[dim] += delta * yj * bias_scale
    alpha_sum = np.zeros(m)
    dual_quad = np.zeros(m)
    for r in range(n):
        for j in range(m):
            a = np.float64(alpha[r, j])
            alpha_sum[j] += a
            if loss == SQUARED_HINGE and c[r] > 0.0:
                dual_quad[j] += a * a / (4.0 * c[r])
    return pg_max, pg_min, alpha_sum, dual_quad


@njit(cache=True, nogil=True)
def decision_ovr_chunk(X, W, bias_scale, kind, ipar, fpar):
    """Scores ``w_j . Psi_d(x) + b_j`` of every model on a chunk's rows, each row embedded once.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    W : ndarray of shape (m, ipar[IP_N_DIMS] + 1), float64
        Models in ``w_d`` form, bias weight last (``b_j = W[j, -1] * bias_scale``).
    bias_scale : float
    kind : int
    ipar, fpar : ndarray
        Packed map.

    Returns
    -------
    ndarray of shape (n_rows, m), float64
    """
    n = X.shape[0]
    m = W.shape[0]
    dim = ipar[IP_N_DIMS]
    out = np.empty((n, m), dtype=np.float64)
    idx = np.empty(ipar[IP_MAX_NNZ], dtype=np.int32)
    val = np.empty(ipar[IP_MAX_NNZ], dtype=np.float32)
    for r in range(n):
        nnz = encode_row(kind, X[r], ipar, fpar, idx, val)
        for j in range(m):
            wj = W[j]
            out[r, j] = score_d(wj, idx, val, nnz) + wj[dim] * bias_scale
    return out
