"""A fit killed at any point and run again resumes from its checkpoint to the same model.

Kills with SIGKILL, for every model, are in ``tests/test_kill_resume.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from streamlearn import LocalEngine, open_dataset
from streamlearn.engine.checkpoint import checkpoint_progress, decode, encode
from streamlearn.engine.describe import DescribePass
from streamlearn.errors import CheckpointError
from streamlearn.models import AdditiveSVC
from streamlearn.models.additive import PegasosState
from streamlearn.solvers.calibration import ScoreHistogram

N_ROWS, CHUNK_ROWS = 3000, 250  # 12 chunks per pass


def _problem(n: int = N_ROWS, classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    score = X[:, 0] ** 2 + X[:, 1] - 1
    y = (score > 0).astype(int) if classes == 2 else np.digitize(score, [-0.5, 0.5])
    return X, y


def _params(solver: str) -> dict:
    return {"solver": solver, "epochs": 3, "chunk_rows": CHUNK_ROWS, "n_bases": 6}


def _assert_same_model(a: AdditiveSVC, b: AdditiveSVC) -> None:
    for name in ("coef_d_", "state_w_d_", "platt_a_", "platt_b_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.t_, a.n_iter_, a.n_train_) == (b.t_, b.n_iter_, b.n_train_)


# -- the codec -------------------------------------------------------------------------------
@dataclass
class Outside:
    value: int


def test_codec_round_trips_pass_states() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    describe = DescribePass(["a", "b", "c"], n_classes=2, seed=3)
    chunk = open_dataset(X, target=np.arange(40) % 2).chunks(40).__next__()
    state = describe.step(describe.start(), chunk)  # dataclass of a NamedTuple and a slots class
    histogram = ScoreHistogram(2)
    histogram.add(rng.normal(size=(40, 2)), rng.random((40, 2)) < 0.5, None)
    value = {"describe": state, 7: (np.float32(1.5), np.uint64(2**63 + 5), None, True),
             "pegasos": PegasosState(rng.normal(size=(2, 5)), np.zeros((2, 5)), 12, 40),
             "histogram": histogram, "floats": [np.inf, -np.inf, 0.1], "labels": np.array(["x"])}
    arrays: dict = {}
    tree = encode(value, arrays)
    import json

    back = decode(json.loads(json.dumps(tree, allow_nan=False)), arrays)
    assert set(back) == set(value)
    assert back[7][0] == np.float32(1.5) and back[7][0].dtype == np.float32
    assert back[7][1] == np.uint64(2**63 + 5) and back[7][2:] == (None, True)
    assert back["floats"][:2] == [np.inf, -np.inf] and back["floats"][2] == 0.1
    np.testing.assert_array_equal(back["labels"], ["x"])
    got, want = back["describe"], state
    assert type(got.moments) is type(want.moments) and got.moments.count == want.moments.count
    np.testing.assert_array_equal(got.moments.m2, want.moments.m2)
    np.testing.assert_array_equal(got.sample.values, want.sample.values)
    assert got.sample.seed == want.sample.seed and got.sample.k == want.sample.k
    np.testing.assert_array_equal(got.class_counts, np.bincount(np.arange(40) % 2))
    # the decoded state keeps working: finishing it gives what the original gives
    np.testing.assert_array_equal(describe.finish(got).quantiles, describe.finish(want).quantiles)
    np.testing.assert_array_equal(back["histogram"].fit()[0], histogram.fit()[0])
    np.testing.assert_array_equal(back["pegasos"].W, value["pegasos"].W)
    assert back["pegasos"].t == 12


def test_codec_refuses_foreign_classes_and_objects() -> None:
    with pytest.raises(CheckpointError, match="Outside"):
        encode({"x": Outside(1)}, {})
    with pytest.raises(CheckpointError, match="Python objects"):
        encode(np.array([{}], dtype=object), {})
    with pytest.raises(CheckpointError, match="outside streamlearn"):
        decode({"$object": "os:system", "attrs": {}}, {})


# -- the engine hooks --------------------------------------------------------------------------
def test_skip_leaves_out_the_first_chunks_of_the_order() -> None:
    X, y = _problem(1000)
    ds = open_dataset(X, target=y, chunk_rows=90)
    full = list(ds.chunks(shuffle=True, seed=4, epoch=2, prefetch=0))
    rest = list(ds.chunks(shuffle=True, seed=4, epoch=2, skip=5))
    assert [c.start for c in rest] == [c.start for c in full[5:]]
    for a, b in zip(rest, full[5:], strict=True):
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.index, b.index)


# -- crashes inside the process -----------------------------------------------------------------
class Crash(Exception):
    pass


def _crashing_engine(after: int) -> LocalEngine:
    """A LocalEngine that raises once ``after`` chunks have been stepped (over all passes)."""
    engine = LocalEngine(chunk_rows=CHUNK_ROWS)
    plain = engine.run
    seen = [0]

    def run(pass_, data, *, on_chunk=None, **options):
        def hook(done, state):
            seen[0] += 1
            if seen[0] == after:
                raise Crash
            if on_chunk is not None:
                on_chunk(done, state)

        return plain(pass_, data, on_chunk=hook, **options)

    engine.run = run  # an instance attribute: the engine is still a LocalEngine
    return engine


@pytest.mark.parametrize(("solver", "classes"), [("pegasos", 2), ("dcd", 3)])
def test_fit_crashed_anywhere_resumes_to_the_same_model(checkpoint_dir: Path, solver: str,
                                                        classes: int) -> None:
    X, y = _problem(classes=classes)
    reference = AdditiveSVC(**_params(solver)).fit(X, y)
    # 12 chunks per pass: describe 1-12, epochs 13-48, calibration 49-60
    for after in (3, 12, 13, 26, 35, 48, 55):
        path = checkpoint_dir / f"{solver}-{after}"
        with pytest.raises(Crash):
            AdditiveSVC(**_params(solver)).fit(X, y, engine=_crashing_engine(after),
                                               checkpoint=path, checkpoint_every=5)
        completed, chunks = checkpoint_progress(path)
        assert completed * 12 + chunks == (after - 1) // 12 * 12 + (after - 1) % 12 // 5 * 5
        resumed = AdditiveSVC(**_params(solver)).fit(X, y, checkpoint=path, checkpoint_every=5)
        _assert_same_model(resumed, reference)
    # a finished checkpoint replays every pass without reading the data again
    replayed = AdditiveSVC(**_params(solver)).fit(X, y, engine=_crashing_engine(1),
                                                  checkpoint=path)
    _assert_same_model(replayed, reference)


def test_checkpoint_of_another_fit_is_an_error(tmp_path: Path) -> None:
    X, y = _problem()
    AdditiveSVC(**_params("pegasos")).fit(X, y, checkpoint=tmp_path / "c")
    with pytest.raises(CheckpointError, match=r"params.C: 1.0 in the checkpoint, 2.0 now"):
        AdditiveSVC(**_params("pegasos"), C=2.0).fit(X, y, checkpoint=tmp_path / "c")
    with pytest.raises(CheckpointError, match=r"data.n_rows: 3000 in the checkpoint, 2999 now"):
        AdditiveSVC(**_params("pegasos")).fit(X[:-1], y[:-1], checkpoint=tmp_path / "c")
    with pytest.raises(ValueError, match="set random_state to an integer"):
        AdditiveSVC(random_state=None).fit(X, y, checkpoint=tmp_path / "d")
    with pytest.raises(ValueError, match="checkpoint_every must be a positive"):
        AdditiveSVC().fit(X, y, checkpoint=tmp_path / "d", checkpoint_every=0)


def test_hyperparameters_json_lacks_are_fingerprinted_by_value(tmp_path: Path) -> None:
    """numpy numbers, arrays and a RandomState had all entered the fingerprint as None: a
    fit with other values of them resumed the checkpoint and returned the first fit's model.
    The same values given anew (a new RandomState of the same seed) still resume."""
    from streamlearn.models import SuperSparseRegressor

    X, y = _problem(400)  # 2 chunks a pass
    params = {**_params("pegasos"), "epochs": 1, "tol": None}  # the epochs given
    cases = [
        (AdditiveSVC, "C", lambda: np.float32(1.0), np.float32(100.0), r"params.C: 1.0 in the "
         r"checkpoint, 100.0 now", y),
        (AdditiveSVC, "random_state", lambda: np.random.RandomState(1),
         np.random.RandomState(2), r"params.random_state.RandomState: '[0-9a-f]+' in the", y),
        (SuperSparseRegressor, "init", lambda: X[:4].astype(np.float64), X[3::-1],
         r"params.init.array.digest: '[0-9a-f]+' in the checkpoint", X[:, 0] ** 2 + X[:, 1]),
    ]
    for cls, name, value, other, message, target in cases:
        base = ({"n_prototypes": 4, "max_iter": 50, "tol": 0.01, "chunk_rows": CHUNK_ROWS}
                if cls is SuperSparseRegressor else params)
        reference = cls(**base, **{name: value()}).fit(X, target)
        path = tmp_path / name
        with pytest.raises(Crash):  # a checkpoint after the first chunk
            cls(**base, **{name: value()}).fit(X, target, engine=_crashing_engine(2),
                                               checkpoint=path, checkpoint_every=1)
        with pytest.raises(CheckpointError, match=message):
            cls(**base, **{name: other}).fit(X, target, checkpoint=path)
        resumed = cls(**base, **{name: value()}).fit(X, target, checkpoint=path)
        np.testing.assert_array_equal(resumed.predict(X), reference.predict(X))


def test_a_checkpoint_is_a_local_directory(tmp_path: Path, monkeypatch) -> None:
    # an s3:// or memory:// checkpoint had become a local directory named after the URL,
    # and an empty path the working directory, which the fit filled with its files
    X, y = _problem(400)
    for url in ("s3://bucket/c", "memory://c"):
        with pytest.raises(ValueError, match="a checkpoint is a local directory"):
            AdditiveSVC(**_params("pegasos")).fit(X, y, checkpoint=url)
    monkeypatch.chdir(tmp_path)
    for empty in ("", " ", "file://"):
        with pytest.raises(ValueError, match="names no directory"):
            AdditiveSVC(**_params("pegasos")).fit(X, y, checkpoint=empty)
    assert not any(tmp_path.iterdir()) and not Path("s3:").exists()
    AdditiveSVC(**_params("pegasos")).fit(X, y, checkpoint=f"file://{tmp_path}/c")
    assert checkpoint_progress(tmp_path / "c")[0] > 0


def test_checkpoint_of_other_rows_of_the_same_shape_is_an_error(tmp_path: Path) -> None:
    """A file rewritten with other rows of the same shape, other sample weights or another
    NaN policy is another fit: refused, where resuming would return the old model. The
    digest is of the rows' contents: the same rows from a parquet file or an array give
    the same one, and one changed row among those it reads changes it."""
    import pandas as pd

    X, y = _problem()
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(label=y)
    frame.to_parquet(tmp_path / "train.parquet")
    path = str(tmp_path / "train.parquet")
    AdditiveSVC(**_params("pegasos")).fit(path, "label", checkpoint=tmp_path / "c")
    rng = np.random.default_rng(5)
    frame.assign(x0=rng.permutation(frame.x0.to_numpy())).to_parquet(path)
    with pytest.raises(CheckpointError, match=r"data.content: '[0-9a-f]+' in the checkpoint"):
        AdditiveSVC(**_params("pegasos")).fit(path, "label", checkpoint=tmp_path / "c")
    AdditiveSVC(**_params("pegasos")).fit(X, y, checkpoint=tmp_path / "a")
    with pytest.raises(CheckpointError, match=r"data.content"):
        AdditiveSVC(**_params("pegasos")).fit(X, y, sample_weight=np.full(len(y), 2.0),
                                              checkpoint=tmp_path / "a")
    with pytest.raises(CheckpointError, match=r"data.nan_policy: 'raise' in the checkpoint"):
        AdditiveSVC(**_params("pegasos")).fit(X, y, nan_policy="drop",
                                              checkpoint=tmp_path / "a")
    same = open_dataset(X, target=y)
    frame.to_parquet(tmp_path / "again.parquet")
    assert same.content_digest() == open_dataset(
        str(tmp_path / "again.parquet"), target="label").content_digest()
    assert same.content_digest() == open_dataset(X.copy(), target=y).content_digest()
    changed = X.copy()
    changed[0, 0] += 1.0
    assert open_dataset(changed, target=y).content_digest() != same.content_digest()


def test_a_file_named_another_way_resumes_and_a_running_fit_holds_the_directory(
        tmp_path: Path, monkeypatch) -> None:
    import pandas as pd

    from streamlearn.engine.checkpoint import _lock

    X, y = _problem()
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(label=y)
    frame.to_parquet(tmp_path / "train.parquet")
    monkeypatch.chdir(tmp_path)
    model = AdditiveSVC(**_params("pegasos")).fit("train.parquet", "label", checkpoint="c")
    for spelling in ("./train.parquet", str(tmp_path / "train.parquet"),
                     f"file://{tmp_path / 'train.parquet'}"):
        again = AdditiveSVC(**_params("pegasos")).fit(
            spelling, "label", engine=_crashing_engine(1), checkpoint="c")  # replayed
        _assert_same_model(again, model)
    # a fit in progress holds the directory: a second one stops, naming why
    held = _lock(tmp_path / "c")  # as a running fit's Checkpoint holds it
    (tmp_path / "c" / ".progress.zip.abc.tmp").write_bytes(b"a write in progress")
    with pytest.raises(CheckpointError, match="in use by another fit"):
        AdditiveSVC(**_params("pegasos")).fit("train.parquet", "label", checkpoint="c")
    assert (tmp_path / "c" / ".progress.zip.abc.tmp").exists()  # not taken for stale
    held.close()
    AdditiveSVC(**_params("pegasos")).fit("train.parquet", "label", checkpoint="c")
    assert not (tmp_path / "c" / ".progress.zip.abc.tmp").exists()


def test_damaged_checkpoint_is_an_error(tmp_path: Path) -> None:
    X, y = _problem()
    AdditiveSVC(**_params("pegasos")).fit(X, y, checkpoint=tmp_path / "c")
    progress = tmp_path / "c" / "progress.zip"
    progress.write_bytes(progress.read_bytes()[:-40])
    with pytest.raises(CheckpointError, match="progress.zip is damaged"):
        AdditiveSVC(**_params("pegasos")).fit(X, y, checkpoint=tmp_path / "c")
    (tmp_path / "f").write_text("not a directory")
    with pytest.raises(CheckpointError, match="is a file; give a directory"):
        AdditiveSVC(**_params("pegasos")).fit(X, y, checkpoint=tmp_path / "f")


def test_dask_engine_resumes_at_pass_granularity(tmp_path: Path, dask_client) -> None:
    from streamlearn.engine import DaskEngine

    X, y = _problem()
    params = {**_params("dcd"), "epochs": 2}
    reference = AdditiveSVC(**params).fit(X, y, engine=DaskEngine(dask_client))
    engine = DaskEngine(dask_client)
    plain, calls = engine.run, [0]

    def run(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 3:  # during the second epoch, after the first one was saved
            raise Crash
        return plain(*args, **kwargs)

    engine.run = run
    with pytest.raises(Crash):
        AdditiveSVC(**params).fit(X, y, engine=engine, checkpoint=tmp_path / "c")
    assert checkpoint_progress(tmp_path / "c") == (2, 0)
    resumed = AdditiveSVC(**params).fit(X, y, engine=DaskEngine(dask_client),
                                        checkpoint=tmp_path / "c")
    _assert_same_model(resumed, reference)



@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 3 epochs
def test_a_fit_on_indicator_columns_resumes_to_the_same_model(checkpoint_dir: Path) -> None:
    # the checkpoint names the columns read (indicators): resumed, the same map and model
    from streamlearn.models import MixtureSVC
    from tests.category_problem import category_problem

    frame, score = category_problem(N_ROWS, 0, k=10)
    y = (score > 0).astype(int)
    params = {"em": "batch", "epochs": 3, "chunk_rows": CHUNK_ROWS, "random_state": 0,
              "validation_fraction": None}
    reference = MixtureSVC(**params).fit(frame, y)
    for after in (5, 30):
        path = checkpoint_dir / f"mixture-{after}"
        with pytest.raises(Crash):
            MixtureSVC(**params).fit(frame, y, engine=_crashing_engine(after),
                                     checkpoint=path, checkpoint_every=5)
        resumed = MixtureSVC(**params).fit(frame, y, checkpoint=path, checkpoint_every=5)
        assert resumed.category_indicators_ == reference.category_indicators_
        for name in ("centers_", "expert_coef_", "xi_", "shift_", "scale_"):
            np.testing.assert_array_equal(getattr(resumed, name), getattr(reference, name),
                                          err_msg=name)
