"""``nan_policy="impute"``: missing values filled and indicated.

The reference is built from scikit-learn (:func:`reference_imputation`): its
``SimpleImputer(strategy="median", add_indicator=True)``, then for each numeric column with
a missing value a ``Ridge(alpha=1)`` on the other columns, standardised by a
``StandardScaler``, whose predictions replace the medians, clipped to the column's observed
range. On data of fewer rows than the map's sample, the map is that transform, and a model
fitted with the policy is the same model as one fitted on the transform's output.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.impute import SimpleImputer

from streamlearn import DataError, MissingValueError, open_dataset
from streamlearn.cli import cli
from streamlearn.engine import LocalEngine
from streamlearn.engine.missing_counts import SAMPLE_ROWS, MissingValuesPass
from streamlearn.features.missing_values import MissingValues
from streamlearn.io.model_file import load_model, save_model
from streamlearn.models import (
    AdditiveSVC,
    MixtureSVC,
    ShareBoostClassifier,
    SparsePPRRegressor,
    SuperSparseClassifier,
    SuperSparseRegressor,
)


def missing_problem(n: int = 1500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Five features, the label from columns 0 and 2; column 2 is missing mostly where
    the label is 1, so that it is missing says much of the label; column 0 is missing at
    random, column 3 (which says nothing) too; column 4 never."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    y = (X[:, 0] + X[:, 2] > 0.5).astype(np.int64)
    X[rng.random(n) < np.where(y == 1, 0.5, 0.03), 2] = np.nan
    X[rng.random(n) < 0.2, 0] = np.nan
    X[rng.random(n) < 0.1, 3] = np.nan
    return X, y


def reference_imputation(X_fit: np.ndarray, categorical: tuple[int, ...] = ()):
    """The transform of the module docstring, fitted on ``X_fit`` (a function of rows)."""
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    imputer = SimpleImputer(strategy="median", add_indicator=True).fit(X_fit)
    d = X_fit.shape[1]
    numeric = [j for j in range(d) if j not in categorical]
    filled_fit = imputer.transform(X_fit)[:, :d].astype(np.float64)
    scaler = StandardScaler().fit(filled_fit[:, numeric])
    fits = {}
    for j in numeric:
        seen = ~np.isnan(X_fit[:, j])
        if seen.all() or not seen.any():
            continue
        others = [k for k in numeric if k != j]
        ridge = Ridge(alpha=1.0).fit(scaler.transform(filled_fit[:, numeric])[seen][
            :, [numeric.index(k) for k in others]], X_fit[seen, j].astype(np.float64))
        fits[j] = (others, ridge, X_fit[seen, j].min(), X_fit[seen, j].max())

    def transform(X: np.ndarray) -> np.ndarray:
        out = imputer.transform(X).astype(np.float64)
        standard = scaler.transform(out[:, numeric])
        for j, (others, ridge, lo, hi) in fits.items():
            gaps = np.isnan(X[:, j])
            if gaps.any():
                predicted = ridge.predict(standard[:, [numeric.index(k) for k in others]])
                out[gaps, j] = np.clip(predicted, lo, hi)[gaps]
        return out.astype(np.float32)

    return transform


def learned_map(X: np.ndarray, chunk_rows: int, categorical: tuple[int, ...] = ()
                ) -> MissingValues:
    data = open_dataset(X, chunk_rows=chunk_rows, nan_policy="impute")
    return LocalEngine().run(MissingValuesPass(data.feature_names, categorical), data)


@pytest.mark.parametrize("chunk_rows", [97, 1024, 5000])
def test_map_is_the_reference_imputation(chunk_rows: int) -> None:
    X, _ = missing_problem()
    imputer = SimpleImputer(strategy="median", add_indicator=True).fit(X)
    missing = learned_map(X, chunk_rows)
    assert missing.columns == (0, 2, 3)
    np.testing.assert_allclose(missing.fill, imputer.statistics_, rtol=0, atol=1e-7)
    X_new, _ = missing_problem(500, seed=4)
    np.testing.assert_allclose(missing.apply(X_new), reference_imputation(X)(X_new),
                               rtol=1e-5, atol=1e-5)
    assert missing.feature_names[5:] == ("x0 is missing", "x2 is missing", "x3 is missing")


def test_regression_fills_a_correlated_column_where_the_median_cannot() -> None:
    rng = np.random.default_rng(2)
    z = rng.normal(size=(2000, 1))
    X = (z + 0.1 * rng.normal(size=(2000, 3))).astype(np.float32)  # three noisy copies
    truth = X.copy()
    X[rng.random(X.shape) < 0.3] = np.nan
    missing = learned_map(X, 500)
    filled = missing.apply(X)[:, :3]
    gaps = np.isnan(X)
    median_error = np.abs(np.array(missing.fill)[None, :] - truth)[gaps].mean()
    regression_error = np.abs(filled - truth)[gaps].mean()
    assert regression_error < 0.5 * median_error  # 0.32 against 0.81 when written


def test_map_on_more_rows_than_its_sample_takes_medians_from_the_sample() -> None:
    rng = np.random.default_rng(1)
    X = rng.exponential(size=(3 * SAMPLE_ROWS, 2)).astype(np.float32)
    X[::3, 1] = np.nan
    missing = learned_map(X, 1000)
    # a uniform sample of 4,096 rows: the median's rank within 0.03 of one half
    for j in range(2):
        seen = X[:, j][~np.isnan(X[:, j])]
        assert abs((seen < missing.fill[j]).mean() - 0.5) < 0.03
    assert missing.columns == (1,)  # counted exactly, over every row
    assert learned_map(X, 4096) == missing  # whatever the chunking


def test_columns_missing_nowhere_or_everywhere_get_no_indicator() -> None:
    X = np.array([[1.0, np.nan, 5.0], [2.0, np.nan, np.nan], [4.0, np.nan, 7.0]],
                 dtype=np.float32)
    with pytest.warns(UserWarning, match=r"'x1' missing \(NaN\) in all 3 training rows"):
        missing = learned_map(X, 2)
    assert missing.columns == (2,)
    assert missing.empty == (1,)
    assert missing.fill == (2.0, 0.0, 6.0)
    rows = np.array([[np.nan, 3.0, np.nan], [10.0, np.nan, np.nan]], dtype=np.float32)
    out = missing.apply(rows)
    # column 2 predicted from column 0 (at its median 2 in the first row; column 1, which
    # is constant once filled, predicts nothing), column 1 at 0
    from sklearn.linear_model import Ridge

    x0 = X[:, 0].astype(np.float64)
    standard = (x0 - x0.mean()) / x0.std()
    ridge = Ridge(alpha=1.0).fit(standard[[0, 2], None], X[[0, 2], 2])
    expected = ridge.predict(((np.array([2.0, 10.0]) - x0.mean()) / x0.std())[:, None])
    np.testing.assert_allclose(out[:, 2], np.clip(expected, 5.0, 7.0), atol=1e-5)
    # column 1, never seen in training, is 0 whatever a row holds there
    np.testing.assert_array_equal(out[:, [1, 3]], [[0.0, 1.0], [0.0, 1.0]])
    assert out[1, 2] == 7.0  # far beyond the rows seen: clipped to their range


@pytest.mark.parametrize("model", [AdditiveSVC(random_state=0), MixtureSVC(random_state=0),
                                   SuperSparseClassifier(random_state=0)])
def test_a_column_missing_in_every_training_row_changes_no_prediction(model) -> None:
    X, y = missing_problem(800)
    X[:, 4] = np.nan
    with pytest.warns(UserWarning, match=r"'x4' missing \(NaN\) in all 800 training rows"):
        model.fit(X, y)
    assert model.missing_values_.empty == (4,)
    # the model is the one fitted on the rows with that column at 0, which it reads so
    # whatever a later row holds there: its values at prediction change nothing
    reference = type(model)(**model.get_params()).fit(_zero_column(X, 4), y)
    new, _ = missing_problem(300, seed=1)
    np.testing.assert_array_equal(model.decision_function(new),
                                  reference.decision_function(_zero_column(new, 4)))
    shifted = new.copy()
    shifted[:, 4] = 100.0
    np.testing.assert_array_equal(model.predict(shifted), model.predict(new))


def _zero_column(X: np.ndarray, j: int) -> np.ndarray:
    out = X.copy()
    out[:, j] = 0.0
    return out


def test_categorical_codes_take_the_most_frequent() -> None:
    X = np.array([[0, 1.5], [2, 1.0], [2, np.nan], [np.nan, 3.0], [1, 2.0]], dtype=np.float32)
    missing = learned_map(X, 2, categorical=(0,))
    assert missing.fill == (2.0, 1.75)
    assert missing.columns == (0, 1)


@pytest.mark.parametrize("model, kind", [
    (AdditiveSVC(), "classifier"),
    (MixtureSVC(), "classifier"),
    (ShareBoostClassifier(), "classifier"),
    (SuperSparseClassifier(), "classifier"),
    (SuperSparseRegressor(), "regressor"),
    (SparsePPRRegressor(), "regressor"),
])
def test_model_is_the_model_of_the_imputers_output(model, kind: str) -> None:
    X, y = missing_problem(1200)
    target = y if kind == "classifier" else (y + 0.1 * np.nan_to_num(X[:, 4])).astype(
        np.float32)
    fitted = model.__class__(**model.get_params()).fit(X, target, nan_policy="impute")
    # the map's own rows: a float32 difference of the reference's would change a knot
    rows = fitted.missing_values_.apply
    np.testing.assert_allclose(rows(X), reference_imputation(X)(X), rtol=1e-5, atol=1e-5)
    reference = model.__class__(**model.get_params()).fit(rows(X), target)
    X_new, _ = missing_problem(300, seed=5)
    method = "decision_function" if kind == "classifier" else "predict"
    np.testing.assert_allclose(getattr(fitted, method)(X_new),
                               getattr(reference, method)(rows(X_new)),
                               rtol=1e-5, atol=1e-5)
    assert fitted.n_features_in_ == 5
    assert fitted.missing_values_.columns == (0, 2, 3)
    importances = getattr(fitted, "feature_importances_", None)
    if importances is not None:  # an indicator's importance is its column's
        assert importances.shape == (5,)


def test_indicators_are_ordinary_columns_before_a_categories_map() -> None:
    from streamlearn.features.category_indicators import CategoryIndicators

    X = np.array([[0.5, 2], [np.nan, 0], [1.5, np.nan], [2.5, 1]], dtype=np.float32)
    data = open_dataset(pd.DataFrame({"a": X[:, 0], "c": pd.Categorical.from_codes(
        [2, 0, -1, 1], ["p", "q", "r"])}), nan_policy="impute")
    missing = LocalEngine().run(MissingValuesPass(data.feature_names, (1,)), data)
    expanded = data.with_feature_expansion(missing)
    assert expanded.feature_names == ("a", "c", "a is missing", "c is missing")
    assert expanded.indicator_features == ()  # scaled and weighed as any feature
    both = expanded.with_feature_expansion(
        CategoryIndicators.of(expanded.feature_names, data.categories))
    assert both.feature_names == ("a", "c=p", "c=q", "c=r", "a is missing", "c is missing")
    assert both.indicator_features == (1, 2, 3)  # the category's one-hot columns
    # an expansion after one that marked indicators keeps them marked, where they went
    categories = data.with_feature_expansion(
        CategoryIndicators.of(data.feature_names, data.categories))
    after = categories.with_feature_expansion(
        MissingValues.of(categories.feature_names, [0.0] * 4, [0]))
    assert after.feature_names == ("a", "c=p", "c=q", "c=r", "a is missing")
    assert after.indicator_features == (1, 2, 3)
    rows = np.concatenate([chunk.X for chunk in both.chunks()])
    # c's missing code filled with its most frequent (all tie: the smallest, p)
    np.testing.assert_array_equal(rows, [[0.5, 0, 0, 1, 0, 0], [1.5, 1, 0, 0, 1, 0],
                                         [1.5, 1, 0, 0, 0, 1], [2.5, 0, 1, 0, 0, 0]])


def test_indicator_carries_what_a_missing_value_means() -> None:
    X, y = missing_problem(3000)
    X_new, y_new = missing_problem(3000, seed=9)
    imputed = AdditiveSVC().fit(X, y, nan_policy="impute").score(X_new, y_new)
    filled = AdditiveSVC().fit(X, y, nan_policy=0.0).score(np.nan_to_num(X_new), y_new)
    dropped = AdditiveSVC().fit(X, y, nan_policy="drop")  # rows with NaN left out
    # 0.93 against 0.864 and 0.846 when written; LightGBM 0.937, HistGradientBoosting 0.935
    assert imputed > filled + 0.03
    assert imputed > dropped.score(np.nan_to_num(X_new), y_new) + 0.03


def test_predicting_a_table_with_missing_values_and_categories(tmp_path) -> None:
    X, y = missing_problem(2000)
    frame = pd.DataFrame(X, columns=list("abcde"))
    rng = np.random.default_rng(3)
    frame["colour"] = pd.Categorical(rng.choice(["red", "green", "blue", None], 2000))
    model = MixtureSVC().fit(frame, y, nan_policy="impute")
    assert list(model.feature_names_in_) == [*"abcde", "colour"]
    assert model.missing_values_.feature_names[6:] == (
        "a is missing", "c is missing", "d is missing", "colour is missing")
    assert model.score(frame, y) > 0.8
    path = tmp_path / "m.slm"
    save_model(model, path)
    np.testing.assert_array_equal(load_model(path).predict(frame), model.predict(frame))
    table = tmp_path / "t.parquet"
    frame.assign(y=y).to_parquet(table)
    assert model.score(str(table), "y") == pytest.approx(model.score(frame, y))


def test_infinite_values_are_refused() -> None:
    X, y = missing_problem(600)
    bad = X.copy()
    bad[3, 1] = np.inf
    with pytest.raises(DataError, match="not an infinite one"):
        AdditiveSVC().fit(bad, y, nan_policy="impute")
    model = AdditiveSVC().fit(X, y, nan_policy="impute")
    with pytest.raises(DataError, match="infinity in feature 'x1' at row 3"):
        model.predict(bad)
    with pytest.raises(DataError, match="infinity in feature 'x1' at row 3"):
        model.partial_fit(bad, y)
    with pytest.raises(DataError, match="contains NaN in feature 'x0'.*nan_policy='impute'"):
        AdditiveSVC().fit(np.nan_to_num(X), y).predict(X)


@pytest.mark.parametrize("model", [AdditiveSVC(random_state=0), MixtureSVC(random_state=0),
                                   SuperSparseClassifier(random_state=0)])
def test_partial_fit_continues_reading_through_the_fits_map(model) -> None:
    import copy

    X, y = missing_problem(3000)
    model.fit(X[:2000], y[:2000])  # the default reads the gaps: a map
    later = X[2000:].copy()
    later[::7, 4] = np.nan  # a column without gaps in fit: its fill value, no indicator
    twin = copy.deepcopy(model)
    model.partial_fit(later, y[2000:])
    # the same call on the rows the map gives, as the model's kernels take them
    filled = twin.missing_values_.apply(later)
    assert not np.isnan(filled).any() and filled.shape[1] == 5 + 3
    if isinstance(twin, AdditiveSVC):
        twin._partial_fit_rows(twin._model_rows(filled), y[2000:], None, False)
    else:
        twin._check_training_X = lambda X: filled  # the rows partial_fit would read
        twin.partial_fit(later, y[2000:])
    X_new, _ = missing_problem(500, seed=3)
    np.testing.assert_array_equal(model.decision_function(X_new),
                                  twin.decision_function(X_new))
    assert model.missing_values_ == twin.missing_values_
    # a model whose fit saw no gap has no map: partial_fit says how to get one
    complete = type(model)(random_state=0).fit(np.nan_to_num(X[:2000]), y[:2000])
    with pytest.raises(DataError, match="partial_fit reads NaN as a missing value only in "
                       "a model that learned how from its first rows"):
        complete.partial_fit(later, y[2000:])


def test_sparse_rows_are_refused() -> None:
    import scipy.sparse as sp

    X, y = missing_problem(600)
    with pytest.raises(DataError, match="sparse rows"):
        AdditiveSVC().fit(sp.csr_matrix(np.nan_to_num(X)), y, nan_policy="impute")


def test_command_line_trains_and_predicts_with_missing_values(tmp_path) -> None:
    X, y = missing_problem(1500)
    table = tmp_path / "d.parquet"
    pd.DataFrame(X, columns=list("abcde")).assign(y=y).to_parquet(table)
    runner = CliRunner()
    described = runner.invoke(cli, ["info", str(table), "--target", "y", "--quiet"])
    assert described.exit_code == 0, described.output
    counts = {line.split()[0]: int(line.split()[1]) for line in described.output.splitlines()
              if line[:2] in ("a ", "b ", "c ")}
    assert counts == {"a": int((~np.isnan(X[:, 0])).sum()), "b": 1500,
                      "c": int((~np.isnan(X[:, 2])).sum())}
    refused = runner.invoke(cli, ["train", str(table), "--target", "y", "--nan-policy",
                                   "raise", "-o", str(tmp_path / "r.slm")])
    assert refused.exit_code != 0 and "nan_policy='impute'" in refused.output
    assert not (tmp_path / "r.slm").exists()
    # without the option, the first gap found trains again under impute: the same model
    again = runner.invoke(cli, ["train", str(table), "--target", "y", "--seed", "0", "-o",
                                str(tmp_path / "a.slm")])
    assert again.exit_code == 0, again.output
    assert "training again, reading NaN as missing values" in again.output
    trained = runner.invoke(cli, ["train", str(table), "--target", "y", "--nan-policy",
                                   "impute", "-o", str(tmp_path / "m.slm")])
    assert trained.exit_code == 0, trained.output
    assert ("missing  : 3 of 5 columns have gaps, each read with an indicator column: "
            "a (predicted), c (predicted), d (predicted)") in trained.output
    retried, given = load_model(tmp_path / "a.slm"), load_model(tmp_path / "m.slm")
    assert retried.missing_values_ == given.missing_values_
    np.testing.assert_array_equal(retried.coef_d_, given.coef_d_)
    out = tmp_path / "p.parquet"
    predicted = runner.invoke(cli, ["predict", str(tmp_path / "m.slm"), str(table),
                                     "-o", str(out)])
    assert predicted.exit_code == 0, predicted.output
    model = load_model(tmp_path / "m.slm")
    np.testing.assert_array_equal(pd.read_parquet(out)["prediction"],
                                  model.predict(pd.DataFrame(X, columns=list("abcde"))))
    # the model reads NaN by default; asked to refuse it, it does
    for command in (["evaluate", str(tmp_path / "m.slm"), str(table), "--target", "y"],
                    ["predict", str(tmp_path / "m.slm"), str(table), "-o",
                     str(tmp_path / "q.parquet")]):
        refused = runner.invoke(cli, [*command, "--nan-policy", "raise"])
        assert refused.exit_code != 0 and "MissingValueError" in refused.output, \
            refused.output
    assert not (tmp_path / "q.parquet").exists()


@pytest.mark.parametrize("refit", [True, False])
def test_search_reads_missing_values_as_its_models_do(refit: bool) -> None:
    from streamlearn.models import StreamSearchCV

    X, y = missing_problem(3000)
    X_new, y_new = missing_problem(1000, seed=9)
    search = StreamSearchCV(AdditiveSVC(), {"C": [0.1, 1.0, 10.0]}, refit=refit,
                            random_state=0).fit(X, y, nan_policy="impute")
    model = search.best_estimator_
    assert model.missing_values_.columns == (0, 2, 3)
    assert model.n_features_in_ == 5
    # the map learned over every row: the search's equals a fit's (same sample seed)
    plain = AdditiveSVC(random_state=0).fit(X, y, nan_policy="impute")
    assert model.missing_values_ == plain.missing_values_
    assert search.score(X_new, y_new) > 0.9


def test_fit_on_dask_equals_the_local_fit(dask_client) -> None:
    from streamlearn.engine import DaskEngine

    X, y = missing_problem(2000)
    local = MixtureSVC(random_state=0).fit(X, y, nan_policy="impute")
    remote = MixtureSVC(random_state=0).fit(X, y, nan_policy="impute",
                                            engine=DaskEngine(dask_client))
    assert remote.missing_values_ == local.missing_values_
    np.testing.assert_allclose(remote.decision_function(X), local.decision_function(X),
                               rtol=1e-6, atol=1e-6)


def test_default_reads_gaps_in_memory_and_from_storage_by_a_second_try(tmp_path) -> None:
    X, y = missing_problem(1500)
    assert AdditiveSVC().fit(X, y).missing_values_ == \
        AdditiveSVC().fit(X, y, nan_policy="impute").missing_values_
    frame = pd.DataFrame(X, columns=list("abcde")).assign(label=y)
    model = MixtureSVC().fit(frame, "label")  # the target column is not a feature
    assert model.missing_values_.columns == (0, 2, 3)
    import pyarrow as pa

    assert hasattr(MixtureSVC().fit(pa.Table.from_pandas(frame), "label"),
                   "missing_values_")
    complete = np.nan_to_num(X)
    assert not hasattr(AdditiveSVC().fit(complete, y), "missing_values_")
    with pytest.raises(DataError, match="contains NaN in feature 'x0'"):
        AdditiveSVC().fit(X, y, nan_policy="raise")
    table = tmp_path / "d.parquet"
    frame.to_parquet(table)
    with pytest.raises(MissingValueError,
                       match="nan in feature column 'a'.*nan_policy='impute'"):
        AdditiveSVC().fit(str(table), "label", nan_policy="raise")
    given = AdditiveSVC().fit(str(table), "label", nan_policy="impute")
    with pytest.warns(UserWarning, match="found a missing value \\(nan in feature column 'a' at "
                      "row 0 .*the fit starts again, reading NaN as missing values"):
        retried = AdditiveSVC().fit(str(table), "label")
    assert retried.missing_values_ == given.missing_values_
    np.testing.assert_array_equal(retried.coef_d_, given.coef_d_)
    assert retried.n_passes_ >= given.n_passes_
    # a Dataset keeps the policy it was opened with; a checkpointed fit resumes only as
    # its first run read the rows: both refuse the gap as "raise" does
    with pytest.raises(MissingValueError):
        AdditiveSVC().fit(open_dataset(table, target="label"))
    with pytest.raises(MissingValueError):
        AdditiveSVC().fit(str(table), "label", checkpoint=tmp_path / "ckpt")
    inf = complete.copy()
    inf[2, 2] = np.inf
    with pytest.raises(DataError, match="infinity in feature 'x2' at row 2"):
        AdditiveSVC().fit(inf, y)


def test_second_try_reads_late_gaps_dask_collections_and_searches(tmp_path) -> None:
    import dask.dataframe as dd

    from streamlearn.models import StreamSearchCV

    X, y = missing_problem(3000)
    X[:2000] = np.nan_to_num(X[:2000])  # the first gap in the second chunk of 1,024 rows
    frame = pd.DataFrame(X, columns=list("abcde")).assign(label=y)
    table = tmp_path / "d.parquet"
    frame.to_parquet(table)
    given = MixtureSVC(chunk_rows=1024, random_state=0).fit(str(table), "label",
                                                            nan_policy="impute")
    with pytest.warns(UserWarning, match="at row 2.*: the fit starts again"):
        retried = MixtureSVC(chunk_rows=1024, random_state=0).fit(str(table), "label")
    assert retried.missing_values_ == given.missing_values_
    features = frame.drop(columns="label")
    np.testing.assert_array_equal(retried.decision_function(features),
                                  given.decision_function(features))
    # the first try's reads are counted: the first chunk, read before the one with the gap
    assert retried.n_passes_ >= given.n_passes_ + 1024 / 3000 - 1e-9
    with pytest.warns(UserWarning, match="the fit starts again"):
        lazy = MixtureSVC(random_state=0).fit(dd.from_pandas(frame, npartitions=3),
                                              "label")
    assert lazy.missing_values_.columns == (0, 2, 3)
    search = StreamSearchCV(AdditiveSVC(), {"C": [0.1, 1.0]}, random_state=0)
    with pytest.warns(UserWarning, match="the fit starts again"):
        search.fit(str(table), "label")
    assert search.best_estimator_.missing_values_ == given.missing_values_
    assert search.n_passes_ > search.search_passes_ > 0
    inf = frame.copy()
    inf.loc[5, "e"] = np.inf
    inf.to_parquet(table)
    with pytest.raises(DataError, match="inf in feature column 'e'"):
        MixtureSVC().fit(str(table), "label")  # not a missing value: no second try


def test_search_lanes_train_the_templates_pairs_on_indicator_columns() -> None:
    from streamlearn.models import StreamSearchCV

    X, y = missing_problem(3000)
    X[:2000] = np.nan_to_num(X[:2000])  # gaps in a third of the rows: indicator pairs pay
    search = StreamSearchCV(AdditiveSVC(), {"C": [0.1, 1.0]}, random_state=0,
                            refit=False).fit(X, y, nan_policy="impute")
    template = search.lane_template_
    read = list(template._read_feature_names)
    assert any(" is missing" in f or " is missing" in g for f, g in template.interactions_)
    # the lanes' pairs are the template's, as positions of the columns they read
    pairs = search.best_estimator_.get_params()["interactions"]
    assert [(read[f], read[g]) for f, g in pairs] == [tuple(p) for p in
                                                     template.interactions_][:len(pairs)]


@pytest.mark.parametrize("model", [AdditiveSVC(random_state=0), MixtureSVC(random_state=0),
                                   SuperSparseClassifier(random_state=0)])
def test_first_partial_fit_call_learns_the_map_fit_learns(model) -> None:
    import copy

    X, y = missing_problem(3000)
    table = pd.DataFrame(X, columns=list("abcde")).assign(
        kind=pd.Categorical(np.where(np.arange(3000) % 3 == 0, "u",
                                     np.where(np.arange(3000) % 3 == 1, "v", None))))
    online = copy.deepcopy(model).partial_fit(table[:2000], y[:2000], classes=[0, 1])
    fitted = copy.deepcopy(model).fit(table[:2000], y[:2000])
    # the same map from the same rows: fill values, regressions and indicators (a
    # missing category included), after the given columns
    assert online.missing_values_ == fitted.missing_values_
    assert online.missing_values_.feature_names[6:] == (
        "a is missing", "c is missing", "d is missing", "kind is missing")
    assert list(online.feature_names_in_) == [*"abcde", "kind"]
    assert online.n_features_in_ == 6 and online.categories_ == {"kind": ("u", "v")}
    online.partial_fit(table[2000:], y[2000:])  # later rows read through it
    assert online.score(table[2000:], y[2000:]) > 0.85
    plain = copy.deepcopy(model).partial_fit(np.nan_to_num(X[:1000]), y[:1000])
    assert not hasattr(plain, "missing_values_")


def test_first_partial_fit_call_of_a_regressor_learns_the_map() -> None:
    X, _ = missing_problem(2000)
    target = 2.0 * X[:, 4] + np.where(np.isnan(X[:, 2]), 1.0, 0.0)
    online = SuperSparseRegressor(random_state=0).partial_fit(X, target)
    fitted = SuperSparseRegressor(random_state=0).fit(X, target)
    assert online.missing_values_ == fitted.missing_values_
    assert np.isfinite(online.predict(X)).all()
    with pytest.raises(DataError, match="not an infinite one"):
        bad = X.copy()
        bad[5, 1] = -np.inf
        SuperSparseRegressor().partial_fit(bad, target)


def test_second_try_on_dask_workers(tmp_path, dask_client) -> None:
    from streamlearn.engine import DaskEngine

    X, y = missing_problem(2000)
    table = tmp_path / "d.parquet"
    pd.DataFrame(X, columns=list("abcde")).assign(label=y).to_parquet(table)
    local = MixtureSVC(random_state=0).fit(str(table), "label", nan_policy="impute")
    # the workers' MissingValueError reaches the client as itself: the fit starts again
    with pytest.warns(UserWarning, match="the fit starts again"):
        remote = MixtureSVC(random_state=0).fit(str(table), "label",
                                                engine=DaskEngine(dask_client))
    assert remote.missing_values_ == local.missing_values_


def test_command_line_names_the_columns_missing_in_every_row(tmp_path) -> None:
    X, y = missing_problem(600)
    X[:, 1] = np.nan
    table = tmp_path / "d.parquet"
    pd.DataFrame(X, columns=list("abcde")).assign(y=y).to_parquet(table)
    with pytest.warns(UserWarning, match=r"'b' missing \(NaN\) in all 600 training rows"):
        trained = CliRunner().invoke(cli, ["train", str(table), "--target", "y",
                                           "--nan-policy", "impute", "-o",
                                           str(tmp_path / "m.slm")])
    assert trained.exit_code == 0, trained.output
    assert ("missing  : 3 of 5 columns have gaps, each read with an indicator column: "
            "a (predicted), c (predicted), d (predicted); 1 of 5 is missing in every row, "
            "read as 0 (carrying nothing): b") in trained.output
    model = load_model(tmp_path / "m.slm")
    assert model.missing_values_.empty == (1,)
    rows = pd.DataFrame(X, columns=list("abcde")).assign(b=5.0)
    np.testing.assert_array_equal(model.predict(rows),
                                  model.predict(pd.DataFrame(X, columns=list("abcde"))))
