"""Feature names as scikit-learn reads them: string column labels name the columns, other
labels (pandas' ``0, 1, ...``) do not, a mix is refused, and rows without names given to a
model fitted with them get scikit-learn's warning (but not the library's own rows)."""

from __future__ import annotations

import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from streamlearn import open_dataset
from streamlearn.models import SuperSparseClassifier

UNNAMED = "X does not have valid feature names"
NAMED = "X has feature names"


def _model() -> SuperSparseClassifier:
    """A cheap model (few prototypes, few kernels to compile): the rule lives in the input
    checks every model shares."""
    return SuperSparseClassifier(n_prototypes=4)


@pytest.fixture(scope="module")
def rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def _messages(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def _starts(messages: list[str], prefix: str) -> list[bool]:
    return [m.startswith(prefix) for m in messages]


@pytest.fixture(scope="module")
def named_models(rows):
    X, y = rows
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    return frame, [_model().fit(frame, y), LogisticRegression().fit(frame, y)]


@pytest.mark.parametrize("kind", ["ndarray", "list", "sparse", "int labels"])
def test_unnamed_rows_to_a_named_model_warn_as_scikit_learn(named_models, rows, kind) -> None:
    frame, (ours, reference) = named_models
    X = rows[0]
    given = {
        "ndarray": X,
        "list": X.tolist(),
        "sparse": sp.csr_matrix(X),
        "int labels": pd.DataFrame(X),
    }[kind]
    for model in (ours, reference):
        seen = _messages(lambda m=model: m.predict(given))
        assert _starts(seen, UNNAMED) == [True], (type(model).__name__, seen)
        assert type(model).__name__ in seen[0]
    # taken by position, as the named table is read
    with pytest.warns(UserWarning, match=UNNAMED):
        np.testing.assert_array_equal(ours.predict(given), ours.predict(frame))


def test_named_rows_to_a_named_model_do_not_warn(named_models) -> None:
    frame, (ours, reference) = named_models
    for model in (ours, reference):
        assert _messages(lambda m=model: m.predict(frame)) == []


def test_integer_labels_are_no_feature_names(rows) -> None:
    X, y = rows
    ours = _model().fit(pd.DataFrame(X), y)
    reference = LogisticRegression().fit(pd.DataFrame(X), y)
    assert not hasattr(reference, "feature_names_in_")
    assert not hasattr(ours, "feature_names_in_")
    named = pd.DataFrame(X, columns=["a", "b", "c"])
    for model in (ours, reference):
        assert _messages(lambda m=model: m.predict(pd.DataFrame(X))) == []
        assert _messages(lambda m=model: m.predict(X)) == []
        assert _starts(_messages(lambda m=model: m.predict(named)), NAMED) == [True]
    # the same model as one fitted on the array
    np.testing.assert_array_equal(ours.predict(X), _model().fit(X, y).predict(X))


def test_mixed_labels_are_refused_as_scikit_learn_refuses_them(rows, named_models) -> None:
    X, y = rows
    mixed = pd.DataFrame(X, columns=["a", 1, 2])
    for model in (_model(), LogisticRegression()):
        with pytest.raises(
            TypeError,
            match="only supported if all input features have "
            r"string names.*\['int', 'str'\]",
        ):
            model.fit(mixed, y)
    for model in named_models[1]:
        with pytest.raises(TypeError, match="string names"):
            model.predict(mixed)


def test_integer_labelled_categories_and_model_file(rows, tmp_path: Path) -> None:
    X, y = rows
    cities = np.array(["oslo", "rome", "lima"])[np.arange(len(y)) % 3]
    frame = pd.DataFrame({0: cities, 1: X[:, 0], 2: X[:, 1]})
    model = _model().fit(frame, y)
    assert not hasattr(model, "feature_names_in_")
    assert set(model.categories_) == {"0"}  # keyed by the name the label is given
    # the same fit as on string labels, which do name the columns
    strings = frame.rename(columns=str)
    named = _model().fit(strings, y)
    np.testing.assert_array_equal(model.predict(frame), named.predict(strings))
    assert _messages(lambda: model.predict(frame)) == []
    loaded = SuperSparseClassifier.load(model.save(tmp_path / "m.slm"))
    assert not hasattr(loaded, "feature_names_in_")
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))


def test_the_librarys_own_rows_do_not_warn(named_models, rows) -> None:
    frame, (ours, _) = named_models
    data = frame.assign(label=rows[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        score = ours.score(open_dataset(data, target="label"))  # chunks are arrays
    assert score == pytest.approx(ours.score(frame, rows[1]))


def test_a_dask_array_warns_once(named_models, rows) -> None:
    frame, (ours, _) = named_models
    lazy = da.from_array(rows[0], chunks=(40, 3))
    predicted = []
    seen = _messages(lambda: predicted.append(ours.predict(lazy).compute()))
    assert _starts(seen, UNNAMED) == [True]
    np.testing.assert_array_equal(predicted[0], ours.predict(frame))
