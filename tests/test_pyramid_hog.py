"""``bench/pyramid_hog.py``: the vectorised extractor against a direct per-pixel computation."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from streamlearn.errors import DataError

BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def hog() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_pyramid_hog",
                                                  BENCH_DIR / "pyramid_hog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def direct_pyramid_hog(image: np.ndarray, n_orientations: int,
                       levels: list[tuple[int, int]], eps: float) -> np.ndarray:
    """Pixel-by-pixel, block-by-block loops over one image (float64)."""
    h, w = image.shape

    def pixel(r: int, c: int) -> float:
        return float(image[r, c]) if 0 <= r < h and 0 <= c < w else 0.0

    bins = np.zeros((h, w, n_orientations))
    for r in range(h):
        for c in range(w):
            gx = 0.5 * (pixel(r, c + 1) - pixel(r, c - 1))
            gy = 0.5 * (pixel(r + 1, c) - pixel(r - 1, c))
            angle = math.atan2(gy, gx) % (2 * math.pi)
            position = angle / (2 * math.pi) * n_orientations
            lower = math.floor(position)
            share = position - lower
            magnitude = math.hypot(gx, gy)
            bins[r, c, lower % n_orientations] += magnitude * (1 - share)
            bins[r, c, (lower + 1) % n_orientations] += magnitude * share
    features = []
    for size, stride in levels:
        starts_r = list(range(0, h - size + 1, stride))
        starts_c = list(range(0, w - size + 1, stride))
        level_weight = 1 / math.sqrt(len(starts_r) * len(starts_c))
        for r in starts_r:
            for c in starts_c:
                hist = bins[r:r + size, c:c + size].sum(axis=(0, 1))
                features.append(hist * level_weight / (np.linalg.norm(hist) + eps))
    return np.concatenate(features)


@pytest.mark.parametrize("n_orientations", [1, 5, 8])
def test_matches_direct_computation(hog: ModuleType, n_orientations: int) -> None:
    rng = np.random.default_rng(n_orientations)
    images = rng.random((3, 9, 9)).astype(np.float32)
    images[0, :, :4] = 0.0  # a flat region: zero gradients, angle 0
    levels = [(9, 9), (4, 2), (3, 3)]
    got = hog.pyramid_hog(images, n_orientations=n_orientations, levels=levels, eps=0.05)
    want = np.stack([direct_pyramid_hog(im.astype(np.float64), n_orientations, levels, 0.05)
                     for im in images])
    n_blocks = 1 + 3 * 3 + 3 * 3
    assert got.shape == (3, n_blocks * n_orientations)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_default_pyramid_has_the_papers_dimension(hog: ModuleType) -> None:
    images = np.random.default_rng(0).integers(0, 256, size=(2, 28, 28), dtype=np.uint8)
    features = hog.pyramid_hog(images)
    assert features.shape == (2, 2172)
    assert features.dtype == np.float32 and (features >= 0).all()
    # uint8 input is scaled to [0, 1]; flat (n, 784) rows are the same images
    np.testing.assert_allclose(hog.pyramid_hog(images.reshape(2, -1)), features)
    np.testing.assert_allclose(hog.pyramid_hog(images.astype(np.float32) / 255), features,
                               rtol=1e-5, atol=1e-6)


def test_single_bright_pixel_in_closed_form(hog: ModuleType) -> None:
    # its four neighbours see gradients of length 1/2 pointing at it: angle 0 on the left,
    # pi on the right, pi/2 above (rows grow downwards), 3 pi/2 below; it has none itself
    image = np.zeros((1, 7, 7), dtype=np.float32)
    image[0, 3, 3] = 1.0
    features = hog.pyramid_hog(image, n_orientations=8, levels=[(7, 7)], eps=0.0)[0]
    np.testing.assert_allclose(features, [0.5, 0, 0.5, 0, 0.5, 0, 0.5, 0], atol=1e-6)
    # a 3 x 3 block on the left of the pixel holds only the angle-0 neighbour
    left = hog.pyramid_hog(image, n_orientations=8, levels=[(3, 1)], eps=0.0)[0]
    block = (2 * 5 + 0) * 8  # rows 2-4, columns 0-2: block (2, 0) of the 5 x 5 grid
    np.testing.assert_allclose(left[block:block + 8] * 5, [1, 0, 0, 0, 0, 0, 0, 0], atol=1e-6)


def test_rotation_by_a_right_angle_shifts_the_bins(hog: ModuleType) -> None:
    # rot90 maps the gradient (gx, gy) to (gy, -gx): every angle moves by -pi/2, a quarter
    # of the bins, and the single whole-image block covers the same pixels
    image = np.random.default_rng(1).random((1, 10, 10)).astype(np.float32)
    rotated = np.rot90(image, axes=(1, 2)).copy()
    levels = [(10, 10)]
    a = hog.pyramid_hog(image, n_orientations=8, levels=levels)[0]
    b = hog.pyramid_hog(rotated, n_orientations=8, levels=levels)[0]
    np.testing.assert_allclose(b, np.roll(a, -2), rtol=1e-5, atol=1e-6)


def test_bad_input_is_named(hog: ModuleType) -> None:
    with pytest.raises(DataError, match="not square"):
        hog.pyramid_hog(np.zeros((2, 30), dtype=np.float32))
    with pytest.raises(DataError, match="NaN"):
        hog.pyramid_hog(np.full((1, 6, 6), np.nan, dtype=np.float32), levels=[(6, 6)])
    with pytest.raises(DataError, match=r"\(n, h, w\)"):
        hog.pyramid_hog(np.zeros((1, 1, 6, 6), dtype=np.float32))
    with pytest.raises(ValueError, match="does not fit"):
        hog.pyramid_hog(np.zeros((1, 6, 6), dtype=np.float32), levels=[(8, 4)])
