"""Saving and loading models: JSON metadata and numpy arrays, never pickle."""

from streamlearn.io.model_file import load_model, read_model_file, save_model

__all__ = ["load_model", "read_model_file", "save_model"]
