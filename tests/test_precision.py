"""The warning of float64 feature columns that the cast to float32 leaves coarse."""

from __future__ import annotations

import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import zarr

from streamlearn import open_dataset
from streamlearn.data.precision import NARROW_STEPS, coarse_columns, matrix_spans
from streamlearn.models.base import check_array_input
from tests.conftest import write_parquet_file

N = 1500


def columns(seed: int = 0) -> pd.DataFrame:
    """A timestamp-like column (1.7e9 plus seconds), a standard normal one, integer counts
    up to 1e6, all float64."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "stamp": 1.7e9 + 5 * rng.standard_normal(N),
            "normal": rng.standard_normal(N),
            "counts": rng.integers(0, 10**6, N).astype(np.float64),
        }
    )


def coarse_warnings(record: list[warnings.WarningMessage]) -> list[str]:
    return [
        str(w.message) for w in record if "float32, in which the models compute" in str(w.message)
    ]


def test_the_rule_flags_a_column_left_with_few_float32_values() -> None:
    frame = columns()
    X = frame.to_numpy()
    # reference: what the cast leaves of each column, counted by numpy
    distinct64 = [np.unique(X[:, j]).size for j in range(3)]
    distinct32 = [np.unique(X[:, j].astype(np.float32)).size for j in range(3)]
    assert distinct64[0] == N and distinct32[0] <= 3
    assert distinct32[1] == distinct64[1] and distinct32[2] == distinct64[2]
    spans = matrix_spans(X)
    assert spans is not None
    assert coarse_columns(spans).tolist() == [0]
    assert matrix_spans(X.astype(np.float32)) is None  # float32: nothing to check


def test_the_rule_counts_float32_steps_at_the_largest_magnitude() -> None:
    step = float(np.spacing(np.float32(2.0**20)))  # float32 steps on [2**20, 2**21)
    for steps, coarse in ((NARROW_STEPS - 10, True), (NARROW_STEPS + 10, False)):
        values = 2.0**20 + np.linspace(0, steps * step, 50) + step / 3  # not float32 numbers
        spans = matrix_spans(values[:, None])
        assert spans is not None
        assert coarse_columns(spans).size == int(coarse)
    exact = 2.0**20 + step * np.arange(50.0)  # narrow, but float32 numbers already
    spans = matrix_spans(exact[:, None])
    assert spans is not None and coarse_columns(spans).size == 0


def _zarr_columns(frame: pd.DataFrame, path: Path) -> str:
    group = zarr.open_group(str(path), mode="w")
    for name in frame.columns:
        arr = group.create_array(name, shape=(N,), chunks=(256,), dtype="float64")
        arr[:] = frame[name].to_numpy()
    return str(path)


@pytest.mark.parametrize("kind", ["numpy", "pandas", "arrow", "parquet", "zarr", "dask"])
def test_a_stream_warns_once_of_the_coarse_column_only(kind: str, tmp_path: Path) -> None:
    frame = columns()
    source = {
        "numpy": lambda: frame.to_numpy(),
        "pandas": lambda: frame,
        "arrow": lambda: pa.Table.from_pandas(frame, preserve_index=False),
        "parquet": lambda: str(write_parquet_file(frame, tmp_path / "f.parquet", 400)),
        "zarr": lambda: _zarr_columns(frame, tmp_path / "s.zarr"),
        "dask": lambda: da.from_array(frame.to_numpy(), chunks=(400, 3)),
    }[kind]()
    ds = open_dataset(source, chunk_rows=400)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(2):  # two passes: one warning
            for chunk in ds.chunks(shuffle=True, seed=0):
                assert chunk.X.dtype == np.float32
    said = coarse_warnings(record)
    name = "x0" if kind in ("numpy", "dask") else "stamp"
    assert len(said) == 1, said
    assert f"feature {name!r}" in said[0] and "1.7e+09" in said[0]
    assert "subtract an offset" in said[0]


def test_no_warning_for_ordinary_float64_or_float32_data() -> None:
    frame = columns().drop(columns="stamp")
    for data in (frame, frame.to_numpy(), columns().to_numpy().astype(np.float32)):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            for _ in open_dataset(data, chunk_rows=400).chunks():
                pass
        assert coarse_warnings(record) == []


def test_a_sorted_column_narrow_in_each_chunk_but_wide_over_the_data_is_not_named() -> None:
    stamps = 1.7e9 + 100.0 * np.arange(N) + 0.5  # 128 s steps: 250-400 per chunk, 1171 in all
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in open_dataset(stamps[:, None], chunk_rows=400).chunks():
            pass
    assert coarse_warnings(record) == []
    # the same rows walked in part: no warning before the whole stream was read
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in open_dataset(stamps[:400, None], chunk_rows=400).chunks():
            pass
    assert len(coarse_warnings(record)) == 1


def test_arrays_given_to_fit_are_checked_whole() -> None:
    frame = columns()
    y = (frame["stamp"].to_numpy() > 1.7e9).astype(int)
    with pytest.warns(UserWarning, match=r"feature 'x0' of X is float64") as record:
        X, _, _ = check_array_input(frame.to_numpy(), y, None, "classification")
    assert X.dtype == np.float32
    assert len(coarse_warnings(list(record))) == 1
