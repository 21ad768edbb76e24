"""ShareBoostClassifier as a scikit-learn estimator: weights, binary scores, fitted state."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import get_scorer, log_loss, roc_auc_score
from sklearn.model_selection import train_test_split

from streamlearn import open_dataset
from streamlearn.io.model_file import load_model, save_model
from streamlearn.models.shareboost import (
    ShareBoostClassifier,
    WeightedSummary,
)
from streamlearn.solvers.calibration import TemperatureSums, best_temperature
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.shareboost.driver import VALIDATION_SALT
from streamlearn.solvers.shareboost.kernels import decision_chunk
from tests.category_problem import (
    category_problem,
    one_hot,
    two_category_problem,
    unseen_against_the_mean,
)


def noisy_problem(n: int, d: int = 6, k: int = 3, seed: int = 0):
    """Overlapping classes (no separating rule), so the loss has a finite minimum."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    W = rng.normal(size=(k, d))
    y = np.argmax(X @ W.T + 1.5 * rng.normal(size=(n, k)), axis=1)
    return X, y


CONVERGING = {"n_rounds": 4, "l2": 1e-2, "refit_iter": 300, "tol": 1e-10}


@pytest.mark.parametrize("features", ["linear", "stumps"])
def test_integer_weights_equal_repeated_rows(features: str) -> None:
    X, y = noisy_problem(120)
    weight = np.random.default_rng(1).integers(0, 4, size=120)
    X[weight == 0] *= 50.0  # ignored rows: they must not set the scales or thresholds
    order = np.random.default_rng(2).permutation(120)
    params = {**CONVERGING, "features": features, "n_bins": 6}
    repeated = ShareBoostClassifier(**params).fit(np.repeat(X, weight, axis=0),
                                                  np.repeat(y, weight))
    weighted = ShareBoostClassifier(**params).fit(X[order], y[order],
                                                  sample_weight=weight[order])
    for name, value in repeated.family_.arrays().items():
        np.testing.assert_array_equal(weighted.family_.arrays()[name], value)
    np.testing.assert_array_equal(weighted.selected_features_, repeated.selected_features_)
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X),
                               rtol=1e-6)
    np.testing.assert_allclose(weighted.path_["loss"], repeated.path_["loss"], rtol=1e-9)


def test_weighted_quantiles_are_numpy_inverted_cdf() -> None:
    rng = np.random.default_rng(3)
    sample = rng.normal(size=(200, 3)).astype(np.float32)
    sample[:50, 1] = np.round(sample[:50, 1])  # ties
    weight = rng.integers(1, 5, size=200).astype(np.float64)
    summary = WeightedSummary(200, float(weight.sum()), np.abs(sample).max(axis=0),
                              weight @ np.square(sample, dtype=np.float64), sample, weight,
                              sample.min(axis=0), sample.max(axis=0))
    probabilities = np.arange(1, 8) / 8
    expected = np.stack([np.quantile(sample[:, f].astype(np.float64), probabilities,
                                     method="inverted_cdf", weights=weight)
                         for f in range(3)])
    np.testing.assert_array_equal(summary.quantiles(probabilities), expected)


