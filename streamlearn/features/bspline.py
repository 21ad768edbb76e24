"""B-spline embeddings with difference penalties (paper 000, Sec. 3 and 5).

Each input feature with range ``[lo, hi]`` gets ``n_bases`` uniform B-splines of degree
``p`` in {1, 2, 3} (the P-spline layout of Eilers and Marx): the range is cut into
``n_bases - p`` equal segments of width ``h``, the knots are ``lo + (m - p) h`` for
``m = 0 .. n_bases + p``, and basis ``j`` is supported on ``[lo + (j - p) h, lo + (j + 1) h]``.
On ``[lo, hi]`` exactly ``p + 1`` consecutive bases are non-zero and they sum to one; values
outside the range are clamped to it. On a segment with local coordinate ``u`` in ``[0, 1]``
the non-zero bases are, in order,

* ``p = 1``: ``1 - u``, ``u``;
* ``p = 2``: ``(1 - u)^2 / 2``, ``1/2 + u - u^2``, ``u^2 / 2``;
* ``p = 3``: ``(1 - u)^3 / 6``, ``(3u^3 - 6u^2 + 4) / 6``, ``(-3u^3 + 3u^2 + 3u + 1) / 6``,
  ``u^3 / 6``.

With ``knots="quantile"`` the same bases are evaluated at a warped position whose knots
follow the data (:mod:`streamlearn.features.knots`).

The linearised embedding is ``Psi_d = D_d^-T Phi`` (see
:mod:`streamlearn.features.difference_penalty`).

Zero-preserving variant (Sec. 5): zero is a knot of every feature's grid, and the ``p``
bases that are non-zero there are removed, leaving ``n_bases - p`` columns per feature. The
embedding of ``0`` is then the zero vector, and the fitted function satisfies ``f(0) = 0``
(for ``p > 1`` also its first ``p - 1`` derivatives vanish at 0). Encoders skip such
features entirely, so zeros cost nothing. For non-negative inputs the range starts at 0 and
the removed bases are the first ``p`` (the paper's layout: bases that vanish for
``x <= 0``); a feature that also takes negative values gets a range ``[-z h, (M - z) h]``
with zero on knot ``z`` (:func:`zero_knot_range`), and the curve has independent pieces on
either side of 0 that meet there at 0.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np
from numba import njit

from streamlearn.features.difference_penalty import _check_order, _suffix_sums
from streamlearn.features.feature_map import FeatureMap, as_stat, nonempty_range
from streamlearn.features.knots import (
    cell_position,
    check_knots,
    quantile_knots,
    table_positions,
    uniform_knots,
    warp_parts,
    warp_table,
)

DEGREES = (1, 2, 3)


_SIXTH = 1.0 / 6.0
_TWO_THIRDS = 2.0 / 3.0


def segment_scale(lo: np.ndarray, hi: np.ndarray, n_bases: int, degree: int) -> np.ndarray:
    """Segments per unit of each feature, ``(n_bases - degree) / (hi - lo)`` (float64).

    The encoders take it precomputed: a division per feature per row is the largest single
    cost of embedding a row.
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    return (n_bases - degree) / (hi - lo)


@njit(cache=True, nogil=True, forceinline=True)
def _split(t0, n_seg):
    # Segment index s (= index of the first non-zero basis) and local coordinate u in [0, 1]
    # of the position t0 in segments. Clamping is written as selections, not as branches
    # that reassign a variable: numba compiles those to far slower code, and this runs once
    # per feature per row inside every solver kernel.
    t1 = t0 if t0 > 0.0 else 0.0  # also maps NaN to 0
    t = t1 if t1 < n_seg else np.float64(n_seg)
    s0 = int(t)
    s = s0 if s0 < n_seg else n_seg - 1
    return s, t - s


@njit(cache=True, nogil=True, forceinline=True)
def _segment(x, lo, scale, n_seg):
    # _split of x's position on uniform knots, for ``scale = n_seg / (hi - lo)``
    return _split((np.float64(x) - lo) * scale, n_seg)


@njit(cache=True, nogil=True, forceinline=True)
def _segment_values(x, lo, scale, n_bases, degree):
    # Segment index s and the p + 1 basis values. Constant factors are multiplications
    # (x / 6 is a division without fastmath).
    return _position_values((np.float64(x) - lo) * scale, n_bases, degree)


