"""Rows/s of one ``AdditiveSVC`` training epoch streamed from a zarr store, against the stream.

One epoch of PEGASOS (the ``PegasosEpochPass`` that ``AdditiveSVC.fit`` runs, through
``LocalEngine`` with prefetch 2, chunks visited in a seeded random order and rows permuted
inside each chunk, as ``fit`` does) for four embeddings:

- ``linear``: the raw 32 features (a linear SVM);
- ``bspline_d1_D0_n20``: B-splines of degree 1, 20 bases per feature, no difference penalty;
- ``bspline_d3_D1_n20``: B-splines of degree 3, 20 bases per feature, first-order penalty
  (the ``w_d = D_1^-1 w`` update of paper 000, Sec. 5);
- ``fourier_D1_k10``: the trigonometric embedding with 10 frequencies (20 columns per
  feature, as wide as the splines), first-order weights;

against, over the same chunks of the same store in the same run:

- ``stream``: the bare ``Dataset`` stream through the same engine and chunk order (the pass
  does nothing but count rows): the rate an I/O-bound epoch can reach;
- ``stream_sequential``: the stream in storage order (what ``bench/io_throughput.py``
  measures), for reference;
- ``sgd``: scikit-learn ``SGDClassifier(loss="hinge").partial_fit`` on every chunk, the same
  engine pass around it.

The store is ``bench/io_throughput.py``'s 32-feature data (its generator, imported), written
as zarr only under ``bench/data/throughput/`` and reused when present: 4 GB of float32
features (31.25 M rows) by default, 0.25 GB with ``--quick``. The feature maps are fitted
from the per-feature min/max/mean/std computed once in the parent over the whole store; that
pass also puts the store in the page cache, so epochs measure decoding and compute, not the
disk.

Every method runs in a fresh subprocess: one untimed call of its kernel on a few rows (numba
loads its cached compilation), then one timed epoch over the store; then, in the same
process, the same work over a fixed set of chunks held in memory (``--memory-chunks``),
which shows each method's compute rate without I/O. Methods run in ``--repeats`` rounds,
method order rotated per round, so a busy phase of the shared machine hits all methods
alike; medians are reported, with the load average before and after every run.

Run ``python bench/throughput.py`` (about 10 minutes on 2 cores) or ``--quick``. Results go
to ``bench/results/throughput.{json,png}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
from io_throughput import (
    BLOCK_ROWS,
    DATA_DESCRIPTION,
    N_FEATURES,
    SEED,
    ZARR_CHUNK_ROWS,
    dir_bytes,
    make_block,
    peak_rss_bytes,
)
from machine_info import library_versions, machine_info

BENCH_DIR = Path(__file__).resolve().parent
DATA_DIR = BENCH_DIR / "data" / "throughput"
RESULTS_DIR = BENCH_DIR / "results"
DATA_VERSION = 1

FULL_SIZE_GB = 4.0
QUICK_SIZE_GB = 0.1
CHUNK_ROWS = 1 << 16
PREFETCH = 2
SHUFFLE_SEED = 7

METHODS = ("stream", "stream_sequential", "linear", "bspline_d1_D0_n20", "bspline_d3_D1_n20",
           "fourier_D1_k10", "sgd")
LABELS = {
    "stream": "bare stream (same order as the epochs)",
    "stream_sequential": "bare stream, storage order",
    "linear": "AdditiveSVC linear, PEGASOS",
    "bspline_d1_D0_n20": "B-spline deg 1, D0, n=20",
    "bspline_d3_D1_n20": "B-spline deg 3, D1, n=20",
    "fourier_D1_k10": "Fourier D1, 10 frequencies",
    "sgd": "scikit-learn SGDClassifier.partial_fit",
}
#: Speed targets: method -> minimum fraction of the bare stream's rows/s.
STREAM_TARGETS = {"linear": 0.8, "bspline_d1_D0_n20": 0.8, "bspline_d3_D1_n20": 0.4,
                  "fourier_D1_k10": 0.5}
#: Linear PEGASOS against SGDClassifier.partial_fit on the same chunks.
SGD_TARGET = 3.0


# --------------------------------------------------------------------------- data
def store_root(size_gb: float) -> Path:
    """Directory of the store holding ``size_gb`` GB of float32 features."""
    return DATA_DIR / f"d{N_FEATURES}_n{int(size_gb * 1e9 // (4 * N_FEATURES))}"


def generate(size_gb: float) -> dict[str, Any]:
    """Write (or reuse) the zarr store and its per-feature statistics; describe it.

    Rows are ``bench/io_throughput.py``'s (``make_block``), in its zarr layout. The
    statistics (min, max, mean, std per feature) are computed in one pass over the finished
    store, which also leaves it in the page cache.
    """
    import zarr

    n_rows = int(size_gb * 1e9 // (4 * N_FEATURES))
    root = store_root(size_gb)
    zarr_path, meta_path = root / "data.zarr", root / "meta.json"
    settings = {"version": DATA_VERSION, "seed": SEED, "n_rows": n_rows,
                "n_features": N_FEATURES, "zarr_chunk_rows": ZARR_CHUNK_ROWS}
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("settings") == settings:
            warm_page_cache(zarr_path)
            return {**meta, "generated_s": None, "reused": True}
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    group = zarr.open_group(zarr_path, mode="w", zarr_format=3)
    X = group.create_array("X", shape=(n_rows, N_FEATURES), chunks=(ZARR_CHUNK_ROWS, N_FEATURES),
                           dtype="float32")
    y = group.create_array("y", shape=(n_rows,), chunks=(ZARR_CHUNK_ROWS,), dtype="int8")
    for a in range(0, n_rows, BLOCK_ROWS):
        b = min(a + BLOCK_ROWS, n_rows)
        cols, labels = make_block(a, b)
        X[a:b] = cols.T
        y[a:b] = labels
    generated_s = time.perf_counter() - t0
    meta = {"settings": settings, "path": str(zarr_path), "disk_bytes": dir_bytes(zarr_path),
            "stats": store_stats(zarr_path)}
    meta_path.write_text(json.dumps(meta, indent=2))
    return {**meta, "generated_s": generated_s, "reused": False}


def store_stats(path: Path) -> dict[str, list[float]]:
    """Per-feature min, max, mean and std of the store (one streamed pass)."""
    from streamlearn import open_dataset

    ds = open_dataset(str(path), chunk_rows=1 << 18, classes=[0, 1])
    lo = np.full(N_FEATURES, np.inf)
    hi = np.full(N_FEATURES, -np.inf)
    s1 = np.zeros(N_FEATURES)
    s2 = np.zeros(N_FEATURES)
    n = 0
    for chunk in ds.chunks():
        x = chunk.X.astype(np.float64)
        lo = np.minimum(lo, x.min(axis=0))
        hi = np.maximum(hi, x.max(axis=0))
        s1 += x.sum(axis=0)
        s2 += (x * x).sum(axis=0)
        n += x.shape[0]
    mean = s1 / n
    std = np.sqrt(np.maximum(s2 / n - mean**2, 0.0))
    return {"min": lo.tolist(), "max": hi.tolist(), "mean": mean.tolist(), "std": std.tolist()}


def warm_page_cache(path: Path) -> None:
    """Read every file of the store once, so timed epochs find it in the page cache."""
    for f in path.rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                while fh.read(1 << 24):
                    pass


# --------------------------------------------------------------------------- one method
class CountPass:
    """Reduction pass that only counts rows and labels (the bare stream)."""

    kind: Literal["reduction", "sequential"] = "reduction"

    def start(self) -> list[int]:
        """``[rows, label sum]``."""
        return [0, 0]

    def step(self, state: list[int], chunk: Any) -> list[int]:
        """Count one chunk."""
        state[0] += chunk.n_rows
        state[1] += int(chunk.y.sum(dtype=np.int64))
        return state

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        """Sum two counts."""
        return [a[0] + b[0], a[1] + b[1]]

    def finish(self, state: list[int]) -> list[int]:
        """The counts."""
        return state


class SGDPass:
    """Sequential pass: ``SGDClassifier.partial_fit`` on every chunk."""

    kind: Literal["reduction", "sequential"] = "sequential"

    def __init__(self, model: Any) -> None:
        self.model = model

    def start(self) -> int:
        """Rows seen."""
        return 0

    def step(self, state: int, chunk: Any) -> int:
        """One ``partial_fit`` call on the chunk."""
        self.model.partial_fit(chunk.X, chunk.y, classes=np.array([0, 1]))
        return state + chunk.n_rows

    def merge(self, a: int, b: int) -> int:
        """Not split by the local engine."""
        return a + b

    def finish(self, state: int) -> int:
        """Rows seen."""
        return state


def feature_map(method: str, stats: dict[str, list[float]]) -> Any:
    """The fitted feature map of ``method`` (None for linear)."""
    from streamlearn.features import BSplineMap, FourierMap

    if method == "linear":
        return None
    if method == "bspline_d1_D0_n20":
        fmap: Any = BSplineMap(degree=1, n_bases=20, penalty_order=0)
    elif method == "bspline_d3_D1_n20":
        fmap = BSplineMap(degree=3, n_bases=20, penalty_order=1)
    elif method == "fourier_D1_k10":
        fmap = FourierMap(n_terms=10, penalty_order=1)
    else:
        raise ValueError(f"unknown method {method!r}")
    return fmap.fit_from_stats(minimum=stats["min"], maximum=stats["max"],
                               mean=stats["mean"], std=stats["std"])


def make_pass(method: str, stats: dict[str, list[float]], n_rows: int) -> tuple[Any, Any]:
    """The pass ``method`` runs over the chunks, and a function scoring its model.

    The scoring function returns the training accuracy of the model on an in-memory chunk
    (a check that the epoch learned something).
    """
    if method.startswith("stream"):
        return CountPass(), None
    if method == "sgd":
        from sklearn.linear_model import SGDClassifier

        model = SGDClassifier(loss="hinge", alpha=1.0 / n_rows, random_state=0)
        return SGDPass(model), lambda X, y: float(model.score(X, y))
    from streamlearn.models.additive import (
        ModelPairs,
        PegasosEpochPass,
        PegasosState,
        TrainingRows,
    )
    from streamlearn.solvers.embedding import decision_ovr_chunk, embedding_params

    emb = embedding_params(feature_map(method, stats), N_FEATURES)
    shape = (1, emb.n_dims + 1)
    initial = PegasosState(np.zeros(shape), np.zeros(shape), 0)
    # What AdditiveSVC(C=1, epochs=1, average=True).fit uses: lam = 1 / n, averaging the
    # second half of the steps.
    epoch = PegasosEpochPass(TrainingRows(emb, None, None), ModelPairs.of(2), 1.0 / n_rows, 1.0,
                             n_rows // 2 + 1, initial)

    def accuracy(X: np.ndarray, y: np.ndarray, state: PegasosState) -> float:
        scores = decision_ovr_chunk(X, state.AVG if state.t > n_rows // 2 else state.W,
                                    1.0, *emb)
        return float(((scores[:, 0] > 0) == (y == 1)).mean())

    return epoch, accuracy


def measure(method: str, path: str, stats_path: str, memory_chunks: int) -> dict[str, Any]:
    """One warm-up call, one timed epoch over the store, then the same over chunks in memory."""
    from streamlearn import open_dataset
    from streamlearn.engine import LocalEngine

    stats = json.loads(Path(stats_path).read_text())["stats"]
    load_before = os.getloadavg()[0]
    ds = open_dataset(path, chunk_rows=CHUNK_ROWS, prefetch=PREFETCH, classes=[0, 1])
    n_rows = ds.n_rows
    engine = LocalEngine(prefetch=PREFETCH, progress=False, chunk_rows=CHUNK_ROWS)
    first = next(iter(ds.chunks(CHUNK_ROWS, prefetch=0, rows=(0, min(n_rows, 4096)))))
    pass_, accuracy = make_pass(method, stats, n_rows)
    # warm-up: numba loads its cached compilation, scikit-learn its code paths
    pass_.finish(pass_.step(pass_.start(), first))
    pass_, accuracy = make_pass(method, stats, n_rows)
    shuffle = method != "stream_sequential"
    t0 = time.perf_counter()
    state = engine.run(pass_, ds, shuffle=shuffle, seed=SHUFFLE_SEED)
    epoch_s = time.perf_counter() - t0
    peak = peak_rss_bytes()
    rows = state[0] if method.startswith("stream") else (
        state if method == "sgd" else state.rows)
    check = ds.chunks(CHUNK_ROWS, prefetch=0, rows=(0, min(n_rows, CHUNK_ROWS)))
    probe = next(iter(check))
    acc = None
    if method == "sgd":
        acc = accuracy(probe.X, probe.y)
    elif accuracy is not None:
        acc = accuracy(probe.X, probe.y, state)

    # the same work over chunks held in memory: compute without I/O
    held = list(ds.chunks(CHUNK_ROWS, shuffle=True, seed=SHUFFLE_SEED, prefetch=PREFETCH,
                          rows=(0, min(n_rows, memory_chunks * CHUNK_ROWS))))
    pass_, _ = make_pass(method, stats, n_rows)
    mem_state = pass_.start()
    t0 = time.perf_counter()
    for chunk in held:
        mem_state = pass_.step(mem_state, chunk)
    memory_s = time.perf_counter() - t0
    return {
        "rows": int(rows),
        "epoch_s": epoch_s,
        "rows_per_s": rows / epoch_s,
        "memory_rows": int(sum(c.n_rows for c in held)),
        "memory_s": memory_s,
        "memory_rows_per_s": sum(c.n_rows for c in held) / memory_s,
        "train_accuracy_first_chunk": acc,
        "peak_rss_epoch_bytes": peak,
        "load_1m_before": load_before,
        "load_1m_after": os.getloadavg()[0],
    }


PROFILE_STAGES = ("encode", "encode + score", "encode + score + update")


def stage_loop(spec: Any, stage: int) -> Any:
    """A numba loop over dense rows running the first ``stage + 1`` per-row stages of a map.

    The loop is compiled for a constant ``spec`` (a
    :class:`~streamlearn.solvers.embedding.KernelSpec`) and ``stage``, like the solver kernels
    (:class:`~streamlearn.solvers.embedding.KernelFamily`), from the same inlined per-row
    helpers: ``embed_row``, then ``row_score``, then one ``row_update`` per row (what a
    PEGASOS step does when the margin is violated; averaging moves two models in one sweep).
    """
    from numba import njit

    from streamlearn.solvers.embedding import (
        IP_MAX_NNZ,
        IP_N_COLS,
        embed_row,
        row_score,
        row_update,
    )

    kind, _, degree, zero_preserving, order = spec

    @njit(nogil=True)
    def loop(X, ipar, fpar, w):  # pragma: no cover - numba
        idx = np.empty(ipar[IP_MAX_NNZ], dtype=np.int32)
        val = np.zeros(ipar[IP_MAX_NNZ], dtype=np.float32)
        n_cols = ipar[IP_N_COLS]
        s = 0.0
        for r in range(X.shape[0]):
            x = X[r]
            nnz = embed_row(kind, degree, zero_preserving, x, ipar, fpar, idx, val)
            s += val[r % nnz]  # reads the encoding, so that it is computed
            if stage >= 1:
                s += row_score(kind, w, x, idx, val, nnz)
            if stage >= 2:
                row_update(kind, w, x, idx, val, nnz, n_cols, order, 1e-9)
        return s

    return loop


def profile_kernels(path: str, stats_path: str, n_rows: int = 1024,
                    repeats: int = 200) -> dict[str, Any]:
    """Nanoseconds per row of the per-row stages of each embedding, over rows in memory.

    For each embedding, :func:`stage_loop` runs over ``n_rows`` rows of the store: the
    encoding only, then also the score, then also one update per row. The fastest of
    ``repeats`` short loops is kept: a loop of a millisecond or less usually runs without
    being preempted, so the figure is the kernels' own speed even on a shared machine.
    """
    import zarr

    from streamlearn.solvers.embedding import embedding_params, kernel_spec

    stats = json.loads(Path(stats_path).read_text())["stats"]
    X = np.ascontiguousarray(zarr.open_group(path, mode="r")["X"][:n_rows])
    out: dict[str, Any] = {"rows": int(X.shape[0]), "repeats": repeats, "ns_per_row": {}}
    for method in ("linear", "bspline_d1_D0_n20", "bspline_d3_D1_n20", "fourier_D1_k10"):
        emb = embedding_params(feature_map(method, stats), N_FEATURES)
        w = np.zeros(emb.n_dims + 1)
        times = {}
        for stage, name in enumerate(PROFILE_STAGES):
            loop = stage_loop(kernel_spec(emb.kind, emb.ipar, False, True), stage)
            loop(X[:16], emb.ipar, emb.fpar, w)
            best = np.inf
            for _ in range(repeats):
                t0 = time.perf_counter()
                loop(X, emb.ipar, emb.fpar, w)
                best = min(best, time.perf_counter() - t0)
            times[name] = best / X.shape[0] * 1e9
        out["ns_per_row"][method] = times
    out["load_1m"] = os.getloadavg()[0]
    return out


def measure_in_subprocess(method: str, path: str, stats_path: str,
                          memory_chunks: int) -> dict[str, Any]:
    """Run :func:`measure` in a fresh Python process and return its result."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", method, "--path", path,
           "--stats", stats_path, "--memory-chunks", str(memory_chunks)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{method} on {path} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def profile_in_subprocess(path: str, stats_path: str) -> dict[str, Any]:
    """Run :func:`profile_kernels` in a fresh Python process."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--profile", "--path", path,
           "--stats", stats_path]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"kernel profile failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- summary
def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over rounds of one method."""
    return {
        "rows_per_s": statistics.median(r["rows_per_s"] for r in runs),
        "best_rows_per_s": max(r["rows_per_s"] for r in runs),
        "epoch_s": statistics.median(r["epoch_s"] for r in runs),
        "memory_rows_per_s": statistics.median(r["memory_rows_per_s"] for r in runs),
        "peak_rss_mib": max(r["peak_rss_epoch_bytes"] for r in runs) / 2**20,
        "train_accuracy_first_chunk": runs[-1]["train_accuracy_first_chunk"],
    }


