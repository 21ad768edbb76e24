"""``MixtureSVC(tau="auto")``: the gating scale chosen on the guard's held-out rows.

Reference: the choice between the factors 16 and 4 is recomputed from fits at each scale
given as a number, on the held-out rows and their two halves rebuilt from the row hashes
the fit uses, each half scored with the temperature that minimises scikit-learn's ``log_loss`` on
the other half.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit

from streamlearn.models.mixture import MixtureSVC
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.mixture import driver
from tests.test_mixture_multiclass import _held_out, _scale_of_lowest_log_loss
from tests.test_model_file import _rewritten


def ring(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A ring in the first 2 of 8 normal features: softer gates win."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    return X.astype(np.float32), (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4).astype(int)


def local_experts(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """30 clusters in 40 features, each with a boundary of its own through its centre:
    blending neighbouring experts loses, crisp gates win."""
    fixed = np.random.default_rng(100)
    centres, normals = fixed.normal(size=(30, 40)) * 6.0, fixed.normal(size=(30, 40))
    rng = np.random.default_rng(seed)
    i = rng.integers(0, 30, n)
    X = centres[i] + rng.normal(size=(n, 40))
    return X.astype(np.float32), (np.einsum("ij,ij->i", X - centres[i], normals[i]) > 0
                                  ).astype(int)


def _cross_fitted(model: MixtureSVC, X: np.ndarray, y: np.ndarray, half: np.ndarray
                  ) -> np.ndarray:
    """Each row's log-loss of two classes, each half scored with the temperature of lowest
    ``log_loss`` on the other half."""
    f = model.mixture_log_odds(X).astype(np.float64)[:, 0]
    losses = np.empty(len(y))
    for part in (half, ~half):
        rest = ~part
        s = _scale_of_lowest_log_loss(
            lambda s, rest=rest: np.column_stack([1.0 - expit(s * f[rest]),
                                                  expit(s * f[rest])]), y[rest], 2)
        p = expit(s * f[part])
        losses[part] = -np.log(np.clip(np.where(y[part] == 1, p, 1.0 - p), 1e-15, 1.0))
    return losses


@pytest.mark.parametrize("problem, factor", [(ring, 4.0), (local_experts, 16.0)],
                         ids=["ring", "local_experts"])
def test_auto_keeps_the_factor_of_clearly_lower_cross_fitted_held_out_log_loss(
        problem, factor: float, monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = problem(4000)
    # three epochs at a tolerance every lane meets: each candidate trains exactly as the
    # fit at its scale given as a number; neither leaves the passes early, so the final
    # comparison decides
    monkeypatch.setattr(driver, "TAU_DROP_FIRST_EPOCH", 4)
    # unweighted features: the ring's six of noise then spread the gates, where the
    # softer ones win (weighted by their relevance, the ring's two take the distances
    # and factor 16 is kept)
    params = {"epochs": 3, "tol": 1e6, "random_state": 0, "progress": False,
              "weight_features": False}
    auto = MixtureSVC(**params).fit(X, y)
    check = auto.tau_check_
    assert check["factors"] == list(driver.TAU_FACTORS) == [16.0, 4.0]
    assert check["taus"][1] == pytest.approx(check["taus"][0] / 4.0, rel=1e-12)
    fixed = [MixtureSVC(tau=tau, **params).fit(X, y) for tau in check["taus"]]
    for model in fixed:
        assert not hasattr(model, "tau_check_")
        assert model.validation_["kept"] == "mixture"
    held = _held_out(auto, len(y))
    half = Holdout.fraction(0.5, 0 ^ driver.CROSS_FIT_SALT).mask(np.flatnonzero(held))
    losses = [_cross_fitted(model, X[held], y[held], half) for model in fixed]
    diff = losses[0] - losses[1]
    se = np.std(diff) / np.sqrt(len(diff))
    # the driver refines a grid of scales, the reference a bounded search: close, not equal
    np.testing.assert_allclose(check["losses"], [loss.mean() for loss in losses], rtol=5e-3)
    assert check["standard_errors"][0] == 0.0
    assert check["standard_errors"][1] == pytest.approx(se, rel=2e-2)
    gain = losses[0].mean() - losses[1].mean()
    assert check["kept"] == (4.0 if gain > driver.TAU_GAIN_STANDARD_ERRORS * se else 16.0)
    assert check["kept"] == factor
    kept = fixed[check["factors"].index(factor)]
    assert auto.tau_ == kept.tau_ == check["taus"][check["factors"].index(factor)]
    np.testing.assert_array_equal(auto.predict_proba(X), kept.predict_proba(X))
    # the factor kept predicts new rows better
    Xn, yn = problem(4000, seed=1)
    errors = [np.mean(model.predict(Xn) != yn) for model in fixed]
    assert errors[check["factors"].index(factor)] < errors[1 - check["factors"].index(factor)]


def test_auto_drops_a_clearly_losing_factor_early_and_keeps_the_other_as_trained_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = ring(4000)
    lanes_per_pass: list[int] = []

    class Counted(driver.StochasticEpochPass):  # the lanes each epoch's pass trains
        def __init__(self, positives, *args, **kwargs) -> None:
            lanes_per_pass.append(len(positives))
            super().__init__(positives, *args, **kwargs)

    monkeypatch.setattr(driver, "StochasticEpochPass", Counted)
    # a tolerance every lane meets at the third epoch, more epochs allowed
    params = {"epochs": 6, "tol": 1e6, "random_state": 0, "progress": False}
    auto = MixtureSVC(**params).fit(X, y)
    check = auto.tau_check_
    # the softer gates' held-out loss was clearly lower after the second epoch: factor
    # 16's lanes left the third pass, and no final comparison ran
    assert check["epoch"] == driver.TAU_DROP_FIRST_EPOCH == 2
    assert check["kept"] == 4.0 and "losses" not in check
    gain = check["epoch_losses"][0] - check["epoch_losses"][1]
    assert gain > driver.TAU_GAIN_STANDARD_ERRORS * check["epoch_standard_error"] > 0.0
    assert lanes_per_pass == [3, 3, 2]  # two mixtures and the linear SVM, then one less
    # the mixture kept is the one trained at its scale given as a number, three epochs
    lanes_per_pass.clear()
    alone = MixtureSVC(tau=check["taus"][1], **params).fit(X, y)
    assert lanes_per_pass == [2, 2, 2]
    assert auto.tau_ == alone.tau_ and auto.n_iter_ == alone.n_iter_ == 3
    assert auto.validation_["kept"] == alone.validation_["kept"] == "mixture"
    np.testing.assert_array_equal(auto.predict_proba(X), alone.predict_proba(X))
    # and the epoch's losses are the fit's own record of its held-out rows at that epoch
    assert alone.history_[0][2]["held_out_scaled_loss"] == pytest.approx(
        check["epoch_losses"][1], rel=1e-12)


def test_one_scale_without_held_out_rows_or_with_tau_given() -> None:
    X, y = ring(2400)
    auto = MixtureSVC(random_state=0, progress=False).fit(X, y)
    no_guard = MixtureSVC(validation_fraction=None, random_state=0, progress=False).fit(X, y)
    assert not hasattr(no_guard, "tau_check_") and no_guard.validation_ is None
    # the same k-means centres (they come before the held-out rows): the factor 16's scale
    assert no_guard.tau_ == auto.tau_check_["taus"][0]
    given = MixtureSVC(tau=0.5, random_state=0, progress=False).fit(X, y)
    assert given.tau_ == 0.5 and not hasattr(given, "tau_check_")
    V = np.random.default_rng(0).normal(size=(6, 3))
    nearest = ((V[:, None] - V[None]) ** 2).sum(axis=2) + np.diag(np.full(6, np.inf))
    taus = driver.gating_candidates(V, "auto", True)
    np.testing.assert_allclose(taus, [c / np.median(nearest.min(axis=1))
                                      for c in driver.TAU_FACTORS], rtol=1e-12)
    assert driver.gating_candidates(V, "auto", False) == taus[:1]
    assert driver.gating_candidates(V, 0.5, True) == [0.5]
    # no two distinct centres: one scale, 1
    assert driver.gating_candidates(np.zeros((3, 2)), "auto", True) == [1.0]


def test_tau_check_round_trips_model_files_and_old_files_load(tmp_path: Path) -> None:
    X, y = ring(2400)
    model = MixtureSVC(random_state=0, progress=False).fit(X, y)
    check = model.tau_check_
    assert check["kept"] in driver.TAU_FACTORS
    loaded = MixtureSVC.load(model.save(tmp_path / "auto.slm"))
    assert loaded.tau_check_ == check and loaded.tau_ == model.tau_
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    # a file from before the choice: no tau_check_, the same predictions
    old = _rewritten(tmp_path / "auto.slm", tmp_path / "old.slm",
                     lambda h: h["metadata"]["learned"].pop("tau_check_"))
    before = MixtureSVC.load(old)
    assert "tau_check_" not in vars(before)
    np.testing.assert_array_equal(before.predict_proba(X), model.predict_proba(X))
    # partial_fit continues at the scale kept, and keeps the record of its choice
    before.partial_fit(X[:500], y[:500])
    model.partial_fit(X[:500], y[:500])
    assert model.tau_ == loaded.tau_ and model.tau_check_ == check
    assert "tau_check_" not in vars(before)
