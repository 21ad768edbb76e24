"""Sparse rows end to end: ``AdditiveSVC`` on svmlight text and zarr CSR against VW, LIBLINEAR
and scikit-learn, on a9a and on a generated rcv1-like problem at three sizes.

Data (written into a scratch directory, ``--scratch``, deleted at the end unless ``--keep``):

- a9a (``$STREAMLEARN_DATA/a9a.npz``, the provided train/test split, 123 binary features),
  written as svmlight and VW text;
- a generated rcv1-like problem (``bench/sparse_data.py``): ``FULL_ROWS`` training rows of
  1,000,000 features, about 80 non-zeros a row, Zipf-like feature frequencies, unit-norm
  tf-idf values, the label a sparse nonlinear additive rule plus noise; its first quarter
  and half as the smaller sizes (``--sizes quarter,half,full``) and ``TEST_ROWS`` held-out
  rows. Every size is one svmlight file (``label idx:val ...``) and one VW file
  (``label |f idx:val ...``, label in {-1, 1}) holding the same rows and values. A size is
  skipped, with a message, when the disk lacks room for it.

Contenders, each fit in a fresh child process (``--child``), one after the other (peak RSS
is the child's ``VmHWM``, data loading included; the parent kills a child whose RSS passes
``--memory-budget-gib`` or that runs past ``--child-timeout``):

- ours, ``AdditiveSVC(embedding="linear")`` (PEGASOS) and ``AdditiveSVC(n_bases=20)``
  (B-splines, zero-preserving on sparse rows), both ``tol=None, calibrate=False`` so a
  fit makes exactly the passes asked for (plus the B-splines' ``describe`` pass for the
  feature ranges):
  ``epochs=1`` straight from the svmlight text (``open_dataset`` scans the text once first,
  timed apart), then ``streamlearn.data.convert.convert(..., layout="sparse")`` to a zarr
  CSR store (timed apart) and ``epochs=5`` from the store. Each pass is timed
  (``TimedEngine``); test accuracy by ``score`` on the test text;
- ours, the other models that train on sparse rows (``--models linear,bspline,shareboost,
  mixture,supersparse``; the README's run adds ``--rows 500000 --out
  bench/results/sparse_models``, 26 minutes), from the zarr store with a fixed amount of
  work: ``ShareBoostClassifier`` (``SHAREBOOST_ROUNDS`` rounds of ``SHAREBOOST_REFIT``
  L-BFGS steps), ``MixtureSVC`` (``MIXTURE_COMPONENTS`` components, 5 epochs) and
  ``SuperSparseClassifier`` (``PROTOTYPES`` prototypes, 5 mini-batch epochs);
- Vowpal Wabbit through ``vowpalwabbit.Workspace`` with its own parser reading its own file
  (``--data FILE``, ``run_parser()``, what the ``vw`` command does), ``-b VW_BITS``,
  ``--holdout_off`` (every pass sees every row, as ours): ``--loss_function hinge`` and
  ``logistic``, 1 pass from the text (the logistic one with ``--cache_file C -k``, so it
  also writes VW's cache) and 5 passes from that cache (``--cache_file C --passes 5``: all
  five passes read the cache; their mean is VW's pass from its cache);
- LIBLINEAR (``liblinear.liblinearutil``): ``svm_read_problem(return_scipy=True)`` and
  ``train("-s 3 -c 1 -B 1")`` (hinge loss, dual CD, its default stopping rule), run while
  the extrapolated memory and time fit the budgets;
- scikit-learn: ``load_svmlight_file`` and ``SGDClassifier(loss="hinge", max_iter=1 and 5,
  tol=None)``, likewise.

Per contender and size: wall time per pass (text, cache or zarr), examples/s and
non-zeros/s, the whole fit, peak RSS, test accuracy, and the load average when it started.
Our epochs from zarr and VW's hinge passes from its cache run ``LATER_RUNS`` times, in
turn, and the later-epoch target compares the faster run of each: single runs of a few
seconds moved by up to 2.6x between runs on the shared machine.
Numba kernels are compiled by a warm-up child before anything is timed (the streamlearn
source is copied into the scratch directory first and the children import that copy, so
edits made to the checkout during a run cannot change what is measured).

Run ``python bench/sparse_training.py`` (full sizes: 500k, 1M and 2M training rows, 2.6 GB of
svmlight text at full size; about 35 minutes on 2 cores, 15 GB of scratch disk) or
``--quick`` (25k, 50k and 100k rows; about 6 minutes, most of it the warm-up compiling the
kernels). Results go to ``bench/results/sparse_training.{json,png}``; ``--replot JSON`` rebuilds the
tables and the plot of a results file.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

# This script is named like the pydata ``sparse`` package, which numba's extension entry
# points (and dask) import: keep bench/ off the front of sys.path so that ``import sparse``
# finds the package, not this file; the helpers here are found at the end.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))
from machine_info import library_versions, machine_info, peak_rss_bytes  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
DEFAULT_SCRATCH = Path("/work/bench-scratch/sparse")

SEED = 20250611
FULL_ROWS = 2_000_000
TEST_ROWS = 100_000
QUICK_FULL_ROWS = 100_000
QUICK_TEST_ROWS = 20_000
SIZES = {"quarter": 0.25, "half": 0.5, "full": 1.0}
VW_BITS = 22
EPOCHS_LATER = 5
#: Runs of our epochs from zarr and of VW's passes from its cache, in turn (the fastest of
#: each is compared).
LATER_RUNS = 2
#: Bytes of svmlight text per generated row (measured: ~1,330); VW's is 3 more.
TEXT_BYTES_PER_ROW = 1_400
#: Disk a size needs besides its text: zarr store (~0.6x text), VW cache (~0.5x), models.
DISK_FACTOR = 3.3
MEMORY_BUDGET_GIB = 10.0
CHILD_TIMEOUT_S = 900.0
#: A child whose extrapolated seconds pass this is skipped at that size (LIBLINEAR, sklearn).
SKIP_SECONDS = 300.0
LIBLINEAR_OPTIONS = "-s 3 -c 1 -B 1"
#: ``chunk_rows`` given to ``open_dataset`` for svmlight text: the source's piece size
#: (65536 rows). Chunks smaller than a piece, or not aligned with them, make a shuffled epoch
#: parse a piece once for each chunk it overlaps (the reader keeps only the last piece,
#: and shuffled chunks rarely follow one from the same piece): the default was
#: 1024 rows for 1M features when the results were measured (about 64 parses of each piece),
#: and is 25600 now that the source reports its entries (about 3.4 parses of
#: each piece). ``--text-chunk-rows 0`` measures the default.
TEXT_CHUNK_ROWS = 65536
A9A_FEATURES = 123
#: The other models that train on sparse rows, fitted from the zarr store with fixed work:
#: ShareBoost's rounds and L-BFGS iterations per round (since 0d8c195 the last round's
#: columns are then fitted until the tolerance, at most 30 times as many iterations, where
#: its step stopped at the cap), the super-sparse prototypes.
OTHER_MODELS = ("shareboost", "mixture", "supersparse")
SHAREBOOST_ROUNDS = 10
SHAREBOOST_REFIT = 5
MIXTURE_COMPONENTS = 10
PROTOTYPES = 20

TARGETS = {
    "first_epoch": "our first epoch over the svmlight text >= VW's first pass over the same "
                   "file (examples/s)",
    "later_epochs": "our epochs from the converted zarr >= 2x VW's passes from its cache "
                    "(examples/s)",
    "flat_rss": "our peak RSS within 10 % from 1/4 to all of the generated rows",
    "accuracy": "test accuracy of the linear model >= VW's at equal passes",
    "additive": "the zero-preserving additive model above the linear one (generated data)",
}

LIBRARIES = ("numpy", "numba", "zarr", "pyarrow", "streamlearn", "scipy", "scikit-learn",
             "vowpalwabbit", "liblinear-official", "psutil", "matplotlib")


def log(message: str) -> None:
    """Progress on stderr, with the time of day."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# =========================================================================== children
