"""``MixtureSVC``: a mixture of linear SVMs with RBF gating trained by streamed EM (paper 002).

A binary mixture of ``k`` components models ``P(y | x) = sum_j xi_j g_j(x) P(y | x, w_j)``
with RBF gating ``g_j(x)`` (eq. 7, scale ``tau``, centres ``v_j``) and linear SVM experts
``P(y | x, w_j) = exp(-hinge(y w_j . [x, b]))`` (eq. 10). Training maximises the penalised
log-likelihood (eq. 19)

    ``sum_i s_i log sum_j xi_j g_ij P(y_i | x_i, w_j) - sum_j ||w_j||^2 / (2 C)
    - nu sum_{j: xi_j > 0} log xi_j``

(``s_i`` sample weights; the Dirichlet-type prior of eq. 18 gives eq. 20, which sets the
weight of a component that explains fewer than ``nu`` rows to zero: the component is pruned).
The algorithm (k-means initialisation, batch or stochastic EM, the passes and kernels) is in
:mod:`streamlearn.solvers.mixture`; this module is the scikit-learn estimator over it.

Prediction uses the corrected eq. 21: its two halves ``pos(x) = sum_j xi_j g_j(x)
exp(-max(0, 1 - s_j))`` and ``neg(x) = sum_j xi_j g_j(x) exp(-max(0, 1 + s_j))`` with
``s_j = w_j . [x, b]`` (eq. 21 is ``pos - neg``); ``decision_function`` is the log-odds
``log pos - log neg`` (same sign) and ``P(+1 | x) = pos / (pos + neg)`` its logistic
function. More than two classes are handled one class against the rest, one mixture per
class, or one against one, one mixture per pair of classes (``multiclass``).
``partial_fit`` continues stochastic EM over new in-memory rows.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from streamlearn.data import Dataset, open_dataset
from streamlearn.data.sparse_rows import SparseRows
from streamlearn.engine.checkpoint import DEFAULT_EVERY
from streamlearn.errors import LabelError
from streamlearn.models.base import (
    DENSE_BLOCK_ROWS,
    ClassifierScore,
    StreamEstimator,
    check_array_input,
    classification_dataset,
    has_named_features,
    hashing_of,
    over_dask_blocks,
    record_categories,
    resolve_nan_policy,
    sparse_rows_of,
    storable_classes,
)
from streamlearn.models.class_weight import CLASS_WEIGHT_CONSTRAINT
from streamlearn.solvers.calibration import temperature_proba
from streamlearn.solvers.kmeans import Standardiser
from streamlearn.solvers.mixture import driver
from streamlearn.solvers.mixture.driver import (
    EM_MODES,
    INIT_EXPERT_PASSES,
    KMEANS_EPOCHS,
    LBFGS_STEPS,
    MAX_EXPERT_PASSES,
    MixtureConfig,
    MixtureFit,
    OnlineState,
)
from streamlearn.solvers.mixture.kernels import mixture_log_odds, mixture_log_odds_chunk
from streamlearn.solvers.mixture.passes import (
    EXPERT_SWEEPS,
    LOSSES,
    STEP_DECAY,
    STEP_OFFSET,
    ClusterCountPass,
    ClusterCounts,
    EStepPass,
    EStepStats,
    ExpertObjectivePass,
    ExpertPass,
    ExpertState,
    GatingPass,
    GatingValue,
    InitialExpertPass,
    MixtureParams,
    StochasticEpochPass,
    StochasticState,
    is_squared,
    mixing_weights,
    penalised_loglik,
)
from streamlearn.warning_origin import caller_stacklevel

__all__ = [
    "EM_MODES",
    "EXPERT_SWEEPS",
    "INIT_EXPERT_PASSES",
    "KMEANS_EPOCHS",
    "LBFGS_STEPS",
    "MAX_EXPERT_PASSES",
    "STEP_DECAY",
    "STEP_OFFSET",
    "ClusterCountPass",
    "ClusterCounts",
    "EStepPass",
    "EStepStats",
    "ExpertObjectivePass",
    "ExpertPass",
    "ExpertState",
    "GatingPass",
    "GatingValue",
    "InitialExpertPass",
    "MixtureParams",
    "MixtureSVC",
    "StochasticEpochPass",
    "StochasticState",
    "mixing_weights",
    "penalised_loglik",
]


class MixtureSVC(ClassifierScore, StreamEstimator):
    """Mixture of linear SVMs with RBF gating, trained by EM over chunked data (paper 002).

    Every feature is standardised first, ``z = (x - shift_) / scale_`` with the mean and
    the standard deviation of the training rows (unweighted; a constant feature keeps the
    scale 1 and becomes 0) over the feature's relevance weight (``weight_features``), and
    the mixture is trained and applied to ``z``: a fit on
    features put through any per-feature affine map gives the same predictions (up to
    float round-off), and ``tau``, ``C`` and the centres are in standardised units. Sparse
    rows (a ``scipy.sparse`` matrix, svmlight files, a zarr CSR store) are not centred,
    which keeps their zeros, and keep the units their features share: ``shift_`` is 0 and
    ``scale_`` 1 but for a feature whose largest absolute value lies more than a factor 10
    from the median feature's, which is divided by its ratio to it
    (:meth:`~streamlearn.solvers.kmeans.Standardiser.of_units_apart`, see
    :data:`~streamlearn.solvers.kmeans.SPARSE_UNITS`); every product runs over their
    stored entries. Adult as CSR rows, 8,000 training rows: test error 20.48 % with every
    feature in its own units, 15.24 % with the columns in units apart scaled (14.82 %
    standardised from dense rows); each feature over its largest absolute value instead
    cost 0.5 points of accuracy on rcv1-like rows and 0.9 points on satimage's.

    A categorical column of more than two categories, and at most 256
    (:data:`~streamlearn.features.category_indicators.MAX_INDICATOR_CATEGORIES`), is read
    as one indicator column per category (``category_indicators_``, built in the stream
    from the column's codes; a column of two categories is one indicator already): its
    codes name categories in sorted order, which means nothing as a number. The indicator
    columns are centred but not scaled, so that a categorical column varies about as much
    as one standardised feature, and a category unseen in fit sets none of them (a neutral
    row); in a column of two categories it is read as the column's training mean
    (``shift_``), 0 once standardised, not as the code 2 past both. ``n_features_in_``,
    ``feature_names_in_`` and ``feature_importances_`` stay those of the given columns;
    ``shift_``, ``scale_``, the centres and the experts are over the columns read (``d``).
    A column of more categories keeps its codes, and ``fit`` warns.

    Parameters
    ----------
    n_components : int or "auto"
        Components at the start (``k_max``); components whose mixing weight vanishes
        (eq. 20) are pruned during training. ``"auto"``: ``round(sqrt(n_rows))`` clipped
        to ``[10, 30]``, more local experts for more rows; on data with many rows per
        feature the upper bound rises to ``n_rows // (15 (n_features + 1))``, at most 100,
        so that an even split leaves each expert 15 rows per weight; on small data, at
        most ``n_rows // 30`` (at least one), so that each component has 30 rows, and
        below 2,000 rows (too few for the guard of ``validation_fraction``) at most
        ``n_rows // (5 (n_features + 1))``, so that each expert has 5 rows per weight
        (:func:`~streamlearn.solvers.mixture.default_components`).
    nu : float or "auto"
        Dirichlet-type prior on the mixing weights (eq. 18-20): a component explaining
        fewer than ``nu`` (weighted) rows is pruned. 0 prunes only empty components.
        ``"auto"``: ``min(n_features + 1, n_rows / (2 n_components))``: a component left
        with fewer rows than its expert has weights is pruned, unless that is more than
        half an even share of the rows (on wide data such as images ``n_features + 1``
        exceeds every component's share, and would prune an evenly split mixture down to
        one component).
    tau : float or "auto"
        Gating scale of eq. 7 (in standardised units). ``"auto"``:
        ``tau = c / D^2``, ``D^2`` the median over the k-means centres of the squared
        distance to the nearest other centre (duplicates left out). The log-ratio of two
        neighbouring gates grows as ``2 tau D delta`` with the distance ``delta`` from
        their mid-plane, so this makes it ``c / 2`` half-way from the mid-plane to a
        centre, whatever the dimension and the number of centres. ``c = 16`` leaves each
        region to its own expert; with the guard's held-out rows (see
        ``validation_fraction``) the mixture is also trained at ``c = 4``, softer gates
        that blend neighbouring experts, in the same passes, and ``c = 4`` is kept when
        the log-loss of its :meth:`predict_proba` on the held-out rows is below that of
        ``c = 16`` by more than twice the standard error of the rows' paired
        differences, with the temperatures cross-fitted as ``multiclass="auto"``'s
        comparison takes them (``tau_check_``). From the second epoch on, one factor's
        mixture leaves the later passes as soon as the other's held-out log-loss in that
        epoch, at its best temperature, is clearly lower (by the same two standard errors
        of the rows' paired differences), and the other is kept. Softer gates gained on
        usps, letter and pendigits and lost on MNIST, so the held-out rows choose;
        without them, ``c = 16``. A number is taken in standardised units.
    C : float or "auto"
        Penalty of each expert's hinge losses, ``1/2 ||w_j||^2 + C sum_i s_i q_ij hinge``
        (``C = 1 / (2 zeta)`` of eq. 9), on the standardised features. ``"auto"``:
        ``C = 10 / (n_varying + bias_scale^2)``, ``n_varying`` the features whose
        training values are not all equal (each counted by its squared relevance weight,
        ``weight_features``): the denominator is the mean squared norm of a
        standardised row, so a row's largest pull on an expert, ``C ||[z, b]||^2``, is
        10 whatever the number of features (a fixed ``C`` lets the experts of wide data
        fit noise).
    em : {"stochastic", "batch"}
        Batch EM (Fig. 2: an E-step pass, L-BFGS passes for the centres and a coordinate
        descent pass for the experts per iteration) or stochastic EM (one pass per epoch,
        parameters updated after every chunk).
    epochs : int
        Most EM iterations (batch) or passes over the data (stochastic).
    tol : float
        Batch EM stops after an iteration that changes the penalised log-likelihood
        (eq. 19) by at most ``tol`` times the total sample weight, i.e. by at most ``tol``
        nats per row on average; stochastic EM, whose log-likelihood is accumulated over
        the pass's chunks, after two consecutive epochs that each do (its first epoch is
        compared with the second, never with the initialisation: its chunks are scored
        before they train). With the guard (``validation_fraction``) stochastic EM also stops
        early, after two consecutive epochs in which neither the mixture's nor the linear
        SVM's held-out log loss reaches a new low, 0.5 % below the best of the earlier
        epochs; the mixture's lanes stop before that, after two such epochs of its held-out
        log loss at its best temperature (the least over the scales ``s`` of
        :data:`~streamlearn.solvers.calibration.TEMPERATURE_SCALES` of the loss of
        ``s f``): at temperature 1 EM also lowers the loss by sharpening under-confident
        log-odds while it discriminates worse. Reaching ``epochs`` first warns
        ``ConvergenceWarning``. The
        default 0.01 lies above the epoch-to-epoch noise of stochastic EM's accumulated
        log-likelihood (a few thousandths of a nat per row), which a smaller ``tol`` would
        wait on until ``epochs``.
    bias_scale : float
        Value of the constant feature whose (regularised) weight is each expert's bias.
    validation_fraction : float or None
        Share of the rows (picked by a hash of the row number, the same in every pass)
        held out of training for the guard: with stochastic EM and more than one
        component, a single linear SVM (one component, the same features and ``C``) trains
        in the same passes beside the mixture, both are scored on the held-out rows during
        every epoch (to stop), and after the last epoch one more pass scores both on them:
        the mixture is kept when both its held-out error and the held-out log-loss of its
        class probabilities (temperatures cross-fitted, as for ``multiclass="auto"``) are
        below the linear SVM's, or when its error is lower by more than twice the
        standard error of the rows' paired differences, else the linear SVM
        (``validation_`` says which). The error alone moves by a few rows between two
        linear-like models: on a9a (eight draws of 20,000 rows) it kept the mixture
        twice, on leads of 12 and 5 of 1,970 held-out rows, at 0.65 and 0.88 points more
        test error; the mixture's log-loss was higher in all eight. The log-loss alone
        rests on temperatures chosen on half the rows: on pendigits a half without a
        mistake chose the largest scale, and the mixture's 5 held-out mistakes (the
        linear SVM's 45) cost it more log-loss than the linear SVM's. The mixture of paper
        002 contains the linear SVM as its one-component case, and on data where its
        regions do not help (one-hot tables) it can lose to it; the guard keeps the
        default from doing so. A kept linear
        SVM is then trained on every row, the held-out ones included, by passes of dual
        coordinate descent until its relative duality gap is at most 0.01 (at most
        ``3 epochs`` passes, else ``ConvergenceWarning``): EM stops on the held-out loss,
        short of the linear SVM's optimum. The guard runs when at least 200 rows are
        expected in the held-out share; None trains on every row with no guard.
    loss : {"auto", "hinge", "squared_hinge"}
        The experts' loss, in their M-step (eq. 15) and in the likelihoods of eq. 10 and
        21 (``P(y | x, w) = exp(-loss(y w . x))``): the paper's hinge ``max(0, 1 - m)``
        or the squared hinge ``max(0, 1 - m)^2`` (dual coordinate descent with the
        diagonal ``1 / (2 C s_i q_ij)`` and no upper bound, as liblinear's L2-loss SVM).
        ``"auto"``: the squared hinge with more than two classes, the hinge with two
        (:func:`~streamlearn.solvers.mixture.driver.resolve_loss`). One-vs-rest, the
        hinge's best expert for a class no hyperplane cuts off, such as a middle class of
        ordered labels, is the constant ``w = 0, b = -1``, whose mixtures then tie; the
        squared hinge tilts them. ``loss_`` holds the loss used; a model file from before
        this parameter loads with the hinge.
    multiclass : {"auto", "ovr", "ovo"}
        More than two classes: one mixture per class against the rest (``"ovr"``), whose
        log-odds ``f`` give ``softmax(s f)``, or one binary mixture per pair of classes
        ``(i, j)``, ``i < j`` (``"ovo"``), trained on the rows of those two classes (+1
        for ``i``, -1 for ``j``; the other rows weigh 0 in it) as lanes of the same passes
        as one-vs-rest's, from the same standardisation, k-means centres and gating
        scale; :meth:`predict` is the class of most pairwise votes, ties to the higher
        coupled probability, and :meth:`predict_proba` couples the pairs' calibrated
        probabilities (the logistic of ``s_t f_t``, one temperature per pair on its
        classes' held-out rows) by Wu, Lin and Weng's method, as ``AdditiveSVC``'s
        ``"ovo"``. On ordered labels (ratings, bands of a score) one-vs-rest fails: a
        middle class is a slab that no region's hyperplane cuts off from the rest, while
        each pair of classes is one boundary. ``"auto"``: with 3 to 7 classes ``fit``
        trains one-vs-rest, then one-vs-one from the same centres, and keeps one-vs-one
        when its :meth:`predict_proba` has a weighted log-loss on the guard's held-out
        rows below one-vs-rest's by more than twice the standard error of the rows'
        paired differences, with the temperatures cross-fitted: a hash of the row number
        splits the held-out rows in two halves, each scored with the temperatures chosen
        on the other (the model keeps those of every held-out row), so that one-vs-one's
        ``k (k - 1) / 2`` temperatures gain nothing by fitting the rows they are judged
        on, and its gain must stand clear of the noise of rows that also chose each
        mixture's epochs (``multiclass_check_``); without them (fewer than 200 expected,
        ``validation_fraction=None``, batch EM, one component), with 2 classes or more
        than 7, one-vs-rest. A model file from before this parameter loads one-vs-rest.
    spread_tails : bool
        Map crowded features of dense rows before they are standardised, by the rule of
        ``AdditiveSVC``'s (:class:`~streamlearn.features.tail_transform.TailTransform`:
        ``asinh((x - c) / s)`` for a feature with half its sampled values in an eighth of
        its range, when that at least halves the crowding), when its standard deviation is
        above 3 times its robust spread (the interquartile range over 1.349, from the same
        sample): standardised as they are, a heavy tail or a few far outliers squeeze a
        feature's other rows onto one point, where no gate or expert tells them apart.
        The first pass samples the rows beside the moments; one more pass when a feature
        is mapped (``feature_transform_``).
    weight_features : bool
        Divide each standardised feature of dense rows of at most 1,024 columns
        (:data:`~streamlearn.solvers.mixture.relevance.MAX_RELEVANCE_FEATURES`) by a weight
        in ``[0.1, 1]`` from its relevance to the labels, so that the k-means centres and
        the gates split the features that bear on the labels and not the others: on a
        sample of the first pass (the rows ``spread_tails`` samples, with their labels),
        ``r_f``, the most that feature ``f``'s quartile bins explain of the labels alone or
        beside another feature's bins (beyond what those explain alone), as the
        correlation ratio less its expected value for independent labels, gives
        ``w_f = sqrt(3 r_f / max_g r_g)`` clipped to ``[0.1, 1]``
        (:func:`~streamlearn.solvers.mixture.relevance.relevance_weights`). A feature
        explaining a third of the most relevant one's keeps its whole spread; one acting
        only through a product with another (XOR) counts by the pair, with more than 64
        features among the 64 whose bins explain the most alone
        (:data:`~streamlearn.solvers.mixture.relevance.MAX_PAIR_FEATURES`). The bins are
        quantiles, so the weights do not depend on the features' units. ``scale_`` is
        the standard deviation over the weight, and ``C="auto"`` counts each feature
        by its squared weight. Indicator columns and constant features keep the weight
        1, and so does every feature of a single component (no gates: the weights would
        only re-weigh the linear SVM's penalty). A ring in two of
        eight normal features, ten values of one of them at 1e5: test error 17.05 ->
        4.50 % (*Small data* in the README).
    class_weight : dict, "balanced" or None
        Factors on the weights of each class's rows (label -> factor), or ``"balanced"``,
        as scikit-learn's classifiers take them (:mod:`~streamlearn.models.class_weight`
        states the rules); ``class_weight_`` holds the factors used. A dict in
        :meth:`partial_fit`.
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
    feature_names_in_ : ndarray of shape (n_features_in_,), dtype object
        The feature names seen in ``fit``; only when its data named its columns (a
        table, a file), as in scikit-learn: an array's columns are read by position.
    missing_values_ : MissingValues
        With ``fit(..., nan_policy="impute")``: each column's fill value and the columns
        given a missing-value indicator, read after the given columns (absent otherwise;
        :mod:`streamlearn.features.missing_values`).
    xi_ : ndarray of shape (n_models, k)
        Mixing weights (0: pruned); ``n_models`` is 1 for two classes (positive class
        ``classes_[1]``), else one mixture per class, or one per pair of classes
        (``multiclass_="ovo"``, in the order ``(0, 1), (0, 2), .., (k - 2, k - 1)``).
    centers_ : ndarray of shape (n_models, k, d)
        Gating centres (standardised units).
    expert_coef_ : ndarray of shape (n_models, k, d + 1)
        Experts on the standardised features, bias weight last (the bias is
        ``expert_coef_[..., -1] * bias_scale``).
    tau_ : float
        Gating scale used.
    tau_check_ : dict
        ``tau="auto"`` with the guard's held-out rows: the ``"factors"`` ``c`` tried
        (16, 4), their ``"taus"``, the cross-fitted held-out log-loss of each one's
        :meth:`predict_proba` (``"losses"``), the standard error of each one's paired
        difference from ``c = 16``'s (``"standard_errors"``) and the factor
        ``"kept"``; when one factor was dropped after an ``"epoch"`` instead, that
        epoch's held-out log-loss of each at its best temperature (``"epoch_losses"``) and
        the standard error of their paired difference (``"epoch_standard_error"``) in
        place of ``"losses"`` and ``"standard_errors"``. Absent otherwise.
    nu_ : float
        Prior of eq. 20 used (``nu="auto"`` resolved).
    C_ : float
        Experts' penalty used (``C="auto"`` resolved).
    loss_ : {"hinge", "squared_hinge"}
        The experts' loss used (``loss="auto"`` resolved).
    validation_ : dict or None
        The guard's outcome: ``held_out_weight``, ``mixture_error``, ``linear_error``
        (weighted held-out error rates), ``error_standard_error`` (of their rows'
        paired differences), ``mixture_loss``, ``linear_loss`` (weighted
        held-out log-loss, temperatures cross-fitted) and ``kept`` (``"mixture"`` or
        ``"linear"``; after
        ``"linear"`` the model has one component, and ``duality_gap`` is the relative gap
        its linear SVMs were finished to); None when the guard did not run.
    shift_, scale_ : ndarray of shape (d,)
        The standardisation ``z = (x - shift_) / scale_`` the centres and experts apply to
        (``scale_`` the standard deviation over the relevance weight, see
        ``weight_features``).
    category_indicators_ : CategoryIndicators
        The indicator columns read in place of categorical columns (absent when there
        are none).
    feature_transform_ : TailTransform
        ``spread_tails``: the crowded features mapped before the standardisation (absent
        when none was).
    n_iter_ : int
        EM iterations (batch) or passes (stochastic) run, the most over the one-vs-rest
        mixtures, a kept linear SVM's finishing passes included; each ``partial_fit`` call
        adds one.
    n_active_components_ : int or ndarray of shape (n_models,)
        Components left after pruning (an array for more than two classes).
    proba_scale_ : float or ndarray of shape (n_models,)
        The temperature ``s`` of :meth:`predict_proba`'s ``softmax(s f)``: of lowest
        log-loss on the guard's held-out rows (one pass after training), else on the
        training rows; one against one, each pair's, on the rows of its two classes.
    proba_rows_ : {"held-out", "training"}
        The rows ``proba_scale_`` was chosen on.
    multiclass_ : {"ovr", "ovo"}
        The scheme of the mixtures: ``multiclass``, or what ``"auto"`` chose (``"ovr"``
        for two classes).
    multiclass_check_ : dict
        ``multiclass="auto"`` with 3 to 7 classes: the cross-fitted held-out log-loss
        of :meth:`predict_proba` one-vs-rest (``"ovr"``) and one-vs-one (``"ovo"``), the
        standard error of their difference (``"standard_error"``) and the scheme kept
        (``"kept"``); ``"ovo"`` None, with the ``"reason"``, when there were no held-out
        rows to try it on. Absent otherwise.
    history_ : list of list of dict
        Per binary model, one entry per epoch (the first describes the initialisation):
        ``loglik`` (eq. 8's data term), ``penalised`` (eq. 19), ``n_active``. Batch EM
        evaluates them at the parameters after the epoch; stochastic EM accumulates the
        log-likelihood of each chunk under the parameters met when it was read. With the
        guard, each epoch also records ``held_out_error``, ``held_out_loss`` and
        ``held_out_scaled_loss``: the weighted error rate, logistic loss (summed over the
        one-vs-rest models) and that loss at its best temperature on the held-out rows of
        the classifier the model belongs to (the mixture, or the linear SVM after
        ``kept="linear"``), each row scored before its chunk trained. Each
        ``partial_fit`` call after the first adds an entry with its ``call`` number (the
        first call counts as 1; its entries are those of ``fit``), of the rows the call
        read; only the last 100 calls' are kept, after all of ``fit``'s, so the history
        (and a model file) stays bounded however many calls are made.

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

    _expected_failed_checks: ClassVar[dict[str, str]] = {
        "check_sample_weight_equivalence_on_dense_data":
            "k-means is seeded from a random sample of rows and EM visits rows in a seeded "
            "random order, so a repeated row is not the same as a doubled weight",
        "check_sample_weight_equivalence_on_sparse_data":
            "k-means is seeded from a random sample of rows and EM visits rows in a seeded "
            "random order, so a repeated row is not the same as a doubled weight",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any] | str]] = {
        "n_components": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "nu": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "tau": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "C": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "em": [StrOptions(set(EM_MODES))],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "bias_scale": [Interval(Real, 0, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "spread_tails": ["boolean"],
        "weight_features": ["boolean"],
        "loss": [StrOptions({"auto", *LOSSES})],
        "multiclass": [StrOptions(set(driver.MULTICLASS))],
        "class_weight": CLASS_WEIGHT_CONSTRAINT,
        "chunk_rows": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "engine": "no_validation",
        "progress": ["boolean", None],
    }
    #: Stochastic EM state that ``partial_fit`` continues from.
    _private_state = ("_online",)
    _accepts_sparse: ClassVar[bool] = True
    #: :meth:`partial_fit` takes sparse rows, so that
    #: :class:`~streamlearn.models.search.StreamSearchCV` races it on them.
    _partial_fit_takes_sparse: ClassVar[bool] = True
    _category_indicators: ClassVar[bool] = True
    _renamed_attributes: ClassVar[dict[str, str]] = {"coef_": "expert_coef_"}
    #: Hyper-parameters a model file written before they existed was trained with.
    _params_before: ClassVar[dict[str, Any]] = {"loss": "hinge", "multiclass": "ovr",
                                                "weight_features": False}
    #: ``partial_fit`` initialises from its first call's rows and starts each call's dual
    #: variables at zero, so a lane of ``StreamSearchCV`` does not train the model ``fit``
    #: would: the search judges its finalists by ``fit`` (``final_rung="auto"``).
    _lanes_train_like_fit: ClassVar[bool] = False

    def __init__(
        self,
        n_components: int | str = "auto",
        nu: float | str = "auto",
        tau: float | str = "auto",
        C: float | str = "auto",
        em: str = "stochastic",
        epochs: int = 20,
        tol: float = 1e-2,
        bias_scale: float = 1.0,
        validation_fraction: float | None = 0.1,
        spread_tails: bool = True,
        loss: str = "auto",
        multiclass: str = "auto",
        weight_features: bool = True,
        class_weight: dict[Any, float] | str | None = None,
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
        self.tol = tol
        self.bias_scale = bias_scale
        self.validation_fraction = validation_fraction
        self.spread_tails = spread_tails
        self.loss = loss
        self.multiclass = multiclass
        self.weight_features = weight_features
        self.class_weight = class_weight
        self.chunk_rows = chunk_rows
        self.random_state = random_state
        self.engine = engine
        self.progress = progress

    # -- hyper-parameters -------------------------------------------------------------------
    def _config(self) -> MixtureConfig:
        n_components = self.n_components
        nu = self.nu
        return MixtureConfig(n_components if n_components == "auto" else int(n_components),
                             nu if nu == "auto" else float(nu), self.tau,
                             self.C if self.C == "auto" else float(self.C),
                             str(self.em), int(self.epochs), float(self.tol),
                             float(self.bias_scale),
                             None if self.validation_fraction is None
                             else float(self.validation_fraction),
                             bool(self.spread_tails), str(self.loss), str(self.multiclass),
                             bool(self.weight_features))

    # -- training ---------------------------------------------------------------------------
    def fit(self, data: Any, y: Any = None, *, sample_weight: Any = None,
            nan_policy: Any = "auto",
            engine: Any = None, checkpoint: str | os.PathLike[str] | None = None,
            checkpoint_every: int = DEFAULT_EVERY) -> MixtureSVC:
        """Train by streaming over a dataset.

        EM stops after an epoch that changes the penalised log-likelihood (eq. 19) by at
        most ``tol`` times the total sample weight, with the guard's held-out rows also when
        their errors stop improving (see ``tol``), or after ``epochs`` epochs with a
        :class:`~sklearn.exceptions.ConvergenceWarning`.

        Parameters
        ----------
        data : Dataset, anything :func:`~streamlearn.data.open_dataset` accepts, or array X
        y : array-like or str, optional
            Labels of in-memory ``data`` or the target column name; not with a Dataset.
        sample_weight : array-like or str, optional
            Non-negative row weights (values or a column name). A row of weight 0 is no
            row: the standardisation's moments (unweighted, over the rows of positive
            weight), the k-means sample and the row counts of the ``"auto"`` settings
            leave it out, and every other pass weights it 0.
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
            Directory where progress is saved; a fit killed at any point and run again with
            the same arguments resumes from it (see :mod:`streamlearn.engine.checkpoint`).
        checkpoint_every : int
            Chunks between two checkpoint writes.

        Returns
        -------
        self
        """
        return self._fit_stream(data, y, sample_weight, nan_policy, engine, checkpoint,
                                checkpoint_every)

    def _run_driver(self, runner: Any, dataset: Dataset, seed: int) -> MixtureFit:
        fitted = driver.fit(runner, dataset, self._config(), seed)
        gap = (fitted.validation or {}).get("duality_gap")
        if gap is not None and not fitted.converged:
            warnings.warn(f"{type(self).__name__}: the linear SVM the validation guard kept "
                          f"stopped at its cap of {driver.LINEAR_PASSES_PER_EPOCH} x epochs="
                          f"{self.epochs} passes with a relative duality gap of {gap:.3g} > "
                          f"{driver.LINEAR_GAP_TOL}; raise epochs",
                          ConvergenceWarning, stacklevel=caller_stacklevel())
        elif not fitted.converged:
            which = ("two consecutive epochs" if self.em == "stochastic"
                     else "an iteration")
            warnings.warn(f"{type(self).__name__}: EM stopped at its cap of epochs="
                          f"{self.epochs} before {which} changed the penalised "
                          f"log-likelihood by less than tol={self.tol} times the sample "
                          "weight; raise epochs or tol", ConvergenceWarning,
                          stacklevel=caller_stacklevel())
        return fitted

    def _set_fitted(self, fitted: MixtureFit) -> None:
        self.feature_names_in_ = fitted.feature_names
        self.n_features_in_ = len(self._feature_names)
        self.xi_ = fitted.xi
        self.centers_ = fitted.centers
        self.expert_coef_ = fitted.coef
        self.tau_ = fitted.tau
        self.history_ = fitted.history
        self.n_iter_ = fitted.n_iter
        self._online = fitted.online
        self.nu_ = float(fitted.nu)
        self.C_ = float(fitted.C)
        self.validation_ = fitted.validation
        self.shift_ = np.asarray(fitted.shift, dtype=np.float64)
        self.scale_ = np.asarray(fitted.scale, dtype=np.float64)
        if fitted.feature_transform is not None:
            self.feature_transform_ = fitted.feature_transform
        else:
            self.__dict__.pop("feature_transform_", None)
        self.classes_ = storable_classes(fitted.classes)
        self._keep("proba_scale_", fitted.proba_scale)
        self._keep("proba_rows_", fitted.proba_rows)
        self.loss_ = fitted.loss
        self.multiclass_ = fitted.multiclass
        if fitted.multiclass_check is not None:
            self.multiclass_check_ = fitted.multiclass_check
        else:
            self.__dict__.pop("multiclass_check_", None)
        if fitted.tau_check is not None:
            self.tau_check_ = fitted.tau_check
        else:
            self.__dict__.pop("tau_check_", None)

    def _fitted(self) -> MixtureFit:
        """The fitted attributes as the driver's state (for a model file without the
        stochastic EM state: the mixing weights as mean posteriors, no weight seen)."""
        online = getattr(self, "_online", None)
        if online is None:
            online = OnlineState(np.array(self.xi_, dtype=np.float64), 0, 0.0, 0)
        shift, scale = self._standardisation()
        return MixtureFit(self.classes_, self._feature_names, self.xi_,
                          self.centers_, self.expert_coef_, float(self.tau_), self.history_,
                          int(getattr(self, "n_iter_", 0)), True, online, shift, scale,
                          self._fitted_nu(), self._fitted_C(),
                          getattr(self, "validation_", None),
                          getattr(self, "feature_transform_", None),
                          getattr(self, "proba_scale_", None),
                          getattr(self, "proba_rows_", None), self._fitted_loss(),
                          self._fitted_multiclass(),
                          getattr(self, "multiclass_check_", None),
                          getattr(self, "tau_check_", None))

    def _fitted_multiclass(self) -> str:
        """``multiclass_``, or on a model stored without it one against the rest."""
        return str(getattr(self, "multiclass_", "ovr"))

    def _fitted_loss(self) -> str:
        """``loss_``, or on a model stored without it the paper's hinge."""
        return str(getattr(self, "loss_", "hinge"))

    def _fitted_nu(self) -> float:
        """``nu_``, or on a model stored without it the value ``nu`` resolves to."""
        if hasattr(self, "nu_"):
            return float(self.nu_)
        if self.nu == "auto":
            return driver.default_nu(int(self.centers_.shape[-1]))
        return float(self.nu)

    def _fitted_C(self) -> float:
        """``C_``, or on a model stored without it the number ``C`` was (``"auto"``
        then resolves from the stored standardisation: the features of scale 1 and shift
        0 counted as constant)."""
        if hasattr(self, "C_"):
            return float(self.C_)
        if self.C == "auto":
            shift, scale = self._standardisation()
            varying = int(np.count_nonzero((scale != 1.0) | (shift != 0.0)))
            return driver.default_C(varying, float(self.bias_scale))
        return float(self.C)

    def _model_rows(self, values: np.ndarray) -> np.ndarray:
        """Dense rows as the mixture reads them: categorical columns as indicators
        (``category_indicators_``), then through ``feature_transform_``."""
        values = self._indicator_rows(values)
        transform = getattr(self, "feature_transform_", None)
        return values if transform is None else transform.apply(values)

    def _standardisation(self) -> tuple[np.ndarray, np.ndarray]:
        """``shift_`` and ``scale_`` (none, on a model stored without them: the identity)."""
        d = int(self.centers_.shape[-1])
        shift = getattr(self, "shift_", None)
        scale = getattr(self, "scale_", None)
        return (np.zeros(d) if shift is None else np.asarray(shift, dtype=np.float64),
                np.ones(d) if scale is None else np.asarray(scale, dtype=np.float64))

    def partial_fit(self, X: Any, y: Any, classes: Any = None,
                    sample_weight: Any = None) -> MixtureSVC:
        """One pass of stochastic EM over in-memory rows, continuing from the current model.

        The first call (on an unfitted model) initialises the model from its rows exactly
        as ``fit`` with ``em="stochastic"``, ``epochs=1`` and ``validation_fraction=None``
        does: the standardisation,
        ``n_components="auto"``, ``nu="auto"``, the k-means centres and ``tau="auto"``
        come from the first call's rows only and stay fixed, one expert per cluster, then
        one stochastic EM pass; it needs at least ``n_components`` rows. Later calls (also
        after ``fit`` or ``load``) make one stochastic EM pass over their rows, chunk by chunk
        (``chunk_rows``), in a seeded random order, from the current parameters and step
        size; the counts of eq. 20 are the running mean posteriors times the total weight
        of all rows seen so far. The experts minimise ``fit``'s objective over every row
        read so far, a row read by ``m`` calls counted ``m`` times (as if its ``C`` were
        ``m`` times larger): the dual variables of the earlier calls are folded into each
        expert as one block, whose scale in ``[0, 1]`` is one more coordinate of the dual
        (so the earlier rows' pull can shrink), and the call's own dual variables start at
        zero; each chunk is swept until its largest margin violation is at most 0.1 (at
        most 30 sweeps). Repeated calls over the same rows then keep ``fit``'s accuracy.
        A number given to ``C`` since the model was made (``set_params`` between calls)
        takes effect; ``"auto"`` keeps the value it was resolved to. ``em``, ``epochs``
        and ``tol`` do not apply.

        The first call also fixes the category list of each string or categorical column
        (every category of a pandas ``category`` column, else the values present; a call
        after ``fit`` keeps fit's): a later call holding another category raises a
        ``DataError`` rather than train it as an unseen one, so declare every category on
        the first call with a ``pd.Categorical`` (or ``CategoricalDtype``) of the full list.
        A first call whose rows hold a NaN learns how to read missing values from them,
        as ``fit`` does from its rows (``missing_values_``); a later call reads its NaN
        through that map, or ``fit``'s (a column without a gap there: its fill value, no
        indicator). A model without a map (its first rows had no NaN) refuses NaN.

        Sparse rows (a ``scipy.sparse`` matrix or array) are taken as ``fit`` takes them:
        the first call scales the features in units apart (``scale_``, see the class's
        description), later calls scale their stored values by ``scale_``; a model that
        centres its features (trained on dense rows) refuses them before any step.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n, n_features)
        y : array-like of shape (n,)
        classes : array-like, optional
            Every label the model will see; required on the first call when ``y`` does not
            hold exactly two classes, and on later calls equal to ``classes_`` if given.
        sample_weight : array-like of shape (n,), optional

        Returns
        -------
        self
        """
        self._check_partial_fit_target(y)
        self._validate_hyperparameters()
        sample_weight = self._partial_fit_sample_weight(y, classes, sample_weight)
        sparse = sparse_rows_of(X, self.n_features_in_ if self.is_fitted else None,
                                type(self).__name__, named=has_named_features(self))
        if sparse is not None:  # a lane's SparseRows too: opened as a scipy matrix
            X = sparse.to_scipy()
        if not self.is_fitted:
            return self._first_partial_fit(X, y, classes, sample_weight
                                           )._class_weight_recorded()
        if classes is not None and not _same_classes(classes, self.classes_):
            raise ValueError(f"classes={np.unique(np.asarray(classes)).tolist()} is not the "
                             "same as on the last call to partial_fit or fit, was: "
                             f"{self.classes_.tolist()}")
        if sparse is not None:
            return self._sparse_partial_pass(X, y, sample_weight)._class_weight_recorded()
        values = self._model_rows(self._check_training_X(X))
        values, labels, weights = check_array_input(values, y, sample_weight,
                                                    "classification")
        dataset = open_dataset(values, target=labels, weight=weights, task="classification",
                               classes=self.classes_, chunk_rows=self.chunk_rows)
        weight = float(np.sum(weights)) if weights is not None else float(dataset.n_rows)
        self._set_fitted(driver.partial_pass(self._engine(None), dataset, self._config(),
                                             self._fitted(), self._seed(), weight))
        return self._class_weight_recorded()

    def _sparse_partial_pass(self, X: Any, y: Any, sample_weight: Any) -> MixtureSVC:
        """A later call's pass over sparse rows: scaled as the model's ``scale_`` says (a
        model that centres, trained on dense rows, refuses them), then the pass of the
        model in those units."""
        shift, scale = self._standardisation()
        if np.any(shift) or hasattr(self, "feature_transform_"):
            raise ValueError("partial_fit was given sparse rows, but this model centres its "
                             "features (it was trained on dense rows), which would fill "
                             "them in; train it on dense rows")
        dataset = classification_dataset(X, y, sample_weight, self.chunk_rows,
                                         classes=self.classes_, accept_sparse=True)
        if np.any(scale != 1.0):
            dataset = dataset.with_feature_transform(Standardiser(shift, scale))
        weight = (float(np.sum(np.asarray(sample_weight, dtype=np.float64)))
                  if sample_weight is not None else float(dataset.n_rows))
        fitted = self._fitted()
        in_units = dataclasses.replace(fitted, scale=np.ones_like(scale))
        out = driver.partial_pass(self._engine(None), dataset, self._config(), in_units,
                                  self._seed(), weight)
        self._set_fitted(dataclasses.replace(out, scale=scale))
        return self

    def _first_partial_fit(self, X: Any, y: Any, classes: Any,
                           sample_weight: Any) -> MixtureSVC:
        self.__dict__.pop("classes_", None)
        dataset: Dataset
        # NaN read as missing values, by a map learned from these rows (as fit's default)
        nan_policy = resolve_nan_policy("auto", X, y, sample_weight)
        if classes is None:
            dataset = classification_dataset(X, y, sample_weight, self.chunk_rows,
                                             nan_policy=nan_policy, accept_sparse=True)
            found = dataset.classes
            assert found is not None
            if len(found) != 2:
                raise LabelError(f"classes must be passed on the first call to partial_fit "
                                 f"when y does not hold exactly two classes (it holds "
                                 f"{len(found)})")
        else:
            wanted = np.unique(np.asarray(classes))
            if len(wanted) < 2:
                raise LabelError(f"{type(self).__name__} needs at least two classes, got "
                                 f"classes={wanted.tolist()}")
            dataset = classification_dataset(X, y, sample_weight, self.chunk_rows,
                                             classes=wanted, nan_policy=nan_policy,
                                             accept_sparse=True)
        self._warn_category_codes(dataset.categories or {}, online=True)
        config = dataclasses.replace(self._config(), em="stochastic", epochs=1,
                                     validation_fraction=None)
        dataset = self._with_missing_values(dataset, None)
        dataset = self._with_category_indicators(dataset)
        if self.n_components == "auto":
            self._warn_first_call_components(dataset, sample_weight)
        fitted = driver.fit(self._engine(None), dataset, config, self._seed())
        self._set_fitted(dataclasses.replace(
            fitted, online=dataclasses.replace(fitted.online, calls=1)))
        self._keep_input_columns()
        record_categories(self, dataset.categories)
        return self

    def _warn_first_call_components(self, dataset: Dataset, sample_weight: Any) -> None:
        """Warn when ``n_components="auto"`` gives the first ``partial_fit`` call's rows
        fewer than ``BASE_COMPONENTS`` components: later calls keep the count, however
        many rows they bring."""
        n_rows = (dataset.n_rows if sample_weight is None
                  else int(np.count_nonzero(np.asarray(sample_weight) > 0)))
        k = driver.default_components(n_rows, dataset.n_features)
        if k < driver.BASE_COMPONENTS:
            warnings.warn(
                f"n_components='auto' gives {k} component(s) for the {n_rows} rows of the "
                f"first partial_fit call, and later calls keep them (fit gives "
                f"{driver.BASE_COMPONENTS} or more from {driver.SMALL_DATA_ROWS} rows up); pass "
                "n_components=... for a stream of small calls, e.g. "
                "streamlearn.solvers.mixture.default_components(n_rows, n_features) of the "
                "whole stream", UserWarning, stacklevel=caller_stacklevel())

    # -- prediction -------------------------------------------------------------------------
    @over_dask_blocks
    def decision_function(self, X: Any) -> np.ndarray:
        """Log-odds of the mixture likelihoods, the log of the corrected eq. 21's ratio.

        ``f(x) = log pos(x) - log neg(x)`` with ``pos``, ``neg`` the two halves of eq. 21
        (``pos - neg`` is eq. 21's discriminant): the same sign, and
        ``P(y = classes_[1] | x) = 1 / (1 + exp(-f(x)))`` (:meth:`predict_proba`). Each row
        is computed in float64 on its own, so it does not depend on the rows scored with it.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,) for two classes (positive: ``classes_[1]``), else
        (n, n_classes): one column per one-vs-rest mixture, or one against one (see
        ``multiclass``) each class's votes plus half its coupled probability; float64.
        The log-odds of every binary mixture are :meth:`mixture_log_odds`.
        """
        f = self.mixture_log_odds(X)
        if f.shape[1] > 1 and self._fitted_multiclass() == "ovo":
            return driver.pair_decision(self._fitted(), f)
        return f[:, 0] if f.shape[1] == 1 else f

    @over_dask_blocks
    def mixture_log_odds(self, X: Any) -> np.ndarray:
        """Every binary mixture's log-odds ``log pos(x) - log neg(x)``.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, n_models), float64
            Columns in the order of ``xi_``: the one mixture of two classes, one per class
            against the rest, or one per pair ``(i, j)``, ``i < j`` of ``classes_``
            (``(0, 1), (0, 2), ..``), positive for ``classes_[i]``.
        """
        self._check_fitted()
        shift, scale = self._standardisation()
        rows = sparse_rows_of(X, self.n_features_in_, type(self).__name__,
                              named=has_named_features(self),
                              hashing=hashing_of(self))
        if rows is None:  # standardised on the fly by the kernel
            f = self._log_odds(self._model_rows(self._check_X(X)), shift, scale)
        elif (not np.any(shift)
              and not hasattr(self, "feature_transform_")):  # trained on sparse rows
            f = self._log_odds(Standardiser(shift, scale).apply(rows), None, None)
        else:  # a model that standardises: 4,096 rows densified at a time
            f = np.concatenate([
                self._log_odds(self._model_rows(rows.slice(
                    a, min(a + DENSE_BLOCK_ROWS, rows.n_rows)).toarray()), shift, scale)
                for a in range(0, max(rows.n_rows, 1), DENSE_BLOCK_ROWS)])
        return f

    def _log_odds(self, values: Any, shift: np.ndarray | None,
                  scale: np.ndarray | None) -> np.ndarray:
        # every one-vs-rest mixture's log-odds, (n, m); dense rows standardised on the fly
        m = self.xi_.shape[0]
        squared = is_squared(self._fitted_loss())
        f = np.empty((values.shape[0], m))
        for j in range(m):
            args = (self.centers_[j], self.expert_coef_[j], self.xi_[j], float(self.tau_),
                    float(self.bias_scale))
            f[:, j] = (mixture_log_odds(values, *args, squared)
                       if isinstance(values, SparseRows)
                       else mixture_log_odds_chunk(values, *args, shift, scale, squared))
        return f

    @over_dask_blocks
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities: ``softmax(s f(x))`` over the one-vs-rest mixtures' log-odds
        ``f`` (:meth:`decision_function`); two classes: ``P(classes_[1] | x) = 1 / (1 +
        exp(-s f(x)))``, at ``s = 1`` eq. 21's ``pos / (pos + neg)``.

        ``s`` is ``proba_scale_`` (temperature scaling): the scale of lowest log-loss on
        the guard's held-out rows, else on the training rows (``proba_rows_`` says
        which). One scale keeps every decision: the most probable class is
        :meth:`predict`'s. :meth:`partial_fit` keeps the scale of the fit or of its
        first call (on that call's rows; later calls choose none). A model stored
        without it takes ``s = 1``.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n, n_classes), columns in the order of ``classes_``
        """
        f = self.mixture_log_odds(X)
        if self._fitted_multiclass() == "ovo" and f.shape[1] > 1:
            return driver.class_probabilities(self._fitted(), f)
        f = f[:, 0] if f.shape[1] == 1 else f
        return temperature_proba(f, float(getattr(self, "proba_scale_", 1.0)))

    @over_dask_blocks
    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels: the sign of eq. 21, or the most probable one-vs-rest class.

        Parameters
        ----------
        X : array-like of shape (n, n_features)

        Returns
        -------
        ndarray of shape (n,), labels from ``classes_``
        """
        f = self.decision_function(X)
        if f.ndim == 1:
            return self.classes_[(f > 0).astype(np.int64)]
        return self.classes_[np.argmax(f, axis=1)]

    @property
    def feature_importances_(self) -> np.ndarray:
        """Each feature's mixing-weighted absolute expert weight, shape (n_features,),
        summing to 1.

        ``sum_j sum_k xi_jk |w_jkf|`` over the binary models ``j`` and their components
        ``k``: the experts act on standardised features, so ``|w_jkf|`` is the score change
        per standard deviation of feature ``f`` inside component ``k``, weighted by the
        component's share of the rows (pruned components weigh 0). The gating, which reads
        every feature, is not counted. A categorical column read as indicator columns
        gets the sum of theirs.
        """
        self._check_fitted()
        d = int(np.asarray(self.centers_).shape[-1])
        weights = self._importances_per_column(np.einsum(
            "jk,jkf->f", np.asarray(self.xi_), np.abs(np.asarray(self.expert_coef_)[:, :, :d])))
        total = weights.sum()
        return weights / total if total > 0 else weights

    @property
    def n_active_components_(self) -> int | np.ndarray:
        """Components left after pruning (per one-vs-rest mixture for more classes)."""
        self._check_fitted()
        active = (self.xi_ > 0).sum(axis=1)
        return int(active[0]) if active.shape[0] == 1 else active

def _same_classes(classes: Any, known: np.ndarray) -> bool:
    wanted = np.unique(np.asarray(classes))
    return wanted.shape == known.shape and bool(np.all(wanted == known))
