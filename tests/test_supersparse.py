"""SuperSparseRegressor / SuperSparseClassifier against numpy and scikit-learn references."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge

from streamlearn.data import open_dataset
from streamlearn.engine import LocalEngine, run_chunks
from streamlearn.errors import DataError, LabelError, ModelFileError, SchemaError
from streamlearn.models.supersparse import (
    GradientPass,
    Similarity,
    SuperSparseClassifier,
    SuperSparseRegressor,
    TargetRows,
)
from tests.category_problem import (
    category_problem,
    one_hot,
)
from tests.finite_differences import central_differences


def _regression(n: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2)).astype(np.float32)
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.05 * rng.normal(size=n)
    v = rng.uniform(0.5, 2.0, size=n)
    return X, y, v


def _standardise(X, v=None):
    """The RBF's units: features standardised by their (weighted) mean and standard
    deviation, rounded to float32 as the estimator does; returns Z and the map."""
    X64 = np.asarray(X, np.float64)
    v = np.ones(len(X64)) if v is None else np.asarray(v, np.float64)
    mean = v @ X64 / v.sum()
    std = np.sqrt(np.maximum(v @ (X64 * X64) / v.sum() - mean**2, 0.0))
    std = np.where(std > 0, std, 1.0)
    return ((X64 - mean) / std).astype(np.float32), mean, std


def _rbf(X, C, gamma):
    return np.exp(-gamma * ((np.asarray(X, np.float64)[:, None, :] - C[None]) ** 2).sum(-1))


def _ridge(X, y, v, C, gamma, lam):
    """Weighted ridge on materialised similarities: (beta, b) and the objective of eq. 2."""
    Z = np.hstack([_rbf(X, C, gamma), np.ones((len(y), 1))])
    V = v.sum()
    A = Z.T @ (v[:, None] * Z) / V
    A[:-1, :-1] += lam * np.eye(C.shape[0])
    w = np.linalg.solve(A, Z.T @ (v * y) / V)
    e = Z @ w - y
    return w, (v * e * e).sum() / V + lam * (w[:-1] ** 2).sum()


def test_ridge_step_equals_numpy_solve_on_materialised_similarities():
    X, y, v = _regression()
    C = np.array([[-1.0, -1.0], [0.0, 0.5], [1.0, 1.0], [1.5, -1.0]])
    model = SuperSparseRegressor(n_prototypes=4, gamma=0.8, lam=0.01, max_iter=0, init=C,
                                 chunk_rows=70).fit(X, y, sample_weight=v)
    # the RBF works on the weighted-standardised features; init is in the raw units
    Z, mean, std = _standardise(X, v)
    Cz = (C - mean) / std
    w, J = _ridge(Z, y, v, Cz, 0.8, 0.01)
    np.testing.assert_allclose(model.dual_coef_, w[:-1], rtol=1e-5, atol=1e-7)
    assert np.isclose(model.intercept_, w[-1], rtol=1e-5, atol=1e-7)
    assert np.isclose(model.objective_, J, rtol=1e-5)
    np.testing.assert_allclose(model.prototypes_, C, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model.predict(X), _rbf(Z, Cz, 0.8) @ w[:-1] + w[-1], rtol=1e-5,
                               atol=1e-6)


def test_unstandardised_rbf_works_on_the_raw_features():
    X, y, v = _regression()
    X = X * np.array([1.0, 5.0], dtype=np.float32)
    C = np.array([[-1.0, -5.0], [0.0, 2.5], [1.0, 5.0], [1.5, -5.0]])
    model = SuperSparseRegressor(n_prototypes=4, gamma=0.3, lam=0.01, max_iter=0, init=C,
                                 standardize=False).fit(X, y, sample_weight=v)
    w, _ = _ridge(X, y, v, C, 0.3, 0.01)
    np.testing.assert_allclose(model.dual_coef_, w[:-1], rtol=1e-6, atol=1e-8)
    assert model.shift_ is None and model.scale_ is None
    np.testing.assert_allclose(model.predict(X), _rbf(X, C, 0.3) @ w[:-1] + w[-1], rtol=1e-5,
                               atol=1e-6)
    scaled = SuperSparseRegressor(n_prototypes=3, gamma="scale", max_iter=0,
                                  standardize=False).fit(X, y)
    assert np.isclose(scaled.gamma_, 1.0 / X.astype(np.float64).var(axis=0).sum(), rtol=1e-6)


def test_prototype_gradient_is_the_total_derivative_at_the_optimal_beta():
    # eqs. 5-6: with beta re-solved for every C, dJ/dC equals the partial gradient at fixed
    # beta; compare with central finite differences of J(C) where beta is solved by numpy
    X, y, v = _regression(n=120, seed=1)
    gamma, lam = 0.7, 0.01
    C = np.array([[-1.0, 0.2], [0.3, -0.4], [1.1, 0.9]])
    w, _ = _ridge(X, y, v, C, gamma, lam)
    dataset = open_dataset(X, target=y, weight=v.astype(np.float32), chunk_rows=50)
    state = run_chunks(GradientPass(TargetRows("regression"), C, w[:, None],
                                    Similarity(gamma)),
                       dataset.chunks())
    grad = 2.0 / state.weight * state.grad
    h = 1e-5
    numeric = central_differences(lambda C_: _ridge(X, y, v, C_, gamma, lam)[1], C, h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("coef", ["ridge", "lasso"])
def test_objective_does_not_increase_across_alternations(coef):
    X, y, v = _regression(seed=2)
    model = SuperSparseRegressor(n_prototypes=5, gamma=1.0, lam=1e-3, coef=coef, max_iter=25,
                                 tol=0.0, chunk_rows=100).fit(X, y, sample_weight=v)
    path = model.objective_path_
    assert len(path) > 5
    assert np.all(np.diff(path) <= 1e-12 * path[0])
    assert path[-1] < 0.7 * path[0]  # the prototype steps pay off
    # the reported objective is eq. 2 of the final model, recomputed by numpy
    e = model.predict(X) - y
    beta = model.dual_coef_
    reg = (beta ** 2).sum() if coef == "ridge" else np.abs(beta).sum()
    assert np.isclose(model.objective_, (v * e * e).sum() / v.sum() + 1e-3 * reg, rtol=1e-5)


def test_black_box_similarity_without_gradient_still_trains():
    X, y, _ = _regression(seed=3)

    def laplacian(A, C):
        return np.exp(-np.abs(np.asarray(A, np.float64)[:, None, :] - C[None]).sum(-1))

    fixed = SuperSparseRegressor(n_prototypes=6, similarity=laplacian, max_iter=0).fit(X, y)
    model = SuperSparseRegressor(n_prototypes=6, similarity=laplacian, max_iter=20,
                                 step=0.5).fit(X, y)
    np.testing.assert_array_equal(fixed.prototypes_.shape, model.prototypes_.shape)
    assert model.objective_ < 0.95 * fixed.objective_  # eq. 7 is only a heuristic direction
    mse = np.mean((model.predict(X) - y) ** 2)
    assert np.isclose(mse + model.lam_ * (model.dual_coef_ ** 2).sum(), model.objective_, rtol=1e-5)


def test_supplied_gradient_matches_builtin_rbf():
    X, y, _ = _regression(n=200, seed=4)
    # a caller's similarity sees the raw features: give both the standardised rows
    X, _, _ = _standardise(X)

    def sim(A, C):
        return _rbf(A, C, 1.0)

    def grad(A, C):
        return 2.0 * (np.asarray(A, np.float64)[:, None, :] - C[None]) * sim(A, C)[:, :, None]

    params = dict(n_prototypes=4, gamma=1.0, max_iter=8, repulsion=0.05)
    builtin = SuperSparseRegressor(**params).fit(X, y)
    custom = SuperSparseRegressor(similarity=sim, similarity_gradient=grad, **params).fit(X, y)
    np.testing.assert_allclose(custom.prototypes_, builtin.prototypes_, rtol=1e-5, atol=1e-7)


def _with_junk(X: np.ndarray, t: np.ndarray, n_junk: int, seed: int = 1):
    """``X, t`` followed by ``n_junk`` rows far outside them (targets drawn from ``t``),
    and weights 1 then 0."""
    rng = np.random.default_rng(seed)
    junk = (rng.normal(size=(n_junk, X.shape[1])) * 50 + 100).astype(X.dtype)
    weight = np.r_[np.ones(len(t)), np.zeros(n_junk)]
    return np.r_[X, junk], np.r_[t, rng.choice(t, n_junk)], weight


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("init", ["random", "kmeans"])
@pytest.mark.parametrize("task", ["binary", "three classes", "regression"])
def test_rows_of_weight_zero_do_not_shape_the_model(task, init):
    # 300 far-off rows of weight 0 added to 400: n_prototypes="auto" counted them (50
    # prototypes instead of 40), the prototype sample drew them and lam="auto" counted them
    # in its degrees of freedom
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    if task == "regression":
        t = np.sin(2 * X[:, 0]) + X[:, 1] ** 2
        est = SuperSparseRegressor
    else:
        t = (X[:, 0] * X[:, 1] > 0).astype(int) + (task == "three classes") * (X[:, 2] > 1)
        est = SuperSparseClassifier
    X_all, t_all, w = _with_junk(X, t, 300)
    kw = dict(init=init, max_iter=20, random_state=0)
    plain = est(**kw).fit(X, t)
    weighted = est(**kw).fit(X_all, t_all, sample_weight=w)
    assert plain.prototypes_.shape[0] == -(-400 // 10)  # auto: one per 10 rows of weight
    assert weighted.prototypes_.shape == plain.prototypes_.shape
    np.testing.assert_allclose(weighted.prototypes_, plain.prototypes_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(weighted.dual_coef_, plain.dual_coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(weighted.intercept_, plain.intercept_, rtol=1e-6, atol=1e-9)
    assert weighted.gamma_ == pytest.approx(plain.gamma_, rel=1e-9)
    assert weighted.lam_ == pytest.approx(plain.lam_, rel=1e-9)
    np.testing.assert_allclose(weighted.predict(X), plain.predict(X), rtol=1e-6, atol=1e-9)
    # the initial sample (max_iter=0 keeps it): rows of weight 1 only
    start = est(init="random", max_iter=0, random_state=0).fit(X_all, t_all, sample_weight=w)
    gap = np.abs(start.prototypes_[:, None, :] - X[None, :, :].astype(np.float64)).max(axis=2)
    np.testing.assert_allclose(gap.min(axis=1), 0.0, atol=1e-4)


def test_chunking_and_engine_do_not_change_the_model():
    X, y, _ = _regression(seed=5)
    a = SuperSparseRegressor(n_prototypes=4, max_iter=6, chunk_rows=37).fit(X, y)
    b = SuperSparseRegressor(n_prototypes=4, max_iter=6).fit(
        X, y, engine=LocalEngine(chunk_rows=1000))
    np.testing.assert_allclose(a.prototypes_, b.prototypes_, rtol=1e-7, atol=1e-9)


def test_minibatch_solver_lowers_the_objective():
    X, y, _ = _regression(n=600, seed=6)
    model = SuperSparseRegressor(n_prototypes=6, solver="minibatch", max_iter=4, step=0.5,
                                 chunk_rows=100).fit(X, y)
    baseline = SuperSparseRegressor(n_prototypes=6, max_iter=0).fit(X, y)
    assert np.isclose(model.objective_path_[0], baseline.objective_)
    assert model.objective_ < 0.8 * baseline.objective_


def test_choosing_p_by_eq8_keeps_the_minimiser_of_the_criterion():
    X, y, _ = _regression(n=400, seed=7)
    model = SuperSparseRegressor(n_prototypes=[2, 4, 8], coef="lasso", lam=1e-3, max_iter=10,
                                 tradeoff=0.01).fit(X, y)
    path = model.selection_path_
    np.testing.assert_array_equal(path[:, 0], [8, 4, 2])
    np.testing.assert_allclose(path[:, 2], path[:, 1] + 0.01 * path[:, 0])
    assert model.n_prototypes_ == int(path[np.argmin(path[:, 2]), 0])
    assert model.prototypes_.shape == (model.n_prototypes_, 2)


def test_classifier_and_reduction_of_a_scikit_learn_svc(tmp_path):
    from sklearn.svm import SVC

    rng = np.random.default_rng(8)
    X = rng.uniform(-2, 2, size=(400, 2)).astype(np.float32)
    y = np.where((X ** 2).sum(1) < 1.5, "in", "out")
    svc = SVC(gamma=1.0, C=10.0).fit(X, y)
    reduced = SuperSparseClassifier.reduce(svc, 5, X, gamma=1.0, max_iter=40)
    assert list(reduced.classes_) == ["in", "out"]
    assert len(svc.support_) >= 5 * reduced.n_prototypes_
    agree = np.mean(reduced.predict(X) == svc.predict(X))
    assert agree > 0.95
    # trained on labels directly
    clf = SuperSparseClassifier(n_prototypes=5, gamma=1.0, max_iter=30).fit(X, y)
    accuracy = np.mean(clf.predict(X) == y)
    assert accuracy > 0.9 and np.isclose(clf.score(X, y), accuracy)
    # save and load give the same predictions
    path = clf.save(tmp_path / "ssvm.slm")
    loaded = SuperSparseClassifier.load(path)
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(loaded.classes_, clf.classes_)


def test_regressor_save_load_round_trip(tmp_path):
    X, y, _ = _regression(n=150, seed=9)
    model = SuperSparseRegressor(n_prototypes=3, max_iter=3).fit(X, y)
    loaded = SuperSparseRegressor.load(model.save(tmp_path / "sridge.slm"))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.get_params() == model.get_params()


def test_bad_inputs_raise_clear_errors(tmp_path):
    X, y, _ = _regression(n=50, seed=10)
    bad = X.copy()
    bad[7, 1] = np.inf  # NaN would be a missing value (nan_policy="auto")
    with pytest.raises(DataError, match="row 7"):
        SuperSparseRegressor(n_prototypes=2).fit(bad, y)
    with pytest.raises(DataError, match="at least 60 rows"):
        SuperSparseRegressor(n_prototypes=60).fit(X, y)
    with pytest.raises(LabelError, match="at least two"):
        SuperSparseClassifier(n_prototypes=2).fit(X, np.zeros(50))
    with pytest.raises(DataError, match="shape"):
        SuperSparseRegressor(n_prototypes=2, similarity=lambda A, C: np.ones((3, 3))).fit(X, y)
    with pytest.raises(ValueError, match="coef"):
        SuperSparseRegressor(coef="elastic").fit(X, y)
    model = SuperSparseRegressor(n_prototypes=2, similarity=lambda A, C: _rbf(A, C, 1.0),
                                 max_iter=1).fit(X, y)
    with pytest.raises(ModelFileError, match="similarity=.*a Python callable"):
        model.save(tmp_path / "m.slm")


def test_checkpointed_fit_gives_the_same_model_and_replays_from_the_checkpoint(tmp_path):
    X, y, _ = _regression(n=200, seed=11)
    plain = SuperSparseRegressor(n_prototypes=3, max_iter=4, chunk_rows=50).fit(X, y)
    first = SuperSparseRegressor(n_prototypes=3, max_iter=4, chunk_rows=50).fit(
        X, y, checkpoint=tmp_path / "ckpt")
    again = SuperSparseRegressor(n_prototypes=3, max_iter=4, chunk_rows=50).fit(
        X, y, checkpoint=tmp_path / "ckpt")
    np.testing.assert_array_equal(first.prototypes_, plain.prototypes_)
    np.testing.assert_array_equal(again.prototypes_, plain.prototypes_)
    assert any((tmp_path / "ckpt").rglob("*.zip"))


def test_reduction_of_our_own_additive_svc_with_a_dataset_and_held_out_p_choice():
    from streamlearn.models.additive import AdditiveSVC

    rng = np.random.default_rng(12)
    X = rng.uniform(-2, 2, size=(600, 2)).astype(np.float32)
    y = (np.sin(2 * X[:, 0]) + X[:, 1] > 0).astype(np.int64)
    svc = AdditiveSVC(n_bases=8, epochs=5, calibrate=False).fit(X, y)
    dataset = open_dataset(X, target=y, chunk_rows=128)  # labels present but unused
    reduced = SuperSparseClassifier.reduce(svc, [3, 6], dataset, gamma=1.0, max_iter=40)
    assert reduced.n_prototypes_ in (3, 6)
    assert np.mean(reduced.predict(X) == svc.predict(X)) > 0.9
    # the fit imitates the teacher's scores: its objective is eq. 2 against them
    scores = svc.decision_function(X)
    assert np.corrcoef(reduced.decision_function(X), scores)[0, 1] > 0.9


def test_gamma_scale_is_one_over_the_number_of_standardised_features():
    X, y, v = _regression(n=200, seed=11)
    X = X * np.array([1.0, 3.0], dtype=np.float32)
    model = SuperSparseRegressor(n_prototypes=3, gamma="scale", max_iter=0,
                                 linear_part=False).fit(X, y, sample_weight=v)
    # standardised features: each varying one has (weighted) variance 1
    assert np.isclose(model.gamma_, 1.0 / 2, rtol=1e-6)
    np.testing.assert_allclose(model.scale_, np.sqrt(
        np.cov(X.astype(np.float64).T, aweights=v, bias=True).diagonal()), rtol=1e-6)
    fixed = SuperSparseRegressor(n_prototypes=3, gamma=0.7, max_iter=0).fit(X, y)
    assert fixed.gamma_ == 0.7
    # predictions use the fitted width: the closed-form ridge of _ridge at gamma_
    Zx, mean, std = _standardise(X, v)
    Cz = (model.prototypes_ - mean) / std
    w, _ = _ridge(Zx, y, v, Cz, model.gamma_, model.lam_)
    Z = np.hstack([_rbf(Zx, Cz, model.gamma_), np.ones((200, 1))])
    np.testing.assert_allclose(model.predict(X), Z @ w, rtol=1e-5, atol=1e-6)


def test_only_the_classifier_has_a_decision_function():
    X, y, _ = _regression(n=60, seed=12)
    model = SuperSparseRegressor(n_prototypes=3, max_iter=0).fit(X, y)
    assert not hasattr(model, "decision_function")
    clf = SuperSparseClassifier(n_prototypes=3, max_iter=0).fit(X, y > 0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(clf.decision_function(X) > 0)
                                                               .astype(int)])


def test_iteration_cap_warns_and_a_converged_fit_does_not():
    from sklearn.exceptions import ConvergenceWarning

    X, y, _ = _regression(n=200, seed=13)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        capped = SuperSparseRegressor(n_prototypes=4, max_iter=2, tol=0.0).fit(X, y)
    assert capped.n_iter_ == 2
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        SuperSparseRegressor(n_prototypes=4, max_iter=2, tol=0.0, solver="minibatch",
                             step=0.1).fit(X, y)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        # tol=1: the first accepted step (a tiny one always lowers J) ends the fit
        done = SuperSparseRegressor(n_prototypes=4, max_iter=50, tol=1.0, step=1e-6).fit(X, y)
    assert done.n_iter_ < 50


@pytest.mark.parametrize("solver", ["lbfgs", "minibatch"])
def test_a_list_of_counts_stopped_at_the_cap_warns_once_naming_each(solver):
    # eq. 8 trains every count of the list: one warning for all of them, naming the counts
    # the selection path says were trained
    import re
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y, _ = _regression(n=300, seed=13)
    model = SuperSparseRegressor(n_prototypes=[6, 4, 2], max_iter=2, tol=0.0, solver=solver,
                                 step=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    capped = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(capped) == 1, capped
    named = re.search(r"with p=([\d, and]+) prototypes \(each of the (\d) counts tried\)",
                      capped[0])
    assert named is not None, capped[0]
    counts = [int(c) for c in re.split(r", | and ", named.group(1))]
    assert counts == model.selection_path_[:, 0].astype(int).tolist()
    assert int(named.group(2)) == len(counts) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        # the default tol with room to meet it: every count's alternation stops by the rule
        done = SuperSparseRegressor(n_prototypes=[6, 4, 2], max_iter=500, solver=solver,
                                    step=0.1).fit(X, y)
    assert done.selection_path_.shape[0] == 3 and done.n_iter_ < 500


@pytest.mark.parametrize(("cls", "params"), [
    (SuperSparseRegressor, {}),
    (SuperSparseRegressor, dict(lam=1e-2)),
    (SuperSparseRegressor, dict(solver="minibatch", step=0.1)),
    (SuperSparseClassifier, {}),
    (SuperSparseClassifier, dict(lam=1e-2)),
])
def test_the_iteration_cap_warning_points_at_the_call_to_fit(cls, params):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y, _ = _regression(n=200, seed=13)
    target = y if cls is SuperSparseRegressor else y > 0
    model = cls(n_prototypes=4, max_iter=2, tol=0.0, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, target)
    capped = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert capped and all(w.filename == __file__ for w in capped), [
        (w.filename, w.lineno) for w in capped]


@pytest.mark.parametrize("solver", ["lbfgs", "batch"])
def test_constant_target_or_features_stop_at_once_without_a_warning(solver):
    """A zero gradient is a stationary point: the fit stops there, predicting the constant
    target (or, on constant features, the target's weighted mean)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y, v = _regression(n=200, seed=14)
    same = np.ones_like(X)
    for features, target in [(X, np.full(len(y), 2.0)), (same, y)]:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            model = SuperSparseRegressor(n_prototypes=5, solver=solver).fit(
                features, target, sample_weight=v)
        assert model.n_iter_ <= 1
        np.testing.assert_allclose(model.predict(features), np.average(target, weights=v),
                                   rtol=1e-6)


def test_one_row_and_one_class_are_refused_with_scikit_learn_messages():
    X, y, _ = _regression(n=30, seed=14)
    with pytest.raises(ValueError, match="n_samples=1"):
        SuperSparseRegressor().fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="at least two"):
        SuperSparseClassifier(n_prototypes=2).fit(X, np.zeros(30))