class TimedEngineFactory:
    """A ``LocalEngine`` subclass that records each pass's description, seconds and rows."""

    @staticmethod
    def make() -> Any:
        from streamlearn.engine import LocalEngine
        from streamlearn.engine.accounting import recording

        class Timed(LocalEngine):
            timings: list[dict[str, Any]] = []  # noqa: RUF012

            def run(self, pass_: Any, data: Any, **options: Any) -> Any:
                start = time.perf_counter()
                with recording() as record:
                    out = super().run(pass_, data, **options)
                Timed.timings.append({
                    "description": str(options.get("description", "")),
                    "seconds": time.perf_counter() - start,
                    "rows": int(record.rows_read)})
                return out

        return Timed(progress=False)


def ours_model(model: str, epochs: int, engine: Any) -> Any:
    """The model a contender ``ours_<model>_*`` fits, making a fixed number of passes."""
    from streamlearn.models import (
        AdditiveSVC,
        MixtureSVC,
        ShareBoostClassifier,
        SuperSparseClassifier,
    )

    common = {"random_state": 0, "progress": False, "engine": engine}
    if model == "shareboost":  # each round: a column-score pass and refit_iter refit passes
        # at most; then the last round's columns until the tolerance, if its step was capped
        return ShareBoostClassifier(n_rounds=SHAREBOOST_ROUNDS, refit_iter=SHAREBOOST_REFIT,
                                    **common)
    if model == "mixture":  # a fixed model size: "auto" grows it with the rows
        return MixtureSVC(n_components=MIXTURE_COMPONENTS, epochs=epochs,
                          validation_fraction=None, **common)
    if model == "supersparse":
        return SuperSparseClassifier(n_prototypes=PROTOTYPES, solver="minibatch",
                                     max_iter=epochs, **common)
    # 20 bases: without calibration n_bases="auto" keeps 8, and the figures are of 20
    kwargs: dict[str, Any] = {"embedding": "linear"} if model == "linear" else {"n_bases": 20}
    return AdditiveSVC(epochs=epochs, tol=None, calibrate=False, **common, **kwargs)


def child_ours(spec: dict[str, Any]) -> dict[str, Any]:
    """Fit ``AdditiveSVC`` from svmlight text or a zarr CSR store; score on the test text."""
    import streamlearn as sl

    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    if spec["source"] == "text":
        train = sl.open_dataset(spec["train"], n_features=spec["n_features"],
                                chunk_rows=spec.get("chunk_rows"))
    else:
        train = sl.open_dataset(spec["train"])
    out["open_s"] = time.perf_counter() - t0
    out["chunk_rows"] = int(train.chunk_rows)
    engine = TimedEngineFactory.make()
    model = ours_model(spec["model"], spec["epochs"], engine)
    t0 = time.perf_counter()
    model.fit(train)
    out["fit_s"] = time.perf_counter() - t0
    out["passes"] = type(engine).timings
    out["n_passes"] = float(model.n_passes_)
    out["rss_after_fit_bytes"] = peak_rss_bytes()
    t0 = time.perf_counter()
    test = sl.open_dataset(spec["test"], n_features=spec["n_features"],
                           chunk_rows=spec.get("chunk_rows"))
    out["test_accuracy"] = float(model.score(test))
    out["test_s"] = time.perf_counter() - t0
    return out


def child_convert(spec: dict[str, Any]) -> dict[str, Any]:
    """svmlight text to a zarr CSR store."""
    import streamlearn as sl
    from streamlearn.data.convert import convert

    shutil.rmtree(spec["out"], ignore_errors=True)
    t0 = time.perf_counter()
    ds = sl.open_dataset(spec["train"], n_features=spec["n_features"],
                         chunk_rows=spec.get("chunk_rows"))
    open_s = time.perf_counter() - t0
    report = convert(ds, spec["out"], layout="sparse")
    return {"open_s": open_s, "convert_s": report.seconds,
            "fit_s": open_s + report.seconds, "rows": report.rows, "nnz": report.nnz,
            "bytes_written": report.bytes_written, "chunk_rows": int(ds.chunk_rows)}


def _vw_workspace(args: list[str]) -> Any:
    import vowpalwabbit

    return vowpalwabbit.Workspace(arg_list=[*args, "--quiet"])


def vw_arguments(spec: dict[str, Any]) -> list[str]:
    """Training arguments of one VW run (what ``vw`` would be given on its command line)."""
    args = ["--data", spec["train"], "--loss_function", spec["loss"], "-b", str(spec["bits"]),
            "--holdout_off", "-f", spec["model_out"]]
    if spec["mode"] != "text":
        args += ["--cache_file", spec["cache"], "--passes", str(spec["passes"])]
        if spec["mode"] == "text_cache":  # the pass reads the text and writes the cache
            args.append("-k")
    return args


def child_vw(spec: dict[str, Any]) -> dict[str, Any]:
    """Train VW with its own parser over its own file (or cache); predict the test file."""
    if spec["mode"] == "cache" and not Path(spec["cache"]).exists():
        raise RuntimeError(f"no VW cache at {spec['cache']}")
    args = vw_arguments(spec)
    t0 = time.perf_counter()
    vw = _vw_workspace(args)
    vw.run_parser()
    examples = int(vw.get_weighted_examples())
    vw.finish()
    fit_s = time.perf_counter() - t0
    rss_fit = peak_rss_bytes()
    preds = Path(spec["model_out"] + ".pred")
    t0 = time.perf_counter()
    vw = _vw_workspace(["--data", spec["test"], "-t", "-i", spec["model_out"], "-p",
                        str(preds)])
    vw.run_parser()
    vw.finish()
    test_s = time.perf_counter() - t0
    scores = np.loadtxt(preds, dtype=np.float64, ndmin=1)
    labels = np.load(spec["test_labels"])
    preds.unlink()
    return {"arguments": " ".join(args), "fit_s": fit_s, "examples_seen": examples,
            "rss_after_fit_bytes": rss_fit,
            "test_accuracy": float(np.mean(np.where(scores > 0, 1, -1) == labels)),
            "test_s": test_s}


class _CapturedStdout:
    """Capture what C code prints to file descriptor 1 (LIBLINEAR's iteration count)."""

    def __enter__(self) -> _CapturedStdout:
        import tempfile

        sys.stdout.flush()
        self._file = tempfile.TemporaryFile(mode="w+b")
        self._saved = os.dup(1)
        os.dup2(self._file.fileno(), 1)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.stdout.flush()
        os.dup2(self._saved, 1)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read().decode(errors="replace")
        self._file.close()


def child_liblinear(spec: dict[str, Any]) -> dict[str, Any]:
    """``svm_read_problem`` + ``train`` (its own stopping rule), then the test accuracy."""
    from liblinear.liblinearutil import predict, svm_read_problem, train

    t0 = time.perf_counter()
    y, x = svm_read_problem(spec["train"], return_scipy=True)
    read_s = time.perf_counter() - t0
    rss_read = peak_rss_bytes()
    t0 = time.perf_counter()
    with _CapturedStdout() as captured:  # without -q, it prints "#iter = N"
        model = train(y, x, LIBLINEAR_OPTIONS)
    train_s = time.perf_counter() - t0
    iterations = [int(line.rsplit("=", 1)[1]) for line in captured.text.splitlines()
                  if "#iter" in line]
    del x, y
    t0 = time.perf_counter()
    yt, xt = svm_read_problem(spec["test"], return_scipy=True)
    if xt.shape[1] < model.nr_feature:  # indices beyond the test file's largest
        import scipy.sparse as sp

        xt = sp.csr_matrix((xt.data, xt.indices, xt.indptr),
                           shape=(xt.shape[0], model.nr_feature))
    with _CapturedStdout():
        _, (acc, _, _), _ = predict(yt, xt, model, "-q")
    return {"read_s": read_s, "train_s": train_s, "fit_s": read_s + train_s,
            "iterations": iterations[-1] if iterations else None,
            "rss_after_read_bytes": rss_read, "test_accuracy": float(acc) / 100,
            "test_s": time.perf_counter() - t0, "options": LIBLINEAR_OPTIONS}


