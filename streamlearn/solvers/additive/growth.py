"""Growing a B-spline feature map when streamed rows leave its range (``partial_fit``).

A uniform B-spline map over ``[lo, hi]`` with ``n_bases`` bases of degree ``p`` has knots
spaced ``h = (hi - lo) / (n_bases - p)``. When a chunk holds values beyond the range, the
knot grid is extended with the same spacing by whole segments, so the old bases are a subset
of the new ones and every learned curve is kept exactly on the old range. All features share
``n_bases``, so every feature gets the same number ``k`` of new segments: those below ``lo``
that it needs, the rest above ``hi``. Past a cap on the number of bases, the map is refitted
with the capped number of bases over the union of the ranges (coarser knots; the curves are
then kept approximately). Features with only a few values outside (the tail of a shuffled
stream) can be left clamped.

The learned curves are re-projected onto the new map by least squares over a grid of the
old range (:func:`reproject`); weights the old range does not determine get the smallest
norm, i.e. the smallest penalty, so with a difference penalty of order ``d >= 1`` a curve
continues polynomially past the old range, and with ``d = 0`` it goes to zero there.
"""

from __future__ import annotations

import numpy as np

from streamlearn.features import BSplineMap
from streamlearn.solvers.additive.passes import w_to_w_d
from streamlearn.solvers.embedding import embedding_params, weights_from_w_d

#: Grid points per knot segment of the new map in :func:`reproject`.
POINTS_PER_SEGMENT = 8


def grown_bspline_map(feature_map: BSplineMap, X: np.ndarray, max_bases: int,
                      min_share: float = 0.0) -> BSplineMap | None:
    """The map extended to cover the rows ``X``, or None when they lie within its range.

    Parameters
    ----------
    feature_map : BSplineMap
        Fitted.
    X : ndarray of shape (n, n_features)
    max_bases : int
        Cap on the bases of the grown map.
    min_share : float
        Only features with more than this share of their values outside the range grow
        (the others' few outliers stay clamped).

    Returns
    -------
    BSplineMap or None
    """
    if X.shape[0] == 0:
        return None
    lo, hi = feature_map.lo_, feature_map.hi_
    return grown_to_cover(feature_map, X.min(axis=0).astype(np.float64),
                          X.max(axis=0).astype(np.float64),
                          np.mean((X < lo[None, :]) | (X > hi[None, :]), axis=0),
                          max_bases, min_share)


def grown_to_cover(feature_map: BSplineMap, x_min: np.ndarray, x_max: np.ndarray,
                   share: np.ndarray, max_bases: int, min_share: float = 0.0
                   ) -> BSplineMap | None:
    """:func:`grown_bspline_map` from the rows' statistics (what sparse rows give without
    their zeros written out).

    Parameters
    ----------
    feature_map : BSplineMap
        Fitted.
    x_min, x_max : ndarray of shape (n_features,)
        Each feature's smallest and largest value in the rows.
    share : ndarray of shape (n_features,)
        Each feature's share of values outside the map's range.
    max_bases : int
    min_share : float

    Returns
    -------
    BSplineMap or None
    """
    lo, hi = feature_map.lo_, feature_map.hi_
    degree, n_bases = feature_map.degree, feature_map.n_bases
    step = (hi - lo) / (n_bases - degree)
    below = np.ceil(np.maximum(lo - x_min, 0.0) / step).astype(np.int64)
    above = np.ceil(np.maximum(x_max - hi, 0.0) / step).astype(np.int64)
    below[share <= min_share] = 0
    above[share <= min_share] = 0
    k = int((below + above).max())
    if k == 0:
        return None
    order, zero_preserving = feature_map.penalty_order, feature_map.zero_preserving
    if n_bases + k <= max_bases:
        extra = k - below - above  # segments a feature does not need go above its range
        return BSplineMap(degree, n_bases + k, order, zero_preserving).fit(
            lo - below * step, hi + (above + extra) * step)
    grows = share > min_share
    return BSplineMap(degree, max(n_bases, int(max_bases)), order, zero_preserving).fit(
        np.where(grows, np.minimum(lo, x_min), lo), np.where(grows, np.maximum(hi, x_max), hi))


def reproject(W: np.ndarray, old: BSplineMap, new: BSplineMap, n_features: int) -> np.ndarray:
    """Models of ``old``'s embedding re-fitted on ``new``'s by least squares over the old range.

    Parameters
    ----------
    W : ndarray of shape (m, n_dims_old + 1)
        Models in the kernels' ``w_d`` form, bias weight last (kept).
    old, new : BSplineMap
        Fitted maps; ``new`` covers ``old``'s range.
    n_features : int

    Returns
    -------
    ndarray of shape (m, n_dims_new + 1), float64
        In ``w_d`` form. Each feature's curve equals the old one on the old range (to
        float32 rounding) when ``new``'s knots extend ``old``'s.
    """
    emb_old = embedding_params(old, n_features)
    emb_new = embedding_params(new, n_features)
    coef_old = np.vstack([weights_from_w_d(row, emb_old.ipar) for row in W])
    n_points = POINTS_PER_SEGMENT * new.n_bases + 1
    u = np.linspace(0.0, 1.0, n_points)[:, None]
    grid = (old.lo_[None, :] + u * (old.hi_ - old.lo_)[None, :]).astype(np.float32)
    Z_old = old.transform(grid).astype(np.float64)
    Z_new = new.transform(grid).astype(np.float64)
    c_old, c_new = emb_old.n_cols, emb_new.n_cols
    coef_new = np.zeros((W.shape[0], n_features * c_new + 1))
    coef_new[:, -1] = coef_old[:, -1]
    for f in range(n_features):
        curves = Z_old[:, f * c_old:(f + 1) * c_old] @ coef_old[:, f * c_old:(f + 1) * c_old].T
        block = Z_new[:, f * c_new:(f + 1) * c_new]
        solution = np.linalg.lstsq(block, curves, rcond=None)[0]
        coef_new[:, f * c_new:(f + 1) * c_new] = solution.T
    return w_to_w_d(coef_new, emb_new)
