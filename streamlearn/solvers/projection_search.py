"""Projection search of paper 001: candidate scans and the "informative feature first" loop.

A projection term ``f(u . x)`` uses the unit direction ``u = alpha / ||alpha||_2``. The search
(paper 001, Tables 1-2) moves one coordinate of ``alpha`` at a time: a *scan* evaluates the
candidates ``alpha + delta e_m`` for a set of features ``m`` and offsets ``delta``, and its
cost (eq. 8) is ``E = g(u) + lambda ||u||_1`` with ``g`` the data-fit cost of the best ridge
function of ``u . x``. Every candidate of a scan is costed from ONE walk over the rows:

* :func:`spline_gram_scan_chunk` (sparse projection pursuit regression) accumulates, for every
  candidate, the weighted B-spline Gram matrix ``sum_i w_i B(z_i) B(z_i)^T`` (banded: only
  ``degree + 1`` diagonals are non-zero, and only those are stored), the right-hand
  side ``sum_i w_i r_i B(z_i)`` and ``sum_i w_i r_i^2`` of the projected values
  ``z_i = u_c . x_i``, where ``r_i`` is the residual of the model so far, recomputed from the
  model's terms for each row; :func:`spline_fit_costs` then fits every candidate's penalised
  spline and returns its residual sum of squares;
* :func:`class_histogram_scan_chunk` (sparse Jensen-Shannon boosting) accumulates, for every
  candidate, the histograms of the projected values of the positive and the negative rows
  weighted by the boosting weights ``w_i = s_i c_{y_i} exp(-y_i F(x_i))`` of the model so far;
  :func:`js_divergence` gives the symmetric divergence of eq. 13.

The bins and the spline knots of a candidate span the range of its projected values
(:func:`projection_ranges`). :func:`informative_feature_first` is the search loop itself,
given any function that costs a scan; its first scan costs the starting directions
(:func:`search_start`: single coordinates, optionally signed coordinate pairs, or KLBoosting's
gain-weighted sum of the coordinates).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numba import njit

from streamlearn.features.bspline import bspline_basis

#: Highest exponent of a boosting weight, so that ``exp`` stays finite.
MAX_EXPONENT = 700.0
#: Costs closer than this (relative) are ties, won by the first candidate in scan order: a
#: choice never hangs on round-off (summing a row three times or once with weight 3).
TIE_TOLERANCE = 1e-9


# -- the model so far, evaluated row by row ---------------------------------------------------
@njit(cache=True, nogil=True)
def _nonzeros(proj):
    """The non-zeros of each row of ``proj`` (CSR: ``start``, ``index``, ``value``), in the
    order of the features.

    The directions are sparse (a few features each): a dot product over a row's non-zeros
    (:func:`_sparse_dot`) skips only exact-zero terms, so it sums what a dot product over
    every feature sums, in the same order (up to the sign of a zero sum), at the cost of the
    non-zeros alone: ``O(nnz)`` rather than ``O(n_terms n_features)`` a row.
    """
    n_rows, d = proj.shape
    start = np.zeros(n_rows + 1, dtype=np.int64)
    for k in range(n_rows):
        start[k + 1] = start[k]
        for j in range(d):
            if proj[k, j] != 0.0:
                start[k + 1] += 1
    index = np.empty(start[n_rows], dtype=np.int64)
    value = np.empty(start[n_rows], dtype=np.float64)
    for k in range(n_rows):
        q = start[k]
        for j in range(d):
            if proj[k, j] != 0.0:
                index[q] = j
                value[q] = proj[k, j]
                q += 1
    return start, index, value


@njit(cache=True, nogil=True)
def _sparse_dot(x, index, value, a, b):
    # sum_q value[q] x[index[q]] over q in [a, b): a row of _nonzeros
    s = 0.0
    for q in range(a, b):
        s += value[q] * x[index[q]]
    return s


@njit(cache=True, nogil=True)
def _bin(z, lo, hi, n_bins):
    # clamp in floating point first: converting a huge float to int is undefined
    t = (z - lo) * (n_bins / (hi - lo))
    if not t > 0.0:
        return 0
    if t >= n_bins:
        return n_bins - 1
    return int(t)


@njit(cache=True, nogil=True)
def _ridge_sum(x, start, index, value, lo, hi, coef, degree, basis):
    # sum_k f_k(u_k . x), f_k a B-spline with coefficients coef[k] on [lo[k], hi[k]], the
    # directions u_k as _nonzeros
    s = 0.0
    n_bases = coef.shape[1]
    for k in range(lo.shape[0]):
        z = _sparse_dot(x, index, value, start[k], start[k + 1])
        first = bspline_basis(z, lo[k], hi[k], n_bases, degree, basis)
        for a in range(degree + 1):
            s += coef[k, first + a] * basis[a]
    return s


@njit(cache=True, nogil=True)
def _table_sum(x, start, index, value, lo, hi, table):
    # sum_k table[k, bin_k(u_k . x)], the directions u_k as _nonzeros
    s = 0.0
    n_bins = table.shape[1]
    for k in range(lo.shape[0]):
        z = _sparse_dot(x, index, value, start[k], start[k + 1])
        s += table[k, _bin(z, lo[k], hi[k], n_bins)]
    return s


@njit(cache=True, nogil=True)
def ridge_predict_chunk(X, intercept, proj, lo, hi, coef, degree):
    """Predictions ``intercept + sum_k f_k(u_k . x)`` of a projection pursuit regression.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    intercept : float
    proj : ndarray of shape (n_terms, n_features), float64
        Unit directions ``u_k``.
    lo, hi : ndarray of shape (n_terms,), float64
        Range of each term's spline (values outside are clamped).
    coef : ndarray of shape (n_terms, n_bases), float64
        B-spline coefficients of each ridge function.
    degree : int
        Spline degree in {1, 2, 3}.

    Returns
    -------
    ndarray of shape (n_rows,), float64
    """
    start, index, value = _nonzeros(proj)
    out = np.empty(X.shape[0], dtype=np.float64)
    basis = np.empty(4, dtype=np.float64)
    for i in range(X.shape[0]):
        out[i] = intercept + _ridge_sum(X[i], start, index, value, lo, hi, coef, degree, basis)
    return out


@njit(cache=True, nogil=True)
def table_predict_chunk(X, proj, lo, hi, table):
    """Scores ``F(x) = sum_k table_k[bin(u_k . x)]`` of a boosted projection model.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    proj : ndarray of shape (n_terms, n_features), float64
    lo, hi : ndarray of shape (n_terms,), float64
        Range of each term's ``n_bins`` uniform bins (values outside go to the end bins).
    table : ndarray of shape (n_terms, n_bins), float64
        Output of each weak learner per bin.

    Returns
    -------
    ndarray of shape (n_rows,), float64
    """
    start, index, value = _nonzeros(proj)
    out = np.empty(X.shape[0], dtype=np.float64)
    for i in range(X.shape[0]):
        out[i] = _table_sum(X[i], start, index, value, lo, hi, table)
    return out


# -- one-pass candidate scans ----------------------------------------------------------------
@njit(cache=True, nogil=True)
def spline_gram_scan_chunk(X, y, weight, intercept, proj, lo, hi, coef, degree, alpha,
                           cand_feature, cand_delta, cand_feature2, cand_delta2, cand_scale,
                           cand_lo, cand_hi, band, rhs, totals):
    """Add one chunk's B-spline Gram statistics of every candidate projection.

    For row ``i`` with residual ``r_i = y_i - intercept - sum_k f_k(u_k . x_i)`` (the model's
    terms ``proj, lo, hi, coef``) and candidate ``c`` with projected value
    ``z = (alpha . x_i + cand_delta[c] x_i[cand_feature[c]]
    + cand_delta2[c] x_i[cand_feature2[c]]) cand_scale[c]``:
    ``band[c, j, o] += w_i B_j(z) B_{j+o}(z)`` (the ``degree + 1`` upper diagonals of the
    Gram matrix ``sum_i w_i B B^T``, see :func:`gram_from_band`), ``rhs[c] += w_i r_i B(z)``, with
    ``B`` the ``n_bases`` B-splines of degree ``degree`` on ``[cand_lo[c], cand_hi[c]]``.
    Also ``totals += [w_i r_i^2, w_i]``.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    y, weight : ndarray of shape (n_rows,), float32
    intercept : float
    proj, lo, hi, coef : the model's terms, see :func:`ridge_predict_chunk`
        (``proj`` of shape (0, n_features) for none).
    degree : int
    alpha : ndarray of shape (n_features,), float64
        Current (unnormalised) projection.
    cand_feature, cand_feature2 : ndarray of shape (n_candidates,), int64
    cand_delta, cand_delta2, cand_scale, cand_lo, cand_hi : ndarray of shape (n_candidates,)
        float64: the two offsets, ``1 / ||alpha + delta e_m + delta2 e_m2||_2`` and the
        spline range of each candidate (see :class:`Candidates`).
    band : ndarray of shape (n_candidates, n_bases, degree + 1), float64
        Updated in place.
    rhs : ndarray of shape (n_candidates, n_bases), float64
        Updated in place.
    totals : ndarray of shape (2,), float64
        Updated in place.
    """
    n_bases = band.shape[1]
    basis = np.empty(4, dtype=np.float64)
    # the model's directions and alpha by their non-zeros (_nonzeros): the same sums
    start, index, value = _nonzeros(proj)
    a_start, a_index, a_value = _nonzeros(alpha.reshape(1, -1))
    for i in range(X.shape[0]):
        x = X[i]
        w = np.float64(weight[i])
        r = y[i] - intercept - _ridge_sum(x, start, index, value, lo, hi, coef, degree, basis)
        totals[0] += w * r * r
        totals[1] += w
        base = _sparse_dot(x, a_index, a_value, 0, a_start[1])
        for c in range(cand_feature.shape[0]):
            z = (base + cand_delta[c] * x[cand_feature[c]]
                 + cand_delta2[c] * x[cand_feature2[c]]) * cand_scale[c]
            first = bspline_basis(z, cand_lo[c], cand_hi[c], n_bases, degree, basis)
            for a in range(degree + 1):
                wa = w * basis[a]
                rhs[c, first + a] += wa * r
                for o in range(degree + 1 - a):
                    band[c, first + a, o] += wa * basis[a + o]


@njit(cache=True, nogil=True)
def class_histogram_scan_chunk(X, codes, weight, class_weight, proj, lo, hi, table, alpha,
                               cand_feature, cand_delta, cand_feature2, cand_delta2, cand_scale,
                               cand_lo, cand_hi, hist):
    """Add one chunk's weighted class histograms of every candidate projection.

    Row ``i`` with class code ``k_i`` in {0, 1} (``y_i = 2 k_i - 1``) has the boosting weight
    ``w_i = weight_i class_weight[k_i] exp(-y_i F(x_i))``, ``F`` the model's scores
    (:func:`table_predict_chunk`); it adds ``w_i`` to ``hist[c, bin_c(z), k_i]`` for every
    candidate ``c`` with ``z`` as in :func:`spline_gram_scan_chunk` and ``n_bins`` uniform bins
    on ``[cand_lo[c], cand_hi[c]]`` (outside values go to the end bins).

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    codes : ndarray of shape (n_rows,), int32
    weight : ndarray of shape (n_rows,), float32
    class_weight : ndarray of shape (2,), float64
        Initial weight of a row of each class (``1 / N_-``, ``1 / N_+``).
    proj, lo, hi, table : the model's terms, see :func:`table_predict_chunk`
    alpha, cand_feature, cand_delta, cand_feature2, cand_delta2, cand_scale, cand_lo, cand_hi
        See :func:`spline_gram_scan_chunk`.
    hist : ndarray of shape (n_candidates, n_bins, 2), float64, C-contiguous
        Updated in place.
    """
    n_bins = hist.shape[1]
    n_cand = cand_feature.shape[0]
    # each candidate's bins per unit of z (the factor _bin computes for every row, the same
    # value worked out once), and whether any candidate moves a second coordinate
    per_width = np.empty(n_cand)
    pairs = False
    for c in range(n_cand):
        per_width[c] = n_bins / (cand_hi[c] - cand_lo[c])
        pairs = pairs or cand_delta2[c] != 0.0
    top = np.float64(n_bins - 1)
    flat = hist.reshape(-1)
    cell = np.empty(n_cand, dtype=np.int64)
    # the model's directions and alpha by their non-zeros (_nonzeros): the same sums
    start, index, value = _nonzeros(proj)
    a_start, a_index, a_value = _nonzeros(alpha.reshape(1, -1))
    for i in range(X.shape[0]):
        x = X[i]
        k = codes[i]
        margin = _table_sum(x, start, index, value, lo, hi, table)
        exponent = -margin if k == 1 else margin
        if exponent > MAX_EXPONENT:
            exponent = MAX_EXPONENT
        w = weight[i] * class_weight[k] * np.exp(exponent)
        base = _sparse_dot(x, a_index, a_value, 0, a_start[1])
        # every candidate's cell first (no stores to hist: the loop can use SIMD), then the
        # additions, in candidate order as before
        for c in range(n_cand):
            v = base + cand_delta[c] * x[cand_feature[c]]
            if pairs:
                v += cand_delta2[c] * x[cand_feature2[c]]
            t = (v * cand_scale[c] - cand_lo[c]) * per_width[c]
            t = t if t > 0.0 else 0.0  # as _bin: below the range (or NaN) to the first bin
            t = t if t < top else top
            cell[c] = (c * n_bins + np.int64(t)) * 2 + k
        for c in range(n_cand):
            flat[cell[c]] += w


# -- small dense work between passes ---------------------------------------------------------
@dataclass(frozen=True)
class Candidates:
    """The projections ``alpha + delta e_m + delta2 e_m2`` one scan evaluates.

    A coordinate scan moves one coordinate (``delta2 = 0``); the starts of a search
    (:func:`start_candidates`) may set two coordinates at once.

    Attributes
    ----------
    feature : ndarray of shape (n,), int64
        Coordinate ``m`` each candidate moves.
    delta : ndarray of shape (n,), float64
        Offset added to ``alpha[m]``.
    scale : ndarray of shape (n,), float64
        ``1 / ||alpha + delta e_m + delta2 e_m2||_2`` (0 for a zero vector, never chosen).
    lo, hi : ndarray of shape (n,), float64
        Range of the projected values ``u . x`` (bins and spline knots span it).
    l1 : ndarray of shape (n,), float64
        ``||u||_1`` of the unit direction (``inf`` for a zero vector).
    feature2 : ndarray of shape (n,), int64
        Second coordinate ``m2`` a candidate moves (``m`` itself when none).
    delta2 : ndarray of shape (n,), float64
        Offset added to ``alpha[m2]`` (0 when none).
    """

    feature: np.ndarray
    delta: np.ndarray
    scale: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    l1: np.ndarray
    feature2: np.ndarray
    delta2: np.ndarray

    def __len__(self) -> int:
        return int(self.feature.shape[0])

    def raw(self, alpha: np.ndarray, c: int) -> np.ndarray:
        """Unnormalised vector ``alpha + delta e_m + delta2 e_m2`` of candidate ``c``."""
        a = np.array(alpha, dtype=np.float64)
        a[self.feature[c]] += self.delta[c]
        a[self.feature2[c]] += self.delta2[c]
        return a

    def direction(self, alpha: np.ndarray, c: int) -> np.ndarray:
        """Unit direction ``u`` of candidate ``c``."""
        return self.raw(alpha, c) * self.scale[c]

    def kernel_args(self) -> tuple[np.ndarray, ...]:
        """``(feature, delta, feature2, delta2, scale, lo, hi)`` as the scan kernels take them."""
        return (self.feature, self.delta, self.feature2, self.delta2, self.scale, self.lo,
                self.hi)


@dataclass(frozen=True)
class FeatureSpread:
    """What bounds the projected values ``u . x``: per-feature extremes, mean and covariance.

    A projection's range is the interval its values can reach given the feature extremes,
    cut to ``mean +- n_std`` standard deviations of ``u . x`` so that a few far rows do not
    waste the bins.

    Attributes
    ----------
    minimum, maximum, mean : ndarray of shape (n_features,), float64
    cov : ndarray of shape (n_features, n_features), float64
        Population covariance.
    n_std : float
    """

    minimum: np.ndarray
    maximum: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    n_std: float = 4.0


def projection_ranges(U: np.ndarray, spread: FeatureSpread) -> tuple[np.ndarray, np.ndarray]:
    """Range ``[lo, hi]`` of the projected values for each row of ``U``.

    Parameters
    ----------
    U : ndarray of shape (n, n_features)
        Directions.
    spread : FeatureSpread

    Returns
    -------
    lo, hi : ndarray of shape (n,), float64
        ``hi > lo`` always (a constant projection gets ``[v - 0.5, v + 0.5]``).
    """
    U = np.atleast_2d(np.asarray(U, dtype=np.float64))
    reach_lo = np.minimum(U * spread.minimum, U * spread.maximum).sum(axis=1)
    reach_hi = np.maximum(U * spread.minimum, U * spread.maximum).sum(axis=1)
    centre = U @ spread.mean
    # u' cov u of every row: one matrix product, then row-wise dots (a three-operand einsum
    # runs no BLAS, and took 12x as long for 11,664 candidates of 108 features)
    var = np.einsum("ij,ij->i", U @ spread.cov, U)
    return _cut_ranges(reach_lo, reach_hi, centre, var, spread.n_std)


def _cut_ranges(reach_lo: np.ndarray, reach_hi: np.ndarray, centre: np.ndarray,
                var: np.ndarray, n_std: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`projection_ranges` from each direction's reach, mean and variance."""
    sd = np.sqrt(np.maximum(var, 0.0))
    lo = np.maximum(reach_lo, centre - n_std * sd)
    hi = np.minimum(reach_hi, centre + n_std * sd)
    flat = ~(hi - lo > 1e-12 * np.maximum(1.0, np.abs(centre)))
    lo = np.where(flat, centre - 0.5, lo)
    hi = np.where(flat, centre + 0.5, hi)
    return lo, hi


