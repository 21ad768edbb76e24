"""Passes of the mixture of linear SVMs with RBF gating (paper 002) and their states.

Each pass walks a dataset's chunks once (see :mod:`streamlearn.engine`): reductions of
cluster class counts, E-step statistics (eq. 11), the gating objective (eq. 13, 14) and the
experts' hinge losses (eq. 15); sequential passes of the experts' dual coordinate descent
and of stochastic EM. The per-row work is in :mod:`streamlearn.solvers.mixture.kernels`.

The one-vs-rest mixtures of a multiclass fit share a read of the data: the class counts,
the E-step statistics, the initial experts and stochastic EM take one *lane* per binary
mixture, each chunk is read and standardised once and handed to every lane. A lane's dual
variables are an ``ExampleState`` attribute of its own (``alpha_0``, ``alpha_1``, ...), so
the engines find, checkpoint and mirror each like any other. Lanes may differ in their
number of components: the validation guard trains a one-component lane (a linear SVM) per
binary mixture beside it.

Rows of a :class:`~streamlearn.solvers.holdout.Holdout` get weight 0 in every training pass
given it; stochastic EM scores them, lane group against lane group (:class:`Validation`).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

import numpy as np
from scipy.special import logsumexp

from streamlearn.data import Chunk
from streamlearn.data.example_state import ExampleState
from streamlearn.data.sparse_rows import SparseRows, take_rows
from streamlearn.solvers.calibration import TEMPERATURE_SCALES, TemperatureSums
from streamlearn.solvers.dcd import scale_dual_change
from streamlearn.solvers.holdout import Holdout, held_out_rows
from streamlearn.solvers.kmeans import Standardiser, assign_rows, chunk_features
from streamlearn.solvers.mixture.kernels import (
    center_sq_norms,
    chunk_products,
    expert_dcd_chunk,
    expert_diagonal,
    gate_log_chunk,
    gating_objective_chunk,
    gating_objective_from_gates,
    mixture_log_odds,
    mixture_log_odds_chunk,
    posteriors_chunk,
)
from streamlearn.solvers.threads import (
    MIN_ROWS_FOR_LANE_THREADS,
    in_threads,
    single_threaded_blas,
    thread_bounds,
)

#: Coordinate descent sweeps over a chunk per visit (initial and batch M-step experts).
EXPERT_SWEEPS = 3
#: Stochastic EM step ``rho_t = (t + STEP_OFFSET) ** -STEP_DECAY`` at its ``t``-th chunk.
STEP_OFFSET = 2.0
STEP_DECAY = 0.6
#: With folded dual variables (``partial_fit``), a chunk's sweeps go on, ``EXPERT_SWEEPS``
#: at a time, until the largest projected gradient met in a round's first sweep is at most
#: ``FOLDED_PG_TOL`` (a margin violation, as liblinear's default tolerance), at most
#: ``FOLDED_MAX_ROUNDS`` rounds: a call's dual variables start at zero, where a fit's carry
#: over from the epochs before, and three sweeps from zero left the experts far from their
#: optimum (one component, 3,000 rows read five times: test accuracy 0.88 -> 0.80 -> 0.83).
FOLDED_PG_TOL = 0.1
FOLDED_MAX_ROUNDS = 10
#: The experts' losses: the paper's hinge, or the squared hinge.
LOSSES = ("hinge", "squared_hinge")


def is_squared(loss: str) -> bool:
    """Whether ``loss`` (one of :data:`LOSSES`) is the squared hinge."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    return loss == "squared_hinge"


def expert_losses(margins: np.ndarray, squared: bool) -> np.ndarray:
    """The experts' losses of margins ``y s`` (numpy form of the kernels' loss)."""
    m = np.maximum(0.0, 1.0 - margins)
    return m * m if squared else m


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



#: A lane's labels: a class code ``c`` (one class against the rest: +1 for ``c``, -1 for
#: every other class), or a pair of codes ``(i, j)`` (one against one: +1 for ``i``, -1 for
#: ``j``, and the rows of every other class weigh 0 in the lane).
LaneLabels = int | tuple[int, int]


def lane_labels(label: LaneLabels | Sequence[int]) -> LaneLabels:
    """``label`` as a class code or a pair of two distinct codes."""
    if isinstance(label, (tuple, list, np.ndarray)):
        i, j = (int(c) for c in label)
        if i == j:
            raise ValueError(f"a pair of classes needs two codes, got ({i}, {j})")
        return (i, j)
    return int(label)


def _signs(chunk: Chunk, label: LaneLabels) -> np.ndarray:
    """Labels of a chunk as float32 +1 (class ``label``, or a pair's first) / -1."""
    positive = label[0] if isinstance(label, tuple) else label
    return np.where(np.asarray(chunk.y) == positive, 1.0, -1.0).astype(np.float32)


def pair_votes_decision(F: np.ndarray, first: np.ndarray, second: np.ndarray,
                        n_classes: int, proba: np.ndarray | None = None) -> np.ndarray:
    """Class codes of most votes of one-against-one models, ties to the larger ``proba``.

    Model ``t`` votes ``first[t]`` where its log-odds ``F[:, t] > 0``, else ``second[t]``;
    ``proba`` (n, n_classes), in ``[0, 1]``, breaks ties (none: the lowest code).
    """
    winner = np.where(F > 0, first[None, :], second[None, :])
    votes = (winner[:, :, None] == np.arange(n_classes)[None, None, :]).sum(axis=1)
    score = votes.astype(np.float64)
    if proba is not None:
        score = score + 0.5 * proba
    return np.argmax(score, axis=1)


def _lane_weights(chunk: Chunk, label: LaneLabels, w: np.ndarray) -> np.ndarray:
    """``w`` for a lane: as it is one against the rest, 0 outside the pair's two classes
    one against one (a new array then)."""
    if not isinstance(label, tuple):
        return w
    y = np.asarray(chunk.y)
    return np.where((y == label[0]) | (y == label[1]), w, 0.0).astype(w.dtype, copy=False)


def _weights(chunk: Chunk, holdout: Holdout | None = None) -> np.ndarray:
    """The chunk's sample weights as float32, 0 for the rows ``holdout`` sets aside."""
    if chunk.weight is None:
        w = np.ones(chunk.n_rows, dtype=np.float32)
    else:
        w = np.array(chunk.weight, dtype=np.float32)
    if holdout is not None:
        w[holdout.mask(chunk.rows)] = 0.0
    return w


