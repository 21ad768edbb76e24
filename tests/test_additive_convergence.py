"""Stopping rules of AdditiveSVC's solvers: caps, ConvergenceWarning, n_iter_, monitored loss."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from streamlearn import open_dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.engine import LocalEngine
from streamlearn.engine.passes import run_chunks
from streamlearn.models.additive import AdditiveSVC
from streamlearn.solvers.additive import (
    DcdEpochPass,
    Holdout,
    ModelPairs,
    PegasosEpochPass,
    PegasosState,
)
from streamlearn.solvers.additive.driver import (
    HOLDOUT_SALT,
    Patience,
    duality_gap,
    monitored_error,
    monitored_loss,
)
from streamlearn.solvers.additive.passes import DCD_INNER_SWEEPS, TrainingRows
from streamlearn.solvers.dcd import HINGE, SQUARED_HINGE, dcd_ovr_chunk
from streamlearn.solvers.embedding import embedding_params
from tests.merging import run_lanes


def problem(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, 3)).astype(np.float32)
    f = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 - 0.4 + 0.3 * rng.normal(size=n)
    return X, np.where(f > 0, 1, 0)


def fit_quietly(model: AdditiveSVC, X: np.ndarray, y: np.ndarray) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return [w for w in caught if issubclass(w.category, ConvergenceWarning)]


@pytest.mark.parametrize("solver", ["dcd", "pegasos"])
def test_a_solver_stopped_at_its_cap_warns_and_counts_its_epochs(solver):
    X, y = problem(1500)
    model = AdditiveSVC(solver=solver, epochs=2, tol=1e-9, chunk_rows=500, progress=False)
    with pytest.warns(ConvergenceWarning, match="epochs=2"):
        model.fit(X, y)
    assert model.n_iter_ == 2


@pytest.mark.parametrize("solver", ["dcd", "pegasos"])
@pytest.mark.parametrize("calibrate", [True, False])
def test_a_converged_fit_stops_before_its_cap_without_warning(solver, calibrate):
    X, y = problem(1500)
    model = AdditiveSVC(solver=solver, epochs=300, calibrate=calibrate, chunk_rows=500,
                        progress=False)
    assert fit_quietly(model, X, y) == []
    assert 1 <= model.n_iter_ < 300
    if solver == "dcd":  # the relative duality gap, or liblinear's projected-gradient rule
        assert model.monitor_loss_[-1] <= 0.01 or model.pg_range_ <= 0.1
        assert len(model.monitor_loss_) == model.n_iter_ - 1
    else:
        history = model.monitor_loss_
        assert len(history) == model.n_iter_ - 1
        # the rule: the last two values improve on the best before them by less than 1%
        best = min(history[:-2])
        assert min(history[-2:]) >= best * (1 - 0.01)


def test_auto_epochs_cap_follows_the_rule_of_the_docstring():
    # 50, raised to the epochs of a million row steps, at most 200; an int is kept
    model = AdditiveSVC()
    expected = {100: 200, 5_000: 200, 6_000: 167, 19_999: 51, 20_000: 50, 10**7: 50}
    for n_rows, cap in expected.items():
        assert model._epoch_cap(n_rows) == cap == model.epochs_
        assert cap == min(200, max(50, int(np.ceil(1e6 / n_rows))))
    assert AdditiveSVC(epochs=7)._epoch_cap(100) == 7


def test_defaults_meet_the_rule_on_a_small_dataset_where_50_epochs_did_not():
    # breast_cancer, 70 % of its rows: the rule needs more than 50 epochs on this split
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=1,
                                                        stratify=y)
    model = AdditiveSVC(progress=False)
    assert fit_quietly(model, X_train, y_train) == []
    assert model.epochs_ == 200 and 50 < model.n_iter_ < 200
    assert np.mean(model.predict(X_test) != y_test) < 0.06
    capped = AdditiveSVC(epochs=50, progress=False)
    assert len(fit_quietly(capped, X_train, y_train)) == 1 and capped.n_iter_ == 50


@pytest.mark.parametrize("solver", ["dcd", "pegasos"])
def test_tol_none_runs_every_epoch_silently(solver):
    X, y = problem(600)
    model = AdditiveSVC(solver=solver, epochs=3, tol=None, progress=False)
    assert fit_quietly(model, X, y) == []
    assert model.n_iter_ == 3
    # dcd records the duality gap of every epoch but the last; PEGASOS monitors nothing
    assert len(model.monitor_loss_) == (2 if solver == "dcd" else 0)


def test_patience_rule():
    rule = Patience(0.1, 2)
    # 10 -> 8 improves by 20%, 7.5 and 7.3 by less than 10% of the best
    assert [rule.update(v) for v in [10.0, 8.0, 7.5, 7.3]] == [False, False, False, True]
    rule = Patience(0.1, 2)
    assert [rule.update(v) for v in [10.0, 9.5, 8.0, 7.9, 9.0]] == [False] * 4 + [True]
    # below the floor, improvements are measured against the floor
    rule = Patience(0.1, 2, floor=1.0)
    assert [rule.update(v) for v in [0.5, 0.45, 0.41]] == [False, False, True]
    rule = Patience(0.1, 2)
    assert [rule.update(v) for v in [0.5, 0.44, 0.39]] == [False, False, False]


def _pass_data(n: int = 900):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=n)
    weight = rng.uniform(0.5, 2.0, size=n)
    return X, y, weight


@pytest.mark.parametrize("held_out", [True, False])
def test_monitored_loss_against_numpy(held_out):
    X, y, weight = _pass_data()
    ds = open_dataset(X, target=y, weight=weight, chunk_rows=200)
    emb = embedding_params(None, 4)
    pairs = ModelPairs.of(3, "ovr")
    holdout = Holdout.fraction(0.3, 11) if held_out else None
    rng = np.random.default_rng(4)
    model = rng.normal(size=(3, 5))
    initial = PegasosState(np.zeros((3, 5)), np.zeros((3, 5)), 0)
    lam = 0.05
    epoch = PegasosEpochPass(TrainingRows(emb, None, holdout), pairs, lam, 0.7, 10**9,
                             initial, model)
    state = LocalEngine(progress=False).run(epoch, ds, shuffle=True, seed=1)
    # numpy: hinge losses of the frozen model on the held-out rows (or all training rows)
    codes = np.searchsorted(ds.classes, y)
    rows = (holdout.mask(np.arange(len(y))) if held_out else np.ones(len(y), dtype=bool))
    assert 0 < rows.sum() < len(y) or not held_out
    scores = X[rows].astype(np.float64) @ model[:, :4].T + 0.7 * model[:, 4]
    sign = np.where(codes[rows, None] == np.arange(3)[None, :], 1.0, -1.0)
    loss = (np.maximum(0.0, 1.0 - sign * scores) * weight[rows, None]).sum(axis=0)
    np.testing.assert_allclose(state.monitor_loss, loss, rtol=1e-5)
    np.testing.assert_allclose(state.monitor_weight, np.full(3, weight[rows].sum()), rtol=1e-6)
    expected = np.sum(loss / weight[rows].sum())
    if not held_out:
        expected += 0.5 * lam * np.sum(model**2)
    assert monitored_loss(state, model, emb, lam, held_out) == pytest.approx(expected, rel=1e-5)
    # its sampling error: per model, the weighted variance of the losses over Kish's count
    w = weight[rows].astype(np.float64)
    hinge = np.maximum(0.0, 1.0 - sign * scores)
    mean = (hinge * w[:, None]).sum(axis=0) / w.sum()
    var = (w[:, None] * (hinge - mean) ** 2).sum(axis=0) / w.sum()
    error = np.sqrt(np.sum(var * (w**2).sum() / w.sum() ** 2))
    assert monitored_error(state) == pytest.approx(error, rel=1e-4)
    # the models the pass trains are the same as without monitoring
    plain = PegasosEpochPass(TrainingRows(emb, None, holdout), pairs, lam, 0.7, 10**9, initial)
    reference = LocalEngine(progress=False).run(plain, ds, shuffle=True, seed=1)
    np.testing.assert_array_equal(state.W, reference.W)
    assert reference.monitor_loss is None


def test_a_fit_whose_held_out_loss_rose_returns_the_best_model_it_judged():
    # the held-out rows' labels are the other way round from the training rows': every
    # epoch's model is worse on them than the one before, by far more than their noise,
    # and the rule, which stops after two such epochs, returns the first model it judged
    n = 2000
    rng = np.random.default_rng(3)
    X = rng.uniform(-1.0, 1.0, (n, 2)).astype(np.float32)
    held = Holdout.fraction(0.1, 0 ^ HOLDOUT_SALT).mask(np.arange(n))
    y = np.where((X[:, 0] > 0) != held, 1, 0)
    model = AdditiveSVC(interactions=0, n_bases=8, chunk_rows=500, random_state=0,
                        progress=False).fit(X, y)
    history = np.asarray(model.monitor_loss_)
    assert model.n_iter_ == 4 and np.all(np.diff(history) > 0.05)
    # numpy: the returned model's mean hinge loss on the held-out rows
    sign = np.where(y[held] == 1, 1.0, -1.0)
    loss = np.mean(np.maximum(0.0, 1.0 - sign * model.svm_scores(X[held])[:, 0]))
    assert loss == pytest.approx(history[0], rel=1e-5)


def test_monitored_losses_merge_by_adding():
    X, y, weight = _pass_data(400)
    ds = open_dataset(X, target=y, weight=weight, chunk_rows=100)
    emb = embedding_params(None, 4)
    model = np.random.default_rng(5).normal(size=(3, 5))
    epoch = PegasosEpochPass(TrainingRows(emb, None, Holdout.fraction(0.5, 2)),
                             ModelPairs.of(3, "ovr"), 0.1, 1.0, 10**9,
                             PegasosState(np.zeros((3, 5)), np.zeros((3, 5)), 0), model)
    chunks = list(ds.chunks())
    a, b = epoch.start(), epoch.start()
    for chunk in chunks[:2]:
        a = epoch.step(a, chunk)
    for chunk in chunks[2:]:
        b = epoch.step(b, chunk)
    whole = epoch.start()
    for chunk in chunks:
        whole = epoch.step(whole, chunk)
    merged = epoch.merge(a, b)
    np.testing.assert_allclose(merged.monitor_loss, whole.monitor_loss, rtol=1e-12)
    np.testing.assert_allclose(merged.monitor_weight, whole.monitor_weight, rtol=1e-12)
    np.testing.assert_allclose(merged.monitor_loss_sq, whole.monitor_loss_sq, rtol=1e-12)
    np.testing.assert_allclose(merged.monitor_weight_sq, whole.monitor_weight_sq, rtol=1e-12)


def dcd_objectives(X: np.ndarray, codes: np.ndarray, c: np.ndarray, loss: int,
                   bias_scale: float, W: np.ndarray, alpha: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy, one-vs-rest with the identity embedding: ``w(alpha)``, the primal objective of
    the models ``W`` and the dual objective of ``alpha`` (with its own ``w(alpha)``)."""
    Z = np.c_[X.astype(np.float64), np.full(len(X), bias_scale)]
    sign = np.where(codes[:, None] == np.arange(W.shape[0])[None, :], 1.0, -1.0)
    a = alpha.astype(np.float64)
    w_alpha = (a * sign).T @ Z
    margin = np.maximum(0.0, 1.0 - sign * (Z @ W.T))
    primal = 0.5 * (W**2).sum(axis=1) + c @ (margin if loss == HINGE else margin**2)
    quad = 0.0 if loss == HINGE else (a**2 / (4.0 * c[:, None])).sum(axis=0)
    dual = a.sum(axis=0) - quad - 0.5 * (w_alpha**2).sum(axis=1)
    return w_alpha, primal, dual


