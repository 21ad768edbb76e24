"""The soft-max's vectorised exponential against numpy's."""

from __future__ import annotations

import numpy as np
from numba import njit

from streamlearn.solvers.vector_exp import LOWEST, exp_nonpositive


@njit(cache=True)
def _exp_rows(Z: np.ndarray, in_place: bool) -> np.ndarray:
    out = np.empty_like(Z)
    work = np.empty(Z.shape[1])
    for i in range(Z.shape[0]):
        if in_place:
            out[i] = Z[i]
            exp_nonpositive(out[i], out[i], work)
        else:
            exp_nonpositive(Z[i], out[i], work)
    return out


def test_matches_numpy_to_round_off() -> None:
    rng = np.random.default_rng(0)
    z = np.concatenate([
        -rng.exponential(3.0, size=4000), -rng.uniform(0, 700, size=4000),
        # the reduction's edges: half-way between multiples of ln 2, 0, tiny, the clamp
        -(np.arange(1, 200) + 0.5) * np.log(2.0), [0.0, -0.0, -1e-300, -5e-324, LOWEST]])
    Z = z[: z.size // 9 * 9].reshape(-1, 9)  # rows of odd length: a scalar tail as well
    for in_place in (False, True):
        got = _exp_rows(Z, in_place)
        np.testing.assert_allclose(got, np.exp(Z), rtol=1e-15, atol=0)


def test_below_the_clamp_is_exp_of_the_clamp() -> None:
    Z = np.array([[-700.5, -745.2, -1e4, -np.inf]])
    got = _exp_rows(Z, False)
    np.testing.assert_allclose(got, np.full_like(Z, np.exp(LOWEST)), rtol=1e-15)
    assert np.all(got < 1e-303)
