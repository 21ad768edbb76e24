"""DaskEngine on a two-process LocalCluster (loopback only): equality with the local engine,
parameter mixing, per-example state, a killed worker, a corrupt file, client memory."""

from __future__ import annotations

import copy
import os
import signal
import sys
import tracemalloc
from pathlib import Path

import cloudpickle
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zarr
from distributed import Client
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, confusion_matrix, log_loss

import streamlearn as sl
from streamlearn.data.example_state import ExampleState
from streamlearn.data.synthetic import additive_problem
from streamlearn.engine import LocalEngine, Reduction, local_cluster, resolve_engine
from streamlearn.engine.dask_engine import DaskEngine, _lane_shares
from streamlearn.engine.partitions import piece_offsets
from streamlearn.errors import EngineError, ReadError
from streamlearn.models.additive import AdditiveSVC, DcdEpochPass, Holdout
from streamlearn.solvers.additive import ModelPairs, PegasosEpochPass, PegasosState, SummaryPass
from streamlearn.solvers.additive.driver import duality_gap
from streamlearn.solvers.additive.passes import TrainingRows
from streamlearn.solvers.dcd import HINGE
from streamlearn.solvers.embedding import embedding_params
from tests.conftest import FEATURES, write_parquet_dir, write_zarr_matrix

# Classes below are sent to the workers by value: they need not import this module.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def client():
    cluster = local_cluster(2)
    client = Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def stores(tmp_path_factory, ref):
    root = tmp_path_factory.mktemp("dask_stores")
    return {
        "zarr": write_zarr_matrix(ref, root / "ref.zarr", chunk=100),
        "parquet": str(write_parquet_dir(ref.frame, root / "parquet")),
    }


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    """A mid-size additive problem as a zarr store, and held-out rows."""
    X, y = additive_problem(30_000, seed=1)
    store = tmp_path_factory.mktemp("dask_problem") / "train.zarr"
    group = zarr.open_group(str(store), mode="w")
    group.create_array("X", data=X, chunks=(2500, X.shape[1]))
    group.create_array("y", data=y.astype(np.int64), chunks=(2500,))
    return str(store), additive_problem(20_000, seed=2)


def _engine(client, **kwargs) -> DaskEngine:
    return DaskEngine(client, **kwargs)


# -- partitions ---------------------------------------------------------------------------
def test_partitions_follow_row_groups(client, stores, ref):
    ds = sl.open_dataset(stores["parquet"], target="label", chunk_rows=50)
    ranges = _engine(client, partitions_per_worker=3).partitions(ds)
    # row-group boundaries read from the files' footers directly
    bounds = [0]
    for path in sorted(Path(stores["parquet"]).glob("*.parquet")):
        meta = pq.ParquetFile(path).metadata
        for rg in range(meta.num_row_groups):
            bounds.append(bounds[-1] + meta.row_group(rg).num_rows)
    assert len(ranges) == 6
    assert ranges[0][0] == 0 and ranges[-1][1] == len(ref.frame)
    assert all(a < b for a, b in ranges)
    assert all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1))
    assert {b for _, b in ranges} <= set(bounds)
    np.testing.assert_array_equal(piece_offsets(ds), bounds)


def test_partitions_of_one_large_piece_fall_on_chunks(client, ref):
    ds = sl.open_dataset(ref.X, target=ref.label, chunk_rows=64)  # a single in-memory piece
    ranges = _engine(client, partition_rows=300).partitions(ds)
    assert len(ranges) == 4
    assert [a % 64 for a, _ in ranges] == [0, 0, 0, 0]
    assert ranges[-1][1] == len(ref.X)


