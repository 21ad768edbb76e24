"""Test support: run a pass the way a distributed engine would, to check ``merge``."""

from __future__ import annotations

import numpy as np


def run_merged(pass_, chunks, rng: np.random.Generator):
    """Run ``pass_`` on random groups of chunks and merge the states in a random tree order."""
    perm = rng.permutation(len(chunks))
    groups = np.array_split(perm, rng.integers(1, len(chunks) + 1))
    states = []
    for group in groups:
        state = pass_.start()
        for i in group:
            state = pass_.step(state, chunks[i])
        states.append(state)
    while len(states) > 1:
        i, j = rng.choice(len(states), size=2, replace=False)
        merged = pass_.merge(states[i], states[j])
        states = [s for t, s in enumerate(states) if t not in (i, j)] + [merged]
    return pass_.finish(states[0])


def run_lanes(pass_, lanes):
    """Run a sequential pass in lanes, as ``DaskEngine`` splits it: each lane runs
    ``pass_.lane(share)`` over its chunks (``share`` its part of the rows), and the lanes'
    states are merged in order."""
    total = sum(chunk.n_rows for lane in lanes for chunk in lane)
    states = []
    for lane in lanes:
        walker = pass_.lane(sum(chunk.n_rows for chunk in lane) / total)
        state = walker.start()
        for chunk in lane:
            state = walker.step(state, chunk)
        states.append(state)
    merged = states[0]
    for state in states[1:]:
        merged = pass_.merge(merged, state)
    return pass_.finish(merged)
