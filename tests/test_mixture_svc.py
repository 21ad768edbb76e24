"""MixtureSVC: E-step against numpy, EM ascent, pruning, stochastic EM, model files, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from streamlearn.data import open_dataset
from streamlearn.engine import LocalEngine
from streamlearn.errors import DataError, LabelError, SchemaError
from streamlearn.features.category_indicators import MAX_INDICATOR_CATEGORIES
from streamlearn.models.mixture import (
    INIT_EXPERT_PASSES,
    KMEANS_EPOCHS,
    EStepPass,
    MixtureParams,
    MixtureSVC,
    mixing_weights,
)
from tests.category_problem import (
    category_problem,
    one_hot,
)


def _xor(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    return X, (X[:, 0] * X[:, 1] > 0).astype(np.int64)


def _regions(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Four well separated blobs, each cut in two classes by its own line."""
    rng = np.random.default_rng(seed)
    centres = np.array([[-4, -4], [-4, 4], [4, -4], [4, 4]], dtype=np.float64)
    angles = np.array([0.3, 1.2, 2.1, 2.9])
    r = rng.integers(0, 4, size=n)
    X = centres[r] + rng.normal(size=(n, 2))
    normal = np.c_[np.cos(angles), np.sin(angles)][r]
    y = ((X - centres[r]) * normal).sum(axis=1) > 0
    return X.astype(np.float32), y.astype(np.int64)


def _np_mixture(X, y_pm, p: MixtureParams, tau: float, bias: float):
    """Posteriors (eq. 11), log-likelihoods (eq. 8) and eq. 21's halves in plain numpy."""
    active = p.xi > 0
    d2 = ((X.astype(np.float64)[:, None, :] - p.V[None]) ** 2).sum(axis=2)
    logits = np.where(active[None, :], -tau * d2, -np.inf)
    g = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    s = X.astype(np.float64) @ p.W[:, :-1].T + bias * p.W[:, -1][None, :]
    joint = p.xi[None, :] * g * np.exp(-np.maximum(0.0, 1.0 - y_pm[:, None] * s))
    pos = (p.xi[None, :] * g * np.exp(-np.maximum(0.0, 1.0 - s))).sum(axis=1)
    neg = (p.xi[None, :] * g * np.exp(-np.maximum(0.0, 1.0 + s))).sum(axis=1)
    return joint / joint.sum(axis=1, keepdims=True), np.log(joint.sum(axis=1)), pos, neg


def test_estep_pass_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 3)).astype(np.float32)
    y = rng.integers(0, 2, size=700)
    w = rng.uniform(0.5, 2.0, size=700).astype(np.float32)
    k = 5
    xi = rng.dirichlet(np.ones(k))
    xi[3] = 0.0
    p = MixtureParams(xi / xi.sum(), rng.normal(size=(k, 3)), rng.normal(size=(k, 4)))
    ds = open_dataset(X, target=y, weight=w, chunk_rows=128, task="classification")
    stats = LocalEngine(progress=False).run(EStepPass([p], [1], 0.8, 1.0), ds, shuffle=True,
                                            seed=3)[0]
    Q, loglik, _, _ = _np_mixture(X, np.where(y == 1, 1.0, -1.0), p, 0.8, 1.0)
    np.testing.assert_allclose(stats.mass, w.astype(np.float64) @ Q, rtol=1e-5)
    assert stats.loglik == pytest.approx(float(w.astype(np.float64) @ loglik), rel=1e-6)
    assert stats.mass[3] == 0.0


def test_mixing_weights_follow_eq20() -> None:
    mass = np.array([50.0, 3.0, 20.0, 8.0])
    active = np.array([True, True, True, False])
    xi = mixing_weights(mass, 5.0, active)
    np.testing.assert_allclose(xi, np.array([45.0, 0.0, 15.0, 0.0]) / 60.0)
    # every component below nu: the heaviest one is kept alone
    np.testing.assert_array_equal(mixing_weights(mass, 100.0, active), [1.0, 0.0, 0.0, 0.0])