def test_binary_decision_function_is_the_log_odds_of_the_second_class() -> None:
    X, y3 = noisy_problem(300)
    y = np.where(y3 == 0, "no", "yes")
    model = ShareBoostClassifier(n_rounds=3).fit(X, y)
    decision = model.decision_function(X)
    proba = model.predict_proba(X)
    assert decision.shape == (300,) and proba.shape == (300, 2)
    # at the temperature proba_scale_
    np.testing.assert_allclose(model.proba_scale_ * decision,
                               np.log(proba[:, 1] / proba[:, 0]), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(model.predict(X), np.where(decision > 0, "yes", "no"))
    auc = get_scorer("roc_auc")(model, X, y)
    assert auc == pytest.approx(roc_auc_score(y == "yes", proba[:, 1]))
    multiclass = ShareBoostClassifier(n_rounds=3).fit(X, y3)
    scores = multiclass.decision_function(X)
    assert scores.shape == (300, 3)
    np.testing.assert_array_equal(multiclass.predict(X),
                                  multiclass.classes_[scores.argmax(axis=1)])


def test_unfitted_and_failed_fits_raise_not_fitted() -> None:
    X, y = noisy_problem(100)
    model = ShareBoostClassifier(n_rounds=3)
    for method in (model.predict, model.predict_proba, model.decision_function):
        with pytest.raises(NotFittedError):
            method(X)
    model.fit(X, y)
    assert model.n_iter_ == 3 and model.is_fitted

    def crash(t: int, _: ShareBoostClassifier) -> None:
        if t == 2:
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        model.fit(X, y, callback=crash)
    assert not model.is_fitted and not hasattr(model, "coef_groups_")
    with pytest.raises(NotFittedError):
        model.predict(X)


def test_n_iter_counts_rounds_and_stops_when_no_column_helps() -> None:
    X, y = noisy_problem(200, d=3)
    model = ShareBoostClassifier(n_rounds=10).fit(X, y)
    assert model.n_iter_ == len(model.selected_features_) == 3  # three features only
    assert model.path_["n_selected"] == list(range(4))


def test_capped_corrective_step_warns_and_converged_one_does_not() -> None:
    X, y = noisy_problem(200)
    # the last round's columns get 30 * refit_iter iterations, which reach 1e-12 on these
    # rows; at tol=0 no gradient is small enough and the cap is reached
    with pytest.warns(ConvergenceWarning, match=r"at 30 L-BFGS .*refit_iter=1\)"):
        ShareBoostClassifier(n_rounds=6, refit_iter=1, tol=0.0).fit(X, y)
    # unpenalised (the paper's loss, which may have no finite minimum) the last round
    # keeps its capped step, and says so
    with pytest.warns(ConvergenceWarning, match=r"at 1 L-BFGS .*refit_iter=1\)"):
        ShareBoostClassifier(n_rounds=2, refit_iter=1, l2=0.0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ShareBoostClassifier(**CONVERGING).fit(X, y)


def test_explicit_rounds_fit_the_last_round_until_the_tolerance() -> None:
    # the rounds' corrective steps stop at refit_iter=10 iterations; the last round's
    # columns used to keep that step (a ConvergenceWarning, probabilities 0.01-0.05 off
    # the optimum on these rows). The reference: every round's step given 500 iterations,
    # which converges without the final fit
    X, y = noisy_problem(2000, d=8, k=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = ShareBoostClassifier(n_rounds=8, tol=1e-7).fit(X, y)
    reference = ShareBoostClassifier(n_rounds=8, tol=1e-7, refit_iter=500).fit(X, y)
    np.testing.assert_array_equal(np.sort(model.selected_features_), np.arange(8))
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X),
                               atol=1e-5)


def test_continuous_targets_are_refused_on_every_input_path() -> None:
    X, _ = noisy_problem(60, d=3)
    target = np.random.default_rng(0).normal(size=60)
    table = pd.DataFrame(X, columns=["a", "b", "c"])
    inputs = [(X, target), (table, target), (table.assign(t=target), "t"),
              (open_dataset(X, target=target), None)]
    for data, y in inputs:
        with pytest.raises(ValueError, match="Unknown label type: continuous"):
            ShareBoostClassifier(n_rounds=1).fit(data, y)


def test_no_partial_fit_and_progress_is_a_parameter() -> None:
    model = ShareBoostClassifier(progress=False)
    assert not hasattr(model, "partial_fit")
    assert clone(model).get_params()["progress"] is False


def softmax(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_intercept_only_probabilities_are_the_weighted_class_frequency() -> None:
    """The margin loss's intercept puts 0.097 on a class of prior 0.19 (plain soft-max);
    the temperature chosen on the training rows brings it to the class's share."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    y = (rng.random(3000) < 0.2).astype(int)
    w = rng.uniform(0.5, 2.0, size=3000)
    model = ShareBoostClassifier(n_rounds=0).fit(X, y, sample_weight=w)
    prior = np.average(y, weights=w)
    assert softmax(model._class_scores(X[:1]))[0, 1] < 0.6 * prior  # the margin loss's
    proba = model.predict_proba(X)
    assert model.proba_rows_ == "training" and model.proba_scale_ <= 1.0
    # within the grid of scales (0.1 decade, refined by a parabola) of the prior, and so
    # its weighted log-loss (the plain soft-max's: 0.53 against the prior's 0.49)
    np.testing.assert_allclose(proba[:, 1], prior, atol=6e-3)
    assert log_loss(y, proba, sample_weight=w) < log_loss(
        y, np.column_stack([np.full(3000, 1 - prior), np.full(3000, prior)]),
        sample_weight=w) + 1e-4
    sums = TemperatureSums(2).add(model._class_scores(X), y, w)
    assert model.proba_scale_ == pytest.approx(min(1.0, best_temperature(sums.losses())),
                                               rel=1e-6)
    np.testing.assert_array_equal(model.predict(X), 0)


def test_probability_scale_on_training_rows_is_at_most_one() -> None:
    """Fifty anchor pieces on 500 rows: the best scale on the training rows is above 1
    (their margins overstate those of new rows), and the scale kept is 1."""
    X, y = make_classification(500, 6, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=1)
    model = ShareBoostClassifier(features="anchors", n_centres=32, n_rounds=50).fit(X, y)
    sums = TemperatureSums(3).add(model._class_scores(X), y)
    assert best_temperature(sums.losses()) > 1.0
    assert model.proba_rows_ == "training" and model.proba_scale_ == 1.0
    np.testing.assert_allclose(model.predict_proba(X), softmax(model._class_scores(X)),
                               rtol=1e-12)


def test_held_out_temperature_lowers_the_test_log_loss() -> None:
    """With rows held out for n_rounds="auto", the temperature is the one of lowest
    log-loss on them; on test rows it beats the plain soft-max of the scores and is
    within 0.05 of a logistic regression's, with the same decisions."""
    X, y = make_classification(3000, 6, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=1)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    model = ShareBoostClassifier(features="anchors").fit(Xtr, ytr)
    assert model.proba_rows_ == "held-out"
    held = Holdout.for_choosing(0.1, len(ytr), 0 ^ VALIDATION_SALT).mask(np.arange(len(ytr)))
    sums = TemperatureSums(3).add(model._class_scores(Xtr[held]), ytr[held])
    assert model.proba_scale_ == pytest.approx(best_temperature(sums.losses(smoothed=False)),
                                               rel=1e-6)
    proba = model.predict_proba(Xte)
    scores = model._class_scores(Xte)
    np.testing.assert_array_equal(model.predict(Xte), model.classes_[proba.argmax(axis=1)])
    np.testing.assert_array_equal(model.predict(Xte), model.classes_[scores.argmax(axis=1)])
    scaled, plain = log_loss(yte, proba), log_loss(yte, softmax(scores))
    reference = log_loss(yte, LogisticRegression().fit(Xtr, ytr).predict_proba(Xte))
    # the plain scores of these anchors are close to calibrated (0.43), the temperature
    # still takes off 0.03
    assert scaled < plain - 0.02
    assert scaled < reference + 0.05


def test_probability_scale_is_kept_by_a_model_file(tmp_path) -> None:
    """The temperature is saved and restored; a file written without it (before it
    existed) loads and gives the plain soft-max."""
    X, y = noisy_problem(400, seed=4)
    model = ShareBoostClassifier(n_rounds=3).fit(X, y)
    assert model.proba_scale_ != 1.0
    save_model(model, tmp_path / "m.slm")
    loaded = load_model(tmp_path / "m.slm")
    assert loaded.proba_scale_ == model.proba_scale_ and loaded.proba_rows_ == "training"
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    del model.proba_scale_, model.proba_rows_
    save_model(model, tmp_path / "old.slm")
    old = load_model(tmp_path / "old.slm")
    np.testing.assert_allclose(old.predict_proba(X), softmax(old._class_scores(X)),
                               rtol=1e-12)


def test_anchor_metric_choice_is_kept_by_a_model_file(tmp_path) -> None:
    """The anchors' metric choice (anchor_metric_) is saved and restored with the metric
    the pieces measure in; a file written without it (before it existed) loads and
    predicts the same; a refit without anchors drops it."""
    from streamlearn.solvers.shareboost.driver import KNN_NEIGHBOURS, knn_error

    X, y = noisy_problem(600, seed=5)
    X[:, 0] *= 1e4  # units apart: the check runs
    model = ShareBoostClassifier(features="anchors", n_rounds=3, n_centres=16,
                                 refit_iter=300).fit(X, y)
    info = model.anchor_metric_
    assert info["reason"] == "knn" and info["rows"] == 600 and info["k"] == KNN_NEIGHBOURS
    errors = info["knn_error"]
    a, b = info["only_right"]["equalised"], info["only_right"]["band"]
    assert info["chosen"] == ("equalised" if a - b > 2.0 * np.sqrt(a + b) else "band")
    # the kept error is that of the rows in the metric the pieces measure in
    metric = model.family_.pieces.metric
    assert knn_error(X.astype(np.float32) * metric, y) == pytest.approx(errors[info["chosen"]])
    save_model(model, tmp_path / "m.slm")
    loaded = load_model(tmp_path / "m.slm")
    assert loaded.anchor_metric_ == info
    np.testing.assert_array_equal(loaded.family_.pieces.metric, metric)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    del model.anchor_metric_
    save_model(model, tmp_path / "old.slm")
    old = load_model(tmp_path / "old.slm")
    assert not hasattr(old, "anchor_metric_")
    np.testing.assert_array_equal(old.predict_proba(X), loaded.predict_proba(X))
    model.set_params(features="linear").fit(X, y)
    assert not hasattr(model, "anchor_metric_")


# "auto" on 100 categories compares linear columns and stumps on held-out rows and keeps
# the linear ones (2,423 passes, half the 4,129 that 200 categories take); stumps alone on
# 60, the same indicator columns in 78 rounds
@pytest.mark.parametrize("features, k", [("auto", 100), ("stumps", 60)])
def test_categories_are_read_as_indicator_columns(features: str, k: int, tmp_path) -> None:
    # categories whose codes (sorted names) say nothing of their effects: read as one
    # number each, 200 of them, ShareBoost scored 0.67 against one-hot logistic
    # regression's 0.90; indicator columns put it within 3 points of the one-hot reference
    train, score = category_problem(3000, 0, k=k)
    test, score_test = category_problem(1000, 1, k=k)
    y, y_test = (score > 0).astype(int), (score_test > 0).astype(int)
    reference = LogisticRegression(max_iter=1000).fit(one_hot(train), y)
    model = ShareBoostClassifier(features=features).fit(train, y)
    assert model.score(test, y_test) >= reference.score(one_hot(test), y_test) - 0.03
    assert model.n_features_in_ == 2 and list(model.feature_names_in_) == ["x0", "cat"]
    # importances and used features: one per given column, the indicators' summed
    weights = model.family_.feature_weights(model.selected_features_, model.coef_groups_)
    assert weights.shape == (k + 1,)
    expected = np.array([weights[0], weights[1:].sum()]) / weights.sum()
    np.testing.assert_allclose(model.feature_importances_, expected, rtol=1e-12)
    np.testing.assert_array_equal(model.used_features_,
                                  np.flatnonzero([weights[0] > 0, weights[1:].sum() > 0]))
    # an unseen category sets no indicator: the scores of x0 beside k zeros
    unseen = test.head(4).astype({"cat": object}).assign(cat=["new", "c001", "new", "c002"])
    with pytest.warns(UserWarning, match="not seen in fit"):
        scores = model.decision_function(unseen)
    zeros = np.c_[unseen["x0"], np.zeros((4, k))].astype(np.float32)
    transform = getattr(model, "feature_transform_", None)
    zeros = zeros if transform is None else transform.apply(zeros)
    gates = model.family_.gates(zeros, model.selected_features_)
    neutral = decision_chunk(gates, model.family_.base(zeros), model.coef_groups_,
                             model.intercept_)
    neutral = neutral[:, 1] - neutral[:, 0]
    np.testing.assert_allclose(scores[[0, 2]], neutral[[0, 2]], rtol=1e-12)
    assert not np.allclose(scores[[1, 3]], neutral[[1, 3]])
    # the model file keeps the map: the same scores from the given columns
    loaded = ShareBoostClassifier.load(model.save(tmp_path / "m.slm"))
    assert loaded.category_indicators_ == model.category_indicators_
    np.testing.assert_array_equal(loaded.decision_function(test),
                                  model.decision_function(test))


def test_validation_tables_with_categories_are_coded_as_the_training_data() -> None:
    # the held-out table's categories come as text, in another order: each round scores it
    # as the finished model scores it
    train, score = category_problem(2000, 0, k=12)
    test, score_test = category_problem(500, 1, k=12)
    y, y_test = (score > 0).astype(int), (score_test > 0).astype(int)
    model = ShareBoostClassifier(n_rounds=6, l2=1e-2).fit(
        train, y, validation=(test.astype({"cat": str}), y_test))
    assert model.path_["validation_error"][-1] == pytest.approx(1 - model.score(test, y_test))


def test_an_unseen_category_of_two_is_read_as_the_columns_mean(tmp_path) -> None:
    """A column of two categories is one 0/1 column: an unseen category is read as the
    column's training mean, not as the code 2 past both categories (extrapolated): the
    scores of the same model fitted on the 0/1 numbers, at the mean."""
    frame, numbers, y = two_category_problem()
    model = ShareBoostClassifier(features="linear", n_rounds=5).fit(frame, y)
    reference = ShareBoostClassifier(features="linear", n_rounds=5).fit(numbers, y)
    scores, by_hand = unseen_against_the_mean(model, reference, frame, numbers)
    np.testing.assert_allclose(scores, by_hand, rtol=1e-6, atol=1e-9)
    assert min(scores[:2]) < scores[2] < max(scores[:2])
    # linear in b: the frequency-weighted mean of the two categories' scores
    p = float(np.mean(frame["b"] == "yes"))
    np.testing.assert_allclose(scores[2], (1 - p) * scores[0] + p * scores[1], rtol=1e-6)
    assert model.two_category_means_ == {"b": p}
    loaded = ShareBoostClassifier.load(model.save(tmp_path / "m.slm"))
    assert loaded.two_category_means_ == {"b": p}
    with pytest.warns(UserWarning, match="not seen in fit"):
        np.testing.assert_array_equal(loaded.decision_function(frame.head(3).assign(
            b=["no", "maybe", "yes"])), model.decision_function(frame.head(3).assign(
                b=["no", "maybe", "yes"])))
    # after a column of indicators: the mean of b's column among the columns read
    wide = frame.copy()
    wide.insert(1, "c", np.random.default_rng(2).choice(list("pqrs"), len(frame)))
    both = ShareBoostClassifier(features="stumps", n_rounds=5).fit(wide, y)
    assert both.category_indicators_.feature_names[-1] == "b"
    assert both.two_category_means_ == {"b": p}