def make_candidates(alpha: np.ndarray, features: np.ndarray, deltas: np.ndarray,
                    spread: FeatureSpread) -> Candidates:
    """Every ``alpha + delta e_m`` for ``m`` in ``features`` and ``delta`` in ``deltas``.

    Parameters
    ----------
    alpha : ndarray of shape (n_features,)
    features : ndarray of int
    deltas : ndarray of float
    spread : FeatureSpread

    Returns
    -------
    Candidates
        Feature-major order: all deltas of ``features[0]``, then of ``features[1]``, ...
    """
    feature = np.repeat(np.asarray(features, dtype=np.int64), len(deltas))
    delta = np.tile(np.asarray(deltas, dtype=np.float64), len(features))
    return _candidates(alpha, feature, delta, feature.copy(), np.zeros_like(delta), spread)


def drop_candidates(alpha: np.ndarray, features: np.ndarray, deltas: np.ndarray,
                    spread: FeatureSpread) -> Candidates:
    """:func:`make_candidates`, followed by ``alpha - alpha[m] e_m`` for every ``m`` of
    ``features`` where ``alpha`` is not zero: the direction without that coordinate.

    Moves of a fixed grid rarely set a coordinate to exactly zero, and a search without
    the L1 term then shrinks a coordinate the data do not need by growing the others,
    round after round, each lowering the cost a little (a coordinate of 4e-4 beside one
    of 2 was still shrinking after 20 rounds); the drop reaches zero in one move.

    Parameters
    ----------
    alpha : ndarray of shape (n_features,)
    features : ndarray of int
    deltas : ndarray of float
    spread : FeatureSpread

    Returns
    -------
    Candidates
        The grid's ``len(features) * len(deltas)`` candidates first, then the drops.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    features = np.asarray(features, dtype=np.int64)
    held = features[alpha[features] != 0]
    feature = np.concatenate([np.repeat(features, len(deltas)), held])
    delta = np.concatenate([np.tile(np.asarray(deltas, dtype=np.float64), len(features)),
                            -alpha[held]])
    return _candidates(alpha, feature, delta, feature.copy(), np.zeros_like(delta), spread)


def start_candidates(n_features: int, spread: FeatureSpread, pairs: bool) -> Candidates:
    """Starting directions of a search, all costed by one scan from ``alpha = 0``.

    The single coordinates ``e_m`` (paper 001, Table 2) come first, in feature order; with
    ``pairs`` they are followed by ``e_i + e_j`` and ``e_i - e_j`` for every ``i < j``, so
    that a direction that needs two features at once (``x1 - x2`` when neither feature alone
    explains anything) is reachable from the start.

    Parameters
    ----------
    n_features : int
    spread : FeatureSpread
    pairs : bool

    Returns
    -------
    Candidates
        ``n_features`` candidates, plus ``n_features (n_features - 1)`` with ``pairs``.
    """
    feature = np.arange(n_features, dtype=np.int64)
    feature2 = feature.copy()
    delta2 = np.zeros(n_features)
    if pairs:
        i, j = np.triu_indices(n_features, k=1)
        feature = np.concatenate([feature, np.repeat(i, 2)])
        feature2 = np.concatenate([feature2, np.repeat(j, 2)])
        delta2 = np.concatenate([delta2, np.tile([1.0, -1.0], len(i))])
    return _candidates(np.zeros(n_features), feature, np.ones(len(feature)), feature2, delta2,
                       spread)


def _candidates(alpha: np.ndarray, feature: np.ndarray, delta: np.ndarray, feature2: np.ndarray,
                delta2: np.ndarray, spread: FeatureSpread) -> Candidates:
    """The candidates ``a = alpha + delta e_m + delta2 e_m2`` with their scales, ranges and
    ``l1``, in O(1) per candidate after O(n_features^2) once.

    Each candidate differs from ``alpha`` in at most two coordinates, so its sums over the
    coordinates (``||a||^2``, ``||a||_1``, the reach, ``a . mean``) are ``alpha``'s over the
    other coordinates (prefix and suffix sums: a coordinate that is 0 adds exactly nothing,
    so the zero vector is found exactly) plus the moved ones, and
    ``a' cov a = alpha' cov alpha + 2 d' (cov alpha) + d' cov d`` with ``d`` the move. The
    dense ``(n_candidates, n_features)`` directions and ``U @ cov``, O(n_candidates
    n_features^2) a scan, are never formed; the values are :func:`projection_ranges`'s up
    to rounding.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    feature = np.asarray(feature, dtype=np.int64)
    feature2 = np.asarray(feature2, dtype=np.int64)
    delta = np.asarray(delta, dtype=np.float64)
    delta2 = np.asarray(delta2, dtype=np.float64)
    same = feature2 == feature
    first = np.minimum(feature, feature2)
    last = np.maximum(feature, feature2)
    # the moved coordinates' new values, summed in the order the dense vectors were
    new1 = np.where(same, (alpha[feature] + delta) + delta2, alpha[feature] + delta)
    new2 = np.where(same, 0.0, alpha[feature2] + delta2)

    def others(per_coordinate: np.ndarray) -> np.ndarray:
        # sum over the coordinates other than m and m2: before the first, between, after
        # the last (prefix[k] sums coordinates < k)
        prefix = np.concatenate([[0.0], np.cumsum(per_coordinate)])
        suffix = np.concatenate([np.cumsum(per_coordinate[::-1])[::-1], [0.0]])
        between = np.where(same, 0.0, prefix[last] - prefix[np.minimum(first + 1, last)])
        return prefix[first] + between + suffix[last + 1]

    def moved(per_value: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        # the moved coordinates' terms, from their new values
        return per_value(new1, feature) + np.where(same, 0.0, per_value(new2, feature2))

    norm = np.sqrt(others(alpha * alpha) + moved(lambda v, _: v * v))
    zero = ~(norm > 1e-12)
    scale = np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, norm))
    low = np.minimum(alpha * spread.minimum, alpha * spread.maximum)
    high = np.maximum(alpha * spread.minimum, alpha * spread.maximum)
    reach_lo = others(low) + moved(lambda v, m: np.minimum(v * spread.minimum[m],
                                                           v * spread.maximum[m]))
    reach_hi = others(high) + moved(lambda v, m: np.maximum(v * spread.minimum[m],
                                                            v * spread.maximum[m]))
    centre = others(alpha * spread.mean) + moved(lambda v, m: v * spread.mean[m])
    l1 = others(np.abs(alpha)) + moved(lambda v, _: np.abs(v))
    # a' cov a with a = alpha + d1 e_m + d2 e_m2 (d2 = 0 when m2 is m: d1 holds both)
    cov = spread.cov
    cov_alpha = cov @ alpha
    d1 = new1 - alpha[feature]
    d2 = np.where(same, 0.0, new2 - alpha[feature2])
    var = (float(alpha @ cov_alpha) + 2.0 * (d1 * cov_alpha[feature] + d2 * cov_alpha[feature2])
           + d1 * d1 * cov[feature, feature] + d2 * d2 * cov[feature2, feature2]
           + 2.0 * d1 * d2 * cov[feature, feature2])
    lo, hi = _cut_ranges(reach_lo * scale, reach_hi * scale, centre * scale,
                         var * scale * scale, spread.n_std)
    l1 = np.where(zero, np.inf, l1 * scale)
    return Candidates(feature, delta, scale, lo, hi, l1, feature2, delta2)


