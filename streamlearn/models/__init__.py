"""The estimators users import: scikit-learn style, trained by streaming over chunked data."""

from streamlearn.models.additive import AdditiveSVC
from streamlearn.models.shareboost import ShareBoostClassifier

__all__ = ["AdditiveSVC", "ShareBoostClassifier"]
