"""The linear model on sparse rows, or keeping zeros, trains on each feature over its
largest absolute value: its units no longer decide how much the penalty holds it back."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import MaxAbsScaler

from streamlearn import AdditiveSVC, open_dataset
from streamlearn.solvers.kmeans import Standardiser


def sparse_problem(seed: int = 0) -> tuple[sp.csr_matrix, np.ndarray]:
    """4,000 rows of 12 sparse features; the label reads four of them."""
    rng = np.random.default_rng(seed)
    X = sp.random(4000, 12, density=0.3, format="csr", random_state=seed,
                  dtype=np.float32)
    X.data = rng.normal(size=X.nnz).astype(np.float32)
    dense = X.toarray()
    score = dense[:, 0] - dense[:, 1] + 0.5 * dense[:, 2] - dense[:, 3]
    return X, (score + 0.3 * rng.normal(size=4000) > 0).astype(np.int64)


#: Units from 1e-3 to 1e4: one feature in thousands beside one in thousandths.
UNITS = np.array([1e3, 1e-3, 1.0, 50.0, 0.2, 1e4, 1.0, 3.0, 1e-2, 1.0, 7.0, 1.0],
                 dtype=np.float32)


def test_from_max_abs_matches_scikit_learns_max_abs_scaler() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 5)) * np.array([1e3, 1.0, 1e-3, 0.0, 5.0])
    X[:, 4] = -np.abs(X[:, 4])  # largest absolute value from the minimum
    s = Standardiser.from_max_abs(X.min(axis=0), X.max(axis=0))
    reference = MaxAbsScaler().fit(X).scale_
    np.testing.assert_allclose(s.scale, reference, rtol=1e-12)
    assert s.scale[3] == 1.0  # a column of zeros keeps the scale 1
    assert not np.any(s.shift) and s.keeps_zeros
    Z = s.apply(sp.csr_matrix(X.astype(np.float32)).toarray())
    np.testing.assert_allclose(Z, MaxAbsScaler().fit_transform(X), rtol=1e-6, atol=1e-7)


def test_sparse_linear_fit_does_not_depend_on_the_features_units() -> None:
    X, y = sparse_problem()
    scaled = (X @ sp.diags(UNITS)).tocsr().astype(np.float32)
    plain = AdditiveSVC(embedding="linear", progress=False).fit(X[:3000], y[:3000])
    units = AdditiveSVC(embedding="linear", progress=False).fit(scaled[:3000], y[:3000])
    np.testing.assert_allclose(units.decision_function(scaled[3000:]),
                               plain.decision_function(X[3000:]), rtol=1e-3, atol=1e-3)
    assert units.score(scaled[3000:], y[3000:]) > 0.8


def test_sparse_linear_fit_is_the_fit_on_max_abs_scaled_rows() -> None:
    # the same model as scikit-learn's MaxAbsScaler in front of the unscaled fit
    X, y = sparse_problem(2)
    X = (X @ sp.diags(UNITS)).tocsr().astype(np.float32)
    ours = AdditiveSVC(embedding="linear", progress=False).fit(X, y)
    scaler = MaxAbsScaler().fit(X)
    Z = scaler.transform(X).astype(np.float32)
    reference = AdditiveSVC(embedding="linear", standardize=False, progress=False).fit(Z, y)
    np.testing.assert_allclose(ours.decision_function(X), reference.decision_function(Z),
                               rtol=1e-3, atol=1e-3)
    # coef_ is in the features' own units
    np.testing.assert_allclose(ours.coef_, reference.coef_ / scaler.scale_, rtol=1e-3,
                               atol=1e-6)


def test_the_scale_was_what_decided_before() -> None:
    # without the scale (standardize=False) the same rows give a worse model: the check
    # above is not vacuous
    X, y = sparse_problem()
    scaled = (X @ sp.diags(UNITS)).tocsr().astype(np.float32)
    kept = AdditiveSVC(embedding="linear", progress=False).fit(scaled[:3000], y[:3000])
    raw = AdditiveSVC(embedding="linear", standardize=False, progress=False).fit(
        scaled[:3000], y[:3000])
    assert kept.score(scaled[3000:], y[3000:]) > raw.score(scaled[3000:], y[3000:]) + 0.05


def test_dense_zero_preserving_linear_fit_keeps_zeros_and_drops_units() -> None:
    X, y = sparse_problem(3)
    dense = X.toarray()
    a = AdditiveSVC(embedding="linear", zero_preserving=True, progress=False).fit(dense, y)
    b = AdditiveSVC(embedding="linear", zero_preserving=True, progress=False).fit(
        dense * UNITS, y)
    np.testing.assert_allclose(b.decision_function(dense * UNITS), a.decision_function(dense),
                               rtol=1e-3, atol=1e-3)
    # the sparse fit of the same rows is the same model
    s = AdditiveSVC(embedding="linear", progress=False).fit(X, y)
    np.testing.assert_allclose(s.decision_function(X), a.decision_function(dense),
                               rtol=1e-3, atol=1e-3)


def test_a_sparse_fit_without_a_describe_pass_reads_the_rows_once_an_epoch() -> None:
    X, y = sparse_problem()
    m = AdditiveSVC(embedding="linear", calibrate=False, tol=None, epochs=2,
                    progress=False).fit(X, y)
    assert m.n_passes_ == 2


def test_a_centring_transform_of_sparse_rows_is_refused() -> None:
    X, y = sparse_problem()
    ds = open_dataset(X, target=y)
    with pytest.raises(ValueError, match="send 0 to 0"):
        ds.with_feature_transform(Standardiser(np.ones(12), np.ones(12)))
    scaled = ds.with_feature_transform(Standardiser(np.zeros(12), np.full(12, 2.0)))
    chunk = next(iter(scaled.chunks()))
    np.testing.assert_allclose(chunk.X.values, X[:chunk.X.n_rows].data / 2.0, rtol=1e-6)
