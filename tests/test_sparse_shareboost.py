"""ShareBoostClassifier with linear columns on sparse rows: the kernels against numpy, the
same model as on the dense rows, from every sparse source, and refusals before reading."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from streamlearn import open_dataset
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.io.model_file import load_model, save_model
from streamlearn.models import ShareBoostClassifier
from streamlearn.solvers.shareboost.kernels import (
    linear_gates_chunk,
    linear_gates_csr,
    linear_gradient_chunk,
    linear_gradient_csr,
)


def _data(n: int = 1200, d: int = 60, classes: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    M = sp.random(n, d, density=0.1, format="csr", random_state=seed, dtype=np.float64)
    M.data = (M.data * 4 - 1).astype(np.float32)  # signed values
    X = M.toarray().astype(np.float32)
    score = X[:, :4].sum(axis=1) - X[:, 4:8].sum(axis=1) + 0.3 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return M.astype(np.float32), X, y


def _shuffled_rows(M: sp.csr_matrix, seed: int) -> SparseRows:
    # the same rows with every row's entries in a random order (CSR does not sort them)
    rows = SparseRows.from_scipy(M)
    rng = np.random.default_rng(seed)
    indices, values = rows.indices.copy(), rows.values.copy()
    for r in range(rows.n_rows):
        lo, hi = rows.indptr[r], rows.indptr[r + 1]
        order = lo + rng.permutation(hi - lo)
        indices[lo:hi], values[lo:hi] = rows.indices[order], rows.values[order]
    return SparseRows(rows.indptr, indices, values, rows.n_cols)


def test_gradient_kernel_over_csr_rows_is_numpy_and_the_dense_kernel():
    M, X, _ = _data(n=300, d=25)
    rng = np.random.default_rng(1)
    residuals = rng.normal(size=(300, 4))
    scale = rng.uniform(0.5, 2.0, size=25)
    got = np.zeros((25, 4))
    linear_gradient_csr(*_shuffled_rows(M, 2).kernel_args, residuals, scale, got)
    expected = (X.astype(np.float64) * scale).T @ residuals
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    dense = np.zeros((25, 4))
    linear_gradient_chunk(X, residuals, scale, dense)
    np.testing.assert_array_equal(got, dense)  # the same sums in the same order


def test_gates_of_csr_rows_are_numpy_columns():
    M, X, _ = _data(n=200, d=30)
    scale = np.random.default_rng(3).uniform(0.1, 3.0, size=30)
    features = np.array([7, 0, 29, 7, 12, 3], dtype=np.int64)  # unsorted, one repeated
    got = linear_gates_csr(*_shuffled_rows(M, 4).kernel_args, features, scale)
    expected = (X[:, features].astype(np.float64) * scale[features]).astype(np.float32)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, linear_gates_chunk(X, features, scale))


# the rounds and l2 chosen by folds (1,200 rows) and fixed ones; linear columns, the family
# sparse rows train (the dense defaults would also try stumps and anchors, 3x the time,
# and keep linear columns here)
@pytest.mark.parametrize("params", [{"features": "linear"},
                                    {"features": "linear", "n_rounds": 6, "l2": 0.001}])
def test_sparse_fit_is_the_dense_fit(params):
    M, X, y = _data()
    sparse = ShareBoostClassifier(**params).fit(M, y)
    dense = ShareBoostClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(sparse.selected_features_, dense.selected_features_)
    assert sparse.l2_ == pytest.approx(dense.l2_, rel=1e-12)
    np.testing.assert_allclose(sparse.coef_groups_, dense.coef_groups_, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(sparse.decision_function(M), dense.decision_function(X),
                               rtol=1e-9, atol=1e-12)
    _assert_same_temperature(sparse, dense)
    np.testing.assert_allclose(sparse.predict_proba(M), dense.predict_proba(X),
                               rtol=_proba_rtol(sparse), atol=1e-12)
    # a model scores sparse and dense rows alike, whichever it was trained on
    np.testing.assert_array_equal(sparse.decision_function(X), sparse.decision_function(M))
    np.testing.assert_array_equal(dense.decision_function(sp.csc_array(M)),
                                  dense.decision_function(X))
    assert sparse.score(M, y) > 0.6  # three classes: chance is 1/3


def test_a_column_without_stored_values_trains_without_warnings():
    """A sparse column never set (a hash bucket no name falls in) has no range: it fits
    quietly, the same model as the dense rows with that column all zeros."""
    M, X, y = _data(n=300, d=12)
    M = M.tolil()
    M[:, 5] = 0
    M = M.tocsr()
    M.eliminate_zeros()
    X[:, 5] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        sparse = ShareBoostClassifier().fit(M, y)
    dense = ShareBoostClassifier().fit(X, y)
    np.testing.assert_array_equal(sparse.selected_features_, dense.selected_features_)
    np.testing.assert_allclose(sparse.decision_function(M), dense.decision_function(X),
                               rtol=1e-9, atol=1e-12)
    _assert_same_temperature(sparse, dense)
    np.testing.assert_allclose(sparse.predict_proba(M), dense.predict_proba(X),
                               rtol=_proba_rtol(sparse), atol=1e-12)


def _proba_rtol(model: ShareBoostClassifier) -> float:
    # cross-fitted (fewer than 2,000 rows), the temperature comes from the folds' fits,
    # run to the solver's tolerance: sums over sparse and dense rows round apart and the
    # fits stop at points a gradient of tol apart (held-out losses 1e-7 apart)
    return 1e-4 if model.proba_rows_ == "cross-fitted" else 1e-9


def _assert_same_temperature(sparse: ShareBoostClassifier,
                             dense: ShareBoostClassifier) -> None:
    assert sparse.proba_rows_ == dense.proba_rows_
    assert sparse.proba_scale_ == pytest.approx(dense.proba_scale_, rel=_proba_rtol(sparse))


def test_auto_l2_is_the_mean_squared_scaled_norm_over_all_rows():
    M, X, y = _data(n=600, seed=5)
    model = ShareBoostClassifier(validation_fraction=None).fit(M, y)
    z = X.astype(np.float64) / np.abs(X).max(axis=0)
    from streamlearn.solvers.shareboost.driver import L2_FACTOR

    expected = L2_FACTOR * np.mean(np.sum(z * z, axis=1)) / 600
    assert model.l2_ == pytest.approx(expected, rel=1e-9)


def test_svmlight_file_and_zarr_store_train_the_in_memory_model(tmp_path):
    from streamlearn.data.convert import convert

    M, _, y = _data(n=800, seed=6)
    path = tmp_path / "train.svm"
    dump_svmlight_file(M, y, str(path), zero_based=True)
    in_memory = ShareBoostClassifier(n_rounds=8).fit(M, y)
    from_file = ShareBoostClassifier(n_rounds=8).fit(
        open_dataset(str(path), n_features=M.shape[1]))
    store = tmp_path / "train.zarr"
    convert(open_dataset(str(path), n_features=M.shape[1]), str(store), layout="sparse")
    from_store = ShareBoostClassifier(n_rounds=8).fit(open_dataset(str(store)))
    for model in (from_file, from_store):
        # the file holds the values printed to float precision and back
        np.testing.assert_array_equal(model.selected_features_,
                                      in_memory.selected_features_)
        np.testing.assert_allclose(model.predict_proba(M), in_memory.predict_proba(M),
                                   rtol=1e-4, atol=1e-5)
    # predictions streamed over the file
    assert from_file.score(open_dataset(str(path), n_features=M.shape[1])) == \
        pytest.approx(in_memory.score(M, y), abs=0.01)


def test_wide_sparse_rows_are_never_densified():
    # a million columns: densified, the 3,000 rows alone would take 12 GB
    n, d = 3000, 1_000_000
    rng = np.random.default_rng(7)
    per_row = 20
    indices = np.concatenate([rng.choice(d, per_row, replace=False) for _ in range(n)])
    informative = rng.integers(0, 2, size=n)
    indices[::per_row] = informative  # column 0 or 1 in every row says the class
    values = rng.uniform(0.5, 1.5, size=n * per_row).astype(np.float32)
    M = sp.csr_array((values, indices.astype(np.int32),
                      np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    y = informative
    tracemalloc.start()
    model = ShareBoostClassifier(n_rounds=2).fit(M, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert set(model.selected_features_.tolist()) <= {0, 1}
    assert model.score(M, y) == 1.0
    # the model's gradient matrix (d x 2 doubles, 16 MB) and a few more vectors of d
    assert peak < 200 * 2**20


def test_stumps_and_anchors_refuse_sparse_rows_before_reading(monkeypatch):
    M, _, y = _data(n=200)
    read = []
    monkeypatch.setattr("streamlearn.data.dataset.Dataset._sparse_chunk",
                        lambda *a, **k: read.append(1))
    for features in ("stumps", "anchors"):
        with pytest.raises(TypeError, match="features='linear'"):
            ShareBoostClassifier(features=features).fit(M, y)
        with pytest.raises(TypeError, match="features='linear'"):
            ShareBoostClassifier(features=features).fit(open_dataset(M, target=y))
    assert not read


def test_dense_stump_model_scores_sparse_rows():
    M, X, y = _data(n=400, seed=8)
    model = ShareBoostClassifier(features="stumps", n_rounds=5, l2=0.01).fit(X, y)
    np.testing.assert_array_equal(model.decision_function(M), model.decision_function(X))


def test_model_file_round_trip(tmp_path):
    M, _, y = _data(seed=9)
    model = ShareBoostClassifier(n_rounds=5).fit(M, y)
    save_model(model, tmp_path / "m.slm")
    loaded = load_model(tmp_path / "m.slm")
    np.testing.assert_array_equal(loaded.predict_proba(M), model.predict_proba(M))


def test_sparse_fit_on_dask_is_the_local_fit(dask_client):
    from streamlearn.engine import DaskEngine

    M, _, y = _data(seed=10)
    params = {"n_rounds": 5, "l2": 0.001, "chunk_rows": 250}
    remote = ShareBoostClassifier(**params).fit(M, y, engine=DaskEngine(dask_client))
    local = ShareBoostClassifier(**params).fit(M, y)
    np.testing.assert_array_equal(remote.selected_features_, local.selected_features_)
    # the partitions' sums are added in another order (as for dense rows on dask)
    np.testing.assert_allclose(remote.predict_proba(M), local.predict_proba(M), rtol=1e-4,
                               atol=1e-6)
