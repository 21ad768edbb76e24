"""``partial_fit`` of the super-sparse estimators against ``fit`` and scikit-learn references."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

from streamlearn.errors import DataError
from streamlearn.io.model_file import load_model, save_model
from streamlearn.models.supersparse import SuperSparseClassifier, SuperSparseRegressor
from streamlearn.solvers.supersparse.driver import AUTO_GAMMA_FACTORS, ONLINE_PATH_LENGTH


def _regression(n: int = 1200, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = 50.0 * np.sin(2.0 * X[:, 0]) + 30.0 * X[:, 1] ** 2 + 5.0 * rng.normal(size=n)
    return X, y


def _stream(model, X, y, epochs: int, rows: int, **kwargs):
    for _ in range(epochs):
        for a in range(0, X.shape[0], rows):
            model.partial_fit(X[a:a + rows], y[a:a + rows], **kwargs)
    return model


def test_regressor_partial_fit_over_chunks_reaches_fit_and_kernel_ridge_scale():
    from sklearn.kernel_ridge import KernelRidge

    X, y = _regression()
    # partial_fit's model has no linear part and no relevance weights (weight_features
    # is fit's): fit's is compared without either
    fitted = SuperSparseRegressor(n_prototypes=10, linear_part=False,
                                  weight_features=False).fit(X, y)
    start = SuperSparseRegressor(n_prototypes=10).partial_fit(X[:100], y[:100])
    initial = SuperSparseRegressor(n_prototypes=10, init=start.prototypes_, gamma=start.gamma_,
                                   max_iter=0, linear_part=False,
                                   weight_features=False).fit(X, y)
    online = _stream(SuperSparseRegressor(n_prototypes=10), X, y, epochs=6, rows=100)
    # the scale of what a kernel machine on every row reaches
    reachable = KernelRidge(kernel="rbf", gamma=fitted.gamma_, alpha=1e-3).fit(X, y).score(X, y)
    assert online.score(X, y) >= fitted.score(X, y) - 0.05
    assert online.score(X, y) >= initial.score(X, y) + 0.1  # the prototypes moved usefully
    assert online.score(X, y) >= 0.75 * reachable
    assert online.n_iter_ == 6 * 12 and online.objective_path_.shape == (72,)


def test_first_call_initialises_from_its_rows():
    X, y = _regression(n=300, seed=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=300)
    w[:10] = 0.0
    model = SuperSparseRegressor(n_prototypes=5, step=1e-12).partial_fit(
        X[:150], y[:150], sample_weight=w[:150])
    # prototypes are distinct rows of the first call with positive weight (a tiny step
    # leaves them in place)
    first = X[10:150].astype(np.float64)
    for c in model.prototypes_:
        assert np.min(np.abs(first - c).max(axis=1)) < 1e-6
    # the RBF works on the rows standardised by the call's weighted moments
    X64 = X[:150].astype(np.float64)
    variances = np.cov(X64.T, aweights=w[:150], bias=True).diagonal()
    mean = w[:150] @ X64 / w[:150].sum()
    np.testing.assert_allclose(model.shift_, mean, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(model.scale_, np.sqrt(variances), rtol=1e-6)
    # gamma="auto": half over the median squared distance to the nearest other prototype
    Z = (model.prototypes_ - model.shift_) / model.scale_
    nearest = np.sort(((Z[:, None] - Z[None]) ** 2).sum(-1), axis=1)[:, 1]
    assert np.isclose(model.gamma_, 0.5 / np.median(nearest), rtol=1e-6)
    # the coefficients are the weighted ridge solution on the call's rows (numpy reference)
    Xz = ((X64 - mean) / np.sqrt(variances)).astype(np.float32).astype(np.float64)
    C = (model.prototypes_ - mean) / np.sqrt(variances)
    Z = np.hstack([np.exp(-model.gamma_ * ((Xz[:, None, :] - C[None]) ** 2).sum(-1)),
                   np.ones((150, 1))])
    v = w[:150] / w[:150].sum()
    A = Z.T @ (v[:, None] * Z)
    A[np.arange(5), np.arange(5)] += model.lam_
    expected = np.linalg.solve(A, Z.T @ (v * y[:150]))
    np.testing.assert_allclose(np.append(model.dual_coef_, model.intercept_), expected, rtol=1e-4,
                               atol=1e-6 * np.abs(expected).max())
    # a second call keeps gamma_ and moves on from the current prototypes
    again = SuperSparseRegressor(n_prototypes=5, step=1e-12).partial_fit(
        X[:150], y[:150], sample_weight=w[:150]).partial_fit(X[150:], y[150:])
    assert again.gamma_ == model.gamma_
    np.testing.assert_allclose(again.prototypes_, model.prototypes_, atol=1e-6)


@pytest.mark.parametrize("n_rows", [1000, 300])
def test_first_call_chooses_the_auto_width_as_fit_does(n_rows):
    """gamma="auto" with lam="auto": the first call widens the RBF by fit's rule on its rows
    (1,000 rows hold 200 out, as fit does; 300 too few, the GCV score of every row), so
    its gamma_ is fit's on the same rows from the same initial prototypes (a pass over a
    Dataset, no prototype step), a wider one than the prototypes' own for a linear
    target (before: always their own width, test R2 0.88 after 5 epochs of 1,000-row
    calls where fit reached 0.999)."""
    X, y = make_regression(n_rows, 5, noise=5, random_state=0)
    X = X.astype(np.float32)
    # fit's geometry as partial_fit's: no map of the tails, no relevance weights
    settings = dict(n_prototypes=50, init=X[:50], spread_tails=False, weight_features=False)
    online = SuperSparseRegressor(**settings).partial_fit(X, y)
    batch = SuperSparseRegressor(max_iter=0, **settings).fit(X, y)
    own = SuperSparseRegressor(lam=1e-6, **settings).partial_fit(X, y).gamma_
    assert online.gamma_ == pytest.approx(batch.gamma_, rel=1e-6)
    assert any(online.gamma_ == pytest.approx(own * factor, rel=1e-9)
               for factor in AUTO_GAMMA_FACTORS[1:])


def test_repeated_calls_on_a_linear_target_approach_ridge_regression():
    """Calls of 1,000 rows on a linear target reach ridge regression's test error (before:
    R2 0.877 to 0.891 over 5 epochs, 100 times ridge's squared error; with the chosen
    width but the step of its own, 0.9955 falling to 0.991 as the prototypes overshot)."""
    X, y = make_regression(4000, 5, noise=5, random_state=0)
    X = X.astype(np.float32)
    model = _stream(SuperSparseRegressor(random_state=0), X[:3000], y[:3000], epochs=3,
                    rows=1000)
    ridge = Ridge().fit(X[:3000], y[:3000])
    mse = np.mean((model.predict(X[3000:]) - y[3000:]) ** 2)
    assert mse < 2.0 * np.mean((ridge.predict(X[3000:]) - y[3000:]) ** 2)


def test_many_small_calls_keep_the_objective_path_and_the_model_file_bounded(tmp_path):
    """objective_path_ keeps the objectives after the last ONLINE_PATH_LENGTH calls, so a
    stream of small calls does not grow the model (before: one entry per call, a pickle
    of 1.7 KB at first and 33.6 KB after thousands of calls)."""
    X, y = _regression(n=2500, seed=7)
    model = SuperSparseRegressor(n_prototypes=5)
    objectives, sizes = [], {}
    for call in range(250):
        model.partial_fit(X[10 * call:10 * call + 10], y[10 * call:10 * call + 10])
        objectives.append(model.objective_)
        if call + 1 in (ONLINE_PATH_LENGTH + 20, 250):
            sizes[call + 1] = os.path.getsize(save_model(model, tmp_path / f"m{call}.sl"))
    assert model.n_iter_ == 250
    np.testing.assert_array_equal(model.objective_path_, objectives[-ONLINE_PATH_LENGTH:])
    assert abs(sizes[250] - sizes[ONLINE_PATH_LENGTH + 20]) <= 16  # an integer's digits
    loaded = load_model(tmp_path / "m249.sl")
    np.testing.assert_array_equal(loaded.objective_path_, model.objective_path_)
    loaded.partial_fit(X[:10], y[:10])
    assert loaded.n_iter_ == 251 and loaded.objective_path_.shape == (ONLINE_PATH_LENGTH,)


def test_later_calls_solve_the_rows_of_every_call():
    """With the prototypes held (a tiny step), the coefficients after three calls are the
    ridge solution on all their rows, not on the last call's (numpy reference)."""
    X, y = _regression(n=600, seed=5)
    model = SuperSparseRegressor(n_prototypes=6, step=1e-12, lam=1e-3)
    for a, b in ((0, 300), (300, 580), (580, 600)):
        model.partial_fit(X[a:b], y[a:b])
    X64 = X.astype(np.float64)
    Xz = ((X64 - model.shift_) / model.scale_).astype(np.float32).astype(np.float64)
    C = (model.prototypes_ - model.shift_) / model.scale_
    Z = np.hstack([np.exp(-model.gamma_ * ((Xz[:, None, :] - C[None]) ** 2).sum(-1)),
                   np.ones((600, 1))])
    A = Z.T @ Z / 600
    A[np.arange(6), np.arange(6)] += 1e-3
    expected = np.linalg.solve(A, Z.T @ y / 600)
    np.testing.assert_allclose(np.append(model.dual_coef_, model.intercept_), expected,
                               rtol=1e-4, atol=1e-6 * np.abs(expected).max())
    assert model.beta_sums_[1] == 600 and model.beta_sums_[2] == 600


