"""Choosing pair terms for an additive model: FAST screening in one streamed pass.

FAST (Lou, Caruana, Gehrke and Hooker, KDD 2013) ranks feature pairs by how much a
four-quadrant step function of the pair reduces the residual sum of squares of an additive
model. Here the additive model is the fitted per-feature SVM, and the residual of row ``i``
under binary model ``j`` is the gradient of the log-loss of its calibrated probability,
``r_ij = [y_i = +1] - P_j(x_i)``. Each feature is cut into at most :data:`SCREEN_BINS`
quantile bins of the describe pass's row sample; a reduction pass adds up, for every
candidate pair and model, the weighted residuals and weights of the rows in each of the
``B x B`` cells (the sums merge by addition, so the pass runs on any engine). From the
cells' 2-D prefix sums, every cut ``(c_f, c_g)`` gives four quadrant means; a pair's score
is the largest reduction of the residual sum of squares over its cuts
(:func:`fast_gains`), added over the binary models, and the pairs with the largest scores
are chosen.

The pass adds a row to a pair's cell only when the row is outside both features' most
frequent bins (:func:`off_common_cell_sums`); the other cells follow from each feature's
bin sums (:func:`complete_cells`). On one-hot and mostly-zero features a pair then costs
the few rows where both are set, not every row; a feature's common bin likewise gets the
chunk's total less its other bins (:func:`bin_sums`). On continuous features, whose rows
are mostly off the common bin, every row is added without the lists
(:data:`EVERY_ROW_SHARE`). A pass decides once, from the rows it reads, whether numpy or
the kernels do this work, so that data in many small chunks take the kernels.

Candidates: the pairs among the features whose terms matter most in the additive model
(``feature_importances_``), as many features as keep the cell sums within
:data:`SCREEN_CELLS` numbers per array; on data with few features, all pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
from numba import njit

from streamlearn.data import Chunk
from streamlearn.solvers.additive.passes import ModelPairs
from streamlearn.solvers.calibration import sigmoid_proba
from streamlearn.solvers.embedding import Embedding, decision_ovr_chunk
from streamlearn.solvers.holdout import Holdout

#: Quantile bins per feature for screening.
SCREEN_BINS = 16
#: Largest number of cells x models in the screening pass's sums (each of two arrays).
SCREEN_CELLS = 1 << 21


#: A candidate's bins, or a pair's cells, are added over every row of a chunk, not over
#: the list of rows off the common bin (of the pair's rarer feature), where that list
#: holds more than ``1 / EVERY_ROW_SHARE`` of the rows (continuous features): a row then
#: costs a sequential read and one addition per model instead of reads through the list,
#: about a third of the time.
EVERY_ROW_SHARE = 3

#: Most residual and weight columns (``m + m_w``) whose rows are added to cells a model at
#: a time (a scalar loop over the rows per model); with more, a row at a time, its
#: models side by side (:func:`add_rows_to_cells`).
MODEL_MAJOR_COLUMNS = 8

#: Largest ``n_rows x n_candidates`` of a chunk that :func:`bin_chunk` bins with numpy
#: instead of :func:`bin_rows` and :func:`bin_sums`: about a millisecond, where their
#: compile costs 0.3 s, so that a fit on small data does not compile them.
NUMPY_BIN_ENTRIES = 1 << 17


def bin_chunk(X: np.ndarray, columns: np.ndarray, edges: np.ndarray, common: np.ndarray,
              residual: np.ndarray, weight: np.ndarray, sums: np.ndarray,
              weights: np.ndarray, kernels: bool | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`bin_rows` then :func:`bin_sums` of a chunk: with numpy when ``n_rows x
    n_candidates`` is at most :data:`NUMPY_BIN_ENTRIES`, else with the kernels (the same
    bins and, the rows added in the same order, the same bits).

    Parameters
    ----------
    X, columns, edges, common
        As for :func:`bin_rows`.
    residual, weight, sums, weights
        As for :func:`bin_sums`; ``sums`` and ``weights`` are accumulated in place.
    kernels : bool, optional
        Use the kernels (True) or numpy (False) whatever the chunk's size: a pass over
        many chunks decides once for all of them (:class:`ScreeningPass`).

    Returns
    -------
    bins, off_rows, n_off : ndarray
        As :func:`bin_rows` fills them.
    """
    k, n = columns.shape[0], X.shape[0]
    bins = np.empty((k, n), dtype=np.int32)
    off_rows = np.empty((k, n), dtype=np.int32)
    n_off = np.empty(k, dtype=np.int64)
    if kernels if kernels is not None else n * k > NUMPY_BIN_ENTRIES:
        bin_rows(X, columns, edges, common, bins, off_rows, n_off)
        bin_sums(bins, off_rows, n_off, common, residual, weight, sums, weights)
        return bins, off_rows, n_off
    # the rows' sums in order, as the kernel adds them (cumsum adds one after another)
    totals = [np.cumsum(v, axis=0)[-1] if n else np.zeros(v.shape[1])
              for v in (residual, weight)]
    n_edges = edges.shape[1]
    for c in range(k):
        x = X[:, columns[c]].astype(np.float64)
        e = edges[c]
        finite = e[: np.argmax(e == np.inf)] if np.isinf(e[-1]) else e
        b = np.count_nonzero(finite[None, :] <= x[:, None], axis=1)  # NaN: none
        b[x == np.inf] = n_edges
        bins[c] = b
        off = np.flatnonzero(b != common[c])
        off_rows[c, : off.shape[0]] = off
        n_off[c] = off.shape[0]
        for out, values, total in ((sums[c], residual, totals[0]),
                                   (weights[c], weight, totals[1])):
            add_to_bins_numpy(b, off, int(common[c]), values, total, out)
    return bins, off_rows, n_off


