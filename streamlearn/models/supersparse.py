"""Super-sparse machines: a few learned virtual prototypes (paper 004).

``f(x) = sum_j beta_j s(x, c_j) + b`` over ``p`` prototypes ``c_j`` that need not be training
rows. ``fit`` minimises the weighted squared loss of eq. 2,

    ``J = (1 / V) sum_i v_i (f(x_i) - y_i)^2 + lam R(beta)``,  ``V = sum_i v_i``,

with ``R = ||beta||^2`` (``coef="ridge"``) or ``||beta||_1`` (``coef="lasso"``), by
alternating two steps, each one streamed pass over the data:

- **beta-step**: a reduction pass accumulates the ``(p + 1) x (p + 1)`` Gram matrix and the
  right-hand side of ``z_i = (s(x_i, c_1..p), 1)``; ridge is then the closed form of eq. 4,
  LASSO coordinate descent on the same statistics. ``J`` itself follows from them;
- **prototype step**: a reduction pass accumulates ``sum_i v_i e_i d s(x_i, c_k) / d c_k``
  (analytic for the RBF similarity, the caller's derivative, or eq. 7's ``x - c`` for a
  black-box similarity), the gradient of eqs. 5-6 at the optimal ``beta``. A repulsion term
  ``rho_t sum_{j != k} d s(c_j, c_k) / d c_k`` with ``rho_t = repulsion * repulsion_decay^t``
  keeps prototypes apart during the first iterations (Sec. III, "Prototype Initialization").

The prototype step size adapts: a step whose new objective (plus the repulsion penalty
``rho_t sum_{j<k} s(c_j, c_k)``) is not lower is undone and the step halved; an accepted step
grows by :data:`STEP_GROWTH`. Without repulsion the objective therefore never increases.
``solver="minibatch"`` moves the prototypes once per chunk instead (one sequential pass per
iteration, then one exact beta-step), for data too large for many full passes.

``n_prototypes`` given as a list selects ``p`` by the incremental procedure of Sec. III
(eq. 8): fit with the largest ``p``, then repeatedly drop the prototypes with the smallest
``|beta|`` and warm-start the next smaller ``p``; the model kept minimises
``validation loss + tradeoff * p`` on rows held out by a hash of their row id.

:meth:`SuperSparseClassifier.reduce` fits the prototypes to another model's
``decision_function`` (the SSVM of Sec. III): the reduced model needs ``p`` similarity
evaluations per prediction instead of one per support vector.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Self

import numpy as np

from streamlearn.data import Chunk, Dataset, open_dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.engine.checkpoint import DEFAULT_EVERY, checkpointed
from streamlearn.errors import DataError, LabelError, ModelFileError
from streamlearn.models.additive import Holdout
from streamlearn.models.base import (
    ClassifierScore,
    RegressorScore,
    StreamEstimator,
    check_features,
    classification_dataset,
    regression_dataset,
    storable_classes,
)
from streamlearn.solvers.kmeans import RowSamplePass, streamed_kmeans
from streamlearn.solvers.prototypes import (
    approx_gradient_update,
    derivative_gradient_update,
    gram_update,
    lasso_cd,
    rbf_gradient_update,
    rbf_similarities,
    weighted_residuals,
)

COEFS = ("ridge", "lasso")
SOLVERS = ("batch", "minibatch")
INITS = ("random", "kmeans")
#: Factor applied to the prototype step after an accepted (objective-decreasing) step.
STEP_GROWTH = 1.2
#: Factor applied to the prototype step after a rejected step.
STEP_SHRINK = 0.5
#: The alternation stops when the step falls below this fraction of ``step``.
MIN_STEP_FRACTION = 1e-6
#: LASSO coordinate-descent sweeps per beta-step, and their tolerance.
LASSO_SWEEPS = 1000
LASSO_TOL = 1e-10
#: Rows per block when predicting on in-memory data.
PREDICT_BLOCK = 65_536
#: Mixed into ``random_state`` for the validation rows of the choice of ``p`` and the init.
VALIDATION_SALT = 0x5AB5_5E1E_C7ED_0004
INIT_SALT = 0x1D17_0004


# -- similarity -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Similarity:
    """The similarity ``s(x, c)`` and the derivative ``d s / d c`` a fit uses.

    Parameters
    ----------
    gamma : float
        RBF width, when ``function`` is None: ``s = exp(-gamma ||x - c||^2)``.
    function : callable, optional
        ``function(X, C) -> (n, p)`` similarities of rows to prototypes.
    gradient : callable, optional
        ``gradient(X, C) -> (n, p, d)``, ``d s(x_i, c_k) / d c_k``. Without it a black-box
        ``function`` uses eq. 7's ``x - c``.
    """

    gamma: float
    function: Callable[[np.ndarray, np.ndarray], Any] | None = None
    gradient: Callable[[np.ndarray, np.ndarray], Any] | None = None

    def values(self, X: np.ndarray, C: np.ndarray) -> np.ndarray:
        """``(n, p)`` float64 similarities of the rows ``X`` (float32) to ``C``."""
        if self.function is None:
            return rbf_similarities(X, C, self.gamma)
        S = np.ascontiguousarray(np.asarray(self.function(X, C), dtype=np.float64))
        if S.shape != (X.shape[0], C.shape[0]):
            raise DataError(f"the similarity returned shape {S.shape} for {X.shape[0]} rows and "
                            f"{C.shape[0]} prototypes; expected ({X.shape[0]}, {C.shape[0]})")
        if not np.isfinite(S).all():
            raise DataError("the similarity returned NaN or infinite values")
        return S

    def gradient_update(self, X: np.ndarray, C: np.ndarray, S: np.ndarray,
                        residual: np.ndarray, out: np.ndarray) -> None:
        """Add ``sum_i residual_i d s(x_i, c_k) / d c_k`` to ``out`` (p, d)."""
        if self.function is None:
            rbf_gradient_update(X, C, S, self.gamma, residual, out)
        elif self.gradient is None:
            approx_gradient_update(X, C, residual, out)
        else:
            dS = np.ascontiguousarray(np.asarray(self.gradient(X, C), dtype=np.float64))
            if dS.shape != (X.shape[0], C.shape[0], C.shape[1]):
                raise DataError(f"the similarity gradient returned shape {dS.shape}; expected "
                                f"{(X.shape[0], C.shape[0], C.shape[1])}")
            derivative_gradient_update(dS, residual, out)

    def penalty(self, C: np.ndarray) -> float:
        """Repulsion penalty ``sum_{j<k} s(c_j, c_k)``."""
        S = self.values(np.ascontiguousarray(C, dtype=np.float32), C)
        return float(np.triu(S, 1).sum())

    def penalty_gradient(self, C: np.ndarray) -> np.ndarray:
        """``d/d c_k sum_{j<l} s(c_j, c_l) = sum_{j != k} d s(c_j, c_k) / d c_k``, shape (p, d).

        Analytic for the RBF, the caller's derivative when given, else eq. 7's ``c_j - c_k``
        scaled by ``s(c_j, c_k)`` (a black-box similarity: the closer pair pushes harder).
        """
        C32 = np.ascontiguousarray(C, dtype=np.float32)
        S = self.values(C32, C)
        np.fill_diagonal(S, 0.0)
        diff = C[:, None, :] - C[None, :, :]  # [j, k] = c_j - c_k
        if self.function is None:
            return 2.0 * self.gamma * np.einsum("jk,jkf->kf", S, diff)
        if self.gradient is None:
            return np.einsum("jk,jkf->kf", S, diff)
        dS = np.asarray(self.gradient(C32, C), dtype=np.float64).copy()
        dS[np.arange(C.shape[0]), np.arange(C.shape[0])] = 0.0
        return dS.sum(axis=0)


# -- which rows, which targets ----------------------------------------------------------------
@dataclass(frozen=True)
class TargetRows:
    """How a chunk becomes ``(X, t, v)``: features, regression targets and weights.

    Attributes
    ----------
    mode : {"regression", "classification", "teacher"}
        Targets are the chunk's values, ``+-1`` from its class codes, or the reduced model's
        scores stored per row in ``scores`` (:class:`TeacherScorePass`).
    scores : ExampleState, optional
        The reduced model's ``decision_function`` of every row (``mode="teacher"``).
    holdout : Holdout, optional
        Rows set aside to choose ``p``.
    validation : bool
        Select the held-out rows (True) or the others (False).
    """

    mode: str
    scores: ExampleState | None = None
    holdout: Holdout | None = None
    validation: bool = False

    def select(self, chunk: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chunk's rows of this selection."""
        X, weight = chunk.X, chunk.weight
        if self.mode == "teacher":
            assert self.scores is not None
            t = np.asarray(self.scores.get(chunk), dtype=np.float64)
        elif self.mode == "classification":
            t = 2.0 * np.asarray(chunk.y, dtype=np.float64) - 1.0
        else:
            t = np.asarray(chunk.y, dtype=np.float64)
        keep: np.ndarray | None = None
        if self.holdout is not None:
            held = self.holdout.mask(chunk.rows)
            keep = np.flatnonzero(held if self.validation else ~held)
        elif self.validation:
            keep = np.zeros(0, dtype=np.int64)
        if keep is not None and keep.size != X.shape[0]:
            X, t = np.ascontiguousarray(X[keep]), t[keep]
            weight = weight[keep] if weight is not None else None
        v = (np.ones(X.shape[0], dtype=np.float32) if weight is None
             else np.ascontiguousarray(weight, dtype=np.float32))
        return X, np.ascontiguousarray(t), v