# -- reductions equal the local engine's --------------------------------------------------
@pytest.mark.parametrize("kind", ["zarr", "parquet"])
def test_describe_equals_local_engine(client, stores, ref, kind):
    ds = sl.open_dataset(stores[kind], target="w" if kind == "zarr" else "label",
                         chunk_rows=64)
    local = sl.describe(ds, engine=LocalEngine())
    remote = sl.describe(ds, engine=_engine(client, partitions_per_worker=3))
    X64 = ds_matrix(ds)
    np.testing.assert_allclose(remote.mean, X64.mean(axis=0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(remote.mean, local.mean, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(remote.std, local.std, rtol=1e-6)
    np.testing.assert_array_equal(remote.min, X64.min(axis=0))
    np.testing.assert_array_equal(remote.max, local.max)
    np.testing.assert_array_equal(remote.quantiles, local.quantiles)
    np.testing.assert_array_equal(remote.sample_rows, local.sample_rows)
    assert remote.n_rows == local.n_rows == len(ref.X)
    if kind == "parquet":
        np.testing.assert_array_equal(remote.class_counts,
                                      [np.sum(ref.label == c) for c in (3, 5, 7)])
    else:
        assert remote.target_mean == pytest.approx(float(ref.weight.astype(np.float64).mean()),
                                                   rel=1e-6)


def test_additive_summary_leaves_rows_of_weight_zero_out_on_dask(client):
    # AdditiveSVC's describe pass over weighted rows, junk rows of weight 0 after them: on
    # the cluster, merged over partitions, it is the local summary of the rows alone
    rng = np.random.default_rng(8)
    X = rng.normal(size=(1500, 3)).astype(np.float32)
    y = rng.integers(0, 2, 1500)
    junk = (1e3 + rng.random((700, 3))).astype(np.float32)
    weight = np.r_[rng.choice([0.5, 2.0], 1500), np.zeros(700)]
    weighted = sl.open_dataset(np.r_[X, junk], target=np.r_[y, rng.integers(0, 2, 700)],
                               weight=weight, chunk_rows=128)
    alone = sl.open_dataset(X, target=y, weight=weight[:1500], chunk_rows=128)
    holdout = Holdout.fraction(0.1, 5)
    remote = _engine(client, partition_rows=512).run(
        SummaryPass(FEATURES[:3], 2, holdout, seed=2), weighted)
    local = LocalEngine().run(SummaryPass(FEATURES[:3], 2, holdout, seed=2), alone)
    held = holdout.mask(np.arange(1500))
    assert (remote.n_train, remote.n_holdout) == (local.n_train, local.n_holdout) \
        == (1500 - held.sum(), held.sum())
    assert remote.train_weight == pytest.approx(weight[:1500][~held].sum(), rel=1e-12)
    a, b = remote.description, local.description
    assert a.n_rows == b.n_rows == 1500
    np.testing.assert_array_equal(a.min, X.min(axis=0))
    np.testing.assert_array_equal(a.max, X.max(axis=0))
    np.testing.assert_allclose(a.mean, X.astype(np.float64).mean(axis=0), rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_array_equal(a.sample_rows, b.sample_rows)
    np.testing.assert_array_equal(a.quantiles, b.quantiles)
    np.testing.assert_array_equal(a.class_counts, np.bincount(y, minlength=2))


def ds_matrix(ds) -> np.ndarray:
    return np.vstack([c.X for c in ds.chunks(prefetch=0)]).astype(np.float64)


def test_evaluate_equals_local_engine_and_sklearn(client, stores, ref):
    ds = sl.open_dataset(stores["parquet"], target="label", features=FEATURES, chunk_rows=50)
    model = LogisticRegression(max_iter=200).fit(ref.X, ref.label)
    remote = sl.evaluate(model, ds, engine=_engine(client, partitions_per_worker=2))
    local = sl.evaluate(model, ds, engine=LocalEngine())
    assert remote["accuracy"] == pytest.approx(accuracy_score(ref.label, model.predict(ref.X)),
                                               abs=1e-12)
    assert remote["log_loss"] == pytest.approx(log_loss(ref.label, model.predict_proba(ref.X)),
                                               rel=1e-6)
    assert remote["confusion_matrix"] == confusion_matrix(ref.label,
                                                          model.predict(ref.X)).tolist()
    assert remote["accuracy"] == local["accuracy"]
    assert remote["confusion_matrix"] == local["confusion_matrix"]
    assert remote["log_loss"] == pytest.approx(local["log_loss"], rel=1e-12)


def test_reduce_with_plain_functions(client, stores, ref):
    engine = _engine(client, partition_rows=250)
    total = engine.reduce(sl.open_dataset(stores["zarr"], chunk_rows=64),
                          start=lambda: np.zeros(len(FEATURES)),
                          step=lambda s, c: s + c.X.sum(axis=0, dtype=np.float64),
                          merge=lambda a, b: a + b)
    np.testing.assert_allclose(total, ref.X.astype(np.float64).sum(axis=0), rtol=1e-9)


# -- sequential passes: per-example state stays with its partition --------------------------
class VisitCount:
    """Sequential pass adding 1 to every row's state; the state is the rows seen so far."""

    kind = "sequential"

    def __init__(self, counts: ExampleState) -> None:
        self.counts = counts

    def start(self) -> list[float]:
        return [0.0, 0.0]

    def step(self, state: list[float], chunk) -> list[float]:
        values = self.counts.get(chunk)
        self.counts.put(chunk, values + 1.0)
        return [state[0] + chunk.n_rows, state[1] + float(values.sum())]

    def merge(self, a: list[float], b: list[float]) -> list[float]:
        return [a[0] + b[0], a[1] + b[1]]

    def finish(self, state: list[float]) -> list[float]:
        return state


def test_example_state_is_carried_between_epochs(client, stores, ref):
    ds = sl.open_dataset(stores["zarr"], chunk_rows=64)
    n = len(ref.X)
    engine = _engine(client, partitions_per_worker=2)
    counts = ExampleState(n)
    for epoch in range(3):
        rows, before = engine.run(VisitCount(counts), ds, shuffle=True, seed=3, epoch=epoch)
        assert rows == n
        assert before == epoch * n  # each pass reads the values the last one wrote
    np.testing.assert_array_equal(counts.to_numpy(), np.full(n, 3.0))
    # a change made on the client between passes reaches the workers
    counts.put(sl.Chunk(X=np.empty((10, 0), np.float32), y=None, start=100),
               np.full(10, 10.0, np.float32))
    _, before = engine.run(VisitCount(counts), ds, shuffle=True, seed=3, epoch=3)
    assert before == 3 * (n - 10) + 100
    expected = np.full(n, 4.0)
    expected[100:110] = 11.0
    np.testing.assert_array_equal(counts.to_numpy(), expected)
    engine.close()


# -- models -------------------------------------------------------------------------------
# PEGASOS with the defaults' choices (bases, pairs, value terms: every model trained to
# choose the one kept runs on the cluster); dual CD on one model, 16 bases and no pairs
@pytest.mark.parametrize("solver,params", [("pegasos", {"epochs": 5}),
                                           ("dcd", {"epochs": 5, "C": 0.1, "n_bases": 16,
                                                    "interactions": 0})])
def test_additive_svc_mixing_matches_local_accuracy(client, problem, solver, params):
    store, (X_test, y_test) = problem
    ds = sl.open_dataset(store, chunk_rows=2500)
    local = AdditiveSVC(solver=solver, **params).fit(ds)
    mixed = AdditiveSVC(solver=solver, **params).fit(ds, engine=_engine(client))
    local_acc = accuracy_score(y_test, local.predict(X_test))
    mixed_acc = accuracy_score(y_test, mixed.predict(X_test))
    assert local_acc > 0.88
    assert abs(mixed_acc - local_acc) <= 0.005
    assert mixed.n_train_ == local.n_train_
    assert mixed.score(ds, engine=_engine(client)) == pytest.approx(
        accuracy_score(ds_labels(ds), mixed.predict(ds_matrix(ds).astype(np.float32))),
        abs=1e-12)


def _store(path, X: np.ndarray, y: np.ndarray, rows: int = 2500):
    """``X`` and ``y`` as a zarr store of ``rows``-row chunks, opened in such chunks."""
    group = zarr.open_group(str(path), mode="w")
    group.create_array("X", data=X, chunks=(rows, X.shape[1]))
    group.create_array("y", data=y, chunks=(rows,))
    return sl.open_dataset(str(path), chunk_rows=rows)


def test_additive_svc_screens_the_same_pairs_on_dask(client, tmp_path) -> None:
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (20_000, 5)).astype(np.float32)
    y = (X[:, 0] + 2 * X[:, 1] * X[:, 2] - np.sign(X[:, 3] * X[:, 4]) > 0).astype(np.int64)
    ds = _store(tmp_path / "pairs.zarr", X, y)
    local = AdditiveSVC(interactions=2).fit(ds)
    mixed = AdditiveSVC(interactions=2).fit(ds, engine=_engine(client))
    # the per-feature model is mixed across workers, so its residuals, hence the scores,
    # differ a little; the screening itself is a reduction
    np.testing.assert_allclose(mixed.interaction_scores_, local.interaction_scores_,
                               rtol=0.02)
    assert set(local.interactions_) == {("x1", "x2"), ("x3", "x4")}
    assert mixed.interactions_ == local.interactions_
    assert abs(mixed.score(X, y) - local.score(X, y)) <= 0.01


def test_additive_svc_keeps_the_same_value_terms_on_dask(client, tmp_path) -> None:
    rng = np.random.default_rng(4)
    X = np.stack([rng.integers(0, 40, 20_000), rng.normal(size=20_000)],
                 axis=1).astype(np.float32)
    f = 2.5 * np.isin(X[:, 0], (7, 19, 31)) + np.sin(2 * X[:, 1]) - 0.4
    y = (f + 0.5 * rng.normal(size=20_000) > 0).astype(np.int64)
    ds = _store(tmp_path / "values.zarr", X, y)
    local = AdditiveSVC(interactions=0).fit(ds)
    mixed = AdditiveSVC(interactions=0).fit(ds, engine=_engine(client))
    # the screening is a reduction over the per-feature model, mixed across workers
    assert local.value_check_["screened"] == mixed.value_check_["screened"] == [0]
    np.testing.assert_allclose(mixed.value_check_["scores"], local.value_check_["scores"],
                               rtol=0.05)
    assert mixed.value_terms_ == local.value_terms_
    assert abs(mixed.score(X, y) - local.score(X, y)) <= 0.01


def test_dcd_lanes_merge_to_w_of_the_dual_variables(client, tmp_path) -> None:
    # 2 lanes of 2 partitions: after every epoch the model is w(alpha) of the dual
    # variables the workers stored, and the gap is primal minus dual of those (numpy)
    rng = np.random.default_rng(7)
    X = rng.normal(size=(2000, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0).astype(np.int64)
    ds = _store(tmp_path / "dcd.zarr", X, y, rows=250)
    engine = _engine(client, partitions_per_worker=2)
    assert len(engine.partitions(ds)) == 4
    emb = embedding_params(None, 4)
    Z = np.c_[X.astype(np.float64), np.full(len(X), 0.5)]
    sign = np.where(y == 1, 1.0, -1.0)[:, None]
    W = np.zeros((1, 5))
    previous = previous_dual = None
    with ExampleState(len(X), 1) as alpha:
        for epoch in range(4):
            pass_ = DcdEpochPass(TrainingRows(emb, None, None), ModelPairs.of(2), 0.1, HINGE,
                                 0.5, alpha, epoch, W, None if previous is None else W)
            state = engine.run(pass_, ds, shuffle=True, seed=1, epoch=epoch)
            a = alpha.to_numpy().astype(np.float64)
            w_alpha = (a * sign).T @ Z
            # up to the rounding of the written variables to float32 (half an ulp each)
            assert np.all(np.abs(state.W - w_alpha) <= 2.0**-23 * (a.T @ np.abs(Z)) + 1e-12)
            if previous is not None:
                primal = 0.5 * np.sum(W**2) + 0.1 * np.maximum(0.0, 1.0 - sign * (Z @ W.T)).sum()
                true_gap = (primal - previous_dual) / primal
                assert true_gap > 0.0
                assert duality_gap(state, previous, W, emb, None, 0.5) == pytest.approx(
                    true_gap, rel=1e-4)
            W, previous = state.W, state
            previous_dual = a.sum() - 0.5 * np.sum(w_alpha**2)
    engine.close()


def test_only_dcd_lanes_get_a_share_of_the_rows() -> None:
    # shares in proportion to the lanes' rows, adding up to 1; PEGASOS (no lane method)
    # and a pass in one lane run the pass itself
    ranges = [(0, 300), (300, 500), (500, 900), (900, 1000)]
    emb = embedding_params(None, 2)
    with ExampleState(1000, 1) as alpha:
        dcd = DcdEpochPass(TrainingRows(emb, None, None), ModelPairs.of(2), 1.0, HINGE, 1.0,
                           alpha, 0, np.zeros((1, 3)))
        np.testing.assert_allclose(_lane_shares(dcd, ranges, [[0, 1], [2, 3]]), [0.5, 0.5])
        np.testing.assert_allclose(_lane_shares(dcd, ranges, [[0], [1, 2, 3]]), [0.3, 0.7])
        assert _lane_shares(dcd, ranges, [[0, 1, 2, 3]]) == [None]
    pegasos = PegasosEpochPass(TrainingRows(emb, None, None), ModelPairs.of(2), 0.1, 1.0, 0,
                               PegasosState(np.zeros((1, 3)), np.zeros((1, 3)), 0))
    assert _lane_shares(pegasos, ranges, [[0, 1], [2, 3]]) == [None, None]


def test_dcd_on_dask_converges_to_the_local_model(client, tmp_path) -> None:
    # both fits stop on a true duality gap, so both models are near the one optimum
    rng = np.random.default_rng(8)
    X = rng.normal(size=(6000, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0).astype(np.int64)
    ds = _store(tmp_path / "converge.zarr", X, y, rows=500)
    params = {"solver": "dcd", "C": 0.1, "tol": 1e-3, "epochs": 300, "calibrate": False,
              "interactions": [("x0", "x1")], "n_bases": 6, "pair_bases": 6}
    local = AdditiveSVC(**params).fit(ds)
    mixed = AdditiveSVC(**params).fit(ds, engine=_engine(client))
    for model in (local, mixed):
        assert model.n_iter_ < 300 and 0.0 < model.monitor_loss_[-1] <= 1e-3
    X_test = rng.normal(size=(2000, 4)).astype(np.float32)
    a, b = local.decision_function(X_test), mixed.decision_function(X_test)
    assert np.abs(a - b).max() <= 0.05 * np.abs(a).max()  # 0.016 when written
    assert np.mean(np.sign(a) == np.sign(b)) >= 0.99


def ds_labels(ds) -> np.ndarray:
    return np.concatenate([ds.classes[c.y] for c in ds.chunks(prefetch=0)])


def test_engine_string_uses_the_default_client(client, problem):
    store, _ = problem
    with pytest.raises(EngineError, match="no"):
        resolve_engine("dask")
    with Client(client.scheduler.address) as current:
        engine = resolve_engine("dask")
        assert isinstance(engine, DaskEngine) and engine.client is current
        ds = sl.open_dataset(store, chunk_rows=5000)
        desc = sl.describe(ds, engine="dask")
        np.testing.assert_array_equal(desc.class_counts, sl.describe(ds).class_counts)


def test_an_engine_whose_client_was_closed_says_so(client, problem):
    store, _ = problem
    with Client(client.scheduler.address) as own:
        engine = DaskEngine(own)
    with pytest.raises(EngineError, match="client of this engine is closed"):
        sl.describe(sl.open_dataset(store, chunk_rows=5000), engine=engine)


# -- faults -------------------------------------------------------------------------------
class DcdKilledOnce(DcdEpochPass):
    """DCD epoch whose worker process is killed once, after writing part of a partition."""

    marker: str
    kill_at: int

    def step(self, state, chunk):
        state = super().step(state, chunk)
        if chunk.start == self.kill_at and not os.path.exists(self.marker):
            Path(self.marker).touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return state


class KillingEngine(DaskEngine):
    """Runs the second DCD epoch with :class:`DcdKilledOnce`."""

    def __init__(self, client, marker: str, kill_at: int, **kwargs) -> None:
        super().__init__(client, **kwargs)
        self.marker, self.kill_at = marker, kill_at

    def run(self, pass_, data, **options):
        if isinstance(pass_, DcdEpochPass) and options.get("epoch") == 1:
            pass_ = copy.copy(pass_)
            pass_.__class__ = DcdKilledOnce
            pass_.marker, pass_.kill_at = self.marker, self.kill_at
        return super().run(pass_, data, **options)


def test_killed_worker_costs_a_retry_not_the_result(client, problem, tmp_path):
    store, (X_test, y_test) = problem
    ds = sl.open_dataset(store, chunk_rows=2500)
    # settings given, not chosen: one model is trained (the defaults compare ten, each
    # with its passes on the cluster), the one whose second epoch is killed, so the
    # comparison below is of that model itself
    params = {"solver": "dcd", "epochs": 3, "C": 0.1, "n_bases": 16, "interactions": 0,
              "value_terms": False}
    clean = AdditiveSVC(**params).fit(ds, engine=_engine(client, partition_rows=7500))
    marker = tmp_path / "killed"
    pids = set(client.run(os.getpid).values())
    faulty = AdditiveSVC(**params).fit(
        ds, engine=KillingEngine(client, str(marker), kill_at=7500 + 2500,
                                 partition_rows=7500))
    assert marker.exists()  # a worker did die in the middle of the second epoch
    client.wait_for_workers(2, timeout=30)
    assert set(client.run(os.getpid).values()) != pids
    np.testing.assert_allclose(faulty.coef_d_, clean.coef_d_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(faulty.platt_a_, clean.platt_a_, rtol=1e-12)
    assert faulty.score(X_test, y_test) == clean.score(X_test, y_test)


def test_corrupt_file_fails_with_its_name(client, tmp_path, ref):
    root = tmp_path / "corrupt"
    root.mkdir()
    half = len(ref.frame) // 2
    for k, part in enumerate((ref.frame.iloc[:half], ref.frame.iloc[half:])):
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False),
                       root / f"part-{k}.parquet", row_group_size=100,
                       write_page_checksum=True, compression="none")
    bad = root / "part-1.parquet"
    raw = bytearray(bad.read_bytes())
    for i in range(200, 600):  # data pages of the first row group; the footer stays intact
        raw[i] ^= 0x5A
    bad.write_bytes(bytes(raw))
    ds = sl.open_dataset(str(root), target="label", chunk_rows=50)
    with pytest.raises(ReadError, match="part-1.parquet"):
        sl.describe(ds, engine=_engine(client, partitions_per_worker=2))


# -- memory -------------------------------------------------------------------------------
def _column_sums() -> Reduction:
    return Reduction(start=lambda: np.zeros(2),
                     step=lambda s, c: s + np.array([c.n_rows, c.X.sum(dtype=np.float64)]),
                     merge=lambda a, b: a + b)


def test_client_memory_stays_flat(client, tmp_path):
    # tracemalloc counts this process, where LocalCluster also runs the scheduler (about
    # 1 MB of its own traffic): the client side must stay below one chunk, whatever the rows
    chunk_rows, d = 32_768, 32
    store = tmp_path / "big.zarr"
    group = zarr.open_group(str(store), mode="w")
    X = group.create_array("X", shape=(20 * chunk_rows, d), chunks=(chunk_rows, d),
                           dtype="float32", compressors=None)
    rng = np.random.default_rng(0)
    total = 0.0
    for k in range(20):
        block = rng.random((chunk_rows, d), dtype=np.float32)
        total += block.sum(dtype=np.float64)
        X[k * chunk_rows:(k + 1) * chunk_rows] = block
    chunk_bytes = chunk_rows * d * 4
    ds = sl.open_dataset(str(store), chunk_rows=chunk_rows)
    engine = _engine(client, partitions_per_worker=4)

    def peak(engine, rows) -> tuple[int, np.ndarray]:
        tracemalloc.start()
        try:
            result = engine.run(_column_sums(), ds, rows=rows)
            return tracemalloc.get_traced_memory()[1], result
        finally:
            tracemalloc.stop()

    # the measurement sees a chunk when one is read in this process
    assert peak(LocalEngine(prefetch=0), (0, 2 * chunk_rows))[0] >= chunk_bytes
    peak(engine, (0, 4 * chunk_rows))  # first run: imports, connections
    small, _ = peak(engine, (0, 4 * chunk_rows))
    large, sums = peak(engine, (0, 20 * chunk_rows))
    assert sums[0] == 20 * chunk_rows and sums[1] == pytest.approx(total, rel=1e-9)
    assert large < chunk_bytes / 2
    assert large < 1.5 * small + 100_000


def test_worker_environ_splits_the_cores_between_workers():
    import os

    from streamlearn.engine.local_cluster import worker_environ

    cores = len(os.sched_getaffinity(0))
    one = worker_environ(1)
    assert one["MALLOC_TRIM_THRESHOLD_"] is None
    assert one["OMP_NUM_THREADS"] == one["ZARR_THREADING__MAX_WORKERS"] == str(cores)
    assert worker_environ(2 * cores)["OMP_NUM_THREADS"] == "1"  # never below one thread
    assert worker_environ(1, decode_threads=3)["ZARR_THREADING__MAX_WORKERS"] == "3"
    with pytest.raises(ValueError, match="decode_threads"):
        worker_environ(1, decode_threads=0)


def test_local_cluster_workers_keep_glibc_adaptive_malloc_and_their_share_of_cores(dask_client):
    # dask's nanny would start them with MALLOC_TRIM_THRESHOLD_=65536 (a fresh mmap per
    # chunk-sized buffer) and one decoding thread; local_cluster leaves the first unset and
    # sizes pyarrow's and zarr's pools to the worker's share of the cores
    import os

    import pyarrow

    share = max(1, len(os.sched_getaffinity(0)) // 2)
    env = dask_client.run(lambda: ({k: os.environ.get(k) for k in
                                    ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS",
                                     "MKL_NUM_THREADS")},
                                   pyarrow.cpu_count(),
                                   __import__("zarr").config.get("threading.max_workers")))
    assert len(env) == 2
    for worker_env, arrow_threads, zarr_threads in env.values():
        assert worker_env == {"MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": str(share),
                              "MKL_NUM_THREADS": "1"}
        assert arrow_threads == share
        assert int(zarr_threads) == share


def test_local_cluster_workers_ignore_sigint(dask_client):
    # Ctrl-C reaches the worker processes too (one process group): the client handles it
    import signal

    ignored = dask_client.run(lambda: signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
    assert ignored == dict.fromkeys(ignored, True) and len(ignored) == 2


def test_local_cluster_adds_its_preload_to_the_configured_ones():
    import importlib

    import dask

    module = importlib.import_module("streamlearn.engine.local_cluster")  # not the function
    name = module.__name__
    assert module._with_preload(None, None) == {"preload": [name], "preload_argv": [[]]}
    with dask.config.set({"distributed.worker.preload": ["mine"],
                          "distributed.worker.preload-argv": ["--flag"]}):
        assert module._with_preload(None, None) == {"preload": ["mine", name],
                                                    "preload_argv": [["--flag"], []]}
    assert module._with_preload("a", [["-x"]]) == {"preload": ["a", name],
                                                   "preload_argv": [["-x"], []]}


@pytest.mark.parametrize("kind", ["array", "frame"])
def test_dask_collections_of_uneven_blocks_fit_on_the_cluster_they_compute_on(client, kind):
    # each partition task reads by computing the collection's graph on the same cluster of
    # single-thread workers: without leaving the pool, the reads waited on busy threads
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd

    from streamlearn.models import ShareBoostClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)
    blocks = (700, 17, 800, 483)
    if kind == "array":
        data = (da.from_array(X, chunks=(blocks, 3)), da.from_array(y, chunks=(blocks,)))
    else:
        frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(t=y)
        data = (dd.from_pandas(frame, npartitions=1).repartition(
            divisions=[0, 700, 717, 1517, 1999]), "t")
    # one round: each of its passes reads every block through the cluster, as three
    # rounds' do; leaving out the 17-row block moves the scores (up to 19) by 0.05
    params = {"n_rounds": 1, "chunk_rows": 500, "features": "linear"}
    on_cluster = ShareBoostClassifier(**params).fit(*data, engine=_engine(client))
    local = ShareBoostClassifier(**params).fit(X, y)
    np.testing.assert_allclose(on_cluster.decision_function(X), local.decision_function(X),
                               rtol=1e-9, atol=1e-9)


def test_dask_collections_are_read_through_the_worker_s_client():
    # a worker whose dask configuration names the distributed scheduler before any of its
    # tasks made a client (as another client's set-up leaves it) had failed the read
    import dask
    import dask.array as da

    from streamlearn.models import ShareBoostClassifier

    cluster = local_cluster(1)
    own = Client(cluster, set_as_default=False)
    try:
        own.run(lambda: dask.config.set(scheduler="dask.distributed") and None)
        rng = np.random.default_rng(1)
        X = rng.normal(size=(1200, 3)).astype(np.float32)
        y = (X[:, 0] - X[:, 2] > 0).astype(np.int64)
        params = {"n_rounds": 2, "chunk_rows": 400, "features": "linear"}
        on_cluster = ShareBoostClassifier(**params).fit(
            da.from_array(X, chunks=(500, 3)), da.from_array(y, chunks=(500,)),
            engine=_engine(own))
        local = ShareBoostClassifier(**params).fit(X, y)
        np.testing.assert_allclose(on_cluster.decision_function(X),
                                   local.decision_function(X), rtol=1e-9, atol=1e-9)
    finally:
        own.close()
        cluster.close()


def test_a_closed_client_is_an_engine_error_for_data_met_before(tmp_path, ref):
    cluster = local_cluster(1)
    own = Client(cluster, set_as_default=False)
    engine = _engine(own)
    dataset = sl.open_dataset(write_parquet_dir(ref.frame, tmp_path / "p"), target="label")
    # one model of one epoch: a fit whose passes met the data on the cluster
    model = AdditiveSVC(epochs=1, tol=None, n_bases=8, interactions=0,
                        value_terms=False).fit(dataset, engine=engine)
    own.close()
    cluster.close()
    with pytest.raises(EngineError, match="client of this engine is closed"):
        model.score(dataset, engine=engine)  # its layout is known: no call asked the client
