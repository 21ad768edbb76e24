"""Dual coordinate descent epochs with per-row state in memory and on disk, by chunk size.

Dual coordinate descent keeps one dual variable per row (per-example state). ``LocalEngine``
holds them in memory while all the states of a fit take at most 256 MiB, and in a zarr store
on disk beyond that; on ``DaskEngine`` they live on a scratch zarr store, one array per
partition, which the partition tasks read and write chunk by chunk. A shuffled epoch mixes
the rows of a group of chunks (up to 64 chunks, at most 64 MiB of features) drawn anywhere
in the data, so every chunk it hands on takes rows of each storage chunk of state of its
group: the smaller the chunks, the more storage chunks each one touches.

Each case times one epoch of ``AdditiveSVC``'s dual coordinate descent pass (the hinge,
``C = 1``, B-splines of 10 bases per feature on the fly, one binary model) over a zarr store
of the built-in additive problem (32 float32 features, storage chunks of 65,536 rows), with
``LocalEngine`` and the dual variables in memory, with ``LocalEngine`` and the dual
variables in a zarr store on disk (as a state beyond the memory budget is kept; storage
chunks of 65,536 rows), and with ``DaskEngine`` on a loopback ``LocalCluster`` of 2
single-thread worker processes (2 partitions per worker). Each keeps its own dual
variables from one timed epoch to the next, as a fit's epochs do. After an untimed warm-up
epoch of each, the three take turns for ``--repeats`` epochs; the median is reported.

Run ``python bench/dcd_on_dask.py`` (0.5 and 1 million rows, chunks of 4,096 to 131,072
rows: the default chunk at 32 features; about 3 minutes) or ``--quick``. Results go to
``bench/results/dcd_on_dask.{json,png}``; the stores stay under ``bench/data/dcd_on_dask/``.
``--compare RUN.json`` draws another run's dask epochs (another commit's, run with its
library on ``PYTHONPATH``) in the plot; ``--plot-only`` redraws it from the results.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
# bench/distributed.py would shadow the ``distributed`` package while this folder leads sys.path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR] + [str(BENCH_DIR)]
from machine_info import library_versions, machine_info  # noqa: E402

RESULTS_DIR = BENCH_DIR / "results"
DATA_DIR = BENCH_DIR / "data" / "dcd_on_dask"
SEED = 20261130
N_FEATURES = 32
STORE_CHUNK_ROWS = 65_536
DEFAULT_SIZES = (500_000, 1_000_000)
QUICK_SIZES = (100_000,)
CHUNK_ROWS = (4_096, 16_384, 65_536, 131_072)
QUICK_CHUNK_ROWS = (4_096, 131_072)
ENGINES = ("local", "local, state on disk", "dask 2 workers")


def store(n_rows: int) -> str:
    """The zarr store of ``n_rows`` rows of the additive problem (written once)."""
    import zarr

    from streamlearn.data.synthetic import additive_problem

    root = DATA_DIR / f"n{n_rows}"
    path = root / "data.zarr"
    settings = {"seed": SEED, "n_rows": n_rows, "d": N_FEATURES, "chunk": STORE_CHUNK_ROWS}
    meta = root / "meta.json"
    if meta.exists() and json.loads(meta.read_text()) == settings:
        return str(path)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    group = zarr.open_group(str(path), mode="w", zarr_format=3)
    X = group.create_array("X", shape=(n_rows, N_FEATURES),
                           chunks=(STORE_CHUNK_ROWS, N_FEATURES), dtype="float32")
    y = group.create_array("y", shape=(n_rows,), chunks=(STORE_CHUNK_ROWS,), dtype="int8")
    y.attrs["classes"] = [0, 1]
    for a in range(0, n_rows, STORE_CHUNK_ROWS):
        b = min(a + STORE_CHUNK_ROWS, n_rows)
        X[a:b], y[a:b] = additive_problem(b - a, N_FEATURES, seed=SEED, start=a)
    meta.write_text(json.dumps(settings))
    return str(path)


def epoch_factory(dataset: Any, scratch: Path) -> Any:
    """``make(name)``: one dual coordinate descent epoch pass over ``dataset``, with the
    dual variables that way of running keeps (on disk under ``scratch`` for
    ``"local, state on disk"``)."""
    from streamlearn.data.example_state import ExampleState
    from streamlearn.models.additive import AdditiveSVC, DcdEpochPass, ModelPairs
    from streamlearn.solvers.dcd import HINGE

    X = next(iter(dataset.chunks(4096, prefetch=0))).X
    with warnings.catch_warnings():  # one epoch, to get the feature map and sizes
        warnings.simplefilter("ignore")
        model = AdditiveSVC(n_bases=10, interactions=0, value_terms=False, epochs=1,
                            calibrate=False).fit(X, (X[:, 0] > 0).astype(np.int8))
    rows = model._training_rows(None)
    shape = (1, rows.emb.n_dims + 1)
    alphas: dict[str, Any] = {}

    def make(name: str) -> Any:
        if name not in alphas:
            path = scratch / f"alpha-{len(alphas)}.zarr" if "disk" in name else None
            alphas[name] = ExampleState(dataset.n_rows, shape[0], path=path)
        return DcdEpochPass(rows, ModelPairs.of(2), 1.0, HINGE, 1.0, alphas[name], SEED,
                            np.zeros(shape))
    return make


def measure(sizes: list[int], chunk_sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    from distributed import Client

    import streamlearn as sl
    from streamlearn.engine.dask_engine import DaskEngine
    from streamlearn.engine.local_cluster import local_cluster

    cluster = local_cluster(2)
    client = Client(cluster, set_as_default=False)
    results = []
    try:
        local = sl.LocalEngine(progress=False)
        engines = {"local": local, "local, state on disk": local,
                   "dask 2 workers": DaskEngine(client, progress=False)}
        scratch = Path(tempfile.mkdtemp(prefix="dcd-on-dask-"))
        for n in sizes:
            path = store(n)
            for chunk_rows in chunk_sizes:
                dataset = sl.open_dataset(path, classes=[0, 1], chunk_rows=chunk_rows)
                make = epoch_factory(dataset, scratch)

                def epoch(name: str, dataset: Any = dataset, make: Any = make) -> None:
                    engines[name].run(make(name), dataset, shuffle=True, seed=SEED)

                for name in ENGINES:  # warm-up: kernels loaded, page cache and mirrors made
                    epoch(name)
                times: dict[str, list[float]] = {name: [] for name in ENGINES}
                for rep in range(repeats):
                    k = rep % len(ENGINES)
                    for name in ENGINES[k:] + ENGINES[:k]:
                        t0 = time.perf_counter()
                        epoch(name)
                        times[name].append(time.perf_counter() - t0)
                row: dict[str, Any] = {"n_rows": n, "chunk_rows": chunk_rows}
                for name, secs in times.items():
                    row[name] = {"seconds": statistics.median(secs), "all_seconds": secs,
                                 "rows_per_s": n / statistics.median(secs)}
                memory = row["local"]["seconds"]
                row["disk_over_local"] = row["local, state on disk"]["seconds"] / memory
                row["dask_over_local"] = row["dask 2 workers"]["seconds"] / memory
                results.append(row)
                print(f"{n:>9,} rows, chunks of {chunk_rows:>7,}: local {memory:6.2f} s, "
                      f"state on disk {row['local, state on disk']['seconds']:6.2f} s "
                      f"({row['disk_over_local']:.2f}x), dask "
                      f"{row['dask 2 workers']['seconds']:6.2f} s "
                      f"({row['dask_over_local']:.2f}x)", flush=True)
        engines["dask 2 workers"].close()
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        client.close()
        cluster.close()
    return results


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary and table for ``bench/REPORT.md`` (see bench/README.md)."""
    rows = [[r["n_rows"], r["chunk_rows"], r["local"]["seconds"],
             r.get("local, state on disk", {}).get("seconds"), r["dask 2 workers"]["seconds"],
             r["dask_over_local"]] for r in report["results"]]
    return {
        "title": "Dual coordinate descent epochs: per-row state in memory, on disk, on dask",
        "summary": "One DCD epoch of the additive SVM (per-example dual variables) with "
                   "LocalEngine (state in memory, and on disk) and with DaskEngine on 2 "
                   "loopback workers, as the chunks a pass hands on shrink (more storage "
                   "chunks of state per mixing group).",
        "tables": [{"title": "Seconds per epoch (median)",
                    "columns": ["rows", "chunk rows", "local s", "local, state on disk s",
                                "dask 2 workers s", "dask / local"],
                    "rows": rows}],
        "plots": ["dcd_on_dask.png"],
    }


