"""Platt scaling against an unbinned scipy fit of the same likelihood."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from streamlearn.solvers.calibration import (
    ScoreHistogram,
    fit_sigmoid,
    sigmoid_proba,
)


def scipy_platt(scores, positive, weight=None):
    """Platt's smoothed cross-entropy minimised by BFGS, written independently."""
    f = np.asarray(scores, dtype=np.float64)
    pos = np.asarray(positive, dtype=bool)
    w = np.ones_like(f) if weight is None else np.asarray(weight, dtype=np.float64)
    n_pos, n_neg = w[pos].sum(), w[~pos].sum()
    t = np.where(pos, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def objective(ab):
        z = ab[0] * f + ab[1]
        # p = 1 / (1 + e^z): -log p = log(1 + e^z), -log(1 - p) = log(1 + e^-z)
        return np.sum(w * (t * np.logaddexp(0, z) + (1 - t) * np.logaddexp(0, -z))) / w.sum()

    def gradient(ab):
        z = ab[0] * f + ab[1]
        p = 0.5 * (1 - np.tanh(z / 2))
        d = w * (t - p)
        return np.array([np.sum(f * d), np.sum(d)]) / w.sum()

    res = minimize(objective, np.zeros(2), jac=gradient, method="BFGS",
                   options={"gtol": 1e-12, "maxiter": 10_000})
    return res.x


def synthetic_scores(n, a, b, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.normal(0.0, 2.0, size=n)
    p = 1.0 / (1.0 + np.exp(a * f + b))
    return f, rng.random(n) < p


def test_newton_matches_scipy_on_raw_scores():
    f, pos = synthetic_scores(3000, -1.3, 0.4, seed=1)
    a, b = fit_sigmoid(f, pos)
    ref = scipy_platt(f, pos)
    np.testing.assert_allclose([a, b], ref, atol=1e-6)


def test_weights_equal_repeated_points():
    f, pos = synthetic_scores(500, -0.8, -0.2, seed=2)
    w = np.random.default_rng(3).integers(1, 4, size=500)
    weighted = fit_sigmoid(f, pos, w.astype(float))
    repeated = fit_sigmoid(np.repeat(f, w), np.repeat(pos, w))
    np.testing.assert_allclose(weighted, repeated, atol=1e-9)
    np.testing.assert_allclose(weighted, scipy_platt(f, pos, w), atol=1e-6)


@pytest.mark.parametrize("a, b", [(-1.5, 0.3), (-0.4, -1.0), (-4.0, 2.0)])
def test_binned_fit_recovers_known_sigmoid(a, b):
    f, pos = synthetic_scores(200_000, a, b, seed=4)
    hist = ScoreHistogram(1)
    for part in np.array_split(np.arange(f.size), 7):  # streamed in blocks
        hist.add(f[part], pos[part])
    got_a, got_b = hist.fit()
    unbinned = scipy_platt(f, pos)
    # binning changes the answer far less than sampling noise does
    np.testing.assert_allclose([got_a[0], got_b[0]], unbinned, atol=2e-3 * max(1, abs(a)))
    np.testing.assert_allclose([got_a[0], got_b[0]], [a, b], atol=0.05 * max(1, abs(a)))


def test_scores_inside_one_bin_do_not_tell_the_labels_apart():
    # a model that has barely moved from zero: every score within a few thousandths, the
    # labels no better than chance; Platt on the exact scores finds almost no slope
    rng = np.random.default_rng(9)
    pos = rng.random(400) < 0.5
    f = -0.07 + 0.002 * rng.standard_normal(400) + 0.0005 * pos
    hist = ScoreHistogram(1).add(f, pos)
    a, b = hist.fit()
    binned = hist.log_loss(a, b)
    exact_a, exact_b = scipy_platt(f, pos)
    p = 1 / (1 + np.exp(exact_a * f + exact_b))
    exact = -np.mean(np.where(pos, np.log(p), np.log1p(-p)))
    # the bins hold both labels: no steeper sigmoid, no lower loss than the labels allow
    assert binned >= exact - 0.01 and binned > 0.6
    assert abs(a[0] * 0.004) < 1.0


def test_histogram_merge_and_cells():
    rng = np.random.default_rng(5)
    f = rng.normal(0, 50, size=(4000, 3))
    f[0, 0] = 1e6  # beyond the limit: end bin, exact mean kept
    pos = rng.random((4000, 3)) < 0.4
    w = rng.uniform(0.5, 2.0, size=4000)
    whole = ScoreHistogram(3).add(f, pos, w)
    a = ScoreHistogram(3).add(f[:1500], pos[:1500], w[:1500])
    b = ScoreHistogram(3).add(f[1500:], pos[1500:], w[1500:])
    merged = b.merge(a)
    np.testing.assert_allclose(merged.weight, whole.weight)
    np.testing.assert_allclose(merged.score_sum, whole.score_sum, rtol=1e-9)
    for j in range(3):
        for label in (False, True):
            sel = pos[:, j] == label
            assert whole.weight[j, int(label)].sum() == pytest.approx(w[sel].sum())
            assert whole.score_sum[j, int(label)].sum() == pytest.approx((w * f[:, j])[sel].sum())
    # rows of positive weight per model and label, whatever their weights
    w2 = np.where(rng.random((4000, 3)) < 0.3, 0.0, w[:, None])
    counted = ScoreHistogram(3).add(f[:900], pos[:900], w2[:900]).merge(
        ScoreHistogram(3).add(f[900:], pos[900:], w2[900:]))
    for j in range(3):
        for label in (False, True):
            assert counted.rows[j, int(label)] == np.sum((pos[:, j] == label) & (w2[:, j] > 0))
    assert counted.fewest_rows() == min(np.sum((pos[:, j] == lab) & (w2[:, j] > 0))
                                        for j in range(3) for lab in (False, True))
    scores, positive, weight = whole.points(0)
    assert weight.sum() == pytest.approx(w.sum())
    assert weight[positive].sum() == pytest.approx(w[pos[:, 0]].sum())
    assert scores.max() > 1e3  # the outlier's cell mean is exact, not clipped


def test_bins_are_fine_near_zero_and_monotone():
    hist = ScoreHistogram(1)
    edges = np.linspace(-20, 20, 4001)
    bins = hist.bin_of(edges)
    assert np.all(np.diff(bins) >= 0)
    assert bins[0] >= 0 and bins[-1] < hist.n_bins
    near = hist.bin_of(np.array([-0.02, 0.0, 0.02]))
    assert near[0] < near[1] < near[2]


def test_degenerate_calibration_sets():
    assert fit_sigmoid(np.array([]), np.array([], dtype=bool)) == (-1.0, 0.0)
    # separable scores: target smoothing keeps A finite and the right sign
    f = np.concatenate([np.linspace(-3, -1, 50), np.linspace(1, 3, 50)])
    pos = f > 0
    a, b = fit_sigmoid(f, pos)
    assert np.isfinite(a) and a < 0
    np.testing.assert_allclose([a, b], scipy_platt(f, pos), atol=1e-4)
    # one label only
    a, b = fit_sigmoid(np.linspace(-1, 1, 20), np.ones(20, dtype=bool))
    assert np.isfinite(a) and np.isfinite(b)
    assert sigmoid_proba(np.zeros(1), a, b)[0] > 0.5


def test_sigmoid_proba_is_stable():
    z = np.array([-1e4, -30.0, 0.0, 30.0, 1e4])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        p = sigmoid_proba(z, 1.0, 0.0)
    np.testing.assert_allclose(p[1:4], 1 / (1 + np.exp(z[1:4])))
    assert p[0] == 1.0 and p[-1] == 0.0


def _softmax_log_loss(scores, codes, weight, scale):
    """sum_i w_i (-log softmax(s f_i)[c_i]), written with scipy's logsumexp."""
    from scipy.special import logsumexp

    f = np.asarray(scores, dtype=np.float64)
    if f.ndim == 1:  # one score: the classes' logits are 0 and f
        f = np.column_stack([np.zeros_like(f), f])
    z = scale * f
    return float(np.sum(weight * (logsumexp(z, axis=1) - z[np.arange(len(codes)), codes])))


@pytest.mark.parametrize("n_classes", [2, 4])
def test_temperature_losses_equal_softmax_log_loss_and_the_best_scale_minimises_it(n_classes):
    from scipy.optimize import minimize_scalar

    from streamlearn.solvers.calibration import (
        TEMPERATURE_SCALES,
        best_temperature,
        temperature_losses,
        temperature_proba,
    )

    rng = np.random.default_rng(3)
    n = 500
    codes = rng.integers(0, n_classes, n)
    if n_classes == 2:
        scores = np.where(codes == 1, 1.0, -1.0) * 0.4 + rng.normal(0, 0.5, n)
    else:
        scores = -np.ones((n, n_classes)) + 0.6 * np.eye(n_classes)[codes] \
            + rng.normal(0, 0.4, (n, n_classes))
    weight = rng.uniform(0.5, 2.0, n)
    losses = temperature_losses(scores, codes, weight)
    expected = [_softmax_log_loss(scores, codes, weight, s) for s in TEMPERATURE_SCALES]
    np.testing.assert_allclose(losses, expected, rtol=1e-10)
    # two blocks add up to the whole (a mergeable statistic)
    np.testing.assert_allclose(temperature_losses(scores[:200], codes[:200], weight[:200])
                               + temperature_losses(scores[200:], codes[200:], weight[200:]),
                               losses, rtol=1e-10)
    scale = best_temperature(losses)
    optimum = minimize_scalar(lambda u: _softmax_log_loss(scores, codes, weight, np.exp(u)),
                              bounds=(np.log(1e-2), np.log(1e3)), method="bounded",
                              options={"xatol": 1e-8})
    assert scale == pytest.approx(np.exp(optimum.x), rel=0.02)
    assert _softmax_log_loss(scores, codes, weight, scale) <= optimum.fun * (1 + 1e-4)
    # the probabilities are that softmax, and keep the decisions
    proba = temperature_proba(scores, scale)
    logits = scores if n_classes > 2 else np.column_stack([np.zeros(n), scores])
    z = scale * logits
    np.testing.assert_allclose(proba, np.exp(z) / np.exp(z).sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(proba.argmax(1), logits.argmax(1))


def test_temperature_proba_does_not_overflow():
    from streamlearn.solvers.calibration import temperature_proba

    proba = temperature_proba(np.array([[1e6, -1e6, 0.0]]), 1e3)
    np.testing.assert_array_equal(proba, [[1.0, 0.0, 0.0]])
    np.testing.assert_allclose(temperature_proba(np.array([-1e6, 1e6]), 10.0),
                               [[1.0, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_smoothed_temperature_losses_are_the_cross_entropy_against_platt_targets(n_classes):
    from streamlearn.solvers.calibration import TEMPERATURE_SCALES, TemperatureSums

    rng = np.random.default_rng(4)
    n = 120
    codes = rng.integers(0, n_classes, n)
    scores = rng.normal(size=n) if n_classes == 2 else rng.normal(size=(n, n_classes))
    weight = rng.uniform(0.5, 2.0, n)
    sums = TemperatureSums(n_classes).add(scores[:50], codes[:50], weight[:50]).merge(
        TemperatureSums(n_classes).add(scores[50:], codes[50:], weight[50:]))
    logits = np.column_stack([np.zeros(n), scores]) if n_classes == 2 else scores
    counts = np.bincount(codes, weight, n_classes)
    q = (counts + 1) / (counts + 2)  # Platt's target for the row's own class
    targets = np.empty((n, n_classes))
    targets[:] = ((1 - q[codes]) / (n_classes - 1))[:, None]
    targets[np.arange(n), codes] = q[codes]
    from scipy.special import log_softmax

    expected = [float(np.sum(weight * -(targets * log_softmax(s * logits, axis=1)).sum(1)))
                for s in TEMPERATURE_SCALES]
    np.testing.assert_allclose(sums.losses(smoothed=True), expected, rtol=1e-10)
    plain = [_softmax_log_loss(scores, codes, weight, s) for s in TEMPERATURE_SCALES]
    np.testing.assert_allclose(sums.losses(smoothed=False), plain, rtol=1e-10)


def test_smoothing_keeps_the_scale_of_separated_rows_finite():
    from streamlearn.solvers.calibration import TemperatureSums, best_temperature

    codes = np.repeat([0, 1], 100)
    scores = np.where(codes == 1, 1.0, -1.0)  # every scale separates them
    sums = TemperatureSums(2).add(scores, codes)
    # the plain loss falls with every scale, down to round-off at the grid's far end
    assert best_temperature(sums.losses(smoothed=False)) > 100
    # Platt's targets (101 / 102) are met where the logistic of s equals them
    assert best_temperature(sums.losses()) == pytest.approx(np.log(101.0), rel=0.01)


def test_shared_slope_minimises_the_summed_platt_objective_of_every_model():
    from scipy.optimize import minimize_scalar

    from streamlearn.solvers.calibration import (
        fit_shared_slope,
        sigmoid_objective,
        smoothed_targets,
    )

    rng = np.random.default_rng(9)
    histogram = ScoreHistogram(3)
    labels = rng.random((600, 3)) < 0.3
    scores = np.where(labels, 1.0, -1.0) * rng.uniform(0.2, 2.0, (600, 3)) \
        + rng.normal(0, 0.6, (600, 3))
    histogram.add(scores, labels)

    def total(a):
        out = 0.0
        for m in range(3):
            f, pos, w = histogram.points(m)
            out += sigmoid_objective(a, 0.0, f, smoothed_targets(pos, w), w)
        return out

    a = fit_shared_slope(histogram)
    best = minimize_scalar(total, bounds=(-50.0, -1e-3), method="bounded",
                           options={"xatol": 1e-9})
    assert a == pytest.approx(best.x, rel=1e-3)
    assert a < 0
    assert fit_shared_slope(ScoreHistogram(2)) == -1.0  # no rows: the plain logistic


def test_a_block_without_rows_adds_nothing():
    """A pair's rows inside a chunk can be none (two rare classes): a 1-D block of no
    scores leaves both statistics as the rows before it left them."""
    from streamlearn.solvers.calibration import TemperatureSums, temperature_losses

    rng = np.random.default_rng(5)
    f = rng.normal(size=300)
    codes = (f + rng.normal(0, 0.7, 300) > 0).astype(np.int64)
    empty_f, empty_codes = np.empty(0), np.empty(0, dtype=np.int64)
    sums = TemperatureSums(2).add(empty_f, empty_codes).add(f, codes).add(empty_f, empty_codes)
    np.testing.assert_allclose(sums.losses(smoothed=False), temperature_losses(f, codes),
                               rtol=1e-12)
    hist = ScoreHistogram(1).add(empty_f, empty_codes.astype(bool), empty_f)
    hist.add(f, codes.astype(bool)).add(empty_f, empty_codes.astype(bool))
    for a, b in zip(hist.points(0), ScoreHistogram(1).add(f, codes.astype(bool)).points(0),
                    strict=True):
        np.testing.assert_array_equal(a, b)