@njit(cache=True, nogil=True, forceinline=True)
def _position_values(t0, n_bases, degree):
    # _segment_values of the position t0, in segments
    s, u = _split(t0, n_bases - degree)
    return _basis_values(s, u, degree)


@njit(cache=True, nogil=True, forceinline=True)
def _basis_values(s, u, degree):
    # s and the p + 1 basis values at local coordinate u of segment s
    v = 1.0 - u
    if degree == 1:
        return s, v, u, 0.0, 0.0
    if degree == 2:
        return s, 0.5 * v * v, 0.5 + u - u * u, 0.5 * u * u, 0.0
    u2 = u * u
    u3 = u2 * u
    return (
        s,
        v * v * v * _SIXTH,
        0.5 * u3 - u2 + _TWO_THIRDS,
        0.5 * (u2 + u - u3) + _SIXTH,
        u3 * _SIXTH,
    )


@njit(cache=True, nogil=True)
def bspline_basis(x, lo, hi, n_bases, degree, out):
    """Non-zero uniform B-spline values at one input value.

    Parameters
    ----------
    x : float32
        Input value, clamped to ``[lo, hi]``.
    lo, hi : float
        Range of the feature (``hi > lo``).
    n_bases : int
        Number of bases (``>= degree + 1``).
    degree : int
        Spline degree in {1, 2, 3}.
    out : ndarray of shape (>= degree + 1,), float32
        Receives the values of bases ``first .. first + degree``.

    Returns
    -------
    int
        ``first``, the index of the first non-zero basis.
    """
    scale = (n_bases - degree) / (hi - lo)
    s, b0, b1, b2, b3 = _segment_values(x, lo, scale, n_bases, degree)
    out[0] = b0
    out[1] = b1
    if degree >= 2:
        out[2] = b2
    if degree == 3:
        out[3] = b3
    return s


@njit(cache=True, nogil=True, forceinline=True)
def bspline_encode_row(x, lo, scale, n_bases, degree, zero_preserving, warp, idx, val):
    """Sparse B-spline encoding ``Phi(x)`` of one row.

    Feature ``f``'s basis ``j`` goes to column ``f * n_bases + j``. In the zero-preserving
    variant, with zero on knot ``z = -lo[f] * scale[f]`` (0 when the range starts at 0),
    bases ``j < z`` go to column ``f * (n_bases - degree) + j``, bases ``j >= z + degree`` to
    ``f * (n_bases - degree) + j - degree``, the others are dropped, and features with
    ``x[f] == 0`` (or ``x[f] <= lo[f] = 0``) are skipped. Entries are written feature by
    feature.

    Parameters
    ----------
    x : ndarray of shape (n_features,), float32
    lo : ndarray of shape (n_features,), float64
        Lower ends of the per-feature ranges.
    scale : ndarray of shape (n_features,), float64
        :func:`segment_scale` of the ranges, ``(n_bases - degree) / (hi - lo)``.
    n_bases : int
    degree : int
        Spline degree in {1, 2, 3}.
    zero_preserving : bool
    warp : ndarray of float64
        Empty for uniform knots, else a :func:`~streamlearn.features.knots.warp_table` of
        ``n_bases - degree`` segments (not with ``zero_preserving``).
    idx : ndarray of shape (>= n_features * (degree + 1),), int32
        Receives the column indices.
    val : ndarray of shape (>= n_features * (degree + 1),), float32
        Receives the basis values.

    Returns
    -------
    int
        Number of entries written (``n_features * (degree + 1)`` unless zero-preserving).
    """
    if warp.shape[0] != 0:
        return bspline_encode_warped_row(x, lo, scale, warp, n_bases, degree, idx, val)
    return bspline_encode_uniform_row(x, lo, scale, n_bases, degree, zero_preserving, idx,
                                      val)


@njit(cache=True, nogil=True, inline="always")
def bspline_encode_uniform_row(x, lo, scale, n_bases, degree, zero_preserving, idx, val):
    """:func:`bspline_encode_row` on uniform knots, for kernels that know it (no warped
    branch to compile).

    Inlined by numba, so that a kernel for which ``degree`` and ``zero_preserving`` are
    constants compiles only the encoder they select; the encoders are compiled once each and
    inlined by LLVM.
    """
    if zero_preserving:
        return _encode_zero_preserving(x, lo, scale, n_bases, degree, idx, val)
    # Every feature writes degree + 1 entries: one small function per degree, without
    # branches, so that the segment arithmetic of several features runs as SIMD (in one
    # larger function, numba's code for the loops does not vectorise).
    if degree == 1:
        return _encode_degree_1(x, lo, scale, n_bases, idx, val)
    if degree == 2:
        return _encode_degree_2(x, lo, scale, n_bases, idx, val)
    return _encode_degree_3(x, lo, scale, n_bases, idx, val)


