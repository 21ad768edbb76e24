"""A feature far from zero fits like the same feature near it: constant columns of 1e20 do
not give a map an empty range (an infinite scale and numpy's divide-by-zero warnings)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from streamlearn.models import AdditiveSVC


@pytest.mark.parametrize("embedding", ["bspline", "fourier"])
def test_a_constant_column_of_1e20_fits_as_one_of_3(embedding):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 4))
    y = (X[:, 0] + np.abs(X[:, 1]) > 0.8).astype(int)
    near, far = X.copy(), X.copy()
    near[:, 2], far[:, 2] = 3.0, 3e20
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        m_far = AdditiveSVC(embedding=embedding, random_state=0).fit(far, y)
        p_far = m_far.decision_function(far)
    m_near = AdditiveSVC(embedding=embedding, random_state=0).fit(near, y)
    assert np.all(np.isfinite(p_far))
    # the constant column embeds to the same constant columns either way: the same model
    np.testing.assert_allclose(p_far, m_near.decision_function(near), rtol=1e-4, atol=1e-4)
