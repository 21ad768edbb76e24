"""Every bad input raises a streamlearn error whose message names the problem and the place."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zarr
from sklearn.base import clone

from streamlearn import (
    DataError,
    LabelError,
    ReadError,
    SchemaError,
    SourceError,
    StreamlearnError,
    open_dataset,
)
from streamlearn.data.validation import (
    FINITE_CHECK_BLOCK,
    fill_nonfinite,
    finite_rows,
    first_nonfinite,
)
from tests.conftest import (
    FEATURES,
    Reference,
    write_parquet_dir,
    write_parquet_file,
    write_zarr_matrix,
)


def _drain(ds) -> list:
    return list(ds.chunks())


def test_missing_feature_column(ref: Reference) -> None:
    with pytest.raises(SchemaError, match=r"feature column\(s\) \['zz'\] not found"):
        open_dataset(ref.frame, target="label", features=["a", "zz"])


def test_missing_target_column(ref: Reference) -> None:
    with pytest.raises(SchemaError, match="target column 'class' not found.*'label'"):
        open_dataset(ref.frame, target="class")


def test_task_without_target(ref: Reference) -> None:
    with pytest.raises(LabelError, match="needs a target column"):
        open_dataset(ref.frame, task="classification")


def test_non_numeric_feature_column_is_named(ref: Reference) -> None:
    # string and categorical columns of tables are coded (tests/test_inputs.py); a column
    # that is neither numbers nor categories is still refused by name
    frame = ref.frame.assign(when=pd.date_range("2020-01-01", periods=len(ref.frame)))
    with pytest.raises(SchemaError, match=r"'when' \(other\).*exclude="):
        open_dataset(frame, target="label")
    ds = open_dataset(frame, target="label", exclude=["when", "w"])
    assert ds.feature_names == tuple(FEATURES)
    with pytest.raises(SchemaError, match=r"'x0' \(string\).*only in tables"):
        open_dataset(np.array([["Oslo"], ["Lima"]]), target=np.array([0, 1]))


def test_extra_column_in_one_parquet_file(ref: Reference, tmp_path: Path) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    extra = ref.frame.iloc[:10].assign(surprise=1.0)
    write_parquet_file(extra, root / "part-999.parquet")
    with pytest.raises(SchemaError, match=r"part-999.parquet has column\(s\) \['surprise'\]"):
        open_dataset(str(root), target="label")
    ds = open_dataset(str(root), target="label", features=FEATURES)  # explicit: extra is fine
    assert ds.n_rows == 1010


def test_missing_column_in_one_parquet_file(ref: Reference, tmp_path: Path) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    write_parquet_file(ref.frame.iloc[:10].drop(columns=["c"]), root / "part-999.parquet")
    with pytest.raises(SchemaError, match=r"part-999.parquet lacks column\(s\) \['c'\]"):
        open_dataset(str(root), target="label", features=FEATURES)


def test_column_type_differs_across_files(ref: Reference, tmp_path: Path) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    write_parquet_file(ref.frame.iloc[:10].assign(c="x"), root / "part-999.parquet")
    with pytest.raises(SchemaError, match="column 'c' is integer in .* but string in .*part-999"):
        open_dataset(str(root), target="label", features=FEATURES)


def test_nan_names_file_column_and_row(ref: Reference, tmp_path: Path) -> None:
    frame = ref.frame.copy()
    frame.loc[617, "b"] = np.nan
    root = write_parquet_dir(frame, tmp_path / "d", sizes=(300, 300))
    ds = open_dataset(str(root), target="label", features=FEATURES, chunk_rows=200)
    with pytest.raises(DataError) as err:
        _drain(ds)
    message = str(err.value)
    assert "'b'" in message and "part-002.parquet" in message
    assert "row 17 of" in message and "dataset row 617" in message
    assert "nan_policy" in message


def test_inf_is_rejected_like_nan(ref: Reference) -> None:
    X = ref.X.copy()
    X[5, 4] = np.inf
    with pytest.raises(DataError, match="inf in feature column 'x4'"):
        _drain(open_dataset(X, target=ref.label))


def test_nan_policy_drop_and_fill(ref: Reference) -> None:
    X = ref.X.copy()
    bad = [3, 400, 401, 999]
    X[bad, 1] = np.nan
    ds = open_dataset(X, target=ref.label, nan_policy="drop", chunk_rows=128)
    chunks = _drain(ds)
    rows = np.concatenate([c.rows for c in chunks])
    keep = np.setdiff1d(np.arange(1000), bad)
    np.testing.assert_array_equal(rows, keep)
    np.testing.assert_array_equal(np.concatenate([c.X for c in chunks]), ref.X[keep])
    assert ds.schema.n_rows == ds.n_rows == 1000  # the stored rows, the dropped included
    filled = np.concatenate([c.X for c in open_dataset(X, target=ref.label, nan_policy=-1.5)])
    expected = ref.X.copy()
    expected[bad, 1] = -1.5
    np.testing.assert_array_equal(filled, expected)
    assert np.isnan(X[bad, 1]).all(), "the caller's array must not be modified"
    with pytest.raises(ValueError, match="nan_policy must be"):
        open_dataset(X, target=ref.label, nan_policy="ignore")


def test_missing_target_value(ref: Reference) -> None:
    frame = ref.frame.astype({"label": "float64"})
    frame.loc[42, "label"] = np.nan
    with pytest.raises(DataError, match=r"target 'label' is nan at row 42 .*nan_policy='drop'"):
        _drain(open_dataset(frame, target="label", exclude=["w"], task="classification",
                            classes=[3, 5, 7]))
    strings = ref.frame.assign(label=ref.frame["label"].astype(str).astype(object))
    strings.loc[42, "label"] = None
    with pytest.raises(DataError, match=r"target column 'label' is missing \(null\) at row 42 "
                                        ".*nan_policy='drop'"):
        _drain(open_dataset(strings, target="label", exclude=["w"], classes=["3", "5", "7"]))


def test_single_class(ref: Reference) -> None:
    with pytest.raises(LabelError, match=r"1 class \(\[1\]\).*at least two"):
        open_dataset(ref.X, target=np.ones(1000, dtype=int)).classes


def test_label_outside_declared_classes(ref: Reference) -> None:
    ds = open_dataset(ref.X, target=ref.label, classes=[3, 5])
    with pytest.raises(LabelError, match=r"label 7 of target 'y' at row \d+ .* not one of"):
        _drain(ds)
    # consecutive integer classes take a shortcut; an unknown label still names its row
    first = int(np.flatnonzero(ref.label == 7)[0])
    ds = open_dataset(ref.X, target=ref.label, classes=[3, 4, 5, 6], chunk_rows=100)
    with pytest.raises(LabelError, match=rf"label 7 of target 'y' at row {first} .*"
                                         r"not one of the classes \[3, 4, 5, 6\]"):
        _drain(ds)


def test_regression_on_string_target(ref: Reference) -> None:
    frame = ref.frame.assign(label=ref.frame["label"].astype(str))
    with pytest.raises(LabelError, match="regression needs a numeric target"):
        open_dataset(frame, target="label", task="regression")


def test_continuous_target_as_classification(ref: Reference) -> None:
    y = np.random.default_rng(0).normal(size=20_001)
    ds = open_dataset(np.zeros((20_001, 1)), target=y, task="classification")
    with pytest.raises(LabelError, match="task='regression'"):
        ds.classes


def test_negative_weight(ref: Reference) -> None:
    w = ref.weight.copy()
    w[77] = -1
    with pytest.raises(DataError, match="weight column 'weight' is -1.0 at row 77"):
        _drain(open_dataset(ref.X, target=ref.label, weight=w))


def test_negative_or_missing_sample_weight_in_fit_names_the_row(ref: Reference) -> None:
    from streamlearn.models import AdditiveSVC

    w = np.ones(len(ref.label))
    w[77] = -2.0
    with pytest.raises(DataError, match="-2 at row 77; weights are non-negative"):
        AdditiveSVC().fit(ref.X, ref.label, sample_weight=w)
    w[77] = np.nan
    with pytest.raises(DataError, match="NaN or infinite values .first at row 77"):
        AdditiveSVC().fit(ref.X, ref.label, sample_weight=w)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_missing_sample_weight_in_fit_follows_nan_policy() -> None:
    """A NaN or infinite in-memory weight drops its row under nan_policy="drop", as a
    weight column's does (arrays, tables, sparse rows), and is named under "raise"."""
    import scipy.sparse as sp

    from streamlearn.models import SuperSparseRegressor

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(240, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2
    w = rng.uniform(0.5, 2.0, size=240)
    w[[5, 60]], w[100] = np.nan, -np.inf
    keep = np.isfinite(w)
    model = SuperSparseRegressor(n_prototypes=4, max_iter=3, tol=1e-2)
    dense = clone(model).fit(X[keep], y[keep], sample_weight=w[keep]).predict(X)
    sparse = clone(model).fit(sp.csr_matrix(X[keep]), y[keep],
                              sample_weight=w[keep]).predict(X)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    for data, reference in ((X, dense), (frame, dense), (pa.Table.from_pandas(frame), dense),
                            (sp.csr_matrix(X), sparse)):
        dropped = clone(model).fit(data, y, sample_weight=w, nan_policy="drop")
        rows = frame if hasattr(dropped, "feature_names_in_") else X  # as it was fitted
        np.testing.assert_allclose(dropped.predict(rows), reference, rtol=1e-12)
        with pytest.raises(DataError, match=r"sample_weight contains NaN or infinite values "
                                            r"\(first at row 5, 3 in all\).*nan_policy='drop'"):
            clone(model).fit(data, y, sample_weight=w)
    chunks = _drain(open_dataset(sp.csr_matrix(X), target=y, weight=w, nan_policy="drop"))
    np.testing.assert_array_equal(np.concatenate([c.weight for c in chunks]),
                                  w[keep].astype(np.float32))


def test_weights_and_sparse_values_beyond_float32_are_named(ref: Reference,
                                                            tmp_path: Path) -> None:
    """A finite weight or stored sparse value beyond float32's range is named as such, not
    as the infinity float32 makes of it."""
    import scipy.sparse as sp

    from streamlearn.models import AdditiveSVC, SuperSparseRegressor

    w = ref.weight.astype(np.float64)
    w[77], w[5] = 1e39, 3e38  # beyond float32's range; within it
    row = int(np.flatnonzero(w > np.finfo(np.float32).max)[0])
    beyond = rf"the value 1e\+39 \(beyond float32's range.*rescale the weights\) at row {row}"
    with pytest.raises(DataError, match=f"sample_weight contains {beyond}"):
        AdditiveSVC().fit(ref.X, ref.label, sample_weight=w)
    frame = pd.DataFrame(ref.X, columns=FEATURES).assign(label=ref.label, w=w)
    path = write_parquet_file(frame, tmp_path / "w.parquet")
    for data, weight in ((ref.X, w), (frame, "w"), (path, "w")):
        target = ref.label if weight is w else "label"
        with pytest.raises(DataError, match=f"weight column '(weight|w)' is {beyond}"):
            _drain(open_dataset(data, target=target, weight=weight, nan_policy="drop"))
    # weights within the range are read as numpy casts them
    inside = w.copy()
    inside[row] = 2.0
    chunks = _drain(open_dataset(ref.X, target=ref.label, weight=inside))
    np.testing.assert_array_equal(np.concatenate([c.weight for c in chunks]),
                                  inside.astype(np.float32))
    # a stored value of a sparse X, by its row and column
    dense = np.where(np.abs(ref.X) > 1.0, ref.X, 0.0)[:, :4].astype(np.float64)
    dense[40, 3], dense[30, 2] = 1e39, -5e39
    r, c = np.argwhere(np.abs(dense) > np.finfo(np.float32).max)[0]
    value = re.escape(f"{dense[r, c]:g}")
    with pytest.raises(DataError, match=rf"Input X contains the value {value} "
                                        rf"\(beyond float32's range.*rescale the feature\) in "
                                        rf"feature 'x{c}' at row {r}"):
        SuperSparseRegressor().fit(sp.csc_matrix(dense), ref.X[:, 0])


def test_missing_or_unordered_labels_of_an_array_target_are_named() -> None:
    X = np.zeros((4, 2), np.float32)
    with pytest.raises(DataError, match=r"target column 'y' is missing \(null\) at row 3 of "
                                        r"array .*nan_policy='drop'"):
        list(open_dataset(X, target=np.array(["a", "b", "a", None], dtype=object)).chunks())
    with pytest.raises(LabelError, match="mix types that cannot be ordered"):
        open_dataset(X, target=np.array([1, "b", 2, "a"], dtype=object))


@pytest.mark.parametrize("sparse", [False, True])
def test_missing_labels_of_an_array_target_follow_nan_policy(sparse: bool) -> None:
    """open_dataset(X, target=y) drops the rows of y's missing labels (None, NaN, pd.NA in
    an object array; NaN in a float one) under nan_policy='drop', as fit does, and names
    the first one otherwise: the rows read are those numpy keeps, and a model fitted on
    the dataset is the one fitted on those rows."""
    import scipy.sparse as sp

    from streamlearn.models import ShareBoostClassifier

    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 3))
    X[np.abs(X) < 0.3] = 0.0
    text = np.where(X[:, 0] + X[:, 1] > 0, "in", "out").astype(object)
    text[[3, 50]], text[77], text[120] = None, np.nan, pd.NA
    numbers = np.where(X[:, 0] > X[:, 2], 1.0, 0.0)
    numbers[[0, 9, 299]] = np.nan
    data = sp.csr_matrix(X) if sparse else X
    for y in (text, numbers):
        kept = np.flatnonzero(~pd.isna(y))
        ds = open_dataset(data, target=y, task="classification", nan_policy="drop",
                          chunk_rows=64)
        assert ds.n_rows == 300
        np.testing.assert_array_equal(ds.class_labels(), np.unique(y[kept].tolist()))
        chunks = list(ds.chunks())
        np.testing.assert_array_equal(np.concatenate([c.rows for c in chunks]), kept)
        np.testing.assert_array_equal(ds.class_labels()[np.concatenate([c.y for c in chunks])],
                                      y[kept])
        # no rows held out: they are drawn by a hash of the row number, which the dropped
        # rows' gaps shift, so a held-out choice would differ between the two fits
        model = ShareBoostClassifier(random_state=0, validation_fraction=None).fit(ds)
        reference = ShareBoostClassifier(random_state=0, validation_fraction=None).fit(
            data[kept], y[kept].astype(str if y is text else float))
        np.testing.assert_array_equal(model.classes_, reference.classes_)
        np.testing.assert_allclose(model.decision_function(data),
                                   reference.decision_function(data), rtol=1e-6)
        first = int(np.flatnonzero(pd.isna(y))[0])
        error = DataError if y is text else LabelError  # a float label: by the class scan
        with pytest.raises(error, match="nan_policy='drop'") as raised:
            list(open_dataset(data, target=y, task="classification", chunk_rows=64).chunks())
        assert f"row {first} of " in str(raised.value)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", ["SparsePPRRegressor", "SuperSparseRegressor"])