def test_a_few_rows_of_one_class_move_a_trained_model_by_their_share():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(6000, 5)).astype(np.float32)
    y = (np.sin(2 * X[:, 0]) + X[:, 1] > 0).astype(int)
    model = SuperSparseClassifier(random_state=0).fit(X[:4000], y[:4000])
    before, scale = model.score(X[4000:], y[4000:]), model.proba_scale_
    ones = np.flatnonzero(y[:4000] == 1)[:10]
    model.partial_fit(X[ones], y[ones])
    assert model.score(X[4000:], y[4000:]) >= before - 0.05  # was 0.95 -> 0.63
    assert abs(np.log(model.proba_scale_ / scale)) < 0.05  # 10 rows' share of 4,010
    streamed = SuperSparseClassifier(random_state=0)
    _stream(streamed, X[:4000], y[:4000], epochs=1, rows=100, classes=[0, 1])
    middle = streamed.score(X[4000:], y[4000:])
    streamed.partial_fit(X[ones], y[ones])
    assert streamed.score(X[4000:], y[4000:]) >= middle - 0.02


def test_partial_fit_after_fit_continues_from_the_fitted_model():
    X, y = _regression(n=300, seed=3)
    model = SuperSparseRegressor(n_prototypes=4, max_iter=0, step=1e-12).fit(X, y)
    before = model.prototypes_.copy()
    model.partial_fit(X, y)
    np.testing.assert_allclose(model.prototypes_, before, atol=1e-6)


