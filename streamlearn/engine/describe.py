"""``DescribePass``: one reduction pass that summarises every feature and the target.

Per feature: count, mean, population standard deviation, minimum, maximum (exact, mergeable
moments) and quantiles read from a deterministic uniform row sample (rank error about
``1 / sqrt(sample_size)``, see :mod:`streamlearn.engine.row_sample`). The sampled rows are
kept in the result, e.g. to initialise k-means. Sample weights are not applied: the summary
describes the rows as stored, or with ``drop_zero_weight`` the rows of positive weight
(what a model fitted with those weights learns from: a row of weight 0 is no row).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from streamlearn.data.chunk import Chunk
from streamlearn.data.open import open_dataset
from streamlearn.engine.local import resolve_engine
from streamlearn.engine.moments import (
    Moments,
    chunk_moments,
    empty_moments,
    merge_moments,
    merge_observed_moments,
    observed_chunk_moments,
    sparse_chunk_moments,
)
from streamlearn.engine.row_sample import BottomKSample

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_PROBABILITIES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
#: Features shown by ``str(Description)``.
MAX_SHOWN_FEATURES = 30
#: Classes listed on the target line of ``str(Description)``.
MAX_SHOWN_CLASSES = 20


@dataclass
class DescribeState:
    """Partial summary of a set of chunks.

    Attributes
    ----------
    moments : Moments
        Feature moments.
    sample : BottomKSample
        Row sample.
    class_counts : ndarray of shape (n_classes,), int64, or None
        Rows per class code (classification).
    target : Moments or None
        Moments of a numeric target (regression), as a one-feature ``Moments``.
    """

    moments: Moments
    sample: BottomKSample
    class_counts: np.ndarray | None
    target: Moments | None
    rows: int = 0


def quantile_label(p: float) -> str:
    """Column name of the ``p`` quantile: 0.01 -> "q01", 0.5 -> "q50", 0.999 -> "q99.9"."""
    pct = 100.0 * float(p)
    if abs(pct - round(pct)) < 1e-9:
        return f"q{round(pct):02d}"
    return f"q{pct:g}"


def _finite_or_none(values: np.ndarray) -> list:
    return [float(v) if np.isfinite(v) else None for v in np.asarray(values, dtype=np.float64)]


def _none_to_nan(values: list) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


@dataclass
class Description:
    """Summary of a dataset computed by :class:`DescribePass`.

    Attributes
    ----------
    n_rows : int
    feature_names : list of str
    count : ndarray of shape (d,), int64
        Rows with a value, per feature (every row: chunks hold finite values only).
    mean, std : ndarray of shape (d,), float64
        Mean and population standard deviation (``ddof=0``).
    min, max : ndarray of shape (d,), float64
        Exact (values of the float32 data).
    probabilities : ndarray of shape (p,), float64
    quantiles : ndarray of shape (p, d), float64
        Quantiles of the row sample, linearly interpolated.
    sample : ndarray of shape (k, d), float32
        Uniform sample of ``k = min(sample_size, n_rows)`` rows, sorted by sampling key.
    sample_rows : ndarray of shape (k,), int64
        Global row ids of the sampled rows.
    class_counts : ndarray of shape (n_classes,), int64, or None
        Rows per class code, for classification.
    target_mean, target_std : float or None
        Mean and population standard deviation of a numeric target.
    class_labels : list or None
        Label of each class code, for display (set by :func:`describe` from the dataset).
    categories : dict of str to list, or None
        Category list of each string or categorical feature, whose statistics are those of
        its codes ``0 .. k-1`` (set by :func:`describe` from the dataset).
    """

    n_rows: int
    feature_names: list[str]
    count: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    min: np.ndarray
    max: np.ndarray
    probabilities: np.ndarray
    quantiles: np.ndarray
    sample: np.ndarray
    sample_rows: np.ndarray
    class_counts: np.ndarray | None = None
    target_mean: float | None = None
    target_std: float | None = None
    class_labels: list[Any] | None = None
    categories: dict[str, list[Any]] | None = None

    def _statistics(self) -> dict[str, np.ndarray]:
        """Per-feature statistics by name: count, mean, std, min, the quantiles, max."""
        columns: dict[str, np.ndarray] = {
            "count": self.count,
            "mean": self.mean,
            "std": self.std,
            "min": self.min,
        }
        for i, p in enumerate(self.probabilities):
            columns[quantile_label(p)] = self.quantiles[i]
        columns["max"] = self.max
        return columns

    def to_pandas(self) -> pd.DataFrame:
        """One row per feature; columns count, mean, std, min, the quantiles ("q01", ...), max."""
        import pandas as pd

        return pd.DataFrame(self._statistics(),
                            index=pd.Index(self.feature_names, name="feature"))

    def target_summary(self) -> str:
        """One line describing the target."""
        if self.class_counts is not None:
            counts = self.class_counts.tolist()
            labels = self.class_labels or list(range(len(counts)))
            shown = ", ".join(f"{labels[c]!r}: {n:,}"
                              for c, n in enumerate(counts[:MAX_SHOWN_CLASSES]))
            more = len(counts) - MAX_SHOWN_CLASSES
            if more > 0:
                shown += f", ... ({more} more)"
            kind = "class" if self.class_labels else "class code"
            n = f"{len(counts)} class{'' if len(counts) == 1 else 'es'}"
            return f"target: {n}, rows per {kind} {{{shown}}}"
        if self.target_mean is not None:
            return f"target: mean {self.target_mean:.6g}, std {self.target_std:.6g}"
        return "target: none"

    def __str__(self) -> str:
        columns = self._statistics()
        d = len(self.feature_names)
        header = ["feature", *columns]
        body = [
            [str(name), *(f"{int(v[j])}" if col == "count" else f"{float(v[j]):.4g}"
                          for col, v in columns.items())]
            for j, name in enumerate(self.feature_names[:MAX_SHOWN_FEATURES])
        ]
        widths = [max(len(r[j]) for r in [header, *body]) for j in range(len(header))]
        lines = [f"{self.n_rows} rows, {d} features"]
        for r in [header, *body]:
            cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:],
                                                                          strict=True)]
            lines.append("  ".join(cells))
        if d > MAX_SHOWN_FEATURES:
            lines.append(f"... {d - MAX_SHOWN_FEATURES} more features not shown")
        for name, values in (self.categories or {}).items():
            shown = ", ".join(repr(v) for v in values[:MAX_SHOWN_CLASSES])
            more = f", ... ({len(values) - MAX_SHOWN_CLASSES} more)" \
                if len(values) > MAX_SHOWN_CLASSES else ""
            lines.append(f"{name}: {len(values)} categories, coded 0..{len(values) - 1} "
                         f"[{shown}{more}]")
        lines.append(self.target_summary())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (lists, ints, floats, None for NaN); inverse of :meth:`from_dict`."""
        return {
            "n_rows": int(self.n_rows),
            "feature_names": [str(n) for n in self.feature_names],
            "count": [int(c) for c in self.count],
            "mean": _finite_or_none(self.mean),
            "std": _finite_or_none(self.std),
            "min": _finite_or_none(self.min),
            "max": _finite_or_none(self.max),
            "probabilities": [float(p) for p in self.probabilities],
            "quantiles": [_finite_or_none(q) for q in self.quantiles],
            "sample": [[float(v) for v in row] for row in self.sample],
            "sample_rows": [int(r) for r in self.sample_rows],
            "class_counts": (None if self.class_counts is None
                             else [int(c) for c in self.class_counts]),
            "target_mean": None if self.target_mean is None else float(self.target_mean),
            "target_std": None if self.target_std is None else float(self.target_std),
            "class_labels": (None if self.class_labels is None
                             else [v.item() if isinstance(v, np.generic) else v
                                   for v in self.class_labels]),
            "categories": (None if self.categories is None
                           else {str(k): [v.item() if isinstance(v, np.generic) else v
                                          for v in values]
                                 for k, values in self.categories.items()}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Description:
        """Rebuild a description from :meth:`to_dict` output."""
        d = len(data["feature_names"])
        p = len(data["probabilities"])
        quantiles = (np.array([_none_to_nan(q) for q in data["quantiles"]], dtype=np.float64)
                     .reshape(p, d))
        sample = np.array(data["sample"], dtype=np.float32).reshape(-1, d)
        counts = data.get("class_counts")
        return cls(
            n_rows=int(data["n_rows"]),
            feature_names=list(data["feature_names"]),
            count=np.array(data["count"], dtype=np.int64),
            mean=_none_to_nan(data["mean"]),
            std=_none_to_nan(data["std"]),
            min=_none_to_nan(data["min"]),
            max=_none_to_nan(data["max"]),
            probabilities=np.array(data["probabilities"], dtype=np.float64),
            quantiles=quantiles,
            sample=np.ascontiguousarray(sample),
            sample_rows=np.array(data["sample_rows"], dtype=np.int64),
            class_counts=None if counts is None else np.array(counts, dtype=np.int64),
            target_mean=data.get("target_mean"),
            target_std=data.get("target_std"),
            class_labels=data.get("class_labels"),
            categories=data.get("categories"),
        )


class DescribePass:
    """Reduction pass computing a :class:`Description` of the features and the target.

    Parameters
    ----------
    feature_names : list of str
    probabilities : sequence of float
        Quantiles to estimate, each in [0, 1].
    sample_size : int, default 4096
        Rows in the uniform sample the quantiles come from.
    seed : int, default 0
        Selects the sample; the result does not depend on chunking or merge order.
    n_classes : int, optional
        For classification targets (int32 class codes): count rows per class.
        Without it an integer target is an error and a float target is summarised by its
        mean and standard deviation.
    sparse : bool
        The chunks hold CSR rows: moments and quantiles count the entries not stored as
        zeros, and the row sample is kept as CSR rows
        (:class:`~streamlearn.data.sparse_rows.SparseRows`).
    drop_zero_weight : bool, default False
        Leave the rows of sample weight 0 out of every statistic (moments, row sample,
        class counts, target): the summary is then the same as that of the data without
        them. Positive weights are not applied either way: each row of positive weight
        counts once (the statistics say where rows lie, e.g. for a feature map's ranges
        and knots, and the row sample is uniform over rows).
    missing : bool, default False
        The dense rows may hold NaN, missing values (``nan_policy="impute"``): each
        feature's count, moments and quantiles are those of its values that are there.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(
        self,
        feature_names: list[str],
        *,
        probabilities: tuple[float, ...] | list[float] = DEFAULT_PROBABILITIES,
        sample_size: int = 4096,
        seed: int = 0,
        n_classes: int | None = None,
        sparse: bool = False,
        drop_zero_weight: bool = False,
        missing: bool = False,
    ) -> None:
        # a sparse source's numbered names stay unlisted
        self.feature_names = feature_names if sparse else list(feature_names)
        self.sparse = bool(sparse)
        self.drop_zero_weight = bool(drop_zero_weight)
        self.missing = bool(missing) and not self.sparse
        self.probabilities = np.asarray(probabilities, dtype=np.float64).reshape(-1)
        if np.any((self.probabilities < 0) | (self.probabilities > 1)):
            raise ValueError(f"probabilities must lie in [0, 1], got {list(probabilities)}")
        if sample_size < 1:
            raise ValueError(f"sample_size must be at least 1, got {sample_size}")
        if n_classes is not None and n_classes < 1:
            raise ValueError(f"n_classes must be at least 1, got {n_classes}")
        self.sample_size = int(sample_size)
        self.seed = int(seed)
        self.n_classes = n_classes

    def __repr__(self) -> str:
        return (f"DescribePass({len(self.feature_names)} features, "
                f"sample_size={self.sample_size}, seed={self.seed}, n_classes={self.n_classes})")

    def start(self) -> DescribeState:
        """Empty state."""
        d = len(self.feature_names)
        counts = None if self.n_classes is None else np.zeros(self.n_classes, dtype=np.int64)
        return DescribeState(empty_moments(d),
                             BottomKSample(self.sample_size, d, self.seed, self.sparse),
                             counts, None)

    def step(self, state: DescribeState, chunk: Chunk) -> DescribeState:
        """Fold one chunk into ``state`` (in place)."""
        X = chunk.X
        if len(X.shape) != 2 or X.shape[1] != len(self.feature_names) \
                or chunk.is_sparse != self.sparse:
            form = ("dense", "sparse")
            raise ValueError(f"chunk has shape {X.shape} ({form[chunk.is_sparse]}), expected "
                             f"(n, {len(self.feature_names)}) ({form[self.sparse]})")
        if self.drop_zero_weight and chunk.weight is not None:
            positive = np.asarray(chunk.weight) > 0
            if not positive.all():
                chunk = chunk.select(positive)
                X = chunk.X
        if self.missing:  # per-feature counts (a chunk without a gap: the fast sweep)
            state.rows += chunk.n_rows
            moments = (observed_chunk_moments(X) if np.isnan(X).any()
                       else Moments(*chunk_moments(X)))
            state.moments = merge_observed_moments(state.moments, moments)
        else:
            moments = (sparse_chunk_moments(*X.kernel_args, X.n_cols) if chunk.is_sparse
                       else chunk_moments(X))
            state.moments = merge_moments(state.moments, moments)
        state.sample.update(X, chunk.rows)
        y = chunk.y
        if y is None:
            return state
        if self.n_classes is not None:
            codes = np.asarray(y)
            if codes.dtype.kind not in "iu":
                raise ValueError(f"n_classes is set but the target has dtype {codes.dtype}; "
                                 "expected integer class codes")
            if codes.size and (codes.min() < 0 or codes.max() >= self.n_classes):
                raise ValueError(f"class codes must lie in [0, {self.n_classes}), "
                                 f"got values in [{codes.min()}, {codes.max()}] "
                                 f"in the chunk starting at row {chunk.start}")
            assert state.class_counts is not None
            state.class_counts += np.bincount(codes, minlength=self.n_classes)
        elif np.asarray(y).dtype.kind == "f":
            column = np.ascontiguousarray(np.asarray(y, dtype=np.float32).reshape(-1, 1))
            previous = state.target if state.target is not None else empty_moments(1)
            state.target = merge_moments(previous, chunk_moments(column))
        else:
            raise ValueError(f"target has dtype {np.asarray(y).dtype}: pass n_classes to count "
                             "class codes, or give a float target")
        return state

    def merge(self, a: DescribeState, b: DescribeState) -> DescribeState:
        """Combine the states of two disjoint sets of chunks (a new state)."""
        if a.target is None:
            target = b.target
        elif b.target is None:
            target = a.target
        else:
            target = merge_moments(a.target, b.target)
        counts = None
        if a.class_counts is not None and b.class_counts is not None:
            counts = a.class_counts + b.class_counts
        merge = merge_observed_moments if self.missing else merge_moments
        return DescribeState(merge(a.moments, b.moments), a.sample.merge(b.sample),
                             counts, target, a.rows + b.rows)

    def finish(self, state: DescribeState) -> Description:
        """Turn the state into a :class:`Description`."""
        m = state.moments
        d = len(self.feature_names)
        n = state.rows if self.missing else int(m.count)
        count = np.broadcast_to(np.asarray(m.count, dtype=np.int64), (d,)).copy()
        seen = count > 0
        mean = np.where(seen, m.mean, np.nan)
        std = np.where(seen, np.sqrt(np.maximum(m.m2, 0.0) / np.maximum(count, 1)), np.nan)
        lo = np.where(seen, m.minimum.astype(np.float64), np.nan)
        hi = np.where(seen, m.maximum.astype(np.float64), np.nan)
        target_mean = target_std = None
        if state.target is not None and state.target.count > 0:
            target_mean = float(state.target.mean[0])
            target_std = float(np.sqrt(max(state.target.m2[0], 0.0) / state.target.count))
        return Description(
            n_rows=n,
            feature_names=self.feature_names if self.sparse else list(self.feature_names),
            count=count,
            mean=mean,
            std=std,
            min=lo,
            max=hi,
            probabilities=self.probabilities.copy(),
            quantiles=state.sample.quantiles(self.probabilities, missing=self.missing),
            sample=(state.sample.values if self.sparse else state.sample.values.copy()),
            sample_rows=state.sample.rows.copy(),
            class_counts=None if state.class_counts is None else state.class_counts.copy(),
            target_mean=target_mean,
            target_std=target_std,
        )


def describe(
    data: Any,
    *,
    engine: Any = None,
    probabilities: tuple[float, ...] | list[float] = DEFAULT_PROBABILITIES,
    sample_size: int = 4096,
    seed: int = 0,
) -> Description:
    """Stream ``data`` once and summarise every feature and the target.

    Parameters
    ----------
    data : Dataset or anything ``open_dataset`` accepts
    engine : engine, optional
        Runs the pass; a ``LocalEngine`` by default.
    probabilities, sample_size, seed
        See :class:`DescribePass`.

    Returns
    -------
    Description
        Exact count/mean/std/min/max per feature, approximate quantiles from a uniform row
        sample (rank error about ``1/sqrt(sample_size)``), and class counts or target moments.
        A dataset opened with ``nan_policy="impute"`` is summarised over the values that
        are there: each feature's count is that of its values that are not missing.

    Examples
    --------
    >>> print(describe(open_dataset("train.parquet", target="label")))  # doctest: +SKIP
    """
    dataset = open_dataset(data)
    summary_pass = DescribePass(
        dataset.feature_names, probabilities=probabilities, sample_size=sample_size,
        seed=seed, n_classes=dataset.schema.n_classes, sparse=dataset.is_sparse,
        missing=dataset.nan_policy == "impute",
    )
    summary: Description = resolve_engine(engine).run(summary_pass, dataset,
                                                      description="describe")
    if dataset.classes is not None:
        summary.class_labels = dataset.classes.tolist()
    if dataset.categories:
        summary.categories = {name: list(values) for name, values in dataset.categories.items()}
    return summary