def test_features_in_other_units_give_the_same_model():
    X, y, _ = _regression(n=300, seed=21)
    labels = np.where(y > np.median(y), 1, 0)
    a, b = np.array([1e3, 1e-2], np.float32), np.array([-40.0, 3.0], np.float32)
    for cls, target in ((SuperSparseRegressor, y), (SuperSparseClassifier, labels)):
        raw = cls(n_prototypes=5, max_iter=4).fit(X, target)
        moved = cls(n_prototypes=5, max_iter=4).fit(X * a + b, target)
        np.testing.assert_allclose(moved.predict(X * a + b), raw.predict(X), rtol=1e-3,
                                   atol=1e-3)
        np.testing.assert_allclose(moved.prototypes_, raw.prototypes_ * a + b, rtol=1e-3,
                                   atol=1e-3 * np.abs(b).max())


def test_features_of_tiny_units_are_standardised_not_taken_for_constants():
    # a feature whose spread is below 1e-12 was taken for a constant (absolute floor)
    X, y, _ = _regression(n=300, seed=21)
    raw = SuperSparseRegressor(n_prototypes=5, max_iter=4).fit(X, y)
    tiny = SuperSparseRegressor(n_prototypes=5, max_iter=4).fit(X * 1e-14, y)
    np.testing.assert_allclose(tiny.scale_, raw.scale_ * 1e-14, rtol=1e-6)
    np.testing.assert_allclose(tiny.predict(X * 1e-14), raw.predict(X), rtol=1e-3, atol=1e-3)


