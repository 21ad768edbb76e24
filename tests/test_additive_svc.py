"""AdditiveSVC against scikit-learn, numpy and the single-model solver kernels."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.calibration import _sigmoid_calibration
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import SplineTransformer
from sklearn.svm import LinearSVC

from streamlearn import SchemaError, open_dataset
from streamlearn.data.dataset import Dataset
from streamlearn.data.synthetic import additive_problem
from streamlearn.engine import LocalEngine
from streamlearn.errors import LabelError
from streamlearn.features import BSplineMap, FourierMap
from streamlearn.io import load_model
from streamlearn.models import AdditiveSVC
from streamlearn.models.additive import HOLDOUT_SALT, Holdout, ModelPairs
from streamlearn.models.base import NotFittedError
from streamlearn.solvers.calibration import MIN_CALIBRATION_ROWS, fit_sigmoid, sigmoid_objective
from streamlearn.solvers.dcd import LOSSES, dcd_chunk, dcd_ovr_chunk, primal_objective
from streamlearn.solvers.embedding import (
    decision_chunk,
    decision_ovr_chunk,
    embedding_params,
    weights_from_w_d,
)
from streamlearn.solvers.pegasos import pegasos_chunk, pegasos_ovr_chunk
from streamlearn.solvers.row_sample import row_keys


def binary_problem(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    f = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 - 1 + 0.3 * X[:, 2] * X[:, 3]
    y = np.where(f + 0.5 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def three_class_problem(n: int, seed: int = 0):
    """Classes are the argmax of three additive, non-monotone functions."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 4)).astype(np.float32)
    g = np.stack([
        np.sin(3 * X[:, 0]) + 0.5 * X[:, 2],
        2.0 * X[:, 1] ** 2 - 0.7 + 0.3 * np.abs(X[:, 3]),
        -np.sin(3 * X[:, 0]) + 0.8 * np.cos(3 * X[:, 2]) - 0.2,
    ], axis=1)
    return X, np.argmax(g + 0.15 * rng.normal(size=g.shape), axis=1)


def materialised(model, X):
    """The rows as the model's solver saw them, and the centre it put them on (0 if none)."""
    Z = X if model.feature_map_ is None else model.feature_map_.transform(X)
    Z = np.asarray(Z, dtype=np.float64)
    if not hasattr(model, "dcd_centre_"):
        return Z, np.zeros(Z.shape[1])
    emb = embedding_params(model.feature_map_, X.shape[1])
    return Z, weights_from_w_d(model.dcd_centre_, emb.ipar)[:-1]


def objective(model, X, y, C, sample_weight=None):
    """Primal objective of a fitted binary model on the materialised embedding: for dual
    coordinate descent that of the rows centred on ``dcd_centre_``, whose intercept's
    weight (the penalised one) is ``b + w . mu / bias_scale``."""
    Z, mu = materialised(model, X)
    bias = model.coef_d_[0, -1] + model.embedding_coef_[0] @ mu / model.bias_scale
    return primal_objective(Z - mu, y, model.embedding_coef_[0], bias, C, model.loss,
                            bias_scale=model.bias_scale, sample_weight=sample_weight)


# -- one-vs-rest kernels against the single-model kernels ---------------------------------
KERNEL_MAPS = [
    None,
    BSplineMap(2, 7, 2).fit(-np.ones(3), np.ones(3)),
    FourierMap(2, 1).fit(-np.ones(3), np.ones(3)),
]


