"""Choosing value terms for an additive model: per-value residuals in one streamed pass.

A value term (:mod:`streamlearn.features.value_terms`) pays where a feature's effect jumps
at single values, which its curve smooths over. After the per-feature model is trained, a
reduction pass adds up its residuals ``r_ij = w_i ([y_i = +1] - P_j(x_i))`` (the weighted
gradients of the log-loss of its calibrated probabilities, as the pairs' screening takes
them) and their squares over the training rows at each listed value of each candidate
feature. For a cell of rows (one value, or one coarse bin), ``S^2 / Q`` with ``S`` the sum
of the residuals and ``Q`` the sum of their squares is the score statistic of an offset
for the cell, about chi-square with one degree of freedom when the model already fits
the cell, whatever the spread of the rows' residuals (a row near a probability of 0 or 1
varies less than one near 0.5). The offsets per value explain ``sum_v S_v^2 / Q_v``, the
offsets per coarse bin of the same rows (the :data:`~.interactions.SCREEN_BINS` quantile
bins of the pairs' screening) ``sum_b S_b^2 / Q_b``. Structure smooth in the value, which
the curve can follow or which comes from an interaction, shows in both; jumps at single
values only in the difference, whose mean without jumps is the number of values less the
number of bins. Each feature scores

    ``score = sum_j [sum_v S_vj^2 / Q_vj - sum_b S_bj^2 / Q_bj - (n_values - n_bins)]``

over the binary models ``j``, and a feature whose score reaches :data:`VALUE_SCORE` per
binary model is chosen, best first. A feature with at most ``SCREEN_BINS`` values has a
bin per value, and scores 0. The model with the chosen terms is then trained and kept only
when its held-out log-loss is lower by enough
(:func:`streamlearn.solvers.additive.driver.with_value_terms`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from streamlearn.data import Chunk
from streamlearn.features.value_terms import MAX_COUNTED_VALUES, value_table
from streamlearn.solvers.additive.interactions import SCREEN_BINS, ResidualModel, bin_edges
from streamlearn.solvers.holdout import Holdout

#: A feature's value term is chosen when its score reaches this many units per binary
#: model. Without jumps a score is the excess of about a chi-square over its mean, with up
#: to ``MAX_VALUES - 1`` = 31 degrees of freedom a model (standard deviation about 8): 50
#: is six of them. On the benchmark's data, adult's capital gain and loss score in the
#: hundreds, and every other feature of adult, satimage, pendigits, letter, shuttle and
#: the MNIST pixels of the odd/even problem below it.
VALUE_SCORE = 50.0


@dataclass
class ValueScreeningState:
    """Sums of the value screening pass: per listed value (all candidates' tables one
    after the other) and model, the residuals of its rows, their squares and the rows'
    weights (one column for all models where the models share their rows)."""

    sums: np.ndarray
    squares: np.ndarray
    weights: np.ndarray


class ValueScreeningPass:
    """Reduction pass: residual sums of the additive model at each listed value.

    Parameters
    ----------
    model : ResidualModel
        The per-feature models.
    candidates : dict of int to ndarray
        Feature -> its values, increasing
        (:func:`~streamlearn.features.value_terms.frequent_values`).
    holdout : Holdout or None
        Rows held out from training, left out here too.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, model: ResidualModel, candidates: dict[int, np.ndarray],
                 holdout: Holdout | None) -> None:
        self.model = model
        self.features = np.asarray(sorted(candidates), dtype=np.int64)
        self.tables = [np.asarray(candidates[f], dtype=np.float64) for f in self.features]
        self.bounds = np.concatenate([[0], np.cumsum([t.shape[0] for t in self.tables])]
                                     ).astype(np.int64)
        self.holdout = holdout
        self.weight_columns = model.weight_columns

    def start(self) -> ValueScreeningState:
        """Zero sums."""
        n, m = int(self.bounds[-1]), self.model.W.shape[0]
        return ValueScreeningState(np.zeros((n, m)), np.zeros((n, m)),
                                   np.zeros((n, self.weight_columns)))

    def step(self, state: ValueScreeningState, chunk: Chunk) -> ValueScreeningState:
        """Add the chunk's training rows (in place)."""
        rows = self.model.residuals(chunk, self.holdout)
        if rows is None:
            return state
        X, residual, weight, _ = rows
        square = residual * residual
        weight = weight[:, : self.weight_columns]
        for t, f in enumerate(self.features):
            table = self.tables[t]
            x = X[:, f].astype(np.float64)
            at = np.minimum(np.searchsorted(table, x), table.shape[0] - 1)
            hit = np.flatnonzero(table[at] == x)
            cell = self.bounds[t] + at[hit]
            np.add.at(state.sums, cell, residual[hit])
            np.add.at(state.squares, cell, square[hit])
            np.add.at(state.weights, cell, weight[hit])
        return state

    def merge(self, a: ValueScreeningState, b: ValueScreeningState) -> ValueScreeningState:
        """Add two states (a new one)."""
        return ValueScreeningState(a.sums + b.sums, a.squares + b.squares,
                                   a.weights + b.weights)

    def finish(self, state: ValueScreeningState) -> ValueScreeningState:
        """The sums as they are."""
        return state


