"""The one list of models: what the command line trains, model files load and tests check.

Each entry names a model by the import path of its estimator classes, so reading the list
imports no model. Adding a model is one entry here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelEntry:
    """A model, by the import paths of its estimator class(es).

    Attributes
    ----------
    classifier, regressor : str or None
        ``"module:Class"`` of the estimator for classification / regression targets.
    about : str
        One line for ``--help``.
    """

    classifier: str | None
    regressor: str | None
    about: str

    @property
    def tasks(self) -> tuple[str, ...]:
        """Targets the model handles."""
        return tuple(t for t, p in (("classification", self.classifier),
                                    ("regression", self.regressor)) if p)

    @property
    def paths(self) -> tuple[str, ...]:
        """Import paths of the estimator classes, classifier first."""
        return tuple(p for p in (self.classifier, self.regressor) if p)


#: Model name on the command line -> estimator classes.
MODELS: dict[str, ModelEntry] = {
    "additive": ModelEntry("streamlearn.models.additive:AdditiveSVC", None,
                           "additive-kernel SVM"),
    "mixture": ModelEntry("streamlearn.models.mixture:MixtureSVC", None,
                          "mixture of linear SVMs"),
    "shareboost": ModelEntry("streamlearn.models.shareboost:ShareBoostClassifier", None,
                             "shared-feature multiclass boosting"),
    "sppr": ModelEntry(None, "streamlearn.models.projection_pursuit:SparsePPRRegressor",
                       "sparse projection pursuit regression"),
    "spjsboost": ModelEntry("streamlearn.models.projection_pursuit:SparseJSBoostClassifier",
                            None, "sparse Jensen-Shannon boosting"),
    "supersparse": ModelEntry("streamlearn.models.supersparse:SuperSparseClassifier",
                              "streamlearn.models.supersparse:SuperSparseRegressor",
                              "super-sparse prototype machine"),
}


def import_estimator(path: str) -> type:
    """The class at ``"module:Class"``.

    Raises
    ------
    ImportError
        When the module or the class does not exist.
    """
    module_name, _, class_name = path.partition(":")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise ImportError(f"{module_name} has no {class_name}") from None


def estimator_classes() -> list[type]:
    """Every registered estimator class, in registry order."""
    return [import_estimator(p) for entry in MODELS.values() for p in entry.paths]
