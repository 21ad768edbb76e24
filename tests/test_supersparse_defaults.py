"""The super-sparse machines' defaults: ``gamma="auto"`` and ``n_prototypes="auto"``."""

import warnings
from contextlib import nullcontext
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.svm import SVC, LinearSVC

from streamlearn.models.supersparse import (
    SuperSparseClassifier,
    SuperSparseRegressor,
    auto_prototypes,
)
from streamlearn.solvers.supersparse.driver import AUTO_GAMMA_FACTORS, prototype_step
from streamlearn.solvers.supersparse.passes import (
    AUTO_GAMMA_FACTOR,
    AUTO_GAMMA_LIMIT,
    GramState,
    TargetRows,
    prototype_gamma,
)


def _spirals(n_per_class: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved noisy spirals of 2.5 turns each, in the unit disc."""
    rng = np.random.default_rng(seed)
    lo, hi = 0.5 * np.pi, 5.5 * np.pi
    arms = []
    for sign in (1.0, -1.0):
        theta = np.sqrt(rng.uniform(lo**2, hi**2, size=n_per_class))
        arm = sign * np.c_[theta * np.cos(theta), theta * np.sin(theta)] / hi
        arms.append(arm + 0.02 * rng.standard_normal(arm.shape))
    X = np.vstack(arms).astype(np.float32)
    return X, np.repeat([1, 0], n_per_class)


def test_prototype_gamma_is_half_over_the_median_nearest_squared_distance():
    rng = np.random.default_rng(0)
    C = rng.normal(size=(9, 3))
    C = np.vstack([C, C[:2]])  # two duplicates: left out of the nearest distances
    d2 = ((C[:, None] - C[None]) ** 2).sum(-1)
    nearest = [np.min(row[row > 1e-9]) for row in d2]  # brute force, duplicates skipped
    assert np.isclose(prototype_gamma(C), AUTO_GAMMA_FACTOR / np.median(nearest), rtol=1e-9)
    assert prototype_gamma(C[:1]) is None
    assert prototype_gamma(np.ones((4, 3))) is None  # no two distinct prototypes
    # at most AUTO_GAMMA_LIMIT times the "scale" value given
    auto = AUTO_GAMMA_FACTOR / np.median(nearest)
    assert prototype_gamma(C, 1e3) == pytest.approx(auto, rel=1e-9)
    assert prototype_gamma(C, 1e-3) == pytest.approx(AUTO_GAMMA_LIMIT * 1e-3, rel=1e-12)


@pytest.mark.parametrize("n_features", [1, 2])
def test_auto_width_on_one_or_two_features_fits_a_linear_target(n_features):
    # 50 random prototypes on one standard normal feature lie a median 0.025 apart: the
    # nearest distances gave gamma near 770 and no similarity between most neighbours
    # (test R2 0.48, the classifier 86 % on the sign of the target); on two features
    # gamma 13 and R2 0.73. Bounded by 8 times the "scale" value, both predict as ridge
    # regression and logistic regression do
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, n_features))
    y = X.sum(axis=1) + 0.3 * rng.normal(size=3000)
    model = SuperSparseRegressor(random_state=0).fit(X[:1500], y[:1500])
    # the capped width, or a wider one that the held-out rows prefer (a linear target)
    assert any(model.gamma_ == pytest.approx(AUTO_GAMMA_LIMIT / n_features * factor, rel=0.05)
               for factor in AUTO_GAMMA_FACTORS)
    ridge = Ridge().fit(X[:1500], y[:1500]).score(X[1500:], y[1500:])
    assert model.score(X[1500:], y[1500:]) > ridge - 0.04
    labels = np.sign(y)
    classifier = SuperSparseClassifier(random_state=0).fit(X[:1500], labels[:1500])
    logistic = LogisticRegression().fit(X[:1500], labels[:1500])
    assert (classifier.score(X[1500:], labels[1500:])
            > logistic.score(X[1500:], labels[1500:]) - 0.02)


def test_auto_prototypes_keeps_ten_rows_per_prototype_up_to_fifty():
    assert [auto_prototypes(n) for n in (1, 9, 10, 11, 300, 499, 500, 10**9)] == \
        [1, 2, 2, 2, 30, 50, 50, 50]  # at least one per class (K = 2) where rows allow
    assert [auto_prototypes(n, 3) for n in (2, 7, 31)] == [2, 3, 4]
    # ten a class in the shared pool of more than five classes
    assert [auto_prototypes(10**6, k) for k in (2, 5, 6, 10, 26)] == [50, 50, 60, 100, 260]
    assert auto_prototypes(1500, 26) == 150  # still ten rows per prototype


def test_auto_prototypes_of_a_multiclass_fit_follow_its_classes():
    rng = np.random.default_rng(2)
    y = np.arange(1200) % 7  # 7 classes around their own centres
    X = (rng.normal(size=(7, 4))[y] + 0.3 * rng.normal(size=(1200, 4))).astype(np.float32)
    model = SuperSparseClassifier(max_iter=2).fit(X, y)
    assert len(model.classes_) == 7 and model.n_prototypes_ == 70
    online = SuperSparseClassifier().partial_fit(X, y, classes=np.arange(7))
    assert online.n_prototypes_ == 70


@pytest.mark.parametrize("n_rows", [5, 37])
def test_default_fits_small_data(n_rows):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n_rows, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    y[:2] = [0, 1]
    model = SuperSparseClassifier().fit(X, y)
    assert model.n_prototypes_ == auto_prototypes(n_rows)


def test_defaults_follow_a_curved_boundary_that_the_scale_width_misses():
    X, y = _spirals(1000, seed=0)
    Xt, yt = _spirals(1000, seed=1)
    model = SuperSparseClassifier().fit(X, y)
    error = 1.0 - model.score(Xt, yt)
    # references computed another way: a linear SVM, and scikit-learn's RBF-SVM with
    # its own gamma="scale" width (which needs three times as many support vectors)
    linear = 1.0 - LinearSVC().fit(X, y).score(Xt, yt)
    svc = SVC(C=100.0, gamma=50.0).fit(X, y)
    assert 1.0 - svc.score(Xt, yt) < 0.02
    assert model.n_prototypes_ == 50 and len(svc.support_) > 2 * model.n_prototypes_
    assert error < 0.05 < 0.30 < linear
    # the former default width, 1 / sum of the standardised variances, stays near chance at
    # the former default penalty, and far behind even at the penalty lam="auto" picks for it
    # (the prototypes' squared-loss fit; the squared hinge refit on them closes some of the
    # gap, and stays behind)
    wide = SuperSparseClassifier(gamma="scale", lam=1e-3, loss="squared").fit(X, y)
    assert 1.0 - wide.score(Xt, yt) > 0.30
    wide_auto = SuperSparseClassifier(gamma="scale", loss="squared").fit(X, y)
    assert 1.0 - wide_auto.score(Xt, yt) > 0.15 > 3 * error
    refit = SuperSparseClassifier(gamma="scale").fit(X, y)
    assert refit.loss_ == "squared_hinge"
    assert 1.0 - wide_auto.score(Xt, yt) > 1.0 - refit.score(Xt, yt) > 3 * error


def test_prototype_step_is_divided_by_the_variance_of_regression_targets():
    rng = np.random.default_rng(2)
    t = rng.normal(3.0, 7.0, size=(500, 2))
    v = rng.uniform(0.5, 2.0, size=500)
    z = np.hstack([rng.random((500, 3)), np.ones((500, 1))])  # the constant last
    stats = GramState(z.T @ (v[:, None] * z), z.T @ (v[:, None] * t),
                      float(np.sum(v[:, None] * t * t)), float(v.sum()), 500)
    config = SimpleNamespace(step=0.5)
    variance = np.mean(np.average((t - np.average(t, axis=0, weights=v)) ** 2, axis=0,
                                  weights=v))
    assert prototype_step(config, TargetRows("regression"), stats) == pytest.approx(
        0.5 / variance)
    assert prototype_step(config, TargetRows("classification"), stats) == 0.5


def test_regressor_does_not_depend_on_the_units_of_the_target():
    # the prototype step used to be the same for any target: at y * 1000 the objective
    # did not move from its first value and R2 stayed at 0.74, at y * 1e-6 the fit stopped
    # after 5 steps; at y * 1e6 the L-BFGS curvature test, absolute in the gradient's
    # units, took every step for concave and ran to the cap; at y * 1e-9 an absolute floor
    # under the objective stopped it at once
    X, y = make_regression(400, 5, noise=5.0, random_state=0)
    base = SuperSparseRegressor().fit(X, y)
    assert base.score(X, y) > 0.95
    for scale, shift in ((1e3, 1e6), (1e-6, 0.0), (1e6, 0.0), (1e-9, 0.0)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            scaled = SuperSparseRegressor().fit(X, y * scale + shift)
        # neither stopped at once nor run to the cap (the failures above); the wide RBF
        # that gamma="auto" takes for this linear target leaves the path's length
        # sensitive to round-off: 72 to 102 steps on one machine, 46 to 102 on another,
        # each time with the same score to 1e-12, so the length is bounded from below only
        assert scaled.n_iter_ >= 0.25 * base.n_iter_
        assert scaled.score(X, y * scale + shift) == pytest.approx(base.score(X, y), abs=2e-3)
        np.testing.assert_allclose((scaled.predict(X) - shift) / scale, base.predict(X),
                                   rtol=0, atol=0.02 * np.std(y))


def test_lasso_coefficients_do_not_depend_on_the_targets_offset_or_units() -> None:
    # partial_fit's LASSO ran coordinate descent against the intercept on the uncentred
    # system: at an offset of 1e6 it stopped at the sweep cap with every coefficient zero
    # (R2 -0.02); the fallback penalty ignored the targets' spread (at y * 1e-6 every
    # coefficient was zero)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(1000, 5)).astype(np.float32)
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.5 * X[:, 2] + 0.1 * rng.normal(size=1000)
    online = SuperSparseRegressor(coef="lasso").partial_fit(X[:300], y[:300])
    base = SuperSparseRegressor(coef="lasso").fit(X[:400], y[:400])
    assert online.score(X[500:], y[500:]) > 0.9 and base.score(X[500:], y[500:]) > 0.9
    for scale, shift in ((1.0, 1e6), (1e-6, 0.0), (1e3, 5.0)):
        # at 1e6 the targets span fewer than 1,000 float32 steps: the cast is named
        coarse = pytest.warns(UserWarning, match="target") if shift > 1e3 else nullcontext()
        with coarse:
            moved = SuperSparseRegressor(coef="lasso").partial_fit(X[:300],
                                                                  y[:300] * scale + shift)
        np.testing.assert_allclose((moved.predict(X[500:]) - shift) / scale,
                                   online.predict(X[500:]), atol=0.02 * np.std(y))
        if shift > 1e3:  # the stream's float32 targets hold 1e6 + y to 0.06 only
            continue
        # fit's prototype steps stop a few steps apart on targets rounded to float32
        scaled = SuperSparseRegressor(coef="lasso").fit(X[:400], y[:400] * scale + shift)
        np.testing.assert_allclose((scaled.predict(X[500:]) - shift) / scale,
                                   base.predict(X[500:]), atol=0.05 * np.std(y))
        assert np.isclose(scaled.lam_, base.lam_ * scale, rtol=1e-5)


def test_a_plateau_on_many_features_does_not_stop_the_fit_at_its_start() -> None:
    # 1,000 sparse non-negative features: gamma="auto" is small, the first prototype
    # steps barely move the objective while its gradient grows along them; stopping there
    # left a model near chance (46 % error)
    rng = np.random.default_rng(0)
    n, d = 3000, 1000
    w = rng.normal(size=d) * (rng.random(d) < 0.3)
    X = ((rng.random((n, d)) < 0.03) * rng.exponential(1.0, (n, d))).astype(np.float32)
    score = X @ w
    y = (score + rng.normal(scale=0.3 * score.std(), size=n) > np.median(score)).astype(int)
    model = SuperSparseClassifier(random_state=0).fit(X[:2000], y[:2000])
    linear = LinearSVC(C=0.1).fit(X[:2000], y[:2000])
    error = 1 - model.score(X[2000:], y[2000:])
    assert model.n_iter_ > 10
    assert error < 1.25 * (1 - linear.score(X[2000:], y[2000:]))


def _width_losses(X, y, gamma, holdout_rows):
    """Held-out squared loss of ridge regression on the RBF similarities to the first 50
    rows, at its best penalty: the criterion of gamma="auto" computed with numpy."""
    z = (X - X.mean(0)) / X.std(0)
    C = z[:50]
    S = np.exp(-gamma * ((z[:, None, :] - C[None]) ** 2).sum(-1))
    train, valid = slice(None, -holdout_rows), slice(-holdout_rows, None)
    best = np.inf
    for alpha in 10.0 ** np.arange(-9, 3):
        fit = Ridge(alpha=alpha).fit(S[train], y[train])
        best = min(best, float(np.mean((fit.predict(S[valid]) - y[valid]) ** 2)))
    return best


def test_auto_width_widens_for_a_trend_and_keeps_its_own_for_a_curved_boundary():
    """gamma="auto" tries wider RBFs at the initial prototypes and takes one only when its
    held-out loss is at most a quarter of the prototypes' own width's. A linear target in
    20 dimensions, which 50 narrow bumps cannot follow (test MSE 7 to 10 times ridge
    regression's before), takes a wider one; two interleaved spirals keep their own."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4000, 20))
    y = X[:, :10] @ rng.uniform(20, 80, 10) + 10 * rng.normal(size=4000)
    Xt = rng.normal(size=(2000, 20))
    yt = Xt[:, :10] @ (np.linalg.lstsq(X[:, :10], y, rcond=None)[0])  # noise-free target
    model = SuperSparseRegressor(random_state=0).fit(X, y)
    own = SuperSparseRegressor(random_state=0, lam=1e-6, max_iter=0).fit(X, y).gamma_
    assert model.gamma_ < own
    assert any(model.gamma_ == pytest.approx(own * factor, rel=1e-9)
               for factor in AUTO_GAMMA_FACTORS[1:])
    ridge = Ridge().fit(X, y)
    mse = float(np.mean((model.predict(Xt) - yt) ** 2))
    assert mse < 2.0 * float(np.mean((ridge.predict(Xt) - yt) ** 2)) + 10.0
    # the criterion recomputed with numpy on the same kind of problem: the wide width's
    # held-out loss is far below a quarter of the narrow one's
    narrow, wide = (_width_losses(X[:2000], y[:2000], g, 400) for g in (own, own / 64))
    assert wide < 0.25 * narrow
    # a curved boundary keeps the prototypes' own width
    Xs, ys = _spirals(1000, seed=0)
    spirals = SuperSparseClassifier().fit(Xs, ys)
    spirals_own = SuperSparseClassifier(lam=1e-6, max_iter=0).fit(Xs, ys).gamma_
    assert spirals.gamma_ == spirals_own
