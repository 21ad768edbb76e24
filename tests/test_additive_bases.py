"""``n_bases="auto"``: the count of B-spline bases per feature chosen on held-out rows."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import log_loss

from streamlearn.data.synthetic import additive_problem
from streamlearn.features import BSplinePairMap
from streamlearn.models import AdditiveSVC
from streamlearn.models.additive import AUTO_BASES, PARTIAL_FIT_BASES
from streamlearn.solvers.additive.driver import (
    DESCRIBE_MIN_CHUNKS,
    DESCRIBE_SAMPLE_CHUNKS,
    DESCRIBE_SAMPLE_ROWS,
    HOLDOUT_SALT,
    pairs_pay,
)
from streamlearn.solvers.calibration import class_probabilities
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.ovr import REST


def _held_out(model: AdditiveSVC, n: int) -> np.ndarray:
    return Holdout.fraction(model.calibration_fraction,
                            model.random_state ^ HOLDOUT_SALT).mask(np.arange(n))


def test_auto_bases_is_the_exhaustive_choice_on_the_held_out_rows() -> None:
    # the demo's curves: a sine over standard normal features needs more than 8 bases
    X, y = additive_problem(8000, n_features=6, seed=3)
    auto = AdditiveSVC(interactions=0, random_state=0).fit(X, y)
    counts = [n for n, _ in auto.bases_tried_]
    losses = [loss for _, loss in auto.bases_tried_]
    assert counts == list(AUTO_BASES[:len(counts)])
    held = _held_out(auto, len(y))
    # each count tried is the model a fixed count trains, and its loss is the held-out
    # log-loss of that model's probabilities
    for n, loss in auto.bases_tried_:
        fixed = AdditiveSVC(n_bases=n, interactions=0, random_state=0).fit(X, y)
        assert not hasattr(fixed, "bases_tried_") and fixed.n_bases_ == n
        direct = log_loss(y[held], fixed.predict_proba(X[held]))
        assert loss == pytest.approx(direct, rel=0.02)
        if n == auto.n_bases_:
            np.testing.assert_allclose(auto.coef_d_, fixed.coef_d_)
    # kept: the first count whose successor does not lower the loss
    kept = counts.index(auto.n_bases_)
    assert all(b < a for a, b in itertools.pairwise(losses[:kept + 1]))
    assert kept == len(counts) - 1 or losses[kept + 1] >= losses[kept]
    assert auto.n_bases_ > AUTO_BASES[0]
    assert auto.feature_map_.n_bases == auto.n_bases_
    assert auto.coef_d_.shape[1] == 6 * auto.n_bases_ + 1


def test_multiclass_counts_are_compared_by_the_class_log_loss() -> None:
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(6000, 4)).astype(np.float32)
    y = np.digitize(np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.normal(size=6000),
                    [-0.3, 0.6])
    # one-vs-rest: the temperature below is its own
    model = AdditiveSVC(multiclass="ovr", random_state=0).fit(X, y)
    held = _held_out(model, len(y))
    kept = dict(model.bases_tried_)[model.n_bases_]
    # the held-out loss of the classifier's probabilities, not its binary models' mean
    # (those the models are compared by: before the temperature chosen on the same rows)
    model.proba_scale_ = 1.0
    assert kept == pytest.approx(log_loss(y[held], model.predict_proba(X[held])), rel=1e-9)


def test_too_few_held_out_rows_keep_the_first_count() -> None:
    X, y = additive_problem(1500, n_features=6, seed=4)
    # 199 rows: too few to hold out 200, or for folds to choose instead (1,500 rows
    # cross-fit, tests/test_additive_cross_fit.py)
    model = AdditiveSVC(random_state=0).fit(X[:199], y[:199])
    assert model.n_bases_ == AUTO_BASES[0] and len(model.bases_tried_) == 1
    assert not hasattr(model, "cross_fit_")
    uncalibrated = AdditiveSVC(calibrate=False, random_state=0).fit(X, y)
    assert uncalibrated.n_bases_ == AUTO_BASES[0]
    online = AdditiveSVC().partial_fit(X, y, classes=[0, 1])
    assert online.feature_map_.n_bases == PARTIAL_FIT_BASES
    with pytest.raises(ValueError, match="n_bases"):
        AdditiveSVC(n_bases="many").fit(X, y)


def test_class_probabilities_match_their_definitions() -> None:
    rng = np.random.default_rng(6)
    p = rng.uniform(0.01, 0.99, size=(20, 3))
    ovr = class_probabilities(p, np.arange(3), np.full(3, REST), 3)
    np.testing.assert_allclose(ovr, p / p.sum(axis=1, keepdims=True))
    two = class_probabilities(p[:, :1], np.array([1]), np.array([REST]), 2)
    np.testing.assert_allclose(two, np.c_[1 - p[:, 0], p[:, 0]])
    # one-vs-one with consistent pairwise probabilities recovers the class probabilities
    q = rng.dirichlet(np.ones(3), size=20)
    first, second = np.array([0, 0, 1]), np.array([1, 2, 2])
    r = q[:, first] / (q[:, first] + q[:, second])
    np.testing.assert_allclose(class_probabilities(r, first, second, 3), q, atol=1e-9)


def _many_chunks(seed: int, pair: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Rows in just enough chunks for the describe pass to read a sample of them; the
    label has a sine and, with ``pair``, a product of two features. Returns X, y and the
    chunk size."""
    n_chunks, size = DESCRIBE_MIN_CHUNKS, DESCRIBE_SAMPLE_ROWS // DESCRIBE_SAMPLE_CHUNKS
    n = n_chunks * size
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    f = X[:, 3] + np.sin(2.5 * X[:, 2]) + pair * X[:, 0] * X[:, 1]
    return X, (f + rng.normal(0, 0.3, n) > 0).astype(int), size


