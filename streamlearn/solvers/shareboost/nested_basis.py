"""Nested indicator columns re-parametrised by the intervals between them.

The stumps ``1[x_f <= theta_1], ..., 1[x_f <= theta_m]`` selected on one feature (thresholds
ascending), and an anchor centre's balls ``1[||x - v|| < r_1], ...`` (radii ascending), are
*nested*: each one's rows hold the previous one's. Their weights ``W_1 .. W_m`` are badly
conditioned for the corrective step's L-BFGS: a row in the ``p``-th interval (between
``theta_{p-1}`` and ``theta_p``) is scored ``v_p = W_p + ... + W_m``, so moving the score of
one interval moves ``m`` weights at once, and the Hessian couples them all. The same model
written with the interval values ``v`` has columns with disjoint rows (the indicators of the
intervals), whose Hessian is block diagonal within a group.

:class:`NestedBasis` maps between the two: ``W_l = v_l - v_{l+1}`` (``v_{m+1} = 0``),
``v_l = sum_{j >= l} W_j``, and the gradient ``dF/dv_l = dF/dW_l - dF/dW_{l-1}`` (the
transpose of the first map). The objective is the same function of the model, so the
minimiser is the same; only the path of L-BFGS to it changes. With a penalty on ``W``, the
penalty stays on ``W`` (it is computed from the mapped weights).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class NestedBasis:
    """Interval parametrisation of groups of nested columns.

    Attributes
    ----------
    next_ : ndarray of shape (T,), int64
        For each column, the next larger column of its group (-1 for the largest).
    prev_ : ndarray of shape (T,), int64
        For each column, the next smaller column of its group (-1 for the smallest).
    descending : ndarray of shape (T,), int64
        Columns from the largest of each group down, so that a column comes after the
        larger ones of its group (the order of the suffix sums).
    """

    next_: np.ndarray
    prev_: np.ndarray
    descending: np.ndarray

    @classmethod
    def of(cls, group: np.ndarray, rank: np.ndarray) -> NestedBasis:
        """The basis of columns in groups ``group``, nested in the order of ``rank``.

        Parameters
        ----------
        group : ndarray of shape (T,), int
            Group of each selected column (a feature, an anchor centre).
        rank : ndarray of shape (T,), int
            Position of the column in its group's nesting (threshold or radius index);
            no two columns of a group share one.

        Returns
        -------
        NestedBasis
        """
        group = np.asarray(group, dtype=np.int64)
        rank = np.asarray(rank, dtype=np.int64)
        order = np.lexsort((rank, group))  # by group, then smallest first
        same = group[order][1:] == group[order][:-1]
        if np.any(same & (rank[order][1:] == rank[order][:-1])):
            raise ValueError("two nested columns of one group share a rank")
        next_ = np.full(group.shape[0], -1, dtype=np.int64)
        prev_ = np.full(group.shape[0], -1, dtype=np.int64)
        next_[order[:-1][same]] = order[1:][same]
        prev_[order[1:][same]] = order[:-1][same]
        return cls(next_, prev_, order[::-1].copy())

    def weights(self, v: np.ndarray) -> np.ndarray:
        """Column weights ``W`` of interval values ``v`` (arrays of shape (T, ...))."""
        larger = np.where((self.next_ >= 0).reshape((-1,) + (1,) * (v.ndim - 1)),
                          v[np.maximum(self.next_, 0)], 0.0)
        return v - larger

    def values(self, W: np.ndarray) -> np.ndarray:
        """Interval values ``v`` of column weights ``W``: suffix sums within each group."""
        v = np.array(W, dtype=np.float64, copy=True)
        for i in self.descending:
            j = self.next_[i]
            if j >= 0:
                v[i] += v[j]
        return v

    def gradient(self, grad_w: np.ndarray) -> np.ndarray:
        """Gradient with respect to ``v`` from the gradient with respect to ``W``."""
        smaller = np.where((self.prev_ >= 0).reshape((-1,) + (1,) * (grad_w.ndim - 1)),
                           grad_w[np.maximum(self.prev_, 0)], 0.0)
        return grad_w - smaller
