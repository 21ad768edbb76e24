"""Passes of the additive-kernel SVM (``AdditiveSVC``): summary, PEGASOS and dual coordinate
descent epochs, calibration, and the rows and binary models they work on.

Every pass follows the engine's ``Pass`` protocol (``start``, ``step``, ``merge``,
``finish``); states are small dataclasses. The one-vs-rest kernels they call embed each row
on the fly (:mod:`streamlearn.solvers.pegasos`, :mod:`streamlearn.solvers.dcd`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from streamlearn.data import Chunk
from streamlearn.data.example_state import ExampleState
from streamlearn.data.sparse_rows import take_rows
from streamlearn.engine import DescribePass, Description
from streamlearn.features import FeatureMap
from streamlearn.solvers.calibration import (
    ScoreHistogram,
    TemperatureSums,
    best_temperature,
    class_probabilities,
    sigmoid_proba,
)
from streamlearn.solvers.dcd import (
    SQUARED_HINGE,
    dcd_ovr_chunk,
    embedding_sum,
    scale_dual_change,
)
from streamlearn.solvers.embedding import Embedding, decision_ovr_chunk
from streamlearn.solvers.holdout import Holdout
from streamlearn.solvers.ovr import REST
from streamlearn.solvers.pegasos import pegasos_ovr_chunk

#: Dual coordinate descent sweeps over a chunk per visit.
DCD_INNER_SWEEPS = 1


# -- rows used for training and calibration -------------------------------------------------
@dataclass(frozen=True)
class TrainingRows:
    """How a chunk becomes the arrays a training kernel takes.

    Attributes
    ----------
    emb : Embedding
        What the kernel embeds on the fly (the identity over materialised columns when
        ``feature_map`` is set).
    feature_map : FeatureMap or None
        Set to materialise each chunk's embedding with ``transform`` first (``online=False``).
    holdout : Holdout or None
        Rows left out of training (kept for calibration).
    """

    emb: Embedding
    feature_map: FeatureMap | None
    holdout: Holdout | None

    def select(self, chunk: Chunk) -> tuple[np.ndarray | None, np.ndarray, np.ndarray,
                                            np.ndarray]:
        """Training rows of a chunk: its rows of positive weight not held out.

        Returns
        -------
        keep : ndarray of int64 or None
            Positions of the training rows in the chunk (None: all rows).
        X : ndarray, float32
            Their features, embedded when ``feature_map`` is set.
        codes : ndarray of int32
        weight : ndarray of float32
        """
        X, codes = chunk.X, chunk.y
        weight = chunk.weight
        # a row of weight 0 is no row: no step (PEGASOS would shrink the models at it), no
        # place in a visiting order
        left_out = (np.zeros(chunk.n_rows, dtype=bool) if weight is None
                    else ~(np.asarray(weight) > 0))
        if self.holdout is not None:
            left_out |= self.holdout.mask(chunk.rows)
        keep = None
        if left_out.any():
            keep = np.flatnonzero(~left_out)
            X, codes = take_rows(X, keep), codes[keep]
            weight = weight[keep] if weight is not None else None
        weight = (np.ones(X.shape[0], dtype=np.float32) if weight is None
                  else np.ascontiguousarray(weight, dtype=np.float32))
        if self.feature_map is not None:
            X = self.feature_map.transform(X)
        return keep, X, np.ascontiguousarray(codes, dtype=np.int32), weight


# -- passes -------------------------------------------------------------------------------
@dataclass
class Summary:
    """Result of :class:`SummaryPass`.

    Attributes
    ----------
    description : Description
        Feature statistics and class counts over the rows of positive weight (all rows
        without weights).
    n_train, n_holdout : int
        Rows of positive weight used for training and held out for calibration.
    train_weight : float
        Total sample weight of the training rows (``n_train`` without weights).
    """

    description: Description
    n_train: int
    n_holdout: int
    train_weight: float


@dataclass
class SummaryState:
    """State of :class:`SummaryPass`.

    Attributes
    ----------
    describe : Any
        State of the :class:`~streamlearn.engine.DescribePass`.
    rows, held : int
        Rows of positive weight seen, and among them rows held out for calibration.
    train_weight : float
        Total sample weight of the rows not held out.
    """

    describe: Any
    rows: int = 0
    held: int = 0
    train_weight: float = 0.0


class SummaryPass:
    """Reduction pass: :class:`~streamlearn.engine.DescribePass` plus held-out row counts.

    Rows of sample weight 0 are no rows: they are left out of the description and of
    every count.

    Parameters
    ----------
    feature_names : sequence of str
    n_classes : int
    holdout : Holdout or None
    seed : int
        Seed of the describe pass's row sample.
    sparse : bool
        The chunks hold CSR rows.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, feature_names: Sequence[str], n_classes: int, holdout: Holdout | None,
                 seed: int = 0, sparse: bool = False) -> None:
        self.describe = DescribePass(feature_names, n_classes=n_classes, seed=seed,
                                     sparse=sparse, drop_zero_weight=True)
        self.holdout = holdout

    def start(self) -> SummaryState:
        """Empty state."""
        return SummaryState(self.describe.start())

    def step(self, state: SummaryState, chunk: Chunk) -> SummaryState:
        """Fold one chunk into ``state``."""
        state.describe = self.describe.step(state.describe, chunk)
        counted = (np.ones(chunk.n_rows, dtype=bool) if chunk.weight is None
                   else np.asarray(chunk.weight) > 0)
        held = (np.zeros(chunk.n_rows, dtype=bool) if self.holdout is None
                else self.holdout.mask(chunk.rows))
        train = counted & ~held
        state.rows += int(counted.sum())
        state.held += int(np.count_nonzero(counted & held))
        state.train_weight += (float(train.sum()) if chunk.weight is None
                               else float(np.sum(chunk.weight[train], dtype=np.float64)))
        return state

    def merge(self, a: SummaryState, b: SummaryState) -> SummaryState:
        """Combine two states (a new state)."""
        return SummaryState(self.describe.merge(a.describe, b.describe), a.rows + b.rows,
                            a.held + b.held, a.train_weight + b.train_weight)

    def finish(self, state: SummaryState) -> Summary:
        """The :class:`Summary`."""
        return Summary(self.describe.finish(state.describe), state.rows - state.held,
                       state.held, state.train_weight)