@njit(cache=True, nogil=True)
def bin_rows(X, columns, edges, common, bins, off_rows, n_off):
    """Bin each candidate column of ``X`` and list the rows outside its common bin.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    columns : ndarray of shape (n_candidates,), int64
        The candidates' columns of ``X``.
    edges : ndarray of shape (n_candidates, n_bins - 1), float64
        :func:`bin_edges`; a value's bin is the number of edges at or below it
        (``searchsorted(..., side="right")``).
    common : ndarray of shape (n_candidates,), int64
        Each candidate's most frequent bin (:func:`common_bins`).
    bins : ndarray of shape (n_candidates, n_rows), int32
        Filled with each row's bin of each candidate.
    off_rows : ndarray of shape (n_candidates, n_rows), int32
        Filled, per candidate, with the rows (ascending) whose bin is not the common one.
    n_off : ndarray of shape (n_candidates,), int64
        Filled with the length of each candidate's list.
    """
    n, k = X.shape[0], columns.shape[0]
    n_edges = edges.shape[1]
    x = np.empty(n)
    for c in range(k):
        # a candidate at a time, an edge at a time over all rows: a value's bin is the
        # count of the finite edges at or below it, compared without branches (a binary
        # search's branches mispredict on every other value of a continuous feature), in
        # loops the compiler vectorises; a binary column has one such edge. +inf is at or
        # above every edge, the +inf padding included; NaN below them all
        col, e, own, off = columns[c], edges[c], bins[c], off_rows[c]
        top = common[c]
        for r in range(n):
            x[r] = X[r, col]
            own[r] = 0
        for t in range(n_edges):
            edge = e[t]
            if edge == np.inf:
                break
            for r in range(n):
                own[r] += edge <= x[r]
        count = 0
        for r in range(n):
            if x[r] == np.inf:
                own[r] = n_edges
            off[count] = r
            count += own[r] != top
        n_off[c] = count


@njit(cache=True, nogil=True)
def bin_sums(bins, off_rows, n_off, common, residual, weight, sums, weights):
    """Add each row's residuals and weights to its bin of every candidate, every model.

    A candidate's rows off its common bin are added to bins of the chunk's own (all rows
    where they are most of them, :data:`EVERY_ROW_SHARE`, else those of its list), and
    its common bin gets the chunk's total less the other bins: on one-hot and
    mostly-zero features the few rows where they are set, not every row.

    Parameters
    ----------
    bins, off_rows, n_off, common
        As :func:`bin_rows` fills and takes them.
    residual : ndarray of shape (n_rows, m), float64
    weight : ndarray of shape (n_rows, m_w), float64
        ``m_w = m``, or 1 where every model has the same weights (one against the rest).
    sums : ndarray of shape (n_candidates, n_bins, m), float64
    weights : ndarray of shape (n_candidates, n_bins, m_w), float64
        Accumulated in place.
    """
    add_to_bins(bins, off_rows, n_off, common, residual, sums)
    add_to_bins(bins, off_rows, n_off, common, weight, weights)


