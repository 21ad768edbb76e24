"""``ExampleState``: per-row variables (dual variables, responsibilities) kept between passes."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from streamlearn.data.chunk import Chunk

if TYPE_CHECKING:
    import zarr

#: Above this many bytes a state without an explicit path goes to a scratch zarr store.
MEMORY_LIMIT_BYTES = 256 << 20


class ExampleState:
    """Float32 values per dataset row, read and written chunk by chunk.

    Rows are addressed by their global index, so a chunk's values line up with its rows
    whatever the shuffle (``Chunk.index``) or dropped rows. Small states live in memory;
    large ones (or any state given a ``path``) live in a zarr v3 store on disk, chunked like
    the data, so memory stays at one chunk's worth.

    Parameters
    ----------
    n_rows : int
        Rows of the dataset.
    n_columns : int, optional
        Values per row; None stores one value per row (1-D state).
    fill : float
        Initial value.
    path : str or Path, optional
        Directory of the zarr scratch store. Without it, a state larger than
        ``MEMORY_LIMIT_BYTES`` goes to a temporary directory removed by :meth:`close`.
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
        if path is None and nbytes <= MEMORY_LIMIT_BYTES:
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

    @classmethod
    def open(cls, path: str | Path) -> ExampleState:
        """Reopen a state saved on disk (a checkpoint, or a worker's partition state)."""
        import zarr

        array = zarr.open_array(str(path), mode="r+")
        state = cls.__new__(cls)
        state.n_rows = int(array.shape[0])
        state.n_columns = None if array.ndim == 1 else int(array.shape[1])
        state._tempdir = None
        state.path = Path(path)
        state._values = array
        return state

    @property
    def in_memory(self) -> bool:
        """True when values are held in a numpy array rather than a zarr store."""
        return isinstance(self._values, np.ndarray)

    def _span(self, chunk: Chunk) -> tuple[int, int, np.ndarray | None]:
        if chunk.index is None:
            return chunk.start, chunk.start + chunk.n_rows, None
        rows = chunk.index
        if rows.size == 0:
            return chunk.start, chunk.start, rows
        lo, hi = int(rows.min()), int(rows.max()) + 1
        return lo, hi, rows - lo

    def get(self, chunk: Chunk) -> np.ndarray:
        """Values of the chunk's rows, in the chunk's row order (a copy)."""
        lo, hi, local = self._span(chunk)
        slab = np.asarray(self._values[lo:hi])
        return slab.copy() if local is None else slab[local]

    def put(self, chunk: Chunk, values: np.ndarray) -> None:
        """Store ``values`` (in the chunk's row order) for the chunk's rows."""
        values = np.asarray(values, dtype=np.float32)
        lo, hi, local = self._span(chunk)
        if local is None:
            self._values[lo:hi] = values
            return
        if local.size == hi - lo:  # a permutation of the whole span: no need to read first
            slab = np.empty((hi - lo, *values.shape[1:]), dtype=np.float32)
        else:
            slab = np.array(self._values[lo:hi])
        slab[local] = values
        self._values[lo:hi] = slab

    def to_numpy(self) -> np.ndarray:
        """All values as one array (only for states that fit in memory)."""
        return np.array(self._values[:])

    def close(self) -> None:
        """Remove the temporary store, if this state made one."""
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)
            self._tempdir = None

    def __enter__(self) -> ExampleState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "memory" if self.in_memory else str(self.path)
        return f"ExampleState(n_rows={self.n_rows}, n_columns={self.n_columns}, in {where})"
