"""Feature hashing: MurmurHash3 (x86, 32-bit) and the column and sign a hash gives.

A named feature (a word, ``column=value``) becomes a column of a fixed-size sparse row, as
Vowpal Wabbit's ``-b`` does: the name is hashed with :func:`murmur3_32` (seed 0), the low
bits of the hash pick one of ``n_columns = 2**k`` columns and bit 31 a sign that the value is
multiplied by, so that colliding features tend to cancel rather than add up. Entries of a
row that land on one column are summed (:func:`sum_duplicates`), which keeps rows valid CSR
(distinct column indices).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Largest number of hashed columns: a power of two whose mask leaves bit 31 (the sign) out,
#: and whose columns fit int32 indices.
MAX_HASH_FEATURES = 2**30

#: Bit of a hash that gives its sign (1: negative); never part of a column mask.
SIGN_BIT = 31

#: Rows with at most this many entries are sorted by insertion, longer ones by heap sort.
INSERTION_SORT_LIMIT = 24

_MASK32 = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593


def check_hash_features(value: object, name: str = "hash_features") -> int:
    """Validate a number of hashed columns: a power of two in ``[2, MAX_HASH_FEATURES]``.

    Parameters
    ----------
    value : int
        The number given.
    name : str
        The parameter's name, for the message.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        ``value`` is not an integer power of two in that range.
    """
    ok = isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
    n = int(value) if ok else 0  # type: ignore[call-overload]
    if not ok or n < 2 or n > MAX_HASH_FEATURES or n & (n - 1):
        raise ValueError(f"{name} must be a power of two between 2 and 2**30 (e.g. 2**20), "
                         f"got {value!r}")
    return n


@njit(cache=True, nogil=True, forceinline=True)
def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK32


@njit(cache=True, nogil=True)
def murmur3_32(buf: np.ndarray, start: int, end: int, seed: int) -> np.uint32:
    """MurmurHash3_x86_32 of the bytes ``buf[start:end]``.

    Austin Appleby's reference algorithm, bit for bit (``murmur3_32(b"abc", seed=0)`` is
    ``0xB3DD93FA``): 4-byte little-endian blocks, then the tail, then the final mix.

    Parameters
    ----------
    buf : ndarray of uint8
    start, end : int
        The byte range hashed.
    seed : int
        32-bit seed.

    Returns
    -------
    int
        The unsigned 32-bit hash (a ``uint32`` inside compiled code).
    """
    # int64 arithmetic masked to 32 bits (products wrap modulo 2**64, their low bits exact)
    h = np.int64(seed) & _MASK32
    n = end - start
    stop = start + (n & ~3)
    for p in range(start, stop, 4):
        k = (np.int64(buf[p]) | (np.int64(buf[p + 1]) << 8) | (np.int64(buf[p + 2]) << 16)
             | (np.int64(buf[p + 3]) << 24))
        k = (k * _C1) & _MASK32
        k = _rotl32(k, 15)
        k = (k * _C2) & _MASK32
        h ^= k
        h = _rotl32(h, 13)
        h = (h * 5 + 0xE6546B64) & _MASK32
    tail = n & 3
    if tail:
        k = np.int64(0)
        if tail == 3:
            k ^= np.int64(buf[stop + 2]) << 16
        if tail >= 2:
            k ^= np.int64(buf[stop + 1]) << 8
        k ^= np.int64(buf[stop])
        k = (k * _C1) & _MASK32
        k = _rotl32(k, 15)
        k = (k * _C2) & _MASK32
        h ^= k
    h ^= np.int64(n) & _MASK32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    h ^= h >> 16
    return np.uint32(h)


@njit(cache=True, nogil=True)
def hashed_column(h: np.uint32, n_columns: int) -> tuple[int, float]:
    """The column and sign a hash gives among ``n_columns`` (a power of two).

    Parameters
    ----------
    h : uint32
        A hash from :func:`murmur3_32`.
    n_columns : int
        Number of columns, a power of two at most ``MAX_HASH_FEATURES`` (2**30).

    Returns
    -------
    column : int
        ``h mod n_columns``: the low bits of ``h``.
    sign : float
        +1.0 when bit 31 of ``h`` (``SIGN_BIT``) is 0, else -1.0; no mask of at most 30
        bits uses that bit, so a feature's sign is independent of its column.
    """
    x = np.int64(h)
    column = x & (n_columns - 1)
    sign = -1.0 if (x >> SIGN_BIT) & 1 else 1.0
    return column, sign


@njit(cache=True, nogil=True)
def sort_int64(a: np.ndarray, n: int) -> None:
    """Sort ``a[:n]`` of any integer type in place, ascending (insertion sort when short,
    else heap sort)."""
    if n <= INSERTION_SORT_LIMIT:
        for i in range(1, n):
            x = a[i]
            j = i - 1
            while j >= 0 and a[j] > x:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = x
        return
    for k in range(n // 2 - 1, -1, -1):
        _sift_down(a, k, n)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift_down(a, 0, end)


@njit(cache=True, nogil=True)
def _sift_down(a: np.ndarray, root: int, n: int) -> None:
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and a[child] < a[child + 1]:
            child += 1
        if a[root] >= a[child]:
            return
        a[root], a[child] = a[child], a[root]
        root = child


@njit(cache=True, nogil=True)
def sum_duplicates(columns: np.ndarray, values: np.ndarray, lo: int, hi: int,
                   order: np.ndarray, scratch: np.ndarray) -> int:
    """Sort the entries ``lo:hi`` of one row by column and sum those sharing a column.

    Sums run in the order the entries had, so the result does not depend on the sort.

    Parameters
    ----------
    columns : ndarray of int64
        Column of each entry (non-negative, below 2**31).
    values : ndarray of float64
        Value of each entry.
    lo, hi : int
        The row's entries; on return ``columns[lo:lo + m]`` and ``values[lo:lo + m]`` hold
        its ``m`` distinct columns, ascending, and their summed values.
    order : ndarray of int64
    scratch : ndarray of float64
        Scratch space, each of at least ``hi - lo`` values.

    Returns
    -------
    int
        ``m``, the number of distinct columns.
    """
    n = hi - lo
    if n == 0:
        return 0
    for k in range(n):
        order[k] = (columns[lo + k] << 32) | k
        scratch[k] = values[lo + k]
    sort_int64(order, n)
    m = 0
    current = order[0] >> 32
    acc = scratch[order[0] & _MASK32]
    for k in range(1, n):
        col = order[k] >> 32
        v = scratch[order[k] & _MASK32]
        if col == current:
            acc += v
        else:
            columns[lo + m] = current
            values[lo + m] = acc
            m += 1
            current = col
            acc = v
    columns[lo + m] = current
    values[lo + m] = acc
    return m + 1


@njit(cache=True, nogil=True)
def hash_strings(prefix: np.ndarray, offsets: np.ndarray, data: np.ndarray,
                 out: np.ndarray) -> None:
    """Hash ``prefix + string`` for each string of an Arrow-style string array.

    Parameters
    ----------
    prefix : ndarray of uint8
        Bytes put before every string (``b"column="``).
    offsets : ndarray of int32 or int64
        String ``i`` is ``data[offsets[i]:offsets[i + 1]]``.
    data : ndarray of uint8
    out : ndarray of uint32
        Receives the :func:`murmur3_32` hash (seed 0) of each string, prefix included.
    """
    p = prefix.shape[0]
    scratch = np.empty(max(64, 2 * p), dtype=np.uint8)
    scratch[:p] = prefix
    for i in range(out.shape[0]):
        a = offsets[i]
        n = offsets[i + 1] - a
        if p + n > scratch.shape[0]:
            bigger = np.empty(2 * (p + n), dtype=np.uint8)
            bigger[:p] = prefix
            scratch = bigger
        for k in range(n):
            scratch[p + k] = data[a + k]
        out[i] = murmur3_32(scratch, 0, p + n, 0)