def _standardised(clf: MixtureSVC, X: np.ndarray) -> np.ndarray:
    """Rows in the space the fitted centres and experts live in, computed in numpy."""
    return ((X.astype(np.float64) - clf.shift_) / clf.scale_).astype(np.float32)


def test_predictions_are_corrected_eq21() -> None:
    X, y = _xor(1500)
    clf = MixtureSVC(n_components=6, C=10.0, epochs=4, chunk_rows=300).fit(X, y)
    Xt, _ = _xor(400, seed=1)
    p = MixtureParams(clf.xi_[0], clf.centers_[0], clf.expert_coef_[0])
    _, _, pos, neg = _np_mixture(_standardised(clf, Xt), np.ones(400), p, clf.tau_,
                                 clf.bias_scale)
    # the decision function is the log-odds of eq. 21's halves: same sign as pos - neg
    np.testing.assert_allclose(clf.decision_function(Xt), np.log(pos) - np.log(neg),
                               rtol=1e-5, atol=1e-6)
    # the probability is eq. 21's pos / (pos + neg) at the temperature proba_scale_
    t = clf.proba_scale_
    np.testing.assert_allclose(clf.predict_proba(Xt)[:, 1], pos**t / (pos**t + neg**t),
                               rtol=1e-5)
    np.testing.assert_array_equal(clf.predict(Xt), (pos > neg).astype(np.int64))


def test_batch_em_never_decreases_penalised_loglik() -> None:
    X, y = _xor(800, seed=2)
    # gates of moderate sharpness: with much sharper ones (tau >= 6 here) the partial
    # M-steps (3 L-BFGS steps, at most 4 expert passes) can lose ~1e-4 of eq. 19 in an epoch
    clf = MixtureSVC(n_components=6, nu=2.0, C=10.0, em="batch", epochs=8, tol=1e-6,
                     tau=3.0, chunk_rows=200).fit(X, y)
    history = clf.history_[0]
    assert len(history) == 9
    values = np.array([h["penalised"] for h in history])
    n_active = np.array([h["n_active"] for h in history])
    # eq. 19 sums its prior over the active components only: a pruning step may lower it
    same = n_active[1:] == n_active[:-1]
    assert same.sum() >= 6
    steps = np.diff(values)[same]
    assert np.all(steps >= -1e-9 * np.abs(values[1:][same])), steps
    assert values[-1] > values[0] + 1.0
    # the recorded value is eq. 19 at the final parameters, recomputed in numpy
    p = MixtureParams(clf.xi_[0], clf.centers_[0], clf.expert_coef_[0])
    _, loglik, _, _ = _np_mixture(_standardised(clf, X), np.where(y == 1, 1.0, -1.0), p,
                                  clf.tau_, 1.0)
    active = p.xi > 0
    expected = (loglik.sum() - (p.W[active] ** 2).sum() / 20.0
                - 2.0 * np.log(p.xi[active]).sum())
    assert values[-1] == pytest.approx(expected, rel=1e-5)


def test_four_regions_prune_to_four_to_six_components() -> None:
    X, y = _regions(2000)
    linear = LinearSVC().fit(X, y).score(X, y)
    # the automatic tau is sharp here (20 centres in 4 far blobs): pruning takes ~15 epochs
    clf = MixtureSVC(n_components=20, nu=50.0, C=10.0, em="batch", epochs=20, tol=1e-6,
                     chunk_rows=500).fit(X, y)
    assert 4 <= clf.n_active_components_ <= 6
    assert np.count_nonzero(clf.xi_[0]) == clf.n_active_components_
    assert clf.score(X, y) > 0.95 > linear + 0.3


def test_stochastic_and_batch_em_agree_within_one_point() -> None:
    X, y = _xor(16_000, seed=4)
    Xt, yt = _xor(4000, seed=5)
    scores = {}
    for em in ("batch", "stochastic"):
        clf = MixtureSVC(n_components=8, C=10.0, em=em, epochs=6, chunk_rows=1000).fit(X, y)
        scores[em] = clf.score(Xt, yt)
    assert scores["batch"] > 0.97
    assert abs(scores["batch"] - scores["stochastic"]) <= 0.01, scores