def test_classifier_partial_fit_approaches_an_rbf_svc():
    from sklearn.svm import SVC

    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(1000, 2)).astype(np.float32)
    y = np.where((X ** 2).sum(1) < 1.5, "in", "out")
    model = SuperSparseClassifier(n_prototypes=8)
    # the first chunk holds one class only: classes names both
    order = np.argsort(y == "out", kind="stable")[:50]
    model.partial_fit(X[order], y[order], classes=["in", "out"])
    _stream(model, X, y, epochs=5, rows=100)
    reference = SVC(gamma=model.gamma_, C=10.0).fit(X, y).score(X, y)
    assert list(model.classes_) == ["in", "out"]
    assert model.score(X, y) >= reference - 0.05


def test_partial_fit_refusals_name_the_problem():
    X, y = _regression(n=60, seed=5)
    labels = np.where(y > np.median(y), 1, 0)
    with pytest.raises(ValueError, match="at least two"):
        SuperSparseClassifier(n_prototypes=2).partial_fit(X, np.zeros(60))
    with pytest.raises(ValueError, match="classes"):
        SuperSparseClassifier(n_prototypes=2).partial_fit(X, labels).partial_fit(
            X, labels, classes=[0, 2])
    with pytest.raises(DataError, match="n_samples=1"):
        SuperSparseRegressor(n_prototypes=1).partial_fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="one n_prototypes"):
        SuperSparseRegressor(n_prototypes=[2, 4]).partial_fit(X, y)
    with pytest.raises(DataError, match="at least 8 rows"):
        SuperSparseRegressor(n_prototypes=8).partial_fit(X[:5], y[:5])
    with pytest.raises(ValueError, match="features"):
        SuperSparseRegressor(n_prototypes=2).partial_fit(X, y).partial_fit(X[:, :2], y)
    teacher = SuperSparseClassifier(n_prototypes=3, max_iter=0).fit(X, labels)
    reduced = SuperSparseClassifier.reduce(teacher, 2, X, max_iter=0)
    with pytest.raises(ValueError, match="reduce"):
        reduced.partial_fit(X, labels)


def test_auto_prototypes_of_a_small_first_call_keep_a_class_each_and_warn():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(7, 2)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2, 0])
    model = SuperSparseClassifier()
    with pytest.warns(UserWarning, match=r"gives 3 prototype\(s\) for the 7 rows.*up to 50"):
        model.partial_fit(X, y, classes=[0, 1, 2])
    assert model.prototypes_.shape[0] == 3  # one per class, not ceil(7 / 10) = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        SuperSparseClassifier(n_prototypes=3).partial_fit(X, y, classes=[0, 1, 2])


