"""A checkpointed fit of one model by name, killed with SIGKILL where a test asks.

Used by ``tests/test_kill_resume.py``. The same module defines the small problem and the
hyper-parameters of every model, so the test's uninterrupted reference fit and the killed
fits are the same fit. As a script::

    python -m tests.killable_fit MODEL CHECKPOINT OUT [--kill SPEC]

fits ``MODEL`` with ``checkpoint=CHECKPOINT`` and saves it to ``OUT``; ``--kill`` makes the
process SIGKILL itself at one checkpoint write (or in the middle of it), see :class:`Kill`.
``python -m tests.killable_fit --serve`` reads such argument lists (one JSON list a line)
from stdin and runs each in a process forked from this one, answering each line with the
child's exit code (``-9``: killed). A forked child starts in milliseconds with its kernels
loaded, where a new interpreter takes a second or more; it shares nothing with the child
killed before it but the checkpoint directory, and the serving process fits the test's
problem neither before nor after forking (see :func:`serve`).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import threading
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Chunks between two checkpoint writes in every fit of the test.
EVERY = 2


# -- the problems and the models -------------------------------------------------------------
def _classes(n: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    score = X[:, 0] ** 2 + X[:, 1] - 1 + 0.3 * rng.normal(size=n)
    y = (score > 0).astype(np.int64) if n_classes == 2 else np.digitize(score, [-0.5, 0.5])
    return X, y


def _regression(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 4)).astype(np.float32)
    y = np.sin(2 * X[:, 0]) * X[:, 1] + 0.05 * rng.normal(size=n)
    return X, y.astype(np.float32)


def _model(name: str) -> Any:
    from streamlearn import models

    search = {"coarse_step": 0.25, "fine_step": 0.05, "max_iter": 4}
    params: dict[str, dict[str, Any]] = {
        "AdditiveSVC": {"solver": "dcd", "epochs": 2, "n_bases": 6, "chunk_rows": 100},
        # 240 of the 600 rows held out: the guard's linear lanes and tallies resume too
        "MixtureSVC": {"n_components": 3, "C": 10.0, "epochs": 2, "chunk_rows": 100,
                       "validation_fraction": 0.4},
        "ShareBoostClassifier": {"n_rounds": 2, "features": "anchors", "n_centres": 4,
                                 "n_radii": 2, "refit_iter": 3, "chunk_rows": 100},
        "SparsePPRRegressor": {"n_terms": 2, "tau": 15, **search, "chunk_rows": 100},
        "SparseJSBoostClassifier": {"n_rounds": 2, "tau": 15, "n_bins": 8, **search,
                                    "chunk_rows": 100},
        "SuperSparseClassifier": {"n_prototypes": [4, 2], "solver": "minibatch",
                                  "init": "kmeans", "max_iter": 2, "chunk_rows": 100},
        "SuperSparseRegressor": {"n_prototypes": 3, "solver": "batch", "max_iter": 3,
                                 "chunk_rows": 100},
    }
    return getattr(models, name)(**params[name])


#: The problem of each model, ``(X, y)`` from a seed: 600 rows (6 chunks a pass).
PROBLEMS: dict[str, Callable[[int], tuple[np.ndarray, np.ndarray]]] = {
    "AdditiveSVC": lambda seed: _classes(600, 3, seed),
    "MixtureSVC": lambda seed: _classes(600, 3, seed + 1),
    "ShareBoostClassifier": lambda seed: _classes(600, 3, seed + 2),
    "SparsePPRRegressor": lambda seed: _regression(600, seed + 3),
    "SparseJSBoostClassifier": lambda seed: _classes(600, 2, seed + 4),
    "SuperSparseClassifier": lambda seed: _classes(600, 2, seed + 5),
    "SuperSparseRegressor": lambda seed: _regression(600, seed + 6),
}
#: Seed of the problem a serving process fits before it forks (not the test's problem).
WARM_UP_SEED = 1000


def fit(name: str, checkpoint: str | None = None, seed: int = 0) -> Any:
    """The fit of model ``name`` on its problem, checkpointed to ``checkpoint`` if given."""
    X, y = PROBLEMS[name](seed)
    model = _model(name)
    if checkpoint is None:
        return model.fit(X, y)
    return model.fit(X, y, checkpoint=checkpoint, checkpoint_every=EVERY)


# -- where to die ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kill:
    """A point of a fit where the process kills itself.

    Written ``HOW:PASS:N:WHICH``: at the ``N``-th run of a pass of class ``PASS`` in the fit
    (counted from the start of the fit, completed runs replayed from the checkpoint
    included, so a point names the same moment whatever process reaches it), at the write of
    ``WHICH``: a number ``k`` (the progress file written inside the pass after its ``k``-th
    chunk), ``result`` (the pass's result file) or ``end`` (the progress file written at the
    end of the pass). ``HOW`` is ``after`` (once the file is complete) or ``during`` (half
    of it reaches the disk). ``during:save`` dies half-way through writing the model file.
    """

    how: str
    pass_name: str = ""
    occurrence: int = 0
    which: str = ""

    @classmethod
    def parse(cls, spec: str) -> Kill:
        """Read ``HOW:PASS:N:WHICH`` or ``during:save``."""
        if spec == "during:save":
            return cls("during", "save")
        how, pass_name, occurrence, which = spec.split(":")
        if how not in ("after", "during"):
            raise ValueError(f"kill must start with after or during, got {spec!r}")
        return cls(how, pass_name, int(occurrence), which)


def _die() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _write_half(fh: Any, writer: Callable[[Any], None]) -> None:
    """Let half of what ``writer`` writes reach the disk, then die."""
    buffer = io.BytesIO()
    writer(buffer)
    fh.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    fh.flush()
    os.fsync(fh.fileno())
    _die()


def install(kill: Kill) -> None:
    """Patch the checkpoint and model-file writers so that the process dies at ``kill``."""
    import streamlearn.engine.checkpoint as ck
    import streamlearn.io.model_file as model_file

    if kill.pass_name == "save":
        atomic_write = model_file.atomic_write_bytes

        def dying_write(path: Any, writer: Callable[[Any], None]) -> Any:
            return atomic_write(path, lambda fh: _write_half(fh, writer))

        model_file.atomic_write_bytes = dying_write
        return

    runs: Counter[str] = Counter()
    running: list[tuple[str, int]] = []
    plain_run = ck.CheckpointedRunner.run

    def run(self: Any, pass_: Any, data: Any, **options: Any) -> Any:
        name = type(pass_).__name__
        runs[name] += 1
        running.append((name, runs[name]))
        try:
            return plain_run(self, pass_, data, **options)
        finally:
            running.pop()

    def which(header: dict[str, Any]) -> str:
        if "result" in header:
            return "result"
        current = header.get("current")
        return "end" if current is None else str(current["chunks"])

    write_bundle = ck._write_bundle
    atomic_write = ck.atomic_write_bytes
    written: list[bool] = []

    def bundle(fh: Any, header: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        here = bool(running) and running[-1] == (kill.pass_name, kill.occurrence) \
            and which(header) == kill.which
        if here and kill.how == "during":
            _write_half(fh, lambda out: write_bundle(out, header, *args, **kwargs))
        write_bundle(fh, header, *args, **kwargs)
        written.append(here)

    def atomic_then_die(path: Any, writer: Callable[[Any], None]) -> Any:
        out = atomic_write(path, writer)
        if written[-1]:  # the file is complete and renamed into place
            _die()
        return out

    ck.CheckpointedRunner.run = run
    ck._write_bundle = bundle
    ck.atomic_write_bytes = atomic_then_die


# -- the command line --------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.killable_fit")
    parser.add_argument("model", choices=sorted(PROBLEMS))
    parser.add_argument("checkpoint")
    parser.add_argument("out")
    parser.add_argument("--kill", type=Kill.parse, default=None)
    return parser


def main(argv: list[str]) -> int:
    """Fit, save, and return 0 (unless killed on the way)."""
    args = _parser().parse_args(argv)
    if args.kill is not None:
        install(args.kill)
    fit(args.model, args.checkpoint).save(args.out)
    return 0


def _forked(argv: list[str]) -> int:
    """Exit code of ``main(argv)`` run in a child process (negative: killed by a signal)."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(timeout=10)  # a prefetch thread of the warm-up fit, ending
    if threading.active_count() != 1:
        raise RuntimeError("refusing to fork a process that runs threads")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.dup2(2, 1)  # stdout carries the answers of the parent
            code = main(argv)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def serve() -> None:
    """Answer every JSON argument list on stdin with ``{"returncode": ...}`` on stdout.

    Before the first fit of a model this process fits it once on another problem
    (:data:`WARM_UP_SEED`), so that every forked child starts with the model's kernels
    loaded; that fit leaves nothing of the test's problem behind.
    """
    warm: set[str] = set()
    for line in sys.stdin:
        argv = json.loads(line)
        if argv and argv[0] in PROBLEMS and argv[0] not in warm:
            fit(argv[0], seed=WARM_UP_SEED)
            warm.add(argv[0])
        print(json.dumps({"returncode": _forked(argv)}), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        sys.exit(main(sys.argv[1:]))
