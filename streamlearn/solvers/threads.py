"""Sharing one chunk's kernels (which release the GIL) between a few threads.

ShareBoost splits a chunk's rows between them; the mixture of SVMs gives each its share of
the one-against-the-rest mixtures (lanes), which read the same chunk.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np

#: Threads that share one chunk's kernels, at most.
MAX_THREADS = 4
#: Rows (corrective step) or centres (anchor scores) a thread gets at least.
MIN_ROWS_PER_THREAD = 2048
MIN_CENTRES_PER_THREAD = 32
#: Rows of a chunk from which the mixture's lanes of one chunk are shared between threads
#: (a lane's work on fewer rows is shorter than handing it to a thread).
MIN_ROWS_FOR_LANE_THREADS = 256


def thread_bounds(n: int, smallest: int) -> np.ndarray:
    """Bounds of contiguous parts of ``range(n)``, one per thread, each ``smallest`` or more.

    Parameters
    ----------
    n : int
        Items to split.
    smallest : int
        Items a part holds at least.

    Returns
    -------
    ndarray of shape (parts + 1,), int64
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parts = max(1, min(MAX_THREADS, cores or 1, n // max(smallest, 1)))
    if parts == 1:  # linspace's bounds, without its cost (a tenth of a small pass)
        return np.array([0, n], dtype=np.int64)
    return np.linspace(0, n, parts + 1).astype(np.int64)


def in_threads(work: Callable[[int, int], Any], bounds: np.ndarray) -> list[Any]:
    """``work(lo, hi)`` for consecutive bounds, in threads when there are several parts.

    Parameters
    ----------
    work : callable
        ``work(lo, hi)`` for one part.
    bounds : ndarray
        From :func:`thread_bounds`.

    Returns
    -------
    list
        The parts' results, in order.
    """
    if len(bounds) == 2:
        return [work(int(bounds[0]), int(bounds[1]))]
    return list(_pool().map(work, bounds[:-1].tolist(), bounds[1:].tolist()))


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Hold the BLAS libraries to one thread inside the block (restored after it).

    For work that this module's threads share, which calls BLAS (numpy's matrix products)
    from each thread: BLAS's own threads would compete with them for the cores, and keep
    spinning between calls. scikit-learn's k-means does the same around its iterations.
    """
    global _BLAS
    with _POOL_LOCK:
        if _BLAS is None or _BLAS[0] != os.getpid():
            from threadpoolctl import ThreadpoolController

            _BLAS = (os.getpid(), ThreadpoolController())
        controller = _BLAS[1]
    with controller.limit(limits=1, user_api="blas"):
        yield


_BLAS: tuple[int, Any] | None = None
_POOL: tuple[int, ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    # One pool of MAX_THREADS for the process, made at first use: a corrective step runs
    # a pass per L-BFGS evaluation, and starting threads for each took a fifth of a pass
    # on small chunks. Work submitted to it never submits more, so callers in several
    # threads only queue. Keyed by the process id: a forked child gets a fresh pool, not
    # the parent's, whose threads it does not have.
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != os.getpid():
            _POOL = (os.getpid(), ThreadPoolExecutor(MAX_THREADS,
                                                     thread_name_prefix="streamlearn-chunk"))
        return _POOL[1]
