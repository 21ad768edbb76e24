"""``bench/intersection_kernel.py``: the min kernel matrix against numpy."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from streamlearn.errors import DataError

BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def kernel() -> ModuleType:
    spec = importlib.util.spec_from_file_location("intersection_kernel",
                                                  BENCH_DIR / "intersection_kernel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # the module's name as the benchmark imports it: numba's cache records it
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def numpy_min_kernel(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.minimum(A[:, None, :].astype(np.float64), B[None, :, :]).sum(axis=2)


def test_rectangular_matrix_matches_numpy(kernel: ModuleType) -> None:
    rng = np.random.default_rng(0)
    A = rng.random((300, 17)).astype(np.float32)
    B = rng.random((41, 17)).astype(np.float32)
    K = kernel.intersection_kernel(A, B, threads=2)
    assert K.shape == (300, 41) and K.dtype == np.float32
    np.testing.assert_allclose(K, numpy_min_kernel(A, B), rtol=1e-5)


def test_symmetric_matrix_matches_numpy(kernel: ModuleType, monkeypatch) -> None:
    # blocks of 64 rows: the mirrored triangle crosses several blocks, the last one partial
    monkeypatch.setattr(kernel, "BLOCK_ROWS", 64)
    rng = np.random.default_rng(1)
    A = rng.random((150, 9)).astype(np.float32) * (rng.random((150, 9)) < 0.5)
    K = kernel.intersection_kernel(A, threads=3)
    np.testing.assert_allclose(K, numpy_min_kernel(A, A), rtol=1e-5)
    np.testing.assert_array_equal(K, K.T)
    # min(a, a) = a: the diagonal holds the row sums
    np.testing.assert_allclose(np.diag(K), A.sum(axis=1), rtol=1e-5)


def test_bad_input_is_named(kernel: ModuleType) -> None:
    with pytest.raises(DataError, match="features"):
        kernel.intersection_kernel(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(DataError, match="NaN"):
        kernel.intersection_kernel(np.full((2, 3), np.nan))
    with pytest.raises(DataError, match="2-d"):
        kernel.intersection_kernel(np.zeros(3))