class TeacherScorePass:
    """Sequential pass: stores the reduced model's decision value of every row.

    The model is evaluated once per row; every later pass reads the stored values. It is a
    sequential pass because it writes per-example state (engines give reductions read-only
    access to it); its only state is a row count, so splitting it changes nothing.

    Parameters
    ----------
    teacher : object
        With ``decision_function(X) -> (n,)``.
    scores : ExampleState
        One value per row, written chunk by chunk.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, teacher: Any, scores: ExampleState) -> None:
        self.teacher = teacher
        self.scores = scores

    def start(self) -> int:
        """Rows scored: none."""
        return 0

    def step(self, state: int, chunk: Chunk) -> int:
        """Score the chunk's rows and store them."""
        t = np.asarray(self.teacher.decision_function(chunk.X), dtype=np.float64)
        if t.shape != (chunk.n_rows,):
            raise LabelError("the model to reduce must give one decision value per row (two "
                             f"classes); its decision_function returned shape {t.shape}")
        if not np.isfinite(t).all():
            raise DataError("the model to reduce returned NaN or infinite decision values")
        self.scores.put(chunk, t.astype(np.float32))
        return state + chunk.n_rows

    def merge(self, a: int, b: int) -> int:
        """Rows scored by both."""
        return a + b

    def finish(self, state: int) -> int:
        """Rows scored."""
        return state


