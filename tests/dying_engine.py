"""A local engine that stops a fit after a given number of chunks, as a kill would."""

from __future__ import annotations

from typing import Any

from streamlearn.engine import LocalEngine


class Interrupted(Exception):
    """Raised by :class:`DyingEngine` where the kill falls."""


class DyingEngine(LocalEngine):
    """Stops the fit after ``after`` chunks, as a kill would (never when None)."""

    def __init__(self, after: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.after = after

    def run(self, pass_: Any, data: Any, **options: Any) -> Any:
        on_chunk = options.pop("on_chunk", None)

        def counting(done: int, state: Any) -> None:
            if on_chunk is not None:
                on_chunk(done, state)
            if self.after is not None:
                self.after -= 1
                if self.after <= 0:
                    raise Interrupted

        return super().run(pass_, data, on_chunk=counting, **options)
