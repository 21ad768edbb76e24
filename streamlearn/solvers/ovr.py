"""Several binary models (one-vs-rest or one-vs-one) trained from one read of each row.

A multiclass problem with ``k`` classes is ``k`` binary problems "class ``j`` against the
rest", or ``k (k - 1) / 2`` problems "class ``a`` against class ``b``", over the same rows.
The solver kernels (:func:`~streamlearn.solvers.pegasos.pegasos_ovr_chunk`,
:func:`~streamlearn.solvers.dcd.dcd_ovr_chunk`,
:func:`~streamlearn.solvers.embedding.decision_ovr_chunk`) embed each row once (the expensive
part for Fourier and Hermite maps) and then score and update all ``m`` binary models with it.
Model ``j`` is row ``j`` of a weight matrix ``W_d`` of shape ``(m, n_dims + 1)`` in the
``w_d`` form of :mod:`streamlearn.solvers.embedding`, bias weight last. It sees the label
``+1`` for rows whose class code is ``positive[j]`` and ``-1`` for rows whose code is
``negative[j]``, or for every other row when ``negative[j]`` is :data:`REST`; rows of any
other class are not in its problem (for PEGASOS a step of weight 0, which only shrinks; for
dual coordinate descent a row whose dual variable stays 0). A binary problem is ``m = 1``
with ``positive = [1]`` and ``negative = [REST]`` (:func:`one_model`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: ``negative`` entry of a model whose negative rows are all classes but its positive one.
REST = -1


@njit(cache=True, nogil=True)
def binary_label(code, positive, negative):
    """Label of a row of class ``code`` in the problem ``positive`` against ``negative``.

    Parameters
    ----------
    code : int
        The row's class code.
    positive, negative : int
        The model's positive class and negative class (:data:`REST`: every other class).

    Returns
    -------
    float
        ``+1``, ``-1``, or ``0`` for a row that is not in the model's problem.
    """
    if code == positive:
        return 1.0
    if negative == REST or code == negative:
        return -1.0
    return 0.0


def one_model(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class codes and model pair of a single binary problem with labels in {-1, +1}.

    Parameters
    ----------
    y : ndarray of shape (n_rows,)
        Labels in {-1, +1}.

    Returns
    -------
    codes : ndarray of shape (n_rows,), int32
        1 for the rows labelled ``+1``, 0 for the others.
    positive, negative : ndarray of shape (1,), int32
        ``[1]`` and ``[REST]``.
    """
    codes = (np.asarray(y) > 0).astype(np.int32)
    return codes, np.ones(1, dtype=np.int32), np.full(1, REST, dtype=np.int32)
