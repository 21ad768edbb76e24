"""Rows/s of passes with ``LocalEngine`` and ``DaskEngine`` on 1 and 2 workers, and dask-ml.

Stores: the built-in additive problem (``streamlearn.data.synthetic``) with 32 features,
written once per size under ``bench/data/distributed/`` as a zarr v3 store (chunks of 65536
rows) and a directory of 4 parquet files (row groups of 65536 rows), reused when present.

Workloads, each timed as one pass over the whole store (median of ``--repeats`` after an
untimed warm-up run that compiles the kernels on every worker and warms the page cache; the
engines take turns within every repeat, so that a busy phase of the machine reaches all):

- ``reduction``: the describe pass (moments, row sample, class counts);
- ``linear epoch``: one PEGASOS epoch of a linear SVM (``AdditiveSVC(embedding="linear")``);
- ``additive epoch``: one PEGASOS epoch of the additive SVM (B-splines, 10 bases, on the fly);
- ``shareboost round``: the scoring pass of a ShareBoost round (eq. 7 gradients of every
  candidate column, here 32 decision stumps per feature, 1024 candidates, accumulated from
  the residuals of the model so far: 8 stumps already selected).

Engines: ``LocalEngine`` (prefetch thread, this process), ``DaskEngine`` on a ``LocalCluster``
of 1 worker process and of 2 worker processes (1 thread each, decoding pools sized to the
worker's share of the cores), at the dataset's default chunk size (about 16 MiB of features
per chunk) and 2 partitions per worker. One worker already keeps every core of a small machine
busy (solver thread, reader thread, decoding), so a second worker there has no core of its
own; to show how the engine scales with workers, the reductions at the largest size are also
timed on the same clusters with each worker process pinned to a core of its own and one
decoding thread (1 worker on 1 core against 2 workers on 2 cores).

Peer: dask-ml's ``Incremental(SGDClassifier(loss="hinge"))`` fitted for one pass over the
same zarr store as a dask array (blocks of 65536 rows) on the same clusters, against
``AdditiveSVC(embedding="linear", epochs=1, calibrate=False)`` fitted with ``DaskEngine`` (one
pass, as the linear model without calibration needs no describe pass); both are scored on
100000 held-out rows.

Also measured on 2 workers: the per-task overhead (a no-op reduction over 2 to 128 partitions
of a small store: seconds per extra task, from a least-squares line) and the reduction's
rows/s as the partition size shrinks (chunk = partition), which shows the size where the
overhead stops mattering (the smallest reaching 90% of the best rows/s).

Run ``python bench/distributed.py`` (1, 2, 4 million rows) or ``--quick`` (0.25, 0.5 million).
Results go to ``bench/results/distributed.{json,png}``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
# This file's name would shadow the ``distributed`` package while its folder leads sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR] + [str(BENCH_DIR)]

from machine_info import library_versions, machine_info  # noqa: E402

DATA_DIR = BENCH_DIR / "data" / "distributed"
RESULTS_DIR = BENCH_DIR / "results"

N_FEATURES = 32
PIECE_ROWS = 1 << 16
N_FILES = 4
SEED = 20240612
DATA_VERSION = 1
DEFAULT_SIZES = (1_000_000, 2_000_000, 4_000_000)
QUICK_SIZES = (250_000, 500_000)
TEST_ROWS = 100_000
FORMATS = ("zarr", "parquet")
WORKLOADS = ("reduction", "linear epoch", "additive epoch", "shareboost round")
#: Stump thresholds per feature and stumps already selected in the ShareBoost round.
STUMPS_PER_FEATURE = 32
STUMPS_SELECTED = 8
#: Workloads of models that may be missing from the library (measured when present).
EXTRA_WORKLOADS: tuple[str, ...] = ()
ENGINES = ("local", "dask 1 worker", "dask 2 workers")
#: The same clusters with every worker held to a core of its own (scaling per core).
PINNED_ENGINES = ("dask 1 worker, 1 core", "dask 2 workers, 1 core each")
#: Workloads measured on the pinned clusters (at the largest size): the reductions.
PINNED_WORKLOADS = ("reduction", "shareboost round")
OVERHEAD_PARTITIONS = (2, 8, 32, 128)
PARTITION_SWEEP = (4096, 16384, 65536, 262144)
#: Share of the best rows/s at which a partition size "stops mattering".
GOOD_ENOUGH = 0.9


# ------------------------------------------------------------------------------- data
def generate(n_rows: int) -> dict[str, str]:
    """Write (or reuse) the zarr store and parquet directory of ``n_rows`` rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zarr

    from streamlearn.data.synthetic import additive_problem

    root = DATA_DIR / f"n{n_rows}"
    paths = {"zarr": str(root / "data.zarr"), "parquet": str(root / "parquet")}
    settings = {"version": DATA_VERSION, "seed": SEED, "n_rows": n_rows, "d": N_FEATURES,
                "piece_rows": PIECE_ROWS, "files": N_FILES}
    meta = root / "meta.json"
    if meta.exists() and json.loads(meta.read_text()) == settings:
        return paths
    shutil.rmtree(root, ignore_errors=True)
    Path(paths["parquet"]).mkdir(parents=True)
    group = zarr.open_group(paths["zarr"], mode="w", zarr_format=3)
    X = group.create_array("X", shape=(n_rows, N_FEATURES), chunks=(PIECE_ROWS, N_FEATURES),
                           dtype="float32")
    y = group.create_array("y", shape=(n_rows,), chunks=(PIECE_ROWS,), dtype="int8")
    y.attrs["classes"] = [0, 1]
    names = [f"x{j}" for j in range(N_FEATURES)]
    per_file = -(-n_rows // N_FILES // PIECE_ROWS) * PIECE_ROWS
    for k in range(N_FILES):
        lo, hi = k * per_file, min((k + 1) * per_file, n_rows)
        if lo >= hi:
            break
        with pq.ParquetWriter(Path(paths["parquet"]) / f"part-{k}.parquet",
                              pa.schema([*(pa.field(c, pa.float32()) for c in names),
                                         pa.field("label", pa.int8())])) as writer:
            for a in range(lo, hi, PIECE_ROWS):
                b = min(a + PIECE_ROWS, hi)
                Xb, yb = additive_problem(b - a, N_FEATURES, seed=SEED, start=a)
                X[a:b] = Xb
                y[a:b] = yb
                writer.write_table(pa.Table.from_arrays(
                    [*(pa.array(Xb[:, j]) for j in range(N_FEATURES)), pa.array(yb)],
                    names=[*names, "label"]), row_group_size=PIECE_ROWS)
    meta.write_text(json.dumps(settings))
    return paths


def open_store(fmt: str, path: str) -> Any:
    """The dataset of one store (classes given, so no scan)."""
    import streamlearn as sl

    if fmt == "zarr":
        return sl.open_dataset(path, classes=[0, 1])
    return sl.open_dataset(path, target="label", classes=[0, 1])


# ------------------------------------------------------------------------------ passes
def make_pass(dataset: Any, workload: str) -> Callable[[], Any]:
    """Factory of one timed pass over ``dataset`` (a fresh pass object per run)."""
    from streamlearn.engine.describe import DescribePass
    from streamlearn.models.additive import (
        AdditiveSVC,
        ModelPairs,
        PegasosEpochPass,
        PegasosState,
    )

    if workload == "reduction":
        return lambda: DescribePass(list(dataset.feature_names), n_classes=2)
    if workload == "shareboost round":
        return shareboost_round(dataset)
    # a model fitted on the first rows gives the feature map and sizes of the epoch pass
    X = next(iter(dataset.chunks(4096, prefetch=0))).X
    model = AdditiveSVC(embedding="linear" if workload == "linear epoch" else "bspline",
                        n_bases=20, epochs=1, calibrate=False)
    model.fit(X, (X[:, 0] > 0).astype(np.int8))
    rows = model._training_rows(None)
    shape = (1, rows.emb.n_dims + 1)

    def make() -> Any:
        return PegasosEpochPass(rows, ModelPairs.of(2), 1.0 / dataset.n_rows, 1.0,
                                dataset.n_rows // 2,
                                PegasosState(np.zeros(shape), np.zeros(shape), 0))
    return make


def shareboost_round(dataset: Any) -> Callable[[], Any]:
    """Factory of the scoring pass of a ShareBoost round with stump candidates."""
    from streamlearn.models.shareboost import ColumnScorePass, StumpColumns

    X = next(iter(dataset.chunks(65536, prefetch=0))).X
    q = (np.arange(1, STUMPS_PER_FEATURE + 1) / (STUMPS_PER_FEATURE + 1))
    thresholds = np.ascontiguousarray(np.quantile(X, q, axis=0).T, dtype=np.float32)
    family = StumpColumns(thresholds)
    rng = np.random.default_rng(SEED)
    selected = rng.choice(family.n_candidates, STUMPS_SELECTED, replace=False)
    n_classes = 2
    coef = rng.normal(scale=0.1, size=(STUMPS_SELECTED, n_classes, family.n_base))
    intercept = np.zeros(n_classes)
    return lambda: ColumnScorePass(family, selected, coef, intercept)


def timed(run: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """Untimed warm-up, then the median of ``repeats`` timed runs."""
    run()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return {"seconds": statistics.median(times), "all_seconds": times}


def start_cluster(n_workers: int, pinned: bool = False) -> tuple[Any, Any]:
    """A loopback ``LocalCluster`` of ``n_workers`` single-thread processes and its client.

    ``pinned``: every worker process (all its threads, and those it starts later) runs on a
    core of its own, with one decoding thread; a worker then cannot borrow the core of
    another, so 1 and 2 workers compare like 1 and 2 machines of one core.
    """
    from distributed import Client

    from streamlearn.engine import local_cluster

    cluster = local_cluster(n_workers, decode_threads=1 if pinned else None)
    client = Client(cluster)
    if pinned:
        workers = sorted(client.scheduler_info()["workers"])
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) < n_workers:
            raise RuntimeError(f"{n_workers} pinned workers need {n_workers} cores")
        for address, core in zip(workers, cores, strict=False):
            client.run(pin_process, core, workers=[address])
    return cluster, client


def pin_process(core: int) -> list[int]:
    """Run every thread of this process on ``core`` (threads started later inherit it)."""
    tids = [int(t) for t in os.listdir("/proc/self/task")]
    for tid in tids:
        os.sched_setaffinity(tid, {core})
    return tids


# ------------------------------------------------------------------------------ peers
def peer_comparison(path: str, client: Any, X_test: np.ndarray,
                    y_test: np.ndarray) -> dict[str, Any]:
    """dask-ml ``Incremental(SGDClassifier)`` vs the linear ``AdditiveSVC`` on ``client``."""
    import streamlearn as sl
    from streamlearn.engine.dask_engine import DaskEngine
    from streamlearn.models.additive import AdditiveSVC

    out: dict[str, Any] = {}
    ds = sl.open_dataset(path, classes=[0, 1])
    engine = DaskEngine(client)
    model = AdditiveSVC(embedding="linear", epochs=1, calibrate=False)
    model.fit(ds, engine=engine)  # warm-up
    t0 = time.perf_counter()
    model.fit(ds, engine=engine)
    seconds = time.perf_counter() - t0
    out["streamlearn linear (DaskEngine)"] = {
        "seconds": seconds, "rows_per_s": ds.n_rows / seconds,
        "accuracy": float(model.score(X_test, y_test)),
        "what": "AdditiveSVC(embedding='linear', epochs=1, calibrate=False): one PEGASOS "
                "epoch (no describe pass: the store's metadata counts the rows)",
    }
    try:
        import dask.array as da
        from dask_ml.wrappers import Incremental
        from sklearn.linear_model import SGDClassifier
    except ImportError as exc:
        out["dask-ml Incremental(SGDClassifier)"] = {"error": f"not importable: {exc}"}
        return out
    X = da.from_zarr(path, component="X")
    y = da.from_zarr(path, component="y")
    alpha = 1.0 / ds.n_rows
    runs = []
    for _ in range(2):  # the first run is the warm-up
        inc = Incremental(SGDClassifier(loss="hinge", alpha=alpha, learning_rate="optimal",
                                        random_state=0))
        t0 = time.perf_counter()
        inc.fit(X, y, classes=[0, 1])
        runs.append(time.perf_counter() - t0)
    out["dask-ml Incremental(SGDClassifier)"] = {
        "seconds": runs[-1], "rows_per_s": ds.n_rows / runs[-1],
        "accuracy": float(inc.estimator_.score(X_test, y_test)),
        "what": "Incremental(SGDClassifier(loss='hinge')).fit over da.from_zarr blocks of "
                f"{PIECE_ROWS} rows: one partial_fit per block, in sequence",
    }
    return out


def task_overhead(path: str, client: Any, repeats: int) -> dict[str, Any]:
    """Seconds per task: a no-op reduction over more and more partitions."""
    import streamlearn as sl
    from streamlearn.engine import Reduction
    from streamlearn.engine.dask_engine import DaskEngine

    ds = sl.open_dataset(path, classes=[0, 1])
    rows = (0, 128 * 512)
    points = []
    for parts in OVERHEAD_PARTITIONS:
        engine = DaskEngine(client, partition_rows=(rows[1] // parts), chunk_rows=512)
        noop = Reduction(start=lambda: 0, step=lambda s, c: s + c.n_rows,
                         merge=lambda a, b: a + b)
        r = timed(lambda e=engine, p=noop: e.run(p, ds, rows=rows), repeats)
        points.append({"partitions": parts, "seconds": r["seconds"]})
    x = np.array([p["partitions"] for p in points], dtype=float)
    t = np.array([p["seconds"] for p in points])
    slope, intercept = np.polyfit(x, t, 1)
    return {"points": points, "seconds_per_task": float(slope),
            "fixed_seconds_per_pass": float(intercept),
            "what": f"no-op reduction over rows 0-{rows[1]} in 512-row chunks on 2 workers; "
                    "least-squares line of time vs partitions (tasks + merge tasks)"}


def partition_sweep(path: str, client: Any, n_rows: int, repeats: int,
                    local_rows_per_s: float) -> dict[str, Any]:
    """Reduction rows/s on 2 workers as partitions (and chunks) shrink."""
    import streamlearn as sl
    from streamlearn.engine.dask_engine import DaskEngine
    from streamlearn.engine.describe import DescribePass

    ds = sl.open_dataset(path, classes=[0, 1])
    points = []
    for rows in PARTITION_SWEEP:
        engine = DaskEngine(client, partition_rows=rows, chunk_rows=min(rows, ds.chunk_rows))
        r = timed(lambda e=engine: e.run(DescribePass(list(ds.feature_names), n_classes=2), ds),
                  repeats)
        points.append({"partition_rows": rows, "tasks": -(-n_rows // rows),
                       "rows_per_s": n_rows / r["seconds"]})
        log(f"  partitions of {rows:7d} rows: {n_rows / r['seconds'] / 1e6:6.2f} Mrows/s")
    best = max(p["rows_per_s"] for p in points)
    enough = min(p["partition_rows"] for p in points if p["rows_per_s"] >= GOOD_ENOUGH * best)
    return {"points": points, "stops_mattering_at_rows": enough,
            "local_rows_per_s": local_rows_per_s,
            "what": f"describe pass on 2 workers, {n_rows} rows; smallest partition reaching "
                    f"{GOOD_ENOUGH:.0%} of the best rows/s"}


# ------------------------------------------------------------------------------ report
def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary and tables of a result for ``bench/REPORT.md`` (see bench/README.md)."""
    results = report["results"]
    engines = [e for e in (*ENGINES, *PINNED_ENGINES) if any(r["engine"] == e for r in results)]
    workloads = [w for w in (*WORKLOADS, *EXTRA_WORKLOADS)
                 if any(r["workload"] == w for r in results)]
    speed_rows = []
    for fmt, workload, n in itertools.product(FORMATS, workloads, report["settings"]["sizes_rows"]):
        rate = {r["engine"]: r["rows_per_s"] for r in results
                if r["format"] == fmt and r["workload"] == workload and r["n_rows"] == n}
        if not rate:
            continue
        one, two, local = (rate.get(e) for e in (ENGINES[1], ENGINES[2], "local"))
        one_pinned, two_pinned = (rate.get(e) for e in PINNED_ENGINES)
        speed_rows.append([fmt, workload, n, *(rate.get(e, 0) / 1e6 or None for e in engines),
                           one / local if one and local else None,
                           two / one if one and two else None,
                           two_pinned / one_pinned if one_pinned and two_pinned else None])
    peer_rows = [[cluster, name, r.get("rows_per_s", 0) / 1e6 or None, r.get("accuracy"),
                  r.get("error", "")]
                 for cluster, peers in report.get("peers", {}).items()
                 for name, r in peers.items()]
    sweep, overhead = report.get("partition_sweep") or {}, report.get("overhead") or {}
    sweep_rows = [[p["partition_rows"], p["tasks"], p["rows_per_s"] / 1e6]
                  for p in sweep.get("points", [])]
    targets = report.get("targets", [])
    summary = ["Rows/s of whole passes with `LocalEngine` and `DaskEngine` on loopback "
               "`LocalCluster`s of 1 and 2 single-thread workers, over the same zarr and parquet "
               "stores, at the default chunk size."]
    if targets:
        worst = min(targets, key=lambda t: t["dask1_vs_local"])
        reductions = [t["dask2_vs_dask1"] for t in targets if t["workload"] == "reduction"]
        pinned = [t["dask2_vs_dask1_one_core_each"] for t in targets
                  if "dask2_vs_dask1_one_core_each" in t]
        summary.append(f"Targets: 1 worker >= 85% of local rows/s (lowest measured: "
                       f"{worst['dask1_vs_local']:.0%}, {worst['format']} {worst['workload']}); "
                       f"2 workers >= 1.6x of 1 worker for reductions (measured: "
                       f"{', '.join(f'{x:.2f}x' for x in reductions)} with the workers "
                       f"sharing both cores; {', '.join(f'{x:.2f}x' for x in pinned)} with "
                       f"one core per worker).")
    if overhead:
        summary.append(f"Per-task overhead: {overhead['seconds_per_task'] * 1e3:.1f} ms per task; "
                       f"the reduction reaches {GOOD_ENOUGH:.0%} of its best rows/s from "
                       f"partitions of {sweep.get('stops_mattering_at_rows', 0):,} rows.")
    return {
        "title": "Distributed: LocalEngine vs DaskEngine, and dask-ml",
        "summary": " ".join(summary),
        "tables": [
            {"title": "Rows/s (millions) by engine",
             "columns": ["format", "workload", "rows", *engines, "1 worker / local",
                         "2 workers / 1 worker", "same, 1 core each"],
             "rows": speed_rows,
             "notes": "Workers use their share of the cores for decoding (pyarrow, zarr); "
                      "the pinned clusters hold each worker process to a core of its own, "
                      "with one decoding thread (reductions at the largest size only)."},
            {"title": "Peer on the same cluster and zarr store (one pass, 100000 held-out rows)",
             "columns": ["cluster", "method", "Mrows/s", "accuracy", "error"],
             "rows": peer_rows},
            {"title": "Reduction rows/s on 2 workers as the partition (= chunk) shrinks",
             "columns": ["partition rows", "tasks", "Mrows/s"],
             "rows": sweep_rows,
             "notes": (f"Per-task overhead {overhead.get('seconds_per_task', 0) * 1e3:.1f} ms "
                       f"(slope of a no-op reduction's time over 2-128 partitions); fixed "
                       f"cost per pass {overhead.get('fixed_seconds_per_pass', 0):.2f} s.")},
        ],
        "plots": ["distributed.png"],
    }


def plot(results: list[dict[str, Any]], sweep: dict[str, Any], path: Path) -> None:
    """Rows/s per workload and engine vs size (zarr solid, parquet dashed); the sweep."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(WORKLOADS) + 1, figsize=(5 * (len(WORKLOADS) + 1), 4))
    colors = dict(zip(ENGINES, ("tab:gray", "tab:blue", "tab:orange"), strict=True))
    for ax, workload in zip(axes, WORKLOADS, strict=False):
        for fmt, engine in itertools.product(FORMATS, ENGINES):
            pts = [(r["n_rows"], r["rows_per_s"]) for r in results
                   if r["format"] == fmt and r["engine"] == engine and r["workload"] == workload]
            if pts:
                xs, ys = zip(*sorted(pts), strict=True)
                ax.plot(xs, np.array(ys) / 1e6, marker="o", color=colors[engine],
                        linestyle="-" if fmt == "zarr" else "--", label=f"{engine} ({fmt})")
        for engine, color in zip(PINNED_ENGINES, ("tab:blue", "tab:orange"), strict=True):
            for fmt in FORMATS:
                pts = [(r["n_rows"], r["rows_per_s"]) for r in results
                       if r["format"] == fmt and r["engine"] == engine
                       and r["workload"] == workload]
                if pts:
                    xs, ys = zip(*pts, strict=True)
                    ax.plot(xs, np.array(ys) / 1e6, marker="*" if fmt == "zarr" else "P",
                            ms=10, linestyle="none", color=color, markeredgecolor="k",
                            label=f"{engine} ({fmt})")
        ax.set_title(workload)
        ax.set_xlabel("rows")
        ax.set_ylabel("Mrows/s")
        ax.set_xscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    ax = axes[-1]
    pts = sweep["points"]
    ax.plot([p["partition_rows"] for p in pts], [p["rows_per_s"] / 1e6 for p in pts],
            marker="o", color="tab:orange", label="dask 2 workers")
    ax.axhline(sweep["local_rows_per_s"] / 1e6, color="tab:gray", linestyle=":", label="local")
    ax.set_xscale("log", base=2)
    ax.set_title("reduction vs partition size (zarr)")
    ax.set_xlabel("rows per partition (= chunk)")
    ax.set_ylabel("Mrows/s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle("streamlearn DaskEngine on a loopback LocalCluster")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def log(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


def run(sizes: list[int], repeats: int, out_dir: Path) -> dict[str, Any]:
    """Generate the stores, time every workload on every engine, write JSON and PNG."""
    import streamlearn as sl
    from streamlearn.data.synthetic import additive_problem
    from streamlearn.engine.dask_engine import DaskEngine

    t_start = time.perf_counter()
    stores = {n: generate(n) for n in sizes}
    X_test, y_test = additive_problem(TEST_ROWS, N_FEATURES, seed=SEED + 1)
    results: list[dict[str, Any]] = []
    extra: dict[str, Any] = {"peers": {}, "overhead": None, "partition_sweep": None}

    def measure(engines: dict[str, Any], at_sizes: list[int],
                workloads: tuple[str, ...]) -> None:
        # Engines take turns within every repeat (order rotated from one repeat to the
        # next), so that a busy or quiet phase of the machine reaches them all alike.
        for n, (fmt, workload) in itertools.product(at_sizes, itertools.product(FORMATS,
                                                                               workloads)):
            ds = open_store(fmt, stores[n][fmt])
            make = make_pass(ds, workload)
            shuffle = workload != "reduction"
            runs = {name: (lambda e=engine, m=make, d=ds, s=shuffle:
                           e.run(m(), d, shuffle=s, seed=0))
                    for name, engine in engines.items()}
            for run_once in runs.values():  # warm-up: kernels compiled, page cache warm
                run_once()
            times: dict[str, list[float]] = {name: [] for name in runs}
            names = list(runs)
            for rep in range(repeats):
                for name in names[rep % len(names):] + names[:rep % len(names)]:
                    t0 = time.perf_counter()
                    runs[name]()
                    times[name].append(time.perf_counter() - t0)
            for name, secs in times.items():
                seconds = statistics.median(secs)
                results.append({"engine": name, "format": fmt, "workload": workload,
                                "n_rows": n, "chunk_rows": ds.chunk_rows, "seconds": seconds,
                                "all_seconds": secs, "rows_per_s": n / seconds})
                log(f"  {name:28} {fmt:8} {workload:16} {n:8d} rows "
                    f"{n / seconds / 1e6:6.2f} Mrows/s")

    clusters = {n_workers: start_cluster(n_workers) for n_workers in (1, 2)}
    try:
        engines = {"local": sl.LocalEngine(progress=False)}
        engines.update({ENGINES[n_workers]: DaskEngine(client, progress=False)
                        for n_workers, (_, client) in clusters.items()})
        log(", ".join(engines))
        measure(engines, sizes, WORKLOADS)
        for n_workers, (_, client) in clusters.items():
            name = ENGINES[n_workers]
            extra["peers"][name] = peer_comparison(stores[max(sizes)]["zarr"], client,
                                                   X_test, y_test)
            for peer, r in extra["peers"][name].items():
                log(f"  {name} peer {peer}: {r}")
        client = clusters[2][1]
        extra["overhead"] = task_overhead(stores[min(sizes)]["zarr"], client, repeats)
        log(f"  per-task overhead {extra['overhead']['seconds_per_task'] * 1e3:.1f} ms")
        local = next(r["rows_per_s"] for r in results
                     if r["engine"] == "local" and r["format"] == "zarr"
                     and r["workload"] == "reduction" and r["n_rows"] == max(sizes))
        extra["partition_sweep"] = partition_sweep(stores[max(sizes)]["zarr"], client,
                                                   max(sizes), repeats, local)
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()

    pinned = {n_workers: start_cluster(n_workers, pinned=True) for n_workers in (1, 2)}
    try:
        log(", ".join(PINNED_ENGINES))
        measure({name: DaskEngine(client, progress=False)
                 for name, (_, client) in zip(PINNED_ENGINES, pinned.values(), strict=True)},
                [max(sizes)], PINNED_WORKLOADS)
    finally:
        for cluster, client in pinned.values():
            client.close()
            cluster.close()

    def speed(engine: str, fmt: str, workload: str, n: int) -> float:
        return next(r["rows_per_s"] for r in results if r["engine"] == engine
                    and r["format"] == fmt and r["workload"] == workload and r["n_rows"] == n)

    targets = []
    for fmt, workload in itertools.product(FORMATS, WORKLOADS):
        n = max(sizes)
        one, two = speed(ENGINES[1], fmt, workload, n), speed(ENGINES[2], fmt, workload, n)
        target = {"format": fmt, "workload": workload, "n_rows": n,
                  "dask1_vs_local": one / speed("local", fmt, workload, n),
                  "dask2_vs_dask1": two / one}
        if workload in PINNED_WORKLOADS:
            target["dask2_vs_dask1_one_core_each"] = (
                speed(PINNED_ENGINES[1], fmt, workload, n)
                / speed(PINNED_ENGINES[0], fmt, workload, n))
        targets.append(target)
    report = {
        "benchmark": "distributed",
        "machine": machine_info(),
        "versions": library_versions(("numpy", "numba", "zarr", "pyarrow", "dask",
                                       "distributed", "dask-ml", "scikit-learn",
                                       "streamlearn")),
        "settings": {
            "sizes_rows": sizes, "repeats": repeats, "n_features": N_FEATURES,
            "stores": f"zarr v3 X float32 chunks of {PIECE_ROWS} rows (default zstd); "
                      f"{N_FILES} parquet files, row groups of {PIECE_ROWS} rows (snappy)",
            "chunk_rows": "dataset default (16 MiB of features: 131072 rows at 32 features)",
            "clusters": "streamlearn.engine.local_cluster: LocalCluster(processes=True, "
                        "threads_per_worker=1) on 127.0.0.1, MALLOC_TRIM_THRESHOLD_ unset, "
                        "decoding pools of cores // workers threads, default 2 partitions "
                        "per worker; pinned: each worker process on its own core "
                        "(sched_setaffinity of all its threads), one decoding thread",
            "timing": "median of the timed runs after one untimed warm-up run per engine; "
                      "the engines take turns within every repeat (order rotated), and the "
                      "clusters of 1 and 2 workers stay up side by side (the idle one waits); "
                      "the client process also runs the schedulers",
            "targets": "DaskEngine 1 worker >= 85% of LocalEngine rows/s; 2 workers >= 1.6x "
                       "of 1 worker for reductions; faster than dask-ml Incremental at equal "
                       "or better accuracy",
        },
        "results": results,
        "targets": targets,
        **extra,
        "total_runtime_s": time.perf_counter() - t_start,
    }
    report.update(report_tables(report))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "distributed.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(results, extra["partition_sweep"], out_dir / "distributed.png")
    print(f"\n{'format':8} {'workload':16} {'dask1/local':>11} {'dask2/dask1':>11} "
          f"{'1 core each':>11}")
    for t in targets:
        pinned = t.get("dask2_vs_dask1_one_core_each")
        print(f"{t['format']:8} {t['workload']:16} {t['dask1_vs_local']:11.2f} "
              f"{t['dask2_vs_dask1']:11.2f} {'' if pinned is None else f'{pinned:11.2f}'}")
    for name, peers in extra["peers"].items():
        for peer, r in peers.items():
            if "error" in r:
                print(f"{name:15} {peer:36} {r['error']}")
            else:
                print(f"{name:15} {peer:36} {r['rows_per_s'] / 1e6:6.2f} Mrows/s "
                      f"accuracy {r['accuracy']:.4f}")
    o = extra["overhead"]
    print(f"per-task overhead {o['seconds_per_task'] * 1e3:.1f} ms; partition size where it "
          f"stops mattering: {extra['partition_sweep']['stops_mattering_at_rows']} rows")
    print(f"total runtime {report['total_runtime_s']:.0f} s; results in "
          f"{out_dir}/distributed.{{json,png}}")
    return report


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"sizes {', '.join(map(str, QUICK_SIZES))} rows, 1 repeat")
    parser.add_argument("--sizes", help="comma-separated numbers of rows")
    parser.add_argument("--repeats", type=int, help="timed runs per measurement (default 3)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild the tables and plot from the JSON in --out")
    args = parser.parse_args(argv)
    if args.report_only:
        path = args.out / "distributed.json"
        report = json.loads(path.read_text())
        report.update(report_tables(report))
        path.write_text(json.dumps(report, indent=2) + "\n")
        plot(report["results"], report["partition_sweep"], args.out / "distributed.png")
        return
    if args.sizes:
        sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    else:
        sizes = list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    repeats = args.repeats or (1 if args.quick else 3)
    run(sizes, repeats, args.out)


if __name__ == "__main__":
    main()
