"""The estimators users import: scikit-learn estimators trained by streaming over chunks.

Classes are imported on first use, so reading :mod:`streamlearn.models.registry` (the
command line does) loads no model code.
"""

from __future__ import annotations

from typing import Any

from streamlearn.models.registry import MODELS, import_estimator

__all__ = [
    "AdditiveSVC",
    "MixtureSVC",
    "ShareBoostClassifier",
    "SparseJSBoostClassifier",
    "SparsePPRRegressor",
    "StreamSearchCV",
    "SuperSparseClassifier",
    "SuperSparseRegressor",
]

#: Estimators that wrap another (not models of their own, so not in the registry).
META_ESTIMATORS = ("StreamSearchCV",)

_PATHS = {p.rpartition(":")[2]: p for entry in MODELS.values() for p in entry.paths}


def __getattr__(name: str) -> Any:
    if name == "StreamSearchCV":
        from streamlearn.models.search import StreamSearchCV

        globals()[name] = StreamSearchCV
        return StreamSearchCV
    if name in _PATHS:
        cls = import_estimator(_PATHS[name])
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
