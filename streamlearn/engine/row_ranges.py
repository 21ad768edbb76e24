"""A pass over a few row ranges of a dataset instead of all of it.

Statistics that a sample answers well (the ranges and quantiles a feature map is fitted to)
need not cost a full read of data larger than memory. :func:`spread_ranges` picks ranges
spread evenly over the rows, so that a file stored sorted (by class, by time) is sampled
from end to end; :func:`run_on_ranges` runs one pass per range, each through the engine as
usual (so it is counted as the share of the rows it read, checkpointed and run on dask like
any pass), and merges their states with the pass's own ``merge``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, Literal, TypeVar

import numpy as np

from streamlearn.data.chunk import Chunk
from streamlearn.engine.passes import Pass

S = TypeVar("S")
R = TypeVar("R")


class Unfinished(Generic[S, R]):
    """``pass_`` whose result is its last state, to be merged with other parts' states.

    Parameters
    ----------
    pass_ : Pass
    """

    def __init__(self, pass_: Pass[S, R]) -> None:
        self.pass_ = pass_
        self.kind: Literal["reduction", "sequential"] = pass_.kind

    def start(self) -> S:
        """The pass's initial state."""
        return self.pass_.start()

    def step(self, state: S, chunk: Chunk) -> S:
        """The pass's step."""
        return self.pass_.step(state, chunk)

    def merge(self, a: S, b: S) -> S:
        """The pass's merge."""
        return self.pass_.merge(a, b)

    def finish(self, state: S) -> S:
        """The state itself."""
        return state


def spread_ranges(n_rows: int, chunk_rows: int, n_ranges: int) -> list[tuple[int, int]]:
    """``n_ranges`` chunk-aligned row ranges of ``chunk_rows`` rows, evenly spread.

    Parameters
    ----------
    n_rows : int
        Rows of the dataset.
    chunk_rows : int
        Rows per range (the dataset's chunk size, so that each range is one chunk).
    n_ranges : int
        Ranges wanted; all chunks when the data has no more than that.

    Returns
    -------
    list of (start, stop)
        Sorted, disjoint, the first starting at row 0 and the last ending at ``n_rows``.
    """
    n_chunks = -(-int(n_rows) // int(chunk_rows))
    picked = np.unique(np.rint(np.linspace(0, n_chunks - 1, min(n_ranges, n_chunks))))
    return [(int(k) * chunk_rows, min((int(k) + 1) * chunk_rows, int(n_rows)))
            for k in picked.astype(np.int64)]


def run_on_ranges(runner: Any, pass_: Pass[Any, R], data: Any,
                  ranges: Sequence[tuple[int, int]], *, description: str) -> R:
    """Run ``pass_`` over each row range of ``data`` and finish the merged state.

    Parameters
    ----------
    runner : engine
    pass_ : Pass
        A reduction (its ``merge`` combines the ranges' states).
    data : Dataset
    ranges : sequence of (start, stop)
        Disjoint row ranges.
    description : str
        Label of the progress bars (numbered by range).

    Returns
    -------
    The pass's result over the rows of the ranges.
    """
    if pass_.kind != "reduction":
        raise ValueError("run_on_ranges merges the ranges' states: it takes a reduction pass")
    state = None
    for k, rows in enumerate(ranges):
        part = runner.run(Unfinished(pass_), data, rows=tuple(rows),
                          description=f"{description} {k + 1}/{len(ranges)}")
        state = part if state is None else pass_.merge(state, part)
    return pass_.finish(pass_.start() if state is None else state)
