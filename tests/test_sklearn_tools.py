"""Every registered estimator works inside the scikit-learn tools people combine it with.

Pipelines, searches, cross-validation, calibration, permutation importance, ensembles,
one-vs-rest, ``clone`` and ``check_is_fitted``. Each result is compared with the same
quantity computed another way (by hand on the scaled data, a manual k-fold loop, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone, is_classifier, is_regressor
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import TransformedTargetRegressor
from sklearn.datasets import make_classification
from sklearn.ensemble import StackingClassifier, VotingClassifier
from sklearn.exceptions import NotFittedError
from sklearn.inspection import permutation_importance
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, get_scorer, r2_score, roc_auc_score
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    RandomizedSearchCV,
    StratifiedKFold,
    cross_val_predict,
    cross_val_score,
)
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted

from streamlearn.models.registry import estimator_classes

#: Cheap settings, applied to every estimator that has the parameter. ``n_bases`` and
#: ``interactions``: ``AdditiveSVC`` trains the model its defaults chose on these sets
#: before five folds of the rows could choose (fewer than 2,000 rows), without the
#: trainings of that choice (``SparsePPRRegressor``'s ``n_bases`` is 8 by default).
CHEAP_PARAMS: dict[str, Any] = {"epochs": 2, "progress": False, "n_rounds": 10,
                                "max_iter": 10, "n_components": 4, "n_bases": 8,
                                "interactions": 0}

#: The first of these each estimator has is the one the searches tune, over these values.
TUNED_PARAMS: dict[str, list[Any]] = {"C": [0.1, 10.0], "l2": [0.0, 1.0],
                                      "smoothing": [1.0, 10.0], "gamma": [0.1, 1.0]}

#: The cheap settings stop the solvers at their iteration caps, which they report.

CLASSIFIERS = [cls for cls in estimator_classes() if is_classifier(cls())]
REGRESSORS = [cls for cls in estimator_classes() if is_regressor(cls())]
ESTIMATORS = CLASSIFIERS + REGRESSORS


def cheap(cls: type) -> BaseEstimator:
    """The estimator with :data:`CHEAP_PARAMS` where it has them."""
    estimator = cls()
    names = estimator.get_params()
    return estimator.set_params(**{k: v for k, v in CHEAP_PARAMS.items() if k in names})


def tuned_param(estimator: BaseEstimator) -> tuple[str, list[Any]]:
    """Name and candidate values of the parameter the searches tune."""
    names = estimator.get_params()
    for name, values in TUNED_PARAMS.items():
        if name in names:
            return name, values
    raise AssertionError(f"{type(estimator).__name__} has none of {list(TUNED_PARAMS)}")


def multi_class(cls: type) -> bool:
    """Whether the classifier handles more than two classes itself."""
    return bool(get_tags(cls()).classifier_tags.multi_class)


def binary_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """300 rows, 6 features (the first 3 informative, then 3 of noise), labels 0/1."""
    X, y = make_classification(n_samples=300, n_features=6, n_informative=3, n_redundant=0,
                               shuffle=False, class_sep=1.5, random_state=seed)
    rows = np.random.default_rng(seed).permutation(len(y))  # shuffle rows, keep columns
    return X[rows].astype(np.float32), y[rows]


def three_class_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """300 rows, 6 features, labels 0/1/2."""
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_redundant=0,
                               n_classes=3, class_sep=1.5, random_state=seed)
    return X.astype(np.float32), y


def classification_data(cls: type) -> tuple[np.ndarray, np.ndarray]:
    """Three classes for multiclass estimators, two for the two-class ones."""
    return three_class_data() if multi_class(cls) else binary_data()


def regression_data() -> tuple[np.ndarray, np.ndarray]:
    """300 rows, 5 features, a smooth nonlinear target with a non-zero mean."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5)).astype(np.float32)
    y = 3.0 + np.tanh(X[:, 0] + 0.5 * X[:, 1]) + 0.3 * X[:, 2] + 0.05 * rng.normal(size=300)
    return X, y