@dataclass
class ValueCounts:
    """Sums of the value counting pass: per feature its distinct values (increasing) and
    the training rows holding each."""

    values: list[np.ndarray]
    counts: list[np.ndarray]


def merge_counts(values: np.ndarray, counts: np.ndarray, more_values: np.ndarray,
                 more_counts: np.ndarray, most: int = MAX_COUNTED_VALUES
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Two value counts of a feature added up; beyond ``most`` distinct values, the
    ``most`` most frequent kept (memory stays bounded on a feature whose values turn out
    not to repeat; the rows of a value dropped then are not counted)."""
    merged, inverse = np.unique(np.concatenate([values, more_values]), return_inverse=True)
    total = np.bincount(inverse, weights=np.concatenate([counts, more_counts]),
                        minlength=merged.shape[0]).astype(np.int64)
    if merged.shape[0] > most:
        keep = np.sort(np.lexsort((merged, -total))[:most])
        merged, total = merged[keep], total[keep]
    return merged, total


class ValueCountPass:
    """Reduction pass: how many training rows hold each value of the chosen features, for
    their tables (:func:`~streamlearn.features.value_terms.value_table`).

    Parameters
    ----------
    features : sequence of int
        The features counted.
    holdout : Holdout or None
        Rows held out from training, left out here too; so are rows of weight 0.
    """

    kind: Literal["reduction", "sequential"] = "reduction"

    def __init__(self, features: list[int], holdout: Holdout | None) -> None:
        self.features = [int(f) for f in features]
        self.holdout = holdout

    def start(self) -> ValueCounts:
        """No value counted."""
        empty = [np.zeros(0) for _ in self.features]
        return ValueCounts(empty, [np.zeros(0, dtype=np.int64) for _ in self.features])

    def step(self, state: ValueCounts, chunk: Chunk) -> ValueCounts:
        """Count the chunk's training rows (a new state)."""
        keep = np.ones(chunk.X.shape[0], dtype=bool)
        if self.holdout is not None:
            keep &= ~self.holdout.mask(chunk.rows)
        if chunk.weight is not None:
            keep &= np.asarray(chunk.weight) > 0
        if not keep.any():
            return state
        values, counts = [], []
        for t, f in enumerate(self.features):
            x = np.asarray(chunk.X[keep, f], dtype=np.float64)
            seen, n = np.unique(x[np.isfinite(x)], return_counts=True)
            merged = merge_counts(state.values[t], state.counts[t], seen, n)
            values.append(merged[0])
            counts.append(merged[1])
        return ValueCounts(values, counts)

    def merge(self, a: ValueCounts, b: ValueCounts) -> ValueCounts:
        """Add two states (a new one)."""
        pairs = [merge_counts(va, ca, vb, cb)
                 for va, ca, vb, cb in zip(a.values, a.counts, b.values, b.counts,
                                           strict=True)]
        return ValueCounts([v for v, _ in pairs], [c for _, c in pairs])

    def finish(self, state: ValueCounts) -> ValueCounts:
        """The counts as they are."""
        return state


def widen_tables(terms: tuple[tuple[int, tuple[float, ...]], ...], counts: ValueCounts,
                 features: list[int]) -> tuple[tuple[int, tuple[float, ...]], ...]:
    """The chosen terms with each table made every value of at least
    :data:`~streamlearn.features.value_terms.MIN_VALUE_ROWS` training rows
    (:func:`~streamlearn.features.value_terms.value_table`); a term keeps its sample's
    table where no value has that many.

    Parameters
    ----------
    terms : tuple of (int, tuple of float)
        As :func:`choose_value_terms` returns them.
    counts : ValueCounts
        The counting pass's result over ``features``.
    features : list of int
        The features the pass counted.

    Returns
    -------
    tuple of (int, tuple of float)
    """
    out = []
    for f, values in terms:
        t = features.index(f)
        table = value_table(counts.values[t], counts.counts[t])
        out.append((f, tuple(float(v) for v in table) if table.size else values))
    return tuple(out)


def value_scores(state: ValueScreeningState, bounds: np.ndarray,
                 value_bins: list[np.ndarray]) -> np.ndarray:
    """Each candidate's score (see the module): jumps at single values beyond its bins.

    Parameters
    ----------
    state : ValueScreeningState
    bounds : ndarray of shape (n_candidates + 1,), int64
        Where each candidate's values start in the state's rows.
    value_bins : list of ndarray of int64
        The coarse bin of each candidate's values.

    Returns
    -------
    ndarray of shape (n_candidates,), float64
    """
    m = state.sums.shape[1]
    out = np.zeros(len(value_bins))
    for t, bins in enumerate(value_bins):
        cells = slice(bounds[t], bounds[t + 1])
        S, Q = state.sums[cells], state.squares[cells]
        N = np.broadcast_to(state.weights[cells], S.shape)
        n_bins = int(bins.max()) + 1
        S_bin, Q_bin, N_bin = (np.zeros((n_bins, m)) for _ in range(3))
        np.add.at(S_bin, bins, S)
        np.add.at(Q_bin, bins, Q)
        np.add.at(N_bin, bins, N)
        explained = _explained(S, Q) - _explained(S_bin, Q_bin)
        freedom = (N > 0).sum(axis=0) - (N_bin > 0).sum(axis=0)
        out[t] = float((explained - freedom).sum())
    return out


def _explained(S: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``sum_c S_c^2 / Q_c`` over the cells whose residuals are not all zero, per model."""
    held = Q > 0
    return np.where(held, S * S / np.where(held, Q, 1.0), 0.0).sum(axis=0)


def choose_value_terms(state: ValueScreeningState, pass_: ValueScreeningPass,
                       sample: np.ndarray) -> tuple[tuple[tuple[int, tuple[float, ...]], ...],
                                                    np.ndarray]:
    """The value terms the pass chose: the candidates scoring at least :data:`VALUE_SCORE`
    per binary model, best first, each with its values.

    Parameters
    ----------
    state : ValueScreeningState
        The pass's result.
    pass_ : ValueScreeningPass
    sample : ndarray of shape (k, n_features)
        The describe pass's row sample, whose quantiles cut the coarse bins.

    Returns
    -------
    terms : tuple of (int, tuple of float)
    scores : ndarray of shape (len(terms),)
    """
    edges = bin_edges(sample[:, pass_.features], SCREEN_BINS)
    value_bins = [np.searchsorted(edges[t], table, side="right").astype(np.int64)
                  for t, table in enumerate(pass_.tables)]
    scores = value_scores(state, pass_.bounds, value_bins)
    order = np.argsort(-scores, kind="stable")
    chosen = order[scores[order] >= VALUE_SCORE * pass_.model.W.shape[0]]
    terms = tuple((int(pass_.features[t]), tuple(float(v) for v in pass_.tables[t]))
                  for t in chosen)
    return terms, scores[chosen]
