"""ShareBoost's solver package: the summary pass and the driver, against numpy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.datasets import load_digits

from streamlearn import LocalEngine, open_dataset
from streamlearn.errors import LabelError
from streamlearn.solvers.shareboost import ShareBoostConfig, ShareBoostFit, fit
from streamlearn.solvers.shareboost.passes import WeightedSummaryPass

CONFIG = ShareBoostConfig(n_rounds=3, features="linear", l2=1e-2, refit_iter=50, n_bins=8,
                          n_centres=8, n_radii=4, max_coverage=0.6, tol=1e-8)


def test_summary_pass_reads_only_rows_of_positive_weight() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)).astype(np.float32)
    weight = rng.integers(0, 3, size=500).astype(np.float32)
    X[weight == 0] *= 100.0
    y = rng.integers(0, 3, size=500)
    data = open_dataset(X, target=y, weight=weight, chunk_rows=70)
    summary = LocalEngine(chunk_rows=70).run(WeightedSummaryPass(4, 1000, 0, 3), data)
    kept = weight > 0
    assert summary.n_rows == int(kept.sum())
    assert summary.weight == pytest.approx(float(weight.sum()))
    np.testing.assert_array_equal(summary.largest, np.abs(X[kept]).max(axis=0))
    np.testing.assert_array_equal(summary.minimum, X[kept].min(axis=0))
    np.testing.assert_array_equal(summary.maximum, X[kept].max(axis=0))
    # the sample holds every kept row once (it is larger than the data), with its weight
    order = np.lexsort(summary.sample.T[::-1])
    expected = np.lexsort(X[kept].T[::-1])
    np.testing.assert_array_equal(summary.sample[order], X[kept][expected])
    np.testing.assert_array_equal(summary.sample_weight[order], weight[kept][expected])
    np.testing.assert_array_equal(summary.sample_codes[order], y[kept][expected])


def test_driver_returns_a_frozen_fit_and_reports_every_round() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 6)).astype(np.float32)
    y = np.argmax(X[:, :3] + rng.normal(size=(400, 3)), axis=1)
    data = open_dataset(X, target=y, chunk_rows=100)
    rounds = []
    result = fit(LocalEngine(chunk_rows=100), data, CONFIG, 0, rounds.append)
    assert isinstance(result, ShareBoostFit) and result.n_iter == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.n_iter = 0  # type: ignore[misc]
    assert [len(r.selected) for r in rounds] == [0, 1, 2, 3]
    np.testing.assert_array_equal(rounds[-1].selected, result.selected)
    np.testing.assert_array_equal(rounds[-1].step.coef, result.coef)
    assert list(result.loss) == [r.step.value for r in rounds]
    assert all(np.diff(result.loss) <= 1e-12) and list(result.passes) == sorted(result.passes)
    # the model's scores from its arrays, recomputed with numpy
    Z = X[:, result.selected].astype(np.float64) * result.family.scale[result.selected]
    scores = Z @ result.coef[:, :, 0] + result.intercept
    error = np.mean(scores.argmax(axis=1) != y)
    assert result.train_error[-1] == pytest.approx(error)


def test_driver_refuses_data_without_positive_weight() -> None:
    X = np.ones((10, 2), dtype=np.float32)
    data = open_dataset(X, target=np.arange(10) % 2, weight=np.zeros(10, dtype=np.float32))
    with pytest.raises(LabelError, match="positive weight"):
        fit(LocalEngine(), data, CONFIG, 0)



def test_every_round_with_wide_anchor_pieces_fits_its_new_piece() -> None:
    """The corrective steps' tolerance is per gradient entry. A piece's column score adds
    its gradient over all d + 1 columns; taken whole as the scale, it stopped the steps of
    later rounds before their first iteration on the 8 x 8 digits, and the pieces those
    rounds selected kept zero weights."""
    X, y = load_digits(return_X_y=True)
    config = dataclasses.replace(CONFIG, n_rounds=8, features="anchors", l2=1e-3,
                                 refit_iter=10, tol=1e-3, n_centres=32, n_radii=8)
    data = open_dataset(X[:1200].astype(np.float32), target=y[:1200], chunk_rows=400)
    result = fit(LocalEngine(chunk_rows=400), data, config, 0)
    assert len(result.selected) == 8
    assert np.all(np.abs(result.coef).reshape(8, -1).max(axis=1) > 1e-3)
    assert np.all(np.diff(result.loss) < 0.0)


def _margin_softmax_objective(Z: np.ndarray, y: np.ndarray, k: int, l2: float):
    """Eq. 3 of the restricted problem on materialised columns ``Z``, by numpy: the mean over
    rows of ``log sum_c exp(s_c - s_y + [c != y])`` plus ``l2 ||W||^2``."""
    n, T = Z.shape

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        W, b = theta[:-k].reshape(T, k), theta[-k:]
        s = Z @ W + b
        z = s - s[np.arange(n), y][:, None] + 1.0
        z[np.arange(n), y] = 0.0
        top = z.max(axis=1, keepdims=True)
        e = np.exp(z - top)
        p = e / e.sum(axis=1, keepdims=True)
        loss = np.mean(top[:, 0] + np.log(e.sum(axis=1))) + l2 * np.sum(W * W)
        r = p.copy()
        r[np.arange(n), y] -= 1.0
        grad_W = Z.T @ r / n + 2.0 * l2 * W
        return float(loss), np.concatenate([grad_W.ravel(), r.sum(axis=0) / n])

    return fun


def test_preconditioned_corrective_step_reaches_the_numpy_minimiser_in_fewer_passes() -> None:
    from scipy.optimize import minimize

    from streamlearn.solvers.shareboost.columns import LinearColumns
    from streamlearn.solvers.shareboost.driver import corrective_step

    rng = np.random.default_rng(5)
    n, d, k = 900, 6, 3
    X = rng.normal(size=(n, d))
    X[:, :3] *= rng.random((n, 3)) < 0.05  # three columns that are rarely non-zero
    y = np.argmax(X[:, :k] * 8.0 + X[:, 3:] + 0.5 * rng.normal(size=(n, k)), axis=1)
    X = X.astype(np.float32)
    family = LinearColumns(1.0 / np.abs(X).max(axis=0).astype(np.float64))
    Z = X.astype(np.float64) * family.scale
    l2 = 1e-4
    config = dataclasses.replace(CONFIG, refit_iter=2000, tol=0.0)
    data = open_dataset(X, target=y, chunk_rows=300)

    def solve(moments: np.ndarray | None):
        return corrective_step(LocalEngine(chunk_rows=300), data, family, list(range(d)),
                               np.zeros((d, k, 1)), np.zeros(k), config, l2, gtol=1e-9,
                               second_moments=moments)

    plain = solve(None)
    scaled = solve(np.mean(Z * Z, axis=0))
    fun = _margin_softmax_objective(Z, y, k, l2)
    ref = minimize(fun, np.zeros(d * k + k), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 5000})
    for step in (plain, scaled):
        assert step.converged
        assert step.value == pytest.approx(ref.fun, abs=1e-9)
        theta = np.concatenate([step.coef[:, :, 0].ravel(), step.intercept])
        np.testing.assert_allclose(theta, ref.x, atol=1e-4)
    assert scaled.n_eval < plain.n_eval


def _anchor_family(rng: np.random.Generator, X: np.ndarray, n_centres: int,
                   n_radii: int):
    from streamlearn.features.anchors import AnchorPieces
    from streamlearn.solvers.shareboost.columns import AnchorColumns

    centres = X[rng.choice(X.shape[0], n_centres, replace=False)]
    radii = np.sort(rng.uniform(0.5, 3.0, size=(n_centres, n_radii)), axis=1)
    scale = 1.0 / np.abs(X).max(axis=0).astype(np.float64)
    return AnchorColumns(AnchorPieces(centres, radii, scale))


def test_interval_moments_are_the_second_moments_of_the_interval_columns() -> None:
    from streamlearn.solvers.shareboost.columns import LinearColumns, StumpColumns
    from streamlearn.solvers.shareboost.driver import interval_moments

    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    w = rng.uniform(0.5, 2.0, size=400)
    # anchors: balls of centre 0 at radii 2 and 0, of centre 2 at 1, of centre 0 at 3
    family = _anchor_family(rng, X, 3, 4)
    selected = np.array([2, 0, 9, 3])
    centres, radii = family.pieces.centres, family.pieces.radii
    dist = np.sqrt(((X[:, None, :].astype(np.float64) - centres[None]) ** 2).sum(axis=2))
    inside = {int(s): dist[:, s // 4] < radii[s // 4, s % 4] for s in selected}
    smaller = {2: 0, 0: None, 9: None, 3: 2}
    a = np.column_stack([X * family.pieces.scale, np.ones(400)])
    expected = np.zeros((4, 4, 4))
    for t, s in enumerate(selected):
        u = inside[s] & ~(inside[smaller[s]] if smaller[s] is not None else False)
        for i in np.flatnonzero(u):  # row by row
            expected[t] += w[i] * np.outer(a[i], a[i])
        expected[t] = expected[t] / w.sum() + np.eye(4) / 400
    got = interval_moments(family, selected, X, w)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-12)
    # stumps 1[x_f <= theta]: feature 1 at thresholds 0.5 and -0.5, a threshold below
    # every row (an empty interval counts as one row), feature 0 at 0
    thresholds = np.array([[0.0, 1.0], [-0.5, 0.5], [-9.0, 9.0]], dtype=np.float32)
    stumps = StumpColumns(thresholds)
    got = interval_moments(stumps, np.array([3, 2, 0, 4]), X, w)
    intervals = np.column_stack([(X[:, 1] > -0.5) & (X[:, 1] <= 0.5), X[:, 1] <= -0.5,
                                 X[:, 0] <= 0.0, X[:, 2] <= -9.0])
    assert got.shape == (4, 1, 1)
    np.testing.assert_allclose(got[:, 0, 0], w @ intervals / w.sum() + 1 / 400, rtol=1e-6)
    assert got[3, 0, 0] == 1 / 400
    assert interval_moments(LinearColumns(np.ones(3)), np.array([0, 1]), X, w) is None


def test_preconditioned_nested_step_reaches_the_numpy_minimiser_in_fewer_passes() -> None:
    from scipy.optimize import minimize

    from streamlearn.solvers.shareboost.driver import corrective_step, interval_moments

    rng = np.random.default_rng(4)
    n, d, k = 1200, 3, 3
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = np.argmax(X @ rng.normal(size=(d, k)) + 0.7 * rng.normal(size=(n, k)), axis=1)
    family = _anchor_family(rng, X, 3, 4)
    selected = [3, 1, 0, 7, 5, 10]  # nested balls of centre 0 and of centre 1, one of 2
    T, q = len(selected), d + 1
    Z = family.pieces.transform(X, np.array(selected)).astype(np.float64)
    l2 = 1e-4
    config = dataclasses.replace(CONFIG, features="anchors", refit_iter=3000, tol=0.0)
    data = open_dataset(X, target=y, chunk_rows=300)
    moments = interval_moments(family, np.array(selected), X, np.ones(n))

    def solve(intervals: np.ndarray | None):
        return corrective_step(LocalEngine(chunk_rows=300), data, family, selected,
                               np.zeros((T, k, q)), np.zeros(k), config, l2, gtol=1e-8,
                               interval_moments=intervals)

    plain = solve(None)
    scaled = solve(moments)
    ref = minimize(_margin_softmax_objective(Z, y, k, l2), np.zeros(T * q * k + k),
                   jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 20000})
    for step in (plain, scaled):
        assert step.converged
        assert step.value == pytest.approx(ref.fun, abs=1e-8)
        theta = np.concatenate([step.coef.transpose(0, 2, 1).ravel(), step.intercept])
        np.testing.assert_allclose(theta, ref.x, atol=2e-3)
    assert scaled.n_eval < plain.n_eval


def test_block_preconditioner_fits_collinear_piece_columns_in_fewer_passes() -> None:
    # features far from 0 that move together: inside a ball the columns [x, 1] are nearly
    # collinear, which the blocks of interval_moments undo and their diagonal does not
    from scipy.optimize import minimize

    from streamlearn.solvers.shareboost.driver import corrective_step, interval_moments

    rng = np.random.default_rng(8)
    n, d, k = 1500, 3, 3
    common = rng.normal(size=(n, 1))
    X = (4.0 + common + 0.3 * rng.normal(size=(n, d))).astype(np.float32)
    y = np.argmax((X - 4.0) @ rng.normal(size=(d, k)) + 0.5 * rng.normal(size=(n, k)), axis=1)
    family = _anchor_family(rng, X, 3, 4)
    selected = [3, 1, 6, 11]
    T, q = len(selected), d + 1
    Z = family.pieces.transform(X, np.array(selected)).astype(np.float64)
    l2 = 1e-4
    config = dataclasses.replace(CONFIG, features="anchors", refit_iter=3000, tol=0.0)
    data = open_dataset(X, target=y, chunk_rows=500)
    blocks = interval_moments(family, np.array(selected), X, np.ones(n))
    diagonal = blocks * np.eye(q)  # each base column's mean square alone

    def solve(intervals: np.ndarray):
        return corrective_step(LocalEngine(chunk_rows=500), data, family, selected,
                               np.zeros((T, k, q)), np.zeros(k), config, l2, gtol=1e-7,
                               interval_moments=intervals)

    by_blocks, by_diagonal = solve(blocks), solve(diagonal)
    ref = minimize(_margin_softmax_objective(Z, y, k, l2), np.zeros(T * q * k + k),
                   jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 20000})
    for step in (by_blocks, by_diagonal):
        assert step.converged and step.gradient_norm <= 1e-7
        assert step.value == pytest.approx(ref.fun, abs=1e-8)
        theta = np.concatenate([step.coef.transpose(0, 2, 1).ravel(), step.intercept])
        np.testing.assert_allclose(theta, ref.x, atol=1e-3)
    assert by_blocks.n_eval < 0.5 * by_diagonal.n_eval


def _banded_factors(spread: np.ndarray, band: float) -> np.ndarray:
    # the factors feature by feature: over the median of the positive spreads (middle of
    # the sorted ones, the geometric mean of the middle two), a spread past the band's
    # edge replaced by the edge
    positive = np.sort([s for s in spread if np.isfinite(s) and s > 0])
    k = len(positive)
    m = positive[k // 2] if k % 2 else np.sqrt(positive[k // 2 - 1] * positive[k // 2])
    out = []
    for s in spread:
        if not (np.isfinite(s) and s > 0):
            out.append(1.0 / m)
        elif s > band * m:
            out.append(band * m / s / m)
        elif s < m / band:
            out.append((m / band) / s / m)
        else:
            out.append(1.0 / m)
    return np.array(out)


def test_spread_factors_keep_the_band_and_bring_the_rest_to_its_edge() -> None:
    from streamlearn.solvers.shareboost.driver import SPREAD_BAND, spread_factors

    rng = np.random.default_rng(11)
    spread = np.r_[rng.lognormal(0.0, 3.0, size=14), 0.0, np.inf]
    for band in (SPREAD_BAND, 3.0, 1.0):
        np.testing.assert_allclose(spread_factors(spread, band), _banded_factors(spread, band),
                                   rtol=1e-12)
    # spreads all within the band: one factor for all; none positive: ones
    np.testing.assert_allclose(spread_factors(np.array([2.0, 1.0, 0.5]), 10.0), 1.0)
    np.testing.assert_array_equal(spread_factors(np.zeros(3)), np.ones(3))


def test_anchor_metric_keeps_one_units_spreads_and_equalises_units_apart() -> None:
    # 1 / interquartile range of the sample (numpy's inverted distribution function); a
    # feature mostly at one value falls back to its standard deviation; spreads kept within
    # SPREAD_BAND of their median, a constant not measured at all (factor 0);
    # then times the feature's relevance weight: the feature the labels follow keeps 1,
    # noise less
    from streamlearn.solvers.mixture.relevance import feature_relevance, relevance_weights
    from streamlearn.solvers.shareboost.driver import SPREAD_BAND, anchor_metric

    rng = np.random.default_rng(12)
    n = 900
    X = np.c_[rng.normal(size=n) * 1e3, rng.standard_t(2, size=n),
              (rng.random(n) < 0.1) * 5.0, np.full(n, 2.0), rng.normal(size=n) * 1e-5,
              rng.normal(size=n) * 3.0].astype(np.float32)
    X[:9, 0] *= 1e5  # far outliers leave the quartiles where they were
    y = (X[:, 1] > 0).astype(int)
    summary = LocalEngine(chunk_rows=128).run(WeightedSummaryPass(6, 2000, 0, 2),
                                              open_dataset(X, target=y, chunk_rows=128))
    x = X.astype(np.float64)
    iqr = (np.quantile(x, 0.75, axis=0, method="inverted_cdf")
           - np.quantile(x, 0.25, axis=0, method="inverted_cdf"))
    assert iqr[2] == 0.0 and iqr[3] == 0.0
    spread = np.array([iqr[0], iqr[1], x[:, 2].std(), 0.0, iqr[4], iqr[5]])
    factors = _banded_factors(spread, SPREAD_BAND)
    # the sample holds every row, each with its label
    order = np.lexsort(summary.sample.T[::-1])
    np.testing.assert_array_equal(summary.sample_codes[order], y[np.lexsort(X.T[::-1])])
    weights = relevance_weights(feature_relevance(summary.sample, summary.sample_codes, 2))
    assert weights[1] == 1.0 and weights[0] < 0.5
    # with labels the two candidates are compared by their rows' nearest neighbours
    chosen = anchor_metric(summary, 2)
    # the constant (feature 3, 2.0) not measured: a value it takes only at prediction
    # moves no distance
    def capped(f: np.ndarray) -> np.ndarray:
        return np.where(np.arange(6) == 3, 0.0, f)

    candidates = {"band": capped(weights * factors),
                  "equalised": capped(weights / np.where(spread > 0, spread, 1.0))}
    assert chosen.reason == "knn" and chosen.rows == n
    for name, factors_of in candidates.items():
        assert chosen.knn_error[name] == _loo_knn_error(summary.sample * factors_of,
                                                        summary.sample_codes, 5)
    a, b = chosen.only_right["equalised"], chosen.only_right["band"]
    # the errors differ by the rows one candidate alone classifies rightly
    assert (a - b) / n == pytest.approx(chosen.knn_error["band"] - chosen.knn_error["equalised"])
    kept = "equalised" if a - b > 2.0 * np.sqrt(a + b) else "band"
    assert chosen.chosen == kept
    np.testing.assert_allclose(chosen.factors, candidates[kept], rtol=1e-5)
    # without labels (one class), no check: the band of the spreads alone, the 1e3 and
    # 1e-5 features at the band's edges, the others (spreads 1.5 to 4) as they were
    unlabelled = anchor_metric(summary, 1)
    assert (unlabelled.chosen, unlabelled.reason) == ("band", "no labelled sample")
    assert unlabelled.knn_error is None and unlabelled.only_right is None
    metric = unlabelled.factors
    np.testing.assert_allclose(metric, capped(factors), rtol=1e-5)
    assert metric[3] == 0.0 < factors[3]
    measured = iqr * metric
    m = np.median(spread[spread > 0])
    np.testing.assert_allclose(measured[[0, 4]], [SPREAD_BAND, 1.0 / SPREAD_BAND], rtol=1e-5)
    np.testing.assert_allclose(measured[[1, 5]], iqr[[1, 5]] / m, rtol=1e-5)


def test_anchor_metric_does_not_whiten_features_of_one_unit() -> None:
    # principal components (variances decaying 25-fold) and a random rotation of them:
    # every feature gets the same factor, 1 / the median spread (the geometric mean of the
    # middle two; distances as on the raw rows); the same components in units 1e-3 to 1e6
    # come out within the band
    from streamlearn.solvers.shareboost.driver import SPREAD_BAND, anchor_metric

    rng = np.random.default_rng(15)
    n, d = 3000, 8
    Z = rng.normal(size=(n, d)) * np.geomspace(1.0, 0.2, d)
    rotation = np.linalg.qr(rng.normal(size=(d, d)))[0]
    units = np.geomspace(1e-3, 1e6, d)
    metrics = []
    for X in (Z, Z @ rotation, Z * units):
        X = X.astype(np.float32)
        data = open_dataset(X, target=np.arange(n) % 2, chunk_rows=1024)
        summary = LocalEngine(chunk_rows=1024).run(WeightedSummaryPass(d, 4096, 0, 2), data)
        x = X.astype(np.float64)
        iqr = (np.quantile(x, 0.75, axis=0, method="inverted_cdf")
               - np.quantile(x, 0.25, axis=0, method="inverted_cdf"))
        metrics.append((anchor_metric(summary, 1).factors, iqr))
    for metric, iqr in metrics[:2]:
        middle = np.sort(iqr)[d // 2 - 1: d // 2 + 1]
        np.testing.assert_allclose(metric, 1.0 / np.sqrt(middle.prod()), rtol=1e-5)
    metric, iqr = metrics[2]
    measured = iqr * metric
    assert measured.max() == pytest.approx(SPREAD_BAND)
    assert measured.min() == pytest.approx(1.0 / SPREAD_BAND)
    # whitened, the spreads would all be 1; raw, they span 1e9 / 5
    assert measured.max() / measured.min() <= SPREAD_BAND ** 2 * (1 + 1e-9)


def _loo_knn_error(X: np.ndarray, codes: np.ndarray, k: int) -> float:
    """Leave-one-out k-NN error by scikit-learn: each row predicted by a classifier fitted
    on all the other rows."""
    from sklearn.neighbors import KNeighborsClassifier

    X = np.asarray(X, dtype=np.float64)
    wrong = 0
    for i in range(X.shape[0]):
        others = np.arange(X.shape[0]) != i
        model = KNeighborsClassifier(n_neighbors=k, algorithm="brute").fit(X[others],
                                                                            codes[others])
        wrong += int(model.predict(X[i:i + 1])[0] != codes[i])
    return wrong / X.shape[0]


@pytest.mark.parametrize("k, block", [(5, 64), (4, 1000), (1, 7)])
def test_knn_error_is_scikit_learns_leave_one_out_error(k: int, block: int) -> None:
    # three overlapping classes in four features of different scales, offset far from 0
    # (the distances are taken on the rows moved to their mean); an even k ties votes,
    # broken towards the smaller class code as scikit-learn does; blocks of 7 and 64 rows
    # and one block of all give the same error
    from streamlearn.solvers.shareboost.driver import knn_error

    rng = np.random.default_rng(21)
    n = 240
    codes = rng.integers(0, 3, size=n)
    X = (rng.normal(size=(n, 4)) + codes[:, None] * np.array([0.8, 0.0, 0.5, 0.3]))
    X = X * np.array([1.0, 3.0, 0.5, 2.0]) + 1e3
    expected = _loo_knn_error(X, codes, k)
    assert 0.1 < expected < 0.6
    assert knn_error(X, codes, k, block) == expected
    with pytest.raises(ValueError, match="1 <= k < n"):
        knn_error(X[:k], codes[:k], k)


def _summary(X: np.ndarray, y: np.ndarray, k: int):
    X = X.astype(np.float32)
    data = open_dataset(X, target=y, chunk_rows=1024)
    return LocalEngine(chunk_rows=1024).run(WeightedSummaryPass(X.shape[1], 4096, 0, k), data)


def test_anchor_metric_chooses_equalised_spreads_for_features_of_many_units() -> None:
    # six normal features of scales 1e-4 to 1e6, labelled by a sine of the 1e-4 one and a
    # product of the 1e2 and 1e4 ones: in the band the sine's feature counts a hundredth
    # of the product's, and the 1e6 noise feature ten times; divided by their spreads the
    # neighbours share their labels far more often (about 4 % against 30 %)
    from streamlearn.solvers.shareboost.driver import KNN_ROWS, anchor_metric, spread_factors

    rng = np.random.default_rng(22)
    X = rng.normal(size=(3000, 6)) * np.array([1e-4, 1e-2, 1.0, 1e2, 1e4, 1e6])
    y = (np.sin(X[:, 0] * 1e4) + X[:, 3] / 1e2 * X[:, 4] / 1e4 > 0).astype(int)
    summary = _summary(X, y, 2)
    chosen = anchor_metric(summary, 2)
    assert chosen.chosen == "equalised" and chosen.rows == KNN_ROWS
    assert chosen.knn_error["equalised"] < 0.1 < 0.2 < chosen.knn_error["band"]
    # the factors: relevance weights over the quartile spreads
    quartiles = summary.quantiles(np.array([0.25, 0.75]))
    spread = quartiles[:, 1] - quartiles[:, 0]
    np.testing.assert_allclose(anchor_metric(summary, 1).factors, spread_factors(spread),
                               rtol=1e-6)  # without labels: the band, unweighted
    weighted = chosen.factors * spread  # the relevance weights alone
    assert weighted.max() == pytest.approx(1.0) and weighted.min() >= 0.1 - 1e-12
    assert chosen.only_right["equalised"] > 5 * chosen.only_right["band"]
    assert chosen.info() == {"chosen": "equalised", "reason": "knn",
                             "knn_error": chosen.knn_error, "only_right": chosen.only_right,
                             "k": 5, "rows": KNN_ROWS}


def test_anchor_metric_keeps_the_band_for_decaying_components_and_near_ties() -> None:
    # principal-component-like features, variances decaying 20-fold, labelled by the
    # product of the leading two: divided by their spreads the low-variance components
    # take as much of each distance as the leading ones, the band keeps them small; the
    # same after a random rotation (the rotated features' spreads differ by less, the
    # band still keeps the nearer neighbours). Every spread equal: no check
    from streamlearn.solvers.shareboost.driver import anchor_metric

    rng = np.random.default_rng(0)
    n, d = 3000, 8
    Z = rng.normal(size=(n, d)) * np.geomspace(1.0, 0.05, d)
    y = (Z[:, 0] * Z[:, 1] > 0).astype(int)
    rotation = np.linalg.qr(rng.normal(size=(d, d)))[0]
    for X in (Z, Z @ rotation):
        chosen = anchor_metric(_summary(X, y, 2), 2)
        assert chosen.chosen == "band" and chosen.reason == "knn"
        assert chosen.knn_error["band"] < chosen.knn_error["equalised"] - 0.01
    same = np.tile(np.arange(n) % 10, (2, 1)).T.astype(float)  # two features, one spread
    chosen = anchor_metric(_summary(same, (np.arange(n) % 10 > 4).astype(int), 2), 2)
    assert (chosen.chosen, chosen.reason, chosen.knn_error) == ("band", "proportional", None)
    # hastie_10_2's rule on ten normal features: the spreads differ by the sample's chance
    # alone, and so do the two errors; the band is kept where the lower error alone would
    # have taken the other one
    from streamlearn.solvers.shareboost.driver import KNN_TIE_Z

    kept = []
    for seed in range(8):
        X = np.random.default_rng(seed).normal(size=(2000, 10))
        chosen = anchor_metric(_summary(X, ((X ** 2).sum(axis=1) > 9.34).astype(int), 2), 2)
        a, b = chosen.only_right["equalised"], chosen.only_right["band"]
        assert a - b <= KNN_TIE_Z * np.sqrt(a + b)
        kept.append((chosen.chosen, chosen.knn_error["equalised"] < chosen.knn_error["band"]))
    assert all(name == "band" for name, _ in kept) and any(lower for _, lower in kept)


def test_anchor_model_sees_units_past_the_band_as_the_band_edge() -> None:
    # units (1e-3, 1, 1e4) give the model of units (0.1, 1, 10), the band's edges (on raw
    # values the 1e4 feature alone would decide which rows a ball holds): both candidate
    # metrics see the two alike, and the nearest-neighbour check keeps the same one for
    # both, here the spreads equalised (the band keeps the noise feature at 10 times the
    # product's two: 29 % of the rows' neighbours outvote them against 4 %)
    from streamlearn import ShareBoostClassifier
    from streamlearn.solvers.shareboost.driver import SPREAD_BAND

    rng = np.random.default_rng(13)
    X = rng.normal(size=(800, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    units = np.array([1e-3, 1.0, 1e4])
    edge = np.array([1.0 / SPREAD_BAND, 1.0, SPREAD_BAND])
    models = [ShareBoostClassifier(features="anchors", n_rounds=6, n_centres=12, refit_iter=300,
                                   progress=False).fit(Z, y) for Z in (X * edge, X * units)]
    assert models[0].anchor_metric_ == {**models[1].anchor_metric_,
                                        "knn_error": models[0].anchor_metric_["knn_error"],
                                        "only_right": models[0].anchor_metric_["only_right"]}
    assert models[1].anchor_metric_["chosen"] == "equalised"
    for name, error in models[0].anchor_metric_["knn_error"].items():
        assert models[1].anchor_metric_["knn_error"][name] == pytest.approx(error, abs=0.01)
    agree = np.mean(models[0].predict(X * edge) == models[1].predict(X * units))
    assert agree >= 0.99
    # and the product of the two features is learnt (a linear model cannot)
    assert np.mean(models[1].predict(X * units) == y) >= 0.85


def test_anchor_pieces_linear_part_does_not_depend_on_the_features_offsets() -> None:
    # the pieces' linear part sees each feature moved to the middle of its range and divided
    # by half its width, and l2="auto" follows those columns: a feature moved and stretched
    # by constants gives the same columns; features moved by constants and stretched by one
    # factor (the balls keep the ratios of spreads within SPREAD_BAND) the same penalty and
    # the same model
    from streamlearn import ShareBoostClassifier
    from streamlearn.solvers.shareboost.driver import anchor_linear_map

    rng = np.random.default_rng(14)
    X = rng.uniform(-1, 1, size=(1500, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=1500) > 0.2).astype(int)
    units, offsets = np.array([20.0, 0.5, 3.0]), np.array([150.0, -4.0, 40.0])
    Z = X * units + offsets
    shift, scale = anchor_linear_map(Z.min(axis=0), Z.max(axis=0))
    mapped = (Z - shift) * scale
    np.testing.assert_allclose(mapped.min(axis=0), -1.0, atol=1e-12)
    np.testing.assert_allclose(mapped.max(axis=0), 1.0, atol=1e-12)
    Z = X * 20.0 + offsets
    models = [ShareBoostClassifier(features="anchors", n_rounds=6, n_centres=12, refit_iter=300,
                                   progress=False).fit(A, y) for A in (X, Z)]
    assert models[0].l2_ == pytest.approx(models[1].l2_, rel=1e-6)
    np.testing.assert_array_equal(models[0].selected_features_, models[1].selected_features_)
    # the same pieces and penalty; the fits stop on their tolerance, a few % apart
    f0, f1 = models[0].decision_function(X), models[1].decision_function(Z)
    assert np.median(np.abs(f0 - f1) / (1.0 + np.abs(f0))) <= 0.05
    assert np.mean(models[0].predict(X) == models[1].predict(Z)) >= 0.99
