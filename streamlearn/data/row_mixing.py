"""Rows mixed across a group of chunks of a shuffled walk.

A shuffled walk visits chunks in a random order and permutes the rows of each chunk; a
chunk still holds rows that were stored next to each other. Rows stored grouped by class
(a file sorted by its label, per-class files joined) then give chunks of one class, and a
solver that steps chunk by chunk (PEGASOS, stochastic EM) follows one class at a time:
on ijcnn1 sorted by class, in chunks of 2,048 rows, ``AdditiveSVC()`` tested at 5.32 %
error and ``MixtureSVC()`` at 6.55 %, against 2.81 and 2.83 % on the same rows shuffled.

:func:`mixed_chunks` reads a group of chunks of the walk (:func:`group_sizes`) and hands
them on as as many chunks, each made of a part of every chunk of the group and permuted
(:func:`_mixed`): a walk then holds up to :data:`MIX_BYTES` of chunks, and one more,
instead of one (:func:`mix_group_size`), and reads the next group ahead; memory stays
bounded whatever the number of rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from numba import njit

from streamlearn.data.chunk import Chunk
from streamlearn.data.sparse_rows import SparseRows

#: Chunks a shuffled walk mixes rows across at most.
MIX_CHUNKS = 64
#: The chunks a shuffled walk holds to mix take at most about this many bytes of features.
MIX_BYTES = 64 << 20
#: Dense rows of a mixed chunk are written straight to their permuted places when its
#: parts average at least this many rows (:func:`concatenate_take_dense`); smaller parts are
#: concatenated and then taken, where one kernel call a part would cost more than the copy
#: it saves.
FUSED_PART_ROWS = 1024
#: Stored entries a sparse row is counted at when sizing a group (:func:`mix_group_size`).
SPARSE_ROW_ENTRIES = 64


def mix_group_size(chunk_rows: int, n_features: int, sparse: bool) -> int:
    """Chunks mixed together: :data:`MIX_CHUNKS`, fewer when their features would take
    more than :data:`MIX_BYTES` (4 bytes a dense value; a sparse row counted at
    :data:`SPARSE_ROW_ENTRIES` entries of 12 bytes, or its width when narrower) or when
    a chunk has fewer rows, at least 1 (no mixing)."""
    row_bytes = (12 * min(int(n_features), SPARSE_ROW_ENTRIES) if sparse
                 else 4 * int(n_features))
    group = min(MIX_CHUNKS, MIX_BYTES // max(int(chunk_rows) * row_bytes, 1),
                int(chunk_rows))  # a full chunk gives every chunk of its group a row
    return int(max(1, group))


def group_sizes(n_chunks: int, group: int) -> np.ndarray:
    """Chunks in each group of a walk of ``n_chunks``: ``group`` each, the last group the
    rest. (Groups of near-equal sizes were tried: on ijcnn1 sorted by class, 10 chunks of
    which one holds the rarer class, 5 and 5 leave five chunks of one class a pass where
    8 and 2 leave two or eight, 3.2 on average; test error 3.56 against 3.40 %, mean of
    four seeds.)"""
    full, rest = divmod(int(n_chunks), max(int(group), 1))
    return np.array([int(group)] * full + ([rest] if rest else []), dtype=np.int64)


def mixed_chunks(walk: Iterator[Chunk], sizes: Sequence[int], seeds: Sequence[int],
                 skip: int = 0) -> Iterator[Chunk]:
    """The chunks of ``walk`` with their rows mixed within each group of chunks.

    Group ``g`` (the next ``sizes[g]`` chunks of the walk) is handed on as as many
    chunks (the ``j``-th permuted by ``numpy.random.default_rng([seeds[g], j])``), of
    about the group's mean size, each keeping the ``start`` of the chunk whose place it
    takes (its block for the pass's accounting) and its rows' global ids (``index``).
    Each chunk handed on is cut from the group's chunks as it is asked for
    (:func:`_mixed`), so a group holds its chunks and one more. ``skip`` leaves out the
    first chunks handed on (a resumed pass: ``walk`` then starts at the first chunk of
    their group).

    Parameters
    ----------
    walk : iterator of Chunk
    sizes : sequence of int
        Chunks per group (:func:`group_sizes`), from the walk's first group.
    seeds : sequence of int
        One seed per group, likewise.
    skip : int
        Chunks handed on to leave out, fewer than the first group's.

    Yields
    ------
    Chunk
    """
    buffer: list[Chunk] = []
    g = 0
    for chunk in walk:
        buffer.append(chunk)
        if len(buffer) == int(sizes[g]):
            yield from _mixed(buffer, int(seeds[g]), skip)
            buffer, skip, g = [], 0, g + 1
    if buffer:
        yield from _mixed(buffer, int(seeds[g]), skip)


def _mixed(chunks: list[Chunk], seed: int, skip: int) -> Iterator[Chunk]:
    """The rows of ``chunks`` dealt out across chunks as many, in a random order (the
    first ``skip`` left out).

    Chunk ``j`` handed on takes the ``j``-th of ``len(chunks)`` near-equal parts of every
    chunk's rows as read (the part sizes rotated by the chunk's place in the group, so
    that chunks of one size hand on chunks of that size), in a random order: each part's
    rows are written straight to their permuted places (CSR rows, and dense parts of
    :data:`FUSED_PART_ROWS` rows or more), or the parts are copied as one block and then
    permuted. Either way the rows move within a chunk's worth, where a gather from the
    whole group at random reads memory at random (on 8 chunks of 262,144 rows x 16
    features, 0.29 s against 0.07 s for the parts). The walk leaves the rows of a chunk
    in their order for this (the permutation here replaces its permutation within each
    chunk; a group of one chunk is permuted alone). A chunk handed on has about the mean size of
    the group's, and the ``start`` of the chunk whose place it takes.
    """
    m = len(chunks)
    cuts = np.stack([_rotated_cuts(c.n_rows, m, i) for i, c in enumerate(chunks)])
    # a chunk of consecutive rows names its rows by its start: the ids of a part then
    # follow from its bounds, without making an array for each part
    starts = (np.array([c.start for c in chunks], dtype=np.int64)
              if all(c.index is None for c in chunks) else None)
    for j in range(skip, m):
        lo, hi = cuts[:, j].tolist(), cuts[:, j + 1].tolist()
        parts = list(zip(chunks, lo, hi, strict=True))
        n = int(np.sum(cuts[:, j + 1] - cuts[:, j]))
        order = np.random.default_rng([seed, j]).permutation(n)  # resumable at any j
        if chunks[0].is_sparse:
            X: np.ndarray | SparseRows = SparseRows.concatenate_take(
                [c.X.slice(a, b) for c, a, b in parts], order)  # type: ignore[union-attr]
        elif n >= FUSED_PART_ROWS * m:
            X = concatenate_take_dense([c.X[a:b] for c, a, b in parts], order)
        else:
            X = np.take(np.concatenate([c.X[a:b] for c, a, b in parts]), order, axis=0)
        yield Chunk(X=X, y=_joined([c.y for c, _, _ in parts], parts, order),
                    start=chunks[j].start,
                    index=np.take(_parts_rows(parts, starts, cuts[:, j], cuts[:, j + 1]),
                                  order),
                    weight=_joined([c.weight for c, _, _ in parts], parts, order))


def _rotated_cuts(n: int, m: int, shift: int) -> np.ndarray:
    """Bounds of ``m`` contiguous parts of ``n`` rows, part ``j`` of size
    ``sizes[(j + shift) % m]`` for the near-equal ``sizes`` of ``n`` into ``m``."""
    sizes = np.diff(np.arange(m + 1) * n // m)
    return np.concatenate([[0], np.cumsum(np.roll(sizes, -shift))])


def _parts_rows(parts: list[tuple[Chunk, int, int]], starts: np.ndarray | None,
                lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The global ids of the parts' rows, one part after the other: from the chunks'
    ``starts`` when every chunk is of consecutive rows (None otherwise), else from their
    ``index``. ``lo`` and ``hi`` are the parts' bounds."""
    if starts is None:
        return np.concatenate([c.rows[a:b] for c, a, b in parts])
    lengths = hi - lo
    before = np.cumsum(lengths) - lengths  # rows of the parts before each
    return (np.repeat(starts + lo - before, lengths)
            + np.arange(int(lengths.sum()), dtype=np.int64))


