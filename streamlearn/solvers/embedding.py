"""Embedding a row on the fly inside solver kernels, for any feature map (paper 000, Sec. 5).

Numba kernels cannot take a feature map object or a Python function, so a map is described
by an integer ``kind`` and two packed arrays:

* ``kind``: :data:`LINEAR` (identity, the raw row), :data:`BSPLINE` (with or without pair
  terms, :class:`~streamlearn.features.pair_terms.BSplinePairMap`), :data:`WARPED`
  (B-splines whose quantile knots moved), :data:`FOURIER` or :data:`HERMITE`;
* ``ipar`` (int64): integer parameters, indexed by the ``IP_*`` constants, followed for
  pair terms by each pair's features and the nodes of their axes, ``f, g, P_f, P_g``
  (:attr:`~streamlearn.features.pair_terms.BSplinePairMap.pair_spec`), then for value
  terms (:mod:`~streamlearn.features.value_terms`) by their features and the bounds of
  their values in the value table;
* ``fpar`` (float64): the per-feature statistics ``[a (n_features), b (n_features),
  weights (n_terms), clip]``, where ``(a, b)`` is ``(lo, scale)`` for B-splines (``scale``:
  :func:`~streamlearn.features.bspline.segment_scale`), ``(lo, hi)`` for Fourier and
  ``(mean, std)`` for Hermite, and ``clip`` is the Hermite map's clip and the Fourier map's
  ``half_width_``; pair maps append each feature's pair axis's scale and its
  lower end (n_features each) and, from ``ipar[IP_VALUE_START]`` on, the value columns'
  entry and the value table, and
  B-splines with quantile knots then the :func:`~streamlearn.features.knots.warp_table`
  from ``ipar[IP_WARP_START]`` on.

Pair columns come after the ``n_features * n_cols`` per-feature columns
(``ipar[IP_MAIN_DIMS]``), and value columns after them; their penalty is a ridge, so
``w_d`` equals ``w`` there, and the per-row helpers update them as plain sparse entries.
B-splines with and without pairs or value terms share one compiled kernel: with
``ipar[IP_N_PAIRS] = 0`` the pair loops do not run, and a kind of their own would double
the first fit's compile time for a few comparisons per row.

:func:`embedding_params` builds them from a fitted map (or ``None`` for the identity).

Models are kept in the ``w_d`` form: ``w_d = D_d^-1 w`` feature block by feature block for
B-splines with penalty order ``d`` (``w_d = w`` for every other kind and for ``d = 0``). The
score ``w . Psi_d(x)`` is then the sparse product ``w_d . Phi(x)`` of the row's encoding
(:func:`~streamlearn.features.difference_penalty.score_d`) and the update
``w += eta Psi_d(x)`` is :func:`~streamlearn.features.difference_penalty.update_d` with
``n_cols = ipar[IP_N_COLS]`` and ``order = ipar[IP_ORDER]``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import FunctionType
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from streamlearn.data.chunk import writeable
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.features import (
    BSplineMap,
    BSplinePairMap,
    FeatureMap,
    FourierMap,
    HermiteMap,
    bspline_encode_sparse_row,
    bspline_encode_uniform_row,
    bspline_encode_warped_row,
    fourier_encode_every_feature,
    fourier_encode_frequency_major,
    fourier_encode_row,
    fourier_scaling,
    hermite_encode_degree_major,
    hermite_encode_row,
    pair_encode_row,
    score_d,
    update_d,
    update_d_pair,
    value_encode_row,
)
from streamlearn.features.difference_penalty import _suffix_sums

LINEAR = 0
BSPLINE = 1
FOURIER = 2
HERMITE = 3
#: Inside kernels only: the identity's encoding of a sparse row (its stored entries), which
#: the per-row helpers treat as any map's encoding.
ENCODED = 4
#: B-splines (with or without pair terms) whose knots moved from the uniform grid
#: (:mod:`streamlearn.features.knots`): a kind of its own, so that a fit compiles the
#: warped encoders or the uniform ones, not both, into its kernels.
WARPED = 5
#: :data:`BSPLINE` and :data:`WARPED` maps with value terms
#: (:mod:`~streamlearn.features.value_terms`): kinds of their own, so that the kernels of
#: a fit without value terms compile no value encoding (it cost every first fit about
#: 1.1x its time), and only a fit that keeps value terms compiles these.
BSPLINE_VALUES = 6
WARPED_VALUES = 7
KIND_NAMES = ("linear", "bspline", "fourier", "hermite", "encoded", "bspline_warped",
              "bspline_values", "bspline_warped_values")

IP_N_FEATURES = 0  # input features
IP_N_COLS = 1  # output columns per input feature
IP_N_DIMS = 2  # the length of w_d: n_features * n_cols, plus the pair columns
IP_ORDER = 3  # difference penalty order d of w_d = D_d^-1 w (0 unless B-spline)
IP_MAX_NNZ = 4  # largest number of entries encode_row writes
IP_N_BASES = 5  # B-spline bases per feature
IP_DEGREE = 6  # B-spline degree
IP_ZERO_PRESERVING = 7  # 1 for the Psi(0) = 0 variants
IP_N_TERMS = 8  # Fourier frequencies or Hermite polynomials
IP_MAIN_DIMS = 9  # n_features * n_cols, the per-feature columns
IP_N_PAIRS = 10  # pair terms (B-splines only)
IP_PAIR_BASES = 11  # bases per axis of a pair's grid (a categorical axis: its own count)
IP_WARP_START = 12  # B-splines with quantile knots: where fpar's warp table starts (else 0)
IP_N_VALUE_TERMS = 13  # value terms (B-splines only)
IP_VALUE_START = 14  # where fpar's value entry and table start (0 without value terms)
N_IPAR = 15


class Embedding(NamedTuple):
    """Packed description of a feature map for the solver kernels: ``kernel(..., *emb)``."""

    kind: int
    ipar: np.ndarray
    fpar: np.ndarray

    @property
    def n_features(self) -> int:
        """Number of input features."""
        return int(self.ipar[IP_N_FEATURES])

    @property
    def n_cols(self) -> int:
        """Output columns per input feature."""
        return int(self.ipar[IP_N_COLS])

    @property
    def n_dims(self) -> int:
        """Length of ``w_d`` (without a bias entry)."""
        return int(self.ipar[IP_N_DIMS])

    @property
    def main_dims(self) -> int:
        """Per-feature columns, ``n_features * n_cols`` (pair columns follow them)."""
        return int(self.ipar[IP_MAIN_DIMS])

    @property
    def n_pairs(self) -> int:
        """Number of pair terms."""
        return int(self.ipar[IP_N_PAIRS])

    @property
    def n_value_terms(self) -> int:
        """Number of value terms."""
        return int(self.ipar[IP_N_VALUE_TERMS])

    @property
    def pair_bases(self) -> int:
        """Bases per axis of a pair's grid (0 without pairs)."""
        return int(self.ipar[IP_PAIR_BASES])

    @property
    def order(self) -> int:
        """Difference penalty order of the ``w_d`` representation."""
        return int(self.ipar[IP_ORDER])

    @property
    def takes_sparse_rows(self) -> bool:
        """Whether the kernels embed CSR rows in time of their stored entries: the identity,
        and zero-preserving B-splines without pairs (:func:`encode_sparse_row`)."""
        return self.kind == LINEAR or (self.kind == BSPLINE and self.n_pairs == 0
                                       and self.n_value_terms == 0
                                       and bool(self.ipar[IP_ZERO_PRESERVING]))

    @property
    def max_nnz(self) -> int:
        """Size of the ``idx``/``val`` buffers :func:`encode_row` needs."""
        return int(self.ipar[IP_MAX_NNZ])


