"""Spatial-pyramid histograms of oriented gradients for small grey images (numpy, vectorised).

The features of paper 000's MNIST experiment (Sec. 6: "a spatial pyramid of histogram of
oriented gradients", 2172 dense dimensions). For each image:

1. gradients by central differences (the image is zero-padded by one pixel, which is the
   background of MNIST digits);
2. the gradient magnitude is split between the two nearest of ``n_orientations`` signed
   orientation bins over ``[0, 2 pi)`` (linear interpolation in angle), giving
   ``n_orientations`` energy maps;
3. each level of the pyramid covers the image with square blocks of ``size`` pixels every
   ``stride`` pixels; a block's histogram is the sum of the energy maps over the block
   (computed from integral images, four look-ups per block);
4. each block histogram is divided by its L2 norm plus ``eps`` (blocks without edges stay 0),
   and the blocks of a level are weighted by ``1 / sqrt(n_blocks of the level)`` so every
   level carries the same total weight.

The default pyramid on 28 x 28 images, 12 orientations and levels (size, stride) = (28, 28),
(8, 4), (6, 2) with 1, 6 x 6 and 12 x 12 blocks, has 12 x 181 = 2172 features, the
dimension the paper reports. All features are non-negative, so the min (intersection) kernel
applies.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from streamlearn.errors import DataError

#: ``(block size, stride)`` of each pyramid level, in pixels.
DEFAULT_LEVELS: tuple[tuple[int, int], ...] = ((28, 28), (8, 4), (6, 2))
DEFAULT_ORIENTATIONS = 12
#: Images processed at once (bounds the temporary energy maps to ~150 MB).
BATCH_IMAGES = 4096


def block_corners(height: int, width: int,
                  levels: Sequence[tuple[int, int]]) -> tuple[np.ndarray, ...]:
    """Corner rows/columns of every block of the pyramid and each block's level weight.

    Returns
    -------
    top, left, bottom, right : ndarray of int64, shape (n_blocks,)
        Block ``b`` covers rows ``top[b]:bottom[b]`` and columns ``left[b]:right[b]``.
    weight : ndarray of float32, shape (n_blocks,)
        ``1 / sqrt(blocks of its level)``.
    """
    if not levels:
        raise ValueError("levels must hold at least one (size, stride) pair")
    top, left, bottom, right, weight = [], [], [], [], []
    for size, stride in levels:
        if size > height or size > width or size < 1 or stride < 1:
            raise ValueError(f"level (size={size}, stride={stride}) does not fit a "
                             f"{height} x {width} image")
        rows = range(0, height - size + 1, stride)
        cols = range(0, width - size + 1, stride)
        n = len(rows) * len(cols)
        for r in rows:
            for c in cols:
                top.append(r)
                left.append(c)
                bottom.append(r + size)
                right.append(c + size)
                weight.append(1.0 / np.sqrt(n))
    return (np.array(top), np.array(left), np.array(bottom), np.array(right),
            np.array(weight, dtype=np.float32))


def orientation_energy(images: np.ndarray, n_orientations: int) -> np.ndarray:
    """Gradient magnitude split over signed orientation bins.

    Parameters
    ----------
    images : ndarray of shape (n, h, w), float32

    Returns
    -------
    ndarray of shape (n, n_orientations, h, w), float32
        Bin ``o`` is centred on angle ``2 pi o / n_orientations``; each pixel's magnitude is
        shared between the two bins around its gradient angle, linearly.
    """
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    gx = 0.5 * (padded[:, 1:-1, 2:] - padded[:, 1:-1, :-2])
    gy = 0.5 * (padded[:, 2:, 1:-1] - padded[:, :-2, 1:-1])
    magnitude = np.sqrt(gx * gx + gy * gy)
    position = np.arctan2(gy, gx) * (n_orientations / (2.0 * np.pi))  # in (-n/2, n/2]
    position = np.mod(position, n_orientations).astype(np.float32)
    lower = np.minimum(position.astype(np.int64), n_orientations - 1)
    upper_share = position - lower
    upper = (lower + 1) % n_orientations
    n, h, w = images.shape
    energy = np.zeros((n, n_orientations, h * w), dtype=np.float32)
    flat = energy.reshape(-1)
    # flat index of (image b, bin o, pixel p) is (b * n_orientations + o) * h * w + p
    base = np.arange(n, dtype=np.int64)[:, None] * n_orientations
    pixel = np.arange(h * w, dtype=np.int64)[None, :]
    magnitude = magnitude.reshape(n, h * w)
    upper_share = upper_share.reshape(n, h * w)
    # each (image, pixel) pair occurs once per assignment, so fancy-index writes are exact;
    # ``+=`` keeps both shares when the two bins coincide (a single orientation bin)
    flat[(base + lower.reshape(n, h * w)) * (h * w) + pixel] = magnitude * (1.0 - upper_share)
    flat[(base + upper.reshape(n, h * w)) * (h * w) + pixel] += magnitude * upper_share
    energy = energy.reshape(n, n_orientations, h, w)
    return energy


def pyramid_hog(images: np.ndarray, *, n_orientations: int = DEFAULT_ORIENTATIONS,
                levels: Sequence[tuple[int, int]] = DEFAULT_LEVELS,
                eps: float = 1e-2) -> np.ndarray:
    """Spatial-pyramid HOG features of a stack of grey images.

    Parameters
    ----------
    images : ndarray of shape (n, h, w) or (n, h * w) for square images
        Grey values, any scale (the block normalisation removes it, up to ``eps``); uint8
        input is scaled to [0, 1].
    n_orientations : int
        Signed orientation bins over ``[0, 2 pi)``.
    levels : sequence of (size, stride)
        Square blocks of ``size`` pixels every ``stride`` pixels, per level.
    eps : float
        Added to each block's L2 norm before dividing.

    Returns
    -------
    ndarray of shape (n, n_orientations * n_blocks), float32
        Block-major: the ``n_orientations`` bins of block 0, then block 1, ...
    """
    if int(n_orientations) < 1:
        raise ValueError(f"n_orientations must be at least 1, got {n_orientations}")
    if not eps >= 0:
        raise ValueError(f"eps must be non-negative, got {eps}")
    images = np.asarray(images)
    if images.ndim == 2:
        side = round(np.sqrt(images.shape[1]))
        if side * side != images.shape[1]:
            raise DataError(f"rows of {images.shape[1]} pixels are not square images; "
                            "pass an (n, h, w) array")
        images = images.reshape(-1, side, side)
    if images.ndim != 3:
        raise DataError(f"images must be (n, h, w), got shape {images.shape}")
    if not np.issubdtype(images.dtype, np.number) or np.issubdtype(images.dtype,
                                                                    np.complexfloating):
        raise DataError(f"images must hold real numbers, got dtype {images.dtype}")
    if images.size and not np.isfinite(images).all():
        raise DataError("images hold NaN or infinite values")
    scale = 1.0 / 255.0 if images.dtype == np.uint8 else 1.0
    n, h, w = images.shape
    top, left, bottom, right, weight = block_corners(h, w, levels)
    out = np.empty((n, len(top) * n_orientations), dtype=np.float32)
    for a in range(0, n, BATCH_IMAGES):
        batch = images[a:a + BATCH_IMAGES].astype(np.float32) * np.float32(scale)
        energy = orientation_energy(batch, n_orientations)
        integral = np.zeros((batch.shape[0], n_orientations, h + 1, w + 1), dtype=np.float32)
        np.cumsum(np.cumsum(energy, axis=2), axis=3, out=integral[:, :, 1:, 1:])
        hist = (integral[:, :, bottom, right] - integral[:, :, top, right]
                - integral[:, :, bottom, left] + integral[:, :, top, left])  # (b, o, blocks)
        hist = np.maximum(hist, 0.0)  # rounding of the integral image
        norm = np.sqrt((hist * hist).sum(axis=1, keepdims=True))
        denominator = norm + np.float32(eps)
        denominator[denominator == 0] = 1.0  # a block without edges stays 0, also at eps=0
        hist *= weight[None, None, :] / denominator
        out[a:a + batch.shape[0]] = hist.transpose(0, 2, 1).reshape(batch.shape[0], -1)
    return out
