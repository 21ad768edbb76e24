"""Checkpoints: a fit killed at any point and started again resumes where it stopped.

A learner's ``fit`` is a deterministic driver that asks its engine for a sequence of passes
(``run``/``reduce`` calls). :func:`checkpointed` wraps the engine so that the calls are
numbered and their progress is written to a checkpoint directory:

- the result of every completed call is written once, to ``calls/NNNNNN.zip``;
- ``progress.zip`` records how many calls completed and, for the call in progress, the pass
  state after its first ``k`` chunks (written every ``every`` chunks, with a
  :class:`~streamlearn.engine.local.LocalEngine`) together with the values of every
  :class:`~streamlearn.data.example_state.ExampleState` the passes hold (dual variables),
  so per-row values and the pass state are always saved as one consistent snapshot.

When the same fit runs again with the same checkpoint, a completed call returns its stored
result without reading data, the call in progress continues from its saved state at chunk
``k + 1`` of the epoch's (seeded, deterministic) chunk order, and later calls run normally:
the fit ends with the same model as an uninterrupted run. Each call file and the progress
file also record the rows and bytes the call read (see :mod:`streamlearn.engine.accounting`),
so a resumed fit counts its passes as the uninterrupted fit does. Engines that cannot resume inside
a pass (:class:`~streamlearn.engine.dask_engine.DaskEngine`) are checkpointed at the end of
every pass. Every file is written to a temporary file, flushed to disk and renamed over the
old one, so a crash, even in the middle of a write, leaves the previous checkpoint intact.

A checkpoint records a fingerprint of the model's hyper-parameters, the dataset's schema and
row count, the engine and the chunk size; using it for another fit is an error that names
what differs (a local file named another way, ``./a.parquet`` for ``a.parquet`` or an
absolute path, is the same data). A fit holds a lock on the directory while it runs, so a
second fit started on it meanwhile stops with a ``CheckpointError`` instead of writing
over the first one's files. States and results (nested dataclasses, dicts, lists, tuples,
numpy arrays and scalars, streamlearn objects) are stored as JSON plus ``.npy`` arrays,
never pickle; objects are rebuilt only from classes defined in streamlearn.

Recipe for a model: give ``fit`` the arguments ``checkpoint=None,
checkpoint_every=DEFAULT_EVERY`` and wrap the engine, once the dataset is open::

    runner = checkpointed(self._engine(engine), checkpoint, checkpoint_every, self, dataset)

then run every pass through ``runner`` (``runner.run`` / ``runner.reduce``). The driver
must be deterministic given its hyper-parameters (a fixed ``random_state``), keep all state
that changes inside a pass in the pass state or in an ``ExampleState`` attribute of the pass,
and not read an ``ExampleState`` between passes.
"""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import weakref
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from streamlearn.atomic_file import atomic_write_bytes
from streamlearn.data.chunk import Chunk
from streamlearn.data.dataset import Dataset
from streamlearn.data.example_state import ExampleState
from streamlearn.engine import state_codec
from streamlearn.engine.accounting import PassLog, PassRecord, capturing, open_pass
from streamlearn.engine.passes import EngineBase
from streamlearn.errors import CheckpointError

FORMAT = "streamlearn-checkpoint"
FORMAT_VERSION = 1
#: Chunks processed between two checkpoint writes when ``checkpoint_every`` is not given.
DEFAULT_EVERY = 20
#: Rows of an ``ExampleState`` copied at a time to and from a checkpoint.
COPY_ROWS = 1 << 16
#: Hyper-parameters that do not change what a fit computes.
UNFINGERPRINTED = ("engine", "progress")
PROGRESS_FILE = "progress.zip"
#: Held (``flock``) by the fit using the directory, so that a second fit on it stops.
LOCK_FILE = ".lock"


#: Values of pass states and results to and from JSON trees plus arrays, as checkpoints store them.
encode = functools.partial(state_codec.encode, error=CheckpointError)
decode = functools.partial(state_codec.decode, error=CheckpointError)