def embedding_params(feature_map: FeatureMap | None, n_features: int | None = None) -> Embedding:
    """Pack a fitted feature map (or the identity) for the solver kernels.

    Parameters
    ----------
    feature_map : BSplineMap, BSplinePairMap, FourierMap, HermiteMap or None
        A fitted map; None embeds a row as itself (``kind = LINEAR``).
    n_features : int, optional
        Number of input features; required for ``None``, checked against a fitted map.

    Returns
    -------
    Embedding
        ``(kind, ipar, fpar)``.
    """
    ipar = np.zeros(N_IPAR, dtype=np.int64)
    if feature_map is None:
        if n_features is None:
            raise ValueError("n_features is required for the linear (identity) embedding")
        nf = int(n_features)
        ipar[[IP_N_FEATURES, IP_N_COLS, IP_N_DIMS, IP_MAX_NNZ, IP_MAIN_DIMS]] = nf, 1, nf, nf, nf
        return Embedding(LINEAR, ipar, np.zeros(1, dtype=np.float64))
    if not feature_map.is_fitted:
        raise RuntimeError(f"{type(feature_map).__name__} is not fitted; call fit(...) first")
    nf = feature_map.n_features_in_
    if n_features is not None and int(n_features) != nf:
        raise ValueError(f"n_features={n_features} but the map was fitted on {nf} features")
    n_cols = feature_map.n_columns_per_feature
    ipar[IP_N_FEATURES] = nf
    ipar[IP_N_COLS] = n_cols
    ipar[IP_N_DIMS] = nf * n_cols
    ipar[IP_MAIN_DIMS] = nf * n_cols
    if isinstance(feature_map, BSplinePairMap):
        ipar[IP_ORDER] = feature_map.penalty_order
        ipar[IP_MAX_NNZ] = feature_map.max_row_nnz(nf)
        ipar[IP_N_BASES] = feature_map.n_bases
        ipar[IP_DEGREE] = feature_map.degree
        ipar[IP_N_DIMS] = feature_map.n_output_features(nf)
        ipar[IP_N_PAIRS] = feature_map.n_pairs
        ipar[IP_PAIR_BASES] = feature_map.pair_bases
        ipar[IP_N_VALUE_TERMS] = len(feature_map.value_terms)
        ipar[IP_VALUE_START] = 4 * nf + 1 if feature_map.value_terms else 0
        ipar = np.concatenate([ipar, feature_map.pair_spec, feature_map.value_features,
                               feature_map.value_bounds if feature_map.value_terms else []]
                              ).astype(np.int64)
        values = ([feature_map.value_scale, *feature_map.value_table]
                  if feature_map.value_terms else [])
        fpar = np.concatenate([feature_map.lo_, feature_map.scale_, [0.0],
                               feature_map.pair_scale_, feature_map.pair_lo_, values])
        return _bspline(fpar, ipar, feature_map)
    if isinstance(feature_map, BSplineMap):
        ipar[IP_ORDER] = feature_map.penalty_order
        ipar[IP_MAX_NNZ] = feature_map.max_row_nnz(nf)
        ipar[IP_N_BASES] = feature_map.n_bases
        ipar[IP_DEGREE] = feature_map.degree
        ipar[IP_ZERO_PRESERVING] = feature_map.zero_preserving
        fpar = np.concatenate([feature_map.lo_, feature_map.scale_, [0.0]])
        return _bspline(fpar, ipar, feature_map)
    if isinstance(feature_map, FourierMap | HermiteMap):
        ipar[IP_MAX_NNZ] = nf * n_cols
        ipar[IP_ZERO_PRESERVING] = feature_map.zero_preserving
        ipar[IP_N_TERMS] = feature_map.n_terms
        if isinstance(feature_map, FourierMap):
            kind, a, b = FOURIER, feature_map.lo_, feature_map.hi_
            clip = feature_map.half_width_
        else:
            kind, a, b = HERMITE, feature_map.mean_, feature_map.std_
            clip = np.inf if feature_map.clip is None else feature_map.clip
        fpar = np.concatenate([a, b, feature_map.weights, [clip]]).astype(np.float64)
        return Embedding(kind, ipar, fpar)
    raise TypeError(f"no on-the-fly embedding for {type(feature_map).__name__}")


def _bspline(fpar: np.ndarray, ipar: np.ndarray, feature_map: BSplineMap) -> Embedding:
    """A B-spline map's embedding: :data:`BSPLINE`, or :data:`WARPED` with the map's warp
    table appended to ``fpar`` from ``ipar[IP_WARP_START]`` on when its knots moved
    (:data:`BSPLINE_VALUES`, :data:`WARPED_VALUES` with value terms)."""
    warp = feature_map.warp_
    values = ipar[IP_N_VALUE_TERMS] > 0
    if warp.shape[0] == 0:
        return Embedding(BSPLINE_VALUES if values else BSPLINE, ipar, fpar.astype(np.float64))
    ipar[IP_WARP_START] = fpar.shape[0]
    return Embedding(WARPED_VALUES if values else WARPED, ipar,
                     np.concatenate([fpar, warp]).astype(np.float64))



@njit(cache=True, nogil=True, inline="always")
def encode_row(kind, x, ipar, fpar, idx, val):
    """Sparse encoding ``Phi(x)`` of one row for any map kind.

    Parameters
    ----------
    kind : int
        :data:`LINEAR`, :data:`BSPLINE`, :data:`WARPED`, :data:`FOURIER` or :data:`HERMITE`.
    x : ndarray of shape (n_features,), float32
    ipar : ndarray of int64
        Integer parameters (:func:`embedding_params`).
    fpar : ndarray of float64
        Packed per-feature statistics (:func:`embedding_params`).
    idx : ndarray of shape (>= ipar[IP_MAX_NNZ],), int32
        Receives the column indices (features contiguous, ascending).
    val : ndarray of shape (>= ipar[IP_MAX_NNZ],), float32
        Receives the values.

    Returns
    -------
    int
        Number of entries written. The identity writes the non-zero inputs only.
    """
    return encode_spec_row(kind, ipar[IP_DEGREE], ipar[IP_ZERO_PRESERVING] != 0, x, ipar,
                           fpar, idx, val)


@njit(cache=True, nogil=True, inline="always")
def encode_spec_row(kind, degree, zero_preserving, x, ipar, fpar, idx, val):
    """:func:`encode_row` with a B-spline map's degree and a map's zero-preserving flag
    given apart.

    Inside a kernel they are constants of its :class:`KernelSpec`, and the encoders of the
    other degrees and variant are pruned before they are compiled; the degree is not read
    for the other kinds.
    """
    nf = x.shape[0]
    if kind == LINEAR:
        nnz = 0
        for f in range(nf):
            if x[f] != 0.0:
                idx[nnz] = f
                val[nnz] = x[f]
                nnz += 1
        return nnz
    # the kinds compared one by one: numba prunes a branch on a kernel's constant kind
    # before typing it only where the condition compares the kind itself
    if kind == BSPLINE or kind == WARPED or kind == BSPLINE_VALUES or kind == WARPED_VALUES:
        return bspline_embed_row(kind, degree, zero_preserving, x, ipar, fpar, idx, val)
    a = fpar[:nf]
    b = fpar[nf : 2 * nf]
    k = ipar[IP_N_TERMS]
    weights = fpar[2 * nf : 2 * nf + k]
    if kind == FOURIER:
        if zero_preserving:
            return fourier_encode_row(x, a, b, fpar[2 * nf + k], weights, True, idx, val)
        return fourier_encode_every_feature(x, a, b, fpar[2 * nf + k], weights, idx, val)
    return hermite_encode_row(x, a, b, weights, fpar[2 * nf + k], zero_preserving, idx, val)


@njit(cache=True, nogil=True, inline="always")
def bspline_embed_row(kind, degree, zero_preserving, x, ipar, fpar, idx, val):
    """:func:`encode_spec_row` of a B-spline map (:data:`BSPLINE`, :data:`WARPED`,
    :data:`BSPLINE_VALUES` or :data:`WARPED_VALUES`): the per-feature bases, then the
    pair and value entries, if any."""
    nf = x.shape[0]
    a = fpar[:nf]
    b = fpar[nf : 2 * nf]
    if kind == BSPLINE or kind == BSPLINE_VALUES:
        nnz = bspline_encode_uniform_row(x, a, b, ipar[IP_N_BASES], degree, zero_preserving,
                                         idx, val)
    else:
        nnz = bspline_encode_warped_row(x, a, b, fpar[ipar[IP_WARP_START]:],
                                        ipar[IP_N_BASES], ipar[IP_DEGREE], idx, val)
    # pair grids are uniform with either; no pairs: the slices are empty and the loop does
    # not run
    pairs_end = N_IPAR + 4 * ipar[IP_N_PAIRS]
    nnz = pair_encode_row(x, fpar[3 * nf + 1 : 4 * nf + 1], fpar[2 * nf + 1 : 3 * nf + 1],
                          ipar[N_IPAR:pairs_end], ipar[IP_MAIN_DIMS], idx, val, nnz)
    if kind == BSPLINE or kind == WARPED:
        return nnz
    return append_value_terms(x, ipar, fpar, idx, val, nnz)


