"""Chunk buffers of many MiB mapped on their own, so that a pass's peak RSS stays flat.

glibc's ``malloc`` serves an allocation above its mmap threshold by a mapping of its own,
given back to the system when it is freed. The threshold starts at 128 KiB and, by
default, rises to the size of each such block freed (up to 32 MiB): after the first
chunk's buffers are freed, the next ones of that size come from the heap. Buffers freed
in another order than they were made (a piece parsed in the reading thread, its rows
permuted in the computing one) leave holes the heap keeps, and they add up over a pass:
one epoch of the linear model over 500,000 and 2,000,000 rows of svmlight text peaked at
576 and 678 MiB with the same live memory (the bounded prefetch queue and the model).

:func:`map_large_buffers` fixes the threshold at :data:`LARGE_BUFFER_BYTES`, which also
stops its rise: buffers that large are mapped and given back one by one (the same
epochs then peak at 560 and 581 MiB). Smaller ones, a dense chunk of the default size
and a zarr chunk of 25,600 sparse rows among them, stay in the heap, where reusing them
costs no page faults; the heap's trim threshold is set to twice the mmap threshold, as
the rising rule sets it (left at its 128 KiB, the heap gave back and faulted in again
the pages of every chunk: sparse epochs from zarr took 12 % longer).

A process where ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_`` is set keeps its
own setting; ``STREAMLEARN_MMAP_THRESHOLD`` sets another threshold in bytes (``0``: leave
``malloc`` as it is). Elsewhere than glibc nothing is changed.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading

#: Allocations of at least this many bytes are mapped on their own: 1 MiB above a dense
#: chunk of the default size (``DEFAULT_CHUNK_BYTES``, 16 MiB), whose buffers stay in the
#: heap as they do without the fixed threshold; an svmlight piece of 65,536 rows of 80
#: entries holds two 20 MiB arrays.
LARGE_BUFFER_BYTES = 17 << 20

#: ``mallopt`` parameters of glibc: ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD``.
_M_MMAP_THRESHOLD = -3
_M_TRIM_THRESHOLD = -1

_lock = threading.Lock()
_applied: bool | None = None


def mmap_threshold_setting() -> int:
    """The threshold :func:`map_large_buffers` sets: ``STREAMLEARN_MMAP_THRESHOLD`` when
    given, else :data:`LARGE_BUFFER_BYTES`; 0 where ``MALLOC_MMAP_THRESHOLD_`` or
    ``MALLOC_TRIM_THRESHOLD_`` is set (the process's own choice) or the variable asks for
    none.

    Raises
    ------
    ValueError
        ``STREAMLEARN_MMAP_THRESHOLD`` is not a whole number of bytes from 0 to 2^30.
    """
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return 0
    given = os.environ.get("STREAMLEARN_MMAP_THRESHOLD")
    if given is None:
        return LARGE_BUFFER_BYTES
    try:
        value = int(given)
    except ValueError:
        value = -1
    if not 0 <= value <= 1 << 30:
        raise ValueError("STREAMLEARN_MMAP_THRESHOLD must be a number of bytes from 0 "
                         f"(leave malloc as it is) to {1 << 30}, got {given!r}")
    return value


def map_large_buffers() -> bool:
    """Fix glibc's mmap threshold (once per process; see the module's text).

    Returns
    -------
    bool
        Whether the threshold is set: False off glibc, or where the setting is 0.
    """
    global _applied
    with _lock:
        if _applied is None:
            threshold = mmap_threshold_setting()
            _applied = threshold > 0 and _set_mmap_threshold(threshold)
        return _applied


def _set_mmap_threshold(threshold: int) -> bool:
    """``mallopt(M_MMAP_THRESHOLD, threshold)`` and ``mallopt(M_TRIM_THRESHOLD, 2 *
    threshold)`` of glibc; False where there is none."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, int(threshold))
                and mallopt(_M_TRIM_THRESHOLD, 2 * int(threshold)))