def data_for(cls: type) -> tuple[np.ndarray, np.ndarray]:
    return classification_data(cls) if is_classifier(cls()) else regression_data()


def scaled_pipeline(estimator: BaseEstimator) -> Pipeline:
    return Pipeline([("scale", StandardScaler()), ("model", estimator)])


def manual_cv_scores(estimator: BaseEstimator, X: np.ndarray, y: np.ndarray,
                     folds: Any, metric: Any) -> np.ndarray:
    """``metric(y_test, estimator.predict(X_test))`` of a clone fitted on each training fold."""
    scores = []
    for train, test in folds.split(X, y):
        model = clone(estimator).fit(X[train], y[train])
        scores.append(metric(y[test], model.predict(X[test])))
    return np.asarray(scores)


def positive_scores(model: Any, X: np.ndarray) -> np.ndarray:
    """Scores of ``classes_[1]`` as the ``roc_auc`` scorer takes them: the margin first."""
    if hasattr(model, "decision_function"):
        return model.decision_function(X)
    return model.predict_proba(X)[:, 1]


# -- Pipeline -------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_classifier_pipeline_equals_model_fitted_on_scaled_data(cls: type) -> None:
    X, y = classification_data(cls)
    pipe = scaled_pipeline(cheap(cls)).fit(X, y)
    scaler = StandardScaler().fit(X)
    by_hand = cheap(cls).fit(scaler.transform(X), y)
    X_scaled = scaler.transform(X)

    np.testing.assert_array_equal(pipe.predict(X), by_hand.predict(X_scaled))
    assert pipe.score(X, y) == pytest.approx(accuracy_score(y, by_hand.predict(X_scaled)))
    assert pipe.score(X, y) > 0.6
    np.testing.assert_allclose(pipe.decision_function(X), by_hand.decision_function(X_scaled))
    np.testing.assert_array_equal(pipe.classes_, np.unique(y))
    if hasattr(by_hand, "predict_proba"):
        proba = pipe.predict_proba(X)
        np.testing.assert_allclose(proba, by_hand.predict_proba(X_scaled))
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
        assert proba.shape == (len(y), len(np.unique(y)))


@pytest.mark.parametrize("cls", REGRESSORS, ids=lambda c: c.__name__)
def test_regressor_pipeline_equals_model_fitted_on_scaled_data(cls: type) -> None:
    X, y = regression_data()
    pipe = scaled_pipeline(cheap(cls)).fit(X, y)
    scaler = StandardScaler().fit(X)
    by_hand = cheap(cls).fit(scaler.transform(X), y)

    expected = by_hand.predict(scaler.transform(X))
    np.testing.assert_allclose(pipe.predict(X), expected)
    assert pipe.score(X, y) == pytest.approx(r2_score(y, expected))
    assert pipe.score(X, y) > 0.3


# -- searches -------------------------------------------------------------------------------
@pytest.mark.parametrize("in_pipeline", [False, True], ids=["bare", "pipeline"])
@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_grid_search_best_score_is_the_manual_cv_mean(cls: type, in_pipeline: bool) -> None:
    X, y = data_for(cls)
    name, values = tuned_param(cls())
    estimator = scaled_pipeline(cheap(cls)) if in_pipeline else cheap(cls)
    key = f"model__{name}" if in_pipeline else name
    folds = KFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(estimator, {key: values}, cv=folds).fit(X, y)

    metric = accuracy_score if is_classifier(cls()) else r2_score
    for i, value in enumerate(values):
        manual = manual_cv_scores(clone(estimator).set_params(**{key: value}), X, y, folds,
                                  metric)
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(manual.mean())
    assert np.isfinite(search.best_score_)
    best = manual_cv_scores(clone(estimator).set_params(**search.best_params_), X, y, folds,
                            metric)
    assert search.best_score_ == pytest.approx(best.mean())
    assert search.best_score_ == pytest.approx(max(search.cv_results_["mean_test_score"]))
    refitted = clone(estimator).set_params(**search.best_params_).fit(X, y)
    np.testing.assert_allclose(search.predict(X), refitted.predict(X))