@njit(cache=True, nogil=True)
def append_value_terms(x, ipar, fpar, idx, val, nnz):
    """Append a row's value-term entries (:func:`~streamlearn.features.value_terms.\
value_encode_row`) to its encoding of ``nnz`` entries; the new count.

    A function of its own, called rather than inlined: numba copies an inlined function's
    IR into every kernel before it prunes the branches a kernel does not take, and the
    unpacking here, in :func:`encode_spec_row`, cost the first fit of a model without
    value terms 1.1x its time.
    """
    pairs_end = N_IPAR + 4 * ipar[IP_N_PAIRS]
    n_value_terms = ipar[IP_N_VALUE_TERMS]
    values_end = pairs_end + n_value_terms
    start = ipar[IP_VALUE_START]  # the columns' entry, then the table
    # the value columns are the last ones: as many as the table's last bound
    first = ipar[IP_N_DIMS] - ipar[values_end + n_value_terms]
    return value_encode_row(
        x, ipar[pairs_end:values_end], ipar[values_end : values_end + n_value_terms + 1],
        fpar[start + 1 :], fpar[start], first, idx, val, nnz)


class KernelSpec(NamedTuple):
    """The constants a solver kernel is compiled for (:class:`KernelFamily`).

    The per-row helpers branch on each of them; in a kernel they are closure constants, and
    numba prunes the branches not taken before typing them.
    """

    #: :data:`LINEAR`, :data:`BSPLINE`, :data:`FOURIER`, :data:`HERMITE`, :data:`WARPED`,
    #: :data:`BSPLINE_VALUES` or :data:`WARPED_VALUES`.
    kind: int
    #: CSR rows rather than dense ones (:func:`kernel_rows`).
    sparse: bool
    #: B-splines on uniform knots: the degree, 0 for the other kinds.
    degree: int
    #: The zero-preserving variant of a B-spline map on uniform knots, a trigonometric or a
    #: Hermite map; False for the other kinds.
    zero_preserving: bool
    #: Penalty order of ``w_d`` for kernels that update it or take its norms, else 0.
    order: int

    @property
    def name(self) -> str:
        """A suffix naming the kernel, e.g. ``bspline_dense_d1_o1``."""
        form = "csr" if self.sparse else "dense"
        zp = "z" if self.zero_preserving else ""
        return f"{KIND_NAMES[self.kind]}_{form}_d{self.degree}{zp}_o{self.order}"


def kernel_spec(kind: int, ipar: np.ndarray, sparse: bool, uses_order: bool) -> KernelSpec:
    """The :class:`KernelSpec` of the kernel that runs map ``(kind, ipar)`` on rows of the
    given form; ``uses_order``: whether the kernel updates or norms ``w_d``."""
    bspline = kind == BSPLINE or kind == BSPLINE_VALUES
    variants = bspline or kind == FOURIER or kind == HERMITE
    return KernelSpec(int(kind), bool(sparse),
                      int(ipar[IP_DEGREE]) if bspline else 0,
                      bool(ipar[IP_ZERO_PRESERVING]) if variants else False,
                      int(ipar[IP_ORDER]) if uses_order else 0)


class KernelFamily:
    """One compiled solver kernel per :class:`KernelSpec`, each made on its first use.

    The per-row helpers (:func:`fetch_row`, :func:`row_score`, :func:`row_update`, ...)
    branch on the kind of embedding, on the form of the rows, on a B-spline map's degree
    and variant and on the penalty order. Inlined into a kernel for which these are
    constants (closure variables), numba prunes the other branches before typing them: the
    kernel compiles only its own code, and its row loop runs 1.5-6x faster than one that
    keeps every kind's branches. A fit compiles the kernels its data and map need, and
    nothing of the degrees, variants and orders it does not use: one kernel for all
    B-spline degrees took 1.6 s longer to compile than the degree-1 kernel alone.

    The row loop is written in the kernel itself, inside ``compile_for``, and only the thin
    per-row helpers are inlined into it. numba inlines a function by deep-copying its IR
    once per block, so inlining a whole row loop (a large function with the helpers
    already inlined in it) cost more than the rest of compiling the kernel: a B-spline
    PEGASOS kernel took 12 s to compile that way, 9 s with the loop in the kernel. For the
    same reason a kernel of dense identity or B-spline rows calls its kind's own helpers
    (:func:`row_helpers`), which hold no other kind's code to copy.

    Parameters
    ----------
    compile_for : callable
        ``compile_for(spec)`` returns the (not yet compiled) kernel for a
        :class:`KernelSpec`.
    uses_order : bool
        Whether the kernels update or norm ``w_d``; if not, one kernel serves every
        penalty order.

    Notes
    -----
    Each kernel gets a cache file of its own (its name ends in :attr:`KernelSpec.name`).
    numba keeps one index of compiled versions per function name and numbers their files
    in it; the kernels of one factory share a name, and two processes compiling two of
    them at once (test workers, dask workers on one machine) could each take the same
    number and leave one kernel's code under the other's entry.
    """

    def __init__(self, compile_for: Callable[[KernelSpec], Any], uses_order: bool) -> None:
        self._compile_for = compile_for
        #: Whether the kernels update or norm ``w_d`` (their spec holds the order).
        self.uses_order = uses_order
        self._kernels: dict[KernelSpec, Any] = {}
        self._lock = threading.Lock()

    def __call__(self, kind: int, ipar: np.ndarray, sparse: bool) -> Any:
        """The kernel for map ``(kind, ipar)`` on dense rows, or CSR rows when ``sparse``.

        Raises
        ------
        ValueError
            CSR rows for a map that :func:`encode_sparse_row` does not encode: refused
            here, before a kernel is compiled only to refuse them on its first row.
        """
        if sparse and not encodes_sparse_rows(kind, ipar):
            raise ValueError(SPARSE_MAPS_ONLY)
        spec = kernel_spec(kind, ipar, sparse, self.uses_order)
        kernel = self._kernels.get(spec)
        if kernel is None:
            with self._lock:
                kernel = self._kernels.get(spec)
                if kernel is None:
                    kernel = self._compile_for(spec)
                    func = kernel.py_func
                    func.__qualname__ = f"{func.__qualname__}_{spec.name}"
                    kernel.enable_caching()  # under the new name
                    self._kernels[spec] = kernel
        return kernel

    @property
    def kernels(self) -> dict[KernelSpec, Any]:
        """The kernels made so far, by spec."""
        return dict(self._kernels)


#: The CSR arrays a kernel over dense rows is given, and the matrix one over CSR rows is.
NO_CSR = (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
NO_DENSE = np.zeros((0, 0), dtype=np.float32)


def kernel_rows(X: Any) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray], bool]:
    """A chunk's rows as the solver kernels take them: ``(dense, csr, sparse)``.

    Kernels take both forms in every call (:data:`NO_DENSE` or :data:`NO_CSR` for the
    form not given) and are compiled per form (:class:`KernelFamily`), so that one body
    serves both.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows

    Returns
    -------
    dense : ndarray, float32
    csr : (indptr, indices, values)
    sparse : bool
    """
    if isinstance(X, SparseRows):
        indptr, indices, values = X.kernel_args
        return NO_DENSE, (writeable(indptr), writeable(indices), writeable(values)), True
    return writeable(X), NO_CSR, False


@njit(cache=True, nogil=True, forceinline=True)
def rows_in(X, csr, sparse):
    """Number of rows of a kernel's chunk, dense ``X`` or ``csr`` (:func:`kernel_rows`)."""
    return csr[0].shape[0] - 1 if sparse else X.shape[0]


def row_kind(kind: int, sparse: bool) -> int:
    """The ``kind`` the per-row helpers get: :data:`ENCODED` for sparse rows of the identity."""
    return ENCODED if sparse and kind == LINEAR else kind


def reads_entries(kind: int, sparse: bool) -> bool:
    """Whether a kernel of these :class:`KernelSpec` constants takes each row's encoding
    from the chunk itself (:func:`stored_entries`): sparse rows of the identity."""
    return sparse and kind == LINEAR


