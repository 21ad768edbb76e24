"""Where rows come from: sources, validation, chunking, prefetching, per-row state."""

from streamlearn.data.chunk import Chunk
from streamlearn.data.dataset import Dataset
from streamlearn.data.open import open_dataset
from streamlearn.data.schema import Schema

__all__ = ["Chunk", "Dataset", "Schema", "open_dataset"]
