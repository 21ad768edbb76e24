"""Training of the mixture of linear SVMs with RBF gating (paper 002) as a sequence of passes.

:func:`fit`:

0. a reduction pass takes every feature's mean and standard deviation over the rows of
   positive sample weight (a row of weight 0 is no row: every later pass weights it 0,
   and ``"auto"`` settings count the rows of positive weight); every later pass
   works on the standardised features ``z = (x - mean) / std`` (a constant feature keeps
   the scale 1), so the fit does not depend on the features' units; the 0/1 indicator
   columns of a categorical feature (``Dataset.indicator_features``) are centred only
   (:meth:`~streamlearn.solvers.kmeans.Standardiser.unscaled`). With
   ``spread_tails`` the pass also samples dense rows, and a crowded feature (a heavy
   tail, far outliers) is mapped by ``asinh((x - c) / s)`` first, by the rule of
   :class:`~streamlearn.features.tail_transform.TailTransform`, when its standard
   deviation is above 3 times its robust spread
   (:func:`~streamlearn.features.tail_transform.squeezing_tails`; one more pass for the
   moments of the mapped rows): standardised as it is, one outlier at a million
   squeezes every other row of its feature onto one point. Sparse rows keep
   their units (:data:`~streamlearn.solvers.kmeans.SPARSE_UNITS`), and every later step
   takes its products over their stored entries; with ``weight_features`` the pass
   samples dense rows with their labels, and each standardised feature is divided by its
   relevance weight (:func:`~.relevance.relevance_weights`);
   ``n_components="auto"``, ``nu="auto"`` and ``C="auto"`` are resolved (:func:`resolve`,
   :func:`default_C`);
1. streamed mini-batch k-means gives ``k`` centres (:func:`~streamlearn.solvers.kmeans.
   streamed_kmeans`); a reduction pass counts each cluster's classes; sequential passes of
   dual coordinate descent train a linear SVM per mixed cluster; a single-class cluster gets
   ``+/- e_{d+1}`` (a constant expert) as Sec. III-D says; ``tau="auto"`` comes from the
   spacing of the k-means centres (:func:`gating_scale`), and with the guard's held-out
   rows the mixtures at each factor of :data:`TAU_FACTORS` train as lanes of the same
   passes, the held-out rows choosing one (:func:`_losing_scales` during stochastic EM,
   else :func:`_choose_gating_scale` after it);
2. ``em="batch"`` (Fig. 2): per iteration, a reduction pass computes the E-step statistics
   (eq. 11) and the objective, ``xi`` follows eq. 20 (pruning), the centres take a few
   L-BFGS steps on eq. 13 whose value and gradient (eq. 14) are each one reduction pass, and
   every expert is re-trained by weighted dual coordinate descent warm-started from its dual
   variables (an ``ExampleState`` with one column per component);
3. ``em="stochastic"``: one sequential pass per epoch; on each chunk, the E-step with the
   current parameters, then a running estimate of the responsibilities (step ``rho_t``)
   gives ``xi`` by eq. 20, the centres take one preconditioned gradient step on the chunk's
   part of eq. 13, and the experts a few dual coordinate descent sweeps over the chunk.

EM stops after an epoch that changes the penalised log-likelihood (eq. 19) by at most
``tol`` times the total sample weight, stochastic EM with the guard's held-out rows also once
no classifier's held-out log loss improves (:func:`_stochastic_em`), or at ``epochs``
(``MixtureFit.converged`` false). When the guard keeps its linear SVM, passes of dual
coordinate descent over every row finish it to a relative duality gap of
:data:`LINEAR_GAP_TOL` (:func:`_finish_linear`).
:func:`partial_pass` continues stochastic EM over new rows, the dual variables of the earlier
training folded into the experts. More than two classes are
handled one class against the rest, one mixture per class; the initialisation and
stochastic EM train them as lanes of the same passes, so a fit reads the data about as many
times for ten classes as for two (batch EM runs the mixtures one after the other).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streamlearn.data import Dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.engine.moments import FeatureMomentsPass, Moments
from streamlearn.engine.passes import Together
from streamlearn.errors import DataError
from streamlearn.features.tail_transform import (
    TAIL_SAMPLE_ROWS,
    TailTransform,
    choose_tail_transform,
)
from streamlearn.solvers.calibration import (
    TemperatureSums,
    best_temperature,
    sigmoid_proba,
    temperature_proba,
)
from streamlearn.solvers.compile_ahead import KernelCall, compile_ahead, runs_here
from streamlearn.solvers.holdout import MIN_VALIDATION_ROWS, Holdout
from streamlearn.solvers.kmeans import Standardiser, streamed_kmeans
from streamlearn.solvers.lbfgs import lbfgs_minimize
from streamlearn.solvers.mixture.passes import (
    ClusterCountPass,
    ClusterCounts,
    EpochState,
    EStepPass,
    EStepStats,
    ExpertObjectivePass,
    ExpertPass,
    ExpertState,
    FoldedDuals,
    GatingPass,
    GatingValue,
    HeldOutScoresPass,
    InitialExpertPass,
    LaneLabels,
    LinearSweepPass,
    LinearSweepState,
    MixtureParams,
    StochasticEpochPass,
    StochasticState,
    TemperaturePass,
    lane_taus,
    mixing_weights,
    penalised_loglik,
)
from streamlearn.solvers.mixture.relevance import (
    MAX_RELEVANCE_FEATURES,
    LabelledSamplePass,
    feature_relevance,
    relevance_weights,
)
from streamlearn.solvers.pairwise_coupling import couple_pairwise

EM_MODES = ("stochastic", "batch")
#: Mini-batch k-means passes of the initialisation.
KMEANS_EPOCHS = 2
#: Dual coordinate descent passes that train the initial expert of every cluster.
INIT_EXPERT_PASSES = 2
#: Coordinate descent passes at most per batch M-step: passes go on while an expert's
#: weighted primal objective (eq. 15) is still above its value at the iteration's start.
MAX_EXPERT_PASSES = 4
#: L-BFGS steps on the centres per batch EM iteration.
LBFGS_STEPS = 3
#: ``tau = TAU_FACTOR / D^2`` with ``D^2`` the median squared distance of a k-means centre
#: to its nearest other centre (see :func:`gating_scale`).
TAU_FACTOR = 16.0
#: ``tau="auto"`` with the guard's held-out rows trains a mixture at each of these factors
#: (the first is :data:`TAU_FACTOR`, kept unless another is clearly better, see
#: :func:`_choose_gating_scale`). Gates 4 times softer gained on usps, letter, pendigits
#: (7.97 -> 6.93, 9.28 -> 8.48, 2.89 -> 2.49 % test error at 20,000 rows) and lost on
#: MNIST (6.02 -> 9.00 %): no single factor suits both.
TAU_FACTORS = (TAU_FACTOR, 4.0)
#: A factor of :data:`TAU_FACTORS` other than the first is kept when its cross-fitted
#: held-out log-loss is below the first's by more than this many standard errors of the
#: rows' paired differences (as :data:`OVO_GAIN_STANDARD_ERRORS`).
TAU_GAIN_STANDARD_ERRORS = 2.0
#: From the end of this epoch of stochastic EM on, the mixture at one gating factor of
#: :data:`TAU_FACTORS` leaves the later passes once the other's held-out loss at its best
#: temperature is clearly lower (:func:`_losing_scales`).
TAU_DROP_FIRST_EPOCH = 2
#: ``C="auto"`` is ``C_FACTOR`` over the mean squared norm of a standardised row (see
#: :func:`default_C`).
C_FACTOR = 10.0
#: Stochastic EM stops after this many consecutive epochs within ``tol`` (its accumulated
#: log-likelihood is noisy: components pruned mid-epoch make it jump, and one small change
#: stopped fits that were still far from their optimum), or, with the guard's held-out
#: rows, after this many consecutive epochs without a new best held-out log loss.
STOCHASTIC_PATIENCE = 2
#: A held-out log loss counts as a new best only when it lies this share below the best
#: of the earlier epochs: after the first few epochs the loss drifts down by a few tenths
#: of a percent an epoch while the held-out error stays level (usps: 18 epochs, the error
#: level from the fifth), and each such epoch costs a full pass.
HELD_OUT_MIN_DECREASE = 0.005
#: Relative duality gap at which the guard's linear SVMs count as trained
#: (:func:`_finish_linear`), as the additive model's dual coordinate descent. At 0.02 the
#: finishing takes about half the passes, and a9a's test error (20,000 rows) was 15.20 %
#: against 14.99 % at 0.01.
LINEAR_GAP_TOL = 0.01
#: The guard's linear SVMs take at most this many passes per ``epochs``: a pass sweeps each
#: chunk in turn, ``EXPERT_SWEEPS`` times, which over many chunks does about what one sweep
#: of all rows does (a9a in 8 chunks: a gap of 0.037 after 20 passes, against 0.0085 after
#: 14 in one chunk of all rows).
LINEAR_PASSES_PER_EPOCH = 3
#: Epoch numbers of the linear SVMs' passes start here (they seed the chunk orders, apart
#: from EM's).
LINEAR_EPOCH_OFFSET = 100_000
#: Mixes the seed into the hash that picks the validation rows.
VALIDATION_SALT = 0x5A11_DA7E_0F0E_C0DE
#: Bounds of ``n_components="auto"`` (see :func:`default_components`): at least
#: ``MIN_COMPONENTS``; at most ``BASE_COMPONENTS``, or up to ``MAX_COMPONENTS`` while an even
#: split of the rows leaves every expert ``ROWS_PER_WEIGHT`` rows per weight; and never
#: fewer than ``MIN_ROWS_PER_COMPONENT`` rows per component on small data, nor, below
#: ``SMALL_DATA_ROWS`` rows, fewer than ``SMALL_ROWS_PER_WEIGHT`` rows per weight.
MIN_COMPONENTS = 10
MIN_ROWS_PER_COMPONENT = 30
BASE_COMPONENTS = 30
MAX_COMPONENTS = 100
ROWS_PER_WEIGHT = 15
#: Below this many rows the guard, at ``MixtureSVC``'s default ``validation_fraction`` of
#: 0.1, expects fewer than ``MIN_VALIDATION_ROWS`` held-out rows and does not run.
SMALL_DATA_ROWS = 10 * MIN_VALIDATION_ROWS
SMALL_ROWS_PER_WEIGHT = 5
#: History entries of ``partial_fit`` calls kept per binary model (the last ones): one per
#: call without a bound grew a model file by about 220 bytes a call.
PARTIAL_HISTORY = 100
#: ``multiclass="auto"`` tries one-vs-one for 3 to this many classes (``AdditiveSVC``'s
#: bound): ``k (k - 1) / 2`` mixtures, 21 at 7 classes.
MAX_AUTO_OVO_CLASSES = 7
#: Multiclass schemes (``"auto"`` resolved by :func:`resolve_multiclass`).
MULTICLASS = ("ovr", "ovo", "auto")
#: Mixes the seed into the hash that splits the held-out rows in two halves for
#: ``multiclass="auto"``'s cross-fitted comparison (:func:`cross_fitted_row_losses`).
CROSS_FIT_SALT = 0x0C05_5F17_7EDA_A1F5
#: ``multiclass="auto"`` keeps one-vs-one when its cross-fitted held-out log-loss is below
#: one-vs-rest's by more than this many standard errors of the rows' paired differences
#: (:func:`_one_vs_one_if_better`).
OVO_GAIN_STANDARD_ERRORS = 2.0
#: The guard keeps the mixture whatever the log-losses when its held-out error is below
#: the linear SVM's by more than this many standard errors of the rows' paired
#: differences (:func:`_guard_choice`).
GUARD_ERROR_STANDARD_ERRORS = 2.0

History = list[dict[str, float]]


@dataclass(frozen=True)
class MixtureConfig:
    """Hyper-parameters of the mixture (see ``MixtureSVC``).

    Attributes
    ----------
    n_components : int or "auto"
    nu : float or "auto"
    tau : float or "auto"
    C : float or "auto"
    em : {"stochastic", "batch"}
    epochs : int
    tol : float
    bias_scale : float
    validation_fraction : float or None
        Share of the rows held out for the guard against a single linear expert (stochastic
        EM only); None: no guard.
    spread_tails : bool
        Map crowded features of dense rows before they are standardised
        (:class:`~streamlearn.features.tail_transform.TailTransform`).
    loss : {"hinge", "squared_hinge"}
        The experts' loss (resolved; see ``MixtureSVC``).
    multiclass : {"ovr", "ovo", "auto"}
        More than two classes: one mixture per class against the rest, one per pair of
        classes, or ``"auto"`` (:func:`resolve_multiclass`; see ``MixtureSVC``).
    weight_features : bool
        Divide each varying standardised feature of dense rows (at most
        :data:`~.relevance.MAX_RELEVANCE_FEATURES` columns, indicator columns left out) by
        its relevance weight (:func:`~.relevance.relevance_weights`) when the mixture has
        more than one component (gates to serve).
    """

    n_components: int | str
    nu: float | str
    tau: float | str
    C: float | str
    em: str
    epochs: int
    tol: float
    bias_scale: float
    validation_fraction: float | None = None
    spread_tails: bool = False
    loss: str = "hinge"
    multiclass: str = "ovr"
    weight_features: bool = False


@dataclass(frozen=True)
class OnlineState:
    """What stochastic EM carries from one :func:`partial_pass` to the next.

    Attributes
    ----------
    resp : ndarray of shape (n_models, k)
        Running mean posteriors of each binary mixture (eq. 20 turns them into ``xi``).
    steps : int
        Chunks seen by stochastic EM so far (step ``rho_t``).
    seen_weight : float or ndarray of shape (n_models,)
        Total sample weight of the rows seen so far (eq. 20's counts are
        ``seen_weight * resp``); one against one, each pair's, of its two classes' rows.
    calls : int
        Passes made by :func:`partial_pass` (seeds each pass's row order).
    dual_sums : ndarray of shape (n_models, k), optional
        ``sum_i alpha_ij`` of each expert's dual variables over every row trained on (the
        folded ones scaled, see :func:`partial_pass`); None on a model from before it.
    """

    resp: np.ndarray
    steps: int
    seen_weight: float | np.ndarray
    calls: int
    dual_sums: np.ndarray | None = None


@dataclass(frozen=True)
class BinaryFit:
    """One binary mixture after EM.

    Attributes
    ----------
    params : MixtureParams
    history : list of dict
        One entry per epoch (see ``MixtureFit.history``).
    n_iter : int
        EM iterations (batch) or passes (stochastic) run.
    converged : bool
        Whether the last epoch changed eq. 19 by at most ``tol`` times the sample weight.
    resp : ndarray of shape (k,)
        Running mean posteriors that stochastic EM continues from.
    steps : int
        Chunks stochastic EM has seen (sets its next step size ``rho_t``).
    total_weight : float
        Sample weight of the training rows (one against one: of the pair's classes).
    tau : float
        Gating scale used.
    dual_sums : ndarray of shape (k,), optional
        ``sum_i alpha_ij`` of each expert's dual variables at the end.
    """

    params: MixtureParams
    history: History
    n_iter: int
    converged: bool
    resp: np.ndarray
    steps: int
    total_weight: float
    tau: float
    dual_sums: np.ndarray | None = None


@dataclass(frozen=True)
class MixtureFit:
    """A fitted mixture: one binary mixture, or one per class against the rest.

    Attributes
    ----------
    classes : ndarray of shape (n_classes,)
    feature_names : tuple of str, or a sequence of numbered names (sparse data)
    xi : ndarray of shape (n_models, k)
        Mixing weights (0: pruned).
    centers : ndarray of shape (n_models, k, d)
    coef : ndarray of shape (n_models, k, d + 1)
        Experts, bias weight last.
    tau : float
        Gating scale.
    history : list of list of dict
        Per binary model, one entry per epoch: ``loglik`` (eq. 8's data term),
        ``penalised`` (eq. 19), ``n_active``.
    n_iter : int
        EM iterations or passes run, the most over the binary models.
    converged : bool
        Whether every binary model met the tolerance.
    online : OnlineState
    shift, scale : ndarray of shape (d,)
        The standardisation ``z = (x - shift) / scale`` the centres and experts live in.
    nu : float
        The prior of eq. 18-20 used (``"auto"`` resolved).
    C : float
        The experts' penalty used (``"auto"`` resolved).
    validation : dict or None
        The guard's outcome (see :func:`fit`), None when it did not run.
    feature_transform : TailTransform or None
        The map of crowded features the rows were read through (``spread_tails``), before
        the standardisation.
    proba_scale : float, ndarray of shape (n_models,) or None
        The temperature ``s`` of the class probabilities ``softmax(s f)`` (the logistic
        of ``s f`` for two classes), see :func:`probability_scale`; one against one, each
        pair's (the logistic of ``s_t f_t``, coupled); None on a model from before it.
    proba_rows : {"held-out", "training"} or None
        The rows ``proba_scale`` was chosen on.
    loss : {"hinge", "squared_hinge"}
        The experts' loss, of the likelihoods of eq. 10 and 21 as well.
    multiclass : {"ovr", "ovo"}
        The binary mixtures: one per class against the rest (or the one of two
        classes), or one per pair of classes ``(i, j)``, ``i < j``, in the order of
        :func:`class_pairs` (:attr:`pairs`).
    multiclass_check : dict or None
        ``multiclass="auto"`` with 3 to :data:`MAX_AUTO_OVO_CLASSES` classes: the
        cross-fitted held-out log-loss of the class probabilities of each scheme
        (``"ovr"``, ``"ovo"``; ``"ovo"`` None with the ``"reason"`` when not tried), the
        standard error of their difference and the one ``"kept"``
        (:func:`_one_vs_one_if_better`).
    tau_check : dict or None
        ``tau="auto"`` with the guard's held-out rows: the ``"factors"`` of
        :data:`TAU_FACTORS` tried, their ``"taus"``, the cross-fitted held-out log-loss of
        each one's class probabilities (``"losses"``), the standard error of each one's
        paired difference from the first's (``"standard_errors"``, 0 for the first) and
        the factor ``"kept"`` (:func:`_choose_gating_scale`), or, when one scale left the
        passes early, the ``"epoch"`` after which it did, that epoch's held-out loss of
        each at its best temperature (``"epoch_losses"``) and the standard error of their
        paired difference (``"epoch_standard_error"``, :func:`_losing_scales`) with the
        factor ``"kept"``; None otherwise.
    """

    classes: np.ndarray
    feature_names: Sequence[str]
    xi: np.ndarray
    centers: np.ndarray
    coef: np.ndarray
    tau: float
    history: list[History]
    n_iter: int
    converged: bool
    online: OnlineState
    shift: np.ndarray
    scale: np.ndarray
    nu: float
    C: float
    validation: dict[str, Any] | None = None
    feature_transform: TailTransform | None = None
    proba_scale: float | None = None
    proba_rows: str | None = None
    loss: str = "hinge"
    multiclass: str = "ovr"
    multiclass_check: dict[str, Any] | None = None
    tau_check: dict[str, Any] | None = None

    @property
    def pairs(self) -> list[tuple[int, int]] | None:
        """One against one: each binary mixture's pair of class codes; else None."""
        return class_pairs(len(self.classes)) if self.multiclass == "ovo" else None

    @property
    def standardiser(self) -> Standardiser:
        """The standardisation as a :class:`~streamlearn.solvers.kmeans.Standardiser`."""
        return Standardiser(np.asarray(self.shift, dtype=np.float64),
                            np.asarray(self.scale, dtype=np.float64))


def class_pairs(n_classes: int) -> list[tuple[int, int]]:
    """The pairs ``(i, j)``, ``i < j``, of ``n_classes`` class codes, in the order
    ``(0, 1), (0, 2), .., (k - 2, k - 1)`` (scikit-learn's ``SVC``'s)."""
    return list(itertools.combinations(range(int(n_classes)), 2))


def _positives(n_classes: int, multiclass: str = "ovr") -> list[LaneLabels]:
    """The labels of each binary model's lane: the positive class code (two classes,
    one against the rest), or the pair of codes one against one."""
    if n_classes <= 2:
        return [1]
    if multiclass == "ovo":
        return list(class_pairs(n_classes))
    return list(range(n_classes))


def resolve_multiclass(multiclass: str, n_classes: int) -> tuple[str, bool]:
    """The scheme to train first and whether one-vs-one is then tried against it.

    ``"auto"``: one-vs-rest, and for 3 to :data:`MAX_AUTO_OVO_CLASSES` classes one-vs-one
    tried after it (:func:`_one_vs_one_if_better`), as ``AdditiveSVC``'s rule; two
    classes have one mixture either way, and more classes make one-vs-one's
    ``k (k - 1) / 2`` mixtures too many to train and predict with by default. Two classes
    train ``"ovr"`` (their single mixture) whatever is asked.
    """
    if int(n_classes) <= 2:
        return "ovr", False
    if multiclass == "auto":
        return "ovr", 3 <= int(n_classes) <= MAX_AUTO_OVO_CLASSES
    return multiclass, False


def gating_scale(centers: np.ndarray, factor: float = TAU_FACTOR) -> float:
    """``tau = factor / median_j min_{l != j} ||v_j - v_l||^2`` over the k-means centres.

    The gates of two neighbouring centres ``v_j``, ``v_l`` at distance ``D`` have the
    log-ratio ``2 tau D delta`` at ``delta`` from their mid-plane; with ``tau = c / D^2``
    it is ``c / 2`` half-way between the mid-plane and a centre (``delta = D / 4``),
    whatever the dimension or the number of centres. Duplicate centres (distance 0) are
    left out; with no two distinct centres, ``tau = 1``.

    Parameters
    ----------
    centers : ndarray of shape (k, d)
    factor : float
        ``c``, :data:`TAU_FACTOR` by default.

    Returns
    -------
    float
    """
    V = np.asarray(centers, dtype=np.float64)
    if V.shape[0] < 2:
        return 1.0
    # a centre at a time: k x d memory, where all pairs at once took k x k x d (7 GiB at
    # 30 centres of 2^20 hashed features); the same sums in the same order
    sq = np.stack([((V - v) ** 2).sum(axis=1) for v in V])
    np.fill_diagonal(sq, np.inf)
    nearest = sq.min(axis=1)
    nearest = nearest[np.isfinite(nearest) & (nearest > 0)]
    if nearest.size == 0:
        return 1.0
    return float(factor / np.median(nearest))


def default_components(n_rows: int, n_features: int | None = None) -> int:
    """``n_components="auto"``: ``round(sqrt(n))`` clipped to ``[10, cap]``, then to
    ``max(1, n // 30)``, ``cap = max(30, min(100, n // (15 (d + 1))))``; below 2,000 rows
    also to ``max(1, n // (5 (d + 1)))``.

    More local experts for more rows. The cap is 30, raised (up to 100) on data with many
    rows per feature, as far as an even split of the rows leaves each component's expert
    ``ROWS_PER_WEIGHT`` = 15 rows per weight (``d + 1`` with the bias): 16,000 rows of 16
    features get 62 components, 60,000 images of 784 pixels 30. Without ``n_features``
    the cap is 30. (At 10 rows per weight letter's test error fell further, 10.93 ->
    9.43 % at 94 components, but on noisy data of 32 features, 20,000 rows, the mixture's
    60 components tested 1 point worse than 30.) On small data every component keeps
    ``MIN_ROWS_PER_COMPONENT`` = 30 rows of an even split: 105 rows get 3 components, not
    10, and one component (a linear SVM) is left below 60 rows. (Eight 70/30 splits of
    iris, wine and breast cancer: 6.39 / 3.70 / 3.73 % test error with the lower bound of
    10 alone, 3.61 / 2.31 / 2.63 % with this one, a tuned linear SVM 4.44 / 2.31 / 2.85.)

    Below ``SMALL_DATA_ROWS`` = 2,000 rows, where the guard against a single linear expert
    has too few rows to hold out, an even split must also leave every expert
    ``SMALL_ROWS_PER_WEIGHT`` = 5 rows per weight: ``k <= max(1, n // (5 (d + 1)))``.
    Thirty experts of 101 weights on 1,400 rows fit their noise: on
    ``make_classification`` (2,000 rows, 100 features, 3 informative, five 70/30 splits)
    the test error was 31.2 %, logistic regression's 15.5 %; the two components of this
    rule give 18.2 % (one: 16.6 %, but digits, 1,257 training rows of 64 features and 10
    classes, then tests at 4.41 % where its 3 components give 3.56 and 30 gave 3.37, a
    tuned linear SVM 3.85).

    Parameters
    ----------
    n_rows : int
        Training rows ``n``.
    n_features : int, optional
        Features ``d``.

    Returns
    -------
    int
    """
    n = int(n_rows)
    k = int(np.rint(np.sqrt(max(n, 0))))
    cap = BASE_COMPONENTS
    if n_features is not None:
        per_component = ROWS_PER_WEIGHT * (int(n_features) + 1)
        cap = max(BASE_COMPONENTS, min(MAX_COMPONENTS, n // per_component))
    k = min(cap, max(MIN_COMPONENTS, k))
    k = min(k, n // MIN_ROWS_PER_COMPONENT)
    if n_features is not None and n < SMALL_DATA_ROWS:
        k = min(k, n // (SMALL_ROWS_PER_WEIGHT * (int(n_features) + 1)))
    return max(1, k)


def default_nu(n_features: int, n_rows: int | None = None,
               n_components: int | None = None) -> float:
    """``nu="auto"``: ``min(n_features + 1, n_rows / (2 n_components))``.

    A component that explains fewer rows than its expert has weights (bias included) is
    pruned, unless that is more than half of an even share of the rows: on wide data
    (images) ``n_features + 1`` can exceed every component's share, and the rule would
    prune an evenly split mixture down to one component. Without ``n_rows`` and
    ``n_components``: ``n_features + 1``.
    """
    nu = float(int(n_features) + 1)
    if n_rows is not None and n_components:
        nu = min(nu, float(n_rows) / (2.0 * int(n_components)))
    return nu


def default_C(sq_norm: float, bias_scale: float) -> float:
    """``C="auto"``: ``C_FACTOR / (sq_norm + bias_scale^2)``.

    ``sq_norm + bias_scale^2`` is the mean squared norm ``mean ||[z, b]||^2`` of a
    standardised row with its bias feature. Centred, each varying feature contributes its
    unit variance and a constant one nothing, so ``sq_norm`` is the number of varying
    features; for sparse rows, neither centred nor scaled, it is :func:`uncentred_sq_norm`.
    An SVM row's dual variable is bounded by ``C``, so its largest pull on the weights has
    the size ``C ||[z, b]||^2``: this rule keeps that pull at ``C_FACTOR`` whatever the
    number of features, where a fixed ``C`` lets the experts of wide data (images, one-hot
    tables) fit their rows' noise.

    Parameters
    ----------
    sq_norm : float
        Mean squared norm of a standardised row without its bias feature.
    bias_scale : float

    Returns
    -------
    float
    """
    return float(C_FACTOR / (max(float(sq_norm), 0.0) + float(bias_scale) ** 2 or 1.0))


def uncentred_sq_norm(moments: Moments, std: Standardiser) -> float:
    """Mean squared norm of ``z = x / scale``: ``sum_f (var_f + mean_f^2) / scale_f^2``.

    Parameters
    ----------
    moments : Moments
        The raw features' count, mean, squared deviations, minimum and maximum.
    std : Standardiser
        The scales (its shift is not used).

    Returns
    -------
    float
    """
    count, mean, m2 = int(moments[0]), np.asarray(moments[1]), np.asarray(moments[2])
    second = m2 / max(count, 1) + mean * mean
    return float(np.sum(second / np.square(std.scale)))


def resolve(config: MixtureConfig, n_rows: int, n_features: int) -> MixtureConfig:
    """``config`` with ``n_components`` and ``nu`` given as ``"auto"`` replaced by their
    values for a dataset of ``n_rows`` rows and ``n_features`` features."""
    k = (default_components(n_rows, n_features) if config.n_components == "auto"
         else int(config.n_components))
    nu = default_nu(n_features, n_rows, k) if config.nu == "auto" else float(config.nu)
    return dataclasses.replace(config, n_components=k, nu=nu)


def fit(runner: Any, dataset: Dataset, config: MixtureConfig, seed: int) -> MixtureFit:
    """Initialise and run EM on every binary mixture of a classification dataset.

    Parameters
    ----------
    runner : engine
        Runs the passes.
    dataset : Dataset
        With a classification target.
    config : MixtureConfig
    seed : int

    Returns
    -------
    MixtureFit

    Notes
    -----
    The guard (stochastic EM with ``validation_fraction`` set, more than one component and
    at least ``MIN_VALIDATION_ROWS`` rows expected in the held-out share): the rows a
    :class:`~streamlearn.solvers.holdout.Holdout` picks are left out of training, and a
    one-component lane per binary mixture, i.e. a linear SVM on the same standardised
    features and with the same ``C``, trains in the same passes. Every epoch scores the
    held-out rows with both classifiers before each chunk trains them (the stopping rule);
    after the last epoch one more pass scores both on the held-out rows, and the mixture
    is kept when both its weighted held-out error and the held-out log-loss of its class
    probabilities are below the linear SVM's, else the linear SVM (:func:`_guard_choice`).
    With ``tau="auto"`` the mixture is trained at the scale of each factor of
    :data:`TAU_FACTORS` (:func:`gating_candidates`), the held-out rows keep one
    (:func:`_choose_gating_scale`), and the guard compares that one with the linear SVM.
    """
    classes = dataset.classes
    assert classes is not None
    transform = None
    weigh = (config.weight_features and not dataset.is_sparse
             and 2 <= dataset.n_features <= MAX_RELEVANCE_FEATURES)
    labelled: tuple[np.ndarray, np.ndarray] | None = None
    if weigh or (config.spread_tails and not dataset.is_sparse):
        # the rows kmeans.RowSamplePass draws with this seed, with their labels
        moments, labelled = runner.run(
            Together(FeatureMomentsPass(dataset.n_features),
                     LabelledSamplePass(TAIL_SAMPLE_ROWS, dataset.n_features, seed)),
            dataset, description="feature moments")
    else:
        moments = runner.run(FeatureMomentsPass(dataset.n_features), dataset,
                             description="feature moments")
    if config.spread_tails and labelled is not None:
        sample = labelled[0]
        transform = choose_tail_transform(
            dataset, sample, moments.minimum, moments.maximum,
            np.sqrt(np.asarray(moments.m2, dtype=np.float64) / max(int(moments.count), 1)))
        if transform is not None:  # standardised as the mapped rows are
            dataset = dataset.with_feature_transform(transform)
            moments = runner.run(FeatureMomentsPass(dataset.n_features), dataset,
                                 description="feature moments of the mapped rows")
    # the rows of positive weight: a row of weight 0 is no row, not even in the counts
    n_rows = int(moments.count)
    config = resolve(config, n_rows, dataset.n_features)
    k = int(config.n_components)
    if n_rows < k:
        raise DataError(f"n_components={k} needs at least {k} training rows of positive "
                        f"weight, the data has {n_rows}")
    sparse_scale = None
    if dataset.is_sparse:  # kmeans.SPARSE_UNITS: scaled only, as they are read
        sparse_scale = Standardiser.of_units_apart(moments.minimum, moments.maximum)
        dataset = dataset.with_feature_transform(sparse_scale)
    std = (Standardiser.identity(dataset.n_features) if dataset.is_sparse
           else Standardiser.from_moments(*moments))
    indicators = list(dataset.indicator_features)
    # the features that vary, indicators left out (a constant one is 0 once standardised)
    varies = np.asarray(moments[4]) > np.asarray(moments[3])
    varies[indicators] = False
    weights = np.ones(dataset.n_features)
    if weigh and labelled is not None and k > 1:  # for the gates; quantile bins: the
        # same on the mapped rows; a constant feature keeps 1
        plain = np.flatnonzero(varies)
        if plain.size:
            weights[plain] = relevance_weights(feature_relevance(
                labelled[0][:, plain], labelled[1], len(classes)))
        std = Standardiser(std.shift, std.scale / weights)
    std = std.unscaled(indicators) if indicators else std  # one-hot columns
    config = dataclasses.replace(config, loss=resolve_loss(config.loss, len(classes)))
    if config.C == "auto":
        if sparse_scale is not None:
            sq_norm = uncentred_sq_norm(moments, sparse_scale)
        else:  # every varying feature's unit variance, the indicators' own variances
            variance = np.asarray(moments[2], dtype=np.float64) / max(int(moments[0]), 1)
            sq_norm = (float(np.sum(weights[varies] ** 2))
                       + float(np.sum(variance[indicators])))
        config = dataclasses.replace(config, C=default_C(sq_norm, config.bias_scale))
    if not dataset.is_sparse and runs_here(runner):
        # the E-step's, the scoring's and the gates' kernels, while this process compiles
        # the experts' and the gates' log-probabilities
        compile_ahead([KernelCall(name, (dataset.n_features, k)) for name in (
            "mixture_posteriors", "mixture_log_odds", "mixture_gating_terms")])
    centers = streamed_kmeans(dataset, k, engine=runner, epochs=KMEANS_EPOCHS, seed=seed,
                              standardiser=std)
    holdout = _validation_rows(config, n_rows, k, seed)
    taus = gating_candidates(centers, config.tau, holdout is not None)
    scheme, try_ovo = resolve_multiclass(config.multiclass, len(classes))
    config = dataclasses.replace(config, multiclass=scheme)
    fitted = _fit_scheme(runner, dataset, config, centers, seed, taus, std, holdout,
                         transform)
    if try_ovo:
        fitted = _one_vs_one_if_better(runner, dataset, config, centers, seed, fitted.tau,
                                       std, holdout, transform, fitted)
    if sparse_scale is not None:  # trained on the scaled rows: the model scales its input
        fitted = dataclasses.replace(fitted, scale=np.asarray(sparse_scale.scale))
    return fitted


def gating_candidates(centers: np.ndarray, tau: float | str, held_out: bool) -> list[float]:
    """The gating scales trained: ``tau`` given as a number; for ``"auto"`` the scale of
    each factor of :data:`TAU_FACTORS` (:func:`gating_scale`) when the guard holds out rows
    to choose among them (``held_out``; distinct scales only), else of
    :data:`TAU_FACTOR` alone."""
    if tau != "auto":
        return [float(tau)]
    if not held_out:
        return [gating_scale(centers)]
    taus = [gating_scale(centers, factor) for factor in TAU_FACTORS]
    return taus if len(set(taus)) == len(taus) else taus[:1]


def _fit_scheme(runner: Any, dataset: Dataset, config: MixtureConfig, centers: np.ndarray,
                seed: int, tau: float | Sequence[float], std: Standardiser,
                holdout: Holdout | None, transform: TailTransform | None) -> MixtureFit:
    """The binary mixtures of ``config.multiclass`` (resolved) from the k-means centres
    (at the gating scale chosen among ``tau``'s, :func:`_fit_binaries`), and their
    probability scale."""
    classes = dataset.classes
    assert classes is not None
    fits, validation, tau_check = _fit_binaries(runner, dataset, config, centers,
                                                len(classes), seed, tau, std, holdout)
    fitted = dataclasses.replace(_assemble(dataset, config, fits, std, validation, transform),
                                 tau_check=tau_check)
    scale, rows = probability_scale(runner, dataset, fitted, config.bias_scale, holdout)
    return dataclasses.replace(fitted, proba_scale=scale, proba_rows=rows)


def _assemble(dataset: Dataset, config: MixtureConfig, fits: list[BinaryFit],
              std: Standardiser, validation: dict[str, Any] | None,
              transform: TailTransform | None) -> MixtureFit:
    """The binary fits of ``config.multiclass`` as one model (at their gating scale,
    without a probability scale)."""
    classes = dataset.classes
    assert classes is not None
    ovo = config.multiclass == "ovo" and len(classes) > 2
    seen: float | np.ndarray = (np.array([f.total_weight for f in fits]) if ovo
                                else fits[0].total_weight)
    online = OnlineState(np.stack([f.resp for f in fits]), max(f.steps for f in fits),
                         seen, 0, np.stack([f.dual_sums for f in fits]))
    names = dataset.feature_names if dataset.is_sparse else tuple(dataset.feature_names)
    return MixtureFit(classes, names,
                      np.stack([f.params.xi for f in fits]),
                      np.stack([f.params.V for f in fits]),
                      np.stack([f.params.W for f in fits]), fits[0].tau,
                      [f.history for f in fits], max(f.n_iter for f in fits),
                      all(f.converged for f in fits), online, std.shift, std.scale,
                      float(config.nu), float(config.C), validation, transform,
                      loss=config.loss, multiclass="ovo" if ovo else "ovr")


def class_probabilities(model: MixtureFit, f: np.ndarray) -> np.ndarray:
    """Class probabilities from the binary mixtures' log-odds ``f`` (n, n_models):
    ``softmax(s f)`` (two classes: the logistic of ``s f``), or one against one the
    pairs' logistic functions of ``s_t f_t`` coupled
    (:func:`~streamlearn.solvers.pairwise_coupling.couple_pairwise`); ``s`` the model's
    ``proba_scale`` (1 when None)."""
    f = np.asarray(f, dtype=np.float64)
    scale = 1.0 if model.proba_scale is None else model.proba_scale
    pairs = model.pairs
    if pairs is None:
        return temperature_proba(f[:, 0] if f.shape[1] == 1 else f, float(scale))
    return coupled_proba(f, np.broadcast_to(np.asarray(scale, dtype=np.float64),
                                            (f.shape[1],)), pairs, len(model.classes))


def coupled_proba(f: np.ndarray, scale: np.ndarray, pairs: Sequence[tuple[int, int]],
                  n_classes: int) -> np.ndarray:
    """Pairwise coupling of ``P(i | i or j) = 1 / (1 + exp(-s_t f_t))`` over the pairs
    ``t = (i, j)``."""
    r = sigmoid_proba(np.asarray(f, dtype=np.float64), -np.asarray(scale)[None, :], 0.0)
    first = np.array([i for i, _ in pairs], dtype=np.int64)
    second = np.array([j for _, j in pairs], dtype=np.int64)
    return couple_pairwise(r, first, second, int(n_classes))


def pair_decision(model: MixtureFit, f: np.ndarray) -> np.ndarray:
    """One against one: each class's votes from the pairs (the sign of their log-odds)
    plus half its coupled probability, a tie-break (``AdditiveSVC``'s and scikit-learn's
    ``SVC``'s ``decision_function_shape="ovr"``), shape (n, n_classes)."""
    pairs = model.pairs
    assert pairs is not None
    first = np.array([i for i, _ in pairs], dtype=np.int64)
    second = np.array([j for _, j in pairs], dtype=np.int64)
    k = len(model.classes)
    winner = np.where(np.asarray(f) > 0, first[None, :], second[None, :])
    votes = (winner[:, :, None] == np.arange(k)[None, None, :]).sum(axis=1)
    return votes + 0.5 * class_probabilities(model, f)


def held_out_log_loss(model: MixtureFit, f: np.ndarray, codes: np.ndarray,
                      weight: np.ndarray) -> float:
    """Weighted mean log-loss of the model's class probabilities at rows of log-odds
    ``f`` and class ``codes`` (probabilities floored at 1e-15, as scikit-learn's
    ``log_loss`` clips them)."""
    return float(np.asarray(weight, dtype=np.float64) @ row_log_losses(
        class_probabilities(model, f), codes) / max(float(np.sum(weight)), 1e-300))


def row_log_losses(proba: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``-log`` of each row's probability of its class (floored at 1e-15, as
    scikit-learn's ``log_loss`` clips it)."""
    return -np.log(np.clip(proba[np.arange(len(codes)), codes], 1e-15, 1.0))


def held_out_scales(model: MixtureFit, f: np.ndarray, codes: np.ndarray,
                    weight: np.ndarray) -> float | np.ndarray:
    """The temperatures :func:`probability_scale` chooses on held-out rows, chosen on the
    rows of log-odds ``f`` given here: the one of ``softmax(s f)``, or one against one each
    pair's on the rows of its two classes; where these rows have none (of a pair's
    classes), the model's own."""
    w = np.asarray(weight, dtype=np.float64)
    n_classes = len(model.classes)
    pairs = model.pairs
    if pairs is None:
        sums = TemperatureSums(n_classes).add(f, codes, w)
        return (best_temperature(sums.losses(smoothed=False)) if sums.total_weight > 0
                else float(np.asarray(model.proba_scale)))
    own = np.broadcast_to(np.asarray(model.proba_scale, dtype=np.float64), (len(pairs),))
    scales = own.copy()
    for t, (i, j) in enumerate(pairs):
        inside = np.flatnonzero((codes == i) | (codes == j))
        if inside.size == 0:
            continue
        sums = TemperatureSums(2).add(f[inside, t], (codes[inside] == i).astype(np.int64),
                                      w[inside])
        if sums.total_weight > 0:
            scales[t] = best_temperature(sums.losses(smoothed=False))
    return scales


def cross_fitted_row_losses(model: MixtureFit, f: np.ndarray, codes: np.ndarray,
                            weight: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Each held-out row's log-loss of the model's class probabilities with the
    temperatures cross-fitted: the rows of each half (``half`` True or False) scored with
    the temperatures :func:`held_out_scales` chooses on the other half.

    A temperature chosen on the rows it is then judged on is optimistic, the more so the
    more there are and the fewer rows each has: one-vs-one's pair of classes that the
    held-out rows happen to separate gets the largest scale, a log-loss near 0 on those
    rows and about 34.5 (the floor 1e-15) on a new row the pair gets wrong.
    """
    out = np.empty(len(codes))
    for part in (half, ~half):
        if part.any():
            rest = ~part
            scales = held_out_scales(model, f[rest], codes[rest], weight[rest])
            out[part] = row_log_losses(
                class_probabilities(dataclasses.replace(model, proba_scale=scales),
                                    f[part]), codes[part])
    return out


def _one_vs_one_if_better(runner: Any, dataset: Dataset, config: MixtureConfig,
                          centers: np.ndarray, seed: int, tau: float, std: Standardiser,
                          holdout: Holdout | None, transform: TailTransform | None,
                          ovr: MixtureFit) -> MixtureFit:
    """``multiclass="auto"`` with 3 to :data:`MAX_AUTO_OVO_CLASSES` classes: ``ovr``, or
    the same settings trained one against one when its class probabilities (as
    ``predict_proba`` gives them) have a clearly lower weighted log-loss on the guard's
    held-out rows, with the temperatures cross-fitted; either carries
    ``multiclass_check``.

    The one-vs-one mixtures start from the same standardisation, k-means centres and
    gating scale, with the same held-out rows. One more pass scores both on the
    held-out rows, which a hash of the row number (seeded by ``seed``) splits in two
    halves: each half is scored with the temperatures chosen on the other
    (:func:`cross_fitted_row_losses`; each model keeps the ones of every held-out row),
    so that one-vs-one's ``k (k - 1) / 2`` temperatures, one-vs-rest's one, gain nothing
    by fitting the rows they are judged on. One-vs-one is kept when its weighted mean
    loss is below one-vs-rest's by more than :data:`OVO_GAIN_STANDARD_ERRORS` standard
    errors of the difference, ``sqrt(sum_i w_i^2 (d_i - d)^2) / sum_i w_i`` over the rows'
    paired differences ``d_i`` of mean ``d``: the held-out rows also chose each mixture's
    epochs and its linear fallback, which favours the scheme of more mixtures, and
    one-vs-rest is the cheaper (``k`` mixtures, fewer passes). ``multiclass_check`` holds
    both cross-fitted losses, the standard error and the scheme kept. Without the guard's
    held-out rows (fewer than ``MIN_VALIDATION_ROWS`` expected, batch EM, one component,
    ``validation_fraction=None``) or with a temperature chosen on the training rows,
    one-vs-rest is kept untried (``"reason"`` says why).
    """
    if holdout is None or ovr.proba_rows != "held-out":
        reason = ("no held-out rows to compare one-vs-one on (the guard of "
                  "validation_fraction did not run)" if holdout is None
                  else "no held-out rows of a class to calibrate on")
        return dataclasses.replace(ovr, multiclass_check={
            "kept": "ovr", "ovr": None, "ovo": None, "reason": reason})
    ovo = _fit_scheme(runner, dataset, dataclasses.replace(config, multiclass="ovo"),
                      centers, seed, tau, std, holdout, transform)
    ovo = dataclasses.replace(ovo, tau_check=ovr.tau_check)
    scores, codes, weight, rows = runner.run(
        HeldOutScoresPass([(m.xi, m.centers, m.coef, m.loss) for m in (ovr, ovo)],
                          [ovr.tau, ovo.tau], config.bias_scale, std, holdout),
        dataset, description="held-out log-loss of both schemes")
    if ovo.proba_rows != "held-out":
        return dataclasses.replace(ovr, multiclass_check={
            "kept": "ovr", "ovr": held_out_log_loss(ovr, scores[0], codes, weight),
            "ovo": None, "reason": "no held-out rows of a pair's class to calibrate on"})
    half = cross_fit_halves(rows, seed)
    losses = [cross_fitted_row_losses(m, f, codes, weight, half)
              for m, f in zip((ovr, ovo), scores, strict=True)]
    total = max(float(weight.sum()), 1e-300)
    mean = [float(weight @ loss) / total for loss in losses]
    diff = losses[0] - losses[1]
    se = float(np.sqrt(np.sum(weight ** 2 * (diff - (mean[0] - mean[1])) ** 2))) / total
    kept = "ovo" if mean[0] - mean[1] > OVO_GAIN_STANDARD_ERRORS * se else "ovr"
    check: dict[str, Any] = {"kept": kept, "ovr": mean[0], "ovo": mean[1],
                             "standard_error": se}
    return dataclasses.replace(ovo if kept == "ovo" else ovr, multiclass_check=check)


def cross_fit_halves(rows: np.ndarray, seed: int) -> np.ndarray:
    """Which half of ``multiclass="auto"``'s cross-fitted comparison each held-out row
    (global row id) falls in: a hash of the row id, seeded by ``seed``."""
    return Holdout.fraction(0.5, int(seed) ^ CROSS_FIT_SALT).mask(rows)


def resolve_loss(loss: str, n_classes: int) -> str:
    """The experts' loss: ``loss``, or for ``"auto"`` the squared hinge with more than two
    classes and the paper's hinge with two.

    One-vs-rest, the hinge's best expert for a class that no hyperplane cuts off (a middle
    class of ordered labels) is the constant ``w = 0, b = -1``: several such mixtures tie
    at equal log-odds and round-off picks among them. The squared hinge tilts those
    experts as liblinear's default does. Measured with ``bench/out_of_the_box.py`` (20,000
    rows) and ``bench/small_data.py``: every multiclass set's error fell or stayed within
    a split's spread, two-class adult's rose from 14.7 % to 15.9 %.
    """
    if loss != "auto":
        return loss
    return "squared_hinge" if n_classes > 2 else "hinge"


def probability_scale(runner: Any, dataset: Dataset, model: MixtureFit, bias_scale: float,
                      holdout: Holdout | None) -> tuple[float, str]:
    """The temperature ``s`` of the class probabilities ``softmax(s f)``, ``f`` the
    mixtures' log-odds, and the rows it was chosen on: the scale of lowest log-loss on
    the guard's held-out rows (one more pass), else on every training row against
    Platt's smoothed targets (:class:`~streamlearn.solvers.calibration.TemperatureSums`,
    which keep rows that every scale separates, as training rows of a flexible model
    are, from driving it to infinity).

    Each one-vs-rest mixture's log-odds is a probability of its own class against the
    rest; normalising the ``K`` logistic functions of them, as eq. 21 read per class
    would, leaves every other class with a share of the mass (letter's 26 classes: test
    log-loss 1.41, an expected calibration error of 0.60, ``bench/probabilities.py``). One
    scale of a softmax keeps each
    decision (the largest log-odds, or its sign for two classes) and fits the
    probabilities to rows the experts did not train on.
    """
    n_classes = len(model.classes)
    if model.pairs is not None:
        return _pair_scales(runner, dataset, model, bias_scale, holdout)
    sums: TemperatureSums = runner.run(
        TemperaturePass(model.xi, model.centers, model.coef, model.tau, bias_scale,
                        model.standardiser, holdout, n_classes, model.loss),
        dataset, description="probability scale")
    if holdout is not None and sums.total_weight > 0:
        return best_temperature(sums.losses(smoothed=False)), "held-out"
    if holdout is not None:  # nothing held out after all: every row
        sums = runner.run(TemperaturePass(model.xi, model.centers, model.coef, model.tau,
                                          bias_scale, model.standardiser, None, n_classes,
                                          model.loss),
                          dataset, description="probability scale")
    return best_temperature(sums.losses()), "training"


def _pair_scales(runner: Any, dataset: Dataset, model: MixtureFit, bias_scale: float,
                 holdout: Holdout | None) -> tuple[np.ndarray, str]:
    """One against one: each pair's temperature ``s_t`` of ``1 / (1 + exp(-s_t f_t))``,
    chosen as :func:`probability_scale` chooses one, on the rows of the pair's two
    classes (every pair on the held-out rows when each has some, else every pair on
    the training rows)."""
    def sums_on(rows: Holdout | None) -> list[TemperatureSums]:
        return runner.run(TemperaturePass(model.xi, model.centers, model.coef, model.tau,
                                          bias_scale, model.standardiser, rows,
                                          len(model.classes), model.loss, model.pairs),
                          dataset, description="probability scales")

    if holdout is not None:
        sums = sums_on(holdout)
        if all(t.total_weight > 0 for t in sums):
            return np.array([best_temperature(t.losses(smoothed=False)) for t in sums]), \
                "held-out"
    sums = sums_on(None)
    return np.array([best_temperature(t.losses()) for t in sums]), "training"


def partial_pass(runner: Any, dataset: Dataset, config: MixtureConfig, model: MixtureFit,
                 seed: int, weight: float | np.ndarray) -> MixtureFit:
    """One stochastic EM pass over a dataset's rows, continuing from ``model``.

    The chunks are visited in a seeded random order; eq. 20's counts are the running mean
    posteriors times the weight of all rows seen so far. The experts take dual coordinate
    steps on the objective of every row read so far, a row read in ``m`` passes counted
    ``m`` times: the dual variables of the earlier training are folded into each expert
    as one block (:class:`~streamlearn.solvers.mixture.passes.FoldedDuals`, their sums
    ``model.online.dual_sums``; on a model from before those, ``||w_j||^2``, their sum
    had the earlier rows no hinge loss), whose scale is stepped between rounds of sweeps;
    the new rows' dual variables start at zero, and each chunk is swept until its largest
    projected gradient is at most ``FOLDED_PG_TOL``. Without the folded block's scale and
    the tolerance, every call was a proximal step around the old experts that could never
    shrink them, under-solved from zero: repeated calls over the same rows lost accuracy.

    Parameters
    ----------
    runner : engine
    dataset : Dataset
        Coded with ``model.classes``.
    config : MixtureConfig
    model : MixtureFit
    seed : int
    weight : float or ndarray
        Total sample weight of the dataset's rows (one against one, each pair's comes
        from one more pass, of the class weights).

    Returns
    -------
    MixtureFit
        With one more history entry per binary model (the call's, with its ``call``
        number; beyond the last :data:`PARTIAL_HISTORY` calls' the oldest call's entry is
        dropped) and ``n_iter`` one larger.
    """
    online = model.online
    std = model.standardiser
    # a number set since the model was made (set_params between calls) takes effect;
    # "auto" keeps the value it was resolved to
    C = model.C if isinstance(config.C, str) else float(config.C)
    config = dataclasses.replace(config, n_components=model.xi.shape[1], nu=model.nu, C=C,
                                 loss=model.loss)
    positives = _positives(len(model.classes), model.multiclass)
    if model.pairs is not None:  # each pair's weight: of its two classes' rows
        counts: ClusterCounts = runner.run(
            ClusterCountPass(np.zeros((1, model.centers.shape[-1])), len(model.classes),
                             std), dataset, description="class weights")
        weight = np.array([float(counts.binary(p).sum()) for p in positives])
    seen = online.seen_weight + weight
    k = model.xi.shape[1]
    sums = (online.dual_sums if online.dual_sums is not None  # a model from before them:
            else np.einsum("mkj,mkj->mk", model.coef, model.coef))  # the bound at a zero loss
    starts = [StochasticState(
        MixtureParams(model.xi[m], model.centers[m], model.coef[m]).copy(),
        online.resp[m].copy(), online.steps, dual_sum=np.zeros(k),
        fold=FoldedDuals(np.array(model.coef[m], dtype=np.float64),
                         np.array(sums[m], dtype=np.float64), np.ones(k)))
        for m in range(len(positives))]
    with contextlib.ExitStack() as stack:
        alphas = [stack.enter_context(ExampleState(dataset.n_rows, k)) for _ in positives]
        states = runner.run(
            StochasticEpochPass(positives, float(config.C), float(model.tau),
                                float(config.nu), float(config.bias_scale), seen, alphas,
                                [(_lane_seed(seed, m)) * 1000003 + 37 + online.calls
                                 for m in range(len(positives))], starts, std,
                                loss=model.loss),
            dataset, shuffle=True, seed=seed, epoch=online.calls,
            description="stochastic EM (partial_fit)").lanes
    history = [_partial_history(model.history[m], {
        **_record(config, state.loglik, state.params), "call": online.calls + 1})
        for m, state in enumerate(states)]
    return MixtureFit(model.classes, model.feature_names,
                      np.stack([s.params.xi for s in states]),
                      np.stack([s.params.V for s in states]),
                      np.stack([s.params.W for s in states]), model.tau, history,
                      model.n_iter + 1, model.converged,
                      OnlineState(np.stack([s.resp for s in states]),
                                  max(s.t for s in states), seen, online.calls + 1,
                                  np.stack([s.fold.scale * s.fold.sums + s.dual_sum
                                            for s in states])),
                      model.shift, model.scale, model.nu, C, model.validation,
                      model.feature_transform, model.proba_scale, model.proba_rows,
                      model.loss, model.multiclass, tau_check=model.tau_check)


def _partial_history(history: History, entry: dict[str, float]) -> History:
    """``history`` with ``entry`` (a ``partial_fit`` call's, holding its ``call`` number)
    added: the entries of ``fit`` (without ``call``) are all kept, those of the calls the
    last :data:`PARTIAL_HISTORY`."""
    fit = [h for h in history if "call" not in h]
    calls = [h for h in history if "call" in h]
    return [*fit, *calls[-(PARTIAL_HISTORY - 1):], entry]


def _lane_seed(seed: int, m: int) -> int:
    """Seed of the ``m``-th lane's coordinate-descent orders (lane 0: the fit's own seed)."""
    return int(seed) + 7919 * int(m)


def _validation_rows(config: MixtureConfig, n_rows: int, k: int,
                     seed: int) -> Holdout | None:
    """The guard's held-out rows, or None when the guard does not run (see :func:`fit`)."""
    fraction = config.validation_fraction
    if (fraction is None or config.em != "stochastic" or k < 2
            or float(fraction) * int(n_rows) < MIN_VALIDATION_ROWS):
        return None
    return Holdout.fraction(float(fraction), seed ^ VALIDATION_SALT)


@dataclass(frozen=True)
class _Lane:
    # one binary mixture trained by the shared passes: its positive class, whether it is
    # the guard's one-component linear expert, its seed
    positive: LaneLabels
    linear: bool
    seed: int


def _initial_mixtures(runner: Any, dataset: Dataset, config: MixtureConfig,
                      centers: np.ndarray, lanes: list[_Lane], seed: int,
                      alphas: list[ExampleState], std: Standardiser,
                      holdout: Holdout | None) -> tuple[list[MixtureParams], list[np.ndarray],
                                                        list[float], list[np.ndarray]]:
    """Sec. III-D: one expert per k-means cluster, for every lane in the same passes (a
    linear lane: one cluster, at the standardised mean).

    Returns each lane's parameters, its mask of constant (single-class) experts, the
    sample weight of its training rows (a pair's: of its two classes) and its sums of
    the dual variables per expert.
    """
    d = centers.shape[1]
    C, bs = float(config.C), float(config.bias_scale)
    classes = dataset.classes
    n_classes = max(2, len(classes) if classes is not None else 2)
    counts: ClusterCounts = runner.run(ClusterCountPass(centers, n_classes, std, holdout),
                                       dataset, description="cluster classes")
    overall = ClusterCounts(counts.counts.sum(axis=0, keepdims=True))
    one = np.zeros((1, d))
    params, constant, totals = [], [], []
    for lane in lanes:
        lane_counts = overall if lane.linear else counts
        binary = lane_counts.binary(lane.positive)
        totals.append(float(binary.sum()))
        mixed = (binary > 0).all(axis=1)
        W = np.zeros((len(mixed), d + 1))
        # Sec. III-D: a single-class cluster starts as the constant expert +/- e_{d+1}
        sign = np.where(binary[:, 1] > 0, 1.0, -1.0)
        W[~mixed, d] = sign[~mixed] / (bs if bs > 0 else 1.0)
        mass = binary.sum(axis=1)
        params.append(MixtureParams(mixing_weights(mass, 0.0, mass > 0),
                                    np.array(one if lane.linear else centers,
                                             dtype=np.float64), W))
        constant.append(~mixed)
    lane_centers = [one if lane.linear else centers for lane in lanes]
    dual_sums = [np.zeros(c.shape[0]) for c in lane_centers]
    for epoch in range(INIT_EXPERT_PASSES):
        state: ExpertState = runner.run(
            InitialExpertPass(lane_centers, [~c for c in constant],
                              [lane.positive for lane in lanes], C, bs, alphas,
                              [lane.seed * 1000003 + epoch for lane in lanes],
                              [p.W for p in params], std, holdout, config.loss),
            dataset, shuffle=True, seed=seed, epoch=epoch,
            description=f"initial experts {epoch + 1}/{INIT_EXPERT_PASSES}")
        for p, W in zip(params, state.W, strict=True):
            p.W = W
        for sums, change in zip(dual_sums, state.dual_change, strict=True):
            sums += change
    return params, constant, totals, dual_sums


def _fit_binaries(runner: Any, dataset: Dataset, config: MixtureConfig, centers: np.ndarray,
                  n_classes: int, seed: int, tau: float | Sequence[float], std: Standardiser,
                  holdout: Holdout | None, first_lane: int = 0
                  ) -> tuple[list[BinaryFit], dict[str, Any] | None, dict[str, Any] | None]:
    """Every binary mixture (one, one per class against the rest or one per pair of
    classes): the initialisation and stochastic EM read each chunk once for all of them
    (and for the guard's linear lanes); batch EM runs them in turn. Returns the kept fits,
    the guard's outcome and the choice of the gating scale. The mixtures' seeds are those
    of lanes ``first_lane``, ``first_lane + 1``, .. (:func:`_lane_seed`): a binary training
    can repeat one lane of a wider one.

    With several gating scales ``tau`` (:func:`gating_candidates`) and the guard's held-out
    rows, stochastic EM trains the mixtures at every scale as lanes of the same passes
    (each scale's lanes with the seeds of the first's); a scale clearly behind the other
    on an epoch's held-out rows leaves the later passes (:func:`_losing_scales`) and the
    other is kept, else :func:`_choose_gating_scale` keeps one; the guard compares its
    held-out error with the linear SVM's (:func:`_guard_choice`). Otherwise the
    first scale alone is trained, and the choice is None.
    """
    k = centers.shape[0]
    positives = _positives(n_classes, config.multiclass)
    n = len(positives)
    taus = [float(t) for t in np.atleast_1d(np.asarray(tau, dtype=np.float64))]
    if holdout is None or config.em != "stochastic":
        taus = taus[:1]
    lanes = [_Lane(p, False, _lane_seed(seed, first_lane + m))
             for _ in taus for m, p in enumerate(positives)]
    lane_taus = [t for t in taus for _ in positives]
    if holdout is not None:
        lanes += [_Lane(p, True, _lane_seed(seed, n + m)) for m, p in enumerate(positives)]
        lane_taus += [taus[0]] * n  # one component: its gate is 1 at any scale
    with contextlib.ExitStack() as stack:
        alphas = [stack.enter_context(ExampleState(dataset.n_rows, 1 if lane.linear else k))
                  for lane in lanes]
        params, constant, totals, dual_sums = _initial_mixtures(
            runner, dataset, config, centers, lanes, seed, alphas, std, holdout)
        if config.em == "stochastic":
            n_mix = n * len(taus)
            groups = ([list(range(c * n, (c + 1) * n)) for c in range(len(taus) + 1)]
                      if holdout is not None else [])
            fits, _, drops = _stochastic_em(
                runner, dataset, config, params, constant, [lane.positive for lane in lanes],
                lane_taus, totals, alphas, seed, [lane.seed for lane in lanes], std, holdout,
                groups, n_mix, dual_sums, n_classes, n_mixture_groups=len(taus))
            if holdout is None:
                return fits, None, None
            chosen, tau_check = 0, None
            if drops:  # one scale left the passes early: the other is kept
                chosen = 1 - int(drops[0]["dropped"])
                factors = [float(f) for f in TAU_FACTORS[:len(taus)]]
                tau_check = {"kept": factors[chosen], "factors": factors, "taus": taus,
                             **{k: v for k, v in drops[0].items() if k != "dropped"}}
            elif len(taus) > 1:
                chosen, tau_check = _choose_gating_scale(
                    runner, dataset, config, [fits[c * n:(c + 1) * n] for c in range(len(taus))],
                    std, holdout, seed)
            validation = _guard_choice(runner, dataset, config,
                                       fits[chosen * n:(chosen + 1) * n], fits[n_mix:],
                                       std, holdout, seed)
            if validation["kept"] == "mixture":
                return fits[chosen * n:(chosen + 1) * n], validation, tau_check
            linear, gap = _finish_linear(runner, dataset, config, fits[n_mix:],
                                         lanes[n_mix:], alphas[n_mix:], seed, std)
            validation["duality_gap"] = gap
            return ([dataclasses.replace(f, tau=taus[chosen]) for f in linear], validation,
                    tau_check)
        fits = []
        for m, positive in enumerate(positives):
            history: History = []
            fitted, n_iter, converged = _batch_em(
                runner, dataset, config, params[m], constant[m], positive, taus[0],
                alphas[m], lanes[m].seed, history, std, dual_sums[m])
            fits.append(BinaryFit(fitted, history, n_iter, converged, fitted.xi.copy(),
                                  n_iter * dataset.n_chunks, totals[m], taus[0],
                                  dual_sums[m]))
        return fits, None, None


def _choose_gating_scale(runner: Any, dataset: Dataset, config: MixtureConfig,
                         candidates: list[list[BinaryFit]], std: Standardiser,
                         holdout: Holdout, seed: int) -> tuple[int, dict[str, Any]]:
    """``tau="auto"``: which of the mixtures trained at the gating scales of
    :data:`TAU_FACTORS` to keep, by the log-loss of their class probabilities on the
    guard's held-out rows.

    One pass scores every candidate on the held-out rows; each row's log-loss is taken
    with the temperatures cross-fitted as ``multiclass="auto"``'s comparison takes them
    (:func:`cross_fitted_row_losses`: each half of the rows scored at the temperature of
    lowest log-loss on the other half). The first candidate (:data:`TAU_FACTOR`) is kept
    unless another's weighted mean loss is below its own by more than
    :data:`TAU_GAIN_STANDARD_ERRORS` standard errors of the rows' paired differences,
    ``sqrt(sum_i w_i^2 (d_i - d)^2) / sum_i w_i``; of those that are, the one of lowest
    loss. The held-out rows also chose each candidate's epochs, which the margin allows
    for, and the default's gates are the ones the other settings were measured with.

    Returns the index of the candidate kept and the record of the choice (``tau_check``,
    see :class:`MixtureFit`).
    """
    models = [_assemble(dataset, config, fits, std, None, None) for fits in candidates]
    models = [dataclasses.replace(m, proba_scale=1.0) for m in models]
    scores, codes, weight, rows = runner.run(
        HeldOutScoresPass([(m.xi, m.centers, m.coef, m.loss) for m in models],
                          [m.tau for m in models], config.bias_scale, std, holdout),
        dataset, description="held-out log-loss of each gating scale")
    half = cross_fit_halves(rows, seed)
    losses = [cross_fitted_row_losses(m, f, codes, weight, half)
              for m, f in zip(models, scores, strict=True)]
    total = max(float(weight.sum()), 1e-300)
    mean = [float(weight @ loss) / total for loss in losses]
    errors = []
    for loss, m in zip(losses, mean, strict=True):
        diff = losses[0] - loss
        errors.append(float(np.sqrt(np.sum(weight ** 2 * (diff - (mean[0] - m)) ** 2)))
                      / total)
    clear = [c for c in range(1, len(models))
             if mean[0] - mean[c] > TAU_GAIN_STANDARD_ERRORS * errors[c]]
    chosen = min(clear, key=lambda c: mean[c]) if clear else 0
    factors = [float(f) for f in TAU_FACTORS[:len(models)]]
    return chosen, {"kept": factors[chosen], "factors": factors,
                    "taus": [float(m.tau) for m in models], "losses": mean,
                    "standard_errors": errors}


def _losing_scales(tally: EpochState, live: list[int], n_mixture_groups: int,
                   epoch: int) -> tuple[list[int], dict[str, Any]] | None:
    """The mixture of two gating scales to drop after an ``epoch`` of stochastic EM, from
    :data:`TAU_DROP_FIRST_EPOCH` on, and the record of why; None while both stay.

    Both mixtures' held-out rows were scored in the epoch's pass, each row by the
    parameters met when its chunk was read, and each mixture's loss is the log-loss of
    its class probabilities at its best temperature (``EpochState.proba_losses``; one
    against one, its pairs' logistic losses summed): the loss the final comparison takes,
    with the temperature fitted on the same rows (as optimistic for one mixture as for
    the other) instead of cross-fitted. The sum of one-vs-rest's binary losses told
    letter's factors apart by half a standard error where the final comparison found 3.
    The first scale (:data:`TAU_FACTOR`'s) is dropped when the other's weighted mean loss
    is below its own by more than :data:`TAU_GAIN_STANDARD_ERRORS` standard errors of
    the rows' paired differences
    (:meth:`~streamlearn.solvers.mixture.passes.EpochState.paired_standard_error`), the
    other when it is above by as much: the margin of the final comparison
    (:func:`_choose_gating_scale`), which a scale so far behind would rarely win. The
    first epoch's rows are scored partly by the initial experts, shared by both scales,
    so the comparison waits for a second.
    """
    if n_mixture_groups != 2 or epoch < TAU_DROP_FIRST_EPOCH or not {0, 1} <= set(live):
        return None
    a, b = live.index(0), live.index(1)
    total = max(tally.held_weight, 1e-300)
    s = [int(np.argmin(tally.proba_losses[j])) for j in (a, b)]
    losses = [float(tally.proba_losses[j, t]) / total for j, t in zip((a, b), s, strict=True)]
    se = tally.paired_standard_error(a, s[0], b, s[1])
    gain = losses[0] - losses[1]
    if not abs(gain) > TAU_GAIN_STANDARD_ERRORS * se > 0.0:  # rows that tie say nothing
        return None
    return [0 if gain > 0 else 1], {"epoch": int(epoch), "epoch_losses": losses,
                                    "epoch_standard_error": float(se)}


def held_out_predictions(model: MixtureFit, f: np.ndarray) -> np.ndarray:
    """Class codes the model predicts at rows of log-odds ``f`` (n, n_models): the sign of
    one log-odds for two classes, the largest one against the rest, the most votes (ties
    broken by the coupled probability, :func:`pair_decision`) one against one."""
    f = np.asarray(f, dtype=np.float64)
    if model.pairs is not None:
        return np.argmax(pair_decision(model, f), axis=1)
    if f.shape[1] == 1:
        return (f[:, 0] > 0).astype(np.int64)
    return np.argmax(f, axis=1)


def _guard_choice(runner: Any, dataset: Dataset, config: MixtureConfig,
                  mixture: list[BinaryFit], linear: list[BinaryFit], std: Standardiser,
                  holdout: Holdout, seed: int) -> dict[str, Any]:
    """The guard's comparison of the mixture with its linear SVM (``validation``).

    One pass scores both, as stochastic EM left them, on the held-out rows: each one's
    weighted error and the weighted log-loss of its class probabilities, with the
    temperatures cross-fitted as ``multiclass="auto"``'s comparison takes them
    (:func:`cross_fitted_row_losses`). The mixture is kept when both are lower than the
    linear SVM's, or when its error is lower by more than
    :data:`GUARD_ERROR_STANDARD_ERRORS` standard errors of the rows' paired differences
    (``error_standard_error``), else the linear SVM, the simpler model (on a tie too). The
    error counts the few hundred rows near the boundary and moves by a handful of them
    between two linear-like models, the log-loss weighs every row by its margin; but a
    cross-fitted log-loss rests on a temperature chosen on half the rows, and a half
    without a mistake takes the grid's largest scale, at which each mistake of the other
    half costs 34.5 nats. On pendigits the mixture's 5 held-out mistakes in 750 rows (the
    linear SVM's 45) fell in one half: log-loss 0.232 against 0.230, and the linear SVM
    kept at 10.1 % test error against the mixture's 2.4 %. Before, the
    errors alone decided, counted in the last epoch's own pass (each row scored by the
    parameters met when its chunk was read): on a9a (eight draws of 20,000 rows, 1,970
    held out) the mixture was kept twice, on leads of 12 and 5 rows, at 0.65 and 0.88
    points more test error, and its log-loss was higher in all eight draws.
    """
    models = [dataclasses.replace(_assemble(dataset, config, fits, std, None, None),
                                  proba_scale=1.0) for fits in (mixture, linear)]
    scores, codes, weight, rows = runner.run(
        HeldOutScoresPass([(m.xi, m.centers, m.coef, m.loss) for m in models],
                          [m.tau for m in models], config.bias_scale, std, holdout),
        dataset, description="held-out errors and log-loss of the mixture and the linear SVM")
    total = max(float(np.sum(weight)), 1e-300)
    half = cross_fit_halves(rows, seed)
    errors = [float(weight @ (held_out_predictions(m, f) != codes)) / total
              for m, f in zip(models, scores, strict=True)]
    losses = [float(weight @ cross_fitted_row_losses(m, f, codes, weight, half)) / total
              for m, f in zip(models, scores, strict=True)]
    # the rows' paired differences of the errors, linear minus mixture
    lead = ((held_out_predictions(models[1], scores[1]) != codes).astype(np.float64)
            - (held_out_predictions(models[0], scores[0]) != codes))
    se = float(np.sqrt(np.sum(weight ** 2 * (lead - (errors[1] - errors[0])) ** 2))) / total
    clear = errors[1] - errors[0] > GUARD_ERROR_STANDARD_ERRORS * se > 0.0
    # a tie keeps the simpler model: the held-out rows cannot tell them apart
    kept = ("mixture" if clear or (errors[0] < errors[1] and losses[0] < losses[1])
            else "linear")
    return {"held_out_weight": float(np.sum(weight)), "mixture_error": errors[0],
            "linear_error": errors[1], "error_standard_error": se,
            "mixture_loss": losses[0], "linear_loss": losses[1], "kept": kept}


def _finish_linear(runner: Any, dataset: Dataset, config: MixtureConfig,
                   fits: list[BinaryFit], lanes: list[_Lane], alphas: list[ExampleState],
                   seed: int, std: Standardiser) -> tuple[list[BinaryFit], float]:
    """Train the linear SVMs the guard kept to their optimum, on every row.

    Stochastic EM stops when the held-out log loss does, which leaves a linear SVM short
    of its optimum (on one-hot tables its standardised rare columns converge slowly), and
    its held-out rows were never trained on. Passes of dual coordinate descent over all
    rows, the held-out ones joining with their dual variables at zero
    (:class:`~streamlearn.solvers.mixture.passes.LinearSweepPass`), continue from the
    experts and dual variables EM left, until the relative duality gap
    ``(P - D) / P`` of every lane is at most :data:`LINEAR_GAP_TOL` (its objective is then
    within that share of the optimum), at most :data:`LINEAR_PASSES_PER_EPOCH` ``x
    epochs`` passes. The lanes' primal losses are summed in the pass after the one whose
    dual variables give ``D``, so each pass reads the data once; the iterate the gap was
    measured on is returned.

    Returns the finished fits (``converged`` false when the cap came first) and the
    largest gap measured last (``inf`` if the cap allowed no measurement).
    """
    C, bs = float(config.C), float(config.bias_scale)
    W = [f.params.W for f in fits]
    sums = [f.dual_sums for f in fits]
    previous: LinearSweepState | None = None
    gaps = np.full(len(fits), np.inf)
    passes = 0
    cap = LINEAR_PASSES_PER_EPOCH * int(config.epochs)
    for epoch in range(cap):
        state: LinearSweepState = runner.run(
            LinearSweepPass([lane.positive for lane in lanes], C, bs, alphas,
                            [lane.seed * 1000003 + 53 + epoch for lane in lanes], W, std,
                            config.loss),
            dataset, shuffle=True, seed=seed, epoch=LINEAR_EPOCH_OFFSET + epoch,
            description=f"linear SVM {epoch + 1}/{cap}")
        passes += 1
        if previous is not None:
            sq = np.array([float(np.sum(w * w)) for w in W])
            primal = 0.5 * sq + C * state.loss
            dual = previous.alpha_sum - previous.quad - 0.5 * sq
            gaps = (primal - dual) / np.maximum(primal, 1e-300)
            if gaps.max() <= LINEAR_GAP_TOL:
                break
        previous = state
        W = state.W  # at the cap: the last pass's end point, not measured
        sums = [state.alpha_sum[m:m + 1].copy() for m in range(len(fits))]
    converged = bool(gaps.max() <= LINEAR_GAP_TOL)
    out = []
    for f, w, gap, dual in zip(fits, W, gaps, sums, strict=True):
        history = [*f.history, {**f.history[-1], "duality_gap": float(gap)}]
        out.append(dataclasses.replace(f, params=MixtureParams(f.params.xi, f.params.V, w),
                                       history=history, n_iter=f.n_iter + passes,
                                       converged=converged, dual_sums=dual))
    return out, float(gaps.max())


def _record(config: MixtureConfig, loglik: float, p: MixtureParams) -> dict[str, float]:
    """A history entry: the log-likelihood, eq. 19 and the active components."""
    return {
        "loglik": float(loglik),
        "penalised": penalised_loglik(loglik, p, float(config.C), float(config.nu)),
        "n_active": int((p.xi > 0).sum()),
    }


def _converged(config: MixtureConfig, history: History, weight: float,
               patience: int = 1) -> bool:
    """Whether each of the last ``patience`` epochs changed eq. 19 by at most ``tol``
    times the weight."""
    if len(history) < patience + 1:
        return False
    values = [h["penalised"] for h in history[-(patience + 1):]]
    return all(abs(b - a) <= float(config.tol) * weight
               for a, b in itertools.pairwise(values))


def _batch_em(runner: Any, dataset: Dataset, config: MixtureConfig, params: MixtureParams,
              constant: np.ndarray, positive: int, tau: float, alpha: ExampleState,
              seed: int, history: History, std: Standardiser,
              dual_sums: np.ndarray) -> tuple[MixtureParams, int, bool]:
    # dual_sums: the sums of the dual variables per expert, kept up to date (in place)
    bs = float(config.bias_scale)
    epochs = int(config.epochs)
    for epoch in range(epochs + 1):
        stats: EStepStats = runner.run(EStepPass([params], [positive], tau, bs, std,
                                                 loss=config.loss),
                                       dataset, description=f"E-step {epoch + 1}/{epochs + 1}")[0]
        history.append(_record(config, stats.loglik, params))
        if epoch > 0 and _converged(config, history, stats.weight):
            return params, epoch, True
        if epoch == epochs:
            break
        # M-step, Fig. 2: xi by eq. 20 (pruning), then centres and experts
        xi = mixing_weights(stats.mass, float(config.nu), params.xi > 0)
        posterior = MixtureParams(xi, params.V, params.W)

        def gating(V: np.ndarray, posterior: MixtureParams = posterior) -> tuple[float,
                                                                                  np.ndarray]:
            out: GatingValue = runner.run(GatingPass(posterior, V, positive, tau, bs, std,
                                                     config.loss),
                                          dataset, description="gating")
            return out.value, out.grad

        h0 = 1.0 / (2.0 * tau * np.maximum(stats.mass, 1.0))[:, None]
        V = lbfgs_minimize(gating, params.V, max_iter=LBFGS_STEPS,
                           h0=np.broadcast_to(h0, params.V.shape)).x
        W = params.W.copy()
        if epoch == 0:  # constant experts carry no dual variables: re-train from zero
            W[constant] = 0.0
        W = _expert_step(runner, dataset, config, posterior, params.W, W, positive, tau,
                         alpha, seed, epoch, std, dual_sums)
        params = MixtureParams(xi, V, W)
    return params, epochs, False


def _expert_step(runner: Any, dataset: Dataset, config: MixtureConfig,
                 posterior: MixtureParams, W_old: np.ndarray, W: np.ndarray, positive: int,
                 tau: float, alpha: ExampleState, seed: int, epoch: int,
                 std: Standardiser, dual_sums: np.ndarray) -> np.ndarray:
    """Warm-started coordinate descent passes until every expert improves eq. 15 (the
    changes of the dual variables' sums added to ``dual_sums``)."""
    C, bs = float(config.C), float(config.bias_scale)
    active = posterior.xi > 0
    reg_old = (W_old ** 2).sum(axis=1) / 2.0
    for rep in range(MAX_EXPERT_PASSES):
        state: ExpertState = runner.run(
            ExpertPass(posterior, positive, C, tau, bs, alpha,
                       seed * 1000003 + 17 + 101 * epoch + rep, W, std, config.loss),
            dataset, shuffle=True, seed=seed,
            epoch=INIT_EXPERT_PASSES + MAX_EXPERT_PASSES * epoch + rep,
            description=f"experts {epoch + 1}/{int(config.epochs)}")
        W = state.W
        dual_sums += state.dual_change
        losses: np.ndarray = runner.run(
            ExpertObjectivePass(posterior, W_old, W, positive, tau, bs, std, config.loss),
            dataset,
            description="expert objectives")
        primal_old = reg_old + C * losses[0]
        primal_new = (W ** 2).sum(axis=1) / 2.0 + C * losses[1]
        if np.all(primal_new[active] <= primal_old[active]):
            break
    return W


def _stochastic_em(runner: Any, dataset: Dataset, config: MixtureConfig,
                   params: list[MixtureParams], constant: list[np.ndarray],
                   positives: list[LaneLabels], tau: float | Sequence[float],
                   totals: list[float], alphas: list[ExampleState], seed: int,
                   seeds: list[int], std: Standardiser, holdout: Holdout | None,
                   groups: list[list[int]], n_judged: int, dual_sums: list[np.ndarray],
                   n_classes: int = 2, n_mixture_groups: int = 1
                   ) -> tuple[list[BinaryFit], EpochState, list[dict[str, Any]]]:
    """Stochastic EM of every lane, each epoch one pass for all of them.

    ``tau`` is every lane's gating scale, or each lane's own. The first ``n_judged`` lanes
    decide when to stop: the fit ends after the epoch at which every one of them has met
    the tolerance. With validation ``groups`` (the first ``n_mixture_groups`` groups
    mixtures, one per gating scale tried, then the linear SVM's) it also ends after
    ``STOCHASTIC_PATIENCE`` consecutive epochs in which no running group's held-out
    logistic loss fell below its best of the earlier epochs by ``HELD_OUT_MIN_DECREASE``
    of it (early stopping; every lane then counts as converged). A mixture's lanes leave
    the later passes before that, once its held-out loss at its best temperature
    (``EpochState.scaled_losses``) has not improved so for ``STOCHASTIC_PATIENCE``
    epochs: EM lowers the loss at
    temperature 1 also by sharpening under-confident log-odds while it discriminates
    worse (ijcnn1 under gates 4 times softer than ``tau="auto"``'s: the held-out loss at 1 fell
    from epoch 6 to 10 while the test error rose from 2.38 to 2.81 %). The linear SVM
    keeps the loss at 1 and the shared rule: its held-out loss is not monotone from
    epoch to epoch, and a rule of its own stopped it short of its optimum. Each epoch's
    history entry records its group's ``held_out_error``, ``held_out_loss`` and
    ``held_out_scaled_loss``. Without validation ``groups`` a lane that met the
    tolerance leaves the later passes; with them a lane runs until its group stops (its
    ``n_iter`` counts the epochs it ran). With two mixture groups (two gating scales),
    the one :func:`_losing_scales` finds clearly behind after an epoch leaves the later
    passes too, unless the fit ends at that epoch; its lanes no longer count for the
    tolerance, nor its held-out loss for the shared rule.
    Returns every lane's fit, the validation tallies of each group's last epoch and the
    record of the mixture group dropped so (``"dropped"``, its index, with
    :func:`_losing_scales`'s record; empty when none was).
    """
    bs = float(config.bias_scale)
    epochs = int(config.epochs)
    taus = lane_taus(tau, len(positives))
    stats: list[EStepStats] = runner.run(EStepPass(params, positives, taus, bs, std, holdout,
                                                   config.loss),
                                         dataset, description="E-step")
    histories: list[History] = [[_record(config, st.loglik, p)]
                                for st, p in zip(stats, params, strict=True)]
    states = []
    for m, p in enumerate(params):
        W = p.W.copy()
        W[constant[m]] = 0.0  # constant experts carry no dual variables: re-train from zero
        states.append(StochasticState(MixtureParams(p.xi.copy(), p.V.copy(), W),
                                      stats[m].mass / max(stats[m].weight, 1e-300), 0,
                                      dual_sum=dual_sums[m].copy()))
    n_lanes = len(positives)
    n_iter = [epochs] * n_lanes
    converged = [False] * n_lanes  # by the tolerance or its group's held-out rows
    met = [False] * n_lanes  # by the tolerance
    running = list(range(n_lanes))
    n_groups = len(groups)
    out = EpochState(states, np.zeros(n_groups))
    best_held = np.full(n_groups, np.inf)
    stale = np.zeros(n_groups, dtype=np.int64)  # the mixture's epochs since a new best
    stale_all = 0  # epochs since a running group's loss at 1 reached a new best (by 0.5 %)
    best_scaled = np.full(n_groups, np.inf)
    stopped = np.zeros(n_groups, dtype=bool)
    last_errors, last_losses = np.zeros(n_groups), np.zeros(n_groups)
    held_weight = 0.0
    dropped_lanes: set[int] = set()  # lanes of a gating scale dropped (_losing_scales)
    drops: list[dict[str, Any]] = []
    for epoch in range(epochs):
        live = [g for g in range(n_groups) if not stopped[g]]
        out = runner.run(
            StochasticEpochPass([positives[m] for m in running], float(config.C),
                                [taus[m] for m in running],
                                float(config.nu), bs, [totals[m] for m in running],
                                [alphas[m] for m in running],
                                [seeds[m] * 1000003 + 31 + epoch for m in running],
                                [states[m] for m in running], std, holdout,
                                [[running.index(m) for m in groups[g]] for g in live],
                                config.loss, n_classes),
            dataset, shuffle=True, seed=seed, epoch=epoch + INIT_EXPERT_PASSES,
            description=f"stochastic EM {epoch + 1}/{epochs}")
        held = None
        if live and out.held_weight > 0:
            held_weight = out.held_weight
            held = raw = out.losses / out.held_weight
            scaled = out.scaled_losses.min(axis=1) / out.held_weight
            error = out.errors / out.held_weight
            last_errors[live], last_losses[live] = out.errors, out.losses
        for m, state in zip(running, out.lanes, strict=True):
            states[m] = state
            histories[m].append(_record(config, state.loglik, state.params))
            if held is not None:  # the classifier the lane belongs to, on held-out rows
                j = next(j for j, g in enumerate(live) if m in groups[g])
                histories[m][-1]["held_out_error"] = float(error[j])
                histories[m][-1]["held_out_loss"] = float(raw[j])
                histories[m][-1]["held_out_scaled_loss"] = float(scaled[j])
            # an epoch's log-likelihood is accumulated under the parameters met by each
            # chunk, so the first epoch's is (for one chunk: equals) the initial
            # parameters': compare two epochs, never an epoch with the initialisation
            if not met[m] and _converged(config, histories[m][1:], stats[m].weight,
                                         STOCHASTIC_PATIENCE):
                met[m] = converged[m] = True
                n_iter[m] = epoch + 1
            if groups:  # a lane trains until its group stops, whenever it met the tolerance
                n_iter[m] = epoch + 1
        losing = None
        if held is not None and n_mixture_groups > 1 and epoch + 1 < epochs:
            losing = _losing_scales(out, live, n_mixture_groups, epoch + 1)
        if held is not None:
            improved = held < best_held[live] * (1.0 - HELD_OUT_MIN_DECREASE)
            best_held[live] = np.minimum(best_held[live], held)
            stale_all = 0 if improved.any() else stale_all + 1
            for j, g in enumerate(live):  # a mixture, at its best temperature
                if g >= n_mixture_groups:
                    continue
                better = scaled[j] < best_scaled[g] * (1.0 - HELD_OUT_MIN_DECREASE)
                best_scaled[g] = min(best_scaled[g], float(scaled[j]))
                stale[g] = 0 if better else stale[g] + 1
                if stale[g] >= STOCHASTIC_PATIENCE:
                    stopped[g] = True
            if stale_all >= STOCHASTIC_PATIENCE:  # no running group's loss improves
                stopped[:] = True
            for g in np.flatnonzero(stopped):
                for m in groups[g]:
                    converged[m] = True
        # the judged lanes met the tolerance, or every group stopped on its held-out rows
        if (all(met[m] or m in dropped_lanes for m in range(n_judged))
                or (groups and stopped.all())):
            for m in range(n_lanes):
                n_iter[m] = min(n_iter[m], epoch + 1)
            break
        if losing is not None and not stopped[losing[0]].any():
            stopped[losing[0]] = True  # the later passes train the other scale's lanes only
            dropped_lanes.update(m for g in losing[0] for m in groups[g])
            drops.append({"dropped": losing[0][0], **losing[1]})
        if groups:
            running = [m for m in running if not any(stopped[g] for g in range(n_groups)
                                                     if m in groups[g])]
        else:
            running = [m for m in running if not converged[m]]
    out = EpochState(states, last_errors, held_weight, last_losses)
    fits = [BinaryFit(states[m].params, histories[m], n_iter[m], converged[m],
                      states[m].resp, states[m].t, totals[m], taus[m], states[m].dual_sum)
            for m in range(n_lanes)]
    return fits, out, drops
