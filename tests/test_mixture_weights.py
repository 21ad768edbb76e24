"""MixtureSVC's reduction passes: an integer sample weight acts as that many repeated rows."""

from __future__ import annotations

import numpy as np

from streamlearn.data import open_dataset
from streamlearn.engine import LocalEngine
from streamlearn.solvers.mixture import (
    ClusterCountPass,
    EStepPass,
    GatingPass,
    MixtureParams,
)


def test_weighted_rows_equal_repeated_rows_in_every_reduction() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = rng.integers(0, 2, size=300)
    w = rng.integers(0, 4, size=300)
    k = 4
    params = MixtureParams(np.array([0.4, 0.3, 0.0, 0.3]), rng.normal(size=(k, 3)),
                           rng.normal(size=(k, 4)))
    V = params.V + 0.1
    engine = LocalEngine(progress=False)
    weighted = open_dataset(X, target=y, weight=w.astype(np.float32), chunk_rows=64,
                            task="classification")
    repeated = open_dataset(np.repeat(X, w, axis=0), target=np.repeat(y, w), chunk_rows=64,
                            task="classification")
    results = [
        (engine.run(EStepPass([params], [1], 0.8, 1.0), ds)[0],
         engine.run(GatingPass(params, V, 1, 0.8, 1.0), ds),
         engine.run(ClusterCountPass(params.V, 2), ds))
        for ds in (weighted, repeated)
    ]
    (e_w, g_w, c_w), (e_r, g_r, c_r) = results
    assert e_w.weight == e_r.weight == w.sum()
    np.testing.assert_allclose(e_w.mass, e_r.mass, rtol=1e-9)
    np.testing.assert_allclose(e_w.loglik, e_r.loglik, rtol=1e-9)
    np.testing.assert_allclose(g_w.value, g_r.value, rtol=1e-9)
    np.testing.assert_allclose(g_w.grad, g_r.grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c_w.counts, c_r.counts)
    np.testing.assert_allclose(c_w.sq_dist, c_r.sq_dist, rtol=1e-6)


def test_rows_of_weight_zero_do_not_shape_the_model() -> None:
    # far-off rows of weight 0 moved the standardisation, the k-means sample and the
    # "auto" counts: test accuracy 0.50, against 0.95 without them
    from sklearn.datasets import make_classification

    from streamlearn.models.mixture import MixtureSVC

    X, y = make_classification(300, 5, n_informative=3, random_state=0)
    rng = np.random.default_rng(1)
    junk = rng.normal(size=(150, 5)) * 50 + 100
    X_all, y_all = np.r_[X, junk], np.r_[y, rng.integers(0, 2, 150)]
    w = np.r_[np.ones(300), np.zeros(150)]
    weighted = MixtureSVC(progress=False).fit(X_all, y_all, sample_weight=w)
    plain = MixtureSVC(progress=False).fit(X, y)
    X32 = X.astype(np.float32).astype(np.float64)  # numpy, over the rows of weight 1
    np.testing.assert_allclose(weighted.shift_, X32.mean(axis=0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(weighted.scale_, X32.std(axis=0), rtol=1e-6)
    assert weighted.xi_.shape == plain.xi_.shape and weighted.nu_ == plain.nu_
    assert weighted.C_ == plain.C_
    # the rows' order in the experts' sweeps differs: the same model up to that
    np.testing.assert_allclose(weighted.centers_, plain.centers_, atol=0.05)
    assert np.mean(weighted.predict(X) == plain.predict(X)) >= 0.98
    assert weighted.score(X, y) >= plain.score(X, y) - 0.02
