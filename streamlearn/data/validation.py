"""Checks applied to every chunk as it is read: finite values, and what to do otherwise."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numba import njit

NanPolicy = Literal["raise", "drop"] | float


@njit(cache=True, nogil=True)
def first_nonfinite(X: np.ndarray) -> int:
    """Flat index of the first NaN or infinite entry of a C-contiguous matrix, or -1."""
    flat = X.ravel()
    for i in range(flat.shape[0]):
        v = flat[i]
        if not np.isfinite(v):
            return i
    return -1


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


def check_nan_policy(policy: object) -> NanPolicy:
    """Validate a ``nan_policy`` argument: ``"raise"``, ``"drop"`` or a finite fill value."""
    if policy in ("raise", "drop"):
        return policy  # type: ignore[return-value]
    if isinstance(policy, int | float) and not isinstance(policy, bool) and np.isfinite(policy):
        return float(policy)
    raise ValueError(
        f"nan_policy must be 'raise', 'drop' or a finite number to fill with, got {policy!r}"
    )
