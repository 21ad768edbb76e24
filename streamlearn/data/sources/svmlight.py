"""svmlight / libsvm text files (plain, ``.gz``, ``.bz2``, ``.xz``), read as sparse rows.

One line is one row: ``<label> [qid:<int>] <index>:<value> ... [# comment]``. Opening a
source scans every file once, streaming, to count rows, find the largest feature index and
the label set; afterwards a piece (``piece_rows`` consecutive rows of one file) is read by
one ranged read of its bytes and parsed by a numba kernel. The kernel holds no lock, so the
scan parses its blocks in one thread per core while the next block is read, and a pass over
plain text parses the pieces it reads ahead concurrently. Memory stays bounded by a few
pieces and read blocks, whatever the size of the files.

With ``hash_features=2**k`` the token before ``:`` may be any name (``word:1``,
``colour=red:1``, ``17:0.5``): it is hashed into one of ``2**k`` columns with a sign
(:mod:`streamlearn.data.hashing`), as Vowpal Wabbit's ``-b k`` does.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import threading
import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import IO, Any, Literal

import fsspec
import numpy as np
from fsspec.implementations.local import LocalFileSystem
from numba import njit

from streamlearn.data.hashing import (
    check_hash_features,
    hashed_column,
    murmur3_32,
    sort_int64,
    sum_duplicates,
)
from streamlearn.data.sources.base import Block, ColumnKind, Piece
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.errors import ReadError, SchemaError, SourceError

#: Bytes read from a file at a time by the opening scan (a few MiB).
READ_BLOCK_BYTES = 1 << 22

#: Threads that parse the opening scan's blocks at most.
SCAN_THREADS = 4

#: More distinct labels than this and ``known_classes`` records none.
MAX_KNOWN_CLASSES = 10_000

#: Largest feature index accepted (column indices are int32).
MAX_INDEX = 2**31 - 1

COMPRESSIONS = {".gz": gzip.GzipFile, ".bz2": bz2.BZ2File, ".xz": lzma.LZMAFile}

# Status codes returned by ``parse_svmlight_lines``.
OK = 0
ERR_NO_LABEL = 1
ERR_LABEL = 2
ERR_LABEL_NOT_FINITE = 3
ERR_QID = 4
ERR_NO_COLON = 5
ERR_INDEX = 6
ERR_INDEX_RANGE = 7
ERR_VALUE = 8
ERR_VALUE_NOT_FINITE = 9
ERR_DUPLICATE = 10
ERR_CAPACITY = 11
ERR_NAME = 12
ERR_SUM_NOT_FINITE = 13
ERR_VALUE_RANGE = 14
ERR_LABEL_RANGE = 15

_PROBLEMS = {
    ERR_NO_LABEL: "the row has no label (it starts with index:value)",
    ERR_LABEL: "the label is not a number",
    ERR_LABEL_NOT_FINITE: "the label is missing (NaN or infinite)",
    ERR_LABEL_RANGE: "the label is beyond float64's range",
    ERR_QID: "qid is not an integer",
    ERR_NO_COLON: "expected index:value, found a token without ':'",
    ERR_INDEX: "the feature index is not a non-negative integer",
    ERR_VALUE: "the feature value is not a number",
    ERR_VALUE_NOT_FINITE: "the feature value is missing (NaN or infinite)",
    ERR_VALUE_RANGE: "the feature value is beyond float32's range (+-3.4e38, in which the "
                     "models compute): rescale the feature",
    ERR_CAPACITY: "the file changed since it was opened (more entries than its scan found)",
    ERR_NAME: "the feature name before ':' is empty",
    ERR_SUM_NOT_FINITE: "the values of features hashed to one column sum beyond the float32 "
                        "range",
}

#: 10**k, correctly rounded, for k = 0..308.
POW10 = np.array([float(f"1e{k}") for k in range(309)], dtype=np.float64)


def _pow10_pairs(lowest: int, highest: int) -> tuple[np.ndarray, np.ndarray]:
    """10**k as double-double ``hi + lo`` (``hi`` correctly rounded), k = lowest..highest."""
    hi = np.empty(highest - lowest + 1)
    lo = np.empty(highest - lowest + 1)
    for j, k in enumerate(range(lowest, highest + 1)):
        exact = Fraction(10) ** k
        hi[j] = float(exact)
        lo[j] = float(exact - Fraction(hi[j]))
    return hi, lo


#: Exponents scaled in double-double arithmetic (outside, one rounded product is used).
DD_LOWEST, DD_HIGHEST = -290, 290
POW10_HI, POW10_LO = _pow10_pairs(DD_LOWEST, DD_HIGHEST)

_NAN = np.frombuffer(b"nan", dtype=np.uint8)
_INFINITY = np.frombuffer(b"infinity", dtype=np.uint8)
#: Digits stop accumulating into the integer mantissa once it reaches this (17-18 digits).
MANTISSA_LIMIT = 10**17

_FLOAT32_MAX = float(np.finfo(np.float32).max)


# --------------------------------------------------------------------------- kernel
@njit(cache=True, nogil=True)
def _is_space(c: int) -> bool:
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(cache=True, nogil=True)
def _ends_token(c: int) -> bool:
    return c == 32 or c == 9 or c == 13 or c == 10 or c == 35 or c == 11 or c == 12


@njit(cache=True, nogil=True)
def _is_nonfinite_word(buf: np.ndarray, pos: int, end: int) -> bool:
    """Whether the token at ``pos`` is ``nan``, ``inf`` or ``infinity`` (any case)."""
    stop = pos
    while stop < end and not _ends_token(buf[stop]) and buf[stop] != 58:
        stop += 1
    n = stop - pos
    word = _NAN if n == 3 and (buf[pos] | 32) == 110 else _INFINITY
    if n != 3 and n != 8:
        return False
    for k in range(n):
        if (buf[pos + k] | 32) != word[k]:
            return False
    return True


@njit(cache=True, nogil=True)
def _split(a: float) -> tuple[float, float]:
    c = 134217729.0 * a  # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


@njit(cache=True, nogil=True)
def _scale_exactly(mant: int, exp10: int) -> float:
    """``mant * 10**exp10`` in double-double arithmetic (about 100 bits), then rounded.

    Correctly rounded unless the exact value lies within about 2**-100 (relative) of a
    midpoint between two doubles.
    """
    mh = float(mant)
    ml = float(mant - np.int64(mh))  # mant == mh + ml exactly
    ph = POW10_HI[exp10 - DD_LOWEST]
    pl = POW10_LO[exp10 - DD_LOWEST]
    p = mh * ph
    ah, al = _split(mh)
    bh, bl = _split(ph)
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # mh * ph == p + err exactly
    return p + (err + (mh * pl + ml * ph))


@njit(cache=True, nogil=True)
def parse_number(buf: np.ndarray, pos: int, end: int) -> tuple[int, float, int]:
    """Parse a decimal float at ``buf[pos:]``: ``[+-]digits[.digits][(e|E)[+-]digits]``.

    At least 17 significant digits are accumulated exactly in an integer, then scaled by a
    power of ten: one exact operation when both are exact doubles, else in double-double
    arithmetic; the float64 result is correctly rounded but in astronomically rare
    near-midpoint cases (and beyond 1e290 or below 1e-290, where it is within a few ulp).

    Returns
    -------
    status : int
        0 for a number, 1 for no number, 2 for the words ``nan``, ``inf`` or
        ``infinity`` (any case, signed or not), whose value is NaN or +-infinity.
    value : float
    pos : int
        Position just after the number.
    """
    neg = False
    if pos < end and (buf[pos] == 45 or buf[pos] == 43):
        neg = buf[pos] == 45
        pos += 1
    mant = 0
    exp10 = 0
    start = pos
    while pos < end:
        d = np.int64(buf[pos]) - 48
        if d < 0 or d > 9:
            break
        if mant < MANTISSA_LIMIT:
            mant = mant * 10 + d
        else:
            exp10 += 1
        pos += 1
    any_digit = pos > start
    if pos < end and buf[pos] == 46:
        pos += 1
        start = pos
        while pos < end:
            d = np.int64(buf[pos]) - 48
            if d < 0 or d > 9:
                break
            if mant < MANTISSA_LIMIT:
                mant = mant * 10 + d
                exp10 -= 1
            pos += 1
        any_digit = any_digit or pos > start
    if not any_digit:
        if not _is_nonfinite_word(buf, pos, end):
            return 1, 0.0, pos
        if (buf[pos] | 32) == 110:
            return 2, np.nan, pos + 3
        word = 3 if pos + 3 >= end or (buf[pos + 3] | 32) != 105 else 8
        return 2, -np.inf if neg else np.inf, pos + word
    if pos < end and (buf[pos] | 32) == 101:  # e
        pos += 1
        eneg = False
        if pos < end and (buf[pos] == 45 or buf[pos] == 43):
            eneg = buf[pos] == 45
            pos += 1
        e = 0
        any_e = False
        while pos < end:
            d = np.int64(buf[pos]) - 48
            if d < 0 or d > 9:
                break
            any_e = True
            if e < 100000:
                e = e * 10 + d
            pos += 1
        if not any_e:
            return 1, 0.0, pos
        exp10 += -e if eneg else e
    value = 0.0
    if mant != 0:
        if -22 <= exp10 <= 22 and mant <= 9007199254740992:
            # both operands exact: one correctly rounded operation
            value = float(mant) * POW10[exp10] if exp10 >= 0 else float(mant) / POW10[-exp10]
        elif DD_LOWEST <= exp10 <= DD_HIGHEST:
            value = _scale_exactly(mant, exp10)
        elif exp10 >= 0:
            value = np.inf if exp10 > 308 else float(mant) * POW10[exp10]
        elif exp10 >= -308:
            value = float(mant) / POW10[-exp10]
        elif exp10 >= -616:
            value = float(mant) / POW10[308] / POW10[-exp10 - 308]
    return 0, -value if neg else value, pos


@njit(cache=True, nogil=True)
def repeated_index(row: np.ndarray) -> int:
    """An index that occurs more than once in ``row`` (non-negative ints), or -1.

    Sorts a copy, then compares neighbours: O(k log k) for a row of k entries.
    """
    a = row.copy()
    n = a.shape[0]
    sort_int64(a, n)
    for k in range(1, n):
        if a[k] == a[k - 1]:
            return a[k]
    return -1


@njit(cache=True, nogil=True)
def count_lines_and_colons(buf: np.ndarray) -> tuple[int, int]:
    """Newlines and ``:`` in ``buf``: bounds on the rows and entries it holds."""
    lines = 0
    colons = 0
    for k in range(buf.shape[0]):
        lines += buf[k] == 10
        colons += buf[k] == 58
    return lines, colons


@njit(cache=True, nogil=True)
def parse_svmlight_lines(
    buf: np.ndarray, pos: int, end: int, max_rows: int, lo: int, hi: int, shift: int,
    row0: int, line0: int, labels: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
    values: np.ndarray, row_line: np.ndarray, hash_features: int | None = None,
    keep_missing: bool = False,
) -> tuple[int, int, int, int, int, int, int, int]:
    """Parse whole svmlight lines of ``buf[pos:end]`` into CSR arrays.

    Rows are appended from row ``row0`` (``indptr[row0]`` already set); blank and
    comment-only lines are skipped. Parsing stops at ``end``, after ``max_rows`` rows, or at
    the first malformed line.

    With ``hash_features`` (a power of two), the token before ``:`` is a name, any bytes
    but whitespace, ``:`` and ``#``: it is hashed (:func:`~streamlearn.data.hashing.murmur3_32`,
    seed 0) to a column and a sign (:func:`~streamlearn.data.hashing.hashed_column`), the
    value is multiplied by the sign, and the entries of a row sharing a column are summed
    (in float64, then rounded to float32), the row's columns ascending. ``lo``, ``hi`` and
    ``shift`` are then unused. Without it (None: compiled separately, the hashing code
    left out), the token is a decimal index.

    A label or value written ``nan``, ``inf`` or ``infinity`` (any case, signed or not) is
    a missing value: an error, or with ``keep_missing`` stored as NaN or +-infinity for the
    dataset's ``nan_policy`` (a hashed row's column that such a value lands on holds NaN or
    infinity too). A number beyond float32's range (a value) or float64's (a label) is an
    error either way.

    Parameters
    ----------
    buf : ndarray of uint8
        Text holding whole lines (the last one may lack its newline).
    pos, end : int
        Byte range to parse.
    max_rows : int
        Most rows to parse in this call.
    lo, hi : int
        Accepted range of feature indices as written in the text.
    shift : int
        Subtracted from each index before it is stored (1 for one-based text).
    row0, line0 : int
        First row to write, and line counter (within ``buf``) at ``pos``.
    labels : ndarray of float64
    indptr : ndarray of int64
    indices : ndarray of int32
    values : ndarray of float32
        Outputs; a row needing more entries than ``indices`` holds is an error.
    row_line : ndarray of int64
        Receives each row's line number within ``buf`` (0-based); may have length 0.
    hash_features : int, optional
        Number of hashed columns; None for numeric indices.
    keep_missing : bool
        Store ``nan`` / ``inf`` labels and values instead of stopping at them.

    Returns
    -------
    tuple of int
        ``(status, pos, line, line_start, n_rows, nnz, first_row_start, aux)``: status 0
        or an error code; the position after the last parsed line (or of the offending
        token on error); the line counter; the start of the offending line; rows and
        entries written so far (``row0`` included); where the first row of this call
        starts (-1 if none); the offending index for range and duplicate errors.
    """
    n = row0
    e = indptr[row0]
    line = line0
    first_start = -1
    cap = indices.shape[0]
    keep_lines = row_line.shape[0] > 0
    # one row's hashed entries, before their duplicates are summed (grown on demand)
    row_cols = np.empty(64, dtype=np.int64)
    row_vals = np.empty(64, dtype=np.float64)
    row_order = np.empty(64, dtype=np.int64)
    row_scratch = np.empty(64, dtype=np.float64)
    while pos < end and n - row0 < max_rows:
        line_start = pos
        while pos < end and _is_space(buf[pos]):
            pos += 1
        if pos >= end:
            break
        c = buf[pos]
        if c == 10 or c == 35:  # blank or comment-only line
            while pos < end and buf[pos] != 10:
                pos += 1
            pos += 1
            line += 1
            continue
        # label
        tok = pos
        status, label, pos = parse_number(buf, pos, end)
        if status != 1 and not (pos >= end or _ends_token(buf[pos])):
            status = 1
        if status == 2 and keep_missing:
            status = 0  # NaN or infinite, for the dataset's nan_policy
        elif status == 0 and not np.isfinite(label):
            return ERR_LABEL_RANGE, tok, line, line_start, n, e, first_start, 0
        if status != 0:
            code = ERR_LABEL if status == 1 else ERR_LABEL_NOT_FINITE
            q = tok
            while q < end and not _ends_token(buf[q]):
                if buf[q] == 58:
                    code = ERR_NO_LABEL
                q += 1
            return code, tok, line, line_start, n, e, first_start, 0
        e0 = e
        missing = False  # a value of the row is nan or inf (kept)
        first = True
        sorted_row = True
        prev = -1
        while True:
            while pos < end and _is_space(buf[pos]):
                pos += 1
            if pos >= end or buf[pos] == 10 or buf[pos] == 35:
                break
            tok = pos
            if first and pos + 4 <= end and buf[pos] == 113 and buf[pos + 1] == 105 \
                    and buf[pos + 2] == 100 and buf[pos + 3] == 58:  # qid:
                first = False
                pos += 4
                if pos < end and (buf[pos] == 45 or buf[pos] == 43):
                    pos += 1
                d0 = pos
                while pos < end and buf[pos] >= 48 and buf[pos] <= 57:
                    pos += 1
                if pos == d0 or not (pos >= end or _ends_token(buf[pos])):
                    return ERR_QID, tok, line, line_start, n, e, first_start, 0
                continue
            first = False
            idx = 0
            if hash_features is None:
                d0 = pos
                while pos < end:
                    d = np.int64(buf[pos]) - 48
                    if d < 0 or d > 9:
                        break
                    if idx <= MAX_INDEX:
                        idx = idx * 10 + d
                    pos += 1
                if pos >= end or buf[pos] != 58 or pos == d0:
                    code = ERR_NO_COLON
                    q = tok
                    while q < end and not _ends_token(buf[q]):
                        if buf[q] == 58:
                            code = ERR_INDEX
                        q += 1
                    return code, tok, line, line_start, n, e, first_start, 0
                if idx < lo or idx > hi:
                    return ERR_INDEX_RANGE, tok, line, line_start, n, e, first_start, idx
            else:
                while pos < end and buf[pos] != 58 and not _ends_token(buf[pos]):
                    pos += 1
                if pos >= end or buf[pos] != 58:
                    return ERR_NO_COLON, tok, line, line_start, n, e, first_start, 0
                if pos == tok:
                    return ERR_NAME, tok, line, line_start, n, e, first_start, 0
                idx = np.int64(murmur3_32(buf, tok, pos, 0))
            pos += 1
            vtok = pos
            status, v, pos = parse_number(buf, pos, end)
            if status != 1 and not (pos >= end or _ends_token(buf[pos])):
                status = 1
            if status == 2 and keep_missing:
                status = 0
                missing = True
            elif status == 0 and not abs(v) <= _FLOAT32_MAX:
                # beyond float32 range: only a value that rounds down to its maximum passes
                if not np.isfinite(np.float32(v)):
                    return ERR_VALUE_RANGE, vtok, line, line_start, n, e, first_start, 0
            if status != 0:
                code = ERR_VALUE if status == 1 else ERR_VALUE_NOT_FINITE
                return code, vtok, line, line_start, n, e, first_start, 0
            if hash_features is None:
                if e >= cap:
                    return ERR_CAPACITY, tok, line, line_start, n, e, first_start, 0
                j = idx - shift
                if j <= prev:
                    sorted_row = False
                prev = j
                indices[e] = j
                values[e] = np.float32(v)
                e += 1
            else:
                k = e - e0
                if k == row_cols.shape[0]:
                    row_cols = _grown(row_cols, 2 * k)
                    row_vals = _grown(row_vals, 2 * k)
                    row_order = np.empty(2 * k, dtype=np.int64)
                    row_scratch = np.empty(2 * k, dtype=np.float64)
                column, sign = hashed_column(np.uint32(idx), hash_features)
                row_cols[k] = column
                row_vals[k] = sign * v
                e += 1
        if hash_features is None:
            if not sorted_row:
                twice = repeated_index(indices[e0:e])
                if twice >= 0:
                    return ERR_DUPLICATE, line_start, line, line_start, n, e0, first_start, \
                        twice + shift
        elif e > e0:
            k = e - e0
            m = sum_duplicates(row_cols, row_vals, 0, k, row_order, row_scratch)
            if e0 + m > cap:
                return ERR_CAPACITY, line_start, line, line_start, n, e0, first_start, 0
            for q in range(m):
                v32 = np.float32(row_vals[q])
                if m < k and not np.isfinite(v32) and not missing:
                    return ERR_SUM_NOT_FINITE, line_start, line, line_start, n, e0, \
                        first_start, 0
                indices[e0 + q] = row_cols[q]
                values[e0 + q] = v32
            e = e0 + m
        # end of the line: skip a comment, consume the newline
        while pos < end and buf[pos] != 10:
            pos += 1
        pos += 1
        if first_start < 0:
            first_start = line_start
        labels[n] = label
        if keep_lines:
            row_line[n] = line
        line += 1
        n += 1
        indptr[n] = e
    return OK, min(pos, end), line, 0, n, e, first_start, 0


@njit(cache=True, nogil=True)
def _grown(a: np.ndarray, size: int) -> np.ndarray:
    """A copy of ``a`` with room for ``size`` values."""
    out = np.empty(size, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


# --------------------------------------------------------------------------- files
@dataclass(frozen=True, slots=True)
class _PieceLocation:
    file: int  # position in the source's file list
    start: int  # byte range of the piece in the (decompressed) text
    end: int
    nnz: int
    first_line: int  # 1-based line of the piece's first row


class _SequentialReader:
    """A decompressing stream over one file and its current position in the text."""

    def __init__(self, stream: IO[bytes], raw: IO[bytes]) -> None:
        self.stream = stream
        self.raw = raw
        self.pos = 0

    def close(self) -> None:
        self.stream.close()
        self.raw.close()


def _compression(path: str) -> type | None:
    for suffix, opener in COMPRESSIONS.items():
        if path.lower().endswith(suffix):
            return opener
    return None


def _line_blocks(stream: IO[bytes], block_bytes: int) -> Iterator[memoryview]:
    """Yield the text of ``stream`` in blocks of whole lines (about ``block_bytes`` each).

    A block is valid until the next one is requested.
    """
    pending: list[bytes] = []
    while True:
        data = stream.read(block_bytes)
        if not data:
            break
        cut = data.rfind(b"\n")
        if cut < 0:
            pending.append(data)  # a line longer than a block: gather until it ends
            continue
        if pending:
            pending.append(data)
            cut += sum(len(p) for p in pending) - len(data)
            data = b"".join(pending)
        yield memoryview(data)[: cut + 1]
        pending = [data[cut + 1 :]] if cut + 1 < len(data) else []
    if pending:
        yield memoryview(b"".join(pending))


def _is_name(token: bytes) -> bool:
    """Whether the part of a token before ``:`` is a name rather than a (bad) number."""
    if not token:
        return False
    try:
        float(token)
    except ValueError:
        return True
    return False


def _excerpt(text: bytes, limit: int = 60) -> str:
    shown = text[:limit].decode("utf-8", errors="replace")
    return shown + ("..." if len(text) > limit else "")


def scan_workers() -> int:
    """Threads that parse an opening scan's blocks: one per usable core, at most
    :data:`SCAN_THREADS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(SCAN_THREADS, cores or 1))


@dataclass(slots=True)
class _ScannedBlock:
    """One block of whole lines parsed by the opening scan, with what the scan keeps of it."""

    text: np.ndarray  # the block's bytes (uint8)
    status: int  # OK or the kernel's error code, with where it stopped:
    pos: int
    line: int  # lines in the block (on error: the offending line, 0-based)
    line_start: int  # start of the offending line
    aux: int
    n_rows: int
    row_line: np.ndarray  # each row's line within the block, 0-based
    indptr: np.ndarray
    newlines: np.ndarray  # positions of the block's newlines
    top: int  # largest stored index (-1 if none) and the line of its first row
    top_line: int
    any_zero: bool
    integral: bool
    labels: np.ndarray | None  # distinct labels (None when some label is not integral)

    @classmethod
    def parse(cls, text: memoryview, *, lo: int, hi: int, shift: int,
              hash_args: tuple[int, ...], keep_missing: bool) -> _ScannedBlock:
        """Parse every line of ``text`` (a worker thread's part of the scan)."""
        buf = np.frombuffer(text, dtype=np.uint8)
        n_cap, e_cap = count_lines_and_colons(buf)
        n_cap += 1
        labels = np.empty(n_cap, dtype=np.float64)
        row_line = np.empty(n_cap, dtype=np.int64)
        indptr = np.zeros(n_cap + 1, dtype=np.int64)
        indices = np.empty(e_cap, dtype=np.int32)
        values = np.empty(e_cap, dtype=np.float32)
        status, pos, line, line_start, n, nnz, _, aux = parse_svmlight_lines(
            buf, 0, len(buf), n_cap, lo, hi, shift, 0, 0, labels, indptr, indices, values,
            row_line, *hash_args, keep_missing=keep_missing)
        empty = np.empty(0, dtype=np.int64)
        if status != OK:
            return cls(buf, status, pos, line, line_start, aux, 0, empty, empty, empty, -1,
                       0, False, True, None)
        idx = indices[:nnz]
        top, top_line = -1, 0
        if nnz:
            top = int(idx.max())
            entry = int(np.argmax(idx == top))
            top_line = int(row_line[int(np.searchsorted(indptr[: n + 1], entry,
                                                        side="right")) - 1])
        lab = labels[:n]
        lab = lab[np.isfinite(lab)]  # missing labels (kept for nan_policy) are no class
        integral = bool(np.array_equal(lab, np.rint(lab)))
        return cls(buf, OK, pos, line, 0, 0, n, row_line[:n], indptr[: n + 1],
                   np.flatnonzero(buf == 10), top, top_line,
                   bool(nnz) and bool(idx.min() == 0), integral,
                   np.unique(lab) if integral else None)

    def line_start_of(self, row: int) -> int:
        """Byte position in the block where ``row``'s line starts."""
        line = int(self.row_line[row])
        return 0 if line == 0 else int(self.newlines[line - 1]) + 1


class SvmlightSource:
    """svmlight / libsvm text: one file or a directory of files, local or any fsspec URL.

    Files may be plain text or compressed (``.gz``, ``.bz2``, ``.xz``, by name). Opening
    scans every file once, streaming in blocks of ``READ_BLOCK_BYTES`` parsed by
    :func:`scan_workers` threads; the whole text is validated then, so a malformed line is
    reported before any training starts.

    A piece is ``piece_rows`` consecutive rows of one file. In a plain file it is read by
    one ranged read of its bytes. A compressed file cannot seek: each file keeps one
    decompressing reader and its position, so reading its pieces in order decompresses the
    file once in all; reading an earlier piece than the last one read restarts the file from
    its beginning (correct, only slower).

    Parameters
    ----------
    path : str
        A file or a directory (its non-hidden files, sorted by name), local or fsspec URL.
    storage_options : dict, optional
        Passed to fsspec.
    n_features : int, optional
        Number of feature columns; an index at or beyond it is an error. By default one
        more than the largest index found.
    zero_based : bool or "auto"
        Whether indices start at 0. ``"auto"`` (as scikit-learn's ``load_svmlight_file``):
        zero-based if any index is 0, else one-based. Unused with ``hash_features``.
    piece_rows : int
        Rows per piece.
    hash_features : int, optional
        Hash feature names into this many columns, a power of two from 2 to 2**30 (for
        example ``2**20``, Vowpal Wabbit's default ``-b 18`` being ``2**18``). The token
        before ``:`` of every entry is then a name: any bytes but whitespace, ``:`` and
        ``#`` (which starts a comment), numeric or not. Its UTF-8 bytes as written are
        hashed with :func:`~streamlearn.data.hashing.murmur3_32` (seed 0) to a column in
        ``[0, hash_features)`` and a sign the value is multiplied by
        (:func:`~streamlearn.data.hashing.hashed_column`); entries of a row that land on one
        column are summed (a collision, or a name written twice), not an error. Numeric
        names are hashed like any other (``3:1`` is the name ``"3"``), so ``zero_based`` is
        irrelevant. ``n_features`` becomes ``hash_features`` (giving another
        ``n_features`` is an error). ``qid:`` as a row's first entry is still a query id.
        A token without ``:value`` stays an error, as in the svmlight format. Without
        ``hash_features``, a non-numeric name is a ``ReadError``.
    keep_missing : bool
        A label or value written ``nan``, ``inf`` or ``infinity`` (any case, signed or not)
        is a missing value. False: the scan raises a ``ReadError`` naming its file and line
        (``nan_policy="raise"``). True: it is stored as NaN or +-infinity, for the dataset's
        ``nan_policy`` to drop its row or fill the value (``"drop"`` or a number); missing
        labels count as no class. A number beyond float32's range (a value) or float64's
        (a label) is a ``ReadError`` either way.

    Attributes
    ----------
    description : str
    sparse : bool
        Always True: blocks hold :class:`~streamlearn.data.sparse_rows.SparseRows`.
    n_features : int
    zero_based : bool
        As resolved by the scan (True with ``hash_features``: columns are hash values).
    hash_features : int or None
    columns : list of str
        ``["y"]``, the label column.
    kinds : dict
        ``{"y": ColumnKind.INTEGER}`` when every label is integral, else ``NUMERIC``.
    pieces : list of Piece
        ``file_row`` is the row (not line) within its file of a piece's first row; the label
        names the file and the lines the piece spans.
    files : list of str
        The files read, in order.
    """

    sparse = True

    def __init__(
        self,
        path: str,
        storage_options: dict[str, Any] | None = None,
        *,
        n_features: int | None = None,
        zero_based: bool | Literal["auto"] = "auto",
        piece_rows: int = 65536,
        hash_features: int | None = None,
        keep_missing: bool = False,
    ) -> None:
        self.keep_missing = bool(keep_missing)
        if hash_features is not None:
            hash_features = check_hash_features(hash_features)
            if n_features is not None and n_features != hash_features:
                raise ValueError(f"n_features={n_features} contradicts hash_features="
                                 f"{hash_features}: hashed features have hash_features "
                                 "columns (leave n_features out)")
            n_features = hash_features
        self.hash_features = hash_features
        # the kernel's extra argument: none at all for numeric indices (one compiled variant)
        self._hash_args: tuple[int, ...] = () if hash_features is None else (hash_features,)
        if zero_based not in (True, False, "auto"):
            raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
        if int(piece_rows) < 1:
            raise ValueError(f"piece_rows must be a positive number, got {piece_rows}")
        if n_features is not None and not 0 < int(n_features) <= MAX_INDEX:
            raise ValueError(f"n_features must be in [1, {MAX_INDEX}], got {n_features}")
        self.description = str(path)
        self.columns = ["y"]
        self.piece_rows = int(piece_rows)
        self._fs, root = fsspec.core.url_to_fs(str(path), **(storage_options or {}))
        self.files = self._list_files(root)
        self._local = isinstance(self._fs, LocalFileSystem)
        self._names = [f if self._local else self._fs.unstrip_protocol(f) for f in self.files]
        self._sizes: list[int] = []
        self.pieces: list[Piece] = []
        self._locations: list[_PieceLocation] = []
        self._scan(n_features, zero_based)
        self._readers: dict[int, _SequentialReader] = {}
        self._locks = [threading.Lock() for _ in self.files]

    def __getstate__(self) -> dict[str, Any]:
        # Pickled without open streams or locks; the receiving process reopens files itself.
        state = self.__dict__.copy()
        state["_readers"] = {}
        del state["_locks"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._locks = [threading.Lock() for _ in self.files]

    # ------------------------------------------------------------------ opening
    def _list_files(self, root: str) -> list[str]:
        try:
            if self._fs.isdir(root):
                entries = self._fs.ls(root, detail=True)
                files = sorted(
                    e["name"] for e in entries
                    if e.get("type") == "file"
                    and not e["name"].rstrip("/").rsplit("/", 1)[-1].startswith(".")
                )
                if not files:
                    raise SourceError(f"no svmlight files in directory {self.description}")
                return files
            if self._fs.isfile(root):
                return [root]
        except OSError as exc:
            raise ReadError(f"could not list {self.description}: {exc}") from exc
        raise SourceError(f"no such file or directory: {self.description}")

    def _open_text(self, k: int) -> tuple[IO[bytes], IO[bytes]]:
        """Open file ``k`` as a stream of its text: (decompressed stream, raw file)."""
        try:
            raw = self._fs.open(self.files[k], "rb")
        except OSError as exc:
            raise ReadError(f"could not open {self._names[k]}: {exc}") from exc
        opener = _compression(self.files[k])
        if opener is None:
            return raw, raw
        if opener is gzip.GzipFile:
            return gzip.GzipFile(fileobj=raw, mode="rb"), raw
        return opener(raw), raw

    def _broken(self, k: int, exc: BaseException) -> ReadError:
        kind = "compressed " if _compression(self.files[k]) else ""
        return ReadError(f"could not read {self._names[k]}: the {kind}file is truncated or "
                         f"corrupt ({type(exc).__name__}: {exc})")

    def _scan(self, n_features: int | None, zero_based: bool | str) -> None:
        if self.hash_features is not None:
            zero_based = True  # indices are hash values, from 0
        auto = zero_based == "auto"
        shift = 0 if zero_based in ("auto", True) else 1
        lo = shift
        if n_features is None:
            hi = MAX_INDEX
        else:
            hi = int(n_features) - 1 + shift if not auto else int(n_features)
        self._bounds = (lo, hi, shift)
        self._requested_features = n_features
        self._max_index = -1  # largest stored index (after ``shift``)
        self._max_at = ""  # file and line where it first appears
        any_zero = False
        integral = True
        distinct: np.ndarray | None = np.empty(0)
        for k in range(len(self.files)):
            stream, raw = self._open_text(k)
            try:
                found = self._scan_file(k, stream)
            except (EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
                if isinstance(exc, ReadError):
                    raise
                raise self._broken(k, exc) from exc
            finally:
                stream.close()
                raw.close()
            any_zero |= found["any_zero"]
            integral &= found["integral"]
            if distinct is not None and integral and found["distinct"] is not None:
                distinct = np.union1d(distinct, found["distinct"])
                if len(distinct) > MAX_KNOWN_CLASSES:
                    distinct = None
            else:
                distinct = None
        if not self.pieces:
            where = (self._names[0] if len(self._names) == 1
                     else f"none of the {len(self._names)} files ({self._names[0]}, ...)")
            raise ReadError(f"{where} holds no rows: only blank lines and comments, or "
                            "nothing")
        self.zero_based = bool(any_zero) if auto else bool(zero_based)
        offset = 0 if self.zero_based or not auto else 1
        largest = self._max_index - offset
        if n_features is None:
            self.n_features = max(largest + 1, 0)
        else:
            self.n_features = int(n_features)
            if largest >= self.n_features:
                raise ReadError(
                    f"{self._max_at}: feature index {self._max_index} is out of range for "
                    f"n_features={self.n_features} ({'zero' if self.zero_based else 'one'}-"
                    "based indices)"
                )
        if auto and not self.zero_based:
            self._bounds = (1, self.n_features, 1)
        else:
            self._bounds = (lo, self.n_features - 1 + shift, shift)
        self.kinds = {"y": ColumnKind.INTEGER if integral else ColumnKind.NUMERIC}
        self._classes = distinct if integral and distinct is not None else None

    def _scan_file(self, k: int, stream: IO[bytes]) -> dict[str, Any]:
        """Parse file ``k``'s text block by block, cutting it into pieces.

        Blocks are parsed by up to :func:`scan_workers` threads at once (the kernel holds no
        lock), while this thread reads the next block and takes the parsed ones in order.
        At most one block per thread and one more are held.
        """
        lo, hi, shift = self._bounds
        base = 0  # byte offset of the block in the text
        line_base = 0  # lines before the block
        file_rows = 0
        piece_rows = 0  # rows of the open piece
        piece_start = piece_first = piece_last = piece_nnz = 0
        any_zero = False
        integral = True
        distinct: np.ndarray | None = np.empty(0)
        starts: list[tuple[int, int, int, int, int, int]] = []

        def take(block: _ScannedBlock) -> None:
            nonlocal base, line_base, file_rows, piece_rows, piece_start, piece_first, \
                piece_last, piece_nnz, any_zero, integral, distinct
            if block.status != OK:
                raise self._parse_error(k, line_base + block.line + 1, block.status,
                                        block.text, block.line_start, block.pos, block.aux)
            n = block.n_rows
            row = 0
            while row < n:  # the block's rows, cut where pieces end
                if piece_rows == 0:
                    piece_start = base + block.line_start_of(row)
                    piece_first = line_base + int(block.row_line[row]) + 1
                    piece_nnz = 0
                stop = min(n, row + self.piece_rows - piece_rows)
                piece_last = line_base + int(block.row_line[stop - 1]) + 1
                piece_rows += stop - row
                file_rows += stop - row
                piece_nnz += int(block.indptr[stop] - block.indptr[row])
                if piece_rows == self.piece_rows:
                    starts.append((piece_start, piece_rows, piece_nnz, piece_first,
                                   piece_last, file_rows - piece_rows))
                    piece_rows = 0
                row = stop
            if block.top > self._max_index:
                self._max_index = block.top
                self._max_at = f"{self._names[k]}, line {line_base + block.top_line + 1}"
            any_zero |= block.any_zero
            if integral and not block.integral:
                integral = False
                distinct = None
            if distinct is not None and block.labels is not None:
                distinct = np.union1d(distinct, block.labels)
                if len(distinct) > MAX_KNOWN_CLASSES:
                    distinct = None
            base += len(block.text)
            line_base += block.line

        workers = scan_workers()
        parse = partial(_ScannedBlock.parse, lo=lo, hi=hi, shift=shift,
                        hash_args=self._hash_args, keep_missing=self.keep_missing)
        if workers == 1:
            for text in _line_blocks(stream, READ_BLOCK_BYTES):
                take(parse(text))
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="streamlearn-scan") as pool:
                pending: deque[Future[_ScannedBlock]] = deque()
                try:
                    for text in _line_blocks(stream, READ_BLOCK_BYTES):
                        pending.append(pool.submit(parse, text))
                        if len(pending) > workers:
                            take(pending.popleft().result())
                    while pending:
                        take(pending.popleft().result())
                finally:
                    for future in pending:
                        future.cancel()
        if piece_rows:
            starts.append((piece_start, piece_rows, piece_nnz, piece_first, piece_last,
                           file_rows - piece_rows))
        self._sizes.append(base)
        for j, (start, rows, nnz, first, last, file_row) in enumerate(starts):
            end = starts[j + 1][0] if j + 1 < len(starts) else base
            self.pieces.append(Piece(rows, f"{self._names[k]} lines {first}-{last}", file_row))
            self._locations.append(_PieceLocation(k, start, end, nnz, first))
        return {"any_zero": any_zero, "integral": integral, "distinct": distinct}

    def _parse_error(self, k: int, line_no: int, status: int, buf: np.ndarray,
                     line_start: int, pos: int, aux: int) -> ReadError:
        if status == ERR_INDEX_RANGE:
            if aux < self._bounds[0]:
                problem = "feature index 0 in a one-based file (zero_based=False)"
            elif aux > MAX_INDEX:
                problem = f"feature index too large (at most {MAX_INDEX})"
            else:
                problem = (f"feature index {aux} is out of range for "
                           f"n_features={self._requested_features}")
        elif status == ERR_DUPLICATE:
            problem = f"feature index {aux} appears twice in the row"
        elif status == ERR_NO_COLON and self.hash_features is not None:
            problem = "expected name:value, found a token without ':'"
        else:
            problem = _PROBLEMS[status]
        line_end = line_start
        limit = min(len(buf), line_start + 200)
        while line_end < limit and buf[line_end] != 10:
            line_end += 1
        text = bytes(buf[line_start:line_end]).rstrip(b"\r")
        stop = pos
        while stop < min(len(buf), pos + 100) and not _ends_token(buf[stop]):
            stop += 1
        token = bytes(buf[pos:stop])
        shown = f" at {_excerpt(token, 40)!r}" if token and status != ERR_DUPLICATE else ""
        hint = ""
        if status == ERR_INDEX and token.startswith(b"qid:"):
            # hashing would read it as a feature named qid: not the way out here
            hint = "; a query id (qid:<int>) comes right after the label, before the features"
        elif status in (ERR_VALUE_NOT_FINITE, ERR_LABEL_NOT_FINITE):
            hint = ("; pass nan_policy='drop' (to open_dataset, fit or the command's "
                    "--nan-policy) to skip such rows"
                    + (", or nan_policy=<number> to fill them" if status == ERR_VALUE_NOT_FINITE
                       else ""))
        elif status == ERR_INDEX and _is_name(token.split(b":", 1)[0]):
            hint = ("; feature names that are not numbers are read by hashing them into "
                    "columns: pass hash_features=2**20 (--hash-features 1048576 on the "
                    "command line)")
        return ReadError(f"{self._names[k]}, line {line_no}: {problem}{shown}; "
                         f"line: {_excerpt(text, 80)!r}{hint}")

    # ------------------------------------------------------------------ reading
    def _piece_text(self, i: int) -> np.ndarray:
        loc = self._locations[i]
        k = loc.file
        if _compression(self.files[k]) is None:
            try:
                data = self._fs.cat_file(self.files[k], start=loc.start, end=loc.end)
            except OSError as exc:
                raise ReadError(f"could not read {self.pieces[i].label}: {exc}") from exc
            return np.frombuffer(data, dtype=np.uint8)
        with self._locks[k]:
            try:
                return self._read_compressed(k, loc.start, loc.end)
            except (EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
                reader = self._readers.pop(k, None)
                if reader is not None:
                    reader.close()
                if isinstance(exc, ReadError):
                    raise
                raise self._broken(k, exc) from exc

    def _read_compressed(self, k: int, start: int, end: int) -> np.ndarray:
        reader = self._readers.get(k)
        if reader is None or reader.pos > start:
            if reader is not None:
                reader.close()
            reader = _SequentialReader(*self._open_text(k))
            self._readers[k] = reader
        while reader.pos < start:
            skipped = len(reader.stream.read(min(start - reader.pos, READ_BLOCK_BYTES)))
            if not skipped:
                raise EOFError("the text ended before the piece")
            reader.pos += skipped
        out = np.empty(end - start, dtype=np.uint8)
        view = memoryview(out)
        got = 0
        while got < len(out):
            n = reader.stream.readinto(view[got:])
            if not n:
                raise EOFError("the text ended before the piece")
            got += n
        reader.pos = end
        if end >= self._sizes[k]:
            reader.close()
            del self._readers[k]
        out.flags.writeable = False  # the type the kernel is compiled for (bytes read)
        return out

    def _parse_piece(self, i: int) -> tuple[np.ndarray, SparseRows]:
        piece, loc = self.pieces[i], self._locations[i]
        buf = self._piece_text(i)
        labels = np.empty(piece.n_rows, dtype=np.float64)
        indptr = np.zeros(piece.n_rows + 1, dtype=np.int64)
        indices = np.empty(loc.nnz, dtype=np.int32)
        values = np.empty(loc.nnz, dtype=np.float32)
        lo, hi, shift = self._bounds
        status, pos, line, line_start, n, nnz, _, aux = parse_svmlight_lines(
            buf, 0, len(buf), piece.n_rows, lo, hi, shift, 0, 0, labels, indptr, indices,
            values, np.empty(0, dtype=np.int64), *self._hash_args,
            keep_missing=self.keep_missing)
        if status != OK:
            raise self._parse_error(loc.file, loc.first_line + line, status, buf, line_start,
                                    pos, aux)
        if n != piece.n_rows or nnz != loc.nnz:
            raise ReadError(f"{self.pieces[i].label}: the file changed since it was opened "
                            f"({n} rows and {nnz} entries, expected {piece.n_rows} and "
                            f"{loc.nnz})")
        return labels, SparseRows(indptr, indices, values, self.n_features)

    def _check_columns(self, target: str | None, weight: str | None) -> None:
        if target is not None and target != "y":
            raise SchemaError(f"target column {target!r} not found in {self.description}; "
                              "svmlight text has one label column, 'y'")
        if weight is not None:
            raise SchemaError(f"svmlight text has no weight column ({weight!r} requested "
                              f"from {self.description})")

    @property
    def nnz(self) -> int:
        """Stored entries of every row, as the scan counted them."""
        return int(sum(loc.nnz for loc in self._locations))

    @property
    def reads_in_order(self) -> bool:
        """Whether some file is compressed: it is read from its start again for every piece
        read before one already read, so a dataset visits its chunks in order."""
        return any(_compression(f) is not None for f in self.files)

    @property
    def reads_pieces_concurrently(self) -> bool:
        """Whether a pass may read and parse several pieces at once, in threads: when no
        file is compressed (a compressed file's pieces share its one decompressing
        reader). Parsing, not reading, bounds a pass over the text."""
        return not self.reads_in_order

    def read_piece(
        self, i: int, features: list[str], target: str | None, weight: str | None
    ) -> Block:
        """Rows of piece ``i``: ``X`` as SparseRows and ``y`` as float64 labels.

        ``features`` is ignored (a sparse source has all its columns); ``weight`` must be
        None, svmlight text having no weight column.
        """
        self._check_columns(target, weight)
        labels, rows = self._parse_piece(i)
        return Block(rows, labels if target is not None else None, None)

    def read_target(self, i: int, target: str) -> np.ndarray:
        """Labels (float64) of piece ``i``."""
        self._check_columns(target, None)
        return self._parse_piece(i)[0]

    def known_classes(self, target: str) -> np.ndarray | None:
        """Sorted distinct labels (float64) found by the scan, or None.

        None when some label is fractional or there are more than ``MAX_KNOWN_CLASSES``.
        """
        self._check_columns(target, None)
        return None if self._classes is None else self._classes.copy()
