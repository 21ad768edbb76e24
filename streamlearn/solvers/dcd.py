"""Dual coordinate descent for linear SVMs over one chunk, embedding on the fly.

The algorithm of Hsieh et al. (ICML 2008), the one in liblinear, for

    ``min_w 1/2 ||w||^2 + sum_i C_i loss(y_i w . z_i)``,  ``z_i = [Psi_d(x_i), bias_scale]``

with the hinge (L1-loss, dual box ``0 <= alpha_i <= C_i``) or the squared hinge (L2-loss,
``D_ii = 1 / (2 C_i)`` added to ``Q_ii``, no upper bound). The dual is

    ``max_alpha  sum_i alpha_i - 1/2 ||w(alpha)||^2 - 1/2 sum_i D_ii alpha_i^2``,
    ``w(alpha) = sum_i y_i alpha_i z_i``.

Run over a dataset larger than memory as block minimisation (Yu et al., KDD 2010): a chunk is
a block, its ``alpha`` come from an ``ExampleState`` and go back to it, and ``w`` (kept as
``w_d``, :mod:`streamlearn.solvers.embedding`) carries over from chunk to chunk; a warm start
is the same call with the previous ``alpha`` and ``w_d``.

Conventions: labels are float32 in {-1, +1}; ``C_i = C * weight_i`` (rows with ``C_i <= 0``
are skipped and keep ``alpha_i = 0``); the bias is liblinear's, a regularised constant
feature of value ``bias_scale`` whose weight is the last entry of ``w_d`` (the intercept is
``w_d[-1] * bias_scale``, and ``bias_scale = 0`` fits none); no shrinking.

Centred rows: given a ``centre`` ``mu`` (an embedded row in ``w_d`` form, e.g. the rows'
mean from :func:`embedding_sum`), the sweeps solve the problem of the rows ``z_i - mu``
with the same bias feature, so that the intercept of the rows themselves is
``b_c bias_scale - w . mu`` and only the intercept's penalty differs from liblinear's.
Embedded rows share a large common part (a B-spline map puts weight 1 on each feature's
bases in every row), which makes the dual's kernel matrix a near-constant block plus the
information; coordinate descent moves along that block one row at a time and crawls.
Inside a call ``w = v - s mu`` is kept lazily (``v`` updated sparsely, ``s`` and ``v . mu``
as scalars), so a step still costs the row's non-zeros; ``W`` holds the models of the rows
themselves before and after it. :func:`move_centre` changes the centre between epochs.

Stopping uses liblinear's projected-gradient range ``max PG - min PG`` over all rows of an
epoch (merge the chunks' ``pg_max`` by max and ``pg_min`` by min) and/or the duality gap
``P(w) - D(alpha)``, with ``D = sum alpha_sum - sum dual_quad - 1/2 ||w||^2`` from the chunks
and ``P = 1/2 ||w||^2 + sum`` :func:`primal_loss_chunk`.

:func:`dcd_ovr_chunk` trains ``m`` binary models from one read of each row (one-vs-rest or
one-vs-one, :mod:`streamlearn.solvers.ovr`): one visiting order, one ``Q_ii`` per row, one
dual variable per row and model, each model exactly the arithmetic of a single one.
:func:`dcd_chunk` is the same kernel with one model. For the hinge loss the box bound is
``C_i`` rounded to float32, the precision the dual variables are stored in: a variable
clamped at the bound then equals it exactly and is recognised as bounded, so its projected
gradient is 0 and the projected-gradient range (the stopping rule) goes to 0 at the optimum.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from streamlearn.solvers.embedding import (
    IP_DEGREE,
    IP_MAX_NNZ,
    IP_N_COLS,
    IP_N_DIMS,
    IP_ZERO_PRESERVING,
    KernelFamily,
    KernelSpec,
    embed_row,
    embed_term_major,
    fetch_row,
    kernel_rows,
    kernel_spec,
    model_dot,
    reads_entries,
    row_buffers,
    row_helpers,
    row_kind,
    row_score,
    row_sq_norm_d,
    row_update,
    rows_in,
    stored_entries,
    term_major,
    term_major_buffers,
    term_major_columns,
)
from streamlearn.solvers.ovr import binary_label, one_model

HINGE = 1
SQUARED_HINGE = 2
LOSSES = {"hinge": HINGE, "squared_hinge": SQUARED_HINGE}
#: Projected gradients at most this large in magnitude leave ``alpha_i`` unchanged.
PG_EPS = 1e-12

#: ``centre`` of the kernels when the rows are not centred.
NO_CENTRE = np.zeros(0)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, nogil=True)
def _splitmix64(state):
    # next (state, 64 random bits) of the splitmix64 generator
    state = state + _GOLDEN
    z = state
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return state, z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def _shuffle(order, state):
    # Fisher-Yates shuffle of ``order`` in place; returns the generator state
    for i in range(order.shape[0] - 1, 0, -1):
        state, z = _splitmix64(state)
        j = np.int64(z % np.uint64(i + 1))
        order[i], order[j] = order[j], order[i]
    return state


@njit(cache=True, nogil=True, forceinline=True)
def projected_gradient(g, a, upper):
    """The gradient ``g`` of a dual variable ``a`` in ``[0, upper]`` projected on its box:
    the part that can move it (Hsieh et al., ICML 2008, eq. 8)."""
    if a == 0.0:
        return min(g, 0.0)
    if a >= upper:
        return max(g, 0.0)
    return g


@njit(cache=True, nogil=True)
def row_orders(n_rows, n_inner, seed):
    """The visiting orders of :func:`dcd_chunk`'s sweeps for a given seed.

    Parameters
    ----------
    n_rows, n_inner : int
    seed : int
        Non-negative.

    Returns
    -------
    ndarray of shape (n_inner, n_rows), int64
        Row ``s`` is the permutation used by sweep ``s``.
    """
    out = np.empty((n_inner, n_rows), dtype=np.int64)
    order = np.arange(n_rows)
    state = np.uint64(seed)
    for s in range(n_inner):
        state = _shuffle(order, state)
        for i in range(n_rows):
            out[s, i] = order[i]
    return out


def _dcd_ovr_kernel(spec: KernelSpec) -> Callable[..., tuple]:
    # dcd_ovr_chunk's kernel for one KernelSpec
    fixed_kind, sparse, degree, zero_preserving, order = spec
    hk = row_kind(fixed_kind, sparse)
    # a trigonometric or Hermite map's rows come in term-major order; dcd_ovr_chunk hands
    # this kernel its models, monitor and centre in that order
    permuted = term_major(fixed_kind, sparse, zero_preserving)
    entries = reads_entries(fixed_kind, sparse)

    @njit(cache=True, nogil=True)
    @row_helpers(fixed_kind, sparse, zero_preserving)
    def kernel(X, csr, codes, positive, negative, c, alpha, W, loss, bias_scale, n_inner, seed,
               kind, ipar, fpar, monitor, monitor_loss, centre):
        n = rows_in(X, csr, sparse)
        m = W.shape[0]
        dim = ipar[IP_N_DIMS]
        n_cols = ipar[IP_N_COLS]
        idx, val, zero = row_buffers(ipar, sparse)
        if permuted:
            work = term_major_buffers(fixed_kind, ipar, fpar, idx)
        scratch = np.empty(n_cols, dtype=np.float64)
        bias_sq = bias_scale * bias_scale
        qd = np.full(n, -1.0)
        pg_max = np.full(m, -np.inf)
        pg_min = np.full(m, np.inf)
        orders = row_orders(n, n_inner, seed)
        monitored = monitor.shape[0] == m and n_inner > 0
        # centred rows z - mu: model j is kept as w_j = v_j - s_j mu, with v_j in W[j] and the
        # bias weight of the centred problem in W[j, dim]; vmu_j = v_j . mu, zmu_r = z_r . mu
        centred = centre.shape[0] > 0 and n > 0 and n_inner > 0
        mumu = model_dot(centre, centre, ipar) if centred else 0.0
        zmu = np.zeros(n if centred else 0)
        s = np.zeros(m)
        vmu = np.zeros(m)
        if centred:
            for j in range(m):
                vmu[j] = model_dot(W[j], centre, ipar)
                W[j, dim] += vmu[j] / bias_scale
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
                if entries:
                    x = zero
                    idx, val, nnz = stored_entries(csr, r)
                elif permuted:
                    x = X[r]
                    nnz = embed_term_major(fixed_kind, x, ipar, fpar, work, val)
                else:
                    x, nnz = fetch_row(X, csr, r, sparse, fixed_kind, degree, zero_preserving,
                                       ipar, fpar, idx, val, zero)
                if qd[r] < 0.0:
                    qd[r] = row_sq_norm_d(hk, x, idx, val, nnz, n_cols, order, scratch) + bias_sq
                    if centred:
                        zmu[r] = row_score(hk, centre, x, idx, val, nnz)
                        qd[r] += mumu - 2.0 * zmu[r]
                q = qd[r] + diag
                code = codes[r]
                for j in range(m):
                    yj = binary_label(code, positive[j], negative[j])
                    if yj == 0.0:
                        continue
                    wj = W[j]
                    a = np.float64(alpha[r, j])
                    score = row_score(hk, wj, x, idx, val, nnz) + wj[dim] * bias_scale
                    if centred:
                        score -= s[j] * (zmu[r] - mumu) + vmu[j]
                    g = yj * score - 1.0 + diag * a
                    pg = projected_gradient(g, a, upper)
                    if sweep == 0:
                        pg_max[j] = max(pg_max[j], pg)
                        pg_min[j] = min(pg_min[j], pg)
                        if monitored:
                            mj = monitor[j]
                            v = 1.0 - yj * (row_score(hk, mj, x, idx, val, nnz)
                                            + mj[dim] * bias_scale)
                            if v > 0.0:
                                monitor_loss[j] += ci * (v if loss == HINGE else v * v)
                    if abs(pg) <= PG_EPS:
                        continue
                    a_new = min(max(a - g / q, 0.0), upper) if q > 0.0 else upper
                    delta = np.float64(np.float32(a_new)) - a
                    if delta == 0.0:
                        continue
                    alpha[r, j] = np.float32(a_new)
                    row_update(hk, wj, x, idx, val, nnz, n_cols, order, delta * yj)
                    wj[dim] += delta * yj * bias_scale
                    if centred:
                        s[j] += delta * yj
                        vmu[j] += delta * yj * zmu[r]
        if centred:  # back to the model of the rows themselves: w = v - s mu, its own bias
            for j in range(m):
                wj = W[j]
                for i in range(dim):
                    wj[i] -= s[j] * centre[i]
                wj[dim] -= (vmu[j] - s[j] * mumu) / bias_scale
        alpha_sum = np.zeros(m)
        dual_quad = np.zeros(m)
        for r in range(n):
            for j in range(m):
                a = np.float64(alpha[r, j])
                alpha_sum[j] += a
                if loss == SQUARED_HINGE and c[r] > 0.0:
                    dual_quad[j] += a * a / (4.0 * c[r])
        return pg_max, pg_min, alpha_sum, dual_quad

    return kernel


#: The compiled kernels of :func:`dcd_ovr_chunk`, one per :class:`KernelSpec`.
DCD_OVR = KernelFamily(_dcd_ovr_kernel, uses_order=True)


def dcd_ovr_chunk(X, codes, positive, negative, c, alpha, W, loss, bias_scale, n_inner, seed,
                  kind, ipar, fpar, monitor=None, monitor_loss=None, centre=None):
    """Dual coordinate descent sweeps of ``m`` binary models over one chunk.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
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
    monitor : ndarray of shape (m, ipar[IP_N_DIMS] + 1), float64, optional
        Frozen models (``w_d`` form) whose primal loss is summed over the rows as the first
        sweep reads them (:func:`primal_loss_chunk` of each, at no extra embedding).
    monitor_loss : ndarray of shape (m,), float64, optional
        With ``monitor``: ``sum_i C_i loss(y_ij monitor_j . z_i)`` over the rows model ``j``
        trains on is added to entry ``j`` (in place).
    centre : ndarray of shape (ipar[IP_N_DIMS] + 1,), float64, optional
        A mean embedded row ``mu`` in ``w_d`` form (:func:`mean_embedding`): the sweeps
        solve the problem of the centred rows ``z_i - mu``, whose intercept absorbs
        ``- w . mu`` (see the module's notes). ``W`` and ``monitor`` stay models of the rows
        themselves (scores ``w . z + W[j, -1] bias_scale``) before and after the call. Needs
        ``bias_scale > 0``.

    Returns
    -------
    pg_max, pg_min : ndarray of shape (m,), float64
        Largest and smallest projected gradient of each model over the first sweep.
    alpha_sum : ndarray of shape (m,), float64
        ``sum_i alpha_ij`` after the sweeps.
    dual_quad : ndarray of shape (m,), float64
        ``1/2 sum_i D_ii alpha_ij^2`` after the sweeps (0 for the hinge).
    """
    if monitor is None:
        monitor = np.zeros((0, W.shape[1]))
        monitor_loss = np.zeros(0)
    elif monitor_loss is None or monitor.shape != W.shape or monitor_loss.shape != W.shape[:1]:
        raise ValueError("monitor must have the shape of W, and monitor_loss one entry per "
                         "model")
    if centre is None:
        centre = NO_CENTRE
    elif not bias_scale > 0.0 or centre.shape != W.shape[1:]:
        raise ValueError("centre needs a bias (bias_scale > 0) and the length of a model")
    dense, csr, sparse = kernel_rows(X)
    kernel = DCD_OVR(kind, ipar, sparse)
    spec = kernel_spec(kind, ipar, sparse, True)
    if not term_major(spec.kind, spec.sparse, spec.zero_preserving):
        return kernel(dense, csr, codes, positive, negative, c, alpha, W, loss, bias_scale,
                      n_inner, seed, kind, ipar, fpar, monitor, monitor_loss, centre)
    # the kernel works on the columns in the order its rows are encoded (penalty order 0:
    # the products and norms it takes of them do not depend on the order)
    cols = np.r_[term_major_columns(ipar), int(ipar[IP_N_DIMS])]
    permuted = np.ascontiguousarray(W[:, cols])
    out = kernel(dense, csr, codes, positive, negative, c, alpha, permuted, loss, bias_scale,
                 n_inner, seed, kind, ipar, fpar,
                 np.ascontiguousarray(monitor[:, cols]) if monitor.shape[0] else monitor,
                 monitor_loss, np.ascontiguousarray(centre[cols]) if centre.shape[0] else centre)
    W[:, cols] = permuted
    return out


def dcd_chunk(X, y, c, alpha, w_d, loss, bias_scale, n_inner, seed, kind, ipar, fpar,
              centre=None):
    """Dual coordinate descent sweeps of one model over one chunk (a block of the dual).

    :func:`dcd_ovr_chunk` with a single model.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
    y : ndarray of shape (n_rows,), float32
        Labels in {-1, +1}.
    c : ndarray of shape (n_rows,), float64
        Per-row penalties ``C_i = C * weight_i``.
    alpha : ndarray of shape (n_rows,), float32, contiguous
        The chunk's dual variables, updated in place (``w_d`` is kept equal to
        ``sum y_i alpha_i z_i`` for these float32 values).
    w_d : ndarray of shape (ipar[IP_N_DIMS] + 1,), float64, contiguous
        Model in ``w_d`` form, bias weight last; updated in place.
    loss : int
        :data:`HINGE` or :data:`SQUARED_HINGE`.
    bias_scale : float
        Value of the regularised constant bias feature (0: no bias).
    n_inner : int
        Sweeps over the chunk, each in a fresh random order (:func:`row_orders`).
    seed : int
        Non-negative seed of the orders.
    kind : int
    ipar, fpar : ndarray
        Packed map (:func:`~streamlearn.solvers.embedding.embedding_params`).
    centre : ndarray of shape (ipar[IP_N_DIMS] + 1,), float64, optional
        Solve for the centred rows (:func:`dcd_ovr_chunk`).

    Returns
    -------
    pg_max, pg_min : float
        Largest and smallest projected gradient over the first sweep, i.e. at the state
        given (``-inf``, ``inf`` for an empty chunk or ``n_inner = 0``).
    alpha_sum : float
        ``sum_i alpha_i`` after the sweeps.
    dual_quad : float
        ``1/2 sum_i D_ii alpha_i^2`` after the sweeps (0 for the hinge).
    """
    codes, positive, negative = one_model(y)
    out = dcd_ovr_chunk(X, codes, positive, negative, c, alpha[:, np.newaxis], w_d[np.newaxis, :],
                        loss, bias_scale, n_inner, seed, kind, ipar, fpar, centre=centre)
    return tuple(float(o[0]) for o in out)


def scale_dual_change(alpha: np.ndarray, before: np.ndarray, share: float) -> None:
    """Scale the change of dual variables by a lane's share, in place:
    ``alpha <- before + share (alpha - before)``.

    What one lane of a dual coordinate descent pass split into lanes writes (CoCoA's
    averaging, Jaggi et al., "Communication-efficient distributed dual coordinate
    ascent", NIPS 2014): with the shares adding up to 1 the variables after the merge are
    a convex combination of the lanes' points, feasible, and the lanes' model changes
    added with the same factors give ``w(alpha)`` of them.

    Parameters
    ----------
    alpha : ndarray, float32
        The lane's dual variables after its sweeps; overwritten.
    before : ndarray, float32
        The same variables as the lane read them.
    share : float
        The lane's part of the rows, in ``(0, 1]``.
    """
    alpha[...] = before + share * (alpha.astype(np.float64) - before)


def _embedding_sum_kernel(spec: KernelSpec) -> Callable[..., None]:
    # embedding_sum's kernel for one KernelSpec
    fixed_kind, sparse, degree, zero_preserving, order = spec
    hk = row_kind(fixed_kind, sparse)
    entries = reads_entries(fixed_kind, sparse)

    @njit(cache=True, nogil=True)
    @row_helpers(fixed_kind, sparse, zero_preserving)
    def kernel(X, csr, kind, ipar, fpar, weight, out):
        n = rows_in(X, csr, sparse)
        idx, val, zero = row_buffers(ipar, sparse)
        for r in range(n):
            if weight[r] == 0.0:
                continue
            if entries:
                x = zero
                idx, val, nnz = stored_entries(csr, r)
            else:
                x, nnz = fetch_row(X, csr, r, sparse, fixed_kind, degree, zero_preserving,
                                   ipar, fpar, idx, val, zero)
            row_update(hk, out, x, idx, val, nnz, ipar[IP_N_COLS], order,
                       np.float64(weight[r]))

    return kernel


#: The compiled kernels of :func:`embedding_sum`, one per :class:`KernelSpec`.
EMBEDDING_SUM = KernelFamily(_embedding_sum_kernel, uses_order=True)


def embedding_sum(X, weight, kind, ipar, fpar, out):
    """``out <- out + sum_i weight_i z_i``: the weighted sum of some embedded rows, ``w_d`` form.

    The rows' updates ``w <- w + weight_i z_i`` added up, so that a mean ``mu`` made from
    it scores a row as ``mu . z`` (:func:`~streamlearn.solvers.embedding.row_score`) and
    has the squared norm :func:`~streamlearn.solvers.embedding.model_sq_norm`: what
    :func:`dcd_ovr_chunk` takes as ``centre``.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
    weight : ndarray of shape (n_rows,)
        Each row's weight (rows of weight 0 are skipped).
    kind : int
    ipar, fpar : ndarray
        Packed map (:func:`~streamlearn.solvers.embedding.embedding_params`).
    out : ndarray of shape (ipar[IP_N_DIMS] + 1,), float64
        Added to in place; its last (bias) entry is left alone.
    """
    dense, csr, sparse = kernel_rows(X)
    EMBEDDING_SUM(kind, ipar, sparse)(dense, csr, kind, ipar, fpar,
                                 np.ascontiguousarray(weight, dtype=np.float64), out)


def mean_embedding(X, kind, ipar, fpar):
    """The mean embedded row ``mu = mean_i z_i`` of some rows, ``w_d`` form (:func:`embedding_sum`).

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
        At least one row.
    kind : int
    ipar, fpar : ndarray

    Returns
    -------
    ndarray of shape (ipar[IP_N_DIMS] + 1,), float64
        The bias entry (last) is 0.
    """
    n = X.shape[0]
    if n == 0:
        raise ValueError("the mean embedded row needs at least one row")
    out = np.zeros(int(ipar[IP_N_DIMS]) + 1)
    embedding_sum(X, np.full(n, 1.0 / n), kind, ipar, fpar, out)
    return out


def move_centre(W, old, new, bias_scale, ipar):
    """Models of the dual for rows centred on ``old`` turned into those for ``new``.

    Dual coordinate descent keeps ``w = sum_i y_i alpha_i (z_i - mu)`` and the bias weight
    ``b_c = bias_scale sum_i y_i alpha_i``; with the same ``alpha`` and another centre the
    weights are ``w - (b_c / bias_scale) (new - old)``. ``W`` holds models of the rows
    themselves (the bias weight the intercept's, ``b_c - w . mu / bias_scale``), so both
    ends are converted.

    Parameters
    ----------
    W : ndarray of shape (m, ipar[IP_N_DIMS] + 1), float64
        Updated in place.
    old, new : ndarray of shape (ipar[IP_N_DIMS] + 1,) or None
        The centres (None: the origin).
    bias_scale : float
        Positive.
    ipar : ndarray
    """
    dim = int(ipar[IP_N_DIMS])
    old = np.zeros(dim + 1) if old is None else old
    for w in W:
        b_c = w[dim] + model_dot(w, old, ipar) / bias_scale
        w[:dim] -= (b_c / bias_scale) * (new[:dim] - old[:dim])
        w[dim] = b_c - model_dot(w, new, ipar) / bias_scale


@njit(cache=True, nogil=True)
def primal_loss_chunk(X, y, c, w_d, loss, bias_scale, kind, ipar, fpar):
    """``sum_i C_i loss(y_i (w . Psi_d(x_i) + b))`` over a chunk, embedding on the fly.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
    y : ndarray of shape (n_rows,), float32
        Labels in {-1, +1}.
    c : ndarray of shape (n_rows,), float64
        Per-row penalties ``C_i``.
    w_d : ndarray of shape (ipar[IP_N_DIMS] + 1,), float64
        Model in ``w_d`` form, bias weight last.
    loss : int
        :data:`HINGE` or :data:`SQUARED_HINGE`.
    bias_scale : float
    kind : int
    ipar, fpar : ndarray
        Packed map.

    Returns
    -------
    float
        The chunk's part of the primal objective; add ``1/2 ||w||^2``
        (:func:`~streamlearn.solvers.embedding.model_sq_norm` plus the squared bias weight)
        once.
    """
    dim = ipar[IP_N_DIMS]
    idx = np.empty(ipar[IP_MAX_NNZ], dtype=np.int32)
    val = np.empty(ipar[IP_MAX_NNZ], dtype=np.float32)
    b = w_d[dim] * bias_scale
    total = 0.0
    for r in range(X.shape[0]):
        x = X[r]
        nnz = embed_row(kind, ipar[IP_DEGREE], ipar[IP_ZERO_PRESERVING] != 0, x, ipar, fpar,
                        idx, val)
        m = 1.0 - np.float64(y[r]) * (row_score(kind, w_d, x, idx, val, nnz) + b)
        if m > 0.0:
            total += c[r] * (m if loss == HINGE else m * m)
    return total


def primal_objective(
    Z: np.ndarray,
    y: np.ndarray,
    coef: np.ndarray,
    bias_weight: float,
    C: float,
    loss: str = "hinge",
    bias_scale: float = 1.0,
    sample_weight: np.ndarray | None = None,
) -> float:
    """Primal SVM objective for materialised features, in liblinear's bias convention.

    ``1/2 (||coef||^2 + bias_weight^2) + C sum_i s_i loss(y_i (Z_i . coef + bias_scale
    bias_weight))``, with ``s_i`` the sample weights.

    Parameters
    ----------
    Z : ndarray of shape (n_rows, n_columns)
        Features (e.g. a map's ``transform``).
    y : ndarray of shape (n_rows,)
        Labels in {-1, +1}.
    coef : ndarray of shape (n_columns,)
    bias_weight : float
        Weight of the constant feature (scikit-learn: ``intercept_ / intercept_scaling``).
    C : float
    loss : {"hinge", "squared_hinge"}
    bias_scale : float
        Value of the constant feature (scikit-learn's ``intercept_scaling``).
    sample_weight : ndarray of shape (n_rows,), optional

    Returns
    -------
    float
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}")
    coef = np.asarray(coef, dtype=np.float64)
    scores = np.asarray(Z, dtype=np.float64) @ coef + bias_scale * bias_weight
    m = np.maximum(0.0, 1.0 - np.asarray(y, dtype=np.float64) * scores)
    losses = m if loss == "hinge" else m * m
    if sample_weight is not None:
        losses = losses * np.asarray(sample_weight, dtype=np.float64)
    return float(0.5 * (coef @ coef + bias_weight**2) + C * losses.sum())
