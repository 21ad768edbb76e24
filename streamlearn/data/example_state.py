"""``ExampleState``: per-row variables (dual variables, responsibilities) kept between passes."""

from __future__ import annotations

import shutil
import tempfile
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from streamlearn.data.chunk import Chunk
from streamlearn.data.state_blocks import StateBlocks, cache_capacity

if TYPE_CHECKING:
    import zarr

#: The states without an explicit path held in memory at once take at most this many
#: bytes together; a state that would pass it goes to a scratch zarr store.
MEMORY_LIMIT_BYTES = 256 << 20

_held_lock = threading.Lock()
#: Bytes of the in-memory states alive now (released by close, or when collected).
_held_bytes = 0


def _hold(nbytes: int) -> bool:
    """Take ``nbytes`` of the in-memory budget, if it has them."""
    global _held_bytes
    with _held_lock:
        if _held_bytes + nbytes > MEMORY_LIMIT_BYTES:
            return False
        _held_bytes += nbytes
        return True


def _release(nbytes: int) -> None:
    global _held_bytes
    with _held_lock:
        _held_bytes -= nbytes


class ExampleState:
    """Float32 values per dataset row, read and written chunk by chunk.

    Rows are addressed by their global index, so a chunk's values line up with its rows
    whatever the shuffle (``Chunk.index``) or dropped rows. Small states live in memory;
    large ones (or any state given a ``path``) live in a zarr v3 store on disk, read and
    written a storage chunk at a time, the last ones used kept in memory
    (:class:`~streamlearn.data.state_blocks.StateBlocks`: at most 64 of them and 32 MiB);
    written values reach the store as they leave that cache, at :meth:`flush` and at
    :meth:`close`.

    Parameters
    ----------
    n_rows : int
        Rows of the dataset.
    n_columns : int, optional
        Values per row; None stores one value per row (1-D state).
    fill : float
        Initial value.
    path : str or Path, optional
        Directory of the zarr scratch store. Without it, a state goes to a temporary
        directory removed by :meth:`close` when the in-memory states alive (this one
        included) would take more than ``MEMORY_LIMIT_BYTES`` together (a model training
        several binary problems holds a state per problem).
    chunk_rows : int
        Rows per storage chunk of the zarr store.
    """

    def __init__(
        self,
        n_rows: int,
        n_columns: int | None = None,
        *,
        fill: float = 0.0,
        path: str | Path | None = None,
        chunk_rows: int = 1 << 16,
    ) -> None:
        self.n_rows = int(n_rows)
        self.n_columns = n_columns
        shape = (self.n_rows,) if n_columns is None else (self.n_rows, int(n_columns))
        nbytes = 4 * int(np.prod(shape))
        self._tempdir: str | None = None
        self.path: Path | None = None
        self._held: weakref.finalize | None = None
        if path is None and _hold(nbytes):
            self._held = weakref.finalize(self, _release, nbytes)
            self._values: np.ndarray | zarr.Array = np.full(shape, fill, dtype=np.float32)
            return
        if path is None:
            self._tempdir = tempfile.mkdtemp(prefix="streamlearn-state-")
            path = Path(self._tempdir) / "state.zarr"
        import zarr

        self.path = Path(path)
        chunks = (min(chunk_rows, max(self.n_rows, 1)), *shape[1:])
        self._values = zarr.create_array(
            store=str(self.path), shape=shape, chunks=chunks, dtype="float32",
            fill_value=float(fill), overwrite=True,
        )
        self._blocks = _blocks_of(self._values)

    @classmethod
    def open(cls, path: str | Path) -> ExampleState:
        """Reopen a state saved on disk (a checkpoint, or a worker's partition state)."""
        import zarr

        array = zarr.open_array(str(path), mode="r+")
        state = cls.__new__(cls)
        state.n_rows = int(array.shape[0])
        state.n_columns = None if array.ndim == 1 else int(array.shape[1])
        state._tempdir = None
        state._held = None
        state.path = Path(path)
        state._values = array
        state._blocks = _blocks_of(array)
        return state

    @property
    def in_memory(self) -> bool:
        """True when values are held in a numpy array rather than a zarr store."""
        return isinstance(self._values, np.ndarray)

    def get(self, chunk: Chunk) -> np.ndarray:
        """Values of the chunk's rows, in the chunk's row order (a copy)."""
        if not isinstance(self._values, np.ndarray):
            return self._blocks.get(chunk.rows)
        if chunk.index is None:
            return self._values[chunk.start : chunk.start + chunk.n_rows].copy()
        return self._values[chunk.index]

    def put(self, chunk: Chunk, values: np.ndarray) -> None:
        """Store ``values`` (in the chunk's row order) for the chunk's rows."""
        values = np.asarray(values, dtype=np.float32)
        if not isinstance(self._values, np.ndarray):
            self._blocks.put(chunk.rows, values)
        elif chunk.index is None:
            self._values[chunk.start : chunk.start + chunk.n_rows] = values
        else:
            self._values[chunk.index] = values

    def flush(self) -> None:
        """Write the values kept in memory to the store (nothing to do in memory)."""
        if not isinstance(self._values, np.ndarray):
            self._blocks.flush()

    def to_numpy(self) -> np.ndarray:
        """All values as one array (only for states that fit in memory)."""
        self.flush()
        return np.array(self._values[:])

    def close(self) -> None:
        """Remove the temporary store, if this state made one, or write the values kept in
        memory to the store given as ``path``; an in-memory state gives its bytes back to
        the budget (its values stay readable)."""
        if self._held is not None:
            self._held()  # runs once
        if self._tempdir is None:  # a store of the caller's: the kept values go to it
            self.flush()
        else:
            shutil.rmtree(self._tempdir, ignore_errors=True)
            self._tempdir = None

    def __enter__(self) -> ExampleState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "memory" if self.in_memory else str(self.path)
        return f"ExampleState(n_rows={self.n_rows}, n_columns={self.n_columns}, in {where})"


def _blocks_of(array: zarr.Array) -> StateBlocks:
    """The cached storage-chunk access to a state's zarr array, updated in place."""
    row_values = int(np.prod(array.shape[1:])) if array.ndim > 1 else 1
    return StateBlocks(array, array, int(array.chunks[0]),
                       cache_capacity(int(array.chunks[0]), row_values))
