"""Pairwise interaction terms beside per-feature B-splines: a GA2M embedding (paper 000's
additive model plus selected pairs, as in Lou et al., KDD 2013).

A pair ``(f, g)`` gets the tensor product of two degree-1 B-spline bases, ``P = pair_bases``
uniform bases over each feature's range ``[lo, hi]`` (``P - 1`` segments; uniform also when
the per-feature curves have knots at quantiles, see :class:`BSplinePairMap`): ``P^2`` columns,
of which the 4 of the cell holding ``(x_f, x_g)`` are non-zero, with the bilinear weights
``(1 - u)(1 - v), (1 - u) v, u (1 - v), u v`` (they sum to one). Column ``a P + b`` of the
pair's block is basis ``a`` of ``x_f`` times basis ``b`` of ``x_g``, so the term is a
piecewise-bilinear surface with value ``w[a P + b]`` at grid node ``(a, b)``.

A categorical feature (codes ``0 .. K - 1``, and ``K`` for a category unseen in fit) gets
an axis of its own instead, ``K + 1`` nodes at its codes (:meth:`BSplinePairMap.\
set_category_axes`), so each category has its own node and its own slice of the surface:
on the uniform grid, neighbouring codes shared nodes and their categories blended. The
block of a pair is then ``P_f x P_g`` columns, ``P_f`` the nodes of ``f``'s axis (``P``,
or ``K + 1``); still 4 of them non-zero in a row. Up to :data:`MAX_CATEGORY_NODES` nodes,
so a pair's block is never larger than a 64 x 64 grid; a feature with more categories
keeps the uniform grid over its codes.

A pair's surface can also carry a slope along one of its features, which that feature's
curve could carry as well. :func:`move_marginals` moves it there (purification, as
Explainable Boosting Machines do): with ``node_weights_``, the data's weight on each grid
node of each pair feature (the mean of its hat basis over a sample of rows), a pair's node
values ``H`` lose their weighted row and column means, which go to the two features' terms;
the terms still add up to the same score, and a pair then shows only what no sum of curves
can.

The pair blocks follow the per-feature blocks, pair after pair. Their penalty is a ridge
(``D0``) on the node values: smoothness comes from the coarse grid (8 x 8 nodes to start
with, where a feature's curve has 20 bases; ``AdditiveSVC(pair_bases="auto")`` refines it
while the held-out rows gain), as for the binned pair terms of Explainable Boosting
Machines. A difference penalty along both axes has no per-block triangular factor
of the kind that keeps the per-feature updates sparse (``w_d = D_d^-1 w``), so each update
would touch the whole ``P^2`` block; the ridge keeps a pair at 4 entries per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
from numba import njit

from streamlearn.errors import SchemaError
from streamlearn.features.bspline import BSplineMap, _segment, bspline_transform
from streamlearn.features.feature_map import dense_to_csr
from streamlearn.features.value_terms import check_value_terms, value_columns, value_scale

#: Default bases per axis of a pair's tensor grid.
PAIR_BASES = 8
#: ``AdditiveSVC(pair_bases="auto")``: the grids tried in turn, each 1.5x finer per axis.
AUTO_PAIR_BASES = (PAIR_BASES, 12, 18, 27)
#: The most nodes of a categorical feature's pair axis, one per category and one for a
#: category unseen in fit (63 categories); with more its codes share a uniform grid.
MAX_CATEGORY_NODES = 64


@njit(cache=True, nogil=True, forceinline=True)
def pair_encode_row(x, lo, pair_scale, spec, offset, idx, val, nnz):
    """Append the tensor-product entries of a row's pairs to an encoding.

    Parameters
    ----------
    x : ndarray of shape (n_features,), float32
    lo : ndarray of shape (n_features,), float64
        Lower ends of the pair axes.
    pair_scale : ndarray of shape (n_features,), float64
        ``(nodes - 1) / (hi - lo)``, segments of each feature's pair axis per unit.
    spec : ndarray of shape (4 n_pairs,), int64
        ``f, g, P_f, P_g`` of each pair in turn: its features and the nodes of their axes
        (:attr:`BSplinePairMap.pair_spec`); pair ``p``'s block of ``P_f P_g`` columns
        follows the blocks of the pairs before it.
    offset : int
        Column of the first pair block (the per-feature columns come before it).
    idx : ndarray of int32
        Receives the column indices from position ``nnz`` on (ascending).
    val : ndarray of float32
        Receives the values.
    nnz : int
        Entries already written.

    Returns
    -------
    int
        ``nnz + 4 n_pairs``.
    """
    start = offset
    for p in range(spec.shape[0] // 4):
        f = spec[4 * p]
        g = spec[4 * p + 1]
        n_f = spec[4 * p + 2]
        n_g = spec[4 * p + 3]
        a, u = _segment(x[f], lo[f], pair_scale[f], n_f - 1)
        b, v = _segment(x[g], lo[g], pair_scale[g], n_g - 1)
        base = start + a * n_g + b
        idx[nnz] = base
        idx[nnz + 1] = base + 1
        idx[nnz + 2] = base + n_g
        idx[nnz + 3] = base + n_g + 1
        val[nnz] = (1.0 - u) * (1.0 - v)
        val[nnz + 1] = (1.0 - u) * v
        val[nnz + 2] = u * (1.0 - v)
        val[nnz + 3] = u * v
        nnz += 4
        start += n_f * n_g
    return nnz


@njit(cache=True, nogil=True)
def pair_transform_dense(X, lo, pair_scale, spec, out):
    """Materialise the pair columns of ``X`` into ``out`` (n_rows, pair columns)."""
    m = spec.shape[0]
    idx = np.empty(m, dtype=np.int32)
    val = np.empty(m, dtype=np.float32)
    for r in range(X.shape[0]):
        for i in range(out.shape[1]):
            out[r, i] = 0.0
        nnz = pair_encode_row(X[r], lo, pair_scale, spec, 0, idx, val, 0)
        for k in range(nnz):
            out[r, idx[k]] = val[k]


def _hat_position(x: np.ndarray, lo: Any, hi: Any, n_bases: Any
                  ) -> tuple[np.ndarray, np.ndarray]:
    # the left node of each value's interval and its place in it, in [0, 1] (per column
    # of a 2-D x, with one lo, hi and n_bases a column)
    t = np.clip((np.asarray(x, dtype=np.float64) - lo) / (hi - lo), 0.0, 1.0) * (n_bases - 1)
    left = np.minimum(np.floor(t).astype(np.int64), n_bases - 2)
    return left, t - left


def hat_values(x: np.ndarray, lo: float, hi: float, n_bases: int) -> np.ndarray:
    """Degree-1 B-spline bases on ``n_bases`` uniform knots over ``[lo, hi]`` at ``x``
    (clamped), shape (n, n_bases); each row sums to one."""
    left, u = _hat_position(x, lo, hi, n_bases)
    out = np.zeros((left.shape[0], n_bases))
    rows = np.arange(left.shape[0])
    out[rows, left] = 1.0 - u
    out[rows, left + 1] = u
    return out


def hat_sq_norms(x: np.ndarray, lo: Any, hi: Any, n_bases: Any) -> np.ndarray:
    """The squared norm of each row of :func:`hat_values`, shape (n,), without making it:
    a row's two non-zero bases ``1 - u`` and ``u`` squared and added (its zeros add
    nothing, so this is the row sum of the squares to the last bit). For ``x`` of shape
    (n, k) and ``lo``, ``hi``, ``n_bases`` of shape (k,), each column's, shape (n, k)."""
    _, u = _hat_position(x, lo, hi, n_bases)
    return (1.0 - u) * (1.0 - u) + u * u


