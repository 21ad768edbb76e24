"""EvaluatePass against scikit-learn's metrics on the whole arrays."""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    log_loss,
    mean_absolute_error,
    mean_squared_error,
    r2_score,
)

from streamlearn.data.chunk import Chunk
from streamlearn.engine.evaluate import EvaluatePass, label_codes
from streamlearn.engine.passes import Pass, run_chunks
from tests.merging import run_merged


def sk_log_loss(y_true, proba, **kwargs) -> float:
    if "y_proba" in inspect.signature(log_loss).parameters:
        return log_loss(y_true, y_proba=proba, **kwargs)
    return log_loss(y_true, proba, **kwargs)


def split(X, y, w, sizes):
    bounds = np.cumsum([0, *sizes])
    return [Chunk(X=X[lo:hi], y=y[lo:hi], start=int(lo), weight=None if w is None else w[lo:hi])
            for lo, hi in itertools.pairwise(bounds)]


def classification_data(n: int, seed: int, labels=(3, 5, 7)):
    rng = np.random.default_rng(seed)
    k = len(labels)
    centers = rng.normal(scale=1.5, size=(k, 4))
    truth = rng.integers(0, k, n)
    X = (centers[truth] + rng.normal(size=(n, 4))).astype(np.float32)
    return X, np.asarray(labels)[truth]


# Dataset classes deliberately in another order than the model's sorted classes_.
CLASSES = np.array([7, 3, 5])
X_FIT, LABELS_FIT = classification_data(300, seed=0)
# Fitted on float64 so that coefficients, predictions and probabilities are float64 (a model
# fitted on float32 predicts in float32, and BLAS rounds a chunk and the whole array apart).
CLASSIFIER = LogisticRegression().fit(X_FIT.astype(np.float64), LABELS_FIT)
X_REG = np.random.default_rng(1).normal(size=(200, 3))
REGRESSOR = LinearRegression().fit(X_REG, X_REG @ [1.0, -2.0, 0.5] + 38.0)


def test_label_codes():
    np.testing.assert_array_equal(label_codes(np.array([5, 7, 4, 3, 9]), CLASSES),
                                  [2, 0, -1, 1, -1])
    np.testing.assert_array_equal(label_codes(np.array(["b", "z"]), np.array(["b", "a"])),
                                  [0, -1])


def test_is_a_reduction_pass():
    pass_ = EvaluatePass(CLASSIFIER, task="classification", classes=CLASSES)
    assert isinstance(pass_, Pass) and pass_.kind == "reduction"
    with pytest.raises(ValueError, match="task"):
        EvaluatePass(CLASSIFIER, task="ranking", classes=CLASSES)


def check_classification(result, y_true, X, w):
    pred = CLASSIFIER.predict(X)
    proba = CLASSIFIER.predict_proba(X)  # columns in classes_ order (sorted labels)
    assert result["n_rows"] == len(y_true)
    np.testing.assert_allclose(result["accuracy"],
                               accuracy_score(y_true, pred, sample_weight=w), rtol=1e-12)
    np.testing.assert_allclose(
        result["log_loss"],
        sk_log_loss(y_true, proba, labels=CLASSIFIER.classes_, sample_weight=w), rtol=1e-9)
    expected = confusion_matrix(y_true, pred, labels=CLASSES, sample_weight=w)
    np.testing.assert_allclose(np.array(result["confusion_matrix"]), expected, rtol=1e-12)
    assert all(isinstance(v, float) for key, v in result.items()
               if key not in ("n_rows", "confusion_matrix"))


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 50), min_size=1, max_size=20),
       weighted=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_classification_any_chunking(sizes, weighted, seed):
    n = sum(sizes)
    X, y_true = classification_data(n, seed=seed % 997 + 1)
    codes = label_codes(y_true, CLASSES).astype(np.int32)
    w = None
    if weighted:
        w = np.random.default_rng(seed).uniform(0.1, 3.0, n).astype(np.float32)
    pass_ = EvaluatePass(CLASSIFIER, task="classification", classes=CLASSES)
    for result in (run_chunks(pass_, split(X, codes, w, sizes)),
                   run_merged(pass_, split(X, codes, w, sizes), np.random.default_rng(seed))):
        check_classification(result, y_true, X, w)
        if not weighted:
            assert all(isinstance(v, int) for row in result["confusion_matrix"] for v in row)