@njit(cache=True, nogil=True, forceinline=True)
def _encode_zero_preserving(x, lo, scale, n_bases, degree, idx, val):
    # bspline_encode_row of the zero-preserving variant: features at or below lo are skipped
    # and bases j < degree dropped
    nnz = 0
    for f in range(x.shape[0]):
        nnz = _zero_preserving_feature(f, x[f], lo[f], scale[f], n_bases, degree, idx, val,
                                       nnz)
    return nnz


@njit(cache=True, nogil=True, forceinline=True)
def _zero_preserving_feature(f, v, lo_f, scale_f, n_bases, degree, idx, val, nnz):
    # one feature's zero-preserving entries, written from position nnz; returns the new end.
    # Zero sits on knot z = -lo * scale (0 for a range starting at 0): the degree bases
    # non-zero there are dropped and those after them move down by degree.
    z = int(-lo_f * scale_f + 0.5)
    if v == 0.0 or (z == 0 and not v > lo_f):
        return nnz
    s, b0, b1, b2, b3 = _segment_values(v, lo_f, scale_f, n_bases, degree)
    base = f * (n_bases - degree)
    for r in range(degree + 1):
        j = s + r
        if j >= z:
            if j < z + degree:
                continue
            j -= degree
        b = b0 if r == 0 else (b1 if r == 1 else (b2 if r == 2 else b3))
        idx[nnz] = base + j
        val[nnz] = b
        nnz += 1
    return nnz


@njit(cache=True, nogil=True, forceinline=True)
def bspline_encode_sparse_row(cols, vals, lo, scale, n_bases, degree, idx, val):
    """Zero-preserving B-spline encoding of one sparse row, from its stored entries only.

    The same entries as :func:`bspline_encode_row` with ``zero_preserving=True`` writes for
    the dense row, feature blocks in the order of ``cols``: a feature not stored is zero,
    which the zero-preserving variant skips when ``lo <= 0`` (the ranges of data with
    implicit zeros include 0).

    Parameters
    ----------
    cols : ndarray of int32
        The row's stored columns (distinct).
    vals : ndarray of float32
        Their values.
    lo, scale, n_bases, degree, idx, val
        As for :func:`bspline_encode_row`.

    Returns
    -------
    int
        Number of entries written.
    """
    nnz = 0
    for e in range(cols.shape[0]):
        f = cols[e]
        nnz = _zero_preserving_feature(f, vals[e], lo[f], scale[f], n_bases, degree, idx, val,
                                       nnz)
    return nnz


@njit(cache=True, nogil=True, forceinline=True)
def bspline_encode_warped_row(x, lo, scale, warp, n_bases, degree, idx, val):
    """:func:`bspline_encode_row` with quantile knots (``warp`` not empty, not
    zero-preserving): a feature whose knots moved at its warped position, the others
    (one-hot columns) on uniform knots. The table's ``M`` is ``n_bases - degree``, so its
    segments are the bases'."""
    n_features = x.shape[0]
    flags, first, per_cell, _, cells = warp_parts(warp)
    n_seg = n_bases - degree
    n_cells = int(warp[1])
    if degree == 1:
        for f in range(n_features):
            t = (cell_position(x[f], f, first, per_cell, cells, n_cells) if flags[f] != 0.0
                 else (np.float64(x[f]) - lo[f]) * scale[f])
            s, u = _split(t, n_seg)
            _write_linear(f, s, u, n_bases, idx, val)
        return 2 * n_features
    for f in range(n_features):
        t = (cell_position(x[f], f, first, per_cell, cells, n_cells) if flags[f] != 0.0
             else (np.float64(x[f]) - lo[f]) * scale[f])
        _write_feature(f, t, n_bases, degree, idx, val)
    return (degree + 1) * n_features


