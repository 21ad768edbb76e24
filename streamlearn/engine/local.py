"""``LocalEngine``: runs passes in this process, reading ahead in a background thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from streamlearn.data.dataset import Dataset
from streamlearn.data.open import open_dataset
from streamlearn.engine.accounting import chunk_bytes, chunk_span, open_pass
from streamlearn.engine.passes import EngineBase, Pass
from streamlearn.engine.progress import Progress, progress_enabled

R = TypeVar("R")


class LocalEngine(EngineBase):
    """Run passes over a dataset in the current process.

    Reading and decoding the next chunks happens in a background thread (``prefetch`` deep)
    while the current chunk is processed; numba kernels release the GIL, so the two overlap
    on separate cores.

    Parameters
    ----------
    prefetch : int, optional
        Chunks read ahead; defaults to the dataset's own setting.
    progress : bool, optional
        Show a progress bar (rows/s, ETA) on stderr; by default only when stderr is a
        terminal. ``STREAMLEARN_PROGRESS=0`` disables bars globally.
    chunk_rows : int, optional
        Rows per chunk; defaults to the dataset's own setting.

    Attributes
    ----------
    passes : PassLog
        Every pass this engine ran, with the rows and bytes it read
        (see :mod:`streamlearn.engine.accounting`).
    """

    #: ``run`` can continue a pass from a checkpoint (``resume``, ``on_chunk``).
    resumes_mid_pass = True

    def __init__(
        self,
        *,
        prefetch: int | None = None,
        progress: bool | None = None,
        chunk_rows: int | None = None,
    ) -> None:
        self.prefetch = prefetch
        self.progress = progress
        self.chunk_rows = chunk_rows

    def __repr__(self) -> str:
        return (f"LocalEngine(prefetch={self.prefetch}, progress={self.progress}, "
                f"chunk_rows={self.chunk_rows})")

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
        resume: tuple[int, Any] | None = None,
        on_chunk: Callable[[int, Any], None] | None = None,
    ) -> R:
        """Walk every chunk of ``data`` once through ``pass_`` and return its result.

        Parameters
        ----------
        pass_ : Pass
            The pass to run (reduction or sequential: locally both walk chunks in order).
        data : Dataset or anything ``open_dataset`` accepts
        shuffle, seed, epoch
            Chunk-order and within-chunk shuffling, see :meth:`Dataset.chunks`.
        description : str, optional
            Label of the progress bar.
        rows : (start, stop), optional
            Restrict the pass to a row range.
        resume : (k, state), optional
            Continue a pass interrupted after its first ``k`` chunks (in this walk's order)
            from the pass state it had then (see :mod:`streamlearn.engine.checkpoint`).
        on_chunk : callable, optional
            Called as ``on_chunk(chunks_done, state)`` after every chunk.

        Notes
        -----
        The run is recorded as one pass in :attr:`passes` (and in the logs of
        :func:`~streamlearn.engine.accounting.recording`), with the rows and bytes of the
        chunks it walked: a resumed pass counts only the chunks it read itself.
        """
        dataset = data if isinstance(data, Dataset) else open_dataset(data)
        lo, hi = rows if rows is not None else (0, dataset.n_rows)
        label = description or type(pass_).__name__
        size = int(self.chunk_rows) if self.chunk_rows else dataset.chunk_rows
        record = open_pass(self.passes, label, dataset.n_rows, hi - lo)
        chunks = dataset.chunks(
            self.chunk_rows, shuffle=shuffle, seed=seed, epoch=epoch,
            prefetch=self.prefetch, rows=rows, skip=0 if resume is None else resume[0],
        )
        done, state = (0, pass_.start()) if resume is None else resume
        with Progress(hi - lo, label, progress_enabled(self.progress)) as bar:
            for chunk in chunks:
                state = pass_.step(state, chunk)
                record.add(chunk_span(chunk, size, hi), chunk_bytes(chunk))
                bar.update(chunk.n_rows)
                done += 1
                if on_chunk is not None:
                    on_chunk(done, state)
        return pass_.finish(state)


def resolve_engine(engine: Any) -> Any:
    """Turn an ``engine=`` argument into an engine object.

    None and ``"local"`` mean a ``LocalEngine``; ``"dask"`` a ``DaskEngine`` on the current
    ``dask.distributed`` client (an ``EngineError`` when there is none); an object with a
    ``run`` method is used as it is.
    """
    if engine is None:
        return LocalEngine()
    if isinstance(engine, str):
        if engine == "local":
            return LocalEngine()
        if engine == "dask":
            from streamlearn.engine.dask_engine import DaskEngine

            return DaskEngine()
        raise ValueError(f"unknown engine {engine!r}; use 'local', 'dask' or an engine object")
    if not hasattr(engine, "run"):
        raise TypeError(f"engine must be None, 'local', 'dask' or an engine object, "
                        f"got {engine!r}")
    return engine