def test_missing_targets_of_arrays_follow_nan_policy(name: str) -> None:
    """A NaN or infinite target in arrays: nan_policy="drop" fits the rows numpy keeps
    (their X and weights), "raise" names the first such row, as streamed data does."""
    import streamlearn.models as models

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(240, 3)).astype(np.float32)
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2
    w = rng.uniform(0.5, 2.0, size=240)
    y[[5, 60]], y[100] = np.nan, np.inf
    keep = np.isfinite(y)
    params = (dict(n_terms=2, coarse_step=0.25, fine_step=0.05, max_iter=4)
              if name == "SparsePPRRegressor" else dict(n_prototypes=4, max_iter=3, tol=1e-2))
    model = getattr(models, name)(**params)
    dropped = clone(model).fit(X, y, sample_weight=w, nan_policy="drop")
    reference = clone(model).fit(X[keep], y[keep], sample_weight=w[keep])
    if hasattr(dropped, "n_train_"):
        assert dropped.n_train_ == int(keep.sum())
    np.testing.assert_allclose(dropped.predict(X), reference.predict(X), rtol=1e-12)
    with pytest.raises(DataError, match=r"y contains NaN at row 5 and 2 more rows.*"
                                        r"nan_policy='drop'"):
        clone(model).fit(X, y, sample_weight=w)
    with pytest.raises(DataError, match="no target on any of its 2 rows"):
        clone(model).fit(X[:2], np.full(2, np.nan), nan_policy="drop")
    # a table with the target as an array: the same rows dropped, or the same error
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    from_table = clone(model).fit(frame, y, sample_weight=w, nan_policy="drop")
    np.testing.assert_allclose(from_table.predict(frame), reference.predict(X), rtol=1e-12)
    with pytest.raises(DataError, match=r"y contains NaN at row 5"):
        clone(model).fit(pa.Table.from_pandas(frame), y)


