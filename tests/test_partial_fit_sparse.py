"""``AdditiveSVC.partial_fit`` on sparse rows: the out-of-core pattern of scikit-learn's
``HashingVectorizer`` and ``SGDClassifier.partial_fit``, each stored value costing its bases
and each zero nothing."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from streamlearn import AdditiveSVC, DataError
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.engine.moments import sparse_chunk_moments


def sparse_problem(n: int = 4000, d: int = 12, seed: int = 0
                   ) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, format="csr", random_state=seed, dtype=np.float32)
    X.data = rng.normal(size=X.nnz).astype(np.float32)
    dense = X.toarray()
    return X, (np.sin(2 * dense[:, 0]) + dense[:, 1] ** 2 - 0.3 > 0).astype(np.int64)


def in_calls(model: AdditiveSVC, X: object, y: np.ndarray, size: int = 400,
             **kwargs: object) -> AdditiveSVC:
    for a in range(0, y.shape[0], size):
        model.partial_fit(X[a:a + size], y[a:a + size], classes=[0, 1], **kwargs)
    return model


def test_sparse_column_moments_match_numpy_on_the_dense_rows() -> None:
    X, _ = sparse_problem(500, 6)
    X = X.tolil()
    X[:, 4] = 0  # a column of no stored value
    X[:, 5] = 3.0  # a column stored in every row: no zero
    X = X.tocsr()
    X.eliminate_zeros()
    rows = SparseRows(X.indptr.astype(np.int64), X.indices.astype(np.int32),
                      X.data.astype(np.float32), X.shape[1])
    n, mean, m2, lo, hi = sparse_chunk_moments(*rows.kernel_args, rows.n_cols)
    std = np.sqrt(m2 / n)
    dense = X.toarray().astype(np.float64)
    np.testing.assert_allclose(lo, dense.min(axis=0))
    np.testing.assert_allclose(hi, dense.max(axis=0))
    np.testing.assert_allclose(mean, dense.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(std, dense.std(axis=0), atol=1e-9)
    assert lo[5] == 3.0 and hi[4] == 0.0


@pytest.mark.parametrize("params", [{"embedding": "linear"}, {}])
def test_sparse_calls_train_the_model_dense_calls_train(params: dict) -> None:
    # the reference: the same calls of the same rows, densified, with zero_preserving=True
    X, y = sparse_problem()
    sparse = in_calls(AdditiveSVC(progress=False, **params), X[:3000], y[:3000])
    dense = in_calls(AdditiveSVC(zero_preserving=True, progress=False, **params),
                     X[:3000].toarray(), y[:3000])
    np.testing.assert_allclose(sparse.coef_d_, dense.coef_d_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sparse.decision_function(X[3000:]),
                               dense.decision_function(X[3000:].toarray()), atol=1e-6)
    assert sparse.n_train_ == dense.n_train_ == 3000
    np.testing.assert_allclose(sparse.feature_importances_, dense.feature_importances_,
                               rtol=1e-6, atol=1e-12)
    if params.get("embedding") != "linear":  # the curves see what a line cannot
        assert sparse.score(X[3000:], y[3000:]) > 0.85


def test_hashed_text_trains_by_partial_fit() -> None:
    from sklearn.feature_extraction.text import HashingVectorizer

    rng = np.random.default_rng(3)
    good, bad, filler = ["fine", "great", "superb"], ["awful", "poor", "broken"], [
        "the", "a", "it", "was", "and", "item", "box", "day"]
    docs, labels = [], []
    for _ in range(2000):
        label = int(rng.integers(2))
        words = list(rng.choice(filler, 6)) + list(rng.choice(good if label else bad, 2))
        docs.append(" ".join(words))
        labels.append(label)
    vectorizer = HashingVectorizer(n_features=2**12, alternate_sign=False)
    y = np.array(labels)
    model = AdditiveSVC(embedding="linear", progress=False)
    for a in range(0, 1500, 100):
        model.partial_fit(vectorizer.transform(docs[a:a + 100]), y[a:a + 100], classes=[0, 1])
    assert model.n_features_in_ == 2**12
    assert model.score(vectorizer.transform(docs[1500:]), y[1500:]) > 0.95


def test_rows_of_weight_zero_are_no_rows() -> None:
    X, y = sparse_problem()
    w = np.where(np.arange(4000) % 3 == 0, 0.0, 1.0)
    weighted = in_calls(AdditiveSVC(progress=False), X, y, sample_weight=None)
    kept = np.flatnonzero(w > 0)
    with_zeros = AdditiveSVC(progress=False)
    without = AdditiveSVC(progress=False)
    for a in range(0, 4000, 400):
        part = np.arange(a, a + 400)
        with_zeros.partial_fit(X[part], y[part], classes=[0, 1], sample_weight=w[part])
        rest = part[w[part] > 0]
        without.partial_fit(X[rest], y[rest], classes=[0, 1])
    np.testing.assert_allclose(with_zeros.coef_d_, without.coef_d_, rtol=1e-6, atol=1e-9)
    assert with_zeros.n_train_ == kept.size < weighted.n_train_


def test_values_outside_the_first_calls_range_grow_the_map_as_dense_rows_do() -> None:
    X, y = sparse_problem()
    far = X[1000:2000].copy()
    far.data = far.data * 10  # most stored values beyond the first call's range
    sparse = AdditiveSVC(progress=False).partial_fit(X[:1000], y[:1000], classes=[0, 1])
    dense = AdditiveSVC(zero_preserving=True, progress=False).partial_fit(
        X[:1000].toarray(), y[:1000], classes=[0, 1])
    first_hi = sparse.feature_map_.hi_.copy()
    sparse.partial_fit(far, y[1000:2000])
    dense.partial_fit(far.toarray(), y[1000:2000])
    assert np.all(sparse.feature_map_.hi_ >= far.max(axis=0).toarray().ravel() - 1e-6)
    assert np.all(sparse.feature_map_.hi_ > first_hi)
    np.testing.assert_allclose(sparse.feature_map_.lo_, dense.feature_map_.lo_)
    np.testing.assert_allclose(sparse.feature_map_.hi_, dense.feature_map_.hi_)
    np.testing.assert_allclose(sparse.coef_d_, dense.coef_d_, rtol=1e-6, atol=1e-9)


def test_with_a_feature_range_values_outside_are_clamped_with_a_warning() -> None:
    X, y = sparse_problem()
    model = AdditiveSVC(feature_range=(-1.0, 1.0), progress=False)
    with pytest.warns(UserWarning, match="outside the feature map's range"):
        model.partial_fit(X[:1000], y[:1000], classes=[0, 1])
    model.partial_fit(X[1000:2000], y[1000:2000])  # warned once a feature
    assert np.all(model.feature_map_.hi_ == 1.0)  # clamped, not grown


def test_sparse_rows_the_model_cannot_take_are_refused_before_a_step() -> None:
    X, y = sparse_problem(600)
    with pytest.raises(ValueError, match="zero_preserving=False costs every feature"):
        AdditiveSVC(zero_preserving=False).partial_fit(X, y)
    dense_made = AdditiveSVC(progress=False).partial_fit(X.toarray(), y)
    before = dense_made.coef_d_.copy()
    with pytest.raises(ValueError, match="made for dense rows"):
        dense_made.partial_fit(X, y)
    np.testing.assert_array_equal(dense_made.coef_d_, before)
    bad = X.copy()
    bad.data[7] = np.nan
    with pytest.raises(DataError, match="nan in feature 'x7'"):
        AdditiveSVC(progress=False).partial_fit(bad, y)
    started = AdditiveSVC(progress=False).partial_fit(X, y)
    with pytest.raises(ValueError, match="12 features"):
        started.partial_fit(X[:, :5], y)
