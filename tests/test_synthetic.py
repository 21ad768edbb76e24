"""The built-in demo problem: deterministic, streamed to parquet, and truly non-linear."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import SplineTransformer

from streamlearn import open_dataset
from streamlearn.data.synthetic import additive_problem, demo_dataset_path, write_additive_parquet


def test_rows_depend_only_on_seed_and_position() -> None:
    X1, y1 = additive_problem(500, seed=3, start=1000)
    X2, y2 = additive_problem(500, seed=3, start=1000)
    X3, _ = additive_problem(500, seed=4, start=1000)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.array_equal(X1, X3)


def test_parquet_holds_the_generated_rows(tmp_path: Path) -> None:
    path = write_additive_parquet(tmp_path / "demo.parquet", 10_000, n_files=3,
                                  row_group_rows=1500)
    assert sorted(p.name for p in path.iterdir()) == [
        "part-0000.parquet", "part-0001.parquet", "part-0002.parquet"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]
    ds = open_dataset(str(path), target="label", chunk_rows=4096)
    assert ds.n_rows == 10_000 and ds.n_features == 8
    X = np.concatenate([c.X for c in ds.chunks()])
    # files were written block by block; regenerate the same blocks for the reference
    starts = [0, 1500, 3000, 3334, 4834, 6334, 6668, 8168, 9668]
    sizes = [1500, 1500, 334, 1500, 1500, 334, 1500, 1500, 332]
    expected = np.concatenate([additive_problem(m, start=s)[0] for s, m in zip(starts, sizes,
                                                                                strict=True)])
    np.testing.assert_array_equal(X, expected)


def test_problem_needs_a_nonlinear_model() -> None:
    X, y = additive_problem(20_000, seed=1)
    Xt, yt = additive_problem(10_000, seed=2)
    assert 0.3 < y.mean() < 0.7
    linear = LogisticRegression(max_iter=500).fit(X, y).score(Xt, yt)
    additive = make_pipeline(SplineTransformer(n_knots=8), LogisticRegression(max_iter=2000))
    additive_acc = additive.fit(X, y).score(Xt, yt)
    assert additive_acc > linear + 0.08, (linear, additive_acc)
    assert additive_acc > 0.85


def test_demo_dataset_is_generated_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("STREAMLEARN_CACHE", str(tmp_path))
    path = demo_dataset_path(n_rows=20_000)
    stamp = [p.stat().st_mtime_ns for p in sorted(path.iterdir())]
    assert demo_dataset_path(n_rows=20_000) == path
    assert [p.stat().st_mtime_ns for p in sorted(path.iterdir())] == stamp
