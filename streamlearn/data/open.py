"""``open_dataset``: one entry point for every kind of source."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from streamlearn.data.dataset import Dataset
from streamlearn.data.hashing import check_hash_features
from streamlearn.data.schema import Task
from streamlearn.data.sources.base import ColumnKind, Source, default_feature_names, fresh_name
from streamlearn.data.validation import NanPolicy, check_nan_policy
from streamlearn.errors import SchemaError, SourceError

#: File name endings read as svmlight / libsvm text (optionally followed by a compression's).
SVMLIGHT_SUFFIXES = (".svm", ".svmlight", ".libsvm")
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")

ACCEPTED = (
    "a parquet file or directory, a zarr v3 store (path or fsspec URL), svmlight text files, "
    "CSV files, "
    "a numpy array, a scipy.sparse matrix or array, "
    "a pandas or polars DataFrame, a pyarrow Table, a dask array or DataFrame, a zarr Group, "
    "or a Dataset"
)


def open_dataset(
    source: Any,
    *,
    target: str | Any | None = None,
    features: Sequence[str] | None = None,
    exclude: Sequence[str] | None = (),
    weight: str | Any | None = None,
    task: Task | None = None,
    classes: Sequence[Any] | None = None,
    chunk_rows: int | None = None,
    nan_policy: NanPolicy = "raise",
    prefetch: int = 2,
    format: str | None = None,
    storage_options: dict[str, Any] | None = None,
    categories: Mapping[str, Sequence[Any]] | None = None,
    n_features: int | None = None,
    zero_based: bool | str = "auto",
    hash_features: int | None = None,
    sparse_columns: tuple[str, str | None] | None = None,
) -> Dataset:
    """Open rows for streaming.

    Parameters
    ----------
    source
        A path or fsspec URL (``file://``, ``memory://``, ``s3://`` ...) of a parquet file,
        a directory of parquet files (hive partitions become columns), a zarr v3 store
        (dense, or the CSR layout of :mod:`~streamlearn.data.sources.sparse_zarr`), an
        svmlight / libsvm text file or a directory of them, a CSV file or a directory of
        them (:func:`~streamlearn.data.sources.csv_files.csv_source`); a numpy array, a
        ``scipy.sparse`` matrix or array (streamed as CSR rows, never densified), a pandas
        or polars DataFrame, pyarrow Table, dask array or DataFrame, zarr Group; an
        existing ``Dataset``, returned as is: another argument that differs from the
        dataset's own setting (or one that applies only to opening a source, such as
        ``format=``) raises a ``ValueError`` naming it; ``Dataset.with_task`` and
        ``Dataset.with_categories`` give one read for another task or categories.
    target : str or array-like, optional
        Target column name; for array sources and dask DataFrames, the target values
        themselves (for a dask DataFrame: a dask Series or array, or an in-memory array, one
        value per row). A zarr store with ``X`` and ``y`` arrays uses ``y`` by default.
    features : list of str, optional
        Feature columns in order; by default every column but the target and weight.
    exclude : list of str, optional
        Columns to leave out when ``features`` is not given (identifiers, text); with
        ``hash_features``, columns not to hash.
    weight : str or array-like, optional
        Sample-weight column name, or the weights themselves for array sources.
    task : {"classification", "regression"}, optional
        Inferred from the target's type when omitted: floats mean regression; integers,
        booleans, strings and categoricals mean classification.
    classes : sequence, optional
        The label set, when known, to skip the scan that discovers it.
    chunk_rows : int, optional
        Rows per chunk; by default about 16 MiB of float32 features (of CSR entries, for
        sparse rows), but 1,024 rows at least and 1,048,576 (2**20) at most: 4 MiB a
        chunk of one feature, more than 16 MiB past 4,096 features.
    nan_policy : "raise", "drop" or float
        What to do with NaN, infinite or missing (``None``, ``pd.NA``, null) feature values:
        raise an error naming the file, column and row; drop the row; or replace the value
        by the given number (but in a categorical column that a model reads as indicator
        columns, where a missing value sets no indicator). In svmlight text a label or
        value written ``nan``, ``inf`` or ``infinity`` is missing: ``"raise"`` refuses it
        when the text is opened (a ``ReadError`` naming the file and line), ``"drop"`` drops
        its row, a number fills a missing value (a missing label is refused but under
        ``"drop"``, as in every source).
    prefetch : int
        Chunks read ahead (0 or more; 0 reads in the calling thread) while the current one
        is processed: by one background thread, or
        for a zarr store concurrently, by up to ``prefetch`` threads (at most one per CPU);
        parquet row groups are decoded up to ``prefetch`` at a time, likewise.
    format : {"parquet", "zarr", "svmlight", "csv"}, optional
        Storage format of a path, when it cannot be told from the path (``.svm``,
        ``.svmlight`` and ``.libsvm`` files, plain or ``.gz``, ``.bz2``, ``.xz``, are
        svmlight text; ``.csv`` and ``.tsv`` files, likewise, and directories holding only
        such files, are CSV). A file whose name says none of these is read by its first
        bytes: ``PAR1`` is parquet, lines of ``label index:value ...`` svmlight, lines with
        equally many commas CSV; anything else is a ``SourceError`` asking for ``format``.
    storage_options : dict, optional
        Passed to fsspec for URLs (credentials, endpoints).
    categories : dict of str to sequence, optional
        Category lists of categorical feature columns, when known (e.g. those a model saw
        in ``fit``); other string and categorical feature columns get theirs from the
        schema or a scan. See :attr:`Dataset.categories`.
    n_features : int, optional
        svmlight text: the number of feature columns (an index beyond it is an error); by
        default the largest index found by the scan that counts the rows, plus one.
        Also parquet with ``sparse_columns``; other sources refuse it (``ValueError``).
    zero_based : bool or "auto"
        svmlight text: whether feature indices start at 0; ``"auto"`` takes them as
        zero-based when some index is 0, else as one-based (scikit-learn's rule). Other
        sources refuse another value than ``"auto"``.
    hash_features : int, optional
        Hash feature names into this many columns (a power of two, like Vowpal Wabbit's
        ``-b``), signed: svmlight entries by their names (words or ids), and parquet's
        feature columns (numbers by column name, strings and list<string> tokens by
        ``column=value``; ``features`` names the columns to hash, by default all but the
        target, the weight and ``exclude``). The rows are sparse; a model trained on them
        records ``hash_features_`` (and, from parquet, ``hashed_columns_`` and
        ``hashed_kinds_``), with which the command line reads the data it predicts,
        refusing a column of a type hashed otherwise than in fit.
    sparse_columns : (str, str or None), optional
        Parquet with one row's entries in list columns: the name of the list<int> column of
        indices and of the list<float> column of values (None: every value is 1). The rows
        are sparse; ``n_features`` gives the column count (else a scan finds it).

    Returns
    -------
    Dataset

    Warns
    -----
    UserWarning
        A zarr store whose feature arrays are stored in chunks of more than 4x
        ``chunk_rows`` rows holding only some of the columns (e.g. ``X`` chunked by
        column): every chunk read decodes whole storage chunks, slowly and with memory
        beyond a few chunks. ``streamlearn convert`` rewrites it in chunks of whole rows.

    Examples
    --------
    >>> ds = open_dataset("data/train/", target="label")          # doctest: +SKIP
    >>> ds = open_dataset("s3://bucket/train.zarr")               # doctest: +SKIP
    >>> ds = open_dataset(X, target=y, chunk_rows=50_000)         # doctest: +SKIP
    """
    if isinstance(source, Dataset):
        _check_reopened(source, dict(
            target=target, features=features, exclude=exclude, weight=weight, task=task,
            classes=classes, chunk_rows=chunk_rows, nan_policy=nan_policy, prefetch=prefetch,
            format=format, storage_options=storage_options, categories=categories,
            n_features=n_features, zero_based=zero_based, hash_features=hash_features,
            sparse_columns=sparse_columns))
        return source
    nan_policy = check_nan_policy(nan_policy)
    if isinstance(source, tuple):
        if len(source) != 2 or target is not None:
            raise SourceError("a tuple source must be (X, y), with no separate target=")
        source, target = source
    if type(source).__module__.split(".")[0] == "polars":
        source = _polars_table(source)
    taken = _column_names(source)
    target_name, target_values = _split(target, "target", fresh_name("y", taken))
    weight_name, weight_values = _split(weight, "weight", fresh_name("weight", taken))
    exclude = () if exclude is None else exclude
    svmlight: dict[str, Any] = {"n_features": n_features, "zero_based": zero_based,
                                "keep_missing": nan_policy != "raise"}
    if hash_features is not None:
        svmlight["hash_features"] = check_hash_features(hash_features)
    if hash_features is not None or sparse_columns is not None:
        if not isinstance(source, str | os.PathLike):
            raise SourceError("hash_features= and sparse_columns= apply to parquet and "
                              "svmlight paths")
        path_format = _path_format(os.fspath(source), format, storage_options)
        if path_format not in ("parquet", "svmlight"):
            what = "hash_features=" if hash_features is not None else "sparse_columns="
            raise SourceError(f"{what} applies to parquet and svmlight data; "
                              f"{os.fspath(source)} is {path_format}: convert it to parquet "
                              "first, or hash the columns before streaming them")
        if path_format == "parquet":
            return Dataset(
                _parquet_sparse(os.fspath(source), storage_options, target_name, weight_name,
                                sparse_columns, n_features, hash_features, exclude,
                                features if hash_features is not None else None),
                target=target_name, weight=weight_name, task=task, classes=classes,
                chunk_rows=chunk_rows, nan_policy=nan_policy, prefetch=prefetch)
    src = _source(source, target_values, weight_values, format, storage_options,
                  target_name or "y", weight_name or "weight", svmlight)
    _check_svmlight_options(src, n_features, zero_based)
    stored = getattr(src, "stored_target", None) or "y"  # a store's own target array
    if target is None and (_is_zarr_matrix(src) or getattr(src, "sparse", False)) \
            and stored in src.kinds:
        target_name = stored
    dataset = Dataset(
        src,
        features=features,
        exclude=exclude,
        target=target_name,
        weight=weight_name,
        task=task,
        classes=classes,
        chunk_rows=chunk_rows,
        nan_policy=nan_policy,
        prefetch=prefetch,
        categories=categories,
    )
    warn = getattr(src, "warn_of_column_chunks", None)
    if warn is not None:  # a zarr store chunked by column
        warn(dataset.chunk_rows, list(dataset.feature_names))
    return dataset


#: What to do instead of passing an option that differs from a Dataset's own.
_REOPEN_HINTS = {"task": "dataset.with_task(task)",
                 "categories": "dataset.with_categories(categories)"}


def _check_reopened(dataset: Dataset, options: dict[str, Any]) -> None:
    """Refuse options given with an existing Dataset (which is returned as is) that differ
    from its own settings, or that apply only when a source is opened.

    Raises
    ------
    ValueError
        Naming each such option, its value and the dataset's.
    """
    import inspect

    defaults = {name: p.default for name, p in inspect.signature(open_dataset).parameters.items()}
    if options["exclude"] is None or len(options["exclude"]) == 0:
        options["exclude"] = ()  # None and an empty list leave nothing out either
    own: dict[str, Any] = {
        "target": dataset.target, "weight": dataset.weight, "task": dataset.task,
        "chunk_rows": dataset.chunk_rows, "nan_policy": dataset.nan_policy,
        "prefetch": dataset.prefetch}
    if not dataset.is_sparse:
        own["features"] = list(dataset.feature_names)
    problems = []
    for name, value in options.items():
        if _equal(value, defaults[name]):
            continue
        if name == "classes" and dataset.task == "classification":
            own[name] = dataset.class_labels().tolist()  # type: ignore[union-attr]
        elif name == "categories":
            own[name] = dataset.categories
        elif name == "nan_policy":
            value = check_nan_policy(value)
        if name not in own:
            problems.append(f"{name}={_shown_value(value)} (it applies when a source is opened)")
        elif not _equal(value, own[name]):
            hint = f": use {_REOPEN_HINTS[name]}" if name in _REOPEN_HINTS else ""
            problems.append(f"{name}={_shown_value(value)} (the dataset's is "
                            f"{_shown_value(own[name])}{hint})")
    if problems:
        raise ValueError(
            "open_dataset returns a Dataset as it is, so it cannot apply "
            + "; ".join(problems) + "; open the dataset's source again with these options")


def _equal(a: Any, b: Any) -> bool:
    """Whether two option values are the same (sequences element by element)."""
    if a is None or b is None:
        return a is b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        return (isinstance(a, Mapping) and isinstance(b, Mapping) and a.keys() == b.keys()
                and all(_equal(list(a[k]), list(b[k])) for k in a))
    if np.isscalar(a) and np.isscalar(b):
        return bool(a == b)
    try:
        return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)))
    except (TypeError, ValueError):
        return False


def _shown_value(value: Any, limit: int = 60) -> str:
    text = repr(value) if isinstance(value, str | int | float | bool | None | list | tuple |
                                      dict) else f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_svmlight_options(src: Source, n_features: int | None,
                            zero_based: bool | str) -> None:
    """Refuse ``n_features=`` and ``zero_based=`` for a source other than svmlight text,
    which would ignore them (``sparse_columns`` parquet, which takes ``n_features``, is
    opened before)."""
    from streamlearn.data.sources.svmlight import SvmlightSource

    if isinstance(src, SvmlightSource):
        return
    given = [f"{name}={value!r}" for name, value, default in (
        ("n_features", n_features, None), ("zero_based", zero_based, "auto"))
        if value != default]
    if given:
        raise ValueError(f"{' and '.join(given)} apply to svmlight text (and n_features to "
                         f"parquet with sparse_columns=), not to {src.description}, whose "
                         "columns the data itself gives")


def _polars_table(frame: Any) -> Any:
    """A polars DataFrame as the Arrow table it wraps (no copy); names and types kept."""
    if not hasattr(frame, "to_arrow"):
        raise SourceError(f"cannot read a polars {type(frame).__name__}; collect a LazyFrame "
                          "into a DataFrame first")
    return frame.to_arrow()


def _column_names(source: Any) -> list[str]:
    """Column names of a table or dask DataFrame (empty for other sources)."""
    if isinstance(source, str | os.PathLike | np.ndarray):
        return []
    names = getattr(source, "column_names", None)
    if names is None:
        names = getattr(source, "columns", None)
    try:
        return [str(c) for c in names] if names is not None else []
    except TypeError:
        return []


def _split(value: Any, role: str, default_name: str) -> tuple[str | None, Any]:
    """A column name stays a name; array-like values are bound to a column of that role."""
    if value is None:
        return None, None
    if isinstance(value, str):
        return value, None
    return default_name, value


def _is_zarr_matrix(src: Source) -> bool:
    from streamlearn.data.sources.zarr_store import ZarrSource

    return isinstance(src, ZarrSource) and src._matrix is not None


def _source(
    obj: Any,
    y: Any,
    weight: Any,
    format: str | None,
    storage_options: dict[str, Any] | None,
    target_name: str = "y",
    weight_name: str = "weight",
    svmlight: dict[str, Any] | None = None,
) -> Source:
    if isinstance(obj, str | os.PathLike):
        if y is not None or weight is not None:
            raise SourceError("for a path, target= and weight= must be column names")
        return _path_source(os.fspath(obj), format, storage_options, svmlight)

    module = type(obj).__module__.split(".")[0]
    if module == "pandas":
        from streamlearn.data.sources.in_memory import PandasSource

        _no_arrays(y, weight, "a DataFrame")
        return PandasSource(obj)
    if module == "pyarrow":
        import pyarrow as pa

        from streamlearn.data.sources.in_memory import ArrowSource

        _no_arrays(y, weight, "a pyarrow Table")
        if isinstance(obj, pa.RecordBatch):
            obj = pa.Table.from_batches([obj])
        if not isinstance(obj, pa.Table):
            raise SourceError(f"cannot read a {type(obj).__name__}; {ACCEPTED}")
        return ArrowSource(obj)
    if module in ("dask", "dask_expr"):
        import dask.array as da
        import dask.dataframe as dd

        if isinstance(obj, dd.DataFrame):
            from streamlearn.data.sources.dask_collections import DaskDataFrameSource

            return DaskDataFrameSource(obj, y=y, weight=weight, target_name=target_name,
                                       weight_name=weight_name)
        if isinstance(obj, da.Array):
            from streamlearn.data.sources.dask_collections import DaskArraySource

            return DaskArraySource(obj, y=y, weight=weight)
    if module == "scipy":
        from scipy import sparse

        if sparse.issparse(obj):
            from streamlearn.data.sources.in_memory import ScipySparseSource

            return ScipySparseSource(obj, y=y, weight=weight, target_name=target_name,
                                     weight_name=weight_name)
    if module == "zarr":
        import zarr

        if isinstance(obj, zarr.Group):
            _no_arrays(y, weight, "a zarr Group")
            return _zarr_source(obj, None)
    if isinstance(obj, np.ndarray) or hasattr(obj, "__array__"):
        from streamlearn.data.sources.in_memory import NumpySource

        return NumpySource(obj, y=y, weight=weight)
    raise SourceError(f"cannot read a {type(obj).__name__}; open_dataset accepts {ACCEPTED}")


def _no_arrays(y: Any, weight: Any, what: str) -> None:
    if y is not None or weight is not None:
        raise SourceError(f"for {what}, target= and weight= must be column names")


def named_features(model: Any) -> list[str] | None:
    """The feature columns a fitted model reads a table by: its ``feature_names_in_``,
    unless they are the names given to unnamed columns (``x0, x1, ...``: by position) or
    its columns were hashed.

    Parameters
    ----------
    model : fitted estimator

    Returns
    -------
    list of str or None
    """
    given = getattr(model, "feature_names_in_", None)
    names = [] if given is None else [str(n) for n in given]
    if (not names or names == default_feature_names(len(names))
            or getattr(model, "hash_features_", None) is not None):
        return None
    return names


def check_named_as_trained(model: Any, dataset: Dataset) -> None:
    """Refuse a dataset whose feature columns are not the model's, in its order (a model
    trained on named columns reads them by name, not position).

    Raises
    ------
    SchemaError
    """
    names = named_features(model)
    if names is None or list(dataset.feature_names) == names:
        return
    have = list(dataset.feature_names)
    missing = [n for n in names if n not in have]
    what = (f"lacks {missing[:5]}" if missing
            else f"holds them as {have[:8]}{' ...' if len(have) > 8 else ''}")
    raise SchemaError(
        f"the model reads the feature columns {names[:8]}{' ...' if len(names) > 8 else ''} "
        f"by name and the dataset {what}; open it with "
        "open_dataset(..., features=list(model.feature_names_in_))")


def reading_of(model: Any) -> dict[str, Any]:
    """The :func:`open_dataset` options that read new data as a fitted model's training
    data was read: svmlight indices on the training file's base and its feature count
    (``svmlight_zero_based_``), and hashed rows by the model's ``hash_features_`` and
    ``hashed_columns_``. Empty for a model of plain columns.

    Parameters
    ----------
    model : fitted estimator

    Returns
    -------
    dict
    """
    options: dict[str, Any] = {}
    zero_based = getattr(model, "svmlight_zero_based_", None)
    if zero_based is not None and getattr(model, "hash_features_", None) is None:
        options.update(zero_based=bool(zero_based),
                       n_features=int(model.n_features_in_))
    hashed = getattr(model, "hash_features_", None)
    if hashed is not None:
        options["hash_features"] = int(hashed)
        columns = getattr(model, "hashed_columns_", None)
        if columns:
            options["features"] = list(columns)
    return options


def reading_for(model: Any, data: Any, format: str | None = None,
                storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`reading_of` for one path: the svmlight options only where ``data`` is
    svmlight text (other formats refuse them: their columns are their own).

    Parameters
    ----------
    model : fitted estimator
    data : path or URL
    format, storage_options
        As :func:`open_dataset` takes them.

    Returns
    -------
    dict
    """
    options = reading_of(model)
    if "zero_based" in options and _path_format(os.fspath(data), format,
                                                storage_options) != "svmlight":
        del options["zero_based"], options["n_features"]
    return options


