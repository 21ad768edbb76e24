"""Feature map classes: fitting from streamed statistics, JSON round trips, input checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn.errors import SchemaError
from streamlearn.features import BSplineMap, FeatureMap, FourierMap, HermiteMap

STATS = {
    "minimum": np.array([0.0, -2.0, 1.0]),
    "maximum": np.array([1.0, 2.0, 1.0]),
    "mean": np.array([0.5, 0.0, 1.0]),
    "std": np.array([0.3, 1.0, 0.0]),
    "quantiles": np.array([[0.1, -1.5, 1.0], [0.9, 1.5, 1.0]]),
}


def all_maps():
    return [
        BSplineMap(3, 12, 2),
        BSplineMap(1, 5, 0, zero_preserving=True),
        FourierMap(4, 2),
        HermiteMap(3, 1, clip=4.0),
        HermiteMap(2, 2, zero_preserving=True),
    ]


def fitted(m: FeatureMap) -> FeatureMap:
    stats = dict(STATS, minimum=np.maximum(STATS["minimum"], 0.0)) if (
        isinstance(m, BSplineMap) and m.zero_preserving
    ) else STATS
    return m.fit_from_stats(**stats)


@pytest.mark.parametrize("m", all_maps(), ids=repr)
def test_json_round_trip_reproduces_the_transform(m):
    fitted(m)
    X = np.random.default_rng(0).uniform(-2, 2, (10, 3)).astype(np.float32)
    text = json.dumps(m.to_dict())
    for cls in (FeatureMap, type(m)):
        back = cls.from_dict(json.loads(text))
        assert type(back) is type(m) and back.get_params() == m.get_params()
        np.testing.assert_array_equal(back.transform(X), m.transform(X))


@pytest.mark.parametrize("m", all_maps(), ids=repr)
def test_shapes_and_csr(m):
    fitted(m)
    X = np.random.default_rng(1).uniform(-2, 2, (7, 3)).astype(np.float32)
    dense = m.transform(X)
    assert dense.dtype == np.float32
    assert dense.shape == (7, m.n_output_features(3)) == (7, 3 * m.n_columns_per_feature)
    indptr, indices, data = m.transform_csr(X)
    rebuilt = np.zeros_like(dense)
    rows = np.repeat(np.arange(7), np.diff(indptr))
    rebuilt[rows, indices] = data
    np.testing.assert_array_equal(rebuilt, dense)
    assert m.n_features_in_ == 3


def test_unfitted_map_serialises_and_refuses_to_transform():
    m = FeatureMap.from_dict(json.loads(json.dumps(BSplineMap().to_dict())))
    assert not m.is_fitted
    with pytest.raises(RuntimeError, match="not fitted"):
        m.transform(np.zeros((1, 1)))


def test_input_checks():
    m = BSplineMap(2, 6).fit([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(SchemaError, match="3 features"):
        m.transform(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="hi < lo"):
        BSplineMap().fit([1.0], [0.0])
    with pytest.raises(ValueError, match="not finite"):
        FourierMap().fit([np.nan], [1.0])
    with pytest.raises(ValueError, match="degree"):
        BSplineMap(degree=4)
    with pytest.raises(ValueError, match="n_bases"):
        BSplineMap(degree=3, n_bases=3)
    with pytest.raises(ValueError, match="penalty order"):
        BSplineMap(penalty_order=3)
    with pytest.raises(ValueError, match="penalty order"):
        HermiteMap(penalty_order=0)
    with pytest.raises(ValueError, match="type"):
        FourierMap.from_dict(BSplineMap().to_dict())
    with pytest.raises(ValueError, match="mean and std"):
        HermiteMap().fit_from_stats(minimum=[0.0], maximum=[1.0])


# -- indicator columns of categorical features --------------------------------------------
def test_category_indicators_are_pandas_one_hot_columns() -> None:
    import pandas as pd

    from streamlearn.features.category_indicators import (
        MAX_INDICATOR_CATEGORIES,
        CategoryIndicators,
    )

    rng = np.random.default_rng(0)
    lists = {"c": ("p", "q", "r", "s"), "two": ("no", "yes"),
             "many": tuple(range(MAX_INDICATOR_CATEGORIES + 1))}
    names = ["x", "c", "two", "many"]
    codes = np.c_[rng.normal(size=50), rng.integers(0, 4, 50), rng.integers(0, 2, 50),
                  rng.integers(0, MAX_INDICATOR_CATEGORIES + 1, 50)].astype(np.float32)
    indicators = CategoryIndicators.of(names, lists)
    # only the column of 3 to MAX_INDICATOR_CATEGORIES categories is widened
    assert indicators.feature_names == ("x", "c=p", "c=q", "c=r", "c=s", "two", "many")
    assert indicators.indicator_columns() == (1, 2, 3, 4)
    dummies = pd.get_dummies(pd.Categorical.from_codes(codes[:, 1].astype(int),
                                                       list(lists["c"]))).to_numpy(np.float32)
    wide = indicators.apply(codes)
    np.testing.assert_array_equal(wide, np.c_[codes[:, :1], dummies, codes[:, 2:]])
    np.testing.assert_array_equal(indicators.codes(wide), codes)
    # an unseen category (code 4), a filled-in missing value (-1) or a fraction: no indicator
    odd = codes[:3].copy()
    odd[:, 1] = [4.0, -1.0, 1.5]
    np.testing.assert_array_equal(indicators.apply(odd)[:, 1:5], 0.0)
    assert indicators.codes(indicators.apply(odd))[:, 1].tolist() == [4.0, 4.0, 4.0]
    # values of the columns read, summed per given column
    np.testing.assert_array_equal(indicators.fold(np.arange(7.0)), [0.0, 10.0, 5.0, 6.0])
    assert CategoryIndicators.of(names, {"two": lists["two"]}) is None


def test_a_filled_missing_category_sets_no_indicator() -> None:
    """``nan_policy=<number>`` fills the numeric columns; a missing value of a categorical
    column read as indicators sets none of them (a number there would be a category's
    code: 0.0 trained the missing rows as the first category), as pandas' dummies of the
    column leave a missing value without one."""
    import pandas as pd

    from streamlearn.data import open_dataset
    from streamlearn.models import SuperSparseClassifier

    rng = np.random.default_rng(3)
    n = 800
    frame = pd.DataFrame({"x": rng.normal(size=n),
                          "c": rng.choice([f"cat{i:03d}" for i in range(30)], n)})
    y = (frame["x"] > 0).astype(int).to_numpy()
    frame.loc[::4, "c"] = np.nan
    frame.loc[1::7, "x"] = np.nan
    dummies = pd.get_dummies(frame["c"], prefix="c", prefix_sep="=", dtype=np.float64)
    expected = pd.concat([frame[["x"]].fillna(0.0), dummies], axis=1)
    model = SuperSparseClassifier(n_prototypes=5)
    dataset = open_dataset(frame.assign(label=y), target="label", nan_policy=0.0)
    read = model._with_category_indicators(dataset)
    assert list(read.feature_names) == list(expected.columns)
    rows = np.concatenate([chunk.X for chunk in read.chunks()])
    np.testing.assert_allclose(rows.sum(axis=0), expected.to_numpy().sum(axis=0), rtol=1e-6)
    # the fit reads them so: its centring shift is the mean of pandas' columns
    model.fit(frame, y, nan_policy=0.0)
    np.testing.assert_allclose(model.shift_, expected.to_numpy().mean(axis=0), rtol=1e-5,
                               atol=1e-7)
