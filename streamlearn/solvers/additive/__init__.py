"""Additive-kernel SVM solver: the passes (:mod:`.passes`) and the fit driver (:mod:`.driver`)."""

from streamlearn.solvers.additive.driver import (
    HOLDOUT_SALT,
    AdditiveConfig,
    AdditiveFit,
    Regularisation,
    fit,
    fit_feature_map,
    training_rows,
)
from streamlearn.solvers.additive.passes import (
    DCD_INNER_SWEEPS,
    CalibrationPass,
    DcdEpochPass,
    DcdState,
    Holdout,
    ModelPairs,
    PegasosEpochPass,
    PegasosState,
    Summary,
    SummaryPass,
    SummaryState,
    TrainingRows,
    w_to_w_d,
)

__all__ = [
    "DCD_INNER_SWEEPS",
    "HOLDOUT_SALT",
    "AdditiveConfig",
    "AdditiveFit",
    "CalibrationPass",
    "DcdEpochPass",
    "DcdState",
    "Holdout",
    "ModelPairs",
    "PegasosEpochPass",
    "PegasosState",
    "Regularisation",
    "Summary",
    "SummaryPass",
    "SummaryState",
    "TrainingRows",
    "fit",
    "fit_feature_map",
    "training_rows",
    "w_to_w_d",
]