@njit(cache=True, nogil=True, forceinline=True)
def add_to_bins(bins, off_rows, n_off, common, values, out):
    """:func:`bin_sums` of one array of ``values``, shape (n_rows, m), into ``out``."""
    n, m = values.shape
    n_bins = out.shape[1]
    local = np.empty((n_bins, m))
    by_model = 2 * m <= MODEL_MAJOR_COLUMNS
    values_t = np.ascontiguousarray(values.T) if by_model else values[:0]
    total = np.zeros(m)
    for r in range(n):
        for j in range(m):
            total[j] += values[r, j]
    rest = np.empty(m)
    for c in range(bins.shape[0]):
        own = bins[c]
        if EVERY_ROW_SHARE * n_off[c] > n:
            add_rows_to_cells(own, values, values_t, local)
        else:
            local[:] = 0.0
            rows = off_rows[c]
            for k in range(n_off[c]):
                r = rows[k]
                b = own[r]
                for j in range(m):
                    local[b, j] += values[r, j]
            rest[:] = 0.0
            for b in range(n_bins):
                if b != common[c]:
                    for j in range(m):
                        rest[j] += local[b, j]
            for j in range(m):
                local[common[c], j] = total[j] - rest[j]
        for b in range(n_bins):
            for j in range(m):
                out[c, b, j] += local[b, j]


def add_to_bins_numpy(b: np.ndarray, off: np.ndarray, common: int, values: np.ndarray,
                      total: np.ndarray, out: np.ndarray) -> None:
    """:func:`add_to_bins` of one candidate with numpy, the same additions in the same
    order (the same bits): ``b`` its bins, ``off`` its rows off the common bin, ``total``
    the rows' sequential sum of ``values``."""
    n_bins = out.shape[0]
    local = np.zeros(out.shape)
    if EVERY_ROW_SHARE * off.shape[0] > b.shape[0]:
        np.add.at(local, b, values)
    else:
        np.add.at(local, b[off], values[off])
        rest = np.zeros(values.shape[1])
        for q in range(n_bins):
            if q != common:
                rest += local[q]
        local[common] = total - rest
    out += local


#: Most pairs, and pairs x rows, of a chunk whose off-common cells :func:`add_cell_sums`
#: adds with numpy (a loop over the pairs, a few milliseconds at most) instead of
#: compiling :func:`off_common_cell_sums` (0.2 s).
NUMPY_CELL_PAIRS = 64


def add_cell_sums(bins: np.ndarray, off_rows: np.ndarray, n_off: np.ndarray,
                  common: np.ndarray, first: np.ndarray, second: np.ndarray,
                  residual: np.ndarray, weight: np.ndarray, n_bins: int, sums: np.ndarray,
                  weights: np.ndarray, kernels: bool | None = None) -> None:
    """:func:`off_common_cell_sums`, with numpy for at most :data:`NUMPY_CELL_PAIRS` pairs
    and :data:`NUMPY_BIN_ENTRIES` pairs x rows (the rows added in the kernel's order: the
    same bits). Arguments as for :func:`off_common_cell_sums`; ``kernels`` as for
    :func:`bin_chunk`."""
    n_pairs, n = first.shape[0], bins.shape[1]
    if kernels if kernels is not None else (n_pairs > NUMPY_CELL_PAIRS
                                            or n_pairs * n > NUMPY_BIN_ENTRIES):
        off_common_cell_sums(bins, off_rows, n_off, common, first, second, residual, weight,
                             n_bins, sums, weights)
        return
    for p in range(n_pairs):
        f, g = first[p], second[p]
        if EVERY_ROW_SHARE * min(n_off[f], n_off[g]) > n:
            cell = bins[f].astype(np.int64) * n_bins + bins[g]
            keep = ((np.arange(n_bins)[:, None] != common[f])
                    & (np.arange(n_bins)[None, :] != common[g])).ravel()
            for out, values in ((sums[p], residual), (weights[p], weight)):
                local = np.zeros(out.shape)
                np.add.at(local, cell, values)
                out[keep] += local[keep]
            continue
        stride_f, stride_g = n_bins, 1
        if n_off[g] < n_off[f]:  # walk the shorter list
            f, g = g, f
            stride_f, stride_g = 1, n_bins
        rows = off_rows[f, : n_off[f]]
        other = bins[g, rows]
        both = other != common[g]
        rows = rows[both]
        cell = bins[f, rows].astype(np.int64) * stride_f + other[both] * stride_g
        np.add.at(sums[p], cell, residual[rows])
        np.add.at(weights[p], cell, weight[rows])


