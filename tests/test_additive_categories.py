"""An additive model learns one value per category of a categorical feature."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from streamlearn.models import AdditiveSVC

CATEGORIES = np.array(list("abcdefg"))
EFFECT = np.array([1.5, -1.5, 1.5, -1.5, 1.0, -1.0, 1.5])


def _problem(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    code = rng.integers(0, len(CATEGORIES), n)
    x = rng.normal(size=n)
    y = (EFFECT[code] + 0.5 * x + 0.3 * rng.normal(size=n) > 0).astype(int)
    frame = pd.DataFrame({"colour": pd.Categorical(CATEGORIES[code], categories=CATEGORIES),
                          "x": x})
    return frame, y


def test_each_category_gets_its_own_value() -> None:
    # 7 categories plus the unseen-category code fit on 8 degree-1 bases: one knot each,
    # so the zig-zag of effects (no order in the codes) is learned exactly as one-hot
    # columns learn it
    train, y = _problem(3000, 0)
    test, y_test = _problem(2000, 1)
    model = AdditiveSVC(degree=1, n_bases=8, progress=False, random_state=0).fit(train, y)
    probe = pd.DataFrame({"colour": pd.Categorical(CATEGORIES, categories=CATEGORIES),
                          "x": np.zeros(len(CATEGORIES))})
    shape = model.svm_scores(probe).ravel()
    assert np.array_equal(np.sign(shape), np.sign(EFFECT))

    def one_hot(frame: pd.DataFrame) -> np.ndarray:
        return pd.get_dummies(frame["colour"]).assign(x=frame["x"]).to_numpy(float)

    # a category unseen in fit sits on a knot no training row touched: its weight is zero,
    # so it scores as the model without that feature's term, not as the last category
    unseen = pd.DataFrame({"colour": ["h", "g"], "x": [0.0, 0.0]})
    with pytest.warns(UserWarning, match="colour"):
        new, last = model.svm_scores(unseen).ravel()
    assert abs(new - model.intercept_[0]) < 0.25 * abs(last - model.intercept_[0])

    reference = LogisticRegression().fit(one_hot(train), y).score(one_hot(test), y_test)
    assert model.score(test, y_test) >= reference - 0.01


def test_partial_fit_codes_a_categorical_table_as_fit_does() -> None:
    # the first call takes the categories of the table (all of a pandas category dtype),
    # later calls and predictions code by them; the reference is partial_fit on the codes
    # with the same layout given as feature_range
    train, y = _problem(3000, 2)
    test, y_test = _problem(1000, 3)
    model = AdditiveSVC(degree=1, n_bases=8, progress=False, random_state=0)
    codes = train.assign(colour=train["colour"].cat.codes.astype(np.float64))
    x = train["x"].to_numpy(np.float32).astype(np.float64)
    first = slice(0, 1000)
    room = model.n_bases - model.degree
    reference = AdditiveSVC(degree=1, n_bases=8, progress=False, random_state=0,
                            feature_range=np.array([[0.0, room], [x[first].min(),
                                                                  x[first].max()]]))
    for start in range(0, 3000, 1000):
        rows = slice(start, start + 1000)
        model.partial_fit(train[rows], y[rows], classes=[0, 1])
        reference.partial_fit(codes[rows], y[rows], classes=[0, 1])
    assert model.categories_ == {"colour": tuple(CATEGORIES)}
    test_codes = test.assign(colour=test["colour"].cat.codes.astype(np.float64))
    np.testing.assert_allclose(model.svm_scores(test), reference.svm_scores(test_codes),
                               rtol=1e-6, atol=1e-9)
    assert model.score(test, y_test) > 0.9


def test_auto_bases_give_every_category_of_the_longest_list_a_knot() -> None:
    # 40 categories with effects in no order of their codes: n_bases="auto" starts at
    # 40 + degree bases, where each has a knot of its own; 8 bases (the numeric default's
    # first count) smear neighbouring codes together
    rng = np.random.default_rng(5)
    names = np.array([f"c{k:02d}" for k in range(40)])
    effect = rng.choice([-1.5, 1.5], size=40)

    def problem(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
        r = np.random.default_rng(seed)
        code = r.integers(0, 40, n)
        x = r.normal(size=n)
        y = (effect[code] + 0.5 * x + 0.3 * r.normal(size=n) > 0).astype(int)
        return pd.DataFrame({"group": pd.Categorical(names[code], categories=names),
                             "x": x}), y

    train, y = problem(8000, 6)
    test, y_test = problem(4000, 7)
    model = AdditiveSVC(interactions=0, random_state=0).fit(train, y)
    assert model.n_bases_ == 40 + model.degree
    assert not hasattr(model, "bases_tried_")  # no count of the grid above it
    smeared = AdditiveSVC(n_bases=8, interactions=0, random_state=0).fit(train, y)
    assert model.score(test, y_test) > smeared.score(test, y_test) + 0.05
    probe = pd.DataFrame({"group": pd.Categorical(names, categories=names),
                          "x": np.zeros(40)})
    assert np.array_equal(np.sign(model.svm_scores(probe).ravel()), np.sign(effect))
    # a short list keeps the numeric grid: 8 bases hold 7 categories
    seven, y7 = _problem(3000, 8)
    assert AdditiveSVC(interactions=0, random_state=0).fit(seven, y7).bases_tried_[0][0] == 8


def test_a_pair_with_a_categorical_feature_gives_each_category_its_own_surface(
        tmp_path) -> None:
    # each of 20 categories flips the sign of x0's effect: the pair's categorical axis has
    # a node per category, so no category borrows its neighbours' slope (on the uniform
    # 8-node grid over the codes, 15 % of the categories came out with the wrong sign)
    from sklearn.ensemble import HistGradientBoostingClassifier

    from streamlearn.io.model_file import load_model, save_model

    k = 20
    names = np.array([f"c{j:02d}" for j in range(k)])
    sign = np.random.default_rng(20).choice([-1.0, 1.0], k)

    def problem(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
        r = np.random.default_rng(seed)
        code = r.integers(0, k, n)
        x = r.uniform(-1, 1, n)
        return (pd.DataFrame({"x0": x, "cat": pd.Categorical(names[code], categories=names)}),
                (sign[code] * x > 0).astype(int))

    train, y = problem(6000, 21)
    test, y_test = problem(3000, 22)
    model = AdditiveSVC(interactions=[("x0", "cat")], pair_bases=8, n_bases=24,
                        random_state=0).fit(train, y)
    np.testing.assert_array_equal(model.feature_map_.axis_nodes_, [8, k + 1])
    boosted = HistGradientBoostingClassifier(categorical_features=[1], random_state=0).fit(
        train.assign(cat=train["cat"].cat.codes), y)
    reference = boosted.score(test.assign(cat=test["cat"].cat.codes), y_test)
    assert model.score(test, y_test) >= reference - 0.01
    # the surface at the largest x0 has each category's own sign
    surfaces = model.interaction_surfaces(n_points=5)
    edge = surfaces[surfaces.value_a == surfaces.value_a.max()].set_index("value_b")
    assert list(edge.index) == list(names)
    np.testing.assert_array_equal(np.sign(edge.contribution.to_numpy(float)), sign)
    loaded = load_model(save_model(model, tmp_path / "pair.slm"))
    np.testing.assert_array_equal(loaded.feature_map_.axis_nodes_, [8, k + 1])
    np.testing.assert_array_equal(loaded.predict_proba(test), model.predict_proba(test))
