"""I/O ceiling of the ``Dataset`` stream against plain read loops over the same stores.

For each size, one zarr v3 store and one parquet directory holding the same rows are
generated once under ``bench/data/io_throughput/`` (reused when present). Every timed pass
runs in a fresh subprocess, after one untimed warm-up pass in that process (which also puts
the files in the page cache, so timed passes measure decoding and conversion, not the disk);
the methods of a format are run in ``--repeats`` interleaved rounds and the median time is
reported. Peak RSS of the subprocesses is recorded next to their speed.

Methods, all with the same chunk size C:

- zarr ``plain``: ``X[a:a+C]; y[a:a+C]`` over the zarr arrays (numpy out);
- parquet ``read only``: ``ParquetFile.iter_batches(batch_size=C)``, Arrow batches out;
- parquet ``plain``: the same batches converted to a float32 C-contiguous (rows, d) matrix,
  the deliverable the stream gives;
- ``stream p=0`` / ``stream p=2``: ``open_dataset(...).chunks()`` with prefetch 0 and 2
  (validated float32 X, int32 class codes y). The stream reads a zarr store by row range,
  one request per chunk, and with prefetch up to P chunks concurrently (one reader thread
  per CPU at most); a parquet store row group by row group, with prefetch up to P row
  groups decoded concurrently (one thread per CPU at most) while a background thread cuts
  them into chunks.

A cProfile of one stream pass per format (smallest size) shows where the stream's time goes.

**Larger than memory** (full runs; ``--disk-only`` runs this part alone and keeps the
other results): for each format, a store whose files take ``1.25 x`` this machine's
memory on disk, of the same rows (zarr as ``streamlearn convert`` writes it: LZ4 after a
byte shuffle; parquet: snappy), is written; then ``cat`` of its files, two bare stream
passes (one in row order, as ``open_dataset(...).chunks()`` reads; one in shuffled chunk
order, as a fit reads) and one epoch of ``AdditiveSVC`` (linear, and degree-1 B-splines
with ``D0``; ``epochs=1``, no calibration, no pairs, kernels compiled beforehand) take
turns, ``--disk-rounds`` times, each in a fresh process; then the store is deleted. A
page cache cannot hold such a store whole, and before each run the store's files are
dropped from it (``posix_fadvise(POSIX_FADV_DONTNEED)``), so that no run finds what the
run before it left there. Skipped with a message when the disk has no room for it.
Targets: the pass in row order >= 0.8x ``cat``'s rate, each epoch >= 0.8x the shuffled
pass's.

Run ``python bench/io_throughput.py`` (sizes 0.5, 1, 2 GB of float32 features) or
``--quick`` (0.1, 0.25 GB); ``--no-disk`` leaves out the larger-than-memory part and keeps
the one already in the results. Results go to ``bench/results/io_throughput.{json,png}``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from machine_info import library_versions, machine_info, peak_rss_bytes

BENCH_DIR = Path(__file__).resolve().parent
DATA_DIR = BENCH_DIR / "data" / "io_throughput"
RESULTS_DIR = BENCH_DIR / "results"

N_FEATURES = 32
ZARR_CHUNK_ROWS = 1 << 16
ROW_GROUP_ROWS = 1 << 17
N_FILES = 4
#: Rows generated and written at a time (a multiple of the zarr chunk and the row group).
BLOCK_ROWS = 1 << 19
SEED = 20240611
#: Bump when the generated data changes, so stale stores are rebuilt.
DATA_VERSION = 1

DEFAULT_SIZES = (0.5, 1.0, 2.0)
QUICK_SIZES = (0.1, 0.25)
TARGET_RATIO = 0.9

DATA_DESCRIPTION = {
    "summary": "32 float32 features in four families of 8 columns, plus a binary int8 label",
    "measured": "x0-x7: N(0, s_j) with s_j in [0.5, 4], rounded to 2 decimals",
    "smooth": "x8-x15: sin(2 pi row / period_j + phase_j) + N(0, 0.02), rounded to 3 decimals",
    "counts": "x16-x23: Poisson(lambda_j), lambda_j in [0.5, 20], stored as float32",
    "raw": "x24-x31: LogNormal(0, 1) at full float32 precision (incompressible mantissas)",
    "label": "1 if x0 - 0.5 x9 + 0.1 (x16 - lambda_0) + 0.3 log x24 + N(0, 0.5) > 0 else 0",
}

FORMATS = ("zarr", "parquet")
METHODS: dict[str, tuple[str, ...]] = {
    "zarr": ("zarr_plain", "stream_p0", "stream_p2"),
    "parquet": ("arrow_read_only", "arrow_plain", "stream_p0", "stream_p2"),
}
LABELS = {
    "zarr_plain": "plain zarr X[a:a+C]",
    "arrow_read_only": "pyarrow iter_batches, read only",
    "arrow_plain": "pyarrow iter_batches + float32 matrix",
    "stream_p0": "streamlearn stream, prefetch=0",
    "stream_p2": "streamlearn stream, prefetch=2",
}
PLAIN = {"zarr": "zarr_plain", "parquet": "arrow_plain"}


# --------------------------------------------------------------------------- data generation
def feature_names(d: int) -> list[str]:
    """Column names, the same as the zarr source gives an unnamed ``X``: ``x0, x1, ...``."""
    return [f"x{j}" for j in range(d)]


def make_block(start: int, stop: int, d: int = N_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``start:stop`` as a (d, rows) float32 column buffer and int8 labels.

    Values depend only on the global row range, so both formats hold identical rows.
    """
    n = stop - start
    rng = np.random.default_rng([SEED, start])
    groups = np.array_split(np.arange(d), 4)
    cols = np.empty((d, n), dtype=np.float32)
    measured, smooth, counts, raw = groups
    scales = np.linspace(0.5, 4.0, len(measured), dtype=np.float32)[:, None]
    cols[measured] = np.round(rng.standard_normal((len(measured), n), np.float32) * scales, 2)
    t = np.arange(start, stop, dtype=np.float64)[None, :]
    periods = (1000.0 * 1.7 ** np.arange(len(smooth)))[:, None]
    phases = np.linspace(0.0, np.pi, len(smooth))[:, None]
    wave = np.sin(2 * np.pi * t / periods + phases) + rng.normal(0, 0.02, (len(smooth), n))
    cols[smooth] = np.round(wave, 3)
    lambdas = np.geomspace(0.5, 20.0, len(counts))[:, None]
    cols[counts] = rng.poisson(lambdas, (len(counts), n))
    cols[raw] = rng.lognormal(0.0, 1.0, (len(raw), n))
    score = (cols[measured[0]] - 0.5 * cols[smooth[1]] + 0.1 * (cols[counts[0]] - lambdas[0, 0])
             + 0.3 * np.log(cols[raw[0]]) + rng.normal(0, 0.5, n))
    return cols, (score > 0).astype(np.int8)


