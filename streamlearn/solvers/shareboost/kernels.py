"""ShareBoost kernels (paper 003): one chunk's share of the loss, its gradients and column scores.

The model scores a row ``x`` as ``s = b + sum_j g_j(x) W_j a(x)``: each selected group ``j``
has a *gate* ``g_j(x)`` (a scalar: a feature value, a stump ``1[x_f <= theta]``, an anchor's
ball indicator ``1[||x - v|| < r]``) multiplying a *base* vector ``a(x)`` of length ``q``
(``[1]`` for single columns, ``[x, 1]`` for the piecewise-linear anchors), ``W_j`` is
``k x q`` and ``b`` the intercept. The loss of a row with class ``y`` is the soft-max
multiclass loss of eq. 3, ``log sum_c exp(1[c != y] - s_y + s_c)``; its gradient with respect
to ``s`` is ``rho - e_y`` with ``rho`` of eq. 6.

Kernels take one chunk's arrays (float32 data, float64 accumulators) and either return small
arrays or add into the accumulators they are given:

- :func:`restricted_objective_chunk`: loss, gradient and errors of the restricted problem
  (Algorithm 1, line 6) over the selected gates;
- :func:`margin_residuals_chunk`: the weighted residuals ``w_i (rho_i - e_{y_i})``;
- :func:`single_column_objective_chunk`: the first for groups of one column (features),
  with sweeps that vectorise; :func:`linear_objective_chunk` and
  :func:`linear_margin_residuals_chunk` read linear columns from the rows themselves;
  :func:`stump_objective_chunk` for stumps, from per-feature tables of their steps
  (:func:`stump_tables`) and histograms of the residuals;
- :func:`linear_gradient_chunk`, :func:`stump_histogram_chunk`,
  :func:`anchor_histogram_chunk` (:func:`anchor_ramp_histogram_chunk` for soft-edged
  gates): the gradient matrix of eq. 7 for every candidate column of a family, from the
  residuals;
- :func:`linear_gates_chunk`, :func:`stump_gates_chunk`: the gates of selected columns (anchor
  gates are a comparison of distances, :mod:`streamlearn.features.anchors`);
- :func:`linear_gradient_csr`, :func:`linear_gates_csr`: the linear family's two kernels
  over CSR rows, each stored entry costing its work and each zero nothing.

Small chunks take numpy twins of some of them instead (:func:`restricted_objective_numpy`,
:func:`margin_residuals_numpy`, :func:`decision_numpy`, :func:`anchor_histogram_numpy`,
the gates), so that a fit on small data compiles few kernels
(:data:`NUMPY_OBJECTIVE_ENTRIES`, :data:`NUMPY_ANCHOR_PAIRS`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from streamlearn.solvers.vector_exp import MIN_LENGTH, exp_nonpositive


# -- scores and the soft-max loss ----------------------------------------------------------
@njit(cache=True, nogil=True, fastmath=True)
def _row_scores(i: int, gates: np.ndarray, base: np.ndarray, coef: np.ndarray,
                intercept: np.ndarray, active: np.ndarray, s: np.ndarray, a: np.ndarray) -> int:
    # s <- b + sum_j g_ij W_j a_i ; active[:n_active] <- groups with a non-zero gate;
    # a <- a_i in double precision (contiguous, for the inner products)
    k = intercept.shape[0]
    q = base.shape[1]
    for f in range(q):
        a[f] = base[i, f]
    for c in range(k):
        s[c] = intercept[c]
    n_active = 0
    for j in range(gates.shape[1]):
        g = gates[i, j]
        if g == 0.0:
            continue
        active[n_active] = j
        n_active += 1
        for c in range(k):
            acc = 0.0
            for f in range(q):
                acc += coef[j, c, f] * a[f]
            s[c] += g * acc
    return n_active


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract", "nsz", "arcp"},
      inline="always")
def _sum(a: np.ndarray) -> float:
    # a sum in SIMD lanes (re-associated)
    total = 0.0
    for c in range(a.shape[0]):
        total += a[c]
    return total


def exp_lanes(k: int) -> np.ndarray | None:
    """The ``exp_work`` argument of the soft-max kernels for ``k`` classes.

    From :data:`~streamlearn.solvers.vector_exp.MIN_LENGTH` classes on, scratch space for
    the exponentials in SIMD lanes; below, None: one call of the C library's ``exp`` per
    class is quicker there, and a kernel given None is compiled without the lanes' code
    (numba prunes the branch on a None argument), which keeps the first fit on few
    classes from compiling it.
    """
    return np.empty(k) if k >= MIN_LENGTH else None


@njit(cache=True, nogil=True)
def _softmax_residual(s: np.ndarray, y: int, r: np.ndarray, exp_work: Any) -> float:
    # r <- rho - e_y (eq. 6); returns the loss of eq. 3. With exp_work (exp_lanes) the
    # exponentials are taken in SIMD lanes and s is overwritten
    if exp_work is not None:
        return _softmax_residual_lanes(s, y, r, exp_work)
    k = s.shape[0]
    top = -np.inf
    for c in range(k):
        z = s[c] - s[y] + (0.0 if c == y else 1.0)
        r[c] = z
        if z > top:
            top = z
    total = 0.0
    for c in range(k):
        r[c] = np.exp(r[c] - top)
        total += r[c]
    inv = 1.0 / total  # one division per row, not one per class
    for c in range(k):
        r[c] *= inv
    r[y] -= 1.0
    return top + np.log(total)


@njit(cache=True, nogil=True)
def _softmax_residual_lanes(s: np.ndarray, y: int, r: np.ndarray, work: np.ndarray) -> float:
    # _softmax_residual for many classes, s overwritten (scratch for the exponentials).
    # Every sweep over the classes is branch-free: z_c = s_c - s_y + 1 with z_y set to 0
    # after the sweep, the exponentials by exp_nonpositive
    k = s.shape[0]
    shift = s[y] - 1.0
    for c in range(k):
        r[c] = s[c] - shift
    r[y] = 0.0
    top = r[0]
    for c in range(1, k):
        top = max(top, r[c])
    for c in range(k):
        r[c] -= top
    exp_nonpositive(r, r, work)
    total = _sum(r)
    inv = 1.0 / total  # one division per row, not one per class
    for c in range(k):
        r[c] *= inv
    r[y] -= 1.0
    return top + np.log(total)


@njit(cache=True, nogil=True)
def _argmax(s: np.ndarray) -> int:
    best = 0
    for c in range(1, s.shape[0]):
        if s[c] > s[best]:
            best = c
    return best


@njit(cache=True, nogil=True)
def _tally_row(s: np.ndarray, y: int, w: float, r: np.ndarray, sums: np.ndarray,
               exp_work: Any) -> None:
    # r <- rho - e_y of a row with scores s (s may be overwritten); adds w * loss, w and
    # (if misclassified) w to sums = [loss, weight, errors]
    if _argmax(s) != y:
        sums[2] += w
    sums[0] += w * _softmax_residual(s, y, r, exp_work)
    sums[1] += w


@njit(cache=True, nogil=True)
def decision_chunk(gates: np.ndarray, base: np.ndarray, coef: np.ndarray,
                   intercept: np.ndarray) -> np.ndarray:
    """Class scores ``s = b + sum_j g_j W_j a`` of every row.

    Parameters
    ----------
    gates : ndarray of shape (n, T), float32
    base : ndarray of shape (n, q), float32
    coef : ndarray of shape (T, k, q), float64
    intercept : ndarray of shape (k,), float64

    Returns
    -------
    ndarray of shape (n, k), float64
    """
    n = gates.shape[0]
    k = intercept.shape[0]
    out = np.empty((n, k))
    s = np.empty(k)
    active = np.empty(gates.shape[1], dtype=np.int64)
    a = np.empty(base.shape[1])
    for i in range(n):
        _row_scores(i, gates, base, coef, intercept, active, s, a)
        for c in range(k):
            out[i, c] = s[c]
    return out


@njit(cache=True, nogil=True)
def restricted_objective_chunk(gates: np.ndarray, base: np.ndarray, codes: np.ndarray,
                               weight: np.ndarray, coef: np.ndarray, intercept: np.ndarray,
                               grad_coef: np.ndarray, grad_intercept: np.ndarray,
                               exp_work: np.ndarray | None = None
                               ) -> tuple[float, float, float]:
    """One chunk's share of the restricted problem: weighted loss sum and its gradient.

    Parameters
    ----------
    gates : ndarray of shape (n, T), float32
        Gates of the selected groups.
    base : ndarray of shape (n, q), float32
    codes : ndarray of shape (n,), int32
    weight : ndarray of shape (n,), float32
    coef : ndarray of shape (T, k, q), float64
    intercept : ndarray of shape (k,), float64
    grad_coef : ndarray of shape (T, k, q), float64
        Accumulates ``sum_i w_i g_ij (rho_i - e_{y_i}) a_i^T`` (added to).
    grad_intercept : ndarray of shape (k,), float64
        Accumulates ``sum_i w_i (rho_i - e_{y_i})`` (added to).
    exp_work : ndarray of shape (k,), float64, optional
        :func:`exp_lanes`: scratch space that makes the soft-max take its exponentials in
        SIMD lanes (many classes); None (default) calls ``exp`` per class. The same
        argument, with the same meaning, ends every soft-max kernel here.

    Returns
    -------
    loss : float
        ``sum_i w_i loss_i``.
    weight_sum : float
    errors : float
        Weight of the rows whose argmax score is not their class.
    """
    n = gates.shape[0]
    k = intercept.shape[0]
    q = base.shape[1]
    s = np.empty(k)
    r = np.empty(k)
    active = np.empty(gates.shape[1], dtype=np.int64)
    a = np.empty(q)
    sums = np.zeros(3)  # loss, weight, errors
    for i in range(n):
        w = np.float64(weight[i])
        if w == 0.0:  # held out, or weighted out: adds nothing
            continue
        y = codes[i]
        n_active = _row_scores(i, gates, base, coef, intercept, active, s, a)
        _tally_row(s, y, w, r, sums, exp_work)
        for c in range(k):
            grad_intercept[c] += w * r[c]
        for t in range(n_active):
            j = active[t]
            wg = w * gates[i, j]
            for c in range(k):
                rc = wg * r[c]
                for f in range(q):
                    grad_coef[j, c, f] += rc * a[f]
    return sums[0], sums[1], sums[2]


@njit(cache=True, nogil=True)
def margin_residuals_chunk(gates: np.ndarray, base: np.ndarray, codes: np.ndarray,
                           weight: np.ndarray, coef: np.ndarray, intercept: np.ndarray,
                           exp_work: np.ndarray | None = None
                           ) -> tuple[np.ndarray, float, float, float]:
    """Weighted residuals ``w_i (rho_i - e_{y_i})`` of every row (eqs. 6-7).

    Parameters
    ----------
    gates, base, codes, weight, coef, intercept, exp_work
        As in :func:`restricted_objective_chunk`.

    Returns
    -------
    residuals : ndarray of shape (n, k), float64
    loss, weight_sum, errors : float
        As in :func:`restricted_objective_chunk`.
    """
    n = gates.shape[0]
    k = intercept.shape[0]
    out = np.empty((n, k))
    s = np.empty(k)
    r = np.empty(k)
    active = np.empty(gates.shape[1], dtype=np.int64)
    a = np.empty(base.shape[1])
    sums = np.zeros(3)  # loss, weight, errors
    for i in range(n):
        w = np.float64(weight[i])
        if w == 0.0:  # held out, or weighted out: a zero residual
            for c in range(k):
                out[i, c] = 0.0
            continue
        y = codes[i]
        _row_scores(i, gates, base, coef, intercept, active, s, a)
        _tally_row(s, y, w, r, sums, exp_work)
        for c in range(k):
            out[i, c] = w * r[c]
    return out, sums[0], sums[1], sums[2]


#: Largest ``n x T x k x q`` (rows, selected groups, classes, base columns) of a chunk of
#: small data (:func:`~streamlearn.solvers.shareboost.passes.numpy_paths`) whose restricted
#: problem, residuals and class scores numpy computes (:func:`restricted_objective_numpy`,
#: :func:`margin_residuals_numpy`, :func:`decision_numpy`) instead of the kernels: dense
#: matrix products over every selected group, at most a few milliseconds (on one BLAS
#: thread, about the kernels' time on 2,000 rows), with temporaries of at most ``n x k x q``
#: and ``n x T`` floats, where compiling the kernels costs 0.3-1 s each.
NUMPY_OBJECTIVE_ENTRIES = 1 << 22


def _scores_numpy(gates: np.ndarray, base: np.ndarray, coef: np.ndarray,
                  intercept: np.ndarray) -> np.ndarray:
    # s = b + sum_j g_j W_j a of every row, in float64, (n, k)
    gates64, base64 = gates.astype(np.float64), base.astype(np.float64)
    return _scores_float64(gates64, base64, gates64 * base64 if coef.shape[2] == 1 else None,
                           coef, intercept)


def _scores_float64(gates: np.ndarray, base: np.ndarray, products: np.ndarray | None,
                    coef: np.ndarray, intercept: np.ndarray) -> np.ndarray:
    # _scores_numpy of float64 gates and base: the gates times the coefficients (one matrix
    # product over the groups), then each class's row of that against the base vector;
    # products (q = 1) are the gates times the base
    T, k, q = coef.shape
    if q == 1:  # single columns (linear): the groups added in order, whatever the layout
        assert products is not None
        s = np.broadcast_to(intercept, (gates.shape[0], k)).copy()
        for j in range(T):
            s += products[:, j:j + 1] * coef[j, :, 0]
        return s
    mixed = (gates @ coef.reshape(T, k * q)).reshape(-1, k, q)
    return intercept + np.einsum("ncf,nf->nc", mixed, base)


def _softmax_residuals_numpy(s: np.ndarray, y: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # every row's rho - e_y (eq. 6), loss (eq. 3) and whether its argmax is not its class,
    # by the arithmetic of _softmax_residual (without the SIMD lanes)
    rows = np.arange(s.shape[0])
    wrong = np.argmax(s, axis=1) != y
    z = s - s[rows, y][:, None] + 1.0
    z[rows, y] = 0.0
    top = z.max(axis=1, initial=-np.inf)
    r = np.exp(z - top[:, None])
    total = r.sum(axis=1)
    r *= (1.0 / total)[:, None]
    r[rows, y] -= 1.0
    return r, top + np.log(total), wrong


def _weighted_rows(gates: np.ndarray, base: np.ndarray, codes: np.ndarray,
                   weight: np.ndarray) -> tuple[np.ndarray, ...]:
    # the rows of non-zero weight (the kernels skip the others), weights in float64
    keep = weight != 0.0
    if not keep.all():
        gates, base, codes, weight = gates[keep], base[keep], codes[keep], weight[keep]
    return gates, base, codes.astype(np.int64), weight.astype(np.float64), keep


class ObjectiveRows:
    """The rows of non-zero weight of a chunk's restricted problem, as
    :func:`restricted_objective_numpy` reads them: what does not change with the
    coefficients, which a corrective step keeps for its evaluations.

    Parameters
    ----------
    gates, base, codes, weight
        As for :func:`restricted_objective_chunk`.

    Attributes
    ----------
    gates : ndarray of shape (m, T), float64
    base : ndarray of shape (m, q), float64
    products : ndarray of shape (m, T), float64, or None
        ``gates * base`` where ``q = 1``.
    codes : ndarray of shape (m,), int64
    weight : ndarray of shape (m,), float64
    """

    __slots__ = ("base", "codes", "gates", "products", "weight")

    def __init__(self, gates: np.ndarray, base: np.ndarray, codes: np.ndarray,
                 weight: np.ndarray) -> None:
        gates, base, self.codes, self.weight, _ = _weighted_rows(gates, base, codes, weight)
        self.gates = gates.astype(np.float64)
        self.base = base.astype(np.float64)
        self.products = self.gates * self.base if base.shape[1] == 1 else None


def restricted_objective_numpy(gates: np.ndarray, base: np.ndarray, codes: np.ndarray,
                               weight: np.ndarray, coef: np.ndarray, intercept: np.ndarray,
                               grad_coef: np.ndarray, grad_intercept: np.ndarray
                               ) -> tuple[float, float, float]:
    """:func:`restricted_objective_chunk` in numpy, by dense matrix products over every
    selected group (zero gates add zeros): the same sums up to rounding.

    Parameters
    ----------
    gates, base, codes, weight, coef, intercept, grad_coef, grad_intercept
        As for :func:`restricted_objective_chunk`.

    Returns
    -------
    loss, weight_sum, errors : float
    """
    return objective_rows_numpy(ObjectiveRows(gates, base, codes, weight), coef, intercept,
                                grad_coef, grad_intercept)


def objective_rows_numpy(rows: ObjectiveRows, coef: np.ndarray, intercept: np.ndarray,
                         grad_coef: np.ndarray, grad_intercept: np.ndarray
                         ) -> tuple[float, float, float]:
    """:func:`restricted_objective_numpy` of rows kept as :class:`ObjectiveRows`: the
    same arithmetic, so the same sums to the last bit.

    Parameters
    ----------
    rows : ObjectiveRows
    coef, intercept, grad_coef, grad_intercept
        As for :func:`restricted_objective_chunk`.

    Returns
    -------
    loss, weight_sum, errors : float
    """
    w = rows.weight
    T, k, q = coef.shape
    r, loss, wrong = _softmax_residuals_numpy(
        _scores_float64(rows.gates, rows.base, rows.products, coef, intercept), rows.codes)
    r *= w[:, None]
    grad_intercept += r.sum(axis=0)
    outer = (r[:, :, None] * rows.base[:, None, :]).reshape(r.shape[0], k * q)
    if q == 1:  # the rows added in order (a reduction over the first axis), as above
        grad_coef += np.add.reduce(rows.gates[:, :, None] * outer[:, None, :],
                                   axis=0).reshape(T, k, q)
    else:
        grad_coef += (rows.gates.T @ outer).reshape(T, k, q)
    return float(w @ loss), float(w.sum()), float(w[wrong].sum())


def decision_numpy(gates: np.ndarray, base: np.ndarray, coef: np.ndarray,
                   intercept: np.ndarray) -> np.ndarray:
    """:func:`decision_chunk` in numpy (see :func:`restricted_objective_numpy`).

    Parameters
    ----------
    gates, base, coef, intercept
        As for :func:`decision_chunk`.

    Returns
    -------
    ndarray of shape (n, k), float64
    """
    return _scores_numpy(gates, base, coef, intercept)


def decision(gates: np.ndarray, base: np.ndarray, coef: np.ndarray,
             intercept: np.ndarray) -> np.ndarray:
    """Class scores of every row: :func:`decision_numpy` up to
    :data:`NUMPY_OBJECTIVE_ENTRIES` (``n x T x k x q``), else :func:`decision_chunk`."""
    if gates.size * coef.shape[1] * coef.shape[2] <= NUMPY_OBJECTIVE_ENTRIES:
        return decision_numpy(gates, base, coef, intercept)
    return decision_chunk(gates, base, coef, intercept)


def margin_residuals_numpy(gates: np.ndarray, base: np.ndarray, codes: np.ndarray,
                           weight: np.ndarray, coef: np.ndarray, intercept: np.ndarray
                           ) -> tuple[np.ndarray, float, float, float]:
    """:func:`margin_residuals_chunk` in numpy (see :func:`restricted_objective_numpy`).

    Parameters
    ----------
    gates, base, codes, weight, coef, intercept
        As for :func:`margin_residuals_chunk`.

    Returns
    -------
    residuals : ndarray of shape (n, k), float64
        Zero on the rows of weight zero.
    loss, weight_sum, errors : float
    """
    out = np.zeros((gates.shape[0], intercept.shape[0]))
    gates, base, codes, w, keep = _weighted_rows(gates, base, codes, weight)
    r, loss, wrong = _softmax_residuals_numpy(_scores_numpy(gates, base, coef, intercept),
                                              codes)
    out[keep] = w[:, None] * r
    return out, float(w @ loss), float(w.sum()), float(w[wrong].sum())


@njit(cache=True, nogil=True)
def _single_column_scores(i: int, gates: np.ndarray, base: np.ndarray, W: np.ndarray,
                          intercept: np.ndarray, active: np.ndarray, s: np.ndarray) -> int:
    # s <- b + sum_j g_ij a_i W_j, a sweep over the classes per non-zero gate (vectorised);
    # active[:n_active] <- the groups with a non-zero gate. The non-zero gates are listed
    # first, without a branch: where a gate is zero in part of the rows (pixels), a branch
    # per gate mispredicted often enough to take half the kernel's time
    k = intercept.shape[0]
    a = np.float64(base[i, 0])
    for c in range(k):
        s[c] = intercept[c]
    n_active = 0
    for j in range(gates.shape[1]):  # the non-zero gates' columns, without a branch
        active[n_active] = j
        n_active += np.float64(gates[i, j]) * a != 0.0
    for t in range(n_active):
        j = active[t]
        g = np.float64(gates[i, j]) * a
        for c in range(k):
            s[c] += g * W[j, c]
    return n_active


@njit(cache=True, nogil=True)
def single_column_objective_chunk(gates: np.ndarray, base: np.ndarray, codes: np.ndarray,
                                  weight: np.ndarray, W: np.ndarray, intercept: np.ndarray,
                                  grad_W: np.ndarray, grad_intercept: np.ndarray,
                                  exp_work: np.ndarray | None = None
                                  ) -> tuple[float, float, float]:
    """:func:`restricted_objective_chunk` for groups of one column (``q = 1``: features and
    stumps), with the coefficients as a matrix: each non-zero gate adds a row of ``W`` to
    the scores and the residuals to a row of the gradient, sweeps over the classes that
    vectorise (4-5x the general kernel on stumps).

    Parameters
    ----------
    gates, base, codes, weight, intercept, grad_intercept, exp_work
        As in :func:`restricted_objective_chunk`, with ``base`` of shape (n, 1).
    W : ndarray of shape (T, k), float64
        ``coef[:, :, 0]``, C-contiguous.
    grad_W : ndarray of shape (T, k), float64
        Accumulates the gradient with respect to ``W`` (added to).

    Returns
    -------
    loss, weight_sum, errors : float
        As in :func:`restricted_objective_chunk`.
    """
    n = gates.shape[0]
    k = intercept.shape[0]
    s = np.empty(k)
    r = np.empty(k)
    active = np.empty(gates.shape[1], dtype=np.int64)
    sums = np.zeros(3)  # loss, weight, errors
    for i in range(n):
        w = np.float64(weight[i])
        if w == 0.0:  # held out, or weighted out: adds nothing
            continue
        y = codes[i]
        n_active = _single_column_scores(i, gates, base, W, intercept, active, s)
        _tally_row(s, y, w, r, sums, exp_work)
        for c in range(k):
            grad_intercept[c] += w * r[c]
        a = np.float64(base[i, 0])
        for t in range(n_active):
            j = active[t]
            wg = w * np.float64(gates[i, j])
            for c in range(k):
                grad_W[j, c] += wg * r[c] * a
    return sums[0], sums[1], sums[2]


@njit(cache=True, nogil=True)
def _linear_scores(i: int, X: np.ndarray, features: np.ndarray, scale: np.ndarray,
                   W: np.ndarray, intercept: np.ndarray, active: np.ndarray,
                   values: np.ndarray, s: np.ndarray) -> int:
    # _single_column_scores of linear columns read from the row itself: the gate of column
    # j is x_f scale_f (f = features[j]) rounded to float32, as linear_gates_chunk stores it;
    # active[:n_active] <- the columns with a non-zero gate, values[:n_active] <- the gates
    k = intercept.shape[0]
    for c in range(k):
        s[c] = intercept[c]
    n_active = 0
    for j in range(features.shape[0]):  # the non-zero gates, without a branch
        f = features[j]
        g = np.float64(np.float32(X[i, f] * scale[f]))
        active[n_active] = j
        values[n_active] = g
        n_active += g != 0.0
    for t in range(n_active):
        j = active[t]
        g = values[t]
        for c in range(k):
            s[c] += g * W[j, c]
    return n_active


@njit(cache=True, nogil=True)
def _add_row_gradient(w: float, r: np.ndarray, active: np.ndarray, values: np.ndarray,
                      n_active: int, grad_W: np.ndarray, grad_intercept: np.ndarray) -> None:
    # a row of weight w and residuals r: w r to the intercept's gradient and w g_j r to
    # the row of W of each active column j (values[t] its gate)
    k = r.shape[0]
    for c in range(k):
        grad_intercept[c] += w * r[c]
    for t in range(n_active):
        j = active[t]
        wg = w * values[t]
        for c in range(k):
            grad_W[j, c] += wg * r[c]


@njit(cache=True, nogil=True)
def linear_objective_chunk(X: np.ndarray, features: np.ndarray, scale: np.ndarray,
                           codes: np.ndarray, weight: np.ndarray, W: np.ndarray,
                           intercept: np.ndarray, grad_W: np.ndarray,
                           grad_intercept: np.ndarray, exp_work: np.ndarray | None = None
                           ) -> tuple[float, float, float]:
    """:func:`single_column_objective_chunk` of linear columns, their gates read from the
    rows ``X`` (no ``(n, T)`` gate matrix is built): the same sums, in the same order.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32
    features : ndarray of shape (T,), int64
        The feature of each selected column.
    scale : ndarray of shape (d,), float64
        Feature ``f`` enters the model as ``x_f * scale_f``.
    codes, weight, W, intercept, grad_W, grad_intercept, exp_work
        As in :func:`single_column_objective_chunk`.

    Returns
    -------
    loss, weight_sum, errors : float
    """
    n = X.shape[0]
    k = intercept.shape[0]
    s = np.empty(k)
    r = np.empty(k)
    active = np.empty(features.shape[0], dtype=np.int64)
    values = np.empty(features.shape[0])
    sums = np.zeros(3)  # loss, weight, errors
    for i in range(n):
        w = np.float64(weight[i])
        if w == 0.0:  # held out, or weighted out: adds nothing
            continue
        y = codes[i]
        n_active = _linear_scores(i, X, features, scale, W, intercept, active, values, s)
        _tally_row(s, y, w, r, sums, exp_work)
        _add_row_gradient(w, r, active, values, n_active, grad_W, grad_intercept)
    return sums[0], sums[1], sums[2]


@njit(cache=True, nogil=True)
def linear_margin_residuals_chunk(X: np.ndarray, features: np.ndarray, scale: np.ndarray,
                                  codes: np.ndarray, weight: np.ndarray, W: np.ndarray,
                                  intercept: np.ndarray, exp_work: np.ndarray | None = None
                                  ) -> tuple[np.ndarray, float, float, float]:
    """:func:`margin_residuals_chunk` of linear columns, their gates read from the rows.

    Parameters
    ----------
    X, features, scale
        As in :func:`linear_objective_chunk`.
    codes, weight, intercept, exp_work
        As in :func:`margin_residuals_chunk`.
    W : ndarray of shape (T, k), float64
        ``coef[:, :, 0]``, C-contiguous.

    Returns
    -------
    residuals : ndarray of shape (n, k), float64
    loss, weight_sum, errors : float
    """
    n = X.shape[0]
    k = intercept.shape[0]
    out = np.empty((n, k))
    s = np.empty(k)
    r = np.empty(k)
    active = np.empty(features.shape[0], dtype=np.int64)
    values = np.empty(features.shape[0])
    sums = np.zeros(3)  # loss, weight, errors
    for i in range(n):
        w = np.float64(weight[i])
        if w == 0.0:  # held out, or weighted out: a zero residual
            for c in range(k):
                out[i, c] = 0.0
            continue
        y = codes[i]
        _linear_scores(i, X, features, scale, W, intercept, active, values, s)
        _tally_row(s, y, w, r, sums, exp_work)
        for c in range(k):
            out[i, c] = w * r[c]
    return out, sums[0], sums[1], sums[2]


# -- gradient matrix of eq. 7 for every candidate column ----------------------------------
@njit(cache=True, nogil=True)
def linear_gradient_chunk(X: np.ndarray, residuals: np.ndarray, scale: np.ndarray,
                          out: np.ndarray) -> None:
    """Add ``sum_i R_i x_if scale_f`` to ``out[f]``: the gradient column of every feature.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32
    residuals : ndarray of shape (n, k), float64
    scale : ndarray of shape (d,), float64
        Feature ``f`` enters the model as ``x_f * scale_f``.
    out : ndarray of shape (d, k), float64
    """
    n, d = X.shape
    k = residuals.shape[1]
    nonzero = np.empty(d, dtype=np.int64)
    for i in range(n):
        m = 0
        for f in range(d):  # the row's non-zero features, listed without a branch
            nonzero[m] = f
            m += X[i, f] != 0.0
        for t in range(m):
            f = nonzero[t]
            v = X[i, f] * scale[f]
            for c in range(k):
                out[f, c] += v * residuals[i, c]


@njit(cache=True, nogil=True)
def linear_gradient_csr(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                        residuals: np.ndarray, scale: np.ndarray, out: np.ndarray) -> None:
    """:func:`linear_gradient_chunk` over CSR rows: only the stored entries add.

    Parameters
    ----------
    indptr, indices, values : ndarray
        The rows in CSR form (int64, int32, float32; a row's columns distinct).
    residuals : ndarray of shape (n, k), float64
    scale : ndarray of shape (d,), float64
    out : ndarray of shape (d, k), float64
    """
    k = residuals.shape[1]
    for i in range(indptr.shape[0] - 1):
        for e in range(indptr[i], indptr[i + 1]):
            f = indices[e]
            v = values[e] * scale[f]
            if v == 0.0:
                continue
            for c in range(k):
                out[f, c] += v * residuals[i, c]


#: Each feature's thresholds are padded with +inf to a multiple of this many for the
#: kernels (:func:`padded_thresholds`): the count of those below a value then runs in whole
#: SIMD registers (8 float32 in 256 bits), with no scalar tail.
THRESHOLD_LANES = 8


def padded_thresholds(thresholds: np.ndarray) -> np.ndarray:
    """``thresholds`` with ``+inf`` columns appended up to a multiple of ``THRESHOLD_LANES``.

    No value lies above ``+inf`` (NaN lies above nothing), so every row's count of
    thresholds below a value, hence its bin, is unchanged.

    Parameters
    ----------
    thresholds : ndarray of shape (d, n_thresholds), float32

    Returns
    -------
    ndarray of shape (d, m), float32, C-contiguous, ``m >= n_thresholds``
    """
    d, n = thresholds.shape
    m = -(-max(n, 1) // THRESHOLD_LANES) * THRESHOLD_LANES
    out = np.full((d, m), np.inf, dtype=np.float32)
    out[:, :n] = thresholds
    return out


@njit(cache=True, nogil=True)
def _count_below(thresholds: np.ndarray, f: int, v: float) -> int:
    # number of thresholds[f, :] strictly below v: a count over the row of thresholds,
    # which vectorises, where a binary search mispredicts a branch at every step (padded
    # by padded_thresholds, the row has no scalar tail)
    count = 0
    for b in range(thresholds.shape[1]):
        count += thresholds[f, b] < v
    return count


@njit(cache=True, nogil=True)
def stump_histogram_chunk(X: np.ndarray, residuals: np.ndarray, thresholds: np.ndarray,
                          out: np.ndarray) -> None:
    """Add each row's residual to the bin of each feature its value falls in.

    Bin ``b`` of feature ``f`` holds the rows with ``theta_{f,b-1} < x_f <= theta_{f,b}``,
    so the gradient column of the stump ``1[x_f <= theta_{f,b}]`` is the cumulative sum of
    bins ``0..b`` (:func:`stump_gradients`): every threshold of a feature from one pass.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32
    residuals : ndarray of shape (n, k), float64
    thresholds : ndarray of shape (d, m), float32, ascending per row
        The ``n_thresholds`` thresholds, padded with ``+inf`` or not
        (:func:`padded_thresholds`).
    out : ndarray of shape (d, n_thresholds + 1, k), float64
    """
    n, d = X.shape
    k = residuals.shape[1]
    for i in range(n):
        for f in range(d):
            b = _count_below(thresholds, f, X[i, f])
            for c in range(k):
                out[f, b, c] += residuals[i, c]


@njit(cache=True, nogil=True)
def stump_tables(features: np.ndarray, bins: np.ndarray, coef: np.ndarray,
                 thresholds: np.ndarray) -> np.ndarray:
    """Each feature's selected stumps as one step function over its bins.

    A row in bin ``p`` of feature ``f`` (:func:`stump_histogram_chunk`) satisfies
    ``x_f <= theta_{f,b}`` exactly for ``b >= p``, so its stumps on ``f`` add up to
    ``table[f, p] = sum_{j: f_j = f, b_j >= p} W_j``.

    Parameters
    ----------
    features, bins : ndarray of shape (T,), int64
        Feature and threshold index of each selected stump.
    coef : ndarray of shape (T, k, 1), float64
    thresholds : ndarray of shape (d, n_thresholds), float32

    Returns
    -------
    ndarray of shape (d, n_thresholds + 1, k), float64
    """
    k = coef.shape[1]
    table = np.zeros((thresholds.shape[0], thresholds.shape[1] + 1, k))
    for j in range(features.shape[0]):
        f = features[j]
        for p in range(bins[j] + 1):
            for c in range(k):
                table[f, p, c] += coef[j, c, 0]
    return table


@njit(cache=True, nogil=True)
def stump_objective_chunk(X: np.ndarray, thresholds: np.ndarray, score_features: np.ndarray,
                          table: np.ndarray, codes: np.ndarray, weight: np.ndarray,
                          intercept: np.ndarray, hist_features: np.ndarray,
                          hist: np.ndarray, grad_intercept: np.ndarray,
                          exp_work: np.ndarray | None = None
                          ) -> tuple[float, float, float]:
    """Loss of a stump model and its residuals binned per feature, without its gates.

    A row's scores are ``b + sum_f table[f, p_f]`` over the features that carry selected
    stumps (:func:`stump_tables`), one bin search and one sweep over the classes per
    feature instead of one per stump; its weighted residual ``w_i (rho_i - e_{y_i})`` is
    added to its bin of every feature in ``hist_features``, from which
    :func:`stump_gradients` gives the gradient of every stump on them, selected or not.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32
    thresholds : ndarray of shape (d, m), float32, ascending per row
        The ``n_thresholds`` thresholds, padded with ``+inf`` or not
        (:func:`padded_thresholds`).
    score_features : ndarray of int64
        Features with selected stumps.
    table : ndarray of shape (d, n_thresholds + 1, k), float64
    codes : ndarray of shape (n,), int32
    weight : ndarray of shape (n,), float32
    intercept : ndarray of shape (k,), float64
    hist_features : ndarray of int64
        Features whose bins receive the residuals.
    hist : ndarray of shape (d, n_thresholds + 1, k), float64
        Added to.
    grad_intercept : ndarray of shape (k,), float64
        Added to.
    exp_work : ndarray of shape (k,), float64, optional
        As in :func:`restricted_objective_chunk`.

    Returns
    -------
    loss, weight_sum, errors : float
        As in :func:`restricted_objective_chunk`.
    """
    n = X.shape[0]
    k = intercept.shape[0]
    s = np.empty(k)
    r = np.empty(k)
    sums = np.zeros(3)  # loss, weight, errors
    # each feature's bin in the current row, found once for both loops (-1: not yet)
    bins = np.full(X.shape[1], -1, dtype=np.int64)
    for i in range(n):
        w = np.float64(weight[i])
        if w == 0.0:  # held out, or weighted out: adds nothing
            continue
        y = codes[i]
        for c in range(k):
            s[c] = intercept[c]
        for u in range(score_features.shape[0]):
            f = score_features[u]
            p = _count_below(thresholds, f, X[i, f])
            bins[f] = p
            steps = table[f, p]
            for c in range(k):
                s[c] += steps[c]
        _tally_row(s, y, w, r, sums, exp_work)
        for c in range(k):
            r[c] *= w
            grad_intercept[c] += r[c]
        for u in range(hist_features.shape[0]):
            f = hist_features[u]
            p = bins[f] if bins[f] >= 0 else _count_below(thresholds, f, X[i, f])
            bin_sums = hist[f, p]
            for c in range(k):
                bin_sums[c] += r[c]
        for u in range(score_features.shape[0]):
            bins[score_features[u]] = -1
    return sums[0], sums[1], sums[2]


def stump_gradients(histogram: np.ndarray) -> np.ndarray:
    """Gradient columns of every stump from :func:`stump_histogram_chunk`'s bins.

    Parameters
    ----------
    histogram : ndarray of shape (d, n_thresholds + 1, k)

    Returns
    -------
    ndarray of shape (d, n_thresholds, k)
    """
    return np.cumsum(histogram, axis=1)[:, :-1, :]


#: Rows whose outer products ``a_i R_i^T`` :func:`anchor_histogram_chunk` holds at once.
ANCHOR_TILE_ROWS = 256
#: Largest ``n x n_centres`` (rows, candidate centres) of a chunk whose bins numpy fills
#: (:func:`anchor_histogram_numpy`) instead of :func:`anchor_histogram_chunk`: about the
#: kernel's time on one thread (a few milliseconds on 2,000 rows and 256 centres), where
#: its compile costs 0.5 s.
NUMPY_ANCHOR_PAIRS = 1 << 20


@njit(cache=True, nogil=True, inline="always")
def _outer_tile(base: np.ndarray, residuals: np.ndarray, i0: int, i1: int,
                tile: np.ndarray) -> None:
    """Rows ``i0 .. i1 - 1``'s outer products ``a_i R_i^T`` into ``tile``'s first rows,
    flattened, each product taken in float64 and rounded to float32."""
    q = base.shape[1]
    k = residuals.shape[1]
    for i in range(i0, i1):
        for f in range(q):
            a = np.float64(base[i, f])
            for c in range(k):
                tile[i - i0, f * k + c] = np.float32(a * residuals[i, c])


@njit(cache=True, nogil=True, inline="always")
def _first_bound_above(d: float, bounds: np.ndarray) -> int:
    """The first ``j`` with ``d < bounds[j]`` (ascending ``bounds``, ``d`` below the last
    one), by bisection."""
    lo = 0
    hi = bounds.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if d < bounds[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, nogil=True)
def anchor_histogram_chunk(dist2: np.ndarray, base: np.ndarray, residuals: np.ndarray,
                           radii2: np.ndarray, out: np.ndarray) -> None:
    """Add ``a_i R_i^T`` to the bin of the smallest ball of each centre that holds row ``i``.

    Radii are ascending per centre, so the gradient of the group of piece ``(c, r)``,
    the columns ``1[||x - v_c|| < r] a(x)``, is the cumulative sum of bins ``0..r``
    (:func:`anchor_gradients`): every radius of a centre from one pass.

    The squared distances come in from outside (a matrix product, see
    :func:`streamlearn.features.anchors.squared_distances`); the kernel does what a matrix
    product cannot: the radius bin of every (centre, row) pair and the scatter-add of the
    row's ``q x k`` outer product into it. Rows are taken ``ANCHOR_TILE_ROWS`` at a time:
    their outer products are formed once and stay in cache while every centre's bins
    (``n_radii x q x k``) are updated from them.

    Parameters
    ----------
    dist2 : ndarray of shape (n, n_centres), float32
        Squared distance from every row to every centre.
    base : ndarray of shape (n, q), float32
    residuals : ndarray of shape (n, k), float64
    radii2 : ndarray of shape (n_centres, n_radii), float64
        Squared radii, ascending per centre.
    out : ndarray of shape (n_centres, n_radii, q, k), float32, C-contiguous
        Single precision halves the memory traffic of the scatter-add, the cost of a
        round; the sums only rank candidates.
    """
    n, n_centres = dist2.shape
    q = base.shape[1]
    k = residuals.shape[1]
    n_radii = radii2.shape[1]
    qk = q * k
    acc = out.reshape((n_centres, n_radii, qk))
    tile = np.empty((ANCHOR_TILE_ROWS, qk), dtype=np.float32)
    for i0 in range(0, n, ANCHOR_TILE_ROWS):
        i1 = min(n, i0 + ANCHOR_TILE_ROWS)
        _outer_tile(base, residuals, i0, i1, tile)
        for v in range(n_centres):
            top = radii2[v, n_radii - 1]
            for i in range(i0, i1):
                d = dist2[i, v]
                if d >= top:
                    continue
                lo = _first_bound_above(d, radii2[v])
                row = acc[v, lo]
                z = tile[i - i0]
                for m in range(qk):
                    row[m] += z[m]


def anchor_histogram_numpy(dist2: np.ndarray, base: np.ndarray, residuals: np.ndarray,
                           radii2: np.ndarray, out: np.ndarray) -> None:
    """:func:`anchor_histogram_chunk` in numpy: the same float32 outer products, added
    to the same bins in the same order of the rows (the kernel's bits when ``out``
    starts at zero; else the chunk's sums added to ``out`` at the end).

    The (row, centre) pairs inside a centre's largest ball are a sparse matrix of ones,
    a row's pair in the column of its bin (:func:`anchor_bins_numpy`); its transpose
    times the rows' outer products sums each bin over its rows, in order
    (:func:`binned_histogram_numpy`).

    Parameters
    ----------
    dist2, base, residuals, radii2, out
        As for :func:`anchor_histogram_chunk`.
    """
    binned_histogram_numpy(anchor_bins_numpy(dist2, radii2), base, residuals, out)


def anchor_bins_numpy(dist2: np.ndarray, radii2: np.ndarray) -> Any:
    """The bins of :func:`anchor_histogram_numpy`: a sparse matrix of ones, (n,
    n_centres x n_radii), a row's pair with a centre in the column of the centre's
    smallest ball that holds the row (no pair outside its largest ball). It depends on the
    rows and the centres alone: the column scores of one set of candidates keep it.

    Parameters
    ----------
    dist2, radii2
        As for :func:`anchor_histogram_chunk`.

    Returns
    -------
    scipy.sparse.csr_array of float32
    """
    from scipy import sparse

    n, n_centres = dist2.shape
    n_radii = radii2.shape[1]
    d = dist2.astype(np.float64)  # compared with the radii as the kernel compares them
    pairs = np.flatnonzero(d < radii2[:, n_radii - 1])  # row-major: rows in order
    # the first radius with d < radii2
    bins = np.zeros(d.shape, dtype=np.int8 if n_radii < 128 else np.int64)
    for j in range(n_radii - 1):
        bins += d >= radii2[:, j]
    columns = (pairs % n_centres) * n_radii + bins.ravel()[pairs]
    indptr = np.searchsorted(pairs, np.arange(n + 1) * n_centres)
    return sparse.csr_array((np.ones(pairs.shape[0], dtype=np.float32), columns, indptr),
                            shape=(n, n_centres * n_radii))


def binned_histogram_numpy(bins: Any, base: np.ndarray, residuals: np.ndarray,
                           out: np.ndarray) -> None:
    """The rows' outer products ``a_i R_i^T`` (float32) summed into their bins
    (:func:`anchor_bins_numpy`), in the order of the rows, and added to ``out``.

    Parameters
    ----------
    bins : scipy.sparse.csr_array
        From :func:`anchor_bins_numpy`.
    base, residuals, out
        As for :func:`anchor_histogram_chunk`.
    """
    n, q = base.shape
    k = residuals.shape[1]
    tile = (base.astype(np.float64)[:, :, None] * residuals[:, None, :]).astype(np.float32)
    out += (bins.T @ tile.reshape(n, q * k)).reshape(out.shape)


@njit(cache=True, nogil=True)
def anchor_ramp_histogram_chunk(dist2: np.ndarray, base: np.ndarray, residuals: np.ndarray,
                                bounds2: np.ndarray, out: np.ndarray) -> None:
    """Bins of :func:`anchor_histogram_chunk` between the ends of soft gates' ramps, with a
    second sum weighted by the squared distance.

    Bin ``b`` of centre ``v`` holds the rows with ``bounds2[v, b - 1] <= d < bounds2[v, b]``
    (``0 <= d`` for ``b = 0``): ``out[v, b, 0]`` adds their ``a_i R_i^T`` and
    ``out[v, b, 1]`` their ``(d - bounds2[v, b - 1]) a_i R_i^T`` (from 0 for ``b = 0``),
    the distance from the bin's lower end, whose products stay small in float32. A gate
    linear in ``d`` between two bounds then sums over its rows from the two
    (:func:`anchor_ramp_gradients`). Rows, tiles and threads as in
    :func:`anchor_histogram_chunk`.

    Parameters
    ----------
    dist2 : ndarray of shape (n, n_centres), float32
    base : ndarray of shape (n, q), float32
    residuals : ndarray of shape (n, k), float64
    bounds2 : ndarray of shape (n_centres, n_bounds), float64
        Ascending per centre.
    out : ndarray of shape (n_centres, n_bounds, 2, q, k), float32, C-contiguous
    """
    n, n_centres = dist2.shape
    q = base.shape[1]
    k = residuals.shape[1]
    n_bounds = bounds2.shape[1]
    qk = q * k
    acc = out.reshape((n_centres, n_bounds, 2, qk))
    tile = np.empty((ANCHOR_TILE_ROWS, qk), dtype=np.float32)
    for i0 in range(0, n, ANCHOR_TILE_ROWS):
        i1 = min(n, i0 + ANCHOR_TILE_ROWS)
        _outer_tile(base, residuals, i0, i1, tile)
        for v in range(n_centres):
            top = bounds2[v, n_bounds - 1]
            for i in range(i0, i1):
                d = np.float64(dist2[i, v])
                if d >= top:
                    continue
                lo = _first_bound_above(d, bounds2[v])
                below = bounds2[v, lo - 1] if lo > 0 else 0.0
                u = np.float32(d - below)
                row0 = acc[v, lo, 0]
                row1 = acc[v, lo, 1]
                z = tile[i - i0]
                for m in range(qk):
                    row0[m] += z[m]
                    row1[m] += u * z[m]


def anchor_ramp_histogram_numpy(dist2: np.ndarray, base: np.ndarray, residuals: np.ndarray,
                                bounds2: np.ndarray, out: np.ndarray) -> None:
    """:func:`anchor_ramp_histogram_chunk` in numpy (the same sums up to rounding): each
    bin's rows summed by a sparse matrix of their bins, with ones and with the distance
    from the bin's lower end.

    Parameters
    ----------
    dist2, base, residuals, bounds2, out
        As for :func:`anchor_ramp_histogram_chunk`.
    """
    from scipy import sparse

    n, n_centres = dist2.shape
    q = base.shape[1]
    k = residuals.shape[1]
    n_bounds = bounds2.shape[1]
    tile = (base.astype(np.float64)[:, :, None] * residuals[:, None, :]).reshape(n, q * k)
    d = dist2.astype(np.float64)
    pairs = np.flatnonzero(d < bounds2[:, n_bounds - 1])
    bins = np.zeros(d.shape, dtype=np.int64)
    for j in range(n_bounds - 1):
        bins += d >= bounds2[:, j]
    centre = pairs % n_centres
    bin_of = bins.ravel()[pairs]
    below = np.where(bin_of > 0, bounds2[centre, np.maximum(bin_of - 1, 0)], 0.0)
    columns = centre * n_bounds + bin_of
    indptr = np.searchsorted(pairs, np.arange(n + 1) * n_centres)
    shape = (n, n_centres * n_bounds)
    ones = sparse.csr_array((np.ones(pairs.shape[0]), columns, indptr), shape=shape)
    above = sparse.csr_array((d.ravel()[pairs] - below, columns, indptr), shape=shape)
    sums = np.stack([(ones.T @ tile).reshape(n_centres, n_bounds, q, k),
                     (above.T @ tile).reshape(n_centres, n_bounds, q, k)], axis=2)
    out += sums.astype(np.float32)


def ramp_bounds(radii2: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray,
                                                            np.ndarray]:
    """The ends of every soft gate's ramp, ``r^2 (1 -+ w / 2)``, sorted per centre.

    Parameters
    ----------
    radii2 : ndarray of shape (n_centres, n_radii), float64
    width : float

    Returns
    -------
    bounds2 : ndarray of shape (n_centres, 2 n_radii), float64, ascending per centre
    inner, outer : ndarray of shape (n_centres, n_radii), int64
        The position of each ramp's inner and outer end in ``bounds2``.
    """
    ends = np.concatenate([radii2 * (1.0 - 0.5 * width), radii2 * (1.0 + 0.5 * width)],
                          axis=1)
    order = np.argsort(ends, axis=1, kind="stable")
    where = np.empty_like(order)
    np.put_along_axis(where, order, np.arange(ends.shape[1])[None, :].repeat(
        ends.shape[0], axis=0), axis=1)
    n_radii = radii2.shape[1]
    return (np.ascontiguousarray(np.take_along_axis(ends, order, axis=1)),
            where[:, :n_radii], where[:, n_radii:])


def anchor_ramp_gradients(histogram: np.ndarray, bounds2: np.ndarray, inner: np.ndarray,
                          outer: np.ndarray, radii2: np.ndarray, width: float) -> np.ndarray:
    """Gradient columns of every soft-gated piece from :func:`anchor_ramp_histogram_chunk`'s
    bins (float64).

    The gate is 1 below the ramp's inner end ``lo`` and ``(hi - d) / (w r^2)`` on the ramp
    (``hi`` its outer end), so a piece's column sums are the rows below ``lo`` plus
    ``(hi S_0 - S_1) / (w r^2)`` over the bins between ``lo`` and ``hi``, ``S_0`` their
    ``a R^T`` and ``S_1`` their ``d a R^T`` (each bin's second sum plus its lower end
    times its first).

    Parameters
    ----------
    histogram : ndarray of shape (n_centres, 2 n_radii, 2, q, k)
    bounds2, inner, outer : from :func:`ramp_bounds`
    radii2 : ndarray of shape (n_centres, n_radii)
    width : float

    Returns
    -------
    ndarray of shape (n_centres, n_radii, q, k), float64
    """
    h = histogram.astype(np.float64)
    lower = np.concatenate([np.zeros((bounds2.shape[0], 1)), bounds2[:, :-1]], axis=1)
    first = np.cumsum(h[:, :, 0], axis=1)  # rows with d < bounds2[:, b]
    second = np.cumsum(h[:, :, 1] + lower[:, :, None, None] * h[:, :, 0], axis=1)
    rows = np.arange(bounds2.shape[0])[:, None]
    below = first[rows, inner]
    ramp0 = first[rows, outer] - below
    ramp1 = second[rows, outer] - second[rows, inner]
    hi = radii2 * (1.0 + 0.5 * width)
    return below + (hi[:, :, None, None] * ramp0 - ramp1) / (width * radii2)[:, :, None, None]


def anchor_gradients(histogram: np.ndarray) -> np.ndarray:
    """Gradient columns of every piece from :func:`anchor_histogram_chunk`'s bins.

    Parameters
    ----------
    histogram : ndarray of shape (n_centres, n_radii, q, k)

    Returns
    -------
    ndarray of the same shape, cumulative over radii
    """
    return np.cumsum(histogram, axis=1)


# -- gates of selected columns ------------------------------------------------------------
@njit(cache=True, nogil=True)
def linear_gates_chunk(X: np.ndarray, features: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Scaled feature columns ``x_f * scale_f`` of the selected ``features``, (n, T) float32."""
    n = X.shape[0]
    out = np.empty((n, features.shape[0]), dtype=np.float32)
    for i in range(n):
        for j in range(features.shape[0]):
            f = features[j]
            out[i, j] = X[i, f] * scale[f]
    return out


def linear_gates_numpy(X: np.ndarray, features: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """:func:`linear_gates_chunk` in numpy: the same products, rounded to the same float32."""
    features = np.asarray(features, dtype=np.int64)
    return (X[:, features] * scale[features]).astype(np.float32)


def stump_gates_numpy(X: np.ndarray, features: np.ndarray, thresholds: np.ndarray
                      ) -> np.ndarray:
    """:func:`stump_gates_chunk` in numpy: the same comparisons."""
    return (X[:, np.asarray(features, dtype=np.int64)] <= thresholds).astype(np.float32)


@njit(cache=True, nogil=True)
def linear_gates_csr(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                     features: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """:func:`linear_gates_chunk` of CSR rows: every stored entry of a selected feature is
    found by a binary search among the selected features, the other entries cost nothing.

    Parameters
    ----------
    indptr, indices, values : ndarray
        The rows in CSR form (int64, int32, float32).
    features : ndarray of shape (T,), int64
        Selected features, in any order, repeats allowed.
    scale : ndarray of shape (d,), float64

    Returns
    -------
    ndarray of shape (n, T), float32
    """
    n = indptr.shape[0] - 1
    t = features.shape[0]
    order = np.argsort(features, kind="mergesort")
    ranked = features[order]
    out = np.zeros((n, t), dtype=np.float32)
    for i in range(n):
        for e in range(indptr[i], indptr[i + 1]):
            f = indices[e]
            p = np.searchsorted(ranked, f)
            while p < t and ranked[p] == f:
                out[i, order[p]] = values[e] * scale[f]
                p += 1
    return out


@njit(cache=True, nogil=True)
def stump_gates_chunk(X: np.ndarray, features: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Stumps ``1[x_f <= theta]`` of the selected ``(features, thresholds)``, (n, T) float32."""
    n = X.shape[0]
    out = np.empty((n, features.shape[0]), dtype=np.float32)
    for i in range(n):
        for j in range(features.shape[0]):
            out[i, j] = 1.0 if X[i, features[j]] <= thresholds[j] else 0.0
    return out