def check_hashed_as_trained(model: Any, dataset: Dataset) -> None:
    """Refuse a dataset whose rows are hashed otherwise than ``model``'s training rows:
    hashed into another number of columns, hashed from other parquet columns or from
    columns of other types (text where fit saw numbers, say: types are compatible when
    they are hashed alike, see
    :func:`~streamlearn.data.sources.parquet_sparse.check_hashed_kinds`), hashed where
    the model's were not, or not hashed where they were. Its columns would be other
    features under the same positions, and the scores wrong without a sign.

    Parameters
    ----------
    model : fitted estimator
    dataset : Dataset

    Raises
    ------
    SchemaError
    """
    trained = getattr(model, "hash_features_", None)
    given = getattr(dataset.source, "hash_features", None)
    trained_columns = tuple(getattr(model, "hashed_columns_", None) or ())
    given_columns = tuple(getattr(dataset.source, "hashed_columns", None) or ())
    if trained is None and given is None:
        return
    if trained == given and (not trained_columns or set(trained_columns) == set(given_columns)):
        if trained_columns:
            from streamlearn.data.sources.parquet_sparse import check_hashed_kinds

            source = dataset.source
            order = [given_columns.index(c) for c in trained_columns]
            kinds = getattr(model, "hashed_kinds_", None)
            check_hashed_kinds(trained_columns, None if kinds is None else tuple(kinds),
                               [source.hashed_kinds[i] for i in order],  # type: ignore[attr-defined]
                               [source.hashed_types[i] for i in order],  # type: ignore[attr-defined]
                               source.description)
        return
    name = type(model).__name__
    if trained is None:
        problem = (f"the {name} was trained on rows that were not hashed, and "
                   f"{dataset.source.description} is opened with hash_features={given}")
        fix = "open it without hash_features"
    else:
        how = f"hash_features={int(trained)}"
        if trained_columns:
            how += f", features={list(trained_columns)}"
        if given is None:
            had = "without hash_features"
        elif given != trained:
            had = f"with hash_features={given}"
        else:
            had = f"with the columns {list(given_columns)} hashed"
        problem = (f"the {name} was trained on rows hashed with {how}, and "
                   f"{dataset.source.description} is opened {had}")
        fix = (f"open it with {how} (the model's hash_features_ and hashed_columns_), or "
               "give its path, which is read so")
    raise SchemaError(f"{problem}: its columns would be other features than the model's; "
                      f"{fix}")


