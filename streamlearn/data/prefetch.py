"""Reading ahead in a background thread, with a hard bound on how far ahead."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def prefetched(produce: Callable[[], Iterator[T]], depth: int) -> Iterator[T]:
    """Iterate over ``produce()`` while a background thread reads up to ``depth`` items ahead.

    At most ``depth`` items exist beyond the one the consumer holds: the producer takes a
    slot before it starts reading an item and the consumer frees it when it asks for the
    next, so memory stays at ``(depth + 1)`` items whatever the relative speeds. Exceptions
    raised while producing are re-raised in the consumer. Leaving the loop early (``break``,
    an exception, garbage collection) stops the producer.

    With ``depth <= 0`` items are produced in the calling thread.
    """
    if depth <= 0:
        yield from produce()
        return

    slots = threading.Semaphore(depth)
    items: queue.Queue[object] = queue.Queue()
    stop = threading.Event()

    def work() -> None:
        try:
            iterator = produce()
            while True:
                while not slots.acquire(timeout=0.1):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                try:
                    item = next(iterator)
                except StopIteration:
                    items.put(_DONE)
                    return
                items.put(item)
        except BaseException as exc:  # handed to the consumer, re-raised there
            items.put(_Failure(exc))

    thread = threading.Thread(target=work, name="streamlearn-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = items.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.exc
            yield item  # type: ignore[misc]
            del item
            slots.release()
    finally:
        stop.set()
        slots.release()
        thread.join(timeout=10)
