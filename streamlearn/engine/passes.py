"""The ``Pass`` and ``Engine`` protocols: everything a learner asks of the data is a pass.

A pass walks every chunk of a dataset once; an engine runs passes. The engines are
:class:`~streamlearn.engine.local.LocalEngine`, :class:`~streamlearn.engine.dask_engine.DaskEngine`
and the checkpointing wrapper :class:`~streamlearn.engine.checkpoint.CheckpointedRunner`; each
implements ``run`` and inherits the one ``reduce`` from :class:`EngineBase`. Every ``run``
counts one pass, with the rows and bytes it read, in the engine's ``passes`` log (see
:mod:`streamlearn.engine.accounting`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from streamlearn.data.chunk import Chunk
from streamlearn.engine.accounting import PassLog

S = TypeVar("S")
R = TypeVar("R")


@runtime_checkable
class Pass(Protocol[S, R]):
    """One walk over every chunk of a dataset.

    A *reduction* pass maps each chunk to a small statistic; ``merge`` combines two states
    associatively, so the walk may be split across threads or workers in any grouping.
    A *sequential* pass threads one state through the chunks in order; engines that split it
    merge the per-worker states by weighted averaging (parameter mixing). A sequential pass
    may define ``lane(share)``, the pass one of several lanes runs when it holds ``share``
    of the rows (the shares add up to 1); an engine that splits the pass into lanes then
    runs that in each, and ``merge`` combines the lanes as the pass defines (dual
    coordinate descent scales its dual variables' changes by the share).
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


class Together:
    """Reduction pass: several reduction passes in one walk over the data.

    Its state and result are tuples, one entry per pass in the order given.

    Parameters
    ----------
    *passes : reduction passes
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, *passes: Pass[Any, Any]) -> None:
        if any(p.kind != "reduction" for p in passes):
            raise ValueError("Together runs reduction passes only")
        self.passes = tuple(passes)

    def start(self) -> tuple[Any, ...]:
        """Every pass's initial state."""
        return tuple(p.start() for p in self.passes)

    def step(self, state: tuple[Any, ...], chunk: Chunk) -> tuple[Any, ...]:
        """The chunk folded into every pass's state."""
        return tuple(p.step(s, chunk) for p, s in zip(self.passes, state, strict=True))

    def merge(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        """Every pass's merge of its two states."""
        return tuple(p.merge(x, y) for p, x, y in zip(self.passes, a, b, strict=True))

    def finish(self, state: tuple[Any, ...]) -> tuple[Any, ...]:
        """Every pass's result."""
        return tuple(p.finish(s) for p, s in zip(self.passes, state, strict=True))


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


@runtime_checkable
class Engine(Protocol):
    """Runs passes over a dataset: what a learner's driver asks of its engine.

    ``run`` walks every chunk of ``data`` once through a pass and returns the pass's
    result; ``reduce`` does the same for a reduction given as plain functions. Every engine
    accepts the ``run`` options below; an engine may accept more (``LocalEngine`` resumes a
    pass from a checkpoint with ``resume`` and ``on_chunk``).
    """

    def run(
        self,
        pass_: Pass[Any, R],
        data: Any,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        epoch: int = 0,
        description: str | None = None,
        rows: tuple[int, int] | None = None,
    ) -> R:
        """Walk every chunk of ``data`` once through ``pass_`` and return its result.

        Parameters
        ----------
        pass_ : Pass
        data : Dataset or anything ``open_dataset`` accepts
        shuffle, seed, epoch
            Chunk-order and within-chunk shuffling, see :meth:`Dataset.chunks`.
        description : str, optional
            Label of the progress bar.
        rows : (start, stop), optional
            Restrict the pass to a row range.
        """
        ...

    def reduce(
        self,
        data: Any,
        start: Callable[[], S],
        step: Callable[[S, Chunk], S],
        merge: Callable[[S, S], S],
        finish: Callable[[S], R] | None = None,
        **run_options: Any,
    ) -> R | S:
        """Run the reduction ``Reduction(start, step, merge, finish)`` over ``data``."""
        ...


class EngineBase:
    """What every engine shares: ``reduce`` is ``run`` of a :class:`Reduction`.

    A subclass implements ``run`` (see :class:`Engine`) and records every run in its
    :attr:`passes` log (see :mod:`streamlearn.engine.accounting`).
    """

    @property
    def passes(self) -> PassLog:
        """Every pass this engine ran, with the rows and bytes it read."""
        log = self.__dict__.get("_passes")
        if log is None:
            log = self.__dict__["_passes"] = PassLog()
        return log

    def run(self, pass_: Pass[Any, R], data: Any, **run_options: Any) -> R:
        """Walk every chunk of ``data`` once through ``pass_``; implemented by each engine."""
        raise NotImplementedError(f"{type(self).__name__} does not implement run")

    def reduce(
        self,
        data: Any,
        start: Callable[[], S],
        step: Callable[[S, Chunk], S],
        merge: Callable[[S, S], S],
        finish: Callable[[S], R] | None = None,
        **run_options: Any,
    ) -> R | S:
        """Run a reduction given as plain functions through :meth:`run`.

        Parameters
        ----------
        data : Dataset or anything ``open_dataset`` accepts
        start, step, merge, finish
            The functions of a :class:`Reduction`; without ``finish`` the result is the
            final state.
        **run_options
            Passed on to :meth:`run` (``shuffle``, ``seed``, ``rows``, ...).

        Returns
        -------
        The reduction's result.
        """
        reduction: Reduction[S, Any] = Reduction(start=start, step=step, merge=merge)
        if finish is not None:
            reduction.finish = finish
        return self.run(reduction, data, **run_options)


def run_chunks(pass_: Pass[Any, R], chunks: Any) -> R:
    """Run ``pass_`` over an iterable of chunks in the calling thread (reference semantics)."""
    state = pass_.start()
    for chunk in chunks:
        state = pass_.step(state, chunk)
    return pass_.finish(state)