def check_coded_as_trained(model: Any, dataset: Dataset) -> None:
    """Refuse data whose feature columns ``model`` would read otherwise than its training
    data: a text or categorical column where ``fit`` saw numbers (its rows would be coded
    0, 1, ... by their own categories and taken for values), or a column coded by other
    categories than the model's (a dataset opened without ``categories=``).

    Parameters
    ----------
    model : fitted estimator
    dataset : Dataset
        Opened with the model's features.

    Raises
    ------
    SchemaError
    """
    if dataset.is_sparse or getattr(model, "hash_features_", None) is not None:
        return
    categories = getattr(model, "categories_", None) or {}
    trained_on = set(map(str, getattr(model, "feature_names_in_", ())))
    kinds = dataset.source.kinds
    text = [f for f in dataset.feature_names if f in trained_on and f not in categories
            and kinds.get(f) in (ColumnKind.STRING, ColumnKind.CATEGORICAL)]
    if text:
        raise SchemaError(
            f"feature column(s) {text} of {dataset.source.description} hold text or "
            f"categories, but the {type(model).__name__} was trained on numbers there: "
            "read them as numbers (the training data's type)")
    coded = {f: c for f, c in dataset.categories.items() if f in categories}
    other = [f for f, c in coded.items() if tuple(c) != tuple(categories[f])]
    if other:
        raise SchemaError(
            f"{dataset.source.description} codes feature(s) {other} by other categories "
            f"than the {type(model).__name__}'s (for {other[0]!r}: "
            f"{list(coded[other[0]])[:10]} against {list(categories[other[0]])[:10]}); "
            "open it with categories=model.categories_, or pass its path")


