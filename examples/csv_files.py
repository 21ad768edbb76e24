"""Train from CSV files, then convert them once to zarr for faster epochs.

Shows the path of data that arrives as text: ``open_dataset`` on a directory of CSV files
(read by byte blocks, each parsed when a chunk needs it, so memory stays bounded), a text
column used as a categorical feature, a streamed ``fit`` with the defaults, and
``streamlearn.data.convert`` writing the same rows to a zarr store whose epochs skip the
parsing; both fits are timed and scored on a held-out CSV file.

By default the built-in demo problem is generated into a temporary directory, written in
pieces of 50,000 rows with a ``region`` text column added; ``--train DIR --test FILE
--target COL`` uses your own CSV files instead (``.csv``, ``.tsv``, plain or compressed).

    python examples/csv_files.py --rows 200000
    python examples/csv_files.py --train data/ --test test.csv --target label
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import streamlearn as sl
from streamlearn.data.convert import convert
from streamlearn.data.synthetic import additive_problem

PIECE_ROWS = 50_000


def write_csv(folder: Path, n_rows: int, seed: int) -> Path:
    """The demo problem as CSV files of at most ``PIECE_ROWS`` rows, written piece by piece."""
    folder.mkdir(parents=True)
    for k, start in enumerate(range(0, n_rows, PIECE_ROWS)):
        X, y = additive_problem(min(PIECE_ROWS, n_rows - start), seed=seed, start=start)
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
        frame["region"] = np.where(X[:, 0] > 0, "north", "south")
        frame["label"] = np.where(y == 1, "yes", "no")
        frame.to_csv(folder / f"part-{k:03d}.csv", index=False, float_format="%.6g")
    return folder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000,
                        help="training rows to generate (the test file is a quarter of it)")
    parser.add_argument("--train", help="CSV file or directory to train on")
    parser.add_argument("--test", help="CSV file or directory to score on")
    parser.add_argument("--target", default="label", help="label column")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.train is None:
            args.train = str(write_csv(work / "train", args.rows, seed=0))
            args.test = str(write_csv(work / "test", max(args.rows // 4, 1000), seed=1))
        train = sl.open_dataset(args.train, target=args.target)
        test = sl.open_dataset(args.test, target=args.target)
        print(f"train: {train.n_rows:,} rows x {train.n_features} features from "
              f"{train.source.description} ({len(train.source.pieces)} blocks); "
              f"categorical: {sorted(train.categories)}")

        started = time.perf_counter()
        from_csv = sl.AdditiveSVC(random_state=0, progress=False).fit(train)
        csv_s = time.perf_counter() - started
        print(f"from the CSV files: accuracy {from_csv.score(test):.4f}, fit {csv_s:.1f} s")

        store = work / "train.zarr"
        report = convert(train, store)
        print(f"converted to {store.name}: {report.rows:,} rows in {report.seconds:.1f} s")
        started = time.perf_counter()
        from_zarr = sl.AdditiveSVC(random_state=0, progress=False).fit(
            sl.open_dataset(store))  # a converted store keeps its target as y
        zarr_s = time.perf_counter() - started
        print(f"from the zarr store: accuracy {from_zarr.score(test):.4f}, fit {zarr_s:.1f} s")


if __name__ == "__main__":
    main()
