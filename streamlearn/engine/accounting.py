"""Pass accounting: how many times a fit read its data, and how many bytes.

Every engine ``run`` opens one :class:`PassRecord` and adds to it the rows and bytes of the
chunks it walks. The record goes to the engine's own :class:`PassLog` (its ``passes``
attribute) and to every log opened by :func:`recording` in the calling thread or task, so a
fit can count the passes of all the engines it used::

    with recording() as log:
        model.fit(data)
    log.passes, log.rows_read, log.bytes_read

Rows and bytes are counted as follows:

- the rows of a chunk are the rows of the block it was cut from (``chunk_rows`` rows from
  ``Chunk.start``, fewer at the end of the walk), rows dropped by ``nan_policy="drop"``
  included, so a walk over every row of a dataset reads exactly ``n_rows`` rows;
- the bytes of a chunk are those of its values as the passes receive them: features,
  target and weights (:attr:`Chunk.nbytes` less the row index, which the walk makes rather
  than reads); a store's compressed bytes on disk are not what is counted.

The checkpointing wrapper counts a pass it replays from a checkpoint, and the part of a
resumed pass read before the interruption, as they were counted when first read, so a fit
resumed from a checkpoint reports the passes of the whole fit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from streamlearn.data.chunk import Chunk
from streamlearn.engine.interrupts import raise_noted_interrupt

#: Logs opened by :func:`recording` in the current context, innermost last.
_ACTIVE: ContextVar[tuple[PassLog, ...]] = ContextVar("streamlearn_pass_logs", default=())


def chunk_bytes(chunk: Chunk) -> int:
    """Bytes of the values a chunk carries: features, target and weights.

    Parameters
    ----------
    chunk : Chunk

    Returns
    -------
    int
        ``chunk.nbytes`` less the bytes of its row index.
    """
    index = chunk.index
    return int(chunk.nbytes) - (0 if index is None else int(index.nbytes))


def chunk_span(chunk: Chunk, chunk_rows: int, stop: int) -> int:
    """Rows of the block ``chunk`` was cut from (rows dropped by validation included).

    Parameters
    ----------
    chunk : Chunk
    chunk_rows : int
        Rows per block of the walk.
    stop : int
        End (exclusive) of the walk's row range.

    Returns
    -------
    int
    """
    return max(0, min(int(chunk.start) + int(chunk_rows), int(stop)) - int(chunk.start))


@dataclass
class PassRecord:
    """One pass: what it was, over how many rows, and what it read.

    Attributes
    ----------
    description : str
        The pass's label (its progress bar's).
    total_rows : int
        Rows of the dataset the pass walked.
    range_rows : int
        Rows the pass was asked to walk (``total_rows``, or the size of its ``rows=`` range).
    rows : int
        Rows read so far.
    nbytes : int
        Bytes read so far (see :func:`chunk_bytes`).
    replayed : bool
        Whether the result came from a checkpoint (the counts are those of the original read).
    """

    description: str
    total_rows: int
    range_rows: int
    rows: int = 0
    nbytes: int = 0
    replayed: bool = False

    def add(self, rows: int, nbytes: int) -> None:
        """Count ``rows`` more rows and ``nbytes`` more bytes."""
        self.rows += int(rows)
        self.nbytes += int(nbytes)

    @property
    def full(self) -> bool:
        """Whether the pass read every row of its dataset."""
        return self.total_rows > 0 and self.rows >= self.total_rows

    @property
    def fraction(self) -> float:
        """Rows read as a share of the dataset's rows (1.0 for a full pass)."""
        return self.rows / self.total_rows if self.total_rows > 0 else 0.0

    def counts(self) -> dict[str, Any]:
        """The record as JSON-safe values (what a checkpoint stores)."""
        return {"description": self.description, "total_rows": int(self.total_rows),
                "range_rows": int(self.range_rows), "rows": int(self.rows),
                "nbytes": int(self.nbytes)}


@dataclass
class PassLog:
    """The passes an engine ran, or a fit made.

    Attributes
    ----------
    records : list of PassRecord
        One per pass, in the order they started.
    """

    records: list[PassRecord] = field(default_factory=list)

    @property
    def passes(self) -> int:
        """Passes run (whole or over part of the rows)."""
        return len(self.records)

    @property
    def full_passes(self) -> int:
        """Passes that read every row of their dataset."""
        return sum(1 for r in self.records if r.full)

    @property
    def rows_read(self) -> int:
        """Rows read by all passes together."""
        return sum(r.rows for r in self.records)

    @property
    def bytes_read(self) -> int:
        """Bytes read by all passes together."""
        return sum(r.nbytes for r in self.records)

    @property
    def descriptions(self) -> list[str]:
        """Label of every pass, in order."""
        return [r.description for r in self.records]

    def passes_over(self, n_rows: int) -> float:
        """Passes over a dataset of ``n_rows`` rows: ``rows_read / n_rows``.

        A pass over part of the rows counts as the share of the rows it read.
        """
        return self.rows_read / n_rows if n_rows > 0 else 0.0

    def clear(self) -> None:
        """Forget every record."""
        self.records.clear()

    def __repr__(self) -> str:
        return (f"PassLog(passes={self.passes}, full_passes={self.full_passes}, "
                f"rows_read={self.rows_read}, bytes_read={self.bytes_read})")


def open_pass(own: PassLog | None, description: str, total_rows: int,
              range_rows: int, *, replayed: bool = False) -> PassRecord:
    """Start the record of one pass in ``own`` and in every log of :func:`recording`.

    Parameters
    ----------
    own : PassLog or None
        The engine's own log.
    description : str
    total_rows, range_rows : int
        Rows of the dataset, rows the pass is asked to walk.
    replayed : bool
        The pass's result is replayed from a checkpoint.

    Returns
    -------
    PassRecord
        Shared by all those logs: the engine adds the chunks it reads to it.

    Raises
    ------
    KeyboardInterrupt
        A Ctrl-C that a finalizer dropped since the last pass started
        (:mod:`~streamlearn.engine.interrupts`).
    """
    raise_noted_interrupt()
    record = PassRecord(description=str(description), total_rows=int(total_rows),
                        range_rows=int(range_rows), replayed=replayed)
    if own is not None:
        own.records.append(record)
    for log in _ACTIVE.get():
        log.records.append(record)
    return record


@contextlib.contextmanager
def recording() -> Iterator[PassLog]:
    """Count the passes every engine runs in this context (thread or task).

    Logs nest: a pass run inside two ``recording`` blocks is counted by both.

    Yields
    ------
    PassLog
    """
    log = PassLog()
    token = _ACTIVE.set((*_ACTIVE.get(), log))
    try:
        yield log
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def capturing(log: PassLog | None = None) -> Iterator[PassLog]:
    """Count the passes run in this context in one log *instead of* the open ones.

    For an engine that wraps another (the checkpointing wrapper): the inner engine's
    passes go to the captured log only, and the wrapper records its own account of them.

    Parameters
    ----------
    log : PassLog, optional
        The log to count in; a new one by default.

    Yields
    ------
    PassLog
    """
    log = PassLog() if log is None else log
    token = _ACTIVE.set((log,))
    try:
        yield log
    finally:
        _ACTIVE.reset(token)


def human_bytes(n: float) -> str:
    """``n`` bytes in binary units, one decimal: ``"512 B"``, ``"1.2 GiB"``.

    Parameters
    ----------
    n : float

    Returns
    -------
    str
    """
    value = float(n)
    if abs(value) < 1024:
        return f"{int(value)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if abs(value) < 1024 or unit == "PiB":
            break
    return f"{value:.1f} {unit}"