def pair_marginals(H: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """Weighted row and column means of pair node values.

    Parameters
    ----------
    H : ndarray of shape (..., P_f, P_g)
        Node values (first axis: the pair's first feature).
    weights : (ndarray of shape (P_f,), ndarray of shape (P_g,))
        Each feature's node weights, each summing to one (an array of shape (2, P) when
        both axes have ``P`` nodes).

    Returns
    -------
    rows : ndarray of shape (..., P_f)
        ``sum_b w_b[j] H[i, j]``, a function of the first feature.
    cols : ndarray of shape (..., P_g)
        ``sum_a w_a[i] H[i, j] - g``, a function of the second feature.
    grand : ndarray of shape (...)
        ``g = sum_ij w_a[i] w_b[j] H[i, j]``.
    """
    rows = H @ weights[1]
    grand = rows @ weights[0]
    cols = np.einsum("i,...ij->...j", weights[0], H) - grand[..., None]
    return rows, cols, grand


def move_marginals(terms: np.ndarray, X: np.ndarray, fmap: BSplinePairMap,
                   W: np.ndarray, hats: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """Move each pair's weighted marginals into its features' terms (in place).

    Parameters
    ----------
    terms : ndarray of shape (n, n_features + n_pairs, m)
        Every term of every model at the rows ``X`` (features, then pairs).
    X : ndarray of shape (n, n_features)
    fmap : BSplinePairMap
        Fitted, with ``node_weights_``.
    W : ndarray of shape (m, >= n_features * n_cols + pair columns)
        The models' weights, per-feature columns first (in ``w`` or ``w_d`` form: the two
        agree on the pair columns, the node values); columns past the pairs (a bias) are
        ignored.
    hats : dict, optional
        :meth:`BSplinePairMap.pair_hats` of ``X``, when the caller has them.

    Returns
    -------
    ndarray
        ``terms``, whose sum over terms is unchanged.
    """
    d = X.shape[1]
    main = d * fmap.n_columns_per_feature
    if hats is None:
        hats = fmap.pair_hats(X)
    for p, ((f, g), H) in enumerate(zip(fmap.interactions, fmap.pair_nodes(W[:, main:]),
                                        strict=True)):
        n_f, n_g = H.shape[1:]
        weights = fmap.node_weights_[p, 0, :n_f], fmap.node_weights_[p, 1, :n_g]
        rows, cols, _ = pair_marginals(H, weights)
        along_f = hats[f] @ rows.T  # (n, m)
        along_g = hats[g] @ cols.T
        terms[:, f, :] += along_f
        terms[:, g, :] += along_g
        terms[:, d + p, :] -= along_f + along_g
    return terms


def feature_index(value: Any, item: Any) -> int:
    """``value``, one side of the interaction ``item``, as a feature index: an integer
    (Python's or numpy's, not a bool); a ValueError naming it otherwise, where ``int``
    would truncate ``1.9`` to feature 1."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ValueError(f"an interaction names its features by integer index or by name, "
                         f"got {value!r} in {item!r}")
    return int(value)


def check_interactions(interactions: Any, n_features: int | None = None) -> tuple[
        tuple[int, int], ...]:
    """Pairs of feature indices ``(f, g)``, ``f < g``, distinct; a clear error otherwise
    (an index that is not an integer, :func:`feature_index`, included)."""
    pairs = []
    for item in interactions:
        try:
            f, g = item
        except (TypeError, ValueError) as error:
            raise ValueError(f"an interaction is a pair of feature indices, got {item!r}"
                             ) from error
        f, g = feature_index(f, item), feature_index(g, item)
        if f == g:
            raise ValueError(f"an interaction pairs two different features, got ({f}, {g})")
        f, g = min(f, g), max(f, g)
        if f < 0 or (n_features is not None and g >= n_features):
            raise SchemaError(f"interaction ({f}, {g}) names a feature outside "
                              f"0 .. {n_features - 1 if n_features else '?'}")
        if (f, g) in pairs:
            raise ValueError(f"interaction ({f}, {g}) is listed twice")
        pairs.append((f, g))
    return tuple(pairs)


class BSplinePairMap(BSplineMap):
    """:class:`BSplineMap` per feature plus tensor-product terms of selected feature pairs,
    and value terms of selected features (:mod:`~streamlearn.features.value_terms`).

    Parameters
    ----------
    degree, n_bases, penalty_order
        Of the per-feature B-splines (:class:`BSplineMap`).
    zero_preserving : bool
        Must be False: a pair term is not zero when one of its features is.
    interactions : sequence of (int, int)
        Feature index pairs; each gets ``pair_bases^2`` columns after the per-feature ones
        (``P_f P_g`` with a categorical axis, :meth:`set_category_axes`).
    pair_bases : int
        Degree-1 bases per axis of a pair's grid (at least 2), but for categorical axes.
    knots : {"uniform", "quantile"}
        Of the per-feature curves (:class:`BSplineMap`). A pair's grid stays uniform over
        the two features' ranges: on the warped positions of quantile knots its cells
        crowded where the rows do, and on generated Gaussian data the screened pairs of
        features that carry nothing fitted their noise.
    value_terms : sequence of (int, sequence of float)
        Features given one weight per listed value beside their curve, each with its
        values (increasing, as the map takes the rows); their columns follow the pairs'.

    Attributes
    ----------
    lo_, hi_ : ndarray of shape (n_features,), float64
        Per-feature ranges, shared by the per-feature and the pair bases (but for
        categorical axes).
    category_nodes_ : ndarray of shape (n_features,), int64
        The nodes of each categorical feature's pair axis, one per category and one for
        a category unseen in fit (:meth:`set_category_axes`); 0 for a feature whose axis
        is the uniform ``pair_bases`` grid over its range.
    node_weights_ : ndarray of shape (n_pairs, 2, nodes)
        The data's weight on each grid node of each pair's two features, each row summing
        to one (:meth:`fit_node_weights`; uniform until then), for :func:`move_marginals`;
        ``nodes`` is the most of any axis, and an axis with fewer has zeros past its own.
    """

    _param_names = ("degree", "n_bases", "penalty_order", "zero_preserving", "interactions",
                    "pair_bases", "knots", "value_terms")

    def __init__(self, degree: int = 3, n_bases: int = 20, penalty_order: int = 1,
                 zero_preserving: bool = False, interactions: Sequence[Any] = (),
                 pair_bases: int = PAIR_BASES, knots: str = "uniform",
                 value_terms: Sequence[Any] = ()) -> None:
        super().__init__(degree, n_bases, penalty_order, zero_preserving, knots)
        if self.zero_preserving:
            raise ValueError("pair terms need zero_preserving=False: a pair's surface is not "
                             "zero where one of its features is")
        if int(pair_bases) < 2:
            raise ValueError(f"pair_bases must be at least 2, got {pair_bases}")
        self.interactions = check_interactions(interactions)
        self.pair_bases = int(pair_bases)
        self.value_terms = check_value_terms(value_terms)

    @property
    def n_pairs(self) -> int:
        """Number of pair terms."""
        return len(self.interactions)

    @property
    def pair_features(self) -> np.ndarray:
        """``f_0, g_0, f_1, g_1, ...`` as int64, what :func:`pair_encode_row` takes."""
        return np.asarray(self.interactions, dtype=np.int64).reshape(-1)

    @property
    def axis_nodes_(self) -> np.ndarray:
        """Nodes of each feature's pair axis, int64: ``pair_bases``, or a categorical
        feature's ``category_nodes_``."""
        nodes = self._category_nodes()
        return np.where(nodes > 0, nodes, self.pair_bases).astype(np.int64)

    def _category_nodes(self) -> np.ndarray:
        """``category_nodes_``; zeros for a model file written before categorical axes."""
        self._check_fitted()
        nodes = getattr(self, "category_nodes_", None)
        return np.zeros(self.lo_.shape[0], dtype=np.int64) if nodes is None else nodes

    @property
    def pair_lo_(self) -> np.ndarray:
        """Lower end of each feature's pair axis, float64 (0, the first code, for a
        categorical axis)."""
        return np.where(self._category_nodes() > 0, 0.0, self.lo_)

    @property
    def pair_hi_(self) -> np.ndarray:
        """Upper end of each feature's pair axis, float64 (``K``, the code of a category
        unseen in fit, for a categorical axis)."""
        nodes = self._category_nodes()
        return np.where(nodes > 0, nodes - 1.0, self.hi_)

    @property
    def pair_scale_(self) -> np.ndarray:
        """Segments of each feature's pair axis per unit, ``(nodes - 1) / (hi - lo)``
        (1 on a categorical axis, whose nodes are its codes)."""
        return (self.axis_nodes_ - 1) / (self.pair_hi_ - self.pair_lo_)

    @property
    def pair_spec(self) -> np.ndarray:
        """``f, g, P_f, P_g`` of each pair in turn, int64 (:func:`pair_encode_row`'s
        ``spec``)."""
        nodes = self.axis_nodes_
        return np.asarray([[f, g, nodes[f], nodes[g]] for f, g in self.interactions],
                          dtype=np.int64).reshape(-1)

    @property
    def pair_columns(self) -> int:
        """Columns of the pair blocks, all together (``n_pairs pair_bases^2`` without
        categorical axes)."""
        if not self.is_fitted:
            return self.n_pairs * self.pair_bases**2
        nodes = self.axis_nodes_
        return int(sum(nodes[f] * nodes[g] for f, g in self.interactions))

    def set_category_axes(self, counts: dict[int, int]) -> Self:
        """Give each listed categorical feature a pair axis of its own: a node per
        category and one for a category unseen in fit, where the codes sit (its code
        ``c`` switches on node ``c`` alone), for features of at most
        ``MAX_CATEGORY_NODES - 1`` categories; the node weights start uniform again.

        Parameters
        ----------
        counts : dict of int to int
            Feature index -> its number of categories ``K`` (codes ``0 .. K - 1``).

        Returns
        -------
        self
        """
        self._check_fitted()
        nodes = np.zeros(self.lo_.shape[0], dtype=np.int64)
        for f, k in counts.items():
            if 0 < k + 1 <= MAX_CATEGORY_NODES:
                nodes[f] = k + 1
        self.category_nodes_ = nodes
        self._uniform_node_weights()
        return self

    def _uniform_node_weights(self) -> None:
        """``node_weights_`` uniform on each pair axis."""
        nodes = self.axis_nodes_
        most = max((int(nodes[f]) for pair in self.interactions for f in pair),
                   default=self.pair_bases)
        self.node_weights_ = np.zeros((self.n_pairs, 2, most))
        for p, pair in enumerate(self.interactions):
            for side, f in enumerate(pair):
                self.node_weights_[p, side, :nodes[f]] = 1.0 / nodes[f]

    def pair_hats(self, X: np.ndarray) -> dict[int, np.ndarray]:
        """The hat bases of every pair feature's axis at the rows ``X`` (clamped), each
        feature's computed once: feature -> (n, nodes)."""
        lo, hi, nodes = self.pair_lo_, self.pair_hi_, self.axis_nodes_
        return {f: hat_values(X[:, f], lo[f], hi[f], int(nodes[f]))
                for f in sorted({f for pair in self.interactions for f in pair})}

    def pair_nodes(self, W: np.ndarray) -> list[np.ndarray]:
        """Each pair's node values, (m, P_f, P_g) views of the pair columns ``W`` (m, >=
        :attr:`pair_columns`), pair after pair."""
        out, start = [], 0
        nodes = self.axis_nodes_
        for f, g in self.interactions:
            size = int(nodes[f] * nodes[g])
            out.append(W[:, start:start + size].reshape(W.shape[0], nodes[f], nodes[g]))
            start += size
        return out

    @property
    def value_features(self) -> np.ndarray:
        """The feature of each value term, int64 (:func:`value_encode_row`'s
        ``features``)."""
        return np.asarray([f for f, _ in self.value_terms], dtype=np.int64)

    @property
    def value_bounds(self) -> np.ndarray:
        """Where each value term's values start in :attr:`value_table`, and the end,
        int64."""
        sizes = [len(values) for _, values in self.value_terms]
        return np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)

    @property
    def value_table(self) -> np.ndarray:
        """Every value term's values, term after term, float64."""
        return np.asarray([v for _, values in self.value_terms for v in values],
                          dtype=np.float64)

    @property
    def value_scale(self) -> float:
        """The entry of a value term's column for a value found
        (:func:`~streamlearn.features.value_terms.value_scale`)."""
        return value_scale(self.n_bases, self.penalty_order)

    @property
    def n_values(self) -> int:
        """Columns of the value terms, all together."""
        return sum(len(values) for _, values in self.value_terms)

    def n_output_features(self, n_features: int) -> int:
        """Per-feature columns, ``pair_bases^2`` per pair (``P_f P_g`` with a categorical
        axis) and one per listed value."""
        return int(n_features) * self.n_columns_per_feature + self.pair_columns + self.n_values

    def max_row_nnz(self, n_features: int) -> int:
        """Size of the encoding buffers: ``degree + 1`` per feature, 4 per pair, 1 per
        value term."""
        return super().max_row_nnz(n_features) + 4 * self.n_pairs + len(self.value_terms)

    def fit(self, lo: Any, hi: Any) -> Self:
        """Set the per-feature ranges (:meth:`BSplineMap.fit`); checks the pairs' indices.
        Every pair axis is the uniform grid (no categorical axes), its node weights
        uniform."""
        super().fit(lo, hi)
        check_interactions(self.interactions, self.lo_.shape[0])
        check_value_terms(self.value_terms, self.lo_.shape[0])
        self.category_nodes_ = np.zeros(self.lo_.shape[0], dtype=np.int64)
        self._uniform_node_weights()
        return self

    def to_dict(self) -> dict[str, Any]:
        """:meth:`BSplineMap.to_dict`, with ``category_nodes_`` in the state."""
        data = super().to_dict()
        if data["state"] is not None:
            data["state"]["category_nodes_"] = self._category_nodes().tolist()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """:meth:`BSplineMap.from_dict`, reading ``category_nodes_`` (none in a dict
        written before categorical axes: every axis uniform); the node weights uniform."""
        obj = super().from_dict(data)
        if data.get("state") is not None:
            nodes = data["state"].get("category_nodes_", [0] * obj.lo_.shape[0])
            obj.category_nodes_ = np.asarray(nodes, dtype=np.int64)
            obj._uniform_node_weights()
        return obj

    def fit_node_weights(self, sample: np.ndarray) -> Self:
        """Set ``node_weights_`` from a sample of rows: the mean of each node's hat basis.

        Parameters
        ----------
        sample : ndarray of shape (k, n_features)
            Rows spread over the data (the describe pass's sample); none: uniform.

        Returns
        -------
        self
        """
        self._check_fitted()
        if sample.shape[0] == 0:
            return self
        means = {f: hats.mean(axis=0) for f, hats in self.pair_hats(sample).items()}
        for p, pair in enumerate(self.interactions):
            for side, f in enumerate(pair):
                self.node_weights_[p, side, :means[f].shape[0]] = means[f]
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Dense ``[Psi_d(X), pair columns, value columns]``, float32."""
        X = self._check_X(X)
        out = np.empty((X.shape[0], self.n_output_features(X.shape[1])), dtype=np.float32)
        main = X.shape[1] * self.n_columns_per_feature
        # the per-feature block written whole, then copied in: the kernel takes a
        # C-contiguous array, as in BSplineMap.transform, and compiles one version
        block = np.empty((X.shape[0], main), dtype=np.float32)
        Z, lo, hi = self.positions(X)
        bspline_transform(Z, lo, hi, self.n_bases, self.degree, self.penalty_order, False,
                          block)
        out[:, :main] = block
        pairs = main + self.pair_columns
        pair_transform_dense(X, self.pair_lo_, self.pair_scale_, self.pair_spec,
                             out[:, main:pairs])
        out[:, pairs:] = value_columns(X, self.value_terms, self.value_scale)
        return out

    def transform_features(self, X: Any) -> np.ndarray:
        """The per-feature columns of :meth:`transform` alone, float32 of shape
        (n_rows, n_features * n_columns_per_feature)."""
        X = self._check_X(X)
        block = np.empty((X.shape[0], X.shape[1] * self.n_columns_per_feature),
                         dtype=np.float32)
        Z, lo, hi = self.positions(X)
        bspline_transform(Z, lo, hi, self.n_bases, self.degree, self.penalty_order, False,
                          block)
        return block

    def pair_values(self, X: Any, W: np.ndarray,
                    hats: dict[int, np.ndarray] | None = None) -> np.ndarray:
        """Each pair's term at the rows, ``sum_ab W[j, p, a, b] h_a(x_f) h_b(x_g)``, from
        the two features' hat values (the pair columns, products of them, are not
        materialised).

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
        W : ndarray of shape (m, >= pair_columns)
            Each model's weights of the pair columns (its node values, pair after pair,
            :meth:`pair_nodes`).
        hats : dict, optional
            :meth:`pair_hats` of ``X``, when the caller has them.

        Returns
        -------
        ndarray of shape (n_rows, n_pairs, m), float64
        """
        X = self._check_X(X)
        n, m = X.shape[0], W.shape[0]
        out = np.empty((n, self.n_pairs, m))
        if hats is None:
            hats = self.pair_hats(X)
        for p, ((f, g), H) in enumerate(zip(self.interactions, self.pair_nodes(W),
                                            strict=True)):
            n_f, n_g = H.shape[1:]
            # sum over a by one matrix product, (n, P_f) x (P_f, m P_g), then over b
            along = (hats[f] @ H.transpose(1, 0, 2).reshape(n_f, m * n_g)).reshape(n, m, n_g)
            out[:, p, :] = np.einsum("njb,nb->nj", along, hats[g])
        return out

    def sum_sq_norms(self, X: Any) -> float:
        """``sum_i ||Phi(x_i)||^2`` with the pair columns left unmaterialised.

        A pair's entries are the products of its two features' hat values on the pair
        grid, so the squared norm of its block is the product of theirs; only the
        per-feature block is embedded (float32, as :meth:`FeatureMap.sum_sq_norms` adds
        it), the pairs' ``P^2`` columns each are not.
        """
        X = self._check_X(X)
        block = self.transform_features(X)
        total = float(np.vdot(block, block))
        # per feature: its hats squared, summed per row; every pair feature at once, each
        # a contiguous row of ``squares``
        features = sorted({f for pair in self.interactions for f in pair})
        at = {f: i for i, f in enumerate(features)}
        lo, hi = np.asarray(self.pair_lo_), np.asarray(self.pair_hi_)
        squares = np.ascontiguousarray(hat_sq_norms(
            X[:, features], lo[features], hi[features],
            np.asarray(self.axis_nodes_)[features]).T)
        for f, g in self.interactions:
            total += float(squares[at[f]] @ squares[at[g]])
        found = float(np.count_nonzero(value_columns(X, self.value_terms)))
        return total + found * self.value_scale**2

    def value_values(self, X: Any, W: np.ndarray) -> np.ndarray:
        """Each value term at the rows: the weight of the row's value times the columns'
        entry (:attr:`value_scale`), 0 off the table.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
        W : ndarray of shape (m, n_values)
            Each model's weights of the value columns.

        Returns
        -------
        ndarray of shape (n_rows, n_value_terms, m), float64
        """
        X = self._check_X(X)
        out = np.zeros((X.shape[0], len(self.value_terms), W.shape[0]))
        bounds = self.value_bounds
        for t, (f, values) in enumerate(self.value_terms):
            table = np.asarray(values)
            at = np.minimum(np.searchsorted(table, X[:, f].astype(np.float64)),
                            table.shape[0] - 1)
            hit = table[at] == X[:, f].astype(np.float64)
            out[hit, t, :] = self.value_scale * W[:, bounds[t] + at[hit]].T
        return out

    def transform_csr(self, X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`transform` as a CSR triple."""
        return dense_to_csr(self.transform(X))
