"""Sparse projection pursuit (paper 001): passes (:mod:`.passes`) and drivers (:mod:`.driver`).

The candidate-scan kernels and the direction searches are in
:mod:`streamlearn.solvers.projection_search`.
"""

from streamlearn.solvers.projection_pursuit.driver import (
    AUTO_MAX_ROUNDS,
    AUTO_MAX_TERMS,
    AUTO_MIN_GAIN,
    BACKFIT_CYCLES,
    BACKFIT_TOL,
    PENALTY_ORDER,
    SEARCHES,
    BoostConfig,
    BoostFit,
    RidgeConfig,
    RidgeFit,
    SearchConfig,
    backfit_converged,
    clean_direction,
    fit_sparse_jsboost,
    fit_sparse_ppr,
    search_rounds,
    term_pays,
)
from streamlearn.solvers.projection_pursuit.passes import (
    BoostedTerms,
    ClassHistograms,
    DataMoments,
    GramStatistics,
    HistogramScanPass,
    MomentsPass,
    RidgeTerms,
    SplineScanPass,
    chunk_weight,
)

__all__ = ["AUTO_MAX_ROUNDS", "AUTO_MAX_TERMS", "AUTO_MIN_GAIN", "BACKFIT_CYCLES",
           "BACKFIT_TOL", "PENALTY_ORDER", "SEARCHES", "BoostConfig", "BoostFit",
           "BoostedTerms", "ClassHistograms", "DataMoments", "GramStatistics",
           "HistogramScanPass", "MomentsPass", "RidgeConfig", "RidgeFit", "RidgeTerms",
           "SearchConfig", "SplineScanPass", "backfit_converged", "chunk_weight",
           "clean_direction", "fit_sparse_jsboost", "fit_sparse_ppr", "search_rounds",
           "term_pays"]
