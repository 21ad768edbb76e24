"""Piecewise-linear anchor features (paper 003, Sec. 3.2 and App. A.2).

A piece is a ball (centre ``v``, radius ``r``) with a linear function inside it: its features
are ``1[||x - v|| < r] [x, 1]``, ``d + 1`` columns that ShareBoost selects as one group.
Candidate centres come from streamed k-means; the radii of a centre are quantiles of the
distances from it to a uniform row sample, so each ball holds a chosen fraction of the rows.
Distances may be measured on the features multiplied by a per-feature ``metric`` (the
centres then lie in that space), so that a feature of large units does not decide alone
which rows a ball holds.

Distances from rows to centres are one matrix product per chunk,
``||x||^2 - 2 C x + ||c||^2`` (:func:`squared_distances`), for scoring every candidate and for
the gates of the selected pieces alike, so a row is inside a ball by the same arithmetic in
training and in prediction.

A piece's gate is the ball's indicator (the paper's hard gate), or with a ``gate_width``
``w > 0`` a soft-edged one, linear in the squared distance over a ramp of width ``w r^2``
centred on the ball's edge (:func:`soft_gates`): 1 inside ``r^2 (1 - w / 2)``, 0 from
``r^2 (1 + w / 2)`` on, 1/2 on the edge. The pieces' linear functions then join without a
step at the edges. The ramp grows with ``r``, so the gates of one centre stay ordered by
radius, as its balls are nested.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: Fractions of the rows inside the candidate balls of a centre (before ``n_radii`` is set).
DEFAULT_COVERAGE = (0.01, 0.6)


def squared_distances(X: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances from every centre to every row, by one matrix product.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32
    centres : ndarray of shape (n_centres, d), float32

    Returns
    -------
    ndarray of shape (n, n_centres), float32
        ``||x||^2 - 2 x.c + ||c||^2``, clipped at 0 (float32 rounding of the expansion is
        about ``1e-7 (||x||^2 + ||c||^2)``).
    """
    X = np.ascontiguousarray(X, dtype=np.float32)
    centres = np.ascontiguousarray(centres, dtype=np.float32)
    out = X @ centres.T
    out *= np.float32(-2.0)
    out += np.einsum("ij,ij->i", X, X)[:, None]
    out += np.einsum("ij,ij->i", centres, centres)[None, :]
    np.maximum(out, np.float32(0.0), out=out)
    return out


def soft_gates(dist2: np.ndarray, radii2: np.ndarray, width: float) -> np.ndarray:
    """Soft-edged gates ``clip((r^2 (1 + w / 2) - d^2) / (w r^2), 0, 1)``.

    Parameters
    ----------
    dist2 : ndarray of shape (n, T), float32
        Squared distances (:func:`squared_distances`).
    radii2 : ndarray of shape (T,), float64
        Squared radii.
    width : float
        ``w > 0``, the ramp's width as a fraction of ``r^2``.

    Returns
    -------
    ndarray of shape (n, T), float32
        Computed in float64 from the float32 distances, then rounded: 1 for
        ``d^2 <= r^2 (1 - w / 2)``, 0 for ``d^2 >= r^2 (1 + w / 2)``, linear between.
    """
    radii2 = np.asarray(radii2, dtype=np.float64).reshape(1, -1)
    ramp = width * radii2
    gates = (radii2 + 0.5 * ramp - np.asarray(dist2, dtype=np.float64)) / ramp
    np.clip(gates, 0.0, 1.0, out=gates)
    return gates.astype(np.float32)


