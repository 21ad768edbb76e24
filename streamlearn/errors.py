"""Exceptions raised by streamlearn.

Every problem a user can fix (a bad file, a bad column, a bad label) raises a subclass of
:class:`StreamlearnError` whose message names what is wrong and where: the file, the column,
the row. Library internals (numba, pyarrow, zarr) never leak their own tracebacks for such
problems; they are wrapped with the original exception chained as ``__cause__``.
"""

from __future__ import annotations


class StreamlearnError(Exception):
    """Base class of every error streamlearn raises on purpose."""


class SourceError(StreamlearnError, TypeError):
    """The object or path given as a data source is not something streamlearn can read."""


class SchemaError(StreamlearnError, ValueError):
    """Columns are missing, extra, non-numeric, or differ between the files of a dataset."""


class DataError(StreamlearnError, ValueError):
    """Values are unusable: NaN or infinite entries, empty data, ragged arrays."""


class MissingValueError(DataError):
    """A feature value is missing (NaN) in data read with ``nan_policy="raise"``: a fit of
    ``nan_policy="auto"`` reads such data again as missing values."""


class LabelError(StreamlearnError, ValueError):
    """The target does not fit the task: absent, a single class, unknown labels."""


class ReadError(StreamlearnError, OSError):
    """A file or store could not be read (corrupt, truncated, unreachable)."""


class ModelFileError(StreamlearnError, ValueError):
    """A model file is truncated, tampered with, of another format version, or not a model."""


class EngineError(StreamlearnError, RuntimeError):
    """An engine cannot run a pass: no dask client, or a pass it cannot split or ship."""


class CheckpointError(StreamlearnError, ValueError):
    """A checkpoint is damaged, or was written by another fit than the one resuming from it."""
