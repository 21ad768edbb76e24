"""Compiling the kernels a fit calls later in a second process, while it compiles the first.

numba compiles a kernel on its first call, one kernel at a time in a process, and caches
it on disk. The first fit after installing therefore compiles its kernels in turn on one
core. Where a fit knows which kernels its later steps call (``AdditiveSVC``: the
decision kernel of its map, and the linear model it compares its curves against, by
PEGASOS or dual coordinate descent;
``MixtureSVC``: the E-step's posteriors, the held-out log-odds and the gates' objective),
it hands them to :func:`compile_ahead`: a second Python process compiles them into the
same on-disk cache on another core while this one compiles the first, and this process's
later calls load them from the cache instead of compiling them. A kernel this process
reaches before the second process has cached it is compiled here as well, as without it:
the second process saves wall time and costs only the other core's.

numba's on-disk index of a function's compiled versions is not locked: two processes
saving two versions (two signatures) of one function at the same instant could leave
one's code under the other's entry. The kernels handed on therefore share no helper with
the kernels the fit compiles meanwhile unless with the same signature (a saved version
of the same key is the same code); the tests check the signatures of the calls.

It starts only when all of these hold:

* at least two cores are usable (:func:`os.sched_getaffinity`), and this process runs
  in a Python interpreter it can start again (``sys.executable``, not frozen);
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
import site
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from streamlearn.engine.local import LocalEngine
from streamlearn.solvers.dcd import DCD_OVR, EMBEDDING_SUM, HINGE, dcd_ovr_chunk, mean_embedding
from streamlearn.solvers.embedding import (
    DECISION_OVR,
    IP_N_DIMS,
    IP_N_FEATURES,
    KernelFamily,
    decision_ovr_chunk,
    kernel_spec,
)
from streamlearn.solvers.pegasos import NO_AVERAGING, PEGASOS_OVR, pegasos_ovr_chunk

#: Setting it to ``0`` turns compiling ahead off.
ENV = "STREAMLEARN_COMPILE_AHEAD"
#: Niceness of the second process: its work only saves time, the fit's own comes first.
NICENESS = 5


@dataclass(frozen=True)
class KernelCall:
    """A kernel to compile ahead: ``kernel``, a key of :data:`KERNELS`, with the sizes and
    values its call needs (plain numbers, so that the call travels as JSON)."""

    kernel: str
    ints: tuple[int, ...]
    floats: tuple[float, ...] = ()

    @classmethod
    def of(cls, kernel: str, emb: Any, n_models: int) -> KernelCall:
        """The call of an embedding kernel (``"pegasos_ovr"``, ``"decision_ovr"``,
        ``"dcd_ovr"``, ``"embedding_sum"``) for the map
        of an :class:`~streamlearn.solvers.embedding.Embedding`, training or scoring
        ``n_models`` binary models on dense rows."""
        kind, ipar, fpar = emb
        return cls(kernel, (int(kind), int(n_models), *(int(v) for v in ipar)),
                   tuple(float(v) for v in fpar))

    def dispatcher(self) -> Any:
        """The numba dispatcher the call compiles a version of."""
        return KERNELS[self.kernel].dispatcher(self)

    def key(self) -> tuple[Any, ...]:
        """What tells two calls' kernels apart: the kernel and, for an embedding kernel, its
        :class:`~streamlearn.solvers.embedding.KernelSpec` (the map's sizes and knots are
        values, not types: one kernel serves them all)."""
        return KERNELS[self.kernel].key(self)

    def run(self) -> None:
        """Call the kernel on zeros of the sizes given, compiling it (or loading it)."""
        KERNELS[self.kernel].run(self)


def _embedding(call: KernelCall) -> tuple[int, int, np.ndarray, np.ndarray]:
    # (kind, n_models, ipar, fpar) of an embedding kernel's call
    return (call.ints[0], call.ints[1], np.asarray(call.ints[2:], dtype=np.int64),
            np.asarray(call.floats, dtype=np.float64))


class _EmbeddingKernel:
    # a KernelFamily's kernel of a call's map (KernelCall.of)
    def __init__(self, family: KernelFamily, warm: Callable[..., None]) -> None:
        self.family, self.warm = family, warm

    def dispatcher(self, call: KernelCall) -> Any:
        kind, _, ipar, _ = _embedding(call)
        return self.family(kind, ipar, False)

    def key(self, call: KernelCall) -> tuple[Any, ...]:
        kind, _, ipar, _ = _embedding(call)
        return call.kernel, kernel_spec(kind, ipar, False, self.family.uses_order)

    def run(self, call: KernelCall) -> None:
        kind, m, ipar, fpar = _embedding(call)
        self.warm(kind, ipar, fpar, m)


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
    X = np.zeros((1, int(ipar[IP_N_FEATURES])), dtype=np.float32)
    decision_ovr_chunk(X, np.zeros((m, int(ipar[IP_N_DIMS]) + 1)), 1.0, kind, ipar, fpar)


def _warm_dcd(kind: int, ipar: np.ndarray, fpar: np.ndarray, m: int) -> None:
    # one dual coordinate descent sweep of m one-vs-rest models on a row of zeros
    X = np.zeros((1, int(ipar[IP_N_FEATURES])), dtype=np.float32)
    W = np.zeros((m, int(ipar[IP_N_DIMS]) + 1))
    dcd_ovr_chunk(X, np.zeros(1, dtype=np.int32), np.arange(m, dtype=np.int32),
                  np.full(m, -1, dtype=np.int32), np.ones(1), np.zeros((1, m), dtype=np.float32),
                  W, HINGE, 1.0, 1, 0, kind, ipar, fpar, W.copy(), np.zeros(m),
                  np.zeros(W.shape[1]))


def _warm_embedding_sum(kind: int, ipar: np.ndarray, fpar: np.ndarray, m: int) -> None:
    # the mean embedded row of a row of zeros (dual coordinate descent's centre)
    mean_embedding(np.zeros((1, int(ipar[IP_N_FEATURES])), dtype=np.float32), kind, ipar,
                   fpar)


class _MixtureKernel:
    # a kernel of the mixture's E-step, M-step or scoring, for KernelCall(name, (d, k));
    # the mixture's modules are imported when first needed: its driver imports this one
    def __init__(self, function: str, warm: Callable[[Any, int, int], None]) -> None:
        self.function, self.warm = function, warm

    def dispatcher(self, call: KernelCall) -> Any:
        return getattr(_mixture_kernels(), self.function)

    def key(self, call: KernelCall) -> tuple[Any, ...]:
        return (call.kernel,)

    def run(self, call: KernelCall) -> None:
        self.warm(_mixture_kernels(), *call.ints)


def _mixture_kernels() -> Any:
    from streamlearn.solvers.mixture import kernels

    return kernels


def _warm_posteriors(kernels: Any, d: int, k: int) -> None:
    kernels.posteriors_chunk(np.zeros((1, k)), np.zeros((1, k)), np.ones(1, dtype=np.float32),
                             np.full(k, 1.0 / k), False)


def _warm_log_odds(kernels: Any, d: int, k: int) -> None:
    kernels.mixture_log_odds_chunk(np.zeros((1, d), dtype=np.float32), np.zeros((k, d)),
                                   np.zeros((k, d + 1)), np.full(k, 1.0 / k), 1.0, 1.0,
                                   np.zeros(d), np.ones(d), False)


def _warm_gating_terms(kernels: Any, d: int, k: int) -> None:
    kernels.gating_terms_chunk(np.zeros((1, k)), np.full((1, k), 1.0 / k),
                               np.ones(1, dtype=np.float32), np.ones(k, dtype=np.bool_))


#: The kernels that can be compiled ahead, by name.
KERNELS: dict[str, Any] = {
    "pegasos_ovr": _EmbeddingKernel(PEGASOS_OVR, _warm_pegasos),
    "decision_ovr": _EmbeddingKernel(DECISION_OVR, _warm_decision),
    "dcd_ovr": _EmbeddingKernel(DCD_OVR, _warm_dcd),
    "embedding_sum": _EmbeddingKernel(EMBEDDING_SUM, _warm_embedding_sum),
    "mixture_posteriors": _MixtureKernel("posteriors_chunk", _warm_posteriors),
    "mixture_log_odds": _MixtureKernel("_log_odds_dense", _warm_log_odds),
    "mixture_gating_terms": _MixtureKernel("gating_terms_chunk", _warm_gating_terms),
}


def is_cached(call: KernelCall) -> bool:
    """Whether ``call``'s kernel is compiled in this process or has an on-disk cache index
    (True also where numba's cache cannot be inspected: nothing is compiled ahead then)."""
    kernel = call.dispatcher()
    if kernel.signatures:
        return True
    try:
        return bool(os.path.exists(kernel._cache._cache_file._index_path))
    except AttributeError:
        return True


def runs_here(runner: Any) -> bool:
    """Whether ``runner`` runs its passes, and so its kernels, in this process: a
    :class:`~streamlearn.engine.local.LocalEngine`, checkpointed or not (a dask cluster's
    workers compile their own)."""
    while not isinstance(runner, LocalEngine) and hasattr(runner, "engine"):
        runner = runner.engine  # a checkpointed runner's own engine
    return isinstance(runner, LocalEngine)


def enabled() -> bool:
    """Whether this process may compile ahead: at least two usable cores,
    ``STREAMLEARN_COMPILE_AHEAD`` not ``0``, and a Python interpreter to start (not a
    frozen application)."""
    if os.environ.get(ENV, "1").strip() == "0":
        return False
    if not sys.executable or getattr(sys, "frozen", False):  # no interpreter to start
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform
        cores = os.cpu_count() or 1
    return cores >= 2


#: The second processes this one started and has not seen exit.
_started: list[subprocess.Popen[bytes]] = []
#: The kernels (:meth:`KernelCall.key`) handed to a second process so far by this one.
_handed: set[tuple[Any, ...]] = set()


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
    env = dict(os.environ)
    # the package this process runs, whatever put it on this process's path (an installed
    # one is found from site-packages, which stays behind the standard library)
    home = str(Path(__file__).resolve().parents[2])
    if home not in {*site.getsitepackages(), site.getusersitepackages()}:
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = home if not path else os.pathsep.join((home, path))
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


def wait_for_second_processes(timeout: float | None = None) -> None:
    """Wait until the second processes this one started have exited (a benchmark's runs
    then do not overlap them)."""
    for process in _started:
        process.wait(timeout)


def compile_calls(calls: Sequence[KernelCall]) -> None:
    """Compile the kernel of every call in this process, in order (what the second
    process runs)."""
    for call in calls:
        call.run()


def main() -> None:
    """Read a JSON list of :class:`KernelCall` fields on stdin and compile them."""
    try:
        os.nice(NICENESS)
    except (AttributeError, OSError):  # no nice() on this platform, or not allowed
        pass
    calls = [KernelCall(item["kernel"], tuple(item["ints"]), tuple(item["floats"]))
             for item in json.loads(sys.stdin.buffer.read())]
    compile_calls(calls)


if __name__ == "__main__":
    main()