def test_data_read_from_a_sample_of_chunks_chooses_the_count_on_that_sample() -> None:
    from streamlearn.data import open_dataset
    from streamlearn.engine.row_ranges import spread_ranges

    X, y, size = _many_chunks(7, pair=0.0)
    n, n_chunks = len(y), DESCRIBE_MIN_CHUNKS
    params = dict(epochs=2, tol=None, chunk_rows=size, interactions=0, random_state=0)
    model = AdditiveSVC(**params).fit(X, y)
    share = DESCRIBE_SAMPLE_CHUNKS / n_chunks
    # on the sample: its describe pass, then per count and for the linear candidate 2
    # epochs and a calibration pass; on all rows: the sampled describe and calibration
    # passes, 2 epochs
    tried = model.bases_tried_
    assert not model.linear_check_["kept"]
    assert model.n_passes_ == pytest.approx(share + 3 * share * (len(tried) + 1)
                                            + 2 * share + 2)
    # each loss is that of a fit with the count fixed on the sampled chunks alone
    ranges = spread_ranges(n, size, DESCRIBE_SAMPLE_CHUNKS)
    kept = [a // size for a, _ in ranges]
    sample = open_dataset(X, target=y, chunk_rows=size).without_blocks(
        np.setdiff1d(np.arange(n_chunks), kept), size)
    in_sample = np.zeros(n, bool)
    for a, b in ranges:
        in_sample[a:b] = True
    held = in_sample & _held_out(model, n)
    for count, loss in tried:
        fixed = AdditiveSVC(n_bases=count, **params).fit(sample)
        assert fixed.n_train_ + fixed.n_calibration_ == in_sample.sum()
        assert loss == pytest.approx(log_loss(y[held], fixed.predict_proba(X[held])),
                                     rel=0.02)
    losses = [loss for _, loss in tried]
    best = int(np.argmin(losses))
    assert model.n_bases_ == tried[best][0] and model.n_train_ + model.n_calibration_ == n


def test_data_read_from_a_sample_of_chunks_is_trained_once_on_all_rows() -> None:
    # pairs screened, checked and gridded on the sample; all rows read by the epochs only
    from streamlearn.engine.local import LocalEngine

    X, y, size = _many_chunks(8, pair=2.0)
    n = len(y)
    engine = LocalEngine(progress=False)
    model = AdditiveSVC(epochs=2, tol=None, chunk_rows=size, random_state=0,
                        engine=engine).fit(X, y)
    assert model.interactions_[0] == ("x0", "x1") and model.interaction_check_["kept"]
    assert model.n_bases_ in dict(model.bases_tried_)
    # every pass that read all rows is an epoch of the one training on them
    assert engine.passes.full_passes == model.n_iter_ == 2
    assert model.n_train_ + model.n_calibration_ == n


def test_pairs_kept_at_the_first_count_are_checked_again_at_the_count_kept() -> None:
    # curves too sharp for 8 bases: pairs help at 8 and may stop paying at 32
    X, y = additive_problem(8000, n_features=6, seed=9)
    model = AdditiveSVC(random_state=0).fit(X, y)
    check = model.interaction_check_
    # on these rows pairs are kept at 8 bases and the count moves on
    assert model.n_bases_ > AUTO_BASES[0] and check["n_bases"] == model.n_bases_
    held = _held_out(model, len(y))
    plain = AdditiveSVC(n_bases=model.n_bases_, interactions=0, random_state=0).fit(X, y)
    assert check["held_out_log_loss_without"] == pytest.approx(
        log_loss(y[held], plain.predict_proba(X[held])), rel=0.02)
    screened = BSplinePairMap(interactions=check["screened"])
    assert check["kept"] == pairs_pay(check["held_out_log_loss_without"],
                                      check["held_out_log_loss_with"], screened, 6)
    if check["kept"]:
        assert model.interactions_ and model.feature_map_.pair_bases > 1
    else:  # the model without pairs at that count, the same as a fit asking for none
        assert model.interactions_ == () and not hasattr(model, "interaction_scores_")
        np.testing.assert_allclose(model.coef_d_, plain.coef_d_)


def test_the_linear_model_replaces_curves_the_rows_cannot_pay_for() -> None:
    # many Gaussian features and a linear label rule: per-feature curves fit noise
    rng = np.random.default_rng(11)
    X = rng.normal(size=(3000, 60)).astype(np.float32)
    y = (X @ rng.normal(size=60) + rng.normal(0, 4.0, 3000) > 0).astype(int)
    model = AdditiveSVC(random_state=0).fit(X, y)
    check = model.linear_check_
    assert check["kept"] and check["linear"] < check["curves"]
    assert model.feature_map_ is None and not hasattr(model, "n_bases_")
    # it is the model embedding="linear" trains, on the same rows, by the same rules
    linear = AdditiveSVC(embedding="linear", random_state=0).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), linear.decision_function(X),
                               rtol=1e-6, atol=1e-9)
    held = _held_out(model, len(y))
    assert check["linear"] == pytest.approx(log_loss(y[held], model.predict_proba(X[held])),
                                            rel=0.02)
    # its shape functions are lines over each feature's observed range, slope coef_
    np.testing.assert_allclose(model.feature_ranges_, np.c_[X.min(0), X.max(0)], rtol=1e-6)
    shapes = model.shape_functions(n_points=5)
    first = shapes[shapes["feature"] == "x0"]
    slope = np.diff(first["contribution"]) / np.diff(first["value"])
    np.testing.assert_allclose(slope, model.embedding_coef_[0, 0], rtol=1e-6)
    assert first["value"].min() == pytest.approx(X[:, 0].min(), rel=1e-6)
    # curves the label needs stay
    X, y = additive_problem(8000, n_features=6, seed=3)
    curved = AdditiveSVC(interactions=0, random_state=0).fit(X, y)
    assert not curved.linear_check_["kept"] and curved.feature_map_ is not None
    assert curved.linear_check_["curves"] == dict(curved.bases_tried_)[curved.n_bases_]