def _r2(y, p) -> float:
    return 1.0 - float(np.mean((y - p) ** 2)) / float(np.var(y))


@pytest.mark.parametrize("first", ["constant", "one non-zero"])
def test_a_first_call_of_constant_targets_does_not_freeze_the_model(first):
    # a zero-inflated stream: the first block's sales are all 0 (or all but one)
    X, y = _regression(1800, seed=3)
    Xte, yte = X[1200:], y[1200:]
    t = np.zeros(200) if first == "constant" else np.r_[np.zeros(199), 1.0]
    blocks = [(X[a:a + 200], y[a:a + 200]) for a in range(200, 1200, 200)] * 3

    def stream(first_y):
        model = SuperSparseRegressor(n_prototypes=20, random_state=0)
        model.partial_fit(X[:200], first_y)
        for Xb, yb in blocks:
            model.partial_fit(Xb, yb)
        return model

    ordinary = _r2(yte, stream(y[:200]).predict(Xte))
    model = stream(t)
    assert ordinary > 0.6
    # the first call's rows taught the model their targets, the later ones the rest:
    # close to a stream whose first block was representative (was R2 <= 0)
    assert _r2(yte, model.predict(Xte)) > ordinary - 0.1
    # the step is sized by the variance of every target seen, merged call by call
    seen = np.r_[t, np.concatenate([yb for _, yb in blocks])]
    np.testing.assert_allclose(model.partial_fit_targets_[:, 0],
                               [seen.size, seen.mean(), seen.size * seen.var()], rtol=1e-9)
    np.testing.assert_allclose(model.partial_fit_step_,
                               model.step / (model.partial_fit_gamma_ * seen.var()), rtol=1e-9)


def test_constant_first_targets_take_no_step_and_no_penalty_or_width_from_them():
    X, _ = _regression(1200, seed=4)
    model = SuperSparseRegressor(n_prototypes=20, random_state=0)
    model.partial_fit(X, np.full(1200, 7.0))  # enough rows held out to choose lam
    assert model.partial_fit_step_ == 0.0
    np.testing.assert_allclose(model.predict(X[:50]), 7.0, rtol=1e-6)
    # the prototypes' own width (no widening), at which the step is scaled
    assert model.gamma_ == model.partial_fit_gamma_
    # lam: 1e-3 times the mean squared similarity of a row to a prototype (the zero losses
    # tied at every penalty, and the grid's largest, 1e2 times that unit, was taken)
    Z = (X - model.shift_) / model.scale_
    C = (model.prototypes_ - model.shift_) / model.scale_
    S = np.exp(-model.gamma_ * ((Z[:, None, :] - C[None]) ** 2).sum(axis=2))
    np.testing.assert_allclose(model.lam_, 1e-3 * np.mean(S ** 2), rtol=1e-6)


def test_the_targets_seen_survive_a_saved_model_between_calls(tmp_path):
    X, y = _regression(1000, seed=5)
    calls = [(X[:200], np.zeros(200))] + [(X[a:a + 200], y[a:a + 200])
                                         for a in range(200, 1000, 200)]
    straight = SuperSparseRegressor(n_prototypes=15, random_state=0)
    saved = SuperSparseRegressor(n_prototypes=15, random_state=0)
    for i, (Xb, yb) in enumerate(calls):
        straight.partial_fit(Xb, yb)
        saved.partial_fit(Xb, yb)
        saved = load_model(save_model(saved, tmp_path / f"m{i}.sl"))
    np.testing.assert_allclose(saved.partial_fit_targets_, straight.partial_fit_targets_)
    np.testing.assert_allclose(saved.predict(X), straight.predict(X), rtol=1e-6, atol=1e-6)


def test_classifier_first_call_of_one_class_learns_from_later_calls():
    X, y = _regression(1600, seed=6)
    labels = (y > np.median(y)).astype(int)

    def stream(first):
        model = SuperSparseClassifier(n_prototypes=20, random_state=0)
        model.partial_fit(X[first], labels[first], classes=[0, 1])
        step = model.partial_fit_step_
        for _ in range(3):
            for a in range(0, 1200, 200):
                model.partial_fit(X[a:a + 200], labels[a:a + 200])
        return step, np.mean(model.predict(X[1200:]) == labels[1200:])

    step, accuracy = stream(np.flatnonzero(labels == 0)[:200])
    assert step == 0.0  # one class: no direction to move the prototypes in
    _, ordinary = stream(np.arange(200))
    # 200 more rows of class 0 in the memory cost a little (0.84 against 0.885)
    assert accuracy > ordinary - 0.06
