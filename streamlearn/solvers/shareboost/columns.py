"""ShareBoost's candidate columns (paper 003): raw features, decision stumps, anchor pieces.

Every family scores all of its candidates from one pass (:meth:`accumulate` folds a chunk's
residuals into a small accumulator, :meth:`column_scores` turns it into the L1 norm of every
candidate's gradient column, eq. 7) and recomputes the selected ones from a chunk's features
(:meth:`gates`), so no column is ever stored per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from streamlearn.data.sparse_rows import SparseRows
from streamlearn.features.anchors import AnchorPieces, squared_distances
from streamlearn.solvers.shareboost.kernels import (
    NUMPY_ANCHOR_PAIRS,
    NUMPY_OBJECTIVE_ENTRIES,
    anchor_bins_numpy,
    anchor_gradients,
    anchor_histogram_chunk,
    anchor_histogram_numpy,
    anchor_ramp_gradients,
    anchor_ramp_histogram_chunk,
    anchor_ramp_histogram_numpy,
    binned_histogram_numpy,
    linear_gates_chunk,
    linear_gates_csr,
    linear_gates_numpy,
    linear_gradient_chunk,
    linear_gradient_csr,
    padded_thresholds,
    ramp_bounds,
    stump_gates_chunk,
    stump_gates_numpy,
    stump_gradients,
    stump_histogram_chunk,
)
from streamlearn.solvers.shareboost.nested_basis import NestedBasis
from streamlearn.solvers.threads import (
    MIN_CENTRES_PER_THREAD,
    in_threads,
    thread_bounds,
)

#: Candidate families, by name.
FEATURES = ("linear", "stumps", "anchors")


def _ones(n: int) -> np.ndarray:
    return np.ones((n, 1), dtype=np.float32)


@dataclass
class LinearColumns:
    """Candidates are the features ``(x_f - shift_f) * scale_f``; candidate ``f`` is
    feature ``f``.

    The one family that takes CSR rows (:class:`~streamlearn.data.sparse_rows.SparseRows`)
    as they are: a zero entry adds nothing to a gradient column and is a zero gate (the
    columns of sparse data are not shifted). The kernels read ``x_f * scale_f``; the
    shift enters as its ``offsets`` (:meth:`offsets`), exactly: a column's gradient less
    its offset times the sum of the residuals, a model's intercept less the offsets'
    share of its score.
    """

    scale: np.ndarray
    shift: np.ndarray | None = None
    n_base = 1

    @classmethod
    def of_range(cls, minimum: np.ndarray, maximum: np.ndarray, largest: np.ndarray,
                 shift: bool) -> LinearColumns:
        """Columns in ``[-1, 1]``: each feature divided by its largest absolute value; with
        ``shift`` (dense rows), a feature whose values all lie on one side of zero is first
        moved to the middle of its range and divided by half its width, so that a year or
        a temperature in kelvin spans the same ``[-1, 1]`` as a centred feature instead of
        a sliver near 1, where it is another intercept and the penalty drowns it. Such a
        feature that is constant is the zero column (scale 0), never chosen."""
        one_sided = (np.isfinite(minimum) & np.isfinite(maximum)
                     & ((minimum > 0) | (maximum < 0)) if shift
                     else np.zeros(largest.shape[0], dtype=bool))
        # a feature without a stored value (a sparse column never set) has the range
        # (inf, -inf): its bounds enter the sums as zeros, not as inf - inf
        low, high = np.where(one_sided, minimum, 0.0), np.where(one_sided, maximum, 0.0)
        centre = 0.5 * (low + high)
        half = np.where(one_sided, 0.5 * (high - low), largest)
        # a constant one-sided feature is the zero column once centred: scale 0 keeps it
        # so exactly, where x * scale less its offset would cancel two equal large numbers
        scale = np.where(half > 0, 1.0 / np.where(half > 0, half, 1.0),
                         np.where(one_sided, 0.0, 1.0))
        return cls(scale, centre if one_sided.any() else None)

    def offsets(self, candidates: np.ndarray) -> np.ndarray:
        """``shift_f * scale_f`` of the given candidates (zeros without a shift), float64."""
        candidates = np.asarray(candidates, dtype=np.int64)
        if self.shift is None:
            return np.zeros(candidates.shape[0])
        return self.shift[candidates] * self.scale[candidates]

    def mean_squares(self, squares: np.ndarray, total: np.ndarray | None,
                     weight: float) -> np.ndarray:
        """Weighted mean square of every column over rows whose features' weighted sums of
        squares and of values are ``squares`` and ``total`` (of weight ``weight``)."""
        if self.shift is None or total is None:
            return squares * self.scale * self.scale / weight
        c = self.shift
        return (squares - 2.0 * c * total + c * c * weight) * self.scale * self.scale / weight

    @property
    def n_candidates(self) -> int:
        """Number of candidate columns."""
        return int(self.scale.shape[0])

    def base(self, X: np.ndarray) -> np.ndarray:
        """Base vector of every row: ``[1]``."""
        return _ones(X.shape[0])

    def gradient_state(self, k: int) -> np.ndarray:
        """Empty accumulator of the gradient matrix."""
        return np.zeros((self.n_candidates, k))

    def accumulate(self, X: np.ndarray | SparseRows, base: np.ndarray,
                   residuals: np.ndarray, acc: np.ndarray, numpy: bool = False) -> None:
        """Add one chunk's gradient columns to ``acc`` (the kernels whatever ``numpy``:
        those of dense and of CSR rows add the same sums in the same order)."""
        if isinstance(X, SparseRows):
            linear_gradient_csr(*X.kernel_args, residuals, self.scale, acc)
        else:
            linear_gradient_chunk(X, residuals, self.scale, acc)
        if self.shift is not None:
            acc -= np.outer(self.offsets(np.arange(self.n_candidates)), residuals.sum(axis=0))

    def column_scores(self, acc: np.ndarray) -> np.ndarray:
        """L1 norm of every candidate's gradient column (eq. 7, before ``1 / m``)."""
        return np.abs(acc).sum(axis=1)

    def gates(self, X: np.ndarray | SparseRows, candidates: np.ndarray) -> np.ndarray:
        """Values of the given candidates, (n, T) float32."""
        candidates = np.ascontiguousarray(candidates, dtype=np.int64)
        if isinstance(X, SparseRows):
            gates = linear_gates_csr(*X.kernel_args, candidates, self.scale)
        elif X.shape[0] * candidates.shape[0] <= NUMPY_OBJECTIVE_ENTRIES:
            gates = linear_gates_numpy(X, candidates, self.scale)
        else:
            gates = linear_gates_chunk(X, candidates, self.scale)
        if self.shift is not None:
            gates -= self.offsets(candidates).astype(np.float32)
        return gates

    def used_features(self, candidates: np.ndarray) -> np.ndarray:
        """Raw features the given candidates read."""
        return np.unique(np.asarray(candidates, dtype=np.int64))

    def column_features(self, candidates: np.ndarray) -> np.ndarray | None:
        """The raw feature each given candidate reads."""
        return np.asarray(candidates, dtype=np.int64)

    def column_labels(self, candidates: np.ndarray, names: list[str]) -> list[str]:
        """A readable name of each given candidate: its feature's."""
        return [names[f] for f in self.column_features(candidates)]

    def nested_basis(self, candidates: np.ndarray) -> NestedBasis | None:
        """None: feature columns are not nested."""
        return None

    def feature_weights(self, candidates: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """Per raw feature, the mean over classes of its column's absolute weight (the
        column is the feature scaled into ``[-1, 1]``), shape (d,)."""
        out = np.zeros(self.n_candidates)
        np.add.at(out, np.asarray(candidates, dtype=np.int64), np.abs(coef[:, :, 0]).mean(1))
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """Arrays that define the family (saved with the model)."""
        if self.shift is None:
            return {"scale": self.scale}
        return {"scale": self.scale, "shift": self.shift}


@dataclass
class StumpColumns:
    """Candidates ``1[x_f <= theta_{f,b}]``; candidate ``f * n_thresholds + b``.

    Attributes
    ----------
    thresholds : ndarray of shape (d, n_thresholds), float32, ascending per feature
    kernel_thresholds : ndarray of shape (d, m), float32
        The same padded with ``+inf`` for the kernels (:func:`.kernels.padded_thresholds`).
    """

    thresholds: np.ndarray
    n_base = 1

    def __post_init__(self) -> None:
        self.kernel_thresholds = padded_thresholds(self.thresholds)

    @property
    def n_thresholds(self) -> int:
        """Thresholds per feature."""
        return int(self.thresholds.shape[1])

    @property
    def n_candidates(self) -> int:
        """Number of candidate columns."""
        return int(self.thresholds.size)

    def base(self, X: np.ndarray) -> np.ndarray:
        """Base vector of every row: ``[1]``."""
        return _ones(X.shape[0])

    def gradient_state(self, k: int) -> np.ndarray:
        """Empty accumulator: per feature, bins between thresholds."""
        return np.zeros((self.thresholds.shape[0], self.n_thresholds + 1, k))

    def accumulate(self, X: np.ndarray, base: np.ndarray, residuals: np.ndarray,
                   acc: np.ndarray, numpy: bool = False) -> None:
        """Add one chunk's residuals to the bins (``numpy`` has no effect: the kernel)."""
        stump_histogram_chunk(X, residuals, self.kernel_thresholds, acc)

    def column_scores(self, acc: np.ndarray) -> np.ndarray:
        """L1 norm of every stump's gradient column; repeated thresholds score ``-inf``."""
        scores = np.abs(stump_gradients(acc)).sum(axis=2)
        repeated = np.zeros_like(scores, dtype=bool)
        repeated[:, 1:] = self.thresholds[:, 1:] <= self.thresholds[:, :-1]
        scores[repeated] = -np.inf
        return scores.ravel()

    def split(self, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Feature and threshold of each candidate."""
        features, bins = np.divmod(np.asarray(candidates, dtype=np.int64), self.n_thresholds)
        return features, np.ascontiguousarray(self.thresholds[features, bins])

    def gates(self, X: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Stump values of the given candidates, (n, T) float32."""
        features, thresholds = self.split(candidates)
        if X.shape[0] * features.shape[0] <= NUMPY_OBJECTIVE_ENTRIES:
            return stump_gates_numpy(X, features, thresholds)
        return stump_gates_chunk(X, features, thresholds)

    def used_features(self, candidates: np.ndarray) -> np.ndarray:
        """Raw features the given stumps read."""
        return np.unique(self.split(candidates)[0])

    def column_features(self, candidates: np.ndarray) -> np.ndarray | None:
        """The raw feature each given stump reads."""
        return self.split(candidates)[0]

    def column_labels(self, candidates: np.ndarray, names: list[str]) -> list[str]:
        """A readable name of each given stump: ``feature <= threshold``."""
        features, thresholds = self.split(candidates)
        return [f"{names[f]} <= {t:.4g}" for f, t in zip(features, thresholds, strict=True)]

    def nested_basis(self, candidates: np.ndarray) -> NestedBasis:
        """The stumps of each feature, nested by threshold (:mod:`.nested_basis`)."""
        features, bins = np.divmod(np.asarray(candidates, dtype=np.int64), self.n_thresholds)
        return NestedBasis.of(features, bins)

    def feature_weights(self, candidates: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """Per raw feature, the mean over classes of the mean absolute deviation of its
        stumps' sum over the training rows, shape (d,).

        A feature's stumps add up to a step function that is constant on the bins between
        its thresholds; the thresholds are quantiles ``b / n_bins`` of the rows, so each
        of the ``n_bins`` bins holds the same share of them (ties aside). Steps that
        cancel, or that split off few rows, so weigh what they change in the scores.
        """
        d, m = self.thresholds.shape
        features, bins = np.divmod(np.asarray(candidates, dtype=np.int64), m)
        out = np.zeros(d)
        n_classes = coef.shape[1]
        for c in range(n_classes):
            steps = np.zeros((d, m + 1))  # the last bin: above every threshold
            np.add.at(steps, (features, bins), coef[:, c, 0])
            # on bin k (theta_{k-1} < x <= theta_k) the stumps b >= k are on
            levels = np.cumsum(steps[:, ::-1], axis=1)[:, ::-1]
            out += np.abs(levels - levels.mean(axis=1, keepdims=True)).mean(axis=1)
        return out / max(n_classes, 1)

    def arrays(self) -> dict[str, np.ndarray]:
        """Arrays that define the family (saved with the model)."""
        return {"thresholds": self.thresholds}


@dataclass
class AnchorColumns:
    """Candidate groups ``g_{c,j}(x) [x, 1]``; candidate ``c * n_radii + j``.

    ``g_{c,j}`` is the ball indicator ``1[||x - v_c|| < r_{c,j}]`` or, with the pieces'
    ``gate_width``, its soft-edged gate (:func:`~streamlearn.features.anchors.soft_gates`),
    in scoring (:meth:`accumulate`) and in the selected pieces' gates (:meth:`gates`) alike.
    """

    pieces: AnchorPieces

    @property
    def n_base(self) -> int:
        """Columns per group, ``d + 1``."""
        return self.pieces.n_base

    @property
    def n_candidates(self) -> int:
        """Number of candidate groups."""
        return self.pieces.n_centres * self.pieces.n_radii

    def base(self, X: np.ndarray) -> np.ndarray:
        """Base vector of every row: ``[x * scale, 1]``."""
        return self.pieces.base(X)

    def gradient_state(self, k: int) -> np.ndarray:
        """Empty accumulator: per centre, bins between radii (float32, see the kernel); for
        soft gates, bins between the ends of their ramps, each with two sums."""
        p = self.pieces
        if p.gate_width > 0:
            return np.zeros((p.n_centres, 2 * p.n_radii, 2, p.n_base, k), dtype=np.float32)
        return np.zeros((p.n_centres, p.n_radii, p.n_base, k), dtype=np.float32)

    def accumulate(self, X: np.ndarray, base: np.ndarray, residuals: np.ndarray,
                   acc: np.ndarray, numpy: bool = False, bins: Any = None) -> None:
        """Add one chunk's ``a_i R_i^T`` to the bin of each centre's smallest ball.

        Soft gates (the pieces' ``gate_width``) are scored exactly from the same pass: a
        gate linear in the squared distance ``d`` on its ramp sums its rows from bins
        between the ramps' ends that hold both ``a_i R_i^T`` and ``d a_i R_i^T``
        (:func:`~.kernels.anchor_ramp_histogram_chunk`; twice the scatter-adds, and the
        rows out to the widest ramp's end). The centres are split between threads, each
        with its own block of distances (one matrix product) and its own rows of ``acc``.
        With ``numpy`` (:func:`~streamlearn.solvers.shareboost.passes.numpy_paths`), chunks
        of at most :data:`~.kernels.NUMPY_ANCHOR_PAIRS` rows times centres take
        :func:`~.kernels.anchor_histogram_numpy` instead, in one thread; ``bins``, those
        chunks' :meth:`histogram_bins` kept from an earlier pass over the same rows, saves
        computing them again (:func:`~.kernels.binned_histogram_numpy`).
        """
        if bins is not None:
            binned_histogram_numpy(bins, base, residuals, acc)
            return
        centres, radii2 = self.pieces.placed(self.pieces.centres), self.radii2
        soft = self.pieces.gate_width > 0
        if soft:  # the bins end at the ramps' ends
            radii2 = ramp_bounds(radii2, float(self.pieces.gate_width))[0]
        X = self.pieces.measured(X)  # the distances' space; base holds the linear part
        if numpy and X.shape[0] * centres.shape[0] <= NUMPY_ANCHOR_PAIRS:
            (anchor_ramp_histogram_numpy if soft else anchor_histogram_numpy)(
                squared_distances(X, centres), base, residuals, radii2, acc)
            return
        kernel = anchor_ramp_histogram_chunk if soft else anchor_histogram_chunk

        def work(lo: int, hi: int) -> None:
            kernel(squared_distances(X, centres[lo:hi]), base, residuals, radii2[lo:hi],
                   acc[lo:hi])

        in_threads(work, thread_bounds(centres.shape[0], MIN_CENTRES_PER_THREAD))

    def histogram_bins(self, X: np.ndarray) -> Any:
        """The bins :meth:`accumulate` sums the rows ``X`` into on its numpy path
        (:func:`~.kernels.anchor_bins_numpy`; they depend on the rows and the candidates
        alone), or None where it takes another: soft gates, or more than
        :data:`~.kernels.NUMPY_ANCHOR_PAIRS` rows times centres."""
        centres = self.pieces.centres
        if self.pieces.gate_width > 0 or X.shape[0] * centres.shape[0] > NUMPY_ANCHOR_PAIRS:
            return None
        return anchor_bins_numpy(squared_distances(self.pieces.measured(X),
                                                   self.pieces.placed(centres)), self.radii2)

    @property
    def radii2(self) -> np.ndarray:
        """Squared radii, (n_centres, n_radii) float64."""
        return self.pieces.radii ** 2

    def column_scores(self, acc: np.ndarray) -> np.ndarray:
        """Sum of the L1 norms of each group's columns (Sec. 2.1); repeated radii ``-inf``."""
        width = float(self.pieces.gate_width)
        if width > 0:
            radii2 = self.radii2
            gradients = anchor_ramp_gradients(acc, *ramp_bounds(radii2, width), radii2, width)
        else:
            gradients = anchor_gradients(acc)
        scores = np.abs(gradients).sum(axis=(2, 3), dtype=np.float64)
        radii = self.pieces.radii
        repeated = np.zeros_like(scores, dtype=bool)
        repeated[:, 1:] = radii[:, 1:] <= radii[:, :-1]
        scores[repeated] = -np.inf
        return scores.ravel()

    def selected_pieces(self, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Centres (T, d) and radii (T,) of the given candidates."""
        c, j = np.divmod(np.asarray(candidates, dtype=np.int64), self.pieces.n_radii)
        return (np.ascontiguousarray(self.pieces.centres[c]),
                np.ascontiguousarray(self.pieces.radii[c, j]))

    def gates(self, X: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Gates of the given candidates, (n, T) float32: ball indicators, or soft-edged
        (:meth:`AnchorPieces.gates <streamlearn.features.anchors.AnchorPieces.gates>`)."""
        return self.pieces.gates(X, *self.selected_pieces(candidates))

    def nested_basis(self, candidates: np.ndarray) -> NestedBasis:
        """The balls of each centre, nested by radius (:mod:`.nested_basis`)."""
        centres, radii = np.divmod(np.asarray(candidates, dtype=np.int64), self.pieces.n_radii)
        return NestedBasis.of(centres, radii)

    def used_features(self, candidates: np.ndarray) -> np.ndarray:
        """Raw features the pieces read: all of them, once a piece is selected."""
        if len(candidates) == 0:
            return np.zeros(0, dtype=np.int64)
        return np.arange(self.pieces.centres.shape[1], dtype=np.int64)

    def column_features(self, candidates: np.ndarray) -> np.ndarray | None:
        """None: a piece's ball reads every feature."""
        return None

    def column_labels(self, candidates: np.ndarray, names: list[str]) -> list[str]:
        """A readable name of each given piece: its centre and radius."""
        centres, radii = np.divmod(np.asarray(candidates, dtype=np.int64), self.pieces.n_radii)
        return [f"ball {c}, radius {self.pieces.radii[c, j]:.3g}"
                for c, j in zip(centres, radii, strict=True)]

    def feature_weights(self, candidates: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """Per raw feature, the mean over classes of its absolute weight in the pieces'
        linear parts (added over the pieces), shape (d,); the balls' gates read every
        feature and are not counted."""
        d = self.pieces.centres.shape[1]
        if len(candidates) == 0:
            return np.zeros(d)
        return np.abs(coef[:, :, :d]).mean(axis=1).sum(axis=0)

    def arrays(self) -> dict[str, np.ndarray]:
        """Arrays that define the family (saved with the model)."""
        arrays = {"scale": self.pieces.scale, "centres": self.pieces.centres,
                  "radii": self.pieces.radii}
        if self.pieces.metric is not None:
            arrays["metric"] = self.pieces.metric
        if self.pieces.shift is not None:
            arrays["shift"] = self.pieces.shift
        if self.pieces.gate_width > 0:
            arrays["gate_width"] = np.array(float(self.pieces.gate_width))
        return arrays


Family = LinearColumns | StumpColumns | AnchorColumns


def family_from_arrays(kind: str, arrays: dict[str, np.ndarray]) -> Family:
    """The family saved as ``arrays`` (see the families' ``arrays``), of kind ``kind``."""
    if kind == "linear":
        shift = arrays.get("shift")
        return LinearColumns(np.asarray(arrays["scale"], dtype=np.float64),
                             None if shift is None else np.asarray(shift, dtype=np.float64))
    if kind == "stumps":
        return StumpColumns(np.ascontiguousarray(arrays["thresholds"], dtype=np.float32))
    metric, shift = arrays.get("metric"), arrays.get("shift")
    width = arrays.get("gate_width")  # absent: hard gates, as before the option
    return AnchorColumns(AnchorPieces(np.ascontiguousarray(arrays["centres"], dtype=np.float32),
                                      np.asarray(arrays["radii"], dtype=np.float64),
                                      np.asarray(arrays["scale"], dtype=np.float64),
                                      None if metric is None
                                      else np.asarray(metric, dtype=np.float64),
                                      None if shift is None
                                      else np.asarray(shift, dtype=np.float64),
                                      0.0 if width is None else float(width)))
