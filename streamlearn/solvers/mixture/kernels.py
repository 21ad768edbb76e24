"""Kernels of the mixture of linear SVMs with RBF gating (paper 002), one chunk at a time.

One binary mixture has ``k`` components; component ``j`` has a mixing weight ``xi_j``
(``xi_j = 0``: pruned), a gating centre ``v_j`` and a linear expert ``w_j`` whose last entry is
the weight of a constant feature of value ``bias_scale`` (liblinear's regularised bias, as in
:mod:`streamlearn.solvers.dcd`). With ``s_ij = w_j . [x_i, bias_scale]``:

* gating (eq. 7): ``g_ij = exp(-tau ||x_i - v_j||^2) / sum_l exp(-tau ||x_i - v_l||^2)``
  over the active components;
* expert (eq. 10): ``P(y_i | x_i, w_j) = exp(-loss(y_i s_ij))``, the hinge
  ``loss(m) = max(0, 1 - m)`` of the paper or the squared hinge ``max(0, 1 - m)^2`` (the
  kernels' ``squared``; an expert's M-step minimises the same loss);
* posteriors (eq. 11): ``q_ij ~ xi_j g_ij P(y_i | x_i, w_j)``, normalised over ``j``;
* the row's log-likelihood (eq. 8): ``log sum_j xi_j g_ij P(y_i | x_i, w_j)``.

The loss arguments default to the hinge (``squared=False``).

Labels are float32 in {-1, +1}; sample weights ``s_i`` multiply every row's contribution.
The dense products (``x_i . v_j``, ``s_ij``, ``R^T X``) are float32 matrix products
(:func:`chunk_products`); the numba kernels do the per-row work on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from streamlearn.data.chunk import writeable
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.solvers.dcd import _shuffle, projected_gradient
from streamlearn.solvers.embedding import NO_DENSE
from streamlearn.solvers.vector_exp import MIN_LENGTH, exp_nonpositive

#: Projected gradients at most this large leave a dual variable unchanged.
PG_EPS = 1e-12
#: A row whose posterior for an expert is below this, and whose dual variable for it is
#: zero, is skipped by that expert's coordinate step: its box ``[0, C s q]`` lets it move
#: ``w_j`` by at most ``C s q ||x||``, while the step costs two passes over the row. With
#: RBF gates most rows are this far from most centres (on 256-feature digits, 4 in 5).
Q_FLOOR = 1e-6


@njit(cache=True, nogil=True)
def expert_loss(margin, squared):
    """An expert's loss of a row of margin ``y s``: ``max(0, 1 - y s)``, squared when
    ``squared``."""
    m = max(0.0, 1.0 - margin)
    return m * m if squared else m


@dataclass(frozen=True)
class ChunkProducts:
    """The dense products a chunk's kernels share, computed once by BLAS.

    Attributes
    ----------
    x_sq : ndarray of shape (n_rows,), float64
        ``||x_i||^2``.
    XV : ndarray of shape (n_rows, k), float64
        ``x_i . v_j``.
    scores : ndarray of shape (n_rows, k), float64
        Expert scores ``s_ij = w_j . [x_i, bias_scale]``.
    """

    x_sq: np.ndarray
    XV: np.ndarray
    scores: np.ndarray


def chunk_products(X: np.ndarray | SparseRows, V: np.ndarray, W: np.ndarray,
                   bias_scale: float) -> ChunkProducts:
    """``||x_i||^2``, ``x_i . v_j`` and the expert scores of a chunk (float32 matrix products).

    Parameters
    ----------
    X : ndarray of shape (n_rows, d), float32, or SparseRows
        CSR rows take the products over their stored entries (scipy's sparse product).
    V : ndarray of shape (k, d)
    W : ndarray of shape (k, d + 1)
    bias_scale : float

    Returns
    -------
    ChunkProducts
    """
    d = X.shape[1]
    k = V.shape[0]
    # one product for centres and experts, the right operand C-contiguous (d, 2k)
    right = np.empty((d, 2 * k), dtype=np.float32)
    right[:, :k] = np.asarray(V, dtype=np.float32).T
    right[:, k:] = np.asarray(W[:, :d], dtype=np.float32).T
    if isinstance(X, SparseRows):
        x_sq = X.sq_norms()
        both = np.asarray(X.to_scipy() @ right).astype(np.float64)
    else:
        x_sq = np.einsum("ij,ij->i", X, X).astype(np.float64)
        both = (X @ right).astype(np.float64)
    XV = np.ascontiguousarray(both[:, :k])
    scores = np.ascontiguousarray(both[:, k:])
    scores += np.asarray(W[:, d], dtype=np.float64)[None, :] * float(bias_scale)
    return ChunkProducts(x_sq, XV, scores)


def center_sq_norms(V: np.ndarray) -> np.ndarray:
    """``||v_j||^2`` of the centres as the float32 products see them (float64)."""
    V32 = np.asarray(V, dtype=np.float32).astype(np.float64)
    return (V32 * V32).sum(axis=1)


@njit(cache=True, nogil=True)
def _exp_below(a, top, work):
    # a[j] <- exp(a[j] - top) for a[j] <= top (-inf: 0, or below MIN_LENGTH components
    # exp(LOWEST), about 1e-304, beside a largest term of 1). From MIN_LENGTH components on
    # in SIMD lanes (exp_nonpositive), where the C library's exp, one call per component,
    # took most of an E-step's time
    k = a.shape[0]
    if k >= MIN_LENGTH:
        for j in range(k):
            a[j] -= top
        exp_nonpositive(a, a, work)
    else:
        for j in range(k):
            a[j] = np.exp(a[j] - top)


@njit(cache=True, nogil=True)
def gate_log_chunk(x_sq, XV, v_sq, active, tau):
    """Log gating probabilities ``log g_ij`` (eq. 7) of every row.

    Parameters
    ----------
    x_sq : ndarray of shape (n_rows,), float64
        ``||x_i||^2``.
    XV : ndarray of shape (n_rows, k), float64
        ``x_i . v_j``.
    v_sq : ndarray of shape (k,), float64
        ``||v_j||^2``.
    active : ndarray of shape (k,), bool
        Components taking part; the others get ``-inf``.
    tau : float
        Gating scale.

    Returns
    -------
    ndarray of shape (n_rows, k), float64
    """
    n, k = XV.shape
    out = np.empty((n, k))
    e = np.empty(k)
    work = np.empty(k)
    for i in range(n):
        top = -np.inf
        for j in range(k):
            if not active[j]:
                out[i, j] = -np.inf
                continue
            logit = -tau * max(x_sq[i] - 2.0 * XV[i, j] + v_sq[j], 0.0)
            out[i, j] = logit
            top = max(top, logit)
        for j in range(k):
            e[j] = out[i, j]
        _exp_below(e, top, work)
        total = 0.0
        for j in range(k):
            if active[j]:
                total += e[j]
        log_z = top + np.log(total)
        for j in range(k):
            if active[j]:
                out[i, j] -= log_z
    return out


@njit(cache=True, nogil=True)
def posteriors_chunk(log_g, scores, y, xi, squared=False):
    """E-step (eq. 11): posteriors ``q_ij`` and the rows' log-likelihoods (eq. 8).

    Parameters
    ----------
    log_g : ndarray of shape (n_rows, k), float64
        Log gating probabilities (:func:`gate_log_chunk`).
    scores : ndarray of shape (n_rows, k), float64
        Expert scores ``s_ij``.
    y : ndarray of shape (n_rows,), float32
        Labels in {-1, +1}.
    xi : ndarray of shape (k,), float64
        Mixing weights; components with ``xi_j = 0`` are left out.
    squared : bool
        The experts' loss is the squared hinge (else the hinge).

    Returns
    -------
    Q : ndarray of shape (n_rows, k), float64
        Posteriors, each row summing to 1 over the active components.
    loglik : ndarray of shape (n_rows,), float64
        ``log sum_j xi_j g_ij exp(-loss(y_i s_ij))``.
    """
    n, k = log_g.shape
    Q = np.zeros((n, k))
    loglik = np.empty(n)
    log_xi = _log_weights(xi)
    a = np.empty(k)
    work = np.empty(k)
    for i in range(n):
        yi = np.float64(y[i])
        top = -np.inf
        for j in range(k):
            a[j] = log_xi[j] + log_g[i, j] - expert_loss(yi * scores[i, j], squared)
            if xi[j] > 0.0:
                top = max(top, a[j])
        _exp_below(a, top, work)
        total = 0.0
        for j in range(k):
            if xi[j] > 0.0:
                Q[i, j] = a[j]
                total += a[j]
        inv = 1.0 / total
        for j in range(k):
            Q[i, j] *= inv
        loglik[i] = top + np.log(total)
    return Q, loglik


@njit(cache=True, nogil=True)
def gating_terms_chunk(log_g, Q, weight, active):
    """Per-row terms of the gating objective (eq. 13) and of its gradient (eq. 14).

    ``f(V) = -sum_i s_i sum_j q_ij log g_ij(V)`` and
    ``grad_j f = 2 tau sum_i r_ij (v_j - x_i)`` with ``r_ij = s_i (q_ij - g_ij(V))``,
    i.e. ``2 tau (v_j sum_i r_ij - (R^T X)_j)``. The gradient takes each row of ``Q`` to
    sum to 1 over the active components: compute ``Q`` with the mixing weights whose zeros
    mark the same components as ``active``.

    Parameters
    ----------
    log_g : ndarray of shape (n_rows, k), float64
        Log gating probabilities at the centres being evaluated.
    Q : ndarray of shape (n_rows, k), float64
        Posteriors from the E-step.
    weight : ndarray of shape (n_rows,), float32
        Sample weights ``s_i``.
    active : ndarray of shape (k,), bool

    Returns
    -------
    value : float
        The chunk's part of ``f``.
    R : ndarray of shape (n_rows, k), float64
        ``r_ij`` (0 for inactive components).
    """
    n, k = log_g.shape
    R = np.zeros((n, k))
    value = 0.0
    g = np.empty(k)
    work = np.empty(k)
    for i in range(n):
        s = np.float64(weight[i])
        for j in range(k):
            g[j] = log_g[i, j]
        _exp_below(g, 0.0, work)  # g_ij: log g_ij <= 0
        for j in range(k):
            if active[j]:
                q = Q[i, j]
                if q > 0.0:
                    value -= s * q * log_g[i, j]
                R[i, j] = s * (q - g[j])
    return value, R


def gating_objective_chunk(X: np.ndarray, weight: np.ndarray, Q: np.ndarray, V: np.ndarray,
                           active: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
    """The chunk's part of the gating objective (eq. 13) and its gradient (eq. 14) at ``V``.

    Parameters
    ----------
    X : ndarray of shape (n_rows, d), float32, or SparseRows
    weight : ndarray of shape (n_rows,), float32
    Q : ndarray of shape (n_rows, k), float64
    V : ndarray of shape (k, d), float64
    active : ndarray of shape (k,), bool
    tau : float

    Returns
    -------
    value : float
    grad : ndarray of shape (k, d), float64
        Zero rows for inactive components.
    """
    V32 = np.asarray(V, dtype=np.float32)
    if isinstance(X, SparseRows):
        x_sq = X.sq_norms()
        XV = np.ascontiguousarray(np.asarray(X.to_scipy() @ V32.T).astype(np.float64))
    else:
        x_sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        XV = np.ascontiguousarray((X @ V32.T).astype(np.float64))
    log_g = gate_log_chunk(x_sq, XV, center_sq_norms(V), active, float(tau))
    return gating_objective_from_gates(X, weight, Q, log_g, V, active, tau)


def gating_objective_from_gates(X: np.ndarray, weight: np.ndarray, Q: np.ndarray,
                                log_g: np.ndarray, V: np.ndarray, active: np.ndarray,
                                tau: float) -> tuple[float, np.ndarray]:
    """:func:`gating_objective_chunk` from the log gates at ``V`` already computed (the
    E-step's, :func:`gate_log_chunk`), so that stochastic EM forms the products once.

    Parameters
    ----------
    X, weight, Q, V, active, tau
        As :func:`gating_objective_chunk` takes them.
    log_g : ndarray of shape (n_rows, k), float64
        Log gates at ``V`` over the components ``active``.

    Returns
    -------
    value, grad
        As :func:`gating_objective_chunk` returns them.
    """
    value, R = gating_terms_chunk(log_g, Q, weight, active)
    R32 = R.astype(np.float32)
    if isinstance(X, SparseRows):
        moment = np.asarray(X.to_scipy().T @ R32).T.astype(np.float64)
    else:
        moment = (X.T @ R32).T.astype(np.float64)  # X^T R: both operands as stored
    grad = 2.0 * float(tau) * (R.sum(axis=0)[:, None] * V - moment)
    grad[~active] = 0.0
    return float(value), grad


@njit(cache=True, nogil=True, fastmath=True)
def _expert_dot(W, j, x, d):
    # w_j[:d] . x, summed in SIMD lanes (fastmath lets the reduction reassociate)
    s = 0.0
    for f in range(d):
        s += x[f] * W[j, f]
    return s


def expert_dcd_chunk(X, y, weight, Q, C, alpha, W, active, bias_scale, n_inner, seed,
                     diagonal=None, squared=False):
    """Weighted dual coordinate descent of every active expert over one chunk (eq. 15).

    Expert ``j`` minimises ``1/2 ||w_j||^2 + C sum_i c_ij loss(y_i s_ij)``, ``c_ij =
    s_i q_ij``. With the hinge, row ``i`` has the dual box ``0 <= alpha_ij <= C c_ij``: a
    warm-started ``alpha_ij`` above its new bound is first clipped to it (``w_j``
    follows). With the squared hinge (``squared``) there is no upper bound and the row's
    diagonal gains ``D_ij = 1 / (2 C c_ij)``; a row with ``C c_ij = 0`` has its variable
    set to 0. Then the usual coordinate step is taken (Hsieh et al., ICML 2008; block-wise
    over chunks as in :func:`~streamlearn.solvers.dcd.dcd_chunk`).

    Parameters
    ----------
    X : ndarray of shape (n_rows, d), float32, or SparseRows
        Dense rows, or CSR rows (each stored entry costing its work, each zero nothing).
    y : ndarray of shape (n_rows,), float32
        Labels in {-1, +1}.
    weight : ndarray of shape (n_rows,), float32
    Q : ndarray of shape (n_rows, k), float64
        Posteriors from the E-step.
    C : float
    alpha : ndarray of shape (n_rows, k), float32
        Dual variables, updated in place (``W`` is kept equal to ``sum_i y_i alpha_ij z_i``).
    W : ndarray of shape (k, d + 1), float64
        Experts, updated in place.
    active : ndarray of shape (k,), bool
        Experts to update; the others and their dual variables are left alone.
    bias_scale : float
    n_inner : int
        Sweeps over the chunk, each in a fresh random order.
    seed : int
        Non-negative seed of the orders.
    diagonal : ndarray of shape (n_rows,), float64, optional
        :func:`expert_diagonal` of the same rows and ``bias_scale``; computed when not
        given. The lanes of a pass share one chunk, hence one diagonal.
    squared : bool
        Squared hinge loss (else the hinge).

    Returns
    -------
    float
        Largest projected-gradient magnitude met in the first sweep.
    """
    if diagonal is None:
        diagonal = expert_diagonal(X, bias_scale)
    if isinstance(X, SparseRows):
        return _expert_dcd_rows(NO_DENSE, tuple(writeable(a) for a in X.kernel_args), y,
                                weight, Q, C, alpha, W, active, bias_scale, n_inner, seed,
                                diagonal, bool(squared))
    return _expert_dcd_rows(writeable(X), None, y, weight, Q, C, alpha, W, active,
                            bias_scale, n_inner, seed, diagonal, bool(squared))


def expert_diagonal(X, bias_scale):
    """``||x_i||^2 + bias_scale^2`` of every row: the diagonal of the experts' dual
    coordinate descent (:func:`expert_dcd_chunk`), the same for every expert and lane.

    Parameters
    ----------
    X : ndarray of shape (n_rows, d), float32, or SparseRows
    bias_scale : float

    Returns
    -------
    ndarray of shape (n_rows,), float64
        Accumulated in float64.
    """
    if isinstance(X, SparseRows):
        return _diagonal_rows(NO_DENSE, tuple(writeable(a) for a in X.kernel_args),
                              float(bias_scale))
    return _diagonal_rows(writeable(X), None, float(bias_scale))


@njit(cache=True, nogil=True)
def _diagonal_rows(X, csr, bias_scale):
    # expert_diagonal over the dense rows X (csr None) or the CSR rows csr (X a
    # placeholder); numba prunes the branches on `csr is None` where it is None
    n = X.shape[0] if csr is None else csr[0].shape[0] - 1
    qd = np.empty(n)
    for i in range(n):
        s = bias_scale * bias_scale
        if csr is None:
            for f in range(X.shape[1]):
                s += np.float64(X[i, f]) * np.float64(X[i, f])
        else:
            for e in range(csr[0][i], csr[0][i + 1]):
                s += np.float64(csr[2][e]) * np.float64(csr[2][e])
        qd[i] = s
    return qd


@njit(cache=True, nogil=True)
def _expert_dcd_rows(X, csr, y, weight, Q, C, alpha, W, active, bias_scale, n_inner, seed,
                     qd, squared):
    # expert_dcd_chunk over the dense rows X (csr None) or the CSR rows csr = (indptr,
    # indices, values) (X a placeholder), with the diagonal qd (expert_diagonal). numba
    # prunes the branches on `csr is None` where csr is None, so a fit on dense rows
    # compiles their form only; the branches sit outside the loops over a row
    d = W.shape[1] - 1
    k = W.shape[0]
    if csr is None:
        n = X.shape[0]
        width = d
    else:
        n = csr[0].shape[0] - 1
        width = 0
        for i in range(n):
            width = max(width, csr[0][i + 1] - csr[0][i])
    perm = np.arange(n)
    x = np.empty(width)  # the row in double precision, converted once for every expert
    cols = np.empty(width, dtype=np.int64)  # its columns (CSR rows)
    nx = width
    state = np.uint64(seed)
    pg_top = 0.0
    for sweep in range(n_inner):
        state = _shuffle(perm, state)
        for p in range(n):
            r = perm[p]
            yr = np.float64(y[r])
            if csr is None:
                for f in range(d):
                    x[f] = X[r, f]
            else:
                lo = csr[0][r]
                nx = csr[0][r + 1] - lo
                for e in range(nx):
                    x[e] = csr[2][lo + e]
                    cols[e] = csr[1][lo + e]
            for j in range(k):
                if not active[j]:
                    continue
                c_rj = np.float64(np.float32(C * np.float64(weight[r]) * Q[r, j]))
                a = np.float64(alpha[r, j])
                # squared hinge: no upper bound (a row of c_rj = 0 clipped to 0 below)
                upper = np.inf if squared and c_rj > 0.0 else c_rj
                dj = 0.5 / c_rj if squared and c_rj > 0.0 else 0.0
                if a > upper:  # the bound shrank since the last visit: clip first
                    delta = upper - a
                    alpha[r, j] = np.float32(upper)
                    if csr is None:
                        for f in range(d):
                            W[j, f] += delta * yr * x[f]
                    else:
                        for e in range(nx):
                            W[j, cols[e]] += delta * yr * x[e]
                    W[j, d] += delta * yr * bias_scale
                    a = upper
                if upper <= 0.0 or (a == 0.0 and Q[r, j] < Q_FLOOR):
                    continue
                if csr is None:
                    score = W[j, d] * bias_scale + _expert_dot(W, j, x, d)
                else:
                    score = W[j, d] * bias_scale
                    for e in range(nx):
                        score += x[e] * W[j, cols[e]]
                g = yr * score - 1.0 + dj * a
                pg = projected_gradient(g, a, upper)
                if sweep == 0:
                    pg_top = max(pg_top, abs(pg))
                if abs(pg) <= PG_EPS:
                    continue
                curv = qd[r] + dj
                a_new = min(max(a - g / curv, 0.0), upper) if curv > 0.0 else upper
                delta = np.float64(np.float32(a_new)) - a
                if delta == 0.0:
                    continue
                alpha[r, j] = np.float32(a_new)
                if csr is None:
                    for f in range(d):
                        W[j, f] += delta * yr * x[f]
                else:
                    for e in range(nx):
                        W[j, cols[e]] += delta * yr * x[e]
                W[j, d] += delta * yr * bias_scale
    return pg_top


@njit(cache=True, nogil=True)
def mixture_likelihoods_chunk(log_g, scores, xi, squared=False):
    """Mixture likelihoods of both labels, the two halves of the corrected eq. 21.

    ``pos_i = sum_j xi_j g_ij exp(-loss(s_ij))``,
    ``neg_i = sum_j xi_j g_ij exp(-loss(-s_ij))`` (:func:`expert_loss`); the discriminant is
    ``pos_i - neg_i`` and ``P(y = +1 | x_i) = pos_i / (pos_i + neg_i)``.

    Parameters
    ----------
    log_g : ndarray of shape (n_rows, k), float64
    scores : ndarray of shape (n_rows, k), float64
    xi : ndarray of shape (k,), float64
    squared : bool
        Squared hinge loss (else the hinge).

    Returns
    -------
    pos, neg : ndarray of shape (n_rows,), float64
    """
    n, k = log_g.shape
    pos = np.zeros(n)
    neg = np.zeros(n)
    for i in range(n):
        for j in range(k):
            if xi[j] > 0.0:
                m = xi[j] * np.exp(log_g[i, j])
                pos[i] += m * np.exp(-expert_loss(scores[i, j], squared))
                neg[i] += m * np.exp(-expert_loss(-scores[i, j], squared))
    return pos, neg


#: Gating logits this far below a row's largest are left out of the discriminant (their
#: weight is below ``exp(-GATE_CUTOFF)`` times the largest one's).
GATE_CUTOFF = 36.0


@njit(cache=True, nogil=True)
def mixture_decision_chunk(x_sq, XV, v_sq, scores, xi, tau, squared=False):
    """Both halves of the corrected eq. 21 in one sweep (prediction's fast path).

    Same result as :func:`gate_log_chunk` followed by :func:`mixture_likelihoods_chunk`,
    with two exponentials per component instead of four: ``exp(-max(0, 1 - s))`` and
    ``exp(-max(0, 1 + s))`` share ``exp(s - 1)`` when ``|s| < 1`` (the hinge), and
    components whose gate is below ``exp(-GATE_CUTOFF)`` times the row's largest one are
    skipped.

    Parameters
    ----------
    x_sq : ndarray of shape (n_rows,), float64
    XV : ndarray of shape (n_rows, k), float64
    v_sq : ndarray of shape (k,), float64
    scores : ndarray of shape (n_rows, k), float64
    xi : ndarray of shape (k,), float64
        Mixing weights; zeros are pruned components.
    tau : float
    squared : bool
        Squared hinge loss (else the hinge).

    Returns
    -------
    pos, neg : ndarray of shape (n_rows,), float64
    """
    n, k = XV.shape
    pos = np.zeros(n)
    neg = np.zeros(n)
    logits = np.empty(k)
    e_minus_2 = np.exp(-2.0)
    for i in range(n):
        top = -np.inf
        for j in range(k):
            if xi[j] > 0.0:
                logit = -tau * max(x_sq[i] - 2.0 * XV[i, j] + v_sq[j], 0.0)
                logits[j] = logit
                top = max(top, logit)
        total = 0.0
        p = 0.0
        m = 0.0
        for j in range(k):
            if xi[j] <= 0.0:
                continue
            gap = logits[j] - top
            if gap < -GATE_CUTOFF:
                continue
            g = np.exp(gap)
            total += g
            weight = xi[j] * g
            s = scores[i, j]
            if squared:
                p += weight * np.exp(-expert_loss(s, True))
                m += weight * np.exp(-expert_loss(-s, True))
            elif s >= 1.0:
                p += weight
                m += weight * np.exp(-1.0 - s)
            elif s <= -1.0:
                p += weight * np.exp(s - 1.0)
                m += weight
            else:
                a = np.exp(s - 1.0)
                p += weight * a
                m += weight * e_minus_2 / a
        pos[i] = p / total
        neg[i] = m / total
    return pos, neg


def mixture_log_odds(X: np.ndarray | SparseRows, V: np.ndarray, W: np.ndarray,
                     xi: np.ndarray, tau: float, bias_scale: float,
                     squared: bool = False) -> np.ndarray:
    """:func:`mixture_log_odds_chunk` of dense rows, or of CSR rows by
    :func:`mixture_log_odds_csr`."""
    if isinstance(X, SparseRows):
        return mixture_log_odds_csr(*X.kernel_args, V, W, xi, tau, bias_scale, squared)
    return mixture_log_odds_chunk(X, V, W, xi, tau, bias_scale, squared=squared)


@njit(cache=True, nogil=True)
def mixture_log_odds_csr(indptr, indices, values, V, W, xi, tau, bias_scale, squared=False):
    """:func:`mixture_log_odds_chunk` of CSR rows: ``||x - v_j||^2 = ||v_j||^2 +
    sum_e (x_e^2 - 2 x_e v_j,e)`` and ``s_j`` over each row's stored entries.

    Parameters
    ----------
    indptr, indices, values : ndarray
        The rows in CSR form (int64, int32, float32).
    V, W, xi, tau, bias_scale, squared
        As for :func:`mixture_log_odds_chunk`.

    Returns
    -------
    ndarray of shape (n_rows,), float64
    """
    n = indptr.shape[0] - 1
    k, d = V.shape
    out = np.empty(n)
    v_sq = np.zeros(k)
    for j in range(k):
        for f in range(d):
            v_sq[j] += V[j, f] * V[j, f]
    log_xi = _log_weights(xi)
    sq = np.empty(k)
    s = np.empty(k)
    a_pos = np.empty(k)
    a_neg = np.empty(k)
    for i in range(n):
        for j in range(k):
            sq[j] = v_sq[j]
            s[j] = W[j, d] * bias_scale
        for e in range(indptr[i], indptr[i + 1]):
            f = indices[e]
            x = np.float64(values[e])
            for j in range(k):
                sq[j] += x * (x - 2.0 * V[j, f])
                s[j] += x * W[j, f]
        for j in range(k):  # the entries' correction can round below 0
            sq[j] = max(sq[j], 0.0)
        out[i] = _log_odds_row(sq, s, log_xi, xi, tau, a_pos, a_neg, squared)
    return out


@njit(cache=True, nogil=True)
def _log_weights(xi):
    # log xi_j, -inf for pruned components
    out = np.empty(xi.shape[0])
    for j in range(xi.shape[0]):
        out[j] = np.log(xi[j]) if xi[j] > 0.0 else -np.inf
    return out


@njit(cache=True, nogil=True)
def _log_odds_row(sq, s, log_xi, xi, tau, a_pos, a_neg, squared):
    # log pos - log neg of one row from its squared distances and expert scores
    # (a_pos, a_neg: scratch of length k; sq is overwritten, scratch as well)
    k = sq.shape[0]
    top_pos = -np.inf
    top_neg = -np.inf
    for j in range(k):
        a = log_xi[j] - tau * sq[j]
        a_pos[j] = a - expert_loss(s[j], squared)
        a_neg[j] = a - expert_loss(-s[j], squared)
        if xi[j] > 0.0:
            top_pos = max(top_pos, a_pos[j])
            top_neg = max(top_neg, a_neg[j])
    _exp_below(a_pos, top_pos, sq)
    _exp_below(a_neg, top_neg, sq)
    total_pos = 0.0
    total_neg = 0.0
    for j in range(k):
        if xi[j] > 0.0:
            total_pos += a_pos[j]
            total_neg += a_neg[j]
    return (top_pos + np.log(total_pos)) - (top_neg + np.log(total_neg))


def mixture_log_odds_chunk(X: np.ndarray, V: np.ndarray, W: np.ndarray, xi: np.ndarray,
                           tau: float, bias_scale: float, shift: np.ndarray | None = None,
                           scale: np.ndarray | None = None,
                           squared: bool = False) -> np.ndarray:
    """Log-odds ``log pos_i - log neg_i`` of the two halves of the corrected eq. 21.

    ``pos_i = sum_j xi_j g_ij exp(-loss(s_ij))`` and
    ``neg_i = sum_j xi_j g_ij exp(-loss(-s_ij))`` share the gates' normaliser, so the
    log-odds is ``logsumexp_j(a_ij - loss(s_ij)) - logsumexp_j(a_ij - loss(-s_ij))``
    with ``a_ij = log xi_j - tau ||x_i - v_j||^2``: finite for any scores, and
    ``P(y = +1 | x_i)`` is its logistic function. Every row is computed on its own in float64
    (no matrix product whose blocking depends on the number of rows), so a row's value does
    not depend on the other rows scored with it.

    Parameters
    ----------
    X : ndarray of shape (n_rows, d), float32
    V : ndarray of shape (k, d), float64
        Gating centres.
    W : ndarray of shape (k, d + 1), float64
        Experts, the weight of the constant feature last.
    xi : ndarray of shape (k,), float64
        Mixing weights; zeros are pruned components.
    tau : float
    bias_scale : float
    shift, scale : ndarray of shape (d,), optional
        The rows are standardised on the fly, ``z = (x - shift) / scale``, one multiply-add
        per feature in double precision, so no standardised copy of them is made (none:
        ``X`` is taken as it is).
    squared : bool
        The experts' loss is the squared hinge (else the hinge, :func:`expert_loss`).

    Returns
    -------
    ndarray of shape (n_rows,), float64
    """
    d = X.shape[1]
    inv = np.ones(d) if scale is None else 1.0 / np.asarray(scale, dtype=np.float64)
    offset = np.zeros(d) if shift is None else np.asarray(shift, dtype=np.float64) * inv
    return _log_odds_dense(X, inv, offset, V, W, xi, float(tau), float(bias_scale),
                           bool(squared))


@njit(cache=True, nogil=True)
def _log_odds_dense(X, inv, offset, V, W, xi, tau, bias_scale, squared):
    # mixture_log_odds_chunk of the rows z = X * inv - offset
    n, d = X.shape
    k = V.shape[0]
    out = np.empty(n)
    a_pos = np.empty(k)
    a_neg = np.empty(k)
    # components along the contiguous axis: the per-feature updates of all components are
    # independent sums (SIMD); each sum still runs over the features in order
    Vt = np.ascontiguousarray(V.T)
    Wt = np.ascontiguousarray(W[:, :d].T)
    log_xi = _log_weights(xi)
    sq = np.empty(k)
    s = np.empty(k)
    for i in range(n):
        for j in range(k):
            sq[j] = 0.0
            s[j] = W[j, d] * bias_scale
        for f in range(d):
            x = np.float64(X[i, f]) * inv[f] - offset[f]
            for j in range(k):
                diff = x - Vt[f, j]
                sq[j] += diff * diff
                s[j] += x * Wt[f, j]
        out[i] = _log_odds_row(sq, s, log_xi, xi, tau, a_pos, a_neg, squared)
    return out