@njit(cache=True, nogil=True, forceinline=True)
def stored_entries(csr, r):
    """Row ``r`` of CSR rows of the identity as the per-row helpers take its encoding.

    Views of its stored columns and values, and their count: they are the encoding, and
    copying them into a kernel's ``idx`` and ``val`` (what :func:`fetch_row` does for
    the other maps) took as long as the rest of a PEGASOS step. A kernel for which
    :func:`reads_entries` holds binds its ``idx`` and ``val`` to them, with ``zero`` as
    the row (:func:`row_kind` is :data:`ENCODED`).

    Returns
    -------
    idx : ndarray of int32
    val : ndarray of float32
    nnz : int
    """
    lo, hi = csr[0][r], csr[0][r + 1]
    return csr[1][lo:hi], csr[2][lo:hi], hi - lo


@njit(cache=True, nogil=True, inline="always")
def fetch_row(X, csr, r, sparse, kind, degree, zero_preserving, ipar, fpar, idx, val, zero):
    """Row ``r`` of a kernel's chunk and its encoding, for the per-row helpers.

    A dense row is embedded by :func:`embed_row`; a sparse row by :func:`encode_sparse_row`,
    and stands in the helpers as ``zero``, a zero row of ``n_features`` values (its
    length is all they read of it, with :func:`row_kind`'s kind ``hk``).

    ``kind``, ``degree`` and ``zero_preserving`` are the kernel's :class:`KernelSpec`
    constants.

    Returns
    -------
    x : ndarray of shape (n_features,), float32
    nnz : int
    """
    if sparse:
        lo, hi = csr[0][r], csr[0][r + 1]
        return zero, encode_sparse_row(kind, csr[1][lo:hi], csr[2][lo:hi], ipar, fpar, idx, val)
    x = X[r]
    return x, embed_row(kind, degree, zero_preserving, x, ipar, fpar, idx, val)


#: Why a map's kernels refuse CSR rows (:func:`encodes_sparse_rows`).
SPARSE_MAPS_ONLY = ("sparse rows take the identity or zero-preserving B-splines without "
                    "pairs or value terms")


def encodes_sparse_rows(kind: int, ipar: np.ndarray) -> bool:
    """Whether :func:`encode_sparse_row` encodes CSR rows for map ``(kind, ipar)``: the
    identity, and zero-preserving B-splines without pairs or value terms."""
    return kind == LINEAR or (kind == BSPLINE and ipar[IP_ZERO_PRESERVING] != 0
                              and ipar[IP_N_PAIRS] == 0 and ipar[IP_N_VALUE_TERMS] == 0)


@njit(cache=True, nogil=True, forceinline=True)
def encode_sparse_row(kind, cols, vals, ipar, fpar, idx, val):
    """Sparse encoding ``Phi(x)`` of a row given by its stored entries.

    The identity writes the entries themselves; B-splines their zero-preserving encoding
    (:func:`~streamlearn.features.bspline.bspline_encode_sparse_row`). Other maps, and maps
    that do not preserve zeros, spend time on every feature and take dense rows only (the
    estimators refuse them on sparse data before reading it).

    Parameters
    ----------
    kind : int
    cols : ndarray of int32
        The row's stored columns.
    vals : ndarray of float32
        Their values.
    ipar, fpar, idx, val
        As for :func:`encode_row`.

    Returns
    -------
    int
        Number of entries written.
    """
    if kind == LINEAR:
        for e in range(cols.shape[0]):
            idx[e] = cols[e]
            val[e] = vals[e]
        return cols.shape[0]
    if (kind != BSPLINE or ipar[IP_ZERO_PRESERVING] == 0 or ipar[IP_N_PAIRS] != 0
            or ipar[IP_N_VALUE_TERMS] != 0):
        raise ValueError("sparse rows take the identity or zero-preserving B-splines "
                         "without pairs or value terms")
    nf = ipar[IP_N_FEATURES]
    return bspline_encode_sparse_row(cols, vals, fpar[:nf], fpar[nf : 2 * nf],
                                     ipar[IP_N_BASES], ipar[IP_DEGREE], idx, val)


@njit(cache=True, nogil=True, inline="always")
def embed_row(kind, degree, zero_preserving, x, ipar, fpar, idx, val):
    """:func:`encode_spec_row` for a solver loop: the identity is not copied.

    The per-row helpers :func:`row_score`, :func:`row_update`, :func:`row_update_pair` and
    :func:`row_sq_norm_d` take what this writes. For the identity they work on the row
    itself with dense loops, which vectorise, instead of gathering and scattering its
    non-zero entries.

    Two kinds of inlining keep a kernel both fast and quick to compile. These thin helpers
    are inlined by numba (``inline="always"``), which copies their IR into the kernel before
    typing: their branches on ``kind`` and on the form of the rows, constants in a kernel
    (:class:`KernelFamily`), are pruned there, so a kernel types and compiles only its own
    kind's code. The encoders they call (B-splines, pair terms) are compiled once each and
    inlined by LLVM (``forceinline=True``): called as separate functions their loops would
    not vectorise, because the compiler must assume that the arrays they write (``idx``,
    ``val``) may overlap the arrays they read, and copied as IR into every kernel they made
    each kernel cost 20-60 s to compile. The updates of ``w_d`` (``update_d``,
    ``update_d_pair``) stay numba-inlined: inlined by LLVM they ran 40 % slower on B-spline
    rows. The small helpers that do not branch on a kernel's constants (``every_column``,
    ``row_buffers``, ``rows_in``, ``score_d``, ``encode_sparse_row``, ``next_block``, the
    dual step's ``projected_gradient``) are LLVM-inlined too, at the same speed: numba runs
    its front end again for every call it inlines, 30-100 ms each, which took 0.4 s of the
    PEGASOS kernel's compile and 0.3 s of the decision kernel's.

    Parameters
    ----------
    kind, degree, zero_preserving
        As for :func:`encode_spec_row`.
    x : ndarray of shape (n_features,), float32
    ipar, fpar : ndarray
        Packed map (:func:`embedding_params`).
    idx, val : ndarray of int32, float32
        Encoding buffers of size ``>= ipar[IP_MAX_NNZ]``; untouched for the identity.

    Returns
    -------
    int
        The number of entries written (the row's length for the identity).
    """
    if kind == LINEAR:
        return x.shape[0]
    return encode_spec_row(kind, degree, zero_preserving, x, ipar, fpar, idx, val)


def term_major(kind: int, sparse: bool, zero_preserving: bool) -> bool:
    """Whether a solver kernel for these :class:`KernelSpec` constants runs a trigonometric
    or Hermite map in term-major order (:func:`to_term_major`): dense rows, every feature's
    block written (not zero-preserving)."""
    return (kind == FOURIER or kind == HERMITE) and not sparse and not zero_preserving


@njit(cache=True, nogil=True, forceinline=True)
def term_major_column(j, ipar):
    """The map's column of entry ``j`` of a term-major encoding.

    The term-major order is the features' blocks transposed: entry ``c nf + f`` holds
    column ``c`` of feature ``f``'s block (a frequency's cosine or sine, a Hermite
    degree), which is column ``f n_cols + c`` of the map.
    """
    nf = ipar[IP_N_FEATURES]
    c, f = divmod(j, nf)
    return f * ipar[IP_N_COLS] + c


def term_major_columns(ipar: np.ndarray) -> np.ndarray:
    """:func:`term_major_column` of every entry, ``0 .. n_dims - 1`` (numpy)."""
    nf, n_cols = int(ipar[IP_N_FEATURES]), int(ipar[IP_N_COLS])
    j = np.arange(nf * n_cols)
    return (j % nf) * n_cols + j // nf


@njit(cache=True, nogil=True)
def to_term_major(W, ipar):
    """A copy of models ``W`` (``(m, n_dims + 1)``, bias last) with the columns of a
    trigonometric or Hermite map in term-major order.

    A kernel that works on this copy scores and updates rows encoded by
    :func:`embed_term_major` with dense loops (:func:`every_column`), and puts the columns
    back with :func:`from_term_major` at its end: ``O(m n_dims)`` per chunk, against a
    store per value per row in the map's own order.
    """
    out = np.empty_like(W)
    dim = ipar[IP_N_DIMS]
    for i in range(W.shape[0]):
        for j in range(dim):
            out[i, j] = W[i, term_major_column(j, ipar)]
        out[i, dim] = W[i, dim]
    return out


