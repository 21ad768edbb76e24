"""An rcv1-like sparse problem written as svmlight and Vowpal Wabbit text, streamed in blocks.

A helper of ``bench/sparse_training.py`` (no ``--quick`` option: not a benchmark of its own).

Rows are documents: a row draws ``m`` tokens (``m`` log-normal, mean about 100) from a
Zipf-like law over ``N_FEATURES`` terms (``p_r = log(1 + 1/r) / log(N_FEATURES + 1)``, about
``1 / (r log N)``: the rank is ``floor(exp(U log(N + 1)))``, U uniform), so that
frequent terms repeat within a row and the row keeps about 80 distinct terms. The value of
a term is tf-idf: ``(1 + log tf) * (1 + log(1 / q_r))``, ``q_r`` the chance that a row holds
term ``r``, and every row is scaled to unit L2 norm (as rcv1 is). Term ranks map to feature
indices through a fixed random permutation, so frequent features are spread over the
index range, and each row lists its indices in increasing order.

The label is a sparse nonlinear additive rule: ``LABEL_TERMS`` terms drawn among the ranks
``LABEL_RANKS`` (frequent, but not the stop-word-like head), each with a weight ``a_j`` of
either sign and a saturating function of its value, ``a_j tanh(x_j / s_j)`` with ``s_j`` a
quarter of the term's median non-zero value (so its presence matters much more than its
size, which a linear model cannot express once rows are normalised); plus Gaussian noise of
sd ``NOISE`` times the score's sd; the label is +1 above the score's median, else -1.

Everything is a function of the seed and the row's block: the training rows are blocks
``0, 1, ...``; the test rows are drawn from the same law with another seed. A numba kernel
writes a block's rows as svmlight text (``1 12:0.031 ...``, one-based indices) and as VW
text (``1 |f 12:0.031 ...``) with the same tokens, so both files hold exactly the same
values (6 decimals). Memory: one block (``BLOCK_ROWS`` rows) at a time.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numba import njit

N_FEATURES = 1_000_000
#: log-normal token count per row: ``exp(N(TOKENS_MU, TOKENS_SIGMA))`` clipped to the range.
TOKENS_MU = math.log(82.0)
TOKENS_SIGMA = 0.5
TOKENS_RANGE = (10, 1500)
LABEL_TERMS = 300
LABEL_RANKS = (20, 3000)
NOISE = 0.3
BLOCK_ROWS = 1 << 15
#: Longest text of one entry: 7 digits of index, ':', '1.000000', ' '.
ENTRY_BYTES = 18
#: Bump when the rows change, so stale files are regenerated.
DATA_VERSION = 1
TRAIN_SALT = 1
TEST_SALT = 2
PILOT_SALT = 3
PILOT_ROWS = 20_000


@njit(cache=True)
def _draw_rows(seed: int, n_rows: int, perm: np.ndarray, idf: np.ndarray,
               mu: float, sigma: float, lo: int, hi: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR rows (indptr, zero-based sorted indices, float64 unit-norm tf-idf values)."""
    np.random.seed(seed)  # noqa: NPY002 (numba's generator, seeded per block)
    cap = n_rows * 200
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    indices = np.empty(cap, dtype=np.int32)
    values = np.empty(cap, dtype=np.float64)
    tokens = np.empty(hi, dtype=np.int64)
    n_terms = perm.shape[0]
    log_span = math.log(n_terms + 1.0)
    nnz = 0
    for i in range(n_rows):
        m = round(math.exp(mu + sigma * np.random.standard_normal()))  # noqa: NPY002
        m = max(lo, min(hi, m))
        for t in range(m):
            # log-uniform on [1, n + 1): P(rank r) = log((r + 1) / r) / log(n + 1) ~ 1 / r
            r = int(math.exp(np.random.random() * log_span)) - 1  # noqa: NPY002
            tokens[t] = min(r, n_terms - 1)
        tok = np.sort(tokens[:m])
        if nnz + m > indices.shape[0]:
            grown = max(2 * indices.shape[0], nnz + m)
            ni = np.empty(grown, dtype=np.int32)
            nv = np.empty(grown, dtype=np.float64)
            ni[:nnz] = indices[:nnz]
            nv[:nnz] = values[:nnz]
            indices, values = ni, nv
        start = nnz
        t = 0
        while t < m:
            r = tok[t]
            tf = 0
            while t < m and tok[t] == r:
                tf += 1
                t += 1
            indices[nnz] = perm[r]
            values[nnz] = (1.0 + math.log(tf)) * idf[r]
            nnz += 1
        order = np.argsort(indices[start:nnz])
        idx = indices[start:nnz][order].copy()
        val = values[start:nnz][order].copy()
        norm = math.sqrt(np.sum(val * val))
        for k in range(nnz - start):
            indices[start + k] = idx[k]
            values[start + k] = val[k] / norm
        indptr[i + 1] = nnz
    return indptr, indices[:nnz], values[:nnz]


@njit(cache=True)
def _round6(values: np.ndarray) -> np.ndarray:
    """Values as integer millionths (at least 1, so no written entry is zero)."""
    out = np.empty(values.shape[0], dtype=np.int64)
    for k in range(values.shape[0]):
        v = round(values[k] * 1e6)
        out[k] = v if v > 0 else 1
    return out


@njit(cache=True)
def _write_int(buf: np.ndarray, pos: int, v: int) -> int:
    if v == 0:
        buf[pos] = 48
        return pos + 1
    n = 0
    w = v
    while w > 0:
        n += 1
        w //= 10
    for k in range(n - 1, -1, -1):
        buf[pos + k] = 48 + v % 10
        v //= 10
    return pos + n


