"""Bottom-k row sample: the reduction lives in :mod:`streamlearn.engine.row_sample`.

It is a statistic of the built-in ``describe`` pass, so it belongs to the engine layer; the
names stay importable from here for the solvers and models that use them.
"""

from streamlearn.engine.row_sample import NOT_FULL, BottomKSample, keys_below, row_keys

__all__ = ["NOT_FULL", "BottomKSample", "keys_below", "row_keys"]