@njit(cache=True, nogil=True)
def from_term_major(W, permuted, ipar):
    """Write models ``permuted`` (from :func:`to_term_major`) back into ``W``, in the map's
    column order."""
    dim = ipar[IP_N_DIMS]
    for i in range(W.shape[0]):
        for j in range(dim):
            W[i, term_major_column(j, ipar)] = permuted[i, j]
        W[i, dim] = permuted[i, dim]


@njit(cache=True, nogil=True, inline="always")
def term_major_buffers(kind, ipar, fpar, idx):
    """Work space of :func:`embed_term_major` for a kernel of map ``kind`` (a constant of
    the kernel: numba-inlined, the other kind's arrays are pruned); fills ``idx`` with the
    positions ``0 .. n_dims - 1`` once, so that the per-row helpers, given the encoder's
    values, take their dense paths (:func:`every_column`) on every row. A trigonometric
    map's ranges are read from ``fpar`` into centres and scales
    (:func:`~streamlearn.features.fourier.fourier_scaling`), once for the kernel's rows."""
    for j in range(ipar[IP_N_DIMS]):
        idx[j] = j
    nf = ipar[IP_N_FEATURES]
    if kind == FOURIER:  # the sweeps' state in float32, four arrays; centres and scales
        centre, scale = fourier_scaling(fpar[:nf], fpar[nf : 2 * nf])
        return (np.empty(nf, dtype=np.float32), np.empty(nf, dtype=np.float32),
                np.empty(nf, dtype=np.float32), np.empty(nf, dtype=np.float32), centre, scale)
    return (np.empty(nf), np.empty(nf), np.empty(nf))  # Hermite: z and two degrees


@njit(cache=True, nogil=True, inline="always")
def embed_term_major(kind, x, ipar, fpar, work, val):
    """A dense row's values in term-major order
    (:func:`~streamlearn.features.fourier.fourier_encode_frequency_major`,
    :func:`~streamlearn.features.hermite.hermite_encode_degree_major`), for a kernel whose
    models are :func:`to_term_major` copies and whose ``idx`` and ``work`` came from
    :func:`term_major_buffers`; ``kind`` is the kernel's constant."""
    nf = x.shape[0]
    k = ipar[IP_N_TERMS]
    if kind == FOURIER:
        return fourier_encode_frequency_major(x, work[4], work[5], fpar[2 * nf + k],
                                              fpar[2 * nf : 2 * nf + k], work[0], work[1],
                                              work[2], work[3], val)
    return hermite_encode_degree_major(x, fpar[:nf], fpar[nf : 2 * nf],
                                       fpar[2 * nf : 2 * nf + k], fpar[2 * nf + k],
                                       work[0], work[1], work[2], val)


@njit(cache=True, nogil=True, forceinline=True)
def every_column(kind, idx, nnz):
    """Whether an encoding of a trigonometric or Hermite row writes columns ``0 .. nnz - 1``.

    Their encodings without zero-preserving hold every column of every feature, in order
    (indices strictly increase from 0, so the last one tells). The per-row helpers then
    sweep ``val`` and ``w_d[:nnz]`` side by side, which vectorises, instead of gathering
    and scattering through ``idx``. Their penalty is in the columns' weights (order 0),
    so ``w_d`` is ``w``. Always False for the other kinds (a constant in a kernel).
    """
    return (kind == FOURIER or kind == HERMITE) and nnz > 0 and idx[nnz - 1] == nnz - 1


@njit(cache=True, nogil=True, forceinline=True, fastmath={"reassoc", "contract"})
def dense_score(w_d, val, nnz):
    """``sum_k w_d[k] val[k]`` over ``k < nnz``; the flags let the sum run in SIMD lanes."""
    s = 0.0
    for k in range(nnz):
        s += w_d[k] * val[k]
    return s


# The two below compute w_d[k] + eta * v as row_update does, a product then a sum ("reassoc"
# without "contract"), so that a step taken with them or with row_update moves the model by
# the same float64 values; only the score's sum is reordered.
@njit(cache=True, nogil=True, forceinline=True, fastmath={"reassoc"})
def dense_step_score(w_d, step_val, eta, val, nnz):
    """``w_d[:nnz] += eta step_val[:nnz]``, then ``w_d[:nnz] . val[:nnz]``, in one sweep.

    A term-major kernel (:func:`every_column` rows) defers a row's step to the next row's
    score: the model is then read and written once for both, where a step and a score
    each swept it.

    Parameters
    ----------
    w_d : ndarray of shape (>= nnz,), float64
        Model, updated in place.
    step_val : ndarray of shape (>= nnz,), float32
        The encoding of the row whose step is taken.
    eta : float
        Its step size.
    val : ndarray of shape (>= nnz,), float32
        The encoding of the row to score.
    nnz : int

    Returns
    -------
    float
        The score of ``val`` under the stepped model (without the bias).
    """
    s = 0.0
    for k in range(nnz):
        wk = w_d[k] + eta * np.float64(step_val[k])
        w_d[k] = wk
        s += wk * val[k]
    return s


@njit(cache=True, nogil=True, forceinline=True, fastmath={"reassoc"})
def dense_step_pair_score(w_d, avg, step_val, eta, eta_avg, val, nnz):
    """:func:`dense_step_score` that also steps ``avg`` by ``eta_avg``, as
    :func:`row_update_pair` does.

    Parameters
    ----------
    w_d, avg : ndarray of shape (>= nnz,), float64
        Models, updated in place.
    step_val : ndarray of shape (>= nnz,), float32
    eta, eta_avg : float
    val : ndarray of shape (>= nnz,), float32
    nnz : int

    Returns
    -------
    float
        The score of ``val`` under the stepped ``w_d`` (without the bias).
    """
    s = 0.0
    for k in range(nnz):
        v = np.float64(step_val[k])
        wk = w_d[k] + eta * v
        w_d[k] = wk
        avg[k] += eta_avg * v
        s += wk * val[k]
    return s


@njit(cache=True, nogil=True, forceinline=True)
def row_buffers(ipar, sparse):
    """Work space of a kernel's per-row helpers: ``idx`` and ``val`` receive a row's
    encoding, ``zero`` stands for a sparse row in them (:func:`fetch_row`)."""
    idx = np.empty(ipar[IP_MAX_NNZ], dtype=np.int32)
    val = np.empty(ipar[IP_MAX_NNZ], dtype=np.float32)
    zero = np.zeros(ipar[IP_N_FEATURES] if sparse else 0, dtype=np.float32)
    return idx, val, zero


@njit(cache=True, nogil=True, inline="always")
def row_score(kind, w_d, x, idx, val, nnz):
    """``w . Psi_d(x)`` of a row embedded by :func:`embed_row` (without the bias).

    Parameters
    ----------
    kind : int
    w_d : ndarray of shape (>= ipar[IP_N_DIMS],), float64
        Model in ``w_d`` form.
    x : ndarray of shape (n_features,), float32
        The row.
    idx, val : ndarray
        Its encoding.
    nnz : int
        What :func:`embed_row` returned.

    Returns
    -------
    float
    """
    if kind == LINEAR:
        return identity_row_score(kind, w_d, x, idx, val, nnz)
    if every_column(kind, idx, nnz):
        return every_column_row_score(kind, w_d, x, idx, val, nnz)
    return encoded_row_score(kind, w_d, x, idx, val, nnz)


@njit(cache=True, nogil=True, inline="always")
def row_update(kind, w_d, x, idx, val, nnz, n_cols, order, eta):
    """``w <- w + eta Psi_d(x)`` of a row embedded by :func:`embed_row` (without the bias).

    Parameters
    ----------
    kind : int
    w_d : ndarray of shape (>= ipar[IP_N_DIMS],), float64
        Model in ``w_d`` form, updated in place.
    x, idx, val, nnz
        As for :func:`row_score`.
    n_cols, order : int
        ``ipar[IP_N_COLS]``, ``ipar[IP_ORDER]``.
    eta : float
        Step size (any sign).
    """
    if kind == LINEAR:
        identity_row_update(kind, w_d, x, idx, val, nnz, n_cols, order, eta)
    elif every_column(kind, idx, nnz):
        every_column_row_update(kind, w_d, x, idx, val, nnz, n_cols, order, eta)
    else:
        encoded_row_update(kind, w_d, x, idx, val, nnz, n_cols, order, eta)


