"""Whether a model is trained as a lane of a race (``StreamSearchCV``'s).

The race trains every candidate setting by ``partial_fit`` on the same slices of rows and
drops the worse at each rung, so whatever a model works out after each call only for its
user (``AdditiveSVC``'s term importances over the call's rows, a fifth to a half of a
lane's time on data with pairs) is thrown away with every lane that loses. Inside
:func:`racing` a model may skip such summaries; the search then has the survivor it
keeps without a refit (``refit=False``) make them once, over the held-out rows
(:func:`finish_lane`).

The flag belongs to the running thread (a ``ContextVar``), as
:func:`~streamlearn.warning_origin.library_rows`'s does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

_RACING: ContextVar[bool] = ContextVar("streamlearn_racing", default=False)


@contextmanager
def racing() -> Iterator[None]:
    """Within this block, ``partial_fit`` calls train lanes of a race."""
    token = _RACING.set(True)
    try:
        yield
    finally:
        _RACING.reset(token)


def in_race() -> bool:
    """Whether the running code is inside :func:`racing`."""
    return _RACING.get()


def finish_lane(model: Any, rows: np.ndarray) -> None:
    """Have a model that the search keeps make the summaries it skipped while racing (its
    ``_finish_lane(rows)``, where it has one; a model trained by ``fit`` skipped none),
    over ``rows``: rows of the data as the lanes read them (the held-out ones)."""
    finish = getattr(model, "_finish_lane", None)
    if finish is not None and rows.shape[0] > 0:
        finish(rows)