def file_bounds(n_rows: int) -> list[int]:
    """Row boundaries of the parquet files, aligned to row groups (and so to zarr chunks)."""
    cuts = [round(k * n_rows / N_FILES / ROW_GROUP_ROWS) * ROW_GROUP_ROWS for k in range(N_FILES)]
    return sorted({*(c for c in cuts if c < n_rows), n_rows})


def dir_bytes(path: Path) -> int:
    """Bytes of all files under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def generate(size_gb: float, d: int = N_FEATURES) -> dict[str, Any]:
    """Write (or reuse) the zarr store and parquet directory for one size; describe them."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zarr

    n_rows = int(size_gb * 1e9 // (4 * d))
    root = DATA_DIR / f"d{d}_n{n_rows}"
    zarr_path, parquet_path, meta_path = root / "data.zarr", root / "parquet", root / "meta.json"
    settings = {"version": DATA_VERSION, "seed": SEED, "n_rows": n_rows, "n_features": d,
                "zarr_chunk_rows": ZARR_CHUNK_ROWS, "row_group_rows": ROW_GROUP_ROWS,
                "n_files": N_FILES}
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("settings") == settings:
            return {**meta, "generated_s": None, "reused": True}
    shutil.rmtree(root, ignore_errors=True)
    parquet_path.mkdir(parents=True)
    t0 = time.perf_counter()
    group = zarr.open_group(zarr_path, mode="w", zarr_format=3)
    X = group.create_array("X", shape=(n_rows, d), chunks=(ZARR_CHUNK_ROWS, d), dtype="float32")
    y = group.create_array("y", shape=(n_rows,), chunks=(ZARR_CHUNK_ROWS,), dtype="int8")
    names = feature_names(d)
    schema = pa.schema([*(pa.field(c, pa.float32()) for c in names), pa.field("label", pa.int8())])
    bounds = file_bounds(n_rows)
    for k, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        with pq.ParquetWriter(parquet_path / f"part-{k}.parquet", schema) as writer:
            for a in range(lo, hi, BLOCK_ROWS):
                b = min(a + BLOCK_ROWS, hi)
                cols, labels = make_block(a, b, d)
                X[a:b] = cols.T
                y[a:b] = labels
                table = pa.Table.from_arrays([*map(pa.array, cols), pa.array(labels)],
                                             schema=schema)
                writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
    generated_s = time.perf_counter() - t0
    meta = {
        "settings": settings,
        "zarr": {"path": str(zarr_path), "disk_bytes": dir_bytes(zarr_path),
                 "X_codecs": [c.to_dict() for c in X.metadata.codecs]},
        "parquet": {"path": str(parquet_path), "disk_bytes": dir_bytes(parquet_path),
                    "files": len(bounds) - 1,
                    "compression": pq.ParquetFile(parquet_path / "part-0.parquet")
                    .metadata.row_group(0).column(0).compression},
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    return {**meta, "generated_s": generated_s, "reused": False}


# ------------------------------------------------------------ a store larger than memory
#: The store of the larger-than-memory part: its bytes on disk, as a share of the memory.
DISK_SHARE = 1.25
#: Rows per parquet file of that store (a multiple of ``BLOCK_ROWS``).
FILE_ROWS = 1 << 24
#: The fits whose one epoch over that store is timed (each after a warm-up on a few rows).
DISK_FITS = {
    "linear": {"embedding": "linear"},
    "bspline_d0": {"embedding": "bspline", "degree": 1, "n_bases": 20, "penalty_order": 0},
}
DISK_TARGET = 0.8


def write_disk_store(fmt: str, path: Path, disk_bytes: float, compression: str
                     ) -> dict[str, Any]:
    """Rows of :func:`make_block` until the store holds ``disk_bytes`` on disk: a zarr
    store (by ``convert``'s codec ``compression``) or a parquet directory (snappy, one file
    per ``FILE_ROWS`` rows). The size on disk, not the rows, is what a page cache holds."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zarr

    from streamlearn.data.convert import compressors

    shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    n_rows = 0
    codecs: dict[str, str] = {}
    if fmt == "zarr":
        group = zarr.open_group(path, mode="w", zarr_format=3)
        capacity = BLOCK_ROWS * 1024
        # "auto" judges each array on its first storage chunk, as ``convert`` does
        first_cols, first_labels = make_block(0, ZARR_CHUNK_ROWS)
        x_codecs = compressors(compression, np.float32, first_cols.T)
        y_codecs = compressors(compression, np.int8, first_labels)
        kind = "zstd" if compression == "zstd" else "lz4"
        codecs = {"X": kind if x_codecs else "none", "y": kind if y_codecs else "none"}
        X = group.create_array("X", shape=(capacity, N_FEATURES),
                               chunks=(ZARR_CHUNK_ROWS, N_FEATURES), dtype="float32",
                               compressors=x_codecs)
        y = group.create_array("y", shape=(capacity,), chunks=(ZARR_CHUNK_ROWS,), dtype="int8",
                               compressors=y_codecs)
        while dir_bytes(path) < disk_bytes and n_rows < capacity:
            for _ in range(16):  # measure the directory now and then, not every block
                cols, labels = make_block(n_rows, n_rows + BLOCK_ROWS)
                X[n_rows:n_rows + BLOCK_ROWS] = cols.T
                y[n_rows:n_rows + BLOCK_ROWS] = labels
                n_rows += BLOCK_ROWS
        X.resize((n_rows, N_FEATURES))
        y.resize((n_rows,))
    else:
        path.mkdir(parents=True)
        names = feature_names(N_FEATURES)
        schema = pa.schema([*(pa.field(c, pa.float32()) for c in names),
                            pa.field("label", pa.int8())])
        k = 0
        while dir_bytes(path) < disk_bytes:
            with pq.ParquetWriter(path / f"part-{k:04d}.parquet", schema) as writer:
                for _ in range(FILE_ROWS // BLOCK_ROWS):
                    cols, labels = make_block(n_rows, n_rows + BLOCK_ROWS)
                    writer.write_table(pa.Table.from_arrays(
                        [*map(pa.array, cols), pa.array(labels)], schema=schema),
                        row_group_size=ROW_GROUP_ROWS)
                    n_rows += BLOCK_ROWS
            k += 1
    return {"format": fmt, "path": str(path), "rows": n_rows, "disk_bytes": dir_bytes(path),
            "feature_bytes": n_rows * N_FEATURES * 4, "write_s": time.perf_counter() - t0,
            "compression": compression if fmt == "zarr" else "snappy", "codecs": codecs}


def disk_child(what: str, fmt: str, path: str, chunk_rows: int) -> dict[str, Any]:
    """In a fresh process: one bare stream pass or one epoch of a fit over the store."""
    from streamlearn import open_dataset
    from streamlearn.models import AdditiveSVC

    ds = open_dataset(path, target="label" if fmt == "parquet" else None,
                      chunk_rows=chunk_rows, classes=[0, 1])
    out: dict[str, Any] = {"what": what}
    cols, labels = make_block(0, 2000)  # load the stream's compiled checks before timing
    for _ in open_dataset(np.ascontiguousarray(cols.T), target=labels).chunks():
        pass
    if what in ("bare", "bare_in_order"):
        t0 = time.perf_counter()
        rows = sum(chunk.n_rows for chunk in ds.chunks(shuffle=what == "bare", seed=0))
        out["wall_s"] = time.perf_counter() - t0
        out["rows"] = rows
    else:
        options = dict(DISK_FITS[what], epochs=1, tol=None, calibrate=False, interactions=0,
                       random_state=0, progress=False)
        AdditiveSVC(**options).fit(np.ascontiguousarray(cols.T), labels)  # and the kernels
        model = AdditiveSVC(**options)
        t0 = time.perf_counter()
        model.fit(ds)
        out["wall_s"] = time.perf_counter() - t0
        out["rows"] = ds.n_rows
        out["n_passes"] = float(model.n_passes_)
    out["rows_per_s"] = out["rows"] / out["wall_s"]
    out["peak_rss_bytes"] = peak_rss_bytes()
    return out


def drop_from_page_cache(path: Path) -> None:
    """Ask the kernel to drop the store's files from the page cache
    (``posix_fadvise(POSIX_FADV_DONTNEED)``; a no-op where that call does not exist), so
    that every run reads the whole store from disk, whatever the run before it left."""
    if not hasattr(os, "posix_fadvise"):
        return
    for f in path.rglob("*"):
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def read_files(path: Path) -> dict[str, Any]:
    """``cat`` of every file of the store, in order, to /dev/null: the disk's sequential rate."""
    files = sorted(str(f) for f in path.rglob("*") if f.is_file())
    t0 = time.perf_counter()
    for start in range(0, len(files), 500):
        subprocess.run(["cat", *files[start:start + 500]], stdout=subprocess.DEVNULL,
                       check=True)
    seconds = time.perf_counter() - t0
    return {"what": "cat", "wall_s": seconds, "bytes": dir_bytes(path),
            "mb_per_s": dir_bytes(path) / seconds / 1e6}


def disk_part(fmt: str, size_gb: float | None, chunk_rows: int, rounds: int,
              compression: str) -> dict[str, Any]:
    """Write a store larger than memory, time ``cat``, a bare pass and the fits' epochs
    in turn (``rounds`` times, each in a fresh process), delete it."""
    import psutil

    memory = psutil.virtual_memory().total
    disk_bytes = size_gb * 1e9 if size_gb else DISK_SHARE * memory
    path = DATA_DIR / f"larger_than_memory.{fmt}"
    existing = next(p for p in (DATA_DIR, *DATA_DIR.parents) if p.exists())
    free = shutil.disk_usage(existing).free
    out: dict[str, Any] = {"format": fmt, "memory_bytes": memory,
                           "planned_disk_bytes": disk_bytes,
                           "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           "versions": library_versions()}
    if free < disk_bytes + 5e9:
        out["skipped"] = (f"{free / 1e9:.0f} GB free on the disk; the store needs "
                          f"{disk_bytes / 1e9:.0f} GB and 5 GB to spare")
        log(f"larger than memory, {fmt}: skipped: {out['skipped']}")
        return out
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    try:
        out["store"] = write_disk_store(fmt, path, disk_bytes, compression)
        log(f"larger than memory, {fmt}: {out['store']['rows']:,d} rows, "
            f"{out['store']['disk_bytes'] / 1e9:.1f} GB on disk "
            f"(memory {memory / 2**30:.1f} GiB), written in {out['store']['write_s']:.0f} s")
        out["runs"] = []
        for r in range(rounds):
            for what in ("cat", "bare_in_order", "bare", *DISK_FITS):
                drop_from_page_cache(path)
                if what == "cat":
                    m = read_files(path)
                else:
                    m = child_json(["--disk-child", what, "--format", fmt, "--path",
                                    str(path), "--chunk-rows", str(chunk_rows)],
                                   f"{what} over {path}")
                m["round"] = r
                out["runs"].append(m)
                log(f"  round {r + 1}: {what:13s} {m['wall_s']:6.1f} s")
        out["summary"] = disk_summary(out["runs"])
        s = out["summary"]
        log(f"  bare pass in order / cat {s['bare_in_order_over_cat']:.2f}; "
            f"shuffled / cat {s['bare_over_cat']:.2f}; "
            + "; ".join(f"{w} epoch / bare pass {s[w + '_over_bare']:.2f}" for w in DISK_FITS))
    finally:
        shutil.rmtree(path, ignore_errors=True)
        out["deleted"] = not path.exists()
    return out


def disk_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median seconds of each run kind and the rate ratios the targets compare."""
    median = {w: statistics.median(m["wall_s"] for m in runs if m["what"] == w)
              for w in dict.fromkeys(m["what"] for m in runs)}
    out: dict[str, Any] = {f"{w}_s": s for w, s in median.items()}
    # rate ratios (time of the reference / time of the run); the target's bare pass is the
    # pass in row order, as `open_dataset(...).chunks()` reads; the fits read shuffled,
    # so their epochs are set against the shuffled pass
    if "bare_in_order" in median:
        out["bare_in_order_over_cat"] = median["cat"] / median["bare_in_order"]
    out["bare_over_cat"] = median["cat"] / median["bare"]
    for w in DISK_FITS:
        out[f"{w}_over_bare"] = median["bare"] / median[w]
    out["target"] = DISK_TARGET
    out["met"] = bool(out.get("bare_in_order_over_cat", out["bare_over_cat"]) >= DISK_TARGET
                      and all(out[f"{w}_over_bare"] >= DISK_TARGET for w in DISK_FITS))
    return out


# ------------------------------------------------------------------------ one measured method
def _rss_bytes() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)



def arrow_matrix(batch: Any, names: list[str]) -> np.ndarray:
    """Columns of an Arrow batch as a float32 C-contiguous (rows, d) matrix.

    Each column is copied into a row of a (d, rows) buffer, then transposed in one copy: the
    fastest of the plain numpy/pyarrow ways tried (``RecordBatch.to_tensor``,
    ``np.column_stack``, strided column assignment) at this shape.
    """
    buf = np.empty((len(names), batch.num_rows), dtype=np.float32)
    for j, name in enumerate(names):
        buf[j] = batch.column(name).to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(buf.T)


def pass_function(method: str, fmt: str, path: str, chunk_rows: int) -> Callable[[], tuple]:
    """Open the store for ``method`` and return a function doing one full pass.

    The pass returns ``(rows, label_sum, first_row_sum)`` so every method can be checked to
    deliver the same rows.
    """
    names = feature_names(N_FEATURES)
    C = chunk_rows
    if method == "zarr_plain":
        import zarr

        group = zarr.open_group(path, mode="r")
        X, y = group["X"], group["y"]
        n = X.shape[0]

        def zarr_pass() -> tuple:
            rows, label_sum, first = 0, 0, None
            for a in range(0, n, C):
                xb, yb = X[a:a + C], y[a:a + C]
                rows += xb.shape[0]
                label_sum += int(yb.sum(dtype=np.int64))
                first = float(xb[0].sum()) if first is None else first
            return rows, label_sum, first

        return zarr_pass
    if method.startswith("arrow_"):
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        files = sorted(Path(path).glob("*.parquet"))
        convert = method == "arrow_plain"

        def arrow_pass() -> tuple:
            rows, label_sum, first = 0, 0, None
            for f in files:
                pf = pq.ParquetFile(f)
                for batch in pf.iter_batches(batch_size=C, columns=[*names, "label"]):
                    if convert:
                        xb = arrow_matrix(batch, names)
                        yb = batch.column("label").to_numpy()
                        label_sum += int(yb.sum(dtype=np.int64))
                        first = float(xb[0].sum()) if first is None else first
                    else:
                        label_sum += pc.sum(batch.column("label")).as_py()
                    rows += batch.num_rows
            return rows, label_sum, first

        return arrow_pass
    if method.startswith("stream_p"):
        from streamlearn import open_dataset

        ds = open_dataset(path, target="label" if fmt == "parquet" else None,
                          chunk_rows=C, prefetch=int(method.removeprefix("stream_p")),
                          classes=[0, 1])

        def stream_pass() -> tuple:
            rows, label_sum, first = 0, 0, None
            for chunk in ds.chunks():
                rows += chunk.n_rows
                label_sum += int(chunk.y.sum(dtype=np.int64))
                first = float(chunk.X[0].sum()) if first is None else first
            return rows, label_sum, first

        return stream_pass
    raise ValueError(f"unknown method {method!r}")


def measure(method: str, fmt: str, path: str, chunk_rows: int, passes: int) -> dict[str, Any]:
    """One untimed warm-up pass, then ``passes`` timed passes of one method, in this process."""
    rss_imports = _rss_bytes()
    t0 = time.perf_counter()
    one_pass = pass_function(method, fmt, path, chunk_rows)
    open_s = time.perf_counter() - t0
    rss_open = _rss_bytes()
    t0 = time.perf_counter()
    check = one_pass()
    warmup_s = time.perf_counter() - t0
    times = []
    for _ in range(passes):
        t0 = time.perf_counter()
        again = one_pass()
        times.append(time.perf_counter() - t0)
        if again != check:
            raise RuntimeError(f"{method}: passes disagree: {again} vs {check}")
    return {
        "open_s": open_s,
        "warmup_s": warmup_s,
        "times_s": times,
        "rows": check[0],
        "label_sum": check[1],
        "first_row_sum": check[2],
        "rss_after_imports_bytes": rss_imports,
        "rss_before_read_bytes": rss_open,
        "peak_rss_bytes": peak_rss_bytes(),
    }


def measure_in_subprocess(method: str, fmt: str, path: str, chunk_rows: int,
                          passes: int = 1) -> dict[str, Any]:
    """Run :func:`measure` in a fresh Python process and return its result."""
    return child_json(["--measure", method, "--format", fmt, "--path", path,
                       "--chunk-rows", str(chunk_rows), "--repeats", str(passes)],
                      f"{method} on {path}")


def child_json(arguments: list[str], what: str) -> dict[str, Any]:
    """Run this script with ``arguments`` in a fresh process; the JSON of its last line."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *arguments]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def profile_stream(fmt: str, path: str, chunk_rows: int,
                   top: int = 16) -> dict[str, list[dict[str, Any]]]:
    """cProfile of one stream pass (prefetch=0, so all work is in this thread) after a warm-up.

    Returns the ``top`` functions by own time and by cumulative time. Time spent waiting
    for a reader's worker threads (zarr decodes in its own threads) shows as lock waits.
    """
    import cProfile
    import pstats

    from streamlearn import open_dataset

    ds = open_dataset(path, target="label" if fmt == "parquet" else None,
                      chunk_rows=chunk_rows, prefetch=0, classes=[0, 1])
    for _ in ds.chunks():
        pass
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in ds.chunks():
        pass
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = [{"function": f"{Path(file).name}:{line}({name})", "calls": nc,
             "cumulative_s": ct, "own_s": tt}
            for (file, line, name), (_, nc, tt, ct, _) in stats.items()]
    return {"by_own_time": sorted(rows, key=lambda r: -r["own_s"])[:top],
            "by_cumulative_time": sorted(rows, key=lambda r: -r["cumulative_s"])[:top]}


# ----------------------------------------------------------------------------------- report
def summarise(subruns: list[dict[str, Any]], n_rows: int, d: int) -> dict[str, Any]:
    """Median (and best) time, rows/s, GB/s of float32 features delivered, peak RSS."""
    times = [t for m in subruns for t in m["times_s"]]
    median, best = statistics.median(times), min(times)
    gb = n_rows * d * 4 / 1e9
    return {
        "median_s": median,
        "best_s": best,
        "rows_per_s": n_rows / median,
        "gb_per_s": gb / median,
        "best_rows_per_s": n_rows / best,
        "peak_rss_mib": max(m["peak_rss_bytes"] for m in subruns) / 2**20,
        "rss_before_read_mib": max(m["rss_before_read_bytes"] for m in subruns) / 2**20,
    }


def ratios(runs: dict[str, dict[str, Any]], fmt: str) -> dict[str, Any]:
    """Stream rate over the plain loop's rate for one format and size (medians; best too)."""
    plain = runs[PLAIN[fmt]]
    out: dict[str, Any] = {"baseline": PLAIN[fmt]}
    for p in ("stream_p0", "stream_p2"):
        out[f"{p}_over_plain"] = runs[p]["rows_per_s"] / plain["rows_per_s"]
    best = max(("stream_p0", "stream_p2"), key=lambda p: runs[p]["rows_per_s"])
    out["best_stream"] = best
    out["best_over_plain"] = runs[best]["rows_per_s"] / plain["rows_per_s"]
    out["best_over_plain_from_fastest_passes"] = max(
        runs[p]["best_rows_per_s"] for p in ("stream_p0", "stream_p2")
    ) / plain["best_rows_per_s"]
    if fmt == "parquet":
        out["best_over_read_only"] = (runs[best]["rows_per_s"]
                                      / runs["arrow_read_only"]["rows_per_s"])
    out["meets_target"] = out["best_over_plain"] >= TARGET_RATIO
    return out


def print_table(results: list[dict[str, Any]], repeats: int) -> None:
    """A readable table of every measurement and the stream/plain ratios."""
    head = (f"{'format':8} {'GB':>5} {'rows':>9}  {'method':38} {'median s':>8} "
            f"{'Mrows/s':>7} {'GB/s':>5} {'best':>6} {'RSS0':>5} {'peak':>5} {'/plain':>6}")
    print(head)
    print("-" * len(head))
    for r in results:
        plain = r["runs"][PLAIN[r["format"]]]["rows_per_s"]
        for method in METHODS[r["format"]]:
            s = r["runs"][method]
            print(f"{r['format']:8} {r['size_gb']:5.2f} {r['n_rows']:9d}  {LABELS[method]:38} "
                  f"{s['median_s']:8.3f} {s['rows_per_s'] / 1e6:7.2f} {s['gb_per_s']:5.2f} "
                  f"{s['best_rows_per_s'] / 1e6:6.2f} {s['rss_before_read_mib']:5.0f} "
                  f"{s['peak_rss_mib']:5.0f} {s['rows_per_s'] / plain:6.2f}")
        q = r["ratios"]
        print(f"{'':25}best stream / plain = {q['best_over_plain']:.2f} ({q['best_stream']}; "
              f"{q['best_over_plain_from_fastest_passes']:.2f} from the fastest passes) -> "
              f"{'meets' if q['meets_target'] else 'BELOW'} the {TARGET_RATIO:.0%} target; "
              f"{r['disk_bytes'] / 1e6:.0f} MB on disk "
              f"({r['disk_bytes'] / r['feature_bytes']:.0%} of the float32 bytes)")
    print(f"Mrows/s, GB/s: median of {repeats} timed passes, each in a fresh process after one "
          "untimed warm-up pass (files in the page cache); best: fastest pass (Mrows/s);\n"
          "RSS0: RSS in MiB after imports and opening the store; peak: peak RSS in MiB; "
          "GB = 1e9 bytes of float32 features delivered.")


def print_profile(profile: dict[str, Any], lines: int = 10) -> None:
    """The functions with the most own time in each stream profile."""
    for fmt, tables in profile["functions"].items():
        print(f"\nprofile of one {fmt} stream pass ({profile['size_gb']} GB, prefetch=0), "
              "by own time:")
        print(f"{'cumulative s':>12} {'own s':>7} {'calls':>6}  function")
        for row in tables["by_own_time"][:lines]:
            print(f"{row['cumulative_s']:12.3f} {row['own_s']:7.3f} {row['calls']:6d}  "
                  f"{row['function']}")


def plot(results: list[dict[str, Any]], path: Path, chunk_rows: int) -> None:
    """Rows/s (top) and peak RSS (bottom) against size, one panel per format."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True)
    for col, fmt in enumerate(FORMATS):
        rows = sorted((r for r in results if r["format"] == fmt), key=lambda r: r["size_gb"])
        sizes = [r["size_gb"] for r in rows]
        for method in METHODS[fmt]:
            style = "--" if method == "arrow_read_only" else "-"
            axes[0, col].plot(sizes, [r["runs"][method]["rows_per_s"] / 1e6 for r in rows],
                              style, marker="o", label=LABELS[method])
            axes[1, col].plot(sizes, [r["runs"][method]["peak_rss_mib"] for r in rows],
                              style, marker="o", label=LABELS[method])
        axes[0, col].set_title(f"{fmt}: rows/s (median, page cache warm)")
        axes[0, col].set_ylabel("million rows / s")
        axes[0, col].set_ylim(bottom=0)
        axes[0, col].legend(fontsize=8)
        axes[1, col].set_title(f"{fmt}: peak RSS of the reading process")
        axes[1, col].set_ylabel("MiB")
        axes[1, col].set_ylim(bottom=0)
        axes[1, col].set_xlabel(f"GB of float32 features ({N_FEATURES} columns)")
    fig.suptitle(f"Read throughput, chunks of {chunk_rows} rows")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def disk_table(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The larger-than-memory part as a report table."""
    rows = []
    for part in parts:
        if "skipped" in part:
            rows.append([part["format"], None, None, None, None, None, None, part["skipped"]])
            continue
        s, store = part["summary"], part["store"]
        in_order = s.get("bare_in_order_s")
        rows.append([part["format"], round(store["disk_bytes"] / 1e9, 1),
                     round(s["cat_s"], 1), None if in_order is None else round(in_order, 1),
                     round(s["bare_s"], 1), round(s["linear_s"], 1),
                     round(s["bspline_d0_s"], 1),
                     None if in_order is None else round(s["bare_in_order_over_cat"], 2),
                     round(s["bare_over_cat"], 2),
                     f"linear {s['linear_over_bare']:.2f}, D0 {s['bspline_d0_over_bare']:.2f}"])
    return {"title": "A store larger than memory: cat, bare passes and one epoch (median s)",
            "columns": ["format", "GB on disk", "cat s", "bare pass in order s",
                        "bare pass shuffled s", "linear epoch s", "degree-1 D0 epoch s",
                        "in order / cat (rate)", "shuffled / cat (rate)",
                        "epoch / shuffled pass (rate)"],
            "rows": rows,
            "notes": f"store of {DISK_SHARE}x the machine's memory; each run in a fresh "
                     "process, the runs taking turns; targets >= "
                     f"{DISK_TARGET} for the pass in order against cat and for each epoch "
                     "against the shuffled pass (the order a fit reads in)."}


def report_tables(report: dict[str, Any]) -> dict[str, Any]:
    """Title, summary and tables of a result for ``bench/REPORT.md`` (see bench/README.md)."""
    rows = []
    for r in report["results"]:
        runs, q = r["runs"], r["ratios"]
        plain = runs[PLAIN[r["format"]]]
        best = runs[q["best_stream"]]
        rows.append([r["format"], r["size_gb"], plain["rows_per_s"] / 1e6,
                     runs["stream_p0"]["rows_per_s"] / 1e6, runs["stream_p2"]["rows_per_s"] / 1e6,
                     q["best_over_plain"], plain["peak_rss_mib"], best["peak_rss_mib"]])
    met = sum(r["ratios"]["meets_target"] for r in report["results"])
    return {
        "title": "I/O ceiling of the stream",
        "summary": (f"`open_dataset(...).chunks()` against plain read loops over the same zarr "
                    f"and parquet stores ({report['settings']['n_features']} float32 features, "
                    f"chunks of {report['settings']['chunk_rows']} rows, page cache warm, "
                    f"median of {report['settings']['repeats']} passes in fresh processes). "
                    f"Target: {report['settings']['target']}; met at {met} of "
                    f"{len(report['results'])} format/size points."),
        "tables": [{
            "title": "Rows/s (millions) and peak RSS (MiB) by format and size",
            "columns": ["format", "GB", "plain Mrows/s", "stream p=0", "stream p=2",
                        "best stream / plain", "peak RSS plain", "peak RSS best stream"],
            "rows": rows,
            "notes": "plain: zarr `X[a:a+C]` or pyarrow `iter_batches` into a float32 matrix; "
                     "p: chunks read ahead.",
        }, *([disk_table(report["larger_than_memory"])]
             if report.get("larger_than_memory") else [])],
        "plots": ["io_throughput.png"],
    }


# ------------------------------------------------------------------------------------- main
def measure_format(fmt: str, path: str, n_rows: int, chunk_rows: int,
                   repeats: int) -> dict[str, list[dict[str, Any]]]:
    """Every method of one format, ``repeats`` rounds, method order rotated each round.

    Interleaving the rounds spreads slow phases of a shared machine over all methods
    instead of penalising whichever happened to run during one.
    """
    methods = METHODS[fmt]
    raw: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
    for r in range(repeats):
        k = r % len(methods)
        for method in (*methods[k:], *methods[:k]):
            m = measure_in_subprocess(method, fmt, path, chunk_rows)
            if m["rows"] != n_rows:
                raise RuntimeError(f"{method} read {m['rows']} rows, expected {n_rows}")
            raw[method].append(m)
    labels = {m["label_sum"] for runs in raw.values() for m in runs}
    firsts = {m["first_row_sum"] for runs in raw.values() for m in runs
              if m["first_row_sum"] is not None}
    if len(labels) != 1 or len(firsts) != 1:
        raise RuntimeError(f"methods delivered different data for {fmt}: "
                           f"label sums {labels}, first-row sums {firsts}")
    return raw


def run_disk_only(disk: tuple[float | None, int, str, tuple[str, ...]], chunk_rows: int,
                  out_dir: Path) -> dict[str, Any]:
    """The larger-than-memory part alone, added to the results already in ``out_dir``
    (replacing the parts of the formats measured again)."""
    path = out_dir / "io_throughput.json"
    report = json.loads(path.read_text()) if path.exists() else None
    if report is None:
        raise SystemExit(f"{path} does not exist: run the whole benchmark first")
    gb, rounds, compression, formats = disk
    # a format measured again replaces its earlier part; the other formats' parts stay
    kept = [part for part in report.get("larger_than_memory", [])
            if part.get("format") not in formats]
    report["larger_than_memory"] = kept + [disk_part(fmt, gb, chunk_rows, rounds, compression)
                                           for fmt in formats]
    report["larger_than_memory_machine"] = machine_info()
    report["larger_than_memory_versions"] = library_versions()
    report.update(report_tables(report))
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["larger_than_memory"], indent=1))
    return report