@pytest.mark.parametrize("in_pipeline", [False, True], ids=["bare", "pipeline"])
@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_randomized_search_best_score_equals_cross_val_score(cls: type,
                                                             in_pipeline: bool) -> None:
    X, y = data_for(cls)
    name, values = tuned_param(cls())
    estimator = scaled_pipeline(cheap(cls)) if in_pipeline else cheap(cls)
    key = f"model__{name}" if in_pipeline else name
    folds = KFold(3, shuffle=True, random_state=1)
    search = RandomizedSearchCV(estimator, {key: values}, n_iter=2, cv=folds,
                                random_state=0).fit(X, y)

    assert np.isfinite(search.best_score_)
    assert search.best_params_[key] in values
    again = cross_val_score(clone(estimator).set_params(**search.best_params_), X, y, cv=folds)
    assert search.best_score_ == pytest.approx(again.mean())


# -- cross-validation -----------------------------------------------------------------------
@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_cross_val_score_accuracy_and_roc_auc_on_two_classes(cls: type) -> None:
    X, y = binary_data()
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    estimator = cheap(cls)
    accuracy = cross_val_score(estimator, X, y, cv=folds, scoring="accuracy")
    auc = cross_val_score(estimator, X, y, cv=folds, scoring="roc_auc")

    manual_accuracy, manual_auc = [], []
    for train, test in folds.split(X, y):
        model = clone(estimator).fit(X[train], y[train])
        manual_accuracy.append(accuracy_score(y[test], model.predict(X[test])))
        manual_auc.append(roc_auc_score(y[test], positive_scores(model, X[test])))
    np.testing.assert_allclose(accuracy, manual_accuracy)
    np.testing.assert_allclose(auc, manual_auc)
    assert auc.mean() > 0.7


@pytest.mark.parametrize("cls", [c for c in CLASSIFIERS
                                 if multi_class(c) and hasattr(c, "predict_proba")],
                         ids=lambda c: c.__name__)
def test_cross_val_score_roc_auc_ovr_on_three_classes(cls: type) -> None:
    X, y = three_class_data()
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    estimator = cheap(cls)
    auc = cross_val_score(estimator, X, y, cv=folds, scoring="roc_auc_ovr")

    manual = []
    for train, test in folds.split(X, y):
        model = clone(estimator).fit(X[train], y[train])
        manual.append(roc_auc_score(y[test], model.predict_proba(X[test]), multi_class="ovr"))
    np.testing.assert_allclose(auc, manual)
    assert auc.mean() > 0.6


@pytest.mark.parametrize("cls", REGRESSORS, ids=lambda c: c.__name__)
def test_cross_val_score_r2_is_the_manual_cv(cls: type) -> None:
    X, y = regression_data()
    folds = KFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(cheap(cls), X, y, cv=folds, scoring="r2")
    np.testing.assert_allclose(scores, manual_cv_scores(cheap(cls), X, y, folds, r2_score))
    assert np.all(np.isfinite(scores))


@pytest.mark.parametrize("cls", REGRESSORS, ids=lambda c: c.__name__)
def test_transformed_target_regressor_equals_fit_on_standardised_target(cls: type) -> None:
    X, y = regression_data()
    wrapped = TransformedTargetRegressor(regressor=cheap(cls),
                                         transformer=StandardScaler()).fit(X, y)
    mean, std = y.mean(), y.std()
    by_hand = cheap(cls).fit(X, (y - mean) / std)

    np.testing.assert_allclose(wrapped.predict(X), by_hand.predict(X) * std + mean,
                               rtol=1e-6, atol=1e-6)
    assert wrapped.score(X, y) == pytest.approx(r2_score(y, by_hand.predict(X) * std + mean))