def test_lbfgs_steps_never_raise_the_objective_and_beat_plain_gradient_steps():
    X, y, v = _regression(seed=21)
    runs = {solver: SuperSparseRegressor(n_prototypes=8, gamma=1.0, lam=1e-3, max_iter=40,
                                         tol=0.0, solver=solver, random_state=2).fit(
                                             X, y, sample_weight=v)
            for solver in ("lbfgs", "batch")}
    path = runs["lbfgs"].objective_path_
    assert np.all(np.diff(path) <= 1e-12 * path[0])
    assert runs["lbfgs"].objective_ < runs["batch"].objective_
    # the reported objective is eq. 2 of the final model, recomputed by numpy
    model = runs["lbfgs"]
    e = model.predict(X) - y
    assert np.isclose(model.objective_,
                      (v * e * e).sum() / v.sum() + 1e-3 * (model.dual_coef_ ** 2).sum(), rtol=1e-5)


def test_probabilities_on_held_out_rows_keep_the_decisions_and_beat_the_plain_logistic():
    from sklearn.metrics import log_loss

    from streamlearn.solvers.calibration import temperature_proba

    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] + 0.6 * rng.normal(size=3000) > 0, "a", "b")
    y[X[:, 2] > 1.2] = "c"
    model = SuperSparseClassifier(n_prototypes=30).fit(X[:2000], y[:2000])
    assert model.proba_rows_ == "held-out"
    proba = model.predict_proba(X[2000:])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X[2000:]))
    plain = temperature_proba(model.decision_function(X[2000:]), 1.0)
    assert log_loss(y[2000:], proba) < 0.9 * log_loss(y[2000:], plain)


