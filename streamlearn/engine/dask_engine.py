"""``DaskEngine``: the same passes, split over the partitions of a dataset on a dask cluster.

Every pass runs as one task per partition plus a binary tree of ``merge`` tasks:

- a partition is a range of rows whose ends fall on storage piece boundaries (parquet files
  and row groups, zarr chunks of rows), see :mod:`streamlearn.engine.partitions`;
- each task receives the pass and the ``Dataset`` object (a description of the store: paths
  or fsspec URLs, schema, pieces), opens the store itself and walks its partition's chunks
  with ``start``/``step``; the client sends tasks and receives states, never rows;
- partial states are combined by ``merge`` in a fixed binary tree over the partitions, so
  a result does not depend on which worker finished first;
- a *sequential* pass (PEGASOS, dual coordinate descent) runs on every partition from the
  same broadcast state, and the tree of ``merge`` calls averages the partial models
  weighted by rows (iterative parameter mixing, one pass per epoch); a pass with a
  ``lane(share)`` method (dual coordinate descent) runs ``pass_.lane(share)`` in each
  lane, ``share`` the lane's part of the rows, and merges as it defines;
- every partition task returns, with its partial state, the rows and bytes of the chunks
  it walked (:class:`Walked`); the ``merge`` tasks add them up, so the pass's count in the
  engine's :attr:`~DaskEngine.passes` log is what the workers read, computed where they
  read it;
- per-example state held by a pass (an ``ExampleState``) is mirrored to a scratch zarr
  store on a path all workers reach, one array per partition, double-buffered so that a
  retried task reads and writes exactly what the first attempt did
  (:mod:`streamlearn.engine.shared_state`).

Tasks are pure functions of their inputs, so a worker lost in the middle of a pass costs
the scheduler a re-run of its tasks, never a different result. An error raised while
reading (a corrupt file) fails the pass with that error, as in :class:`LocalEngine`.

In-memory sources (numpy, pandas, pyarrow) hold their rows inside the ``Dataset`` object:
it is then scattered to every worker once (``client.scatter(..., broadcast=True)``), which
is fine for data that fits in memory but is no way to feed a cluster; give the workers a
path or URL of a parquet or zarr store instead.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from streamlearn.data.dataset import Dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.data.open import open_dataset
from streamlearn.engine.accounting import chunk_bytes, chunk_span, open_pass
from streamlearn.engine.partitions import partition_ranges
from streamlearn.engine.passes import EngineBase, Pass
from streamlearn.engine.progress import Progress, progress_enabled
from streamlearn.engine.shared_state import SharedExampleState, state_fingerprint
from streamlearn.errors import EngineError

R = TypeVar("R")

#: Objects (a pass, a dataset) whose pickle is larger are scattered once to every worker
#: rather than sent inside each task.
INLINE_BYTES = 1 << 20
#: Layouts (partition ranges per dataset) remembered by an engine.
MAX_LAYOUTS = 16


def default_client() -> Any:
    """The current ``dask.distributed`` client, or an ``EngineError`` saying how to get one."""
    try:
        from distributed import default_client as current
    except ImportError as exc:  # pragma: no cover - distributed is a dependency
        raise EngineError("engine='dask' needs the 'distributed' package") from exc
    try:
        return current()
    except ValueError as exc:
        raise EngineError(
            "engine='dask' uses the current dask.distributed client, and there is none: "
            "create one first (distributed.Client('tcp://scheduler:8786'), or "
            "Client(LocalCluster(n_workers=...)) on one machine), or pass "
            "engine=DaskEngine(client)"
        ) from exc


@dataclass(frozen=True)
class Walked:
    """A partial state with what was read to compute it.

    Attributes
    ----------
    state : object
        The pass state.
    rows : int
        Rows of the chunks walked (see :func:`~streamlearn.engine.accounting.chunk_span`).
    nbytes : int
        Bytes of those chunks (see :func:`~streamlearn.engine.accounting.chunk_bytes`).
    """

    state: Any
    rows: int = 0
    nbytes: int = 0


def walk_partition(pass_: Pass[Any, Any], dataset: Dataset, index: int, rows: tuple[int, int],
                   options: dict[str, Any], shared: tuple[str, ...],
                   state: Walked | None = None, share: float | None = None) -> Walked:
    """Task body: run ``pass_`` over the chunks of rows ``rows``.

    The walk starts from ``pass_.start()``, or from a copy of ``state`` (the result of the
    previous partition of a sequential lane; copied because ``step`` may update a state in
    place and the input must stay as it was, should this task run again). ``shared`` names
    the attributes of ``pass_`` holding a :class:`SharedExampleState`; the task sees
    partition ``index`` of each instead. With ``share`` the task runs
    ``pass_.lane(share)``, the pass of a lane holding that part of the rows. Returns the
    partial state with the rows and bytes read so far by the lane (those of ``state`` plus
    this partition's).
    """
    if share is not None:
        pass_ = pass_.lane(share)  # type: ignore[attr-defined]
    if shared:
        pass_ = copy.copy(pass_)
        writable = pass_.kind == "sequential"
        views = [getattr(pass_, name).for_partition(index, writable=writable)
                 for name in shared]
        for name, view in zip(shared, views, strict=True):
            setattr(pass_, name, view)
    read_rows, read_bytes = (0, 0) if state is None else (state.rows, state.nbytes)
    current = pass_.start() if state is None else copy.deepcopy(state.state)
    size = int(options.get("chunk_rows") or dataset.chunk_rows)
    with _out_of_the_pool(getattr(dataset.source, "computes_on_cluster", False)):
        for chunk in dataset.chunks(rows=rows, **options):
            current = pass_.step(current, chunk)
            read_rows += chunk_span(chunk, size, rows[1])
            read_bytes += chunk_bytes(chunk)
    if shared:
        for view in views:
            view.complete()
    return Walked(current, read_rows, read_bytes)


@contextmanager
def _out_of_the_pool(leave: bool) -> Iterator[None]:
    """With ``leave``, the task's thread leaves its worker's pool while inside
    (``distributed.secede``, then ``rejoin``): a dask collection's reads compute its graph
    on the same cluster, whose tasks need the threads the partition tasks would hold.

    The reads compute through the worker's own client, named as dask's scheduler while
    inside: left to the process's configuration, a worker set to the distributed scheduler
    before any task there had made a client failed the read ("no Client active").
    """
    if not leave:
        yield
        return
    import dask
    from distributed import get_client, rejoin, secede

    client = get_client()
    secede()
    try:
        with dask.config.set(scheduler=client):
            yield
    finally:
        rejoin()


def _lane_shares(pass_: Pass[Any, Any], ranges: list[tuple[int, int]],
                 lanes: list[list[int]]) -> list[float | None]:
    """Each lane's part of the rows, for a sequential pass with a ``lane`` method split
    into several lanes (else None: the lanes run ``pass_`` itself)."""
    if len(lanes) < 2 or not callable(getattr(pass_, "lane", None)):
        return [None] * len(lanes)
    sizes = [sum(ranges[i][1] - ranges[i][0] for i in lane) for lane in lanes]
    total = sum(sizes)
    return [size / total for size in sizes]


def merge_states(pass_: Pass[Any, Any], a: Walked, b: Walked) -> Walked:
    """Task body: ``pass_.merge`` of the states, the sum of the rows and bytes read."""
    return Walked(pass_.merge(a.state, b.state), a.rows + b.rows, a.nbytes + b.nbytes)


def _pickled_size(obj: Any, what: str) -> int:
    from distributed.protocol.pickle import dumps

    try:
        return len(dumps(obj))
    except Exception as exc:
        raise EngineError(f"{what} cannot be sent to dask workers (it does not pickle): "
                          f"{type(exc).__name__}: {exc}") from exc


@dataclass(frozen=True)
class Layout:
    """How an engine splits a dataset: partitions, and lanes for sequential passes.

    Attributes
    ----------
    ranges : list of (start, stop)
        The partitions; a reduction pass runs one task per partition.
    lanes : int
        A sequential pass walks the partitions in this many lanes (one per worker thread
        when the layout was made): each lane threads one state through its consecutive
        partitions, one task per partition, and the lanes' states are merged at the end
        of the pass. Fewer, longer lanes make parameter mixing converge like one long walk.
    """

    ranges: list[tuple[int, int]]
    lanes: int

    def lane_partitions(self) -> list[list[int]]:
        """Partition indices of each lane, consecutive and about equal in rows."""
        bounds = np.linspace(0, len(self.ranges), self.lanes + 1).round().astype(int)
        return [list(range(bounds[j], bounds[j + 1])) for j in range(self.lanes)]


class DaskEngine(EngineBase):
    """Run passes over a dataset's partitions on a ``dask.distributed`` cluster.

    Parameters
    ----------
    client : distributed.Client, optional
        The cluster's client; by default the current one (``distributed.default_client()``).
    partition_rows : int, optional
        Rows per partition (one task per partition and pass). By default a dataset is cut
        into ``partitions_per_worker`` partitions per worker thread of the cluster when the
        engine first meets it; the cut is then kept for that dataset, so per-example state
        stays with its partition from one epoch to the next.
    partitions_per_worker : int
        Partitions per worker thread when ``partition_rows`` is not given.
    chunk_rows : int, optional
        Rows per chunk inside a partition; defaults to the dataset's own setting.
    prefetch : int, optional
        Chunks each task reads ahead; defaults to the dataset's own setting.
    scratch : str or Path, optional
        Directory for per-example state that every worker can reach (a shared file system
        on a real cluster). By default a temporary directory on the client's machine,
        which suits a ``LocalCluster``; it is removed by :meth:`close`.
    progress : bool, optional
        Progress bar of the partitions done (rows/s, ETA) on stderr.

    Examples
    --------
    >>> from distributed import Client, LocalCluster                    # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=4, threads_per_worker=1))  # doctest: +SKIP
    >>> AdditiveSVC().fit("s3://bucket/train.zarr", engine=DaskEngine(client))  # doctest: +SKIP
    """

    def __init__(
        self,
        client: Any = None,
        *,
        partition_rows: int | None = None,
        partitions_per_worker: int = 2,
        chunk_rows: int | None = None,
        prefetch: int | None = None,
        scratch: str | Path | None = None,
        progress: bool | None = None,
    ) -> None:
        if partition_rows is not None and int(partition_rows) < 1:
            raise ValueError(f"partition_rows must be a positive number of rows, "
                             f"got {partition_rows}")
        if int(partitions_per_worker) < 1:
            raise ValueError(f"partitions_per_worker must be at least 1, "
                             f"got {partitions_per_worker}")
        self.client = client if client is not None else default_client()
        self.partition_rows = partition_rows
        self.partitions_per_worker = int(partitions_per_worker)
        self.chunk_rows = chunk_rows
        self.prefetch = prefetch
        self.scratch = scratch
        self.progress = progress
        self._scratch_dir: str | None = None
        self._layouts: dict[tuple[int, int, int, int], tuple[Dataset, Layout]] = {}
        self._mirrors: dict[int, tuple[weakref.ref[ExampleState], SharedExampleState]] = {}
        self._scattered: tuple[Dataset, Any] | None = None

    def __repr__(self) -> str:
        return (f"DaskEngine({self.client!r}, partition_rows={self.partition_rows}, "
                f"partitions_per_worker={self.partitions_per_worker}, "
                f"chunk_rows={self.chunk_rows})")

    def __getstate__(self) -> dict[str, Any]:
        # An engine inside a pickled object (a model's ``engine`` parameter) travels as its
        # settings; the client and cluster-side caches stay with the original.
        return {"client": None, "partition_rows": self.partition_rows,
                "partitions_per_worker": self.partitions_per_worker,
                "chunk_rows": self.chunk_rows, "prefetch": self.prefetch,
                "scratch": self.scratch, "progress": self.progress, "_scratch_dir": None,
                "_layouts": {}, "_mirrors": {}, "_scattered": None}

    # -------------------------------------------------------------------- partitions
    @property
    def n_threads(self) -> int:
        """Worker threads of the cluster now."""
        self._check_open()
        return int(sum(self.client.nthreads().values()))

    def _check_open(self) -> None:
        """An ``EngineError`` when the client was closed."""
        if getattr(self.client, "status", None) in ("closing", "closed"):
            raise EngineError(f"the dask client of this engine is {self.client.status}; "
                              "give the engine (or the model) an open Client")

    def partitions(self, dataset: Dataset, *, rows: tuple[int, int] | None = None,
                   chunk_rows: int | None = None) -> list[tuple[int, int]]:
        """The row ranges this engine splits ``dataset`` (or its ``rows``) into."""
        return self._layout(dataset, rows, chunk_rows).ranges

    def _layout(self, dataset: Dataset, rows: tuple[int, int] | None,
                chunk_rows: int | None) -> Layout:
        size = int(chunk_rows or self.chunk_rows or dataset.chunk_rows)
        lo, hi = rows if rows is not None else (0, dataset.n_rows)
        key = (id(dataset), lo, hi, size)
        known = self._layouts.get(key)
        if known is not None and known[0] is dataset:
            return known[1]
        threads = self.n_threads
        if threads == 0:
            self.client.wait_for_workers(1, timeout=60)
            threads = self.n_threads
        threads = max(threads, 1)
        if self.partition_rows is not None:
            wanted = -(-(hi - lo) // int(self.partition_rows))
        else:
            wanted = self.partitions_per_worker * threads
        ranges = partition_ranges(dataset, wanted, chunk_rows=size, rows=(lo, hi))
        layout = Layout(ranges, min(threads, len(ranges)))
        if len(self._layouts) >= MAX_LAYOUTS:
            self._layouts.pop(next(iter(self._layouts)))
        self._layouts[key] = (dataset, layout)
        return layout

    # -------------------------------------------------------------------- running
    def run(
        self,
        pass_: Pass[Any, R],
        data: Any,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        epoch: int = 0,
        description: str | None = None,
        rows: tuple[int, int] | None = None,
    ) -> R:
        """Run ``pass_`` over every partition of ``data`` and return its result.

        Parameters
        ----------
        pass_ : Pass
            A reduction runs one task per partition, partial states merged in a binary
            tree. A sequential pass runs in lanes (see :class:`Layout`), each starting from
            the pass's initial state; the lanes' states are merged by the pass's own
            ``merge`` (weighted averaging: parameter mixing).
        data : Dataset or anything ``open_dataset`` accepts
        shuffle, seed, epoch
            As in :meth:`Dataset.chunks`, within each partition (each has its own seed);
            a shuffled sequential pass also visits each lane's partitions in a new order.
        description : str, optional
            Label of the progress bar.
        rows : (start, stop), optional
            Restrict the pass to a row range.

        Notes
        -----
        The run is recorded as one pass in :attr:`passes` (and in the logs of
        :func:`~streamlearn.engine.accounting.recording`); its rows and bytes are those the
        partition tasks report with their states, summed by the merge tasks.
        """
        self._check_open()  # a layout known from before asks the client nothing
        dataset = data if isinstance(data, Dataset) else open_dataset(data)
        dataset.classes  # noqa: B018 - resolved once here, not by every task
        size = int(self.chunk_rows or dataset.chunk_rows)
        layout = self._layout(dataset, rows, size)
        ranges = layout.ranges
        label = description or type(pass_).__name__
        record = open_pass(self.passes, label, dataset.n_rows, ranges[-1][1] - ranges[0][0])
        shipped, shared, mirrors = self._share_states(pass_, ranges, size)
        options = {"chunk_rows": size, "shuffle": shuffle, "epoch": int(epoch),
                   "prefetch": self.prefetch}
        base_seed = 0 if seed is None else int(seed)

        client = self.client
        run_id = uuid.uuid4().hex[:12]
        name = type(pass_).__name__.lower()
        pass_arg = self._ship(shipped, f"pass {type(pass_).__name__}", broadcast=True)
        data_arg = self._ship_dataset(dataset)
        futures = []
        order: list[int] = []  # partition of each map task

        def walk(i: int, state: Any = None, share: float | None = None) -> Any:
            order.append(i)
            future = client.submit(
                walk_partition, pass_arg, data_arg, i, ranges[i],
                {**options, "seed": (base_seed * 1_000_003 + i) % 2**63}, shared, state,
                share, key=f"streamlearn-{name}-{run_id}-part-{i}", pure=False)
            futures.append(future)
            return future

        try:
            if pass_.kind == "sequential":
                maps, level = [], []
                lanes = layout.lane_partitions()
                shares = _lane_shares(pass_, ranges, lanes)
                for j, lane in enumerate(lanes):
                    if shuffle:
                        lane = np.random.default_rng([base_seed, int(epoch), j]).permutation(lane)
                    tail = None
                    for i in lane:
                        tail = walk(int(i), tail, shares[j])
                        maps.append(tail)
                    level.append(tail)
            else:
                maps = [walk(i) for i in range(len(ranges))]
                level = list(maps)
            depth = 0
            while len(level) > 1:
                depth += 1
                merged = [
                    client.submit(merge_states, pass_arg, level[i], level[i + 1],
                                  key=f"streamlearn-{name}-{run_id}-merge-{depth}-{i // 2}",
                                  pure=False)
                    for i in range(0, len(level) - 1, 2)
                ]
                futures.extend(merged)
                level = merged + ([level[-1]] if len(level) % 2 else [])
            self._follow(maps, [ranges[i][1] - ranges[i][0] for i in order], label)
            walked: Walked = level[0].result()
        except BaseException:
            client.cancel(futures)
            raise
        if shared and pass_.kind == "sequential":
            for orig, mirror in mirrors:
                swapped = mirror.swapped()
                swapped.pull(orig)
                self._mirrors[id(orig)] = (weakref.ref(orig), swapped)
        record.add(walked.rows, walked.nbytes)
        return pass_.finish(walked.state)

    def close(self) -> None:
        """Remove the scratch store of per-example state this engine made."""
        for _, mirror in self._mirrors.values():
            mirror.remove()
        self._mirrors.clear()
        if self._scratch_dir is not None and self.scratch is None:
            shutil.rmtree(self._scratch_dir, ignore_errors=True)
        self._scratch_dir = None
        self._scattered = None

    def __enter__(self) -> DaskEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------------- helpers
    def _follow(self, maps: list[Any], n_rows: list[int], label: str) -> None:
        """Show partition tasks finishing on the progress bar; raise the first failure."""
        from distributed import as_completed

        rows = {m.key: n for m, n in zip(maps, n_rows, strict=True)}
        with Progress(sum(n_rows), label, progress_enabled(self.progress)) as bar:
            for future in as_completed(maps, loop=self.client.loop):
                if future.status == "error":
                    future.result()  # raises the task's exception here
                bar.update(rows[future.key])

    def _ship(self, obj: Any, what: str, *, broadcast: bool) -> Any:
        """``obj`` itself when small, else a future of it scattered to the workers."""
        if _pickled_size(obj, what) <= INLINE_BYTES:
            return obj
        return self.client.scatter(obj, broadcast=broadcast, hash=False)

    def _ship_dataset(self, dataset: Dataset) -> Any:
        if self._scattered is not None and self._scattered[0] is dataset:
            return self._scattered[1]
        shipped = self._ship(dataset, f"dataset {dataset.source.description}", broadcast=True)
        self._scattered = (dataset, shipped)
        return shipped

    def _scratch(self) -> str:
        if self._scratch_dir is None:
            if self.scratch is not None:
                Path(self.scratch).mkdir(parents=True, exist_ok=True)
                self._scratch_dir = str(self.scratch)
            else:
                self._scratch_dir = tempfile.mkdtemp(prefix="streamlearn-dask-")
                weakref.finalize(self, shutil.rmtree, self._scratch_dir, True)
        return self._scratch_dir

    def _share_states(
        self, pass_: Pass[Any, Any], ranges: list[tuple[int, int]], chunk_rows: int
    ) -> tuple[Pass[Any, Any], tuple[str, ...],
               list[tuple[ExampleState, SharedExampleState]]]:
        """A copy of ``pass_`` whose ``ExampleState`` attributes point at shared mirrors.

        A mirror is made (and filled from the client's state) the first time a state is
        met, or when the partitions change; otherwise it is refreshed only if the client's
        values changed since the last pass.
        """
        names = tuple(n for n, v in vars(pass_).items() if isinstance(v, ExampleState))
        if not names:
            return pass_, (), []
        shipped = copy.copy(pass_)
        mirrors = []
        for name in names:
            orig: ExampleState = getattr(pass_, name)
            known = self._mirrors.get(id(orig))
            mirror = None
            if known is not None and known[0]() is orig:
                mirror = known[1]
                if mirror.ranges != ranges or mirror.chunk_rows != chunk_rows:
                    mirror.remove()
                    mirror = None
                elif state_fingerprint(orig) != mirror.fingerprint:
                    mirror.push(orig)
            if mirror is None:
                mirror = SharedExampleState.create(self._scratch(), orig, ranges, chunk_rows)
                weakref.finalize(orig, mirror.remove)
            self._mirrors[id(orig)] = (weakref.ref(orig), mirror)
            setattr(shipped, name, mirror)
            mirrors.append((orig, mirror))
        return shipped, names, mirrors