@njit(cache=True, nogil=True, inline="always")
def row_update_pair(kind, w_d, avg, x, idx, val, nnz, n_cols, order, eta, eta_avg):
    """:func:`row_update` of two models at once: ``w_d`` by ``eta``, ``avg`` by ``eta_avg``.

    Parameters
    ----------
    kind : int
    w_d, avg : ndarray of shape (>= ipar[IP_N_DIMS],), float64
        Models in ``w_d`` form, updated in place.
    x, idx, val, nnz, n_cols, order
        As for :func:`row_update`.
    eta, eta_avg : float
        Step sizes of ``w_d`` and ``avg``.
    """
    if kind == LINEAR:
        identity_row_update_pair(kind, w_d, avg, x, idx, val, nnz, n_cols, order, eta, eta_avg)
    elif every_column(kind, idx, nnz):
        every_column_row_update_pair(kind, w_d, avg, x, idx, val, nnz, n_cols, order, eta,
                                     eta_avg)
    else:
        encoded_row_update_pair(kind, w_d, avg, x, idx, val, nnz, n_cols, order, eta, eta_avg)


@njit(cache=True, nogil=True, inline="always")
def row_sq_norm_d(kind, x, idx, val, nnz, n_cols, order, scratch):
    """``||Psi_d(x)||^2`` of a row embedded by :func:`embed_row`.

    Parameters
    ----------
    kind : int
    x, idx, val, nnz
        As for :func:`row_score`.
    n_cols, order : int
        ``ipar[IP_N_COLS]``, ``ipar[IP_ORDER]``.
    scratch : ndarray of shape (n_cols,), float64
        Work space.

    Returns
    -------
    float
    """
    if kind == LINEAR:
        return identity_row_sq_norm_d(kind, x, idx, val, nnz, n_cols, order, scratch)
    return encoded_row_sq_norm_d(kind, x, idx, val, nnz, n_cols, order, scratch)


# The branches of the generic helpers above, one kind of rows each: the generic helpers
# call them, and a kernel whose rows are all of one kind calls its kind's directly
# (row_helpers). Each takes the generic helper's arguments.


@njit(cache=True, nogil=True, inline="always")
def identity_fetch_row(X, csr, r, sparse, kind, degree, zero_preserving, ipar, fpar, idx, val,
                       zero):
    """:func:`fetch_row` of a dense row of the identity: the row and its length."""
    x = X[r]
    return x, x.shape[0]


@njit(cache=True, nogil=True, inline="always")
def identity_row_score(kind, w_d, x, idx, val, nnz):
    """:func:`row_score` of a dense row of the identity."""
    return dense_score(w_d, x, x.shape[0])


@njit(cache=True, nogil=True, inline="always")
def identity_row_update(kind, w_d, x, idx, val, nnz, n_cols, order, eta):
    """:func:`row_update` of a dense row of the identity."""
    for f in range(x.shape[0]):
        w_d[f] += eta * x[f]


@njit(cache=True, nogil=True, inline="always")
def identity_row_update_pair(kind, w_d, avg, x, idx, val, nnz, n_cols, order, eta, eta_avg):
    """:func:`row_update_pair` of a dense row of the identity."""
    for f in range(x.shape[0]):
        v = np.float64(x[f])
        w_d[f] += eta * v
        avg[f] += eta_avg * v


@njit(cache=True, nogil=True, inline="always")
def identity_row_sq_norm_d(kind, x, idx, val, nnz, n_cols, order, scratch):
    """:func:`row_sq_norm_d` of a dense row of the identity."""
    s = 0.0
    for f in range(x.shape[0]):
        v = np.float64(x[f])
        s += v * v
    return s


@njit(cache=True, nogil=True, inline="always")
def bspline_fetch_row(X, csr, r, sparse, kind, degree, zero_preserving, ipar, fpar, idx, val,
                      zero):
    """:func:`fetch_row` of a dense row of a B-spline map (:func:`bspline_embed_row`)."""
    x = X[r]
    return x, bspline_embed_row(kind, degree, zero_preserving, x, ipar, fpar, idx, val)


@njit(cache=True, nogil=True, inline="always")
def encoded_row_score(kind, w_d, x, idx, val, nnz):
    """:func:`row_score` of a row given by its encoding (``idx``, ``val``)."""
    return score_d(w_d, idx, val, nnz)


@njit(cache=True, nogil=True, inline="always")
def every_column_row_score(kind, w_d, x, idx, val, nnz):
    """:func:`row_score` of a row whose encoding holds every column in order
    (:func:`every_column`)."""
    return dense_score(w_d, val, nnz)


@njit(cache=True, nogil=True, inline="always")
def every_column_row_update(kind, w_d, x, idx, val, nnz, n_cols, order, eta):
    """:func:`row_update` of a row whose encoding holds every column in order."""
    for k in range(nnz):
        w_d[k] += eta * val[k]


@njit(cache=True, nogil=True, inline="always")
def every_column_row_update_pair(kind, w_d, avg, x, idx, val, nnz, n_cols, order, eta,
                                 eta_avg):
    """:func:`row_update_pair` of a row whose encoding holds every column in order."""
    for k in range(nnz):
        v = np.float64(val[k])
        w_d[k] += eta * v
        avg[k] += eta_avg * v


@njit(cache=True, nogil=True, inline="always")
def every_column_row_sq_norm_d(kind, x, idx, val, nnz, n_cols, order, scratch):
    """:func:`row_sq_norm_d` of a row whose encoding holds every column in order (its
    penalty is in the columns' weights, order 0: the squares of its values)."""
    s = 0.0
    for k in range(nnz):
        v = np.float64(val[k])
        s += v * v
    return s


@njit(cache=True, nogil=True, inline="always")
def encoded_row_update(kind, w_d, x, idx, val, nnz, n_cols, order, eta):
    """:func:`row_update` of a row given by its encoding (``idx``, ``val``): for a
    B-spline map its pair and value entries, which come last and are in ``w`` form, then
    its bases (``update_d``); for the other kinds ``update_d`` alone."""
    k = nnz
    if kind == BSPLINE or kind == WARPED or kind == BSPLINE_VALUES or kind == WARPED_VALUES:
        main = x.shape[0] * n_cols
        while k > 0 and idx[k - 1] >= main:
            k -= 1
            w_d[idx[k]] += eta * val[k]
    update_d(w_d, idx, val, k, n_cols, order, eta)


@njit(cache=True, nogil=True, inline="always")
def encoded_row_update_pair(kind, w_d, avg, x, idx, val, nnz, n_cols, order, eta, eta_avg):
    """:func:`row_update_pair` of a row given by its encoding (as
    :func:`encoded_row_update`)."""
    k = nnz
    if kind == BSPLINE or kind == WARPED or kind == BSPLINE_VALUES or kind == WARPED_VALUES:
        main = x.shape[0] * n_cols
        while k > 0 and idx[k - 1] >= main:
            k -= 1
            v = np.float64(val[k])
            w_d[idx[k]] += eta * v
            avg[idx[k]] += eta_avg * v
    update_d_pair(w_d, avg, idx, val, k, n_cols, order, eta, eta_avg)


@njit(cache=True, nogil=True, inline="always")
def encoded_row_sq_norm_d(kind, x, idx, val, nnz, n_cols, order, scratch):
    """:func:`row_sq_norm_d` of a row given by its encoding (as
    :func:`encoded_row_update`)."""
    k = nnz
    s = 0.0
    if kind == BSPLINE or kind == WARPED or kind == BSPLINE_VALUES or kind == WARPED_VALUES:
        main = x.shape[0] * n_cols
        while k > 0 and idx[k - 1] >= main:
            k -= 1
            v = np.float64(val[k])
            s += v * v
    return s + sq_norm_d(idx, val, k, n_cols, order, scratch)


#: The per-row helpers of dense rows of the identity, by the generic helpers' names.
IDENTITY_HELPERS = {"fetch_row": identity_fetch_row, "row_score": identity_row_score,
                    "row_update": identity_row_update,
                    "row_update_pair": identity_row_update_pair,
                    "row_sq_norm_d": identity_row_sq_norm_d}
