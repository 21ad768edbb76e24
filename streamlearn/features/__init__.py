"""Feature maps computed on the fly inside solvers, and materialised for comparison.

Additive embeddings of paper 000: B-splines linearised by difference penalties
(:class:`BSplineMap`), on uniform knots or knots at the data's quantiles
(:mod:`streamlearn.features.knots`), trigonometric (:class:`FourierMap`) and Hermite
(:class:`HermiteMap`) embeddings, each with a zero-preserving variant for sparse
non-negative inputs; and B-splines with tensor-product terms of selected feature pairs
and one weight per frequent value of selected features (:class:`BSplinePairMap`,
:mod:`streamlearn.features.value_terms`).
"""

from streamlearn.features.bspline import (
    BSplineMap,
    bspline_basis,
    bspline_encode_row,
    bspline_encode_sparse_row,
    bspline_encode_uniform_row,
    bspline_encode_warped_row,
    bspline_transform,
    bspline_transform_csr,
    bspline_transform_dense,
    bspline_transform_numpy,
)
from streamlearn.features.difference_penalty import (
    difference_matrix,
    inverse_transpose,
    score_d,
    step_a,
    step_b,
    update_d,
    update_d_pair,
)
from streamlearn.features.feature_map import FeatureMap
from streamlearn.features.fourier import (
    FourierMap,
    fourier_encode_every_feature,
    fourier_encode_frequency_major,
    fourier_encode_row,
    fourier_scaling,
    fourier_transform_dense,
    fourier_weights,
)
from streamlearn.features.hermite import (
    HermiteMap,
    hermite_encode_degree_major,
    hermite_encode_row,
    hermite_transform_dense,
    hermite_weights,
)
from streamlearn.features.knots import (
    quantile_knots,
    table_positions,
    warp_position,
    warp_positions,
    warp_table,
)
from streamlearn.features.pair_terms import (
    BSplinePairMap,
    pair_encode_row,
    pair_transform_dense,
)
from streamlearn.features.value_terms import value_columns, value_encode_row

__all__ = [
    "BSplineMap",
    "BSplinePairMap",
    "FeatureMap",
    "FourierMap",
    "HermiteMap",
    "bspline_basis",
    "bspline_encode_row",
    "bspline_encode_sparse_row",
    "bspline_encode_uniform_row",
    "bspline_encode_warped_row",
    "bspline_transform",
    "bspline_transform_csr",
    "bspline_transform_dense",
    "bspline_transform_numpy",
    "difference_matrix",
    "fourier_encode_every_feature",
    "fourier_encode_frequency_major",
    "fourier_encode_row",
    "fourier_scaling",
    "fourier_transform_dense",
    "fourier_weights",
    "hermite_encode_degree_major",
    "hermite_encode_row",
    "hermite_transform_dense",
    "hermite_weights",
    "inverse_transpose",
    "pair_encode_row",
    "pair_transform_dense",
    "quantile_knots",
    "score_d",
    "step_a",
    "step_b",
    "table_positions",
    "update_d",
    "update_d_pair",
    "value_columns",
    "value_encode_row",
    "warp_position",
    "warp_positions",
    "warp_table",
]
