"""Calibration: turning classifier scores into probabilities.

Two methods: Platt's sigmoid of a score (its threshold may move), and temperature scaling,
one scale of all scores that keeps every row's decision.

Platt (1999) models ``P(y = 1 | f) = 1 / (1 + exp(A f + B))`` for a classifier score ``f``
and fits ``A, B`` by maximum likelihood on held-out scores, with the labels replaced by the
smoothed targets ``t+ = (N+ + 1) / (N+ + 2)`` and ``t- = 1 / (N- + 2)`` (``N+, N-``: the
number, or total weight, of positive and negative examples) so that a separable calibration
set does not drive ``A`` to infinity. :func:`fit_sigmoid` is the Newton method with a
backtracking line search of Lin, Lin and Weng (2007), which is numerically safe where
Platt's original pseudo-code is not.

For data that stream, the scores are not kept: :class:`ScoreHistogram` accumulates, per
binary model and label, the weight and the weighted sum of the scores falling in each of a
fixed set of bins (a mergeable statistic, so it can be a reduction pass). The sigmoid is then
fitted to one point per non-empty (bin, label) cell, at the cell's mean score with the cell's
weight. The bins are uniform in ``asinh(f)``: narrow (about 0.015) near ``f = 0``, where the
sigmoid bends, and wider for large ``|f|``, where it is flat; scores beyond
``+-SCORE_LIMIT`` share the end bins (with their exact mean).

Temperature scaling (Guo et al., "On calibration of modern neural networks", ICML 2017)
models ``P(c | f) = softmax(s f)_c`` over one score per class (the logistic of ``s f`` for a
single score) with one scale ``s > 0``: the most probable class stays the one of the
largest score (the sign of a single one), so probabilities and decisions agree.
:class:`TemperatureSums` gathers, block by block, what the log-loss at every scale of a
grid needs (mergeable, so a reduction pass can gather it; the targets smoothed as
Platt's are) and :func:`best_temperature` picks the scale.
"""

from __future__ import annotations

import numpy as np

from streamlearn.solvers.ovr import REST
from streamlearn.solvers.pairwise_coupling import couple_pairwise

#: Bins of a :class:`ScoreHistogram`.
N_BINS = 1024
#: Scores beyond ``+-SCORE_LIMIT`` fall into the end bins.
SCORE_LIMIT = 1e3
#: Newton iterations of :func:`fit_sigmoid`.
MAX_ITER = 100
#: Smallest line search step of :func:`fit_sigmoid`.
MIN_STEP = 1e-10
#: Ridge added to the Hessian diagonal (Lin, Lin and Weng's ``sigma``).
HESSIAN_RIDGE = 1e-12
#: Rows of each label that every binary model's held-out set must hold for the sigmoids to
#: be fitted (:meth:`ScoreHistogram.fewest_rows`). With fewer, Platt's two parameters are
#: fitted to a handful of rows, and with none of one label the slope comes out 0: every row
#: gets the same probability and ``predict`` one class.
MIN_CALIBRATION_ROWS = 10