@njit(cache=True)
def _format_rows(indptr: np.ndarray, indices: np.ndarray, micro: np.ndarray,
                 labels: np.ndarray, vw: bool) -> tuple[np.ndarray, np.ndarray]:
    """The rows as text (one-based indices, values with up to 6 decimals); line offsets."""
    n = indptr.shape[0] - 1
    buf = np.empty(n * 16 + indices.shape[0] * 18, dtype=np.uint8)
    starts = np.empty(n + 1, dtype=np.int64)
    pos = 0
    for i in range(n):
        starts[i] = pos
        if labels[i] < 0:
            buf[pos] = 45
            pos += 1
        buf[pos] = 49
        pos += 1
        if vw:
            buf[pos] = 32
            buf[pos + 1] = 124
            buf[pos + 2] = 102
            pos += 3
        for k in range(indptr[i], indptr[i + 1]):
            buf[pos] = 32
            pos = _write_int(buf, pos + 1, indices[k] + 1)
            buf[pos] = 58
            pos = _write_int(buf, pos + 1, micro[k] // 1000000)
            frac = micro[k] % 1000000
            if frac:
                buf[pos] = 46
                pos += 1
                digits = 6
                while frac % 10 == 0:
                    frac //= 10
                    digits -= 1
                for d in range(digits - 1, -1, -1):
                    buf[pos + d] = 48 + frac % 10
                    frac //= 10
                pos += digits
        buf[pos] = 10
        pos += 1
    starts[n] = pos
    return buf[:pos], starts


@njit(cache=True)
def _scores(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
            weight: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``sum_j weight[j] tanh(x_j / scale[j])`` over each row's entries (weight 0: no term)."""
    n = indptr.shape[0] - 1
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            if weight[j] != 0.0:
                s += weight[j] * math.tanh(values[k] / scale[j])
        out[i] = s
    return out


@dataclass
class Block:
    """Rows of one block: CSR arrays (values as written), labels, svmlight and VW text."""

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    labels: np.ndarray
    svm: np.ndarray
    svm_starts: np.ndarray
    vw: np.ndarray
    vw_starts: np.ndarray

    @property
    def n_rows(self) -> int:
        return self.labels.shape[0]


class Generator:
    """The law of the rows (terms, idf, permutation, label rule) from one seed."""

    def __init__(self, seed: int, n_features: int = N_FEATURES) -> None:
        self.seed = seed
        self.n_features = n_features
        ranks = np.arange(1, n_features + 1, dtype=np.float64)
        p = np.log1p(1.0 / ranks) / math.log(n_features + 1.0)
        mean_tokens = math.exp(TOKENS_MU + TOKENS_SIGMA**2 / 2)
        q = -np.expm1(-mean_tokens * p)
        self.idf = 1.0 + np.log(1.0 / q)
        rng = np.random.default_rng([seed, 0])
        self.perm = rng.permutation(n_features).astype(np.int32)
        terms = rng.choice(np.arange(*LABEL_RANKS), LABEL_TERMS, replace=False)
        self.label_features = self.perm[terms]
        signs = rng.choice([-1.0, 1.0], LABEL_TERMS)
        self.weight = np.zeros(n_features)
        self.weight[self.label_features] = signs * rng.uniform(0.5, 1.5, LABEL_TERMS)
        self.scale = np.ones(n_features)
        # the pilot sets each term's scale, the threshold and the noise
        indptr, indices, values = self._draw(PILOT_SALT, 0, PILOT_ROWS)
        for j in self.label_features:
            nz = values[indices == j]
            self.scale[j] = 0.25 * float(np.median(nz)) if nz.size else 0.01
        score = _scores(indptr, indices, values, self.weight, self.scale)
        self.noise = NOISE * float(score.std())
        noisy = score + np.random.default_rng([seed, PILOT_SALT, 1]).normal(
            0.0, self.noise, score.shape[0])
        self.threshold = float(np.median(noisy))
        self.pilot_nnz_per_row = float(indptr[-1] / PILOT_ROWS)
        # the best accuracy any model can reach (the rule without its noise), on the pilot
        self.bayes_accuracy = float(np.mean((score > self.threshold) == (noisy > self.threshold)))

    def _draw(self, salt: int, block: int, n_rows: int) -> tuple[np.ndarray, ...]:
        seed = int(np.random.SeedSequence([self.seed, salt, block]).generate_state(1)[0] >> 1)
        lo, hi = TOKENS_RANGE
        indptr, indices, values = _draw_rows(seed, n_rows, self.perm, self.idf,
                                             TOKENS_MU, TOKENS_SIGMA, lo, hi)
        return indptr, indices, _round6(values) / 1e6

    def block(self, salt: int, block: int, n_rows: int) -> Block:
        """Rows of block ``block`` of the stream ``salt`` (train or test), as text too."""
        indptr, indices, values = self._draw(salt, block, n_rows)
        score = _scores(indptr, indices, values, self.weight, self.scale)
        noise = np.random.default_rng([self.seed, salt, block, 1]).normal(
            0.0, self.noise, n_rows)
        labels = np.where(score + noise > self.threshold, 1, -1).astype(np.int8)
        micro = _round6(values)
        svm, svm_starts = _format_rows(indptr, indices, micro, labels, False)
        vw, vw_starts = _format_rows(indptr, indices, micro, labels, True)
        return Block(indptr, indices, values, labels, svm, svm_starts, vw, vw_starts)

    def blocks(self, salt: int, n_rows: int) -> Iterator[tuple[int, Block]]:
        """``(first row, block)`` over ``n_rows`` rows of a stream, ``BLOCK_ROWS`` at a time."""
        for k, a in enumerate(range(0, n_rows, BLOCK_ROWS)):
            yield a, self.block(salt, k, min(BLOCK_ROWS, n_rows - a))
