"""The inputs users bring: categorical and string columns, nullable dtypes and ``pd.NA``,
lists and object arrays, polars frames, dask frames with a separate target, and a
continuous target given to a classifier."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import DataConversionWarning

from streamlearn import DataError, LabelError, SchemaError, open_dataset
from streamlearn.data import categories as categories_module
from streamlearn.io.model_file import read_model_file
from streamlearn.models.additive import AdditiveSVC
from streamlearn.models.base import classification_dataset, regression_dataset
from streamlearn.models.registry import estimator_classes

N_ROWS = 300
CITIES = ("Lima", "Oslo", "Rome")


def _model() -> AdditiveSVC:
    # no pairs, as the default tried none on these few rows before five folds of them
    # could check pairs (the inputs are what these tests are about)
    return AdditiveSVC(n_bases=20, interactions=0, progress=False, random_state=0)


@pytest.fixture
def cities() -> tuple[pd.DataFrame, np.ndarray]:
    """A numeric column and a city column; the label is mostly "is it Oslo"."""
    rng = np.random.default_rng(3)
    city = rng.choice(CITIES, N_ROWS)
    a = rng.normal(size=N_ROWS)
    label = (city == "Oslo").astype(np.int64)
    frame = pd.DataFrame({"a": a, "city": pd.Categorical(city, categories=list(CITIES))})
    return frame, label


def _codes_model(frame: pd.DataFrame) -> AdditiveSVC:
    """The reference model for codes: the city's range is [0, n_bases - degree], one knot
    per code, as the additive model lays out a categorical feature's codes."""
    a = frame["a"].to_numpy(np.float32).astype(np.float64)
    model = _model()
    room = model.n_bases - model.degree
    # a table with a categorical column gets the D0 penalty by default; codes are numbers
    return model.set_params(feature_range=np.array([[a.min(), a.max()], [0.0, room]]),
                            penalty_order=0)