def sigmoid_proba(scores: np.ndarray, a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """``1 / (1 + exp(a f + b))`` without overflow.

    Parameters
    ----------
    scores : ndarray
        Scores ``f``; ``a`` and ``b`` broadcast against them (e.g. one per column).
    a, b : float or ndarray
        Sigmoid parameters.

    Returns
    -------
    ndarray of float64
    """
    z = np.asarray(scores, dtype=np.float64) * a + b
    ez = np.exp(-np.abs(z))
    return np.where(z >= 0, ez / (1.0 + ez), 1.0 / (1.0 + ez))


def class_probabilities(p: np.ndarray, positive: np.ndarray, negative: np.ndarray,
                        n_classes: int) -> np.ndarray:
    """Class probabilities of each row from the probabilities of its binary models.

    One model (two classes): ``[1 - p, p]``. One model per class against the rest
    (``negative`` all :data:`~streamlearn.solvers.ovr.REST`): the models' probabilities
    normalised to sum to 1 per row (uniform when all are 0). One per pair of classes:
    pairwise coupling (:func:`~streamlearn.solvers.pairwise_coupling.couple_pairwise`).

    Parameters
    ----------
    p : ndarray of shape (n, n_models)
        Probability of each model's positive class.
    positive, negative : ndarray of shape (n_models,), int
        The class codes of each model (see :class:`~streamlearn.solvers.additive.passes.
        ModelPairs`).
    n_classes : int

    Returns
    -------
    ndarray of shape (n, n_classes), float64
    """
    p = np.asarray(p, dtype=np.float64)
    if p.shape[1] == 1:
        return np.hstack([1.0 - p, p])
    if np.any(np.asarray(negative) != REST):
        return couple_pairwise(p, positive, negative, n_classes)
    total = p.sum(axis=1, keepdims=True)
    return np.where(total > 0, p / np.where(total > 0, total, 1.0), 1.0 / p.shape[1])


def smoothed_targets(positive: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Platt's targets ``(N+ + 1) / (N+ + 2)`` for positives and ``1 / (N- + 2)`` for negatives.

    Parameters
    ----------
    positive : ndarray of bool
        Label of each point.
    weight : ndarray of float
        Weight of each point; ``N+`` and ``N-`` are the total weights of each label.

    Returns
    -------
    ndarray of float64
    """
    n_pos = float(weight[positive].sum())
    n_neg = float(weight[~positive].sum())
    return np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def sigmoid_objective(a: float, b: float, scores: np.ndarray, targets: np.ndarray,
                      weight: np.ndarray) -> float:
    """Weighted cross-entropy ``sum_i w_i [-t_i log p_i - (1 - t_i) log(1 - p_i)]``.

    Parameters
    ----------
    a, b : float
        Sigmoid parameters, ``p_i = 1 / (1 + exp(a f_i + b))``.
    scores, targets, weight : ndarray of shape (n,)

    Returns
    -------
    float
    """
    z = scores * a + b
    # -t log p - (1-t) log(1-p) with p = 1/(1+e^z) is t z + log(1 + e^-z) rearranged stably
    return float(np.sum(weight * (np.where(z >= 0, targets * z, (targets - 1.0) * z)
                                  + np.log1p(np.exp(-np.abs(z))))))


def fit_sigmoid(scores: np.ndarray, positive: np.ndarray,
                weight: np.ndarray | None = None) -> tuple[float, float]:
    """Fit Platt's sigmoid ``P(y = 1 | f) = 1 / (1 + exp(A f + B))`` by Newton's method.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Classifier scores ``f_i``.
    positive : ndarray of shape (n,), bool
        Whether each point is of the positive class.
    weight : ndarray of shape (n,), optional
        Point weights (counts of a binned calibration set, sample weights); 1 by default.

    Returns
    -------
    A, B : float
        With no point at all, the plain logistic ``A = -1, B = 0``.

    Notes
    -----
    Algorithm 1 of Lin, Lin and Weng, "A note on Platt's probabilistic outputs for support
    vector machines" (Machine Learning 68, 2007), with weights: start from
    ``A = 0, B = log((N- + 1) / (N+ + 1))``, Newton steps on the smoothed cross-entropy with
    a ridge of ``1e-12`` on the Hessian, backtracking until the sufficient-decrease condition
    holds; stop when the gradient is below ``1e-10`` times the total weight (or after 100
    iterations or a failed line search).
    """
    f = np.asarray(scores, dtype=np.float64).reshape(-1)
    pos = np.asarray(positive, dtype=bool).reshape(-1)
    w = np.ones_like(f) if weight is None else np.asarray(weight, dtype=np.float64).reshape(-1)
    if not f.shape == pos.shape == w.shape:
        raise ValueError(f"scores, positive and weight differ in length: "
                         f"{f.shape}, {pos.shape}, {w.shape}")
    keep = w > 0
    f, pos, w = f[keep], pos[keep], w[keep]
    total = float(w.sum())
    if total <= 0:
        return -1.0, 0.0
    t = smoothed_targets(pos, w)
    n_pos = float(w[pos].sum())
    n_neg = total - n_pos
    a, b = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))
    fval = sigmoid_objective(a, b, f, t, w)
    tol = 1e-10 * total
    for _ in range(MAX_ITER):
        p = sigmoid_proba(f, a, b)
        pq = w * p * (1.0 - p)
        h11 = HESSIAN_RIDGE + float(np.sum(f * f * pq))
        h22 = HESSIAN_RIDGE + float(np.sum(pq))
        h21 = float(np.sum(f * pq))
        d = w * (t - p)
        g1 = float(np.sum(f * d))
        g2 = float(np.sum(d))
        if abs(g1) < tol and abs(g2) < tol:
            break
        det = h11 * h22 - h21 * h21
        da = -(h22 * g1 - h21 * g2) / det
        db = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * da + g2 * db
        step = 1.0
        while step >= MIN_STEP:
            new_a, new_b = a + step * da, b + step * db
            new_f = sigmoid_objective(new_a, new_b, f, t, w)
            if new_f < fval + 1e-4 * step * gd:
                a, b, fval = new_a, new_b, new_f
                break
            step /= 2.0
        else:
            break
    return float(a), float(b)


def _score_columns(scores: np.ndarray) -> np.ndarray:
    """Scores of a block of rows as float64 columns (n, n_models): a 1-D array is one
    model's. A block may hold no rows (a chunk without a pair's classes)."""
    f = np.asarray(scores, dtype=np.float64)
    return f[:, None] if f.ndim == 1 else f.reshape(f.shape[0], -1)


class ScoreHistogram:
    """Binned scores of ``m`` binary models, per label, for streamed Platt scaling.

    Parameters
    ----------
    n_models : int
        Number of binary models (1 for a binary classifier, ``k`` for one-vs-rest).
    n_bins : int, default N_BINS
        Bins, uniform in ``asinh(f)`` over ``[-asinh(limit), asinh(limit)]``.
    limit : float, default SCORE_LIMIT
        Scores beyond ``+-limit`` fall into the end bins.

    Attributes
    ----------
    weight : ndarray of shape (n_models, 2, n_bins), float64
        Total weight per model, label (0: negative, 1: positive) and bin.
    score_sum : ndarray of shape (n_models, 2, n_bins), float64
        Weighted sum of the scores in each cell.
    rows : ndarray of shape (n_models, 2), int64
        Rows of positive weight per model and label, whatever their weights.
    """

    def __init__(self, n_models: int, n_bins: int = N_BINS, limit: float = SCORE_LIMIT) -> None:
        if n_models < 1 or n_bins < 1 or not limit > 0:
            raise ValueError(f"need n_models >= 1, n_bins >= 1 and limit > 0; got {n_models}, "
                             f"{n_bins}, {limit}")
        self.n_models = int(n_models)
        self.n_bins = int(n_bins)
        self.limit = float(limit)
        self.weight = np.zeros((self.n_models, 2, self.n_bins))
        self.score_sum = np.zeros((self.n_models, 2, self.n_bins))
        self.rows = np.zeros((self.n_models, 2), dtype=np.int64)

    def __repr__(self) -> str:
        return (f"ScoreHistogram(n_models={self.n_models}, n_bins={self.n_bins}, "
                f"total_weight={self.weight.sum():g})")

    def bin_of(self, scores: np.ndarray) -> np.ndarray:
        """Bin index (int64) of each score."""
        top = np.arcsinh(self.limit)
        u = (np.arcsinh(np.asarray(scores, dtype=np.float64)) + top) * (self.n_bins / (2 * top))
        return np.clip(np.floor(u), 0, self.n_bins - 1).astype(np.int64)

    def add(self, scores: np.ndarray, positive: np.ndarray,
            weight: np.ndarray | None = None) -> ScoreHistogram:
        """Add the scores of a block of rows (in place).

        Parameters
        ----------
        scores : ndarray of shape (n, n_models)
            Score of every row under every model (a 1-D array for one model).
        positive : ndarray of shape (n, n_models), bool
            Label of every row for every model.
        weight : ndarray of shape (n,) or (n, n_models), optional
            Row weights, or a weight per row and model (0 leaves a row out of a model's
            calibration set); 1 by default.

        Returns
        -------
        ScoreHistogram
            ``self``.
        """
        f = _score_columns(scores)
        pos = np.asarray(positive, dtype=bool).reshape(f.shape)
        if f.shape[1] != self.n_models:
            raise ValueError(f"scores have {f.shape[1]} columns for {self.n_models} models")
        n = f.shape[0]
        if n == 0:
            return self
        w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
        w = np.broadcast_to(w if w.ndim == 2 else w[:, None], f.shape)
        cell = (np.arange(self.n_models)[None, :] * 2 + pos) * self.n_bins + self.bin_of(f)
        size = self.n_models * 2 * self.n_bins
        self.weight += np.bincount(cell.ravel(), w.ravel(), size).reshape(self.weight.shape)
        self.score_sum += np.bincount(cell.ravel(), (w * f).ravel(),
                                      size).reshape(self.score_sum.shape)
        counted = w > 0
        self.rows[:, 0] += np.count_nonzero(counted & ~pos, axis=0)
        self.rows[:, 1] += np.count_nonzero(counted & pos, axis=0)
        return self

    def merge(self, other: ScoreHistogram) -> ScoreHistogram:
        """Histogram of the union of the rows added to ``self`` and ``other`` (a new object)."""
        if (other.n_models, other.n_bins, other.limit) != (self.n_models, self.n_bins,
                                                           self.limit):
            raise ValueError("can only merge histograms with the same models, bins and limit")
        out = ScoreHistogram(self.n_models, self.n_bins, self.limit)
        out.weight = self.weight + other.weight
        out.score_sum = self.score_sum + other.score_sum
        out.rows = self.rows + other.rows
        return out

    def fewest_rows(self) -> int:
        """The fewest rows of one label in any model's calibration set."""
        return int(self.rows.min())

    def points(self, model: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The binned calibration set of one model.

        Each non-empty (label, bin) cell is a point at the mean score of its bin, both
        labels' rows together: a cell at its own label's mean would tell the labels apart
        inside a bin, and a model whose scores all fall in a few bins (a model that has
        barely moved from zero) would get an arbitrarily steep sigmoid and a held-out loss
        near zero from the binning alone.

        Returns
        -------
        scores : ndarray of float64
            Mean score of the bin of each non-empty (label, bin) cell.
        positive : ndarray of bool
        weight : ndarray of float64
        """
        w = self.weight[model]
        label, b = np.nonzero(w > 0)
        weight = w[label, b]
        pooled = self.score_sum[model].sum(axis=0) / np.maximum(w.sum(axis=0), 1e-300)
        return pooled[b], label.astype(bool), weight

    def fit(self) -> tuple[np.ndarray, np.ndarray]:
        """Fit one Platt sigmoid per model (:func:`fit_sigmoid` on :meth:`points`).

        Returns
        -------
        A, B : ndarray of shape (n_models,), float64
        """
        a = np.empty(self.n_models)
        b = np.empty(self.n_models)
        for j in range(self.n_models):
            a[j], b[j] = fit_sigmoid(*self.points(j))
        return a, b

    def log_loss(self, a: np.ndarray, b: np.ndarray) -> float:
        """Mean over models of the weighted log-loss of the sigmoids ``(a, b)`` on the
        binned rows (each cell at its mean score).

        Parameters
        ----------
        a, b : ndarray of shape (n_models,)

        Returns
        -------
        float
        """
        total = 0.0
        for j in range(self.n_models):
            scores, positive, weight = self.points(j)
            if weight.size == 0:
                continue
            p = np.clip(sigmoid_proba(scores, a[j], b[j]), 1e-15, 1.0 - 1e-15)
            loss = -np.where(positive, np.log(p), np.log1p(-p))
            total += float(np.sum(weight * loss) / np.sum(weight))
        return total / self.n_models



def fit_shared_slope(histogram: ScoreHistogram) -> float:
    """One slope ``A`` for the sigmoids ``1 / (1 + exp(A f))`` of every binary model
    (``B = 0``), fitted to Platt's smoothed targets of each model's binned rows.

    With ``B = 0`` each model's threshold stays at ``f = 0`` and one slope is a monotone
    map shared by all: the decisions (signs, the largest of one-vs-rest scores) do not
    change, only how sure the probabilities are. Platt's smoothed targets keep rows that
    every slope separates (training rows of a flexible model) from driving ``A`` to
    minus infinity.

    Parameters
    ----------
    histogram : ScoreHistogram
        Binned scores and labels of every model (:meth:`ScoreHistogram.points`).

    Returns
    -------
    float
        ``A < 0``; the plain logistic's ``-1`` when there are no rows.
    """
    from scipy.optimize import minimize_scalar

    parts = [histogram.points(m) for m in range(histogram.n_models)]
    parts = [(f, pos, w) for f, pos, w in parts if w.size]
    if not parts:
        return -1.0
    scores = np.concatenate([f for f, _, _ in parts])
    targets = np.concatenate([smoothed_targets(pos, w) for _, pos, w in parts])
    weight = np.concatenate([w for _, _, w in parts])
    best = minimize_scalar(lambda u: sigmoid_objective(-np.exp(u), 0.0, scores, targets,
                                                        weight),
                           bounds=(np.log(1e-3), np.log(1e3)), method="bounded",
                           options={"xatol": 1e-6})
    return float(-np.exp(best.x))


# -- temperature scaling ---------------------------------------------------------------------
#: Candidate scales ``s`` of :class:`TemperatureSums`: 0.1 decade apart from 1e-2 to 1e3
#: (scores of models fitted to ``+-1`` targets lie near ``+-1``, so ``s`` of about 1 to 10
#: is typical).
TEMPERATURE_SCALES = 10.0 ** np.linspace(-2.0, 3.0, 51)


class TemperatureSums:
    """Sums over rows from which the log-loss of ``softmax(s f)`` follows at every scale
    ``s`` of a grid, per class of the rows (a mergeable statistic: a reduction pass can
    gather it).

    One score column (two classes) stands for the logits ``(0, f)``. Per class ``c``:
    the weight ``N_c`` of its rows, the weighted sums of ``logsumexp(s f_i)`` at each
    scale, of the row's own logit ``f_ic`` and of the other logits. :meth:`losses` then
    gives the cross-entropy against Platt's smoothed targets: a row of class ``c`` puts
    ``(N_c + 1) / (N_c + 2)`` on its class and the rest evenly on the others, so that
    rows every scale separates (training rows of a flexible model) do not drive ``s`` to
    infinity; with many rows of each class it is the plain log-loss.

    Parameters
    ----------
    n_classes : int
    scales : ndarray of shape (S,)
    """

    def __init__(self, n_classes: int, scales: np.ndarray = TEMPERATURE_SCALES) -> None:
        self.scales = np.asarray(scales, dtype=np.float64)
        k = max(2, int(n_classes))
        self.weight = np.zeros(k)
        self.own = np.zeros(k)
        self.others = np.zeros(k)
        self.lse = np.zeros((k, len(self.scales)))

    def add(self, scores: np.ndarray, codes: np.ndarray,
            weight: np.ndarray | None = None) -> TemperatureSums:
        """Add a block of rows (in place).

        Parameters
        ----------
        scores : ndarray of shape (n,) or (n, n_classes)
        codes : ndarray of shape (n,), int
            Class code of each row.
        weight : ndarray of shape (n,), optional
            Row weights, 1 by default.

        Returns
        -------
        TemperatureSums
            ``self``.
        """
        f = _score_columns(scores)
        codes = np.asarray(codes, dtype=np.int64).reshape(-1)
        if f.shape[0] != codes.shape[0]:
            raise ValueError(f"scores and codes differ in length: {f.shape[0]}, "
                             f"{codes.shape[0]}")
        if f.shape[0] == 0:
            return self
        if f.shape[1] == 1:
            f = np.column_stack([np.zeros(f.shape[0]), f[:, 0]])
        k = self.weight.shape[0]
        if f.shape[1] != k:
            raise ValueError(f"scores have {f.shape[1]} columns for {k} classes")
        w = np.ones(f.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
        own = f[np.arange(f.shape[0]), codes]
        self.weight += np.bincount(codes, w, k)
        self.own += np.bincount(codes, w * own, k)
        self.others += np.bincount(codes, w * (f.sum(axis=1) - own), k)
        top = f.max(axis=1)
        for i, s in enumerate(self.scales):
            lse = s * top + np.log(np.exp(s * (f - top[:, None])).sum(axis=1))
            self.lse[:, i] += np.bincount(codes, w * lse, k)
        return self

    def merge(self, other: TemperatureSums) -> TemperatureSums:
        """The sums of the rows of both (a new object)."""
        if other.lse.shape != self.lse.shape or not np.array_equal(other.scales, self.scales):
            raise ValueError("can only merge sums of the same classes and scales")
        out = TemperatureSums(self.weight.shape[0], self.scales)
        out.weight = self.weight + other.weight
        out.own = self.own + other.own
        out.others = self.others + other.others
        out.lse = self.lse + other.lse
        return out

    @staticmethod
    def merged(a: TemperatureSums | None, b: TemperatureSums | None) -> TemperatureSums | None:
        """``a.merge(b)``, or None when either state gathers none (the merge of two
        reduction states that may carry these sums)."""
        return None if a is None or b is None else a.merge(b)

    @property
    def total_weight(self) -> float:
        """The weight of every row added."""
        return float(self.weight.sum())

    def losses(self, smoothed: bool = True) -> np.ndarray:
        """The summed cross-entropy at each scale, shape (S,): against Platt's smoothed
        targets, or (``smoothed=False``) the plain log-loss of the rows' classes."""
        k = self.weight.shape[0]
        q = ((self.weight + 1.0) / (self.weight + 2.0) if smoothed
             else np.ones(k))
        # sum over rows of class c of: lse_i - q f_ic - (1 - q) / (k - 1) sum_{j != c} f_ij
        linear = q * self.own + (1.0 - q) / (k - 1) * self.others
        return (self.lse - np.outer(linear, self.scales)).sum(axis=0)


def temperature_losses(scores: np.ndarray, codes: np.ndarray, weight: np.ndarray | None = None,
                       scales: np.ndarray = TEMPERATURE_SCALES) -> np.ndarray:
    """The plain summed log-loss of ``softmax(s f)`` at each scale (see
    :class:`TemperatureSums`; one score column: the logistic of ``s f``), shape (S,)."""
    f = np.asarray(scores, dtype=np.float64)
    n_classes = 2 if f.ndim == 1 or f.shape[1] == 1 else f.shape[1]
    return TemperatureSums(n_classes, scales).add(f, codes, weight).losses(smoothed=False)


def temperature_of(scores: np.ndarray, codes: np.ndarray,
                   weight: np.ndarray | None = None) -> float:
    """:func:`best_temperature` of in-memory rows, against smoothed targets."""
    f = np.asarray(scores, dtype=np.float64)
    n_classes = 2 if f.ndim == 1 or f.shape[1] == 1 else f.shape[1]
    return best_temperature(TemperatureSums(n_classes).add(f, codes, weight).losses())


def best_temperature(losses: np.ndarray, scales: np.ndarray = TEMPERATURE_SCALES) -> float:
    """The scale of lowest loss, refined by the parabola through it and its two
    neighbours in ``log s`` (the end scales as they are).

    Parameters
    ----------
    losses : ndarray of shape (S,)
        Summed over the calibration rows (:meth:`TemperatureSums.losses`).
    scales : ndarray of shape (S,), increasing

    Returns
    -------
    float
    """
    losses = np.asarray(losses, dtype=np.float64)
    i = int(np.argmin(losses))
    if i == 0 or i == len(losses) - 1:
        return float(scales[i])
    x = np.log(scales[i - 1:i + 2])
    y = losses[i - 1:i + 2]
    denominator = (x[0] - x[1]) * (x[0] - x[2]) * (x[1] - x[2])
    a = (x[2] * (y[1] - y[0]) + x[1] * (y[0] - y[2]) + x[0] * (y[2] - y[1])) / denominator
    b = (x[2] ** 2 * (y[0] - y[1]) + x[1] ** 2 * (y[2] - y[0])
         + x[0] ** 2 * (y[1] - y[2])) / denominator
    if not a > 0:
        return float(scales[i])
    return float(np.exp(np.clip(-b / (2.0 * a), x[0], x[2])))


def temperature_proba(scores: np.ndarray, scale: float) -> np.ndarray:
    """Class probabilities ``softmax(s f)`` (one score column: ``[1 - p, p]`` with ``p``
    the logistic of ``s f``), without overflow.

    Parameters
    ----------
    scores : ndarray of shape (n,) or (n, n_classes)
    scale : float

    Returns
    -------
    ndarray of shape (n, 2) or (n, n_classes), float64
    """
    f = np.asarray(scores, dtype=np.float64)
    if f.ndim == 1:
        p = sigmoid_proba(f, -float(scale), 0.0)
        return np.column_stack([1.0 - p, p])
    z = float(scale) * (f - f.max(axis=1, keepdims=True))
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
