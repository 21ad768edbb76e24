"""Property tests: feature-map identities and model files, over generated cases.

Each property is checked against a fact that holds by construction, not against the code's
own output: B-spline bases of the D0 map form a partition of unity (clamped outside the fitted
range), the Psi(0) = 0 variants embed a zero input to an all-zero block, and a model written to
disk and read back predicts exactly what it predicted before it was written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from streamlearn.features import BSplineMap, FourierMap, HermiteMap
from streamlearn.models import AdditiveSVC

finite = st.floats(-1e4, 1e4, allow_nan=False, width=32)


@settings(max_examples=60, deadline=None)
@given(degree=st.integers(1, 3), n_bases=st.integers(4, 40),
       lo=st.floats(-100, 100, allow_nan=False), width=st.floats(1e-2, 1e3),
       X=arrays(np.float32, st.tuples(st.integers(1, 20), st.integers(1, 4)), elements=finite))
def test_bspline_d0_bases_are_a_partition_of_unity(degree: int, n_bases: int, lo: float,
                                                    width: float, X: np.ndarray) -> None:
    n_bases = max(n_bases, degree + 1)
    d = X.shape[1]
    lo, hi = np.float32(lo), np.float32(lo + width)  # ends the float32 inputs can hit exactly
    bmap = BSplineMap(degree, n_bases, 0).fit(np.full(d, lo), np.full(d, hi))
    blocks = bmap.transform(X).reshape(X.shape[0], d, n_bases)
    assert np.all(blocks >= 0)
    np.testing.assert_allclose(blocks.sum(axis=2), 1.0, atol=1e-5)
    assert np.all((blocks > 0).sum(axis=2) <= degree + 1)
    # outside the fitted range the bases are those of the nearest end
    clamped = np.clip(X, lo, hi)
    np.testing.assert_allclose(bmap.transform(clamped), bmap.transform(X), atol=1e-6)


def _zero_preserving_map(kind: str, degree: int, order: int, d: int):
    if kind == "bspline":
        return BSplineMap(degree, 8, order, True).fit(np.zeros(d), np.full(d, 5.0))
    if kind == "fourier":
        return FourierMap(3, min(order, 2) or 1, True).fit(np.zeros(d), np.full(d, 5.0))
    return HermiteMap(4, min(order, 2) or 1, True).fit(np.full(d, 1.0), np.full(d, 1.5))


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["bspline", "fourier", "hermite"]), degree=st.integers(1, 3),
       order=st.integers(0, 2),
       X=arrays(np.float32, st.tuples(st.integers(1, 12), st.integers(1, 5)),
                elements=st.one_of(st.just(0.0), st.floats(0, 5, width=32))))
def test_psi_of_zero_is_zero(kind: str, degree: int, order: int, X: np.ndarray) -> None:
    fmap = _zero_preserving_map(kind, degree, order, X.shape[1])
    n_cols = fmap.n_columns_per_feature
    blocks = fmap.transform(X).reshape(X.shape[0], X.shape[1], n_cols)
    np.testing.assert_array_equal(blocks[X == 0], 0.0)
    indptr, indices, _ = fmap.transform_csr(X)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(indptr))
    assert np.all(X[rows, indices // n_cols] != 0), "a zero input stored an entry"


def _problem(seed: int, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    score = X[:, 0] ** 2 - X[:, 1] + 0.3 * rng.normal(size=400)
    edges = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
    return X, np.array(["a", "b", "c"])[np.digitize(score, edges)]


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(embedding=st.sampled_from(["linear", "bspline", "fourier", "hermite"]),
       degree=st.integers(1, 3), penalty=st.sampled_from([None, 0, 1, 2]),
       solver=st.sampled_from(["pegasos", "dcd"]), n_classes=st.integers(2, 3),
       seed=st.integers(0, 1000))
def test_loaded_model_predicts_what_the_saved_one_did(tmp_path: Path, embedding: str,
                                                      degree: int, penalty: int | None,
                                                      solver: str, n_classes: int,
                                                      seed: int) -> None:
    if embedding in ("fourier", "hermite") and penalty == 0:
        penalty = 1
    X, y = _problem(seed, n_classes)
    model = AdditiveSVC(embedding=embedding, degree=degree, n_bases=6, penalty_order=penalty,
                        solver=solver, epochs=2, chunk_rows=128, random_state=seed,
                        progress=False).fit(X, y)
    path = model.save(tmp_path / f"m-{seed}-{embedding}-{solver}.slm")
    loaded = AdditiveSVC.load(path)
    X_new = np.random.default_rng(seed + 1).normal(size=(50, 3)).astype(np.float32) * 2
    np.testing.assert_array_equal(loaded.decision_function(X_new), model.decision_function(X_new))
    np.testing.assert_array_equal(loaded.predict_proba(X_new), model.predict_proba(X_new))
    np.testing.assert_array_equal(loaded.predict(X_new), model.predict(X_new))
    assert set(loaded.predict(X_new)) <= set(y)