def test_probability_scale_without_held_out_rows_is_chosen_on_leave_one_out_scores():
    # 150 rows hold none out: the scale is chosen on each row's score by the ridge
    # beta-step refitted without it (the prototypes fixed), computed here row by row
    from streamlearn.solvers.calibration import TemperatureSums, best_temperature

    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 2)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=150) > 0).astype(int)
    v = rng.uniform(0.5, 2.0, 150)
    C = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0], [0.0, 0.0]])
    lam = 1e-3
    model = SuperSparseClassifier(n_prototypes=5, init=C, max_iter=0, gamma=0.5,
                                  lam=lam).fit(X, y, sample_weight=v)
    assert model.proba_rows_ == "training"
    Z0, mean, std = _standardise(X, v)
    Z = np.hstack([_rbf(Z0, (C - mean) / std, 0.5), np.ones((150, 1))])
    t = 2.0 * y - 1.0
    V = v.sum()
    D = np.diag(np.r_[np.ones(5), 0.0])
    loo = np.empty(150)
    for i in range(150):
        keep = np.arange(150) != i
        Zi, ti, vi = Z[keep], t[keep], v[keep]
        w = np.linalg.solve(Zi.T @ (vi[:, None] * Zi) + V * lam * D, Zi.T @ (vi * ti))
        loo[i] = Z[i] @ w
    # training rows: the cross-entropy against Platt's smoothed targets
    expected = best_temperature(TemperatureSums(2).add(loo, y, v).losses(smoothed=True))
    assert model.proba_scale_ == pytest.approx(expected, rel=1e-4)
    # in-sample scores would have chosen a sharper scale
    in_sample = best_temperature(
        TemperatureSums(2).add(model.decision_function(X), y, v).losses(smoothed=True))
    assert in_sample > model.proba_scale_