def _binary_problem(codes: np.ndarray, pairs: ModelPairs, j: int,
                    weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # labels and weights of model j as a single binary problem: rows outside it weigh 0
    positive, member = pairs.labels(codes)
    y = np.where(positive[:, j], 1.0, -1.0).astype(np.float32)
    return y, (weight * member[:, j]).astype(weight.dtype)


@pytest.mark.parametrize("multiclass", ["ovr", "ovo"])
@pytest.mark.parametrize("m", KERNEL_MAPS, ids=repr)
def test_pegasos_ovr_equals_one_pegasos_per_model(m, multiclass):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 3)).astype(np.float32)
    codes = rng.integers(0, 3, size=300).astype(np.int32)
    weight = rng.integers(0, 3, size=300).astype(np.float32)
    emb = embedding_params(m, 3)
    pairs = ModelPairs.of(3, multiclass)  # 3 models either way
    lam, bias, t0, start = 0.05, 0.7, 40, 150
    W = rng.normal(size=(3, emb.n_dims + 1)) * 0.1  # warm start
    AVG = rng.normal(size=W.shape) * 0.1
    refs = [(W[j].copy(), AVG[j].copy()) for j in range(3)]
    t = t0
    for part in np.array_split(np.arange(300), 3):
        t = pegasos_ovr_chunk(X[part], codes[part], *pairs, weight[part], lam, bias, W, AVG,
                              t, start, *emb)
    assert t == t0 + 300
    for j, (w, avg) in enumerate(refs):
        y, wj = _binary_problem(codes, pairs, j, weight)
        tj = t0
        for part in np.array_split(np.arange(300), 3):
            tj = pegasos_chunk(X[part], y[part], wj[part], lam, bias, w, avg, tj, start, *emb)
        np.testing.assert_allclose(W[j], w, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(AVG[j], avg, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("multiclass", ["ovr", "ovo"])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("m", KERNEL_MAPS, ids=repr)
def test_dcd_ovr_equals_one_dcd_per_model(m, loss, multiclass):
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(200, 3)).astype(np.float32)
    codes = rng.integers(0, 3, size=200).astype(np.int32)
    c = 0.25 * rng.integers(0, 3, size=200)  # float32-exact penalties, some rows weigh 0
    emb = embedding_params(m, 3)
    pairs = ModelPairs.of(3, multiclass)
    alpha = np.zeros((200, 3), dtype=np.float32)
    W = np.zeros((3, emb.n_dims + 1))
    out = dcd_ovr_chunk(X, codes, *pairs, c, alpha, W, LOSSES[loss], 0.5, 3, 7, *emb)
    for j in range(3):
        y, cj = _binary_problem(codes, pairs, j, c)
        a = np.zeros(200, dtype=np.float32)
        w = np.zeros(emb.n_dims + 1)
        ref = dcd_chunk(X, y, cj, a, w, LOSSES[loss], 0.5, 3, 7, *emb)
        np.testing.assert_allclose(W[j], w, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(alpha[:, j], a)
        np.testing.assert_allclose([o[j] for o in out], ref, rtol=1e-12)


def test_decision_ovr_equals_decision_chunk():
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(100, 3)).astype(np.float32)
    for m in KERNEL_MAPS:
        emb = embedding_params(m, 3)
        W = rng.normal(size=(4, emb.n_dims + 1))
        got = decision_ovr_chunk(X, W, 0.5, *emb)
        for j in range(4):
            ref = decision_chunk(X, W[j], W[j, -1] * 0.5, *emb)
            np.testing.assert_allclose(got[:, j], ref, rtol=1e-5, atol=1e-5)


# -- training against references ----------------------------------------------------------
def test_dcd_reaches_liblinear_objective():
    X, y = binary_problem(2000)
    C = 0.02
    model = AdditiveSVC(embedding="bspline", degree=1, n_bases=10, penalty_order=0,
                        solver="dcd", C=C, epochs=500, tol=1e-4, calibrate=False,
                        chunk_rows=500).fit(X, y)
    assert model.n_iter_ < 500
    assert model.C_ == pytest.approx(C)
    # liblinear's problem on the rows centred on their mean, as the solver centres them
    Z, mu = materialised(model, X)
    np.testing.assert_allclose(mu, Z.mean(axis=0), atol=1e-6)
    svc = LinearSVC(loss="hinge", dual=True, C=C, intercept_scaling=1, tol=1e-6,
                    max_iter=1_000_000).fit(Z - mu, y)
    p_ref = primal_objective(Z - mu, y, svc.coef_[0], svc.intercept_[0], C, "hinge")
    assert objective(model, X, y, C) == pytest.approx(p_ref, rel=1e-3)
    # the model's scores are those of the materialised features
    np.testing.assert_allclose(model.decision_function(X),
                               Z @ model.embedding_coef_[0] + model.intercept_[0], rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("solver, options", [
    ("pegasos", dict(degree=3, n_bases=12, penalty_order=1)),
    ("dcd", dict(degree=1, n_bases=10, penalty_order=0)),
    ("dcd", dict(degree=2, n_bases=8, penalty_order=2, loss="squared_hinge")),
])
def test_online_and_precomputed_embedding_give_the_same_model(solver, options):
    X, y = three_class_problem(1500)
    # the model the defaults trained on these rows before five folds could choose pairs
    # and the scheme (tests/test_additive_cross_fit.py)
    kw = dict(embedding="bspline", solver=solver, epochs=3, chunk_rows=400, random_state=5,
              interactions=0, multiclass="ovr", **options)
    online = AdditiveSVC(online=True, **kw).fit(X, y)
    batch = AdditiveSVC(online=False, **kw).fit(X, y)
    scale = np.abs(online.embedding_coef_).max()
    np.testing.assert_allclose(batch.embedding_coef_, online.embedding_coef_, rtol=1e-4,
                               atol=1e-5 * scale)
    np.testing.assert_allclose(batch.intercept_, online.intercept_, rtol=1e-4,
                               atol=1e-5 * scale)
    np.testing.assert_allclose(batch.platt_a_, online.platt_a_, rtol=1e-3)
    assert np.mean(batch.predict(X) == online.predict(X)) > 0.995


@pytest.mark.parametrize("solver", ["pegasos", "dcd"])
def test_multiclass_beats_linear_and_matches_sklearn_splines(solver):
    X, y = three_class_problem(6000, seed=1)
    Xt, yt = three_class_problem(4000, seed=2)
    kw = dict(solver=solver, epochs=8, C=1.0, chunk_rows=1000)
    additive = AdditiveSVC(embedding="bspline", degree=1, n_bases=10, **kw).fit(X, y)
    linear = AdditiveSVC(embedding="linear", **kw).fit(X, y)
    reference = make_pipeline(SplineTransformer(n_knots=9, degree=1),
                              LinearSVC(C=1.0, dual=True, loss="hinge", max_iter=100_000))
    reference.fit(X, y)
    acc = additive.score(Xt, yt)
    assert acc > linear.score(Xt, yt) + 0.15
    assert acc > reference.score(Xt, yt) - 0.03
    assert additive.decision_function(Xt).shape == (4000, 3)
    proba = additive.predict_proba(Xt)
    assert proba.shape == (4000, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(proba >= 0)


def test_calibration_rows_are_held_out_and_calibrated():
    X, y = binary_problem(3000, seed=3)
    C = 0.05
    model = AdditiveSVC(embedding="bspline", degree=1, n_bases=10, solver="dcd", C=C,
                        lam=None, epochs=300, tol=1e-4, calibration_fraction=0.2,
                        chunk_rows=700, random_state=11).fit(X, y)
    keys = row_keys(np.arange(3000, dtype=np.int64), 11 ^ HOLDOUT_SALT)
    held = keys < np.uint64(int(0.2 * 2**64))
    assert model.n_calibration_ == held.sum() and model.n_train_ == 3000 - held.sum()
    # training used the other rows only: liblinear on them, centred on their mean as the
    # solver centres them, reaches the same objective
    train = ~held
    Z, mu = materialised(model, X[train])
    np.testing.assert_allclose(mu, Z.mean(axis=0), atol=1e-6)
    svc = LinearSVC(loss="hinge", dual=True, C=model.C_, tol=1e-6,
                    max_iter=1_000_000).fit(Z - mu, y[train])
    p_ref = primal_objective(Z - mu, y[train], svc.coef_[0], svc.intercept_[0], model.C_,
                             "hinge")
    assert objective(model, X[train], y[train], model.C_) == pytest.approx(p_ref, rel=1e-3)
    # the binned, streamed Platt fit is the exact fit on the held-out scores
    f = model.svm_scores(X)[:, 0]
    a, b = fit_sigmoid(f[held], y[held] == 1)
    assert model.calibrated_
    np.testing.assert_allclose([model.platt_a_[0], model.platt_b_[0]], [a, b], atol=5e-3)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    p = 1 / (1 + np.exp(a * f + b))
    np.testing.assert_allclose(proba[:, 1], p, atol=5e-3)
    # the decision function is the calibrated log-odds; its sign is the prediction
    np.testing.assert_allclose(model.decision_function(X), -(a * f + b),
                               atol=5e-3 * (1 + np.abs(f).max()))
    np.testing.assert_array_equal(model.predict(X) == 1, model.decision_function(X) > 0)
    np.testing.assert_array_equal(np.argmax(proba, axis=1) == 1, model.decision_function(X) > 0)


def test_chunk_size_does_not_change_the_dcd_objective():
    X, y = binary_problem(2000, seed=4)
    C = 0.05
    values = []
    # converged to a relative duality gap of 1e-3: at 1e-2 the 97-row chunks (mixed across
    # groups of chunks, each epoch another) stopped 0.34 % above the one chunk's objective,
    # within that gap; at 1e-3 the two are 3e-5 apart
    for chunk_rows in (97, 2000):
        model = AdditiveSVC(embedding="bspline", degree=2, n_bases=8, penalty_order=0,
                            solver="dcd", loss="squared_hinge", C=C, epochs=150, tol=1e-3,
                            calibrate=False, chunk_rows=chunk_rows).fit(X, y)
        assert model.n_iter_ < 150
        values.append(objective(model, X, y, C))
    assert values[0] == pytest.approx(values[1], rel=1e-3)


def test_partial_fit_over_chunks():
    X, y = additive_problem(40_000, seed=3)
    Xt, yt = additive_problem(10_000, seed=4)
    model = AdditiveSVC(embedding="bspline", degree=1, n_bases=20)
    for part in np.array_split(np.arange(40_000), 20):
        model.partial_fit(X[part], y[part])
    assert model.t_ - model.average_start_ + 1 == 40_000 - 2_000  # steps after the first chunk
    assert model.score(Xt, yt) > 0.88
    linear = AdditiveSVC(embedding="linear").fit(X, y)
    assert model.score(Xt, yt) > linear.score(Xt, yt) + 0.1
    # multiclass: all labels on the first call
    X3, y3 = three_class_problem(6000, seed=5)
    labels = np.array(["a", "b", "c"])[y3]
    with pytest.raises(LabelError, match="classes"):
        AdditiveSVC().partial_fit(X3[:100], labels[:100])
    multi = AdditiveSVC(n_bases=10)
    for part in np.array_split(np.arange(6000), 6):
        multi.partial_fit(X3[part], labels[part], classes=["a", "b", "c"])
    assert multi.score(X3, labels) > 0.8
    with pytest.raises(LabelError, match="'d'"):
        multi.partial_fit(X3[:5], np.array(["a", "b", "c", "d", "a"]))


# -- labels, inputs, files ----------------------------------------------------------------
@pytest.mark.parametrize("labels", [
    np.array(["dog", "cat"]),
    np.array([False, True]),
    np.array([-1, 1]),
    np.array([0.0, 1.0]),
    np.array(["x", "y", "z"], dtype=object),
], ids=lambda a: f"{a.dtype}-{len(a)}")
def test_labels_of_any_kind_map_back(labels):
    X, codes = three_class_problem(1500, seed=6)
    codes = codes % len(labels)
    y = labels[codes]
    model = AdditiveSVC(epochs=2).fit(X, y)
    expected = np.unique(labels.astype(str) if labels.dtype == object else labels)
    np.testing.assert_array_equal(model.classes_, expected)
    predicted = model.predict(X)
    assert set(np.unique(predicted).tolist()) <= set(expected.tolist())
    assert model.score(X, y) > 0.6
    if len(labels) == 2:
        assert model.decision_function(X).shape == (1500,)
        positive = model.decision_function(X) > 0
        np.testing.assert_array_equal(predicted, np.where(positive, expected[1], expected[0]))


def test_feature_mismatch_raises_schema_error():
    X, y = binary_problem(500)
    model = AdditiveSVC(epochs=1).fit(X, y)
    with pytest.raises(SchemaError, match=r"3 features, but \w+ is expecting 4 features"):
        model.predict(X[:, :3])
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    named = AdditiveSVC(epochs=1).fit(frame, y)
    with pytest.raises(SchemaError, match=r"expected \['a', 'b', 'c', 'd'\].*'e'"):
        named.predict(frame.rename(columns={"d": "e"}))
    # the same columns in another order are put back in fit order
    np.testing.assert_array_equal(named.predict(frame[["d", "c", "b", "a"]]),
                                  named.predict(X))
    # a model fitted on an unnamed array takes any table's columns by position
    np.testing.assert_array_equal(model.predict(frame), model.predict(X))
    with pytest.raises(ValueError, match="finite"):
        model.predict(np.where(np.eye(4, dtype=bool), np.nan, 1.0).astype(np.float32))


@pytest.mark.parametrize("embedding", ["linear", "bspline", "fourier", "hermite"])
def test_save_load_round_trip(tmp_path, embedding):
    X, y = three_class_problem(1200, seed=7)
    labels = np.array(["low", "mid", "high"])[y]
    model = AdditiveSVC(embedding=embedding, degree=2, penalty_order=None, epochs=2).fit(
        X, labels)
    path = model.save(tmp_path / "model.slm")
    loaded = AdditiveSVC.load(path)
    assert isinstance(load_model(path), AdditiveSVC)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    np.testing.assert_array_equal(loaded.classes_, model.classes_)
    assert loaded.get_params() == model.get_params()
    # training continues from the loaded state as from the original
    more = X[:200], labels[:200]
    np.testing.assert_array_equal(loaded.partial_fit(*more).coef_d_,
                                  model.partial_fit(*more).coef_d_)


def test_streamed_dataset_score_and_params():
    X, y = binary_problem(2000, seed=8)
    ds = open_dataset(X, target=np.where(y > 0, "pos", "neg"), chunk_rows=300)
    model = AdditiveSVC(n_bases=8, epochs=2).fit(ds)
    assert model.score(ds) == pytest.approx(model.score(X, np.where(y > 0, "pos", "neg")))
    copy = clone(model)
    assert copy.get_params() == model.get_params() and not copy.is_fitted
    copy.set_params(embedding="fourier", n_terms=3)
    assert copy.embedding == "fourier" and "n_terms=3" in repr(copy)
    with pytest.raises(ValueError, match="Invalid parameter"):
        copy.set_params(bogus=1)
    with pytest.raises(NotFittedError):
        copy.predict(X)
    with pytest.raises(ValueError, match="embedding"):
        AdditiveSVC(embedding="rbf").fit(X, y)
    with pytest.raises(ValueError, match="Dataset"):
        AdditiveSVC().fit(ds, y)


def test_rare_class_probabilities_beat_the_prior():
    # 0.5% positives, 3 of them among the 529 held-out rows: the plain logistic of the
    # hinge scores (near -1 for every row) had test log-loss 0.08-0.15, the constant
    # prior's 0.03; Platt's sigmoid on every row's scores is about LogisticRegression's
    X, y = make_classification(25000, 10, n_informative=5, weights=[0.995], flip_y=0,
                               random_state=0)
    X, X_test, y, y_test = X[:5000], X[5000:], y[:5000], y[5000:]
    with pytest.warns(UserWarning, match="not calibrated"):
        model = AdditiveSVC(random_state=0).fit(X, y)
    p = model.predict_proba(X_test)[:, 1]
    prior = log_loss(y_test, np.full(len(y_test), y.mean()))
    reference = log_loss(y_test, LogisticRegression().fit(X, y).predict_proba(X_test)[:, 1])
    assert log_loss(y_test, p) < 0.8 * prior and log_loss(y_test, p) < 1.1 * reference


@pytest.mark.parametrize("multiclass", ["ovr", "ovo"])
def test_rare_class_sigmoids_of_every_binary_model(multiclass):
    # more classes, one rare: every binary model's sigmoid on its own rows (one-vs-one:
    # those of its two classes), as scikit-learn fits it
    X3, y3 = make_classification(3000, 6, n_informative=4, n_classes=3,
                                 weights=[0.6, 0.395, 0.005], flip_y=0, random_state=1)
    with pytest.warns(UserWarning, match="not calibrated"):
        multi = AdditiveSVC(multiclass=multiclass, random_state=0).fit(X3, y3)
    pairs, scores = multi._pairs(), multi.svm_scores(X3)
    for j in range(scores.shape[1]):
        positive = y3 == pairs.positive[j]
        rows = (np.ones(len(y3), dtype=bool) if multiclass == "ovr"
                else positive | (y3 == pairs.negative[j]))
        a, b = _sigmoid_calibration(scores[rows, j], positive[rows])
        np.testing.assert_allclose([multi.platt_a_[j], multi.platt_b_[j]], [a, b],
                                   rtol=0.02, atol=0.01)


def test_uncalibrated_probabilities_are_the_logistic_of_the_scores():
    X, y = binary_problem(800, seed=9)
    model = AdditiveSVC(calibrate=False, epochs=2).fit(X, y)
    assert not model.calibrated_ and model.n_calibration_ == 0 and model.n_train_ == 800
    f = model.decision_function(X)
    np.testing.assert_allclose(model.predict_proba(X)[:, 1], 1 / (1 + np.exp(-f)))


def test_too_few_held_out_rows_of_a_class_fit_the_sigmoid_on_every_row():
    # 1% positives: the calibration rows, chosen by a hash of the row id, hold fewer than
    # MIN_CALIBRATION_ROWS of them. A sigmoid fitted to so few (none, for some seeds) came
    # out flat, and every row was predicted negative; the plain logistic of the scores
    # put far too much on the positives. Platt's sigmoid is fitted to every row's scores.
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 3.8).astype(int)
    assert 0.005 < y.mean() < 0.02
    keys = row_keys(np.arange(3000, dtype=np.int64), 0 ^ HOLDOUT_SALT)
    held = keys < np.uint64(int(0.1 * 2**64))
    assert np.sum(y[held] == 1) < MIN_CALIBRATION_ROWS
    with pytest.warns(UserWarning, match="not calibrated.*every row.*optimistic"):
        model = AdditiveSVC(random_state=0).fit(X, y)
    assert not model.calibrated_ and model.n_calibration_ == held.sum()
    f = model.svm_scores(X)[:, 0]
    a, b = _sigmoid_calibration(f, y)  # scikit-learn's Platt fit, unbinned
    np.testing.assert_allclose([model.platt_a_[0], model.platt_b_[0]], [a, b], rtol=0.01)
    np.testing.assert_allclose(model.predict_proba(X)[:, 1],
                               1 / (1 + np.exp(model.platt_a_[0] * f + model.platt_b_[0])))
    found = model.predict(X) == 1
    assert found[y == 1].mean() > 0.5 and found[y == 0].mean() < 0.02
    # with enough of them held out, the sigmoid is fitted, and without a warning
    balanced = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.5).astype(int)
    assert np.sum(balanced[held] == 1) >= MIN_CALIBRATION_ROWS
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert AdditiveSVC(random_state=0).fit(X, balanced).calibrated_
        # a tenth of 399 rows cannot hold 20 of each of two classes: every row trains,
        # without a warning, and the sigmoid's slope (B = 0) is chosen on the training
        # rows' scores against Platt's smoothed targets; at 400 rows the tenth is held out
        # (a fit with nothing to choose: the default's choices are made by folds of these
        # rows, tests/test_additive_cross_fit.py)
        fixed = dict(n_bases=8, interactions=0, value_terms=False, random_state=0)
        small = AdditiveSVC(**fixed).fit(X[:399], balanced[:399])
        assert (small.n_train_, small.n_calibration_, small.calibrated_) == (399, 0, False)
        f = small.svm_scores(X[:399])[:, 0]
        pos = balanced[:399] == 1
        targets = np.where(pos, (pos.sum() + 1) / (pos.sum() + 2), 1 / ((~pos).sum() + 2))
        slopes = np.linspace(-8.0, -0.1, 400)
        losses = [sigmoid_objective(a, 0.0, f, targets, np.ones(399)) for a in slopes]
        # the binned rows' slope, within the grid's step of the unbinned optimum
        assert small.platt_a_[0] == pytest.approx(slopes[int(np.argmin(losses))], abs=0.05)
        np.testing.assert_array_equal(small.platt_b_, [0.0])
        np.testing.assert_allclose(small.predict_proba(X[:399])[:, 1],
                                   1 / (1 + np.exp(small.platt_a_[0] * f)))
        np.testing.assert_array_equal(small.predict(X[:399]), (f > 0).astype(int))
        assert AdditiveSVC(**fixed).fit(X[:400], balanced[:400]).n_calibration_ == \
            np.sum(held[:400])


# -- one-vs-one ---------------------------------------------------------------------------
def test_one_vs_one_models_reach_liblinear_objective_of_each_pair():
    X, y = three_class_problem(1500)
    labels = np.array(["dog", "cat", "emu"])[y]  # string labels, classes_ sorted
    C = 0.05
    model = AdditiveSVC(embedding="bspline", degree=1, n_bases=8, solver="dcd",
                        multiclass="ovo", C=C, epochs=500, tol=1e-4, calibrate=False,
                        chunk_rows=400).fit(X, labels)
    assert model.n_models_ == 3 and model.n_iter_ < 500
    Z = model.feature_map_.transform(X)
    pairs = ModelPairs.of(3, "ovo")
    for j in range(3):
        a, b = model.classes_[pairs.positive[j]], model.classes_[pairs.negative[j]]
        rows = (labels == a) | (labels == b)
        yj = np.where(labels[rows] == a, 1, -1)
        svc = LinearSVC(loss="hinge", dual=True, C=C, tol=1e-6, max_iter=1_000_000)
        svc.fit(Z[rows], yj)
        ref = primal_objective(Z[rows], yj, svc.coef_[0], svc.intercept_[0], C, "hinge")
        ours = primal_objective(Z[rows], yj, model.embedding_coef_[j], model.coef_d_[j, -1], C,
                                "hinge")
        assert ours == pytest.approx(ref, rel=1e-3)


@pytest.mark.parametrize("solver", ["pegasos", "dcd"])
def test_one_vs_one_votes_like_sklearn_and_couples_probabilities(solver, tmp_path):
    from sklearn.multiclass import OneVsOneClassifier

    X, y = three_class_problem(4000, seed=3)
    Xt, yt = three_class_problem(3000, seed=4)
    kw = dict(embedding="bspline", degree=1, n_bases=10, penalty_order=0, solver=solver,
              C=1.0, epochs=40 if solver == "dcd" else 10, chunk_rows=1000, random_state=2)
    ovo = AdditiveSVC(multiclass="ovo", **kw).fit(X, y)
    ovr = AdditiveSVC(multiclass="ovr", **kw).fit(X, y)
    assert ovo.decision_function(Xt).shape == (3000, 3)
    proba = ovo.predict_proba(Xt)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert proba.min() >= 0.0
    pred = ovo.predict(Xt)
    assert np.mean(pred == yt) > np.mean(ovr.predict(Xt) == yt) - 0.02
    # the probabilities rank the classes like the votes almost everywhere
    assert np.mean(ovo.classes_[np.argmax(proba, axis=1)] == pred) > 0.97
    # scikit-learn's one-vs-one LinearSVC on the materialised features (on the rows used
    # for training) votes the same way on nearly every test row
    train = ~Holdout.fraction(0.1, 2 ^ HOLDOUT_SALT).mask(np.arange(len(y)))
    assert train.sum() == ovo.n_train_
    Z, Zt = ovo.feature_map_.transform(X[train]), ovo.feature_map_.transform(Xt)
    ref = OneVsOneClassifier(LinearSVC(C=1.0, loss="hinge", dual=True, max_iter=100_000))
    ref.fit(Z, y[train])
    assert np.mean(ref.predict(Zt) == pred) > 0.97
    path = ovo.save(tmp_path / "ovo.slm")
    loaded = load_model(path)
    assert loaded.multiclass == "ovo"
    np.testing.assert_array_equal(loaded.predict(Xt), pred)
    np.testing.assert_array_equal(loaded.predict_proba(Xt), proba)


@pytest.mark.parametrize("solver", ["dcd", "pegasos"])
def test_zero_preserving_degree_1_d1_is_the_same_model_with_a_wider_bias(solver):
    """Degree-1 D1 splines: Psi(0) = 0 with bias_scale sqrt(d + 1) equals bias_scale 1 without.

    Without a zero at 0, each feature's embedding has a constant column (value 1) that acts
    as more bias. The reference is the other embedding's fit: their decision functions
    agree although one skips every input at zero and the other does not. Dual coordinate
    descent centres the rows, and a constant column vanishes: there the two are the same
    model with the same bias_scale.
    """
    rng = np.random.default_rng(11)
    n, d = 500, 5
    X = rng.uniform(0, 1, (n, d)).astype(np.float32)
    X[rng.random((n, d)) < 0.6] = 0.0
    y = (np.sin(4 * X[:, 0]) + X[:, 1] ** 2 - X[:, 2] + 0.2 * rng.normal(size=n) > 0.2)
    X_test = np.where(rng.random((200, d)) < 0.6, 0.0, rng.uniform(0, 1.2, (200, d)))
    common = dict(embedding="bspline", degree=1, n_bases=7, penalty_order=1, solver=solver,
                  epochs=5, C=1.0, calibrate=False, random_state=0, progress=False)
    full = AdditiveSVC(**common, bias_scale=1.0).fit(X, y.astype(int))
    sparse = AdditiveSVC(**common, zero_preserving=True,
                         bias_scale=1.0 if solver == "dcd" else np.sqrt(d + 1.0))
    sparse.fit(X, y.astype(int))
    expected = full.decision_function(X_test.astype(np.float32))
    got = sparse.decision_function(X_test.astype(np.float32))
    assert np.abs(expected).max() > 0.5  # a model, not zeros
    np.testing.assert_allclose(got, expected, atol=1e-5 * np.abs(expected).max())
    # the constant column of each feature carries the weight that the wider bias carries
    assert full.embedding_coef_.shape[1] == d * 7 and sparse.embedding_coef_.shape[1] == d * 6


def test_linear_fit_without_calibration_skips_the_describe_pass():
    X, y = binary_problem(3000, seed=5)
    ds = open_dataset(X, target=y, chunk_rows=500)
    seen = []

    class Recording(LocalEngine):
        def run(self, pass_, data, **options):
            seen.append(type(pass_).__name__)
            return super().run(pass_, data, **options)

    kw = dict(embedding="linear", epochs=2, random_state=3, standardize=False)
    fast = AdditiveSVC(calibrate=False, **kw).fit(ds, engine=Recording(progress=False))
    assert seen == ["PegasosEpochPass"] * 2 and fast.n_train_ == 3000
    assert fast.t_ == 2 * 3000  # no row sample: PEGASOS starts without a step offset
    # with the summary pass (needed here to count the rows left), its row sample sets the
    # step offset, the only difference: both are linear SVMs of the same data
    seen.clear()
    dropped = open_dataset(X, target=y, chunk_rows=500, nan_policy="drop")
    slow = AdditiveSVC(calibrate=False, **kw).fit(dropped, engine=Recording(progress=False))
    assert seen[0] == "SummaryPass" and slow.t_ > 2 * 3000
    Xt, yt = binary_problem(2000, seed=6)
    assert abs(fast.score(Xt, yt) - slow.score(Xt, yt)) < 0.03


# -- decision function, sample weights, convergence ---------------------------------------
@pytest.mark.parametrize("multiclass", ["ovr", "ovo"])
def test_multiclass_decision_function_argmax_is_the_prediction(multiclass):
    X, y = three_class_problem(2000, seed=6)
    model = AdditiveSVC(n_bases=8, multiclass=multiclass, epochs=3, random_state=1).fit(X, y)
    decision = model.decision_function(X)
    proba = model.predict_proba(X)
    f = model.svm_scores(X)
    assert decision.shape == proba.shape == (2000, 3) and f.shape == (2000, 3)
    np.testing.assert_array_equal(model.classes_[np.argmax(decision, axis=1)],
                                  model.predict(X))
    if multiclass == "ovr":
        # the calibrated log-odds of each class: the logit of its calibrated sigmoid
        p = 1 / (1 + np.exp(model.platt_a_ * f + model.platt_b_))
        np.testing.assert_allclose(decision, np.log(p / (1 - p)), rtol=1e-6, atol=1e-9)
        np.testing.assert_array_equal(np.argmax(proba, axis=1), np.argmax(decision, axis=1))
    else:
        # votes of the pairwise models (0 against 1, 0 against 2, 1 against 2) + a tie-break
        win = (f > 0).astype(int)
        votes = np.stack([win[:, 0] + win[:, 1], 1 - win[:, 0] + win[:, 2],
                          2 - win[:, 1] - win[:, 2]], axis=1)
        np.testing.assert_array_equal(np.floor(decision), votes)
        np.testing.assert_allclose(decision - votes, 0.5 * proba)


def test_integer_weights_reach_the_objective_of_repeated_rows():
    X, y = binary_problem(600, seed=12)
    weight = np.random.default_rng(3).integers(0, 4, size=600)
    kw = dict(embedding="linear", solver="dcd", C=0.1, epochs=3000, tol=1e-6, calibrate=False,
              standardize=False)
    weighted = AdditiveSVC(lam=0.01, **kw).fit(X, y, sample_weight=weight.astype(np.float32))
    repeated = AdditiveSVC(lam=0.01, **kw).fit(np.repeat(X, weight, axis=0),
                                               np.repeat(y, weight))
    assert weighted.sample_weight_sum_ == weight.sum() == repeated.n_train_
    assert weighted.C_ == pytest.approx(repeated.C_)
    np.testing.assert_allclose(weighted.coef_d_, repeated.coef_d_, atol=2e-3)
    # both centred the rows on the same (weighted) mean
    np.testing.assert_allclose(weighted.dcd_centre_, repeated.dcd_centre_, atol=1e-6)
    # and liblinear on the repeated rows, centred likewise, reaches the same objective
    Xr, yr = np.repeat(X, weight, axis=0).astype(np.float64), np.repeat(y, weight)
    mu = Xr.mean(axis=0)
    svc = LinearSVC(loss="hinge", dual=True, C=weighted.C_, tol=1e-8, max_iter=1_000_000)
    svc.fit(Xr - mu, yr)
    ref = primal_objective(Xr - mu, yr, svc.coef_[0], svc.intercept_[0], weighted.C_, "hinge")
    assert objective(weighted, Xr, yr, weighted.C_) == pytest.approx(ref, rel=1e-3)


def _with_junk(X: np.ndarray, y: np.ndarray, n_junk: int, seed: int = 1):
    """``X, y`` followed by ``n_junk`` rows far outside them, and weights 1 then 0."""
    rng = np.random.default_rng(seed)
    junk = (rng.normal(size=(n_junk, X.shape[1])) * 50 + 100).astype(X.dtype)
    weight = np.r_[np.ones(len(y)), np.zeros(n_junk)].astype(np.float32)
    return np.r_[X, junk], np.r_[y, rng.choice(np.unique(y), n_junk)], weight


def _assert_same_map(a, b, *, pairs: bool = True) -> None:
    """The fitted state of two feature maps (ranges, knots, and with ``pairs`` the pairs
    and their node weights) is equal."""
    fitted = {k for k in vars(b) if k.endswith("_")}
    assert {k for k in vars(a) if k.endswith("_")} == fitted and "lo_" in fitted
    if pairs:
        assert a.get_params() == b.get_params()
    for name in fitted if pairs else fitted & {"lo_", "hi_", "knots_"}:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("n, kw", [
    (300, dict()),  # too few rows for calibration: the junk rows must not make it so
    (600, dict(solver="dcd")),
    (600, dict(interactions=2, spread_tails=True, knots="quantile")),
])
def test_rows_of_weight_zero_are_no_rows(monkeypatch, n, kw):
    # a row of weight 0 is no row (as scikit-learn's estimators and BaggingClassifier's
    # out-of-bag rows have it): the ranges, knots, row sample, held-out rows, counts and
    # steps are those of the data without them. The visiting order is fixed so that both
    # fits see their rows in the same order (a shuffle permutes a chunk's rows, junk too)
    X, y = binary_problem(n, seed=4)
    X[:, 3] = np.round(X[:, 3])  # repeated values: a candidate for value terms
    XA, yA, weight = _with_junk(X, y, n // 2)
    model = AdditiveSVC(**kw)
    default = clone(model).fit(XA, yA, sample_weight=weight)
    plain = clone(model).fit(X, y)
    assert default.n_train_ == plain.n_train_ and default.n_calibration_ == plain.n_calibration_
    assert default.sample_weight_sum_ == plain.n_train_
    assert default.pegasos_lam_ == plain.pegasos_lam_
    # the pairs are screened by the residuals of a model trained in another order
    _assert_same_map(default.feature_map_, plain.feature_map_, pairs=False)
    assert abs(default.score(X, y) - plain.score(X, y)) < 0.05
    chunks = Dataset.chunks
    monkeypatch.setattr(Dataset, "chunks",
                        lambda self, *a, **k: chunks(self, *a, **{**k, "shuffle": False}))
    weighted = clone(model).fit(XA, yA, sample_weight=weight)
    unweighted = clone(model).fit(X, y)
    _assert_same_map(weighted.feature_map_, unweighted.feature_map_)
    np.testing.assert_array_equal(weighted.coef_d_, unweighted.coef_d_)
    np.testing.assert_array_equal(weighted.decision_function(X), unweighted.decision_function(X))
    np.testing.assert_array_equal(weighted.predict_proba(X), unweighted.predict_proba(X))


@pytest.mark.parametrize("penalty_order, loss", [(0, "hinge"), (1, "hinge"),
                                                 (2, "squared_hinge")])
def test_dcd_stopped_by_the_duality_gap_is_within_tol_of_liblinear_optimum(penalty_order,
                                                                            loss):
    # the gap rule certifies the returned model: P(w) - P* <= tol P(w), with P* from
    # liblinear on the materialised embedding
    X, y = binary_problem(1500, seed=3)
    C, tol = 0.05, 2e-3
    model = AdditiveSVC(embedding="bspline", degree=2, n_bases=8, penalty_order=penalty_order,
                        loss=loss, solver="dcd", C=C, epochs=3000, tol=tol, calibrate=False,
                        chunk_rows=500).fit(X, y)
    assert model.n_iter_ < 3000
    assert model.monitor_loss_[-1] <= tol or model.pg_range_ <= 10 * tol
    Z, mu = materialised(model, X)
    np.testing.assert_allclose(model.decision_function(X),
                               Z @ model.embedding_coef_[0] + model.intercept_[0], rtol=1e-4,
                               atol=1e-4)
    svc = LinearSVC(loss=loss, dual=True, C=C, intercept_scaling=1, tol=1e-9,
                    max_iter=10**7).fit(Z - mu, y)
    p_ref = primal_objective(Z - mu, y, svc.coef_[0], svc.intercept_[0], C, loss)
    ours = objective(model, X, y, C)
    assert p_ref <= ours * (1 + 1e-6)
    if model.monitor_loss_[-1] <= tol:
        assert ours - p_ref <= tol * ours, (ours, p_ref)


def test_dcd_that_does_not_reach_tol_warns():
    from sklearn.exceptions import ConvergenceWarning

    X, y = binary_problem(500, seed=13)
    with pytest.warns(ConvergenceWarning, match="epochs=2"):
        model = AdditiveSVC(solver="dcd", epochs=2, tol=1e-9, calibrate=False).fit(X, y)
    assert model.n_iter_ == 2 and model.pg_range_ > 1e-9


def test_default_model_does_not_depend_on_the_features_units():
    # knots from each feature's range and the step offset from embedded norms: an affine
    # map of every feature leaves the embedding, hence the fit, as it was (offsets small
    # beside the scaled range, so that float32 keeps the values' precision)
    X, y = three_class_problem(3000, seed=21)
    Xt, _ = three_class_problem(1000, seed=22)
    scale = np.array([1e3, 1e-3, 7.0, 0.5], dtype=np.float32)
    shift = np.array([-50.0, 3e-3, 0.0, 2.0], dtype=np.float32)
    plain = AdditiveSVC(random_state=0, progress=False).fit(X, y)
    moved = AdditiveSVC(random_state=0, progress=False).fit(X * scale + shift, y)
    assert moved.n_iter_ == plain.n_iter_
    np.testing.assert_allclose(moved.decision_function(Xt * scale + shift),
                               plain.decision_function(Xt), rtol=1e-3, atol=1e-3)


def test_one_vs_rest_temperature_minimises_the_held_out_log_loss(tmp_path):
    from streamlearn.solvers.calibration import TemperatureSums, best_temperature

    X, y = three_class_problem(6000, seed=5)
    model = AdditiveSVC(random_state=0).fit(X, y)  # n_bases="auto" compares models
    assert model.proba_scale_ != 1.0
    held = Holdout.fraction(model.calibration_fraction, 0 ^ HOLDOUT_SALT).mask(np.arange(6000))
    tempered = model.predict_proba(X[held])
    scale = model.proba_scale_
    model.proba_scale_ = 1.0  # the Platt sigmoids' normalised probabilities
    plain = model.predict_proba(X[held])
    sums = TemperatureSums(3).add(np.log(plain), y[held])
    assert scale == pytest.approx(best_temperature(sums.losses(smoothed=False)), rel=1e-6)
    # p^s normalised, and every decision kept
    expected = plain**scale / (plain**scale).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(tempered, expected, rtol=1e-9)
    model.proba_scale_ = scale
    np.testing.assert_array_equal(model.predict(X), np.argmax(model.predict_proba(X), axis=1))
    loaded = AdditiveSVC.load(model.save(tmp_path / "m.slm"))
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    # two classes and one-vs-one keep the sigmoids' own probabilities
    assert AdditiveSVC(random_state=0).fit(X, y == 0).proba_scale_ == 1.0


@pytest.mark.parametrize("solver", ["pegasos", "dcd"])
def test_linear_model_trains_on_standardised_features_and_reports_raw_units(solver):
    rng = np.random.default_rng(14)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = np.where(X @ np.array([1.0, 0.5, -1.0, 0.3]) + 0.5 * rng.normal(size=3000) > 0, 1, -1)
    scales = np.array([1e-3, 1.0, 1e3, 50.0])
    raw = ((X + 40.0) * scales).astype(np.float32)  # shifted by 40 sd: far from zero
    model = AdditiveSVC(embedding="linear", solver=solver, epochs=5, random_state=1).fit(raw, y)
    # the same fit, standardised by hand (the describe pass's population moments) and
    # trained as it is, gives the same scores from the raw rows
    mean = raw.astype(np.float64).mean(axis=0)
    std = raw.astype(np.float64).std(axis=0)
    by_hand = AdditiveSVC(embedding="linear", solver=solver, epochs=5, random_state=1,
                          standardize=False).fit(((raw - mean) / std).astype(np.float32), y)
    np.testing.assert_allclose(model.decision_function(raw),
                               by_hand.decision_function(((raw - mean) / std).astype(np.float32)),
                               rtol=2e-3, atol=2e-3)
    # weights in the features' own units: a weight times its feature's scale is the same
    np.testing.assert_allclose(model.coef_[0] * std, by_hand.coef_[0], rtol=2e-3, atol=1e-4)
    # and units do not decide the model: the same rows in other units, the same decisions
    unit = AdditiveSVC(embedding="linear", solver=solver, epochs=5, random_state=1).fit(X, y)
    assert np.mean(unit.predict(X) == model.predict(raw)) > 0.995
    plain = AdditiveSVC(embedding="linear", solver=solver, epochs=5, random_state=1,
                        standardize=False).fit(raw, y)
    assert unit.score(X, y) > plain.score(raw, y) + 0.05


def test_no_bias_linear_model_is_the_svm_through_the_origin():
    # bias_scale=0: the features are scaled, not centred (a shift needs a bias), and the
    # model is liblinear's hinge SVM without an intercept on the scaled rows
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1500, 4))
    y = np.where(X @ np.array([1.0, -0.5, 0.8, 0.3]) + 0.5 * rng.normal(size=1500) > 0, 1, 0)
    raw = ((X + np.array([5.0, -3.0, 0.0, 2.0])) * np.array([1.0, 10.0, 0.1, 3.0])
           ).astype(np.float32)
    std = raw.astype(np.float64).std(axis=0)
    ref = LinearSVC(loss="hinge", C=0.1, fit_intercept=False, tol=1e-8,
                    max_iter=100_000).fit(raw / std, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no division by a zero bias
        dcd = AdditiveSVC(embedding="linear", solver="dcd", C=0.1, bias_scale=0.0,
                          calibrate=False, tol=1e-4, epochs=200, random_state=0).fit(raw, y)
        pegasos = AdditiveSVC(embedding="linear", C=0.1, bias_scale=0.0, calibrate=False,
                              random_state=0).fit(raw, y)
    np.testing.assert_allclose(dcd.coef_[0] * std, ref.coef_[0], atol=0.01)
    np.testing.assert_allclose(dcd.decision_function(raw), ref.decision_function(raw / std),
                               atol=0.03)
    for model in (dcd, pegasos):
        assert model.intercept_[0] == 0.0
        assert np.all(np.isfinite(model.decision_function(raw)))
        assert model.score(raw, y) > ref.score(raw / std, y) - 0.02


def test_no_bias_default_fit_keeps_finite_scores():
    # the linear candidate of the default fit trains on the same scaled rows
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2500, 50)) + 2.0
    y = ((X - 2.0) @ rng.normal(size=50) + 2.0 * rng.normal(size=2500) > 0).astype(int)
    model = AdditiveSVC(bias_scale=0.0, random_state=0).fit(X, y)
    assert model.linear_check_["kept"]
    assert np.all(np.isfinite(model.predict_proba(X))) and model.intercept_[0] == 0.0
    assert model.score(X, y) > 0.8
