"""ShareBoost's defaults: held-out rows, ``n_rounds="auto"`` and ``l2="auto"``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from streamlearn import LocalEngine, open_dataset
from streamlearn.data.chunk import Chunk
from streamlearn.features.anchors import AnchorPieces
from streamlearn.models.shareboost import LinearColumns, ShareBoostClassifier
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.shareboost import driver
from streamlearn.solvers.shareboost.columns import AnchorColumns, StumpColumns
from streamlearn.solvers.shareboost.driver import (
    AUTO_ANCHOR_SIZE,
    AUTO_L2_RANGE,
    AUTO_WIDE_STUMP_SIZE,
    COLUMN_GROWTH,
    FALLBACK_ROUNDS,
    L2_FACTOR,
    ROUND_PATIENCE,
    ROUND_PATIENCE_SHARE,
    auto_families,
)
from streamlearn.solvers.shareboost.passes import ColumnScorePass, RestrictedObjectivePass
from tests.conftest import killing_engine


def _wide_problem(n: int, seed: int, d: int = 120, informative: int = 8, k: int = 4):
    """``k`` classes that depend on ``informative`` of ``d`` features, the rest noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    W = np.random.default_rng(99).normal(size=(informative, k)) * 1.5
    scores = X[:, :informative] @ W + rng.gumbel(size=(n, k))
    return X, np.argmax(scores, axis=1)


def test_chunk_select_keeps_the_rows_their_ids_and_weights() -> None:
    X = np.arange(12, dtype=np.float32).reshape(6, 2)
    chunk = Chunk(X, np.arange(6, dtype=np.int32), 40, weight=np.linspace(1, 2, 6,
                                                                          dtype=np.float32))
    keep = np.array([True, False, False, True, True, False])
    part = chunk.select(keep)
    np.testing.assert_array_equal(part.X, X[keep])
    assert part.X.flags.c_contiguous
    np.testing.assert_array_equal(part.y, [0, 3, 4])
    np.testing.assert_array_equal(part.rows, [40, 43, 44])
    np.testing.assert_array_equal(part.weight, chunk.weight[keep])
    assert chunk.select(np.zeros(6, dtype=bool)).n_rows == 0


def _family(name: str, rng: np.random.Generator, X: np.ndarray) -> tuple:
    # a candidate family of each kind, two selected candidates and their coefficients
    if name == "linear":
        return LinearColumns(np.full(5, 0.5)), np.array([3, 1]), rng.normal(size=(2, 3, 1))
    if name == "stumps":
        thresholds = np.sort(rng.normal(size=(5, 7)), axis=1).astype(np.float32)
        return StumpColumns(thresholds), np.array([9, 2]), rng.normal(size=(2, 3, 1))
    pieces = AnchorPieces.from_sample(rng.normal(size=(6, 5)), X[:300], 3, np.full(5, 0.5))
    return AnchorColumns(pieces), np.array([4, 11]), 0.3 * rng.normal(size=(2, 3, 6))


@pytest.mark.parametrize("kind", ["linear", "stumps", "anchors"])
def test_held_out_rows_leave_the_training_sums_and_are_tallied_apart(kind: str) -> None:
    # the training sums skip the held-out rows by their zero weight (training_rows)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 5)).astype(np.float32)
    y = rng.integers(0, 3, size=700)
    weight = rng.uniform(0.5, 2.0, size=700).astype(np.float32)
    holdout = Holdout.fraction(0.3, seed=5)
    held = holdout.mask(np.arange(700))
    family, selected, coef = _family(kind, rng, X)
    intercept = rng.normal(size=3)
    engine = LocalEngine(chunk_rows=90, progress=False)

    def run(pass_factory, rows, with_holdout):
        data = open_dataset(X[rows], target=y[rows], weight=weight[rows], chunk_rows=90)
        return engine.run(pass_factory(holdout if with_holdout else None), data)

    # on all rows with the holdout == on the training rows alone (row ids differ there, so
    # the reference runs without a holdout on the subset)
    every = np.ones(700, dtype=bool)
    for factory in (lambda h: RestrictedObjectivePass(family, selected, coef, intercept, h),
                    lambda h: ColumnScorePass(family, selected, coef, intercept, h)):
        split = run(factory, every, True)
        train = run(factory, ~held, False)
        assert split.loss == pytest.approx(train.loss, rel=1e-9)
        assert split.weight == pytest.approx(float(weight[~held].sum()), rel=1e-6)
        np.testing.assert_allclose(split.gradient, train.gradient, rtol=1e-9, atol=1e-12)
    tallied = run(lambda h: RestrictedObjectivePass(family, selected, coef, intercept, h,
                                                    held_out=True), every, True)
    alone = run(lambda h: RestrictedObjectivePass(family, selected, coef, intercept, h),
                held, False)
    assert tallied.held_weight == pytest.approx(float(weight[held].sum()), rel=1e-6)
    assert tallied.held_loss == pytest.approx(alone.loss, rel=1e-9)
    assert tallied.held_errors == pytest.approx(alone.errors, rel=1e-9)
    # the held-out pass adds no gradient and no training sums
    assert tallied.loss == tallied.weight == 0.0 and not tallied.gradient.any()
    with pytest.raises(ValueError, match="needs a holdout"):
        RestrictedObjectivePass(family, selected, coef, intercept, held_out=True)