def test_reduced_models_have_no_probabilities_and_partial_fit_chooses_a_scale(tmp_path):
    from sklearn.svm import SVC

    rng = np.random.default_rng(6)
    X = rng.uniform(-2, 2, size=(300, 2)).astype(np.float32)
    y = ((X ** 2).sum(1) < 1.5).astype(int)
    reduced = SuperSparseClassifier.reduce(SVC().fit(X, y), 5, X, max_iter=0)
    assert not hasattr(reduced, "predict_proba")
    assert not hasattr(reduced, "proba_scale_")
    online = SuperSparseClassifier(n_prototypes=10).partial_fit(X, y, classes=[0, 1])
    assert online.proba_rows_ == "training" and online.proba_scale_ > 0
    assert online.predict_proba(X).shape == (300, 2)
    fitted = SuperSparseClassifier(n_prototypes=10, max_iter=0).fit(X, y)
    loaded = SuperSparseClassifier.load(fitted.save(tmp_path / "m.slm"))
    np.testing.assert_array_equal(loaded.predict_proba(X), fitted.predict_proba(X))


def test_regression_is_the_same_model_whatever_the_targets_mean() -> None:
    """Targets far above their spread (1e7 + a signal of spread about 1) fit as well as
    the same targets near zero: the fit subtracts the first rows' mean target and adds it
    to the intercept, where the squared loss from Gram statistics would otherwise lose the
    signal's digits. The predictions of both agree to the float32 rounding of the targets
    (0.5 at 1e7) plus the fits' own differences."""
    from sklearn.metrics import r2_score

    from streamlearn.solvers.supersparse.driver import target_offset

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=3000)
    Xt = rng.normal(size=(2000, 3)).astype(np.float32)
    yt = np.sin(2 * Xt[:, 0]) + Xt[:, 1] ** 2
    near = SuperSparseRegressor().fit(X, y)
    with pytest.warns(UserWarning, match="target 'y' .* keeps at most 17 distinct values"):
        far = SuperSparseRegressor().fit(X, y + 1e7)  # float32 steps of 1 at 1e7
    assert r2_score(yt + 1e7, far.predict(Xt)) > r2_score(yt, near.predict(Xt)) - 0.05
    assert far.gamma_ == near.gamma_
    assert float(np.ravel(far.intercept_)[0]) == pytest.approx(
        1e7 + float(np.ravel(near.intercept_)[0]), abs=10)
    with pytest.warns(UserWarning, match="target 'y'"):  # read whole: the walk names it
        offset = target_offset(open_dataset(X, target=y + 1e7, task="regression"))
    assert offset == pytest.approx(
        float(np.mean((y + 1e7).astype(np.float32), dtype=np.float64)), rel=1e-12)


