"""The estimators users import: scikit-learn style, trained by streaming over chunked data."""

from streamlearn.models.additive import AdditiveSVC

__all__ = ["AdditiveSVC"]
