"""``AdditiveSVC(multiclass="auto")``: one-vs-one kept where the held-out rows prefer it.

The default trains one-vs-rest, then, for 3 to ``MAX_AUTO_OVO_CLASSES`` classes, the model
it kept once more one-vs-one, and keeps the scheme of lower held-out log-loss of
``predict_proba``. The references are the explicit schemes' fits and scikit-learn's
``log_loss`` on the held-out rows, rebuilt from the row hash the fit uses.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import log_loss

from streamlearn import AdditiveSVC
from streamlearn.io import load_model
from streamlearn.solvers.additive import HOLDOUT_SALT, Holdout
from streamlearn.solvers.additive.driver import MAX_AUTO_OVO_CLASSES
from streamlearn.solvers.calibration import TEMPERATURE_SCALES, temperature_proba


def ordered_classes(n: int, n_classes: int = 5, d: int = 6, seed: int = 0
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Quantile bands of a noisy linear score of ``d`` normal features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = X @ rng.normal(size=d) + 0.5 * rng.normal(size=n)
    edges = np.quantile(score, np.arange(1, n_classes) / n_classes)
    return X, np.digitize(score, edges)


@pytest.fixture(scope="module")
def ordered() -> dict:
    X, y = ordered_classes(4000)
    Xtr, ytr, Xte, yte = X[:3000], y[:3000], X[3000:], y[3000:]
    fits = {scheme: AdditiveSVC(multiclass=scheme, progress=False).fit(Xtr, ytr)
            for scheme in ("auto", "ovr", "ovo")}
    return {"X": Xtr, "y": ytr, "Xte": Xte, "yte": yte, **fits}


def accuracy(model: AdditiveSVC, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(model.predict(X) == y))


def test_auto_is_the_default_and_takes_one_vs_one_for_ordered_classes(ordered):
    assert AdditiveSVC().multiclass == "auto"
    auto, ovr, ovo = ordered["auto"], ordered["ovr"], ordered["ovo"]
    Xte, yte = ordered["Xte"], ordered["yte"]
    assert auto.multiclass_ == "ovo" and ovr.multiclass_ == "ovr" and ovo.multiclass_ == "ovo"
    assert auto.n_models_ == 10  # 5 * 4 / 2 class pairs
    # a middle band is a slab of the score that one-vs-rest's additive scores miss
    assert accuracy(auto, Xte, yte) > accuracy(ovr, Xte, yte) + 0.05
    assert abs(accuracy(auto, Xte, yte) - accuracy(ovo, Xte, yte)) <= 0.01
    # the one-vs-one prediction is the vote of the pairwise models' signs
    scores = auto.svm_scores(Xte)
    pairs = auto._pairs()
    winner = np.where(scores > 0, pairs.positive, pairs.negative)
    votes = np.stack([(winner == c).sum(axis=1) for c in range(5)], axis=1)
    top = votes == votes.max(axis=1, keepdims=True)
    assert np.all(top[np.arange(len(yte)), auto.predict(Xte)])


def test_the_scheme_kept_has_the_lower_held_out_log_loss(ordered):
    auto, ovr = ordered["auto"], ordered["ovr"]
    X, y = ordered["X"], ordered["y"]
    check = auto.multiclass_check_
    # the calibration rows: a hash of the row id, seeded by random_state (0)
    held = Holdout.fraction(auto.calibration_fraction, 0 ^ HOLDOUT_SALT).mask(
        np.arange(len(y)))
    assert held.sum() == auto.n_calibration_ == ovr.n_calibration_
    # one-vs-rest: the explicit fit trains the same model (its search kept the curves,
    # not the linear model, so no step differs); its loss at the best temperature of
    # the grid, from the probabilities before the temperature
    assert ovr.linear_check_["kept"] is False
    # (each class's Platt sigmoid of its model's score, normalised over the classes)
    f = ovr.svm_scores(X[held])
    sigmoids = 1.0 / (1.0 + np.exp(f * ovr.platt_a_ + ovr.platt_b_))
    log_p = np.log(sigmoids / sigmoids.sum(axis=1, keepdims=True))
    at_scales = [log_loss(y[held], temperature_proba(log_p, s), labels=range(5))
                 for s in TEMPERATURE_SCALES]
    assert check["ovr"] == pytest.approx(min(at_scales), rel=1e-6)
    # predict_proba refines that temperature between grid points: no worse
    assert log_loss(y[held], ovr.predict_proba(X[held])) <= min(at_scales) + 1e-4
    # one-vs-one: the same settings as the one-vs-rest model, trained alone
    fmap = ovr.feature_map_
    candidate = AdditiveSVC(multiclass="ovo", n_bases=fmap.n_bases,
                            interactions=[list(p) for p in ovr.interactions_],
                            pair_bases=getattr(ovr, "pair_bases_", "auto"),
                            value_terms=False, progress=False).fit(X, y)
    assert candidate.multiclass_ == "ovo"
    assert check["ovo"] == pytest.approx(
        log_loss(y[held], candidate.predict_proba(X[held])), rel=1e-6)
    assert check["kept"] == min(("ovr", "ovo"), key=lambda s: check[s]) == "ovo"
    # the linear model is then tried one-vs-one, against the candidate
    assert auto.linear_check_["curves"] == pytest.approx(check["ovo"], rel=1e-9)


def test_two_classes_and_too_many_classes_stay_one_vs_rest_untried():
    # two classes: one model either way, nothing more trained
    X, y = ordered_classes(2400, n_classes=2, seed=1)
    kw = dict(n_bases=8, interactions=0, value_terms=False, progress=False)
    auto = AdditiveSVC(**kw).fit(X, y)
    ovr = AdditiveSVC(multiclass="ovr", **kw).fit(X, y)
    assert auto.multiclass_ == "ovr" and not hasattr(auto, "multiclass_check_")
    assert auto.n_trainings_ == ovr.n_trainings_ == 1
    np.testing.assert_array_equal(auto.coef_d_, ovr.coef_d_)
    # more classes than the cap: one-vs-rest alone
    k = MAX_AUTO_OVO_CLASSES + 1
    X, y = ordered_classes(5000, n_classes=k, seed=2)
    auto = AdditiveSVC(**kw).fit(X, y)
    ovr = AdditiveSVC(multiclass="ovr", **kw).fit(X, y)
    assert auto.multiclass_ == "ovr" and not hasattr(auto, "multiclass_check_")
    assert auto.n_models_ == k and auto.n_trainings_ == ovr.n_trainings_ == 1
    np.testing.assert_array_equal(auto.predict_proba(X[:500]), ovr.predict_proba(X[:500]))
    # within the cap the same settings train one more model, one-vs-one
    X, y = ordered_classes(3000, n_classes=4, seed=3)
    auto = AdditiveSVC(**kw).fit(X, y)
    ovr = AdditiveSVC(multiclass="ovr", **kw).fit(X, y)
    assert auto.n_trainings_ == ovr.n_trainings_ + 1 == 2
    assert set(auto.multiclass_check_) == {"kept", "ovr", "ovo"}


def test_too_few_held_out_rows_stay_one_vs_rest_and_say_why():
    # 1,500 rows whose two small classes hold 45 rows together: about 150 held out, fewer
    # than the 200 a choice needs, and too few outside the largest class for folds to
    # choose instead (driver.MIN_CROSS_FIT_OTHERS)
    X, _ = ordered_classes(1500, seed=4)
    score = X @ np.arange(1.0, 7.0)
    y = np.digitize(score, np.quantile(score, [0.97, 0.985]))
    kw = dict(n_bases=8, interactions=0, value_terms=False, progress=False)
    # the small classes' few held-out rows cannot calibrate either: every row's scores do
    with pytest.warns(UserWarning, match="predict_proba is not calibrated"):
        auto = AdditiveSVC(**kw).fit(X, y)
    with pytest.warns(UserWarning, match="predict_proba is not calibrated"):
        ovr = AdditiveSVC(multiclass="ovr", **kw).fit(X, y)
    held = Holdout.fraction(0.1, 0 ^ HOLDOUT_SALT).mask(np.arange(len(y))).sum()
    assert 0 < auto.n_calibration_ == held < 200 and not hasattr(auto, "cross_fit_")
    assert auto.multiclass_ == "ovr" and auto.multiclass_check_["ovo"] is None
    assert auto.multiclass_check_["reason"].startswith(f"{held} held-out rows, fewer than 200")
    assert auto.n_trainings_ == ovr.n_trainings_
    np.testing.assert_array_equal(auto.predict(X), ovr.predict(X))
    # 199 rows of 5 classes: too few for a tenth to calibrate on, or for folds; every row
    # trains
    X, y = ordered_classes(199, seed=4)
    auto = AdditiveSVC(**kw).fit(X, y)
    assert auto.n_calibration_ == 0 and auto.multiclass_ == "ovr"
    assert auto.multiclass_check_ == {"kept": "ovr", "ovr": None, "ovo": None, "reason": (
        "0 held-out rows, fewer than 200 to compare one-vs-one on")}


def test_folds_choose_the_scheme_of_fewer_than_two_thousand_rows():
    # 1,500 rows of 5 ordered classes: about 150 held out; five folds of the row hash
    # compare the schemes (tests/test_additive_cross_fit.py checks their losses)
    X, y = ordered_classes(1500, seed=4)
    auto = AdditiveSVC(n_bases=8, interactions=0, value_terms=False,
                       progress=False).fit(X[:1000], y[:1000])
    check = auto.multiclass_check_
    assert auto.cross_fit_["n_folds"] == 5 and check["cross_fitted"]
    assert check["kept"] == ("ovo" if check["ovo"] < check["ovr"] else "ovr")
    assert auto.multiclass_ == check["kept"] == "ovo"  # ordered bands, as at 3,000 rows
    assert auto.n_calibration_ == 0 and auto.n_train_ == 1000


def test_a_chosen_scheme_survives_save_load_and_partial_fit(ordered, tmp_path):
    auto, Xte = ordered["auto"], ordered["Xte"]
    loaded = load_model(auto.save(tmp_path / "auto.slm"))
    assert loaded.multiclass == "auto" and loaded.multiclass_ == "ovo"
    assert loaded.multiclass_check_ == auto.multiclass_check_
    np.testing.assert_array_equal(loaded.predict(Xte), auto.predict(Xte))
    np.testing.assert_array_equal(loaded.predict_proba(Xte), auto.predict_proba(Xte))
    # partial_fit after fit goes on with the pairwise models, whatever the parameter says
    loaded.set_params(multiclass="ovr")
    loaded.partial_fit(ordered["X"][:500], ordered["y"][:500])
    assert loaded.coef_d_.shape[0] == 10 and loaded.multiclass_ == "ovo"
    # a model stored before multiclass_ existed: the parameter, "auto" read as one-vs-rest
    ovr = ordered["ovr"]
    old = load_model(ovr.save(tmp_path / "ovr.slm"))
    del old.multiclass_
    old.set_params(multiclass="auto")
    np.testing.assert_array_equal(old.predict_proba(Xte), ovr.predict_proba(Xte))
    # partial_fit from scratch compares nothing: "auto" is one-vs-rest
    stream = AdditiveSVC(progress=False).partial_fit(ordered["X"], ordered["y"],
                                                     classes=np.arange(5))
    assert stream.multiclass_ == "ovr" and stream.coef_d_.shape[0] == 5