# -- files: a JSON header and .npy arrays in one zip ----------------------------------------
def _write_bundle(fh: Any, header: dict[str, Any], arrays: dict[str, np.ndarray],
                  extra: Callable[[zipfile.ZipFile], None] | None = None) -> None:
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr("header.json", json.dumps(header, allow_nan=False))
        for name, array in arrays.items():
            buffer = io.BytesIO()
            # np.ascontiguousarray would turn a 0-d array (a scalar) into shape (1,)
            contiguous = array if array.flags.c_contiguous else array.copy(order="C")
            np.lib.format.write_array(buffer, contiguous, allow_pickle=False)
            zf.writestr(f"arrays/{name}.npy", buffer.getvalue())
        if extra is not None:
            extra(zf)


def _read_bundle(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    try:
        with zipfile.ZipFile(path) as zf:
            header = json.loads(zf.read("header.json"))
            arrays = {}
            for member in zf.namelist():
                if member.startswith("arrays/") and member.endswith(".npy"):
                    payload = io.BytesIO(zf.read(member))
                    arrays[member[7:-4]] = np.lib.format.read_array(payload, allow_pickle=False)
    except (zipfile.BadZipFile, KeyError, ValueError, EOFError, OSError) as exc:
        raise CheckpointError(f"checkpoint file {path} is damaged ({exc}); delete the "
                              "checkpoint directory to start the fit afresh") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a streamlearn checkpoint file")
    if header.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{path} has checkpoint format version "
                              f"{header.get('format_version')}; this streamlearn reads "
                              f"version {FORMAT_VERSION}")
    return header, arrays


def _rows(start: int, n_rows: int) -> Chunk:
    """A chunk without columns that addresses rows ``start:start + n_rows`` of a state."""
    return Chunk(X=np.empty((n_rows, 0), dtype=np.float32), y=None, start=start)


def _state_shape(state: ExampleState) -> list[int]:
    return [state.n_rows] if state.n_columns is None else [state.n_rows, int(state.n_columns)]


def _write_state(zf: zipfile.ZipFile, member: str, state: ExampleState) -> None:
    """Stream the values of ``state`` into a ``.npy`` member, ``COPY_ROWS`` rows at a time."""
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype("<f4")), "fortran_order": False,
              "shape": tuple(_state_shape(state))}
    with zf.open(member, "w", force_zip64=True) as out:
        np.lib.format.write_array_header_2_0(out, header)
        for a in range(0, state.n_rows, COPY_ROWS):
            values = state.get(_rows(a, min(COPY_ROWS, state.n_rows - a)))
            out.write(np.ascontiguousarray(values, dtype="<f4").tobytes())


def _read_state(zf: zipfile.ZipFile, member: str, state: ExampleState) -> None:
    """Stream a ``.npy`` member written by :func:`_write_state` into ``state``."""
    with zf.open(member) as src:
        version = np.lib.format.read_magic(src)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, _, dtype = read_header(src)
        if list(shape) != _state_shape(state):
            raise CheckpointError(f"checkpoint holds per-row values of shape {list(shape)}, "
                                  f"the fit has {_state_shape(state)}")
        width = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        for a in range(0, state.n_rows, COPY_ROWS):
            n = min(COPY_ROWS, state.n_rows - a)
            raw = src.read(n * width * dtype.itemsize)
            values = np.frombuffer(raw, dtype=dtype).reshape((n, *shape[1:]))
            state.put(_rows(a, n), values)