def _joined(arrays: list[np.ndarray | None], parts: list[tuple[Chunk, int, int]],
            order: np.ndarray) -> np.ndarray | None:
    """The parts' rows of ``arrays`` (one per chunk) one after the other, in ``order``
    (None when an array is None)."""
    if any(a is None for a in arrays):
        return None
    return np.take(np.concatenate([a[lo:hi] for a, (_, lo, hi)  # type: ignore[index]
                                   in zip(arrays, parts, strict=True)]), order)


def concatenate_take_dense(parts: Sequence[np.ndarray], order: np.ndarray) -> np.ndarray:
    """``np.take(np.concatenate(parts), order, axis=0)`` with each row copied once: every
    part's rows are written straight to their places in ``order``. On 8,000,000 rows x 32
    float32 in 65,536-row chunks mixed 8 at a time, a bare shuffled pass took 0.64-0.72
    against 0.73-0.89 s, a linear epoch 1.04-1.19 against 1.14-1.50 s.

    Parameters
    ----------
    parts : sequence of ndarray of shape (n_i, n_features)
        C-contiguous rows of one dtype and width.
    order : ndarray of int
        A permutation of the parts' rows, counted one part after the other.

    Returns
    -------
    ndarray of shape (len(order), n_features)
    """
    n = int(order.shape[0])
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n, dtype=np.int64)  # where each part's row goes
    out = np.empty((n, parts[0].shape[1]), dtype=parts[0].dtype)
    first = 0
    for part in parts:
        scatter_dense_rows(np.ascontiguousarray(part), place[first:first + part.shape[0]], out)
        first += part.shape[0]
    return out


@njit(cache=True, nogil=True)
def scatter_dense_rows(part, place, out):
    """Copy row ``r`` of ``part`` to row ``place[r]`` of ``out``."""
    d = part.shape[1]
    for r in range(place.shape[0]):
        dst = out[place[r]]
        src = part[r]
        for j in range(d):
            dst[j] = src[j]
