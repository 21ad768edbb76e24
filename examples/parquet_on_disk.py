"""Train a classifier on a directory of parquet files, streaming it chunk by chunk.

Shows the everyday path: ``open_dataset`` on a parquet directory (schema from metadata, no
rows read), ``AdditiveSVC.fit`` streaming over it in chunks, scoring on a held-out
directory, saving the model to one file and loading it back.

By default the built-in demo problem (8 features, a 0/1 label that depends non-linearly on
six of them) is generated into a temporary directory; ``--train DIR --test DIR --target COL``
uses your own parquet data instead.

    python examples/parquet_on_disk.py --rows 200000
    python examples/parquet_on_disk.py --train data/train/ --test data/test/ --target label
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import streamlearn as sl
from streamlearn.data.synthetic import write_additive_parquet
from streamlearn.io import load_model
from streamlearn.models.additive import AdditiveSVC


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000,
                        help="training rows to generate (the test set is a quarter of it)")
    parser.add_argument("--train", help="parquet file or directory to train on")
    parser.add_argument("--test", help="parquet file or directory to score on")
    parser.add_argument("--target", default="label", help="label column")
    parser.add_argument("--chunk-rows", type=int, default=65_536, help="rows per chunk")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.train is None:
            # Written row group by row group: memory stays bounded whatever --rows is.
            args.train = str(write_additive_parquet(work / "train", args.rows, n_files=4,
                                                    row_group_rows=16_384, seed=0))
            args.test = str(write_additive_parquet(work / "test", max(args.rows // 4, 1000),
                                                   n_files=1, row_group_rows=16_384, seed=1))
        train = sl.open_dataset(args.train, target=args.target, chunk_rows=args.chunk_rows)
        print(f"train: {train.n_rows:,} rows x {train.n_features} features "
              f"in chunks of {train.chunk_rows:,} rows ({train.n_chunks} chunks); "
              f"classes {train.classes.tolist()}")

        model = AdditiveSVC(embedding="bspline", n_bases=10, random_state=0)
        model.fit(train)
        print(f"fitted {model.n_iter_} epochs on {model.n_train_:,} rows "
              f"({model.n_calibration_:,} held out to calibrate probabilities)")

        path = work / "model.slm"
        model.save(path)
        loaded = load_model(path)
        # rows with the training columns' names, as the model was fitted on named columns
        X_new = pd.DataFrame(next(iter(train.chunks())).X[:5], columns=model.feature_names_in_)
        assert np.array_equal(loaded.predict(X_new), model.predict(X_new))
        print(f"saved to {path.name} ({path.stat().st_size:,} bytes); the loaded model "
              f"predicts {loaded.predict(X_new).tolist()} for the first rows")

        accuracy = loaded.score(sl.open_dataset(args.test, target=args.target,
                                                chunk_rows=args.chunk_rows))
        print(f"test accuracy: {accuracy:.4f}")


if __name__ == "__main__":
    main()
