"""Knots at the data's quantiles: a monotone piecewise-linear warp in front of uniform bases.

A B-spline map with ``knots="quantile"`` keeps its uniform bases and evaluates them at a
warped position instead of at ``x``: feature ``f`` has ``M + 1`` knots ``k_0 < ... < k_M``
(``M = n_bases - degree``, the map's segments) and the position ``t(x)`` in ``[0, M]`` is
piecewise linear through the points ``(k_j, j)``, clamped outside ``[k_0, k_M]``. Segment
``j`` of the bases then covers ``[k_j, k_{j+1}]`` in ``x``: where the data are dense the
knots are close, where they are sparse the knots are far apart, and no basis is spent on a
stretch of the range that holds no rows. The pair grids of
:class:`~streamlearn.features.pair_terms.BSplinePairMap` use the same position, scaled to
their own segment count.

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
  sample holds fewer than two distinct values keep the uniform grid.

Inside kernels the position is read from a packed table (:func:`warp_table`,
:func:`warp_position`): ``CELLS_PER_PIECE * M`` cells of equal width over ``[k_0, k_M]``,
each holding the segment its left end falls in, so finding a value's segment costs one cell
lookup and, since no cell is wider than the narrowest segment, at most one comparison with
the next knot.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numba import njit

#: Weight of the quantiles in the knots' blend with the uniform grid.
QUANTILE_SHARE = 0.5

#: Lookup cells per segment. No cell is wider than ``(hi - lo) / (CELLS_PER_PIECE M)``,
#: which is at most the narrowest segment, ``(1 - QUANTILE_SHARE) (hi - lo) / M``.
CELLS_PER_PIECE = 2

#: Header of a warp table: the segment count ``M`` and the cell count ``G``.
_HEADER = 2


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
    if distinct.size < 2:
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
        Strictly increasing per feature.
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
            knots[f] = (1.0 - QUANTILE_SHARE) * knots[f] + QUANTILE_SHARE * q
            knots[f, 0], knots[f, -1] = lo[f], hi[f]
    return knots


def check_knots(knots: np.ndarray, n_features: int, n_pieces: int) -> np.ndarray:
    """``knots`` as float64 of shape (n_features, M + 1), finite and strictly increasing."""
    knots = np.asarray(knots, dtype=np.float64)
    if knots.shape != (n_features, n_pieces + 1):
        raise ValueError(f"knots must have shape {(n_features, n_pieces + 1)}, "
                         f"got {knots.shape}")
    if not np.isfinite(knots).all():
        raise ValueError("knots must be finite")
    bad = np.flatnonzero(~(np.diff(knots, axis=1) > 0).all(axis=1))
    if bad.size:
        raise ValueError(f"the knots of feature {int(bad[0])} are not strictly increasing")
    return knots


def warp_table(knots: np.ndarray) -> np.ndarray:
    """Pack knots for :func:`warp_position`.

    Layout: ``[M, G]``, then per feature ``[k_0, G / (k_M - k_0), k_0 .. k_M,
    1 / (k_1 - k_0) .. 1 / (k_M - k_{M-1}), first segment of cell 0 .. G - 1]``.

    Parameters
    ----------
    knots : ndarray of shape (n_features, M + 1)
        Strictly increasing per feature.

    Returns
    -------
    ndarray, float64
    """
    n_features, n_knots = knots.shape
    n_pieces = n_knots - 1
    n_cells = CELLS_PER_PIECE * n_pieces
    width = knots[:, -1] - knots[:, 0]
    cell_left = knots[:, :1] + width[:, None] * (np.arange(n_cells) / n_cells)[None, :]
    first = np.empty((n_features, n_cells))
    for f in range(n_features):
        first[f] = np.searchsorted(knots[f, 1:-1], cell_left[f], side="right")
    blocks = np.hstack([knots[:, :1], (n_cells / width)[:, None], knots,
                        1.0 / np.diff(knots, axis=1), first])
    return np.concatenate([[float(n_pieces), float(n_cells)], blocks.reshape(-1)])


@njit(cache=True, nogil=True, forceinline=True)
def warp_position(x, f, table):
    """Warped position ``t(x)`` in ``[0, M]`` of value ``x`` of feature ``f``.

    Parameters
    ----------
    x : float
    f : int
    table : ndarray of float64
        :func:`warp_table`.

    Returns
    -------
    float
        Piecewise linear through ``(k_j, j)``, clamped to ``[0, M]``; NaN gives 0.
    """
    n_pieces = int(table[0])
    n_cells = int(table[1])
    b = _HEADER + f * (3 + 2 * n_pieces + n_cells)
    xd = np.float64(x)
    c0 = (xd - table[b]) * table[b + 1]
    c1 = c0 if c0 > 0.0 else 0.0  # also maps NaN to cell 0
    c = int(c1) if c1 < n_cells - 1 else n_cells - 1
    knots = b + 2
    j = int(table[knots + 2 * n_pieces + 1 + c])
    while j < n_pieces - 1 and xd >= table[knots + j + 1]:
        j += 1
    t0 = j + (xd - table[knots + j]) * table[knots + n_pieces + 1 + j]
    t1 = t0 if t0 > 0.0 else 0.0  # also maps NaN to 0
    return t1 if t1 < n_pieces else np.float64(n_pieces)


def warp_positions(X: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """:func:`warp_position` of every entry of ``X`` by linear interpolation (numpy).

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
