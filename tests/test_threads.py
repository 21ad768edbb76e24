"""The threads a chunk's kernels share: their bounds, and BLAS held to one thread."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from streamlearn.solvers.threads import in_threads, single_threaded_blas, thread_bounds


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_bounds_cover_the_items_in_parts_of_at_least_the_smallest() -> None:
    for n, smallest in ((0, 1), (5, 1), (10_000, 2048), (1000, 2048)):
        bounds = thread_bounds(n, smallest)
        assert bounds[0] == 0 and bounds[-1] == n
        # evenly spaced parts, as numpy spaces them
        np.testing.assert_array_equal(bounds, np.linspace(0, n, len(bounds)).astype(np.int64))
        assert bounds.dtype == np.int64
        assert np.all(np.diff(bounds) >= 0)
        if len(bounds) > 2:
            assert np.all(np.diff(bounds) >= smallest)
    parts = in_threads(lambda lo, hi: list(range(lo, hi)), thread_bounds(10, 1))
    assert [i for part in parts for i in part] == list(range(10))


def test_blas_is_held_to_one_thread_inside_and_restored_after() -> None:
    # from two threads, not the one that tests/conftest.py holds every worker to
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        assert before and all(n == 2 for n in before)
        with single_threaded_blas():
            assert all(n == 1 for n in _blas_threads())
        assert _blas_threads() == before
