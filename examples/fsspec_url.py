"""Train from an fsspec URL: the same code reads ``s3://``, ``gs://``, ``https://`` or ``memory://``.

Shows that ``open_dataset`` takes a URL and ``storage_options`` (credentials, endpoints)
and streams the files through fsspec without a local copy. By default the data is written
to fsspec's in-memory file system (``memory://``), which needs no network; with ``--url``
and ``--storage-option KEY=VALUE`` it reads your store, e.g.

    python examples/fsspec_url.py --rows 200000
    python examples/fsspec_url.py --url s3://bucket/train/ --test-url s3://bucket/test/ \\
        --storage-option anon=true --target label
"""

from __future__ import annotations

import argparse
import uuid

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

import streamlearn as sl
from streamlearn.data.synthetic import additive_problem
from streamlearn.models.additive import AdditiveSVC

ROW_GROUP_ROWS = 16_384


def write_parquet_url(url: str, n_rows: int, *, seed: int, n_files: int = 3) -> str:
    """Write ``n_rows`` of the demo problem as ``n_files`` parquet files under ``url``."""
    fs, root = fsspec.core.url_to_fs(url)
    fs.mkdirs(root, exist_ok=True)
    per_file = -(-n_rows // n_files)
    for k, start in enumerate(range(0, n_rows, per_file)):
        X, y = additive_problem(min(per_file, n_rows - start), seed=seed, start=start)
        table = pa.table({**{f"x{j}": X[:, j] for j in range(X.shape[1])}, "label": y})
        with fs.open(f"{root}/part-{k}.parquet", "wb") as f:
            pq.write_table(table, f, row_group_size=ROW_GROUP_ROWS)
    return url


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000,
                        help="training rows to generate (the test set is a quarter of it)")
    parser.add_argument("--url", help="URL of a parquet file/directory or zarr store")
    parser.add_argument("--test-url", help="URL of the data to score on")
    parser.add_argument("--target", default="label", help="label column")
    parser.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="passed to fsspec (repeatable); 'true'/'false' become booleans")
    args = parser.parse_args(argv)
    options = {}
    for item in args.storage_option:
        key, _, value = item.partition("=")
        options[key] = {"true": True, "false": False}.get(value.lower(), value)

    if args.url is None:
        run = uuid.uuid4().hex[:8]
        args.url = write_parquet_url(f"memory://streamlearn-example-{run}/train", args.rows,
                                     seed=0)
        args.test_url = write_parquet_url(f"memory://streamlearn-example-{run}/test",
                                          max(args.rows // 4, 1000), seed=1, n_files=1)
    train = sl.open_dataset(args.url, target=args.target, storage_options=options or None,
                            chunk_rows=50_000)
    print(f"{args.url}: {train.n_rows:,} rows x {train.n_features} features")

    model = AdditiveSVC(embedding="fourier", n_terms=4, random_state=0).fit(train)
    test = sl.open_dataset(args.test_url or args.url, target=args.target,
                           storage_options=options or None)
    print(f"test accuracy: {model.score(test):.4f}")


if __name__ == "__main__":
    main()
