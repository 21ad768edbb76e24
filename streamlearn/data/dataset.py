"""``Dataset``: a validated, chunked view of a source that streams ``Chunk``s."""

from __future__ import annotations

import copy
import os
import warnings
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from streamlearn.data.categories import (
    LEAVE_OUT,
    category_index,
    plain_categories,
    sorted_categories,
)
from streamlearn.data.chunk import Chunk, writeable, writeable_rows
from streamlearn.data.labels import consecutive_codes
from streamlearn.data.large_buffers import map_large_buffers
from streamlearn.data.precision import ResolutionWatch, target_spans
from streamlearn.data.prefetch import prefetched, prefetched_map
from streamlearn.data.readahead import FileRange, ReadAhead
from streamlearn.data.row_mixing import group_sizes, mix_group_size, mixed_chunks
from streamlearn.data.schema import Schema, Task
from streamlearn.data.sources.base import (
    Block,
    ColumnKind,
    NumberedNames,
    Source,
    labels_are_names,
)
from streamlearn.data.sparse_rows import SparseRows, first_bad_entry
from streamlearn.data.validation import (
    NanPolicy,
    fill_nonfinite,
    finite_rows,
    first_infinite,
    first_nonfinite,
    missing_labels,
    nonfinite_value,
)
from streamlearn.errors import DataError, LabelError, MissingValueError, SchemaError
from streamlearn.warning_origin import caller_stacklevel

#: Bytes of float32 features per chunk when no ``chunk_rows`` is given.
DEFAULT_CHUNK_BYTES = 16 << 20
#: A classification target with more distinct values than this is almost surely continuous.
MAX_CLASSES = 10_000

#: How to get past missing feature values, in the errors that find them: the option is
#: open_dataset's, fit's (in-memory data) and the command line's.
NAN_POLICY_HINT = ("nan_policy='impute' (to fit, open_dataset or the command's --nan-policy) "
                   "to read them as missing values, nan_policy='drop' to skip such rows, "
                   "or nan_policy=<number> to fill them")
#: The same for missing labels, which only dropping their rows gets past.
LABEL_NAN_HINT = ("nan_policy='drop' (to open_dataset, fit or the command's --nan-policy) to "
                  "skip such rows")


#: :meth:`Dataset.content_digest` reads this many blocks of rows ...
DIGEST_BLOCKS = 16
#: ... of this many rows each.
DIGEST_BLOCK_ROWS = 256


class FeatureTransform(Protocol):
    """What :meth:`Dataset.with_feature_transform` takes."""

    def apply(self, X: np.ndarray) -> np.ndarray:
        """A chunk's (n, d) float32 feature values, mapped (a new array)."""
        ...


class FeatureExpansion(Protocol):
    """What :meth:`Dataset.with_feature_expansion` takes: a map to other columns."""

    #: Names of the columns ``apply`` returns.
    feature_names: tuple[str, ...]
    #: The input columns ``apply`` replaces (categorical codes): ``nan_policy=<number>``
    #: leaves their missing values to it, which maps them to no indicator.
    columns: tuple[int, ...]

    def apply(self, X: np.ndarray) -> np.ndarray:
        """A chunk's (n, d) float32 feature values as (n, len(feature_names)) values."""
        ...

    def indicator_columns(self) -> tuple[int, ...]:
        """The returned columns that are 0/1 indicators."""
        ...

    def source_columns(self) -> np.ndarray:
        """The input column of each returned column."""
        ...


@dataclass(frozen=True)
class ChainedTransform:
    """Two feature maps, ``first`` then ``second``."""

    first: FeatureTransform
    second: FeatureTransform

    def apply(self, X: np.ndarray) -> np.ndarray:
        """``second.apply(first.apply(X))``."""
        return self.second.apply(self.first.apply(X))


