"""Passes and dense steps of super-sparse machines (paper 004).

- :class:`Similarity`: ``s(x, c)``, its prototype derivative and the repulsion penalty;
- :class:`TargetRows`: which rows of a chunk, with which targets (values, ``+-1`` labels or
  a reduced model's stored scores) and weights;
- reductions: :class:`GramPass` (the beta-step's statistics; :class:`SplitGramPass` of the
  training and the held-out rows at once), :class:`GradientPass` (the
  prototype gradient of eqs. 5-6), :class:`ValidationPass` (eq. 8's held-out loss),
  :class:`FeatureSpreadPass` (the feature variances of ``gamma="scale"``);
- sequential passes: :class:`MiniBatchPass` (prototypes moved per chunk) and
  :class:`TeacherScorePass` (a reduced model's decision value of every row);
- :class:`HingeGramPass`: the squared-hinge Newton step's statistics of the active rows
  (a classifier's refit of the coefficients, :func:`hinge_newton_point`), its rows'
  similarity columns kept between its passes in a :class:`SimilarityCache`;
- dense work: :func:`solve_beta` (ridge closed form or LASSO coordinate descent),
  :func:`objective` (eq. 2 from the Gram statistics), :func:`choose_lam` (``lam="auto"``
  from the held-out rows' statistics) and :func:`scale_gamma`.

The per-row work runs in the numba kernels of :mod:`streamlearn.solvers.prototypes`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from scipy.linalg import blas

from streamlearn.data import Chunk
from streamlearn.data.example_state import ExampleState
from streamlearn.data.sparse_rows import SparseRows, take_rows
from streamlearn.engine.row_sample import BottomKSample
from streamlearn.errors import DataError, LabelError
from streamlearn.solvers.calibration import TemperatureSums
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.kmeans import Standardiser
from streamlearn.solvers.prototypes import (
    approx_gradient_update,
    derivative_gradient_update,
    gram_update,
    lasso_cd,
    prototype_sq_distances,
    prototype_weights,
    rbf_gradient_update,
    rbf_gradient_update_csr,
    rbf_similarities,
    weighted_residuals,
)
from streamlearn.solvers.threads import single_threaded_blas
from streamlearn.warning_origin import library_rows

__all__ = [
    "LASSO_SWEEPS",
    "LASSO_TOL",
    "LINE_STEPS",
    "SIMILARITY_CACHE_BYTES",
    "SINGLE_THREAD_UNKNOWNS",
    "ClassSamplePass",
    "FeatureSpreadPass",
    "FeatureSpreadState",
    "GradientPass",
    "GradientState",
    "GramPass",
    "GramState",
    "HingeGramPass",
    "HingeGramState",
    "LossState",
    "MiniBatchPass",
    "MiniBatchState",
    "Similarity",
    "SimilarityCache",
    "SplitGramPass",
    "SplitGramState",
    "TargetRows",
    "TeacherScorePass",
    "ValidationPass",
    "choose_lam",
    "class_quotas",
    "class_targets",
    "column_statistics",
    "design_columns",
    "hinge_curvature",
    "hinge_line_objective",
    "hinge_newton_point",
    "hinge_objective",
    "lam_scale",
    "lane_scores",
    "linear_scores",
    "objective",
    "prototype_gamma",
    "scale_gamma",
    "solve_beta",
    "spread_standardiser",
    "spread_std",
    "squared_loss",
    "standardised_spread",
    "weighted_variance",
]

#: The steps along a squared-hinge Newton direction whose loss :class:`HingeGramPass` sums
#: (its line search): 1 (the Newton point) down to ``2^-20`` by half powers of 2.
LINE_STEPS = tuple(float(2.0 ** (-j / 2)) for j in range(41))
#: LASSO coordinate-descent sweeps per beta-step, and their tolerance.
LASSO_SWEEPS = 1000
LASSO_TOL = 1e-6
#: :class:`SimilarityCache`: the bytes of similarity columns it keeps at most (float64 rows
#: x (prototypes + 1), their targets and weights); the rows beyond are computed again in
#: every pass, as without a cache, so a pass over data larger than memory stays within it.
SIMILARITY_CACHE_BYTES = 256 * 2**20
#: The beta-step's and the refit's dense systems (:func:`solve_beta`, GCV's traces) of at
#: most this many unknowns (``p + 1``) are solved with BLAS held to one thread
#: (:func:`~streamlearn.solvers.threads.single_threaded_blas`). A fit solves hundreds of
#: them (every candidate penalty of every prototype step, every class of every Newton
#: pass), each a few milliseconds of work on one core at this size, and BLAS's threads
#: cost more than they share: on two cores that other processes also use, a 101-unknown
#: solve took 0.1 ms on one thread and 30-200 ms on two (usps: 1,800 solves were 56 s of
#: a 88 s fit).
SINGLE_THREAD_UNKNOWNS = 512
#: ``lam="auto"``: the candidate penalties, as multiples of :func:`lam_scale` (the mean
#: squared similarity of a row to a prototype), so that the grid follows the similarities'
#: scale whatever ``gamma``, ``p`` and the dimension: ``1e-9 .. 100`` by half decades.
AUTO_LAM_GRID = tuple(float(10.0 ** (e / 2)) for e in range(-18, 5))
#: ``lam="auto"`` takes the largest candidate whose held-out loss is within this share of
#: the smallest (the simplest model the held-out rows cannot tell from the best).
AUTO_LAM_SLACK = 0.01
#: ``lam="auto"`` without enough held-out rows to choose, with LASSO coefficients: this
#: multiple of :func:`lam_scale` (ridge ones are chosen by :func:`gcv_lam`).
AUTO_LAM_FALLBACK = 1e-3


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

    def values(self, X: np.ndarray | SparseRows, C: np.ndarray) -> np.ndarray:
        """``(n, p)`` float64 similarities of the rows ``X`` (float32, dense or CSR) to
        ``C``; a similarity function takes dense rows only."""
        if self.function is None:
            return rbf_similarities(X, C, self.gamma)
        if isinstance(X, SparseRows):
            raise TypeError("a similarity function takes dense rows; sparse rows train "
                            "with the RBF similarity")
        S = np.ascontiguousarray(np.asarray(self.function(X, C), dtype=np.float64))
        if S.shape != (X.shape[0], C.shape[0]):
            raise DataError(f"the similarity returned shape {S.shape} for {X.shape[0]} rows and "
                            f"{C.shape[0]} prototypes; expected ({X.shape[0]}, {C.shape[0]})")
        if not np.isfinite(S).all():
            raise DataError("the similarity returned NaN or infinite values")
        return S

    def gradient_update(self, X: np.ndarray, C: np.ndarray, S: np.ndarray,
                        M: np.ndarray, out: np.ndarray) -> None:
        """Add ``sum_i M_ik d s(x_i, c_k) / d c_k`` to ``out`` (p, d); ``M`` is (n, p)."""
        if self.function is None and isinstance(X, SparseRows):
            rbf_gradient_update_csr(*X.kernel_args, np.ascontiguousarray(C), S, self.gamma,
                                    M, out)
        elif self.function is None:
            rbf_gradient_update(X, C, S, self.gamma, M, out)
        elif self.gradient is None:
            approx_gradient_update(X, C, M, out)
        else:
            dS = np.ascontiguousarray(np.asarray(self.gradient(X, C), dtype=np.float64))
            if dS.shape != (X.shape[0], C.shape[0], C.shape[1]):
                raise DataError(f"the similarity gradient returned shape {dS.shape}; expected "
                                f"{(X.shape[0], C.shape[0], C.shape[1])}")
            derivative_gradient_update(dS, M, out)

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
    """How a chunk becomes ``(X, Y, v)``: features, regression targets and weights.

    ``Y`` has one column per output of the model: one for a regression target, two classes
    or a two-class model's scores; one per class for more classes.

    Attributes
    ----------
    mode : {"regression", "classification", "teacher"}
        Targets are the chunk's values, ``+-1`` from its class codes (two classes: ``+1``
        for code 1; more: ``+1`` in the column of the row's class, ``-1`` elsewhere), or
        the reduced model's scores stored per row in ``scores`` (:class:`TeacherScorePass`).
    scores : ExampleState, optional
        The reduced model's ``decision_function`` of every row (``mode="teacher"``; one
        column per class for a multiclass model).
    holdout : Holdout, optional
        Rows set aside to choose ``p``.
    validation : bool
        Select the held-out rows (True) or the others (False).
    standardiser : Standardiser, optional
        Applied to the features first (the RBF's units, see the driver).
    n_classes : int
        Classes of ``mode="classification"``.
    offset : float
        Subtracted from regression targets (:func:`~.driver.target_offset`): the model's
        intercept absorbs it, and the squared loss computed from the Gram statistics
        (``sum v y^2 - 2 w' Z'v y + w' G w``) no longer cancels digits of a target whose
        mean lies far above its spread.
    """

    mode: str
    scores: ExampleState | None = None
    holdout: Holdout | None = None
    validation: bool = False
    standardiser: Standardiser | None = None
    n_classes: int = 2
    offset: float = 0.0

    @property
    def n_outputs(self) -> int:
        """Columns of the targets ``Y``, the model's outputs ``K``."""
        if self.mode == "classification":
            return 1 if self.n_classes <= 2 else int(self.n_classes)
        if self.mode == "teacher" and self.scores is not None and self.scores.n_columns:
            return int(self.scores.n_columns)
        return 1

    def select(self, chunk: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chunk's rows of positive weight in this selection (standardised when a
        standardiser is set): a row of weight 0 is no row, in no statistic or count."""
        X, weight = chunk.X, chunk.weight
        if self.standardiser is not None:
            X = self.standardiser.apply(X)
        if self.mode == "teacher":
            assert self.scores is not None
            t = np.asarray(self.scores.get(chunk), dtype=np.float64)
        elif self.mode == "classification":
            t = class_targets(np.asarray(chunk.y), self.n_classes)
        else:
            t = np.asarray(chunk.y, dtype=np.float64) - self.offset
        t = t.reshape(t.shape[0], -1)
        kept = (np.ones(X.shape[0], dtype=bool) if weight is None
                else np.asarray(weight) > 0)
        if self.holdout is not None:
            held = self.holdout.mask(chunk.rows)
            kept &= held if self.validation else ~held
        elif self.validation:
            kept[:] = False
        if not kept.all():
            keep = np.flatnonzero(kept)
            X, t = take_rows(X, keep), t[keep]
            weight = weight[keep] if weight is not None else None
        v = (np.ones(X.shape[0], dtype=np.float32) if weight is None
             else np.ascontiguousarray(weight, dtype=np.float32))
        return X, np.ascontiguousarray(t), v


def class_targets(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Regression targets of class codes: ``2 code - 1`` for two classes, shape (n,);
    for more, ``+1`` in the column of the row's class and ``-1`` elsewhere, (n, n_classes)."""
    codes = np.asarray(codes, dtype=np.int64)
    if n_classes <= 2:
        return 2.0 * codes.astype(np.float64) - 1.0
    Y = np.full((codes.shape[0], int(n_classes)), -1.0)
    Y[np.arange(codes.shape[0]), codes] = 1.0
    return Y


class TeacherScorePass:
    """Sequential pass: stores the reduced model's decision value of every row.

    The model is evaluated once per row; every later pass reads the stored values. It is a
    sequential pass because it writes per-example state (engines give reductions read-only
    access to it); its only state is a row count, so splitting it changes nothing.

    Parameters
    ----------
    teacher : object
        With ``decision_function(X) -> (n,)``, or ``(n, K)`` for a ``K``-class model.
    scores : ExampleState
        One value per row (``K`` columns for a multiclass teacher), written chunk by chunk.
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
        X = chunk.X.to_scipy() if chunk.is_sparse else chunk.X  # scipy's sparse type
        with library_rows():  # the teacher's columns, in its order
            t = np.asarray(self.teacher.decision_function(X), dtype=np.float64)
        width = self.scores.n_columns
        expected = (chunk.n_rows,) if width is None else (chunk.n_rows, int(width))
        if t.shape != expected:
            raise LabelError(f"the model to reduce must give decision values of shape "
                             f"{expected} for {chunk.n_rows} rows (one column per class of a "
                             f"multiclass model); its decision_function returned {t.shape}")
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
        ``sum_i v_i z_i z_i^T``, ``z_i = (s(x_i, c_1..p), 1)``; ``(s(x_i, c_1..p), x_i, 1)``
        of the rows' (standardised) features too, (p + d + 1, p + d + 1), where
        :class:`GramPass` has ``linear``.
    r : ndarray of shape (p + 1, K)
        ``sum_i v_i z_i Y_i^T``, a column per output.
    yy : float
        ``sum_i v_i ||Y_i||^2``.
    weight : float
        ``V = sum_i v_i``.
    rows : int
    """

    G: np.ndarray
    r: np.ndarray
    yy: float = 0.0
    weight: float = 0.0
    rows: int = 0

    def __add__(self, other: GramState) -> GramState:
        """The statistics of both sets of rows (a new state)."""
        return GramState(self.G + other.G, self.r + other.r, self.yy + other.yy,
                         self.weight + other.weight, self.rows + other.rows)


class GramPass:
    """Reduction pass: the Gram matrix and right-hand side of the beta-step.

    Parameters
    ----------
    rows : TargetRows
    prototypes : ndarray of shape (p, d), float64
    similarity : Similarity
    linear : bool
        The rows' (standardised) features as columns between the similarities and the
        constant (:func:`design_columns`): the statistics of a ridge fit with a linear
        part (the regressor's ``linear_part``, :func:`~.driver.linear_ridge_refit`).
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, rows: TargetRows, prototypes: np.ndarray, similarity: Similarity,
                 linear: bool = False) -> None:
        self.rows = rows
        self.C = prototypes
        self.similarity = similarity
        self.linear = bool(linear)

    def start(self) -> GramState:
        """Zero statistics."""
        q = self.C.shape[0] + (self.C.shape[1] if self.linear else 0) + 1
        return GramState(np.zeros((q, q)), np.zeros((q, self.rows.n_outputs)))

    def step(self, state: GramState, chunk: Chunk) -> GramState:
        """Add the chunk's rows (in place)."""
        X, t, v = self.rows.select(chunk)
        if X.shape[0]:
            S = self.similarity.values(X, self.C)
            if self.linear:  # the kernel adds the constant column itself
                S = np.ascontiguousarray(design_columns(S, X, True)[:, :-1])
            yy, weight = gram_update(S, t, v, state.G, state.r)
            state.yy += yy
            state.weight += weight
            state.rows += X.shape[0]
        return state

    def merge(self, a: GramState, b: GramState) -> GramState:
        """Sum of two states (a new state)."""
        return a + b

    def finish(self, state: GramState) -> GramState:
        """The statistics."""
        return state


@dataclass
class SplitGramState:
    """The beta-step's statistics of the training rows and of the held-out rows."""

    train: GramState
    valid: GramState


class SplitGramPass:
    """Reduction pass: :class:`GramPass` of the training rows and of the held-out rows at
    once (``lam="auto"`` chooses its penalty by the held-out rows' loss).

    Parameters
    ----------
    train, valid : TargetRows
        The two selections of the same holdout.
    prototypes : ndarray of shape (p, d), float64
    similarity : Similarity
    linear : bool
        As :class:`GramPass`'s.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, train: TargetRows, valid: TargetRows, prototypes: np.ndarray,
                 similarity: Similarity, linear: bool = False) -> None:
        self.train = GramPass(train, prototypes, similarity, linear)
        self.valid = GramPass(valid, prototypes, similarity, linear)

    def start(self) -> SplitGramState:
        """Zero statistics."""
        return SplitGramState(self.train.start(), self.valid.start())

    def step(self, state: SplitGramState, chunk: Chunk) -> SplitGramState:
        """Add the chunk's rows to their side (in place)."""
        self.train.step(state.train, chunk)
        self.valid.step(state.valid, chunk)
        return state

    def merge(self, a: SplitGramState, b: SplitGramState) -> SplitGramState:
        """Sum of two states (a new state)."""
        return SplitGramState(self.train.merge(a.train, b.train),
                              self.valid.merge(a.valid, b.valid))

    def finish(self, state: SplitGramState) -> SplitGramState:
        """The statistics."""
        return state


@dataclass
class GradientState:
    """``sum_i M_ik d s(x_i, c_k) / d c_k`` per prototype (:func:`prototype_weights`), and
    the weight it covers; the prototype gradient of eq. 5 is ``2 / weight`` times ``grad``."""

    grad: np.ndarray
    weight: float = 0.0


class GradientPass:
    """Reduction pass: the prototype gradient at fixed ``(beta, b)`` (eqs. 5-6).

    Parameters
    ----------
    rows : TargetRows
    prototypes : ndarray of shape (p, d)
    w : ndarray of shape (p + 1, K), or (p + 1,) for one output
        ``(beta, b)``, a column per output.
    similarity : Similarity
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, rows: TargetRows, prototypes: np.ndarray, w: np.ndarray,
                 similarity: Similarity) -> None:
        self.rows = rows
        self.C = prototypes
        self.w = np.asarray(w, dtype=np.float64).reshape(len(w), -1)
        self.similarity = similarity

    def start(self) -> GradientState:
        """Zero gradient."""
        return GradientState(np.zeros_like(self.C))

    def step(self, state: GradientState, chunk: Chunk) -> GradientState:
        """Add the chunk's rows (in place)."""
        X, t, v = self.rows.select(chunk)
        if X.shape[0]:
            S = self.similarity.values(X, self.C)
            M = prototype_weights(weighted_residuals(S, self.w, t, v), self.w)
            self.similarity.gradient_update(X, self.C, S, M, state.grad)
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
    """Weighted validation loss sums: ``loss`` over ``weight``; with scales, the
    temperature scaling statistics of the rows
    (:class:`~streamlearn.solvers.calibration.TemperatureSums`)."""

    loss: float = 0.0
    weight: float = 0.0
    temperature: TemperatureSums | None = None


class ValidationPass:
    """Reduction pass: validation loss of ``f`` on the held-out rows.

    Mean absolute error for a regressor; for a classifier the weighted share of rows where
    the decision of ``f`` differs from the target's (labels or the reduced model's scores):
    the sign with one output, the largest output with more.

    Parameters
    ----------
    rows : TargetRows
    prototypes : ndarray of shape (p, d)
    w : ndarray of shape (p + 1, K), or (p + 1,) for one output
    similarity : Similarity
    sign_error : bool
    scales : ndarray, optional
        Classification: also sum the log-loss of ``softmax(s f)`` at each scale ``s``
        (temperature scaling's statistic).
    leverage : ndarray of shape (p + 1, p + 1), optional
        ``(A + lam D)^-1 / V`` of a ridge beta-step that trained on these rows (``A = G /
        V``, ``D`` the identity on ``beta``): each row is then scored by its
        leave-one-out prediction ``t - (t - f) / (1 - h)``, ``h = v z^T (A + lam D)^-1 z
        / V`` its leverage, as if the beta-step had not seen it.
    linear : bool
        ``w`` is (p + d + 1, K): ``f`` adds the linear part ``x . w_lin`` of the rows'
        (standardised) features (:func:`design_columns`); not with ``leverage``.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, rows: TargetRows, prototypes: np.ndarray, w: np.ndarray,
                 similarity: Similarity, sign_error: bool,
                 scales: np.ndarray | None = None, leverage: np.ndarray | None = None,
                 linear: bool = False) -> None:
        if linear and leverage is not None:
            raise ValueError("leave-one-out scores are those of the beta-step, which has no "
                             "linear part")
        self.linear = bool(linear)
        self.rows = rows
        self.C = prototypes
        self.w = np.asarray(w, dtype=np.float64).reshape(len(w), -1)
        self.similarity = similarity
        self.sign_error = bool(sign_error)
        self.scales = None if scales is None else np.asarray(scales, dtype=np.float64)
        if self.scales is not None and rows.mode != "classification":
            raise ValueError("temperature scales need class labels")
        self.leverage = leverage

    def start(self) -> LossState:
        """Zero sums."""
        return LossState(temperature=None if self.scales is None
                         else TemperatureSums(self.rows.n_classes, self.scales))

    def step(self, state: LossState, chunk: Chunk) -> LossState:
        """Add the chunk's held-out rows (in place)."""
        X, t, v = self.rows.select(chunk)
        if X.shape[0]:
            S = self.similarity.values(X, self.C)
            p = self.C.shape[0]
            f = S @ self.w[:p] + self.w[-1]
            if self.linear:
                f += linear_scores(X, self.w[p:-1])
            if self.leverage is not None:
                Z = np.column_stack([S, np.ones(S.shape[0])])
                h = v * np.einsum("ij,jk,ik->i", Z, self.leverage, Z)
                f = t - (t - f) / np.maximum(1.0 - h, 1e-12)[:, None]
            if not self.sign_error:
                err = np.abs(f - t).sum(axis=1)
            elif f.shape[1] == 1:
                err = ((f[:, 0] > 0) != (t[:, 0] > 0)).astype(np.float64)
            else:
                err = (f.argmax(axis=1) != t.argmax(axis=1)).astype(np.float64)
            state.loss += float(np.dot(v, err))
            state.weight += float(v.sum(dtype=np.float64))
            if state.temperature is not None:
                codes = (t[:, 0] > 0).astype(np.int64) if f.shape[1] == 1 else t.argmax(axis=1)
                state.temperature.add(f, codes, v)
        return state

    def merge(self, a: LossState, b: LossState) -> LossState:
        """Sum of two states (a new state)."""
        return LossState(a.loss + b.loss, a.weight + b.weight,
                  TemperatureSums.merged(a.temperature, b.temperature))

    def finish(self, state: LossState) -> LossState:
        """The sums."""
        return state


@dataclass
class MiniBatchState:
    """Prototypes and coefficients moved chunk by chunk.

    Attributes
    ----------
    C : ndarray of shape (p, d)
    w : ndarray of shape (p + 1, K)
    rows : int
        Rows processed in this pass (the weight of this state when states are merged).
    memory : GramState or None
        With it, the beta-step solves the statistics of every row seen (this one's added
        chunk by chunk, each at the prototypes of its step) instead of the chunk's alone,
        and the prototype step is scaled by ``sqrt(V_chunk / V_seen)``, the root of the
        chunk's share of the weight seen (a ``1 / sqrt(t)`` schedule): ``partial_fit``'s
        rows then add to what earlier calls learned, and a few rows move a model of many
        by little (a larger move would leave the remembered statistics, taken at the old
        prototypes, behind).
    """

    C: np.ndarray
    w: np.ndarray
    rows: int = 0
    memory: GramState | None = None


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
        memory = self.initial.memory
        return MiniBatchState(self.initial.C.copy(), self.initial.w.copy(),
                              memory=None if memory is None else memory + GramState(
                                  np.zeros_like(memory.G), np.zeros_like(memory.r)))

    def step(self, state: MiniBatchState, chunk: Chunk) -> MiniBatchState:
        """Beta-step on the chunk's statistics, then one prototype step (in place)."""
        X, t, v = self.rows.select(chunk)
        if X.shape[0] == 0:
            return state
        C = state.C
        p = C.shape[0]
        S = self.similarity.values(X, C)
        G = np.zeros((p + 1, p + 1))
        r = np.zeros((p + 1, t.shape[1]))
        yy, weight = gram_update(S, t, v, G, r)
        if weight <= 0:
            return state
        step = self.step_size
        if state.memory is None:
            state.w = solve_beta(G / weight, r / weight, self.lam, self.coef, state.w)
        else:
            state.memory = state.memory + GramState(G, r, yy, weight, X.shape[0])
            every = state.memory
            state.w = solve_beta(every.G / every.weight, every.r / every.weight, self.lam,
                                 self.coef, state.w)
            step *= np.sqrt(weight / every.weight)  # by the chunk's share of the rows seen
        M = prototype_weights(weighted_residuals(S, state.w, t, v), state.w)
        acc = np.zeros_like(C)
        self.similarity.gradient_update(X, C, S, M, acc)
        grad = (2.0 / weight) * acc
        if self.repulsion > 0:
            grad += self.repulsion * self.similarity.penalty_gradient(C)
        state.C = C - step * grad
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


@dataclass
class HingeGramState:
    """Sufficient statistics of the squared-hinge Newton step, per lane and output.

    A lane is one coefficient set ``w_l`` of shape (p + 1, K); a row is active for output
    ``c`` of lane ``l`` when its margin ``y_ic z_i^T w_lc`` is below 1.

    Attributes
    ----------
    G : ndarray of shape (L, K, p + 1, p + 1)
        ``sum_active v_i z_i z_i^T`` of the rows trained on.
    r : ndarray of shape (L, K, p + 1)
        ``sum_active v_i y_ic z_i``.
    loss : ndarray of shape (L, K)
        ``sum_i v_i max(0, 1 - y_ic z_i^T w_lc)^2`` of the rows trained on.
    held_out : ndarray of shape (L, K)
        The same sum over the held-out rows (zeros without them).
    line : ndarray of shape (L, K, len(LINE_STEPS))
        The loss sum of the rows trained on at ``base + t direction`` for each step ``t``
        of :data:`LINE_STEPS` (zeros without a direction).
    weight, held_out_weight : float
        ``sum_i v_i`` of the rows trained on and of the held-out rows.
    rows : int
        Rows trained on.
    """

    G: np.ndarray
    r: np.ndarray
    loss: np.ndarray
    held_out: np.ndarray
    line: np.ndarray
    weight: float = 0.0
    held_out_weight: float = 0.0
    rows: int = 0

    def __add__(self, other: HingeGramState) -> HingeGramState:
        """The statistics of both sets of rows (a new state)."""
        return HingeGramState(self.G + other.G, self.r + other.r, self.loss + other.loss,
                              self.held_out + other.held_out, self.line + other.line,
                              self.weight + other.weight,
                              self.held_out_weight + other.held_out_weight,
                              self.rows + other.rows)


def design_columns(S: np.ndarray, X: np.ndarray | SparseRows, linear: bool) -> np.ndarray:
    """The refit's design columns of rows ``X`` whose similarities are ``S`` (n, p):
    ``(S, 1)``, or with ``linear`` ``(S, X, 1)``, the rows' (standardised) features
    between them (the linear part, a sparse row's non-zeros in their columns), float64."""
    if not linear:
        return np.column_stack([S, np.ones(S.shape[0])])
    dense = X.toarray() if isinstance(X, SparseRows) else np.asarray(X)
    return np.column_stack([S, dense.astype(np.float64), np.ones(S.shape[0])])


def linear_scores(X: np.ndarray | SparseRows, coef: np.ndarray) -> np.ndarray:
    """``X @ coef`` (n, K) of dense or CSR rows (float64: a sparse row sums its non-zeros)."""
    if isinstance(X, SparseRows):
        return np.asarray(X.to_scipy() @ coef, dtype=np.float64).reshape(X.shape[0], -1)
    return np.asarray(X, dtype=np.float64) @ coef


class SimilarityCache:
    """The design columns ``Z = (s(x, c_1..p), 1)`` of a pass's rows, with their targets
    and weights, kept per chunk between passes at fixed prototypes.

    :class:`HingeGramPass` reads each chunk's rows from here where they are held and
    stores them after computing them: the refit's Newton passes
    (:func:`~.driver.hinge_newton`) recompute nothing but the margins. Entries are keyed by
    the rows' role (``"train"``, ``"held_out"``) and the chunk's first row, and checked
    against the chunk's row count and row ids, so a chunk seen in another order or cut
    otherwise is computed again (and replaces the entry). The columns are the float64
    values the pass would compute, so a cached pass sums exactly what a recomputing one
    does. Chunks that would take it over ``max_bytes`` are not kept: they are computed in
    every pass, as without a cache.

    The cache lives in the process that runs the passes, in their order: it serves
    ``LocalEngine``; a pass shipped to other processes carries it empty (pickled without
    its entries).

    Parameters
    ----------
    prototypes : ndarray of shape (p, d)
        The prototypes every pass reading the cache has.
    similarity : Similarity
    max_bytes : int
        Bytes of arrays held at most (:data:`SIMILARITY_CACHE_BYTES` by default).
    linear : bool
        The columns hold the rows' features too (:func:`design_columns`).

    Attributes
    ----------
    nbytes : int
        Bytes held.
    hits, misses : int
        Chunks read from the cache, and computed (kept or not).
    """

    def __init__(self, prototypes: np.ndarray, similarity: Similarity,
                 max_bytes: int = SIMILARITY_CACHE_BYTES, linear: bool = False) -> None:
        self.prototypes = prototypes
        self.similarity = similarity
        self.linear = bool(linear)
        self.max_bytes = int(max_bytes)
        self.nbytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: dict[tuple[str, int], tuple[Any, ...]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_entries"], state["nbytes"] = {}, 0
        return state

    def serves(self, prototypes: np.ndarray, similarity: Similarity,
               linear: bool = False) -> bool:
        """Whether the entries are those of ``prototypes``, ``similarity`` and ``linear``."""
        return similarity == self.similarity and bool(linear) == self.linear and (
            prototypes is self.prototypes or np.array_equal(prototypes, self.prototypes))

    def get(self, role: str, chunk: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(Z, t, v)`` of the chunk's rows of ``role``, or None where not held."""
        entry = self._entries.get((role, int(chunk.start)))
        if entry is None:
            return None
        n_rows, index, Z, t, v = entry
        if n_rows != chunk.n_rows or not (
                index is None if chunk.index is None
                else index is not None and np.array_equal(index, chunk.index)):
            return None
        self.hits += 1
        return Z, t, v

    def put(self, role: str, chunk: Chunk, Z: np.ndarray, t: np.ndarray,
            v: np.ndarray) -> None:
        """Keep the chunk's rows of ``role`` when they fit within ``max_bytes``."""
        self.misses += 1
        key = (role, int(chunk.start))
        old = self._entries.pop(key, None)
        if old is not None:
            self.nbytes -= sum(a.nbytes for a in old[1:] if a is not None)
        index = None if chunk.index is None else np.array(chunk.index)
        size = Z.nbytes + t.nbytes + v.nbytes + (0 if index is None else index.nbytes)
        if self.nbytes + size > self.max_bytes:
            return
        for a in (Z, t, v):  # shared by the passes: none may write to them
            a.setflags(write=False)
        self._entries[key] = (chunk.n_rows, index, Z, t, v)
        self.nbytes += size


class HingeGramPass:
    """Reduction pass: the squared-hinge Newton step's statistics of several coefficient
    lanes at fixed prototypes (Keerthi and DeCoste's L2-SVM Newton method, one pass per
    iteration), and each lane's squared hinge loss on held-out rows.

    For each lane ``l`` and output ``c`` it sums, over the rows whose margin
    ``y_ic z_i^T w_lc`` is below 1 (``z_i = (s(x_i, c_1..p), 1)``, ``y_ic = +-1``), the
    Gram matrix ``v_i z_i z_i^T`` and right-hand side ``v_i y_ic z_i``: on those rows the
    squared hinge ``(1 - y f)^2`` is the squared loss ``(y - f)^2``, so the Newton point
    is the ridge beta-step of these statistics (:func:`solve_beta`). With a ``base`` and
    a ``direction`` it also sums the loss along the line ``base + t direction`` at each
    step ``t`` of :data:`LINE_STEPS` (the line search of the Newton step that led to
    ``W``, no Gram).

    Parameters
    ----------
    rows : TargetRows
        The rows trained on (``mode="classification"``).
    prototypes : ndarray of shape (p, d), float64
    similarity : Similarity
    W : ndarray of shape (L, p + 1, K)
        The lanes' coefficients, intercept last.
    held_out : TargetRows, optional
        Rows whose squared hinge loss is summed at each lane (no Gram).
    base, direction : ndarray of shape (L, p + 1, K), optional
        The line searched.
    outputs : ndarray of shape (L, K) of bool, optional
        The outputs whose Gram statistics (``G``, ``r``) are summed; the others' stay
        zero (an output that has stopped needs only its losses). Every output by default.
    cache : SimilarityCache, optional
        Where the rows' similarity columns are read from when held, and kept after being
        computed (the passes of one refit share one, at the same prototypes).
    linear : bool
        The design columns hold the rows' (standardised) features between the
        similarities and the 1 (:func:`design_columns`): ``W`` is then (L, p + d + 1, K),
        the linear part's coefficients ``w`` in rows ``p .. p + d - 1``, summed and
        solved as the prototypes' coefficients are.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, rows: TargetRows, prototypes: np.ndarray, similarity: Similarity,
                 W: np.ndarray, held_out: TargetRows | None = None,
                 base: np.ndarray | None = None, direction: np.ndarray | None = None,
                 outputs: np.ndarray | None = None,
                 cache: SimilarityCache | None = None, linear: bool = False) -> None:
        if cache is not None and not cache.serves(prototypes, similarity, linear):
            raise ValueError("the similarity cache holds the columns of other prototypes")
        self.cache = cache
        self.rows = rows
        self.C = prototypes
        self.similarity = similarity
        self.linear = bool(linear)
        self.W = np.asarray(W, dtype=np.float64)
        if self.W.ndim != 3 or (self.W.shape[1] <= prototypes.shape[0] + 1 if linear
                                else self.W.shape[1] != prototypes.shape[0] + 1):
            raise ValueError(f"W must have shape (lanes, {prototypes.shape[0] + 1}"
                             f"{' + n_features' if linear else ''}, outputs), "
                             f"got {self.W.shape}")
        self.held_out = held_out
        self.outputs = (np.ones(self.W.shape[::2], dtype=bool) if outputs is None
                        else np.asarray(outputs, dtype=bool).reshape(self.W.shape[::2]))
        self.line = None if base is None or direction is None else (
            np.asarray(base, dtype=np.float64).reshape(self.W.shape),
            np.asarray(direction, dtype=np.float64).reshape(self.W.shape))

    def start(self) -> HingeGramState:
        """Zero statistics."""
        L, q, K = self.W.shape
        return HingeGramState(np.zeros((L, K, q, q)), np.zeros((L, K, q)), np.zeros((L, K)),
                              np.zeros((L, K)), np.zeros((L, K, len(LINE_STEPS))))

    def _rows(self, role: str, selection: TargetRows, chunk: Chunk
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``Z = (S, 1)`` (``(S, X, 1)`` with ``linear``) of the chunk's rows of
        ``selection``, their targets and weights: from the cache where it holds them, else
        computed (and offered to it)."""
        if self.cache is not None:
            held = self.cache.get(role, chunk)
            if held is not None:
                return held
        X, t, v = selection.select(chunk)
        if X.shape[0]:
            Z = design_columns(self.similarity.values(X, self.C), X, self.linear)
        else:
            Z = np.zeros((0, self.W.shape[1]))
        if Z.shape[1] != self.W.shape[1]:
            raise ValueError(f"the rows give {Z.shape[1]} design columns for coefficients "
                             f"of {self.W.shape[1]}")
        if self.cache is not None:
            self.cache.put(role, chunk, Z, t, v)
        return Z, t, v

    def _margins(self, Z: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The slacks ``1 - y z^T w`` of the rows ``Z``, shape (L, n, K)."""
        return 1.0 - t[None, :, :] * lane_scores(Z, self.W)

    def _line(self, state: HingeGramState, Z: np.ndarray, t: np.ndarray,
              v64: np.ndarray) -> None:
        """Add the loss sums along the line at each of :data:`LINE_STEPS`."""
        assert self.line is not None
        base, direction = self.line
        slack = 1.0 - t[None, :, :] * lane_scores(Z, base)
        change = t[None, :, :] * lane_scores(Z, direction)
        for j, step in enumerate(LINE_STEPS):
            state.line[:, :, j] += np.einsum(
                "n,lnk->lk", v64, np.maximum(slack - step * change, 0.0) ** 2)

    def step(self, state: HingeGramState, chunk: Chunk) -> HingeGramState:
        """Add the chunk's rows (in place)."""
        Z, t, v = self._rows("train", self.rows, chunk)
        if Z.shape[0]:
            slack = self._margins(Z, t)
            v64 = v.astype(np.float64)
            active = slack > 0.0
            state.loss += np.einsum("n,lnk->lk", v64, np.where(active, slack, 0.0) ** 2)
            every: np.ndarray | None = None  # the upper Gram of every row, where needed
            for lane, c in zip(*np.nonzero(self.outputs), strict=True):
                keep = np.flatnonzero(active[lane, :, c])
                if not keep.size:
                    continue
                va = v64[keep]
                state.r[lane, c] += Z[keep].T @ (va * t[keep, c])
                if 2 * keep.size <= Z.shape[0]:
                    state.G[lane, c] += upper_gram(Z[keep], va)
                else:  # fewer rows outside the margin: every row's less theirs
                    if every is None:
                        every = upper_gram(Z, v64)
                    state.G[lane, c] += every
                    out = np.flatnonzero(~active[lane, :, c])
                    if out.size:
                        state.G[lane, c] -= upper_gram(Z[out], v64[out])
            if self.line is not None:
                self._line(state, Z, t, v64)
            state.weight += float(v64.sum())
            state.rows += Z.shape[0]
        if self.held_out is not None:
            Z, t, v = self._rows("held_out", self.held_out, chunk)
            if Z.shape[0]:
                slack = self._margins(Z, t)
                v64 = v.astype(np.float64)
                state.held_out += np.einsum("n,lnk->lk", v64, np.maximum(slack, 0.0) ** 2)
                state.held_out_weight += float(v64.sum())
        return state

    def merge(self, a: HingeGramState, b: HingeGramState) -> HingeGramState:
        """Sum of two states (a new state)."""
        return a + b

    def finish(self, state: HingeGramState) -> HingeGramState:
        """The statistics, ``G`` filled below its diagonal (the steps sum its upper
        triangle)."""
        return replace(state, G=symmetric_from_upper(state.G))


def lane_scores(Z: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``z_i^T w_lk`` of every row, lane and output, shape (L, n, K), by one matrix
    product of ``Z`` (n, q) and the lanes' coefficients ``W`` (L, q, K) side by side
    (``einsum`` loops over such a contraction without BLAS, 20-30 times slower at the
    refit's sizes), on one BLAS thread: the pass's reading ahead has the other cores, and
    on two cores other processes share, two BLAS threads made it 3-8 times slower."""
    L, q, K = W.shape
    side = np.ascontiguousarray(np.transpose(W, (1, 0, 2))).reshape(q, L * K)
    with single_threaded_blas():
        F = Z @ side
    return np.ascontiguousarray(np.transpose(F.reshape(-1, L, K), (1, 0, 2)))


def upper_gram(Z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The upper triangle of ``Z^T diag(v) Z`` (zeros below the diagonal), by BLAS's
    symmetric rank-k update, half the products of the full matrix.

    Parameters
    ----------
    Z : ndarray of shape (n, q), float64
    v : ndarray of shape (n,)
        Non-negative row weights.

    Returns
    -------
    ndarray of shape (q, q)
    """
    A = Z * np.sqrt(v)[:, None]
    # A.T is Fortran-ordered: BLAS reads it without a copy
    return blas.dsyrk(1.0, A.T, trans=0)


def symmetric_from_upper(G: np.ndarray) -> np.ndarray:
    """The symmetric matrices whose upper triangles are those of ``G`` (..., q, q)."""
    upper = np.triu(G)
    return upper + np.swapaxes(np.triu(G, 1), -1, -2)


def hinge_objective(stats: HingeGramState, W: np.ndarray, lams: np.ndarray) -> np.ndarray:
    """Each lane's and output's squared-hinge objective at the coefficients ``W`` (L, p + 1,
    K) the pass ran at: ``(1 / V) sum_i v_i max(0, 1 - y_ic f_c(x_i))^2 + lam_l ||beta_c||^2``,
    shape (L, K)."""
    beta = np.asarray(W, dtype=np.float64)[:, :-1, :]
    return stats.loss / stats.weight + np.asarray(lams)[:, None] * np.sum(beta * beta, axis=1)


def hinge_line_objective(stats: HingeGramState, base: np.ndarray, direction: np.ndarray,
                         lams: np.ndarray) -> np.ndarray:
    """Each lane's and output's squared-hinge objective at ``base + t direction`` for each
    step ``t`` of :data:`LINE_STEPS`, from the pass's line sums, shape (L, K, steps)."""
    steps = np.asarray(LINE_STEPS)
    beta = (np.asarray(base, dtype=np.float64)[:, :-1, :, None]
            + steps * np.asarray(direction, dtype=np.float64)[:, :-1, :, None])
    return (stats.line / stats.weight
            + np.asarray(lams)[:, None, None] * np.sum(beta * beta, axis=1))


def hinge_newton_point(stats: HingeGramState, lams: np.ndarray, W: np.ndarray,
                       damping: np.ndarray | None = None,
                       free: np.ndarray | None = None) -> np.ndarray:
    """The Newton point of every lane and output from the statistics the pass summed at
    ``W`` (L, p + 1, K): the ridge beta-step (:func:`solve_beta`) of the active rows,
    ``(G_I / V + lam D) w = r_I / V`` (``D`` the identity on ``beta``, zero on the
    intercept), shape (L, p + 1, K). An output with no row inside its margin keeps its
    coefficients (its loss is already zero).

    With ``damping`` (L, K), ``mu``, the point is Levenberg and Marquardt's instead,
    ``(G_I / V + (lam + mu) D) w = r_I / V + mu D W``: the Newton step from ``W`` with
    ``mu`` added to the curvature of every coefficient but the intercept. ``mu = 0`` is
    the Newton point.

    With ``free`` (L, p + 1) of bool, lane ``l`` solves for its columns ``free[l]`` only
    (the intercept always), the others staying 0: a lane of a subset of the design
    columns (the prototypes without the linear part, or the linear part alone) run
    beside lanes of all of them in the same passes."""
    L, K = stats.G.shape[:2]
    W = np.array(W, dtype=np.float64)
    V = stats.weight
    q = W.shape[1]
    for lane in range(L):
        cols = (np.arange(q) if free is None
                else np.flatnonzero(np.append(np.asarray(free[lane], dtype=bool)[:-1], True)))
        for c in range(K):
            A = stats.G[lane, c][np.ix_(cols, cols)] / V
            if A[-1, -1] <= 0:
                continue
            mu = 0.0 if damping is None else float(damping[lane, c])
            b = stats.r[lane, c][cols] / V
            if mu > 0:
                b = b.copy()
                b[:-1] += mu * W[lane, cols[:-1], c]
            W[lane, :, c] = 0.0
            W[lane, cols, c] = solve_beta(A, b, float(lams[lane]) + mu, "ridge")
    return W


def hinge_curvature(stats: HingeGramState, free: np.ndarray | None = None) -> np.ndarray:
    """Each lane's and output's mean curvature of the squared loss of its active rows per
    coefficient, ``trace(G_I) / (p V)`` over ``beta`` (the intercept left out), shape
    (L, K): the scale of :func:`hinge_newton_point`'s damping. With ``free`` (L, p + 1),
    over each lane's free coefficients."""
    p = stats.G.shape[-1] - 1
    if free is None:
        return np.trace(stats.G[..., :p, :p], axis1=-2, axis2=-1) / (p * stats.weight)
    diagonal = np.diagonal(stats.G[..., :p, :p], axis1=-2, axis2=-1)  # (L, K, p)
    mask = np.asarray(free, dtype=bool)[:, None, :p]
    return (np.where(mask, diagonal, 0.0).sum(axis=-1)
            / (np.maximum(mask.sum(axis=-1), 1) * stats.weight))


@dataclass
class FeatureSpreadState:
    """Weighted per-feature sums of a set of rows.

    Attributes
    ----------
    total : ndarray of shape (n_features,)
        ``sum_i v_i x_i``.
    squares : ndarray of shape (n_features,)
        ``sum_i v_i x_i^2``.
    weight : float
        ``V = sum_i v_i``.
    """

    total: np.ndarray
    squares: np.ndarray
    weight: float = 0.0


class FeatureSpreadPass:
    """Reduction pass: weighted per-feature sums and sums of squares (for ``gamma="scale"``).

    Parameters
    ----------
    n_features : int
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, n_features: int) -> None:
        self.n_features = int(n_features)

    def start(self) -> FeatureSpreadState:
        """Zero sums."""
        return FeatureSpreadState(np.zeros(self.n_features), np.zeros(self.n_features))

    def step(self, state: FeatureSpreadState, chunk: Chunk) -> FeatureSpreadState:
        """Add the chunk's rows (in place)."""
        v = (np.ones(chunk.n_rows) if chunk.weight is None
             else np.asarray(chunk.weight, dtype=np.float64))
        if chunk.is_sparse:  # the stored entries' sums; zeros add nothing
            rows = chunk.X
            x = rows.values.astype(np.float64)
            vx = np.repeat(v, np.diff(rows.indptr)) * x
            state.total += np.bincount(rows.indices, weights=vx, minlength=self.n_features)
            state.squares += np.bincount(rows.indices, weights=vx * x,
                                         minlength=self.n_features)
        else:
            X = np.asarray(chunk.X, dtype=np.float64)
            state.total += v @ X
            state.squares += v @ (X * X)
        state.weight += float(v.sum())
        return state

    def merge(self, a: FeatureSpreadState, b: FeatureSpreadState) -> FeatureSpreadState:
        """Sum of two states (a new state)."""
        return FeatureSpreadState(a.total + b.total, a.squares + b.squares, a.weight + b.weight)

    def finish(self, state: FeatureSpreadState) -> FeatureSpreadState:
        """The sums."""
        return state


def class_quotas(p: int, shares: np.ndarray) -> np.ndarray:
    """Prototypes of each class in a pool of ``p``: at least one a class while ``p`` allows
    (every class can then win a row on its own), the rest in proportion to ``shares`` (the
    classes' weights) by largest remainders. Sums to ``p``.

    Parameters
    ----------
    p : int
    shares : ndarray of shape (n_classes,)
        Non-negative; a class of share 0 gets none.

    Returns
    -------
    ndarray of shape (n_classes,), int64
    """
    shares = np.maximum(np.asarray(shares, dtype=np.float64), 0.0)
    present = shares > 0
    base = np.zeros(shares.shape[0], dtype=np.int64)
    if p >= int(present.sum()):
        base[present] = 1
    rest = int(p) - int(base.sum())
    total = shares.sum()
    if rest <= 0 or total <= 0:
        return base
    ideal = rest * shares / total
    quota = np.floor(ideal).astype(np.int64)
    left = rest - int(quota.sum())
    order = np.argsort(-(ideal - quota), kind="stable")
    quota[order[:left]] += 1
    return base + quota


class ClassSamplePass:
    """Reduction pass: a uniform sample of ``quotas[c]`` rows of each class ``c`` (the rows
    of smallest key among its rows, :class:`~streamlearn.engine.row_sample.BottomKSample`),
    and a uniform sample of ``sum(quotas)`` rows of any class to make up for a class with
    fewer rows than its quota.

    Only rows of positive sample weight are offered (a row of weight 0 is no row), each
    with the same chance whatever its weight.

    Parameters
    ----------
    quotas : ndarray of shape (n_classes,), int
    n_features : int
    seed : int
    sparse : bool
        Sample CSR rows.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, quotas: np.ndarray, n_features: int, seed: int,
                 sparse: bool = False) -> None:
        self.quotas = np.asarray(quotas, dtype=np.int64)
        self.n_features = int(n_features)
        self.seed = int(seed)
        self.sparse = bool(sparse)

    def start(self) -> tuple[list[BottomKSample | None], BottomKSample]:
        """Empty samples."""
        each = [BottomKSample(int(q), self.n_features, self.seed, self.sparse) if q > 0
                else None for q in self.quotas]
        return each, BottomKSample(int(self.quotas.sum()), self.n_features, self.seed,
                                   self.sparse)

    def step(self, state: tuple[list[BottomKSample | None], BottomKSample],
             chunk: Chunk) -> tuple[list[BottomKSample | None], BottomKSample]:
        """Offer the chunk's rows of positive weight to their class's sample and to the
        common one."""
        each, common = state
        chunk = chunk.weighted()
        rows = np.asarray(chunk.rows, dtype=np.int64)
        codes = np.asarray(chunk.y).astype(np.int64)
        for c in np.unique(codes):
            sample = each[int(c)]
            if sample is not None:
                at = np.flatnonzero(codes == c)
                sample.update(take_rows(chunk.X, at), rows[at])
        common.update(chunk.X, rows)
        return each, common

    def merge(self, a: tuple[list[BottomKSample | None], BottomKSample],
              b: tuple[list[BottomKSample | None], BottomKSample]
              ) -> tuple[list[BottomKSample | None], BottomKSample]:
        """The samples of the union (new objects)."""
        each = [None if x is None else x.merge(y)  # type: ignore[union-attr]
                for x, y in zip(a[0], b[0], strict=True)]
        return each, a[1].merge(b[1])

    def finish(self, state: tuple[list[BottomKSample | None], BottomKSample]
               ) -> np.ndarray | SparseRows:
        """``sum(quotas)`` distinct rows: each class's sample, then rows of the common
        sample (in key order) for the places a class could not fill."""
        each, common = state
        parts = [s for s in each if s is not None and len(s)]
        chosen = np.concatenate([s.rows for s in parts]) if parts else np.empty(0, np.int64)
        values = [s.values for s in parts]
        short = int(self.quotas.sum()) - chosen.shape[0]
        if short > 0:
            extra = np.flatnonzero(~np.isin(common.rows, chosen))[:short]
            values.append(take_rows(common.values, extra))
        if self.sparse:
            return SparseRows.concatenate(values)
        return np.concatenate(values, axis=0)


def spread_std(spread: FeatureSpreadState) -> np.ndarray:
    """Every feature's weighted standard deviation, from the sums of the spread."""
    weight = max(spread.weight, 1e-300)
    mean = spread.total / weight
    return np.sqrt(np.maximum(spread.squares / weight - mean * mean, 0.0))


def spread_standardiser(spread: FeatureSpreadState) -> Standardiser:
    """``z = (x - mean) / std`` with the weighted mean and standard deviation of the spread.

    A feature constant over the rows takes an infinite scale: it is 0 at prediction too,
    whatever its value there. The fit learned nothing of its other values, and measured
    in the distances they would move every similarity (a column at 3 in training and
    normal of sd 10 at prediction changed 42 % of a classifier's predictions).
    """
    mean = spread.total / max(spread.weight, 1e-300)
    std = spread_std(spread)
    # sums of squares leave round-off where a feature is constant (no extremes to
    # compare): relative to its mean, so that a feature of tiny units still varies
    varies = (std > 1e-12 * np.abs(mean)) & (std > 0)
    plain = Standardiser.from_mean_std(mean, std, varies)
    return Standardiser(plain.shift, np.where(varies, plain.scale, np.inf))


def standardised_spread(spread: FeatureSpreadState, std: Standardiser) -> FeatureSpreadState:
    """The sums of :class:`FeatureSpreadPass` as the standardised features would give."""
    total = (spread.total - spread.weight * std.shift) / std.scale
    squares = ((spread.squares - 2.0 * std.shift * spread.total
                + spread.weight * std.shift ** 2) / std.scale ** 2)
    return FeatureSpreadState(total, squares, spread.weight)


def scale_gamma(spread: FeatureSpreadState) -> float:
    """``gamma = 1 / sum_j var_j``: the RBF width of ``gamma="scale"``.

    ``var_j`` is the weighted variance of feature ``j``; ``sum_j var_j`` is half the mean
    squared distance between two rows, so ``s(x, x')`` of two typical rows is about
    ``exp(-2)`` whatever the number and the scale of the features. Constant features give
    ``gamma = 1``.
    """
    if spread.weight <= 0:
        return 1.0
    mean = spread.total / spread.weight
    variance = np.maximum(spread.squares / spread.weight - mean * mean, 0.0)
    total = float(variance.sum())
    return 1.0 / total if total > 0 and np.isfinite(total) else 1.0


#: ``gamma="auto"``: the similarity of two neighbouring prototypes, ``exp(-AUTO_GAMMA_FACTOR)``.
AUTO_GAMMA_FACTOR = 0.5
#: ``gamma="auto"`` is at most this many times the ``"scale"`` value.
AUTO_GAMMA_LIMIT = 8.0


def prototype_gamma(C: np.ndarray, scale: float | None = None) -> float | None:
    """``gamma = min(AUTO_GAMMA_FACTOR / D^2, AUTO_GAMMA_LIMIT * scale)``: the RBF width of
    ``gamma="auto"``.

    ``D^2`` is the median over the prototypes ``C`` of the squared distance to the nearest
    other prototype (prototypes equal to another left out), so two neighbouring prototypes
    have similarity about ``exp(-AUTO_GAMMA_FACTOR)`` and each covers its own region,
    whatever the dimension, the number of prototypes and how the rows spread. In few
    dimensions the prototypes crowd: ``p`` of them along a line lie about ``1 / p`` of the
    rows' range apart, and random ones much closer in places (50 standard normal values:
    a median nearest distance of about 0.025, where the similarity falls to nothing between
    neighbours a few of those apart). ``scale`` (``1 / sum_j var_j``, :func:`scale_gamma`)
    bounds it: with ``AUTO_GAMMA_LIMIT = 8`` the RBF's length ``1 / sqrt(2 gamma)`` is at
    least a quarter of the rows' root mean squared distance from their mean,
    ``sqrt(sum_j var_j)``. On standardised rows the bound holds ``gamma`` at ``8 / d`` or
    less for ``d`` features, which nearest distances exceed only in one to a few
    dimensions. None when fewer than two distinct prototypes exist.
    """
    C = np.asarray(C, dtype=np.float64)
    if C.shape[0] < 2:
        return None
    sq = np.einsum("ij,ij->i", C, C)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (C @ C.T), 0.0)
    d2[d2 <= 1e-12 * max(float(sq.max(initial=0.0)), 1.0)] = np.inf  # duplicates
    np.fill_diagonal(d2, np.inf)
    nearest = d2.min(axis=1)
    nearest = nearest[np.isfinite(nearest)]
    if nearest.size == 0:
        return None
    gamma = AUTO_GAMMA_FACTOR / float(np.median(nearest))
    return gamma if scale is None else min(gamma, AUTO_GAMMA_LIMIT * float(scale))


#: :func:`mean_abs_steps` works out a feature's steps through one product of the
#: similarities with its prototypes' factors when the factors' exponents stay within this
#: bound (``gamma h_f R_f``, ``R_f`` the feature's range over the rows and prototypes), and
#: one similarity at a time otherwise: past it a factor could leave double precision.
STEP_EXPONENT_LIMIT = 300.0
#: Rows whose steps :func:`mean_abs_steps` works out at a time, and the most columns
#: (outputs times features) it works out at once.
STEP_BLOCK_ROWS = 1024
STEP_COLUMNS = 4096


def side_steps(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's step in each feature across the feature's mean, the one
    :func:`mean_abs_steps` takes: ``h_f`` up for a row below the mean ``m_f`` of ``Z``,
    down for the others.

    ``h_f`` is the distance between the means of the values below ``m_f`` and of those at
    or above it, so a 0/1 feature steps from each of its values to the other, and a
    standardised normal one by ``2 sqrt(2 / pi) = 1.6`` standard deviations; 0 where one
    side holds no row (a constant feature).

    Parameters
    ----------
    Z : ndarray of shape (n, d)

    Returns
    -------
    below : ndarray of shape (n, d), bool
        The rows below the mean, which step up.
    h : ndarray of shape (d,), float64
    """
    Z = np.asarray(Z, dtype=np.float64)
    below = Z < Z.mean(axis=0)
    n_below = below.sum(axis=0)
    n_above = Z.shape[0] - n_below
    low = np.where(below, Z, 0.0).sum(axis=0) / np.maximum(n_below, 1)
    high = np.where(below, 0.0, Z).sum(axis=0) / np.maximum(n_above, 1)
    h = np.where((n_below > 0) & (n_above > 0), high - low, 0.0)
    return below, h


def mean_abs_steps(Z: np.ndarray, C: np.ndarray, beta: np.ndarray, gamma: float,
                   linear: np.ndarray | None = None) -> np.ndarray:
    """Each feature's mean over the rows ``Z`` and the outputs of
    ``|f(z + s h_f e_f) - f(z)| / h_f``, the score's change per unit over a step across the
    feature's mean, of ``f(z) = sum_p beta_p exp(-gamma ||z - c_p||^2)``, shape (d,).

    The step (:func:`side_steps`) is ``h_f`` up (``s = 1``) from a row below the mean of
    ``Z``'s feature ``f``, down (``s = -1``) from the others, ``h_f`` the distance between
    the means of its values on either side. A slope at the rows would miss a feature of
    few values: prototypes that sit on its values (a 0/1 feature's 0 and 1) make ``f``
    flat in it at every row, however much it moves ``f`` from one value to the other; the
    step lands a 0/1 feature's rows on its other value, and for a linear ``f`` equals the
    slope. 0 for a feature constant over ``Z``.

    A step changes one coordinate, so the similarity to ``c_p`` after it is
    ``S_ip exp(-gamma (2 delta (z_if - u_f) + delta^2)) exp(2 gamma delta (c_pf - u_f))``
    (``delta = s h_f``, ``u_f`` the middle of the feature's range): a row factor times a
    prototype factor, so every feature's steps of one direction take one product
    ``S @ (beta * prototype factors)``, as many operations as ``f`` itself per feature.
    A feature whose factors could leave double precision
    (:data:`STEP_EXPONENT_LIMIT`) takes its similarities after the step one at a time.

    Parameters
    ----------
    Z : ndarray of shape (n, d), float32
        Rows as the prototypes see them (standardised).
    C : ndarray of shape (p, d)
    beta : ndarray of shape (p, K)
    gamma : float
    linear : ndarray of shape (d, K), optional
        The linear part ``z . w`` of ``f`` (a classifier's ``linear_part``), whose step
        adds ``s h_f w_f``.

    Returns
    -------
    ndarray of shape (d,)
    """
    Z = np.ascontiguousarray(Z, dtype=np.float32)
    C = np.ascontiguousarray(C, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64).reshape(C.shape[0], -1)
    gamma = float(gamma)
    n, d = Z.shape
    total = np.zeros((beta.shape[1], d))
    if n == 0:
        return total.mean(axis=0)
    Z64 = Z.astype(np.float64)
    below, h = side_steps(Z64)
    low = np.minimum(Z64.min(axis=0), C.min(axis=0, initial=np.inf))
    high = np.maximum(Z64.max(axis=0), C.max(axis=0, initial=-np.inf))
    middle = 0.5 * (low + high)
    separable = gamma * h * (high - low) <= STEP_EXPONENT_LIMIT
    # the exponents' factors of the separable features (0 for the others, whose steps
    # are overwritten): the prototypes' exp(2 gamma s h (c - u)), the rows' the rest
    spread = np.where(separable, 2.0 * gamma * h, 0.0)
    square = np.where(separable, gamma * h * h, 0.0)
    direct = np.flatnonzero(~separable)
    Ct = np.ascontiguousarray(C.T)
    group = max(1, STEP_COLUMNS // d)  # outputs at a time
    for first in range(0, beta.shape[1], group):
        B = beta[:, first:first + group]
        K = B.shape[1]
        # per direction, each output's beta times each feature's prototype factors, (p, K d)
        weighted = {s: (B[:, :, None] * np.exp(s * spread * (C - middle))[:, None, :]
                        ).reshape(C.shape[0], K * d) for s in (1.0, -1.0)}
        for a in range(0, n, STEP_BLOCK_ROWS):
            b = min(a + STEP_BLOCK_ROWS, n)
            z, up = Z64[a:b], below[a:b]
            D2 = prototype_sq_distances(Z[a:b], Ct, np.ones(d))
            S = np.exp(-gamma * D2)
            stepped = np.empty((b - a, K, d))
            for s in (1.0, -1.0):
                moved = (S @ weighted[s]).reshape(b - a, K, d)
                moved *= np.exp(-s * spread * (z - middle) - square)[:, None, :]
                np.copyto(stepped, moved, where=(up if s > 0 else ~up)[:, None, :])
            for j in direct:  # the similarities after the step themselves
                delta = np.where(up[:, j], h[j], -h[j])[:, None]
                sq = (D2 + np.square(z[:, j, None] + delta - C[None, :, j])
                      - np.square(z[:, j, None] - C[None, :, j]))
                stepped[:, :, j] = np.exp(-gamma * sq) @ B
            stepped -= (S @ B)[:, :, None]
            if linear is not None:
                lin = np.asarray(linear, dtype=np.float64).reshape(d, -1)[:, first:first + K]
                stepped += np.where(up, h, -h)[:, None, :] * lin.T[None, :, :]
            total[first:first + K] += np.abs(stepped).sum(axis=0)
    per_unit = np.where(h > 0, total / n / np.where(h > 0, h, 1.0), 0.0)
    return per_unit.mean(axis=0)


# -- dense work between passes ---------------------------------------------------------------
def solve_beta(A: np.ndarray, b: np.ndarray, lam: float, coef: str,
               warm: np.ndarray | None = None) -> np.ndarray:
    """The beta-step on normalised statistics ``A = G / V``, ``b = r / V``.

    Parameters
    ----------
    A : ndarray of shape (p + 1, p + 1)
    b : ndarray of shape (p + 1, K), or (p + 1,) for one output
        A column per output; each output is solved on its own (they share ``A``).
    lam : float
    coef : {"ridge", "lasso"}
    warm : ndarray of the shape of ``b``, optional
        LASSO warm start.

    Returns
    -------
    ndarray of the shape of ``b``
        ``(beta, intercept)`` per output.
    """
    if b.ndim == 1:
        return solve_beta(A, b[:, None], lam, coef,
                          None if warm is None else np.reshape(warm, (-1, 1)))[:, 0]
    p = A.shape[0] - 1
    if coef == "lasso":
        return _centred_lasso(A, b, lam, warm)
    M = A.copy()
    M[np.arange(p), np.arange(p)] += lam
    with small_system(p + 1):
        try:
            w = np.linalg.solve(M, b)
            if np.isfinite(w).all():
                return w
        except np.linalg.LinAlgError:
            pass
        return np.linalg.lstsq(M, b, rcond=None)[0]


def small_system(unknowns: int) -> AbstractContextManager[Any]:
    """BLAS held to one thread for a system of at most :data:`SINGLE_THREAD_UNKNOWNS`
    unknowns, else as it is."""
    return single_threaded_blas() if unknowns <= SINGLE_THREAD_UNKNOWNS else nullcontext()


def _centred_lasso(A: np.ndarray, b: np.ndarray, lam: float,
                   warm: np.ndarray | None) -> np.ndarray:
    """:func:`solve_beta`'s LASSO: the unpenalised intercept solved in closed form.

    With ``A``'s last row the rows' mean similarities ``m`` (``A[p, p]`` = 1), the
    intercept of any ``beta`` is ``b[p] - m . beta``; ``beta`` minimises the centred
    problem ``beta^T (A_bb - m m^T) beta - 2 (b_b - m b[p])^T beta + lam |beta|_1``.
    Coordinate descent converges on it whatever the targets' offset (on the uncentred
    system the intercept and the all-positive similarity columns pull against each other,
    and an offset of 1e6 stopped it at the sweep cap, the model a constant); its step
    tolerance is :data:`LASSO_TOL` times the targets' scale in coefficient units."""
    p = A.shape[0] - 1
    m = A[:p, p] / A[p, p] if A[p, p] > 0 else np.zeros(p)
    mean = b[p] / A[p, p] if A[p, p] > 0 else np.zeros(b.shape[1])
    centred = np.zeros_like(A)
    centred[:p, :p] = A[:p, :p] - A[p, p] * np.outer(m, m)
    centred[p, p] = 1.0  # the intercept coordinate, decoupled: it stays at 0
    rhs = b[:p] - A[p, p] * np.outer(m, mean)
    w = np.zeros(b.shape)
    if warm is not None and warm.shape == b.shape:
        w[:p] = warm[:p]
    diagonal = float(np.mean(np.diag(centred)[:p])) if p else 0.0
    for c in range(b.shape[1]):
        column = np.zeros(p + 1)
        column[:p] = w[:p, c]
        units = float(np.abs(rhs[:, c]).max(initial=0.0)) / diagonal if diagonal > 0 else 0.0
        lasso_cd(centred, np.append(rhs[:, c], 0.0), float(lam), column, LASSO_SWEEPS,
                 LASSO_TOL * max(units, np.finfo(float).tiny))
        w[:p, c] = column[:p]
        w[p, c] = mean[c] - m @ column[:p]
    return w


def squared_loss(stats: GramState, w: np.ndarray) -> float:
    """``(1 / V) sum_i v_i ||z_i^T w - Y_i||^2`` from the Gram statistics (``w`` of shape
    (p + 1, K), or (p + 1,) for one output)."""
    w = np.asarray(w, dtype=np.float64).reshape(stats.r.shape)
    fit = float(np.sum(w * (stats.G @ w))) - 2.0 * float(np.sum(stats.r * w)) + stats.yy
    return max(fit / stats.weight, 0.0)


def objective(stats: GramState, w: np.ndarray, lam: float, coef: str) -> float:
    """``J = (1 / V) sum_i v_i ||z_i^T w - Y_i||^2 + lam R(beta)`` from the Gram statistics
    (``w`` of shape (p + 1, K), or (p + 1,) for one output; ``R`` summed over the outputs)."""
    beta = np.asarray(w, dtype=np.float64).reshape(stats.r.shape)[:-1]
    reg = float(np.sum(beta * beta)) if coef == "ridge" else float(np.abs(beta).sum())
    return float(squared_loss(stats, w) + lam * reg)


def lam_scale(stats: GramState, coef: str = "ridge") -> float:
    """The unit of ``lam="auto"``'s candidates: the mean squared similarity of a row to a
    prototype, ``trace(G_beta) / (p V)`` (1 when it is zero), for LASSO times the targets'
    standard deviation (the root of their weighted variance, averaged over the outputs; 1
    when it is zero), since a LASSO penalty is in the units of the coefficients, which
    scale with the targets (a ridge model's choice does not depend on them)."""
    p = stats.G.shape[0] - 1
    scale = float(np.trace(stats.G[:p, :p])) / (p * stats.weight) if p and stats.weight else 0.0
    scale = scale if scale > 0 and np.isfinite(scale) else 1.0
    if coef != "lasso" or stats.weight <= 0:
        return scale
    mean = stats.r[-1] / stats.weight  # z's last entry is the constant 1
    variance = (stats.yy / stats.weight - float(mean @ mean)) / stats.r.shape[1]
    return scale * (float(np.sqrt(variance)) if variance > 0 and np.isfinite(variance) else 1.0)


def gcv_lam(stats: GramState, coef: str) -> float:
    """``lam="auto"`` with too few rows to hold some out: the largest candidate whose
    generalised cross-validation score is within :data:`AUTO_LAM_SLACK` of the lowest.

    For ridge coefficients, ``GCV(lam) = L(lam) / (1 - df(lam) / n)^2`` with ``L`` the
    training rows' squared loss at the beta-step of ``lam``, ``df = trace((A + lam D)^-1
    A)`` its effective number of coefficients (``A = G / V``, ``D`` the identity on
    ``beta``, zero on the intercept) and ``n`` the rows: an estimate of the leave-one-out
    loss from the same statistics, so choosing reads no data. The candidates are those of
    :func:`choose_lam`. LASSO has no such closed form: it takes
    :data:`AUTO_LAM_FALLBACK` times :func:`lam_scale`, as does a ridge model whose every
    candidate leaves no degrees of freedom (``df >= n``).

    Parameters
    ----------
    stats : GramState
        Statistics of every training row at the current prototypes.
    coef : {"ridge", "lasso"}

    Returns
    -------
    float
    """
    return gcv_choice(stats, coef)[0]


def gcv_floor(stats: GramState, noise: float) -> float:
    """The least penalty :func:`gcv_lam` takes: ``(lambda_max / n) sigma^2 / var(t)``,
    with ``lambda_max`` the largest eigenvalue of the covariance of a row's similarities to
    the prototypes (``A`` without the intercept, centred: the intercept is not penalised),
    ``n`` the rows, ``sigma^2`` the estimated noise (``noise``, GCV's lowest score) and
    ``var(t)`` the targets' variance (summed over the outputs).

    This is the ridge penalty ``sigma^2 / (n tau^2)`` of coefficients of prior variance
    ``tau^2 = var(t) / lambda_max``: the most a coefficient can carry when the targets'
    whole variance lies along the similarities' widest direction, so no direction needs
    less. Below it GCV, which spreads the leverage evenly over the rows, can keep lowering
    the penalty to fit directions held by a handful of rows (prototypes crowded on one
    feature, skewed noise on the rows at its ends); the prototype steps then train at that
    penalty with no rows held out to check them, and move prototypes onto each other or
    past the rows, where coefficients of hundreds cancel on the training rows and not
    beside them. The floor falls as rows come and as the noise shrinks against the targets'
    variance (0 without rows, prototypes or variance).
    """
    p = stats.G.shape[0] - 1
    if p <= 0 or stats.weight <= 0 or stats.rows <= 0 or not np.isfinite(noise):
        return 0.0
    A = stats.G / stats.weight
    mean = A[:p, p]  # z's last entry is the constant 1 (A[p, p] = 1)
    top = float(np.linalg.eigvalsh(A[:p, :p] - np.outer(mean, mean))[-1])
    t_mean = stats.r[-1] / stats.weight
    variance = stats.yy / stats.weight - float(t_mean @ t_mean)  # summed over the outputs
    if not (top > 0 and np.isfinite(top)):
        return 0.0
    return top / stats.rows * noise / variance if variance > 0 else 0.0


def gcv_choice(stats: GramState, coef: str) -> tuple[float, float]:
    """:func:`gcv_lam`'s penalty and the lowest GCV score of its candidates at or above
    :func:`gcv_floor` (infinite where :func:`gcv_lam` falls back)."""
    scale = lam_scale(stats, coef)
    if coef != "ridge" or stats.weight <= 0 or stats.rows <= 0:
        return AUTO_LAM_FALLBACK * scale, np.inf
    lams = [factor * scale for factor in AUTO_LAM_GRID[::-1]]
    scores = [_gcv_score(stats, lam, coef) for lam in lams]
    if not np.isfinite(min(scores)):
        return AUTO_LAM_FALLBACK * scale, np.inf
    floor = min(gcv_floor(stats, min(scores)), lams[0])
    if floor > lams[-1]:
        kept = [i for i, lam in enumerate(lams) if lam > floor]
        lams = [lams[i] for i in kept] + [floor]
        scores = [scores[i] for i in kept] + [_gcv_score(stats, floor, coef)]
    best = min(scores)
    if not np.isfinite(best):
        return AUTO_LAM_FALLBACK * scale, np.inf
    bound = best * (1.0 + AUTO_LAM_SLACK)
    return float(next(lam for lam, score in zip(lams, scores, strict=True)
                      if score <= bound)), float(best)


def _gcv_score(stats: GramState, lam: float, coef: str) -> float:
    """``GCV(lam)`` of the ridge beta-step on ``stats`` (infinite where no degree of
    freedom is left or the loss is not finite)."""
    A, b = stats.G / stats.weight, stats.r / stats.weight
    p = A.shape[0] - 1
    M = A.copy()
    M[np.arange(p), np.arange(p)] += lam
    with small_system(p + 1):
        try:
            df = float(np.trace(np.linalg.solve(M, A)))
        except np.linalg.LinAlgError:
            df = float(np.trace(np.linalg.lstsq(M, A, rcond=None)[0]))
    room = 1.0 - df / stats.rows
    loss = squared_loss(stats, solve_beta(A, b, lam, coef))
    return loss / room**2 if room > 0 and np.isfinite(loss) else np.inf


def column_statistics(stats: GramState, columns: np.ndarray) -> GramState:
    """The statistics of the design columns ``columns`` (a mask or indices over ``z``, the
    constant column last among them) alone."""
    index = np.flatnonzero(columns) if np.asarray(columns).dtype == bool else columns
    return GramState(stats.G[np.ix_(index, index)], stats.r[index], stats.yy, stats.weight,
                     stats.rows)


def choose_lam(train: GramState, valid: GramState, coef: str,
               warm: np.ndarray | None = None, current: float | None = None) -> float:
    """``lam="auto"``: the largest penalty whose beta-step on the training rows has a squared
    loss on the held-out rows within :data:`AUTO_LAM_SLACK` of the lowest.

    The candidates are :data:`AUTO_LAM_GRID` times :func:`lam_scale` of the training rows,
    solved from the largest down (LASSO warm-starts each from the previous). A ``current``
    penalty within the slack is kept, so that the choice moves only when the prototypes
    have made it worse than the slack allows. Both sides are sufficient statistics, so
    choosing reads no data.

    Parameters
    ----------
    train, valid : GramState
        Statistics of the training rows and of the held-out rows at the same prototypes.
    coef : {"ridge", "lasso"}
    warm : ndarray, optional
        LASSO warm start of the largest candidate.
    current : float, optional
        The penalty in use.

    Returns
    -------
    float
        The chosen ``lam``; :func:`gcv_lam` of the training rows when no row was held
        out.

    Raises
    ------
    DataError
        When the held-out loss is NaN or infinite at every candidate (statistics that
        overflowed); a candidate with such a loss is never chosen.
    """
    scale = lam_scale(train, coef)
    if valid.weight <= 0:
        return gcv_lam(train, coef)
    A, b = train.G / train.weight, train.r / train.weight
    lams = [factor * scale for factor in AUTO_LAM_GRID[::-1]]
    if current is not None and np.isfinite(current) and current > 0:
        lams = sorted({*lams, float(current)}, reverse=True)
    losses = []
    w = warm
    for lam in lams:
        w = solve_beta(A, b, lam, coef, w)
        losses.append(squared_loss(valid, w))
    finite = [loss for loss in losses if np.isfinite(loss)]
    if not finite:
        raise DataError("lam='auto': the held-out rows' squared loss is NaN or infinite at "
                        "every candidate penalty (the statistics overflowed); rescale the "
                        "target and features, or give lam a number")
    bound = min(finite) * (1.0 + AUTO_LAM_SLACK)
    if current is not None and current in lams and losses[lams.index(current)] <= bound:
        return float(current)
    # the lowest finite loss is within the bound: some candidate always is
    return float(next(lam for lam, loss in zip(lams, losses, strict=True) if loss <= bound))


def weighted_variance(t: np.ndarray, weight: np.ndarray) -> float:
    """Weighted variance of the targets ``t`` (n,) or (n, K), averaged over the columns;
    1 when it is zero."""
    v = np.asarray(weight, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64).reshape(v.shape[0], -1)
    mean = (v @ t) / float(v.sum())
    variance = float(np.mean(v @ (t - mean) ** 2)) / float(v.sum())
    return variance if variance > 0 and np.isfinite(variance) else 1.0
