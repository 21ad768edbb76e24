"""Generated datasets: the built-in demo problem, written as parquet in bounded memory."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DEMO_ROWS = 2_000_000
DEMO_FEATURES = 8
_BLOCK = 1 << 17


def additive_signal(X: np.ndarray) -> np.ndarray:
    """The demo problem's decision function: a sum of smooth one-dimensional shapes.

    Each feature enters through its own non-linear curve (a wave, a bowl, a kink, a step,
    a bump), so a linear classifier cannot fit it and an additive one can. Features beyond
    the sixth carry no signal.
    """
    x = X.astype(np.float64)
    f = (
        np.sin(2.5 * x[:, 0])
        + 0.8 * (x[:, 1] ** 2 - 1.0)
        - 0.9 * np.abs(x[:, 2]) + 0.7
        + 0.6 * np.tanh(4.0 * x[:, 3])
        + 1.2 * np.exp(-2.0 * x[:, 4] ** 2) - 0.6
        + 0.5 * x[:, 5]
    )
    return f


def additive_problem(n_rows: int, n_features: int = DEMO_FEATURES, *, seed: int = 0,
                     noise: float = 0.3, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``start:start + n_rows`` of the demo problem: standard normal features, 0/1 labels.

    Rows are a deterministic function of ``(seed, row index block)``, so any slice can be
    regenerated independently.
    """
    if n_features < 6:
        raise ValueError("the demo problem needs at least 6 features")
    rng = np.random.default_rng([seed, start])
    X = rng.standard_normal((n_rows, n_features)).astype(np.float32)
    f = additive_signal(X) + noise * rng.standard_normal(n_rows)
    return X, (f > 0).astype(np.int8)


def write_additive_parquet(path: str | Path, n_rows: int, *, n_features: int = DEMO_FEATURES,
                           n_files: int = 4, row_group_rows: int = _BLOCK, seed: int = 0) -> Path:
    """Write the demo problem as a directory of parquet files, atomically.

    Rows are generated and written ``row_group_rows`` at a time, so memory stays bounded
    whatever ``n_rows``. The directory appears under its final name only when complete.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=path.parent))
    try:
        names = [f"x{j}" for j in range(n_features)]
        per_file = -(-n_rows // n_files)
        written = 0
        for k in range(n_files):
            rows_here = min(per_file, n_rows - written)
            if rows_here <= 0:
                break
            schema = pa.schema([*(pa.field(n, pa.float32()) for n in names),
                                pa.field("label", pa.int8())])
            with pq.ParquetWriter(tmp / f"part-{k:04d}.parquet", schema) as writer:
                done = 0
                while done < rows_here:
                    m = min(row_group_rows, rows_here - done)
                    X, y = additive_problem(m, n_features, seed=seed, start=written + done)
                    table = pa.table({**{n: X[:, j] for j, n in enumerate(names)}, "label": y},
                                     schema=schema)
                    writer.write_table(table, row_group_size=row_group_rows)
                    done += m
            written += rows_here
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def cache_dir() -> Path:
    """Where generated datasets are kept: ``$STREAMLEARN_CACHE`` or ``~/.cache/streamlearn``."""
    env = os.environ.get("STREAMLEARN_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "streamlearn"


def demo_dataset_path(n_rows: int = DEMO_ROWS, seed: int = 0) -> Path:
    """Path of the demo dataset, generating it on first use."""
    path = cache_dir() / f"demo-additive-{n_rows}-{seed}.parquet"
    if not path.exists():
        write_additive_parquet(path, n_rows, seed=seed)
    return path