@pytest.mark.parametrize("loss", [HINGE, SQUARED_HINGE])
def test_dcd_lanes_keep_the_model_w_of_the_dual_variables_and_a_true_gap(loss):
    # two lanes of 500 and 700 rows, as DaskEngine splits an epoch: every merged model is
    # w(alpha) of the stored dual variables, the gap the stopping rule reads is the primal
    # of the model minus the dual of those variables (numpy), and the dual never falls
    X, y, weight = _pass_data(1200)
    ds = open_dataset(X, target=y, weight=weight, chunk_rows=100)
    chunks = list(ds.chunks())
    codes = np.concatenate([chunk.y for chunk in chunks])
    c = 0.5 * weight
    emb = embedding_params(None, 4)
    rows = TrainingRows(emb, None, None)
    W = np.zeros((3, 5))
    previous = previous_alpha = None
    duals = []
    with ExampleState(len(X), 3) as alpha:
        for epoch in range(5):
            pass_ = DcdEpochPass(rows, ModelPairs.of(3, "ovr"), 0.5, loss, 0.7, alpha, epoch,
                                 W, None if previous is None else W)
            state = run_lanes(pass_, [chunks[:5], chunks[5:]])
            stored = alpha.to_numpy()
            w_alpha, _, dual = dcd_objectives(X, codes, c, loss, 0.7, W, stored)
            # up to the rounding of the written variables to float32 (half an ulp each)
            Z = np.abs(np.c_[X, np.full(len(X), 0.7)]).astype(np.float64)
            assert np.all(np.abs(state.W - w_alpha)
                          <= 2.0**-23 * (np.abs(stored).T @ Z) + 1e-12)
            np.testing.assert_allclose(state.alpha_sum, stored.sum(axis=0, dtype=np.float64),
                                       rtol=1e-12)
            if previous is not None:
                _, primal, dual_before = dcd_objectives(X, codes, c, loss, 0.7, W,
                                                        previous_alpha)
                true_gap = np.max((primal - dual_before) / primal)
                assert true_gap > 0.0
                assert duality_gap(state, previous, W, emb, None, 0.7) == pytest.approx(
                    true_gap, rel=1e-4)
            duals.append(dual)
            W, previous, previous_alpha = state.W, state, stored
    assert np.all(np.diff(duals, axis=0) >= -1e-9 * np.abs(duals[-1]))
    assert np.all(duals[-1] > duals[0])


