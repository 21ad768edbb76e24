"""The experts' squared hinge loss of MixtureSVC (``loss``): kernels against numpy and
liblinear, the linear lanes' duality gap, the default on ordered classes, model files and
checkpoints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC

from streamlearn import open_dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.engine import LocalEngine
from streamlearn.engine.checkpoint import fit_fingerprint
from streamlearn.models.mixture import MixtureSVC
from streamlearn.solvers.mixture import (
    center_sq_norms,
    chunk_products,
    expert_dcd_chunk,
    gate_log_chunk,
    mixture_decision_chunk,
    mixture_likelihoods_chunk,
    mixture_log_odds_chunk,
    posteriors_chunk,
)
from streamlearn.solvers.mixture.driver import resolve_loss
from streamlearn.solvers.mixture.kernels import mixture_log_odds
from streamlearn.solvers.mixture.passes import LinearSweepPass
from tests.test_model_file import _rewritten

TAU = 0.6
BIAS = 1.0


def _problem(n: int = 150, d: int = 3, k: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0).astype(np.float32)
    V = rng.normal(size=(k, d))
    W = rng.normal(scale=1.5, size=(k, d + 1))  # scores on every side of +/-1
    xi = rng.dirichlet(np.ones(k))
    xi[1] = 0.0
    return X, y, V, W, xi


def _np_parts(X, V, W, xi):
    d2 = ((X.astype(np.float64)[:, None, :] - V[None]) ** 2).sum(axis=2)
    active = xi > 0
    logits = np.where(active[None, :], -TAU * d2, -np.inf)
    g = np.exp(logits - logits.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    s = X.astype(np.float64) @ W[:, :-1].T + BIAS * W[:, -1][None, :]
    return xi[None, :] * g, s


def _sq(m):
    return np.maximum(0.0, 1.0 - m) ** 2


def test_squared_hinge_likelihoods_posteriors_and_log_odds_match_numpy() -> None:
    X, y, V, W, xi = _problem()
    m, s = _np_parts(X, V, W, xi)
    p = chunk_products(X, V, W, BIAS)
    log_g = gate_log_chunk(p.x_sq, p.XV, center_sq_norms(V), xi > 0, TAU)
    # E-step: q_ij ~ xi_j g_ij exp(-(1 - y s)_+^2), loglik its log-normaliser
    terms = m * np.exp(-_sq(y[:, None] * s))
    Q, loglik = posteriors_chunk(log_g, p.scores, y, xi, True)
    np.testing.assert_allclose(Q, terms / terms.sum(axis=1, keepdims=True), rtol=1e-5,
                               atol=1e-12)
    np.testing.assert_allclose(loglik, np.log(terms.sum(axis=1)), rtol=1e-5)
    # the two halves of eq. 21 and their log-ratio, dense and CSR, and the fast path
    pos, neg = (m * np.exp(-_sq(s))).sum(axis=1), (m * np.exp(-_sq(-s))).sum(axis=1)
    got_pos, got_neg = mixture_likelihoods_chunk(log_g, p.scores, xi, True)
    np.testing.assert_allclose(got_pos, pos, rtol=1e-5)
    np.testing.assert_allclose(got_neg, neg, rtol=1e-5)
    fast = mixture_decision_chunk(p.x_sq, p.XV, center_sq_norms(V), p.scores, xi, TAU, True)
    np.testing.assert_allclose(fast[0], got_pos, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(fast[1], got_neg, rtol=1e-12, atol=1e-300)
    f = mixture_log_odds_chunk(X, V, W, xi, TAU, BIAS, squared=True)
    np.testing.assert_allclose(f, np.log(pos) - np.log(neg), rtol=1e-9, atol=1e-9)
    rows = SparseRows.from_scipy(csr_matrix(X))
    np.testing.assert_allclose(mixture_log_odds(rows, V, W, xi, TAU, BIAS, True), f,
                               rtol=1e-10, atol=1e-10)
    # the hinge's log-odds differ: the flag reaches the kernel
    assert np.abs(mixture_log_odds_chunk(X, V, W, xi, TAU, BIAS) - f).max() > 0.1


def test_squared_hinge_dcd_reaches_weighted_liblinear_l2_solution() -> None:
    # expert j minimises 1/2 ||w||^2 + C sum_i s_i q_ij (1 - y_i w.z_i)_+^2: liblinear's
    # L2-loss SVM with sample weights s_i q_ij; rows of weight 0 keep alpha = 0
    rng = np.random.default_rng(4)
    n, d, k = 160, 2, 2
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    y = y.astype(np.float32)
    weight = rng.uniform(0.5, 1.5, size=n).astype(np.float32)
    weight[:10] = 0.0
    Q = rng.dirichlet(np.ones(k), size=n)
    C = 0.8
    alpha = np.zeros((n, k), dtype=np.float32)
    alpha[:10] = 0.3  # warm start on rows that now weigh nothing: set back to zero
    W = np.zeros((k, d + 1))
    Z = np.hstack([X, np.full((n, 1), BIAS, dtype=np.float32)]).astype(np.float64)
    W[:] = ((y[:, None] * alpha).T @ Z)
    for sweep in range(300):
        expert_dcd_chunk(X, y, weight, Q, C, alpha, W, np.ones(k, dtype=bool), BIAS, 1,
                         sweep, squared=True)
    assert np.all(alpha[:10] == 0.0)
    for j in range(k):
        ref = LinearSVC(C=C, loss="squared_hinge", dual=True, intercept_scaling=BIAS,
                        tol=1e-10, max_iter=200_000).fit(X, y, sample_weight=weight * Q[:, j])
        np.testing.assert_allclose(W[j, :d], ref.coef_[0], atol=2e-3)
        assert W[j, d] * BIAS == pytest.approx(ref.intercept_[0], abs=2e-3)
        np.testing.assert_allclose(W[j], (y * alpha[:, j]) @ Z, atol=1e-4)
        # no upper bound: some variables exceed the hinge's box C s_i q_ij
        assert np.any(alpha[:, j] > C * weight * Q[:, j] * 1.01)


def test_linear_sweep_sums_give_the_squared_hinge_duality_gap() -> None:
    # the driver's gap P - D with D = sum alpha - sum alpha^2 / (4 C s_i) - 1/2 ||w||^2 of
    # the pass's dual variables and P of the next pass's losses: from sums equal to
    # numpy's, never negative, and shrinking pass after pass
    rng = np.random.default_rng(9)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    codes = (X[:, 0] + 0.3 * rng.normal(size=600) > 0).astype(np.int64)
    weight = rng.uniform(0.5, 2.0, size=600)
    ds = open_dataset(X, target=codes, weight=weight, chunk_rows=100)
    y = np.where(codes == 1, 1.0, -1.0)
    Z = np.c_[X.astype(np.float64), np.full(len(X), BIAS)]
    C = 0.5
    W = np.zeros((1, 4))
    engine = LocalEngine(progress=False)
    with ExampleState(len(X), 1) as alpha:
        previous = None
        gaps = []
        for epoch in range(8):
            state = engine.run(LinearSweepPass([1], C, BIAS, [alpha], [epoch], [W],
                                               loss="squared_hinge"), ds, shuffle=True,
                               seed=0, epoch=epoch)
            assert state.loss[0] == pytest.approx(
                (weight * _sq(y * (Z @ W[0]))).sum(), rel=1e-6)
            a = alpha.to_numpy()[:, 0].astype(np.float64)
            np.testing.assert_allclose(state.quad[0], (a * a / (4 * C * weight)).sum(),
                                       rtol=1e-5)
            if previous is not None:
                sq = float(W[0] @ W[0])
                gap = (0.5 * sq + C * state.loss[0]) - (previous.alpha_sum[0]
                                                         - previous.quad[0] - 0.5 * sq)
                gaps.append(gap / (0.5 * sq + C * state.loss[0]))
            previous = state
            W = state.W[0]
    assert min(gaps) >= -1e-9
    assert gaps[-1] < gaps[0] / 3


def test_auto_loss_rule() -> None:
    assert resolve_loss("auto", 2) == "hinge"
    assert resolve_loss("auto", 3) == "squared_hinge"
    assert resolve_loss("hinge", 5) == "hinge"
    assert resolve_loss("squared_hinge", 2) == "squared_hinge"


def _ordered_classes():
    # the quintiles of a noisy linear score: each middle class a slab no hyperplane cuts off
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 8))
    score = X @ rng.normal(size=8) + 0.5 * rng.normal(size=6000)
    y = np.digitize(score, np.quantile(score, [0.2, 0.4, 0.6, 0.8]))
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


def test_default_on_ordered_classes_closes_on_logistic_regression() -> None:
    # one-vs-rest with the hinge, the middle classes' experts are the constant -1 and tie.
    # Measured on these rows at the gates of tau's factor 16: logistic regression 12.9 %,
    # loss="hinge" 26.5 %, the squared hinge 22.1 % (27.9 and 22.9 % before each lane
    # visited only the rows it trains on); the squared hinge must be within 20 points of
    # logistic regression's error and beat the hinge by 3 points.
    # tau="auto" keeps the softer factor 4 here (tau_check_), 17.7 %, at least 3 points
    # below factor 16 (4.4 here)
    Xtr, Xte, ytr, yte = _ordered_classes()
    lr = 1.0 - LogisticRegression(max_iter=2000).fit(Xtr, ytr).score(Xte, yte)
    # one-vs-rest (multiclass="auto" takes one-vs-one here, tests/test_mixture_multiclass.py)
    default = MixtureSVC(multiclass="ovr", progress=False).fit(Xtr, ytr)
    assert default.loss_ == "squared_hinge"
    err = 1.0 - default.score(Xte, yte)
    crisp = {"tau": default.tau_check_["taus"][0], "multiclass": "ovr", "progress": False}
    err16 = 1.0 - MixtureSVC(**crisp).fit(Xtr, ytr).score(Xte, yte)
    hinge = 1.0 - MixtureSVC(loss="hinge", **crisp).fit(Xtr, ytr).score(Xte, yte)
    assert err16 - lr <= 0.20
    assert err16 <= hinge - 0.03
    assert err <= err16 - 0.03
    # every class is predicted about as often as it occurs
    counts = np.bincount(default.predict(Xte), minlength=5)
    assert counts.min() >= 0.6 * len(yte) / 5


def test_loss_round_trips_model_files_and_old_files_load_as_hinge(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(900, 3)).astype(np.float32)
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=900), [-0.5, 0.5])
    for loss in ("squared_hinge", "hinge"):
        model = MixtureSVC(n_components=3, loss=loss, progress=False).fit(X, y)
        loaded = MixtureSVC.load(model.save(tmp_path / f"{loss}.slm"))
        assert loaded.loss == loss and loaded.loss_ == loss
        np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    # a file from before the parameter: no loss, no loss_; it was trained with the hinge
    old = _rewritten(tmp_path / "hinge.slm", tmp_path / "old.slm",
                     lambda h: (h["metadata"]["params"].pop("loss"),
                                h["metadata"]["learned"].pop("loss_")))
    before = MixtureSVC.load(old)
    assert before.loss == "hinge" and "loss_" not in vars(before)
    np.testing.assert_array_equal(before.decision_function(X), model.decision_function(X))
    # refitting the loaded model trains the hinge again
    assert before.fit(X, y).loss_ == "hinge"


def test_checkpoint_fingerprint_covers_loss() -> None:
    X = np.random.default_rng(0).normal(size=(50, 2)).astype(np.float32)
    ds = open_dataset(X, target=(X[:, 0] > 0).astype(int))
    engine = LocalEngine(progress=False)
    prints = [fit_fingerprint(MixtureSVC(loss=loss), ds, engine)
              for loss in ("auto", "hinge", "squared_hinge")]
    assert [p["params"]["loss"] for p in prints] == ["auto", "hinge", "squared_hinge"]
    assert prints[0] != prints[1] != prints[2]
