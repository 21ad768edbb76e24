"""Checks applied to every chunk as it is read: finite values, and what to do otherwise."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from numba import njit

NanPolicy = Literal["raise", "drop", "impute"] | float


#: Entries checked at a time by :func:`first_nonfinite` (its boolean temporary stays this
#: small, inside the cache) before it looks for an exact index.
FINITE_CHECK_BLOCK = 1 << 18


def missing_labels(y: np.ndarray) -> np.ndarray | None:
    """Which targets are missing, or None when none can be: NaN or infinite in a float
    target, None, NaN or ``pd.NA`` in an object one (a text or categorical label left
    out, which table sources give as None for the dataset's ``nan_policy``, and which an
    object array given as ``y`` may hold as any of them).

    Parameters
    ----------
    y : ndarray
        Targets as a source reads them.

    Returns
    -------
    ndarray of bool or None
    """
    if y.dtype.kind == "f":
        return ~np.isfinite(y)
    if y.dtype.kind == "O":
        return np.asarray(pd.isna(y), dtype=bool)
    return None


def first_nonfinite(X: np.ndarray) -> int:
    """Flat index (C order) of the first NaN or infinite entry of ``X``, or -1.

    Each block of :data:`FINITE_CHECK_BLOCK` entries is checked by numpy's ``isfinite``,
    a vector loop, and only a block with a non-finite entry is searched for the index.
    It runs 7-10x faster than a compiled loop counting ``x * 0 != 0`` (which numba does
    not vectorise) and needs no compiling, which a first fit would pay for.
    """
    flat = X.reshape(-1)
    for lo in range(0, flat.shape[0], FINITE_CHECK_BLOCK):
        finite = np.isfinite(flat[lo:lo + FINITE_CHECK_BLOCK])
        if not finite.all():
            return lo + int(np.argmin(finite))
    return -1


def first_infinite(X: np.ndarray) -> int:
    """Flat index (C order) of the first infinite entry of ``X``, or -1 (NaN passes: a
    missing value under ``nan_policy="impute"``), by blocks as :func:`first_nonfinite`."""
    flat = X.reshape(-1)
    for lo in range(0, flat.shape[0], FINITE_CHECK_BLOCK):
        infinite = np.isinf(flat[lo:lo + FINITE_CHECK_BLOCK])
        if infinite.any():
            return lo + int(np.argmax(infinite))
    return -1


def nonfinite_value(value: float, quantity: str = "feature") -> str:
    """What a value that is not finite in float32 is, for a message: NaN, infinity, or a
    finite number beyond float32's range (the models compute in float32), which the user is
    told to rescale.

    Parameters
    ----------
    value : float
        The value as given (before a cast to float32 made it infinite).
    quantity : str
        What holds it, for the advice: "feature", "target", "weights".

    Returns
    -------
    str
    """
    value = float(value)
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "infinity"
    return (f"the value {value:g} (beyond float32's range, +-3.4e38, in which the models "
            f"compute: rescale the {quantity})")


@njit(cache=True, nogil=True)
def finite_rows(X: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows of ``X`` whose entries are all finite."""
    n, d = X.shape
    keep = np.ones(n, dtype=np.bool_)
    for i in range(n):
        for j in range(d):
            if not np.isfinite(X[i, j]):
                keep[i] = False
                break
    return keep


@njit(cache=True, nogil=True)
def fill_nonfinite(X: np.ndarray, value: float) -> int:
    """Replace NaN and infinite entries of ``X`` in place by ``value``; return how many."""
    flat = X.ravel()
    count = 0
    for i in range(flat.shape[0]):
        if not np.isfinite(flat[i]):
            flat[i] = value
            count += 1
    return count


def has_missing_features(data: object, exclude: tuple[str, ...] = ()) -> bool:
    """Whether in-memory training data holds a missing feature value: NaN in a numeric
    array, or NaN, None, ``pd.NA`` or null in a pandas, polars or pyarrow table's columns
    but those named in ``exclude`` (the target and weight columns). Infinite values are
    not missing. Anything else (a path, a dataset, a dask collection, a sparse matrix)
    answers False: its values are checked as its rows are read.

    Parameters
    ----------
    data : array-like or table
    exclude : tuple of str

    Returns
    -------
    bool
    """
    module = type(data).__module__.split(".")[0]
    if module in ("dask", "dask_expr", "streamlearn") or module.startswith("scipy") or \
            isinstance(data, str | bytes) or hasattr(data, "__fspath__"):
        return False
    if module == "polars" and hasattr(data, "to_arrow"):
        data = data.to_arrow()
        module = "pyarrow"
    if module == "pyarrow" and hasattr(data, "column_names"):
        import pyarrow as pa
        import pyarrow.compute as pc

        for name, column in zip(data.column_names, data.columns, strict=True):
            if name in exclude:
                continue
            if column.null_count or (pa.types.is_floating(column.type)
                                     and pc.any(pc.is_nan(column)).as_py()):
                return True
        return False
    if isinstance(data, pd.DataFrame):
        kept = [c for c in data.columns if str(c) not in exclude]
        return bool(data[kept].isna().to_numpy().any())
    try:
        values = np.asarray(data)
    except (TypeError, ValueError):
        return False
    if values.dtype.kind == "f":
        return bool(np.isnan(values).any())
    if values.dtype.kind == "O":
        return bool(pd.isna(values).any())
    return False


def check_nan_policy(policy: object) -> NanPolicy:
    """Validate a ``nan_policy`` argument: ``"raise"``, ``"drop"``, ``"impute"`` or a finite
    fill value."""
    if policy in ("raise", "drop", "impute"):
        return policy  # type: ignore[return-value]
    if isinstance(policy, int | float) and not isinstance(policy, bool) and np.isfinite(policy):
        return float(policy)
    raise ValueError(
        f"nan_policy must be 'raise', 'drop', 'impute' or a finite number to fill with, got "
        f"{policy!r}"
    )