def _log_gates(X: np.ndarray, p: MixtureParams, tau: float,
               bias_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Log gates (eq. 7) over the active components and the expert scores of a chunk."""
    prod = chunk_products(X, p.V, p.W, bias_scale)
    log_g = gate_log_chunk(prod.x_sq, prod.XV, center_sq_norms(p.V), p.xi > 0, float(tau))
    return log_g, prod.scores


def _posteriors(X: np.ndarray, y: np.ndarray, p: MixtureParams, tau: float,
                bias_scale: float, squared: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """E-step (eq. 11) of a chunk: posteriors and the rows' log-likelihoods."""
    log_g, scores = _log_gates(X, p, tau, bias_scale)
    return posteriors_chunk(log_g, scores, y, p.xi, squared)


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
class TemperaturePass:
    """Reduction pass: the temperature scaling statistics (:class:`~streamlearn.solvers.
    calibration.TemperatureSums`) of a fitted mixture's log-odds on some rows.

    Parameters
    ----------
    xi, centers, coef : ndarray
        The fitted binary mixtures (``MixtureFit.xi``, ``.centers``, ``.coef``).
    tau, bias_scale : float
    standardiser : Standardiser
        The standardisation the mixtures apply to dense rows (the identity for sparse ones).
    holdout : Holdout, optional
        Score the rows it holds out; None scores every row.
    n_classes : int
    loss : {"hinge", "squared_hinge"}
        The experts' loss.
    pairs : sequence of (int, int), optional
        One against one: each model's pair of classes. The state is then one two-class
        :class:`~streamlearn.solvers.calibration.TemperatureSums` per pair, of the rows
        of its two classes (the logistic of ``s f`` for the pair's first class).
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, xi: np.ndarray, centers: np.ndarray, coef: np.ndarray, tau: float,
                 bias_scale: float, standardiser: Standardiser,
                 holdout: Holdout | None, n_classes: int, loss: str = "hinge",
                 pairs: Sequence[tuple[int, int]] | None = None) -> None:
        self.xi, self.centers, self.coef = xi, centers, coef
        self.squared = is_squared(loss)
        self.n_classes = int(n_classes)
        self.tau, self.bias_scale = float(tau), float(bias_scale)
        self.standardiser = standardiser
        self.holdout = holdout
        self.pairs = None if pairs is None else [lane_labels(p) for p in pairs]

    def start(self) -> TemperatureSums | list[TemperatureSums]:
        """Sums of no rows."""
        if self.pairs is not None:
            return [TemperatureSums(2) for _ in self.pairs]
        return TemperatureSums(self.n_classes)

    def step(self, state: TemperatureSums | list[TemperatureSums],
             chunk: Chunk) -> TemperatureSums | list[TemperatureSums]:
        """The sums with the chunk's selected rows added (in place)."""
        rows = held_out_rows(chunk, self.holdout)
        if rows is None:
            return state
        X, codes, weight = rows
        f = mixture_scores(X, self.xi, self.centers, self.coef, self.tau, self.bias_scale,
                           self.standardiser, self.squared)
        if self.pairs is None:
            assert isinstance(state, TemperatureSums)
            return state.add(f, codes, weight)
        assert isinstance(state, list)
        w = np.ones(len(codes)) if weight is None else np.asarray(weight, dtype=np.float64)
        for t, (i, j) in enumerate(self.pairs):
            inside = (codes == i) | (codes == j)
            state[t].add(f[inside, t], (codes[inside] == i).astype(np.int64), w[inside])
        return state

    def merge(self, a: TemperatureSums | list[TemperatureSums],
              b: TemperatureSums | list[TemperatureSums]
              ) -> TemperatureSums | list[TemperatureSums]:
        """The sums of both (a new state)."""
        if isinstance(a, list):
            assert isinstance(b, list)
            return [p.merge(q) for p, q in zip(a, b, strict=True)]
        assert isinstance(b, TemperatureSums)
        return a.merge(b)

    def finish(self, state: TemperatureSums | list[TemperatureSums]
               ) -> TemperatureSums | list[TemperatureSums]:
        """The sums."""
        return state


def mixture_scores(X: np.ndarray | SparseRows, xi: np.ndarray, centers: np.ndarray,
                   coef: np.ndarray, tau: float, bias_scale: float,
                   standardiser: Standardiser, squared: bool) -> np.ndarray:
    """Every binary mixture's log-odds at the rows ``X`` (dense rows standardised on the
    fly), shape ``(n, n_models)``."""
    f = np.empty((X.shape[0], xi.shape[0]))
    for j in range(xi.shape[0]):
        args = (centers[j], coef[j], xi[j], float(tau), float(bias_scale))
        f[:, j] = (mixture_log_odds(X, *args, squared) if isinstance(X, SparseRows)
                   else mixture_log_odds_chunk(X, *args, standardiser.shift,
                                               standardiser.scale, squared))
    return f


class HeldOutScoresPass:
    """Reduction pass: the log-odds of several fitted mixtures at the rows a holdout sets
    aside, with the rows' class codes, weights and global row ids (the held-out rows are a
    small share: they are kept, to score probabilities that do not come from sums, and
    the ids split them by a row hash whatever the chunking).

    Parameters
    ----------
    models : sequence of (xi, centers, coef, loss)
        The fitted binary mixtures of each model (``MixtureFit.xi``, ``.centers``,
        ``.coef``, ``.loss``).
    tau : float or sequence of float
        The gating scale of every model, or each model's own.
    bias_scale : float
    standardiser : Standardiser
    holdout : Holdout
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, models: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, str]],
                 tau: float | Sequence[float], bias_scale: float,
                 standardiser: Standardiser, holdout: Holdout) -> None:
        self.models = list(models)
        self.taus = lane_taus(tau, len(self.models))
        self.bias_scale = float(bias_scale)
        self.standardiser = standardiser
        self.holdout = holdout

    def start(self) -> tuple[list[list[np.ndarray]], list[np.ndarray], list[np.ndarray],
                             list[np.ndarray]]:
        """No rows."""
        return [[] for _ in self.models], [], [], []

    def step(self, state: tuple[list[list[np.ndarray]], list[np.ndarray], list[np.ndarray],
                                list[np.ndarray]],
             chunk: Chunk) -> tuple[list[list[np.ndarray]], list[np.ndarray],
                                    list[np.ndarray], list[np.ndarray]]:
        """Add the chunk's held-out rows (in place)."""
        keep = np.flatnonzero(self.holdout.chunk_mask(chunk))
        if keep.size == 0:
            return state
        X = take_rows(chunk.X, keep)
        codes = np.asarray(chunk.y)[keep]
        for scores, (xi, centers, coef, loss), tau in zip(state[0], self.models, self.taus,
                                                          strict=True):
            scores.append(mixture_scores(X, xi, centers, coef, tau, self.bias_scale,
                                         self.standardiser, is_squared(loss)))
        state[1].append(np.asarray(codes, dtype=np.int64))
        state[2].append(np.ones(len(codes)) if chunk.weight is None
                        else np.asarray(chunk.weight, dtype=np.float64)[keep])
        state[3].append(np.asarray(chunk.rows, dtype=np.int64)[keep])
        return state

    def merge(self, a: tuple[list[list[np.ndarray]], list[np.ndarray], list[np.ndarray],
                             list[np.ndarray]],
              b: tuple[list[list[np.ndarray]], list[np.ndarray], list[np.ndarray],
                       list[np.ndarray]]
              ) -> tuple[list[list[np.ndarray]], list[np.ndarray], list[np.ndarray],
                         list[np.ndarray]]:
        """The rows of both (a new state)."""
        return ([p + q for p, q in zip(a[0], b[0], strict=True)], a[1] + b[1], a[2] + b[2],
                a[3] + b[3])

    def finish(self, state: tuple[list[list[np.ndarray]], list[np.ndarray],
                                  list[np.ndarray], list[np.ndarray]]
               ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
        """Each model's log-odds ``(n, n_models)``, the codes, the weights and the row
        ids."""
        scores = [np.concatenate(s) if s else np.empty((0, m[0].shape[0]))
                  for s, m in zip(state[0], self.models, strict=True)]
        codes = np.concatenate(state[1]) if state[1] else np.empty(0, np.int64)
        weight = np.concatenate(state[2]) if state[2] else np.empty(0)
        rows = np.concatenate(state[3]) if state[3] else np.empty(0, np.int64)
        return scores, codes, weight, rows


@dataclass
class ClusterCounts:
    """Weighted class counts per k-means cluster and the spread of the rows around them.

    Attributes
    ----------
    counts : ndarray of shape (k, n_classes)
        Weight of the rows of each class code nearest to each centre.
    sq_dist : float
        Weighted sum of squared distances of the rows to their nearest centre.
    """

    counts: np.ndarray
    sq_dist: float = 0.0

    def binary(self, positive: LaneLabels) -> np.ndarray:
        """Counts of one class against the rest, or of a pair ``(i, j)``'s second class
        against its first, shape ``(k, 2)``: negative, positive."""
        if isinstance(positive, tuple):
            return self.counts[:, [positive[1], positive[0]]].copy()
        pos = self.counts[:, int(positive)]
        return np.column_stack([self.counts.sum(axis=1) - pos, pos])


class ClusterCountPass:
    """Reduction pass: :class:`ClusterCounts` of the k-means clusters.

    Parameters
    ----------
    centers : ndarray of shape (k, d)
    n_classes : int
        Class codes are ``0 .. n_classes - 1``.
    standardiser : Standardiser, optional
        Applied to every chunk's features first (none: the raw features).
    holdout : Holdout, optional
        Rows left out of the counts.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, centers: np.ndarray, n_classes: int,
                 standardiser: Standardiser | None = None,
                 holdout: Holdout | None = None) -> None:
        self.centers = np.ascontiguousarray(centers, dtype=np.float64)
        self.n_classes = int(n_classes)
        self.standardiser = standardiser
        self.holdout = holdout

    def start(self) -> ClusterCounts:
        """Zero counts."""
        return ClusterCounts(np.zeros((self.centers.shape[0], self.n_classes)))

    def step(self, state: ClusterCounts, chunk: Chunk) -> ClusterCounts:
        """Add the chunk's rows (in place)."""
        labels, sq = assign_rows(chunk_features(chunk, self.standardiser), self.centers)
        w = _weights(chunk, self.holdout).astype(np.float64)
        np.add.at(state.counts, (labels, np.asarray(chunk.y, dtype=np.int64)), w)
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
    W : ndarray of shape (k, d + 1), or a list of them (one per lane) for the initial
        experts
    rows : int
        Rows processed (the weight of this state when partial states are merged).
    share : float
        The factor the changes of the dual variables were written with (a part of a pass
        split into lanes, see :func:`_split_lane`; 1 for a whole pass or merged parts).
    dual_change : ndarray of shape (k,), or a list of them (one per lane), optional
        The change of ``sum_i alpha_ij`` over the pass, per expert (as written).
    """

    W: np.ndarray
    rows: int = 0
    share: float = 1.0
    dual_change: np.ndarray | list[np.ndarray] | None = None


@dataclass
class FoldedDuals:
    """The experts' dual variables of earlier training, folded into the experts.

    ``partial_fit`` cannot revisit the rows of earlier calls, so their dual variables are
    one block per expert: ``w_j = s_j u_j + sum_i alpha_ij y_i z_i`` over the call's rows,
    ``u_j`` the expert at the call's start. Scaling every folded dual variable by
    ``s_j`` in ``[0, 1]`` keeps it in its box, so ``s_j`` is one more coordinate of the
    dual of ``1/2 ||w_j||^2 + C sum s_i q_ij hinge`` over every row read so far, of
    linear term ``s_j A_j`` (:func:`fold_step`): the earlier rows' pull on an expert can
    shrink when the call's rows disagree with it. With the squared hinge the folded block
    also has a diagonal term ``s_j^2 sum_i alpha_ij^2 / (4 C s_i q_ij)``, which the stored
    sums do not hold: the step leaves it out, and keeps ``s_j <= 1`` as for the hinge.

    Attributes
    ----------
    U : ndarray of shape (k, d + 1)
        The experts at the start of the call.
    sums : ndarray of shape (k,)
        ``A_j``, the sum of the folded dual variables of each expert.
    scale : ndarray of shape (k,)
        ``s_j``, starting at 1.
    """

    U: np.ndarray
    sums: np.ndarray
    scale: np.ndarray

    def copy(self) -> FoldedDuals:
        """A copy whose scales can change apart from this one's."""
        return FoldedDuals(self.U, self.sums, self.scale.copy())


def fold_step(fold: FoldedDuals, W: np.ndarray, active: np.ndarray) -> None:
    """Exact coordinate ascent on each active expert's folded scale ``s_j`` (in place).

    The dual ``s A - 1/2 ||s u + v||^2`` (``v`` the call's part of ``w``) has the
    derivative ``A - u . w`` and curvature ``-||u||^2`` in ``s``, so the step is
    ``s <- clip(s + (A - u . w) / ||u||^2, 0, 1)``, and ``w`` moves by the change times
    ``u``.
    """
    sq = np.einsum("ij,ij->i", fold.U, fold.U)
    live = active & (sq > 0.0)
    if not live.any():
        return
    gain = fold.sums - np.einsum("ij,ij->i", fold.U, W)
    target = np.clip(fold.scale + gain / np.where(live, sq, 1.0), 0.0, 1.0)
    change = np.where(live, target - fold.scale, 0.0)
    W += change[:, None] * fold.U
    fold.scale += change


def _mix(a: np.ndarray, b: np.ndarray, na: float, nb: float) -> np.ndarray:
    total = na + nb
    return a.copy() if total == 0 else (na * a + nb * b) / total


P = TypeVar("P")


def _split_lane(pass_: P, share: float) -> P:
    """A copy of a pass of the experts' dual coordinate descent for one of several lanes
    of an engine (its ``lane(share)``), holding ``share`` of the rows.

    Such a lane writes its changes of the dual variables times ``share``
    (:func:`~streamlearn.solvers.dcd.scale_dual_change`) and the pass's merge adds the
    lanes' changes of the experts times their shares (:func:`_changes`), so the merged
    experts stay the image ``sum_i y_i alpha_ij z_i`` of the stored dual variables, as in
    one process (averaging the experts while every lane keeps its full change of the
    dual variables breaks that, and with it the duality gap of the linear lanes).
    """
    if not 0.0 < share <= 1.0:
        raise ValueError(f"a lane's share must lie in (0, 1], got {share}")
    lane = copy.copy(pass_)
    lane.share = float(share)  # type: ignore[attr-defined]
    return lane


def _changes(initial: np.ndarray, a: np.ndarray, b: np.ndarray, share_a: float,
             share_b: float) -> np.ndarray:
    """``initial`` plus two parts' changes of it times their shares."""
    return initial + share_a * (a - initial) + share_b * (b - initial)


def _read_before(alpha: np.ndarray, share: float) -> np.ndarray | None:
    """A copy of the dual variables a lane of share below 1 scales its change from."""
    return alpha.copy() if share != 1.0 else None


def _write_share(alpha: np.ndarray, before: np.ndarray | None, share: float) -> None:
    if before is not None:
        scale_dual_change(alpha, before, share)


def _chunk_seed(seed: int, chunk: Chunk) -> int:
    return (int(seed) * 0x9E3779B1 + int(chunk.start)) % 2**63


def lane_taus(tau: float | Sequence[float], n_lanes: int) -> list[float]:
    """Each of ``n_lanes`` lanes' gating scale: ``tau`` for every lane, or its own."""
    if np.ndim(tau) == 0:
        return [float(tau)] * int(n_lanes)  # type: ignore[arg-type]
    taus = [float(t) for t in tau]  # type: ignore[union-attr]
    if len(taus) != int(n_lanes):
        raise ValueError(f"{len(taus)} gating scales for {n_lanes} lanes")
    return taus


def _hold_lanes(pass_: object, alphas: Sequence[ExampleState]) -> int:
    """Set one ``ExampleState`` attribute per lane (``alpha_0``, ...); the lane count."""
    for m, alpha in enumerate(alphas):
        setattr(pass_, f"alpha_{m}", alpha)
    return len(alphas)


def _lanes_in_threads(n_lanes: int, n_rows: int, lane: Callable[[int], None]) -> None:
    """``lane(m)`` for every lane of a chunk of ``n_rows`` rows, shared between the chunk
    threads (:mod:`~streamlearn.solvers.threads`) with BLAS held to one thread.

    Every n-th lane goes to one thread, so that lanes of unequal cost (the mixtures, then
    the guard's linear lanes) spread evenly. A lane touches only its own state, dual
    variables and seeds, so the result is the same in any number of threads.
    """
    n_parts = (len(thread_bounds(n_lanes, 1)) - 1
               if n_rows >= MIN_ROWS_FOR_LANE_THREADS else 1)

    def part(first: int, _: int) -> None:
        for m in range(first, n_lanes, n_parts):
            lane(m)

    if n_parts == 1:
        part(0, 1)
        return
    with single_threaded_blas():  # the lanes' matrix products run in their own threads
        in_threads(part, np.arange(n_parts + 1))


def _lane_alpha(pass_: object, m: int) -> ExampleState:
    state: ExampleState = getattr(pass_, f"alpha_{m}")
    return state


class InitialExpertPass:
    """Sequential pass: dual coordinate descent of one linear SVM per k-means cluster.

    Each row belongs to its nearest centre only (a one-hot posterior), so expert ``j`` is the
    linear SVM of cluster ``j``'s rows. One lane per binary mixture.

    Parameters
    ----------
    centers : sequence of ndarray of shape (k_m, d)
        Each lane's centres (lanes may share one array: its rows are assigned once).
    trained : sequence of ndarray of shape (k_m,), bool
        Each lane's clusters with both classes (the others keep their constant expert).
    positives : sequence of LaneLabels
        Each lane's labels (:data:`LaneLabels`).
    C, bias_scale : float
    alphas : sequence of ExampleState
        Each lane's dual variables ``(n_rows, k_m)``.
    seeds : sequence of int
        Each lane's seed of the coordinate orders.
    initial : sequence of ndarray of shape (k_m, d + 1)
    standardiser : Standardiser, optional
        Applied to every chunk's features first (none: the raw features).
    holdout : Holdout, optional
        Rows left out of training.
    loss : {"hinge", "squared_hinge"}
        The experts' loss.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, centers: Sequence[np.ndarray], trained: Sequence[np.ndarray],
                 positives: Sequence[LaneLabels], C: float, bias_scale: float,
                 alphas: Sequence[ExampleState], seeds: Sequence[int],
                 initial: Sequence[np.ndarray], standardiser: Standardiser | None = None,
                 holdout: Holdout | None = None, loss: str = "hinge") -> None:
        self.standardiser = standardiser
        self.squared = is_squared(loss)
        self.centers = [np.ascontiguousarray(c, dtype=np.float64) for c in centers]
        self.trained = [np.asarray(t, dtype=bool) for t in trained]
        self.positives = [lane_labels(p) for p in positives]
        self.C = float(C)
        self.bias_scale = float(bias_scale)
        self.n_lanes = _hold_lanes(self, alphas)
        self.seeds = [int(s) for s in seeds]
        self.initial = [np.asarray(W, dtype=np.float64) for W in initial]
        self.holdout = holdout
        self.share = 1.0

    def lane(self, share: float) -> InitialExpertPass:
        """The pass of one of several lanes holding ``share`` of the rows
        (:func:`_split_lane`)."""
        return _split_lane(self, share)

    def start(self) -> ExpertState:
        """A copy of the initial experts."""
        return ExpertState([W.copy() for W in self.initial], share=self.share,
                           dual_change=[np.zeros(W.shape[0]) for W in self.initial])

    def step(self, state: ExpertState, chunk: Chunk) -> ExpertState:
        """Coordinate descent sweeps over the chunk, lane after lane (in place)."""
        X = chunk_features(chunk, self.standardiser)
        w = _weights(chunk, self.holdout)
        diagonal = expert_diagonal(X, self.bias_scale)
        assigned: dict[int, np.ndarray] = {}  # each array of centres assigned once
        for centers in self.centers:
            if id(centers) not in assigned:
                labels, _ = assign_rows(X, centers)
                Q = np.zeros((chunk.n_rows, centers.shape[0]))
                Q[np.arange(chunk.n_rows), labels] = 1.0
                assigned[id(centers)] = Q

        def lane(m: int) -> None:
            lane_alpha = _lane_alpha(self, m)
            alpha = lane_alpha.get(chunk)
            before = _read_before(alpha, self.share)
            start = alpha.sum(axis=0, dtype=np.float64)
            label = self.positives[m]
            expert_dcd_chunk(X, _signs(chunk, label), _lane_weights(chunk, label, w),
                             assigned[id(self.centers[m])], self.C, alpha, state.W[m],
                             self.trained[m], self.bias_scale, EXPERT_SWEEPS,
                             _chunk_seed(self.seeds[m], chunk), diagonal, self.squared)
            _write_share(alpha, before, self.share)
            lane_alpha.put(chunk, alpha)
            state.dual_change[m] += alpha.sum(axis=0, dtype=np.float64) - start

        _lanes_in_threads(self.n_lanes, chunk.n_rows, lane)
        state.rows += chunk.n_rows
        return state

    def merge(self, a: ExpertState, b: ExpertState) -> ExpertState:
        """The initial experts plus both states' changes times their shares (a new
        state)."""
        return ExpertState([_changes(W, p, q, a.share, b.share)
                            for W, p, q in zip(self.initial, a.W, b.W, strict=True)],
                           a.rows + b.rows,
                           dual_change=[p + q for p, q in zip(a.dual_change, b.dual_change,
                                                              strict=True)])

    def finish(self, state: ExpertState) -> ExpertState:
        """The experts after the pass (a lane's own: its change times its share)."""
        if state.share != 1.0:
            state.W = [_changes(W, p, W, state.share, 0.0)
                       for W, p in zip(self.initial, state.W, strict=True)]
            state.share = 1.0
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
    """Reduction pass: E-step statistics (eq. 11) and the log-likelihood, one lane per
    binary mixture.

    Parameters
    ----------
    params : sequence of MixtureParams
        Each lane's parameters.
    positives : sequence of LaneLabels
        Each lane's labels (:data:`LaneLabels`).
    tau : float or sequence of float
        The gating scale of every lane, or each lane's own.
    bias_scale : float
    standardiser : Standardiser, optional
        Applied to every chunk's features first (none: the raw features).
    holdout : Holdout, optional
        Rows left out of the statistics.
    loss : {"hinge", "squared_hinge"}
        The experts' loss.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, params: Sequence[MixtureParams], positives: Sequence[LaneLabels],
                 tau: float | Sequence[float],
                 bias_scale: float, standardiser: Standardiser | None = None,
                 holdout: Holdout | None = None, loss: str = "hinge") -> None:
        self.standardiser = standardiser
        self.squared = is_squared(loss)
        self.holdout = holdout
        self.params = list(params)
        self.positives = [lane_labels(p) for p in positives]
        if len(self.params) != len(self.positives):
            raise ValueError(f"{len(self.params)} parameter sets for "
                             f"{len(self.positives)} positive classes")
        self.taus = lane_taus(tau, len(self.params))
        self.bias_scale = float(bias_scale)

    def start(self) -> list[EStepStats]:
        """Zero statistics per lane."""
        return [EStepStats(np.zeros(len(p.xi))) for p in self.params]

    def step(self, state: list[EStepStats], chunk: Chunk) -> list[EStepStats]:
        """Add the chunk's posteriors (in place)."""
        w = _weights(chunk, self.holdout).astype(np.float64)
        X = chunk_features(chunk, self.standardiser)
        for lane, params, positive, tau in zip(state, self.params, self.positives, self.taus,
                                               strict=True):
            Q, loglik = _posteriors(X, _signs(chunk, positive), params, tau,
                                    self.bias_scale, self.squared)
            wl = _lane_weights(chunk, positive, w)
            lane.mass += wl @ Q
            lane.loglik += float(wl @ loglik)
            lane.weight += float(wl.sum())
        return state

    def merge(self, a: list[EStepStats], b: list[EStepStats]) -> list[EStepStats]:
        """Sum of two states (a new one)."""
        return [EStepStats(p.mass + q.mass, p.loglik + q.loglik, p.weight + q.weight)
                for p, q in zip(a, b, strict=True)]

    def finish(self, state: list[EStepStats]) -> list[EStepStats]:
        """The statistics of every lane."""
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
    positive : LaneLabels
    tau, bias_scale : float
    standardiser : Standardiser, optional
        Applied to every chunk's features first (none: the raw features).
    loss : {"hinge", "squared_hinge"}
        The experts' loss.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, posterior_params: MixtureParams, V: np.ndarray, positive: LaneLabels,
                 tau: float, bias_scale: float,
                 standardiser: Standardiser | None = None, loss: str = "hinge") -> None:
        self.standardiser = standardiser
        self.squared = is_squared(loss)
        self.posterior_params = posterior_params
        self.V = np.asarray(V, dtype=np.float64)
        self.positive = lane_labels(positive)
        self.tau = float(tau)
        self.bias_scale = float(bias_scale)

    def start(self) -> GatingValue:
        """Zero value and gradient."""
        return GatingValue(0.0, np.zeros_like(self.V))

    def step(self, state: GatingValue, chunk: Chunk) -> GatingValue:
        """Add the chunk's part (in place)."""
        X = chunk_features(chunk, self.standardiser)
        Q, _ = _posteriors(X, _signs(chunk, self.positive), self.posterior_params,
                           self.tau, self.bias_scale, self.squared)
        value, grad = gating_objective_chunk(X, _lane_weights(chunk, self.positive,
                                                              _weights(chunk)), Q, self.V,
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


def _linear_scores(X: np.ndarray | SparseRows, W: np.ndarray,
                   bias_scale: float) -> np.ndarray:
    """Scores ``w . [x, bias_scale]`` of one expert ``W`` (shape ``(1, d + 1)``), float64."""
    d = X.shape[1]
    w = np.asarray(W[0, :d], dtype=np.float32)
    product = X.to_scipy() @ w if isinstance(X, SparseRows) else X @ w
    return np.asarray(product, dtype=np.float64) + float(W[0, d]) * float(bias_scale)


@dataclass
class LinearSweepState:
    """State of a :class:`LinearSweepPass`: each lane's linear SVM and the sums that give
    its duality gap.

    Attributes
    ----------
    W : list of ndarray of shape (1, d + 1)
        Each lane's expert, updated chunk by chunk.
    loss : ndarray of shape (n_lanes,)
        ``sum_i s_i loss_i`` of each lane's expert as it was at the start of the pass.
    alpha_sum : ndarray of shape (n_lanes,)
        ``sum_i alpha_i`` of each lane's dual variables after the pass (each row's as its
        chunk left it).
    quad : ndarray of shape (n_lanes,)
        ``sum_i alpha_i^2 / (4 C s_i)`` of the same dual variables, the dual's diagonal
        term of the squared hinge (0 for the hinge).
    rows : int
        Rows processed (the weight of this state when partial states are merged).
    share : float
        The factor the changes of the dual variables were written with (see
        :class:`ExpertState`).
    """

    W: list[np.ndarray]
    loss: np.ndarray
    alpha_sum: np.ndarray
    rows: int = 0
    share: float = 1.0
    quad: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.quad is None:
            self.quad = np.zeros_like(self.alpha_sum)


class LinearSweepPass:
    """Sequential pass: dual coordinate descent of one-component lanes (linear SVMs) over
    every row, which also sums what their duality gap needs.

    Each chunk is first scored by the experts the pass started from (their primal
    losses), then swept. The dual variables' sum after the pass gives the dual objective
    of its end point, so the losses of pass ``e`` and the dual sum of pass ``e - 1`` belong
    to the same iterate (the experts are the image of the dual variables,
    ``w = sum_i alpha_i y_i [z_i, b]``), with no extra read.

    Parameters
    ----------
    positives : sequence of LaneLabels
        Each lane's labels (:data:`LaneLabels`).
    C, bias_scale : float
    alphas : sequence of ExampleState
        Each lane's dual variables ``(n_rows, 1)``.
    seeds : sequence of int
        Each lane's seed of the coordinate orders.
    initial : sequence of ndarray of shape (1, d + 1)
        Each lane's expert at the start of the pass (not modified).
    standardiser : Standardiser, optional
        Applied to every chunk's features first (none: the raw features).
    loss : {"hinge", "squared_hinge"}
        The experts' loss.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, positives: Sequence[LaneLabels], C: float, bias_scale: float,
                 alphas: Sequence[ExampleState], seeds: Sequence[int],
                 initial: Sequence[np.ndarray],
                 standardiser: Standardiser | None = None, loss: str = "hinge") -> None:
        self.standardiser = standardiser
        self.squared = is_squared(loss)
        self.positives = [lane_labels(p) for p in positives]
        self.C = float(C)
        self.bias_scale = float(bias_scale)
        self.n_lanes = _hold_lanes(self, alphas)
        self.seeds = [int(s) for s in seeds]
        self.initial = [np.asarray(W, dtype=np.float64) for W in initial]
        if not len(self.positives) == self.n_lanes == len(self.seeds) == len(self.initial):
            raise ValueError("one positive class, ExampleState, seed and expert per lane")
        if any(W.shape[0] != 1 for W in self.initial):
            raise ValueError("a linear sweep trains one-component lanes only")
        self.share = 1.0

    def lane(self, share: float) -> LinearSweepPass:
        """The pass of one of several lanes holding ``share`` of the rows
        (:func:`_split_lane`)."""
        return _split_lane(self, share)

    def start(self) -> LinearSweepState:
        """A copy of the initial experts, zero sums."""
        return LinearSweepState([W.copy() for W in self.initial], np.zeros(self.n_lanes),
                                np.zeros(self.n_lanes), share=self.share)

    def step(self, state: LinearSweepState, chunk: Chunk) -> LinearSweepState:
        """Losses of the initial experts on the chunk, then coordinate descent sweeps over
        it, lane after lane (in place)."""
        X, w32 = chunk_features(chunk, self.standardiser), _weights(chunk)
        diagonal = expert_diagonal(X, self.bias_scale)
        one = np.ones((chunk.n_rows, 1))
        every = np.ones(1, dtype=bool)

        def lane(m: int) -> None:
            y = _signs(chunk, self.positives[m])
            w = _lane_weights(chunk, self.positives[m], w32)
            w64 = w.astype(np.float64)
            scores = _linear_scores(X, self.initial[m], self.bias_scale)
            state.loss[m] += float(w64 @ expert_losses(y * scores, self.squared))
            lane_alpha = _lane_alpha(self, m)
            alpha = lane_alpha.get(chunk)
            before = _read_before(alpha, self.share)
            expert_dcd_chunk(X, y, w, one, self.C, alpha, state.W[m], every, self.bias_scale,
                             EXPERT_SWEEPS, _chunk_seed(self.seeds[m], chunk), diagonal,
                             self.squared)
            _write_share(alpha, before, self.share)
            lane_alpha.put(chunk, alpha)
            state.alpha_sum[m] += float(alpha.sum(dtype=np.float64))
            if self.squared:
                a = alpha[:, 0].astype(np.float64)
                c = self.C * w64
                state.quad[m] += float(np.sum(np.where(c > 0.0, a * a, 0.0)
                                              / np.where(c > 0.0, 4.0 * c, 1.0)))

        _lanes_in_threads(self.n_lanes, chunk.n_rows, lane)
        state.rows += chunk.n_rows
        return state

    def merge(self, a: LinearSweepState, b: LinearSweepState) -> LinearSweepState:
        """The initial experts plus both states' changes times their shares, the sums
        added (a new state)."""
        return LinearSweepState([_changes(W, p, q, a.share, b.share)
                                 for W, p, q in zip(self.initial, a.W, b.W, strict=True)],
                                a.loss + b.loss, a.alpha_sum + b.alpha_sum, a.rows + b.rows,
                                quad=a.quad + b.quad)

    def finish(self, state: LinearSweepState) -> LinearSweepState:
        """The experts after the pass and its sums (a lane's own: its change times its
        share)."""
        if state.share != 1.0:
            state.W = [_changes(W, p, W, state.share, 0.0)
                       for W, p in zip(self.initial, state.W, strict=True)]
            state.share = 1.0
        return state


class ExpertPass:
    """Sequential pass: weighted dual coordinate descent of every active expert (eq. 15).

    Row ``i`` weighs ``s_i q_ij`` in expert ``j``'s losses, ``q`` from
    ``posterior_params``; the dual variables are warm-started from earlier passes.

    Parameters
    ----------
    posterior_params : MixtureParams
    positive : LaneLabels
    C, tau, bias_scale : float
    alpha : ExampleState
        Dual variables ``(n_rows, k)``.
    seed : int
    initial : ndarray of shape (k, d + 1)
        Experts at the start of the pass, equal to the dual variables' image.
    standardiser : Standardiser, optional
        Applied to every chunk's features first (none: the raw features).
    loss : {"hinge", "squared_hinge"}
        The experts' loss.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, posterior_params: MixtureParams, positive: LaneLabels, C: float,
                 tau: float,
                 bias_scale: float, alpha: ExampleState, seed: int, initial: np.ndarray,
                 standardiser: Standardiser | None = None, loss: str = "hinge") -> None:
        self.standardiser = standardiser
        self.squared = is_squared(loss)
        self.posterior_params = posterior_params
        self.positive = lane_labels(positive)
        self.C = float(C)
        self.tau = float(tau)
        self.bias_scale = float(bias_scale)
        self.alpha = alpha
        self.seed = int(seed)
        self.initial = initial
        self.share = 1.0

    def lane(self, share: float) -> ExpertPass:
        """The pass of one of several lanes holding ``share`` of the rows
        (:func:`_split_lane`)."""
        return _split_lane(self, share)

    def start(self) -> ExpertState:
        """A copy of the initial experts."""
        return ExpertState(self.initial.copy(), share=self.share,
                           dual_change=np.zeros(self.initial.shape[0]))

    def step(self, state: ExpertState, chunk: Chunk) -> ExpertState:
        """Coordinate descent sweeps over the chunk (in place)."""
        X = chunk_features(chunk, self.standardiser)
        y = _signs(chunk, self.positive)
        Q, _ = _posteriors(X, y, self.posterior_params, self.tau, self.bias_scale,
                           self.squared)
        alpha = self.alpha.get(chunk)
        before = _read_before(alpha, self.share)
        start = alpha.sum(axis=0, dtype=np.float64)
        expert_dcd_chunk(X, y, _lane_weights(chunk, self.positive, _weights(chunk)), Q,
                         self.C, alpha, state.W,
                         self.posterior_params.xi > 0, self.bias_scale, EXPERT_SWEEPS,
                         _chunk_seed(self.seed, chunk), squared=self.squared)
        _write_share(alpha, before, self.share)
        self.alpha.put(chunk, alpha)
        state.dual_change += alpha.sum(axis=0, dtype=np.float64) - start
        state.rows += chunk.n_rows
        return state

    def merge(self, a: ExpertState, b: ExpertState) -> ExpertState:
        """The initial experts plus both states' changes times their shares (a new
        state)."""
        return ExpertState(_changes(self.initial, a.W, b.W, a.share, b.share),
                           a.rows + b.rows, dual_change=a.dual_change + b.dual_change)

    def finish(self, state: ExpertState) -> ExpertState:
        """The experts after the pass (a lane's own: its change times its share)."""
        if state.share != 1.0:
            state.W = _changes(self.initial, state.W, self.initial, state.share, 0.0)
            state.share = 1.0
        return state


class ExpertObjectivePass:
    """Reduction pass: each expert's weighted losses (eq. 15) for two sets of experts.

    Parameters
    ----------
    posterior_params : MixtureParams
        Parameters whose posteriors weigh the rows.
    W_a, W_b : ndarray of shape (k, d + 1)
    positive : LaneLabels
    tau, bias_scale : float
    standardiser : Standardiser, optional
        Applied to every chunk's features first (none: the raw features).
    loss : {"hinge", "squared_hinge"}
        The experts' loss.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, posterior_params: MixtureParams, W_a: np.ndarray, W_b: np.ndarray,
                 positive: LaneLabels, tau: float, bias_scale: float,
                 standardiser: Standardiser | None = None, loss: str = "hinge") -> None:
        self.standardiser = standardiser
        self.squared = is_squared(loss)
        self.posterior_params = posterior_params
        self.W_a = W_a
        self.W_b = W_b
        self.positive = lane_labels(positive)
        self.tau = float(tau)
        self.bias_scale = float(bias_scale)

    def start(self) -> np.ndarray:
        """Zero losses, shape ``(2, k)``."""
        return np.zeros((2, self.W_a.shape[0]))

    def step(self, state: np.ndarray, chunk: Chunk) -> np.ndarray:
        """Add the chunk's weighted losses (in place)."""
        X = chunk_features(chunk, self.standardiser)
        y = _signs(chunk, self.positive)
        Q, _ = _posteriors(X, y, self.posterior_params, self.tau, self.bias_scale,
                           self.squared)
        wq = _lane_weights(chunk, self.positive, _weights(chunk)).astype(
            np.float64)[:, None] * Q
        for row, W in enumerate((self.W_a, self.W_b)):
            scores = chunk_products(X, self.posterior_params.V, W, self.bias_scale).scores
            state[row] += (wq * expert_losses(y[:, None] * scores, self.squared)).sum(axis=0)
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
    dual_sum : ndarray of shape (k,), optional
        ``sum_i alpha_ij`` of each expert's dual variables, kept up to date by the pass.
    fold : FoldedDuals, optional
        The dual variables of earlier training folded into the experts (``partial_fit``):
        each chunk's sweeps then also step their scales and go on to a tolerance.
    """

    params: MixtureParams
    resp: np.ndarray
    t: int
    loglik: float = 0.0
    weight: float = 0.0
    rows: int = 0
    dual_sum: np.ndarray | None = None
    fold: FoldedDuals | None = None

    def carried(self) -> StochasticState:
        """A copy to start a pass from, with empty pass statistics."""
        return StochasticState(self.params.copy(), self.resp.copy(), self.t,
                               dual_sum=None if self.dual_sum is None else self.dual_sum.copy(),
                               fold=None if self.fold is None else self.fold.copy())


@dataclass
class EpochState:
    """State of a stochastic EM pass: every lane's, and the validation tallies.

    Attributes
    ----------
    lanes : list of StochasticState
    errors : ndarray of shape (n_groups,)
        Weight of the held-out rows each group of lanes (one classifier) misclassified,
        each row scored with the parameters met when its chunk was read.
    held_weight : float
        Weight of the held-out rows scored.
    losses : ndarray of shape (n_groups,)
        Weighted logistic loss of the held-out rows, ``log(1 + exp(-y f))`` of each lane's
        log-odds ``f`` and the row's label ``y = +/-1`` for the lane's positive class,
        summed over the group's lanes (the log loss of ``predict_proba`` for one lane).
    share : float
        The factor the changes of the experts' dual variables were written with (see
        :class:`ExpertState`).
    scaled_losses : ndarray of shape (n_groups, S)
        ``losses`` with every log-odds multiplied by each scale ``s`` of
        :data:`~streamlearn.solvers.calibration.TEMPERATURE_SCALES` (``S`` of them): the
        minimum over ``s`` is the held-out loss at its best temperature, which EM cannot
        lower by only sharpening or flattening its log-odds.
    proba_losses : ndarray of shape (n_groups, S)
        Weighted log-loss of the held-out rows under each group's class probabilities at
        each scale ``s``: ``softmax(s f)`` over the lanes' log-odds one against the rest
        (the logistic of ``s f`` for one lane, ``scaled_losses``), and for pairs of
        classes their logistic losses summed (``scaled_losses``).
    row_moments : ndarray of shape (1 + n_groups * S, 1 + n_groups * S)
        ``sum_i w_i^2 v_i v_i^T`` over the held-out rows, ``v_i`` a 1 followed by the row's
        loss in ``proba_losses`` of every group at every scale (group-major): the
        standard error of two groups' paired differences at any two scales follows
        (:meth:`paired_standard_error`).
    """

    lanes: list[StochasticState]
    errors: np.ndarray
    held_weight: float = 0.0
    losses: np.ndarray | None = None
    share: float = 1.0
    scaled_losses: np.ndarray | None = None
    row_moments: np.ndarray | None = None
    proba_losses: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.losses is None:
            self.losses = np.zeros_like(self.errors)
        if self.scaled_losses is None:
            self.scaled_losses = np.zeros((len(self.errors), len(TEMPERATURE_SCALES)))
        if self.proba_losses is None:
            self.proba_losses = np.zeros((len(self.errors), len(TEMPERATURE_SCALES)))
        if self.row_moments is None:
            size = 1 + len(self.errors) * len(TEMPERATURE_SCALES)
            self.row_moments = np.zeros((size, size))

    def paired_standard_error(self, a: int, s: int, b: int, t: int) -> float:
        """``sqrt(sum_i w_i^2 (d_i - d)^2) / sum_i w_i`` of the held-out rows' paired
        differences ``d_i = l_i(a, s) - l_i(b, t)``, ``l_i(g, s)`` the row's loss of group
        ``g`` at the scale of index ``s`` (in ``proba_losses``) and ``d`` their weighted
        mean (the standard error of the difference of the two weighted mean losses)."""
        S = len(TEMPERATURE_SCALES)
        c = np.zeros(self.row_moments.shape[0])
        c[1 + a * S + s] += 1.0
        c[1 + b * S + t] -= 1.0
        total = max(self.held_weight, 1e-300)
        mean = (self.proba_losses[a, s] - self.proba_losses[b, t]) / total
        c[0] = -mean  # w_i (d_i - d) = w_i c . v_i
        return float(np.sqrt(max(float(c @ self.row_moments @ c), 0.0))) / total


@dataclass
class LaneRows:
    """The rows of a chunk one lane trains on: those of positive weight (one against one,
    of the pair's two classes), with their features, signs, weights and expert diagonal;
    ``positions`` in the chunk (None: every row)."""

    X: np.ndarray | SparseRows
    y: np.ndarray
    w: np.ndarray
    diagonal: np.ndarray
    positions: np.ndarray | None


class TrainedRows:
    """A chunk's :class:`LaneRows` per lane, each row set cut from the chunk once.

    Rows of weight zero (held out, zero sample weight, one against one outside the pair)
    change no statistic, centre or expert of a lane: leaving them out of its products and
    sweeps gives the same sums. A pair's lane of ``k`` classes then costs about ``2 / k``
    of the chunk's rows instead of all of them.
    """

    def __init__(self, X: np.ndarray | SparseRows, w: np.ndarray, chunk: Chunk,
                 bias_scale: float) -> None:
        self.X, self.w, self.chunk, self.bias_scale = X, w, chunk, float(bias_scale)
        self._lock = threading.Lock()
        self._cut: dict[Any, LaneRows] = {}

    def of(self, label: LaneLabels) -> LaneRows:
        """The rows a lane of labels ``label`` trains on."""
        key = label if isinstance(label, tuple) else None
        with self._lock:
            if key not in self._cut:
                self._cut[key] = self._rows(label)
            rows = self._cut[key]
        if key is None:  # one against the rest: the shared rows, this lane's signs
            return replace(rows, y=_signs_at(self.chunk, label, rows.positions))
        return rows

    def _rows(self, label: LaneLabels) -> LaneRows:
        w = _lane_weights(self.chunk, label, self.w)
        keep = np.flatnonzero(w > 0)
        if keep.size == w.size:
            return LaneRows(self.X, _signs(self.chunk, label), w,
                            expert_diagonal(self.X, self.bias_scale), None)
        X = take_rows(self.X, keep)
        return LaneRows(X, _signs_at(self.chunk, label, keep), w[keep],
                        expert_diagonal(X, self.bias_scale), keep)


def _signs_at(chunk: Chunk, label: LaneLabels, positions: np.ndarray | None) -> np.ndarray:
    y = _signs(chunk, label)
    return y if positions is None else y[positions]


class StochasticEpochPass:
    """Sequential pass: one epoch of stochastic EM, one chunk at a time, one lane per
    binary mixture.

    Parameters
    ----------
    positives : sequence of LaneLabels
        Each lane's labels (:data:`LaneLabels`).
    C : float
    tau : float or sequence of float
        The gating scale of every lane, or each lane's own.
    nu, bias_scale : float
    total_weight : float or sequence of float
        ``sum_i s_i`` over the training rows (turns mean posteriors into eq. 20's counts):
        one for every lane, or each lane's own (a pair's rows one against one).
    alphas : sequence of ExampleState
        Each lane's dual variables of the experts ``(n_rows, k_m)``.
    seeds : sequence of int
        Each lane's seed of the coordinate orders.
    initial : sequence of StochasticState
        Each lane's state at the start of the pass (not modified).
    standardiser : Standardiser, optional
        Applied to every chunk's features first (none: the raw features).
    holdout : Holdout, optional
        Rows left out of training.
    groups : sequence of sequence of int, optional
        Lanes that make one classifier (one lane: the sign of its log-odds; several: the
        positive class of the lane with the largest log-odds, one against the rest; pairs
        of classes: the class of most votes, :func:`pair_votes_decision`), each scored on
        the held-out rows of every chunk before the chunk trains the lanes (a pair's
        logistic loss over the rows of its two classes).
    n_classes : int
        Classes of the data (the votes of pairs' groups count them).
    loss : {"hinge", "squared_hinge"}
        The experts' loss.

    Notes
    -----
    Engines that split the pass average the partial parameters weighted by rows processed
    (a component pruned in either part stays pruned) and add up the validation tallies;
    the experts are the initial ones plus the lanes' changes times their shares, the
    factors their changes of the dual variables were written with (:func:`_split_lane`).
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, positives: Sequence[LaneLabels], C: float,
                 tau: float | Sequence[float], nu: float,
                 bias_scale: float, total_weight: float | Sequence[float],
                 alphas: Sequence[ExampleState],
                 seeds: Sequence[int], initial: Sequence[StochasticState],
                 standardiser: Standardiser | None = None, holdout: Holdout | None = None,
                 groups: Sequence[Sequence[int]] | None = None, loss: str = "hinge",
                 n_classes: int = 2) -> None:
        self.standardiser = standardiser
        self.n_classes = int(n_classes)
        self.squared = is_squared(loss)
        self.positives = [lane_labels(p) for p in positives]
        self.C = float(C)
        self.nu = float(nu)
        self.bias_scale = float(bias_scale)
        self.n_lanes = _hold_lanes(self, alphas)
        self.taus = lane_taus(tau, self.n_lanes)
        self.total_weight = ([float(t) for t in total_weight]
                             if isinstance(total_weight, (list, tuple, np.ndarray))
                             else [float(total_weight)] * self.n_lanes)
        self.seeds = [int(s) for s in seeds]
        self.initial = list(initial)
        if not len(self.positives) == self.n_lanes == len(self.seeds) == len(self.initial):
            raise ValueError("one positive class, ExampleState, seed and initial state "
                             "per lane")
        self.holdout = holdout
        self.groups = [[int(m) for m in g] for g in (groups or [])]
        self.share = 1.0

    def lane(self, share: float) -> StochasticEpochPass:
        """The pass of one of several lanes holding ``share`` of the rows
        (:func:`_split_lane`)."""
        return _split_lane(self, share)

    def start(self) -> EpochState:
        """A copy of the initial states with empty pass statistics."""
        return EpochState([s.carried() for s in self.initial], np.zeros(len(self.groups)),
                          share=self.share)

    def step(self, state: EpochState, chunk: Chunk) -> EpochState:
        """Score the held-out rows, then per lane: E-step on the chunk and stochastic
        updates of xi, centres and experts."""
        X, w = chunk_features(chunk, self.standardiser), _weights(chunk, self.holdout)
        held = np.flatnonzero(self.holdout.mask(chunk.rows)) \
            if self.holdout is not None and self.groups else np.empty(0, np.int64)
        Xh = take_rows(X, held) if held.size else None
        trained = TrainedRows(X, w, chunk, self.bias_scale)
        log_odds: list[np.ndarray | None] = [None] * self.n_lanes
        validated = {m for lanes in self.groups for m in lanes}

        def lane(m: int) -> None:
            if Xh is not None and m in validated:  # held-out rows, the lane as found
                p = state.lanes[m].params
                log_odds[m] = mixture_log_odds(Xh, p.V, p.W, p.xi, self.taus[m],
                                               self.bias_scale, self.squared)
            self._step_lane(m, state.lanes[m], trained.of(self.positives[m]), chunk)

        _lanes_in_threads(self.n_lanes, chunk.n_rows, lane)
        if Xh is not None:
            self._validate(state, log_odds, chunk, held)
        return state

    def _validate(self, state: EpochState, log_odds: list[np.ndarray | None], chunk: Chunk,
                  held: np.ndarray) -> None:
        """Add the held-out rows' errors and logistic losses of each group's classifier,
        from its lanes' ``log_odds`` (scored in the lanes' threads before they step)."""
        y = np.asarray(chunk.y)[held]
        w = (np.ones(held.size) if chunk.weight is None
             else np.asarray(chunk.weight, dtype=np.float64)[held])
        rows: list[np.ndarray] = [np.empty((0, held.size))] * len(self.groups)
        for g, lanes in enumerate(self.groups):
            F = np.column_stack([log_odds[m] for m in lanes])
            labels = [self.positives[m] for m in lanes]
            if isinstance(labels[0], tuple):  # one against one: the pairs' votes
                first = np.asarray([a for a, _ in labels])
                second = np.asarray([b for _, b in labels])
                wrong = pair_votes_decision(F, first, second, self.n_classes) != y
                signs = np.where(y[:, None] == first[None, :], 1.0, -1.0)
                inside = (y[:, None] == first[None, :]) | (y[:, None] == second[None, :])
            else:
                codes = np.asarray(labels)
                if len(lanes) == 1:
                    wrong = (F[:, 0] > 0) != (y == codes[0])
                else:
                    wrong = codes[np.argmax(F, axis=1)] != y
                signs = np.where(y[:, None] == codes[None, :], 1.0, -1.0)
                inside = np.ones_like(signs, dtype=bool)
            state.errors[g] += float(w @ wrong)
            margins = np.where(inside, -signs * F, -np.inf)  # log(1 + e^-inf) = 0
            state.losses[g] += float(w @ np.logaddexp(0.0, margins).sum(axis=1))
            scaled = np.logaddexp(0.0, TEMPERATURE_SCALES[:, None, None] * margins[None])
            rows[g] = scaled.sum(axis=2)
            state.scaled_losses[g] += rows[g] @ w
            if not isinstance(labels[0], tuple) and len(lanes) > 1:  # softmax(s f)
                sF = TEMPERATURE_SCALES[:, None, None] * F[None]
                hit = (y[:, None] == codes[None, :])[None]
                rows[g] = logsumexp(sF, axis=2) - np.where(hit, sF, 0.0).sum(axis=2)
            state.proba_losses[g] += rows[g] @ w
        v = np.concatenate([np.ones((1, held.size)), *rows]) * w  # (1 + G S, rows)
        state.row_moments += v @ v.T
        state.held_weight += float(w.sum())

    def _step_lane(self, m: int, state: StochasticState, rows: LaneRows,
                   chunk: Chunk) -> None:
        X, y, w, diagonal = rows.X, rows.y, rows.w, rows.diagonal
        w64 = w.astype(np.float64)
        p = state.params
        tau = self.taus[m]
        log_g, scores = _log_gates(X, p, tau, self.bias_scale)
        Q, loglik = posteriors_chunk(log_g, scores, y, p.xi, self.squared)
        state.loglik += float(w64 @ loglik)
        state.weight += float(w64.sum())
        rho = (state.t + STEP_OFFSET) ** -STEP_DECAY
        state.t += 1
        chunk_weight = float(w64.sum())
        if chunk_weight > 0.0:
            state.resp = (1.0 - rho) * state.resp + rho * (w64 @ Q) / chunk_weight
        active = p.xi > 0
        p.xi = mixing_weights(self.total_weight[m] * state.resp, self.nu, active)
        if not np.array_equal(p.xi > 0, active):  # a component vanished: posteriors without it
            log_g, scores = _log_gates(X, p, tau, self.bias_scale)
            Q, _ = posteriors_chunk(log_g, scores, y, p.xi, self.squared)
            active = p.xi > 0
        if p.V.shape[0] > 1 and X.shape[0] > 0:
            # centres: one step on the chunk's part of eq. 13 (from the E-step's gates),
            # scaled by each centre's mass (one component's gate is 1 everywhere: its
            # centre has no gradient)
            _, grad = gating_objective_from_gates(X, w, Q, log_g, p.V, active, tau)
            mass = np.maximum(w64 @ Q, w64 @ np.exp(log_g))
            scale = rho / (2.0 * tau * np.maximum(mass, 1e-12))
            p.V -= scale[:, None] * grad
        # experts: weighted coordinate descent sweeps over the chunk
        lane_alpha = _lane_alpha(self, m)
        alpha = lane_alpha.get(chunk)
        before = _read_before(alpha, self.share)
        start = alpha.sum(axis=0, dtype=np.float64)
        # the dual variables of the rows the lane trains on (the others stay at zero)
        duals = alpha if rows.positions is None else alpha[rows.positions]
        if state.fold is None:
            expert_dcd_chunk(X, y, w, Q, self.C, duals, p.W, active, self.bias_scale,
                             EXPERT_SWEEPS, _chunk_seed(self.seeds[m], chunk), diagonal,
                             self.squared)
        else:  # the folded block's scales between rounds of sweeps, to a tolerance
            for r in range(FOLDED_MAX_ROUNDS):
                fold_step(state.fold, p.W, active)
                top = expert_dcd_chunk(X, y, w, Q, self.C, duals, p.W, active,
                                       self.bias_scale, EXPERT_SWEEPS,
                                       _chunk_seed(self.seeds[m] + 7 * r, chunk), diagonal,
                                       self.squared)
                if top <= FOLDED_PG_TOL:
                    break
            fold_step(state.fold, p.W, active)
        if rows.positions is not None:
            alpha[rows.positions] = duals
        _write_share(alpha, before, self.share)
        lane_alpha.put(chunk, alpha)
        if state.dual_sum is not None:
            state.dual_sum += alpha.sum(axis=0, dtype=np.float64) - start
        state.rows += chunk.n_rows

    def merge(self, a: EpochState, b: EpochState) -> EpochState:
        """Parameter mixing of two partial states, lane by lane, and the sum of their
        validation tallies (a new state)."""
        return EpochState([self._merge_lane(p, q, initial, a.share, b.share)
                           for p, q, initial in zip(a.lanes, b.lanes, self.initial,
                                                    strict=True)],
                          a.errors + b.errors, a.held_weight + b.held_weight,
                          a.losses + b.losses, scaled_losses=a.scaled_losses + b.scaled_losses,
                          row_moments=a.row_moments + b.row_moments,
                          proba_losses=a.proba_losses + b.proba_losses)

    @staticmethod
    def _merge_lane(a: StochasticState, b: StochasticState, initial: StochasticState,
                    share_a: float, share_b: float) -> StochasticState:
        na, nb = a.rows, b.rows
        xi = _mix(a.params.xi, b.params.xi, na, nb)
        xi[(a.params.xi == 0) | (b.params.xi == 0)] = 0.0
        xi = xi / xi.sum() if xi.sum() > 0 else a.params.xi.copy()
        params = MixtureParams(xi, _mix(a.params.V, b.params.V, na, nb),
                               _changes(initial.params.W, a.params.W, b.params.W, share_a,
                                        share_b))
        dual_sum = fold = None
        if initial.dual_sum is not None:  # written as changed, shares included
            dual_sum = a.dual_sum + b.dual_sum - initial.dual_sum
        if initial.fold is not None:  # the scales' changes move w: the same shares
            fold = FoldedDuals(initial.fold.U, initial.fold.sums,
                               _changes(initial.fold.scale, a.fold.scale, b.fold.scale,
                                        share_a, share_b))
        return StochasticState(params, _mix(a.resp, b.resp, na, nb),
                               max(a.t, b.t) + min(a.t, b.t) - initial.t,
                               a.loglik + b.loglik, a.weight + b.weight, na + nb,
                               dual_sum, fold)

    def finish(self, state: EpochState) -> EpochState:
        """Every lane's state after the epoch and the validation tallies (the experts of
        an engine's lane: their change times its share)."""
        if state.share != 1.0:
            for s, initial in zip(state.lanes, self.initial, strict=True):
                W = initial.params.W
                s.params = MixtureParams(s.params.xi, s.params.V,
                                         _changes(W, s.params.W, W, state.share, 0.0))
                if s.fold is not None:
                    scale = initial.fold.scale
                    s.fold.scale = _changes(scale, s.fold.scale, scale, state.share, 0.0)
            state.share = 1.0
        return state