# -- calibration ----------------------------------------------------------------------------
@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_isotonic_calibration_is_the_mean_of_per_fold_isotonic_fits(cls: type) -> None:
    X, y = binary_data()
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    calibrated = CalibratedClassifierCV(cheap(cls), method="isotonic", cv=folds).fit(X, y)

    expected = np.zeros(len(y))
    for train, test in folds.split(X, y):
        model = cheap(cls).fit(X[train], y[train])
        response = (model.decision_function if hasattr(model, "decision_function")
                    else model.predict_proba)
        isotonic = IsotonicRegression(out_of_bounds="clip").fit(response(X[test]), y[test])
        expected += isotonic.predict(response(X)) / folds.get_n_splits()
    proba = calibrated.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], expected, atol=1e-9)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert accuracy_score(y, calibrated.predict(X)) > 0.7


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_sigmoid_calibration_is_monotone_in_the_model_score(cls: type) -> None:
    X, y = binary_data()
    calibrated = CalibratedClassifierCV(cheap(cls), method="sigmoid", cv=3,
                                        ensemble=False).fit(X, y)
    # ensemble=False: one model refitted on all rows, one sigmoid fitted on its
    # cross-validated scores; so the probability is a monotone function of its score.
    model = cheap(cls).fit(X, y)
    score = model.decision_function(X)
    proba = calibrated.predict_proba(X)[:, 1]
    order = np.argsort(score, kind="stable")
    steps = np.diff(proba[order])
    assert np.all(steps >= -1e-12) or np.all(steps <= 1e-12)
    assert np.all((proba > 0) & (proba < 1))
    assert roc_auc_score(y, proba) == pytest.approx(roc_auc_score(y, score))
    assert accuracy_score(y, calibrated.predict(X)) > 0.7


# -- inspection -----------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_permutation_importance_ranks_the_informative_features_first(cls: type) -> None:
    X, y = binary_data() if is_classifier(cls()) else regression_data()
    informative = [0, 1, 2]  # the columns the target depends on, in both data sets
    model = cheap(cls).fit(X, y)
    result = permutation_importance(model, X, y, n_repeats=3, random_state=0)

    # The same quantity by hand: the score drop after shuffling one column.
    rng = np.random.default_rng(0)
    baseline = model.score(X, y)
    by_hand = np.empty(X.shape[1])
    for j in range(X.shape[1]):
        drops = []
        for _ in range(3):
            shuffled = X.copy()
            shuffled[:, j] = rng.permutation(shuffled[:, j])
            drops.append(baseline - model.score(shuffled, y))
        by_hand[j] = np.mean(drops)
    for importances in (result.importances_mean, by_hand):
        top = np.argsort(-importances, kind="stable")[:len(informative)]
        assert set(top.tolist()) == set(informative), importances
    # two Monte Carlo estimates over different permutations: their spread grows with the
    # drop itself (a score drop of 1 from a sharp regressor moves by a few hundredths)
    np.testing.assert_allclose(result.importances_mean, by_hand, rtol=0.1, atol=0.05)


