"""Pass accounting: every engine run counts one pass with the rows and bytes it walked, and
every fit reports ``n_passes_`` and ``bytes_read_`` from them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import cloudpickle
import numpy as np
import pytest

from streamlearn.data import open_dataset
from streamlearn.engine import DaskEngine, LocalEngine, Reduction
from streamlearn.engine.accounting import (
    PassLog,
    capturing,
    chunk_bytes,
    human_bytes,
    open_pass,
    recording,
)
from streamlearn.models.additive import AdditiveSVC
from streamlearn.models.registry import estimator_classes
from tests.conftest import FEATURES, Reference, write_parquet_file
from tests.dying_engine import DyingEngine, Interrupted

# Passes below are sent to dask workers by value: they need not import this module.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

N_FEATURES = len(FEATURES)


def _rows() -> Reduction[int, int]:
    return Reduction(start=lambda: 0, step=lambda s, c: s + c.n_rows, merge=lambda a, b: a + b)


def _row_bytes(weighted: bool) -> int:
    """Bytes of one row as a chunk holds it: float32 features, int32 class code, weight."""
    return N_FEATURES * 4 + 4 + (4 if weighted else 0)


def _dataset(ref: Reference, *, weighted: bool = False, chunk_rows: int = 128,
             **kwargs: Any) -> Any:
    return open_dataset(ref.frame, target="label", features=FEATURES,
                        weight="w" if weighted else None, chunk_rows=chunk_rows, **kwargs)


# -- engines ---------------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_local_run_counts_every_row_and_byte(ref: Reference, weighted: bool) -> None:
    dataset = _dataset(ref, weighted=weighted)
    engine = LocalEngine(progress=False)
    assert engine.run(_rows(), dataset) == dataset.n_rows
    log = engine.passes
    assert (log.passes, log.full_passes, log.rows_read) == (1, 1, dataset.n_rows)
    assert log.bytes_read == dataset.n_rows * _row_bytes(weighted)
    assert log.passes_over(dataset.n_rows) == 1.0


def test_bytes_are_those_of_the_chunks_walked(ref: Reference) -> None:
    # the reference another way: the arrays of every chunk, summed by a pass itself
    dataset = _dataset(ref, weighted=True, chunk_rows=97)
    engine = LocalEngine(progress=False)
    measured = engine.reduce(dataset, start=lambda: 0,
                             step=lambda s, c: s + c.X.nbytes + c.y.nbytes + c.weight.nbytes,
                             merge=lambda a, b: a + b, shuffle=True, seed=3)
    assert engine.passes.bytes_read == measured
    # the row index a shuffled walk makes is not data read: same bytes as in order
    engine.run(_rows(), dataset)
    assert engine.passes.records[1].nbytes == engine.passes.records[0].nbytes


def test_a_pass_over_a_row_range_counts_only_those_rows(ref: Reference) -> None:
    dataset = _dataset(ref)
    engine = LocalEngine(progress=False)
    engine.run(_rows(), dataset)
    assert engine.run(_rows(), dataset, rows=(100, 350)) == 250
    log = engine.passes
    assert (log.passes, log.full_passes, log.rows_read) == (2, 1, dataset.n_rows + 250)
    assert log.records[1].range_rows == 250 and not log.records[1].full
    assert log.bytes_read == (dataset.n_rows + 250) * _row_bytes(False)
    assert log.passes_over(dataset.n_rows) == pytest.approx(1 + 250 / dataset.n_rows)


def test_dropped_rows_count_as_walked_but_carry_no_bytes(ref: Reference) -> None:
    frame = ref.frame.copy()
    frame.loc[[3, 200, 201], "a"] = np.nan
    dataset = open_dataset(frame, target="label", features=FEATURES, chunk_rows=64,
                           nan_policy="drop")
    engine = LocalEngine(progress=False)
    kept = engine.run(_rows(), dataset)
    assert kept == len(frame) - 3
    assert engine.passes.rows_read == len(frame) and engine.passes.full_passes == 1
    assert engine.passes.bytes_read == kept * _row_bytes(False)


def test_a_resumed_walk_counts_the_chunks_it_read(ref: Reference) -> None:
    dataset = _dataset(ref, chunk_rows=100)
    engine = LocalEngine(progress=False)
    engine.run(_rows(), dataset, resume=(4, 0))
    assert engine.passes.rows_read == dataset.n_rows - 400


def test_recording_logs_nest_and_capturing_replaces_them(ref: Reference) -> None:
    dataset = _dataset(ref)
    engine = LocalEngine(progress=False)
    with recording() as outer:
        engine.run(_rows(), dataset)
        with recording() as inner:
            engine.run(_rows(), dataset, rows=(0, 10))
            with capturing() as captured:
                engine.run(_rows(), dataset, rows=(0, 20))
    engine.run(_rows(), dataset)  # outside every log
    assert [r.rows for r in outer.records] == [dataset.n_rows, 10]
    assert [r.rows for r in inner.records] == [10]
    assert [r.rows for r in captured.records] == [20]
    assert [r.rows for r in engine.passes.records] == [dataset.n_rows, 10, 20, dataset.n_rows]


def test_chunk_bytes_and_human_bytes() -> None:
    log = PassLog()
    open_pass(log, "p", 10, 10).add(10, 3 * 1024**3 // 2)
    assert human_bytes(log.bytes_read) == "1.5 GiB"
    assert human_bytes(512) == "512 B" and human_bytes(2048) == "2.0 KiB"
    from streamlearn.data.chunk import Chunk

    X = np.zeros((3, 2), np.float32)
    chunk = Chunk(X=X, y=np.zeros(3, np.int32), start=0, index=np.arange(3, dtype=np.int64))
    assert chunk_bytes(chunk) == 3 * 8 + 3 * 4


@pytest.mark.parametrize("kind", ["reduction", "sequential"])
def test_dask_counts_match_the_local_engine(ref: Reference, dask_client: Any, tmp_path: Path,
                                            kind: str) -> None:
    path = write_parquet_file(ref.frame, tmp_path / "ref.parquet", row_group_size=128)
    dataset = open_dataset(str(path), target="label", features=FEATURES, weight="w",
                           chunk_rows=100)
    pass_ = _rows()
    pass_.kind = kind  # type: ignore[assignment]
    local = LocalEngine(progress=False)
    dask = DaskEngine(dask_client, partition_rows=300, progress=False)
    for engine in (local, dask):
        assert engine.run(pass_, dataset, shuffle=True, seed=1) == dataset.n_rows
        assert engine.run(pass_, dataset, rows=(250, 900)) == 650
    assert len(dask.partitions(dataset)) > 1
    assert [r.rows for r in dask.passes.records] == [dataset.n_rows, 650]
    assert [r.nbytes for r in dask.passes.records] == [r.nbytes for r in local.passes.records]
    assert dask.passes.bytes_read == (dataset.n_rows + 650) * _row_bytes(True)


# -- fits ------------------------------------------------------------------------------------
class CountingEngine(LocalEngine):
    """A local engine that notes the row range of every run it is asked for."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls: list[tuple[int, int]] = []

    def run(self, pass_: Any, data: Any, **options: Any) -> Any:
        rows = options.get("rows") or (0, data.n_rows)
        self.calls.append((int(rows[0]), int(rows[1])))
        return super().run(pass_, data, **options)


