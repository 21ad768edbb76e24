"""What an additive model learned: each feature's term, and its curve on a grid."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from streamlearn.models import AdditiveSVC
from streamlearn.solvers.embedding import decision_ovr_chunk, embedding_params, feature_terms


def _problem(n: int, seed: int, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 3)).astype(np.float32)
    signal = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 - 1.3
    if k == 2:
        return X, (signal + 0.2 * rng.normal(size=n) > 0).astype(int)
    return X, np.digitize(signal, np.quantile(signal, np.linspace(0, 1, k + 1)[1:-1]))


@pytest.mark.parametrize("params", [
    {"embedding": "bspline", "degree": 3},
    {"embedding": "bspline", "degree": 2, "penalty_order": 2},
    {"embedding": "bspline", "zero_preserving": True},
    {"embedding": "fourier"},
    {"embedding": "hermite"},
    {"embedding": "linear"},
    {"embedding": "bspline", "multiclass": "ovo"},
])
def test_terms_add_up_to_the_svm_scores(params) -> None:
    k = 3 if params.get("multiclass") == "ovo" else 2
    X, y = _problem(1500, 0, k)
    if params.get("zero_preserving"):  # sparse non-negative inputs
        X = np.abs(X)
    # the per-feature model of each map (pairs' terms: tests/test_interactions.py); the
    # count of bases fixed, as 1,500 rows held out too few to choose it by before folds
    # chose (tests/test_additive_cross_fit.py)
    fixed = {"interactions": 0, "n_bases": 8} if params["embedding"] == "bspline" else {}
    model = AdditiveSVC(epochs=3, tol=None, progress=False, **fixed, **params).fit(X, y)
    terms = model.term_contributions(X[:200])
    assert terms.shape == (200, 3, model.n_models_)
    np.testing.assert_allclose(terms.sum(axis=1) + model.intercept_, model.svm_scores(X[:200]),
                               rtol=1e-6, atol=1e-8)


def test_feature_terms_kernel_against_materialised_blocks() -> None:
    # numpy reference: each feature's block of the materialised embedding times coef_
    X, y = _problem(800, 1)
    model = AdditiveSVC(degree=3, n_bases=8, interactions=0, epochs=2, tol=None,
                        progress=False).fit(X, y)
    emb = embedding_params(model.feature_map_, 3)
    Psi = model.feature_map_.transform(X[:50])
    coef = model.embedding_coef_
    n_cols = emb.n_cols
    blocks = [slice(f * n_cols, (f + 1) * n_cols) for f in range(3)]
    expected = np.stack([Psi[:, b] @ coef[:, b].T for b in blocks], axis=1)
    # the materialised embedding is float32: its entries carry a rounding of ~6e-8
    np.testing.assert_allclose(feature_terms(X[:50], model.coef_d_, *emb), expected,
                               rtol=1e-6, atol=1e-7)
    # and the blocks alone, without the bias, are the decision kernel's scores
    no_bias = model.coef_d_.copy()
    no_bias[:, -1] = 0.0
    np.testing.assert_allclose(expected.sum(axis=1),
                               decision_ovr_chunk(X[:50], no_bias, 0.0, *emb), rtol=1e-6,
                               atol=1e-7)


def test_linear_terms_are_weight_times_value_and_need_ranges() -> None:
    X, y = _problem(800, 2)
    model = AdditiveSVC(embedding="linear", epochs=3, tol=None, progress=False).fit(X, y)
    np.testing.assert_allclose(model.term_contributions(X[:20])[:, :, 0],
                               X[:20].astype(np.float64) * model.coef_[0], rtol=1e-6, atol=1e-9)
    # its describe pass (for the calibration rows) kept each feature's observed range
    observed = model.shape_functions(n_points=2)
    np.testing.assert_allclose(observed[observed.feature == "x1"].value,
                               [X[:, 1].min(), X[:, 1].max()], rtol=1e-6)
    # a fit that read no summary keeps none: the ranges must be given
    bare = AdditiveSVC(embedding="linear", epochs=3, tol=None, calibrate=False,
                       standardize=False, progress=False).fit(X, y)
    with pytest.raises(ValueError, match="ranges"):
        bare.shape_functions()
    table = model.shape_functions(n_points=5, ranges=[(-1, 1)] * 3)
    x0 = table[table.feature == "x0"]
    np.testing.assert_allclose(x0.contribution, model.embedding_coef_[0, 0] * np.linspace(-1, 1, 5),
                               rtol=1e-6)


def test_shape_functions_follow_the_true_curves() -> None:
    X, y = _problem(6000, 3)
    model = AdditiveSVC(degree=3, progress=False, random_state=0).fit(X, y)
    table = model.shape_functions(n_points=50)
    assert list(table.columns) == ["feature", "value", "model", "contribution"]
    assert len(table) == 3 * 50 and set(table.model) == {1}
    curve = table[table.feature == "x0"]
    grid = curve.value.to_numpy()
    lo, hi = model.feature_map_.lo_[0], model.feature_map_.hi_[0]
    assert grid[0] == pytest.approx(lo, rel=1e-6) and grid[-1] == pytest.approx(hi, rel=1e-6)
    # the curves are the model's terms at those points, and follow the true ones
    assert np.corrcoef(curve.contribution, np.sin(2 * grid))[0, 1] > 0.95
    x1 = table[table.feature == "x1"]
    assert np.corrcoef(x1.contribution, x1.value.to_numpy() ** 2)[0, 1] > 0.95
    x2 = table[table.feature == "x2"]  # noise: a flat curve
    assert np.ptp(x2.contribution) < 0.2 * np.ptp(curve.contribution)


def test_shape_functions_of_categories_and_classes_survive_a_model_file(tmp_path) -> None:
    rng = np.random.default_rng(4)
    colours = np.array(list("abcd"))
    code = rng.integers(0, 4, 3000)
    frame = pd.DataFrame({"colour": pd.Categorical(colours[code], categories=colours),
                          "x": rng.normal(size=3000)})
    y = (np.array([1.5, -1.5, 0.5, -0.5])[code] + frame.x > 0).astype(int) + (code == 3)
    model = AdditiveSVC(degree=1, n_bases=6, progress=False, random_state=0).fit(frame, y)
    table = model.shape_functions(n_points=7)
    colour = table[table.feature == "colour"]
    assert list(colour.value[colour.model == 0]) == list("abcd")
    assert set(table.model) == {0, 1, 2} and len(table[table.feature == "x"]) == 3 * 7
    loaded = AdditiveSVC.load(model.save(tmp_path / "m.slm"))
    pd.testing.assert_frame_equal(loaded.shape_functions(n_points=7), table)
    with pytest.raises(ValueError, match="n_points"):
        model.shape_functions(n_points=1)
    with pytest.raises(ValueError, match="ranges"):
        model.shape_functions(ranges=[(0, 1)])


@pytest.mark.parametrize("params", [{"degree": 3}, {"embedding": "fourier"},
                                    {"embedding": "linear"}, {"multiclass": "ovo"}])
def test_feature_importances_are_the_centred_mean_absolute_terms(params) -> None:
    # at most 4,096 rows: the describe pass's sample holds every row, so the importances
    # equal the same statistic computed from term_contributions over all the rows
    k = 3 if params.get("multiclass") == "ovo" else 2
    X, y = _problem(3000, 5, k)
    model = AdditiveSVC(progress=False, random_state=0, **params).fit(X, y)
    terms = model.term_contributions(X)  # the features' terms, then any pairs'
    expected = np.abs(terms - terms.mean(axis=0)).mean(axis=(0, 2))
    found = np.concatenate([model.feature_importances_,
                            getattr(model, "interaction_importances_", [])])
    np.testing.assert_allclose(found, expected, rtol=1e-5)
    if params.get("embedding") != "linear":  # a line cannot follow x1^2: both curves count
        assert model.feature_importances_[2] < 0.3 * model.feature_importances_[:2].min()


def test_no_importances_without_a_describe_pass_and_partial_fit_takes_its_rows() -> None:
    X, y = _problem(500, 6)
    linear = AdditiveSVC(embedding="linear", calibrate=False, standardize=False,
                         progress=False).fit(X, y)
    assert not hasattr(linear, "feature_importances_")
    fitted = AdditiveSVC(progress=False).fit(X, y)
    assert fitted.feature_importances_.shape == (3,)
    # partial_fit changes the model: its importances are taken again, over its rows
    before = fitted.feature_importances_.copy()
    fitted.partial_fit(X[:50], y[:50])
    terms = fitted.term_contributions(X[:50])
    expected = np.abs(terms - terms.mean(axis=0)).mean(axis=0).mean(axis=-1)
    np.testing.assert_allclose(fitted.feature_importances_, expected[:3], rtol=1e-6)
    assert not np.allclose(fitted.feature_importances_, before)
