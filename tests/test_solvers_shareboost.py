"""ShareBoost kernels (paper 003) against direct numpy computations on small arrays."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.data import Chunk
from streamlearn.features.anchors import AnchorPieces, squared_distances
from streamlearn.solvers.shareboost import (
    ANCHOR_TILE_ROWS,
    anchor_gradients,
    anchor_histogram_chunk,
    decision_chunk,
    exp_lanes,
    linear_gates_chunk,
    linear_gradient_chunk,
    linear_margin_residuals_chunk,
    linear_objective_chunk,
    margin_residuals_chunk,
    padded_thresholds,
    restricted_objective_chunk,
    single_column_objective_chunk,
    stump_gates_chunk,
    stump_gradients,
    stump_histogram_chunk,
    stump_objective_chunk,
    stump_tables,
)
from streamlearn.solvers.shareboost import columns as columns_module
from streamlearn.solvers.shareboost import kernels as kernels_module
from streamlearn.solvers.shareboost import passes as passes_module
from streamlearn.solvers.shareboost.columns import AnchorColumns, LinearColumns
from streamlearn.solvers.shareboost.kernels import (
    anchor_histogram_numpy,
    decision_numpy,
    linear_gates_numpy,
    margin_residuals_numpy,
    restricted_objective_numpy,
    stump_gates_numpy,
)
from streamlearn.solvers.shareboost.passes import (
    ColumnScorePass,
    linear_column_statistics,
    restricted_objective,
)
from streamlearn.solvers.vector_exp import MIN_LENGTH

N, T, K, Q = 60, 4, 3, 2


@pytest.fixture(scope="module")
def problem() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    gates = rng.normal(size=(N, T)).astype(np.float32)
    gates[rng.random((N, T)) < 0.3] = 0.0  # inactive groups are skipped by the kernels
    weight = rng.uniform(0.5, 2.0, size=N).astype(np.float32)
    weight[::7] = 0.0  # held-out rows: skipped by the kernels, zero residuals
    return {
        "gates": gates,
        "base": rng.normal(size=(N, Q)).astype(np.float32),
        "codes": rng.integers(0, K, size=N).astype(np.int32),
        "weight": weight,
        "coef": rng.normal(size=(T, K, Q)),
        "intercept": rng.normal(size=K),
    }


def _scores(p: dict[str, np.ndarray], coef: np.ndarray | None = None) -> np.ndarray:
    coef = p["coef"] if coef is None else coef
    g, a = p["gates"].astype(np.float64), p["base"].astype(np.float64)
    return p["intercept"] + np.einsum("ij,jcf,if->ic", g, coef, a)


def _loss_and_residuals(s: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 3 per row, and ``rho - e_y`` with ``rho`` of eq. 6."""
    n, k = s.shape
    onehot = np.eye(k)[codes]
    z = (1.0 - onehot) - s[np.arange(n), codes][:, None] + s
    loss = np.log(np.exp(z).sum(axis=1))
    rho = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return loss, rho - onehot


