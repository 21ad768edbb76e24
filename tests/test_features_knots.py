"""Knots at quantiles: the warp kernel, the knot rule and the maps built on them."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from streamlearn.features import BSplineMap, BSplinePairMap, FeatureMap
from streamlearn.features.knots import (
    CELLS_PER_PIECE,
    QUANTILE_SHARE,
    quantile_knots,
    table_positions,
    uniform_knots,
    warp_position,
    warp_positions,
    warp_table,
)
from streamlearn.models import AdditiveSVC
from streamlearn.solvers.embedding import decision_ovr_chunk, embedding_params


@njit(cache=True, nogil=True)
def _kernel_positions(X, table):
    out = np.empty(X.shape)
    for r in range(X.shape[0]):
        for f in range(X.shape[1]):
            t = warp_position(X[r, f], f, table)
            out[r, f] = min(max(t, 0.0), table[0]) if t == t else 0.0  # as the encoders
    return out


def _knots(rng: np.random.Generator, n_features: int, n_pieces: int) -> np.ndarray:
    """Strictly increasing knots on the lookup grid, with very uneven gaps."""
    n_cells = CELLS_PER_PIECE * n_pieces
    knots = np.empty((n_features, n_pieces + 1))
    for f in range(n_features):
        cells = np.sort(rng.choice(np.arange(1, n_cells), n_pieces - 1, replace=False))
        width = rng.lognormal(sigma=2.0)
        knots[f] = -3.0 + width * np.r_[0, cells, n_cells] / n_cells
    return knots


def test_warp_position_is_linear_interpolation_through_the_knots() -> None:
    rng = np.random.default_rng(0)
    knots = _knots(rng, 4, 11)
    X = rng.uniform(knots[:, 0].min() - 2, knots[:, -1].max() + 2, size=(3000, 4))
    X[:12, 1] = knots[1]  # every knot of feature 1
    X[50, 2] = np.nan
    X = X.astype(np.float32)
    got = _kernel_positions(X, warp_table(knots))
    steps = np.arange(12.0)
    expected = np.column_stack([np.interp(X[:, f].astype(np.float64), knots[f], steps)
                                for f in range(4)])
    expected[50, 2] = 0.0  # NaN reads as the lower end, as on uniform knots
    np.testing.assert_allclose(got, expected, atol=1e-12)
    np.testing.assert_allclose(warp_positions(X, knots), expected, atol=1e-12)
    np.testing.assert_allclose(table_positions(X, warp_table(knots)), got, atol=1e-12)
    np.testing.assert_allclose(got[:12, 1], steps, atol=1e-5)  # knots rounded to float32


def test_uniform_knots_give_the_uniform_position() -> None:
    lo, hi = np.array([-1.0, 0.0, 5.0]), np.array([1.0, 3.0, 5.5])
    X = np.random.default_rng(1).uniform(-2, 6, size=(500, 3)).astype(np.float32)
    got = _kernel_positions(X, warp_table(uniform_knots(lo, hi, 7)))
    expected = np.clip((X - lo) / (hi - lo), 0, 1) * 7
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_quantile_knots_blend_the_grid_with_the_sample_quantiles() -> None:
    rng = np.random.default_rng(2)
    n, M = 4000, 9
    sample = np.column_stack([
        rng.lognormal(size=n),                                    # skewed, continuous
        np.where(rng.random(n) < 0.6, 0.0, rng.uniform(0, 1, n)),  # an atom at 0
        rng.integers(0, 4, n).astype(float),                      # four codes
        rng.normal(size=n),                                       # kept uniform
        rng.integers(0, 2, n).astype(float),                      # two values
    ])
    lo, hi = sample.min(axis=0), sample.max(axis=0)
    knots = quantile_knots(sample, lo, hi, M, uniform=[3])
    grid = uniform_knots(lo, hi, M)
    levels = np.arange(M + 1) / M

    def blend(f: int, values: np.ndarray) -> np.ndarray:
        q = np.quantile(values, levels)
        q[0], q[-1] = lo[f], hi[f]
        k = (1 - QUANTILE_SHARE) * grid[f] + QUANTILE_SHARE * q
        # rounded to the lookup grid
        cell = (hi[f] - lo[f]) / (CELLS_PER_PIECE * M)
        return lo[f] + np.round((k - lo[f]) / cell) * cell

    np.testing.assert_allclose(knots[0], blend(0, sample[:, 0]))
    # the atom holds more than 1/M of the rows: the quantiles are those of the other values
    np.testing.assert_allclose(knots[1], blend(1, sample[sample[:, 1] != 0, 1]))
    # four distinct values: every one an atom, the quantiles fall on the codes
    np.testing.assert_allclose(knots[2], blend(2, sample[:, 2]))
    np.testing.assert_allclose(knots[3], grid[3])
    np.testing.assert_allclose(knots[4], grid[4])  # a one-hot column fits alike on any knots
    gaps = np.diff(knots, axis=1)
    # half a uniform segment, less the rounding to the grid
    assert np.all(gaps >= ((1 - QUANTILE_SHARE) * CELLS_PER_PIECE - 1)
                  * (hi - lo)[:, None] / (CELLS_PER_PIECE * M) * (1 - 1e-9))
    # the skewed feature's knots crowd where its rows are
    assert np.median(knots[0]) < np.median(grid[0])


def test_degree_1_quantile_map_interpolates_its_weights_at_the_knots() -> None:
    rng = np.random.default_rng(3)
    X = rng.lognormal(size=(2000, 2)).astype(np.float32)
    fmap = BSplineMap(degree=1, n_bases=9, penalty_order=0, knots="quantile")
    fmap.fit(X.min(axis=0), X.max(axis=0)).fit_knots(X)
    w = rng.normal(size=18)
    curve = fmap.transform(X).astype(np.float64) @ w
    expected = sum(np.interp(X[:, f].astype(np.float64), fmap.knots_[f], w[9 * f:9 * (f + 1)])
                   for f in range(2))
    np.testing.assert_allclose(curve, expected, atol=1e-5)


@pytest.mark.parametrize("degree,order", [(1, 1), (2, 2), (3, 0)])
def test_kernels_embed_as_the_materialised_quantile_map(degree: int, order: int) -> None:
    rng = np.random.default_rng(4)
    # the third feature has two values and keeps uniform knots, the others do not
    X = np.column_stack([rng.lognormal(size=300), rng.normal(size=300),
                         rng.integers(0, 2, size=300), rng.exponential(size=300)]
                        ).astype(np.float32)
    for fmap in (BSplineMap(degree, 8, order, knots="quantile"),
                 BSplinePairMap(degree, 8, order, interactions=[(0, 3), (1, 2)], pair_bases=5,
                                knots="quantile")):
        fmap.fit(X.min(axis=0), X.max(axis=0)).fit_knots(X[:200])
        assert fmap.warp_[3] == 3  # features 0, 1 and 3 are warped
        # the map is the uniform map of the warped positions
        uniform = BSplineMap(degree, 8, order).fit(np.zeros(4), np.full(4, 8.0 - degree))
        Z = fmap.transform(X)
        np.testing.assert_allclose(Z[:, :32], uniform.transform(warp_positions(X, fmap.knots_)),
                                   atol=1e-5)
        emb = embedding_params(fmap)
        W = rng.normal(size=(2, emb.n_dims + 1))
        W_d = W.copy()
        blocks = W_d[:, :32].reshape(2, 4, 8)
        for _ in range(order):
            np.cumsum(blocks, axis=2, out=blocks)
        scores = decision_ovr_chunk(X, W_d, 1.0, *emb)
        np.testing.assert_allclose(scores, Z.astype(np.float64) @ W[:, :-1].T + W[:, -1],
                                   rtol=1e-5, atol=1e-5)


def test_quantile_maps_round_trip_through_their_dict() -> None:
    rng = np.random.default_rng(5)
    X = rng.lognormal(size=(500, 3)).astype(np.float32)
    for fmap in (BSplineMap(2, 10, 1, knots="quantile"),
                 BSplinePairMap(1, 10, 1, interactions=[(0, 1)], knots="quantile")):
        fmap.fit(X.min(axis=0), X.max(axis=0)).fit_knots(X)
        back = FeatureMap.from_dict(fmap.to_dict())
        assert type(back) is type(fmap) and back.knots == "quantile"
        np.testing.assert_array_equal(back.knots_, fmap.knots_)
        np.testing.assert_array_equal(back.transform(X), fmap.transform(X))
    # one-hot columns only: no knot moves, and the kernels take the uniform encoders
    onehot = (X > 1).astype(np.float32)
    fmap = BSplineMap(1, 10, 1, knots="quantile").fit(onehot.min(0), onehot.max(0))
    fmap.fit_knots(onehot)
    assert fmap.warp_.shape == (0,) and embedding_params(fmap).fpar.shape == (2 * 3 + 1,)
    np.testing.assert_array_equal(fmap.transform(onehot),
                                  BSplineMap(1, 10, 1).fit([0] * 3, [1] * 3).transform(onehot))
    # a map saved before knots existed reads as uniform
    old = BSplineMap(1, 6, 1).fit([0.0], [1.0]).to_dict()
    del old["params"]["knots"]
    assert FeatureMap.from_dict(old).knots == "uniform"


def test_bad_knot_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="knots must be one of"):
        BSplineMap(knots="log")
    with pytest.raises(ValueError, match="zero_preserving=False"):
        BSplineMap(zero_preserving=True, knots="quantile")
    fmap = BSplineMap(1, 6, 1, knots="quantile").fit([0.0], [1.0])
    bad = fmap.to_dict()
    bad["state"]["knots_"][0][2] = bad["state"]["knots_"][0][1]
    with pytest.raises(ValueError, match="not strictly increasing"):
        FeatureMap.from_dict(bad)
    bad = fmap.to_dict()
    bad["state"]["knots_"][0][2] += 0.01  # off the lookup grid, which the kernels rely on
    with pytest.raises(ValueError, match="not on the grid"):
        FeatureMap.from_dict(bad)
    X = np.random.default_rng(6).normal(size=(200, 2)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="partial_fit"):
        AdditiveSVC(knots="quantile").partial_fit(X, y, classes=[0, 1])


def test_additive_svc_places_quantile_knots_and_keeps_them_in_its_file(tmp_path) -> None:
    rng = np.random.default_rng(7)
    X = rng.exponential(size=(6000, 3)).astype(np.float32)
    # a curve that turns faster than the uniform grid's segments where most rows are
    y = (np.sin(8 * X[:, 0]) + 0.3 * rng.normal(size=6000) > 0).astype(int)
    # in the data's own units (spread_tails would map these exponential features first)
    model = AdditiveSVC(interactions=0, knots="quantile", spread_tails=False,
                        random_state=0).fit(X[:4000], y[:4000])
    fmap = model.feature_map_
    assert fmap.knots == "quantile"
    uniform = AdditiveSVC(interactions=0, spread_tails=False, random_state=0).fit(X[:4000],
                                                                                 y[:4000])
    assert uniform.feature_map_.knots == "uniform"  # the default
    # more knots below each feature's median than the uniform grid has there
    median = np.median(X, axis=0)[:, None]
    grid = uniform_knots(fmap.lo_, fmap.hi_, fmap.n_segments)
    assert np.all((fmap.knots_ < median).sum(axis=1) > (grid < median).sum(axis=1))
    assert model.score(X[4000:], y[4000:]) > uniform.score(X[4000:], y[4000:])
    path = model.save(tmp_path / "m.slm")
    back = AdditiveSVC.load(path)
    np.testing.assert_array_equal(back.feature_map_.knots_, fmap.knots_)
    np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))
    # quantile knots with pairs: the pair grids stay uniform in x
    paired = AdditiveSVC(interactions=[(0, 1)], knots="quantile", random_state=0).fit(X, y)
    pmap = paired.feature_map_
    flat = BSplinePairMap(pmap.degree, pmap.n_bases, pmap.penalty_order,
                          interactions=[(0, 1)], pair_bases=pmap.pair_bases)
    flat.fit(pmap.lo_, pmap.hi_)
    main = 3 * pmap.n_bases
    np.testing.assert_array_equal(pmap.transform(X)[:, main:], flat.transform(X)[:, main:])
    assert not np.array_equal(pmap.transform(X)[:, :main], flat.transform(X)[:, :main])