def run(sizes: list[float], chunk_rows: int, repeats: int, out_dir: Path,
        disk: tuple[float | None, int, str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """Generate data, measure every method on every size, write JSON and PNG results."""
    t_start = time.perf_counter()
    results: list[dict[str, Any]] = []
    stores: list[dict[str, Any]] = []
    profile: dict[str, Any] = {}
    for size in sizes:
        log(f"data for {size} GB ...")
        meta = generate(size)
        stores.append({"size_gb": size, **meta})
        n_rows = meta["settings"]["n_rows"]
        log(f"  {n_rows} rows; " + ("reused" if meta["reused"]
                                    else f"generated in {meta['generated_s']:.0f} s"))
        if not profile:
            profile = {"size_gb": size, "functions": {
                fmt: profile_stream(fmt, meta[fmt]["path"], chunk_rows) for fmt in FORMATS}}
        for fmt in FORMATS:
            raw = measure_format(fmt, meta[fmt]["path"], n_rows, chunk_rows, repeats)
            runs = {method: summarise(subruns, n_rows, N_FEATURES)
                    for method, subruns in raw.items()}
            for method, s in runs.items():
                log(f"  {fmt:8} {LABELS[method]:38} {s['rows_per_s'] / 1e6:6.2f} Mrows/s  "
                    f"peak {s['peak_rss_mib']:5.0f} MiB")
            results.append({"format": fmt, "size_gb": size, "n_rows": n_rows,
                            "feature_bytes": n_rows * N_FEATURES * 4,
                            "disk_bytes": meta[fmt]["disk_bytes"],
                            "runs": runs, "raw": raw, "ratios": ratios(runs, fmt)})
    total_s = time.perf_counter() - t_start
    report = {
        "benchmark": "io_throughput",
        "machine": machine_info(),
        "versions": library_versions(),
        "settings": {
            "sizes_gb": sizes,
            "chunk_rows": chunk_rows,
            "repeats": repeats,
            "n_features": N_FEATURES,
            "timing": (f"{repeats} rounds; in each, every method runs in a fresh subprocess: "
                       "one untimed warm-up pass (files in the page cache afterwards), then one "
                       "timed pass; method order rotated per round; the median time is reported"),
            "gb": "1e9 bytes of float32 feature values delivered (rows x features x 4)",
            "peak_rss": "VmHWM of the measuring subprocess (max over rounds), warm-up included",
            "zarr_layout": f"X float32 (n, {N_FEATURES}) chunks ({ZARR_CHUNK_ROWS}, "
                           f"{N_FEATURES}), default zstd codec; y int8 chunks ({ZARR_CHUNK_ROWS},)",
            "parquet_layout": f"{N_FILES} files, row groups of {ROW_GROUP_ROWS} rows, "
                              f"{N_FEATURES} float32 columns + label int8, default snappy",
            "stream": "open_dataset(path, chunk_rows=C, prefetch=P, classes=[0, 1]), "
                      "nan_policy='raise' (every chunk is checked for NaN/inf); zarr: one "
                      "read per chunk, up to P chunks read concurrently (at most one thread "
                      "per CPU); parquet: up to P row groups decoded concurrently (at most "
                      "one thread per CPU), cut into chunks in one background thread",
            "plain_conversion": "per column into a (d, rows) buffer, then one transposing copy",
            "data": DATA_DESCRIPTION,
            "target": f"best stream >= {TARGET_RATIO:.0%} of the plain loop's rows/s",
        },
        "stores": stores,
        "results": results,
        "ratios": [{"format": r["format"], "size_gb": r["size_gb"], **r["ratios"]}
                   for r in results],
        "stream_profile": profile,
        "total_runtime_s": total_s,
    }
    if disk is not None:
        gb, rounds, compression, formats = disk
        report["larger_than_memory"] = [disk_part(fmt, gb, chunk_rows, rounds, compression)
                                        for fmt in formats]
    elif (out_dir / "io_throughput.json").exists():  # --no-disk keeps the part measured
        earlier = json.loads((out_dir / "io_throughput.json").read_text())
        for key in ("larger_than_memory", "larger_than_memory_machine",
                    "larger_than_memory_versions"):
            if key in earlier:
                report[key] = earlier[key]
    report.update(report_tables(report))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "io_throughput.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(results, out_dir / "io_throughput.png", chunk_rows)
    print_table(results, repeats)
    print_profile(profile)
    print(f"\ntotal runtime {total_s:.0f} s; results in {out_dir}/io_throughput.{{json,png}}")
    return report


def log(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


def iter_sizes(text: str) -> Iterator[float]:
    """Parse ``--sizes 0.5,1,2``."""
    for part in text.split(","):
        if part.strip():
            yield float(part)


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"sizes {', '.join(map(str, QUICK_SIZES))} GB")
    parser.add_argument("--sizes", help="comma-separated GB of float32 features, e.g. 0.5,1,2")
    parser.add_argument("--chunk-rows", type=int, default=1 << 16, help="rows per chunk C")
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed passes per method (one per fresh process)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    parser.add_argument("--no-disk", action="store_true",
                        help="skip the part over a store larger than memory (keeping the "
                             "one already in --out)")
    parser.add_argument("--disk-only", action="store_true",
                        help="run only that part (the other results are kept)")
    parser.add_argument("--disk-gb", type=float, default=None,
                        help="GB on disk of that store (default: 1.25x the memory)")
    parser.add_argument("--disk-rounds", type=int, default=2)
    parser.add_argument("--disk-formats", default=",".join(FORMATS),
                        help="formats of that part, e.g. zarr")
    parser.add_argument("--disk-compression", default="lz4",
                        choices=("lz4", "auto", "zstd", "none"),
                        help="the zarr store's codec, as `streamlearn convert --compression`: "
                             "lz4 (the recorded run), auto (convert's default), zstd, none")
    parser.add_argument("--disk-child", help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--format", choices=FORMATS, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.disk_child:
        print(json.dumps(disk_child(args.disk_child, args.format, args.path, args.chunk_rows)))
        return
    if args.measure:
        result = measure(args.measure, args.format, args.path, args.chunk_rows, args.repeats)
        print(json.dumps(result))
        return
    if args.sizes:
        sizes = list(iter_sizes(args.sizes))
    else:
        sizes = list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    formats = tuple(f for f in args.disk_formats.split(",") if f)
    disk = None if args.quick or args.no_disk else (args.disk_gb, args.disk_rounds,
                                                    args.disk_compression, formats)
    if args.disk_only:
        run_disk_only(disk or (args.disk_gb, args.disk_rounds, args.disk_compression, formats),
                      args.chunk_rows, args.out)
        return
    run(sizes, args.chunk_rows, args.repeats, args.out, disk)


if __name__ == "__main__":
    main()
