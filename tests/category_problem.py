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


def two_category_problem(n: int = 2000, seed: int = 0
                         ) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """Columns ``x`` and ``b`` (text, ``"no"`` or ``"yes"``, 30 % yes), the same table
    with ``b`` as its 0/1 number, and the class ``x + 1.5 [b = yes] > 0.3``."""
    rng = np.random.default_rng(seed)
    x, b = rng.normal(size=n), rng.choice(["no", "yes"], n, p=[0.7, 0.3])
    y = (x + 1.5 * (b == "yes") > 0.3).astype(int)
    return (pd.DataFrame({"x": x, "b": b}),
            pd.DataFrame({"x": x, "b": (b == "yes").astype(np.float64)}), y)


def unseen_against_the_mean(model: object, reference: object, frame: pd.DataFrame,
                            numbers: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The scores of ``model`` (fitted on ``frame``) on rows of ``b`` ``"no"``, ``"yes"``
    and an unseen category, and those of ``reference`` (the same model fitted on
    ``numbers``) on ``b`` 0, 1 and the mean of ``b`` (numpy's)."""
    import pytest

    rows = pd.DataFrame({"x": [0.1, 0.1, 0.1], "b": ["no", "yes", "maybe"]})
    with pytest.warns(UserWarning, match="not seen in fit"):
        scores = model.decision_function(rows)
    mean = float(np.mean(frame["b"].to_numpy() == "yes"))
    by_hand = reference.decision_function(pd.DataFrame({"x": [0.1] * 3,
                                                        "b": [0.0, 1.0, mean]}))
    return np.asarray(scores), np.asarray(by_hand)
