"""Trigonometric embedding penalising the d-th derivative (paper 000, Sec. 4, eq. 5, Table 1).

Each feature's range ``[lo, hi]`` is mapped to the middle half of the basis's period,
``t = h (2 (x - lo) / (hi - lo) - 1)`` with ``h = 1/2`` (:data:`HALF_WIDTH`), clamped to
``[-h, h]``. For ``n_terms = K`` frequencies the feature contributes ``2K`` columns, in the
order

    ``cos(pi t) / 1^d, sin(pi t) / 1^d, cos(2 pi t) / 2^d, sin(2 pi t) / 2^d, ...``

(Table 1: ``Psi^d_k(x) = {cos(k pi x) / k^d, sin(k pi x) / k^d}``). With these weights the
d-th derivatives of the columns are orthogonal on the period ``[-1, 1]`` with equal squared
norms ``pi^(2d)``, so ``||w||^2`` is, up to that constant, the penalty ``int f^(d)(t)^2 dt``
over the whole period on ``f = w . Psi``. The constant function is not a column: its
derivative vanishes, so it is left to the model's bias.

The paper normalises the data to the whole period ``[-1, 1]``; its functions are periodic,
so they take the same value at both ends of the range: a 0/1 feature (its two values at the
two ends) then embeds to one point and is ignored, and a monotone effect has to turn back
before ``hi``. On the middle half the functions need not meet: ``sin(pi t)`` rises from
``lo`` to ``hi``, and a curve whose ends differ pays in the penalty for the way back over
the half of the period no row reaches, where nothing pulls it and it takes the smoothest
return. Maps fitted before this scaling used ``h = 1`` (the paper's); they keep it
(``half_width_`` is absent from their saved state and reads 1), so their models predict as
they did.

Zero-preserving variant (Sec. 5): the columns are ``Psi(t(x)) - Psi(t(0))``. These span the
functions of the expansion (constant included) that vanish at ``x = 0``; their derivatives,
hence the penalty, are unchanged. Encoders skip features with ``x == 0``.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np
from numba import njit

from streamlearn.features.feature_map import FeatureMap, as_stat, nonempty_range

ORDERS = (1, 2)
#: Half the width of the interval ``t`` spans, in units of the basis's period ``[-1, 1]``
#: (of width 2): a feature's range is its middle half. Maps saved before it had 1.
HALF_WIDTH = 0.5
#: The scaling of maps saved before :data:`HALF_WIDTH`: the range was the whole period.
WHOLE_PERIOD = 1.0


def fourier_weights(n_terms: int, order: int) -> np.ndarray:
    """Table 1 weights ``1 / k^d`` for frequencies ``k = 1 .. n_terms``.

    Parameters
    ----------
    n_terms : int
        Number of frequencies ``K``.
    order : {1, 2}
        Penalised derivative ``d``.

    Returns
    -------
    ndarray of shape (n_terms,), float64
    """
    if order not in ORDERS:
        raise ValueError(f"penalty order must be one of {ORDERS}, got {order!r}")
    k = np.arange(1, int(n_terms) + 1, dtype=np.float64)
    return 1.0 / k**order


@njit(cache=True, nogil=True)
def fourier_scaling(lo, hi):
    """Each feature's centre and scale: ``t = (x - centre) scale`` runs from -1 at ``lo`` to
    1 at ``hi``.

    Computed once for a chunk of rows, they spare each row a division per feature
    (:func:`fourier_encode_frequency_major`); the encoders given ``lo`` and ``hi`` compute
    them per row.

    Parameters
    ----------
    lo, hi : ndarray of shape (n_features,), float64
        Per-feature ranges, ``hi > lo``.

    Returns
    -------
    centre, scale : ndarray of shape (n_features,), float64
        ``(lo + hi) / 2`` and ``2 / (hi - lo)``.
    """
    return 0.5 * (lo + hi), 2.0 / (hi - lo)


@njit(cache=True, nogil=True, forceinline=True, error_model="numpy")
def _unit(x, p, q, from_range):
    # t = (x - centre) scale clamped to [-1, 1] (NaN to -1), from the centre and scale
    # (p, q), or, with from_range, from the range [lo, hi] = [p, q]: a constant at each call
    # site, which the inlined code keeps alone. numpy's error model: numba's default checks
    # every float division for a zero divisor, and that branch keeps the loops calling this
    # from vectorising (hi > lo always).
    if from_range:
        centre = 0.5 * (p + q)
        scale = 2.0 / (q - p)
    else:
        centre = p
        scale = q
    t = (np.float64(x) - centre) * scale
    if not t > -1.0:
        t = -1.0
    elif t > 1.0:
        t = 1.0
    return t


#: Coefficients of ``sin(pi t / 2) ~ t (S0 + S1 t^2 + ... + S5 t^10)`` and
#: ``cos(pi t / 2) ~ C0 + C1 t^2 + ... + C6 t^12`` on ``[-1, 1]``: minimax fits of the
#: absolute error (least squares on 6000 Chebyshev nodes, reweighted by Lawson's rule), to
#: 1.33e-11 and 7.5e-13.
_S0, _S1, _S2, _S3, _S4, _S5 = (
    1.5707963266218774, -0.6459640926526934, 0.07969258733499955, -0.004681620350706611,
    0.00016021724623485682, -3.4182130086042715e-06)
_C0, _C1, _C2, _C3, _C4, _C5, _C6 = (
    0.9999999999992524, -1.233700550062741, 0.2536695067243201, -0.020863473689712978,
    0.000919240013142148, -2.51722075027661e-05, 4.492239899703016e-07)


@njit(cache=True, nogil=True, forceinline=True)
def cos_sin_half_pi(t):
    """``(cos(pi t / 2), sin(pi t / 2))`` for ``t`` in ``[-1, 1]``, to about ``1.4e-11``.

    Two polynomials in ``t``, of degrees 11 and 12: a few multiplications with no branch,
    which vectorise over features, where the C library's ``cos`` and ``sin`` cost most of
    an encoding's time. With the range at half the period (:data:`HALF_WIDTH`) these are a
    feature's first frequency, ``t`` as scaled (:func:`fourier_scaling`): neither the
    angle ``pi t / 2`` nor a double angle is computed.
    """
    t2 = t * t
    sn = t * (_S0 + t2 * (_S1 + t2 * (_S2 + t2 * (_S3 + t2 * (_S4 + t2 * _S5)))))
    cs = _C0 + t2 * (_C1 + t2 * (_C2 + t2 * (_C3 + t2 * (_C4 + t2 * (_C5 + t2 * _C6)))))
    return cs, sn


@njit(cache=True, nogil=True, forceinline=True)
def cos_sin_pi(t):
    """``(cos(pi t), sin(pi t))`` for ``t`` in ``[-1, 1]``, to about ``3e-11``.

    :func:`cos_sin_half_pi` of the half angle, then the double-angle formulas.
    """
    cs, sn = cos_sin_half_pi(t)
    return cs * cs - sn * sn, 2.0 * sn * cs


@njit(cache=True, nogil=True, forceinline=True)
def _cos_sin(t, half_width):
    # (cos, sin)(pi half_width t) for t in [-1, 1], 0 < half_width <= 1: the polynomials
    # alone at half the period, their double angle at the whole one
    if half_width == HALF_WIDTH:
        return cos_sin_half_pi(t)
    if half_width == WHOLE_PERIOD:
        return cos_sin_pi(t)
    return cos_sin_pi(half_width * t)


@njit(cache=True, nogil=True, forceinline=True,
      fastmath={"reassoc", "contract", "nsz", "arcp"})
def _first_frequency(x, p, q, from_range, half_width, c1, s1, c, s):
    # the sweeps' start: each feature's (cos, sin)(pi half_width t) as the step (c1, s1) and
    # as the first frequency's values (c, s); t from the centres and scales (p, q), or from
    # the ranges with from_range (_unit). A loop of its own for the map's half period,
    # which then takes the polynomials alone, with no test per feature.
    if half_width == HALF_WIDTH:
        for f in range(x.shape[0]):
            cf, sf = cos_sin_half_pi(_unit(x[f], p[f], q[f], from_range))
            c1[f] = cf
            s1[f] = sf
            c[f] = cf
            s[f] = sf
    else:
        for f in range(x.shape[0]):
            cf, sf = _cos_sin(_unit(x[f], p[f], q[f], from_range), half_width)
            c1[f] = cf
            s1[f] = sf
            c[f] = cf
            s[f] = sf


@njit(cache=True, nogil=True, forceinline=True)
def _write_shifted_block(t, t0, half_width, weights, base, idx, val, nnz):
    # cos(k a) - cos(k a0), sin(k a) - sin(k a0) for k = 1 .. K and the angles
    # a = pi half_width t, a0 = pi half_width t0 (the zero-preserving columns). Two
    # recurrences by angle addition for each angle, the odd and the even k, each stepping
    # by 2 a: one chain of dependent multiplications would wait on each one's latency.
    ca, sa = _cos_sin(t, half_width)
    c2 = ca * ca - sa * sa
    s2 = 2.0 * sa * ca
    cb = c2
    sb = s2
    ra, qa = _cos_sin(t0, half_width)
    r2 = ra * ra - qa * qa
    q2 = 2.0 * qa * ra
    rb = r2
    qb = q2
    n_terms = weights.shape[0]
    k = 0
    while k + 2 <= n_terms:
        w = weights[k]
        v = weights[k + 1]
        j = nnz + 2 * k
        idx[j] = base + 2 * k
        val[j] = (ca - ra) * w
        idx[j + 1] = base + 2 * k + 1
        val[j + 1] = (sa - qa) * w
        idx[j + 2] = base + 2 * k + 2
        val[j + 2] = (cb - rb) * v
        idx[j + 3] = base + 2 * k + 3
        val[j + 3] = (sb - qb) * v
        ca, sa = ca * c2 - sa * s2, sa * c2 + ca * s2
        cb, sb = cb * c2 - sb * s2, sb * c2 + cb * s2
        ra, qa = ra * r2 - qa * q2, qa * r2 + ra * q2
        rb, qb = rb * r2 - qb * q2, qb * r2 + rb * q2
        k += 2
    if k < n_terms:
        w = weights[k]
        j = nnz + 2 * k
        idx[j] = base + 2 * k
        val[j] = (ca - ra) * w
        idx[j + 1] = base + 2 * k + 1
        val[j + 1] = (sa - qa) * w
    return nnz + 2 * n_terms


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract", "nsz", "arcp"})
def fourier_encode_every_feature(x, lo, hi, half_width, weights, idx, val):
    """:func:`fourier_encode_row` without zero-preserving: every feature's block.

    Parameters and result as for :func:`fourier_encode_row`; ``idx`` is also work space.
    """
    # Written frequency by frequency, with the recurrence of angle addition running across
    # the features so that each step is one SIMD sweep over them; one feature's chain of
    # dependent multiplications would wait on each one's latency. The fast-math flags (not those
    # that assume finite values) let the sweeps vectorise.
    #
    # The sweeps keep their state in idx's memory, as float32: idx is written last, and a
    # work array allocated per row would cost as much as the rest of the encoding. In
    # float32 the rotation drifts by about k float32 roundings at frequency k, and the
    # column weights 1 / k^d (d >= 1) scale that back to about one rounding.
    nf = x.shape[0]
    n_terms = weights.shape[0]
    n_cols = 2 * n_terms
    if n_terms == 1:
        w = weights[0]
        for f in range(nf):
            cf, sf = _cos_sin(_unit(x[f], lo[f], hi[f], True), half_width)
            val[2 * f] = cf * w
            val[2 * f + 1] = sf * w
    else:  # nf * 2K >= 4 nf entries
        work = idx[: 4 * nf].view(np.float32)
        c1 = work[:nf]
        s1 = work[nf : 2 * nf]
        c = work[2 * nf : 3 * nf]
        s = work[3 * nf :]
        _first_frequency(x, lo, hi, True, half_width, c1, s1, c, s)
        for k in range(n_terms):
            w = np.float32(weights[k])
            for f in range(nf):
                j = f * n_cols + 2 * k
                val[j] = c[f] * w
                val[j + 1] = s[f] * w
            if k + 1 < n_terms:
                for f in range(nf):
                    cf = c[f]
                    sf = s[f]
                    c[f] = cf * c1[f] - sf * s1[f]
                    s[f] = sf * c1[f] + cf * s1[f]
    for j in range(nf * n_cols):
        idx[j] = j
    return nf * n_cols


@njit(cache=True, nogil=True, forceinline=True,
      fastmath={"reassoc", "contract", "nsz", "arcp"})
def fourier_encode_frequency_major(x, centre, scale, half_width, weights, c1, s1, c, s, val):
    """The values of :func:`fourier_encode_every_feature` in frequency-major order.

    Entry ``2 k nf + f`` holds ``cos((k + 1) pi t_f) w_k`` and entry ``(2 k + 1) nf + f``
    ``sin((k + 1) pi t_f) w_k`` (``nf`` features): the features' blocks of columns
    transposed (:func:`~streamlearn.solvers.embedding.term_major_column`). Each frequency's
    sweep across the features stores its
    values side by side, in SIMD registers, where the map's own order spaces them a
    feature's block apart, one store per value. A solver that keeps its model's columns in
    this order (permuted on entry, put back on exit) scores and updates the rows with dense
    loops; the positions are the same for every row, so no index is written.

    Inlined by LLVM into a solver's row loop, whose loop-invariant checks that the arrays
    do not overlap are then made once: called per row, its short loops over the features
    paid them on every call and took 1.7x as long. The four state arrays are separate
    allocations for the same reason: slices of one array, at a distance the compiler
    cannot bound, kept the loops from vectorising (3.3x as long). The features' ranges come
    as centres and scales (:func:`fourier_scaling`), computed once for a chunk of rows: a
    division per feature and row took about a tenth of the first frequency's time.

    Parameters
    ----------
    x : ndarray of shape (n_features,), float32
    centre, scale : ndarray of shape (n_features,), float64
        :func:`fourier_scaling` of the features' ranges.
    half_width : float
        As for :func:`fourier_encode_row`.
    weights : ndarray of shape (K,), float64
    c1, s1, c, s : ndarray of shape (n_features,), float32
        Work space (the sweeps' state), four separate arrays.
    val : ndarray of shape (>= n_features * 2K,), float32
        Receives the values.

    Returns
    -------
    int
        ``n_features * 2K``, the number of values written.
    """
    nf = x.shape[0]
    n_terms = weights.shape[0]
    _first_frequency(x, centre, scale, False, half_width, c1, s1, c, s)
    # one loop per frequency, which stores its values and steps the recurrence: three
    # short loops per frequency, each with its own set-up, took 2.6x as long
    for k in range(n_terms):
        w = np.float32(weights[k])
        base = 2 * k * nf
        for f in range(nf):
            cf = c[f]
            sf = s[f]
            a = c1[f]
            b = s1[f]
            val[base + f] = cf * w
            val[base + nf + f] = sf * w
            c[f] = cf * a - sf * b
            s[f] = sf * a + cf * b
    return 2 * n_terms * nf


@njit(cache=True, nogil=True)
def fourier_encode_row(x, lo, hi, half_width, weights, zero_preserving, idx, val):
    """Trigonometric encoding of one row.

    Feature ``f`` writes columns ``f * 2K .. f * 2K + 2K - 1`` (``K = len(weights)``); in the
    zero-preserving variant features with ``x[f] == 0`` are skipped.

    Parameters
    ----------
    x : ndarray of shape (n_features,), float32
    lo, hi : ndarray of shape (n_features,), float64
        Per-feature ranges, mapped to ``t`` in ``[-half_width, half_width]``; inputs
        outside are clamped to them.
    half_width : float
        :data:`HALF_WIDTH`, or :data:`WHOLE_PERIOD` for a map fitted before it
        (:attr:`FourierMap.half_width_`).
    weights : ndarray of shape (K,), float64
        Column weights, :func:`fourier_weights`.
    zero_preserving : bool
    idx : ndarray of shape (>= n_features * 2K,), int32
    val : ndarray of shape (>= n_features * 2K,), float32

    Returns
    -------
    int
        Number of entries written.
    """
    if not zero_preserving:
        return fourier_encode_every_feature(x, lo, hi, half_width, weights, idx, val)
    n_cols = 2 * weights.shape[0]
    nnz = 0
    for f in range(x.shape[0]):
        if x[f] == 0.0:
            continue
        t = _unit(x[f], lo[f], hi[f], True)
        t0 = _unit(np.float32(0.0), lo[f], hi[f], True)
        nnz = _write_shifted_block(t, t0, half_width, weights, f * n_cols, idx, val, nnz)
    return nnz


@njit(cache=True, nogil=True)
def fourier_transform_dense(X, lo, hi, half_width, weights, zero_preserving, out):
    """Materialise the trigonometric embedding of ``X`` into a dense array.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    lo, hi : ndarray of shape (n_features,), float64
    half_width : float
        As for :func:`fourier_encode_row`.
    weights : ndarray of shape (K,), float64
    zero_preserving : bool
    out : ndarray of shape (n_rows, n_features * 2K), float32
        Receives the embedding.
    """
    nf = X.shape[1]
    n_terms = weights.shape[0]
    m = nf * 2 * n_terms
    idx = np.empty(m, dtype=np.int32)
    val = np.empty(m, dtype=np.float32)
    if not zero_preserving:  # every column: frequency-major values, put in their columns
        c1 = np.empty(nf, dtype=np.float32)
        s1 = np.empty(nf, dtype=np.float32)
        c = np.empty(nf, dtype=np.float32)
        s = np.empty(nf, dtype=np.float32)
        centre, scale = fourier_scaling(lo, hi)
        for r in range(X.shape[0]):
            fourier_encode_frequency_major(X[r], centre, scale, half_width, weights, c1, s1, c,
                                           s, val)
            j = 0
            for k in range(n_terms):
                for part in range(2):
                    for f in range(nf):
                        out[r, f * 2 * n_terms + 2 * k + part] = val[j]
                        j += 1
        return
    for r in range(X.shape[0]):
        for i in range(out.shape[1]):
            out[r, i] = 0.0
        nnz = fourier_encode_row(X[r], lo, hi, half_width, weights, zero_preserving, idx, val)
        for k in range(nnz):
            out[r, idx[k]] = val[k]


class FourierMap(FeatureMap):
    """Trigonometric embedding with weights ``1/k^d`` (paper 000, Table 1).

    Parameters
    ----------
    n_terms : int
        Number of frequencies ``K``; each feature contributes ``2K`` columns.
    penalty_order : {1, 2}
        Penalised derivative ``d``.
    zero_preserving : bool
        Use ``Psi(x) - Psi(0)`` so that zero inputs embed to zero.

    Attributes
    ----------
    lo_, hi_ : ndarray of shape (n_features,), float64
        Per-feature ranges, mapped to ``t`` in ``[-half_width_, half_width_]``; inputs are
        clamped to them.
    half_width_ : float
        :data:`HALF_WIDTH` (the range is the middle half of the basis's period), set by
        :meth:`fit`. A map saved before it has no such attribute and reads the class's
        :data:`WHOLE_PERIOD` (the range was the whole period), so that its model predicts
        as it did.
    """

    _param_names = ("n_terms", "penalty_order", "zero_preserving")
    _state_names = ("lo_", "hi_")
    #: Read by maps saved before :data:`HALF_WIDTH`; :meth:`fit` sets the instance's.
    half_width_: float = WHOLE_PERIOD

    def __init__(
        self, n_terms: int = 4, penalty_order: int = 1, zero_preserving: bool = False
    ) -> None:
        if int(n_terms) < 1:
            raise ValueError(f"n_terms must be at least 1, got {n_terms}")
        self.n_terms = int(n_terms)
        self.weights = fourier_weights(n_terms, penalty_order)
        self.penalty_order = int(penalty_order)
        self.zero_preserving = bool(zero_preserving)

    @property
    def n_columns_per_feature(self) -> int:
        """``2 * n_terms``."""
        return 2 * self.n_terms

    def fit(self, lo: Any, hi: Any) -> Self:
        """Set the per-feature ranges (``hi == lo`` becomes a range of width 1 above
        ``lo``, :func:`~streamlearn.features.feature_map.nonempty_range`).

        Parameters
        ----------
        lo, hi : array-like of shape (n_features,)

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
        self.lo_ = lo
        self.hi_ = nonempty_range(lo, hi)
        self.half_width_ = HALF_WIDTH
        return self

    def to_dict(self) -> dict[str, Any]:
        """:meth:`FeatureMap.to_dict`, with ``half_width_`` in the state."""
        data = super().to_dict()
        if data["state"] is not None:
            data["state"]["half_width_"] = float(self.half_width_)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """:meth:`FeatureMap.from_dict`, reading ``half_width_`` (:data:`WHOLE_PERIOD` in a
        dict written before it)."""
        obj = super().from_dict(data)
        if data.get("state") is not None:
            half_width = float(data["state"].get("half_width_", WHOLE_PERIOD))
            if half_width not in (HALF_WIDTH, WHOLE_PERIOD):
                raise ValueError(f"unsupported Fourier map half_width_ {half_width!r}: "
                                 f"expected {HALF_WIDTH} or {WHOLE_PERIOD}")
            obj.half_width_ = half_width
        return obj

    def fit_from_stats(
        self,
        minimum: Any = None,
        maximum: Any = None,
        mean: Any = None,
        std: Any = None,
        quantiles: Any = None,
    ) -> Self:
        """Fit from streamed statistics; uses ``minimum`` and ``maximum`` only.

        Parameters
        ----------
        minimum, maximum : array-like of shape (n_features,)
        mean, std, quantiles : optional
            Not used.

        Returns
        -------
        self
        """
        if minimum is None or maximum is None:
            raise ValueError("FourierMap.fit_from_stats needs minimum and maximum")
        return self.fit(minimum, maximum)

    def transform(self, X: Any) -> np.ndarray:
        """Dense embedding, float32 of shape (n_rows, n_features * 2 * n_terms)."""
        X = self._check_X(X)
        out = np.empty((X.shape[0], self.n_output_features(X.shape[1])), dtype=np.float32)
        fourier_transform_dense(X, self.lo_, self.hi_, self.half_width_, self.weights,
                                self.zero_preserving, out)
        return out
