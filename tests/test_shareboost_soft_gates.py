"""ShareBoost anchors with soft-edged gates (``gate="soft"``) against numpy and scipy."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from streamlearn import LocalEngine, open_dataset
from streamlearn.errors import CheckpointError
from streamlearn.features.anchors import AnchorPieces, soft_gates
from streamlearn.models.shareboost import (
    AnchorColumns,
    ColumnScorePass,
    ShareBoostClassifier,
)
from streamlearn.solvers.shareboost import columns as columns_module
from streamlearn.solvers.shareboost.kernels import (
    anchor_ramp_histogram_chunk,
    anchor_ramp_histogram_numpy,
)


def _direct_dist2(X: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Squared distances by differences, in float64."""
    diff = X.astype(np.float64)[:, None, :] - centres.astype(np.float64)[None, :, :]
    return (diff ** 2).sum(axis=2)


def _ramp(dist2: np.ndarray, radii2: np.ndarray, width: float) -> np.ndarray:
    """The soft gate by interpolation between the ramp's ends (1 at the inner end, 0 at
    the outer), per piece."""
    out = np.empty_like(dist2)
    for t, r2 in enumerate(radii2):
        out[:, t] = np.interp(dist2[:, t], [r2 * (1 - width / 2), r2 * (1 + width / 2)],
                              [1.0, 0.0])
    return out


def _pieces(seed: int = 0, width: float = 0.6) -> tuple[np.ndarray, AnchorPieces]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    pieces = AnchorPieces.from_sample(rng.normal(size=(9, 3)), X[:1000], 5, np.full(3, 0.5),
                                      gate_width=width)
    return X, pieces


def test_soft_gates_against_numpy_reference() -> None:
    X, pieces = _pieces()
    centres = pieces.centres[[1, 4, 7]]
    radii = pieces.radii[[1, 4, 7], [0, 2, 4]]
    gates = pieces.gates(X, centres, radii)
    expected = _ramp(_direct_dist2(X, centres), radii ** 2, 0.6)
    assert gates.dtype == np.float32
    # float32 distances by a matrix product: about 1e-7 of ||x||^2 + ||c||^2 over w r^2
    np.testing.assert_allclose(gates, expected, atol=2e-5)
    # every regime occurs: inside, on the ramp, outside
    assert (expected == 1).any() and (expected == 0).any()
    assert ((expected > 0.05) & (expected < 0.95)).mean() > 0.05
    # the gates of one centre grow with the radius, as its balls are nested
    every = pieces.gates(X, np.repeat(pieces.centres[:1], 5, axis=0), pieces.radii[0])
    assert np.all(np.diff(every, axis=1) >= 0)
    # materialised features: each gate times the linear part
    features = pieces.transform(X, np.array([1 * 5 + 0, 4 * 5 + 2]))
    base = (X.astype(np.float64) * 0.5)
    np.testing.assert_allclose(features[:, :3], expected[:, :1] * base, atol=2e-5)
    np.testing.assert_allclose(features[:, 7], expected[:, 1], atol=2e-5)


def test_narrow_ramp_is_the_hard_ball() -> None:
    X, hard = _pieces(width=0.0)
    _, narrow = _pieces(width=1e-9)
    centres, radii = hard.centres[[0, 3, 8]], hard.radii[[0, 3, 8], [4, 1, 2]]
    dist2 = _direct_dist2(X, centres)
    inside = (dist2 < radii ** 2).astype(np.float32)
    clear = np.abs(dist2 - radii ** 2) > 1e-4 * radii ** 2  # off the edge's rounding
    assert clear.mean() > 0.99 and inside.any() and (inside == 0).any()
    for pieces in (hard, narrow):
        np.testing.assert_array_equal(pieces.gates(X, centres, radii)[clear], inside[clear])
    # the formula itself at the edge (1/2) and beyond
    np.testing.assert_array_equal(
        soft_gates(np.array([[0.0, 0.75, 0.875, 1.0, 1.25, 2.0]], dtype=np.float32),
                   np.ones(6), 0.5), [[1.0, 1.0, 0.75, 0.5, 0.0, 0.0]])


