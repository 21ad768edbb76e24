"""What the cast of float64, integer and decimal feature and target values to float32
loses, and the warning that says so.

Chunks hold float32 features and regression targets (the models compute in float32), so a
float64, integer or decimal column is cast as it is read. The cast keeps about 7
significant digits (integers exactly up to 2**24 only): a column with a large offset and a
small spread (Unix timestamps, 1.7e9 plus a few seconds, as float64 or int64 numbers) keeps
only a handful of distinct values, and a model trained on it learns nothing from it,
silently.

The columns checked (:func:`checked_dtype`) are those whose values the cast can round:
float64 and integers of 32 bits or more, read as they are (arrays) or as float64 first
(a source's decimal, integer and float64 columns, whose ranges are taken before the cast).
Float32 columns, and integers of 8 or 16 bits, lose nothing in their cast and are not
checked.

The rule (:func:`coarse_columns`): a checked feature column is *coarse* when its values,
over the rows read, span fewer than :data:`NARROW_STEPS` float32 steps (the spacing of
float32 numbers at the column's largest magnitude), while they differ in float64 and are
not all float32 numbers already. Such a column is named in a ``UserWarning`` (with its
magnitude and spread), which advises subtracting an offset (centring the column) before
the data is streamed.

A regression target is held to the same rule (:func:`target_spans`): a regressor learns
from the cast values alone. Its warning advises subtracting an offset
from the target (e.g. its mean) and adding it back to the predictions. An integer target is
checked as the float64 values it stands for. Classification labels are never cast, and
never checked.

A source records, for each block it reads, the range of each checked feature column
(:func:`matrix_spans`, :func:`column_spans`): two reductions per column, and an exactness
check only for a column that is narrow within the block; a dataset takes its regression
target's range from each chunk, before the target's cast. A dataset merges the blocks'
ranges (:class:`ResolutionWatch`: one for the features, one for the target) and warns at
the end of a walk over all its rows, so that a sorted column, narrow within each chunk but
wide over the dataset, is not named. Data held in memory whole (features, and a target
given as an array) is checked whole (:func:`warn_of_coarse_columns`).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from streamlearn.warning_origin import caller_stacklevel

#: A float64 column whose values span fewer float32 steps than this (at its largest
#: magnitude) loses most of its resolution in the cast: at most this many distinct values
#: are left of it, however many it had.
NARROW_STEPS = 1000

#: The largest finite float32.
FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclass(frozen=True, slots=True)
class Float64Spans:
    """Ranges of a block's checked feature columns (float64, integers of 32 bits or more,
    decimals; or of its target), before their cast to float32.

    ``positions`` are the columns' positions among the block's features (0 for a target);
    ``lo`` and ``hi`` their smallest and largest finite values (NaN for a column with
    none); ``inexact`` whether any value is not a float32 number (True where it was not
    checked: a column not narrow within the block).
    """

    positions: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    inexact: np.ndarray


def float32_step(magnitude: np.ndarray) -> np.ndarray:
    """Spacing of float32 numbers at each (non-negative, float64) ``magnitude``; infinite
    beyond float32's range."""
    m = np.minimum(np.asarray(magnitude, dtype=np.float64), FLOAT32_MAX)
    with np.errstate(over="ignore", invalid="ignore"):  # at float32's largest: infinite
        step = np.spacing(m.astype(np.float32)).astype(np.float64)
    return np.where(np.asarray(magnitude) <= FLOAT32_MAX, step, np.inf)