def _registered() -> list[type]:
    from streamlearn.models.registry import estimator_classes

    return estimator_classes()


@pytest.mark.parametrize("cls", _registered(), ids=lambda c: c.__name__)
def test_nan_policy_drop_that_leaves_no_row_is_refused_by_every_model(cls: type) -> None:
    from sklearn.base import is_classifier

    X = np.random.default_rng(0).normal(size=(500, 3))
    X[:, 2] = np.nan
    y = (X[:, 0] > 0).astype(int) if is_classifier(cls()) else X[:, 0].copy()
    with pytest.raises(DataError, match=r"nan_policy='drop' left no rows to train on in "
                       r"array of shape \(500, 3\) \(500 rows\): feature 'x2' is missing "
                       r"\(NaN, infinite or empty\) on every row"):
        cls().fit(X, y, nan_policy="drop")


def test_nan_policy_drop_that_leaves_no_row_names_the_columns_of_a_file(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(600, 3)), columns=["a", "b", "c"])
    frame.loc[frame.index % 3 == 0, "a"] = np.nan  # a, c and the target share the rows
    frame.loc[frame.index % 3 == 1, "c"] = np.inf
    frame["t"] = np.where(frame.index % 3 == 2, np.nan, rng.integers(0, 2, 600))
    path = tmp_path / "holes.parquet"
    frame.to_parquet(path, row_group_size=128)
    counts = (~np.isfinite(frame)).sum()  # the reference: pandas' count of each column
    from streamlearn.models import AdditiveSVC

    ds = open_dataset(str(path), target="t", nan_policy="drop", chunk_rows=100)
    with pytest.raises(DataError, match=(
            rf"left no rows to train on in {path} \(600 rows\): every row misses a value "
            rf"\(NaN, infinite or empty\): feature 'a' on {counts['a']} rows, feature 'c' on "
            rf"{counts['c']} rows, target 't' on {counts['t']} rows; leave such columns out")):
        AdditiveSVC().fit(ds)
    from streamlearn.models.search import StreamSearchCV

    with pytest.raises(DataError, match=rf"left no rows .* feature 'a' on {counts['a']} rows"):
        StreamSearchCV(AdditiveSVC(), {"C": [0.1, 1.0]}).fit(ds)  # the search's own opening
    # one row kept, in the last chunk: no error, and that row is what the chunks hold
    frame.loc[599, ["a", "c", "t"]] = [0.5, 0.5, 1.0]
    frame.to_parquet(path, row_group_size=128)
    ds = open_dataset(str(path), target="t", nan_policy="drop", chunk_rows=100)
    ds.check_rows_left()
    assert [r for c in ds.chunks() for r in c.rows] == [599]


