"""Spreading features whose rows crowd into a small part of their range.

A B-spline map spaces its knots evenly over each feature's range. A feature with a heavy
tail or a few far outliers (incomes, counts, durations, ``lognormal`` values) then has
most of its rows inside one or two segments: its curve cannot bend where the rows are,
and quantile knots do not help much, since every segment keeps a share of the range.
:class:`TailTransform` passes such features through a monotone map before the bases,

    ``g(x) = asinh((x - c) / s)``,

linear within about ``s`` of the centre ``c`` and logarithmic beyond it, on both sides.
The rule (:meth:`TailTransform.from_description`), from the describe pass's row sample
and the data's exact range, feature by feature:

* Left as they are: features with at most :data:`MAX_CODE_VALUES` distinct sampled values
  (codes, flags, small counts), features in ``skip`` (categorical codes), and features
  whose sampled values other than an *atom* (the most frequent value, set aside when it
  holds more than one segment's share, ``1 / SEGMENTS``: a floor of zeros) number fewer
  than :data:`MIN_VALUES`.
* *Crowding* is the largest share of those values in one of :data:`SEGMENTS` equal
  segments of the range (the atom is one point wherever it maps, so it is left out).
  A feature is transformed when its crowding is above :data:`CROWDED` (half its values
  in an eighth of its range), and the best ``g`` at least halves it. Tried: centres the
  atom (or the median, without one) and the minimum, scales the 10 %, 25 % and 50 %
  quantiles of ``|x - c|`` over those values; the best is the ``g`` of lowest crowding
  on the transformed range.
* Where no ``g`` halves it, the feature is still transformed when a ``g`` widens the
  *middle width* of those values (their interquartile range as a share of the range,
  :func:`middle_width`) at least :data:`MIDDLE_GAIN` times, by the ``g`` that widens it
  most. A few far values (one row at 3e10 among normal ones) keep the others inside one
  or two segments however ``g`` maps them, as ``g`` only takes their logarithm: the
  crowding cannot fall to half, while the middle width grows a billionfold. Left as they
  were, the standardisation or the grid puts those other rows on one point.

``g`` is increasing, so the range, the quantiles and the order of the rows are kept; only
the spacing changes. A fitted model applies it to every row it reads (the dataset's
chunks, :meth:`apply`), and reports its curves at the original values (:meth:`inverse`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

#: Equal segments of a feature's range over which crowding is measured (the default map's
#: first count of bases, 8, less a cubic's degree, rounded up).
SEGMENTS = 8
#: A feature is crowded when more than this share of its sampled values (atom aside) lie
#: in one segment, four times an even spread's. A normal feature's middle segment holds
#: about a third of its rows at 10,000 rows and 0.43 at a billion (its range grows with
#: the rows); an exponential one's first segment two thirds, a lognormal(0, 2) one's all.
CROWDED = 0.5
#: Features with at most this many distinct sampled values are left as they are.
MAX_CODE_VALUES = 16
#: Features with fewer sampled values outside the atom are left as they are.
MIN_VALUES = 64
#: Where no ``g`` halves the crowding, one that widens the middle width (:func:`middle_width`)
#: at least this many times (the square of :data:`SEGMENTS`) is taken. One far outlier among
#: 300 normal rows gains about a billion at 3e10; shuttle's feature 1 (values near +-5,000
#: around a bulk near 0) 350; Fashion-MNIST's sparsest border pixels 10-21 (left as
#: they are).
MIDDLE_GAIN = SEGMENTS ** 2
#: Quantiles of ``|x - c|`` tried as the scale ``s``.
SCALE_QUANTILES = (0.1, 0.25, 0.5)
#: :meth:`TailTransform.preimage` looks this many float32 steps either side of the inverse.
PREIMAGE_ULPS = 16


#: Rows a describe pass samples to choose the map of crowded features (as ShareBoost
#: samples them).
TAIL_SAMPLE_ROWS = 8192
#: :func:`squeezing_tails` keeps a crowded feature whose standard deviation is above this
#: many times its robust spread: Student's t(1.5) features 3.6-13, lognormal(0, 2) ones
#: 13-24, ijcnn1's crowded ones 1.6, exponential ones 1.2-1.3.
SQUEEZE_RATIO = 3.0


def squeezing_tails(transform: TailTransform | None, sample: np.ndarray,
                    std: np.ndarray) -> TailTransform | None:
    """The features of ``transform`` whose standardisation squeezes their middle rows: a
    standard deviation ``std[j]`` (of all rows) above :data:`SQUEEZE_RATIO` times the
    robust spread of the sampled rows, their interquartile range over 1.349 (the two agree
    for a normal feature). None when no feature is left.

    For models that standardise every feature (distances, RBF gates and similarities): a
    crowded feature whose standard deviation stays near its robust spread (a skewed one,
    ijcnn1's) keeps its middle half on the scale of a normal feature's, and mapping it
    only moves the model's geometry.
    """
    if transform is None:
        return None
    features = transform.features
    q1, q3 = np.quantile(np.asarray(sample, dtype=np.float64)[:, features], [0.25, 0.75],
                         axis=0)
    robust = (q3 - q1) / 1.349
    spread = np.asarray(std, dtype=np.float64)[features]
    keep = (robust > 0) & (spread > SQUEEZE_RATIO * robust)
    if not keep.any():
        return None
    return TailTransform(features[keep], transform.centre[keep], transform.scale[keep])


def choose_tail_transform(dataset: Any, sample: np.ndarray, minimum: np.ndarray,
                          maximum: np.ndarray, std: np.ndarray | None = None
                          ) -> TailTransform | None:
    """The map of ``dataset``'s crowded features that a describe pass calls for, or None.

    :meth:`TailTransform.from_description` of the pass's row sample and the data's range,
    the dataset's categorical columns and indicator columns
    (``Dataset.indicator_features``) left as they are; with ``std``, only the features
    whose standardisation squeezes their middle rows (:func:`squeezing_tails`).

    Parameters
    ----------
    dataset : Dataset
        The training data (its feature names and categories).
    sample : ndarray of shape (n, d)
        Rows sampled uniformly.
    minimum, maximum : ndarray of shape (d,)
        The data's range.
    std : ndarray of shape (d,), optional
        Every row's standard deviation of each feature: for models that standardise every
        feature.

    Returns
    -------
    TailTransform or None
    """
    names = list(dataset.feature_names)
    coded = [names.index(n) for n in (dataset.categories or {}) if n in names]
    coded += list(getattr(dataset, "indicator_features", ()))  # one-hot columns
    transform = TailTransform.from_description(sample, minimum, maximum, skip=coded)
    return transform if std is None else squeezing_tails(transform, sample, std)


def crowding(values: np.ndarray, lo: float, hi: float, segments: int = SEGMENTS) -> float:
    """The largest share of ``values`` in one of ``segments`` equal parts of ``[lo, hi]``.

    Parameters
    ----------
    values : ndarray of shape (n,)
    lo, hi : float
        The range, ``lo < hi``.
    segments : int

    Returns
    -------
    float
        In ``[1 / segments, 1]`` (1 for no values).
    """
    if values.size == 0:
        return 1.0
    cells = np.clip(((values - lo) / (hi - lo) * segments).astype(np.int64), 0, segments - 1)
    return float(np.bincount(cells, minlength=segments).max() / values.size)


def middle_width(values: np.ndarray, lo: float, hi: float) -> float:
    """The interquartile range of ``values`` as a share of ``[lo, hi]``: their middle width.

    Unlike :func:`crowding` it does not stop at one segment: a feature whose middle half
    fills a billionth of its range has a middle width of 1e-9.

    Parameters
    ----------
    values : ndarray of shape (n,)
    lo, hi : float
        The range, ``lo < hi``.

    Returns
    -------
    float
        In ``[0, 1]`` (0 for no values).
    """
    if values.size == 0:
        return 0.0
    q1, q3 = np.quantile(values, [0.25, 0.75])
    return float((q3 - q1) / (hi - lo))


def _asinh(x: np.ndarray, centre: float, scale: float) -> np.ndarray:
    return np.arcsinh((np.asarray(x, dtype=np.float64) - centre) / scale)


def _feature_choice(values: np.ndarray, lo: float, hi: float
                    ) -> tuple[float, float] | None:
    """``(c, s)`` for one feature's sampled ``values`` and range, or None (the rule of
    the module docstring)."""
    values = values[np.isfinite(values)].astype(np.float64)
    if not hi > lo:
        return None
    distinct, counts = np.unique(values, return_counts=True)
    if distinct.size <= MAX_CODE_VALUES:
        return None
    top = int(np.argmax(counts))
    atom = float(distinct[top]) if counts[top] > values.size / SEGMENTS else None
    rest = values if atom is None else values[values != atom]
    if rest.size < MIN_VALUES:
        return None
    before = crowding(rest, lo, hi)
    if before <= CROWDED:
        return None
    best: tuple[float, float] | None = None
    best_crowding = before / 2.0  # at least halved
    widest: tuple[float, float] | None = None
    before_width = middle_width(rest, lo, hi)
    best_width = MIDDLE_GAIN * before_width if before_width > 0 else np.inf
    for centre in (float(np.median(rest)) if atom is None else atom, lo):
        spread = np.abs(rest - centre)
        for q in SCALE_QUANTILES:
            scale = float(np.quantile(spread, q))
            if not scale > 0:
                continue
            mapped = _asinh(rest, centre, scale)
            mapped_lo = float(_asinh(lo, centre, scale))
            mapped_hi = float(_asinh(hi, centre, scale))
            after = crowding(mapped, mapped_lo, mapped_hi)
            if after <= best_crowding:
                best, best_crowding = (centre, scale), after
            width = middle_width(mapped, mapped_lo, mapped_hi)
            if width >= best_width:
                widest, best_width = (centre, scale), width
    return best if best is not None else widest


@dataclass
class TailTransform:
    """``x_f -> asinh((x_f - centre) / scale)`` for some features, the others unchanged.

    Attributes
    ----------
    features : ndarray of shape (k,), int64
        The transformed features (column indices), increasing.
    centre, scale : ndarray of shape (k,), float64
        Their ``c`` and ``s > 0``.
    """

    features: np.ndarray
    centre: np.ndarray
    scale: np.ndarray

    @classmethod
    def from_description(cls, sample: np.ndarray, minimum: np.ndarray, maximum: np.ndarray,
                         skip: Any = ()) -> TailTransform | None:
        """The transform the rule of the module docstring chooses, or None for none.

        Parameters
        ----------
        sample : ndarray of shape (n, d)
            Rows sampled uniformly (the describe pass's).
        minimum, maximum : ndarray of shape (d,)
            The data's range.
        skip : iterable of int
            Features left as they are (categorical codes).

        Returns
        -------
        TailTransform or None
        """
        skipped = {int(f) for f in skip}
        chosen = [(f, choice) for f in range(sample.shape[1]) if f not in skipped
                  for choice in [_feature_choice(sample[:, f], float(minimum[f]),
                                                 float(maximum[f]))] if choice is not None]
        if not chosen:
            return None
        return cls(np.array([f for f, _ in chosen], dtype=np.int64),
                   np.array([c for _, (c, _) in chosen], dtype=np.float64),
                   np.array([s for _, (_, s) in chosen], dtype=np.float64))

    def apply(self, X: np.ndarray) -> np.ndarray:
        """``X`` with the transformed features mapped, as a new float32 array.

        Parameters
        ----------
        X : ndarray of shape (n, d)

        Returns
        -------
        ndarray of shape (n, d), float32
        """
        out = np.array(X, dtype=np.float32, copy=True)
        if out.ndim != 2:
            raise ValueError(f"expected rows of shape (n, d), got shape {out.shape}")
        for f, c, s in zip(self.features, self.centre, self.scale, strict=True):
            out[:, f] = _asinh(out[:, f], c, s)
        return out

    def apply_bounds(self, values: np.ndarray) -> np.ndarray:
        """Per-feature values (a range's ends, quantiles: shape (..., d)) mapped, float64.

        Mapped values are rounded to float32 as :meth:`apply` rounds the rows, so that
        the mapped range of some rows holds their mapped values (rounding is monotone).
        """
        out = np.array(values, dtype=np.float64, copy=True)
        for f, c, s in zip(self.features, self.centre, self.scale, strict=True):
            out[..., f] = _asinh(out[..., f], c, s).astype(np.float32)
        return out

    def inverse(self, values: np.ndarray, feature: int) -> np.ndarray:
        """Original values of transformed values of ``feature`` (unchanged when it is
        not transformed), float64."""
        hit = np.flatnonzero(self.features == int(feature))
        values = np.asarray(values, dtype=np.float64)
        if hit.size == 0:
            return values.copy()
        k = int(hit[0])
        return self.centre[k] + self.scale[k] * np.sinh(values)

    def preimage(self, values: np.ndarray, feature: int) -> np.ndarray:
        """Original values that :meth:`apply` maps exactly onto ``values`` of ``feature``
        (mapped float32 values, such as a value term's table), float64.

        :meth:`inverse` is exact only up to float32 rounding (a capital gain of 594 comes
        back as 593.99998). Among the float32 numbers within :data:`PREIMAGE_ULPS` of the
        inverse, those that :meth:`apply` sends to the value are its preimage; the
        roundest of them is returned (an integer where there is one, else the nearest to
        the inverse), the inverse itself where none is found. A feature the transform
        leaves unchanged returns ``values``.
        """
        hit = np.flatnonzero(self.features == int(feature))
        values = np.asarray(values, dtype=np.float64)
        if hit.size == 0:
            return values.copy()
        k = int(hit[0])
        out = self.inverse(values, feature)
        steps = np.arange(-PREIMAGE_ULPS, PREIMAGE_ULPS + 1, dtype=np.float64)
        for i, (target, guess) in enumerate(zip(values, out, strict=True)):
            x = np.float32(guess)
            spacing = np.float64(np.spacing(np.abs(x)))
            near = np.unique((np.float64(x) + steps * spacing).astype(np.float32))
            mapped = _asinh(near, self.centre[k], self.scale[k]).astype(np.float32)
            found = near[mapped == np.float32(target)].astype(np.float64)
            if found.size == 0:
                continue
            whole = found[found == np.round(found)]
            pool = whole if whole.size else found
            out[i] = float(pool[np.argmin(np.abs(pool - guess))])
        return out

    def describe(self, description: Any) -> Any:
        """A :class:`~streamlearn.engine.Description` of the transformed rows: the range
        and the quantiles mapped (``g`` is increasing), the sample mapped, the mean and
        standard deviation of the transformed features taken from the sample."""
        sample = self.apply(description.sample)
        mean = np.array(description.mean, dtype=np.float64, copy=True)
        std = np.array(description.std, dtype=np.float64, copy=True)
        if sample.shape[0]:
            mean[self.features] = sample[:, self.features].mean(axis=0)
            std[self.features] = sample[:, self.features].std(axis=0)
        return replace(description, min=self.apply_bounds(description.min),
                       max=self.apply_bounds(description.max), mean=mean, std=std,
                       quantiles=self.apply_bounds(description.quantiles), sample=sample)
