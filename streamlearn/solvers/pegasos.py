"""PEGASOS over one chunk with the embedding computed on the fly (paper 000, Sec. 5).

Primal estimated sub-gradient solver of Shalev-Shwartz, Singer and Srebro (ICML 2007) for

    ``lam / 2 ||w||^2 + (1 / n) sum_i c_i max(0, 1 - y_i (w . Psi_d(x_i) + b))``

with one row per step, ``eta_t = 1 / (lam t)`` and the step counter ``t`` carried across
chunks. Conventions:

* labels ``y`` are float32 in {-1, +1}; sample weights ``c_i`` scale the hinge sub-gradient,
  except that a weight above 1 carries a row's step to its hinge and no further: the step
  is ``eta min(c, max(1, (1 - y f') / (eta q)))`` with ``f'`` the row's score after the
  shrink and ``q = ||Psi_d(x)||^2 + bias_scale^2``, so that the row's margin becomes 1 where
  ``c`` plain steps would carry it past (importance-weight aware updates, Karampatziakis
  and Langford, UAI 2011: ``c`` copies of the row stepped in turn stop at the hinge). A
  weight of ``n / 2`` (one row of a class, balanced) otherwise moved the model by
  thousands of margins at each visit. Rows of weight at most 1 take PEGASOS's own step;
* the bias is regularised: it is the weight of a constant feature of value ``bias_scale``,
  stored as the last entry of ``w_d`` (``b = w_d[-1] * bias_scale``; ``bias_scale = 0`` fits
  no bias). This keeps every coordinate on the same ``1 / (lam t)`` step and shrink, the same
  convention as :mod:`streamlearn.solvers.dcd` and liblinear;
* the model is kept as ``w_d = D_d^-1 w`` (:mod:`streamlearn.solvers.embedding`): the shrink
  ``w <- (1 - eta lam) w`` is a scalar on ``w_d`` and the step ``w <- w + eta c y Psi_d(x)``
  is :func:`~streamlearn.solvers.embedding.row_update`. Inside a chunk ``w_d = scale * v``
  so that the shrink is O(1); ``v`` is renormalised when ``scale`` falls below ``1e-6`` (in
  particular at ``t = 1``, where ``1 - eta lam = 0``) and at the end of the chunk, so between
  chunks ``w_d`` holds the model itself;
* the optional projection onto the ball of radius ``1 / sqrt(lam)`` is not applied;
* averaging: ``avg`` holds the mean of the iterates ``w_d`` after steps
  ``average_start .. t``, updated by the same step as ``v`` by keeping the sum of the
  iterates as ``n_old (A + B v)``, ``n_old`` the iterates before the chunk and ``A`` their
  mean at its start (:func:`~streamlearn.solvers.embedding.row_update_pair` moves both at
  once); the end of a chunk folds ``B v`` in and divides by the new count in one sweep of
  the models, the only work per chunk that grows with the model's size.

:func:`pegasos_ovr_chunk` trains ``m`` binary models from one read of each row (one-vs-rest
or one-vs-one, :mod:`streamlearn.solvers.ovr`); each follows exactly the arithmetic of a
single model, and since the shrink ``1 - 1/t`` depends only on the step, the lazy scale is
shared by all of them. :func:`pegasos_chunk` is the same kernel with one model. With the
step counter shared by all models, a one-vs-one model minimises
``lam / 2 ||w||^2 + (1 / n) sum_{i in its classes} loss_i`` with ``n`` all rows: the SVM of
its two classes with the same ``C = 1 / (lam n)`` as the dual coordinate descent models.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from streamlearn.solvers.embedding import (
    IP_N_COLS,
    IP_N_DIMS,
    KernelFamily,
    KernelSpec,
    dense_step_pair_score,
    dense_step_score,
    embed_term_major,
    every_column_row_update,
    every_column_row_update_pair,
    fetch_row,
    from_term_major,
    kernel_rows,
    reads_entries,
    row_buffers,
    row_helpers,
    row_kind,
    row_score,
    row_sq_norm_d,
    row_update,
    row_update_pair,
    rows_in,
    stored_entries,
    term_major,
    term_major_buffers,
    to_term_major,
)
from streamlearn.solvers.ovr import binary_label, one_model

#: ``average_start`` that never averages.
NO_AVERAGING = np.iinfo(np.int64).max
#: ``scale`` below which ``v`` is renormalised.
MIN_SCALE = 1e-6


@njit(cache=True, nogil=True)
def _fold_all(W, AVG, a_coef, b_coef, scale):
    # AVG <- a_coef * AVG + b_coef * V, V <- scale * V for every model, in one sweep
    m, n = W.shape
    for j in range(m):
        if a_coef != 1.0 or b_coef != 0.0:
            for i in range(n):
                v = W[j, i]
                AVG[j, i] = a_coef * AVG[j, i] + b_coef * v
                W[j, i] = scale * v
        elif scale != 1.0:
            for i in range(n):
                W[j, i] *= scale


@njit(cache=True, nogil=True, inline="always")
def _take_step(kind, w_d, avg, x, idx, val, nnz, n_cols, order, eta, pair, eta_avg):
    # a term-major kernel's deferred step of a row's encoding, which holds every column in
    # order: w_d by eta, and avg by eta_avg when pair. Named here, not through row_update:
    # this function's globals are the generic helpers, whose other kinds' code numba
    # copied into the kernel before pruning it (1.6 s of the kernel's compile)
    if pair:
        every_column_row_update_pair(kind, w_d, avg, x, idx, val, nnz, n_cols, order, eta,
                                     eta_avg)
    else:
        every_column_row_update(kind, w_d, x, idx, val, nnz, n_cols, order, eta)


def _pegasos_ovr_kernel(spec: KernelSpec) -> Callable[..., int]:
    # pegasos_ovr_chunk's kernel for one KernelSpec
    fixed_kind, sparse, degree, zero_preserving, order = spec
    hk = row_kind(fixed_kind, sparse)
    permuted = term_major(fixed_kind, sparse, zero_preserving)
    entries = reads_entries(fixed_kind, sparse)

    @njit(cache=True, nogil=True)
    @row_helpers(fixed_kind, sparse, zero_preserving)
    def kernel(X, csr, codes, positive, negative, weight, lam, bias_scale, W_out, AVG_out, t,
               average_start, kind, ipar, fpar):
        # a trigonometric or Hermite map's models are worked on in term-major order (see
        # embedding.to_term_major) and put back at the end; the others in place
        W = W_out
        AVG = AVG_out
        if permuted:
            W = to_term_major(W_out, ipar)
            AVG = to_term_major(AVG_out, ipar)
        n = rows_in(X, csr, sparse)
        m = W.shape[0]
        dim = ipar[IP_N_DIMS]
        n_cols = ipar[IP_N_COLS]
        idx, val, zero = row_buffers(ipar, sparse)
        # term-major rows defer each model's step on a row to its score of the next one
        # (embedding.dense_step_score), which sweeps the model once for both: the stepped
        # row's encoding stays in val_prev while the next is encoded into val; a model that
        # skips the next row, and the end of the chunk, take the step as it was. Other
        # kernels prune these arrays with their uses, and compile no allocator of theirs
        if permuted:
            val_prev = np.empty(val.shape[0], dtype=np.float32)
            pending = np.zeros(m, dtype=np.bool_)
            pending_pair = np.zeros(m, dtype=np.bool_)
            pending_eta = np.zeros(m, dtype=np.float64)
            pending_eta_avg = np.zeros(m, dtype=np.float64)
            work = term_major_buffers(fixed_kind, ipar, fpar, idx)
        margins = np.empty(m, dtype=np.float64)
        scratch = np.empty(n_cols, dtype=np.float64)
        bias_sq = bias_scale * bias_scale
        averaging = n > 0 and t + n >= average_start
        # the sum of the iterates so far is S = n_old (AVG + b_coef V / n_old): AVG keeps its
        # mean in its own units through the chunk, so that it is swept once, at the end
        n_old = 1
        if averaging:
            n_old = t - average_start + 1
            if n_old <= 0:
                n_old = 1
                AVG[:, :] = 0.0
        scale = 1.0
        b_coef = 0.0
        nnz_prev = 0
        for r in range(n):
            k = t + 1 + r
            eta = 1.0 / (lam * k)
            if entries:
                x = zero
                idx, val, nnz = stored_entries(csr, r)
            elif permuted:
                x = X[r]
                val, val_prev = val_prev, val
                nnz = embed_term_major(fixed_kind, x, ipar, fpar, work, val)
            else:
                x, nnz = fetch_row(X, csr, r, sparse, fixed_kind, degree, zero_preserving,
                                   ipar, fpar, idx, val, zero)
            code = codes[r]
            for j in range(m):
                yj = binary_label(code, positive[j], negative[j])
                if yj == 0.0:
                    if permuted and pending[j]:
                        pending[j] = False
                        _take_step(hk, W[j], AVG[j], x, idx, val_prev, nnz_prev, n_cols,
                                   order, pending_eta[j], pending_pair[j], pending_eta_avg[j])
                    margins[j] = np.inf
                    continue
                wj = W[j]
                if permuted and pending[j]:
                    pending[j] = False
                    if pending_pair[j]:
                        score = dense_step_pair_score(wj, AVG[j], val_prev, pending_eta[j],
                                                      pending_eta_avg[j], val, nnz)
                    else:
                        score = dense_step_score(wj, val_prev, pending_eta[j], val, nnz)
                else:
                    score = row_score(hk, wj, x, idx, val, nnz)
                score += wj[dim] * bias_scale
                margins[j] = yj * scale * score
            scale *= 1.0 - 1.0 / k
            if scale < MIN_SCALE:  # no step is pending here: each model took its own above
                _fold_all(W, AVG, 1.0, b_coef / n_old, scale)
                b_coef = 0.0
                scale = 1.0
            c = np.float64(weight[r])
            if c != 0.0:
                sq = -1.0  # ||Psi_d(x)||^2 + bias_scale^2, for a weight above 1
                for j in range(m):
                    if margins[j] < 1.0:
                        yj = binary_label(code, positive[j], negative[j])
                        cj = c
                        if c > 1.0:
                            # the weight beyond 1 carries the step to the hinge, not past it
                            if sq < 0.0:
                                sq = row_sq_norm_d(hk, x, idx, val, nnz, n_cols, order,
                                                   scratch) + bias_sq
                            gap = 1.0 - margins[j] * (1.0 - 1.0 / k)
                            cj = min(c, max(1.0, gap / (eta * sq)))
                        step = eta * cj * yj / scale
                        wj = W[j]
                        if permuted:  # the vector part waits for the next row's score
                            pending[j] = True
                            pending_eta[j] = step
                            pending_pair[j] = b_coef != 0.0
                            pending_eta_avg[j] = -b_coef * step / n_old
                            if b_coef != 0.0:
                                AVG[j, dim] += pending_eta_avg[j] * bias_scale
                        elif b_coef != 0.0:
                            aj = AVG[j]
                            a_step = -b_coef * step / n_old
                            row_update_pair(hk, wj, aj, x, idx, val, nnz, n_cols, order, step,
                                            a_step)
                            aj[dim] += a_step * bias_scale
                        else:
                            row_update(hk, wj, x, idx, val, nnz, n_cols, order, step)
                        wj[dim] += step * bias_scale
            if averaging and k >= average_start:
                b_coef += scale
            nnz_prev = nnz
        if permuted:
            for j in range(m):
                if pending[j]:
                    _take_step(hk, W[j], AVG[j], X[0], idx, val, nnz_prev, n_cols, order,
                               pending_eta[j], pending_pair[j], pending_eta_avg[j])
        if averaging:
            n_new = t + n - average_start + 1
            _fold_all(W, AVG, n_old / n_new, b_coef / n_new, scale)
        else:
            _fold_all(W, AVG, 1.0, 0.0, scale)
        if permuted:
            from_term_major(W_out, W, ipar)
            from_term_major(AVG_out, AVG, ipar)
        return t + n

    return kernel


#: The compiled kernels of :func:`pegasos_ovr_chunk`, one per
#: :class:`~streamlearn.solvers.embedding.KernelSpec`.
PEGASOS_OVR = KernelFamily(_pegasos_ovr_kernel, uses_order=True)


def pegasos_ovr_chunk(X, codes, positive, negative, weight, lam, bias_scale, W, AVG, t,
                      average_start, kind, ipar, fpar):
    """PEGASOS steps of ``m`` binary models over the rows of one chunk, in their order.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
    codes : ndarray of shape (n_rows,), int32
        Class code of each row.
    positive, negative : ndarray of shape (m,), int32
        Model ``j`` takes rows of class code ``positive[j]`` as ``+1`` and rows of code
        ``negative[j]`` (every other code for :data:`REST`) as ``-1``; it skips the rest.
    weight : ndarray of shape (n_rows,), float32
        Sample weights (``np.ones`` for none); a row of weight 0 only shrinks, one above 1
        steps at most to its hinge (see the module's conventions).
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
    dense, csr, sparse = kernel_rows(X)
    return PEGASOS_OVR(kind, ipar, sparse)(dense, csr, codes, positive, negative, weight, lam,
                                      bias_scale, W, AVG, t, average_start, kind, ipar, fpar)


def pegasos_chunk(X, y, weight, lam, bias_scale, w_d, avg, t, average_start, kind, ipar, fpar):
    """Run PEGASOS steps of one model over the rows of one chunk, in their order.

    :func:`pegasos_ovr_chunk` with a single model.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
    y : ndarray of shape (n_rows,), float32
        Labels in {-1, +1}.
    weight : ndarray of shape (n_rows,), float32
        Sample weights (``np.ones`` for none); a row of weight 0 only shrinks, one above 1
        steps at most to its hinge.
    lam : float
        Regularisation ``lam > 0``.
    bias_scale : float
        Value of the constant bias feature (0: no bias).
    w_d : ndarray of shape (ipar[IP_N_DIMS] + 1,), float64, contiguous
        Model in ``w_d`` form, bias weight last; updated in place.
    avg : ndarray of shape (ipar[IP_N_DIMS] + 1,), float64, contiguous
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
    codes, positive, negative = one_model(y)
    W, AVG = w_d[np.newaxis, :], avg[np.newaxis, :]
    return pegasos_ovr_chunk(X, codes, positive, negative, weight, lam, bias_scale, W, AVG, t,
                             average_start, kind, ipar, fpar)