@njit(cache=True, nogil=True, forceinline=True)
def _write_feature(f, t, n_bases, degree, idx, val):
    # feature f's degree + 1 entries at position t, at their place in a dense encoding
    s, b0, b1, b2, b3 = _position_values(t, n_bases, degree)
    base = f * n_bases + s
    o = (degree + 1) * f
    idx[o] = base
    idx[o + 1] = base + 1
    val[o] = b0
    val[o + 1] = b1
    if degree >= 2:
        idx[o + 2] = base + 2
        val[o + 2] = b2
    if degree == 3:
        idx[o + 3] = base + 3
        val[o + 3] = b3


@njit(cache=True, nogil=True, forceinline=True)
def _write_linear(f, s, u, n_bases, idx, val):
    # feature f's two degree-1 entries, segment s at local coordinate u
    base = f * n_bases + s
    idx[2 * f] = base
    idx[2 * f + 1] = base + 1
    val[2 * f] = 1.0 - u
    val[2 * f + 1] = u


@njit(cache=True, nogil=True, forceinline=True)
def _encode_degree_1(x, lo, scale, n_bases, idx, val):
    n_seg = n_bases - 1
    nf = x.shape[0]
    for f in range(nf):
        s, u = _segment(x[f], lo[f], scale[f], n_seg)
        _write_linear(f, s, u, n_bases, idx, val)
    return 2 * nf


@njit(cache=True, nogil=True, forceinline=True)
def _encode_degree_2(x, lo, scale, n_bases, idx, val):
    n_seg = n_bases - 2
    nf = x.shape[0]
    for f in range(nf):
        s, u = _segment(x[f], lo[f], scale[f], n_seg)
        v = 1.0 - u
        base = f * n_bases + s
        o = 3 * f
        idx[o] = base
        idx[o + 1] = base + 1
        idx[o + 2] = base + 2
        val[o] = 0.5 * v * v
        val[o + 1] = 0.5 + u - u * u
        val[o + 2] = 0.5 * u * u
    return 3 * nf


@njit(cache=True, nogil=True, forceinline=True)
def _encode_degree_3(x, lo, scale, n_bases, idx, val):
    n_seg = n_bases - 3
    nf = x.shape[0]
    for f in range(nf):
        s, u = _segment(x[f], lo[f], scale[f], n_seg)
        v = 1.0 - u
        u2 = u * u
        u3 = u2 * u
        base = f * n_bases + s
        o = 4 * f
        idx[o] = base
        idx[o + 1] = base + 1
        idx[o + 2] = base + 2
        idx[o + 3] = base + 3
        val[o] = v * v * v * _SIXTH
        val[o + 1] = 0.5 * u3 - u2 + _TWO_THIRDS
        val[o + 2] = 0.5 * (u2 + u - u3) + _SIXTH
        val[o + 3] = u3 * _SIXTH
    return 4 * nf


@njit(cache=True, nogil=True)
def _psi_block(xf, lo, hi, n_bases, degree, order, zero_preserving, block):
    # Psi_d of one feature value into block[:n_cols] (float64); returns 1 + the last index
    # that may be non-zero (0 when the block is zero).
    for i in range(block.shape[0]):
        block[i] = 0.0
    scale = (n_bases - degree) / (hi - lo)
    z = int(-lo * scale + 0.5) if zero_preserving else 0  # knot of zero
    if zero_preserving and (xf == 0.0 or (z == 0 and not xf > lo)):
        return 0
    s, b0, b1, b2, b3 = _segment_values(xf, lo, scale, n_bases, degree)
    top = 0
    for r in range(degree + 1):
        j = s + r
        if zero_preserving and j >= z:
            if j < z + degree:
                continue
            j -= degree
        block[j] = b0 if r == 0 else (b1 if r == 1 else (b2 if r == 2 else b3))
        top = j + 1
    _suffix_sums(block, top, order)
    return top


@njit(cache=True, nogil=True)
def bspline_transform_dense(X, lo, hi, n_bases, degree, order, zero_preserving, out):
    """Materialise ``Psi_d(X)`` row by row into a dense array.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32 (float64: warped positions)
    lo, hi : ndarray of shape (n_features,), float64
    n_bases, degree : int
    order : int
        Penalty order ``d`` in {0, 1, 2}.
    zero_preserving : bool
    out : ndarray of shape (n_rows, n_features * n_cols), float32
        Receives the embedding; ``n_cols = n_bases - degree`` if zero-preserving, else
        ``n_bases``.
    """
    n_cols = n_bases - degree if zero_preserving else n_bases
    block = np.empty(n_cols, dtype=np.float64)
    for r in range(X.shape[0]):
        for f in range(X.shape[1]):
            _psi_block(X[r, f], lo[f], hi[f], n_bases, degree, order, zero_preserving, block)
            base = f * n_cols
            for i in range(n_cols):
                out[r, base + i] = block[i]


