"""ShareBoost (paper 003): multiclass prediction with few shared features.

- :mod:`~streamlearn.solvers.shareboost.kernels`: numba kernels over one chunk's arrays;
- :mod:`~streamlearn.solvers.shareboost.columns`: the candidate column families;
- :mod:`~streamlearn.solvers.shareboost.passes`: the passes, with dataclass states;
- :mod:`~streamlearn.solvers.shareboost.driver`: ``fit(runner, dataset, config, seed)``, the
  whole greedy selection as a sequence of passes.

The kernels stay importable from this package, as they were from the former module.
"""

from streamlearn.solvers.shareboost.driver import (
    ShareBoostConfig,
    ShareBoostFit,
    ShareBoostRound,
    fit,
)
from streamlearn.solvers.shareboost.kernels import (
    ANCHOR_TILE_ROWS,
    anchor_gradients,
    anchor_histogram_chunk,
    decision_chunk,
    exp_lanes,
    linear_gates_chunk,
    linear_gradient_chunk,
    linear_margin_residuals_chunk,
    linear_objective_chunk,
    margin_residuals_chunk,
    padded_thresholds,
    restricted_objective_chunk,
    single_column_objective_chunk,
    stump_gates_chunk,
    stump_gradients,
    stump_histogram_chunk,
    stump_objective_chunk,
    stump_tables,
)

__all__ = [
    "ANCHOR_TILE_ROWS",
    "ShareBoostConfig",
    "ShareBoostFit",
    "ShareBoostRound",
    "anchor_gradients",
    "anchor_histogram_chunk",
    "decision_chunk",
    "exp_lanes",
    "fit",
    "linear_gates_chunk",
    "linear_gradient_chunk",
    "linear_margin_residuals_chunk",
    "linear_objective_chunk",
    "margin_residuals_chunk",
    "padded_thresholds",
    "restricted_objective_chunk",
    "single_column_objective_chunk",
    "stump_gates_chunk",
    "stump_gradients",
    "stump_histogram_chunk",
    "stump_objective_chunk",
    "stump_tables",
]
