"""SuperSparseClassifier with more than two classes: one pool of prototypes, a coefficient
vector per class, against numpy and scikit-learn references."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC

from streamlearn.data import open_dataset
from streamlearn.engine import DaskEngine, run_chunks
from streamlearn.errors import LabelError
from streamlearn.models.supersparse import (
    GradientPass,
    Similarity,
    SuperSparseClassifier,
    TargetRows,
)
from tests.finite_differences import central_differences
from tests.test_supersparse import _rbf


def _three_arms(n: int = 600, seed: int = 0):
    """Three interleaved arms of a spiral: no class is linearly separable from the others."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, size=n)
    r = rng.uniform(0.1, 1.0, size=n)
    angle = 2.0 * np.pi * codes / 3 + 6.0 * r
    X = np.column_stack([r * np.cos(angle), r * np.sin(angle)])
    X += 0.06 * rng.normal(size=X.shape)
    labels = np.array(["a", "b", "c"])[codes]
    return X.astype(np.float32), labels, codes


def test_fixed_prototypes_give_each_class_its_own_ridge_on_one_gram():
    X, labels, codes = _three_arms(n=300, seed=1)
    rng = np.random.default_rng(2)
    v = rng.uniform(0.5, 2.0, size=len(X))
    C = np.array([[-0.5, 0.0], [0.5, 0.5], [0.0, -0.6], [0.3, -0.2], [-0.2, 0.7]])
    lam, gamma = 0.01, 2.0
    model = SuperSparseClassifier(n_prototypes=5, gamma=gamma, lam=lam, max_iter=0, init=C,
                                  standardize=False, chunk_rows=70)
    model.fit(X, labels, sample_weight=v)
    # numpy: weighted ridge of each class's +-1 column on the materialised similarities
    Z = np.hstack([_rbf(X, C, gamma), np.ones((len(X), 1))])
    Y = np.where(codes[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    A = Z.T @ (v[:, None] * Z) / v.sum()
    A[:-1, :-1] += lam * np.eye(5)
    W = np.linalg.solve(A, Z.T @ (v[:, None] * Y) / v.sum())
    assert model.dual_coef_.shape == (3, 5) and model.intercept_.shape == (3,)
    np.testing.assert_allclose(model.dual_coef_, W[:-1].T, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(model.intercept_, W[-1], rtol=1e-5, atol=1e-7)
    scores = Z @ W
    np.testing.assert_allclose(model.decision_function(X), scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(model.predict(X), np.array(["a", "b", "c"])[
        scores.argmax(axis=1)])
    e = scores - Y
    objective = (v[:, None] * e * e).sum() / v.sum() + lam * (W[:-1] ** 2).sum()
    assert np.isclose(model.objective_, objective, rtol=1e-6)


def test_prototype_gradient_of_several_classes_is_the_total_derivative():
    # with every class's beta re-solved for each C, dJ/dC is the partial gradient at fixed
    # beta (eqs. 5-6 summed over the classes); central differences of J(C) by numpy
    X, _, codes = _three_arms(n=150, seed=3)
    X = X.astype(np.float64).astype(np.float32)
    Y = np.where(codes[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    gamma, lam = 1.5, 0.01
    C = np.array([[-0.5, 0.1], [0.4, 0.4], [0.1, -0.5]])

    def solve(C_):
        Z = np.hstack([_rbf(X, C_, gamma), np.ones((len(X), 1))])
        A = Z.T @ Z / len(X)
        A[:-1, :-1] += lam * np.eye(len(C_))
        W = np.linalg.solve(A, Z.T @ Y / len(X))
        e = Z @ W - Y
        return W, (e * e).sum() / len(X) + lam * (W[:-1] ** 2).sum()

    W, _ = solve(C)
    dataset = open_dataset(X, target=codes, chunk_rows=40, task="classification")
    state = run_chunks(GradientPass(TargetRows("classification", n_classes=3), C, W,
                                    Similarity(gamma)), dataset.chunks())
    grad = 2.0 / state.weight * state.grad
    h = 1e-5
    numeric = central_differences(lambda C_: solve(C_)[1], C, h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-3, atol=1e-6)


def test_shared_prototypes_learn_three_spiral_arms_near_an_rbf_svm():
    X, labels, _ = _three_arms(n=900, seed=4)
    Xt, lt, _ = _three_arms(n=900, seed=5)
    model = SuperSparseClassifier(random_state=0).fit(X, labels)  # defaults: p = 50
    assert list(model.classes_) == ["a", "b", "c"]
    assert model.prototypes_.shape == (50, 2) and model.dual_coef_.shape == (3, 50)
    # the prototype steps lowered the summed objective from the first beta-step
    assert model.objective_path_[-1] < 0.8 * model.objective_path_[0]
    ours = model.score(Xt, lt)
    svm = SVC(C=10.0, gamma="scale").fit(X, labels).score(Xt, lt)
    linear = SVC(kernel="linear").fit(X, labels).score(Xt, lt)
    assert linear < 0.8  # the arms need a curved boundary
    assert ours >= svm - 0.03, (ours, svm)


def test_choosing_p_drops_the_prototypes_weakest_over_all_classes():
    X, labels, _ = _three_arms(n=600, seed=6)
    model = SuperSparseClassifier(n_prototypes=[24, 12, 6], tradeoff=0.001, max_iter=20,
                                  random_state=0).fit(X, labels)
    path = model.selection_path_
    np.testing.assert_array_equal(path[:, 0], [24, 12, 6])
    assert model.n_prototypes_ == int(path[np.argmin(path[:, 2]), 0])
    assert model.dual_coef_.shape == (3, model.n_prototypes_)
    # the validation loss is the share of held-out rows whose largest output is wrong
    assert 0.0 <= path[:, 1].min() <= path[:, 1].max() <= 1.0


def test_reduce_a_multiclass_svm_to_shared_prototypes():
    X, labels, _ = _three_arms(n=600, seed=7)
    svc = SVC(C=10.0, gamma=10.0, decision_function_shape="ovr").fit(X, labels)
    reduced = SuperSparseClassifier.reduce(svc, 12, X, gamma=10.0, standardize=False,
                                           random_state=0)
    assert list(reduced.classes_) == list(svc.classes_) and reduced.reduced_
    assert reduced.dual_coef_.shape == (3, 12)
    assert len(svc.support_) >= 5 * reduced.n_prototypes_
    assert np.mean(reduced.predict(X) == svc.predict(X)) > 0.95


def test_a_teacher_whose_scores_do_not_match_its_classes_is_refused():
    X, _, _ = _three_arms(n=90, seed=8)

    class Flat:
        classes_ = np.array(["a", "b", "c"])

        def decision_function(self, X):
            return np.zeros(len(X))  # one column for three classes

    with pytest.raises(LabelError, match=r"shape \(\d+, 3\)"):
        SuperSparseClassifier.reduce(Flat(), 4, X)


def test_a_one_vs_one_svm_is_refused_even_with_three_pairs_for_three_classes():
    X, y, _ = _three_arms(n=90, seed=8)
    ovo = SVC(decision_function_shape="ovo").fit(X, y)
    assert ovo.decision_function(X).shape == (len(X), 3)  # as many columns as classes
    with pytest.raises(LabelError, match="decision_function_shape='ovr'"):
        SuperSparseClassifier.reduce(ovo, 4, X)


def test_multiclass_model_file_and_partial_fit(tmp_path):
    X, labels, _ = _three_arms(n=900, seed=9)
    model = SuperSparseClassifier(n_prototypes=20, max_iter=10, random_state=0)
    for a in range(0, 900, 300):
        model.partial_fit(X[a:a + 300], labels[a:a + 300], classes=["a", "b", "c"])
    assert model.dual_coef_.shape == (3, 20) and model.n_iter_ == 3
    assert model.score(X, labels) > 0.8
    loaded = SuperSparseClassifier.load(model.save(tmp_path / "three.slm"))
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    # a continued fit after loading keeps the classes and the outputs
    loaded.partial_fit(X[:300], labels[:300])
    assert loaded.dual_coef_.shape == (3, 20)
    importances = loaded.feature_importances_
    assert importances.shape == (2,) and np.isclose(importances.sum(), 1.0)


def test_multiclass_on_dask_matches_local(dask_client):
    X, labels, _ = _three_arms(n=400, seed=10)
    params = dict(n_prototypes=8, max_iter=5, random_state=0, chunk_rows=100)
    local = SuperSparseClassifier(**params).fit(X, labels)
    remote = SuperSparseClassifier(**params).fit(X, labels, engine=DaskEngine(dask_client))
    np.testing.assert_allclose(remote.dual_coef_, local.dual_coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))


def test_one_output_may_be_given_as_vectors():
    from streamlearn.models.supersparse import GramPass, objective, solve_beta

    rng = np.random.default_rng(11)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = rng.normal(size=200)
    C = rng.normal(size=(4, 3))
    dataset = open_dataset(X, target=y, task="regression", chunk_rows=50)
    stats = run_chunks(GramPass(TargetRows("regression"), C, Similarity(0.5)), dataset.chunks())
    A, b = stats.G / stats.weight, stats.r / stats.weight
    for coef in ("ridge", "lasso"):
        vector, column = solve_beta(A, b[:, 0], 1e-3, coef), solve_beta(A, b, 1e-3, coef)
        assert vector.shape == (5,) and column.shape == (5, 1)
        np.testing.assert_array_equal(vector, column[:, 0])
        assert objective(stats, vector, 1e-3, coef) == objective(stats, column, 1e-3, coef)
    grads = [run_chunks(GradientPass(TargetRows("regression"), C, w, Similarity(0.5)),
                        dataset.chunks()).grad for w in (vector, column)]
    np.testing.assert_array_equal(grads[0], grads[1])


def test_class_quotas_share_the_pool_by_largest_remainders() -> None:
    from streamlearn.solvers.supersparse.passes import class_quotas

    np.testing.assert_array_equal(class_quotas(10, np.array([1.0, 1.0])), [5, 5])
    # one each, then 7 by shares 0.7/0.2/0.1: ideal 4.9, 1.4, 0.7 -> 4, 1, 0 and the
    # two largest remainders (0.9, 0.7) get the two left
    np.testing.assert_array_equal(class_quotas(10, np.array([7.0, 2.0, 1.0])), [6, 2, 2])
    np.testing.assert_array_equal(class_quotas(2, np.array([5.0, 3.0, 1.0])), [1, 1, 0])
    np.testing.assert_array_equal(class_quotas(4, np.array([3.0, 0.0, 1.0])), [3, 0, 1])
    for p in (3, 17, 260):
        shares = np.random.default_rng(p).random(26)
        quotas = class_quotas(p, shares)
        assert quotas.sum() == p and (quotas >= (1 if p >= 26 else 0)).all()


def test_the_initial_pool_holds_each_class_by_its_share() -> None:
    from streamlearn.data import open_dataset
    from streamlearn.engine import LocalEngine
    from streamlearn.solvers.supersparse.passes import ClassSamplePass

    rng = np.random.default_rng(2)
    y = rng.choice(3, size=3000, p=[0.6, 0.3, 0.1])
    y[:5] = 2
    y[5:] = np.where(y[5:] == 2, 0, y[5:])  # class 2 has 5 rows
    X = np.column_stack([np.arange(3000), y]).astype(np.float32)  # row id, class
    dataset = open_dataset(X, target=y, chunk_rows=256)
    quotas = np.array([10, 5, 8])  # class 2 cannot fill its 8: the common sample does
    C = LocalEngine(progress=False).run(ClassSamplePass(quotas, 2, seed=1), dataset)
    assert C.shape == (23, 2) and len(np.unique(C[:, 0])) == 23  # distinct rows
    got = np.bincount(C[:, 1].astype(int), minlength=3)
    assert got[2] == 5 and got[0] >= 10 and got[1] >= 5