#: Largest output (entries) that :func:`bspline_transform` computes with numpy instead of
#: :func:`bspline_transform_dense`: up to about a millisecond a call, less than what the
#: kernel's compile (0.7 s) would cost a fit whose transforms are all this small.
NUMPY_TRANSFORM_ENTRIES = 1 << 17


def bspline_transform(X: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_bases: int,
                      degree: int, order: int, zero_preserving: bool,
                      out: np.ndarray) -> np.ndarray:
    """``Psi_d(X)`` into ``out``: :func:`bspline_transform_numpy` when ``out`` holds at most
    :data:`NUMPY_TRANSFORM_ENTRIES` entries, else the compiled
    :func:`bspline_transform_dense`. Both give the same bits.

    A fit embeds small blocks of its describe sample (step offset, term importances); on
    small data these are all it embeds outside the solver kernels, and a first fit then
    compiles nothing for them.

    Parameters
    ----------
    X, lo, hi, n_bases, degree, order, zero_preserving, out
        As for :func:`bspline_transform_dense`.

    Returns
    -------
    ndarray
        ``out``.
    """
    if out.size <= NUMPY_TRANSFORM_ENTRIES:
        bspline_transform_numpy(X, lo, hi, n_bases, degree, order, zero_preserving, out)
    else:
        bspline_transform_dense(X, lo, hi, n_bases, degree, order, zero_preserving, out)
    return out


def bspline_transform_numpy(X: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_bases: int,
                            degree: int, order: int, zero_preserving: bool,
                            out: np.ndarray) -> np.ndarray:
    """:func:`bspline_transform_dense` in numpy, all features at once (the same arithmetic,
    in float64, so the same float32 values).

    Each value's segment and basis values are scattered into a dense ``Phi`` block whose
    columns run backwards, so that the ``order`` suffix sums applying ``D_d^-T`` are
    cumulative sums along its contiguous axis. Arguments and result as for
    :func:`bspline_transform`.
    """
    X = np.asarray(X)
    n, d = X.shape
    lo = np.asarray(lo, dtype=np.float64)
    n_seg = n_bases - degree
    scale = n_seg / (np.asarray(hi, dtype=np.float64) - lo)
    t = (X.astype(np.float64) - lo) * scale
    t = np.minimum(np.where(t > 0.0, t, 0.0), float(n_seg))  # clamped; NaN to 0
    s = np.minimum(t.astype(np.intp), n_seg - 1)
    u = t - s
    v = 1.0 - u
    if degree == 1:
        values: tuple[np.ndarray, ...] = (v, u)
    elif degree == 2:
        values = (0.5 * v * v, 0.5 + u - u * u, 0.5 * u * u)
    else:
        u2 = u * u
        u3 = u2 * u
        values = (v * v * v * _SIXTH, 0.5 * u3 - u2 + _TWO_THIRDS,
                  0.5 * (u2 + u - u3) + _SIXTH, u3 * _SIXTH)
    shift = degree if zero_preserving else 0
    n_cols = n_bases - shift
    block = np.zeros((n, d, n_cols))
    flat = block.reshape(-1)
    # basis j = s + r of a value goes to reversed column n_cols - 1 - j (zero-preserving:
    # the bases z .. z + degree - 1 non-zero at zero's knot z are left out, later ones
    # move down by degree)
    start = (np.arange(n * d).reshape(n, d) * n_cols) + (n_cols - 1)
    if not zero_preserving:
        for r, b in enumerate(values):
            flat[(start - s - r).reshape(-1)] = b.reshape(-1)
    else:
        z = np.floor(-lo * scale + 0.5).astype(np.intp)
        keep = (X != 0) & ((z > 0) | (X > lo))  # zeros, and values at or below lo = 0
        for r, b in enumerate(values):
            j = s + r
            mask = keep & ((j < z) | (j >= z + shift))
            column = np.where(j < z, j, j - shift)
            flat[(start - column)[mask]] = b[mask]
    for _ in range(order):  # a_i <- a_i + a_{i+1}, from the last column down
        np.cumsum(block, axis=2, out=block)
    out.reshape(n, d, n_cols)[...] = block[:, :, ::-1]
    return out