def test_string_labels_without_proba_and_unknown_predictions():
    # Model knows class "d" that the dataset does not: those predictions are errors and
    # do not appear in the confusion matrix.
    X, y = classification_data(400, seed=5, labels=("a", "b", "c", "d"))
    model = LogisticRegression().fit(X.astype(np.float64), y)
    keep = y != "d"
    X, y = X[keep], y[keep]
    classes = np.array(["c", "a", "b"])
    codes = label_codes(y, classes).astype(np.int32)
    pass_ = EvaluatePass(model, task="classification", classes=classes)
    result = run_merged(pass_, split(X, codes, None, [50] * (len(y) // 50) + [len(y) % 50]),
                        np.random.default_rng(0))
    pred = model.predict(X)
    assert (pred == "d").any()
    np.testing.assert_allclose(result["accuracy"], accuracy_score(y, pred), rtol=1e-12)
    np.testing.assert_array_equal(result["confusion_matrix"],
                                  confusion_matrix(y, pred, labels=classes))
    proba = model.predict_proba(X)
    columns = label_codes(y, model.classes_)
    expected = -np.mean(np.log(proba[np.arange(len(y)), columns]))
    np.testing.assert_allclose(result["log_loss"], expected, rtol=1e-9)

    class NoProba:
        classes_ = model.classes_

        def predict(self, X):
            return model.predict(X)

    result = run_chunks(EvaluatePass(NoProba(), task="classification", classes=classes),
                        split(X, codes, None, [len(y)]))
    assert "log_loss" not in result
    np.testing.assert_allclose(result["accuracy"], accuracy_score(y, pred), rtol=1e-12)


def test_classes_default_to_model_classes():
    X, y = classification_data(120, seed=8)
    codes = label_codes(y, CLASSIFIER.classes_).astype(np.int32)
    result = run_chunks(EvaluatePass(CLASSIFIER, task="classification"),
                        split(X, codes, None, [60, 60]))
    np.testing.assert_allclose(result["accuracy"], accuracy_score(y, CLASSIFIER.predict(X)))


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 50), min_size=1, max_size=20),
       weighted=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_regression_any_chunking(sizes, weighted, seed):
    n = sum(sizes)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X @ [1.0, -2.0, 0.5] + 40.0 + rng.normal(scale=0.7, size=n)).astype(np.float32)
    w = rng.uniform(0.1, 3.0, n).astype(np.float32) if weighted else None
    pass_ = EvaluatePass(REGRESSOR, task="regression", classes=None)
    pred = REGRESSOR.predict(X)
    y64 = y.astype(np.float64)
    for result in (run_chunks(pass_, split(X, y, w, sizes)),
                   run_merged(pass_, split(X, y, w, sizes), rng)):
        assert result["n_rows"] == n
        np.testing.assert_allclose(result["mse"], mean_squared_error(y64, pred, sample_weight=w),
                                   rtol=1e-9)
        np.testing.assert_allclose(result["mae"],
                                   mean_absolute_error(y64, pred, sample_weight=w), rtol=1e-9)
        if n > 1:
            np.testing.assert_allclose(result["r2"], r2_score(y64, pred, sample_weight=w),
                                       rtol=1e-9, atol=1e-12)


def test_r2_of_constant_target_follows_scikit_learn():
    X = np.zeros((30, 2), dtype=np.float32)
    y = np.full(30, 2.5, dtype=np.float32)
    for constant in (2.5, 1.0):
        model = DummyRegressor(strategy="constant", constant=constant).fit(X, y)
        result = run_chunks(EvaluatePass(model, task="regression"), split(X, y, None, [10, 20]))
        assert result["r2"] == r2_score(y, model.predict(X))


