"""Value terms: one weight per frequent value of a numeric feature, beside its curve.

A B-spline term is smooth in the feature's value. Some numeric features take a few values
whose effects are not: a capital gain of exactly 7,688 or 15,024 says more about income
than the gains around it, which a curve with a difference penalty cannot follow. A value
term gives feature ``f`` one column per value of a short table ``v_0 < v_1 < ...``: a row
whose ``x_f`` equals ``v_k`` (exactly, as float32) has the entry ``s`` in column ``k`` and
every other row nothing, so the feature's shape becomes its curve plus a step at each
listed value.

The columns follow the pair blocks of a
:class:`~streamlearn.features.pair_terms.BSplinePairMap`, term after term, in the order of
the concatenated tables; their penalty is a ridge, as the pairs' is (``w_d = w`` there). A
row writes at most one entry per value term, so the terms cost a binary search each.

The entry ``s`` (:func:`value_scale`) sets what the ridge charges for a step: a step of
``J`` costs ``(J / s)^2``, as much as the feature's own difference penalty charges for the
cheapest curve that rises by ``J`` from one end of its range to the other, the curve of a
two-valued feature. A value term is then penalised as a 0/1 column for the value, encoded
by hand, would be; with ``s = 1`` the ridge charged a step 7 to 31 times as much as the
curves' first differences do, and held the steps down (adult: held-out log-loss 0.320
against 0.310).

Which features get one is chosen from the data (:func:`frequent_values`, then a
screening of the per-feature model's residuals in
:mod:`streamlearn.solvers.additive.value_screening`); a chosen feature's table is then
every value that :data:`MIN_VALUE_ROWS` training rows hold (:func:`value_table`), not only
the values frequent in the row sample: the ridge shrinks the weight of a rare value
towards 0, and the rows of a rare value can still say much (each of adult's 80 capital
gains of 3 to 31 training rows has all its rows on one side of 50K; test error 12.81 ->
12.62 %).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

from streamlearn.errors import SchemaError
from streamlearn.features.difference_penalty import PENALTY_ORDERS

#: A value enters a feature's table when it holds at least this share of the row sample
#: (4 rows of the describe pass's 4,096): a weight of its own then has at least about
#: a thousandth of the rows to learn from.
MIN_VALUE_SHARE = 1.0 / 1024
#: At most this many values per candidate feature, the most frequent ones.
MAX_VALUES = 32
#: A chosen feature's table: every value that at least this many training rows hold...
MIN_VALUE_ROWS = 3
#: ... the most frequent of them, at most this many.
MAX_TABLE_VALUES = 256
#: The value counting pass follows at most this many distinct values of a feature.
MAX_COUNTED_VALUES = 65_536


def value_scale(n_bases: int, order: int) -> float:
    """The entry ``s`` of a value term's columns beside curves of ``n_bases`` bases under
    the difference penalty of ``order``: ``s^2 = min ||D w||^2`` over the coefficients
    ``w`` with ``w_last - w_first = 1`` (``e^T (D^T D)^-1 e``, ``e = e_last - e_first``).

    ``D^-T e`` is the last column of ``D^-T`` less its first, which the closed forms of
    :func:`~streamlearn.features.difference_penalty.inverse_transpose` give, so ``s`` is
    O(1) whatever ``n = n_bases``: ``sqrt(2)`` for order 0, ``sqrt(n - 1)`` for order 1,
    ``sqrt((n - 1)^2 + (n - 1) n (2 n - 1) / 6)`` for order 2 (``D^-T e = (n - 1, n - 1,
    n - 2, ..., 1)``); 1 for a single basis (``e = e_0``)."""
    n = int(n_bases)
    order = int(order)
    if order not in PENALTY_ORDERS:
        raise ValueError(f"penalty order must be one of {PENALTY_ORDERS}, got {order!r}")
    if n < 1:
        raise ValueError(f"a value term needs curves of at least one basis, got {n}")
    if n == 1:
        return 1.0
    if order == 0:
        return float(np.sqrt(2.0))
    if order == 1:
        return float(np.sqrt(n - 1.0))
    return float(np.sqrt((n - 1.0) ** 2 + (n - 1.0) * n * (2.0 * n - 1.0) / 6.0))


@njit(cache=True, nogil=True)
def value_encode_row(x, features, bounds, table, scale, offset, idx, val, nnz):
    """Append the entries of a row's value terms to an encoding.

    Parameters
    ----------
    x : ndarray of shape (n_features,), float32
    features : ndarray of shape (n_terms,), int64
        The feature of each value term.
    bounds : ndarray of shape (n_terms + 1,), int64
        Term ``t``'s values are ``table[bounds[t]:bounds[t + 1]]``.
    table : ndarray of float64
        Every term's values, each term's increasing.
    scale : float
        The entry ``s`` of a value found (:func:`value_scale`).
    offset : int
        Column of the first value (the per-feature and pair columns come before it).
    idx : ndarray of int32
        Receives the column indices from position ``nnz`` on (ascending).
    val : ndarray of float32
        Receives the values (``scale``).
    nnz : int
        Entries already written.

    Returns
    -------
    int
        ``nnz`` plus the number of terms whose table holds the row's value.
    """
    for t in range(features.shape[0]):
        v = np.float64(x[features[t]])
        lo = bounds[t]
        hi = bounds[t + 1]
        while lo < hi:  # the first table entry >= v
            mid = (lo + hi) // 2
            if table[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        if lo < bounds[t + 1] and table[lo] == v:
            idx[nnz] = offset + lo
            val[nnz] = scale
            nnz += 1
    return nnz


def value_columns(X: np.ndarray, value_terms: Sequence[tuple[int, tuple[float, ...]]],
                  scale: float = 1.0) -> np.ndarray:
    """The value terms' columns of rows ``X``, dense float32 (numpy, the reference of
    :func:`value_encode_row`).

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
    value_terms : sequence of (int, tuple of float)
    scale : float
        The entry of a value found (:func:`value_scale`).

    Returns
    -------
    ndarray of shape (n, total values), float32
    """
    X = np.asarray(X, dtype=np.float32)
    blocks = [(X[:, [f]].astype(np.float64) == np.asarray(values)[None, :])
              for f, values in value_terms]
    if not blocks:
        return np.zeros((X.shape[0], 0), dtype=np.float32)
    return (np.hstack(blocks) * np.float32(scale)).astype(np.float32)


def check_value_terms(value_terms: Any, n_features: int | None = None
                      ) -> tuple[tuple[int, tuple[float, ...]], ...]:
    """Value terms as ``((feature, (v_0, v_1, ...)), ...)``: features distinct and in
    range, values finite, distinct and sorted; a clear error otherwise."""
    terms: list[tuple[int, tuple[float, ...]]] = []
    for item in value_terms:
        try:
            f, values = item
            f = int(f)
            values = tuple(float(v) for v in values)
        except (TypeError, ValueError) as error:
            raise ValueError("a value term is a feature index and its values, got "
                             f"{item!r}") from error
        if f < 0 or (n_features is not None and f >= n_features):
            raise SchemaError(f"value term of feature {f} names a feature outside "
                              f"0 .. {n_features - 1 if n_features else '?'}")
        if not values:
            raise ValueError(f"the value term of feature {f} lists no values")
        array = np.asarray(values)
        if not np.all(np.isfinite(array)):
            raise ValueError(f"the value term of feature {f} lists a value that is not "
                             "finite")
        if np.any(np.diff(array) <= 0):
            raise ValueError(f"the values of feature {f}'s value term must be distinct and "
                             "increasing")
        if any(f == g for g, _ in terms):
            raise ValueError(f"feature {f} has two value terms")
        terms.append((f, values))
    return tuple(terms)


def frequent_values(sample: np.ndarray, skip: Sequence[int] = ()) -> dict[int, np.ndarray]:
    """The candidate value tables of the features of a row sample.

    A feature is a candidate when its sampled values number at least three (a two-valued
    feature's degree-1 curve already has one weight per value) and at least two of them
    hold :data:`MIN_VALUE_SHARE` of the sample each; its table is those values, the
    :data:`MAX_VALUES` most frequent at most, increasing. Continuous features, whose
    values rarely repeat, have none.

    Parameters
    ----------
    sample : ndarray of shape (k, n_features)
        Rows spread over the data (the describe pass's sample, mapped as the feature map
        takes the rows).
    skip : sequence of int
        Features left out (categorical codes: their curve has a knot per category).

    Returns
    -------
    dict of int to ndarray of float64
        Candidate feature -> its values, float32-exact.
    """
    sample = np.asarray(sample, dtype=np.float32)
    k = sample.shape[0]
    least = max(2, int(np.ceil(MIN_VALUE_SHARE * k)))
    out: dict[int, np.ndarray] = {}
    for f in range(sample.shape[1]):
        if f in skip:
            continue
        values, counts = np.unique(sample[:, f][np.isfinite(sample[:, f])],
                                   return_counts=True)
        if values.shape[0] < 3:
            continue
        frequent = np.flatnonzero(counts >= least)
        if frequent.shape[0] < 2:
            continue
        top = frequent[np.argsort(-counts[frequent], kind="stable")[:MAX_VALUES]]
        out[f] = np.sort(values[top]).astype(np.float64)
    return out


def value_table(values: np.ndarray, counts: np.ndarray, least: int = MIN_VALUE_ROWS,
                most: int = MAX_TABLE_VALUES) -> np.ndarray:
    """A chosen feature's table from the counts of its values over the training rows:
    the values held by at least ``least`` rows, the ``most`` most frequent at most
    (ties: the smaller value first), increasing.

    Parameters
    ----------
    values : ndarray of shape (k,)
        The feature's distinct values (finite).
    counts : ndarray of shape (k,)
        Rows holding each.
    least, most : int

    Returns
    -------
    ndarray of float64
        Float32-exact values, increasing.
    """
    values = np.asarray(values, dtype=np.float64)
    counts = np.asarray(counts)
    order = np.lexsort((values, -counts))
    kept = order[counts[order] >= least][:most]
    return np.sort(values[kept])