#: The per-row helpers of dense rows of a B-spline map, by the generic helpers' names.
BSPLINE_HELPERS = {"fetch_row": bspline_fetch_row, "row_score": encoded_row_score,
                   "row_update": encoded_row_update, "row_update_pair": encoded_row_update_pair,
                   "row_sq_norm_d": encoded_row_sq_norm_d}
#: The per-row helpers of dense rows of a trigonometric or Hermite map that is not
#: zero-preserving, whose encodings hold every column in order (:func:`every_column`).
EVERY_COLUMN_HELPERS = {"fetch_row": fetch_row, "row_score": every_column_row_score,
                        "row_update": every_column_row_update,
                        "row_update_pair": every_column_row_update_pair,
                        "row_sq_norm_d": every_column_row_sq_norm_d}


def row_helpers(kind: int, sparse: bool,
                zero_preserving: bool) -> Callable[[FunctionType], FunctionType]:
    """Decorator binding a kernel's per-row helpers to those of its kind of rows.

    A kernel calls the generic helpers (:func:`fetch_row`, :func:`row_score`,
    :func:`row_update`, :func:`row_update_pair`, :func:`row_sq_norm_d`), which branch on
    the kind to one of the helpers below them; for dense rows of the identity, of a
    B-spline map, and of a trigonometric or Hermite map that is not zero-preserving, this
    gives the kernel the helpers of its kind of rows under the generic names (CSR rows
    and zero-preserving trigonometric and Hermite maps keep the generic ones). Applied
    under ``njit``, to the kernel's Python function, whose global names it rebinds in a
    copy of its module's namespace.

    The compiled code is the same: numba inlines a generic helper into the kernel and
    prunes the branches of the other kinds, constants there. But it copies the helper's
    IR, with every helper inlined into it, before it prunes, so the generic helpers cost
    the B-spline PEGASOS kernel about a tenth of its compile time, the identity's about
    half, for code the kernel then threw away. Globals rather than closure variables: numba
    keys a kernel's on-disk cache on its closure's contents, and a compiled function's
    pickle differs from process to process, so no process would find another's kernel.

    Parameters
    ----------
    kind : int
        The kernel's :class:`KernelSpec` kind.
    sparse : bool
        Whether it takes CSR rows.
    zero_preserving : bool
        Its :class:`KernelSpec` flag.
    """
    helpers: dict[str, Any] = {}
    if not sparse and kind == LINEAR:
        helpers = IDENTITY_HELPERS
    elif not sparse and kind in (BSPLINE, WARPED, BSPLINE_VALUES, WARPED_VALUES):
        helpers = BSPLINE_HELPERS
    elif not sparse and kind in (FOURIER, HERMITE) and not zero_preserving:
        helpers = EVERY_COLUMN_HELPERS

    def bind(kernel: FunctionType) -> FunctionType:
        if not helpers:
            return kernel
        bound = FunctionType(kernel.__code__, {**kernel.__globals__, **helpers},
                             kernel.__name__, kernel.__defaults__, kernel.__closure__)
        bound.__qualname__ = kernel.__qualname__
        bound.__module__ = kernel.__module__
        return bound

    return bind


@njit(cache=True, nogil=True)
def sq_norm_d(idx, val, nnz, n_cols, order, scratch):
    """``||Psi_d(x)||^2 = ||D_d^-T Phi(x)||^2`` of an encoded row.

    Parameters
    ----------
    idx : ndarray of int32
        Column indices of the encoding (features contiguous, ascending).
    val : ndarray of float32
        Values of the encoding.
    nnz : int
        Number of valid entries.
    n_cols : int
        Columns per input feature.
    order : int
        Penalty order ``d``; for 0 the entries are squared and summed.
    scratch : ndarray of shape (n_cols,), float64
        Work space, overwritten.

    Returns
    -------
    float
        The squared norm, accumulated in float64.
    """
    s = 0.0
    if order == 0:
        for k in range(nnz):
            v = np.float64(val[k])
            s += v * v
        return s
    k = 0
    while k < nnz:
        f = idx[k] // n_cols
        base = f * n_cols
        for i in range(n_cols):
            scratch[i] = 0.0
        top = 0
        while k < nnz and idx[k] // n_cols == f:
            j = idx[k] - base
            scratch[j] += val[k]
            if j + 1 > top:
                top = j + 1
            k += 1
        # D^-T is upper triangular: the block of Psi_d is zero above ``top``; Step A on
        # scratch[:top], by the sweeps step_a calls (one function fewer to compile)
        _suffix_sums(scratch, top, order)
        for i in range(top):
            s += scratch[i] * scratch[i]
    return s


@njit(cache=True, nogil=True)
def row_sq_norm(kind, x, ipar, fpar, idx, val, scratch):
    """``||Psi_d(x)||^2`` of one row, the embedding part of the dual CD diagonal ``Q_ii``.

    Parameters
    ----------
    kind : int
    x : ndarray of shape (n_features,), float32
    ipar, fpar : ndarray
        Packed map (:func:`embedding_params`).
    idx, val : ndarray of int32, float32
        Encoding buffers of size ``>= ipar[IP_MAX_NNZ]``.
    scratch : ndarray of shape (ipar[IP_N_COLS],), float64
        Work space.

    Returns
    -------
    float
    """
    nnz = encode_row(kind, x, ipar, fpar, idx, val)
    return row_sq_norm_d(kind, x, idx, val, nnz, ipar[IP_N_COLS], ipar[IP_ORDER], scratch)


def _sq_norm_sum_kernel(spec: KernelSpec) -> Callable[..., float]:
    # embedded_sq_norm's kernel for one KernelSpec
    fixed_kind, sparse, degree, zero_preserving, order = spec
    hk = row_kind(fixed_kind, sparse)

    entries = reads_entries(fixed_kind, sparse)

    @njit(cache=True, nogil=True)
    @row_helpers(fixed_kind, sparse, zero_preserving)
    def kernel(X, csr, kind, ipar, fpar):
        n = rows_in(X, csr, sparse)
        idx, val, zero = row_buffers(ipar, sparse)
        scratch = np.empty(ipar[IP_N_COLS], dtype=np.float64)
        total = 0.0
        for r in range(n):
            if entries:
                x = zero
                idx, val, nnz = stored_entries(csr, r)
            else:
                x, nnz = fetch_row(X, csr, r, sparse, fixed_kind, degree, zero_preserving,
                                   ipar, fpar, idx, val, zero)
            total += row_sq_norm_d(hk, x, idx, val, nnz, ipar[IP_N_COLS], order, scratch)
        return total

    return kernel


_SQ_NORM_SUM = KernelFamily(_sq_norm_sum_kernel, uses_order=True)


def embedded_sq_norm(X: Any, kind: int, ipar: np.ndarray, fpar: np.ndarray) -> float:
    """``sum_i ||Psi_d(x_i)||^2``: the squared norms of a chunk's embedded rows, added.

    Compiled as the solvers' kernels are (:class:`KernelFamily`). PEGASOS's step offset uses it
    for sparse rows; for dense rows it sums the map's materialised transform instead
    (:func:`~streamlearn.solvers.additive.driver.materialised_sq_norm`), which a dense fit
    compiles anyway, so that a first fit compiles one kernel less.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
        Finite rows; sparse ones only for a map that takes them
        (:attr:`Embedding.takes_sparse_rows`).
    kind : int
    ipar, fpar : ndarray
        Packed map (:func:`embedding_params`).

    Returns
    -------
    float
    """
    dense, csr, sparse = kernel_rows(X)
    return float(_SQ_NORM_SUM(kind, ipar, sparse)(dense, csr, kind, ipar, fpar))


