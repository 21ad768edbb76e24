"""Progress reporting for passes: rows done, rows/s and ETA on stderr."""

from __future__ import annotations

import os
import sys
from typing import Any

from tqdm.auto import tqdm


def progress_enabled(progress: bool | None) -> bool:
    """Resolve a ``progress`` argument: None means "when stderr is a terminal".

    ``STREAMLEARN_PROGRESS=0`` turns bars off everywhere, ``=1`` forces them on.
    """
    env = os.environ.get("STREAMLEARN_PROGRESS")
    if env is not None and env.strip() != "":
        return env.strip() not in ("0", "false", "no", "off")
    if progress is not None:
        return bool(progress)
    return sys.stderr.isatty()


class Progress:
    """A row counter shown as a bar with rows/s and ETA, or nothing when disabled."""

    def __init__(self, total_rows: int, description: str, enabled: bool) -> None:
        self._bar: Any = None
        if enabled:
            self._bar = tqdm(
                total=total_rows,
                desc=description,
                unit=" rows",
                unit_scale=True,
                dynamic_ncols=True,
                file=sys.stderr,
                leave=True,
                smoothing=0.1,
            )

    def update(self, rows: int) -> None:
        """Count ``rows`` more rows as done."""
        if self._bar is not None:
            self._bar.update(rows)

    def close(self) -> None:
        """Finish the bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
