"""``MixtureSVC``: a mixture of linear SVMs with RBF gating trained by streamed EM (paper 002).

A binary mixture of ``k`` components models ``P(y | x) = sum_j xi_j g_j(x) P(y | x, w_j)``
with RBF gating ``g_j(x)`` (eq. 7, scale ``tau``, centres ``v_j``) and linear SVM experts
``P(y | x, w_j) = exp(-hinge(y w_j . [x, b]))`` (eq. 10). Training maximises the penalised
log-likelihood (eq. 19)

    ``sum_i s_i log sum_j xi_j g_ij P(y_i | x_i, w_j) - sum_j ||w_j||^2 / (2 C)
    - nu sum_{j: xi_j > 0} log xi_j``

(``s_i`` sample weights; the Dirichlet-type prior of eq. 18 gives eq. 20, which sets the
weight of a component that explains fewer than ``nu`` rows to zero: the component is pruned).

``fit`` is a sequence of passes over the data (:mod:`streamlearn.solvers.mixture` holds the
per-chunk kernels):

1. streamed mini-batch k-means gives ``k`` centres (:func:`~streamlearn.solvers.kmeans.
   streamed_kmeans`); a reduction pass counts each cluster's classes; sequential passes of
   dual coordinate descent train a linear SVM per mixed cluster; a single-class cluster gets
   ``+/- e_{d+1}`` (a constant expert) as Sec. III-D says;
2. ``em="batch"`` (Fig. 2): per iteration, a reduction pass computes the E-step statistics
   (eq. 11) and the objective, ``xi`` follows eq. 20 (pruning), the centres take a few
   L-BFGS steps on eq. 13 whose value and gradient (eq. 14) are each one reduction pass, and
   every expert is re-trained by weighted dual coordinate descent warm-started from its dual
   variables (an ``ExampleState`` with one column per component);
3. ``em="stochastic"``: one sequential pass per epoch; on each chunk, the E-step with the
   current parameters, then a running estimate of the responsibilities (step ``rho_t``)
   gives ``xi`` by eq. 20, the centres take one preconditioned gradient step on the chunk's
   part of eq. 13, and the experts a few dual coordinate descent sweeps over the chunk.

Prediction uses the corrected eq. 21: ``f(x) = sum_j xi_j g_j(x) (exp(-max(0, 1 - s_j)) -
exp(-max(0, 1 + s_j)))`` with ``s_j = w_j . [x, b]``. More than two classes are handled one
class against the rest, one mixture per class.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from streamlearn.data import Chunk, Dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.engine.checkpoint import DEFAULT_EVERY, checkpointed
from streamlearn.errors import DataError
from streamlearn.models.base import (
    ClassifierScore,
    StreamEstimator,
    check_features,
    classification_dataset,
    storable_classes,
)
from streamlearn.solvers.kmeans import assign_chunk, streamed_kmeans
from streamlearn.solvers.lbfgs import lbfgs_minimize
from streamlearn.solvers.mixture import (
    center_sq_norms,
    chunk_products,
    expert_dcd_chunk,
    gate_log_chunk,
    gating_objective_chunk,
    mixture_decision_chunk,
    posteriors_chunk,
)

EM_MODES = ("stochastic", "batch")
#: Mini-batch k-means passes of the initialisation.
KMEANS_EPOCHS = 2
#: Dual coordinate descent passes that train the initial expert of every cluster.
INIT_EXPERT_PASSES = 2
#: Coordinate descent sweeps over a chunk per visit (initial and batch M-step experts).
EXPERT_SWEEPS = 3
#: Coordinate descent passes at most per batch M-step: passes go on while an expert's
#: weighted primal objective (eq. 15) is still above its value at the iteration's start.
MAX_EXPERT_PASSES = 4
#: L-BFGS steps on the centres per batch EM iteration.
LBFGS_STEPS = 3
#: Stochastic EM step ``rho_t = (t + STEP_OFFSET) ** -STEP_DECAY`` at its ``t``-th chunk.
STEP_OFFSET = 2.0
STEP_DECAY = 0.6
#: Rows scored at a time by ``decision_function`` (bounds prediction memory).
PREDICT_BLOCK_ROWS = 1 << 15


# -- parameters of one binary mixture -------------------------------------------------------
@dataclass
class MixtureParams:
    """Parameters of one binary mixture.

    Attributes
    ----------
    xi : ndarray of shape (k,), float64
        Mixing weights; 0 marks a pruned component.
    V : ndarray of shape (k, d), float64
        Gating centres.
    W : ndarray of shape (k, d + 1), float64
        Experts, the weight of the constant feature ``bias_scale`` last.
    """

    xi: np.ndarray
    V: np.ndarray
    W: np.ndarray

    def copy(self) -> MixtureParams:
        """An independent copy."""
        return MixtureParams(self.xi.copy(), self.V.copy(), self.W.copy())


def _signs(chunk: Chunk, positive: int) -> np.ndarray:
    """Labels of a chunk as float32 +1 (class ``positive``) / -1."""
    return np.where(np.asarray(chunk.y) == positive, 1.0, -1.0).astype(np.float32)


def _weights(chunk: Chunk) -> np.ndarray:
    if chunk.weight is None:
        return np.ones(chunk.n_rows, dtype=np.float32)
    return np.ascontiguousarray(chunk.weight, dtype=np.float32)


def _log_gates(X: np.ndarray, p: MixtureParams, tau: float,
               bias_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Log gates (eq. 7) over the active components and the expert scores of a chunk."""
    prod = chunk_products(X, p.V, p.W, bias_scale)
    log_g = gate_log_chunk(prod.x_sq, prod.XV, center_sq_norms(p.V), p.xi > 0, float(tau))
    return log_g, prod.scores