def test_a_finite_target_beyond_float32_is_named_for_arrays_tables_and_files(
        tmp_path: Path) -> None:
    """The models compute in float32, where a target of 1e39 would become infinite: it is
    refused, under every policy, naming its row and value, wherever it comes from."""
    from streamlearn.models import SparsePPRRegressor, SuperSparseRegressor

    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 3))
    y = X[:, 0].copy()
    y[[17, 40]] = [1e39, -2e39]
    y[60] = 3e38  # within float32's range: kept
    row = int(np.flatnonzero(np.abs(y) > np.finfo(np.float32).max)[0])
    message = rf"1e\+39 \(beyond float32's range.*rescale the target\) at row {row}"
    for model in (SparsePPRRegressor(), SuperSparseRegressor()):
        for policy in ("raise", "drop", 0.0):
            with pytest.raises(DataError, match=f"Input y contains the value {message}"):
                clone(model).fit(X, y, nan_policy=policy)
    with pytest.raises(DataError, match=f"Input y contains the value {message}"):
        SuperSparseRegressor().partial_fit(X, y)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(t=y)
    path = write_parquet_file(frame, tmp_path / "t.parquet")
    for data in (frame, path):
        with pytest.raises(DataError, match=f"target 't' is the value {message}"):
            _drain(open_dataset(data, target="t", task="regression", nan_policy="drop"))
    fitted = SparsePPRRegressor(n_terms=1, max_iter=2).fit(X[100:], y[100:])
    with pytest.raises(DataError, match=f"target 't' is the value {message}"):
        fitted.score(path, "t")
    # a value within float32's range is read as numpy casts it
    kept = np.concatenate([c.y for c in open_dataset(frame.iloc[50:70], target="t",
                                                     task="regression").chunks()])
    np.testing.assert_array_equal(kept, y[50:70].astype(np.float32))


