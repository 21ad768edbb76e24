"""``Holdout``: rows set aside by a hash of their global row id, whatever the chunking.

Used for the calibration rows of ``AdditiveSVC``, the validation rows of ``MixtureSVC``,
``ShareBoostClassifier`` and the super-sparse models: the same rows are held out in every
pass, on every engine, after any shuffle, without storing a mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from streamlearn.data import Chunk
from streamlearn.data.sparse_rows import take_rows
from streamlearn.solvers.row_sample import row_keys

__all__ = ["MIN_VALIDATION_ROWS", "Holdout", "held_out_rows"]

#: Held-out rows at least (``n_rows * fraction`` expected) for a model to choose by them.
MIN_VALIDATION_ROWS = 200


@dataclass(frozen=True)
class Holdout:
    """A deterministic subset of rows chosen by a hash of their global row id.

    Row ``i`` is held out when ``row_keys([i], seed) < threshold``; keys are uniform 64-bit
    integers, so about ``threshold / 2**64`` of the rows are held out, the same rows whatever
    the chunking, shuffling or engine.

    Attributes
    ----------
    seed : int
    threshold : int
        In ``[0, 2**64)``.
    """

    seed: int
    threshold: int

    @classmethod
    def fraction(cls, fraction: float, seed: int) -> Holdout:
        """Hold out about ``fraction`` of the rows."""
        threshold = min(int(float(fraction) * 2.0**64), 2**64 - 1)
        return cls(int(seed) % 2**64, threshold)

    @classmethod
    def for_choosing(cls, fraction: float | None, n_rows: int, seed: int) -> Holdout | None:
        """``fraction`` of the rows held out for a model to choose a setting by, or None
        when ``fraction`` is None or fewer than :data:`MIN_VALIDATION_ROWS` rows are
        expected in that share of ``n_rows``."""
        if fraction is None or float(fraction) * int(n_rows) < MIN_VALIDATION_ROWS:
            return None
        return cls.fraction(float(fraction), seed)

    def mask(self, rows: np.ndarray) -> np.ndarray:
        """Boolean mask of the held-out rows among global row ids ``rows``."""
        keys = row_keys(np.ascontiguousarray(rows, dtype=np.int64), self.seed)
        return keys < np.uint64(self.threshold)

    def count(self, n_rows: int, block: int = 1 << 20) -> int:
        """Held-out rows among row ids ``0 .. n_rows - 1`` (hashed, not read)."""
        held = 0
        for start in range(0, int(n_rows), block):
            held += int(self.mask(np.arange(start, min(start + block, int(n_rows)))).sum())
        return held


def held_out_rows(chunk: Chunk, holdout: Holdout | None
                  ) -> tuple[Any, np.ndarray, np.ndarray | None] | None:
    """The features, targets and weights of the rows of ``chunk`` that ``holdout`` holds
    out (every row with None); None when it holds out none of them."""
    X, y, weight = chunk.X, np.asarray(chunk.y), chunk.weight
    if holdout is None:
        return X, y, weight
    keep = np.flatnonzero(holdout.mask(chunk.rows))
    if keep.size == 0:
        return None
    return take_rows(X, keep), y[keep], None if weight is None else weight[keep]