def test_auto_l2_is_its_stated_rule_on_small_data() -> None:
    X, y = _wide_problem(190, seed=1, d=10)
    X[:, 0] *= 40.0  # units do not matter: every feature is divided by its largest value
    model = ShareBoostClassifier().fit(X, y)
    z = X.astype(np.float64) / np.abs(X).max(axis=0)
    expected = L2_FACTOR * np.mean(np.sum(z * z, axis=1)) / 190
    # 190 rows hold out fewer than 200, and are too few to cross-fit: no held-out rows,
    # FALLBACK_ROUNDS, one penalty
    assert model.validation_ is None
    assert model.l2_ == pytest.approx(expected, rel=1e-6)
    assert model.n_iter_ == min(FALLBACK_ROUNDS, 10)


def test_features_far_from_zero_are_centred_and_keep_the_model() -> None:
    # a feature whose values all lie on one side of zero (a year, kelvin) is moved to the
    # middle of its range: before, every such column sat near 1, a second intercept, the
    # penalty grew with E||z||^2 and the fit fell to the majority class (0.48 accuracy
    # at an offset of 1000 where the centred data gave 0.65)
    X, y = _wide_problem(400, seed=2, d=6, informative=4)
    base = ShareBoostClassifier(features="linear").fit(X, y)
    far = ShareBoostClassifier(features="linear").fit(X + 1000.0, y)
    assert far.family_.shift is not None
    agree = np.mean(base.predict(X) == far.predict(X + 1000.0))
    assert agree > 0.98
    assert far.score(X + 1000.0, y) == pytest.approx(base.score(X, y), abs=0.02)
    # the stated penalty rule on the centred columns
    lo, hi = X.min(axis=0) + 1000.0, X.max(axis=0) + 1000.0
    z = ((X + 1000.0).astype(np.float64) - (lo + hi) / 2) / ((hi - lo) / 2)
    assert far.l2_ == pytest.approx(L2_FACTOR * np.mean(np.sum(z * z, axis=1)) / 400,
                                    rel=1e-3)


@pytest.mark.parametrize("value", [1e12, -1e15, 1e20])
def test_a_constant_column_far_from_zero_is_the_zero_column(value: float) -> None:
    # centred by its own value, x * scale less its offset cancelled two equal numbers of
    # 1e12 and more: a bare StopIteration, or at 1e20 a model of zero weights
    X, y = _wide_problem(400, seed=3, d=4, informative=3)
    base = ShareBoostClassifier(features="linear").fit(X, y)
    with_constant = np.c_[X, np.full(len(y), value)]
    model = ShareBoostClassifier(features="linear").fit(with_constant, y)
    assert model.family_.scale[-1] == 0.0
    assert np.mean(model.predict(with_constant) == base.predict(X)) > 0.98