def test_decision_chunk(problem) -> None:
    p = problem
    out = decision_chunk(p["gates"], p["base"], p["coef"], p["intercept"])
    np.testing.assert_allclose(out, _scores(p), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("lanes", [False, True])
def test_restricted_objective_matches_numpy_and_finite_differences(problem, lanes: bool) -> None:
    # with scratch for the exponentials the soft-max takes them in SIMD lanes, whatever k
    p = problem
    s = _scores(p)
    loss, R = _loss_and_residuals(s, p["codes"])
    w = p["weight"].astype(np.float64)
    grad_coef = np.zeros_like(p["coef"])
    grad_b = np.zeros(K)
    value, wsum, errors = restricted_objective_chunk(
        p["gates"], p["base"], p["codes"], p["weight"], p["coef"], p["intercept"],
        grad_coef, grad_b, np.empty(K) if lanes else None)
    assert value == pytest.approx(float(w @ loss), rel=1e-12)
    assert wsum == pytest.approx(float(w.sum()), rel=1e-12)
    assert errors == pytest.approx(float(w @ (s.argmax(axis=1) != p["codes"])), rel=1e-12)
    wR = w[:, None] * R
    expected = np.einsum("ij,ic,if->jcf", p["gates"].astype(np.float64), wR,
                         p["base"].astype(np.float64))
    np.testing.assert_allclose(grad_coef, expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(grad_b, wR.sum(axis=0), rtol=1e-10, atol=1e-10)
    # the gradient is the derivative of the loss (central differences on two entries)
    for index in [(0, 1, 0), (3, 2, 1)]:
        h = 1e-6
        plus, minus = p["coef"].copy(), p["coef"].copy()
        plus[index] += h
        minus[index] -= h
        fd = (w @ _loss_and_residuals(_scores(p, plus), p["codes"])[0]
              - w @ _loss_and_residuals(_scores(p, minus), p["codes"])[0]) / (2 * h)
        assert grad_coef[index] == pytest.approx(fd, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("lanes", [False, True])
def test_margin_residuals(problem, lanes: bool) -> None:
    p = problem
    s = _scores(p)
    loss, R = _loss_and_residuals(s, p["codes"])
    w = p["weight"].astype(np.float64)
    out, value, wsum, errors = margin_residuals_chunk(
        p["gates"], p["base"], p["codes"], p["weight"], p["coef"], p["intercept"],
        np.empty(K) if lanes else None)
    np.testing.assert_allclose(out, w[:, None] * R, rtol=1e-10, atol=1e-12)
    assert value == pytest.approx(float(w @ loss), rel=1e-12)
    assert wsum == pytest.approx(float(w.sum()), rel=1e-12)
    assert errors == pytest.approx(float(w @ (s.argmax(axis=1) != p["codes"])), rel=1e-12)


def test_single_column_objective_matches_numpy(problem) -> None:
    # groups of one column: the same loss and gradient as numpy on q = 1
    p = dict(problem, base=problem["base"][:, :1].copy(), coef=problem["coef"][:, :, :1].copy())
    s = _scores(p)
    loss, R = _loss_and_residuals(s, p["codes"])
    w = p["weight"].astype(np.float64)
    grad_W, grad_b = np.zeros((T, K)), np.zeros(K)
    value, wsum, errors = single_column_objective_chunk(
        p["gates"], p["base"], p["codes"], p["weight"], np.ascontiguousarray(p["coef"][:, :, 0]),
        p["intercept"], grad_W, grad_b)
    assert value == pytest.approx(float(w @ loss), rel=1e-12)
    assert wsum == pytest.approx(float(w.sum()), rel=1e-12)
    assert errors == pytest.approx(float(w @ (s.argmax(axis=1) != p["codes"])), rel=1e-12)
    wR = w[:, None] * R
    g = p["gates"].astype(np.float64) * p["base"].astype(np.float64)
    np.testing.assert_allclose(grad_W, g.T @ wR, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(grad_b, wR.sum(axis=0), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("k", [3, MIN_LENGTH + 4])
def test_linear_kernels_read_the_gates_from_the_rows(k: int) -> None:
    # linear columns scored from the rows themselves: numpy's loss, gradient and residuals
    # on the gate matrix linear_gates_chunk builds, a feature selected twice included
    rng = np.random.default_rng(5)
    n, d = 200, 7
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random((n, d)) < 0.4] = 0.0  # zeros are skipped
    scale = rng.uniform(0.2, 2.0, size=d)
    features = np.array([4, 0, 6, 0, 2], dtype=np.int64)
    W = rng.normal(size=(features.size, k))
    intercept = rng.normal(size=k)
    codes = rng.integers(0, k, size=n).astype(np.int32)
    weight = rng.uniform(0.0, 2.0, size=n).astype(np.float32)
    weight[rng.random(n) < 0.2] = 0.0  # held-out rows: skipped, zero residuals
    gates = (X[:, features] * scale[features]).astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(gates, linear_gates_chunk(X, features, scale))
    s = intercept + gates @ W
    loss, R = _loss_and_residuals(s, codes)
    w = weight.astype(np.float64)
    wR = w[:, None] * R
    grad_W, grad_b = np.zeros_like(W), np.zeros(k)
    value, wsum, errors = linear_objective_chunk(X, features, scale, codes, weight, W,
                                                 intercept, grad_W, grad_b, exp_lanes(k))
    assert value == pytest.approx(float(w @ loss), rel=1e-12)
    assert wsum == pytest.approx(float(w.sum()), rel=1e-12)
    assert errors == pytest.approx(float(w @ (s.argmax(axis=1) != codes)), rel=1e-12)
    np.testing.assert_allclose(grad_W, gates.T @ wR, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(grad_b, wR.sum(axis=0), rtol=1e-10, atol=1e-10)
    out, value2, wsum2, errors2 = linear_margin_residuals_chunk(
        X, features, scale, codes, weight, W, intercept, exp_lanes(k))
    np.testing.assert_allclose(out, wR, rtol=1e-10, atol=1e-12)
    assert (value2, wsum2, errors2) == pytest.approx((value, wsum, errors), rel=1e-12)


@pytest.mark.parametrize("numpy", [False, True])
def test_shifted_linear_columns_against_numpy_on_the_shifted_gates(numpy: bool) -> None:
    # features on one side of zero are moved to the middle of their range: the columns,
    # their gradient scores and the restricted objective equal numpy's on (x - c) * s,
    # by the kernels and by the numpy paths of small data alike
    rng = np.random.default_rng(6)
    n, d, k = 300, 5, 3
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:, 1] += 1000.0  # one-sided: shifted
    X[:, 3] = rng.uniform(-9.0, -7.0, size=n)  # one-sided below zero: shifted
    lo, hi = X.min(axis=0).astype(np.float64), X.max(axis=0).astype(np.float64)
    family = LinearColumns.of_range(lo, hi, np.abs(X).max(axis=0).astype(np.float64),
                                    shift=True)
    centre = np.where((lo > 0) | (hi < 0), (lo + hi) / 2, 0.0)
    half = np.where((lo > 0) | (hi < 0), (hi - lo) / 2, np.abs(X).max(axis=0))
    np.testing.assert_allclose(family.shift, centre)
    np.testing.assert_allclose(family.scale, 1 / half)
    Z = (X.astype(np.float64) - centre) / half
    assert np.abs(Z).max() <= 1 + 1e-6 and np.abs(Z[:, [1, 3]]).min() < 0.1
    features = np.array([1, 0, 3, 1], dtype=np.int64)
    np.testing.assert_allclose(family.gates(X, features), Z[:, features], atol=2e-4)
    codes = rng.integers(0, k, size=n).astype(np.int32)
    weight = rng.uniform(0.5, 2.0, size=n).astype(np.float32)
    w = weight.astype(np.float64)
    W = rng.normal(size=(features.size, k))
    intercept = rng.normal(size=k)
    s = intercept + Z[:, features] @ W
    loss, R = _loss_and_residuals(s, codes)
    wR = w[:, None] * R
    grad_coef, grad_b = np.zeros((features.size, k, 1)), np.zeros(k)
    value, wsum, _ = restricted_objective(family, X, features, codes, weight,
                                          W[:, :, None].copy(), intercept, grad_coef, grad_b,
                                          numpy)
    # the kernels round x * scale to float32 (about 333 here) before the offset comes off:
    # an error of a float32 rounding of the unshifted column, about what the float32 value
    # 1000.x itself holds
    tol = {"rtol": 1e-4, "atol": 1e-3}
    assert value == pytest.approx(float(w @ loss), rel=1e-6)
    assert wsum == pytest.approx(float(w.sum()), rel=1e-12)
    np.testing.assert_allclose(grad_coef[:, :, 0], Z[:, features].T @ wR, **tol)
    np.testing.assert_allclose(grad_b, wR.sum(axis=0), **tol)
    # every feature's gradient column (the column scores), and the columns' mean squares
    acc = np.zeros((d, k))
    stats = linear_column_statistics(family, X, features, W, intercept, codes, weight, acc,
                                     numpy)
    assert stats[0] == pytest.approx(float(w @ loss), rel=1e-6)
    np.testing.assert_allclose(acc, Z.T @ wR, **tol)
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(
        family.mean_squares(w @ (X64 * X64), w @ X64, float(w.sum())),
        w @ (Z * Z) / w.sum(), rtol=1e-6)
    # data that holds zero in every range: no shift, the columns as before
    plain = LinearColumns.of_range(np.full(d, -1.0), np.full(d, 2.0), np.full(d, 2.0),
                                   shift=True)
    assert plain.shift is None and np.all(plain.scale == 0.5)


@pytest.mark.parametrize(("padded", "k"), [(False, 4), (True, 4), (True, MIN_LENGTH + 4)])
def test_stump_objective_equals_the_objective_of_its_gates(padded: bool, k: int) -> None:
    # scoring stumps from per-feature tables and taking their gradient from binned
    # residuals gives numpy's loss and gradient on the materialised gates, with the
    # thresholds given as they are or padded with +inf for the kernels, and with few
    # classes or enough for the soft-max's exponentials in SIMD lanes
    rng = np.random.default_rng(3)
    n, d, n_thr = 300, 5, 6
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:10, 0] = 0.25  # values equal to a threshold fall on the stump's side
    thresholds = rng.normal(size=(d, n_thr)).astype(np.float32)
    thresholds[0, 2] = 0.25
    thresholds = np.sort(thresholds, axis=1)
    selected = np.array([2, 3, 2 * n_thr + 5, 4 * n_thr, 1], dtype=np.int64)  # two on f = 0
    features, bins = np.divmod(selected, n_thr)
    coef = rng.normal(size=(selected.size, k, 1))
    intercept = rng.normal(size=k)
    codes = rng.integers(0, k, size=n).astype(np.int32)
    weight = rng.uniform(0.5, 2.0, size=n).astype(np.float32)
    gates = (X[:, features] <= thresholds[features, bins]).astype(np.float64)
    s = intercept + gates @ coef[:, :, 0]
    loss, R = _loss_and_residuals(s, codes)
    w = weight.astype(np.float64)
    hist = np.zeros((d, n_thr + 1, k))
    grad_b = np.zeros(k)
    table = stump_tables(features, bins, coef, thresholds)
    kernel_thresholds = padded_thresholds(thresholds) if padded else thresholds
    assert kernel_thresholds.shape[1] == (8 if padded else n_thr)
    value, wsum, errors = stump_objective_chunk(
        X, kernel_thresholds, np.unique(features), table, codes, weight, intercept,
        np.arange(d, dtype=np.int64), hist, grad_b, exp_lanes(k))
    assert (exp_lanes(k) is None) == (k < MIN_LENGTH)
    assert value == pytest.approx(float(w @ loss), rel=1e-12)
    assert wsum == pytest.approx(float(w.sum()), rel=1e-12)
    assert errors == pytest.approx(float(w @ (s.argmax(axis=1) != codes)), rel=1e-12)
    wR = w[:, None] * R
    np.testing.assert_allclose(grad_b, wR.sum(axis=0), rtol=1e-10, atol=1e-12)
    # every stump's gradient column, selected or not, from the bins
    all_gates = (X[:, :, None] <= thresholds[None]).astype(np.float64)  # (n, d, n_thr)
    np.testing.assert_allclose(stump_gradients(hist),
                               np.einsum("ifb,ic->fbc", all_gates, wR), atol=1e-10)
    # the same bins as the histogram kernel given the residuals
    ref = np.zeros_like(hist)
    stump_histogram_chunk(X, wR, kernel_thresholds, ref)
    np.testing.assert_allclose(hist, ref, atol=1e-12)


def test_linear_gradient_is_eq7_column_matrix() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 7)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = 0.0
    R = rng.normal(size=(50, 4))
    scale = rng.uniform(0.1, 2.0, size=7)
    out = np.zeros((7, 4))
    linear_gradient_chunk(X[:20], R[:20], scale, out)  # two chunks add up
    linear_gradient_chunk(X[20:], R[20:], scale, out)
    np.testing.assert_allclose(out, (X.astype(np.float64) * scale).T @ R, rtol=1e-6)
    gates = linear_gates_chunk(X, np.array([6, 0, 3]), scale)
    np.testing.assert_allclose(gates, (X * scale)[:, [6, 0, 3]], rtol=1e-6)


def test_stump_histogram_equals_exhaustive_search() -> None:
    rng = np.random.default_rng(2)
    X = rng.integers(-3, 4, size=(80, 5)).astype(np.float32)  # ties on thresholds
    R = rng.normal(size=(80, 3))
    thresholds = np.sort(rng.integers(-3, 4, size=(5, 6)), axis=1).astype(np.float32)
    hist = np.zeros((5, 7, 3))
    stump_histogram_chunk(X[:33], R[:33], thresholds, hist)
    stump_histogram_chunk(X[33:], R[33:], thresholds, hist)
    grads = stump_gradients(hist)
    exhaustive = np.empty((5, 6, 3))
    for f in range(5):
        for b in range(6):
            exhaustive[f, b] = R[X[:, f] <= thresholds[f, b]].sum(axis=0)
    np.testing.assert_allclose(grads, exhaustive, atol=1e-12)
    feats, bins = np.array([4, 0]), np.array([2, 5])
    gates = stump_gates_chunk(X, feats, np.ascontiguousarray(thresholds[feats, bins]))
    np.testing.assert_array_equal(gates, (X[:, feats] <= thresholds[feats, bins]).astype(
        np.float32))


def test_squared_distances_match_direct_differences() -> None:
    rng = np.random.default_rng(6)
    X = rng.normal(size=(40, 5)).astype(np.float32)
    centres = rng.normal(size=(7, 5)).astype(np.float32)
    expected = ((X[:, None, :].astype(np.float64) - centres[None]) ** 2).sum(axis=2)
    np.testing.assert_allclose(squared_distances(X, centres), expected, rtol=1e-5, atol=1e-5)
    assert squared_distances(X, X[:3])[np.arange(3), np.arange(3)].max() < 1e-5


def test_anchor_histogram_equals_direct_ball_sums() -> None:
    rng = np.random.default_rng(3)
    n = ANCHOR_TILE_ROWS + 90  # more than one tile of rows
    X = rng.normal(size=(n, 3)).astype(np.float32)
    centres = rng.normal(size=(4, 3)).astype(np.float32)
    pieces = AnchorPieces.from_sample(centres, X, 5, np.full(3, 0.5))
    base = pieces.base(X)
    np.testing.assert_allclose(base, np.c_[0.5 * X, np.ones(n)], rtol=1e-7)
    R = rng.normal(size=(n, 2))
    hist = np.zeros((4, 5, 4, 2), dtype=np.float32)
    dist2 = squared_distances(X, centres)
    for part in (slice(0, 50), slice(50, n)):  # two chunks add up
        anchor_histogram_chunk(np.ascontiguousarray(dist2[part]), base[part], R[part],
                               pieces.radii ** 2, hist)
    expected = np.empty((4, 5, 4, 2))
    for c in range(4):
        for j in range(5):
            inside = dist2[:, c] < pieces.radii[c, j] ** 2
            expected[c, j] = base[inside].astype(np.float64).T @ R[inside]
    np.testing.assert_allclose(anchor_gradients(hist), expected, rtol=1e-5, atol=1e-4)
    # a row is inside a ball by the same arithmetic for the gates as for the scores
    gates = pieces.gates(X, centres[[2, 0]], pieces.radii[[2, 0], [1, 4]])
    np.testing.assert_array_equal(
        gates, (dist2[:, [2, 0]] < pieces.radii[[2, 0], [1, 4]] ** 2).astype(np.float32))
    dist = np.linalg.norm(X[:, None, :].astype(np.float64) - centres[None], axis=2)
    margin = np.abs(dist[:, [2, 0]] - pieces.radii[[2, 0], [1, 4]]) > 1e-4
    np.testing.assert_array_equal(gates[margin],
                                  (dist[:, [2, 0]] < pieces.radii[[2, 0], [1, 4]])[margin])


def test_anchor_radii_are_distance_quantiles() -> None:
    rng = np.random.default_rng(4)
    sample = rng.normal(size=(400, 2))
    centres = np.array([[0.0, 0.0], [1.0, -1.0]], dtype=np.float32)
    pieces = AnchorPieces.from_sample(centres, sample, 3, np.ones(2), coverage=(0.1, 0.4))
    dist = np.linalg.norm(sample[None] - centres[:, None].astype(np.float64), axis=2)
    expected = np.quantile(dist, np.geomspace(0.1, 0.4, 3), axis=1).T
    np.testing.assert_allclose(pieces.radii, expected, rtol=1e-6)
    # the ball of radius j holds about that fraction of the sample
    held = (dist[:, :, None] < pieces.radii[:, None, :]).mean(axis=1)
    np.testing.assert_allclose(held, np.broadcast_to(np.geomspace(0.1, 0.4, 3), (2, 3)),
                               atol=0.01)
    features = pieces.transform(sample[:5].astype(np.float32), [0, 5])
    inside = dist[:, :5].T < pieces.radii[[0, 1], [0, 2]]
    np.testing.assert_allclose(features[:, :3], inside[:, [0]] * np.c_[sample[:5], np.ones(5)],
                               rtol=1e-6)
    np.testing.assert_allclose(features[:, 3:], inside[:, [1]] * np.c_[sample[:5], np.ones(5)],
                               rtol=1e-6)


# -- the numpy paths of small chunks ------------------------------------------------------
@pytest.mark.parametrize("q", [Q, 1])
def test_numpy_objective_residuals_and_scores_match_the_kernels(problem, q: int) -> None:
    # the same sums as the kernels up to rounding (zero gates, rows of weight zero)
    p = dict(problem, base=np.ascontiguousarray(problem["base"][:, :q]),
             coef=np.ascontiguousarray(problem["coef"][:, :, :q]))
    args = (p["gates"], p["base"], p["codes"], p["weight"], p["coef"], p["intercept"])
    grads = [(np.zeros_like(p["coef"]), np.zeros(K)) for _ in range(2)]
    kernel = restricted_objective_chunk(*args, *grads[0])
    numpy_sums = restricted_objective_numpy(*args, *grads[1])
    np.testing.assert_allclose(numpy_sums, kernel, rtol=1e-12)
    for a, b in zip(grads[0], grads[1], strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    out, *sums = margin_residuals_chunk(*args)
    numpy_out, *numpy_sums = margin_residuals_numpy(*args)
    np.testing.assert_allclose(numpy_out, out, rtol=1e-12, atol=1e-15)
    assert np.all(numpy_out[p["weight"] == 0] == 0.0)
    np.testing.assert_allclose(numpy_sums, sums, rtol=1e-12)
    np.testing.assert_allclose(decision_numpy(p["gates"], p["base"], p["coef"], p["intercept"]),
                               decision_chunk(p["gates"], p["base"], p["coef"], p["intercept"]),
                               rtol=1e-12, atol=1e-12)
    # no group selected yet: the intercept alone
    empty = np.zeros((0, K, q))
    grad, grad_b = np.zeros_like(empty), np.zeros(K)
    value = restricted_objective_numpy(p["gates"][:, :0], p["base"], p["codes"], p["weight"],
                                       empty, p["intercept"], grad, grad_b)
    grad_b0 = np.zeros(K)
    expected = restricted_objective_chunk(np.ascontiguousarray(p["gates"][:, :0]), p["base"],
                                          p["codes"], p["weight"], empty, p["intercept"],
                                          np.zeros_like(empty), grad_b0)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    np.testing.assert_allclose(grad_b, grad_b0, rtol=1e-12)


def test_numpy_gates_are_the_kernels_bits() -> None:
    rng = np.random.default_rng(8)
    X = (rng.normal(size=(50, 6)) * 100).astype(np.float32)
    scale = rng.uniform(0.01, 3.0, size=6)
    features = np.array([5, 0, 5, 2], dtype=np.int64)
    np.testing.assert_array_equal(linear_gates_numpy(X, features, scale),
                                  linear_gates_chunk(X, features, scale))
    thresholds = X[[3, 7, 9, 11], features]  # ties on the rows they come from
    np.testing.assert_array_equal(stump_gates_numpy(X, features, thresholds),
                                  stump_gates_chunk(X, features, thresholds))


def test_anchor_histogram_numpy_gives_the_kernels_bits() -> None:
    rng = np.random.default_rng(9)
    n = ANCHOR_TILE_ROWS + 90
    X = rng.normal(size=(n, 3)).astype(np.float32)
    centres = X[rng.choice(n, 6, replace=False)]
    pieces = AnchorPieces.from_sample(centres, X, 5, np.full(3, 0.5))
    base, R = pieces.base(X), rng.normal(size=(n, 2))
    dist2 = squared_distances(X, centres)
    radii2 = pieces.radii ** 2
    radii2[1, 2] = radii2[1, 1]  # a repeated radius
    dist2[:7, 1] = radii2[1, 3]  # rows on a ball's boundary are outside it
    kernel, numpy_bins = (np.zeros((6, 5, 4, 2), dtype=np.float32) for _ in range(2))
    anchor_histogram_chunk(dist2, base, R, radii2, kernel)
    anchor_histogram_numpy(dist2, base, R, radii2, numpy_bins)
    np.testing.assert_array_equal(numpy_bins, kernel)
    # a second chunk added to the sums: the same up to float32 rounding
    anchor_histogram_chunk(dist2[:40], base[:40], R[:40], radii2, kernel)
    anchor_histogram_numpy(dist2[:40], base[:40], R[:40], radii2, numpy_bins)
    np.testing.assert_allclose(numpy_bins, kernel, rtol=1e-5, atol=1e-5)


def _anchor_problem() -> tuple[AnchorColumns, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(10)
    n, d = 300, 3
    X = rng.normal(size=(n, d)).astype(np.float32)
    centres = X[rng.choice(n, 5, replace=False)]
    family = AnchorColumns(AnchorPieces.from_sample(centres, X, 4, np.full(d, 0.5)))
    codes = np.digitize(X[:, 0] + X[:, 1] ** 2, [0.0, 1.5]).astype(np.int32)
    weight = rng.uniform(0.5, 2.0, size=n).astype(np.float32)
    weight[::5] = 0.0
    return family, X, codes, weight


def test_anchor_passes_agree_on_both_paths() -> None:
    # a corrective step's evaluation and a column-score pass on anchors: the numpy paths
    # of small data give what the kernels give, up to rounding
    family, X, codes, weight = _anchor_problem()
    rng = np.random.default_rng(11)
    selected = np.array([3, 9, 14], dtype=np.int64)
    coef = rng.normal(size=(3, K, family.n_base))
    intercept = rng.normal(size=K)
    chunk = Chunk(X=X, y=codes, start=0, weight=weight)

    def both(numpy: bool) -> tuple[tuple[float, float, float], np.ndarray, np.ndarray,
                                   np.ndarray]:
        grad, grad_b = np.zeros_like(coef), np.zeros(K)
        sums = restricted_objective(family, X, selected, codes, weight, coef, intercept,
                                    grad, grad_b, numpy)
        score = ColumnScorePass(family, selected, coef, intercept, numpy=numpy)
        state = score.step(score.start(), chunk)
        return sums, grad, grad_b, state.gradient

    small = both(numpy=True)
    large = both(numpy=False)
    np.testing.assert_allclose(small[0], large[0], rtol=1e-12)
    for a, b in zip(small[1:], large[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_small_anchor_fit_runs_no_objective_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    # on small data (numpy_paths) the anchors' kernels, the linear columns' (but the one
    # of their column scores, whose sums are those of CSR rows) and k-means' are not
    # called (so not compiled); larger data keeps them
    assert passes_module.numpy_paths(passes_module.NUMPY_ROWS)
    assert not passes_module.numpy_paths(passes_module.NUMPY_ROWS + 1)
    from streamlearn.models import ShareBoostClassifier
    from streamlearn.solvers import kmeans

    def compiled(*args: object) -> None:
        raise AssertionError("a kernel ran on small data")

    for module, name in [(passes_module, "restricted_objective_chunk"),
                         (passes_module, "margin_residuals_chunk"),
                         (passes_module, "linear_objective_chunk"),
                         (passes_module, "linear_margin_residuals_chunk"),
                         (columns_module, "anchor_histogram_chunk"),
                         (columns_module, "linear_gates_chunk"),
                         (kernels_module, "decision_chunk"),
                         (kmeans, "assign_chunk"), (kmeans, "minibatch_step")]:
        monkeypatch.setattr(module, name, compiled)
    _, X, codes, _ = _anchor_problem()
    for features in ("anchors", "linear"):
        model = ShareBoostClassifier(features=features, n_rounds=2, n_centres=8, refit_iter=100,
                                     tol=0.05).fit(X, codes)
        assert model.path_["train_error"][-1] < 0.4  # fitted, from the passes' tallies


def test_anchor_metric_measures_distances_on_the_scaled_rows() -> None:
    # pieces with a metric on x are the pieces without one on x * metric: the same radii,
    # gates and column sums, and the gates are numpy's distances in that space
    rng = np.random.default_rng(11)
    n, d = ANCHOR_TILE_ROWS + 40, 3
    X = (rng.normal(size=(n, d)) * np.array([1e-3, 1.0, 1e4])).astype(np.float32)
    metric = np.array([1e3, 1.0, 1e-4])
    Z = (X * metric).astype(np.float32)
    centres = Z[rng.choice(n, 5, replace=False)]
    scale = 1.0 / np.abs(X).max(axis=0)
    measured = AnchorPieces.from_sample(centres, X, 4, scale, metric=metric)
    plain = AnchorPieces.from_sample(centres, Z, 4, scale)
    np.testing.assert_allclose(measured.radii, plain.radii, rtol=1e-6)
    dist = np.linalg.norm(X.astype(np.float64)[:, None, :] * metric - centres[None], axis=2)
    np.testing.assert_allclose(np.sqrt(measured.distances(X)), dist, rtol=1e-3, atol=1e-3)
    chosen = (np.array([0, 3]), np.array([1, 3]))
    gates = measured.gates(X, centres[chosen[0]], measured.radii[chosen])
    np.testing.assert_array_equal(gates, plain.gates(Z, centres[chosen[0]],
                                                     measured.radii[chosen]))
    margin = np.abs(dist[:, chosen[0]] - measured.radii[chosen]) > 1e-4
    np.testing.assert_array_equal(gates[margin],
                                  (dist[:, chosen[0]] < measured.radii[chosen])[margin])
    # the linear part reads the raw rows (scaled into [-1, 1]), not the metric's
    np.testing.assert_allclose(measured.base(X)[:, :d], X * scale, rtol=1e-6)
    R = rng.normal(size=(n, 2))
    sums = [np.zeros((5, 4, d + 1, 2), dtype=np.float32) for _ in range(2)]
    AnchorColumns(measured).accumulate(X, measured.base(X), R, sums[0])
    AnchorColumns(plain).accumulate(Z, measured.base(X), R, sums[1])
    np.testing.assert_allclose(sums[0], sums[1], rtol=1e-6, atol=1e-6)
    # saved and read back with its metric
    family = columns_module.family_from_arrays("anchors", AnchorColumns(measured).arrays())
    np.testing.assert_array_equal(family.pieces.metric, metric)
