"""Shared fixtures: one small reference table written to every kind of source."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zarr

os.environ.setdefault("STREAMLEARN_PROGRESS", "0")
# the workers keep every core busy compiling already; tests/test_compile_ahead.py turns it on
os.environ.setdefault("STREAMLEARN_COMPILE_AHEAD", "0")

FEATURES = ["a", "b", "c", "d", "e"]


@dataclass
class Reference:
    """The rows every source must reproduce, in order."""

    frame: pd.DataFrame
    X: np.ndarray  # float32 (n, 5)
    label: np.ndarray  # int64 labels 3, 5, 7
    weight: np.ndarray  # float32


def make_reference(n: int = 1000, seed: int = 0) -> Reference:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "a": rng.normal(size=n).astype(np.float32),
        "b": rng.uniform(-5, 5, size=n),  # float64, exactly representable after rounding below
        "c": rng.integers(-100, 100, size=n).astype(np.int32),
        "d": rng.random(n) < 0.3,
        "e": rng.exponential(size=n).astype(np.float32),
    })
    frame["b"] = frame["b"].astype(np.float32).astype(np.float64)
    frame["label"] = rng.choice([3, 5, 7], size=n)
    frame["w"] = rng.uniform(0.5, 2.0, size=n).astype(np.float32)
    X = frame[FEATURES].to_numpy(dtype=np.float32)
    return Reference(frame, X, frame["label"].to_numpy(), frame["w"].to_numpy())


@pytest.fixture(scope="session", autouse=True)
def one_library_thread_per_worker():
    """Hold BLAS and OpenMP (numpy's and scipy's matrix products, scikit-learn's reference
    models) to one thread. ``make test`` runs one pytest worker per core; their threads then
    compete with the other workers for the cores and spin while they wait: a 0.2 s fit of
    HistGradientBoostingClassifier took 2 to 9 s, and test_supersparse_defaults.py with
    test_supersparse_lam.py took 50 s instead of 28 s. Results do not depend on the count
    beyond rounding (k-means centres move by 1e-5). The tests of
    :func:`streamlearn.solvers.threads.single_threaded_blas` set their own count."""
    import sklearn  # noqa: F401  (loads the OpenMP runtime that the limit applies to)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="session")
def ref() -> Reference:
    return make_reference()


def write_parquet_file(frame: pd.DataFrame, path: Path, row_group_size: int = 128) -> Path:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                   row_group_size=row_group_size)
    return path


def write_parquet_dir(frame: pd.DataFrame, path: Path, sizes: tuple[int, ...] = (300, 450)) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    bounds = np.cumsum([0, *sizes, len(frame) - sum(sizes)])
    for k in range(len(bounds) - 1):
        part = frame.iloc[bounds[k] : bounds[k + 1]]
        write_parquet_file(part, path / f"part-{k:03d}.parquet", row_group_size=100 + 37 * k)
    return path


def record_piece_reads(monkeypatch: pytest.MonkeyPatch, source: object) -> list[int]:
    """The pieces ``source``'s class reads from now on, in the order it reads them."""
    reads: list[int] = []
    read_piece = type(source).read_piece

    def recorded(self, i, *args, **kwargs):
        reads.append(i)
        return read_piece(self, i, *args, **kwargs)

    monkeypatch.setattr(type(source), "read_piece", recorded)
    return reads


def write_zarr_matrix(ref: Reference, store: str | Path, chunk: int = 100) -> str:
    group = zarr.open_group(str(store), mode="w")
    X = group.create_array("X", shape=ref.X.shape, chunks=(chunk, ref.X.shape[1]), dtype="float32")
    X[:] = ref.X
    X.attrs["feature_names"] = FEATURES
    y = group.create_array("y", shape=ref.label.shape, chunks=(chunk,), dtype="int64")
    y[:] = ref.label
    w = group.create_array("w", shape=ref.weight.shape, chunks=(chunk,), dtype="float32")
    w[:] = ref.weight
    return str(store)


def write_zarr_columns(ref: Reference, store: str | Path, chunk: int = 128) -> str:
    group = zarr.open_group(str(store), mode="w")
    for name in [*FEATURES, "label", "w"]:
        values = ref.frame[name].to_numpy()
        if values.dtype == np.bool_:
            values = values.astype(np.int8)
        arr = group.create_array(name, shape=values.shape, chunks=(chunk,), dtype=values.dtype)
        arr[:] = values
    group.attrs["columns"] = [*FEATURES, "label", "w"]
    return str(store)


@pytest.fixture(scope="session")
def dask_client():
    """A two-process ``LocalCluster`` on loopback shared by the model tests (started once).

    Tests that kill workers start their own cluster instead.
    """
    from distributed import Client

    from streamlearn.engine import local_cluster

    cluster = local_cluster(2)
    client = Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


def killing_engine() -> type:
    """A ``LocalEngine`` class whose ``run`` raises ``RuntimeError("killed")`` at the
    ``kill_at``-th pass run by any of its instances (``runs`` counts them; ``kill_at``
    None: never), so that a test can stop a checkpointed fit inside a chosen pass and
    resume it with the same kind of engine (the checkpoint records it)."""
    from streamlearn.engine import LocalEngine

    class Killed(LocalEngine):
        runs = 0
        kill_at: int | None = None

        def run(self, pass_, data, **options):
            Killed.runs += 1
            if Killed.runs == Killed.kill_at:
                raise RuntimeError("killed")
            return super().run(pass_, data, **options)

    return Killed


@pytest.fixture
def checkpoint_dir(tmp_path: Path) -> Iterator[Path]:
    """A new, empty directory in memory (under ``/dev/shm``) where the system has one,
    else ``tmp_path``: for the checkpoints of fits of many passes.

    A checkpointed fit writes its progress after every pass, each file flushed to disk
    (``os.fsync``) before it replaces the last: on a disk that is 3 to 9 ms a flush, 6 to
    18 s for a fit of 1,000 passes killed and resumed; in memory it is nothing. The
    tests that use it check what a resumed fit computes, which does not depend on where
    its files lie; the files are written through the same calls.
    """
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="streamlearn-checkpoint-", dir=shm))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
