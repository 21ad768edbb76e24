"""Reading ahead in a background thread, with a hard bound on how far ahead."""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

S = TypeVar("S")
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


def prefetched_map(work: Callable[[S], T], items: Iterable[S], depth: int) -> Iterator[T]:
    """Yield ``work(item)`` for each item in order, computing up to ``depth`` items ahead.

    Unlike :func:`prefetched`, the items ahead are computed concurrently, by up to ``depth``
    threads (at most one per CPU), for work whose items are independent (reads of separate
    row ranges). The same bound holds: a result is submitted only when the consumer asks for
    the next one, so at most ``depth`` results exist beyond the one the consumer holds.
    Results come in the order of ``items``; the first failure in that order is re-raised in
    the consumer. Leaving the loop early cancels the items not yet started and waits for the
    running ones.

    With ``depth <= 0`` items are computed in the calling thread.
    """
    if depth <= 0:
        for item in items:
            yield work(item)
        return

    todo = iter(items)
    pending: deque[Future[T]] = deque()
    pool = ThreadPoolExecutor(max_workers=max(1, min(depth, os.cpu_count() or 1)),
                              thread_name_prefix="streamlearn-read")
    try:
        for item in todo:
            pending.append(pool.submit(work, item))
            if len(pending) == depth:
                break
        while pending:
            result = pending.popleft().result()
            for item in todo:
                pending.append(pool.submit(work, item))
                break
            yield result
            del result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