def smooth_problem(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two classes split by a smooth curve in the plane."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    y = (np.sin(3.0 * X[:, 0]) + X[:, 1] ** 2 - 0.5 > 0.5 * X[:, 1]).astype(int)
    return X, y


def _rho_minus_onehot(scores: np.ndarray, y: np.ndarray) -> np.ndarray:
    n, k = scores.shape
    onehot = np.eye(k)[y]
    z = (1.0 - onehot) - scores[np.arange(n), y][:, None] + scores
    z -= z.max(axis=1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True) - onehot


def _softmax_loss(scores: np.ndarray, y: np.ndarray) -> np.ndarray:
    onehot = np.eye(scores.shape[1])[y]
    z = (1.0 - onehot) - scores[np.arange(len(y)), y][:, None] + scores
    return np.logaddexp.reduce(z, axis=1)


def test_soft_fit_reaches_the_optimum_on_the_ramp_features() -> None:
    """The streamed corrective step with soft gates minimises the loss of the features
    built from the numpy ramp; the soft and hard fits differ, and soft edges fit the smooth
    boundary better on new rows."""
    X, y = smooth_problem(1000, 0)
    X_test, y_test = smooth_problem(3000, 1)
    l2, k = 1e-3, 2
    params = {"n_rounds": 5, "features": "anchors", "n_centres": 12, "n_radii": 5,
              "l2": l2, "refit_iter": 400, "tol": 1e-9, "chunk_rows": 1000}
    soft = ShareBoostClassifier(gate="soft", gate_width=0.6, **params).fit(X, y)
    hard = ShareBoostClassifier(**params).fit(X, y)
    assert soft.family_.pieces.gate_width == 0.6 and hard.family_.pieces.gate_width == 0.0
    pieces = soft.family_.pieces
    c, j = np.divmod(soft.selected_features_, pieces.n_radii)
    gates = _ramp(_direct_dist2(pieces.measured(X), pieces.placed(pieces.centres[c])),
                  pieces.radii[c, j] ** 2, 0.6)
    base = np.hstack([(X.astype(np.float64) - pieces.shift) * pieces.scale,
                      np.ones((len(y), 1))])
    Z = (gates[:, :, None] * base[:, None, :]).reshape(len(y), -1)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        W, b = theta[:-k].reshape(k, -1), theta[-k:]
        s = Z @ W.T + b
        R = _rho_minus_onehot(s, y) / len(y)
        value = _softmax_loss(s, y).mean() + l2 * np.sum(W * W)
        return value, np.concatenate([(R.T @ Z + 2 * l2 * W).ravel(), R.sum(axis=0)])

    ref = minimize(objective, np.zeros(k * Z.shape[1] + k), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 20000})
    assert soft.path_["loss"][-1] == pytest.approx(ref.fun, rel=1e-5)
    # the model's scores are those of the ramp features
    W = soft.column_coef_
    np.testing.assert_allclose(soft.decision_function(X),
                               (Z @ W.T + soft.intercept_) @ [-1.0, 1.0], atol=1e-4)
    assert soft.path_["loss"][-1] != pytest.approx(hard.path_["loss"][-1], rel=1e-3)
    assert soft.score(X_test, y_test) > hard.score(X_test, y_test)


def test_soft_candidates_are_scored_by_their_ramps() -> None:
    """The column-score pass of a soft model, split between threads or in numpy: every
    candidate's soft gate times the residuals of the soft model's gates, summed."""
    X, y = smooth_problem(6000, 2)
    pieces = AnchorPieces.from_sample(X[::90], X[:800], 4, np.ones(2), gate_width=0.6)
    family = AnchorColumns(pieces)
    selected = np.array([3, 17])
    rng = np.random.default_rng(3)
    coef, intercept = 0.5 * rng.normal(size=(2, 2, 3)), rng.normal(size=2)
    c, j = np.divmod(selected, 4)
    gates = _ramp(_direct_dist2(X, pieces.centres[c]), pieces.radii[c, j] ** 2, 0.6)
    base = np.hstack([X.astype(np.float64), np.ones((len(y), 1))])
    s = intercept + (gates[:, :, None] * base[:, None, :]).reshape(len(y), -1) \
        @ coef.transpose(1, 0, 2).reshape(2, -1).T
    R = _rho_minus_onehot(s, y)
    every = _ramp(np.repeat(_direct_dist2(X, pieces.centres), 4, axis=1),
                  pieces.radii.ravel() ** 2, 0.6)
    expected = np.abs(np.einsum("it,if,ic->tfc", every, base, R)).sum(axis=(1, 2))
    assert not np.allclose(expected, np.abs(np.einsum(
        "it,if,ic->tfc", (every > 0.5).astype(np.float64), base, R)).sum(axis=(1, 2)),
        rtol=1e-2)  # the ramps score otherwise than the balls
    data = open_dataset(X, target=y, chunk_rows=6000)
    for numpy in (False, True):  # the kernel in two threads, the numpy twin
        state = LocalEngine(chunk_rows=6000).run(
            ColumnScorePass(family, selected, coef, intercept, numpy=numpy), data)
        np.testing.assert_allclose(family.column_scores(state.gradient), expected,
                                   rtol=2e-4)
    # a narrow ramp scores as the hard ball
    scores = []
    for width in (0.0, 1e-9):
        narrow = AnchorColumns(AnchorPieces(pieces.centres, pieces.radii, pieces.scale,
                                            gate_width=width))
        state = LocalEngine(chunk_rows=6000).run(
            ColumnScorePass(narrow, selected[:0], coef[:0], intercept), data)
        scores.append(narrow.column_scores(state.gradient))
    np.testing.assert_allclose(scores[1], scores[0], rtol=1e-5)