# -- ensembles ------------------------------------------------------------------------------
def _voting_members(cls: type) -> list[tuple[str, BaseEstimator]]:
    return [("model", cheap(cls)), ("logistic", LogisticRegression()),
            ("tree", DecisionTreeClassifier(max_depth=3, random_state=0))]


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_hard_voting_is_the_majority_of_the_members(cls: type) -> None:
    X, y = classification_data(cls)
    voting = VotingClassifier(_voting_members(cls), voting="hard").fit(X, y)
    predictions = np.stack([clone(m).fit(X, y).predict(X) for _, m in _voting_members(cls)])
    counts = np.stack([(predictions == c).sum(axis=0) for c in np.unique(y)], axis=1)
    np.testing.assert_array_equal(voting.predict(X), np.unique(y)[np.argmax(counts, axis=1)])


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_soft_voting_averages_the_member_probabilities(cls: type) -> None:
    if not hasattr(cls, "predict_proba"):
        pytest.skip(f"{cls.__name__} has no predict_proba")
    X, y = classification_data(cls)
    voting = VotingClassifier(_voting_members(cls), voting="soft").fit(X, y)
    mean = np.mean([clone(m).fit(X, y).predict_proba(X) for _, m in _voting_members(cls)],
                   axis=0)
    np.testing.assert_allclose(voting.predict_proba(X), mean, rtol=1e-6)
    np.testing.assert_array_equal(voting.predict(X), np.unique(y)[np.argmax(mean, axis=1)])


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_stacking_equals_a_logistic_regression_on_out_of_fold_scores(cls: type) -> None:
    X, y = classification_data(cls)
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    members = [("model", cheap(cls)), ("tree", DecisionTreeClassifier(max_depth=3,
                                                                      random_state=0))]
    stack = StackingClassifier(members, final_estimator=LogisticRegression(), cv=folds)
    stack.fit(X, y)

    def features(model: Any, out_of_fold: bool) -> np.ndarray:
        # stack_method="auto": predict_proba, else decision_function; one column for 2 classes
        method = "predict_proba" if hasattr(model, "predict_proba") else "decision_function"
        if out_of_fold:
            values = cross_val_predict(model, X, y, cv=folds, method=method)
        else:
            values = getattr(clone(model).fit(X, y), method)(X)
        values = values.reshape(len(X), -1)
        return values[:, 1:] if method == "predict_proba" and values.shape[1] == 2 else values

    train_features = np.hstack([features(m, True) for _, m in members])
    final = LogisticRegression().fit(train_features, y)
    full_features = np.hstack([features(m, False) for _, m in members])
    np.testing.assert_allclose(stack.predict_proba(X), final.predict_proba(full_features),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("cls", [c for c in CLASSIFIERS if not multi_class(c)],
                         ids=lambda c: c.__name__)
def test_one_vs_rest_of_a_two_class_model_on_three_classes(cls: type) -> None:
    X, y = three_class_data()
    ovr = OneVsRestClassifier(cheap(cls)).fit(X, y)
    scores = np.stack([cheap(cls).fit(X, (y == k).astype(np.int64)).decision_function(X)
                       for k in range(3)], axis=1)
    np.testing.assert_allclose(ovr.decision_function(X), scores)
    np.testing.assert_array_equal(ovr.predict(X), np.argmax(scores, axis=1))
    assert ovr.score(X, y) > 0.5  # chance: 1/3


# -- clone and check_is_fitted --------------------------------------------------------------
@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_check_is_fitted_and_clone(cls: type) -> None:
    X, y = data_for(cls)
    estimator = cheap(cls)
    with pytest.raises(NotFittedError):
        check_is_fitted(estimator)
    with pytest.raises(NotFittedError):
        estimator.predict(X)
    estimator.fit(X, y)
    check_is_fitted(estimator)

    copy = clone(estimator)
    assert copy.get_params() == estimator.get_params()
    with pytest.raises(NotFittedError):
        check_is_fitted(copy)
    np.testing.assert_allclose(copy.fit(X, y).predict(X), estimator.predict(X))
    scorer = get_scorer("accuracy" if is_classifier(cls()) else "r2")
    assert scorer(copy, X, y) == pytest.approx(estimator.score(X, y))


# -- feature selection and feature names ----------------------------------------------------
@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_feature_names_in_exists_where_scikit_learn_has_it(cls: type, tmp_path) -> None:
    import warnings

    import pandas as pd
    from sklearn.linear_model import LinearRegression

    from streamlearn.io.model_file import load_model

    X, y = data_for(cls)
    names = [f"x{j}" for j in range(X.shape[1])]  # the names an array's columns are given
    frame = pd.DataFrame(X, columns=names)
    reference = LogisticRegression() if is_classifier(cls()) else LinearRegression()
    model = cheap(cls)
    # fitted on an array, on a table, on a table labelled 0, 1, ... (no names, by
    # scikit-learn's rule), then on an array again: the attribute as the reference
    for data in (X, frame, pd.DataFrame(X), X):
        model.fit(data, y)
        reference.fit(data, y)
        assert hasattr(model, "feature_names_in_") == hasattr(reference, "feature_names_in_")
        model.save(tmp_path / "m.slm")
        loaded = load_model(tmp_path / "m.slm")
        assert hasattr(loaded, "feature_names_in_") == hasattr(reference, "feature_names_in_")
    assert model.n_features_in_ == X.shape[1]
    # a table of those names in another order is read by position, with the warning
    reversed_frame = pd.DataFrame(X[:, ::-1], columns=names[::-1])
    for fitted in (model, loaded):
        with pytest.warns(UserWarning, match="fitted without feature names"):
            by_position = fitted.predict(reversed_frame)
        np.testing.assert_allclose(by_position, fitted.predict(X[:, ::-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model.predict(X)  # an array, as fitted: no warning
    # fitted on the table, the same reversed table is read by name
    model.fit(frame, y)
    np.testing.assert_array_equal(model.feature_names_in_, names)
    np.testing.assert_allclose(model.predict(reversed_frame), model.predict(frame))


@pytest.mark.parametrize("cls", [c for c in ESTIMATORS if hasattr(c, "partial_fit")],
                         ids=lambda c: c.__name__)
def test_a_first_partial_fit_records_feature_names_as_scikit_learn_does(cls: type) -> None:
    import pandas as pd
    from sklearn.linear_model import SGDClassifier, SGDRegressor

    X, y = data_for(cls)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    kwargs = {"classes": np.unique(y)} if is_classifier(cls()) else {}
    reference = SGDClassifier() if is_classifier(cls()) else SGDRegressor()
    for data in (X, frame):
        model = cheap(cls).partial_fit(data, y, **kwargs)
        expected = clone(reference).partial_fit(data, y, **kwargs)
        assert hasattr(model, "feature_names_in_") == hasattr(expected, "feature_names_in_")
    np.testing.assert_array_equal(model.feature_names_in_, expected.feature_names_in_)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_select_from_model_keeps_the_features_above_the_mean_importance(cls: type) -> None:
    import pandas as pd
    from sklearn.feature_selection import SelectFromModel

    X, y = data_for(cls)
    names = np.array([f"f{j}" for j in range(X.shape[1])], dtype=object)
    frame = pd.DataFrame(X, columns=names)
    selector = SelectFromModel(cheap(cls)).fit(frame, y)  # importance_getter="auto"
    model = selector.estimator_
    # scikit-learn's shape: an object array of the names, indexed by its masks
    assert isinstance(model.feature_names_in_, np.ndarray)
    assert model.feature_names_in_.dtype == object
    np.testing.assert_array_equal(model.feature_names_in_, names)
    # with no per-feature coef_, "auto" reads feature_importances_; threshold: their mean
    importances = np.asarray(model.feature_importances_)
    assert importances.shape == (X.shape[1],)
    kept = importances >= importances.mean()
    np.testing.assert_array_equal(selector.get_feature_names_out(), names[kept])
    np.testing.assert_array_equal(selector.transform(frame), X[:, kept])


def test_coef_is_per_feature_for_the_linear_model_only() -> None:
    from sklearn.feature_selection import RFE

    from streamlearn.models import AdditiveSVC

    X, y = binary_data()
    linear = AdditiveSVC(embedding="linear", progress=False).fit(X, y)
    assert linear.coef_.shape == (1, X.shape[1])
    np.testing.assert_array_equal(linear.coef_, linear.embedding_coef_)
    # recursive elimination by |coef_| keeps the three informative features (0, 1, 2)
    rfe = RFE(AdditiveSVC(embedding="linear", progress=False), n_features_to_select=3)
    np.testing.assert_array_equal(np.flatnonzero(rfe.fit(X, y).support_), [0, 1, 2])
    splines = AdditiveSVC(n_bases=8, interactions=0, progress=False).fit(X, y)
    assert not hasattr(splines, "coef_")
    assert splines.embedding_coef_.shape[1] > X.shape[1]
    with pytest.raises(AttributeError, match="embedding_coef_"):
        _ = splines.coef_
