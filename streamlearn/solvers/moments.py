"""Per-feature moments, mergeable: the reduction lives in :mod:`streamlearn.engine.moments`.

It is a statistic of the built-in ``describe`` pass, so it belongs to the engine layer; the
names stay importable from here for the solvers and models that use them.
"""

from streamlearn.engine.moments import Moments, chunk_moments, empty_moments, merge_moments

__all__ = ["Moments", "chunk_moments", "empty_moments", "merge_moments"]