# -- passes ----------------------------------------------------------------------------------
@dataclass
class GramState:
    """Sufficient statistics of the beta-step.

    Attributes
    ----------
    G : ndarray of shape (p + 1, p + 1)
        ``sum_i v_i z_i z_i^T``, ``z_i = (s(x_i, c_1..p), 1)``.
    r : ndarray of shape (p + 1,)
        ``sum_i v_i y_i z_i``.
    yy : float
        ``sum_i v_i y_i^2``.
    weight : float
        ``V = sum_i v_i``.
    rows : int
    """

    G: np.ndarray
    r: np.ndarray
    yy: float = 0.0
    weight: float = 0.0
    rows: int = 0


class GramPass:
    """Reduction pass: the Gram matrix and right-hand side of the beta-step.

    Parameters
    ----------
    rows : TargetRows
    prototypes : ndarray of shape (p, d), float64
    similarity : Similarity
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, rows: TargetRows, prototypes: np.ndarray, similarity: Similarity) -> None:
        self.rows = rows
        self.C = prototypes
        self.similarity = similarity

    def start(self) -> GramState:
        """Zero statistics."""
        p = self.C.shape[0]
        return GramState(np.zeros((p + 1, p + 1)), np.zeros(p + 1))

    def step(self, state: GramState, chunk: Chunk) -> GramState:
        """Add the chunk's rows (in place)."""
        X, t, v = self.rows.select(chunk)
        if X.shape[0]:
            S = self.similarity.values(X, self.C)
            yy, weight = gram_update(S, t, v, state.G, state.r)
            state.yy += yy
            state.weight += weight
            state.rows += X.shape[0]
        return state

    def merge(self, a: GramState, b: GramState) -> GramState:
        """Sum of two states (a new state)."""
        return GramState(a.G + b.G, a.r + b.r, a.yy + b.yy, a.weight + b.weight, a.rows + b.rows)

    def finish(self, state: GramState) -> GramState:
        """The statistics."""
        return state


@dataclass
class GradientState:
    """``sum_i v_i e_i d s(x_i, c_k) / d c_k`` per prototype, and the weight it covers."""

    grad: np.ndarray
    weight: float = 0.0


class GradientPass:
    """Reduction pass: the prototype gradient at fixed ``(beta, b)`` (eqs. 5-6).

    Parameters
    ----------
    rows : TargetRows
    prototypes : ndarray of shape (p, d)
    w : ndarray of shape (p + 1,)
        ``(beta, b)``.
    similarity : Similarity
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, rows: TargetRows, prototypes: np.ndarray, w: np.ndarray,
                 similarity: Similarity) -> None:
        self.rows = rows
        self.C = prototypes
        self.w = w
        self.similarity = similarity

    def start(self) -> GradientState:
        """Zero gradient."""
        return GradientState(np.zeros_like(self.C))

    def step(self, state: GradientState, chunk: Chunk) -> GradientState:
        """Add the chunk's rows (in place)."""
        X, t, v = self.rows.select(chunk)
        if X.shape[0]:
            S = self.similarity.values(X, self.C)
            residual = weighted_residuals(S, self.w[:-1], float(self.w[-1]), t, v)
            self.similarity.gradient_update(X, self.C, S, residual, state.grad)
            state.weight += float(v.sum(dtype=np.float64))
        return state

    def merge(self, a: GradientState, b: GradientState) -> GradientState:
        """Sum of two states (a new state)."""
        return GradientState(a.grad + b.grad, a.weight + b.weight)

    def finish(self, state: GradientState) -> GradientState:
        """The accumulated gradient."""
        return state


@dataclass
class LossState:
    """Weighted validation loss sums: ``loss`` over ``weight``."""

    loss: float = 0.0
    weight: float = 0.0


class ValidationPass:
    """Reduction pass: validation loss of ``f`` on the held-out rows.

    Mean absolute error for a regressor; for a classifier the weighted share of rows where
    the sign of ``f`` differs from the sign of the target (labels or the reduced model's
    scores).

    Parameters
    ----------
    rows : TargetRows
    prototypes : ndarray of shape (p, d)
    w : ndarray of shape (p + 1,)
    similarity : Similarity
    sign_error : bool
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, rows: TargetRows, prototypes: np.ndarray, w: np.ndarray,
                 similarity: Similarity, sign_error: bool) -> None:
        self.rows = rows
        self.C = prototypes
        self.w = w
        self.similarity = similarity
        self.sign_error = bool(sign_error)

    def start(self) -> LossState:
        """Zero sums."""
        return LossState()

    def step(self, state: LossState, chunk: Chunk) -> LossState:
        """Add the chunk's held-out rows (in place)."""
        X, t, v = self.rows.select(chunk)
        if X.shape[0]:
            f = self.similarity.values(X, self.C) @ self.w[:-1] + self.w[-1]
            err = ((f > 0) != (t > 0)).astype(np.float64) if self.sign_error else np.abs(f - t)
            state.loss += float(np.dot(v, err))
            state.weight += float(v.sum(dtype=np.float64))
        return state

    def merge(self, a: LossState, b: LossState) -> LossState:
        """Sum of two states (a new state)."""
        return LossState(a.loss + b.loss, a.weight + b.weight)

    def finish(self, state: LossState) -> LossState:
        """The sums."""
        return state