def test_missing_labels_of_arrays_are_dropped_with_their_rows() -> None:
    from streamlearn.models import SparseJSBoostClassifier

    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(240, 3)).astype(np.float32)
    y = np.where(X[:, 0] + X[:, 1] > 0, "in", "out").astype(object)
    y[7], y[90] = None, np.nan
    keep = np.array([v is not None and v == v for v in y])
    model = SparseJSBoostClassifier(n_rounds=3, n_bins=8, coarse_step=0.25, fine_step=0.05,
                                    max_iter=4)
    dropped = clone(model).fit(X, y, nan_policy="drop")
    reference = clone(model).fit(X[keep], y[keep].astype(str))
    assert dropped.classes_.tolist() == ["in", "out"]
    np.testing.assert_allclose(dropped.decision_function(X), reference.decision_function(X),
                               rtol=1e-12)
    with pytest.raises(LabelError, match="has no label at row 7"):
        clone(model).fit(X, y)
    table = pa.Table.from_pandas(pd.DataFrame(X, columns=["a", "b", "c"]))
    from_table = clone(model).fit(table, y, nan_policy="drop")
    np.testing.assert_allclose(from_table.decision_function(table),
                               reference.decision_function(X), rtol=1e-12)


def test_empty_dataset(ref: Reference, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="has no rows"):
        open_dataset(ref.frame.iloc[:0], target="label")
    path = write_parquet_file(ref.frame.iloc[:0], tmp_path / "empty.parquet")
    with pytest.raises(DataError, match="has no rows"):
        open_dataset(str(path), target="label")