# -- categorical columns: indicator columns built in the stream ------------------------------
def _rbf_scores(model, X: np.ndarray) -> np.ndarray:
    """``sum_j beta_j exp(-gamma ||(x - c_j) / scale||^2) + b`` in numpy, ``X`` the rows as
    the model reads them (indicator columns), one output."""
    C = np.asarray(model.prototypes_, dtype=np.float64)
    Z = (X - C[:, None, :]) / np.asarray(model.scale_)
    return np.exp(-model.gamma_ * (Z ** 2).sum(axis=2)).T @ model.dual_coef_ + model.intercept_


def test_classifier_reads_categories_as_indicator_columns(tmp_path) -> None:
    # 200 categories whose codes (sorted names) say nothing of their effects: read as one
    # number each the classifier scored 0.63 against one-hot logistic regression's 0.90;
    # indicator columns put it within 3 points of the one-hot reference (0.91)
    train, score = category_problem(3000, 0)
    test, score_test = category_problem(1000, 1)
    y, y_test = (score > 0).astype(int), (score_test > 0).astype(int)
    reference = LogisticRegression(max_iter=1000).fit(one_hot(train), y)
    model = SuperSparseClassifier(random_state=0).fit(train, y)
    assert model.score(test, y_test) >= reference.score(one_hot(test), y_test) - 0.03
    assert model.n_features_in_ == 2 and model.prototypes_.shape[1] == 201
    assert not hasattr(model, "feature_transform_")
    # the indicator columns are centred, not scaled
    np.testing.assert_array_equal(model.scale_[1:], 1.0)
    # importances: one per given column, the indicators' slopes summed
    slopes = model.feature_slopes_
    np.testing.assert_allclose(model.feature_importances_,
                               np.array([slopes[0], slopes[1:].sum()]) / slopes.sum())
    # scores against numpy on pandas' one-hot rows; an unseen category sets no indicator
    rows = np.c_[test["x0"].to_numpy(np.float32), one_hot(test)[:, :-1]]
    np.testing.assert_allclose(model.decision_function(test), _rbf_scores(model, rows),
                               rtol=1e-6, atol=1e-9)
    unseen = test.head(3).astype({"cat": object}).assign(cat=["new", "c001", "new"])
    with pytest.warns(UserWarning, match="not seen in fit"):
        scores = model.decision_function(unseen)
    zeros = np.c_[unseen["x0"].to_numpy(np.float32), np.zeros((3, 200))]
    np.testing.assert_allclose(scores[[0, 2]], _rbf_scores(model, zeros)[[0, 2]],
                               rtol=1e-6, atol=1e-9)
    # the model file keeps the map
    loaded = SuperSparseClassifier.load(model.save(tmp_path / "m.slm"))
    assert loaded.category_indicators_ == model.category_indicators_
    np.testing.assert_array_equal(loaded.decision_function(test),
                                  model.decision_function(test))
    # reduce: the reduced model reads indicators, the model it follows the given columns
    reduced = SuperSparseClassifier.reduce(model, 20, train)
    assert reduced.category_indicators_ == model.category_indicators_
    agree = np.mean(reduced.predict(test) == model.predict(test))
    assert agree > 0.9, agree
    # rows whose text column lacks some categories are coded by the model's categories
    # (by their own list, each code would name another category of the model's)
    kept = ~train["cat"].isin(["c000", "c001", "c002", "c003", "c004"]).to_numpy()
    text = train[kept].astype({"cat": str})
    assert text["cat"].nunique() < 200
    reduced = SuperSparseClassifier.reduce(model, 20, text)
    agree = np.mean(reduced.predict(test) == model.predict(test))
    assert agree > 0.9, agree
    with pytest.raises(SchemaError, match="by other categories"):
        SuperSparseClassifier.reduce(model, 20, open_dataset(text))


