"""AdditiveSVC on sparse rows: the same model as on the dense rows, refusals before reading."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from streamlearn import open_dataset
from streamlearn.errors import DataError
from streamlearn.io.model_file import load_model, save_model
from streamlearn.models import AdditiveSVC, SparseJSBoostClassifier


def _data(n: int = 1500, d: int = 40, classes: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    M = sp.random(n, d, density=0.15, format="csr", random_state=seed, dtype=np.float64)
    X = M.toarray()
    score = np.sin(4 * X[:, 0]) + X[:, 1] ** 2 + X[:, 2] + 0.2 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return M, X, y


@pytest.mark.parametrize("params", [
    {"embedding": "linear"},
    {"embedding": "linear", "solver": "dcd"},
    {"embedding": "bspline"},
    {"embedding": "bspline", "solver": "dcd", "degree": 3},
])
def test_sparse_fit_is_the_dense_fit(params):
    # the dense rows with the zero-preserving map are the reference: the same map, the
    # same steps, only the zeros skipped
    M, X, y = _data()
    sparse = AdditiveSVC(random_state=0, epochs=3, tol=None, **params).fit(M, y)
    dense = AdditiveSVC(random_state=0, epochs=3, tol=None, zero_preserving=True,
                        **params).fit(X, y)
    np.testing.assert_allclose(sparse.coef_d_, dense.coef_d_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sparse.decision_function(M), dense.decision_function(X),
                               rtol=1e-9, atol=1e-9)
    # computed another way: each stored entry's term alone, against the dense embedding
    np.testing.assert_allclose(sparse.feature_importances_, dense.feature_importances_,
                               rtol=1e-7, atol=1e-12)
    assert sparse.feature_map_ is None or sparse.feature_map_.zero_preserving
    assert sparse.interaction_check_["kept"] is False
    # a sparse model scores dense rows and sparse rows alike
    np.testing.assert_allclose(sparse.decision_function(X), sparse.decision_function(M),
                               rtol=1e-12, atol=1e-12)


def test_sparse_multiclass_matches_dense():
    M, X, y = _data(classes=3, seed=1)
    sparse = AdditiveSVC(random_state=0, epochs=2, tol=None).fit(sp.csc_array(M), y)
    dense = AdditiveSVC(random_state=0, epochs=2, tol=None, zero_preserving=True).fit(X, y)
    np.testing.assert_allclose(sparse.predict_proba(M), dense.predict_proba(X), atol=1e-9)
    assert (sparse.predict(M) == dense.predict(X)).all()
    assert sparse.score(M, y) > 0.5


def test_svmlight_file_trains_the_in_memory_model(tmp_path):
    M, _, y = _data(n=800, seed=2)
    path = tmp_path / "train.svm"
    dump_svmlight_file(M, y, str(path), zero_based=True)
    from_file = AdditiveSVC(random_state=0, epochs=2, tol=None).fit(
        open_dataset(str(path), n_features=M.shape[1]))
    in_memory = AdditiveSVC(random_state=0, epochs=2, tol=None).fit(M.astype(np.float32), y)
    # the file holds the values printed to float precision and back
    np.testing.assert_allclose(from_file.decision_function(M),
                               in_memory.decision_function(M), rtol=1e-5, atol=1e-5)


def test_dense_model_scores_sparse_rows():
    M, X, y = _data(seed=3)
    model = AdditiveSVC(random_state=0, epochs=2, tol=None, interactions=0).fit(X, y)
    assert not model.feature_map_.zero_preserving
    np.testing.assert_allclose(model.decision_function(M), model.decision_function(X),
                               rtol=1e-12, atol=1e-12)


def test_a_matrix_of_other_width_is_refused_as_scikit_learn_refuses_it():
    """A scipy matrix says its width: fewer columns than the model's are refused (the
    missing ones would be taken as zeros, silently), as a dense array of that width is;
    the SparseRows of a file whose largest index is smaller still read as zeros there."""
    from streamlearn.data.sparse_rows import SparseRows
    from streamlearn.errors import SchemaError

    M, X, y = _data(seed=3)
    model = AdditiveSVC(random_state=0, epochs=2, tol=None, interactions=0).fit(X, y)
    narrow = sp.csr_matrix(M)[:, :-1]
    with pytest.raises(SchemaError, match=f"X has {M.shape[1] - 1} features, but "
                                          f"AdditiveSVC is expecting {M.shape[1]}"):
        model.predict(narrow)
    with pytest.raises(SchemaError):
        model.predict(X[:, :-1])
    zeroed = sp.csr_matrix(M).tolil()
    zeroed[:, -1] = 0
    rows = SparseRows.from_scipy(narrow.tocsr())
    np.testing.assert_array_equal(model.predict(rows), model.predict(zeroed.tocsr()))


def test_model_file_round_trip(tmp_path):
    M, _, y = _data(seed=4)
    model = AdditiveSVC(random_state=0, epochs=2, tol=None).fit(M, y)
    save_model(model, tmp_path / "m.slm")
    loaded = load_model(tmp_path / "m.slm")
    np.testing.assert_array_equal(loaded.decision_function(M), model.decision_function(M))


@pytest.mark.parametrize("params, message", [
    ({"embedding": "fourier"}, "embedding='fourier'"),
    ({"zero_preserving": False}, "zero_preserving=False"),
    ({"interactions": 2}, "interactions"),
    ({"online": False}, "online=False"),
])
def test_refused_before_reading(params, message, monkeypatch):
    M, _, y = _data(n=200)
    read = []
    monkeypatch.setattr("streamlearn.data.dataset.Dataset._sparse_chunk",
                        lambda *a, **k: read.append(1))
    model = AdditiveSVC(**params)
    assert not model.__sklearn_tags__().input_tags.sparse
    with pytest.raises(ValueError, match=message):
        model.fit(M, y)
    assert not read
    assert AdditiveSVC().__sklearn_tags__().input_tags.sparse


def test_values_of_both_signs_train_on_stored_entries_alone():
    """Zero sits on a knot of a feature of both signs: the sparse fit is the dense
    zero-preserving fit, and a curve even in x (out of a linear model's reach) is learned."""
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(7)
    M = sp.random(2000, 30, density=0.2, format="csr", random_state=7, dtype=np.float64)
    M.data = rng.normal(size=M.nnz)
    X = M.toarray()
    y = (np.abs(X[:, 0]) + np.abs(X[:, 1]) > 0.8).astype(int)
    sparse = AdditiveSVC(random_state=0, epochs=3, tol=None).fit(M[:1500], y[:1500])
    dense = AdditiveSVC(random_state=0, epochs=3, tol=None, zero_preserving=True).fit(
        X[:1500], y[:1500])
    assert sparse.feature_map_.zero_preserving and (sparse.feature_map_.lo_ < 0).all()
    np.testing.assert_allclose(sparse.coef_d_, dense.coef_d_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sparse.decision_function(M), dense.decision_function(X),
                               rtol=1e-9, atol=1e-9)
    linear = LinearSVC().fit(M[:1500], y[:1500]).score(M[1500:], y[1500:])
    assert sparse.score(M[1500:], y[1500:]) > max(0.9, linear + 0.1)


def test_other_models_refuse_sparse_rows():
    M, _, y = _data(n=200)
    with pytest.raises(TypeError, match="[Ss]parse"):
        SparseJSBoostClassifier().fit(M, y)
    with pytest.raises(TypeError, match="sparse"):
        SparseJSBoostClassifier().fit(open_dataset(M, target=y))
    with pytest.raises(ValueError, match="partial_fit was given sparse rows: embedding="):
        AdditiveSVC(embedding="fourier").partial_fit(M, y)


def test_nan_in_stored_values():
    M, _, y = _data(n=300)
    M = M.copy()
    M.data[3] = np.nan
    with pytest.raises(DataError, match="NaN"):
        AdditiveSVC(epochs=1).fit(M, y)
    model = AdditiveSVC(epochs=1).fit(M, y, nan_policy="drop")
    assert model.n_train_ + model.n_calibration_ == 299


class Crash(Exception):
    pass


def _crashing_engine(after: int):
    """A LocalEngine that raises once ``after`` chunks have been stepped (over all passes)."""
    from streamlearn.engine import LocalEngine

    engine = LocalEngine(chunk_rows=250)
    plain, seen = engine.run, [0]

    def run(pass_, data, *, on_chunk=None, **options):
        def hook(done, state):
            seen[0] += 1
            if seen[0] == after:
                raise Crash
            if on_chunk is not None:
                on_chunk(done, state)

        return plain(pass_, data, on_chunk=hook, **options)

    engine.run = run
    return engine


@pytest.mark.parametrize("solver", ["pegasos", "dcd"])
def test_sparse_fit_killed_resumes_to_the_same_model(tmp_path, solver):
    M, _, y = _data(seed=5)
    params = {"solver": solver, "epochs": 2, "tol": None, "chunk_rows": 250,
              "random_state": 0}
    reference = AdditiveSVC(**params).fit(M, y)
    for after in (4, 9, 15):  # 6 chunks a pass: describe, epochs, calibration
        path = tmp_path / f"{solver}-{after}"
        with pytest.raises(Crash):
            AdditiveSVC(**params).fit(M, y, engine=_crashing_engine(after), checkpoint=path,
                                      checkpoint_every=2)
        resumed = AdditiveSVC(**params).fit(M, y, checkpoint=path, checkpoint_every=2)
        np.testing.assert_array_equal(resumed.coef_d_, reference.coef_d_)
        np.testing.assert_array_equal(resumed.platt_b_, reference.platt_b_)


def test_sparse_fit_on_dask_is_the_dense_fit_on_dask(dask_client):
    # parameter mixing over the workers' partitions: the dense zero-preserving fit with the
    # same partitions is the reference
    from streamlearn.engine import DaskEngine

    M, X, y = _data(seed=6)
    params = {"epochs": 2, "tol": None, "chunk_rows": 250, "random_state": 0}
    sparse = AdditiveSVC(**params).fit(M, y, engine=DaskEngine(dask_client))
    dense = AdditiveSVC(zero_preserving=True, **params).fit(X, y,
                                                            engine=DaskEngine(dask_client))
    np.testing.assert_allclose(sparse.coef_d_, dense.coef_d_, rtol=1e-9, atol=1e-12)
    assert sparse.score(M, y) > 0.7
