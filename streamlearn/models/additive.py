"""``AdditiveSVC``: additive-kernel SVMs trained by streaming, embeddings computed on the fly.

Paper 000: a classifier ``f(x) = sum_f g_f(x_f) + b`` with one smooth curve per feature is a
linear SVM on an additive embedding ``Psi(x)`` (B-splines with a difference penalty, or the
trigonometric and Hermite embeddings of Table 1). Training never materialises ``Psi``: the
solvers embed each row inside their inner loop (the paper's "online" method). With
``online=False`` each chunk is embedded first (the "batch" column of the paper's tables) and
the same solver runs on the materialised columns, which gives the same model and shows what
the on-the-fly embedding saves.

``fit`` is a short sequence of passes over the data (summary, epochs, calibration), run by
:func:`streamlearn.solvers.additive.fit`; this module is the scikit-learn estimator over it.

Both solvers minimise the same objective
``lam / 2 ||w||^2 + (1 / n) sum_i s_i loss(y_i (w . Psi(x_i) + b))``, equivalently
``1/2 ||w||^2 + C sum_i s_i loss(...)`` with ``C = 1 / (lam n)``, ``s_i`` the sample
weights and ``n = sum_i s_i`` their total over the training rows (the number of rows
without weights), so an integer weight counts like repeated rows; the bias ``b`` is the
weight of a constant feature of value ``bias_scale``, regularised like the other weights
(liblinear's convention).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import replace
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.metaestimators import available_if

from streamlearn.data.sources.base import default_feature_names
from streamlearn.data.sparse_rows import SparseRows, take_rows
from streamlearn.engine.checkpoint import DEFAULT_EVERY
from streamlearn.engine.moments import sparse_chunk_moments
from streamlearn.errors import LabelError, SchemaError
from streamlearn.features import (
    BSplineMap,
    BSplinePairMap,
    FeatureMap,
    FourierMap,
    HermiteMap,
)
from streamlearn.features.pair_terms import (
    AUTO_PAIR_BASES,
    check_interactions,
    feature_index,
    move_marginals,
)
from streamlearn.models.base import (
    DENSE_BLOCK_ROWS,
    ClassifierScore,
    StreamEstimator,
    check_features,
    check_sample_weight,
    coded_table,
    encode_labels,
    has_column_names,
    has_named_features,
    hashing_of,
    over_dask_blocks,
    record_categories,
    record_feature_names,
    sorted_classes,
    sparse_rows_of,
    storable_classes,
)
from streamlearn.models.class_weight import (
    CLASS_WEIGHT_CONSTRAINT,
    class_counts,
    weighted_rows,
)
from streamlearn.models.racing import CLAMPED_SHARE_WARNING, in_race, record_clamped
from streamlearn.solvers import additive as additive_solver
from streamlearn.solvers.additive import (  # noqa: F401  (importable from here)
    DCD_INNER_SWEEPS,
    HOLDOUT_SALT,
    CalibrationPass,
    DcdEpochPass,
    DcdState,
    Holdout,
    ModelPairs,
    PegasosEpochPass,
    PegasosState,
    Regularisation,
    Summary,
    SummaryPass,
    SummaryState,
    TrainingRows,
    fit_feature_map,
    knot_per_category,
    w_to_w_d,
)
from streamlearn.solvers.additive.driver import (
    DESCRIBE_SAMPLE_ROWS,
    MAX_AUTO_OVO_CLASSES,
    MIN_CHECK_ROWS,
    offset_of,
    sample_importances,
    step_norm_sq,
)
from streamlearn.solvers.additive.growth import grown_bspline_map, grown_to_cover, reproject
from streamlearn.solvers.calibration import (
    MIN_CALIBRATION_ROWS,
    class_probabilities,
    sigmoid_proba,
    temperature_proba,
)
from streamlearn.solvers.dcd import LOSSES
from streamlearn.solvers.embedding import (
    Embedding,
    decision_ovr_chunk,
    embedding_params,
    feature_terms,
    weights_from_w_d,
)
from streamlearn.solvers.pass_caps import pass_cap
from streamlearn.solvers.pegasos import NO_AVERAGING, pegasos_ovr_chunk
from streamlearn.warning_origin import caller_stacklevel, library_rows

EMBEDDINGS = ("bspline", "fourier", "hermite", "linear")
#: A Hermite map's shape functions span its features' mean plus or minus this many
#: standard deviations (the map keeps no minimum and maximum), and it clamps its
#: standardised values there, as the other maps clamp values to their range: unclamped,
#: a polynomial of degree ``n_terms`` of a row 30 standard deviations out (a heavy tail, a
#: pixel that is almost always 0) has a squared norm 1e10 times the others', and the
#: solvers' steps on such rows swamp every other feature's.
HERMITE_SPAN = 3.0
SOLVERS = ("pegasos", "dcd")
MULTICLASS = ("ovr", "ovo", "auto")
#: ``tol="auto"`` of ``dcd``: the relative duality gap (liblinear's projected-gradient
#: ``eps`` 0.1 is ``10 tol``).
DCD_TOL = 0.01
#: ``tol="auto"`` of PEGASOS: relative improvement of the held-out hinge loss per epoch.
PEGASOS_TOL = 0.003
#: ... and of the lane template of a search (:meth:`AdditiveSVC._lane_template_params`).
TEMPLATE_PEGASOS_TOL = 0.01
#: The most ``fit`` raises ``calibration_fraction`` to, where that share holds enough rows
#: to choose bases and pairs by but too few of each class for Platt's sigmoids (many
#: classes: 20 classes x 20 rows need 400 held-out rows, 0.1 of 4,000). Before, such a fit
#: held out nothing and chose nothing (8 bases, no pairs): on make_classification
#: problems of 20, 26, 40 and 60 classes (2,800-8,400 training rows, three seeds each),
#: the mean test error went from 52.0, 57.1, 67.9 and 72.7 % to 39.1, 44.8, 54.9 and
#: 57.6 %, holding out 381-1,213 rows.
MAX_CALIBRATION_SHARE = 0.25
#: ``epochs="auto"``: the cap on large data, and the most it is raised to on small data
#: (:func:`~streamlearn.solvers.pass_caps.pass_cap`, :meth:`AdditiveSVC._epoch_cap`).
AUTO_EPOCHS = 50
AUTO_EPOCHS_MOST = 200
#: Rows of the first ``partial_fit`` chunk that set PEGASOS's step offset.
SAMPLE_ROWS = 4096
#: ``n_bases="auto"``: the counts of bases per feature that ``fit`` tries, in order ...
AUTO_BASES = (8, 16, 32)
#: ... and the count ``partial_fit`` takes (one pass over each row compares none).
PARTIAL_FIT_BASES = 16
#: ``partial_fit`` grows a B-spline map up to this many times ``n_bases`` bases.
MAX_BASES_GROWTH = 4
#: ``partial_fit`` grows a B-spline map for the features with more than this share of a
#: chunk's values outside its range (fewer: the tail of a shuffled stream, left clamped).
GROWTH_SHARE = 0.05
#: ``interactions="auto"`` screens for this many pairs per feature ...
AUTO_PAIRS_PER_FEATURE = 2
#: ... and at most this many at first; ...
MAX_AUTO_PAIRS = 64
#: ... then doubles the count while each step pays for its work, up to this many.
MAX_GROWN_PAIRS = 256
#: A fit's ``ConvergenceWarning`` names at most this many binary models (then "...").
MAX_NAMED_MODELS = 10


class ClampTally:
    """Values of each feature that ``partial_fit`` clamped to a feature map's range, over
    the rows it trained on since that map was made, and the features already warned of.

    Parameters
    ----------
    feature_map : FeatureMap
        The map the counts are for: a new map starts a new tally.
    n_features : int
    """

    def __init__(self, feature_map: FeatureMap, n_features: int) -> None:
        self.feature_map = feature_map
        self.clamped = np.zeros(n_features, dtype=np.int64)
        self.rows = 0
        self.warned = np.zeros(n_features, dtype=bool)

    def add(self, clamped: np.ndarray, n_rows: int) -> np.ndarray:
        """Add a call's counts and rows; each feature's share clamped so far."""
        self.clamped += clamped
        self.rows += int(n_rows)
        return self.clamped / max(self.rows, 1)


# -- the estimator ------------------------------------------------------------------------


class AdditiveSVC(ClassifierScore, StreamEstimator):
    """Additive-kernel support vector classifier trained by streaming over chunked data.

    Parameters
    ----------
    embedding : {"bspline", "fourier", "hermite", "linear"}
        Per-feature embedding (paper 000): B-splines with a difference penalty, the
        trigonometric or Hermite embedding of Table 1, or the raw features (a linear SVM).
        The trigonometric embedding maps each feature's range to the middle half of its
        basis's period, so that a curve's values at the two ends of the range need not
        meet (the paper maps the range to the whole period: a 0/1 feature, its values at
        the two ends, was then ignored, and a monotone effect turned back before the
        range's end); inputs outside the range are clamped to it.
        The Hermite embedding standardises each feature by its mean and standard
        deviation and clamps the result to ``[-3, 3]``, where its curves end (the
        paper's map does not clamp: a row far out in a tail then takes the training
        over, and the other features get next to no weight).
    degree : {1, 2, 3}
        B-spline degree.
    n_bases : int or "auto"
        B-spline bases per feature (:meth:`partial_fit` may grow the fitted map's, up to
        ``4 * n_bases``). ``"auto"``: ``fit`` trains its model with 8 bases (its pairs
        screened, trained and checked as ``interactions`` and ``pair_bases`` say), then
        the model kept (pairs and grid included) with 16 and 32 bases in turn, each kept
        while it lowers the held-out log-loss (``n_bases_``, ``bases_tried_``); the first
        count that does not ends the search. Pairs kept at 8 bases are checked again at
        the count kept (the model without them trained too, ``interaction_check_``
        then gives both losses at that count): they can make up for curves too coarse
        to follow the data and stop paying once the curves have enough bases. The
        held-out log-loss, here and for pairs,
        is that of the calibrated class probabilities of :meth:`predict_proba` on the
        calibration rows. With fewer than 200 held-out rows (about 2,000 rows in all)
        but at least 200 rows, 50 of them outside the largest class, and
        ``n_rows * (n_features + 1) * n_models`` at most 1,000,000 (``n_models``: the
        classes, 1 for two), five folds of the row hash choose instead, here and for
        ``interactions``, ``pair_bases``, the linear model and ``multiclass``: each
        candidate is trained on each fold's other rows (its pairs screened on them),
        calibrated on the fold, and judged by the folds' log-loss weighted by their rows
        (each row held out once; the losses in ``bases_tried_`` and the checks, which
        say ``"cross_fitted"``); the model kept is then trained once on every row, its
        probabilities one slope shared by its models (``cross_fit_``, no value terms
        tried). Digits' 1,258 training rows: test error 3.04 -> 2.52 %, a fit 0.7 ->
        38 s on two shared cores. Otherwise (without calibration, with fewer rows, or
        more work) it keeps 8;
        :meth:`partial_fit`, which reads each row once, takes 16. With categorical columns
        the first count is at least the
        longest category list plus ``degree``, so that every category has a knot of its
        own (its own value; the larger counts of the grid follow). The count matters
        despite the difference penalty, because
        ``C`` does not scale with it: on the benchmark's data sets (``bench/n_bases.py``,
        three seeds) 8 bases gave lower test error than 20 on the image sets, letter and
        pendigits (letter 7.02 -> 6.33 %, pendigits 2.94 -> 2.54 %, MNIST odd/even at
        60,000 rows 4.97 -> 4.72 %), while smooth curves of wide range (the demo's sine
        over standard normal features) need 32. Each count tried is one more training of
        the model kept; on data described from a sample (64 chunks or more: 16 ranges
        of at most 65,536 rows spread over them) the counts, the pairs of
        ``interactions`` and their grid are all chosen on those rows alone, and the model
        kept is then trained once on all rows. Last, the linear model (the features
        themselves, no curves; after ``spread_tails``'s map) is trained on the same rows
        and replaces the model kept when its calibrated held-out log-loss is lower
        (``linear_check_``): curves cost parameters that many weak, nearly linear
        features cannot pay for (3,000 rows of 50 Gaussian features and 5,000 of 300,
        with a linear label rule: test error 19.9 -> 17.3 % and 20.0 -> 18.4 %, a tuned
        linear SVM's 17.7 and 18.1), and the count search, which starts at 8 bases,
        never sees a simpler model. As for the counts, at least 200 held-out rows must
        judge it. One more training, at a linear model's cost; where a sample chooses,
        the model kept is trained on all rows as above. Pairs given as a list in
        ``interactions`` are the model asked for, and the linear model, which has no
        pairs, is not tried against them.
    penalty_order : int, optional
        Difference penalty order ``d`` for B-splines (0, 1, 2) or penalised derivative for
        Fourier and Hermite (1, 2; default 1). The B-spline default is 1 for ``fit`` with
        PEGASOS: ``D1`` penalises the jumps between neighbouring coefficients, so a
        feature's curve is as flat as the data allow and ``C`` sets how far it bends. It
        is 0 (``D0``, a ridge on the coefficients) when the data has categorical columns
        (their codes have no order for a difference to follow), for ``solver="dcd"``
        (whose convergence slows with the conditioning of ``D1``'s cumulative embedding),
        and for a map made by :meth:`partial_fit` (a ``D0`` step changes a curve only near
        the row that makes it, so a stream in any order, sorted by a feature too, does not
        pull the curves where it no longer is). ``D0`` is the sparse and fastest, and was
        the less accurate on most of the benchmark's data sets.
    n_terms : int
        Frequencies (Fourier) or polynomials (Hermite) per feature.
    zero_preserving : bool or "auto"
        Use the ``Psi(0) = 0`` variant of the embedding (sparse inputs): a feature at 0
        costs nothing, so training and prediction take time in the number of non-zero
        inputs, and every curve passes through 0 at 0 (B-splines put 0 on a knot; a
        feature of both signs gets a piece on each side). ``"auto"``: on for sparse
        training data (``scipy.sparse`` matrices, svmlight files, zarr CSR stores; the
        model then trains on the stored values alone), off for dense data. For
        non-negative features and degree-1 splines with ``penalty_order=1`` this is the
        same model as ``zero_preserving=False`` when ``bias_scale`` is
        ``sqrt(n_features + b^2)`` instead of ``b``: the first column of every feature's
        ``Psi_1 = D_1^-T Phi`` is the constant ``sum_j Phi_j = 1``, and the other columns
        are the zero-preserving embedding, so both define the same kernel and the same dual
        problem (the solvers take the same steps).
    knots : {"uniform", "quantile"}
        Where a feature's B-spline knots sit. ``"uniform"``: evenly spaced over its range.
        ``"quantile"``: half way between the uniform grid and the quantiles of the describe
        pass's row sample, a value holding more than one segment's share of the rows (a
        background pixel, a floor of zeros) set aside when the feature has enough other
        values (:func:`~streamlearn.features.knots.quantile_knots`): a skewed feature gets
        narrower segments where its rows crowd and wider ones in its tail, none narrower
        than half the uniform one; categorical codes keep a knot per category, and a
        column with two values (one-hot) the uniform grid, on which it fits the same curve
        at less cost. For :meth:`fit` on dense rows only (zero-preserving maps start at 0
        and :meth:`partial_fit` grows its map by whole uniform segments). Pair grids stay
        uniform. Not the default: the difference penalty weighs every segment alike, so
        where the knots crowd a curve may bend more per unit of the feature; over five
        seeds (``bench/knots.py``) the test error fell by about a tenth of a point on the
        image sets, satimage, shuttle and adult and rose on letter (6.96 -> 7.43 %),
        ijcnn1, spirals and a generated problem with 26 noise features. An epoch also
        costs more (a table lookup per value of a feature whose knots moved).
    spread_tails : bool
        Feature maps fitted on dense rows (B-spline, Fourier and Hermite alike, and the
        linear model; not zero-preserving, no ``feature_range``): a feature whose rows
        crowd into a small part of its range (a heavy tail, far outliers), which would
        leave them on one or two of the B-splines' segments, one slice of the Fourier
        map's period, near the Hermite map's mean (its standard deviation set by the
        tail), or let its few far rows take a linear model's training over, is passed
        through ``asinh((x - c) / s)`` before its bases, ``c`` and
        ``s`` chosen from the describe pass's row sample to spread its rows over the
        range (:mod:`~streamlearn.features.tail_transform`: a feature is mapped when more
        than half of its values, a most frequent value aside, fall in one eighth of its
        range, and the map at least halves that share). ``feature_transform_`` holds
        the features mapped; every method takes and reports the original values. The
        linear model (``embedding="linear"`` and the linear candidate of
        ``n_bases="auto"``) is then linear in the mapped features, its ``coef_`` their
        weights; False fits one of the raw values, as do ``standardize=False`` and
        ``zero_preserving=True`` for ``embedding="linear"`` (features scaled only, see
        ``standardize``).
    standardize : bool
        The linear model (``embedding="linear"``, and the linear candidate of
        ``n_bases="auto"``) on dense rows trains on each feature standardised by the
        describe pass's (weighted) mean and standard deviation (a constant feature keeps
        the scale 1), so that the features' units do not decide how much the penalty
        holds each weight back; ``coef_`` and every method stay in the features' own units
        (the map is folded into the weights after training). With ``bias_scale = 0`` the
        features are divided by their deviations but not centred: a shift would need the
        bias the model does not have. It makes the describe pass
        a linear fit would otherwise skip. Sparse rows and ``zero_preserving=True``,
        whose zeros a shift would fill, train on each feature divided by its largest
        absolute value (scikit-learn's ``MaxAbsScaler``; a column of zeros keeps 1): 0/1
        columns stay as they are, and a column in other units no longer trains a worse
        model (CSR rows of adult, 8,000 training rows: test error 22.25 % as stored,
        15.67 % with every feature mapped to [0, 1]; 15.59 % scaled). On sparse rows the
        scale comes from the describe pass only where the fit makes one anyway (rows held
        out for calibration, the default; weights; dropped rows), since it reads sparse
        rows whole: with ``calibrate=False`` they train as they are, and the fit reads
        them once an epoch. :meth:`partial_fit` trains on the features as they are,
        as does False.
    solver : {"pegasos", "dcd"}
        Primal stochastic sub-gradient (PEGASOS) or dual coordinate descent (liblinear's
        algorithm, block-wise over chunks, dual variables kept per row).
    multiclass : {"auto", "ovr", "ovo"}
        With more than two classes: one model per class against the rest, its Platt
        probabilities normalised (the paper's choice), or one model per pair of classes,
        combined by votes and by pairwise coupling of their Platt probabilities (Wu, Lin and
        Weng, 2004), as libsvm does. One-vs-one has ``k (k - 1) / 2`` models but each row
        updates only the ``k - 1`` that contain its class, and each model solves a smaller,
        often easier problem. It wins on ordered labels (ratings, bands of a score): a
        middle class is a slab between two others, which one additive score cannot
        separate from the rest, while each pair of classes is one boundary (6,000 rows of
        5 ordered classes: 35.1 % test error one-vs-rest, 24.2 % one-vs-one).
        ``"auto"``: ``fit`` chooses the bases, pairs and value terms one-vs-rest, then,
        with 3 to 7 classes, trains the model it kept once more, the same settings,
        one-vs-one, and keeps the scheme whose :meth:`predict_proba` has the lower
        log-loss on the calibration rows (one-vs-rest's at its temperature
        ``proba_scale_``; ``multiclass_``, ``multiclass_check_``); the linear model of
        ``n_bases="auto"`` is then tried in the scheme kept. At most 7 classes (ordered
        labels mostly have up to 7 levels), so that one-vs-one's ``k (k - 1) / 2`` models
        are at most 3 times one-vs-rest's ``k``: the candidate's training scores every
        held-out row with every model, and predicting costs one score per model
        (letter's 26 classes make 325, and one-vs-one predicted 19 times slower).
        One-vs-rest without the comparison: two classes (one model either way), more
        than 7, fewer than 200 calibrated held-out rows where no folds choose instead (as
        for ``n_bases``; ``calibrate=False`` among them), and :meth:`partial_fit`, which
        reads each row once and compares nothing. Where the fit chooses on a sample of
        chunks, the sample chooses the scheme too. One more training, of the model kept.
        The lanes of :class:`~streamlearn.models.StreamSearchCV` train the scheme that
        its lane template's ``fit`` keeps.
    C : float
        Penalty of the hinge losses, ``1/2 ||w||^2 + C sum_i s_i loss_i``; used when ``lam``
        is None.
    lam : float, optional
        Regularisation of ``lam / 2 ||w||^2 + (1 / n) sum_i s_i loss_i``; overrides ``C``
        (``C = 1 / (lam n)``). Default ``1 / (C n)``, ``n = sum_i s_i`` the total sample
        weight of the training rows (their number without weights; for
        :meth:`partial_fit`, of every row trained so far).
    loss : {"hinge", "squared_hinge"}
        Loss of the ``dcd`` solver (PEGASOS uses the hinge).
    epochs : int or "auto"
        Most passes over the data (training epochs). With ``tol`` the solvers stop earlier,
        when their stopping rule is met; when they reach the cap without meeting it,
        ``fit`` warns ``ConvergenceWarning`` once, for all the trainings it ran, naming
        the binary models that had not converged (``models_converged_``);
        ``n_iter_`` is the number of epochs run, ``epochs_`` the cap. ``"auto"``: 50,
        which bounds the cost (each epoch is one read of the data; both rules usually
        stop well before it), raised on small data to the epochs of a million row steps
        (rows times epochs), at most 200: there an epoch costs little, and PEGASOS's rule
        may need more, its steps ``1 / (lam t)`` shrinking by epochs, not rows (on
        breast_cancer and wine, 70 % of the rows each, six splits, it met the rule after
        32 to 92 epochs where 50 stopped 9 of the 12 fits short of it).
    tol : float, "auto" or None
        Threshold of the stopping rule (:func:`streamlearn.solvers.additive.fit`):

        * ``dcd``: stop after the first epoch at which the relative duality gap
          ``(P - D) / P`` of the previous epoch's model is at most ``tol`` for every binary
          model (its objective is then within ``tol`` of the optimum), or the projected
          gradients of all dual variables span at most ``10 tol`` (liblinear's rule, with
          its ``eps`` 0.1 for the default); the primal losses are summed as the epoch
          reads the rows, at no extra pass;
        * PEGASOS: each epoch also scores the model of the previous epoch on the rows held
          out for calibration (on the training rows with ``calibrate=False``, or when the
          held-out rows hold no row of one of a binary model's labels, where the
          regularised objective is followed instead) as it reads the data; stop when
          ``n_iter_no_change`` epochs in a row improve that hinge loss by less than ``tol``
          times its best value so far, and return the last model scored, or the best one
          when the loss has risen since by more than twice its sampling error.

        ``"auto"``: 0.01 for ``dcd`` (its objective within 1% of the optimum) and 0.003
        for PEGASOS (an epoch costs a full read of the data: it is worth one while it
        gains 0.3% of held-out loss; a looser 1% stopped 1-2 points of test error short
        on letter and satimage). None runs exactly ``epochs`` epochs, without rule or
        warning.
    n_iter_no_change : int
        PEGASOS: epochs in a row without a relative improvement larger than ``tol`` that
        stop it (2: every epoch is a full read of the data, and two in a row tell a
        plateau from the noise of one estimate).
    average : bool
        PEGASOS returns the mean of its iterates over at least the last half of the epochs
        run (of the second half of its steps when it runs one epoch) instead of the last
        iterate: each epoch's mean iterate enters a window of epochs that keeps between
        half and three quarters of them, since the number of epochs is not known in
        advance (suffix averaging).
    online : bool
        Embed rows inside the solver loop (True) or materialise each chunk's embedding and
        train on its columns (False, for comparison; same model, more memory and time).
    calibrate : bool
        Fit Platt sigmoids on held-out rows for :meth:`predict_proba`. Without calibration
        the probability of each binary model is the plain logistic ``1 / (1 + exp(-f))``.
        When ``calibration_fraction`` of the rows is fewer than 20 rows a class
        (``2 * MIN_CALIBRATION_ROWS`` for each of ``k`` classes: 400 rows for two classes
        at 0.1) but at least ``MIN_CHECK_ROWS`` (200, enough to choose bases and pairs by:
        many classes), the share is raised to hold 20 rows a class, up to
        :data:`MAX_CALIBRATION_SHARE` (0.25; ``n_calibration_`` says how many rows it
        held). Otherwise, with fewer rows a class, every row trains and one more pass
        chooses one slope ``A`` shared by
        every model, ``1 / (1 + exp(A f))``, on the training rows' scores against Platt's
        smoothed targets (:func:`~streamlearn.solvers.calibration.fit_shared_slope`):
        the decisions stay those of the scores, and the probabilities are as sure as the
        training rows allow (with the plain logistic of SVM scores near +-1, digits'
        test log-loss was 0.37 and its expected calibration error 0.26,
        ``bench/probabilities.py``). When the held-out rows of a binary model hold fewer
        than 10 rows of one of its labels (a rare class), where two parameters fitted to
        so few rows would decide the predictions, one more pass fits every model's Platt
        sigmoid (``A`` and ``B``, Platt's smoothed targets) to the scores of every row,
        training rows included, with a warning: those scores are optimistic (the model
        was fitted to them), but their rows hold every row of the rare class (the plain
        logistic of hinge scores near -1 put a mean probability of 0.12 on a class of
        prior 0.002: test log-loss 0.13, the constant prior's 0.014, Platt on every row
        0.007).
    calibration_fraction : float
        Share of the rows held out from training for calibration, strictly between 0 and
        1, chosen by a hash of the row id (the same rows whatever the chunking or order);
        raised for many classes, or none held out for few rows (see ``calibrate``).
    bias_scale : float
        Value of the constant feature whose regularised weight is the bias (0: no bias;
        ``intercept_`` is then 0, and a linear model is one through the origin of the
        features, or of their ``spread_tails`` map).
    feature_range : (float, float) or array-like of shape (n_features, 2), optional
        Range ``(min, max)`` of every feature, or one row per feature, that the feature map
        covers instead of the range seen in the data; values outside are clamped to it.
        Its bounds replace the data's minimum and maximum, and the mean and standard
        deviation of the uniform distribution over it replace the data's (the Hermite
        embedding standardises by them). Needed by :meth:`partial_fit` on streams whose
        first chunk does not span the data (e.g. sorted by a feature).
    interactions : "auto", int or list of pairs
        Pairwise terms beside the per-feature curves (a GA2M; B-spline embedding only).
        An integer ``k > 0``: ``fit`` trains the per-feature model, screens every pair of
        its most important features in one streamed pass by how much a four-quadrant
        step of the pair lowers the model's log-loss residuals (FAST, Lou et al., KDD
        2013; :mod:`streamlearn.solvers.additive.interactions`), then trains again with
        the ``k`` best pairs, so the fit makes one screening pass and the epochs twice. A
        list of pairs of feature names or integer indices (a float or a bool is refused):
        those pairs, no screening, and no linear model tried in their place (see
        ``n_bases``); 0: none.
        ``"auto"`` (B-spline maps with calibration): ``k = min(2 d, d (d - 1) / 2, 64)``
        for ``d`` features, and the model with pairs is kept only when its calibrated
        log-loss on the held-out calibration rows is lower than the per-feature model's
        by 0.5 % of it for each multiple of the per-feature model's non-zeros per row the
        pairs add, 4 a pair against ``degree + 1`` a feature (``2 d`` pairs beside
        degree-1 curves: 2 %; they cost that work in every epoch and prediction)
        (``interaction_check_``); with fewer than 200 held-out rows (about 2,000 rows in
        all) folds choose instead where the rows allow, as for ``n_bases`` (each fold's
        model screens its own training rows), else no pairs are tried. When the ``k``
        pairs pay, the best ``2 k``, ``4 k``, ...
        of the screened pairs (at most ``min(d (d - 1) / 2, 256)``) are trained in turn,
        each kept while it lowers the held-out log-loss of the step before by the same
        0.5 % per multiple of the per-feature work that its own added pairs cost
        (``interaction_check_["n_pairs"]``): letter keeps 64 of its 120 pairs, satimage 256
        of its 630 (``bench/interactions.py``). Where some screened pairs are strong and
        others not (a score of at least 25 a binary model, in units of one row's residual
        variance, where a pair without an interaction scores below about 15), the strong
        pairs alone are trained too, on the grid kept, and replace the others when their
        held-out log-loss is no higher: a few strong pairs beside many that only fit noise
        (the benchmark's generated problem: 11.47 -> 10.99 % test error). With
        ``n_bases="auto"`` on data of 64 chunks or more the pairs are screened and checked
        on the describe pass's 16 sampled chunks (see ``n_bases``). Other embeddings fit
        none; :meth:`partial_fit` screens none and trains the pairs of a list (on its first
        chunk's ranges). Each pair is a piecewise-bilinear surface on a ``pair_bases x
        pair_bases`` grid over the two features' ranges, with a ridge penalty
        (:class:`~streamlearn.features.BSplinePairMap`). A categorical feature's axis has
        a node per category instead (and one for a category unseen in fit), so that each
        category has a slice of the surface of its own, as its curve has a knot of its
        own; up to 63 categories (a block of at most 64 x 64 nodes), above which its
        codes share the uniform grid.
    pair_bases : int or "auto"
        Bases per axis of each pair's grid (but for a categorical feature's axis, see
        ``interactions``). ``"auto"``: the pairs (screened or given) are
        trained on an 8 x 8 grid, then on grids 1.5x finer per axis (12, 18, 27) in turn,
        each kept while it lowers the calibrated log-loss of the held-out calibration rows;
        the first that does not ends the search. The resolution then follows what the
        rows support: a surface that turns quickly (two interleaved spirals) gets a fine
        grid, a noisy or flat one keeps the coarse grid, whose ridge penalty shrinks it
        less. Each grid tried is one more training of the model with pairs. Without
        calibration, or with fewer than 200 held-out rows where no folds choose instead
        (see ``n_bases``), pairs get the 8 x 8 grid.
    value_terms : "auto" or False
        One weight per frequent value of a numeric feature, beside its curve, where the
        feature's effect jumps at single values (a capital gain of exactly 7,688) that a
        smooth curve cannot follow (:mod:`streamlearn.features.value_terms`). ``"auto"``
        (B-spline maps with calibration, dense rows, not zero-preserving): the
        candidates are the features with at least three values in the describe pass's
        row sample, of which at least two hold 1/1024 of it each (up to the 32 most
        frequent such values make the feature's table; categorical codes aside). After the
        per-feature model is trained, one streamed pass adds up its residuals and their
        squares at each listed value; a feature is chosen when offsets per value explain
        its residuals better than offsets per quantile bin (16 bins) do, by a score
        statistic at least 50 above its mean per binary model
        (:mod:`streamlearn.solvers.additive.value_screening`; about six standard
        deviations). A chosen feature's table is then every value that at least 3
        training rows hold, counted in one more pass over the chosen features (at most
        256, the most frequent; :func:`~streamlearn.features.value_terms.value_table`):
        rare values whose effect jumps (adult's capital gains of 3 to 31 rows each) get
        a weight too, which the ridge shrinks where their rows are few. The model with
        the chosen terms is trained and kept only when its
        calibrated held-out log-loss is lower by at least 0.5 %, with at least 200
        held-out rows (``value_check_``); pairs are screened after. Each value's column
        holds the entry that makes its ridge charge a step what the feature's difference
        penalty charges a two-valued feature's curve
        (:func:`~streamlearn.features.value_terms.value_scale`). False: none.
        :meth:`partial_fit` screens none.
    class_weight : dict, "balanced" or None
        Factors on the weights of each class's rows (label -> factor), or ``"balanced"``,
        as scikit-learn's classifiers take them (:mod:`~streamlearn.models.class_weight`
        states the rules); ``class_weight_`` holds the factors used. A dict in
        :meth:`partial_fit`.
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
    feature_names_in_ : ndarray of shape (n_features_in_,), dtype object
        The feature names seen in ``fit``; only when its data named its columns (a
        table, a file), as in scikit-learn: an array's columns are read by position.
    missing_values_ : MissingValues
        With ``fit(..., nan_policy="impute")``: each column's fill value and the columns
        given a missing-value indicator, read after the given columns (absent otherwise;
        :mod:`streamlearn.features.missing_values`).
    feature_map_ : FeatureMap or None
        The fitted embedding (None for ``"linear"``), over the features as
        ``feature_transform_`` maps them.
    feature_transform_ : TailTransform
        ``spread_tails``: the features mapped before the embedding, with their ``asinh``
        centres and scales (:class:`~streamlearn.features.tail_transform.TailTransform`);
        absent when none was.
    embedding_coef_ : ndarray of shape (n_models, n_dims)
        Weights of the materialised embedding (``w = D_d w_d``, see ``coef_d_``).
    coef_ : ndarray of shape (n_models, n_features)
        The linear model's weights (``embedding="linear"``, or the linear candidate kept
        by ``n_bases="auto"``), of the features as ``feature_transform_`` maps them;
        absent from a model with a feature map, whose weights are ``embedding_coef_``.
    coef_d_ : ndarray of shape (n_models, n_dims + 1), float64
        Models in the ``w_d = D_d^-1 w`` form the kernels use, bias weight last;
        ``n_models`` is 1 for two classes (positive class ``classes_[1]``), else n_classes
        (one-vs-rest) or ``n_classes (n_classes - 1) / 2`` (one-vs-one: pairs ``a < b`` in
        the order of :func:`numpy.triu_indices`, positive class ``classes_[a]``).
    lam_, C_ : float
        Regularisation used (``C_ = 1 / (lam_ n)``, ``n = sample_weight_sum_``).
    sample_weight_sum_ : float
        Total sample weight of the training rows (``n_train_`` without weights); after
        :meth:`partial_fit`, of every row trained so far.
    pegasos_lam_ : float
        ``lam`` of the PEGASOS steps, which average ``s_i loss_i`` over rows:
        ``lam_ * sample_weight_sum_ / n_train_`` (``lam_`` without weights).
    n_train_, n_calibration_ : int
        Rows used for training and for calibration by the last ``fit``. A row of sample
        weight 0 is no row: it is in neither, nor in anything else the fit derives (the
        feature map's ranges and knots, the row sample, the steps).
    n_iter_ : int
        Epochs run by the last ``fit`` (``epochs_`` when the stopping rule was not met or
        ``tol`` is None; 0 after ``partial_fit`` alone). Every binary model trains in the
        same epochs: one count for them all.
    epochs_ : int
        The most epochs the last ``fit`` could run (``epochs``, or what ``"auto"`` made of
        the data's rows).
    models_converged_ : ndarray of shape (n_models,), bool
        Whether each binary model (the rows of ``coef_d_``) met the stopping rule of the
        last ``fit``: all True when the rule stopped it before ``epochs``; at the cap,
        False for the models the rule still found moving (PEGASOS: the model's own
        monitored loss improving by more than ``tol`` within the last
        ``n_iter_no_change`` epochs; ``dcd``: its own duality gap above ``tol`` and its
        projected gradients above ``10 tol``), and for every model when none is singled
        out (the rule judges them together). All False with ``tol=None`` (no rule judges
        them) and after ``partial_fit`` alone.
    n_trainings_, n_trainings_capped_ : int
        The trainings the last ``fit`` ran (the model kept and those it was chosen from:
        counts of bases, pair terms, value terms, the linear model, one-vs-one) and how
        many of them
        reached ``epochs`` without meeting the stopping rule. A fit warns
        ``ConvergenceWarning`` once however many did, naming the binary models of the
        model kept that did not converge and counting the others.
    monitor_loss_ : list of float
        The value the stopping rule followed after each epoch but the last: PEGASOS's
        held-out hinge loss (its regularised objective on the training rows after a
        first held-out value that missed a label, or without held-out rows), ``dcd``'s
        relative duality gap (see ``tol``); empty for PEGASOS without ``tol``.
    t_ : int
        PEGASOS's step counter: the offset ``t0`` of its first step plus the rows visited
        by ``fit`` (:func:`streamlearn.solvers.additive.driver.step_offset`; the step is
        ``1 / (lam t)``, and :meth:`partial_fit` goes on from it, moving it with ``t0``
        when ``lam`` changes).
    step_norm_sq_ : float
        ``R^2`` of the step offset ``t0 = R^2 / pegasos_lam_``: the mean squared norm of
        the embedded rows of fit's row sample or of the first :meth:`partial_fit` call
        (bias feature included; 0 for ``dcd`` and without a row sample).
    platt_a_, platt_b_ : ndarray of shape (n_models,)
        Sigmoid ``P = 1 / (1 + exp(A f + B))`` of each binary model; its log-odds
        ``-(A f + B)`` are :meth:`decision_function` (two classes, one-vs-rest).
    multiclass_ : {"ovr", "ovo"}
        The scheme of the fitted models: ``multiclass``, or what ``"auto"`` chose
        (``"ovr"`` for two classes and after :meth:`partial_fit` alone); what prediction
        and :meth:`partial_fit` after ``fit`` use.
    multiclass_check_ : dict
        ``multiclass="auto"`` with 3 to 7 classes: the held-out log-loss of
        :meth:`predict_proba` one-vs-rest (``"ovr"``) and one-vs-one (``"ovo"``; None,
        with the ``"reason"``, when the held-out rows were too few to try it) and the
        scheme kept (``"kept"``). Absent otherwise.
    proba_scale_ : float
        One-vs-rest with more than two classes: the temperature ``s`` of
        :meth:`predict_proba` (``p^s / sum p^s``), of lowest log-loss on the held-out rows
        that compare the models of ``n_bases="auto"`` and the pairs (no extra pass; the
        sample's, where the fit chose its model on a sample of chunks); 1 otherwise.
    calibrated_ : bool
        Whether ``platt_a_, platt_b_`` were fitted on held-out rows (else ``B = 0`` and
        ``A`` the plain logistic's -1 with ``calibrate=False``; with ``calibrate`` on data
        too small to hold rows out, one slope shared by every model and chosen on the
        training rows; with ``calibrate`` and held-out rows too few of a label, Platt's
        sigmoids fitted to every row's scores).
    n_bases_ : int
        B-spline bases per feature of the fitted map (the count ``n_bases="auto"`` kept).
    bases_tried_ : list of [int, float or None]
        ``n_bases="auto"``: each count of bases trained by ``fit``, with the held-out
        log-loss of its class probabilities (one entry when fewer than 200 rows were held
        out and no folds chose; the folds' weighted log-loss where they did,
        ``cross_fit_``); absent for a fixed count.
    cross_fit_ : dict
        Where five folds of the row hash made the choices of ``"auto"`` (see
        ``n_bases``): ``n_folds`` and each fold's held-out rows (``fold_rows``). The
        losses of ``bases_tried_``, ``interaction_check_``, ``linear_check_`` and
        ``multiclass_check_`` are then the folds' (the checks hold ``"cross_fitted"``),
        and the model was trained on every row (``n_calibration_`` 0). Absent
        otherwise.
    feature_ranges_ : ndarray of shape (n_features, 2)
        A linear model's (``feature_map_`` None) observed ``(min, max)`` of each feature
        (after ``feature_transform_``), from the describe pass: where
        :meth:`shape_functions` draws its lines. Absent for a curve model, whose map
        holds its ranges, and for a linear fit without a describe pass.
    linear_check_ : dict
        ``n_bases="auto"`` with calibrated probabilities (and no pairs given as a list):
        the held-out log-loss of the linear model (``"linear"``) and of the B-spline
        model the search kept (``"curves"``), and whether the linear one replaced it
        (``"kept"``; then ``feature_map_`` is None and the model is a linear SVM over
        the features, as ``embedding="linear"`` gives). Absent otherwise.
    interactions_ : tuple of (str, str)
        The pairs of feature names that have a term, best screened first (empty without).
    interaction_scores_ : ndarray of shape (n_interactions,)
        Their screening scores (FAST's reduction of the residual sum of squares, added over
        the binary models); absent when the pairs were given.
    interaction_importances_ : ndarray of shape (n_interactions,)
        As ``feature_importances_``, for the pair terms.
    interaction_check_ : dict
        ``interactions="auto"`` only: ``kept``, and when pairs were tried the ``screened``
        pairs (feature indices), their ``scores``, the held-out log-loss without and
        with them (``held_out_log_loss_without``, ``held_out_log_loss_with``, the latter
        on the grid kept), each pair grid trained with its held-out log-loss
        (``pair_bases``, ``[bases, loss]``) and ``strong_pairs``, ``[count, loss]``: how
        many screened pairs were strong and the held-out log-loss of those alone (None
        when not trained), and ``n_pairs``, ``[count, loss]`` for each count of pairs
        trained as the count grew (empty when it did not); else the ``reason`` none were.
    pair_bases_ : int
        Bases per axis of the pairs' grids (only when the model has pairs; a categorical
        feature's axis has ``feature_map_.axis_nodes_``).
    value_terms_ : tuple of (str, tuple of float)
        The features that have a value term, best screened first, each with its values
        as given (a spread feature's values mapped back:
        :meth:`~streamlearn.features.tail_transform.TailTransform.preimage`); empty
        without.
    value_check_ : dict
        ``value_terms="auto"`` where a screening pass ran: ``kept``, the ``screened``
        features (indices) with their ``scores`` and the held-out log-loss without and
        with their terms, or the ``candidates`` and the ``reason`` none was chosen.
    feature_importances_ : ndarray of shape (n_features,)
        Each feature's mean absolute contribution to the SVM scores, centred
        (:func:`~streamlearn.solvers.additive.driver.term_importances`), over the uniform
        row sample of the describe pass (no extra read), averaged over the binary models.
        After :meth:`partial_fit`, over the rows of its latest call. Absent when ``fit``
        made no describe pass (a linear model without calibration or weights).
    state_w_d_ : ndarray of shape (n_models, n_dims + 1)
        Last PEGASOS iterates (the models themselves for ``dcd``), where :meth:`partial_fit`
        continues from.
    average_start_ : int
        First PEGASOS step whose iterate enters the averaged model.
    pg_range_ : float
        ``dcd`` only: largest range of the models' projected gradients (and 0) in the last
        epoch, what liblinear's rule compares with ``10 tol``.
    dcd_centre_ : ndarray of shape (n_dims + 1,)
        ``dcd`` only: the embedded row ``mu`` (``w_d`` form, like ``coef_d_``) the solver
        centred the rows on, the weighted mean of the embedded training rows (added up in
        the first epoch, which is centred on the describe pass's row sample instead; with
        ``epochs=1`` that sample's mean). It solves
        ``1/2 (||w||^2 + b_c^2) + C sum_i c_i loss(y_i (w . (z_i - mu) + b_c bias_scale))``
        with the intercept ``b_c bias_scale - w . mu``: liblinear's problem but for the
        intercept's penalty, which falls on the centred rows' intercept. Centring removes
        the common part of the embedded rows, a near-constant block of the dual's kernel
        matrix that slowed coordinate descent to a crawl. Absent when ``bias_scale = 0``,
        or with one epoch and no sample: then liblinear's problem itself.

    Examples
    --------
    >>> from streamlearn.data.synthetic import additive_problem
    >>> X, y = additive_problem(20_000)
    >>> clf = AdditiveSVC(embedding="bspline", degree=1, n_bases=20).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    _expected_failed_checks: ClassVar[dict[str, str]] = dict.fromkeys(
        ("check_sample_weight_equivalence_on_dense_data",
         "check_sample_weight_equivalence_on_sparse_data"),
        "stochastic solver with a hashed calibration split: PEGASOS visits rows in a "
        "seeded random order and calibration rows are chosen by a hash of their row id, "
        "so a repeated row is not the same as a doubled weight")

    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {
        "embedding": [StrOptions(set(EMBEDDINGS))],
        "degree": [Interval(Integral, 1, 3, closed="both")],
        "n_bases": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "penalty_order": [Interval(Integral, 0, 2, closed="both"), None],
        "n_terms": [Interval(Integral, 1, None, closed="left")],
        "zero_preserving": ["boolean", StrOptions({"auto"})],
        "knots": [StrOptions({"quantile", "uniform"})],
        "spread_tails": ["boolean"],
        "standardize": ["boolean"],
        "solver": [StrOptions(set(SOLVERS))],
        "multiclass": [StrOptions(set(MULTICLASS))],
        "C": [Interval(Real, 0, None, closed="neither")],
        "lam": [Interval(Real, 0, None, closed="neither"), None],
        "loss": [StrOptions(set(LOSSES))],
        "epochs": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "tol": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "average": ["boolean"],
        "online": ["boolean"],
        "calibrate": ["boolean"],
        "calibration_fraction": [Interval(Real, 0, 1, closed="neither")],
        "bias_scale": [Interval(Real, 0, None, closed="left")],
        "feature_range": ["array-like", None],
        "interactions": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"}),
                         list, tuple],
        "pair_bases": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "value_terms": [StrOptions({"auto"}), Options(bool, {False})],
        "class_weight": CLASS_WEIGHT_CONSTRAINT,
        "chunk_rows": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "engine": "no_validation",
        "progress": ["boolean", None],
    }

    def __init__(
        self,
        embedding: str = "bspline",
        degree: int = 1,
        n_bases: int | str = "auto",
        penalty_order: int | None = None,
        n_terms: int = 4,
        zero_preserving: bool | str = "auto",
        knots: str = "uniform",
        spread_tails: bool = True,
        standardize: bool = True,
        solver: str = "pegasos",
        multiclass: str = "auto",
        C: float = 1.0,
        lam: float | None = None,
        loss: str = "hinge",
        epochs: int | str = "auto",
        tol: float | str | None = "auto",
        n_iter_no_change: int = 2,
        average: bool = True,
        online: bool = True,
        calibrate: bool = True,
        calibration_fraction: float = 0.1,
        bias_scale: float = 1.0,
        feature_range: Any = None,
        interactions: int | str | list[Any] = "auto",
        pair_bases: int | str = "auto",
        value_terms: str | bool = "auto",
        class_weight: dict[Any, float] | str | None = None,
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
        self.knots = knots
        self.spread_tails = spread_tails
        self.standardize = standardize
        self.solver = solver
        self.multiclass = multiclass
        self.C = C
        self.lam = lam
        self.loss = loss
        self.epochs = epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.average = average
        self.online = online
        self.calibrate = calibrate
        self.calibration_fraction = calibration_fraction
        self.bias_scale = bias_scale
        self.feature_range = feature_range
        self.interactions = interactions
        self.pair_bases = pair_bases
        self.value_terms = value_terms
        self.class_weight = class_weight
        self.chunk_rows = chunk_rows
        self.random_state = random_state
        self.engine = engine
        self.progress = progress

    # -- hyper-parameters -----------------------------------------------------------------
    def _check_params(self) -> None:
        if self.solver == "pegasos" and self.loss != "hinge":
            raise ValueError("the pegasos solver minimises the hinge loss; use solver='dcd' "
                             f"for loss={self.loss!r}")
        if self._has_interactions():
            if self.embedding != "bspline":
                raise ValueError("interactions need embedding='bspline' (pair terms are "
                                 f"B-spline surfaces), got embedding={self.embedding!r}")
            if self.zero_preserving is True:
                raise ValueError("interactions need zero_preserving=False: a pair's "
                                 "surface is not zero where one of its features is")

    def _has_interactions(self) -> bool:
        """Whether pairs were asked for explicitly (an int > 0 or a list of pairs)."""
        if isinstance(self.interactions, str):
            return False
        if isinstance(self.interactions, list | tuple):
            return len(self.interactions) > 0
        return int(self.interactions) > 0

    def _zero_preserving(self, sparse: bool) -> bool:
        """``zero_preserving`` with ``"auto"`` resolved for dense or ``sparse`` data."""
        return sparse if isinstance(self.zero_preserving, str) else bool(self.zero_preserving)

    def _auto_interactions(self, n_features: int, sparse: bool = False) -> int:
        """``interactions="auto"``'s number of pairs to screen for (see its docstring)."""
        if (self.embedding != "bspline" or self._zero_preserving(sparse)
                or not self.calibrate):
            return 0
        return min(AUTO_PAIRS_PER_FEATURE * n_features, n_features * (n_features - 1) // 2,
                   MAX_AUTO_PAIRS)

    def _most_auto_interactions(self, n_features: int, sparse: bool = False) -> int:
        """The most pairs ``interactions="auto"`` grows to (see its docstring)."""
        if self._auto_interactions(n_features, sparse) == 0:
            return 0
        return min(n_features * (n_features - 1) // 2, MAX_GROWN_PAIRS)

    def _auto_value_terms(self, sparse: bool = False) -> bool:
        """Whether ``fit`` screens for value terms (see ``value_terms``)."""
        return (self.value_terms == "auto" and self.embedding == "bspline"
                and not self._zero_preserving(sparse) and bool(self.calibrate))

    def _bases_grid(self, online: bool = False, categories: Any = None) -> tuple[int, ...]:
        """The counts of bases per feature ``fit`` (or, ``online``, ``partial_fit``)
        tries, in order (see ``n_bases``); ``categories``: the data's category lists,
        whose longest sets the smallest count ``"auto"`` tries."""
        if not isinstance(self.n_bases, str):
            return (int(self.n_bases),)
        grid = (PARTIAL_FIT_BASES,) if online else AUTO_BASES
        longest = max((len(values) for values in (categories or {}).values()), default=0)
        need = longest + int(self.degree)  # a knot per category (knot_per_category)
        if longest == 0 or need <= grid[0]:
            return grid
        return (need, *(count for count in grid if count > need))

    def _pair_grids(self) -> tuple[int, ...]:
        """The pair grids ``fit`` tries, in order (see ``pair_bases``)."""
        if isinstance(self.pair_bases, str):
            return AUTO_PAIR_BASES
        return (int(self.pair_bases),)

    def _with_given_pairs(self, feature_map: FeatureMap | None, names: Any
                          ) -> FeatureMap | None:
        """``feature_map`` with the pair terms of ``interactions`` given as a list of pairs
        (the map unchanged when none are given)."""
        if not isinstance(self.interactions, list | tuple) or not self.interactions:
            return feature_map
        assert isinstance(feature_map, BSplineMap)
        return BSplinePairMap(feature_map.degree, feature_map.n_bases,
                              feature_map.penalty_order, False, self._given_interactions(names),
                              self._pair_grids()[0], feature_map.knots)

    def _given_interactions(self, names: Any) -> tuple[tuple[int, int], ...]:
        """``interactions`` given as pairs, as feature indices (names looked up)."""
        names = list(names)
        out = []
        for item in self.interactions:
            if isinstance(item, str) or not hasattr(item, "__len__") or len(item) != 2:
                raise ValueError(f"interactions must be an int or a list of feature pairs, "
                                 f"got the item {item!r}")
            pair = []
            for v in item:
                if isinstance(v, str):
                    if v not in names:
                        raise SchemaError(f"interaction {tuple(item)!r} names {v!r}, which "
                                          f"is not a feature (features: {names[:10]}...)")
                    pair.append(names.index(v))
                else:
                    pair.append(feature_index(v, tuple(item)))
            out.append(tuple(pair))
        return check_interactions(out, len(names))

    def _tol(self) -> float | None:
        """``tol`` with ``"auto"`` resolved for the solver."""
        if isinstance(self.tol, str):
            return DCD_TOL if self.solver == "dcd" else PEGASOS_TOL
        return None if self.tol is None else float(self.tol)

    _category_advice = ("use embedding='bspline' with n_bases at least the categories "
                        "plus degree (n_bases='auto' does so); or ")

    def _category_codes_read_as_numbers(self, categories: Any,
                                        online: bool = False) -> dict[str, int]:
        """The categorical columns read as numbers: every one under an embedding other than
        B-splines; under B-splines those whose codes do not all get a knot of their own
        (more categories than the first count of bases tried, less ``degree``: see
        :func:`~streamlearn.solvers.additive.driver.knot_per_category`)."""
        counts = super()._category_codes_read_as_numbers(categories, online)
        if self.embedding != "bspline" or not counts:
            return counts
        room = self._bases_grid(online, categories)[0] - int(self.degree)
        return {name: k for name, k in counts.items() if k > room}

    def _bspline_order(self, categorical: bool, online: bool) -> int:
        """``penalty_order`` of a B-spline map, the default resolved (see its docstring)."""
        if self.penalty_order is not None:
            return int(self.penalty_order)
        return 0 if categorical or online or self.solver == "dcd" else 1

    def _lanes_take_scheme(self, dataset: Any) -> bool:
        """Whether ``fit`` on ``dataset`` would choose the multiclass scheme
        (``multiclass="auto"`` with 3 to ``MAX_AUTO_OVO_CLASSES`` classes), which
        ``partial_fit`` cannot: its lanes then train the scheme of the lane template."""
        classes = getattr(dataset, "classes", None)
        return (self.multiclass == "auto" and classes is not None
                and 3 <= len(classes) <= MAX_AUTO_OVO_CLASSES)

    def _lanes_need_template(self, dataset: Any) -> bool:
        """Whether :class:`~streamlearn.models.search.StreamSearchCV`'s lanes of this
        model need a *template*, this model fitted once on the training rows: they do when
        ``fit`` screens pairs (``interactions="auto"`` where it applies, or an int) or
        chooses the multiclass scheme (:meth:`_lanes_take_scheme`), which ``partial_fit``
        cannot."""
        if self._lanes_take_scheme(dataset):
            return True
        if isinstance(self.interactions, str):
            return self._auto_interactions(len(dataset.feature_names), dataset.is_sparse) > 0
        if isinstance(self.interactions, list | tuple):
            return False
        return int(self.interactions) > 0 and self.embedding == "bspline"

    def _lane_pairs(self, dataset: Any) -> int:
        """How many of a lane template's pairs this model's lanes take: the most
        ``interactions="auto"`` keeps, or ``interactions`` itself (0 for a list: its
        lanes train the pairs given)."""
        if isinstance(self.interactions, list | tuple):
            return 0
        if isinstance(self.interactions, str):
            return self._most_auto_interactions(len(dataset.feature_names), dataset.is_sparse)
        return int(self.interactions)

    def _lane_template_params(self, dataset: Any) -> dict[str, Any]:
        """Settings of the lane template that differ from this model's: the first count
        of bases and pair grid that ``"auto"`` tries (the template serves only to screen
        and check the pairs, which ``fit`` does at those; the searches for finer counts
        and grids would each cost one more training), and for PEGASOS with ``tol="auto"``
        the looser ``tol`` 0.01 (the screening ranks pairs by the residuals of a model
        trained as far as a 1 % gain per epoch, and both models of the check stop alike;
        on pendigits the template took 0.32 -> 0.24 s, and the choices on letter, usps,
        pendigits, satimage and adult stayed within 0.2 points of the grid search's)."""
        params: dict[str, Any] = {}
        if isinstance(self.n_bases, str):
            params["n_bases"] = self._bases_grid(categories=dataset.categories)[0]
        if isinstance(self.pair_bases, str):
            params["pair_bases"] = self._pair_grids()[0]
        if isinstance(self.tol, str) and self.solver == "pegasos":
            params["tol"] = TEMPLATE_PEGASOS_TOL
        return params

    def _lane_params(self, n_train: int, dataset: Any,
                     template: AdditiveSVC | None = None) -> dict[str, Any]:
        """What :class:`~streamlearn.models.search.StreamSearchCV` sets on a lane so that
        its ``partial_fit`` trains the model ``fit`` would: the penalty order of ``fit``,
        and the pairs ``fit`` would screen, taken from ``template`` (see
        :meth:`_lanes_need_template`): its pairs for ``interactions="auto"`` (none when
        its check dropped them), its first ``k`` for ``interactions=k``, at its pair
        grid. Pairs matter to the ranking: on letter the lanes without them preferred 20
        bases per feature to 10, and ``fit`` with pairs the reverse (6.55 against 5.65 %
        test error at ``C=10``). And the penalty ``fit`` would use, ``lam = 1 / (C n)``
        for the ``n_train`` rows (a lane's first chunk would give ``1 / (C n_chunk)``).
        With ``multiclass="auto"`` where ``fit`` chooses the scheme
        (:meth:`_lanes_take_scheme`), the scheme ``template``'s fit kept: a lane's
        ``partial_fit`` would train one-vs-rest, and the search would rank settings by
        models of another scheme than the refit's (5 ordered classes: the lanes'
        one-vs-rest held-out accuracy 0.61, the one-vs-one refit's 0.84 on its rows)."""
        params: dict[str, Any] = {}
        if self.lam is None:
            params["lam"] = 1.0 / (float(self.C) * max(int(n_train), 1))
        check = getattr(template, "multiclass_check_", None)
        if self._lanes_take_scheme(dataset) and check:
            params["multiclass"] = str(check["kept"])
        if self.embedding != "bspline":
            return params
        if self.penalty_order is None:
            params["penalty_order"] = self._bspline_order(bool(dataset.categories), False)
        if isinstance(self.interactions, list | tuple):
            return params
        pairs: list[tuple[int, int]] = []
        wanted = self._lane_pairs(dataset)
        if template is not None and wanted > 0:
            # as column positions: a lane is handed a chunk's rows without their names, as
            # the template read them (a missing-value indicator column among them)
            names = list(template._read_feature_names)
            pairs = [(names.index(f), names.index(g))
                     for f, g in getattr(template, "interactions_", ())][:wanted]
        params["interactions"] = pairs if pairs else 0
        if pairs and isinstance(self.pair_bases, str):
            params["pair_bases"] = int(template.pair_bases_)
        return params

    def _knots(self, zero_preserving: bool, online: bool) -> str:
        """``knots``, refused where quantile knots do not apply."""
        if self.knots == "quantile" and (zero_preserving or online):
            raise ValueError("knots='quantile' is for fit on dense rows: zero-preserving "
                             "maps and partial_fit's growing maps use uniform knots")
        return str(self.knots)

    def _make_map(self, categorical: bool = False, online: bool = False,
                  sparse: bool = False, categories: Any = None) -> FeatureMap | None:
        """The feature map; ``categorical``: the data has categorical columns (their
        lists ``categories``, when known); ``online``: for :meth:`partial_fit`;
        ``sparse``: for sparse rows."""
        if self.embedding == "linear":
            return None
        zero_preserving = self._zero_preserving(sparse)
        if self.embedding == "bspline":
            order = self._bspline_order(categorical, online)
            return BSplineMap(self.degree, self._bases_grid(online, categories)[0], order,
                              zero_preserving, self._knots(zero_preserving, online))
        order = 1 if self.penalty_order is None else self.penalty_order
        if self.embedding == "fourier":
            return FourierMap(self.n_terms, order, zero_preserving)
        return HermiteMap(self.n_terms, order, zero_preserving, clip=HERMITE_SPAN)

    def _sparse_refusal(self) -> str | None:
        """Why this setting cannot train on sparse rows in their time, or None."""
        if self.embedding in ("fourier", "hermite"):
            return (f"embedding={self.embedding!r} costs every feature of every row; "
                    "sparse rows train with embedding='bspline' or 'linear'")
        if self.embedding == "bspline" and not self._zero_preserving(True):
            return ("zero_preserving=False costs every feature of every row; sparse "
                    "rows train with zero_preserving=True or 'auto'")
        if self._has_interactions():
            return ("pair terms are not zero where a feature is: sparse rows train "
                    "without interactions (interactions=0 or 'auto')")
        if not self.online:
            return ("online=False materialises the embedding densely; sparse rows "
                    "train with online=True")
        return None

    #: :meth:`partial_fit` takes sparse rows (with the settings :attr:`_accepts_sparse`
    #: allows), so that :class:`~streamlearn.models.search.StreamSearchCV` races it on them.
    _partial_fit_takes_sparse: ClassVar[bool] = True

    @property
    def _accepts_sparse(self) -> bool:  # type: ignore[override]
        """Whether this setting trains on sparse rows (scikit-learn's ``sparse`` tag)."""
        return self._sparse_refusal() is None

    def _refuse_sparse(self, description: str) -> None:
        """Refuse, before reading, what cannot train on sparse rows in their time."""
        raise ValueError(f"{description} holds sparse rows: {self._sparse_refusal()}")

    def _given_range(self, n_features: int) -> tuple[np.ndarray, np.ndarray] | None:
        """``feature_range`` as ``(lo, hi)`` arrays of shape (n_features,), or None."""
        if self.feature_range is None:
            return None
        try:
            bounds = np.asarray(self.feature_range, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError("feature_range must be a (min, max) pair or an array of shape "
                             f"(n_features, 2), got {self.feature_range!r}") from error
        if bounds.shape == (2,):
            bounds = np.tile(bounds, (n_features, 1))
        if bounds.shape != (n_features, 2):
            raise ValueError("feature_range must be a (min, max) pair or an array of shape "
                             f"(n_features, 2) = ({n_features}, 2), got shape {bounds.shape}")
        lo, hi = bounds[:, 0], bounds[:, 1]
        bad = np.flatnonzero(~(np.isfinite(lo) & np.isfinite(hi) & (hi > lo)))
        if bad.size:
            f = int(bad[0])
            raise ValueError(f"feature_range of feature {f} is [{lo[f]}, {hi[f]}]; it needs "
                             "finite bounds with min < max")
        return lo, hi

    @property
    def n_models_(self) -> int:
        """Number of binary models: 1 for two classes, else one per class."""
        self._check_fitted()
        return int(self.coef_d_.shape[0])

    def _pairs(self) -> ModelPairs:
        return ModelPairs.of(len(self.classes_), self._multiclass())

    def _multiclass(self) -> str:
        """The scheme of the fitted models: ``multiclass_``; for a model stored before
        it was recorded, ``multiclass`` (one-vs-rest for ``"auto"``, then the only
        default)."""
        scheme = getattr(self, "multiclass_", None)
        if scheme is None:
            scheme = "ovr" if self.multiclass == "auto" else str(self.multiclass)
        return str(scheme)

    def _embedding(self) -> Embedding:
        return embedding_params(self.feature_map_, len(self._read_feature_names))

    def _set_regularisation(self, regularisation: Regularisation) -> None:
        """``lam_``, ``C_``, ``sample_weight_sum_`` and ``pegasos_lam_``."""
        self.lam_ = regularisation.lam
        self.C_ = regularisation.C
        self.sample_weight_sum_ = regularisation.weight_sum
        self.pegasos_lam_ = regularisation.pegasos_lam

    def _training_rows(self, holdout: Holdout | None) -> TrainingRows:
        """How chunks become kernel arrays for this fitted model (its feature map)."""
        config = additive_solver.AdditiveConfig(
            feature_map=self.feature_map_, feature_range=None, solver=self.solver,
            multiclass=self._multiclass(), C=float(self.C), lam=self.lam, loss=self.loss,
            epochs=self._epoch_cap(None), tol=self._tol(), average=bool(self.average),
            online=bool(self.online), calibration_fraction=None,
            bias_scale=float(self.bias_scale), n_iter_no_change=int(self.n_iter_no_change))
        return additive_solver.training_rows(config, self._embedding(),
                                             len(self._read_feature_names),
                                             holdout)

    # -- training -------------------------------------------------------------------------
    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            nan_policy: Any = "auto",
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
        nan_policy : "auto", "raise", "drop", "impute" or float, default "auto"
            NaN, infinite and missing values (``None``, ``pd.NA``) in the features of
            data opened here: refuse them, drop the row, or replace them by the number.
            ``"impute"`` reads NaN as missing values (``missing_values_``, one pass more:
            :mod:`streamlearn.features.missing_values`). ``"auto"`` does so for data held
            in memory with a NaN, and for a file, store or dask collection in which the
            fit finds one (it then starts again, with a warning; not with a
            ``checkpoint``): :func:`~streamlearn.models.base.resolve_nan_policy`.
            A missing target (NaN, infinity, None) drops its row under "drop" and is
            refused otherwise.
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
        return self._fit_stream(data, y, sample_weight, nan_policy, engine, checkpoint,
                                checkpoint_every)

    def _epoch_cap(self, n_rows: int | None) -> int:
        """Most epochs of a fit on ``n_rows`` rows: ``epochs``, or for ``"auto"``
        :data:`AUTO_EPOCHS`, raised to the epochs of a million row steps up to
        :data:`AUTO_EPOCHS_MOST` (:func:`~streamlearn.solvers.pass_caps.pass_cap`;
        :data:`AUTO_EPOCHS` where the rows are not known). Sets ``epochs_``."""
        if self.epochs != "auto":
            cap = int(self.epochs)
        elif n_rows is None:
            cap = getattr(self, "epochs_", AUTO_EPOCHS)
        else:
            cap = pass_cap(n_rows, AUTO_EPOCHS, AUTO_EPOCHS_MOST)
        self.epochs_ = int(cap)
        return self.epochs_

    def _calibration_share(self, dataset: Any) -> float | None:
        """The share of the rows held out for calibration: ``calibration_fraction`` with
        ``calibrate``, unless that share of the rows could not hold
        ``2 * MIN_CALIBRATION_ROWS`` rows of each class were the classes balanced. Then,
        where it holds at least ``MIN_CHECK_ROWS`` rows (enough to choose bases and pairs
        by: many classes, not few rows), the share that holds that many rows a class,
        up to :data:`MAX_CALIBRATION_SHARE`; else None (every row trains, one slope shared
        by the sigmoids is fitted to their scores, and small data is cross-fitted). Rows of
        weight 0 are not counted (:func:`~streamlearn.models.class_weight.weighted_rows`)."""
        if not self.calibrate:
            return None
        fraction = float(self.calibration_fraction)
        n_classes = len(dataset.classes) if dataset.classes is not None else 2
        rows = weighted_rows(dataset)
        needed = 2 * MIN_CALIBRATION_ROWS * n_classes
        if fraction * rows >= needed:
            return fraction
        if fraction * rows >= MIN_CHECK_ROWS and needed <= MAX_CALIBRATION_SHARE * rows:
            # enough rows to choose by, too few a class for Platt's sigmoids: many classes
            return needed / rows
        return None

    def _run_driver(self, runner: Any, dataset: Any, seed: int) -> additive_solver.AdditiveFit:
        feature_map = self._make_map(bool(dataset.categories), sparse=dataset.is_sparse,
                                     categories=dataset.categories)
        screen = most = 0
        if isinstance(self.interactions, str):
            screen = self._auto_interactions(len(dataset.feature_names), dataset.is_sparse)
            most = self._most_auto_interactions(len(dataset.feature_names),
                                                dataset.is_sparse)
        elif isinstance(self.interactions, list | tuple):
            feature_map = self._with_given_pairs(feature_map, dataset.feature_names)
        else:
            screen = int(self.interactions)
        config = additive_solver.AdditiveConfig(
            feature_map=feature_map,
            feature_range=self._given_range(len(dataset.feature_names)),
            solver=self.solver, multiclass=self.multiclass, C=float(self.C),
            lam=None if self.lam is None else float(self.lam), loss=self.loss,
            epochs=self._epoch_cap(dataset.n_rows), tol=self._tol(),
            average=bool(self.average), online=bool(self.online),
            calibration_fraction=self._calibration_share(dataset),
            bias_scale=float(self.bias_scale), n_iter_no_change=int(self.n_iter_no_change),
            interactions=screen, max_interactions=most, pair_grids=self._pair_grids(),
            bases_grid=(self._bases_grid(categories=dataset.categories)
                        if isinstance(feature_map, BSplineMap) else ()),
            check_interactions=isinstance(self.interactions, str),
            spread_tails=bool(self.spread_tails),
            slope_on_training_rows=bool(self.calibrate),
            standardize_linear=bool(self.standardize)
            and not self._zero_preserving(dataset.is_sparse),
            scale_linear=bool(self.standardize) and self._zero_preserving(dataset.is_sparse),
            value_terms=self._auto_value_terms(dataset.is_sparse))
        # the linear model maps crowded features where it standardises them: the map
        # comes from the describe pass that makes (features as they are otherwise)
        if feature_map is None and not config.standardize_linear:
            config = replace(config, spread_tails=False)
        # pairs given by name are the model asked for: the linear model, which has none,
        # does not replace it
        given = isinstance(self.interactions, list | tuple) and len(self.interactions) > 0
        config = replace(config, linear_candidate=len(config.bases_grid) > 1 and not given)
        # too few rows for the held-out share to choose, but enough for folds: the driver
        # cross-fits (its rule: driver.cross_fit_folds); the classes' counts are
        # one scan of the target column
        fraction = float(self.calibration_fraction)
        rows = weighted_rows(dataset) if self.calibrate else 0  # a row of weight 0 is none
        if (dataset.classes is not None
                and fraction * rows < MIN_CHECK_ROWS <= rows):
            config = replace(config, cross_fit_share=fraction, cross_fit_rows=rows,
                             class_shares=tuple(float(c) for c in class_counts(dataset)))
        return additive_solver.fit(runner, dataset, config, seed)

    def _set_fitted(self, fitted: additive_solver.AdditiveFit) -> None:
        self.feature_names_in_ = fitted.feature_names
        self.n_features_in_ = len(fitted.feature_names)
        self.feature_map_ = fitted.feature_map
        if fitted.feature_transform is not None:
            self.feature_transform_ = fitted.feature_transform
        else:
            self.__dict__.pop("feature_transform_", None)
        self.n_train_ = fitted.n_train
        self.n_calibration_ = fitted.n_calibration
        self._set_regularisation(fitted.regularisation)
        self.coef_d_ = fitted.coef_d
        self.state_w_d_ = fitted.state_w_d
        self.platt_a_, self.platt_b_ = fitted.platt_a, fitted.platt_b
        self.proba_scale_ = float(fitted.proba_scale)
        self.multiclass_ = str(fitted.multiclass)
        self._keep("multiclass_check_", fitted.multiclass_check)
        self.calibrated_ = fitted.calibrated
        fewest = fitted.fewest_calibration_rows
        if fewest is not None and not fitted.calibrated:
            warnings.warn(
                f"predict_proba is not calibrated: the {fitted.n_calibration} held-out rows "
                f"hold {fewest} rows of one class for one of the binary models, fewer than "
                f"the {MIN_CALIBRATION_ROWS} of each that Platt's sigmoids need; the "
                "sigmoids were fitted to the scores of every row instead, training rows "
                "included, whose scores are optimistic (the model was fitted to them), so "
                "the probabilities may be too sure. Raise calibration_fraction to hold out "
                "enough rows of every class",
                UserWarning, stacklevel=caller_stacklevel())
        self.n_iter_, self.t_ = fitted.n_iter, fitted.t
        self.step_norm_sq_ = float(fitted.step_norm_sq)
        self.average_start_ = fitted.average_start
        self.monitor_loss_ = list(fitted.monitor_history)
        self._set_convergence(fitted)
        fmap = fitted.feature_map
        pairs = fmap.interactions if isinstance(fmap, BSplinePairMap) else ()
        names = self._feature_names
        self.interactions_ = tuple((names[f], names[g]) for f, g in pairs)
        if pairs:
            self.pair_bases_ = int(fmap.pair_bases)
        else:
            self.__dict__.pop("pair_bases_", None)
        terms = fmap.value_terms if isinstance(fmap, BSplinePairMap) else ()
        transform = fitted.feature_transform
        self.value_terms_ = tuple(
            (names[f], tuple(float(v) for v in (
                np.asarray(values) if transform is None
                else transform.preimage(np.asarray(values), f))))
            for f, values in terms)
        self._keep("value_check_", fitted.value_check)
        d = self.n_features_in_
        if fitted.importances is not None:  # a missing value's indicator counts for its column
            self.feature_importances_ = self._importances_per_column(fitted.importances[:d])
            self.interaction_importances_ = fitted.importances[d:]
        else:
            self.__dict__.pop("feature_importances_", None)
            self.__dict__.pop("interaction_importances_", None)
        self._keep("n_bases_", int(fmap.n_bases) if isinstance(fmap, BSplineMap) else None)
        self._keep("bases_tried_", [[n, loss] for n, loss in fitted.bases_tried] or None)
        self._keep("linear_check_", fitted.linear_check)
        self._keep("cross_fit_", fitted.cross_fit)
        self._keep("feature_ranges_", fitted.ranges)
        self._keep("interaction_scores_", fitted.pair_scores)
        if fitted.pair_check is not None:
            self.interaction_check_ = fitted.pair_check
        elif isinstance(self.interactions, str):  # "auto" tried none: say why
            sparse = bool(getattr(self.feature_map_, "zero_preserving", False))
            reason = ("pair terms need the B-spline embedding with calibration and "
                      "zero_preserving=False (dense rows)"
                      if self._auto_interactions(2, sparse) == 0
                      else "fewer than two features")
            self.interaction_check_ = {"kept": False, "reason": reason}
        else:
            self.__dict__.pop("interaction_check_", None)
        if fitted.pg_range is not None:
            self.pg_range_ = fitted.pg_range
        if fitted.centre_d is not None:
            self.dcd_centre_ = fitted.centre_d
        else:
            self.__dict__.pop("dcd_centre_", None)

    def _set_convergence(self, fitted: additive_solver.AdditiveFit) -> None:
        """``models_converged_``, ``n_trainings_`` and ``n_trainings_capped_`` of a fit,
        and its one ``ConvergenceWarning`` when any of its trainings stopped at ``epochs``
        without meeting the stopping rule: it names the binary models of the model kept
        that had not converged, and counts the other trainings (the models it was chosen
        from) that stopped at the cap."""
        kept = fitted.convergence
        trainings = fitted.trainings or (() if kept is None else (kept,))
        others = [c for c in trainings if c is not kept]
        capped_others = sum(bool(c.capped) for c in others)
        n_models = self.coef_d_.shape[0]
        self.models_converged_ = (np.zeros(n_models, dtype=bool) if kept is None
                                  else np.array(kept.converged, dtype=bool))
        self.n_trainings_ = len(trainings)
        self.n_trainings_capped_ = int(kept is not None and kept.capped) + capped_others
        if self.n_trainings_capped_ == 0:
            return
        # one other training (multiclass="auto"'s one-vs-one candidate alone) is singular
        share = ("the other model" if len(others) == 1
                 else "all" if capped_others == len(others)
                 else f"{capped_others} of the")
        if len(others) > 1:
            share += f" {len(others)} other models"
        chosen_from = (f"{share} this fit trained to choose the one kept (counts of bases, "
                       "pair terms, value terms, the linear model, one-vs-one)")
        if kept is not None and kept.capped:
            message = kept.describe(self._models_named(~self.models_converged_))
            if capped_others:
                its = "its" if len(others) == 1 else "their"
                message += (f". {chosen_from[0].upper()}{chosen_from[1:]} stopped at {its} "
                            "cap too")
        else:
            solver = "PEGASOS" if self.solver == "pegasos" else "dual coordinate descent"
            message = (f"{solver} met its stopping rule for the model kept, but "
                       f"{chosen_from} stopped after epochs={self.epochs_} without meeting "
                       "it, so the choice compared models trained short of it; raise epochs "
                       "or tol")
        warnings.warn(message, ConvergenceWarning, stacklevel=caller_stacklevel())

    def _models_named(self, mask: np.ndarray) -> str:
        """The binary models of ``mask`` in words: ``"the model"`` of two classes, else
        e.g. ``"3 of the 10 one-vs-rest models (classes 0, 4, 7)"``."""
        names = self._model_names()
        if len(names) == 1:
            return "the model"
        chosen = np.flatnonzero(mask)
        shown = ", ".join(str(names[j]) for j in chosen[:MAX_NAMED_MODELS])
        if chosen.size > MAX_NAMED_MODELS:
            shown += ", ..."
        kind, noun = (("one-vs-one", "class pairs") if self._pairs().one_vs_one
                      else ("one-vs-rest", "classes"))
        count = (f"all {len(names)}" if chosen.size == len(names)
                 else f"{chosen.size} of the {len(names)}")
        return f"{count} {kind} models ({noun} {shown})"

    def _continues_online(self) -> bool:
        """Whether :meth:`partial_fit` can start or go on: a count of pairs to screen
        (``interactions=k``) leaves only the continuation of a fitted model, and the
        method is absent (an ``AttributeError`` that says why) until ``fit``."""
        if (self.is_fitted or not self._has_interactions()
                or isinstance(self.interactions, list | tuple)):
            return True
        raise AttributeError("partial_fit screens no pairs: pair terms come from fit's "
                             "screening pass (interactions=k) or are given as a list of "
                             "feature pairs; set interactions=0 or a list, or use fit")

    @available_if(_continues_online)
    def partial_fit(self, X: Any, y: Any, classes: Any = None,
                    sample_weight: Any = None) -> AdditiveSVC:
        """One PEGASOS pass over one chunk of in-memory rows.

        The first call fixes the classes (``classes``, required when there are more than
        two; else the labels of ``y``), the features and the feature map. The map is fitted
        from ``feature_range`` when it is set, else from this first chunk's statistics
        (minimum and maximum; mean and standard deviation for Hermite).
        The first call also fixes the category list of each string or categorical column
        (every category of a pandas ``category`` column, else the values present; a call
        after ``fit`` keeps fit's): a later call holding another category raises a
        ``DataError`` rather than train it as an unseen one, so declare every category on
        the first call with a ``pd.Categorical`` (or ``CategoricalDtype``) of the full list.
        A first call whose rows hold a NaN learns how to read missing values from them,
        as ``fit`` does from its rows (``missing_values_``); a later call reads its NaN
        through that map, or ``fit``'s (a column without a gap there: its fill value, no
        indicator). A model without a map (its first rows had no NaN) refuses NaN.

        Later chunks with more than 5% of a feature's values outside the map's range:
        without ``feature_range``, a B-spline map grows to cover them (fewer outliers, the
        tail of a shuffled stream, are clamped). Its knot grid is extended by whole segments of
        the same spacing (every feature gets the same number of new segments: those it
        needs below its range, the rest above), so the old bases are among the new ones,
        and the learned curves (last iterates and averaged models) are re-fitted to the new
        bases by least squares over the old range, where they stay the same; weights that
        range does not determine get the smallest norm. Past ``4 * n_bases`` bases the map
        is refitted over the union of the ranges with that many bases (coarser knots, the
        curves kept approximately). Fourier maps, maps with pair terms (from ``fit``, or
        the pairs of ``interactions`` given as a list, on the first chunk's ranges), and
        any map with ``feature_range``, clamp such values and warn (``UserWarning``); the
        Hermite map standardises by the first chunk's mean and standard deviation and
        clamps the standardised values to ``+-3`` without a warning. A stream whose first
        chunk does not span the data, e.g. one sorted by a feature, is best given
        ``feature_range``: growth keeps the first chunk's knot spacing, which may be too
        fine for the whole range.

        Unless ``lam`` is set, ``lam = 1 / (C n)`` with ``n`` the total sample weight of
        every row trained so far, this call's included (of ``fit``'s training rows, then
        of each call's, their number without weights), worked out again at each call: the
        objective is the SVM of the rows seen so far with the ``C`` ``fit`` would give
        them, whatever the sizes of the calls (a row read by ``m`` calls counts ``m``
        times). PEGASOS's step offset ``t0 = R^2 / lam`` (``R^2`` the mean squared norm
        of the first call's embedded rows, or of fit's row sample) follows ``lam``, so
        that the steps ``1 / (lam (t0 + k))`` after ``k`` steps are those of PEGASOS run
        with the current ``lam`` from the start. A ``lam`` fixed by the first chunk alone
        over-regularised streams of small calls: 3,000 rows of ``make_moons`` in calls of
        one row tested at 0.50 (one class everywhere), now about ``fit``'s 0.93. ``C`` or
        ``lam`` changed by ``set_params`` between calls take effect at the next. With
        ``average``, predictions use the
        mean of the iterates after the first chunk. A row of sample weight 0 is no row: it
        takes no part in the map's ranges or growth, the steps or ``n_train_``. No
        calibration:
        :meth:`predict_proba` uses the plain logistic of the scores (or the sigmoids of an
        earlier ``fit``).

        Sparse rows (a ``scipy.sparse`` matrix or array, as ``HashingVectorizer`` gives)
        train as ``fit`` trains them, each stored value costing its bases and each zero
        nothing, with the settings that ``fit`` takes sparse rows with (``embedding``
        ``"linear"``, or ``"bspline"`` with ``zero_preserving`` true or ``"auto"``; no
        pairs). A model whose map was made for dense rows (``zero_preserving`` false, or
        features mapped first by ``spread_tails``) takes dense rows only. The first
        call's columns (zeros included) give the map's ranges, and a later value outside
        them grows the map as for dense rows. The features are taken as they are, as for
        dense rows.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n, n_features)
        y : array-like of shape (n,)
        classes : array-like, optional
            All labels that will ever be seen; only on the first call.
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        self
        """
        self._check_partial_fit_target(y)
        self._validate_hyperparameters()
        sample_weight = self._partial_fit_sample_weight(y, classes, sample_weight)
        rows = sparse_rows_of(X, self.n_features_in_ if self.is_fitted else None,
                              type(self).__name__, named=has_named_features(self))
        if sample_weight is not None:  # finite and non-negative, as fit takes them
            sample_weight = check_sample_weight(sample_weight, np.shape(y)[0],
                                                all_zero=self.is_fitted)
        first = not self.is_fitted
        if rows is not None:
            self._check_sparse_partial_fit(rows, first)
        if first and rows is not None:
            self._start_partial_fit_sparse(rows, y, classes, sample_weight)
        elif first:
            self._start_partial_fit(X, y, classes, sample_weight)
        elif classes is not None and not np.array_equal(sorted_classes(classes), self.classes_):
            raise LabelError(f"classes {list(classes)} differ from those of the first call "
                             f"{self.classes_.tolist()}")
        if rows is not None:
            return self._partial_fit_rows(rows, y, sample_weight, first)
        return self._partial_fit_rows(self._model_rows(self._check_training_X(X)), y,
                                      sample_weight, first)

    def _partial_fit_rows(self, X: np.ndarray | SparseRows, y: Any, sample_weight: Any,
                          first: bool) -> AdditiveSVC:
        """:meth:`partial_fit`'s steps over checked rows, dense or sparse."""
        codes = encode_labels(y, self.classes_)
        if codes.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {codes.shape[0]}")
        weight = (np.ones(X.shape[0], dtype=np.float32) if sample_weight is None
                  else np.ascontiguousarray(sample_weight, dtype=np.float32).reshape(-1))
        if weight.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but sample_weight has {weight.shape[0]}")
        kept = weight > 0
        if not kept.all():  # a row of weight 0 is no row: no growth, no step, not counted
            X = X.take(np.flatnonzero(kept)) if isinstance(X, SparseRows) else X[kept]
            codes, weight = codes[kept], weight[kept]
            if X.shape[0] == 0:
                return self._class_weight_recorded()
        if not first:
            self._count_rows(X.shape[0], float(np.sum(weight, dtype=np.float64)))
        if first and self.feature_range is None:
            pass  # the rows the map came from
        elif (self.feature_range is None and isinstance(self.feature_map_, BSplineMap)
                and not isinstance(self.feature_map_, BSplinePairMap)):
            self._grow_map(X)
        elif isinstance(X, SparseRows):
            self._warn_clamped(self._sparse_clamped(X), X.n_rows)
        else:
            self._warn_outside_range(X)
        W = np.ascontiguousarray(self.state_w_d_, dtype=np.float64).copy()
        averaging = self.t_ >= self.average_start_
        AVG = self.coef_d_.copy() if averaging else np.zeros_like(W)
        self.t_ = int(pegasos_ovr_chunk(X, codes, *self._pairs(), weight, self.pegasos_lam_,
                                        float(self.bias_scale), W, AVG, self.t_,
                                        self.average_start_, *self._embedding()))
        self.n_train_ += X.shape[0]
        self.state_w_d_ = W
        self.coef_d_ = AVG if self.t_ >= self.average_start_ else W.copy()
        if in_race():  # a lane's: made once for the survivor kept (racing.finish_lane)
            self.__dict__.pop("feature_importances_", None)
            self.__dict__.pop("interaction_importances_", None)
        else:
            self._set_importances(X)
        return self._class_weight_recorded()

    def _count_rows(self, n_rows: int, weight_sum: float) -> None:
        """A later call's rows join the training rows: the penalty is worked out again from
        ``C`` and ``lam`` (as set now) and the weight of every row trained so far, and
        PEGASOS's step offset ``t0 = R^2 / lam`` follows the new ``lam``: ``t_`` and
        ``average_start_`` move by the change of ``t0``, so that the steps go on as those
        of PEGASOS run with the new ``lam`` from the start (the step ``1 / (lam (t0 + k))``
        after ``k`` steps; without the move a ``lam`` that fell from that of a first call
        of one row to that of thousands made steps thousands of times longer)."""
        before = self.pegasos_lam_
        self._set_regularisation(Regularisation.of(
            float(self.C), self.lam, int(self.n_train_) + n_rows,
            float(self.sample_weight_sum_) + weight_sum))
        norm_sq = getattr(self, "step_norm_sq_", None)
        if norm_sq is None or self.pegasos_lam_ == before:
            return
        shift = offset_of(norm_sq, self.pegasos_lam_) - offset_of(norm_sq, before)
        self.t_ = int(self.t_) + shift
        if self.average_start_ != NO_AVERAGING:
            self.average_start_ = int(self.average_start_) + shift

    def _finish_lane(self, X: np.ndarray) -> None:
        """The importances a ``partial_fit`` lane skipped (:mod:`~streamlearn.models.racing`),
        over the rows ``X`` as the lanes read them; a model that has them keeps them."""
        if "feature_importances_" in self.__dict__:
            return
        rows = sparse_rows_of(X, self.n_features_in_, type(self).__name__)
        with library_rows():
            self._set_importances(rows if rows is not None
                                  else self._model_rows(self._check_training_X(X)))

    def _set_importances(self, X: np.ndarray | SparseRows) -> None:
        """``feature_importances_`` and ``interaction_importances_`` of the model as it is,
        over the rows of a ``partial_fit`` call (at most ``DESCRIBE_SAMPLE_ROWS`` of them,
        evenly spaced): ``fit`` takes them over the describe pass's row sample."""
        if X.shape[0] > DESCRIBE_SAMPLE_ROWS:
            X = take_rows(X, np.linspace(0, X.shape[0] - 1,
                                         DESCRIBE_SAMPLE_ROWS).astype(np.int64))
        rows = X if isinstance(X, SparseRows) else np.ascontiguousarray(X)
        importances = sample_importances(rows, self.coef_d_, self.feature_map_,
                                         self._embedding())
        d = self.n_features_in_
        self.feature_importances_ = importances[:d]
        self.interaction_importances_ = importances[d:]

    def _check_sparse_partial_fit(self, rows: SparseRows, first: bool) -> None:
        """Refuse sparse rows this model cannot train on as they are, before any step
        (:func:`~streamlearn.models.base.sparse_rows_of` has refused values that are not
        finite)."""
        refusal = self._sparse_refusal()
        if refusal is None and not first and (
                getattr(self, "feature_transform_", None) is not None
                or not self._embedding().takes_sparse_rows):
            refusal = ("this model's feature map was made for dense rows (by fit or a "
                       "first partial_fit call of dense rows); train it on dense rows")
        if refusal is not None:
            raise ValueError(f"partial_fit was given sparse rows: {refusal}")

    def _start_partial_fit_sparse(self, rows: SparseRows, y: Any, classes: Any,
                                  sample_weight: Any) -> None:
        """First ``partial_fit`` call on sparse rows: classes, features (numbered, as a
        scipy matrix's columns), the feature map over each column's values and zeros, and
        empty models."""
        known = self._partial_fit_classes(y, classes)
        encode_labels(y, known)
        if sample_weight is not None:  # a row of weight 0 is no row: not in the map's ranges
            rows = rows.take(np.flatnonzero(
                np.asarray(sample_weight, dtype=np.float64).reshape(-1) > 0))
        feature_names = tuple(default_feature_names(rows.n_cols))
        feature_map = self._make_map(online=True, sparse=True)
        if feature_map is not None:
            n, mean, m2, lo, hi = sparse_chunk_moments(*rows.kernel_args, rows.n_cols)
            std = np.sqrt(np.maximum(m2, 0.0) / max(n, 1))
            fit_feature_map(feature_map, self._given_range(rows.n_cols), minimum=lo,
                            maximum=hi, mean=mean, std=std)
        record_feature_names(self, feature_names, False)
        record_categories(self, {})
        self.classes_ = storable_classes(known)
        self._start_models(feature_names, feature_map, rows, sample_weight)

    def _partial_fit_classes(self, y: Any, classes: Any) -> np.ndarray:
        """The classes of a first ``partial_fit`` call: ``classes``, or the labels of
        ``y`` when it holds two."""
        known = sorted_classes(classes if classes is not None else y)
        if len(known) < 2:
            raise LabelError(f"partial_fit needs at least two classes, got {known.tolist()}; "
                             "pass classes=[...] with all labels on the first call")
        if classes is None and len(known) > 2:
            raise LabelError(f"y has {len(known)} classes: pass classes=[...] with all labels "
                             "on the first call to partial_fit")
        return known

    def _start_partial_fit(self, X: Any, y: Any, classes: Any, sample_weight: Any) -> None:
        """First ``partial_fit`` call: classes, features, feature map and empty models."""
        named = has_column_names(X)
        coded = coded_table(X)
        categories: dict[str, tuple[Any, ...]] = {}
        if coded is not None:
            X, names, categories = coded
        else:
            names = getattr(X, "columns", None)
            if names is None:
                names = getattr(X, "column_names", None)
        values = np.asarray(X, dtype=np.float32)
        if values.ndim != 2:
            raise ValueError(f"X must be 2-D (rows x features), got shape {values.shape}")
        known = self._partial_fit_classes(y, classes)
        feature_names = (tuple(str(c) for c in names) if names is not None
                         else tuple(default_feature_names(values.shape[1])))
        values = self._first_call_missing_values(values, feature_names, categories)
        if hasattr(self, "missing_values_"):  # the columns the model reads, indicators last
            feature_names = tuple(self.missing_values_.feature_names)
        values = check_features(values, feature_names)
        encode_labels(y, known)
        if sample_weight is not None:  # a row of weight 0 is no row: not in the map's ranges
            values = values[np.asarray(sample_weight, dtype=np.float64).reshape(-1) > 0]
        self._warn_category_codes(categories, online=True)
        feature_map = self._with_given_pairs(
            self._make_map(bool(categories), online=True, categories=categories),
            feature_names)
        if feature_map is not None:
            x64 = values.astype(np.float64)
            fit_feature_map(feature_map, self._given_range(values.shape[1]),
                            minimum=x64.min(axis=0), maximum=x64.max(axis=0),
                            mean=x64.mean(axis=0), std=x64.std(axis=0))
            knot_per_category(feature_map, feature_names, categories)
        record_feature_names(self, feature_names, named)
        self.classes_ = storable_classes(known)
        self._start_models(feature_names, feature_map, values, sample_weight)
        self._keep_input_columns()  # the given columns, which later calls' rows hold
        record_categories(self, categories)

    def _start_models(self, feature_names: tuple[str, ...], feature_map: FeatureMap | None,
                      values: np.ndarray | SparseRows, sample_weight: Any) -> None:
        """The first ``partial_fit`` call's models, empty, for ``classes_`` and the rows
        ``values`` (of positive weight; the first of them are the step offset's sample)."""
        n = values.shape[0]
        weight_sum = (float(n) if sample_weight is None
                      else float(np.sum(np.asarray(sample_weight, dtype=np.float64))))
        if not weight_sum > 0:
            raise ValueError(f"the sample weights of the first partial_fit chunk sum to "
                             f"{weight_sum}; it needs a row with a positive weight")
        self.n_features_in_ = len(feature_names)
        self.feature_map_ = feature_map
        pairs = feature_map.interactions if isinstance(feature_map, BSplinePairMap) else ()
        self.interactions_ = tuple((feature_names[f], feature_names[g]) for f, g in pairs)
        self._keep("pair_bases_", int(feature_map.pair_bases) if pairs else None)
        self._set_regularisation(Regularisation.of(self.C, self.lam, n, weight_sum))
        self.n_train_ = 0
        self.n_calibration_ = 0
        self.n_iter_ = 0
        self.monitor_loss_: list[float] = []
        self.n_trainings_ = self.n_trainings_capped_ = 0
        # the first chunk is the row sample of the step offset (fit uses the describe's)
        self.step_norm_sq_ = step_norm_sq(feature_map, take_rows(
            values, np.arange(min(n, SAMPLE_ROWS))), float(self.bias_scale))
        self.t_ = offset_of(self.step_norm_sq_, self.pegasos_lam_)
        self.average_start_ = self.t_ + n + 1 if self.average else int(NO_AVERAGING)
        # one pass over each row compares no schemes: "auto" is one-vs-rest
        self.multiclass_ = "ovr" if self.multiclass == "auto" else str(self.multiclass)
        self.__dict__.pop("multiclass_check_", None)
        self.__dict__.pop("cross_fit_", None)
        m = len(self._pairs().positive)
        dims = self._embedding().n_dims + 1
        self.state_w_d_ = np.zeros((m, dims))
        self.coef_d_ = np.zeros((m, dims))
        self.platt_a_ = np.full(m, -1.0)
        self.platt_b_ = np.zeros(m)
        self.models_converged_ = np.zeros(m, dtype=bool)  # no rule judges partial_fit
        self.calibrated_ = False
        self.proba_scale_ = 1.0

    def _grow_map(self, X: np.ndarray | SparseRows) -> None:
        """Extend the B-spline map to cover ``X``, keeping the learned curves on its range."""
        max_bases = MAX_BASES_GROWTH * self._bases_grid(
            online=True, categories=getattr(self, "categories_", None))[0]
        if isinstance(X, SparseRows):
            _, _, _, x_min, x_max = sparse_chunk_moments(*X.kernel_args, X.n_cols)
            clamped = self._sparse_clamped(X)
            assert clamped is not None
            grown = grown_to_cover(self.feature_map_, x_min, x_max, clamped / max(X.n_rows, 1),
                                   max_bases, GROWTH_SHARE)
        else:
            grown = grown_bspline_map(self.feature_map_, X, max_bases, GROWTH_SHARE)
        if grown is None:
            return
        old, n_features = self.feature_map_, self.n_features_in_
        self.state_w_d_ = reproject(self.state_w_d_, old, grown, n_features)
        self.coef_d_ = reproject(self.coef_d_, old, grown, n_features)
        self.feature_map_ = grown

    def _warn_outside_range(self, X: np.ndarray) -> None:
        """Warn when more than :data:`~streamlearn.models.racing.CLAMPED_SHARE_WARNING` of
        the values of a feature that ``partial_fit`` has trained on since the feature map
        was made (but the rows it was made from) are clamped by it, once for each such
        feature.

        The share is taken over all those calls' rows, not one call's: one value outside in
        a call of a few dozen rows is over the share and tells nothing (a stream of
        100-row calls on rows drawn alike, after a first call of 1,000, warned at most
        calls). A lane of a search's race records its counts instead, and the search warns
        once (:func:`~streamlearn.models.racing.record_clamped`)."""
        lo = getattr(self.feature_map_, "lo_", None)
        hi = getattr(self.feature_map_, "hi_", None)
        if lo is None or hi is None or X.shape[0] == 0:
            return
        self._warn_clamped(np.count_nonzero((X < lo[None, :]) | (X > hi[None, :]), axis=0),
                           X.shape[0])

    def _sparse_clamped(self, X: SparseRows) -> np.ndarray | None:
        """Per feature, the stored values of ``X`` outside the map's range (a zero is
        inside: a zero-preserving map's range holds 0); None without a range."""
        lo = getattr(self.feature_map_, "lo_", None)
        hi = getattr(self.feature_map_, "hi_", None)
        if lo is None or hi is None:
            return None
        columns = X.indices[X.indptr[0]:X.indptr[-1]]
        values = X.values[X.indptr[0]:X.indptr[-1]]
        outside = (values < lo[columns]) | (values > hi[columns])
        return np.bincount(columns[outside], minlength=X.n_cols)[:self.n_features_in_]

    def _warn_clamped(self, clamped: np.ndarray | None, n_rows: int) -> None:
        """:meth:`_warn_outside_range` of the per-feature counts of clamped values of a
        call of ``n_rows`` rows."""
        if clamped is None or n_rows == 0:
            return
        lo, hi = self.feature_map_.lo_, self.feature_map_.hi_
        if record_clamped([str(name) for name in self._feature_names], clamped, n_rows):
            return  # a lane of a search's race: the search warns once
        tally = self.__dict__.get("_clamp_tally")
        if tally is None or tally.feature_map is not self.feature_map_:
            tally = self._clamp_tally = ClampTally(self.feature_map_, clamped.shape[0])
        share = tally.add(clamped, n_rows)
        outside = np.flatnonzero((share > CLAMPED_SHARE_WARNING) & ~tally.warned)
        if outside.size:
            tally.warned[outside] = True
            f = int(outside[0])
            source = ("The range is feature_range's." if self.feature_range is not None else
                      "The range comes from the first partial_fit chunk (or fit): pass "
                      "feature_range=(min, max) when the chunks do not each span the data")
            warnings.warn(
                f"{outside.size} feature(s) have values outside the feature map's range, "
                f"first {self._feature_names[f]!r}: {share[f]:.1%} of the {tally.rows:,} "
                f"rows partial_fit has trained on since the map was made lie outside "
                f"[{lo[f]:.6g}, {hi[f]:.6g}]; they are clamped to it (warned once a "
                f"feature). {source}", UserWarning, stacklevel=caller_stacklevel())

    # -- prediction -----------------------------------------------------------------------
    def _given_rows(self, X: Any) -> np.ndarray:
        """Dense prediction rows checked against the columns of ``fit``, their missing
        values read as in fit (``missing_values_``)."""
        return self._missing_filled(check_features(
            X, self._feature_names, type(self).__name__, named=has_named_features(self),
            allow_missing=hasattr(self, "missing_values_")))

    def _model_rows(self, values: np.ndarray) -> np.ndarray:
        """Dense rows as the feature map takes them: through ``feature_transform_``."""
        transform = getattr(self, "feature_transform_", None)
        return values if transform is None else transform.apply(values)

    def _scores(self, X: Any) -> np.ndarray:
        self._check_fitted()
        emb = self._embedding()
        rows = sparse_rows_of(X, self.n_features_in_, type(self).__name__,
                              named=has_named_features(self),
                              hashing=hashing_of(self))
        if rows is None:
            return decision_ovr_chunk(self._model_rows(self._given_rows(X)), self.coef_d_,
                                      float(self.bias_scale), *emb)
        if (emb.takes_sparse_rows and getattr(self, "feature_transform_", None) is None
                and getattr(self, "missing_values_", None) is None):
            return decision_ovr_chunk(rows, self.coef_d_, float(self.bias_scale), *emb)
        # a map trained on dense rows (or features mapped before it, which a zero does not
        # survive): densify a block of rows at a time
        return np.concatenate([
            decision_ovr_chunk(
                self._model_rows(self._missing_filled(
                    rows.slice(a, min(a + DENSE_BLOCK_ROWS, rows.n_rows)).toarray())),
                self.coef_d_, float(self.bias_scale), *emb)
            for a in range(0, max(rows.n_rows, 1), DENSE_BLOCK_ROWS)])

    def svm_scores(self, X: Any) -> np.ndarray:
        """Raw SVM scores ``w_j . Psi(x) + b_j`` of every binary model.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or a table with the fit-time columns

        Returns
        -------
        ndarray of shape (n, n_models), float64
            Columns in the order of ``coef_d_``.
        """
        return self._scores(X)

    def _log_odds(self, scores: np.ndarray) -> np.ndarray:
        # calibrated log-odds -(A f + B) of each binary model (f itself when uncalibrated)
        return -(scores * self.platt_a_[None, :] + self.platt_b_[None, :])

    @over_dask_blocks
    def decision_function(self, X: Any) -> np.ndarray:
        """Confidence scores whose sign (two classes) or argmax (more) is :meth:`predict`.

        Two classes: the calibrated log-odds ``-(A f + B)`` of ``classes_[1]``, ``f`` the
        SVM score ``w . Psi(x) + b`` and ``A, B`` its Platt sigmoid (``platt_a_``,
        ``platt_b_``); without calibration (``A = -1, B = 0``) this is ``f`` itself.
        More classes, one-vs-rest: the calibrated log-odds of each class's model, a
        monotone transform of its calibrated probability. One-vs-one: the votes each class
        gets from the pairwise models (the sign of their raw scores) plus half its coupled
        probability (in ``[0, 0.5]``, a tie-break), like scikit-learn's ``SVC`` with
        ``decision_function_shape="ovr"``. The raw scores of every model are
        :meth:`svm_scores`.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or a table with the fit-time columns

        Returns
        -------
        ndarray of shape (n,) for two classes, else (n, n_classes) with columns in the
        order of ``classes_``; float64.
        """
        return self._decision(self._scores(X))

    def _decision(self, scores: np.ndarray) -> np.ndarray:
        if scores.shape[1] == 1:
            return self._log_odds(scores)[:, 0]
        pairs = self._pairs()
        if not pairs.one_vs_one:
            return self._log_odds(scores)
        winner = np.where(scores > 0, pairs.positive[None, :], pairs.negative[None, :])
        k = len(self.classes_)
        votes = (winner[:, :, None] == np.arange(k)[None, None, :]).sum(axis=1)
        # coupled probabilities lie in [0, 1]: half of one breaks ties only
        proba = self._class_proba(self._model_proba(scores))
        return votes + 0.5 * proba

    def _model_proba(self, scores: np.ndarray) -> np.ndarray:
        return sigmoid_proba(scores, self.platt_a_[None, :], self.platt_b_[None, :])

    @over_dask_blocks
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities from the Platt-calibrated scores.

        Two classes: ``[1 - p, p]`` with ``p`` the sigmoid of the score. More classes: the
        calibrated sigmoid of each one-vs-rest model, normalised to sum to 1 per row; for
        one-vs-one, the pairwise sigmoids coupled into class probabilities
        (:func:`~streamlearn.solvers.pairwise_coupling.couple_pairwise`). Without
        calibration the sigmoids are the plain logistic ``1 / (1 + exp(-f))``. One-vs-rest
        probabilities are then raised to the power ``s = proba_scale_`` and normalised
        again (temperature scaling: each sigmoid, fitted alone, leaves the normalised
        probabilities less sure than the held-out rows show), which keeps every
        decision.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, n_classes), columns in the order of ``classes_``
        """
        return self._class_proba(self._model_proba(self._scores(X)))

    def _class_proba(self, p: np.ndarray) -> np.ndarray:
        # class probabilities from the probabilities of the binary models, at the
        # temperature proba_scale_ (one-vs-rest; 1 on a model stored without it)
        pairs = self._pairs()
        proba = class_probabilities(p, pairs.positive, pairs.negative, len(self.classes_))
        scale = float(getattr(self, "proba_scale_", 1.0))
        if scale == 1.0:
            return proba
        return temperature_proba(np.log(np.maximum(proba, 1e-300)), scale)

    @over_dask_blocks
    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels: the sign (two classes) or argmax of :meth:`decision_function`.

        Two classes and one-vs-rest: the class whose calibrated probability is highest
        (paper 000, Sec. 6); without calibration, the sign or the highest SVM score. With
        calibration the two-class threshold is the Platt sigmoid's ``f = -B / A`` rather
        than ``f = 0``. One-vs-one: the class that wins most pairwise votes, ties going to
        the highest coupled probability. So ``predict`` agrees with the argmax of
        :meth:`predict_proba` (except one-vs-one, where votes decide).

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,), labels from ``classes_``
        """
        decision = self._decision(self._scores(X))
        if decision.ndim == 1:
            return self.classes_[(decision > 0).astype(np.int64)]
        return self.classes_[np.argmax(decision, axis=1)]

    # -- what the model learned -----------------------------------------------------------
    def term_contributions(self, X: Any) -> np.ndarray:
        """Each term of each binary model's SVM score, at the rows of ``X``.

        The score is additive, ``f_j(x) = sum_f g_jf(x_f) + sum_p h_jp(x_a, x_b) + b_j``
        over the features and the pairs of :attr:`interactions_`: entry ``[i, t, j]`` is
        term ``t`` (the features in order, then the pairs) of model ``j`` at row ``i``, so
        summing over ``t`` and adding :attr:`intercept_` gives :meth:`svm_scores`. Each
        term is defined up to a constant that the intercept can absorb (the B-spline bases
        of a feature sum to 1). A pair's term is shown purified: its means along each of
        its features, weighted by where the training rows lie, are moved to those
        features' terms (:func:`~streamlearn.features.pair_terms.move_marginals`), so it
        holds only what no sum of curves can.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or a table with the fit-time columns

        Returns
        -------
        ndarray of shape (n, n_features + n_interactions, n_models), float64
            Models in the order of ``coef_d_`` (:meth:`svm_scores`'s columns).
        """
        self._check_fitted()
        return self._terms(self._model_rows(self._given_rows(X)))

    def _terms(self, X: np.ndarray) -> np.ndarray:
        """Every term at rows ``X`` (as the feature map takes them), pairs' marginals
        moved to their features."""
        terms = feature_terms(X, self.coef_d_, *self._embedding())
        fmap = self.feature_map_
        if isinstance(fmap, BSplinePairMap) and fmap.n_pairs:
            move_marginals(terms, X, fmap, self.coef_d_)
        return terms

    def shape_functions(self, n_points: int = 100,
                        ranges: Any = None) -> Any:
        """Each feature's learned curve ``g_jf`` on a grid, as a long table.

        Parameters
        ----------
        n_points : int
            Grid points per numeric feature, evenly spaced over its range (over its mapped
            range for a feature of ``feature_transform_``: the ``value`` column then holds
            the original values, closer together where the rows crowd). A feature with a
            value term (``value_terms_``) also gets each of its values, where the shape
            jumps.
        ranges : array-like of shape (n_features, 2), optional
            ``(low, high)`` of every feature. Default: the range the feature map covers
            (the training rows' minimum and maximum, or ``feature_range``; for Hermite maps
            the mean plus or minus 3 standard deviations). Needed for ``embedding="linear"``,
            which keeps no range. A categorical feature takes every category instead.

        Returns
        -------
        pandas.DataFrame
            One row per feature, grid value and binary model: ``feature`` (name), ``value``
            (grid value, or the category), ``model`` (the model's positive class; for
            one-vs-one ``"a vs b"``) and ``contribution`` (``g_jf(value)`` in SVM score
            units; see :meth:`term_contributions` for the constant it is defined up to).
        """
        import pandas as pd

        self._check_fitted()
        if int(n_points) < 2:
            raise ValueError(f"n_points must be at least 2, got {n_points}")
        lo, hi = self._shape_ranges(ranges)
        names = list(self._read_feature_names)
        categories = getattr(self, "categories_", {}) or {}
        models = self._model_names()
        fmap = self.feature_map_
        tables = dict(fmap.value_terms) if isinstance(fmap, BSplinePairMap) else {}
        frames = []
        for f, name in enumerate(names):
            if name in categories:
                grid = np.arange(len(categories[name]), dtype=np.float32)
                shown: Any = list(categories[name])
            else:
                grid = np.linspace(lo[f], hi[f], int(n_points)).astype(np.float32)
                if f in tables:  # the jumps at the value term's values
                    grid = np.union1d(grid, np.asarray(tables[f], dtype=np.float32))
                shown = self._original_values(grid, f)
                transform = getattr(self, "feature_transform_", None)
                if f in tables and transform is not None:  # the values as given
                    at = np.isin(grid, np.asarray(tables[f], dtype=np.float32))
                    shown[at] = transform.preimage(grid[at].astype(np.float64), f)
            X = np.zeros((grid.shape[0], len(names)), dtype=np.float32)
            X[:, f] = grid
            terms = self._terms(X)[:, f, :]  # (points, models), pairs' marginals moved in
            for j, model in enumerate(models):
                frames.append(pd.DataFrame({"feature": name, "value": shown, "model": model,
                                            "contribution": terms[:, j]}))
        return pd.concat(frames, ignore_index=True)

    def interaction_surfaces(self, n_points: int = 20) -> Any:
        """Each pair term's learned surface ``h_jp(a, b)`` on a grid, as a long table.

        Parameters
        ----------
        n_points : int
            Grid points per axis, evenly spaced over each feature's range (a categorical
            feature takes every category instead).

        Returns
        -------
        pandas.DataFrame
            One row per pair, grid point and binary model: ``pair`` (``"a x b"``),
            ``feature_a``, ``value_a``, ``feature_b``, ``value_b``, ``model`` (as in
            :meth:`shape_functions`) and ``contribution`` (SVM score units). Empty (with
            these columns) for a model without pair terms.
        """
        import pandas as pd

        self._check_fitted()
        if int(n_points) < 2:
            raise ValueError(f"n_points must be at least 2, got {n_points}")
        columns = ["pair", "feature_a", "value_a", "feature_b", "value_b", "model",
                   "contribution"]
        fmap = self.feature_map_
        if not isinstance(fmap, BSplinePairMap):
            return pd.DataFrame(columns=columns)
        lo, hi = self._shape_ranges(None)
        names = list(self._read_feature_names)
        categories = getattr(self, "categories_", {}) or {}
        models = self._model_names()
        d = len(names)

        def grid(f: int) -> tuple[np.ndarray, Any]:
            if names[f] in categories:
                values = np.arange(len(categories[names[f]]), dtype=np.float32)
                return values, np.asarray(list(categories[names[f]]), dtype=object)
            values = np.linspace(lo[f], hi[f], int(n_points)).astype(np.float32)
            return values, self._original_values(values, f)

        frames = []
        for p, (f, g) in enumerate(fmap.interactions):
            (ga, sa), (gb, sb) = grid(f), grid(g)
            ia, ib = np.meshgrid(np.arange(ga.shape[0]), np.arange(gb.shape[0]), indexing="ij")
            ia, ib = ia.ravel(), ib.ravel()
            X = np.zeros((ia.shape[0], d), dtype=np.float32)
            X[:, f], X[:, g] = ga[ia], gb[ib]
            terms = self._terms(X)[:, d + p, :]
            for j, model in enumerate(models):
                frames.append(pd.DataFrame({
                    "pair": f"{names[f]} x {names[g]}", "feature_a": names[f],
                    "value_a": sa[ia], "feature_b": names[g], "value_b": sb[ib],
                    "model": model, "contribution": terms[:, j]}))
        return pd.concat(frames, ignore_index=True)

    def _model_names(self) -> list[Any]:
        """The binary models' names: the positive class, or ``"a vs b"`` for one-vs-one."""
        pairs = self._pairs()
        if len(self.classes_) == 2:
            return [self.classes_[1]]
        if pairs.one_vs_one:
            return [f"{self.classes_[a]} vs {self.classes_[b]}"
                    for a, b in zip(pairs.positive, pairs.negative, strict=True)]
        return list(self.classes_)

    def _original_values(self, values: np.ndarray, feature: int) -> np.ndarray:
        """Grid values of ``feature`` as the user gives them (``feature_transform_``
        undone), float64."""
        transform = getattr(self, "feature_transform_", None)
        if transform is None:
            return values.astype(np.float64)
        return transform.inverse(values, feature)

    def _shape_ranges(self, ranges: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` per feature for :meth:`shape_functions`, in the feature map's
        units (``ranges`` are in the data's: mapped by ``feature_transform_``)."""
        d = len(self._read_feature_names)
        if ranges is not None:
            bounds = np.asarray(ranges, dtype=np.float64)
            if bounds.shape != (d, 2) or not np.isfinite(bounds).all() or \
                    np.any(bounds[:, 0] >= bounds[:, 1]):
                raise ValueError(f"ranges must be {d} finite (low, high) pairs with "
                                 f"low < high, got an array of shape {bounds.shape}")
            transform = getattr(self, "feature_transform_", None)
            if transform is not None:
                bounds = transform.apply_bounds(bounds.T).T
            return bounds[:, 0], bounds[:, 1]
        fmap = self.feature_map_
        if fmap is None:
            ranges = getattr(self, "feature_ranges_", None)
            if ranges is None:
                raise ValueError("this linear model kept no feature ranges (its fit made no "
                                 "describe pass): give shape_functions ranges=[(low, high), "
                                 "...], one pair per feature")
            lo, hi = np.asarray(ranges[:, 0]), np.asarray(ranges[:, 1])
            return lo, np.where(hi > lo, hi, lo + 1.0)
        if isinstance(fmap, HermiteMap):
            mean, std = np.asarray(fmap.mean_), np.asarray(fmap.std_)
            return mean - HERMITE_SPAN * std, mean + HERMITE_SPAN * std
        return np.asarray(fmap.lo_, dtype=np.float64), np.asarray(fmap.hi_, dtype=np.float64)

    # -- learned weights ------------------------------------------------------------------
    @property
    def embedding_coef_(self) -> np.ndarray:
        """Weights of the materialised embedding ``Psi_d`` (``w = D_d w_d``), (n_models, n_dims)."""
        self._check_fitted()
        ipar = self._embedding().ipar
        return np.vstack([weights_from_w_d(row, ipar)[:-1] for row in self.coef_d_])

    @property
    def coef_(self) -> np.ndarray:
        """One weight per feature, (n_models, n_features): the linear model's
        ``embedding_coef_``. A model with a feature map has none (as an RBF ``SVC``
        has none): its weights belong to basis functions, not to features."""
        self._check_fitted()
        if getattr(self, "feature_map_", None) is not None:
            raise AttributeError(
                f"coef_ is only available for the linear model (embedding='linear'); this "
                f"{type(self).__name__}'s weights are over its "
                f"{type(self.feature_map_).__name__} embedding (embedding_coef_), and "
                "feature_importances_ ranks its features")
        return self.embedding_coef_

    @property
    def intercept_(self) -> np.ndarray:
        """Bias of each binary model, ``coef_d_[:, -1] * bias_scale``."""
        self._check_fitted()
        return self.coef_d_[:, -1] * self.bias_scale

