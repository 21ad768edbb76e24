"""Crowded features mapped before the B-spline bases (``spread_tails``)."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.data import open_dataset
from streamlearn.engine.describe import describe
from streamlearn.features.tail_transform import (
    CROWDED,
    MIDDLE_GAIN,
    SEGMENTS,
    TailTransform,
    choose_tail_transform,
    crowding,
    middle_width,
    squeezing_tails,
)
from streamlearn.models import AdditiveSVC
from streamlearn.solvers.additive.driver import (
    DESCRIBE_MIN_CHUNKS,
    DESCRIBE_SAMPLE_CHUNKS,
    DESCRIBE_SAMPLE_ROWS,
)


def _heavy(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two lognormal features whose log enters the label, a normal one, and a column of
    zeros with a heavy tail of positive values (a capital-gain column)."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, 4), dtype=np.float32)
    X[:, :2] = rng.lognormal(0.0, 2.0, size=(n, 2))
    X[:, 2] = rng.normal(size=n)
    X[:, 3] = np.where(rng.random(n) < 0.8, 0.0, rng.lognormal(8.0, 1.5, size=n))
    f = (np.log(X[:, 0]) + np.sin(np.log(X[:, 1])) + X[:, 2]
         + 0.5 * np.log1p(X[:, 3]) - 1.0)
    return X, (f + rng.normal(0.0, 0.5, n) > 0).astype(int)


def test_crowding_is_the_largest_share_of_a_histogram() -> None:
    rng = np.random.default_rng(0)
    values = rng.exponential(size=1000)
    lo, hi = float(values.min()), float(values.max())
    counts, _ = np.histogram(values, bins=SEGMENTS, range=(lo, hi))
    assert crowding(values, lo, hi) == pytest.approx(counts.max() / values.size)
    assert crowding(np.linspace(0, 1, 800), 0.0, 1.0) == pytest.approx(1 / SEGMENTS)


@pytest.mark.parametrize("outlier", [3e10, 1e12, -1e12, 1e30, float(np.finfo(np.float32).max)])
def test_one_far_outlier_is_mapped_though_its_crowding_cannot_halve(outlier: float) -> None:
    """The map takes the outlier's logarithm: the other rows stay inside one or two
    segments of the mapped range, but their middle half widens by orders of magnitude."""
    x = np.random.default_rng(0).normal(size=300).astype(np.float32)
    x[0] = outlier
    sample = x[:, None]
    t = TailTransform.from_description(sample, sample.min(axis=0), sample.max(axis=0))
    assert t is not None and t.features.tolist() == [0]
    lo, hi = float(x.min()), float(x.max())
    mapped = t.apply(sample)[:, 0].astype(np.float64)
    assert np.all(np.isfinite(mapped))
    mlo, mhi = float(mapped.min()), float(mapped.max())
    # a histogram and percentiles, not the module's statistics
    before = np.histogram(x.astype(np.float64), bins=SEGMENTS, range=(lo, hi))[0].max() / 300
    after = np.histogram(mapped, bins=SEGMENTS, range=(mlo, mhi))[0].max() / 300
    assert before > CROWDED and after > before / 2  # the crowding rule alone would not map
    q1, q3 = np.percentile(x.astype(np.float64), [25, 75])
    assert middle_width(x.astype(np.float64), lo, hi) == pytest.approx((q3 - q1) / (hi - lo))
    m1, m3 = np.percentile(mapped, [25, 75])
    assert (m3 - m1) / (mhi - mlo) >= MIDDLE_GAIN * (q3 - q1) / (hi - lo)
    # the other rows keep their spread: their mapped middle half spans at least a tenth of
    # the mapped range where it was a 1e-10th of the raw one
    assert (m3 - m1) / (mhi - mlo) > 0.1 / np.log10(abs(outlier))


def test_the_choice_leaves_categorical_columns_and_keeps_squeezed_features() -> None:
    from types import SimpleNamespace

    X, _ = _heavy(4096, seed=1)
    dataset = SimpleNamespace(feature_names=("a", "b", "c", "gain"),
                              categories={"b": list(range(5)), "other": [0, 1]})
    lo, hi = X.min(axis=0), X.max(axis=0)
    chosen = choose_tail_transform(dataset, X, lo, hi)
    expected = TailTransform.from_description(X, lo, hi, skip=[1])
    np.testing.assert_array_equal(chosen.features, [0, 3])
    np.testing.assert_array_equal(chosen.scale, expected.scale)
    # with the rows' standard deviations, only the features their standardisation squeezes
    # (the capital-gain column's middle half is its zeros: no robust spread to squeeze)
    std = X.astype(np.float64).std(axis=0)
    squeezed = choose_tail_transform(dataset, X, lo, hi, std)
    np.testing.assert_array_equal(squeezed.features,
                                  squeezing_tails(expected, X, std).features)
    np.testing.assert_array_equal(squeezed.features, [0])
    q1, q3 = np.quantile(X[:, 0], [0.25, 0.75])
    std[0] = (q3 - q1) / 1.349  # a standard deviation at its robust spread
    assert choose_tail_transform(dataset, X, lo, hi, std) is None


def test_the_rule_maps_crowded_features_only() -> None:
    X, _ = _heavy(4096, seed=1)
    codes = np.random.default_rng(2).integers(0, 40, size=4096).astype(np.float32)
    codes[:5] = 1e4  # crowded, but a categorical column's codes are left alone
    spiky = np.random.default_rng(3).integers(0, 10, size=4096).astype(np.float32)
    spiky[0] = 1e6  # ten values: a code or a small count, left alone
    sample = np.column_stack([X, codes, spiky])
    t = TailTransform.from_description(sample, sample.min(axis=0), sample.max(axis=0),
                                       skip=[4])
    assert t is not None
    np.testing.assert_array_equal(t.features, [0, 1, 3])
    # the mapped features are spread: no segment holds more than the crowded share
    mapped = t.apply(sample)
    for f in t.features:
        before = crowding(sample[:, f][sample[:, f] != 0] if f == 3 else sample[:, f],
                          float(sample[:, f].min()), float(sample[:, f].max()))
        rest = mapped[:, f][sample[:, f] != 0] if f == 3 else mapped[:, f]
        after = crowding(rest.astype(np.float64), float(mapped[:, f].min()),
                         float(mapped[:, f].max()))
        assert before > CROWDED and after <= before / 2
    # the zeros of the capital-gain column are its centre: they stay at zero
    k = int(np.flatnonzero(t.features == 3)[0])
    assert t.centre[k] == 0.0 and np.all(mapped[sample[:, 3] == 0, 3] == 0)
    # normal features are not crowded
    assert TailTransform.from_description(X[:, 2:3], X[:, 2:3].min(0), X[:, 2:3].max(0)) is None


def test_apply_bounds_inverse_and_describe_agree_with_apply() -> None:
    X, _ = _heavy(5000, seed=4)
    desc = describe(open_dataset(X, chunk_rows=1000))
    t = TailTransform.from_description(desc.sample, desc.min, desc.max)
    assert t is not None
    mapped = t.apply(X)
    assert mapped.dtype == np.float32 and not np.shares_memory(mapped, X)
    np.testing.assert_array_equal(mapped[:, 2], X[:, 2])  # not mapped
    k = 0
    np.testing.assert_allclose(mapped[:, 0], np.arcsinh((X[:, 0] - t.centre[k]) / t.scale[k]),
                               rtol=1e-6)
    np.testing.assert_allclose(t.inverse(mapped[:, 0], 0), X[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(t.inverse(mapped[:, 2], 2), X[:, 2])
    # the mapped range is the range of the mapped rows, exactly (float32 rounding)
    mapped_desc = t.describe(desc)
    np.testing.assert_array_equal(mapped_desc.min, mapped.min(axis=0))
    np.testing.assert_array_equal(mapped_desc.max, mapped.max(axis=0))
    np.testing.assert_array_equal(mapped_desc.sample, t.apply(desc.sample))
    np.testing.assert_allclose(mapped_desc.quantiles[:, 0],
                               np.arcsinh((desc.quantiles[:, 0] - t.centre[0]) / t.scale[0]),
                               rtol=1e-6)


def test_preimage_finds_the_values_that_map_onto_mapped_values() -> None:
    """The inverse is off by float32 rounding; the preimage is a value that maps exactly
    onto the mapped one, an integer where one does."""
    transform = TailTransform(np.array([1]), np.array([0.0]), np.array([37.5]))
    rng = np.random.default_rng(3)
    X = np.zeros((600, 2), dtype=np.float32)
    X[:, 1] = np.concatenate([[594, 2463, 7688, 15024, 99999, 3.25, -41.5],
                              rng.lognormal(5, 2, 593).astype(np.float32)])
    mapped = transform.apply(X)[:, 1]
    back = transform.preimage(mapped, 1)
    np.testing.assert_array_equal(transform.apply(np.stack([X[:, 0], back], axis=1))[:, 1],
                                  mapped)
    np.testing.assert_array_equal(back[:7], [594, 2463, 7688, 15024, 99999, 3.25, -41.5])
    assert not np.array_equal(transform.inverse(mapped[:7], 1), back[:7])
    np.testing.assert_array_equal(transform.preimage(mapped[:3], 0), mapped[:3])


def test_a_fit_with_spread_tails_is_the_fit_on_the_mapped_rows(tmp_path) -> None:
    X, y = _heavy(12000, seed=5)
    Xt, yt = _heavy(6000, seed=6)
    model = AdditiveSVC(random_state=0).fit(X[:8000], y[:8000])
    t = model.feature_transform_
    np.testing.assert_array_equal(t.features, [0, 1, 3])
    # the same model as one fitted, without the rule, on rows mapped beforehand
    reference = AdditiveSVC(spread_tails=False, random_state=0).fit(t.apply(X[:8000]),
                                                                     y[:8000])
    assert not hasattr(reference, "feature_transform_")
    assert reference.n_bases_ == model.n_bases_
    assert reference.interactions_ == model.interactions_
    np.testing.assert_allclose(model.decision_function(Xt),
                               reference.decision_function(t.apply(Xt)), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.term_contributions(Xt[:50]),
                               reference.term_contributions(t.apply(Xt[:50])), atol=1e-9)
    # and better than the uniform knots over the raw range, where most rows share a segment
    raw = AdditiveSVC(spread_tails=False, random_state=0).fit(X[:8000], y[:8000])
    assert model.score(Xt, yt) > raw.score(Xt, yt) + 0.03
    # curves are reported at the original values, spaced evenly in the mapped ones
    shapes = model.shape_functions(n_points=9)
    x0 = shapes[shapes.feature == "x0"].value.to_numpy()
    assert x0[0] == pytest.approx(float(X[:8000, 0].min()), rel=1e-4)
    assert x0[-1] == pytest.approx(float(X[:8000, 0].max()), rel=1e-4)
    np.testing.assert_allclose(np.diff(t.apply(np.column_stack([x0] * 4))[:, 0]),
                               np.diff(t.apply(np.column_stack([x0] * 4))[:, 0])[0], rtol=1e-3)
    ref_shapes = reference.shape_functions(n_points=9)
    np.testing.assert_allclose(shapes.contribution, ref_shapes.contribution, atol=1e-9)
    # the model file keeps the map
    back = AdditiveSVC.load(model.save(tmp_path / "m.slm"))
    np.testing.assert_array_equal(back.feature_transform_.scale, t.scale)
    np.testing.assert_array_equal(back.decision_function(Xt), model.decision_function(Xt))
    # partial_fit continues on the mapped features
    before = model.coef_d_.copy()
    model.partial_fit(X[8000:9000], y[8000:9000])
    assert not np.array_equal(model.coef_d_, before)
    assert np.isfinite(model.decision_function(Xt)).all()


def test_the_rule_is_off_where_it_does_not_apply() -> None:
    X, y = _heavy(4000, seed=7)
    lo, hi = X.min(axis=0), X.max(axis=0)
    for params in ({"spread_tails": False}, {"feature_range": np.column_stack([lo, hi])},
                   {"embedding": "linear", "zero_preserving": True},
                   {"embedding": "linear", "standardize": False},
                   {"zero_preserving": True, "interactions": 0}):
        rows = np.abs(X) if "zero_preserving" in params else X  # non-negative for it
        model = AdditiveSVC(random_state=0, **params).fit(rows, y)
        assert not hasattr(model, "feature_transform_"), params


def test_data_read_from_a_sample_of_chunks_is_mapped_by_the_sample_rule() -> None:
    # the rule comes from the sampled chunks' describe pass and maps every row of the one
    # training on all of them
    size = DESCRIBE_SAMPLE_ROWS // DESCRIBE_SAMPLE_CHUNKS
    X, y = _heavy(DESCRIBE_MIN_CHUNKS * size, seed=8)
    params = dict(epochs=2, tol=None, chunk_rows=size, interactions=0, random_state=0)
    model = AdditiveSVC(**params).fit(X, y)
    t = model.feature_transform_
    np.testing.assert_array_equal(t.features, [0, 1, 3])
    reference = AdditiveSVC(spread_tails=False, **params).fit(t.apply(X), y)
    assert reference.n_bases_ == model.n_bases_
    np.testing.assert_allclose(model.decision_function(X[:2000]),
                               reference.decision_function(t.apply(X[:2000])), atol=1e-9)


def test_dask_workers_read_the_rows_through_the_map(dask_client) -> None:
    from streamlearn.engine import DaskEngine

    X, y = _heavy(6000, seed=9)
    params = dict(n_bases=8, interactions=0, chunk_rows=1000, random_state=0)
    local = AdditiveSVC(**params).fit(X, y)
    remote = AdditiveSVC(**params).fit(X, y, engine=DaskEngine(dask_client))
    np.testing.assert_array_equal(remote.feature_transform_.features,
                                  local.feature_transform_.features)
    np.testing.assert_allclose(remote.feature_transform_.scale, local.feature_transform_.scale)
    # the workers' partitions of each epoch are mixed, not walked in turn: the two models
    # agree as a model trained on mapped rows, far from one on raw rows
    raw = AdditiveSVC(spread_tails=False, **params).fit(X, y)
    Xt, yt = _heavy(4000, seed=10)
    assert remote.score(Xt, yt) > raw.score(Xt, yt) + 0.03
    assert abs(remote.score(Xt, yt) - local.score(Xt, yt)) < 0.02


def test_shareboost_linear_columns_read_the_mapped_features(tmp_path) -> None:
    import scipy.sparse as sp

    from streamlearn.models import ShareBoostClassifier

    X, y = _heavy(6000, seed=11)
    Xt, yt = _heavy(3000, seed=12)
    model = ShareBoostClassifier(features="linear").fit(X, y)
    t = model.feature_transform_
    np.testing.assert_array_equal(t.features, [0, 1, 3])
    # the same model as one fitted, without the rule, on rows mapped beforehand
    reference = ShareBoostClassifier(features="linear", spread_tails=False).fit(t.apply(X), y)
    assert not hasattr(reference, "feature_transform_")
    np.testing.assert_array_equal(model.selected_features_, reference.selected_features_)
    np.testing.assert_allclose(model.decision_function(Xt),
                               reference.decision_function(t.apply(Xt)), rtol=1e-9, atol=1e-9)
    raw = ShareBoostClassifier(features="linear", spread_tails=False).fit(X, y)
    assert model.score(Xt, yt) > raw.score(Xt, yt) + 0.03
    # sparse rows are mapped too (densified a block at a time), and the file keeps the map
    np.testing.assert_allclose(model.decision_function(sp.csr_matrix(Xt[:100])),
                               model.decision_function(Xt[:100]), rtol=1e-9)
    back = ShareBoostClassifier.load(model.save(tmp_path / "m.slm"))
    np.testing.assert_array_equal(back.decision_function(Xt), model.decision_function(Xt))
    # stumps do not depend on a monotone map of their feature: none is made
    assert not hasattr(ShareBoostClassifier(features="stumps", n_rounds=5).fit(X, y),
                       "feature_transform_")