@njit(cache=True, nogil=True)
def off_common_cell_sums(bins, off_rows, n_off, common, first, second, residual, weight,
                         n_bins, sums, weights):
    """Add each row's residuals and weights to its cell of every pair, for every model,
    where the row is outside both features' common bins.

    The other cells follow from the bins' sums (:func:`complete_cells`), so a pair costs
    the rows off the common bin of its rarer feature: on one-hot or mostly-zero features
    a small fraction of the rows. Pair by pair, so that one pair's cells
    (``n_bins^2 x m`` numbers) stay in the cache while its rows stream past. Where that
    feature's list holds most rows (:data:`EVERY_ROW_SHARE`: continuous features), the
    pass adds every row instead, a model at a time, to cells of the chunk's own, and then
    adds those outside the common row and column to the sums.

    Parameters
    ----------
    bins, off_rows, n_off, common
        As :func:`bin_rows` fills and takes them.
    first, second : ndarray of shape (n_pairs,), int64
        Candidates of each pair; cell ``a * n_bins + b`` holds the rows in bin ``a`` of
        ``first`` and bin ``b`` of ``second``.
    residual : ndarray of shape (n_rows, m), float64
        Weighted residual of each row under each model (0 outside a model).
    weight : ndarray of shape (n_rows, m_w), float64
        Weight of each row under each model, ``m_w = m``, or 1 where every model has the
        same weights (one against the rest).
    n_bins : int
    sums : ndarray of shape (n_pairs, n_bins * n_bins, m), float64
    weights : ndarray of shape (n_pairs, n_bins * n_bins, m_w), float64
        Accumulated in place.
    """
    m = residual.shape[1]
    m_w = weight.shape[1]
    n = bins.shape[1]
    # every row to cells of the chunk's own (see add_rows_to_cells)
    by_model = m + m_w <= MODEL_MAJOR_COLUMNS
    residual_t = np.ascontiguousarray(residual.T) if by_model else residual[:0]
    weight_t = np.ascontiguousarray(weight.T) if by_model else weight[:0]
    local_s = np.empty((n_bins * n_bins, m))
    local_w = np.empty((n_bins * n_bins, m_w))
    cell_of = np.empty(n, dtype=np.int32)
    for p in range(first.shape[0]):
        f, g = first[p], second[p]
        if EVERY_ROW_SHARE * min(n_off[f], n_off[g]) > n:
            a, b = bins[f], bins[g]
            for r in range(n):
                cell_of[r] = a[r] * n_bins + b[r]
            add_rows_to_cells(cell_of, residual, residual_t, local_s)
            add_rows_to_cells(cell_of, weight, weight_t, local_w)
            s = sums[p]
            w = weights[p]
            for x in range(n_bins):
                if x == common[f]:
                    continue
                for y in range(n_bins):
                    if y == common[g]:
                        continue
                    cell = x * n_bins + y
                    for j in range(m):
                        s[cell, j] += local_s[cell, j]
                    for j in range(m_w):
                        w[cell, j] += local_w[cell, j]
            continue
        stride_f, stride_g = n_bins, 1
        if n_off[g] < n_off[f]:  # walk the shorter list
            f, g = g, f
            stride_f, stride_g = 1, n_bins
        rows = off_rows[f]
        own = bins[f]
        other = bins[g]
        skip = common[g]
        s = sums[p]
        w = weights[p]
        for k in range(n_off[f]):
            r = rows[k]
            b = other[r]
            if b == skip:
                continue
            cell = own[r] * stride_f + b * stride_g
            for j in range(m):
                s[cell, j] += residual[r, j]
            for j in range(m_w):
                w[cell, j] += weight[r, j]


@njit(cache=True, nogil=True, forceinline=True)
def add_rows_to_cells(cell_of, values, values_t, cells):
    """``cells`` set to the sums of ``values`` by cell: ``cells[cell_of[r], j]`` the sum of
    ``values[r, j]`` over the rows of that cell, added in order from zero.

    With ``values_t`` (``values.T``, contiguous; no rows to go without) a model at a time:
    a scalar loop over the rows, fastest for a few models; else a row at a time, its
    models' values added side by side (vectorised), fastest for many
    (:data:`MODEL_MAJOR_COLUMNS`). Either way each cell's sums are the same numbers.
    """
    cells[:] = 0.0
    if values_t.shape[0] > 0:
        for j in range(values_t.shape[0]):
            v = values_t[j]
            for r in range(cell_of.shape[0]):
                cells[cell_of[r], j] += v[r]
        return
    m = values.shape[1]
    for r in range(cell_of.shape[0]):
        c = cell_of[r]
        for j in range(m):
            cells[c, j] += values[r, j]


