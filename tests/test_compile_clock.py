"""CompileClock counts the time numba spends compiling inside a block, and nothing else."""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from streamlearn.engine.compile_clock import CompileClock


def test_counts_a_first_compile_and_not_a_cached_call():
    @njit
    def total(x):
        s = 0.0
        for v in x:
            s += v
        return s

    x = np.arange(5.0)
    started = time.perf_counter()
    with CompileClock() as first:
        assert total(x) == 10.0
    elapsed = time.perf_counter() - started
    assert 0.0 < first.seconds <= elapsed
    with CompileClock() as second:
        time.sleep(0.01)  # time that is not compiling
        assert total(x) == 10.0
    assert second.seconds == 0.0
    # a new signature compiles again
    with CompileClock() as third:
        assert total(np.arange(5, dtype=np.float32)) == 10.0
    assert third.seconds > 0.0


def test_stops_listening_at_exit():
    with CompileClock() as clock:
        pass

    @njit
    def one():
        return 1

    assert one() == 1
    assert clock.seconds == 0.0
