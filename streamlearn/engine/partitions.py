"""Cutting a dataset's rows into partitions that follow its storage pieces."""

from __future__ import annotations

import numpy as np

from streamlearn.data.dataset import Dataset

#: A cut may move up to this share of a partition's size to land on a storage boundary.
BOUNDARY_SLACK = 0.5


def piece_offsets(dataset: Dataset) -> np.ndarray:
    """Global row of every storage piece boundary (files, row groups, zarr chunks), 0 to n."""
    return np.cumsum([0, *(p.n_rows for p in dataset.source.pieces)]).astype(np.int64)


def partition_ranges(
    dataset: Dataset,
    n_partitions: int,
    *,
    chunk_rows: int,
    rows: tuple[int, int] | None = None,
) -> list[tuple[int, int]]:
    """Split rows ``rows`` (default all) into about ``n_partitions`` consecutive ranges.

    Each cut lands on a storage piece boundary (a parquet row group or file, a zarr chunk
    of rows) when one lies within ``BOUNDARY_SLACK`` of a partition's size from the even
    split, so every piece is read by exactly one partition. A piece larger than that is
    cut at a multiple of ``chunk_rows`` from the range's start instead. No partition is
    smaller than one chunk unless the range is.

    Parameters
    ----------
    dataset : Dataset
    n_partitions : int
        Wanted number of partitions (at least 1).
    chunk_rows : int
        Rows per chunk of the passes that will walk the partitions.
    rows : (start, stop), optional

    Returns
    -------
    list of (start, stop)
        Non-empty, consecutive, covering ``rows``.
    """
    lo, hi = rows if rows is not None else (0, dataset.n_rows)
    if hi <= lo:
        return [(lo, hi)]
    n_chunks = -(-(hi - lo) // chunk_rows)
    parts = max(1, min(int(n_partitions), n_chunks))
    size = (hi - lo) / parts
    offsets = piece_offsets(dataset)
    inner = offsets[(offsets > lo) & (offsets < hi)]
    cuts: list[int] = []
    for k in range(1, parts):
        ideal = lo + k * size
        cut = None
        if inner.size:
            j = int(np.argmin(np.abs(inner - ideal)))
            if abs(int(inner[j]) - ideal) <= BOUNDARY_SLACK * size:
                cut = int(inner[j])
        if cut is None:
            cut = lo + round((ideal - lo) / chunk_rows) * chunk_rows
        if lo < cut < hi and (not cuts or cut > cuts[-1]):
            cuts.append(cut)
    bounds = [lo, *cuts, hi]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
