"""Whether a model is trained as a lane of a race (``StreamSearchCV``'s).

The race trains every candidate setting by ``partial_fit`` on the same slices of rows and
drops the worse at each rung, so whatever a model works out after each call only for its
user (``AdditiveSVC``'s term importances over the call's rows, a fifth to a half of a
lane's time on data with pairs) is thrown away with every lane that loses. Inside
:func:`racing` a model may skip such summaries; the search then has the survivor it
keeps without a refit (``refit=False``) make them once, over the held-out rows
(:func:`finish_lane`).

A lane's warnings about its own rows are the search's to give. A lane whose feature map
came from its first slice of rows warned at every later slice with more than
:data:`CLAMPED_SHARE_WARNING` of a feature's values outside that range, once per lane and
slice: 192 warnings for three settings on 20,000 rows in 300-row chunks, most of
them from short slices (one value of 30 rows is 3 %). Inside :func:`racing` a lane
records its counts instead (:func:`record_clamped`), and the search warns once, of the
features whose values were clamped at that share over all the lanes' rows.

The flag belongs to the running thread (a ``ContextVar``), as
:func:`~streamlearn.warning_origin.library_rows`'s does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

#: A share of a feature's values clamped to a feature map's range that is warned of (the
#: tail beyond a first chunk's extremes is smaller: about ``2 / (n + 1)`` of ``n`` rows).
CLAMPED_SHARE_WARNING = 0.01

_RACING: ContextVar[bool] = ContextVar("streamlearn_racing", default=False)
_CLAMPED: ContextVar[dict[str, list[int]] | None] = ContextVar("streamlearn_clamped",
                                                          default=None)


@contextmanager
def racing(clamped: dict[str, list[int]] | None = None) -> Iterator[None]:
    """Within this block, ``partial_fit`` calls train lanes of a race.

    Parameters
    ----------
    clamped : dict, optional
        Where the lanes record the values they clamp, feature name -> [values clamped,
        rows] (:func:`record_clamped`); without it they warn as outside a race.
    """
    token = _RACING.set(True)
    record = _CLAMPED.set(clamped)
    try:
        yield
    finally:
        _CLAMPED.reset(record)
        _RACING.reset(token)


def in_race() -> bool:
    """Whether the running code is inside :func:`racing`."""
    return _RACING.get()


def record_clamped(names: list[str], outside: np.ndarray, n_rows: int) -> bool:
    """Inside :func:`racing` with a record: add a lane's slice to it, per feature name the
    values clamped to the feature map's range (``outside``) and the rows, and say so (True:
    the lane does not warn). False elsewhere."""
    record = _CLAMPED.get() if _RACING.get() else None
    if record is None:
        return False
    for name, count in zip(names, np.asarray(outside).tolist(), strict=True):
        counts = record.setdefault(name, [0, 0])
        counts[0] += int(count)
        counts[1] += int(n_rows)
    return True


def finish_lane(model: Any, rows: np.ndarray) -> None:
    """Have a model that the search keeps make the summaries it skipped while racing (its
    ``_finish_lane(rows)``, where it has one; a model trained by ``fit`` skipped none),
    over ``rows``: rows of the data as the lanes read them (the held-out ones)."""
    finish = getattr(model, "_finish_lane", None)
    if finish is not None and rows.shape[0] > 0:
        finish(rows)
