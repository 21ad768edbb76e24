"""``score`` of every model equals scikit-learn's metric, in memory and streamed over a dataset."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, r2_score

from streamlearn import open_dataset
from streamlearn.engine import LocalEngine
from streamlearn.models import (
    AdditiveSVC,
    MixtureSVC,
    ShareBoostClassifier,
    SparseJSBoostClassifier,
    SparsePPRRegressor,
    SuperSparseClassifier,
    SuperSparseRegressor,
)

CLASSIFIERS = [
    AdditiveSVC(epochs=2, n_bases=6),
    MixtureSVC(n_components=4, epochs=2),
    ShareBoostClassifier(n_rounds=3),
    SparseJSBoostClassifier(n_rounds=3),
    SuperSparseClassifier(n_prototypes=4, max_iter=3),
]
REGRESSORS = [SparsePPRRegressor(n_terms=1), SuperSparseRegressor(n_prototypes=4, max_iter=3)]


def _data(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(800, 3)).astype(np.float32)
    target = X[:, 0] ** 2 + X[:, 1] - 1 + 0.5 * rng.normal(size=800)
    return X, target, rng.uniform(0.5, 2.0, size=800)


@pytest.mark.parametrize("model", CLASSIFIERS, ids=lambda m: type(m).__name__)
def test_classifier_score_is_weighted_accuracy(model) -> None:
    X, target, w = _data(0)
    y = np.where(target > 0, "yes", "no")
    model.fit(X, y)
    predicted = model.predict(X)
    assert model.score(X, y) == pytest.approx(accuracy_score(y, predicted))
    assert model.score(X, y, sample_weight=w) == pytest.approx(
        accuracy_score(y, predicted, sample_weight=w))
    streamed = model.score(open_dataset(X, target=y, weight=w, chunk_rows=300))
    assert streamed == pytest.approx(accuracy_score(y, predicted, sample_weight=w), abs=1e-6)


@pytest.mark.parametrize("model", REGRESSORS, ids=lambda m: type(m).__name__)
def test_regressor_score_is_weighted_r2(model) -> None:
    X, y, w = _data(1)
    model.fit(X, y)
    predicted = model.predict(X)
    assert model.score(X, y) == pytest.approx(r2_score(y, predicted), rel=1e-9)
    assert model.score(X, y, sample_weight=w) == pytest.approx(
        r2_score(y, predicted, sample_weight=w), rel=1e-9)
    streamed = model.score(open_dataset(X, target=y.astype(np.float32), weight=w,
                                        chunk_rows=300, task="regression"))
    assert streamed == pytest.approx(r2_score(y, predicted, sample_weight=w), abs=1e-4)


def test_regressor_score_of_a_constant_target_follows_scikit_learn() -> None:
    """A constant target: 1 when every prediction equals it, else 0, in memory and
    streamed, as ``r2_score`` gives."""
    X, _, _ = _data(2)
    y = np.full(len(X), 3.0)
    model = SparsePPRRegressor(n_terms=1).fit(X, y)
    predicted = model.predict(X)
    np.testing.assert_array_equal(predicted, y)  # a constant fitted exactly
    assert model.score(X, y) == r2_score(y, predicted) == 1.0
    assert model.score(X, y + 1.0) == r2_score(y + 1.0, predicted) == 0.0
    streamed = model.score(open_dataset(X, target=y.astype(np.float32), task="regression"))
    assert streamed == 1.0


@pytest.mark.parametrize("model", [CLASSIFIERS[0], REGRESSORS[1]], ids=lambda m: type(m).__name__)
def test_a_table_is_scored_by_column_name_as_predict_reads_it(model, tmp_path):
    import pandas as pd
    from sklearn.base import clone, is_classifier

    from streamlearn.engine import evaluate
    from streamlearn.errors import SchemaError

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 4))
    target = X[:, 0] - 2 * X[:, 1] + 0.1 * rng.normal(size=400)
    table = pd.DataFrame(X, columns=list("abcd"))
    y = (target > 0).astype(int) if is_classifier(model) else target
    fitted = clone(model).fit(table, y)
    reference = fitted.score(table, y)  # in memory: predict realigns the columns by name
    shuffled = table[list("dbca")].assign(extra=1.0, y=y)
    assert fitted.score(shuffled, "y") == pytest.approx(reference, abs=1e-9)
    shuffled.to_parquet(tmp_path / "t.parquet")
    assert fitted.score(str(tmp_path / "t.parquet"), "y") == pytest.approx(reference, abs=1e-9)
    with pytest.raises(SchemaError, match=r"by name.*\['d', 'b', 'c', 'a'"):
        evaluate(fitted, open_dataset(str(tmp_path / "t.parquet"), target="y",
                                      features=list("dbca")))


def test_in_memory_labels_are_read_as_the_classes_and_checked_as_scikit_learn_does():
    import pandas as pd

    from streamlearn.errors import LabelError

    X, target, _ = _data(11)
    y = (target > 0).astype(int)
    model = AdditiveSVC(epochs=2, n_bases=6).fit(X, y)
    expected = accuracy_score(y, model.predict(X))
    assert model.score(X, pd.Series(y, dtype=object)) == pytest.approx(expected)
    assert model.score(X, list(y)) == pytest.approx(expected)
    with pytest.raises(LabelError, match="classes are numbers.*y holds text"):
        model.score(X, y.astype(str))
    with pytest.raises(ValueError, match="y holds 1 values but X has"):
        model.score(X, [1])
    text = AdditiveSVC(epochs=2, n_bases=6).fit(X, np.where(y == 1, "b", "a"))
    assert text.score(X, np.where(y == 1, "b", "a").astype(object)) == pytest.approx(
        accuracy_score(y, text.predict(X) == "b"))
    regressor = SuperSparseRegressor(n_prototypes=4, max_iter=3).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="y holds 1 values"):
        regressor.score(X, [0.5])


def test_partial_fit_reads_object_labels_as_the_classes_and_names_a_stranger_plainly():
    import pandas as pd

    from streamlearn.errors import LabelError

    X, target, _ = _data(12)
    y = (target > 0).astype(int)
    model = AdditiveSVC(n_bases=6).partial_fit(X[:400], y[:400], classes=[0, 1])
    model.partial_fit(X[400:], pd.Series(y[400:], dtype=object))  # equal to the classes
    reference = AdditiveSVC(n_bases=6).partial_fit(X[:400], y[:400], classes=[0, 1])
    reference.partial_fit(X[400:], y[400:])
    np.testing.assert_array_equal(model.decision_function(X), reference.decision_function(X))
    with pytest.raises(LabelError, match=r"^label 7 \(row 0\) is not one of the classes"):
        model.partial_fit(X[:2], np.array([7, 0]))


@pytest.mark.parametrize("model", [AdditiveSVC(), MixtureSVC(n_components=2),
                                   SuperSparseClassifier(), SuperSparseRegressor()],
                         ids=lambda m: type(m).__name__)
def test_partial_fit_refuses_a_target_column_name_before_anything_else(model) -> None:
    import pandas as pd

    X, target, _ = _data(13)
    frame = pd.DataFrame(X, columns=list("abc")).assign(t=(target > 0).astype(int))
    classes = {} if isinstance(model, SuperSparseRegressor) else {"classes": [0, 1]}
    with pytest.raises(TypeError, match=r"not the name of a column \('t'\)"):
        model.partial_fit(frame, "t", **classes)
    assert not hasattr(model, "n_features_in_")


class _CountingEngine(LocalEngine):
    """A local engine that counts the passes it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.runs = 0

    def run(self, *args, **kwargs):
        self.runs += 1
        return super().run(*args, **kwargs)