def _path_format(url: str, format: str | None, storage_options: dict[str, Any] | None) -> str:
    return format or _guess_format(url, storage_options)


def _parquet_sparse(url: str, storage_options: dict[str, Any] | None, target: str | None,
                    weight: str | None, sparse_columns: tuple[str, str | None] | None,
                    n_features: int | None, hash_features: int | None,
                    exclude: Sequence[str], features: Sequence[str] | None = None) -> Source:
    """Sparse rows of parquet: list columns of indices and values, or hashed columns
    (``features``: the columns to hash, by default all but the target, the weight and
    ``exclude``)."""
    from streamlearn.data.sources.parquet_sparse import ParquetSparseSource

    indices, values = sparse_columns if sparse_columns is not None else (None, None)
    return ParquetSparseSource(url, storage_options, target=target, weight=weight,
                               indices=indices, values=values, n_features=n_features,
                               hash_features=hash_features, exclude=tuple(exclude),
                               features=None if features is None else list(features))


def _path_source(url: str, format: str | None, storage_options: dict[str, Any] | None,
                 svmlight: dict[str, Any] | None = None) -> Source:
    fmt = _path_format(url, format, storage_options)
    if fmt == "zarr":
        return _zarr_source(url, storage_options)
    if fmt == "parquet":
        from streamlearn.data.sources.parquet import ParquetSource

        return ParquetSource(url, storage_options)
    if fmt == "svmlight":
        from streamlearn.data.sources.svmlight import SvmlightSource

        return SvmlightSource(url, storage_options, **(svmlight or {}))
    if fmt == "csv":
        from streamlearn.data.sources.csv_files import csv_source

        return csv_source(url, storage_options)
    raise SourceError(f"unknown format {fmt!r}; use 'parquet', 'zarr', 'svmlight' or 'csv'")


