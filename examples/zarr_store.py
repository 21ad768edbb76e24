"""Train a classifier on a zarr v3 store: an ``X`` matrix (rows x features) and a ``y`` array.

Shows how to write a store that streams well (zarr chunks spanning all features and many
rows, written block by block so memory stays bounded), that ``open_dataset`` finds the
target ``y`` and the feature names (``X.attrs["feature_names"]``) by itself, and that chunks
of the stream need not match the zarr chunks: the stream reads row ranges, decoding the
zarr chunks they span concurrently.

    python examples/zarr_store.py --rows 500000
    python examples/zarr_store.py --store data/train.zarr --test data/test.zarr
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import zarr

import streamlearn as sl
from streamlearn.data.synthetic import DEMO_FEATURES, additive_problem
from streamlearn.models.additive import AdditiveSVC

#: Rows per zarr chunk (each chunk holds every feature of those rows).
ZARR_CHUNK_ROWS = 32_768
FEATURE_NAMES = ["wave", "bowl", "kink", "step", "bump", "slope", "noise_a", "noise_b"]


def write_store(path: Path, n_rows: int, seed: int) -> Path:
    """Write ``n_rows`` of the demo problem as a zarr v3 group with ``X`` and ``y``."""
    group = zarr.open_group(str(path), mode="w")
    X = group.create_array("X", shape=(n_rows, DEMO_FEATURES), dtype="float32",
                           chunks=(ZARR_CHUNK_ROWS, DEMO_FEATURES))
    y = group.create_array("y", shape=(n_rows,), dtype="int8", chunks=(ZARR_CHUNK_ROWS,))
    X.attrs["feature_names"] = FEATURE_NAMES
    for start in range(0, n_rows, ZARR_CHUNK_ROWS):  # whole zarr chunks, one at a time
        stop = min(start + ZARR_CHUNK_ROWS, n_rows)
        X_block, y_block = additive_problem(stop - start, seed=seed, start=start)
        X[start:stop] = X_block
        y[start:stop] = y_block
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=500_000,
                        help="training rows to generate (the test set is a quarter of it)")
    parser.add_argument("--store", help="zarr store (path or URL) with X and y to train on")
    parser.add_argument("--test", help="zarr store to score on")
    parser.add_argument("--chunk-rows", type=int, default=50_000, help="rows per chunk")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        if args.store is None:
            args.store = str(write_store(Path(tmp) / "train.zarr", args.rows, seed=0))
            args.test = str(write_store(Path(tmp) / "test.zarr", max(args.rows // 4, 1000),
                                        seed=1))
        train = sl.open_dataset(args.store, chunk_rows=args.chunk_rows)  # target: y
        print(f"{args.store}: {train.n_rows:,} rows, features {list(train.feature_names)}, "
              f"target {train.target!r}")

        model = AdditiveSVC(embedding="bspline", n_bases=12, random_state=0).fit(train)
        print(f"{model.n_iter_} epochs over {model.n_train_:,} rows")

        test = sl.open_dataset(args.test, chunk_rows=args.chunk_rows)
        print(f"test accuracy: {model.score(test):.4f}")


if __name__ == "__main__":
    main()