@njit(cache=True, nogil=True)
def bspline_transform_csr(X, lo, hi, n_bases, degree, order, zero_preserving):
    """Materialise ``Psi_d(X)`` as a CSR triple of its non-zero entries.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32 (float64: warped positions)
    lo, hi : ndarray of shape (n_features,), float64
    n_bases, degree : int
    order : int
        Penalty order ``d`` in {0, 1, 2}.
    zero_preserving : bool

    Returns
    -------
    indptr : ndarray of shape (n_rows + 1,), int64
    indices : ndarray of int32
    data : ndarray of float32
    """
    n_cols = n_bases - degree if zero_preserving else n_bases
    block = np.empty(n_cols, dtype=np.float64)
    n_rows = X.shape[0]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    for r in range(n_rows):
        count = 0
        for f in range(X.shape[1]):
            top = _psi_block(X[r, f], lo[f], hi[f], n_bases, degree, order,
                             zero_preserving, block)
            for i in range(top):
                if np.float32(block[i]) != 0.0:
                    count += 1
        indptr[r + 1] = indptr[r] + count
    indices = np.empty(indptr[n_rows], dtype=np.int32)
    data = np.empty(indptr[n_rows], dtype=np.float32)
    for r in range(n_rows):
        k = indptr[r]
        for f in range(X.shape[1]):
            top = _psi_block(X[r, f], lo[f], hi[f], n_bases, degree, order,
                             zero_preserving, block)
            for i in range(top):
                v = np.float32(block[i])
                if v != 0.0:
                    indices[k] = f * n_cols + i
                    data[k] = v
                    k += 1
    return indptr, indices, data


KNOTS = ("uniform", "quantile")


def zero_knot_range(lo: np.ndarray, hi: np.ndarray,
                    n_segments: int) -> tuple[np.ndarray, np.ndarray]:
    """Ranges covering ``[lo, hi]`` and 0 whose uniform grid of ``n_segments`` has 0 on a knot.

    A feature with ``lo >= 0`` gets ``[0, hi]`` and one with ``hi <= 0`` gets ``[lo, 0]``. A
    feature of both signs gets ``z = round(M * -lo / (hi - lo))`` segments below 0 (at
    least one on each side), the segment width ``h = max(-lo / z, hi / (M - z))`` that
    covers both ends, and the range ``[-z h, (M - z) h]``; ``M = n_segments`` must then be
    at least 2.

    Parameters
    ----------
    lo, hi : ndarray of shape (n_features,), float64
    n_segments : int

    Returns
    -------
    lo, hi : ndarray of shape (n_features,), float64
    """
    both = (lo < 0) & (hi > 0)
    if both.any() and n_segments < 2:
        f = int(np.flatnonzero(both)[0])
        raise ValueError(
            f"feature {f} takes values of both signs ([{lo[f]:.6g}, {hi[f]:.6g}]): a "
            "zero-preserving map needs n_bases - degree >= 2 to put a segment on each side "
            f"of 0, got {n_segments}")
    m = max(int(n_segments), 2)
    z = np.clip(np.rint(m * -lo / np.where(both, hi - lo, 1.0)), 1, m - 1)
    h = np.maximum(-lo / z, hi / (m - z))
    new_lo = np.where(both, -z * h, np.minimum(lo, 0.0))
    new_hi = np.where(both, (m - z) * h, np.maximum(hi, 0.0))
    return new_lo, new_hi