@dataclass
class PegasosState:
    """Models, averaged models and step counter carried through a PEGASOS epoch.

    Attributes
    ----------
    W, AVG : ndarray of shape (m, n_dims + 1), float64
        Last iterates and their running means, in the kernel's space.
    t : int
        Steps done.
    rows : int
        Rows processed in this pass (the weight of this state when states are merged).
    monitor_loss, monitor_weight : ndarray of shape (m,), float64, or None
        With a monitored model (:class:`PegasosEpochPass`'s ``monitor``): per binary model,
        the weighted sum of its hinge losses over the monitored rows of this pass and the
        sum of their weights. None when nothing is monitored.
    monitor_loss_sq, monitor_weight_sq : ndarray of shape (m,), float64, or None
        The same sums of the weighted squared losses and of the squared weights (the
        sampling error of the mean loss).
    monitor_scores : ScoreHistogram or None
        With a monitored model and held-out rows: the binned scores of the held-out rows
        under it, the calibration set of that model (what :class:`CalibrationPass` would
        collect for it).
    """

    W: np.ndarray
    AVG: np.ndarray
    t: int
    rows: int = 0
    monitor_loss: np.ndarray | None = None
    monitor_weight: np.ndarray | None = None
    monitor_scores: ScoreHistogram | None = None
    monitor_loss_sq: np.ndarray | None = None
    monitor_weight_sq: np.ndarray | None = None

    def copy(self) -> PegasosState:
        """An independent copy."""
        scores = None if self.monitor_scores is None else self.monitor_scores.merge(
            ScoreHistogram(self.monitor_scores.n_models, self.monitor_scores.n_bins,
                           self.monitor_scores.limit))
        return PegasosState(self.W.copy(), self.AVG.copy(), self.t, self.rows,
                            _copy(self.monitor_loss), _copy(self.monitor_weight), scores,
                            _copy(self.monitor_loss_sq), _copy(self.monitor_weight_sq))