def complete_cells(cells: np.ndarray, margins: np.ndarray, first: np.ndarray,
                   second: np.ndarray, common: np.ndarray, n_bins: int) -> np.ndarray:
    """Every pair's full cell sums from its off-common cells and the bins' sums.

    A row in bin ``a`` of the first feature is either off the second feature's common bin
    ``d_g`` (counted in ``cells``) or in it, so ``cell(a, d_g) = margin_f(a) - sum_b
    cell(a, b)``; likewise down the columns, which also gives the corner ``(d_f, d_g)``.

    Parameters
    ----------
    cells : ndarray of shape (n_pairs, n_bins * n_bins, m)
        :func:`off_common_cell_sums`' output (zero in the common row and column), for the
        residuals or the weights (then ``m`` may be 1).
    margins : ndarray of shape (n_candidates, n_bins, m)
        :func:`bin_sums`' output over the same rows.
    first, second, common
        As :func:`off_common_cell_sums` takes them.

    Returns
    -------
    ndarray of shape (n_pairs, n_bins * n_bins, m)
        The sums of all rows of each cell, a new array.
    """
    n_pairs, _, m = cells.shape
    full = cells.reshape(n_pairs, n_bins, n_bins, m).copy()
    pair = np.arange(n_pairs)
    df, dg = common[first], common[second]
    full[pair, :, dg, :] = margins[first] - full.sum(axis=2)
    full[pair, df, dg, :] = 0.0
    full[pair, df, :, :] = margins[second] - full.sum(axis=1)
    return full.reshape(n_pairs, n_bins * n_bins, m)


@njit(cache=True, nogil=True)
def fast_gains_kernel(sums, weights, n_bins, inv_noise, out):
    """:func:`fast_gains` of every pair into ``out``, one pair and model at a time.

    Parameters
    ----------
    sums : ndarray of shape (n_pairs, n_bins * n_bins, m), float64
    weights : ndarray of shape (n_pairs, n_bins * n_bins, m_w), float64
        ``m_w = m``, or 1: the same weights for every model.
    n_bins : int
    inv_noise : ndarray of shape (m,), float64
        Factor of each model's reduction.
    out : ndarray of shape (n_pairs,), float64
        Receives the scores.
    """
    n_pairs, _, m = sums.shape
    shared = weights.shape[2] == 1
    last = n_bins - 1
    S = np.empty((n_bins, n_bins))
    N = np.empty((n_bins, n_bins))
    for p in range(n_pairs):
        score = 0.0
        for j in range(m):
            # 2-D prefix sums: S[a, b] sums the cells <= (a, b); shared weights' N once
            weigh = j == 0 or not shared
            for a in range(n_bins):
                row_s = 0.0
                row_n = 0.0
                for b in range(n_bins):
                    row_s += sums[p, a * n_bins + b, j]
                    S[a, b] = row_s + (S[a - 1, b] if a > 0 else 0.0)
                    if weigh:
                        row_n += weights[p, a * n_bins + b, j]
                        N[a, b] = row_n + (N[a - 1, b] if a > 0 else 0.0)
            total_s = S[last, last]
            total_n = N[last, last]
            best = -np.inf
            for a in range(last):
                edge_s = S[a, last]
                edge_n = N[a, last]
                for b in range(last):
                    s1 = S[a, b]
                    n1 = N[a, b]
                    s2 = edge_s - s1
                    n2 = edge_n - n1
                    s3 = S[last, b] - s1
                    n3 = N[last, b] - n1
                    s4 = total_s - s1 - s2 - s3
                    n4 = total_n - n1 - n2 - n3
                    gain = 0.0
                    if n1 > 0.0:
                        gain += s1 * s1 / n1
                    if n2 > 0.0:
                        gain += s2 * s2 / n2
                    if n3 > 0.0:
                        gain += s3 * s3 / n3
                    if n4 > 0.0:
                        gain += s4 * s4 / n4
                    best = max(best, gain)
            base = total_s * total_s / total_n if total_n > 0.0 else 0.0
            score += max(best - base, 0.0) * inv_noise[j]
        out[p] = score