def test_dcd_pass_in_one_lane_is_the_kernel_over_the_chunks():
    # the whole pass (LocalEngine's), and a lane of share 1, are the kernel's sweeps over
    # the chunks in order, bit for bit
    X, y, weight = _pass_data(600)
    ds = open_dataset(X, target=y, weight=weight, chunk_rows=100)
    chunks = list(ds.chunks())
    emb = embedding_params(None, 4)
    pairs = ModelPairs.of(3, "ovr")
    initial = np.random.default_rng(6).normal(size=(3, 5))
    W, alpha = initial.copy(), np.zeros((len(X), 3), dtype=np.float32)
    for chunk in chunks:
        rows = slice(chunk.start, chunk.start + chunk.n_rows)
        block = np.ascontiguousarray(alpha[rows])
        dcd_ovr_chunk(chunk.X, chunk.y.astype(np.int32), *pairs,
                      0.5 * chunk.weight.astype(np.float32).astype(np.float64), block, W,
                      SQUARED_HINGE, 0.7, DCD_INNER_SWEEPS,
                      (3 * 0x9E3779B1 + chunk.start) % 2**63, *emb)
        alpha[rows] = block
    for lane in (False, True):
        with ExampleState(len(X), 3) as state_alpha:
            pass_ = DcdEpochPass(TrainingRows(emb, None, None), pairs, 0.5, SQUARED_HINGE,
                                 0.7, state_alpha, 3, initial)
            state = run_chunks(pass_.lane(1.0) if lane else pass_, chunks)
            np.testing.assert_array_equal(state.W, W)
            np.testing.assert_array_equal(state_alpha.to_numpy(), alpha)


