"""PEGASOS over one chunk with the embedding computed on the fly (paper 000, Sec. 5).

Primal estimated sub-gradient solver of Shalev-Shwartz, Singer and Srebro (ICML 2007) for

    ``lam / 2 ||w||^2 + (1 / n) sum_i c_i max(0, 1 - y_i (w . Psi_d(x_i) + b))``

with one row per step, ``eta_t = 1 / (lam t)`` and the step counter ``t`` carried across
chunks. Conventions:

* labels ``y`` are float32 in {-1, +1}; sample weights ``c_i`` scale the hinge sub-gradient;
* the bias is regularised: it is the weight of a constant feature of value ``bias_scale``,
  stored as the last entry of ``w_d`` (``b = w_d[-1] * bias_scale``; ``bias_scale = 0`` fits
  no bias). This keeps every coordinate on the same ``1 / (lam t)`` step and shrink, the same
  convention as :mod:`streamlearn.solvers.dcd` and liblinear;
* the model is kept as ``w_d = D_d^-1 w`` (:mod:`streamlearn.solvers.embedding`): the shrink
  ``w <- (1 - eta lam) w`` is a scalar on ``w_d`` and the step ``w <- w + eta c y Psi_d(x)``
  is ``update_d``. Inside a chunk ``w_d = scale * v`` so that the shrink is O(1); ``v`` is
  renormalised when ``scale`` falls below ``1e-6`` (in particular at ``t = 1``, where
  ``1 - eta lam = 0``) and at the end of the chunk, so between chunks ``w_d`` holds the
  model itself;
* the optional projection onto the ball of radius ``1 / sqrt(lam)`` is not applied;
* averaging: ``avg`` holds the mean of the iterates ``w_d`` after steps
  ``average_start .. t``, updated in O(nnz) per step by keeping it as ``A + B v``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from streamlearn.features import score_d, update_d
from streamlearn.solvers.embedding import (
    IP_MAX_NNZ,
    IP_N_COLS,
    IP_N_DIMS,
    IP_ORDER,
    encode_row,
)

#: ``average_start`` that never averages.
NO_AVERAGING = np.iinfo(np.int64).max
#: ``scale`` below which ``v`` is renormalised.
MIN_SCALE = 1e-6


@njit(cache=True, nogil=True)
def _fold(w_d, avg, b_coef, scale):
    # avg <- avg + b_coef * v, v <- scale * v
    n = w_d.shape[0]
    if b_coef != 0.0:
        for i in range(n):
            avg[i] += b_coef * w_d[i]
    if scale != 1.0:
        for i in range(n):
            w_d[i] *= scale


@njit(cache=True, nogil=True)
def pegasos_chunk(X, y, weight, lam, bias_scale, w_d, avg, t, average_start, kind, ipar, fpar):
    """Run PEGASOS steps over the rows of one chunk, in their order.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    y : ndarray of shape (n_rows,), float32
        Labels in {-1, +1}.
    weight : ndarray of shape (n_rows,), float32
        Sample weights (``np.ones`` for none); a row of weight 0 only shrinks.
    lam : float
        Regularisation ``lam > 0``.
    bias_scale : float
        Value of the constant bias feature (0: no bias).
    w_d : ndarray of shape (ipar[IP_N_DIMS] + 1,), float64
        Model in ``w_d`` form, bias weight last; updated in place.
    avg : ndarray of shape (ipar[IP_N_DIMS] + 1,), float64
        Mean of the iterates after steps ``average_start .. t``; updated in place once the
        steps reach ``average_start`` (untouched before).
    t : int
        Steps done before this chunk (0 at the start).
    average_start : int
        First step (``>= 1``) whose iterate enters ``avg``; :data:`NO_AVERAGING` for none.
    kind : int
    ipar, fpar : ndarray
        Packed map (:func:`~streamlearn.solvers.embedding.embedding_params`).

    Returns
    -------
    int
        Steps done after this chunk, ``t + n_rows``.
    """
    n = X.shape[0]
    dim = ipar[IP_N_DIMS]
    n_cols = ipar[IP_N_COLS]
    order = ipar[IP_ORDER]
    idx = np.empty(ipar[IP_MAX_NNZ], dtype=np.int32)
    val = np.empty(ipar[IP_MAX_NNZ], dtype=np.float32)
    scratch = np.empty(n_cols, dtype=np.float64)
    averaging = n > 0 and t + n >= average_start
    if averaging:
        # avg becomes the running sum A of S = A + b_coef * v
        n_avg = t - average_start + 1
        for i in range(avg.shape[0]):
            avg[i] = avg[i] * n_avg if n_avg > 0 else 0.0
    scale = 1.0
    b_coef = 0.0
    for r in range(n):
        k = t + 1 + r
        eta = 1.0 / (lam * k)
        nnz = encode_row(kind, X[r], ipar, fpar, idx, val)
        yr = np.float64(y[r])
        margin = yr * scale * (score_d(w_d, idx, val, nnz) + w_d[dim] * bias_scale)
        scale *= 1.0 - 1.0 / k
        if scale < MIN_SCALE:
            _fold(w_d, avg, b_coef, scale)
            b_coef = 0.0
            scale = 1.0
        c = np.float64(weight[r])
        if margin < 1.0 and c != 0.0:
            step = eta * c * yr / scale
            if b_coef != 0.0:
                update_d(avg, idx, val, nnz, n_cols, order, -b_coef * step, scratch)
                avg[dim] -= b_coef * step * bias_scale
            update_d(w_d, idx, val, nnz, n_cols, order, step, scratch)
            w_d[dim] += step * bias_scale
        if averaging and k >= average_start:
            b_coef += scale
    _fold(w_d, avg, b_coef, scale)
    if averaging:
        n_avg = t + n - average_start + 1
        for i in range(avg.shape[0]):
            avg[i] /= n_avg
    return t + n