def _zarr_source(store: Any, storage_options: dict[str, Any] | None) -> Source:
    """A zarr group's source: CSR rows for the sparse layout, else dense rows or columns."""
    from streamlearn.data.sources.sparse_zarr import SparseZarrSource, is_sparse_zarr
    from streamlearn.data.sources.zarr_store import ZarrSource

    if is_sparse_zarr(store, storage_options):
        return SparseZarrSource(store, storage_options)
    return ZarrSource(store, storage_options)


def _is_svmlight_name(name: str) -> bool:
    """Whether a file's name says svmlight text (plain or compressed)."""
    return name.endswith(SVMLIGHT_SUFFIXES) or any(
        name.endswith(s + c) for s in SVMLIGHT_SUFFIXES for c in COMPRESSED_SUFFIXES)


def _guess_format(url: str, storage_options: dict[str, Any] | None) -> str:
    import fsspec

    from streamlearn.data.sources.csv_files import is_csv_name

    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    if not fs.exists(path):
        raise SourceError(f"no such file or directory: {url}")
    stripped = url.rstrip("/")
    if stripped.endswith(".zarr"):
        return "zarr"
    if _is_svmlight_name(stripped):
        return "svmlight"
    if is_csv_name(stripped):
        return "csv"
    if stripped.endswith((".parquet", ".pq")):
        return "parquet"
    if fs.isdir(path):
        root = path.rstrip("/")
        if fs.exists(f"{root}/zarr.json") or fs.exists(f"{root}/.zgroup"):  # v3 or v2
            return "zarr"
        files = [f for f in fs.find(path) if not f.rsplit("/", 1)[-1].startswith((".", "_"))]
        if files and all(is_csv_name(f) for f in files):
            return "csv"
        if files and all(_is_svmlight_name(f) for f in files):
            return "svmlight"
        if files and not any(f.endswith((".parquet", ".pq")) for f in files):
            # files of unknown names: the first one tells (parquet, svmlight or CSV text)
            first = sorted(files)[0]
            return _sniff_file_format(fs, first, first)
        return "parquet"
    return _sniff_file_format(fs, path, url)


