"""What ``streamlearn convert``'s compressions cost: store size, decoding rate, stream rate.

For each kind of data, the same rows are written by :func:`streamlearn.data.convert.convert`
with each ``compression`` ("auto", "lz4", "zstd", "none"), then, in this process and with the
files in the page cache (so the figures measure decoding, not the disk):

- ``size``: the store's bytes over the raw float32 (and int32 column index) bytes;
- ``decode``: the feature arrays read whole by zarr (``X``, or ``indices`` and ``data``),
  raw MB per second, best of ``--repeats``;
- ``stream``: one pass of ``open_dataset(store).chunks()`` (validated chunks, prefetch 2,
  shuffled as a fit reads them), rows per second, best of ``--repeats``.

Data: ``normal``, 1M rows x 32 normal float32 features (noisy measurements: every
mantissa bit random); ``images``, MNIST's 60,000 training images as float32 pixel values
(from ``$STREAMLEARN_DATA/mnist.npz``; skipped without it); ``sparse``, 300,000 rows x
1,000,000 columns, about 80 entries a row at Zipf-distributed columns, values uniform in
(0, 1) (the CSR layout). Run ``python bench/codecs.py`` (``--quick``: a fifth of the
rows); results go to ``bench/results/codecs.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from machine_info import library_versions, machine_info

RESULTS_DIR = Path(__file__).resolve().parent / "results"
COMPRESSIONS = ("auto", "lz4", "zstd", "none")
SEED = 20261126


def normal_rows(n: int = 1_000_000, d: int = 32) -> tuple[Any, np.ndarray]:
    rng = np.random.default_rng(SEED)
    return rng.normal(size=(n, d)).astype(np.float32), rng.integers(0, 2, n)


def image_rows() -> tuple[Any, np.ndarray] | None:
    path = Path(os.environ.get("STREAMLEARN_DATA", "")) / "mnist.npz"
    if not os.environ.get("STREAMLEARN_DATA") or not path.exists():
        return None
    with np.load(path) as data:
        X = data["X_train"]
        return X.reshape(X.shape[0], -1).astype(np.float32), data["y_train"]


def sparse_rows(n: int = 300_000, d: int = 1_000_000, per_row: int = 80) -> tuple[Any, np.ndarray]:
    from scipy import sparse

    rng = np.random.default_rng(SEED)
    cols = np.minimum(rng.zipf(1.3, size=(n, per_row)) - 1, d - 1)
    cols = (cols * 7919) % d  # frequent columns spread over the range, as hashed ids are
    cols.sort(axis=1)
    keep = np.ones_like(cols, dtype=bool)
    keep[:, 1:] = cols[:, 1:] != cols[:, :-1]
    counts = keep.sum(axis=1)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    matrix = sparse.csr_array((rng.random(int(indptr[-1]), dtype=np.float32) + 1e-3,
                               cols[keep].astype(np.int32), indptr), shape=(n, d))
    return matrix, rng.integers(0, 2, n)


def raw_bytes(X: Any) -> int:
    return int(X.data.nbytes + X.indices.nbytes) if hasattr(X, "indices") else int(X.nbytes)


def store_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def measure(name: str, X: Any, y: np.ndarray, compression: str, root: Path,
            repeats: int) -> dict[str, Any]:
    import zarr

    import streamlearn as sl
    from streamlearn.data.convert import convert

    store = root / f"{name}_{compression}.zarr"
    shutil.rmtree(store, ignore_errors=True)
    report = convert(sl.open_dataset(X, target=y), store, compression=compression)
    group = zarr.open_group(str(store), mode="r")
    arrays = ["indices", "data"] if report.layout == "sparse" else ["X"]
    decode = []
    for _ in range(repeats):
        start = time.perf_counter()
        for a in arrays:
            group[a][:]
        decode.append(time.perf_counter() - start)
    ds = sl.open_dataset(str(store))
    stream = []
    for seed in range(repeats):
        start = time.perf_counter()
        rows = sum(c.n_rows for c in ds.chunks(shuffle=True, seed=seed))
        stream.append(time.perf_counter() - start)
    size = store_bytes(store)
    shutil.rmtree(store)
    return {"data": name, "compression": compression, "layout": report.layout,
            "codecs": dict(report.codecs), "rows": rows, "raw_bytes": raw_bytes(X),
            "store_bytes": size,
            "size_ratio": size / raw_bytes(X), "write_s": report.seconds,
            "decode_mb_s": raw_bytes(X) / min(decode) / 1e6,
            "stream_rows_s": rows / min(stream), "decode_s": decode, "stream_s": stream}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="a fifth of the rows, two repeats (a smoke run)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--scratch", type=Path, default=None,
                        help="where the stores are written (default: a temporary directory)")
    args = parser.parse_args(argv)
    share = 5 if args.quick else 1
    repeats = 2 if args.quick else args.repeats
    makers = {"normal": lambda: normal_rows(1_000_000 // share), "images": image_rows,
              "sparse": lambda: sparse_rows(300_000 // share)}
    results = []
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        for name, make in makers.items():
            made = make()
            if made is None:
                print(f"{name}: skipped (no $STREAMLEARN_DATA/mnist.npz)", file=sys.stderr)
                continue
            X, y = made
            for compression in COMPRESSIONS:
                r = measure(name, X, y, compression, Path(tmp), repeats)
                results.append(r)
                print(f"{name:7s} {compression:5s} size {r['size_ratio']:.3f} of raw  "
                      f"decode {r['decode_mb_s']:7.0f} MB/s  "
                      f"stream {r['stream_rows_s'] / 1e6:6.2f} M rows/s", flush=True)
    report = {"machine": machine_info(),
              "versions": library_versions(("numpy", "numba", "zarr", "numcodecs",
                                            "streamlearn")),
              "benchmark": "codecs", "quick": args.quick, "repeats": repeats,
              "results": results}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "codecs.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