def _decision_ovr_kernel(spec: KernelSpec) -> Callable[..., np.ndarray]:
    # decision_ovr_chunk's kernel for one KernelSpec
    fixed_kind, sparse, degree, zero_preserving, _ = spec
    hk = row_kind(fixed_kind, sparse)
    permuted = term_major(fixed_kind, sparse, zero_preserving)
    entries = reads_entries(fixed_kind, sparse)

    @njit(cache=True, nogil=True)
    @row_helpers(fixed_kind, sparse, zero_preserving)
    def kernel(X, csr, W, bias_scale, kind, ipar, fpar):
        n = rows_in(X, csr, sparse)
        m = W.shape[0]
        dim = ipar[IP_N_DIMS]
        out = np.empty((n, m), dtype=np.float64)
        idx, val, zero = row_buffers(ipar, sparse)
        if permuted:  # a trigonometric or Hermite map's rows against a term-major copy
            Wf = to_term_major(W, ipar)
            work = term_major_buffers(fixed_kind, ipar, fpar, idx)
            for r in range(n):
                x = X[r]
                nnz = embed_term_major(fixed_kind, x, ipar, fpar, work, val)
                for j in range(m):
                    wj = Wf[j]
                    out[r, j] = row_score(hk, wj, x, idx, val, nnz) + wj[dim] * bias_scale
            return out
        for r in range(n):
            if entries:
                x = zero
                idx, val, nnz = stored_entries(csr, r)
            else:
                x, nnz = fetch_row(X, csr, r, sparse, fixed_kind, degree, zero_preserving,
                                   ipar, fpar, idx, val, zero)
            for j in range(m):
                wj = W[j]
                out[r, j] = row_score(hk, wj, x, idx, val, nnz) + wj[dim] * bias_scale
        return out

    return kernel


#: The compiled kernels of :func:`decision_ovr_chunk`, one per :class:`KernelSpec`.
DECISION_OVR = KernelFamily(_decision_ovr_kernel, uses_order=False)


def decision_ovr_chunk(X, W, bias_scale, kind, ipar, fpar):
    """Scores ``w_j . Psi_d(x) + b_j`` of every model on a chunk's rows, each row embedded once.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32, or SparseRows
    W : ndarray of shape (m, ipar[IP_N_DIMS] + 1), float64
        Models in ``w_d`` form, bias weight last (``b_j = W[j, -1] * bias_scale``).
    bias_scale : float
    kind : int
    ipar, fpar : ndarray
        Packed map.

    Returns
    -------
    ndarray of shape (n_rows, m), float64
    """
    dense, csr, sparse = kernel_rows(X)
    return DECISION_OVR(kind, ipar, sparse)(dense, csr, writeable(W), bias_scale, kind,
                                       writeable(ipar), writeable(fpar))


def decision_chunk(X, w_d, bias, kind, ipar, fpar):
    """Scores ``w . Psi_d(x) + bias`` of a chunk's rows, embedded on the fly.

    :func:`decision_ovr_chunk` with a single model.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    w_d : ndarray of shape (>= ipar[IP_N_DIMS],), float64
        Model in ``w_d`` form; entries past ``ipar[IP_N_DIMS]`` are ignored.
    bias : float
        Added to every score (for a regularised bias feature: its weight times its value).
    kind : int
    ipar, fpar : ndarray
        Packed map (:func:`embedding_params`).

    Returns
    -------
    ndarray of shape (n_rows,), float32
    """
    dim = int(ipar[IP_N_DIMS])
    W = np.empty((1, dim + 1))
    W[0, :dim] = w_d[:dim]
    W[0, dim] = bias
    return decision_ovr_chunk(X, W, 1.0, kind, ipar, fpar)[:, 0].astype(np.float32)


def term_blocks(ipar: np.ndarray) -> list[np.ndarray]:
    """The columns of each additive term: every feature's block (with the columns of its
    value term, if it has one), then every pair's."""
    n_features, n_cols = int(ipar[IP_N_FEATURES]), int(ipar[IP_N_COLS])
    blocks = [np.arange(f * n_cols, (f + 1) * n_cols) for f in range(n_features)]
    n_pairs, n_value_terms = int(ipar[IP_N_PAIRS]), int(ipar[IP_N_VALUE_TERMS])
    pairs_end = N_IPAR + 4 * n_pairs
    spec = ipar[N_IPAR:pairs_end].reshape(n_pairs, 4)
    starts = int(ipar[IP_MAIN_DIMS]) + np.concatenate([[0], np.cumsum(spec[:, 2] * spec[:, 3])])
    if n_value_terms:
        features = ipar[pairs_end : pairs_end + n_value_terms]
        bounds = ipar[pairs_end + n_value_terms : pairs_end + 2 * n_value_terms + 1]
        first = starts[-1]
        for t, f in enumerate(features):
            blocks[f] = np.concatenate([blocks[f], np.arange(first + bounds[t],
                                                             first + bounds[t + 1])])
    blocks += [np.arange(starts[p], starts[p + 1]) for p in range(n_pairs)]
    return blocks


def feature_terms(X, W, kind, ipar, fpar):
    """Each term's share ``w_j . Psi_d(x)`` restricted to the term's block of columns.

    Every map embeds a feature into its own block of ``ipar[IP_N_COLS]`` columns (and ``w_d``
    is transformed block by block), and each pair term into a block of its own after them;
    a feature's value term, if any, counts with the feature (:func:`term_blocks`), so the
    score of model ``j`` is ``sum_t g_jt(x) + b_j``: this
    evaluates each block alone, with the other blocks and the bias set to zero.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    W : ndarray of shape (m, ipar[IP_N_DIMS] + 1), float64
        Models in ``w_d`` form, bias weight last (ignored).
    kind : int
    ipar, fpar : ndarray
        Packed map (:func:`embedding_params`).

    Returns
    -------
    ndarray of shape (n_rows, n_features + n_pairs, m), float64
        The features' terms, then the pairs'.
    """
    X = np.ascontiguousarray(X, dtype=np.float32)
    blocks = term_blocks(ipar)
    out = np.empty((X.shape[0], len(blocks), W.shape[0]))
    block = np.zeros_like(W)
    for t, cols in enumerate(blocks):
        block[:, cols] = W[:, cols]
        out[:, t, :] = decision_ovr_chunk(X, block, 0.0, kind, ipar, fpar)
        block[:, cols] = 0.0
    return out


def weights_from_w_d(w_d: np.ndarray, ipar: np.ndarray) -> np.ndarray:
    """The model ``w = D_d w_d`` of the materialised embedding ``Psi_d``.

    ``order`` first differences within each feature's block of columns (numpy: the model
    is converted once per fit or call, and a compiled loop cost a first fit 0.13 s of
    compiling).

    Parameters
    ----------
    w_d : ndarray of shape (>= ipar[IP_N_DIMS],), float64
        Entries past the per-feature blocks (pair columns, a bias) are copied unchanged.
    ipar : ndarray of int64

    Returns
    -------
    ndarray of the shape of ``w_d``, float64
    """
    w = np.array(w_d, dtype=np.float64)
    n_cols, n_features = int(ipar[IP_N_COLS]), int(ipar[IP_N_FEATURES])
    blocks = w[:n_cols * n_features].reshape(n_features, n_cols)
    for _ in range(int(ipar[IP_ORDER])):
        blocks[:, 1:] = np.diff(blocks, axis=1)
    return w


@njit(cache=True, nogil=True)
def model_sq_norm(w_d, ipar):
    """``||w||^2 = ||D_d w_d||^2`` over the first ``ipar[IP_N_DIMS]`` entries of ``w_d``
    (pair columns, where ``w_d = w``, included).

    Parameters
    ----------
    w_d : ndarray of float64
    ipar : ndarray of int64

    Returns
    -------
    float
    """
    return model_dot(w_d, w_d, ipar)


@njit(cache=True, nogil=True)
def model_dot(a_d, b_d, ipar):
    """``a . b = (D_d a_d) . (D_d b_d)``: the inner product of two models in ``w_d`` form,
    over the first ``ipar[IP_N_DIMS]`` entries (:func:`model_sq_norm` is ``a = b``).

    Parameters
    ----------
    a_d, b_d : ndarray of float64
    ipar : ndarray of int64

    Returns
    -------
    float
    """
    n_cols = ipar[IP_N_COLS]
    order = ipar[IP_ORDER]
    s = 0.0
    for f in range(ipar[IP_N_FEATURES]):
        base = f * n_cols
        for i in range(n_cols):
            u = a_d[base + i]
            v = b_d[base + i]
            if order >= 1 and i >= 1:
                u -= a_d[base + i - 1]
                v -= b_d[base + i - 1]
            if order == 2 and i >= 1:
                u -= a_d[base + i - 1] - (a_d[base + i - 2] if i >= 2 else 0.0)
                v -= b_d[base + i - 1] - (b_d[base + i - 2] if i >= 2 else 0.0)
            s += u * v
    for i in range(ipar[IP_MAIN_DIMS], ipar[IP_N_DIMS]):  # pair columns: w_d = w
        s += a_d[i] * b_d[i]
    return s