def ratios(summary: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each method against the bare stream, and linear PEGASOS against SGD; target checks."""
    stream = summary["stream"]["rows_per_s"]
    out: dict[str, Any] = {
        "over_stream": {m: s["rows_per_s"] / stream for m, s in summary.items()},
        "linear_over_sgd": summary["linear"]["rows_per_s"] / summary["sgd"]["rows_per_s"],
        "linear_over_sgd_in_memory": (summary["linear"]["memory_rows_per_s"]
                                      / summary["sgd"]["memory_rows_per_s"]),
    }
    out["targets"] = [
        {"target": f"{LABELS[m]} >= {t:.0%} of the bare stream",
         "measured": out["over_stream"][m], "met": out["over_stream"][m] >= t}
        for m, t in STREAM_TARGETS.items()
    ] + [{"target": f"linear PEGASOS >= {SGD_TARGET:g}x SGDClassifier.partial_fit rows/s "
                    "on the same chunks (held in memory: streamed, an epoch faster than the "
                    "stream only reaches the stream)",
          "measured": out["linear_over_sgd_in_memory"],
          "met": out["linear_over_sgd_in_memory"] >= SGD_TARGET}]
    return out


def print_table(summary: dict[str, dict[str, Any]], q: dict[str, Any]) -> None:
    """A readable table of the medians and ratios."""
    head = (f"{'method':42} {'Mrows/s':>8} {'/stream':>7} {'in-mem Mrows/s':>14} "
            f"{'peak MiB':>8} {'train acc':>9}")
    print(head)
    print("-" * len(head))
    for m, s in summary.items():
        acc = s["train_accuracy_first_chunk"]
        print(f"{LABELS[m]:42} {s['rows_per_s'] / 1e6:8.2f} {q['over_stream'][m]:7.2f} "
              f"{s['memory_rows_per_s'] / 1e6:14.2f} {s['peak_rss_mib']:8.0f} "
              f"{'' if acc is None else f'{acc:.3f}':>9}")
    for t in q["targets"]:
        print(f"  {t['target']}: {t['measured']:.2f} -> {'met' if t['met'] else 'NOT met'}")
    print(f"  linear PEGASOS / SGD streamed from the store: {q['linear_over_sgd']:.2f}")


def plot(report: dict[str, Any], path: Path) -> None:
    """Rows/s of each method from the store and in memory, bare stream as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = report["summary_by_method"]
    methods = [m for m in METHODS if m != "stream_sequential"]
    x = np.arange(len(methods))
    fig, ax = plt.subplots(figsize=(10, 5))
    ax.bar(x - 0.2, [summary[m]["rows_per_s"] / 1e6 for m in methods], 0.4,
           label="one epoch streamed from the zarr store")
    computing = [k for k, m in enumerate(methods) if not m.startswith("stream")]
    ax.bar(x[computing] + 0.2, [summary[methods[k]]["memory_rows_per_s"] / 1e6
                                for k in computing], 0.4,
           label="same work over chunks in memory (no I/O)")
    stream = summary["stream"]["rows_per_s"] / 1e6
    ax.axhline(stream, color="k", ls="--", lw=1, label="bare stream")
    for frac in (0.8, 0.4):
        ax.axhline(frac * stream, color="grey", ls=":", lw=1)
    ax.set_xticks(x, [LABELS[m].replace(" (", "\n(").replace(", ", "\n", 1)
                      .replace(" SGD", "\nSGD") for m in methods], fontsize=7)
    ax.set_ylabel("million rows / s (median)")
    ax.set_yscale("log")
    s = report["settings"]
    ax.set_title(f"One PEGASOS epoch over {s['n_rows'] / 1e6:.1f} M rows x {N_FEATURES} "
                 f"features ({s['size_gb']} GB float32), chunks of {CHUNK_ROWS}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary and tables of a result for ``bench/REPORT.md``."""
    summary, q = report["summary_by_method"], report["ratios"]
    rows = []
    for m in METHODS:
        s = summary[m]
        rows.append([LABELS[m], s["rows_per_s"] / 1e6, q["over_stream"][m],
                     s["memory_rows_per_s"] / 1e6, s["peak_rss_mib"],
                     s["train_accuracy_first_chunk"]])
    targets = [[t["target"], t["measured"], "met" if t["met"] else "not met"]
               for t in q["targets"]]
    st = report["settings"]
    return {
        "title": "Training throughput of AdditiveSVC",
        "summary": (f"One PEGASOS epoch streamed from a {st['size_gb']} GB zarr store "
                    f"({st['n_rows']} rows x {N_FEATURES} float32 features), against the bare "
                    f"stream and SGDClassifier.partial_fit over the same chunks; medians of "
                    f"{st['repeats']} runs in fresh processes, method order rotated. "
                    f"Targets met: {sum(t['met'] for t in q['targets'])} of "
                    f"{len(q['targets'])}."),
        "tables": [
            {"title": "Rows/s by method",
             "columns": ["method", "Mrows/s (store)", "/ bare stream", "Mrows/s (in memory)",
                         "peak RSS MiB", "train acc. (first chunk)"],
             "rows": rows,
             "notes": "in memory: the same pass over chunks already read, i.e. compute "
                      "alone; load averages of every run are in the JSON."},
            {"title": "Per-row compute of the embeddings (ns/row, rows in memory)",
             "columns": ["embedding", *PROFILE_STAGES],
             "rows": [[m, *(t[k] for k in PROFILE_STAGES)]
                      for m, t in report["kernel_profile"]["ns_per_row"].items()],
             "notes": f"fastest of {report['kernel_profile'].get('repeats', 3)} numba loops "
                      f"over the first {report['kernel_profile']['rows']} rows of the store; "
                      f"load average {report['kernel_profile']['load_1m']:.1f} while measured"},
            {"title": "Targets", "columns": ["target", "measured", "status"], "rows": targets,
             "notes": f"linear PEGASOS / SGD streamed from the store: "
                      f"{q['linear_over_sgd']:.2f}"},
        ],
        "plots": ["throughput.png"],
    }


# --------------------------------------------------------------------------- main
def run(size_gb: float, repeats: int, memory_chunks: int, out_dir: Path) -> dict[str, Any]:
    """Generate the store, measure every method, write JSON and PNG results."""
    t_start = time.perf_counter()
    log(f"store of {size_gb} GB ...")
    meta = generate(size_gb)
    path = meta["path"]
    n_rows = meta["settings"]["n_rows"]
    log(f"  {n_rows} rows; " + ("reused" if meta["reused"]
                                else f"generated in {meta['generated_s']:.0f} s"))
    stats_path = str(Path(path).parent / "meta.json")
    raw: dict[str, list[dict[str, Any]]] = {m: [] for m in METHODS}
    order_log = []
    for r in range(repeats):
        k = (r * 3) % len(METHODS)
        order = (*METHODS[k:], *METHODS[:k])
        order_log.append(list(order))
        for method in order:
            m = measure_in_subprocess(method, path, stats_path, memory_chunks)
            if m["rows"] != n_rows:
                raise RuntimeError(f"{method} processed {m['rows']} rows, expected {n_rows}")
            raw[method].append(m)
            log(f"  round {r + 1}: {LABELS[method]:42} {m['rows_per_s'] / 1e6:6.2f} Mrows/s "
                f"(in memory {m['memory_rows_per_s'] / 1e6:6.2f}), load "
                f"{m['load_1m_before']:.2f}")
    summary = {m: summarise(raw[m]) for m in METHODS}
    q = ratios(summary)
    log("kernel profile ...")
    profile = profile_in_subprocess(path, stats_path)
    total_s = time.perf_counter() - t_start
    loads = [x["load_1m_before"] for runs in raw.values() for x in runs]
    report: dict[str, Any] = {
        "benchmark": "throughput",
        "machine": machine_info(),
        "versions": library_versions(("numpy", "numba", "zarr", "pyarrow", "scikit-learn",
                                      "streamlearn")),
        "settings": {
            "size_gb": size_gb,
            "n_rows": n_rows,
            "n_features": N_FEATURES,
            "disk_bytes": meta["disk_bytes"],
            "chunk_rows": CHUNK_ROWS,
            "prefetch": PREFETCH,
            "repeats": repeats,
            "memory_chunks": memory_chunks,
            "store": f"zarr v3, X float32 chunks ({ZARR_CHUNK_ROWS}, {N_FEATURES}), zstd; "
                     f"y int8; rows of bench/io_throughput.py (make_block), page cache warm",
            "epoch": "PegasosEpochPass of AdditiveSVC (binary, lam = 1/n, averaging from step "
                     "n/2 + 1, bias 1) through LocalEngine(prefetch=2), chunks in a seeded "
                     "random order and rows permuted within chunks, as AdditiveSVC.fit",
            "sgd": "SGDClassifier(loss='hinge', alpha=1/n).partial_fit(chunk.X, chunk.y) per "
                   "chunk through the same engine pass",
            "timing": f"{repeats} rounds; in each, every method runs in a fresh subprocess "
                      "(one untimed kernel call on 4096 rows, then one timed epoch); method "
                      "order rotated by 3 per round; medians reported",
            "load": "other processes share this machine's cores: methods are interleaved so "
                    "that load affects all alike, and os.getloadavg() is recorded before and "
                    "after every run",
            "load_1m_range": [min(loads), max(loads)],
            "data": DATA_DESCRIPTION,
            "orders": order_log,
        },
        "store": {k: v for k, v in meta.items() if k != "stats"},
        "summary_by_method": summary,
        "ratios": q,
        "kernel_profile": profile,
        "raw": raw,
        "total_runtime_s": total_s,
    }
    report.update(report_tables(report))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "throughput.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, out_dir / "throughput.png")
    print_table(summary, q)
    print("\nper-row compute, ns/row (" + ", ".join(PROFILE_STAGES) + "):")
    for m, t in profile["ns_per_row"].items():
        print(f"  {m:20} " + "  ".join(f"{t[k]:8.0f}" for k in PROFILE_STAGES))
    print(f"\ntotal runtime {total_s:.0f} s; results in {out_dir}/throughput.{{json,png}}")
    return report


def rebuild(out_dir: Path) -> None:
    """Rewrite the tables and the plot of ``out_dir/throughput.json`` from its data."""
    path = out_dir / "throughput.json"
    report = json.loads(path.read_text())
    report.update(report_tables(report))
    path.write_text(json.dumps(report, indent=2) + "\n")
    plot(report, out_dir / "throughput.png")
    print_table(report["summary_by_method"], report["ratios"])


def log(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"a {QUICK_SIZE_GB} GB store instead of {FULL_SIZE_GB} GB")
    parser.add_argument("--size-gb", type=float, help="GB of float32 features in the store")
    parser.add_argument("--repeats", type=int, help="rounds (default 3, quick 2)")
    parser.add_argument("--memory-chunks", type=int, default=8,
                        help="chunks held in memory for the compute-only rate")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild the tables and plot from the JSON in --out")
    parser.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--stats", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.path, args.stats, args.memory_chunks)))
        return
    if args.profile:
        print(json.dumps(profile_kernels(args.path, args.stats)))
        return
    if args.report_only:
        rebuild(args.out)
        return
    size = args.size_gb or (QUICK_SIZE_GB if args.quick else FULL_SIZE_GB)
    if args.generate_only:
        meta = generate(size)
        print(json.dumps({k: v for k, v in meta.items() if k != "stats"}, indent=2))
        return
    repeats = args.repeats or (2 if args.quick else 3)
    run(size, repeats, args.memory_chunks, args.out)


if __name__ == "__main__":
    main()
