"""Every script in ``examples/`` runs at a tiny size and prints its result, so none rots.

Scripts are discovered (``examples/*.py`` and ``examples/*.sh``), so a new example is
covered without touching this file. Each must accept ``--rows N``, have a docstring (or a
leading comment block) saying what it shows, exit with 0 and print at least one metric
line: accuracy, R2 / MSE, or peak RSS followed by its value.
"""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(p for p in EXAMPLES_DIR.glob("*")
                 if p.suffix in (".py", ".sh") and not p.name.startswith("_"))
TINY_ROWS = 3_000
#: Examples run at the same time (they are mostly process start-up and imports).
CONCURRENT = 3
#: Seconds one example may take before it counts as hung (tiny sizes take a few seconds).
TIMEOUT_S = 300
METRIC = re.compile(r"\b(accuracy|R\^?2|MSE|peak RSS)\b[^0-9\n]*?(-?\d+(?:\.\d+)?)")
#: The generated problem's majority class is about 57% of the rows; every example's best
#: model gets well above it even at the tiny size.
MIN_ACCURACY = 0.75


@dataclass
class Result:
    returncode: int | None
    stdout: str
    stderr: str


#: Options of their own, after ``--rows``, that keep some examples' tiny runs short.
#: memory_usage.py measures each size in two fresh processes: two sizes (its smallest and
#: 4 times that) still show the growth, with four processes instead of six.
OPTIONS = {"memory_usage.py": ["--factors", "1,4"]}


def command(script: Path) -> list[str]:
    runner = [sys.executable] if script.suffix == ".py" else ["bash"]
    return [*runner, str(script), "--rows", str(TINY_ROWS), *OPTIONS.get(script.name, [])]


def run_example(script: Path, workdir: Path) -> Result:
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ,
           # the virtualenv's `python` and `streamlearn` first, as for a user who activated it
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
           "STREAMLEARN_PROGRESS": "0",
           # a few examples share the core of a pytest worker (see CONCURRENT): BLAS and
           # OpenMP threads of their own would compete for it and spin
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "STREAMLEARN_CACHE": str(workdir / "cache")}
    try:
        out = subprocess.run(command(script), cwd=workdir, env=env, capture_output=True,
                             text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        return Result(None, str(exc.stdout or ""), f"timed out after {TIMEOUT_S} s")
    return Result(out.returncode, out.stdout, out.stderr)


#: Run alone before the others: it compiles the AdditiveSVC kernels that most examples
#: share and writes them to numba's cache, which the others then load instead of each
#: compiling them at the same time.
FIRST = EXAMPLES_DIR / "additive_svc.py"
#: The examples that start several processes each, started next so that they do not
#: begin last and run on alone after the others are done.
LONGEST = ("command_line.sh", "memory_usage.py")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Result]:
    """Run every example once, :data:`FIRST` first, then a few at a time, the
    :data:`LONGEST` first among them; results by file name."""
    root = tmp_path_factory.mktemp("examples")
    done = {s.name: run_example(s, root / s.stem) for s in SCRIPTS if s == FIRST}
    with ThreadPoolExecutor(CONCURRENT) as pool:
        rest = sorted((s for s in SCRIPTS if s != FIRST), key=lambda s: s.name not in LONGEST)
        futures = {s.name: pool.submit(run_example, s, root / s.stem) for s in rest}
        return done | {name: f.result() for name, f in futures.items()}


def test_the_uses_have_examples():
    names = {p.name for p in SCRIPTS}
    for use in ("parquet_on_disk.py", "zarr_store.py", "fsspec_url.py", "dask_cluster.py",
                "memory_usage.py", "command_line.sh"):
        assert use in names


def estimator_classes() -> list[str]:
    """Public estimators defined in the modules of ``streamlearn.models``."""
    import streamlearn.models
    from streamlearn.models.base import StreamEstimator

    names = []
    for info in pkgutil.iter_modules(streamlearn.models.__path__):
        module = importlib.import_module(f"streamlearn.models.{info.name}")
        names += [name for name, obj in vars(module).items()
                  if isinstance(obj, type) and issubclass(obj, StreamEstimator)
                  and obj is not StreamEstimator and obj.__module__ == module.__name__
                  and not name.startswith("_")]
    return sorted(names)


def test_every_model_has_an_example():
    models = estimator_classes()
    assert "AdditiveSVC" in models
    text = "\n".join(p.read_text(encoding="utf-8") for p in SCRIPTS)
    missing = [name for name in models if not re.search(rf"\b{name}\b", text)]
    assert not missing, f"no script in examples/ uses {', '.join(missing)}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_says_what_it_shows_and_takes_a_size(script):
    source = script.read_text(encoding="utf-8")
    if script.suffix == ".py":
        doc = ast.get_docstring(ast.parse(source))
    else:
        lines = source.splitlines()
        doc = "\n".join(line.lstrip("# ") for line in lines[1:] if line.startswith("#"))
    assert doc and len(doc.split()) >= 10, f"{script.name} needs a docstring saying what it shows"
    assert "--rows" in source and "--rows" in doc


#: A log record's first line (``logging``'s default format, which distributed uses).
LOG_RECORD = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} - ", re.MULTILINE)
#: What a dask worker logs, with a traceback, when a heartbeat meets a scheduler that has
#: already closed: shutdown on a loaded machine, not a failure of the example.
SHUTDOWN_HEARTBEAT = "Failed to communicate with scheduler during heartbeat"


def without_shutdown_heartbeats(stderr: str) -> str:
    """``stderr`` less the log records of workers' heartbeats that met a closed scheduler."""
    starts = [m.start() for m in LOG_RECORD.finditer(stderr)]
    if not starts:
        return stderr
    pieces = [stderr[:starts[0]]]
    for a, b in zip(starts, [*starts[1:], len(stderr)], strict=True):
        record = stderr[a:b]
        if SHUTDOWN_HEARTBEAT not in record.splitlines()[0]:
            pieces.append(record)
    return "".join(pieces)


def test_shutdown_heartbeats_are_left_out_and_nothing_else():
    heartbeat = ("2026-11-26 06:32:15,481 - distributed.worker - ERROR - Failed to communicate "
                 "with scheduler during heartbeat.\nTraceback (most recent call last):\n"
                 "  ...\nOSError: closed\n")
    other = "2026-11-26 06:32:16,001 - distributed.worker - ERROR - boom\nTraceback (most\n"
    assert without_shutdown_heartbeats("warning\n" + heartbeat) == "warning\n"
    assert "Traceback" in without_shutdown_heartbeats(heartbeat + other)
    assert without_shutdown_heartbeats("Traceback (x)\n") == "Traceback (x)\n"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_runs(script, results):
    result = results[script.name]
    assert result.returncode == 0, (f"{script.name} exited with {result.returncode}\n"
                                    f"{result.stdout[-2000:]}\n{result.stderr[-3000:]}")
    stderr = without_shutdown_heartbeats(result.stderr)
    assert "Traceback" not in stderr, stderr[-3000:]
    # the examples leave the pass counts to the models, which stop by their rules: a
    # ConvergenceWarning here means a default that does not converge on a plain problem
    assert "ConvergenceWarning" not in stderr, stderr[-3000:]
    metrics = METRIC.findall(result.stdout)
    assert metrics, f"{script.name} printed no metric line:\n{result.stdout[-2000:]}"
    accuracies = [float(value) for name, value in metrics if name == "accuracy"]
    if accuracies:
        assert all(0.0 <= a <= 1.0 for a in accuracies)
        assert max(accuracies) >= MIN_ACCURACY, result.stdout[-2000:]