@dataclass
class MiniBatchState:
    """Prototypes and coefficients moved chunk by chunk.

    Attributes
    ----------
    C : ndarray of shape (p, d)
    w : ndarray of shape (p + 1,)
    rows : int
        Rows processed in this pass (the weight of this state when states are merged).
    """

    C: np.ndarray
    w: np.ndarray
    rows: int = 0


class MiniBatchPass:
    """Sequential pass: per chunk, a ridge/LASSO beta-step on the chunk, then a prototype step.

    Parameters
    ----------
    rows : TargetRows
    initial : MiniBatchState
    similarity : Similarity
    step : float
        Prototype step on the chunk's gradient (normalised by the chunk's weight).
    coef : {"ridge", "lasso"}
    lam : float
    repulsion : float
        Repulsion weight for this pass.

    Notes
    -----
    Engines that split the pass average the partial states weighted by rows processed.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, rows: TargetRows, initial: MiniBatchState, similarity: Similarity,
                 step: float, coef: str, lam: float, repulsion: float) -> None:
        self.rows = rows
        self.initial = initial
        self.similarity = similarity
        self.step_size = float(step)
        self.coef = coef
        self.lam = float(lam)
        self.repulsion = float(repulsion)

    def start(self) -> MiniBatchState:
        """A copy of the initial state."""
        return MiniBatchState(self.initial.C.copy(), self.initial.w.copy())

    def step(self, state: MiniBatchState, chunk: Chunk) -> MiniBatchState:
        """Beta-step on the chunk's statistics, then one prototype step (in place)."""
        X, t, v = self.rows.select(chunk)
        if X.shape[0] == 0:
            return state
        C = state.C
        p = C.shape[0]
        S = self.similarity.values(X, C)
        G = np.zeros((p + 1, p + 1))
        r = np.zeros(p + 1)
        _, weight = gram_update(S, t, v, G, r)
        if weight <= 0:
            return state
        state.w = solve_beta(G / weight, r / weight, self.lam, self.coef, state.w)
        residual = weighted_residuals(S, state.w[:-1], float(state.w[-1]), t, v)
        acc = np.zeros_like(C)
        self.similarity.gradient_update(X, C, S, residual, acc)
        grad = (2.0 / weight) * state.w[:-1, None] * acc
        if self.repulsion > 0:
            grad += self.repulsion * self.similarity.penalty_gradient(C)
        state.C = C - self.step_size * grad
        state.rows += X.shape[0]
        return state

    def merge(self, a: MiniBatchState, b: MiniBatchState) -> MiniBatchState:
        """Parameter mixing (a new state)."""
        total = a.rows + b.rows
        if total == 0:
            return MiniBatchState(a.C.copy(), a.w.copy())
        return MiniBatchState((a.rows * a.C + b.rows * b.C) / total,
                              (a.rows * a.w + b.rows * b.w) / total, total)

    def finish(self, state: MiniBatchState) -> MiniBatchState:
        """The state after the pass."""
        return state


# -- dense work between passes ---------------------------------------------------------------
def solve_beta(A: np.ndarray, b: np.ndarray, lam: float, coef: str,
               warm: np.ndarray | None = None) -> np.ndarray:
    """The beta-step on normalised statistics ``A = G / V``, ``b = r / V``.

    Parameters
    ----------
    A : ndarray of shape (p + 1, p + 1)
    b : ndarray of shape (p + 1,)
    lam : float
    coef : {"ridge", "lasso"}
    warm : ndarray of shape (p + 1,), optional
        LASSO warm start.

    Returns
    -------
    ndarray of shape (p + 1,)
        ``(beta, intercept)``.
    """
    p = A.shape[0] - 1
    if coef == "lasso":
        w = np.zeros(p + 1) if warm is None else np.array(warm, dtype=np.float64)
        lasso_cd(A, b, float(lam), w, LASSO_SWEEPS, LASSO_TOL)
        return w
    M = A.copy()
    M[np.arange(p), np.arange(p)] += lam
    try:
        w = np.linalg.solve(M, b)
        if np.isfinite(w).all():
            return w
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(M, b, rcond=None)[0]


def objective(stats: GramState, w: np.ndarray, lam: float, coef: str) -> float:
    """``J = (1 / V) sum_i v_i (z_i . w - y_i)^2 + lam R(beta)`` from the Gram statistics."""
    V = stats.weight
    fit = (w @ stats.G @ w - 2.0 * stats.r @ w + stats.yy) / V
    beta = w[:-1]
    reg = float(beta @ beta) if coef == "ridge" else float(np.abs(beta).sum())
    return float(max(fit, 0.0) + lam * reg)


