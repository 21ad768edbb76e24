"""The generated problem of ``predict_throughput.py`` and ``knots.py``: a helper, not a
benchmark (no ``--quick``)."""

from __future__ import annotations

import numpy as np

#: Standard normal features per row; the first six carry the label.
N_FEATURES = 32


def gaussian_rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` rows of 32 standard normal features, a two-class label and a regression target.

    The label is the sign of a sum of curves of the first four features and the product of
    the fifth and sixth (noise flips about 5% of it), so that a linear model falls short;
    the other 26 features carry nothing.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    f = (np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - X[:, 2] + np.tanh(2 * X[:, 3])
         + 0.8 * X[:, 4] * X[:, 5] - 0.5)
    target = f + 0.2 * rng.normal(size=n)
    return X, (target > 0).astype(np.int64), target
