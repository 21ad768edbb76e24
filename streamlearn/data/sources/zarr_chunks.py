"""Row ranges of a local zarr v3 array, decoded from its chunk files straight into the output.

zarr's own read path runs every request through its asyncio event loop, decodes each
storage chunk into a buffer of its own and copies it into the result; with Blosc it also
decodes on one thread per chunk. For the layout ``streamlearn convert`` writes (a local
store, chunks of whole rows, the ``bytes`` codec followed by at most one compressor, Blosc
or Zstandard, no sharding) :class:`ChunkFileReader` reads a chunk's file and decodes it
directly into the rows of the result it covers, in the calling thread and with the GIL
released while it decodes, so the readers of a stream's next chunks decode side by side.
Any other layout, and any remote store, is read by zarr (:meth:`ChunkFileReader.of`
returns None).

The rows are those zarr would return: a chunk whose file is missing holds the array's fill
value, the last chunk's padding is dropped. A file that does not decode to exactly one
chunk raises :class:`~streamlearn.errors.ReadError` naming the array and rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numcodecs.blosc
import numcodecs.zstd
import numpy as np
import zarr

from streamlearn.data.readahead import FileRange
from streamlearn.errors import ReadError


def _codec_names(array: zarr.Array) -> list[str] | None:
    """``["bytes"]`` plus ``"blosc"`` or ``"zstd"`` when the array's codecs are those
    alone (little-endian bytes on a little-endian machine), else None."""
    from zarr.codecs import BloscCodec, BytesCodec, ZstdCodec

    codecs = list(getattr(array.metadata, "codecs", ()))
    if not codecs or not isinstance(codecs[0], BytesCodec):
        return None
    endian = getattr(codecs[0].endian, "value", codecs[0].endian)
    if np.dtype(array.dtype).itemsize > 1 and (endian != "little"
                                                or sys.byteorder != "little"):
        return None
    names = ["bytes"]
    for codec in codecs[1:]:
        if isinstance(codec, BloscCodec):
            names.append("blosc")
        elif isinstance(codec, ZstdCodec):
            names.append("zstd")
        else:
            return None
    return names if len(names) <= 2 else None


#: An array attribute: every chunk was written, the empty ones too, so a missing chunk file
#: is lost data rather than the fill value zarr would read it as.
EVERY_CHUNK_WRITTEN = "every_chunk_written"


class ChunkFileReader:
    """Reads rows of one local, unsharded zarr v3 array whose chunks hold whole rows.

    Build it with :meth:`of`, which says when the array's layout allows it.

    Parameters
    ----------
    array : zarr.Array
    root : Path
        The local store's directory.
    compressor : {"none", "blosc", "zstd"}
    """

    def __init__(self, array: zarr.Array, root: Path, compressor: str) -> None:
        self.array = array
        self.root = root
        self.compressor = compressor
        self.dtype = np.dtype(array.dtype)
        self.shape = tuple(int(s) for s in array.shape)
        self.chunk_rows = int(array.chunks[0])
        self.row_shape = self.shape[1:]
        self.chunk_bytes = self.chunk_rows * int(np.prod(self.row_shape, dtype=np.int64)) \
            * self.dtype.itemsize
        self.fill_value = array.metadata.fill_value
        # an array that writes every chunk (streamlearn convert) has no missing chunk to
        # read as its fill value: a missing file is a lost one
        self.every_chunk_written = bool(array.attrs.get(EVERY_CHUNK_WRITTEN, False))

    @classmethod
    def of(cls, array: zarr.Array) -> ChunkFileReader | None:
        """A reader for ``array``, or None when zarr must read it: a store other than a
        local directory, zarr v2 metadata, sharding, chunks that split a row, another
        codec, or a dtype that is not a plain number or boolean."""
        from zarr.core.metadata import ArrayV3Metadata
        from zarr.storage import LocalStore

        store = array.store
        if not isinstance(store, LocalStore) or not isinstance(array.metadata,
                                                                ArrayV3Metadata):
            return None
        if getattr(array, "shards", None) is not None or array.ndim not in (1, 2):
            return None
        if tuple(array.chunks[1:]) != tuple(array.shape[1:]):
            return None
        if np.dtype(array.dtype).kind not in "biuf":
            return None
        names = _codec_names(array)
        if names is None:
            return None
        compressor = names[1] if len(names) == 2 else "none"
        return cls(array, Path(store.root), compressor)

    def _file(self, k: int) -> Path:
        coords = (k,) + (0,) * (len(self.shape) - 1)
        key = self.array.metadata.encode_chunk_key(coords)
        return self.root / self.array.path / key if self.array.path else self.root / key

    def _decode(self, k: int, dest: np.ndarray) -> None:
        """Chunk ``k``'s rows into ``dest``, a C-contiguous array of a whole chunk."""
        path = self._file(k)
        try:
            with open(path, "rb") as handle:
                if self.compressor == "none":
                    got = handle.readinto(memoryview(dest).cast("B"))
                    if got != self.chunk_bytes or handle.read(1):
                        raise ValueError(f"the chunk file holds {path.stat().st_size} "
                                         f"bytes, not {self.chunk_bytes}")
                    return
                data = handle.read()
        except FileNotFoundError:
            if self.every_chunk_written:
                raise FileNotFoundError(
                    f"the chunk file {path} is missing, and this array writes every chunk "
                    f"(attribute {EVERY_CHUNK_WRITTEN!r}): it was lost") from None
            dest[...] = self.fill_value
            return
        if self.compressor == "blosc":
            nbytes = numcodecs.blosc._cbuffer_sizes(data)[0]
            if nbytes != self.chunk_bytes:
                raise ValueError(f"the chunk decodes to {nbytes} bytes, not "
                                 f"{self.chunk_bytes}")
            numcodecs.blosc.decompress(data, dest)
        else:  # the frame's content size is optional: decode, then check the length
            raw = numcodecs.zstd.decompress(data)
            if len(raw) != self.chunk_bytes:
                raise ValueError(f"the chunk decodes to {len(raw)} bytes, not "
                                 f"{self.chunk_bytes}")
            memoryview(dest).cast("B")[:] = raw

    def file_ranges(self, start: int, stop: int) -> list[FileRange]:
        """The chunk files that hold rows ``start:stop``, whole."""
        c = self.chunk_rows
        last = -(-min(stop, self.shape[0]) // c)
        return [FileRange(str(self._file(k)), 0, 0) for k in range(start // c, last)]

    def read(self, start: int, stop: int, where: str) -> np.ndarray:
        """Rows ``start:stop`` (within the array) as a new C-contiguous array.

        Chunks that lie whole inside the range decode into the result itself; the chunks
        at its ends decode into a scratch chunk and their rows are copied.

        Raises
        ------
        ReadError
            A chunk file that cannot be read or decoded, naming the array and its rows.
        """
        out = np.empty((stop - start, *self.row_shape), dtype=self.dtype)
        scratch: np.ndarray | None = None
        c = self.chunk_rows
        first, last = start // c, -(-stop // c) if stop > start else start // c
        for k in range(first, last):
            lo, hi = k * c, (k + 1) * c
            try:
                if lo >= start and hi <= stop:
                    self._decode(k, out[lo - start:hi - start])
                else:
                    if scratch is None:
                        scratch = np.empty((c, *self.row_shape), dtype=self.dtype)
                    self._decode(k, scratch)
                    a, b = max(lo, start), min(hi, stop)
                    out[a - start:b - start] = scratch[a - lo:b - lo]
            except Exception as exc:  # codec and file errors come in many types
                raise ReadError(
                    f"could not read rows {lo}-{min(hi, self.shape[0])} of array "
                    f"{self.array.path!r} in {where}: {type(exc).__name__}: {exc}") from exc
        return out


def reader_or_none(array: zarr.Array) -> ChunkFileReader | None:
    """:meth:`ChunkFileReader.of`, with any failure to inspect the array read as None."""
    try:
        return ChunkFileReader.of(array)
    except Exception:  # an unusual store or metadata: zarr reads it
        return None
