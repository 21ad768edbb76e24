"""A loopback dask ``LocalCluster`` whose workers stream chunks at full speed.

dask's nanny starts every worker with ``MALLOC_TRIM_THRESHOLD_=65536`` (its
``distributed.nanny.pre-spawn-environ`` default), so that freed memory goes back to the
operating system at once. Setting the trim threshold also fixes glibc's mmap threshold at
128 KiB: every chunk-sized buffer (a decoded zarr chunk, a chunk's feature matrix) is then
a fresh ``mmap`` whose pages fault in and are zeroed on first touch, chunk after chunk. Reading
a 4M-row zarr store (32 float32 features) on one worker took 0.98-1.12 s that way, against
0.59-0.74 s with glibc's adaptive thresholds and 0.66-0.68 s in the client process.

:func:`local_cluster` leaves the variable unset in the workers it starts, unless the calling
process has it in its own environment: workers inherit that, and a nanny started by a plain
``LocalCluster`` earlier in the same process writes dask's value there. For a cluster
started elsewhere, the same setting is the dask configuration
``distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_: null`` on the machines that
start the workers (the README's distributed section shows it).

dask also starts every worker with ``OMP_NUM_THREADS=1``, so that worker threads do not
each run a multi-threaded BLAS. pyarrow sizes its decoding pool from the same variable, so a
worker read parquet with one thread where ``LocalEngine`` uses every core: one worker ran a
describe pass over 4M parquet rows at 0.63-0.79x of ``LocalEngine``. :func:`local_cluster`
gives the decoding libraries of each worker its share of the machine instead,
``cores // n_workers`` threads (``OMP_NUM_THREADS`` for pyarrow and BLAS,
``ZARR_THREADING__MAX_WORKERS`` for zarr's codecs): one worker decodes like the client
process, and several workers together use each core once.

The worker processes share the process group of the process that started them, so Ctrl-C
in a terminal sends SIGINT to each of them too: every worker then died printing its own
traceback while the client was already shutting the cluster down. :func:`local_cluster`
preloads this module in its worker processes, whose :func:`dask_setup` ignores SIGINT
there: only the client reacts, and closing the cluster stops the workers.
"""

from __future__ import annotations

import os
from typing import Any

#: Changes to dask's worker environment (``None`` unsets a variable) for streaming workers.
STREAMING_WORKER_ENVIRON: dict[str, Any] = {"MALLOC_TRIM_THRESHOLD_": None}
#: Variables that size the decoding thread pools of a worker: pyarrow (and BLAS), zarr.
DECODE_THREAD_VARIABLES = ("OMP_NUM_THREADS", "ZARR_THREADING__MAX_WORKERS")


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def worker_environ(n_workers: int, decode_threads: int | None = None) -> dict[str, Any]:
    """Environment of the workers :func:`local_cluster` starts.

    Parameters
    ----------
    n_workers : int
        Worker processes sharing this machine.
    decode_threads : int, optional
        Threads of each worker's decoding pools; by default its share of the cores,
        ``max(1, cores // n_workers)``.

    Returns
    -------
    dict
        :data:`STREAMING_WORKER_ENVIRON` plus the sizes of the decoding pools.
    """
    if decode_threads is None:
        decode_threads = max(1, usable_cores() // max(1, int(n_workers)))
    elif int(decode_threads) < 1:
        raise ValueError(f"decode_threads must be at least 1, got {decode_threads}")
    share = str(int(decode_threads))
    return {**STREAMING_WORKER_ENVIRON, **dict.fromkeys(DECODE_THREAD_VARIABLES, share)}


def local_cluster(n_workers: int, decode_threads: int | None = None, **options: Any) -> Any:
    """Start a ``LocalCluster`` of single-thread worker processes on loopback.

    Parameters
    ----------
    n_workers : int
        Worker processes.
    decode_threads : int, optional
        Threads of each worker's pyarrow and zarr decoding pools (default: its share of the
        cores, :func:`worker_environ`).
    **options
        More ``LocalCluster`` arguments; the defaults are ``threads_per_worker=1``,
        ``processes=True``, ``host="127.0.0.1"``, no dashboard, and the scheduler's small
        HTTP endpoint on any free port (so that clusters side by side do not collide).

    Returns
    -------
    distributed.LocalCluster
        Its workers run with :func:`worker_environ` applied (the nannies keep it for
        restarted workers too), and ignore SIGINT (:func:`dask_setup`).
    """
    import dask
    from distributed import LocalCluster

    settings = {"threads_per_worker": 1, "processes": True, "host": "127.0.0.1",
                "dashboard_address": None,
                "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"}, **options}
    if settings["processes"]:  # worker threads would share the client's signal handlers
        settings.update(_with_preload(settings.get("preload"), settings.get("preload_argv")))
    environ = {f"distributed.nanny.pre-spawn-environ.{name}": value
               for name, value in worker_environ(n_workers, decode_threads).items()}
    with dask.config.set(environ):
        return LocalCluster(n_workers=n_workers, **settings)


def _with_preload(preload: str | list[str] | None,
                  preload_argv: list[str] | list[list[str]] | None) -> dict[str, Any]:
    """The ``preload`` and ``preload_argv`` worker arguments: the given ones (or dask's
    ``distributed.worker.preload`` configuration) with this module added."""
    import dask

    preload = preload or dask.config.get("distributed.worker.preload", default=[])
    argv = preload_argv or dask.config.get("distributed.worker.preload-argv", default=[])
    preload = [preload] if isinstance(preload, str) else list(preload)
    if argv and isinstance(argv[0], str):  # one list of arguments for every module
        argv = [argv] * len(preload)
    argv = list(argv) if argv else [[] for _ in preload]
    return {"preload": [*preload, __name__], "preload_argv": [*argv, []]}


def dask_setup(worker: Any) -> None:
    """Worker preload: ignore SIGINT in a worker process :func:`local_cluster` starts.

    Ctrl-C in a terminal reaches every process of its group; the client handles it and
    closes the cluster, which stops the workers without a traceback each.

    Parameters
    ----------
    worker : distributed.Worker
        The worker being started (unused).
    """
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():  # a worker process's own
        signal.signal(signal.SIGINT, signal.SIG_IGN)