# -- the checkpoint directory ----------------------------------------------------------------
def fit_fingerprint(model: Any, dataset: Dataset, engine: Any) -> dict[str, Any]:
    """What a checkpoint must agree on to be resumed: model, data schema, the rows'
    contents (:meth:`~streamlearn.data.dataset.Dataset.content_digest`: blocks of rows
    spread over the data, weights included), the NaN policy, engine, chunking."""
    params = model._json_params() if hasattr(model, "_json_params") else {}
    classes = dataset.classes
    return {
        "model": type(model).__name__,
        "params": {k: v for k, v in sorted(params.items()) if k not in UNFINGERPRINTED},
        "data": {
            "source": dataset.source.description,
            "n_rows": int(dataset.n_rows),
            "features": list(dataset.feature_names),
            "target": dataset.target,
            "weight": dataset.weight,
            "task": dataset.task,
            "classes": None if classes is None else [str(c) for c in classes.tolist()],
            "nan_policy": str(dataset.nan_policy),
            "content": dataset.content_digest(),
        },
        "engine": type(engine).__name__,
        "chunk_rows": int(getattr(engine, "chunk_rows", None) or dataset.chunk_rows),
    }


def _local_path_form(description: str) -> str:
    """A source's description with a local path written one way (resolved, without a
    ``file://`` scheme), so that spellings of the same file agree; anything else as it is."""
    text = description.removeprefix("file://")
    if "://" in text or not os.path.exists(text):
        return description
    return os.path.realpath(text)


def _comparable(fingerprint: Any) -> Any:
    """``fingerprint`` with its data source in :func:`_local_path_form`."""
    data = fingerprint.get("data") if isinstance(fingerprint, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("source"), str):
        return fingerprint
    return {**fingerprint, "data": {**data, "source": _local_path_form(data["source"])}}


