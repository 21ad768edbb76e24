"""Test support: a label decided by a numeric feature and a categorical column whose
category codes (sorted names) say nothing of their effects, and its one-hot reference."""

from __future__ import annotations

import numpy as np
import pandas as pd


def category_problem(n: int, seed: int, k: int = 200, noise: float = 0.5
                     ) -> tuple[pd.DataFrame, np.ndarray]:
    """Columns ``x0`` and ``cat`` (a pandas Categorical of ``k`` categories) and the score
    ``x0 + effect[cat] + noise``, the effects ``N(0, 2)`` (fixed, drawn apart from the
    rows); ``score > 0`` is the class."""
    effect = np.random.default_rng(99).normal(0.0, 2.0, k)
    names = np.array([f"c{i:03d}" for i in range(k)])
    rng = np.random.default_rng(seed)
    code, x0 = rng.integers(0, k, n), rng.normal(size=n)
    frame = pd.DataFrame({"x0": x0, "cat": pd.Categorical(names[code], categories=names)})
    return frame, x0 + effect[code] + noise * rng.normal(size=n)


def one_hot(frame: pd.DataFrame) -> np.ndarray:
    """pandas' indicator columns of ``cat`` (in the order of its categories), then ``x0``."""
    return pd.get_dummies(frame["cat"]).assign(x0=frame["x0"]).to_numpy(np.float64)
