"""``exp`` of a short vector of non-positive numbers, in a loop the compiler vectorises.

Soft-max losses take one exponential per class per row, and the C library's ``exp``, called
once per element, costs most of a soft-max's time. :func:`exp_nonpositive` writes
``x = n ln 2 + r`` with ``n`` rounded to the nearest integer (``|r| <= ln 2 / 2``), sums
the Taylor series of ``exp(r)`` to degree 13 (the first omitted term is below ``2e-16``
of the result, ``ln 2 / 2`` being about ``0.347``) and multiplies by ``2^n`` by adding
``n`` to the exponent bits. Every step is a multiplication, an addition or an integer
operation on 64-bit lanes, with no branch, so the loop runs in SIMD lanes. Inputs below
``-700`` are clamped to it (``exp(-700)`` is about ``1e-304``): a soft-max's
exponentials are of ``s_c - max s``, and such a term adds nothing to a sum that holds 1.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: ``log2(e)``, and ``ln 2`` split in a high part with trailing zero bits (``n ln2_hi`` is
#: exact for the ``|n| <= 1010`` met here) and the rest (Cody and Waite's reduction).
LOG2E = 1.4426950408889634
LN2_HI = 0.6931471803691238
LN2_LO = 1.9082149292705877e-10
#: ``1.5 * 2^52``: adding it rounds a float64 of magnitude below ``2^51`` to an integer,
#: which then sits in the low bits of the sum's mantissa; ``ROUND_BITS`` are its bits.
ROUND = 6755399441055744.0
ROUND_BITS = 0x4338000000000000
#: Smallest argument taken as it is; smaller ones are clamped to it.
LOWEST = -700.0
#: Vectors shorter than this are quicker with one call of the C library's ``exp`` per
#: element: the lanes' fixed cost per call dominates (a row loop of 2 exponentials took
#: 2.4x the time, of 10 about the same, of 26 0.7x).
MIN_LENGTH = 16
_E0, _E1, _E2, _E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12, _E13 = (
    1.0 / math.factorial(j) for j in range(14))


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def exp_nonpositive(z: np.ndarray, out: np.ndarray, work: np.ndarray) -> None:
    """``out[c] = exp(z[c])`` for ``z[c] <= 0``, to a relative error of a few ``1e-16``.

    Only ``contract`` (fused multiply-add) of the fast-math flags: re-association would
    fold ``(t + ROUND) - ROUND`` to ``t`` and drop the rounding.

    Parameters
    ----------
    z : ndarray of shape (k,), float64
        Exponents, at most 0 (larger ones are not handled); below ``LOWEST`` clamped.
    out : ndarray of shape (k,), float64, C-contiguous
        Receives the exponentials; may be ``z`` itself.
    work : ndarray of shape (k,), float64, C-contiguous
        Scratch space, not ``z`` or ``out``.
    """
    k = z.shape[0]
    for c in range(k):
        x = max(z[c], LOWEST)
        t = x * LOG2E + ROUND
        n = t - ROUND
        r = (x - n * LN2_HI) - n * LN2_LO
        out[c] = _E0 + r * (_E1 + r * (_E2 + r * (_E3 + r * (_E4 + r * (_E5 + r * (
            _E6 + r * (_E7 + r * (_E8 + r * (_E9 + r * (_E10 + r * (_E11 + r * (
                _E12 + r * _E13))))))))))))
        work[c] = t
    out_bits = out.view(np.int64)
    n_bits = work.view(np.int64)
    for c in range(k):
        out_bits[c] += (n_bits[c] - ROUND_BITS) << 52