def _posteriors(X: np.ndarray, y: np.ndarray, p: MixtureParams, tau: float,
                bias_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """E-step (eq. 11) of a chunk: posteriors and the rows' log-likelihoods."""
    log_g, scores = _log_gates(X, p, tau, bias_scale)
    return posteriors_chunk(log_g, scores, y, p.xi)


def mixing_weights(mass: np.ndarray, nu: float, active: np.ndarray) -> np.ndarray:
    """Eq. 20: ``xi_j = max(0, n_j - nu) / sum_l max(0, n_l - nu)`` over active components.

    When every component would vanish, the one with the most mass is kept alone.

    Parameters
    ----------
    mass : ndarray of shape (k,)
        ``n_j = sum_i s_i q_ij``.
    nu : float
    active : ndarray of shape (k,), bool
        Components still in the model (pruned ones stay pruned).

    Returns
    -------
    ndarray of shape (k,), float64
    """
    kept = np.where(active, np.maximum(np.asarray(mass, dtype=np.float64) - float(nu), 0.0), 0.0)
    total = kept.sum()
    if total <= 0.0:
        xi = np.zeros(len(kept))
        xi[int(np.argmax(np.where(active, mass, -np.inf)))] = 1.0
        return xi
    return kept / total


def penalised_loglik(loglik: float, p: MixtureParams, C: float, nu: float) -> float:
    """Eq. 19 of a mixture whose data log-likelihood (eq. 8's first sum) is ``loglik``."""
    active = p.xi > 0
    reg = float((p.W[active] ** 2).sum()) / (2.0 * float(C))
    return float(loglik - reg - float(nu) * np.log(p.xi[active]).sum())


# -- passes ---------------------------------------------------------------------------------
@dataclass
class ClusterCounts:
    """Weighted class counts per k-means cluster and the spread of the rows around them.

    Attributes
    ----------
    counts : ndarray of shape (k, 2)
        Weight of the negative and positive rows nearest to each centre.
    sq_dist : float
        Weighted sum of squared distances of the rows to their nearest centre.
    """

    counts: np.ndarray
    sq_dist: float = 0.0


class ClusterCountPass:
    """Reduction pass: :class:`ClusterCounts` of the k-means clusters.

    Parameters
    ----------
    centers : ndarray of shape (k, d)
    positive : int
        Class code of the positive label.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, centers: np.ndarray, positive: int) -> None:
        self.centers = np.ascontiguousarray(centers, dtype=np.float64)
        self.positive = int(positive)

    def start(self) -> ClusterCounts:
        """Zero counts."""
        return ClusterCounts(np.zeros((self.centers.shape[0], 2)))

    def step(self, state: ClusterCounts, chunk: Chunk) -> ClusterCounts:
        """Add the chunk's rows (in place)."""
        labels, sq = assign_chunk(chunk.X, self.centers)
        w = _weights(chunk).astype(np.float64)
        side = (np.asarray(chunk.y) == self.positive).astype(np.int64)
        np.add.at(state.counts, (labels, side), w)
        state.sq_dist += float(w @ sq.astype(np.float64))
        return state

    def merge(self, a: ClusterCounts, b: ClusterCounts) -> ClusterCounts:
        """Sum of two states (a new one)."""
        return ClusterCounts(a.counts + b.counts, a.sq_dist + b.sq_dist)

    def finish(self, state: ClusterCounts) -> ClusterCounts:
        """The counts."""
        return state


@dataclass
class ExpertState:
    """Experts carried through a coordinate descent pass.

    Attributes
    ----------
    W : ndarray of shape (k, d + 1)
    rows : int
        Rows processed (the weight of this state when partial states are merged).
    """

    W: np.ndarray
    rows: int = 0


def _mix(a: np.ndarray, b: np.ndarray, na: float, nb: float) -> np.ndarray:
    total = na + nb
    return a.copy() if total == 0 else (na * a + nb * b) / total


def _chunk_seed(seed: int, chunk: Chunk) -> int:
    return (int(seed) * 0x9E3779B1 + int(chunk.start)) % 2**63


class InitialExpertPass:
    """Sequential pass: dual coordinate descent of one linear SVM per k-means cluster.

    Each row belongs to its nearest centre only (a one-hot posterior), so expert ``j`` is the
    linear SVM of cluster ``j``'s rows.

    Parameters
    ----------
    centers : ndarray of shape (k, d)
    trained : ndarray of shape (k,), bool
        Clusters with both classes (the others keep their constant expert).
    positive : int
    C, bias_scale : float
    alpha : ExampleState
        Dual variables ``(n_rows, k)``.
    seed : int
    initial : ndarray of shape (k, d + 1)
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, centers: np.ndarray, trained: np.ndarray, positive: int, C: float,
                 bias_scale: float, alpha: ExampleState, seed: int, initial: np.ndarray) -> None:
        self.centers = np.ascontiguousarray(centers, dtype=np.float64)
        self.trained = np.asarray(trained, dtype=bool)
        self.positive = int(positive)
        self.C = float(C)
        self.bias_scale = float(bias_scale)
        self.alpha = alpha
        self.seed = int(seed)
        self.initial = initial

    def start(self) -> ExpertState:
        """A copy of the initial experts."""
        return ExpertState(self.initial.copy())

    def step(self, state: ExpertState, chunk: Chunk) -> ExpertState:
        """Coordinate descent sweeps over the chunk (in place)."""
        labels, _ = assign_chunk(chunk.X, self.centers)
        Q = np.zeros((chunk.n_rows, self.centers.shape[0]))
        Q[np.arange(chunk.n_rows), labels] = 1.0
        alpha = self.alpha.get(chunk)
        expert_dcd_chunk(chunk.X, _signs(chunk, self.positive), _weights(chunk), Q, self.C,
                         alpha, state.W, self.trained, self.bias_scale, EXPERT_SWEEPS,
                         _chunk_seed(self.seed, chunk))
        self.alpha.put(chunk, alpha)
        state.rows += chunk.n_rows
        return state

    def merge(self, a: ExpertState, b: ExpertState) -> ExpertState:
        """Parameter mixing of two partial states (a new state)."""
        return ExpertState(_mix(a.W, b.W, a.rows, b.rows), a.rows + b.rows)

    def finish(self, state: ExpertState) -> ExpertState:
        """The experts after the pass."""
        return state


@dataclass
class EStepStats:
    """Sufficient statistics of the E-step.

    Attributes
    ----------
    mass : ndarray of shape (k,)
        ``n_j = sum_i s_i q_ij``.
    loglik : float
        ``sum_i s_i log P(y_i | x_i)`` (eq. 8's data term).
    weight : float
        ``sum_i s_i``.
    """

    mass: np.ndarray
    loglik: float = 0.0
    weight: float = 0.0


class EStepPass:
    """Reduction pass: E-step statistics (eq. 11) and the log-likelihood at ``params``.

    Parameters
    ----------
    params : MixtureParams
    positive : int
    tau, bias_scale : float
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, params: MixtureParams, positive: int, tau: float,
                 bias_scale: float) -> None:
        self.params = params
        self.positive = int(positive)
        self.tau = float(tau)
        self.bias_scale = float(bias_scale)

    def start(self) -> EStepStats:
        """Zero statistics."""
        return EStepStats(np.zeros(len(self.params.xi)))

    def step(self, state: EStepStats, chunk: Chunk) -> EStepStats:
        """Add the chunk's posteriors (in place)."""
        w = _weights(chunk).astype(np.float64)
        Q, loglik = _posteriors(chunk.X, _signs(chunk, self.positive), self.params, self.tau,
                                self.bias_scale)
        state.mass += w @ Q
        state.loglik += float(w @ loglik)
        state.weight += float(w.sum())
        return state

    def merge(self, a: EStepStats, b: EStepStats) -> EStepStats:
        """Sum of two states (a new one)."""
        return EStepStats(a.mass + b.mass, a.loglik + b.loglik, a.weight + b.weight)

    def finish(self, state: EStepStats) -> EStepStats:
        """The statistics."""
        return state


@dataclass
class GatingValue:
    """Value and gradient of the gating objective (eq. 13, 14) summed over chunks."""

    value: float
    grad: np.ndarray


class GatingPass:
    """Reduction pass: the gating objective (eq. 13) and its gradient (eq. 14) at ``V``.

    The posteriors come from ``posterior_params`` (the E-step's parameters), recomputed
    chunk by chunk, so nothing per row is stored between passes.

    Parameters
    ----------
    posterior_params : MixtureParams
    V : ndarray of shape (k, d)
        Centres where the objective is evaluated.
    positive : int
    tau, bias_scale : float
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, posterior_params: MixtureParams, V: np.ndarray, positive: int,
                 tau: float, bias_scale: float) -> None:
        self.posterior_params = posterior_params
        self.V = np.asarray(V, dtype=np.float64)
        self.positive = int(positive)
        self.tau = float(tau)
        self.bias_scale = float(bias_scale)

    def start(self) -> GatingValue:
        """Zero value and gradient."""
        return GatingValue(0.0, np.zeros_like(self.V))

    def step(self, state: GatingValue, chunk: Chunk) -> GatingValue:
        """Add the chunk's part (in place)."""
        Q, _ = _posteriors(chunk.X, _signs(chunk, self.positive), self.posterior_params,
                           self.tau, self.bias_scale)
        value, grad = gating_objective_chunk(chunk.X, _weights(chunk), Q, self.V,
                                             self.posterior_params.xi > 0, self.tau)
        state.value += value
        state.grad += grad
        return state

    def merge(self, a: GatingValue, b: GatingValue) -> GatingValue:
        """Sum of two states (a new one)."""
        return GatingValue(a.value + b.value, a.grad + b.grad)

    def finish(self, state: GatingValue) -> GatingValue:
        """The value and gradient."""
        return state


class ExpertPass:
    """Sequential pass: weighted dual coordinate descent of every active expert (eq. 15).

    Row ``i`` weighs ``s_i q_ij`` in expert ``j``'s hinge losses, ``q`` from
    ``posterior_params``; the dual variables are warm-started from earlier passes.

    Parameters
    ----------
    posterior_params : MixtureParams
    positive : int
    C, tau, bias_scale : float
    alpha : ExampleState
        Dual variables ``(n_rows, k)``.
    seed : int
    initial : ndarray of shape (k, d + 1)
        Experts at the start of the pass, equal to the dual variables' image.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, posterior_params: MixtureParams, positive: int, C: float, tau: float,
                 bias_scale: float, alpha: ExampleState, seed: int, initial: np.ndarray) -> None:
        self.posterior_params = posterior_params
        self.positive = int(positive)
        self.C = float(C)
        self.tau = float(tau)
        self.bias_scale = float(bias_scale)
        self.alpha = alpha
        self.seed = int(seed)
        self.initial = initial

    def start(self) -> ExpertState:
        """A copy of the initial experts."""
        return ExpertState(self.initial.copy())

    def step(self, state: ExpertState, chunk: Chunk) -> ExpertState:
        """Coordinate descent sweeps over the chunk (in place)."""
        y = _signs(chunk, self.positive)
        Q, _ = _posteriors(chunk.X, y, self.posterior_params, self.tau, self.bias_scale)
        alpha = self.alpha.get(chunk)
        expert_dcd_chunk(chunk.X, y, _weights(chunk), Q, self.C, alpha, state.W,
                         self.posterior_params.xi > 0, self.bias_scale, EXPERT_SWEEPS,
                         _chunk_seed(self.seed, chunk))
        self.alpha.put(chunk, alpha)
        state.rows += chunk.n_rows
        return state

    def merge(self, a: ExpertState, b: ExpertState) -> ExpertState:
        """Parameter mixing of two partial states (a new state)."""
        return ExpertState(_mix(a.W, b.W, a.rows, b.rows), a.rows + b.rows)

    def finish(self, state: ExpertState) -> ExpertState:
        """The experts after the pass."""
        return state


class ExpertObjectivePass:
    """Reduction pass: each expert's weighted hinge losses (eq. 15) for two sets of experts.

    Parameters
    ----------
    posterior_params : MixtureParams
        Parameters whose posteriors weigh the rows.
    W_a, W_b : ndarray of shape (k, d + 1)
    positive : int
    tau, bias_scale : float
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, posterior_params: MixtureParams, W_a: np.ndarray, W_b: np.ndarray,
                 positive: int, tau: float, bias_scale: float) -> None:
        self.posterior_params = posterior_params
        self.W_a = W_a
        self.W_b = W_b
        self.positive = int(positive)
        self.tau = float(tau)
        self.bias_scale = float(bias_scale)

    def start(self) -> np.ndarray:
        """Zero losses, shape ``(2, k)``."""
        return np.zeros((2, self.W_a.shape[0]))

    def step(self, state: np.ndarray, chunk: Chunk) -> np.ndarray:
        """Add the chunk's weighted hinge losses (in place)."""
        y = _signs(chunk, self.positive)
        Q, _ = _posteriors(chunk.X, y, self.posterior_params, self.tau, self.bias_scale)
        wq = _weights(chunk).astype(np.float64)[:, None] * Q
        for row, W in enumerate((self.W_a, self.W_b)):
            scores = chunk_products(chunk.X, self.posterior_params.V, W, self.bias_scale).scores
            state[row] += (wq * np.maximum(0.0, 1.0 - y[:, None] * scores)).sum(axis=0)
        return state

    def merge(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Sum of two states (a new one)."""
        return a + b

    def finish(self, state: np.ndarray) -> np.ndarray:
        """Losses of ``W_a`` (row 0) and ``W_b`` (row 1) per expert."""
        return state


@dataclass
class StochasticState:
    """State of stochastic EM carried from chunk to chunk.

    Attributes
    ----------
    params : MixtureParams
    resp : ndarray of shape (k,)
        Running mean of the rows' posteriors (``xi`` follows from it by eq. 20).
    t : int
        Chunks seen since the start of training (sets the step ``rho_t``).
    loglik, weight : float
        Weighted log-likelihood of this pass's rows under the parameters met when each
        chunk was read, and their total weight.
    rows : int
        Rows processed in this pass.
    """

    params: MixtureParams
    resp: np.ndarray
    t: int
    loglik: float = 0.0
    weight: float = 0.0
    rows: int = 0


class StochasticEpochPass:
    """Sequential pass: one epoch of stochastic EM, one chunk at a time.

    Parameters
    ----------
    positive : int
    C, tau, nu, bias_scale : float
    total_weight : float
        ``sum_i s_i`` over the whole dataset (turns mean posteriors into eq. 20's counts).
    alpha : ExampleState
        Dual variables of the experts ``(n_rows, k)``.
    seed : int
    initial : StochasticState
        State at the start of the pass (not modified).

    Notes
    -----
    Engines that split the pass average the partial parameters weighted by rows processed
    (a component pruned in either part stays pruned).
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, positive: int, C: float, tau: float, nu: float, bias_scale: float,
                 total_weight: float, alpha: ExampleState, seed: int,
                 initial: StochasticState) -> None:
        self.positive = int(positive)
        self.C = float(C)
        self.tau = float(tau)
        self.nu = float(nu)
        self.bias_scale = float(bias_scale)
        self.total_weight = float(total_weight)
        self.alpha = alpha
        self.seed = int(seed)
        self.initial = initial

    def start(self) -> StochasticState:
        """A copy of the initial state with empty pass statistics."""
        s = self.initial
        return StochasticState(s.params.copy(), s.resp.copy(), s.t)

    def step(self, state: StochasticState, chunk: Chunk) -> StochasticState:
        """E-step on the chunk, then stochastic updates of xi, centres and experts."""
        X, y, w = chunk.X, _signs(chunk, self.positive), _weights(chunk)
        w64 = w.astype(np.float64)
        p = state.params
        Q, loglik = _posteriors(X, y, p, self.tau, self.bias_scale)
        state.loglik += float(w64 @ loglik)
        state.weight += float(w64.sum())
        rho = (state.t + STEP_OFFSET) ** -STEP_DECAY
        state.t += 1
        chunk_weight = float(w64.sum())
        if chunk_weight > 0.0:
            state.resp = (1.0 - rho) * state.resp + rho * (w64 @ Q) / chunk_weight
        active = p.xi > 0
        p.xi = mixing_weights(self.total_weight * state.resp, self.nu, active)
        if not np.array_equal(p.xi > 0, active):  # a component vanished: posteriors without it
            Q, _ = _posteriors(X, y, p, self.tau, self.bias_scale)
            active = p.xi > 0
        # centres: one step on the chunk's part of eq. 13, scaled by each centre's mass
        _, grad = gating_objective_chunk(X, w, Q, p.V, active, self.tau)
        log_g, _ = _log_gates(X, p, self.tau, self.bias_scale)
        mass = np.maximum(w64 @ Q, w64 @ np.exp(log_g))
        scale = rho / (2.0 * self.tau * np.maximum(mass, 1e-12))
        p.V -= scale[:, None] * grad
        # experts: weighted coordinate descent sweeps over the chunk
        alpha = self.alpha.get(chunk)
        expert_dcd_chunk(X, y, w, Q, self.C, alpha, p.W, active, self.bias_scale,
                         EXPERT_SWEEPS, _chunk_seed(self.seed, chunk))
        self.alpha.put(chunk, alpha)
        state.rows += chunk.n_rows
        return state

    def merge(self, a: StochasticState, b: StochasticState) -> StochasticState:
        """Parameter mixing of two partial states (a new state)."""
        na, nb = a.rows, b.rows
        xi = _mix(a.params.xi, b.params.xi, na, nb)
        xi[(a.params.xi == 0) | (b.params.xi == 0)] = 0.0
        xi = xi / xi.sum() if xi.sum() > 0 else a.params.xi.copy()
        params = MixtureParams(xi, _mix(a.params.V, b.params.V, na, nb),
                               _mix(a.params.W, b.params.W, na, nb))
        return StochasticState(params, _mix(a.resp, b.resp, na, nb),
                               max(a.t, b.t) + min(a.t, b.t) - self.initial.t,
                               a.loglik + b.loglik, a.weight + b.weight, na + nb)

    def finish(self, state: StochasticState) -> StochasticState:
        """The state after the epoch."""
        return state


# -- the estimator --------------------------------------------------------------------------
class MixtureSVC(ClassifierScore, StreamEstimator):
    """Mixture of linear SVMs with RBF gating, trained by EM over chunked data (paper 002).

    Parameters
    ----------
    n_components : int
        Components at the start (``k_max``); components whose mixing weight vanishes
        (eq. 20) are pruned during training.
    nu : float
        Dirichlet-type prior on the mixing weights (eq. 18-20): a component explaining
        fewer than ``nu`` (weighted) rows is pruned. 0 prunes only empty components.
    tau : float or "auto"
        Gating scale of eq. 7. ``"auto"``: the inverse of the mean squared distance of a
        row to its nearest initial centre (scale-free; the paper's ``tau = 1`` suits data
        whose within-cluster squared distances are about 1).
    C : float
        Penalty of each expert's hinge losses, ``1/2 ||w_j||^2 + C sum_i s_i q_ij hinge``
        (``C = 1 / (2 zeta)`` of eq. 9).
    em : {"stochastic", "batch"}
        Batch EM (Fig. 2: an E-step pass, L-BFGS passes for the centres and a coordinate
        descent pass for the experts per iteration) or stochastic EM (one pass per epoch,
        parameters updated after every chunk).
    epochs : int
        EM iterations (batch) or passes over the data (stochastic).
    bias_scale : float
        Value of the constant feature whose (regularised) weight is each expert's bias.
    chunk_rows : int, optional
        Rows per chunk when this estimator opens the data or makes the engine (stochastic
        EM updates the parameters once per chunk).
    random_state : int, optional
        Seeds k-means, the shuffling and the coordinate descent orders; None draws a seed.
    engine : engine, optional
        Runs the passes; a ``LocalEngine`` (with ``chunk_rows`` and ``progress``) by default.
    progress : bool, optional
        Progress bars for the default engine (None: when stderr is a terminal).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : tuple of str
    xi_ : ndarray of shape (n_models, k)
        Mixing weights (0: pruned); ``n_models`` is 1 for two classes (positive class
        ``classes_[1]``), else one mixture per class.
    centers_ : ndarray of shape (n_models, k, d)
        Gating centres.
    coef_ : ndarray of shape (n_models, k, d + 1)
        Experts, bias weight last (the bias is ``coef_[..., -1] * bias_scale``).
    tau_ : float
        Gating scale used.
    n_active_components_ : int or ndarray of shape (n_models,)
        Components left after pruning (an array for more than two classes).
    history_ : list of list of dict
        Per binary model, one entry per epoch (the first describes the initialisation):
        ``loglik`` (eq. 8's data term), ``penalised`` (eq. 19), ``n_active``. Batch EM
        evaluates them at the parameters after the epoch; stochastic EM accumulates the
        log-likelihood of each chunk under the parameters met when it was read.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 2)).astype(np.float32)
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)  # XOR: no linear SVM separates it
    >>> clf = MixtureSVC(n_components=8, C=10.0, epochs=10, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    """

    def __init__(
        self,
        n_components: int = 10,
        nu: float = 1.0,
        tau: float | str = "auto",
        C: float = 1.0,
        em: str = "stochastic",
        epochs: int = 10,
        bias_scale: float = 1.0,
        chunk_rows: int | None = None,
        random_state: int | None = 0,
        engine: Any = None,
        progress: bool | None = None,
    ) -> None:
        self.n_components = n_components
        self.nu = nu
        self.tau = tau
        self.C = C
        self.em = em
        self.epochs = epochs
        self.bias_scale = bias_scale
        self.chunk_rows = chunk_rows
        self.random_state = random_state
        self.engine = engine
        self.progress = progress

    # -- hyper-parameters -------------------------------------------------------------------
    def _validate(self) -> None:
        if int(self.n_components) < 1:
            raise ValueError(f"n_components must be at least 1, got {self.n_components}")
        if not float(self.nu) >= 0:
            raise ValueError(f"nu must be non-negative, got {self.nu}")
        if isinstance(self.tau, str):
            if self.tau != "auto":
                raise ValueError(f"tau must be a positive number or 'auto', got {self.tau!r}")
        elif not float(self.tau) > 0:
            raise ValueError(f"tau must be a positive number or 'auto', got {self.tau}")
        if not float(self.C) > 0:
            raise ValueError(f"C must be positive, got {self.C}")
        if self.em not in EM_MODES:
            raise ValueError(f"em must be one of {EM_MODES}, got {self.em!r}")
        if int(self.epochs) < 1:
            raise ValueError(f"epochs must be at least 1, got {self.epochs}")
        if not float(self.bias_scale) >= 0:
            raise ValueError(f"bias_scale must be non-negative, got {self.bias_scale}")

    def _seed(self) -> int:
        if self.random_state is None:
            return int(np.random.SeedSequence().entropy % 2**31)
        return int(self.random_state)

    # -- training ---------------------------------------------------------------------------
    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            engine: Any = None, checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY) -> MixtureSVC:
        """Train by streaming over a dataset.

        Parameters
        ----------
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
        y : array-like or str, optional
            Labels of in-memory ``data`` or the target column name; not with a Dataset.
        sample_weight : array-like or str, optional
            Non-negative row weights (values or a column name).
        engine : engine, optional
            Overrides the ``engine`` parameter for this call.
        checkpoint : str or path-like, optional
            Directory where progress is saved; a fit killed at any point and run again with
            the same arguments resumes from it (see :mod:`streamlearn.engine.checkpoint`).
        checkpoint_every : int
            Chunks between two checkpoint writes.

        Returns
        -------
        self
        """
        self._validate()
        self.__dict__.pop("classes_", None)
        dataset = classification_dataset(data, y, sample_weight, self.chunk_rows)
        k = int(self.n_components)
        if dataset.n_rows < k:
            raise DataError(f"n_components={k} needs at least {k} training rows, the data "
                            f"has {dataset.n_rows}")
        runner = checkpointed(self._engine(engine), checkpoint, checkpoint_every, self, dataset)
        seed = self._seed()
        classes = dataset.classes
        assert classes is not None
        positives = [1] if len(classes) == 2 else list(range(len(classes)))
        centers = streamed_kmeans(dataset, k, engine=runner, epochs=KMEANS_EPOCHS, seed=seed)
        self.feature_names_in_ = tuple(dataset.feature_names)
        self.n_features_in_ = len(self.feature_names_in_)
        fitted = [self._fit_binary(runner, dataset, centers, positive, seed + 7919 * m)
                  for m, positive in enumerate(positives)]
        self.xi_ = np.stack([p.xi for p, _ in fitted])
        self.centers_ = np.stack([p.V for p, _ in fitted])
        self.coef_ = np.stack([p.W for p, _ in fitted])
        self.history_ = [h for _, h in fitted]
        self.classes_ = storable_classes(classes)
        return self

    def _fit_binary(self, runner: Any, dataset: Dataset, centers: np.ndarray, positive: int,
                    seed: int) -> tuple[MixtureParams, list[dict[str, float]]]:
        k, d = centers.shape
        C, bs = float(self.C), float(self.bias_scale)
        counts: ClusterCounts = runner.run(ClusterCountPass(centers, positive), dataset,
                                           description="cluster classes")
        total = float(counts.counts.sum())
        if self.tau == "auto":
            self.tau_ = total / max(counts.sq_dist, 1e-12)
        else:
            self.tau_ = float(self.tau)
        tau = self.tau_
        mixed = (counts.counts > 0).all(axis=1)
        W = np.zeros((k, d + 1))
        # Sec. III-D: a single-class cluster starts as the constant expert +/- e_{d+1}
        sign = np.where(counts.counts[:, 1] > 0, 1.0, -1.0)
        constant = ~mixed
        W[constant, d] = sign[constant] / (bs if bs > 0 else 1.0)
        mass = counts.counts.sum(axis=1)
        xi = mixing_weights(mass, 0.0, mass > 0)
        history: list[dict[str, float]] = []
        with ExampleState(dataset.n_rows, k) as alpha:
            for epoch in range(INIT_EXPERT_PASSES):
                state: ExpertState = runner.run(
                    InitialExpertPass(centers, mixed, positive, C, bs, alpha,
                                      seed * 1000003 + epoch, W),
                    dataset, shuffle=True, seed=seed, epoch=epoch,
                    description=f"initial experts {epoch + 1}/{INIT_EXPERT_PASSES}")
                W = state.W
            params = MixtureParams(xi, np.asarray(centers, dtype=np.float64), W)
            if self.em == "batch":
                params = self._batch_em(runner, dataset, params, constant, positive, tau, alpha,
                                        seed, history)
            else:
                params = self._stochastic_em(runner, dataset, params, constant, positive, tau,
                                             total, alpha, seed, history)
        return params, history

    def _record(self, history: list[dict[str, float]], loglik: float, p: MixtureParams) -> None:
        history.append({
            "loglik": float(loglik),
            "penalised": penalised_loglik(loglik, p, float(self.C), float(self.nu)),
            "n_active": int((p.xi > 0).sum()),
        })

    def _batch_em(self, runner: Any, dataset: Dataset, params: MixtureParams,
                  constant: np.ndarray, positive: int, tau: float, alpha: ExampleState,
                  seed: int, history: list[dict[str, float]]) -> MixtureParams:
        bs = float(self.bias_scale)
        epochs = int(self.epochs)
        for epoch in range(epochs + 1):
            stats: EStepStats = runner.run(EStepPass(params, positive, tau, bs), dataset,
                                           description=f"E-step {epoch + 1}/{epochs + 1}")
            self._record(history, stats.loglik, params)
            if epoch == epochs:
                break
            # M-step, Fig. 2: xi by eq. 20 (pruning), then centres and experts
            xi = mixing_weights(stats.mass, float(self.nu), params.xi > 0)
            posterior = MixtureParams(xi, params.V, params.W)

            def gating(V: np.ndarray, posterior: MixtureParams = posterior) -> tuple[float,
                                                                                      np.ndarray]:
                out: GatingValue = runner.run(GatingPass(posterior, V, positive, tau, bs),
                                              dataset, description="gating")
                return out.value, out.grad

            h0 = 1.0 / (2.0 * tau * np.maximum(stats.mass, 1.0))[:, None]
            V = lbfgs_minimize(gating, params.V, max_iter=LBFGS_STEPS,
                               h0=np.broadcast_to(h0, params.V.shape)).x
            W = params.W.copy()
            if epoch == 0:  # constant experts carry no dual variables: re-train from zero
                W[constant] = 0.0
            W = self._expert_step(runner, dataset, posterior, params.W, W, positive, tau,
                                  alpha, seed, epoch)
            params = MixtureParams(xi, V, W)
        return params

    def _expert_step(self, runner: Any, dataset: Dataset, posterior: MixtureParams,
                     W_old: np.ndarray, W: np.ndarray, positive: int, tau: float,
                     alpha: ExampleState, seed: int, epoch: int) -> np.ndarray:
        """Warm-started coordinate descent passes until every expert improves eq. 15."""
        C, bs = float(self.C), float(self.bias_scale)
        active = posterior.xi > 0
        reg_old = (W_old ** 2).sum(axis=1) / 2.0
        for rep in range(MAX_EXPERT_PASSES):
            state: ExpertState = runner.run(
                ExpertPass(posterior, positive, C, tau, bs, alpha,
                           seed * 1000003 + 17 + 101 * epoch + rep, W),
                dataset, shuffle=True, seed=seed,
                epoch=INIT_EXPERT_PASSES + MAX_EXPERT_PASSES * epoch + rep,
                description=f"experts {epoch + 1}/{int(self.epochs)}")
            W = state.W
            losses: np.ndarray = runner.run(
                ExpertObjectivePass(posterior, W_old, W, positive, tau, bs), dataset,
                description="expert objectives")
            primal_old = reg_old + C * losses[0]
            primal_new = (W ** 2).sum(axis=1) / 2.0 + C * losses[1]
            if np.all(primal_new[active] <= primal_old[active]):
                break
        return W

    def _stochastic_em(self, runner: Any, dataset: Dataset, params: MixtureParams,
                       constant: np.ndarray, positive: int, tau: float, total: float,
                       alpha: ExampleState, seed: int,
                       history: list[dict[str, float]]) -> MixtureParams:
        bs = float(self.bias_scale)
        epochs = int(self.epochs)
        stats: EStepStats = runner.run(EStepPass(params, positive, tau, bs), dataset,
                                       description="E-step")
        self._record(history, stats.loglik, params)
        W = params.W.copy()
        W[constant] = 0.0  # constant experts carry no dual variables: re-train from zero
        state = StochasticState(MixtureParams(params.xi.copy(), params.V.copy(), W),
                                stats.mass / max(stats.weight, 1e-300), 0)
        for epoch in range(epochs):
            state = runner.run(
                StochasticEpochPass(positive, float(self.C), tau, float(self.nu), bs, total,
                                    alpha, seed * 1000003 + 31 + epoch, state),
                dataset, shuffle=True, seed=seed, epoch=epoch + INIT_EXPERT_PASSES,
                description=f"stochastic EM {epoch + 1}/{epochs}")
            self._record(history, state.loglik, state.params)
        return state.params

    # -- prediction -------------------------------------------------------------------------
    def _likelihoods(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Both halves of eq. 21 per binary model, ``(n, n_models)`` each."""
        self._check_fitted()
        values = check_features(X, self.feature_names_in_, type(self).__name__)
        n, m = values.shape[0], self.xi_.shape[0]
        pos = np.empty((n, m))
        neg = np.empty((n, m))
        v_sq = [center_sq_norms(V) for V in self.centers_]
        for a in range(0, n, PREDICT_BLOCK_ROWS):
            block = values[a:a + PREDICT_BLOCK_ROWS]
            for j in range(m):
                prod = chunk_products(block, self.centers_[j], self.coef_[j],
                                      float(self.bias_scale))
                pos[a:a + block.shape[0], j], neg[a:a + block.shape[0], j] = \
                    mixture_decision_chunk(prod.x_sq, prod.XV, v_sq[j], prod.scores,
                                           self.xi_[j], self.tau_)
        return pos, neg

    def decision_function(self, X: Any) -> np.ndarray:
        """The corrected discriminant of eq. 21.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,) for two classes (positive: ``classes_[1]``), else
        (n, n_classes), one column per one-vs-rest mixture; float64.
        """
        pos, neg = self._likelihoods(X)
        f = pos - neg
        return f[:, 0] if f.shape[1] == 1 else f

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities from the normalised mixture likelihoods.

        Two classes: ``P(y = +1 | x) = pos / (pos + neg)`` with ``pos``, ``neg`` the two
        halves of eq. 21. More classes: each one-vs-rest mixture's probability, normalised
        to sum to 1 per row.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, n_classes), columns in the order of ``classes_``
        """
        pos, neg = self._likelihoods(X)
        p = pos / (pos + neg)
        if p.shape[1] == 1:
            return np.hstack([1.0 - p, p])
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels: the sign of eq. 21, or the most probable one-vs-rest class.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,), labels from ``classes_``
        """
        pos, neg = self._likelihoods(X)
        if pos.shape[1] == 1:
            return self.classes_[(pos[:, 0] > neg[:, 0]).astype(np.int64)]
        return self.classes_[np.argmax(pos / (pos + neg), axis=1)]

    @property
    def n_active_components_(self) -> int | np.ndarray:
        """Components left after pruning (per one-vs-rest mixture for more classes)."""
        self._check_fitted()
        active = (self.xi_ > 0).sum(axis=1)
        return int(active[0]) if active.shape[0] == 1 else active

    # -- model files ------------------------------------------------------------------------
    def _get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        metadata = {
            "params": self._json_params(),
            "feature_names_in": list(self.feature_names_in_),
            "n_features_in": int(self.n_features_in_),
            "tau": float(self.tau_),
            "history": self.history_,
        }
        arrays = {
            "classes": storable_classes(self.classes_),
            "xi": self.xi_,
            "centers": self.centers_,
            "coef": self.coef_,
        }
        return metadata, arrays

    @classmethod
    def _from_state(cls, metadata: dict[str, Any], arrays: dict[str, np.ndarray]) -> MixtureSVC:
        valid = cls._param_names()
        model = cls(**{k: v for k, v in metadata.get("params", {}).items() if k in valid})
        model.feature_names_in_ = tuple(metadata["feature_names_in"])
        model.n_features_in_ = int(metadata["n_features_in"])
        model.tau_ = float(metadata["tau"])
        model.history_ = metadata["history"]
        model.classes_ = arrays["classes"]
        model.xi_ = np.ascontiguousarray(arrays["xi"], dtype=np.float64)
        model.centers_ = np.ascontiguousarray(arrays["centers"], dtype=np.float64)
        model.coef_ = np.ascontiguousarray(arrays["coef"], dtype=np.float64)
        return model