@pytest.mark.parametrize("model", CLASSIFIERS, ids=lambda m: type(m).__name__)
def test_a_dask_dataframe_is_scored_as_its_pandas_rows_by_the_engine(model) -> None:
    """A dask DataFrame and Series are streamed, as fit streams them, by the engine given:
    their lazy row counts are never compared."""
    import dask.dataframe as dd
    import pandas as pd

    X, target, w = _data(2)
    frame = pd.DataFrame(X, columns=list("abc")).assign(y=target > 0, w=w)
    model.fit(frame[list("abc")], frame["y"])
    parts = dd.from_pandas(frame, npartitions=3)
    predicted = model.predict(frame[list("abc")])
    engine = _CountingEngine()
    assert model.score(parts[list("abc")], parts["y"], engine=engine) == pytest.approx(
        accuracy_score(frame["y"], predicted), abs=1e-12)
    assert engine.runs == 1
    weighted = model.score(parts[list("abc")], parts["y"], sample_weight=parts["w"])
    assert weighted == pytest.approx(
        accuracy_score(frame["y"], predicted, sample_weight=w), abs=1e-6)


def test_a_dask_array_of_unknown_chunk_sizes_is_scored_or_refused_by_name() -> None:
    """Read by position for a model of named columns (as predict reads it), the rows of
    unknown chunk sizes score; streamed for a model of unnamed columns, they are refused
    as fit refuses them."""
    import dask.dataframe as dd
    import pandas as pd

    from streamlearn.errors import SourceError

    X, target, _ = _data(3)
    y = (target > 0).astype(int)
    frame = pd.DataFrame(X, columns=list("abc")).assign(y=y)
    parts = dd.from_pandas(frame, npartitions=3)
    rows, labels = parts[list("abc")].to_dask_array(), parts["y"].to_dask_array()
    assert np.isnan(rows.shape[0])
    named = AdditiveSVC(epochs=2, n_bases=6).fit(frame[list("abc")], y)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        score = named.score(rows, labels)
    assert score == pytest.approx(accuracy_score(y, named.predict(frame[list("abc")])))
    unnamed = AdditiveSVC(epochs=2, n_bases=6).fit(X, y)
    with pytest.raises(SourceError, match=r"unknown chunk sizes; call X.compute_chunk_sizes"):
        unnamed.score(rows, labels)
    assert unnamed.score(rows.compute_chunk_sizes(), labels.compute_chunk_sizes()) == \
        pytest.approx(accuracy_score(y, unnamed.predict(X)), abs=1e-12)


@pytest.mark.parametrize("model", REGRESSORS, ids=lambda m: type(m).__name__)
def test_a_dask_dataframe_is_scored_by_a_regressor_as_its_pandas_rows(model) -> None:
    import dask.dataframe as dd
    import pandas as pd

    X, y, w = _data(4)
    frame = pd.DataFrame(X, columns=list("abc")).assign(y=y, w=w)
    model.fit(frame[list("abc")], frame["y"])
    parts = dd.from_pandas(frame, npartitions=3)
    predicted = model.predict(frame[list("abc")])
    assert model.score(parts[list("abc")], parts["y"], sample_weight=parts["w"]) == \
        pytest.approx(r2_score(y, predicted, sample_weight=w), abs=1e-4)