def child_sklearn(spec: dict[str, Any]) -> dict[str, Any]:
    """``load_svmlight_file`` + ``SGDClassifier(loss="hinge")`` for 1 and 5 epochs."""
    from sklearn.datasets import load_svmlight_file
    from sklearn.linear_model import SGDClassifier

    t0 = time.perf_counter()
    X, y = load_svmlight_file(spec["train"], n_features=spec["n_features"],
                              dtype=np.float32)
    # it returns int64 indices, which SGDClassifier refuses: cast them (counted in read_s)
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    read_s = time.perf_counter() - t0
    rss_read = peak_rss_bytes()
    Xt, yt = load_svmlight_file(spec["test"], n_features=spec["n_features"],
                                dtype=np.float32)
    Xt.indices, Xt.indptr = Xt.indices.astype(np.int32), Xt.indptr.astype(np.int32)
    fits = {}
    for epochs in (1, EPOCHS_LATER):
        model = SGDClassifier(loss="hinge", max_iter=epochs, tol=None, random_state=0)
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
        fits[str(epochs)] = {"fit_s": fit_s, "epoch_s": fit_s / epochs,
                             "test_accuracy": float(model.score(Xt, yt))}
    return {"read_s": read_s, "fits": fits, "rss_after_read_bytes": rss_read,
            "fit_s": read_s + fits["1"]["fit_s"] + fits[str(EPOCHS_LATER)]["fit_s"]}


def child_warmup(spec: dict[str, Any]) -> dict[str, Any]:
    """Compile (or load from the cache) every numba kernel the timed children use."""
    import streamlearn as sl
    from streamlearn.data.convert import convert

    t0 = time.perf_counter()
    store = spec["zarr"]
    d = spec["n_features"]
    # several pieces; chunks that cut pieces and chunks that span two, and the piece size
    for chunk_rows in (5000, spec.get("chunk_rows")):
        shutil.rmtree(store, ignore_errors=True)
        convert(sl.open_dataset(spec["train"], n_features=d, chunk_rows=chunk_rows), store,
                layout="sparse")
        test = sl.open_dataset(spec["test"], n_features=d, chunk_rows=chunk_rows)
        for model in ("linear", "bspline"):
            for ds in (sl.open_dataset(spec["train"], n_features=d, chunk_rows=chunk_rows),
                       sl.open_dataset(store)):
                ours_model(model, 2, TimedEngineFactory.make()).fit(ds).score(test)
    for model in OTHER_MODELS:  # fitted from the store only
        ours_model(model, 1, TimedEngineFactory.make()).fit(sl.open_dataset(store)).score(test)
    shutil.rmtree(store, ignore_errors=True)
    return {"fit_s": time.perf_counter() - t0, "streamlearn_file": sl.__file__}


def _top_functions(profiler: Any, top: int = 12) -> list[dict[str, Any]]:
    import pstats

    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = [{"function": f"{Path(file).name}:{line}({name})", "calls": nc,
             "own_s": round(tt, 4), "cumulative_s": round(ct, 4)}
            for (file, line, name), (_, nc, tt, ct, _) in stats.items()]
    return sorted(rows, key=lambda r: -r["own_s"])[:top]


def child_profile(spec: dict[str, Any]) -> dict[str, Any]:
    """Where an epoch's time goes, from the text and from the zarr store.

    For each source: a bare shuffled pass over the stream (prefetch 2, as a fit reads),
    a one-epoch linear fit, and the same fit under cProfile with ``prefetch=0`` (all the
    work in one thread, so the profile sees the reading too).
    """
    import cProfile

    import streamlearn as sl

    out: dict[str, Any] = {}
    for source in ("text", "zarr"):
        def open_(prefetch: int, source: str = source) -> Any:
            if source == "text":
                return sl.open_dataset(spec["train"], n_features=spec["n_features"],
                                       chunk_rows=spec.get("chunk_rows"), prefetch=prefetch)
            return sl.open_dataset(spec["zarr"], prefetch=prefetch)

        ds = open_(2)
        t0 = time.perf_counter()
        rows = sum(c.n_rows for c in ds.chunks(shuffle=True, seed=0))
        stream_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        ours_model("linear", 1, None).fit(ds)
        fit_s = time.perf_counter() - t0
        ds0 = open_(0)
        profiler = cProfile.Profile()
        t0 = time.perf_counter()
        profiler.enable()
        ours_model("linear", 1, None).fit(ds0)
        profiler.disable()
        out[source] = {"rows": rows, "chunk_rows": int(ds.chunk_rows),
                       "bare_stream_s": stream_s, "epoch_fit_s": fit_s,
                       "profiled_fit_prefetch0_s": time.perf_counter() - t0,
                       "top_own_time": _top_functions(profiler)}
    return out


CHILDREN = {"profile": child_profile, "ours": child_ours, "convert": child_convert, "vw": child_vw,
            "liblinear": child_liblinear, "sklearn": child_sklearn, "warmup": child_warmup}


def child_main(spec_json: str) -> None:
    """Run one child and print its result as the last line of stdout."""
    spec = json.loads(spec_json)
    result = CHILDREN[spec["kind"]](spec)
    result["peak_rss_bytes"] = peak_rss_bytes()
    print("RESULT " + json.dumps(result), flush=True)