#: Leading bytes of the compressions a text file may come in, and fsspec's names for them.
COMPRESSION_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"))
_COMPRESSION_SUFFIX = {"gzip": ".gz", "bz2": ".bz2", "xz": ".xz"}
#: How much of a file of unknown name is read to tell its format.
SNIFF_BYTES = 1 << 16


def _sniff_file_format(fs: Any, path: str, url: str) -> str:
    """The format of a file whose name does not say it, from its first bytes.

    Parquet files begin with ``PAR1``. Text (plain or gzip / bz2 / xz compressed) is
    svmlight when every line read is a label followed by ``index:value`` pairs, and CSV
    when every line holds the same number (> 0) of commas. Anything else is a
    :class:`SourceError` that says what to do (``format=``, or a name that says it).
    """
    with fs.open(path, "rb") as f:
        head = f.read(8)
    if head[:4] == b"PAR1":
        return "parquet"
    if head[:4] == b"PK\x03\x04" and url.lower().endswith(".slm"):
        raise SourceError(f"{url} is a streamlearn model file, not data: commands that read "
                          "data take it as their MODEL argument (predict, evaluate, explain)")
    compression = next((name for magic, name in COMPRESSION_MAGIC if head.startswith(magic)),
                       None)
    if compression is not None and not url.lower().endswith(_COMPRESSION_SUFFIX[compression]):
        raise SourceError(f"{url} is {compression}-compressed but its name does not end in "
                          f"{_COMPRESSION_SUFFIX[compression]}; rename it so")
    try:
        with fs.open(path, "rb", compression=compression) as f:
            text = f.read(SNIFF_BYTES).decode("utf-8", errors="replace")
    except (OSError, EOFError, ValueError) as exc:
        raise SourceError(f"cannot tell the format of {url}: reading its start failed "
                          f"({exc}); pass format=") from None
    lines = [line.strip() for line in text.splitlines()]
    if len(text) == SNIFF_BYTES and lines:
        lines.pop()  # possibly cut short
    lines = [line for line in lines if line and not line.startswith("#")][:100]
    if lines and _looks_like_svmlight(lines):
        return "svmlight"
    commas = {line.count(",") for line in lines}
    if len(commas) == 1 and commas != {0}:
        return "csv"
    tabs = {line.count("\t") for line in lines}
    if len(tabs) == 1 and tabs != {0}:
        raise SourceError(f"{url} looks tab-separated: name it .tsv to read it as such")
    raise SourceError(
        f"cannot tell the format of {url}: its name ends in none of .parquet, .zarr, "
        f".csv, .tsv, {', '.join(SVMLIGHT_SUFFIXES)} and its first bytes look like none of "
        "them; pass format='parquet' | 'zarr' | 'svmlight' | 'csv' (--format on the "
        "command line)")


def _looks_like_svmlight(lines: list[str]) -> bool:
    """Every line a label then ``index:value`` tokens, at least one pair in all."""
    pairs = 0
    for line in lines:
        tokens = line.split("#", 1)[0].split()
        if not tokens or ":" in tokens[0]:
            return False
        rest = tokens[1:]
        if any(t.count(":") != 1 or t.startswith(":") or t.endswith(":") for t in rest):
            return False
        pairs += sum(1 for t in rest if not t.startswith("qid:"))
    return pairs > 0