# -- the estimators --------------------------------------------------------------------------
class _SuperSparse(StreamEstimator):
    """Shared driver of :class:`SuperSparseRegressor` and :class:`SuperSparseClassifier`."""

    _fitted_attribute = "prototypes_"

    _sign_error = False

    def __init__(
        self,
        n_prototypes: int | Sequence[int] = 10,
        similarity: str | Callable[[np.ndarray, np.ndarray], Any] = "rbf",
        similarity_gradient: Callable[[np.ndarray, np.ndarray], Any] | None = None,
        gamma: float = 1.0,
        lam: float = 1e-3,
        coef: str = "ridge",
        step: float = 1.0,
        max_iter: int = 30,
        tol: float = 1e-5,
        solver: str = "batch",
        repulsion: float = 0.0,
        repulsion_decay: float = 0.5,
        init: str | np.ndarray = "random",
        tradeoff: float = 0.0,
        validation_fraction: float = 0.2,
        chunk_rows: int | None = None,
        random_state: int | None = 0,
        engine: Any = None,
        progress: bool | None = None,
    ) -> None:
        self.n_prototypes = n_prototypes
        self.similarity = similarity
        self.similarity_gradient = similarity_gradient
        self.gamma = gamma
        self.lam = lam
        self.coef = coef
        self.step = step
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.repulsion = repulsion
        self.repulsion_decay = repulsion_decay
        self.init = init
        self.tradeoff = tradeoff
        self.validation_fraction = validation_fraction
        self.chunk_rows = chunk_rows
        self.random_state = random_state
        self.engine = engine
        self.progress = progress

    # -- hyper-parameters -------------------------------------------------------------------
    def _grid(self) -> list[int]:
        values = ([self.n_prototypes] if np.isscalar(self.n_prototypes)
                  else list(self.n_prototypes))
        if not values:
            raise ValueError("n_prototypes must be a positive integer or a non-empty list")
        grid = []
        for value in values:
            if isinstance(value, bool) or int(value) != value or int(value) < 1:
                raise ValueError(f"n_prototypes must hold positive integers, got {value!r}")
            grid.append(int(value))
        return sorted(set(grid), reverse=True)

    def _validate(self) -> None:
        self._grid()
        if not (self.similarity == "rbf" or callable(self.similarity)):
            raise ValueError(f"similarity must be 'rbf' or a callable s(X, C), got "
                             f"{self.similarity!r}")
        if self.similarity_gradient is not None and not callable(self.similarity_gradient):
            raise ValueError("similarity_gradient must be None or a callable")
        if self.similarity == "rbf" and not self.gamma > 0:
            raise ValueError(f"gamma must be positive, got {self.gamma}")
        if self.coef not in COEFS:
            raise ValueError(f"coef must be one of {COEFS}, got {self.coef!r}")
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        if not self.lam >= 0:
            raise ValueError(f"lam must be non-negative, got {self.lam}")
        if not self.step > 0:
            raise ValueError(f"step must be positive, got {self.step}")
        if int(self.max_iter) < 0:
            raise ValueError(f"max_iter must be non-negative, got {self.max_iter}")
        if not self.repulsion >= 0:
            raise ValueError(f"repulsion must be non-negative, got {self.repulsion}")
        if not 0 <= self.repulsion_decay <= 1:
            raise ValueError(f"repulsion_decay must lie in [0, 1], got {self.repulsion_decay}")
        if isinstance(self.init, str) and self.init not in INITS:
            raise ValueError(f"init must be one of {INITS} or an array of prototypes, got "
                             f"{self.init!r}")
        if not self.tradeoff >= 0:
            raise ValueError(f"tradeoff must be non-negative, got {self.tradeoff}")
        if len(self._grid()) > 1 and not 0 < self.validation_fraction < 1:
            raise ValueError("validation_fraction must lie strictly between 0 and 1, got "
                             f"{self.validation_fraction}")

    def _similarity(self) -> Similarity:
        if self.similarity == "rbf":
            return Similarity(float(self.gamma))
        return Similarity(float(self.gamma), self.similarity, self.similarity_gradient)

    def _seed(self) -> int:
        if self.random_state is None:
            return int(np.random.SeedSequence().entropy % 2**31)
        return int(self.random_state)

    # -- training ---------------------------------------------------------------------------
    def _fit_dataset(self, dataset: Dataset, mode: str, teacher: Any, engine: Any,
                     checkpoint: Any, checkpoint_every: int) -> Self:
        self._validate()
        for name in ("classes_", "prototypes_"):  # not fitted until this fit succeeds
            self.__dict__.pop(name, None)
        grid = self._grid()
        runner = checkpointed(self._engine(engine), checkpoint, checkpoint_every, self, dataset)
        seed = self._seed()
        similarity = self._similarity()
        holdout = (Holdout.fraction(self.validation_fraction, seed ^ VALIDATION_SALT)
                   if len(grid) > 1 else None)
        self.feature_names_in_ = tuple(dataset.feature_names)
        self.n_features_in_ = len(self.feature_names_in_)
        if teacher is None:
            return self._fit_rows(runner, dataset, TargetRows(mode, None, holdout, False),
                                  TargetRows(mode, None, holdout, True), grid, seed,
                                  similarity)
        with ExampleState(dataset.n_rows) as scores:
            runner.run(TeacherScorePass(teacher, scores), dataset,
                       description="scores of the reduced model")
            return self._fit_rows(runner, dataset, TargetRows(mode, scores, holdout, False),
                                  TargetRows(mode, scores, holdout, True), grid, seed,
                                  similarity)

    def _fit_rows(self, runner: Any, dataset: Dataset, train: TargetRows, valid: TargetRows,
                  grid: list[int], seed: int, similarity: Similarity) -> Self:
        holdout = train.holdout

        C = self._initial_prototypes(runner, dataset, grid[0], seed)
        w = None
        path: list[tuple[int, float, float, float]] = []
        best: tuple[float, np.ndarray, np.ndarray, list[float]] | None = None
        for p in grid:
            if w is not None and p < C.shape[0]:
                keep = np.sort(np.argsort(-np.abs(w[:-1]), kind="stable")[:p])
                C = C[keep]
                w = np.append(w[keep], w[-1])
            C, w, history = self._alternate(runner, dataset, train, C, similarity, p)
            loss = np.nan
            criterion = 0.0
            if holdout is not None:
                tally: LossState = runner.run(
                    ValidationPass(valid, C, w, similarity, self._sign_error), dataset,
                    description=f"validate p={p}")
                if tally.weight <= 0:
                    raise DataError("no rows were held out to choose n_prototypes; use more "
                                    "data or a larger validation_fraction")
                loss = tally.loss / tally.weight
                criterion = loss + float(self.tradeoff) * p
            path.append((p, loss, criterion, history[-1]))
            if best is None or criterion < best[0]:
                best = (criterion, C.copy(), w.copy(), history)
        assert best is not None
        _, C, w, history = best
        self.prototypes_ = np.ascontiguousarray(C)
        self.coef_ = np.ascontiguousarray(w[:-1])
        self.intercept_ = float(w[-1])
        self.n_prototypes_ = int(C.shape[0])
        self.objective_path_ = np.asarray(history, dtype=np.float64)
        self.objective_ = float(history[-1])
        self.n_iter_ = len(history) - 1
        self.selection_path_ = np.asarray(path, dtype=np.float64).reshape(-1, 4)
        return self

    def _initial_prototypes(self, runner: Any, dataset: Dataset, p: int,
                            seed: int) -> np.ndarray:
        if not isinstance(self.init, str):
            C = np.array(self.init, dtype=np.float64)
            if C.shape != (p, dataset.n_features):
                raise DataError(f"init has shape {C.shape}; expected ({p}, "
                                f"{dataset.n_features}), one row per prototype of the "
                                "largest n_prototypes")
            if not np.isfinite(C).all():
                raise DataError("init holds NaN or infinite values")
            return C
        if dataset.n_rows < p:
            raise DataError(f"{p} prototypes need at least {p} rows, the data has "
                            f"{dataset.n_rows}")
        if self.init == "kmeans":
            return streamed_kmeans(dataset, p, engine=runner, seed=seed).astype(np.float64)
        sample = runner.run(RowSamplePass(p, dataset.n_features, seed ^ INIT_SALT), dataset,
                            description="prototype sample")
        return np.array(sample.values, dtype=np.float64)

    def _gram(self, runner: Any, dataset: Dataset, rows: TargetRows, C: np.ndarray,
              similarity: Similarity, label: str) -> GramState:
        stats: GramState = runner.run(GramPass(rows, C, similarity), dataset, description=label)
        if stats.weight <= 0:
            raise DataError("no rows with positive weight to train on")
        return stats

    def _alternate(self, runner: Any, dataset: Dataset, rows: TargetRows, C: np.ndarray,
                   similarity: Similarity, p: int) -> tuple[np.ndarray, np.ndarray, list[float]]:
        lam, coef = float(self.lam), self.coef
        stats = self._gram(runner, dataset, rows, C, similarity, f"beta-step p={p}")
        w = solve_beta(stats.G / stats.weight, stats.r / stats.weight, lam, coef)
        J = objective(stats, w, lam, coef)
        history = [J]
        if self.solver == "minibatch":
            seed = self._seed()
            for t in range(int(self.max_iter)):
                rho = float(self.repulsion) * float(self.repulsion_decay) ** t
                state: MiniBatchState = runner.run(
                    MiniBatchPass(rows, MiniBatchState(C, w), similarity, self.step, coef, lam,
                                  rho),
                    dataset, shuffle=True, seed=seed, epoch=t,
                    description=f"mini-batch epoch {t + 1} p={p}")
                C = state.C
                stats = self._gram(runner, dataset, rows, C, similarity, f"beta-step p={p}")
                w = solve_beta(stats.G / stats.weight, stats.r / stats.weight, lam, coef, w)
                history.append(objective(stats, w, lam, coef))
            return C, w, history

        step = float(self.step)
        grad: np.ndarray | None = None
        for t in range(int(self.max_iter)):
            rho = float(self.repulsion) * float(self.repulsion_decay) ** t
            if grad is None:
                g: GradientState = runner.run(GradientPass(rows, C, w, similarity), dataset,
                                              description=f"gradient p={p}")
                grad = (2.0 / g.weight) * w[:-1, None] * g.grad
            total = grad + rho * similarity.penalty_gradient(C) if rho > 0 else grad
            trial = C - step * total
            trial_stats = self._gram(runner, dataset, rows, trial, similarity,
                                     f"beta-step p={p}")
            trial_w = solve_beta(trial_stats.G / trial_stats.weight,
                                 trial_stats.r / trial_stats.weight, lam, coef, w)
            trial_J = objective(trial_stats, trial_w, lam, coef)
            before = J + (rho * similarity.penalty(C) if rho > 0 else 0.0)
            after = trial_J + (rho * similarity.penalty(trial) if rho > 0 else 0.0)
            if after <= before:
                decrease = J - trial_J
                C, w, J = trial, trial_w, trial_J
                grad = None
                step *= STEP_GROWTH
                history.append(J)
                if rho == 0 and decrease <= float(self.tol) * max(abs(J), 1e-12):
                    break
            else:
                step *= STEP_SHRINK
                history.append(J)
                if step < MIN_STEP_FRACTION * float(self.step):
                    break
        return C, w, history

    # -- prediction -------------------------------------------------------------------------
    def decision_function(self, X: Any) -> np.ndarray:
        """``f(x) = sum_j beta_j s(x, c_j) + b``: ``p`` similarity evaluations per row.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or a table with the fit-time columns

        Returns
        -------
        ndarray of shape (n,), float64
        """
        self._check_fitted()
        values = check_features(X, self.feature_names_in_, type(self).__name__)
        similarity = self._similarity()
        out = np.empty(values.shape[0])
        for a in range(0, values.shape[0], PREDICT_BLOCK):
            block = values[a:a + PREDICT_BLOCK]
            out[a:a + block.shape[0]] = (similarity.values(block, self.prototypes_) @ self.coef_
                                         + self.intercept_)
        return out

    # -- model files ------------------------------------------------------------------------
    _SCALARS = ("intercept_", "n_prototypes_", "objective_", "n_iter_", "n_features_in_")

    def _get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        if self.similarity != "rbf":
            raise ModelFileError("a model with a Python-callable similarity cannot be saved "
                                 "(model files hold no code); only similarity='rbf' can")
        params = self._json_params()
        if not isinstance(self.init, str):
            params["init"] = "random"
        if not np.isscalar(self.n_prototypes):
            params["n_prototypes"] = [int(v) for v in self.n_prototypes]
        metadata = {
            "params": params,
            "feature_names_in": list(self.feature_names_in_),
            **{name: _plain(getattr(self, name)) for name in self._SCALARS},
        }
        arrays = {
            "prototypes": self.prototypes_,
            "coef": self.coef_,
            "objective_path": self.objective_path_,
            "selection_path": self.selection_path_,
        }
        if hasattr(self, "classes_"):
            arrays["classes"] = storable_classes(self.classes_)
        return metadata, arrays

    @classmethod
    def _from_state(cls, metadata: dict[str, Any], arrays: dict[str, np.ndarray]) -> Self:
        valid = cls._param_names()
        model = cls(**{k: v for k, v in metadata.get("params", {}).items() if k in valid})
        model.feature_names_in_ = tuple(metadata["feature_names_in"])
        for name in cls._SCALARS:
            setattr(model, name, metadata[name])
        if "classes" in arrays:
            model.classes_ = arrays["classes"]
        model.prototypes_ = np.ascontiguousarray(arrays["prototypes"], dtype=np.float64)
        model.coef_ = np.ascontiguousarray(arrays["coef"], dtype=np.float64)
        model.objective_path_ = np.asarray(arrays["objective_path"], dtype=np.float64)
        model.selection_path_ = np.asarray(arrays["selection_path"], dtype=np.float64)
        return model