def test_monitored_state_round_trips_through_the_checkpoint_codec():
    import json

    from streamlearn.engine.state_codec import decode, encode

    state = PegasosState(np.ones((2, 3)), np.zeros((2, 3)), 7, 5, np.array([1.5, 2.0]),
                         np.array([3.0, 4.0]))
    arrays: dict = {}
    back = decode(json.loads(json.dumps(encode(state, arrays))), arrays)
    np.testing.assert_array_equal(back.monitor_loss, state.monitor_loss)
    np.testing.assert_array_equal(back.monitor_weight, state.monitor_weight)
    assert back.t == 7 and back.rows == 5


def test_a_checkpointed_fit_replays_to_the_same_stop(tmp_path):
    X, y = problem(1200)
    kw = dict(epochs=40, chunk_rows=300, random_state=3, progress=False)
    plain = AdditiveSVC(**kw).fit(X, y)
    first = AdditiveSVC(**kw).fit(X, y, checkpoint=tmp_path / "ck")
    again = AdditiveSVC(**kw).fit(X, y, checkpoint=tmp_path / "ck")
    assert plain.n_iter_ < 40
    for model in (first, again):
        assert model.n_iter_ == plain.n_iter_
        assert model.monitor_loss_ == plain.monitor_loss_
        np.testing.assert_array_equal(model.coef_d_, plain.coef_d_)


