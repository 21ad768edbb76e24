"""Knots at the data's quantiles: a monotone piecewise-linear warp in front of uniform bases.

A B-spline map with ``knots="quantile"`` keeps its uniform bases and evaluates them at a
warped position instead of at ``x``: feature ``f`` has ``M + 1`` knots ``k_0 < ... < k_M``
(``M = n_bases - degree``, the map's segments) and the position ``t(x)`` in ``[0, M]`` is
piecewise linear through the points ``(k_j, j)``, clamped outside ``[k_0, k_M]``. Segment
``j`` of the bases then covers ``[k_j, k_{j+1}]`` in ``x``: where the data are dense the
knots are close, where they are sparse the knots are far apart, and no basis is spent on a
stretch of the range that holds no rows. The pair grids of
:class:`~streamlearn.features.pair_terms.BSplinePairMap` stay uniform in ``x``.

The rule (:func:`quantile_knots`), for a feature with range ``[lo, hi]`` and a row sample:

* ``k_j = (1 - QUANTILE_SHARE) (lo + j (hi - lo) / M) + QUANTILE_SHARE q(j / M)``, a blend
  of the uniform grid and the sample's quantiles ``q`` (with ``q(0) = lo`` and
  ``q(1) = hi``). The uniform share keeps every segment at least
  ``(1 - QUANTILE_SHARE) (hi - lo) / M`` wide, so a basis always has room and a tail with
  few rows is not left to one segment.
* An *atom*, a value that holds more than ``1 / M`` of the sample (a pixel's background, a
  floor of zeros), would pull many quantiles onto one point and waste their segments on a
  stretch with no rows. When the values outside the atoms still take at least ``M + 1``
  distinct values, the quantiles are those of the values outside the atoms. Features with
  few distinct values (small integer codes) keep their atoms: their quantiles fall on the
  values, which is where the rows are.
* Features in ``uniform`` (categorical codes, given a knot per category) and features whose
  sample holds at most two distinct values keep the uniform grid: a feature with two values
  (a one-hot column) gets the same curve on any knots, and uniform knots cost less.

The knots are then rounded to a grid of ``CELLS_PER_PIECE * M`` cells of equal width over
``[lo, hi]``; the narrowest segment being half a uniform one, they stay strictly increasing.
Each cell then lies inside one segment, where the position is linear: inside kernels
(:func:`warp_table`, :func:`warp_position`) a value's position costs one cell lookup and
a multiply-add, without a search or a branch. A feature whose knots stayed uniform (a
one-hot column) skips the lookup, and a map none of whose knots moved runs the uniform
encoders (whose loops the compiler runs as SIMD).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from numba import njit

#: Weight of the quantiles in the knots' blend with the uniform grid.
QUANTILE_SHARE = 0.5

#: Cells of the lookup grid per uniform segment; the knots are rounded to the grid.
CELLS_PER_PIECE = 4

#: Header of a warp table: the segment count ``M``, the cell count ``G``, the feature
#: count and the number of features whose knots are not uniform.
WARP_HEADER = 4

#: How far (in cells) a knot may be from the grid and still count as on it.
_ON_GRID = 1e-6


def uniform_knots(lo: np.ndarray, hi: np.ndarray, n_pieces: int) -> np.ndarray:
    """The uniform grid ``lo + j (hi - lo) / M``, shape (n_features, M + 1), float64."""
    j = np.arange(n_pieces + 1, dtype=np.float64) / n_pieces
    lo = np.asarray(lo, dtype=np.float64)[:, None]
    hi = np.asarray(hi, dtype=np.float64)[:, None]
    knots = lo + j[None, :] * (hi - lo)
    knots[:, -1] = hi[:, 0]
    return knots


def _feature_quantiles(values: np.ndarray, lo: float, hi: float,
                       n_pieces: int) -> np.ndarray | None:
    """The quantiles ``q(j / M)`` of one feature's sampled values, atoms set aside as the
    module describes; None when the sample cannot place knots."""
    values = values[np.isfinite(values)]
    values = values[(values >= lo) & (values <= hi)]
    distinct, counts = np.unique(values, return_counts=True)
    if distinct.size < 3:
        return None
    atoms = counts > values.size / n_pieces
    if atoms.any() and int((~atoms).sum()) >= n_pieces + 1:
        values = values[~np.isin(values, distinct[atoms])]
    q = np.quantile(values.astype(np.float64), np.arange(n_pieces + 1) / n_pieces)
    q[0], q[-1] = lo, hi
    return np.maximum.accumulate(q)


def quantile_knots(sample: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_pieces: int,
                   uniform: Iterable[int] = ()) -> np.ndarray:
    """Knots for each feature by the rule of the module docstring.

    Parameters
    ----------
    sample : ndarray of shape (k, n_features)
        Rows spread over the data (a describe pass's sample).
    lo, hi : ndarray of shape (n_features,)
        The map's ranges (``hi > lo``); the first and last knots.
    n_pieces : int
        ``M``, the map's segments per feature.
    uniform : iterable of int
        Features that keep the uniform grid.

    Returns
    -------
    ndarray of shape (n_features, M + 1), float64
        Strictly increasing per feature, on the grid of ``CELLS_PER_PIECE * M`` cells.
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    knots = uniform_knots(lo, hi, n_pieces)
    keep = set(int(f) for f in uniform)
    sample = np.asarray(sample)
    for f in range(lo.shape[0]):
        if f in keep or sample.shape[0] == 0:
            continue
        q = _feature_quantiles(sample[:, f], float(lo[f]), float(hi[f]), n_pieces)
        if q is not None:
            blend = (1.0 - QUANTILE_SHARE) * knots[f] + QUANTILE_SHARE * q
            cells = np.rint((blend - lo[f]) / (hi[f] - lo[f]) * (CELLS_PER_PIECE * n_pieces))
            knots[f] = lo[f] + cells / (CELLS_PER_PIECE * n_pieces) * (hi[f] - lo[f])
            knots[f, 0], knots[f, -1] = lo[f], hi[f]
    return knots


def check_knots(knots: Any, n_features: int, n_pieces: int) -> np.ndarray:
    """``knots`` as float64 of shape (n_features, M + 1): finite, strictly increasing, and
    on the grid of ``CELLS_PER_PIECE * M`` cells over ``[k_0, k_M]``."""
    knots = np.asarray(knots, dtype=np.float64)
    if knots.shape != (n_features, n_pieces + 1):
        raise ValueError(f"knots must have shape {(n_features, n_pieces + 1)}, "
                         f"got {knots.shape}")
    if not np.isfinite(knots).all():
        raise ValueError("knots must be finite")
    bad = np.flatnonzero(~(np.diff(knots, axis=1) > 0).all(axis=1))
    if bad.size:
        raise ValueError(f"the knots of feature {int(bad[0])} are not strictly increasing")
    cells = (knots - knots[:, :1]) / (knots[:, -1:] - knots[:, :1]) * (CELLS_PER_PIECE
                                                                       * n_pieces)
    off = np.flatnonzero((np.abs(cells - np.rint(cells)) > _ON_GRID).any(axis=1))
    if off.size:
        raise ValueError(f"the knots of feature {int(off[0])} are not on the grid of "
                         f"{CELLS_PER_PIECE * n_pieces} cells over their range")
    return knots


def warp_table(knots: np.ndarray) -> np.ndarray:
    """Pack knots for :func:`warp_position` and the encoders.

    Layout: ``[M, G, d, w]``, then ``d`` flags (1 for the ``w`` features whose knots are
    not the uniform grid), the ``d`` first knots ``k_0``, the
    ``d`` cell scales ``G / (k_M - k_0)``, the ``d`` uniform scales ``M / (k_M - k_0)``
    (computed as :func:`~streamlearn.features.bspline.segment_scale` does), and per
    feature, for each of its ``G`` cells, ``[a, b]`` with ``t(x) = a + b x`` on the cell:
    for the segment ``s`` the cell lies in, ``b = 1 / (k_{s+1} - k_s)`` and
    ``a = s - k_s b``. The per-feature scalars sit together, so that a value's lookup
    reads one cache line of cells.

    Parameters
    ----------
    knots : ndarray of shape (n_features, M + 1)
        Strictly increasing per feature, on the grid (:func:`check_knots`).

    Returns
    -------
    ndarray, float64
    """
    n_features, n_knots = knots.shape
    n_pieces = n_knots - 1
    n_cells = CELLS_PER_PIECE * n_pieces
    lo, hi = knots[:, 0], knots[:, -1]
    width = hi - lo
    grid = uniform_knots(lo, hi, n_pieces)
    warped = np.flatnonzero((np.abs(knots - grid) > 1e-9 * width[:, None]).any(axis=1))
    flags = np.zeros(n_features)
    flags[warped] = 1.0
    middle = knots[:, :1] + width[:, None] * ((np.arange(n_cells) + 0.5) / n_cells)[None, :]
    segment = np.empty((n_features, n_cells), dtype=np.int64)
    for f in range(n_features):
        segment[f] = np.searchsorted(knots[f, 1:-1], middle[f], side="right")
    rows = np.arange(n_features)[:, None]
    slope = (1.0 / np.diff(knots, axis=1))[rows, segment]
    offset = segment - knots[rows, segment] * slope
    cells = np.stack([offset, slope], axis=2).reshape(-1)
    header = [float(n_pieces), float(n_cells), float(n_features), float(warped.size)]
    return np.concatenate([header, flags, lo, n_cells / width, n_pieces / width, cells])


@njit(cache=True, nogil=True, forceinline=True)
def warp_parts(table):
    """The parts of a warp table as views: ``(flags, first, per_cell, per_piece, cells)``,
    the flags, ``k_0``, ``G / (k_M - k_0)``, ``M / (k_M - k_0)`` and the cells' ``[a, b]``
    pairs (:func:`warp_table`). Kernels take them once per row: indexing views, not
    offsets into the table, lets the compiler keep the loop tight (2x on 256 features)."""
    d = int(table[2])
    start = WARP_HEADER + d
    return (table[WARP_HEADER:start], table[start:start + d], table[start + d:start + 2 * d],
            table[start + 2 * d:start + 3 * d], table[start + 3 * d:])


@njit(cache=True, nogil=True, forceinline=True)
def cell_position(x, f, first, per_cell, cells, n_cells):
    """Warped position of feature ``f``'s value ``x`` from :func:`warp_parts`, not
    clamped."""
    xd = np.float64(x)
    c0 = (xd - first[f]) * per_cell[f]
    c1 = c0 if c0 > 0.0 else 0.0  # also maps NaN to cell 0
    # clamped as a float, then converted: one conversion, no integer select
    c2 = c1 if c1 < n_cells - 1 else np.float64(n_cells - 1)
    e = 2 * (f * n_cells + int(c2))
    return cells[e] + cells[e + 1] * xd


@njit(cache=True, nogil=True, forceinline=True)
def feature_position(x, f, flags, first, per_cell, per_piece, cells, n_cells):
    """Position of feature ``f``'s value ``x``: warped when its knots are, else uniform
    ``(x - k_0) M / (k_M - k_0)``; not clamped."""
    if flags[f] != 0.0:
        return cell_position(x, f, first, per_cell, cells, n_cells)
    return (np.float64(x) - first[f]) * per_piece[f]


@njit(cache=True, nogil=True, forceinline=True)
def warp_position(x, f, table):
    """Position ``t(x)`` of value ``x`` of feature ``f``, not clamped.

    Parameters
    ----------
    x : float
    f : int
    table : ndarray of float64
        :func:`warp_table`.

    Returns
    -------
    float
        Piecewise linear through the points ``(k_j, j)``; continued by the first and last
        segments' lines outside ``[k_0, k_M]`` (the encoders clamp it to ``[0, M]``); NaN
        stays NaN (which the encoders read as 0).
    """
    flags, first, per_cell, per_piece, cells = warp_parts(table)
    return feature_position(x, f, flags, first, per_cell, per_piece, cells, int(table[1]))


def table_positions(X: np.ndarray, table: np.ndarray) -> np.ndarray:
    """:func:`warp_position` of every entry of ``X``, clamped to ``[0, M]`` with NaN read
    as 0 as the encoders read it: the kernels' arithmetic, in numpy (nothing to compile).

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
        Rounded to float32 first, as the kernels read rows.
    table : ndarray of float64
        :func:`warp_table`.

    Returns
    -------
    ndarray of shape (n, n_features), float64
    """
    n_pieces, n_cells, d = table[0], int(table[1]), int(table[2])
    start = WARP_HEADER + d
    flags = table[WARP_HEADER:start] != 0.0
    first, per_cell, per_piece = (table[start + i * d:start + (i + 1) * d] for i in range(3))
    cells = table[start + 3 * d:].reshape(d, n_cells, 2)
    x = np.asarray(X, dtype=np.float32).astype(np.float64)
    with np.errstate(invalid="ignore"):
        c0 = (x - first) * per_cell
        cell = np.minimum(np.where(c0 > 0.0, c0, 0.0), n_cells - 1).astype(np.int64)
        columns = np.arange(d)[None, :]
        warped = cells[columns, cell, 0] + cells[columns, cell, 1] * x
        t0 = np.where(flags, warped, (x - first) * per_piece)
        t1 = np.where(t0 > 0.0, t0, 0.0)
    return np.minimum(t1, n_pieces)


def warp_positions(X: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """:func:`table_positions` by linear interpolation through the knots (``np.interp``):
    the reference the kernels and the table are tested against.

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
    knots : ndarray of shape (n_features, M + 1)

    Returns
    -------
    ndarray of shape (n, n_features), float64
        In ``[0, M]``; NaN gives 0.
    """
    X = np.asarray(X, dtype=np.float64)
    n_pieces = knots.shape[1] - 1
    steps = np.arange(n_pieces + 1, dtype=np.float64)
    out = np.empty(X.shape)
    for f in range(X.shape[1]):
        out[:, f] = np.interp(X[:, f], knots[f], steps)
    return np.nan_to_num(out, nan=0.0)
