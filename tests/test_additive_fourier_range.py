"""AdditiveSVC(embedding="fourier") tells a feature's two ends apart (paper 000, Table 1).

The trigonometric basis is periodic; with a feature's range mapped to the whole period its
curves took the same value at both ends, so a 0/1 feature was ignored and a monotone effect
wrapped around. The range is now the middle half of the period.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np
from sklearn.linear_model import LogisticRegression

from streamlearn.features.fourier import HALF_WIDTH, WHOLE_PERIOD, FourierMap
from streamlearn.models import AdditiveSVC


def _binary_problem(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The label is one 0/1 feature, flipped on 10 % of the rows; three noise features."""
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 2, n)
    X = np.column_stack([b, rng.normal(size=(n, 3))])
    return X, np.where(rng.random(n) < 0.9, b, 1 - b)


def _linear_problem(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (n, 3))
    return X, (X.sum(axis=1) + 0.2 * rng.normal(size=n) > 1.5).astype(np.int64)


def test_a_zero_one_feature_is_learned_as_logistic_regression_learns_it():
    X, y = _binary_problem(1600, 0)
    Xt, yt, Xs, ys = X[:1000], y[:1000], X[1000:], y[1000:]
    model = AdditiveSVC(embedding="fourier").fit(Xt, yt)
    assert isinstance(model.feature_map_, FourierMap)
    reference = LogisticRegression().fit(Xt, yt).score(Xs, ys)  # about 0.9
    assert model.score(Xs, ys) >= reference - 0.02  # was 0.5: both values embedded alike


def test_a_monotone_effect_gives_a_curve_whose_ends_differ():
    X, y = _linear_problem(1500, 1)
    model = AdditiveSVC(embedding="fourier").fit(X[:1000], y[:1000])
    reference = LogisticRegression().fit(X[:1000], y[:1000]).score(X[1000:], y[1000:])
    assert model.score(X[1000:], y[1000:]) >= reference - 0.03
    shapes = model.shape_functions(n_points=9)
    for name in shapes.feature.unique():
        curve = shapes[shapes.feature == name].sort_values("value").contribution.to_numpy()
        span = curve.max() - curve.min()
        # the curve rises from lo to hi, nearly its whole span (it was back at its start
        # at hi: the same value at both ends)
        assert curve[-1] - curve[0] > 0.8 * span


def _closed_form_scores(model: AdditiveSVC, X: np.ndarray, half_width: float) -> np.ndarray:
    """w . Psi(x) + b with Psi by numpy: cos, sin(k pi t) / k^d, t from -h at lo to h at hi."""
    fmap = model.feature_map_
    x = np.clip(X, fmap.lo_, fmap.hi_)
    t = half_width * (2.0 * (x - fmap.lo_) / (fmap.hi_ - fmap.lo_) - 1.0)
    k = np.arange(1, fmap.n_terms + 1)
    angle = np.pi * t[:, :, None] * k
    cols = np.stack([np.cos(angle), np.sin(angle)], axis=-1) / (k**fmap.penalty_order)[:, None]
    Phi = cols.reshape(X.shape[0], -1)
    return Phi @ model.embedding_coef_.T + model.intercept_


def _without_half_width(path, out) -> int:
    """Copy a model file, removing every Fourier map's half_width_ from its learned state:
    the file a version before the half period wrote. Returns how many were removed."""
    removed = 0

    def strip(node):
        nonlocal removed
        if isinstance(node, dict):
            if str(node.get("$object", "")).endswith(":FourierMap"):
                removed += node["attrs"].pop("half_width_", None) is not None
            for value in node.values():
                strip(value)
        elif isinstance(node, list):
            for value in node:
                strip(value)

    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "metadata.json":
                header = json.loads(data)
                strip(header["metadata"]["learned"])
                data = json.dumps(header).encode()
            dst.writestr(item, data)
    return removed


def test_a_model_file_saved_before_the_half_period_predicts_as_it_did(tmp_path):
    X, y = _linear_problem(600, 2)
    model = AdditiveSVC(embedding="fourier", n_terms=3, calibrate=False).fit(X, y)
    path = model.save(tmp_path / "new.slm")
    assert model.feature_map_.half_width_ == HALF_WIDTH
    new = AdditiveSVC.load(path)
    np.testing.assert_allclose(
        new.svm_scores(X)[:, 0], _closed_form_scores(model, X, HALF_WIDTH)[:, 0], atol=1e-4
    )
    assert _without_half_width(path, tmp_path / "old.slm") >= 1
    old = AdditiveSVC.load(tmp_path / "old.slm")
    assert old.feature_map_.half_width_ == WHOLE_PERIOD
    # its weights read through the whole period, the scaling they were trained with
    expected = _closed_form_scores(old, X, WHOLE_PERIOD)[:, 0]
    np.testing.assert_allclose(old.svm_scores(X)[:, 0], expected, atol=1e-4)
    np.testing.assert_array_equal(old.predict(X), np.where(expected > 0, *old.classes_[::-1]))
    # saved again, it stays an old map
    again = AdditiveSVC.load(old.save(tmp_path / "again.slm"))
    np.testing.assert_array_equal(again.svm_scores(X), old.svm_scores(X))