# ============================================================================ parent
class ChildRunner:
    """Runs children one at a time, watching their RSS and time."""

    def __init__(self, env: dict[str, str], memory_budget_gib: float, timeout_s: float,
                 log_dir: Path) -> None:
        self.env = env
        self.memory_budget = memory_budget_gib * 2**30
        self.timeout_s = timeout_s
        self.log_dir = log_dir
        self.count = 0

    def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        import psutil

        self.count += 1
        load = os.getloadavg()[0]
        cmd = [sys.executable, "-u", str(Path(__file__).resolve()), "--child", json.dumps(spec)]
        stderr_path = self.log_dir / f"child-{self.count:03d}-{spec['kind']}.err"
        t0 = time.perf_counter()
        with open(stderr_path, "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                    env=self.env, cwd=REPO_DIR)
            watched = psutil.Process(proc.pid)
            killed = None
            max_rss = 0
            while proc.poll() is None:
                try:
                    rss = watched.memory_info().rss
                except psutil.Error:
                    rss = 0
                max_rss = max(max_rss, rss)
                if rss > self.memory_budget:
                    killed = f"killed: RSS {rss / 2**30:.1f} GiB over the memory budget " \
                             f"{self.memory_budget / 2**30:.1f} GiB"
                elif time.perf_counter() - t0 > self.timeout_s:
                    killed = f"killed: ran past the child timeout {self.timeout_s:.0f} s"
                if killed:
                    proc.kill()
                    break
                time.sleep(0.2)
            stdout = proc.communicate()[0]
        wall = time.perf_counter() - t0
        result: dict[str, Any] = {"load_average_1m": round(load, 2), "child_wall_s": wall}
        lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
        if killed or proc.returncode != 0 or not lines:
            tail = stderr_path.read_text(errors="replace").strip().splitlines()[-12:]
            result["error"] = killed or f"exit {proc.returncode}: " + " | ".join(tail)
            result["peak_rss_bytes"] = max_rss
            log(f"    FAILED {spec['kind']}: {result['error']}")
            return result
        result.update(json.loads(lines[-1][len("RESULT "):]))
        return result


def snapshot_source(scratch: Path) -> tuple[Path, str]:
    """Copy ``streamlearn/`` (mtimes kept, so numba's cache index matches) into the scratch
    directory; return the directory to put on ``PYTHONPATH`` and the source's hash."""
    src = REPO_DIR / "streamlearn"
    files = sorted(p for p in src.rglob("*.py"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()[:16]
    dest = scratch / "src"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest / "streamlearn",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest, digest


# ---------------------------------------------------------------------------- data
def write_a9a(root: Path) -> dict[str, Any]:
    """a9a's provided split as svmlight and VW text (one-based indices, value 1)."""
    data_dir = Path(os.environ.get("STREAMLEARN_DATA", REPO_DIR.parent / "shared" / "data"))
    path = data_dir / "a9a.npz"
    if not path.exists():
        raise SystemExit(f"{path} not found: set STREAMLEARN_DATA to the directory holding "
                         "a9a.npz (see bench/README.md)")
    z = np.load(path)
    root.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"n_features": A9A_FEATURES}
    for part in ("train", "test"):
        X, y = z[f"X_{part}"], z[f"y_{part}"].astype(np.int64)
        svm_lines, vw_lines = [], []
        for i in range(X.shape[0]):
            tokens = " ".join(f"{j + 1}:1" for j in np.flatnonzero(X[i]))
            label = "1" if y[i] > 0 else "-1"
            svm_lines.append(f"{label} {tokens}\n")
            vw_lines.append(f"{label} |f {tokens}\n")
        (root / f"{part}.svm").write_text("".join(svm_lines))
        (root / f"{part}.vw").write_text("".join(vw_lines))
        np.save(root / f"{part}_labels.npy", np.where(y > 0, 1, -1))
        if part == "train":  # three copies: a file of several pieces for the warm-up
            (root / "warmup.svm").write_text("".join(svm_lines) * 3)
            out["warmup"] = str(root / "warmup.svm")
        out[part] = {"rows": int(X.shape[0]), "nnz": int(np.count_nonzero(X)),
                     "svm": str(root / f"{part}.svm"), "vw": str(root / f"{part}.vw"),
                     "labels": str(root / f"{part}_labels.npy"),
                     "svm_bytes": (root / f"{part}.svm").stat().st_size}
    return out


def generate(root: Path, full_rows: int, test_rows: int, sizes: list[str],
             reuse: bool) -> dict[str, Any]:
    """The generated problem's files for ``sizes`` (prefixes of the full rows) and test.

    Sizes that the free disk cannot hold (with ``DISK_FACTOR`` for the stores, caches and
    models made from them) are left out, with a message.
    """
    from sparse_data import (
        BLOCK_ROWS,
        DATA_VERSION,
        N_FEATURES,
        TEST_SALT,
        TRAIN_SALT,
        Generator,
    )

    settings = {"version": DATA_VERSION, "seed": SEED, "full_rows": full_rows,
                "test_rows": test_rows, "sizes": sizes, "n_features": N_FEATURES}
    meta_path = root / "meta.json"
    if reuse and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("settings") == settings:
            log("generated data: reusing the files in " + str(root))
            return {**meta, "reused": True}
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    free = shutil.disk_usage(root).free
    rows_of = {s: round(SIZES[s] * full_rows) for s in sizes}
    kept, need = [], 2 * test_rows * TEXT_BYTES_PER_ROW
    skipped = {}
    for s in sorted(sizes, key=lambda s: rows_of[s]):
        more = rows_of[s] * TEXT_BYTES_PER_ROW * 2 * DISK_FACTOR
        if need + more > 0.9 * free:
            skipped[s] = (f"skipped: needs about {(need + more) / 1e9:.1f} GB of disk with "
                          f"the smaller sizes, {free / 1e9:.1f} GB free")
            log(f"generated data, size {s}: {skipped[s]}")
            continue
        need += more
        kept.append(s)
    t0 = time.perf_counter()
    gen = Generator(SEED)
    setup_s = time.perf_counter() - t0
    n_max = max((rows_of[s] for s in kept), default=0)
    files = {s: {"svm": root / f"train_{s}.svm", "vw": root / f"train_{s}.vw"} for s in kept}
    handles = {s: {k: open(p, "wb") for k, p in f.items()} for s, f in files.items()}
    nnz = dict.fromkeys(kept, 0)
    positives = dict.fromkeys(kept, 0)
    t0 = time.perf_counter()
    for a, block in gen.blocks(TRAIN_SALT, n_max):
        for s in kept:
            take = min(block.n_rows, rows_of[s] - a)
            if take <= 0:
                continue
            handles[s]["svm"].write(block.svm[: block.svm_starts[take]].tobytes())
            handles[s]["vw"].write(block.vw[: block.vw_starts[take]].tobytes())
            nnz[s] += int(block.indptr[take])
            positives[s] += int(np.sum(block.labels[:take] > 0))
        if (a // BLOCK_ROWS) % 16 == 0:
            log(f"  generated {a + block.n_rows:,} of {n_max:,} training rows")
    for h in handles.values():
        for f in h.values():
            f.close()
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    labels = []
    test_nnz = 0
    with open(root / "test.svm", "wb") as fs, open(root / "test.vw", "wb") as fv:
        for _, block in gen.blocks(TEST_SALT, test_rows):
            fs.write(block.svm.tobytes())
            fv.write(block.vw.tobytes())
            labels.append(block.labels.astype(np.int64))
            test_nnz += int(block.indptr[-1])
    np.save(root / "test_labels.npy", np.concatenate(labels))
    test_s = time.perf_counter() - t0
    meta = {
        "settings": settings,
        "n_features": N_FEATURES,
        "bayes_accuracy_pilot": gen.bayes_accuracy,
        "generator_setup_s": setup_s, "train_write_s": train_s, "test_write_s": test_s,
        "sizes": {s: {"rows": rows_of[s], "nnz": nnz[s], "positive_share": positives[s]
                      / rows_of[s], "svm": str(files[s]["svm"]), "vw": str(files[s]["vw"]),
                      "svm_bytes": files[s]["svm"].stat().st_size,
                      "vw_bytes": files[s]["vw"].stat().st_size} for s in kept},
        "skipped": skipped,
        "test": {"rows": test_rows, "nnz": test_nnz, "svm": str(root / "test.svm"),
                 "vw": str(root / "test.vw"), "labels": str(root / "test_labels.npy")},
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    return {**meta, "reused": False}


# ------------------------------------------------------------------------ one size
def extrapolate(done: list[dict[str, Any]], nnz: int, key: str) -> float | None:
    """``key`` of the largest earlier measurement of a contender, scaled by non-zeros."""
    ok = [r for r in done if not r.get("error") and r.get(key)]
    if not ok:
        return None
    last = max(ok, key=lambda r: r["nnz"])
    return float(last[key]) * nnz / last["nnz"]


def run_dataset(runner: ChildRunner, name: str, size: str, train: dict[str, Any],
                test: dict[str, Any], n_features: int, work: Path, history: dict[str, list],
                memory_budget: float, skip_seconds: float, models: tuple[str, ...],
                text_chunk_rows: int | None, profile: bool = False
                ) -> list[dict[str, Any]]:
    """Every contender on one training file; a list of flat records."""
    rows, nnz = train["rows"], train["nnz"]
    base = {"dataset": name, "size": size, "rows": rows, "nnz": nnz,
            "text_bytes": train["svm_bytes"]}
    records: list[dict[str, Any]] = []
    tag = f"{name}-{size}"
    zarr_path = str(work / f"{tag}.zarr")
    cache = str(work / f"{tag}.vwcache")

    def add(contender: str, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
        log(f"  {tag}: {contender}" + (f" (run {extra['run']})" if "run" in extra else "")
            + " ...")
        result = runner.run(spec)
        record = {**base, "contender": contender, **extra, **result}
        records.append(record)
        history.setdefault(contender, []).append(record)
        if not record.get("error"):
            log(f"    {contender}: fit {record.get('fit_s', 0):.1f} s, "
                f"peak {record['peak_rss_bytes'] / 2**20:.0f} MiB, "
                f"acc {record.get('test_accuracy', float('nan')):.4f}")
        return record

    def ours(model: str, source: str, epochs: int, **extra: Any) -> None:
        spec = {"kind": "ours", "model": model, "epochs": epochs, "source": source,
                "train": train["svm"] if source == "text" else zarr_path,
                "test": test["svm"], "n_features": n_features, "chunk_rows": text_chunk_rows}
        add(f"ours_{model}_{source}", spec, passes_asked=epochs, **extra)

    def vw(loss: str, mode: str, **extra: Any) -> None:
        passes = EPOCHS_LATER if mode == "cache" else 1
        spec = {"kind": "vw", "train": train["vw"], "test": test["vw"], "loss": loss,
                "mode": mode, "passes": passes, "cache": cache, "bits": VW_BITS,
                "model_out": str(work / f"{tag}-vw-{loss}-{mode}.model"),
                "test_labels": test["labels"]}
        add(f"vw_{loss}_{mode}", spec, passes_asked=passes, **extra)

    def in_memory(kind: str) -> None:
        contender = kind
        rss = extrapolate(history.get(contender, []), nnz, "peak_rss_bytes")
        secs = extrapolate(history.get(contender, []), nnz, "child_wall_s")
        if rss is not None and rss > memory_budget:
            why = (f"skipped: extrapolated peak RSS {rss / 2**30:.1f} GiB over the memory "
                   f"budget {memory_budget / 2**30:.1f} GiB")
        elif secs is not None and secs > skip_seconds:
            why = f"skipped: extrapolated {secs:.0f} s over the time budget {skip_seconds:.0f} s"
        else:
            spec = {"kind": kind, "train": train["svm"], "test": test["svm"],
                    "n_features": n_features}
            add(contender, spec)
            return
        log(f"  {tag}: {contender} {why}")
        records.append({**base, "contender": contender, "skipped": why})

    # ours and VW alternate, so that a busy spell of the shared machine hits both
    vw("hinge", "text")
    ours("linear", "text", 1)
    vw("logistic", "text_cache")
    add("convert", {"kind": "convert", "train": train["svm"], "out": zarr_path,
                    "n_features": n_features, "chunk_rows": text_chunk_rows})
    ours("linear", "zarr", EPOCHS_LATER)
    if profile:
        log(f"  {tag}: profile of one epoch from text and from zarr ...")
        result = runner.run({"kind": "profile", "train": train["svm"], "zarr": zarr_path,
                             "n_features": n_features, "chunk_rows": text_chunk_rows})
        records.append({**base, "contender": "profile", **result})
    vw("hinge", "cache")
    vw("logistic", "cache")
    # the later-epoch target compares two runs of a few seconds each, whose rates moved
    # by up to 2.6x from one run to the next on the shared machine: both run again, in
    # turn, and the target takes each one's faster run (the least disturbed)
    for run in range(2, LATER_RUNS + 1):
        ours("linear", "zarr", EPOCHS_LATER, run=run)
        vw("hinge", "cache", run=run)
    if "bspline" in models:
        ours("bspline", "text", 1)
        ours("bspline", "zarr", EPOCHS_LATER)
    for model in OTHER_MODELS:
        if model in models:
            ours(model, "zarr", EPOCHS_LATER)
    in_memory("sklearn")
    if importlib.util.find_spec("liblinear") is not None:
        in_memory("liblinear")
    else:
        log(f"  {tag}: LIBLINEAR skipped: install the bench-liblinear extra "
            "(pip install -e '.[bench-liblinear]', built from source with a C compiler)")
    shutil.rmtree(zarr_path, ignore_errors=True)
    for p in work.glob(f"{tag}*"):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink()
    return records


# --------------------------------------------------------------------------- summary
def pass_times(r: dict[str, Any]) -> dict[str, Any]:
    """Per-pass seconds of one record: ``text`` (first pass over the text), ``later``
    (median pass from the cache / zarr / memory), and the passes made."""
    c = r["contender"]
    out: dict[str, Any] = {"text_pass_s": None, "later_pass_s": None, "passes": None,
                           "open_s": None}
    if r.get("error") or r.get("skipped"):
        return out
    if c.startswith("ours_"):
        # AdditiveSVC: its epochs; the other models: every pass (each reads the store once)
        every = c.split("_")[1] in OTHER_MODELS
        epochs = [p["seconds"] for p in r["passes"] if every or "epoch" in p["description"]]
        out["passes"] = r["n_passes"]
        out["open_s"] = r["open_s"]
        if c.endswith("_text"):
            out["text_pass_s"] = epochs[0] if epochs else None
        else:
            out["later_pass_s"] = statistics.median(epochs) if epochs else None
        out["other_passes"] = [] if every else [
            [p["description"], round(p["seconds"], 3)]
            for p in r["passes"] if "epoch" not in p["description"]]
    elif c.startswith("vw_"):
        out["passes"] = r["passes_asked"]
        if c.endswith("_text") or c.endswith("_text_cache"):
            out["text_pass_s"] = r["fit_s"]
        elif c.endswith("_cache"):
            out["later_pass_s"] = r["fit_s"] / r["passes_asked"]
    elif c == "sklearn":  # its first pass over the text is load_svmlight_file
        out["text_pass_s"] = r["read_s"]
        out["later_pass_s"] = r["fits"][str(EPOCHS_LATER)]["epoch_s"]
        out["passes"] = EPOCHS_LATER
    elif c == "liblinear":  # and svm_read_problem
        out["text_pass_s"] = r["read_s"]
        out["passes"] = r.get("iterations")
        if r.get("iterations"):
            out["later_pass_s"] = r["train_s"] / r["iterations"]
    return out


LABELS = {
    "ours_linear_text": "ours linear, 1 epoch from svmlight text",
    "ours_linear_zarr": f"ours linear, {EPOCHS_LATER} epochs from zarr",
    "ours_bspline_text": "ours B-splines, 1 epoch from svmlight text",
    "ours_bspline_zarr": f"ours B-splines, {EPOCHS_LATER} epochs from zarr",
    "convert": "ours: convert svmlight text to zarr",
    "vw_hinge_text": "VW hinge, 1 pass from text",
    "vw_logistic_text_cache": "VW logistic, 1 pass from text, -c -k (writes the cache)",
    "vw_hinge_cache": f"VW hinge, --passes {EPOCHS_LATER} from its cache",
    "vw_logistic_cache": f"VW logistic, --passes {EPOCHS_LATER} from its cache",
    "sklearn": f"sklearn load_svmlight_file + SGDClassifier(hinge), {EPOCHS_LATER} epochs",
    "liblinear": f"LIBLINEAR svm_read_problem + train {LIBLINEAR_OPTIONS}",
    "ours_shareboost_zarr": f"ours ShareBoost, {SHAREBOOST_ROUNDS} rounds from zarr",
    "ours_mixture_zarr": f"ours MixtureSVC, {MIXTURE_COMPONENTS} components, {EPOCHS_LATER} "
                         "epochs from zarr",
    "ours_supersparse_zarr": f"ours super-sparse, {PROTOTYPES} prototypes, {EPOCHS_LATER} "
                             "epochs from zarr",
}


def table_rows(results: list[dict[str, Any]]) -> list[list[Any]]:
    """One row per contender and size for the main table."""
    rows = []
    for r in results:
        if r["contender"] in ("warmup", "profile", "all"):
            if r["contender"] == "all":
                rows.append([r["dataset"], r["size"], None, "every contender", *[None] * 8,
                             r.get("skipped")])
            continue
        t = pass_times(r)
        label = LABELS.get(r["contender"], r["contender"])
        if r.get("run"):
            label += f" (run {r['run']})"
        if r.get("skipped") or r.get("error"):
            rows.append([r["dataset"], r["size"], r["rows"], label, None, None, None, None,
                         None, None, None, None, r.get("skipped") or r.get("error")])
            continue
        text_s, later_s = t["text_pass_s"], t["later_pass_s"]
        pass_s = text_s if text_s is not None else later_s
        acc = r.get("test_accuracy")
        if r["contender"] == "sklearn":
            acc = r["fits"][str(EPOCHS_LATER)]["test_accuracy"]
        note = ""
        if r["contender"].startswith("ours_"):
            note = f"open (scan) {t['open_s']:.1f} s"
            if t.get("other_passes"):
                note += "; " + ", ".join(f"{d} {s:.1f} s" for d, s in t["other_passes"])
        elif r["contender"] == "convert":
            note = (f"open {r['open_s']:.1f} s + convert {r['convert_s']:.1f} s, "
                    f"{r['bytes_written'] / 1e9:.2f} GB zarr")
            pass_s = r["fit_s"]
        elif r["contender"] == "sklearn":
            note = (f"load {r['read_s']:.1f} s; 1 epoch acc "
                    f"{100 * r['fits']['1']['test_accuracy']:.2f} %")
        elif r["contender"] == "liblinear":
            note = f"read {r['read_s']:.1f} s, train {r['train_s']:.1f} s"
        rows.append([
            r["dataset"], r["size"], r["rows"], label, t["passes"],
            round(text_s, 2) if text_s is not None else None,
            round(later_s, 2) if later_s is not None else None,
            round(r["rows"] / pass_s / 1e3, 1) if pass_s else None,
            round(r["nnz"] / pass_s / 1e6, 1) if pass_s else None,
            round(r["fit_s"], 1),
            round(r["peak_rss_bytes"] / 2**20),
            round(100 * acc, 2) if acc is not None else None,
            f"load {r['load_average_1m']}" + (f"; {note}" if note else ""),
        ])
    return rows


COLUMNS = ["data", "size", "rows", "contender", "passes", "text pass s", "later pass s",
           "k examples/s", "M nnz/s", "fit s (all)", "peak RSS MiB", "test acc %", "notes"]


def targets(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target per dataset and size: the two numbers compared and whether it is met."""
    runs: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in results:
        if not r.get("error") and not r.get("skipped"):
            runs.setdefault((r["dataset"], r["size"], r["contender"]), []).append(r)
    by = {key: rs[0] for key, rs in runs.items()}
    keys = sorted({(r["dataset"], r["size"]) for r in results
                   if r["contender"] not in ("warmup", "profile", "all")},
                  key=lambda k: (k[0], list(SIZES).index(k[1]) if k[1] in SIZES else -1))
    out = []

    def rate(d: str, s: str, c: str, which: str) -> float | None:
        """The contender's rate in its fastest run."""
        rates = [r["rows"] / sec for r in runs.get((d, s, c), [])
                 if (sec := pass_times(r)[which])]
        return max(rates, default=None)

    for d, s in keys:
        ours_t, vw_t = rate(d, s, "ours_linear_text", "text_pass_s"), \
            rate(d, s, "vw_hinge_text", "text_pass_s")
        if ours_t and vw_t:
            r = by[(d, s, "ours_linear_text")]
            whole = r["rows"] / (r["open_s"] + r["fit_s"])
            out.append({"target": "first_epoch", "dataset": d, "size": s, "ours": ours_t,
                        "vw": vw_t, "ratio": ours_t / vw_t, "met": ours_t >= vw_t,
                        "ours_with_open_scan": whole, "ratio_with_open_scan": whole / vw_t})
        ours_z, vw_c = rate(d, s, "ours_linear_zarr", "later_pass_s"), \
            rate(d, s, "vw_hinge_cache", "later_pass_s")
        if ours_z and vw_c:
            out.append({"target": "later_epochs", "dataset": d, "size": s, "ours": ours_z,
                        "vw": vw_c, "ratio": ours_z / vw_c, "met": ours_z >= 2 * vw_c})
        for passes, ours_c, vw_cs in (
                (1, "ours_linear_text", ("vw_hinge_text", "vw_logistic_text_cache")),
                (EPOCHS_LATER, "ours_linear_zarr", ("vw_hinge_cache", "vw_logistic_cache"))):
            o = by.get((d, s, ours_c))
            v = [by[(d, s, c)]["test_accuracy"] for c in vw_cs if (d, s, c) in by]
            if o and v:
                out.append({"target": "accuracy", "dataset": d, "size": s, "passes": passes,
                            "ours": o["test_accuracy"], "vw": max(v),
                            "met": o["test_accuracy"] >= max(v)})
        for c in ("ours_bspline_zarr", "ours_bspline_text"):
            lin = by.get((d, s, c.replace("bspline", "linear")))
            spl = by.get((d, s, c))
            if d == "generated" and lin and spl:
                out.append({"target": "additive", "dataset": d, "size": s,
                            "contender": c, "ours": spl["test_accuracy"],
                            "linear": lin["test_accuracy"],
                            "met": spl["test_accuracy"] > lin["test_accuracy"]})
    generated = [r for r in results if r["dataset"] == "generated"
                 and r["contender"].startswith("ours_") and not r.get("error")
                 and not r.get("skipped")]
    for c in sorted({r["contender"] for r in generated}):
        rss: dict[str, int] = {}
        for r in generated:
            if r["contender"] == c:  # the higher peak where a contender ran twice
                rss[r["size"]] = max(rss.get(r["size"], 0), r["peak_rss_bytes"])
        if "quarter" in rss and "full" in rss:
            ratio = rss["full"] / rss["quarter"]
            out.append({"target": "flat_rss", "dataset": "generated", "contender": c,
                        "quarter_mib": rss["quarter"] / 2**20, "full_mib": rss["full"] / 2**20,
                        "ratio": ratio, "met": ratio <= 1.10})
    return out


def describe_target(t: dict[str, Any]) -> str:
    """One line about one target."""
    where = f"{t['dataset']} {t.get('size', '')}".strip()
    mark = "met" if t["met"] else "NOT met"
    if t["target"] == "first_epoch":
        return (f"first epoch, {where}: ours {t['ours'] / 1e3:.0f}k ex/s vs VW "
                f"{t['vw'] / 1e3:.0f}k ex/s ({t['ratio']:.2f}x; {t['ratio_with_open_scan']:.2f}x "
                f"counting the open scan) -> {mark}")
    if t["target"] == "later_epochs":
        return (f"later epochs, {where}: ours from zarr {t['ours'] / 1e3:.0f}k ex/s vs VW "
                f"cache {t['vw'] / 1e3:.0f}k ex/s ({t['ratio']:.2f}x, target 2x) -> {mark}")
    if t["target"] == "accuracy":
        return (f"accuracy at {t['passes']} pass(es), {where}: ours linear "
                f"{100 * t['ours']:.2f} % vs VW best {100 * t['vw']:.2f} % -> {mark}")
    if t["target"] == "additive":
        return (f"additive vs linear, {where} ({t['contender']}): {100 * t['ours']:.2f} % vs "
                f"{100 * t['linear']:.2f} % -> {mark}")
    return (f"flat RSS, {t['contender']}: {t['quarter_mib']:.0f} MiB at 1/4 -> "
            f"{t['full_mib']:.0f} MiB at full ({t['ratio']:.2f}x) -> {mark}")


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary, tables and plots of the report (from the JSON alone)."""
    tlist = report["targets"]
    met = sum(t["met"] for t in tlist)
    lines = [describe_target(t) for t in tlist]
    summary = (
        "AdditiveSVC on sparse rows (svmlight text for the first epoch, then a zarr CSR store "
        "made by `convert`) against Vowpal Wabbit (its parser on its file, then its cache), "
        "LIBLINEAR and scikit-learn, on a9a and a generated rcv1-like problem "
        f"({report['settings']['n_features']:,} features, ~80 non-zeros a row) at "
        f"{', '.join(report['settings']['sizes'])} size; each fit in a fresh process, page "
        f"cache warm, 2 shared cores. Targets met: {met} of {len(tlist)}. "
        + "; ".join(lines) + ".")
    target_rows = [[t["target"], t["dataset"], t.get("size") or t.get("contender"),
                    describe_target(t).split(": ", 1)[1]] for t in tlist]
    return {
        "title": "Sparse rows: svmlight text and zarr CSR against VW, LIBLINEAR, scikit-learn",
        "summary": summary,
        "tables": [
            {"title": "Every contender and size (one fresh process each)",
             "columns": COLUMNS, "rows": table_rows(report["results"]),
             "notes": "text pass s: the first pass over the text (ours: the epoch pass alone; "
                      "VW: Workspace creation to finish); later pass s: median pass from the "
                      "zarr store, VW's cache (its run / passes) or memory; k examples/s and M "
                      "nnz/s from the text pass where there is one, else the later pass; fit "
                      "s: the whole child's fit (ours without the open scan, given in the "
                      "notes; sklearn: load + both fits; LIBLINEAR: read + train); load: the "
                      "1-minute load average when the child started."},
            {"title": "Targets", "columns": ["target", "data", "size / contender", "result"],
             "rows": target_rows},
            {"title": "Where a linear epoch's time goes (cProfile, prefetch=0)",
             "columns": ["data", "source", "rows", "chunk rows", "bare stream s",
                         "epoch fit s", "profiled fit s", "top functions by own time (s)"],
             "rows": [[f"{r['dataset']} {r['size']}", source, r[source]["rows"],
                       r[source]["chunk_rows"], round(r[source]["bare_stream_s"], 2),
                       round(r[source]["epoch_fit_s"], 2),
                       round(r[source]["profiled_fit_prefetch0_s"], 2),
                       "; ".join(f"{f['function']} {f['own_s']:.2f}"
                                 for f in r[source]["top_own_time"][:5])]
                      for r in report["results"]
                      if r["contender"] == "profile" and not r.get("error")
                      for source in ("text", "zarr")],
             "notes": "bare stream: one shuffled pass of open_dataset(...).chunks() with "
                      "prefetch 2; epoch fit: AdditiveSVC(embedding='linear', epochs=1) with "
                      "prefetch 2 (as measured above); profiled: the same fit with prefetch 0, "
                      "so reading and training share one thread."},
        ],
        "plots": ["sparse_training.png"],
    }


#: Colour, line style and marker of each contender in the plot.
STYLES = {
    "ours_linear_text": ("tab:blue", "-", "o"),
    "ours_linear_zarr": ("tab:blue", "-", "s"),
    "ours_bspline_text": ("tab:green", "-", "o"),
    "ours_bspline_zarr": ("tab:green", "-", "s"),
    "convert": ("tab:gray", "-.", "D"),
    "vw_hinge_text": ("tab:red", "--", "o"),
    "vw_hinge_cache": ("tab:red", "--", "s"),
    "vw_logistic_text_cache": ("tab:orange", "--", "o"),
    "vw_logistic_cache": ("tab:orange", "--", "s"),
    "sklearn": ("tab:purple", ":", "^"),
    "liblinear": ("tab:brown", ":", "v"),
    "ours_shareboost_zarr": ("tab:olive", "-", "P"),
    "ours_mixture_zarr": ("tab:cyan", "-", "X"),
    "ours_supersparse_zarr": ("tab:pink", "-", "*"),
}


def plot(report: dict[str, Any], path: Path) -> None:
    """Examples/s per pass, peak RSS and test accuracy against training rows (generated)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [r for r in report["results"] if r["dataset"] == "generated"
               and not r.get("error") and not r.get("skipped")
               and r["contender"] not in ("warmup", "profile", "all")]
    contenders = [c for c in STYLES if any(r["contender"] == c for r in results)]
    fig, axes = plt.subplots(1, 3, figsize=(17, 6.2))
    for c in contenders:
        rs = sorted((r for r in results if r["contender"] == c and not r.get("run")),
                    key=lambda r: r["rows"])
        rows = [r["rows"] for r in rs]
        colour, style, marker = STYLES[c]
        kw = {"color": colour, "linestyle": style, "marker": marker, "label": LABELS.get(c, c)}
        times = [pass_times(r) for r in rs]
        if c in ("sklearn", "liblinear"):  # reading the text (circles), epochs in memory
            for key, mark, what in (("text_pass_s", "o", "reading the text"),
                                    ("later_pass_s", "s", "an epoch in memory")):
                axes[0].plot(rows, [r["rows"] / t[key] / 1e3 if t[key] else np.nan
                                    for r, t in zip(rs, times, strict=True)],
                             **{**kw, "marker": mark, "label": f"{c}: {what}"})
        else:
            rates = []
            for r, t in zip(rs, times, strict=True):
                s = t["text_pass_s"] if t["text_pass_s"] is not None else t["later_pass_s"]
                if c == "convert":
                    s = r["fit_s"]
                rates.append(r["rows"] / s / 1e3 if s else np.nan)
            axes[0].plot(rows, rates, **kw)
        axes[1].plot(rows, [r["peak_rss_bytes"] / 2**20 for r in rs], **kw)
        accs = [r["fits"][str(EPOCHS_LATER)]["test_accuracy"] if c == "sklearn"
                else r.get("test_accuracy") for r in rs]
        if any(a is not None for a in accs):
            axes[2].plot(rows, [100 * a if a is not None else np.nan for a in accs], **kw)
    axes[0].set_title("examples/s of one pass\n(circles: the first pass, over the text; "
                      "squares: a later pass)", fontsize=10)
    axes[0].set_ylabel("thousand examples / s")
    axes[0].set_yscale("log")
    axes[1].set_title("peak RSS of the fitting process", fontsize=10)
    axes[1].set_ylabel("MiB")
    axes[1].set_yscale("log")
    axes[2].set_title(f"test accuracy ({report['settings']['test_rows']:,} held-out rows)",
                      fontsize=10)
    axes[2].set_ylabel("%")
    for ax in axes:
        ax.set_xlabel("training rows")
        ax.set_xscale("log")
        ax.grid(True, alpha=0.3)
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(f"Sparse rows, generated rcv1-like data ({report['settings']['n_features']:,} "
                 "features, ~80 non-zeros a row): ours solid, VW dashed, in-memory peers dotted")
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def print_table(report: dict[str, Any]) -> None:
    """The main table and the targets, for the log."""
    widths = [9, 7, 9, 58, 6, 8, 8, 9, 7, 8, 7, 7]
    print(" ".join(f"{c[:w]:>{w}}" if i != 3 else f"{c:<{w}}"
                   for i, (c, w) in enumerate(zip(COLUMNS, widths, strict=False))) + " notes")
    for row in table_rows(report["results"]):
        cells = []
        for i, (v, w) in enumerate(zip(row, widths, strict=False)):
            text = "-" if v is None else str(v)
            cells.append(f"{text[:w]:<{w}}" if i == 3 else f"{text[:w]:>{w}}")
        print(" ".join(cells) + " " + str(row[-1]))
    print("\ntargets:")
    for t in report["targets"]:
        print("  " + describe_target(t))
    for r in report["results"]:
        if r["contender"] != "profile" or r.get("error"):
            continue
        for source in ("text", "zarr"):
            p = r[source]
            print(f"\nprofile, {r['dataset']} {r['size']} from {source} ({p['rows']:,} rows, "
                  f"chunks of {p['chunk_rows']}): bare shuffled stream {p['bare_stream_s']:.2f} "
                  f"s, one-epoch linear fit {p['epoch_fit_s']:.2f} s, profiled with prefetch=0 "
                  f"{p['profiled_fit_prefetch0_s']:.2f} s; by own time:")
            for f in p["top_own_time"][:10]:
                print(f"  {f['own_s']:8.3f} s {f['calls']:8d} calls  {f['function']}")


# ------------------------------------------------------------------------------ main
def run(args: argparse.Namespace) -> dict[str, Any]:
    """Generate, measure, report."""
    t_start = time.perf_counter()
    machine = machine_info()
    scratch: Path = args.scratch
    root = scratch / ("quick" if args.quick else "full")
    work = root / "work"
    work.mkdir(parents=True, exist_ok=True)
    logs = root / "logs"
    logs.mkdir(exist_ok=True)
    full_rows = QUICK_FULL_ROWS if args.quick else args.rows
    test_rows = QUICK_TEST_ROWS if args.quick else TEST_ROWS
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    for s in sizes:
        if s not in SIZES:
            raise SystemExit(f"unknown size {s!r}; choose among {', '.join(SIZES)}")
    env = dict(os.environ)
    source_hash = None
    if args.snapshot:
        src, source_hash = snapshot_source(scratch)
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).strip(
            os.pathsep)
        log(f"streamlearn source {source_hash} copied to {src}")
    runner = ChildRunner(env, args.memory_budget_gib, args.child_timeout, logs)

    log("a9a: writing svmlight and VW text ...")
    a9a = write_a9a(root / "a9a")
    log("generated data ...")
    gen = generate(root / "generated", full_rows, test_rows, sizes, reuse=args.keep)
    log(f"  {json.dumps({s: v['svm_bytes'] for s, v in gen['sizes'].items()})} bytes of text; "
        f"train written in {gen.get('train_write_s', 0):.0f} s")

    results: list[dict[str, Any]] = []
    text_chunk_rows = args.text_chunk_rows or None
    log("warm-up (numba kernels compiled or loaded from the cache) ...")
    warm = runner.run({"kind": "warmup", "train": a9a["warmup"], "test": a9a["test"]["svm"],
                       "n_features": A9A_FEATURES, "zarr": str(work / "warmup.zarr"),
                       "chunk_rows": text_chunk_rows})
    results.append({"dataset": "a9a", "size": "warmup", "rows": 0, "nnz": 0,
                    "contender": "warmup", **warm})
    log(f"  warm-up took {warm['child_wall_s']:.0f} s (streamlearn from "
        f"{warm.get('streamlearn_file')})")
    history: dict[str, list] = {}
    budget = args.memory_budget_gib * 2**30
    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    if not args.skip_a9a:
        a9a_train = {"rows": a9a["train"]["rows"], "nnz": a9a["train"]["nnz"],
                     "svm": a9a["train"]["svm"], "vw": a9a["train"]["vw"],
                     "svm_bytes": a9a["train"]["svm_bytes"]}
        a9a_test = {"svm": a9a["test"]["svm"], "vw": a9a["test"]["vw"],
                    "labels": a9a["test"]["labels"]}
        results += run_dataset(runner, "a9a", "provided", a9a_train, a9a_test, A9A_FEATURES,
                               work, {}, budget, args.skip_seconds, models, text_chunk_rows)
    for k, s in enumerate(sizes):
        if s not in gen["sizes"]:
            results.append({"dataset": "generated", "size": s, "rows": None, "nnz": None,
                            "contender": "all", "skipped": gen["skipped"].get(s)})
            continue
        train = {**gen["sizes"][s]}
        results += run_dataset(runner, "generated", s, train,
                               {**gen["test"]}, gen["n_features"], work, history, budget,
                               args.skip_seconds, models, text_chunk_rows, profile=k == 0)
    total_s = time.perf_counter() - t_start
    report = {
        "benchmark": "sparse_training",
        "machine": machine,
        "versions": {**library_versions(LIBRARIES), "streamlearn_source_sha256_16":
                     source_hash},
        "settings": {
            "quick": bool(args.quick), "sizes": sizes, "full_rows": full_rows,
            "test_rows": test_rows, "n_features": gen["n_features"], "seed": SEED,
            "epochs_later": EPOCHS_LATER, "vw_bits": VW_BITS,
            "liblinear_options": LIBLINEAR_OPTIONS,
            "memory_budget_gib": args.memory_budget_gib,
            "child_timeout_s": args.child_timeout, "skip_seconds": args.skip_seconds,
            "ours": "AdditiveSVC(embedding='linear' | B-splines, n_bases=20, epochs=E, tol=None, "
                    "calibrate=False, random_state=0): E=1 from the svmlight text, E=5 from "
                    "the zarr CSR store written by convert(layout='sparse')",
            "models": list(models),
            "other_models": (
                f"from the zarr store: ShareBoostClassifier(n_rounds={SHAREBOOST_ROUNDS}, "
                f"refit_iter={SHAREBOOST_REFIT}), MixtureSVC(n_components="
                f"{MIXTURE_COMPONENTS}, epochs=5, validation_fraction=None), "
                f"SuperSparseClassifier(n_prototypes={PROTOTYPES}, solver='minibatch', "
                "max_iter=5), random_state=0"),
            "vw": "vowpalwabbit.Workspace(--data FILE --loss_function L -b 22 --holdout_off "
                  "[--cache_file C --passes 5 [-k]]).run_parser(); test: -t -i model -p",
            "sklearn": "load_svmlight_file(dtype=float32) + SGDClassifier(loss='hinge', "
                       "max_iter=1 and 5, tol=None, random_state=0)",
            "timing": "each contender in a fresh child process, one at a time, after a "
                      "warm-up child that compiles the numba kernels; files in the page "
                      "cache (written just before); peak RSS: the child's VmHWM",
            "snapshot": bool(args.snapshot),
            "text_chunk_rows": text_chunk_rows,
            "targets": TARGETS,
        },
        "data": {"a9a": a9a, "generated": gen},
        "results": results,
        "targets": targets(results),
        "total_runtime_s": total_s,
    }
    report.update(report_tables(report))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sparse_training.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    plot(report, args.out / "sparse_training.png")
    print_table(report)
    print(f"\ntotal runtime {total_s:.0f} s; results in {args.out}/sparse_training.{{json,png}}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(scratch / "src", ignore_errors=True)
    return report


def replot(path: Path) -> None:
    """Rebuild the tables, summary and plot of a results file from its measurements."""
    report = json.loads(path.read_text())
    report["targets"] = targets(report["results"])
    report.update(report_tables(report))
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    plot(report, path.with_suffix(".png"))
    print_table(report)


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_FULL_ROWS:,} rows at full size, {QUICK_TEST_ROWS:,} test")
    parser.add_argument("--sizes", default="quarter,half,full",
                        help="comma-separated among quarter, half, full")
    parser.add_argument("--rows", type=int, default=FULL_ROWS,
                        help="training rows at full size (without --quick)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    parser.add_argument("--scratch", type=Path, default=DEFAULT_SCRATCH,
                        help="where data, stores and caches are written (in quick/ or full/)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the scratch directory (and reuse its generated data)")
    parser.add_argument("--memory-budget-gib", type=float, default=MEMORY_BUDGET_GIB,
                        help="a child over this RSS is killed; peers extrapolated over it "
                             "are skipped")
    parser.add_argument("--child-timeout", type=float, default=CHILD_TIMEOUT_S)
    parser.add_argument("--skip-seconds", type=float, default=SKIP_SECONDS,
                        help="skip LIBLINEAR / sklearn where their extrapolated time is more")
    parser.add_argument("--no-snapshot", dest="snapshot", action="store_false",
                        help="children import the checkout's streamlearn, not a copy")
    parser.add_argument("--skip-a9a", action="store_true")
    parser.add_argument("--models", default="linear,bspline",
                        help="our models to fit besides the linear one (comma-separated: "
                             "bspline, shareboost, mixture, supersparse; the last three "
                             "add about 45 minutes at the full sizes)")
    parser.add_argument("--text-chunk-rows", type=int, default=TEXT_CHUNK_ROWS,
                        help="chunk_rows of open_dataset on svmlight text (0: its default)")
    parser.add_argument("--replot", type=Path, metavar="JSON",
                        help="only rebuild the tables and the plot of a results file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child_main(args.child)
        return
    if args.replot:
        replot(args.replot)
        return
    run(args)


if __name__ == "__main__":
    main()
