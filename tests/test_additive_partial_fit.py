"""AdditiveSVC.partial_fit: the feature map's range, sorted streams, every embedding."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from streamlearn.data.synthetic import additive_problem
from streamlearn.features import BSplineMap, FourierMap, HermiteMap
from streamlearn.io import load_model
from streamlearn.models import AdditiveSVC
from streamlearn.solvers.additive.driver import offset_of
from streamlearn.solvers.additive.growth import grown_bspline_map, reproject
from streamlearn.solvers.embedding import decision_ovr_chunk, embedding_params


def stream(model: AdditiveSVC, X: np.ndarray, y: np.ndarray, order: np.ndarray,
           n_chunks: int, epochs: int) -> AdditiveSVC:
    """``partial_fit`` over ``order`` cut into chunks: the first epoch visits the chunks in
    that order, later epochs in a seeded random order of the same chunks."""
    chunks = np.array_split(order, n_chunks)
    rng = np.random.default_rng(7)
    for epoch in range(epochs):
        visit = range(n_chunks) if epoch == 0 else rng.permutation(n_chunks)
        for i in visit:
            model.partial_fit(X[chunks[i]], y[chunks[i]], classes=[0, 1])
    return model


def test_a_stream_sorted_by_a_feature_scores_like_a_shuffled_stream():
    X, y = additive_problem(10_000, seed=1)
    Xt, yt = additive_problem(10_000, seed=2)
    data_range = np.stack([X.min(axis=0), X.max(axis=0)], axis=1)
    kw = dict(embedding="bspline", degree=1, n_bases=10, feature_range=data_range)
    by_feature = np.argsort(X[:, 0], kind="stable")
    shuffled = np.random.default_rng(0).permutation(len(y))
    on_sorted = stream(AdditiveSVC(**kw), X, y, by_feature, n_chunks=50, epochs=10)
    on_shuffled = stream(AdditiveSVC(**kw), X, y, shuffled, n_chunks=50, epochs=10)
    accuracy = on_shuffled.score(Xt, yt)
    assert accuracy > 0.88
    assert on_sorted.score(Xt, yt) > accuracy - 0.01
    # the map is the one of the given range, not of the first (sorted) chunk
    reference = BSplineMap(1, 10, 0).fit(data_range[:, 0], data_range[:, 1])
    np.testing.assert_array_equal(on_sorted.feature_map_.lo_, reference.lo_)
    np.testing.assert_array_equal(on_sorted.feature_map_.hi_, reference.hi_)
    np.testing.assert_array_equal(on_sorted.feature_map_.transform(Xt[:50]),
                                  reference.transform(Xt[:50]))


@pytest.mark.parametrize("degree, penalty_order, zero_preserving", [
    (1, 0, False), (2, 1, False), (3, 2, False), (1, 1, True)])
def test_grown_bspline_map_extends_the_knots_and_keeps_the_curves(degree, penalty_order,
                                                                  zero_preserving):
    rng = np.random.default_rng(degree)
    lo = np.zeros(3) if zero_preserving else np.array([-1.0, 0.0, 2.0])
    hi = np.array([1.0, 3.0, 2.5])
    old = BSplineMap(degree, 8, penalty_order, zero_preserving).fit(lo, hi)
    X = rng.uniform(-2.0, 4.0, size=(200, 3)).astype(np.float32)
    if zero_preserving:
        X = np.abs(X)
    new = grown_bspline_map(old, X, max_bases=1000)
    assert grown_bspline_map(new, X, max_bases=1000) is None  # it covers the rows
    assert np.all(new.lo_ <= X.min(axis=0)) and np.all(new.hi_ >= X.max(axis=0))
    # the same knot spacing, and the old knots are among the new ones
    step_old = (old.hi_ - old.lo_) / (old.n_bases - degree)
    step_new = (new.hi_ - new.lo_) / (new.n_bases - degree)
    np.testing.assert_allclose(step_new, step_old, rtol=1e-12)
    shift = (old.lo_ - new.lo_) / step_old
    np.testing.assert_allclose(shift, np.round(shift), atol=1e-9)
    # the re-projected models score like the old ones on the old range
    W = rng.normal(size=(2, embedding_params(old, 3).n_dims + 1))
    W_new = reproject(W, old, new, 3)
    inside = (lo + rng.uniform(0, 1, size=(500, 3)) * (hi - lo)).astype(np.float32)
    before = decision_ovr_chunk(inside, W, 1.0, *embedding_params(old, 3))
    after = decision_ovr_chunk(inside, W_new, 1.0, *embedding_params(new, 3))
    np.testing.assert_allclose(after, before, atol=1e-5 * np.abs(before).max())


def test_a_sorted_stream_grows_the_map_instead_of_clamping(tmp_path):
    X, y = additive_problem(10_000, seed=1)
    Xt, yt = additive_problem(10_000, seed=2)
    by_feature = np.argsort(X[:, 0], kind="stable")
    grown = stream(AdditiveSVC(n_bases=10), X, y, by_feature, n_chunks=50, epochs=10)
    assert grown.feature_map_.n_bases > 10
    assert grown.feature_map_.lo_[0] <= X[:, 0].min()
    assert grown.feature_map_.hi_[0] >= X[:, 0].max()
    # reference: the same stream clamped to the first chunk's range
    first = np.array_split(by_feature, 50)[0]
    first_range = np.stack([X[first].min(axis=0), X[first].max(axis=0)], axis=1)
    with pytest.warns(UserWarning, match="clamped"):
        clamped = stream(AdditiveSVC(n_bases=10, feature_range=first_range), X, y,
                         by_feature, n_chunks=50, epochs=10)
    assert clamped.feature_map_.n_bases == 10
    assert grown.score(Xt, yt) > clamped.score(Xt, yt) + 0.05
    # the grown map is what the model file keeps
    loaded = load_model(grown.save(tmp_path / "grown.slm"))
    assert loaded.feature_map_.n_bases == grown.feature_map_.n_bases
    np.testing.assert_array_equal(loaded.decision_function(Xt), grown.decision_function(Xt))
    # a shuffled stream's tails are clamped: the map keeps its bases
    shuffled = np.random.default_rng(0).permutation(len(y))
    assert stream(AdditiveSVC(n_bases=10), X, y, shuffled, 50, 1).feature_map_.n_bases == 10


def test_clamping_is_warned_of_by_its_share_of_all_the_rows_since_the_map_was_made():
    # a map from a first call of 1,000 rows leaves about 0.2 % of rows drawn alike outside
    # its range; later calls of 100 rows, where one value outside is 1 %, do not warn
    rng = np.random.default_rng(0)
    X = rng.normal(size=(21_000, 3)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    model = AdditiveSVC(progress=False, interactions=[(0, 1)])  # pairs: the map keeps its range
    model.partial_fit(X[:1000], y[:1000], classes=[0, 1])
    lo, hi = model.feature_map_.lo_, model.feature_map_.hi_
    later = X[1000:]
    per_call = [np.mean((c < lo) | (c > hi), axis=0) for c in np.split(later, 200)]
    assert max(float(np.max(s)) for s in per_call) > 0.01  # some calls alone would warn
    assert np.all(np.mean((later < lo) | (later > hi), axis=0) < 0.01)  # numpy's share
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for a in range(1000, 21_000, 100):
            model.partial_fit(X[a:a + 100], y[a:a + 100])
    # a first call of a third the spread: about 2/3 of every feature's later values lie
    # outside, warned of once, at numpy's share of the rows so far
    narrow = AdditiveSVC(progress=False, interactions=[(0, 1)])
    narrow.partial_fit(X[:1000] / 3, y[:1000], classes=[0, 1])
    lo, hi = narrow.feature_map_.lo_, narrow.feature_map_.hi_
    share = np.mean((X[1000:1100] < lo) | (X[1000:1100] > hi), axis=0)
    with pytest.warns(UserWarning, match="3 feature\\(s\\)") as caught:
        narrow.partial_fit(X[1000:1100], y[1000:1100])
    assert f"{share[0]:.1%} of the 100 rows" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        narrow.partial_fit(X[1100:1200], y[1100:1200])


def test_clamping_maps_warn_when_a_chunk_leaves_their_range():
    X, y = additive_problem(2_000, seed=3)
    order = np.argsort(X[:, 2], kind="stable")
    model = AdditiveSVC(embedding="fourier")
    model.partial_fit(X[order[:1000]], y[order[:1000]], classes=[0, 1])
    assert model.feature_map_.hi_[2] == pytest.approx(X[order[:1000], 2].max())
    with pytest.warns(UserWarning, match=r"'x2': 100.0% of the 1,000 rows .*feature_range"):
        model.partial_fit(X[order[1000:]], y[order[1000:]])
    with warnings.catch_warnings():  # once a feature: the same feature again is not warned
        warnings.simplefilter("error")
        model.partial_fit(X[order[1000:]], y[order[1000:]])
    # a given range covering the data: no warning
    ranged = AdditiveSVC(embedding="fourier", feature_range=(-6.0, 6.0))
    ranged.partial_fit(X[order[:1000]], y[order[:1000]], classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ranged.partial_fit(X[order[1000:]], y[order[1000:]])


@pytest.mark.parametrize("embedding, reference", [
    ("fourier", FourierMap(4, 1).fit(np.full(8, -6.0), np.full(8, 6.0))),
    ("hermite", HermiteMap(4, 1).fit(np.zeros(8), np.full(8, 12.0 / np.sqrt(12.0)))),
    ("linear", None),
])
def test_partial_fit_of_the_other_embeddings(embedding, reference):
    X, y = additive_problem(6_000, seed=4)
    Xt, yt = additive_problem(4_000, seed=5)
    model = AdditiveSVC(embedding=embedding, feature_range=(-6.0, 6.0))
    steps = []
    for part in np.array_split(np.random.default_rng(0).permutation(6_000), 6):
        model.partial_fit(X[part], y[part], classes=[0, 1])
        steps.append(model.t_ - offset_of(model.step_norm_sq_, model.pegasos_lam_))
    # one step a row after the offset t0 = R^2 / lam (R^2: the first chunk's embedded norms)
    assert steps == [1_000 * (i + 1) for i in range(6)] and model.step_norm_sq_ > 0
    if reference is None:
        assert model.feature_map_ is None
    else:
        # the range gives the map: bounds for Fourier, the uniform's mean and std for Hermite
        np.testing.assert_allclose(model.feature_map_.transform(Xt[:50]),
                                   reference.transform(Xt[:50]), rtol=1e-6, atol=1e-6)
    linear_floor = 0.6 if embedding == "linear" else 0.75
    assert model.score(Xt, yt) > linear_floor


def test_sample_weights_set_lam_from_their_sum():
    X, y = additive_problem(1_000, seed=6)
    weight = np.random.default_rng(1).integers(1, 4, size=1_000).astype(np.float64)
    model = AdditiveSVC(C=0.5).partial_fit(X, y, sample_weight=weight)
    assert model.lam_ == pytest.approx(1.0 / (0.5 * weight.sum()))
    assert model.C_ == pytest.approx(0.5)
    # PEGASOS averages the weighted losses over rows: the same objective scaled by W / n
    assert model.pegasos_lam_ == pytest.approx(model.lam_ * weight.sum() / 1_000)


def test_rows_of_weight_zero_are_no_rows():
    # junk rows of weight 0, far outside the others, in every call (the last call has no
    # other rows): the model is the one the calls without them give, bit for bit
    X, y = additive_problem(1_500, seed=3)
    rng = np.random.default_rng(4)
    weight = rng.choice([0.5, 1.0, 3.0], size=1_500)
    junk = np.zeros(1_500 + 600, dtype=bool)
    junk[rng.choice(len(junk), 600, replace=False)] = True
    junk[-40:] = True
    XA = np.empty((len(junk), X.shape[1]), dtype=X.dtype)
    XA[~junk], XA[junk] = X[: (~junk).sum()], 1e3 + rng.random((junk.sum(), X.shape[1]))
    yA = np.empty(len(junk), dtype=y.dtype)
    yA[~junk], yA[junk] = y[: (~junk).sum()], rng.integers(0, 2, junk.sum())
    wA = np.zeros(len(junk))
    wA[~junk] = weight[: (~junk).sum()]
    with_junk, without = AdditiveSVC(n_bases=12), AdditiveSVC(n_bases=12)
    for part in np.array_split(np.arange(len(junk)), 6):
        with_junk.partial_fit(XA[part], yA[part], classes=[0, 1], sample_weight=wA[part])
        real = part[~junk[part]]
        if real.size:
            without.partial_fit(XA[real], yA[real], classes=[0, 1], sample_weight=wA[real])
    assert with_junk.n_train_ == without.n_train_ == (~junk).sum()
    assert with_junk.feature_map_.get_params() == without.feature_map_.get_params()
    for name in ("lo_", "hi_"):
        np.testing.assert_array_equal(getattr(with_junk.feature_map_, name),
                                      getattr(without.feature_map_, name))
    for name in ("coef_d_", "state_w_d_", "t_", "lam_", "pegasos_lam_",
                 "feature_importances_"):
        np.testing.assert_array_equal(getattr(with_junk, name), getattr(without, name))
    assert np.all(XA[junk] > without.feature_map_.hi_)  # junk that would have grown the map


def test_c_set_between_calls_takes_effect_as_if_set_before():
    """set_params(C=...) after the first call gives the later calls the lam that C from
    the start would have given them (worked out from every row trained so far)."""
    X, y = additive_problem(1_200, seed=8)
    first = slice(0, 400)
    changed = AdditiveSVC(C=1.0, random_state=0).partial_fit(X[first], y[first])
    changed.set_params(C=0.01)
    changed.partial_fit(X[400:], y[400:])
    assert changed.lam_ == pytest.approx(1.0 / (0.01 * 1_200)) and changed.C_ == 0.01
    kept = AdditiveSVC(C=1.0, random_state=0).partial_fit(X[first], y[first])
    kept.partial_fit(X[400:], y[400:])
    assert kept.lam_ == pytest.approx(1.0 / 1_200)
    assert np.abs(changed.decision_function(X) - kept.decision_function(X)).max() > 0.1


@pytest.mark.parametrize("weight, match", [
    (-1.0, "Negative values in data passed to sample_weight"),
    (np.nan, "NaN or infinite"),
    (np.inf, "NaN or infinite"),
])
@pytest.mark.parametrize("call", ["first", "later"])
def test_bad_sample_weights_are_refused_and_the_model_kept(weight, match, call):
    from streamlearn.errors import DataError

    X, y = additive_problem(400, seed=9)
    w = np.ones(200)
    w[5] = weight
    model = AdditiveSVC(random_state=0)
    if call == "later":
        model.partial_fit(X[:200], y[:200])
    before = model.state_w_d_.copy() if call == "later" else None
    with pytest.raises(DataError, match=match):
        model.partial_fit(X[200:], y[200:], sample_weight=w)
    if before is not None:
        np.testing.assert_array_equal(model.state_w_d_, before)
        model.partial_fit(X[200:], y[200:], sample_weight=np.zeros(200))  # weighs nothing
        assert np.isfinite(model.state_w_d_).all()


@pytest.mark.parametrize("feature_range, match", [
    ((1.0, 1.0), "min < max"),
    ([(0.0, 1.0)] * 3, r"shape \(n_features, 2\) = \(8, 2\)"),
    ("wide", "feature_range.*must be an array-like"),
])
def test_bad_feature_range_is_refused(feature_range, match):
    X, y = additive_problem(200, seed=7)
    with pytest.raises(ValueError, match=match):
        AdditiveSVC(feature_range=feature_range).partial_fit(X, y)


def test_calls_of_one_row_are_regularised_as_fit_on_the_rows_so_far():
    """lam = 1 / (C n) with n every row trained so far: a stream of one-row calls learns
    about what one call of every row, and fit, do (with lam from the first call alone,
    1, it tested at 0.77). The map is the given range's, the same for every stream."""
    from sklearn.datasets import make_moons

    X, y = make_moons(400, noise=0.2, random_state=0)
    Xt, yt = make_moons(2_000, noise=0.2, random_state=1)
    X, Xt = X.astype(np.float32), Xt.astype(np.float32)
    data_range = np.stack([X.min(axis=0), X.max(axis=0)], axis=1)
    model = AdditiveSVC(feature_range=data_range, random_state=0)
    for i in range(len(y)):
        model.partial_fit(X[i:i + 1], y[i:i + 1], classes=[0, 1])
    assert model.lam_ == pytest.approx(1.0 / len(y)) and model.n_train_ == len(y)
    assert model.sample_weight_sum_ == len(y)
    one_call = AdditiveSVC(feature_range=data_range, random_state=0).partial_fit(X, y)
    assert model.score(Xt, yt) > one_call.score(Xt, yt) - 0.03
    fitted = AdditiveSVC(random_state=0).fit(X, y)
    assert model.score(Xt, yt) > fitted.score(Xt, yt) - 0.04


def test_the_step_offset_follows_lam():
    """t_ - t0 counts the steps, t0 = R^2 / pegasos_lam_ for the lam of the latest call."""
    X, y = additive_problem(300, seed=5)
    model = AdditiveSVC(random_state=0)
    for part in np.array_split(np.arange(300), 5):
        model.partial_fit(X[part], y[part], classes=[0, 1])
        t0 = offset_of(model.step_norm_sq_, model.pegasos_lam_)
        assert model.t_ - t0 == model.n_train_
        assert model.average_start_ == t0 + 60 + 1  # after the first call's 60 rows
    assert model.step_norm_sq_ > 0 and model.lam_ == pytest.approx(1.0 / 300)
