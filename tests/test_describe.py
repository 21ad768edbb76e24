"""DescribePass against numpy on the whole array, for any chunking and merge order."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlearn.data.chunk import Chunk
from streamlearn.engine.describe import DescribePass, Description, quantile_label
from streamlearn.engine.passes import Pass, run_chunks
from tests.merging import run_merged

NAMES = ["a", "b", "c"]


def make_data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(3.0, 2.0, n), rng.exponential(1.0, n),
                         rng.integers(-5, 5, n)]).astype(np.float32)
    codes = rng.integers(0, 4, n).astype(np.int32)
    target = rng.normal(10.0, 3.0, n).astype(np.float32)
    return X, codes, target


def split(X, y, sizes, *, shuffle_within: bool = False):
    bounds = np.cumsum([0, *sizes])
    chunks = []
    for i in range(len(sizes)):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        Xc, yc = X[lo:hi], None if y is None else y[lo:hi]
        if shuffle_within:
            perm = np.random.default_rng(i).permutation(hi - lo)
            chunks.append(Chunk(X=np.ascontiguousarray(Xc[perm]),
                                y=None if yc is None else yc[perm], start=lo,
                                index=np.arange(lo, hi, dtype=np.int64)[perm]))
        else:
            chunks.append(Chunk(X=Xc, y=yc, start=lo))
    return chunks


def assert_matches_numpy(desc: Description, X: np.ndarray) -> None:
    X64 = X.astype(np.float64)
    assert desc.n_rows == X.shape[0]
    np.testing.assert_array_equal(desc.count, np.full(X.shape[1], X.shape[0]))
    # atol for means that cancel to zero, relative to the data's scale
    np.testing.assert_allclose(desc.mean, X64.mean(axis=0), rtol=1e-9,
                               atol=1e-12 * np.abs(X64).max())
    np.testing.assert_allclose(desc.std, X64.std(axis=0), rtol=1e-9)
    np.testing.assert_array_equal(desc.min, X.min(axis=0))
    np.testing.assert_array_equal(desc.max, X.max(axis=0))
    np.testing.assert_array_equal(desc.sample, X[desc.sample_rows])


def test_is_a_reduction_pass():
    pass_ = DescribePass(NAMES)
    assert isinstance(pass_, Pass) and pass_.kind == "reduction"


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 50), min_size=1, max_size=25),
       seed=st.integers(0, 2**32 - 1))
def test_classification_any_chunking(sizes, seed):
    n = sum(sizes)
    X, codes, _ = make_data(n, seed % 1000)
    pass_ = DescribePass(NAMES, sample_size=16, seed=seed, n_classes=4)
    whole = run_chunks(pass_, [Chunk(X=X, y=codes, start=0)])
    chunked = run_chunks(pass_, split(X, codes, sizes))
    merged = run_merged(pass_, split(X, codes, sizes, shuffle_within=True),
                        np.random.default_rng(seed))
    for desc in (whole, chunked, merged):
        assert_matches_numpy(desc, X)
        np.testing.assert_array_equal(desc.class_counts, np.bincount(codes, minlength=4))
        assert desc.class_counts.dtype == np.int64
        assert desc.target_mean is None and desc.target_std is None
        np.testing.assert_array_equal(desc.sample_rows, whole.sample_rows)
        np.testing.assert_array_equal(desc.sample, whole.sample)
        np.testing.assert_array_equal(desc.quantiles, whole.quantiles)
    assert len(whole.sample_rows) == min(16, n)


@pytest.mark.parametrize("drop", [True, False])
def test_rows_of_weight_zero_are_left_out_on_request(drop):
    # rows of weight 0, far out, spread over the chunks; the others weigh 1 or 7
    X, codes, _ = make_data(600, seed=5)
    rng = np.random.default_rng(5)
    zero = rng.random(600) < 0.3
    X[zero] = 1e4 * (1 + rng.random((int(zero.sum()), 3))).astype(np.float32)
    weight = np.where(zero, 0.0, rng.choice([1.0, 7.0], 600)).astype(np.float32)
    chunks = [Chunk(X=c.X, y=c.y, start=c.start, weight=weight[c.start:c.start + c.n_rows])
              for c in split(X, codes, [100] * 6)]
    pass_ = DescribePass(NAMES, sample_size=64, seed=3, n_classes=4, drop_zero_weight=drop)
    desc = run_merged(pass_, chunks, np.random.default_rng(1))
    kept = ~zero if drop else np.ones(600, dtype=bool)
    # the statistics of the kept rows, each once whatever its weight; the sample is the
    # one the kept rows alone give, their global row ids unchanged
    rows = np.flatnonzero(kept)
    alone = run_chunks(DescribePass(NAMES, sample_size=64, seed=3, n_classes=4),
                       [Chunk(X=X[rows], y=codes[rows], start=0, index=rows)])
    np.testing.assert_array_equal(desc.sample_rows, alone.sample_rows)
    np.testing.assert_array_equal(desc.sample, X[desc.sample_rows])
    np.testing.assert_array_equal(desc.quantiles, alone.quantiles)
    assert desc.n_rows == kept.sum()
    np.testing.assert_array_equal(desc.min, X[kept].min(axis=0))
    np.testing.assert_array_equal(desc.max, X[kept].max(axis=0))
    np.testing.assert_allclose(desc.mean, X[kept].astype(np.float64).mean(axis=0), rtol=1e-9)
    np.testing.assert_allclose(desc.std, X[kept].astype(np.float64).std(axis=0), rtol=1e-9)
    np.testing.assert_array_equal(desc.class_counts, np.bincount(codes[kept], minlength=4))


def test_regression_target_and_exact_quantiles_when_sample_holds_everything():
    X, _, target = make_data(700, seed=4)
    pass_ = DescribePass(NAMES, probabilities=(0.0, 0.1, 0.5, 0.999, 1.0), sample_size=1000)
    desc = run_merged(pass_, split(X, target, [100] * 7), np.random.default_rng(0))
    assert_matches_numpy(desc, X)
    assert desc.class_counts is None
    t64 = target.astype(np.float64)
    np.testing.assert_allclose(desc.target_mean, t64.mean(), rtol=1e-9)
    np.testing.assert_allclose(desc.target_std, t64.std(), rtol=1e-9)
    np.testing.assert_allclose(desc.quantiles, np.quantile(X.astype(np.float64),
                                                           desc.probabilities, axis=0))
    assert desc.quantiles.shape == (5, 3)


def test_no_target_and_integer_target_without_classes():
    X, codes, _ = make_data(50)
    desc = run_chunks(DescribePass(NAMES), split(X, None, [20, 30]))
    assert desc.class_counts is None and desc.target_mean is None
    assert str(desc).splitlines()[-1] == "target: none"
    with pytest.raises(ValueError, match="n_classes"):
        run_chunks(DescribePass(NAMES), split(X, codes, [50]))
    with pytest.raises(ValueError, match="class codes"):
        run_chunks(DescribePass(NAMES, n_classes=2), split(X, codes, [50]))


def test_to_pandas_and_str():
    X, codes, _ = make_data(400, seed=2)
    desc = run_chunks(DescribePass(NAMES, n_classes=4), split(X, codes, [150, 250]))
    frame = desc.to_pandas()
    assert list(frame.columns) == ["count", "mean", "std", "min", "q01", "q05", "q25", "q50",
                                   "q75", "q95", "q99", "max"]
    assert list(frame.index) == NAMES
    expected = pd.DataFrame(X.astype(np.float64), columns=NAMES).describe().T
    np.testing.assert_allclose(frame["mean"], expected["mean"], rtol=1e-9)
    np.testing.assert_allclose(frame["q50"], expected["50%"], rtol=1e-12)
    np.testing.assert_allclose(frame["std"], expected["std"] * np.sqrt(399 / 400), rtol=1e-9)
    text = str(desc)
    assert "400 rows, 3 features" in text
    counts = np.bincount(codes, minlength=4)
    assert f"{{0: {counts[0]}, 1: {counts[1]}" in text
    header = text.splitlines()[1].split()
    assert header[0] == "feature" and header[-1] == "max"
    lines = text.splitlines()[1:5]
    assert len({len(line) for line in lines}) == 1  # aligned


def test_str_truncates_many_features():
    names = [f"f{i}" for i in range(45)]
    X = np.random.default_rng(0).normal(size=(60, 45)).astype(np.float32)
    target = np.ones(60, dtype=np.float32)
    text = str(run_chunks(DescribePass(names, sample_size=8), split(X, target, [60])))
    assert "f29" in text and "f30" not in text
    assert "15 more features not shown" in text
    assert "target: mean 1, std 0" in text


def test_quantile_labels():
    assert [quantile_label(p) for p in (0.01, 0.05, 0.5, 1.0, 0.999, 0.125)] == [
        "q01", "q05", "q50", "q100", "q99.9", "q12.5"]


@pytest.mark.parametrize("target", ["classes", "float"])
def test_dict_round_trip_through_json(target):
    X, codes, y = make_data(90, seed=3)
    pass_ = DescribePass(NAMES, sample_size=32, n_classes=4 if target == "classes" else None)
    desc = run_chunks(pass_, split(X, codes if target == "classes" else y, [40, 50]))
    back = Description.from_dict(json.loads(json.dumps(desc.to_dict(), allow_nan=False)))
    for field in ("count", "mean", "std", "min", "max", "probabilities", "quantiles",
                  "sample", "sample_rows"):
        np.testing.assert_array_equal(getattr(back, field), getattr(desc, field))
        assert getattr(back, field).dtype == getattr(desc, field).dtype
    assert back.n_rows == desc.n_rows and back.feature_names == desc.feature_names
    assert back.target_mean == desc.target_mean and back.target_std == desc.target_std
    if target == "classes":
        np.testing.assert_array_equal(back.class_counts, desc.class_counts)
    else:
        assert back.class_counts is None


def test_empty_dataset():
    desc = run_chunks(DescribePass(NAMES), [])
    assert desc.n_rows == 0 and np.isnan(desc.mean).all() and np.isnan(desc.quantiles).all()
    assert desc.sample.shape == (0, 3)
    back = Description.from_dict(json.loads(json.dumps(desc.to_dict(), allow_nan=False)))
    assert np.isnan(back.std).all() and back.quantiles.shape == (7, 3)
    assert "0 rows" in str(desc)


def test_describe_lists_categories_and_summarises_codes():
    from streamlearn.engine.describe import describe

    city = np.array(["Rome", "Lima", "Oslo", "Lima"] * 25)
    frame = pd.DataFrame({"a": np.arange(100.0), "city": pd.Categorical(city),
                          "y": np.arange(100) % 2})
    summary = describe(frame)
    assert summary.categories == {"city": ["Lima", "Oslo", "Rome"]}
    codes = np.searchsorted(["Lima", "Oslo", "Rome"], city).astype(np.float64)
    j = summary.feature_names.index("city")
    assert summary.mean[j] == pytest.approx(codes.mean())
    assert (summary.min[j], summary.max[j]) == (0.0, 2.0)
    assert "city: 3 categories, coded 0..2 ['Lima', 'Oslo', 'Rome']" in str(summary)
    again = Description.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert again.categories == summary.categories


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=20),
       seed=st.integers(0, 2**32 - 1))
def test_missing_values_are_left_out_of_each_features_statistics(sizes, seed):
    """With ``missing``, a feature's count, moments and quantiles are those of its values
    that are there (numpy's nan-functions), whatever the chunking and merge order; a
    feature with no value has NaN statistics."""
    n = sum(sizes)
    X, codes, _ = make_data(n, seed % 1000)
    rng = np.random.default_rng(seed)
    X[rng.random(X.shape) < 0.3] = np.nan
    X[:, 2] = np.nan if seed % 5 == 0 else X[:, 2]  # sometimes a column with no value
    pass_ = DescribePass(NAMES, sample_size=4 * n, seed=seed, n_classes=4, missing=True)
    whole = run_chunks(pass_, [Chunk(X=X, y=codes, start=0)])
    merged = run_merged(pass_, split(X, codes, sizes, shuffle_within=True), rng)
    X64 = X.astype(np.float64)
    count = (~np.isnan(X)).sum(axis=0)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN expected
        expected = (np.nanmean(X64, axis=0), np.nanstd(X64, axis=0), np.nanmin(X, axis=0),
                    np.nanmax(X, axis=0), np.nanquantile(X64, pass_.probabilities, axis=0))
    for desc in (whole, merged):
        assert desc.n_rows == n
        np.testing.assert_array_equal(desc.count, count)
        np.testing.assert_allclose(desc.mean, expected[0], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(desc.std, expected[1], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(desc.min, expected[2])
        np.testing.assert_array_equal(desc.max, expected[3])
        np.testing.assert_allclose(desc.quantiles, expected[4], rtol=1e-12)
        np.testing.assert_array_equal(desc.class_counts, np.bincount(codes, minlength=4))