def _lock(path: Path) -> Any:
    """The directory's lock file, locked (``flock``) until it is closed; a
    :class:`~streamlearn.errors.CheckpointError` when a running fit holds it. None where
    the platform has no ``flock``."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return None
    handle = open(path / LOCK_FILE, "a")  # held until released
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise CheckpointError(f"checkpoint {path} is in use by another fit that is still "
                              "running; wait for it to end, or give another checkpoint "
                              "path") from None
    return handle


def _differences(stored: Any, now: Any, where: str = "") -> list[str]:
    if isinstance(stored, dict) and isinstance(now, dict):
        out = []
        for key in sorted(set(stored) | set(now)):
            out += _differences(stored.get(key), now.get(key), f"{where}.{key}" if where else key)
        return out
    return [] if stored == now else [f"{where}: {stored!r} in the checkpoint, {now!r} now"]


class Checkpoint:
    """The files of one checkpoint directory.

    Parameters
    ----------
    path : str or path-like
        Directory (created if needed).
    fingerprint : dict
        JSON-safe description of the fit (see :func:`fit_fingerprint`); an existing
        checkpoint with another fingerprint raises :class:`~streamlearn.errors.CheckpointError`.
    """

    def __init__(self, path: str | os.PathLike[str], fingerprint: dict[str, Any]) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise CheckpointError(f"checkpoint path {self.path} is a file; give a directory")
        (self.path / "calls").mkdir(parents=True, exist_ok=True)
        self._lock = _lock(self.path)
        if self._lock is not None:
            weakref.finalize(self, self._lock.close)
        for stale in [*self.path.glob(".*.tmp"), *(self.path / "calls").glob(".*.tmp")]:
            stale.unlink(missing_ok=True)  # left by a write that was interrupted
        self.fingerprint = json.loads(json.dumps(fingerprint))
        self.header: dict[str, Any] | None = None
        self.arrays: dict[str, np.ndarray] = {}
        if self.progress_file.exists():
            try:
                self.header, self.arrays = _read_bundle(self.progress_file)
                diff = _differences(_comparable(self.header.get("fingerprint")),
                                    _comparable(self.fingerprint))
                if diff:
                    raise CheckpointError(
                        f"checkpoint {self.path} was written by another fit ("
                        + "; ".join(diff[:5]) + "); delete it or give another checkpoint "
                        "path")
            except BaseException:
                self.release()
                raise

    def release(self) -> None:
        """Let another fit use the directory (the fit using it has ended)."""
        if self._lock is not None:
            self._lock.close()

    @property
    def progress_file(self) -> Path:
        """The file recording completed calls and the call in progress."""
        return self.path / PROGRESS_FILE

    def _call_file(self, index: int) -> Path:
        return self.path / "calls" / f"{index:06d}.zip"

    def write_result(self, index: int, key: dict[str, Any], result: Any,
                     read: dict[str, Any] | None = None) -> None:
        """Store the result of call ``index`` (atomically), with what it read
        (:meth:`PassRecord.counts <streamlearn.engine.accounting.PassRecord.counts>`)."""
        arrays: dict[str, np.ndarray] = {}
        header = {"format": FORMAT, "format_version": FORMAT_VERSION, "call": index,
                  "key": key, "result": encode(result, arrays)}
        if read is not None:
            header["read"] = read
        atomic_write_bytes(self._call_file(index), lambda fh: _write_bundle(fh, header, arrays))

    def read_result(self, index: int, key: dict[str, Any]) -> Any:
        """The stored result of call ``index``, which must have been the call ``key``."""
        return self.read_call(index, key)[0]

    def read_call(self, index: int, key: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        """The stored result of call ``index`` and what it read (None when not recorded)."""
        path = self._call_file(index)
        if not path.exists():
            raise CheckpointError(f"checkpoint {self.path} lacks the result of call {index} "
                                  f"({path.name}); delete it to start the fit afresh")
        header, arrays = _read_bundle(path)
        _check_key(header.get("key"), key, index, self.path)
        read = header.get("read")
        return decode(header["result"], arrays), read if isinstance(read, dict) else None

    def write_progress(self, completed: int, keys: list[dict[str, Any]],
                       current: dict[str, Any] | None, current_arrays: dict[str, np.ndarray],
                       states: list[ExampleState | None]) -> None:
        """Write ``progress.zip`` atomically.

        ``states[i]`` is the live ``ExampleState`` number ``i`` to snapshot, or None to
        keep its values from the previous progress file.
        """
        previous = self.header
        entries: list[dict[str, Any] | None] = []
        for i, state in enumerate(states):
            if state is not None:
                entries.append({"member": f"example_states/{i}.npy",
                                "shape": _state_shape(state)})
            else:
                old = previous["example_states"] if previous is not None else []
                entries.append(old[i] if i < len(old) else None)
        header = {"format": FORMAT, "format_version": FORMAT_VERSION,
                  "fingerprint": self.fingerprint, "completed": completed, "keys": keys,
                  "current": current, "example_states": entries}

        def copy_states(zf: zipfile.ZipFile) -> None:
            old_zip = None
            try:
                for i, state in enumerate(states):
                    entry = entries[i]
                    if entry is None:
                        continue
                    if state is not None:
                        _write_state(zf, entry["member"], state)
                        continue
                    if old_zip is None:
                        old_zip = zipfile.ZipFile(self.progress_file)
                    with old_zip.open(entry["member"]) as src, \
                            zf.open(entry["member"], "w", force_zip64=True) as dst:
                        shutil.copyfileobj(src, dst, COPY_ROWS)
            finally:
                if old_zip is not None:
                    old_zip.close()

        atomic_write_bytes(self.progress_file,
                           lambda fh: _write_bundle(fh, header, current_arrays, copy_states))
        self.header = header

    def restore_state(self, index: int, state: ExampleState) -> bool:
        """Fill ``state`` with snapshot ``index`` of the progress file, if it has one."""
        entries = self.header["example_states"] if self.header is not None else []
        if index >= len(entries) or entries[index] is None:
            return False
        try:
            with zipfile.ZipFile(self.progress_file) as zf:
                _read_state(zf, entries[index]["member"], state)
        except (zipfile.BadZipFile, KeyError, ValueError, EOFError, OSError) as exc:
            raise CheckpointError(f"checkpoint file {self.progress_file} is damaged ({exc}); "
                                  "delete the checkpoint directory to start afresh") from exc
        return True


def checkpoint_progress(path: str | os.PathLike[str]) -> tuple[int, int]:
    """``(completed passes, chunks done in the pass in progress)`` of a checkpoint directory."""
    progress = Path(path) / PROGRESS_FILE
    if not progress.exists():
        return 0, 0
    header, _ = _read_bundle(progress)
    current = header.get("current")
    return int(header["completed"]), 0 if current is None else int(current["chunks"])


def _check_key(stored: Any, key: dict[str, Any], index: int, path: Path) -> None:
    if stored != key:
        raise CheckpointError(
            f"checkpoint {path} does not match this fit: its call {index} ran "
            f"{stored}, this fit asks for {key}; delete it or give another checkpoint path")


# -- the engine wrapper ----------------------------------------------------------------------
class CheckpointedRunner(EngineBase):
    """An engine whose ``run``/``reduce`` calls are numbered, saved and replayed.

    Parameters
    ----------
    engine : engine
        Runs the passes. When it offers mid-pass resumption (``resumes_mid_pass``, as
        :class:`~streamlearn.engine.local.LocalEngine` does) a checkpoint is written every
        ``every`` chunks inside passes; with any engine, at the end of every pass.
    checkpoint : Checkpoint
    every : int
        Chunks between two writes.

    Attributes
    ----------
    passes : PassLog
        One record per call: a replayed call with the rows and bytes it read when it first
        ran, a resumed call with those read before the interruption plus those read now.
        The wrapped engine's own log holds only what it read itself.

    Other attributes are those of ``engine``.
    """

    def __init__(self, engine: Any, checkpoint: Checkpoint, every: int) -> None:
        self.engine = engine
        self.checkpoint = checkpoint
        self.every = int(every)
        self.mid_pass = bool(getattr(engine, "resumes_mid_pass", False))
        header = checkpoint.header
        self._replay = 0 if header is None else int(header["completed"])
        self._current = None if header is None else header.get("current")
        self._keys: list[dict[str, Any]] = [] if header is None else list(header["keys"])
        self._calls = 0
        self._states: list[weakref.ref[ExampleState]] = []
        self._state_ids: dict[int, int] = {}
        self._since_write = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def release_checkpoint(self) -> None:
        """The fit has ended: another may use the checkpoint directory."""
        self.checkpoint.release()

    def __repr__(self) -> str:
        return f"CheckpointedRunner({self.engine!r}, {str(self.checkpoint.path)!r})"

    def _held_states(self, pass_: Any) -> list[int]:
        """Numbers of the ``ExampleState`` attributes of ``pass_``; restores new ones."""
        held = []
        for value in vars(pass_).values():
            if not isinstance(value, ExampleState):
                continue
            number = self._state_ids.get(id(value))
            if number is None or self._states[number]() is not value:
                number = len(self._states)
                self._states.append(weakref.ref(value))
                self._state_ids[id(value)] = number
                self.checkpoint.restore_state(number, value)
            held.append(number)
        return held

    def _write(self, held: list[int], current: dict[str, Any] | None,
               arrays: dict[str, np.ndarray]) -> None:
        live = [self._states[i]() if i in held else None for i in range(len(self._states))]
        self.checkpoint.write_progress(len(self._keys), self._keys, current, arrays, live)
        self._since_write = 0

    def run(self, pass_: Any, data: Any, **options: Any) -> Any:
        """Run ``pass_`` like the engine does, replaying or resuming it from the checkpoint."""
        index = self._calls
        self._calls += 1
        key = {"pass": type(pass_).__name__, "options": encode(options, {})}
        held = self._held_states(pass_)
        label = str(options.get("description") or type(pass_).__name__)
        if index < self._replay:
            _check_key(self._keys[index], key, index, self.checkpoint.path)
            result, read = self.checkpoint.read_call(index, key)
            _replayed(self.passes, label, read)
            return result
        resume = None
        before = (0, 0)  # rows and bytes read by the interrupted run of this call
        if self._current is not None and int(self._current["call"]) == index:
            _check_key(self._current["key"], key, index, self.checkpoint.path)
            state = decode(self._current["state"], self.checkpoint.arrays)
            resume = (int(self._current["chunks"]), state)
            read = self._current.get("read") or {}
            before = (int(read.get("rows", 0)), int(read.get("nbytes", 0)))
            self._current = None
        inner = PassLog()  # what the engine reads now, counted here instead of by the fit
        try:
            with capturing(inner):
                if self.mid_pass:
                    def on_chunk(done: int, state: Any) -> None:
                        self._since_write += 1
                        if self._since_write >= self.every:
                            arrays: dict[str, np.ndarray] = {}
                            current = {"call": index, "key": key, "chunks": done,
                                       "state": encode(state, arrays),
                                       "read": {"rows": before[0] + inner.rows_read,
                                                "nbytes": before[1] + inner.bytes_read}}
                            self._write(held, current, arrays)

                    result = self.engine.run(pass_, data, resume=resume, on_chunk=on_chunk,
                                             **options)
                else:
                    result = self.engine.run(pass_, data, **options)
        finally:
            record = _account(self.passes, label, inner.records, before)
        self.checkpoint.write_result(index, key, result, record.counts())
        self._keys.append(key)
        self._write(held, None, {})
        return result


def _account(own: Any, label: str, inner: list[PassRecord],
             before: tuple[int, int]) -> PassRecord:
    """Record one call of the wrapper: what its engine read now plus ``before``."""
    total = max((r.total_rows for r in inner), default=0)
    span = max((r.range_rows for r in inner), default=0)
    record = open_pass(own, inner[0].description if inner else label, total, span)
    record.add(before[0] + sum(r.rows for r in inner), before[1] + sum(r.nbytes for r in inner))
    return record


def _replayed(own: Any, label: str, read: dict[str, Any] | None) -> PassRecord:
    """Record a call replayed from the checkpoint with the counts stored for it."""
    read = read or {}
    record = open_pass(own, str(read.get("description", label)),
                       int(read.get("total_rows", 0)), int(read.get("range_rows", 0)),
                       replayed=True)
    record.add(int(read.get("rows", 0)), int(read.get("nbytes", 0)))
    return record


def checkpointed(engine: Any, checkpoint: str | os.PathLike[str] | None, every: int,
                 model: Any, dataset: Dataset) -> Any:
    """Wrap ``engine`` so that a fit writes and resumes from ``checkpoint``.

    Parameters
    ----------
    engine : engine
        The fit's engine.
    checkpoint : str, path-like or None
        Checkpoint directory, local (a path or a ``file://`` URL; another URL, or an empty
        path, is a ``ValueError``); None returns ``engine`` unchanged.
    every : int
        Chunks between two writes inside a pass (with engines that can resume mid-pass).
    model : estimator
        Its hyper-parameters enter the fingerprint; ``random_state`` must not be None.
    dataset : Dataset
        Its schema and row count enter the fingerprint.

    Returns
    -------
    engine or CheckpointedRunner
    """
    if checkpoint is None:
        return engine
    if "://" in os.fspath(checkpoint) and not os.fspath(checkpoint).startswith("file://"):
        raise ValueError(f"checkpoint={os.fspath(checkpoint)!r} is a URL: a checkpoint is a "
                         "local directory (it is rewritten in place, chunk by chunk)")
    text = os.fspath(checkpoint)  # a file:// URL as its path
    local = text[len("file://"):] if text.startswith("file://") else text
    if not local.strip():
        raise ValueError(f"checkpoint={text!r} names no directory (it would write into the "
                         "working directory): give a directory, or None for no checkpoint")
    checkpoint = Path(local).expanduser()
    if int(every) < 1:
        raise ValueError(f"checkpoint_every must be a positive number of chunks, got {every}")
    params = model.get_params() if hasattr(model, "get_params") else {}
    if "random_state" in params and params["random_state"] is None:
        raise ValueError("a checkpointed fit must repeat its random choices when resumed: "
                         "set random_state to an integer")
    return CheckpointedRunner(engine, Checkpoint(checkpoint, fit_fingerprint(model, dataset,
                                                                             engine)), every)