def test_empty_and_missing_target():
    result = run_chunks(EvaluatePass(REGRESSOR, task="regression"), [])
    assert result["n_rows"] == 0 and np.isnan(result["mse"])
    result = run_chunks(EvaluatePass(CLASSIFIER, task="classification", classes=CLASSES), [])
    assert np.isnan(result["accuracy"]) and result["confusion_matrix"] == [[0] * 3] * 3
    with pytest.raises(ValueError, match="target"):
        run_chunks(EvaluatePass(REGRESSOR, task="regression"),
                   [Chunk(X=X_REG[:5].astype(np.float32), y=None, start=0)])


def test_a_dataset_of_one_class_or_without_some_model_classes_is_scored() -> None:
    """``evaluate`` codes the labels over the model's classes and the data's: a test set
    holding one class scores (scikit-learn's accuracy on the same rows), and the confusion
    matrix keeps every row, those predicted as a class the data lack included
    (``confusion_matrix`` over the union of labels)."""
    import pandas as pd

    from streamlearn import open_dataset
    from streamlearn.engine.evaluate import evaluate

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = np.where(X[:, 0] > 0.3, "yes", np.where(X[:, 1] > 0, "no", "maybe"))
    model = LogisticRegression().fit(X, y)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=y)
    only_yes = frame[frame.label == "yes"]
    got = evaluate(model, open_dataset(only_yes, target="label"))
    assert got["accuracy"] == pytest.approx(
        accuracy_score(only_yes.label, model.predict(only_yes[["a", "b", "c"]].to_numpy())))
    two = frame[frame.label != "maybe"]
    got = evaluate(model, open_dataset(two, target="label"))
    predicted = model.predict(two[["a", "b", "c"]].to_numpy())
    expected = confusion_matrix(two.label, predicted, labels=["maybe", "no", "yes"])
    assert got["confusion_matrix"] == expected.tolist()
    assert np.sum(got["confusion_matrix"]) == got["n_rows"] == len(two)


def _city_problem(n: int = 1200, seed: int = 0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.normal(size=n), "city": rng.choice(["10", "20", "30"], n)})
    shift = frame["city"].map({"10": -2.0, "20": 0.0, "30": 2.0})
    frame["label"] = np.where(frame["a"] + shift > 0, "hi", "lo")
    return frame


def test_categories_are_read_as_the_model_codes_them(tmp_path) -> None:
    """A path is coded by the model's categories (numbers in a CSV file match text
    categories of a parquet one by their text); a Dataset coded by other categories, and a
    text column where the model saw numbers, are refused by name; rows of a category the
    model never saw are counted and warned of."""
    from streamlearn import open_dataset
    from streamlearn.engine.evaluate import evaluate
    from streamlearn.errors import SchemaError
    from streamlearn.models import ShareBoostClassifier

    frame = _city_problem()
    model = ShareBoostClassifier(n_rounds=10).fit(frame[["a", "city"]], frame["label"])
    expected = accuracy_score(frame["label"], model.predict(frame[["a", "city"]]))
    assert expected > 0.95
    frame.to_csv(tmp_path / "t.csv", index=False)  # the city codes read as numbers
    assert model.score(str(tmp_path / "t.csv"), "label") == pytest.approx(expected)
    part = frame[frame["city"] != "10"]
    part.to_parquet(tmp_path / "part.parquet")
    assert model.score(str(tmp_path / "part.parquet"), "label") == pytest.approx(
        accuracy_score(part["label"], model.predict(part[["a", "city"]])))
    with pytest.raises(SchemaError, match=r"codes feature\(s\) \['city'\] by other categories"):
        evaluate(model, open_dataset(str(tmp_path / "part.parquet"), target="label"))
    numeric = ShareBoostClassifier(n_rounds=10).fit(
        frame[["a"]].assign(city=frame["city"].astype(float)), frame["label"])
    with pytest.raises(SchemaError, match=r"\['city'\] .* hold text or categories"):
        numeric.score(str(tmp_path / "part.parquet"), "label")
    unseen = frame.assign(city=np.where(np.arange(len(frame)) < 25, "99", frame["city"]))
    unseen.to_parquet(tmp_path / "unseen.parquet")
    with pytest.warns(UserWarning, match="'city' holds 25 value"):
        got = evaluate(model, open_dataset(str(tmp_path / "unseen.parquet"), target="label",
                                           categories=model.categories_))
    assert got["unseen_categories"] == {"city": 25}