@pytest.mark.parametrize("value", [1e8, 3e20, -5e25])
def test_a_constant_column_far_from_zero_leaves_the_anchors_as_they_were(value: float) -> None:
    # a constant adds nothing to a distance in exact arithmetic; measured as it was, its
    # square swamped the other features' in float32 (1e8: test accuracy 92.7 -> 84.5 % on
    # the problem below) and overflowed at 3e20, as its column of the pieces' linear part
    # did (chance accuracy, numpy's overflow warnings from L-BFGS)
    import warnings

    X, y = _wide_problem(1500, seed=4, d=6, informative=4, k=2)
    base = ShareBoostClassifier(features="anchors", random_state=0).fit(X, y)
    with_constant = np.c_[X, np.full(len(y), value)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = ShareBoostClassifier(features="anchors", random_state=0).fit(with_constant, y)
        agree = np.mean(model.predict(with_constant) == base.predict(X))
    assert model.family_.pieces.scale[-1] == 0.0
    assert model.family_.pieces.metric[-1] <= 1.0 / abs(value)
    assert agree > 0.97


@pytest.mark.parametrize("features", ["anchors", "stumps", "linear"])
def test_a_feature_constant_in_training_moves_no_prediction(features: str) -> None:
    # the fit learned nothing of the column's other values: the anchors measured it in
    # their distances (at most 1 in size), so that a column at 3 in training and normal
    # of sd 10 at prediction changed 3.4 % of the predictions
    X, y = _wide_problem(1000, seed=6, d=6, informative=4, k=2)
    with_constant = np.c_[X, np.full(len(y), 3.0, dtype=np.float32)]
    model = ShareBoostClassifier(features=features, random_state=0).fit(with_constant, y)
    varied = with_constant.copy()
    varied[:, -1] = np.random.default_rng(0).normal(scale=10.0, size=len(y))
    np.testing.assert_allclose(model.decision_function(varied),
                               model.decision_function(with_constant), atol=1e-6)
    if features == "anchors":
        assert model.family_.pieces.metric[-1] == 0.0


def test_features_moved_far_from_zero_leave_the_anchors_as_they_were() -> None:
    # distances are measured about the features' middles (AnchorPieces.origin): moved by
    # 1e4, unit features kept their rows' distances only to a few units of float32
    # rounding (test accuracy 92.7 -> 85.0 % on make_classification's rows)
    X, y = _wide_problem(1500, seed=5, d=6, informative=4, k=2)
    base = ShareBoostClassifier(features="anchors", random_state=0).fit(X, y)
    moved = X + np.float32(1e4)
    model = ShareBoostClassifier(features="anchors", random_state=0).fit(moved, y)
    assert np.mean(model.predict(moved) == base.predict(X)) > 0.97
    # the centres stay in the space of x * metric, where the distances are those of
    # float64 arithmetic on the rows
    pieces = model.family_.pieces
    direct = ((moved[:50, None, :].astype(np.float64) * pieces.metric
               - pieces.centres[None, :, :].astype(np.float64)) ** 2).sum(axis=2)
    np.testing.assert_allclose(pieces.distances(moved[:50]), direct, rtol=1e-3, atol=1e-3)


def test_auto_rounds_stop_at_the_lowest_held_out_loss_and_beat_all_columns() -> None:
    X, y = _wide_problem(3000, seed=2)
    Xt, yt = _wide_problem(4000, seed=3)
    model = ShareBoostClassifier().fit(X, y)
    v = model.validation_
    assert v is not None and v["held_out_weight"] > 200
    assert len(v["l2_candidates"]) == len(AUTO_L2_RANGE)
    assert model.l2_ == pytest.approx(v["l2_candidates"][int(np.argmin(v["l2_held_out_loss"]))])
    losses = np.array(v["held_out_loss"])
    best = v["best_round"]
    sizes = np.array(model.path_["n_selected"])
    assert model.n_iter_ == sizes[best] == len(model.selected_features_)
    # each round adds the best-scored columns, up to an eighth of those selected
    added = np.diff(sizes)
    expected = np.maximum(1, (COLUMN_GROWTH * sizes[:-1]).astype(int))
    assert (added == expected)[:-1].all() and 1 <= added[-1] <= expected[-1]
    assert sizes[-1] > 16 and added.max() > 1  # groups on this problem
    # the kept round has the lowest held-out loss of the path, which ran the patience
    # (in columns) past it, and stopped at the first round that did (or ran out)
    assert best == int(np.argmin(losses))
    patience = max(ROUND_PATIENCE, int(ROUND_PATIENCE_SHARE * sizes[best]))
    assert (sizes[-1] - sizes[best] >= patience > sizes[-2] - sizes[best]
            or sizes[-1] == X.shape[1])
    # the informative features are kept, most noise is left out
    assert set(range(8)) <= set(model.selected_features_.tolist())
    assert model.n_iter_ < 60
    error = 1.0 - model.score(Xt, yt)
    # the paper's algorithm run through every column without a penalty overfits the noise
    every = ShareBoostClassifier(n_rounds=X.shape[1], l2=0.0, refit_iter=30).fit(X, y)
    assert error < 1.0 - every.score(Xt, yt)
    # a reference computed another way: scikit-learn's multinomial logistic regression
    reference = LogisticRegression(max_iter=2000).fit(X, y)
    assert error <= 1.0 - reference.score(Xt, yt) + 0.01


def test_auto_rounds_of_stumps_add_one_stump_each() -> None:
    # stumps of one feature score alike: their rounds keep one column each
    X, y = _wide_problem(2000, seed=4, d=24)
    model = ShareBoostClassifier(features="stumps", n_bins=6).fit(X, y)
    sizes = np.array(model.path_["n_selected"])
    assert sizes[-1] > 16
    np.testing.assert_array_equal(np.diff(sizes), 1)


# passes of this fit: about 225 in the greedy path, then the kept columns' fit at each
# penalty; 150 is inside the path, 235 inside the fit at the second penalty
@pytest.fixture(scope="module")
def wide_whole() -> tuple[np.ndarray, np.ndarray, ShareBoostClassifier]:
    """The uninterrupted fit that both kill points resume to, fitted once."""
    X, y = _wide_problem(2500, seed=7, d=30)
    with pytest.MonkeyPatch.context() as patch:  # the families the test below fits
        patch.setattr(driver, "AUTO_ANCHOR_SIZE", 0)
        return X, y, ShareBoostClassifier(chunk_rows=500).fit(X, y)


@pytest.mark.parametrize("kill_at", [150, 235])
def test_auto_fit_killed_mid_path_resumes_to_the_same_model(checkpoint_dir, kill_at: int,
                                                            wide_whole, monkeypatch) -> None:
    # linear columns and stumps, as the pass counts above: the anchors' checkpointed
    # fits would make this test ten times as long (their resume: tests/test_kill_resume.py)
    monkeypatch.setattr(driver, "AUTO_ANCHOR_SIZE", 0)
    X, y, whole = wide_whole

    Killed = killing_engine()

    Killed.kill_at = kill_at
    with pytest.raises(RuntimeError, match="killed"):
        ShareBoostClassifier(chunk_rows=500).fit(X, y, checkpoint=checkpoint_dir / "ckpt",
                                                 engine=Killed(progress=False))
    Killed.kill_at = None
    resumed = ShareBoostClassifier(chunk_rows=500).fit(X, y, checkpoint=checkpoint_dir / "ckpt",
                                                       engine=Killed(progress=False))
    np.testing.assert_array_equal(resumed.selected_features_, whole.selected_features_)
    assert resumed.l2_ == whole.l2_
    np.testing.assert_allclose(resumed.predict_proba(X[:200]), whole.predict_proba(X[:200]),
                               rtol=1e-9, atol=1e-12)


def _two_moons(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_moons

    X, y = make_moons(n, noise=0.25, random_state=seed)
    return X.astype(np.float32), y


def test_auto_features_keep_the_family_of_lower_held_out_loss() -> None:
    X, y = _two_moons(2500, 0)
    auto = ShareBoostClassifier(progress=False).fit(X, y)
    fits = {f: ShareBoostClassifier(features=f, progress=False).fit(X, y)
            for f in ("linear", "stumps", "anchors")}
    # each family's held-out loss is that of its own fit's final model
    losses = {}
    for family, model in fits.items():
        v = model.validation_
        losses[family] = min(v["l2_held_out_loss"]) if v.get("l2_held_out_loss") \
            else v["held_out_loss"][v["best_round"]]
    assert auto.families_held_out_loss_ == pytest.approx(losses, rel=1e-12)
    # the moons are not linearly separable: the kept family is a non-linear one, and
    # exactly that family's own fit
    best = min(losses, key=losses.get)
    assert auto.features_ == best != "linear"
    kept = fits[best]
    assert type(auto.family_) is type(kept.family_)
    np.testing.assert_array_equal(auto.selected_features_, kept.selected_features_)
    np.testing.assert_array_equal(auto.decision_function(X), kept.decision_function(X))
    assert auto.path_["n_selected"] == kept.path_["n_selected"]
    Xt, yt = _two_moons(2000, 1)
    assert auto.score(Xt, yt) > fits["linear"].score(Xt, yt) + 0.05


def _spirals(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals ``r = theta`` in the unit disc, a little noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    theta = rng.uniform(0.5 * np.pi, 3.5 * np.pi, n)
    r = theta / (3.5 * np.pi)
    X = np.c_[r * np.cos(theta + np.pi * y), r * np.sin(theta + np.pi * y)]
    return (X + rng.normal(scale=0.02, size=X.shape)).astype(np.float32), y


def test_auto_features_take_anchors_where_balls_fit_the_classes() -> None:
    """Spirals: no threshold on one coordinate, nor a line, follows the arms; pieces on
    balls do, and the held-out loss keeps them."""
    from sklearn.neighbors import KNeighborsClassifier

    X, y = _spirals(600, 0)
    auto = ShareBoostClassifier(validation_fraction=0.4, progress=False).fit(X, y)
    assert set(auto.families_held_out_loss_) == {"linear", "stumps", "anchors"}
    assert auto.features_ == "anchors" and isinstance(auto.family_, AnchorColumns)
    Xt, yt = _spirals(2000, 1)
    stumps = ShareBoostClassifier(features="stumps", validation_fraction=0.4,
                                  progress=False).fit(X, y)
    # a reference computed another way: nearest neighbours follow the arms
    knn = KNeighborsClassifier(5).fit(X, y).score(Xt, yt)
    assert auto.score(Xt, yt) > max(stumps.score(Xt, yt) + 0.1, knn - 0.05)


def test_auto_features_try_anchors_below_their_size_rule() -> None:
    """Rows x classes x (features + 1) up to AUTO_ANCHOR_SIZE; stumps alone above it (with
    one held-out share; cross-fitted, linear columns alone)."""
    config = ShareBoostClassifier()._config("linear")
    three, two = ("linear", "stumps", "anchors"), ("linear", "stumps")
    assert 20_000 * 10 * (9 + 1) == AUTO_ANCHOR_SIZE
    assert auto_families(config, 20_000, 9, False, 10) == three
    assert auto_families(config, 20_000, 9, False, 11) == two
    assert auto_families(config, 20_000, 22, False, 2) == three
    assert auto_families(config, 16_000, 16, False, 26) == two
    assert auto_families(config, 20_000, 9, True, 2) == ("linear",)  # sparse rows
    # 1,000 rows hold out 100: cross-fitted, five folds and the final fit count six times
    assert 6 * 1_000 * 33 * (9 + 1) <= AUTO_ANCHOR_SIZE < 6 * 1_000 * 34 * (9 + 1)
    assert auto_families(config, 1_000, 9, False, 33) == three
    # cross-fitted, the stumps are held to the same bound (digits: 1,258 x 10 x 65 x 6)
    assert auto_families(config, 1_000, 9, False, 34) == ("linear",)
    assert auto_families(config, 199, 9, False, 2) == ("linear",)  # too few to cross-fit
    # more than 64 features: linear columns and stumps up to AUTO_WIDE_STUMP_SIZE
    assert 20_000 * 2 * (124 + 1) == AUTO_WIDE_STUMP_SIZE
    assert auto_families(config, 20_000, 124, False, 2) == two
    assert auto_families(config, 20_000, 125, False, 2) == ("linear",)
    assert auto_families(config, 7_291, 256, False, 10) == ("linear",)  # USPS
    assert auto_families(config, 20_000, 65, True, 2) == ("linear",)  # sparse rows
    # cross-fitted: six fits (1,000 rows: 6 x 1,000 x 2 x 201 = 2.4e6)
    assert auto_families(config, 1_000, 200, False, 2) == two
    assert auto_families(config, 1_000, 200, False, 5) == ("linear",)


def test_auto_features_stay_linear_on_linear_wide_or_small_data() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0, 1.5]) > 0).astype(int)
    linear = ShareBoostClassifier(progress=False).fit(X, y)
    assert linear.features_ == "linear"
    losses = linear.families_held_out_loss_
    assert set(losses) == {"linear", "stumps", "anchors"}
    assert losses["linear"] < min(losses["stumps"], losses["anchors"])
    # more than 64 features: stumps are compared (small enough), linear columns kept
    W = np.c_[X, rng.normal(size=(3000, 60))].astype(np.float32)
    wide = ShareBoostClassifier(progress=False).fit(W, y)
    assert wide.features_ == "linear"
    assert set(wide.families_held_out_loss_) == {"linear", "stumps"}
    small = ShareBoostClassifier(progress=False).fit(X[:190], y[:190])  # too few rows
    assert small.features_ == "linear" and small.families_held_out_loss_ is None


