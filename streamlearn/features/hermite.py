"""Hermite embedding penalising the d-th derivative (paper 000, Sec. 4, eq. 6, Table 1).

Each feature is standardised, ``z = (x - mean) / std`` (optionally clamped to
``[-clip, clip]``), and contributes ``K = n_terms`` columns ``c_n He_n(z)``, ``n = 1 .. K``,
where ``He_n`` are the probabilists' Hermite polynomials (``He_0 = 1``, ``He_1 = z``,
``He_{n+1} = z He_n - n He_{n-1}``), orthogonal for the weight ``exp(-z^2 / 2)`` with
``int He_m He_n exp(-z^2/2) dz = sqrt(2 pi) n! delta_mn`` (eq. 6) and ``He_n' = n He_{n-1}``.
The weights of Table 1 make the d-th derivatives orthonormal up to the constant
``sqrt(2 pi)``:

* ``d = 1``: ``c_n = 1 / sqrt(n n!)``;
* ``d = 2``: ``c_1 = 1`` (``Psi^2_1 = Psi^1_1 = z``, whose second derivative is zero) and
  ``c_n = 1 / sqrt(n (n - 1) n!)`` for ``n > 1``.

``He_0`` is not a column (its derivative vanishes; the model's bias takes its place).

Zero-preserving variant (Sec. 5): the columns are ``Psi(z(x)) - Psi(z(0))``, which vanish at
``x = 0`` and have the same derivatives, hence the same penalty. Encoders skip features with
``x == 0``.
"""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np
from numba import njit

from streamlearn.features.feature_map import FeatureMap, as_stat

ORDERS = (1, 2)


def hermite_weights(n_terms: int, order: int) -> np.ndarray:
    """Table 1 weights ``c_n`` of ``He_n``, ``n = 1 .. n_terms``.

    Parameters
    ----------
    n_terms : int
        Number of polynomials ``K``.
    order : {1, 2}
        Penalised derivative ``d``.

    Returns
    -------
    ndarray of shape (n_terms,), float64
        ``1 / sqrt(n n!)`` for ``d = 1``; ``1`` then ``1 / sqrt(n (n-1) n!)`` for ``d = 2``.
    """
    if order not in ORDERS:
        raise ValueError(f"penalty order must be one of {ORDERS}, got {order!r}")
    w = np.empty(int(n_terms), dtype=np.float64)
    for n in range(1, int(n_terms) + 1):
        if order == 1:
            w[n - 1] = 1.0 / math.sqrt(n * math.factorial(n))
        else:
            w[n - 1] = 1.0 if n == 1 else 1.0 / math.sqrt(n * (n - 1) * math.factorial(n))
    return w


@njit(cache=True, nogil=True)
def _standardised(x, mean, std, clip):
    z = (np.float64(x) - mean) / std
    if z > clip:
        return clip
    if z < -clip:
        return -clip
    return z


@njit(cache=True, nogil=True, forceinline=True,
      fastmath={"reassoc", "contract", "nsz", "arcp"})
def hermite_encode_degree_major(x, mean, std, weights, clip, z, prev, cur, val):
    """The values of :func:`hermite_encode_row` (every feature, not zero-preserving) in
    degree-major order.

    Entry ``k nf + f`` holds ``c_{k+1} He_{k+1}(z_f)`` (``nf`` features), so each degree's
    step of the recurrence ``He_{n+1} = z He_n - n He_{n-1}`` is one sweep across the
    features, and its values are stored side by side: the map's own order writes them a
    feature's block apart, a chain of dependent steps per feature. A solver keeps its
    models' columns in the same order for the chunk
    (:func:`~streamlearn.solvers.embedding.to_term_major`). Inlined by LLVM into a
    solver's row loop, with three separately allocated state arrays, as
    :func:`~streamlearn.features.fourier.fourier_encode_frequency_major` is.

    Parameters
    ----------
    x : ndarray of shape (n_features,), float32
    mean, std : ndarray of shape (n_features,), float64
    weights : ndarray of shape (K,), float64
    clip : float
    z, prev, cur : ndarray of shape (n_features,), float64
        Work space: the standardised row and the recurrence's state.
    val : ndarray of shape (>= n_features * K,), float32
        Receives the values.

    Returns
    -------
    int
        ``n_features * K``, the number of values written.
    """
    nf = x.shape[0]
    n_terms = weights.shape[0]
    for f in range(nf):
        zf = (np.float64(x[f]) - mean[f]) / std[f]
        zf = min(max(zf, -clip), clip)
        z[f] = zf
        prev[f] = 1.0
        cur[f] = zf
    for k in range(n_terms):
        w = weights[k]
        n = np.float64(k + 1)
        base = k * nf
        for f in range(nf):
            c = cur[f]
            val[base + f] = c * w
            cur[f] = z[f] * c - n * prev[f]
            prev[f] = c
    return n_terms * nf


