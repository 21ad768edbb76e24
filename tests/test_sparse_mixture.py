"""MixtureSVC on sparse rows: k-means and the mixture's kernels on CSR rows against their
dense forms, the sparse fit against the dense fit in the same (uncentred) units, sources,
and what sparse rows are refused for."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from streamlearn import open_dataset
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.io.model_file import load_model, save_model
from streamlearn.models import MixtureSVC
from streamlearn.solvers.kmeans import (
    Standardiser,
    assign_chunk,
    assign_rows,
    minibatch_rows,
    minibatch_step,
    streamed_kmeans,
)
from streamlearn.solvers.mixture import (
    chunk_products,
    expert_dcd_chunk,
    gating_objective_chunk,
    mixture_log_odds_chunk,
)
from streamlearn.solvers.mixture.driver import C_FACTOR
from streamlearn.solvers.mixture.kernels import mixture_log_odds


def _data(n: int = 2000, d: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    M = sp.random(n, d, density=0.15, format="csr", random_state=seed, dtype=np.float64)
    M.data = M.data * 4.0
    M = M.astype(np.float32)
    X = M.toarray()
    y = X[:, 0] + X[:, 1] - X[:, 2] + 0.3 * rng.normal(size=n) > 0.5  # about 1 in 3
    return M, X, y.astype(int)


def units_apart(X: np.ndarray) -> np.ndarray:
    """The scale of Standardiser.of_units_apart, by numpy: a column whose largest absolute
    value is more than 10 times above or below the median column's is divided by its
    ratio to it."""
    largest = np.abs(X.astype(np.float64)).max(axis=0)
    ratio = largest / np.median(largest[largest > 0])
    return np.where((ratio > 10) | (ratio < 0.1), ratio, 1.0)


def test_units_apart_scale_keeps_one_unit_and_brings_others_to_it():
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, size=(200, 8)) * np.array([1, 2, 0.5, 1, 1, 3e4, 1e-3, 0])
    s = Standardiser.of_units_apart(X.min(axis=0), X.max(axis=0))
    expected = np.ones(8)
    largest = X.max(axis=0)
    median = np.median(largest[:7])
    expected[5], expected[6] = largest[5] / median, largest[6] / median
    np.testing.assert_allclose(s.scale, expected, rtol=1e-12)
    assert not np.any(s.shift) and s.keeps_zeros


def _kernel_problem(seed: int = 0, n: int = 150, d: int = 12, k: int = 4):
    rng = np.random.default_rng(seed)
    M, X, _ = _data(n, d, seed)
    V = rng.normal(size=(k, d))
    W = rng.normal(scale=0.5, size=(k, d + 1))
    return SparseRows.from_scipy(M), X, V, W, rng


def test_expert_steps_on_csr_rows_are_the_dense_steps():
    rows, X, _, W, rng = _kernel_problem()
    n, k = X.shape[0], W.shape[0]
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0).astype(np.float32)
    weight = rng.uniform(0.5, 2.0, size=n).astype(np.float32)
    Q = rng.dirichlet(np.ones(k), size=n)
    active = np.array([True, True, False, True])
    results = []
    for data in (X, rows):
        alpha = np.zeros((n, k), dtype=np.float32)
        W_run = W.copy()
        pg = [expert_dcd_chunk(data, y, weight, Q, 0.8, alpha, W_run, active, 1.0, 1, sweep)
              for sweep in range(3)]
        results.append((alpha, W_run, pg))
    (a_dense, W_dense, pg_dense), (a_sparse, W_sparse, pg_sparse) = results
    np.testing.assert_allclose(W_sparse, W_dense, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a_sparse, a_dense, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(pg_sparse, pg_dense, rtol=1e-9)
    # the duals' image: W = W0 + sum_i y_i alpha_ij [x_i, 1] for the active experts
    image = W + (a_sparse * y[:, None]).T @ np.column_stack([X, np.ones(n)])
    np.testing.assert_allclose(W_sparse[active], image[active], rtol=1e-5, atol=1e-5)


def test_log_odds_of_csr_rows_are_the_dense_kernels():
    rows, X, V, W, _ = _kernel_problem(seed=1)
    xi = np.array([0.4, 0.0, 0.35, 0.25])
    dense = mixture_log_odds_chunk(X, V, W, xi, 0.6, 1.0)
    np.testing.assert_allclose(mixture_log_odds(rows, V, W, xi, 0.6, 1.0), dense, rtol=1e-10,
                               atol=1e-10)


def test_products_and_gating_objective_of_csr_rows():
    rows, X, V, W, rng = _kernel_problem(seed=2)
    dense, sparse = chunk_products(X, V, W, 1.0), chunk_products(rows, V, W, 1.0)
    for name in ("x_sq", "XV", "scores"):  # float32 products, summed in another order
        np.testing.assert_allclose(getattr(sparse, name), getattr(dense, name), rtol=1e-5,
                                   atol=1e-5)
    weight = rng.uniform(0.5, 2.0, size=X.shape[0]).astype(np.float32)
    Q = rng.dirichlet(np.ones(V.shape[0]), size=X.shape[0])
    active = np.array([True, False, True, True])
    v_dense, g_dense = gating_objective_chunk(X, weight, Q, V, active, 0.3)
    v_sparse, g_sparse = gating_objective_chunk(rows, weight, Q, V, active, 0.3)
    assert v_sparse == pytest.approx(v_dense, rel=1e-5)
    np.testing.assert_allclose(g_sparse, g_dense, rtol=1e-4, atol=1e-4)


def test_kmeans_on_csr_rows_is_the_dense_kmeans():
    M, X, _ = _data(1500, 20, seed=3)
    rows = SparseRows.from_scipy(M)
    centers = np.random.default_rng(4).normal(size=(6, 20))
    labels, sq = assign_rows(rows, centers)
    labels_dense, sq_dense = assign_chunk(X, centers)
    np.testing.assert_array_equal(labels, labels_dense)
    np.testing.assert_allclose(sq, sq_dense, rtol=1e-5)
    weight = np.random.default_rng(5).uniform(0.5, 2, size=1500).astype(np.float32)
    c_dense, c_sparse = centers.copy(), centers.copy()
    n_dense, n_sparse = np.ones(6), np.ones(6)
    inertia = minibatch_rows(rows, weight, c_sparse, n_sparse)
    assert inertia == pytest.approx(minibatch_step(X, weight, c_dense, n_dense), rel=1e-5)
    np.testing.assert_allclose(c_sparse, c_dense, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(n_sparse, n_dense)
    std = Standardiser(np.zeros(20), np.linspace(0.5, 3.0, 20))
    np.testing.assert_allclose(
        streamed_kmeans(open_dataset(M, chunk_rows=300), 5, seed=2, standardiser=std),
        streamed_kmeans(open_dataset(X, chunk_rows=300), 5, seed=2, standardiser=std),
        rtol=1e-5, atol=1e-6)


def test_sparse_rows_are_scaled_never_centred():
    M, X, _ = _data(50, 6)
    std = Standardiser(X.mean(axis=0).astype(np.float64), X.std(axis=0).astype(np.float64))
    with pytest.raises(ValueError, match="centres"):
        std.apply(SparseRows.from_scipy(M))
    scaled = Standardiser(np.zeros(6), std.scale).apply(SparseRows.from_scipy(M))
    np.testing.assert_allclose(scaled.toarray(), X / std.scale, rtol=1e-6)


@pytest.mark.parametrize("em, atol", [("stochastic", 1e-6), ("batch", 1e-3)])
def test_sparse_fit_is_the_dense_fit_in_the_same_units(monkeypatch, em, atol):
    # sparse rows are scaled by each feature's largest absolute value, never centred; the
    # dense fit with that scale for its standardisation is the reference (the same steps,
    # only the zeros skipped)
    M, X, y = _data()
    units = np.ones(X.shape[1], dtype=np.float32)
    units[10:13], units[13:16] = 1000.0, 0.001  # six columns in units apart
    X = X * units
    M = sp.csr_matrix(X)
    sparse = MixtureSVC(em=em, C=0.2, random_state=0).fit(M, y)
    monkeypatch.setattr(Standardiser, "from_moments", classmethod(
        lambda cls, count, mean, m2, minimum, maximum: cls.of_units_apart(minimum, maximum)))
    dense = MixtureSVC(em=em, C=0.2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(sparse.shift_, 0.0)
    np.testing.assert_allclose(sparse.scale_, units_apart(X), rtol=1e-6)
    assert np.any(sparse.scale_ != 1.0) and np.any(sparse.scale_ == 1.0)
    np.testing.assert_allclose(sparse.scale_, dense.scale_, rtol=1e-12)
    np.testing.assert_allclose(sparse.decision_function(M), dense.decision_function(X),
                               rtol=atol, atol=atol)
    np.testing.assert_array_equal(sparse.predict(M), dense.predict(X))
    assert sparse.score(M, y) > 0.9


def test_kept_linear_svm_is_finished_on_sparse_rows_as_on_dense_ones(monkeypatch):
    # noisy linear labels on sparse indicator rows: the guard keeps its linear SVM, and
    # its finishing passes (scores over stored entries, dual coordinate descent on CSR
    # rows) give the dense fit's model in the same units
    rng = np.random.default_rng(0)
    M = sp.random(3000, 200, density=0.05, format="csr", random_state=rng, dtype=np.float32)
    M.data[:] = 1.0
    y = (M @ rng.normal(size=200) + rng.normal(0, 2.0, 3000) > 0).astype(int)
    sparse = MixtureSVC(C=0.05, random_state=0).fit(M, y)
    monkeypatch.setattr(Standardiser, "from_moments", classmethod(
        lambda cls, count, mean, *rest: cls.identity(len(mean))))
    dense = MixtureSVC(C=0.05, random_state=0).fit(M.toarray(), y)
    assert sparse.validation_["kept"] == dense.validation_["kept"] == "linear"
    assert sparse.validation_["duality_gap"] <= 0.01
    assert sparse.n_iter_ == dense.n_iter_
    np.testing.assert_allclose(sparse.decision_function(M),
                               dense.decision_function(M.toarray()), rtol=1e-6, atol=1e-6)


def test_auto_C_is_the_rule_on_the_scaled_rows():
    M, X, y = _data(seed=6)
    M = sp.csr_matrix(X * np.where(np.arange(X.shape[1]) < 3, 1000.0, 1.0).astype(np.float32))
    X = M.toarray()
    model = MixtureSVC(random_state=0, epochs=2).fit(M, y)
    X64 = X.astype(np.float64) / units_apart(X)  # as the model reads them
    expected = C_FACTOR / (np.mean(np.sum(X64 * X64, axis=1)) + float(model.bias_scale) ** 2)
    assert model.C_ == pytest.approx(expected, rel=1e-6)


def test_svmlight_file_trains_the_in_memory_model(tmp_path):
    M, _, y = _data(n=1200, seed=7)
    path = tmp_path / "train.svm"
    dump_svmlight_file(M, y, str(path), zero_based=True)
    from_file = MixtureSVC(random_state=0, epochs=3).fit(
        open_dataset(str(path), n_features=M.shape[1]))
    in_memory = MixtureSVC(random_state=0, epochs=3).fit(M, y)
    agree = (from_file.predict(M) == in_memory.predict(M)).mean()
    assert agree > 0.99
    assert from_file.score(open_dataset(str(path), n_features=M.shape[1])) > 0.9


def test_models_score_sparse_and_dense_rows_alike(tmp_path):
    M, X, y = _data(n=800, seed=8)
    for model, tol in ((MixtureSVC(random_state=0, epochs=2).fit(M, y), 1e-5),
                       (MixtureSVC(random_state=0, epochs=2).fit(X, y), 1e-12)):
        # a model trained on sparse rows scales sparse rows to float32 values first, dense
        # rows in the kernel
        np.testing.assert_allclose(model.decision_function(M), model.decision_function(X),
                                   rtol=tol, atol=tol)
    save_model(model, tmp_path / "m.slm")
    np.testing.assert_array_equal(load_model(tmp_path / "m.slm").predict_proba(M),
                                  model.predict_proba(M))


def test_partial_fit_on_sparse_rows_is_the_dense_partial_fit(monkeypatch, calls=3):
    # the reference: the same calls of the rows written out, standardised as sparse rows
    # are scaled (the first call is fit's stochastic pass, the later ones partial_pass)
    M, X, y = _data(n=3000, seed=11)
    units = np.ones(X.shape[1], dtype=np.float32)
    units[10:13] = 1000.0  # columns in units apart: a scale that is not 1
    X = X * units
    M = sp.csr_matrix(X)
    sparse = MixtureSVC(C=0.2, chunk_rows=500, random_state=0)
    for a in range(0, 1000 * calls, 1000):
        sparse.partial_fit(M[a:a + 1000], y[a:a + 1000], classes=[0, 1])
    monkeypatch.setattr(Standardiser, "from_moments", classmethod(
        lambda cls, count, mean, m2, minimum, maximum: cls.of_units_apart(minimum, maximum)))
    dense = MixtureSVC(C=0.2, chunk_rows=500, random_state=0)
    for a in range(0, 1000 * calls, 1000):
        dense.partial_fit(X[a:a + 1000], y[a:a + 1000], classes=[0, 1])
    assert np.all(sparse.scale_[10:13] > 100.0)
    np.testing.assert_allclose(sparse.scale_, dense.scale_, rtol=1e-12)
    np.testing.assert_allclose(sparse.decision_function(M), dense.decision_function(X),
                               atol=1e-4)
    assert sparse.score(M[2000:], y[2000:]) > 0.9


def test_partial_fit_refuses_sparse_rows_for_a_model_that_centres():
    M, X, y = _data(n=600)
    model = MixtureSVC(random_state=0).fit(X, y)  # standardised: centred
    before = model.expert_coef_.copy()
    with pytest.raises(ValueError, match="centres its features"):
        model.partial_fit(M, y)
    np.testing.assert_array_equal(model.expert_coef_, before)


def test_wide_sparse_rows_are_never_densified():
    # 200,000 columns: densified, the 3,000 rows would take 2.4 GB
    n, d, per_row = 3000, 200_000, 20
    rng = np.random.default_rng(9)
    indices = np.concatenate([rng.choice(d, per_row, replace=False) for _ in range(n)])
    y = rng.integers(0, 2, size=n)
    indices[::per_row] = y  # column 0 or 1 says the class
    M = sp.csr_array((rng.uniform(0.5, 1.5, size=n * per_row).astype(np.float32),
                      indices.astype(np.int32), np.arange(0, n * per_row + 1, per_row)),
                     shape=(n, d))
    tracemalloc.start()
    model = MixtureSVC(n_components=4, epochs=2, random_state=0).fit(M, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert model.score(M, y) > 0.95
    # centres, experts and their products: a few (k, d) and (d, 2k) arrays
    assert peak < 300 * 2**20


def test_sparse_fit_on_dask(dask_client):
    from streamlearn.engine import DaskEngine

    M, _, y = _data(seed=10)
    params = {"epochs": 3, "chunk_rows": 500, "random_state": 0}
    local = MixtureSVC(**params).fit(M, y)
    remote = MixtureSVC(**params).fit(M, y, engine=DaskEngine(dask_client))
    # parameter mixing of the partitions' stochastic EM is not the sequential walk
    assert remote.score(M, y) >= local.score(M, y) - 0.03
