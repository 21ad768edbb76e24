"""Super-sparse machines on sparse rows: the CSR kernels against numpy and the dense
kernels, the sparse fit against the dense fit, sources, refusals, memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file
from sklearn.svm import LinearSVC

from streamlearn import open_dataset
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.io.model_file import load_model, save_model
from streamlearn.models import SuperSparseClassifier, SuperSparseRegressor
from streamlearn.solvers.prototypes import (
    prototype_sq_distances_csr,
    rbf_gradient_update,
    rbf_gradient_update_csr,
    rbf_similarities,
)


def _data(n: int = 1500, d: int = 30, seed: int = 0):
    rng = np.random.default_rng(seed)
    M = sp.random(n, d, density=0.15, format="csr", random_state=seed, dtype=np.float64)
    M.data = M.data * 4.0
    M = M.astype(np.float32)
    X = M.toarray()
    score = X[:, 0] + X[:, 1] - X[:, 2] + 0.3 * rng.normal(size=n)
    return M, X, score


def test_distances_of_csr_rows_are_numpy():
    M, X, _ = _data(200, 12)
    rng = np.random.default_rng(1)
    C = rng.normal(size=(5, 12))
    weights = rng.uniform(0.2, 3.0, size=12)
    expected = ((X.astype(np.float64)[:, None, :] - C[None]) ** 2 * weights).sum(axis=2)
    got = prototype_sq_distances_csr(*SparseRows.from_scipy(M).kernel_args, C, weights)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(rbf_similarities(SparseRows.from_scipy(M), C, 0.3),
                               rbf_similarities(X, C, 0.3), rtol=1e-10, atol=1e-12)


def test_rbf_gradient_of_csr_rows_is_the_dense_kernel():
    M, X, _ = _data(200, 12, seed=2)
    rng = np.random.default_rng(3)
    C = rng.normal(size=(5, 12))
    S = rbf_similarities(X, C, 0.2)
    weights = rng.normal(size=(200, 5))
    dense, sparse = np.zeros((5, 12)), np.zeros((5, 12))
    rbf_gradient_update(X, C, S, 0.2, weights, dense)
    rbf_gradient_update_csr(*SparseRows.from_scipy(M).kernel_args, C, S, 0.2, weights, sparse)
    np.testing.assert_allclose(sparse, dense, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
def test_sparse_fit_is_the_dense_fit(task):
    # sparse rows keep their units: the dense fit without standardisation is the reference
    M, X, score = _data()
    if task == "regression":
        y: np.ndarray = score
        make = SuperSparseRegressor
    else:
        y = np.digitize(score, [0.5] if task == "binary" else [0.0, 1.0])
        make = SuperSparseClassifier
    sparse = make(random_state=0).fit(M, y)
    dense = make(random_state=0, standardize=False).fit(X, y)
    np.testing.assert_array_equal(sparse.shift_, 0.0)
    np.testing.assert_array_equal(sparse.scale_, 1.0)
    np.testing.assert_allclose(sparse.prototypes_, dense.prototypes_, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sparse.decision_function(M) if task != "regression"
                               else sparse.predict(M),
                               dense.decision_function(X) if task != "regression"
                               else dense.predict(X), rtol=1e-5, atol=1e-6)
    # either model scores sparse rows as it scores their dense form
    for model in (sparse, dense):
        np.testing.assert_allclose(model.predict(M), model.predict(X), rtol=1e-12,
                                   atol=1e-12)
    if task != "regression":
        assert sparse.score(M, y) > (0.85 if task == "binary" else 0.65)


def test_reduce_a_model_on_sparse_rows():
    M, _, score = _data(seed=4)
    y = (score > 0.5).astype(int)
    teacher = LinearSVC(C=1.0).fit(M, y)
    reduced = SuperSparseClassifier.reduce(teacher, 10, M, random_state=0)
    agree = (reduced.predict(M) == teacher.predict(M)).mean()
    assert agree > 0.9


def test_svmlight_file_trains_the_in_memory_model(tmp_path):
    M, _, score = _data(n=800, seed=5)
    y = (score > 0.5).astype(int)
    path = tmp_path / "train.svm"
    dump_svmlight_file(M, y, str(path), zero_based=True)
    from_file = SuperSparseClassifier(random_state=0).fit(
        open_dataset(str(path), n_features=M.shape[1]))
    in_memory = SuperSparseClassifier(random_state=0).fit(M, y)
    # the file holds the values printed to float precision and back
    np.testing.assert_allclose(from_file.decision_function(M),
                               in_memory.decision_function(M), rtol=1e-3, atol=1e-4)
    save_model(from_file, tmp_path / "m.slm")
    np.testing.assert_array_equal(load_model(tmp_path / "m.slm").decision_function(M),
                                  from_file.decision_function(M))


def test_similarity_functions_and_partial_fit_refuse_sparse_rows(monkeypatch):
    M, _, score = _data(n=300)
    y = (score > 0.5).astype(int)
    read = []
    monkeypatch.setattr("streamlearn.data.dataset.Dataset._sparse_chunk",
                        lambda *a, **k: read.append(1))

    def linear(X, C):
        return X @ C.T

    with pytest.raises(TypeError, match="sparse"):
        SuperSparseClassifier(similarity=linear).fit(M, y)
    with pytest.raises(TypeError, match="sparse"):
        SuperSparseClassifier(similarity=linear).fit(open_dataset(M, target=y))
    assert not read
    with pytest.raises(TypeError, match="partial_fit takes dense rows"):
        SuperSparseRegressor().partial_fit(M, score)


def test_wide_sparse_rows_are_never_densified():
    # 200,000 columns: densified, the 3,000 rows would take 2.4 GB
    n, d, per_row = 3000, 200_000, 20
    rng = np.random.default_rng(6)
    indices = np.concatenate([rng.choice(d, per_row, replace=False) for _ in range(n)])
    y = rng.integers(0, 2, size=n)
    indices[::per_row] = y  # column 0 or 1 says the class, with a large value
    values = rng.uniform(0.5, 1.5, size=n * per_row)
    values[::per_row] = 10.0
    M = sp.csr_array((values.astype(np.float32), indices.astype(np.int32),
                      np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    tracemalloc.start()
    model = SuperSparseClassifier(n_prototypes=10, random_state=0).fit(M, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert model.score(M, y) > 0.9
    # the prototypes, their gradient, step and L-BFGS history (5 pairs): about twenty
    # (p, d) float64 arrays of 16 MB, where the densified rows would take 2.4 GB
    assert peak < 24 * 10 * d * 8