def test_ramp_histogram_kernel_and_numpy_against_direct_sums() -> None:
    rng = np.random.default_rng(7)
    n, n_centres, q, k = 700, 5, 3, 2
    dist2 = rng.uniform(0, 4, size=(n, n_centres)).astype(np.float32)
    base = rng.normal(size=(n, q)).astype(np.float32)
    residuals = rng.normal(size=(n, k))
    bounds2 = np.sort(rng.uniform(0.2, 3.0, size=(n_centres, 6)), axis=1)
    bounds2[1, 2] = bounds2[1, 1]  # a repeated bound: an empty bin
    expected = np.zeros((n_centres, 6, 2, q, k))
    for v in range(n_centres):
        edges = np.concatenate([[0.0], bounds2[v]])
        for b in range(6):
            rows = (dist2[:, v] >= edges[b]) & (dist2[:, v] < edges[b + 1])
            tile = base[rows, :, None].astype(np.float64) * residuals[rows, None, :]
            expected[v, b, 0] = tile.sum(axis=0)
            expected[v, b, 1] = ((dist2[rows, v] - edges[b])[:, None, None] * tile).sum(0)
    for histogram in (anchor_ramp_histogram_chunk, anchor_ramp_histogram_numpy):
        out = np.zeros((n_centres, 6, 2, q, k), dtype=np.float32)
        histogram(dist2, base, residuals, bounds2, out)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_soft_model_file_round_trip_and_old_files_load_hard(tmp_path: Path) -> None:
    X, y = smooth_problem(800, 4)
    params = {"n_rounds": 4, "features": "anchors", "n_centres": 8, "n_radii": 4,
              "refit_iter": 40, "chunk_rows": 400}
    soft = ShareBoostClassifier(gate="soft", gate_width=0.4, **params).fit(X, y)
    loaded = ShareBoostClassifier.load(soft.save(tmp_path / "soft.slm"))
    np.testing.assert_array_equal(loaded.decision_function(X), soft.decision_function(X))
    assert loaded.get_params()["gate"] == "soft" and loaded.family_.pieces.gate_width == 0.4
    arrays = columns_module.family_from_arrays("anchors", soft.family_.arrays())
    np.testing.assert_array_equal(arrays.gates(X, soft.selected_features_),
                                  soft.family_.gates(X, soft.selected_features_))
    # a file written before the option: no gate parameters, pieces without a width
    hard = ShareBoostClassifier(**params).fit(X, y)
    path = hard.save(tmp_path / "hard.slm")
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    header = json.loads(members["metadata.json"])
    for name in ("gate", "gate_width"):
        del header["metadata"]["params"][name]
    text = json.dumps(header)
    assert text.count('"gate_width"') == 1  # the pieces' field
    members["metadata.json"] = text.replace('"gate_width": 0.0, ', "").replace(
        ', "gate_width": 0.0', "").encode()
    assert b'"gate_width"' not in members["metadata.json"]
    old = tmp_path / "old.slm"
    with zipfile.ZipFile(old, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    restored = ShareBoostClassifier.load(old)
    assert restored.get_params()["gate"] == "hard"
    assert restored.family_.pieces.gate_width == 0.0
    np.testing.assert_array_equal(restored.decision_function(X), hard.decision_function(X))


class Crash(Exception):
    pass


def test_soft_fit_resumes_from_checkpoint_and_the_gate_is_fingerprinted(
        tmp_path: Path) -> None:
    X, y = smooth_problem(600, 5)
    params = {"n_rounds": 3, "features": "anchors", "n_centres": 8, "n_radii": 4,
              "refit_iter": 5, "tol": 0.05, "chunk_rows": 200, "gate": "soft"}
    reference = ShareBoostClassifier(**params).fit(X, y)
    engine = LocalEngine(chunk_rows=200)
    plain, seen = engine.run, [0]

    def run(pass_, data, *, on_chunk=None, **options):
        def hook(done, state):
            seen[0] += 1
            if seen[0] == 40:
                raise Crash
            if on_chunk is not None:
                on_chunk(done, state)
        return plain(pass_, data, on_chunk=hook, **options)

    engine.run = run
    path = tmp_path / "checkpoint"
    with pytest.raises(Crash):
        ShareBoostClassifier(**params).fit(X, y, engine=engine, checkpoint=path,
                                           checkpoint_every=1)
    with pytest.raises(CheckpointError):
        ShareBoostClassifier(**{**params, "gate": "hard"}).fit(X, y, checkpoint=path)
    resumed = ShareBoostClassifier(**params).fit(X, y, checkpoint=path, checkpoint_every=1)
    np.testing.assert_array_equal(resumed.selected_features_, reference.selected_features_)
    np.testing.assert_array_equal(resumed.coef_groups_, reference.coef_groups_)
    np.testing.assert_array_equal(resumed.decision_function(X),
                                  reference.decision_function(X))


@pytest.mark.parametrize("bad", [{"gate": "fuzzy"}, {"gate_width": 0.0},
                                 {"gate_width": 2.5}, {"gate_width": -0.1}])
def test_gate_parameters_are_validated(bad: dict) -> None:
    X, y = smooth_problem(200, 6)
    name = next(iter(bad))
    with pytest.raises(ValueError, match=f"'{name}' parameter of ShareBoostClassifier"):
        ShareBoostClassifier(features="anchors", n_rounds=1, **bad).fit(X, y)