def _codes_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The reference: the city column replaced by its position in the sorted city list."""
    codes = np.searchsorted(np.array(CITIES), frame["city"].astype(str).to_numpy())
    return frame.assign(city=codes.astype(np.float64))


def _stream(ds) -> np.ndarray:
    return np.concatenate([c.X for c in ds.chunks()])


# -- 1. categorical and string feature columns ---------------------------------------------
@pytest.mark.parametrize("kind", ["category", "object", "string", "string[pyarrow]",
                                  "arrow-dictionary", "arrow-string", "polars"])
def test_category_columns_are_coded_in_the_stream(cities, kind: str) -> None:
    frame, _ = cities
    values = frame["city"].astype(str).to_numpy()
    if kind == "category":
        table = frame
    elif kind in ("object", "string", "string[pyarrow]"):
        table = frame.assign(city=pd.Series(values, dtype=kind))
    elif kind == "polars":
        pl = pytest.importorskip("polars")
        table = pl.DataFrame({"a": frame["a"].to_numpy(), "city": values})
    else:
        column = pa.array(values)
        if kind == "arrow-dictionary":
            column = column.dictionary_encode()
        table = pa.table({"a": frame["a"].to_numpy(), "city": column})
    ds = open_dataset(table, chunk_rows=64)
    assert ds.categories == {"city": CITIES}
    np.testing.assert_array_equal(_stream(ds), _codes_frame(frame).to_numpy(np.float32))


def test_parquet_dictionary_column_is_scanned_across_row_groups(cities, tmp_path: Path) -> None:
    frame, label = cities
    path = tmp_path / "cities.parquet"
    # each row group holds part of the cities; the scan must find the union, sorted
    ordered = frame.assign(label=label).sort_values("city", key=lambda s: s.astype(str))
    pq.write_table(pa.Table.from_pandas(ordered, preserve_index=False), path,
                   row_group_size=70)
    ds = open_dataset(str(path), target="label", chunk_rows=50)
    assert ds.categories == {"city": CITIES}
    assert "category : city (3: Lima, Oslo, Rome)" in str(ds.schema)
    expected = _codes_frame(ordered.drop(columns="label")).to_numpy(np.float32)
    np.testing.assert_array_equal(_stream(ds), expected)


def test_dataset_recoded_with_given_categories(cities) -> None:
    frame, _ = cities
    test = frame.head(6).assign(city=["Rome", "Oslo", "Paris", "Lima", "Rome", "Oslo"])
    ds = open_dataset(test)
    assert ds.categories == {"city": ("Lima", "Oslo", "Paris", "Rome")}
    fitted = ds.with_categories({"city": CITIES})
    assert fitted.categories == {"city": CITIES}
    np.testing.assert_array_equal(_stream(fitted)[:, 1], [2, 1, 3, 0, 2, 1])
    assert fitted.with_categories({"city": CITIES}) is fitted


@pytest.mark.parametrize("kind", ["int", "float", "category-of-ints", "category-of-floats"])
def test_numbers_are_matched_to_text_categories_by_their_text(kind: str) -> None:
    text = ("1", "10", "2", "3")
    numbers = np.array([2, 10, 1, 4, 3, 2, 1])  # 4: not a category
    expected = [text.index(str(v)) if str(v) in text else len(text) for v in numbers]
    column = {"int": numbers, "float": numbers.astype(float),
              "category-of-ints": pd.Categorical(numbers),
              "category-of-floats": pd.Categorical(numbers.astype(float))}[kind]
    ds = open_dataset(pd.DataFrame({"a": np.arange(7.0), "k": column}))
    np.testing.assert_array_equal(_stream(ds.with_categories({"k": text}))[:, 1], expected)


def test_a_category_column_of_numbers_predicts_like_their_text() -> None:
    rng = np.random.default_rng(0)
    k, a = rng.integers(1, 4, N_ROWS), rng.normal(size=N_ROWS)
    label = (k == 2).astype(np.int64)
    model = _model().fit(pd.DataFrame({"a": a, "k": k.astype(str)}), label)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no value taken for an unseen category
        scores = model.decision_function(pd.DataFrame({"a": a, "k": pd.Categorical(k)}))
    np.testing.assert_array_equal(
        scores, model.decision_function(pd.DataFrame({"a": a, "k": k.astype(str)})))


@pytest.mark.parametrize("numbers", [(1, 2, 3, 10), (1.0, 2.5, 3.0, 10.0)])
@pytest.mark.parametrize("kind", ["text", "category-of-text"])
def test_text_is_matched_to_number_categories_by_the_numbers_text(numbers, kind) -> None:
    texts = ["2", "10", "1", "4", "3", "2.5", "10.0", "x"]  # "10.0" is not 10's text
    names = [f"{v:g}" for v in numbers]  # each number's text, written another way
    expected = [names.index(t) if t in names else len(numbers) for t in texts]
    column = np.array(texts, dtype=object) if kind == "text" else pd.Categorical(texts)
    ds = open_dataset(pd.DataFrame({"a": np.arange(8.0), "k": column}))
    np.testing.assert_array_equal(_stream(ds.with_categories({"k": numbers}))[:, 1], expected)


def test_a_text_column_predicts_like_the_number_categories_it_names() -> None:
    rng = np.random.default_rng(0)
    k, a = rng.choice([10, 20, 30], N_ROWS), rng.normal(size=N_ROWS)
    label = (k == 20).astype(np.int64)
    model = _model().fit(pd.DataFrame({"a": a, "k": pd.Categorical(k)}), label)
    assert model.categories_ == {"k": (10, 20, 30)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no value taken for an unseen category
        scores = model.decision_function(pd.DataFrame({"a": a, "k": k.astype(str)}))
    np.testing.assert_array_equal(
        scores, model.decision_function(pd.DataFrame({"a": a, "k": pd.Categorical(k)})))


def test_missing_category_follows_nan_policy(cities) -> None:
    frame, _ = cities
    values = frame["city"].astype(object).to_numpy().copy()
    values[[4, 9]] = None
    table = frame.assign(city=values)
    with pytest.raises(DataError, match=r"feature column 'city' at row 4 "):
        _stream(open_dataset(table))
    kept = _stream(open_dataset(table, nan_policy="drop"))
    reference = _codes_frame(frame).to_numpy(np.float32)
    np.testing.assert_array_equal(kept, np.delete(reference, [4, 9], axis=0))


def test_identifier_column_with_too_many_values_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(categories_module, "MAX_CATEGORIES", 10)
    frame = pd.DataFrame({"a": np.arange(20.0), "id": [f"u{i}" for i in range(20)]})
    with pytest.raises(SchemaError, match=r"'id' .*more than 10 distinct.*exclude="):
        open_dataset(frame).categories


def test_identifier_column_is_refused_not_coded() -> None:
    rows = 200
    frame = pd.DataFrame({"a": np.arange(float(rows)), "id": [f"u{i}" for i in range(rows)],
                          "label": np.arange(rows) % 2})
    with pytest.raises(SchemaError, match=r"non-numeric feature column 'id' .* has 200 "
                                          r"distinct values in 200 rows.*identifier"):
        _model().fit(frame, "label")
    model = _model().fit(open_dataset(frame, target="label", exclude=["id"]))
    assert tuple(model.feature_names_in_) == ("a",)


def test_object_column_of_numbers_is_read_as_numbers() -> None:
    # an object column of numbers (a few of them, some missing) is taken as numbers, as
    # pd.to_numeric reads it: the same rows as the float frame, no categories, in fit and
    # predict alike
    rng = np.random.default_rng(0)
    a = rng.choice(np.linspace(0.0, 40.0, 20), N_ROWS)
    frame = pd.DataFrame({"a": a, "b": rng.normal(size=N_ROWS),
                          "c": rng.integers(0, 5, N_ROWS), "d": a > 20})
    objects = frame.astype(object)
    objects.loc[7, "b"] = None
    reference = frame.to_numpy(np.float32)
    reference[7, 1] = np.nan
    dataset = open_dataset(objects, nan_policy="drop")
    assert dataset.categories == {}
    np.testing.assert_array_equal(_stream(dataset), np.delete(reference, 7, axis=0))
    label = (a + frame["b"] > 20).astype(np.int64)
    model = _model().fit(objects.drop(index=7), label.drop(index=7))
    assert not getattr(model, "categories_", None)
    expected = _model().fit(frame.drop(index=7), label.drop(index=7))
    np.testing.assert_allclose(model.decision_function(objects.drop(index=7)),
                               expected.decision_function(frame.drop(index=7)), rtol=1e-6)


def test_object_column_mixing_numbers_and_text_stays_categorical() -> None:
    values = np.arange(12.0).astype(object)[np.arange(N_ROWS) % 12]
    values[5] = "n/a"
    with pytest.warns(UserWarning, match=r"'a' .* 13 categories; all its values but 1 are "
                                         r"numbers \('n/a'\)"):
        categories = open_dataset(pd.DataFrame({"a": values})).categories
    # a mix of types is sorted by type name, then text
    assert categories == {"a": (0.0, 1.0, 10.0, 11.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0,
                                9.0, "n/a")}


def test_identifier_error_names_the_rows_and_how_to_leave_it_out() -> None:
    # fit adds the target to the frame as a column: the message names the rows given, and
    # ways to leave the column out that exist (fit takes no exclude=)
    rng = np.random.default_rng(0)
    ids = np.array([f"u{i}" for i in range(N_ROWS)], dtype=object)
    frame = pd.DataFrame({"a": rng.normal(size=N_ROWS), "id": ids})
    with pytest.raises(SchemaError, match=r"'id' of DataFrame of 300 rows has 300 distinct "
                                          r".*drop it from the table given to fit, or open "
                                          r"the data with open_dataset\(\.\.\., exclude="):
        _model().fit(frame, rng.integers(0, 2, N_ROWS))


def test_classifier_keeps_categories_and_codes_prediction_tables(cities) -> None:
    frame, label = cities
    model = _model().fit(frame, label)
    assert model.categories_ == {"city": CITIES}
    # reference: the same model trained on the codes computed by hand
    reference = _codes_model(frame).fit(_codes_frame(frame), label)
    np.testing.assert_allclose(model.decision_function(frame),
                               reference.decision_function(_codes_frame(frame)), rtol=1e-6)
    # a table with the columns reordered, the city as plain strings: coded by name and value
    strings = frame[["city", "a"]].assign(city=frame["city"].astype(str))
    np.testing.assert_array_equal(model.predict(strings), reference.predict(
        _codes_frame(frame)))
    # a categorical with another category order is coded by the fit-time categories
    reordered = frame.assign(city=frame["city"].cat.reorder_categories(["Rome", "Lima",
                                                                        "Oslo"]))
    np.testing.assert_array_equal(model.predict(reordered), model.predict(frame))
    assert model.score(reordered.assign(label=label), "label") == model.score(frame, label)
    # a Dataset of new data, whose scan finds other categories, is re-coded for the model
    fewer = frame.assign(label=label)[frame["city"] != "Lima"]
    fewer = fewer.assign(city=fewer["city"].astype(str))
    dataset = open_dataset(fewer, target="label")
    assert dataset.categories == {"city": ("Oslo", "Rome")}
    accuracy = float(np.mean(model.predict(fewer.drop(columns="label")) == fewer["label"]))
    assert model.score(dataset) == pytest.approx(accuracy)
    assert model.score(frame, label) > 0.95


def test_unseen_category_gets_the_reserved_code_with_a_warning(cities) -> None:
    frame, label = cities
    model = _model().fit(frame, label)
    reference = _codes_model(frame).fit(_codes_frame(frame), label)
    test = frame.head(5).assign(city=["Oslo", "Paris", "Lima", "Rome", "Paris"])
    with pytest.warns(UserWarning, match=r"'city' holds 2 value\(s\) not seen in fit "
                                         r"\(first at row 1\).*code 3"):
        scores = model.decision_function(test)
    codes = test.assign(city=[1.0, 3.0, 0.0, 2.0, 3.0])
    np.testing.assert_allclose(scores, reference.decision_function(codes), rtol=1e-6)
    missing = test.assign(city=["Oslo", None, "Lima", "Rome", "Oslo"])
    with pytest.raises(DataError, match="NaN in feature 'city' at row 1"):
        model.predict(missing)


def test_the_unseen_category_warning_says_what_an_indicator_model_does() -> None:
    """A model reading categories as indicators does not score an unseen category as the
    code past the others: its warning says what it does (no indicator of a column of
    more categories; the training mean of a column of two, numpy's mean of its 0/1 code)."""
    from streamlearn.models import MixtureSVC

    rng = np.random.default_rng(8)
    n = 600
    frame = pd.DataFrame({"x": rng.normal(size=n),
                          "b": rng.choice(["no", "yes"], n, p=[0.6, 0.4]),
                          "c": rng.choice(["p", "q", "r", "s"], n)})
    y = ((frame["x"] > 0) ^ (frame["c"] == "q")).astype(int).to_numpy()
    model = MixtureSVC(random_state=0).fit(frame, y)
    test = frame.head(3).assign(b=["no", "maybe", "yes"], c=["p", "q", "t"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.decision_function(test)
    said = sorted(str(w.message) for w in caught)
    mean = np.mean(frame["b"] == "yes")
    assert said == [
        f"feature 'b' holds 1 value(s) not seen in fit (first at row 1); they are read as "
        f"{mean:.4g}, the column's training mean, between the codes 0 and 1 of its two "
        "categories",
        "feature 'c' holds 1 value(s) not seen in fit (first at row 2); they set none of "
        "its indicator columns"]


def test_model_file_keeps_categories(cities, tmp_path: Path) -> None:
    frame, label = cities
    model = _model().fit(frame, label)
    path = model.save(tmp_path / "m.slm")
    header, _ = read_model_file(path)
    assert header["categories"] == {"city": list(CITIES)}  # JSON in the metadata
    loaded = AdditiveSVC.load(path)
    assert loaded.categories_ == {"city": CITIES}
    strings = frame.assign(city=frame["city"].astype(str))
    np.testing.assert_array_equal(loaded.predict(strings), model.predict(frame))


def test_a_dask_frame_with_category_columns_predicts_as_its_pandas_rows(cities) -> None:
    frame, label = cities
    model = _model().fit(frame, label)
    expected = model.predict(frame)
    for rows in (frame, frame.assign(city=frame["city"].astype(str))):
        lazy = dd.from_pandas(rows, npartitions=3)
        np.testing.assert_array_equal(model.predict(lazy), expected)
        np.testing.assert_allclose(model.predict_proba(lazy), model.predict_proba(frame))


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_every_estimator_keeps_categories(cls, cities, tmp_path: Path) -> None:
    frame, label = cities
    model = cls()
    if "progress" in model.get_params():
        model.set_params(progress=False)
    is_regressor = "Regressor" in cls.__name__
    target = label + 0.1 * frame["a"].to_numpy() if is_regressor else label
    model.fit(frame, target)
    assert model.categories_ == {"city": CITIES}
    expected = model.predict(frame)
    strings = frame[["city", "a"]].assign(city=frame["city"].astype(str))
    np.testing.assert_array_equal(model.predict(strings), expected)
    loaded = cls.load(model.save(tmp_path / "m.slm"))
    np.testing.assert_array_equal(loaded.predict(strings), expected)


def test_refit_on_numbers_forgets_categories(cities) -> None:
    frame, label = cities
    model = _model().fit(frame, label)
    model.fit(_codes_frame(frame), label)
    assert not hasattr(model, "categories_")
    assert type(vars(model)["feature_names_in_"]) is tuple  # no categories carried
    assert model.feature_names_in_.categories == {}


def _code_warnings(record: list[warnings.WarningMessage]) -> list[str]:
    """The messages of the warnings of category codes read as numbers, each checked to
    name the line of this file that called the library."""
    said = [w for w in record if "as one number each" in str(w.message)]
    assert all(w.filename == __file__ for w in said), [(w.filename, w.lineno) for w in said]
    return [str(w.message) for w in said]


def _colours_and_flag(rows: int = 300) -> tuple[pd.DataFrame, np.ndarray]:
    """A numeric column, a column of five colours and one of two flags; the label reads
    all three."""
    rng = np.random.default_rng(8)
    colour = rng.choice(list("vwxyz"), rows)
    flag = rng.choice(["no", "yes"], rows)
    x = rng.normal(size=rows)
    label = ((colour == "x") ^ (flag == "yes") ^ (x > 0)).astype(np.int64)
    return pd.DataFrame({"x": x, "colour": colour, "flag": flag}), label


#: Settings that leave a model's reading of the columns as its defaults read them, on
#: fewer passes: ShareBoost's indicator columns are built before any family is fitted, so
#: linear columns for a fixed number of rounds read them as do the three families that
#: "auto" cross-fits on these 300 rows, in 62 passes instead of 3,303.
QUICK = {"ShareBoostClassifier": {"features": "linear", "n_rounds": 6}}


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_models_reading_codes_as_numbers_warn_once_at_fit(cls) -> None:
    # the counts in the warning are pandas' own count of each column's values; a column of
    # two categories (a 0/1 indicator) is not named, and neither the B-spline map of
    # AdditiveSVC (a knot per category) nor a model reading indicator columns reads a
    # code as a number
    frame, label = _colours_and_flag()
    counts = frame[["colour", "flag"]].nunique()
    target = label + 0.1 * frame["x"].to_numpy() if "Regressor" in cls.__name__ else label
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        cls(**QUICK.get(cls.__name__, {})).fit(frame, target)
    said = _code_warnings(record)
    if cls is AdditiveSVC or cls._category_indicators:  # a value per category
        assert said == []
        return
    assert len(said) == 1, said
    assert said[0].startswith(f"{cls.__name__} reads the categorical column(s) 'colour' "
                              f"({counts['colour']} categories) as one number")
    assert "'flag'" not in said[0] and counts["flag"] == 2
    assert "pandas.get_dummies" in said[0] and "AdditiveSVC" in said[0]


def test_additive_maps_that_read_codes_as_numbers_warn() -> None:
    frame, label = _colours_and_flag()
    for model in (AdditiveSVC(embedding="linear", progress=False),
                  AdditiveSVC(embedding="fourier", progress=False),
                  AdditiveSVC(n_bases=4, degree=1, progress=False)):  # 3 knots for 5 codes
        with pytest.warns(UserWarning, match=r"AdditiveSVC reads the categorical column\(s\) "
                                             r"'colour' \(5 categories\) as one number") as said:
            model.fit(frame, label)
        # its way out is its own B-spline map, not another model
        assert "or train AdditiveSVC" not in _code_warnings(list(said))[0]
    with warnings.catch_warnings(record=True) as record:  # 5 codes, 6 bases: a knot each
        warnings.simplefilter("always")
        AdditiveSVC(n_bases=6, degree=1, progress=False).fit(frame, label)
    assert _code_warnings(record) == []



@pytest.mark.parametrize("embedding", ["linear", "hermite"])
def test_partial_fit_warns_of_codes_read_as_numbers_on_its_first_call(embedding: str) -> None:
    frame, label = _colours_and_flag(400)
    # (the other online models read categories as indicator columns)
    model = AdditiveSVC(embedding=embedding, progress=False)
    with pytest.warns(UserWarning, match=r"AdditiveSVC reads the categorical column\(s\) "
                                         r"'colour' \(5 categories\)"):
        model.partial_fit(frame[:200], label[:200], classes=[0, 1])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model.partial_fit(frame[200:], label[200:])
    assert _code_warnings(record) == []


# -- 2. nullable pandas dtypes and pd.NA ---------------------------------------------------
@pytest.fixture
def nullable() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({
        "i": pd.array(rng.integers(0, 5, N_ROWS), dtype="Int64"),
        "f": pd.array(rng.normal(size=N_ROWS), dtype="Float64"),
        "b": pd.array(rng.random(N_ROWS) > 0.5, dtype="boolean"),
    })
    frame.loc[3, "i"] = pd.NA
    frame.loc[5, "f"] = pd.NA
    frame.loc[7, "b"] = pd.NA
    return frame


def _as_float(frame: pd.DataFrame) -> np.ndarray:
    """Reference conversion: every column to float64 by numpy, pd.NA to NaN."""
    return np.column_stack([np.array([np.nan if v is pd.NA else float(v) for v in frame[c]])
                            for c in frame.columns])


def test_pd_na_is_a_missing_value(nullable: pd.DataFrame) -> None:
    with pytest.raises(DataError, match=r"feature column 'i' at row 3 "):
        _stream(open_dataset(nullable))
    reference = _as_float(nullable)
    finite = np.isfinite(reference).all(axis=1)
    np.testing.assert_array_equal(_stream(open_dataset(nullable, nan_policy="drop")),
                                  reference[finite].astype(np.float32))
    filled = np.where(np.isfinite(reference), reference, -1.0).astype(np.float32)
    np.testing.assert_array_equal(_stream(open_dataset(nullable, nan_policy=-1.0)), filled)


def test_nullable_targets(nullable: pd.DataFrame) -> None:
    labels = pd.array(np.arange(N_ROWS) % 3, dtype="Int64")
    ds = open_dataset(nullable.assign(t=labels), target="t", nan_policy="drop")
    assert ds.task == "classification"
    np.testing.assert_array_equal(ds.classes, [0, 1, 2])
    values = pd.array(np.linspace(0, 1, N_ROWS), dtype="Float64")
    values[10] = pd.NA
    ds = open_dataset(nullable.assign(t=values), target="t", nan_policy="drop")
    assert ds.task == "regression"
    ys = np.concatenate([c.y for c in ds.chunks()])
    keep = np.isfinite(_as_float(nullable)).all(axis=1)
    keep[10] = False
    np.testing.assert_allclose(ys, np.linspace(0, 1, N_ROWS)[keep].astype(np.float32))
    # a missing integer label is a missing value too: dropped, or refused as NaN is
    gaps = pd.array(np.arange(N_ROWS) % 2, dtype="Int64")
    gaps[12] = pd.NA
    ds = open_dataset(nullable.assign(t=gaps), target="t", nan_policy="drop")
    np.testing.assert_array_equal(ds.classes, np.array([0, 1], dtype=np.int64))
    keep[10], keep[12] = np.isfinite(_as_float(nullable)).all(axis=1)[10], False
    ys = np.concatenate([c.y for c in ds.chunks()])
    np.testing.assert_array_equal(ys, (np.arange(N_ROWS) % 2)[keep])
    with pytest.raises(LabelError, match="'t' has NaN or infinite labels"):
        open_dataset(nullable.assign(t=gaps), target="t").classes


def test_fit_with_nan_policy_on_nullable_frame(nullable: pd.DataFrame) -> None:
    label = (np.arange(N_ROWS) % 2).astype(int)
    with pytest.raises(DataError, match="feature column 'i' at row 3"):
        _model().fit(nullable, label, nan_policy="raise")
    dataset = classification_dataset(nullable, label, nan_policy="drop")
    model = _model().fit(dataset)
    reference = _as_float(nullable)  # pd.NA as NaN, converted by hand
    keep = np.isfinite(reference).all(axis=1)
    expected = _model().fit(open_dataset(reference, target=label, nan_policy="drop"))
    rows = pd.DataFrame(reference[keep], columns=nullable.columns)  # as the model was fitted
    np.testing.assert_allclose(model.decision_function(rows),
                               expected.decision_function(reference[keep]), rtol=1e-6)


# -- 3. lists, object arrays, a column-vector y ---------------------------------------------
@pytest.fixture
def blobs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N_ROWS, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


def test_lists_and_object_arrays_fit_like_arrays(blobs) -> None:
    X, y = blobs
    reference = _model().fit(X, y)
    expected = reference.decision_function(X)
    from_lists = _model().fit(X.tolist(), y.tolist())
    np.testing.assert_allclose(from_lists.decision_function(X.tolist()), expected, rtol=1e-6)
    assert from_lists.score(X.tolist(), y.tolist()) == reference.score(X, y)
    from_objects = _model().fit(X.astype(object), y)
    np.testing.assert_allclose(from_objects.decision_function(X.astype(object)), expected,
                               rtol=1e-6)


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_predict_on_a_dataset_or_a_path_names_what_streams_it(cls, blobs,
                                                             tmp_path: Path) -> None:
    X, y = blobs
    if cls._task == "regression":
        y = X[:, 0] + X[:, 1]
    model = cls().fit(X, y)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(y=y)
    frame.to_parquet(tmp_path / "d.parquet")
    for data in (str(tmp_path / "d.parquet"), tmp_path / "d.parquet",
                 open_dataset(tmp_path / "d.parquet", target="y")):
        with pytest.raises(TypeError, match="streamlearn predict MODEL DATA"):
            model.predict(data)
    # exclude=None is no exclusion
    assert open_dataset(tmp_path / "d.parquet", target="y", exclude=None).n_features == \
        X.shape[1]


def test_column_vector_y_warns_and_scores(blobs) -> None:
    X, y = blobs
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        model = _model().fit(X, y.reshape(-1, 1))
    reference = _model().fit(X, y)
    np.testing.assert_array_equal(model.predict(X), reference.predict(X))
    accuracy = float(np.mean(reference.predict(X) == y))
    assert model.score(X, y.reshape(-1, 1)) == pytest.approx(accuracy)
    assert model.score(X, y) == pytest.approx(accuracy)


# -- 4. polars frames keep their column names ------------------------------------------------
def test_polars_frames_keep_names_at_fit_and_predict(blobs) -> None:
    pl = pytest.importorskip("polars")
    X, y = blobs
    frame = pl.DataFrame({"u": X[:, 0], "v": X[:, 1], "w": X[:, 2]})
    model = _model().fit(frame, y)
    assert tuple(model.feature_names_in_) == ("u", "v", "w")
    reference = _model().fit(X, y)
    np.testing.assert_allclose(model.decision_function(frame), reference.decision_function(X),
                               rtol=1e-6)
    shuffled = frame.select(["w", "u", "v"])
    np.testing.assert_array_equal(model.predict(shuffled), reference.predict(X))
    with pytest.raises(SchemaError, match=r"missing \['w'\]"):
        model.predict(frame.select(["u", "v"]).with_columns(z=frame["w"]))
    with_target = frame.with_columns(label=pl.Series(y))
    assert model.score(with_target.drop("label"), y) == reference.score(X, y)
    named = _model().fit(with_target, "label")
    assert tuple(named.feature_names_in_) == ("u", "v", "w")


# -- 5. a dask DataFrame with a separate target ---------------------------------------------
@pytest.mark.parametrize("target_kind", ["dask-series", "dask-array", "numpy"])
def test_dask_frame_with_separate_target(blobs, target_kind: str) -> None:
    X, y = blobs
    pdf = pd.DataFrame(X, columns=["u", "v", "w"])
    ddf = dd.from_pandas(pdf, npartitions=3)
    target = {"dask-series": dd.from_pandas(pd.Series(y), npartitions=2),
              "dask-array": da.from_array(y, chunks=70),
              "numpy": y}[target_kind]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = _model().fit(ddf, target)
    # the same rows with the target as a column of the same partitions (a dask frame's
    # shuffled passes visit its partitions in turn, so an in-memory frame's order differs)
    reference = _model().fit(dd.from_pandas(pdf.assign(y=y), npartitions=3), "y")
    assert tuple(model.feature_names_in_) == ("u", "v", "w")
    np.testing.assert_allclose(model.decision_function(pdf), reference.decision_function(pdf),
                               rtol=1e-6)


@pytest.mark.parametrize("collection", ["dask-frame", "dask-array"])
def test_missing_labels_beside_a_dask_collection_drop_their_rows(blobs, collection: str) -> None:
    """In-memory labels with missing ones (None, NaN, ``pd.NA``) given beside a dask
    collection: nan_policy="drop" drops their rows as it does a table's (each partition
    still matched with its own labels), "raise" and a number refuse them by row."""
    X, y = blobs
    pdf = pd.DataFrame(X, columns=["u", "v", "w"])
    data = (dd.from_pandas(pdf, npartitions=3) if collection == "dask-frame"
            else da.from_array(X, chunks=(70, 3)))
    words = np.where(y == 1, "cat", "dog").astype(object)
    gaps = [0, 69, 70, 71, 150, N_ROWS - 1]  # at partition and block edges
    words[gaps] = None
    keep = ~pd.isna(words)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, N_ROWS)
    weights[[5, 69]] = np.nan  # row 69 misses both
    both = keep & np.isfinite(weights)
    dataset = classification_dataset(data, words, weights, nan_policy="drop")
    assert dataset.n_rows == N_ROWS  # nothing dropped before the partitions are read
    chunks = list(dataset.chunks())
    np.testing.assert_array_equal(np.concatenate([c.index for c in chunks]),
                                  np.flatnonzero(both))
    np.testing.assert_array_equal(np.concatenate([c.X for c in chunks]),
                                  X[both].astype(np.float32))
    np.testing.assert_array_equal(dataset.classes[np.concatenate([c.y for c in chunks])],
                                  words[both])
    np.testing.assert_array_equal(np.concatenate([c.weight for c in chunks]),
                                  weights[both].astype(np.float32))
    # nullable integer labels keep their type; a regressor's NaN targets drop alike
    ints = pd.array(y, dtype="Int64")
    ints[gaps] = pd.NA
    labels = classification_dataset(data, ints, nan_policy="drop")
    np.testing.assert_array_equal(labels.classes, [0, 1])
    assert labels.classes.dtype.kind == "i"
    values = X[:, 0] * 2.0
    values[gaps] = np.nan
    numbers = regression_dataset(data, values, nan_policy="drop")
    np.testing.assert_array_equal(np.concatenate([c.y for c in numbers.chunks()]),
                                  values[keep].astype(np.float32))
    # the dual solver run to a tight duality gap reaches the same model whatever the
    # order of the rows (a dask collection's passes visit its partitions in turn), so
    # the fit equals the one on the rows numpy keeps
    # (no pairs: with nothing to choose, no folds, and so no passes that the comparison
    # does not need; each pass reads the collection's partitions again)
    model = AdditiveSVC(n_bases=5, interactions=0, solver="dcd", C=0.1, tol=1e-5,
                        epochs=500, progress=False, random_state=0)
    reference = clone(model).fit(X[keep], words[keep])
    model.fit(data, words, nan_policy="drop")
    np.testing.assert_array_equal(model.classes_, reference.classes_)
    expected = reference.decision_function(X)
    rows = pdf if collection == "dask-frame" else X
    np.testing.assert_allclose(model.decision_function(rows), expected,
                               atol=2e-3 * np.abs(expected).max())
    for policy in ("raise", 0.0):
        with pytest.raises(LabelError, match="no label at row 0 and 5 more"):
            _model().fit(data, words, nan_policy=policy)


def test_dask_target_of_wrong_length_is_named(blobs) -> None:
    X, y = blobs
    ddf = dd.from_pandas(pd.DataFrame(X, columns=["u", "v", "w"]), npartitions=3)
    with pytest.raises(DataError, match=rf"y has shape \({N_ROWS - 1},\); expected "
                                        rf"\({N_ROWS},\)"):
        _model().fit(ddf, da.from_array(y[:-1], chunks=100))


# -- 6. a continuous target given to a classifier --------------------------------------------
def test_continuous_target_is_refused_for_tables_and_datasets(blobs) -> None:
    X, _ = blobs
    continuous = np.random.default_rng(1).normal(size=N_ROWS)
    frame = pd.DataFrame(X, columns=["u", "v", "w"])
    message = "Unknown label type: continuous"
    with pytest.raises(ValueError, match=message):
        _model().fit(frame, continuous)
    with pytest.raises(LabelError, match=message + r".*'t'"):
        _model().fit(frame.assign(t=continuous), "t")
    with pytest.raises(LabelError, match=message):
        _model().fit(open_dataset(X, target=continuous))
    with pytest.raises(LabelError, match=message):
        _model().fit(pa.Table.from_pandas(frame.assign(t=continuous)), "t")
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(LabelError, match=message):
        _model().fit(ddf, dd.from_pandas(pd.Series(continuous), npartitions=2))


def test_integral_float_labels_are_classes(blobs) -> None:
    X, y = blobs
    model = _model().fit(open_dataset(X, target=y.astype(np.float64)))
    np.testing.assert_array_equal(model.classes_, [0.0, 1.0])
    np.testing.assert_array_equal(model.predict(X), _model().fit(X, y).predict(X))


def test_integer_target_dataset_fits_a_regressor(blobs) -> None:
    from streamlearn.models.supersparse import SuperSparseRegressor

    X, _ = blobs
    counts = (3 * X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)
    dataset = open_dataset(X, target=counts)
    assert dataset.task == "classification"
    model = SuperSparseRegressor().fit(dataset)
    reference = SuperSparseRegressor().fit(X, counts.astype(np.float64))
    np.testing.assert_allclose(model.predict(X), reference.predict(X), rtol=1e-6)


# -- nan_policy as a fit parameter ----------------------------------------------------------
@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_fit_nan_policy_drops_rows_with_missing_values(cls: type) -> None:
    from sklearn.base import is_classifier

    rng = np.random.default_rng(3)
    X = rng.normal(size=(240, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(int) if is_classifier(cls()) else X[:, 0] - X[:, 1]
    holes = X.copy()
    holes[::7, 1] = np.nan
    keep = ~np.isnan(holes).any(axis=1)
    with pytest.raises(ValueError, match="NaN"):
        cls().fit(holes, y, nan_policy="raise")
    dropped = cls().fit(holes, y, nan_policy="drop")
    clean = cls().fit(X[keep], y[keep])
    assert dropped.n_features_in_ == 3
    # the same rows in the same order: the deterministic models give the same predictions,
    # and every model predicts the clean rows about as well as one fitted without the holes
    same = np.mean(dropped.predict(X) == clean.predict(X)) if is_classifier(dropped) else \
        np.corrcoef(dropped.predict(X), clean.predict(X))[0, 1]
    assert same > 0.9


# -- online models take categorical tables too ----------------------------------------------
@pytest.mark.parametrize("cls", [c for c in estimator_classes() if hasattr(c(), "partial_fit")],
                         ids=lambda c: c.__name__)
@pytest.mark.parametrize("give_classes", [False, True])
def test_partial_fit_codes_categorical_tables(cls: type, give_classes: bool) -> None:
    from sklearn.base import is_classifier

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"x": rng.normal(size=400),
                          "c": pd.Categorical(rng.choice(["a", "b", "c"], 400))})
    on = (frame["c"] == "a").to_numpy()
    y = (on ^ (frame["x"].to_numpy() > 0)).astype(int) if is_classifier(cls()) else \
        np.where(on, 2.0, -1.0) + frame["x"].to_numpy()
    kwargs = {"classes": [0, 1]} if give_classes and is_classifier(cls()) else {}
    model = cls().partial_fit(frame[:200], y[:200], **kwargs)
    model.partial_fit(frame[200:], y[200:])
    assert model.categories_ == {"c": ("a", "b", "c")}
    # predictions code the table by the categories: the same as on hand-made codes (a
    # numeric array is taken as codes), and columns are matched by name
    codes = frame.assign(c=frame["c"].cat.codes.astype(np.float64)).to_numpy(np.float32)
    by_name = model.predict(frame)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        np.testing.assert_array_equal(by_name, model.predict(codes))  # by position
    np.testing.assert_array_equal(by_name, model.predict(frame[["c", "x"]]))


@pytest.mark.parametrize("cls", [c for c in estimator_classes() if hasattr(c(), "partial_fit")],
                         ids=lambda c: c.__name__)
def test_partial_fit_refuses_categories_its_first_call_did_not_declare(cls: type) -> None:
    from sklearn.base import is_classifier

    rng = np.random.default_rng(6)
    n = 2000
    cat = rng.choice(list("abcd"), n)
    effect = pd.Series(cat).map({"a": -2.0, "b": 0.0, "c": 2.0, "d": -1.0}).to_numpy()
    x = rng.normal(size=n)
    classifier = is_classifier(cls())
    y = (effect + 0.5 * x > 0).astype(int) if classifier else effect + 0.5 * x
    kwargs = {"classes": [0, 1]} if classifier else {}
    first = np.isin(cat, ["a", "b"])
    plain = pd.DataFrame({"x": x, "cat": cat})
    model = cls(random_state=0).partial_fit(plain[first], y[first], **kwargs)
    before = model.predict(plain[first])
    with pytest.raises(DataError, match=r"feature 'cat' holds \d+ row\(s\) of categories "
                       r"the model does not know \('[cd]', '[cd]'\).*pd\.Categorical"):
        model.partial_fit(plain[~first], y[~first])
    assert model.categories_ == {"cat": ("a", "b")}
    np.testing.assert_array_equal(model.predict(plain[first]), before)  # not trained
    # the full list declared on the first call (rows of a and b only): c and d are trained
    # on as categories of their own, as the effects that made y say
    declared = plain.assign(cat=pd.Categorical(cat, categories=list("abcd")))
    model = cls(random_state=0).partial_fit(declared[first], y[first], **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.partial_fit(declared[~first], y[~first])
    assert model.categories_ == {"cat": tuple("abcd")}
    if cls.__name__.startswith("SuperSparse"):
        return  # its prototypes, drawn from the first call's rows (a, b), miss c and d
    probe = pd.DataFrame({"x": [0.0, 0.0], "cat": pd.Categorical(["c", "d"],
                                                                   categories=list("abcd"))})
    p_c, p_d = model.predict_proba(probe)[:, 1]
    assert p_c > 0.8 and p_d < 0.2


def test_missing_labels_are_named_by_their_row() -> None:
    from streamlearn.models import AdditiveSVC

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    text = np.where(X[:, 0] > 0, "a", "b").astype(object)
    text[7] = None
    numbers = (X[:, 0] > 0).astype(float)
    numbers[5] = np.nan
    for y, row in ((text, 7), (numbers, 5)):
        with pytest.raises(LabelError, match=f"no label at row {row}"):
            AdditiveSVC().fit(X, y)


def test_columns_of_several_levels_are_refused_with_the_way_to_flatten_them() -> None:
    from streamlearn.errors import SourceError
    from streamlearn.models import AdditiveSVC

    columns = pd.MultiIndex.from_tuples([("g", "a"), ("g", "b")])
    frame = pd.DataFrame(np.random.default_rng(0).random((50, 2)), columns=columns)
    with pytest.raises(SourceError, match=r"columns have 2 levels .*'_'.join"):
        AdditiveSVC().fit(frame, np.arange(50) % 2)


def test_reordered_columns_are_put_back_in_order_where_their_labels_are_names() -> None:
    """String labels name the columns: a table of them in another order is read by name.
    Labels 0, 1, ... (``pd.DataFrame(X)``) are no names by scikit-learn's rule: such a
    table is read by position, as ``LogisticRegression`` reads it."""
    from sklearn.linear_model import LogisticRegression

    from streamlearn.models import AdditiveSVC

    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 2))
    y = (X[:, 0] > 0).astype(int)
    named = pd.DataFrame(X, columns=["a", "b"])
    model = AdditiveSVC(interactions=0).fit(named, y)
    np.testing.assert_array_equal(model.predict(named[["b", "a"]]), model.predict(named))
    numbered = pd.DataFrame(X)  # integer column labels
    swapped = numbered[[1, 0]]
    for fitted in (AdditiveSVC(interactions=0).fit(numbered, y),
                   LogisticRegression().fit(numbered, y)):
        np.testing.assert_array_equal(fitted.predict(swapped), fitted.predict(X[:, ::-1]))


def test_a_value_beyond_float32_is_named_as_such() -> None:
    from streamlearn.models import AdditiveSVC

    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    wide = X.copy()
    wide[5, 2] = 1e39
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(DataError, match=r"the value 1e\+39 \(beyond float32's range.* "
                                            r"in feature 'x2' at row 5"):
            AdditiveSVC().fit(wide, y)
        model = AdditiveSVC(interactions=0).fit(X, y)
        wide[5, 2] = np.inf
        with pytest.raises(DataError, match="contains infinity in feature 'x2' at row 5"):
            model.predict(wide)


def test_a_complex_column_is_refused_by_name_not_cut_to_its_real_part() -> None:
    """A table's complex column would otherwise be cast to float32, its imaginary part
    lost with no more than numpy's ComplexWarning; a complex array is refused too."""
    from streamlearn.models import AdditiveSVC

    frame = pd.DataFrame({"a": np.arange(100.0), "z": np.arange(100) * (1 + 1j)})
    y = np.arange(100) % 2
    with pytest.raises(SchemaError, match=r"non-numeric feature column.*'z' \(other\)"):
        AdditiveSVC().fit(frame, y)
    with pytest.raises((SchemaError, ValueError), match="[Cc]omplex"):
        AdditiveSVC().fit(frame.to_numpy(), y)
    # predict too, dense or sparse: a sparse matrix was cast to its real part
    model = AdditiveSVC(interactions=0).fit(frame[["a"]].to_numpy(), y)
    rows = np.arange(4.0)[:, None] * (1 + 1j)
    with pytest.raises(ValueError, match="[Cc]omplex"):
        model.predict(rows)
    for matrix in (sp.csr_matrix(rows), sp.csc_array(rows)):
        with pytest.raises(SchemaError, match="sparse X holds complex128 values"):
            model.predict(matrix)


def test_numeric_rows_of_a_categorical_model_must_hold_its_codes() -> None:
    from streamlearn.models import MixtureSVC

    rng = np.random.default_rng(3)
    n = 600
    frame = pd.DataFrame({"a": rng.normal(size=n),
                          "c": pd.Categorical(rng.choice(["x", "y", "z"], n))})
    y = ((frame["a"] > 0) ^ (frame["c"] == "x")).astype(int)
    model = MixtureSVC().fit(frame, y)
    codes = np.c_[frame["a"], frame["c"].cat.codes].astype(np.float64)
    # an array has no names: its columns are taken by position, with scikit-learn's warning
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        np.testing.assert_array_equal(model.predict(codes), model.predict(frame))
        codes[4, 1] = 3  # one past the categories: an unseen one, as a table codes it
        model.predict(codes)
        for bad in (7.0, 0.5, -1.0):
            codes[4, 1] = bad
            with pytest.raises(DataError, match=f"feature 'c' is categorical .* got {bad:g} "
                                                "at row 4"):
                model.predict(codes)


def test_a_model_fitted_on_an_array_reads_named_columns_by_position_and_says_so() -> None:
    from sklearn.linear_model import LogisticRegression

    from streamlearn.models import AdditiveSVC

    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 2))
    y = (X[:, 0] > 0).astype(int)
    model = AdditiveSVC(interactions=0).fit(X, y)
    with pytest.warns(UserWarning, match="fitted without feature names"):
        by_position = model.predict(pd.DataFrame(X, columns=["a", "b"]))
    np.testing.assert_array_equal(by_position, model.predict(X))
    # the names x0, x1 it gave the columns are not theirs: columns of those names, in
    # another order, are read by position too, as LogisticRegression reads them
    reference = LogisticRegression().fit(X, y)
    swapped = pd.DataFrame(X[:, ::-1], columns=["x1", "x0"])
    with pytest.warns(UserWarning, match="fitted without feature names"):
        reference.predict(swapped)
    with pytest.warns(UserWarning, match="fitted without feature names"):
        np.testing.assert_array_equal(model.predict(swapped), model.predict(X[:, ::-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        plain = model.predict(pd.DataFrame(X))  # integer labels: by position, silently
    np.testing.assert_array_equal(plain, model.predict(X))


@pytest.mark.parametrize("name", ["MixtureSVC", "SuperSparseClassifier"])
def test_an_unseen_category_of_two_is_read_as_the_columns_mean(name: str) -> None:
    """A column of two categories is one 0/1 column: an unseen category is read as the
    column's training mean, not as the code 2 past both categories (extrapolated): the
    scores of the same model fitted on the 0/1 numbers, at the mean."""
    from streamlearn import models
    from tests.category_problem import two_category_problem, unseen_against_the_mean

    cls = getattr(models, name)
    frame, numbers, y = two_category_problem()
    model = cls(random_state=0).fit(frame, y)
    reference = cls(random_state=0).fit(numbers, y)
    scores, by_hand = unseen_against_the_mean(model, reference, frame, numbers)
    np.testing.assert_allclose(scores, by_hand, rtol=1e-6, atol=1e-9)
    assert min(scores[:2]) < scores[2] < max(scores[:2])


def test_an_arrow_tables_stored_pandas_index_is_not_a_feature(blobs) -> None:
    """``pa.Table.from_pandas`` of a shuffled frame stores its index as a column
    (``__index_level_0__``); as of a parquet file, it is no feature unless named: a model
    fitted on the table is the one fitted on the frame's columns, and predicts the table,
    index column and all, as it predicts the frame."""
    X, y = blobs
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(t=y).sample(frac=1,
                                                                      random_state=1)
    table = pa.Table.from_pandas(frame)
    assert "__index_level_0__" in table.column_names
    dataset = open_dataset(table, target="t")
    assert dataset.feature_names == ("a", "b", "c")
    np.testing.assert_array_equal(_stream(dataset),
                                  frame[["a", "b", "c"]].to_numpy(np.float32))
    named = open_dataset(table, target="t", features=["a", "__index_level_0__"])
    np.testing.assert_array_equal(_stream(named)[:, 1], frame.index.to_numpy(np.float32))
    features = table.drop_columns(["t"])
    model = _model().fit(features, frame["t"].to_numpy())
    assert list(model.feature_names_in_) == ["a", "b", "c"]
    reference = _model().fit(frame[["a", "b", "c"]].to_numpy(), frame["t"].to_numpy())
    np.testing.assert_allclose(model.decision_function(features),
                               reference.decision_function(frame[["a", "b", "c"]].to_numpy()),
                               rtol=1e-6)


def test_a_category_no_row_holds_is_no_class(blobs) -> None:
    """A categorical target's unused categories (a split of a labelled frame, a declared
    list) are no classes: the classes are the labels the rows hold, as of the same labels
    given as an array or as text, and one label held is one class, refused."""
    X, y = blobs
    text = np.where(y == 1, "yes", "no")
    labels = pd.Categorical(text, categories=["maybe", "no", "yes"])
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    dataset = open_dataset(frame.assign(t=labels), target="t")
    np.testing.assert_array_equal(dataset.classes, np.unique(text))
    model = _model().fit(dataset)
    reference = _model().fit(frame, text)
    np.testing.assert_array_equal(model.classes_, reference.classes_)
    np.testing.assert_allclose(model.decision_function(frame),
                               reference.decision_function(frame), rtol=1e-6)
    one = pd.Categorical(np.full(N_ROWS, "yes"), categories=["no", "yes"])
    with pytest.raises(LabelError, match=r"target 't' has 1 class \(\['yes'\]\)"):
        _model().fit(open_dataset(frame.assign(t=one), target="t"))


@pytest.mark.parametrize("dtype", ["Int64", "boolean", "int64[pyarrow]"])
def test_nullable_labels_keep_their_type(blobs, dtype: str) -> None:
    """Labels of a nullable pandas dtype are classes of its numpy type (ints, booleans),
    as the same column's are as a table's target and as numpy labels', not floats; under
    nan_policy="drop" their missing ones drop their rows."""
    X, y = blobs
    plain = (y == 1) if dtype == "boolean" else y
    labels = pd.Series(pd.array(plain, dtype=dtype))
    reference = _model().fit(X, plain)
    for data in (X, pd.DataFrame(X, columns=["a", "b", "c"])):
        model = _model().fit(data, labels)
        assert model.classes_.dtype == reference.classes_.dtype
        np.testing.assert_array_equal(model.predict(data), reference.predict(X))
    gaps = labels.copy()
    gaps[[4, 9]] = pd.NA
    keep = np.ones(N_ROWS, dtype=bool)
    keep[[4, 9]] = False
    dropped = _model().fit(X[keep], plain[keep])
    for data in (X, pd.DataFrame(X, columns=["a", "b", "c"])):
        with pytest.raises(LabelError, match="no label at row 4 and 1 more"):
            _model().fit(data, gaps)
        model = _model().fit(data, gaps, nan_policy="drop")
        assert model.classes_.dtype == reference.classes_.dtype
        np.testing.assert_allclose(model.decision_function(data),
                                   dropped.decision_function(X), rtol=1e-6)


@pytest.mark.parametrize("kind", ["arrow", "parquet", "pandas-arrow"])
def test_a_decimal_target_reads_as_the_float_target(blobs, kind: str, tmp_path: Path) -> None:
    """A decimal target column (a database's NUMERIC labels) is a number column, as a
    float64 one: its integral values are the classes of a classifier, its missing ones
    dropped by nan_policy="drop", and its values a regressor's targets."""
    import decimal

    X, y = blobs
    labels = [None if i == 6 else decimal.Decimal(int(v)) for i, v in enumerate(y)]
    values = X[:, 0] * 3 + 1
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "t": pa.array(labels, pa.decimal128(3, 0)),
                      "r": pa.array([decimal.Decimal(f"{v:.2f}") for v in values],
                                    pa.decimal128(6, 2))})
    floats = table.set_column(2, "t", pa.array([None if v is None else float(v)
                                                for v in labels], pa.float64()))
    data: object = table
    if kind == "parquet":  # the reference a file too: a file's held-out rows are its own
        pq.write_table(table, tmp_path / "d.parquet")
        pq.write_table(floats, tmp_path / "floats.parquet")
        data, floats = str(tmp_path / "d.parquet"), str(tmp_path / "floats.parquet")
    elif kind == "pandas-arrow":
        data = table.to_pandas(types_mapper=pd.ArrowDtype)
    dataset = open_dataset(data, target="t", exclude=["r"], nan_policy="drop")
    reference = open_dataset(floats, target="t", exclude=["r"], nan_policy="drop")
    np.testing.assert_array_equal(dataset.classes, reference.classes)
    model = _model().fit(dataset.with_task("classification"))
    expected = _model().fit(reference.with_task("classification"))
    np.testing.assert_array_equal(model.classes_, expected.classes_)
    rows = table.select(["a", "b"])
    np.testing.assert_allclose(model.decision_function(rows), expected.decision_function(rows),
                               rtol=1e-6)
    regression = open_dataset(data, target="r", exclude=["t"])
    assert regression.task == "regression"
    np.testing.assert_allclose(np.concatenate([c.y for c in regression.chunks()]),
                               np.round(values, 2).astype(np.float32))


def test_a_date_column_at_predict_is_refused_by_name_as_at_fit(blobs) -> None:
    """A date, time or duration column (and a complex one) is no feature: ``fit`` refuses
    it, and so does ``predict`` where the model saw numbers, rather than reading its
    nanoseconds since 1970 (or a complex number's real part) as the feature's values."""
    X, y = blobs
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model = _model().fit(frame, y)
    columns = {"datetime64": pd.date_range("2020-01-01", periods=N_ROWS, freq="D"),
               "tz-aware": pd.date_range("2020-01-01", periods=N_ROWS, freq="h", tz="UTC"),
               "timedelta64": pd.to_timedelta(np.arange(N_ROWS), unit="s"),
               "timestamp[pyarrow]": pd.array(pd.date_range("2020-01-01", periods=N_ROWS),
                                              dtype="timestamp[ns][pyarrow]"),
               "complex": X[:, 0] * (1 + 1j)}
    for values in columns.values():
        dated = frame.assign(b=values)
        with pytest.raises(SchemaError, match=r"non-numeric feature column.*'b'"):
            _model().fit(dated, y)
        said = f"feature column 'b' of X is {dated['b'].dtype}, not numbers"
        with pytest.raises(SchemaError, match=re.escape(said)):
            model.predict(dated)


def test_duplicate_column_names_at_predict_are_named(blobs) -> None:
    """A table holding a column name twice is refused by ``fit``, and by ``predict`` with
    the name, rather than by a count of features or Arrow's KeyError."""
    from streamlearn.errors import SourceError

    X, y = blobs
    model = _model().fit(pd.DataFrame(X, columns=["a", "b", "c"]), y)
    twice = pd.DataFrame(np.c_[X, X[:, 0]], columns=["a", "b", "c", "a"])
    with pytest.raises(SourceError, match=r"duplicate column names \['a'\]"):
        _model().fit(twice, y)
    for table in (twice, pa.Table.from_arrays([pa.array(v) for v in twice.to_numpy().T],
                                              names=list(twice.columns))):
        with pytest.raises(SchemaError, match=r"X has duplicate column names \['a'\]"):
            model.predict(table)


@pytest.mark.parametrize("kind", ["int", "bool", "float"])
def test_numbers_beside_none_in_object_labels_are_classes_of_their_type(blobs,
                                                                        kind: str) -> None:
    """An object array of numbers with None among them (how a list of ints with gaps
    reaches numpy) drops the unlabelled rows under nan_policy="drop" and trains on the
    others as the same labels of their numpy type, not as labels of an unknown type."""
    X, y = blobs
    plain = {"int": y, "bool": y == 1, "float": y.astype(float)}[kind]
    gaps = plain.astype(object)
    gaps[[3, 8, 20]] = None
    keep = np.ones(N_ROWS, dtype=bool)
    keep[[3, 8, 20]] = False
    reference = _model().fit(X[keep], plain[keep])
    with pytest.raises(LabelError, match="no label at row 3 and 2 more"):
        _model().fit(X, gaps)
    model = _model().fit(X, gaps, nan_policy="drop")
    assert model.classes_.dtype == reference.classes_.dtype
    np.testing.assert_array_equal(model.classes_, reference.classes_)
    np.testing.assert_allclose(model.decision_function(X), reference.decision_function(X),
                               rtol=1e-6)


def test_a_word_in_a_numeric_array_is_named_with_its_feature_and_row() -> None:
    # numpy's own message ("could not convert string to float: 'abc'") names neither
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    words = X.astype(object)
    words[7, 2] = "abc"
    with pytest.raises(DataError, match=r"'abc' in feature 'x2' at row 7, which is not a"):
        _model().fit(words, y)
    fitted = _model().fit(X, y)
    with pytest.raises(ValueError, match=r"'n/a' in feature 'x1' at row 1"):
        fitted.predict([[0.0, 1.0, 2.0], [0.5, "n/a", 1.0]])
    # numbers written as text are numbers, as numpy reads them
    np.testing.assert_array_equal(fitted.predict(X.astype(str)), fitted.predict(X))