def penalty_matrix(n_bases: int, order: int = 2) -> np.ndarray:
    """``D^T D`` with ``D`` the ``(n_bases - order) x n_bases`` difference matrix (P-splines).

    Parameters
    ----------
    n_bases : int
    order : int

    Returns
    -------
    ndarray of shape (n_bases, n_bases), float64
    """
    D = np.diff(np.eye(n_bases), n=order, axis=0)
    return D.T @ D


def gram_from_band(band: np.ndarray) -> np.ndarray:
    """Full symmetric Gram matrices from the diagonals the scan kernel fills.

    Parameters
    ----------
    band : ndarray of shape (n, n_bases, degree + 1)
        ``band[c, j, o]`` is entry ``(j, j + o)`` (zero where ``j + o >= n_bases``).

    Returns
    -------
    ndarray of shape (n, n_bases, n_bases)
    """
    n, n_bases, width = band.shape
    full = np.zeros((n, n_bases, n_bases))
    for o in range(min(width, n_bases)):
        j = np.arange(n_bases - o)
        full[:, j, j + o] = band[:, j, o]
        full[:, j + o, j] = band[:, j, o]
    return full


def spline_fit_costs(gram: np.ndarray, rhs: np.ndarray, sum_rr: float,
                     penalty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fit a penalised spline for every candidate; its residual sum of squares.

    ``coef_c = (G_c + P)^-1 b_c`` minimises ``sum_i w_i (r_i - B(z_i) . coef)^2 + coef' P coef``
    and its residual sum of squares is ``sum_rr - 2 coef_c . b_c + coef_c' G_c coef_c``.

    Parameters
    ----------
    gram : ndarray of shape (n, n_bases, n_bases)
        Full (symmetric) Gram matrices.
    rhs : ndarray of shape (n, n_bases)
    sum_rr : float
        ``sum_i w_i r_i^2``.
    penalty : ndarray of shape (n_bases, n_bases)
        Roughness penalty ``P``.

    Returns
    -------
    sse : ndarray of shape (n,)
    coef : ndarray of shape (n, n_bases)
    """
    n_bases = gram.shape[-1]
    jitter = 1e-10 * (np.trace(gram, axis1=1, axis2=2) / n_bases + 1e-300)
    A = gram + penalty[None] + jitter[:, None, None] * np.eye(n_bases)[None]
    coef = np.linalg.solve(A, rhs[..., None])[..., 0]
    sse = sum_rr - 2.0 * np.einsum("ci,ci->c", coef, rhs) + np.einsum(
        "ci,cij,cj->c", coef, gram, coef)
    return np.maximum(sse, 0.0), coef


def js_divergence(hist: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence of eq. 13 between the class histograms of each candidate.

    ``SJS = sum_b p_b log(2 p_b / (p_b + q_b)) + q_b log(2 q_b / (p_b + q_b))`` with ``p``
    and ``q`` the positive and negative histograms, each normalised to sum to one.

    Parameters
    ----------
    hist : ndarray of shape (n, n_bins, 2)
        Weighted counts, negative class at ``[..., 0]``.

    Returns
    -------
    ndarray of shape (n,), in ``[0, 2 log 2]``
    """
    q = hist[..., 0] / np.maximum(hist[..., 0].sum(axis=-1, keepdims=True), 1e-300)
    p = hist[..., 1] / np.maximum(hist[..., 1].sum(axis=-1, keepdims=True), 1e-300)
    m = p + q
    safe = np.where(m > 0, m, 1.0)
    tp = np.where(p > 0, p * np.log(np.where(p > 0, 2.0 * p, 1.0) / safe), 0.0)
    tq = np.where(q > 0, q * np.log(np.where(q > 0, 2.0 * q, 1.0) / safe), 0.0)
    return (tp + tq).sum(axis=-1)


def weak_learner_table(hist: np.ndarray, smoothing: float) -> np.ndarray:
    """``f_b = 1/2 log((h+_b + eps) / (h-_b + eps))`` of one candidate's histogram.

    ``h+_b, h-_b`` are the bin masses of the positive and negative rows over the total mass
    of all rows (real AdaBoost's confidence-rated prediction) and ``eps = smoothing / n_bins``.

    Parameters
    ----------
    hist : ndarray of shape (n_bins, 2)
    smoothing : float

    Returns
    -------
    ndarray of shape (n_bins,)
    """
    total = max(float(hist.sum()), 1e-300)
    eps = smoothing / hist.shape[0]
    return 0.5 * np.log((hist[:, 1] / total + eps) / (hist[:, 0] / total + eps))


# -- the search loop (paper 001, Tables 1-2) -------------------------------------------------
#: A scan: costs g of the candidates and the statistic of each (e.g. its fitted spline).
ScanFunction = Callable[[np.ndarray, Candidates], tuple[np.ndarray, Any]]


@dataclass
class SearchResult:
    """Outcome of :func:`informative_feature_first`.

    Attributes
    ----------
    alpha : ndarray of shape (n_features,)
        Unit direction ``alpha / ||alpha||_2``.
    lo, hi : float
        Range of its projected values (its bins or spline knots).
    fit_cost : float
        ``g`` of the chosen direction.
    cost : float
        ``E = g + lam ||alpha||_1``.
    lam : float
        Weight of the L1 term.
    stat : Any
        The scan's statistic of the chosen direction (its histogram, its spline).
    n_scans : int
        Passes over the data the search took.
    converged : bool
        False when the search stopped at its ``max_iter`` rounds (or sweeps) while still
        lowering the cost; True when a round found nothing better (or ``max_iter`` is 0).
    """

    alpha: np.ndarray
    lo: float
    hi: float
    fit_cost: float
    cost: float
    lam: float
    stat: Any
    n_scans: int
    converged: bool = True


def offsets(lo: float, hi: float, step: float) -> np.ndarray:
    """``lo, lo + step, ..., hi`` (both ends included), rounded to clear float drift."""
    n = round((hi - lo) / step)
    return np.round(lo + step * np.arange(n + 1), 12)


#: Starts of a search: the paper's best single coordinate, the best of the single coordinates
#: and the signed coordinate pairs, or KLBoosting's gain-weighted sum of the coordinates.
STARTS = ("coordinate", "pairs", "weighted")
#: ``start="pairs"`` costs the signed pairs only up to this many features: they number
#: ``n (n - 1)`` (4,032 at 64 features, 614,656 at 784), each one costed on every row and
#: holding its own histogram or spline system in the scan; wider data starts from the
#: single coordinates.
MAX_PAIR_START_FEATURES = 64


def search_start(scan: ScanFunction, n_features: int, spread: FeatureSpread,
                 penalty_weight: Callable[[float], float], start: str = "coordinate",
                 null_cost: Callable[[], float] | None = None
                 ) -> tuple[np.ndarray, SearchResult, float, int]:
    """Starting direction of a search and the L1 weight, from one scan of the coordinates.

    The first scan costs the single coordinates ``e_m`` (and, with ``start="pairs"``, the
    signed pairs ``e_i +- e_j``, :func:`start_candidates`). The L1 weight is
    ``lam = penalty_weight(g(e_i))`` with ``e_i`` the best single coordinate (eq. 6,
    ``alpha^(0)``) whatever the start. The start is

    * ``"coordinate"``: ``e_i`` (paper 001, Table 2);
    * ``"pairs"``: the single coordinate or signed pair of lowest ``E = g + lam ||u||_1``
      (the single coordinates alone above :data:`MAX_PAIR_START_FEATURES` features);
    * ``"weighted"``: ``sum_m G_m e_m`` with the gains ``G_m = max(g_null - g(e_m), 0)`` over
      the cost ``g_null`` of an uninformative projection: the divergence of each coordinate
      for a Jensen-Shannon cost ``g = -SJS`` (``g_null = 0``), the drop of the residual sum
      of squares for a regression. This is KLBoosting's start (paper 001 ref. [17]: the
      divergence-weighted sum of its top-L coordinate features; here all M of them), and it
      gives every coordinate that lowers the cost at all, irrelevant ones included, a
      non-zero entry. It takes one more scan (to cost the start itself); with fewer than two
      positive gains it is ``e_i``.

    Parameters
    ----------
    scan, n_features, spread, penalty_weight
        See :func:`informative_feature_first`.
    start : {"coordinate", "pairs", "weighted"}
    null_cost : callable, optional
        ``g_null``, evaluated after the first scan (which may be what computes it);
        0 when None.

    Returns
    -------
    alpha : ndarray of shape (n_features,)
        The (unnormalised) starting vector.
    best : SearchResult
        Its direction, cost and statistic.
    lam : float
    n_scans : int
        1, or 2 for a weighted start.
    """
    if start not in STARTS:
        raise ValueError(f"start must be one of {STARTS}, got {start!r}")
    origin = np.zeros(n_features)
    pairs = start == "pairs" and n_features <= MAX_PAIR_START_FEATURES
    starts = start_candidates(n_features, spread, pairs)
    g, stats = scan(origin, starts)
    i = first_minimum(g[:n_features])
    lam = float(penalty_weight(float(g[i])))
    if start == "weighted":
        reference = 0.0 if null_cost is None else float(null_cost())
        single = np.asarray(g[:n_features], dtype=np.float64)
        gain = np.where(np.isfinite(single), np.maximum(reference - single, 0.0), 0.0)
        if np.count_nonzero(gain) >= 2:
            alpha = gain / np.linalg.norm(gain)
            found = direction_cost(scan, alpha, spread, lam)
            found.lam, found.n_scans = 0.0, 0
            return alpha, found, lam, 2
    cost = _costs(g, lam, starts)
    if not pairs:
        cost[n_features:] = np.inf
    s = first_minimum(cost)
    best = _pick(origin, starts, s, g, float(cost[s]), stats)
    return starts.raw(origin, s), best, lam, 1


def informative_feature_first(scan: ScanFunction, n_features: int, spread: FeatureSpread,
                              penalty_weight: Callable[[float], float], *,
                              search_range: float = 1.0, coarse_step: float = 0.1,
                              fine_step: float = 0.01, max_iter: int = 20,
                              start: str = "coordinate",
                              null_cost: Callable[[], float] | None = None,
                              drops: bool = False) -> SearchResult:
    """Find a sparse projection by the "informative feature first" search (Tables 1-2).

    1. One scan costs the starting directions (:func:`search_start`): the single
       coordinates ``e_m`` and, with ``start="pairs"``, the signed pairs ``e_i +- e_j``. The L1
       weight is ``lam = penalty_weight(g(e_i))`` with ``e_i`` the best single coordinate
       (eq. 6, ``alpha^(0)``); the search starts from the start of lowest cost
       ``E = g(u) + lam ||u||_1`` (``e_i`` itself with ``start="coordinate"``, Table 2; the
       gain-weighted sum of the coordinates with ``start="weighted"``).
    2. Repeat: a coarse scan of every coordinate, ``alpha + delta e_m`` with ``delta`` in
       ``[-H, H]`` by ``coarse_step``, picks the coordinate and offset of the lowest cost
       ``E``, ``u = alpha / ||alpha||`` (eq. 8); a fine scan of that coordinate around the
       offset (``+- coarse_step`` by ``fine_step``) sets it. Stop when no coarse candidate
       lowers ``E`` (the lower cost wins: the "E > E*" of the printed pseudo-code is written
       for a maximised score) or after ``max_iter`` rounds.

    Parameters
    ----------
    scan : callable
        ``scan(alpha, candidates) -> (g, stats)``: data-fit cost of every candidate (one pass
        over the data) and an indexable of per-candidate statistics.
    n_features : int
    spread : FeatureSpread
        Bounds of the projected values.
    penalty_weight : callable
        ``lam`` from the fit cost of the best single coordinate.
    search_range, coarse_step, fine_step : float
        ``H``, ``dH``, ``dh`` of the paper.
    max_iter : int
    start : {"coordinate", "pairs", "weighted"}
    null_cost : callable, optional
        Cost of an uninformative projection, for ``start="weighted"`` (:func:`search_start`).
    drops : bool
        Each coarse scan also costs the direction without each of its non-zero
        coordinates (:func:`drop_candidates`): for a search without the L1 term, which
        otherwise shrinks an unneeded coordinate toward zero round after round.

    Returns
    -------
    SearchResult
    """
    alpha, best, lam, n_scans = search_start(scan, n_features, spread, penalty_weight, start,
                                             null_cost)
    best, rounds, converged = _informative_rounds(
        scan, alpha, best, lam, np.arange(n_features), spread, search_range, coarse_step,
        fine_step, max_iter, drops)
    best.lam = lam
    best.n_scans = n_scans + rounds
    best.converged = converged
    return best


def _informative_rounds(scan: ScanFunction, alpha: np.ndarray, best: SearchResult,
                        lam: float, features: np.ndarray, spread: FeatureSpread,
                        search_range: float, coarse_step: float, fine_step: float,
                        max_iter: int, drops: bool = False) -> tuple[SearchResult, int, bool]:
    # the rounds of informative_feature_first from alpha (whose result is best), moving
    # the coordinates of ``features`` only: the best result, the scans, whether it stopped
    # because no round lowered the cost; ``drops``: each coarse scan also costs setting
    # each non-zero coordinate to exactly zero (:func:`drop_candidates`)
    coarse = offsets(-search_range, search_range, coarse_step)
    converged = int(max_iter) == 0
    n_scans = 0
    for _ in range(int(max_iter)):
        cands = (drop_candidates(alpha, features, coarse, spread) if drops
                 else make_candidates(alpha, features, coarse, spread))
        g, stats = scan(alpha, cands)
        n_scans += 1
        cost = _costs(g, lam, cands)
        c = first_minimum(cost)
        if not _lowers(cost[c], best.cost, cost):
            converged = True
            break
        m, d = int(cands.feature[c]), float(cands.delta[c])
        winner = _pick(alpha, cands, c, g, float(cost[c]), stats)
        if c >= len(features) * len(coarse):  # a drop: the coordinate is exactly zero
            best = winner
            alpha = alpha.copy()
            alpha[m] = 0.0
            continue
        fine = make_candidates(alpha, np.array([m]),
                               offsets(d - coarse_step, d + coarse_step, fine_step), spread)
        g, stats = scan(alpha, fine)
        n_scans += 1
        cost = _costs(g, lam, fine)
        f = first_minimum(cost)
        if _lowers(cost[f], winner.cost, cost):
            winner, d = _pick(alpha, fine, f, g, float(cost[f]), stats), float(fine.delta[f])
        best = winner
        alpha = alpha.copy()
        alpha[m] += d
    return best, n_scans, converged


def direction_cost(scan: ScanFunction, alpha: np.ndarray, spread: FeatureSpread,
                   lam: float = 0.0) -> SearchResult:
    """One scan costing the direction ``alpha`` alone (``n_scans`` 1, ``lam`` as given).

    Parameters
    ----------
    scan, spread
        See :func:`informative_feature_first`.
    alpha : ndarray of shape (n_features,)
    lam : float
        L1 weight of its cost ``E = g + lam ||u||_1``.

    Returns
    -------
    SearchResult
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    itself = make_candidates(alpha, np.zeros(1, dtype=np.int64), np.zeros(1), spread)
    g, stats = scan(alpha, itself)
    result = _pick(alpha, itself, 0, g, float(_costs(g, lam, itself)[0]), stats)
    result.lam, result.n_scans = float(lam), 1
    return result


def relax_direction(scan: ScanFunction, found: SearchResult, spread: FeatureSpread, *,
                    chosen: np.ndarray | None = None, search_range: float = 1.0,
                    coarse_step: float = 0.1, fine_step: float = 0.01,
                    max_iter: int = 20) -> SearchResult:
    """Refit a found direction on its own non-zero coordinates without the L1 term.

    The L1 term of eq. 8 selects the features and also shrinks the direction toward the
    coordinate axes: ``(1, 1) / sqrt 2`` costs ``lam sqrt 2`` where a coordinate costs
    ``lam``. As the relaxed lasso does for a linear model, the rounds of
    :func:`informative_feature_first` run again from ``found``, with ``lam = 0``, over the
    coordinates the direction uses: the features stay those the penalised search chose
    (a coordinate may still reach zero: each round also costs dropping each coordinate,
    :func:`drop_candidates`), and the direction moves to where the data put it.
    A direction on one feature has nothing to refit.

    Parameters
    ----------
    scan, spread
        See :func:`informative_feature_first`.
    found : SearchResult
        The penalised search's result.
    search_range, coarse_step, fine_step, max_iter
        As for :func:`informative_feature_first`.

    Returns
    -------
    SearchResult
        The refitted direction; ``lam`` is ``found``'s (the weight that chose the
        features), ``cost`` its data-fit cost, ``n_scans`` and ``converged`` count both
        searches.
    """
    support = np.flatnonzero(found.alpha)
    if chosen is not None:
        support = np.union1d(support, np.asarray(chosen, dtype=np.int64))
    if support.shape[0] < 2:
        return found
    start = replace(found, cost=found.fit_cost)
    best, rounds, converged = _informative_rounds(
        scan, np.asarray(found.alpha, dtype=np.float64), start, 0.0, support, spread,
        search_range, coarse_step, fine_step, max_iter, drops=True)
    return replace(best, lam=found.lam, n_scans=found.n_scans + rounds,
                   converged=found.converged and converged)


def on_support(scan: ScanFunction, spread: FeatureSpread, support: np.ndarray
               ) -> tuple[ScanFunction, FeatureSpread, Callable[[SearchResult], SearchResult]]:
    """A search over the features ``support`` only, as any search of this module runs it.

    The search sees ``len(support)`` features: their extremes, mean and covariance
    (``spread`` cut to them), and a scan that places its directions and candidates among
    all the features (zero elsewhere) before it calls ``scan``. A direction that is zero
    off the support projects every row as the full one does, so its range, ``||u||_1``
    and cost are those of the full search.

    Parameters
    ----------
    scan : callable
        Over all the features (see :func:`informative_feature_first`).
    spread : FeatureSpread
        Of all the features.
    support : ndarray of int
        The features the search may use, in increasing order.

    Returns
    -------
    scan : callable
        Over the support.
    spread : FeatureSpread
        Of the support.
    lift : callable
        The result of a search over the support as one over all the features (its
        ``alpha`` placed among them; the rest as it is).
    """
    support = np.asarray(support, dtype=np.int64)
    n_features = spread.mean.shape[0]

    def place(alpha: np.ndarray) -> np.ndarray:
        full = np.zeros(n_features)
        full[support] = alpha
        return full

    def sub_scan(alpha: np.ndarray, cands: Candidates) -> tuple[np.ndarray, Any]:
        return scan(place(alpha), replace(cands, feature=support[cands.feature],
                                          feature2=support[cands.feature2]))

    sub = FeatureSpread(spread.minimum[support], spread.maximum[support],
                        spread.mean[support], spread.cov[np.ix_(support, support)],
                        spread.n_std)
    return sub_scan, sub, lambda result: replace(result, alpha=place(result.alpha))


def sequential_coordinate_search(scan: ScanFunction, n_features: int, spread: FeatureSpread,
                                 penalty_weight: Callable[[float], float], *,
                                 search_range: float = 1.0, coarse_step: float = 0.1,
                                 fine_step: float = 0.01, max_iter: int = 20,
                                 start: str = "coordinate",
                                 null_cost: Callable[[], float] | None = None) -> SearchResult:
    """Find a projection by cyclic 1-D searches over every coordinate (KLBoosting's search).

    The search paper 001 improves on (Sec. 3.2): from the start (:func:`search_start`; the
    best single coordinate by default, KLBoosting's own with ``start="weighted"``), sweep
    the coordinates ``m = 1 .. M`` in turn; each gets a coarse scan of ``alpha + delta e_m``
    and a fine scan around the best offset, and keeps the offset when it lowers
    ``E = g + lam ||u||_1``. Every coordinate may be modified, irrelevant ones included.
    Stops after a sweep that changes nothing or after ``max_iter`` sweeps. Parameters and
    result as :func:`informative_feature_first`; each 1-D search takes two scans.
    """
    alpha, best, lam, n_scans = search_start(scan, n_features, spread, penalty_weight, start,
                                             null_cost)
    alpha = np.array(alpha, dtype=np.float64)
    coarse = offsets(-search_range, search_range, coarse_step)
    converged = int(max_iter) == 0
    for _ in range(int(max_iter)):
        changed = False
        for m in range(n_features):
            cands = make_candidates(alpha, np.array([m]), coarse, spread)
            g, stats = scan(alpha, cands)
            cost = _costs(g, lam, cands)
            c = first_minimum(cost)
            d = float(cands.delta[c])
            fine = make_candidates(alpha, np.array([m]),
                                   offsets(d - coarse_step, d + coarse_step, fine_step), spread)
            g, stats = scan(alpha, fine)
            n_scans += 2
            cost = _costs(g, lam, fine)
            f = first_minimum(cost)
            if _lowers(cost[f], best.cost, cost):
                best = _pick(alpha, fine, f, g, float(cost[f]), stats)
                alpha = alpha.copy()
                alpha[m] += float(fine.delta[f])
                changed = True
        if not changed:
            converged = True
            break
    best.lam = lam
    best.n_scans = n_scans
    best.converged = converged
    return best


def tie_width(cost: np.ndarray) -> float:
    """Costs of one scan closer than this are ties: :data:`TIE_TOLERANCE` times the largest
    finite cost magnitude of the scan (0 when none is finite).

    Parameters
    ----------
    cost : ndarray of shape (n,)

    Returns
    -------
    float
    """
    cost = np.asarray(cost, dtype=np.float64)
    finite = np.abs(cost[np.isfinite(cost)])
    return TIE_TOLERANCE * float(finite.max()) if finite.size else 0.0


def first_minimum(cost: np.ndarray) -> int:
    """Index of the first cost within :func:`tie_width` of the lowest: scan order wins
    ties, so the choice does not depend on round-off.

    Parameters
    ----------
    cost : ndarray of shape (n,)

    Returns
    -------
    int
        ``argmin(cost)`` when no cost is finite.
    """
    cost = np.asarray(cost, dtype=np.float64)
    lowest = float(np.min(cost))
    if not np.isfinite(lowest):
        return int(np.argmin(cost))
    return int(np.flatnonzero(cost <= lowest + tie_width(cost))[0])


def _lowers(cost: float, incumbent: float, scan_cost: np.ndarray) -> bool:
    # better than the incumbent by more than a tie of the scan (costs of scan_cost)
    width = max(tie_width(scan_cost), TIE_TOLERANCE * abs(incumbent))
    return bool(cost < incumbent - width)


def _costs(g: np.ndarray, lam: float, cands: Candidates) -> np.ndarray:
    # E = g + lam ||u||_1; a zero vector (l1 = inf) is never a candidate, even when lam = 0
    valid = np.isfinite(cands.l1) & np.isfinite(g)
    return np.where(valid, g + lam * np.where(valid, cands.l1, 0.0), np.inf)


def _pick(alpha: np.ndarray, cands: Candidates, c: int, g: np.ndarray, cost: float,
          stats: Any) -> SearchResult:
    return SearchResult(cands.direction(alpha, c), float(cands.lo[c]), float(cands.hi[c]),
                        float(g[c]), cost, 0.0, stats[c], 0)