def _copy(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None else a.copy()


def _add(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    # sum of two optional statistics (None: not collected)
    if a is None or b is None:
        return _copy(a if b is None else b)
    return a + b


def _mix(a: np.ndarray, b: np.ndarray, na: int, nb: int) -> np.ndarray:
    # weighted average of two parameter arrays (parameter mixing)
    total = na + nb
    if total == 0:
        return a.copy()
    return (na * a + nb * b) / total


class PegasosEpochPass:
    """Sequential pass: one PEGASOS epoch of every one-vs-rest model.

    Parameters
    ----------
    rows : TrainingRows
    pairs : ModelPairs
        Positive and negative class codes of each binary model.
    lam : float
    bias_scale : float
    average_start : int
        First step whose iterate enters the averaged model.
    initial : PegasosState
        State at the start of the epoch (not modified).
    monitor : ndarray of shape (m, n_dims + 1), optional
        A frozen model (in the kernel's space, like ``initial.W``) whose hinge losses the
        pass adds up while it reads the chunks, into ``monitor_loss`` and
        ``monitor_weight``: on the held-out rows of ``rows.holdout`` when there is one (rows
        the steps never see), else on the training rows. The fit driver passes the model as
        it was at the end of the previous epoch, so the epoch's pass also scores it without
        another read of the data.
    held_out : bool
        Whether a monitored model is scored on the held-out rows where there are some
        (False: on the training rows, and no ``monitor_scores``).

    Notes
    -----
    Engines that split the pass merge partial states by averaging the models weighted by the
    rows each processed (parameter mixing); the step counter advances by the rows of both,
    and the monitored losses and weights add up.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, rows: TrainingRows, pairs: ModelPairs, lam: float, bias_scale: float,
                 average_start: int, initial: PegasosState,
                 monitor: np.ndarray | None = None, held_out: bool = True) -> None:
        self.rows = rows
        self.pairs = pairs
        self.lam = float(lam)
        self.bias_scale = float(bias_scale)
        self.average_start = int(average_start)
        self.initial = initial
        self.monitor = None if monitor is None else np.ascontiguousarray(monitor,
                                                                         dtype=np.float64)
        self.held_out = bool(held_out) and rows.holdout is not None

    def start(self) -> PegasosState:
        """A copy of the initial state (empty monitored losses)."""
        state = self.initial.copy()
        state.rows = 0
        state.monitor_scores = None
        if self.monitor is None:
            state.monitor_loss = state.monitor_weight = None
            state.monitor_loss_sq = state.monitor_weight_sq = None
        else:
            m = self.monitor.shape[0]
            state.monitor_loss, state.monitor_weight = np.zeros(m), np.zeros(m)
            state.monitor_loss_sq, state.monitor_weight_sq = np.zeros(m), np.zeros(m)
            if self.held_out:
                state.monitor_scores = ScoreHistogram(m)
        return state

    def _monitor(self, state: PegasosState, chunk: Chunk, X: np.ndarray, codes: np.ndarray,
                 weight: np.ndarray) -> None:
        # hinge losses of the frozen model on the chunk's monitored rows (held out, else X)
        assert self.monitor is not None
        assert state.monitor_loss is not None and state.monitor_weight is not None
        if self.held_out:
            assert self.rows.holdout is not None
            held = np.flatnonzero(self.rows.holdout.mask(chunk.rows))
            if held.size == 0:
                return
            X = take_rows(chunk.X, held)
            if self.rows.feature_map is not None:
                X = self.rows.feature_map.transform(X)
            codes = np.asarray(chunk.y)[held]
            weight = (np.ones(held.size) if chunk.weight is None
                      else np.asarray(chunk.weight, dtype=np.float64)[held])
        if X.shape[0] == 0:
            return
        scores = decision_ovr_chunk(X, self.monitor, self.bias_scale, *self.rows.emb)
        loss, total, loss_sq, total_sq = hinge_sums(scores, codes, self.pairs, weight)
        state.monitor_loss += loss
        state.monitor_weight += total
        assert state.monitor_loss_sq is not None and state.monitor_weight_sq is not None
        state.monitor_loss_sq += loss_sq
        state.monitor_weight_sq += total_sq
        if state.monitor_scores is not None:  # the held-out rows: the calibration set
            positive, member = self.pairs.labels(codes)
            state.monitor_scores.add(scores, positive,
                                     member * np.asarray(weight, dtype=np.float64)[:, None])

    def step(self, state: PegasosState, chunk: Chunk) -> PegasosState:
        """PEGASOS steps over the chunk's training rows (in place)."""
        _, X, codes, weight = self.rows.select(chunk)
        if self.monitor is not None:
            self._monitor(state, chunk, X, codes, weight)
        state.t = pegasos_ovr_chunk(X, codes, *self.pairs, weight, self.lam, self.bias_scale,
                                    state.W, state.AVG, state.t, self.average_start,
                                    *self.rows.emb)
        state.rows += X.shape[0]
        return state

    def merge(self, a: PegasosState, b: PegasosState) -> PegasosState:
        """Parameter mixing of two partial states (a new state)."""
        return PegasosState(_mix(a.W, b.W, a.rows, b.rows), _mix(a.AVG, b.AVG, a.rows, b.rows),
                            max(a.t, b.t) + min(a.rows, b.rows), a.rows + b.rows,
                            _add(a.monitor_loss, b.monitor_loss),
                            _add(a.monitor_weight, b.monitor_weight),
                            None if a.monitor_scores is None or b.monitor_scores is None
                            else a.monitor_scores.merge(b.monitor_scores),
                            _add(a.monitor_loss_sq, b.monitor_loss_sq),
                            _add(a.monitor_weight_sq, b.monitor_weight_sq))

    def finish(self, state: PegasosState) -> PegasosState:
        """The state after the epoch."""
        return state


@dataclass
class DcdState:
    """Models and projected-gradient statistics of a dual coordinate descent epoch.

    Attributes
    ----------
    W : ndarray of shape (m, n_dims + 1), float64
    pg_max, pg_min : ndarray of shape (m,)
        Range of the projected gradients met in the epoch, per model.
    alpha_sum, dual_quad : ndarray of shape (m,)
        Sums over the rows of the dual terms (see :func:`~streamlearn.solvers.dcd.dcd_chunk`).
    rows : int
        Rows processed in this pass.
    monitor_loss : ndarray of shape (m,) or None
        With a monitored model: ``sum_i C_i loss`` of that model over the training rows of
        each binary model (its primal loss, see :func:`~streamlearn.solvers.dcd.dcd_ovr_chunk`).
    row_sum : ndarray of shape (n_dims + 1,) or None
        With ``sum_rows``: ``sum_i weight_i z_i`` over the training rows, ``w_d`` form
        (:func:`~streamlearn.solvers.dcd.embedding_sum`).
    weight_sum : float
        With ``sum_rows``: ``sum_i weight_i``.
    share : float
        The factor the changes of the dual variables were written with: a lane's share of
        the pass (:meth:`DcdEpochPass.lane`), 1 for a whole pass or merged lanes. ``W`` is
        the lane's own iterate; its change ``W - initial`` enters a merge times ``share``.
    """

    W: np.ndarray
    pg_max: np.ndarray
    pg_min: np.ndarray
    alpha_sum: np.ndarray
    dual_quad: np.ndarray
    rows: int = 0
    monitor_loss: np.ndarray | None = None
    row_sum: np.ndarray | None = None
    weight_sum: float = 0.0
    share: float = 1.0


class DcdEpochPass:
    """Sequential pass: one sweep of dual coordinate descent for every one-vs-rest model.

    Parameters
    ----------
    rows : TrainingRows
    pairs : ModelPairs
    C : float
        Penalty; row ``i`` gets ``C * weight_i``.
    loss : int
        :data:`~streamlearn.solvers.dcd.HINGE` or :data:`~streamlearn.solvers.dcd.SQUARED_HINGE`.
    bias_scale : float
    alpha : ExampleState
        Dual variables, ``(n_rows, m)``; read and written chunk by chunk.
    seed : int
        Seeds the visiting order inside each chunk together with the chunk's first row.
    initial : ndarray of shape (m, n_dims + 1)
        Models at the start of the epoch (not modified).
    monitor : ndarray of shape (m, n_dims + 1), optional
        A frozen model whose primal loss over the training rows the pass sums as it reads
        them (``DcdState.monitor_loss``), for the duality-gap stopping rule.
    centre : ndarray of shape (n_dims + 1,), optional
        Solve for the rows centred on it (``dcd_centre`` of the driver; the models stay
        models of the rows themselves).
    sum_rows : bool
        Also add up the weighted embedded training rows (``DcdState.row_sum``), the
        centre of the epochs after this one.

    Notes
    -----
    An engine that splits the pass into lanes runs :meth:`lane` in each: a lane solves for
    its own rows' dual variables from the broadcast model, and writes their changes scaled
    by its share of the rows, ``alpha_0 + share (alpha_lane - alpha_0)``; :meth:`merge`
    adds the lanes' model changes with the same factors. This is the averaging of CoCoA
    (Jaggi et al., "Communication-efficient distributed dual coordinate ascent", NIPS
    2014): the shares add up to 1, so the merged dual variables are a convex combination
    of the lanes' points, each a dual ascent from ``alpha_0``, and the dual does not
    decrease; and the merged model is ``w(alpha)`` of the stored dual variables (up to
    their float32 rounding), so the next epoch starts from a consistent point and the
    duality gap of the merged model and variables is a true bound. Averaging the models
    while keeping every lane's full change of the dual variables (parameter mixing) gives
    neither: ``||w||^2`` shrinks, the dual is overstated and the gap understated.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, rows: TrainingRows, pairs: ModelPairs, C: float, loss: int,
                 bias_scale: float, alpha: ExampleState, seed: int, initial: np.ndarray,
                 monitor: np.ndarray | None = None, centre: np.ndarray | None = None,
                 sum_rows: bool = False) -> None:
        self.rows = rows
        self.pairs = pairs
        self.C = float(C)
        self.loss = int(loss)
        self.bias_scale = float(bias_scale)
        self.alpha = alpha
        self.seed = int(seed)
        self.initial = initial
        self.monitor = monitor
        self.centre = centre
        self.sum_rows = bool(sum_rows)
        self.share = 1.0

    def lane(self, share: float) -> DcdEpochPass:
        """The pass one lane of a split pass runs.

        Parameters
        ----------
        share : float
            The lane's part of the pass's rows, in ``(0, 1]``; the lanes' shares add up
            to 1.

        Returns
        -------
        DcdEpochPass
            A copy that writes its rows' changes of the dual variables times ``share``
            (see the Notes of the class).
        """
        if not 0.0 < share <= 1.0:
            raise ValueError(f"a lane's share must lie in (0, 1], got {share}")
        lane = copy.copy(self)
        lane.share = float(share)
        return lane

    def start(self) -> DcdState:
        """A copy of the initial models, empty statistics."""
        m = self.initial.shape[0]
        return DcdState(self.initial.copy(), np.full(m, -np.inf), np.full(m, np.inf),
                        np.zeros(m), np.zeros(m), 0,
                        None if self.monitor is None else np.zeros(m),
                        np.zeros(self.initial.shape[1]) if self.sum_rows else None,
                        share=self.share)

    def step(self, state: DcdState, chunk: Chunk) -> DcdState:
        """Coordinate descent over the chunk's training rows (in place)."""
        keep, X, codes, weight = self.rows.select(chunk)
        alpha_all = self.alpha.get(chunk)
        alpha = alpha_all if keep is None else np.ascontiguousarray(alpha_all[keep])
        c = self.C * weight.astype(np.float64)
        seed = (self.seed * 0x9E3779B1 + int(chunk.start)) % 2**63
        before = alpha.copy() if self.share != 1.0 else None
        pg_max, pg_min, alpha_sum, dual_quad = dcd_ovr_chunk(
            X, codes, *self.pairs, c, alpha, state.W, self.loss, self.bias_scale,
            DCD_INNER_SWEEPS, seed, *self.rows.emb, self.monitor, state.monitor_loss,
            self.centre)
        if before is not None:  # a lane: its share of the change, and the sums of those
            alpha_sum, dual_quad = self._scaled(alpha, before, c)
        if keep is not None:
            alpha_all[keep] = alpha
        self.alpha.put(chunk, alpha_all)
        if state.row_sum is not None:
            embedding_sum(X, weight, *self.rows.emb, state.row_sum)
            state.weight_sum += float(weight.sum(dtype=np.float64))
        np.maximum(state.pg_max, pg_max, out=state.pg_max)
        np.minimum(state.pg_min, pg_min, out=state.pg_min)
        state.alpha_sum += alpha_sum
        state.dual_quad += dual_quad
        state.rows += X.shape[0]
        return state

    def _scaled(self, alpha: np.ndarray, before: np.ndarray,
                c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # the lane's share of the change (in place), and the kernel's dual sums of it
        scale_dual_change(alpha, before, self.share)
        a = alpha.astype(np.float64)
        dual_quad = np.zeros(a.shape[1])
        if self.loss == SQUARED_HINGE:
            on = c > 0.0
            dual_quad = (a[on] ** 2 / (4.0 * c[on, None])).sum(axis=0)
        return a.sum(axis=0), dual_quad

    def merge(self, a: DcdState, b: DcdState) -> DcdState:
        """The initial models plus both states' changes times their shares, statistics
        combined (a new state, of share 1)."""
        monitor_loss = (None if a.monitor_loss is None or b.monitor_loss is None
                        else a.monitor_loss + b.monitor_loss)
        row_sum = (None if a.row_sum is None or b.row_sum is None
                   else a.row_sum + b.row_sum)
        W = (self.initial + a.share * (a.W - self.initial)
             + b.share * (b.W - self.initial))
        return DcdState(W, np.maximum(a.pg_max, b.pg_max),
                        np.minimum(a.pg_min, b.pg_min), a.alpha_sum + b.alpha_sum,
                        a.dual_quad + b.dual_quad, a.rows + b.rows, monitor_loss,
                        row_sum, a.weight_sum + b.weight_sum)

    def finish(self, state: DcdState) -> DcdState:
        """The state after the epoch: a lane's own (a state of share ``s`` != 1, never
        merged) becomes the initial models plus ``s`` times its change."""
        if state.share != 1.0:
            state.W = self.initial + state.share * (state.W - self.initial)
            state.share = 1.0
        return state


class CalibrationPass:
    """Reduction pass: binned scores of the held-out rows under every binary model.

    Parameters
    ----------
    W : ndarray of shape (m, n_dims + 1)
        Models in ``w_d`` form.
    emb : Embedding
        On-the-fly embedding of the models.
    pairs : ModelPairs
    bias_scale : float
    holdout : Holdout or None
        The rows to bin; None bins every row.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, W: np.ndarray, emb: Embedding, pairs: ModelPairs, bias_scale: float,
                 holdout: Holdout | None) -> None:
        self.W = W
        self.emb = emb
        self.pairs = pairs
        self.bias_scale = float(bias_scale)
        self.holdout = holdout

    def start(self) -> ScoreHistogram:
        """Empty histogram."""
        return ScoreHistogram(self.W.shape[0])

    def step(self, state: ScoreHistogram, chunk: Chunk) -> ScoreHistogram:
        """Add the chunk's held-out rows (in place)."""
        held = (np.arange(chunk.n_rows) if self.holdout is None
                else np.flatnonzero(self.holdout.mask(chunk.rows)))
        if held.size == 0:
            return state
        X = chunk.X if self.holdout is None else take_rows(chunk.X, held)
        scores = decision_ovr_chunk(X, self.W, self.bias_scale, *self.emb)
        codes = np.asarray(chunk.y)[held]
        positive, member = self.pairs.labels(codes)
        weight = member if chunk.weight is None else member * chunk.weight[held][:, None]
        return state.add(scores, positive, weight)

    def merge(self, a: ScoreHistogram, b: ScoreHistogram) -> ScoreHistogram:
        """Combine two histograms (a new one)."""
        return a.merge(b)

    def finish(self, state: ScoreHistogram) -> ScoreHistogram:
        """The histogram."""
        return state


@dataclass
class ClassLoss:
    """State of :class:`ClassLogLossPass`: weighted log-loss sums, and for one-vs-rest
    models the temperature scaling statistics of the log-probabilities (None else)."""

    loss: float = 0.0
    weight: float = 0.0
    temperature: TemperatureSums | None = None

    @property
    def log_loss(self) -> float | None:
        """The weighted mean log-loss (None without held-out weight)."""
        return float(self.loss / self.weight) if self.weight > 0 else None

    def scale(self) -> float:
        """The temperature ``s`` of lowest held-out log-loss of ``p^s / sum p^s``, ``p``
        the class probabilities (1 without statistics)."""
        if self.temperature is None or not self.temperature.total_weight > 0:
            return 1.0
        return best_temperature(self.temperature.losses(smoothed=False))

    def tempered_log_loss(self) -> float | None:
        """The weighted mean log-loss of the probabilities ``p^s / sum p^s`` at the scale
        ``s`` of the grid (:data:`~streamlearn.solvers.calibration.TEMPERATURE_SCALES`,
        0.1 decade apart, ``s = 1`` among them) of lowest loss: what ``predict_proba``
        gives, whose :meth:`scale` refines that grid point between its neighbours (a
        second-order change of the loss). :attr:`log_loss` without statistics (one-vs-one
        and two classes, which have no temperature); None without held-out weight."""
        if self.temperature is None or not self.weight > 0:
            return self.log_loss
        if not self.temperature.total_weight > 0:
            return self.log_loss
        return float(np.min(self.temperature.losses(smoothed=False))
                     / self.temperature.total_weight)


class ClassLogLossPass:
    """Reduction pass: the log-loss of the held-out rows' class probabilities.

    The probabilities are those of ``predict_proba`` before its temperature: each binary
    model's Platt sigmoid, combined into classes by
    :func:`~streamlearn.solvers.calibration.class_probabilities`. For two classes this is
    the held-out log-loss of the one model; with more it judges the classifier as a whole,
    which a mean of its binary models' losses does not (their losses can fall while the
    class the models agree on is wrong more often). With one model per class against the
    rest it also gathers the temperature scaling statistics of the log-probabilities
    (:meth:`ClassLoss.scale`).

    Parameters
    ----------
    W : ndarray of shape (m, n_dims + 1)
        Models in ``w_d`` form.
    emb : Embedding
    pairs : ModelPairs
    n_classes : int
    bias_scale : float
    platt_a, platt_b : ndarray of shape (m,)
    holdout : Holdout
    """

    kind: Literal["reduction", "sequential"] = "reduction"
    #: Probabilities are clipped to ``[EPS, 1]`` (scikit-learn's ``log_loss`` clips too).
    EPS = 1e-15

    def __init__(self, W: np.ndarray, emb: Embedding, pairs: ModelPairs, n_classes: int,
                 bias_scale: float, platt_a: np.ndarray, platt_b: np.ndarray,
                 holdout: Holdout) -> None:
        self.W = W
        self.emb = emb
        self.pairs = pairs
        self.n_classes = int(n_classes)
        self.bias_scale = float(bias_scale)
        self.platt_a = np.asarray(platt_a, dtype=np.float64)
        self.platt_b = np.asarray(platt_b, dtype=np.float64)
        self.holdout = holdout

    def start(self) -> ClassLoss:
        """Sums of no rows."""
        one_vs_rest = self.n_classes > 2 and not self.pairs.one_vs_one
        return ClassLoss(temperature=TemperatureSums(self.n_classes) if one_vs_rest else None)

    def step(self, state: ClassLoss, chunk: Chunk) -> ClassLoss:
        """Add the chunk's held-out rows (in place)."""
        held = np.flatnonzero(self.holdout.mask(chunk.rows))
        if held.size == 0:
            return state
        scores = decision_ovr_chunk(take_rows(chunk.X, held), self.W, self.bias_scale,
                                    *self.emb)
        proba = class_probabilities(
            sigmoid_proba(scores, self.platt_a[None, :], self.platt_b[None, :]),
            self.pairs.positive, self.pairs.negative, self.n_classes)
        codes = np.asarray(chunk.y)[held]
        p_true = np.maximum(proba[np.arange(held.size), codes], self.EPS)
        weight = np.ones(held.size) if chunk.weight is None else chunk.weight[held]
        state.loss -= float(weight @ np.log(p_true))
        state.weight += float(weight.sum())
        if state.temperature is not None:
            state.temperature.add(np.log(np.maximum(proba, self.EPS)), codes, weight)
        return state

    def merge(self, a: ClassLoss, b: ClassLoss) -> ClassLoss:
        """Add two states (a new one)."""
        return ClassLoss(a.loss + b.loss, a.weight + b.weight,
                  TemperatureSums.merged(a.temperature, b.temperature))

    def finish(self, state: ClassLoss) -> ClassLoss:
        """The sums."""
        return state


class ModelPairs(NamedTuple):
    """Class codes of the binary models: model ``j`` is ``positive[j]`` against ``negative[j]``.

    ``negative[j]`` is :data:`~streamlearn.solvers.ovr.REST` for "every other class".
    """

    positive: np.ndarray
    negative: np.ndarray

    @classmethod
    def of(cls, n_classes: int, multiclass: str = "ovr") -> ModelPairs:
        """The models of a problem: one for two classes (``1`` against ``0``); else one per
        class against the rest (``"ovr"``), or one per pair ``a < b``, ``a`` against ``b``
        (``"ovo"``, in the order ``(0, 1), (0, 2), .., (k-2, k-1)``)."""
        if n_classes == 2:
            return cls(np.array([1], dtype=np.int32), np.array([REST], dtype=np.int32))
        if multiclass == "ovr":
            return cls(np.arange(n_classes, dtype=np.int32),
                       np.full(n_classes, REST, dtype=np.int32))
        a, b = np.triu_indices(n_classes, k=1)
        return cls(a.astype(np.int32), b.astype(np.int32))

    @property
    def one_vs_one(self) -> bool:
        """Whether the models are class pairs (no model against the rest)."""
        return bool(np.all(self.negative != REST))

    def labels(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Label of each row under each model.

        Returns
        -------
        positive : ndarray of shape (n, m), bool
        member : ndarray of shape (n, m), float64
            1 where the row belongs to the model's problem, else 0.
        """
        codes = np.asarray(codes)[:, None]
        positive = codes == self.positive[None, :]
        negative = (self.negative[None, :] == REST) | (codes == self.negative[None, :])
        return positive, (positive | negative).astype(np.float64)


def hinge_sums(scores: np.ndarray, codes: np.ndarray, pairs: ModelPairs,
               weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Weighted hinge losses of every binary model over some rows, and their weights.

    Parameters
    ----------
    scores : ndarray of shape (n, m)
        Scores ``w_j . Psi(x) + b_j`` of the rows under each model.
    codes : ndarray of shape (n,)
        Class codes.
    pairs : ModelPairs
    weight : ndarray of shape (n,)
        Sample weights.

    Returns
    -------
    loss : ndarray of shape (m,), float64
        ``sum_i s_i max(0, 1 - y_ij f_j(x_i))`` over the rows in model ``j``'s problem.
    total : ndarray of shape (m,), float64
        ``sum_i s_i`` over the same rows.
    loss_sq, total_sq : ndarray of shape (m,), float64
        ``sum_i s_i max(0, 1 - y_ij f_j(x_i))^2`` and ``sum_i s_i^2`` over the same rows.
    """
    positive, member = pairs.labels(codes)
    sign = np.where(positive, 1.0, -1.0)
    w = member * np.asarray(weight, dtype=np.float64)[:, None]
    hinge = np.maximum(0.0, 1.0 - sign * scores)
    return ((hinge * w).sum(axis=0), w.sum(axis=0), (hinge * hinge * w).sum(axis=0),
            (w * w).sum(axis=0))


def w_to_w_d(W: np.ndarray, emb: Embedding) -> np.ndarray:
    """Models ``w`` of the materialised embedding in ``w_d = D_d^-1 w`` form.

    Parameters
    ----------
    W : ndarray of shape (m, n_dims + 1)
        Bias weight last (copied unchanged).
    emb : Embedding
        The on-the-fly embedding the models are for.

    Returns
    -------
    ndarray of shape (m, n_dims + 1), float64
        The inverse of :func:`~streamlearn.solvers.embedding.weights_from_w_d`: ``order``
        prefix sums within each feature's block of columns (pair columns are unchanged).
    """
    out = np.array(W, dtype=np.float64)
    blocks = out[:, : emb.main_dims].reshape(out.shape[0], emb.n_features, emb.n_cols)
    for _ in range(emb.order):
        np.cumsum(blocks, axis=2, out=blocks)
    return out