class BSplineMap(FeatureMap):
    """B-spline embedding with a D0/D1/D2 difference penalty, ``Psi_d = D_d^-T Phi``.

    Parameters
    ----------
    degree : {1, 2, 3}
        Spline degree (linear, quadratic, cubic).
    n_bases : int
        Number of B-spline bases per feature, at least ``degree + 1``.
    penalty_order : {0, 1, 2}
        Order ``d`` of the difference penalty ``D_d`` (``D0 = I`` keeps ``Psi = Phi``).
    zero_preserving : bool
        Put zero on a knot and drop the ``degree`` bases that are non-zero there, so that
        ``Psi(0) = 0``; leaves ``n_bases - degree`` columns per feature. A feature that
        takes values of both signs needs ``n_bases - degree >= 2``.
    knots : {"uniform", "quantile"}
        ``"uniform"``: knots evenly spaced over each feature's range. ``"quantile"``: the
        bases are evaluated at a warped position whose knots follow the data
        (:mod:`streamlearn.features.knots`), set by :meth:`fit_knots` from a row sample;
        not with ``zero_preserving``.

    Attributes
    ----------
    lo_, hi_ : ndarray of shape (n_features,), float64
        Per-feature ranges; inputs are clamped to them.
    knots_ : ndarray of shape (n_features, n_bases - degree + 1), float64
        The knots of each feature, strictly increasing from ``lo_`` to ``hi_`` (the uniform
        grid until :meth:`fit_knots`); only with ``knots="quantile"``.

    Notes
    -----
    For on-the-fly use inside a solver, encode a row with :func:`bspline_encode_row`
    (``degree``, ``n_bases``, ``zero_preserving``, ``lo_``, ``scale_``), score it with
    :func:`~streamlearn.features.difference_penalty.score_d` against ``w_d = D_d^-1 w`` and
    update with :func:`~streamlearn.features.difference_penalty.update_d`
    (``n_cols = n_columns_per_feature``, ``order = penalty_order``).
    """

    _param_names = ("degree", "n_bases", "penalty_order", "zero_preserving", "knots")
    _state_names = ("lo_", "hi_")

    def __init__(
        self,
        degree: int = 3,
        n_bases: int = 20,
        penalty_order: int = 1,
        zero_preserving: bool = False,
        knots: str = "uniform",
    ) -> None:
        if degree not in DEGREES:
            raise ValueError(f"degree must be one of {DEGREES}, got {degree!r}")
        if int(n_bases) < degree + 1:
            raise ValueError(f"n_bases must be at least degree + 1 = {degree + 1}, got {n_bases}")
        self.degree = int(degree)
        self.n_bases = int(n_bases)
        self.penalty_order = _check_order(penalty_order)
        self.zero_preserving = bool(zero_preserving)
        if knots not in KNOTS:
            raise ValueError(f"knots must be one of {KNOTS}, got {knots!r}")
        if knots == "quantile" and self.zero_preserving:
            raise ValueError("knots='quantile' needs zero_preserving=False: a zero-preserving "
                             "map's bases start at 0 on uniform knots")
        self.knots = knots

    @property
    def is_fitted(self) -> bool:
        """Whether the ranges (and, for ``knots="quantile"``, the knots) are set."""
        return super().is_fitted and (self.knots == "uniform" or hasattr(self, "knots_"))

    @property
    def n_segments(self) -> int:
        """``n_bases - degree``: knot segments per feature."""
        return self.n_bases - self.degree

    @property
    def warp_(self) -> np.ndarray:
        """The kernels' ``warp`` argument: empty for uniform knots and for quantile knots
        none of which moved, else the :func:`~streamlearn.features.knots.warp_table` of
        ``knots_``."""
        if self.knots == "uniform":
            return np.zeros(0, dtype=np.float64)
        cached = getattr(self, "_warp_cache", None)
        if cached is None or cached[0] is not self.knots_:
            table = warp_table(self.knots_)
            # no feature's knots moved (one-hot columns): the uniform encoders, exactly
            cached = (self.knots_, table if table[3] > 0 else np.zeros(0, dtype=np.float64))
            self._warp_cache = cached
        return cached[1]

    def positions(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(Z, lo, hi)`` with which uniform knots over ``[lo, hi]`` reproduce the map.

        For uniform knots (or quantile knots none of which moved) ``(X, lo_, hi_)``;
        for quantile knots the warped positions
        (float64, as the kernels compute them, in ``[0, n_segments]``) over
        ``[0, n_segments]``.
        """
        table = self.warp_
        if table.shape[0] == 0:  # uniform knots, or none of them moved
            return X, self.lo_, self.hi_
        Z = table_positions(X, table)
        n_features = self.lo_.shape[0]
        return (Z, np.zeros(n_features), np.full(n_features, float(self.n_segments)))

    def fit_knots(self, sample: Any, uniform: Any = ()) -> Self:
        """Place the knots of ``knots="quantile"`` at the quantiles of a row sample.

        The rule is :func:`~streamlearn.features.knots.quantile_knots`. Does nothing for
        uniform knots.

        Parameters
        ----------
        sample : array-like of shape (k, n_features)
            Rows spread over the data (a describe pass's sample).
        uniform : iterable of int
            Features that keep uniform knots (categorical codes).

        Returns
        -------
        self
        """
        self._check_fitted()
        if self.knots == "quantile":
            self.knots_ = quantile_knots(np.asarray(sample), self.lo_, self.hi_,
                                         self.n_segments, uniform)
        return self

    def to_dict(self) -> dict[str, Any]:
        """:meth:`FeatureMap.to_dict`, with ``knots_`` in the state for quantile knots."""
        data = super().to_dict()
        if data["state"] is not None and self.knots == "quantile":
            data["state"]["knots_"] = self.knots_.tolist()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """:meth:`FeatureMap.from_dict`, reading ``knots_`` for quantile knots."""
        obj = super().from_dict(data)
        if obj.knots == "quantile" and data.get("state") is not None:
            obj.knots_ = check_knots(data["state"]["knots_"], obj.lo_.shape[0],
                                     obj.n_segments)
        return obj

    @property
    def n_columns_per_feature(self) -> int:
        """``n_bases``, or ``n_bases - degree`` when zero-preserving."""
        return self.n_bases - self.degree if self.zero_preserving else self.n_bases

    @property
    def scale_(self) -> np.ndarray:
        """Segments per unit of each feature, the ``scale`` of :func:`bspline_encode_row`."""
        return segment_scale(self.lo_, self.hi_, self.n_bases, self.degree)

    def max_row_nnz(self, n_features: int) -> int:
        """Size of the ``idx``/``val`` buffers :func:`bspline_encode_row` needs."""
        return int(n_features) * (self.degree + 1)

    def fit(self, lo: Any, hi: Any) -> Self:
        """Set the per-feature ranges.

        Parameters
        ----------
        lo, hi : array-like of shape (n_features,)
            Smallest and largest value of each feature. A feature with ``hi == lo`` gets a
            range of width 1 above ``lo``
            (:func:`~streamlearn.features.feature_map.nonempty_range`). When
            zero-preserving, the range is widened to hold 0 on a knot: ``[0, hi]`` for
            ``lo >= 0``, ``[lo, 0]`` for ``hi <= 0``, else :func:`zero_knot_range`.

        Returns
        -------
        self
        """
        lo = as_stat(lo, "lo")
        hi = as_stat(hi, "hi")
        if lo.shape != hi.shape:
            raise ValueError(f"lo and hi differ in shape: {lo.shape} vs {hi.shape}")
        bad = np.flatnonzero(hi < lo)
        if bad.size:
            f = int(bad[0])
            raise ValueError(f"hi < lo for feature {f}: [{lo[f]}, {hi[f]}]")
        if self.zero_preserving:
            lo, hi = zero_knot_range(lo, hi, self.n_segments)
        self.lo_ = lo
        self.hi_ = nonempty_range(lo, hi)
        if self.knots == "quantile":
            self.knots_ = uniform_knots(self.lo_, self.hi_, self.n_segments)
        return self

    def fit_from_stats(
        self,
        minimum: Any = None,
        maximum: Any = None,
        mean: Any = None,
        std: Any = None,
        quantiles: Any = None,
    ) -> Self:
        """Fit from streamed per-feature statistics; uses ``minimum`` and ``maximum`` only.

        Parameters
        ----------
        minimum, maximum : array-like of shape (n_features,)
        mean, std : array-like of shape (n_features,), optional
            Not used.
        quantiles : array-like of shape (n_quantiles, n_features), optional
            Not used: quantile knots come from a row sample (:meth:`fit_knots`).

        Returns
        -------
        self
        """
        if minimum is None or maximum is None:
            raise ValueError("BSplineMap.fit_from_stats needs minimum and maximum")
        return self.fit(minimum, maximum)

    def transform(self, X: Any) -> np.ndarray:
        """Dense ``Psi_d(X)``, float32 of shape (n_rows, n_output_features(n_features))."""
        X = self._check_X(X)
        out = np.empty((X.shape[0], self.n_output_features(X.shape[1])), dtype=np.float32)
        Z, lo, hi = self.positions(X)
        return bspline_transform(Z, lo, hi, self.n_bases, self.degree, self.penalty_order,
                                 self.zero_preserving, out)

    def transform_csr(self, X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``Psi_d(X)`` as a CSR triple ``(indptr int64, indices int32, data float32)``."""
        X = self._check_X(X)
        Z, lo, hi = self.positions(X)
        return bspline_transform_csr(
            Z, lo, hi, self.n_bases, self.degree, self.penalty_order, self.zero_preserving,
        )
