"""The ``Pass`` protocol: everything a learner asks of the data is one walk over its chunks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from streamlearn.data.chunk import Chunk

S = TypeVar("S")
R = TypeVar("R")


@runtime_checkable
class Pass(Protocol[S, R]):
    """One walk over every chunk of a dataset.

    A *reduction* pass maps each chunk to a small statistic; ``merge`` combines two states
    associatively, so the walk may be split across threads or workers in any grouping.
    A *sequential* pass threads one state through the chunks in order; engines that split it
    merge the per-worker states by weighted averaging (parameter mixing).
    """

    kind: Literal["reduction", "sequential"]

    def start(self) -> S:
        """Return the initial (empty) state."""
        ...

    def step(self, state: S, chunk: Chunk) -> S:
        """Fold one chunk into ``state`` and return the new state (may mutate in place)."""
        ...

    def merge(self, a: S, b: S) -> S:
        """Combine two states computed on disjoint sets of chunks.

        Must not modify ``a`` or ``b``: engines may retry a partition or reuse a partial
        state in a tree reduction.
        """
        ...

    def finish(self, state: S) -> R:
        """Turn the final state into the pass's result."""
        ...


@dataclass
class Reduction(Generic[S, R]):
    """A reduction pass assembled from four plain functions.

    Examples
    --------
    >>> rows = Reduction(start=lambda: 0, step=lambda s, c: s + c.n_rows,
    ...                  merge=lambda a, b: a + b)
    """

    start: Callable[[], S]
    step: Callable[[S, Chunk], S]
    merge: Callable[[S, S], S]
    finish: Callable[[S], R] = lambda state: state  # type: ignore[assignment, return-value]
    kind: Literal["reduction", "sequential"] = "reduction"


def run_chunks(pass_: Pass[Any, R], chunks: Any) -> R:
    """Run ``pass_`` over an iterable of chunks in the calling thread (reference semantics)."""
    state = pass_.start()
    for chunk in chunks:
        state = pass_.step(state, chunk)
    return pass_.finish(state)

