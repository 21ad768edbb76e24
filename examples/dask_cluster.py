"""Train on a dask cluster: the same fit, every pass split into one task per partition.

Shows ``DaskEngine``: workers open their partitions of the store themselves (the client
sends tasks and receives model states, never rows), reductions are tree-merged, and the
sequential solver runs one lane per worker thread with the lanes' models averaged after
every epoch. By default a ``LocalCluster`` of ``--workers`` single-thread processes is
started on loopback (127.0.0.1, no dashboard); ``--scheduler tcp://HOST:8786`` uses a real
cluster instead, and then ``--data-dir`` must be a path (or URL) every worker can read.

    python examples/dask_cluster.py --rows 1000000 --workers 2
    python examples/dask_cluster.py --scheduler tcp://scheduler:8786 --data-dir /shared/tmp
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from distributed import Client

import streamlearn as sl
from streamlearn.data.synthetic import write_additive_parquet
from streamlearn.engine import local_cluster
from streamlearn.engine.dask_engine import DaskEngine
from streamlearn.models.additive import AdditiveSVC


@contextlib.contextmanager
def connect(scheduler: str | None, workers: int) -> Iterator[Client]:
    """A client of the cluster at ``scheduler``, or of a new loopback ``LocalCluster``."""
    if scheduler is not None:
        with Client(scheduler, timeout=30) as client:
            yield client
        return
    # single-thread worker processes on loopback, set up for streaming (see local_cluster)
    with local_cluster(workers) as cluster, Client(cluster) as client:
        yield client


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000,
                        help="training rows to generate (the test set is a quarter of it)")
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes of the local cluster")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="address of a running scheduler, e.g. tcp://10.0.0.5:8786")
    parser.add_argument("--data-dir", help="where to write the generated data (default: a "
                        "temporary directory, which only a local cluster can read)")
    args = parser.parse_args(argv)

    with contextlib.ExitStack() as stack:
        root = Path(args.data_dir or stack.enter_context(tempfile.TemporaryDirectory()))
        train_path = write_additive_parquet(root / "train", args.rows, n_files=4,
                                            row_group_rows=16_384, seed=0)
        test_path = write_additive_parquet(root / "test", max(args.rows // 4, 1000),
                                           n_files=2, row_group_rows=16_384, seed=1)
        client = stack.enter_context(connect(args.scheduler, args.workers))
        n_workers = len(client.scheduler_info()["workers"])
        print(f"cluster: {n_workers} workers at {client.scheduler.address}")

        engine = DaskEngine(client)
        stack.callback(engine.close)
        train = sl.open_dataset(str(train_path), target="label")
        test = sl.open_dataset(str(test_path), target="label")
        started = time.perf_counter()
        model = AdditiveSVC(embedding="bspline", random_state=0).fit(train, engine=engine)
        seconds = time.perf_counter() - started
        print(f"fitted {model.n_iter_} epochs on {model.n_train_:,} rows in {seconds:.1f} s")
        accuracy = model.score(test, engine=engine)
        print(f"test accuracy: {accuracy:.4f} (dask, {n_workers} workers)")


if __name__ == "__main__":
    main()
