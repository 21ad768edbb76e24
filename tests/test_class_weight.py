"""``class_weight``: factors on the rows' weights, checked against scikit-learn's rule and
against the same factors given as sample weights."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.utils.class_weight import compute_class_weight

from streamlearn import open_dataset
from streamlearn.io import load_model
from streamlearn.models import (
    AdditiveSVC,
    MixtureSVC,
    ShareBoostClassifier,
    SuperSparseClassifier,
)
from streamlearn.models.class_weight import class_counts, class_factors

CLASSIFIERS = {
    "additive": lambda **kw: AdditiveSVC(interactions=0, n_bases=8, **kw),
    "mixture": lambda **kw: MixtureSVC(n_components=4, **kw),
    "shareboost": lambda **kw: ShareBoostClassifier(n_rounds=6, **kw),
    "supersparse": lambda **kw: SuperSparseClassifier(n_prototypes=12, lam=1e-3, **kw),
}


def _rare_class_rows(n: int = 1500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(n, 5, n_informative=3, n_classes=3, weights=[0.8, 0.15],
                               class_sep=0.8, random_state=seed)
    return X.astype(np.float32), np.array(["common", "middle", "rare"])[y]


def test_balanced_factors_follow_scikit_learn() -> None:
    _, y = _rare_class_rows()
    classes = np.unique(y)
    frame = pd.DataFrame({"x": np.zeros(len(y)), "y": y})
    dataset = open_dataset(frame, target="y", chunk_rows=97)
    counts = class_counts(dataset)
    np.testing.assert_array_equal(counts, [np.sum(y == c) for c in classes])
    np.testing.assert_allclose(class_factors("balanced", classes, counts),
                               compute_class_weight("balanced", classes=classes, y=y))
    np.testing.assert_array_equal(class_factors({"rare": 4, "common": 0.5}, classes),
                                  [0.5, 1.0, 4.0])
    np.testing.assert_array_equal(class_factors(None, classes), [1.0, 1.0, 1.0])


def test_balanced_counts_sum_the_sample_weights_as_scikit_learn_does() -> None:
    _, y = _rare_class_rows()
    classes = np.unique(y)
    w = np.random.default_rng(3).integers(0, 4, len(y)).astype(np.float32)
    frame = pd.DataFrame({"x": np.zeros(len(y)), "y": y, "w": w})
    dataset = open_dataset(frame, target="y", weight="w", chunk_rows=97)
    counts = class_counts(dataset)
    np.testing.assert_allclose(counts, [w[y == c].sum() for c in classes])
    np.testing.assert_allclose(
        class_factors("balanced", classes, counts),
        compute_class_weight("balanced", classes=classes, y=y, sample_weight=w))


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_balanced_rows_of_weight_zero_count_as_absent(name: str) -> None:
    X, y = _rare_class_rows(600)
    w = np.where(np.arange(len(y)) % 3 == 0, 0.0, 1.0).astype(np.float32)
    kept = w > 0
    zero = CLASSIFIERS[name](class_weight="balanced").fit(X, y, sample_weight=w)
    absent = CLASSIFIERS[name](class_weight="balanced").fit(X[kept], y[kept])
    np.testing.assert_allclose(zero.class_weight_, absent.class_weight_, rtol=1e-12)
    np.testing.assert_allclose(
        zero.class_weight_,
        compute_class_weight("balanced", classes=np.unique(y), y=y, sample_weight=w))


@pytest.mark.parametrize("bad, words", [({"nope": 2.0}, "not among the classes"),
                                        ({"common": 0, "middle": 0, "rare": 0}, "factor 0"),
                                        ({"rare": -1.0}, "finite non-negative"),
                                        ({"rare": "x"}, "finite non-negative")])
def test_bad_class_weights_are_named_before_training(bad: dict, words: str) -> None:
    X, y = _rare_class_rows(300)
    model = AdditiveSVC(class_weight=bad)
    with pytest.raises(ValueError, match=words):
        model.fit(X, y)
    assert not model.is_fitted


def test_dataset_weights_rows_by_their_class() -> None:
    X, y = _rare_class_rows(500)
    w = np.linspace(0.5, 2.0, len(y)).astype(np.float32)
    dataset = open_dataset(X, target=y, weight=w, chunk_rows=64)
    factors = np.array([1.0, 3.0, 10.0])
    weighted = dataset.with_class_weight(factors)
    assert weighted.weighted and not open_dataset(X, target=y).weighted
    for shuffle in (False, True):
        chunks = list(weighted.chunks(shuffle=shuffle, seed=1))
        rows = np.concatenate([c.start + np.arange(c.n_rows) if c.index is None else c.index
                               for c in chunks])
        got = np.concatenate([c.weight for c in chunks])
        codes = np.searchsorted(dataset.classes, y)
        np.testing.assert_allclose(got, (factors[codes] * w)[rows], rtol=1e-6)


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_class_weight_trains_the_model_of_the_same_sample_weights(name: str) -> None:
    X, y = _rare_class_rows()
    factors = {"common": 0.4, "middle": 1.5, "rare": 6.0}
    weighted = CLASSIFIERS[name](class_weight=factors).fit(X, y)
    as_samples = CLASSIFIERS[name]().fit(X, y, sample_weight=np.array(
        [factors[label] for label in y], dtype=np.float32))
    np.testing.assert_allclose(weighted.decision_function(X), as_samples.decision_function(X),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weighted.class_weight_, [0.4, 1.5, 6.0])
    assert not hasattr(as_samples, "class_weight_")


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_balanced_class_weight_finds_the_rare_class(name: str, tmp_path) -> None:
    X, y = _rare_class_rows(3000, seed=1)
    Xt, yt = _rare_class_rows(3000, seed=1)
    plain = CLASSIFIERS[name]().fit(X[:2000], y[:2000])
    balanced = CLASSIFIERS[name](class_weight="balanced").fit(X[:2000], y[:2000])

    def rare_recall(model):
        return np.mean(model.predict(Xt[2000:])[yt[2000:] == "rare"] == "rare")

    assert rare_recall(balanced) > rare_recall(plain)
    np.testing.assert_allclose(
        balanced.class_weight_,
        compute_class_weight("balanced", classes=np.unique(y[:2000]), y=y[:2000]))
    path = balanced.save(tmp_path / "m.slm")
    loaded = load_model(path)
    assert loaded.class_weight == "balanced"
    np.testing.assert_array_equal(loaded.predict(Xt), balanced.predict(Xt))


@pytest.mark.parametrize("name", ["additive", "mixture", "supersparse"])
def test_partial_fit_takes_a_dict_and_refuses_balanced(name: str) -> None:
    X, y = _rare_class_rows(900)
    factors = {"rare": 5.0}
    classes = np.unique(y)
    weighted = CLASSIFIERS[name](class_weight=factors)
    as_samples = CLASSIFIERS[name]()
    for a in range(0, 900, 300):
        rows = slice(a, a + 300)
        weighted.partial_fit(X[rows], y[rows], classes=classes)
        as_samples.partial_fit(X[rows], y[rows], classes=classes,
                               sample_weight=np.where(y[rows] == "rare", 5.0, 1.0))
    np.testing.assert_allclose(weighted.decision_function(X), as_samples.decision_function(X),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="partial_fit does not see"):
        CLASSIFIERS[name](class_weight="balanced").partial_fit(X, y, classes=classes)


def test_labels_written_as_text_name_their_classes() -> None:
    classes = np.array([0, 1, 2])
    np.testing.assert_array_equal(class_factors({"2": 3.0, 0: 0.5}, classes), [0.5, 1.0, 3.0])


def test_command_line_takes_class_weight_as_a_param(tmp_path) -> None:
    from click.testing import CliRunner

    from streamlearn.cli import cli

    X, y = _rare_class_rows(1200)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame["label"] = (y == "rare").astype(np.int64)
    data = tmp_path / "train.parquet"
    frame.to_parquet(data)
    for value, expected in (("balanced", compute_class_weight(
            "balanced", classes=np.array([0, 1]), y=frame["label"].to_numpy())),
                            ('{"1": 4}', [1.0, 4.0])):
        out = tmp_path / "m.slm"
        result = CliRunner().invoke(cli, ["train", str(data), "-t", "label", "-p",
                                          f"class_weight={value}", "-p", "interactions=0",
                                          "-o", str(out), "-q"])
        assert result.exit_code == 0, result.output
        np.testing.assert_allclose(load_model(out).class_weight_, expected)


@pytest.mark.parametrize("name", ["AdditiveSVC", "MixtureSVC", "SuperSparseClassifier"])
def test_partial_fit_records_the_factors_of_its_class_weight(name: str) -> None:
    import streamlearn.models as models

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = np.where(X[:, 0] > 0.8, "rare", "common")
    model = getattr(models, name)(class_weight={"rare": 5.0})
    model.partial_fit(X, y, classes=["common", "rare"])
    np.testing.assert_array_equal(model.class_weight_, [1.0, 5.0])
    np.testing.assert_array_equal(model.partial_fit(X, y).class_weight_, [1.0, 5.0])


@pytest.mark.parametrize("name", ["AdditiveSVC", "MixtureSVC", "ShareBoostClassifier",
                                  "SuperSparseClassifier", "SparseJSBoostClassifier"])
def test_weights_that_leave_one_class_are_refused_by_every_classifier(name, tmp_path):
    import pandas as pd

    import streamlearn.models as models
    from streamlearn import open_dataset
    from streamlearn.errors import LabelError

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    cls = getattr(models, name)
    with pytest.raises(LabelError, match=r"leave 1 class\(es\) with rows of positive weight"):
        cls().fit(X, y, sample_weight=y.astype(float))  # class 0 weighs nothing
    path = tmp_path / "w.parquet"
    pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y, w=y.astype(float)).to_parquet(path)
    with pytest.raises(LabelError, match=r"\[1\]; \[0\] weigh 0"):
        cls().fit(open_dataset(str(path), target="y", weight="w"))


@pytest.mark.parametrize("seed", [1, 2])
def test_additive_balanced_on_one_row_of_a_class_predicts_like_a_linear_svm(seed) -> None:
    # one row of class 1 among 5,000 weighs 2,500: its plain PEGASOS steps threw every
    # score hundreds of margins out (every row predicted 1), and the held-out rows, which
    # hold none of that class, then stopped the fit after its fourth epoch with the row
    # on the wrong side. The class-weighted linear SVM and logistic regression predict 1
    # for that row alone.
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    from streamlearn.solvers.additive.driver import HOLDOUT_SALT
    from streamlearn.solvers.holdout import Holdout

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(5000, 3))
    y = np.zeros(5000, dtype=int)
    y[0] = 1
    X[0] += 4
    model = AdditiveSVC(class_weight="balanced", random_state=0).fit(X, y)
    assert not Holdout.fraction(model.calibration_fraction, 0 ^ HOLDOUT_SALT).mask(
        np.arange(1))[0]  # the row trains
    for reference in (LinearSVC(class_weight="balanced"),
                      LogisticRegression(class_weight="balanced")):
        expected = reference.fit(X, y).predict(X)
        assert np.flatnonzero(expected).tolist() == [0]
    np.testing.assert_array_equal(model.predict(X), expected)