def plot(results: list[dict[str, Any]], path: Path,
         before: list[dict[str, Any]] | None = None) -> None:
    """Rows/s of an epoch by chunk size, one panel per size; ``before``: another run's
    state on disk and dask epochs (dotted, crosses)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({r["n_rows"] for r in results})
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4), squeeze=False)
    colors = dict(zip(ENGINES, ("tab:gray", "tab:blue", "tab:orange"), strict=True))
    for ax, n in zip(axes[0], sizes, strict=True):
        for run, style, marker, suffix in ((results, "-", "o", ""),
                                           (before or [], ":", "x", ", --compare run")):
            pts = sorted((r["chunk_rows"], r) for r in run if r["n_rows"] == n)
            for name in ENGINES if not suffix else ENGINES[1:]:
                if pts and all(name in r for _, r in pts):
                    ax.plot([c for c, _ in pts], [r[name]["rows_per_s"] / 1e6 for _, r in pts],
                            marker=marker, linestyle=style, color=colors[name],
                            label=name + suffix)
        ax.set_title(f"{n:,} rows x {N_FEATURES} features")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("rows per chunk")
        ax.set_ylabel("Mrows/s, one DCD epoch")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", help="comma-separated numbers of rows")
    parser.add_argument("--chunk-rows", help="comma-separated chunk sizes (rows)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--compare", type=Path,
                        help="another run's dcd_on_dask.json, drawn dotted in the plot")
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the plot from the JSON in --out")
    args = parser.parse_args(argv)
    before = (json.loads(args.compare.read_text())["results"] if args.compare else None)
    if args.plot_only:
        report = json.loads((args.out / "dcd_on_dask.json").read_text())
        plot(report["results"], args.out / "dcd_on_dask.png", before)
        return
    sizes = ([int(float(s)) for s in args.sizes.split(",")] if args.sizes
             else list(QUICK_SIZES if args.quick else DEFAULT_SIZES))
    chunks = ([int(float(s)) for s in args.chunk_rows.split(",")] if args.chunk_rows
              else list(QUICK_CHUNK_ROWS if args.quick else CHUNK_ROWS))
    repeats = 1 if args.quick else args.repeats
    t0 = time.perf_counter()
    results = measure(sizes, chunks, repeats)
    import streamlearn

    report = {"benchmark": "dcd_on_dask", "machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "zarr", "dask", "distributed",
                                            "streamlearn")),
              "library_path": str(Path(streamlearn.__file__).resolve().parent),
              "settings": {"sizes_rows": sizes, "chunk_rows": chunks, "repeats": repeats,
                           "n_features": N_FEATURES, "store_chunk_rows": STORE_CHUNK_ROWS},
              "created": time.strftime("%Y-%m-%d %H:%M:%S"),
              "results": results, "total_runtime_s": time.perf_counter() - t0}
    report.update(report_tables(report))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dcd_on_dask.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(results, args.out / "dcd_on_dask.png", before)
    print(f"results in {args.out}/dcd_on_dask.{{json,png}}")


if __name__ == "__main__":
    main()