_PARAMS_DOC = """
    Parameters
    ----------
    n_prototypes : int or list of int
        Number of virtual prototypes ``p``; a list chooses among its values by eq. 8 (the
        incremental procedure of Sec. III) on held-out rows.
    similarity : "rbf" or callable
        ``exp(-gamma ||x - c||^2)``, or any ``s(X, C) -> (n, p)`` array (``X`` float32 rows,
        ``C`` float64 prototypes). Models with a callable similarity cannot be saved.
    similarity_gradient : callable, optional
        ``g(X, C) -> (n, p, d)``, ``d s(x_i, c_k) / d c_k`` of a callable similarity; without
        it the prototype step uses eq. 7's approximation ``x - c``.
    gamma : float
        RBF width.
    lam : float
        Regularisation ``lam R(beta)`` of eq. 2.
    coef : {"ridge", "lasso"}
        ``R = ||beta||^2`` (closed-form beta-step) or ``||beta||_1`` (coordinate descent).
    step : float
        Initial prototype step (batch solver; adapted: x1.2 after a decrease, x0.5 and
        undone after an increase) or the fixed per-chunk step (mini-batch solver).
    max_iter : int
        Alternations (batch: prototype-step trials; mini-batch: epochs); 0 keeps the
        initial prototypes and only solves for ``beta`` (prototype-selection baselines).
    tol : float
        Batch solver stops when an accepted step lowers the objective by less than
        ``tol`` times its value (once repulsion has decayed to zero).
    solver : {"batch", "minibatch"}
        Full-gradient alternation, or prototypes moved per chunk (one sequential pass per
        epoch, then an exact beta-step).
    repulsion : float
        Initial weight of the repulsion penalty (0: none).
    repulsion_decay : float
        The repulsion weight at iteration ``t`` is ``repulsion * repulsion_decay^t``.
    init : {"random", "kmeans"} or ndarray of shape (p, n_features)
        Initial prototypes: uniformly sampled rows, streamed k-means centres, or given.
    tradeoff : float
        Eq. 8's price of one prototype, added to the validation loss.
    validation_fraction : float
        Share of rows held out (by a hash of the row id) when ``n_prototypes`` is a list.
    chunk_rows : int, optional
        Rows per chunk when this estimator opens the data or makes the engine.
    random_state : int, optional
        Seeds the initial prototypes, the validation rows and the chunk order.
    engine : engine, optional
        Runs the passes; a ``LocalEngine`` by default.
    progress : bool, optional
        Progress bars for the default engine.

    Attributes
    ----------
    prototypes_ : ndarray of shape (n_prototypes_, n_features), float64
    coef_ : ndarray of shape (n_prototypes_,)
        ``beta``.
    intercept_ : float
    n_prototypes_ : int
    objective_ : float
        Eq. 2's objective on the training rows at the end.
    objective_path_ : ndarray
        Objective after the first beta-step and after every alternation.
    n_iter_ : int
    selection_path_ : ndarray of shape (n_candidates, 4)
        Per candidate ``p`` (largest first): ``p``, validation loss, eq. 8's criterion and
        training objective (NaN losses when ``n_prototypes`` is one number).
    feature_names_in_ : tuple of str
    n_features_in_ : int
"""