def test_regressor_reads_categories_as_indicator_columns() -> None:
    # 30 categories: read as one number each R^2 0.34, one-hot ridge regression 0.98;
    # indicator columns 0.96
    train, target = category_problem(3000, 0, k=30, noise=0.3)
    test, target_test = category_problem(1000, 1, k=30, noise=0.3)
    reference = Ridge().fit(one_hot(train), target).score(one_hot(test), target_test)
    model = SuperSparseRegressor(random_state=0).fit(train, target)
    assert model.score(test, target_test) >= reference - 0.05
    assert model.feature_importances_.shape == (2,)


def test_partial_fit_reads_categories_as_indicator_columns() -> None:
    train, score = category_problem(3000, 0, k=20)
    test, score_test = category_problem(1000, 1, k=20)
    y, y_test = (score > 0).astype(int), (score_test > 0).astype(int)
    model = SuperSparseClassifier(random_state=0, n_prototypes=30)
    model.partial_fit(train[:1500], y[:1500], classes=[0, 1])
    model.partial_fit(train[1500:], y[1500:])
    assert model.category_indicators_.n_features == 21 and model.n_features_in_ == 2
    np.testing.assert_array_equal(model.scale_[1:], 1.0)
    reference = LogisticRegression(max_iter=1000).fit(one_hot(train), y)
    assert model.score(test, y_test) >= reference.score(one_hot(test), y_test) - 0.1


@pytest.mark.parametrize("cls", [SuperSparseRegressor, SuperSparseClassifier])
def test_a_feature_constant_in_training_moves_no_prediction(cls, tmp_path):
    # the fit learned nothing of the column's other values: with the scale 1 it kept
    # before, a column at 3 in training and normal of sd 10 at prediction changed 42 % of
    # a classifier's predictions
    X, y, _ = _regression(n=400, seed=5)
    target = y if cls is SuperSparseRegressor else (y > 0).astype(np.int64)
    with_constant = np.c_[X, np.full(len(X), 3.0, dtype=np.float32)]
    model = cls(n_prototypes=8, max_iter=6).fit(with_constant, target)
    assert np.isinf(model.scale_[-1])
    np.testing.assert_array_equal(model.prototypes_[:, -1], 3.0)
    varied = with_constant.copy()
    varied[:, -1] = np.random.default_rng(0).normal(scale=10.0, size=len(X))
    output = model.decision_function if cls is SuperSparseClassifier else model.predict
    np.testing.assert_array_equal(output(varied), output(with_constant))
    model.save(tmp_path / "m.slm")
    loaded = cls.load(tmp_path / "m.slm")
    np.testing.assert_array_equal(loaded.predict(varied), model.predict(with_constant))