def default_chunk_rows(n_features: int) -> int:
    """Rows per chunk so that a chunk's features take about ``DEFAULT_CHUNK_BYTES``, a
    multiple of 1,024 between 1,024 and ``1 << 20`` (fewer bytes below 4 features, more
    beyond 4,096)."""
    rows = DEFAULT_CHUNK_BYTES // (4 * max(n_features, 1))
    return int(max(1024, min(rows, 1 << 20)) // 1024 * 1024)


class Dataset:
    """Rows of a source, validated and cut into chunks of a requested size.

    Build one with :func:`streamlearn.open_dataset`. A dataset knows its schema from metadata
    (rows, feature names, target) and reads rows only while iterating. Chunk boundaries are
    global row ranges ``[k * chunk_rows, (k + 1) * chunk_rows)``, independent of how the store
    is split into files, row groups or zarr chunks.

    Memory while iterating is at most ``(prefetch + 1)`` chunks, plus, where the source is
    read piece by piece, the storage piece (a parquet row group) being cut and up to
    ``prefetch`` pieces read ahead of it, concurrently. A zarr store is read by row range:
    each chunk is one read, and with ``prefetch`` the next chunks are read concurrently.
    For local files the operating system is asked to read the next chunks' bytes from disk
    ahead of the readers (:mod:`streamlearn.data.readahead`).

    A chunk's values are checked for NaN and infinities (``nan_policy``) when its rows are
    first read. A fit reads the same chunks pass after pass; a range of rows found finite
    is not checked again, so the source must not change while the dataset is in use.

    String and categorical feature columns are delivered as float32 category codes
    ``0 .. k-1`` (see :attr:`categories` and :mod:`streamlearn.data.categories`): missing
    values become NaN (handled by ``nan_policy``), and a value outside a category list given
    in advance (``categories=``) gets the reserved code ``k``.
    """

    def __init__(
        self,
        source: Source,
        *,
        features: Sequence[str] | None = None,
        exclude: Sequence[str] | None = (),
        target: str | None = None,
        weight: str | None = None,
        task: Task | None = None,
        classes: Sequence[Any] | None = None,
        chunk_rows: int | None = None,
        nan_policy: NanPolicy = "raise",
        prefetch: int = 2,
        categories: Mapping[str, Sequence[Any]] | None = None,
    ) -> None:
        exclude = () if exclude is None else exclude
        self.source = source
        self._task_given = task
        columns = list(source.columns)
        for role, name in (("target", target), ("weight", weight)):
            if name is not None and name not in source.kinds:
                raise SchemaError(
                    f"{role} column {name!r} not found in {source.description}; "
                    f"columns are {_listing(columns)}{_set_aside(source, [name])}"
                )
        self.is_sparse = bool(getattr(source, "sparse", False))
        if self.is_sparse:
            features = _sparse_features(source, features, exclude)
        unknown_excluded = [c for c in exclude if c not in source.kinds]
        if unknown_excluded:
            raise SchemaError(
                f"exclude names column(s) {unknown_excluded} not in {source.description}; "
                f"columns are {_listing(columns)}"
            )
        inferred = features is None
        if features is None:
            # A matrix layout (zarr ``X``) names its features; other arrays are not features.
            candidates = getattr(source, "default_features", None) or columns
            features = [c for c in candidates if c not in (target, weight) and c not in exclude]
        features = features if self.is_sparse else list(features)
        missing = [] if self.is_sparse else [f for f in features if f not in source.kinds]
        if missing:
            raise SchemaError(
                f"feature column(s) {missing} not found in {source.description}; "
                f"columns are {_listing(columns)}{_set_aside(source, missing)}"
            )
        if not self.is_sparse and len(set(features)) != len(features):
            raise SchemaError(f"features lists a column more than once: {features}")
        for role, name in (("target", target), ("weight", weight)):
            if name is not None and name in features:
                raise SchemaError(f"{role} column {name!r} is also listed as a feature")
        fixed = {f: plain_categories(c) for f, c in (categories or {}).items() if f in features}
        # columns a store holds as codes into its own category lists (``convert``'s output)
        stored = {} if self.is_sparse else {
            f: plain_categories(c) for f, c in getattr(source, "coded_categories", {}).items()
            if f in features}
        for f in sorted(set(fixed) & set(stored)):
            if fixed[f] != stored[f]:
                raise SchemaError(
                    f"column {f!r} of {source.description} holds codes into the categories "
                    f"{_listing(list(stored[f]))}, not into the {_listing(list(fixed[f]))} "
                    "asked for (a model's); convert the data again with those categories")
        encodes = hasattr(source, "read_categories")
        coded = [] if self.is_sparse else [
            f for f in features if f in fixed or f in stored or (encodes and source.kinds[f] in (
                ColumnKind.STRING, ColumnKind.CATEGORICAL))]
        if set(fixed) - set(stored) and not encodes:
            raise SchemaError(f"{source.description} holds numbers only; it has no "
                              f"categorical columns {sorted(set(fixed) - set(stored))}")
        bad = {} if self.is_sparse else {f: source.kinds[f].value for f in features
                                         if not source.kinds[f].is_numeric and f not in coded}
        if bad:
            raise SchemaError(
                f"non-numeric feature column(s) in {source.description}: "
                + ", ".join(f"{k!r} ({v})" for k, v in bad.items())
                + "; encode them as numbers first, or " + LEAVE_OUT.replace(" it ", " them ")
                + ("" if encodes else " (string columns are coded as categories only in "
                   "tables: pandas, polars, pyarrow, parquet, dask DataFrames)")
            )
        if weight is not None and not source.kinds[weight].is_numeric:
            raise SchemaError(f"weight column {weight!r} is {source.kinds[weight].value}, "
                              "not numeric")
        if not features:
            raise SchemaError(f"no feature columns left in {source.description}")
        # a table's columns labelled by other things than strings (pandas' 0, 1, ...) are
        # unnamed, as scikit-learn reads them; a mix of both is refused
        labels = getattr(source, "unnamed_columns", {})
        self._unnamed = bool(getattr(source, "unnamed_features", False)) or (
            not self.is_sparse and bool(labels)
            and not labels_are_names([labels.get(f, f) for f in features]))
        check = getattr(source, "check_columns", None)
        if check is not None:
            needed = [*features, *(c for c in (target, weight) if c is not None)]
            check(needed, every_column=inferred)

        self.n_rows = int(sum(p.n_rows for p in source.pieces))
        if self.n_rows == 0:
            raise DataError(f"{source.description} has no rows")
        # a sparse source's columns stay numbered, not listed (there may be millions)
        self.feature_names: Sequence[str] = features if self.is_sparse else tuple(features)
        self.target = target
        self.weight = weight
        self.task = _task(task, target, source.kinds.get(target) if target else None)
        self.nan_policy = nan_policy
        _check_prefetch(prefetch)
        self.prefetch = int(prefetch)
        self._coded_features = tuple(coded)
        # the coded columns the source codes as it reads them (not those stored as codes)
        self._encoded_features = tuple(f for f in coded if f not in stored)
        # what reads are given: a sparse source reads all its columns (and ignores this)
        self._read_features: list[str] | None = None if self.is_sparse else list(features)
        self._fixed_categories = {**fixed, **stored}
        self._categories: dict[str, tuple[Any, ...]] | None = None
        self._category_indexes: dict[str, Any] | None = None
        _check_chunk_rows(chunk_rows)
        self.chunk_rows = int(chunk_rows) if chunk_rows else default_chunk_rows(
            _stored_per_row(source, len(features), self.n_rows))
        self._offsets = np.cumsum([0] + [p.n_rows for p in source.pieces])
        # row ranges [a, b) whose values were all finite when read before (see _chunk)
        self._finite_ranges: set[tuple[int, int]] = set()
        # ranges of the float64, integer and decimal feature columns read, before their
        # cast to float32
        self._resolution = ResolutionWatch()
        # and of a float64 (or integer) regression target, before its cast
        self._target_resolution = ResolutionWatch()
        # blocks of rows every pass leaves out (see without_blocks): sorted ids, block size
        self._excluded: tuple[np.ndarray, int] | None = None
        # maps every chunk's feature values (see with_feature_transform)
        self._feature_transform: FeatureTransform | None = None
        # the 0/1 indicator columns among the features (see with_feature_expansion)
        self.indicator_features: tuple[int, ...] = ()
        # whether every map of _feature_transform is an expansion, which a further
        # expansion may follow (the missing-value indicators, then the categories')
        self._only_expansions = False
        #: The map of missing values these rows are read through (with_missing_values).
        self.missing_values: FeatureExpansion | None = None
        # multiplies every row's weight by its class's factor (see with_class_weight)
        self._class_factors: np.ndarray | None = None
        self._classes: np.ndarray | None = None
        # classes a stream must hold: two to train on; one where it is scored or written
        # (with_classes_of), and a store that records one class opens to say so
        self._fewest_classes = 2
        if self.task == "classification":
            if classes is not None:
                self._classes = _sorted_classes(np.asarray(classes), target)
            else:
                known = source.known_classes(target)  # type: ignore[arg-type]
                if known is not None:
                    self._classes = _sorted_classes(known, target, fewest=1)

    # ------------------------------------------------------------------ schema
    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return len(self.feature_names)

    @property
    def named_features(self) -> bool:
        """Whether ``feature_names`` are the data's own column names (a table's, a file's),
        rather than the names ``x0, x1, ...`` given to the columns of an array, a sparse
        matrix or an svmlight file, which a model fitted on them does not expose as
        ``feature_names_in_`` (scikit-learn's rule)."""
        return not (isinstance(self.feature_names, NumberedNames) or self._unnamed)

    @property
    def classes(self) -> np.ndarray | None:
        """Sorted class labels; discovered by one scan of the target column if not recorded."""
        if self.task != "classification":
            return None
        if self._classes is None:
            self._classes = _sorted_classes(self._scan_labels(), self.target, fewest=1)
            _warn_if_identifier(self._classes, self.n_rows, self.target)
        if len(self._classes) < self._fewest_classes:
            _sorted_classes(self._classes, self.target)  # the error that names them
        return self._classes

    def class_labels(self) -> np.ndarray | None:
        """The target's sorted labels, however few: :attr:`classes` where known, else one
        scan of the target column. A classifier trains on two classes or more
        (:attr:`classes` refuses fewer); writing or scoring the rows takes one.

        Returns
        -------
        ndarray or None
            None when the target is not a class label.
        """
        if self.task != "classification":
            return None
        if self._classes is None:
            self._classes = _sorted_classes(self._scan_labels(), self.target, fewest=1)
        return self._classes

    @property
    def categories(self) -> dict[str, tuple[Any, ...]]:
        """Category list of each string or categorical feature column (name -> values).

        ``Chunk.X`` holds the position of a value in its column's list, as float32.
        Lists come from ``categories=`` when given, else from the schema (a pandas or dask
        ``category`` column), else from one scan of those columns, sorted. Numeric feature
        columns are not listed.
        """
        if self._categories is None:
            self._categories = self._resolve_categories()
        return self._categories

    def _resolve_categories(self) -> dict[str, tuple[Any, ...]]:
        found: dict[str, tuple[Any, ...]] = {}
        to_scan: list[str] = []
        for name in self._coded_features:
            if name in self._fixed_categories:
                found[name] = self._fixed_categories[name]
                continue
            known = self.source.known_categories(name)  # type: ignore[attr-defined]
            if known is not None:
                found[name] = plain_categories(known)
            else:
                to_scan.append(name)
        if to_scan:
            seen: dict[str, set[Any]] = {name: set() for name in to_scan}
            for i in range(len(self.source.pieces)):
                values = self.source.read_categories(i, to_scan)  # type: ignore[attr-defined]
                for name in to_scan:
                    seen[name].update(values[name])
            for name in to_scan:
                found[name] = sorted_categories(seen[name], name, self.source.description,
                                                self.n_rows)
        return {name: found[name] for name in self._coded_features}

    def _indexes(self) -> dict[str, Any] | None:
        """Category lookups handed to the source's reads (None without coded columns)."""
        if not self._encoded_features:
            return None
        if self._category_indexes is None:
            categories = self.categories
            self._category_indexes = {name: category_index(categories[name])
                                      for name in self._encoded_features}
        return self._category_indexes

    def __getstate__(self) -> dict[str, Any]:
        # Shipped (e.g. to dask workers) with its category lists resolved, so that no
        # receiving process scans the columns again.
        if self._coded_features:
            _ = self.categories
            self._indexes()
        return self.__dict__.copy()

    def with_task(self, task: Task) -> Dataset:
        """The same rows and columns, with the target read for ``task``.

        Parameters
        ----------
        task : {"classification", "regression"}

        Returns
        -------
        Dataset
        """
        return self._reopened(task=task, categories=self.categories)

    def with_categories(self, categories: Mapping[str, Sequence[Any]]) -> Dataset:
        """The same rows, with categorical features coded by the given category lists.

        Used to code new data as a model's training data was coded (its ``categories_``):
        a value outside a list gets the reserved code ``len(list)``.

        Parameters
        ----------
        categories : mapping of str to sequence
            Feature name -> categories.

        Returns
        -------
        Dataset
            ``self`` when the lists are already those.
        """
        wanted = {name: plain_categories(values) for name, values in categories.items()}
        if all(self.categories.get(name) == values for name, values in wanted.items()
               if name in self.feature_names):
            return self
        return self._reopened(task=self._task_given, categories={**self.categories, **wanted})

    def without_blocks(self, blocks: Sequence[int] | np.ndarray, block_rows: int) -> Dataset:
        """The same dataset with some blocks of consecutive rows left out of every pass.

        Block ``b`` holds the rows ``b * block_rows`` to ``(b + 1) * block_rows - 1``. A chunk
        whose rows all lie in left-out blocks is not read; any other chunk loses the rows
        that do. Row ids, ``n_rows`` and ``n_chunks`` stay those of the whole dataset, so
        per-row state sized by ``n_rows`` (:class:`~streamlearn.data.ExampleState`) applies
        unchanged. Used to train on the rows outside a held-out set.

        Parameters
        ----------
        blocks : sequence of int
            Ids of the blocks to leave out.
        block_rows : int
            Rows per block.

        Returns
        -------
        Dataset
        """
        if int(block_rows) < 1:
            raise ValueError(f"block_rows must be a positive number of rows, got {block_rows}")
        ids = np.unique(np.asarray(blocks, dtype=np.int64))
        if ids.size and (ids[0] < 0 or ids[-1] * int(block_rows) >= self.n_rows):
            raise ValueError(f"blocks {ids.tolist()} of {block_rows} rows are not all among "
                             f"the dataset's {self.n_rows} rows")
        if self._excluded is not None:
            raise ValueError("the dataset already leaves out blocks of rows")
        out = copy.copy(self)
        out._excluded = (ids, int(block_rows))
        return out

    def with_feature_transform(self, transform: FeatureTransform) -> Dataset:
        """The same rows, every chunk's feature values passed through ``transform``.

        Used by a model that trains on mapped features (a
        :class:`~streamlearn.features.tail_transform.TailTransform`, a standardisation):
        each pass reads the rows as stored and maps them as they are cut into chunks,
        after the checks for missing values. On a dataset that already maps its features,
        ``transform`` applies after that map.

        Parameters
        ----------
        transform : object with ``apply(X) -> ndarray``
            Maps a chunk's (n, d) float32 values to new (n, d) float32 values. On sparse
            rows, a map that sends 0 to 0 (``keeps_zeros`` true) and whose ``apply`` also
            takes and returns :class:`~streamlearn.data.sparse_rows.SparseRows`.

        Returns
        -------
        Dataset
        """
        if self.is_sparse and (self._feature_transform is not None
                               or not getattr(transform, "keeps_zeros", False)):
            raise ValueError("a feature transform of sparse rows must send 0 to 0 (a "
                             "scale): mapping only their stored values would leave their "
                             "zeros as they are")
        out = copy.copy(self)
        out._feature_transform = (transform if self._feature_transform is None
                                  else ChainedTransform(self._feature_transform, transform))
        out._only_expansions = False
        return out

    def with_feature_expansion(self, expansion: FeatureExpansion) -> Dataset:
        """The same rows, every chunk's feature values mapped to other columns.

        Like :meth:`with_feature_transform`, for a map that changes the columns (the
        indicator columns of categorical features,
        :class:`~streamlearn.features.category_indicators.CategoryIndicators`): the
        dataset's :attr:`feature_names` become the map's, and :attr:`indicator_features`
        lists its indicator columns. The source's columns are read, checked and coded as
        before (their categories stay :attr:`categories`); a column a name no longer
        names is then mapped. An expansion may follow another (the categories' after the
        missing values', :meth:`with_missing_values`): the indicator columns of the first
        stay marked where the second puts them (it then needs ``source_columns()``).

        Parameters
        ----------
        expansion : object with ``feature_names``, ``apply(X)`` and ``indicator_columns()``
            Maps a chunk's (n, n_features) float32 values to (n, len(feature_names)).

        Returns
        -------
        Dataset
        """
        if self.is_sparse:
            raise ValueError("a feature expansion applies to dense rows only")
        expanded = self._feature_transform is not None and self._only_expansions
        if self._feature_transform is not None and not expanded:
            raise ValueError("expand the columns before any other feature map")
        indicators = set(expansion.indicator_columns())
        if expanded and self.indicator_features:  # an earlier expansion's indicators
            source = np.asarray(expansion.source_columns())
            indicators.update(int(i) for i in
                              np.flatnonzero(np.isin(source, self.indicator_features)))
        out = self.with_feature_transform(expansion)
        out.feature_names = tuple(expansion.feature_names)
        out.indicator_features = tuple(sorted(indicators))
        out._only_expansions = True
        return out

    def with_missing_values(self, missing: FeatureExpansion) -> Dataset:
        """The same rows read through a map of missing values
        (:class:`~streamlearn.features.missing_values.MissingValues`, learned on these rows
        under ``nan_policy="impute"``): an expansion, kept as :attr:`missing_values` so
        that a model fitted on the rows reads new ones the same way.

        Parameters
        ----------
        missing : MissingValues

        Returns
        -------
        Dataset
        """
        if self.nan_policy != "impute":
            raise ValueError("missing values are read through a map under "
                             f"nan_policy='impute' only, not {self.nan_policy!r}")
        out = self.with_feature_expansion(missing)
        out.missing_values = missing
        return out

    def with_class_weight(self, factors: Sequence[float] | np.ndarray) -> Dataset:
        """The same rows, each row's weight multiplied by its class's factor.

        Chunks then always carry weights: ``factors[y]`` times the sample weight (1 without
        a weight column). Used by classifiers' ``class_weight``.

        Parameters
        ----------
        factors : sequence of float
            One finite non-negative factor per class of :attr:`classes`, in their order.

        Returns
        -------
        Dataset
        """
        if self.task != "classification" or self.classes is None:
            raise ValueError("class weights need a classification target")
        factors = np.asarray(factors, dtype=np.float32).reshape(-1)
        if factors.shape != (len(self.classes),):
            raise ValueError(f"{factors.size} class weight factors for "
                             f"{len(self.classes)} classes")
        if not (np.isfinite(factors).all() and (factors >= 0).all()):
            raise ValueError(f"class weights must be finite and non-negative, got "
                             f"{factors.tolist()}")
        out = copy.copy(self)
        out._class_factors = factors
        return out

    def _class_weighted(self, y: np.ndarray | None, w: np.ndarray | None) -> np.ndarray | None:
        """A chunk's weights times its rows' class factors (``w`` itself without them)."""
        if self._class_factors is None or y is None:
            return w
        factor = self._class_factors[y]
        return factor if w is None else (factor * w).astype(np.float32, copy=False)

    @property
    def class_factors(self) -> np.ndarray | None:
        """The factors :meth:`with_class_weight` multiplies each class's rows' weights by
        (float32, in the order of ``classes``), or None."""
        return self._class_factors

    @property
    def weighted(self) -> bool:
        """Whether chunks carry row weights: a weight column, or class weights."""
        return self.weight is not None or self._class_factors is not None

    @property
    def in_memory(self) -> bool:
        """Whether the rows are held in this process's memory (numpy arrays, pandas and
        pyarrow tables, scipy matrices: the source's ``in_memory``), so that reading a few
        rows anywhere costs a slice, not the read of a stored chunk."""
        return bool(getattr(self.source, "in_memory", False))

    @property
    def leaves_out_blocks(self) -> bool:
        """Whether blocks of rows are left out of every pass (:meth:`without_blocks`)."""
        return self._excluded is not None

    def _kept_rows(self, rows: np.ndarray) -> np.ndarray | None:
        """Mask of ``rows`` (global ids) outside the left-out blocks, None when all are."""
        if self._excluded is None:
            return None
        ids, block = self._excluded
        keep = ~np.isin(rows // block, ids)
        return None if keep.all() else keep

    def _chunk_starts_kept(self, starts: np.ndarray, size: int, hi: int) -> np.ndarray:
        """The chunk starts with at least one row outside the left-out blocks."""
        if self._excluded is None or starts.size == 0:
            return starts
        ids, block = self._excluded
        out = np.zeros(-(-self.n_rows // block) + 1, dtype=np.int64)
        out[ids + 1] = 1
        left_out = np.cumsum(out)  # left_out[b]: left-out blocks before block b
        first = starts // block
        last = (np.minimum(starts + size, hi) - 1) // block
        return starts[left_out[last + 1] - left_out[first] < last - first + 1]

    def _reopened(self, *, task: Task | None,
                  categories: Mapping[str, Sequence[Any]]) -> Dataset:
        classes = self._classes if task == self.task else None
        out = Dataset(self.source, features=None if self.is_sparse else self._read_features,
                      target=self.target,
                      weight=self.weight, task=task, classes=classes,
                      chunk_rows=self.chunk_rows, nan_policy=self.nan_policy,
                      prefetch=self.prefetch, categories=categories)
        out._excluded = self._excluded
        out._resolution = self._resolution
        out._target_resolution = self._target_resolution
        out._feature_transform = self._feature_transform
        out.feature_names = self.feature_names
        out.indicator_features = self.indicator_features
        out._only_expansions = self._only_expansions
        out.missing_values = self.missing_values
        out._class_factors = self._class_factors if task == self.task else None
        return out

    @property
    def task_inferred(self) -> bool:
        """Whether the task was read from the target's type rather than given."""
        return self._task_given is None

    @property
    def schema(self) -> Schema:
        """The dataset's :class:`Schema` (resolves ``classes`` if needed)."""
        return Schema(
            n_rows=self.n_rows,
            feature_names=self.feature_names,
            target=self.target,
            task=self.task,
            classes=self.classes,
            weight=self.weight,
            source=self.source.description,
            categories=self.categories,
        )

    @property
    def n_chunks(self) -> int:
        """Number of chunks at the current ``chunk_rows``."""
        return -(-self.n_rows // self.chunk_rows)

    def __repr__(self) -> str:
        return (f"Dataset({self.source.description!r}, rows={self.n_rows}, "
                f"features={self.n_features}, target={self.target!r}, "
                f"chunk_rows={self.chunk_rows})")

    def locate(self, row: int) -> str:
        """Describe global ``row`` as 'row R of <piece label>' for messages, and its line
        in its file where the source knows it (``line_of``: CSV files)."""
        i = int(np.searchsorted(self._offsets, row, side="right")) - 1
        piece = self.source.pieces[i]
        where = f"row {piece.file_row + row - int(self._offsets[i])} of {piece.label}"
        line_of = getattr(self.source, "line_of", None)
        line = line_of(i, row - int(self._offsets[i])) if line_of is not None else None
        return where if line is None else f"{where}, {line}"

    def _scan_labels(self) -> np.ndarray:
        """The distinct values of the target column (one scan of it; stops past
        :data:`MAX_CLASSES`), but for the NaN and infinite ones ``nan_policy="drop"``
        drops."""
        assert self.target is not None
        found: np.ndarray | None = None
        for i in range(len(self.source.pieces)):
            values = self.source.read_target(i, self.target)
            missing = missing_labels(values)
            if missing is not None and values.dtype.kind == "O":
                values = values[~missing]  # no class: dropped or refused as rows are read
            elif missing is not None and self.nan_policy != "drop" and missing.any():
                row = int(self._offsets[i]) + int(np.flatnonzero(missing)[0])
                raise LabelError(f"target {self.target!r} has NaN or infinite labels; pass "
                                 f"{LABEL_NAN_HINT} (the first is "
                                 f"{self.locate(row)})")
            values = np.unique(values)
            if self.nan_policy == "drop" and values.dtype.kind == "f":
                values = values[np.isfinite(values)]  # rows the chunks drop
            found = values if found is None else np.union1d(found, values)
            if len(found) > MAX_CLASSES:
                break
        assert found is not None
        return _labels_as_stored(found, self.source.kinds.get(self.target))

    def check_rows_left(self) -> None:
        """Under ``nan_policy="drop"``, make sure some row is left to train on.

        Rows are read in order until the first one kept (one chunk, as a rule). When every
        row is dropped the whole dataset is read, and the error names the columns missing
        (NaN or infinite) on the most rows. Other policies read nothing.

        Raises
        ------
        DataError
            Every row holds a missing feature value, target or weight.
        """
        if self.nan_policy != "drop":
            return
        missing = np.zeros(self.n_features, dtype=np.int64)
        targets = weights = 0
        reader: _PieceReader | _RangeReader = (
            _RangeReader(self) if hasattr(self.source, "read_rows") else _PieceReader(self))
        try:
            for a in range(0, self.n_rows, self.chunk_rows):
                X, y, w = reader.rows(a, min(a + self.chunk_rows, self.n_rows))
                if isinstance(X, SparseRows):
                    bad = ~np.isfinite(X.values)
                    kept = np.ones(X.n_rows, dtype=bool)
                    kept[np.repeat(np.arange(X.n_rows), np.diff(X.indptr))[bad]] = False
                    missing += np.bincount(X.indices[bad], minlength=self.n_features)
                else:
                    kept = finite_rows(X)
                    missing += X.shape[0] - np.isfinite(X).sum(axis=0)
                    if w is not None:
                        kept &= np.isfinite(w)
                        weights += int(np.sum(~np.isfinite(w)))
                lost = None if y is None else missing_labels(y)
                if lost is not None:
                    kept &= ~lost
                    targets += int(np.sum(lost))
                if kept.any():
                    return
        finally:
            if isinstance(reader, _PieceReader):
                reader.close()
        counts = {f"feature {self.feature_names[j]!r}": int(missing[j])
                  for j in np.argsort(-missing, kind="stable")[:3] if missing[j]}
        if targets:
            counts[f"target {self.target!r}"] = targets
        if weights:
            counts[f"weight {self.weight!r}"] = weights
        worst = sorted(counts.items(), key=lambda item: -item[1])[:3]
        every = [name for name, n in worst if n == self.n_rows]
        why = (f"{' and '.join(every)} {'is' if len(every) == 1 else 'are'} missing (NaN, "
               "infinite or empty) on every row" if every else
               "every row misses a value (NaN, infinite or empty): " + ", ".join(
                   f"{name} on {n:,} rows" for name, n in worst))
        raise DataError(f"nan_policy='drop' left no rows to train on in "
                        f"{self.source.description} ({self.n_rows:,} rows): {why}; leave "
                        "such columns out (exclude=[...] or features=[...]), read them as "
                        "missing values with nan_policy='impute', or fill them with "
                        "nan_policy=<number>")

    def content_digest(self, blocks: int = DIGEST_BLOCKS,
                       block_rows: int = DIGEST_BLOCK_ROWS) -> str:
        """A digest of the rows' contents: features, targets and weights of ``blocks``
        blocks of ``block_rows`` rows spread evenly over the dataset, the first and the
        last included (every row of a small dataset; the first ``blocks * block_rows`` rows
        of a source that reads in order only, such as compressed text).

        It tells one dataset from another of the same shape (a file rewritten with new
        rows, other arrays, other weights) at the cost of reading those blocks, not a pass.

        Returns
        -------
        str
            Hexadecimal BLAKE2b digest.
        """
        import hashlib

        digest = hashlib.blake2b(digest_size=16)
        n = self.n_rows
        if n <= blocks * block_rows or getattr(self.source, "reads_in_order", False):
            # (compressed text cannot seek: its first rows, not a pass to reach the last)
            spans = [(0, min(n, blocks * block_rows))]
        else:
            starts = np.linspace(0, n - block_rows, blocks).astype(np.int64)
            spans = [(int(a), int(a) + block_rows) for a in starts]
        for a, b in spans:
            for chunk in self.chunks(rows=(a, b), prefetch=0):
                X = chunk.X
                parts = ((X.indptr, X.indices, X.values) if isinstance(X, SparseRows)
                         else (X,))
                for part in (*parts, chunk.y, chunk.weight):
                    if part is not None:
                        digest.update(np.ascontiguousarray(part).tobytes())
        return digest.hexdigest()

    def with_classes_of(self, classes: Sequence[Any]) -> Dataset:
        """The same rows, their labels coded over ``classes`` (a model's) and the labels
        the target holds: what scoring a model needs, where the data may hold one class
        only, or labels the model has none for.

        Parameters
        ----------
        classes : sequence
            Labels every chunk's codes must make room for.

        Returns
        -------
        Dataset
            Itself when its classes already hold ``classes``, or when the target is not a
            class label.

        Raises
        ------
        LabelError
            When the model's labels and the target's are of different kinds (numbers and
            text): no row's label could be one of the model's classes.
        """
        if self.task != "classification":
            return self
        given = np.asarray(classes)
        if (self._classes is not None and np.isin(given, self._classes).all()
                and len(self._classes) >= self._fewest_classes):
            return self
        labels = self._classes if self._classes is not None else self._scan_labels()
        kind = _label_kind(given)
        data_kind = _label_kind(labels)
        if kind is not None and data_kind is not None and kind != data_kind:
            named = {"number": "numbers", "text": "text"}
            raise LabelError(
                f"the model's classes are {named[kind]} ({_listing(given.tolist())}) but "
                f"target {self.target!r} holds {named[data_kind]} "
                f"({_listing(labels.tolist())}): no label can be matched to a class")
        if kind is None or kind != data_kind:
            return self  # labels of a kind neither names
        union = (np.union1d(given, labels) if kind == "number"
                 else np.union1d(given.astype(object), labels.astype(object)))
        out = copy.copy(self)
        out._classes = _sorted_classes(union, self.target, fewest=1)
        out._fewest_classes = 1
        out._class_factors = None
        return out

    def with_any_classes(self) -> Dataset:
        """The same rows, streamed with however many classes the target holds, one
        included: for describing, converting or scoring them, where a classifier's
        training (:attr:`classes`) needs two. Itself when the target is not a class label."""
        if self.task != "classification":
            return self
        return self.with_classes_of(self.class_labels())

    # ---------------------------------------------------------------- streaming
    def chunks(
        self,
        chunk_rows: int | None = None,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        epoch: int = 0,
        prefetch: int | None = None,
        rows: tuple[int, int] | None = None,
        skip: int = 0,
    ) -> Iterator[Chunk]:
        """Iterate over the dataset in chunks.

        Parameters
        ----------
        chunk_rows : int, optional
            Rows per chunk (the last may be shorter); defaults to the dataset's.
        shuffle : bool
            Visit chunks in a random order and permute rows within each chunk, then mix the
            rows of each group of up to 64 chunks of the walk (at most about 64 MiB of
            features, :func:`~streamlearn.data.row_mixing.mix_group_size`): each chunk
            handed on draws its rows from its group's chunks, so rows stored grouped by
            class still reach a solver mixed (:mod:`~streamlearn.data.row_mixing`). The
            order is a function of ``(seed, epoch)`` alone, so runs are reproducible and
            each epoch differs. A source that reads
            in order only (``reads_in_order``: compressed text, which cannot seek) keeps its
            chunk order and has the rows within each chunk permuted; convert it to zarr
            (``streamlearn convert``) to shuffle it fully. A source whose pieces are costly
            to read (``shuffle_by_piece``: parquet row groups, dask DataFrame partitions,
            CSV blocks) visits its pieces in a random
            order and the chunks of each piece one after the other, in a random order
            (:func:`piece_grouped_order`), so that each piece is read and decoded once per
            pass; its chunks therefore come in another order than the same rows' in memory.
        seed, epoch : int
            Seed of the shuffle and the epoch number mixed into it.
        prefetch : int, optional
            Chunks read ahead in a background thread, or concurrently by up to that many
            threads for a source read by row range (zarr); a parquet source also decodes
            up to that many row groups ahead concurrently. 0 reads in the calling thread,
            as does a walk of one chunk (nothing to read ahead of it).
        rows : (start, stop), optional
            Restrict the walk to global rows ``start:stop`` (used to split a dataset into
            partitions); chunk boundaries are counted from ``start``. Blocks left out by
            :meth:`without_blocks` are skipped in every walk.
        skip : int
            Leave out the first ``skip`` chunks of this order, unread (resuming a pass).

        Yields
        ------
        Chunk
        """
        _check_chunk_rows(chunk_rows)
        size = int(chunk_rows) if chunk_rows else self.chunk_rows
        if size < 1:
            raise ValueError(f"chunk_rows must be a positive number of rows, got {chunk_rows}")
        map_large_buffers()  # freed chunk buffers go back to the system, not into holes
        lo, hi = rows if rows is not None else (0, self.n_rows)
        if not 0 <= lo <= hi <= self.n_rows:
            raise ValueError(f"rows {rows} outside the dataset's 0..{self.n_rows}")
        starts = self._chunk_starts_kept(np.arange(lo, hi, size, dtype=np.int64), size, hi)
        # One seed per chunk, drawn up front, so a chunk's row permutation does not depend on
        # which thread cuts it or in what order.
        row_seeds: np.ndarray | None = None
        groups, mix_seeds, inner_skip = None, np.empty(0, dtype=np.int64), 0
        if shuffle:
            rng = np.random.default_rng([0 if seed is None else int(seed), int(epoch)])
            if getattr(self.source, "shuffle_by_piece", False) \
                    and not getattr(self.source, "reads_in_order", False):
                starts = starts[piece_grouped_order(starts, self._offsets, rng)]
            elif not getattr(self.source, "reads_in_order", False):
                starts = rng.permutation(starts)
            row_seeds = rng.integers(0, 2**63 - 1, size=len(starts), dtype=np.int64)
            group = mix_group_size(size, self.n_features, self.is_sparse)
            if len(starts) > 1 and group > 1:  # rows mixed across groups (row_mixing)
                groups = group_sizes(len(starts), group)
                mix_seeds = rng.integers(0, 2**63 - 1, size=len(groups), dtype=np.int64)
                first = int(np.searchsorted(np.cumsum(groups), skip, side="right"))
                aligned = int(np.sum(groups[:first]))
                skip, inner_skip = aligned, skip - aligned
                groups, mix_seeds = groups[first:], mix_seeds[first:]
            row_seeds = row_seeds[skip:]
        starts = starts[skip:]
        classes = self.classes  # resolve before the reader thread starts
        self._indexes()
        _check_prefetch(prefetch)
        depth = self.prefetch if prefetch is None else int(prefetch)
        if len(starts) <= 1:  # one chunk: nothing to read ahead of, no thread to start
            depth = 0
        elif groups is not None and depth > 0:
            # the next group is read while this one is handed on: a group waits for all
            # its chunks, and reading only `prefetch` ahead left the reads of most of each
            # group out of the overlap with the work on the one before
            depth = max(depth, int(groups.max()))

        readahead = self._readahead(starts, size, hi)

        def chunk(k: int, reader: _PieceReader | _RangeReader) -> Chunk:
            a = int(starts[k])
            if readahead is not None:
                readahead.reached(k)
            # rows mixed across a group are permuted there (row_mixing), not chunk by chunk
            rng = (None if row_seeds is None or groups is not None
                   else np.random.default_rng(int(row_seeds[k])))
            out = self._chunk(reader, a, min(a + size, hi), classes, rng)
            keep = self._kept_rows(out.rows)
            return out if keep is None else out.select(keep)

        if hasattr(self.source, "read_rows"):
            ranges = _RangeReader(self)
            walk = prefetched_map(lambda k: chunk(k, ranges), range(len(starts)), depth)
        else:
            concurrent = depth > 0 and getattr(self.source, "reads_pieces_concurrently", False)
            order = self._piece_order(starts, size, hi) if concurrent else []

            def produce() -> Iterator[Chunk]:
                reader = _PieceReader(self, order, depth if concurrent else 0)
                try:
                    for k in range(len(starts)):
                        yield chunk(k, reader)
                finally:
                    reader.close()

            walk = prefetched(produce, depth)
        walk = walk if readahead is None else _advised(walk, readahead)
        if groups is not None:
            walk = mixed_chunks(walk, groups, mix_seeds, inner_skip)
        return (self._watched(walk) if (lo, hi) == (0, self.n_rows) and not skip
                and not inner_skip else walk)

    def _watched(self, walk: Iterator[Chunk]) -> Iterator[Chunk]:
        """``walk`` (over all rows), then a warning of each float64, integer or decimal
        feature column, and of a regression target, whose values, over every row read so
        far, the cast to float32 left coarse (:mod:`streamlearn.data.precision`): once per
        column."""
        yield from walk
        self._resolution.warn(self._read_features or self.feature_names,
                              self.source.description)
        if self.task == "regression" and self.target is not None:
            self._target_resolution.warn([self.target], self.source.description, "target")

    def _piece_order(self, starts: np.ndarray, size: int, hi: int) -> list[int]:
        """The storage pieces that chunks starting at ``starts`` read, in the order they
        are needed (one of the last two pieces read is not read again: the
        :class:`_PieceReader` keeps them)."""
        first = np.searchsorted(self._offsets, starts, side="right") - 1
        last = np.searchsorted(self._offsets, np.minimum(starts + size, hi), side="left")
        order: list[int] = []
        for lo, up in zip(first.tolist(), last.tolist(), strict=True):
            for i in range(lo, max(up, lo + 1)):
                if i not in order[-2:]:
                    order.append(i)
        return order

    def _readahead(self, starts: np.ndarray, size: int, hi: int) -> ReadAhead | None:
        """A :class:`~streamlearn.data.readahead.ReadAhead` over the chunks starting at
        ``starts``, or None: a source not in local files, a platform without
        ``posix_fadvise``, or fewer than two chunks."""
        file_ranges = getattr(self.source, "file_ranges", None)
        if file_ranges is None or len(starts) < 2 or not ReadAhead.available():
            return None
        names = (self._read_features or [], self.target, self.weight)

        def ranges_of(k: int) -> list[FileRange]:
            a = int(starts[k])
            return file_ranges(a, min(a + size, hi), *names)

        if not ranges_of(0):
            return None
        return ReadAhead(ranges_of, len(starts))

    def __iter__(self) -> Iterator[Chunk]:
        return self.chunks()

    def _chunk(self, reader: _PieceReader | _RangeReader, a: int, b: int,
               classes: np.ndarray | None, rng: np.random.Generator | None) -> Chunk:
        X, y_raw, w = reader.rows(a, b)
        # a zero-copy read (an Arrow column, a frozen or deserialised array) may be
        # read-only: one copy of it here, not a second compile of every kernel it reaches
        X = writeable_rows(X)
        y_raw = None if y_raw is None else writeable(y_raw)
        w = None if w is None else writeable(w)
        if isinstance(X, SparseRows):
            return self._sparse_chunk(X, y_raw, w, a, classes, rng)
        keep = None
        if (a, b) in self._finite_ranges:
            pass  # checked when first read: every value finite (but NaN under "impute")
        elif isinstance(self.nan_policy, float):
            if first_nonfinite(X) >= 0:
                X = X.copy()
                self._fill_nonfinite(X)
            else:
                self._finite_ranges.add((a, b))
        elif self.nan_policy == "drop":
            mask = finite_rows(X)
            if w is not None:
                mask &= np.isfinite(w)
            missing = None if y_raw is None else missing_labels(y_raw)
            if missing is not None:
                mask &= ~missing
            if not mask.all():
                keep = np.flatnonzero(mask)
            else:
                self._finite_ranges.add((a, b))
        elif self.nan_policy == "impute":  # NaN is a missing value, for the feature map
            flat = first_infinite(X)
            if flat >= 0:
                r, c = divmod(flat, X.shape[1])
                raise DataError(
                    f"{X[r, c]} in feature column {self._column_read(c)!r} at "
                    f"{self.locate(a + r)} (dataset row {a + r}); nan_policy='impute' "
                    "reads NaN as a missing value but not an infinite one: replace it, or "
                    "pass nan_policy='drop' to skip such rows")
            self._finite_ranges.add((a, b))  # checked: no infinite value (NaN stay)
        else:
            flat = first_nonfinite(X)
            if flat < 0:
                self._finite_ranges.add((a, b))
            else:
                r, c = divmod(flat, X.shape[1])
                error = MissingValueError if np.isnan(X[r, c]) else DataError
                raise error(
                    f"{X[r, c]} in feature column {self._column_read(c)!r} at "
                    f"{self.locate(a + r)} (dataset row {a + r}); pass "
                    f"{NAN_POLICY_HINT}"
                )
        if keep is not None:
            X = X[keep]
            y_raw = y_raw[keep] if y_raw is not None else None
            w = w[keep] if w is not None else None
        if self._feature_transform is not None:
            X = self._feature_transform.apply(X)
        index = (keep + a).astype(np.int64) if keep is not None else None
        if w is not None:
            w = self._checked_weights(w, a, index)
        y = self._encode(y_raw, a, index, classes) if y_raw is not None else None
        w = self._class_weighted(y, w)
        if rng is not None and X.shape[0] > 1:
            perm = rng.permutation(X.shape[0])
            index = perm + a if index is None else index[perm]
            # np.take gathers rows about twice as fast as fancy indexing
            X = np.take(X, perm, axis=0)
            y = np.take(y, perm) if y is not None else None
            w = np.take(w, perm) if w is not None else None
        return Chunk(X=X, y=y, start=a, index=index, weight=w)

    def _fill_nonfinite(self, X: np.ndarray) -> None:
        """``nan_policy=<number>`` on dense rows as read, in place: every NaN and infinite
        value becomes the number, but in a categorical column that a feature expansion
        reads as indicators, where a missing value (NaN) stays missing and sets no
        indicator: a number there would be a category's code."""
        expanded = list(getattr(self._feature_transform, "columns", ())
                        if self.indicator_features else ())
        kept = X[:, expanded].copy() if expanded else None
        fill_nonfinite(X, self.nan_policy)
        if kept is not None:
            X[:, expanded] = kept

    def _column_read(self, c: int) -> str:
        """The name of column ``c`` of the rows as read (before any feature map)."""
        return str((self._read_features or list(self.feature_names))[c])

    def _sparse_chunk(self, X: SparseRows, y_raw: np.ndarray | None, w: np.ndarray | None,
                      a: int, classes: np.ndarray | None,
                      rng: np.random.Generator | None) -> Chunk:
        """:meth:`_chunk` of CSR rows: the checks and the shuffle, on the stored entries."""
        span = (a, a + X.n_rows)
        checked = span in self._finite_ranges  # its indices and values passed before
        bad = -1 if checked else first_bad_entry(X.indptr, X.indices, X.n_cols)
        if bad >= 0:
            r = int(np.searchsorted(X.indptr, bad, side="right")) - 1
            row = X.indices[X.indptr[r]:X.indptr[r + 1]]
            what = ("outside the columns 0.." + str(X.n_cols - 1)
                    if not 0 <= X.indices[bad] < X.n_cols else "stored twice in its row")
            raise DataError(f"column index {int(X.indices[bad])} at {self.locate(a + r)} "
                            f"(dataset row {a + r}) is {what} (row's indices: {row[:12]})")
        keep = None
        flat = -1 if checked else first_nonfinite(X.values)
        if flat < 0:
            self._finite_ranges.add(span)
        else:
            if isinstance(self.nan_policy, float):
                values = X.values.copy()
                fill_nonfinite(values, self.nan_policy)
                X = SparseRows(X.indptr, X.indices, values, X.n_cols)
            elif self.nan_policy == "drop":
                entry_row = np.repeat(np.arange(X.n_rows), np.diff(X.indptr))
                mask = np.ones(X.n_rows, dtype=bool)
                mask[entry_row[~np.isfinite(X.values)]] = False
                keep = np.flatnonzero(mask)
            else:
                r = int(np.searchsorted(X.indptr, flat, side="right")) - 1
                raise DataError(
                    f"{X.values[flat]} in column x{int(X.indices[flat])} at "
                    f"{self.locate(a + r)} (dataset row {a + r}); pass "
                    f"{NAN_POLICY_HINT}")
        for values in (y_raw, w):  # a missing target or weight drops its row, as dense
            missing = (None if self.nan_policy != "drop" or values is None
                       else missing_labels(values))
            if missing is not None:
                finite = ~missing
                if not finite.all():
                    keep = np.flatnonzero(finite) if keep is None else keep[finite[keep]]
        if keep is not None:
            X = X.take(keep)
            y_raw = y_raw[keep] if y_raw is not None else None
            w = w[keep] if w is not None else None
        if self._feature_transform is not None:  # a scale (with_feature_transform)
            X = self._feature_transform.apply(X)  # type: ignore[arg-type]
        index = (keep + a).astype(np.int64) if keep is not None else None
        if w is not None:
            w = self._checked_weights(w, a, index)
        y = self._encode(y_raw, a, index, classes) if y_raw is not None else None
        w = self._class_weighted(y, w)
        if rng is not None and X.n_rows > 1:
            perm = rng.permutation(X.n_rows)
            index = perm + a if index is None else index[perm]
            X = X.take(perm)
            y = np.take(y, perm) if y is not None else None
            w = np.take(w, perm) if w is not None else None
        return Chunk(X=X, y=y, start=a, index=index, weight=w)

    def _row(self, a: int, index: np.ndarray | None, r: int) -> int:
        return int(index[r]) if index is not None else a + r

    def _checked_weights(self, w: np.ndarray, a: int,
                         index: np.ndarray | None) -> np.ndarray:
        """A chunk's weights as read (float64) checked and cast to float32: finite there,
        so within float32's range, and non-negative."""
        with np.errstate(over="ignore"):  # a value beyond float32's range is named below
            values = w.astype(np.float32, copy=False)
        bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
        if bad.size:
            row = self._row(a, index, int(bad[0]))
            value = w[bad[0]]
            what = (nonfinite_value(value, "weights") if np.isfinite(value) and value >= 0
                    else value)
            raise DataError(
                f"weight column {self.weight!r} is {what} at {self.locate(row)}; "
                "sample weights must be finite and non-negative"
            )
        return values

    def _encode(self, y: np.ndarray, a: int, index: np.ndarray | None,
                classes: np.ndarray | None) -> np.ndarray:
        missing = missing_labels(y)  # None (floats' NaN, infinity; objects' None) for ints
        bad = np.flatnonzero(missing) if missing is not None else np.empty(0, dtype=np.intp)
        if bad.size:
            row = self.locate(self._row(a, index, int(bad[0])))
            what = (f"target column {self.target!r} is missing (null) at {row}"
                    if y.dtype.kind == "O" else f"target {self.target!r} is {y[bad[0]]} at {row}")
            raise DataError(f"{what}; pass nan_policy='drop' (to open_dataset, fit or the "
                            "command's --nan-policy) to skip such rows")
        if self.task == "regression":
            self._target_resolution.merge(target_spans(y))
            with np.errstate(over="ignore"):  # a value beyond float32's range is named below
                values = y.astype(np.float32, copy=False)
            bad = first_nonfinite(values)
            if bad >= 0:
                row = self._row(a, index, bad)
                raise DataError(f"target {self.target!r} is {nonfinite_value(y[bad], 'target')} "
                                f"at {self.locate(row)}")
            return values
        assert classes is not None
        codes = consecutive_codes(y, classes)
        if codes is not None:
            return codes
        codes = np.searchsorted(classes, y)
        codes = np.minimum(codes, len(classes) - 1)
        wrong = np.flatnonzero(classes[codes] != y)
        if wrong.size:
            row = self._row(a, index, int(wrong[0]))
            raise LabelError(
                f"label {_plain(y[wrong[0]])!r} of target {self.target!r} at {self.locate(row)} "
                f"is not one of the classes {_listing(classes.tolist())}"
            )
        return codes.astype(np.int32)


class _RangeReader:
    """Reads global row ranges directly from a source that supports it (``read_rows``)."""

    def __init__(self, dataset: Dataset) -> None:
        self._ds = dataset

    def rows(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        ds = self._ds
        indexes = ds._indexes()
        extra = {"categories": indexes} if indexes else {}
        block = ds.source.read_rows(  # type: ignore[attr-defined]
            a, b, ds._read_features, ds.target, ds.weight, **extra
        )
        ds._resolution.merge(block.spans)
        return block.X, block.y, block.weight


def _advised(walk: Iterator[Chunk], readahead: ReadAhead) -> Iterator[Chunk]:
    """``walk``, with ``readahead`` started as it starts and stopped when it ends or is
    left."""
    readahead.start()
    try:
        yield from walk
    finally:
        readahead.stop()
        close = getattr(walk, "close", None)
        if close is not None:
            close()


def piece_grouped_order(starts: np.ndarray, offsets: np.ndarray,
                        rng: np.random.Generator) -> np.ndarray:
    """A random order of chunks that keeps the chunks of each storage piece together.

    Parameters
    ----------
    starts : ndarray of int64
        First row of each chunk, ascending.
    offsets : ndarray of int64
        First row of each piece, then the row count.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64
        Positions into ``starts``: the pieces (of the chunks' first rows) in a random
        order, and within each piece its chunks in a random order.
    """
    piece = np.searchsorted(offsets, starts, side="right") - 1
    piece_rank = rng.permutation(int(piece.max()) + 1 if piece.size else 0)
    within = rng.random(starts.shape[0])
    return np.lexsort((within, piece_rank[piece])).astype(np.int64)


class _PieceReader:
    """Cuts global row ranges out of storage pieces, keeping the last two pieces read.

    Two, so that a chunk that crosses from its piece into the next, in a pass that takes
    each piece's chunks together (``shuffle_by_piece``), does not make the piece's
    remaining chunks read it again.

    Given the ``order`` in which pieces will be asked for and a ``depth``, the next
    ``depth`` pieces of that order are read concurrently by up to ``depth`` threads (at
    most one per CPU) while the current one is cut: a source whose pieces cost decoding
    (``reads_pieces_concurrently``: parquet row groups) then decodes on every core.
    """

    def __init__(self, dataset: Dataset, order: list[int] | None = None,
                 depth: int = 0) -> None:
        self._ds = dataset
        self._cached: deque[tuple[int, Block]] = deque(maxlen=2)
        self._order = order or []
        self._next = 0
        self._depth = int(depth)
        self._pending: deque[tuple[int, Future[Block]]] = deque()
        self._pool = ThreadPoolExecutor(
            max_workers=max(1, min(self._depth, os.cpu_count() or 1)),
            thread_name_prefix="streamlearn-piece") if self._depth > 0 and self._order \
            else None

    def _read(self, i: int) -> Block:
        ds = self._ds
        indexes = ds._indexes()
        extra = {"categories": indexes} if indexes else {}
        block = ds.source.read_piece(i, ds._read_features, ds.target, ds.weight, **extra)
        ds._resolution.merge(block.spans)
        return block

    def _block(self, i: int) -> Block:
        for piece, cached in self._cached:
            if piece == i:
                return cached
        block: Block | None = None
        if self._pool is not None:
            while len(self._pending) < self._depth and self._next < len(self._order):
                piece = self._order[self._next]
                self._pending.append((piece, self._pool.submit(self._read, piece)))
                self._next += 1
            if any(piece == i for piece, _ in self._pending):
                while self._pending[0][0] != i:  # asked for out of order: skip ahead
                    self._pending.popleft()[1].cancel()
                block = self._pending.popleft()[1].result()
        if block is None:  # not among those read ahead: read it here
            block = self._read(i)
        self._cached.append((i, block))
        return block

    def close(self) -> None:
        """Stop reading ahead: drop the pieces not started, wait for the running ones."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pending.clear()

    def rows(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        offsets = self._ds._offsets
        first = int(np.searchsorted(offsets, a, side="right")) - 1
        parts: list[tuple[np.ndarray, np.ndarray | None, np.ndarray | None]] = []
        i = first
        while i < len(offsets) - 1 and offsets[i] < b:
            block = self._block(i)
            lo = max(a, int(offsets[i])) - int(offsets[i])
            hi = min(b, int(offsets[i + 1])) - int(offsets[i])
            parts.append((
                block.X.slice(lo, hi) if isinstance(block.X, SparseRows) else block.X[lo:hi],
                block.y[lo:hi] if block.y is not None else None,
                block.weight[lo:hi] if block.weight is not None else None,
            ))
            i += 1
        if len(parts) == 1:
            return parts[0]
        X = (SparseRows.concatenate([p[0] for p in parts]) if isinstance(parts[0][0], SparseRows)
             else np.concatenate([p[0] for p in parts]))
        y = np.concatenate([p[1] for p in parts]) if parts[0][1] is not None else None
        w = np.concatenate([p[2] for p in parts]) if parts[0][2] is not None else None
        return X, y, w


def _sparse_features(source: Source, features: Sequence[str] | None,
                     exclude: Sequence[str]) -> Sequence[str]:
    """The columns of a sparse source, all of them: the names a store of the sparse layout
    keeps (a table written sparse), else numbered (``features`` may name them all in
    order, by number or by those names)."""
    names = NumberedNames(source.n_features)  # type: ignore[attr-defined]
    stored = getattr(source, "stored_names", None)
    if features is not None and stored is not None and list(features) == stored:
        features = None
    if exclude or (features is not None and list(features) != names):
        raise SchemaError(
            f"{source.description} has sparse rows of {len(names)} numbered columns; it is "
            "read whole, without features= or exclude= (select columns before writing it)")
    return tuple(stored) if stored is not None else names


def _stored_per_row(source: Source, n_features: int, n_rows: int) -> int:
    """Values stored per row: the features, or a sparse source's mean non-zeros per row."""
    nnz = getattr(source, "nnz", None) if getattr(source, "sparse", False) else None
    if nnz is None:
        return n_features
    # a CSR entry takes 8 bytes (value and index) where a dense value takes 4
    return max(1, 2 * int(nnz) // max(n_rows, 1))


def _task(task: Task | None, target: str | None, kind: ColumnKind | None) -> Task | None:
    if target is None:
        if task is not None:
            raise LabelError(f"task={task!r} needs a target column; pass target=...")
        return None
    if task is not None and task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    assert kind is not None
    if task == "regression" and not kind.is_numeric:
        raise LabelError(f"target {target!r} is {kind.value}; regression needs a numeric target")
    if task is not None:
        return task
    if kind == ColumnKind.NUMERIC:
        return "regression"
    if kind == ColumnKind.OTHER:
        raise LabelError(f"target {target!r} has a type that is neither labels nor numbers")
    return "classification"


def _label_kind(labels: np.ndarray) -> str | None:
    """"number" or "text" for labels all of one of those kinds; None otherwise."""
    if labels.dtype.kind in "biuf":
        return "number"
    if labels.dtype.kind == "U" or (labels.dtype.kind == "O"
                                    and all(isinstance(v, str) for v in labels.tolist())):
        return "text"
    return None


def _labels_as_stored(labels: np.ndarray, kind: ColumnKind | None) -> np.ndarray:
    """Labels of an integer or boolean target column read as floats (a column with
    missing values reads as float64 with NaN, which ``nan_policy="drop"`` drops) in the
    column's own type again, so that the classes are the integers or booleans stored;
    other labels, and labels that are not all whole numbers, as they are."""
    if (labels.dtype.kind != "f" or kind not in (ColumnKind.INTEGER, ColumnKind.BOOL)
            or not np.isfinite(labels).all()):
        return labels
    typed = labels.astype(bool if kind == ColumnKind.BOOL else np.int64)
    return typed if np.array_equal(typed, labels) else labels


def _sorted_classes(values: np.ndarray, target: str | None, fewest: int = 2) -> np.ndarray:
    try:
        classes = np.unique(np.asarray(values))
    except TypeError as exc:
        raise LabelError(f"labels of target {target!r} mix types that cannot be ordered: "
                         f"{exc}") from exc
    if classes.dtype.kind == "f" and not np.isfinite(classes).all():
        raise LabelError(f"target {target!r} has NaN or infinite labels; pass "
                         f"{LABEL_NAN_HINT}")
    if classes.dtype.kind == "f" and (classes != np.round(classes)).any():
        fractional = classes[classes != np.round(classes)]
        raise LabelError(
            f"Unknown label type: continuous. Target {target!r} holds non-integer values "
            f"such as {_plain(fractional[0])!r}: a classifier needs class labels; for a "
            "continuous target use a regressor (task='regression')"
        )
    if len(classes) < fewest:
        raise LabelError(
            f"target {target!r} has 1 class ({_listing(classes.tolist())}); "
            "a classifier needs at least two"
        )
    if len(classes) > MAX_CLASSES:
        raise LabelError(
            f"target {target!r} has more than {MAX_CLASSES} distinct values; "
            "for a continuous target use task='regression'"
        )
    if classes.dtype.kind == "O":
        classes = classes.astype(str)
    return classes


def _check_chunk_rows(chunk_rows: Any) -> None:
    """A ``ValueError`` unless ``chunk_rows`` is None or a whole number of rows >= 1."""
    _check_whole_number(chunk_rows, 1, "chunk_rows must be a positive whole number of rows")


def _check_prefetch(prefetch: Any) -> None:
    """A ``ValueError`` unless ``prefetch`` is None or a whole number of chunks >= 0."""
    _check_whole_number(prefetch, 0, "prefetch must be a whole number of chunks to read "
                        "ahead, 0 or more")


def _check_whole_number(value: Any, least: int, message: str) -> None:
    """A ``ValueError`` saying ``message`` unless ``value`` is None or an integer (not a
    bool) of at least ``least``."""
    if value is None:
        return
    whole = isinstance(value, int | np.integer) and not isinstance(value, bool)
    if not whole or int(value) < least:
        raise ValueError(f"{message}, got {value!r}")


#: A class target with at least this many classes, and more than half as many as rows,
#: looks like an identifier (or a number meant for regression): ``classes`` warns.
MIN_IDENTIFIER_CLASSES = 50


def _warn_if_identifier(classes: np.ndarray, n_rows: int, target: str | None) -> None:
    """Warn when a class target has about as many classes as rows."""
    if len(classes) >= MIN_IDENTIFIER_CLASSES and len(classes) > n_rows / 2:
        warnings.warn(f"target {target!r} has {len(classes):,} classes in {n_rows:,} rows: "
                      "an identifier, or a number meant for regression (task='regression', "
                      "or a regressor)?", UserWarning, stacklevel=caller_stacklevel())


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds, for readable messages."""
    return value.item() if isinstance(value, np.generic) else value


def _set_aside(source: Source, names: list[str]) -> str:
    """Why a source left the named arrays out of its columns (a zarr group's arrays that
    are not columns of its rows), as a clause for a not-found message; empty if it did not."""
    reasons = getattr(source, "set_aside", {})
    return "".join(f"; {reasons[n]}" for n in names if n in reasons)


def _listing(items: list[Any], limit: int = 12) -> str:
    shown = ", ".join(repr(v) for v in items[:limit])
    return f"[{shown}{', ...' if len(items) > limit else ''}]"