def fast_gains(sums: np.ndarray, weights: np.ndarray, n_bins: int,
               noise: np.ndarray | None = None) -> np.ndarray:
    """FAST scores: the best four-quadrant reduction of the residual sum of squares.

    For a cut ``(c_f, c_g)`` the quadrants ``a <= c_f`` or not, ``b <= c_g`` or not have
    residual sums ``S_q`` and weights ``N_q``; fitting each quadrant's mean lowers the sum
    of squares by ``sum_q S_q^2 / N_q - S^2 / N`` against one mean. The cuts' quadrant sums
    come from each pair's 2-D prefix sums (:func:`fast_gains_kernel`).

    Parameters
    ----------
    sums : ndarray of shape (n_pairs, n_bins * n_bins, m)
    weights : ndarray of shape (n_pairs, n_bins * n_bins, m) or (n_pairs, n_bins * n_bins, 1)
        The last form: the same weights for every model.
    noise : ndarray of shape (m,), optional
        Each model's residual variance: its reductions are divided by it before they are
        added (a pair's score then counts in units of the noise of one row).

    Returns
    -------
    ndarray of shape (n_pairs,)
        The best reduction of each pair, added over the ``m`` models.
    """
    sums = np.ascontiguousarray(sums, dtype=np.float64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    m = sums.shape[2]
    inv_noise = np.ones(m)
    if noise is not None:
        noise = np.asarray(noise, dtype=np.float64)
        inv_noise = 1.0 / np.where(noise > 0, noise, 1.0)
    if sums.size > NUMPY_GAIN_ENTRIES:
        out = np.empty(sums.shape[0])
        fast_gains_kernel(sums, weights, int(n_bins), inv_noise, out)
        return out
    return fast_gains_numpy(sums, weights, int(n_bins), inv_noise)


#: Largest ``n_pairs x n_bins^2 x m`` that :func:`fast_gains` scores with numpy (every cut
#: of every pair at once, a few milliseconds) instead of compiling
#: :func:`fast_gains_kernel` (0.3 s).
NUMPY_GAIN_ENTRIES = 1 << 16


def fast_gains_numpy(sums: np.ndarray, weights: np.ndarray, n_bins: int,
                     inv_noise: np.ndarray) -> np.ndarray:
    """:func:`fast_gains_kernel` in numpy, the same sums in the same order (the same bits).

    Parameters
    ----------
    sums, weights, n_bins, inv_noise
        As for :func:`fast_gains_kernel`.

    Returns
    -------
    ndarray of shape (n_pairs,)
    """
    n_pairs, _, m = sums.shape
    last = n_bins - 1
    # 2-D prefix sums: along each row of cells, then down the rows
    S = np.cumsum(np.cumsum(sums.reshape(n_pairs, n_bins, n_bins, m), axis=2), axis=1)
    N = np.cumsum(np.cumsum(weights.reshape(n_pairs, n_bins, n_bins, -1), axis=2), axis=1)
    N = np.broadcast_to(N, S.shape)
    total_s, total_n = S[:, last, last], N[:, last, last]  # (n_pairs, m)
    s1, n1 = S[:, :last, :last], N[:, :last, :last]  # every cut (a, b) < (last, last)
    s2 = S[:, :last, last:] - s1
    n2 = N[:, :last, last:] - n1
    s3 = S[:, last:, :last] - s1
    n3 = N[:, last:, :last] - n1
    s4 = total_s[:, None, None] - s1 - s2 - s3
    n4 = total_n[:, None, None] - n1 - n2 - n3
    gain = np.zeros(s1.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        for q_s, q_n in ((s1, n1), (s2, n2), (s3, n3), (s4, n4)):
            gain += np.where(q_n > 0.0, q_s * q_s / q_n, 0.0)
        base = np.where(total_n > 0.0, total_s * total_s / total_n, 0.0)
    best = gain.max(axis=(1, 2), initial=-np.inf)
    out = np.zeros(n_pairs)
    for j in range(m):  # the models' reductions added in order, as the kernel adds them
        out += np.maximum(best[:, j] - base[:, j], 0.0) * inv_noise[j]
    return out


def bin_edges(sample: np.ndarray, n_bins: int = SCREEN_BINS) -> np.ndarray:
    """Inner edges of each column's bins, padded with ``+inf``.

    A column with at most ``n_bins`` distinct values in ``sample`` gets one bin per value
    (edges half-way between them), so that a rare category or a mostly-zero binary
    feature keeps a bin of its own; any other column is cut at the distinct quantiles.

    Returns
    -------
    ndarray of shape (n_columns, n_bins - 1), float64
        ``searchsorted(edges[f], x, side="right")`` is ``x``'s bin, at most ``n_bins - 1``.
    """
    levels = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
    out = np.full((sample.shape[1], n_bins - 1), np.inf)
    for f in range(sample.shape[1]):
        column = sample[:, f].astype(np.float64)
        values = np.unique(column)
        if values.shape[0] <= n_bins:
            edges = (values[:-1] + values[1:]) / 2
        else:
            edges = np.unique(np.quantile(column, levels))
        out[f, : edges.shape[0]] = edges
    return out


def common_bins(sample: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The most frequent bin of each column of ``sample`` under ``edges`` (lowest on ties).

    Parameters
    ----------
    sample : ndarray of shape (n_rows, n_columns)
    edges : ndarray of shape (n_columns, n_bins - 1)
        :func:`bin_edges`.

    Returns
    -------
    ndarray of shape (n_columns,), int64
    """
    n_bins = edges.shape[1] + 1
    out = np.zeros(edges.shape[0], dtype=np.int64)
    for f in range(edges.shape[0]):
        b = np.searchsorted(edges[f], sample[:, f].astype(np.float64), side="right")
        out[f] = int(np.argmax(np.bincount(b, minlength=n_bins)))
    return out


def candidate_features(importances: np.ndarray, n_models: int,
                       n_bins: int = SCREEN_BINS) -> np.ndarray:
    """The features whose pairs are screened: the most important ones, as many as keep
    ``n_models * n_pairs * n_bins^2`` within :data:`SCREEN_CELLS` (ties by index)."""
    d = importances.shape[0]
    per_pair = n_models * n_bins * n_bins
    k = d
    while k > 2 and per_pair * k * (k - 1) // 2 > SCREEN_CELLS:
        k -= 1
    order = np.argsort(-np.asarray(importances, dtype=np.float64), kind="stable")
    return np.sort(order[:k])


class ResidualModel(NamedTuple):
    """The fitted additive models whose residuals a screening pass adds up.

    Attributes
    ----------
    W : ndarray of shape (m, n_dims + 1), float64
        The models in ``w_d`` form.
    emb : Embedding
    pairs : ModelPairs
    bias_scale : float
    platt_a, platt_b : ndarray of shape (m,), float64
        The models' sigmoids (``-1, 0`` for the plain logistic).
    """

    W: np.ndarray
    emb: Embedding
    pairs: ModelPairs
    bias_scale: float
    platt_a: np.ndarray
    platt_b: np.ndarray

    @classmethod
    def of(cls, W: np.ndarray, emb: Embedding, pairs: ModelPairs, bias_scale: float,
           platt_a: np.ndarray, platt_b: np.ndarray) -> ResidualModel:
        """The models with their arrays as the kernels take them."""
        return cls(np.ascontiguousarray(W, dtype=np.float64), emb, pairs, float(bias_scale),
                   np.asarray(platt_a, dtype=np.float64), np.asarray(platt_b, dtype=np.float64))

    @property
    def weight_columns(self) -> int:
        """Columns of a pass's weight sums: one against the rest, every row is in every
        model with the same weight, and one column serves them all (it halves a pass's
        additions); class pairs, one per model."""
        return self.W.shape[0] if self.pairs.one_vs_one else 1

    def residuals(self, chunk: Chunk, holdout: Holdout | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """The training rows of a chunk with the models' weighted residuals.

        Parameters
        ----------
        chunk : Chunk
        holdout : Holdout or None
            Rows held out from training, left out.

        Returns
        -------
        (X, residual, weight, residual_sq) or None
            ``X`` the rows kept (C-contiguous); ``residual[i, j] = w_ij ([y_i = +1] -
            P_j(x_i))`` and ``weight[i, j] = w_ij`` (0 where row ``i`` is not in model
            ``j``'s problem), float64 of shape (n, m); ``residual_sq[j] = sum_i w_ij
            ([y_i = +1] - P_j(x_i))^2``. None when the chunk has no training row.
        """
        keep = (np.arange(chunk.X.shape[0]) if holdout is None
                else np.flatnonzero(~holdout.mask(chunk.rows)))
        if keep.size == 0:
            return None
        X = np.ascontiguousarray(chunk.X[keep])
        scores = decision_ovr_chunk(X, self.W, self.bias_scale, *self.emb)
        proba = sigmoid_proba(scores, self.platt_a[None, :], self.platt_b[None, :])
        positive, member = self.pairs.labels(np.asarray(chunk.y)[keep])
        weight = member if chunk.weight is None else member * chunk.weight[keep][:, None]
        residual = np.ascontiguousarray((positive - proba) * weight, dtype=np.float64)
        residual_sq = ((positive - proba) ** 2 * weight).sum(axis=0)
        return X, residual, np.ascontiguousarray(weight, dtype=np.float64), residual_sq


@dataclass
class ScreeningState:
    """Sums of the screening pass: per pair the cells off the common bins
    (:func:`off_common_cell_sums`), per candidate the bins (:func:`bin_sums`), and per
    model the weighted sum of squared residuals ``sum_i w_i (y_i - P(x_i))^2`` and of
    weights. :meth:`ScreeningPass.finish` completes the cells. The weights' cells and bins
    hold one column for all models where the models share their rows (one against the
    rest, :attr:`ScreeningPass.weight_columns`)."""

    sums: np.ndarray
    weights: np.ndarray
    bin_sums: np.ndarray
    bin_weights: np.ndarray
    residual_sq: np.ndarray
    weight_total: np.ndarray


class ScreeningPass:
    """Reduction pass: per-pair cell sums of the additive model's residuals.

    Parameters
    ----------
    model : ResidualModel
        The per-feature models.
    candidates : ndarray of int64
        Candidate features; every pair of them is screened.
    edges : ndarray of shape (n_candidates, n_bins - 1)
        :func:`bin_edges` of the candidates.
    common : ndarray of shape (n_candidates,), int64
        :func:`common_bins` of the candidates: a pair's rows in the common bin of either
        feature are counted through the bins' sums, not one by one.
    holdout : Holdout or None
        Rows held out from training, left out here too.
    n_rows : int, optional
        The rows the pass reads in all. With it, numpy or the kernels bin the rows and add
        up the cells of every chunk as the pass's total decides (:func:`bin_chunk`,
        :func:`add_cell_sums`), so that data in many small chunks take the kernels;
        without it, each chunk's size decides.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, model: ResidualModel, candidates: np.ndarray, edges: np.ndarray,
                 common: np.ndarray, holdout: Holdout | None, n_rows: int | None = None
                 ) -> None:
        self.model = model
        self.candidates = np.asarray(candidates, dtype=np.int64)
        self.edges = np.ascontiguousarray(edges, dtype=np.float64)
        self.common = np.asarray(common, dtype=np.int64)
        self.holdout = holdout
        first, second = np.triu_indices(self.candidates.shape[0], k=1)
        self.first = first.astype(np.int64)
        self.second = second.astype(np.int64)
        self.n_bins = self.edges.shape[1] + 1
        self.weight_columns = model.weight_columns
        k, n_pairs = self.candidates.shape[0], self.first.shape[0]
        self.bin_kernels = None if n_rows is None else n_rows * k > NUMPY_BIN_ENTRIES
        self.cell_kernels = None if n_rows is None else (
            n_pairs > NUMPY_CELL_PAIRS or n_rows * n_pairs > NUMPY_BIN_ENTRIES)

    @property
    def screened(self) -> np.ndarray:
        """The screened pairs as feature indices, shape (n_pairs, 2)."""
        return np.stack([self.candidates[self.first], self.candidates[self.second]], axis=1)

    def start(self) -> ScreeningState:
        """Zero sums."""
        m, k, m_w = self.model.W.shape[0], self.candidates.shape[0], self.weight_columns
        cells = (self.first.shape[0], self.n_bins * self.n_bins)
        return ScreeningState(np.zeros((*cells, m)), np.zeros((*cells, m_w)),
                              np.zeros((k, self.n_bins, m)), np.zeros((k, self.n_bins, m_w)),
                              np.zeros(m), np.zeros(m))

    def step(self, state: ScreeningState, chunk: Chunk) -> ScreeningState:
        """Add the chunk's training rows (in place)."""
        if self.first.size == 0:
            return state
        rows = self.model.residuals(chunk, self.holdout)
        if rows is None:
            return state
        X, residual, weight, residual_sq = rows
        state.residual_sq += residual_sq
        state.weight_total += weight.sum(axis=0)
        weight = np.ascontiguousarray(weight[:, : self.weight_columns])
        bins, off_rows, n_off = bin_chunk(X, self.candidates, self.edges, self.common,
                                          residual, weight, state.bin_sums,
                                          state.bin_weights, self.bin_kernels)
        add_cell_sums(bins, off_rows, n_off, self.common, self.first, self.second, residual,
                      weight, self.n_bins, state.sums, state.weights, self.cell_kernels)
        return state

    def merge(self, a: ScreeningState, b: ScreeningState) -> ScreeningState:
        """Add two states (a new one)."""
        return ScreeningState(a.sums + b.sums, a.weights + b.weights,
                              a.bin_sums + b.bin_sums, a.bin_weights + b.bin_weights,
                              a.residual_sq + b.residual_sq, a.weight_total + b.weight_total)

    def finish(self, state: ScreeningState) -> ScreeningState:
        """The sums, with every pair's cells complete (:func:`complete_cells`)."""
        complete = [complete_cells(cells, margins, self.first, self.second, self.common,
                                   self.n_bins)
                    for cells, margins in ((state.sums, state.bin_sums),
                                           (state.weights, state.bin_weights))]
        return ScreeningState(complete[0], complete[1], state.bin_sums, state.bin_weights,
                              state.residual_sq, state.weight_total)


def choose_interactions(gains: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest positive gains, best first."""
    order = np.argsort(-gains, kind="stable")[:k]
    return order[gains[order] > 0]
