"""streamlearn: nonlinear learners that stream over datasets larger than memory.

The estimators (``streamlearn.AdditiveSVC`` ...) are those of :mod:`streamlearn.models`,
imported on first use, so ``import streamlearn`` loads no model code.
"""

from typing import Any

from streamlearn.data import Chunk, Dataset, Schema, open_dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.engine import (
    Description,
    LocalEngine,
    Pass,
    Reduction,
    describe,
    evaluate,
)
from streamlearn.errors import (
    DataError,
    LabelError,
    MissingValueError,
    ReadError,
    SchemaError,
    SourceError,
    StreamlearnError,
)
from streamlearn.io.model_file import set_default_model_classes
from streamlearn.models import __all__ as _estimator_names
from streamlearn.models.registry import estimator_classes
from streamlearn.version import __version__

# Model files load the registered estimators (io sits above models and does not import them).
set_default_model_classes(estimator_classes)


def __getattr__(name: str) -> Any:
    if name in _estimator_names:
        import streamlearn.models

        return getattr(streamlearn.models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_estimator_names))


__all__ = [
    "Chunk",
    "DataError",
    "Dataset",
    "Description",
    "ExampleState",
    "LabelError",
    "MissingValueError",
    "LocalEngine",
    "Pass",
    "ReadError",
    "Reduction",
    "Schema",
    "SchemaError",
    "SourceError",
    "StreamlearnError",
    "__version__",
    "describe",
    "evaluate",
    "open_dataset",
    *_estimator_names,
]