class SuperSparseRegressor(RegressorScore, _SuperSparse):
    __doc__ = ("Super-sparse regression: ridge or LASSO over similarities to ``p`` learned "
               "virtual prototypes (paper 004's SRidge and SLASSO).\n" + _PARAMS_DOC + """
    Validation loss for eq. 8: mean absolute error.
    """)

    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None, engine: Any = None,
            checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY) -> SuperSparseRegressor:
        """Learn prototypes and coefficients by streaming over the data.

        Parameters
        ----------
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
        y : array-like or str, optional
            Targets of in-memory ``data``, or the target column name.
        sample_weight : array-like or str, optional
            Non-negative row weights ``v_i``.
        engine : engine, optional
            Overrides the ``engine`` parameter for this call.
        checkpoint : str or path-like, optional
            Directory where progress is saved; a fit killed and run again resumes from it.
        checkpoint_every : int
            Chunks between two checkpoint writes.

        Returns
        -------
        self
        """
        self._validate()
        dataset = regression_dataset(data, y, sample_weight, self.chunk_rows)
        return self._fit_dataset(dataset, "regression", None, engine, checkpoint,
                                 checkpoint_every)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets, ``f(x)``.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,)
        """
        return self.decision_function(X)


class SuperSparseClassifier(ClassifierScore, _SuperSparse):
    _two_classes_only = True
    __doc__ = ("Super-sparse two-class classifier: the sign of a ridge or LASSO fit of "
               "``+-1`` labels, or of another model's scores (:meth:`reduce`, the SSVM), "
               "over similarities to ``p`` learned virtual prototypes.\n" + _PARAMS_DOC + """
    classes_ : ndarray of shape (2,)
        Labels; ``f > 0`` predicts ``classes_[1]``.

    Validation loss for eq. 8: the share of held-out rows whose sign of ``f`` differs from
    the target's (the label, or the reduced model's decision).
    """)

    _sign_error = True

    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None, engine: Any = None,
            checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY) -> SuperSparseClassifier:
        """Fit ``f`` to ``+1`` (``classes_[1]``) and ``-1`` (``classes_[0]``) targets.

        Parameters
        ----------
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
        y : array-like or str, optional
            Labels of in-memory ``data`` (two classes), or the target column name.
        sample_weight : array-like or str, optional
            Non-negative row weights ``v_i``.
        engine : engine, optional
        checkpoint : str or path-like, optional
        checkpoint_every : int

        Returns
        -------
        self
        """
        self._validate()
        dataset = classification_dataset(data, y, sample_weight, self.chunk_rows)
        classes = _two_classes(dataset.classes)
        self._fit_dataset(dataset, "classification", None, engine, checkpoint,
                          checkpoint_every)
        self.classes_ = storable_classes(classes)
        return self

    @classmethod
    def reduce(cls, model: Any, p: int | Sequence[int], data: Any, *,
               sample_weight: Any = None, engine: Any = None,
               checkpoint: str | os.PathLike[str] | None = None,
               checkpoint_every: int = DEFAULT_EVERY, **params: Any) -> SuperSparseClassifier:
        """Reduce a trained two-class model to ``p`` virtual prototypes (SSVM, Sec. III).

        The prototypes and coefficients are fitted to ``model.decision_function`` on the rows
        of ``data``, so the reduced classifier mimics the model's decision values.

        Parameters
        ----------
        model : object
            Any fitted two-class model with ``decision_function(X) -> (n,)`` and
            ``classes_`` (an estimator of streamlearn, a scikit-learn ``SVC``, ...).
        p : int or list of int
            ``n_prototypes`` of the reduced model.
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
            Rows where the model is imitated (labels, if any, are not used).
        sample_weight : array-like, optional
            Row weights of in-memory ``data``.
        engine, checkpoint, checkpoint_every
            As in :meth:`fit`.
        **params
            Other hyper-parameters of the reduced classifier.

        Returns
        -------
        SuperSparseClassifier
        """
        if not hasattr(model, "decision_function"):
            raise LabelError(f"the model to reduce needs a decision_function; "
                             f"{type(model).__name__} has none")
        classes = getattr(model, "classes_", None)
        if classes is None:
            raise LabelError(f"the model to reduce must be fitted (no classes_ on "
                             f"{type(model).__name__})")
        classes = _two_classes(np.asarray(classes))
        reduced = cls(n_prototypes=p, **params)
        reduced._validate()
        if isinstance(data, Dataset):
            if sample_weight is not None:
                raise ValueError("with a Dataset, give the weights to open_dataset")
            dataset = data
        else:
            dataset = open_dataset(data, weight=sample_weight, chunk_rows=reduced.chunk_rows)
        reduced._fit_dataset(dataset, "teacher", model, engine, checkpoint, checkpoint_every)
        reduced.classes_ = storable_classes(classes)
        return reduced

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels: ``classes_[1]`` where ``f(x) > 0``.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,)
        """
        return self.classes_[(self.decision_function(X) > 0).astype(np.int64)]


def _two_classes(classes: np.ndarray | None) -> np.ndarray:
    if classes is None or len(classes) != 2:
        got = None if classes is None else list(np.asarray(classes).tolist())
        raise LabelError(f"super-sparse classifiers handle two classes, got {got}; train one "
                         "classifier per class (one-vs-rest) for more")
    return np.asarray(classes)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (for JSON)."""
    return value.item() if isinstance(value, np.generic) else value