def test_epoch_window_averages_at_least_the_last_half_of_the_epochs():
    from streamlearn.solvers.additive.driver import EpochWindow

    rng = np.random.default_rng(7)
    window = EpochWindow((2, 3))
    means, counts = [], []
    for e in range(1, 20):
        mean, count = rng.normal(size=(2, 3)), int(rng.integers(1, 50))
        means.append(mean)
        counts.append(count)
        got = window.add(mean, count)
        p = 1 << (e.bit_length() - 1)  # the largest power of two <= e
        first = max(1, p // 2)
        assert e - first + 1 >= e / 2  # at least the last half
        span = slice(first - 1, e)
        expected = (np.tensordot(counts[span], np.array(means[span]), axes=1)
                    / sum(counts[span]))
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_step_offset_is_the_mean_squared_embedded_norm_over_lam():
    from streamlearn.features import BSplineMap
    from streamlearn.solvers.additive.driver import step_offset

    rng = np.random.default_rng(8)
    sample = rng.uniform(-1, 1, size=(700, 3)).astype(np.float32)
    fmap = BSplineMap(3, 12, 1).fit(-np.ones(3), np.ones(3))
    Z = fmap.transform(sample).astype(np.float64)
    r2 = np.mean(np.sum(Z * Z, axis=1)) + 0.5**2
    assert step_offset(fmap, sample, 0.5, 1e-3) == pytest.approx(r2 / 1e-3, abs=1)
    raw = np.mean(np.sum(sample.astype(np.float64) ** 2, axis=1)) + 1.0
    assert step_offset(None, sample, 1.0, 0.01) == pytest.approx(raw / 0.01, abs=1)
    assert step_offset(fmap, None, 1.0, 0.01) == 0



def test_a_fit_stopped_by_the_rule_is_calibrated_without_a_pass_of_its_own():
    # the last epoch binned the returned model's held-out scores: its sigmoids are those a
    # calibration pass over that model computes
    from streamlearn.solvers.additive import CalibrationPass
    from streamlearn.solvers.additive.driver import HOLDOUT_SALT

    X, y = problem(3000, seed=2)
    seen: list[str] = []

    class Recording(LocalEngine):
        def run(self, pass_, data, **options):
            seen.append(type(pass_).__name__)
            return super().run(pass_, data, **options)

    model = AdditiveSVC(epochs=200, chunk_rows=500, random_state=4, interactions=0,
                        n_bases=20)
    model.fit(X, y, engine=Recording(progress=False))
    assert model.n_iter_ < 200 and model.calibrated_
    assert "CalibrationPass" not in seen
    assert model.n_passes_ == pytest.approx(1 + model.n_iter_)  # describe and the epochs
    ds = open_dataset(X, target=y, chunk_rows=500)
    histogram = LocalEngine(progress=False).run(
        CalibrationPass(model.coef_d_, model._embedding(), model._pairs(), model.bias_scale,
                        Holdout.fraction(model.calibration_fraction, 4 ^ HOLDOUT_SALT)), ds)
    np.testing.assert_allclose(np.c_[model.platt_a_, model.platt_b_],
                               np.c_[histogram.fit()], rtol=1e-6, atol=1e-9)
    # at the cap, the returned model is the last epoch's: a calibration pass of its own
    seen.clear()
    capped = AdditiveSVC(epochs=2, tol=1e-9, chunk_rows=500, random_state=4, interactions=0,
                         n_bases=20)
    with pytest.warns(ConvergenceWarning):
        capped.fit(X, y, engine=Recording(progress=False))
    assert seen[-1] == "CalibrationPass" and capped.n_passes_ == pytest.approx(4)


def test_dcd_on_rows_with_a_large_common_part_converges_centred():
    # 0/1 features that are mostly 0: every embedded row puts weight on the same "0" basis
    # of most features, a near-constant block of the dual's kernel matrix. Centred on the
    # rows' mean, dual coordinate descent meets its 1% duality gap in a few epochs (the
    # uncentred solver needed 19 at C = 0.1 and stopped at its cap of 50 at C = 1, gap
    # 0.095), and the model is the optimum of the centred problem, which liblinear finds
    from sklearn.svm import LinearSVC

    from streamlearn.solvers.dcd import primal_objective
    from streamlearn.solvers.embedding import weights_from_w_d

    rng = np.random.default_rng(0)
    X = (rng.random((3000, 40)) < 0.1).astype(np.float32)
    w = rng.normal(size=40)
    y = (X @ w + 0.3 * rng.normal(size=3000) > 0.02 * w.sum()).astype(int)
    for C, most in ((0.1, 12), (1.0, 45)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            model = AdditiveSVC(solver="dcd", C=C, calibrate=False, interactions=0,
                                random_state=0, progress=False).fit(X, y)
        assert model.n_iter_ <= most and model.monitor_loss_[-1] <= 0.01
        Z = model.feature_map_.transform(X).astype(np.float64)
        emb = embedding_params(model.feature_map_)
        mu = weights_from_w_d(model.dcd_centre_, emb.ipar)[:-1]
        np.testing.assert_allclose(mu, Z.mean(axis=0), atol=1e-6)
        labels = np.where(y == 1, 1.0, -1.0)
        svc = LinearSVC(loss="hinge", C=C, tol=1e-8, max_iter=10**6).fit(Z - mu, labels)
        best = primal_objective(Z - mu, labels, svc.coef_[0], svc.intercept_[0], C, "hinge")
        w = model.embedding_coef_[0]
        ours = primal_objective(Z - mu, labels, w, model.coef_d_[0, -1] + w @ mu, C, "hinge")
        assert best <= ours * (1 + 1e-6) and ours - best <= 0.01 * ours


def four_classes(n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    # class 0 far out on feature 0, the others overlapping along feature 1
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = rng.integers(0, 4, size=n)
    X[y == 0, 0] += 6.0
    X[:, 1] += 0.6 * y
    return X, y


def test_an_under_iterated_multiclass_fit_warns_once_naming_the_classes_short_of_the_rule():
    # dcd trains the one-vs-rest models in the same epochs, each as it would alone: the
    # reference is each class against the rest fitted as a two-class problem by the same
    # rules, which warns exactly when that model does not meet the rule in 4 epochs
    import re

    X, y = four_classes()
    settings = dict(solver="dcd", C=0.1, epochs=4, calibrate=False, interactions=0,
                    n_bases=8, random_state=0, progress=False)
    model = AdditiveSVC(**settings)
    caught = fit_quietly(model, X, y)
    assert len(caught) == 1
    alone = []
    for c in range(4):
        binary = AdditiveSVC(**settings)
        alone.append(fit_quietly(binary, X, (y == c).astype(int)) == [])
        if not alone[-1]:  # the same training, to its cap: the same model
            assert binary.n_iter_ == 4
            np.testing.assert_allclose(binary.coef_d_[0], model.coef_d_[c], atol=1e-12)
    assert 0 < sum(alone) < 4, "the setting leaves some classes short of the rule"
    assert model.models_converged_.tolist() == alone
    message = str(caught[0].message)
    named = re.search(r"(\d+) of the 4 one-vs-rest models \(classes ([\d, ]+)\)", message)
    assert named is not None, message
    short = [c for c in range(4) if not alone[c]]
    assert int(named.group(1)) == len(short)
    assert [int(c) for c in named.group(2).split(", ")] == short
    assert "raise epochs or tol" in message and model.n_trainings_capped_ == 1


def three_classes(n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    X = rng.uniform(-1.0, 1.0, (n, 3)).astype(np.float32)
    f = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    return X, np.digitize(f, [0.0, 0.8])


class EpochCounter(LocalEngine):
    """Records the description of every training epoch it runs ("dcd epoch 3/50")."""

    def __init__(self) -> None:
        super().__init__(progress=False)
        self.epochs: list[str] = []

    def run(self, pass_, data, **options):
        if isinstance(pass_, PegasosEpochPass | DcdEpochPass):
            self.epochs.append(options["description"])
        return super().run(pass_, data, **options)

    def trainings(self, cap: int) -> tuple[int, int]:
        """Trainings started, and those that ran to epoch ``cap``."""
        started = sum(d.endswith(f" 1/{cap}") for d in self.epochs)
        return started, sum(d.endswith(f" {cap}/{cap}") for d in self.epochs)


def test_a_fit_that_trains_many_models_warns_once_for_all_of_them():
    # n_bases, pairs, value terms and the linear model "auto": the fit trains several
    # models to choose one, each stopped at epochs=1 (PEGASOS's rule needs more): one
    # warning for them all, which names every class of the model kept and counts the rest
    X, y = three_classes()
    engine = EpochCounter()
    model = AdditiveSVC(multiclass="ovr", epochs=1, chunk_rows=500, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y, engine=engine)
    ours = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    started, capped = engine.trainings(1)
    assert started > 1 and len(ours) == 1
    assert model.n_trainings_ == model.n_trainings_capped_ == started == capped
    assert model.models_converged_.tolist() == [False] * 3
    message = str(ours[0].message)
    assert message.startswith("PEGASOS stopped after epochs=1")
    assert "all 3 one-vs-rest models (classes 0, 1, 2)" in message
    assert f"All {started - 1} other models" in message


def test_a_fit_that_trains_one_other_model_names_it_in_the_singular():
    # multiclass="auto" on 3 classes with the bases, pairs and value terms given trains
    # one-vs-rest, then the one-vs-one candidate: two trainings, one of them the "other"
    X, y = three_classes()
    engine = EpochCounter()
    model = AdditiveSVC(epochs=1, n_bases=8, interactions=0, value_terms=False,
                        chunk_rows=500, random_state=0)
    with pytest.warns(ConvergenceWarning) as caught:
        model.fit(X, y, engine=engine)
    assert engine.trainings(1) == (2, 2) and model.n_trainings_capped_ == 2
    message = str(caught[0].message)
    assert "The other model this fit trained to choose the one kept" in message
    assert message.endswith("stopped at its cap too")
    assert "All 1 other models" not in message


@pytest.mark.parametrize("solver", ["dcd", "pegasos"])
def test_a_converged_multiclass_fit_that_trains_many_models_warns_nothing(solver):
    X, y = three_classes()
    engine = EpochCounter()
    model = AdditiveSVC(solver=solver, epochs=300, chunk_rows=500, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y, engine=engine)
    assert [w for w in caught if issubclass(w.category, ConvergenceWarning)] == []
    started, capped = engine.trainings(300)
    assert started == model.n_trainings_ > 1 and capped == model.n_trainings_capped_ == 0
    assert model.models_converged_.tolist() == [True] * 3 and 1 <= model.n_iter_ < 300


def test_a_fit_without_a_rule_judges_no_model_and_warns_nothing():
    X, y = three_classes(600)
    model = AdditiveSVC(epochs=2, tol=None, calibrate=False, interactions=0, n_bases=8,
                        progress=False)
    assert fit_quietly(model, X, y) == []
    assert model.models_converged_.tolist() == [False] * 3
    assert model.n_trainings_ == 1 and model.n_trainings_capped_ == 0