def test_one_vs_rest_and_model_file(tmp_path) -> None:
    rng = np.random.default_rng(6)
    X = rng.uniform(-1, 1, size=(3000, 2)).astype(np.float32)
    labels = np.array(["a", "b", "c"])
    y = labels[(np.hypot(X[:, 0], X[:, 1]) > 0.45).astype(int) + (X[:, 0] > 0.5)]
    clf = MixtureSVC(n_components=6, C=10.0, epochs=5, chunk_rows=500).fit(X, y)
    proba = clf.predict_proba(X)
    assert proba.shape == (3000, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), labels[np.argmax(proba, axis=1)])
    assert clf.score(X, y) > LinearSVC().fit(X, y).score(X, y) + 0.1
    assert clf.n_active_components_.shape == (3,)
    path = clf.save(tmp_path / "mix.slm")
    loaded = MixtureSVC.load(path)
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    assert loaded.history_ == clf.history_ and loaded.tau_ == clf.tau_


def test_checkpointed_fit_gives_the_same_model(tmp_path) -> None:
    X, y = _xor(1200, seed=7)
    plain = MixtureSVC(n_components=4, C=10.0, epochs=2, chunk_rows=300).fit(X, y)
    again = MixtureSVC(n_components=4, C=10.0, epochs=2, chunk_rows=300)
    again.fit(X, y, checkpoint=tmp_path / "ckpt", checkpoint_every=1)
    resumed = MixtureSVC(n_components=4, C=10.0, epochs=2, chunk_rows=300)
    resumed.fit(X, y, checkpoint=tmp_path / "ckpt", checkpoint_every=1)
    for model in (again, resumed):
        np.testing.assert_array_equal(model.expert_coef_, plain.expert_coef_)
        np.testing.assert_array_equal(model.centers_, plain.centers_)


def test_bad_input_raises_clear_errors() -> None:
    X, y = _xor(200)
    with pytest.raises(ValueError, match="'em' parameter of MixtureSVC must be a str among"):
        MixtureSVC(em="online").fit(X, y)
    with pytest.raises(ValueError, match="tau"):
        MixtureSVC(tau=-1.0).fit(X, y)
    with pytest.raises(DataError, match="n_components=500"):
        MixtureSVC(n_components=500).fit(X, y)
    with pytest.raises(LabelError):
        MixtureSVC(n_components=2).fit(X, np.zeros(200, dtype=int))
    bad = X.copy()
    bad[17, 1] = np.nan
    with pytest.raises(DataError, match="NaN|nan"):
        MixtureSVC(n_components=2).fit(bad, y, nan_policy="raise")
    bad[17, 1] = np.inf  # NaN is a missing value by default; infinity is refused
    with pytest.raises(DataError, match="infinity"):
        MixtureSVC(n_components=2).fit(bad, y)
    clf = MixtureSVC(n_components=2, epochs=1).fit(X, y)
    with pytest.raises(SchemaError, match=r"3 features, but \w+ is expecting 2 features"):
        clf.predict(np.zeros((4, 3), dtype=np.float32))


