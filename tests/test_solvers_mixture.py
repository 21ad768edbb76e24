"""Kernels of the mixture of linear SVMs against plain numpy, scipy and scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.special import logsumexp
from sklearn.svm import LinearSVC

from streamlearn import open_dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.engine import LocalEngine
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.kmeans import Standardiser
from streamlearn.solvers.mixture import (
    Q_FLOOR,
    ExpertPass,
    InitialExpertPass,
    MixtureParams,
    StochasticEpochPass,
    StochasticState,
    center_sq_norms,
    chunk_products,
    expert_dcd_chunk,
    expert_diagonal,
    gate_log_chunk,
    gating_objective_chunk,
    mixture_decision_chunk,
    mixture_likelihoods_chunk,
    mixture_log_odds_chunk,
    posteriors_chunk,
)
from streamlearn.solvers.mixture.passes import EStepPass, HeldOutScoresPass, LinearSweepPass
from streamlearn.solvers.vector_exp import MIN_LENGTH
from tests.merging import run_lanes

TAU = 0.7
BIAS = 1.0


def _problem(n: int = 120, d: int = 3, k: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0).astype(np.float32)
    V = rng.normal(size=(k, d))
    W = rng.normal(scale=0.7, size=(k, d + 1))
    xi = rng.dirichlet(np.ones(k))
    return X, y, V, W, xi


def _np_log_gates(X, V, tau, active):
    d2 = ((X.astype(np.float64)[:, None, :] - V[None]) ** 2).sum(axis=2)
    logits = np.where(active[None, :], -tau * d2, -np.inf)
    return logits - logsumexp(logits, axis=1, keepdims=True)


def _np_scores(X, W, bias):
    return X.astype(np.float64) @ W[:, :-1].T + bias * W[:, -1][None, :]


def _kernel_log_gates(X, V, W, tau, active):
    p = chunk_products(X, V, W, BIAS)
    return gate_log_chunk(p.x_sq, p.XV, center_sq_norms(V), active, tau), p.scores


#: Few components (the C library's exp) and enough for the exponentials in SIMD lanes.
KS = (4, MIN_LENGTH + 5)


@pytest.mark.parametrize("k", KS)
def test_gates_match_numpy_softmax(k: int) -> None:
    X, _, V, W, _ = _problem(k=k)
    active = np.ones(k, dtype=bool)
    active[1] = False
    log_g, scores = _kernel_log_gates(X, V, W, TAU, active)
    ref = _np_log_gates(X, V, TAU, active)
    assert np.all(np.isneginf(log_g[:, 1]))
    np.testing.assert_allclose(log_g[:, active], ref[:, active], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.exp(log_g).sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(scores, _np_scores(X, W, BIAS), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k", KS)
def test_posteriors_and_loglik_match_numpy(k: int) -> None:
    X, y, V, W, xi = _problem(seed=1, k=k)
    xi[2] = 0.0  # a pruned component takes no posterior mass
    active = xi > 0
    log_g, scores = _kernel_log_gates(X, V, W, TAU, active)
    Q, loglik = posteriors_chunk(log_g, scores, y, xi)
    g = np.exp(_np_log_gates(X, V, TAU, active))
    p = np.exp(-np.maximum(0.0, 1.0 - y[:, None] * _np_scores(X, W, BIAS)))
    joint = xi[None, :] * g * p
    np.testing.assert_allclose(Q, joint / joint.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(loglik, np.log(joint.sum(axis=1)), rtol=1e-5, atol=1e-6)
    assert np.all(Q[:, 2] == 0.0)


@pytest.mark.parametrize("k", KS)
def test_gating_objective_and_gradient_match_numpy(k: int) -> None:
    X, y, V, W, xi = _problem(n=80, seed=2, k=k)
    active = np.ones(k, dtype=bool)
    active[2] = False
    xi[~active] = 0.0
    weight = np.random.default_rng(3).uniform(0.5, 2.0, size=80).astype(np.float32)
    log_g, scores = _kernel_log_gates(X, V, W, TAU, active)
    Q, _ = posteriors_chunk(log_g, scores, y, xi)
    V_new = V + 0.3

    def f(flat: np.ndarray) -> float:
        lg = _np_log_gates(X, flat.reshape(V.shape), TAU, active)
        terms = np.where(Q > 0, Q * np.where(np.isfinite(lg), lg, 0.0), 0.0)
        return float(-(weight[:, None].astype(np.float64) * terms).sum())

    value, grad = gating_objective_chunk(X, weight, Q, V_new, active, TAU)
    assert value == pytest.approx(f(V_new.ravel()), rel=1e-5)
    numeric = approx_fprime(V_new.ravel(), f, 1e-6).reshape(V.shape)
    np.testing.assert_allclose(grad, numeric, rtol=1e-3, atol=1e-3)
    assert np.all(grad[~active] == 0.0)


def test_expert_dcd_reaches_weighted_liblinear_solution() -> None:
    rng = np.random.default_rng(4)
    n, d, k = 150, 2, 2
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    y = y.astype(np.float32)
    weight = rng.uniform(0.5, 1.5, size=n).astype(np.float32)
    Q = rng.dirichlet(np.ones(k), size=n)
    C = 0.8
    alpha = np.zeros((n, k), dtype=np.float32)
    W = np.zeros((k, d + 1))
    active = np.ones(k, dtype=bool)
    for sweep in range(300):
        expert_dcd_chunk(X, y, weight, Q, C, alpha, W, active, BIAS, 1, sweep)
    for j in range(k):
        ref = LinearSVC(C=C, loss="hinge", dual=True, intercept_scaling=BIAS, tol=1e-10,
                        max_iter=200_000).fit(X, y, sample_weight=weight * Q[:, j])
        np.testing.assert_allclose(W[j, :d], ref.coef_[0], atol=2e-3)
        assert W[j, d] * BIAS == pytest.approx(ref.intercept_[0], abs=2e-3)
        # the primal stays the dual's image: w_j = sum_i y_i alpha_ij [x_i, bias]
        Z = np.hstack([X, np.full((n, 1), BIAS, dtype=np.float32)]).astype(np.float64)
        np.testing.assert_allclose(W[j], (y * alpha[:, j]) @ Z, atol=1e-4)
        upper = C * weight * Q[:, j]
        assert np.all(alpha[:, j] >= 0) and np.all(alpha[:, j] <= upper * (1 + 1e-6))


def test_expert_dcd_leaves_rows_below_the_posterior_floor_out() -> None:
    # rows whose posterior for an expert is below Q_FLOOR (and whose dual is zero) do not
    # enter its problem: the solution is liblinear's on the other rows
    rng = np.random.default_rng(8)
    n, d = 200, 2
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = np.where(X[:, 0] - X[:, 1] + 0.4 * rng.normal(size=n) > 0, 1.0, -1.0).astype(np.float32)
    weight = np.ones(n, dtype=np.float32)
    q = rng.uniform(0.2, 1.0, size=n)
    q[X[:, 0] > 0.3] = 0.5 * Q_FLOOR  # a third of the rows, far from this expert's gate
    Q = q[:, None]
    alpha = np.zeros((n, 1), dtype=np.float32)
    W = np.zeros((1, d + 1))
    for sweep in range(300):
        expert_dcd_chunk(X, y, weight, Q, 1.0, alpha, W, np.ones(1, dtype=bool), BIAS, 1, sweep)
    kept = q >= Q_FLOOR
    assert np.all(alpha[~kept, 0] == 0.0)
    ref = LinearSVC(C=1.0, loss="hinge", dual=True, intercept_scaling=BIAS, tol=1e-10,
                    max_iter=200_000).fit(X[kept], y[kept], sample_weight=q[kept])
    np.testing.assert_allclose(W[0, :d], ref.coef_[0], atol=2e-3)
    assert W[0, d] * BIAS == pytest.approx(ref.intercept_[0], abs=2e-3)


def test_expert_diagonal_is_the_squared_row_norm_plus_the_bias() -> None:
    import scipy.sparse as sp

    from streamlearn.data.sparse_rows import SparseRows

    rng = np.random.default_rng(8)
    X = rng.normal(size=(40, 7)).astype(np.float32)
    X[rng.random(X.shape) < 0.5] = 0.0
    ref = (X.astype(np.float64) ** 2).sum(axis=1) + BIAS**2
    np.testing.assert_allclose(expert_diagonal(X, BIAS), ref, rtol=1e-12)
    csr = sp.csr_array(X)
    rows = SparseRows(csr.indptr.astype(np.int64), csr.indices.astype(np.int32),
                      csr.data.astype(np.float32), 7)
    np.testing.assert_allclose(expert_diagonal(rows, BIAS), ref, rtol=1e-12)
    # given or computed, the sweeps are the same
    y = np.where(X[:, 0] > 0, 1.0, -1.0).astype(np.float32)
    Q = np.full((40, 1), 0.7)
    runs = []
    for diagonal in (None, expert_diagonal(X, BIAS)):
        alpha, W = np.zeros((40, 1), dtype=np.float32), np.zeros((1, 8))
        expert_dcd_chunk(X, y, np.ones(40, dtype=np.float32), Q, 1.0, alpha, W,
                         np.ones(1, dtype=bool), BIAS, 2, 3, diagonal)
        runs.append(W)
    np.testing.assert_array_equal(runs[0], runs[1])


def test_expert_dcd_clips_duals_to_shrunken_bounds() -> None:
    X, y, _, _, _ = _problem(n=60, d=2, k=2, seed=5)
    weight = np.ones(60, dtype=np.float32)
    Q = np.full((60, 2), 0.5)
    alpha = np.full((60, 2), 0.4, dtype=np.float32)  # above the bound C q = 0.25
    Z = np.hstack([X, np.ones((60, 1), dtype=np.float32)]).astype(np.float64)
    W = ((y[:, None] * alpha).T @ Z).astype(np.float64)
    active = np.array([True, False])
    W_inactive = W[1].copy()
    expert_dcd_chunk(X, y, weight, Q, 0.5, alpha, W, active, BIAS, 1, 0)
    assert np.all(alpha[:, 0] <= 0.25 + 1e-7)
    np.testing.assert_allclose(W[0], (y * alpha[:, 0]) @ Z, atol=1e-5)
    assert np.all(alpha[:, 1] == np.float32(0.4)) and np.array_equal(W[1], W_inactive)


def test_mixture_likelihoods_are_corrected_eq21() -> None:
    X, _, V, W, xi = _problem(seed=6)
    xi[0] = 0.0
    active = xi > 0
    log_g, scores = _kernel_log_gates(X, V, W, TAU, active)
    pos, neg = mixture_likelihoods_chunk(log_g, scores, xi)
    g = np.exp(_np_log_gates(X, V, TAU, active))
    s = _np_scores(X, W, BIAS)
    m = xi[None, :] * np.where(active[None, :], g, 0.0)
    np.testing.assert_allclose(pos, (m * np.exp(-np.maximum(0, 1 - s))).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(neg, (m * np.exp(-np.maximum(0, 1 + s))).sum(axis=1), rtol=1e-5)
    # a confident expert (score >> 1) votes positive through the corrected signs
    assert np.all((pos - neg)[(s[:, active] > 1).all(axis=1)] > 0)


def test_mixture_decision_equals_gates_then_likelihoods() -> None:
    X, _, V, W, xi = _problem(n=400, seed=7)
    W *= 3.0  # scores on every side of +/-1
    xi[1] = 0.0
    p = chunk_products(X, V, W, BIAS)
    for tau in (0.05, TAU, 40.0):  # soft to hard gating (hard: the cutoff skips components)
        log_g = gate_log_chunk(p.x_sq, p.XV, center_sq_norms(V), xi > 0, tau)
        pos, neg = mixture_likelihoods_chunk(log_g, p.scores, xi)
        fast_pos, fast_neg = mixture_decision_chunk(p.x_sq, p.XV, center_sq_norms(V), p.scores,
                                                    xi, tau)
        np.testing.assert_allclose(fast_pos, pos, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(fast_neg, neg, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("k", KS)
def test_log_odds_are_the_log_ratio_of_eq21_halves_row_by_row(k: int) -> None:
    X, _, V, W, xi = _problem(n=300, seed=8, k=k)
    W *= 3.0
    xi[2] = 0.0
    active = xi > 0
    f = mixture_log_odds_chunk(X, V, W, xi, TAU, BIAS)
    g = np.exp(_np_log_gates(X, V, TAU, active))
    s = _np_scores(X, W, BIAS)
    m = xi[None, :] * np.where(active[None, :], g, 0.0)
    pos = (m * np.exp(-np.maximum(0, 1 - s))).sum(axis=1)
    neg = (m * np.exp(-np.maximum(0, 1 + s))).sum(axis=1)
    np.testing.assert_allclose(f, np.log(pos) - np.log(neg), rtol=1e-10, atol=1e-10)
    # a row's value does not depend on the rows scored with it
    rows = np.array([5, 17, 250, 3])
    np.testing.assert_array_equal(mixture_log_odds_chunk(X[rows], V, W, xi, TAU, BIAS), f[rows])
    # scores far beyond exp's range stay finite (one expert with s >= 1: log-odds 1 + s)
    W_far = np.zeros((1, X.shape[1] + 1))
    W_far[0, -1] = 1e4
    far = mixture_log_odds_chunk(X[:3], V[:1], W_far, np.ones(1), TAU, BIAS)
    np.testing.assert_allclose(far, 1.0 + 1e4)


def _expert_passes(kind: str, alpha: ExampleState, W: np.ndarray, V: np.ndarray,
                   epoch: int):
    """One pass of the experts' dual coordinate descent of each kind (positive class 1),
    from experts ``W``, and how to read the experts from its result."""
    k = W.shape[0]
    params = MixtureParams(np.full(k, 1.0 / k), V, W)
    if kind == "linear":
        return (LinearSweepPass([1], 0.5, BIAS, [alpha], [epoch], [W]),
                lambda state: state.W[0])
    if kind == "initial":
        return (InitialExpertPass([V], [np.ones(k, dtype=bool)], [1], 0.5, BIAS, [alpha],
                                  [epoch], [W]), lambda state: state.W[0])
    if kind == "expert":
        return (ExpertPass(params, 1, 0.5, TAU, BIAS, alpha, epoch, W),
                lambda state: state.W)
    return (StochasticEpochPass([1], 0.5, TAU, 0.1, BIAS, 1200.0, [alpha], [epoch],
                                [StochasticState(params, np.full(k, 1.0 / k), 0)]),
            lambda state: state.lanes[0].params.W)


@pytest.mark.parametrize("kind", ["linear", "initial", "expert", "stochastic"])
def test_expert_passes_in_lanes_keep_the_experts_the_image_of_the_dual_variables(kind):
    # two lanes of 500 and 700 rows, as DaskEngine splits a pass: the merged experts are
    # sum_i y_i alpha_ij z_i of the stored dual variables (numpy), and for the linear lanes
    # the driver's gap (primal of the experts minus the dual of those variables) is the
    # true one
    rng = np.random.default_rng(9)
    X = rng.normal(size=(1200, 3)).astype(np.float32)
    codes = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    chunks = list(open_dataset(X, target=codes, chunk_rows=100).chunks())
    k = 1 if kind == "linear" else 3
    V = rng.normal(size=(k, 3))
    y = np.where(codes == 1, 1.0, -1.0)
    Z = np.c_[X.astype(np.float64), np.full(len(X), BIAS)]
    W = np.zeros((k, 4))
    with ExampleState(len(X), k) as alpha:
        for epoch in range(3):
            pass_, experts = _expert_passes(kind, alpha, W, V, epoch)
            state = run_lanes(pass_, [chunks[:5], chunks[5:]])
            a = alpha.to_numpy().astype(np.float64)
            image = (a * y[:, None]).T @ Z
            # up to the rounding of the written variables to float32 (half an ulp each)
            assert np.all(np.abs(experts(state) - image)
                          <= 2.0**-23 * (np.abs(a).T @ np.abs(Z)) + 1e-12)
            if kind == "linear":
                np.testing.assert_allclose(state.alpha_sum, a.sum(axis=0), rtol=1e-12)
                assert state.loss[0] == pytest.approx(
                    np.maximum(0.0, 1.0 - y * (Z @ W[0])).sum(), rel=1e-9)
            W = experts(state)


def test_held_out_losses_at_every_temperature_match_numpy() -> None:
    # one chunk: every held-out row is scored by the initial parameters before it trains
    from streamlearn.engine import LocalEngine
    from streamlearn.solvers.calibration import TEMPERATURE_SCALES
    from streamlearn.solvers.holdout import Holdout

    rng = np.random.default_rng(12)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    codes = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    k = 3
    V = rng.normal(size=(k, 3))
    W = rng.normal(size=(k, 4)) * 0.5
    xi = np.array([0.5, 0.3, 0.2])
    holdout = Holdout.fraction(0.2, 5)
    weight = rng.uniform(0.5, 2.0, size=600)
    data = open_dataset(X, target=codes, weight=weight, chunk_rows=600)
    with ExampleState(600, k) as alpha:
        state = LocalEngine(progress=False).run(
            StochasticEpochPass([1], 0.5, TAU, 0.1, BIAS, 600.0, [alpha], [3],
                                [StochasticState(MixtureParams(xi, V, W), xi.copy(), 0)],
                                holdout=holdout, groups=[[0]]), data)
    held = holdout.mask(np.arange(600))
    f = mixture_log_odds_chunk(X[held], V, W, xi, TAU, BIAS)
    y = np.where(codes[held] == 1, 1.0, -1.0)
    w = weight[held]
    expected = np.array([w @ np.logaddexp(0.0, -s * y * f) for s in TEMPERATURE_SCALES])
    # the pass scores the rows by the kernel of float32 rows: up to its round-off
    np.testing.assert_allclose(state.scaled_losses[0], expected, rtol=1e-6)
    # the scale 1 is on the grid: its column is the loss at temperature 1
    one = int(np.argmin(np.abs(TEMPERATURE_SCALES - 1.0)))
    assert TEMPERATURE_SCALES[one] == pytest.approx(1.0, rel=1e-12)
    assert state.losses[0] == pytest.approx(expected[one], rel=1e-6)
    assert state.held_weight == pytest.approx(w.sum(), rel=1e-6)  # float32 weights


def _lane(rng: np.random.Generator, k: int = 3, d: int = 3) -> MixtureParams:
    return MixtureParams(rng.dirichlet(np.ones(k)), rng.normal(size=(k, d)),
                         rng.normal(size=(k, d + 1)) * 0.5)


def test_lanes_of_their_own_gating_scales_train_as_each_alone() -> None:
    # one chunk: every held-out row is scored by the initial parameters before it trains
    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    codes = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    data = open_dataset(X, target=codes, chunk_rows=600)
    holdout = Holdout.fraction(0.2, 5)
    engine = LocalEngine(progress=False)
    taus, params = [0.3, 2.5], [_lane(rng), _lane(rng)]

    def start(p: MixtureParams) -> StochasticState:
        return StochasticState(p.copy(), p.xi.copy(), 0)

    with ExampleState(600, 3) as a0, ExampleState(600, 3) as a1:
        both = engine.run(StochasticEpochPass([1, 1], 0.5, taus, 0.1, BIAS, 600.0, [a0, a1],
                                              [3, 3], [start(p) for p in params],
                                              holdout=holdout, groups=[[0], [1]]), data)
    for m, (tau, p) in enumerate(zip(taus, params, strict=True)):
        with ExampleState(600, 3) as alpha:
            alone = engine.run(StochasticEpochPass([1], 0.5, tau, 0.1, BIAS, 600.0, [alpha],
                                                   [3], [start(p)], holdout=holdout,
                                                   groups=[[0]]), data)
        for got, want in zip((both.lanes[m].params.xi, both.lanes[m].params.V,
                              both.lanes[m].params.W, both.lanes[m].resp),
                             (alone.lanes[0].params.xi, alone.lanes[0].params.V,
                              alone.lanes[0].params.W, alone.lanes[0].resp), strict=True):
            np.testing.assert_array_equal(got, want)
        assert both.lanes[m].loglik == alone.lanes[0].loglik
        np.testing.assert_array_equal(both.scaled_losses[m], alone.scaled_losses[0])
        # the held-out loss at temperature 1: the single-scale kernel's log-odds
        held = holdout.mask(np.arange(600))
        f = mixture_log_odds_chunk(X[held], p.V, p.W, p.xi, tau, BIAS)
        y = np.where(codes[held] == 1, 1.0, -1.0)
        assert both.losses[m] == pytest.approx(np.logaddexp(0.0, -y * f).sum(), rel=1e-6)
    # the E-step and the held-out scores: each lane or model at its own scale
    stats = engine.run(EStepPass(params, [1, 1], taus, BIAS), data)
    for m, (tau, p) in enumerate(zip(taus, params, strict=True)):
        alone = engine.run(EStepPass([p], [1], tau, BIAS), data)[0]
        np.testing.assert_array_equal(stats[m].mass, alone.mass)
        assert stats[m].loglik == alone.loglik
    models = [(p.xi[None], p.V[None], p.W[None], "hinge") for p in params]
    scores, _, _, rows = engine.run(HeldOutScoresPass(
        models, taus, BIAS, Standardiser.identity(3), holdout), data)
    for m, (tau, p) in enumerate(zip(taus, params, strict=True)):
        np.testing.assert_allclose(scores[m][:, 0], mixture_log_odds_chunk(
            X[rows], p.V, p.W, p.xi, tau, BIAS), rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="2 gating scales for 3 lanes"):
        EStepPass([params[0]] * 3, [1, 1, 1], taus, BIAS)


def test_held_out_paired_standard_error_matches_numpy() -> None:
    # one chunk: every held-out row is scored by the initial parameters before it trains;
    # two single-lane groups at gating scales of their own, rows of unequal weights
    from streamlearn.solvers.calibration import TEMPERATURE_SCALES

    rng = np.random.default_rng(7)
    X = rng.normal(size=(800, 3)).astype(np.float32)
    codes = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    weight = rng.uniform(0.5, 2.0, size=800)
    data = open_dataset(X, target=codes, weight=weight, chunk_rows=800)
    holdout = Holdout.fraction(0.25, 9)
    taus, params = [0.3, 2.5], [_lane(rng), _lane(rng)]
    with ExampleState(800, 3) as a0, ExampleState(800, 3) as a1:
        state = LocalEngine(progress=False).run(StochasticEpochPass(
            [1, 1], 0.5, taus, 0.1, BIAS, 800.0, [a0, a1], [3, 3],
            [StochasticState(p.copy(), p.xi.copy(), 0) for p in params], holdout=holdout,
            groups=[[0], [1]]), data)
    held = holdout.mask(np.arange(800))
    y = np.where(codes[held] == 1, 1.0, -1.0)
    w = weight[held]
    # each row's loss of each group at each scale: (2, S, rows)
    rows = np.stack([np.logaddexp(0.0, -TEMPERATURE_SCALES[:, None] * y * mixture_log_odds_chunk(
        X[held], p.V, p.W, p.xi, tau, BIAS)[None]) for tau, p in zip(taus, params, strict=True)])
    for s, t in [(0, 0), (20, 35), (50, 10)]:
        d = rows[0, s] - rows[1, t]
        mean = w @ d / w.sum()
        want = np.sqrt(np.sum(w ** 2 * (d - mean) ** 2)) / w.sum()
        assert state.paired_standard_error(0, s, 1, t) == pytest.approx(want, rel=1e-5)
        assert state.paired_standard_error(1, t, 0, s) == pytest.approx(want, rel=1e-5)
    # a group against itself at one scale: no spread
    assert state.paired_standard_error(1, 7, 1, 7) == 0.0


def test_held_out_softmax_losses_and_their_standard_error_match_numpy() -> None:
    # one chunk: every held-out row is scored by the initial parameters before it trains;
    # three lanes one against the rest make one group (softmax of the scaled log-odds),
    # the first lane alone another (its logistic loss)
    from scipy.special import log_softmax

    from streamlearn.solvers.calibration import TEMPERATURE_SCALES

    rng = np.random.default_rng(8)
    X = rng.normal(size=(900, 3)).astype(np.float32)
    codes = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
    weight = rng.uniform(0.5, 2.0, size=900)
    data = open_dataset(X, target=codes, weight=weight, chunk_rows=900)
    holdout = Holdout.fraction(0.3, 2)
    params = [_lane(rng) for _ in range(3)]
    with ExampleState(900, 3) as a0, ExampleState(900, 3) as a1, \
            ExampleState(900, 3) as a2:
        state = LocalEngine(progress=False).run(StochasticEpochPass(
            [0, 1, 2], 0.5, TAU, 0.1, BIAS, 900.0, [a0, a1, a2], [3, 4, 5],
            [StochasticState(p.copy(), p.xi.copy(), 0) for p in params], holdout=holdout,
            groups=[[0, 1, 2], [0]], n_classes=3), data)
    held = holdout.mask(np.arange(900))
    c, w = codes[held], weight[held]
    F = np.column_stack([mixture_log_odds_chunk(X[held], p.V, p.W, p.xi, TAU, BIAS)
                         for p in params])
    rows = np.stack([
        -np.stack([log_softmax(s * F, axis=1)[np.arange(len(c)), c]
                   for s in TEMPERATURE_SCALES]),
        np.logaddexp(0.0, -TEMPERATURE_SCALES[:, None] * np.where(c == 0, 1.0, -1.0)
                     * F[:, 0])])  # (2, S, rows)
    np.testing.assert_allclose(state.proba_losses, rows @ w, rtol=1e-5)
    np.testing.assert_allclose(state.proba_losses[1], state.scaled_losses[1], rtol=1e-12)
    for s, t in [(10, 10), (25, 40)]:
        d = rows[0, s] - rows[1, t]
        want = np.sqrt(np.sum(w ** 2 * (d - w @ d / w.sum()) ** 2)) / w.sum()
        assert state.paired_standard_error(0, s, 1, t) == pytest.approx(want, rel=1e-5)


def test_a_lane_trains_on_the_rows_of_positive_weight_cut_once_per_row_set() -> None:
    """The rows a stochastic EM lane visits, against numpy: those of positive weight (one
    against one, of the pair's two classes), their signs, weights and expert diagonal;
    every one-against-the-rest lane shares one cut, and a chunk all of whose rows train
    is not copied."""
    from streamlearn.data import Chunk
    from streamlearn.solvers.mixture.passes import TrainedRows

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4)).astype(np.float32)
    y = rng.integers(0, 3, 50)
    w = rng.random(50).astype(np.float32)
    w[::7] = 0.0
    chunk = Chunk(X=X, y=y, start=0)
    rows = TrainedRows(X, w, chunk, BIAS)
    keep = np.flatnonzero(w > 0)
    pair_rows = np.flatnonzero((w > 0) & ((y == 0) | (y == 2)))
    for label, positions, positive in ((1, keep, 1), (2, keep, 2), ((0, 2), pair_rows, 0)):
        lane = rows.of(label)
        np.testing.assert_array_equal(lane.positions, positions)
        np.testing.assert_array_equal(lane.X, X[positions])
        np.testing.assert_array_equal(lane.w, w[positions])
        np.testing.assert_array_equal(lane.y, np.where(y[positions] == positive, 1.0, -1.0))
        np.testing.assert_allclose(
            lane.diagonal, (X[positions].astype(np.float64) ** 2).sum(axis=1) + BIAS ** 2,
            rtol=1e-6)
    assert rows.of(1).X is rows.of(2).X
    assert rows.of((0, 2)) is rows.of((0, 2))
    every = TrainedRows(X, np.ones(50, np.float32), chunk, BIAS).of(1)
    assert every.positions is None and every.X is X
