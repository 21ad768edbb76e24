"""``AdditiveSVC``: additive-kernel SVMs trained by streaming, embeddings computed on the fly.

Paper 000: a classifier ``f(x) = sum_f g_f(x_f) + b`` with one smooth curve per feature is a
linear SVM on an additive embedding ``Psi(x)`` (B-splines with a difference penalty, or the
trigonometric and Hermite embeddings of Table 1). Training never materialises ``Psi``: the
solvers embed each row inside their inner loop (the paper's "online" method). With
``online=False`` each chunk is embedded first (the "batch" column of the paper's tables) and
the same solver runs on the materialised columns, which gives the same model and shows what
the on-the-fly embedding saves.

``fit`` is a short sequence of passes over the data:

1. a reduction pass summarises the features (min, max, mean, std, quantiles) and counts the
   training rows; the feature map is fitted from the summary (a linear model without
   calibration skips this pass: the store's metadata counts its rows);
2. ``epochs`` sequential passes, each visiting the chunks in a new seeded random order, run
   PEGASOS or dual coordinate descent (the dual variables live in an ``ExampleState``); with
   ``k > 2`` classes the one-vs-rest or one-vs-one models are updated from each row read;
3. a reduction pass over the held-out calibration rows bins the scores, and a Platt sigmoid
   is fitted per binary model (:mod:`streamlearn.models.calibration`).

Both solvers minimise the same objective
``lam / 2 ||w||^2 + (1 / n) sum_i s_i loss(y_i (w . Psi(x_i) + b))``, equivalently
``1/2 ||w||^2 + C sum_i s_i loss(...)`` with ``C = 1 / (lam n)``, ``n`` the number of
training rows and ``s_i`` the sample weights; the bias ``b`` is the weight of a constant
feature of value ``bias_scale``, regularised like the other weights (liblinear's convention).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from streamlearn.data import Chunk, Dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.data.sources.base import default_feature_names
from streamlearn.engine import DescribePass, Description
from streamlearn.engine.checkpoint import DEFAULT_EVERY, checkpointed
from streamlearn.errors import LabelError
from streamlearn.features import BSplineMap, FeatureMap, FourierMap, HermiteMap
from streamlearn.models.base import (
    ClassifierScore,
    StreamEstimator,
    check_features,
    classification_dataset,
    encode_labels,
    sorted_classes,
    storable_classes,
)
from streamlearn.models.calibration import ScoreHistogram, sigmoid_proba
from streamlearn.models.pairwise_coupling import couple_pairwise
from streamlearn.solvers.dcd import LOSSES, dcd_ovr_chunk
from streamlearn.solvers.embedding import (
    Embedding,
    decision_ovr_chunk,
    embedding_params,
    weights_from_w_d,
)
from streamlearn.solvers.ovr import REST
from streamlearn.solvers.pegasos import NO_AVERAGING, pegasos_ovr_chunk
from streamlearn.solvers.row_sample import row_keys

EMBEDDINGS = ("bspline", "fourier", "hermite", "linear")
SOLVERS = ("pegasos", "dcd")
MULTICLASS = ("ovr", "ovo")
#: Mixed into ``random_state`` to choose the calibration rows.
HOLDOUT_SALT = 0x0CA1_1B2A_7E5E_ED00
#: Dual coordinate descent sweeps over a chunk per visit.
DCD_INNER_SWEEPS = 1


# -- rows used for training and calibration -------------------------------------------------
@dataclass(frozen=True)
class Holdout:
    """A deterministic subset of rows chosen by a hash of their global row id.

    Row ``i`` is held out when ``row_keys([i], seed) < threshold``; keys are uniform 64-bit
    integers, so about ``threshold / 2**64`` of the rows are held out, the same rows whatever
    the chunking, shuffling or engine.

    Attributes
    ----------
    seed : int
    threshold : int
        In ``[0, 2**64)``.
    """

    seed: int
    threshold: int

    @classmethod
    def fraction(cls, fraction: float, seed: int) -> Holdout:
        """Hold out about ``fraction`` of the rows."""
        threshold = min(int(float(fraction) * 2.0**64), 2**64 - 1)
        return cls(int(seed) % 2**64, threshold)

    def mask(self, rows: np.ndarray) -> np.ndarray:
        """Boolean mask of the held-out rows among global row ids ``rows``."""
        keys = row_keys(np.ascontiguousarray(rows, dtype=np.int64), self.seed)
        return keys < np.uint64(self.threshold)


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
        """Training rows of a chunk.

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
        keep = None
        if self.holdout is not None:
            held = self.holdout.mask(chunk.rows)
            if held.any():
                keep = np.flatnonzero(~held)
                X, codes = X[keep], codes[keep]
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
        Feature statistics and class counts over all rows.
    n_train, n_holdout : int
        Rows used for training and held out for calibration.
    """

    description: Description
    n_train: int
    n_holdout: int


class SummaryPass:
    """Reduction pass: :class:`~streamlearn.engine.DescribePass` plus held-out row counts.

    Parameters
    ----------
    feature_names : list of str
    n_classes : int
    holdout : Holdout or None
    seed : int
        Seed of the describe pass's row sample.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, feature_names: list[str], n_classes: int, holdout: Holdout | None,
                 seed: int = 0) -> None:
        self.describe = DescribePass(feature_names, n_classes=n_classes, seed=seed)
        self.holdout = holdout

    def start(self) -> list[Any]:
        """Empty state ``[describe state, rows, held-out rows]``."""
        return [self.describe.start(), 0, 0]

    def step(self, state: list[Any], chunk: Chunk) -> list[Any]:
        """Fold one chunk into ``state``."""
        state[0] = self.describe.step(state[0], chunk)
        state[1] += chunk.n_rows
        if self.holdout is not None:
            state[2] += int(self.holdout.mask(chunk.rows).sum())
        return state

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        """Combine two states (a new state)."""
        return [self.describe.merge(a[0], b[0]), a[1] + b[1], a[2] + b[2]]

    def finish(self, state: list[Any]) -> Summary:
        """The :class:`Summary`."""
        return Summary(self.describe.finish(state[0]), state[1] - state[2], state[2])


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
    """

    W: np.ndarray
    AVG: np.ndarray
    t: int
    rows: int = 0

    def copy(self) -> PegasosState:
        """An independent copy."""
        return PegasosState(self.W.copy(), self.AVG.copy(), self.t, self.rows)


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

    Notes
    -----
    Engines that split the pass merge partial states by averaging the models weighted by the
    rows each processed (parameter mixing); the step counter advances by the rows of both.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, rows: TrainingRows, pairs: ModelPairs, lam: float, bias_scale: float,
                 average_start: int, initial: PegasosState) -> None:
        self.rows = rows
        self.pairs = pairs
        self.lam = float(lam)
        self.bias_scale = float(bias_scale)
        self.average_start = int(average_start)
        self.initial = initial

    def start(self) -> PegasosState:
        """A copy of the initial state."""
        state = self.initial.copy()
        state.rows = 0
        return state

    def step(self, state: PegasosState, chunk: Chunk) -> PegasosState:
        """PEGASOS steps over the chunk's training rows (in place)."""
        _, X, codes, weight = self.rows.select(chunk)
        state.t = pegasos_ovr_chunk(X, codes, *self.pairs, weight, self.lam, self.bias_scale,
                                    state.W, state.AVG, state.t, self.average_start,
                                    *self.rows.emb)
        state.rows += X.shape[0]
        return state

    def merge(self, a: PegasosState, b: PegasosState) -> PegasosState:
        """Parameter mixing of two partial states (a new state)."""
        return PegasosState(_mix(a.W, b.W, a.rows, b.rows), _mix(a.AVG, b.AVG, a.rows, b.rows),
                            max(a.t, b.t) + min(a.rows, b.rows), a.rows + b.rows)

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
    """

    W: np.ndarray
    pg_max: np.ndarray
    pg_min: np.ndarray
    alpha_sum: np.ndarray
    dual_quad: np.ndarray
    rows: int = 0


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

    Notes
    -----
    Engines that split the pass average the partial models weighted by rows processed; the
    dual variables of each partition are its own rows'.
    """

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, rows: TrainingRows, pairs: ModelPairs, C: float, loss: int,
                 bias_scale: float, alpha: ExampleState, seed: int, initial: np.ndarray) -> None:
        self.rows = rows
        self.pairs = pairs
        self.C = float(C)
        self.loss = int(loss)
        self.bias_scale = float(bias_scale)
        self.alpha = alpha
        self.seed = int(seed)
        self.initial = initial

    def start(self) -> DcdState:
        """A copy of the initial models, empty statistics."""
        m = self.initial.shape[0]
        return DcdState(self.initial.copy(), np.full(m, -np.inf), np.full(m, np.inf),
                        np.zeros(m), np.zeros(m))

    def step(self, state: DcdState, chunk: Chunk) -> DcdState:
        """Coordinate descent over the chunk's training rows (in place)."""
        keep, X, codes, weight = self.rows.select(chunk)
        alpha_all = self.alpha.get(chunk)
        alpha = alpha_all if keep is None else np.ascontiguousarray(alpha_all[keep])
        c = self.C * weight.astype(np.float64)
        seed = (self.seed * 0x9E3779B1 + int(chunk.start)) % 2**63
        pg_max, pg_min, alpha_sum, dual_quad = dcd_ovr_chunk(
            X, codes, *self.pairs, c, alpha, state.W, self.loss, self.bias_scale,
            DCD_INNER_SWEEPS, seed, *self.rows.emb)
        if keep is not None:
            alpha_all[keep] = alpha
        self.alpha.put(chunk, alpha_all)
        np.maximum(state.pg_max, pg_max, out=state.pg_max)
        np.minimum(state.pg_min, pg_min, out=state.pg_min)
        state.alpha_sum += alpha_sum
        state.dual_quad += dual_quad
        state.rows += X.shape[0]
        return state

    def merge(self, a: DcdState, b: DcdState) -> DcdState:
        """Parameter mixing of the models, statistics combined (a new state)."""
        return DcdState(_mix(a.W, b.W, a.rows, b.rows), np.maximum(a.pg_max, b.pg_max),
                        np.minimum(a.pg_min, b.pg_min), a.alpha_sum + b.alpha_sum,
                        a.dual_quad + b.dual_quad, a.rows + b.rows)

    def finish(self, state: DcdState) -> DcdState:
        """The state after the epoch."""
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
    holdout : Holdout
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, W: np.ndarray, emb: Embedding, pairs: ModelPairs, bias_scale: float,
                 holdout: Holdout) -> None:
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
        held = np.flatnonzero(self.holdout.mask(chunk.rows))
        if held.size == 0:
            return state
        X = np.ascontiguousarray(chunk.X[held])
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
        prefix sums within each feature's block of columns.
    """
    out = np.array(W, dtype=np.float64)
    blocks = out[:, : emb.n_dims].reshape(out.shape[0], emb.n_features, emb.n_cols)
    for _ in range(emb.order):
        np.cumsum(blocks, axis=2, out=blocks)
    return out


# -- the estimator ------------------------------------------------------------------------
class AdditiveSVC(ClassifierScore, StreamEstimator):
    """Additive-kernel support vector classifier trained by streaming over chunked data.

    Parameters
    ----------
    embedding : {"bspline", "fourier", "hermite", "linear"}
        Per-feature embedding (paper 000): uniform B-splines with a difference penalty, the
        trigonometric or Hermite embedding of Table 1, or the raw features (a linear SVM).
    degree : {1, 2, 3}
        B-spline degree.
    n_bases : int
        B-spline bases per feature.
    penalty_order : int, optional
        Difference penalty order ``d`` for B-splines (0, 1, 2; default 0, the sparse ``D0``)
        or penalised derivative for Fourier and Hermite (1, 2; default 1).
    n_terms : int
        Frequencies (Fourier) or polynomials (Hermite) per feature.
    zero_preserving : bool
        Use the ``Psi(0) = 0`` variant of the embedding (sparse non-negative inputs): a
        feature at the lower end of its range costs nothing, so training and prediction take
        time in the number of non-zero inputs. For degree-1 splines with ``penalty_order=1``
        this is the same model as ``zero_preserving=False`` when ``bias_scale`` is
        ``sqrt(n_features + b^2)`` instead of ``b``: the first column of every feature's
        ``Psi_1 = D_1^-T Phi`` is the constant ``sum_j Phi_j = 1``, and the other columns are
        the zero-preserving embedding, so both define the same kernel and the same dual
        problem (the solvers take the same steps).
    solver : {"pegasos", "dcd"}
        Primal stochastic sub-gradient (PEGASOS) or dual coordinate descent (liblinear's
        algorithm, block-wise over chunks, dual variables kept per row).
    multiclass : {"ovr", "ovo"}
        With more than two classes: one model per class against the rest, its Platt
        probabilities normalised (the paper's choice), or one model per pair of classes,
        combined by votes and by pairwise coupling of their Platt probabilities (Wu, Lin and
        Weng, 2004), as libsvm does. One-vs-one has ``k (k - 1) / 2`` models but each row
        updates only the ``k - 1`` that contain its class, and each model solves a smaller,
        often easier problem.
    C : float
        Penalty of the hinge losses, ``1/2 ||w||^2 + C sum_i s_i loss_i``; used when ``lam``
        is None.
    lam : float, optional
        Regularisation of ``lam / 2 ||w||^2 + (1 / n) sum_i s_i loss_i``; overrides ``C``
        (``C = 1 / (lam n)``). Default ``1 / (C n)``, ``n`` the number of training rows.
    loss : {"hinge", "squared_hinge"}
        Loss of the ``dcd`` solver (PEGASOS uses the hinge).
    epochs : int
        Passes over the data (maximum for ``dcd`` with ``tol``).
    tol : float, optional
        ``dcd`` stops after the first epoch whose projected gradients span less than ``tol``
        for every model (liblinear's ``eps``); None runs all epochs.
    average : bool
        PEGASOS returns the mean of the iterates of the second half of its steps (suffix
        averaging) instead of the last iterate.
    online : bool
        Embed rows inside the solver loop (True) or materialise each chunk's embedding and
        train on its columns (False, for comparison; same model, more memory and time).
    calibrate : bool
        Fit Platt sigmoids on held-out rows for :meth:`predict_proba`. Without calibration
        the probability of each binary model is the plain logistic ``1 / (1 + exp(-f))``.
    calibration_fraction : float
        Share of the rows held out from training for calibration, chosen by a hash of the
        row id (the same rows whatever the chunking or order).
    bias_scale : float
        Value of the constant feature whose regularised weight is the bias (0: no bias).
    chunk_rows : int, optional
        Rows per chunk when this estimator opens the data or makes the engine.
    random_state : int, optional
        Seeds the shuffling, the DCD visiting orders and the calibration rows; None draws
        a seed.
    engine : engine, optional
        Runs the passes; a ``LocalEngine`` (with ``chunk_rows`` and ``progress``) by default.
    progress : bool, optional
        Progress bars for the default engine (None: when stderr is a terminal).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Sorted labels; predictions are among them.
    n_features_in_ : int
    feature_names_in_ : tuple of str
    feature_map_ : FeatureMap or None
        The fitted embedding (None for ``"linear"``).
    coef_d_ : ndarray of shape (n_models, n_dims + 1), float64
        Models in the ``w_d = D_d^-1 w`` form the kernels use, bias weight last;
        ``n_models`` is 1 for two classes (positive class ``classes_[1]``), else n_classes
        (one-vs-rest) or ``n_classes (n_classes - 1) / 2`` (one-vs-one: pairs ``a < b`` in
        the order of :func:`numpy.triu_indices`, positive class ``classes_[a]``).
    lam_, C_ : float
        Regularisation used (``C_ = 1 / (lam_ n)``).
    n_train_, n_calibration_ : int
        Rows used for training and for calibration by the last ``fit``.
    n_iter_ : int
        Epochs run by the last ``fit``.
    t_ : int
        PEGASOS steps done (rows visited by ``fit``).
    platt_a_, platt_b_ : ndarray of shape (n_models,)
        Sigmoid ``P = 1 / (1 + exp(A f + B))`` of each binary model.
    calibrated_ : bool
        Whether ``platt_a_, platt_b_`` were fitted (else the plain logistic ``A = -1, B = 0``).
    state_w_d_ : ndarray of shape (n_models, n_dims + 1)
        Last PEGASOS iterates (the models themselves for ``dcd``), where :meth:`partial_fit`
        continues from.
    average_start_ : int
        First PEGASOS step whose iterate enters the averaged model.
    pg_range_ : float
        ``dcd`` only: largest projected-gradient range of the models in the last epoch.

    Examples
    --------
    >>> from streamlearn.data.synthetic import additive_problem
    >>> X, y = additive_problem(20_000)
    >>> clf = AdditiveSVC(embedding="bspline", degree=1, n_bases=20).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    def __init__(
        self,
        embedding: str = "bspline",
        degree: int = 1,
        n_bases: int = 10,
        penalty_order: int | None = None,
        n_terms: int = 4,
        zero_preserving: bool = False,
        solver: str = "pegasos",
        multiclass: str = "ovr",
        C: float = 1.0,
        lam: float | None = None,
        loss: str = "hinge",
        epochs: int = 5,
        tol: float | None = None,
        average: bool = True,
        online: bool = True,
        calibrate: bool = True,
        calibration_fraction: float = 0.1,
        bias_scale: float = 1.0,
        chunk_rows: int | None = None,
        random_state: int | None = 0,
        engine: Any = None,
        progress: bool | None = None,
    ) -> None:
        self.embedding = embedding
        self.degree = degree
        self.n_bases = n_bases
        self.penalty_order = penalty_order
        self.n_terms = n_terms
        self.zero_preserving = zero_preserving
        self.solver = solver
        self.multiclass = multiclass
        self.C = C
        self.lam = lam
        self.loss = loss
        self.epochs = epochs
        self.tol = tol
        self.average = average
        self.online = online
        self.calibrate = calibrate
        self.calibration_fraction = calibration_fraction
        self.bias_scale = bias_scale
        self.chunk_rows = chunk_rows
        self.random_state = random_state
        self.engine = engine
        self.progress = progress

    # -- hyper-parameters -----------------------------------------------------------------
    def _validate(self) -> None:
        if self.embedding not in EMBEDDINGS:
            raise ValueError(f"embedding must be one of {EMBEDDINGS}, got {self.embedding!r}")
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        if self.multiclass not in MULTICLASS:
            raise ValueError(f"multiclass must be one of {MULTICLASS}, got {self.multiclass!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {self.loss!r}")
        if self.solver == "pegasos" and self.loss != "hinge":
            raise ValueError("the pegasos solver minimises the hinge loss; use solver='dcd' "
                             f"for loss={self.loss!r}")
        if int(self.epochs) < 1:
            raise ValueError(f"epochs must be at least 1, got {self.epochs}")
        if not self.C > 0:
            raise ValueError(f"C must be positive, got {self.C}")
        if self.lam is not None and not self.lam > 0:
            raise ValueError(f"lam must be positive or None, got {self.lam}")
        if self.tol is not None and not self.tol > 0:
            raise ValueError(f"tol must be positive or None, got {self.tol}")
        if self.calibrate and not 0.0 < self.calibration_fraction < 1.0:
            raise ValueError("calibration_fraction must lie strictly between 0 and 1, got "
                             f"{self.calibration_fraction}")
        if not self.bias_scale >= 0:
            raise ValueError(f"bias_scale must be non-negative, got {self.bias_scale}")

    def _make_map(self) -> FeatureMap | None:
        if self.embedding == "linear":
            return None
        if self.embedding == "bspline":
            order = 0 if self.penalty_order is None else self.penalty_order
            return BSplineMap(self.degree, self.n_bases, order, self.zero_preserving)
        order = 1 if self.penalty_order is None else self.penalty_order
        cls = FourierMap if self.embedding == "fourier" else HermiteMap
        return cls(self.n_terms, order, self.zero_preserving)

    def _seed(self) -> int:
        if self.random_state is None:
            return int(np.random.SeedSequence().entropy % 2**31)
        return int(self.random_state)

    @property
    def n_models_(self) -> int:
        """Number of binary models: 1 for two classes, else one per class."""
        self._check_fitted()
        return int(self.coef_d_.shape[0])

    def _pairs(self) -> ModelPairs:
        return ModelPairs.of(len(self.classes_), self.multiclass)

    def _embedding(self) -> Embedding:
        return embedding_params(self.feature_map_, self.n_features_in_)

    def _training_rows(self, holdout: Holdout | None) -> TrainingRows:
        if self.online or self.feature_map_ is None:
            return TrainingRows(self._embedding(), None, holdout)
        n_columns = self.feature_map_.n_output_features(self.n_features_in_)
        return TrainingRows(embedding_params(None, n_columns), self.feature_map_, holdout)

    # -- training -------------------------------------------------------------------------
    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            engine: Any = None, checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY) -> AdditiveSVC:
        """Train on a dataset by streaming over it.

        Parameters
        ----------
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
        y : array-like or str, optional
            Labels of in-memory ``data`` (any type: strings, integers, booleans), or the
            target column name. Not with a Dataset (it carries its target).
        sample_weight : array-like or str, optional
            Non-negative weights of the rows' losses (values or a column name).
        engine : engine, optional
            Overrides the ``engine`` parameter for this call.
        checkpoint : str or path-like, optional
            Directory where progress is saved; a fit killed at any point and run again
            with the same arguments resumes from it and ends with the same model (see
            :mod:`streamlearn.engine.checkpoint`).
        checkpoint_every : int
            Chunks between two checkpoint writes (and at the end of every pass).

        Returns
        -------
        self
        """
        self._validate()
        self.__dict__.pop("classes_", None)  # not fitted until this fit succeeds
        dataset = classification_dataset(data, y, sample_weight, self.chunk_rows)
        runner = checkpointed(self._engine(engine), checkpoint, checkpoint_every, self, dataset)
        seed = self._seed()
        classes = dataset.classes
        assert classes is not None
        holdout = (Holdout.fraction(self.calibration_fraction, seed ^ HOLDOUT_SALT)
                   if self.calibrate else None)

        feature_map = self._make_map()
        if feature_map is None and holdout is None and dataset.nan_policy != "drop":
            # nothing needs the describe pass: no map to fit, no rows held out, and the
            # store's metadata counts the training rows
            n_train, n_holdout = dataset.n_rows, 0
        else:
            summary: Summary = runner.run(
                SummaryPass(list(dataset.feature_names), len(classes), holdout, seed), dataset,
                description="describe")
            n_train, n_holdout = summary.n_train, summary.n_holdout
            if feature_map is not None:
                desc = summary.description
                feature_map.fit_from_stats(minimum=desc.min, maximum=desc.max, mean=desc.mean,
                                           std=desc.std, quantiles=desc.quantiles)
        if n_train == 0:
            raise LabelError(f"no rows left to train on ({n_holdout} held out for "
                             "calibration); use more data or calibrate=False")
        self.feature_names_in_ = tuple(dataset.feature_names)
        self.n_features_in_ = len(self.feature_names_in_)
        self.feature_map_ = feature_map
        self.n_train_ = int(n_train)
        self.n_calibration_ = int(n_holdout)
        self.lam_ = float(self.lam) if self.lam is not None else 1.0 / (self.C * self.n_train_)
        self.C_ = 1.0 / (self.lam_ * self.n_train_)

        rows = self._training_rows(holdout)
        pairs = ModelPairs.of(len(classes), self.multiclass)
        shape = (len(pairs.positive), rows.emb.n_dims + 1)
        if self.solver == "pegasos":
            W = self._fit_pegasos(runner, dataset, rows, pairs, shape, seed)
        else:
            W = self._fit_dcd(runner, dataset, rows, pairs, shape, seed)
        if rows.feature_map is not None:
            W = w_to_w_d(W, self._embedding())
            self.state_w_d_ = w_to_w_d(self.state_w_d_, self._embedding())
        self.coef_d_ = np.ascontiguousarray(W)

        self.platt_a_ = np.full(shape[0], -1.0)
        self.platt_b_ = np.zeros(shape[0])
        self.calibrated_ = False
        if holdout is not None and self.n_calibration_ > 0:
            histogram: ScoreHistogram = runner.run(
                CalibrationPass(self.coef_d_, self._embedding(), pairs,
                                self.bias_scale, holdout),
                dataset, description="calibrate")
            self.platt_a_, self.platt_b_ = histogram.fit()
            self.calibrated_ = True
        self.classes_ = storable_classes(classes)
        return self

    def _fit_pegasos(self, runner: Any, dataset: Dataset, rows: TrainingRows,
                     pairs: ModelPairs, shape: tuple[int, int], seed: int) -> np.ndarray:
        epochs = int(self.epochs)
        total = epochs * self.n_train_
        self.average_start_ = total // 2 + 1 if self.average else int(NO_AVERAGING)
        state = PegasosState(np.zeros(shape), np.zeros(shape), 0)
        for epoch in range(epochs):
            epoch_pass = PegasosEpochPass(rows, pairs, self.lam_, self.bias_scale,
                                          self.average_start_, state)
            state = runner.run(epoch_pass, dataset, shuffle=True, seed=seed, epoch=epoch,
                               description=f"pegasos epoch {epoch + 1}/{epochs}")
        self.n_iter_ = epochs
        self.t_ = int(state.t)
        self.state_w_d_ = state.W
        averaged = self.average and state.t >= self.average_start_
        return state.AVG if averaged else state.W.copy()

    def _fit_dcd(self, runner: Any, dataset: Dataset, rows: TrainingRows,
                 pairs: ModelPairs, shape: tuple[int, int], seed: int) -> np.ndarray:
        epochs = int(self.epochs)
        W = np.zeros(shape)
        self.pg_range_ = np.inf
        with ExampleState(dataset.n_rows, shape[0]) as alpha:
            epoch = 0
            for epoch in range(epochs):
                epoch_pass = DcdEpochPass(rows, pairs, self.C_, LOSSES[self.loss],
                                          self.bias_scale, alpha, seed * 1000003 + epoch, W)
                state: DcdState = runner.run(epoch_pass, dataset, shuffle=True, seed=seed,
                                             epoch=epoch,
                                             description=f"dcd epoch {epoch + 1}/{epochs}")
                W = state.W
                self.pg_range_ = float(np.max(state.pg_max - state.pg_min))
                if self.tol is not None and self.pg_range_ < self.tol:
                    break
        self.n_iter_ = epoch + 1
        self.t_ = self.n_iter_ * self.n_train_
        self.average_start_ = int(NO_AVERAGING)
        self.state_w_d_ = W.copy()
        return W

    def partial_fit(self, X: Any, y: Any, classes: Any = None,
                    sample_weight: Any = None) -> AdditiveSVC:
        """One PEGASOS pass over one chunk of in-memory rows.

        The first call fixes the classes (``classes``, required when there are more than
        two; else the labels of ``y``), the features and the feature map, fitted from this
        chunk's statistics (later values outside its range are clamped to it). Unless
        ``lam`` is set, ``lam = 1 / (C n)`` with ``n`` the rows of the first chunk.
        With ``average``, predictions use the mean of the iterates after the first chunk.
        No calibration: :meth:`predict_proba` uses the plain logistic of the scores (or the
        sigmoids of an earlier ``fit``).

        Parameters
        ----------
        X : array-like of shape (n, n_features)
        y : array-like of shape (n,)
        classes : array-like, optional
            All labels that will ever be seen; only on the first call.
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        self
        """
        self._validate()
        if not self.is_fitted:
            self._start_partial_fit(X, y, classes)
        elif classes is not None and not np.array_equal(sorted_classes(classes), self.classes_):
            raise LabelError(f"classes {list(classes)} differ from those of the first call "
                             f"{self.classes_.tolist()}")
        X = check_features(X, self.feature_names_in_, type(self).__name__)
        codes = encode_labels(y, self.classes_)
        if codes.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {codes.shape[0]}")
        weight = (np.ones(X.shape[0], dtype=np.float32) if sample_weight is None
                  else np.ascontiguousarray(sample_weight, dtype=np.float32).reshape(-1))
        if weight.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but sample_weight has {weight.shape[0]}")
        W = np.ascontiguousarray(self.state_w_d_, dtype=np.float64).copy()
        averaging = self.t_ >= self.average_start_
        AVG = self.coef_d_.copy() if averaging else np.zeros_like(W)
        self.t_ = int(pegasos_ovr_chunk(X, codes, *self._pairs(), weight, self.lam_,
                                        float(self.bias_scale), W, AVG, self.t_,
                                        self.average_start_, *self._embedding()))
        self.n_train_ += X.shape[0]
        self.state_w_d_ = W
        self.coef_d_ = AVG if self.t_ >= self.average_start_ else W.copy()
        return self

    def _start_partial_fit(self, X: Any, y: Any, classes: Any) -> None:
        """First ``partial_fit`` call: classes, features, feature map and empty models."""
        names = getattr(X, "columns", None)
        if names is None:
            names = getattr(X, "column_names", None)
        values = np.asarray(X, dtype=np.float32)
        if values.ndim != 2:
            raise ValueError(f"X must be 2-D (rows x features), got shape {values.shape}")
        known = sorted_classes(classes if classes is not None else y)
        if len(known) < 2:
            raise LabelError(f"partial_fit needs at least two classes, got {known.tolist()}; "
                             "pass classes=[...] with all labels on the first call")
        if classes is None and len(known) > 2:
            raise LabelError(f"y has {len(known)} classes: pass classes=[...] with all labels "
                             "on the first call to partial_fit")
        feature_names = (tuple(str(c) for c in names) if names is not None
                         else tuple(default_feature_names(values.shape[1])))
        values = check_features(values, feature_names)
        encode_labels(y, known)
        feature_map = self._make_map()
        if feature_map is not None:
            x64 = values.astype(np.float64)
            feature_map.fit_from_stats(minimum=x64.min(axis=0), maximum=x64.max(axis=0),
                                       mean=x64.mean(axis=0), std=x64.std(axis=0))
        n = values.shape[0]
        self.feature_names_in_ = feature_names
        self.n_features_in_ = values.shape[1]
        self.feature_map_ = feature_map
        self.lam_ = float(self.lam) if self.lam is not None else 1.0 / (self.C * n)
        self.C_ = 1.0 / (self.lam_ * n)
        self.n_train_ = 0
        self.n_calibration_ = 0
        self.n_iter_ = 0
        self.t_ = 0
        self.average_start_ = n + 1 if self.average else int(NO_AVERAGING)
        self.classes_ = storable_classes(known)
        m = len(self._pairs().positive)
        dims = self._embedding().n_dims + 1
        self.state_w_d_ = np.zeros((m, dims))
        self.coef_d_ = np.zeros((m, dims))
        self.platt_a_ = np.full(m, -1.0)
        self.platt_b_ = np.zeros(m)
        self.calibrated_ = False

    # -- prediction -----------------------------------------------------------------------
    def _scores(self, X: Any) -> np.ndarray:
        self._check_fitted()
        values = check_features(X, self.feature_names_in_, type(self).__name__)
        return decision_ovr_chunk(values, self.coef_d_, float(self.bias_scale),
                                  *self._embedding())

    def decision_function(self, X: Any) -> np.ndarray:
        """SVM scores ``w . Psi(x) + b``.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or a table with the fit-time columns

        Returns
        -------
        ndarray of shape (n,) for two classes (positive: ``classes_[1]``), else
        (n, n_classes), one column per one-vs-rest model; float64.
        """
        scores = self._scores(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def _model_proba(self, scores: np.ndarray) -> np.ndarray:
        return sigmoid_proba(scores, self.platt_a_[None, :], self.platt_b_[None, :])

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities from the Platt-calibrated scores.

        Two classes: ``[1 - p, p]`` with ``p`` the sigmoid of the score. More classes: the
        calibrated sigmoid of each one-vs-rest model, normalised to sum to 1 per row; for
        one-vs-one, the pairwise sigmoids coupled into class probabilities
        (:func:`~streamlearn.models.pairwise_coupling.couple_pairwise`). Without
        calibration the sigmoids are the plain logistic ``1 / (1 + exp(-f))``.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, n_classes), columns in the order of ``classes_``
        """
        return self._class_proba(self._model_proba(self._scores(X)))

    def _class_proba(self, p: np.ndarray) -> np.ndarray:
        # class probabilities from the probabilities of the binary models
        if p.shape[1] == 1:
            return np.hstack([1.0 - p, p])
        pairs = self._pairs()
        if pairs.one_vs_one:
            return couple_pairwise(p, pairs.positive, pairs.negative, len(self.classes_))
        total = p.sum(axis=1, keepdims=True)
        k = p.shape[1]
        return np.where(total > 0, p / np.where(total > 0, total, 1.0), 1.0 / k)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels.

        Two classes: the sign of the score. More classes, one-vs-rest: the class whose
        calibrated probability is highest (paper 000, Sec. 6); without calibration, the
        highest score. One-vs-one: the class that wins most pairwise votes, ties going to
        the highest coupled probability.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,), labels from ``classes_``
        """
        scores = self._scores(X)
        if scores.shape[1] == 1:
            return self.classes_[(scores[:, 0] > 0).astype(np.int64)]
        pairs = self._pairs()
        if pairs.one_vs_one:
            winner = np.where(scores > 0, pairs.positive[None, :], pairs.negative[None, :])
            k = len(self.classes_)
            votes = (winner[:, :, None] == np.arange(k)[None, None, :]).sum(axis=1)
            # probabilities lie in [0, 1]: half of one breaks ties only
            proba = self._class_proba(self._model_proba(scores))
            return self.classes_[np.argmax(votes + 0.5 * proba, axis=1)]
        return self.classes_[np.argmax(self._model_proba(scores), axis=1)]

    # -- learned weights ------------------------------------------------------------------
    @property
    def coef_(self) -> np.ndarray:
        """Weights of the materialised embedding ``Psi_d`` (``w = D_d w_d``), (n_models, n_dims)."""
        self._check_fitted()
        ipar = self._embedding().ipar
        return np.vstack([weights_from_w_d(row, ipar)[:-1] for row in self.coef_d_])

    @property
    def intercept_(self) -> np.ndarray:
        """Bias of each binary model, ``coef_d_[:, -1] * bias_scale``."""
        self._check_fitted()
        return self.coef_d_[:, -1] * self.bias_scale

    # -- model files ----------------------------------------------------------------------
    _SCALARS = ("lam_", "C_", "n_train_", "n_calibration_", "n_iter_", "t_", "average_start_",
                "calibrated_", "n_features_in_")

    def _get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        metadata = {
            "params": self._json_params(),
            "feature_map": None if self.feature_map_ is None else self.feature_map_.to_dict(),
            "feature_names_in": list(self.feature_names_in_),
            **{name: _plain(getattr(self, name)) for name in self._SCALARS},
        }
        arrays = {
            "classes": storable_classes(self.classes_),
            "coef_d": self.coef_d_,
            "state_w_d": self.state_w_d_,
            "platt_a": self.platt_a_,
            "platt_b": self.platt_b_,
        }
        return metadata, arrays

    @classmethod
    def _from_state(cls, metadata: dict[str, Any], arrays: dict[str, np.ndarray]) -> AdditiveSVC:
        valid = cls._param_names()
        model = cls(**{k: v for k, v in metadata.get("params", {}).items() if k in valid})
        spec = metadata.get("feature_map")
        model.feature_map_ = None if spec is None else FeatureMap.from_dict(spec)
        model.feature_names_in_ = tuple(metadata["feature_names_in"])
        for name in cls._SCALARS:
            setattr(model, name, metadata[name])
        model.classes_ = arrays["classes"]
        model.coef_d_ = np.ascontiguousarray(arrays["coef_d"], dtype=np.float64)
        model.state_w_d_ = np.ascontiguousarray(arrays["state_w_d"], dtype=np.float64)
        model.platt_a_ = np.asarray(arrays["platt_a"], dtype=np.float64)
        model.platt_b_ = np.asarray(arrays["platt_b"], dtype=np.float64)
        return model


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (for JSON)."""
    return value.item() if isinstance(value, np.generic) else value