def test_one_vs_rest_mixtures_share_every_read_of_the_data() -> None:
    # moments, k-means' seeding sample and its 2 epochs, cluster counts, 2 initial expert
    # passes, an E-step, one pass per stochastic EM epoch and the one that chooses the
    # probabilities' scale: the same for five classes as for two
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1500, 4)).astype(np.float32)
    y5 = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-1.0, -0.3, 0.3, 1.0])
    expected = 1 + 1 + KMEANS_EPOCHS + 1 + INIT_EXPERT_PASSES + 1 + 3 + 1
    # tol=0 runs every epoch: the cap is reached, and said; one loss for both (the
    # default's rule picks it by the number of classes)
    # unweighted features: each fit weighs them by their relevance to its own labels
    params = dict(n_components=4, epochs=3, tol=0.0, chunk_rows=300, loss="squared_hinge",
                  weight_features=False)
    with pytest.warns(ConvergenceWarning, match="epochs=3"):
        five = MixtureSVC(**params).fit(X, y5)
    with pytest.warns(ConvergenceWarning, match="epochs=3"):
        two = MixtureSVC(**params).fit(X, y5 == 0)
    assert five.n_passes_ == two.n_passes_ == expected
    # the lanes do not mix: class 0's lane is the binary mixture of class 0 against the rest
    np.testing.assert_allclose(five.expert_coef_[0], two.expert_coef_[0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(five.centers_[0], two.centers_[0], rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(five.xi_[0], two.xi_[0])


def test_probability_scale_minimises_the_held_out_log_loss() -> None:
    from streamlearn.solvers.calibration import TemperatureSums, best_temperature
    from streamlearn.solvers.holdout import Holdout
    from streamlearn.solvers.mixture.driver import VALIDATION_SALT

    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, size=(4000, 2)).astype(np.float32)
    labels = np.array(["a", "b", "c"])
    y = labels[(np.hypot(X[:, 0], X[:, 1]) > 0.45).astype(int) + (X[:, 0] > 0.5)]
    flip = rng.random(4000) < 0.1
    y[flip] = rng.choice(labels, flip.sum())
    # the hinge: on these rows the squared hinge's scaled softmax (log loss 0.1288) falls
    # just short of its normalised logistic functions (0.1281)
    clf = MixtureSVC(random_state=3, loss="hinge", multiclass="ovr").fit(X, y)
    assert clf.proba_rows_ == "held-out"
    held = Holdout.fraction(clf.validation_fraction, 3 ^ VALIDATION_SALT).mask(np.arange(4000))
    f = clf.decision_function(X[held])
    codes = np.searchsorted(clf.classes_, y[held])
    # the plain log-loss of softmax(s f) on the held-out rows, summed independently
    expected = best_temperature(TemperatureSums(3).add(f, codes).losses(smoothed=False))
    assert clf.proba_scale_ == pytest.approx(expected, rel=1e-6)
    proba = clf.predict_proba(X)
    np.testing.assert_array_equal(clf.predict(X), labels[np.argmax(proba, axis=1)])
    # against the one-vs-rest logistic functions normalised, what eq. 21 per class gives
    from scipy.special import expit
    from sklearn.metrics import log_loss

    Xt = rng.uniform(-1, 1, size=(2000, 2)).astype(np.float32)
    yt = labels[(np.hypot(Xt[:, 0], Xt[:, 1]) > 0.45).astype(int) + (Xt[:, 0] > 0.5)]
    normalised = expit(clf.decision_function(Xt))
    normalised /= normalised.sum(axis=1, keepdims=True)
    assert log_loss(yt, clf.predict_proba(Xt)) < log_loss(yt, normalised)


def test_small_data_chooses_the_scale_on_training_rows_against_smoothed_targets() -> None:
    from streamlearn.solvers.calibration import TemperatureSums, best_temperature

    X, y = _xor(600, seed=2)
    clf = MixtureSVC(random_state=0).fit(X, y)  # 60 rows would be held out: no guard
    assert clf.proba_rows_ == "training" and clf.validation_ is None
    sums = TemperatureSums(2).add(clf.decision_function(X), y)
    assert clf.proba_scale_ == pytest.approx(best_temperature(sums.losses()), rel=1e-6)


# -- categorical columns: indicator columns built in the stream ------------------------------
def _categories(n: int, seed: int, k: int = 200) -> tuple[pd.DataFrame, np.ndarray]:
    frame, score = category_problem(n, seed, k)
    return frame, (score > 0).astype(np.int64)


def test_categories_are_read_as_indicator_columns(tmp_path) -> None:
    # 200 categories whose codes (sorted names) say nothing of their effects: read as one
    # number each the mixture scored 0.65 against one-hot logistic regression's 0.90;
    # indicator columns put it within 3 points of the one-hot reference (0.91)
    train, y = _categories(3000, 0)
    test, y_test = _categories(1000, 1)
    reference = LogisticRegression(max_iter=1000).fit(one_hot(train), y)
    model = MixtureSVC(random_state=0).fit(train, y)
    assert model.score(test, y_test) >= reference.score(one_hot(test), y_test) - 0.03
    # the given columns stay the model's input; the experts read x0 and 200 indicators
    assert model.n_features_in_ == 2 and list(model.feature_names_in_) == ["x0", "cat"]
    assert model.centers_.shape[-1] == 201
    # the indicators are the one-hot columns of pandas, the category order that of the list
    rows = model.category_indicators_.apply(np.c_[test["x0"], test["cat"].cat.codes])
    np.testing.assert_array_equal(rows, np.c_[test["x0"], one_hot(test)[:, :-1]].astype(
        np.float32))
    # importances: one per given column, the indicators' summed (numpy from the weights)
    weights = np.einsum("jk,jkf->f", model.xi_, np.abs(model.expert_coef_[:, :, :201]))
    expected = np.array([weights[0], weights[1:].sum()]) / weights.sum()
    np.testing.assert_allclose(model.feature_importances_, expected, rtol=1e-12)
    # an unseen category sets no indicator: the score of the row with every indicator 0
    unseen = test.head(4).astype({"cat": object}).assign(cat=["new", "c001", "new", "c002"])
    with pytest.warns(UserWarning, match="not seen in fit"):
        scores = model.decision_function(unseen)
    zeros = np.c_[unseen["x0"], np.zeros((4, 200))].astype(np.float32)
    neutral = model._log_odds(zeros, model.shift_, model.scale_)[:, 0]
    np.testing.assert_array_equal(scores[[0, 2]], neutral[[0, 2]])
    assert not np.allclose(scores[[1, 3]], neutral[[1, 3]])
    # the model file keeps the map: the same scores from the given columns
    loaded = MixtureSVC.load(model.save(tmp_path / "m.slm"))
    assert loaded.category_indicators_ == model.category_indicators_
    np.testing.assert_array_equal(loaded.decision_function(test),
                                  model.decision_function(test))


def test_indicator_columns_are_centred_not_scaled() -> None:
    # standardised, a category of 1 row in 200 would weigh sqrt(200) where it is on;
    # centred only, the column's indicators add up to about one unit of variance
    train, y = _categories(3000, 0)
    model = MixtureSVC(random_state=0, n_components=3).fit(train, y)
    dummies = one_hot(train)[:, :-1]
    np.testing.assert_allclose(model.scale_[1:], 1.0)
    np.testing.assert_allclose(model.shift_[1:], dummies.mean(axis=0), atol=1e-6)
    assert model.scale_[0] == pytest.approx(train["x0"].std(ddof=0), rel=1e-4)


def test_partial_fit_reads_categories_as_indicator_columns() -> None:
    train, y = _categories(3000, 0, k=20)
    test, y_test = _categories(1000, 1, k=20)
    # 30 components as the first call's 1,500 rows got before the rule of 10 rows per
    # weight (6 now): the second call's pass costs 3 to 7 points at any count
    model = MixtureSVC(n_components=30, random_state=0).partial_fit(train[:1500], y[:1500],
                                                                    classes=[0, 1])
    model.partial_fit(train[1500:], y[1500:])
    assert model.category_indicators_.n_features == 21 and model.n_features_in_ == 2
    reference = LogisticRegression(max_iter=1000).fit(one_hot(train), y)
    assert model.score(test, y_test) >= reference.score(one_hot(test), y_test) - 0.05


def test_a_column_of_more_categories_than_the_cap_keeps_its_codes_with_a_warning() -> None:
    train, y = _categories(1200, 0, k=MAX_INDICATOR_CATEGORIES + 1)
    with pytest.warns(UserWarning, match=r"MixtureSVC reads the categorical column\(s\) "
                                         rf"'cat' \({MAX_INDICATOR_CATEGORIES + 1} categories\)"):
        model = MixtureSVC(random_state=0, n_components=3).fit(train, y)
    assert not hasattr(model, "category_indicators_") and model.centers_.shape[-1] == 2

