"""Central finite differences, the reference of the tests of analytic gradients."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def central_differences(loss: Callable[[np.ndarray], float], C: np.ndarray,
                        h: float) -> np.ndarray:
    """``(loss(C + h e_kf) - loss(C - h e_kf)) / 2h`` for every entry ``(k, f)`` of ``C``."""
    numeric = np.zeros_like(C)
    for index in np.ndindex(C.shape):
        up, down = C.copy(), C.copy()
        up[index] += h
        down[index] -= h
        numeric[index] = (loss(up) - loss(down)) / (2 * h)
    return numeric
