"""The warning of float64 feature columns and regression targets that the cast to float32
leaves coarse."""

from __future__ import annotations

import decimal
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
from streamlearn.models import SuperSparseRegressor
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


def _zarr_columns(frame: pd.DataFrame, path: Path, dtype: str | None = "float64") -> str:
    """The frame's columns as arrays of a zarr group, of ``dtype`` (None: their own)."""
    group = zarr.open_group(str(path), mode="w")
    for name in frame.columns:
        arr = group.create_array(name, shape=(N,), chunks=(256,),
                                 dtype=dtype or frame[name].dtype)
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


def integer_columns() -> pd.DataFrame:
    """Unix timestamps as int64 seconds (1.7e9 plus 0 .. N-1), integer counts up to 1e6 and
    small int16 codes."""
    rng = np.random.default_rng(1)
    return pd.DataFrame({"stamp": 1_700_000_000 + np.arange(N, dtype=np.int64),
                         "counts": rng.integers(0, 10**6, N),
                         "codes": rng.integers(0, 100, N).astype(np.int16)})


@pytest.mark.parametrize("kind", ["numpy", "pandas", "Int64", "arrow", "parquet", "decimal",
                                  "csv", "zarr", "dask"])
def test_integer_and_decimal_columns_left_coarse_warn(kind: str, tmp_path: Path) -> None:
    frame = integer_columns()
    # reference: what the cast leaves of each column, counted by numpy
    kept = [np.unique(frame[c].to_numpy().astype(np.float32)).size for c in frame.columns]
    assert kept[0] <= N // 100 and kept[1:] == [frame[c].nunique() for c in frame.columns[1:]]
    decimals = pa.table({"stamp": pa.array([decimal.Decimal(int(v)) for v in frame["stamp"]],
                                           pa.decimal128(12, 0)),
                         "counts": frame["counts"], "codes": frame["codes"]})
    source = {
        "numpy": lambda: frame[["stamp", "counts"]].to_numpy(),
        "pandas": lambda: frame,
        "Int64": lambda: frame.astype({"stamp": "Int64"}),
        "arrow": lambda: pa.Table.from_pandas(frame, preserve_index=False),
        "parquet": lambda: str(write_parquet_file(frame, tmp_path / "f.parquet", 400)),
        "decimal": lambda: decimals,
        "csv": lambda: frame.to_csv(tmp_path / "f.csv", index=False) or str(tmp_path / "f.csv"),
        "zarr": lambda: _zarr_columns(frame, tmp_path / "s.zarr", None),
        "dask": lambda: da.from_array(frame[["stamp", "counts"]].to_numpy(), chunks=(400, 2)),
    }[kind]()
    said = _walked_twice(open_dataset(source, chunk_rows=400))
    name = "x0" if kind in ("numpy", "dask") else "stamp"
    assert len(said) == 1, said
    assert f"feature {name!r}" in said[0] and "1.700001e+09" in said[0]


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
    with pytest.warns(UserWarning, match=r"feature 'x0' of X has values of magnitude") as record:
        X, _, _ = check_array_input(frame.to_numpy(), y, None, "classification")
    assert X.dtype == np.float32
    assert len(coarse_warnings(list(record))) == 1


def _friedman_like(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Features, and a target of spread about 30 (as Friedman #1's)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(N, 4))
    return X, 10 * X[:, 0] + 20 * (X[:, 1] - 0.5) ** 2 + 5 * X[:, 2] + rng.normal(0, 0.5, N)


def _walked_twice(ds) -> list[str]:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(2):  # two passes: at most one warning
            for _ in ds.chunks(shuffle=True, seed=0):
                pass
    return coarse_warnings(record)


def test_a_regressor_given_a_coarse_target_warns_once() -> None:
    X, y = _friedman_like()
    # reference: what the cast leaves of the target, counted by numpy
    assert np.unique(y).size == N and np.unique((y + 1e9).astype(np.float32)).size <= 2
    for method in ("fit", "partial_fit"):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            getattr(SuperSparseRegressor(chunk_rows=500), method)(X, y + 1e9)
        said = coarse_warnings(record)
        assert len(said) == 1, (method, said)
        assert said[0].startswith("target 'y' of ") and "magnitude 1e+09" in said[0]
        assert "subtract an offset from the target" in said[0]
        assert "add it back to the predictions" in said[0]


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_a_parquet_target_left_coarse_is_named_once(dtype: str, tmp_path: Path) -> None:
    X, y = _friedman_like()
    target = (np.round(y) if dtype == "int64" else y).astype(dtype) + 10**9
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "t": target})
    path = write_parquet_file(frame, tmp_path / "f.parquet", 400)
    said = _walked_twice(open_dataset(str(path), target="t", task="regression", chunk_rows=400))
    assert len(said) == 1, said
    assert said[0].startswith("target 't' of ") and "add it back to the predictions" in said[0]


def test_no_warning_for_ordinary_integer_valued_float32_exact_targets_or_labels() -> None:
    X, y = _friedman_like()
    step = float(np.spacing(np.float32(1e9)))  # 64: float32 numbers there, exactly
    targets = {
        "ordinary": y,
        "integer-valued": np.round(y),
        "integers": np.round(y).astype(np.int64),
        "float32 numbers": 1e9 + step * np.round(y / 10),
    }
    for name, values in targets.items():
        ds = open_dataset(X, target=values, task="regression", chunk_rows=400)
        assert _walked_twice(ds) == [], name
    # labels are never cast: large float labels are not named
    labels = 1e9 + (y > np.median(y))  # 1e9 + 1 is no float32 number
    ds = open_dataset(X, target=labels, task="classification", chunk_rows=400)
    assert _walked_twice(ds) == []