def narrow(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether values spanning ``lo .. hi`` (float64) are distinct but span fewer than
    :data:`NARROW_STEPS` float32 steps at their largest magnitude."""
    with np.errstate(invalid="ignore"):
        magnitude = np.maximum(np.abs(lo), np.abs(hi))
        spread = hi - lo
        return (
            np.isfinite(spread)
            & (spread > 0)
            & (magnitude <= FLOAT32_MAX)
            & (
                spread
                < NARROW_STEPS * float32_step(np.where(np.isfinite(magnitude), magnitude, 0.0))
            )
        )


def _finite_range(values: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest finite values along ``axis`` (NaN where there are none)."""
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(values)
        if finite.all():
            return np.min(values, axis=axis), np.max(values, axis=axis)
        lo = np.fmin.reduce(np.where(finite, values, np.nan), axis=axis)
        hi = np.fmax.reduce(np.where(finite, values, np.nan), axis=axis)
        return lo, hi


def checked_dtype(dtype: np.dtype) -> bool:
    """Whether the cast to float32 can round values of numpy ``dtype``: float64, and
    integers of 32 bits or more (float32 steps exceed 1 beyond 2**24)."""
    return dtype == np.float64 or (dtype.kind in "iu" and dtype.itemsize >= 4)


def _inexact(values: np.ndarray) -> bool:
    """Whether any finite value of a 1-D float64 or integer array is not a float32
    number."""
    values = values.astype(np.float64, copy=False)
    with np.errstate(over="ignore", invalid="ignore"):
        cast = values.astype(np.float32).astype(np.float64)
        return bool(np.any((cast != values) & np.isfinite(values)))


def matrix_spans(X: np.ndarray) -> Float64Spans | None:
    """The :class:`Float64Spans` of every column of a 2-D float64 or integer matrix (None
    for a dtype not :func:`checked_dtype`, or no rows)."""
    if not checked_dtype(X.dtype) or X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        return None
    lo, hi = _finite_range(X, axis=0)
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    inexact = np.ones(X.shape[1], dtype=bool)
    for j in np.flatnonzero(narrow(lo, hi)):
        inexact[j] = _inexact(X[:, j])
    return Float64Spans(
        np.arange(X.shape[1]),
        np.asarray(lo, dtype=np.float64),
        np.asarray(hi, dtype=np.float64),
        inexact,
    )


def column_spans(columns: Sequence[np.ndarray]) -> Float64Spans | None:
    """The :class:`Float64Spans` of the float64 and integer arrays among ``columns`` (a
    block's feature columns, in order; :func:`checked_dtype`), or None when there are
    none."""
    positions = [j for j, c in enumerate(columns) if checked_dtype(c.dtype) and c.shape[0]]
    if not positions:
        return None
    lo = np.empty(len(positions))
    hi = np.empty(len(positions))
    for k, j in enumerate(positions):
        a, b = _finite_range(columns[j])
        lo[k], hi[k] = a, b
    inexact = np.ones(len(positions), dtype=bool)
    for k in np.flatnonzero(narrow(lo, hi)):
        inexact[k] = _inexact(columns[positions[k]])
    return Float64Spans(np.asarray(positions, dtype=np.int64), lo, hi, inexact)


def coarse_columns(spans: Float64Spans) -> np.ndarray:
    """Positions (into ``spans``) of the coarse columns: narrow and not float32 already."""
    return np.flatnonzero(narrow(spans.lo, spans.hi) & spans.inexact)


def target_spans(y: np.ndarray) -> Float64Spans | None:
    """The :class:`Float64Spans` of a block's regression target, as read (position 0):
    float64 values, or integers as the float64 values they stand for; None for float32
    values (nothing is lost in their cast) or no rows."""
    if y.dtype.kind in "iu":
        y = y.astype(np.float64)
    return column_spans([y])


def coarse_message(name: str, lo: float, hi: float, where: str, role: str = "feature") -> str:
    """The warning's text for column ``name`` of ``where``, spanning ``lo .. hi``; ``role``
    is ``"feature"`` or ``"target"`` (a regression target: other advice)."""
    magnitude = max(abs(lo), abs(hi))
    step = float(float32_step(np.float64(magnitude)))
    said = (
        f"{role} {name!r} of {where} has values of magnitude "
        f"{magnitude:.7g} spread over only {hi - lo:.4g} (from {lo:.10g} to {hi:.10g}): "
        f"float32, in which the models compute, has steps of {step:.3g} there, so the "
        f"{'target' if role == 'target' else 'column'} keeps at most "
        f"{int((hi - lo) / step) + 2} distinct values"
    )
    if role == "target":
        return (
            f"{said}, and a regressor learns from those alone; subtract an offset from the "
            f"target, e.g. its mean (its values' midpoint is {(lo + hi) / 2:.10g}), and add "
            "it back to the predictions"
        )
    return (
        f"{said} and a model learns little or nothing from it; subtract an offset from the "
        f"column before streaming it (centre it, e.g. subtract {(lo + hi) / 2:.10g})"
    )


def warn_of_coarse_columns(
    spans: Float64Spans | None,
    names: Sequence[str],
    where: str,
    warned: set[str] | None = None,
    role: str = "feature",
) -> None:
    """Warn (``UserWarning``) once per coarse column of ``spans`` (see the module's rule).

    Parameters
    ----------
    spans : Float64Spans or None
        Ranges of the float64 columns (None: nothing to check).
    names : sequence of str
        Names of the columns ``spans.positions`` index.
    where : str
        The data, for the message.
    warned : set of str, optional
        Names already warned of, skipped (and added to).
    role : {"feature", "target"}
        What the columns are, for the message and its advice.
    """
    if spans is None:
        return
    for k in coarse_columns(spans):
        name = str(names[int(spans.positions[k])])
        if warned is not None:
            if name in warned:
                continue
            warned.add(name)
        warnings.warn(
            coarse_message(name, float(spans.lo[k]), float(spans.hi[k]), where, role),
            UserWarning,
            stacklevel=caller_stacklevel(),
        )


class ResolutionWatch:
    """The ranges of a dataset's float64 feature columns (or of its regression target) over
    every block read, merged.

    Blocks may be read by several threads at once: merging holds a lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lo: dict[int, float] = {}
        self._hi: dict[int, float] = {}
        self._inexact: dict[int, bool] = {}
        #: names of the columns already warned of
        self.warned: set[str] = set()

    def __getstate__(self) -> dict[str, object]:
        # shipped with its dataset (to dask workers): the lock stays behind
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def merge(self, spans: Float64Spans | None) -> None:
        """Widen the ranges by a block's."""
        if spans is None:
            return
        with self._lock:
            for j, lo, hi, inexact in zip(
                spans.positions.tolist(),
                spans.lo.tolist(),
                spans.hi.tolist(),
                spans.inexact.tolist(),
                strict=True,
            ):
                if np.isnan(lo):
                    continue
                self._lo[j] = min(self._lo.get(j, lo), lo)
                self._hi[j] = max(self._hi.get(j, hi), hi)
                self._inexact[j] = self._inexact.get(j, False) or inexact

    def spans(self) -> Float64Spans | None:
        """The merged ranges (None before any float64 column was read)."""
        with self._lock:
            if not self._lo:
                return None
            positions = sorted(self._lo)
            return Float64Spans(
                np.asarray(positions, dtype=np.int64),
                np.array([self._lo[j] for j in positions]),
                np.array([self._hi[j] for j in positions]),
                np.array([self._inexact[j] for j in positions], dtype=bool),
            )

    def warn(self, names: Sequence[str], where: str, role: str = "feature") -> None:
        """Warn of each coarse column not warned of before (see the module's rule);
        ``role``: as :func:`warn_of_coarse_columns`'s."""
        warn_of_coarse_columns(self.spans(), names, where, self.warned, role)