def test_empty_files_among_full_ones_are_skipped(ref: Reference, tmp_path: Path) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    write_parquet_file(ref.frame.iloc[:0], root / "part-001a.parquet")
    ds = open_dataset(str(root), target="label", features=FEATURES, chunk_rows=250)
    np.testing.assert_array_equal(np.concatenate([c.X for c in ds.chunks()]), ref.X)


def test_corrupt_parquet_file_among_good_ones(ref: Reference, tmp_path: Path) -> None:
    root = write_parquet_dir(ref.frame, tmp_path / "d")
    (root / "part-001.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(ReadError, match="part-001.parquet is not a readable parquet file"):
        open_dataset(str(root), target="label")


def test_corrupt_parquet_data_pages(ref: Reference, tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.Table.from_pandas(ref.frame, preserve_index=False), path,
                   row_group_size=500, write_page_checksum=True)
    raw = bytearray(path.read_bytes())
    for k in range(200, 2000):  # garble the first row group's pages, keep the footer intact
        raw[k] ^= 0x5A
    path.write_bytes(bytes(raw))
    ds = open_dataset(str(path), target="label", features=FEATURES)
    with pytest.raises(StreamlearnError, match=r"f.parquet \(row group 0\)"):
        _drain(ds)


def test_parquet_file_replaced_between_passes(ref: Reference, tmp_path: Path) -> None:
    path = write_parquet_file(ref.frame, tmp_path / "f.parquet", row_group_size=250)
    ds = open_dataset(str(path), target="label", features=FEATURES, chunk_rows=100)
    np.testing.assert_array_equal(np.concatenate([c.X for c in ds.chunks()]), ref.X)
    # the same rows, rewritten in the same row groups: read back as they were
    write_parquet_file(ref.frame, tmp_path / "same.parquet", row_group_size=250)
    (tmp_path / "same.parquet").replace(path)
    np.testing.assert_array_equal(np.concatenate([c.X for c in ds.chunks()]), ref.X)
    # as many row groups of other sizes (300, 300, 300, 100): row group k is no longer
    # rows 250 k onwards, and the file says so before any of them is taken
    write_parquet_file(ref.frame, tmp_path / "other.parquet", row_group_size=300)
    assert pq.ParquetFile(tmp_path / "other.parquet").metadata.num_row_groups == 4
    (tmp_path / "other.parquet").replace(path)
    with pytest.raises(ReadError, match=r"f\.parquet changed since it was opened: row "
                                        r"group \d held 250 rows, now \d+ rows"):
        list(ds.chunks(shuffle=True, seed=0, epoch=1))
    # fewer row groups than the pieces
    write_parquet_file(ref.frame, tmp_path / "fewer.parquet", row_group_size=700)
    (tmp_path / "fewer.parquet").replace(path)
    with pytest.raises(ReadError, match=r"f\.parquet changed since it was opened"):
        _drain(ds)


def test_truncated_zarr_chunk(ref: Reference, tmp_path: Path) -> None:
    store = Path(write_zarr_matrix(ref, tmp_path / "m.zarr"))
    chunk_file = store / "X" / "c" / "3" / "0"  # rows 300-400
    chunk_file.write_bytes(chunk_file.read_bytes()[:20])
    ds = open_dataset(str(store), chunk_rows=250)
    with pytest.raises(ReadError, match=r"rows 300-400 of array 'X'"):
        _drain(ds)


def test_ragged_zarr_arrays(tmp_path: Path) -> None:
    group = zarr.open_group(str(tmp_path / "r.zarr"), mode="w")
    group.create_array("a", shape=(10,), dtype="float32")
    group.create_array("b", shape=(12,), dtype="float32")
    with pytest.raises(DataError, match="different numbers of rows"):
        open_dataset(str(tmp_path / "r.zarr"))


def test_misaligned_target_array(ref: Reference) -> None:
    with pytest.raises(DataError, match=r"y has shape \(999,\); expected \(1000,\)"):
        open_dataset(ref.X, target=ref.label[:-1])


def test_unknown_source_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot read a dict"):
        open_dataset({"a": [1, 2]})
    with pytest.raises(SourceError, match="no such file or directory"):
        open_dataset(str(tmp_path / "nothing-here"))


def test_chunk_larger_than_dataset(ref: Reference) -> None:
    chunks = _drain(open_dataset(ref.frame, target="label", chunk_rows=10**6, exclude=["w"]))
    assert len(chunks) == 1 and chunks[0].n_rows == 1000


def test_errors_are_catchable_as_builtin_kinds() -> None:
    assert issubclass(SchemaError, ValueError) and issubclass(ReadError, OSError)
    assert issubclass(SourceError, TypeError)


def test_pandas_nullable_ints_and_bools(ref: Reference) -> None:
    frame = pd.DataFrame({"i": pd.array([1, None, 3], dtype="Int64"), "t": [0, 1, 0]})
    with pytest.raises(DataError, match="nan in feature column 'i' at row 1"):
        _drain(open_dataset(frame, target="t"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nonfinite_kernels_match_numpy(dtype: type) -> None:
    rng = np.random.default_rng(5)
    block = FINITE_CHECK_BLOCK
    cases = [rng.normal(size=(n, d)).astype(dtype)
             for n, d in [(1, 1), (7, 3), (block // 8, 8), (3 * block // 16 + 5, 16)]]
    cases.append(np.empty((0, 4), dtype=dtype))
    for X in cases:
        assert first_nonfinite(X) == -1
        for flat in {0, X.size // 2, X.size - 1, min(block - 1, X.size - 1),
                     min(block, X.size - 1)} if X.size else set():
            for bad in (np.nan, np.inf, -np.inf):
                Y = X.copy()
                Y.flat[flat] = bad
                Y.flat[min(flat + 3, Y.size - 1)] = np.nan  # a later one must not win
                assert first_nonfinite(Y) == int(np.flatnonzero(~np.isfinite(Y.ravel()))[0])
        if X.size:
            Y = X.copy()
            Y.flat[rng.choice(Y.size, size=max(1, Y.size // 10), replace=False)] = np.inf
            np.testing.assert_array_equal(finite_rows(Y), np.isfinite(Y).all(axis=1))
            expected = np.where(np.isfinite(Y), Y, dtype(-2.5))
            n_bad = int((~np.isfinite(Y)).sum())
            assert fill_nonfinite(Y, -2.5) == n_bad
            np.testing.assert_array_equal(Y, expected)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_rows_read_again_are_not_checked_again(ref: Reference, monkeypatch,
                                               sparse: bool) -> None:
    """A fit reads the same chunks pass after pass: their values (and a CSR chunk's
    column indices) are checked on the first read only, in any order of the chunks."""
    import scipy.sparse as sp

    import streamlearn.data.dataset as dataset_module

    checked: list[str] = []

    def counting(name: str):
        real = getattr(dataset_module, name)

        def check(*args):
            checked.append(name)
            return real(*args)
        monkeypatch.setattr(dataset_module, name, check)

    counting("first_nonfinite")
    counting("first_bad_entry")
    X = sp.csr_array(ref.X) if sparse else ref.X
    ds = open_dataset(X, target=ref.label, chunk_rows=300)
    first = [c.X for c in ds.chunks()]
    per_chunk = 2 if sparse else 1
    assert len(checked) == per_chunk * ds.n_chunks
    again = list(ds.chunks(shuffle=True, seed=3))
    assert len(checked) == per_chunk * ds.n_chunks
    dense = np.concatenate([x.to_scipy().toarray() if sparse else x for x in first])
    np.testing.assert_array_equal(dense, ref.X)
    # every block read once (a shuffled walk mixes rows across chunks, each chunk keeping
    # the start of the block whose place it takes)
    assert sorted(c.start for c in again) == list(range(0, ds.n_rows, 300))
    assert sorted(np.concatenate([c.rows for c in again]).tolist()) == list(range(ds.n_rows))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("policy", ["raise", "drop", -2.0])
def test_nonfinite_rows_are_handled_on_every_pass(ref: Reference, policy,
                                                  sparse: bool) -> None:
    import scipy.sparse as sp

    X = ref.X.copy()
    X[5, 4] = np.nan
    ds = open_dataset(sp.csr_array(X) if sparse else X, target=ref.label, chunk_rows=300,
                      nan_policy=policy)
    for _ in range(3):
        if policy == "raise":
            with pytest.raises(DataError, match="nan in (feature )?column '?x4'?"):
                _drain(ds)
            continue
        chunks = _drain(ds)
        values = np.concatenate([c.X.to_scipy().toarray() if sparse else c.X
                                 for c in chunks])
        if policy == "drop":
            assert 5 not in np.concatenate([c.rows for c in chunks])
            assert len(values) == len(X) - 1
        else:
            assert values[5, 4] == -2.0
        assert np.isfinite(values).all()


def test_a_nan_label_of_a_file_or_dask_frame_drops_its_row_with_drop(tmp_path) -> None:
    """Numeric labels with a NaN: the class scan leaves it out and the chunks drop its row
    under nan_policy='drop' (the rows read are the rest); otherwise a LabelError says how."""
    import dask.dataframe as dd
    import pandas as pd

    from streamlearn.errors import LabelError

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(float)
    y[[5, 333]] = np.nan
    frame = pd.DataFrame(X, columns=list("abc")).assign(t=y)
    frame.to_parquet(tmp_path / "t.parquet")
    for data in (str(tmp_path / "t.parquet"), dd.from_pandas(frame, npartitions=3)):
        ds = open_dataset(data, target="t", task="classification", nan_policy="drop")
        assert ds.classes.tolist() == [0.0, 1.0]
        kept = np.concatenate([c.X for c in ds.chunks()])
        np.testing.assert_array_equal(kept, np.delete(X, [5, 333], axis=0).astype(np.float32))
        with pytest.raises(LabelError, match="NaN or infinite labels; pass nan_policy='drop'"):
            _ = open_dataset(data, target="t", task="classification").classes


def test_a_missing_value_of_a_frame_is_placed_once_by_its_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    X = np.arange(1200.0).reshape(300, 4)
    frame = pd.DataFrame(X, columns=list("abcd")).astype("Float64")
    frame.iloc[3, 1] = pd.NA
    with pytest.raises(DataError, match=r"^nan in feature column 'b' at row 3 of DataFrame "
                                        r"of 300 rows \(dataset row 3\); "):
        list(open_dataset(frame).chunks())
    # a frame of several pieces: the row's piece is named by its rows
    from streamlearn.data.sources import in_memory

    monkeypatch.setattr(in_memory, "PIECE_ROWS", 128)
    with pytest.raises(DataError, match=r"at row 3 of DataFrame of 300 rows, piece of rows "
                                        r"0-128 \(dataset row 3\); "):
        list(open_dataset(frame).chunks())
