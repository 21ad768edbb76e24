"""Compiling the kernels a fit calls later in a second process, while it compiles the first.

numba compiles a kernel on its first call, one kernel at a time in a process, and caches
it on disk. The first fit after installing therefore compiles its kernels in turn on one
core. Where a fit knows which kernels its later trainings call (``AdditiveSVC``: the
decision kernel of its map, and the linear model it compares its curves against), it
hands them to :func:`compile_ahead`: a second Python process compiles them into the same
on-disk cache on another core while this one compiles the first, and this process's
later calls load them from the cache instead of compiling them. A kernel this process
reaches before the second process has cached it is compiled here as well, as without it:
the second process only ever saves time.

It starts only when all of these hold:

* at least two cores are usable (:func:`os.sched_getaffinity`);
* ``STREAMLEARN_COMPILE_AHEAD`` is not ``0`` (the test suite sets it, since its workers
  already keep every core busy compiling);
* some kernel asked for is neither compiled in this process nor in the on-disk cache
  (its index file exists), nor handed to a second process before by this one.

The second process is started in a session of its own (a Ctrl-C at the terminal reaches
the fit, not it), at a lower priority, with nothing on its output; it exits when its
list is done. The kernels are named by :class:`KernelCall`, sent as JSON; the process
calls each on one row of zeros, with argument types that equal those of the fits' own
calls (checked by the tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from streamlearn.solvers.embedding import (
    _DECISION_OVR,
    IP_N_DIMS,
    IP_N_FEATURES,
    KernelFamily,
    KernelSpec,
    kernel_spec,
)
from streamlearn.solvers.pegasos import _PEGASOS_OVR, NO_AVERAGING, pegasos_ovr_chunk

#: Setting it to ``0`` turns compiling ahead off.
ENV = "STREAMLEARN_COMPILE_AHEAD"
#: Niceness of the second process: its work only saves time, the fit's own comes first.
NICENESS = 5


@dataclass(frozen=True)
class KernelCall:
    """A kernel to compile ahead: ``kernel`` (a key of :data:`KERNELS`) for the map
    ``(kind, ipar, fpar)`` on dense rows, training or scoring ``n_models`` binary models."""

    kernel: str
    kind: int
    ipar: tuple[int, ...]
    fpar: tuple[float, ...]
    n_models: int

    @classmethod
    def of(cls, kernel: str, emb: Any, n_models: int) -> KernelCall:
        """The call of ``kernel`` for an :class:`~streamlearn.solvers.embedding.Embedding`."""
        kind, ipar, fpar = emb
        return cls(kernel, int(kind), tuple(int(v) for v in ipar),
                   tuple(float(v) for v in fpar), int(n_models))

    def key(self) -> tuple[str, KernelSpec]:
        """What tells two calls' kernels apart: the kernel and its
        :class:`~streamlearn.solvers.embedding.KernelSpec` (the map's sizes and knots are
        values, not types: one kernel serves them all)."""
        kind, ipar, _ = self.arrays()
        return self.kernel, kernel_spec(kind, ipar, False, self.family().uses_order)

    def family(self) -> KernelFamily:
        """The kernel family the call compiles a kernel of."""
        return KERNELS[self.kernel][0]

    def arrays(self) -> tuple[int, np.ndarray, np.ndarray]:
        """``(kind, ipar, fpar)`` as the kernels take them."""
        return (self.kind, np.asarray(self.ipar, dtype=np.int64),
                np.asarray(self.fpar, dtype=np.float64))


def _warm_pegasos(kind: int, ipar: np.ndarray, fpar: np.ndarray, m: int) -> None:
    # one PEGASOS step of m one-vs-rest models on a row of zeros, typed as the passes' calls
    X = np.zeros((1, int(ipar[IP_N_FEATURES])), dtype=np.float32)
    codes = np.zeros(1, dtype=np.int32)
    positive = np.arange(m, dtype=np.int32)
    negative = np.full(m, -1, dtype=np.int32)
    W = np.zeros((m, int(ipar[IP_N_DIMS]) + 1))
    pegasos_ovr_chunk(X, codes, positive, negative, np.ones(1, dtype=np.float32), 1.0, 1.0,
                      W, W.copy(), 0, int(NO_AVERAGING), kind, ipar, fpar)


def _warm_decision(kind: int, ipar: np.ndarray, fpar: np.ndarray, m: int) -> None:
    # scores of m models on a row of zeros
    from streamlearn.solvers.embedding import decision_ovr_chunk

    X = np.zeros((1, int(ipar[IP_N_FEATURES])), dtype=np.float32)
    decision_ovr_chunk(X, np.zeros((m, int(ipar[IP_N_DIMS]) + 1)), 1.0, kind, ipar, fpar)


#: The kernels that can be compiled ahead: each name's family and a call that compiles it.
KERNELS: dict[str, tuple[KernelFamily, Callable[[int, np.ndarray, np.ndarray, int], None]]] = {
    "pegasos_ovr": (_PEGASOS_OVR, _warm_pegasos),
    "decision_ovr": (_DECISION_OVR, _warm_decision),
}


def is_cached(call: KernelCall) -> bool:
    """Whether ``call``'s kernel is compiled in this process or has an on-disk cache index
    (True also where numba's cache cannot be inspected: nothing is compiled ahead then)."""
    kind, ipar, _ = call.arrays()
    kernel = call.family()(kind, ipar, False)
    if kernel.signatures:
        return True
    try:
        return bool(os.path.exists(kernel._cache._cache_file._index_path))
    except AttributeError:
        return True


def enabled() -> bool:
    """Whether this process may compile ahead: at least two usable cores and
    ``STREAMLEARN_COMPILE_AHEAD`` not ``0``."""
    if os.environ.get(ENV, "1").strip() == "0":
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform
        cores = os.cpu_count() or 1
    return cores >= 2


_started: list[subprocess.Popen[bytes]] = []
#: The calls handed to a second process so far by this one.
_handed: set[tuple[str, KernelSpec]] = set()


def compile_ahead(calls: Sequence[KernelCall]) -> subprocess.Popen[bytes] | None:
    """Compile the kernels of ``calls`` that are not cached yet in a second process, in
    order, and return it (None when nothing is started; see the module's conditions).

    Parameters
    ----------
    calls : sequence of KernelCall
        Put first the kernels this process will need first.

    Returns
    -------
    subprocess.Popen or None
        The process; it exits by itself when done.
    """
    global _started
    _started = [process for process in _started if process.poll() is None]
    if not enabled():
        return None
    todo: list[KernelCall] = []
    for call in calls:  # the first call of each kernel not cached nor handed yet
        key = call.key()
        if key not in _handed and not is_cached(call):
            _handed.add(key)
            todo.append(call)
    if not todo:
        return None
    payload = json.dumps([call.__dict__ for call in todo]).encode()
    # the package this process runs, whatever put it on this process's path
    home = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": home if not path else os.pathsep.join((home, path))}
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlearn.solvers.compile_ahead"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        assert process.stdin is not None
        process.stdin.write(payload)
        process.stdin.close()
    except OSError:  # no interpreter to start, or it exited at once: compile here, as before
        return None
    _started.append(process)
    return process


def compile_calls(calls: Sequence[KernelCall]) -> None:
    """Compile the kernel of every call in this process, in order (what the second
    process runs)."""
    for call in calls:
        kind, ipar, fpar = call.arrays()
        KERNELS[call.kernel][1](kind, ipar, fpar, call.n_models)


def main() -> None:
    """Read a JSON list of :class:`KernelCall` fields on stdin and compile them."""
    try:
        os.nice(NICENESS)
    except (AttributeError, OSError):  # no nice() on this platform, or not allowed
        pass
    calls = [KernelCall(item["kernel"], item["kind"], tuple(item["ipar"]),
                        tuple(item["fpar"]), item["n_models"])
             for item in json.loads(sys.stdin.buffer.read())]
    compile_calls(calls)


if __name__ == "__main__":
    main()
