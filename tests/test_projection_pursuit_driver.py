"""Drivers of sparse projection pursuit, called without an estimator."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from streamlearn.data import open_dataset
from streamlearn.engine import LocalEngine
from streamlearn.errors import LabelError
from streamlearn.models import projection_pursuit as model_module
from streamlearn.solvers import projection_pursuit as solver
from streamlearn.solvers.projection_pursuit import (
    BoostConfig,
    RidgeConfig,
    SearchConfig,
    fit_sparse_jsboost,
    fit_sparse_ppr,
)

SEARCH = SearchConfig(tau=15.0, search="informative_first", start="pairs", search_range=1.0,
                      coarse_step=0.25, fine_step=0.05, max_iter=6)


def test_ppr_driver_fits_the_product_and_is_frozen():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(400, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1]).astype(np.float32)
    fitted = fit_sparse_ppr(LocalEngine(chunk_rows=90), open_dataset(X, target=y),
                            RidgeConfig(SEARCH, n_terms=2, n_bases=8, smoothing=1.0, degree=3))
    assert fitted.intercept == pytest.approx(float(np.mean(y.astype(np.float64))))
    assert fitted.projections.shape == (2, 4) and fitted.unconverged == ()
    assert np.all(fitted.projections[:, 2:] == 0)  # x1 x2 uses x1 and x2 only
    np.testing.assert_allclose(np.linalg.norm(fitted.projections, axis=1), 1.0)
    assert fitted.train_sse[-1] < 0.05 * np.sum((y - y.mean()) ** 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fitted.intercept = 0.0  # type: ignore[misc]


def test_jsboost_driver_refuses_a_class_without_weight():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(50, 3)).astype(np.float32)
    y = np.arange(50) % 2
    w = (y == 0).astype(np.float32)  # every row of class 1 has weight 0
    dataset = open_dataset(X, target=y, weight=w, task="classification")
    with pytest.raises(LabelError, match="both classes need rows of positive weight"):
        fit_sparse_jsboost(LocalEngine(), dataset, BoostConfig(SEARCH, 1, 8, 1.0))


def test_pass_names_stay_importable_from_the_estimator_module():
    for name in ("MomentsPass", "DataMoments", "SplineScanPass", "GramStatistics",
                 "HistogramScanPass", "ClassHistograms", "RidgeTerms", "BoostedTerms",
                 "PENALTY_ORDER", "SEARCHES"):
        assert getattr(model_module, name) is getattr(solver, name), name