@dataclass
class AnchorPieces:
    """Candidate pieces: every (centre, radius) pair.

    Candidate ``c * n_radii + j`` is the ball of centre ``c`` and its ``j``-th radius.

    Attributes
    ----------
    centres : ndarray of shape (n_centres, d), float32
    radii : ndarray of shape (n_centres, n_radii), float64
        Ascending per centre.
    scale : ndarray of shape (d,), float64
        The linear part of a piece sees ``(x - shift) * scale`` (features brought to
        ``[-1, 1]``).
    metric : ndarray of shape (d,), float64, or None
        Distances are measured between ``x * metric`` and the centres (which lie in that
        space); None: between ``x`` and the centres.
    shift : ndarray of shape (d,), float64, or None
        Subtracted before ``scale`` in the linear part (None: nothing), so that a feature
        moved by a constant gives the same columns. With a metric, the distances' space
        is moved by ``shift * metric`` too (:meth:`measured`, :meth:`placed`): the same
        distances, but squared_distances' float32 expansion then squares numbers near the
        data's spread, not its offset (a feature of 1e4 give or take 3 measured as it
        is left the distances a few units of rounding: ShareBoost's test accuracy 92.7 ->
        85.0 %).
    gate_width : float
        0: a piece's gate is its ball's indicator (hard); ``w > 0``: the soft-edged gate of
        :func:`soft_gates`, a ramp of width ``w r^2`` in the squared distance. Pieces saved
        before the option load as hard (the class default).
    """

    centres: np.ndarray
    radii: np.ndarray
    scale: np.ndarray
    metric: np.ndarray | None = None
    shift: np.ndarray | None = None
    gate_width: float = 0.0

    @classmethod
    def from_sample(cls, centres: np.ndarray, sample: np.ndarray, n_radii: int,
                    scale: np.ndarray,
                    coverage: tuple[float, float] = DEFAULT_COVERAGE,
                    metric: np.ndarray | None = None,
                    shift: np.ndarray | None = None,
                    gate_width: float = 0.0) -> AnchorPieces:
        """Radii of each centre from distance quantiles over a row sample.

        Parameters
        ----------
        centres : ndarray of shape (n_centres, d)
        sample : ndarray of shape (m, d)
            Uniform sample of the rows.
        n_radii : int
            Radii per centre; the ``j``-th holds about ``p_j`` of the sample, ``p``
            geometrically spaced over ``coverage``.
        scale : ndarray of shape (d,)
        coverage : (float, float)
            Smallest and largest fraction of rows in a ball.
        metric : ndarray of shape (d,), optional
            Per-feature factors of the space the distances are measured in, ``centres``
            given in it (see the class).
        shift : ndarray of shape (d,), optional
            Subtracted from the features before ``scale`` in the linear part.
        gate_width : float
            0: hard gates; ``w > 0``: soft-edged ones (see the class).

        Returns
        -------
        AnchorPieces
        """
        centres = np.ascontiguousarray(centres, dtype=np.float32)
        sample64 = np.asarray(sample, dtype=np.float64)
        if metric is not None:
            metric = np.asarray(metric, dtype=np.float64)
            sample64 = sample64 * metric
        c64 = centres.astype(np.float64)
        dist2 = ((c64 ** 2).sum(1)[:, None] - 2.0 * c64 @ sample64.T
                 + (sample64 ** 2).sum(1)[None, :])
        dist = np.sqrt(np.maximum(dist2, 0.0))
        probabilities = np.geomspace(coverage[0], coverage[1], int(n_radii))
        radii = np.quantile(dist, probabilities, axis=1).T
        radii = np.maximum.accumulate(np.maximum(radii, 1e-12), axis=1)
        return cls(centres, np.ascontiguousarray(radii), np.asarray(scale, dtype=np.float64),
                   metric, None if shift is None else np.asarray(shift, dtype=np.float64),
                   float(gate_width))

    @property
    def n_centres(self) -> int:
        """Candidate centres."""
        return int(self.centres.shape[0])

    @property
    def n_radii(self) -> int:
        """Radii per centre."""
        return int(self.radii.shape[1])

    @property
    def n_base(self) -> int:
        """Columns of one piece, ``d + 1``."""
        return int(self.centres.shape[1]) + 1

    def base(self, X: np.ndarray) -> np.ndarray:
        """The linear part ``[(x - shift) * scale, 1]`` shared by every piece, (n, d + 1)
        float32."""
        out = np.empty((X.shape[0], X.shape[1] + 1), dtype=np.float32)
        if self.shift is None:
            np.multiply(X, self.scale, out=out[:, :-1], casting="unsafe")
        else:
            out[:, :-1] = (np.asarray(X, dtype=np.float64) - self.shift) * self.scale
        out[:, -1] = 1.0
        return out

    def piece(self, candidate: int) -> tuple[np.ndarray, float]:
        """Centre and radius of candidate ``candidate``."""
        c, j = divmod(int(candidate), self.n_radii)
        return self.centres[c], float(self.radii[c, j])

    @property
    def origin(self) -> np.ndarray | None:
        """Where the distances' space is moved to: ``shift * metric`` (float64), or None
        (no metric or no shift: not moved)."""
        if self.metric is None or self.shift is None:
            return None
        return self.shift * self.metric

    def measured(self, X: np.ndarray) -> np.ndarray:
        """The rows in the space of the distances, ``x * metric - origin`` (float32;
        ``X`` itself without a metric)."""
        if self.metric is None:
            return X
        out = np.empty(X.shape, dtype=np.float32)
        np.multiply(X, self.metric, out=out, casting="unsafe")
        origin = self.origin
        if origin is not None:
            out -= origin.astype(np.float32)
        return out

    def placed(self, centres: np.ndarray) -> np.ndarray:
        """``centres`` (of :attr:`centres`' space) moved as :meth:`measured` moves the
        rows, float32."""
        origin = self.origin
        if origin is None:
            return centres
        return (np.asarray(centres, dtype=np.float64) - origin).astype(np.float32)

    def distances(self, X: np.ndarray) -> np.ndarray:
        """Squared distances from every row to every candidate centre, (n, n_centres)."""
        return squared_distances(self.measured(X), self.placed(self.centres))

    def gates(self, X: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
        """Gates of the pieces ``(centres, radii)``: the ball indicators
        ``1[||x - v_t||^2 < r_t^2]``, or with ``gate_width`` the soft-edged gates of
        :func:`soft_gates`.

        Returns
        -------
        ndarray of shape (n, T), float32
        """
        radii2 = np.asarray(radii, dtype=np.float64).reshape(-1, 1) ** 2
        dist2 = squared_distances(self.measured(X),
                                  self.placed(centres.reshape(radii2.shape[0], X.shape[1])))
        if self.gate_width > 0:
            return soft_gates(dist2, radii2.ravel(), float(self.gate_width))
        return (dist2 < radii2.T).astype(np.float32)

    def transform(self, X: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Materialised features of the given pieces, (n, T (d + 1)) float32 (small data).

        Column ``t (d + 1) + f`` is ``g_t(x) [(x - shift) * scale, 1]_f``, ``g_t`` the
        piece's gate (:meth:`gates`).
        """
        X = np.ascontiguousarray(X, dtype=np.float32)
        pieces = [self.piece(c) for c in candidates]
        centres = np.array([p[0] for p in pieces], dtype=np.float32).reshape(len(pieces), -1)
        radii = np.array([p[1] for p in pieces])
        gates = self.gates(X, centres, radii)
        base = self.base(X)
        return (gates[:, :, None] * base[:, None, :]).reshape(X.shape[0], -1)

    def to_dict(self) -> dict[str, Any]:
        """Shape of the candidate set (the arrays are saved separately)."""
        return {"n_centres": self.n_centres, "n_radii": self.n_radii,
                "gate_width": float(self.gate_width)}