@njit(cache=True, nogil=True)
def hermite_encode_row(x, mean, std, weights, clip, zero_preserving, idx, val):
    """Hermite encoding of one row.

    Feature ``f`` writes columns ``f * K .. f * K + K - 1`` (``K = len(weights)``); in the
    zero-preserving variant features with ``x[f] == 0`` are skipped.

    Parameters
    ----------
    x : ndarray of shape (n_features,), float32
    mean, std : ndarray of shape (n_features,), float64
        Standardisation (``std > 0``).
    weights : ndarray of shape (K,), float64
        Column weights, :func:`hermite_weights`.
    clip : float
        Standardised values are clamped to ``[-clip, clip]`` (``np.inf``: no clamping).
    zero_preserving : bool
    idx : ndarray of shape (>= n_features * K,), int32
    val : ndarray of shape (>= n_features * K,), float32

    Returns
    -------
    int
        Number of entries written.
    """
    n_cols = weights.shape[0]
    nnz = 0
    for f in range(x.shape[0]):
        if zero_preserving and x[f] == 0.0:
            continue
        z = _standardised(x[f], mean[f], std[f], clip)
        z0 = _standardised(np.float32(0.0), mean[f], std[f], clip)
        prev, cur = 1.0, z
        prev0, cur0 = 1.0, z0
        for k in range(n_cols):
            n = k + 1  # cur = He_n(z)
            v = cur * weights[k]
            if zero_preserving:
                v -= cur0 * weights[k]
                prev0, cur0 = cur0, z0 * cur0 - n * prev0
            idx[nnz] = f * n_cols + k
            val[nnz] = v
            nnz += 1
            prev, cur = cur, z * cur - n * prev
    return nnz


@njit(cache=True, nogil=True)
def hermite_transform_dense(X, mean, std, weights, clip, zero_preserving, out):
    """Materialise the Hermite embedding of ``X`` into a dense array.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32
    mean, std : ndarray of shape (n_features,), float64
    weights : ndarray of shape (K,), float64
    clip : float
    zero_preserving : bool
    out : ndarray of shape (n_rows, n_features * K), float32
        Receives the embedding.
    """
    m = X.shape[1] * weights.shape[0]
    idx = np.empty(m, dtype=np.int32)
    val = np.empty(m, dtype=np.float32)
    for r in range(X.shape[0]):
        for i in range(out.shape[1]):
            out[r, i] = 0.0
        nnz = hermite_encode_row(X[r], mean, std, weights, clip, zero_preserving, idx, val)
        for k in range(nnz):
            out[r, idx[k]] = val[k]


class HermiteMap(FeatureMap):
    """Hermite embedding with the weights of paper 000, Table 1.

    Parameters
    ----------
    n_terms : int
        Number of polynomials ``He_1 .. He_K`` per feature.
    penalty_order : {1, 2}
        Penalised derivative ``d``.
    zero_preserving : bool
        Use ``Psi(x) - Psi(0)`` so that zero inputs embed to zero.
    clip : float or None
        Clamp standardised inputs to ``[-clip, clip]``; None (the paper's map) does not clamp.

    Attributes
    ----------
    mean_, std_ : ndarray of shape (n_features,), float64
        Standardisation; a zero ``std`` is replaced by 1.
    """

    _param_names = ("n_terms", "penalty_order", "zero_preserving", "clip")
    _state_names = ("mean_", "std_")

    def __init__(
        self,
        n_terms: int = 4,
        penalty_order: int = 1,
        zero_preserving: bool = False,
        clip: float | None = None,
    ) -> None:
        if int(n_terms) < 1:
            raise ValueError(f"n_terms must be at least 1, got {n_terms}")
        if clip is not None and not clip > 0:
            raise ValueError(f"clip must be positive or None, got {clip!r}")
        self.n_terms = int(n_terms)
        self.weights = hermite_weights(n_terms, penalty_order)
        self.penalty_order = int(penalty_order)
        self.zero_preserving = bool(zero_preserving)
        self.clip = None if clip is None else float(clip)

    @property
    def n_columns_per_feature(self) -> int:
        """``n_terms``."""
        return self.n_terms

    def fit(self, mean: Any, std: Any) -> Self:
        """Set the per-feature standardisation.

        Parameters
        ----------
        mean, std : array-like of shape (n_features,)
            ``std`` must be non-negative; zero becomes 1.

        Returns
        -------
        self
        """
        mean = as_stat(mean, "mean")
        std = as_stat(std, "std")
        if mean.shape != std.shape:
            raise ValueError(f"mean and std differ in shape: {mean.shape} vs {std.shape}")
        bad = np.flatnonzero(std < 0)
        if bad.size:
            raise ValueError(f"std is negative for feature {int(bad[0])}: {std[bad[0]]}")
        self.mean_ = mean
        self.std_ = np.where(std > 0, std, 1.0)
        return self

    def fit_from_stats(
        self,
        minimum: Any = None,
        maximum: Any = None,
        mean: Any = None,
        std: Any = None,
        quantiles: Any = None,
    ) -> Self:
        """Fit from streamed statistics; uses ``mean`` and ``std`` only.

        Parameters
        ----------
        minimum, maximum, quantiles : optional
            Not used.
        mean, std : array-like of shape (n_features,)

        Returns
        -------
        self
        """
        if mean is None or std is None:
            raise ValueError("HermiteMap.fit_from_stats needs mean and std")
        return self.fit(mean, std)

    @property
    def _clip_value(self) -> float:
        return np.inf if self.clip is None else self.clip

    def transform(self, X: Any) -> np.ndarray:
        """Dense embedding, float32 of shape (n_rows, n_features * n_terms)."""
        X = self._check_X(X)
        out = np.empty((X.shape[0], self.n_output_features(X.shape[1])), dtype=np.float32)
        hermite_transform_dense(
            X, self.mean_, self.std_, self.weights, self._clip_value, self.zero_preserving, out
        )
        return out
