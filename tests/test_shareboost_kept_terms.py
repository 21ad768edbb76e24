"""A corrective step keeps its chunks' terms (``StepTerms``) and learns what recomputing
them at every evaluation learns."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.datasets import make_classification

from streamlearn import LocalEngine, open_dataset
from streamlearn.data.chunk import Chunk
from streamlearn.features.anchors import AnchorPieces
from streamlearn.models.shareboost import ShareBoostClassifier
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.shareboost import passes
from streamlearn.solvers.shareboost.columns import AnchorColumns, LinearColumns
from streamlearn.solvers.shareboost.kernels import (
    ObjectiveRows,
    objective_rows_numpy,
    restricted_objective_chunk,
)
from streamlearn.solvers.shareboost.passes import (
    ChunkMemo,
    ColumnScorePass,
    RestrictedObjectivePass,
    StepTerms,
)
from tests.test_shareboost import _rho_minus_onehot


def _problem(n: int = 420, d: int = 6, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(n, d, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=seed)
    return X.astype(np.float32), y


def _fitted(model: ShareBoostClassifier) -> dict[str, np.ndarray]:
    return {name: np.asarray(getattr(model, name))
            for name in ("selected_features_", "coef_groups_", "intercept_")}


@pytest.mark.parametrize(("features", "n"), [("linear", 420), ("stumps", 420),
                                              ("anchors", 420), ("anchors", 4500)])
def test_fit_keeping_the_terms_is_the_fit_recomputing_them(features: str, n: int,
                                                            monkeypatch) -> None:
    # several chunks, held-out rows and sample weights: every path of the pass (half of
    # the rows held out, 210: one share, where a tenth would cross-fit five folds of the
    # same kind of passes); 4,500 rows are beyond the numpy paths: the kernels read the
    # kept gates, kept by their bytes
    X, y = _problem(n=n)
    assert passes.numpy_paths(n) == (n <= passes.NUMPY_ROWS)
    weight = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0])
    kw = dict(features=features, n_centres=8, chunk_rows=150 if n < 1000 else 1000,
              validation_fraction=0.5 if n < 1000 else 0.2, progress=False)
    kept = ShareBoostClassifier(**kw).fit(X, y, sample_weight=weight)
    monkeypatch.setattr(passes, "KEEP_TERMS_ROWS", -1)
    monkeypatch.setattr(passes, "KEEP_TERMS_BYTES", -1)
    assert not passes.keeps_step_terms(X.shape[0], 1)
    recomputed = ShareBoostClassifier(**kw).fit(X, y, sample_weight=weight)
    a, b = _fitted(kept), _fitted(recomputed)
    np.testing.assert_array_equal(a["selected_features_"], b["selected_features_"])
    for name in ("coef_groups_", "intercept_"):
        np.testing.assert_allclose(a[name], b[name], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kept.predict_proba(X), recomputed.predict_proba(X),
                               rtol=1e-12, atol=1e-14)


def test_pass_reads_kept_terms_and_keeps_one_per_chunk() -> None:
    X, y = _problem(n=500, d=5)
    dataset = open_dataset(X, target=y, chunk_rows=128)
    family = LinearColumns(np.full(5, 0.5), np.linspace(-0.2, 0.2, 5))
    selected = np.array([0, 2, 3], dtype=np.int64)
    coef = np.random.default_rng(1).normal(size=(3, 3, 1))
    intercept = np.array([0.1, -0.2, 0.05])
    holdout = Holdout.fraction(0.2, 7)
    engine = LocalEngine(progress=False)

    def run(kept: StepTerms | None) -> passes.ObjectiveState:
        return engine.run(RestrictedObjectivePass(family, selected, coef, intercept, holdout,
                                                  numpy=True, kept=kept), dataset)

    plain = run(None)
    kept = StepTerms()
    first, second = run(kept), run(kept)  # the second reads what the first kept
    assert len(kept) == 4  # 500 rows in chunks of 128
    for state in (first, second):
        assert (state.loss, state.weight, state.errors) == (plain.loss, plain.weight,
                                                            plain.errors)
        np.testing.assert_array_equal(state.gradient, plain.gradient)
        np.testing.assert_array_equal(state.intercept, plain.intercept)
    # the training rows' weight: those the holdout does not hold out
    assert plain.weight == pytest.approx(float(np.sum(~holdout.mask(np.arange(500)))))
    assert len(pickle.loads(pickle.dumps(kept))) == 0  # a copy starts empty


def test_chunks_of_rows_not_consecutive_are_not_kept() -> None:
    X, y = _problem(n=40, d=5)
    shuffled = Chunk(X, y.astype(np.int32), 0, index=np.arange(40)[::-1].copy())
    ordered = Chunk(X, y.astype(np.int32), 0)
    kept = StepTerms()
    kept.of(shuffled, None)
    assert len(kept) == 0
    terms = kept.of(ordered, None)
    assert len(kept) == 1 and kept.of(ordered, None) is terms
    np.testing.assert_array_equal(terms.codes, y)
    np.testing.assert_array_equal(terms.weight, np.ones(40))


def test_objective_rows_numpy_matches_the_kernel() -> None:
    # the kept rows' objective against the compiled kernel, with a row of weight zero
    rng = np.random.default_rng(5)
    n, T, k, q = 60, 4, 3, 2
    gates = (rng.random((n, T)) < 0.6).astype(np.float32)
    base = np.column_stack([rng.normal(size=n), np.ones(n)]).astype(np.float32)
    codes = rng.integers(0, k, n).astype(np.int32)
    weight = rng.uniform(0.5, 2.0, n).astype(np.float32)
    weight[7] = 0.0
    coef, intercept = rng.normal(size=(T, k, q)), rng.normal(size=k)
    grads = [(np.zeros((T, k, q)), np.zeros(k)) for _ in range(2)]
    ours = objective_rows_numpy(ObjectiveRows(gates, base, codes, weight), coef, intercept,
                                *grads[0])
    ref = restricted_objective_chunk(gates, base, codes, weight, coef, intercept, *grads[1])
    np.testing.assert_allclose(ours, ref, rtol=1e-10)
    for a, b in zip(grads[0], grads[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("n", "T", "q"), [(240, 4, 3), (900, 6, 1), (50, 1, 61)])
def test_serial_products_do_not_depend_on_the_blas_threads(n: int, T: int, q: int) -> None:
    # what serial_blas leaves without the one-thread limit computes the same bits on any
    # number of BLAS threads
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(n)
    k = 3
    coef, intercept = rng.normal(size=(T, k, q)), rng.normal(size=k)
    assert passes.serial_blas(n, coef)
    gates = (rng.random((n, T)) < 0.5).astype(np.float32)
    base = np.column_stack([rng.normal(size=(n, q - 1)), np.ones(n)]).astype(np.float32)
    rows = ObjectiveRows(gates, base, rng.integers(0, k, n).astype(np.int32),
                         rng.uniform(0.5, 2.0, n).astype(np.float32))
    results = []
    for threads in (1, 4):
        grads = (np.zeros((T, k, q)), np.zeros(k))
        with threadpool_limits(limits=threads, user_api="blas"):
            sums = objective_rows_numpy(rows, coef, intercept, *grads)
        results.append((np.array(sums), *grads))
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


def test_column_scores_read_the_kept_anchor_bins() -> None:
    # anchors' column scores of several chunks, with the bins kept from the first pass,
    # against the pass without them and against the scores of the materialised columns
    rng = np.random.default_rng(11)
    n, d, k, n_centres, n_radii = 600, 3, 3, 12, 4
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = rng.integers(0, k, size=n)
    dataset = open_dataset(X, target=y, chunk_rows=250)
    pieces = AnchorPieces.from_sample(rng.normal(size=(n_centres, d)), X[:300], n_radii,
                                      np.full(d, 0.5))
    family = AnchorColumns(pieces)
    selected = np.array([3, 17, 30])
    engine = LocalEngine(progress=False)
    bins = ChunkMemo()
    states = []
    for trial in range(3):  # other coefficients each time, the bins of the first pass
        coef = 0.3 * np.random.default_rng(trial).normal(size=(3, k, d + 1))
        intercept = np.random.default_rng(trial).normal(size=k)
        plain = engine.run(ColumnScorePass(family, selected, coef, intercept, numpy=True),
                           dataset)
        kept = engine.run(ColumnScorePass(family, selected, coef, intercept, numpy=True,
                                          bins=bins), dataset)
        assert len(bins) == 3  # 600 rows in chunks of 250
        np.testing.assert_array_equal(kept.gradient, plain.gradient)
        states.append((coef, intercept, kept))
    coef, intercept, state = states[-1]
    features = pieces.transform(X, selected).astype(np.float64)
    s = intercept + features @ coef.transpose(1, 0, 2).reshape(k, -1).T
    R = _rho_minus_onehot(s, y)  # the residuals of eq. 6
    every = pieces.transform(X, np.arange(n_centres * n_radii)).astype(np.float64)
    expected = np.abs(R.T @ every).reshape(k, n_centres * n_radii, d + 1).sum(axis=(0, 2))
    np.testing.assert_allclose(family.column_scores(state.gradient), expected, rtol=1e-4)
    # soft gates take the ramps' bins, which are not kept
    soft = AnchorColumns(AnchorPieces.from_sample(rng.normal(size=(n_centres, d)), X[:300],
                                                  n_radii, np.full(d, 0.5), gate_width=0.5))
    assert soft.histogram_bins(X) is None
