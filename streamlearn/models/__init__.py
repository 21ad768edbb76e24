"""The estimators users import: scikit-learn style, trained by streaming over chunked data."""

from streamlearn.models.additive import AdditiveSVC
from streamlearn.models.mixture import MixtureSVC
from streamlearn.models.projection_pursuit import SparseJSBoostClassifier, SparsePPRRegressor
from streamlearn.models.shareboost import ShareBoostClassifier
from streamlearn.models.supersparse import SuperSparseClassifier, SuperSparseRegressor

__all__ = [
    "AdditiveSVC",
    "MixtureSVC",
    "ShareBoostClassifier",
    "SparseJSBoostClassifier",
    "SparsePPRRegressor",
    "SuperSparseClassifier",
    "SuperSparseRegressor",
]
