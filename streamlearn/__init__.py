"""streamlearn: nonlinear learners that stream over datasets larger than memory."""

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
    ReadError,
    SchemaError,
    SourceError,
    StreamlearnError,
)

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "DataError",
    "Dataset",
    "Description",
    "ExampleState",
    "LabelError",
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
]