def _training_data(task: str, n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    score = X[:, 0] - 0.5 * X[:, 1] ** 2
    y = (score > np.median(score)).astype(np.int64) if task == "classification" else score
    return X, y


#: ShareBoost cross-fits one family on the folds of these 300 rows, not three (each the
#: same kinds of passes over row ranges): 1,260 passes where its defaults take 2,525.
ONE_FAMILY = {"ShareBoostClassifier": {"features": "stumps"}}


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_fit_reports_the_engine_runs_weighted_by_rows(cls: type) -> None:
    X, y = _training_data(cls._task)
    engine = CountingEngine(progress=False, chunk_rows=64)
    model = cls(progress=False, **ONE_FAMILY.get(cls.__name__, {})).fit(X, y, engine=engine)
    assert engine.calls, "the fit ran no pass"
    n = X.shape[0]
    expected = sum(b - a for a, b in engine.calls) / n
    assert isinstance(model.n_passes_, float) and isinstance(model.bytes_read_, int)
    assert model.n_passes_ == pytest.approx(expected)
    row_bytes = X.shape[1] * 4 + 4  # float32 features, int32 class code or float32 target
    assert model.bytes_read_ == round(expected * n) * row_bytes


def test_refit_forgets_the_previous_count_and_model_files_keep_it(tmp_path: Path) -> None:
    X, y = _training_data("classification")
    # one training, nothing to choose (the default's choices on 300 rows are made by
    # folds of them, a training each: tests/test_additive_cross_fit.py)
    fixed = {"n_bases": 8, "interactions": 0}
    model = AdditiveSVC(progress=False, epochs=2, tol=None, chunk_rows=64,
                        **fixed).fit(X, y)
    # describe, two epochs and the pass over the training rows that chooses the
    # probabilities' slope: a tenth of 300 rows holds too few to calibrate
    # (AdditiveSVC._calibration_share)
    assert model.n_calibration_ == 0
    assert (model.n_passes_, model.bytes_read_) == (4.0, 4 * X.shape[0] * 16)
    model.set_params(epochs=3).fit(X, y)
    assert model.n_passes_ == 5.0
    # with calibration rows, their pass too
    calibrated = AdditiveSVC(progress=False, epochs=2, tol=None, chunk_rows=64,
                             calibration_fraction=0.5, **fixed).fit(X, y)
    assert calibrated.n_calibration_ > 0 and calibrated.n_passes_ == 4.0
    loaded = AdditiveSVC.load(model.save(tmp_path / "m.slm"))
    assert (loaded.n_passes_, loaded.bytes_read_) == (5.0, model.bytes_read_)
    assert type(loaded.n_passes_) is float and type(loaded.bytes_read_) is int


@pytest.mark.parametrize("after", [3, 13, 31])
def test_a_resumed_fit_reports_the_passes_of_the_whole_fit(tmp_path: Path, after: int) -> None:
    X, y = _training_data("classification", n=640)
    # one training (the default's choices on 640 rows are made by folds of them)
    params = {"progress": False, "epochs": 2, "tol": None, "chunk_rows": 64, "random_state": 0,
              "n_bases": 8, "interactions": 0}
    whole = AdditiveSVC(**params).fit(X, y)
    checkpoint = tmp_path / "ckpt"
    with pytest.raises(Interrupted):
        AdditiveSVC(**params).fit(X, y, engine=DyingEngine(after, chunk_rows=64),
                                  checkpoint=checkpoint, checkpoint_every=2)
    engine = DyingEngine(None, progress=False, chunk_rows=64)
    resumed = AdditiveSVC(**params).fit(X, y, engine=engine, checkpoint=checkpoint,
                                        checkpoint_every=2)
    assert engine.passes.rows_read < whole.n_passes_ * X.shape[0]  # it read only the rest
    assert (resumed.n_passes_, resumed.bytes_read_) == (whole.n_passes_, whole.bytes_read_)
    # a third run replays every pass from the checkpoint and reads nothing
    again = DyingEngine(None, progress=False, chunk_rows=64)
    replayed = AdditiveSVC(**params).fit(X, y, engine=again, checkpoint=checkpoint)
    assert again.passes.passes == 0
    assert (replayed.n_passes_, replayed.bytes_read_) == (whole.n_passes_, whole.bytes_read_)


def test_passes_together_read_once_and_give_each_its_own_result() -> None:
    from streamlearn.engine.moments import FeatureMomentsPass
    from streamlearn.engine.passes import Together
    from streamlearn.solvers.kmeans import RowSamplePass

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    dataset = open_dataset(X, target=np.arange(3000) % 2, chunk_rows=256)
    engine = LocalEngine(progress=False)
    moments, sample = engine.run(Together(FeatureMomentsPass(4), RowSamplePass(50, 4, 7)),
                                 dataset)
    alone = engine.run(RowSamplePass(50, 4, 7), dataset)
    np.testing.assert_array_equal(sample.rows, alone.rows)
    np.testing.assert_allclose(moments.mean, X.astype(np.float64).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(moments.m2, 3000 * X.astype(np.float64).var(axis=0),
                               rtol=1e-10)
    np.testing.assert_array_equal(moments.minimum, X.min(axis=0))
    assert engine.passes.passes == 2  # one walk for both, one for the sample alone
    with pytest.raises(ValueError, match="reduction passes only"):
        Together(FeatureMomentsPass(4), type("Seq", (), {"kind": "sequential"})())