def test_auto_rounds_need_fifty_held_out_rows_outside_the_largest_class() -> None:
    """A class of 1 %: its 5 expected held-out rows do not choose the rounds, the family,
    the penalty or the temperature (they kept 3 stumps, AUC 0.93 against 0.98); its 51
    rows in all do, each held out once by cross-fitting."""
    from sklearn.datasets import make_classification
    from sklearn.metrics import roc_auc_score

    X, y = make_classification(8000, 10, n_informative=5, weights=[0.99], flip_y=0,
                               random_state=4)
    X = X.astype(np.float32)
    train, test = np.arange(5000), np.arange(5000, 8000)
    assert 0.1 * 5000 * y[train].mean() < 10 and y[train].sum() >= 50 and y[test].sum() > 20
    model = ShareBoostClassifier(progress=False).fit(X[train], y[train])
    assert model.validation_["cross_fitted"] and model.proba_rows_ == "cross-fitted"
    assert model.families_held_out_loss_ is not None  # the families compared on them too
    every = ShareBoostClassifier(validation_fraction=None, progress=False).fit(X[train],
                                                                                y[train])
    assert every.validation_ is None and every.proba_rows_ == "training"
    assert model.score(X[test], y[test]) >= every.score(X[test], y[test])
    # a reference computed another way: scikit-learn's logistic regression
    reference = LogisticRegression(max_iter=2000).fit(X[train], y[train])
    auc = roc_auc_score(y[test], model.predict_proba(X[test])[:, 1])
    assert auc > roc_auc_score(y[test], reference.predict_proba(X[test])[:, 1]) - 0.02
    # the bar: 50 rows outside the largest class expected among the 10 % held out (of
    # 2,000 rows, 500 of a second class give 50, 499 give 49.9; 250 of weight 3 hold 30 %
    # of the weight, 60; two classes of 250 give 25 each, 50 together); below it the
    # rows are cross-fitted (linear columns: the rule is the same for every family)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2000, 3)).astype(np.float32)
    for counts, weight, held in [((1500, 500), 1.0, True), ((1501, 499), 1.0, False),
                                 ((1750, 250), 3.0, True), ((1500, 250, 250), 1.0, True),
                                 ((1501, 250, 249), 1.0, False)]:
        y = np.repeat(np.arange(len(counts)), counts)
        w = np.where(y > 0, weight, 1.0)
        fitted = ShareBoostClassifier(features="linear", progress=False).fit(
            X, y, sample_weight=w)
        assert fitted.validation_["cross_fitted"] != held
    # class_weight="balanced" gives 499 rows half the weight, not more rows
    for counts, held in [((1500, 500), True), ((1501, 499), False)]:
        y = np.repeat([0, 1], counts)
        fitted = ShareBoostClassifier(features="linear", class_weight="balanced",
                                      progress=False).fit(X, y)
        assert fitted.validation_["cross_fitted"] != held


def test_holdout_for_choosing_needs_enough_expected_rows() -> None:
    assert Holdout.for_choosing(None, 10**6, 1) is None
    assert Holdout.for_choosing(0.1, 1999, 1) is None  # 199.9 rows expected
    chosen = Holdout.for_choosing(0.1, 2000, 1)
    assert chosen == Holdout.fraction(0.1, 1)
